/* stepsim/test_trace_view.c - the trace of the default job as a user opens it (docs/traces.md):
 * `stepsim run --trace FILE` without --trace-ranks. The whole job would make a trace of about 420 MB,
 * so one tensor group per pipeline stage is traced and stderr says so once, with the size estimate
 * (checked against the file); the file passes the Trace Event Format validator (trace_format.h),
 * strictly: on every thread each slice ends at or before the next begins with ts and dur read as
 * doubles; compute slices carry the tensor-parallel communication folded into them, and their
 * threads say so; link counters are named as the topology names links; flow events bind to their
 * slices. Also: collapsed ranks in --trace-ranks are traced as the GPU that represents them, said
 * once. */
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

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "test_cli_run.h"

#include "../traces/trace_format.h"

typedef struct view {
    cli_run_t r;
    cJSON *root;
    long long file_bytes;
} view_t;

static cJSON *load(const char *path, long long *bytes) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *bytes = ftell(f);
    char *text = cli_run_slurp(f);
    cJSON *doc = cJSON_Parse(text);
    free(text);
    return doc;
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static int setup(void **state) {
    view_t *v = calloc(1, sizeof *v);
    char path[96];
    snprintf(path, sizeof path, "/tmp/stepsim_trace_view_%d.json", (int)getpid());
    v->r = cli_run("run", "--trace", path, "--quiet", NULL);
    v->root = load(path, &v->file_bytes);
    unlink(path);
    *state = v;
    return v->r.rc == 0 && v->root ? 0 : -1;
}

static int teardown(void **state) {
    view_t *v = *state;
    cJSON_Delete(v->root);
    cli_run_free(&v->r);
    free(v);
    return 0;
}

static const char *str(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* Too large whole: one tensor group per stage (GPUs 0-255 of tp 8, pp 32), said once on stderr with
 * both estimates; the estimate is within 15% of the file written. */
static void test_default_is_reduced(void **state) {
    view_t *v = *state;
    assert_int_equal(count(v->r.err, "the whole job would make about"), 1);
    assert_int_equal(count(v->r.err, "\n"), 1);
    assert_non_null(strstr(v->r.err, "one tensor group per pipeline stage: --trace-ranks 0-255 (about"));
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(v->root, "metadata");
    assert_string_equal(str(md, "trace_ranks"), "0-255");
    double whole_mb = 0, mb = 0;
    assert_int_equal(sscanf(strstr(v->r.err, "would make about"), "would make about %lf MB", &whole_mb), 1);
    assert_int_equal(sscanf(strstr(v->r.err, "(about"), "(about %lf MB)", &mb), 1);
    assert_true(whole_mb > 100.0);
    const double actual_mb = (double)v->file_bytes / 1e6;
    assert_true(fabs(mb - actual_mb) <= 0.15 * actual_mb);
}

/* Valid, with no two slices of a thread overlapping in doubles (1,192 did before: 1 ulp past the next
 * slice's start, which strict-stack viewers draw as nesting); every flow bound. */
static void test_default_is_valid_and_strict(void **state) {
    view_t *v = *state;
    tf_stats_t st;
    char msg[300];
    const int problems = tf_check(v->root, 1, &st, msg, sizeof msg);
    if (problems)
        fail_msg("%d problems, the first: %s", problems, msg);
    assert_true(st.threads > 100);
    assert_true(st.slices > 40000);
    assert_true(st.flow_starts > 10000 && st.flow_starts == st.flow_ends);
    assert_int_equal(st.overlaps, 0);
    assert_int_equal(st.unbound, 0);
}

/* At the default (microbatch) granularity the fixed-time tensor-parallel collectives are folded into
 * the compute slices: each forward and backward slice says how much of it they are, and the compute
 * threads' names say the slices include them. */
static void test_tp_share_on_compute(void **state) {
    view_t *v = *state;
    const cJSON *e;
    int named = 0, with_share = 0, compute = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(v->root, "traceEvents")) {
        const char *ph = str(e, "ph");
        if (!strcmp(ph, "M") && !strcmp(str(e, "name"), "thread_name")) {
            const char *n = str(cJSON_GetObjectItemCaseSensitive(e, "args"), "name");
            if (strstr(n, "compute")) {
                assert_non_null(strstr(n, " compute (incl. tp comm)"));
                named++;
            }
        }
        if (!strcmp(ph, "B") && !strcmp(str(e, "cat"), "compute")) {
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
            const char *pass = str(args, "pass");
            if (strcmp(pass, "fwd") && strcmp(pass, "bwd"))
                continue;
            compute++;
            const cJSON *tp = cJSON_GetObjectItemCaseSensitive(args, "tp_comm_us");
            if (cJSON_IsNumber(tp)) {
                /* the share is part of the slice: the E that follows on the thread is later by more */
                const cJSON *end = e->next;
                while (end && !(!strcmp(str(end, "ph"), "E") &&
                                cJSON_GetObjectItemCaseSensitive(end, "tid")->valuedouble ==
                                    cJSON_GetObjectItemCaseSensitive(e, "tid")->valuedouble))
                    end = end->next;
                assert_non_null(end);
                const double dur = cJSON_GetObjectItemCaseSensitive(end, "ts")->valuedouble -
                                   cJSON_GetObjectItemCaseSensitive(e, "ts")->valuedouble;
                assert_true(tp->valuedouble > 0 && tp->valuedouble < dur);
                with_share++;
            }
        }
    }
    assert_int_equal(named, 32);
    assert_true(compute > 10000);
    assert_int_equal(with_share, compute);
}

