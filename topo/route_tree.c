/* route_tree.c - routes on generalized fat trees by digit arithmetic: up to the lowest common
 * ancestor level L, choosing one of w_{l+1} p_{l+1} up-cables at each level, then down the unique
 * path to the destination, taking at each level the same parallel copy that was taken going up.
 *
 * dmodk: at level l the choice is (d / D_l) mod (w_{l+1} p_{l+1}) with d the destination slot and
 * D_l the product of the choices below, so traffic to one destination converges on one down path and
 * on a 2-tier tree leaves its leaf through spine d mod S (SimGrid's FatTreeZone rule).
 * ecmp-hash: a seeded hash of (flow key, endpoints, level). ecmp-spread: every combination.
 *
 * Failed links (perturb.c): a flow whose preferred path (above) crosses none keeps it. Otherwise the
 * failed next hops are skipped as a switch's ECMP group drops them: of the equal-cost paths that avoid
 * every failed link, in path order (topo_i_route_xgft_nth's numbering), the flow takes number
 * (preferred path number mod their count), so displaced flows spread over the survivors the way the
 * routing spreads them anyway (dmodk by destination, ecmp-hash by hash). No surviving path:
 * TOPO_EUNREACHABLE.
 */
#include "topo_internal.h"

static int lca_level(const topo_xgft_t *x, int64_t s, int64_t d) {
    int l = 1;
    while (l < x->s.h && s / x->M[l] != d / x->M[l])
        l++;
    return l;
}

int64_t topo_i_xgft_path_count(const topo_t *t, int64_t se, int64_t de) {
    const topo_xgft_t *x = t->xgft;
    int64_t s = x->endpoint_slot[se], d = x->endpoint_slot[de];
    if (s == d)
        return 1;
    int L = lca_level(x, s, d);
    int64_t n = 1;
    for (int l = 0; l < L; l++)
        n *= x->s.w[l + 1] * x->s.p[l + 1];
    return n;
}

/* choice[l] (0 <= l < L) picks the up-cable at level l; writes the 2L links. */
static int walk(const topo_xgft_t *x, int64_t s, int64_t d, int L, const int64_t *choice,
                topo_link_id_t *links, int *n, int cap) {
    if (*n + 2 * L > cap)
        return TOPO_ERANGE;
    int64_t item = s;
    for (int l = 0; l < L; l++) {
        int64_t w = x->s.w[l + 1], p = x->s.p[l + 1];
        int64_t beta = choice[l] % w, copy = choice[l] / w;
        links[(*n)++] = 2 * (x->up_cable[l][item] + (int32_t)(beta * p + copy));
        int64_t block = item / x->W[l], bpart = item % x->W[l];
        item = block / x->s.m[l + 1] * x->W[l + 1] + bpart + beta * x->W[l];
    }
    for (int l = L; l >= 1; l--) {
        int64_t bpart = item % x->W[l];
        int64_t beta = bpart / x->W[l - 1], copy = choice[l - 1] / x->s.w[l];
        int64_t child = d / x->M[l - 1] * x->W[l - 1] + bpart % x->W[l - 1];
        links[(*n)++] = 2 * (x->up_cable[l - 1][child] + (int32_t)(beta * x->s.p[l] + copy)) + 1;
        item = child;
    }
    return TOPO_OK;
}

/* The path number (choice[0] + radix_0 (choice[1] + ...)) of topo_i_route_xgft_nth. */
static int64_t path_number(const topo_xgft_t *x, int L, const int64_t *choice) {
    int64_t k = 0;
    for (int l = L - 1; l >= 0; l--)
        k = k * (x->s.w[l + 1] * x->s.p[l + 1]) + choice[l];
    return k;
}

/* The preferred path crossed a failed link: path number (pref mod survivors) among the survivors. */
static int route_around(const topo_t *t, int64_t se, int64_t de, int64_t pref, topo_link_id_t *links, int *n,
                        int cap) {
    const int n0 = *n;
    const int64_t count = topo_i_xgft_path_count(t, se, de);
    int64_t alive = 0;
    for (int64_t k = 0; k < count; k++) {
        *n = n0;
        int rc = topo_i_route_xgft_nth(t, se, de, k, links, n, cap);
        if (rc)
            return rc;
        alive += !topo_i_path_failed(t, links + n0, *n - n0);
    }
    *n = n0;
    if (alive == 0)
        return TOPO_EUNREACHABLE;
    for (int64_t k = 0, want = pref % alive; k < count; k++) {
        *n = n0;
        topo_i_route_xgft_nth(t, se, de, k, links, n, cap);
        if (!topo_i_path_failed(t, links + n0, *n - n0) && want-- == 0)
            return TOPO_OK;
    }
    return TOPO_EUNREACHABLE; /* not reached: alive paths exist */
}

int topo_i_route_xgft(const topo_t *t, int64_t se, int64_t de, topo_routing_t r, uint64_t key,
                      topo_link_id_t *links, int *n, int cap) {
    const topo_xgft_t *x = t->xgft;
    int64_t s = x->endpoint_slot[se], d = x->endpoint_slot[de], choice[4] = {0, 0, 0, 0};
    int L = lca_level(x, s, d);
    for (int l = 0; l < L; l++) {
        int64_t k = x->s.w[l + 1] * x->s.p[l + 1];
        if (r == TOPO_ROUTING_DMODK)
            choice[l] = d / x->D[l] % k;
        else
            choice[l] = (int64_t)(topo_i_hash(t->seed, key, (uint64_t)se << 32 ^ (uint64_t)de, (uint64_t)l) %
                                  (uint64_t)k);
    }
    const int n0 = *n;
    int rc = walk(x, s, d, L, choice, links, n, cap);
    if (rc || !topo_i_path_failed(t, links + n0, *n - n0))
        return rc;
    *n = n0;
    return route_around(t, se, de, path_number(x, L, choice), links, n, cap);
}

int topo_i_route_xgft_nth(const topo_t *t, int64_t se, int64_t de, int64_t k, topo_link_id_t *links, int *n,
                          int cap) {
    const topo_xgft_t *x = t->xgft;
    int64_t s = x->endpoint_slot[se], d = x->endpoint_slot[de], choice[4] = {0, 0, 0, 0};
    int L = lca_level(x, s, d);
    for (int l = 0; l < L; l++) {
        int64_t radix = x->s.w[l + 1] * x->s.p[l + 1];
        choice[l] = k % radix;
        k /= radix;
    }
    return walk(x, s, d, L, choice, links, n, cap);
}
