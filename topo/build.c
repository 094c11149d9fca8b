/* build.c - topo_new/topo_free, the growable vertex and link arrays every builder appends to, the
 * node-local part (GPUs, NVSwitch or mesh, NICs), and the common finish: adjacency, the igraph graph
 * and the check that every GPU pair is connected.
 *
 * Every built kind creates GPU vertices first (GPU i is vertex i) and then appends cables; a cable
 * is two links with consecutive ids so that link 2c ^ 1 is always the reverse direction.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "topo_internal.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int grow(void **ptr, size_t elem, int64_t cap) {
    void *q = alloc_realloc(*ptr, elem * (size_t)cap);
    if (!q)
        return -1;
    *ptr = q;
    return 0;
}

static int grow_vertices(topo_t *t) {
    int64_t cap = t->v_cap ? 2 * t->v_cap : 1024;
    if (cap > INT32_MAX)
        cap = INT32_MAX;
    if (grow((void **)&t->v_kind, 1, cap) || grow((void **)&t->v_node, 4, cap) ||
        grow((void **)&t->v_tier, 4, cap) || grow((void **)&t->v_group, 4, cap) ||
        grow((void **)&t->v_rack, 4, cap) || grow((void **)&t->v_rank, 4, cap) ||
        grow((void **)&t->v_index, 4, cap))
        return -1;
    t->v_cap = cap;
    return 0;
}

int64_t topo_i_vertex(topo_t *t, topo_vertex_kind_t kind, int64_t node, int64_t tier, int64_t group,
                      int64_t rack, int64_t index) {
    if (t->n_vertices >= INT32_MAX - 1)
        return -1;
    if (t->n_vertices == t->v_cap && grow_vertices(t))
        return -1;
    int64_t v = t->n_vertices++;
    t->v_kind[v] = (uint8_t)kind;
    t->v_node[v] = (int32_t)node;
    t->v_tier[v] = (int32_t)tier;
    t->v_group[v] = (int32_t)group;
    t->v_rack[v] = (int32_t)rack;
    t->v_rank[v] = -1;
    t->v_index[v] = (int32_t)index;
    return v;
}

static int grow_links(topo_t *t) {
    int64_t cap = t->l_cap ? 2 * t->l_cap : 4096;
    if (cap > INT32_MAX)
        cap = INT32_MAX;
    if (grow((void **)&t->l_from, 4, cap) || grow((void **)&t->l_to, 4, cap) ||
        grow((void **)&t->l_cable, 4, cap) || grow((void **)&t->l_kind, 1, cap) ||
        grow((void **)&t->l_tech, 1, cap) || grow((void **)&t->l_bw, 8, cap) ||
        grow((void **)&t->l_lat, 8, cap) || grow((void **)&t->l_eff, 8, cap))
        return -1;
    t->l_cap = cap;
    return 0;
}

int64_t topo_i_link(topo_t *t, int64_t u, int64_t v, int64_t cable, topo_link_kind_t kind, double bw,
                    double lat) {
    if (t->n_links >= INT32_MAX - 2)
        return -1;
    if (t->n_links == t->l_cap && grow_links(t))
        return -1;
    int64_t l = t->n_links++;
    t->l_from[l] = (int32_t)u;
    t->l_to[l] = (int32_t)v;
    t->l_cable[l] = (int32_t)cable;
    t->l_kind[l] = (uint8_t)kind;
    t->l_tech[l] = (uint8_t)t->kind_tech[kind];
    t->l_eff[l] = topo_tech_info(t->kind_tech[kind])->efficiency;
    t->l_bw[l] = bw;
    t->l_lat[l] = lat;
    return l;
}

int64_t topo_i_cable(topo_t *t, int64_t u, int64_t v, topo_link_kind_t kind, double bw, double lat) {
    int64_t c = t->n_links / 2;
    if (topo_i_link(t, u, v, c, kind, bw, lat) < 0 || topo_i_link(t, v, u, c, kind, bw, lat) < 0)
        return -1;
    return c;
}

/* ---- nodes ------------------------------------------------------------------------------------- */

int64_t topo_i_endpoint_vertex(const topo_t *t, int64_t e) {
    return t->nodes.has_nic ? t->nodes.nic_vertex0 + e : e;
}

