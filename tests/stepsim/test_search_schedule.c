/* test_search_schedule.c - the pipeline schedule as a dimension of `stepsim search`:
 * - --pipeline-schedule all: each layout keeps its fastest schedule that fits; for GPT-3 175B on 64
 *   A100s (the pipeline needed to fit) the best layout runs a zero-bubble schedule, faster than the
 *   best 1F1B layout, fitting in memory, and its time is `stepsim estimate`'s for that layout and
 *   schedule (and beats the same layout's 1F1B estimate); layouts without a pipeline stay 1F1B;
 * - a fixed schedule (--pipeline-schedule zb-v) applies to every layout with a pipeline;
 * - without the option the results carry no schedule (the output as it was);
 * - "all" is refused by every command but search (exit 2, one line naming the option). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "test_cli_run.h"

#include "test_cli_assert.h"

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define JOB "--model", "gpt3", "--gpus", "64", "--gbs", "64", "--strategy", "1d"

static const cJSON *get(const cJSON *o, const char *k) {
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* `stepsim estimate` of a search result's layout with schedule sched: its iteration time. */
static double estimate_of(const cJSON *result, const char *sched) {
    const cJSON *c = get(result, "config");
    char v[6][24];
    static const char *const keys[] = {"dp", "tp", "pp", "mbs", "nv_tp", "nv_dp"};
    for (int i = 0; i < 6; i++)
        snprintf(v[i], sizeof v[i], "%d", (int)cli_json_num(c, keys[i]));
    const char *argv[] = {"estimate", JOB,     "--dp",    v[0],    "--tp",
                          v[1],       "--pp",  v[2],      "--mbs", v[3],
                          "--nv-tp",  v[4],    "--nv-dp", v[5],    "--pipeline-schedule",
                          sched,      "--json"};
    cJSON *j = cli_run_json(argv, N(argv));
    const double t = cli_json_num(j, "iteration_time_s");
    cJSON_Delete(j);
    return t;
}

static int zero_bubble(const char *s) {
    return strcmp(s, "zb-h1") == 0 || strcmp(s, "zb-v") == 0 || strcmp(s, "dualpipe") == 0;
}

static void all_schedules(void **state) {
    (void)state;
    const char *all[] = {"search", JOB, "--top", "5", "--pipeline-schedule", "all", "--json"};
    const char *one[] = {"search", JOB, "--top", "5", "--json"};
    cJSON *a = cli_run_json(all, N(all)), *o = cli_run_json(one, N(one));
    const cJSON *tried = get(a, "pipeline_schedules");
    assert_int_equal(cJSON_GetArraySize(tried), 4);
    const cJSON *best = cJSON_GetArrayItem(get(a, "results"), 0);
    const cJSON *best_1f1b = cJSON_GetArrayItem(get(o, "results"), 0);
    const char *sched = cli_json_str(best, "pipeline_schedule");
    if (!zero_bubble(sched))
        fail_msg("best layout's schedule %s, wanted a zero-bubble one", sched);
    assert_true(cli_json_num(get(best, "config"), "pp") > 1);
    assert_true(cli_json_num(best, "memory_gb") <= 80.0);
    const double t = cli_json_num(best, "iteration_time_s");
    assert_true(t < cli_json_num(best_1f1b, "iteration_time_s"));
    /* the estimate of that layout and schedule; 1F1B's on it is slower */
    const double e = estimate_of(best, sched), e1 = estimate_of(best, "1f1b");
    if (fabs(t - e) > 1e-12 * e)
        fail_msg("search %.12g s, estimate %.12g s", t, e);
    assert_true(e < e1);
    printf("  best layout: pp %d, %s, %.6f s (1F1B on it %.6f s; best 1F1B layout %.6f s)\n",
           (int)cli_json_num(get(best, "config"), "pp"), sched, t, e1,
           cli_json_num(best_1f1b, "iteration_time_s"));
    /* a layout without a pipeline stays 1F1B; every result names its schedule */
    const cJSON *r;
    cJSON_ArrayForEach(r, get(a, "results")) {
        const char *s = cli_json_str(r, "pipeline_schedule");
        if (cli_json_num(get(r, "config"), "pp") == 1)
            assert_string_equal(s, "1f1b");
    }
    /* without the option: no schedule in the results, none tried */
    assert_null(get(o, "pipeline_schedules"));
    cJSON_ArrayForEach(r, get(o, "results")) assert_null(get(r, "pipeline_schedule"));
    cJSON_Delete(a);
    cJSON_Delete(o);
    /* the text: the schedules tried, and each rank's */
    const char *text[] = {"search", JOB, "--top", "3", "--pipeline-schedule", "all"};
    cli_run_t t3 = cli_run_argv(N(text), text);
    assert_int_equal(t3.rc, 0);
    assert_non_null(strstr(t3.out, "pipeline schedules all (1f1b, zb-h1, zb-v, dualpipe)"));
    assert_non_null(strstr(t3.out, "pipeline schedule by rank: 0 zb-v, 1 zb-v"));
    cli_run_free(&t3);
}

static void fixed_schedule(void **state) {
    (void)state;
    const char *argv[] = {"search", JOB, "--top", "5", "--pipeline-schedule", "zb-v", "--json"};
    cJSON *j = cli_run_json(argv, N(argv));
    assert_string_equal(cli_json_str(get(j, "training"), "pipeline_schedule"), "zb-v");
    assert_null(get(j, "pipeline_schedules"));
    const cJSON *r;
    int n = 0;
    cJSON_ArrayForEach(r, get(j, "results")) {
        assert_string_equal(cli_json_str(r, "pipeline_schedule"), "zb-v");
        n++;
    }
    assert_true(n > 0);
    cJSON_Delete(j);
}

static void all_elsewhere(void **state) {
    (void)state;
    static const char *const cmds[] = {"estimate", "run", "compare", "validate"};
    static const char *const why[] = {"--pipeline-schedule: \"all\"", "search only"};
    for (int i = 0; i < N(cmds); i++) {
        const char *argv[] = {cmds[i], "--model", "gpt3", "--gpus", "64",
                              "--gbs", "16",      "--pp", "4",      "--pipeline-schedule",
                              "all"};
        cli_expect_error(cmds[i], argv, N(argv), 2, why, N(why));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(all_schedules),
        cmocka_unit_test(fixed_schedule),
        cmocka_unit_test(all_elsewhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
