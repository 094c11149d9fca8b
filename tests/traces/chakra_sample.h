/* chakra_sample.h - workloads built by hand for the Chakra codec's tests: cs_sample (every node kind,
 * every collective, groups, sends and receives, data dependencies, a compute node known only by its
 * work) and cs_random (seeded random DAGs of every kind), plus an exact comparison of two
 * workloads, the tests' temporary directories (cs_temp_dir, cs_clear_dir) and a file's bytes
 * (cs_load). Header only; include after the C library headers. */
#ifndef STEPSIM_CHAKRA_SAMPLE_H
#define STEPSIM_CHAKRA_SAMPLE_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "step.h"

/* A fresh directory $TMPDIR/chakra-TAG-XXXXXX (TMPDIR unset: /tmp) into out: 0, or -1. */
static inline int cs_temp_dir(char *out, size_t size, const char *tag) {
    const char *t = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    const int n = snprintf(out, size, "%s/chakra-%s-XXXXXX", t, tag);
    return n > 0 && (size_t)n < size && mkdtemp(out) ? 0 : -1;
}

/* The bytes of the file at path (malloc'ed, one spare byte; *len their count), NULL if unreadable. */
static inline uint8_t *cs_load(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *b = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)n + 1)) != NULL &&
        fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = b ? (size_t)n : 0;
    return b;
}

/* Remove every file of dir (the directory stays). */
static inline void cs_clear_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[4400];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        const int n = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (n > 0 && (size_t)n < sizeof path)
            remove(path);
    }
    closedir(d);
}

/* A workload under construction: arrays sized generously by the caller's counts. */
typedef struct cs_build {
    step_workload_t w;
    int64_t n_nodes, n_deps;
    int32_t n_group_ranks;
} cs_build_t;

static inline void cs_init(cs_build_t *b, int32_t n_ranks, int64_t max_nodes, int64_t max_deps,
                           int32_t n_groups, int32_t max_group_ranks) {
    memset(b, 0, sizeof *b);
    b->w.n_ranks = n_ranks;
    b->w.rank_nodes_offset = calloc((size_t)n_ranks + 1, sizeof *b->w.rank_nodes_offset);
    b->w.nodes = calloc((size_t)max_nodes + 1, sizeof *b->w.nodes);
    b->w.deps = calloc((size_t)max_deps + 1, sizeof *b->w.deps);
    b->w.n_groups = n_groups;
    b->w.groups = n_groups ? calloc((size_t)n_groups, sizeof *b->w.groups) : NULL;
    b->w.group_ranks = n_groups ? calloc((size_t)max_group_ranks + 1, sizeof *b->w.group_ranks) : NULL;
}

static inline void cs_group(cs_build_t *b, int32_t g, const char *name, int32_t n, const int32_t *ranks) {
    step_wl_group_t *gr = &b->w.groups[g];
    snprintf(gr->name, sizeof gr->name, "%s", name);
    gr->n_ranks = n;
    gr->ranks_offset = b->n_group_ranks;
    if (n > 0)
        memcpy(b->w.group_ranks + b->n_group_ranks, ranks, (size_t)n * sizeof *ranks);
    b->n_group_ranks += n;
}

/* Nodes are appended rank by rank: call cs_rank(b, r) before rank r's first node. */
static inline void cs_rank(cs_build_t *b, int32_t r) {
    for (int32_t k = r; k <= b->w.n_ranks; k++)
        b->w.rank_nodes_offset[k] = b->n_nodes;
}

static inline step_wl_node_t *cs_node(cs_build_t *b, int32_t r, uint64_t id, step_wl_kind_t kind,
                                      const char *name, int32_t n_deps, const uint64_t *deps) {
    step_wl_node_t *nd = &b->w.nodes[b->n_nodes++];
    memset(nd, 0, sizeof *nd);
    nd->id = id;
    nd->kind = kind;
    if (step_workload_name_add(&b->w, name, &nd->name) != SIM_OK)
        abort();
    nd->duration_s = 0;
    nd->peer = -1;
    nd->group = -1;
    nd->start_hint_s = -1;
    nd->n_deps = n_deps;
    nd->deps_offset = b->n_deps;
    if (n_deps > 0)
        memcpy(b->w.deps + b->n_deps, deps, (size_t)n_deps * sizeof *deps);
    b->n_deps += n_deps;
    for (int32_t k = r + 1; k <= b->w.n_ranks; k++)
        b->w.rank_nodes_offset[k] = b->n_nodes;
    return nd;
}