static int node_vertices(topo_t *t) {
    const topo_nodes_t *nd = &t->nodes;
    for (int64_t i = 0; i < t->n_gpus; i++) {
        if (topo_i_vertex(t, TOPO_VERTEX_GPU, i / nd->G, 0, -1, -1, i) < 0)
            return TOPO_ENOMEM;
        t->v_rank[i] = (int32_t)i;
    }
    t->nodes.nvs_vertex0 = (int32_t)t->n_vertices;
    for (int64_t n = 0; nd->has_nvs && n < t->n_nodes; n++)
        if (topo_i_vertex(t, TOPO_VERTEX_NVSWITCH, n, 0, -1, -1, n) < 0)
            return TOPO_ENOMEM;
    t->nodes.nic_vertex0 = (int32_t)t->n_vertices;
    for (int64_t e = 0; nd->has_nic && e < t->n_endpoints; e++)
        if (topo_i_vertex(t, TOPO_VERTEX_NIC, e / nd->M, 0, -1, -1, e) < 0)
            return TOPO_ENOMEM;
    return TOPO_OK;
}

static int node_cables(topo_t *t, const topo_node_params_t *np) {
    topo_nodes_t *nd = &t->nodes;
    int64_t G = nd->G;
    nd->nvl_cable0 = (int32_t)(t->n_links / 2);
    for (int64_t i = 0; nd->has_nvs && i < t->n_gpus; i++)
        if (topo_i_cable(t, i, nd->nvs_vertex0 + i / G, TOPO_LINK_NVLINK, np->nvlink_bandwidth_bytes_per_s,
                         np->nvlink_latency_s) < 0)
            return TOPO_ENOMEM;
    double pair_bw = G > 1 ? np->nvlink_bandwidth_bytes_per_s / (double)(G - 1) : 0;
    for (int64_t n = 0; nd->has_mesh && n < t->n_nodes; n++)
        for (int64_t i = 0; i < G; i++)
            for (int64_t j = i + 1; j < G; j++)
                if (topo_i_cable(t, n * G + i, n * G + j, TOPO_LINK_NVLINK, pair_bw, np->nvlink_latency_s) <
                    0)
                    return TOPO_ENOMEM;
    nd->pcie_cable0 = (int32_t)(t->n_links / 2);
    int64_t per_nic = G / nd->M;
    for (int64_t i = 0; nd->has_nic && i < t->n_gpus; i++) {
        int64_t e = (i / G) * nd->M + (i % G) / per_nic;
        if (topo_i_cable(t, i, nd->nic_vertex0 + e, TOPO_LINK_PCIE, np->pcie_bandwidth_bytes_per_s,
                         np->pcie_latency_s) < 0)
            return TOPO_ENOMEM;
    }
    return TOPO_OK;
}

int topo_i_build_nodes(topo_t *t, const topo_params_t *p) {
    topo_nodes_t *nd = &t->nodes;
    nd->G = p->node.gpus_per_node;
    nd->M = p->node.nics_per_node;
    nd->scaleup = p->node.scaleup;
    nd->has_nvs = nd->G > 1 && nd->scaleup == TOPO_SCALEUP_SWITCH;
    nd->has_mesh = nd->G > 1 && nd->scaleup == TOPO_SCALEUP_MESH;
    nd->has_nic = nd->M < nd->G || p->node.pcie_bandwidth_bytes_per_s > 0;
    t->n_nodes = t->n_gpus / nd->G;
    t->n_endpoints = t->n_nodes * nd->M;
    int rc = node_vertices(t);
    return rc ? rc : node_cables(t, &p->node);
}

/* ---- finish ------------------------------------------------------------------------------------ */

int topo_i_from_igraph_error(igraph_error_t e, topo_issue_t *issue, const char *what) {
    if (issue && e == IGRAPH_ENOMEM) {
        snprintf(issue->field, sizeof issue->field, "igraph");
        issue->value[0] = '\0';
        snprintf(issue->rule, sizeof issue->rule, "out of memory in %s", what);
    } else if (issue) {
        snprintf(issue->field, sizeof issue->field, "igraph");
        snprintf(issue->value, sizeof issue->value, "%s", igraph_strerror(e));
        snprintf(issue->rule, sizeof issue->rule, "in %s", what);
    }
    return e == IGRAPH_ENOMEM ? TOPO_ENOMEM : TOPO_EIGRAPH;
}

static int build_adjacency(topo_t *t) {
    int64_t V = t->n_vertices, L = t->n_links;
    t->adj_off = alloc_calloc((size_t)V + 1, sizeof *t->adj_off);
    t->adj_link = alloc_malloc(((size_t)L + 1) * sizeof *t->adj_link);
    if (!t->adj_off || !t->adj_link)
        return TOPO_ENOMEM;
    for (int64_t l = 0; l < L; l++)
        t->adj_off[t->l_from[l] + 1]++;
    for (int64_t v = 0; v < V; v++)
        t->adj_off[v + 1] += t->adj_off[v];
    int32_t *fill = alloc_malloc(((size_t)V + 1) * sizeof *fill);
    if (!fill)
        return TOPO_ENOMEM;
    memcpy(fill, t->adj_off, (size_t)V * sizeof *fill);
    for (int64_t l = 0; l < L; l++)
        t->adj_link[fill[t->l_from[l]]++] = (int32_t)l;
    free(fill);
    return TOPO_OK;
}

