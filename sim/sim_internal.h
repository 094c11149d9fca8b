/* sim_internal.h - the engine's internal types, shared by the files of sim/ only.
 *
 * Layout: one sim_engine_t owns a queue (queue.c), a flow network (network.c, solved by maxmin.c),
 * collective instances (coll.c, coll_algos.c, closed_form.c) and the operation DAG (executor.c).
 * Internal functions carry the prefix sim_i_. */
#ifndef STEPSIM_SIM_INTERNAL_H
#define STEPSIM_SIM_INTERNAL_H

#include <stdarg.h>

#include "checked.h"
#include "sim.h"

/* Queue event kinds. */
enum { SIM_EV_OP_END = 1, SIM_EV_COLL_DONE = 2, SIM_EV_FLOW_START = 3, SIM_EV_COLL_BEGIN = 4 };

/* ---- network ------------------------------------------------------------------------------------ */

/* One link of a flow's route: which link, where the flow sits in that link's list, and how many
 * units of the flow's rate the link carries (a coflow crossing a link twice uses 2). */
typedef struct sim_hop {
    int32_t link;
    int32_t pos;
    double use;
} sim_hop_t;

typedef enum { SIM_FLOW_FREE, SIM_FLOW_PENDING, SIM_FLOW_LATENCY, SIM_FLOW_ACTIVE } sim_flow_state_t;

typedef struct sim_flow {
    int32_t heap_pos; /* index in the flow heap (which holds the key), -1 when not in it */
    int32_t state;
    uint32_t gen; /* bumped when the slot is freed, so stale sim_flow_id_t values are detected */
    int32_t hop_off, n_hops, hop_class;
    double bytes, remaining, rate, weight, bound;
    double new_rate; /* the solver's result, applied by the network */
    sim_time_ps_t t_last, t_start, lat_ps;
    int32_t coll, tag; /* owner collective (-1: raw flow) and what the flow is to it */
    int32_t src, dst;
    uint32_t mark; /* component search epoch */
    int32_t frozen;
    int32_t next_free;
} sim_flow_t;

typedef struct sim_link_ent {
    int32_t flow, hop;
} sim_link_ent_t;

typedef struct sim_link {
    double cap;     /* usable: nominal x config.link_efficiency */
    double nominal; /* as given, for utilisation */
    sim_time_ps_t lat_ps;
    sim_link_ent_t *ents; /* active (draining) flows on this link */
    int32_t n_ents, cap_ents;
    /* statistics */
    double load, bytes, peak_util;
    sim_time_ps_t t_last, busy_ps;
    /* component search and solver scratch */
    uint32_t mark, dirty;
    double rem, wsum;
    int32_t n_unfrozen;
    uint32_t ver;
    /* route merging scratch */
    uint32_t merge_mark;
    int32_t merge_slot;
} sim_link_t;

typedef struct sim_lheap_ent {
    double share;
    int32_t link;
    uint32_t ver;
} sim_lheap_ent_t;

typedef struct sim_bheap_ent {
    double ratio;
    int32_t flow;
} sim_bheap_ent_t;

/* A flow-heap entry: the flow's next transition (latency end or completion) and its slot. */
typedef struct sim_fh_ent {
    sim_time_ps_t t;
    uint64_t seq;
    int32_t slot;
} sim_fh_ent_t;

