/* stepsim/test_what_if.c - stragglers and the baseline beside the what-if, end to end (run, compare):
 * - run with perturbations reports the baseline, which is the unperturbed run's step exactly, and
 *   the cost (what-if minus baseline, in s and %); --baseline off leaves it out; without
 *   perturbations nothing of it appears;
 * - each entry's cost is the step with only that entry minus the baseline (checked against a run
 *   with that entry alone); with one entry it is the what-if's cost;
 * - the scenario file's perturbations object and the options mean the same; GPUs by range, by node
 *   and by seeded fraction are counted as documented; a slowed GPU of stage 0 is the critical GPU;
 * - jitter is deterministic (the same JSON twice, wall times aside), another seed differs;
 * - compare: every topology row has its baseline, equal to compare without perturbations;
 * - bad input: one line, exit 2, naming the file or option, the field and the value. */
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

#include "test_cli_assert.h"

#define SMALL "--model", "gpt3", "--gpus", "64", "--gbs", "16", "--pp", "4", "--dp", "2"
#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const cJSON *obj(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v)
        fail_msg("%s: missing", key);
    return v;
}

static void test_baseline(void **state) {
    (void)state;
    const char *modes[] = {"analytic", "network"};
    for (int i = 0; i < 2; i++) {
        const char *plain[] = {"run", SMALL, "--comm", modes[i], "--json"};
        const char *what[] = {"run", SMALL, "--comm", modes[i], "--slow-gpus", "3:1.5", "--json"};
        const char *off[] = {"run",   SMALL,        "--comm", modes[i], "--slow-gpus",
                             "3:1.5", "--baseline", "off",    "--json"};
        cJSON *p = cli_run_json(plain, N(plain)), *w = cli_run_json(what, N(what)),
              *o = cli_run_json(off, N(off));
        assert_null(cJSON_GetObjectItemCaseSensitive(p, "perturbations"));
        assert_null(cJSON_GetObjectItemCaseSensitive(p, "baseline"));
        const double base = cli_json_num(obj(w, "baseline"), "step_time_s");
        const double step = cli_json_num(w, "step_time_s");
        assert_true(base == cli_json_num(p, "step_time_s")); /* the same scenario without perturbations */
        assert_true(step > base);
        assert_true(cli_json_num(w, "what_if_cost_s") == step - base);
        assert_true(fabs(cli_json_num(w, "what_if_cost_percent") - 100.0 * (step - base) / base) < 1e-9);
        /* one entry: its cost is the what-if's */
        const cJSON *pert = obj(w, "perturbations");
        assert_true(cli_json_num(pert, "slowed_gpus") == 1);
        const cJSON *e0 = cJSON_GetArrayItem(obj(pert, "entries"), 0);
        assert_string_equal(cli_json_str(e0, "entry"), "gpus 3 x1.5");
        assert_true(cli_json_num(e0, "cost_s") == step - base);
        /* the slowed GPU is on stage 0, which ends a 1F1B step: it is the critical GPU */
        assert_true(cli_json_num(obj(w, "simulation"), "critical_gpu") == 3);
        assert_true(cli_json_num(obj(w, "simulation"), "critical_stage") == 0);
        assert_true(cli_json_num(obj(w, "simulation"), "critical_gpu") !=
                    cli_json_num(obj(p, "simulation"), "critical_gpu"));
        /* every GPU simulated, and the note says why */
        const cJSON *col = obj(obj(w, "simulation"), "collapse");
        assert_true(cli_json_num(col, "simulated_gpus") == 64);
        assert_non_null(strstr(cli_json_str(col, "note"), "perturbations"));
        /* --baseline off: the same what-if, no baseline */
        assert_true(cli_json_num(o, "step_time_s") == step);
        assert_null(cJSON_GetObjectItemCaseSensitive(o, "baseline"));
        assert_null(cJSON_GetObjectItemCaseSensitive(o, "what_if_cost_s"));
        cJSON_Delete(p);
        cJSON_Delete(w);
        cJSON_Delete(o);
    }
}

