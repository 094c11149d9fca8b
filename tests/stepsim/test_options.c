/* test_options.c - the one option table (tools/stepsim/options.c) and everything driven by it: an
 * option means the same in every command that takes it (--interleave, --optimizer-step, --placement
 * across estimate, run, compare and validate, and in a sweep grid), or is refused by all with the
 * same line; every command's parser (did-you-mean, "not an option of", missing values, values given
 * to flags, --name=value) and help (exactly its table entries, the same for `CMD --help` and
 * `help CMD`). */
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

#include "options.h"
#include "sweep.h"
#include "test_cli_run.h"

#include "test_cli_assert.h"

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* A small job that runs in milliseconds: 96 layers on 4 stages, 4 microbatches of 1 per replica. */
#define SMALL "--model", "gpt3", "--gpus", "64", "--gbs", "16", "--pp", "4", "--dp", "2"

static const char *const FOUR[] = {"estimate", "run", "compare", "validate"};

/* argv = cmd SMALL extra... --json; the JSON document (asserting success). */
static cJSON *json_of(const char *cmd, const char *const *extra, int n_extra) {
    const char *argv[40] = {cmd, SMALL};
    int n = 11;
    if (strcmp(cmd, "compare") == 0) {
        argv[n++] = "--topologies";
        argv[n++] = "ideal,fat-tree-2:1";
    }
    for (int i = 0; i < n_extra; i++)
        argv[n++] = extra[i];
    argv[n++] = "--json";
    return cli_run_json(argv, n);
}

static double rel(double a, double b) {
    return fabs(a - b) / fmax(fabs(a), fabs(b));
}

/* The analytic iteration time each of the four commands reports. */
static double analytic_of(const char *cmd, const cJSON *j) {
    if (strcmp(cmd, "estimate") == 0)
        return cli_json_num(j, "iteration_time_s");
    if (strcmp(cmd, "validate") == 0)
        return cli_json_num(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "steps"), 0), "total_s");
    return cli_json_num(j, "analytic_iteration_time_s");
}

/* The simulated step on ideal (network): run's, compare's ideal row, validate's "network on ideal". */
static double ideal_step_of(const char *cmd, const cJSON *j) {
    if (strcmp(cmd, "run") == 0)
        return cli_json_num(j, "step_time_s");
    if (strcmp(cmd, "compare") == 0)
        return cli_json_num(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "topologies"), 0),
                            "step_time_s");
    return cli_json_num(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "steps"), 2), "total_s");
}

static const cJSON *sim_of(const cJSON *run) {
    return cJSON_GetObjectItemCaseSensitive(run, "simulation");
}

/* Every command's figures with options extra: the analytic time, the simulated step on ideal (the
 * same job and step configuration in run, compare and validate), and run's document. */
typedef struct four {
    double analytic[4], ideal_step[3];
    double simulated_estimate; /* estimate of the configuration the three simulate */
    cJSON *run;
} four_t;

static void four_of(const char *const *extra, int n_extra, four_t *f) {
    for (int c = 0; c < 4; c++) {
        cJSON *j = json_of(FOUR[c], extra, n_extra);
        f->analytic[c] = analytic_of(FOUR[c], j);
        if (c > 0)
            f->ideal_step[c - 1] = ideal_step_of(FOUR[c], j);
        if (c == 1)
            f->run = j;
        else
            cJSON_Delete(j);
    }
    /* the simulations run the optimizer step unless told not to, and their estimate includes it */
    int given = 0;
    for (int i = 0; i < n_extra; i++)
        given |= strcmp(extra[i], "--optimizer-step") == 0;
    f->simulated_estimate = f->analytic[0];
    if (!given) {
        const char *on[40] = {"--optimizer-step", "on"};
        for (int i = 0; i < n_extra; i++)
            on[2 + i] = extra[i];
        cJSON *j = json_of("estimate", on, n_extra + 2);
        f->simulated_estimate = analytic_of("estimate", j);
        cJSON_Delete(j);
    }
    for (int c = 1; c < 4; c++)
        if (rel(f->analytic[c], f->simulated_estimate) > 1e-12)
            fail_msg("%s: analytic %.12g, estimate %.12g", FOUR[c], f->analytic[c], f->simulated_estimate);
    for (int c = 1; c < 3; c++)
        if (rel(f->ideal_step[c], f->ideal_step[0]) > 1e-12)
            fail_msg("%s: simulated step on ideal %.12g, run %.12g", FOUR[c + 1], f->ideal_step[c],
                     f->ideal_step[0]);
}

