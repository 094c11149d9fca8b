/* traces/test_chakra_read.c - the Chakra codec on good input: ASTRA-sim's own all-reduce
 * microbenchmark ETs (tests/data/chakra, 8 and 64 ranks, 1 GiB) read by directory and by prefix;
 * write -> read gives the same workload for the hand-built sample (every node kind, collective and
 * group) and for 60 seeded random DAGs; the files are ordinary Chakra records (the sample's bytes
 * decode with the varint framing and carry the feeder's attributes); writing replaces a larger
 * workload's files without leaving temporaries; groups keep their order, names and rank order; the
 * writer one rank at a time (order, groups, early close, abort). */
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

#include "chakra_sample.h"
#include "trace_chakra.h"

#define ASTRA STEPSIM_DATA_DIR "/chakra/astra-sim/all_reduce"

static char *temp_dir(const char *tag) {
    char *p = malloc(4096);
    assert_non_null(p);
    assert_int_equal(cs_temp_dir(p, 4096, tag), 0);
    return p;
}

static void rm_dir(const char *dir) {
    cs_clear_dir(dir);
    rmdir(dir);
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Entries of dir, hidden ones (temporary files) included. */
static int count_any(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void check_astra(const step_workload_t *w, int32_t n) {
    assert_int_equal(w->n_ranks, n);
    assert_int_equal(w->n_groups, 0);
    for (int32_t r = 0; r < n; r++) {
        assert_int_equal(w->rank_nodes_offset[r], r);
        const step_wl_node_t *nd = &w->nodes[r];
        assert_int_equal(nd->id, (uint64_t)r); /* the generator numbers nodes across files */
        assert_int_equal(nd->kind, STEP_WL_COLL);
        assert_int_equal(nd->coll, STEP_WL_ALLREDUCE);
        assert_true(nd->comm_bytes == 1073741824.0);
        assert_int_equal(nd->group, -1);
        assert_int_equal(nd->n_deps, 0);
        assert_int_equal(nd->peer, -1);
        char name[64];
        snprintf(name, sizeof name, "all_reduce_%dnpus_1024MB", n);
        assert_string_equal(step_workload_name(w, nd->name), name);
    }
    assert_int_equal(w->rank_nodes_offset[n], n);
}

static void test_astra_fixtures(void **state) {
    (void)state;
    char err[512] = "";
    step_workload_t w;
    /* a directory */
    assert_int_equal(trace_chakra_read(ASTRA "/64npus_1024MB", &w, err, sizeof err), TRACE_OK);
    check_astra(&w, 64);
    step_workload_free(&w);
    /* a prefix */
    assert_int_equal(trace_chakra_read(ASTRA "/8npus_1024MB/all_reduce", &w, err, sizeof err), TRACE_OK);
    check_astra(&w, 8);
    step_workload_free(&w);
}

static void roundtrip(const step_workload_t *w, const char *tag) {
    char *dir = temp_dir(tag);
    char err[512] = "";
    int rc = trace_chakra_write(dir, "wl", w, err, sizeof err);
    if (rc != TRACE_OK)
        fail_msg("write: %s", err);
    step_workload_t back;
    char prefix[4200];
    snprintf(prefix, sizeof prefix, "%s/wl", dir);
    rc = trace_chakra_read(prefix, &back, err, sizeof err);
    if (rc != TRACE_OK)
        fail_msg("read: %s", err);
    assert_int_equal(cs_compare(w, &back), 0);
    step_workload_free(&back);
    /* the directory form reads the same (the comm_group.json beside is not an .et file) */
    rc = trace_chakra_read(dir, &back, err, sizeof err);
    if (rc != TRACE_OK)
        fail_msg("read dir: %s", err);
    assert_int_equal(cs_compare(w, &back), 0);
    step_workload_free(&back);
    /* one file per rank (+ the group file), no temporaries left */
    assert_int_equal(count_entries(dir), w->n_ranks + (w->n_groups > 0));
    rm_dir(dir);
    free(dir);
}

static void test_roundtrip_sample(void **state) {
    (void)state;
    cs_build_t b;
    cs_sample(&b);
    char err[512] = "";
    assert_int_equal(trace_chakra_check(&b.w, err, sizeof err), TRACE_OK);
    roundtrip(&b.w, "sample");
    step_workload_free(&b.w);
}

static void test_roundtrip_random(void **state) {
    (void)state;
    char err[512] = "";
    for (uint64_t seed = 1; seed <= 60; seed++) {
        cs_build_t b;
        cs_random(&b, seed);
        if (trace_chakra_check(&b.w, err, sizeof err) != TRACE_OK)
            fail_msg("seed %llu: %s", (unsigned long long)seed, err);
        roundtrip(&b.w, "random");
        step_workload_free(&b.w);
    }
}

/* Decode the varint-framed records of a file: their count, and whether bytes match a pattern. */
static int records(const char *path, int *n_records) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char buf[1 << 16];
    const size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    size_t pos = 0;
    *n_records = 0;
    while (pos < len) {
        uint64_t v = 0;
        int shift = 0;
        while (buf[pos] & 0x80)
            v |= (uint64_t)(buf[pos++] & 0x7f) << shift, shift += 7;
        v |= (uint64_t)buf[pos++] << shift;
        pos += v;
        (*n_records)++;
    }
    return pos == len;
}

static int file_has(const char *path, const char *needle) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char buf[1 << 16];
    const size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    const size_t nl = strlen(needle);
    for (size_t i = 0; i + nl <= len; i++)
        if (memcmp(buf + i, needle, nl) == 0)
            return 1;
    return 0;
}