static int build_igraph(topo_t *t, topo_issue_t *issue) {
    igraph_vector_int_t edges;
    igraph_error_t e = igraph_vector_int_init(&edges, 2 * t->n_links);
    if (e != IGRAPH_SUCCESS)
        return topo_i_from_igraph_error(e, issue, "building the graph");
    for (int64_t l = 0; l < t->n_links; l++) {
        VECTOR(edges)[2 * l] = t->l_from[l];
        VECTOR(edges)[2 * l + 1] = t->l_to[l];
    }
    e = igraph_create(&t->graph, &edges, t->n_vertices, IGRAPH_DIRECTED);
    igraph_vector_int_destroy(&edges);
    if (e != IGRAPH_SUCCESS)
        return topo_i_from_igraph_error(e, issue, "building the graph");
    t->has_graph = 1;
    return TOPO_OK;
}

void topo_i_bfs(const topo_t *t, int64_t s, int32_t *dist, int32_t *queue) {
    for (int64_t v = 0; v < t->n_vertices; v++)
        dist[v] = -1;
    int64_t head = 0, tail = 0;
    dist[s] = 0;
    queue[tail++] = (int32_t)s;
    while (head < tail) {
        int32_t u = queue[head++];
        for (int32_t i = t->adj_off[u]; i < t->adj_off[u + 1]; i++) {
            int32_t v = t->l_to[t->adj_link[i]];
            if (dist[v] < 0) {
                dist[v] = dist[u] + 1;
                queue[tail++] = v;
            }
        }
    }
}

int topo_i_in_csr(const topo_t *t, int32_t **off_out, int32_t **in_out) {
    int64_t V = t->n_vertices, L = t->n_links;
    int32_t *off = alloc_calloc((size_t)V + 1, sizeof *off);
    int32_t *in = alloc_malloc(((size_t)L + 1) * sizeof *in);
    if (!off || !in) {
        free(off);
        free(in);
        return TOPO_ENOMEM;
    }
    for (int64_t l = 0; l < L; l++)
        off[t->l_to[l] + 1]++;
    for (int64_t v = 0; v < V; v++)
        off[v + 1] += off[v];
    for (int64_t l = 0; l < L; l++)
        in[off[t->l_to[l]]++] = (int32_t)l;
    for (int64_t v = V; v > 0; v--) /* the fill advanced off[v] to the end of v: shift back */
        off[v] = off[v - 1];
    off[0] = 0;
    *off_out = off;
    *in_out = in;
    return TOPO_OK;
}

/* Reverse reachability: which vertices reach s. Built kinds are symmetric by construction, so only
 * GraphML imports need it. */
static int reverse_reach(const topo_t *t, int64_t s, char *seen, int32_t *queue) {
    int32_t *off, *in;
    if (topo_i_in_csr(t, &off, &in))
        return TOPO_ENOMEM;
    memset(seen, 0, (size_t)t->n_vertices);
    int64_t head = 0, tail = 0;
    seen[s] = 1;
    queue[tail++] = (int32_t)s;
    while (head < tail) {
        int32_t u = queue[head++];
        for (int32_t i = off[u]; i < off[u + 1]; i++) {
            int32_t v = t->l_from[in[i]];
            if (!seen[v]) {
                seen[v] = 1;
                queue[tail++] = v;
            }
        }
    }
    free(off);
    free(in);
    return TOPO_OK;
}

static int unreachable(topo_t *t, int64_t a, int64_t b, topo_issue_t *issue) {
    if (issue) {
        int gml = t->kind == TOPO_KIND_GRAPHML;
        snprintf(issue->field, sizeof issue->field, "%s", gml ? "file" : "topology");
        snprintf(issue->value, sizeof issue->value, "%s", t->name);
        snprintf(issue->rule, sizeof issue->rule,
                 "is disconnected: GPU %lld (vertex %d) cannot reach GPU %lld (vertex %d)", (long long)a,
                 t->gpu_vertex[a], (long long)b, t->gpu_vertex[b]);
    }
    return TOPO_EUNREACHABLE;
}