/* --interleave 2: the interleaved estimate in all four, and every simulation interleaved with 2
 * virtual stages (run reports them; compare and validate simulate the same step as run). */
static void interleave_everywhere(void **state) {
    (void)state;
    static const char *const plain[] = {"--interleave", "1"};
    static const char *const il[] = {"--interleave", "2"};
    four_t a, b;
    four_of(plain, 2, &a);
    four_of(il, 2, &b);
    assert_true(b.analytic[0] < a.analytic[0]); /* the bubble is halved */
    assert_true(b.ideal_step[0] < a.ideal_step[0]);
    assert_int_equal((int)cli_json_num(sim_of(a.run), "virtual_stages"), 1);
    assert_int_equal((int)cli_json_num(sim_of(b.run), "virtual_stages"), 2);
    assert_string_equal(cli_json_str(sim_of(b.run), "schedule"), "interleaved");
    /* --interleave is the one way: --schedule interleaved:2, which used to simulate the interleaved
     * step against the plain estimate, is refused and names it */
    const char *argv[] = {"run", SMALL, "--schedule", "interleaved:2"};
    static const char *const why[] = {"--schedule: \"interleaved:2\"", "is --interleave V"};
    cli_expect_error("run --schedule interleaved:2", argv, N(argv), 2, why, N(why));
    cJSON_Delete(a.run);
    cJSON_Delete(b.run);
}

/* --optimizer-step on: the estimate's optimizer term is the one the simulated step runs; off: no
 * simulation runs it (not given, they do: the default that run always had). */
static void optimizer_step_everywhere(void **state) {
    (void)state;
    static const char *const on[] = {"--optimizer-step", "on"};
    static const char *const off[] = {"--optimizer-step", "off"};
    four_t a, b, dflt;
    four_of(off, 2, &a);
    four_of(on, 2, &b);
    four_of(NULL, 0, &dflt);
    const double term = b.analytic[0] - a.analytic[0];
    assert_true(term > 0);
    assert_true(rel(cli_json_num(sim_of(b.run), "optimizer_s"), term) < 1e-9);
    assert_true(cli_json_num(sim_of(a.run), "optimizer_s") == 0.0);
    assert_true(b.ideal_step[0] > a.ideal_step[0]);
    /* not given: estimate leaves it out; the simulations run it and so does the estimate beside them */
    assert_true(dflt.analytic[0] == a.analytic[0]);
    assert_true(dflt.ideal_step[0] == b.ideal_step[0]);
    assert_true(dflt.analytic[1] == b.analytic[0]);
    cJSON_Delete(a.run);
    cJSON_Delete(b.run);
    cJSON_Delete(dflt.run);
}

/* --placement tp,dp,pp: the estimate does not change (it depends on the nv counts only); run
 * simulates that order; compare and validate simulate it too (the same step on a 2:1 fat tree,
 * different from the default order's). */