/* The sample: 4 ranks as 2 pipeline stages x 2 data-parallel replicas (stage s, replica d on rank
 * 2s + d). Groups: "dp stage 0" {0, 1}, "dp stage 1" {2, 3}, "pp replica 1" {3, 1} (listed out of
 * order on purpose), "pp replica 0" {0, 2}. Every collective is issued by every member of its group
 * and every send has its receive, so the sample is also a workload a simulator can run. Per rank, ids from
 * 100 * rank: fwd (compute, duration 1.234567891 ms, 3.2e12 flops, 4e9 bytes) stage 0: send activations to
 * rank + 2 (tag 7, 64 MiB) after fwd; stage 1: recv them, then fwd2 (compute known only by its work: duration
 * -1, 6.4e12 flops, 8e9 bytes) bwd (compute 2.5 ms) after fwd (and fwd2) allreduce of 1 GiB in the rank's
 * "dp" group after bwd allgather 256 MiB over all ranks, reducescatter 256 MiB over all ranks, alltoall 16
 * MiB in "pp replica 1" on ranks 1 and 3 (ranks 0 and 2: broadcast 1 MiB in "pp replica 0" {0, 2}), every one
 * after the allreduce; a zero-time "opt" compute after the last of them, depending on them all. */
static inline void cs_sample(cs_build_t *b) {
    cs_init(b, 4, 64, 128, 4, 8);
    cs_group(b, 0, "dp stage 0", 2, (const int32_t[]){0, 1});
    cs_group(b, 1, "dp stage 1", 2, (const int32_t[]){2, 3});
    cs_group(b, 2, "pp replica 1", 2, (const int32_t[]){3, 1});
    cs_group(b, 3, "pp replica 0", 2, (const int32_t[]){0, 2});
    for (int32_t r = 0; r < 4; r++) {
        const uint64_t o = 100 * (uint64_t)r;
        const int stage = r / 2;
        cs_rank(b, r);
        step_wl_node_t *nd = cs_node(b, r, o + 1, STEP_WL_COMPUTE, "fwd", 0, NULL);
        nd->duration_s = 1.234567891e-3;
        nd->flops = 3.2e12;
        nd->mem_bytes = 4e9;
        if (stage == 0) {
            nd = cs_node(b, r, o + 2, STEP_WL_SEND, "send act", 1, (const uint64_t[]){o + 1});
            nd->peer = r + 2;
            nd->tag = 7;
            nd->comm_bytes = 64.0 * 1024 * 1024;
            nd = cs_node(b, r, o + 4, STEP_WL_COMPUTE, "bwd", 1, (const uint64_t[]){o + 1});
        } else {
            nd = cs_node(b, r, o + 2, STEP_WL_RECV, "recv act", 0, NULL);
            nd->peer = r - 2;
            nd->tag = 7;
            nd->comm_bytes = 64.0 * 1024 * 1024;
            nd = cs_node(b, r, o + 3, STEP_WL_COMPUTE, "fwd2", 2, (const uint64_t[]){o + 1, o + 2});
            nd->duration_s = -1;
            nd->flops = 6.4e12;
            nd->mem_bytes = 8e9;
            nd = cs_node(b, r, o + 4, STEP_WL_COMPUTE, "bwd", 2, (const uint64_t[]){o + 3, o + 1});
        }
        nd->duration_s = 2.5e-3;
        nd = cs_node(b, r, o + 5, STEP_WL_COLL, "allreduce grads", 1, (const uint64_t[]){o + 4});
        nd->coll = STEP_WL_ALLREDUCE;
        nd->comm_bytes = 1024.0 * 1024 * 1024;
        nd->group = stage;
        nd = cs_node(b, r, o + 6, STEP_WL_COLL, "allgather", 1, (const uint64_t[]){o + 5});
        nd->coll = STEP_WL_ALLGATHER;
        nd->comm_bytes = 256.0 * 1024 * 1024;
        nd = cs_node(b, r, o + 7, STEP_WL_COLL, "reducescatter", 1, (const uint64_t[]){o + 5});
        nd->coll = STEP_WL_REDUCESCATTER;
        nd->comm_bytes = 256.0 * 1024 * 1024;
        if (r == 1 || r == 3) {
            nd = cs_node(b, r, o + 8, STEP_WL_COLL, "alltoall", 1, (const uint64_t[]){o + 5});
            nd->coll = STEP_WL_ALLTOALL;
            nd->comm_bytes = 16.0 * 1024 * 1024;
            nd->group = 2;
        } else {
            nd = cs_node(b, r, o + 8, STEP_WL_COLL, "broadcast", 1, (const uint64_t[]){o + 5});
            nd->coll = STEP_WL_BROADCAST;
            nd->comm_bytes = 1024.0 * 1024;
            nd->group = 3;
        }
        nd = cs_node(b, r, o + 9, STEP_WL_COMPUTE, "opt", 3, (const uint64_t[]){o + 6, o + 7, o + 8});
        nd->duration_s = 0;
    }
}

