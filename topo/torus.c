/* torus.c - k-ary n-cubes with wrap-around links, and dimension-order routing.
 *
 * Torus node x has coordinates x_d = (x / stride_d) mod k_d with dims[0] varying slowest. Along a
 * dimension of size k > 2 every node has a cable to its + neighbour (k cables per ring); a dimension
 * of size 2 has one cable per pair. With one GPU and one NIC-less endpoint per node the GPUs are the
 * routers (TPU-like, a direct network); otherwise each node gets a router switch its endpoints hang
 * off. Racks are 4 x 4 x ... blocks of torus nodes (a TPU v4 cube), so cables leaving a block count
 * as optical. DOR visits dimensions in order and takes the shorter way round (+ on a tie).
 */
#include <stdlib.h>

#include "alloc.h"
#include "topo_internal.h"

static int64_t coord(const topo_torus_t *o, int64_t x, int64_t d) {
    return x / o->stride[d] % o->dims[d];
}

static int64_t step(const topo_torus_t *o, int64_t x, int64_t d, int dir) {
    int64_t c = coord(o, x, d), k = o->dims[d];
    int64_t c2 = dir == 0 ? (c + 1) % k : (c + k - 1) % k;
    return x + (c2 - c) * o->stride[d];
}

static int64_t rack_of(const topo_torus_t *o, int64_t x) {
    int64_t r = 0;
    for (int64_t d = 0; d < o->n_dims; d++)
        r = r * ((o->dims[d] + 3) / 4) + coord(o, x, d) / 4;
    return r;
}

static int add_torus_cables(topo_t *t, topo_torus_t *o, double bw, double lat) {
    int64_t n2 = 2 * o->n_dims;
    o->arc = alloc_malloc((size_t)(o->n_nodes * n2) * sizeof *o->arc);
    if (!o->arc)
        return TOPO_ENOMEM;
    for (int64_t x = 0; x < o->n_nodes; x++) {
        for (int64_t d = 0; d < o->n_dims; d++) {
            if (o->dims[d] == 2 && coord(o, x, d) == 1)
                continue;
            int64_t y = step(o, x, d, 0);
            int64_t c =
                topo_i_cable(t, o->router_vertex0 + x, o->router_vertex0 + y, TOPO_LINK_NETWORK, bw, lat);
            if (c < 0)
                return TOPO_ENOMEM;
            o->arc[x * n2 + 2 * d] = (int32_t)(2 * c);
            o->arc[y * n2 + 2 * d + 1] = (int32_t)(2 * c + 1);
            if (o->dims[d] == 2) {
                o->arc[x * n2 + 2 * d + 1] = (int32_t)(2 * c);
                o->arc[y * n2 + 2 * d] = (int32_t)(2 * c + 1);
            }
        }
    }
    return TOPO_OK;
}

static int add_routers(topo_t *t, topo_torus_t *o, double bw, double lat) {
    if (o->direct) {
        o->router_vertex0 = 0;
        return TOPO_OK;
    }
    o->router_vertex0 = (int32_t)t->n_vertices;
    for (int64_t x = 0; x < o->n_nodes; x++)
        if (topo_i_vertex(t, TOPO_VERTEX_SWITCH, -1, 1, -1, rack_of(o, x), x) < 0)
            return TOPO_ENOMEM;
    o->ep_cable0 = (int32_t)(t->n_links / 2);
    for (int64_t e = 0; e < t->n_endpoints; e++)
        if (topo_i_cable(t, topo_i_endpoint_vertex(t, e), o->router_vertex0 + e / t->nodes.M,
                         TOPO_LINK_NETWORK, bw, lat) < 0)
            return TOPO_ENOMEM;
    return TOPO_OK;
}