static void test_entry_costs(void **state) {
    (void)state;
    const char *both[] = {"run",   SMALL,          "--comm", "analytic", "--slow-gpus",
                          "3:1.3", "--slow-nodes", "5:1.2",  "--json"};
    const char *one[] = {"run", SMALL, "--comm", "analytic", "--slow-nodes", "5:1.2", "--json"};
    const char *never[] = {"run",          SMALL,   "--comm",        "analytic", "--slow-gpus", "3:1.3",
                           "--slow-nodes", "5:1.2", "--entry-costs", "off",      "--json"};
    cJSON *b = cli_run_json(both, N(both)), *o = cli_run_json(one, N(one)),
          *n = cli_run_json(never, N(never));
    const cJSON *entries = obj(obj(b, "perturbations"), "entries");
    assert_int_equal(cJSON_GetArraySize(entries), 2);
    const cJSON *e1 = cJSON_GetArrayItem(entries, 1);
    assert_string_equal(cli_json_str(e1, "entry"), "nodes 5 x1.2");
    /* the entry alone is the run with only that entry */
    assert_true(cli_json_num(e1, "step_time_s") == cli_json_num(o, "step_time_s"));
    assert_true(cli_json_num(e1, "cost_s") == cli_json_num(o, "what_if_cost_s"));
    /* a node is an NVLink domain: 8 GPUs; with GPU 3: 9 */
    assert_true(cli_json_num(obj(o, "perturbations"), "slowed_gpus") == 8);
    assert_true(cli_json_num(obj(b, "perturbations"), "slowed_gpus") == 9);
    /* off: the entries are listed without costs, and the note says why */
    const cJSON *ne = cJSON_GetArrayItem(obj(obj(n, "perturbations"), "entries"), 0);
    assert_null(cJSON_GetObjectItemCaseSensitive(ne, "cost_s"));
    assert_non_null(strstr(cli_json_str(obj(n, "perturbations"), "entry_costs_note"), "--entry-costs off"));
    assert_true(cli_json_num(n, "step_time_s") == cli_json_num(b, "step_time_s"));
    cJSON_Delete(b);
    cJSON_Delete(o);
    cJSON_Delete(n);
}

static void test_file_and_options(void **state) {
    (void)state;
    const char *file[] = {"run", "@perturb.json", "--comm", "analytic", "--json"};
    const char *opts[] = {"run",
                          SMALL,
                          "--comm",
                          "analytic",
                          "--seed",
                          "5",
                          "--slow-gpus",
                          "3,40-41:1.3",
                          "--slow-nodes",
                          "2:1.1",
                          "--slow-fraction",
                          "0.05:1.2",
                          "--jitter",
                          "lognormal:0.02",
                          "--entry-costs",
                          "off",
                          "--json"};
    cJSON *f = cli_run_json(file, N(file)), *o = cli_run_json(opts, N(opts));
    assert_true(cli_json_num(f, "step_time_s") == cli_json_num(o, "step_time_s"));
    const cJSON *p = obj(f, "perturbations");
    assert_true(cli_json_num(p, "seed") == 5);
    /* 3 + 8 + round(0.05 x 64) = 3 GPUs, less those chosen twice */
    const double slowed = cli_json_num(p, "slowed_gpus");
    assert_true(slowed >= 11 && slowed <= 14);
    assert_true(cli_json_num(obj(o, "perturbations"), "slowed_gpus") == slowed);
    assert_string_equal(cli_json_str(obj(p, "jitter"), "distribution"), "lognormal");
    /* four entries, each alone costs something */
    const cJSON *entries = obj(p, "entries");
    assert_int_equal(cJSON_GetArraySize(entries), 4);
    for (int k = 0; k < 4; k++)
        assert_true(cli_json_num(cJSON_GetArrayItem(entries, k), "cost_s") > 0);
    cJSON_Delete(f);
    cJSON_Delete(o);
    /* the fraction alone: round(0.05 x 64) = 3 GPUs, another seed other GPUs, the same count */
    const char *fr[] = {"run", SMALL, "--comm", "analytic", "--slow-fraction", "0.05:1.2", "--json"};
    const char *fr2[] = {"run",      SMALL,    "--comm", "analytic", "--slow-fraction",
                         "0.05:1.2", "--seed", "2",      "--json"};
    cJSON *a = cli_run_json(fr, N(fr)), *b = cli_run_json(fr2, N(fr2));
    assert_true(cli_json_num(obj(a, "perturbations"), "slowed_gpus") == 3);
    assert_true(cli_json_num(obj(b, "perturbations"), "slowed_gpus") == 3);
    assert_true(strcmp(cli_json_str(obj(a, "perturbations"), "slowed_list"),
                       cli_json_str(obj(b, "perturbations"), "slowed_list")) != 0);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

/* The JSON text without its wall times (the only thing that may differ run to run). */
static char *stable(const char *const *argv, int n) {
    cJSON *j = cli_run_json(argv, n);
    cJSON_DeleteItemFromObjectCaseSensitive(j, "wall_time_s");
    cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "baseline");
    if (b)
        cJSON_DeleteItemFromObjectCaseSensitive(b, "wall_time_s");
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    return text;
}