typedef struct sim_net {
    int32_t n_links;
    sim_link_t *links;
    sim_flow_t *flows;
    int32_t n_flow_slots, cap_flows, free_flow;
    sim_hop_t *hops;
    int64_t n_hops_used, cap_hops;
    int32_t hop_free[32]; /* free lists of hop blocks by size class (2^k hops) */
    sim_fh_ent_t *fheap;  /* indexed binary heap of flow slots by (time, seq) */
    size_t fheap_n;
    int64_t fheap_cap;
    int32_t *dirty; /* links touched since the last solve */
    int32_t n_dirty, cap_dirty;
    uint32_t epoch, dirty_epoch, merge_epoch;
    /* solver scratch, grown geometrically */
    int32_t *comp_flows, *comp_links;
    int32_t cap_comp_flows, cap_comp_links;
    sim_lheap_ent_t *lheap;
    int64_t cap_lheap;
    sim_bheap_ent_t *bheap;
    int64_t cap_bheap;
    /* route merging scratch (coflows) */
    int32_t *merge_links;
    double *merge_use;
    int32_t n_merge, cap_merge;
    /* adaptive routing only (NULL otherwise), allocated once by sim_i_net_init: per link, the flow
     * crossings routed over it and not yet ended, and load_units x load_scale, which the route_load
     * callback reads */
    int32_t *load_units;
    double *load_scale, *link_load;
    /* bytes per link and class of GPUs (sim_engine_set_link_classes; NULL: not kept): [link x
     * n_classes], and the class of every GPU */
    double *class_bytes;
    int32_t *gpu_class;
    int32_t n_classes;
} sim_net_t;

/* ---- collectives -------------------------------------------------------------------------------- */

/* A (src, dst) pair a collective sends over, with its route (offset into the collective's route
 * array), its route's latency plus the step overhead, its step latency (that plus the protocol's
 * step latency, maybe averaged over its ring), whether it leaves its NVLink domain, and the smallest
 * capacity on its route. */
typedef struct sim_pair {
    int32_t src, dst;
    int32_t route_off, route_len;
    sim_time_ps_t base_lat_ps, lat_ps;
    int32_t net;
    double min_cap;
} sim_pair_t;

typedef enum {
    SIM_PH_RING,
    SIM_PH_HD,
    SIM_PH_CHAIN,
    SIM_PH_TREE,
    SIM_PH_P2P,
    SIM_PH_NVLS,
    SIM_PH_SHARP
} sim_phase_kind_t;

/* One phase of a collective. Rings: n_rings rings of ring_len members; ring member i (0 <= i <
 * n_rings * ring_len) sends over pair pair0 + i to member (i / len) * len + (i + 1) % len. */
typedef struct sim_phase {
    sim_phase_kind_t kind;
    int32_t steps;      /* ring/HD steps; chain/tree chunks */
    double chunk_bytes; /* bytes of one step flow (HD: of the first RS step / last AG step) */
    int32_t n_rings, ring_len, pair0;
    int32_t hd_rs_steps, hd_ag_steps; /* HD: halving steps then doubling steps */
    double nvls_up, nvls_down;        /* NVLS: shards of chunk_bytes per GPU -> switch, switch -> GPU link */
    int32_t intra_rings, intra_len;   /* CollNet: the domains' rings over pairs [0, rings x len) */
    double intra_chunk_bytes;         /* ... each step moving this (M / g) */
} sim_phase_t;

#define SIM_MAX_PHASES 3

typedef struct sim_coll {
    sim_coll_op_t op;
    sim_coll_algo_t algo;
    sim_fidelity_t fidelity;
    sim_comm_mode_t mode;
    double size_bytes;
    int32_t n, root;
    int32_t channels;      /* rings per ring phase (ring, hierarchical); >= 1 */
    int32_t want_channels; /* as requested: >= 1, or SIM_CHANNELS_AUTO */
    sim_proto_t proto;
    int32_t per_domain;      /* members per domain when every domain holds as many (0: uneven) */
    int crossing;            /* the members span more than one NVLink domain */
    double wire;             /* wire bytes per data byte: 1 / the protocol's efficiency */
    double bound;            /* rate cap of ring and chain flows, wire bytes/s; INFINITY: none */
    sim_time_ps_t launch_ps; /* the protocol's launch latency, before the first phase */
    double chunk;            /* tree and chain pipeline chunk */
    int32_t window;          /* chain: chunks in flight per edge (W, >= 1) */
    int32_t *gpus;
    double closed_form_s;
    sim_pair_t *pairs;
    int32_t n_pairs;
    int32_t *routes;
    sim_phase_t phases[SIM_MAX_PHASES];
    int32_t n_phases, phase;
    int64_t pending; /* flows outstanding in the current phase */
    int32_t *st;     /* per-algorithm state (see coll_algos.c) */
    uint64_t *mask;
    /* double binary tree: parent of each rank in each tree (-1 at the root), and children */
    int32_t *tree_parent, *tree_child; /* [2 n], [2 n * 2] (-1 where absent) */
    sim_time_ps_t *tree_last;          /* [4 n]: when each tree edge's last chunk arrived (step) */
    /* chain, step fidelity: when chunk i could start across edge j, at [j * slots + i % slots];
     * slots = min(window, chunks) */
    sim_time_ps_t *chain_ready;
    int32_t chain_slots;
    int32_t tree_depth, tree_load;
    /* The plan cache: the algorithm and protocol as requested (the key, with op, fidelity, mode,
     * size, root, channels and gpus). */
    int32_t req_algo, req_proto;
    /* Run-time state (st, mask, tree_last, chain_ready point into it): taken from the engine's
     * pool when the collective starts and given back when it ends; NULL otherwise. */
    void *scratch;
    int32_t scratch_class;
    int64_t flows_run;          /* flows started by this run of the plan (live copies) */
    struct sim_coll *next_free; /* the engine's free live copies */
} sim_coll_t;