static int check_reachable(topo_t *t, topo_issue_t *issue) {
    int rc = TOPO_ENOMEM;
    int32_t *dist = alloc_malloc((size_t)t->n_vertices * sizeof *dist);
    int32_t *queue = alloc_malloc((size_t)t->n_vertices * sizeof *queue);
    char *seen = alloc_malloc((size_t)t->n_vertices);
    if (!dist || !queue || !seen)
        goto done;
    topo_i_bfs(t, t->gpu_vertex[0], dist, queue);
    rc = TOPO_OK;
    for (int64_t g = 1; g < t->n_gpus && rc == TOPO_OK; g++)
        if (dist[t->gpu_vertex[g]] < 0)
            rc = unreachable(t, 0, g, issue);
    if (rc == TOPO_OK && t->kind == TOPO_KIND_GRAPHML) {
        rc = reverse_reach(t, t->gpu_vertex[0], seen, queue);
        for (int64_t g = 1; g < t->n_gpus && rc == TOPO_OK; g++)
            if (!seen[t->gpu_vertex[g]])
                rc = unreachable(t, g, 0, issue);
    }
done:
    free(dist);
    free(queue);
    free(seen);
    return rc;
}

int topo_i_finish(topo_t *t, topo_issue_t *issue) {
    if (!t->gpu_vertex) {
        t->gpu_vertex = alloc_malloc((size_t)(t->n_gpus > 0 ? t->n_gpus : 1) * sizeof *t->gpu_vertex);
        if (!t->gpu_vertex)
            return TOPO_ENOMEM;
        for (int64_t g = 0; g < t->n_gpus; g++)
            t->gpu_vertex[g] = (int32_t)g;
    }
    if (t->n_cables == 0)
        t->n_cables = t->n_links / 2;
    double t0 = now_s();
    int rc = build_adjacency(t);
    if (rc == TOPO_OK)
        rc = build_igraph(t, issue);
    double t1 = now_s();
    if (rc == TOPO_OK && t->n_gpus > 1)
        rc = check_reachable(t, issue);
    t->stats.graph_s = t1 - t0;
    t->stats.check_s = now_s() - t1;
    return rc;
}

/* ---- new / free -------------------------------------------------------------------------------- */

static topo_routing_t default_routing(topo_kind_t k) {
    switch (k) {
    case TOPO_KIND_DRAGONFLY:
        return TOPO_ROUTING_MINIMAL;
    case TOPO_KIND_TORUS:
        return TOPO_ROUTING_DOR;
    case TOPO_KIND_GRAPHML:
        return TOPO_ROUTING_SHORTEST;
    default:
        return TOPO_ROUTING_DMODK;
    }
}

static int build_kind(topo_t *t, const topo_params_t *p, topo_issue_t *issue) {
    switch (p->kind) {
    case TOPO_KIND_IDEAL:
    case TOPO_KIND_FAT_TREE:
    case TOPO_KIND_RAIL_OPTIMIZED:
        return topo_i_build_tree(t, p, issue);
    case TOPO_KIND_DRAGONFLY:
        return topo_i_build_dragonfly(t, p, issue);
    case TOPO_KIND_TORUS:
        return topo_i_build_torus(t, p, issue);
    case TOPO_KIND_GRAPHML:
        return topo_i_build_graphml(t, p, issue);
    }
    return TOPO_EINVAL;
}

