/* coll_algos.c - the state machines that turn one phase of a collective into flows.
 *
 * Step fidelity: every step of every rank is a flow of its own, started as soon as its inputs are
 * there (a rank's step s waits for its own step s-1 and for the data its step s forwards), so
 * skew and contention propagate as in the real algorithm. Fast fidelity: a ring, chain or tree
 * becomes one coflow: a single max-min variable whose route is the union of its members' routes
 * (a link crossed by c members carries c units), which is exactly "every member capped at the
 * slowest member's rate" (docs/engine.md, "Collectives as flows", fidelities). It carries one member's whole
 * volume and pays its per-step latencies up front: steps x (slowest member's latency), less those the chain's
 * and the tree's pipelines hide behind transfers. On an idle network both give the closed form of
 * closed_form.c; under contention fast mode loses the skew between members. Halving-doubling and
 * sendrecv have O(log n) and 1 steps and always run step-exact; NVLS is one coflow in both.
 *
 * State (c->st, ints): ring: sent, received, busy per member; halving-doubling: sent, busy per
 * rank plus a received-steps bit mask; chain: done, busy per edge (and chain_ready: when each chunk
 * waiting for an edge became ready, up to W chunks being in flight per edge); tree: up-started,
 * up-done, down-started, down-done per (tree, rank), one chunk in flight per edge. */
#include <math.h>
#include <string.h>

#include "sim_internal.h"

int sim_i_phase_state_size(const sim_coll_t *c, int64_t *n_ints, int64_t *n_masks) {
    const int64_t ring = 3 * (int64_t)c->n * c->channels, tree = 8 * (int64_t)c->n;
    *n_ints = ring > tree ? ring : tree;
    *n_masks = c->n;
    return SIM_OK;
}

/* The rate cap of the current phase's flows: the protocol's (wire bytes/s) for rings and chains. */
static double phase_bound(const sim_coll_t *c) {
    const sim_phase_kind_t k = c->phases[c->phase].kind;
    return k == SIM_PH_RING || k == SIM_PH_CHAIN ? c->bound : INFINITY;
}

/* The links of a flow over pair p that starts now: the planned route, or with adaptive routing the
 * route chosen against the current link loads (into buf), in which case *dlat_ps is its latency
 * minus the planned route's (the pair's latencies were computed on the planned route). */
static const int32_t *pair_route(sim_engine_t *e, const sim_coll_t *c, const sim_pair_t *p, int32_t *buf,
                                 int32_t *len, sim_time_ps_t *dlat_ps) {
    const int32_t *planned = &c->routes[p->route_off];
    *len = p->route_len;
    *dlat_ps = 0;
    if (!e->route_load)
        return planned;
    const int32_t n = sim_i_route_now(e, p->src, p->dst, buf);
    if (n < 1)
        return planned;
    *len = n;
    *dlat_ps = sim_i_route_lat_ps(e, buf, n) - sim_i_route_lat_ps(e, planned, p->route_len);
    return buf;
}

/* A latency moved by a rerouting's difference, never below 0 (a ring's mean latency may be below
 * one member's planned route). */
static sim_time_ps_t shifted(sim_time_ps_t lat_ps, sim_time_ps_t dlat_ps) {
    return lat_ps + dlat_ps > 0 ? lat_ps + dlat_ps : 0;
}

/* A flow of `bytes` data bytes over one pair, after lat_ps: the protocol's wire bytes, at its rate
 * cap. A flow that pays no latency (a tree chunk following the previous one) pays none whatever its
 * route. */
static void start_pair_after(sim_engine_t *e, int32_t id, int32_t pair, double bytes, int32_t tag,
                             sim_time_ps_t lat_ps) {
    sim_coll_t *c = sim_i_coll(e, id);
    e->colls[id].sent_bytes += bytes;
    const sim_pair_t *p = &c->pairs[pair];
    int32_t buf[SIM_ROUTE_MAX], len;
    sim_time_ps_t dlat;
    const int32_t *links = pair_route(e, c, p, buf, &len, &dlat);
    const int32_t slot = sim_i_flow_start(e, links, NULL, len, bytes * c->wire, 1.0, phase_bound(c),
                                          lat_ps > 0 ? shifted(lat_ps, dlat) : 0, id, tag, p->src, p->dst);
    if (slot < 0)
        e->fatal = sim_i_fail(e, SIM_ENOMEM, "collective: out of memory starting a flow");
    c->flows_run++;
}

