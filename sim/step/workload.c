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

/* ---- import: the ranks one at a time ------------------------------------------------------------ */

/* The k-th collective of a group: its first member operation (members are consecutive, in the
 * group's order) and how many members have reached it. */
typedef struct wl_inst {
    int32_t first_op, arrived, maker; /* maker: the rank whose node made it */
} wl_inst_t;

/* A dependency kept until both of its ends are operations: `to` is an operation (>= 0) or a pending
 * end (-(index + 2)); next: the list's next link, -1 at its end. */
typedef struct wl_link {
    int32_t to, next;
} wl_link_t;

/* A send or receive whose peer's rank comes later: its operation is made, with its peer's, when the
 * peer's rank is built. */
typedef struct wl_pend {
    uint64_t id; /* the node's, for errors */
    double bytes;
    int64_t tag;
    int32_t rank, peer, stream, seq; /* seq: its place among the messages of its stream on its rank */
    int32_t name;                    /* the step's name index, -1 none */
    int32_t kind;                    /* STEP_WL_SEND or STEP_WL_RECV */
    int32_t preds, succs;            /* lists of links: what it waits for (operations), what waits for it */
    int32_t op;                      /* -1 until made */
    int32_t refs;                    /* links that name it (in other pending ends' lists) */
    int32_t next;                    /* the next of its channel's queue, or of the free list */
} wl_pend_t;

/* A channel (src, dst, tag): the queue of the ends of the side built first, waiting for the other. */
typedef struct wl_chan {
    int32_t src, dst;
    int64_t tag;
    int32_t head, tail; /* pending ends, -1: none */
    int32_t used;       /* 0: an empty slot of the table */
} wl_chan_t;

/* A rank's name table as an earlier rank had it (the ranks of a pipeline stage name their nodes
 * alike): the step's index + 1 of each name (0: not known), checked name by name before use, so a
 * table that only looks alike costs time, never a wrong name. */
typedef struct wl_names_seen {
    uint64_t sig; /* wl_names_sig */
    int32_t n_names;
    int32_t *lname; /* [n_names] */
} wl_names_seen_t;

#define WL_NAMES_SEEN_INTS ((int64_t)1 << 24) /* the kept tables' entries together (64 MiB) */

/* Everything the import holds beside the step: the groups, the collectives' instances, the messages
 * waiting for their peers, the names, and one rank's scratch arrays. */
typedef struct wl_build {
    const step_wl_source_t *src;
    const step_workload_t *shape;
    step_t *s;
    const model_system_t *sys;
    step_wl_compute_t mode;
    int32_t n_ranks, ng; /* groups, plus one for "every rank" (index shape->n_groups) */
    int64_t nodes;       /* nodes built */
    /* groups */
    uint64_t *member;       /* sorted rank << 32 | group of every membership */
    int32_t *mpos;          /* [n_member]: the rank's place in the group */
    int64_t n_member;       /* memberships */
    int64_t *seq_count;     /* [n_member]: collectives of the group on the rank */
    int32_t *color;         /* [ng]: -1 unused */
    int8_t *gkind, *ggroup; /* [ng]: the metadata's kind and group of the group's collectives */
    int32_t n_colors;       /* streams of collectives */
    wl_inst_t **inst;       /* [ng]: per group, its collectives in order */
    int64_t *n_inst, *cap_inst;
    int64_t *cnt; /* [ng]: the current rank's collectives of the group so far */
    /* messages */
    wl_pend_t *pend;
    int32_t n_pend, cap_pend, free_pend, live_pend;
    wl_link_t *link;
    int32_t n_link, cap_link, free_link;
    wl_chan_t *chan;
    int64_t chan_cap, n_chan;
    int32_t *made; /* [n_ranks * WL_STREAMS]: messages made on each stream */
    /* names: the step's table is s->wl_names */
    int32_t n_engine_names; /* copied to s->wl_engine_names */
    wl_names_seen_t *seen;  /* [n_seen]: name tables of earlier ranks */
    int64_t n_seen, cap_seen;
    int64_t seen_ints;      /* their lname entries together */
    wl_names_seen_t *names; /* the current rank's, one of seen */
    int32_t *stamp;         /* [n_stamp]: rank + 1 once the rank's name was checked this rank */
    int64_t n_stamp, cap_stamp;
    int64_t cap_op_name;
    /* one rank's scratch, sized to the largest rank so far */
    int64_t cap_rank, cap_dep;
    int32_t *id_slot; /* the rank's id table: local node indices by id hash, -1 empty */
    int64_t id_mask;
    int32_t *dep_ix; /* [deps]: local index of each dependency, in node order */
    int64_t *dep0;   /* [nodes]: a node's first entry in dep_ix */
    int32_t *order;  /* [nodes]: topological order */
    int32_t *stream; /* [nodes] */
    int32_t *seq;    /* [nodes]: a message's place among its stream's messages */
    int32_t *gname;  /* [nodes]: the step's name index, -1 none */
    int32_t *lop;    /* [nodes]: the node's operation (>= 0), a pending end (-(index + 2)), or -1 */
    int32_t *gbuf, *obuf;
    /* the current rank */
    const step_workload_t *w;
    int32_t r;
    int64_t a, n; /* its first node in w and its node count */
} wl_build_t;

#define WL_STREAMS (1 + WL_MAX_STREAMS) /* per GPU: compute and communication */

static int wl_fail(wl_build_t *b, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int wl_fail(wl_build_t *b, int rc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->s->err, sizeof b->s->err, fmt, ap);
    va_end(ap);
    return rc;
}

static int oom(wl_build_t *b) {
    return wl_fail(b, SIM_ENOMEM, "workload: out of memory");
}

static const step_wl_node_t *node(const wl_build_t *b, int64_t i) {
    return &b->w->nodes[b->a + i];
}

static int32_t group_size(const wl_build_t *b, int32_t g) {
    return g == b->shape->n_groups ? b->n_ranks : b->shape->groups[g].n_ranks;
}

static int32_t group_rank(const wl_build_t *b, int32_t g, int32_t j) {
    return g == b->shape->n_groups ? j : b->shape->group_ranks[b->shape->groups[g].ranks_offset + j];
}

static const char *group_name(const wl_build_t *b, int32_t g) {
    return g == b->shape->n_groups ? "(every rank)" : b->shape->groups[g].name;
}

static int32_t group_of(const wl_build_t *b, const step_wl_node_t *nd) {
    return nd->group < 0 ? b->shape->n_groups : nd->group;
}

#define NODE_FMT "workload: rank %d node %llu: "
#define NODE_ARG(b, i) (b)->r, (unsigned long long)node(b, i)->id

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

static int cmp_member(const void *x, const void *y) {
    const uint64_t a = *(const uint64_t *)x, c = *(const uint64_t *)y;
    return (a > c) - (a < c);
}

/* The groups (checked), their memberships and the collectives' streams: a greedy colouring of the
 * groups the source says are used, in group order (groups that share a rank differ). */
