/* stepsim/test_run.c - `stepsim run` end to end: the --json fields of docs/cli.md, a breakdown that adds
 * up to the step time, text output; bad options exit 2 with one line naming the option and value;
 * --trace writes a Chrome trace that parses back (every slice has its fields, no negative durations,
 * slices on one thread never overlap, every arrow start has its end) and the same run writes the
 * same bytes twice. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "test_cli_run.h"

#include "../traces/trace_format.h"

#define SMALL "--model", "gpt3", "--gpus", "64", "--gbs", "16", "--pp", "4", "--dp", "2"

static double num(const cJSON *o, const char *key) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(n))
        fail_msg("%s: missing or not a number", key);
    return n->valuedouble;
}

static void test_json_fields(void **state) {
    (void)state;
    const char *modes[] = {"analytic", "network"};
    for (int i = 0; i < 2; i++) {
        cli_run_t r = cli_run("run", SMALL, "--comm", modes[i], "--json", NULL);
        if (r.rc != 0)
            fail_msg("exit %d: %s", r.rc, r.err);
        cJSON *j = cJSON_Parse(r.out);
        assert_non_null(j);
        const double step = num(j, "step_time_s");
        assert_true(step > 0 && num(j, "analytic_iteration_time_s") > 0);
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "breakdown_s");
        const double sum = num(b, "compute") + num(b, "exposed_tp_comm") + num(b, "exposed_pp_comm") +
                           num(b, "exposed_dp_comm") + num(b, "bubble_idle");
        assert_true(fabs(sum - step) <= 1e-9 * step);
        assert_true(num(j, "events") > 0 && num(j, "flows") >= 0 && num(j, "wall_time_s") >= 0);
        const cJSON *links = cJSON_GetObjectItemCaseSensitive(j, "links");
        assert_true(num(links, "max_utilization") >= 0);
        const cJSON *busiest = cJSON_GetObjectItemCaseSensitive(links, "busiest");
        assert_true(cJSON_IsArray(busiest));
        if (i == 1) { /* network: links carried data */
            assert_true(cJSON_GetArraySize(busiest) == 5);
            const cJSON *l0 = cJSON_GetArrayItem(busiest, 0);
            assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(l0, "link")));
            assert_true(num(l0, "utilization") > 0 && num(l0, "utilization") <= 1);
        }
        const cJSON *mem = cJSON_GetObjectItemCaseSensitive(j, "memory_gb");
        assert_true(fabs(num(mem, "peak") - num(mem, "analytic")) < 1e-6 * num(mem, "analytic"));
        cJSON_Delete(j);
        cli_run_free(&r);
    }
}

static void test_text(void **state) {
    (void)state;
    cli_run_t r = cli_run("run", SMALL, "--comm", "analytic", "--interleave", "2", NULL);
    if (r.rc != 0)
        fail_msg("exit %d: %s", r.rc, r.err);
    assert_non_null(strstr(r.out, "step time (simulated)"));
    assert_non_null(strstr(r.out, "interleaved:2 schedule"));
    assert_non_null(strstr(r.out, "interleave 2"));
    assert_non_null(strstr(r.out, "bubble and idle"));
    assert_string_equal(r.err, "");
    cli_run_free(&r);
    r = cli_run("run", "--help", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "--trace-ranks"));
    cli_run_free(&r);
}

/* A job smaller than one NVLink domain runs on the default ideal topology (domains of gcd(gpus, nvs)),
 * with run and with compare. */
static void test_job_smaller_than_a_domain(void **state) {
    (void)state;
    static const char *const cmds[] = {"run", "compare"};
    for (int i = 0; i < 2; i++) {
        cli_run_t r = cli_run(cmds[i], "--model", "gpt3", "--gpus", "4", "--tp", "4", "--pp", "1", "--dp",
                              "1", "--gbs", "4", "--nvs", "8", NULL);
        if (r.rc != 0)
            fail_msg("%s: exit %d: %s", cmds[i], r.rc, r.err);
        assert_non_null(strstr(r.out, "ideal"));
        cli_run_free(&r);
    }
}

