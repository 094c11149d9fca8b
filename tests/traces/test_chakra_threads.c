/* traces/test_chakra_threads.c - the Chakra reader decodes rank files on threads and merges them in
 * rank order: the workload it builds, and the error it reports, do not depend on the number of
 * threads (chakra_read_threads, chakra_internal.h). A 29-rank workload (more ranks than the ranks in
 * flight) with names shared between ranks in varying first-use order, process groups defined in the
 * metadata and, with the metadata emptied, inferred from the collectives, sends, receives and long
 * dependency lists is read on 1 to 5 threads and compared field by field (name indices and the name
 * table's layout included); then files broken in several ranks give the first error in rank order,
 * the same line on every thread count: a dangling dependency before a truncated record, an invalid
 * metadata record before an error in the same file's nodes; the streaming reader (open, then rank
 * by rank) on 1 to 5 threads gives the same ranks and the same first error; and every allocation of a read on
 * 3 threads failed in turn gives "out of memory" or the same workload. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "alloc.h"
#include "chakra_internal.h"
#include "chakra_sample.h"
#include "trace_chakra.h"

#define RANKS 29
#define PER 70 /* nodes a rank */

static char dir[4096];

static int setup(void **state) {
    (void)state;
    return cs_temp_dir(dir, sizeof dir, "threads");
}

static int teardown(void **state) {
    (void)state;
    cs_clear_dir(dir);
    rmdir(dir);
    return 0;
}

/* RANKS ranks of PER nodes: a chain with, every 9th node, a dependency on all the earlier ones (over
 * 64: the reader's set); names from a pool shared by the ranks, met in an order that depends on the
 * rank; every 5th node an all-reduce in the rank's group of four ("quad N", the last one short) and
 * every 7th an all-gather over all ranks; ranks exchange a send and a receive with their neighbour. */
static void build(cs_build_t *b) {
    const int32_t n_groups = (RANKS + 3) / 4;
    cs_init(b, RANKS, (int64_t)RANKS * PER, (int64_t)RANKS * PER * PER, n_groups, RANKS);
    for (int32_t g = 0; g < n_groups; g++) {
        int32_t ranks[4], n = 0;
        for (int32_t r = 4 * g; r < RANKS && r < 4 * g + 4; r++)
            ranks[n++] = r;
        char name[32];
        snprintf(name, sizeof name, "quad %d", g);
        cs_group(b, g, name, n, ranks);
    }
    uint64_t deps[PER];
    for (int32_t r = 0; r < RANKS; r++) {
        cs_rank(b, r);
        for (int32_t i = 0; i < PER; i++) {
            int32_t nd_n = 0;
            if (i > 0)
                deps[nd_n++] = (uint64_t)(1000 + i - 1);
            if (i % 9 == 8)
                for (int32_t j = 0; j < i - 1; j++)
                    deps[nd_n++] = (uint64_t)(1000 + j);
            char name[48];
            snprintf(name, sizeof name, "op %d", (i * 7 + r * 3) % 50);
            step_wl_kind_t kind = STEP_WL_COMPUTE;
            if (i % 5 == 4 || i % 7 == 6)
                kind = STEP_WL_COLL;
            else if (i == 10)
                kind = r % 2 == 0 ? STEP_WL_SEND : STEP_WL_RECV;
            if (kind == STEP_WL_SEND && r == RANKS - 1)
                kind = STEP_WL_COMPUTE; /* (the last rank, even, has no neighbour above) */
            step_wl_node_t *nd = cs_node(b, r, (uint64_t)(1000 + i), kind, name, nd_n, deps);
            if (kind == STEP_WL_COMPUTE) {
                nd->duration_s = 1e-6 * (double)(1 + (i + r) % 13);
                nd->flops = 1e9 * (double)(i % 4);
                nd->mem_bytes = 1e6 * (double)(i % 3);
            } else if (kind == STEP_WL_COLL) {
                nd->coll = i % 5 == 4 ? STEP_WL_ALLREDUCE : STEP_WL_ALLGATHER;
                nd->group = i % 5 == 4 ? r / 4 : -1;
                nd->comm_bytes = 1048576.0 * (double)(1 + i % 3);
            } else {
                nd->peer = kind == STEP_WL_SEND ? r + 1 : r - 1;
                nd->tag = 42;
                nd->comm_bytes = 4096;
            }
        }
    }
}