static int groups(wl_build_t *b) {
    const step_workload_t *w = b->shape;
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
    int64_t nm = w->n_ranks;
    for (int32_t g = 0; g < w->n_groups; g++)
        nm += w->groups[g].n_ranks;
    b->member = alloc_malloc((size_t)nm * sizeof *b->member);
    b->mpos = alloc_malloc((size_t)nm * sizeof *b->mpos);
    b->seq_count = alloc_calloc((size_t)nm, sizeof *b->seq_count);
    b->color = alloc_malloc((size_t)b->ng * sizeof *b->color);
    b->inst = alloc_calloc((size_t)b->ng, sizeof *b->inst);
    b->n_inst = alloc_calloc((size_t)b->ng, sizeof *b->n_inst);
    b->cap_inst = alloc_calloc((size_t)b->ng, sizeof *b->cap_inst);
    b->cnt = alloc_calloc((size_t)b->ng, sizeof *b->cnt);
    b->gkind = alloc_malloc((size_t)b->ng);
    b->ggroup = alloc_malloc((size_t)b->ng);
    uint64_t *mask = alloc_calloc((size_t)w->n_ranks, sizeof *mask);
    if (!b->member || !b->mpos || !b->seq_count || !b->color || !b->inst || !b->n_inst || !b->cap_inst ||
        !b->cnt || !mask) {
        free(mask);
        return oom(b);
    }
    for (int32_t g = 0; g < b->ng; g++)
        for (int32_t j = 0; j < group_size(b, g); j++)
            b->member[b->n_member++] = (uint64_t)(uint32_t)group_rank(b, g, j) << 32 | (uint32_t)g;
    qsort(b->member, (size_t)b->n_member, sizeof *b->member, cmp_member);
    for (int64_t i = 1; i < b->n_member; i++)
        if (b->member[i] == b->member[i - 1]) {
            free(mask);
            return wl_fail(b, SIM_EINVAL, "workload: group %d (%.40s): rank %d listed twice",
                           (int)(uint32_t)b->member[i], group_name(b, (int32_t)(uint32_t)b->member[i]),
                           (int)(b->member[i] >> 32));
        }
    for (int32_t g = 0; g < b->ng; g++)
        for (int32_t j = 0; j < group_size(b, g); j++)
            b->mpos[find_member(b, group_rank(b, g, j), g)] = j;
    for (int32_t g = 0; g < b->ng; g++) {
        const char *gn = g < w->n_groups ? w->groups[g].name : "";
        b->gkind[g] = STEP_OP_DP;
        b->ggroup[g] = STEP_GROUP_DP; /* every group but these counts as data-parallel (breakdown, traffic) */
        if (strcmp(gn, "tp") == 0 || strcmp(gn, "cp") == 0 || strcmp(gn, "ep") == 0) {
            b->gkind[g] =
                STEP_OP_TP; /* the expert all-to-alls count with the tensor collectives, as in the step */
            b->ggroup[g] = strcmp(gn, "tp") == 0   ? STEP_GROUP_TP
                           : strcmp(gn, "cp") == 0 ? STEP_GROUP_CP
                                                   : STEP_GROUP_EP;
        } else if (strcmp(gn, "edp") == 0) {
            b->ggroup[g] = STEP_GROUP_EDP;
        }
    }
    int32_t n_colors = 0;
    for (int32_t g = 0; g < b->ng; g++) {
        b->color[g] = -1;
        if (!b->src->group_used[g])
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
            free(mask);
            return wl_fail(
                b, SIM_EINVAL,
                "workload: group %d (%.40s): a rank of it is in %d other groups that run collectives; "
                "allowed: at most %d",
                g, group_name(b, g), WL_MAX_COLORS, WL_MAX_COLORS - 1);
        }
        b->color[g] = c;
        for (int32_t j = 0; j < group_size(b, g); j++)
            mask[group_rank(b, g, j)] |= 1ull << c;
        if (c + 1 > n_colors)
            n_colors = c + 1;
    }
    b->n_colors = n_colors;
    free(mask);
    return SIM_OK;
}

/* ---- names ---- */

/* The step's index of the rank workload's name t (-1 for ""): the step's own name table
 * (s->wl_names, interned by step_workload_name_add, numbered in order of first use over the ranks in
 * rank order and each rank's nodes in file order) less one; the first WL_MAX_NAMES are also copied
 * where the engine borrows them (the table's characters move as it grows). The index an earlier
 * rank's alike table gave the name (b->names) is taken when the names are equal. */
static int step_name(wl_build_t *b, int32_t t, int32_t *out) {
    *out = -1;
    if (t <= 0)
        return SIM_OK;
    int32_t *lname = &b->names->lname[t];
    step_t *s = b->s;
    if (b->stamp[t] == b->r + 1)
        return *out = *lname - 1, SIM_OK;
    b->stamp[t] = b->r + 1;
    const char *name = step_workload_name(b->w, t);
    if (*lname > 0) {
        const char *known = step_workload_name(&s->wl_names, *lname);
        const size_t n = strnlen(name, 63); /* (as step_workload_name_add keeps it) */
        if (strncmp(name, known, n) == 0 && known[n] == '\0')
            return *out = *lname - 1, SIM_OK;
    }
    int32_t ix = 0;
    if (step_workload_name_add(&s->wl_names, name, &ix))
        return SIM_ENOMEM;
    *lname = ix;
    if (ix == 0) /* "" */
        return SIM_OK;
    const int32_t gi = ix - 1;
    if (gi == b->n_engine_names && gi < WL_MAX_NAMES) { /* new, and among the engine's */
        if (!s->wl_engine_names && !(s->wl_engine_names = alloc_malloc((size_t)WL_MAX_NAMES * WL_NAME)))
            return SIM_ENOMEM;
        snprintf(s->wl_engine_names + (size_t)gi * WL_NAME, WL_NAME, "%s",
                 step_workload_name(&s->wl_names, ix));
        b->n_engine_names++;
    }
    *out = gi;
    return SIM_OK;
}

/* A name table's signature: its size and three of its names. */
static uint64_t wl_names_sig(const step_workload_t *w) {
    uint64_t h = (uint64_t)w->n_names * 0x9e3779b97f4a7c15ULL;
    const int32_t pick[3] = {1, w->n_names / 2, w->n_names - 1};
    for (int k = 0; k < 3; k++)
        if (pick[k] > 0) {
            const char *p = step_workload_name(w, pick[k]);
            h = (h ^ wl_name_hash(p, strnlen(p, 63))) * 0xbf58476d1ce4e5b9ULL;
        }
    return h ^ (h >> 31);
}

/* The current rank's names: an earlier rank's table with the same signature, else a new one kept,
 * else (the kept ones at WL_NAMES_SEEN_INTS) the last one kept, cleared and taken over. */
static int rank_names(wl_build_t *b) {
    const int32_t nn = b->w->n_names > 0 ? b->w->n_names : 0;
    if (nn > b->n_stamp) {
        if (alloc_grow((void **)&b->stamp, &b->cap_stamp, nn, sizeof *b->stamp))
            return oom(b);
        memset(b->stamp + b->n_stamp, 0, (size_t)(nn - b->n_stamp) * sizeof *b->stamp);
        b->n_stamp = nn;
    }
    const uint64_t sig = wl_names_sig(b->w);
    for (int64_t k = 0; k < b->n_seen; k++)
        if (b->seen[k].sig == sig && b->seen[k].n_names == nn) {
            b->names = &b->seen[k];
            return SIM_OK;
        }
    const int fresh = b->n_seen == 0 || b->seen_ints + nn <= WL_NAMES_SEEN_INTS;
    if (fresh) {
        if (alloc_grow((void **)&b->seen, &b->cap_seen, b->n_seen + 1, sizeof *b->seen))
            return oom(b);
        b->seen[b->n_seen++] = (wl_names_seen_t){.lname = NULL};
    }
    wl_names_seen_t *e = &b->seen[b->n_seen - 1];
    int32_t *l = alloc_realloc(e->lname, (size_t)(nn ? nn : 1) * sizeof *l);
    if (!l)
        return oom(b);
    memset(l, 0, (size_t)nn * sizeof *l);
    b->seen_ints += nn - e->n_names;
    *e = (wl_names_seen_t){.sig = sig, .n_names = nn, .lname = l};
    b->names = e;
    return SIM_OK;
}