/* The same after the pair's step latency. */
static void start_pair(sim_engine_t *e, int32_t id, int32_t pair, double bytes, int32_t tag) {
    start_pair_after(e, id, pair, bytes, tag, sim_i_coll(e, id)->pairs[pair].lat_ps);
}

/* One coflow over pairs [lo, hi) (skipping unused pairs): `bytes` data bytes per member (the
 * protocol's wire bytes, at its rate cap), after `lat_units` times the slowest pair's latency. With
 * adaptive routing each member is routed in turn against the loads including the members before it
 * (counted in while merging, counted out before the coflow counts in as a whole). */
static void start_coflow(sim_engine_t *e, int32_t id, int32_t lo, int32_t hi, int64_t lat_units, double bytes,
                         int32_t tag) {
    sim_coll_t *c = sim_i_coll(e, id);
    sim_time_ps_t lat = 0;
    int32_t src = -1, dst = -1;
    sim_i_net_merge_begin(e);
    for (int32_t i = lo; i < hi; i++) {
        const sim_pair_t *p = &c->pairs[i];
        if (p->src < 0)
            continue;
        e->colls[id].sent_bytes += bytes;
        int32_t buf[SIM_ROUTE_MAX], len;
        sim_time_ps_t dlat;
        const int32_t *links = pair_route(e, c, p, buf, &len, &dlat);
        if (sim_i_net_merge_add(e, links, len)) {
            e->fatal = sim_i_fail(e, SIM_ENOMEM, "collective: out of memory merging routes");
            return;
        }
        sim_i_load_route(e, links, len, 1);
        const sim_time_ps_t pl = shifted(p->lat_ps, dlat);
        lat = pl > lat ? pl : lat;
        src = src == -1 ? p->src : -2;
        dst = p->dst;
    }
    sim_i_load_merged(e, -1);
    const sim_net_t *n = &e->net;
    const int32_t slot =
        sim_i_flow_start(e, n->merge_links, n->merge_use, n->n_merge, bytes * c->wire, 1.0, phase_bound(c),
                         lat_units * lat, id, tag, src < 0 ? -1 : src, src < 0 ? -1 : dst);
    if (slot < 0)
        e->fatal = sim_i_fail(e, SIM_ENOMEM, "collective: out of memory starting a coflow");
    c->flows_run++;
}

static const sim_phase_t *cur(const sim_engine_t *e, int32_t id) {
    const sim_coll_t *c = sim_i_coll(e, id);
    return &c->phases[c->phase];
}

/* ---- ring --------------------------------------------------------------------------------------- */

static int32_t ring_next(const sim_phase_t *ph, int32_t i) {
    return (i / ph->ring_len) * ph->ring_len + (i + 1) % ph->ring_len;
}

static void ring_try(sim_engine_t *e, int32_t id, int32_t i) {
    sim_coll_t *c = sim_i_coll(e, id);
    const sim_phase_t *ph = cur(e, id);
    const int32_t m = ph->n_rings * ph->ring_len;
    int32_t *sent = c->st, *recvd = c->st + m, *busy = c->st + 2 * m;
    if (busy[i] || sent[i] >= ph->steps || recvd[i] < sent[i])
        return;
    busy[i] = 1;
    start_pair(e, id, ph->pair0 + i, ph->chunk_bytes, i);
}

static void ring_begin(sim_engine_t *e, int32_t id) {
    sim_coll_t *c = sim_i_coll(e, id);
    const sim_phase_t *ph = cur(e, id);
    const int32_t m = ph->n_rings * ph->ring_len;
    if (c->fidelity == SIM_FIDELITY_FAST) {
        c->pending = ph->n_rings;
        for (int32_t j = 0; j < ph->n_rings; j++)
            start_coflow(e, id, ph->pair0 + j * ph->ring_len, ph->pair0 + (j + 1) * ph->ring_len, ph->steps,
                         ph->steps * ph->chunk_bytes, j);
        return;
    }
    memset(c->st, 0, 3 * (size_t)m * sizeof *c->st);
    c->pending = (int64_t)m * ph->steps;
    for (int32_t i = 0; i < m; i++)
        ring_try(e, id, i);
}

