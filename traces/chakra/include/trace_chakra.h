/* trace_chakra.h - MLCommons Chakra execution traces (ET) in and out: one protobuf file per rank,
 * read into and written from stepsim's in-memory workload (step_workload_t, step.h).
 *
 * Contract
 * - Owns: the Chakra ET file format (schema traces/chakra/et_def.proto, a verbatim copy of
 *   Chakra's): a file is a varint-length-delimited GlobalMetadata record followed by
 *   varint-length-delimited Node records, as Chakra's feeder (src/feeder/et_feeder.cpp) and
 *   ASTRA-sim's workload layer read it. Knows of the step only the workload struct; runs nothing.
 * - Files of a workload: rank r is NAME.r.et, ranks 0..n-1 all present, nothing else required.
 *   docs/workloads.md gives the mapping of every Chakra field (what is read, what is ignored, why).
 * - Errors: functions return TRACE_OK (0) or a negative trace_status_t (trace.h). Bad input gives
 *   TRACE_EINVAL and exactly one line in err, without a trailing newline, naming the file, the node,
 *   the field, the value and the reason:
 *     "t/ar.3.et: node 12: comm_size: -5: negative"
 *     "t/ar.3.et: node 12: data_deps: 99: no node 99 in this file"
 *   When the node is not known (the record could not be decoded) it names the record instead:
 *     "t/ar.3.et: record 7 (byte 220): length: 4096: truncated (60 bytes left)"
 *   TRACE_ENOMEM gives "out of memory"; TRACE_EIO names the file and the system's reason.
 * - Writing never leaves a partial output: every rank's file is written to a unique temporary file
 *   beside its destination and renamed into place only after all of them were written and synced.
 * - Determinism: the output bytes depend only on the workload; the workload read depends only on the
 *   bytes of the files.
 * - Memory: the streaming reader (trace_chakra_reader_*) holds the shape (ranks and groups) and at
 *   most three ranks (file and decoded nodes) per decoding thread, never the whole set;
 *   trace_chakra_read, built on it, holds besides the workload it builds (O(nodes + dependencies)).
 *   The writer holds one encoded node at a time and the groups.
 * - Threads: the reader decodes the rank files on up to as many threads as there are online
 *   processors (at most 4; one for sets under 1 MiB), a bounded window of ranks ahead of the
 *   consumer, who takes them in rank order on the calling thread; what is read and the error
 *   reported (the first in rank order) do not depend on the number of threads. The writer runs on
 *   the calling thread. No globals.
 */
#ifndef STEPSIM_TRACE_CHAKRA_H
#define STEPSIM_TRACE_CHAKRA_H

#include <stddef.h>
#include <stdint.h>

#include "step.h"
#include "trace.h"

/* Read a workload. path is either a directory holding NAME.0.et .. NAME.(n-1).et for one NAME (a
 * directory with files of two names is an error naming both), or a prefix PREFIX such that
 * PREFIX.0.et .. PREFIX.(n-1).et exist. Every rank from 0 to the largest found must be present.
 * On TRACE_OK *out holds the workload (free it with step_workload_free): nodes of rank r in file
 * order at out->nodes[rank_nodes_offset[r] .. rank_nodes_offset[r+1]), each node's dependencies
 * (data then control, duplicates dropped) in file order, every dependency naming a node of the same
 * rank, no duplicate id, no cycle; groups as docs/workloads.md says. On error *out is zeroed. */
int trace_chakra_read(const char *path, step_workload_t *out, char *err, size_t err_size);

/* The same read one rank at a time (trace_chakra_read is a loop over it), for a consumer that holds
 * one rank's nodes at a time.
 * - Groups: a set whose rank-0 GlobalMetadata carries "stepsim_groups_complete" = true (the writer
 *   writes it when the caller vouches for it, see trace_chakra_writer_open) is known from rank 0's
 *   metadata alone: its pg_ranks definitions are the groups, each used. The claim is checked as the
 *   ranks are read: a later rank defining other groups, a collective naming an undefined group or
 *   every rank (pg_name "" or "0") are errors of that rank; a defined group no collective uses is
 *   an error of the last rank. A set without the mark is decoded once by _open (every rank, on the
 *   threads, keeping only the groups: definitions, inferred members, used flags) and again by _rank.
 * - Order: trace_chakra_read's (the same first error, the same message). */
typedef struct trace_chakra_reader trace_chakra_reader_t;
/* Open an ET set (path as trace_chakra_read). On TRACE_OK *out is set. Knows, on return, the ranks
 * and every process group final. Errors as trace_chakra_read's (one line; the same first error: a
 * set without the mark reports here any error of any rank; a marked one only rank 0's metadata's). */
