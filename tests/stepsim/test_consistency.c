/* test_consistency.c - every command prints the configuration it computed and compares against the
 * estimate of exactly that configuration. A table of the training options (each non-default value,
 * and none) runs through estimate, search, run, compare, validate and sweep (a grid of run points):
 * the text header echoes the setting, the JSON "training" object holds it, and every simulating
 * command's analytic figure is `stepsim estimate`'s for the same options plus the optimizer step
 * the simulation runs (on unless --optimizer-step off), with the simulated schedule's virtual stages
 * and optimizer time as the settings say. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "test_cli_run.h"

#include "test_cli_assert.h"

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define MAXA 40

/* One row: the options (flag, value pairs), the scenario options that search also takes, the degrees
 * (not for search), the text the header shows, and the JSON training field with its value. */
typedef struct row {
    const char *name;
    const char *opt[4];    /* the training option(s) under test */
    const char *scn[2];    /* scenario options every command needs for it (a system with FP8) */
    const char *layout[6]; /* degrees (search chooses them) */
    const char *text;      /* in every command's text header */
    const char *key;       /* in the JSON "training" object; NULL: no training object expected */
    const char *want;      /* its value: a string, "true"/"false", or an integer */
    int interleave;        /* virtual stages simulated */
    int optimizer;         /* 1: the simulation runs the optimizer step */
    int searchable;        /* search takes the option */
} row_t;

/* The schedule a row's run simulates: its --pipeline-schedule, else 1f1b or interleaved. */
static const char *schedule_of(const row_t *r) {
    if (r->opt[0] && strcmp(r->opt[0], "--pipeline-schedule") == 0)
        return r->opt[1];
    return r->interleave > 1 ? "interleaved" : "1f1b";
}

#define DEGREES "--pp", "4", "--dp", "2"

static const row_t ROWS[] = {
    {"none", {0}, {0}, {DEGREES}, NULL, NULL, NULL, 1, 1, 1},
    {"recompute", {"--recompute", "full"}, {0}, {DEGREES}, "recompute full", "recompute", "full", 1, 1, 1},
    {"seqpar off",
     {"--sequence-parallel", "off"},
     {0},
     {DEGREES},
     "sequence parallelism off",
     "sequence_parallel",
     "false",
     1,
     1,
     1},
    {"materialized",
     {"--attention", "materialized"},
     {0},
     {DEGREES},
     "materialized attention",
     "attention",
     "materialized",
     1,
     1,
     1},
    {"embedding", {"--embedding", "on"}, {0}, {DEGREES}, "embedding on", "embedding", "true", 1, 1, 1},
    {"optimizer on",
     {"--optimizer-step", "on"},
     {0},
     {DEGREES},
     "optimizer step on",
     "optimizer_step",
     "true",
     1,
     1,
     1},
    {"optimizer off",
     {"--optimizer-step", "off"},
     {0},
     {DEGREES},
     "optimizer step off",
     "optimizer_step",
     "false",
     1,
     0,
     1},
    {"interleave", {"--interleave", "2"}, {0}, {DEGREES}, "interleave 2", "interleave", "2", 2, 1, 0},
    {"allreduce",
     {"--dp-comm", "allreduce"},
     {0},
     {DEGREES},
     "dp comm allreduce",
     "dp_comm",
     "allreduce",
     1,
     1,
     1},
    {"allreduce-overlap",
     {"--dp-comm", "allreduce-overlap"},
     {0},
     {DEGREES},
     "dp comm allreduce-overlap",
     "dp_comm",
     "allreduce-overlap",
     1,
     1,
     1},
    {"grad add",
     {"--grad-accumulation", "add"},
     {0},
     {DEGREES},
     "grad accumulation add",
     "grad_accumulation",
     "add",
     1,
     1,
     1},
    {"fp8",
     {"--precision", "fp8"},
     {"--system", "H100"},
     {DEGREES},
     "precision: fp8",
     "precision",
     "fp8",
     1,
     1,
     1},
    {"tp overlap",
     {"--tp-comm-overlap", "on"},
     {0},
     {DEGREES},
     "tp comm overlap on",
     "tp_comm_overlap",
     "true",
     1,
     1,
     1},
    {"fp8 params",
     {"--fp8-param-gather", "on", "--precision", "fp8"},
     {"--system", "H100"},
     {DEGREES},
     "fp8 param gather on",
     "fp8_param_gather",
     "true",
     1,
     1,
     1},
    {"cp ring",
     {"--cp-comm", "ring"},
     {"--strategy", "2d-seqp"},
     {"--pp", "4", "--tp1", "4", "--tp2", "2"},
     "cp comm ring",
     "cp_comm",
     "ring",
     1,
     1,
     1},
    /* the pipeline schedules: 8 microbatches on pp 4, 2 pp (ZB-V's and DualPipe's least) */
    {"zb-h1",
     {"--pipeline-schedule", "zb-h1"},
     {0},
     {DEGREES},
     "pipeline schedule zb-h1",
     "pipeline_schedule",
     "zb-h1",
     1,
     1,
     1},
    {"zb-v",
     {"--pipeline-schedule", "zb-v"},
     {0},
     {DEGREES},
     "pipeline schedule zb-v",
     "pipeline_schedule",
     "zb-v",
     2,
     1,
     1},
    {"dualpipe",
     {"--pipeline-schedule", "dualpipe"},
     {0},
     {DEGREES},
     "pipeline schedule dualpipe",
     "pipeline_schedule",
     "dualpipe",
     2,
     1,
     1},
};