/* Link counters carry the topology's link names, spaced: "gpu 8 -> switch 0". */
static void test_link_names(void **state) {
    view_t *v = *state;
    const cJSON *e;
    int links = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(v->root, "traceEvents")) {
        if (strcmp(str(e, "ph"), "C") ||
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(e, "args"), "utilization") ==
                NULL)
            continue;
        char a[16], b[16], again[64];
        int i = -1, j = -1;
        const char *name = str(e, "name");
        if (sscanf(name, "%15[a-z] %d -> %15[a-z] %d", a, &i, b, &j) != 4)
            fail_msg("link counter \"%s\" is not named \"KIND N -> KIND M\"", name);
        snprintf(again, sizeof again, "%s %d -> %s %d", a, i, b, j); /* spaced exactly so */
        assert_string_equal(name, again);
        links++;
    }
    assert_true(links > 1000);
}

/* --trace-ranks 0-7,56-63 on tp 8: GPUs 1-7 and 57-63 are collapsed into GPUs 0 and 56; the trace
 * holds those two, and stderr says so once. */
static void test_collapsed_ranks(void **state) {
    (void)state;
    char path[96];
    snprintf(path, sizeof path, "/tmp/stepsim_trace_view_c_%d.json", (int)getpid());
    cli_run_t r = cli_run("run", "--model", "gpt3", "--gpus", "64", "--gbs", "64", "--tp", "8", "--pp", "4",
                          "--trace", path, "--trace-ranks", "0-7,56-63", "--quiet", NULL);
    assert_int_equal(r.rc, 0);
    long long bytes = 0;
    cJSON *root = load(path, &bytes);
    unlink(path);
    assert_non_null(root);
    assert_string_equal(r.err,
                        "stepsim run: --trace-ranks: GPUs 1-7,57-63 are collapsed (not simulated); each "
                        "is traced as the simulated GPU of its stage that represents it: 0,56\n");
    assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(root, "metadata"), "trace_ranks"), "0,56");
    tf_stats_t st;
    char msg[300];
    if (tf_check(root, 1, &st, msg, sizeof msg))
        fail_msg("%s", msg);
    assert_true(st.slices > 0);
    cJSON_Delete(root);
    cli_run_free(&r);
    /* only simulated GPUs: nothing to say */
    r = cli_run("run", "--model", "gpt3", "--gpus", "64", "--gbs", "64", "--tp", "8", "--pp", "4", "--trace",
                path, "--trace-ranks", "0,56", "--quiet", NULL);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    unlink(path);
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_is_reduced),  cmocka_unit_test(test_default_is_valid_and_strict),
        cmocka_unit_test(test_tp_share_on_compute), cmocka_unit_test(test_link_names),
        cmocka_unit_test(test_collapsed_ranks),
    };
    return cmocka_run_group_tests_name("stepsim.trace_view", tests, setup, teardown);
}
