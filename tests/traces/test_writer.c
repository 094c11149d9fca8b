/* traces/test_writer.c - the Chrome trace of a small hand-built step (trace_test_util.h) read back
 * with cJSON: the file parses and carries its metadata and scenario; every event has its fields;
 * every operation is one slice (a B and an E event) at sim_op_times in nanoseconds (or exact
 * picoseconds with exact_ps); slices on one thread never overlap; every thread and process is
 * named; every flow start has its end, bound to the send's and the receive's slices; counters
 * are coalesced per timestamp. Then the rank filter, operations left out by the args callback, an
 * aborted writer (no file), and every error of open, counter and close. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "trace_format.h"
#include "trace_test_util.h"

#define MAX_EV 512

/* What a trace holds, read back. */
typedef struct seen {
    cJSON *root;
    int n_x, n_s, n_f, n_c, n_m;
    const cJSON *x[MAX_EV], *s[MAX_EV], *f[MAX_EV], *c[MAX_EV];
    char thread_name[TT_GPUS * TT_STREAMS + 2][32]; /* by tid */
    char process_name[TT_GPUS + 2][32];             /* by pid */
} seen_t;

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v))
        fail_msg("event field \"%s\" missing or not a number", key);
    return v->valuedouble;
}

static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(v))
        fail_msg("event field \"%s\" missing or not a string", key);
    return v->valuestring;
}

/* Microseconds back to integer units (1e-3 us = ns, or 1e-6 us = ps). */
static int64_t to_units(double us, double per_us) {
    return (int64_t)llround(us * per_us);
}

/* Parse the trace at path and check the fields every event must have. */
static void read_trace(const char *path, seen_t *v) {
    memset(v, 0, sizeof *v);
    v->root = tt_parse_file(path);
    assert_true(cJSON_IsObject(v->root));
    assert_string_equal(str(v->root, "displayTimeUnit"), "ns");
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(v->root, "traceEvents");
    assert_true(cJSON_IsArray(events));
    const cJSON *open[TT_GPUS * TT_STREAMS + 2] = {NULL}; /* by tid: the B waiting for its E */
    cJSON *slices = cJSON_AddArrayToObject(v->root, "test_slices");
    const cJSON *e;
    cJSON_ArrayForEach(e, events) {
        assert_true(cJSON_IsObject(e));
        const char *ph = str(e, "ph");
        const int pid = (int)num(e, "pid"), tid = (int)num(e, "tid");
        assert_true(pid >= 1 && pid <= TT_GPUS / TT_GPN + 1); /* nodes, then "links" */
        assert_true(tid >= 1 && tid <= TT_GPUS * TT_STREAMS + 1);
        if (strcmp(ph, "E"))
            str(e, "name");
        if (!strcmp(ph, "X")) {
            /* only empty slices are complete events */
            assert_true(num(e, "dur") == 0.0);
            cJSON *x = cJSON_Duplicate(e, 1);
            cJSON_AddNumberToObject(x, "end", num(e, "ts"));
            cJSON_AddItemToArray(slices, x);
            assert_true(v->n_x < MAX_EV);
            v->x[v->n_x++] = x;
        } else if (!strcmp(ph, "B")) {
            /* a thread's slices come one after the other: B, its E, the next B */
            assert_true(num(e, "ts") >= 0);
            str(e, "cat");
            assert_null(open[tid]);
            open[tid] = e;
        } else if (!strcmp(ph, "E")) {
            /* the slice as one object: the B's fields and "end", the E's ts */
            assert_non_null(open[tid]);
            assert_true(num(e, "ts") >= num(open[tid], "ts"));
            cJSON *x = cJSON_Duplicate(open[tid], 1);
            cJSON_AddNumberToObject(x, "end", num(e, "ts"));
            cJSON_AddItemToArray(slices, x);
            assert_true(v->n_x < MAX_EV);
            v->x[v->n_x++] = x;
            open[tid] = NULL;
        } else if (!strcmp(ph, "s") || !strcmp(ph, "f")) {
            num(e, "ts");
            num(e, "id");
            assert_string_equal(str(e, "cat"), "p2p");
            if (ph[0] == 's') {
                v->s[v->n_s++] = e;
            } else {
                assert_string_equal(str(e, "bp"), "e");
                v->f[v->n_f++] = e;
            }
        } else if (!strcmp(ph, "C")) {
            num(e, "ts");
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
            assert_true(cJSON_IsObject(args));
            assert_int_equal(cJSON_GetArraySize(args), 1);
            assert_true(cJSON_IsNumber(args->child));
            v->c[v->n_c++] = e;
        } else if (!strcmp(ph, "M")) {
            const char *what = str(e, "name");
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
            assert_true(cJSON_IsObject(args));
            if (!strcmp(what, "thread_name")) {
                assert_int_equal(v->thread_name[tid][0], '\0'); /* named once */
                snprintf(v->thread_name[tid], 32, "%s", str(args, "name"));
            } else if (!strcmp(what, "process_name")) {
                assert_int_equal(v->process_name[pid][0], '\0');
                snprintf(v->process_name[pid], 32, "%s", str(args, "name"));
            } else if (!strcmp(what, "thread_sort_index")) {
                assert_int_equal((int)num(args, "sort_index"), tid);
            } else if (!strcmp(what, "process_sort_index")) {
                num(args, "sort_index");
            } else {
                fail_msg("unexpected metadata event %s", what);
            }
            v->n_m++;
        } else {
            fail_msg("unexpected phase %s", ph);
        }
    }
    for (int t = 0; t < TT_GPUS * TT_STREAMS + 2; t++)
        assert_null(open[t]); /* every B ended */
    /* The metadata's event counts agree with the events. */
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(v->root, "metadata");
    assert_true(cJSON_IsObject(md));
    const cJSON *counts = cJSON_GetObjectItemCaseSensitive(md, "events");
    assert_int_equal((int)num(counts, "complete"), v->n_x);
    assert_int_equal((int)num(counts, "flow_arrows"), v->n_s);
    assert_int_equal((int)num(counts, "counters"), v->n_c);
    assert_int_equal((int)num(counts, "metadata"), v->n_m);
}