int trace_chakra_reader_open(const char *path, trace_chakra_reader_t **out, char *err, size_t err_size);
/* n_ranks, n_groups, groups, group_ranks exactly as trace_chakra_read gives them (same numbering,
 * names, member order); no nodes (rank_nodes_offset NULL). Owned by the reader. */
const step_workload_t *trace_chakra_reader_shape(const trace_chakra_reader_t *x);
/* [n_groups + 1]: 1 where some node's collective uses group g; the last entry: the every-rank group
 * (pg_name "" or "0", node group -1). Owned by the reader. */
const uint8_t *trace_chakra_reader_group_used(const trace_chakra_reader_t *x);
/* Rank r's nodes; r must be 0, 1, 2, ... in order (else TRACE_EINVAL). *out (free with
 * step_workload_free; zeroed on error) is a workload of n_ranks ranks where only rank r has nodes:
 * exactly the nodes, dependencies and fields trace_chakra_read gives rank r (same order), node.group
 * indexing the shape's groups, names in a table of out's own (name 0 "", then the rank's names in
 * order of first use); out has no groups (n_groups 0). Errors: the first error of rank r (the
 * message trace_chakra_read gives for it; at the last rank of a marked set also the checks of the
 * whole: a rank using a group it is not a member of, a group no collective uses). After an error
 * only _close is allowed. */
int trace_chakra_reader_rank(trace_chakra_reader_t *x, int32_t r, step_workload_t *out, char *err,
                             size_t err_size);
void trace_chakra_reader_close(trace_chakra_reader_t *x); /* accepts NULL */

/* Check a workload (the rules the reader enforces, on a struct built by hand or by the step): node
 * kinds and collectives known, ids unique per rank, dependencies present and acyclic, peers and
 * groups in range, numbers finite and not negative (except duration_s < 0: unknown, peer -1,
 * group -1, start_hint_s -1). TRACE_OK or TRACE_EINVAL with err as "rank 3: node 12: peer: 9:
 * not a rank (0..7)". */
int trace_chakra_check(const step_workload_t *w, char *err, size_t err_size);

/* Write w (checked first with trace_chakra_check) as DIR/NAME.r.et for every rank r (DIR is
 * created if missing, one level; the files marked groups-complete exactly when every group of w is
 * used by a collective of w and no collective has group -1), and, when w has groups, DIR/NAME.comm_group.json
 * in ASTRA-sim's
 * --comm-group-configuration format ({"1": [0, 1], ...}). Files of that name already in DIR are
 * replaced, and those an earlier, larger export left (NAME.r.et for r >= n_ranks, NAME.comm_group.json
 * when w has no groups) removed, so that DIR reads back as w; other files are left alone. name must
 * be non-empty, without '/'. Error lines never hold a control character (printed as '?'). */
int trace_chakra_write(const char *dir, const char *name, const step_workload_t *w, char *err,
                       size_t err_size);

/* The same writing one rank at a time (trace_chakra_write is built on it), for a producer that
 * holds one rank's nodes at a time (step_workload_export_rank): _open checks dir and name and
 * prepares n_ranks files (*out set only on TRACE_OK); groups_complete = 1: the caller vouches that
 * every group of w is used by a collective and no collective has group -1, and every file is marked
 * so ("stepsim_groups_complete", which lets the streaming reader know the groups from rank 0; a
 * false claim makes the set unreadable), 0: no mark; _rank writes rank r of w (r = 0, 1, ... in
 * order; w has n_ranks ranks and the same groups at every call, only rank r is read and checked;
 * the directory is created at rank 0) to its temporary file; _close, after every rank, writes the
 * groups' json and renames every file into place as trace_chakra_write does, and releases the
 * writer whatever it returns; _abort (accepts NULL) removes the temporary files and releases it.
 * After an error of _rank only _abort or _close (which then fails) are allowed. Errors as
 * trace_chakra_write's. Memory: one encoded node and the groups. */
typedef struct trace_chakra_writer trace_chakra_writer_t;
int trace_chakra_writer_open(const char *dir, const char *name, int32_t n_ranks, int groups_complete,
                             trace_chakra_writer_t **out, char *err, size_t err_size);
int trace_chakra_writer_rank(trace_chakra_writer_t *x, const step_workload_t *w, int32_t r, char *err,
                             size_t err_size);
int trace_chakra_writer_close(trace_chakra_writer_t *x, char *err, size_t err_size);
void trace_chakra_writer_abort(trace_chakra_writer_t *x);

#endif