static void placement_everywhere(void **state) {
    (void)state;
    static const char *const pl[] = {"--placement", "tp,dp,pp"};
    four_t a, b;
    four_of(NULL, 0, &a);
    four_of(pl, 2, &b);
    assert_true(a.analytic[0] == b.analytic[0]);
    assert_string_equal(cli_json_str(sim_of(a.run), "placement"), "tp,cp,pp,dp");
    assert_string_equal(cli_json_str(sim_of(b.run), "placement"), "tp,dp,pp,cp");
    double tree[2][2];
    for (int k = 0; k < 2; k++) {
        const char *const extra[] = {"--placement", k ? "tp,dp,pp" : "tp,cp,pp,dp", "--topology",
                                     "fat-tree-2:1"};
        cJSON *c = json_of("compare", extra, 2);
        cJSON *v = json_of("validate", extra, 4);
        tree[k][0] = cli_json_num(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(c, "topologies"), 1),
                                  "step_time_s");
        tree[k][1] =
            cli_json_num(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(v, "steps"), 3), "total_s");
        cJSON_Delete(c);
        cJSON_Delete(v);
        assert_true(rel(tree[k][0], tree[k][1]) < 1e-12);
    }
    assert_true(rel(tree[0][0], tree[1][0]) > 1e-6);
    cJSON_Delete(a.run);
    cJSON_Delete(b.run);
}

/* The stderr line without its "stepsim CMD: " prefix. */
static const char *message(const char *err, const char *cmd) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "stepsim %s: ", cmd);
    assert_true(strncmp(err, prefix, strlen(prefix)) == 0);
    return err + strlen(prefix);
}

/* A bad value of the three options is refused by all four with the same line; search refuses the
 * two it has no use for with the same line as any option of another command. */
static void same_refusals(void **state) {
    (void)state;
    static const char *const bad[][4] = {
        {"--interleave", "5", NULL, NULL}, /* does not divide 24 layers per stage */
        {"--interleave", "two", NULL, NULL},
        {"--placement", "tp,tp", NULL, NULL},
        {"--placement", "tp,dp,pp,xp", NULL, NULL},
        {"--optimizer-step", "maybe", NULL, NULL},
        {"--compat", "reference", "--optimizer-step", "on"},
        {"--compat", "reference", "--interleave", "2"},
    };
    for (int i = 0; i < N(bad); i++) {
        char first[512] = "";
        for (int c = 0; c < 4; c++) {
            const char *argv[20] = {FOUR[c], SMALL};
            int n = 11;
            for (int k = 0; k < 4 && bad[i][k]; k++)
                argv[n++] = bad[i][k];
            cli_run_t r = cli_run_argv(n, argv);
            if (r.rc != 2 || cli_run_lines(r.err) != 1)
                fail_msg("%s %s: rc %d, stderr %s", FOUR[c], bad[i][0], r.rc, r.err);
            const char *m = message(r.err, FOUR[c]);
            if (c == 0)
                snprintf(first, sizeof first, "%s", m);
            else if (strcmp(first, m) != 0)
                fail_msg("%s: \"%s\" differs from estimate's \"%s\"", FOUR[c], m, first);
            cli_run_free(&r);
        }
        assert_non_null(strstr(first, bad[i][0][2] == 'c' ? bad[i][2] : bad[i][0]));
    }
    static const char *const search_only[] = {"--interleave", "--placement", "--tp"};
    for (int i = 0; i < N(search_only); i++) {
        const char *argv[] = {"search", search_only[i], "2"};
        char want[160];
        snprintf(want, sizeof want,
                 "stepsim search: %s: not an option of search (search chooses the degrees itself); allowed: "
                 "see `stepsim search --help`\n",
                 search_only[i]);
        cli_run_t r = cli_run_argv(3, argv);
        assert_int_equal(r.rc, 2);
        assert_string_equal(r.err, want);
        cli_run_free(&r);
    }
}

/* ---- the parser, every command ---------------------------------------------------------------- */

static unsigned bit(cli_cmd_t c) {
    return CLI_CMD_BIT(c);
}

/* For every command and every option of the table: the misspelling --x<name> gets a did-you-mean of
 * that option when the command takes it, "not an option of CMD" when only other commands do; a
 * value option without its value "missing value", a flag with one "takes no value". */
