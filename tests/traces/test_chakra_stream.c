/* traces/test_chakra_stream.c - the streaming Chakra reader (trace_chakra_reader_*): its shape, used
 * flags and ranks, one at a time, are exactly what trace_chakra_read gives (the whole workload read on
 * the caller's thread, compared field by field, rank by rank) for ASTRA-sim's own microbenchmark ETs
 * (no mark), the sample workload and seeded random DAGs written by our writer (marked exactly when
 * their groups are complete, else not) on 1 and 3 decoding threads; the used flags are those computed
 * from the whole workload. A set marked complete that is not is refused with one line, at the rank
 * that shows it (a pg_name no metadata defines, a collective of every rank, a later rank defining
 * other groups) or at the last rank (a group no collective uses); ranks asked out of order are
 * refused and after an error only close is allowed. */
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

#include "chakra_internal.h"
#include "chakra_sample.h"
#include "trace_chakra.h"

#define ASTRA STEPSIM_DATA_DIR "/chakra/astra-sim/all_reduce"

static char dir[4096];

static int setup(void **state) {
    (void)state;
    return cs_temp_dir(dir, sizeof dir, "stream");
}

static int teardown(void **state) {
    (void)state;
    cs_clear_dir(dir);
    rmdir(dir);
    return 0;
}

static uint8_t *load(const char *path, size_t *len) {
    uint8_t *b = cs_load(path, len);
    assert_non_null(b);
    return b;
}

/* The bytes of a file's first record (its GlobalMetadata) with their length prefix: [0, *end). */
static size_t meta_end(const uint8_t *b) {
    size_t pos = 0;
    uint64_t v = 0;
    for (int s = 0;; s += 7) {
        v |= (uint64_t)(b[pos] & 0x7f) << s;
        if (!(b[pos++] & 0x80))
            break;
    }
    return pos + (size_t)v;
}

/* File `to` gets the first record of file `from` instead of its own. */
static void splice_meta(const char *from, const char *to) {
    size_t nf, nt;
    uint8_t *f = load(from, &nf), *t = load(to, &nt);
    const size_t ef = meta_end(f), et = meta_end(t);
    FILE *o = fopen(to, "wb");
    assert_non_null(o);
    assert_int_equal(fwrite(f, 1, ef, o), ef);
    assert_int_equal(fwrite(t + et, 1, nt - et, o), nt - et);
    fclose(o);
    free(f);
    free(t);
}

/* Whether rank 0's metadata carries the mark (its name in the record's bytes). */
static int file_marked(const char *prefix) {
    char path[4400];
    snprintf(path, sizeof path, "%s.0.et", prefix);
    size_t n;
    uint8_t *b = load(path, &n);
    const size_t e = meta_end(b), k = strlen(CHAKRA_ATTR_GROUPS_COMPLETE);
    int found = 0;
    for (size_t i = 0; i + k <= e && !found; i++)
        found = memcmp(b + i, CHAKRA_ATTR_GROUPS_COMPLETE, k) == 0;
    free(b);
    return found;
}

/* The streaming read of prefix on `threads` threads equals the whole read (1 thread): the shape, the
 * used flags computed from the whole workload, every rank's nodes, dependencies and names. Returns
 * the number of nodes seen. */
