/* sim.h - the discrete-event engine of stepsim: event queue, flow-level network, collectives as
 * flows, and the operation DAG executor over GPU streams.
 *
 * Contract
 * - Owns: the event engine (simulated clock, (time, sequence) ordered queue, per-engine pools);
 *   the flow network (max-min fair sharing by progressive filling over abstract directed links,
 *   latency paid before the bytes drain, per-link byte counters and utilisation); collectives
 *   decomposed into flows (ring, hierarchical, double binary tree, halving-doubling, pipelined
 *   chain, send/recv, NVLink and InfiniBand SHARP through the switches) at two fidelities, or timed by the
 * analytic model; the DAG executor that runs operations on GPU streams. Knows nothing of JSON, trace formats
 * or the command line: it reports what happens through sim_observer_t and never prints.
 * - Topology: links are given as plain arrays (capacity, latency) and routes through a callback
 *   that returns link ids (sim_network_desc_t). sim_star_* builds the ideal non-blocking star
 *   (optionally with NVLink domains); sim_topo_network describes a topology built by topo/.
 * - Units: simulated time is an integer count of picoseconds (sim_time_ps_t); durations given in
 *   seconds (double) are converted once, rounding to the nearest picosecond. Bytes are double
 *   (fractional bytes are allowed: they come from dividing buffers into chunks); rates are bytes/s.
 *   Collective sizes follow nccl-tests: size_bytes is the full buffer (allreduce operand,
 *   allgather output, reducescatter input, broadcast/reduce buffer, bytes sent by sendrecv).
 * - Memory: sim_engine_new copies everything it is given (link arrays, collective member lists);
 *   the route callback's context and operation names (const char *) are borrowed and must outlive
 *   the engine. sim_engine_free releases everything; it accepts NULL. sim_star_init allocates
 *   arrays that sim_star_destroy frees (destroy accepts a zeroed or half-initialised star).
 *   Per operation the engine holds 36 bytes (32 for the operation, 4 for its first successor), plus
 *   8 per further dependency; identical collectives (same op, size, members and requests) share
 *   one plan, and a collective's run-time state exists only while it runs (docs/performance.md).
 * - Errors: fallible functions return SIM_OK (0) or a negative sim_status_t and leave the engine
 *   usable; nothing aborts on bad input. sim_engine_last_error() explains the last failure in one
 *   line naming the argument and its value. Running out of memory inside a run is sticky: that run
 *   and every later one return SIM_ENOMEM.
 * - State: no globals. Every bit of state hangs off a sim_engine_t; two engines in one process run
 *   independently (also in different threads, given a thread-safe route function: topo_route is)
 *   and, given the same input, produce identical results and observer logs. Ties between
 *   simultaneous events are broken by a per-engine sequence number, never by pointers.
 * - Hot path: after sim_engine_run starts, no event allocates except when a pool grows
 *   (geometrically), and the route callback is not called (routes are looked up when a
 *   collective or flow is added). The one exception is adaptive routing (route_load in
 *   sim_network_desc_t): then every collective flow is looked up again, against the current link
 *   loads, when it starts; that callback must not allocate either (topo_route does not).
 */
#ifndef STEPSIM_SIM_H
#define STEPSIM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

typedef int64_t sim_time_ps_t;
#define SIM_PS_PER_S 1000000000000LL
#define SIM_TIME_NEVER INT64_MAX

typedef enum sim_status {
    SIM_OK = 0,
    SIM_EINVAL = -1,   /* bad argument: see sim_engine_last_error() */
    SIM_ENOMEM = -2,   /* allocation failed */
    SIM_ESTATE = -3,   /* not allowed in this state (e.g. adding operations after the run began) */
    SIM_EDEADLOCK = -4 /* the run ended with operations that could never start (cycle, stream order) */
} sim_status_t;

const char *sim_status_name(int status); /* "ok", "invalid argument", ... (static storage) */

/* Seconds <-> picoseconds; sim_s_to_ps rounds to nearest and saturates at SIM_TIME_NEVER. */
sim_time_ps_t sim_s_to_ps(double s);
double sim_ps_to_s(sim_time_ps_t ps);

/* ---- event queue ------------------------------------------------------------------------------ */

/* A binary heap keyed by (time_ps, seq): the engine's event queue, public so that tests and the
 * benchmark can drive it directly. seq is assigned by sim_queue_push in push order, so equal times
 * pop first-in first-out. Events live by value in one array that grows geometrically (the pool);
 * push and pop are O(log n) and never allocate unless the array is full. */
typedef struct sim_event {
    sim_time_ps_t time_ps;
    uint64_t seq;
    int32_t kind; /* engine-internal meaning; free for direct users of sim_queue_t */
    int32_t a;
    int64_t b;
} sim_event_t;

typedef struct sim_queue sim_queue_t;
sim_queue_t *sim_queue_new(size_t initial_capacity); /* NULL if out of memory */
void sim_queue_free(sim_queue_t *q);                 /* accepts NULL */
/* Push a copy of *ev (its seq is overwritten). Return SIM_OK or SIM_ENOMEM. */
int sim_queue_push(sim_queue_t *q, const sim_event_t *ev);
/* Pop the smallest (time_ps, seq) into *out. Return 1 if an event was popped, 0 if empty. */
int sim_queue_pop(sim_queue_t *q, sim_event_t *out);
const sim_event_t *sim_queue_peek(const sim_queue_t *q); /* NULL if empty */
size_t sim_queue_size(const sim_queue_t *q);

/* ---- network description ---------------------------------------------------------------------- */