static int gpu_of_tid(int tid) {
    return (tid - 1) / TT_STREAMS;
}

static int stream_of_tid(int tid) {
    return (tid - 1) % TT_STREAMS;
}

/* The slice (B with its E) of the operation on (gpu, stream) named name, or NULL. */
static const cJSON *find_x(const seen_t *v, int gpu, int stream, const char *name) {
    for (int i = 0; i < v->n_x; i++) {
        const int tid = (int)num(v->x[i], "tid");
        if (gpu_of_tid(tid) == gpu && stream_of_tid(tid) == stream && !strcmp(str(v->x[i], "name"), name))
            return v->x[i];
    }
    return NULL;
}

/* Every slice is on a named thread of a named process with the right pid; no two slices of one thread
 * overlap (in integer units). */
static void check_threads(const seen_t *v, double per_us) {
    for (int i = 0; i < v->n_x; i++) {
        const int pid = (int)num(v->x[i], "pid"), tid = (int)num(v->x[i], "tid");
        const int gpu = gpu_of_tid(tid), stream = stream_of_tid(tid);
        char want[32];
        assert_int_equal(pid, gpu / TT_GPN + 1);
        if (stream == 0)
            snprintf(want, sizeof want, "gpu %d compute", gpu);
        else
            snprintf(want, sizeof want, "gpu %d comm %d", gpu, stream);
        assert_string_equal(v->thread_name[tid], want);
        snprintf(want, sizeof want, "node %d", gpu / TT_GPN);
        assert_string_equal(v->process_name[pid], want);
        const int64_t a0 = to_units(num(v->x[i], "ts"), per_us);
        const int64_t a1 = to_units(num(v->x[i], "end"), per_us);
        for (int j = 0; j < v->n_x; j++) {
            if (j == i || (int)num(v->x[j], "tid") != tid)
                continue;
            const int64_t b0 = to_units(num(v->x[j], "ts"), per_us);
            const int64_t b1 = to_units(num(v->x[j], "end"), per_us);
            if (a0 < b1 && b0 < a1)
                fail_msg("events \"%s\" and \"%s\" overlap on tid %d", str(v->x[i], "name"),
                         str(v->x[j], "name"), tid);
            /* and in doubles, as a reader adds ts + dur */
            if (b0 >= a1 && num(v->x[i], "end") > num(v->x[j], "ts"))
                fail_msg("event \"%s\" ends after \"%s\" starts on tid %d in doubles", str(v->x[i], "name"),
                         str(v->x[j], "name"), tid);
        }
    }
}