static void ring_done(sim_engine_t *e, int32_t id, int32_t i) {
    sim_coll_t *c = sim_i_coll(e, id);
    const sim_phase_t *ph = cur(e, id);
    const int32_t m = ph->n_rings * ph->ring_len, j = ring_next(ph, i);
    c->pending--;
    if (c->fidelity == SIM_FIDELITY_FAST)
        return;
    c->st[i]++;           /* sent */
    c->st[m + j]++;       /* received by the next member */
    c->st[2 * m + i] = 0; /* not busy */
    ring_try(e, id, i);
    ring_try(e, id, j);
}

/* ---- halving-doubling --------------------------------------------------------------------------- */

/* Step s: halving steps exchange M / 2^(s+1) with the partner at distance 2^(log n - 1 - s); then
 * doubling steps exchange 2^a M / n at distance 2^a. */
static void hd_step(const sim_coll_t *c, const sim_phase_t *ph, int32_t s, int32_t *bit, double *bytes) {
    int32_t lg = 0;
    while ((1 << lg) < c->n)
        lg++;
    if (s < ph->hd_rs_steps) {
        *bit = lg - 1 - s;
        *bytes = c->size_bytes / ldexp(1.0, s + 1);
    } else {
        const int32_t a = s - ph->hd_rs_steps;
        *bit = a;
        *bytes = ldexp(c->size_bytes, a) / c->n;
    }
}

static void hd_try(sim_engine_t *e, int32_t id, int32_t r) {
    sim_coll_t *c = sim_i_coll(e, id);
    const sim_phase_t *ph = cur(e, id);
    int32_t *sent = c->st, *busy = c->st + c->n;
    const int32_t s = sent[r];
    if (busy[r] || s >= ph->steps || (s > 0 && !((c->mask[r] >> (s - 1)) & 1)))
        return;
    int32_t bit;
    double bytes;
    hd_step(c, ph, s, &bit, &bytes);
    busy[r] = 1;
    start_pair(e, id, bit * c->n + r, bytes, r);
}

static void hd_begin(sim_engine_t *e, int32_t id) {
    sim_coll_t *c = sim_i_coll(e, id);
    memset(c->st, 0, 2 * (size_t)c->n * sizeof *c->st);
    memset(c->mask, 0, (size_t)c->n * sizeof *c->mask);
    c->pending = (int64_t)c->n * cur(e, id)->steps;
    for (int32_t r = 0; r < c->n; r++)
        hd_try(e, id, r);
}

static void hd_done(sim_engine_t *e, int32_t id, int32_t r) {
    sim_coll_t *c = sim_i_coll(e, id);
    const int32_t s = c->st[r];
    int32_t bit;
    double bytes;
    hd_step(c, cur(e, id), s, &bit, &bytes);
    const int32_t p = r ^ (1 << bit);
    c->st[r]++;
    c->st[c->n + r] = 0;
    c->mask[p] |= (uint64_t)1 << s;
    c->pending--;
    hd_try(e, id, r);
    hd_try(e, id, p);
}

/* ---- pipelined chain ---------------------------------------------------------------------------- */

/* Edge j (pair and tag j) carries chunks 0..k-1 in order, one transfer at a time: its bandwidth is
 * shared in order, not between chunks. Chunk i is ready for edge j once it has crossed edge j - 1
 * (at once for j = 0) and chunk i - W has crossed edge j (W = c->window chunks in flight per edge:
 * NCCL's buffer slots, a slot being free again once its chunk has arrived). Its flow starts when
 * chunk i - 1's ends and pays only what is left of its latency since it became ready, so a chunk's
 * latency overlaps the transfers of the up to W - 1 chunks ahead of it. With W = 1 every chunk pays
 * its whole latency after the previous one: the old one-chunk-in-flight chain. State: st[j] chunks
 * done on edge j, st[n + j] busy; chain_ready[] when each waiting chunk became ready. */