static void test_jitter_deterministic(void **state) {
    (void)state;
    const char *a[] = {"run", SMALL, "--jitter", "normal:0.1", "--seed", "11", "--json"};
    const char *b[] = {"run", SMALL, "--jitter", "normal:0.1", "--seed", "12", "--json"};
    const char *z[] = {"run", SMALL, "--jitter", "normal:0", "--json"};
    const char *plain[] = {"run", SMALL, "--json"};
    char *x = stable(a, N(a)), *y = stable(a, N(a)), *other = stable(b, N(b));
    assert_string_equal(x, y);
    assert_true(strcmp(x, other) != 0);
    cJSON_free(x);
    cJSON_free(y);
    cJSON_free(other);
    /* cv 0: no perturbation at all, the plain run's output */
    char *zero = stable(z, N(z)), *none = stable(plain, N(plain));
    assert_string_equal(zero, none);
    cJSON_free(zero);
    cJSON_free(none);
}

static void test_compare(void **state) {
    (void)state;
    const char *what[] = {"compare",     SMALL,   "--topologies", "ideal,fat-tree",
                          "--slow-gpus", "3:1.5", "--quiet",      "--json"};
    const char *plain[] = {"compare", SMALL, "--topologies", "ideal,fat-tree", "--quiet", "--json"};
    cJSON *w = cli_run_json(what, N(what)), *p = cli_run_json(plain, N(plain));
    assert_true(cli_json_num(obj(w, "perturbations"), "slowed_gpus") == 1);
    const cJSON *entries = obj(obj(w, "perturbations"), "entries");
    assert_int_equal(cJSON_GetArraySize(entries), 1);
    assert_string_equal(cJSON_GetArrayItem(entries, 0)->valuestring, "gpus 3 x1.5");
    for (int i = 0; i < 2; i++) {
        const cJSON *rw = cJSON_GetArrayItem(obj(w, "topologies"), i),
                    *rp = cJSON_GetArrayItem(obj(p, "topologies"), i);
        const double base = cli_json_num(rw, "baseline_step_time_s"), step = cli_json_num(rw, "step_time_s");
        assert_true(base == cli_json_num(rp, "step_time_s"));
        assert_true(step > base);
        assert_true(cli_json_num(rw, "what_if_cost_s") == step - base);
        assert_null(cJSON_GetObjectItemCaseSensitive(rp, "baseline_step_time_s"));
    }
    cJSON_Delete(w);
    cJSON_Delete(p);
}

