/* stepsim/test_fsdp_options.c - fully sharded data parallelism on the command line (--dp-comm fsdp):
 * estimate passes it to the model exactly and echoes it, its memory part appears with it only, run
 * simulates it, search finds the layouts only it fits, and what it is not modelled with is one line
 * with exit 2. */
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

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Llama 3 70B on 64 DGX H100s (NVLink domains of 8), global batch 128, selective recomputation,
 * the embedding and the optimizer step. */
static model_job_t llama_job(model_dp_comm_t dp_comm, int64_t tp, int64_t pp) {
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("Llama3-70B", &j.model), MODEL_OK);
    assert_int_equal(model_system_preset("DGX-H100", &j.system), MODEL_OK);
    j.system.nvlink_size = model_system_preset_domain("DGX-H100");
    j.compat = MODEL_COMPAT_CORRECTED;
    j.gpus = 64;
    j.global_batch = 128;
    const int64_t dp = 64 / (tp * pp);
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, dp, tp, tp, 1, pp, 1, 1, tp, 1, 0, 0};
    int64_t group[4] = {tp, 1, dp, pp}, nv[4] = {0, 0, 0, 0};
    model_nvlink_counts(j.gpus, j.system.nvlink_size, group, nv);
    j.par.nv_tp1 = nv[0];
    j.par.nv_dp = nv[2];
    j.par.nv_pp = nv[3];
    j.training.recompute = MODEL_RECOMPUTE_SELECTIVE;
    j.training.embedding = 1;
    j.training.optimizer_step = 1;
    j.training.dp_comm = dp_comm;
    assert_int_equal(model_job_check(&j, NULL), MODEL_OK);
    return j;
}

static void assert_rel(double got, double want, double rel) {
    if (!(fabs(got - want) <= rel * fabs(want)))
        fail_msg("got %.17g, want %.17g (rel %g)", got, want, rel);
}

static cJSON *estimate(const char *dp_comm) {
    const char *argv[] = {"estimate",    "--model",   "Llama3-70B",  "--system",  "DGX-H100",
                          "--gpus",      "64",        "--gbs",       "128",       "--tp",
                          "4",           "--pp",      "1",           "--mbs",     "1",
                          "--embedding", "on",        "--recompute", "selective", "--optimizer-step",
                          "on",          "--dp-comm", dp_comm,       "--json"};
    return cli_run_json(argv, N(argv));
}

/* The option reaches the model: the same iteration time and memory as the hand-built job, the config
 * echoes it, the units in flight are a memory part of fsdp only. */
static void test_estimate(void **state) {
    (void)state;
    cJSON *doc = estimate("fsdp");
    const model_job_t job = llama_job(MODEL_DP_FSDP, 4, 1);
    static model_estimate_t e;
    assert_int_equal(model_estimate(&job, &e), MODEL_OK);
    assert_rel(cli_json_num(doc, "iteration_time_s"), e.summary.iteration_time_s, 1e-12);
    assert_rel(cli_json_num(doc, "memory_gb"), e.summary.memory_gb, 1e-12);
    const cJSON *t =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "config"), "training");
    assert_string_equal(cli_json_str(t, "dp_comm"), "fsdp");
    const cJSON *parts = cJSON_GetObjectItemCaseSensitive(doc, "memory_gb_parts");
    assert_rel(cli_json_num(parts, "fsdp_gathered"), e.summary.fsdp_gathered_gb, 1e-12);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "fits")));
    cJSON_Delete(doc);
    /* the distributed optimizer at the same layout: no such part, and it does not fit */
    doc = estimate("sharded-overlap");
    parts = cJSON_GetObjectItemCaseSensitive(doc, "memory_gb_parts");
    assert_null(cJSON_GetObjectItemCaseSensitive(parts, "fsdp_gathered"));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(doc, "fits")));
    cJSON_Delete(doc);
}

/* search: with fsdp the best layout is one the distributed optimizer cannot fit (tp 4, pp 1, dp 16),
 * faster than the distributed optimizer's best. */
static void test_search(void **state) {
    (void)state;
    const model_job_t fs = llama_job(MODEL_DP_FSDP, 4, 1), dist = llama_job(MODEL_DP_SHARDED_OVERLAP, 4, 1);
    model_search_result_t rf, rd;
    assert_int_equal(model_search_run(&fs, 1u << MODEL_STRATEGY_1D, 3, &rf), MODEL_OK);
    assert_int_equal(model_search_run(&dist, 1u << MODEL_STRATEGY_1D, 3, &rd), MODEL_OK);
    assert_true(rf.n_results > 0 && rd.n_results > 0);
    const model_summary_t *best = &rf.results[0];
    assert_int_equal(best->par.tp, 4);
    assert_int_equal(best->par.pp, 1);
    assert_int_equal(best->par.dp, 16);
    assert_true(best->fits);
    assert_true(best->iteration_time_s < rd.results[0].iteration_time_s);
    assert_true(rf.candidates_feasible > rd.candidates_feasible);
    static model_estimate_t e;
    assert_int_equal(model_estimate(&dist, &e), MODEL_OK);
    assert_false(e.summary.fits);
    model_search_result_destroy(&rf);
    model_search_result_destroy(&rd);
}

/* run: the header names the mode, and the simulated step is near the estimate. */
static void test_run(void **state) {
    (void)state;
    cli_run_t r = cli_run("run", "--model", "GPT-1.7B", "--system", "DGX-H100", "--gpus", "32", "--tp", "4",
                          "--pp", "1", "--gbs", "64", "--mbs", "2", "--embedding", "on", "--dp-comm", "fsdp",
                          "--comm", "analytic", "--quiet", NULL);
    if (r.rc != 0)
        fprintf(stderr, "stderr: %s\n", r.err);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "dp comm fsdp"));
    assert_non_null(strstr(r.out, "(simulated -0.000%)"));
    cli_run_free(&r);
}

/* What fsdp is not modelled with: one line naming the field, exit 2. */
static void test_errors(void **state) {
    (void)state;
    const char *inter[] = {"estimate", "--model", "GPT-1.7B", "--gpus",    "32",  "--tp",
                           "4",        "--pp",    "2",        "--gbs",     "64",  "--interleave",
                           "2",        "--mbs",   "1",        "--dp-comm", "fsdp"};
    const char *f1[] = {"--dp-comm", "fsdp", "interleave 1"};
    cli_expect_error("fsdp interleaved", inter, N(inter), 2, f1, N(f1));
    const char *zb[] = {"estimate", "--model",   "GPT-1.7B", "--gpus", "32", "--tp",
                        "4",        "--pp",      "2",        "--gbs",  "64", "--pipeline-schedule",
                        "zb-h1",    "--dp-comm", "fsdp"};
    const char *f2[] = {"--dp-comm", "fsdp", "1f1b"};
    cli_expect_error("fsdp zb-h1", zb, N(zb), 2, f2, N(f2));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_estimate),
        cmocka_unit_test(test_search),
        cmocka_unit_test(test_run),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
