/* check.c - the rules every workload obeys (trace_chakra.h): per node fields, and per rank the
 * dependency graph (unique ids, no dangling dependency, no cycle), shared by reader and writer. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "chakra_internal.h"

/* Open addressing map from node id to local index; capacity a power of two >= 2 x nodes. */
typedef struct id_map {
    uint64_t mask;
    uint64_t *keys;
    int64_t *vals; /* -1 empty */
} id_map_t;

static uint64_t mix64(uint64_t x) { /* splitmix64's finaliser */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static int id_map_init(id_map_t *m, int64_t n) {
    uint64_t cap = 16;
    while (cap < (uint64_t)n * 2)
        cap <<= 1;
    m->mask = cap - 1;
    m->keys = alloc_malloc(cap * sizeof *m->keys);
    m->vals = alloc_malloc(cap * sizeof *m->vals);
    if (!m->keys || !m->vals) {
        free(m->keys);
        free(m->vals);
        return TRACE_ENOMEM;
    }
    memset(m->vals, 0xff, cap * sizeof *m->vals);
    return TRACE_OK;
}

/* Insert id -> v; return the index already there (a duplicate), or -1. */
static int64_t id_map_put(id_map_t *m, uint64_t id, int64_t v) {
    for (uint64_t h = mix64(id) & m->mask;; h = (h + 1) & m->mask) {
        if (m->vals[h] < 0) {
            m->keys[h] = id;
            m->vals[h] = v;
            return -1;
        }
        if (m->keys[h] == id)
            return m->vals[h];
    }
}

static int64_t id_map_get(const id_map_t *m, uint64_t id) {
    for (uint64_t h = mix64(id) & m->mask;; h = (h + 1) & m->mask) {
        if (m->vals[h] < 0)
            return -1;
        if (m->keys[h] == id)
            return m->vals[h];
    }
}

static const char *dep_field(const int32_t *n_data, int64_t node, int32_t k) {
    if (!n_data)
        return "deps";
    return k < n_data[node] ? "data_deps" : "ctrl_deps";
}

/* The index of the node with id d in nodes[0..n) whose ids increase strictly, searched from node i
 * (a dependency is most often a recent node: back in steps that double, then by bisection); -1 if
 * none. */
static int64_t sorted_find(const step_wl_node_t *nodes, int64_t n, int64_t i, uint64_t d) {
    int64_t lo = 0, hi = i;
    if (d >= nodes[i].id) {
        lo = i;
        hi = n;
    } else {
        for (int64_t step = 1; hi - step > 0; step *= 2) {
            if (nodes[hi - step].id < d) {
                lo = hi - step + 1;
                break;
            }
            hi -= step;
            if (nodes[hi].id == d)
                return hi;
        }
    }
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (nodes[mid].id < d)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && nodes[lo].id == d ? lo : -1;
}

/* The common case, checked without allocating: ids strictly increasing in file order (so unique)
 * and every dependency an earlier node (so no cycle). 1 if so; 0 sends the rank through the general
 * check, which also finds and names any error. */
static int backward_only(const step_workload_t *w, const step_wl_node_t *nodes, int64_t n) {
    for (int64_t i = 1; i < n; i++)
        if (nodes[i].id <= nodes[i - 1].id)
            return 0;
    for (int64_t i = 0; i < n; i++) {
        if (nodes[i].n_deps == 0)
            continue; /* (deps may be NULL when no node has any) */
        const uint64_t *deps = w->deps + nodes[i].deps_offset;
        for (int32_t k = 0; k < nodes[i].n_deps; k++) {
            const uint64_t d = deps[k];
            if (d >= nodes[i].id || sorted_find(nodes, n, i, d) < 0)
                return 0;
        }
    }
    return 1;
}

int chakra_check_rank_deps(const step_workload_t *w, int32_t r, const char *label, const int32_t *n_data,
                           char *err, size_t err_size) {
    const int64_t first = w->rank_nodes_offset[r];
    const int64_t n = w->rank_nodes_offset[r + 1] - first;
    if (n == 0)
        return TRACE_OK;
    const step_wl_node_t *nodes = w->nodes + first;
    if (backward_only(w, nodes, n))
        return TRACE_OK;
    /* ids in increasing order (so unique) are found by search, others through a hash map */
    int sorted = 1;
    for (int64_t i = 1; i < n && sorted; i++)
        sorted = nodes[i].id > nodes[i - 1].id;
    id_map_t m;
    memset(&m, 0, sizeof m);
    if (!sorted && id_map_init(&m, n) != TRACE_OK) {
        snprintf(err, err_size, "out of memory");
        return TRACE_ENOMEM;
    }
    int rc = TRACE_OK;
    /* dep_index[start[i] + k]: local index of node i's k-th dependency */
    int64_t n_deps = 0;
    int64_t *start = alloc_malloc((size_t)(n + 1) * sizeof *start);
    if (start) {
        for (int64_t i = 0; i < n; i++) {
            start[i] = n_deps;
            n_deps += nodes[i].n_deps;
        }
        start[n] = n_deps;
    }
    int64_t *dep_index = alloc_malloc((size_t)(n_deps > 0 ? n_deps : 1) * sizeof *dep_index);
    uint8_t *color = alloc_calloc((size_t)n, 1);
    int64_t *stack = alloc_malloc((size_t)n * sizeof *stack);
    int32_t *next = alloc_calloc((size_t)n, sizeof *next);
    if (!start || !dep_index || !color || !stack || !next) {
        snprintf(err, err_size, "out of memory");
        rc = TRACE_ENOMEM;
        goto done;
    }
    for (int64_t i = 0; i < n && !sorted; i++) {
        if (id_map_put(&m, nodes[i].id, i) >= 0) {
            snprintf(err, err_size, "%s: node %" PRIu64 ": id: %" PRIu64 ": duplicate id", label, nodes[i].id,
                     nodes[i].id);
            rc = TRACE_EINVAL;
            goto done;
        }
    }
    int forward = 0; /* a dependency on the node itself or a later one */
    for (int64_t i = 0; i < n; i++) {
        for (int32_t k = 0; k < nodes[i].n_deps; k++) {
            const uint64_t d = w->deps[nodes[i].deps_offset + k];
            const int64_t j = sorted ? sorted_find(nodes, n, i, d) : id_map_get(&m, d);
            if (j < 0) {
                snprintf(err, err_size, "%s: node %" PRIu64 ": %s: %" PRIu64 ": no node %" PRIu64 " in %s",
                         label, nodes[i].id, dep_field(n_data, i, k), d, d,
                         n_data ? "this file" : "this rank");
                rc = TRACE_EINVAL;
                goto done;
            }
            dep_index[start[i] + k] = j;
            forward |= j >= i;
        }
    }
    if (!forward)
        goto done; /* every dependency an earlier node: no cycle */
    /* Iterative depth-first search along dependencies: 1 = on the path, 2 = done. An edge to a node
     * on the path closes a cycle. */
    for (int64_t s = 0; s < n; s++) {
        if (color[s])
            continue;
        int64_t top = 0;
        stack[top++] = s;
        color[s] = 1;
        while (top > 0) {
            const int64_t v = stack[top - 1];
            if (next[v] < nodes[v].n_deps) {
                const int32_t k = next[v]++;
                const int64_t u = dep_index[start[v] + k];
                if (color[u] == 1) {
                    snprintf(err, err_size,
                             "%s: node %" PRIu64 ": %s: %" PRIu64 ": dependency cycle (node %" PRIu64
                             " depends on itself through it)",
                             label, nodes[v].id, dep_field(n_data, v, k), nodes[u].id, nodes[v].id);
                    rc = TRACE_EINVAL;
                    goto done;
                }
                if (color[u] == 0) {
                    color[u] = 1;
                    stack[top++] = u;
                }
            } else {
                color[v] = 2;
                top--;
            }
        }
    }
done:
    free(m.keys);
    free(m.vals);
    free(start);
    free(dep_index);
    free(color);
    free(stack);
    free(next);
    return rc;
}

void chakra_one_line(char *err, size_t err_size) {
    for (size_t i = 0; i < err_size && err[i]; i++)
        if ((unsigned char)err[i] < 0x20 || err[i] == 0x7f)
            err[i] = '?';
}

static int bad(char *err, size_t err_size, int32_t r, const step_wl_node_t *nd, const char *field, double v,
               const char *why) {
    snprintf(err, err_size, "rank %d: node %" PRIu64 ": %s: %.17g: %s", r, nd->id, field, v, why);
    return TRACE_EINVAL;
}

static int check_node(const step_workload_t *w, int32_t r, const step_wl_node_t *nd, char *err,
                      size_t err_size) {
    if (nd->kind < STEP_WL_COMPUTE || nd->kind > STEP_WL_COLL)
        return bad(err, err_size, r, nd, "kind", nd->kind, "not a node kind (0..3)");
    if (nd->name < 0 || (nd->name > 0 && (nd->name >= w->n_names || !w->name_offset || !w->name_chars)))
        return bad(err, err_size, r, nd, "name", nd->name, "not an index of the name table");
    if (nd->kind == STEP_WL_COMPUTE) {
        if (isnan(nd->duration_s) || nd->duration_s > CHAKRA_MAX_DURATION_S)
            return bad(err, err_size, r, nd, "duration_s", nd->duration_s,
                       "not a duration the picosecond clock holds");
        if (!(nd->flops >= 0 && nd->flops < CHAKRA_TWO_63))
            return bad(err, err_size, r, nd, "flops", nd->flops, "not in 0..2^63");
        if (!(nd->mem_bytes >= 0 && nd->mem_bytes < CHAKRA_TWO_63))
            return bad(err, err_size, r, nd, "mem_bytes", nd->mem_bytes, "not in 0..2^63");
        if (nd->duration_s < 0 && nd->flops == 0 && nd->mem_bytes == 0)
            return bad(err, err_size, r, nd, "duration_s", nd->duration_s,
                       "unknown, and neither flops nor mem_bytes give it");
        return TRACE_OK;
    }
    if (!(nd->comm_bytes >= 0 && nd->comm_bytes < CHAKRA_TWO_63))
        return bad(err, err_size, r, nd, "comm_bytes", nd->comm_bytes, "not in 0..2^63");
    if (nd->kind == STEP_WL_COLL) {
        if (nd->coll < STEP_WL_ALLREDUCE || nd->coll > STEP_WL_BROADCAST)
            return bad(err, err_size, r, nd, "coll", nd->coll, "not a collective (0..4)");
        if (nd->group < -1 || nd->group >= w->n_groups)
            return bad(err, err_size, r, nd, "group", nd->group, "not a group index (or -1)");
        if (nd->group >= 0) {
            const step_wl_group_t *g = &w->groups[nd->group];
            int member = 0;
            for (int32_t i = 0; i < g->n_ranks && !member; i++)
                member = w->group_ranks[g->ranks_offset + i] == r;
            if (!member)
                return bad(err, err_size, r, nd, "group", nd->group, "this rank is not a member");
        }
        return TRACE_OK;
    }
    if (nd->peer < 0 || nd->peer >= w->n_ranks || nd->peer == r)
        return bad(err, err_size, r, nd, "peer", nd->peer, "not another rank");
    if (nd->tag < 0 || nd->tag > INT32_MAX)
        return bad(err, err_size, r, nd, "tag", (double)nd->tag, "not in Chakra's comm_tag range 0..2^31-1");
    return TRACE_OK;
}

static int check(const step_workload_t *w, char *err, size_t err_size);

int trace_chakra_check(const step_workload_t *w, char *err, size_t err_size) {
    const int rc = check(w, err, err_size);
    if (rc != TRACE_OK && err_size > 0)
        chakra_one_line(err, err_size);
    return rc;
}

static int check(const step_workload_t *w, char *err, size_t err_size) {
    int rc = chakra_check_shape(w, err, err_size);
    for (int32_t r = 0; rc == TRACE_OK && r < w->n_ranks; r++)
        rc = chakra_check_rank(w, r, err, err_size);
    return rc;
}

int chakra_check_shape(const step_workload_t *w, char *err, size_t err_size) {
    if (!w || w->n_ranks <= 0 || !w->rank_nodes_offset) {
        snprintf(err, err_size, "workload: n_ranks: %d: no ranks", w ? w->n_ranks : 0);
        return TRACE_EINVAL;
    }
    if (w->n_groups < 0 || (w->n_groups > 0 && (!w->groups || !w->group_ranks))) {
        snprintf(err, err_size, "workload: n_groups: %d: groups missing", w->n_groups);
        return TRACE_EINVAL;
    }
    for (int32_t g = 0; g < w->n_groups; g++) {
        const step_wl_group_t *gr = &w->groups[g];
        if (gr->n_ranks <= 0) {
            snprintf(err, err_size, "group %d: n_ranks: %d: no ranks", g, gr->n_ranks);
            return TRACE_EINVAL;
        }
        for (int32_t i = 0; i < gr->n_ranks; i++) {
            const int32_t x = w->group_ranks[gr->ranks_offset + i];
            if (x < 0 || x >= w->n_ranks) {
                snprintf(err, err_size, "group %d: ranks: %d: not a rank (0..%d)", g, x, w->n_ranks - 1);
                return TRACE_EINVAL;
            }
            for (int32_t j = 0; j < i; j++)
                if (w->group_ranks[gr->ranks_offset + j] == x) {
                    snprintf(err, err_size, "group %d: ranks: %d: listed twice", g, x);
                    return TRACE_EINVAL;
                }
        }
    }
    return TRACE_OK;
}

int chakra_check_rank(const step_workload_t *w, int32_t r, char *err, size_t err_size) {
    if (w->rank_nodes_offset[r + 1] < w->rank_nodes_offset[r]) {
        snprintf(err, err_size, "rank %d: rank_nodes_offset: %" PRId64 ": decreasing", r,
                 w->rank_nodes_offset[r + 1]);
        return TRACE_EINVAL;
    }
    for (int64_t i = w->rank_nodes_offset[r]; i < w->rank_nodes_offset[r + 1]; i++) {
        const step_wl_node_t *nd = &w->nodes[i];
        if (nd->n_deps < 0 || nd->deps_offset < 0) {
            snprintf(err, err_size, "rank %d: node %" PRIu64 ": n_deps: %d: negative", r, nd->id, nd->n_deps);
            return TRACE_EINVAL;
        }
        const int rc = check_node(w, r, nd, err, err_size);
        if (rc != TRACE_OK)
            return rc;
    }
    char label[32];
    snprintf(label, sizeof label, "rank %d", r);
    return chakra_check_rank_deps(w, r, label, NULL, err, err_size);
}
