/* coll.c - collective instances: validation, the algorithm choice, the plan (which (src, dst)
 * pairs, their routes, which phases), the barrier start, analytic timing, and the results.
 *
 * Routes are looked up once, when the collective is added, and kept per pair, so the run never
 * calls the route function, except with adaptive routing: then these are the plan's (idle-network)
 * routes and coll_algos.c routes every flow again when it starts. The phases' state machines are in
 * coll_algos.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "sim_internal.h"

/* Free a plan's arrays. */
static void plan_destroy(sim_coll_t *c) {
    free(c->gpus);
    free(c->pairs);
    free(c->routes);
    free(c->tree_parent);
    free(c->tree_child);
    memset(c, 0, sizeof *c);
}

/* ---- run-time state: a pool of blocks by size class ------------------------------------------- */

/* Bytes of a collective's run-time state: st, mask, the tree's last arrivals, the chain's ready
 * times (8-byte aligned, in that order). */
static size_t scratch_bytes(const sim_coll_t *c, int64_t *n_ints, int64_t *n_masks) {
    sim_i_phase_state_size(c, n_ints, n_masks);
    const int64_t ints = (*n_ints + 2) / 2 * 2; /* keep the masks 8-byte aligned */
    int64_t words = ints / 2 + *n_masks + 1;
    if (c->algo == SIM_ALGO_TREE)
        words += 4 * (int64_t)c->n;
    if (c->algo == SIM_ALGO_CHAIN && c->n > 1)
        words += (int64_t)(c->n - 1) * c->chain_slots;
    return (size_t)words * 8;
}

/* Take the run-time state of collective c from the pool (SIM_OK or SIM_ENOMEM). */
static int scratch_take(sim_engine_t *e, sim_coll_t *c) {
    int64_t ni = 0, nm = 0;
    const size_t bytes = scratch_bytes(c, &ni, &nm);
    int32_t k = 6;
    while (((size_t)1 << k) < bytes)
        k++;
    if (k >= 48)
        return SIM_ENOMEM;
    void *b = e->scratch_free[k];
    if (b)
        memcpy(&e->scratch_free[k], b, sizeof b);
    else if (!(b = alloc_malloc((size_t)1 << k)))
        return SIM_ENOMEM;
    c->scratch = b;
    c->scratch_class = k;
    c->st = b;
    c->mask = (uint64_t *)((char *)b + (size_t)(ni + 2) / 2 * 8);
    sim_time_ps_t *rest = (sim_time_ps_t *)(c->mask + nm + 1);
    c->tree_last = c->algo == SIM_ALGO_TREE ? rest : NULL;
    c->chain_ready = c->algo == SIM_ALGO_CHAIN ? rest : NULL;
    return SIM_OK;
}

static void scratch_give(sim_engine_t *e, sim_coll_t *c) {
    if (!c->scratch)
        return;
    memcpy(c->scratch, &e->scratch_free[c->scratch_class], sizeof(void *));
    e->scratch_free[c->scratch_class] = c->scratch;
    c->scratch = NULL;
    c->st = NULL;
    c->mask = NULL;
    c->tree_last = c->chain_ready = NULL;
}

void sim_i_coll_free_all(sim_engine_t *e) {
    for (int32_t i = 0; i < e->n_colls; i++)
        if (e->colls[i].live) {
            free(e->colls[i].live->scratch);
            free(e->colls[i].live);
        }
    free(e->colls);
    e->colls = NULL;
    e->n_colls = e->cap_colls = 0;
    for (int32_t i = 0; i < e->n_plans; i++)
        plan_destroy(&e->plans[i]);
    free(e->plans);
    e->plans = NULL;
    e->n_plans = e->cap_plans = 0;
    while (e->live_free) {
        sim_coll_t *c = e->live_free;
        e->live_free = c->next_free;
        free(c);
    }
    for (int k = 0; k < 48; k++)
        while (e->scratch_free[k]) {
            void *b = e->scratch_free[k];
            memcpy(&e->scratch_free[k], b, sizeof b);
            free(b);
        }
    free(e->plan_tab);
    e->plan_tab = NULL;
    e->plan_cap = e->plan_n = 0;
}

static int is_pow2(int32_t n) {
    return n > 0 && (n & (n - 1)) == 0;
}

/* Chunks of a phase: at least 1; -1 past INT32_MAX (a phase counts its steps in int32_t), checked
 * in double before any cast. */
static int64_t n_chunks(double bytes, double chunk) {
    const double k = ceil(bytes / chunk);
    if (!(k <= (double)INT32_MAX))
        return -1;
    return k < 1.0 ? 1 : (int64_t)k;
}

static int too_many_chunks(sim_engine_t *e, const sim_coll_t *c) {
    return sim_i_fail(e, SIM_EINVAL,
                      "collective: size_bytes %g in chunks of %g bytes makes more than %d steps",
                      c->size_bytes, c->chunk, INT32_MAX);
}

/* ---- pairs and routes --------------------------------------------------------------------------- */

static int pairs_alloc(sim_engine_t *e, sim_coll_t *c, int32_t n_pairs) {
    free(c->pairs);
    free(c->routes);
    c->routes = NULL;
    c->pairs = alloc_calloc((size_t)n_pairs, sizeof *c->pairs);
    c->n_pairs = n_pairs;
    if (!c->pairs)
        return sim_i_fail(e, SIM_ENOMEM, "collective: out of memory for %d pairs", n_pairs);
    for (int32_t i = 0; i < n_pairs; i++)
        c->pairs[i].src = c->pairs[i].dst = -1;
    return SIM_OK;
}

/* A rank paired with itself (a ring of one) moves nothing: the pair stays unused (src -1). */
static void pair_set(sim_coll_t *c, int32_t i, int32_t src_rank, int32_t dst_rank) {
    if (src_rank == dst_rank)
        return;
    c->pairs[i].src = c->gpus[src_rank];
    c->pairs[i].dst = c->gpus[dst_rank];
}

/* Look every used pair's route up and record its latency, whether it leaves its domain, and its
 * narrowest link. */
static int pairs_route(sim_engine_t *e, sim_coll_t *c) {
    int64_t used = 0, cap = 0;
    const sim_time_ps_t overhead = sim_s_to_ps(e->cfg.step_overhead_s);
    for (int32_t i = 0; i < c->n_pairs; i++) {
        sim_pair_t *p = &c->pairs[i];
        if (p->src < 0)
            continue;
        int32_t buf[SIM_ROUTE_MAX];
        const int len = e->route(e->route_ctx, p->src, p->dst, buf, SIM_ROUTE_MAX);
        if (len < 1 || len > SIM_ROUTE_MAX)
            return sim_i_fail(e, SIM_EINVAL, "collective: no route from gpu %d to gpu %d", p->src, p->dst);
        if (sim_i_grow((void **)&c->routes, &cap, used + len, sizeof *c->routes))
            return sim_i_fail(e, SIM_ENOMEM, "collective: out of memory for routes");
        p->route_off = (int32_t)used;
        p->route_len = len;
        p->lat_ps = overhead;
        p->net = p->src / e->gpus_per_domain != p->dst / e->gpus_per_domain;
        p->min_cap = INFINITY;
        for (int j = 0; j < len; j++) {
            if (buf[j] < 0 || buf[j] >= e->net.n_links)
                return sim_i_fail(e, SIM_EINVAL, "collective: route %d -> %d has link %d, not in 0..%d",
                                  p->src, p->dst, buf[j], e->net.n_links - 1);
            for (int k = 0; k < j; k++)
                if (buf[k] == buf[j])
                    return sim_i_fail(e, SIM_EINVAL, "collective: route %d -> %d repeats link %d", p->src,
                                      p->dst, buf[j]);
            c->routes[used + j] = buf[j];
            p->lat_ps = sim_i_add_ps(p->lat_ps, e->net.links[buf[j]].lat_ps);
            p->min_cap = fmin(p->min_cap, e->net.links[buf[j]].cap);
        }
        p->base_lat_ps = p->lat_ps;
        used += len;
    }
    return SIM_OK;
}

/* ---- protocols ---------------------------------------------------------------------------------- */

/* 1 for the tree's constants, 0 for every ring-like algorithm. */
static int proto_class(const sim_coll_t *c) {
    return c->algo == SIM_ALGO_TREE;
}

/* The protocol's latency of one step over pair p. A ring with one member per domain pays the tree's
 * network step (NCCL: "with ppn = 1 latencies are fully exposed"); NVLink steps of a ring that
 * crosses domains pay at least the proxy's overhead. */
static double step_s(const sim_coll_t *c, const sim_pair_t *p, const sim_proto_params_t *pp) {
    const int a = proto_class(c);
    if (c->op == SIM_COLL_ALLTOALL) /* send/recv pairs: the ring's step over their own link */
        return p->net ? pp->net_step_s[0] : pp->nvlink_step_s[0];
    if (p->net)
        return pp->net_step_s[a == 0 && c->per_domain == 1 ? 1 : a];
    const double s = pp->nvlink_step_s[a];
    return a == 0 && c->crossing ? fmax(s, pp->crossing_nvlink_step_min_s) : s;
}

/* Every used pair's step latency under c->proto; with mean ring latencies, each ring of a ring phase
 * then pays the mean of its pairs' latencies at every step. */
