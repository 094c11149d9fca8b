/* route.c - route lookup: the node-local parts (NVLink, PCIe, PXN) around the kind's network route.
 *
 * A route between GPUs of one node crosses NVLink only (GPU -> NVSwitch -> GPU, or the mesh cable).
 * Between nodes: GPU -> its NIC (PCIe, when NICs are vertices) -> the kind's route between the two
 * endpoints -> NIC -> GPU. With pxn, a flow whose source and destination use different NIC indices
 * first crosses NVLink to the source node's GPU on the destination's NIC index. Routes are built in a
 * stack buffer of TOPO_MAX_ROUTE links and copied out: no allocation, no igraph.
 *
 * Failed links (perturb.c): the kinds' network routes avoid them where they can (route_tree.c,
 * dragonfly.c, the GraphML table); a route that still crosses one (a failed NVLink or PCIe link, a
 * torus's dimension-order path) is TOPO_EUNREACHABLE, and ecmp-spread leaves out the paths that do.
 */
#include <string.h>

#include "topo_internal.h"

uint64_t topo_i_hash(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
    /* splitmix64 finalizer over a simple combination: well mixed and platform independent */
    uint64_t z =
        seed ^ (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full) ^ (c * 0x165667B19E3779F9ull);
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

topo_routing_t topo_routing(const topo_t *t) {
    return t->routing;
}

int topo_route_max_links(const topo_t *t) {
    return t->max_route_links;
}

static int routing_fits(topo_kind_t k, topo_routing_t r) {
    switch (k) {
    case TOPO_KIND_IDEAL:
    case TOPO_KIND_FAT_TREE:
    case TOPO_KIND_RAIL_OPTIMIZED:
        return r == TOPO_ROUTING_DMODK || r == TOPO_ROUTING_ECMP_HASH || r == TOPO_ROUTING_ECMP_SPREAD;
    case TOPO_KIND_DRAGONFLY:
        return r == TOPO_ROUTING_MINIMAL || r == TOPO_ROUTING_VALIANT || r == TOPO_ROUTING_UGAL;
    case TOPO_KIND_TORUS:
        return r == TOPO_ROUTING_DOR;
    case TOPO_KIND_GRAPHML:
        return r == TOPO_ROUTING_SHORTEST;
    }
    return 0;
}

static int64_t nic_index(const topo_nodes_t *nd, int64_t gpu) {
    return gpu % nd->G / (nd->G / nd->M);
}

static int64_t endpoint_of(const topo_nodes_t *nd, int64_t gpu) {
    return gpu / nd->G * nd->M + nic_index(nd, gpu);
}

/* NVLink hop(s) between two GPUs of one node. */
static void intra_node(const topo_nodes_t *nd, int64_t a, int64_t b, topo_link_id_t *links, int *n) {
    if (nd->has_nvs) {
        links[(*n)++] = 2 * (nd->nvl_cable0 + (int32_t)a);
        links[(*n)++] = 2 * (nd->nvl_cable0 + (int32_t)b) + 1;
        return;
    }
    int64_t G = nd->G, i = a % G, j = b % G, lo = i < j ? i : j, hi = i < j ? j : i;
    int64_t pair = lo * (2 * G - lo - 1) / 2 + (hi - lo - 1);
    int64_t cable = nd->nvl_cable0 + a / G * (G * (G - 1) / 2) + pair;
    links[(*n)++] = (topo_link_id_t)(2 * cable + (i < j ? 0 : 1));
}

/* The network part plus the PCIe hops at both ends. mode selects the kind's algorithm; nth >= 0
 * picks one equal-cost tree path instead (ecmp-spread). */
static int inter_node(const topo_t *t, const topo_flow_t *f, topo_routing_t r, int64_t src, int64_t nth,
                      topo_link_id_t *links, int *n) {
    const topo_nodes_t *nd = &t->nodes;
    int64_t dst = f->dst_gpu, se = endpoint_of(nd, src), de = endpoint_of(nd, dst);
    int rc = TOPO_OK;
    if (nd->has_nic)
        links[(*n)++] = 2 * (nd->pcie_cable0 + (int32_t)src);
    if (se != de) {
        switch (t->kind) {
        case TOPO_KIND_DRAGONFLY:
            rc = topo_i_route_dragonfly(t, se, de, f, r, links, n, TOPO_MAX_ROUTE - 1);
            break;
        case TOPO_KIND_TORUS:
            rc = topo_i_route_torus(t, se, de, links, n, TOPO_MAX_ROUTE - 1);
            break;
        default:
            rc = nth >= 0 ? topo_i_route_xgft_nth(t, se, de, nth, links, n, TOPO_MAX_ROUTE - 1)
                          : topo_i_route_xgft(t, se, de, r, f->key, links, n, TOPO_MAX_ROUTE - 1);
        }
    }
    if (nd->has_nic)
        links[(*n)++] = 2 * (nd->pcie_cable0 + (int32_t)dst) + 1;
    return rc;
}

/* One path into buf (TOPO_MAX_ROUTE entries); nth as in inter_node. */
static int route_one(const topo_t *t, const topo_flow_t *f, topo_routing_t r, int64_t nth,
                     topo_link_id_t *buf, int *n) {
    int64_t src = f->src_gpu, dst = f->dst_gpu;
    const topo_nodes_t *nd = &t->nodes;
    *n = 0;
    if (t->kind == TOPO_KIND_GRAPHML)
        return topo_i_route_table(t, src, dst, buf, n, TOPO_MAX_ROUTE);
    if (src / nd->G == dst / nd->G) {
        intra_node(nd, src, dst, buf, n);
        return TOPO_OK;
    }
    if (t->pxn && nd->G > 1 && nic_index(nd, src) != nic_index(nd, dst)) {
        int64_t proxy = src / nd->G * nd->G + nic_index(nd, dst) * (nd->G / nd->M);
        if (proxy != src)
            intra_node(nd, src, proxy, buf, n);
        src = proxy;
    }
    return inter_node(t, f, r, src, nth, buf, n);
}

static int check_flow(const topo_t *t, const topo_flow_t *f, topo_routing_t *r) {
    if (f->src_gpu < 0 || f->src_gpu >= t->n_gpus || f->dst_gpu < 0 || f->dst_gpu >= t->n_gpus)
        return TOPO_ERANGE;
    *r = f->routing == TOPO_ROUTING_DEFAULT ? t->routing : f->routing;
    return routing_fits(t->kind, *r) ? TOPO_OK : TOPO_EINVAL;
}

int topo_route(const topo_t *t, const topo_flow_t *f, topo_link_id_t *links, int cap) {
    topo_routing_t r;
    int rc = check_flow(t, f, &r);
    if (rc)
        return rc;
    if (f->src_gpu == f->dst_gpu)
        return 0;
    topo_link_id_t buf[TOPO_MAX_ROUTE];
    int n = 0;
    if (r == TOPO_ROUTING_ECMP_SPREAD)
        r = TOPO_ROUTING_ECMP_HASH;
    if ((rc = route_one(t, f, r, -1, buf, &n)))
        return rc;
    if (topo_i_path_failed(t, buf, n))
        return TOPO_EUNREACHABLE;
    if (n > cap)
        return TOPO_ERANGE;
    memcpy(links, buf, (size_t)n * sizeof *buf);
    return n;
}

/* Equal-cost tree paths exist only between endpoints of different nodes. */
static int64_t spread_count(const topo_t *t, const topo_flow_t *f) {
    const topo_nodes_t *nd = &t->nodes;
    int64_t src = f->src_gpu, dst = f->dst_gpu;
    if (src == dst || src / nd->G == dst / nd->G)
        return 1;
    if (t->pxn && nd->G > 1 && nic_index(nd, src) != nic_index(nd, dst))
        src = src / nd->G * nd->G + nic_index(nd, dst) * (nd->G / nd->M);
    int64_t se = endpoint_of(nd, src), de = endpoint_of(nd, dst);
    return se == de ? 1 : topo_i_xgft_path_count(t, se, de);
}

/* ecmp-spread's paths that avoid every failed link: all of spread_count's on an unperturbed tree. */
static int64_t spread_alive(const topo_t *t, const topo_flow_t *f) {
    const int64_t count = spread_count(t, f);
    if (!t->l_failed || f->src_gpu == f->dst_gpu)
        return count;
    int64_t alive = 0;
    for (int64_t k = 0; k < count; k++) {
        topo_link_id_t buf[TOPO_MAX_ROUTE];
        int n = 0;
        if (route_one(t, f, TOPO_ROUTING_ECMP_SPREAD, k, buf, &n) == TOPO_OK &&
            !topo_i_path_failed(t, buf, n))
            alive++;
    }
    return alive;
}

int64_t topo_route_path_count(const topo_t *t, const topo_flow_t *f) {
    topo_routing_t r;
    if (check_flow(t, f, &r))
        return 0;
    return r == TOPO_ROUTING_ECMP_SPREAD ? spread_alive(t, f) : 1;
}

int topo_route_paths(const topo_t *t, const topo_flow_t *f, topo_link_id_t *links, int links_cap,
                     int *path_len, double *weight, int paths_cap) {
    topo_routing_t r;
    int rc = check_flow(t, f, &r);
    if (rc)
        return rc;
    const int64_t count = r == TOPO_ROUTING_ECMP_SPREAD ? spread_count(t, f) : 1;
    const int64_t alive = r == TOPO_ROUTING_ECMP_SPREAD ? spread_alive(t, f) : 1;
    if (alive == 0)
        return TOPO_EUNREACHABLE;
    if (alive > paths_cap)
        return TOPO_ERANGE;
    int used = 0, out = 0;
    for (int64_t k = 0; k < count; k++) {
        topo_link_id_t buf[TOPO_MAX_ROUTE];
        int n = 0;
        if (f->src_gpu != f->dst_gpu &&
            (rc = route_one(t, f, r, r == TOPO_ROUTING_ECMP_SPREAD ? k : -1, buf, &n)))
            return rc;
        if (topo_i_path_failed(t, buf, n)) {
            if (r != TOPO_ROUTING_ECMP_SPREAD)
                return TOPO_EUNREACHABLE;
            continue;
        }
        if (used + n > links_cap)
            return TOPO_ERANGE;
        memcpy(links + used, buf, (size_t)n * sizeof *buf);
        used += n;
        path_len[out] = n;
        if (weight)
            weight[out] = 1.0 / (double)alive;
        out++;
    }
    return out;
}
