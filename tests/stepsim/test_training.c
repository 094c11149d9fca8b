/* stepsim/test_training.c - the scenario's training options (--recompute, ..., and the "training"
 * object): estimate, search, run and compare pass them to the model exactly, a file and the options
 * agree, options override the file, and every bad value or misuse is one line with exit 2. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "model.h"
#include "test_cli_run.h"
#include "test_cli_assert.h"

#define SCN STEPSIM_FIXTURE_DIR "/scenarios/megatron_18b.json"
#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The fixture's job, built by hand. */
static model_job_t megatron_18b(void) {
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("GPT-18B", &j.model), MODEL_OK);
    assert_int_equal(model_system_preset("DGX-A100", &j.system), MODEL_OK);
    j.compat = MODEL_COMPAT_CORRECTED;
    j.gpus = 256;
    j.global_batch = 1024;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, 32, 8, 8, 1, 1, 1, 1, 8, 1, 1, 1};
    j.training.recompute = MODEL_RECOMPUTE_FULL;
    j.training.sequence_parallel = MODEL_SEQPAR_OFF;
    j.training.attention = MODEL_ATTENTION_MATERIALIZED;
    j.training.embedding = 1;
    j.training.optimizer_step = 1;
    j.training.dp_comm = MODEL_DP_ALLREDUCE;
    j.training.grad_accumulation = MODEL_GRAD_ACCUM_ADD;
    assert_int_equal(model_job_check(&j, NULL), MODEL_OK);
    return j;
}

static double iteration_s(const model_job_t *j) {
    model_estimate_t *e = malloc(sizeof *e);
    assert_non_null(e);
    assert_int_equal(model_estimate(j, e), MODEL_OK);
    const double t = e->summary.iteration_time_s;
    free(e);
    return t;
}

static void assert_rel(double got, double want, double rel) {
    if (!(fabs(got - want) <= rel * fabs(want)))
        fail_msg("got %.17g, want %.17g (rel %g)", got, want, rel);
}

/* The file, and the same settings as options, give the model's time of the hand-built job; the
 * config echoes them. */
static void test_file_and_options(void **state) {
    (void)state;
    const model_job_t job = megatron_18b();
    const double want = iteration_s(&job);
    const char *const file[] = {"estimate", SCN, "--json"};
    const char *const opts[] = {"estimate",
                                "--model",
                                "GPT-18B",
                                "--system",
                                "DGX-A100",
                                "--gpus",
                                "256",
                                "--gbs",
                                "1024",
                                "--tp",
                                "8",
                                "--pp",
                                "1",
                                "--recompute",
                                "full",
                                "--sequence-parallel",
                                "off",
                                "--attention",
                                "materialized",
                                "--embedding",
                                "on",
                                "--optimizer-step",
                                "on",
                                "--dp-comm",
                                "allreduce",
                                "--grad-accumulation",
                                "add",
                                "--json"};
    cJSON *a = cli_run_json(file, N(file)), *b = cli_run_json(opts, N(opts));
    assert_rel(cli_json_num(a, "iteration_time_s"), want, 1e-12);
    assert_rel(cli_json_num(b, "iteration_time_s"), want, 1e-12);
    const cJSON *t =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(a, "config"), "training");
    assert_string_equal(cli_json_str(t, "recompute"), "full");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(t, "sequence_parallel")));
    assert_string_equal(cli_json_str(t, "dp_comm"), "allreduce");
    cJSON_Delete(a);
    cJSON_Delete(b);
    /* each option moves the time the way the model says: options override the file */
    model_job_t plain = job;
    plain.training.recompute = MODEL_RECOMPUTE_NONE;
    plain.training.dp_comm = MODEL_DP_SHARDED;
    const char *const over[] = {"estimate", SCN, "--recompute", "none", "--dp-comm", "sharded", "--json"};
    cJSON *c = cli_run_json(over, N(over));
    assert_rel(cli_json_num(c, "iteration_time_s"), iteration_s(&plain), 1e-12);
    assert_true(cli_json_num(c, "iteration_time_s") < 0.9 * want);
    cJSON_Delete(c);
    /* without any training option the config has no training object (outputs as before) */
    const char *const none[] = {"estimate", "--json"};
    cJSON *d = cli_run_json(none, N(none));
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "config"), "training"));
    cJSON_Delete(d);
}

