/* collective_corrected.c - the corrected collective-time model: NCCL-like protocol selection over the
 * reference's two-tier (NVLink + scale-out) structure, documented in docs/collectives.md.
 *
 * Algorithm: the time is the minimum over a few (algorithm, protocol) candidates, as NCCL's tuner
 * picks the fastest one: ring with the LL protocol (low latency, half the wire bandwidth, one rail),
 * ring with the Simple protocol (full bandwidth, higher per-step latency), and for a multi-domain
 * allreduce a pipelined tree with logarithmic latency. Each candidate is latency + bytes / bandwidth,
 * affine and non-decreasing in the volume, so the minimum is continuous and non-decreasing in the
 * volume too. O(1), no loops, no allocation: it runs about a million times per search.
 *
 * Every latency constant is one of NCCL's published tuning constants (src/graph/tuning.cc: baseLat,
 * hwLat, the network overhead) in microseconds. They describe the A100-class hardware NCCL was tuned
 * on, so network-hop constants are scaled by sys->ib_latency_s / 5 us and NVLink-hop constants by
 * sys->nvlink_latency_s / 2.5 us (the A100 preset's values): on the A100, H100, H200 and B200 presets
 * they are NCCL's numbers, and a system with slower links gets proportionally slower hops. */
#include <math.h>

#include "model_internal.h"

/* Reference hop latencies the NCCL constants are taken to apply to (the A100 preset). */
#define REF_IB_LATENCY_S 5e-6
#define REF_NVLINK_LATENCY_S 2.5e-6

/* NCCL baseLat (Ring): kernel launch and set-up per collective, LL and Simple. Not link latency, so
 * not scaled by the system's hop latencies. */
#define BASE_LL_S 6.6e-6
#define BASE_SIMPLE_S 8.4e-6
/* NCCL hwLat, NVLink, Ring: one NVLink step, LL and Simple. */
#define NVL_LL_S 0.6e-6
#define NVL_SIMPLE_S 3.4e-6
/* NCCL network overhead per step on AMD hosts (Perlmutter: Milan), getNetOverhead(). */
#define NET_OVERHEAD_S 2.0e-6
/* One network step: hwLat NET + overhead. LL Ring 2.7 us; with one rank per node NCCL uses the Tree
 * value 5.0 us ("latencies are fully exposed"); Simple 14 us plus the overhead twice (flush). */
#define NET_LL_S (2.7e-6 + NET_OVERHEAD_S)
#define NET_LL_ONE_PER_NODE_S (5.0e-6 + NET_OVERHEAD_S)
#define NET_SIMPLE_S (14.0e-6 + 2.0 * NET_OVERHEAD_S)
/* A multi-node Simple ring launches every step through the network proxy: NCCL floors the
 * intra-node step at 3x the network overhead. */
#define NET_SIMPLE_STEP_FLOOR_S (3.0 * NET_OVERHEAD_S)

/* LL moves 8-byte lines holding 4 bytes of data and a flag: half the wire rate (NCCL: x 0.5). Over
 * the network its flag polling does not scale with the node's NICs (NCCL caps it by llMaxBw), so a
 * multi-domain LL ring gets half of one rail. */
#define LL_EFF 0.5
/* Tree allreduce bus-bandwidth efficiency (NCCL: busBw * .92). */
#define TREE_EFF 0.92
/* Tree pipeline chunk: NCCL's Simple buffer (4 MiB) over its NCCL_STEPS (8) slots = 512 KiB. Each
 * tree level forwards one chunk before the pipeline is full. */
#define TREE_CHUNK_GB (512.0 * 1024.0 * 1e-9)
/* One GPU per NVLink domain, one NIC per GPU (a single rail): every ring step is a network step
 * and nothing hides the per-chunk handshake. Measured on Perlmutter: 14.1 of 17.5 GB/s at every
 * node count (2..128 nodes, large messages), i.e. 0.80; NCCL's tuner applies a penalty of the same
 * size at one rank per node (LL128: 0.7 instead of 0.92, ratio 0.76). */