/* Every "s" has one "f" with its id, cat and name; the arrow leaves from inside the send's slice on
 * (send_gpu, stream 2) and lands inside the receive's on (recv_gpu, stream 2). */
static void check_flow(const seen_t *v, const char *name, int send_gpu, int recv_gpu) {
    const cJSON *s = NULL, *f = NULL;
    for (int i = 0; i < v->n_s; i++)
        if (!strcmp(str(v->s[i], "name"), name))
            s = v->s[i];
    assert_non_null(s);
    for (int i = 0; i < v->n_f; i++)
        if (num(v->f[i], "id") == num(s, "id")) {
            assert_null(f);
            f = v->f[i];
        }
    assert_non_null(f);
    assert_string_equal(str(f, "name"), name);
    assert_int_equal(gpu_of_tid((int)num(s, "tid")), send_gpu);
    assert_int_equal(gpu_of_tid((int)num(f, "tid")), recv_gpu);
    const cJSON *xs = find_x(v, send_gpu, 2, name), *xr = find_x(v, recv_gpu, 2, name);
    assert_non_null(xs);
    assert_non_null(xr);
    /* Bound as Chrome DevTools binds (equal cat, pid, tid and ts) and as the Trace Event Format
     * says (the slice enclosing the "s", and the "f" with "bp":"e"). */
    assert_string_equal(str(xs, "cat"), "p2p");
    assert_string_equal(str(xr, "cat"), "p2p");
    assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(xs, "args"), "side"), "send");
    assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(xr, "args"), "side"), "recv");
    assert_string_equal(str(s, "cat"), "p2p");
    assert_string_equal(str(f, "cat"), "p2p");
    assert_string_equal(str(f, "bp"), "e");
    assert_true(num(s, "ts") == num(xs, "ts") && num(s, "pid") == num(xs, "pid") &&
                num(s, "tid") == num(xs, "tid"));
    assert_true(num(f, "ts") == num(xr, "ts") && num(f, "pid") == num(xr, "pid") &&
                num(f, "tid") == num(xr, "tid"));
}

