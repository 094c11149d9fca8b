/* workload.c - per-rank operation DAGs as steps (step.h, "workloads"; docs/workloads.md): an
 * imported workload built onto the engine as a step of its own (step_new_workload), and a built step
 * handed back as a workload (step_workload_export). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "step_internal.h"

#define WL_MAX_NAMES 16384
#define WL_NAME 64
#define WL_MAX_COLORS 63
/* what the import holds per node at its peak (the workload itself, 96 bytes a node and 8 a dependency,
 * and the build's index arrays), beside the step's per operation: the default job's 71 M-node import
 * peaked at 201 bytes a node in all (docs/workloads.md), so 64 + 140 */
#define WL_BUILD_BYTES_PER_NODE 140.0
#define WL_MAX_STREAMS 64 /* the engine's communication streams per GPU */

void step_workload_free(step_workload_t *w) {
    if (w == NULL)
        return;
    free(w->rank_nodes_offset);
    free(w->nodes);
    free(w->deps);
    free(w->groups);
    free(w->group_ranks);
    free(w->name_offset);
    free(w->name_chars);
    step_workload_names_done(w);
    memset(w, 0, sizeof *w);
}

/* ---- node names: one table per workload ---------------------------------------------------------- */

struct step_wl_name_index {
    int64_t cap;   /* slots, a power of two, at least twice the names */
    int32_t *slot; /* [cap]: name index, -1 empty */
    int64_t chars; /* bytes used in name_chars */
    int64_t cap_chars;
    int32_t cap_names;
};

static uint64_t wl_name_hash(const char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)p[i]) * 0x100000001b3ULL;
    return h ^ (h >> 29);
}

void step_workload_names_done(step_workload_t *w) {
    if (w && w->name_index) {
        free(w->name_index->slot);
        free(w->name_index);
        w->name_index = NULL;
    }
}

const char *step_workload_name(const step_workload_t *w, int32_t i) {
    if (!w || i <= 0 || i >= w->n_names || !w->name_offset || !w->name_chars)
        return "";
    return w->name_chars + w->name_offset[i];
}

/* (Re)build the hash index over the names already in the table, with room for at least `need`. */
static int name_index_build(step_workload_t *w, int64_t need) {
    int64_t cap = 1024;
    while (cap < 2 * need)
        cap *= 2;
    struct step_wl_name_index *x = w->name_index;
    if (!x) {
        if (!(x = alloc_calloc(1, sizeof *x)))
            return SIM_ENOMEM;
        x->cap_names = w->n_names;
        x->chars = x->cap_chars = 0;
        for (int32_t i = 0; i < w->n_names; i++) { /* the end of the last name */
            const int64_t e = w->name_offset[i] + (int64_t)strlen(w->name_chars + w->name_offset[i]) + 1;
            if (e > x->chars)
                x->chars = e;
        }
        x->cap_chars = x->chars;
        w->name_index = x;
    }
    int32_t *slot = alloc_malloc((size_t)cap * sizeof *slot);
    if (!slot)
        return SIM_ENOMEM;
    for (int64_t k = 0; k < cap; k++)
        slot[k] = -1;
    for (int32_t i = 1; i < w->n_names; i++) {
        const char *p = w->name_chars + w->name_offset[i];
        for (uint64_t h = wl_name_hash(p, strlen(p)) & (uint64_t)(cap - 1);;
             h = (h + 1) & (uint64_t)(cap - 1))
            if (slot[h] < 0) {
                slot[h] = i;
                break;
            }
    }
    free(x->slot);
    x->slot = slot;
    x->cap = cap;
    return SIM_OK;
}

int step_workload_name_add(step_workload_t *w, const char *name, int32_t *out) {
    const size_t n = name ? strnlen(name, 63) : 0;
    if (n == 0) {
        *out = 0;
        return SIM_OK;
    }
    if (w->n_names == 0) { /* name 0: "" */
        int64_t *off = alloc_malloc(64 * sizeof *off);
        char *ch = alloc_malloc(4096);
        if (!off || !ch) {
            free(off);
            free(ch);
            return SIM_ENOMEM;
        }
        step_workload_names_done(w);
        free(w->name_offset);
        free(w->name_chars);
        ch[0] = '\0';
        off[0] = 0;
        w->name_offset = off;
        w->name_chars = ch;
        w->n_names = 1;
        if (!(w->name_index = alloc_calloc(1, sizeof *w->name_index)))
            return SIM_ENOMEM;
        w->name_index->chars = 1;
        w->name_index->cap_chars = 4096;
        w->name_index->cap_names = 64;
    }
    if ((!w->name_index || 2 * ((int64_t)w->n_names + 1) > w->name_index->cap) &&
        name_index_build(w, 2 * ((int64_t)w->n_names + 1)) != SIM_OK)
        return SIM_ENOMEM;
    struct step_wl_name_index *x = w->name_index;
    const uint64_t mask = (uint64_t)(x->cap - 1);
    uint64_t h = wl_name_hash(name, n) & mask;
    for (; x->slot[h] >= 0; h = (h + 1) & mask) {
        const char *p = w->name_chars + w->name_offset[x->slot[h]];
        if (strncmp(p, name, n) == 0 && p[n] == '\0') {
            *out = x->slot[h];
            return SIM_OK;
        }
    }
    if (w->n_names == INT32_MAX)
        return SIM_ENOMEM;
    if (w->n_names >= x->cap_names) {
        const int32_t c = x->cap_names > INT32_MAX / 2 ? INT32_MAX : 2 * x->cap_names;
        int64_t *off = alloc_realloc(w->name_offset, (size_t)c * sizeof *off);
        if (!off)
            return SIM_ENOMEM;
        w->name_offset = off;
        x->cap_names = c;
    }
    if (x->chars + (int64_t)n + 1 > x->cap_chars) {
        int64_t c = x->cap_chars ? x->cap_chars : 4096;
        while (c < x->chars + (int64_t)n + 1)
            c *= 2;
        char *ch = alloc_realloc(w->name_chars, (size_t)c);
        if (!ch)
            return SIM_ENOMEM;
        w->name_chars = ch;
        x->cap_chars = c;
    }
    memcpy(w->name_chars + x->chars, name, n);
    w->name_chars[x->chars + (int64_t)n] = '\0';
    w->name_offset[w->n_names] = x->chars;
    x->chars += (int64_t)n + 1;
    x->slot[h] = w->n_names;
    *out = w->n_names++;
    return SIM_OK;
}

const char *step_wl_compute_name(step_wl_compute_t c) {
    return c == STEP_WL_COMPUTE_MODEL ? "model" : "trace";
}

int step_wl_compute_parse(const char *text, step_wl_compute_t *out) {
    if (text && strcmp(text, "trace") == 0)
        *out = STEP_WL_COMPUTE_TRACE;
    else if (text && strcmp(text, "model") == 0)
        *out = STEP_WL_COMPUTE_MODEL;
    else
        return SIM_EINVAL;
    return SIM_OK;
}

