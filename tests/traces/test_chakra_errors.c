/* traces/test_chakra_errors.c - Chakra ETs encoded byte by byte here (a small protobuf encoder, so
 * that every field, type and malformation is under the test's control): how foreign files are
 * mapped (attribute value kinds, whole-microsecond and unknown durations, memory and metadata nodes,
 * data and control dependencies, process groups inferred from pg_name or defined in the metadata),
 * and every kind of bad input with its exact one-line message: truncated varint or record,
 * undecodable record, empty file, unknown node type, dangling dependency, cycle, duplicate id,
 * missing rank file, two workloads in a directory, sizes that overflow, negative, NaN and infinite
 * numbers, peers out of range, unsupported collectives, a rank outside its process group; and the
 * rules trace_chakra_check applies to a workload before writing it. */
#include <dirent.h>
#include <math.h>
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
#include "chakra_sample.h"
#include "trace_chakra.h"

/* ---- a protobuf encoder ---------------------------------------------------------------------- */

typedef struct pb {
    uint8_t b[8192];
    size_t n;
} pb_t;

static void pv(pb_t *p, uint64_t v) {
    do {
        p->b[p->n++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        v >>= 7;
    } while (v);
}
static void fvar(pb_t *p, int field, uint64_t v) {
    pv(p, (uint64_t)field << 3);
    pv(p, v);
}
static void fbytes(pb_t *p, int field, const void *d, size_t n) {
    pv(p, (uint64_t)field << 3 | 2);
    pv(p, n);
    memcpy(p->b + p->n, d, n);
    p->n += n;
}
static void fstr(pb_t *p, int field, const char *s) {
    fbytes(p, field, s, strlen(s));
}
static void fmsg(pb_t *p, int field, const pb_t *m) {
    fbytes(p, field, m->b, m->n);
}
static void fdouble(pb_t *p, int field, double d) {
    pv(p, (uint64_t)field << 3 | 1);
    memcpy(p->b + p->n, &d, 8);
    p->n += 8;
}
static void rec(pb_t *file, const pb_t *m) {
    pv(file, m->n);
    memcpy(file->b + file->n, m->b, m->n);
    file->n += m->n;
}

/* AttributeProto: name = 1, double_val = 3, int32_val = 7, int32_list = 8, int64_val = 9,
 * uint64_val = 13, bool_val = 27, string_val = 29, doc_string = 2 */
static pb_t a_i64(const char *name, int64_t v) {
    pb_t a = {.n = 0};
    fstr(&a, 1, name);
    fvar(&a, 9, (uint64_t)v);
    return a;
}
static pb_t a_i32(const char *name, int32_t v) {
    pb_t a = {.n = 0};
    fstr(&a, 1, name);
    fvar(&a, 7, (uint64_t)(int64_t)v); /* negative int32: sign-extended, as protobuf does */
    return a;
}
static pb_t a_u64(const char *name, uint64_t v) {
    pb_t a = {.n = 0};
    fstr(&a, 1, name);
    fvar(&a, 13, v);
    return a;
}
static pb_t a_dbl(const char *name, double v) {
    pb_t a = {.n = 0};
    fstr(&a, 1, name);
    fdouble(&a, 3, v);
    return a;
}
static pb_t a_str(const char *name, const char *v) {
    pb_t a = {.n = 0};
    fstr(&a, 1, name);
    fstr(&a, 29, v);
    return a;
}
static pb_t a_ranks(const char *name, const char *doc, int n, const int32_t *r) {
    pb_t a = {.n = 0}, list = {.n = 0}, packed = {.n = 0};
    for (int i = 0; i < n; i++)
        pv(&packed, (uint64_t)(int64_t)r[i]);
    fmsg(&list, 1, &packed);
    fstr(&a, 1, name);
    if (doc)
        fstr(&a, 2, doc);
    fmsg(&a, 8, &list);
    return a;
}

static void meta(pb_t *file, int na, const pb_t *attrs) {
    pb_t m = {.n = 0};
    fstr(&m, 1, "0.0.4");
    for (int i = 0; i < na; i++)
        fmsg(&m, 2, &attrs[i]);
    rec(file, &m);
}

enum { T_INVALID, T_META, T_LOAD, T_STORE, T_COMP, T_SEND, T_RECV, T_COLL };

/* Node: id = 1, name = 2, type = 3, ctrl_deps = 4, data_deps = 5, duration_micros = 7, attr = 10 */
static void node(pb_t *file, uint64_t id, int type, int nd, const uint64_t *data, int nc,
                 const uint64_t *ctrl, uint64_t dur_us, int na, const pb_t *attrs) {
    pb_t m = {.n = 0}, packed = {.n = 0};
    fvar(&m, 1, id);
    fstr(&m, 2, "n");
    fvar(&m, 3, (uint64_t)type);
    for (int i = 0; i < nc; i++)
        pv(&packed, ctrl[i]);
    if (nc)
        fmsg(&m, 4, &packed);
    packed.n = 0;
    for (int i = 0; i < nd; i++)
        pv(&packed, data[i]);
    if (nd)
        fmsg(&m, 5, &packed);
    if (dur_us)
        fvar(&m, 7, dur_us);
    for (int i = 0; i < na; i++)
        fmsg(&m, 10, &attrs[i]);
    rec(file, &m);
}

/* ---- files ----------------------------------------------------------------------------------- */

static char dir[512];

static void clear_dir(void) {
    cs_clear_dir(dir);
}

static void put_file(const char *name, const pb_t *p) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p->b, 1, p->n, f), p->n);
    fclose(f);
}