#define SIM_ROUTE_MAX 1040 /* most links a route may have (topo/'s longest: a ring of 2,048 nodes) */
/* The longest latency a link (and each per-step overhead of the configuration) may have: 1 s. A
 * route of SIM_ROUTE_MAX such links sums to 1.04e15 ps, four thousand times below the clock's limit
 * (INT64_MAX ps, about 107 days), so no latency sum can saturate or wrap; longer values are refused
 * by sim_engine_new (a latency above 1 s is not a link). */
#define SIM_LINK_LATENCY_MAX_S 1.0
/* The longest compute operation (and the longest closed-form step the command line simulates): 9e6 s,
 * just below the clock's end (INT64_MAX ps, 9.22e6 s). */
#define SIM_OP_MAX_S 9e6

/* What a link is made of (topo's kinds): per-kind efficiencies and NCCL's step latencies tell NVLink
 * from the network. */
typedef enum sim_link_kind { SIM_LINK_NETWORK = 0, SIM_LINK_NVLINK = 1, SIM_LINK_PCIE = 2 } sim_link_kind_t;
#define SIM_LINK_KIND_COUNT 3

/* Write the route from GPU src to GPU dst (src != dst) as link ids into links[0..cap-1] and return
 * the number of links (>= 1), or a negative value if there is no route. Must be deterministic. */
typedef int (*sim_route_fn)(void *ctx, int32_t src_gpu, int32_t dst_gpu, int32_t *links, int32_t cap);

typedef struct sim_network_desc {
    int32_t n_gpus;                     /* endpoints 0..n_gpus-1 */
    int32_t n_links;                    /* directed links 0..n_links-1 */
    const double *capacity_bytes_per_s; /* [n_links], > 0 */
    const double *latency_s;            /* [n_links], in [0, SIM_LINK_LATENCY_MAX_S] */
    sim_route_fn route;
    void *route_ctx; /* borrowed */
    /* GPUs g and h share a scale-up (NVLink) domain iff g / gpus_per_domain == h / gpus_per_domain.
     * Used by hierarchical collectives and by analytic timing; 1 if there are no domains. */
    int32_t gpus_per_domain;
    /* The sim_link_kind_t of link `link`, called once per link by sim_engine_new with route_ctx;
     * NULL: every link is network. */
    int (*link_kind)(void *ctx, int32_t link);
    /* Optional [n_links], each in (0, 1]: the usable fraction of each link under NCCL's calibration
     * (its technology's, sim_topo_network), used when the configuration's use_link_tech_efficiency is
     * set. NULL: link_kind_efficiency alone. */
    const double *link_tech_efficiency;
    /* Adaptive routing (UGAL), optional. NULL: routes do not depend on the traffic, and the lookups
     * of `route` when a collective is added are final. Set: the engine keeps a load per link (the
     * flows routed over it and not yet ended, per unit of capacity: see sim/network.c) and routes
     * every flow of a collective again when it starts, with this function and link_load[0..n_links)
     * (read only, dimensionless, >= 0); `route` still gives the plan's routes (latencies, closed
     * forms, the auto choice: the idle network's). Same return contract as sim_route_fn; must be
     * deterministic, must not allocate, and must give `route`'s route when every load is 0. */
    int (*route_load)(void *ctx, int32_t src_gpu, int32_t dst_gpu, const double *link_load, int32_t *links,
                      int32_t cap);
} sim_network_desc_t;

/* The ideal non-blocking star (a hand-made stand-in; topo/ builds the `ideal` topology): every GPU has one up
 * and one down link of nic bandwidth into a switch with no internal limit. With gpus_per_domain > 1 every GPU
 * also has an NVLink up and down link into its domain's non-blocking switch, and traffic between GPUs of one
 * domain uses those instead. Links: NIC up of g = 2g, NIC down = 2g+1; NVLink up = 2n+2g, NVLink
 * down = 2n+2g+1 (n = n_gpus). A route is always [up of src, down of dst]. NIC links are of kind
 * network, NVLink links of kind NVLink. */
typedef struct sim_star {
    int32_t n_gpus, gpus_per_domain, n_links;
    double *capacity_bytes_per_s;
    double *latency_s;
} sim_star_t;

typedef struct sim_star_params {
    int32_t n_gpus;
    double nic_bytes_per_s, nic_latency_s;       /* per direction, per link */
    int32_t gpus_per_domain;                     /* 1: no NVLink tier */
    double nvlink_bytes_per_s, nvlink_latency_s; /* used when gpus_per_domain > 1 */
} sim_star_params_t;

int sim_star_init(sim_star_t *star, const sim_star_params_t *p); /* SIM_EINVAL, SIM_ENOMEM */
void sim_star_destroy(sim_star_t *star);
/* Fill *desc so that it describes *star. The engine copies the link arrays but keeps star as the
 * route function's context: keep star alive as long as the engine. */
void sim_star_network(const sim_star_t *star, sim_network_desc_t *desc);

/* A topology built by topo/ (topo.h): its link table (borrowed, not copied until sim_engine_new) and
 * link kinds (topo_link_get), routes from topo_route with the topology's own routing (ECMP hashed per (src,
 * dst) pair; UGAL also sets route_load, so that it compares paths against the engine's link loads), and
 * NVLink domains = topo nodes when GPUs are numbered node-major with equal nodes (else 1 GPU
 * per domain). The topology is the route function's context: keep it alive as long as the engine. Return
 * SIM_OK or SIM_EINVAL (more than 2^31 GPUs or links). */
struct topo;
int sim_topo_network(const struct topo *t, sim_network_desc_t *desc);

/* ---- engine ----------------------------------------------------------------------------------- */