static void test_full_trace(void **state) {
    (void)state;
    char *path = tt_temp_path("full");
    tt_step_t st;
    tt_build(&st);
    const trace_options_t o = tt_options(&st);
    tt_run(&st, path, &o);

    seen_t v;
    read_trace(path, &v);
    /* Metadata: the options and the scenario, verbatim. */
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(v.root, "metadata");
    assert_int_equal((int)num(md, "gpus"), 8);
    assert_int_equal((int)num(md, "gpus_per_node"), 4);
    assert_int_equal((int)num(md, "nodes"), 2);
    assert_int_equal((int)num(md, "streams_per_gpu"), 3);
    assert_string_equal(str(md, "trace_ranks"), "all");
    assert_string_equal(str(md, "time_resolution"), "ns");
    assert_string_equal(str(md, "link_counters"), "all");
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(md, "scenario");
    assert_string_equal(str(sc, "name"), "trace-small");
    assert_string_equal(str(sc, "note"), "quote \" and tab \t");
    assert_string_equal(str(md, "generator"), "stepsim");

    /* One slice per operation, at sim_op_times rounded down to nanoseconds. */
    assert_int_equal(st.n_ops, sim_op_count(st.e));
    assert_int_equal(v.n_x, sim_op_count(st.e));
    int sub_ns = 0;
    for (int32_t id = 0; id < st.n_ops; id++) {
        const tt_op_t *op = &st.ops[id];
        sim_time_ps_t s0, s1;
        assert_int_equal(sim_op_times(st.e, id, &s0, &s1), SIM_OK);
        assert_true(s0 == op->start_ps && s1 == op->end_ps);
        sub_ns += s0 % 1000 != 0 || s1 % 1000 != 0;
        const cJSON *x = find_x(&v, op->gpu, op->stream, op->name);
        if (!x)
            fail_msg("no event for operation %d (%s on gpu %d stream %d)", id, op->name, op->gpu, op->stream);
        /* ns / 1000 and the parsed decimal are both the double nearest the same number. */
        assert_true(num(x, "ts") == (double)(s0 / 1000) / 1000.0);
        assert_true(num(x, "end") == (double)(s1 / 1000) / 1000.0);
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(x, "args");
        assert_true(cJSON_IsObject(args));
        if (op->kind == SIM_OP_COMPUTE) {
            assert_string_equal(str(x, "cat"), "compute");
            assert_string_equal(str(args, "layer"), "mlp");
            assert_string_equal(str(args, "pass"), op->name[0] == 'f' ? "fwd" : "bwd");
            assert_int_equal((int)num(args, "microbatch"), 0);
            assert_int_equal((int)num(args, "stage"), op->gpu / TT_GPN);
            assert_true(num(args, "flops") == (op->name[0] == 'f' ? 1.25e12 : 2.5e12));
            assert_true(num(args, "bytes") == 3.5e9);
            assert_null(cJSON_GetObjectItemCaseSensitive(args, "coll_id"));
        } else {
            assert_string_equal(str(args, "group"), op->kind == SIM_OP_COLLECTIVE ? "dp" : "pp");
            num(args, "coll_id");
        }
    }
    assert_true(sub_ns > 0); /* the rounding was exercised */
    check_threads(&v, 1000.0);
    assert_int_equal(v.n_s, 2);
    assert_int_equal(v.n_f, 2);
    check_flow(&v, "act 1->5", 1, 5);
    check_flow(&v, "act 2->3", 2, 3);

    /* Counters: link utilisation in [0, 1] on the "links" process; memory per GPU; one sample per
     * (process, name, ts); the transient 999 never written; the last memory sample is 5.75 GB. */
    assert_string_equal(v.process_name[3], "links");
    int n_link = 0, n_mem = 0;
    double last_mem[TT_GPUS];
    for (int i = 0; i < v.n_c; i++) {
        const cJSON *c = v.c[i];
        const double value = cJSON_GetObjectItemCaseSensitive(c, "args")->child->valuedouble;
        for (int j = 0; j < i; j++)
            if (num(v.c[j], "pid") == num(c, "pid") && !strcmp(str(v.c[j], "name"), str(c, "name")) &&
                num(v.c[j], "ts") == num(c, "ts"))
                fail_msg("two samples of %s at %g us", str(c, "name"), num(c, "ts"));
        if ((int)num(c, "pid") == 3) {
            assert_int_equal((int)num(c, "tid"), TT_GPUS * TT_STREAMS + 1);
            assert_true(value >= 0.0 && value <= 1.0 + 1e-12);
            assert_non_null(
                cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "args"), "utilization"));
            assert_true(strstr(str(c, "name"), "nic") || strstr(str(c, "name"), "nvlink"));
            n_link++;
        } else {
            int g = -1;
            assert_int_equal(sscanf(str(c, "name"), "gpu %d memory_gb", &g), 1);
            assert_int_equal((int)num(c, "tid"), g * TT_STREAMS + 1);
            assert_true(value != 999.0);
            last_mem[g] = value;
            n_mem++;
        }
    }
    assert_true(n_link > 0);
    assert_int_equal(n_mem, 2 * TT_GPUS);
    for (int g = 0; g < TT_GPUS; g++)
        assert_true(last_mem[g] == 5.75);

    cJSON_Delete(v.root);
    tt_free(&st);
    remove(path);
    free(path);
}