static void put_rank(int r, const pb_t *p) {
    char name[64];
    snprintf(name, sizeof name, "t.%d.et", r);
    put_file(name, p);
}

static int read_t(step_workload_t *w, char *err, size_t n) {
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s/t", dir);
    return trace_chakra_read(prefix, w, err, n);
}

/* Read dir/t.*.et; expect TRACE_EINVAL and "<dir>/" + want. */
static void expect_err(const char *want) {
    step_workload_t w;
    char err[512] = "", full[1024];
    const int rc = read_t(&w, err, sizeof err);
    snprintf(full, sizeof full, "%s/%s", dir, want);
    if (rc != TRACE_EINVAL || strcmp(err, full) != 0)
        fail_msg("rc %d\n got: %s\nwant: %s", rc, err, full);
    assert_null(strchr(err, '\n'));
    assert_int_equal(w.n_ranks, 0);
    assert_null(w.nodes);
}

/* One rank file holding the metadata and the given node. */
static void one_node(uint64_t id, int type, uint64_t dur, int na, const pb_t *attrs) {
    clear_dir();
    pb_t f = {.n = 0};
    meta(&f, 0, NULL);
    node(&f, id, type, 0, NULL, 0, NULL, dur, na, attrs);
    put_rank(0, &f);
}

static int setup(void **state) {
    (void)state;
    return cs_temp_dir(dir, sizeof dir, "err");
}

static int teardown(void **state) {
    (void)state;
    clear_dir();
    rmdir(dir);
    return 0;
}

/* ---- foreign files, good ---------------------------------------------------------------------- */

