/* tree.c - ideal, fat-tree and rail-optimized topologies, all built as one generalized fat tree
 * (XGFT; see topo_internal.h): level 0 holds endpoint slots, levels 1..h switches.
 *
 * Fat-tree and ideal place endpoint e (node-major NIC order) in slot e; rail-optimized places NIC r of
 * node n (unit su = n / nodes_per_su) in slot (r * su_slots + su) * nodes_per_su + n % nodes_per_su,
 * so that leaf (r, su) of the tree is rail r of unit su and pods group one rail's units. Slots
 * without a node stay empty, and a switch exists only if its subtree holds a node: partly filled
 * units or trees (gpus below the capacity) get no empty leaves.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "topo_internal.h"

static int xgft_init(topo_xgft_t *x, const topo_xgft_shape_t *s) {
    x->s = *s;
    x->M[0] = x->W[0] = x->D[0] = 1;
    for (int l = 1; l <= s->h; l++) {
        x->M[l] = x->M[l - 1] * s->m[l];
        x->W[l] = x->W[l - 1] * s->w[l];
        x->D[l] = x->D[l - 1] * s->w[l] * s->p[l];
    }
    for (int l = 0; l <= s->h; l++) {
        x->n_items[l] = x->M[s->h] / x->M[l] * x->W[l];
        x->item_vertex[l] = alloc_malloc((size_t)x->n_items[l] * sizeof *x->item_vertex[l]);
        if (l < s->h)
            x->up_cable[l] = alloc_malloc((size_t)x->n_items[l] * sizeof *x->up_cable[l]);
        if (!x->item_vertex[l] || (l < s->h && !x->up_cable[l]))
            return TOPO_ENOMEM;
        for (int64_t i = 0; i < x->n_items[l]; i++) {
            x->item_vertex[l][i] = -1;
            if (l < s->h)
                x->up_cable[l][i] = -1;
        }
    }
    return TOPO_OK;
}

static int64_t xgft_parent(const topo_xgft_t *x, int l, int64_t item, int64_t beta) {
    int64_t block = item / x->W[l], bpart = item % x->W[l];
    return block / x->s.m[l + 1] * x->W[l + 1] + bpart + beta * x->W[l];
}

/* endpoint -> slot, and which slots hold an endpoint (item_vertex[0]) */
static int place_endpoints(topo_t *t, topo_xgft_t *x, const topo_rail_shape_t *rail) {
    x->n_endpoints = t->n_endpoints;
    x->endpoint_slot = alloc_malloc((size_t)(t->n_endpoints + 1) * sizeof *x->endpoint_slot);
    if (!x->endpoint_slot)
        return TOPO_ENOMEM;
    int64_t M = t->nodes.M;
    for (int64_t e = 0; e < t->n_endpoints; e++) {
        int64_t slot = e;
        if (rail) {
            int64_t n = e / M, r = e % M;
            slot =
                (r * rail->su_slots + n / rail->nodes_per_su) * rail->nodes_per_su + n % rail->nodes_per_su;
        }
        x->endpoint_slot[e] = slot;
        x->item_vertex[0][slot] = (int32_t)topo_i_endpoint_vertex(t, e);
    }
    return TOPO_OK;
}

/* group: pod for leaves and spines of a 3-tier tree, core plane for cores, -1 otherwise */
static int64_t switch_group(const topo_xgft_t *x, int l, int64_t item) {
    if (x->s.h != 3)
        return -1;
    if (l == 3)
        return item % x->W[2] / x->W[1];
    return item / x->W[l] * x->M[l] / x->M[2];
}

/* Switch vertices, level by level; a switch exists if its block (slot range) holds an endpoint.
 * pop[b] says whether block b of the current level does; blocks of level l+1 are m_{l+1} blocks of
 * level l. */
static int add_switches(topo_t *t, topo_xgft_t *x, int64_t rack0, int leaf_racks_shared) {
    char *pop = alloc_malloc((size_t)x->n_items[0]);
    if (!pop)
        return TOPO_ENOMEM;
    for (int64_t s = 0; s < x->n_items[0]; s++)
        pop[s] = x->item_vertex[0][s] >= 0;
    int64_t rack = rack0;
    for (int l = 1; l <= x->s.h; l++) {
        int64_t blocks = x->n_items[l] / x->W[l], m = x->s.m[l], index = 0;
        for (int64_t b = 0; b < blocks; b++) {
            char any = 0;
            for (int64_t c = 0; c < m; c++)
                any |= pop[b * m + c];
            pop[b] = any; /* b * m >= b: reads stay ahead of writes */
        }
        for (int64_t i = 0; i < x->n_items[l]; i++) {
            if (!pop[i / x->W[l]])
                continue;
            int64_t r = (l == 1 && leaf_racks_shared) ? i : rack++;
            int64_t v = topo_i_vertex(t, TOPO_VERTEX_SWITCH, -1, l, switch_group(x, l, i), r, index++);
            if (v < 0) {
                free(pop);
                return TOPO_ENOMEM;
            }
            x->item_vertex[l][i] = (int32_t)v;
        }
    }
    free(pop);
    return TOPO_OK;
}

