/* closed_form.c - alpha-beta times of every collective decomposition on an idle network
 * (docs/engine.md, "Collectives as flows" and "Closed-form tests"), NCCL's double binary tree shape, and the
 * `auto` choice.
 *
 * Each formula is the exact idle-network time of the decomposition coll_algos.c simulates (so the
 * property tests can hold the simulator to 0.1%): alpha is one step's latency, beta = 1 / bandwidth
 * of a step's slowest link, n ranks, M = size_bytes (docs/engine.md has the derivations).
 *   ring   AR 2(n-1)(a + M/n b)      RS, AG (n-1)(a + M/n b)
 *   hd     AR 2 log2(n) a + 2 (n-1)/n M b      RS, AG log2(n) a + (n-1)/n M b
 *   chain  (n - 1)(a + c b) + (k - 1) c b + floor((k - 1) / W) max(0, a - (W - 1) c b), k = ceil(M /
 *          chunk) chunks of c = M / k, W chunks in flight per edge (W = 1: (n + k - 2)(a + c b)).
 *          Chunk i starts its latency on edge 0 when chunk i - W has crossed it, and its transfer a
 *          after that or when chunk i - 1's ends, whichever is later: S_i = a + i c b + floor(i / W)
 *          max(0, a - (W - 1) c b) (a window of W chunks costs a + c b or W c b); every later edge
 *          repeats edge 0's schedule a + c b later
 *   tree   2D (a + 2 c b) + (k - 1) L c b, both trees carry M/2 in k chunks of c = M / (2k); D the
 *          depth and L the per-rank link load of the two trees (sim_dbtree_shape): chunk 0 of both
 *          trees crosses 2D edges, sharing links two by two; the others follow bandwidth-bound, their
 *          latencies hidden (NCCL keeps 8 chunks in flight per connection); L = 4 gives 2 M b for
 *          large M
 *   hier   ring phases: AR = RS(M, g, intra) + AR(M/g, n/g, inter) + AG(M, g, intra), etc.
 *   with k channels, ring and hier take M/k, beta being what one channel gets on its narrowest link
 *   direct a + M b
 *   nvls   one coflow through the switch, a + (M / n) max(u_up / B_up, u_down / B_down), B_up and
 *          B_down the narrowest GPU -> switch and switch -> GPU links: AR u_up = u_down = n + 1 (each
 *          GPU sends its whole buffer into the switch's reduction and one reduced shard to its
 *          multicast, and receives one reduced shard and every multicast shard), AG u_up = 1, u_down =
 *          n, RS u_up = n, u_down = 1
 *   collnet (allreduce, g members in each of N domains) max((g - 1)(a' + 2 (M / g) b'), a + (M / g) b), a'
 *          b' inside the domains: the domains' ring RS and AG of M (sharing their links) run at once
 *          with every rail's N members all-reducing M / g in the network's switches (one coflow over
 *          the union of the routes to and from the rail's first member, each link once), as NCCL
 *          pipelines them; the pipeline's fill is not charged */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "sim_internal.h"

static const char *const op_names[SIM_COLL_OP_COUNT] = {
    "allreduce", "allgather", "reducescatter", "broadcast", "reduce", "sendrecv", "alltoall"};
static const char *const algo_names[SIM_COLL_ALGO_COUNT] = {
    "auto", "ring", "tree", "hierarchical", "halving-doubling", "chain", "direct", "nvls", "collnet"};

const char *sim_coll_op_name(sim_coll_op_t op) {
    return (unsigned)op < SIM_COLL_OP_COUNT ? op_names[op] : "unknown";
}

const char *sim_coll_algo_name(sim_coll_algo_t algo) {
    return (unsigned)algo < SIM_COLL_ALGO_COUNT ? algo_names[algo] : "unknown";
}

int sim_coll_op_parse(const char *name, sim_coll_op_t *out) {
    for (int i = 0; i < SIM_COLL_OP_COUNT; i++)
        if (name && strcmp(name, op_names[i]) == 0) {
            *out = (sim_coll_op_t)i;
            return SIM_OK;
        }
    return SIM_EINVAL;
}

int sim_coll_algo_parse(const char *name, sim_coll_algo_t *out) {
    for (int i = 0; i < SIM_COLL_ALGO_COUNT; i++)
        if (name && strcmp(name, algo_names[i]) == 0) {
            *out = (sim_coll_algo_t)i;
            return SIM_OK;
        }
    return SIM_EINVAL;
}