static void test_mapping(void **state) {
    (void)state;
    clear_dir();
    pb_t f0 = {.n = 0}, f1 = {.n = 0};
    meta(&f0, 0, NULL);
    /* rank 0: load (memory: zero time) -> comp 7 us -> comp by work only -> send to 1; an all-reduce
     * in group "5" after both computes (data and control deps, one repeated) */
    node(&f0, 10, T_LOAD, 0, NULL, 0, NULL, 3, 1, (pb_t[]){a_u64("tensor_size", 4096)});
    node(&f0, 11, T_COMP, 1, (const uint64_t[]){10}, 0, NULL, 7, 2,
         (pb_t[]){a_i64("num_ops", 1000), a_u64("tensor_size", 64)});
    node(&f0, 12, T_COMP, 1, (const uint64_t[]){11}, 0, NULL, 0, 1, (pb_t[]){a_i64("num_ops", 5000000)});
    node(&f0, 13, T_SEND, 1, (const uint64_t[]){12}, 0, NULL, 0, 4,
         (pb_t[]){a_i32("comm_src", 0), a_i32("comm_dst", 1), a_i32("comm_tag", 3), a_i64("comm_size", 100)});
    node(&f0, 14, T_COLL, 2, (const uint64_t[]){11, 12}, 2, (const uint64_t[]){12, 13}, 0, 4,
         (pb_t[]){a_i64("comm_type", 0), a_i64("comm_size", 1 << 20), a_str("pg_name", "5"),
                  a_str("involved_dim", "ignored")});
    /* exact duration inconsistent with duration_micros: the microseconds win */
    node(&f0, 15, T_COMP, 0, NULL, 0, NULL, 9, 1, (pb_t[]){a_dbl("stepsim_duration_s", 1.0)});
    node(&f0, 16, T_META, 0, NULL, 0, NULL, 0, 0, NULL);
    put_rank(0, &f0);
    meta(&f1, 0, NULL);
    /* rank 1: recv (comm_size as uint64 and int32 kinds accepted), the all-reduce in group "5",
     * a reduce-scatter on "0" (all ranks), an all-gather with an empty pg_name */
    node(&f1, 0, T_RECV, 0, NULL, 0, NULL, 0, 3,
         (pb_t[]){a_i32("comm_src", 0), a_i32("comm_tag", 3), a_u64("comm_size", 100)});
    node(&f1, 1, T_COLL, 1, (const uint64_t[]){0}, 0, NULL, 0, 3,
         (pb_t[]){a_i64("comm_type", 0), a_i32("comm_size", 1 << 20), a_str("pg_name", "5")});
    node(&f1, 2, T_COLL, 1, (const uint64_t[]){1}, 0, NULL, 0, 3,
         (pb_t[]){a_i64("comm_type", 7), a_i64("comm_size", 8), a_str("pg_name", "0")});
    node(&f1, 3, T_COLL, 1, (const uint64_t[]){2}, 0, NULL, 0, 3,
         (pb_t[]){a_i64("comm_type", 2), a_i64("comm_size", 8), a_str("pg_name", "")});
    node(&f1, 4, T_COLL, 1, (const uint64_t[]){3}, 0, NULL, 0, 2,
         (pb_t[]){a_i64("comm_type", 6), a_str("pg_name", "7")});
    node(&f1, 5, T_COLL, 0, NULL, 0, NULL, 0, 1, (pb_t[]){a_i64("comm_type", 5)});
    put_rank(1, &f1);
    step_workload_t w;
    char err[512] = "";
    if (read_t(&w, err, sizeof err) != TRACE_OK)
        fail_msg("%s", err);
    assert_int_equal(w.n_ranks, 2);
    assert_int_equal(w.rank_nodes_offset[1], 7);
    assert_int_equal(w.rank_nodes_offset[2], 13);
    const step_wl_node_t *n = w.nodes;
    assert_int_equal(n[0].kind, STEP_WL_COMPUTE); /* MEM_LOAD_NODE: zero time, work ignored */
    assert_true(n[0].duration_s == 0 && n[0].mem_bytes == 0 && n[0].flops == 0);
    assert_true(n[1].duration_s == 7e-6 && n[1].flops == 1000 && n[1].mem_bytes == 64);
    assert_true(n[2].duration_s == -1 && n[2].flops == 5e6); /* no duration: the model's */
    assert_int_equal(n[3].kind, STEP_WL_SEND);
    assert_int_equal(n[3].peer, 1);
    assert_int_equal(n[3].tag, 3);
    assert_true(n[3].comm_bytes == 100);
    assert_int_equal(n[4].kind, STEP_WL_COLL);
    assert_int_equal(n[4].coll, STEP_WL_ALLREDUCE);
    assert_int_equal(n[4].n_deps, 3); /* 11, 12 (data), 13 (control; 12 repeated there) */
    assert_int_equal(w.deps[n[4].deps_offset], 11);
    assert_int_equal(w.deps[n[4].deps_offset + 1], 12);
    assert_int_equal(w.deps[n[4].deps_offset + 2], 13);
    assert_true(n[5].duration_s == 9e-6);
    assert_int_equal(n[6].kind, STEP_WL_COMPUTE);
    assert_true(n[6].duration_s == 0);
    const step_wl_node_t *m = w.nodes + 7;
    assert_int_equal(m[0].kind, STEP_WL_RECV);
    assert_int_equal(m[0].peer, 0);
    assert_int_equal(m[1].group, n[4].group);
    assert_int_equal(m[2].coll, STEP_WL_REDUCESCATTER);
    assert_int_equal(m[2].group, -1);
    assert_int_equal(m[3].coll, STEP_WL_ALLGATHER);
    assert_int_equal(m[3].group, -1);
    assert_int_equal(m[4].coll, STEP_WL_ALLTOALL);
    assert_true(m[4].comm_bytes == 0);
    assert_int_equal(m[5].coll, STEP_WL_BROADCAST);
    /* groups inferred from pg_name: "5" = {0, 1}, "7" = {1}, in order of first use */
    assert_int_equal(w.n_groups, 2);
    assert_string_equal(w.groups[0].name, "5");
    assert_int_equal(w.groups[0].n_ranks, 2);
    assert_int_equal(w.group_ranks[w.groups[0].ranks_offset], 0);
    assert_int_equal(w.group_ranks[w.groups[0].ranks_offset + 1], 1);
    assert_string_equal(w.groups[1].name, "7");
    assert_int_equal(w.groups[1].n_ranks, 1);
    assert_int_equal(n[4].group, 0);
    assert_int_equal(m[4].group, 1);
    assert_int_equal(trace_chakra_check(&w, err, sizeof err), TRACE_OK);
    step_workload_free(&w);
}