typedef enum sim_fidelity {
    SIM_FIDELITY_DEFAULT = 0, /* the engine's default (sim_config_t.fidelity) */
    SIM_FIDELITY_STEP,        /* every step's flows, each step waiting for its inputs */
    SIM_FIDELITY_FAST         /* one long-lived coflow per phase plus the per-step latencies */
} sim_fidelity_t;

typedef enum sim_comm_mode {
    SIM_COMM_NETWORK = 0, /* collectives become flows on the network */
    SIM_COMM_ANALYTIC = 1 /* collectives take model_collective_time_s, no flows */
} sim_comm_mode_t;

/* NCCL's protocols. A protocol changes a collective's costs, not its decomposition: a launch latency
 * paid once, a latency added to every step (by where the step goes), and the fraction of the wire's
 * bytes that carry data. */
typedef enum sim_proto {
    SIM_PROTO_AUTO = 0, /* the enabled protocol with the smallest closed form (as NCCL's tuner) */
    SIM_PROTO_SIMPLE,   /* large steps, full bandwidth, higher per-step latency */
    SIM_PROTO_LL,       /* low latency: 8-byte lines of 4 data bytes and a flag */
    SIM_PROTO_LL128     /* 128-byte lines of 120 data bytes and a flag */
} sim_proto_t;
#define SIM_PROTO_COUNT 4

const char *sim_proto_name(sim_proto_t proto);           /* "auto", "simple", "ll", "ll128" */
int sim_proto_parse(const char *name, sim_proto_t *out); /* SIM_OK or SIM_EINVAL */

/* The cost model of one protocol (docs/engine.md). Index [0] of the two-element arrays applies to
 * ring-like algorithms (ring, hierarchical, chain, halving-doubling, direct), [1] to the tree. Times
 * in seconds, >= 0; efficiencies in (0, 1]; rates in bytes/s. */
typedef struct sim_proto_params {
    int enabled;                       /* the auto choice may take it (an explicit request always may) */
    int network;                       /* ... also for collectives that cross NVLink domains */
    double launch_s[2];                /* once per collective, before its first step (NCCL baseLat) */
    double nvlink_step_s[2];           /* added to every step inside an NVLink domain (NCCL hwLat NVLink) */
    double net_step_s[2];              /* added to every step between domains (NCCL hwLat NET + the network
                                          overhead); a ring with one member per domain pays net_step_s[1] */
    double crossing_nvlink_step_min_s; /* rings that cross domains: an NVLink step costs at least this
                                          (NCCL: the proxy's network overhead per step) */
    double efficiency[2];              /* data bytes per wire byte: flows carry bytes / efficiency */
    double max_busbw_bytes_per_s[2];   /* ring-like algorithms: bus bandwidth cap inside one domain [0],
                                          across domains [1] (NCCL llMaxBw for LL); 0: none */
} sim_proto_params_t;

/* How a ring's per-step latencies add up. */
typedef enum sim_ring_latency {
    SIM_RING_LATENCY_SLOWEST = 0, /* lockstep: every step pays the slowest member's latency */
    SIM_RING_LATENCY_MEAN = 1     /* pipelined (NCCL): a chunk pays every hop's latency once per lap, so
                                     every step pays the mean latency of the ring's hops */
} sim_ring_latency_t;

/* NCCL_STEPS: the slots of an NCCL connection's buffer (src/include/device.h), each holding one
 * chunk (Simple: 4 MiB / 8 = 512 KiB), so up to 8 chunks are in flight per connection. */
#define SIM_NCCL_STEPS 8