/* search evaluates every layout with the options: its best layout, re-estimated with them, has the
 * same time. */
static void test_search(void **state) {
    (void)state;
    const char *const argv[] = {
        "search", "--model",     "GPT-18B", "--system",    "DGX-A100",     "--gpus", "256", "--gbs",
        "1024",   "--recompute", "full",    "--attention", "materialized", "--top",  "1",   "--json"};
    cJSON *doc = cli_run_json(argv, N(argv));
    const cJSON *best = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "results"), 0);
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(best, "config");
    model_job_t j = megatron_18b();
    memset(&j.training, 0, sizeof j.training);
    j.training.recompute = MODEL_RECOMPUTE_FULL;
    j.training.attention = MODEL_ATTENTION_MATERIALIZED;
    j.par.strategy = MODEL_STRATEGY_1D;
    assert_string_equal(cli_json_str(cfg, "strategy"), "1d"); /* materialized attention: 1d or 2d-seqp */
    j.par.dp = (int64_t)cli_json_num(cfg, "dp");
    j.par.tp = j.par.tp1 = (int64_t)cli_json_num(cfg, "tp");
    j.par.tp2 = 1;
    j.par.pp = (int64_t)cli_json_num(cfg, "pp");
    j.par.mbs = (int64_t)cli_json_num(cfg, "mbs");
    j.par.nv_tp1 = (int64_t)cli_json_num(cfg, "nv_tp1");
    j.par.nv_tp2 = 1;
    j.par.nv_dp = (int64_t)cli_json_num(cfg, "nv_dp");
    j.par.nv_pp = (int64_t)cli_json_num(cfg, "nv_pp");
    assert_rel(cli_json_num(best, "iteration_time_s"), iteration_s(&j), 1e-12);
    cJSON_Delete(doc);
}

/* run and compare take them too: with analytic communication the simulated step of a one-stage job
 * is the estimate's (the closed form of a single stage; run's own optimizer step is off, as the
 * estimate's is by default). */
static void test_run_and_compare(void **state) {
    (void)state;
    const char *const est[] = {"estimate", "--model",     "GPT-1.7B", "--system",
                               "DGX-A100", "--gpus",      "8",        "--gbs",
                               "16",       "--tp",        "8",        "--pp",
                               "1",        "--recompute", "full",     "--sequence-parallel",
                               "off",      "--json"};
    const char *const run[] = {"run",      "--model",     "GPT-1.7B", "--system",
                               "DGX-A100", "--gpus",      "8",        "--gbs",
                               "16",       "--tp",        "8",        "--pp",
                               "1",        "--recompute", "full",     "--sequence-parallel",
                               "off",      "--comm",      "analytic", "--optimizer-step",
                               "off",      "--json"};
    cJSON *e = cli_run_json(est, N(est)), *r = cli_run_json(run, N(run));
    assert_rel(cli_json_num(r, "analytic_iteration_time_s"), cli_json_num(e, "iteration_time_s"), 1e-12);
    assert_rel(cli_json_num(r, "step_time_s"), cli_json_num(e, "iteration_time_s"), 1e-9);
    cJSON_Delete(e);
    cJSON_Delete(r);
    cli_run_t c =
        cli_run("compare", "--model", "GPT-1.7B", "--system", "DGX-A100", "--gpus", "8", "--gbs", "16",
                "--tp", "8", "--pp", "1", "--recompute", "full", "--topologies", "ideal", NULL);
    if (c.rc != 0)
        fail_msg("compare: %s", c.err);
    cli_run_free(&c);
}