/* A rank file with only its GlobalMetadata: a rank without nodes (no node, no dependency array). */
static void test_empty_ranks(void **state) {
    (void)state;
    clear_dir();
    pb_t f = {.n = 0};
    meta(&f, 0, NULL);
    put_rank(0, &f);
    put_rank(1, &f);
    step_workload_t w;
    char err[512] = "";
    if (read_t(&w, err, sizeof err) != TRACE_OK)
        fail_msg("%s", err);
    assert_int_equal(w.n_ranks, 2);
    assert_int_equal(w.rank_nodes_offset[2], 0);
    assert_int_equal(trace_chakra_check(&w, err, sizeof err), TRACE_OK);
    step_workload_free(&w);
    /* empty ranks around one with a node: the offsets 0, 0, 1, 1 */
    clear_dir();
    put_rank(0, &f);
    put_rank(2, &f);
    node(&f, 7, T_COMP, 0, NULL, 0, NULL, 3, 0, NULL);
    put_rank(1, &f);
    if (read_t(&w, err, sizeof err) != TRACE_OK)
        fail_msg("%s", err);
    assert_int_equal(w.n_ranks, 3);
    assert_int_equal(w.rank_nodes_offset[1], 0);
    assert_int_equal(w.rank_nodes_offset[2], 1);
    assert_int_equal(w.rank_nodes_offset[3], 1);
    assert_int_equal(w.nodes[0].id, 7);
    step_workload_free(&w);
}

static void test_metadata_groups(void **state) {
    (void)state;
    clear_dir();
    for (int r = 0; r < 3; r++) {
        pb_t f = {.n = 0};
        if (r != 1) /* rank 1's file has no definition: rank 0's holds */
            meta(&f, 1, (pb_t[]){a_ranks("pg_ranks:4", "tp", 2, (const int32_t[]){2, 0})});
        else
            meta(&f, 0, NULL);
        if (r != 1)
            node(&f, 1, T_COLL, 0, NULL, 0, NULL, 0, 3,
                 (pb_t[]){a_i64("comm_type", 0), a_i64("comm_size", 8), a_str("pg_name", "4")});
        put_rank(r, &f);
    }
    step_workload_t w;
    char err[512] = "";
    if (read_t(&w, err, sizeof err) != TRACE_OK)
        fail_msg("%s", err);
    assert_int_equal(w.n_groups, 1);
    assert_string_equal(w.groups[0].name, "tp");
    assert_int_equal(w.group_ranks[0], 2);
    assert_int_equal(w.group_ranks[1], 0);
    step_workload_free(&w);
    /* rank 1 uses it without being a member */
    pb_t f = {.n = 0};
    meta(&f, 0, NULL);
    node(&f, 9, T_COLL, 0, NULL, 0, NULL, 0, 3,
         (pb_t[]){a_i64("comm_type", 0), a_i64("comm_size", 8), a_str("pg_name", "4")});
    put_rank(1, &f);
    expect_err("t.1.et: node 9: pg_name: \"4\": rank 1 is not in this process group");
    /* a definition that differs between files */
    f.n = 0;
    meta(&f, 1, (pb_t[]){a_ranks("pg_ranks:4", "tp", 2, (const int32_t[]){0, 2})});
    put_rank(1, &f);
    expect_err("t.1.et: metadata: pg_ranks:4: 2 ranks: differs from the definition in an earlier file");
    f.n = 0;
    meta(&f, 1, (pb_t[]){a_ranks("pg_ranks:4", "tp", 2, (const int32_t[]){0, 3})});
    put_rank(1, &f);
    expect_err("t.1.et: metadata: pg_ranks:4: 3: not a rank (0..2)");
    f.n = 0;
    meta(&f, 1, (pb_t[]){a_ranks("pg_ranks:0", "all", 1, (const int32_t[]){0})});
    put_rank(0, &f);
    expect_err("t.0.et: metadata: pg_ranks:0: \"0\": process group \"\" and \"0\" mean all ranks");
}