static int64_t stream_equals_whole(const char *prefix, int threads) {
    step_workload_t w;
    char err[512] = "";
    assert_int_equal(chakra_read_threads(prefix, 1, &w, err, sizeof err), TRACE_OK);
    trace_chakra_reader_t *x = NULL;
    if (chakra_reader_open_threads(prefix, threads, &x, err, sizeof err) != TRACE_OK)
        fail_msg("%s: open: %s", prefix, err);
    const step_workload_t *sh = trace_chakra_reader_shape(x);
    assert_int_equal(sh->n_ranks, w.n_ranks);
    assert_int_equal(sh->n_groups, w.n_groups);
    assert_null(sh->nodes);
    for (int32_t g = 0; g < w.n_groups; g++) {
        assert_string_equal(sh->groups[g].name, w.groups[g].name);
        assert_int_equal(sh->groups[g].n_ranks, w.groups[g].n_ranks);
        assert_memory_equal(sh->group_ranks + sh->groups[g].ranks_offset,
                            w.group_ranks + w.groups[g].ranks_offset,
                            (size_t)w.groups[g].n_ranks * sizeof *w.group_ranks);
    }
    uint8_t *used = calloc((size_t)w.n_groups + 1, 1);
    assert_non_null(used);
    for (int64_t i = 0; i < w.rank_nodes_offset[w.n_ranks]; i++)
        if (w.nodes[i].kind == STEP_WL_COLL)
            used[w.nodes[i].group >= 0 ? w.nodes[i].group : w.n_groups] = 1;
    assert_memory_equal(trace_chakra_reader_group_used(x), used, (size_t)w.n_groups + 1);
    free(used);
    int64_t seen = 0;
    for (int32_t r = 0; r < w.n_ranks; r++) {
        step_workload_t p;
        if (trace_chakra_reader_rank(x, r, &p, err, sizeof err) != TRACE_OK)
            fail_msg("%s: rank %d: %s", prefix, r, err);
        assert_int_equal(p.n_ranks, w.n_ranks);
        assert_int_equal(p.n_groups, 0);
        const int64_t n = w.rank_nodes_offset[r + 1] - w.rank_nodes_offset[r];
        for (int32_t k = 0; k <= w.n_ranks; k++)
            assert_int_equal(p.rank_nodes_offset[k], k <= r ? 0 : n);
        int32_t next_name = 1; /* the rank's own table: names numbered in order of first use */
        int64_t deps = 0;
        for (int64_t i = 0; i < n; i++) {
            const step_wl_node_t *a = &p.nodes[i], *b = &w.nodes[w.rank_nodes_offset[r] + i];
            if (a->id != b->id || a->kind != b->kind || a->duration_s != b->duration_s ||
                a->flops != b->flops || a->mem_bytes != b->mem_bytes || a->coll != b->coll ||
                a->comm_bytes != b->comm_bytes || a->peer != b->peer || a->tag != b->tag ||
                a->group != b->group || a->n_deps != b->n_deps || a->start_hint_s != b->start_hint_s)
                fail_msg("%s: rank %d node %lld (id %llu) differs", prefix, r, (long long)i,
                         (unsigned long long)b->id);
            assert_string_equal(step_workload_name(&p, a->name), step_workload_name(&w, b->name));
            if (a->name == next_name)
                next_name++;
            assert_true(a->name < next_name);
            assert_int_equal(a->deps_offset, deps);
            if (a->n_deps > 0)
                assert_memory_equal(p.deps + a->deps_offset, w.deps + b->deps_offset,
                                    (size_t)a->n_deps * sizeof *p.deps);
            deps += a->n_deps;
        }
        assert_int_equal(p.n_names, next_name);
        seen += n;
        step_workload_free(&p);
    }
    assert_int_equal(trace_chakra_reader_rank(x, w.n_ranks, &(step_workload_t){0}, err, sizeof err),
                     TRACE_EINVAL);
    trace_chakra_reader_close(x);
    assert_int_equal(seen, w.rank_nodes_offset[w.n_ranks]);
    step_workload_free(&w);
    return seen;
}

/* 1 iff every group of w is used by a collective and no collective is of every rank. */
static int complete(const step_workload_t *w) {
    int ok = 1;
    uint8_t used[64] = {0};
    assert_true(w->n_groups < 64);
    for (int64_t i = 0; i < w->rank_nodes_offset[w->n_ranks]; i++)
        if (w->nodes[i].kind == STEP_WL_COLL) {
            if (w->nodes[i].group < 0)
                ok = 0;
            else
                used[w->nodes[i].group] = 1;
        }
    for (int32_t g = 0; g < w->n_groups; g++)
        ok &= used[g];
    return ok;
}

