/* maxmin.c - exact weighted max-min fair rates by progressive filling, bottleneck first
 * (docs/engine.md, "Max-min by progressive filling"; the same algorithm as SimGrid's lmm MaxMin
 * solver).
 *
 * Every unfrozen flow f grows at rate s * w_f as a common level s rises. Link j saturates at
 * s_j = rem_j / sum over unfrozen f on j of use_fj * w_f, where rem_j is its capacity minus what frozen
 * flows use. The link with the smallest s_j is the next bottleneck: its unfrozen flows freeze at
 * s_j * w_f, which lowers rem and the weight sums of their other links. A bounded flow is a
 * bottleneck of its own at level bound_f / w_f. Links sit in a min-heap keyed by (share, link id),
 * one entry per link; bounded flows in a second heap keyed by bound / w.
 * Lazy keys: freezing a flow at level s <= s_j can only raise s_j (rem_j and the weight sum drop by
 * use x and use w with x = s w), so a link's heap key stays a lower bound of its share. The loop
 * pops the top; if its link changed since (a version per link) it is re-pushed with the current
 * share, otherwise it is the true minimum. This avoids one push per (frozen flow, link).
 * Cost: O(sum of route lengths x log(links)) per solve, over the component given only.
 * Ties are broken by link id, so the result never depends on heap layout. A flow alone on all its
 * links is frozen at its narrowest link up front, and the loop stops when every flow is frozen. */
#include <math.h>

#include "sim_heap.h"
#include "sim_internal.h"

static int lh_less(const sim_lheap_ent_t *a, const sim_lheap_ent_t *b) {
    return a->share < b->share || (a->share == b->share && a->link < b->link);
}

static int bh_less(const sim_bheap_ent_t *a, const sim_bheap_ent_t *b) {
    return a->ratio < b->ratio || (a->ratio == b->ratio && a->flow < b->flow);
}

/* Neither heap needs a position index: stale entries are recognised when they reach the top. */
SIM_HEAP_DEFINE(lh, sim_lheap_ent_t, void *, lh_less, SIM_HEAP_NO_PLACE)
SIM_HEAP_DEFINE(bh, sim_bheap_ent_t, void *, bh_less, SIM_HEAP_NO_PLACE)

typedef struct solver {
    sim_net_t *net;
    size_t n_lh, n_bh;
    int32_t unfrozen; /* flows still growing: the loop ends when none is left */
} solver_t;

static void push_link(solver_t *s, int32_t id) {
    const sim_link_t *l = &s->net->links[id];
    const sim_lheap_ent_t x = {l->wsum > 0.0 ? l->rem / l->wsum : 0.0, id, l->ver};
    lh_push(s->net->lheap, &s->n_lh, &x, NULL);
}

/* Freeze flow `slot` at rate x and take its use off every link of its route. */
static void freeze(solver_t *s, int32_t slot, double x) {
    sim_net_t *n = s->net;
    sim_flow_t *f = &n->flows[slot];
    f->frozen = 1;
    f->new_rate = x;
    s->unfrozen--;
    for (int32_t i = 0; i < f->n_hops; i++) {
        const sim_hop_t *h = &n->hops[f->hop_off + i];
        sim_link_t *l = &n->links[h->link];
        l->rem -= h->use * x;
        if (l->rem < 0.0)
            l->rem = 0.0;
        l->wsum -= h->use * f->weight;
        l->ver++;
        l->n_unfrozen--;
    }
}

/* Scratch for the heaps: one entry per link (stale entries are replaced, never added), one per
 * flow. */
static int reserve(sim_net_t *n, int32_t nf, int32_t nl) {
    if (sim_i_grow((void **)&n->lheap, &n->cap_lheap, nl, sizeof *n->lheap) ||
        sim_i_grow((void **)&n->bheap, &n->cap_bheap, nf, sizeof *n->bheap))
        return SIM_ENOMEM;
    return SIM_OK;
}

/* A flow alone on every link of its route is its own bottleneck: freeze it at once, so that the
 * common uncontended case (ring steps on a non-blocking fabric) never touches the heap. */