static void test_errors(void **state) {
    (void)state;
    char bad_type[256], bad_key[256], ref_file[256];
    snprintf(bad_type, sizeof bad_type, "%s/scenarios/err_training_type.json", STEPSIM_FIXTURE_DIR);
    snprintf(bad_key, sizeof bad_key, "%s/scenarios/err_training_key.json", STEPSIM_FIXTURE_DIR);
    snprintf(ref_file, sizeof ref_file, "%s/scenarios/err_training_reference.json", STEPSIM_FIXTURE_DIR);
    static const char *const f_val[] = {"--recompute: \"most\" is not a value of training.recompute",
                                        "allowed: none, selective, full"};
    static const char *const f_bool[] = {"--embedding: \"maybe\"", "allowed: on, off"};
    static const char *const f_ref[] = {"--attention: the reference model has no training options",
                                        "allowed: --compat corrected"};
    static const char *const f_il[] = {"--interleave: 3 must divide the layers per pipeline stage (4)"};
    static const char *const f_search[] = {"--interleave: not an option of search"};
    static const char *const f_type[] = {"err_training_type.json: training.sequence_parallel: \"2\"",
                                         "allowed: on, off"};
    static const char *const f_key[] = {"training.recompte: unknown key (did you mean \"recompute\"?)"};
    static const char *const f_reff[] = {
        "err_training_reference.json: training.recompute: the reference model", "allowed: compat corrected"};
    static const char *const a1[] = {"estimate", "--recompute", "most"};
    static const char *const a2[] = {"run", "--embedding", "maybe"};
    static const char *const a3[] = {"estimate", "--compat", "reference", "--attention", "materialized"};
    static const char *const a4[] = {"estimate", "--interleave", "3"};
    static const char *const a5[] = {"search", "--interleave", "2"};
    const char *const a6[] = {"estimate", bad_type};
    const char *const a7[] = {"estimate", bad_key};
    const char *const a8[] = {"search", ref_file};
    cli_expect_error("value", a1, N(a1), 2, f_val, N(f_val));
    cli_expect_error("bool", a2, N(a2), 2, f_bool, N(f_bool));
    cli_expect_error("reference", a3, N(a3), 2, f_ref, N(f_ref));
    cli_expect_error("interleave", a4, N(a4), 2, f_il, N(f_il));
    cli_expect_error("search", a5, N(a5), 2, f_search, N(f_search));
    cli_expect_error("type", a6, N(a6), 2, f_type, N(f_type));
    cli_expect_error("key", a7, N(a7), 2, f_key, N(f_key));
    cli_expect_error("reference file", a8, N(a8), 2, f_reff, N(f_reff));
}

/* --tp-comm-overlap and training.tp_comm_overlap: the file and the options give the hand-built job's
 * time, faster than without the overlap; the config says so (text and JSON), off leaves no trace;
 * run's simulated step stays within 1% of it; misuse is one line, exit 2. */
