/* trace.h - Chrome Trace Event Format output of a simulated step: a streaming writer fed by the
 * engine's observer (sim_observer_t), for Perfetto (ui.perfetto.dev), speedscope and Chrome DevTools.
 *
 * Contract
 * - Owns: the trace file (JSON object format: {"displayTimeUnit":"ns","traceEvents":[...],
 *   "metadata":{...}}), the parsing of rank filters (--trace-ranks "0-7,64"). Knows of the engine
 *   only its public observer and time types (sim.h); the engine never includes this header.
 * - Streaming: every event is written when it happens (one line per event, through a buffered
 *   FILE); no tree of the trace is kept in memory. Memory is O(operations) for one start time per
 *   operation id (8 bytes), O(point-to-point collectives) for pairing sends with receives, O(GPUs x
 *   streams) for naming threads, O(traced links) for counters; arrays grow geometrically, never
 *   one allocation per event.
 * - Files: trace_writer_open creates (or truncates) PATH and writes to it; trace_writer_close
 *   completes the JSON and syncs it; trace_writer_abort (and a failed close) removes PATH. Replacing
 *   a destination atomically is the caller's: stepsim hands the writer a unique temporary file
 *   beside the destination and renames it into place after a successful close.
 * - Layout of the trace: one process per node (pid = node + 1: Perfetto treats pid 0 and tid 0 as
 *   the kernel's idle task; with process groups, one per group and node, trace_options_t.n_groups), one
 * thread per GPU stream (tid = gpu x streams_per_gpu + stream + 1, unique over the whole trace, as Perfetto
 * requires), named "node 3", "gpu 25 compute", "gpu 25 comm 1"; a process "links" (pid = nodes + 1) holds the
 * link utilisation counters. Operations are slices (a "B" and an "E" event each, or an "X" of dur 0 when
 * empty); each point-to-point message (a SIM_COLL_SENDRECV collective: its SIM_OP_SEND and SIM_OP_RECV
 * members share a coll id) is a flow arrow
 * ("s"/"f", id = coll id) from the send's slice to the receive's; counters are "C" events. docs/traces.md
 *   describes every field.
 * - Units: simulated time is integer picoseconds (sim_time_ps_t); the trace's "ts"/"dur" are
 *   microseconds printed from integers, never through floating point: by default rounded down to
 *   whole nanoseconds ("%lld.%03lld"), or exact picoseconds with trace_options_t.exact_ps
 *   ("%lld.%06lld"). Whole nanoseconds are the default because Perfetto rounds "ts" and "dur" to
 *   nanoseconds separately, so sub-nanosecond values can make back-to-back slices overlap by 1 ns
 *   and nest wrongly; start and end are each rounded down, so slices that do not overlap in the
 *   simulation never overlap in the trace. Each operation is a begin and an end event ("B"/"E") rather
 *   than one complete event ("X" with "dur"): a reader that adds ts + dur in doubles (speedscope,
 *   Chrome DevTools) can land a fraction of a nanosecond past the next slice's ts, which strict-stack
 *   viewers draw as nesting; with "B"/"E" the boundary of two back-to-back slices is one integer
 *   printed twice, the same number in every reader.
 * - Determinism: the output depends only on the sequence of callbacks and options (no wall-clock
 *   time, no pointers, no hash order): the same simulation gives byte-identical files.
 * - Errors: functions return TRACE_OK (0) or a negative trace_status_t; those taking err fill it
 *   with one line naming the argument or file and the value. Observer callbacks cannot return
 *   errors: an I/O or allocation failure while the engine runs is remembered, later events are
 *   dropped, and trace_writer_close reports it (and removes the temporary file).
 * - Threads: a writer is used by one thread at a time; there are no globals.
 */
#ifndef STEPSIM_TRACE_H
#define STEPSIM_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "sim.h"

typedef enum trace_status {
    TRACE_OK = 0,
    TRACE_EINVAL = -1, /* bad argument or input (err explains) */
    TRACE_ENOMEM = -2, /* allocation failed */
    TRACE_EIO = -3     /* the file could not be created, written, synced or renamed */
} trace_status_t;

const char *trace_status_name(int status); /* "ok", "invalid argument", ... (static storage) */

/* ---- rank filter (--trace-ranks) ------------------------------------------------------------- */