static const char *coll_kind_name(step_wl_coll_t c) {
    static const char *const N[] = {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast"};
    return (unsigned)c < 5u ? N[c] : "collective";
}

static sim_coll_op_t sim_coll_of(step_wl_coll_t c) {
    switch (c) {
    case STEP_WL_ALLGATHER:
        return SIM_COLL_ALLGATHER;
    case STEP_WL_REDUCESCATTER:
        return SIM_COLL_REDUCESCATTER;
    case STEP_WL_ALLTOALL:
        return SIM_COLL_ALLTOALL;
    case STEP_WL_BROADCAST:
        return SIM_COLL_BROADCAST;
    default:
        return SIM_COLL_ALLREDUCE;
    }
}

static model_coll_op_t model_coll_of(step_wl_coll_t c) {
    switch (c) {
    case STEP_WL_ALLGATHER:
        return MODEL_COLL_ALLGATHER;
    case STEP_WL_REDUCESCATTER:
        return MODEL_COLL_REDUCESCATTER;
    case STEP_WL_ALLTOALL:
        return MODEL_COLL_ALLTOALL;
    case STEP_WL_BROADCAST:
        return MODEL_COLL_BROADCAST;
    default:
        return MODEL_COLL_ALLREDUCE;
    }
}

/* ---- import --------------------------------------------------------------------------------------- */

static uint64_t id_hash(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

/* A point-to-point end: (src, dst, tag, its position in its rank's order). */
typedef struct p2p_end {
    int32_t src, dst;
    int64_t tag;
    int64_t pos, ix;
} p2p_end_t;

static int cmp_p2p(const void *a, const void *b) {
    const p2p_end_t *x = a, *y = b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    if (x->tag != y->tag)
        return x->tag < y->tag ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* A rank's point-to-point channel: (tag, direction, peer) in that order, so channels are numbered
 * by tag first (tag 0 in the fallback by direction and peer). */
static p2p_end_t chan_key(const step_wl_node_t *nd, int by_tag) {
    return (p2p_end_t){.src = nd->kind == STEP_WL_RECV, .dst = nd->peer, .tag = by_tag ? nd->tag : 0};
}

static int cmp_chan(const void *a, const void *b) {
    const p2p_end_t *x = a, *y = b;
    if (x->tag != y->tag)
        return x->tag < y->tag ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return (x->dst > y->dst) - (x->dst < y->dst);
}

/* The streams of a rank's sorted channels (into .pos, from 0): per tag, one per peer it sends to
 * (at least one), then one per peer it receives from (at least one), so a tag's sends and receives
 * keep their places whichever of them a rank has. Returns the streams used. */
static int64_t channel_slots(p2p_end_t *keys, int64_t u) {
    int64_t slots = 0;
    for (int64_t k = 0; k < u;) {
        int64_t z = k;
        while (z < u && keys[z].tag == keys[k].tag)
            z++;
        for (int dir = 0; dir < 2; dir++) {
            int64_t used = 0;
            for (int64_t j = k; j < z; j++)
                if (keys[j].src == dir)
                    keys[j].pos = slots + used++;
            slots += used > 0 ? used : 1;
        }
        k = z;
    }
    return slots;
}

static int cmp_u64(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Everything the import holds while it builds (freed at its end). */
typedef struct wl_build {
    const step_workload_t *w;
    step_t *s;
    int64_t n;            /* nodes */
    int32_t ng;           /* groups, plus one for "every rank" (index w->n_groups) */
    int32_t *rank_of;     /* [n] */
    int32_t *id_slot;     /* one rank's id table: node indices by id hash, -1 empty */
    int64_t id_mask;      /* its slots - 1 (a power of two, at least twice the rank's nodes) */
    int32_t *dep_ix;      /* [deps]: the global index of each dependency */
    int32_t *order;       /* [n]: per rank segment, the nodes in topological order */
    int32_t *pos;         /* [n]: a node's position in its rank's order */
    uint64_t *member;     /* sorted rank << 32 | group of every membership */
    int64_t n_member;     /* memberships */
    int64_t *seq_count;   /* [n_member]: collectives of the group seen on the rank */
    int32_t *color;       /* [ng]: -1 unused */
    int32_t n_colors;     /* streams of collectives */
    int32_t *stream;      /* [n] */
    int32_t *partner;     /* [n]: the matching end of a send or receive */
    int32_t *inst;        /* [n]: a collective's instance */
    int64_t *inst_base;   /* [ng + 1] */
    int32_t *arrived;     /* [instances] */
    uint8_t *here;        /* [n]: a send or receive at the head of its stream */
    int32_t *op;          /* [n]: engine operation */
    int32_t *name_ix;     /* [n]: into names, -1: the kind's */
    int32_t *add_order;   /* [n]: nodes in the order their operations were added */
    int32_t streams;      /* per GPU, compute included */
    int64_t *list_off;    /* [n_ranks * streams + 1] */
    int32_t *list;        /* [n] */
    int64_t *cursor;      /* [n_ranks * streams] */
    int32_t *gbuf, *obuf; /* a collective's members and their operations */
} wl_build_t;

static int wl_fail(wl_build_t *b, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int wl_fail(wl_build_t *b, int rc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->s->err, sizeof b->s->err, fmt, ap);
    va_end(ap);
    return rc;
}

static const step_wl_node_t *node(const wl_build_t *b, int64_t i) {
    return &b->w->nodes[i];
}

/* The id table of rank r (its nodes in file order): -1, or the index of the first node that repeats
 * an earlier node's id. */
static int64_t id_table_fill(wl_build_t *b, int32_t r) {
    const int64_t a = b->w->rank_nodes_offset[r], z = b->w->rank_nodes_offset[r + 1];
    int64_t cap = 16;
    while (cap < 2 * (z - a))
        cap *= 2;
    b->id_mask = cap - 1;
    for (int64_t k = 0; k < cap; k++)
        b->id_slot[k] = -1;
    for (int64_t i = a; i < z; i++) {
        const uint64_t id = b->w->nodes[i].id;
        int64_t k = (int64_t)(id_hash(id) & (uint64_t)b->id_mask);
        for (; b->id_slot[k] >= 0; k = (k + 1) & b->id_mask)
            if (b->w->nodes[b->id_slot[k]].id == id)
                return i;
        b->id_slot[k] = (int32_t)i;
    }
    return -1;
}

/* The global index of node `id` of the rank whose table is filled, -1 if none. */
static int64_t find_id(const wl_build_t *b, uint64_t id) {
    for (int64_t k = (int64_t)(id_hash(id) & (uint64_t)b->id_mask); b->id_slot[k] >= 0;
         k = (k + 1) & b->id_mask)
        if (b->w->nodes[b->id_slot[k]].id == id)
            return b->id_slot[k];
    return -1;
}

/* The membership slot of (rank, group), -1 if the rank is not a member. */
static int64_t find_member(const wl_build_t *b, int32_t r, int32_t g) {
    const uint64_t key = (uint64_t)(uint32_t)r << 32 | (uint32_t)g;
    int64_t lo = 0, hi = b->n_member;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (b->member[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < b->n_member && b->member[lo] == key ? lo : -1;
}

static int32_t group_size(const wl_build_t *b, int32_t g) {
    return g == b->w->n_groups ? b->w->n_ranks : b->w->groups[g].n_ranks;
}

static int32_t group_rank(const wl_build_t *b, int32_t g, int32_t j) {
    return g == b->w->n_groups ? j : b->w->group_ranks[b->w->groups[g].ranks_offset + j];
}

static const char *group_name(const wl_build_t *b, int32_t g) {
    return g == b->w->n_groups ? "(every rank)" : b->w->groups[g].name;
}

static int32_t group_of(const wl_build_t *b, const step_wl_node_t *nd) {
    return nd->group < 0 ? b->w->n_groups : nd->group;
}

#define NODE_FMT "workload: rank %d node %llu: "
#define NODE_ARG(b, i) b->rank_of[i], (unsigned long long)node(b, i)->id

/* The workload's shape, groups, nodes and dependencies. */
static int check(wl_build_t *b) {
    const step_workload_t *w = b->w;
    if (w->n_ranks < 1 || !w->rank_nodes_offset)
        return wl_fail(b, SIM_EINVAL, "workload: n_ranks %d; allowed: 1 or more", w->n_ranks);
    if (w->rank_nodes_offset[0] != 0)
        return wl_fail(b, SIM_EINVAL, "workload: rank_nodes_offset[0] %lld; allowed: 0",
                       (long long)w->rank_nodes_offset[0]);
    for (int32_t r = 0; r < w->n_ranks; r++)
        if (w->rank_nodes_offset[r + 1] < w->rank_nodes_offset[r])
            return wl_fail(b, SIM_EINVAL, "workload: rank %d: rank_nodes_offset decreases", r);
    b->n = w->rank_nodes_offset[w->n_ranks];
    if (b->n > INT32_MAX)
        return wl_fail(b, SIM_EINVAL, "workload: %lld nodes; allowed: at most %d", (long long)b->n,
                       INT32_MAX);
    if (w->n_groups < 0 || (w->n_groups > 0 && (!w->groups || !w->group_ranks)))
        return wl_fail(b, SIM_EINVAL, "workload: n_groups %d without groups", w->n_groups);
    for (int32_t g = 0; g < w->n_groups; g++) {
        const step_wl_group_t *gr = &w->groups[g];
        if (gr->n_ranks < 1 || gr->n_ranks > w->n_ranks)
            return wl_fail(b, SIM_EINVAL, "workload: group %d (%.40s): n_ranks %d; allowed: 1..%d", g,
                           gr->name, gr->n_ranks, w->n_ranks);
        for (int32_t j = 0; j < gr->n_ranks; j++) {
            const int32_t r = w->group_ranks[gr->ranks_offset + j];
            if (r < 0 || r >= w->n_ranks)
                return wl_fail(b, SIM_EINVAL, "workload: group %d (%.40s): member rank %d; allowed: 0..%d", g,
                               gr->name, r, w->n_ranks - 1);
        }
    }
    b->ng = w->n_groups + 1;
    const int64_t n = b->n;
    b->rank_of = alloc_malloc((size_t)(n ? n : 1) * sizeof *b->rank_of);
    int64_t most = 0; /* nodes of the largest rank */
    for (int32_t r = 0; r < w->n_ranks; r++)
        if (w->rank_nodes_offset[r + 1] - w->rank_nodes_offset[r] > most)
            most = w->rank_nodes_offset[r + 1] - w->rank_nodes_offset[r];
    int64_t cap = 16;
    while (cap < 2 * most)
        cap *= 2;
    b->id_slot = alloc_malloc((size_t)cap * sizeof *b->id_slot);
    if (!b->rank_of || !b->id_slot)
        return wl_fail(b, SIM_ENOMEM, "workload: out of memory");
    for (int32_t r = 0; r < w->n_ranks; r++)
        for (int64_t i = w->rank_nodes_offset[r]; i < w->rank_nodes_offset[r + 1]; i++)
            b->rank_of[i] = r;
    int64_t n_deps = 0;
    for (int64_t i = 0; i < n; i++) {
        const step_wl_node_t *nd = node(b, i);
        const int32_t r = b->rank_of[i];
        if ((unsigned)nd->kind > (unsigned)STEP_WL_COLL)
            return wl_fail(b, SIM_EINVAL, NODE_FMT "kind %d; allowed: compute, send, recv, coll",
                           NODE_ARG(b, i), (int)nd->kind);
        if (nd->kind == STEP_WL_COMPUTE) {
            if (!isfinite(nd->duration_s) || nd->duration_s > SIM_OP_MAX_S)
                return wl_fail(b, SIM_EINVAL, NODE_FMT "duration_s %g; allowed: 0..%g, or < 0 for unknown",
                               NODE_ARG(b, i), nd->duration_s, SIM_OP_MAX_S);
            if (!(nd->flops >= 0.0 && isfinite(nd->flops)) ||
                !(nd->mem_bytes >= 0.0 && isfinite(nd->mem_bytes)))
                return wl_fail(b, SIM_EINVAL, NODE_FMT "flops %g, mem_bytes %g; allowed: finite, >= 0",
                               NODE_ARG(b, i), nd->flops, nd->mem_bytes);
        } else {
            if (!(nd->comm_bytes >= 0.0 && nd->comm_bytes <= 1e18))
                return wl_fail(b, SIM_EINVAL, NODE_FMT "comm_bytes %g; allowed: 0..1e18", NODE_ARG(b, i),
                               nd->comm_bytes);
        }
        if (nd->kind == STEP_WL_COLL) {
            if ((unsigned)nd->coll > (unsigned)STEP_WL_BROADCAST)
                return wl_fail(b, SIM_EINVAL,
                               NODE_FMT "coll %d; allowed: allreduce, allgather, reducescatter, alltoall, "
                                        "broadcast",
                               NODE_ARG(b, i), (int)nd->coll);
            if (nd->group < -1 || nd->group >= w->n_groups)
                return wl_fail(b, SIM_EINVAL, NODE_FMT "group %d; allowed: -1 (every rank) or 0..%d",
                               NODE_ARG(b, i), nd->group, w->n_groups - 1);
        }
        if ((nd->kind == STEP_WL_SEND || nd->kind == STEP_WL_RECV) &&
            (nd->peer < 0 || nd->peer >= w->n_ranks || nd->peer == r))
            return wl_fail(b, SIM_EINVAL, NODE_FMT "peer %d; allowed: another rank in 0..%d", NODE_ARG(b, i),
                           nd->peer, w->n_ranks - 1);
        if (nd->name < 0 || (nd->name > 0 && (nd->name >= w->n_names || !w->name_offset || !w->name_chars)))
            return wl_fail(b, SIM_EINVAL, NODE_FMT "name %d; allowed: 0..%d (the name table)", NODE_ARG(b, i),
                           nd->name, w->n_names > 0 ? w->n_names - 1 : 0);
        if (nd->n_deps < 0 || nd->deps_offset < 0 || (nd->n_deps > 0 && !w->deps))
            return wl_fail(b, SIM_EINVAL, NODE_FMT "n_deps %d at %lld", NODE_ARG(b, i), nd->n_deps,
                           (long long)nd->deps_offset);
        n_deps += nd->n_deps;
    }
    for (int32_t r = 0; r < w->n_ranks; r++) {
        const int64_t dup = id_table_fill(b, r);
        if (dup >= 0)
            return wl_fail(b, SIM_EINVAL, NODE_FMT "id: used by two nodes of the rank", NODE_ARG(b, dup));
    }
    b->dep_ix = alloc_malloc((size_t)(n_deps ? n_deps : 1) * sizeof *b->dep_ix);
    if (!b->dep_ix)
        return wl_fail(b, SIM_ENOMEM, "workload: out of memory");
    /* dep_ix is indexed like the node's own deps, compacted: node i's at dep_start(i) */
    int64_t k = 0;
    for (int32_t r = 0; r < w->n_ranks; r++) {
        id_table_fill(b, r);
        for (int64_t i = w->rank_nodes_offset[r]; i < w->rank_nodes_offset[r + 1]; i++) {
            const step_wl_node_t *nd = node(b, i);
            for (int32_t d = 0; d < nd->n_deps; d++) {
                const uint64_t id = w->deps[nd->deps_offset + d];
                const int64_t j = find_id(b, id);
                if (j < 0)
                    return wl_fail(b, SIM_EINVAL, NODE_FMT "deps: node %llu is not a node of rank %d",
                                   NODE_ARG(b, i), (unsigned long long)id, r);
                if (j == i)
                    return wl_fail(b, SIM_EINVAL, NODE_FMT "deps: depends on itself", NODE_ARG(b, i));
                b->dep_ix[k++] = (int32_t)j;
            }
        }
    }
    free(b->id_slot); /* ids are resolved */
    b->id_slot = NULL;
    return SIM_OK;
}

/* Per rank a topological order: the file's if every dependency comes earlier, else Kahn's with the
 * smallest index first; a cycle is named by its smallest node. */
static int topo_order(wl_build_t *b) {
    const step_workload_t *w = b->w;
    const int64_t n = b->n;
    b->order = alloc_malloc((size_t)(n ? n : 1) * sizeof *b->order);
    b->pos = alloc_malloc((size_t)(n ? n : 1) * sizeof *b->pos);
    if (!b->order || !b->pos)
        return wl_fail(b, SIM_ENOMEM, "workload: out of memory");
    int64_t k = 0;
    int sorted = 1;
    for (int64_t i = 0; i < n; i++)
        for (int32_t d = 0; d < node(b, i)->n_deps; d++, k++)
            sorted &= b->dep_ix[k] < i;
    for (int64_t i = 0; i < n; i++)
        b->order[i] = i;
    if (!sorted) {
        /* successors (CSR) and in-degrees */
        int64_t *indeg = alloc_calloc((size_t)(n ? n : 1), sizeof *indeg);
        int64_t *soff = alloc_calloc((size_t)n + 1, sizeof *soff);
        int64_t *succ = alloc_malloc((size_t)(k ? k : 1) * sizeof *succ);
        sim_queue_t *q = sim_queue_new(1024);
        int rc = !indeg || !soff || !succ || !q ? SIM_ENOMEM : SIM_OK;
        int64_t e = 0;
        for (int64_t i = 0; !rc && i < n; i++)
            for (int32_t d = 0; d < node(b, i)->n_deps; d++, e++) {
                soff[b->dep_ix[e] + 1]++;
                indeg[i]++;
            }
        for (int64_t i = 0; !rc && i < n; i++)
            soff[i + 1] += soff[i];
        int64_t *fill = !rc ? alloc_malloc((size_t)(n ? n : 1) * sizeof *fill) : NULL;
        if (!rc && !fill)
            rc = SIM_ENOMEM;
        if (!rc) {
            memcpy(fill, soff, (size_t)n * sizeof *fill);
            e = 0;
            for (int64_t i = 0; i < n; i++)
                for (int32_t d = 0; d < node(b, i)->n_deps; d++, e++)
                    succ[fill[b->dep_ix[e]]++] = i;
        }
        free(fill);
        for (int32_t r = 0; !rc && r < w->n_ranks; r++) {
            const int64_t a = w->rank_nodes_offset[r], z = w->rank_nodes_offset[r + 1];
            int64_t out = a;
            for (int64_t i = a; i < z && !rc; i++)
                if (indeg[i] == 0)
                    rc = sim_queue_push(q, &(sim_event_t){.time_ps = i});
            sim_event_t ev;
            while (!rc && sim_queue_pop(q, &ev)) {
                const int64_t i = ev.time_ps;
                b->order[out++] = i;
                for (int64_t s = soff[i]; s < soff[i + 1] && !rc; s++)
                    if (--indeg[succ[s]] == 0)
                        rc = sim_queue_push(q, &(sim_event_t){.time_ps = succ[s]});
            }
            if (!rc && out < z) {
                int64_t bad = -1;
                for (int64_t i = a; i < z && bad < 0; i++)
                    if (indeg[i] > 0)
                        bad = i;
                free(indeg);
                free(soff);
                free(succ);
                sim_queue_free(q);
                return wl_fail(b, SIM_EINVAL,
                               NODE_FMT "deps: a dependency cycle (%lld nodes of the rank on or after one)",
                               NODE_ARG(b, bad), (long long)(z - out));
            }
        }
        free(indeg);
        free(soff);
        free(succ);
        sim_queue_free(q);
        if (rc)
            return wl_fail(b, SIM_ENOMEM, "workload: out of memory");
    }
    for (int32_t r = 0; r < w->n_ranks; r++)
        for (int64_t i = w->rank_nodes_offset[r]; i < w->rank_nodes_offset[r + 1]; i++)
            b->pos[b->order[i]] = i - w->rank_nodes_offset[r];
    return SIM_OK;
}

/* Memberships, the collectives' streams (a greedy colouring: groups that share a rank differ) and
 * instances, the messages' pairs and channels; the stream of every node. */
static int streams(wl_build_t *b) {
    const step_workload_t *w = b->w;
    const int64_t n = b->n;
    int64_t nm = 0;
    for (int32_t g = 0; g < w->n_groups; g++)
        nm += w->groups[g].n_ranks;
    nm += w->n_ranks;
    b->member = alloc_malloc((size_t)nm * sizeof *b->member);
    b->color = alloc_malloc((size_t)b->ng * sizeof *b->color);
    b->stream = alloc_malloc((size_t)(n ? n : 1) * sizeof *b->stream);
    b->inst = alloc_malloc((size_t)(n ? n : 1) * sizeof *b->inst);
    b->partner = alloc_malloc((size_t)(n ? n : 1) * sizeof *b->partner);
    b->inst_base = alloc_calloc((size_t)b->ng + 1, sizeof *b->inst_base);
    if (!b->member || !b->color || !b->stream || !b->inst || !b->partner || !b->inst_base)
        return wl_fail(b, SIM_ENOMEM, "workload: out of memory");
    for (int32_t g = 0; g < b->ng; g++)
        for (int32_t j = 0; j < group_size(b, g); j++)
            b->member[b->n_member++] = (uint64_t)(uint32_t)group_rank(b, g, j) << 32 | (uint32_t)g;
    qsort(b->member, (size_t)b->n_member, sizeof *b->member, cmp_u64);
    for (int64_t i = 1; i < b->n_member; i++)
        if (b->member[i] == b->member[i - 1])
            return wl_fail(b, SIM_EINVAL, "workload: group %d (%.40s): rank %d listed twice",
                           (int)(uint32_t)b->member[i], group_name(b, (int32_t)(uint32_t)b->member[i]),
                           (int)(b->member[i] >> 32));
    b->seq_count = alloc_calloc((size_t)b->n_member, sizeof *b->seq_count);
    uint64_t *mask = alloc_calloc((size_t)w->n_ranks, sizeof *mask);
    int32_t *n_chan = alloc_calloc((size_t)w->n_ranks, sizeof *n_chan);
    if (!b->seq_count || !mask || !n_chan) {
        free(mask);
        free(n_chan);
        return wl_fail(b, SIM_ENOMEM, "workload: out of memory");
    }
    /* collectives: membership, the k-th of a group on each rank (in the rank's order) */
    int rc = SIM_OK;
    for (int32_t r = 0; r < w->n_ranks && !rc; r++)
        for (int64_t o = w->rank_nodes_offset[r]; o < w->rank_nodes_offset[r + 1] && !rc; o++) {
            const int64_t i = b->order[o];
            const step_wl_node_t *nd = node(b, i);
            if (nd->kind != STEP_WL_COLL)
                continue;
            const int32_t g = group_of(b, nd);
            const int64_t slot = find_member(b, r, g);
            if (slot < 0)
                rc = wl_fail(b, SIM_EINVAL, NODE_FMT "group %d (%.40s): rank %d is not a member",
                             NODE_ARG(b, i), nd->group, group_name(b, g), r);
            else
                b->inst[i] = b->seq_count[slot]++;
        }
    for (int32_t g = 0; g < b->ng && !rc; g++) {
        const int64_t c0 = b->seq_count[find_member(b, group_rank(b, g, 0), g)];
        for (int32_t j = 1; j < group_size(b, g) && !rc; j++) {
            const int32_t r = group_rank(b, g, j);
            const int64_t c = b->seq_count[find_member(b, r, g)];
            if (c != c0)
                rc = wl_fail(
                    b, SIM_EINVAL,
                    "workload: group %d (%.40s): rank %d runs %lld collectives on it, rank %d runs %lld; "
                    "allowed: the same on every member",
                    g, group_name(b, g), r, (long long)c, group_rank(b, g, 0), (long long)c0);
        }
        b->inst_base[g + 1] = b->inst_base[g] + c0;
    }
    /* colours of the groups that are used, in group order */
    int32_t n_colors = 0;
    for (int32_t g = 0; g < b->ng && !rc; g++) {
        b->color[g] = -1;
        if (b->inst_base[g + 1] == b->inst_base[g])
            continue;
        uint64_t used = 0;
        for (int32_t j = 0; j < group_size(b, g); j++)
            used |= mask[group_rank(b, g, j)];
        /* tensor- and context-parallel groups prefer the first stream, data-parallel ones the second
         * (the model's step's layout); then the first free one */
        const char *gn = g < w->n_groups ? w->groups[g].name : "";
        int32_t c = strcmp(gn, "tp") == 0 || strcmp(gn, "cp") == 0 ? 0 : strcmp(gn, "dp") == 0 ? 1 : -1;
        if (c < 0 || (used >> c & 1u))
            for (c = 0; c < WL_MAX_COLORS && (used >> c & 1u);)
                c++;
        if (c >= WL_MAX_COLORS) {
            rc = wl_fail(
                b, SIM_EINVAL,
                "workload: group %d (%.40s): a rank of it is in %d other groups that run collectives; "
                "allowed: at most %d",
                g, group_name(b, g), WL_MAX_COLORS, WL_MAX_COLORS - 1);
            break;
        }
        b->color[g] = c;
        for (int32_t j = 0; j < group_size(b, g); j++)
            mask[group_rank(b, g, j)] |= 1ull << c;
        if (c + 1 > n_colors)
            n_colors = c + 1;
    }
    b->n_colors = n_colors;
    free(mask);
    int64_t n_inst = b->inst_base[b->ng];
    b->arrived = !rc ? alloc_calloc((size_t)(n_inst ? n_inst : 1), sizeof *b->arrived) : NULL;
    if (!rc && !b->arrived)
        rc = wl_fail(b, SIM_ENOMEM, "workload: out of memory");
    for (int64_t i = 0; i < n && !rc; i++) {
        b->partner[i] = -1;
        const step_wl_node_t *nd = node(b, i);
        b->stream[i] = 0;
        if (nd->kind == STEP_WL_COLL) {
            const int32_t g = group_of(b, nd);
            b->inst[i] += b->inst_base[g];
            b->stream[i] = 1 + b->color[g];
        }
    }
    /* messages: sends and receives by (src, dst, tag) in their ranks' orders */
    int64_t ns = 0, nr = 0;
    for (int64_t i = 0; i < n; i++)
        ns += node(b, i)->kind == STEP_WL_SEND, nr += node(b, i)->kind == STEP_WL_RECV;
    p2p_end_t *snd = !rc ? alloc_malloc((size_t)(ns ? ns : 1) * sizeof *snd) : NULL;
    p2p_end_t *rcv = !rc ? alloc_malloc((size_t)(nr ? nr : 1) * sizeof *rcv) : NULL;
    if (!rc && (!snd || !rcv))
        rc = wl_fail(b, SIM_ENOMEM, "workload: out of memory");
    ns = nr = 0;
    for (int64_t i = 0; i < n && !rc; i++) {
        const step_wl_node_t *nd = node(b, i);
        const int32_t r = b->rank_of[i];
        if (nd->kind == STEP_WL_SEND)
            snd[ns++] = (p2p_end_t){r, nd->peer, nd->tag, b->pos[i], i};
        else if (nd->kind == STEP_WL_RECV)
            rcv[nr++] = (p2p_end_t){nd->peer, r, nd->tag, b->pos[i], i};
    }
    if (!rc) {
        qsort(snd, (size_t)ns, sizeof *snd, cmp_p2p);
        qsort(rcv, (size_t)nr, sizeof *rcv, cmp_p2p);
    }
    for (int64_t a = 0, z = 0; !rc && (a < ns || z < nr);) {
        int c = a >= ns ? 1 : z >= nr ? -1 : 0;
        if (c == 0) {
            p2p_end_t x = snd[a], y = rcv[z];
            x.pos = y.pos = 0;
            c = cmp_p2p(&x, &y);
        }
        if (c != 0) {
            const int64_t i = c < 0 ? snd[a].ix : rcv[z].ix;
            rc = wl_fail(b, SIM_EINVAL, NODE_FMT "%s rank %d with tag %lld: no matching %s", NODE_ARG(b, i),
                         c < 0 ? "send to" : "receive from", node(b, i)->peer, (long long)node(b, i)->tag,
                         c < 0 ? "receive" : "send");
            break;
        }
        const int64_t i = snd[a].ix, j = rcv[z].ix;
        if (node(b, j)->comm_bytes != node(b, i)->comm_bytes && node(b, j)->comm_bytes > 0.0) {
            rc = wl_fail(b, SIM_EINVAL,
                         NODE_FMT "comm_bytes %.17g, but its send (rank %d node %llu) has %.17g",
                         NODE_ARG(b, j), node(b, j)->comm_bytes, NODE_ARG(b, i), node(b, i)->comm_bytes);
            break;
        }
        b->partner[i] = j;
        b->partner[j] = i;
        a++, z++;
    }
    free(snd);
    free(rcv);
    /* channels: one stream per (direction, peer, tag) of a rank, after the collectives'; a rank with
     * more than fit: one per (direction, peer) */
    int32_t max_streams = 1 + n_colors;
    for (int32_t r = 0; r < w->n_ranks && !rc; r++) {
        const int64_t a = w->rank_nodes_offset[r], z = w->rank_nodes_offset[r + 1];
        int64_t nk = 0;
        for (int64_t i = a; i < z; i++)
            nk += node(b, i)->kind == STEP_WL_SEND || node(b, i)->kind == STEP_WL_RECV;
        if (nk == 0)
            continue;
        p2p_end_t *keys = alloc_malloc((size_t)nk * sizeof *keys);
        if (!keys) {
            rc = wl_fail(b, SIM_ENOMEM, "workload: out of memory");
            break;
        }
        int64_t u = 0, slots = 0;
        for (int by_tag = 1; by_tag >= 0; by_tag--) {
            nk = 0;
            for (int64_t i = a; i < z; i++)
                if (node(b, i)->kind == STEP_WL_SEND || node(b, i)->kind == STEP_WL_RECV)
                    keys[nk++] = chan_key(node(b, i), by_tag);
            qsort(keys, (size_t)nk, sizeof *keys, cmp_chan);
            u = 0;
            for (int64_t i = 0; i < nk; i++)
                if (u == 0 || cmp_chan(&keys[i], &keys[u - 1]) != 0)
                    keys[u++] = keys[i];
            slots = channel_slots(keys, u);
            if (n_colors + slots <= WL_MAX_STREAMS)
                break;
        }
        if (n_colors + slots > WL_MAX_STREAMS) {
            free(keys);
            rc = wl_fail(b, SIM_EINVAL,
                         "workload: rank %d: %d collective streams and %lld point-to-point streams (a "
                         "direction and peer each); allowed: at most %d streams together",
                         r, n_colors, (long long)slots, WL_MAX_STREAMS);
            break;
        }
        for (int64_t i = a; i < z; i++)
            if (node(b, i)->kind == STEP_WL_SEND || node(b, i)->kind == STEP_WL_RECV) {
                p2p_end_t key = chan_key(node(b, i), 1);
                const p2p_end_t *f = bsearch(&key, keys, (size_t)u, sizeof *keys, cmp_chan);
                if (!f) { /* the fallback: by (direction, peer) */
                    key = chan_key(node(b, i), 0);
                    f = bsearch(&key, keys, (size_t)u, sizeof *keys, cmp_chan);
                }
                b->stream[i] = 1 + n_colors + (int32_t)f->pos;
            }
        free(keys);
        if (1 + n_colors + (int32_t)slots > max_streams)
            max_streams = 1 + n_colors + (int32_t)slots;
    }
    free(n_chan);
    b->streams = max_streams;
    return rc;
}

/* Names: the distinct node names copied once (the engine borrows them), numbered in order of first
 * use by a node, -1 past WL_MAX_NAMES. */
static int names(wl_build_t *b) {
    const int64_t n = b->n;
    const step_workload_t *w = b->w;
    const int32_t nt = w->n_names > 0 ? w->n_names : 1;
    int32_t *first = alloc_malloc((size_t)nt * sizeof *first);
    int32_t *rep = alloc_malloc((size_t)nt * sizeof *rep);
    b->name_ix = alloc_malloc((size_t)(n ? n : 1) * sizeof *b->name_ix);
    int rc = !first || !rep || !b->name_ix ? SIM_ENOMEM : SIM_OK;
    int32_t nn = 0;
    for (int32_t k = 0; k < nt && !rc; k++)
        first[k] = -1;
    for (int64_t i = 0; i < n && !rc; i++) {
        const int32_t t = node(b, i)->name;
        b->name_ix[i] = -1;
        if (t <= 0 || !step_workload_name(w, t)[0])
            continue;
        if (first[t] < 0) {
            rep[nn] = t;
            first[t] = nn++;
        }
        b->name_ix[i] = first[t];
    }
    if (!rc && !(b->s->wl_names = alloc_malloc((size_t)(nn ? nn : 1) * WL_NAME)))
        rc = SIM_ENOMEM;
    for (int32_t k = 0; !rc && k < nn; k++)
        snprintf(b->s->wl_names + (size_t)k * WL_NAME, WL_NAME, "%s", step_workload_name(w, rep[k]));
    free(first);
    free(rep);
    return rc ? wl_fail(b, SIM_ENOMEM, "workload: out of memory") : SIM_OK;
}

/* The engine's name of a node: its own among the first WL_MAX_NAMES distinct (the engine's limit),
 * else its kind's (step_op gives every node's own). */
static const char *name_of(const wl_build_t *b, int64_t i) {
    if (b->name_ix[i] >= 0 && b->name_ix[i] < WL_MAX_NAMES)
        return b->s->wl_names + (size_t)b->name_ix[i] * WL_NAME;
    const step_wl_node_t *nd = node(b, i);
    switch (nd->kind) {
    case STEP_WL_COMPUTE:
        return "compute";
    case STEP_WL_SEND:
    case STEP_WL_RECV:
        return "p2p";
    default:
        return coll_kind_name(nd->coll);
    }
}

/* A compute node's duration (before perturbations). */
static int compute_s(wl_build_t *b, int64_t i, const model_system_t *sys, step_wl_compute_t mode,
                     double *out) {
    const step_wl_node_t *nd = node(b, i);
    if (mode == STEP_WL_COMPUTE_MODEL && (nd->flops > 0.0 || nd->mem_bytes > 0.0)) {
        const double peak =
            sys->matrix_tflop_per_s * 1e12 * (sys->flop_efficiency > 0 ? sys->flop_efficiency : 1.0);
        const double comp = nd->flops > 0.0 ? sys->kernel_overhead_s + nd->flops / peak : 0.0;
        const double mem = nd->mem_bytes / (sys->hbm_gb_per_s * 1e9);
        *out = comp > mem ? comp : mem;
    } else if (nd->duration_s >= 0.0) {
        *out = nd->duration_s;
    } else {
        return wl_fail(b, SIM_EINVAL,
                       NODE_FMT "duration_s unknown; allowed: a duration, or --compute model with flops or "
                                "mem_bytes",
                       NODE_ARG(b, i));
    }
    if (!(*out <= SIM_OP_MAX_S))
        return wl_fail(b, SIM_EINVAL, NODE_FMT "duration %g s; allowed: at most %g", NODE_ARG(b, i), *out,
                       SIM_OP_MAX_S);
    return SIM_OK;
}

static int push_head(wl_build_t *b, sim_queue_t *q, int64_t list) {
    if (b->cursor[list] >= b->list_off[list + 1])
        return SIM_OK;
    const int64_t i = b->list[b->cursor[list]];
    const uint64_t id = node(b, i)->id;
    sim_event_t ev = {.time_ps = id > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)id, .b = list};
    return sim_queue_push(q, &ev);
}

static int engine_fail(wl_build_t *b, int rc, int64_t i) {
    return wl_fail(b, rc, NODE_FMT "%s", NODE_ARG(b, i), sim_engine_last_error(b->s->e));
}

/* Add every node's operation, in the order of the node ids over all ranks (each stream's nodes in
 * their rank's order; a collective or message once every member is at the head of its stream). */
static int add_ops(wl_build_t *b, const model_system_t *sys, step_wl_compute_t mode) {
    const step_workload_t *w = b->w;
    const int64_t n = b->n, nl = (int64_t)w->n_ranks * b->streams;
    b->list_off = alloc_calloc((size_t)nl + 1, sizeof *b->list_off);
    b->list = alloc_malloc((size_t)(n ? n : 1) * sizeof *b->list);
    b->cursor = alloc_malloc((size_t)nl * sizeof *b->cursor);
    b->op = alloc_malloc((size_t)(n ? n : 1) * sizeof *b->op);
    b->here = alloc_calloc((size_t)(n ? n : 1), 1);
    b->add_order = alloc_malloc((size_t)(n ? n : 1) * sizeof *b->add_order);
    b->gbuf = alloc_malloc((size_t)w->n_ranks * sizeof *b->gbuf);
    b->obuf = alloc_malloc((size_t)w->n_ranks * sizeof *b->obuf);
    sim_queue_t *q = sim_queue_new((size_t)nl);
    if (!b->list_off || !b->list || !b->cursor || !b->op || !b->here || !b->add_order || !b->gbuf ||
        !b->obuf || !q) {
        sim_queue_free(q);
        return wl_fail(b, SIM_ENOMEM, "workload: out of memory");
    }
    for (int64_t i = 0; i < n; i++) {
        b->list_off[(int64_t)b->rank_of[i] * b->streams + b->stream[i] + 1]++;
        b->op[i] = -1;
    }
    for (int64_t l = 0; l < nl; l++)
        b->list_off[l + 1] += b->list_off[l];
    memcpy(b->cursor, b->list_off, (size_t)nl * sizeof *b->cursor);
    for (int64_t o = 0; o < n; o++) {
        const int64_t i = b->order[o];
        b->list[b->cursor[(int64_t)b->rank_of[i] * b->streams + b->stream[i]]++] = i;
    }
    memcpy(b->cursor, b->list_off, (size_t)nl * sizeof *b->cursor);
    int rc = SIM_OK;
    for (int64_t l = 0; l < nl && !rc; l++)
        rc = push_head(b, q, l);
    if (rc)
        rc = wl_fail(b, SIM_ENOMEM, "workload: out of memory");
    int64_t added = 0;
    sim_event_t ev;
    step_t *s = b->s;
    while (!rc && sim_queue_pop(q, &ev)) {
        const int64_t l = ev.b, i = b->list[b->cursor[l]];
        const step_wl_node_t *nd = node(b, i);
        const int32_t r = b->rank_of[i];
        if (nd->kind == STEP_WL_COMPUTE) {
            double d = 0.0;
            if ((rc = compute_s(b, i, sys, mode, &d)))
                break;
            d = step_perturb_s(s, r, nd->id, d);
            if ((rc = sim_op_compute(s->e, r, 0, d, name_of(b, i), &b->op[i])))
                return sim_queue_free(q), engine_fail(b, rc, i);
            b->add_order[added++] = i;
            b->cursor[l]++;
            rc = push_head(b, q, l);
        } else if (nd->kind == STEP_WL_COLL) {
            const int32_t g = group_of(b, nd), sz = group_size(b, g);
            if (++b->arrived[b->inst[i]] < sz)
                continue;
            /* every member is at the head of this stream: one collective, checked alike */
            for (int32_t j = 0; j < sz; j++) {
                const int32_t m = group_rank(b, g, j);
                const int64_t ml = (int64_t)m * b->streams + b->stream[i], mi = b->list[b->cursor[ml]];
                if (node(b, mi)->coll != nd->coll || node(b, mi)->comm_bytes != nd->comm_bytes) {
                    sim_queue_free(q);
                    return wl_fail(b, SIM_EINVAL,
                                   NODE_FMT
                                   "%s: %s of %.17g bytes, but rank %d node %llu (the same collective of "
                                   "group %.40s) has %s of %.17g",
                                   NODE_ARG(b, mi), node(b, mi)->coll != nd->coll ? "coll" : "comm_bytes",
                                   coll_kind_name(node(b, mi)->coll), node(b, mi)->comm_bytes, r,
                                   (unsigned long long)nd->id, group_name(b, g), coll_kind_name(nd->coll),
                                   nd->comm_bytes);
                }
                b->gbuf[j] = m;
            }
            const int64_t i0 = b->list[b->cursor[(int64_t)b->gbuf[0] * b->streams + b->stream[i]]];
            const sim_coll_desc_t d = {.op = sim_coll_of(nd->coll),
                                       .algo = SIM_ALGO_AUTO,
                                       .fidelity = SIM_FIDELITY_DEFAULT,
                                       .use_default_mode = 1,
                                       .size_bytes = nd->comm_bytes,
                                       .gpus = b->gbuf,
                                       .n_gpus = sz,
                                       .root = 0,
                                       .stream = b->stream[i],
                                       .name = name_of(b, i0)};
            if ((rc = sim_coll_add(s->e, &d, b->obuf, NULL)))
                return sim_queue_free(q), engine_fail(b, rc, i);
            for (int32_t j = 0; j < sz && !rc; j++) {
                const int64_t ml = (int64_t)b->gbuf[j] * b->streams + b->stream[i],
                              mi = b->list[b->cursor[ml]];
                b->op[mi] = b->obuf[j];
                b->add_order[added++] = mi;
                b->cursor[ml]++;
                rc = push_head(b, q, ml);
            }
        } else {
            b->here[i] = 1;
            const int64_t p = b->partner[i];
            if (!b->here[p])
                continue;
            const int64_t si = nd->kind == STEP_WL_SEND ? i : p, ri = nd->kind == STEP_WL_SEND ? p : i;
            const int32_t src = b->rank_of[si], dst = b->rank_of[ri];
            if ((rc = sim_p2p_add(s->e, src, b->stream[si], dst, b->stream[ri], node(b, si)->comm_bytes,
                                  name_of(b, si), &b->op[si], &b->op[ri])))
                return sim_queue_free(q), engine_fail(b, rc, si);
            b->add_order[added++] = si;
            b->add_order[added++] = ri;
            const int64_t sl = (int64_t)src * b->streams + b->stream[si],
                          rl = (int64_t)dst * b->streams + b->stream[ri];
            b->cursor[sl]++;
            b->cursor[rl]++;
            rc = push_head(b, q, sl);
            if (!rc)
                rc = push_head(b, q, rl);
        }
        if (rc && !s->err[0])
            rc = wl_fail(b, SIM_ENOMEM, "workload: out of memory");
    }
    sim_queue_free(q);
    if (rc)
        return rc;
    if (added < n) {
        /* a stream whose head waits for members or a peer that wait elsewhere */
        for (int64_t l = 0; l < nl; l++)
            if (b->cursor[l] < b->list_off[l + 1]) {
                const int64_t i = b->list[b->cursor[l]];
                const step_wl_node_t *nd = node(b, i);
                if (nd->kind == STEP_WL_COLL)
                    return wl_fail(b, SIM_EINVAL,
                                   NODE_FMT "group %.40s: its collective never has every member at it (the "
                                            "members run the group's collectives, or the messages between "
                                            "them, in different orders)",
                                   NODE_ARG(b, i), group_name(b, group_of(b, nd)));
                return wl_fail(b, SIM_EINVAL,
                               NODE_FMT
                               "%s rank %d (tag %lld) never meets its match at the head of the peer's "
                               "stream (messages between two ranks must be received in the order they "
                               "are sent)",
                               NODE_ARG(b, i), nd->kind == STEP_WL_SEND ? "send to" : "receive from",
                               nd->peer, (long long)nd->tag);
            }
    }
    return SIM_OK;
}

/* Dependencies in the order the operations were added, then every operation's metadata. */
static int deps_and_meta(wl_build_t *b) {
    const step_workload_t *w = b->w;
    step_t *s = b->s;
    /* dep_ix holds node i's dependencies from the sum of the earlier nodes' n_deps: that is its own
     * deps_offset when the workload's deps are laid out in node order (the reader's and the export's),
     * else the starts are counted into dstart */
    int64_t k = 0, *dstart = NULL;
    int compact = 1;
    for (int64_t i = 0; i < b->n && compact; i++) {
        compact = node(b, i)->n_deps == 0 || node(b, i)->deps_offset == k;
        k += node(b, i)->n_deps;
    }
    if (!compact) {
        if (!(dstart = alloc_malloc((size_t)(b->n ? b->n : 1) * sizeof *dstart)))
            return wl_fail(b, SIM_ENOMEM, "workload: out of memory");
        k = 0;
        for (int64_t i = 0; i < b->n; i++) {
            dstart[i] = k;
            k += node(b, i)->n_deps;
        }
    }
    int rc = step_meta_reserve(s, (int32_t)b->n);
    s->wl_op_name = alloc_malloc((size_t)(b->n ? b->n : 1) * sizeof *s->wl_op_name);
    if (!rc && !s->wl_op_name)
        rc = wl_fail(b, SIM_ENOMEM, "workload: out of memory");
    for (int64_t a = 0; a < b->n && !rc; a++) {
        const int64_t i = b->add_order[a];
        const step_wl_node_t *nd = node(b, i);
        const int64_t d0 = dstart ? dstart[i] : nd->deps_offset;
        for (int32_t d = 0; d < nd->n_deps && !rc; d++)
            if ((rc = sim_op_depend(s->e, b->op[i], b->op[b->dep_ix[d0 + d]])))
                rc = engine_fail(b, rc, i);
        if (rc)
            break;
        step_meta_t m = {.coll = -1,
                         .stage = 0,
                         .chunk = -1,
                         .microbatch = -1,
                         .first_block = -1,
                         .pass = -1,
                         .layer0 = -1,
                         .layer1 = -1,
                         .coll_op = -1,
                         .group = -1,
                         .kind = STEP_OP_COMPUTE};
        if (nd->kind == STEP_WL_COMPUTE) {
            m.flops_tflop = nd->flops * 1e-12;
            m.hbm_gb = nd->mem_bytes * 1e-9;
        } else if (nd->kind == STEP_WL_COLL) {
            const char *gn = nd->group >= 0 ? w->groups[nd->group].name : "";
            m.kind = STEP_OP_DP;
            m.group = STEP_GROUP_DP;
            if (strcmp(gn, "tp") == 0 || strcmp(gn, "cp") == 0 || strcmp(gn, "ep") == 0) {
                m.kind =
                    STEP_OP_TP; /* the expert all-to-alls count with the tensor collectives, as in the step */
                m.group = strcmp(gn, "tp") == 0   ? STEP_GROUP_TP
                          : strcmp(gn, "cp") == 0 ? STEP_GROUP_CP
                                                  : STEP_GROUP_EP;
            } else if (strcmp(gn, "edp") == 0) {
                m.group = STEP_GROUP_EDP;
            } /* every other group counts as data-parallel (breakdown and traffic) */
            m.coll_op = (int8_t)model_coll_of(nd->coll);
            m.comm_gb = nd->comm_bytes * 1e-9;
        } else {
            m.kind = STEP_OP_PP;
            m.group = STEP_META_GROUP_PP;
            m.coll_op = MODEL_COLL_P2P;
            m.comm_gb = node(b, nd->kind == STEP_WL_SEND ? i : b->partner[i])->comm_bytes * 1e-9;
        }
        s->wl_op_name[b->op[i] - s->op0] = b->name_ix[i];
        rc = step_meta_put(s, b->op[i], &m);
    }
    free(dstart);
    return rc;
}

/* What only the ordering and add_ops need, freed before the engine's dependencies and the
 * metadata grow the step (the import's peak). */
static void free_ordering(wl_build_t *b) {
    void **p[] = {(void **)&b->order,     (void **)&b->pos,    (void **)&b->stream, (void **)&b->inst,
                  (void **)&b->here,      (void **)&b->list,   (void **)&b->cursor, (void **)&b->list_off,
                  (void **)&b->seq_count, (void **)&b->member, (void **)&b->arrived};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        free(*p[i]);
        *p[i] = NULL;
    }
}

static void wl_build_free(wl_build_t *b) {
    void *p[] = {b->rank_of,   b->id_slot, b->dep_ix, b->order,   b->pos,       b->member,
                 b->seq_count, b->color,   b->stream, b->partner, b->inst,      b->inst_base,
                 b->arrived,   b->here,    b->op,     b->name_ix, b->add_order, b->list_off,
                 b->list,      b->cursor,  b->gbuf,   b->obuf};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        free(p[i]);
}

int step_new_workload(const step_workload_t *w, const step_config_t *cfg, const sim_network_desc_t *net,
                      const model_system_t *system, step_wl_compute_t compute, step_t **out, char *err,
                      size_t err_size) {
    *out = NULL;
    if (err && err_size)
        err[0] = '\0';
    step_t *s = alloc_calloc(1, sizeof *s);
    if (!s) {
        if (err && err_size)
            snprintf(err, err_size, "step: out of memory");
        return SIM_ENOMEM;
    }
    if (cfg)
        s->cfg = *cfg;
    else
        step_config_default(&s->cfg);
    s->workload = 1;
    wl_build_t b;
    memset(&b, 0, sizeof b);
    b.w = w;
    b.s = s;
    int rc = SIM_OK;
    if (!w)
        rc = step_fail(s, SIM_EINVAL, "workload: none given");
    if (!rc && s->cfg.comm != SIM_COMM_NETWORK && s->cfg.comm != SIM_COMM_ANALYTIC)
        rc = step_fail(s, SIM_EINVAL, "comm: %d; allowed: network, analytic", (int)s->cfg.comm);
    if (!rc && compute != STEP_WL_COMPUTE_TRACE && compute != STEP_WL_COMPUTE_MODEL)
        rc = step_fail(s, SIM_EINVAL, "compute: %d; allowed: trace, model", (int)compute);
    if (!rc && !system && (compute == STEP_WL_COMPUTE_MODEL || s->cfg.comm == SIM_COMM_ANALYTIC))
        rc = step_fail(s, SIM_EINVAL, "system: required with --compute model or analytic communication");
    if (!rc && s->cfg.collapse == STEP_COLLAPSE_APPROX)
        rc = step_fail(s, SIM_EINVAL,
                       "collapse: approx with a workload; allowed: auto or off (every rank of a "
                       "workload is simulated)");
    if (!rc)
        rc = check(&b);
    if (!rc) {
        /* the memory budget, as step_new's: the step's bytes per operation plus the import's own */
        const double need_gb = step_memory_estimate_gb(b.n) + WL_BUILD_BYTES_PER_NODE * (double)b.n * 1e-9;
        const double budget_gb = s->cfg.max_memory_gb > 0.0 ? s->cfg.max_memory_gb : step_memory_budget_gb();
        if (need_gb > budget_gb)
            rc = step_fail(s, SIM_EINVAL,
                           "workload: %lld nodes need about %.1f GB, more than the memory budget of %.1f GB "
                           "(--max-memory); allowed: a smaller workload or a larger budget",
                           (long long)b.n, need_gb, budget_gb);
    }
    if (!rc) {
        s->gpus = w->n_ranks;
        s->job.gpus = w->n_ranks;
        s->pp = 1;
        s->v = 1;
        s->m = 0;
        s->per_stage = w->n_ranks;
        s->level = STEP_FULL;
        s->collapse_exact = 1;
        s->granularity = STEP_GRANULARITY_LAYER;
        snprintf(s->collapse_note, sizeof s->collapse_note, "none: a workload, every rank simulated");
        if (system)
            s->job.system = *system;
        rc = step_perturb_init(s);
    }
    if (!rc)
        rc = topo_order(&b);
    if (!rc)
        rc = streams(&b);
    if (!rc)
        rc = names(&b);
    if (!rc && s->cfg.comm == SIM_COMM_NETWORK) {
        if (!net)
            rc = step_fail(s, SIM_EINVAL, "network: required with network communication");
        else if (net->n_gpus < w->n_ranks)
            rc = step_fail(s, SIM_EINVAL,
                           "network: %d GPUs, but the workload has %d ranks; allowed: at least %d",
                           net->n_gpus, w->n_ranks, w->n_ranks);
        if (!rc) {
            s->net = *net;
            s->engine_gpus = net->n_gpus;
            s->gpus_per_domain = net->gpus_per_domain > 0 ? net->gpus_per_domain : 1;
        }
    } else if (!rc) {
        s->engine_gpus = w->n_ranks;
        int64_t g = system->nvlink_size;
        g = g < 1 ? 1 : g > w->n_ranks ? w->n_ranks : g;
        s->gpus_per_domain = (int32_t)g;
        const sim_star_params_t sp = {.n_gpus = w->n_ranks,
                                      .nic_bytes_per_s = 1e9,
                                      .gpus_per_domain = s->gpus_per_domain,
                                      .nvlink_bytes_per_s = 1e9};
        if ((rc = sim_star_init(&s->star, &sp)))
            step_fail(s, rc, "step: the analytic stand-in network: %s", sim_status_name(rc));
        else
            sim_star_network(&s->star, &s->net);
    }
    if (!rc) {
        s->stage_gpus = alloc_malloc((size_t)w->n_ranks * sizeof *s->stage_gpus);
        s->gpu_stage = alloc_malloc((size_t)s->engine_gpus * sizeof *s->gpu_stage);
        s->act_gb = alloc_calloc((size_t)s->engine_gpus, sizeof *s->act_gb);
        s->peak_act_gb = alloc_calloc((size_t)s->engine_gpus, sizeof *s->peak_act_gb);
        if (!s->stage_gpus || !s->gpu_stage || !s->act_gb || !s->peak_act_gb)
            rc = step_fail(s, SIM_ENOMEM, "step: out of memory");
        for (int32_t g = 0; !rc && g < s->engine_gpus; g++)
            s->gpu_stage[g] = g < w->n_ranks ? 0 : -1;
        for (int32_t r = 0; !rc && r < w->n_ranks; r++)
            s->stage_gpus[r] = r;
    }
    if (!rc) {
        s->own_engine = 1;
        sim_config_t ec = s->cfg.engine;
        ec.comm_streams = b.streams - 1 > 0 ? b.streams - 1 : 1;
        ec.comm_mode = s->cfg.comm;
        ec.has_system = system != NULL;
        if (system)
            ec.system = *system;
        char eerr[256];
        rc = sim_engine_new(&ec, &s->net, &s->e, eerr, sizeof eerr);
        if (rc)
            step_fail(s, rc, "engine: %s", eerr);
        else if (b.streams < 2)
            b.streams = 2; /* the engine's streams per GPU, with at least one communication stream */
    }
    if (!rc && b.n > 0)
        rc = sim_engine_reserve(s->e, b.n, (int64_t)(w->deps ? b.n : 0))
                 ? step_fail(s, SIM_ENOMEM, "out of memory")
                 : SIM_OK;
    if (!rc)
        rc = add_ops(&b, system, compute);
    if (!rc)
        free_ordering(&b);
    if (!rc)
        rc = deps_and_meta(&b);
    if (!rc)
        s->op_end = sim_op_count(s->e);
    wl_build_free(&b);
    if (rc) {
        if (err && err_size)
            snprintf(err, err_size, "%s", s->err[0] ? s->err : sim_status_name(rc));
        step_free(s);
        return rc;
    }
    *out = s;
    return SIM_OK;
}

/* ---- export --------------------------------------------------------------------------------------- */

typedef struct ex_groups {
    step_wl_group_t *g;
    int32_t n, cap;
    int32_t *ranks;
    int64_t n_ranks, cap_ranks;
    int32_t *tab; /* open addressing over group indices, -1 empty */
    int64_t tab_cap;
} ex_groups_t;

static uint64_t group_hash(const char *name, const int32_t *gpus, int32_t n) {
    uint64_t h = wl_name_hash(name, strnlen(name, WL_NAME));
    for (int32_t i = 0; i < n; i++)
        h = (h ^ (uint32_t)gpus[i]) * 0x100000001b3ULL;
    return h ^ (h >> 29);
}

static int group_eq(const ex_groups_t *x, int32_t k, const char *name, const int32_t *gpus, int32_t n) {
    const step_wl_group_t *g = &x->g[k];
    return g->n_ranks == n && strcmp(g->name, name) == 0 &&
           memcmp(x->ranks + g->ranks_offset, gpus, (size_t)n * sizeof *gpus) == 0;
}

/* The index of the group (name, members), added if new; -1 out of memory. */
static int32_t group_intern(ex_groups_t *x, const char *name, const int32_t *gpus, int32_t n) {
    if (2 * ((int64_t)x->n + 1) > x->tab_cap) {
        const int64_t cap = x->tab_cap ? 2 * x->tab_cap : 64;
        int32_t *tab = alloc_malloc((size_t)cap * sizeof *tab);
        if (!tab)
            return -1;
        for (int64_t i = 0; i < cap; i++)
            tab[i] = -1;
        for (int32_t k = 0; k < x->n; k++) {
            uint64_t i = group_hash(x->g[k].name, x->ranks + x->g[k].ranks_offset, x->g[k].n_ranks) &
                         (uint64_t)(cap - 1);
            while (tab[i] >= 0)
                i = (i + 1) & (uint64_t)(cap - 1);
            tab[i] = k;
        }
        free(x->tab);
        x->tab = tab;
        x->tab_cap = cap;
    }
    uint64_t i = group_hash(name, gpus, n) & (uint64_t)(x->tab_cap - 1);
    for (; x->tab[i] >= 0; i = (i + 1) & (uint64_t)(x->tab_cap - 1))
        if (group_eq(x, x->tab[i], name, gpus, n))
            return x->tab[i];
    if (x->n == x->cap) {
        const int32_t cap = x->cap ? 2 * x->cap : 16;
        step_wl_group_t *g = alloc_realloc(x->g, (size_t)cap * sizeof *g);
        if (!g)
            return -1;
        x->g = g;
        x->cap = cap;
    }
    if (x->n_ranks + n > x->cap_ranks) {
        int64_t cap = x->cap_ranks ? 2 * x->cap_ranks : 256;
        while (cap < x->n_ranks + n)
            cap *= 2;
        int32_t *r = alloc_realloc(x->ranks, (size_t)cap * sizeof *r);
        if (!r)
            return -1;
        x->ranks = r;
        x->cap_ranks = cap;
    }
    step_wl_group_t *g = &x->g[x->n];
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    g->n_ranks = n;
    g->ranks_offset = x->n_ranks;
    memcpy(x->ranks + x->n_ranks, gpus, (size_t)n * sizeof *gpus);
    x->n_ranks += n;
    x->tab[i] = x->n;
    return x->n++;
}

static int ex_fail(char *err, size_t size, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int ex_fail(char *err, size_t size, int rc, const char *fmt, ...) {
    if (err && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, size, fmt, ap);
        va_end(ap);
    }
    return rc;
}

static int wl_coll_of(sim_coll_op_t op, int32_t root, step_wl_coll_t *out) {
    switch (op) {
    case SIM_COLL_ALLREDUCE:
        *out = STEP_WL_ALLREDUCE;
        return 1;
    case SIM_COLL_ALLGATHER:
        *out = STEP_WL_ALLGATHER;
        return 1;
    case SIM_COLL_REDUCESCATTER:
        *out = STEP_WL_REDUCESCATTER;
        return 1;
    case SIM_COLL_ALLTOALL:
        *out = STEP_WL_ALLTOALL;
        return 1;
    case SIM_COLL_BROADCAST:
        *out = STEP_WL_BROADCAST;
        return root == 0;
    default:
        return 0;
    }
}

/* The nodes of rank r, the only rank of w with nodes (ids: operation ids, increasing; dependencies
 * on nodes of the rank, as step_workload_export_rank makes them), put in a topological order of
 * their dependencies (Kahn's, the smallest id first: the operations' order wherever that is one),
 * the dependencies laid out in that node order, so a reader can take the file's order as it is. */
static int ex_topo_order(step_workload_t *w, int32_t r, char *err, size_t err_size) {
    step_wl_node_t *nd = w->nodes + w->rank_nodes_offset[r];
    const int64_t m = w->rank_nodes_offset[r + 1] - w->rank_nodes_offset[r];
    int64_t n_deps = 0;
    for (int64_t i = 0; i < m; i++)
        n_deps += nd[i].n_deps;
    uint64_t *deps = alloc_malloc((size_t)(n_deps ? n_deps : 1) * sizeof *deps);
    step_wl_node_t *tmp = alloc_malloc((size_t)(m ? m : 1) * sizeof *tmp);
    int32_t *indeg = alloc_calloc((size_t)(m ? m : 1), sizeof *indeg);
    int64_t *soff = alloc_calloc((size_t)m + 1, sizeof *soff);
    int32_t *succ = alloc_malloc((size_t)(n_deps ? n_deps : 1) * sizeof *succ);
    sim_queue_t *q = sim_queue_new(1024);
    int rc = !deps || !tmp || !indeg || !soff || !succ || !q ? SIM_ENOMEM : SIM_OK;
    if (!rc)
        memcpy(tmp, nd, (size_t)m * sizeof *tmp);
    /* successors (CSR): counted, summed to starts, filled (then soff[j] ends j's list) */
    for (int pass = 0; pass < 2 && !rc; pass++) {
        for (int64_t i = 0; i < m && !rc; i++)
            for (int32_t d = 0; d < tmp[i].n_deps && !rc; d++) {
                const uint64_t id = w->deps[tmp[i].deps_offset + d];
                int64_t lo = 0, hi = m; /* the dependency's index: ids increase */
                while (lo < hi) {
                    const int64_t mid = lo + (hi - lo) / 2;
                    if (tmp[mid].id < id)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                if (lo == m || tmp[lo].id != id)
                    rc = ex_fail(err, err_size, SIM_EINVAL,
                                 "export: GPU %d: operation %llu: dependency %llu not found", r,
                                 (unsigned long long)tmp[i].id, (unsigned long long)id);
                else if (pass == 0)
                    soff[lo + 1]++, indeg[i]++;
                else
                    succ[soff[lo]++] = (int32_t)i;
            }
        if (pass == 0)
            for (int64_t j = 0; j < m; j++)
                soff[j + 1] += soff[j];
    }
    for (int64_t i = 0; i < m && !rc; i++)
        if (indeg[i] == 0)
            rc = sim_queue_push(q, &(sim_event_t){.time_ps = i});
    int64_t o = 0, k = 0;
    sim_event_t ev;
    while (!rc && sim_queue_pop(q, &ev)) {
        const int64_t i = ev.time_ps;
        nd[o] = tmp[i];
        nd[o++].deps_offset = k;
        for (int32_t d = 0; d < tmp[i].n_deps; d++)
            deps[k++] = w->deps[tmp[i].deps_offset + d];
        for (int64_t e = i ? soff[i - 1] : 0; e < soff[i] && !rc; e++)
            if (--indeg[succ[e]] == 0)
                rc = sim_queue_push(q, &(sim_event_t){.time_ps = succ[e]});
    }
    if (!rc && o < m)
        rc = ex_fail(err, err_size, SIM_EINVAL, "export: GPU %d: the operations' dependencies form a cycle",
                     r);
    free(tmp);
    free(indeg);
    free(soff);
    free(succ);
    sim_queue_free(q);
    if (rc) {
        free(deps);
        return rc;
    }
    free(w->deps);
    w->deps = deps;
    return SIM_OK;
}

/* ---- export, rank by rank ---------------------------------------------------------------------- */

struct step_wl_export {
    const step_t *s;
    int32_t nr;
    int64_t *gpu_off; /* [nr + 1] */
    int32_t *gpu_ops; /* each GPU's operations in id order */
    ex_groups_t gx;
    int32_t *sbuf; /* successors of one operation */
    int32_t scap;
};

void step_workload_export_end(step_wl_export_t *x) {
    if (!x)
        return;
    free(x->gpu_off);
    free(x->gpu_ops);
    free(x->gx.g);
    free(x->gx.ranks);
    free(x->gx.tab);
    free(x->sbuf);
    free(x);
}

/* op's successors into x->sbuf (grown); their count, -1 out of memory. */
static int32_t ex_successors(step_wl_export_t *x, int32_t op) {
    const int32_t k = sim_op_successors(x->s->e, op, x->sbuf, x->scap);
    if (k > x->scap) {
        free(x->sbuf);
        x->scap = k;
        if (!(x->sbuf = alloc_malloc((size_t)k * sizeof *x->sbuf)))
            return -1;
        sim_op_successors(x->s->e, op, x->sbuf, x->scap);
    }
    return k;
}

/* The group (kind from the metadata, the collective's members) of collective operation op, interned:
 * its index, -1 out of memory, -2 a collective a workload does not carry (err set). */
static int32_t ex_group(step_wl_export_t *x, int32_t op, const sim_op_desc_t *d, step_wl_coll_t *coll,
                        double *size_bytes, char *err, size_t err_size) {
    sim_coll_info_t ci;
    sim_coll_describe(x->s->e, d->coll, &ci);
    *size_bytes = ci.size_bytes;
    if (!wl_coll_of(ci.op, ci.root, coll)) {
        ex_fail(
            err, err_size, SIM_EINVAL,
            "export: operation %d is a %s (root %d), which a workload does not carry; allowed: allreduce, "
            "allgather, reducescatter, alltoall, broadcast from the first member",
            op, sim_coll_op_name(ci.op), ci.root);
        return -2;
    }
    step_meta_t m;
    step_meta_get(x->s, op, &m);
    static const char *const GN[4] = {"tp", "cp", "dp", "pp"};
    return group_intern(&x->gx, m.group >= 0 && m.group < 4 ? GN[m.group] : "group", ci.gpus, ci.n_gpus);
}

int step_workload_export_begin(const step_t *s, step_wl_export_t **out, char *err, size_t err_size) {
    *out = NULL;
    if (err && err_size)
        err[0] = '\0';
    if (!s->own_engine)
        return ex_fail(err, err_size, SIM_EINVAL,
                       "export: a step on a shared engine (several jobs) is not exported");
    if (s->level != STEP_FULL || s->pp * (int64_t)s->per_stage != s->gpus)
        return ex_fail(err, err_size, SIM_EINVAL,
                       "export: %lld of %d GPUs simulated (collapse); a Chakra trace is per rank, so export "
                       "needs every GPU simulated; allowed: --collapse off",
                       (long long)s->pp * s->per_stage, s->gpus);
    step_wl_export_t *x = alloc_calloc(1, sizeof *x);
    const int32_t nr = s->gpus, n_ops = s->op_end - s->op0;
    if (x) {
        x->s = s;
        x->nr = nr;
        x->gpu_off = alloc_calloc((size_t)nr + 1, sizeof *x->gpu_off);
        x->gpu_ops = alloc_malloc((size_t)(n_ops ? n_ops : 1) * sizeof *x->gpu_ops);
    }
    int rc = !x || !x->gpu_off || !x->gpu_ops ? SIM_ENOMEM : SIM_OK;
    /* each GPU's operations; the groups, numbered in the order of their first collective */
    for (int32_t op = s->op0; op < s->op_end && !rc; op++) {
        sim_op_desc_t d;
        sim_op_describe(s->e, op, &d);
        if (d.gpu < 0 || d.gpu >= nr) {
            rc = ex_fail(err, err_size, SIM_EINVAL, "export: operation %d on GPU %d, outside the job", op,
                         d.gpu);
            break;
        }
        x->gpu_off[d.gpu + 1]++;
        if (d.kind != SIM_OP_COMPUTE && d.kind != SIM_OP_SEND && d.kind != SIM_OP_RECV) {
            step_wl_coll_t coll;
            double size_bytes;
            const int32_t g = ex_group(x, op, &d, &coll, &size_bytes, err, err_size);
            if (g < 0)
                rc = g == -2 ? SIM_EINVAL : SIM_ENOMEM;
        }
    }
    if (!rc) {
        for (int32_t r = 0; r < nr; r++)
            x->gpu_off[r + 1] += x->gpu_off[r];
        int64_t *at = alloc_malloc(((size_t)nr + 1) * sizeof *at);
        if (!at) {
            rc = SIM_ENOMEM;
        } else {
            memcpy(at, x->gpu_off, ((size_t)nr + 1) * sizeof *at);
            for (int32_t op = s->op0; op < s->op_end; op++)
                x->gpu_ops[at[sim_op_gpu(s->e, op)]++] = op;
            free(at);
        }
    }
    if (rc) {
        step_workload_export_end(x);
        return err && err_size && err[0] ? rc : ex_fail(err, err_size, rc, "export: out of memory");
    }
    *out = x;
    return SIM_OK;
}

int32_t step_workload_export_ranks(const step_wl_export_t *x) {
    return x->nr;
}

int step_workload_export_rank(step_wl_export_t *x, int32_t r, step_workload_t *out, char *err,
                              size_t err_size) {
    memset(out, 0, sizeof *out);
    if (err && err_size)
        err[0] = '\0';
    if (r < 0 || r >= x->nr)
        return ex_fail(err, err_size, SIM_EINVAL, "export: rank %d; allowed: 0..%d", r, x->nr - 1);
    const step_t *s = x->s;
    const sim_engine_t *e = s->e;
    const int32_t spg = 1 + WL_MAX_STREAMS, *ops = x->gpu_ops + x->gpu_off[r];
    const int64_t m = x->gpu_off[r + 1] - x->gpu_off[r];
    int32_t *npred = alloc_calloc((size_t)(m ? m : 1), sizeof *npred);
    int64_t *poff = alloc_calloc((size_t)m + 1, sizeof *poff);
    int32_t last[1 + WL_MAX_STREAMS];
    int32_t *pred = NULL;
    int rc = !npred || !poff ? SIM_ENOMEM : SIM_OK;
    /* predecessors (the engine's successor lists inverted), each in operation order */
    for (int pass = 0; pass < 2 && !rc; pass++) {
        for (int64_t i = 0; i < m && !rc; i++) {
            const int32_t k = ex_successors(x, ops[i]);
            if (k < 0) {
                rc = SIM_ENOMEM;
                break;
            }
            for (int32_t j = 0; j < k; j++) {
                int64_t lo = 0, hi = m;
                while (lo < hi) {
                    const int64_t mid = lo + (hi - lo) / 2;
                    if (ops[mid] < x->sbuf[j])
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                if (lo == m || ops[lo] != x->sbuf[j]) {
                    rc = ex_fail(err, err_size, SIM_EINVAL,
                                 "export: operation %d on GPU %d depends on operation %d of GPU %d (a Chakra "
                                 "dependency stays within a rank)",
                                 x->sbuf[j], sim_op_gpu(e, x->sbuf[j]), ops[i], r);
                    break;
                }
                if (pass == 0)
                    poff[lo + 1]++;
                else
                    pred[poff[lo] + npred[lo]++] = ops[i];
            }
        }
        if (pass == 0 && !rc) {
            for (int64_t i = 0; i < m; i++)
                poff[i + 1] += poff[i];
            if (!(pred = alloc_malloc((size_t)(poff[m] ? poff[m] : 1) * sizeof *pred)))
                rc = SIM_ENOMEM;
        }
    }
    const int64_t max_deps = (rc ? 0 : poff[m]) + m; /* each op at most one stream predecessor */
    if (!rc) {
        out->n_ranks = x->nr;
        out->rank_nodes_offset = alloc_malloc(((size_t)x->nr + 1) * sizeof *out->rank_nodes_offset);
        out->nodes = alloc_malloc((size_t)(m ? m : 1) * sizeof *out->nodes);
        out->deps = alloc_malloc((size_t)(max_deps ? max_deps : 1) * sizeof *out->deps);
        out->groups = alloc_malloc((size_t)(x->gx.n ? x->gx.n : 1) * sizeof *out->groups);
        out->group_ranks =
            alloc_malloc((size_t)(x->gx.n_ranks ? x->gx.n_ranks : 1) * sizeof *out->group_ranks);
        if (!out->rank_nodes_offset || !out->nodes || !out->deps || !out->groups || !out->group_ranks)
            rc = SIM_ENOMEM;
    }
    if (!rc) {
        for (int32_t k = 0; k <= x->nr; k++)
            out->rank_nodes_offset[k] = k <= r ? 0 : m;
        out->n_groups = x->gx.n;
        memcpy(out->groups, x->gx.g, (size_t)x->gx.n * sizeof *out->groups);
        memcpy(out->group_ranks, x->gx.ranks, (size_t)x->gx.n_ranks * sizeof *out->group_ranks);
        for (int32_t k = 0; k < spg; k++)
            last[k] = -1;
    }
    /* the nodes in operation order */
    int64_t nd_deps = 0;
    for (int64_t i = 0; i < m && !rc; i++) {
        const int32_t op = ops[i];
        sim_op_desc_t d;
        sim_op_describe(e, op, &d);
        step_meta_t mt;
        step_meta_get(s, op, &mt);
        step_wl_node_t *n = &out->nodes[i];
        memset(n, 0, sizeof *n);
        n->id = (uint64_t)op;
        char label[WL_NAME];
        step_op_label(s, op, label, sizeof label);
        if (step_workload_name_add(out, label, &n->name) != SIM_OK) {
            rc = SIM_ENOMEM;
            break;
        }
        n->duration_s = -1.0;
        n->peer = -1;
        n->group = -1;
        n->start_hint_s = -1.0;
        if (s->ran) {
            sim_time_ps_t st, en;
            sim_op_times(e, op, &st, &en);
            n->start_hint_s = st == SIM_TIME_NEVER ? -1.0 : sim_ps_to_s(st);
        }
        if (d.kind == SIM_OP_COMPUTE) {
            n->kind = STEP_WL_COMPUTE;
            n->duration_s = d.duration_s;
            n->flops = mt.flops_tflop * 1e12;
            n->mem_bytes = mt.hbm_gb * 1e9;
        } else if (d.kind == SIM_OP_SEND || d.kind == SIM_OP_RECV) {
            sim_coll_info_t ci;
            sim_coll_describe(e, d.coll, &ci);
            n->comm_bytes = ci.size_bytes;
            n->kind = d.kind == SIM_OP_SEND ? STEP_WL_SEND : STEP_WL_RECV;
            n->peer = ci.gpus[d.kind == SIM_OP_SEND ? 1 : 0];
            /* the tag names the sender's stream: messages of one stream keep their order */
            sim_op_desc_t sd;
            sim_op_describe(e, ci.first_op, &sd);
            n->tag = sd.stream;
        } else {
            n->kind = STEP_WL_COLL;
            n->group = ex_group(x, op, &d, &n->coll, &n->comm_bytes, err, err_size);
            if (n->group < 0) { /* known since begin: found, not added */
                rc = n->group == -2 ? SIM_EINVAL : SIM_ENOMEM;
                break;
            }
        }
        /* dependencies: the engine's, then the previous operation of the same stream */
        n->deps_offset = nd_deps;
        for (int64_t j = poff[i]; j < poff[i + 1]; j++)
            out->deps[nd_deps++] = (uint64_t)pred[j];
        if (last[d.stream] >= 0) {
            int have = 0;
            for (int64_t j = poff[i]; j < poff[i + 1] && !have; j++)
                have = pred[j] == last[d.stream];
            if (!have)
                out->deps[nd_deps++] = (uint64_t)last[d.stream];
        }
        last[d.stream] = op;
        n->n_deps = (int32_t)(nd_deps - n->deps_offset);
    }
    free(npred);
    free(poff);
    free(pred);
    if (!rc) {
        step_workload_names_done(out);
        rc = ex_topo_order(out, r, err, err_size);
    }
    if (rc) {
        step_workload_free(out);
        return err && err_size && err[0] ? rc : ex_fail(err, err_size, rc, "export: out of memory");
    }
    return SIM_OK;
}

int step_workload_export(const step_t *s, step_workload_t *out, char *err, size_t err_size) {
    memset(out, 0, sizeof *out);
    step_wl_export_t *x = NULL;
    int rc = step_workload_export_begin(s, &x, err, err_size);
    if (rc)
        return rc;
    const int32_t nr = x->nr, n_ops = s->op_end - s->op0;
    out->n_ranks = nr;
    out->rank_nodes_offset = alloc_calloc((size_t)nr + 1, sizeof *out->rank_nodes_offset);
    out->nodes = alloc_malloc((size_t)(n_ops ? n_ops : 1) * sizeof *out->nodes);
    rc = !out->rank_nodes_offset || !out->nodes ? SIM_ENOMEM : SIM_OK;
    int64_t n = 0, n_deps = 0, cap_deps = 0;
    for (int32_t r = 0; r < nr && !rc; r++) {
        step_workload_t part;
        if ((rc = step_workload_export_rank(x, r, &part, err, err_size)))
            break;
        const int64_t a = part.rank_nodes_offset[r], z = part.rank_nodes_offset[r + 1];
        int64_t pd = 0;
        for (int64_t i = a; i < z; i++)
            pd += part.nodes[i].n_deps;
        if (n_deps + pd > cap_deps) {
            int64_t cap = cap_deps ? cap_deps : 1024;
            while (cap < n_deps + pd)
                cap *= 2;
            uint64_t *d = alloc_realloc(out->deps, (size_t)cap * sizeof *d);
            if (!d)
                rc = SIM_ENOMEM;
            else
                out->deps = d, cap_deps = cap;
        }
        for (int64_t i = a; i < z && !rc; i++) {
            step_wl_node_t nd = part.nodes[i];
            memcpy(out->deps + n_deps, part.deps + nd.deps_offset, (size_t)nd.n_deps * sizeof *out->deps);
            nd.deps_offset = n_deps;
            n_deps += nd.n_deps;
            if (step_workload_name_add(out, step_workload_name(&part, part.nodes[i].name), &nd.name) !=
                SIM_OK)
                rc = SIM_ENOMEM;
            out->nodes[n++] = nd;
        }
        out->rank_nodes_offset[r + 1] = n;
        if (!rc && r == nr - 1) { /* the groups, complete since begin */
            out->n_groups = part.n_groups;
            out->groups = part.groups;
            out->group_ranks = part.group_ranks;
            part.groups = NULL;
            part.group_ranks = NULL;
        }
        step_workload_free(&part);
    }
    step_workload_export_end(x);
    if (rc) {
        step_workload_free(out);
        return err && err_size && err[0] ? rc : ex_fail(err, err_size, rc, "export: out of memory");
    }
    step_workload_names_done(out);
    return SIM_OK;
}