/* 0 if a and b are the same workload, field by field (name indices and table, dependency offsets,
 * group numbering); else prints the first difference. */
static int same(const step_workload_t *a, const step_workload_t *b) {
#define DIFF(...)                                                                                            \
    do {                                                                                                     \
        fprintf(stderr, __VA_ARGS__);                                                                        \
        return 1;                                                                                            \
    } while (0)
    if (a->n_ranks != b->n_ranks || a->n_groups != b->n_groups || a->n_names != b->n_names)
        DIFF("counts: ranks %d/%d groups %d/%d names %d/%d\n", a->n_ranks, b->n_ranks, a->n_groups,
             b->n_groups, a->n_names, b->n_names);
    for (int32_t r = 0; r <= a->n_ranks; r++)
        if (a->rank_nodes_offset[r] != b->rank_nodes_offset[r])
            DIFF("rank_nodes_offset[%d]\n", r);
    int64_t n_deps = 0;
    for (int64_t i = 0; i < a->rank_nodes_offset[a->n_ranks]; i++) {
        const step_wl_node_t *x = &a->nodes[i], *y = &b->nodes[i];
        if (x->id != y->id || x->kind != y->kind || x->name != y->name || x->duration_s != y->duration_s ||
            x->flops != y->flops || x->mem_bytes != y->mem_bytes || x->coll != y->coll ||
            x->comm_bytes != y->comm_bytes || x->peer != y->peer || x->tag != y->tag ||
            x->group != y->group || x->n_deps != y->n_deps || x->deps_offset != y->deps_offset ||
            x->start_hint_s != y->start_hint_s)
            DIFF("node %lld (id %llu) differs\n", (long long)i, (unsigned long long)x->id);
        n_deps += x->n_deps;
    }
    if (n_deps > 0 && memcmp(a->deps, b->deps, (size_t)n_deps * sizeof *a->deps) != 0)
        DIFF("dependencies differ\n");
    int64_t n_group_ranks = 0;
    for (int32_t g = 0; g < a->n_groups; g++) {
        const step_wl_group_t *x = &a->groups[g], *y = &b->groups[g];
        if (strcmp(x->name, y->name) != 0 || x->n_ranks != y->n_ranks || x->ranks_offset != y->ranks_offset)
            DIFF("group %d differs (%s / %s)\n", g, x->name, y->name);
        n_group_ranks += x->n_ranks;
    }
    if (n_group_ranks > 0 &&
        memcmp(a->group_ranks, b->group_ranks, (size_t)n_group_ranks * sizeof *a->group_ranks) != 0)
        DIFF("group ranks differ\n");
    for (int32_t i = 0; i < a->n_names; i++)
        if (a->name_offset[i] != b->name_offset[i] ||
            strcmp(a->name_chars + a->name_offset[i], b->name_chars + b->name_offset[i]) != 0)
            DIFF("name %d differs\n", i);
    return 0;
#undef DIFF
}

static void path_of(int32_t r, char *out, size_t size) {
    snprintf(out, size, "%s/t.%d.et", dir, r);
}

static uint8_t *load(int32_t r, size_t *len) {
    char path[4400];
    path_of(r, path, sizeof path);
    uint8_t *b = cs_load(path, len);
    assert_non_null(b);
    return b;
}

static void store(int32_t r, const uint8_t *b, size_t len) {
    char path[4400];
    path_of(r, path, sizeof path);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, len, f), len);
    fclose(f);
}

/* Rank r's first record (the metadata) replaced by the len bytes of meta. */
static void replace_meta(int32_t r, const uint8_t *meta, size_t len) {
    size_t n;
    uint8_t *b = load(r, &n);
    size_t pos = 0;
    uint64_t v = 0;
    for (int s = 0;; s += 7) {
        v |= (uint64_t)(b[pos] & 0x7f) << s;
        if (!(b[pos++] & 0x80))
            break;
    }
    uint8_t *out = malloc(n + len + 16);
    assert_non_null(out);
    size_t o = 0;
    out[o++] = (uint8_t)len; /* (len < 128) */
    memcpy(out + o, meta, len);
    o += len;
    memcpy(out + o, b + pos + v, n - pos - (size_t)v);
    o += n - pos - (size_t)v;
    store(r, out, o);
    free(out);
    free(b);
}