#define SINGLE_RAIL_EFF 0.8

/* The shape of one collective on the two tiers, shared by the candidates. */
typedef struct shape {
    double steps;           /* ring steps: n-1, 2(n-1) for allreduce */
    double net_steps;       /* of which cross an NVLink-domain boundary */
    double bus_factor;      /* bytes each rank moves per byte of the buffer: 2(n-1)/n, (n-1)/n, 1 */
    double nodes;           /* NVLink domains the group spans */
    double per_domain;      /* t */
    double bw_gb_per_s;     /* ring bus bandwidth: min(NVLink, rails x NIC) or NVLink alone */
    double rail_gb_per_s;   /* one rail (NIC) of the scale-out network */
    double nvlink_gb_per_s; /* per-GPU NVLink */
    double net_scale;       /* sys->ib_latency_s / REF_IB_LATENCY_S */
    double nvl_scale;       /* sys->nvlink_latency_s / REF_NVLINK_LATENCY_S */
} shape_t;

static void shape_steps(shape_t *sh, model_coll_op_t op, int64_t n, int64_t nodes) {
    const double n_d = (double)n;
    switch (op) {
    case MODEL_COLL_ALLREDUCE:
        sh->steps = 2.0 * (n_d - 1.0);
        sh->net_steps = 2.0 * (double)(nodes - 1);
        sh->bus_factor = 2.0 * (n_d - 1.0) / n_d;
        break;
    case MODEL_COLL_ALLGATHER:
    case MODEL_COLL_REDUCESCATTER:
        sh->steps = n_d - 1.0;
        sh->net_steps = (double)(nodes - 1);
        sh->bus_factor = (n_d - 1.0) / n_d;
        break;
    default: /* broadcast, reduce: pipelined chain, the whole buffer crosses every link; p2p */
        sh->steps = n_d - 1.0;
        sh->net_steps = (double)(nodes - 1);
        sh->bus_factor = 1.0;
        break;
    }
}

static void shape_init(shape_t *sh, const model_system_t *sys, model_coll_op_t op, int64_t n, int64_t t) {
    const int64_t nodes = n / t;
    const int64_t rails = (sys->nic_factor > 0 ? sys->nic_factor : 1) * t;
    double rail_gb_per_s = sys->ib_gb_per_s * sys->ib_eff;
    if (rails == 1 && op != MODEL_COLL_P2P) /* a ring effect; one transfer has one step */
        rail_gb_per_s *= SINGLE_RAIL_EFF;

    shape_steps(sh, op, n, nodes);
    sh->nodes = (double)nodes;
    sh->per_domain = (double)t;
    sh->rail_gb_per_s = rail_gb_per_s;
    sh->nvlink_gb_per_s = sys->nvlink_gb_per_s * sys->nvlink_eff;
    if (nodes == 1)
        sh->bw_gb_per_s = sh->nvlink_gb_per_s;
    else if (t == 1)
        sh->bw_gb_per_s = (double)rails * rail_gb_per_s;
    else
        sh->bw_gb_per_s = fmin(sh->nvlink_gb_per_s, (double)rails * rail_gb_per_s);
    sh->net_scale = sys->ib_latency_s / REF_IB_LATENCY_S;
    sh->nvl_scale = sys->nvlink_latency_s / REF_NVLINK_LATENCY_S;
}

/* A collective that leaves its NVLink domain pays one Simple network step up front (proxy
 * hand-off and the GPUDirect flush) whatever the protocol; measured floor about 35 us at 2 nodes. */
static double entry_s(const shape_t *sh) {
    return sh->nodes > 1.0 ? NET_SIMPLE_S * sh->net_scale : 0.0;
}

static double ring_ll_s(const shape_t *sh, double volume_gb) {
    const double net_step_s = (sh->per_domain == 1.0 ? NET_LL_ONE_PER_NODE_S : NET_LL_S) * sh->net_scale;
    const double bw_gb_per_s = LL_EFF * (sh->nodes > 1.0 ? sh->rail_gb_per_s : sh->bw_gb_per_s);
    const double lat_s =
        BASE_LL_S + (sh->steps - sh->net_steps) * NVL_LL_S * sh->nvl_scale + sh->net_steps * net_step_s;
    return entry_s(sh) + lat_s + sh->bus_factor * volume_gb / bw_gb_per_s;
}