/* exact_ps: ts and dur are the simulation's picoseconds, exactly. */
static void test_exact_ps(void **state) {
    (void)state;
    char *path = tt_temp_path("ps");
    tt_step_t st;
    tt_build(&st);
    trace_options_t o = tt_options(&st);
    o.exact_ps = 1;
    tt_run(&st, path, &o);
    seen_t v;
    read_trace(path, &v);
    assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(v.root, "metadata"), "time_resolution"), "ps");
    assert_int_equal(v.n_x, st.n_ops);
    for (int32_t id = 0; id < st.n_ops; id++) {
        sim_time_ps_t s0, s1;
        sim_op_times(st.e, id, &s0, &s1);
        const cJSON *x = find_x(&v, st.ops[id].gpu, st.ops[id].stream, st.ops[id].name);
        assert_non_null(x);
        assert_true(num(x, "ts") == (double)s0 / 1e6);
        assert_true(num(x, "end") == (double)s1 / 1e6);
    }
    check_threads(&v, 1e6);
    check_flow(&v, "act 1->5", 1, 5);
    cJSON_Delete(v.root);
    tt_free(&st);
    remove(path);
    free(path);
}

/* --trace-ranks 1,5-6: only those GPUs' events, names and memory counters; the 1->5 arrow (both
 * ends traced) but not 2->3; link counters are not per GPU and stay. */
static void test_rank_filter(void **state) {
    (void)state;
    char *path = tt_temp_path("ranks");
    trace_ranks_t r;
    char err[256];
    assert_int_equal(trace_ranks_parse("6-5,1,5", TT_GPUS, &r, err, sizeof err), TRACE_EINVAL);
    assert_int_equal(trace_ranks_parse("5-6, 1", TT_GPUS, &r, err, sizeof err), TRACE_OK);
    tt_step_t st;
    tt_build(&st);
    trace_options_t o = tt_options(&st);
    o.ranks = &r;
    tt_run(&st, path, &o);
    trace_ranks_destroy(&r); /* the writer copied it */
    seen_t v;
    read_trace(path, &v);
    assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(v.root, "metadata"), "trace_ranks"), "1,5-6");
    int per_gpu[TT_GPUS] = {0};
    for (int i = 0; i < v.n_x; i++)
        per_gpu[gpu_of_tid((int)num(v.x[i], "tid"))]++;
    for (int g = 0; g < TT_GPUS; g++) {
        /* fwd, bwd, the all-reduce member, and GPU 1's send / GPU 5's receive. */
        const int want = g == 1 || g == 5 ? 4 : g == 6 ? 3 : 0;
        assert_int_equal(per_gpu[g], want);
    }
    for (int tid = 1; tid <= TT_GPUS * TT_STREAMS; tid++) {
        const int g = gpu_of_tid(tid);
        if (g != 1 && g != 5 && g != 6)
            assert_int_equal(v.thread_name[tid][0], '\0');
    }
    assert_int_equal(v.n_s, 1);
    assert_int_equal(v.n_f, 1);
    check_flow(&v, "act 1->5", 1, 5);
    check_threads(&v, 1000.0);
    for (int i = 0; i < v.n_c; i++) {
        int g = -1;
        if ((int)num(v.c[i], "pid") == 3) /* links */
            continue;
        assert_int_equal(sscanf(str(v.c[i], "name"), "gpu %d memory_gb", &g), 1);
        assert_true(g == 1 || g == 5 || g == 6);
    }
    cJSON_Delete(v.root);
    tt_free(&st);

    /* Only GPU 2: its send is traced, the receive on GPU 3 is not, so no arrow. */
    assert_int_equal(trace_ranks_parse("2", TT_GPUS, &r, err, sizeof err), TRACE_OK);
    tt_build(&st);
    o = tt_options(&st);
    o.ranks = &r;
    tt_run(&st, path, &o);
    trace_ranks_destroy(&r);
    read_trace(path, &v);
    assert_int_equal(v.n_x, 4);
    assert_int_equal(v.n_s + v.n_f, 0);
    cJSON_Delete(v.root);
    tt_free(&st);
    remove(path);
    free(path);
}

