/* reader.c - Chakra execution traces (one file per rank) into a step_workload_t (trace_chakra.h;
 * the field mapping is docs/workloads.md's). Decoders (one a thread, chakra_default_threads) each
 * read a rank's file in one read() and decode its records with protobuf-c into a per-record arena
 * (no allocation per node once the arena has grown), mapping them into a buffer of the rank (nodes,
 * dependencies, names and groups local to it), a bounded window of ranks ahead of the consumer.
 * The streaming reader (trace_chakra_reader_*) knows the process groups at open: from rank 0's
 * metadata when the set is marked complete (checked as the ranks come), else from a first pass
 * over every rank that keeps only the groups; then it hands out the ranks in rank order, each with
 * its own name table and its groups resolved, and the first error in rank order, exactly as
 * reading the files one by one. trace_chakra_read appends the ranks: the workload's name table
 * numbers names in order of first use over the ranks. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "chakra_internal.h"
#include "et_def.pb-c.h"

/* ---- arena for protobuf-c -------------------------------------------------------------------- */

typedef struct arena {
    char **chunks;
    size_t *sizes;
    int n, cap, cur;
    size_t pos;
    int oom;
} arena_t;

static void *arena_alloc(void *data, size_t size) {
    arena_t *a = data;
    size = (size + 15) & ~(size_t)15;
    while (a->cur < a->n) {
        if (a->sizes[a->cur] - a->pos >= size) {
            void *p = a->chunks[a->cur] + a->pos;
            a->pos += size;
            return p;
        }
        a->cur++;
        a->pos = 0;
    }
    if (a->n == a->cap) {
        const int cap = a->cap ? 2 * a->cap : 8;
        char **c = alloc_realloc(a->chunks, (size_t)cap * sizeof *c);
        if (!c)
            goto oom;
        a->chunks = c;
        size_t *s = alloc_realloc(a->sizes, (size_t)cap * sizeof *s);
        if (!s)
            goto oom;
        a->sizes = s;
        a->cap = cap;
    }
    const size_t chunk = size > ((size_t)1 << 16) ? size : ((size_t)1 << 16);
    char *p = alloc_malloc(chunk);
    if (!p)
        goto oom;
    a->chunks[a->n] = p;
    a->sizes[a->n] = chunk;
    a->cur = a->n++;
    a->pos = size;
    return p;
oom:
    a->oom = 1;
    return NULL;
}

static void arena_free(void *data, void *ptr) {
    (void)data;
    (void)ptr;
}

static void arena_reset(arena_t *a) {
    a->cur = 0;
    a->pos = 0;
}

static void arena_destroy(arena_t *a) {
    for (int i = 0; i < a->n; i++)
        free(a->chunks[i]);
    free(a->chunks);
    free(a->sizes);
    memset(a, 0, sizeof *a);
}

/* ---- errors, growth ------------------------------------------------------------------------- */

/* Where an error line goes and the file it names (the merge's, or a decoder's rank buffer). */
typedef struct where {
    char *err;
    size_t err_size;
    const char *file;
} where_t;

static int fail(where_t *at, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(where_t *at, const char *fmt, ...) {
    int n = snprintf(at->err, at->err_size, "%s: ", at->file);
    if (n < 0 || (size_t)n >= at->err_size)
        return TRACE_EINVAL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(at->err + n, at->err_size - (size_t)n, fmt, ap);
    va_end(ap);
    return TRACE_EINVAL;
}

static int oom(where_t *at) {
    snprintf(at->err, at->err_size, "out of memory");
    return TRACE_ENOMEM;
}

/* alloc_grow with the codec's status: TRACE_OK or TRACE_ENOMEM. */
static int grow(void **p, int64_t *cap, int64_t need, size_t sz) {
    return alloc_grow(p, cap, need, sz) ? TRACE_ENOMEM : TRACE_OK;
}

/* ---- string tables --------------------------------------------------------------------------- */

/* A string's hash (8 bytes at a time; any fixed function will do: only the tables' layout depends
 * on it, never an index or an order). */
static uint64_t str_hash(const char *p, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        h = (h ^ x) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    uint64_t x = 0; /* the last 0..7 bytes, loaded whole (not byte by byte into a word) */
    if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, p, 4);
        memcpy(&b, p + n - 4, 4);
        x = (uint64_t)a | (uint64_t)b << 32;
    } else if (n > 0) {
        x = (uint64_t)(uint8_t)p[0] | (uint64_t)(uint8_t)p[n / 2] << 8 | (uint64_t)(uint8_t)p[n - 1] << 16;
    }
    h = (h ^ x) * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 32);
}

/* a[0..len) == b[0..len): up to 24 bytes as three overlapping words (no call) */
static inline int bytes_equal(const void *a, const void *b, size_t len) {
    if (len < 8 || len > 24)
        return memcmp(a, b, len) == 0;
    const char *p = a, *q = b;
    uint64_t x0, y0, x1, y1, x2, y2;
    const size_t mid = len > 16 ? 8 : 0;
    memcpy(&x0, p, 8);
    memcpy(&y0, q, 8);
    memcpy(&x1, p + mid, 8);
    memcpy(&y1, q + mid, 8);
    memcpy(&x2, p + len - 8, 8);
    memcpy(&y2, q + len - 8, 8);
    return ((x0 ^ y0) | (x1 ^ y1) | (x2 ^ y2)) == 0;
}

/* Distinct strings numbered 0.. in order of first insertion, each with its length and hash (kept so
 * that the merge does not hash a name again). Reset for every rank; the arrays stay. */
typedef struct strtab {
    char *chars;
    int64_t n_chars, cap_chars;
    int64_t *off, *len;
    uint64_t *hash;
    int64_t n, cap;
    int32_t *slot; /* [n_slots]: entry, -1 empty (open addressing, linear probing) */
    int64_t n_slots;
} strtab_t;

static void strtab_reset(strtab_t *t) {
    const uint64_t mask = (uint64_t)t->n_slots - 1;
    for (int64_t e = 0; e < t->n; e++) { /* clear exactly the slots in use */
        uint64_t h = t->hash[e] & mask;
        while (t->slot[h] != (int32_t)e)
            h = (h + 1) & mask;
        t->slot[h] = -1;
    }
    t->n = 0;
    t->n_chars = 0;
}

static void strtab_free(strtab_t *t) {
    free(t->chars);
    free(t->off);
    free(t->len);
    free(t->hash);
    free(t->slot);
    memset(t, 0, sizeof *t);
}

/* The entry of s[0..len) (hash h) in *out, added when new (*added = 1). TRACE_OK or TRACE_ENOMEM. */
static int strtab_add(strtab_t *t, const char *s, int64_t len, uint64_t h, int32_t *out, int *added) {
    *added = 0;
    if (2 * (t->n + 1) > t->n_slots) {
        if (t->n >= INT32_MAX - 1)
            return TRACE_ENOMEM;
        const int64_t cap = t->n_slots ? 2 * t->n_slots : 1024;
        int32_t *slot = alloc_malloc((size_t)cap * sizeof *slot);
        if (!slot)
            return TRACE_ENOMEM;
        memset(slot, 0xff, (size_t)cap * sizeof *slot);
        for (int64_t e = 0; e < t->n; e++) {
            uint64_t k = t->hash[e] & (uint64_t)(cap - 1);
            while (slot[k] >= 0)
                k = (k + 1) & (uint64_t)(cap - 1);
            slot[k] = (int32_t)e;
        }
        free(t->slot);
        t->slot = slot;
        t->n_slots = cap;
    }
    const uint64_t mask = (uint64_t)t->n_slots - 1;
    uint64_t k = h & mask;
    for (; t->slot[k] >= 0; k = (k + 1) & mask) {
        const int32_t e = t->slot[k];
        if (t->hash[e] == h && t->len[e] == len && bytes_equal(t->chars + t->off[e], s, (size_t)len)) {
            *out = e;
            return TRACE_OK;
        }
    }
    if (t->n == t->cap) {
        int64_t c1 = t->cap, c2 = t->cap, c3 = t->cap;
        if (grow((void **)&t->off, &c1, t->n + 1, sizeof *t->off) != TRACE_OK ||
            grow((void **)&t->len, &c2, t->n + 1, sizeof *t->len) != TRACE_OK ||
            grow((void **)&t->hash, &c3, t->n + 1, sizeof *t->hash) != TRACE_OK)
            return TRACE_ENOMEM;
        t->cap = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
    }
    if (grow((void **)&t->chars, &t->cap_chars, t->n_chars + len + 1, 1) != TRACE_OK)
        return TRACE_ENOMEM;
    memcpy(t->chars + t->n_chars, s, (size_t)len);
    t->chars[t->n_chars + len] = '\0';
    t->off[t->n] = t->n_chars;
    t->len[t->n] = len;
    t->hash[t->n] = h;
    t->n_chars += len + 1;
    t->slot[k] = (int32_t)t->n;
    *out = (int32_t)t->n++;
    *added = 1;
    return TRACE_OK;
}

/* ---- the state: decoders (one a thread) and the merge ---------------------------------------- */

/* One rank decoded: its file, nodes and dependencies laid out as in the workload but local to the
 * rank (name: index into names + 1, 0 for ""; group: index into pgs, -1 for all ranks;
 * deps_offset: into deps), and its status. The metadata record is left to the merge. */
typedef struct slot {
    int32_t rank; /* held, -1 free */
    int done;     /* decoded: rc and err final */
    int rc;
    char *err; /* [err_size]: the line of the first error */
    uint8_t *buf;
    size_t buf_cap, buf_len;
    int has_meta;
    size_t meta_at, meta_len; /* record 0 (GlobalMetadata) in buf */
    step_wl_node_t *nodes;
    int64_t n_nodes, cap_nodes;
    uint64_t *deps;
    int64_t n_deps, cap_deps;
    int32_t *n_data; /* per node: how many of its deps came from data_deps */
    int64_t cap_n_data;
    strtab_t names;     /* node names (truncated to 63 bytes), in order of first use */
    strtab_t pgs;       /* process groups named by collectives, in order of first use */
    uint64_t *pg_first; /* per pg: the first node naming it */
    int64_t cap_pg_first;
    int coll_all; /* a collective of every rank (pg_name "" or "0") */
} slot_t;

/* A decoder: what one thread needs to turn a rank's file into a slot. */
typedef struct dec {
    where_t at;
    int32_t n_ranks, rank;
    slot_t *s;
    uint64_t *seen_keys; /* dep_seen's set */
    uint8_t *seen_used;
    int64_t seen_cap, seen_n;
    arena_t arena;
    ProtobufCAllocator pa;
    uint8_t *scratch; /* a Node record without its attributes */
    size_t cap_scratch;
    const ChakraProtoMsg__AttributeProto **attrs; /* the record's attributes, decoded or cached */
    uint8_t *attr_keys;                           /* and their attr_key, when keys_valid */
    size_t cap_attrs;
    int keys_valid;
    struct attr_cache *cache;
} dec_t;

typedef struct group_acc {
    char *pg_name;      /* as in the files */
    char display[64];   /* the metadata's doc_string, else pg_name */
    int explicit_ranks; /* defined by a GlobalMetadata attribute */
    int32_t *ranks;     /* explicit: as listed; else the ranks that use it, ascending */
    int32_t n_ranks, cap_ranks;
    int32_t *users; /* explicit groups: ranks that use it (ascending) and a node of each */
    uint64_t *user_node;
    int32_t n_users, cap_users;
    int used;          /* a collective names it */
    int32_t seen_rank; /* a set marked complete: the last rank whose metadata defined it */
} group_acc_t;