static void set_latencies(const sim_engine_t *e, sim_coll_t *c) {
    const sim_proto_params_t *pp = &e->cfg.proto[c->proto];
    for (int32_t i = 0; i < c->n_pairs; i++) {
        sim_pair_t *p = &c->pairs[i];
        if (p->src >= 0)
            p->lat_ps = c->algo == SIM_ALGO_COLLNET && i >= c->n /* the switches' aggregation */
                            ? p->base_lat_ps
                            : p->base_lat_ps + sim_s_to_ps(c->algo == SIM_ALGO_NVLS ? e->cfg.nvls_step_s
                                                                                    : step_s(c, p, pp));
    }
    if (e->cfg.ring_latency != SIM_RING_LATENCY_MEAN)
        return;
    for (int32_t k = 0; k < c->n_phases; k++) {
        const sim_phase_t *ph = &c->phases[k];
        for (int32_t j = 0; ph->kind == SIM_PH_RING && j < ph->n_rings; j++) {
            sim_pair_t *ring = &c->pairs[ph->pair0 + j * ph->ring_len];
            int64_t sum = 0, used = 0;
            for (int32_t i = 0; i < ph->ring_len; i++)
                if (ring[i].src >= 0) {
                    sum += ring[i].lat_ps;
                    used++;
                }
            for (int32_t i = 0; used > 0 && i < ph->ring_len; i++)
                if (ring[i].src >= 0)
                    ring[i].lat_ps = (sum + used / 2) / used;
        }
    }
}

/* Wire factor, rate cap and launch latency of c->proto; the tree's and chain's chunk. */
static void set_costs(const sim_engine_t *e, sim_coll_t *c) {
    const sim_proto_params_t *pp = &e->cfg.proto[c->proto];
    const int a = proto_class(c);
    double eff = pp->efficiency[a];
    if (c->algo == SIM_ALGO_COLLNET) { /* Simple's rings inside domains; NCCL's baseLat 0, no cap */
        c->wire = 1.0 / eff;
        c->bound = INFINITY;
        c->launch_ps = 0;
        return;
    }
    if (c->crossing && c->per_domain == 1 && c->algo != SIM_ALGO_DIRECT &&
        c->op != SIM_COLL_ALLTOALL) /* collectives, not messages */
        eff *= e->cfg.single_member_efficiency;
    if (c->algo == SIM_ALGO_NVLS) { /* NCCL: nvlsEfficiency, no launch latency (baseLat 0), no cap */
        c->wire = 1.0 / (eff * e->cfg.nvls_efficiency);
        c->bound = INFINITY;
        c->launch_ps = 0;
        return;
    }
    c->wire = 1.0 / eff;
    const double cap = pp->max_busbw_bytes_per_s[c->crossing ? 1 : 0];
    c->bound = a == 0 && cap > 0.0 ? cap / c->channels * c->wire : INFINITY;
    c->launch_ps = sim_s_to_ps(pp->launch_s[a]);
}