static sim_time_ps_t *chain_ready(sim_coll_t *c, int32_t j, int32_t i) {
    return &c->chain_ready[(int64_t)j * c->chain_slots + i % c->chain_slots];
}

/* Chunk i may have become ready for edge j just now (it arrived, or its window opened). Each chunk
 * becomes ready exactly once: at the later of its two conditions. Its slot is free: the chunk that
 * used it last, i - slots, has crossed the edge (slots = W), or there is none (slots = k). */
static void chain_mark(sim_engine_t *e, int32_t id, int32_t j, int32_t i) {
    sim_coll_t *c = sim_i_coll(e, id);
    const int32_t *done = c->st;
    if (j >= c->n - 1 || i >= cur(e, id)->steps)
        return;
    if ((j == 0 || done[j - 1] > i) && done[j] > i - c->window)
        *chain_ready(c, j, i) = e->now;
}

static void chain_try(sim_engine_t *e, int32_t id, int32_t j) {
    sim_coll_t *c = sim_i_coll(e, id);
    const sim_phase_t *ph = cur(e, id);
    int32_t *done = c->st, *busy = c->st + c->n;
    if (j >= c->n - 1 || busy[j] || done[j] >= ph->steps)
        return;
    const int32_t i = done[j]; /* the next chunk; its window is open (done[j] = i > i - W) */
    if (j > 0 && done[j - 1] <= i)
        return;
    busy[j] = 1;
    const sim_time_ps_t left = *chain_ready(c, j, i) + c->pairs[j].lat_ps - e->now;
    start_pair_after(e, id, j, ph->chunk_bytes, j, left > 0 ? left : 0);
}

/* Fast: one coflow over every edge. On an idle network the chain takes (closed_form.c)
 * (n - 1)(a + c b) + (k - 1) c b + q max(0, a - (W - 1) c b), q = floor((k - 1) / W): latency-bound
 * (a > (W - 1) c b) that is n - 1 + q latencies and n + k - 2 - q (W - 1) chunks of bytes,
 * bandwidth-bound n - 1 latencies and n + k - 2 chunks. The regime is decided with the plan's
 * idle-network a and b (slowest latency, narrowest link, the protocol's cap and efficiency) and the
 * bytes then move at the contended rate b': the coflow takes the form with q max(0, a - (W - 1) c b')
 * replaced by q (a - (W - 1) c b') or 0, never more, so contention that moves the chain across the
 * crossover makes fast mode optimistic by at most that term. */
static void chain_begin(sim_engine_t *e, int32_t id) {
    sim_coll_t *c = sim_i_coll(e, id);
    const sim_phase_t *ph = cur(e, id);
    const int64_t k = ph->steps, w = c->window;
    if (c->fidelity == SIM_FIDELITY_FAST) {
        sim_time_ps_t lat = 0;
        double bw = INFINITY;
        for (int32_t j = 0; j < c->n_pairs; j++) {
            lat = c->pairs[j].lat_ps > lat ? c->pairs[j].lat_ps : lat;
            bw = fmin(bw, c->pairs[j].min_cap);
        }
        bw = fmin(bw, c->bound) / c->wire; /* data bytes/s, as the plan's alpha-beta parameters */
        const int64_t q = (k - 1) / w;
        const int latency_bound = sim_ps_to_s(lat) > (double)(w - 1) * (ph->chunk_bytes / bw);
        const int64_t lat_units = c->n - 1 + (latency_bound ? q : 0);
        const int64_t units = k + c->n - 2 - (latency_bound ? q * (w - 1) : 0);
        c->pending = 1;
        start_coflow(e, id, 0, c->n_pairs, lat_units, (double)units * ph->chunk_bytes, 0);
        return;
    }
    memset(c->st, 0, 2 * (size_t)c->n * sizeof *c->st);
    c->pending = (int64_t)(c->n - 1) * k;
    for (int32_t i = 0; i < c->chain_slots; i++)
        chain_mark(e, id, 0, i);
    chain_try(e, id, 0);
}