/* ---- bad input -------------------------------------------------------------------------------- */

static void test_framing(void **state) {
    (void)state;
    clear_dir();
    put_rank(0, &(pb_t){.n = 0});
    expect_err("t.0.et: record 0 (byte 0): GlobalMetadata: (missing): empty file");
    pb_t f = {.n = 0};
    meta(&f, 0, NULL);
    const size_t meta_len = f.n;
    f.b[f.n++] = 0x80; /* a varint that never ends */
    put_rank(0, &f);
    char want[256];
    snprintf(want, sizeof want,
             "t.0.et: record 1 (byte %zu): length: (truncated varint): file ends inside it", meta_len);
    expect_err(want);
    f.n = meta_len;
    pv(&f, 50);
    f.b[f.n++] = 0x08;
    put_rank(0, &f);
    snprintf(want, sizeof want, "t.0.et: record 1 (byte %zu): length: 50: truncated (1 bytes left)",
             meta_len);
    expect_err(want);
    f.n = meta_len;
    pv(&f, (uint64_t)1 << 33);
    put_rank(0, &f);
    snprintf(want, sizeof want,
             "t.0.et: record 1 (byte %zu): length: 8589934592: overflows (over 2^32-1 bytes)", meta_len);
    expect_err(want);
    f.n = meta_len;
    for (int i = 0; i < 11; i++)
        f.b[f.n++] = 0xff;
    put_rank(0, &f);
    snprintf(want, sizeof want, "t.0.et: record 1 (byte %zu): length: (over 10 bytes): overflows 64 bits",
             meta_len);
    expect_err(want);
    f.n = meta_len;
    const uint8_t junk[] = {0x0f, 0x01, 0x02}; /* wire type 7 does not exist */
    pv(&f, sizeof junk);
    memcpy(f.b + f.n, junk, sizeof junk);
    f.n += sizeof junk;
    put_rank(0, &f);
    snprintf(want, sizeof want, "t.0.et: record 1 (byte %zu): Node: 3 bytes: not a valid Node message",
             meta_len);
    expect_err(want);
    f.n = 0;
    pv(&f, sizeof junk);
    memcpy(f.b + f.n, junk, sizeof junk);
    f.n += sizeof junk;
    put_rank(0, &f);
    expect_err("t.0.et: record 0 (byte 0): GlobalMetadata: 3 bytes: not a valid GlobalMetadata message");
}

static void test_files(void **state) {
    (void)state;
    clear_dir();
    pb_t f = {.n = 0};
    meta(&f, 0, NULL);
    put_rank(0, &f);
    put_rank(2, &f);
    expect_err("t.1.et: rank file: (missing): ranks 0..2 expected, rank 2 found");
    clear_dir();
    put_rank(1, &f);
    expect_err("t.0.et: rank file: (missing): ranks 0..1 expected, rank 1 found");
    clear_dir();
    step_workload_t w;
    char err[512], want[2048];
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s/t", dir);
    assert_int_equal(trace_chakra_read(prefix, &w, err, sizeof err), TRACE_EINVAL);
    snprintf(want, sizeof want, "%s/t: no file %s/t.0.et (nor a directory of that name)", dir, dir);
    assert_string_equal(err, want);
    put_rank(0, &f);
    put_file("u.0.et", &f);
    assert_int_equal(trace_chakra_read(dir, &w, err, sizeof err), TRACE_EINVAL);
    assert_non_null(strstr(err, ".*.et: two workloads in one directory"));
    assert_int_equal(strncmp(err, dir, strlen(dir)), 0);
    clear_dir();
    assert_int_equal(trace_chakra_read(dir, &w, err, sizeof err), TRACE_EINVAL);
    snprintf(want, sizeof want, "%s: no file NAME.<rank>.et in this directory", dir);
    assert_string_equal(err, want);
    /* names that only look like rank files are not rank files */
    put_file("t.01.et", &f);
    put_file("t.x.et", &f);
    put_file("t.0.et.tmp", &f);
    assert_int_equal(trace_chakra_read(prefix, &w, err, sizeof err), TRACE_EINVAL);
    snprintf(want, sizeof want, "%s/t: no file %s/t.0.et (nor a directory of that name)", dir, dir);
    assert_string_equal(err, want);
}

