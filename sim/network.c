/* network.c - the flow-level network: links, flows, the lazy completion heap and the batched,
 * component-local max-min re-solve (docs/engine.md, "Flow network").
 *
 * A flow lives in three phases: LATENCY (it waits for the sum of its links' latencies; no
 * bandwidth used), ACTIVE (it sits in every link's list and drains at its max-min rate) and FREE.
 * The flow heap is an indexed binary heap of flow slots keyed by (time, seq) of the flow's next
 * transition: its latency end, then its completion. Starts and ends mark their links dirty; the
 * engine calls sim_i_net_solve once per timestamp, which takes the connected component of the
 * dirty links (links -> active flows -> links, an epoch counter makes marking O(1)), re-solves
 * max-min on it only, and re-keys only the flows whose rate changed: remaining -= old rate x
 * elapsed, new completion = now + remaining / new rate, rounded up to a whole picosecond. Per link,
 * bytes and busy time are integrated lazily: a link's load changes only when it is in a solved
 * component. Known limit: rates that change by less than 1e-12 relative are kept as they were.
 *
 * Link loads for adaptive routing (UGAL; only when the network has a route_load callback). BookSim's
 * UGAL weighs a path's hops by the queue occupancy it would join; at flow level the analogue of a
 * queue is the set of flows sharing a link. So a link's load counts the flows routed over it that
 * have started (latency phase included) and not yet ended, each as many times as it crosses the
 * link (a coflow's merged route), scaled by C_ref / C_link, C_ref being the smallest usable network
 * link capacity: a newcomer's fair share of link j is C_j / (units_j + 1), so 1 + load_j is how many
 * times slower than an idle reference link j would serve it, and topo's cost hops x (1 + the
 * largest load on the path) compares paths in those units (on a dragonfly, whose router links all
 * have one capacity, the load is the flow count itself). Counting at route time, not at activation,
 * means flows started at one timestamp (a collective phase) see the ones routed just before them.
 * Counts are integers and the loads are recomputed from them, so no rounding accumulates and the
 * choices are reproducible. Utilisation (used rate / capacity) would not do: it is 0 until the next
 * re-solve, so simultaneous flows would all see an idle network, and it saturates at 1, so a 1-hop
 * minimal path (cost at most 2) would never be left for a Valiant path of 2 hops or more, however
 * many flows share it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "sim_heap.h"
#include "sim_internal.h"

#define RATE_REL_EPS 1e-12

/* ---- the indexed flow heap ---------------------------------------------------------------------- */

/* Entries carry their key, so sifting compares within the heap array; the heap writes each moved
 * entry's index back into its flow record (heap_pos), which re-keying and removal start from. */