/* The engine's name of a node of the given kind with the step's name index gi: its own among the
 * first WL_MAX_NAMES distinct (the engine's limit), else its kind's (step_op gives every node's own). */
static const char *engine_name(const wl_build_t *b, int32_t gi, step_wl_kind_t kind, step_wl_coll_t coll) {
    if (gi >= 0 && gi < WL_MAX_NAMES)
        return b->s->wl_engine_names + (size_t)gi * WL_NAME;
    switch (kind) {
    case STEP_WL_COMPUTE:
        return "compute";
    case STEP_WL_SEND:
    case STEP_WL_RECV:
        return "p2p";
    default:
        return coll_kind_name(coll);
    }
}

/* An operation's name index for step_op. */
static int op_name(wl_build_t *b, int32_t op, int32_t gi) {
    step_t *s = b->s;
    if (alloc_grow((void **)&s->wl_op_name, &b->cap_op_name, (int64_t)op - s->op0 + 1, sizeof *s->wl_op_name))
        return oom(b);
    s->wl_op_name[op - s->op0] = gi;
    return SIM_OK;
}

/* ---- one rank's checks and order ---- */

static int rank_scratch(wl_build_t *b, int64_t n, int64_t n_deps) {
    if (n > b->cap_rank || !b->id_slot) {
        int64_t c = b->cap_rank > 0 ? b->cap_rank : 64;
        while (c < n)
            c *= 2;
        int32_t **a32[] = {&b->order, &b->stream, &b->seq, &b->gname, &b->lop};
        for (size_t k = 0; k < sizeof a32 / sizeof a32[0]; k++) {
            int32_t *q = alloc_realloc(*a32[k], (size_t)c * sizeof *q);
            if (!q)
                return oom(b);
            *a32[k] = q;
        }
        int64_t *d = alloc_realloc(b->dep0, (size_t)(c + 1) * sizeof *d);
        if (!d)
            return oom(b);
        b->dep0 = d;
        free(b->id_slot); /* the id table: a power of two at least twice the rank's nodes */
        if (!(b->id_slot = alloc_malloc((size_t)(2 * c) * sizeof *b->id_slot)))
            return oom(b);
        b->cap_rank = c;
    }
    if (alloc_grow((void **)&b->dep_ix, &b->cap_dep, n_deps > 0 ? n_deps : 1, sizeof *b->dep_ix))
        return oom(b);
    return SIM_OK;
}

/* The id table of the current rank: -1, or the first node that repeats an earlier node's id. */
static int64_t id_table_fill(wl_build_t *b) {
    int64_t cap = 16;
    while (cap < 2 * b->n)
        cap *= 2;
    b->id_mask = cap - 1;
    for (int64_t k = 0; k < cap; k++)
        b->id_slot[k] = -1;
    for (int64_t i = 0; i < b->n; i++) {
        const uint64_t id = node(b, i)->id;
        int64_t k = (int64_t)(id_hash(id) & (uint64_t)b->id_mask);
        for (; b->id_slot[k] >= 0; k = (k + 1) & b->id_mask)
            if (node(b, b->id_slot[k])->id == id)
                return i;
        b->id_slot[k] = (int32_t)i;
    }
    return -1;
}

static int64_t find_id(const wl_build_t *b, uint64_t id) {
    for (int64_t k = (int64_t)(id_hash(id) & (uint64_t)b->id_mask); b->id_slot[k] >= 0;
         k = (k + 1) & b->id_mask)
        if (node(b, b->id_slot[k])->id == id)
            return b->id_slot[k];
    return -1;
}

/* The current rank's nodes: fields, ids, dependencies (resolved to local indices). */
static int check_rank(wl_build_t *b) {
    const step_workload_t *w = b->w;
    const int32_t r = b->r;
    int64_t n_deps = 0;
    for (int64_t i = 0; i < b->n; i++) {
        const step_wl_node_t *nd = node(b, i);
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
        } else if (!(nd->comm_bytes >= 0.0 && nd->comm_bytes <= 1e18)) {
            return wl_fail(b, SIM_EINVAL, NODE_FMT "comm_bytes %g; allowed: 0..1e18", NODE_ARG(b, i),
                           nd->comm_bytes);
        }
        if (nd->kind == STEP_WL_COLL) {
            if ((unsigned)nd->coll > (unsigned)STEP_WL_BROADCAST)
                return wl_fail(b, SIM_EINVAL,
                               NODE_FMT "coll %d; allowed: allreduce, allgather, reducescatter, alltoall, "
                                        "broadcast",
                               NODE_ARG(b, i), (int)nd->coll);
            if (nd->group < -1 || nd->group >= b->shape->n_groups)
                return wl_fail(b, SIM_EINVAL, NODE_FMT "group %d; allowed: -1 (every rank) or 0..%d",
                               NODE_ARG(b, i), nd->group, b->shape->n_groups - 1);
        }
        if ((nd->kind == STEP_WL_SEND || nd->kind == STEP_WL_RECV) &&
            (nd->peer < 0 || nd->peer >= b->n_ranks || nd->peer == r))
            return wl_fail(b, SIM_EINVAL, NODE_FMT "peer %d; allowed: another rank in 0..%d", NODE_ARG(b, i),
                           nd->peer, b->n_ranks - 1);
        if (nd->name < 0 || (nd->name > 0 && (nd->name >= w->n_names || !w->name_offset || !w->name_chars)))
            return wl_fail(b, SIM_EINVAL, NODE_FMT "name %d; allowed: 0..%d (the name table)", NODE_ARG(b, i),
                           nd->name, w->n_names > 0 ? w->n_names - 1 : 0);
        if (nd->n_deps < 0 || nd->deps_offset < 0 || (nd->n_deps > 0 && !w->deps))
            return wl_fail(b, SIM_EINVAL, NODE_FMT "n_deps %d at %lld", NODE_ARG(b, i), nd->n_deps,
                           (long long)nd->deps_offset);
        n_deps += nd->n_deps;
    }
    int rc = rank_scratch(b, b->n, n_deps);
    if (rc)
        return rc;
    const int64_t dup = id_table_fill(b);
    if (dup >= 0)
        return wl_fail(b, SIM_EINVAL, NODE_FMT "id: used by two nodes of the rank", NODE_ARG(b, dup));
    int64_t k = 0;
    for (int64_t i = 0; i < b->n; i++) {
        const step_wl_node_t *nd = node(b, i);
        b->dep0[i] = k;
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
    b->dep0[b->n] = k;
    return SIM_OK;
}

/* The current rank's topological order: the file's if every dependency comes earlier, else Kahn's
 * with the smallest index first; a cycle is named by its smallest node. */