static void test_tp_comm_overlap(void **state) {
    (void)state;
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("GPT-18B", &j.model), MODEL_OK);
    assert_int_equal(model_system_preset("DGX-H100", &j.system), MODEL_OK);
    j.gpus = 64;
    j.global_batch = 64;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, 4, 8, 8, 1, 2, 1, 1, 8, 1, 1, 1};
    j.training.recompute = MODEL_RECOMPUTE_SELECTIVE;
    j.training.embedding = 1;
    j.training.optimizer_step = 1;
    j.training.tp_comm_overlap = 1;
    assert_int_equal(model_job_check(&j, NULL), MODEL_OK);
    model_job_t off = j;
    off.training.tp_comm_overlap = 0;
    const double want = iteration_s(&j);
    assert_true(want < iteration_s(&off));
    char file[256];
    snprintf(file, sizeof file, "%s/scenarios/tp_overlap_h100.json", STEPSIM_FIXTURE_DIR);
    const char *const a[] = {"estimate", file, "--json"};
    const char *const b[] = {"estimate",  "--model",
                             "GPT-18B",   "--system",
                             "DGX-H100",  "--gpus",
                             "64",        "--gbs",
                             "64",        "--tp",
                             "8",         "--pp",
                             "2",         "--recompute",
                             "selective", "--embedding",
                             "on",        "--optimizer-step",
                             "on",        "--tp-comm-overlap",
                             "on",        "--json"};
    const char *const c[] = {"estimate", file, "--tp-comm-overlap", "off", "--json"};
    cJSON *ja = cli_run_json(a, N(a)), *jb = cli_run_json(b, N(b)), *jc = cli_run_json(c, N(c));
    assert_rel(cli_json_num(ja, "iteration_time_s"), want, 1e-12);
    assert_rel(cli_json_num(jb, "iteration_time_s"), want, 1e-12);
    assert_rel(cli_json_num(jc, "iteration_time_s"), iteration_s(&off), 1e-12);
    const cJSON *ta =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ja, "config"), "training");
    const cJSON *tc =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(jc, "config"), "training");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ta, "tp_comm_overlap")));
    assert_null(cJSON_GetObjectItemCaseSensitive(tc, "tp_comm_overlap"));
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    cJSON_Delete(jc);
    const char *const t[] = {"estimate", file};
    cli_run_t rt = cli_run_argv(N(t), t);
    assert_int_equal(rt.rc, 0);
    assert_non_null(strstr(rt.out, "tp comm overlap on (chunked under the GEMMs)"));
    free(rt.out);
    free(rt.err);
    /* the simulated step, analytic communication */
    const char *const r[] = {
        "run", file, "--comm", "analytic", "--granularity", "layer", "--optimizer-step", "on", "--json"};
    cJSON *jr = cli_run_json(r, N(r));
    assert_rel(cli_json_num(jr, "step_time_s"), want, 0.01);
    cJSON_Delete(jr);
    static const char *const f_2d[] = {
        "--tp-comm-overlap: on; tensor-parallel communication overlap needs strategy 1d or 2d-seqp"};
    static const char *const f_sp[] = {
        "--tp-comm-overlap: on; tensor-parallel communication overlap needs sequence parallelism on"};
    static const char *const f_full[] = {"--tp-comm-overlap: on; not modelled with full recomputation",
                                         "allowed: recompute none or selective"};
    static const char *const f_ref[] = {"--tp-comm-overlap: the reference model has no training options"};
    static const char *const f_val[] = {"--tp-comm-overlap: \"2\" is not a value of training.tp_comm_overlap",
                                        "allowed: on, off"};
    static const char *const e1[] = {"estimate", "--strategy",        "2d", "--tp1", "4", "--tp2",
                                     "2",        "--tp-comm-overlap", "on"};
    static const char *const e2[] = {"estimate", "--sequence-parallel", "off", "--tp-comm-overlap", "on"};
    static const char *const e3[] = {"run", "--recompute", "full", "--tp-comm-overlap", "on"};
    static const char *const e4[] = {"estimate", "--compat", "reference", "--tp-comm-overlap", "on"};
    static const char *const e5[] = {"estimate", "--tp-comm-overlap", "2"};
    cli_expect_error("2d", e1, N(e1), 2, f_2d, N(f_2d));
    cli_expect_error("sequence parallelism", e2, N(e2), 2, f_sp, N(f_sp));
    cli_expect_error("full recomputation", e3, N(e3), 2, f_full, N(f_full));
    cli_expect_error("reference", e4, N(e4), 2, f_ref, N(f_ref));
    cli_expect_error("value", e5, N(e5), 2, f_val, N(f_val));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tp_comm_overlap), cmocka_unit_test(test_file_and_options),
        cmocka_unit_test(test_search),          cmocka_unit_test(test_run_and_compare),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