/* A collective added to the engine: its plan (shared by every identical collective), its member
 * operations, and while it runs a live copy of the plan holding the phases' state (allocated when
 * it starts, recycled when it ends). */
typedef struct sim_coll_inst {
    int32_t plan;     /* index into the engine's plans */
    int32_t first_op; /* member i is operation first_op + i; the members' times give the
                         collective's (it starts with its last member, they all end with it) */
    int32_t arrived;
    int32_t flows;     /* flows it started (saturating at INT32_MAX) */
    sim_coll_t *live;  /* while running; NULL otherwise */
    double sent_bytes; /* data bytes its members handed to the network, together (its flows' data
                          bytes, once per pair a flow carries) */
} sim_coll_inst_t;

/* ---- executor ----------------------------------------------------------------------------------- */

/* 32 bytes. The state is in the times: waiting while t_start is SIM_TIME_NEVER, done once t_end
 * is >= 0; until then t_end holds -1 - the duration of a compute operation (-1 for a member of a
 * collective). The kind follows from coll (-1: compute) and the collective's op. */
typedef struct sim_op {
    int32_t gs; /* gpu * streams_per_gpu + stream */
    int32_t next_in_stream;
    int32_t coll;       /* -1: compute */
    uint16_t deps_left; /* at most SIM_OP_MAX_DEPS */
    uint16_t name;      /* index into the engine's names (0: NULL), | SIM_OP_MORE */
    sim_time_ps_t t_start, t_end;
} sim_op_t;
#define SIM_OP_MAX_DEPS 65535
#define SIM_OP_MAX_NAMES 32767
#define SIM_OP_NAME_MASK 0x7fff
#define SIM_OP_MORE 0x8000 /* the operation has more than one successor (see sim_engine_t.more) */

typedef struct sim_stream {
    int32_t head, tail; /* first op not yet ended; last op added */
    int32_t busy;
} sim_stream_t;

/* ---- the engine --------------------------------------------------------------------------------- */