/* NCCL's binary tree (src/graph/trees.c, ncclGetBtree): rank r's parent and children in an
 * in-order tree over 0..n-1 in which leaves and internal nodes alternate. */
static void btree(int32_t n, int32_t r, int32_t *up, int32_t *d0, int32_t *d1) {
    int32_t bit = 1;
    while (bit < n && !(bit & r))
        bit <<= 1;
    if (r == 0) {
        *up = -1;
        *d0 = -1;
        *d1 = n > 1 ? bit >> 1 : -1;
        return;
    }
    int32_t u = (r ^ bit) | (bit << 1);
    if (u >= n)
        u = r ^ bit;
    *up = u;
    int32_t low = bit >> 1;
    *d0 = low == 0 ? -1 : r - low;
    int32_t down1 = low == 0 ? -1 : r + low;
    while (down1 >= n) {
        low >>= 1;
        down1 = low == 0 ? -1 : r + low;
    }
    *d1 = down1;
}

/* Both trees (ncclGetDtree): tree 1 mirrors tree 0 for even n and shifts it by one for odd n.
 * parent[t * n + r]; child[(t * n + r) * 2 + i], -1 where absent. Return 0. */
int sim_i_dbtree_build(int32_t n, int32_t *parent, int32_t *child) {
    for (int32_t r = 0; r < n; r++) {
        int32_t u, d0, d1;
        btree(n, r, &u, &d0, &d1);
        parent[r] = u;
        child[2 * r] = d0;
        child[2 * r + 1] = d1;
        const int32_t s = n % 2 ? (r - 1 + n) % n : n - 1 - r; /* rank r plays s in tree 0 */
        btree(n, s, &u, &d0, &d1);
#define MAP(x) ((x) < 0 ? -1 : (n % 2 ? ((x) + 1) % n : n - 1 - (x)))
        parent[n + r] = MAP(u);
        child[2 * (n + r)] = MAP(d0);
        child[2 * (n + r) + 1] = MAP(d1);
#undef MAP
    }
    return 0;
}

void sim_dbtree_shape(int32_t n, int32_t *depth, int32_t *load) {
    *depth = 0;
    *load = 0;
    if (n < 2)
        return;
    int32_t *parent = alloc_malloc((size_t)n * 2 * sizeof *parent);
    int32_t *child = alloc_malloc((size_t)n * 4 * sizeof *child);
    if (!parent || !child) {
        free(parent);
        free(child);
        *depth = *load = -1;
        return;
    }
    sim_i_dbtree_build(n, parent, child);
    for (int32_t r = 0; r < n; r++) {
        int32_t l = 0;
        for (int t = 0; t < 2; t++) {
            int32_t d = 0;
            for (int32_t v = r; parent[t * n + v] >= 0 && d <= n; v = parent[t * n + v])
                d++;
            if (d > *depth)
                *depth = d;
            l += (parent[t * n + r] >= 0) + (child[2 * (t * n + r)] >= 0) + (child[2 * (t * n + r) + 1] >= 0);
        }
        if (l > *load)
            *load = l;
    }
    free(parent);
    free(child);
}

static int is_pow2(int32_t n) {
    return n > 0 && (n & (n - 1)) == 0;
}

static double ring_s(sim_coll_op_t op, double m, int32_t n, double a, double bw) {
    if (n < 2)
        return 0.0;
    const double steps = (op == SIM_COLL_ALLREDUCE ? 2.0 : 1.0) * (n - 1);
    return steps * (a + m / n / bw);
}

/* At least 1; saturates at INT64_MAX (the cast only after the range check). */
static int64_t chunks(double bytes, double chunk) {
    const double k = ceil(bytes / chunk);
    int64_t r;
    if (checked_double_to_i64(k, &r))
        return INT64_MAX;
    return r < 1 ? 1 : r;
}