static void test_astra_sim(void **state) {
    (void)state;
    assert_int_equal(file_marked(ASTRA "/8npus_1024MB/all_reduce"), 0);
    assert_true(stream_equals_whole(ASTRA "/8npus_1024MB/all_reduce", 1) > 0);
    assert_true(stream_equals_whole(ASTRA "/64npus_1024MB", 3) > 0);
    assert_true(stream_equals_whole(ASTRA "/64npus_1024MB", 1) > 0);
}

/* Written by our writer, then read whole and streaming: marked iff complete. */
static void check_written(const step_workload_t *w, int want_marked) {
    cs_clear_dir(dir);
    char err[512] = "", prefix[4200];
    assert_int_equal(trace_chakra_write(dir, "t", w, err, sizeof err), TRACE_OK);
    snprintf(prefix, sizeof prefix, "%s/t", dir);
    assert_int_equal(file_marked(prefix), want_marked);
    step_workload_t v;
    assert_int_equal(trace_chakra_read(prefix, &v, err, sizeof err), TRACE_OK);
    assert_int_equal(cs_compare(w, &v), 0);
    step_workload_free(&v);
    stream_equals_whole(prefix, 1);
    stream_equals_whole(prefix, 3);
}

static void test_written(void **state) {
    (void)state;
    cs_build_t b;
    cs_sample(&b);
    assert_int_equal(complete(&b.w), 0); /* (its all-gather and reduce-scatter are of every rank) */
    check_written(&b.w, 0);
    for (int64_t i = 0; i < b.n_nodes; i++) /* the same over the stage's group: complete */
        if (b.w.nodes[i].kind == STEP_WL_COLL && b.w.nodes[i].group < 0)
            b.w.nodes[i].group = b.w.nodes[i].id / 100 < 2 ? 0 : 1;
    assert_int_equal(complete(&b.w), 1);
    check_written(&b.w, 1);
    step_workload_free(&b.w);
    int n_marked = 0, n_unmarked = 0;
    for (uint64_t seed = 1; seed <= 24; seed++) {
        cs_random(&b, seed);
        if (seed % 2 == 0) /* half of them with every collective in its half's group */
            for (int32_t r = 0; r < b.w.n_ranks; r++)
                for (int64_t i = b.w.rank_nodes_offset[r]; i < b.w.rank_nodes_offset[r + 1]; i++)
                    if (b.w.nodes[i].kind == STEP_WL_COLL)
                        b.w.nodes[i].group = r < b.w.n_ranks / 2 ? 0 : 1;
        const int c = complete(&b.w);
        n_marked += c;
        n_unmarked += !c;
        check_written(&b.w, c);
        step_workload_free(&b.w);
    }
    assert_true(n_marked >= 3 && n_unmarked >= 3);
}

/* Four ranks: group "all" {0..3} (an all-reduce on each rank), group "pair" {0,1} (an all-gather on
 * ranks 0 and 1 when pair is set); written marked (the caller vouches) to DIR/name.r.et. */
static void write_four(const char *name, int pair, int every_rank, int spare_group) {
    cs_build_t b;
    cs_init(&b, 4, 16, 16, 3, 8);
    cs_group(&b, 0, "all", 4, (const int32_t[]){0, 1, 2, 3});
    cs_group(&b, 1, "pair", 2, (const int32_t[]){0, 1});
    cs_group(&b, 2, "spare", 2, (const int32_t[]){2, 3});
    b.w.n_groups = spare_group ? 3 : 2;
    for (int32_t r = 0; r < 4; r++) {
        cs_rank(&b, r);
        step_wl_node_t *nd = cs_node(&b, r, 1, STEP_WL_COMPUTE, "fwd", 0, NULL);
        nd->duration_s = 1e-3;
        nd = cs_node(&b, r, 2, STEP_WL_COLL, "ar", 1, (const uint64_t[]){1});
        nd->coll = STEP_WL_ALLREDUCE;
        nd->comm_bytes = 1 << 20;
        nd->group = 0;
        if (r < 2) {
            nd = cs_node(&b, r, 3, STEP_WL_COLL, "ag", 1, (const uint64_t[]){2});
            nd->coll = STEP_WL_ALLGATHER;
            nd->comm_bytes = 1 << 20;
            nd->group = pair ? 1 : 0;
        }
        if (r == 2 && every_rank) {
            nd = cs_node(&b, r, 4, STEP_WL_COLL, "bc", 1, (const uint64_t[]){2});
            nd->coll = STEP_WL_BROADCAST;
            nd->comm_bytes = 1 << 10;
        }
    }
    if (!pair) {
        b.w.n_groups = 1;
    }
    char err[512] = "";
    trace_chakra_writer_t *x = NULL;
    assert_int_equal(trace_chakra_writer_open(dir, name, 4, 1, &x, err, sizeof err), TRACE_OK);
    for (int32_t r = 0; r < 4; r++)
        assert_int_equal(trace_chakra_writer_rank(x, &b.w, r, err, sizeof err), TRACE_OK);
    assert_int_equal(trace_chakra_writer_close(x, err, sizeof err), TRACE_OK);
    step_workload_free(&b.w);
}