static void freeze_lonely(solver_t *s, int32_t slot) {
    const sim_net_t *n = s->net;
    const sim_flow_t *f = &n->flows[slot];
    double x = f->bound;
    for (int32_t h = 0; h < f->n_hops; h++) {
        const sim_hop_t *hop = &n->hops[f->hop_off + h];
        if (n->links[hop->link].n_unfrozen != 1)
            return;
        x = fmin(x, n->links[hop->link].cap / hop->use);
    }
    freeze(s, slot, x);
}

static void init_state(solver_t *s, int32_t nf, int32_t nl) {
    sim_net_t *n = s->net;
    for (int32_t i = 0; i < nl; i++) {
        sim_link_t *l = &n->links[n->comp_links[i]];
        l->rem = l->cap;
        l->wsum = 0.0;
        l->n_unfrozen = 0;
        l->ver++;
    }
    s->unfrozen = nf;
    for (int32_t i = 0; i < nf; i++) {
        sim_flow_t *f = &n->flows[n->comp_flows[i]];
        f->frozen = 0;
        for (int32_t h = 0; h < f->n_hops; h++) {
            sim_link_t *l = &n->links[n->hops[f->hop_off + h].link];
            l->wsum += n->hops[f->hop_off + h].use * f->weight;
            l->n_unfrozen++;
        }
    }
    for (int32_t i = 0; i < nf; i++) {
        const int32_t slot = n->comp_flows[i];
        freeze_lonely(s, slot);
        if (!n->flows[slot].frozen && isfinite(n->flows[slot].bound)) {
            const sim_bheap_ent_t x = {n->flows[slot].bound / n->flows[slot].weight, slot};
            bh_push(n->bheap, &s->n_bh, &x, NULL);
        }
    }
    /* Heapify the links still shared: O(links) rather than one push each. */
    for (int32_t i = 0; i < nl; i++) {
        const sim_link_t *l = &n->links[n->comp_links[i]];
        if (l->n_unfrozen > 0)
            n->lheap[s->n_lh++] =
                (sim_lheap_ent_t){l->wsum > 0.0 ? l->rem / l->wsum : 0.0, n->comp_links[i], l->ver};
    }
    lh_heapify(n->lheap, s->n_lh, NULL);
}

int sim_i_maxmin_solve(sim_net_t *n, int32_t nf, int32_t nl) {
    if (reserve(n, nf, nl))
        return SIM_ENOMEM;
    solver_t s = {n, 0, 0, 0};
    init_state(&s, nf, nl);
    while (s.unfrozen > 0) {
        /* A stale top (its link changed since it was pushed) still holds a lower bound of that
         * link's share: replace it by the current share and look again. */
        while (s.n_lh > 0) {
            const sim_lheap_ent_t t = n->lheap[0];
            const sim_link_t *l = &n->links[t.link];
            if (t.ver == l->ver && l->n_unfrozen > 0)
                break;
            lh_remove_at(n->lheap, &s.n_lh, 0, NULL);
            if (l->n_unfrozen > 0)
                push_link(&s, t.link);
        }
        while (s.n_bh > 0 && n->flows[n->bheap[0].flow].frozen)
            bh_remove_at(n->bheap, &s.n_bh, 0, NULL);
        if (s.n_lh == 0 && s.n_bh == 0)
            break;
        if (s.n_bh > 0 && (s.n_lh == 0 || n->bheap[0].ratio <= n->lheap[0].share)) {
            const int32_t slot = n->bheap[0].flow;
            bh_remove_at(n->bheap, &s.n_bh, 0, NULL);
            freeze(&s, slot, n->flows[slot].bound);
            continue;
        }
        const int32_t b = n->lheap[0].link;
        const double share = n->lheap[0].share;
        lh_remove_at(n->lheap, &s.n_lh, 0, NULL);
        /* Freeze every unfrozen flow on the bottleneck. freeze() never reorders b's list. */
        const sim_link_t *lb = &n->links[b];
        for (int32_t j = 0; j < lb->n_ents; j++) {
            const int32_t slot = lb->ents[j].flow;
            if (!n->flows[slot].frozen)
                freeze(&s, slot, share * n->flows[slot].weight);
        }
    }
    return SIM_OK;
}