typedef struct sim_config {
    int32_t comm_streams; /* communication streams per GPU (stream 0 is compute); default 2 */
    uint64_t seed;        /* the engine's PRNG (sim_engine_rand); default 1 */
    /* Software latency added to every collective step and point-to-point message on top of the
     * route's link latencies (NCCL-like per-step overhead). Default 0. */
    double step_overhead_s;
    /* Fraction of every link's capacity that flows can use (protocol and header overhead: NCCL
     * reaches about 0.87 of NVLink on an 8 x H100 node), in (0, 1]. Link utilisation is reported
     * against the nominal capacity. Default 1. */
    double link_efficiency;
    /* Pipeline chunk of the tree and chain algorithms (NCCL Simple: 4 MiB / 8 steps). Default
     * 512 KiB. */
    double chunk_bytes;
    /* Chunks of a pipelined chain (broadcast, reduce) in flight per edge, W: chunk i may start
     * across an edge once it has crossed the previous edge and chunk i - W has crossed this one; its
     * latency then overlaps the transfers of the chunks ahead of it, which cross the edge one after
     * another (docs/engine.md, "The chain's window"). 1 is one chunk at a time; 0 (default) is
     * SIM_NCCL_STEPS; at most 1024 (sim_coll_add refuses more). */
    int32_t chain_window;
    sim_fidelity_t fidelity;   /* default fidelity of collectives; SIM_FIDELITY_FAST by default */
    sim_comm_mode_t comm_mode; /* default mode of collectives; network by default */
    /* For analytic mode (copied); has_system 0 means analytic collectives are refused. */
    int has_system;
    model_system_t system;
    model_compat_t compat;
    /* Usable fraction of each kind of link, in (0, 1], on top of link_efficiency. Default 1. */
    double link_kind_efficiency[SIM_LINK_KIND_COUNT];
    /* 1: a link of a network that gives link_tech_efficiency takes that fraction in place of
     * link_kind_efficiency (sim_config_nccl_topology sets it). Default 0. */
    int use_link_tech_efficiency;
    /* Protocols, indexed by sim_proto_t ([SIM_PROTO_AUTO] is unused). Default: Simple enabled with no
     * latencies and efficiency 1, LL and LL128 the same but disabled: collectives cost their bare
     * alpha-beta form. sim_config_nccl sets NCCL's constants. */
    sim_proto_params_t proto[SIM_PROTO_COUNT];
    sim_ring_latency_t ring_latency; /* default SIM_RING_LATENCY_SLOWEST */
    /* Wire efficiency, (0, 1], of collectives that cross domains with one member in each (NCCL: a GPU
     * that sends and receives through the same NIC); not of sendrecv (direct). Default 1. */
    double single_member_efficiency;
    /* > 0: the tree's chunk adapts as NCCL's: chunk_bytes halves while a tree gets fewer than
     * 8 x depth chunks, down to this. 0 (default): chunk_bytes. */
    double tree_chunk_min_bytes;
    /* NVLink SHARP (NCCL's NVLS; docs/engine.md, "In-network reductions"). nvls 1: the switches of
     * the NVLink domains reduce and multicast (NVSwitch of NVLink-4 and later), so allreduce,
     * allgather and reducescatter of a group inside one domain may run SIM_ALGO_NVLS when every
     * member's routes to the others are GPU -> switch -> GPU. Default 0 (sim_topo_nvls gives it for a
     * topology). nvls_efficiency (0, 1]: data bytes per wire byte of NVLS traffic on top of the links'
     * efficiencies (NCCL's nvlsEfficiency); default 1. nvls_step_s >= 0: its one step's latency
     * (NCCL's NVLS hwLat); default 0. */
    int nvls;
    double nvls_efficiency;
    double nvls_step_s;
    /* InfiniBand SHARP (NCCL's CollNet, which needs its SHARP plugin and NCCL_COLLNET_ENABLE=1;
     * docs/engine.md, "In-network reductions"). collnet 1: the network's switches aggregate, so an allreduce
     * across domains with as many members in each may run SIM_ALGO_COLLNET. Default 0, as NCCL's.
     * collnet_efficiency (0, 1]: data bytes per wire byte of the aggregation on top of the links'
     * efficiencies; default 1. collnet_step_s >= 0: the aggregation's latency on top of its routes' (up
     * to the root and back); default 0. */
    int collnet;
    double collnet_efficiency;
    double collnet_step_s;
} sim_config_t;

void sim_config_default(sim_config_t *cfg);

/* The platform NCCL's constants depend on. */
typedef struct sim_nccl_platform {
    int sm;            /* GPU compute capability x 10: 80 (A100), 90 (H100), 100 (B200 and later) */
    int amd_host;      /* 1: AMD CPUs (NCCL's network overhead 2 us, else 1 us; llMaxBw rows) */
    int ll128_network; /* 1: LL128 across the network (NCCL: the GPU reaches its NIC through a PCIe
                          switch, or Hopper) */
} sim_nccl_platform_t;

/* Set NCCL's tuning constants (src/graph/tuning.cc, docs/engine.md): launch and per-step latencies
 * of Simple, LL and LL128, their wire efficiencies and LL's bandwidth cap, pipelined ring
 * latencies, NCCL's adaptive tree chunk, the one-rank-per-node discount (0.7 / 0.92) and NCCL's
 * achievable NVLink rate (20.0 of 25 GB/s per link on sm80, 20.6 on sm90), and NVLink SHARP on sm90
 * and later (nvls 1; nvlsEfficiency 0.85 on sm90, 0.74 on sm100; its 25 us step). Leaves the network's
 * efficiency alone: it depends on the fabric (link_kind_efficiency[SIM_LINK_NETWORK]). */
void sim_config_nccl(sim_config_t *cfg, const sim_nccl_platform_t *platform);

/* NCCL's calibration for the links of a topology built by topo/ (the one place it is derived), from
 * its link technologies alone (topo_tech_info): the platform (the NVLink technology's GPU generation,
 * the node's host make, LL128 on the network unless the NICs hang off the CPU), sim_config_nccl, then
 * every link's efficiency from its own technology (use_link_tech_efficiency with sim_topo_network's
 * link_tech_efficiency) and per kind the efficiency of the kind's technology. */
void sim_config_nccl_topology(sim_config_t *cfg, const struct topo *t);

/* 1 if the topology's NVLink switches can reduce and multicast (NVLink SHARP: its NVLink technology is
 * NVLink-4 or later, the GPU generation NCCL runs NVLS on), else 0. sim_config_nccl_topology sets
 * config.nvls from it; an uncalibrated configuration may too. Whether a group's routes go through
 * one switch is the engine's check (sim_coll_add). */
int sim_topo_nvls(const struct topo *t);

/* 1 if the topology's network switches can aggregate (InfiniBand SHARP: its network technology is
 * InfiniBand, whose Quantum switches carry SHARP), else 0. Nothing sets config.collnet from it by
 * default: NCCL uses CollNet only when asked (NCCL_COLLNET_ENABLE=1 with its SHARP plugin). */
int sim_topo_sharp(const struct topo *t);

typedef struct sim_engine sim_engine_t;

/* Create an engine over a network (cfg NULL: sim_config_default). Copies *cfg and the link arrays;
 * validates the configuration and every link (capacity > 0 and finite, latency >= 0). Return SIM_OK
 * and *out, or SIM_EINVAL / SIM_ENOMEM with *out NULL and, if err is not NULL, one line naming the
 * bad field and value in err[0..err_size). */
int sim_engine_new(const sim_config_t *cfg, const sim_network_desc_t *net, sim_engine_t **out, char *err,
                   size_t err_size);
void sim_engine_free(sim_engine_t *e);