/* The set reads streaming up to rank bad - 1, fails at rank bad with want (after dir + "/"), refuses
 * any rank after; trace_chakra_read gives the same line. */
static void refused_at(const char *name, int32_t bad, const char *want) {
    char prefix[4200], err[1024] = "", full[4700];
    snprintf(prefix, sizeof prefix, "%s/%s", dir, name);
    snprintf(full, sizeof full, "%s/%s", dir, want);
    for (int threads = 1; threads <= 3; threads += 2) {
        trace_chakra_reader_t *x = NULL;
        assert_int_equal(chakra_reader_open_threads(prefix, threads, &x, err, sizeof err), TRACE_OK);
        step_workload_t p;
        for (int32_t r = 0; r < bad; r++) {
            assert_int_equal(trace_chakra_reader_rank(x, r, &p, err, sizeof err), TRACE_OK);
            step_workload_free(&p);
        }
        assert_int_equal(trace_chakra_reader_rank(x, bad, &p, err, sizeof err), TRACE_EINVAL);
        assert_string_equal(err, full);
        assert_null(p.nodes);
        assert_null(strchr(err, '\n'));
        if (bad + 1 < 4) {
            assert_int_equal(trace_chakra_reader_rank(x, bad + 1, &p, err, sizeof err), TRACE_EINVAL);
            assert_string_equal(err, "reader: an earlier error ended the read (only close is allowed)");
        }
        trace_chakra_reader_close(x);
    }
    step_workload_t w;
    assert_int_equal(trace_chakra_read(prefix, &w, err, sizeof err), TRACE_EINVAL);
    assert_string_equal(err, full);
    assert_null(w.nodes);
}