int topo_new(const topo_params_t *p, topo_t **out, topo_issue_t *issue) {
    *out = NULL;
    if (issue)
        memset(issue, 0, sizeof *issue);
    topo_memory_t need;
    int rc = topo_memory_estimate(p, &need, issue);
    if (rc == TOPO_OK && p->kind != TOPO_KIND_GRAPHML)
        rc = topo_i_memory_check(p, p->name[0] ? p->name : topo_kind_name(p->kind), need.bytes, need.vertices,
                                 need.links, issue);
    if (rc)
        return rc;
    topo_t *t = alloc_calloc(1, sizeof *t);
    if (!t) {
        if (issue)
            topo_i_set_issue(issue, "topology", p->name[0] ? p->name : topo_kind_name(p->kind),
                             "out of memory");
        return TOPO_ENOMEM;
    }
    snprintf(t->name, sizeof t->name, "%s", p->name[0] ? p->name : topo_kind_name(p->kind));
    snprintf(t->source_kind, sizeof t->source_kind, "%s", topo_kind_name(p->kind));
    t->kind = p->kind;
    t->node = p->node;
    const topo_node_params_t *n = &p->node;
    t->kind_tech[TOPO_LINK_NETWORK] =
        p->network ? p->network : topo_tech_for_rate(TOPO_LINK_NETWORK, p->link_bandwidth_bytes_per_s);
    t->kind_tech[TOPO_LINK_NVLINK] = t->node.nvlink_tech =
        n->nvlink_tech ? n->nvlink_tech
                       : topo_tech_for_rate(TOPO_LINK_NVLINK, n->nvlink_bandwidth_bytes_per_s);
    t->kind_tech[TOPO_LINK_PCIE] = t->node.pcie_tech =
        n->pcie_tech ? n->pcie_tech : topo_tech_for_rate(TOPO_LINK_PCIE, n->pcie_bandwidth_bytes_per_s);
    t->routing = p->routing != TOPO_ROUTING_DEFAULT ? p->routing : default_routing(p->kind);
    t->pxn = p->pxn;
    t->seed = p->seed;
    for (int i = 0; i < 4; i++)
        t->tier_names[i] = "switch";
    double t0 = now_s();
    rc = build_kind(t, p, issue);
    t->stats.build_s = now_s() - t0;
    if (rc == TOPO_OK)
        rc = topo_i_finish(t, issue);
    /* a kind's technology is its links' (GraphML files may name their own) */
    int seen[3] = {0, 0, 0};
    for (int64_t l = 0; rc == TOPO_OK && l < t->n_links; l++)
        if (!seen[t->l_kind[l]]++)
            t->kind_tech[t->l_kind[l]] = (topo_tech_t)t->l_tech[l];
    t->node.nvlink_tech = t->kind_tech[TOPO_LINK_NVLINK];
    t->node.pcie_tech = t->kind_tech[TOPO_LINK_PCIE];
    if (rc == TOPO_OK && t->kind == TOPO_KIND_GRAPHML) {
        t0 = now_s();
        rc = topo_i_build_table(t, issue);
        t->stats.table_s = now_s() - t0;
    }
    if (rc == TOPO_ENOMEM && issue)
        topo_i_set_issue(issue, "topology", t->name, "out of memory");
    else if (rc && issue && !issue->rule[0]) /* every failure names its cause */
        topo_i_set_issue(issue, "topology", t->name, "%s", topo_status_name(rc));
    if (rc) {
        topo_free(t);
        return rc;
    }
    *out = t;
    return TOPO_OK;
}

void topo_free(topo_t *t) {
    if (!t)
        return;
    if (t->has_graph)
        igraph_destroy(&t->graph);
    topo_i_free_kind(t);
    free(t->v_kind);
    free(t->v_node);
    free(t->v_tier);
    free(t->v_group);
    free(t->v_rack);
    free(t->v_rank);
    free(t->v_index);
    free(t->gpu_vertex);
    free(t->l_from);
    free(t->l_to);
    free(t->l_cable);
    free(t->l_kind);
    free(t->l_tech);
    free(t->l_bw);
    free(t->l_lat);
    free(t->l_eff);
    free(t->l_factor);
    free(t->l_failed);
    free(t->adj_off);
    free(t->adj_link);
    free(t->diam_sources);
    free(t);
}

static int64_t table_bytes(const topo_t *t) {
    int64_t b = 0;
    if (t->xgft) {
        for (int l = 0; l <= t->xgft->s.h; l++)
            b += t->xgft->n_items[l] * (l < t->xgft->s.h ? 8 : 4);
        b += t->xgft->n_endpoints * 8;
    }
    if (t->dfly)
        b += 12 * t->dfly->g * (t->dfly->g - 1) * t->dfly->n;
    if (t->torus)
        b += 8 * t->torus->n_nodes * t->torus->n_dims;
    if (t->table)
        b += 4 * t->n_gpus * t->n_vertices;
    return b;
}

void topo_build_stats_get(const topo_t *t, topo_build_stats_t *out) {
    *out = t->stats;
    out->route_table_bytes = table_bytes(t);
}

void topo_i_free_kind(topo_t *t) {
    if (t->xgft) {
        for (int l = 0; l < 4; l++) {
            free(t->xgft->up_cable[l]);
            free(t->xgft->item_vertex[l]);
        }
        free(t->xgft->endpoint_slot);
        free(t->xgft);
    }
    if (t->dfly) {
        free(t->dfly->gl_link);
        free(t->dfly->gl_src);
        free(t->dfly->gl_dst);
        free(t->dfly);
    }
    if (t->torus) {
        free(t->torus->arc);
        free(t->torus);
    }
    if (t->table) {
        free(t->table->next);
        free(t->table);
    }
    t->xgft = NULL;
    t->dfly = NULL;
    t->torus = NULL;
    t->table = NULL;
}