static void test_nodes(void **state) {
    (void)state;
    one_node(3, 12, 0, 0, NULL);
    expect_err("t.0.et: node 3: type: 12: unknown node type (0..7)");
    one_node(3, T_COLL, 0, 1, (pb_t[]){a_i64("comm_size", -5)});
    expect_err("t.0.et: node 3: comm_size: -5: negative");
    one_node(3, T_COLL, 0, 2, (pb_t[]){a_i64("comm_type", 0), a_u64("comm_size", (1ULL << 63) + 1)});
    expect_err("t.0.et: node 3: comm_size: 9223372036854775809: overflows (2^63 or more)");
    one_node(3, T_COMP, 0, 1, (pb_t[]){a_dbl("num_ops", NAN)});
    expect_err("t.0.et: node 3: num_ops: nan: not a finite number");
    one_node(3, T_COMP, 0, 1, (pb_t[]){a_dbl("tensor_size", -INFINITY)});
    expect_err("t.0.et: node 3: tensor_size: -inf: not a finite number");
    one_node(3, T_COMP, 0, 1, (pb_t[]){a_dbl("num_ops", -2.5)});
    expect_err("t.0.et: node 3: num_ops: -2.5: negative");
    one_node(3, T_COMP, 0, 1, (pb_t[]){a_dbl("num_ops", 1e19)});
    expect_err("t.0.et: node 3: num_ops: 1e+19: overflows (2^63 or more)");
    one_node(3, T_COMP, 0, 1, (pb_t[]){a_dbl("stepsim_duration_s", INFINITY)});
    expect_err("t.0.et: node 3: stepsim_duration_s: inf: not a duration in 0..9.2e+06 s");
    one_node(3, T_COMP, 0, 1, (pb_t[]){a_dbl("stepsim_duration_s", -1e-3)});
    expect_err("t.0.et: node 3: stepsim_duration_s: -0.001: not a duration in 0..9.2e+06 s");
    one_node(3, T_COMP, 0, 1, (pb_t[]){a_i64("stepsim_duration_s", 5)});
    expect_err("t.0.et: node 3: stepsim_duration_s: 5: not a double");
    one_node(3, T_COMP, 10000000000000ULL, 0, NULL);
    expect_err("t.0.et: node 3: duration_micros: 10000000000000: overflows the picosecond clock");
    one_node(3, T_COMP, 0, 1, (pb_t[]){a_str("num_ops", "many")});
    expect_err("t.0.et: node 3: num_ops: \"many\": not a number");
    one_node(3, T_SEND, 0, 1, (pb_t[]){a_i64("comm_size", 5)});
    expect_err("t.0.et: node 3: comm_dst: (missing): a COMM_SEND_NODE needs its peer");
    one_node(3, T_RECV, 0, 1, (pb_t[]){a_i32("comm_src", -1)});
    expect_err("t.0.et: node 3: comm_src: -1: not a rank (0..0)");
    one_node(3, T_SEND, 0, 1, (pb_t[]){a_i32("comm_dst", 0)});
    expect_err("t.0.et: node 3: comm_dst: 0: the node's own rank");
    one_node(3, T_SEND, 0, 1, (pb_t[]){a_i32("comm_tag", -4)});
    expect_err("t.0.et: node 3: comm_tag: -4: not a tag (0..2147483647)");
    one_node(3, T_COLL, 0, 1, (pb_t[]){a_i64("comm_size", 5)});
    expect_err("t.0.et: node 3: comm_type: (missing): a COMM_COLL_NODE needs it");
    one_node(3, T_COLL, 0, 1, (pb_t[]){a_i64("comm_type", 1)});
    expect_err(
        "t.0.et: node 3: comm_type: 1 (REDUCE): not supported (ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, "
        "ALL_TO_ALL, BROADCAST)");
    one_node(3, T_COLL, 0, 1, (pb_t[]){a_i64("comm_type", 10)});
    expect_err("t.0.et: node 3: comm_type: 10: not a CollectiveCommType (0..9)");
    one_node(3, T_COLL, 0, 2, (pb_t[]){a_i64("comm_type", 0), a_i64("pg_name", 3)});
    expect_err("t.0.et: node 3: pg_name: (value kind 9): not a string");
}