static void parser_every_command(void **state) {
    (void)state;
    size_t n;
    const cli_option_t *t = cli_options(&n);
    int checked = 0;
    for (int c = 0; c < CLI_CMD_COUNT; c++) {
        const char *cmd = cli_command_name((cli_cmd_t)c);
        for (size_t i = 0; i < n; i++) {
            const cli_option_t *o = cli_option_find(t[i].name, (cli_cmd_t)c);
            char buf[128], want[200];
            cli_run_t r;
            if (!o) {
                const char *argv[] = {cmd, t[i].name};
                snprintf(want, sizeof want, "stepsim %s: %s: not an option of %s", cmd, t[i].name, cmd);
                r = cli_run_argv(2, argv);
            } else if (o != &t[i] || strcmp(o->name, "--help") == 0) {
                continue;
            } else {
                snprintf(buf, sizeof buf, "--x%s", t[i].name + 2);
                const char *argv[] = {cmd, buf};
                snprintf(want, sizeof want, "stepsim %s: %s: unknown option (did you mean %s?)", cmd, buf,
                         t[i].name);
                r = cli_run_argv(2, argv);
            }
            if (r.rc != 2 || strncmp(r.err, want, strlen(want)) != 0 || cli_run_lines(r.err) != 1)
                fail_msg("%s: want \"%s\", got rc %d \"%s\"", cmd, want, r.rc, r.err);
            cli_run_free(&r);
            if (!o)
                continue;
            if (o->arg) {
                const char *argv[] = {cmd, o->name};
                snprintf(want, sizeof want, "stepsim %s: %s: missing value; allowed: %s %s\n", cmd, o->name,
                         o->name, o->arg);
                r = cli_run_argv(2, argv);
            } else {
                snprintf(buf, sizeof buf, "%s=yes", o->name);
                const char *argv[] = {cmd, buf};
                snprintf(want, sizeof want,
                         "stepsim %s: %s: takes no value (got \"yes\"); allowed: %s alone\n", cmd, o->name,
                         o->name);
                r = cli_run_argv(2, argv);
            }
            if (r.rc != 2 || strcmp(r.err, want) != 0)
                fail_msg("%s: want \"%s\", got rc %d \"%s\"", cmd, want, r.rc, r.err);
            cli_run_free(&r);
            checked++;
        }
        /* a second positional argument */
        const char *argv[] = {cmd, "a.json", "b.json"};
        cli_run_t r = cli_run_argv(3, argv);
        assert_int_equal(r.rc, 2);
        assert_non_null(strstr(r.err, "b.json: unexpected argument"));
        cli_run_free(&r);
    }
    assert_true(checked > 100);
    /* validate's two modes share the command: the waterfall's options are refused with --measured */
    static const char *const waterfall_only[][2] = {
        {"--tp", "8"}, {"--placement", "tp,dp"}, {"--plot", "w.svg"}};
    for (int i = 0; i < N(waterfall_only); i++) {
        const char *argv[] = {"validate", "--measured", "runs.csv", waterfall_only[i][0],
                              waterfall_only[i][1]};
        char want[160];
        snprintf(want, sizeof want,
                 "stepsim validate: %s: not an option of validate --measured (the runs come from runs.csv)",
                 waterfall_only[i][0]);
        cli_run_t r = cli_run_argv(5, argv);
        if (r.rc != 2 || strncmp(r.err, want, strlen(want)) != 0)
            fail_msg("want \"%s\", got rc %d \"%s\"", want, r.rc, r.err);
        cli_run_free(&r);
    }
}

/* --name=value and --name value parse to the same thing, for every value option of every command;
 * and end to end, estimate, run and collective print the same JSON with either form. */