static void test_bad_options(void **state) {
    (void)state;
    static const struct {
        const char *args[6];
        const char *frag;
    } cases[] = {
        {{"--comm", "flows"}, "--comm: \"flows\" is not allowed"},
        {{"--schedule", "zb-h1"}, "the zero-bubble schedule is --pipeline-schedule zb-h1"},
        {{"--schedule", "zb-v"}, "the zero-bubble schedule is --pipeline-schedule zb-v"},
        {{"--schedule", "dualpipe"}, "the zero-bubble schedule is --pipeline-schedule dualpipe"},
        {{"--schedule", "zb-h2"}, "--schedule: \"zb-h2\" is not a schedule"},
        {{"--pipeline-schedule", "gpipe"}, "--pipeline-schedule: \"gpipe\" is not a value"},
        {{"--schedule", "interleaved:2"}, "the interleaved schedule is --interleave V"},
        {{"--interleave", "5"}, "5 must divide the layers per pipeline stage"},
        {{"--schedule", "gpipe", "--interleave", "2"}, "--schedule: gpipe with --interleave 2"},
        {{"--placement", "tp,tp"}, "--placement: \"tp,tp\""},
        {{"--p2p", "eager"}, "--p2p: \"eager\""},
        {{"--collapse", "yes"}, "--collapse: \"yes\""},
        {{"--granularity", "op"}, "--granularity: \"op\""},
        {{"--links", "99"}, "--links: \"99\""},
        {{"--trace-ranks", "0-3"}, "--trace-ranks: given without --trace"},
        {{"--trace", "t.json", "--trace-ranks", "7-3"}, "--trace-ranks: \"7-3\""},
        {{"--top", "3"}, "--top: not an option of run"}, /* --layers is one since run prints one block */
        {{"--comm"}, "--comm: missing value"},
        {{"--commm", "analytic"}, "did you mean --comm"},
        {{"--tp", "5"}, "--tp: 5 does not divide heads"},
        {{"--topology", "{\"kind\": \"fat-tree\", \"k\": 7}"}, "--topology: k: 7"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[24] = {"run", SMALL};
        int n = 11;
        for (int k = 0; k < 6 && cases[i].args[k]; k++)
            args[n++] = cases[i].args[k];
        cli_run_t r = cli_run_argv(n, args);
        if (r.rc != 2 || cli_run_lines(r.err) != 1 || !strstr(r.err, cases[i].frag) || r.out[0])
            fail_msg("case %zu: exit %d, stderr \"%s\", want exit 2 and one line with \"%s\"", i, r.rc, r.err,
                     cases[i].frag);
        cli_run_free(&r);
    }
    /* a trace that cannot be written (a path in a missing directory): exit 2, before anything is
     * simulated */
    cli_run_t w = cli_run("run", SMALL, "--trace", "/nonexistent-dir/t.json", NULL);
    assert_int_equal(w.rc, 2);
    assert_int_equal(cli_run_lines(w.err), 1);
    assert_non_null(strstr(w.err, "--trace /nonexistent-dir/t.json"));
    cli_run_free(&w);
    /* a topology with the wrong GPU count: exit 2 too */
    cli_run_t r = cli_run("run", SMALL, "--topology", "{\"kind\": \"torus\", \"dims\": [2, 2]}", NULL);
    assert_int_equal(r.rc, 2);
    assert_int_equal(cli_run_lines(r.err), 1);
    cli_run_free(&r);
}

/* ---- the trace -------------------------------------------------------------------------------- */

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* The trace passes the Trace Event Format validator strictly (tests/traces/trace_format.h): no slice
 * of a thread overlaps the next, with times read as doubles. */
static void check_trace(const char *text) {
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    tf_stats_t st;
    char msg[300];
    const int problems = tf_check(j, 1, &st, msg, sizeof msg);
    if (problems)
        fail_msg("%d problems, the first: %s", problems, msg);
    assert_true(st.slices > 100);
    assert_true(st.flow_starts > 0);
    assert_int_equal(st.flow_starts, st.flow_ends);
    assert_true(st.counters > 0);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(j, "metadata");
    assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(meta, "scenario")));
    cJSON_Delete(j);
}

static void test_trace(void **state) {
    (void)state;
    char path[2][64];
    char *text[2];
    for (int i = 0; i < 2; i++) {
        snprintf(path[i], sizeof path[i], "run-trace-%d-%d.json", (int)getpid(), i);
        cli_run_t r = cli_run("run", SMALL, "--trace", path[i], "--trace-ranks", "0-15,24", NULL);
        if (r.rc != 0)
            fail_msg("exit %d: %s", r.rc, r.err);
        assert_non_null(strstr(r.out, "trace: "));
        cli_run_free(&r);
        text[i] = slurp(path[i]);
        remove(path[i]);
    }
    assert_string_equal(text[0], text[1]);
    check_trace(text[0]);
    free(text[0]);
    free(text[1]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_fields),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_job_smaller_than_a_domain),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