/* The args callback leaves GPU 1's compute operations out; everything else stays. */
static void test_args_drop(void **state) {
    (void)state;
    char *path = tt_temp_path("drop");
    tt_step_t st;
    tt_build(&st);
    st.drop_compute_of_gpu = 1;
    const trace_options_t o = tt_options(&st);
    tt_run(&st, path, &o);
    seen_t v;
    read_trace(path, &v);
    assert_int_equal(v.n_x, st.n_ops - 2);
    assert_null(find_x(&v, 1, 0, "fwd 1"));
    assert_null(find_x(&v, 1, 0, "bwd 1"));
    assert_non_null(find_x(&v, 2, 0, "fwd 2"));
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(v.root, "metadata");
    assert_int_equal((int)num(cJSON_GetObjectItemCaseSensitive(md, "events"), "dropped_ops"), 2);
    check_flow(&v, "act 1->5", 1, 5);
    cJSON_Delete(v.root);
    tt_free(&st);
    remove(path);
    free(path);
}

/* An interrupted run: abort removes the file the writer was writing (replacing a destination
 * atomically is the caller's; stepsim's output/outfile.c hands the writer a temporary file). */
static void test_abort_leaves_no_file(void **state) {
    (void)state;
    char *path = tt_temp_path("abort");
    char err[256];
    tt_step_t st;
    tt_build(&st);
    trace_options_t o = tt_options(&st);
    assert_int_equal(trace_writer_open(path, &o, &st.w, err, sizeof err), TRACE_OK);
    assert_true(tt_exists(path));
    trace_writer_observer(st.w, &st.inner);
    const sim_observer_t outer = {.ctx = &st, .op_start = tt_obs_start, .op_end = tt_obs_end};
    sim_engine_set_observer(st.e, &outer);
    assert_int_equal(sim_engine_run_until(st.e, sim_s_to_ps(1.5e-3)), SIM_OK);
    trace_writer_stats_t stats;
    trace_writer_stats(st.w, &stats);
    assert_true(stats.complete_events > 0);
    trace_writer_abort(st.w);
    st.w = NULL;
    assert_false(tt_exists(path));
    tt_free(&st);
    trace_writer_abort(NULL);
    assert_int_equal(trace_writer_close(NULL, NULL, 0), TRACE_OK);
    remove(path);
    free(path);
}

static void expect_open_error(const char *path, const trace_options_t *o, int status, const char *msg) {
    trace_writer_t *w = (trace_writer_t *)1;
    char err[512];
    assert_int_equal(trace_writer_open(path, o, &w, err, sizeof err), status);
    assert_null(w);
    if (!strstr(err, msg))
        fail_msg("error \"%s\" does not contain \"%s\"", err, msg);
}