struct sim_engine {
    sim_config_t cfg;
    int32_t n_gpus, gpus_per_domain, streams_per_gpu;
    sim_route_fn route;
    void *route_ctx;
    /* adaptive routing (sim_network_desc_t.route_load); NULL: the plan's routes are final */
    int (*route_load)(void *ctx, int32_t src, int32_t dst, const double *link_load, int32_t *links,
                      int32_t cap);
    sim_time_ps_t now;
    uint64_t seq, rng;
    sim_queue_t *q;
    sim_net_t net;
    sim_observer_t obs;
    int has_obs;
    sim_progress_fn progress; /* sim_engine_set_progress; NULL: none */
    void *progress_ctx;
    int32_t progress_tick; /* timestamps since the last progress call */
    int32_t ops_done;      /* operations ended (sim_i_op_end) */
    int started;
    sim_op_t *ops;
    int32_t n_ops, cap_ops;
    /* operation names: distinct pointers (index 0 is NULL), found through an open-addressing table
     * of indices (0 empty) */
    const char **names;
    int32_t n_names, cap_names, last_name;
    uint16_t *name_tab;
    int32_t name_tab_cap;
    /* successors: per operation its first successor (-1: none); the others of an operation marked
     * SIM_OP_MORE are a list through edges (pairs: successor, next edge; -1 ends) whose head is
     * found in `more` (open addressing, pairs: operation (-1 empty), head), prepended while the DAG
     * is built and reversed when the run starts (so every operation's successors are visited in
     * the order its dependencies were added) */
    int32_t *succ; /* [cap_ops] */
    int32_t *edges;
    int32_t n_edges, cap_edges;
    int32_t *more;
    int64_t more_cap, more_n;
    sim_stream_t *streams;
    sim_coll_inst_t *colls;
    int32_t n_colls, cap_colls;
    sim_coll_t *plans; /* distinct plans */
    int32_t n_plans, cap_plans;
    sim_coll_t *live_free;
    /* the plan cache: open addressing over plan indices (-1 empty), power-of-two size */
    int32_t *plan_tab;
    int64_t plan_cap, plan_n;
    /* free blocks of collective run-time state by size class (2^k bytes), linked through their
     * first word */
    void *scratch_free[48];
    sim_engine_stats_t stats;
    int fatal; /* sticky status of a failure inside the run (out of memory) */
    char err[256];
};

/* engine.c */
/* The clock's end: a time that saturated (a sum past the int64 range, a flow that would need more
 * than 4e18 ps). An event at it is never run: sim_engine_run_until fails instead, so a saturated time
 * can never come out as a (wrong, early) result. */
#define SIM_I_TIME_SATURATED (SIM_TIME_NEVER - 1)
/* a + b for non-negative times, saturating at SIM_I_TIME_SATURATED instead of wrapping (latencies
 * are bounded by SIM_LINK_LATENCY_MAX_S, so route sums stay far below it; this is the backstop). */