/* One line explaining the last error returned on this engine ("" if none); engine storage. */
const char *sim_engine_last_error(const sim_engine_t *e);
sim_time_ps_t sim_engine_now(const sim_engine_t *e);
uint64_t sim_engine_rand(sim_engine_t *e); /* the engine's seeded PRNG (splitmix64) */

/* ---- observer ----------------------------------------------------------------------------------- */

typedef enum sim_op_kind { SIM_OP_COMPUTE, SIM_OP_COLLECTIVE, SIM_OP_SEND, SIM_OP_RECV } sim_op_kind_t;

typedef int32_t sim_op_id_t;
typedef int32_t sim_coll_id_t;
typedef int64_t sim_flow_id_t;

typedef struct sim_op_info {
    sim_op_id_t op;
    sim_op_kind_t kind;
    int32_t gpu, stream;
    sim_coll_id_t coll; /* -1 for compute */
    const char *name;   /* as given (may be NULL) */
} sim_op_info_t;

typedef struct sim_flow_info {
    sim_flow_id_t flow;
    int32_t src_gpu, dst_gpu; /* -1 for a coflow that merges several pairs */
    double bytes;
    sim_coll_id_t coll; /* -1 for a flow added with sim_flow_add */
    int32_t n_links;
} sim_flow_info_t;

typedef enum sim_counter_kind { SIM_COUNTER_LINK_UTILIZATION } sim_counter_kind_t;

typedef struct sim_counter {
    sim_counter_kind_t kind;
    int32_t link;
    double value; /* utilisation in [0, 1]: the link's load divided by its capacity */
} sim_counter_t;

/* Every callback may be NULL. Callbacks must not call back into the engine except for the const
 * queries (sim_engine_now, sim_op_times, ...). Link utilisation is reported each time it changes. */
typedef struct sim_observer {
    void *ctx;
    void (*op_start)(void *ctx, sim_time_ps_t t_ps, const sim_op_info_t *op);
    void (*op_end)(void *ctx, sim_time_ps_t t_ps, const sim_op_info_t *op);
    void (*flow_start)(void *ctx, sim_time_ps_t t_ps, const sim_flow_info_t *flow); /* latency begins */
    void (*flow_end)(void *ctx, sim_time_ps_t t_ps, const sim_flow_info_t *flow);
    void (*counter)(void *ctx, sim_time_ps_t t_ps, const sim_counter_t *counter);
} sim_observer_t;

void sim_engine_set_observer(sim_engine_t *e, const sim_observer_t *obs); /* copied; NULL clears */

/* ---- raw flows ---------------------------------------------------------------------------------- */

typedef struct sim_flow_desc {
    const int32_t *links;     /* route as link ids; copied */
    int32_t n_links;          /* 1..SIM_ROUTE_MAX */
    double bytes;             /* >= 0 */
    double weight;            /* max-min weight, > 0 (0 means 1) */
    double bound_bytes_per_s; /* rate cap, > 0; 0 means none */
    sim_time_ps_t start_ps;   /* >= now */
} sim_flow_desc_t;

/* Start a flow at d->start_ps: it waits for the sum of its links' latencies, then drains at its
 * max-min share. Return SIM_OK and *out (may be NULL), SIM_EINVAL, SIM_ENOMEM. */
int sim_flow_add(sim_engine_t *e, const sim_flow_desc_t *d, sim_flow_id_t *out);
/* Current rate of a live flow (0 while in its latency phase); negative if the flow is not live. */
double sim_flow_rate(const sim_engine_t *e, sim_flow_id_t f);

/* ---- collectives ------------------------------------------------------------------------------ */

typedef enum sim_coll_op {
    SIM_COLL_ALLREDUCE,
    SIM_COLL_ALLGATHER,
    SIM_COLL_REDUCESCATTER,
    SIM_COLL_BROADCAST,
    SIM_COLL_REDUCE,
    SIM_COLL_SENDRECV, /* two members: gpus[0] sends size_bytes to gpus[1] */
    SIM_COLL_ALLTOALL  /* every member sends size_bytes / n to every member (nccl-tests' alltoall) */
} sim_coll_op_t;
#define SIM_COLL_OP_COUNT 7

typedef enum sim_coll_algo {
    SIM_ALGO_AUTO,             /* chosen as NCCL would: sim_coll_algo_choose */
    SIM_ALGO_RING,             /* ring RS/AG/AR; for broadcast/reduce, the chain in ring order */
    SIM_ALGO_TREE,             /* double binary tree (allreduce only) */
    SIM_ALGO_HIERARCHICAL,     /* intra-domain, one ring per rail across domains, intra again;
                                  alltoall: every member first hands each domain peer what goes to
                                  that peer's rail (NVLink), then one exchange per rail across domains
                                  (NCCL's PXN; DeepEP's NVLink/RDMA forwarding) */
    SIM_ALGO_HALVING_DOUBLING, /* recursive halving / doubling (group size a power of two) */
    SIM_ALGO_CHAIN,            /* pipelined chain (broadcast, reduce) */
    SIM_ALGO_DIRECT,           /* one flow (sendrecv); alltoall: every member sends size / n to every
                                  other member at once (NCCL's alltoall, grouped send/recv) */
    SIM_ALGO_NVLS,             /* NVLink SHARP: the members' NVSwitch reduces and multicasts (config.nvls) */
    SIM_ALGO_COLLNET           /* InfiniBand SHARP: intra-domain ring RS, the network's switches all-reduce
                                  each rail, intra-domain ring AG (allreduce; config.collnet) */
} sim_coll_algo_t;
#define SIM_COLL_ALGO_COUNT 9

