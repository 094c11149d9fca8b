/* summary.c - counts, diameter, bisection and the cost proxy of a topology.
 *
 * Diameter: BFS (hops) from GPUs, the largest distance to any GPU. From every GPU when GPUs x (V + E)
 * stays under DIAMETER_BUDGET link visits, else from the builder's representative GPUs (exact for
 * vertex-transitive tori; for trees and dragonflies the first and last nodes, units and groups).
 * Bisection: igraph's push-relabel max-flow from a super-source feeding ranks [0, n/2) to a
 * super-sink fed by ranks [n - n/2, n), every link at its one-direction capacity, the super links
 * unbounded. Builders supply a closed form of the same cut where one applies, for cross-checking.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "topo_internal.h"

#define DIAMETER_BUDGET 3e7

static int diameter(const topo_t *t, topo_summary_t *s) {
    int64_t V = t->n_vertices;
    int32_t *dist = alloc_malloc((size_t)V * sizeof *dist), *queue = alloc_malloc((size_t)V * sizeof *queue);
    if (!dist || !queue) {
        free(dist);
        free(queue);
        return TOPO_ENOMEM;
    }
    s->diameter_exhaustive = (double)t->n_gpus * (double)(V + t->n_links) <= DIAMETER_BUDGET;
    int64_t n = s->diameter_exhaustive ? t->n_gpus : t->n_diam_sources;
    int32_t far = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t src = s->diameter_exhaustive ? k : t->diam_sources[k];
        topo_i_bfs(t, t->gpu_vertex[src], dist, queue);
        for (int64_t g = 0; g < t->n_gpus; g++)
            far = dist[t->gpu_vertex[g]] > far ? dist[t->gpu_vertex[g]] : far;
    }
    s->diameter_hops = far;
    free(dist);
    free(queue);
    return TOPO_OK;
}

/* t's links plus a super-source (vertex V) feeding ranks [0, n/2) and a super-sink (V + 1) fed by
 * ranks [n - n/2, n). Built fresh rather than copied, so that it never depends on which igraph
 * attribute table was installed when t's graph was made. */
static igraph_error_t flow_graph(const topo_t *t, igraph_t *g) {
    int64_t half = t->n_gpus / 2, V = t->n_vertices, L = t->n_links;
    igraph_vector_int_t edges;
    IGRAPH_CHECK(igraph_vector_int_init(&edges, 2 * (L + 2 * half)));
    for (int64_t l = 0; l < L; l++) {
        VECTOR(edges)[2 * l] = t->l_from[l];
        VECTOR(edges)[2 * l + 1] = t->l_to[l];
    }
    for (int64_t i = 0; i < half; i++) {
        igraph_integer_t *e = &VECTOR(edges)[2 * (L + 2 * i)];
        e[0] = V;
        e[1] = t->gpu_vertex[i];
        e[2] = t->gpu_vertex[t->n_gpus - half + i];
        e[3] = V + 1;
    }
    igraph_error_t e = igraph_create(g, &edges, V + 2, IGRAPH_DIRECTED);
    igraph_vector_int_destroy(&edges);
    return e;
}

static int bisection(const topo_t *t, double *out, topo_issue_t *issue) {
    *out = 0;
    if (t->n_gpus < 2)
        return TOPO_OK;
    int64_t L = t->n_links, half = t->n_gpus / 2;
    igraph_vector_t cap;
    igraph_error_t e = igraph_vector_init(&cap, L + 2 * half);
    if (e != IGRAPH_SUCCESS)
        return topo_i_from_igraph_error(e, issue, "the bisection max-flow");
    double big = 1; /* more than every link together: the super links never bind */
    for (int64_t l = 0; l < L; l++) {
        VECTOR(cap)[l] = t->l_failed && t->l_failed[l] ? 0.0 : t->l_bw[l]; /* a failed link carries nothing */
        big += t->l_bw[l];
    }
    for (int64_t i = 0; i < 2 * half; i++)
        VECTOR(cap)[L + i] = big;
    igraph_t g;
    e = flow_graph(t, &g);
    if (e == IGRAPH_SUCCESS) {
        igraph_real_t value = 0;
        e = igraph_maxflow_value(&g, &value, t->n_vertices, t->n_vertices + 1, &cap, NULL);
        *out = value;
        igraph_destroy(&g);
    }
    igraph_vector_destroy(&cap);
    return e == IGRAPH_SUCCESS ? TOPO_OK : topo_i_from_igraph_error(e, issue, "the bisection max-flow");
}

