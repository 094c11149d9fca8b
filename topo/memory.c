/* memory.c - what topo_new will allocate, from the parameters alone (topo_memory_estimate), and the
 * default budget it is checked against (topo_memory_budget_bytes).
 *
 * The counts are the builders' own: node-local vertices and cables (build.c), the populated switches
 * and cables of a generalized fat tree (tree.c: a switch exists only if its subtree holds an
 * endpoint), the dragonfly's routers, access, local and global cables (dragonfly.c), the torus'
 * routers and wrap-around cables (torus.c). The bytes per element are read off the code (see the
 * TOPO_MEMORY_* constants in topo.h) and were checked against the peak RSS of `stepsim topo`
 * (docs/topology.md, "Memory budget").
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* sysconf */
#endif
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "checked.h"
#include "topo_internal.h"

/* The capacity the growable arrays reach for n elements (build.c: first, then doubling). */
static double grown(int64_t n, int64_t first) {
    int64_t cap = first;
    while (cap < n && cap < INT32_MAX)
        cap *= 2;
    return (double)cap;
}

/* Node-local vertices (GPUs, NVSwitches, NICs) and cables (NVLink, PCIe) of nodes of G GPUs. */
static void node_counts(const topo_params_t *p, int64_t gpus, topo_memory_t *m) {
    const topo_node_params_t *n = &p->node;
    const int64_t G = n->gpus_per_node, M = n->nics_per_node, nodes = gpus / G;
    const int has_nvs = G > 1 && n->scaleup == TOPO_SCALEUP_SWITCH;
    const int has_mesh = G > 1 && n->scaleup == TOPO_SCALEUP_MESH;
    const int has_nic = M < G || n->pcie_bandwidth_bytes_per_s > 0;
    m->vertices = gpus + (has_nvs ? nodes : 0) + (has_nic ? checked_mul_sat_i64(nodes, M) : 0);
    m->cables = (has_nvs ? gpus : 0) + (has_mesh ? checked_mul_sat_i64(nodes, G * (G - 1) / 2) : 0) +
                (has_nic ? gpus : 0);
}

static int64_t ceil_div(int64_t a, int64_t b) {
    return a / b + (a % b != 0);
}

/* Trees: endpoints fill `rails` runs of `filled` consecutive slots, one run every `span` slots. */
static void tree_counts(const topo_params_t *p, topo_memory_t *m, topo_issue_t *issue, int *rc) {
    topo_rail_shape_t rs;
    const int rail = p->kind == TOPO_KIND_RAIL_OPTIMIZED;
    *rc = rail ? topo_i_rail_shape(p, &rs, issue) : topo_i_tree_shape(p, &rs.x, issue);
    if (*rc)
        return;
    const topo_xgft_shape_t *x = &rs.x;
    int64_t slots = 1;
    for (int l = 1; l <= x->h; l++)
        slots = checked_mul_sat_i64(slots, x->m[l]);
    const int64_t gpus = p->gpus > 0 ? p->gpus : slots / p->node.nics_per_node * p->node.gpus_per_node;
    node_counts(p, gpus, m);
    const int64_t nodes = gpus / p->node.gpus_per_node;
    const int64_t endpoints = checked_mul_sat_i64(nodes, p->node.nics_per_node);
    const int64_t rails = rail ? rs.rails : 1;
    const int64_t filled = rail ? nodes : endpoints;
    const int64_t span = rail ? checked_mul_sat_i64(rs.su_slots, rs.nodes_per_su) : slots;
    int64_t M = 1, W = 1, items = endpoints;                /* items: the populated items of level l */
    double table = 8.0 * (double)endpoints + (double)slots; /* endpoint_slot, add_switches' pop */
    for (int l = 0; l < x->h; l++) {
        m->cables = checked_add_sat_i64(m->cables, checked_mul_sat_i64(items, x->w[l + 1] * x->p[l + 1]));
        M = checked_mul_sat_i64(M, x->m[l + 1]);
        W = checked_mul_sat_i64(W, x->w[l + 1]);
        const int64_t blocks = span % M == 0 ? checked_mul_sat_i64(rails, ceil_div(filled, M))
                                             : ceil_div(checked_add_sat_i64((rails - 1) * span, filled), M);
        items = checked_mul_sat_i64(blocks, W);
        m->vertices = checked_add_sat_i64(m->vertices, items);
    }
    /* item_vertex and up_cable of every level (populated or not): 4 bytes each */
    int64_t all = slots;
    M = 1, W = 1;
    for (int l = 0; l <= x->h; l++) {
        if (l > 0) {
            M = checked_mul_sat_i64(M, x->m[l]);
            W = checked_mul_sat_i64(W, x->w[l]);
            all = checked_mul_sat_i64(slots / M, W);
        }
        table += (l < x->h ? 8.0 : 4.0) * (double)all;
    }
    m->table_bytes = table;
}