/* The rank halves split dimension 0: 2 N / k_0 cables cross (N / 2 when k_0 == 2). */
static double torus_closed_bisection(const topo_t *t, const topo_torus_t *o, const topo_params_t *p) {
    int64_t k0 = o->dims[0];
    if (k0 % 2 != 0)
        return 0;
    double bw = p->link_bandwidth_bytes_per_s;
    double cut = (double)(k0 == 2 ? o->n_nodes / 2 : 2 * o->n_nodes / k0) * bw;
    if (o->direct)
        return cut;
    double nic =
        t->nodes.has_nic ? p->node.pcie_bandwidth_bytes_per_s * (double)(t->nodes.G / t->nodes.M) : bw;
    double inj = (double)t->n_endpoints / 2 * (nic < bw ? nic : bw);
    return cut < inj ? cut : inj;
}

int topo_i_build_torus(topo_t *t, const topo_params_t *p, topo_issue_t *issue) {
    (void)issue;
    topo_torus_t *o = t->torus = alloc_calloc(1, sizeof *t->torus);
    if (!o)
        return TOPO_ENOMEM;
    o->n_dims = p->torus.n_dims;
    o->n_nodes = 1;
    for (int64_t d = o->n_dims - 1; d >= 0; d--) {
        o->dims[d] = p->torus.dims[d];
        o->stride[d] = o->n_nodes;
        o->n_nodes *= o->dims[d];
    }
    t->n_gpus = o->n_nodes * p->node.gpus_per_node;
    int rc = topo_i_build_nodes(t, p);
    if (rc)
        return rc;
    o->direct = t->nodes.G == 1 && t->nodes.M == 1 && !t->nodes.has_nic;
    if ((rc = add_routers(t, o, p->link_bandwidth_bytes_per_s, p->link_latency_s)) ||
        (rc = add_torus_cables(t, o, p->link_bandwidth_bytes_per_s, p->link_latency_s)))
        return rc;
    for (int64_t v = 0; v < t->n_vertices; v++)
        if (t->v_node[v] >= 0)
            t->v_rack[v] = (int32_t)rack_of(o, t->v_node[v]);
    t->diam_sources = alloc_malloc((size_t)t->nodes.G * sizeof *t->diam_sources);
    if (!t->diam_sources)
        return TOPO_ENOMEM;
    for (int64_t i = 0; i < t->nodes.G; i++) /* vertex-transitive: one node's GPUs suffice */
        t->diam_sources[i] = i;
    t->n_diam_sources = t->nodes.G;
    t->tier_names[1] = "router";
    t->closed_bisection_bytes_per_s = torus_closed_bisection(t, o, p);
    int64_t hops = 0;
    for (int64_t d = 0; d < o->n_dims; d++)
        hops += o->dims[d] / 2;
    t->max_route_links = (int)(hops + 6 < TOPO_MAX_ROUTE ? hops + 6 : TOPO_MAX_ROUTE);
    return TOPO_OK;
}

int topo_i_route_torus(const topo_t *t, int64_t se, int64_t de, topo_link_id_t *links, int *n, int cap) {
    const topo_torus_t *o = t->torus;
    int64_t x = se / t->nodes.M, y = de / t->nodes.M, n2 = 2 * o->n_dims;
    if (!o->direct) {
        if (*n >= cap)
            return TOPO_ERANGE;
        links[(*n)++] = 2 * (o->ep_cable0 + (int32_t)se);
    }
    for (int64_t d = 0; d < o->n_dims; d++) {
        int64_t k = o->dims[d], delta = (coord(o, y, d) - coord(o, x, d) + k) % k;
        int dir = delta <= k / 2 ? 0 : 1;
        int64_t steps = dir == 0 ? delta : k - delta;
        for (int64_t s = 0; s < steps; s++) {
            if (*n >= cap)
                return TOPO_ERANGE;
            links[(*n)++] = o->arc[x * n2 + 2 * d + dir];
            x = step(o, x, d, dir);
        }
    }
    if (!o->direct) {
        if (*n >= cap)
            return TOPO_ERANGE;
        links[(*n)++] = 2 * (o->ep_cable0 + (int32_t)de) + 1;
    }
    return TOPO_OK;
}
