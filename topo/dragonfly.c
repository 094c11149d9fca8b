/* dragonfly.c - the dragonfly of Kim et al. (ISCA 2008): g groups of a routers, all-to-all inside a
 * group, p endpoints and h global ports per router; its build and its routes.
 *
 * Global wiring: group i has a*h global ports; port q sits on router q / h. Between groups i and j
 * run n parallel cables; copy c uses port q = c*(g-1) + slot(i, j) on i's side, where slot() is the
 * arrangement (absolute: j or j-1; relative: (j-i-1) mod g; circulant: offsets +1,-1,+2,-2,...), so
 * the copies of one pair land on different routers. Ports beyond n*(g-1) stay unused.
 * Endpoints: node-major (endpoint e is NIC e % M of node e / M); with chassis_nics, NIC k of the p
 * nodes of a chassis sits on router k of the chassis's M routers (HPE Cray EX), else e on router e / p.
 * Routes: minimal = local, global, local (the copy picked by a hash of the flow); Valiant = minimal
 * to a hashed intermediate group's landing router, then minimal; UGAL = the cheaper of the minimal
 * path and K Valiant candidates, cost = network links x (1 + the largest utilization on the path),
 * the minimal path winning ties and anything within ugal_threshold. Intra-group flows stay minimal.
 *
 * Failed links (perturb.c): a route that crosses none is the one above. Otherwise the flow takes, in
 * this order, the first that avoids every failed link: (1) the minimal path over the other parallel
 * global cables of the group pair (copies c+1, c+2, ... mod n); (2) a Valiant detour through
 * intermediate group I (from the hashed one upward, both cables' copies in order; flows inside one
 * group too, out to I and back, when no two-hop detour inside the group is left). In both, a failed
 * local hop r1 -> r2 becomes the two-hop detour r1 -> r3 -> r2 over the lowest r3 whose two links
 * work. Valiant and UGAL flows whose own path crosses a failed link do the same; UGAL compares only
 * candidates without failed links. None left: TOPO_EUNREACHABLE.
 */
#include <math.h>
#include <stdlib.h>

#include "alloc.h"
#include "topo_internal.h"

static int64_t slot_of(const topo_dfly_t *d, int64_t i, int64_t j) {
    int64_t g = d->g;
    switch (d->arrangement) {
    case TOPO_ARRANGEMENT_RELATIVE:
        return (j - i - 1 + g) % g;
    case TOPO_ARRANGEMENT_CIRCULANT: {
        int64_t o = (j - i + g) % g;
        if (o == g - o)
            return g - 2;
        return o < g - o ? 2 * (o - 1) : 2 * (g - o) - 1;
    }
    default:
        return j < i ? j : j - 1;
    }
}

int64_t topo_i_dfly_router(const topo_dfly_t *d, int64_t e) {
    return e / d->chassis_m / d->p * d->chassis_m + e % d->chassis_m;
}

static int64_t pair_index(int64_t a, int64_t lo, int64_t hi) {
    return lo * (2 * a - lo - 1) / 2 + (hi - lo - 1);
}

static int add_globals(topo_t *t, topo_dfly_t *d, double bw, double lat) {
    int64_t g = d->g, n = d->n, entries = g * (g - 1) * n;
    d->gl_link = alloc_malloc((size_t)(entries + 1) * sizeof *d->gl_link);
    d->gl_src = alloc_malloc((size_t)(entries + 1) * sizeof *d->gl_src);
    d->gl_dst = alloc_malloc((size_t)(entries + 1) * sizeof *d->gl_dst);
    if (!d->gl_link || !d->gl_src || !d->gl_dst)
        return TOPO_ENOMEM;
    for (int64_t i = 0; i < g; i++) {
        for (int64_t j = i + 1; j < g; j++) {
            int64_t si = slot_of(d, i, j), sj = slot_of(d, j, i);
            for (int64_t c = 0; c < n; c++) {
                int64_t ri = (c * (g - 1) + si) / d->h, rj = (c * (g - 1) + sj) / d->h;
                int64_t cab = topo_i_cable(t, d->router_vertex0 + i * d->a + ri,
                                           d->router_vertex0 + j * d->a + rj, TOPO_LINK_NETWORK, bw, lat);
                if (cab < 0)
                    return TOPO_ENOMEM;
                int64_t ei = (i * (g - 1) + si) * n + c, ej = (j * (g - 1) + sj) * n + c;
                d->gl_link[ei] = (int32_t)(2 * cab), d->gl_src[ei] = (int32_t)ri, d->gl_dst[ei] = (int32_t)rj;
                d->gl_link[ej] = (int32_t)(2 * cab + 1), d->gl_src[ej] = (int32_t)rj,
                d->gl_dst[ej] = (int32_t)ri;
            }
        }
    }
    return TOPO_OK;
}