static double hier_s(sim_coll_op_t op, double m, int32_t n, const sim_ab_params_t *p) {
    const int32_t g = p->per_domain, nd = n / g;
    const double ia = p->intra_alpha_s, ib = p->intra_bytes_per_s, a = p->alpha_s, b = p->bytes_per_s;
    switch (op) {
    case SIM_COLL_ALLREDUCE:
        return ring_s(SIM_COLL_REDUCESCATTER, m, g, ia, ib) + ring_s(SIM_COLL_ALLREDUCE, m / g, nd, a, b) +
               ring_s(SIM_COLL_ALLGATHER, m, g, ia, ib);
    case SIM_COLL_REDUCESCATTER:
        return ring_s(op, m, g, ia, ib) + ring_s(op, m / g, nd, a, b);
    case SIM_COLL_ALLGATHER:
        return ring_s(op, m / g, nd, a, b) + ring_s(op, m, g, ia, ib);
    default:
        return -1.0;
    }
}

static double hd_s(sim_coll_op_t op, double m, int32_t n, double a, double bw) {
    const double lg = log2((double)n), bwt = (double)(n - 1) / n * m / bw;
    switch (op) {
    case SIM_COLL_ALLREDUCE:
        return 2.0 * (lg * a + bwt);
    case SIM_COLL_ALLGATHER:
    case SIM_COLL_REDUCESCATTER:
        return lg * a + bwt;
    default:
        return -1.0;
    }
}

static double form_s(sim_coll_op_t op, sim_coll_algo_t algo, double m, int32_t n, const sim_ab_params_t *p);

int sim_i_nvls_uses(sim_coll_op_t op, int32_t n, double *up, double *down) {
    switch (op) {
    case SIM_COLL_ALLREDUCE:
        *up = *down = n + 1.0;
        return 1;
    case SIM_COLL_ALLGATHER:
        *up = 1.0;
        *down = n;
        return 1;
    case SIM_COLL_REDUCESCATTER:
        *up = n;
        *down = 1.0;
        return 1;
    default:
        return 0;
    }
}

double sim_closed_form_s(sim_coll_op_t op, sim_coll_algo_t algo, double m, int32_t n,
                         const sim_ab_params_t *p) {
    if (n < 1 || !(m >= 0.0))
        return -1.0;
    if (n == 1 || m == 0.0)
        return 0.0;
    const double t = form_s(op, algo, m, n, p);
    return t >= 0.0 ? t + p->launch_s : t;
}

/* Hierarchical alltoall over n / g domains of g members: each member hands each of its g - 1 domain
 * peers M / g (what goes to that peer's rail, its own share included) over NVLink, then each
 * exchanges M / N with its N - 1 rail peers; intra_* for the first stage, alpha / bytes_per_s for
 * the second, both per member (a member's pair bandwidth times its pairs). */
static double a2a_hier_s(double m, int32_t n, const sim_ab_params_t *p) {
    const int32_t g = p->per_domain, nd = n / g;
    return (g > 1 ? p->intra_alpha_s + (g - 1.0) / g * m / p->intra_bytes_per_s : 0.0) +
           (nd > 1 ? p->alpha_s + (nd - 1.0) / nd * m / p->bytes_per_s : 0.0);
}