const char *sim_coll_op_name(sim_coll_op_t op);              /* "allreduce", ..., "sendrecv" */
const char *sim_coll_algo_name(sim_coll_algo_t algo);        /* "auto", "ring", "tree", "hierarchical", ... */
int sim_coll_op_parse(const char *name, sim_coll_op_t *out); /* SIM_OK or SIM_EINVAL */
int sim_coll_algo_parse(const char *name, sim_coll_algo_t *out); /* "halving-doubling", ... */

typedef struct sim_coll_desc {
    sim_coll_op_t op;
    sim_coll_algo_t algo;
    sim_fidelity_t fidelity;
    sim_comm_mode_t mode; /* SIM_COMM_NETWORK or SIM_COMM_ANALYTIC */
    int use_default_mode; /* 1: take the engine's comm_mode instead of .mode */
    double size_bytes;    /* nccl-tests size, >= 0 */
    const int32_t *gpus;  /* members in rank order (ring order; sendrecv: {src, dst}); copied */
    int32_t n_gpus;       /* >= 1, distinct */
    int32_t root;         /* broadcast/reduce: index into gpus */
    int32_t channels;     /* ring, hierarchical: rings per ring phase (NCCL channels), each on
                             size / channels, in different member orders; 0 means 1 (max 64);
                             SIM_CHANNELS_AUTO: as NCCL would (docs/engine.md) */
    int32_t stream;       /* communication stream of every member, 1..comm_streams */
    const char *name;     /* borrowed, for the observer; may be NULL */
    sim_proto_t proto;    /* protocol; SIM_PROTO_AUTO (0) chooses with the algorithm */
} sim_coll_desc_t;
#define SIM_CHANNELS_AUTO (-1)

/* Add a collective: one operation per member on that member's GPU and stream (member_ops[i] for
 * gpus[i]; member_ops may be NULL). The collective starts when every member operation is ready
 * (its dependencies are done and it is at the head of its stream) and every member operation ends
 * when the whole collective ends. Routes are looked up here. An auto algorithm or protocol takes the
 * (algorithm, protocol) pair with the smallest closed form over the candidates: hierarchical (groups
 * spanning several domains of equal share), ring and, for allreduce on more than 2 GPUs, the tree,
 * then NVLS (config.nvls, a group inside one domain whose routes all go through one switch, Simple
 * only), and for allreduce across domains of equal share CollNet (config.collnet, Simple only); the chain for
 * broadcast and reduce, direct for sendrecv; every enabled protocol (those with .network for groups that
 * cross domains). Ties go to the earlier candidate in that order, and to Simple. Return SIM_OK, SIM_EINVAL
 * (unknown GPU, algorithm not valid for op or group, analytic mode without a system), SIM_ENOMEM, SIM_ESTATE.
 * Complexity: O(pairs x route length) per candidate, pairs being n x channels for rings, n log n for
 * halving-doubling, 2 n route lookups for NVLS. */
int sim_coll_add(sim_engine_t *e, const sim_coll_desc_t *d, sim_op_id_t *member_ops, sim_coll_id_t *out);

/* Point-to-point: a sendrecv collective whose send runs on (src, src_stream) and recv on
 * (dst, dst_stream). Both end when the message has arrived. */
int sim_p2p_add(sim_engine_t *e, int32_t src_gpu, int32_t src_stream, int32_t dst_gpu, int32_t dst_stream,
                double bytes, const char *name, sim_op_id_t *send_op, sim_op_id_t *recv_op);

typedef struct sim_coll_result {
    sim_coll_algo_t algo;    /* the algorithm actually used (auto resolved) */
    sim_fidelity_t fidelity; /* resolved */
    sim_comm_mode_t mode;
    sim_time_ps_t start_ps, end_ps; /* SIM_TIME_NEVER while not started/ended */
    double closed_form_s;           /* alpha-beta time of the algorithm on an idle network (section 4) */
    int64_t flows;                  /* flows started */
    sim_proto_t proto;              /* the protocol used (auto resolved) */
    int32_t channels;               /* channels used (auto resolved) */
    /* Data bytes the members sent, all members together (network mode; 0 without flows): every
     * flow's data bytes (its wire bytes over the protocol's overhead) once per member pair it
     * carries. A ring all-reduce of size S on n members sends 2 (n - 1) S, so 2 (n - 1) / n S each. */
    double sent_bytes;
    int32_t members;
} sim_coll_result_t;

int sim_coll_result(const sim_engine_t *e, sim_coll_id_t c, sim_coll_result_t *out);

/* ---- closed forms and the auto choice ----------------------------------------------------------- */

/* Alpha-beta parameters of a collective on an idle network: alpha is the latency of one step (route
 * latency plus step overhead), the bandwidth that of the slowest link of a step. Hierarchical
 * collectives use intra_* inside a domain and alpha/bandwidth across domains. tree_depth and
 * tree_load describe the double binary tree (sim_dbtree_shape). */
typedef struct sim_ab_params {
    double alpha_s, bytes_per_s;
    double intra_alpha_s, intra_bytes_per_s;
    int32_t per_domain;   /* hierarchical: members per domain (g); n / g domains */
    int32_t channels;     /* ring, hierarchical: rings per phase, each on M / channels, and bandwidth
                             means what one of them gets on its narrowest link; 0 means 1 */
    double chunk_bytes;   /* tree and chain pipeline chunk */
    int32_t chain_window; /* chain: chunks in flight per edge (sim_config_t); 0: SIM_NCCL_STEPS */
    double launch_s;      /* paid once before the first step (a protocol's launch latency); 0 none */
} sim_ab_params_t;