static void test_open_errors(void **state) {
    (void)state;
    char *path = tt_temp_path("errors");
    trace_options_t o;
    memset(&o, 0, sizeof o);
    expect_open_error(path, &o, TRACE_EINVAL, "n_gpus: 0 is not a positive GPU count");
    o.n_gpus = 8;
    o.gpus_per_node = -1;
    expect_open_error(path, &o, TRACE_EINVAL, "gpus_per_node: -1 is negative");
    o.gpus_per_node = 4;
    o.scenario_json = "[1, 2]";
    expect_open_error(path, &o, TRACE_EINVAL, "scenario_json: not a JSON object");
    o.scenario_json = "{\"model\": ";
    expect_open_error(path, &o, TRACE_EINVAL, "scenario_json: invalid JSON");
    o.scenario_json = "{} {}";
    expect_open_error(path, &o, TRACE_EINVAL, "scenario_json: invalid JSON");
    o.scenario_json = NULL;
    trace_ranks_t r;
    char err[256];
    assert_int_equal(trace_ranks_parse("4-9", 0, &r, err, sizeof err), TRACE_OK); /* no bound here */
    o.ranks = &r;
    expect_open_error(path, &o, TRACE_EINVAL, "ranks: 4-9 is not within GPUs 0..7");
    trace_ranks_destroy(&r);
    o.ranks = NULL;
    o.n_links = 2;
    expect_open_error(path, &o, TRACE_EINVAL, "links: NULL with n_links 2");
    const int32_t links[2] = {3, -1};
    o.links = links;
    expect_open_error(path, &o, TRACE_EINVAL, "links[1]: -1 is not a link id");
    o.n_links = -2;
    expect_open_error(path, &o, TRACE_EINVAL, "n_links: -2");
    o.n_links = 0;
    expect_open_error("", &o, TRACE_EINVAL, "path: empty");
    expect_open_error(path, NULL, TRACE_EINVAL, "options");
    expect_open_error("/nonexistent-dir/stepsim/t.json", &o, TRACE_EIO,
                      "/nonexistent-dir/stepsim/t.json: cannot create");
    assert_false(tt_exists(path));
    free(path);
}

static void test_counter_errors(void **state) {
    (void)state;
    char *path = tt_temp_path("counter");
    trace_options_t o;
    memset(&o, 0, sizeof o);
    o.n_gpus = 4;
    trace_writer_t *w = NULL;
    char err[256];
    assert_int_equal(trace_writer_open(path, &o, &w, err, sizeof err), TRACE_OK);
    assert_int_equal(trace_writer_counter(w, 0, 4, "memory_gb", 1.0), TRACE_EINVAL);
    assert_int_equal(trace_writer_counter(w, 0, -1, "memory_gb", 1.0), TRACE_EINVAL);
    assert_int_equal(trace_writer_counter(w, 0, 0, "", 1.0), TRACE_EINVAL);
    assert_int_equal(trace_writer_counter(w, 0, 0, NULL, 1.0), TRACE_EINVAL);
    assert_int_equal(trace_writer_counter(w, -1, 0, "memory_gb", 1.0), TRACE_EINVAL);
    assert_int_equal(trace_writer_counter(w, 0, 0, "memory_gb", NAN), TRACE_EINVAL);
    assert_int_equal(trace_writer_counter(NULL, 0, 0, "memory_gb", 1.0), TRACE_EINVAL);
    /* Two counters of one GPU, a repeated value (dropped) and a name that needs escaping. */
    assert_int_equal(trace_writer_counter(w, 0, 0, "memory_gb", 1.0), TRACE_OK);
    assert_int_equal(trace_writer_counter(w, 0, 0, "odd \"name\"", 2.0), TRACE_OK);
    assert_int_equal(trace_writer_counter(w, 1000, 0, "memory_gb", 1.0), TRACE_OK);
    assert_int_equal(trace_writer_counter(w, 2000, 0, "memory_gb", 3.0), TRACE_OK);
    assert_int_equal(trace_writer_close(w, err, sizeof err), TRACE_OK);
    seen_t v;
    read_trace(path, &v);
    assert_int_equal(v.n_c, 3);
    assert_string_equal(str(v.c[1], "name"), "gpu 0 odd \"name\"");
    assert_true(num(v.c[2], "ts") == 0.002);
    cJSON_Delete(v.root);
    remove(path);
    free(path);
}