static int add_routers(topo_t *t, topo_dfly_t *d, double bw, double lat) {
    d->router_vertex0 = (int32_t)t->n_vertices;
    for (int64_t R = 0; R < d->g * d->a; R++)
        if (topo_i_vertex(t, TOPO_VERTEX_SWITCH, -1, 1, R / d->a, R / d->a, R) < 0)
            return TOPO_ENOMEM;
    d->ep_cable0 = (int32_t)(t->n_links / 2);
    for (int64_t e = 0; e < t->n_endpoints; e++)
        if (topo_i_cable(t, topo_i_endpoint_vertex(t, e), d->router_vertex0 + topo_i_dfly_router(d, e),
                         TOPO_LINK_NETWORK, bw, lat) < 0)
            return TOPO_ENOMEM;
    d->local_cable0 = (int32_t)(t->n_links / 2);
    for (int64_t grp = 0; grp < d->g; grp++)
        for (int64_t r1 = 0; r1 < d->a; r1++)
            for (int64_t r2 = r1 + 1; r2 < d->a; r2++)
                if (topo_i_cable(t, d->router_vertex0 + grp * d->a + r1, d->router_vertex0 + grp * d->a + r2,
                                 TOPO_LINK_NETWORK, bw, lat) < 0)
                    return TOPO_ENOMEM;
    return add_globals(t, d, bw, lat);
}

/* GPUs on the first endpoint of every router of the first and last groups, and node 0's GPUs. Router
 * R's first endpoint is NIC R % m of the first node of its chassis (m = 1: endpoint R * p). */
static int dragonfly_sources(topo_t *t, const topo_dfly_t *d) {
    const topo_nodes_t *nd = &t->nodes;
    t->diam_sources = alloc_malloc((size_t)(2 * d->a + nd->G) * sizeof *t->diam_sources);
    if (!t->diam_sources)
        return TOPO_ENOMEM;
    int64_t n = 0;
    for (int64_t i = 0; i < nd->G; i++)
        t->diam_sources[n++] = i;
    int64_t groups[2] = {0, d->g - 1};
    for (int k = 0; k < (d->g > 1 ? 2 : 1); k++) {
        for (int64_t r = 0; r < d->a; r++) {
            const int64_t R = groups[k] * d->a + r, m = d->chassis_m;
            int64_t e = (R / m * d->p) * m + R % m;
            if (e < t->n_endpoints)
                t->diam_sources[n++] = e / nd->M * nd->G + e % nd->M * (nd->G / nd->M);
        }
    }
    t->n_diam_sources = n;
    return TOPO_OK;
}

static double dragonfly_closed_bisection(const topo_t *t, const topo_dfly_t *d, const topo_params_t *p) {
    if (d->g % 2 != 0 || t->n_endpoints != d->g * d->a * d->p || t->n_nodes % 2 != 0)
        return 0;
    double bw = p->link_bandwidth_bytes_per_s;
    double nic =
        t->nodes.has_nic ? p->node.pcie_bandwidth_bytes_per_s * (double)(t->nodes.G / t->nodes.M) : bw;
    double inj = (double)t->n_endpoints / 2 * (nic < bw ? nic : bw);
    double cut = (double)(d->g / 2) * (double)(d->g / 2) * (double)d->n * bw;
    return cut < inj ? cut : inj;
}

int topo_i_build_dragonfly(topo_t *t, const topo_params_t *p, topo_issue_t *issue) {
    (void)issue;
    const topo_dragonfly_params_t *dp = &p->dragonfly;
    topo_dfly_t *d = t->dfly = alloc_calloc(1, sizeof *t->dfly);
    if (!d)
        return TOPO_ENOMEM;
    d->p = dp->p, d->a = dp->a, d->h = dp->h, d->g = dp->g;
    d->n = topo_i_dragonfly_links_per_pair(dp);
    d->arrangement = dp->arrangement;
    d->ugal_threshold = dp->ugal_threshold;
    d->ugal_candidates = dp->ugal_candidates;
    d->chassis_m = dp->chassis_nics ? p->node.nics_per_node : 1;
    int64_t slots = d->g * d->a * d->p;
    t->n_gpus = p->gpus > 0 ? p->gpus : slots / p->node.nics_per_node * p->node.gpus_per_node;
    int rc = topo_i_build_nodes(t, p);
    if (rc || (rc = add_routers(t, d, p->link_bandwidth_bytes_per_s, p->link_latency_s)) ||
        (rc = dragonfly_sources(t, d)))
        return rc;
    for (int64_t v = 0; v < t->n_vertices; v++) {
        if (t->v_node[v] >= 0) {
            int64_t grp = t->v_node[v] * t->nodes.M / d->p / d->a;
            t->v_group[v] = t->v_rack[v] = (int32_t)grp;
        }
    }
    t->tier_names[1] = "router";
    t->closed_bisection_bytes_per_s = dragonfly_closed_bisection(t, d, p);
    t->max_route_links = 2 + 2 + 2 + 5;
    return TOPO_OK;
}