static void equals_form(void **state) {
    (void)state;
    size_t n;
    const cli_option_t *t = cli_options(&n);
    for (int c = 0; c < CLI_CMD_COUNT; c++)
        for (size_t i = 0; i < n; i++) {
            if (!t[i].arg || !(t[i].cmds & bit((cli_cmd_t)c)))
                continue;
            char eq[128];
            snprintf(eq, sizeof eq, "%s=v=1", t[i].name);
            char *a1[] = {(char *)"stepsim", (char *)cli_command_name((cli_cmd_t)c), eq, (char *)"file"};
            char *a2[] = {(char *)"stepsim", (char *)cli_command_name((cli_cmd_t)c), (char *)t[i].name,
                          (char *)"v=1", (char *)"file"};
            cli_args_t p1, p2;
            cli_diag_t d;
            assert_int_equal(cli_parse((cli_cmd_t)c, 2, 4, a1, &p1, &d), CLI_OK);
            assert_int_equal(cli_parse((cli_cmd_t)c, 2, 5, a2, &p2, &d), CLI_OK);
            assert_string_equal(p1.file, "file");
            assert_string_equal(p2.file, "file");
            if (t[i].target == CLI_OPT_SCENARIO) {
                assert_int_equal(p1.n_scenario, 1);
                assert_int_equal(p2.n_scenario, 1);
                assert_ptr_equal(p1.scenario_opt[0], &t[i]);
                assert_string_equal(p1.scenario_value[0], "v=1");
                assert_string_equal(p2.scenario_value[0], "v=1");
            } else {
                assert_string_equal(p1.value[t[i].target], "v=1");
                assert_string_equal(p2.value[t[i].target], "v=1");
            }
        }
    static const char *const pairs[][8] = {
        {"estimate", "--gpus=64", "--tp=8", "--interleave=2", "--pp", "4", "--gbs=16", "--json"},
        {"estimate", "--gpus", "64", "--tp", "8", "--interleave", "2", "--pp=4 --gbs 16 --json"},
        {"run", "--gpus=64", "--pp=4", "--gbs=16", "--comm=analytic", "--placement=tp,dp,pp", "--model=gpt3",
         "--json"},
        {"run", "--gpus", "64", "--pp", "4", "--gbs", "16",
         "--comm analytic --placement tp,dp,pp --model gpt3 --json"},
        {"collective", "--topology=perlmutter", "--gpus=16", "--op=allgather", "--size=1M", "--json", NULL,
         NULL},
        {"collective", "--topology", "perlmutter", "--gpus", "16", "--op allgather --size 1M --json", NULL,
         NULL},
    };
    for (int i = 0; i < N(pairs); i += 2) {
        const char *argv[2][24];
        int na[2] = {0, 0};
        for (int k = 0; k < 2; k++)
            for (int m = 0; m < 8 && pairs[i + k][m]; m++) {
                /* a space-separated tail splits into arguments */
                char *copy = strdup(pairs[i + k][m]);
                for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " "))
                    argv[k][na[k]++] = strdup(tok);
                free(copy);
            }
        cli_run_t r1 = cli_run_argv(na[0], argv[0]), r2 = cli_run_argv(na[1], argv[1]);
        if (r1.rc != 0 || r2.rc != 0)
            fail_msg("%s: %s / %s", pairs[i][0], r1.err, r2.err);
        /* wall times differ; everything else must not */
        cJSON *j1 = cJSON_Parse(r1.out), *j2 = cJSON_Parse(r2.out);
        cJSON_DeleteItemFromObjectCaseSensitive(j1, "wall_time_s");
        cJSON_DeleteItemFromObjectCaseSensitive(j2, "wall_time_s");
        assert_true(cJSON_Compare(j1, j2, 1));
        cJSON_Delete(j1);
        cJSON_Delete(j2);
        cli_run_free(&r1);
        cli_run_free(&r2);
        for (int k = 0; k < 2; k++)
            for (int m = 0; m < na[k]; m++)
                free((char *)argv[k][m]);
    }
}

/* Every command's help lists exactly its entries of the table, in table order, and `CMD --help`,
 * `CMD -h` and `help CMD` print the same. */