static void test_marker_lies(void **state) {
    (void)state;
    cs_clear_dir(dir);
    char a[4400], b[4400];
    write_four("good", 1, 0, 0); /* the truth: both groups used, every collective in one */
    stream_equals_whole(strcat(strcpy(a, dir), "/good"), 1);
    assert_int_equal(file_marked(a), 1);
    /* a pg_name no metadata defines: rank 0's metadata from a set without group "pair" ("2") */
    write_four("one", 0, 0, 0);
    write_four("undef", 1, 0, 0);
    for (int32_t r = 0; r < 4; r++) {
        snprintf(a, sizeof a, "%s/one.%d.et", dir, r);
        snprintf(b, sizeof b, "%s/undef.%d.et", dir, r);
        splice_meta(a, b);
    }
    refused_at(
        "undef", 0,
        "undef.0.et: node 3: pg_name: \"2\": the set is marked complete but this group is not defined");
    /* a later rank defining other groups: rank 2 without "pair", rank 1 of "one" with it */
    snprintf(a, sizeof a, "%s/one.2.et", dir);
    snprintf(b, sizeof b, "%s/good.2.et", dir);
    splice_meta(a, b);
    refused_at("good", 2,
               "good.2.et: metadata: pg_ranks:2: (missing): the set is marked complete and rank 0's file "
               "defines this group");
    write_four("good", 1, 0, 0);
    snprintf(a, sizeof a, "%s/good.1.et", dir);
    snprintf(b, sizeof b, "%s/one.1.et", dir);
    splice_meta(a, b);
    refused_at(
        "one", 1,
        "one.1.et: metadata: pg_ranks:2: 2 ranks: the set is marked complete but rank 0's file does not "
        "define this group");
    /* a collective of every rank (pg_name absent) in rank 2 */
    write_four("every", 1, 1, 0);
    refused_at(
        "every", 2,
        "every.2.et: node 4: pg_name: (every rank): the set is marked complete but this collective uses "
        "every rank");
    /* a group defined (in every file) that no collective uses: at the last rank */
    write_four("spare", 1, 0, 1);
    refused_at(
        "spare", 3,
        "spare.0.et: metadata: pg_ranks:3: (unused): the set is marked complete but no collective uses "
        "this group");
    /* a set without the mark (trace_chakra_write decides): collectives of every rank are flagged */
    char err[512] = "";
    trace_chakra_reader_t *x = NULL;
    snprintf(a, sizeof a, "%s/undef", dir);
    cs_clear_dir(dir);
    cs_build_t c;
    cs_sample(&c);
    assert_int_equal(trace_chakra_write(dir, "undef", &c.w, err, sizeof err), TRACE_OK);
    assert_int_equal(trace_chakra_reader_open(a, &x, err, sizeof err), TRACE_OK);
    assert_int_equal(trace_chakra_reader_group_used(x)[trace_chakra_reader_shape(x)->n_groups], 1);
    trace_chakra_reader_close(x);
    step_workload_free(&c.w);
}

static void test_order(void **state) {
    (void)state;
    cs_clear_dir(dir);
    cs_build_t b;
    cs_sample(&b);
    char err[512] = "", prefix[4200];
    assert_int_equal(trace_chakra_write(dir, "t", &b.w, err, sizeof err), TRACE_OK);
    step_workload_free(&b.w);
    snprintf(prefix, sizeof prefix, "%s/t", dir);
    for (int threads = 1; threads <= 3; threads += 2) {
        trace_chakra_reader_t *x = NULL;
        step_workload_t p;
        assert_int_equal(chakra_reader_open_threads(prefix, threads, &x, err, sizeof err), TRACE_OK);
        assert_int_equal(trace_chakra_reader_rank(x, 0, &p, err, sizeof err), TRACE_OK);
        step_workload_free(&p);
        assert_int_equal(trace_chakra_reader_rank(x, 2, &p, err, sizeof err), TRACE_EINVAL);
        assert_string_equal(err, "reader: rank 2: out of order (the next rank is 1 of 0..3)");
        assert_null(p.nodes);
        assert_int_equal(trace_chakra_reader_rank(x, 1, &p, err, sizeof err), TRACE_EINVAL);
        assert_string_equal(err, "reader: an earlier error ended the read (only close is allowed)");
        trace_chakra_reader_close(x);
        /* closed before the end, ranks still being decoded */
        assert_int_equal(chakra_reader_open_threads(prefix, threads, &x, err, sizeof err), TRACE_OK);
        trace_chakra_reader_close(x);
    }
    trace_chakra_reader_close(NULL);
    /* open's errors are the whole read's */
    trace_chakra_reader_t *x = (trace_chakra_reader_t *)&b;
    snprintf(prefix, sizeof prefix, "%s/none", dir);
    assert_int_equal(trace_chakra_reader_open(prefix, &x, err, sizeof err), TRACE_EINVAL);
    assert_null(x);
    char err2[512];
    step_workload_t w;
    assert_int_equal(trace_chakra_read(prefix, &w, err2, sizeof err2), TRACE_EINVAL);
    assert_string_equal(err, err2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_astra_sim),
        cmocka_unit_test(test_written),
        cmocka_unit_test(test_marker_lies),
        cmocka_unit_test(test_order),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