/* The set read streaming on `threads` threads (open, then every rank in order): the status and line
 * of the first error, TRACE_OK with every rank's node count equal to w's when w is given. */
static int stream_all(const char *prefix, int threads, const step_workload_t *w, char *err, size_t err_size) {
    trace_chakra_reader_t *x = NULL;
    int rc = chakra_reader_open_threads(prefix, threads, &x, err, err_size);
    if (rc != TRACE_OK) {
        assert_null(x);
        return rc;
    }
    const int32_t n = trace_chakra_reader_shape(x)->n_ranks;
    for (int32_t r = 0; rc == TRACE_OK && r < n; r++) {
        step_workload_t p;
        rc = trace_chakra_reader_rank(x, r, &p, err, err_size);
        if (rc == TRACE_OK && w)
            assert_int_equal(p.rank_nodes_offset[r + 1],
                             w->rank_nodes_offset[r + 1] - w->rank_nodes_offset[r]);
        step_workload_free(&p);
    }
    trace_chakra_reader_close(x);
    return rc;
}

/* Read the set on 1 to 5 threads, whole and streaming: the same status, line and workload every
 * time; returns the status (the workload of 1 thread in *w when TRACE_OK, err filled otherwise). */
static int read_all_ways(step_workload_t *w, char *err, size_t err_size) {
    char prefix[4200];
    snprintf(prefix, sizeof prefix, "%s/t", dir);
    const int rc = chakra_read_threads(prefix, 1, w, err, err_size);
    for (int threads = 2; threads <= 5; threads++) {
        step_workload_t v;
        char e2[512] = "";
        const int rc2 = chakra_read_threads(prefix, threads, &v, e2, sizeof e2);
        assert_int_equal(rc2, rc);
        if (rc != TRACE_OK) {
            assert_string_equal(e2, err);
            assert_null(v.nodes);
            continue;
        }
        if (same(w, &v) != 0)
            fail_msg("%d threads: a different workload", threads);
        step_workload_free(&v);
    }
    for (int threads = 1; threads <= 5; threads++) {
        char e2[512] = "";
        assert_int_equal(stream_all(prefix, threads, rc == TRACE_OK ? w : NULL, e2, sizeof e2), rc);
        if (rc != TRACE_OK)
            assert_string_equal(e2, err);
    }
    /* and through the entry point (its choice of threads: one, for a set this small) */
    step_workload_t d;
    char e3[512] = "";
    assert_int_equal(trace_chakra_read(prefix, &d, e3, sizeof e3), rc);
    if (rc == TRACE_OK) {
        assert_int_equal(same(w, &d), 0);
        step_workload_free(&d);
    } else {
        assert_string_equal(e3, err);
    }
    return rc;
}

static void test_same_workload(void **state) {
    (void)state;
    assert_true(chakra_default_threads() >= 1 && chakra_default_threads() <= CHAKRA_MAX_THREADS);
    cs_clear_dir(dir);
    cs_build_t b;
    build(&b);
    char err[512] = "";
    assert_int_equal(trace_chakra_write(dir, "t", &b.w, err, sizeof err), TRACE_OK);
    step_workload_t w;
    assert_int_equal(read_all_ways(&w, err, sizeof err), TRACE_OK);
    assert_int_equal(cs_compare(&b.w, &w), 0); /* and it is the workload written */
    assert_int_equal(w.n_groups, (RANKS + 3) / 4);
    step_workload_free(&w);
    /* groups inferred from the collectives (no metadata): numbered in order of first use */
    for (int32_t r = 0; r < RANKS; r++)
        replace_meta(r, (const uint8_t *)"", 0);
    assert_int_equal(read_all_ways(&w, err, sizeof err), TRACE_OK);
    assert_int_equal(w.n_groups, (RANKS + 3) / 4);
    assert_string_equal(w.groups[1].name, "2"); /* (the writer's pg_name of group "quad 1": its index + 1) */
    assert_int_equal(w.groups[RANKS / 4].n_ranks, RANKS % 4 ? RANKS % 4 : 4);
    step_workload_free(&w);
    step_workload_free(&b.w);
}