static int add_tree_cables(topo_t *t, topo_xgft_t *x, double bw, double lat) {
    for (int l = 0; l < x->s.h; l++) {
        int64_t w = x->s.w[l + 1], p = x->s.p[l + 1];
        for (int64_t i = 0; i < x->n_items[l]; i++) {
            if (x->item_vertex[l][i] < 0)
                continue;
            x->up_cable[l][i] = (int32_t)(t->n_links / 2);
            for (int64_t b = 0; b < w; b++) {
                int64_t parent = x->item_vertex[l + 1][xgft_parent(x, l, i, b)];
                for (int64_t c = 0; c < p; c++)
                    if (topo_i_cable(t, x->item_vertex[l][i], parent, TOPO_LINK_NETWORK, bw, lat) < 0)
                        return TOPO_ENOMEM;
            }
        }
    }
    return TOPO_OK;
}

/* Racks: fat-tree and ideal nodes share the rack of their first NIC's leaf (rack = leaf item);
 * rail-optimized nodes sit in one rack per scalable unit, apart from every switch. */
static void place_nodes(topo_t *t, const topo_xgft_t *x, const topo_rail_shape_t *rail) {
    for (int64_t v = 0; v < t->n_vertices; v++) {
        int64_t n = t->v_node[v];
        if (n < 0)
            continue;
        t->v_rack[v] =
            (int32_t)(rail ? n / rail->nodes_per_su : x->endpoint_slot[n * t->nodes.M] / x->s.m[1]);
    }
}

/* Bisection of the rank halves by formula: a tree whose switches have at least as many up- as
 * down-ports carries half the endpoints' bandwidth across any node-aligned halving; a fat-tree
 * filled completely and split at its top digit carries min over levels of half the up capacity. */
static double tree_closed_bisection(const topo_t *t, const topo_xgft_t *x, const topo_params_t *p, int rail) {
    if (t->n_nodes % 2 != 0)
        return 0;
    double bw = p->link_bandwidth_bytes_per_s;
    double nic =
        t->nodes.has_nic ? p->node.pcie_bandwidth_bytes_per_s * (double)(t->nodes.G / t->nodes.M) : bw;
    double best = (double)t->n_endpoints / 2 * (nic < bw ? nic : bw);
    int nonblocking = 1;
    for (int l = 1; l < x->s.h; l++)
        nonblocking &= x->s.w[l + 1] * x->s.p[l + 1] >= x->s.m[l] * x->s.p[l];
    if (nonblocking)
        return best;
    if (rail || t->n_endpoints != x->M[x->s.h] || x->s.m[x->s.h] % 2 != 0)
        return 0;
    for (int l = 1; l < x->s.h; l++) {
        double up = (double)x->n_items[l] * (double)(x->s.w[l + 1] * x->s.p[l + 1]) * bw / 2;
        if (up < best)
            best = up;
    }
    return best;
}

static int diameter_sources(topo_t *t, const topo_rail_shape_t *rail) {
    int64_t G = t->nodes.G, nodes[3] = {0, t->n_nodes - 1, -1}, n = 0;
    if (rail && rail->n_su > 1)
        nodes[2] = (rail->n_su - 1) * rail->nodes_per_su;
    t->diam_sources = alloc_malloc((size_t)(3 * G) * sizeof *t->diam_sources);
    if (!t->diam_sources)
        return TOPO_ENOMEM;
    for (int k = 0; k < 3; k++)
        for (int64_t i = 0; nodes[k] >= 0 && i < G && (k == 0 || nodes[k] != nodes[0]); i++)
            t->diam_sources[n++] = nodes[k] * G + i;
    t->n_diam_sources = n;
    return TOPO_OK;
}

static int64_t tree_gpus(const topo_params_t *p, const topo_xgft_shape_t *s) {
    if (p->gpus > 0)
        return p->gpus;
    int64_t slots = 1;
    for (int l = 1; l <= s->h; l++)
        slots *= s->m[l];
    return slots / p->node.nics_per_node * p->node.gpus_per_node;
}

int topo_i_build_tree(topo_t *t, const topo_params_t *p, topo_issue_t *issue) {
    topo_rail_shape_t rs;
    int rail = p->kind == TOPO_KIND_RAIL_OPTIMIZED;
    int rc = rail ? topo_i_rail_shape(p, &rs, issue) : topo_i_tree_shape(p, &rs.x, issue);
    if (rc)
        return rc;
    t->n_gpus = tree_gpus(p, &rs.x);
    t->xgft = alloc_calloc(1, sizeof *t->xgft);
    if (!t->xgft)
        return TOPO_ENOMEM;
    topo_xgft_t *x = t->xgft;
    if ((rc = topo_i_build_nodes(t, p)) || (rc = xgft_init(x, &rs.x)) ||
        (rc = place_endpoints(t, x, rail ? &rs : NULL)) || (rc = add_switches(t, x, x->n_items[1], !rail)) ||
        (rc = add_tree_cables(t, x, p->link_bandwidth_bytes_per_s, p->link_latency_s)) ||
        (rc = diameter_sources(t, rail ? &rs : NULL)))
        return rc;
    place_nodes(t, x, rail ? &rs : NULL);
    static const char *const NAMES[3][4] = {
        {"switch", "switch", "", ""}, {"switch", "leaf", "spine", ""}, {"switch", "leaf", "spine", "core"}};
    for (int l = 0; l < 4; l++)
        t->tier_names[l] = NAMES[x->s.h - 1][l][0] ? NAMES[x->s.h - 1][l] : "switch";
    t->closed_bisection_bytes_per_s = tree_closed_bisection(t, x, p, rail);
    t->max_route_links = 2 * x->s.h + 2 + 2;
    return TOPO_OK;
}