static void chain_done(sim_engine_t *e, int32_t id, int32_t j) {
    sim_coll_t *c = sim_i_coll(e, id);
    c->pending--;
    if (c->fidelity == SIM_FIDELITY_FAST)
        return;
    const int32_t i = c->st[j]++;
    c->st[c->n + j] = 0;
    chain_mark(e, id, j, i + c->window);
    chain_mark(e, id, j + 1, i);
    chain_try(e, id, j);
    chain_try(e, id, j + 1);
}

/* ---- double binary tree ------------------------------------------------------------------------- */

/* Per (tree t, rank v): up-started, up-done (edge v -> parent), down-started, down-done (parent -> v).
 * One chunk is in flight per edge and direction. NCCL keeps 8 slots per connection, so a chunk that
 * follows the previous one on its edge back to back is already on its way: it pays no latency. A
 * chunk that waited for its inputs pays the step latency. */
static int32_t *tree_st(sim_coll_t *c, int field, int t, int32_t v) {
    return &c->st[(2 * field + t) * c->n + v];
}

/* Rank v of tree t holds chunk i fully reduced from its subtree. */
static int tree_has_reduced(sim_coll_t *c, int t, int32_t v, int32_t i) {
    for (int k = 0; k < 2; k++) {
        const int32_t ch = c->tree_child[2 * (t * c->n + v) + k];
        if (ch >= 0 && *tree_st(c, 1, t, ch) <= i)
            return 0;
    }
    return 1;
}

/* Start chunk `done` of an edge (pair and tag `edge`) whose last chunk arrived at tree_last[edge]. */
static void tree_start(sim_engine_t *e, int32_t id, int32_t edge, int32_t done) {
    sim_coll_t *c = sim_i_coll(e, id);
    const int back_to_back = done > 0 && c->tree_last[edge] == e->now;
    start_pair_after(e, id, edge, cur(e, id)->chunk_bytes, edge, back_to_back ? 0 : c->pairs[edge].lat_ps);
}

static void tree_up_try(sim_engine_t *e, int32_t id, int t, int32_t v) {
    sim_coll_t *c = sim_i_coll(e, id);
    const int32_t i = *tree_st(c, 0, t, v);
    if (c->tree_parent[t * c->n + v] < 0 || i > *tree_st(c, 1, t, v) || i >= cur(e, id)->steps ||
        !tree_has_reduced(c, t, v, i))
        return;
    ++*tree_st(c, 0, t, v);
    tree_start(e, id, 2 * t * c->n + v, i);
}

/* Edge parent -> v sends chunk i once the parent has its final value: the root after reducing, any
 * other rank after receiving it from its own parent. */
static void tree_down_try(sim_engine_t *e, int32_t id, int t, int32_t v) {
    sim_coll_t *c = sim_i_coll(e, id);
    const int32_t p = v >= 0 ? c->tree_parent[t * c->n + v] : -1;
    if (p < 0)
        return;
    const int32_t i = *tree_st(c, 2, t, v);
    if (i > *tree_st(c, 3, t, v) || i >= cur(e, id)->steps)
        return;
    const int root = c->tree_parent[t * c->n + p] < 0;
    if (root ? !tree_has_reduced(c, t, p, i) : *tree_st(c, 3, t, p) <= i)
        return;
    ++*tree_st(c, 2, t, v);
    tree_start(e, id, (2 * t + 1) * c->n + v, i);
}

static void tree_down_children(sim_engine_t *e, int32_t id, int t, int32_t v) {
    const sim_coll_t *c = sim_i_coll(e, id);
    for (int k = 0; k < 2; k++)
        tree_down_try(e, id, t, c->tree_child[2 * (t * c->n + v) + k]);
}

/* Fast: one coflow. Chunk 0 of both trees crosses 2D edges at (alpha + 2 c beta) each (the two
 * trees' first chunks share a rank's links); the later chunks follow back to back, their latencies
 * hidden, so they add only the busiest link's time, L c beta each. On an idle network the coflow
 * runs at B / L (L units on the busiest link), so it carries 2D 2c / L + (k - 1) c bytes after 2D
 * latencies. */