static double ring_simple_s(const shape_t *sh, double volume_gb) {
    double nvl_step_s = NVL_SIMPLE_S * sh->nvl_scale;
    if (sh->nodes > 1.0)
        nvl_step_s = fmax(nvl_step_s, NET_SIMPLE_STEP_FLOOR_S * sh->net_scale);
    const double lat_s = BASE_SIMPLE_S + (sh->steps - sh->net_steps) * nvl_step_s +
                         sh->net_steps * NET_SIMPLE_S * sh->net_scale;
    return entry_s(sh) + lat_s + sh->bus_factor * volume_gb / sh->bw_gb_per_s;
}

/* Double binary tree across domains, chain inside: 2 log2(nodes) network levels and 2 (t-1) NVLink
 * hops, each forwarding one chunk before the pipeline fills; then 2V at the tree bus bandwidth. */
static double tree_s(const shape_t *sh, double volume_gb) {
    const double chunk_gb = fmin(0.5 * volume_gb, TREE_CHUNK_GB);
    const double nvl_hop_s = NVL_SIMPLE_S * sh->nvl_scale + chunk_gb / sh->nvlink_gb_per_s;
    const double net_hop_s = NET_SIMPLE_S * sh->net_scale + chunk_gb / sh->rail_gb_per_s;
    const double fill_s = 2.0 * ((sh->per_domain - 1.0) * nvl_hop_s + log2(sh->nodes) * net_hop_s);
    return entry_s(sh) + BASE_SIMPLE_S + fill_s + 2.0 * volume_gb / (TREE_EFF * sh->bw_gb_per_s);
}

/* Alltoall (NCCL's grouped send/recv, every pair at once): a rank sends (t - 1) / n of the buffer
 * over NVLink and (n - t) / n over its NICs at the same time, after one step of Simple's latency
 * (a network one if the group leaves its domain). */
static double alltoall_s(const model_system_t *sys, double volume_gb, int64_t n, int64_t t) {
    shape_t sh;
    shape_init(&sh, sys, MODEL_COLL_ALLTOALL, n, t);
    const double nics = (double)(sys->nic_factor > 0 ? sys->nic_factor : 1);
    const double intra_s = (double)(t - 1) / (double)n * volume_gb / sh.nvlink_gb_per_s;
    const double net_s = (double)(n - t) / (double)n * volume_gb / (nics * sys->ib_gb_per_s * sys->ib_eff);
    const double step_s = sh.nodes > 1.0 ? NET_SIMPLE_S * sh.net_scale : NVL_SIMPLE_S * sh.nvl_scale;
    return entry_s(&sh) + BASE_SIMPLE_S + step_s + fmax(intra_s, net_s);
}

double model_i_collective_corrected_s(const model_system_t *sys, model_coll_op_t op, double volume_gb,
                                      int64_t n, int64_t per_domain) {
    if (!(volume_gb > 0.0) || n <= 1 || op == MODEL_COLL_NONE)
        return 0.0;
    int64_t t = per_domain < 1 ? 1 : per_domain;
    if (t > n)
        t = n;
    if (op == MODEL_COLL_ALLTOALL)
        return alltoall_s(sys, volume_gb, n, t);
    if (op == MODEL_COLL_P2P) { /* one transfer: a two-rank "ring" of one step carrying everything */
        n = 2;
        t = t >= 2 ? 2 : 1;
    }
    shape_t sh;
    shape_init(&sh, sys, op, n, t);
    double time_s = fmin(ring_ll_s(&sh, volume_gb), ring_simple_s(&sh, volume_gb));
    if (op == MODEL_COLL_ALLREDUCE && sh.nodes > 1.0)
        time_s = fmin(time_s, tree_s(&sh, volume_gb));
    return time_s;
}
