/* route_table.c - routes on imported (GraphML) graphs from a next-hop table built once: for every
 * destination GPU a BFS over links backwards records, for each vertex, the first link (lowest id
 * among those reached first) that leads one hop closer. A lookup follows the table: O(path length).
 *
 * Failed links (perturb.c) are left out of the search, and topo_links_change builds the table again.
 *
 * Memory is GPUs x vertices x 4 bytes, capped at TOPO_TABLE_MAX entries (TOPO_ETOOBIG beyond).
 */
#include <stdlib.h>

#include "alloc.h"
#include "topo_internal.h"

#define TOPO_TABLE_MAX (INT64_C(1) << 27) /* 128 Mi entries, 512 MiB */

/* BFS backwards from dst; fills next[v] and returns the largest hop count from a GPU. */
static int32_t table_bfs(const topo_t *t, int64_t dst, const int32_t *off, const int32_t *in, int32_t *next,
                         int32_t *dist, int32_t *queue) {
    for (int64_t v = 0; v < t->n_vertices; v++) {
        next[v] = -1;
        dist[v] = -1;
    }
    int64_t head = 0, tail = 0;
    dist[dst] = 0;
    queue[tail++] = (int32_t)dst;
    int32_t far = 0;
    while (head < tail) {
        int32_t u = queue[head++];
        if (t->v_kind[u] == TOPO_VERTEX_GPU && dist[u] > far)
            far = dist[u];
        for (int32_t i = off[u]; i < off[u + 1]; i++) {
            int32_t v = t->l_from[in[i]];
            if (dist[v] < 0 && !(t->l_failed && t->l_failed[in[i]])) {
                dist[v] = dist[u] + 1;
                next[v] = in[i];
                queue[tail++] = v;
            }
        }
    }
    return far;
}

int topo_i_build_table(topo_t *t, topo_issue_t *issue) {
    int64_t V = t->n_vertices, G = t->n_gpus;
    if (G * V > TOPO_TABLE_MAX) {
        topo_i_set_issuef(issue, "file", G * V,
                          "GPUs x vertices exceed the route-table limit of %lld entries for imported graphs",
                          (long long)TOPO_TABLE_MAX);
        return TOPO_ETOOBIG;
    }
    t->table = alloc_calloc(1, sizeof *t->table);
    int32_t *off = NULL, *in = NULL;
    int32_t *dist = alloc_malloc((size_t)V * sizeof *dist), *queue = alloc_malloc((size_t)V * sizeof *queue);
    int rc = TOPO_ENOMEM;
    if (!t->table || !dist || !queue || topo_i_in_csr(t, &off, &in))
        goto done;
    t->table->next = alloc_malloc((size_t)(G * V) * sizeof *t->table->next);
    if (!t->table->next)
        goto done;
    int32_t far = 0;
    for (int64_t g = 0; g < G; g++) {
        int32_t f = table_bfs(t, t->gpu_vertex[g], off, in, t->table->next + g * V, dist, queue);
        far = f > far ? f : far;
    }
    rc = TOPO_OK;
    t->max_route_links = far;
    if (far > TOPO_MAX_ROUTE) {
        topo_i_set_issuef(issue, "file", far, "links on a shortest GPU path; at most %d allowed",
                          TOPO_MAX_ROUTE);
        rc = TOPO_ETOOBIG;
    }
done:
    free(off);
    free(in);
    free(dist);
    free(queue);
    return rc;
}

int topo_i_route_table(const topo_t *t, int64_t src_gpu, int64_t dst_gpu, topo_link_id_t *links, int *n,
                       int cap) {
    const int32_t *next = t->table->next + dst_gpu * t->n_vertices;
    int64_t v = t->gpu_vertex[src_gpu], dst = t->gpu_vertex[dst_gpu];
    while (v != dst) {
        int32_t l = next[v];
        if (l < 0 || *n >= cap)
            return l < 0 ? TOPO_EUNREACHABLE : TOPO_ERANGE;
        links[(*n)++] = l;
        v = t->l_to[l];
    }
    return TOPO_OK;
}