/* A writer closed before anything happened still writes valid JSON with its metadata. */
static void test_empty_trace(void **state) {
    (void)state;
    char *path = tt_temp_path("empty");
    trace_options_t o;
    memset(&o, 0, sizeof o);
    o.n_gpus = 3;
    o.gpus_per_node = 2;
    trace_writer_t *w = NULL;
    char err[256];
    assert_int_equal(trace_writer_open(path, &o, &w, err, sizeof err), TRACE_OK);
    assert_int_equal(trace_writer_close(w, err, sizeof err), TRACE_OK);
    seen_t v;
    read_trace(path, &v);
    assert_int_equal(v.n_x + v.n_s + v.n_f + v.n_c + v.n_m, 0);
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(v.root, "metadata");
    assert_int_equal((int)num(md, "nodes"), 2);
    assert_int_equal((int)num(md, "streams_per_gpu"), 3);
    assert_int_equal((int)num(md, "link_counters"), 0);
    assert_null(cJSON_GetObjectItemCaseSensitive(md, "scenario"));
    cJSON_Delete(v.root);
    remove(path);
    free(path);
}

/* A slice shorter than the trace's unit (or empty) is one "X" of dur 0, between two B/E slices that
 * touch it: the file passes the validator strictly. */
static void test_empty_slice(void **state) {
    (void)state;
    char *path = tt_temp_path("emptyslice");
    trace_options_t o;
    memset(&o, 0, sizeof o);
    o.n_gpus = 1;
    o.streams_per_gpu = 1;
    trace_writer_t *w = NULL;
    char err[256];
    assert_int_equal(trace_writer_open(path, &o, &w, err, sizeof err), TRACE_OK);
    sim_observer_t obs;
    trace_writer_observer(w, &obs);
    const sim_time_ps_t t[4] = {0, 1000, 1500, 5000}; /* a: 0-1 ns, b: 1-1.5 ns (1-1 in ns), c: 1.5-5 */
    const char *names[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        const sim_op_info_t op = {
            .op = i, .kind = SIM_OP_COMPUTE, .gpu = 0, .stream = 0, .coll = -1, .name = names[i]};
        obs.op_start(obs.ctx, t[i], &op);
        obs.op_end(obs.ctx, t[i + 1], &op);
    }
    assert_int_equal(trace_writer_close(w, err, sizeof err), TRACE_OK);
    cJSON *root = tt_parse_file(path);
    assert_non_null(root);
    tf_stats_t st;
    char msg[300];
    if (tf_check(root, 1, &st, msg, sizeof msg))
        fail_msg("%s", msg);
    assert_int_equal(st.slices, 3);
    assert_int_equal(st.complete, 1);
    assert_int_equal(st.begins, 2);
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents")) {
        if (!strcmp(str(e, "ph"), "X")) {
            assert_string_equal(str(e, "name"), "b");
            assert_true(num(e, "dur") == 0.0 && num(e, "ts") == 0.001);
        }
    }
    cJSON_Delete(root);
    remove(path);
    free(path);
}

/* Options that do not match the engine (2 streams per GPU, the engine has 3): the run goes on,
 * close reports the mismatch and leaves no file. */
static void test_close_reports_run_error(void **state) {
    (void)state;
    char *path = tt_temp_path("mismatch");
    char err[512];
    tt_step_t st;
    tt_build(&st);
    trace_options_t o = tt_options(&st);
    o.streams_per_gpu = 2;
    assert_int_equal(trace_writer_open(path, &o, &st.w, err, sizeof err), TRACE_OK);
    sim_observer_t obs;
    trace_writer_observer(st.w, &obs);
    assert_null(obs.flow_start);
    assert_null(obs.flow_end);
    sim_engine_set_observer(st.e, &obs);
    assert_int_equal(sim_engine_run(st.e), SIM_OK);
    assert_int_equal(trace_writer_close(st.w, err, sizeof err), TRACE_EINVAL);
    if (!strstr(err, "stream 2 is outside the trace options (8 GPUs, 2 streams)"))
        fail_msg("unexpected error: %s", err);
    assert_false(tt_exists(path));
    tt_free(&st);
    free(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_trace),           cmocka_unit_test(test_exact_ps),
        cmocka_unit_test(test_rank_filter),          cmocka_unit_test(test_args_drop),
        cmocka_unit_test(test_abort_leaves_no_file), cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_counter_errors),       cmocka_unit_test(test_empty_trace),
        cmocka_unit_test(test_empty_slice),          cmocka_unit_test(test_close_reports_run_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