static void test_files(void **state) {
    (void)state;
    cs_build_t b;
    cs_sample(&b);
    char *dir = temp_dir("files");
    char err[512] = "", path[4300];
    assert_int_equal(trace_chakra_write(dir, "s", &b.w, err, sizeof err), TRACE_OK);
    for (int32_t r = 0; r < 4; r++) {
        snprintf(path, sizeof path, "%s/s.%d.et", dir, r);
        int n;
        assert_true(records(path, &n));
        assert_int_equal(n, 1 + (int)(b.w.rank_nodes_offset[r + 1] - b.w.rank_nodes_offset[r]));
        /* the names ASTRA-sim's workload layer reads */
        assert_true(file_has(path, "is_cpu_op"));
        assert_true(file_has(path, "comm_type"));
        assert_true(file_has(path, "comm_size"));
        assert_true(file_has(path, "pg_name"));
        assert_true(file_has(path, "pg_ranks:3"));
        assert_true(file_has(path, "0.0.4"));
        assert_int_equal(file_has(path, "comm_src"), r == 0 || r == 2 || r == 1 || r == 3);
    }
    snprintf(path, sizeof path, "%s/s.comm_group.json", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char json[256] = "";
    assert_true(fread(json, 1, sizeof json - 1, f) > 0);
    fclose(f);
    assert_string_equal(json,
                        "{\n  \"1\": [0, 1],\n  \"2\": [2, 3],\n  \"3\": [3, 1],\n  \"4\": [0, 2]\n}\n");

    /* a smaller workload written over a larger one leaves only its own ranks */
    cs_build_t big;
    cs_init(&big, 6, 6, 1, 0, 0);
    for (int32_t r = 0; r < 6; r++) {
        cs_rank(&big, r);
        cs_node(&big, r, 1, STEP_WL_COMPUTE, "c", 0, NULL)->duration_s = 1e-3;
    }
    char *dir2 = temp_dir("stale");
    assert_int_equal(trace_chakra_write(dir2, "s", &big.w, err, sizeof err), TRACE_OK);
    assert_int_equal(count_entries(dir2), 6);
    assert_int_equal(trace_chakra_write(dir2, "s", &b.w, err, sizeof err), TRACE_OK);
    assert_int_equal(count_entries(dir2), 5);
    /* and a workload without groups drops the group file of an earlier one */
    assert_int_equal(trace_chakra_write(dir2, "s", &big.w, err, sizeof err), TRACE_OK);
    assert_int_equal(count_entries(dir2), 6);
    assert_int_equal(trace_chakra_write(dir2, "s", &b.w, err, sizeof err), TRACE_OK);
    step_workload_t back;
    assert_int_equal(trace_chakra_read(dir2, &back, err, sizeof err), TRACE_OK);
    assert_int_equal(cs_compare(&b.w, &back), 0);
    step_workload_free(&back);
    step_workload_free(&big.w);
    step_workload_free(&b.w);
    rm_dir(dir);
    rm_dir(dir2);
    free(dir);
    free(dir2);
}

/* The writer one rank at a time: the files are those trace_chakra_write makes (read back equal);
 * ranks out of order, groups that change between ranks and closing early are refused, and an
 * aborted or failed writer leaves nothing behind (not even the directory it would have made). */
static void test_writer_by_rank(void **state) {
    (void)state;
    cs_build_t b;
    cs_sample(&b);
    char *dir = temp_dir("byrank");
    char err[512] = "", sub[4200];
    snprintf(sub, sizeof sub, "%s/out", dir);
    trace_chakra_writer_t *x = NULL;
    assert_int_equal(trace_chakra_writer_open(sub, "s", b.w.n_ranks, 0, &x, err, sizeof err), TRACE_OK);
    for (int32_t r = 0; r < b.w.n_ranks; r++)
        assert_int_equal(trace_chakra_writer_rank(x, &b.w, r, err, sizeof err), TRACE_OK);
    assert_int_equal(trace_chakra_writer_close(x, err, sizeof err), TRACE_OK);
    step_workload_t back;
    assert_int_equal(trace_chakra_read(sub, &back, err, sizeof err), TRACE_OK);
    assert_int_equal(cs_compare(&b.w, &back), 0);
    step_workload_free(&back);
    assert_int_equal(count_entries(sub), 5); /* 4 ranks and the groups */
    rm_dir(sub);

    /* out of order */
    assert_int_equal(trace_chakra_writer_open(sub, "s", b.w.n_ranks, 0, &x, err, sizeof err), TRACE_OK);
    assert_int_equal(trace_chakra_writer_rank(x, &b.w, 1, err, sizeof err), TRACE_EINVAL);
    assert_non_null(strstr(err, "expected rank 0"));
    assert_int_equal(trace_chakra_writer_close(x, err, sizeof err), TRACE_EINVAL);
    assert_non_null(strstr(err, "0 of 4 ranks written"));
    assert_int_equal(access(sub, F_OK), -1); /* never made */

    /* groups that change after rank 0; then an abort removes rank 0's temporary file */
    assert_int_equal(trace_chakra_writer_open(sub, "s", b.w.n_ranks, 0, &x, err, sizeof err), TRACE_OK);
    assert_int_equal(trace_chakra_writer_rank(x, &b.w, 0, err, sizeof err), TRACE_OK);
    assert_int_equal(count_any(sub), 1); /* the temporary file */
    b.w.group_ranks[0] ^= 1;
    assert_int_equal(trace_chakra_writer_rank(x, &b.w, 1, err, sizeof err), TRACE_EINVAL);
    assert_non_null(strstr(err, "rank 1: groups: not the groups of rank 0"));
    b.w.group_ranks[0] ^= 1;
    assert_int_equal(trace_chakra_writer_rank(x, &b.w, 1, err, sizeof err), TRACE_EINVAL);
    assert_non_null(strstr(err, "an earlier rank failed"));
    trace_chakra_writer_abort(x);
    assert_int_equal(count_any(sub), 0);

    /* closing before every rank is written fails and removes what was written */
    assert_int_equal(trace_chakra_writer_open(sub, "s", b.w.n_ranks, 0, &x, err, sizeof err), TRACE_OK);
    assert_int_equal(trace_chakra_writer_rank(x, &b.w, 0, err, sizeof err), TRACE_OK);
    assert_int_equal(trace_chakra_writer_close(x, err, sizeof err), TRACE_EINVAL);
    assert_non_null(strstr(err, "1 of 4 ranks written"));
    assert_int_equal(count_any(sub), 0);
    trace_chakra_writer_abort(NULL);

    /* a workload of another rank count, a bad name */
    assert_int_equal(trace_chakra_writer_open(sub, "s", b.w.n_ranks + 1, 0, &x, err, sizeof err), TRACE_OK);
    assert_int_equal(trace_chakra_writer_rank(x, &b.w, 0, err, sizeof err), TRACE_EINVAL);
    assert_non_null(strstr(err, "n_ranks: 4; expected 5"));
    trace_chakra_writer_abort(x);
    assert_int_equal(trace_chakra_writer_open(sub, "a/b", 4, 0, &x, err, sizeof err), TRACE_EINVAL);
    assert_null(x);
    step_workload_free(&b.w);
    rm_dir(sub);
    rm_dir(dir);
    free(dir);
}

/* Whole-microsecond durations when the exact attribute is absent, and the model's duration (-1)
 * when a compute node has work but no duration: checked on the files ASTRA-sim-style writers make,
 * simulated here by a workload whose durations are whole microseconds. */
static void test_durations(void **state) {
    (void)state;
    cs_build_t b;
    cs_init(&b, 1, 3, 1, 0, 0);
    cs_rank(&b, 0);
    cs_node(&b, 0, 0, STEP_WL_COMPUTE, "a", 0, NULL)->duration_s = 7e-6;
    step_wl_node_t *nd = cs_node(&b, 0, 1, STEP_WL_COMPUTE, "b", 0, NULL);
    nd->duration_s = -1;
    nd->flops = 1e9;
    cs_node(&b, 0, 2, STEP_WL_COMPUTE, "c", 0, NULL)->duration_s = 0.4e-6; /* rounds to 0 us */
    roundtrip(&b.w, "dur");
    step_workload_free(&b.w);
}

/* Groups come back in their order, with their names and their ranks in their order; a rank
 * outside a group may use all ranks meanwhile. */
static void test_group_order(void **state) {
    (void)state;
    cs_build_t b;
    cs_init(&b, 3, 3, 1, 2, 4);
    cs_group(&b, 0, "pair", 2, (const int32_t[]){2, 0});
    cs_group(&b, 1, "unused", 2, (const int32_t[]){1, 2});
    for (int32_t r = 0; r < 3; r++) {
        cs_rank(&b, r);
        step_wl_node_t *nd = cs_node(&b, r, 5, STEP_WL_COLL, "ar", 0, NULL);
        nd->coll = STEP_WL_ALLREDUCE;
        nd->comm_bytes = 1024;
        nd->group = r == 1 ? -1 : 0;
    }
    roundtrip(&b.w, "groups");
    step_workload_free(&b.w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_by_rank),
        cmocka_unit_test(test_astra_fixtures),
        cmocka_unit_test(test_roundtrip_sample),
        cmocka_unit_test(test_roundtrip_random),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_group_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