static const cJSON *get(const cJSON *o, const char *k) {
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* argv: cmd, the job, the row's options, extra..., then (json) --json. */
static int argv_of(const char **argv, const char *cmd, const row_t *r, int with_layout,
                   const char *const *extra, int n_extra, int json) {
    int n = 0;
    argv[n++] = cmd;
    static const char *const job[] = {"--model", "gpt3", "--gpus", "64", "--gbs", "16"};
    for (int i = 0; i < N(job); i++)
        argv[n++] = job[i];
    for (int i = 0; i < 2 && r->scn[i]; i++)
        argv[n++] = r->scn[i];
    for (int i = 0; with_layout && i < 6 && r->layout[i]; i++)
        argv[n++] = r->layout[i];
    for (int i = 0; i < 4 && r->opt[i]; i++)
        argv[n++] = r->opt[i];
    for (int i = 0; i < n_extra; i++)
        argv[n++] = extra[i];
    if (json)
        argv[n++] = "--json";
    return n;
}

static double rel(double a, double b) {
    return fabs(a - b) / fmax(fabs(a), fabs(b));
}

/* The training object's field as the row wants it. */
static void check_training(const char *where, const row_t *r, const cJSON *training) {
    if (!r->key)
        return;
    const cJSON *v = get(training, r->key);
    if (!v)
        fail_msg("%s / %s: no training.%s", r->name, where, r->key);
    char got[64];
    if (cJSON_IsString(v))
        snprintf(got, sizeof got, "%s", v->valuestring);
    else if (cJSON_IsBool(v))
        snprintf(got, sizeof got, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else
        snprintf(got, sizeof got, "%d", (int)v->valuedouble);
    if (strcmp(got, r->want) != 0)
        fail_msg("%s / %s: training.%s is %s, wanted %s", r->name, where, r->key, got, r->want);
}

/* The estimate the simulations compare against: estimate with the row's options and the optimizer
 * step they simulate. */
static double simulated_estimate(const row_t *r) {
    static const char *const on[] = {"--optimizer-step", "on"};
    const char *argv[MAXA];
    const int given = r->opt[0] && strcmp(r->opt[0], "--optimizer-step") == 0;
    const int n = argv_of(argv, "estimate", r, 1, on, given ? 0 : 2, 1);
    cJSON *j = cli_run_json(argv, n);
    const double t = cli_json_num(j, "iteration_time_s");
    cJSON_Delete(j);
    return t;
}

/* The text output: exit 0 and the header's echo (a simulating command: "optimizer step on|off" as
 * simulated too). */
static void check_text(const char *cmd, const row_t *r, int with_layout, const char *const *extra,
                       int n_extra, int simulates) {
    const char *argv[MAXA];
    const int n = argv_of(argv, cmd, r, with_layout, extra, n_extra, 0);
    cli_run_t t = cli_run_argv(n, argv);
    if (t.rc != 0)
        fail_msg("%s / %s: exit %d: %s", r->name, cmd, t.rc, t.err);
    if (r->text && !strstr(t.out, r->text))
        fail_msg("%s / %s: \"%s\" not in the text output", r->name, cmd, r->text);
    if (simulates && !strstr(t.out, r->optimizer ? "optimizer step on" : "optimizer step off"))
        fail_msg("%s / %s: the header does not say the optimizer step is %s", r->name, cmd,
                 r->optimizer ? "on" : "off");
    if (simulates && r->interleave > 1 && !strcmp(schedule_of(r), "interleaved") &&
        !strstr(t.out, "interleave 2"))
        fail_msg("%s / %s: the header does not say interleave 2", r->name, cmd);
    cli_run_free(&t);
}

static void estimate_and_search(void **state) {
    (void)state;
    for (int k = 0; k < N(ROWS); k++) {
        const row_t *r = &ROWS[k];
        const char *argv[MAXA];
        int n = argv_of(argv, "estimate", r, 1, NULL, 0, 1);
        cJSON *j = cli_run_json(argv, n);
        check_training("estimate", r, get(get(j, "config"), "training"));
        cJSON_Delete(j);
        check_text("estimate", r, 1, NULL, 0, 0);
        if (!r->searchable)
            continue;
        /* one strategy (the row's, else 1d) keeps the search short */
        const int own = r->scn[0] && strcmp(r->scn[0], "--strategy") == 0;
        static const char *const top[] = {"--top", "1", "--strategy", "1d"};
        n = argv_of(argv, "search", r, 0, top, own ? 2 : 4, 1);
        j = cli_run_json(argv, n);
        check_training("search", r, get(j, "training"));
        cJSON_Delete(j);
        check_text("search", r, 0, top, own ? 2 : 4, 0);
    }
}

static void run_rows(void **state) {
    (void)state;
    for (int k = 0; k < N(ROWS); k++) {
        const row_t *r = &ROWS[k];
        const double base = simulated_estimate(r);
        const char *argv[MAXA];
        const int n = argv_of(argv, "run", r, 1, NULL, 0, 1);
        cJSON *j = cli_run_json(argv, n);
        const cJSON *sim = get(j, "simulation");
        check_training("run", r, get(get(j, "config"), "training"));
        if (rel(cli_json_num(j, "analytic_iteration_time_s"), base) > 1e-12)
            fail_msg("%s / run: analytic %.12g, estimate of the simulated configuration %.12g", r->name,
                     cli_json_num(j, "analytic_iteration_time_s"), base);
        assert_int_equal((int)cli_json_num(sim, "virtual_stages"), r->interleave);
        assert_string_equal(cli_json_str(sim, "schedule"), schedule_of(r));
        assert_int_equal(cli_json_num(sim, "optimizer_s") > 0.0, r->optimizer);
        /* the training object says what ran: the optimizer step in it is the simulated one */
        assert_int_equal(cJSON_IsTrue(get(get(get(j, "config"), "training"), "optimizer_step")),
                         r->optimizer);
        cJSON_Delete(j);
        check_text("run", r, 1, NULL, 0, 1);
    }
}

static void compare_and_validate(void **state) {
    (void)state;
    static const char *const ideal[] = {"--topologies", "ideal"};
    for (int k = 0; k < N(ROWS); k++) {
        const row_t *r = &ROWS[k];
        const double base = simulated_estimate(r);
        const char *argv[MAXA];
        int n = argv_of(argv, "compare", r, 1, ideal, 2, 1);
        cJSON *j = cli_run_json(argv, n);
        check_training("compare", r, get(get(j, "config"), "training"));
        if (rel(cli_json_num(j, "analytic_iteration_time_s"), base) > 1e-12)
            fail_msg("%s / compare: analytic %.12g, estimate %.12g", r->name,
                     cli_json_num(j, "analytic_iteration_time_s"), base);
        cJSON_Delete(j);
        check_text("compare", r, 1, ideal, 2, 1);
        n = argv_of(argv, "validate", r, 1, NULL, 0, 1);
        j = cli_run_json(argv, n);
        check_training("validate", r, get(get(j, "config"), "training"));
        const double a = cli_json_num(cJSON_GetArrayItem(get(j, "steps"), 0), "total_s");
        if (rel(a, base) > 1e-12)
            fail_msg("%s / validate: analytic %.12g, estimate %.12g", r->name, a, base);
        cJSON_Delete(j);
        check_text("validate", r, 1, NULL, 0, 1);
    }
}

/* A sweep of run points with the row's options in the grid's "options": each line's result is run's. */
static void sweep_rows(void **state) {
    (void)state;
    char grid[256], out[256];
    const char *dir = getenv("TMPDIR");
    snprintf(grid, sizeof grid, "%s/stepsim_consistency_%ld.json", dir && dir[0] ? dir : "/tmp",
             (long)getpid());
    snprintf(out, sizeof out, "%s/stepsim_consistency_%ld.jsonl", dir && dir[0] ? dir : "/tmp",
             (long)getpid());
    for (int k = 0; k < N(ROWS); k++) {
        const row_t *r = &ROWS[k];
        cJSON *g = cJSON_CreateObject(), *scn = cJSON_CreateObject(), *opts = cJSON_CreateObject();
        cJSON_AddStringToObject(g, "command", "run");
        cJSON_AddStringToObject(scn, "model", "gpt3");
        cJSON_AddNumberToObject(scn, "gpus", 64);
        cJSON_AddNumberToObject(scn, "global_batch", 16);
        cJSON_AddItemToObject(g, "scenario", scn);
        const char *const *lists[3] = {r->scn, r->layout, r->opt};
        const int lens[3] = {2, 6, 4};
        for (int l = 0; l < 3; l++)
            for (int i = 0; i + 1 < lens[l] && lists[l][i]; i += 2) {
                char *end = NULL;
                const long v = strtol(lists[l][i + 1], &end, 10);
                if (*end) /* a grid's numbers are JSON numbers */
                    cJSON_AddStringToObject(opts, lists[l][i] + 2, lists[l][i + 1]);
                else
                    cJSON_AddNumberToObject(opts, lists[l][i] + 2, (double)v);
            }
        cJSON_AddItemToObject(g, "options", opts);
        char *text = cJSON_Print(g);
        cJSON_Delete(g);
        FILE *f = fopen(grid, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        free(text);
        remove(out);
        cli_run_t s = cli_run("sweep", grid, "--out", out, "--quiet", NULL);
        if (s.rc != 0)
            fail_msg("%s / sweep: exit %d: %s", r->name, s.rc, s.err);
        cli_run_free(&s);
        f = fopen(out, "r");
        assert_non_null(f);
        char line[65536];
        assert_non_null(fgets(line, sizeof line, f));
        fclose(f);
        cJSON *l = cJSON_Parse(line);
        const cJSON *res = get(l, "result");
        if (!res)
            fail_msg("%s / sweep: %s", r->name, line);
        check_training("sweep", r, get(get(res, "config"), "training"));
        if (rel(cli_json_num(res, "analytic_iteration_time_s"), simulated_estimate(r)) > 1e-12)
            fail_msg("%s / sweep: analytic %.12g", r->name, cli_json_num(res, "analytic_iteration_time_s"));
        assert_int_equal((int)cli_json_num(get(res, "simulation"), "virtual_stages"), r->interleave);
        assert_int_equal(cli_json_num(get(res, "simulation"), "optimizer_s") > 0.0, r->optimizer);
        cJSON_Delete(l);
    }
    remove(grid);
    remove(out);
}

/* The one way to an interleaved schedule: --schedule interleaved:V is refused and names --interleave,
 * in run and in a grid; run --interleave 2 compares against the interleaved estimate. */
static void interleaved_schedule(void **state) {
    (void)state;
    const char *argv[] = {"run", "--model", "gpt3", "--gpus",     "64",           "--gbs",
                          "16",  "--pp",    "4",    "--schedule", "interleaved:2"};
    static const char *const why[] = {"--schedule: \"interleaved:2\"", "--interleave V"};
    cli_expect_error("--schedule interleaved:2", argv, N(argv), 2, why, N(why));
    cli_run_t t = cli_run("run", "--model", "gpt3", "--gpus", "64", "--gbs", "16", "--pp", "4",
                          "--interleave", "2", NULL);
    assert_int_equal(t.rc, 0);
    assert_non_null(strstr(t.out, "interleave 2"));
    assert_non_null(strstr(t.out, "simulation: interleaved:2 schedule"));
    cli_run_free(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(estimate_and_search),  cmocka_unit_test(run_rows),
        cmocka_unit_test(compare_and_validate), cmocka_unit_test(sweep_rows),
        cmocka_unit_test(interleaved_schedule),
    };
    return cmocka_run_group_tests_name("stepsim.consistency", tests, NULL, NULL);
}