static int cmp_i32(const void *a, const void *b) {
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* How many of the sorted link ids equal `link`. */
static int32_t count_of(const int32_t *sorted, int64_t n, int32_t link) {
    int64_t lo = 0, hi = n;
    while (lo < hi) { /* first index >= link */
        const int64_t mid = (lo + hi) / 2;
        if (sorted[mid] < link)
            lo = mid + 1;
        else
            hi = mid;
    }
    int32_t k = 0;
    while (lo + k < n && sorted[lo + k] == link)
        k++;
    return k;
}

/* Slowest latency and narrowest bandwidth over pairs [lo, hi). With `shared`, the pairs run at
 * once (every ring of a ring phase, every channel), so a link carried by c of them gives each
 * capacity / c: the bandwidth one ring gets on its narrowest link of an idle network. */
static int pairs_ab(const sim_engine_t *e, const sim_coll_t *c, int32_t lo, int32_t hi, int shared,
                    double *alpha_s, double *bytes_per_s) {
    /* shared: how many of the pairs cross each link, from their sorted links (few pairs) or a count
     * per link of the network (many: an alltoall's n (n - 1) pairs share each link n - 1 times) */
    int64_t n_links = 0;
    int32_t *links = NULL, *uses = NULL;
    for (int32_t i = lo; shared && i < hi; i++)
        n_links += c->pairs[i].src < 0 ? 0 : c->pairs[i].route_len;
    const int by_link = n_links > 4096;
    if (shared) {
        if (by_link)
            uses = alloc_calloc((size_t)(e->net.n_links > 0 ? e->net.n_links : 1), sizeof *uses);
        else
            links = alloc_malloc((size_t)(n_links > 0 ? n_links : 1) * sizeof *links);
        if (!uses && !links)
            return SIM_ENOMEM;
        n_links = 0;
        for (int32_t i = lo; i < hi; i++)
            for (int32_t j = 0; c->pairs[i].src >= 0 && j < c->pairs[i].route_len; j++) {
                const int32_t l = c->routes[c->pairs[i].route_off + j];
                if (by_link)
                    uses[l]++;
                else
                    links[n_links++] = l;
            }
        if (!by_link)
            qsort(links, (size_t)n_links, sizeof *links, cmp_i32);
    }
    sim_time_ps_t lat = 0;
    double bw = INFINITY;
    for (int32_t i = lo; i < hi; i++) {
        const sim_pair_t *p = &c->pairs[i];
        if (p->src < 0)
            continue;
        lat = p->lat_ps > lat ? p->lat_ps : lat;
        if (!shared)
            bw = fmin(bw, p->min_cap);
        for (int32_t j = 0; shared && j < p->route_len; j++) {
            const int32_t l = c->routes[p->route_off + j];
            bw = fmin(bw, e->net.links[l].cap / (by_link ? uses[l] : count_of(links, n_links, l)));
        }
    }
    free(links);
    free(uses);
    *alpha_s = sim_ps_to_s(lat);
    *bytes_per_s = isfinite(bw) ? bw : 1.0;
    return SIM_OK;
}

/* The c-th ring order of a ring of len members, as a stride: 1, len-1, 2, len-2, ..., keeping
 * strides coprime with len (each gives a ring through every member), cycling when channels
 * outnumber them. Different strides use different links on a mesh; on a switch they share. */
static int32_t channel_stride(int32_t len, int32_t channel) {
    int32_t strides[64], n = 0;
    for (int32_t i = 1; i < len && n < 64; i++) {
        const int32_t s = i % 2 ? (i + 1) / 2 : len - i / 2;
        int32_t a = s, b = len;
        while (b) {
            const int32_t t = a % b;
            a = b;
            b = t;
        }
        int dup = 0;
        for (int32_t j = 0; j < n; j++)
            dup |= strides[j] == s;
        if (a == 1 && !dup)
            strides[n++] = s;
    }
    return n ? strides[channel % n] : 1;
}

/* The c-th Hamiltonian cycle of n <= 5 members from member 0: the permutations of 1..n-1 in
 * lexicographic order, each followed by its reverse (so channels 0 and 1 are strides 1 and n-1, as
 * channel_stride gives), cycling. On a mesh of n GPUs the (n-1)! cycles use every directed link
 * equally: channels on all of them reach the whole mesh, which strides do not (4 GPUs: 8 of 12). */
static void ring_cycle(int32_t n, int32_t channel, int32_t *perm) {
    int32_t all[24][4], count = 0, out[24], n_out = 0, used[24] = {0};
    int32_t a[4] = {1, 2, 3, 4};
    for (;;) { /* lexicographic permutations of a[0..n-2] */
        memcpy(all[count++], a, sizeof a);
        int32_t i = n - 3;
        while (i >= 0 && a[i] > a[i + 1])
            i--;
        if (i < 0)
            break;
        int32_t j = n - 2;
        while (a[j] < a[i])
            j--;
        int32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
        for (int32_t l = i + 1, r = n - 2; l < r; l++, r--) {
            t = a[l];
            a[l] = a[r];
            a[r] = t;
        }
    }
    for (int32_t q = 0; q < count; q++) {
        if (used[q])
            continue;
        used[q] = 1;
        out[n_out++] = q;
        for (int32_t r = 0; r < count; r++) { /* the reverse cycle 0, a[n-2], ..., a[0] */
            int same = !used[r];
            for (int32_t l = 0; same && l < n - 1; l++)
                same = all[r][l] == all[q][n - 2 - l];
            if (same) {
                used[r] = 1;
                out[n_out++] = r;
            }
        }
    }
    const int32_t *sel = all[out[channel % n_out]];
    perm[0] = 0;
    for (int32_t l = 0; l < n - 1; l++)
        perm[l + 1] = sel[l];
}

static int32_t factorial(int32_t n) {
    return n <= 1 ? 1 : n * factorial(n - 1);
}

static int32_t stride_count(int32_t len) {
    int32_t k = 1;
    while (k < 64 && channel_stride(len, k) != channel_stride(len, 0))
        k++;
    return k;
}

/* NCCL-like channel count when asked for SIM_CHANNELS_AUTO: a ring across g-member domains runs g
 * channels, one entering each domain at each member (every NIC sends and receives once); a ring
 * inside one domain runs every Hamiltonian cycle (n <= 5, so a mesh is used whole) or every coprime
 * stride; otherwise one. */
static int32_t auto_channels(const sim_coll_t *c, sim_coll_algo_t algo, int32_t g) {
    if (algo != SIM_ALGO_RING || g < 1)
        return 1;
    if (g > 1 && c->n > g)
        return g;
    if (g > 1 && c->n == g)
        return c->n <= 5 ? factorial(c->n - 1) : stride_count(c->n);
    return 1;
}

/* ---- plans -------------------------------------------------------------------------------------- */

static void add_ring_phase(sim_coll_t *c, int32_t n_rings, int32_t len, int32_t pair0, int32_t steps,
                           double chunk) {
    if (steps <= 0)
        return;
    c->phases[c->n_phases++] = (sim_phase_t){.kind = SIM_PH_RING,
                                             .steps = steps,
                                             .chunk_bytes = chunk,
                                             .n_rings = n_rings,
                                             .ring_len = len,
                                             .pair0 = pair0};
}

/* k channels: k rings over the same members in different orders, each moving size / k. One
 * channel keeps the members' order. Several channels across g-member domains (g > 1) visit the
 * domains in order; channel c enters domain d at its ((c - d) mod g)-th member and leaves from the
 * one before, which is the member the next domain enters at: every hop between domains stays on one
 * rail (NIC index), and over g channels every NIC of a domain sends once and receives once (NCCL's
 * rings on a rail-aligned fabric). Inside one domain of at most 5 members they take the Hamiltonian
 * cycles (ring_cycle); otherwise the coprime strides. */
static int plan_ring(sim_engine_t *e, sim_coll_t *c, const int32_t *order, int32_t g) {
    const int32_t n = c->n, k = c->channels;
    if (pairs_alloc(e, c, k * n))
        return SIM_ENOMEM;
    const int node_rings = k > 1 && g > 1 && n > g, cycles = k > 1 && g > 1 && n == g && n <= 5;
    int32_t *pos = alloc_malloc((size_t)n * sizeof *pos);
    if (!pos)
        return sim_i_fail(e, SIM_ENOMEM, "collective: out of memory");
    for (int32_t ch = 0; ch < k; ch++) {
        const int64_t s = channel_stride(n, ch);
        int32_t perm[5];
        if (cycles)
            ring_cycle(n, ch, perm);
        for (int32_t q = 0; q < n; q++)
            pos[q] = node_rings ? order[q / g * g + ((ch - q / g + q % g) % g + g) % g]
                     : cycles   ? order[perm[q]]
                                : (int32_t)(q * s % n);
        for (int32_t q = 0; q < n; q++)
            pair_set(c, ch * n + q, pos[q], pos[(q + 1) % n]);
    }
    free(pos);
    add_ring_phase(c, k, n, 0, (c->op == SIM_COLL_ALLREDUCE ? 2 : 1) * (n - 1), c->size_bytes / n / k);
    return SIM_OK;
}

static int cmp_i64(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Members grouped by domain in order of first appearance: order[d * g + l] is the l-th member of
 * the d-th domain. Return g (members per domain), 0 if domains hold different counts, -1 if out of
 * memory. O(n log n): sort (domain, index) keys, then the groups by their first index. */
static int32_t domain_order(const sim_engine_t *e, const sim_coll_t *c, int32_t *order) {
    const int32_t n = c->n, gpd = e->gpus_per_domain;
    int64_t *keys = alloc_malloc((size_t)n * sizeof *keys),
            *firsts = alloc_malloc((size_t)n * sizeof *firsts);
    int32_t g = -1;
    if (!keys || !firsts)
        goto out;
    for (int32_t i = 0; i < n; i++)
        keys[i] = ((int64_t)(c->gpus[i] / gpd) << 32) | i;
    qsort(keys, (size_t)n, sizeof *keys, cmp_i64);
    g = 1;
    while (g < n && keys[g] >> 32 == keys[0] >> 32)
        g++;
    const int32_t nd = n / g;
    for (int32_t i = 1; i < n && g > 0; i++) /* a new domain starts exactly at every multiple of g */
        if ((keys[i] >> 32 != keys[i - 1] >> 32) != (i % g == 0))
            g = 0;
    if (g > 0 && n % g)
        g = 0;
    if (g > 0) {
        for (int32_t d = 0; d < nd; d++) /* (first member index, group) */
            firsts[d] = ((keys[d * g] & 0xffffffff) << 32) | d;
        qsort(firsts, (size_t)nd, sizeof *firsts, cmp_i64);
        for (int32_t r = 0; r < nd; r++)
            for (int32_t l = 0; l < g; l++)
                order[r * g + l] = (int32_t)(keys[(firsts[r] & 0xffffffff) * g + l] & 0xffffffff);
    }
out:
    free(keys);
    free(firsts);
    return g;
}

/* Pairs [0, k n): intra-domain rings, channel ch, domain d, position l; pairs [k n, 2 k n): rail
 * rings, channel ch, rail l, position d. Every phase has k rings per domain or rail. */
static int plan_hier(sim_engine_t *e, sim_coll_t *c, const int32_t *order, int32_t g) {
    const int32_t n = c->n, nd = n / g, k = c->channels;
    const double m = c->size_bytes / k;
    if (pairs_alloc(e, c, 2 * k * n))
        return SIM_ENOMEM;
    for (int32_t ch = 0; ch < k; ch++) {
        const int64_t sg = channel_stride(g, ch), sn = channel_stride(nd, ch);
        for (int32_t d = 0; d < nd; d++)
            for (int32_t l = 0; l < g; l++) {
                pair_set(c, ch * n + d * g + l, order[d * g + (int32_t)(l * sg % g)],
                         order[d * g + (int32_t)((l + 1) * sg % g)]);
                pair_set(c, k * n + ch * n + l * nd + d, order[(int32_t)(d * sn % nd) * g + l],
                         order[(int32_t)((d + 1) * sn % nd) * g + l]);
            }
    }
    switch (c->op) {
    case SIM_COLL_ALLREDUCE:
        add_ring_phase(c, k * nd, g, 0, g - 1, m / g);
        add_ring_phase(c, k * g, nd, k * n, 2 * (nd - 1), m / g / nd);
        add_ring_phase(c, k * nd, g, 0, g - 1, m / g);
        break;
    case SIM_COLL_REDUCESCATTER:
        add_ring_phase(c, k * nd, g, 0, g - 1, m / g);
        add_ring_phase(c, k * g, nd, k * n, nd - 1, m / g / nd);
        break;
    default: /* allgather */
        add_ring_phase(c, k * g, nd, k * n, nd - 1, m / g / nd);
        add_ring_phase(c, k * nd, g, 0, g - 1, m / g);
        break;
    }
    return SIM_OK;
}

static void add_a2a_phase(sim_coll_t *c, int32_t n_pairs, int32_t pair0, double bytes) {
    if (n_pairs > 0)
        c->phases[c->n_phases++] = (sim_phase_t){
            .kind = SIM_PH_A2A, .steps = 1, .chunk_bytes = bytes, .n_rings = n_pairs, .pair0 = pair0};
}

/* Flat alltoall: pair r (n - 1) + k is member r -> member (r + 1 + k) mod n, each carrying M / n;
 * one phase, every pair at once (NCCL's alltoall is a group of n - 1 sends and receives per rank). */
static int plan_a2a_flat(sim_engine_t *e, sim_coll_t *c) {
    const int32_t n = c->n;
    if ((int64_t)n * (n - 1) > INT32_MAX)
        return sim_i_fail(e, SIM_EINVAL, "collective: alltoall on %d gpus has too many pairs", n);
    if (pairs_alloc(e, c, n * (n - 1)))
        return SIM_ENOMEM;
    for (int32_t r = 0; r < n; r++)
        for (int32_t k = 0; k < n - 1; k++)
            pair_set(c, r * (n - 1) + k, r, (r + 1 + k) % n);
    add_a2a_phase(c, n * (n - 1), 0, c->size_bytes / n);
    return SIM_OK;
}

/* Hierarchical alltoall over N = n / g domains of g members (order[d g + l] is domain d's l-th
 * member, its rail l). Stage 1, pairs [0, n (g - 1)): member (d, l) hands member (d, l') of its own
 * domain everything bound for rail l' (member (d', l') of every domain, its own share included):
 * N M / n = M / g. Stage 2, pairs [n (g - 1), n (g - 1) + n (N - 1)): member (d, l) sends member
 * (d', l) of each other domain what the g members of domain d gathered for it, g M / n = M / N, on
 * its own rail. The bytes that leave a domain are those of the flat algorithm, in g times fewer,
 * g times larger messages that never leave their rail. */
static int plan_a2a_hier(sim_engine_t *e, sim_coll_t *c, const int32_t *order, int32_t g) {
    const int32_t n = c->n, nd = n / g, p1 = n * (g - 1), p2 = n * (nd - 1);
    if (pairs_alloc(e, c, p1 + p2))
        return SIM_ENOMEM;
    for (int32_t d = 0; d < nd; d++)
        for (int32_t l = 0; l < g; l++) {
            for (int32_t k = 0; k < g - 1; k++)
                pair_set(c, (d * g + l) * (g - 1) + k, order[d * g + l], order[d * g + (l + 1 + k) % g]);
            for (int32_t k = 0; k < nd - 1; k++)
                pair_set(c, p1 + (d * g + l) * (nd - 1) + k, order[d * g + l],
                         order[(d + 1 + k) % nd * g + l]);
        }
    add_a2a_phase(c, p1, 0, c->size_bytes / g);
    add_a2a_phase(c, p2, p1, c->size_bytes / nd);
    return SIM_OK;
}

static int plan_hd(sim_engine_t *e, sim_coll_t *c) {
    const int32_t n = c->n;
    int32_t m = 0;
    while ((1 << m) < n)
        m++;
    if (pairs_alloc(e, c, m * n))
        return SIM_ENOMEM;
    for (int32_t j = 0; j < m; j++)
        for (int32_t r = 0; r < n; r++)
            pair_set(c, j * n + r, r, r ^ (1 << j));
    const int rs = c->op != SIM_COLL_ALLGATHER, ag = c->op != SIM_COLL_REDUCESCATTER;
    c->phases[c->n_phases++] = (sim_phase_t){.kind = SIM_PH_HD,
                                             .steps = (rs + ag) * m,
                                             .chunk_bytes = c->size_bytes,
                                             .hd_rs_steps = rs ? m : 0,
                                             .hd_ag_steps = ag ? m : 0};
    return SIM_OK;
}

static int plan_chain(sim_engine_t *e, sim_coll_t *c) {
    const int32_t n = c->n;
    if (pairs_alloc(e, c, n - 1))
        return SIM_ENOMEM;
    for (int32_t j = 0; j + 1 < n; j++) {
        const int32_t a = (c->root + j) % n, b = (c->root + j + 1) % n;
        if (c->op == SIM_COLL_BROADCAST)
            pair_set(c, j, a, b);
        else /* reduce: edge j carries data from the far end towards the root */
            pair_set(c, j, (c->root + n - 1 - j) % n, (c->root + n - 2 - j) % n);
    }
    c->chunk = e->cfg.chunk_bytes;
    const int32_t w = e->cfg.chain_window;
    if (w < 0 || w > 1024)
        return sim_i_fail(e, SIM_EINVAL, "config: chain_window %d must be in 0..1024 (0: %d)", w,
                          SIM_NCCL_STEPS);
    c->window = w > 0 ? w : SIM_NCCL_STEPS;
    const int64_t k = n_chunks(c->size_bytes, c->chunk);
    if (k < 0)
        return too_many_chunks(e, c);
    /* Step fidelity keeps, per edge, when each of the chunks that may be waiting for the edge became
     * ready: at most window of them, so a ring of min(window, k) slots. */
    c->chain_slots = k < c->window ? (int32_t)k : c->window;
    c->phases[c->n_phases++] =
        (sim_phase_t){.kind = SIM_PH_CHAIN, .steps = (int32_t)k, .chunk_bytes = c->size_bytes / (double)k};
    return SIM_OK;
}

/* NCCL halves the tree's chunk (down to 128 KiB) until each tree gets 8 x depth chunks. */
static double tree_chunk(const sim_engine_t *e, const sim_coll_t *c) {
    double chunk = e->cfg.chunk_bytes;
    if (e->cfg.tree_chunk_min_bytes > 0.0) {
        int32_t depth, load;
        sim_dbtree_shape(c->n, &depth, &load);
        while (c->size_bytes / 2.0 / chunk < 8.0 * depth && chunk / 2.0 >= e->cfg.tree_chunk_min_bytes)
            chunk /= 2.0;
    }
    return chunk;
}

/* NCCL's double binary tree over the members. Across g-member domains (g > 1) tree rank t is the
 * (t / N)-th member of domain t mod N (rail-major, N domains), so a tree edge joins the same rail of
 * different domains, as NCCL's trees (one per channel, each over one NIC of every node) do, instead
 * of crossing rails through the network's switches. */
static int plan_tree(sim_engine_t *e, sim_coll_t *c, const int32_t *order, int32_t g) {
    const int32_t n = c->n, nd = g > 1 && n > g ? n / g : 0;
#define TREE_MEMBER(t) (nd ? order[(t) % nd * g + (t) / nd] : (t))
    free(c->tree_parent); /* planned before, as a candidate of auto */
    free(c->tree_child);
    c->tree_parent = alloc_malloc((size_t)n * 2 * sizeof *c->tree_parent);
    c->tree_child = alloc_malloc((size_t)n * 4 * sizeof *c->tree_child);
    if (!c->tree_parent || !c->tree_child || pairs_alloc(e, c, 4 * n))
        return sim_i_fail(e, SIM_ENOMEM, "collective: out of memory for the tree");
    sim_i_dbtree_build(n, c->tree_parent, c->tree_child);
    sim_dbtree_shape(n, &c->tree_depth, &c->tree_load);
    for (int t = 0; t < 2; t++)
        for (int32_t v = 0; v < n; v++) {
            const int32_t p = c->tree_parent[t * n + v];
            if (p < 0)
                continue;
            pair_set(c, (2 * t) * n + v, TREE_MEMBER(v), TREE_MEMBER(p));     /* up: child -> parent */
            pair_set(c, (2 * t + 1) * n + v, TREE_MEMBER(p), TREE_MEMBER(v)); /* down: parent -> child */
        }
#undef TREE_MEMBER
    c->chunk = tree_chunk(e, c);
    const int64_t k = n_chunks(c->size_bytes / 2.0, c->chunk);
    if (k < 0)
        return too_many_chunks(e, c);
    c->phases[c->n_phases++] = (sim_phase_t){
        .kind = SIM_PH_TREE, .steps = (int32_t)k, .chunk_bytes = c->size_bytes / 2.0 / (double)k};
    return SIM_OK;
}

/* NVLink SHARP: pair i is member i -> member i + 1 (mod n). Its route, GPU -> switch -> GPU (checked
 * by nvls_check), gives member i's link into the switch (its first) and member i + 1's link out of
 * it (its last). One phase: a single coflow of one shard (M / n) whose use of every link into the
 * switch is nvls_up and of every link out of it nvls_down (sim_i_nvls_uses): the switch reduces
 * what the GPUs send into it and multicasts what it sends out, so no flow goes from GPU to GPU. */
static int plan_nvls(sim_engine_t *e, sim_coll_t *c) {
    const int32_t n = c->n;
    if (pairs_alloc(e, c, n))
        return SIM_ENOMEM;
    for (int32_t i = 0; i < n; i++)
        pair_set(c, i, i, (i + 1) % n);
    double up, down;
    sim_i_nvls_uses(c->op, n, &up, &down);
    c->phases[c->n_phases++] = (sim_phase_t){
        .kind = SIM_PH_NVLS, .steps = 1, .chunk_bytes = c->size_bytes / n, .nvls_up = up, .nvls_down = down};
    return SIM_OK;
}

/* Every member reaches the others through one switch: each pair's route has two links, and the
 * route from member i back to member i - 1 leaves on member i's link and enters on member i - 1's
 * (n > 2), so every route is GPU -> the same switch -> GPU. Return SIM_OK or SIM_EINVAL (with the
 * engine's error set unless quiet: auto skips the candidate). */
static int nvls_check(sim_engine_t *e, const sim_coll_t *c, int quiet) {
    const int32_t n = c->n;
    for (int32_t i = 0; i < c->n_pairs; i++) {
        const sim_pair_t *p = &c->pairs[i];
        int32_t len = p->route_len, buf[SIM_ROUTE_MAX], a = p->src, b = p->dst;
        int ok = len == 2;
        if (ok && n > 2) {
            const sim_pair_t *q = &c->pairs[(i + n - 2) % n]; /* member i - 2 -> member i - 1 */
            b = q->dst;
            len = e->route(e->route_ctx, a, b, buf, SIM_ROUTE_MAX);
            ok = len == 2 && buf[0] == c->routes[p->route_off] && buf[1] == c->routes[q->route_off + 1];
        }
        if (!ok)
            return quiet
                       ? SIM_EINVAL
                       : sim_i_fail(e, SIM_EINVAL,
                                    "collective: algo nvls with op %s and %d gpus: gpu %d -> gpu %d does not "
                                    "go through the members' one NVLink switch (%d links); NVLS needs "
                                    "GPU -> NVSwitch -> GPU routes",
                                    sim_coll_op_name(c->op), n, a, b, len);
    }
    return SIM_OK;
}

/* CollNet (InfiniBand SHARP), allreduce over N domains of g members: pairs [0, n) are the intra-domain
 * rings (domain d, position l: order[d g + l] -> order[d g + l + 1]); pairs [n, n + 2 g (N - 1)) the
 * aggregation, rail l's pair 2 (i - 1) from its member i up to its member 0 and pair 2 (i - 1) + 1 back
 * down. One phase, its three stages at once as NCCL pipelines them (coll_algos.c): every domain's ring
 * reduce-scatter and ring allgather of M, and one coflow per rail carrying M / g over the union of its
 * routes (every link once: the switches reduce on the way up and multicast on the way down). With
 * g = 1 only the aggregation. */
static int plan_collnet(sim_engine_t *e, sim_coll_t *c, const int32_t *order, int32_t g) {
    const int32_t n = c->n, nd = n / g, len = 2 * (nd - 1);
    if (pairs_alloc(e, c, n + g * len))
        return SIM_ENOMEM;
    for (int32_t d = 0; d < nd; d++)
        for (int32_t l = 0; l < g; l++)
            pair_set(c, d * g + l, order[d * g + l], order[d * g + (l + 1) % g]);
    for (int32_t l = 0; l < g; l++)
        for (int32_t i = 1; i < nd; i++) {
            pair_set(c, n + l * len + 2 * (i - 1), order[i * g + l], order[l]);
            pair_set(c, n + l * len + 2 * (i - 1) + 1, order[l], order[i * g + l]);
        }
    const double m = c->size_bytes;
    c->phases[c->n_phases++] = (sim_phase_t){.kind = SIM_PH_SHARP,
                                             .steps = g - 1,
                                             .chunk_bytes = m / g / e->cfg.collnet_efficiency,
                                             .n_rings = g,
                                             .ring_len = len,
                                             .pair0 = n,
                                             .intra_rings = g > 1 ? nd : 0,
                                             .intra_len = g,
                                             .intra_chunk_bytes = m / g};
    return SIM_OK;
}

sim_time_ps_t sim_i_sharp_lat_ps(const sim_engine_t *e, const sim_coll_t *c, const sim_phase_t *ph,
                                 int32_t j) {
    sim_time_ps_t up = 0, down = 0;
    for (int32_t i = 0; i < ph->ring_len; i++) {
        const sim_time_ps_t l = c->pairs[ph->pair0 + j * ph->ring_len + i].lat_ps;
        if (i % 2)
            down = l > down ? l : down;
        else
            up = l > up ? l : up;
    }
    return up + down + sim_s_to_ps(e->cfg.collnet_step_s);
}

/* The bandwidth one rail's aggregation gets on its narrowest link of an idle network: every rail's
 * links counted once per rail, a link shared by r rails giving each capacity / r. */
static int sharp_bw(const sim_engine_t *e, const sim_coll_t *c, const sim_phase_t *ph, double *bw) {
    int64_t total = 0;
    for (int32_t i = 0; i < ph->n_rings * ph->ring_len; i++)
        total += c->pairs[ph->pair0 + i].route_len;
    int32_t *all = alloc_malloc((size_t)(total > 0 ? total : 1) * sizeof *all);
    if (!all)
        return SIM_ENOMEM;
    int64_t n_all = 0;
    for (int32_t j = 0; j < ph->n_rings; j++) { /* rail j's links, once each */
        const int64_t first = n_all;
        for (int32_t i = 0; i < ph->ring_len; i++) {
            const sim_pair_t *p = &c->pairs[ph->pair0 + j * ph->ring_len + i];
            for (int32_t k = 0; k < p->route_len; k++)
                all[n_all++] = c->routes[p->route_off + k];
        }
        qsort(all + first, (size_t)(n_all - first), sizeof *all, cmp_i32);
        int64_t w = first;
        for (int64_t k = first; k < n_all; k++)
            if (k == first || all[k] != all[k - 1])
                all[w++] = all[k];
        n_all = w;
    }
    qsort(all, (size_t)n_all, sizeof *all, cmp_i32);
    double b = INFINITY;
    for (int64_t k = 0; k < n_all; k++)
        b = fmin(b, e->net.links[all[k]].cap / count_of(all, n_all, all[k]));
    free(all);
    *bw = isfinite(b) ? b : 1.0;
    return SIM_OK;
}

static int plan(sim_engine_t *e, sim_coll_t *c, const int32_t *order, int32_t g) {
    c->n_phases = 0;
    if (c->n < 2 || c->size_bytes == 0.0)
        return pairs_alloc(e, c, 0);
    if (c->op == SIM_COLL_ALLTOALL)
        return c->algo == SIM_ALGO_HIERARCHICAL ? plan_a2a_hier(e, c, order, g) : plan_a2a_flat(e, c);
    switch (c->algo) {
    case SIM_ALGO_RING:
        return plan_ring(e, c, order, g);
    case SIM_ALGO_HIERARCHICAL:
        return plan_hier(e, c, order, g);
    case SIM_ALGO_HALVING_DOUBLING:
        return plan_hd(e, c);
    case SIM_ALGO_CHAIN:
        return plan_chain(e, c);
    case SIM_ALGO_TREE:
        return plan_tree(e, c, order, g);
    case SIM_ALGO_NVLS:
        return plan_nvls(e, c);
    case SIM_ALGO_COLLNET:
        return plan_collnet(e, c, order, g);
    default: /* direct */
        if (pairs_alloc(e, c, 1))
            return SIM_ENOMEM;
        pair_set(c, 0, 0, 1);
        c->phases[c->n_phases++] =
            (sim_phase_t){.kind = SIM_PH_P2P, .steps = 1, .chunk_bytes = c->size_bytes};
        return SIM_OK;
    }
}

/* Alpha-beta parameters from the routed pairs of the current plan and protocol (set_latencies and
 * set_costs done). Ring phases count how many of their rings share a link (channels on a switch,
 * rings of a phase on a tapered fabric). Bandwidths are in data bytes: the links' share times the
 * protocol's efficiency, capped per ring by its bus bandwidth cap. */
static int plan_ab(const sim_engine_t *e, const sim_coll_t *c, int32_t g, sim_ab_params_t *p) {
    memset(p, 0, sizeof *p);
    p->chunk_bytes = c->algo == SIM_ALGO_TREE || c->algo == SIM_ALGO_CHAIN ? c->chunk : e->cfg.chunk_bytes;
    p->chain_window = c->algo == SIM_ALGO_CHAIN ? c->window : e->cfg.chain_window;
    p->per_domain = 1;
    p->channels = c->channels;
    p->launch_s = sim_ps_to_s(c->launch_ps);
    const int k = c->channels, rings = c->algo == SIM_ALGO_RING || c->algo == SIM_ALGO_HIERARCHICAL;
    int rc;
    if (c->op == SIM_COLL_ALLTOALL) { /* per member: one pair's share of its narrowest link x its pairs */
        const int hier = c->algo == SIM_ALGO_HIERARCHICAL && g >= 1;
        const int32_t p1 = hier ? c->n * (g - 1) : 0, k1 = hier ? g - 1 : 0,
                      k2 = hier ? c->n / g - 1 : c->n - 1;
        p->per_domain = hier ? g : 1;
        if ((rc = pairs_ab(e, c, 0, p1, 1, &p->intra_alpha_s, &p->intra_bytes_per_s)) ||
            (rc = pairs_ab(e, c, p1, c->n_pairs, 1, &p->alpha_s, &p->bytes_per_s)))
            return rc;
        p->intra_bytes_per_s *= (k1 > 0 ? k1 : 1) / c->wire;
        p->bytes_per_s *= (k2 > 0 ? k2 : 1) / c->wire;
        if (!hier) {
            p->intra_alpha_s = p->alpha_s;
            p->intra_bytes_per_s = p->bytes_per_s;
        }
        return SIM_OK;
    }
    if (c->algo == SIM_ALGO_NVLS) { /* bytes_per_s: out of the switch; intra_bytes_per_s: into it */
        sim_time_ps_t lat = 0;
        double up = INFINITY, down = INFINITY;
        for (int32_t i = 0; i < c->n_pairs; i++) {
            const sim_pair_t *q = &c->pairs[i];
            if (q->src < 0)
                continue;
            lat = q->lat_ps > lat ? q->lat_ps : lat;
            up = fmin(up, e->net.links[c->routes[q->route_off]].cap);
            down = fmin(down, e->net.links[c->routes[q->route_off + q->route_len - 1]].cap);
        }
        p->alpha_s = p->intra_alpha_s = sim_ps_to_s(lat);
        p->bytes_per_s = (isfinite(down) ? down : 1.0) / c->wire;
        p->intra_bytes_per_s = (isfinite(up) ? up : 1.0) / c->wire;
        return SIM_OK;
    }
    if (c->algo == SIM_ALGO_COLLNET && c->n_phases > 0) { /* intra: the rings; else: the switches */
        const sim_phase_t *ph = &c->phases[0];
        p->per_domain = g;
        if ((rc = pairs_ab(e, c, 0, c->n, 1, &p->intra_alpha_s, &p->intra_bytes_per_s)))
            return rc;
        p->intra_bytes_per_s /= c->wire;
        sim_time_ps_t lat = 0;
        for (int32_t j = 0; j < ph->n_rings; j++) {
            const sim_time_ps_t l = sim_i_sharp_lat_ps(e, c, ph, j);
            lat = l > lat ? l : lat;
        }
        p->alpha_s = sim_ps_to_s(lat);
        if ((rc = sharp_bw(e, c, ph, &p->bytes_per_s)))
            return rc;
        p->bytes_per_s *= e->cfg.collnet_efficiency / c->wire;
        return SIM_OK;
    }
    if (c->algo == SIM_ALGO_HIERARCHICAL && c->n_pairs == 2 * k * c->n) {
        p->per_domain = g;
        if ((rc = pairs_ab(e, c, 0, k * c->n, 1, &p->intra_alpha_s, &p->intra_bytes_per_s)) ||
            (rc = pairs_ab(e, c, k * c->n, 2 * k * c->n, 1, &p->alpha_s, &p->bytes_per_s)))
            return rc;
    } else {
        rc = pairs_ab(e, c, 0, c->n_pairs, rings, &p->alpha_s, &p->bytes_per_s);
        p->intra_alpha_s = p->alpha_s;
        p->intra_bytes_per_s = p->bytes_per_s;
        if (rc)
            return rc;
    }
    const int capped = isfinite(c->bound) && (rings || c->algo == SIM_ALGO_CHAIN);
    p->bytes_per_s = capped ? fmin(p->bytes_per_s, c->bound) / c->wire : p->bytes_per_s / c->wire;
    p->intra_bytes_per_s =
        capped ? fmin(p->intra_bytes_per_s, c->bound) / c->wire : p->intra_bytes_per_s / c->wire;
    return SIM_OK;
}

/* ---- validation and the algorithm ----------------------------------------------------------------- */

static int algo_valid(sim_engine_t *e, const sim_coll_t *c, int32_t g) {
    const char *why = NULL;
    const int ring_op = c->op <= SIM_COLL_REDUCESCATTER;
    switch (c->algo) {
    case SIM_ALGO_RING:
        why = ring_op ? NULL : "ring applies to allreduce, allgather, reducescatter";
        break;
    case SIM_ALGO_TREE:
        why = c->op == SIM_COLL_ALLREDUCE ? NULL : "tree applies to allreduce only";
        break;
    case SIM_ALGO_HIERARCHICAL:
        why = !ring_op && c->op != SIM_COLL_ALLTOALL
                  ? "hierarchical applies to allreduce, allgather, reducescatter, alltoall"
              : g < 1 ? "hierarchical needs the same number of members in every domain"
                      : NULL;
        break;
    case SIM_ALGO_HALVING_DOUBLING:
        why = !ring_op         ? "halving-doubling applies to allreduce, allgather, reducescatter"
              : !is_pow2(c->n) ? "halving-doubling needs a power-of-two group"
                               : NULL;
        break;
    case SIM_ALGO_CHAIN:
        why = c->op == SIM_COLL_BROADCAST || c->op == SIM_COLL_REDUCE ? NULL
                                                                      : "chain applies to broadcast, reduce";
        break;
    case SIM_ALGO_DIRECT:
        why = c->op == SIM_COLL_SENDRECV || c->op == SIM_COLL_ALLTOALL
                  ? NULL
                  : "direct applies to sendrecv, alltoall";
        break;
    case SIM_ALGO_NVLS:
        why = !ring_op       ? "nvls applies to allreduce, allgather, reducescatter"
              : !e->cfg.nvls ? "NVLink SHARP is off (config.nvls 0: NVLink-3 or older, or no NVSwitch)"
              : c->crossing  ? "nvls needs every member in one NVLink domain"
              : c->req_proto != SIM_PROTO_SIMPLE && c->req_proto != SIM_PROTO_AUTO
                  ? "nvls runs the simple protocol only"
                  : NULL;
        break;
    case SIM_ALGO_COLLNET:
        why = c->op != SIM_COLL_ALLREDUCE ? "collnet applies to allreduce only"
              : !e->cfg.collnet           ? "InfiniBand SHARP is off (config.collnet 0)"
              : !c->crossing              ? "collnet needs members in more than one NVLink domain"
              : g < 1                     ? "collnet needs the same number of members in every domain"
              : c->req_proto != SIM_PROTO_SIMPLE && c->req_proto != SIM_PROTO_AUTO
                  ? "collnet runs the simple protocol only"
                  : NULL;
        break;
    default:
        why = "unknown algorithm";
        break;
    }
    if (why)
        return sim_i_fail(e, SIM_EINVAL, "collective: algo %s with op %s and %d gpus: %s",
                          sim_coll_algo_name(c->algo), sim_coll_op_name(c->op), c->n, why);
    return SIM_OK;
}

/* Plan and route c->algo with its channel count, then set c->proto's latencies and costs and compute
 * its alpha-beta parameters. */
static int plan_full(sim_engine_t *e, sim_coll_t *c, const int32_t *order, int32_t g, sim_ab_params_t *ab,
                     int quiet_nvls) {
    c->channels = c->op == SIM_COLL_ALLTOALL              ? 1 /* pairs, not rings */
                  : c->want_channels == SIM_CHANNELS_AUTO ? auto_channels(c, c->algo, g)
                                                          : c->want_channels;
    int rc = plan(e, c, order, g);
    if (!rc)
        rc = pairs_route(e, c);
    if (!rc && c->algo == SIM_ALGO_NVLS)
        rc = nvls_check(e, c, quiet_nvls);
    if (rc)
        return rc;
    set_latencies(e, c);
    set_costs(e, c);
    return plan_ab(e, c, g, ab);
}

/* The candidates auto weighs, in order of preference on ties (hierarchical first, as before the
 * flat ring became a candidate; Simple first). */
static int32_t algo_candidates(const sim_engine_t *e, const sim_coll_t *c, int multi, sim_coll_algo_t *out) {
    int32_t n = 0;
    if (c->algo != SIM_ALGO_AUTO) {
        out[n++] = c->algo;
    } else if (c->op <= SIM_COLL_REDUCESCATTER) {
        if (multi)
            out[n++] = SIM_ALGO_HIERARCHICAL;
        out[n++] = SIM_ALGO_RING;
        if (c->op == SIM_COLL_ALLREDUCE && c->n > 2)
            out[n++] = SIM_ALGO_TREE;
        /* NCCL: NVLS inside one NVLink domain on sm90+ with an NVSwitch (across nodes it needs CollNet) */
        if (e->cfg.nvls && !c->crossing && c->n > 1 &&
            (c->proto == SIM_PROTO_AUTO || c->proto == SIM_PROTO_SIMPLE))
            out[n++] = SIM_ALGO_NVLS;
        /* NCCL: CollNet (with its SHARP plugin and NCCL_COLLNET_ENABLE=1) for allreduce across nodes */
        if (e->cfg.collnet && c->crossing && c->per_domain >= 1 && c->op == SIM_COLL_ALLREDUCE &&
            (c->proto == SIM_PROTO_AUTO || c->proto == SIM_PROTO_SIMPLE))
            out[n++] = SIM_ALGO_COLLNET;
    } else if (c->op == SIM_COLL_ALLTOALL) { /* NCCL's flat one first (ties), then PXN's */
        out[n++] = SIM_ALGO_DIRECT;
        if (multi)
            out[n++] = SIM_ALGO_HIERARCHICAL;
    } else {
        out[n++] = c->op == SIM_COLL_SENDRECV ? SIM_ALGO_DIRECT : SIM_ALGO_CHAIN;
    }
    return n;
}

static int32_t proto_candidates(const sim_engine_t *e, const sim_coll_t *c, sim_proto_t *out) {
    static const sim_proto_t order[3] = {SIM_PROTO_SIMPLE, SIM_PROTO_LL, SIM_PROTO_LL128};
    int32_t n = 0;
    if (c->proto != SIM_PROTO_AUTO) {
        out[n++] = c->proto;
        return n;
    }
    for (int i = 0; i < 3; i++) {
        const sim_proto_params_t *pp = &e->cfg.proto[order[i]];
        if (pp->enabled && (pp->network || !c->crossing))
            out[n++] = order[i];
    }
    if (n == 0) /* only network-disabled protocols are enabled: take Simple */
        out[n++] = SIM_PROTO_SIMPLE;
    return n;
}

/* Resolve auto algorithm, protocol and channels (the (algorithm, protocol) pair with the smallest
 * closed form, as NCCL's tuner), plan, route, and compute the closed form. */
static int resolve_and_plan(sim_engine_t *e, sim_coll_t *c) {
    int32_t *order = alloc_malloc((size_t)c->n * sizeof *order);
    if (!order)
        return sim_i_fail(e, SIM_ENOMEM, "collective: out of memory");
    const int32_t g = domain_order(e, c, order);
    if (g < 0) {
        free(order);
        return sim_i_fail(e, SIM_ENOMEM, "collective: out of memory");
    }
    c->per_domain = g;
    c->crossing = 0;
    for (int32_t i = 1; i < c->n; i++)
        c->crossing |= c->gpus[i] / e->gpus_per_domain != c->gpus[0] / e->gpus_per_domain;
    const int multi = g > 1 && c->n > g;
    if (c->op == SIM_COLL_SENDRECV && (c->algo == SIM_ALGO_AUTO || c->algo == SIM_ALGO_RING))
        c->algo = SIM_ALGO_DIRECT;
    if ((c->op == SIM_COLL_BROADCAST || c->op == SIM_COLL_REDUCE) && c->algo == SIM_ALGO_RING)
        c->algo = SIM_ALGO_CHAIN;
    sim_coll_algo_t algos[5];
    sim_proto_t protos[3];
    const int32_t n_algos = algo_candidates(e, c, multi, algos), n_protos = proto_candidates(e, c, protos);
    int rc = SIM_OK;
    sim_ab_params_t ab;
    if (n_algos * n_protos > 1) {
        double best = INFINITY;
        sim_coll_algo_t best_algo = algos[0];
        sim_proto_t best_proto = protos[0];
        for (int32_t i = 0; i < n_algos; i++) {
            c->algo = algos[i];
            if (n_algos > 1 && c->algo == SIM_ALGO_HIERARCHICAL && g < 1)
                continue;
            if ((rc = algo_valid(e, c, g)))
                goto out;
            for (int32_t j = 0; j < n_protos; j++) {
                c->proto = protos[j];
                if (c->algo == SIM_ALGO_NVLS || c->algo == SIM_ALGO_COLLNET) { /* Simple only; NVLS is
                                                                                   skipped where the routes do
                                                                                   not allow it */
                    if (c->proto != SIM_PROTO_SIMPLE)
                        continue;
                    if ((rc = plan_full(e, c, order, g, &ab, 1)) == SIM_EINVAL && c->algo == SIM_ALGO_NVLS) {
                        rc = SIM_OK;
                        break;
                    }
                } else if (j == 0) {
                    rc = plan_full(e, c, order, g, &ab, 0);
                } else { /* the same plan and routes under another protocol */
                    set_latencies(e, c);
                    set_costs(e, c);
                    rc = plan_ab(e, c, g, &ab);
                }
                if (rc)
                    goto out;
                const double t = sim_closed_form_s(c->op, c->algo, c->size_bytes, c->n, &ab);
                if (t >= 0.0 && t < best) {
                    best = t;
                    best_algo = c->algo;
                    best_proto = c->proto;
                }
            }
        }
        c->algo = best_algo;
        c->proto = best_proto;
    } else {
        c->algo = algos[0];
        c->proto = protos[0];
    }
    if ((c->algo == SIM_ALGO_NVLS || c->algo == SIM_ALGO_COLLNET) && c->proto == SIM_PROTO_AUTO)
        c->proto = SIM_PROTO_SIMPLE;
    if ((rc = algo_valid(e, c, g)) || (rc = plan_full(e, c, order, g, &ab, 0)))
        goto out;
    c->closed_form_s = sim_closed_form_s(c->op, c->algo, c->size_bytes, c->n, &ab);
out:
    free(order);
    return rc;
}

static int check_desc(sim_engine_t *e, const sim_coll_desc_t *d) {
    if (e->started)
        return sim_i_fail(e, SIM_ESTATE, "collectives cannot be added after the run has started");
    if ((unsigned)d->op >= SIM_COLL_OP_COUNT || (unsigned)d->algo >= SIM_COLL_ALGO_COUNT)
        return sim_i_fail(e, SIM_EINVAL, "collective: op %d / algo %d unknown", (int)d->op, (int)d->algo);
    if (!d->gpus || d->n_gpus < 1 || d->n_gpus > e->n_gpus)
        return sim_i_fail(e, SIM_EINVAL, "collective: n_gpus %d must be in 1..%d", d->n_gpus, e->n_gpus);
    if (d->op == SIM_COLL_SENDRECV && d->n_gpus != 2)
        return sim_i_fail(e, SIM_EINVAL, "collective: sendrecv needs 2 gpus, got %d", d->n_gpus);
    if (!(d->size_bytes >= 0.0) || !isfinite(d->size_bytes))
        return sim_i_fail(e, SIM_EINVAL, "collective: size_bytes %g must be >= 0 and finite", d->size_bytes);
    if ((d->op == SIM_COLL_BROADCAST || d->op == SIM_COLL_REDUCE) && (d->root < 0 || d->root >= d->n_gpus))
        return sim_i_fail(e, SIM_EINVAL, "collective: root %d is not in 0..%d", d->root, d->n_gpus - 1);
    if ((d->channels < 0 && d->channels != SIM_CHANNELS_AUTO) || d->channels > 64)
        return sim_i_fail(e, SIM_EINVAL, "collective: channels %d must be in 0..64 or SIM_CHANNELS_AUTO (-1)",
                          d->channels);
    if ((unsigned)d->proto >= SIM_PROTO_COUNT)
        return sim_i_fail(e, SIM_EINVAL, "collective: proto %d unknown", (int)d->proto);
    if (d->stream < 1 || d->stream >= e->streams_per_gpu)
        return sim_i_fail(e, SIM_EINVAL, "collective: stream %d is not a communication stream (1..%d)",
                          d->stream, e->streams_per_gpu - 1);
    for (int32_t i = 0; i < d->n_gpus; i++)
        if (d->gpus[i] < 0 || d->gpus[i] >= e->n_gpus)
            return sim_i_fail(e, SIM_EINVAL, "collective: gpus[%d] = %d is not in 0..%d", i, d->gpus[i],
                              e->n_gpus - 1);
    /* Duplicates: sort (gpu, index) keys, O(n log n) rather than a bitmap of every GPU. */
    int64_t *keys = alloc_malloc((size_t)d->n_gpus * sizeof *keys);
    if (!keys)
        return sim_i_fail(e, SIM_ENOMEM, "collective: out of memory");
    for (int32_t i = 0; i < d->n_gpus; i++)
        keys[i] = ((int64_t)d->gpus[i] << 32) | i;
    qsort(keys, (size_t)d->n_gpus, sizeof *keys, cmp_i64);
    int rc = SIM_OK;
    for (int32_t i = 1; i < d->n_gpus && !rc; i++)
        if (keys[i] >> 32 == keys[i - 1] >> 32)
            rc = sim_i_fail(e, SIM_EINVAL, "collective: gpus[%d] = %d appears twice",
                            (int)(keys[i] & 0xffffffff), (int)(keys[i] >> 32));
    free(keys);
    return rc;
}

/* A new plan at e->plans[e->n_plans] (not counted until planned). */
static int new_plan(sim_engine_t *e, const sim_coll_desc_t *d, sim_coll_t **out) {
    if (sim_i_grow32_raw((void **)&e->plans, &e->cap_plans, (int64_t)e->n_plans + 1, sizeof *e->plans))
        return sim_i_fail(e, SIM_ENOMEM, "collective: out of memory");
    sim_coll_t *c = &e->plans[e->n_plans];
    memset(c, 0, sizeof *c);
    c->op = d->op;
    c->algo = d->algo;
    c->fidelity = d->fidelity == SIM_FIDELITY_DEFAULT ? e->cfg.fidelity : d->fidelity;
    c->mode = d->use_default_mode ? e->cfg.comm_mode : d->mode;
    c->size_bytes = d->size_bytes;
    c->n = d->n_gpus;
    c->root = d->root;
    c->channels = d->channels > 0 ? d->channels : 1;
    c->want_channels = d->channels == SIM_CHANNELS_AUTO ? SIM_CHANNELS_AUTO : c->channels;
    c->proto = d->proto;
    c->req_algo = (int32_t)d->algo;
    c->req_proto = (int32_t)d->proto;
    c->wire = 1.0;
    c->bound = INFINITY;
    c->chunk = e->cfg.chunk_bytes;
    c->gpus = alloc_malloc((size_t)c->n * sizeof *c->gpus);
    if (!c->gpus)
        return sim_i_fail(e, SIM_ENOMEM, "collective: out of memory");
    memcpy(c->gpus, d->gpus, (size_t)c->n * sizeof *c->gpus);
    *out = c;
    return SIM_OK;
}

/* Per-member operations on their streams, consecutive ids from *first (all or nothing). */
static int add_members(sim_engine_t *e, int32_t id, const sim_coll_t *c, const sim_coll_desc_t *d,
                       int32_t stream_dst, int32_t *first) {
    /* Reserve every member's slot first: with gpus and streams checked, sim_i_op_new cannot fail
     * below, so no half-added collective is ever left on the streams. */
    if (sim_i_ops_reserve(e, (int64_t)e->n_ops + c->n))
        return sim_i_fail(e, SIM_ENOMEM, "collective: out of memory");
    *first = e->n_ops;
    for (int32_t i = 0; i < c->n; i++) {
        sim_op_kind_t kind = SIM_OP_COLLECTIVE;
        int32_t stream = d->stream;
        if (c->op == SIM_COLL_SENDRECV) {
            kind = i == 0 ? SIM_OP_SEND : SIM_OP_RECV;
            stream = i == 0 ? d->stream : stream_dst;
        }
        const int rc = sim_i_op_new(e, kind, c->gpus[i], stream, 0, id, d->name, NULL);
        if (rc)
            return rc;
    }
    return SIM_OK;
}

/* ---- the plan cache -------------------------------------------------------------------------------- */

/* Collectives with the same key (op, requested algorithm, protocol and channels, fidelity, mode,
 * size, root and member list) have the same plan: the first one's pairs, routes, phases and closed
 * form serve the others, which keep only their run-time state. A step adds the same collective of a
 * group once per microbatch and layer, so this replaces most plans by a lookup. */
static uint64_t plan_hash(const sim_coll_desc_t *d, sim_fidelity_t fid, sim_comm_mode_t mode) {
    uint64_t h = 1469598103934665603ULL;
#define MIX(v) (h = (h ^ (uint64_t)(v)) * 1099511628211ULL)
    uint64_t size_bits;
    memcpy(&size_bits, &d->size_bytes, sizeof size_bits);
    MIX(d->op);
    MIX(d->algo);
    MIX(d->proto);
    MIX(d->channels);
    MIX(fid);
    MIX(mode);
    MIX(size_bits);
    MIX(size_bits >> 32);
    MIX(d->root);
    MIX(d->n_gpus);
    for (int32_t i = 0; i < d->n_gpus; i++)
        MIX((uint32_t)d->gpus[i]);
#undef MIX
    return h ^ (h >> 29);
}

static int plan_same(const sim_coll_t *c, const sim_coll_desc_t *d, sim_fidelity_t fid,
                     sim_comm_mode_t mode) {
    const int32_t want =
        d->channels == SIM_CHANNELS_AUTO ? SIM_CHANNELS_AUTO : (d->channels > 0 ? d->channels : 1);
    return c->op == d->op && c->req_algo == (int32_t)d->algo && c->req_proto == (int32_t)d->proto &&
           c->want_channels == want && c->fidelity == fid && c->mode == mode &&
           c->size_bytes == d->size_bytes &&
           memcmp(&c->size_bytes, &d->size_bytes, sizeof d->size_bytes) == 0 && c->root == d->root &&
           c->n == d->n_gpus && memcmp(c->gpus, d->gpus, (size_t)d->n_gpus * sizeof *d->gpus) == 0;
}

/* The slot of the key in the table: an owner with that key, or the empty slot where it goes. */
static int64_t plan_slot(const sim_engine_t *e, const sim_coll_desc_t *d, sim_fidelity_t fid,
                         sim_comm_mode_t mode) {
    const uint64_t mask = (uint64_t)e->plan_cap - 1;
    for (uint64_t i = plan_hash(d, fid, mode) & mask;; i = (i + 1) & mask) {
        const int32_t id = e->plan_tab[i];
        if (id < 0 || plan_same(&e->plans[id], d, fid, mode))
            return (int64_t)i;
    }
}

/* Record plan id under its key (after it was planned). */
static int plan_insert(sim_engine_t *e, const sim_coll_desc_t *d, int32_t id) {
    const sim_coll_t *c = &e->plans[id];
    if (2 * (e->plan_n + 1) > e->plan_cap) {
        const int64_t cap = e->plan_cap ? 2 * e->plan_cap : 1024;
        int32_t *old = e->plan_tab, *tab = alloc_malloc((size_t)cap * sizeof *tab);
        if (!tab)
            return SIM_ENOMEM;
        for (int64_t i = 0; i < cap; i++)
            tab[i] = -1;
        const int64_t old_cap = e->plan_cap;
        e->plan_tab = tab;
        e->plan_cap = cap;
        for (int64_t i = 0; i < old_cap; i++)
            if (old[i] >= 0) {
                const sim_coll_t *o = &e->plans[old[i]];
                const sim_coll_desc_t od = {.op = o->op,
                                            .algo = (sim_coll_algo_t)o->req_algo,
                                            .proto = (sim_proto_t)o->req_proto,
                                            .channels = o->want_channels,
                                            .size_bytes = o->size_bytes,
                                            .root = o->root,
                                            .gpus = o->gpus,
                                            .n_gpus = o->n};
                tab[plan_slot(e, &od, o->fidelity, o->mode)] = old[i];
            }
        free(old);
    }
    const int64_t slot = plan_slot(e, d, c->fidelity, c->mode);
    if (e->plan_tab[slot] < 0) {
        e->plan_tab[slot] = id;
        e->plan_n++;
    }
    return SIM_OK;
}

/* The plan of d, or -1. */
static int32_t plan_find(const sim_engine_t *e, const sim_coll_desc_t *d) {
    if (!e->plan_cap)
        return -1;
    const sim_fidelity_t fid = d->fidelity == SIM_FIDELITY_DEFAULT ? e->cfg.fidelity : d->fidelity;
    const sim_comm_mode_t mode = d->use_default_mode ? e->cfg.comm_mode : d->mode;
    return e->plan_tab[plan_slot(e, d, fid, mode)];
}

static int coll_add(sim_engine_t *e, const sim_coll_desc_t *d, int32_t stream_dst, sim_op_id_t *member_ops,
                    sim_coll_id_t *out) {
    int32_t plan = d && !e->started && d->gpus && d->n_gpus >= 1 ? plan_find(e, d) : -1;
    int rc = SIM_OK;
    if (plan < 0 && (rc = check_desc(e, d)))
        return rc;
    if (plan >= 0 && (d->stream < 1 || d->stream >= e->streams_per_gpu))
        return sim_i_fail(e, SIM_EINVAL, "collective: stream %d is not a communication stream (1..%d)",
                          d->stream, e->streams_per_gpu - 1);
    if (d->op == SIM_COLL_SENDRECV && (stream_dst < 1 || stream_dst >= e->streams_per_gpu))
        return sim_i_fail(e, SIM_EINVAL, "sendrecv: dst stream %d is not a communication stream", stream_dst);
    if (e->n_colls == INT32_MAX ||
        sim_i_grow32_raw((void **)&e->colls, &e->cap_colls, (int64_t)e->n_colls + 1, sizeof *e->colls))
        return sim_i_fail(e, SIM_ENOMEM, "collective: out of memory");
    if (plan < 0) {
        sim_coll_t *c = NULL;
        if ((rc = new_plan(e, d, &c)))
            return rc;
        if (c->mode == SIM_COMM_ANALYTIC) {
            if (!e->cfg.has_system)
                rc = sim_i_fail(e, SIM_EINVAL,
                                "collective: analytic mode needs config.system (has_system = 0)");
            if (c->algo == SIM_ALGO_AUTO || c->op == SIM_COLL_SENDRECV)
                c->algo = c->op == SIM_COLL_SENDRECV ? SIM_ALGO_DIRECT : SIM_ALGO_RING;
        } else {
            rc = resolve_and_plan(e, c);
        }
        if (!rc && plan_insert(e, d, e->n_plans))
            rc = sim_i_fail(e, SIM_ENOMEM, "collective: out of memory");
        if (rc) {
            plan_destroy(c);
            return rc;
        }
        plan = e->n_plans++;
    }
    const int32_t id = e->n_colls;
    int32_t first = -1;
    if ((rc = add_members(e, id, &e->plans[plan], d, stream_dst, &first)))
        return rc;
    e->colls[id] = (sim_coll_inst_t){.plan = plan, .first_op = first};
    e->n_colls++;
    for (int32_t i = 0; member_ops && i < e->plans[plan].n; i++)
        member_ops[i] = first + i;
    if (out)
        *out = id;
    return SIM_OK;
}

int sim_coll_add(sim_engine_t *e, const sim_coll_desc_t *d, sim_op_id_t *member_ops, sim_coll_id_t *out) {
    if (d && d->op == SIM_COLL_SENDRECV)
        return coll_add(e, d, d->stream, member_ops, out);
    return d ? coll_add(e, d, 0, member_ops, out) : sim_i_fail(e, SIM_EINVAL, "sim_coll_add: desc is NULL");
}

int sim_p2p_add(sim_engine_t *e, int32_t src_gpu, int32_t src_stream, int32_t dst_gpu, int32_t dst_stream,
                double bytes, const char *name, sim_op_id_t *send_op, sim_op_id_t *recv_op) {
    const int32_t gpus[2] = {src_gpu, dst_gpu};
    const sim_coll_desc_t d = {.op = SIM_COLL_SENDRECV,
                               .algo = SIM_ALGO_DIRECT,
                               .use_default_mode = 1,
                               .size_bytes = bytes,
                               .gpus = gpus,
                               .n_gpus = 2,
                               .stream = src_stream,
                               .name = name};
    sim_op_id_t ops[2];
    const int rc = coll_add(e, &d, dst_stream, ops, NULL);
    if (rc)
        return rc;
    if (send_op)
        *send_op = ops[0];
    if (recv_op)
        *recv_op = ops[1];
    return SIM_OK;
}

/* ---- running ------------------------------------------------------------------------------------ */

static model_coll_op_t model_op(sim_coll_op_t op) {
    switch (op) {
    case SIM_COLL_ALLREDUCE:
        return MODEL_COLL_ALLREDUCE;
    case SIM_COLL_ALLGATHER:
        return MODEL_COLL_ALLGATHER;
    case SIM_COLL_REDUCESCATTER:
        return MODEL_COLL_REDUCESCATTER;
    case SIM_COLL_BROADCAST:
        return MODEL_COLL_BROADCAST;
    case SIM_COLL_REDUCE:
        return MODEL_COLL_REDUCE;
    case SIM_COLL_ALLTOALL:
        return MODEL_COLL_ALLTOALL;
    default:
        return MODEL_COLL_P2P;
    }
}

/* Analytic duration: the model's two-tier formula; per_domain = members sharing gpus[0]'s domain. */
static double analytic_s(const sim_engine_t *e, const sim_coll_t *c) {
    int32_t per_domain = 0;
    for (int32_t i = 0; i < c->n; i++)
        per_domain += c->gpus[i] / e->gpus_per_domain == c->gpus[0] / e->gpus_per_domain;
    return model_collective_time_s(&e->cfg.system, e->cfg.compat, model_op(c->op), c->size_bytes * 1e-9, c->n,
                                   per_domain);
}

/* Make the live copy of collective id's plan (SIM_OK or SIM_ENOMEM). */
static int live_take(sim_engine_t *e, int32_t id) {
    sim_coll_inst_t *in = &e->colls[id];
    sim_coll_t *c = e->live_free;
    if (c)
        e->live_free = c->next_free;
    else if (!(c = alloc_malloc(sizeof *c)))
        return SIM_ENOMEM;
    *c = e->plans[in->plan];
    c->scratch = NULL;
    c->st = NULL;
    c->mask = NULL;
    c->tree_last = c->chain_ready = NULL;
    c->flows_run = 0;
    c->phase = 0;
    c->pending = 0;
    c->next_free = NULL;
    in->live = c;
    return SIM_OK;
}

static void coll_start(sim_engine_t *e, int32_t id) {
    sim_coll_inst_t *in = &e->colls[id];
    if (live_take(e, id)) {
        e->fatal = sim_i_fail(e, SIM_ENOMEM, "collective: out of memory");
        return;
    }
    sim_coll_t *c = in->live;
    if (c->mode == SIM_COMM_ANALYTIC) {
        const double t = analytic_s(e, c);
        c->closed_form_s = t;
        e->plans[in->plan].closed_form_s = t; /* the same for every collective of this plan */
        if (sim_i_schedule(e, e->now + sim_s_to_ps(t), SIM_EV_COLL_DONE, id, 0))
            e->fatal = sim_i_fail(e, SIM_ENOMEM, "collective: out of memory");
        return;
    }
    if (c->n_phases == 0) { /* nothing to move: end through the queue, not by recursion */
        if (sim_i_schedule(e, e->now, SIM_EV_COLL_DONE, id, 0))
            e->fatal = sim_i_fail(e, SIM_ENOMEM, "collective: out of memory");
        return;
    }
    if (scratch_take(e, c)) {
        e->fatal = sim_i_fail(e, SIM_ENOMEM, "collective: out of memory");
        return;
    }
    if (c->launch_ps > 0) { /* the protocol's launch latency, then the first phase */
        if (sim_i_schedule(e, e->now + c->launch_ps, SIM_EV_COLL_BEGIN, id, 0))
            e->fatal = sim_i_fail(e, SIM_ENOMEM, "collective: out of memory");
        return;
    }
    sim_i_phase_begin(e, id);
}

void sim_i_coll_arrive(sim_engine_t *e, int32_t id) {
    sim_coll_inst_t *in = &e->colls[id];
    if (++in->arrived == e->plans[in->plan].n)
        coll_start(e, id);
}

static void coll_finish(sim_engine_t *e, int32_t id) {
    sim_coll_inst_t *in = &e->colls[id];
    sim_coll_t *c = in->live;
    in->flows = c->flows_run < INT32_MAX ? (int32_t)c->flows_run : INT32_MAX;
    scratch_give(e, c);
    in->live = NULL;
    c->next_free = e->live_free;
    e->live_free = c;
    const int32_t n = e->plans[in->plan].n, first = in->first_op;
    for (int32_t i = 0; i < n; i++)
        sim_i_op_end(e, first + i);
}

void sim_i_coll_done_event(sim_engine_t *e, int32_t id) {
    coll_finish(e, id);
}

void sim_i_coll_flow_done(sim_engine_t *e, int32_t id, int32_t tag) {
    sim_coll_t *c = sim_i_coll(e, id);
    sim_i_phase_flow_done(e, id, tag);
    if (c->pending > 0)
        return;
    if (++c->phase < c->n_phases)
        sim_i_phase_begin(e, id);
    else
        coll_finish(e, id);
}

int sim_coll_result(const sim_engine_t *e, sim_coll_id_t id, sim_coll_result_t *out) {
    if (id < 0 || id >= e->n_colls)
        return SIM_EINVAL;
    const sim_coll_inst_t *in = &e->colls[id];
    const sim_coll_t *c = &e->plans[in->plan];
    out->algo = c->algo;
    out->fidelity = c->fidelity;
    out->mode = c->mode;
    out->start_ps = SIM_TIME_NEVER; /* when the last member started, once all have */
    out->end_ps = SIM_TIME_NEVER;
    if (in->arrived == c->n) {
        out->start_ps = 0;
        for (int32_t i = 0; i < c->n; i++) {
            sim_time_ps_t st, en;
            sim_op_times(e, in->first_op + i, &st, &en);
            out->start_ps = st > out->start_ps ? st : out->start_ps;
            out->end_ps = en;
        }
    }
    out->closed_form_s = c->closed_form_s;
    out->flows = in->live ? in->live->flows_run : in->flows;
    out->proto = c->proto == SIM_PROTO_AUTO ? SIM_PROTO_SIMPLE : c->proto;
    out->channels = c->channels;
    out->sent_bytes = in->sent_bytes;
    out->members = c->n;
    return SIM_OK;
}

int sim_coll_describe(const sim_engine_t *e, sim_coll_id_t id, sim_coll_info_t *out) {
    if (id < 0 || id >= e->n_colls)
        return SIM_EINVAL;
    const sim_coll_inst_t *in = &e->colls[id];
    const sim_coll_t *c = &e->plans[in->plan];
    out->op = c->op;
    out->size_bytes = c->size_bytes;
    out->n_gpus = c->n;
    out->root = c->root;
    out->gpus = c->gpus;
    out->first_op = in->first_op;
    out->requested_algo = (sim_coll_algo_t)c->req_algo;
    out->requested_proto = (sim_proto_t)c->req_proto;
    out->requested_channels = c->want_channels;
    return SIM_OK;
}