/* The forms without the launch latency (n >= 2, m > 0). */
static double form_s(sim_coll_op_t op, sim_coll_algo_t algo, double m, int32_t n, const sim_ab_params_t *p) {
    const double a = p->alpha_s, b = p->bytes_per_s;
    const int32_t ch = p->channels > 0 ? p->channels : 1; /* channels run at once, each on m / ch */
    switch (algo) {
    case SIM_ALGO_RING:
        if (op == SIM_COLL_BROADCAST || op == SIM_COLL_REDUCE)
            return form_s(op, SIM_ALGO_CHAIN, m, n, p);
        return op <= SIM_COLL_REDUCESCATTER ? ring_s(op, m / ch, n, a, b) : -1.0;
    case SIM_ALGO_HALVING_DOUBLING:
        return is_pow2(n) ? hd_s(op, m, n, a, b) : -1.0;
    case SIM_ALGO_HIERARCHICAL:
        if (op == SIM_COLL_ALLTOALL)
            return p->per_domain >= 1 && n % p->per_domain == 0 ? a2a_hier_s(m, n, p) : -1.0;
        return p->per_domain >= 1 && n % p->per_domain == 0 ? hier_s(op, m / ch, n, p) : -1.0;
    case SIM_ALGO_CHAIN: {
        if (op != SIM_COLL_BROADCAST && op != SIM_COLL_REDUCE)
            return -1.0;
        const int64_t k = chunks(m, p->chunk_bytes),
                      w = p->chain_window > 0 ? p->chain_window : SIM_NCCL_STEPS;
        const double t = m / (double)k / b; /* one chunk's transfer, c beta */
        return (double)(n - 1) * (a + t) + (double)(k - 1) * t +
               (double)((k - 1) / w) * fmax(0.0, a - (w - 1) * t);
    }
    case SIM_ALGO_TREE: {
        if (op != SIM_COLL_ALLREDUCE)
            return -1.0;
        int32_t depth, load;
        sim_dbtree_shape(n, &depth, &load);
        const int64_t k = chunks(m / 2.0, p->chunk_bytes);
        const double c = m / 2.0 / (double)k;
        return 2.0 * depth * (a + 2.0 * c / b) + (double)(k - 1) * load * c / b;
    }
    case SIM_ALGO_DIRECT:
        if (op == SIM_COLL_ALLTOALL) /* every member sends (n - 1) / n of its buffer at once */
            return a + (n - 1.0) / n * m / b;
        return op == SIM_COLL_SENDRECV ? a + m / b : -1.0;
    case SIM_ALGO_NVLS: {
        /* bytes_per_s: the narrowest switch -> GPU link; intra_bytes_per_s: GPU -> switch */
        double up, down;
        if (!sim_i_nvls_uses(op, n, &up, &down))
            return -1.0;
        return a + m / n * fmax(up / p->intra_bytes_per_s, down / b);
    }
    case SIM_ALGO_COLLNET: { /* intra alpha/bandwidth for the rings, alpha/bandwidth for the switches */
        const int32_t g = p->per_domain;
        if (op != SIM_COLL_ALLREDUCE || g < 1 || n % g || n == g)
            return -1.0;
        /* the domains' reduce-scatter and allgather share their links, concurrent with the switches */
        const double intra =
            g > 1 ? (g - 1.0) * (p->intra_alpha_s + 2.0 * m / g / p->intra_bytes_per_s) : 0.0;
        return fmax(intra, a + m / g / b);
    }
    case SIM_ALGO_AUTO:
        return form_s(op, sim_coll_algo_choose(op, m, n, p), m, n, p);
    }
    return -1.0;
}

/* NCCL's tuner (src/graph/tuning.cc) predicts each enabled (algorithm, protocol) pair's time from
 * its latency and bandwidth model and takes the minimum. We do the same over the decompositions we
 * simulate, with their closed forms as the model: allreduce weighs the ring (or, across several
 * multi-GPU domains, the hierarchical ring that stands for NCCL's rail-aligned multi-channel ring)
 * against the double binary tree; allgather and reducescatter use the ring; broadcast and reduce
 * the pipelined chain (NCCL's ring broadcast); sendrecv one direct flow. Halving-doubling is never
 * chosen: NCCL does not implement it. Ties go to the ring. */
sim_coll_algo_t sim_coll_algo_choose(sim_coll_op_t op, double m, int32_t n, const sim_ab_params_t *p) {
    switch (op) {
    case SIM_COLL_SENDRECV:
        return SIM_ALGO_DIRECT;
    case SIM_COLL_ALLTOALL: {
        const int32_t g = p->per_domain;
        if (!(g > 1 && n > g && n % g == 0))
            return SIM_ALGO_DIRECT;
        const double t_hier = sim_closed_form_s(op, SIM_ALGO_HIERARCHICAL, m, n, p);
        return t_hier >= 0.0 && t_hier < sim_closed_form_s(op, SIM_ALGO_DIRECT, m, n, p)
                   ? SIM_ALGO_HIERARCHICAL
                   : SIM_ALGO_DIRECT;
    }
    case SIM_COLL_BROADCAST:
    case SIM_COLL_REDUCE:
        return SIM_ALGO_CHAIN;
    default:
        break;
    }
    const int32_t g = p->per_domain;
    const int multi = g > 1 && n > g && n % g == 0;
    const sim_coll_algo_t ring = multi ? SIM_ALGO_HIERARCHICAL : SIM_ALGO_RING;
    if (op != SIM_COLL_ALLREDUCE || n <= 2)
        return ring;
    const double t_ring = sim_closed_form_s(op, ring, m, n, p);
    const double t_tree = sim_closed_form_s(op, SIM_ALGO_TREE, m, n, p);
    return t_tree >= 0.0 && t_tree < t_ring ? SIM_ALGO_TREE : ring;
}