static void help_from_table(void **state) {
    (void)state;
    size_t n;
    const cli_option_t *t = cli_options(&n);
    for (int c = 0; c < CLI_CMD_COUNT; c++) {
        const char *cmd = cli_command_name((cli_cmd_t)c);
        cli_run_t a = cli_run(cmd, "--help", NULL), b = cli_run("help", cmd, NULL),
                  h = cli_run(cmd, "-h", NULL);
        assert_int_equal(a.rc, 0);
        assert_string_equal(a.out, b.out);
        assert_string_equal(a.out, h.out);
        char usage[64];
        snprintf(usage, sizeof usage, "usage: stepsim %s ", cmd);
        assert_true(strncmp(a.out, usage, strlen(usage)) == 0);
        const char *p = strstr(a.out, "\noptions (default in brackets):\n");
        assert_non_null(p);
        p = strchr(p + 1, '\n') + 1;
        size_t i = 0;
        while (strncmp(p, "  Options also take the form --option=value.", 44) != 0) {
            const char *eol = strchr(p, '\n');
            assert_non_null(eol);
            assert_true(eol - p <= 100);
            if (strncmp(p, "  --", 4) == 0) {
                while (i < n && !(t[i].cmds & bit((cli_cmd_t)c)))
                    i++;
                assert_true(i < n);
                const size_t len = strlen(t[i].name);
                if (strncmp(p + 2, t[i].name, len) != 0 || (p[2 + len] != ' ' && p[2 + len] != '\n'))
                    fail_msg("%s --help: \"%.40s\" where %s was expected", cmd, p, t[i].name);
                if (t[i].def[0]) {
                    /* the entry's text, its lines joined, ends with the default */
                    char text[1024], def[200];
                    size_t k = 0;
                    const char *q = p;
                    do {
                        const char *e = strchr(q, '\n');
                        const char *s0 = q == p ? q : q + 27;
                        k += (size_t)snprintf(text + k, sizeof text - k, "%s%.*s", q == p ? "" : " ",
                                              (int)(e - s0), s0);
                        q = e + 1;
                    } while (strncmp(q, "   ", 3) == 0 && k < sizeof text);
                    snprintf(def, sizeof def, " [%s]", t[i].def);
                    if (strlen(text) < strlen(def) || strcmp(text + strlen(text) - strlen(def), def) != 0)
                        fail_msg("%s --help: %s does not end with its default%s: %s", cmd, t[i].name, def,
                                 text);
                }
                i++;
            } else {
                assert_true(strncmp(p, "                           ", 27) == 0); /* a continuation */
            }
            p = eol + 1;
        }
        while (i < n && !(t[i].cmds & bit((cli_cmd_t)c)))
            i++;
        if (i != n)
            fail_msg("%s --help lacks %s", cmd, t[i].name);
        cli_run_free(&a);
        cli_run_free(&b);
        cli_run_free(&h);
    }
}

/* ---- sweep grids -------------------------------------------------------------------------------- */

/* A grid's command options are entries of the table for that command, and a run grid's options give
 * what run's command line gives. */