/* The merge: the workload built rank by rank in rank order, its groups and its name table. */
typedef struct reader {
    where_t at;
    int32_t rank, n_ranks;
    step_workload_t *w;
    int64_t cap_nodes, cap_deps, n_nodes, n_deps;
    group_acc_t *groups;
    int32_t n_groups, cap_groups, last_group;
    int32_t *group_slot; /* group_find's hash over pg_name: group index, -1 empty */
    int64_t group_slots; /* a power of two, at least twice n_groups; 0 before the first group */
    /* the workload's name table, built here (w->name_offset, w->name_chars) with its own index */
    uint64_t *name_hash; /* [cap_names] */
    int32_t *name_slot;  /* [name_slots]: name index, -1 empty */
    int64_t name_slots, cap_names, n_chars, cap_chars;
    int32_t *name_map, *pg_map; /* a rank's local names and groups -> the workload's */
    int64_t cap_name_map, cap_pg_map;
    uint8_t *meta_ok; /* the last metadata record applied without error (a copy), to skip repeats */
    int64_t meta_ok_len, meta_ok_cap;
    arena_t arena; /* for the metadata records */
    ProtobufCAllocator pa;
    int marked; /* rank 0's metadata marks the groups complete (CHAKRA_ATTR_GROUPS_COMPLETE) */
} reader_t;

/* ---- attributes ------------------------------------------------------------------------------ */

/* A numeric attribute as a double, and whether it was an integer (then *i holds it exactly when it
 * fits an int64; *u_big = 1 when it is an unsigned value of 2^63 or more). 0, or -1 if the
 * attribute is not a number. */
typedef struct num {
    double d;
    int is_int, u_big, is_neg;
    int64_t i;
    uint64_t u;
} num_t;

static int attr_num(const ChakraProtoMsg__AttributeProto *a, num_t *n) {
    memset(n, 0, sizeof *n);
    n->is_int = 1;
    switch (a->value_case) {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL:
        n->i = a->int32_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL:
        n->i = a->int64_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL:
        n->i = a->sint32_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_VAL:
        n->i = a->sint64_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED32_VAL:
        n->i = a->sfixed32_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED64_VAL:
        n->i = a->sfixed64_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL:
        n->i = a->uint32_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED32_VAL:
        n->i = a->fixed32_val;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL:
        n->u = a->uint64_val;
        goto unsig;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL:
        n->u = a->fixed64_val;
        goto unsig;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL:
        n->i = a->bool_val ? 1 : 0;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL:
        n->is_int = 0;
        n->d = a->double_val;
        n->is_neg = n->d < 0;
        return 0;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FLOAT_VAL:
        n->is_int = 0;
        n->d = a->float_val;
        n->is_neg = n->d < 0;
        return 0;
    default:
        return -1;
    }
    n->d = (double)n->i;
    n->is_neg = n->i < 0;
    n->u = (uint64_t)n->i;
    return 0;
unsig:
    n->u_big = n->u > (uint64_t)INT64_MAX;
    n->i = n->u_big ? INT64_MAX : (int64_t)n->u;
    n->d = (double)n->u;
    return 0;
}

/* The attribute's value as text, for error lines. */
static void attr_text(const ChakraProtoMsg__AttributeProto *a, const num_t *n, char *buf, size_t size) {
    if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
        snprintf(buf, size, "\"%.40s\"", a->string_val ? a->string_val : "");
    else if (!n)
        snprintf(buf, size, "(value kind %d)", (int)a->value_case);
    else if (!n->is_int)
        snprintf(buf, size, "%.17g", n->d);
    else if (n->u_big || a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL ||
             a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL)
        snprintf(buf, size, "%" PRIu64, n->u);
    else
        snprintf(buf, size, "%" PRId64, n->i);
}

/* A non-negative size or count below 2^63 (bytes, operations): into *out. */
static int attr_size(dec_t *dc, uint64_t id, const ChakraProtoMsg__AttributeProto *a, double *out) {
    num_t n;
    char v[64];
    const char *why = NULL;
    if (attr_num(a, &n) != 0) {
        attr_text(a, NULL, v, sizeof v);
        return fail(&dc->at, "node %" PRIu64 ": %s: %s: not a number", id, a->name, v);
    }
    if (!n.is_int && !isfinite(n.d))
        why = "not a finite number";
    else if (n.is_neg)
        why = "negative";
    else if (n.u_big || n.d >= CHAKRA_TWO_63)
        why = "overflows (2^63 or more)";
    if (why) { /* the value is formatted only for the error line */
        attr_text(a, &n, v, sizeof v);
        return fail(&dc->at, "node %" PRIu64 ": %s: %s: %s", id, a->name, v, why);
    }
    *out = n.d;
    return TRACE_OK;
}

/* An integer in lo..hi into *out. */
static int attr_int(dec_t *dc, uint64_t id, const ChakraProtoMsg__AttributeProto *a, int64_t lo, int64_t hi,
                    const char *what, int64_t *out) {
    num_t n;
    char v[64];
    const int is_num = attr_num(a, &n) == 0;
    if (!is_num || !n.is_int) {
        attr_text(a, is_num ? &n : NULL, v, sizeof v);
        return fail(&dc->at, "node %" PRIu64 ": %s: %s: not an integer", id, a->name, v);
    }
    if (n.u_big || n.i < lo || n.i > hi) {
        attr_text(a, &n, v, sizeof v);
        return fail(&dc->at, "node %" PRIu64 ": %s: %s: %s (%" PRId64 "..%" PRId64 ")", id, a->name, v, what,
                    lo, hi);
    }
    *out = n.i;
    return TRACE_OK;
}

/* ---- groups ---------------------------------------------------------------------------------- */

static uint64_t group_hash(const char *p) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *p; p++)
        h = (h ^ (uint8_t)*p) * 0x100000001b3ULL;
    return h ^ (h >> 29);
}

/* The group named name, -1 if none: a hash lookup (a rank's collectives alternate between its
 * groups, and a workload may have thousands). */
static int32_t group_find(reader_t *rd, const char *name) {
    if (rd->last_group >= 0 && strcmp(rd->groups[rd->last_group].pg_name, name) == 0)
        return rd->last_group;
    if (rd->group_slots == 0)
        return -1;
    const uint64_t mask = (uint64_t)rd->group_slots - 1;
    for (uint64_t h = group_hash(name) & mask; rd->group_slot[h] >= 0; h = (h + 1) & mask)
        if (strcmp(rd->groups[rd->group_slot[h]].pg_name, name) == 0)
            return rd->last_group = rd->group_slot[h];
    return -1;
}

/* Put group g into the hash, growing it first when it would be more than half full. */
static int group_index(reader_t *rd, int32_t g) {
    if (2 * ((int64_t)g + 1) > rd->group_slots) {
        const int64_t cap = rd->group_slots ? 2 * rd->group_slots : 256;
        int32_t *slot = alloc_malloc((size_t)cap * sizeof *slot);
        if (!slot)
            return TRACE_ENOMEM;
        for (int64_t k = 0; k < cap; k++)
            slot[k] = -1;
        free(rd->group_slot);
        rd->group_slot = slot;
        rd->group_slots = cap;
        for (int32_t k = 0; k < g; k++)
            if (group_index(rd, k) != TRACE_OK)
                return TRACE_ENOMEM; /* (cannot happen: the table is large enough) */
    }
    const uint64_t mask = (uint64_t)rd->group_slots - 1;
    uint64_t h = group_hash(rd->groups[g].pg_name) & mask;
    while (rd->group_slot[h] >= 0)
        h = (h + 1) & mask;
    rd->group_slot[h] = g;
    return TRACE_OK;
}

static int32_t group_add(reader_t *rd, const char *name) {
    if (rd->n_groups == rd->cap_groups) {
        int64_t cap = rd->cap_groups;
        if (rd->n_groups >= INT32_MAX / 2 ||
            grow((void **)&rd->groups, &cap, (int64_t)rd->n_groups + 1, sizeof *rd->groups) != TRACE_OK)
            return -1;
        rd->cap_groups = (int32_t)cap;
    }
    group_acc_t *g = &rd->groups[rd->n_groups];
    memset(g, 0, sizeof *g);
    g->pg_name = alloc_strdup(name);
    if (!g->pg_name)
        return -1;
    if (group_index(rd, rd->n_groups) != TRACE_OK) {
        free(g->pg_name);
        g->pg_name = NULL;
        return -1;
    }
    snprintf(g->display, sizeof g->display, "%s", name);
    return rd->last_group = rd->n_groups++;
}

static int push_rank(int32_t **a, int32_t *n, int32_t *cap, int32_t r) {
    if (*n == *cap) {
        int64_t c = *cap;
        if (grow((void **)a, &c, (int64_t)*n + 1, sizeof **a) != TRACE_OK)
            return TRACE_ENOMEM;
        *cap = (int32_t)(c > INT32_MAX ? INT32_MAX : c);
    }
    (*a)[(*n)++] = r;
    return TRACE_OK;
}

/* A GlobalMetadata attribute "pg_ranks:NAME" = an integer list of ranks. */
static int meta_group(reader_t *rd, const ChakraProtoMsg__AttributeProto *a) {
    const char *name = a->name + strlen(CHAKRA_ATTR_PG_RANKS);
    int32_t *ranks = NULL;
    int32_t n = 0, cap = 0;
    int rc = TRACE_OK;
    size_t count = 0;
    const void *vals = NULL;
    int kind = 0; /* 1 int32, 2 int64, 3 uint32, 4 uint64 */
    switch (a->value_case) {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_LIST:
        count = a->int32_list->n_values, vals = a->int32_list->values, kind = 1;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_LIST:
        count = a->int64_list->n_values, vals = a->int64_list->values, kind = 2;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_LIST:
        count = a->uint32_list->n_values, vals = a->uint32_list->values, kind = 3;
        break;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_LIST:
        count = a->uint64_list->n_values, vals = a->uint64_list->values, kind = 4;
        break;
    default:
        return fail(&rd->at, "metadata: %s: (value kind %d): not a list of integers (ranks)", a->name,
                    (int)a->value_case);
    }
    if (name[0] == '\0' || strcmp(name, "0") == 0)
        return fail(&rd->at, "metadata: %s: \"%s\": process group \"\" and \"0\" mean all ranks", a->name,
                    name);
    if (count == 0)
        return fail(&rd->at, "metadata: %s: []: no ranks", a->name);
    for (size_t i = 0; i < count; i++) {
        int64_t x;
        uint64_t ux = 0;
        switch (kind) {
        case 1:
            x = ((const int32_t *)vals)[i];
            break;
        case 2:
            x = ((const int64_t *)vals)[i];
            break;
        case 3:
            x = ((const uint32_t *)vals)[i];
            break;
        default:
            ux = ((const uint64_t *)vals)[i];
            x = ux > (uint64_t)INT64_MAX ? -1 : (int64_t)ux;
            break;
        }
        if (x < 0 || x >= rd->n_ranks) {
            rc = fail(&rd->at, "metadata: %s: %" PRId64 ": not a rank (0..%d)", a->name, x, rd->n_ranks - 1);
            goto done;
        }
        for (int32_t j = 0; j < n; j++)
            if (ranks[j] == x) {
                rc = fail(&rd->at, "metadata: %s: %" PRId64 ": listed twice", a->name, x);
                goto done;
            }
        if (push_rank(&ranks, &n, &cap, (int32_t)x) != TRACE_OK) {
            rc = oom(&rd->at);
            goto done;
        }
    }
    int32_t g = group_find(rd, name);
    if (g >= 0 && rd->groups[g].explicit_ranks) {
        const group_acc_t *ga = &rd->groups[g];
        if (ga->n_ranks != n || memcmp(ga->ranks, ranks, (size_t)n * sizeof *ranks) != 0)
            rc = fail(&rd->at, "metadata: %s: %d ranks: differs from the definition in an earlier file",
                      a->name, n);
        rd->groups[g].seen_rank = rd->rank;
        goto done;
    }
    if (g >= 0) { /* used in an earlier file that did not define it */
        rc = fail(&rd->at, "metadata: %s: defined here but used without definition in an earlier file",
                  a->name);
        goto done;
    }
    if (rd->marked && rd->rank > 0) {
        rc = fail(&rd->at,
                  "metadata: %s: %d ranks: the set is marked complete but rank 0's file does not define "
                  "this group",
                  a->name, n);
        goto done;
    }
    if ((g = group_add(rd, name)) < 0) {
        rc = oom(&rd->at);
        goto done;
    }
    group_acc_t *ga = &rd->groups[g];
    ga->explicit_ranks = 1;
    ga->seen_rank = rd->rank;
    ga->ranks = ranks;
    ga->n_ranks = ga->cap_ranks = n;
    ranks = NULL;
    if (a->doc_string && a->doc_string[0])
        snprintf(ga->display, sizeof ga->display, "%s", a->doc_string);
done:
    free(ranks);
    return rc;
}