static void dragonfly_counts(const topo_params_t *p, topo_memory_t *m) {
    const topo_dragonfly_params_t *d = &p->dragonfly;
    const int64_t routers = checked_mul_sat_i64(d->g, d->a);
    const int64_t slots = checked_mul_sat_i64(routers, d->p);
    const int64_t gpus = p->gpus > 0 ? p->gpus : slots / p->node.nics_per_node * p->node.gpus_per_node;
    node_counts(p, gpus, m);
    const int64_t endpoints = checked_mul_sat_i64(gpus / p->node.gpus_per_node, p->node.nics_per_node);
    const int64_t n = topo_i_dragonfly_links_per_pair(d);
    const int64_t pairs = checked_mul_sat_i64(d->g, d->g - 1) / 2;
    m->vertices = checked_add_sat_i64(m->vertices, routers);
    m->cables = checked_add_sat_i64(m->cables, endpoints);
    m->cables = checked_add_sat_i64(m->cables, checked_mul_sat_i64(d->g, d->a * (d->a - 1) / 2));
    m->cables = checked_add_sat_i64(m->cables, checked_mul_sat_i64(pairs, n));
    m->table_bytes = 12.0 * (double)d->g * (double)(d->g - 1) * (double)n;
}

static void torus_counts(const topo_params_t *p, topo_memory_t *m) {
    const topo_torus_params_t *o = &p->torus;
    int64_t nodes = 1, ring_cables = 0; /* per node: one cable per dimension; of size 2, one per pair */
    for (int64_t i = 0; i < o->n_dims; i++)
        nodes = checked_mul_sat_i64(nodes, o->dims[i]);
    for (int64_t i = 0; i < o->n_dims; i++)
        ring_cables = checked_add_sat_i64(ring_cables, o->dims[i] == 2 ? nodes / 2 : nodes);
    node_counts(p, checked_mul_sat_i64(nodes, p->node.gpus_per_node), m);
    const topo_node_params_t *n = &p->node;
    const int direct = n->gpus_per_node == 1 && n->nics_per_node == 1 && !(n->pcie_bandwidth_bytes_per_s > 0);
    if (!direct) { /* a router per node, a cable per NIC */
        m->vertices = checked_add_sat_i64(m->vertices, nodes);
        m->cables = checked_add_sat_i64(m->cables, checked_mul_sat_i64(nodes, n->nics_per_node));
    }
    m->cables = checked_add_sat_i64(m->cables, ring_cables);
    m->table_bytes = 8.0 * (double)nodes * (double)o->n_dims;
}

double topo_memory_bytes_for(int64_t vertices, int64_t links, double table_bytes) {
    return TOPO_MEMORY_BASE_BYTES + TOPO_MEMORY_VERTEX_ARRAY_BYTES * grown(vertices, 1024) +
           TOPO_MEMORY_BYTES_PER_VERTEX * (double)vertices +
           TOPO_MEMORY_LINK_ARRAY_BYTES * grown(links, 4096) + TOPO_MEMORY_BYTES_PER_LINK * (double)links +
           table_bytes;
}

int topo_memory_estimate(const topo_params_t *p, topo_memory_t *out, topo_issue_t *issue) {
    memset(out, 0, sizeof *out);
    int rc = topo_params_check(p, issue);
    if (rc)
        return rc;
    switch (p->kind) {
    case TOPO_KIND_IDEAL:
    case TOPO_KIND_FAT_TREE:
    case TOPO_KIND_RAIL_OPTIMIZED:
        tree_counts(p, out, issue, &rc);
        break;
    case TOPO_KIND_DRAGONFLY:
        dragonfly_counts(p, out);
        break;
    case TOPO_KIND_TORUS:
        torus_counts(p, out);
        break;
    case TOPO_KIND_GRAPHML:
        return TOPO_OK; /* the counts are in the file: topo_new checks them once it has read it */
    }
    if (rc)
        return rc;
    out->links = checked_mul_sat_i64(out->cables, 2);
    out->bytes = topo_memory_bytes_for(out->vertices, out->links, out->table_bytes);
    return TOPO_OK;
}

double topo_memory_budget_bytes(void) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    double budget = pages > 0 && page > 0 ? 0.5 * (double)pages * (double)page : 8e9;
    struct rlimit lim; /* a process limited below the machine (ulimit -v) gets half its limit */
    if (getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
        0.5 * (double)lim.rlim_cur < budget)
        budget = 0.5 * (double)lim.rlim_cur;
    return budget;
}

int topo_i_memory_check(const topo_params_t *p, const char *name, double need_bytes, int64_t vertices,
                        int64_t links, topo_issue_t *issue) {
    const double budget = p->max_memory_bytes > 0 ? p->max_memory_bytes : topo_memory_budget_bytes();
    if (need_bytes <= budget)
        return TOPO_OK;
    if (issue)
        topo_i_set_issue(issue, "topology", name,
                         "needs about %.3g GB (%lld vertices, %lld links), more than the memory budget of "
                         "%.3g GB (--max-memory); allowed: a smaller topology or a larger budget",
                         need_bytes * 1e-9, (long long)vertices, (long long)links, budget * 1e-9);
    return TOPO_ETOOBIG;
}