static int topo_order(wl_build_t *b) {
    const int64_t n = b->n, k = b->dep0[n];
    int sorted = 1;
    for (int64_t i = 0; i < n && sorted; i++)
        for (int64_t e = b->dep0[i]; e < b->dep0[i + 1]; e++)
            sorted &= b->dep_ix[e] < i;
    for (int64_t i = 0; i < n; i++)
        b->order[i] = (int32_t)i;
    if (sorted)
        return SIM_OK;
    int64_t *indeg = alloc_calloc((size_t)(n ? n : 1), sizeof *indeg);
    int64_t *soff = alloc_calloc((size_t)n + 1, sizeof *soff);
    int32_t *succ = alloc_malloc((size_t)(k ? k : 1) * sizeof *succ);
    int64_t *fill = alloc_malloc((size_t)(n ? n : 1) * sizeof *fill);
    sim_queue_t *q = sim_queue_new(1024);
    int rc = !indeg || !soff || !succ || !fill || !q ? SIM_ENOMEM : SIM_OK;
    for (int64_t i = 0; !rc && i < n; i++)
        for (int64_t e = b->dep0[i]; e < b->dep0[i + 1]; e++) {
            soff[b->dep_ix[e] + 1]++;
            indeg[i]++;
        }
    for (int64_t i = 0; !rc && i < n; i++)
        soff[i + 1] += soff[i];
    if (!rc) {
        memcpy(fill, soff, (size_t)n * sizeof *fill);
        for (int64_t i = 0; i < n; i++)
            for (int64_t e = b->dep0[i]; e < b->dep0[i + 1]; e++)
                succ[fill[b->dep_ix[e]]++] = (int32_t)i;
    }
    int64_t out = 0;
    for (int64_t i = 0; i < n && !rc; i++)
        if (indeg[i] == 0)
            rc = sim_queue_push(q, &(sim_event_t){.time_ps = i});
    sim_event_t ev;
    while (!rc && sim_queue_pop(q, &ev)) {
        const int64_t i = ev.time_ps;
        b->order[out++] = (int32_t)i;
        for (int64_t e = soff[i]; e < soff[i + 1] && !rc; e++)
            if (--indeg[succ[e]] == 0)
                rc = sim_queue_push(q, &(sim_event_t){.time_ps = succ[e]});
    }
    int64_t bad = -1;
    for (int64_t i = 0; !rc && out < n && i < n && bad < 0; i++)
        if (indeg[i] > 0)
            bad = i;
    free(indeg);
    free(soff);
    free(succ);
    free(fill);
    sim_queue_free(q);
    if (rc)
        return oom(b);
    if (bad >= 0)
        return wl_fail(b, SIM_EINVAL,
                       NODE_FMT "deps: a dependency cycle (%lld nodes of the rank on or after one)",
                       NODE_ARG(b, bad), (long long)(n - out));
    return SIM_OK;
}

/* The current rank's streams: compute 0, a group's collectives 1 + its colour, messages one stream
 * per (tag, direction, peer) after the collectives' (more than fit: one per (direction, peer)); a
 * message's place on its stream. */
static int rank_streams(wl_build_t *b) {
    int64_t nk = 0;
    for (int64_t i = 0; i < b->n; i++) {
        const step_wl_node_t *nd = node(b, i);
        b->stream[i] = 0;
        if (nd->kind == STEP_WL_COLL) {
            const int32_t g = group_of(b, nd);
            if (find_member(b, b->r, g) < 0)
                return wl_fail(b, SIM_EINVAL, NODE_FMT "group %d (%.40s): rank %d is not a member",
                               NODE_ARG(b, i), nd->group, group_name(b, g), b->r);
            if (b->color[g] < 0)
                return wl_fail(b, SIM_EINVAL,
                               NODE_FMT
                               "group %d (%.40s): a collective on a group its source said no collective "
                               "uses",
                               NODE_ARG(b, i), nd->group, group_name(b, g));
            b->stream[i] = 1 + b->color[g];
        }
        nk += nd->kind == STEP_WL_SEND || nd->kind == STEP_WL_RECV;
    }
    if (nk == 0)
        return SIM_OK;
    p2p_end_t *keys = alloc_malloc((size_t)nk * sizeof *keys);
    if (!keys)
        return oom(b);
    int64_t u = 0, slots = 0;
    for (int by_tag = 1; by_tag >= 0; by_tag--) {
        nk = 0;
        for (int64_t i = 0; i < b->n; i++)
            if (node(b, i)->kind == STEP_WL_SEND || node(b, i)->kind == STEP_WL_RECV)
                keys[nk++] = chan_key(node(b, i), by_tag);
        qsort(keys, (size_t)nk, sizeof *keys, cmp_chan);
        u = 0;
        for (int64_t i = 0; i < nk; i++)
            if (u == 0 || cmp_chan(&keys[i], &keys[u - 1]) != 0)
                keys[u++] = keys[i];
        slots = channel_slots(keys, u);
        if (b->n_colors + slots <= WL_MAX_STREAMS)
            break;
    }
    if (b->n_colors + slots > WL_MAX_STREAMS) {
        free(keys);
        return wl_fail(
            b, SIM_EINVAL,
            "workload: rank %d: %d collective streams and %lld point-to-point streams (a direction "
            "and peer each); allowed: at most %d streams together",
            b->r, b->n_colors, (long long)slots, WL_MAX_STREAMS);
    }
    for (int64_t i = 0; i < b->n; i++)
        if (node(b, i)->kind == STEP_WL_SEND || node(b, i)->kind == STEP_WL_RECV) {
            p2p_end_t key = chan_key(node(b, i), 1);
            const p2p_end_t *f = bsearch(&key, keys, (size_t)u, sizeof *keys, cmp_chan);
            if (!f) { /* the fallback: by (direction, peer) */
                key = chan_key(node(b, i), 0);
                f = bsearch(&key, keys, (size_t)u, sizeof *keys, cmp_chan);
            }
            b->stream[i] = 1 + b->n_colors + (int32_t)f->pos;
        }
    free(keys);
    /* a message's place on its stream, in the rank's order */
    int32_t count[WL_STREAMS];
    memset(count, 0, sizeof count);
    for (int64_t o = 0; o < b->n; o++) {
        const int32_t i = b->order[o];
        if (node(b, i)->kind == STEP_WL_SEND || node(b, i)->kind == STEP_WL_RECV)
            b->seq[i] = count[b->stream[i]]++;
    }
    return SIM_OK;
}

/* ---- operations ---- */

static int engine_fail(wl_build_t *b, int rc, int64_t i) {
    return wl_fail(b, rc, NODE_FMT "%s", NODE_ARG(b, i), sim_engine_last_error(b->s->e));
}