/* Node id uses group pg_name from rank rd->rank: the group's index (creating an inferred group). */
static int node_group(reader_t *rd, uint64_t id, const char *pg_name, int32_t *out) {
    if (pg_name[0] == '\0' || strcmp(pg_name, "0") == 0) {
        *out = -1;
        return TRACE_OK;
    }
    int32_t g = group_find(rd, pg_name);
    if (g < 0 && (g = group_add(rd, pg_name)) < 0)
        return oom(&rd->at);
    group_acc_t *ga = &rd->groups[g];
    if (ga->explicit_ranks) {
        if (ga->n_users == 0 || ga->users[ga->n_users - 1] != rd->rank) {
            int32_t cap = ga->cap_users;
            if (push_rank(&ga->users, &ga->n_users, &ga->cap_users, rd->rank) != TRACE_OK)
                return oom(&rd->at);
            if (ga->cap_users != cap) {
                uint64_t *u = alloc_realloc(ga->user_node, (size_t)ga->cap_users * sizeof *u);
                if (!u)
                    return oom(&rd->at);
                ga->user_node = u;
            }
            ga->user_node[ga->n_users - 1] = id;
        }
    } else if (ga->n_ranks == 0 || ga->ranks[ga->n_ranks - 1] != rd->rank) {
        if (push_rank(&ga->ranks, &ga->n_ranks, &ga->cap_ranks, rd->rank) != TRACE_OK)
            return oom(&rd->at);
    }
    *out = g;
    return TRACE_OK;
}

/* The attributes the reader knows, told apart by their first bytes (one string compare an
 * attribute instead of a chain of them). */
enum {
    A_OTHER,
    A_NUM_OPS,
    A_TENSOR_SIZE,
    A_DURATION_S,
    A_COMM_SIZE,
    A_COMM_SRC,
    A_COMM_DST,
    A_COMM_TAG,
    A_COMM_TYPE,
    A_PG_NAME
};

static int attr_key(const char *an) {
    switch (an[0]) {
    case 'n':
        return strcmp(an, "num_ops") == 0 ? A_NUM_OPS : A_OTHER;
    case 't':
        return strcmp(an, "tensor_size") == 0 ? A_TENSOR_SIZE : A_OTHER;
    case 's':
        return strcmp(an, CHAKRA_ATTR_DURATION_S) == 0 ? A_DURATION_S : A_OTHER;
    case 'p':
        return strcmp(an, "pg_name") == 0 ? A_PG_NAME : A_OTHER;
    case 'c':
        if (strncmp(an, "comm_", 5) != 0)
            return A_OTHER;
        if (strcmp(an + 5, "size") == 0)
            return A_COMM_SIZE;
        if (strcmp(an + 5, "src") == 0)
            return A_COMM_SRC;
        if (strcmp(an + 5, "dst") == 0)
            return A_COMM_DST;
        if (strcmp(an + 5, "tag") == 0)
            return A_COMM_TAG;
        if (strcmp(an + 5, "type") == 0)
            return A_COMM_TYPE;
        return A_OTHER;
    default:
        return A_OTHER;
    }
}

/* ---- one node -------------------------------------------------------------------------------- */

static const char *type_name(int t) {
    static const char *const names[] = {"INVALID_NODE", "METADATA_NODE",  "MEM_LOAD_NODE",  "MEM_STORE_NODE",
                                        "COMP_NODE",    "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE"};
    return t >= 0 && t < 8 ? names[t] : "?";
}

/* A set of dependency ids, for nodes with many dependencies (duplicates are dropped in linear
 * time): open addressing, cleared after each node by removing what was inserted. */