typedef struct trace_rank_range {
    int32_t first, last; /* inclusive GPU ranks */
} trace_rank_range_t;

/* A set of GPU ranks: sorted, merged, disjoint ranges; or every GPU (all = 1, no ranges). */
typedef struct trace_ranks {
    int all;
    int32_t n_ranges;
    trace_rank_range_t *ranges; /* owned; trace_ranks_destroy frees */
} trace_ranks_t;

/* Parse a comma-separated list of GPU ranks and inclusive ranges, e.g. "0-7,64" or "0, 8-15",
 * or "all". Spaces around items are allowed; overlapping items are merged. With n_gpus > 0 every
 * rank must be below n_gpus (n_gpus <= 0: no upper bound). Return TRACE_OK and *out (destroy it
 * with trace_ranks_destroy), or TRACE_EINVAL with *out empty and err naming the bad item without
 * the option's name, for the caller to prefix, e.g.:
 *   "7-3": range is descending (7 > 3)
 *   "x": not a GPU rank or range (expected N or A-B, e.g. 0-7,64)
 *   "64": GPU 64 is beyond the last GPU (63)
 * or TRACE_ENOMEM. O(length + items log items). */
int trace_ranks_parse(const char *text, int32_t n_gpus, trace_ranks_t *out, char *err, size_t err_size);
/* 1 if gpu is in the set, else 0. O(log ranges). */
int trace_ranks_contains(const trace_ranks_t *r, int32_t gpu);
void trace_ranks_destroy(trace_ranks_t *r); /* accepts NULL and a zeroed struct */

/* ---- per-operation arguments ------------------------------------------------------------------ */

/* What the caller knows about an operation beyond the engine's sim_op_info_t; it becomes the event's
 * "args" (docs/traces.md). The writer sets every field to "absent" (NULL strings, -1 numbers) before
 * each call; fill in what applies. Strings are borrowed only for the duration of the callback. */
typedef struct trace_op_args {
    const char *name;       /* event name instead of the operation's name; NULL: keep it */
    const char *layer;      /* "args.layer", e.g. "qkv" */
    const char *pass;       /* "args.pass": "fwd", "bwd", "opt", ... */
    int32_t microbatch;     /* "args.microbatch"; < 0: absent */
    int32_t stage;          /* "args.stage" (pipeline stage or virtual stage); < 0: absent */
    double flops;           /* "args.flops"; < 0: absent */
    double bytes;           /* "args.bytes" (HBM traffic of compute, buffer of a collective); < 0 */
    double tp_comm_s;       /* "args.tp_comm_us": fixed-time tensor-parallel collectives folded into
                               this compute operation (its share of the slice); <= 0: absent */
    const char *collective; /* "args.collective", e.g. "allreduce" */
    const char *group;      /* "args.group", e.g. "tp", "dp", "pp", "cp" */
} trace_op_args_t;

/* Called once per traced operation when it ends (only for GPUs that pass the rank filter). Return 0
 * to write the event, nonzero to leave this operation out of the trace (its flow arrow too). Must
 * not call back into the engine except for const queries. */
typedef int (*trace_op_args_fn)(void *ctx, const sim_op_info_t *op, trace_op_args_t *out);

/* Write the display name of a link (e.g. "leaf 3 -> spine 1") into buf[0..buf_size), NUL
 * terminated; called once per traced link, the first time it has a sample. */
typedef void (*trace_link_name_fn)(void *ctx, int32_t link, char *buf, size_t buf_size);

/* ---- the writer ------------------------------------------------------------------------------- */

#define TRACE_LINKS_ALL (-1) /* trace_options_t.n_links: a counter track for every link */