/* A compute node's duration (before perturbations). */
static int compute_s(wl_build_t *b, int64_t i, double *out) {
    const step_wl_node_t *nd = node(b, i);
    const model_system_t *sys = b->sys;
    if (b->mode == STEP_WL_COMPUTE_MODEL && (nd->flops > 0.0 || nd->mem_bytes > 0.0)) {
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

/* The step's metadata of an operation of a node of the given kind. */
static int put_meta(wl_build_t *b, int32_t op, step_wl_kind_t kind, const step_wl_node_t *nd,
                    double p2p_bytes) {
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
    if (kind == STEP_WL_COMPUTE) {
        m.flops_tflop = nd->flops * 1e-12;
        m.hbm_gb = nd->mem_bytes * 1e-9;
    } else if (kind == STEP_WL_COLL) {
        const int32_t g = group_of(b, nd);
        m.kind = b->gkind[g];
        m.group = b->ggroup[g];
        m.coll_op = (int8_t)model_coll_of(nd->coll);
        m.comm_gb = nd->comm_bytes * 1e-9;
    } else {
        m.kind = STEP_OP_PP;
        m.group = STEP_META_GROUP_PP;
        m.coll_op = MODEL_COLL_P2P;
        m.comm_gb = p2p_bytes * 1e-9;
    }
    int rc = step_meta_reserve(b->s, op + 1);
    return rc ? rc : step_meta_put(b->s, op, &m);
}

static int32_t link_new(wl_build_t *b, int32_t to, int32_t next) {
    int32_t k = b->free_link;
    if (k >= 0) {
        b->free_link = b->link[k].next;
    } else {
        int64_t cap = b->cap_link;
        if (b->n_link == INT32_MAX ||
            alloc_grow((void **)&b->link, &cap, (int64_t)b->n_link + 1, sizeof *b->link))
            return -1;
        b->cap_link = (int32_t)(cap < INT32_MAX ? cap : INT32_MAX);
        k = b->n_link++;
    }
    b->link[k] = (wl_link_t){to, next};
    if (to < -1)
        b->pend[-to - 2].refs++;
    return k;
}

/* A pending end that is made and that no list names any more goes back to the free list. */
static void pend_free(wl_build_t *b, int32_t k) {
    wl_pend_t *p = &b->pend[k];
    if (p->op < 0 || p->refs > 0 || p->preds >= 0 || p->succs >= 0)
        return;
    p->next = b->free_pend;
    p->op = -1;
    p->refs = -1; /* (free) */
    b->free_pend = k;
}

/* Link l back to the free list (the pending end it names loses a reference). */
static void link_free(wl_build_t *b, int32_t l) {
    const int32_t to = b->link[l].to;
    b->link[l].next = b->free_link;
    b->free_link = l;
    if (to < -1 && --b->pend[-to - 2].refs == 0)
        pend_free(b, -to - 2);
}

/* x as it stands: an operation, a pending end's operation once it is made, else the pending end. */
static int32_t resolved(const wl_build_t *b, int32_t x) {
    return x < -1 && b->pend[-x - 2].op >= 0 ? b->pend[-x - 2].op : x;
}

/* A link to `to` put at the head of the list *head (a pending end's preds or succs). */
static int keep(wl_build_t *b, int32_t *head, int32_t to) {
    const int32_t k = link_new(b, to, *head); /* (grows the links, never the pending ends) */
    if (k < 0)
        return SIM_ENOMEM;
    *head = k;
    return SIM_OK;
}

/* op (an operation or a pending end) runs after `after` (the same): stored in the engine when both
 * are operations, else kept with the pending one until it is made. */
static int depend(wl_build_t *b, int32_t op, int32_t after) {
    op = resolved(b, op);
    after = resolved(b, after);
    if (after < -1)
        return keep(b, &b->pend[-after - 2].succs, op);
    if (op < -1)
        return keep(b, &b->pend[-op - 2].preds, after);
    return sim_op_depend(b->s->e, op, after);
}

static uint64_t chan_hash(int32_t src, int32_t dst, int64_t tag) {
    return id_hash((uint64_t)(uint32_t)src * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uint32_t)dst << 17 ^
                   (uint64_t)tag * 0xbf58476d1ce4e5b9ULL);
}

/* The channel (src, dst, tag), added when new; NULL out of memory. */
static wl_chan_t *channel(wl_build_t *b, int32_t src, int32_t dst, int64_t tag) {
    if (2 * (b->n_chan + 1) > b->chan_cap) {
        const int64_t cap = b->chan_cap ? 2 * b->chan_cap : 1024;
        wl_chan_t *t = alloc_calloc((size_t)cap, sizeof *t);
        if (!t)
            return NULL;
        for (int64_t k = 0; k < b->chan_cap; k++)
            if (b->chan[k].used) {
                int64_t j = (int64_t)(chan_hash(b->chan[k].src, b->chan[k].dst, b->chan[k].tag) &
                                      (uint64_t)(cap - 1));
                while (t[j].used)
                    j = (j + 1) & (cap - 1);
                t[j] = b->chan[k];
            }
        free(b->chan);
        b->chan = t;
        b->chan_cap = cap;
    }
    int64_t k = (int64_t)(chan_hash(src, dst, tag) & (uint64_t)(b->chan_cap - 1));
    for (; b->chan[k].used; k = (k + 1) & (b->chan_cap - 1))
        if (b->chan[k].src == src && b->chan[k].dst == dst && b->chan[k].tag == tag)
            return &b->chan[k];
    b->chan[k] = (wl_chan_t){.src = src, .dst = dst, .tag = tag, .head = -1, .tail = -1, .used = 1};
    b->n_chan++;
    return &b->chan[k];
}

/* Node i (a send or receive whose peer comes later): a pending end, queued on its channel. */
static int pend_add(wl_build_t *b, int64_t i) {
    const step_wl_node_t *nd = node(b, i);
    const int32_t src = nd->kind == STEP_WL_SEND ? b->r : nd->peer,
                  dst = nd->kind == STEP_WL_SEND ? nd->peer : b->r;
    wl_chan_t *c = channel(b, src, dst, nd->tag);
    if (!c)
        return oom(b);
    int32_t k = b->free_pend;
    if (k >= 0) {
        b->free_pend = b->pend[k].next;
    } else {
        int64_t cap = b->cap_pend;
        if (b->n_pend >= INT32_MAX - 2 ||
            alloc_grow((void **)&b->pend, &cap, (int64_t)b->n_pend + 1, sizeof *b->pend))
            return oom(b);
        b->cap_pend = (int32_t)(cap < INT32_MAX ? cap : INT32_MAX);
        k = b->n_pend++;
    }
    b->pend[k] = (wl_pend_t){.id = nd->id,
                             .bytes = nd->comm_bytes,
                             .tag = nd->tag,
                             .rank = b->r,
                             .peer = nd->peer,
                             .stream = b->stream[i],
                             .seq = b->seq[i],
                             .name = b->gname[i],
                             .kind = (int32_t)nd->kind,
                             .preds = -1,
                             .succs = -1,
                             .op = -1,
                             .refs = 0,
                             .next = -1};
    if (c->tail >= 0)
        b->pend[c->tail].next = k;
    else
        c->head = k;
    c->tail = k;
    b->live_pend++;
    b->lop[i] = -(k + 2);
    return SIM_OK;
}

/* Node i (a send or receive whose peer's rank was built): the message with the peer's pending end,
 * made now; the pending end's kept dependencies are stored. */
static int pend_match(wl_build_t *b, int64_t i) {
    const step_wl_node_t *nd = node(b, i);
    const int send = nd->kind == STEP_WL_SEND;
    const int32_t src = send ? b->r : nd->peer, dst = send ? nd->peer : b->r;
    wl_chan_t *c = channel(b, src, dst, nd->tag);
    if (!c)
        return oom(b);
    if (c->head < 0)
        return wl_fail(b, SIM_EINVAL, NODE_FMT "%s rank %d with tag %lld: no matching %s", NODE_ARG(b, i),
                       send ? "send to" : "receive from", nd->peer, (long long)nd->tag,
                       send ? "receive" : "send");
    const int32_t k = c->head;
    wl_pend_t *p = &b->pend[k];
    c->head = p->next;
    if (c->head < 0)
        c->tail = -1;
    const double sbytes = send ? nd->comm_bytes : p->bytes, rbytes = send ? p->bytes : nd->comm_bytes;
    if (rbytes != sbytes && rbytes > 0.0) {
        if (send)
            return wl_fail(
                b, SIM_EINVAL,
                "workload: rank %d node %llu: comm_bytes %.17g, but its send (rank %d node %llu) has %.17g",
                p->rank, (unsigned long long)p->id, rbytes, b->r, (unsigned long long)nd->id, sbytes);
        return wl_fail(b, SIM_EINVAL, NODE_FMT "comm_bytes %.17g, but its send (rank %d node %llu) has %.17g",
                       NODE_ARG(b, i), rbytes, p->rank, (unsigned long long)p->id, sbytes);
    }
    /* the pending end must be the next message of its stream (a stream of one peer and direction holds
     * its messages in its rank's order) */
    int32_t *made = &b->made[(int64_t)p->rank * WL_STREAMS + p->stream];
    if (*made != p->seq)
        return wl_fail(b, SIM_EINVAL,
                       NODE_FMT
                       "%s rank %d (tag %lld): its match (rank %d node %llu) is not the next message of "
                       "its stream on rank %d (messages between two ranks must be received in the order "
                       "they are sent)",
                       NODE_ARG(b, i), send ? "send to" : "receive from", nd->peer, (long long)nd->tag,
                       p->rank, (unsigned long long)p->id, p->rank);
    (*made)++;
    const int32_t s_stream = send ? b->stream[i] : p->stream, r_stream = send ? p->stream : b->stream[i];
    const int32_t gi = send ? b->gname[i] : p->name;
    sim_op_id_t so = -1, ro = -1;
    int rc = sim_p2p_add(b->s->e, src, s_stream, dst, r_stream, sbytes,
                         engine_name(b, gi, STEP_WL_SEND, STEP_WL_ALLREDUCE), &so, &ro);
    if (rc)
        return engine_fail(b, rc, i);
    const int32_t mine = send ? so : ro, theirs = send ? ro : so;
    b->lop[i] = mine;
    p->op = theirs;
    if ((rc = put_meta(b, so, STEP_WL_SEND, nd, sbytes)) ||
        (rc = put_meta(b, ro, STEP_WL_RECV, nd, sbytes)) || (rc = op_name(b, mine, b->gname[i])) ||
        (rc = op_name(b, theirs, p->name)))
        return rc;
    /* what the pending end waited for, and what waited for it */
    b->live_pend--;
    int32_t l = p->preds;
    p->preds = -1;
    while (l >= 0) {
        const int32_t next = b->link[l].next;
        if ((rc = sim_op_depend(b->s->e, theirs, b->link[l].to)))
            return engine_fail(b, rc, i);
        link_free(b, l);
        l = next;
    }
    l = b->pend[k].succs;
    b->pend[k].succs = -1;
    while (l >= 0) {
        const int32_t next = b->link[l].next;
        if ((rc = depend(b, b->link[l].to, theirs)))
            return rc == SIM_ENOMEM ? oom(b) : engine_fail(b, rc, i);
        link_free(b, l);
        l = next;
    }
    pend_free(b, k);
    return SIM_OK;
}

/* Node i's collective: the group's k-th on this rank, made by the group's lowest rank, checked alike
 * by the others. */
static int coll_node(wl_build_t *b, int64_t i) {
    const step_wl_node_t *nd = node(b, i);
    const int32_t g = group_of(b, nd), sz = group_size(b, g);
    const int64_t k = b->cnt[g]++;
    const int32_t j = b->mpos[find_member(b, b->r, g)];
    step_t *s = b->s;
    if (k == b->n_inst[g]) { /* the first member to reach it (the lowest rank, unless counts differ) */
        if (alloc_grow((void **)&b->inst[g], &b->cap_inst[g], k + 1, sizeof *b->inst[g]))
            return oom(b);
        for (int32_t m = 0; m < sz; m++)
            b->gbuf[m] = group_rank(b, g, m);
        const sim_coll_desc_t d = {.op = sim_coll_of(nd->coll),
                                   .algo = SIM_ALGO_AUTO,
                                   .fidelity = SIM_FIDELITY_DEFAULT,
                                   .use_default_mode = 1,
                                   .size_bytes = nd->comm_bytes,
                                   .gpus = b->gbuf,
                                   .n_gpus = sz,
                                   .root = 0,
                                   .stream = b->stream[i],
                                   .name = engine_name(b, b->gname[i], STEP_WL_COLL, nd->coll)};
        int rc = sim_coll_add(s->e, &d, b->obuf, NULL);
        if (rc)
            return engine_fail(b, rc, i);
        for (int32_t m = 1; m < sz; m++)
            if (b->obuf[m] != b->obuf[0] + m)
                return wl_fail(b, SIM_EINVAL, NODE_FMT "the engine's member operations are not consecutive",
                               NODE_ARG(b, i));
        b->inst[g][k] = (wl_inst_t){b->obuf[0], 0, b->r};
        b->n_inst[g]++;
    } else {
        sim_coll_info_t ci;
        sim_coll_describe(s->e, sim_op_collective(s->e, b->inst[g][k].first_op), &ci);
        if (ci.op != sim_coll_of(nd->coll) || ci.size_bytes != nd->comm_bytes) {
            const int kind = ci.op != sim_coll_of(nd->coll);
            return wl_fail(b, SIM_EINVAL,
                           NODE_FMT "%s: %s of %.17g bytes, but rank %d (the first member to run the same "
                                    "collective of group %.40s) has %s of %.17g",
                           NODE_ARG(b, i), kind ? "coll" : "comm_bytes", coll_kind_name(nd->coll),
                           nd->comm_bytes, b->inst[g][k].maker, group_name(b, g), sim_coll_op_name(ci.op),
                           ci.size_bytes);
        }
    }
    b->inst[g][k].arrived++;
    b->lop[i] = b->inst[g][k].first_op + j;
    return SIM_OK;
}

/* The current rank's nodes as operations, in its topological order, with their dependencies. */
static int build_rank(wl_build_t *b) {
    step_t *s = b->s;
    int rc = SIM_OK;
    for (int32_t g = 0; g < b->ng; g++)
        b->cnt[g] = 0;
    if ((rc = rank_names(b)))
        return rc;
    for (int64_t i = 0; i < b->n; i++) /* names in file order */
        if ((rc = step_name(b, node(b, i)->name, &b->gname[i])))
            return oom(b);
    for (int64_t o = 0; o < b->n && !rc; o++) {
        const int64_t i = b->order[o];
        const step_wl_node_t *nd = node(b, i);
        b->lop[i] = -1;
        if (nd->kind == STEP_WL_COMPUTE) {
            double d = 0.0;
            if ((rc = compute_s(b, i, &d)))
                return rc;
            d = step_perturb_s(s, b->r, nd->id, d);
            sim_op_id_t op;
            if ((rc = sim_op_compute(s->e, b->r, 0, d, engine_name(b, b->gname[i], nd->kind, nd->coll), &op)))
                return engine_fail(b, rc, i);
            b->lop[i] = op;
            if ((rc = put_meta(b, op, nd->kind, nd, 0.0)) || (rc = op_name(b, op, b->gname[i])))
                return rc;
        } else if (nd->kind == STEP_WL_COLL) {
            if ((rc = coll_node(b, i)))
                return rc;
            if ((rc = put_meta(b, b->lop[i], nd->kind, nd, 0.0)) || (rc = op_name(b, b->lop[i], b->gname[i])))
                return rc;
        } else if (nd->peer > b->r) {
            rc = pend_add(b, i);
        } else {
            rc = pend_match(b, i);
        }
        for (int64_t e = b->dep0[i]; e < b->dep0[i + 1] && !rc; e++)
            if ((rc = depend(b, b->lop[i], b->lop[b->dep_ix[e]])))
                rc = rc == SIM_ENOMEM ? oom(b) : engine_fail(b, rc, i);
    }
    if (rc)
        return rc;
    /* the rank's collectives per group, for the check at the end */
    for (int32_t g = 0; g < b->ng; g++)
        if (b->cnt[g] > 0)
            b->seq_count[find_member(b, b->r, g)] = b->cnt[g];
    return SIM_OK;
}

/* After the first rank: room for about as many operations on every rank, within the memory budget,
 * reserved at once so that the arrays of operations never move and their huge pages stay whole
 * (alloc.h); a reservation is address space, touched only as the operations come. Advice: a
 * workload larger than its estimate grows as before, and a reservation refused is no error. */
static void reserve(wl_build_t *b, double budget_gb) {
    step_t *s = b->s;
    const double per_op_gb = step_memory_estimate_gb(1) - step_memory_estimate_gb(0);
    double est = 1.125 * (double)b->nodes * (double)b->n_ranks; /* (an operation a node) */
    if (per_op_gb > 0.0 && est > budget_gb / per_op_gb)
        est = budget_gb / per_op_gb;
    if (est > INT32_MAX)
        est = INT32_MAX;
    const int64_t n = (int64_t)est;
    if (n <= sim_op_count(s->e) || sim_engine_reserve(s->e, n, n) != SIM_OK ||
        step_meta_reserve(s, (int32_t)n) != SIM_OK) {
        s->err[0] = '\0'; /* (refused: not an error) */
        return;
    }
    (void)alloc_grow((void **)&s->wl_op_name, &b->cap_op_name, n - s->op0, sizeof *s->wl_op_name);
}

/* After the last rank: every message matched, every member at every collective of its groups. */
static int finish(wl_build_t *b) {
    for (int32_t k = 0; k < b->n_pend && b->live_pend > 0; k++) {
        const wl_pend_t *p = &b->pend[k];
        if (p->refs >= 0 && p->op < 0)
            return wl_fail(b, SIM_EINVAL,
                           "workload: rank %d node %llu: %s rank %d with tag %lld: no matching %s", p->rank,
                           (unsigned long long)p->id, p->kind == STEP_WL_SEND ? "send to" : "receive from",
                           p->peer, (long long)p->tag, p->kind == STEP_WL_SEND ? "receive" : "send");
    }
    for (int32_t g = 0; g < b->ng; g++) {
        const int32_t r0 = group_rank(b, g, 0);
        const int64_t c0 = b->seq_count[find_member(b, r0, g)];
        for (int32_t j = 1; j < group_size(b, g); j++) {
            const int32_t r = group_rank(b, g, j);
            const int64_t c = b->seq_count[find_member(b, r, g)];
            if (c != c0)
                return wl_fail(
                    b, SIM_EINVAL,
                    "workload: group %d (%.40s): rank %d runs %lld collectives on it, rank %d runs %lld; "
                    "allowed: the same on every member",
                    g, group_name(b, g), r, (long long)c, r0, (long long)c0);
        }
        if (b->src->group_used[g] && b->n_inst[g] == 0)
            return wl_fail(b, SIM_EINVAL,
                           "workload: group %d (%.40s): no collective uses it, but its source said one does",
                           g, group_name(b, g));
    }
    return SIM_OK;
}

static void wl_build_free(wl_build_t *b) {
    for (int64_t k = 0; k < b->n_seen; k++)
        free(b->seen[k].lname);
    free(b->seen);
    for (int32_t g = 0; b->inst && g < b->ng; g++)
        free(b->inst[g]);
    void *p[] = {b->gkind,  b->ggroup,   b->member, b->mpos, b->seq_count, b->color,  b->inst,
                 b->n_inst, b->cap_inst, b->cnt,    b->pend, b->link,      b->chan,   b->made,
                 b->stamp,  b->id_slot,  b->dep_ix, b->dep0, b->order,     b->stream, b->seq,
                 b->gname,  b->lop,      b->gbuf,   b->obuf};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        free(p[i]);
}

int step_new_workload_source(const step_wl_source_t *src, const step_config_t *cfg,
                             const sim_network_desc_t *net, const model_system_t *system,
                             step_wl_compute_t compute, step_t **out, char *err, size_t err_size) {
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
    b.src = src;
    b.s = s;
    b.sys = system;
    b.mode = compute;
    b.free_pend = b.free_link = -1;
    int rc = SIM_OK;
    if (!src || !src->shape || !src->group_used || !src->rank)
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
    if (!rc) {
        b.shape = src->shape;
        b.n_ranks = src->shape->n_ranks;
        if (b.n_ranks < 1)
            rc = step_fail(s, SIM_EINVAL, "workload: n_ranks %d; allowed: 1 or more", b.n_ranks);
    }
    if (!rc)
        rc = groups(&b);
    const int32_t nr = b.n_ranks;
    if (!rc) {
        s->gpus = nr;
        s->job.gpus = nr;
        s->pp = 1;
        s->v = 1;
        s->m = 0;
        s->per_stage = nr;
        s->level = STEP_FULL;
        s->collapse_exact = 1;
        s->granularity = STEP_GRANULARITY_LAYER;
        snprintf(s->collapse_note, sizeof s->collapse_note, "none: a workload, every rank simulated");
        if (system)
            s->job.system = *system;
        rc = step_perturb_init(s);
    }
    if (!rc && s->cfg.comm == SIM_COMM_NETWORK) {
        if (!net)
            rc = step_fail(s, SIM_EINVAL, "network: required with network communication");
        else if (net->n_gpus < nr)
            rc = step_fail(s, SIM_EINVAL,
                           "network: %d GPUs, but the workload has %d ranks; allowed: at least %d",
                           net->n_gpus, nr, nr);
        if (!rc) {
            s->net = *net;
            s->engine_gpus = net->n_gpus;
            s->gpus_per_domain = net->gpus_per_domain > 0 ? net->gpus_per_domain : 1;
        }
    } else if (!rc) {
        s->engine_gpus = nr;
        int64_t g = system->nvlink_size;
        g = g < 1 ? 1 : g > nr ? nr : g;
        s->gpus_per_domain = (int32_t)g;
        const sim_star_params_t sp = {.n_gpus = nr,
                                      .nic_bytes_per_s = 1e9,
                                      .gpus_per_domain = s->gpus_per_domain,
                                      .nvlink_bytes_per_s = 1e9};
        if ((rc = sim_star_init(&s->star, &sp)))
            step_fail(s, rc, "step: the analytic stand-in network: %s", sim_status_name(rc));
        else
            sim_star_network(&s->star, &s->net);
    }
    if (!rc) {
        s->stage_gpus = alloc_malloc((size_t)nr * sizeof *s->stage_gpus);
        s->gpu_stage = alloc_malloc((size_t)s->engine_gpus * sizeof *s->gpu_stage);
        s->act_gb = alloc_calloc((size_t)s->engine_gpus, sizeof *s->act_gb);
        s->peak_act_gb = alloc_calloc((size_t)s->engine_gpus, sizeof *s->peak_act_gb);
        b.made = alloc_calloc((size_t)nr * WL_STREAMS, sizeof *b.made);
        b.gbuf = alloc_malloc((size_t)nr * sizeof *b.gbuf);
        b.obuf = alloc_malloc((size_t)nr * sizeof *b.obuf);
        if (!s->stage_gpus || !s->gpu_stage || !s->act_gb || !s->peak_act_gb || !b.made || !b.gbuf || !b.obuf)
            rc = step_fail(s, SIM_ENOMEM, "step: out of memory");
        for (int32_t g = 0; !rc && g < s->engine_gpus; g++)
            s->gpu_stage[g] = g < nr ? 0 : -1;
        for (int32_t r = 0; !rc && r < nr; r++)
            s->stage_gpus[r] = r;
    }
    if (!rc) {
        s->own_engine = 1;
        sim_config_t ec = s->cfg.engine;
        ec.comm_streams = WL_MAX_STREAMS; /* a rank's streams are known when it is read */
        ec.comm_mode = s->cfg.comm;
        ec.has_system = system != NULL;
        if (system)
            ec.system = *system;
        char eerr[256];
        rc = sim_engine_new(&ec, &s->net, &s->e, eerr, sizeof eerr);
        if (rc)
            step_fail(s, rc, "engine: %s", eerr);
    }
    const double budget_gb = s->cfg.max_memory_gb > 0.0 ? s->cfg.max_memory_gb : step_memory_budget_gb();
    for (int32_t r = 0; !rc && r < nr; r++) {
        char serr[sizeof s->err];
        serr[0] = '\0';
        const step_workload_t *w = NULL;
        rc = src->rank(src->ctx, r, &w, serr, sizeof serr);
        if (rc) {
            step_fail(s, rc, "%s", rc == SIM_ENOMEM && !serr[0] ? "workload: out of memory" : serr);
            break;
        }
        if (!w || w->n_ranks != nr || !w->rank_nodes_offset || w->rank_nodes_offset[r] < 0 ||
            w->rank_nodes_offset[r + 1] < w->rank_nodes_offset[r]) {
            rc = step_fail(s, SIM_EINVAL, "workload: rank %d: its nodes' range is not valid", r);
            break;
        }
        b.w = w;
        b.r = r;
        b.a = w->rank_nodes_offset[r];
        b.n = w->rank_nodes_offset[r + 1] - b.a;
        if (b.nodes + b.n > INT32_MAX) {
            rc = step_fail(s, SIM_EINVAL, "workload: more than %d nodes", INT32_MAX);
            break;
        }
        if ((rc = check_rank(&b)) || (rc = topo_order(&b)) || (rc = rank_streams(&b)) ||
            (rc = build_rank(&b)))
            break;
        b.nodes += b.n;
        if (r == 0 && nr > 1)
            reserve(&b, budget_gb);
        /* the memory budget, as step_new's (the step's bytes per operation), as the operations grow */
        const double need_gb = step_memory_estimate_gb(sim_op_count(s->e));
        if (need_gb > budget_gb)
            rc = step_fail(
                s, SIM_EINVAL,
                "workload: %lld nodes (ranks 0..%d) need about %.1f GB, more than the memory budget of "
                "%.1f GB (--max-memory); allowed: a smaller workload or a larger budget",
                (long long)b.nodes, r, need_gb, budget_gb);
    }
    if (!rc)
        rc = finish(&b);
    step_workload_names_done(&s->wl_names); /* the names stay, their hash index goes */
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

/* ---- an in-memory workload as a source ---- */

typedef struct wl_mem {
    const step_workload_t *w;
} wl_mem_t;

static int mem_rank(void *ctx, int32_t r, const step_workload_t **out, char *err, size_t err_size) {
    (void)r;
    (void)err;
    (void)err_size;
    *out = ((const wl_mem_t *)ctx)->w;
    return SIM_OK;
}

int step_new_workload(const step_workload_t *w, const step_config_t *cfg, const sim_network_desc_t *net,
                      const model_system_t *system, step_wl_compute_t compute, step_t **out, char *err,
                      size_t err_size) {
    *out = NULL;
    char msg[300] = "";
    if (!w)
        snprintf(msg, sizeof msg, "workload: none given");
    else if (w->n_ranks < 1 || !w->rank_nodes_offset)
        snprintf(msg, sizeof msg, "workload: n_ranks %d; allowed: 1 or more", w->n_ranks);
    else if (w->rank_nodes_offset[0] != 0)
        snprintf(msg, sizeof msg, "workload: rank_nodes_offset[0] %lld; allowed: 0",
                 (long long)w->rank_nodes_offset[0]);
    for (int32_t r = 0; !msg[0] && r < w->n_ranks; r++)
        if (w->rank_nodes_offset[r + 1] < w->rank_nodes_offset[r])
            snprintf(msg, sizeof msg, "workload: rank %d: rank_nodes_offset decreases", r);
    if (!msg[0] && (w->n_groups < 0 || (w->n_groups > 0 && (!w->groups || !w->group_ranks))))
        snprintf(msg, sizeof msg, "workload: n_groups %d without groups", w->n_groups);
    if (msg[0]) {
        if (err && err_size)
            snprintf(err, err_size, "%s", msg);
        return SIM_EINVAL;
    }
    /* the groups a collective uses (out-of-range groups are left to the build's checks) */
    uint8_t *used = alloc_calloc((size_t)w->n_groups + 1, 1);
    if (!used) {
        if (err && err_size)
            snprintf(err, err_size, "workload: out of memory");
        return SIM_ENOMEM;
    }
    const int64_t n = w->rank_nodes_offset[w->n_ranks];
    for (int64_t i = 0; i < n; i++)
        if (w->nodes[i].kind == STEP_WL_COLL && w->nodes[i].group >= -1 && w->nodes[i].group < w->n_groups)
            used[w->nodes[i].group < 0 ? w->n_groups : w->nodes[i].group] = 1;
    wl_mem_t m = {w};
    const step_wl_source_t src = {.shape = w, .group_used = used, .rank = mem_rank, .ctx = &m};
    const int rc = step_new_workload_source(&src, cfg, net, system, compute, out, err, err_size);
    free(used);
    return rc;
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

/* The first index in [0, n] whose key (increasing in the index) is >= want, searched outward from
 * index near (galloping: steps of 1, 2, 4, ..., then a binary search inside the last step), so that a
 * key a few places away costs a few comparisons: an operation's successors and dependencies lie
 * mostly beside it in its GPU's operation order. */
typedef uint64_t (*ex_key_fn)(const void *base, int64_t i);

static int64_t ex_lower_bound(const void *base, int64_t n, int64_t near, uint64_t want, ex_key_fn key) {
    int64_t lo = 0, hi = n, step = 1;
    if (near >= 0 && near < n && key(base, near) < want) { /* the answer is after near */
        for (lo = near + 1; lo + step - 1 < n && key(base, lo + step - 1) < want; step *= 2)
            lo += step;
        hi = lo + step - 1 < n ? lo + step - 1 : n;
    } else if (near >= 0 && near < n) { /* at or before near */
        for (hi = near; hi - step >= 0 && key(base, hi - step) >= want; step *= 2)
            hi -= step;
        lo = hi - step + 1 > 0 ? hi - step + 1 : 0;
    }
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (key(base, mid) < want)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static uint64_t ex_node_id(const void *base, int64_t i) {
    return ((const step_wl_node_t *)base)[i].id;
}

static uint64_t ex_op_id(const void *base, int64_t i) {
    return (uint64_t)((const int32_t *)base)[i];
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
                const int64_t lo = ex_lower_bound(tmp, m, i, id, ex_node_id); /* ids increase */
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
                const int64_t lo = ex_lower_bound(ops, m, i, (uint64_t)x->sbuf[j], ex_op_id);
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