static uint64_t dep_hash(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

/* 1 if d was seen for this node (else remember it and return 0); -1 out of memory. */
static int dep_seen(dec_t *rd, uint64_t d) {
    if (rd->seen_n * 2 >= rd->seen_cap) {
        const int64_t cap = rd->seen_cap ? rd->seen_cap * 2 : 256;
        uint64_t *k = alloc_malloc((size_t)cap * sizeof *k);
        uint8_t *u = alloc_calloc((size_t)cap, 1);
        if (!k || !u) {
            free(k);
            free(u);
            return -1;
        }
        for (int64_t i = 0; i < rd->seen_cap; i++)
            if (rd->seen_used[i])
                for (uint64_t h = dep_hash(rd->seen_keys[i]) & (uint64_t)(cap - 1);;
                     h = (h + 1) & (uint64_t)(cap - 1))
                    if (!u[h]) {
                        u[h] = 1;
                        k[h] = rd->seen_keys[i];
                        break;
                    }
        free(rd->seen_keys);
        free(rd->seen_used);
        rd->seen_keys = k;
        rd->seen_used = u;
        rd->seen_cap = cap;
    }
    const uint64_t mask = (uint64_t)rd->seen_cap - 1;
    for (uint64_t h = dep_hash(d) & mask;; h = (h + 1) & mask) {
        if (!rd->seen_used[h]) {
            rd->seen_used[h] = 1;
            rd->seen_keys[h] = d;
            rd->seen_n++;
            return 0;
        }
        if (rd->seen_keys[h] == d)
            return 1;
    }
}

static void dep_seen_clear(dec_t *rd, const uint64_t *ids, int32_t n) {
    if (rd->seen_n * 4 > rd->seen_cap || n > rd->seen_cap / 4) {
        memset(rd->seen_used, 0, (size_t)rd->seen_cap);
    } else {
        const uint64_t mask = (uint64_t)rd->seen_cap - 1;
        for (int32_t i = 0; i < n; i++) /* linear probing: clear whole clusters touched */
            for (uint64_t h = dep_hash(ids[i]) & mask; rd->seen_used[h]; h = (h + 1) & mask)
                rd->seen_used[h] = 0;
    }
    rd->seen_n = 0;
}

static int map_node(dec_t *rd, const ChakraProtoMsg__Node *m) {
    slot_t *s = rd->s;
    const uint64_t id = m->id;
    step_wl_node_t nd;
    memset(&nd, 0, sizeof nd);
    nd.id = id;
    nd.peer = -1;
    nd.group = -1;
    nd.start_hint_s = -1;
    nd.duration_s = 0;
    if (m->name && m->name[0]) { /* the rank's names: each distinct one (truncated to 63 bytes) once */
        const int64_t len = (int64_t)strnlen(m->name, 63);
        int32_t e;
        int added;
        if (strtab_add(&s->names, m->name, len, str_hash(m->name, (size_t)len), &e, &added) != TRACE_OK)
            return oom(&rd->at);
        nd.name = e + 1;
    }
    const int type = (int)m->type;
    switch (type) {
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE:
        nd.kind = STEP_WL_COMPUTE;
        break;
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE:
        nd.kind = STEP_WL_SEND;
        break;
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE:
        nd.kind = STEP_WL_RECV;
        break;
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE:
        nd.kind = STEP_WL_COLL;
        break;
    case CHAKRA_PROTO_MSG__NODE_TYPE__INVALID_NODE:
    case CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE:
    case CHAKRA_PROTO_MSG__NODE_TYPE__MEM_LOAD_NODE:
    case CHAKRA_PROTO_MSG__NODE_TYPE__MEM_STORE_NODE:
        nd.kind = STEP_WL_COMPUTE; /* no time in stepsim: a zero-time node keeps the DAG whole */
        break;
    default:
        return fail(&rd->at, "node %" PRIu64 ": type: %d: unknown node type (0..7)", id, type);
    }
    const int timed = type == CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE;
    int has_src = 0, has_dst = 0, has_type = 0, has_exact = 0;
    int64_t src = -1, dst = -1, ctype = 0, tag = 0;
    double exact_s = 0;
    const char *pg_name = "";
    for (size_t k = 0; k < m->n_attr; k++) {
        const ChakraProtoMsg__AttributeProto *a = m->attr[k];
        const char *an = a->name ? a->name : "";
        int rc = TRACE_OK;
        const int key = rd->keys_valid ? rd->attr_keys[k] : attr_key(an);
        if (key == A_OTHER)
            continue;
        if (timed) { /* a compute node: its work and our exact duration; the rest is ignored */
            if (key == A_NUM_OPS)
                rc = attr_size(rd, id, a, &nd.flops);
            else if (key == A_TENSOR_SIZE)
                rc = attr_size(rd, id, a, &nd.mem_bytes);
            else if (key == A_DURATION_S) {
                num_t n;
                char v[64];
                const int is_num = attr_num(a, &n) == 0;
                if (!is_num || n.is_int) {
                    attr_text(a, is_num ? &n : NULL, v, sizeof v);
                    return fail(&rd->at, "node %" PRIu64 ": %s: %s: not a double", id, an, v);
                }
                if (!isfinite(n.d) || n.d < 0 || n.d > CHAKRA_MAX_DURATION_S) {
                    attr_text(a, &n, v, sizeof v);
                    return fail(&rd->at, "node %" PRIu64 ": %s: %s: not a duration in 0..%.3g s", id, an, v,
                                CHAKRA_MAX_DURATION_S);
                }
                exact_s = n.d;
                has_exact = 1;
            }
        } else if (nd.kind != STEP_WL_COMPUTE) { /* a communication node */
            switch (key) {
            case A_COMM_SIZE:
                rc = attr_size(rd, id, a, &nd.comm_bytes);
                break;
            case A_COMM_SRC:
                has_src = 1, rc = attr_int(rd, id, a, 0, rd->n_ranks - 1, "not a rank", &src);
                break;
            case A_COMM_DST:
                has_dst = 1, rc = attr_int(rd, id, a, 0, rd->n_ranks - 1, "not a rank", &dst);
                break;
            case A_COMM_TAG:
                rc = attr_int(rd, id, a, 0, INT32_MAX, "not a tag", &tag);
                break;
            case A_COMM_TYPE:
                has_type = 1, rc = attr_int(rd, id, a, 0, 9, "not a CollectiveCommType", &ctype);
                break;
            case A_PG_NAME:
                if (a->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
                    return fail(&rd->at, "node %" PRIu64 ": pg_name: (value kind %d): not a string", id,
                                (int)a->value_case);
                pg_name = a->string_val ? a->string_val : "";
                break;
            default:
                break;
            }
        }
        if (rc != TRACE_OK)
            return rc;
    }
    if (timed) {
        if ((double)m->duration_micros > CHAKRA_MAX_DURATION_US)
            return fail(&rd->at,
                        "node %" PRIu64 ": duration_micros: %" PRIu64 ": overflows the picosecond clock", id,
                        m->duration_micros);
        const double us = (double)m->duration_micros;
        if (has_exact && fabs(exact_s * 1e6 - us) <= 1.0)
            nd.duration_s = exact_s; /* ours, and consistent with Chakra's microseconds */
        else if (m->duration_micros > 0 || (nd.flops == 0 && nd.mem_bytes == 0))
            nd.duration_s = us * 1e-6;
        else
            nd.duration_s = -1; /* no duration: the model derives it from num_ops and tensor_size */
    }
    if (nd.kind == STEP_WL_SEND || nd.kind == STEP_WL_RECV) {
        const int send = nd.kind == STEP_WL_SEND;
        const int has_peer = send ? has_dst : has_src;
        const int64_t peer = send ? dst : src, self = send ? src : dst;
        const char *pf = send ? "comm_dst" : "comm_src", *sf = send ? "comm_src" : "comm_dst";
        if (!has_peer)
            return fail(&rd->at, "node %" PRIu64 ": %s: (missing): a %s needs its peer", id, pf,
                        type_name(type));
        if ((send ? has_src : has_dst) && self != rd->rank)
            return fail(&rd->at, "node %" PRIu64 ": %s: %" PRId64 ": not this file's rank (%d)", id, sf, self,
                        rd->rank);
        if (peer == rd->rank)
            return fail(&rd->at, "node %" PRIu64 ": %s: %" PRId64 ": the node's own rank", id, pf, peer);
        nd.peer = (int32_t)peer;
        nd.tag = tag;
    } else if (nd.kind == STEP_WL_COLL) {
        if (!has_type)
            return fail(&rd->at, "node %" PRIu64 ": comm_type: (missing): a COMM_COLL_NODE needs it", id);
        static const int map[10] = {STEP_WL_ALLREDUCE,
                                    -1,
                                    STEP_WL_ALLGATHER,
                                    -1,
                                    -1,
                                    STEP_WL_BROADCAST,
                                    STEP_WL_ALLTOALL,
                                    STEP_WL_REDUCESCATTER,
                                    -1,
                                    -1};
        static const char *const names[10] = {
            "ALL_REDUCE", "REDUCE",         "ALL_GATHER",           "GATHER", "SCATTER", "BROADCAST",
            "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER"};
        if (map[ctype] < 0)
            return fail(&rd->at,
                        "node %" PRIu64 ": comm_type: %" PRId64 " (%s): not supported (ALL_REDUCE, "
                        "ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL, BROADCAST)",
                        id, ctype, names[ctype]);
        nd.coll = (step_wl_coll_t)map[ctype];
        if (pg_name[0] != '\0' && strcmp(pg_name, "0") != 0) { /* else all ranks (-1) */
            const int64_t len = (int64_t)strlen(pg_name);
            int32_t e;
            int added;
            if (strtab_add(&s->pgs, pg_name, len, str_hash(pg_name, (size_t)len), &e, &added) != TRACE_OK ||
                (added && grow((void **)&s->pg_first, &s->cap_pg_first, (int64_t)e + 1,
                               sizeof *s->pg_first) != TRACE_OK))
                return oom(&rd->at);
            if (added)
                s->pg_first[e] = id; /* the merge resolves the group, in rank order */
            nd.group = e;
        } else
            s->coll_all = 1;
    }
    /* dependencies: data then control, duplicates dropped (first kept) */
    const size_t nd_all = m->n_data_deps + m->n_ctrl_deps;
    if (nd_all > (size_t)INT32_MAX)
        return fail(&rd->at, "node %" PRIu64 ": data_deps: %zu: more dependencies than 2^31-1", id, nd_all);
    if (grow((void **)&s->deps, &s->cap_deps, s->n_deps + (int64_t)nd_all, sizeof *s->deps) != TRACE_OK ||
        grow((void **)&s->nodes, &s->cap_nodes, s->n_nodes + 1, sizeof *s->nodes) != TRACE_OK ||
        grow((void **)&s->n_data, &s->cap_n_data, s->n_nodes + 1, sizeof *s->n_data) != TRACE_OK)
        return oom(&rd->at);
    uint64_t *out = nd_all ? s->deps + s->n_deps : NULL; /* (no array yet when nothing has deps) */
    int32_t kept = 0, kept_data = 0;
    for (size_t k = 0; k < nd_all; k++) {
        const uint64_t d = k < m->n_data_deps ? m->data_deps[k] : m->ctrl_deps[k - m->n_data_deps];
        int dup = 0;
        if (nd_all <= 64) {
            for (int32_t j = 0; j < kept && !dup; j++)
                dup = out[j] == d;
        } else {
            dup = dep_seen(rd, d);
            if (dup < 0)
                return oom(&rd->at);
        }
        if (dup)
            continue;
        out[kept++] = d;
        if (k < m->n_data_deps)
            kept_data = kept;
    }
    if (nd_all > 64)
        dep_seen_clear(rd, out, kept);
    nd.n_deps = kept;
    nd.deps_offset = s->n_deps;
    s->n_deps += kept;
    s->n_data[s->n_nodes] = kept_data;
    s->nodes[s->n_nodes++] = nd;
    return TRACE_OK;
}

/* ---- one file (a decoder) ------------------------------------------------------------------- */

/* A varint at buf[*pos..len): 0, 1 if truncated, 2 if longer than 10 bytes or over 64 bits. */
static int varint_long(const uint8_t *buf, size_t len, size_t *pos, uint64_t *out) {
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (*pos >= len)
            return 1;
        const uint8_t b = buf[(*pos)++];
        if (i == 9 && b > 1)
            return 2;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return 2;
}

static inline int varint(const uint8_t *buf, size_t len, size_t *pos, uint64_t *out) {
    if (*pos < len && buf[*pos] < 0x80) { /* one byte: most tags and lengths */
        *out = buf[(*pos)++];
        return 0;
    }
    return varint_long(buf, len, pos, out);
}

/* The whole file into *buf (grown as needed, kept for the next file): its size, then one read. */
static int slurp(where_t *at, const char *path, uint8_t **buf, size_t *cap, size_t *len) {
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(at->err, at->err_size, "%s: cannot open: %s", path, strerror(errno));
        return TRACE_EIO;
    }
    struct stat st;
    size_t want = fstat(fd, &st) == 0 && st.st_size > 0 ? (size_t)st.st_size + 1 : ((size_t)1 << 16);
    *len = 0;
    for (;;) {
        if (*len + 1 > *cap || want > *cap) { /* room for one byte more than the size: the end seen */
            size_t c = *cap ? *cap : ((size_t)1 << 16);
            while (c < want || c < *len + 1)
                c *= 2;
            uint8_t *b = alloc_realloc(*buf, c);
            if (!b) {
                close(fd);
                return oom(at);
            }
            *buf = b;
            *cap = c;
        }
        const ssize_t got = read(fd, *buf + *len, *cap - *len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            close(fd);
            snprintf(at->err, at->err_size, "%s: cannot read: %s", path, strerror(EIO));
            return TRACE_EIO;
        }
        if (got == 0)
            break;
        *len += (size_t)got;
        if (*len == *cap)
            want = *cap * 2; /* the file grew: read on */
    }
    close(fd);
    return TRACE_OK;
}

/* ---- attributes decoded once ------------------------------------------------------------------ */

/* Most attribute messages repeat byte for byte from node to node (is_cpu_op, comm_type, pg_name,
 * the sizes of a layer's operations in every microbatch): a decoder keeps each distinct one,
 * decoded by protobuf-c, keyed by its bytes, and a Node record is decoded by protobuf-c without its
 * attributes, which are then taken from the cache (decoded on a miss). The record's top-level
 * fields are only framed here (tag, length); anything unexpected (a malformed field, a wire type
 * protobuf-c refuses, an attribute or the rest failing to decode) sends the record through
 * protobuf-c whole, so that it decides, as before, what is valid and what the error is. */
#define ATTR_CACHE_ENTRIES 16384
#define ATTR_CACHE_BYTES ((int64_t)1 << 20)
#define ATTR_CACHE_MAX_LEN 256 /* longer attributes are decoded every time */

typedef struct attr_ent {
    uint64_t hash;
    int key;     /* attr_key of its name */
    int64_t off; /* the message's bytes, in bytes[off .. off + len) */
    int64_t len;
    const ChakraProtoMsg__AttributeProto *attr;
} attr_ent_t;

typedef struct attr_cache {
    attr_ent_t *ent; /* [ATTR_CACHE_ENTRIES] */
    int64_t n;
    int32_t *slot;  /* [2 x ATTR_CACHE_ENTRIES]: entry, -1 empty */
    uint8_t *bytes; /* [ATTR_CACHE_BYTES] */
    int64_t n_bytes;
    arena_t arena; /* the decoded messages */
    ProtobufCAllocator pa;
} attr_cache_t;

static void attr_cache_clear(attr_cache_t *c) {
    memset(c->slot, 0xff, 2 * ATTR_CACHE_ENTRIES * sizeof *c->slot);
    c->n = 0;
    c->n_bytes = 0;
    arena_reset(&c->arena);
}

/* The attribute message b[0..len), decoded: from the cache, else by protobuf-c (into the cache when
 * it has room, else into the record's arena). NULL when protobuf-c refuses it or memory is short. */
static const ChakraProtoMsg__AttributeProto *attr_unpack(dec_t *dc, const uint8_t *b, size_t len, int *key) {
    const ChakraProtoMsg__AttributeProto *a = chakra_proto_msg__attribute_proto__unpack(&dc->pa, len, b);
    if (a)
        *key = attr_key(a->name ? a->name : "");
    return a;
}

/* An attribute message's hash: its length, first and last 8 bytes (where a name's and a value's
 * bytes are; the bytes are compared whole on a hit). */
static uint64_t attr_hash(const uint8_t *b, size_t len) {
    if (len < 8)
        return str_hash((const char *)b, len);
    uint64_t x, y;
    memcpy(&x, b, 8);
    memcpy(&y, b + len - 8, 8);
    uint64_t h = (x ^ 0x9e3779b97f4a7c15ULL) * 0xff51afd7ed558ccdULL;
    h = (h ^ (h >> 32) ^ y ^ (uint64_t)len) * 0xc4ceb9fe1a85ec53ULL;
    h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 32);
}

/* (*key: the attribute's attr_key) */
static const ChakraProtoMsg__AttributeProto *attr_get(dec_t *dc, const uint8_t *b, size_t len, int *key) {
    attr_cache_t *c = dc->cache;
    if (len > ATTR_CACHE_MAX_LEN)
        return attr_unpack(dc, b, len, key);
    const uint64_t h = attr_hash(b, len);
    const uint64_t mask = 2 * ATTR_CACHE_ENTRIES - 1;
    uint64_t k = h & mask;
    for (; c->slot[k] >= 0; k = (k + 1) & mask) {
        const attr_ent_t *e = &c->ent[c->slot[k]];
        if (e->hash == h && e->len == (int64_t)len && bytes_equal(c->bytes + e->off, b, len)) {
            *key = e->key;
            return e->attr;
        }
    }
    if (c->n == ATTR_CACHE_ENTRIES || c->n_bytes + (int64_t)len > ATTR_CACHE_BYTES)
        return attr_unpack(dc, b, len, key); /* full until the next record */
    const ChakraProtoMsg__AttributeProto *a = chakra_proto_msg__attribute_proto__unpack(&c->pa, len, b);
    if (!a)
        return NULL;
    attr_ent_t *e = &c->ent[c->n];
    e->hash = h;
    e->key = *key = attr_key(a->name ? a->name : "");
    e->off = c->n_bytes;
    e->len = (int64_t)len;
    e->attr = a;
    memcpy(c->bytes + c->n_bytes, b, len);
    c->n_bytes += (int64_t)len;
    c->slot[k] = (int32_t)c->n++;
    return a;
}