typedef struct trace_options {
    int32_t n_gpus;             /* GPUs of the simulation, > 0 (ranks 0..n_gpus-1) */
    int32_t gpus_per_node;      /* GPUs per process ("node"); 0 means 1 */
    int32_t streams_per_gpu;    /* 1 + sim_config_t.comm_streams; 0 means 3 (the engine's default) */
    const trace_ranks_t *ranks; /* GPUs to trace (copied at open); NULL: every GPU */
    /* The scenario, as the text of one JSON object (e.g. cJSON_PrintUnformatted of the resolved
     * scenario): validated at open and written verbatim as "metadata.scenario". NULL: none. */
    const char *scenario_json;
    /* Link utilisation counters: links[0..n_links) (copied at open), none if n_links == 0, every
     * link if n_links == TRACE_LINKS_ALL. Every sample is a "C" event, so choose few links on large
     * runs (e.g. the busiest of a first run, sim_links_busiest). Samples at one timestamp are
     * coalesced to the last value and repeated values are dropped. */
    const int32_t *links;
    int32_t n_links;
    trace_link_name_fn link_name; /* NULL: "link 17" */
    trace_op_args_fn op_args;     /* NULL: args hold only the collective's id */
    void *ctx;                    /* passed to link_name and op_args; borrowed */
    int exact_ps;                 /* 1: exact picoseconds in ts/dur (see Units); 0: nanoseconds */
    /* Appended in parentheses to every compute thread's name, e.g. "incl. tp comm" gives "gpu 8
     * compute (incl. tp comm)": what the compute slices hold besides compute. NULL: nothing. */
    const char *compute_note;
    /* Process groups (e.g. the jobs sharing a fabric), n_groups > 0: gpu_group(ctx, gpu) gives each
     * GPU's group, 0..n_groups-1 or -1 for none (asked once per GPU at open), and a GPU of group k is
     * in process "NAME / node N" (NAME from group_name) with pid (k + 1) x nodes + node + 1, so each
     * group's processes are consecutive and sorted together; GPUs of no group keep "node N", pid
     * node + 1, and the "links" process comes last (pid (n_groups + 1) x nodes + 1). 0: none. */
    int32_t n_groups;
    int32_t (*gpu_group)(void *ctx, int32_t gpu);
    void (*group_name)(void *ctx, int32_t group, char *buf, size_t buf_size);
} trace_options_t;

typedef struct trace_writer trace_writer_t;

/* Create PATH and write the trace's header. opt is copied (ranks, links and scenario text too;
 * ctx and the callbacks are borrowed and must stay valid until close or abort). Return TRACE_OK and
 * *out; TRACE_EINVAL (bad option: err names it, e.g. "scenario_json: not a JSON object"), TRACE_EIO
 * (err names PATH and the system's reason) or TRACE_ENOMEM, with *out NULL and nothing left on
 * disk. */
int trace_writer_open(const char *path, const trace_options_t *opt, trace_writer_t **out, char *err,
                      size_t err_size);

/* Fill *out with callbacks (op_start, op_end, counter; flow_start and flow_end are NULL: network flows
 * appear only through the link counters) and ctx = w, for sim_engine_set_observer. A caller that
 * observes the engine itself calls these from its own observer, with out->ctx. */
void trace_writer_observer(trace_writer_t *w, sim_observer_t *out);

/* A per-GPU counter sample, e.g. trace_writer_counter(w, t, 25, "memory_gb", 31.5): a "C" event
 * named "gpu 25 memory_gb" on GPU 25's node ({"value": 31.5}). Samples of one (gpu, name) at one
 * timestamp are coalesced to the last value; repeated values are dropped. GPUs outside the rank
 * filter are ignored (TRACE_OK). Return TRACE_OK; TRACE_EINVAL for an unknown gpu, an empty name,
 * t_ps < 0 or a value that is not finite; TRACE_ENOMEM; or the writer's earlier failure. */
int trace_writer_counter(trace_writer_t *w, sim_time_ps_t t_ps, int32_t gpu, const char *name, double value);

typedef struct trace_writer_stats {
    int64_t complete_events; /* slices ("B"/"E" pairs): traced operations */
    int64_t flow_arrows;     /* "s"/"f" pairs */
    int64_t counter_events;  /* "C" */
    int64_t metadata_events; /* "M": names and sort order */
    int64_t dropped_ops;     /* traced GPUs' operations that op_args left out */
} trace_writer_stats_t;

void trace_writer_stats(const trace_writer_t *w, trace_writer_stats_t *out);

/* Flush pending counter samples, write "metadata" (the options, the event counts and the scenario),
 * sync and close PATH; then free w. Return TRACE_OK; or the first error of the run or of closing
 * (TRACE_EIO, TRACE_ENOMEM) with err explaining it and PATH removed. Accepts NULL (TRACE_OK). */
int trace_writer_close(trace_writer_t *w, char *err, size_t err_size);

/* Close and remove PATH; free w. Accepts NULL. */
void trace_writer_abort(trace_writer_t *w);

#endif