static inline uint64_t cs_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A random workload: 2..6 ranks, up to 40 nodes each, ids random and unique per rank, dependencies
 * only on earlier nodes of the rank (so acyclic; up to 80 of them, some repeated ids dropped),
 * every kind and collective, groups {0..n/2} and {n/2..n-1}. Durations are any double the
 * picosecond clock holds; flops and bytes whole numbers (Chakra stores integers). */
static inline void cs_random(cs_build_t *b, uint64_t seed) {
    uint64_t s = seed;
    const int32_t n = 2 + (int32_t)(cs_next(&s) % 5);
    cs_init(b, n, 40 * n, 40 * 80 * n, 2, n);
    int32_t lo[8], hi[8], half = n / 2;
    for (int32_t i = 0; i < half; i++)
        lo[i] = i;
    for (int32_t i = half; i < n; i++)
        hi[i - half] = i;
    cs_group(b, 0, "low", half, lo);
    cs_group(b, 1, "high", n - half, hi);
    uint64_t ids[40], deps[80];
    for (int32_t r = 0; r < n; r++) {
        cs_rank(b, r);
        const int32_t m = (int32_t)(cs_next(&s) % 41);
        for (int32_t i = 0; i < m; i++) {
            uint64_t id;
            int fresh;
            do {
                id = cs_next(&s) % 3 == 0 ? cs_next(&s) : cs_next(&s) % 1000;
                fresh = 1;
                for (int32_t j = 0; j < i; j++)
                    fresh &= ids[j] != id;
            } while (!fresh);
            ids[i] = id;
            int32_t nd_n = 0;
            if (i > 0) {
                const int32_t k = (int32_t)(cs_next(&s) % (i < 5 ? (uint64_t)i + 1 : 6));
                for (int32_t j = 0; j < k; j++) {
                    const uint64_t d = ids[cs_next(&s) % (uint64_t)i];
                    int dup = 0;
                    for (int32_t q = 0; q < nd_n; q++)
                        dup |= deps[q] == d;
                    if (!dup)
                        deps[nd_n++] = d;
                }
                if (i == 39) /* one long list (over 64 entries checked through the reader's set) */
                    for (int32_t j = 0; j < i && nd_n < 80; j++) {
                        int dup = 0;
                        for (int32_t q = 0; q < nd_n; q++)
                            dup |= deps[q] == ids[j];
                        if (!dup)
                            deps[nd_n++] = ids[j];
                    }
            }
            const int kind = (int)(cs_next(&s) % 4);
            char name[40];
            snprintf(name, sizeof name, "n%d.%d", r, i);
            step_wl_node_t *nd = cs_node(b, r, id, (step_wl_kind_t)kind, name, nd_n, deps);
            if (kind == STEP_WL_COMPUTE) {
                const int what = (int)(cs_next(&s) % 3);
                nd->flops = (double)(cs_next(&s) % 1000000000000ULL);
                nd->mem_bytes = (double)(cs_next(&s) % 100000000000ULL);
                nd->duration_s = what == 0 && nd->flops > 0 ? -1
                                 : what == 1                ? (double)(cs_next(&s) >> 11) * 0x1p-53 * 10.0
                                                            : (double)(cs_next(&s) % 1000) * 1e-6;
            } else if (kind == STEP_WL_COLL) {
                nd->coll = (step_wl_coll_t)(cs_next(&s) % 5);
                nd->comm_bytes = (double)(cs_next(&s) % (1ULL << 40));
                nd->group = cs_next(&s) % 3 == 0 ? -1 : (r < half ? 0 : 1);
            } else {
                nd->peer = (int32_t)((r + 1 + (int32_t)(cs_next(&s) % (uint64_t)(n - 1))) % n);
                nd->tag = (int64_t)(cs_next(&s) % 2147483648ULL);
                nd->comm_bytes = (double)(cs_next(&s) % (1ULL << 36));
            }
        }
    }
}