/* Node record p[0..n) decoded through the attribute cache, or NULL: decode it whole instead. */
static ChakraProtoMsg__Node *node_cached(dec_t *dc, const uint8_t *p, size_t n) {
    if (!dc->cache) {
        attr_cache_t *c = alloc_calloc(1, sizeof *c);
        if (!c)
            return NULL;
        c->ent = alloc_malloc(ATTR_CACHE_ENTRIES * sizeof *c->ent);
        c->slot = alloc_malloc(2 * ATTR_CACHE_ENTRIES * sizeof *c->slot);
        c->bytes = alloc_malloc((size_t)ATTR_CACHE_BYTES);
        c->pa.alloc = arena_alloc;
        c->pa.free = arena_free;
        c->pa.allocator_data = &c->arena;
        dc->cache = c; /* (freed with the decoder, even half built) */
        if (!c->ent || !c->slot || !c->bytes)
            return NULL;
        attr_cache_clear(c);
    }
    attr_cache_t *c = dc->cache;
    if (!c->ent || !c->slot || !c->bytes)
        return NULL;
    if (c->n == ATTR_CACHE_ENTRIES || c->n_bytes > ATTR_CACHE_BYTES - ATTR_CACHE_MAX_LEN || c->arena.oom) {
        attr_cache_clear(c);
        c->arena.oom = 0;
    }
    if (n > dc->cap_scratch) {
        uint8_t *b = alloc_realloc(dc->scratch, n);
        if (!b)
            return NULL;
        dc->scratch = b;
        dc->cap_scratch = n;
    }
    if (n / 2 + 1 > dc->cap_attrs) { /* an attribute takes at least two bytes */
        const ChakraProtoMsg__AttributeProto **a = alloc_realloc(dc->attrs, (n / 2 + 1) * sizeof *a);
        if (a)
            dc->attrs = a;
        uint8_t *k = alloc_realloc(dc->attr_keys, n / 2 + 1);
        if (k)
            dc->attr_keys = k;
        if (!a || !k)
            return NULL;
        dc->cap_attrs = n / 2 + 1;
    }
    arena_reset(&dc->arena);
    size_t i = 0, o = 0, na = 0;
    while (i < n) {
        const size_t start = i;
        uint64_t tag, v;
        if (varint(p, n, &i, &tag) != 0 || tag >> 3 == 0 || tag >> 3 > 536870911)
            return NULL;
        const uint64_t field = tag >> 3;
        switch (tag & 7) {
        case 0:
            if (varint(p, n, &i, &v) != 0)
                return NULL;
            break;
        case 1:
            if (n - i < 8)
                return NULL;
            i += 8;
            break;
        case 5:
            if (n - i < 4)
                return NULL;
            i += 4;
            break;
        case 2: {
            const size_t at_len = i;
            if (varint(p, n, &i, &v) != 0 || v > n - i)
                return NULL;
            /* attr, framed as protobuf-c frames it (a one-byte tag, a length of at most 5 bytes
             * below 2^31): anything else is left to protobuf-c */
            if (field == 10 && at_len - start == 1 && i - at_len <= 5 && v <= INT32_MAX) {
                int key = A_OTHER;
                const ChakraProtoMsg__AttributeProto *a = attr_get(dc, p + i, (size_t)v, &key);
                if (!a)
                    return NULL;
                dc->attr_keys[na] = (uint8_t)key;
                dc->attrs[na++] = a;
                i += (size_t)v;
                continue;
            }
            i += (size_t)v;
            break;
        }
        default:
            return NULL;
        }
        if (field == 10)
            return NULL; /* an attr that is not length-delimited: protobuf-c's call */
        memcpy(dc->scratch + o, p + start, i - start);
        o += i - start;
    }
    ChakraProtoMsg__Node *m = chakra_proto_msg__node__unpack(&dc->pa, o, dc->scratch);
    if (!m || m->n_attr != 0)
        return NULL;
    m->n_attr = na;
    m->attr = (ChakraProtoMsg__AttributeProto **)dc->attrs;
    return m;
}

/* The records of one rank's file into dc->s: record 0 (GlobalMetadata) is framed and left to the
 * merge, every other record decoded and mapped. */
static int read_rank(dec_t *dc, const uint8_t *buf, size_t len) {
    size_t pos = 0;
    int64_t record = 0;
    if (len == 0)
        return fail(&dc->at, "record 0 (byte 0): GlobalMetadata: (missing): empty file");
    while (pos < len) {
        const size_t at = pos;
        uint64_t n;
        const int v = varint(buf, len, &pos, &n);
        if (v == 1)
            return fail(&dc->at,
                        "record %" PRId64 " (byte %zu): length: (truncated varint): file ends inside it",
                        record, at);
        if (v == 2)
            return fail(&dc->at, "record %" PRId64 " (byte %zu): length: (over 10 bytes): overflows 64 bits",
                        record, at);
        if (n > UINT32_MAX)
            return fail(&dc->at,
                        "record %" PRId64 " (byte %zu): length: %" PRIu64 ": overflows (over 2^32-1 bytes)",
                        record, at, n);
        if (n > len - pos)
            return fail(&dc->at,
                        "record %" PRId64 " (byte %zu): length: %" PRIu64 ": truncated (%zu bytes left)",
                        record, at, n, len - pos);
        if (record == 0) {
            dc->s->has_meta = 1;
            dc->s->meta_at = pos;
            dc->s->meta_len = (size_t)n;
        } else {
            ChakraProtoMsg__Node *m = node_cached(dc, buf + pos, (size_t)n);
            dc->keys_valid = m != NULL;
            if (!m) { /* protobuf-c on the whole record: it decides */
                arena_reset(&dc->arena);
                dc->arena.oom = 0;
                m = chakra_proto_msg__node__unpack(&dc->pa, (size_t)n, buf + pos);
            }
            if (!m)
                return dc->arena.oom ? oom(&dc->at)
                                     : fail(&dc->at,
                                            "record %" PRId64 " (byte %zu): Node: %" PRIu64
                                            " bytes: not a valid Node message",
                                            record, at, n);
            const int rc = map_node(dc, m);
            if (rc != TRACE_OK)
                return rc;
        }
        pos += (size_t)n;
        record++;
    }
    return TRACE_OK;
}

/* Rank r's file at path into slot s: s->rc and s->err (the rank's first error, the metadata's
 * aside), nodes, dependencies, names and groups local to the rank, its dependencies checked. */
static void decode_rank(dec_t *dc, slot_t *s, int32_t r, const char *path) {
    dc->s = s;
    dc->rank = r;
    dc->at.err = s->err;
    dc->at.file = path;
    s->has_meta = 0;
    s->coll_all = 0;
    s->n_nodes = s->n_deps = 0;
    strtab_reset(&s->names);
    strtab_reset(&s->pgs);
    int rc = slurp(&dc->at, path, &s->buf, &s->buf_cap, &s->buf_len);
    if (rc == TRACE_OK)
        rc = read_rank(dc, s->buf, s->buf_len);
    if (rc == TRACE_OK) { /* the rank alone, as a workload of one rank */
        step_workload_t one;
        memset(&one, 0, sizeof one);
        int64_t off[2] = {0, s->n_nodes};
        one.n_ranks = 1;
        one.rank_nodes_offset = off;
        one.nodes = s->nodes;
        one.deps = s->deps;
        rc = chakra_check_rank_deps(&one, 0, path, s->n_data, dc->at.err, dc->at.err_size);
    }
    s->rc = rc;
}

static void dec_init(dec_t *dc, int32_t n_ranks, size_t err_size) {
    memset(dc, 0, sizeof *dc);
    dc->n_ranks = n_ranks;
    dc->at.err_size = err_size;
    dc->pa.alloc = arena_alloc;
    dc->pa.free = arena_free;
    dc->pa.allocator_data = &dc->arena;
}

static void dec_destroy(dec_t *dc) {
    free(dc->seen_keys);
    free(dc->seen_used);
    arena_destroy(&dc->arena);
    free(dc->scratch);
    free(dc->attrs);
    free(dc->attr_keys);
    if (dc->cache) {
        free(dc->cache->slot);
        free(dc->cache->ent);
        free(dc->cache->bytes);
        arena_destroy(&dc->cache->arena);
        free(dc->cache);
    }
}

static void slot_destroy(slot_t *s) {
    free(s->err);
    free(s->buf);
    free(s->nodes);
    free(s->deps);
    free(s->n_data);
    strtab_free(&s->names);
    strtab_free(&s->pgs);
    free(s->pg_first);
}

/* ---- the files of a workload ----------------------------------------------------------------- */

typedef struct rank_file {
    int32_t rank;
    char *path;
} rank_file_t;

static int cmp_rank(const void *a, const void *b) {
    const int32_t x = ((const rank_file_t *)a)->rank, y = ((const rank_file_t *)b)->rank;
    return (x > y) - (x < y);
}

/* If s is "<digits>.et" (no leading zero unless "0", below 2^31-1), its number; else -1. */
static int64_t rank_suffix(const char *s) {
    const size_t n = strlen(s);
    if (n < 4 || strcmp(s + n - 3, ".et") != 0)
        return -1;
    const size_t digits = n - 3;
    if (digits > 10 || (digits > 1 && s[0] == '0'))
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < digits; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v < INT32_MAX ? v : -1;
}

static void free_files(rank_file_t *f, int32_t n) {
    for (int32_t i = 0; i < n; i++)
        free(f[i].path);
    free(f);
}