static void tech_use(const topo_t *t, int64_t l, topo_summary_t *s) {
    const topo_tech_t tech = (topo_tech_t)t->l_tech[l];
    for (int i = 0; i < s->n_techs; i++) {
        topo_tech_use_t *u = &s->techs[i];
        if (u->tech == tech && u->bandwidth_bytes_per_s == t->l_bw[l] && u->latency_s == t->l_lat[l]) {
            u->links++;
            return;
        }
    }
    if (s->n_techs == TOPO_SUMMARY_TECHS) {
        s->techs_truncated = 1;
        return;
    }
    s->techs[s->n_techs++] = (topo_tech_use_t){tech, 1, t->l_bw[l], t->l_lat[l]};
}

/* Cables by kind and technology (each counted once), optical cables, injection bandwidth. */
static int cables(const topo_t *t, topo_summary_t *s) {
    char *seen = alloc_calloc((size_t)t->n_cables + 1, 1);
    if (!seen)
        return TOPO_ENOMEM;
    for (int64_t l = 0; l < t->n_links; l++) {
        int32_t u = t->l_from[l], v = t->l_to[l];
        if (t->l_kind[l] == TOPO_LINK_NETWORK &&
            (t->v_kind[u] == TOPO_VERTEX_GPU || t->v_kind[u] == TOPO_VERTEX_NIC))
            s->injection_bandwidth_bytes_per_s += t->l_bw[l];
        if (seen[t->l_cable[l]])
            continue;
        seen[t->l_cable[l]] = 1;
        tech_use(t, l, s);
        switch (t->l_kind[l]) {
        case TOPO_LINK_NVLINK:
            s->nvlink_links++;
            break;
        case TOPO_LINK_PCIE:
            s->pcie_links++;
            break;
        default:
            s->links++;
            if (t->v_rack[u] >= 0 && t->v_rack[v] >= 0 && t->v_rack[u] != t->v_rack[v])
                s->optical_cables++;
        }
    }
    free(seen);
    s->cables = s->links;
    s->optical_transceivers = 2 * s->optical_cables;
    return TOPO_OK;
}

static int summary_compute(const topo_t *t, topo_summary_t *s, topo_issue_t *issue) {
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", t->name);
    s->kind = topo_kind_name(t->kind);
    s->gpus = t->n_gpus;
    s->nodes = t->n_nodes;
    for (int64_t v = 0; v < t->n_vertices; v++) {
        s->switches += t->v_kind[v] == TOPO_VERTEX_SWITCH;
        s->nvswitches += t->v_kind[v] == TOPO_VERTEX_NVSWITCH;
        s->nics += t->v_kind[v] == TOPO_VERTEX_NIC;
    }
    s->bisection_closed_form_bytes_per_s = t->closed_bisection_bytes_per_s;
    int rc = cables(t, s);
    if (rc == TOPO_OK)
        rc = diameter(t, s);
    if (rc == TOPO_OK)
        rc = bisection(t, &s->bisection_bandwidth_bytes_per_s, issue);
    return rc;
}

int topo_summary_compute(const topo_t *t, topo_summary_t *s, topo_issue_t *issue) {
    if (issue)
        memset(issue, 0, sizeof *issue);
    return topo_i_issue_fallback(issue, t->name, summary_compute(t, s, issue));
}