static void grid_options_are_the_table(void **state) {
    (void)state;
    static const char *const cmds[] = {"estimate", "search", "run"};
    for (int c = 0; c < N(cmds); c++) {
        cli_cmd_t cmd;
        assert_int_equal(cli_command_find(cmds[c], &cmd), CLI_OK);
        const sweep_option_t *o = sweep_command_options(cmds[c]);
        assert_non_null(o);
        for (; o->name; o++) {
            char name[64];
            snprintf(name, sizeof name, "--%s", o->name);
            const cli_option_t *t = cli_option_find(name, cmd);
            if (!t || t->target == CLI_OPT_SCENARIO)
                fail_msg("grid option %s of %s is no command option of the table", o->name, cmds[c]);
            assert_int_equal(o->kind == SWEEP_OPT_BOOL, t->arg == NULL);
        }
    }
    char dir[] = "/tmp/stepsim_options_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char grid[256], out[256];
    snprintf(grid, sizeof grid, "%s/grid.json", dir);
    snprintf(out, sizeof out, "%s/out.jsonl", dir);
    FILE *f = fopen(grid, "w");
    assert_non_null(f);
    fputs("{\"command\": \"run\", \"scenario\": {\"model\": \"gpt3\", \"gpus\": 64, \"global_batch\": 16,"
          " \"parallel\": {\"pp\": 4, \"dp\": 2}},"
          " \"options\": {\"comm\": \"analytic\", \"interleave\": 2, \"optimizer-step\": false,"
          " \"placement\": \"tp,dp,pp\"}}",
          f);
    fclose(f);
    cli_run_t r = cli_run("sweep", grid, "--out", out, NULL);
    if (r.rc != 0)
        fail_msg("sweep: %s", r.err);
    cli_run_free(&r);
    FILE *in = fopen(out, "r");
    char line[65536];
    assert_non_null(fgets(line, sizeof line, in));
    fclose(in);
    cJSON *l = cJSON_Parse(line);
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(l, "result");
    static const char *const extra[] = {"--comm",           "analytic", "--interleave", "2",
                                        "--optimizer-step", "off",      "--placement",  "tp,dp,pp"};
    cJSON *c = json_of("run", extra, N(extra));
    assert_true(cli_json_num(g, "step_time_s") == cli_json_num(c, "step_time_s"));
    assert_true(cli_json_num(g, "analytic_iteration_time_s") == cli_json_num(c, "analytic_iteration_time_s"));
    assert_int_equal((int)cli_json_num(sim_of(g), "virtual_stages"), 2);
    assert_true(cli_json_num(sim_of(g), "optimizer_s") == 0.0);
    assert_string_equal(cli_json_str(sim_of(g), "placement"), cli_json_str(sim_of(c), "placement"));
    cJSON_Delete(c);
    cJSON_Delete(l);
    unlink(out);
    /* an option of another command, a misspelling, a bad value: one line naming the grid */
    static const struct {
        const char *grid, *frag;
    } bad[] = {
        {"{\"command\": \"search\", \"options\": {\"interleave\": 2}}",
         "options.interleave: not an option of search"},
        {"{\"command\": \"estimate\", \"options\": {\"comm\": \"analytic\"}}",
         "options.comm: not an option of estimate"},
        {"{\"command\": \"run\", \"options\": {\"shedule\": \"gpipe\"}}", "did you mean \"schedule\""},
        {"{\"command\": \"run\", \"options\": {\"trace\": \"t.json\"}}",
         "options.trace: not an option in a grid"},
        {"{\"command\": \"run\", \"options\": {\"placement\": \"tp,tp\"}}",
         "options: --placement: \"tp,tp\" is not an order of dimensions"},
        {"{\"command\": \"estimate\", \"options\": {\"placement\": \"tp,tp\"}}",
         "options: --placement: \"tp,tp\" is not an order of dimensions"},
    };
    for (int i = 0; i < N(bad); i++) {
        f = fopen(grid, "w");
        fputs(bad[i].grid, f);
        fclose(f);
        r = cli_run("sweep", grid, "--out", out, NULL);
        if (r.rc != 2 || !strstr(r.err, bad[i].frag) || cli_run_lines(r.err) != 1)
            fail_msg("%s: rc %d, %s", bad[i].grid, r.rc, r.err);
        cli_run_free(&r);
    }
    unlink(grid);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(interleave_everywhere), cmocka_unit_test(optimizer_step_everywhere),
        cmocka_unit_test(placement_everywhere),  cmocka_unit_test(same_refusals),
        cmocka_unit_test(parser_every_command),  cmocka_unit_test(equals_form),
        cmocka_unit_test(help_from_table),       cmocka_unit_test(grid_options_are_the_table),
    };
    return cmocka_run_group_tests_name("stepsim.options", tests, NULL, NULL);
}