/* Closed-form time in seconds (docs/engine.md lists every formula). Return a negative value if the
 * algorithm does not apply (e.g. halving-doubling with n not a power of two). */
double sim_closed_form_s(sim_coll_op_t op, sim_coll_algo_t algo, double size_bytes, int32_t n,
                         const sim_ab_params_t *p);

/* Depth (edges on the longest root-to-leaf path over both trees) and load (most tree edges, over
 * both trees, that touch one rank in one direction) of NCCL's double binary tree on n ranks. */
void sim_dbtree_shape(int32_t n, int32_t *depth, int32_t *load);

/* The algorithm NCCL would pick (docs/engine.md) given one set of alpha-beta parameters: the
 * candidate NCCL enables for this op with the smallest closed-form time; ring-like candidates become
 * hierarchical when the group spans several domains with more than one member in each. Never
 * returns SIM_ALGO_AUTO. (sim_coll_add weighs each candidate with its own routes and protocol.) */
sim_coll_algo_t sim_coll_algo_choose(sim_coll_op_t op, double size_bytes, int32_t n,
                                     const sim_ab_params_t *p);

/* ---- nccl-tests for a simulated cluster ------------------------------------------------------------ */

/* One measurement the way nccl-tests makes it (the core of `stepsim collective`): G equal, disjoint
 * groups run the same collective at once on a fresh engine over `net`. */
typedef struct sim_coll_bench {
    sim_coll_op_t op;
    sim_coll_algo_t algo;
    sim_fidelity_t fidelity;
    sim_comm_mode_t mode;
    int32_t gpus;          /* GPUs of all groups together, >= 1 */
    int32_t groups;        /* G >= 1, dividing gpus; 0 means 1 */
    int32_t gpus_per_node; /* use the first K GPUs of every NVLink domain (0: GPUs 0..gpus-1) */
    int32_t channels;      /* as sim_coll_desc_t.channels */
    int strided;           /* 0: group g holds selected GPUs [g m, (g+1) m); 1: g, g+G, g+2G, ... */
    double size_bytes;     /* nccl-tests size of one group's collective */
    sim_proto_t proto;     /* as sim_coll_desc_t.proto */
} sim_coll_bench_t;

typedef struct sim_coll_bench_result {
    double time_s;            /* from the start until the last group finished */
    double closed_form_s;     /* group 0's algorithm on an idle network */
    double algbw_bytes_per_s; /* size / time */
    double busbw_bytes_per_s; /* algbw x 2(n-1)/n (allreduce), x (n-1)/n (allgather, reducescatter,
                                 alltoall) */
    sim_coll_algo_t algo;     /* group 0's algorithm, auto resolved */
    int64_t flows, events;
    sim_proto_t proto; /* group 0's protocol, auto resolved */
    int32_t channels;  /* group 0's channels, auto resolved */
} sim_coll_bench_result_t;

/* Run one measurement. sendrecv needs groups of two and is a pairwise exchange (both directions at
 * once, on communication streams 1 and 2). Return SIM_OK, SIM_EINVAL (err names the bad field and
 * value, e.g. "gpus_per_node: 8 exceeds the NVLink domain (4)"), SIM_ENOMEM. err may be NULL. */
int sim_coll_bench_run(const sim_config_t *cfg, const sim_network_desc_t *net, const sim_coll_bench_t *b,
                       sim_coll_bench_result_t *out, char *err, size_t err_size);

/* ---- operations and the DAG executor ------------------------------------------------------------ */

#define SIM_STREAM_COMPUTE 0

/* A compute operation of duration_s (>= 0) on (gpu, stream). Operations on one stream run in the
 * order they were added (CUDA stream semantics); an operation starts when it is at the head of its
 * stream and every operation it depends on has ended. Names are kept as pointers: an engine takes
 * at most 32767 distinct ones (SIM_ENOMEM beyond). */
int sim_op_compute(sim_engine_t *e, int32_t gpu, int32_t stream, double duration_s, const char *name,
                   sim_op_id_t *out);
/* op starts only after `after` has ended. A dependency on an earlier operation of op's own stream is
 * implied by the stream's order: accepted and not stored (sim_op_successors does not list it).
 * Return SIM_EINVAL for unknown ids, op == after, or an op that already has 65535 dependencies. */
int sim_op_depend(sim_engine_t *e, sim_op_id_t op, sim_op_id_t after);
/* Start and end time of an operation (SIM_TIME_NEVER if it did not start / end). */
int sim_op_times(const sim_engine_t *e, sim_op_id_t op, sim_time_ps_t *start_ps, sim_time_ps_t *end_ps);
int32_t sim_op_count(const sim_engine_t *e);
/* The GPU of an operation (-1 for unknown ids). */
int32_t sim_op_gpu(const sim_engine_t *e, sim_op_id_t op);
/* The collective an operation is a member of (-1 for compute operations and unknown ids). */
sim_coll_id_t sim_op_collective(const sim_engine_t *e, sim_op_id_t op);
/* Make room for n_ops operations and n_dependencies dependencies in all (a hint: adding more still
 * works, growing geometrically); avoids regrowing the arrays while a large DAG is added. Return
 * SIM_OK, SIM_EINVAL (negative or more than 2^31), SIM_ENOMEM or SIM_ESTATE (the run has started). */
int sim_engine_reserve(sim_engine_t *e, int64_t n_ops, int64_t n_dependencies);

/* Run until nothing is left to happen. Return SIM_OK, or SIM_EDEADLOCK if some operation never
 * started (a dependency cycle, or a collective whose members wait on each other's streams). Can be
 * called again after more flows were added. Adding operations or collectives after the first run
 * returns SIM_ESTATE. */