/* --trace: only the what-if is traced (the same trace as without the baseline) */
static void test_trace(void **state) {
    (void)state;
    char path[64], path2[64];
    snprintf(path, sizeof path, "/tmp/stepsim_what_if_%d.json", (int)getpid());
    snprintf(path2, sizeof path2, "/tmp/stepsim_what_if_%d_off.json", (int)getpid());
    const char *with[] = {"run",   SMALL,     "--comm", "analytic", "--slow-gpus",
                          "3:1.5", "--trace", path,     "--json"};
    const char *off[] = {"run",        SMALL, "--comm",  "analytic", "--slow-gpus", "3:1.5",
                         "--baseline", "off", "--trace", path2,      "--json"};
    cJSON *a = cli_run_json(with, N(with)), *b = cli_run_json(off, N(off));
    assert_non_null(cJSON_GetObjectItemCaseSensitive(a, "baseline"));
    assert_true(cli_json_num(obj(a, "trace"), "complete_events") ==
                cli_json_num(obj(b, "trace"), "complete_events"));
    assert_true(cli_json_num(obj(a, "trace"), "complete_events") > 0);
    cJSON_Delete(a);
    cJSON_Delete(b);
    remove(path);
    remove(path2);
}

static void test_errors(void **state) {
    (void)state;
    static const struct {
        const char *name;
        const char *argv[16];
        int n;
        const char *frags[3];
    } cases[] = {
        {"gpu beyond", {"run", SMALL, "--slow-gpus", "0-64:1.5"}, 13, {"--slow-gpus", "GPU 64", "(63)"}},
        {"node beyond", {"run", SMALL, "--slow-nodes", "8:2"}, 13, {"--slow-nodes", "node 8", "(7)"}},
        {"factor zero", {"run", SMALL, "--slow-gpus", "1:0"}, 13, {"--slow-gpus", "slowdown 0", "> 0"}},
        {"no factor", {"run", SMALL, "--slow-gpus", "1"}, 13, {"--slow-gpus", "RANGES:FACTOR", NULL}},
        {"fraction", {"run", SMALL, "--slow-fraction", "0:2"}, 13, {"--slow-fraction", "fraction", "<= 1"}},
        {"distribution",
         {"run", SMALL, "--jitter", "lognorml:0.1"},
         13,
         {"--jitter", "lognorml", "\"lognormal\"?"}},
        {"cv", {"run", SMALL, "--jitter", "normal:11"}, 13, {"--jitter", "cv 11", "0..10"}},
        {"seed", {"run", SMALL, "--seed", "x"}, 13, {"--seed", "\"x\"", NULL}},
        {"baseline", {"run", SMALL, "--baseline", "of"}, 13, {"--baseline", "\"of\"", "\"off\"?"}},
        {"approx",
         {"run", SMALL, "--slow-gpus", "1:2", "--collapse", "approx"},
         15,
         {"--collapse", "approx", "auto, off"}},
        {"compare approx",
         {"compare", SMALL, "--slow-gpus", "1:2", "--collapse", "approx"},
         15,
         {"--collapse", "approx", NULL}},
        {"file key",
         {"run", "@err_perturb_key.json"},
         2,
         {"err_perturb_key.json", "perturbations.jiter", "\"jitter\"?"}},
        {"file gpu",
         {"run", "@err_perturb_gpu.json"},
         2,
         {"perturbations.gpus[1].gpus", "\"60-70\"", "GPU 70"}},
        {"file dist",
         {"run", "@err_perturb_dist.json"},
         2,
         {"perturbations.jitter.distribution", "\"lognorm\"", "\"lognormal\"?"}},
        {"file factor",
         {"run", "@err_perturb_factor.json"},
         2,
         {"perturbations.gpus[0].slowdown", "-1", "> 0"}},
        {"validate", {"validate", "@perturb.json"}, 2, {"perturb.json", "perturbations", "run or compare"}},
        {"sweep",
         {"sweep", "@err_perturb_sweep.json", "--out", "/tmp/stepsim_never_written.jsonl"},
         4,
         {"err_perturb_sweep.json", "perturbations", "run or compare"}},
    };
    for (int i = 0; i < N(cases); i++)
        cli_expect_error(cases[i].name, cases[i].argv, cases[i].n, 2, cases[i].frags, 3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_baseline),         cmocka_unit_test(test_entry_costs),
        cmocka_unit_test(test_file_and_options), cmocka_unit_test(test_jitter_deterministic),
        cmocka_unit_test(test_compare),          cmocka_unit_test(test_trace),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