static int fh_less(const sim_fh_ent_t *a, const sim_fh_ent_t *b) {
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

#define FH_PLACE(n, h, i) ((n)->flows[(h)[i].slot].heap_pos = (int32_t)(i))

SIM_HEAP_DEFINE(fh, sim_fh_ent_t, sim_net_t *, fh_less, FH_PLACE)

static void fh_remove(sim_net_t *n, int32_t slot) {
    const int32_t i = n->flows[slot].heap_pos;
    if (i < 0)
        return;
    n->flows[slot].heap_pos = -1;
    fh_remove_at(n->fheap, &n->fheap_n, (size_t)i, n);
}

/* Set a flow's key and (re)place it in the heap. */
static int fh_rekey(sim_engine_t *e, int32_t slot, sim_time_ps_t t) {
    sim_net_t *n = &e->net;
    sim_flow_t *f = &n->flows[slot];
    const sim_fh_ent_t x = {t, e->seq++, slot};
    if (f->heap_pos >= 0) {
        n->fheap[f->heap_pos] = x;
        fh_fix(n->fheap, n->fheap_n, (size_t)f->heap_pos, n);
        return SIM_OK;
    }
    if ((int64_t)n->fheap_n == n->fheap_cap &&
        sim_i_grow((void **)&n->fheap, &n->fheap_cap, n->fheap_cap + 1, sizeof *n->fheap))
        return SIM_ENOMEM;
    fh_push(n->fheap, &n->fheap_n, &x, n);
    return SIM_OK;
}

/* ---- hop blocks and flow slots ------------------------------------------------------------------ */

static int size_class(int32_t n_hops) {
    int k = 0;
    while ((1 << k) < n_hops)
        k++;
    return k;
}

/* Hop blocks of 2^k hops, recycled through per-class free lists threaded through .link. */
static int32_t hops_alloc(sim_net_t *n, int k) {
    const int32_t head = n->hop_free[k];
    if (head >= 0) {
        n->hop_free[k] = n->hops[head].link;
        return head;
    }
    const int64_t need = n->n_hops_used + ((int64_t)1 << k);
    if (need > INT32_MAX || sim_i_grow((void **)&n->hops, &n->cap_hops, need, sizeof *n->hops))
        return -1;
    const int32_t off = (int32_t)n->n_hops_used;
    n->n_hops_used = need;
    return off;
}

static void hops_free(sim_net_t *n, int32_t off, int k) {
    n->hops[off].link = n->hop_free[k];
    n->hop_free[k] = off;
}

static int32_t slot_alloc(sim_net_t *n) {
    if (n->free_flow >= 0) {
        const int32_t s = n->free_flow;
        n->free_flow = n->flows[s].next_free;
        return s;
    }
    if (sim_i_grow32((void **)&n->flows, &n->cap_flows, (int64_t)n->n_flow_slots + 1, sizeof *n->flows))
        return -1;
    const int32_t s = n->n_flow_slots++;
    n->flows[s].gen = 0;
    return s;
}

static void slot_free(sim_net_t *n, int32_t s) {
    sim_flow_t *f = &n->flows[s];
    hops_free(n, f->hop_off, f->hop_class);
    f->state = SIM_FLOW_FREE;
    f->gen++;
    f->next_free = n->free_flow;
    n->free_flow = s;
}

/* ---- set-up and tear-down ----------------------------------------------------------------------- */

/* The load arrays of adaptive routing, once per engine: C_ref is the smallest usable capacity of a
 * network link (of any link if there is none). */
static int loads_init(sim_engine_t *e, const sim_network_desc_t *d) {
    sim_net_t *n = &e->net;
    const size_t nl = (size_t)(d->n_links > 0 ? d->n_links : 1);
    n->load_units = alloc_calloc(nl, sizeof *n->load_units);
    n->load_scale = alloc_calloc(nl, sizeof *n->load_scale);
    n->link_load = alloc_calloc(nl, sizeof *n->link_load);
    if (!n->load_units || !n->load_scale || !n->link_load)
        return sim_i_fail(e, SIM_ENOMEM, "network: out of memory for the link loads of %d links", d->n_links);
    double ref = INFINITY, ref_any = INFINITY;
    for (int32_t i = 0; i < d->n_links; i++) {
        const int kind = d->link_kind ? d->link_kind(d->route_ctx, i) : SIM_LINK_NETWORK;
        ref_any = fmin(ref_any, n->links[i].cap);
        if (kind == SIM_LINK_NETWORK)
            ref = fmin(ref, n->links[i].cap);
    }
    if (!isfinite(ref))
        ref = ref_any;
    for (int32_t i = 0; i < d->n_links; i++)
        n->load_scale[i] = ref / n->links[i].cap;
    return SIM_OK;
}

static void load_add(sim_net_t *n, int32_t link, int32_t units) {
    n->load_units[link] += units;
    n->link_load[link] = (double)n->load_units[link] * n->load_scale[link];
}

int sim_i_net_init(sim_engine_t *e, const sim_network_desc_t *d) {
    sim_net_t *n = &e->net;
    memset(n, 0, sizeof *n);
    n->free_flow = -1;
    for (int k = 0; k < 32; k++)
        n->hop_free[k] = -1;
    n->epoch = n->dirty_epoch = n->merge_epoch = 1;
    n->n_links = d->n_links;
    n->links = alloc_calloc((size_t)(d->n_links > 0 ? d->n_links : 1), sizeof *n->links);
    if (!n->links)
        return sim_i_fail(e, SIM_ENOMEM, "network: out of memory for %d links", d->n_links);
    for (int32_t i = 0; i < d->n_links; i++) {
        const double cap = d->capacity_bytes_per_s[i], lat = d->latency_s[i];
        if (!(cap > 0.0) || !isfinite(cap))
            return sim_i_fail(e, SIM_EINVAL,
                              "network: link %d: capacity_bytes_per_s %g must be > 0 and finite", i, cap);
        if (!(lat >= 0.0 && lat <= SIM_LINK_LATENCY_MAX_S))
            return sim_i_fail(e, SIM_EINVAL, "network: link %d: latency_s %g must be in [0, %g] s", i, lat,
                              SIM_LINK_LATENCY_MAX_S);
        const int kind = d->link_kind ? d->link_kind(d->route_ctx, i) : SIM_LINK_NETWORK;
        if (kind < 0 || kind >= SIM_LINK_KIND_COUNT)
            return sim_i_fail(e, SIM_EINVAL, "network: link %d: kind %d is not a sim_link_kind_t", i, kind);
        n->links[i].nominal = cap;
        const double eff = e->cfg.use_link_tech_efficiency && d->link_tech_efficiency
                               ? d->link_tech_efficiency[i]
                               : e->cfg.link_kind_efficiency[kind];
        if (!(eff > 0.0 && eff <= 1.0))
            return sim_i_fail(e, SIM_EINVAL, "network: link %d: efficiency %g must be in (0, 1]", i, eff);
        n->links[i].cap = cap * e->cfg.link_efficiency * eff;
        n->links[i].lat_ps = sim_s_to_ps(lat);
    }
    return d->route_load ? loads_init(e, d) : SIM_OK;
}

void sim_i_net_destroy(sim_net_t *n) {
    if (n->links)
        for (int32_t i = 0; i < n->n_links; i++)
            free(n->links[i].ents);
    free(n->links);
    free(n->flows);
    free(n->hops);
    free(n->fheap);
    free(n->dirty);
    free(n->comp_flows);
    free(n->comp_links);
    free(n->lheap);
    free(n->bheap);
    free(n->merge_links);
    free(n->merge_use);
    free(n->load_units);
    free(n->load_scale);
    free(n->link_load);
    free(n->class_bytes);
    free(n->gpu_class);
    memset(n, 0, sizeof *n);
}

/* ---- flows -------------------------------------------------------------------------------------- */

static sim_flow_info_t flow_info(const sim_net_t *n, int32_t slot) {
    const sim_flow_t *f = &n->flows[slot];
    sim_flow_info_t info = {.flow = ((int64_t)f->gen << 32) | (int64_t)slot,
                            .src_gpu = f->src,
                            .dst_gpu = f->dst,
                            .bytes = f->bytes,
                            .coll = f->coll,
                            .n_links = f->n_hops};
    return info;
}

static int mark_dirty(sim_net_t *n, int32_t link) {
    sim_link_t *l = &n->links[link];
    if (l->dirty == n->dirty_epoch)
        return SIM_OK;
    if (sim_i_grow32((void **)&n->dirty, &n->cap_dirty, (int64_t)n->n_dirty + 1, sizeof *n->dirty))
        return SIM_ENOMEM;
    l->dirty = n->dirty_epoch;
    n->dirty[n->n_dirty++] = link;
    return SIM_OK;
}

/* Allocate and fill a flow slot; it is not yet in the heap. */
static int32_t flow_new(sim_engine_t *e, const int32_t *links, const double *use, int32_t n_hops,
                        double bytes, double weight, double bound, sim_time_ps_t lat_ps) {
    sim_net_t *n = &e->net;
    const int k = size_class(n_hops > 0 ? n_hops : 1);
    const int32_t off = hops_alloc(n, k);
    if (off < 0)
        return SIM_ENOMEM;
    const int32_t slot = slot_alloc(n);
    if (slot < 0) {
        hops_free(n, off, k);
        return SIM_ENOMEM;
    }
    sim_flow_t *f = &n->flows[slot];
    const uint32_t gen = f->gen;
    memset(f, 0, sizeof *f);
    f->gen = gen;
    f->heap_pos = -1;
    f->hop_off = off;
    f->hop_class = k;
    f->n_hops = n_hops;
    for (int32_t i = 0; i < n_hops; i++) {
        n->hops[off + i].link = links[i];
        n->hops[off + i].pos = -1;
        n->hops[off + i].use = use ? use[i] : 1.0;
    }
    f->bytes = f->remaining = bytes;
    f->weight = weight;
    f->bound = bound;
    f->lat_ps = lat_ps;
    f->coll = -1;
    f->src = f->dst = -1;
    return slot;
}

/* Enter the latency phase now; with adaptive routing the flow counts in its links' loads from now
 * until it ends. */
static int flow_begin(sim_engine_t *e, int32_t slot) {
    sim_net_t *n = &e->net;
    sim_flow_t *f = &n->flows[slot];
    for (int32_t i = 0; n->load_units && i < f->n_hops; i++)
        load_add(n, n->hops[f->hop_off + i].link, (int32_t)n->hops[f->hop_off + i].use);
    f->state = SIM_FLOW_LATENCY;
    f->t_start = e->now;
    e->stats.flows_started++;
    if (e->has_obs && e->obs.flow_start) {
        const sim_flow_info_t info = flow_info(&e->net, slot);
        e->obs.flow_start(e->obs.ctx, e->now, &info);
    }
    return fh_rekey(e, slot, sim_i_add_ps(e->now, f->lat_ps));
}

int32_t sim_i_flow_start(sim_engine_t *e, const int32_t *links, const double *use, int32_t n_hops,
                         double bytes, double weight, double bound, sim_time_ps_t lat_ps, int32_t coll,
                         int32_t tag, int32_t src, int32_t dst) {
    const int32_t slot = flow_new(e, links, use, n_hops, bytes, weight, bound, lat_ps);
    if (slot < 0)
        return slot;
    sim_flow_t *f = &e->net.flows[slot];
    f->coll = coll;
    f->tag = tag;
    f->src = src;
    f->dst = dst;
    const int rc = flow_begin(e, slot);
    return rc ? rc : slot;
}

int sim_i_flow_activate_pending(sim_engine_t *e, int32_t slot) {
    return flow_begin(e, slot);
}

/* Latency over: join every link's list (or finish at once if there is nothing to drain). */
static int flow_activate(sim_engine_t *e, int32_t slot) {
    sim_net_t *n = &e->net;
    sim_flow_t *f = &n->flows[slot];
    fh_remove(n, slot);
    f->state = SIM_FLOW_ACTIVE;
    f->t_last = e->now;
    f->rate = 0.0;
    for (int32_t i = 0; i < f->n_hops; i++) {
        sim_hop_t *h = &n->hops[f->hop_off + i];
        sim_link_t *l = &n->links[h->link];
        if (sim_i_grow32((void **)&l->ents, &l->cap_ents, (int64_t)l->n_ents + 1, sizeof *l->ents))
            return SIM_ENOMEM;
        h->pos = l->n_ents;
        l->ents[l->n_ents++] = (sim_link_ent_t){slot, i};
        if (mark_dirty(n, h->link))
            return SIM_ENOMEM;
    }
    return SIM_OK;
}

static void flow_complete(sim_engine_t *e, int32_t slot) {
    sim_net_t *n = &e->net;
    sim_flow_t *f = &n->flows[slot];
    fh_remove(n, slot);
    if (f->state == SIM_FLOW_ACTIVE) {
        for (int32_t i = 0; i < f->n_hops; i++) {
            const sim_hop_t *h = &n->hops[f->hop_off + i];
            sim_link_t *l = &n->links[h->link];
            const sim_link_ent_t moved = l->ents[--l->n_ents];
            if (h->pos != l->n_ents) {
                l->ents[h->pos] = moved;
                n->hops[n->flows[moved.flow].hop_off + moved.hop].pos = h->pos;
            }
            (void)mark_dirty(n, h->link); /* cannot fail: the dirty list had room when it joined */
        }
    }
    for (int32_t i = 0; n->load_units && i < f->n_hops; i++)
        load_add(n, n->hops[f->hop_off + i].link, -(int32_t)n->hops[f->hop_off + i].use);
    f->remaining = 0.0;
    if (n->class_bytes) { /* the flow's bytes to its class: its collective's first member's, else its source's
                           */
        const int32_t g = f->coll >= 0 ? sim_op_gpu(e, e->colls[f->coll].first_op) : f->src;
        const int32_t c = g >= 0 && g < e->n_gpus ? n->gpu_class[g] : -1;
        for (int32_t i = 0; c >= 0 && i < f->n_hops; i++) {
            const sim_hop_t *h = &n->hops[f->hop_off + i];
            n->class_bytes[(int64_t)h->link * n->n_classes + c] += h->use * f->bytes;
        }
    }
    if (e->has_obs && e->obs.flow_end) {
        const sim_flow_info_t info = flow_info(n, slot);
        e->obs.flow_end(e->obs.ctx, e->now, &info);
    }
    const int32_t coll = f->coll, tag = f->tag;
    slot_free(n, slot);
    if (coll >= 0)
        sim_i_coll_flow_done(e, coll, tag);
}

sim_time_ps_t sim_i_net_next_time(const sim_engine_t *e, uint64_t *seq) {
    const sim_net_t *n = &e->net;
    if (n->fheap_n == 0)
        return SIM_TIME_NEVER;
    *seq = n->fheap[0].seq;
    return n->fheap[0].t;
}

void sim_i_net_pop(sim_engine_t *e) {
    sim_net_t *n = &e->net;
    const int32_t slot = n->fheap[0].slot;
    sim_flow_t *f = &n->flows[slot];
    e->stats.flow_events++;
    if (f->state == SIM_FLOW_LATENCY && f->remaining > 0.0 && f->n_hops > 0) {
        if (flow_activate(e, slot))
            e->fatal = sim_i_fail(e, SIM_ENOMEM, "network: out of memory activating a flow");
        return;
    }
    flow_complete(e, slot);
}

int sim_i_net_dirty(const sim_engine_t *e) {
    return e->net.n_dirty > 0;
}

/* ---- the batched re-solve ----------------------------------------------------------------------- */

static int push_i32(int32_t **arr, int32_t *cap, int32_t n, int32_t v) {
    if (sim_i_grow32((void **)arr, cap, (int64_t)n + 1, sizeof **arr))
        return SIM_ENOMEM;
    (*arr)[n] = v;
    return SIM_OK;
}

/* The connected component of the dirty links: links -> active flows -> their links. */
static int component(sim_net_t *n, int32_t *nf_out, int32_t *nl_out) {
    const uint32_t ep = ++n->epoch;
    int32_t nf = 0, nl = 0;
    for (int32_t i = 0; i < n->n_dirty; i++) {
        sim_link_t *l = &n->links[n->dirty[i]];
        if (l->mark == ep)
            continue;
        l->mark = ep;
        if (push_i32(&n->comp_links, &n->cap_comp_links, nl++, n->dirty[i]))
            return SIM_ENOMEM;
    }
    for (int32_t i = 0; i < nl; i++) {
        const sim_link_t *l = &n->links[n->comp_links[i]];
        for (int32_t j = 0; j < l->n_ents; j++) {
            const int32_t slot = l->ents[j].flow;
            sim_flow_t *f = &n->flows[slot];
            if (f->mark == ep)
                continue;
            f->mark = ep;
            if (push_i32(&n->comp_flows, &n->cap_comp_flows, nf++, slot))
                return SIM_ENOMEM;
            for (int32_t h = 0; h < f->n_hops; h++) {
                const int32_t link = n->hops[f->hop_off + h].link;
                if (n->links[link].mark == ep)
                    continue;
                n->links[link].mark = ep;
                if (push_i32(&n->comp_links, &n->cap_comp_links, nl++, link))
                    return SIM_ENOMEM;
            }
        }
    }
    *nf_out = nf;
    *nl_out = nl;
    return SIM_OK;
}

static sim_time_ps_t completion_ps(sim_time_ps_t now, double remaining, double rate) {
    const double dt = ceil(remaining / rate * (double)SIM_PS_PER_S);
    if (!(dt < 4e18))
        return SIM_I_TIME_SATURATED;
    return sim_i_add_ps(now, dt < 1.0 ? 1 : (sim_time_ps_t)dt);
}

/* Apply the solver's rates: bring remaining up to date and re-key only flows whose rate changed. */
static int apply_rates(sim_engine_t *e, int32_t nf) {
    sim_net_t *n = &e->net;
    for (int32_t i = 0; i < nf; i++) {
        const int32_t slot = n->comp_flows[i];
        sim_flow_t *f = &n->flows[slot];
        const double r = f->new_rate;
        if (fabs(r - f->rate) <= RATE_REL_EPS * fmax(r, f->rate) && f->heap_pos >= 0)
            continue;
        f->remaining -= f->rate * (double)(e->now - f->t_last) / (double)SIM_PS_PER_S;
        if (f->remaining < 0.0)
            f->remaining = 0.0;
        f->t_last = e->now;
        f->rate = r;
        e->stats.rate_changes++;
        if (fh_rekey(e, slot, completion_ps(e->now, f->remaining, r)))
            return SIM_ENOMEM;
    }
    return SIM_OK;
}

/* Integrate each component link's statistics up to now and set its new load. */
static void update_links(sim_engine_t *e, int32_t nl) {
    sim_net_t *n = &e->net;
    for (int32_t i = 0; i < nl; i++) {
        const int32_t id = n->comp_links[i];
        sim_link_t *l = &n->links[id];
        const sim_time_ps_t dt = e->now - l->t_last;
        l->bytes += l->load * (double)dt / (double)SIM_PS_PER_S;
        if (l->load > 0.0)
            l->busy_ps += dt;
        l->t_last = e->now;
        double load = 0.0;
        for (int32_t j = 0; j < l->n_ents; j++) {
            const sim_link_ent_t *en = &l->ents[j];
            load += n->hops[n->flows[en->flow].hop_off + en->hop].use * n->flows[en->flow].rate;
        }
        if (load == l->load)
            continue;
        l->load = load;
        const double util = load / l->nominal;
        if (util > l->peak_util)
            l->peak_util = util;
        if (e->has_obs && e->obs.counter) {
            const sim_counter_t c = {.kind = SIM_COUNTER_LINK_UTILIZATION, .link = id, .value = util};
            e->obs.counter(e->obs.ctx, e->now, &c);
        }
    }
}

void sim_i_net_solve(sim_engine_t *e) {
    sim_net_t *n = &e->net;
    int32_t nf = 0, nl = 0;
    int rc = component(n, &nf, &nl);
    if (!rc && nf > 0)
        rc = sim_i_maxmin_solve(n, nf, nl);
    if (!rc)
        rc = apply_rates(e, nf);
    if (rc) {
        e->fatal = sim_i_fail(e, SIM_ENOMEM, "network: out of memory in the max-min re-solve (%d flows)", nf);
        return;
    }
    update_links(e, nl);
    n->n_dirty = 0;
    n->dirty_epoch++;
    e->stats.solves++;
    e->stats.solve_flows += nf;
    e->stats.solve_links += nl;
}

/* ---- route merging for coflows ------------------------------------------------------------------ */

void sim_i_net_merge_begin(sim_engine_t *e) {
    e->net.merge_epoch++;
    e->net.n_merge = 0;
}

int sim_i_net_merge_add(sim_engine_t *e, const int32_t *links, int32_t cnt) {
    sim_net_t *n = &e->net;
    for (int32_t i = 0; i < cnt; i++) {
        sim_link_t *l = &n->links[links[i]];
        if (l->merge_mark == n->merge_epoch) {
            n->merge_use[l->merge_slot] += 1.0;
            continue;
        }
        if (n->n_merge == n->cap_merge) {
            int32_t cap = n->cap_merge, cap2 = n->cap_merge;
            if (sim_i_grow32((void **)&n->merge_links, &cap, (int64_t)n->n_merge + 1,
                             sizeof *n->merge_links) ||
                sim_i_grow32((void **)&n->merge_use, &cap2, (int64_t)n->n_merge + 1, sizeof *n->merge_use))
                return SIM_ENOMEM;
            n->cap_merge = cap < cap2 ? cap : cap2;
        }
        l->merge_mark = n->merge_epoch;
        l->merge_slot = n->n_merge;
        n->merge_links[n->n_merge] = links[i];
        n->merge_use[n->n_merge++] = 1.0;
    }
    return SIM_OK;
}

/* ---- adaptive routing --------------------------------------------------------------------------- */

int32_t sim_i_route_now(sim_engine_t *e, int32_t src, int32_t dst, int32_t *buf) {
    const sim_net_t *n = &e->net;
    if (!e->route_load)
        return -1;
    const int len = e->route_load(e->route_ctx, src, dst, n->link_load, buf, SIM_ROUTE_MAX);
    if (len < 1 || len > SIM_ROUTE_MAX)
        return -1;
    for (int j = 0; j < len; j++) {
        if (buf[j] < 0 || buf[j] >= n->n_links)
            return -1;
        for (int k = 0; k < j; k++)
            if (buf[k] == buf[j])
                return -1;
    }
    return len;
}

sim_time_ps_t sim_i_route_lat_ps(const sim_engine_t *e, const int32_t *links, int32_t n) {
    sim_time_ps_t lat = 0;
    for (int32_t i = 0; i < n; i++)
        lat = sim_i_add_ps(lat, e->net.links[links[i]].lat_ps);
    return lat;
}

void sim_i_load_route(sim_engine_t *e, const int32_t *links, int32_t n, int32_t units) {
    for (int32_t i = 0; e->net.load_units && i < n; i++)
        load_add(&e->net, links[i], units);
}

void sim_i_load_merged(sim_engine_t *e, int32_t sign) {
    sim_net_t *n = &e->net;
    for (int32_t i = 0; n->load_units && i < n->n_merge; i++)
        load_add(n, n->merge_links[i], sign * (int32_t)n->merge_use[i]);
}

/* ---- public: raw flows and link statistics ------------------------------------------------------ */

int sim_flow_add(sim_engine_t *e, const sim_flow_desc_t *d, sim_flow_id_t *out) {
    if (!d || !d->links || d->n_links < 1 || d->n_links > SIM_ROUTE_MAX)
        return sim_i_fail(e, SIM_EINVAL, "sim_flow_add: n_links %d must be in 1..%d", d ? d->n_links : 0,
                          SIM_ROUTE_MAX);
    if (!(d->bytes >= 0.0) || !isfinite(d->bytes))
        return sim_i_fail(e, SIM_EINVAL, "sim_flow_add: bytes %g must be >= 0 and finite", d->bytes);
    if (d->weight < 0.0 || d->bound_bytes_per_s < 0.0 || !isfinite(d->weight))
        return sim_i_fail(e, SIM_EINVAL, "sim_flow_add: weight %g and bound %g must be >= 0", d->weight,
                          d->bound_bytes_per_s);
    if (d->start_ps < e->now)
        return sim_i_fail(e, SIM_EINVAL, "sim_flow_add: start_ps %lld is before now (%lld)",
                          (long long)d->start_ps, (long long)e->now);
    sim_time_ps_t lat = 0;
    for (int32_t i = 0; i < d->n_links; i++) {
        if (d->links[i] < 0 || d->links[i] >= e->net.n_links)
            return sim_i_fail(e, SIM_EINVAL, "sim_flow_add: links[%d] = %d is not a link (0..%d)", i,
                              d->links[i], e->net.n_links - 1);
        for (int32_t j = 0; j < i; j++)
            if (d->links[j] == d->links[i])
                return sim_i_fail(e, SIM_EINVAL, "sim_flow_add: link %d appears twice in the route",
                                  d->links[i]);
        lat = sim_i_add_ps(lat, e->net.links[d->links[i]].lat_ps);
    }
    const double w = d->weight > 0.0 ? d->weight : 1.0;
    const double b = d->bound_bytes_per_s > 0.0 ? d->bound_bytes_per_s : INFINITY;
    const int32_t slot = flow_new(e, d->links, NULL, d->n_links, d->bytes, w, b, lat);
    if (slot < 0)
        return sim_i_fail(e, SIM_ENOMEM, "sim_flow_add: out of memory");
    e->net.flows[slot].state = SIM_FLOW_PENDING;
    if (sim_i_schedule(e, d->start_ps, SIM_EV_FLOW_START, slot, e->net.flows[slot].gen))
        return sim_i_fail(e, SIM_ENOMEM, "sim_flow_add: out of memory");
    if (out)
        *out = ((int64_t)e->net.flows[slot].gen << 32) | (int64_t)slot;
    return SIM_OK;
}

double sim_flow_rate(const sim_engine_t *e, sim_flow_id_t id) {
    const int64_t slot = id & 0xffffffffLL;
    if (id < 0 || slot >= e->net.n_flow_slots)
        return -1.0;
    const sim_flow_t *f = &e->net.flows[slot];
    if (f->gen != (uint32_t)(id >> 32) || f->state == SIM_FLOW_FREE)
        return -1.0;
    return f->state == SIM_FLOW_ACTIVE ? f->rate : 0.0;
}

int sim_link_stats(const sim_engine_t *e, int32_t link, sim_link_stats_t *out) {
    if (link < 0 || link >= e->net.n_links)
        return SIM_EINVAL;
    const sim_link_t *l = &e->net.links[link];
    const sim_time_ps_t dt = e->now - l->t_last;
    out->bytes = l->bytes + l->load * (double)dt / (double)SIM_PS_PER_S;
    out->busy_ps = l->busy_ps + (l->load > 0.0 ? dt : 0);
    out->utilization = e->now > 0 ? out->bytes / (l->nominal * (double)e->now / (double)SIM_PS_PER_S) : 0.0;
    out->peak_utilization = l->peak_util;
    out->load_bytes_per_s = l->load;
    return SIM_OK;
}

int sim_engine_set_link_classes(sim_engine_t *e, int32_t n_classes, const int32_t *class_of_gpu) {
    sim_net_t *n = &e->net;
    if (e->started)
        return sim_i_fail(e, SIM_ESTATE, "sim_engine_set_link_classes: the run has started");
    if (n_classes < 1 || n_classes > 1 << 16 || !class_of_gpu)
        return sim_i_fail(e, SIM_EINVAL, "sim_engine_set_link_classes: n_classes %d; allowed: 1..65536",
                          (int)n_classes);
    for (int32_t g = 0; g < e->n_gpus; g++)
        if (class_of_gpu[g] < -1 || class_of_gpu[g] >= n_classes)
            return sim_i_fail(e, SIM_EINVAL, "sim_engine_set_link_classes: GPU %d: class %d; allowed: -1..%d",
                              (int)g, (int)class_of_gpu[g], (int)n_classes - 1);
    double *b = alloc_calloc((size_t)(n->n_links > 0 ? n->n_links : 1) * (size_t)n_classes, sizeof *b);
    int32_t *c = alloc_malloc((size_t)(e->n_gpus > 0 ? e->n_gpus : 1) * sizeof *c);
    if (!b || !c) {
        free(b);
        free(c);
        return sim_i_fail(e, SIM_ENOMEM, "sim_engine_set_link_classes: out of memory");
    }
    memcpy(c, class_of_gpu, (size_t)e->n_gpus * sizeof *c);
    free(n->class_bytes);
    free(n->gpu_class);
    n->class_bytes = b;
    n->gpu_class = c;
    n->n_classes = n_classes;
    return SIM_OK;
}

double sim_link_class_bytes(const sim_engine_t *e, int32_t link, int32_t c) {
    const sim_net_t *n = &e->net;
    if (!n->class_bytes || link < 0 || link >= n->n_links || c < 0 || c >= n->n_classes)
        return 0.0;
    return n->class_bytes[(int64_t)link * n->n_classes + c];
}

/* Keep the k best (utilisation desc, id asc) in the caller's arrays by insertion: k is small. */
int32_t sim_links_busiest(const sim_engine_t *e, int32_t k, int32_t *links, double *utilization) {
    int32_t n = 0;
    for (int32_t id = 0; id < e->net.n_links && k > 0; id++) {
        sim_link_stats_t ls;
        sim_link_stats(e, id, &ls);
        if (!(ls.bytes > 0.0) || (n == k && ls.utilization <= utilization[k - 1]))
            continue;
        int32_t i = n < k ? n++ : k - 1;
        for (; i > 0 && ls.utilization > utilization[i - 1]; i--) {
            links[i] = links[i - 1];
            utilization[i] = utilization[i - 1];
        }
        links[i] = id;
        utilization[i] = ls.utilization;
    }
    return n;
}