/* 0 if a and b hold the same workload (every field but start_hint_s, which the reader sets to -1);
 * else prints the first difference to stderr and returns 1. */
static inline int cs_compare(const step_workload_t *a, const step_workload_t *b) {
#define CS_DIFF(...)                                                                                         \
    do {                                                                                                     \
        fprintf(stderr, __VA_ARGS__);                                                                        \
        return 1;                                                                                            \
    } while (0)
    if (a->n_ranks != b->n_ranks)
        CS_DIFF("n_ranks %d vs %d\n", a->n_ranks, b->n_ranks);
    if (a->n_groups != b->n_groups)
        CS_DIFF("n_groups %d vs %d\n", a->n_groups, b->n_groups);
    for (int32_t g = 0; g < a->n_groups; g++) {
        const step_wl_group_t *x = &a->groups[g], *y = &b->groups[g];
        if (strcmp(x->name, y->name) != 0 || x->n_ranks != y->n_ranks ||
            memcmp(a->group_ranks + x->ranks_offset, b->group_ranks + y->ranks_offset,
                   (size_t)x->n_ranks * sizeof *a->group_ranks) != 0)
            CS_DIFF("group %d differs (%s / %s)\n", g, x->name, y->name);
    }
    for (int32_t r = 0; r <= a->n_ranks; r++)
        if (a->rank_nodes_offset[r] != b->rank_nodes_offset[r])
            CS_DIFF("rank_nodes_offset[%d] %lld vs %lld\n", r, (long long)a->rank_nodes_offset[r],
                    (long long)b->rank_nodes_offset[r]);
    for (int64_t i = 0; i < a->rank_nodes_offset[a->n_ranks]; i++) {
        const step_wl_node_t *x = &a->nodes[i], *y = &b->nodes[i];
        if (x->id != y->id || x->kind != y->kind ||
            strcmp(step_workload_name(a, x->name), step_workload_name(b, y->name)) != 0 ||
            x->duration_s != y->duration_s || x->flops != y->flops || x->mem_bytes != y->mem_bytes ||
            x->comm_bytes != y->comm_bytes || x->peer != y->peer || x->tag != y->tag ||
            x->group != y->group || x->n_deps != y->n_deps || (x->kind == STEP_WL_COLL && x->coll != y->coll))
            CS_DIFF("node %lld (id %llu, %s): differs: kind %d/%d dur %.17g/%.17g flops %.17g/%.17g bytes "
                    "%.17g/%.17g comm %.17g/%.17g peer %d/%d tag %lld/%lld group %d/%d deps %d/%d\n",
                    (long long)i, (unsigned long long)x->id, step_workload_name(a, x->name), x->kind, y->kind,
                    x->duration_s, y->duration_s, x->flops, y->flops, x->mem_bytes, y->mem_bytes,
                    x->comm_bytes, y->comm_bytes, x->peer, y->peer, (long long)x->tag, (long long)y->tag,
                    x->group, y->group, x->n_deps, y->n_deps);
        if (x->n_deps > 0 &&
            memcmp(a->deps + x->deps_offset, b->deps + y->deps_offset, (size_t)x->n_deps * sizeof *a->deps))
            CS_DIFF("node %lld (id %llu): dependencies differ\n", (long long)i, (unsigned long long)x->id);
    }
    return 0;
#undef CS_DIFF
}

#endif