static void test_first_error(void **state) {
    (void)state;
    cs_clear_dir(dir);
    cs_build_t b;
    build(&b);
    char err[512] = "", path[4400];
    assert_int_equal(trace_chakra_write(dir, "t", &b.w, err, sizeof err), TRACE_OK);
    /* rank 17: its last record cut short; rank 23: its metadata no valid message */
    size_t n;
    uint8_t *f = load(17, &n);
    store(17, f, n - 3);
    free(f);
    const uint8_t bad[1] = {0xff};
    replace_meta(23, bad, 1);
    step_workload_t w;
    assert_int_equal(read_all_ways(&w, err, sizeof err), TRACE_EINVAL);
    path_of(17, path, sizeof path);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, ": truncated ("));
    /* rank 11: a dependency on no node of the file (found by the rank's check, after its records) */
    f = load(11, &n);
    for (size_t i = 0; i + 1 < n; i++) /* the first data_deps entry, 1000 + 0 (field 5, packed) */
        if (f[i] == 0x2a && f[i + 1] == 2 && f[i + 2] == 0xe8 && f[i + 3] == 0x07) {
            f[i + 2] = 0xe9;
            f[i + 3] = 0x0f; /* 2025 */
            break;
        }
    store(11, f, n);
    free(f);
    assert_int_equal(read_all_ways(&w, err, sizeof err), TRACE_EINVAL);
    path_of(11, path, sizeof path);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "2025: no node 2025 in this file"));
    /* rank 5: an invalid metadata record and a truncated node record: the metadata's error first */
    replace_meta(5, bad, 1);
    f = load(5, &n);
    store(5, f, n - 2);
    free(f);
    assert_int_equal(read_all_ways(&w, err, sizeof err), TRACE_EINVAL);
    path_of(5, path, sizeof path);
    char want[4600];
    snprintf(want, sizeof want,
             "%s: record 0 (byte 0): GlobalMetadata: 1 bytes: not a valid GlobalMetadata message", path);
    assert_string_equal(err, want);
    /* rank 2's file missing: named, whatever the threads */
    path_of(2, path, sizeof path);
    remove(path);
    assert_int_equal(read_all_ways(&w, err, sizeof err), TRACE_EINVAL);
    assert_non_null(strstr(err, "t.2.et: rank file: (missing)"));
    step_workload_free(&b.w);
}

/* Every allocation of a read on 3 threads failed in turn (alloc_fail_at; the decoders allocate
 * concurrently, so which one fails varies): TRACE_ENOMEM with "out of memory" and a zeroed
 * workload, or the same workload. */
static void test_alloc_fail(void **state) {
    (void)state;
    cs_clear_dir(dir);
    cs_build_t b;
    build(&b);
    char err[512] = "", prefix[4200];
    assert_int_equal(trace_chakra_write(dir, "t", &b.w, err, sizeof err), TRACE_OK);
    snprintf(prefix, sizeof prefix, "%s/t", dir);
    step_workload_t w, v;
    uint64_t c0 = alloc_count();
    assert_int_equal(chakra_read_threads(prefix, 3, &w, err, sizeof err), TRACE_OK);
    const int64_t n_read = (int64_t)(alloc_count() - c0);
    assert_true(n_read > 20);
    int failed = 0;
    for (int64_t k = 1; k <= n_read + 10; k++) {
        alloc_fail_at((uint64_t)k);
        const int rc = chakra_read_threads(prefix, 3, &v, err, sizeof err);
        alloc_fail_at(0);
        if (rc == TRACE_OK) {
            assert_int_equal(same(&w, &v), 0);
            step_workload_free(&v);
            continue;
        }
        failed++;
        if (rc != TRACE_ENOMEM || strcmp(err, "out of memory") != 0)
            fail_msg("allocation %lld failed: rc %d: %s", (long long)k, rc, err);
        assert_null(v.nodes);
        assert_int_equal(v.n_ranks, 0);
    }
    assert_true(failed > 0);
    step_workload_free(&w);
    step_workload_free(&b.w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_workload),
        cmocka_unit_test(test_first_error),
        cmocka_unit_test(test_alloc_fail),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