static void test_dependencies(void **state) {
    (void)state;
    clear_dir();
    pb_t f = {.n = 0};
    meta(&f, 0, NULL);
    node(&f, 1, T_COMP, 0, NULL, 0, NULL, 1, 0, NULL);
    node(&f, 2, T_COMP, 1, (const uint64_t[]){99}, 0, NULL, 1, 0, NULL);
    put_rank(0, &f);
    expect_err("t.0.et: node 2: data_deps: 99: no node 99 in this file");
    f.n = 0;
    meta(&f, 0, NULL);
    node(&f, 1, T_COMP, 0, NULL, 1, (const uint64_t[]){98}, 1, 0, NULL);
    put_rank(0, &f);
    expect_err("t.0.et: node 1: ctrl_deps: 98: no node 98 in this file");
    f.n = 0;
    meta(&f, 0, NULL);
    node(&f, 1, T_COMP, 0, NULL, 0, NULL, 1, 0, NULL);
    node(&f, 1, T_COMP, 0, NULL, 0, NULL, 1, 0, NULL);
    put_rank(0, &f);
    expect_err("t.0.et: node 1: id: 1: duplicate id");
    f.n = 0;
    meta(&f, 0, NULL);
    node(&f, 1, T_COMP, 1, (const uint64_t[]){3}, 0, NULL, 1, 0, NULL);
    node(&f, 2, T_COMP, 1, (const uint64_t[]){1}, 0, NULL, 1, 0, NULL);
    node(&f, 3, T_COMP, 0, NULL, 1, (const uint64_t[]){2}, 1, 0, NULL);
    put_rank(0, &f);
    expect_err("t.0.et: node 2: data_deps: 1: dependency cycle (node 2 depends on itself through it)");
    f.n = 0;
    meta(&f, 0, NULL);
    node(&f, 7, T_COMP, 1, (const uint64_t[]){7}, 0, NULL, 1, 0, NULL);
    put_rank(0, &f);
    expect_err("t.0.et: node 7: data_deps: 7: dependency cycle (node 7 depends on itself through it)");
    /* a long list with repeats (the reader's set): kept once each, in first-seen order */
    f.n = 0;
    meta(&f, 0, NULL);
    uint64_t many[150];
    for (int i = 0; i < 100; i++)
        node(&f, (uint64_t)i, T_COMP, 0, NULL, 0, NULL, 1, 0, NULL);
    for (int i = 0; i < 150; i++)
        many[i] = (uint64_t)((i * 7) % 100);
    node(&f, 1000, T_COMP, 150, many, 3, (const uint64_t[]){5, 1, 2}, 1, 0, NULL);
    put_rank(0, &f);
    step_workload_t w;
    char err[512];
    if (read_t(&w, err, sizeof err) != TRACE_OK)
        fail_msg("%s", err);
    const step_wl_node_t *nd = &w.nodes[100];
    assert_int_equal(nd->n_deps, 100);
    for (int i = 0; i < 100; i++)
        assert_int_equal(w.deps[nd->deps_offset + i], (uint64_t)((i * 7) % 100));
    step_workload_free(&w);
}