/* ---- routes ------------------------------------------------------------------------------------ */

static topo_link_id_t local_link(const topo_dfly_t *d, int64_t grp, int64_t r1, int64_t r2) {
    int64_t lo = r1 < r2 ? r1 : r2, hi = r1 < r2 ? r2 : r1;
    int64_t cable = d->local_cable0 + grp * (d->a * (d->a - 1) / 2) + pair_index(d->a, lo, hi);
    return (topo_link_id_t)(2 * cable + (r1 < r2 ? 0 : 1));
}

/* Minimal route between routers R1 and R2 using global copy c; appends links. */
static void minimal(const topo_dfly_t *d, int64_t R1, int64_t R2, int64_t c, topo_link_id_t *links, int *n) {
    int64_t i = R1 / d->a, r1 = R1 % d->a, j = R2 / d->a, r2 = R2 % d->a;
    if (i == j) {
        if (r1 != r2)
            links[(*n)++] = local_link(d, i, r1, r2);
        return;
    }
    int64_t e = (i * (d->g - 1) + slot_of(d, i, j)) * d->n + c;
    if (r1 != d->gl_src[e])
        links[(*n)++] = local_link(d, i, r1, d->gl_src[e]);
    links[(*n)++] = d->gl_link[e];
    if (d->gl_dst[e] != r2)
        links[(*n)++] = local_link(d, j, d->gl_dst[e], r2);
}

/* Valiant through intermediate group number `salt` of the hash sequence. */
static void valiant(const topo_t *t, const topo_dfly_t *d, int64_t R1, int64_t R2, uint64_t key,
                    uint64_t pair, uint64_t salt, topo_link_id_t *links, int *n) {
    int64_t i = R1 / d->a, j = R2 / d->a, lo = i < j ? i : j, hi = i < j ? j : i;
    uint64_t hsh = topo_i_hash(t->seed, key, pair, 1 + salt);
    int64_t I = (int64_t)(hsh % (uint64_t)(d->g - 2));
    if (I >= lo)
        I++;
    if (I >= hi)
        I++;
    int64_t c1 = (int64_t)((hsh >> 32) % (uint64_t)d->n), c2 = (int64_t)((hsh >> 48) % (uint64_t)d->n);
    int64_t e = (i * (d->g - 1) + slot_of(d, i, I)) * d->n + c1;
    int64_t landing = I * d->a + d->gl_dst[e];
    minimal(d, R1, landing, c1, links, n);
    minimal(d, landing, R2, c2, links, n);
}

/* ---- routes around failed links ----------------------------------------------------------------- */

static int ok(const topo_t *t, topo_link_id_t l) {
    return !t->l_failed[l];
}

/* r1 -> r2 inside group grp: the direct link, else r1 -> r3 -> r2 over the lowest r3 that works. */
static int local_hop(const topo_t *t, const topo_dfly_t *d, int64_t grp, int64_t r1, int64_t r2,
                     topo_link_id_t *links, int *n) {
    if (r1 == r2)
        return 1;
    const topo_link_id_t direct = local_link(d, grp, r1, r2);
    if (ok(t, direct)) {
        links[(*n)++] = direct;
        return 1;
    }
    for (int64_t r3 = 0; r3 < d->a; r3++) {
        if (r3 == r1 || r3 == r2)
            continue;
        const topo_link_id_t x = local_link(d, grp, r1, r3), y = local_link(d, grp, r3, r2);
        if (ok(t, x) && ok(t, y)) {
            links[(*n)++] = x;
            links[(*n)++] = y;
            return 1;
        }
    }
    return 0;
}

/* minimal() with copy c, detouring failed local hops; 0 if its global cable failed or no detour. */
static int minimal_alive(const topo_t *t, const topo_dfly_t *d, int64_t R1, int64_t R2, int64_t c,
                         topo_link_id_t *links, int *n) {
    const int n0 = *n;
    int64_t i = R1 / d->a, r1 = R1 % d->a, j = R2 / d->a, r2 = R2 % d->a;
    if (i == j)
        return local_hop(t, d, i, r1, r2, links, n) || ((*n = n0), 0);
    int64_t e = (i * (d->g - 1) + slot_of(d, i, j)) * d->n + c;
    if (!ok(t, d->gl_link[e]))
        return 0;
    if (!local_hop(t, d, i, r1, d->gl_src[e], links, n)) {
        *n = n0;
        return 0;
    }
    links[(*n)++] = d->gl_link[e];
    if (!local_hop(t, d, j, d->gl_dst[e], r2, links, n)) {
        *n = n0;
        return 0;
    }
    return 1;
}