/* The rank files: in directory dir, the entries NAME.<rank>.et; name NULL means any one NAME. */
static int list_files(reader_t *rd, const char *dir, const char *name, const char *shown, rank_file_t **out,
                      int32_t *n_out) {
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(rd->at.err, rd->at.err_size, "%s: cannot open: %s", shown, strerror(errno));
        return errno == ENOENT || errno == ENOTDIR ? TRACE_EINVAL : TRACE_EIO;
    }
    rank_file_t *files = NULL;
    int64_t cap = 0;
    int32_t n = 0;
    char *first = NULL; /* the NAME of the first file found (directory mode) */
    int rc = TRACE_OK;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *s = e->d_name;
        const size_t sl = strlen(s);
        size_t nl;
        if (name) {
            nl = strlen(name);
            if (sl <= nl + 1 || strncmp(s, name, nl) != 0 || s[nl] != '.')
                continue;
        } else {
            const char *dot = NULL; /* the dot before the rank: the last dot before ".et" */
            if (sl < 5 || strcmp(s + sl - 3, ".et") != 0)
                continue;
            for (size_t i = sl - 4; i > 0 && !dot; i--)
                if (s[i] == '.')
                    dot = s + i;
            if (!dot)
                continue;
            nl = (size_t)(dot - s);
        }
        const int64_t r = rank_suffix(s + nl + 1);
        if (r < 0)
            continue;
        if (!name) {
            if (!first) {
                if (!(first = alloc_strdup(s))) {
                    rc = oom(&rd->at);
                    break;
                }
                first[nl] = '\0';
            } else if (strlen(first) != nl || strncmp(first, s, nl) != 0) {
                snprintf(rd->at.err, rd->at.err_size,
                         "%s: files: %s.*.et and %.*s.*.et: two workloads in one directory", shown, first,
                         (int)nl, s);
                rc = TRACE_EINVAL;
                break;
            }
        }
        if (n == INT32_MAX || grow((void **)&files, &cap, (int64_t)n + 1, sizeof *files) != TRACE_OK) {
            rc = oom(&rd->at);
            break;
        }
        const size_t pl = strlen(dir) + 1 + sl + 1;
        files[n].rank = (int32_t)r;
        if (!(files[n].path = alloc_malloc(pl))) {
            rc = oom(&rd->at);
            break;
        }
        snprintf(files[n].path, pl, "%s/%s", dir, s);
        n++;
    }
    closedir(d);
    if (rc == TRACE_OK && n == 0) {
        if (name)
            snprintf(rd->at.err, rd->at.err_size, "%s: no file %s.0.et (nor a directory of that name)", shown,
                     shown);
        else
            snprintf(rd->at.err, rd->at.err_size, "%s: no file NAME.<rank>.et in this directory", shown);
        rc = TRACE_EINVAL;
    }
    if (rc == TRACE_OK) {
        qsort(files, (size_t)n, sizeof *files, cmp_rank);
        for (int32_t i = 0; i < n; i++)
            if (files[i].rank != i) {
                const char *nm = name ? name : first;
                snprintf(rd->at.err, rd->at.err_size,
                         "%s/%s.%d.et: rank file: (missing): ranks 0..%d expected, rank %d found", dir, nm, i,
                         files[n - 1].rank, files[n - 1].rank);
                rc = TRACE_EINVAL;
                break;
            }
    }
    free(first);
    if (rc != TRACE_OK) {
        free_files(files, n);
        return rc;
    }
    *out = files;
    *n_out = n;
    return TRACE_OK;
}

static int resolve_files(reader_t *rd, const char *path, rank_file_t **out, int32_t *n) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return list_files(rd, path, NULL, path, out, n);
    /* PREFIX: its directory and the base name */
    const char *slash = strrchr(path, '/');
    char *dir = alloc_strdup(slash ? path : ".");
    if (!dir)
        return oom(&rd->at);
    if (slash)
        dir[slash == path ? 1 : slash - path] = '\0';
    const char *base = slash ? slash + 1 : path;
    int rc;
    if (base[0] == '\0') {
        snprintf(rd->at.err, rd->at.err_size, "%s: no such directory", path);
        rc = TRACE_EINVAL;
    } else
        rc = list_files(rd, dir, base, path, out, n);
    free(dir);
    return rc;
}

/* ---- the merge: ranks into the workload, in rank order --------------------------------------- */

/* The workload's index of a rank's name s[0..len) (hash h), added at the end of its table when new:
 * names are numbered in order of first use over the ranks in rank order, as
 * step_workload_name_add numbers them (the table has the same layout; its index is the merge's). */
static int global_name(reader_t *rd, const char *s, int64_t len, uint64_t h, int32_t *out) {
    step_workload_t *w = rd->w;
    if (w->n_names == 0) { /* name 0: "" */
        int64_t c1 = 0, c2 = 0;
        if (grow((void **)&w->name_offset, &c1, 64, sizeof *w->name_offset) != TRACE_OK ||
            grow((void **)&rd->name_hash, &c2, 64, sizeof *rd->name_hash) != TRACE_OK ||
            grow((void **)&w->name_chars, &rd->cap_chars, 4096, 1) != TRACE_OK)
            return TRACE_ENOMEM;
        rd->cap_names = 64;
        w->name_chars[0] = '\0';
        w->name_offset[0] = 0;
        rd->name_hash[0] = 0;
        rd->n_chars = 1;
        w->n_names = 1;
    }
    if (2 * ((int64_t)w->n_names + 1) > rd->name_slots) {
        const int64_t cap = rd->name_slots ? 2 * rd->name_slots : 1024;
        int32_t *slot = alloc_malloc((size_t)cap * sizeof *slot);
        if (!slot)
            return TRACE_ENOMEM;
        memset(slot, 0xff, (size_t)cap * sizeof *slot);
        for (int32_t i = 1; i < w->n_names; i++) {
            uint64_t k = rd->name_hash[i] & (uint64_t)(cap - 1);
            while (slot[k] >= 0)
                k = (k + 1) & (uint64_t)(cap - 1);
            slot[k] = i;
        }
        free(rd->name_slot);
        rd->name_slot = slot;
        rd->name_slots = cap;
    }
    const uint64_t mask = (uint64_t)rd->name_slots - 1;
    uint64_t k = h & mask;
    for (; rd->name_slot[k] >= 0; k = (k + 1) & mask) {
        const int32_t i = rd->name_slot[k];
        const char *p = w->name_chars + w->name_offset[i];
        if (rd->name_hash[i] == h && bytes_equal(p, s, (size_t)len) && p[len] == '\0') {
            *out = i;
            return TRACE_OK;
        }
    }
    if (w->n_names == INT32_MAX)
        return TRACE_ENOMEM;
    if (w->n_names >= rd->cap_names) {
        int64_t c1 = rd->cap_names, c2 = rd->cap_names;
        if (grow((void **)&w->name_offset, &c1, (int64_t)w->n_names + 1, sizeof *w->name_offset) !=
                TRACE_OK ||
            grow((void **)&rd->name_hash, &c2, (int64_t)w->n_names + 1, sizeof *rd->name_hash) != TRACE_OK)
            return TRACE_ENOMEM;
        rd->cap_names = c1 < c2 ? c1 : c2;
    }
    if (grow((void **)&w->name_chars, &rd->cap_chars, rd->n_chars + len + 1, 1) != TRACE_OK)
        return TRACE_ENOMEM;
    memcpy(w->name_chars + rd->n_chars, s, (size_t)len);
    w->name_chars[rd->n_chars + len] = '\0';
    w->name_offset[w->n_names] = rd->n_chars;
    rd->name_hash[w->n_names] = h;
    rd->n_chars += len + 1;
    rd->name_slot[k] = w->n_names;
    *out = w->n_names++;
    return TRACE_OK;
}

/* Rank r's metadata record b[0..n): its process group definitions, applied in rank order (they are
 * checked against the earlier files'). The same bytes as the last record applied change nothing
 * (every definition is found, equal) and are skipped. */
static int merge_meta(reader_t *rd, const uint8_t *b, size_t n) {
    if (rd->meta_ok_len == (int64_t)n && memcmp(rd->meta_ok, b, n) == 0)
        return TRACE_OK;
    arena_reset(&rd->arena);
    ChakraProtoMsg__GlobalMetadata *g = chakra_proto_msg__global_metadata__unpack(&rd->pa, n, b);
    if (!g)
        return rd->arena.oom
                   ? oom(&rd->at)
                   : fail(&rd->at,
                          "record 0 (byte 0): GlobalMetadata: %zu bytes: not a valid GlobalMetadata "
                          "message",
                          n);
    for (size_t k = 0; k < g->n_attr; k++) {
        const ChakraProtoMsg__AttributeProto *a = g->attr[k];
        if (a->name && strncmp(a->name, CHAKRA_ATTR_PG_RANKS, strlen(CHAKRA_ATTR_PG_RANKS)) == 0) {
            const int rc = meta_group(rd, a);
            if (rc != TRACE_OK)
                return rc;
        }
    }
    for (int32_t k = 0; rd->marked && k < rd->n_groups; k++)
        if (rd->groups[k].seen_rank != rd->rank)
            return fail(&rd->at,
                        "metadata: " CHAKRA_ATTR_PG_RANKS "%.40s: (missing): the set is marked complete and "
                        "rank 0's file defines this group",
                        rd->groups[k].pg_name);
    rd->meta_ok_len = -1; /* remembered only when the copy succeeds (else nothing is skipped) */
    if (grow((void **)&rd->meta_ok, &rd->meta_ok_cap, (int64_t)n + 1, 1) == TRACE_OK) {
        memcpy(rd->meta_ok, b, n);
        rd->meta_ok_len = (int64_t)n;
    }
    return TRACE_OK;
}

/* ---- the streaming reader: the shape at open, then one rank at a time -------------------------- */

/* Internal size of an error line (copied, truncated, into the caller's): a path of PATH_MAX bytes and
 * the longest message fit, so the caller's line is the prefix trace_chakra_read always gave. */
#define ERR_LINE 8192

/* Ranks are claimed in order by the decoders; rank r goes to slot r % n_slots once the consumer has
 * taken rank r - n_slots from it, so at most n_slots ranks are held beside what the consumer keeps. */
typedef struct pool {
    pthread_mutex_t mu;
    pthread_cond_t done; /* a slot was decoded (the consumer waits) */
    pthread_cond_t free; /* a slot was freed, or stop (decoders wait) */
    slot_t *slots;
    int32_t n_slots, next, n_ranks;
    int stop;
    const rank_file_t *files;
} pool_t;

typedef struct worker {
    pool_t *pool;
    dec_t dc;
    pthread_t th;
} worker_t;

static void *worker_main(void *arg) {
    worker_t *wk = arg;
    pool_t *p = wk->pool;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->next < p->n_ranks && p->slots[p->next % p->n_slots].rank >= 0)
            pthread_cond_wait(&p->free, &p->mu);
        if (p->stop || p->next >= p->n_ranks)
            break;
        const int32_t r = p->next++;
        slot_t *s = &p->slots[r % p->n_slots];
        s->rank = r;
        s->done = 0;
        pthread_mutex_unlock(&p->mu);
        decode_rank(&wk->dc, s, r, p->files[r].path);
        pthread_mutex_lock(&p->mu);
        s->done = 1;
        pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

struct trace_chakra_reader {
    reader_t rd; /* the groups (rd.groups), the metadata merge */
    rank_file_t *files;
    int32_t n, next; /* ranks, the next rank _rank gives */
    int threads;     /* decoding threads (1: on the caller's thread) */
    int failed;      /* an error was returned: only _close */
    int coll_all;    /* some collective of every rank */
    step_workload_t shape;
    uint8_t *used; /* [n_groups + 1] */
    /* the decoders of one pass over the ranks */
    pool_t p;
    slot_t *slots;
    worker_t *wk;
    int32_t n_slots, n_workers, started;
    dec_t dc; /* the caller's thread's decoder (started == 0) */
    int on;   /* a pass is under way */
    int32_t *pg_map;
    int64_t cap_pg_map;
    char err[ERR_LINE];
};

static void pass_stop(trace_chakra_reader_t *x) {
    if (!x->on)
        return;
    if (x->started > 0) {
        pthread_mutex_lock(&x->p.mu);
        x->p.stop = 1; /* (after an error or a close before the end: ranks being decoded are dropped) */
        pthread_cond_broadcast(&x->p.free);
        pthread_mutex_unlock(&x->p.mu);
        for (int32_t i = 0; i < x->started; i++)
            pthread_join(x->wk[i].th, NULL);
        pthread_cond_destroy(&x->p.free);
        pthread_cond_destroy(&x->p.done);
        pthread_mutex_destroy(&x->p.mu);
    }
    for (int32_t i = 0; i < x->n_workers; i++)
        dec_destroy(&x->wk[i].dc);
    if (x->started == 0)
        dec_destroy(&x->dc);
    for (int32_t i = 0; x->slots && i < x->n_slots; i++)
        slot_destroy(&x->slots[i]);
    free(x->slots);
    free(x->wk);
    x->slots = NULL;
    x->wk = NULL;
    x->started = x->n_workers = x->n_slots = 0;
    x->on = 0;
}

/* A pass over every rank in order: decoders started (threads > 1 and more than one rank), else
 * ranks are decoded on the caller's thread as they are asked for. */