int sim_engine_run(sim_engine_t *e);
/* Process every event with time <= t_ps (and the network re-solve at each timestamp), then stop
 * with the clock at the last processed timestamp. */
int sim_engine_run_until(sim_engine_t *e, sim_time_ps_t t_ps);

/* ---- progress ------------------------------------------------------------------------------------ */

/* Where a run is, for a progress display (the engine never prints). */
typedef struct sim_progress {
    sim_time_ps_t now_ps; /* simulated time reached */
    int32_t ops_done;     /* operations ended so far */
    int32_t ops_total;    /* operations added (sim_op_count) */
    int64_t events;       /* queue and flow events processed so far */
} sim_progress_t;

typedef void (*sim_progress_fn)(void *ctx, const sim_progress_t *p);

/* Timestamps processed between two progress calls. */
#define SIM_PROGRESS_EVERY 256

/* Call fn(ctx, ...) every SIM_PROGRESS_EVERY timestamps of a run and once when sim_engine_run or
 * sim_engine_run_until returns (fn NULL: never). Between calls the run only counts timestamps: no
 * clock, no allocation. fn must not call into the engine except its const queries; it cannot change
 * the run (results are the same with and without it). now_ps and ops_done never decrease from one
 * call to the next. */
void sim_engine_set_progress(sim_engine_t *e, sim_progress_fn fn, void *ctx);

/* ---- statistics ---------------------------------------------------------------------------------- */

typedef struct sim_engine_stats {
    int64_t events;        /* queue events processed */
    int64_t flows_started; /* flows (coflows count once) */
    int64_t flow_events;   /* latency ends and completions processed */
    int64_t solves;        /* batched max-min re-solves */
    int64_t solve_flows;   /* flows visited by re-solves, summed */
    int64_t solve_links;   /* links visited by re-solves, summed */
    int64_t rate_changes;  /* flows whose rate changed and were re-keyed */
} sim_engine_stats_t;

void sim_engine_stats(const sim_engine_t *e, sim_engine_stats_t *out);

typedef struct sim_link_stats {
    double bytes;          /* bytes carried so far */
    sim_time_ps_t busy_ps; /* time with load > 0 */
    double utilization;    /* bytes / (capacity x now); 0 at time 0 */
    double peak_utilization;
    double load_bytes_per_s; /* current load */
} sim_link_stats_t;

int sim_link_stats(const sim_engine_t *e, int32_t link, sim_link_stats_t *out); /* SIM_EINVAL: no link */

/* The k busiest links by average utilisation so far (ties: lower id first), for reports: fills
 * links[0..k) and utilization[0..k) and returns how many (<= k; only links that carried bytes).
 * O(links x k). */
int32_t sim_links_busiest(const sim_engine_t *e, int32_t k, int32_t *links, double *utilization);

/* Bytes per link and per class of GPUs as well (e.g. per job of several sharing a fabric):
 * class_of_gpu[0..n_gpus) in -1..n_classes-1 (copied; -1: not counted). A flow counts for the class
 * of its collective's first member (a flow of sim_flow_add: of its source GPU), with its bytes on
 * every link of its route (times the crossings of a coflow's merged route) when it ends, so after a
 * run the classes of a link add up to its bytes (sim_link_stats) less at most one picosecond at the
 * link's rate per flow (the link integrates its load up to completion times rounded up to whole
 * picoseconds). Before the run:
 * SIM_OK, SIM_EINVAL (a class out of range), SIM_ENOMEM, SIM_ESTATE. Memory: n_links x n_classes
 * doubles; O(route length) per flow end, no allocation. */
int sim_engine_set_link_classes(sim_engine_t *e, int32_t n_classes, const int32_t *class_of_gpu);
/* The bytes class c carried on link so far (0 without classes or out of range). */
double sim_link_class_bytes(const sim_engine_t *e, int32_t link, int32_t c);

/* ---- introspection (for exporting what was added) ---------------------------------------------- */

/* An operation as it was added: kind, GPU and stream, name (borrowed), and for a compute operation
 * its duration (as added before the run, end - start after it; -1 otherwise); for a member of a
 * collective the collective and its index among the members. SIM_OK or SIM_EINVAL (unknown id). */
typedef struct sim_op_desc {
    sim_op_kind_t kind;
    int32_t gpu, stream;
    const char *name;
    double duration_s;
    sim_coll_id_t coll; /* -1 for compute */
    int32_t member;     /* index into the collective's members, -1 for compute */
} sim_op_desc_t;
int sim_op_describe(const sim_engine_t *e, sim_op_id_t op, sim_op_desc_t *out);
/* The operations that depend on op (sim_op_depend(e, succ, op)), up to cap of them into out; returns
 * how many there are (may exceed cap), -1 for an unknown id. O(successors). */
int32_t sim_op_successors(const sim_engine_t *e, sim_op_id_t op, sim_op_id_t *out, int32_t cap);
/* A collective as it was added: its members (gpus: engine storage, valid while the engine lives) are
 * operations first_op .. first_op + n_gpus - 1; the algorithm, protocol and channels as requested.
 * SIM_OK or SIM_EINVAL (unknown id). */
typedef struct sim_coll_info {
    sim_coll_op_t op;
    double size_bytes;
    int32_t n_gpus, root;
    const int32_t *gpus;
    sim_op_id_t first_op;
    sim_coll_algo_t requested_algo;
    sim_proto_t requested_proto;
    int32_t requested_channels;
} sim_coll_info_t;
int sim_coll_describe(const sim_engine_t *e, sim_coll_id_t c, sim_coll_info_t *out);

#endif