static inline sim_time_ps_t sim_i_add_ps(sim_time_ps_t a, sim_time_ps_t b) {
    int64_t r;
    return checked_add_i64(a, b, &r) || r > SIM_I_TIME_SATURATED ? SIM_I_TIME_SATURATED : r;
}
int sim_i_fail(sim_engine_t *e, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int sim_i_grow(void **arr, int64_t *cap, int64_t need, size_t elem);
/* The same for arrays counted in int32_t; SIM_ENOMEM beyond INT32_MAX elements. The check is inline:
 * flow starts and the component search call it per link. */
int sim_i_grow32_slow(void **arr, int32_t *cap, int64_t need, size_t elem);
/* sim_i_grow32 without zeroing the new memory: for arrays whose elements are written whole when
 * added (untouched capacity then costs no memory). */
int sim_i_grow32_raw(void **arr, int32_t *cap, int64_t need, size_t elem);
/* Grow the operation array to hold `need` operations (new memory not zeroed: every operation is
 * written whole when added). SIM_OK or SIM_ENOMEM. */
int sim_i_ops_reserve(sim_engine_t *e, int64_t need);
static inline int sim_i_grow32(void **arr, int32_t *cap, int64_t need, size_t elem) {
    return need <= *cap ? SIM_OK : sim_i_grow32_slow(arr, cap, need, elem);
}
int sim_i_schedule(sim_engine_t *e, sim_time_ps_t t, int32_t kind, int32_t a, int64_t b);

/* queue.c */
int sim_i_queue_push_seq(sim_queue_t *q, const sim_event_t *ev);

/* network.c */
int sim_i_net_init(sim_engine_t *e, const sim_network_desc_t *net);
void sim_i_net_destroy(sim_net_t *n);
/* Start a flow now. links/use (use may be NULL: 1 each) must not repeat a link unless merged by
 * sim_i_net_merge_*. Return the slot (>= 0) or a negative status. */
int32_t sim_i_flow_start(sim_engine_t *e, const int32_t *links, const double *use, int32_t n_hops,
                         double bytes, double weight, double bound, sim_time_ps_t lat_ps, int32_t coll,
                         int32_t tag, int32_t src, int32_t dst);
sim_time_ps_t sim_i_net_next_time(const sim_engine_t *e, uint64_t *seq);
void sim_i_net_pop(sim_engine_t *e); /* process the flow-heap top (latency end or completion) */
int sim_i_net_dirty(const sim_engine_t *e);
void sim_i_net_solve(sim_engine_t *e);
/* Route merging for coflows: begin, add routes (repeated links add up their use), then read
 * net.merge_links / merge_use / n_merge. */
void sim_i_net_merge_begin(sim_engine_t *e);
int sim_i_net_merge_add(sim_engine_t *e, const int32_t *links, int32_t n);
int sim_i_flow_activate_pending(sim_engine_t *e, int32_t slot);
/* Adaptive routing. sim_i_route_now: the route from src to dst against the current link loads, into
 * buf[SIM_ROUTE_MAX]; returns its length, or -1 when the network does not route by load or the
 * callback gave no valid route (the caller keeps its planned route). sim_i_route_lat_ps: the sum of
 * a route's link latencies. sim_i_load_route: count a route into the loads (units > 0) or out of them
 * (units < 0), for a coflow's members to see the members merged before them; sim_i_load_merged does
 * the same for the merged route. All O(route length); no-ops without adaptive routing. */
int32_t sim_i_route_now(sim_engine_t *e, int32_t src, int32_t dst, int32_t *buf);
sim_time_ps_t sim_i_route_lat_ps(const sim_engine_t *e, const int32_t *links, int32_t n);
void sim_i_load_route(sim_engine_t *e, const int32_t *links, int32_t n, int32_t units);
void sim_i_load_merged(sim_engine_t *e, int32_t sign);

/* maxmin.c: progressive filling over net.comp_flows / comp_links; sets flow->rate. */
int sim_i_maxmin_solve(sim_net_t *n, int32_t n_flows, int32_t n_links);

/* coll.c */
void sim_i_coll_arrive(sim_engine_t *e, int32_t c);
void sim_i_coll_flow_done(sim_engine_t *e, int32_t c, int32_t tag);
void sim_i_coll_done_event(sim_engine_t *e, int32_t c);
/* Every collective's plans, live copies, the plan cache and the pool's free blocks. */
void sim_i_coll_free_all(sim_engine_t *e);
/* The live copy of running collective id (the phases' state machines work on it). */
static inline sim_coll_t *sim_i_coll(const sim_engine_t *e, int32_t id) {
    return e->colls[id].live;
}

/* coll_algos.c: per-phase state machines. */
int sim_i_phase_state_size(const sim_coll_t *c, int64_t *n_ints, int64_t *n_masks);
void sim_i_phase_begin(sim_engine_t *e, int32_t c);
void sim_i_phase_flow_done(sim_engine_t *e, int32_t c, int32_t tag);
int sim_i_dbtree_build(int32_t n, int32_t *parent, int32_t *child);
/* NVLS: how many shards of M / n cross each GPU -> switch (*up) and switch -> GPU (*down) link
 * (closed_form.c). Return 0 for ops NVLS does not run. */
int sim_i_nvls_uses(sim_coll_op_t op, int32_t n, double *up, double *down);
/* CollNet: the latency of rail j's aggregation in SHARP phase ph: the slowest route up to the rail's
 * first member, the slowest back down, and config.collnet_step_s (coll.c). */
sim_time_ps_t sim_i_sharp_lat_ps(const sim_engine_t *e, const sim_coll_t *c, const sim_phase_t *ph,
                                 int32_t j);

/* executor.c */
void sim_i_op_end(sim_engine_t *e, int32_t op);
int sim_i_exec_start(sim_engine_t *e);
int sim_i_exec_check(sim_engine_t *e);
int sim_i_op_new(sim_engine_t *e, sim_op_kind_t kind, int32_t gpu, int32_t stream, sim_time_ps_t dur_ps,
                 int32_t coll, const char *name, sim_op_id_t *out);

#endif