/* The first route of the order in the file comment; c: the flow's hashed copy. */
static int route_alive(const topo_t *t, const topo_dfly_t *d, int64_t R1, int64_t R2, int64_t c, uint64_t key,
                       uint64_t pair, topo_link_id_t *links, int *n) {
    for (int64_t k = 0; k < d->n; k++)
        if (minimal_alive(t, d, R1, R2, (c + k) % d->n, links, n))
            return TOPO_OK;
    int64_t i = R1 / d->a, j = R2 / d->a;
    if (d->g < (i == j ? 2 : 3))
        return TOPO_EUNREACHABLE;
    const int64_t I0 = (int64_t)(topo_i_hash(t->seed, key, pair, 1) % (uint64_t)d->g);
    for (int64_t s = 0; s < d->g; s++) {
        const int64_t I = (I0 + s) % d->g;
        if (I == i || I == j)
            continue;
        for (int64_t c1 = 0; c1 < d->n; c1++) {
            const int64_t e = (i * (d->g - 1) + slot_of(d, i, I)) * d->n + c1;
            const int64_t landing = I * d->a + d->gl_dst[e];
            const int n0 = *n;
            if (!minimal_alive(t, d, R1, landing, c1, links, n))
                continue;
            for (int64_t c2 = 0; c2 < d->n; c2++)
                if (minimal_alive(t, d, landing, R2, c2, links, n))
                    return TOPO_OK;
            *n = n0;
        }
    }
    return TOPO_EUNREACHABLE;
}

static double path_cost(const topo_link_id_t *links, int n, const double *load) {
    double worst = 0;
    for (int k = 0; load && k < n; k++)
        if (load[links[k]] > worst)
            worst = load[links[k]];
    return (double)n * (1 + worst);
}

int topo_i_route_dragonfly(const topo_t *t, int64_t se, int64_t de, const topo_flow_t *f, topo_routing_t r,
                           topo_link_id_t *links, int *n, int cap) {
    const topo_dfly_t *d = t->dfly;
    if (*n + 2 + 10 > cap)
        return TOPO_ERANGE;
    int64_t R1 = topo_i_dfly_router(d, se), R2 = topo_i_dfly_router(d, de);
    uint64_t pair = (uint64_t)se << 32 ^ (uint64_t)de;
    links[(*n)++] = 2 * (d->ep_cable0 + (int32_t)se);
    int nonmin = d->g >= 3 && R1 / d->a != R2 / d->a && r != TOPO_ROUTING_MINIMAL;
    int64_t c = d->n > 1 ? (int64_t)(topo_i_hash(t->seed, f->key, pair, 0) % (uint64_t)d->n) : 0;
    const int n0 = *n;
    if (!nonmin) {
        minimal(d, R1, R2, c, links, n);
    } else if (r == TOPO_ROUTING_VALIANT) {
        valiant(t, d, R1, R2, f->key, pair, 0, links, n);
    } else {
        topo_link_id_t best[16], cand[16];
        int nb = 0, nc;
        minimal(d, R1, R2, c, best, &nb);
        /* a candidate over a failed link costs infinitely much */
        double cost_min = topo_i_path_failed(t, best, nb) ? HUGE_VAL : path_cost(best, nb, f->link_load),
               cost_val = 0;
        for (uint64_t k = 0; k < (uint64_t)d->ugal_candidates; k++) {
            nc = 0;
            valiant(t, d, R1, R2, f->key, pair, k, cand, &nc);
            if (topo_i_path_failed(t, cand, nc))
                continue;
            double cost = path_cost(cand, nc, f->link_load);
            if (cost + d->ugal_threshold < cost_min && (cost_val == 0 || cost < cost_val)) {
                cost_val = cost;
                nb = nc;
                for (int q = 0; q < nc; q++)
                    best[q] = cand[q];
            }
        }
        for (int q = 0; q < nb; q++)
            links[(*n)++] = best[q];
    }
    if (topo_i_path_failed(t, links + n0, *n - n0)) {
        *n = n0;
        int rc = route_alive(t, d, R1, R2, c, f->key, pair, links, n);
        if (rc)
            return rc;
    }
    links[(*n)++] = 2 * (d->ep_cable0 + (int32_t)de) + 1;
    return TOPO_OK;
}