static int pass_start(trace_chakra_reader_t *x) {
    const int32_t n = x->n;
    int32_t n_workers = x->threads > 1 ? (x->threads < n ? x->threads : n) : 1;
    if (n_workers < 2)
        n_workers = 0;
    x->n_workers = n_workers;
    x->n_slots = n_workers ? 3 * n_workers : 1;
    x->slots = alloc_calloc((size_t)x->n_slots, sizeof *x->slots);
    x->wk = n_workers ? alloc_calloc((size_t)n_workers, sizeof *x->wk) : NULL;
    x->on = 1;
    x->started = 0;
    int rc = x->slots && (x->wk || !n_workers) ? TRACE_OK : TRACE_ENOMEM;
    for (int32_t i = 0; rc == TRACE_OK && i < x->n_slots; i++) {
        x->slots[i].rank = -1;
        if (!(x->slots[i].err = alloc_calloc(ERR_LINE, 1)))
            rc = TRACE_ENOMEM;
    }
    if (rc != TRACE_OK) {
        x->n_workers = 0; /* (no decoder initialised) */
        dec_init(&x->dc, n, ERR_LINE);
        pass_stop(x);
        return oom(&x->rd.at);
    }
    memset(&x->p, 0, sizeof x->p);
    x->p.slots = x->slots;
    x->p.n_slots = x->n_slots;
    x->p.n_ranks = n;
    x->p.files = x->files;
    for (int32_t i = 0; i < n_workers; i++)
        dec_init(&x->wk[i].dc, n, ERR_LINE);
    if (n_workers && pthread_mutex_init(&x->p.mu, NULL) == 0) {
        if (pthread_cond_init(&x->p.done, NULL) == 0) {
            if (pthread_cond_init(&x->p.free, NULL) == 0) {
                for (; x->started < n_workers; x->started++) {
                    x->wk[x->started].pool = &x->p;
                    if (pthread_create(&x->wk[x->started].th, NULL, worker_main, &x->wk[x->started]) != 0)
                        break;
                }
                if (x->started == 0)
                    pthread_cond_destroy(&x->p.free);
            }
            if (x->started == 0)
                pthread_cond_destroy(&x->p.done);
        }
        if (x->started == 0)
            pthread_mutex_destroy(&x->p.mu);
    }
    if (x->started == 0) /* no thread: the caller's thread decodes each rank (into slot 0) */
        dec_init(&x->dc, n, ERR_LINE);
    return TRACE_OK;
}

/* Rank r of the pass, decoded (its slot); pass_give back once used. */
static slot_t *pass_take(trace_chakra_reader_t *x, int32_t r) {
    if (x->started == 0) {
        decode_rank(&x->dc, &x->slots[0], r, x->files[r].path);
        return &x->slots[0];
    }
    slot_t *s = &x->slots[r % x->n_slots];
    pthread_mutex_lock(&x->p.mu);
    while (s->rank != r || !s->done)
        pthread_cond_wait(&x->p.done, &x->p.mu);
    pthread_mutex_unlock(&x->p.mu);
    return s;
}

static void pass_give(trace_chakra_reader_t *x, slot_t *s) {
    if (x->started == 0)
        return;
    pthread_mutex_lock(&x->p.mu);
    s->rank = -1;
    pthread_cond_broadcast(&x->p.free);
    pthread_mutex_unlock(&x->p.mu);
}

/* The rank's metadata, then its first error (as the whole read meets them, in this order). */
static int rank_head(reader_t *rd, const slot_t *s, int32_t r, const char *path) {
    rd->at.file = path;
    rd->rank = r;
    if (s->has_meta) {
        const int rc = merge_meta(rd, s->buf + s->meta_at, s->meta_len);
        if (rc != TRACE_OK)
            return rc;
    }
    if (s->rc != TRACE_OK) {
        if (rd->at.err_size > 0)
            snprintf(rd->at.err, rd->at.err_size, "%s", s->err);
        return s->rc;
    }
    return TRACE_OK;
}

/* The first pass of a set not marked complete: rank r's metadata and groups (no nodes kept). */
static int groups_of_rank(trace_chakra_reader_t *x, const slot_t *s, int32_t r) {
    reader_t *rd = &x->rd;
    int rc = rank_head(rd, s, r, x->files[r].path);
    for (int64_t e = 0; rc == TRACE_OK && e < s->pgs.n; e++) { /* in order of first use */
        int32_t g;
        rc = node_group(rd, s->pg_first[e], s->pgs.chars + s->pgs.off[e], &g);
        if (rc == TRACE_OK)
            rd->groups[g].used = 1;
    }
    if (s->coll_all)
        x->coll_all = 1;
    return rc;
}

/* Every use of an explicit group by a rank outside it (the first, in group order, then rank order). */
static int check_members(reader_t *rd, const rank_file_t *files) {
    for (int32_t g = 0; g < rd->n_groups; g++) {
        const group_acc_t *ga = &rd->groups[g];
        for (int32_t i = 0; i < ga->n_users && ga->explicit_ranks; i++) {
            int member = 0;
            for (int32_t j = 0; j < ga->n_ranks && !member; j++)
                member = ga->ranks[j] == ga->users[i];
            if (!member) {
                rd->at.file = files[ga->users[i]].path;
                return fail(&rd->at,
                            "node %" PRIu64 ": pg_name: \"%.40s\": rank %d is not in this process group",
                            ga->user_node[i], ga->pg_name, ga->users[i]);
            }
        }
    }
    return TRACE_OK;
}

/* The shape (the groups as the workload lists them) and the used flags, from rd.groups. */
static int build_shape(trace_chakra_reader_t *x) {
    reader_t *rd = &x->rd;
    step_workload_t *w = &x->shape;
    w->n_ranks = x->n;
    x->used = alloc_calloc((size_t)rd->n_groups + 1, 1);
    if (!x->used)
        return oom(&rd->at);
    for (int32_t g = 0; g < rd->n_groups; g++)
        x->used[g] = rd->marked ? 1 : (uint8_t)rd->groups[g].used;
    x->used[rd->n_groups] = (uint8_t)x->coll_all;
    if (rd->n_groups == 0)
        return TRACE_OK;
    int64_t total = 0;
    for (int32_t g = 0; g < rd->n_groups; g++)
        total += rd->groups[g].n_ranks;
    w->groups = alloc_calloc((size_t)rd->n_groups, sizeof *w->groups);
    w->group_ranks = alloc_malloc((size_t)(total > 0 ? total : 1) * sizeof *w->group_ranks);
    if (!w->groups || !w->group_ranks)
        return oom(&rd->at);
    int64_t off = 0;
    for (int32_t g = 0; g < rd->n_groups; g++) {
        const group_acc_t *ga = &rd->groups[g];
        snprintf(w->groups[g].name, sizeof w->groups[g].name, "%s", ga->display);
        w->groups[g].n_ranks = ga->n_ranks;
        w->groups[g].ranks_offset = off;
        if (ga->n_ranks > 0)
            memcpy(w->group_ranks + off, ga->ranks, (size_t)ga->n_ranks * sizeof *ga->ranks);
        off += ga->n_ranks;
    }
    w->n_groups = rd->n_groups;
    return TRACE_OK;
}

/* Whether rank 0's file begins with a GlobalMetadata record that marks the set complete. Anything
 * unreadable is "not marked": the first pass then meets and reports it as the whole read does. */
static int marked_set(trace_chakra_reader_t *x, uint8_t **buf, size_t *cap, size_t *meta_at,
                      size_t *meta_len) {
    reader_t *rd = &x->rd;
    char scratch[ERR_LINE];
    where_t at = {scratch, sizeof scratch, x->files[0].path};
    size_t len = 0, pos = 0;
    uint64_t n;
    if (slurp(&at, x->files[0].path, buf, cap, &len) != TRACE_OK || varint(*buf, len, &pos, &n) != 0 ||
        n > len - pos)
        return 0;
    arena_reset(&rd->arena);
    ChakraProtoMsg__GlobalMetadata *g =
        chakra_proto_msg__global_metadata__unpack(&rd->pa, (size_t)n, *buf + pos);
    if (!g)
        return 0;
    *meta_at = pos;
    *meta_len = (size_t)n;
    for (size_t k = 0; k < g->n_attr; k++) {
        const ChakraProtoMsg__AttributeProto *a = g->attr[k];
        if (a->name && strcmp(a->name, CHAKRA_ATTR_GROUPS_COMPLETE) == 0 &&
            a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL && a->bool_val)
            return 1;
    }
    return 0;
}

static void reader_free(trace_chakra_reader_t *x) {
    pass_stop(x);
    reader_t *rd = &x->rd;
    free(rd->meta_ok);
    for (int32_t g = 0; g < rd->n_groups; g++) {
        free(rd->groups[g].pg_name);
        free(rd->groups[g].ranks);
        free(rd->groups[g].users);
        free(rd->groups[g].user_node);
    }
    free(rd->groups);
    free(rd->group_slot);
    arena_destroy(&rd->arena);
    free_files(x->files, x->n);
    step_workload_free(&x->shape);
    free(x->used);
    free(x->pg_map);
    free(x);
}

/* Copy the reader's error line (x->err) to the caller's, one line. */
static int give_err(int rc, const char *line, char *err, size_t err_size) {
    if (err && err_size > 0) {
        snprintf(err, err_size, "%s", line);
        chakra_one_line(err, err_size);
    }
    return rc;
}

int chakra_reader_open_threads(const char *path, int threads, trace_chakra_reader_t **out, char *err,
                               size_t err_size) {
    *out = NULL;
    trace_chakra_reader_t *x = alloc_calloc(1, sizeof *x);
    if (!x)
        return give_err(TRACE_ENOMEM, "out of memory", err, err_size);
    reader_t *rd = &x->rd;
    rd->at.err = x->err;
    rd->at.err_size = sizeof x->err;
    rd->at.file = "";
    rd->last_group = -1;
    rd->meta_ok_len = -1;
    rd->pa.alloc = arena_alloc;
    rd->pa.free = arena_free;
    rd->pa.allocator_data = &rd->arena;
    int rc = resolve_files(rd, path ? path : "", &x->files, &x->n);
    rd->n_ranks = x->n;
    if (rc == TRACE_OK && threads <= 0) { /* automatic: threads only for sets worth them */
        threads = chakra_default_threads();
        int64_t bytes = 0;
        struct stat st;
        for (int32_t r = 0; r < x->n && threads > 1 && bytes < CHAKRA_THREADS_MIN_BYTES; r++)
            if (stat(x->files[r].path, &st) == 0)
                bytes += (int64_t)st.st_size;
        if (bytes < CHAKRA_THREADS_MIN_BYTES)
            threads = 1;
    }
    x->threads = threads;
    if (rc == TRACE_OK) {
        uint8_t *buf = NULL;
        size_t cap = 0;
        size_t meta_at = 0, meta_len = 0;
        rd->marked = marked_set(x, &buf, &cap, &meta_at, &meta_len);
        if (rd->marked) { /* rank 0's definitions are the groups */
            rd->at.file = x->files[0].path;
            rd->rank = 0;
            rc = merge_meta(rd, buf + meta_at, meta_len);
        }
        free(buf);
    }
    if (rc == TRACE_OK && !rd->marked) { /* a first pass: every rank's groups, then their members */
        rc = pass_start(x);
        for (int32_t r = 0; rc == TRACE_OK && r < x->n; r++) {
            slot_t *s = pass_take(x, r);
            rc = groups_of_rank(x, s, r);
            pass_give(x, s);
        }
        pass_stop(x);
        if (rc == TRACE_OK)
            rc = check_members(rd, x->files);
        rd->meta_ok_len = -1; /* (the second pass applies no metadata) */
    }
    if (rc == TRACE_OK)
        rc = build_shape(x);
    if (rc == TRACE_OK)
        rc = pass_start(x);
    if (rc != TRACE_OK) {
        give_err(rc, x->err, err, err_size);
        reader_free(x);
        return rc;
    }
    *out = x;
    return TRACE_OK;
}