/* trace_chakra_check and the writer's refusals */
static void test_check(void **state) {
    (void)state;
    char err[512];
    cs_build_t b;
    cs_sample(&b);
    step_wl_node_t *n0 = &b.w.nodes[0];
    assert_int_equal(trace_chakra_check(&b.w, err, sizeof err), TRACE_OK);
    n0->duration_s = NAN;
    assert_int_equal(trace_chakra_check(&b.w, err, sizeof err), TRACE_EINVAL);
    assert_string_equal(err, "rank 0: node 1: duration_s: nan: not a duration the picosecond clock holds");
    assert_int_equal(trace_chakra_write(dir, "x", &b.w, err, sizeof err), TRACE_EINVAL);
    n0->duration_s = -1;
    n0->flops = 0;
    n0->mem_bytes = 0;
    assert_int_equal(trace_chakra_check(&b.w, err, sizeof err), TRACE_EINVAL);
    assert_string_equal(err,
                        "rank 0: node 1: duration_s: -1: unknown, and neither flops nor mem_bytes give it");
    n0->duration_s = 1;
    b.w.nodes[1].peer = 0; /* rank 0's send to itself */
    assert_int_equal(trace_chakra_check(&b.w, err, sizeof err), TRACE_EINVAL);
    assert_string_equal(err, "rank 0: node 2: peer: 0: not another rank");
    b.w.nodes[1].peer = 2;
    b.w.nodes[1].tag = (int64_t)1 << 32;
    assert_int_equal(trace_chakra_check(&b.w, err, sizeof err), TRACE_EINVAL);
    assert_string_equal(err, "rank 0: node 2: tag: 4294967296: not in Chakra's comm_tag range 0..2^31-1");
    b.w.nodes[1].tag = 7;
    b.w.nodes[3].group = 1; /* rank 0's all-reduce in "dp stage 1" */
    assert_int_equal(trace_chakra_check(&b.w, err, sizeof err), TRACE_EINVAL);
    assert_string_equal(err, "rank 0: node 5: group: 1: this rank is not a member");
    b.w.nodes[3].group = 0;
    b.w.deps[0] = 12345;
    assert_int_equal(trace_chakra_check(&b.w, err, sizeof err), TRACE_EINVAL);
    assert_string_equal(err, "rank 0: node 2: deps: 12345: no node 12345 in this rank");
    b.w.deps[0] = 1;
    const int32_t name0 = n0->name;
    n0->name = b.w.n_names; /* one past the name table */
    assert_int_equal(trace_chakra_check(&b.w, err, sizeof err), TRACE_EINVAL);
    char want[128];
    snprintf(want, sizeof want, "rank 0: node 1: name: %d: not an index of the name table", b.w.n_names);
    assert_string_equal(err, want);
    n0->name = name0;
    assert_int_equal(trace_chakra_check(&b.w, err, sizeof err), TRACE_OK);
    assert_int_equal(trace_chakra_write(dir, "", &b.w, err, sizeof err), TRACE_EINVAL);
    assert_string_equal(err, "name: \"\": not a file name (non-empty, without '/')");
    step_workload_free(&b.w);
    clear_dir();
}

static int n_entries(void) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* Every allocation of a write and of a read failed in turn (alloc_fail_at): the call returns
 * TRACE_ENOMEM with "out of memory", or survives with the same result; a failed write leaves no
 * file (not even a temporary), a failed read a zeroed workload. */
static void test_alloc_fail(void **state) {
    (void)state;
    clear_dir();
    cs_build_t b;
    cs_sample(&b);
    char err[512], prefix[600];
    snprintf(prefix, sizeof prefix, "%s/s", dir);
    uint64_t c0 = alloc_count();
    assert_int_equal(trace_chakra_write(dir, "s", &b.w, err, sizeof err), TRACE_OK);
    const int64_t n_write = (int64_t)(alloc_count() - c0);
    step_workload_t w;
    c0 = alloc_count();
    assert_int_equal(trace_chakra_read(prefix, &w, err, sizeof err), TRACE_OK);
    const int64_t n_read = (int64_t)(alloc_count() - c0);
    step_workload_free(&w);
    assert_true(n_write > 5 && n_read > 10);
    for (int64_t k = 1; k <= n_read; k++) {
        alloc_fail_at((uint64_t)k);
        const int rc = trace_chakra_read(prefix, &w, err, sizeof err);
        alloc_fail_at(0);
        if (rc == TRACE_OK) {
            assert_int_equal(cs_compare(&b.w, &w), 0);
            step_workload_free(&w);
            continue;
        }
        if (rc != TRACE_ENOMEM || strcmp(err, "out of memory") != 0)
            fail_msg("read, allocation %lld failed: rc %d: %s", (long long)k, rc, err);
        assert_null(w.nodes);
    }
    for (int64_t k = 1; k <= n_write; k++) {
        clear_dir();
        alloc_fail_at((uint64_t)k);
        const int rc = trace_chakra_write(dir, "s", &b.w, err, sizeof err);
        alloc_fail_at(0);
        if (rc == TRACE_OK)
            continue;
        if (rc != TRACE_ENOMEM || strcmp(err, "out of memory") != 0)
            fail_msg("write, allocation %lld failed: rc %d: %s", (long long)k, rc, err);
        assert_int_equal(n_entries(), 0);
    }
    step_workload_free(&b.w);
    clear_dir();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mapping),         cmocka_unit_test(test_empty_ranks),
        cmocka_unit_test(test_metadata_groups), cmocka_unit_test(test_framing),
        cmocka_unit_test(test_files),           cmocka_unit_test(test_nodes),
        cmocka_unit_test(test_dependencies),    cmocka_unit_test(test_check),
        cmocka_unit_test(test_alloc_fail),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