static void tree_begin(sim_engine_t *e, int32_t id) {
    sim_coll_t *c = sim_i_coll(e, id);
    const sim_phase_t *ph = cur(e, id);
    if (c->fidelity == SIM_FIDELITY_FAST) {
        c->pending = 1;
        const double bytes = 4.0 * c->tree_depth * ph->chunk_bytes / (c->tree_load > 0 ? c->tree_load : 1) +
                             (ph->steps - 1.0) * ph->chunk_bytes;
        start_coflow(e, id, 0, c->n_pairs, 2 * (int64_t)c->tree_depth, bytes, 0);
        return;
    }
    memset(c->st, 0, 8 * (size_t)c->n * sizeof *c->st);
    for (int32_t k = 0; k < 4 * c->n; k++)
        c->tree_last[k] = -1;
    c->pending = 4 * (int64_t)(c->n - 1) * ph->steps;
    for (int t = 0; t < 2; t++)
        for (int32_t v = 0; v < c->n; v++)
            tree_up_try(e, id, t, v);
}

static void tree_done(sim_engine_t *e, int32_t id, int32_t tag) {
    sim_coll_t *c = sim_i_coll(e, id);
    c->pending--;
    if (c->fidelity == SIM_FIDELITY_FAST)
        return;
    const int32_t n = c->n, v = tag % n, t = tag / (2 * n), down = (tag / n) % 2;
    c->tree_last[tag] = e->now;
    if (!down) {
        ++*tree_st(c, 1, t, v);
        const int32_t p = c->tree_parent[t * n + v];
        tree_up_try(e, id, t, v);
        tree_up_try(e, id, t, p);
        if (c->tree_parent[t * n + p] < 0)
            tree_down_children(e, id, t, p);
    } else {
        ++*tree_st(c, 3, t, v);
        tree_down_try(e, id, t, v);
        tree_down_children(e, id, t, v);
    }
}

/* ---- NVLink SHARP ------------------------------------------------------------------------------- */

/* One coflow in both fidelities (one step, like sendrecv): the pairs' routes merged (every link into
 * and out of the switch once), then every link into the switch used nvls_up times and every link out
 * of it nvls_down times, carrying one shard after the slowest pair's latency. On an idle network
 * that is closed_form.c's a + (M / n) max(u_up / B_up, u_down / B_down); under contention max-min
 * gives the switch's traffic one rate, held by its busiest link. */
static void nvls_begin(sim_engine_t *e, int32_t id) {
    sim_coll_t *c = sim_i_coll(e, id);
    const sim_phase_t *ph = cur(e, id);
    sim_net_t *n = &e->net;
    sim_time_ps_t lat = 0;
    sim_i_net_merge_begin(e);
    for (int32_t i = 0; i < c->n_pairs; i++) {
        const sim_pair_t *p = &c->pairs[i];
        if (sim_i_net_merge_add(e, &c->routes[p->route_off], p->route_len)) {
            e->fatal = sim_i_fail(e, SIM_ENOMEM, "collective: out of memory merging routes");
            return;
        }
        lat = p->lat_ps > lat ? p->lat_ps : lat;
    }
    for (int32_t i = 0; i < c->n_pairs; i++) {
        const sim_pair_t *p = &c->pairs[i];
        n->merge_use[n->links[c->routes[p->route_off]].merge_slot] = ph->nvls_up;
        n->merge_use[n->links[c->routes[p->route_off + p->route_len - 1]].merge_slot] = ph->nvls_down;
    }
    /* each member's link into the switch carries nvls_up shards */
    e->colls[id].sent_bytes += (double)c->n_pairs * ph->nvls_up * ph->chunk_bytes;
    c->pending = 1;
    const int32_t slot = sim_i_flow_start(e, n->merge_links, n->merge_use, n->n_merge,
                                          ph->chunk_bytes * c->wire, 1.0, INFINITY, lat, id, 0, -1, -1);
    if (slot < 0)
        e->fatal = sim_i_fail(e, SIM_ENOMEM, "collective: out of memory starting a coflow");
    c->flows_run++;
}