int trace_chakra_reader_open(const char *path, trace_chakra_reader_t **out, char *err, size_t err_size) {
    return chakra_reader_open_threads(path, 0, out, err, err_size);
}

const step_workload_t *trace_chakra_reader_shape(const trace_chakra_reader_t *x) {
    return &x->shape;
}

const uint8_t *trace_chakra_reader_group_used(const trace_chakra_reader_t *x) {
    return x->used;
}

/* Rank r (decoded into s) as out: its metadata and error first, its groups resolved against the
 * shape's, then its nodes, dependencies and names copied. */
static int rank_out(trace_chakra_reader_t *x, const slot_t *s, int32_t r, step_workload_t *out) {
    reader_t *rd = &x->rd;
    int rc;
    if (rd->marked) { /* a marked set: every rank's metadata is checked against rank 0's */
        if ((rc = rank_head(rd, s, r, x->files[r].path)) != TRACE_OK)
            return rc;
    } else {
        rd->at.file = x->files[r].path;
        rd->rank = r;
        if (s->rc != TRACE_OK) { /* (the first pass met no error: the file changed since) */
            snprintf(rd->at.err, rd->at.err_size, "%s", s->err);
            return s->rc;
        }
    }
    if (grow((void **)&x->pg_map, &x->cap_pg_map, s->pgs.n + 1, sizeof *x->pg_map) != TRACE_OK)
        return oom(&rd->at);
    int bad = s->coll_all && rd->marked;
    for (int64_t e = 0; e < s->pgs.n; e++) {
        const char *name = s->pgs.chars + s->pgs.off[e];
        int32_t g = group_find(rd, name);
        if (g >= 0 && rd->marked && (rc = node_group(rd, s->pg_first[e], name, &g)) != TRACE_OK)
            return rc; /* (records the rank as a user, for the membership check at the end) */
        if (g < 0 && !rd->marked)
            return fail(&rd->at,
                        "node %" PRIu64 ": pg_name: \"%.40s\": not in the file when the set was opened",
                        s->pg_first[e], name);
        x->pg_map[e] = g;
        bad |= g < 0;
    }
    for (int64_t i = 0; bad && i < s->n_nodes; i++) { /* the first collective that breaks the mark */
        const step_wl_node_t *nd = &s->nodes[i];
        if (nd->kind != STEP_WL_COLL)
            continue;
        if (nd->group < 0)
            return fail(&rd->at,
                        "node %" PRIu64 ": pg_name: (every rank): the set is marked complete but this "
                        "collective uses every rank",
                        nd->id);
        if (x->pg_map[nd->group] < 0)
            return fail(&rd->at,
                        "node %" PRIu64 ": pg_name: \"%.40s\": the set is marked complete but this group is "
                        "not defined",
                        nd->id, s->pgs.chars + s->pgs.off[nd->group]);
    }
    out->n_ranks = x->n;
    out->rank_nodes_offset = alloc_calloc((size_t)x->n + 1, sizeof *out->rank_nodes_offset);
    out->nodes = alloc_malloc((size_t)(s->n_nodes ? s->n_nodes : 1) * sizeof *out->nodes);
    out->deps = alloc_malloc((size_t)(s->n_deps ? s->n_deps : 1) * sizeof *out->deps);
    out->name_offset = alloc_malloc((size_t)(s->names.n + 1) * sizeof *out->name_offset);
    out->name_chars = alloc_malloc((size_t)s->names.n_chars + 1);
    if (!out->rank_nodes_offset || !out->nodes || !out->deps || !out->name_offset || !out->name_chars)
        return oom(&rd->at);
    for (int32_t k = r + 1; k <= x->n; k++)
        out->rank_nodes_offset[k] = s->n_nodes;
    for (int64_t i = 0; i < s->n_nodes; i++) {
        step_wl_node_t nd = s->nodes[i];
        if (nd.group >= 0)
            nd.group = x->pg_map[nd.group];
        out->nodes[i] = nd;
    }
    if (s->n_deps > 0)
        memcpy(out->deps, s->deps, (size_t)s->n_deps * sizeof *s->deps);
    out->name_chars[0] = '\0'; /* name 0: "", then the rank's names in order of first use */
    out->name_offset[0] = 0;
    if (s->names.n_chars > 0)
        memcpy(out->name_chars + 1, s->names.chars, (size_t)s->names.n_chars);
    for (int64_t e = 0; e < s->names.n; e++)
        out->name_offset[e + 1] = s->names.off[e] + 1;
    out->n_names = (int32_t)s->names.n + 1;
    return TRACE_OK;
}

/* After the last rank of a marked set: every use by a member, every group used. */
static int marked_end(trace_chakra_reader_t *x) {
    reader_t *rd = &x->rd;
    int rc = check_members(rd, x->files);
    for (int32_t g = 0; rc == TRACE_OK && g < rd->n_groups; g++)
        if (rd->groups[g].n_users == 0) {
            rd->at.file = x->files[0].path;
            rc = fail(&rd->at,
                      "metadata: " CHAKRA_ATTR_PG_RANKS "%.40s: (unused): the set is marked complete but no "
                      "collective uses this group",
                      rd->groups[g].pg_name);
        }
    return rc;
}

int trace_chakra_reader_rank(trace_chakra_reader_t *x, int32_t r, step_workload_t *out, char *err,
                             size_t err_size) {
    memset(out, 0, sizeof *out);
    if (x->failed)
        return give_err(TRACE_EINVAL, "reader: an earlier error ended the read (only close is allowed)", err,
                        err_size);
    if (r != x->next || r >= x->n) {
        char line[160];
        if (x->next < x->n)
            snprintf(line, sizeof line, "reader: rank %d: out of order (the next rank is %d of 0..%d)", r,
                     x->next, x->n - 1);
        else
            snprintf(line, sizeof line, "reader: rank %d: every rank (0..%d) was given", r, x->n - 1);
        x->failed = 1;
        return give_err(TRACE_EINVAL, line, err, err_size);
    }
    slot_t *s = pass_take(x, r);
    int rc = rank_out(x, s, r, out);
    pass_give(x, s);
    x->next++;
    if (rc == TRACE_OK && x->next == x->n) {
        pass_stop(x);
        if (x->rd.marked)
            rc = marked_end(x);
    }
    if (rc != TRACE_OK) {
        step_workload_free(out);
        x->failed = 1;
        pass_stop(x);
        return give_err(rc, x->err, err, err_size);
    }
    return TRACE_OK;
}

void trace_chakra_reader_close(trace_chakra_reader_t *x) {
    if (x)
        reader_free(x);
}

/* ---- the whole workload: every rank of the streaming reader appended ----------------------------- */

int chakra_default_threads(void) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > CHAKRA_MAX_THREADS ? CHAKRA_MAX_THREADS : (int)n;
}

int chakra_read_threads(const char *path, int threads, step_workload_t *out, char *err, size_t err_size) {
    memset(out, 0, sizeof *out);
    trace_chakra_reader_t *x = NULL;
    int rc = chakra_reader_open_threads(path, threads, &x, err, err_size);
    if (rc != TRACE_OK)
        return rc;
    reader_t acc; /* the workload's name table (global_name) */
    memset(&acc, 0, sizeof acc);
    acc.at.err = err;
    acc.at.err_size = err_size;
    acc.w = out;
    const step_workload_t *sh = &x->shape;
    out->n_ranks = sh->n_ranks;
    out->rank_nodes_offset = alloc_calloc((size_t)sh->n_ranks + 1, sizeof *out->rank_nodes_offset);
    if (!out->rank_nodes_offset)
        rc = oom(&acc.at);
    if (rc == TRACE_OK && sh->n_groups > 0) {
        const int64_t nm = sh->groups[sh->n_groups - 1].ranks_offset + sh->groups[sh->n_groups - 1].n_ranks;
        out->groups = alloc_malloc((size_t)sh->n_groups * sizeof *out->groups);
        out->group_ranks = alloc_malloc((size_t)(nm > 0 ? nm : 1) * sizeof *out->group_ranks);
        if (!out->groups || !out->group_ranks)
            rc = oom(&acc.at);
        else {
            memcpy(out->groups, sh->groups, (size_t)sh->n_groups * sizeof *out->groups);
            memcpy(out->group_ranks, sh->group_ranks, (size_t)nm * sizeof *out->group_ranks);
            out->n_groups = sh->n_groups;
        }
    }
    int32_t *name_map = NULL;
    int64_t cap_name_map = 0;
    for (int32_t r = 0; rc == TRACE_OK && r < sh->n_ranks; r++) {
        step_workload_t part;
        if ((rc = trace_chakra_reader_rank(x, r, &part, err, err_size)) != TRACE_OK)
            break;
        const int64_t nn = part.rank_nodes_offset[r + 1];
        int64_t n_deps = 0;
        for (int64_t i = 0; i < nn; i++)
            n_deps += part.nodes[i].n_deps;
        if (grow((void **)&name_map, &cap_name_map, part.n_names + 1, sizeof *name_map) != TRACE_OK)
            rc = oom(&acc.at);
        if (rc == TRACE_OK)
            name_map[0] = 0;
        for (int32_t i = 1; rc == TRACE_OK && i < part.n_names; i++) {
            const char *nm = part.name_chars + part.name_offset[i];
            const int64_t len = (int64_t)strlen(nm);
            if (global_name(&acc, nm, len, str_hash(nm, (size_t)len), &name_map[i]) != TRACE_OK)
                rc = oom(&acc.at);
        }
        const int64_t base = out->rank_nodes_offset[r];
        if (rc == TRACE_OK && nn > 0 &&
            (grow((void **)&out->nodes, &acc.cap_nodes, base + nn, sizeof *out->nodes) != TRACE_OK ||
             (n_deps > 0 &&
              grow((void **)&out->deps, &acc.cap_deps, acc.n_deps + n_deps, sizeof *out->deps) != TRACE_OK)))
            rc = oom(&acc.at);
        if (rc == TRACE_OK && nn > 0) { /* (a rank without nodes: out->nodes may still be NULL) */
            step_wl_node_t *to = out->nodes + base;
            for (int64_t i = 0; i < nn; i++) {
                step_wl_node_t v = part.nodes[i];
                v.name = name_map[v.name];
                v.deps_offset += acc.n_deps;
                to[i] = v;
            }
            if (n_deps > 0)
                memcpy(out->deps + acc.n_deps, part.deps, (size_t)n_deps * sizeof *out->deps);
            acc.n_deps += n_deps;
        }
        if (rc == TRACE_OK)
            out->rank_nodes_offset[r + 1] = base + nn;
        step_workload_free(&part);
    }
    step_workload_names_done(out); /* (the table was built here, without step_workload_name_add's index) */
    free(acc.name_hash);
    free(acc.name_slot);
    free(name_map);
    trace_chakra_reader_close(x);
    if (rc != TRACE_OK) {
        step_workload_free(out);
        if (err_size > 0)
            chakra_one_line(err, err_size);
    }
    return rc;
}

int trace_chakra_read(const char *path, step_workload_t *out, char *err, size_t err_size) {
    return chakra_read_threads(path, 0, out, err, err_size);
}