/* ---- InfiniBand SHARP ----------------------------------------------------------------------------- */

/* Coflows in both fidelities, all started at once (NCCL pipelines the three stages chunk by chunk; the
 * pipeline's fill is not charged): per domain, a ring reduce-scatter and a ring allgather, each of
 * g - 1 steps of M / g after as many latencies (the two share the domain's links); per rail, the
 * union of its routes up to its first member and back down, every link once (the switches reduce
 * what comes up and multicast what goes down, so no link carries a rail's data twice), carrying
 * M / g after the rail's aggregation latency. On an idle network: closed_form.c's
 * max((g - 1) a' + 2 (g - 1) (M / g) b', a + (M / g) b). */
static void sharp_begin(sim_engine_t *e, int32_t id) {
    sim_coll_t *c = sim_i_coll(e, id);
    const sim_phase_t *ph = cur(e, id);
    sim_net_t *n = &e->net;
    c->pending = ph->n_rings + 2 * (int64_t)ph->intra_rings;
    for (int32_t d = 0; d < ph->intra_rings; d++)
        for (int k = 0; k < 2; k++) {
            start_coflow(e, id, d * ph->intra_len, (d + 1) * ph->intra_len, ph->steps,
                         ph->steps * ph->intra_chunk_bytes, ph->n_rings + 2 * d + k);
            if (e->fatal)
                return;
        }
    for (int32_t j = 0; j < ph->n_rings; j++) {
        sim_i_net_merge_begin(e);
        for (int32_t i = 0; i < ph->ring_len; i++) {
            const sim_pair_t *p = &c->pairs[ph->pair0 + j * ph->ring_len + i];
            if (sim_i_net_merge_add(e, &c->routes[p->route_off], p->route_len)) {
                e->fatal = sim_i_fail(e, SIM_ENOMEM, "collective: out of memory merging routes");
                return;
            }
        }
        for (int32_t k = 0; k < n->n_merge; k++)
            n->merge_use[k] = 1.0;
        e->colls[id].sent_bytes += (double)ph->ring_len * ph->chunk_bytes;
        const int32_t slot =
            sim_i_flow_start(e, n->merge_links, n->merge_use, n->n_merge, ph->chunk_bytes * c->wire, 1.0,
                             INFINITY, sim_i_sharp_lat_ps(e, c, ph, j), id, j, -1, -1);
        if (slot < 0) {
            e->fatal = sim_i_fail(e, SIM_ENOMEM, "collective: out of memory starting a coflow");
            return;
        }
        c->flows_run++;
    }
}

/* ---- dispatch ----------------------------------------------------------------------------------- */

void sim_i_phase_begin(sim_engine_t *e, int32_t id) {
    sim_coll_t *c = sim_i_coll(e, id);
    switch (cur(e, id)->kind) {
    case SIM_PH_RING:
        ring_begin(e, id);
        break;
    case SIM_PH_HD:
        hd_begin(e, id);
        break;
    case SIM_PH_CHAIN:
        chain_begin(e, id);
        break;
    case SIM_PH_TREE:
        tree_begin(e, id);
        break;
    case SIM_PH_P2P:
        c->pending = 1;
        start_pair(e, id, 0, c->size_bytes, 0);
        break;
    case SIM_PH_NVLS:
        nvls_begin(e, id);
        break;
    case SIM_PH_SHARP:
        sharp_begin(e, id);
        break;
    }
}

void sim_i_phase_flow_done(sim_engine_t *e, int32_t id, int32_t tag) {
    switch (cur(e, id)->kind) {
    case SIM_PH_RING:
        ring_done(e, id, tag);
        break;
    case SIM_PH_HD:
        hd_done(e, id, tag);
        break;
    case SIM_PH_CHAIN:
        chain_done(e, id, tag);
        break;
    case SIM_PH_TREE:
        tree_done(e, id, tag);
        break;
    case SIM_PH_P2P:
    case SIM_PH_NVLS:
    case SIM_PH_SHARP:
        sim_i_coll(e, id)->pending--;
        break;
    }
}
