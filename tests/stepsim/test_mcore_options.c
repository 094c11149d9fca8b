/* stepsim/test_mcore_options.c - the options of Megatron-Core's distributed optimizer buckets and
 * pipeline send/receive overlap on the command line (--dp-comm sharded-overlap, --pp-comm-overlap):
 * estimate and run pass them to the model exactly, the JSON config echoes them, run's header says
 * what the sends do, and a bad value or the reference model is one line with exit 2. */
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

/* GPT-1.7B on 32 H100s, tp 4, pp 2, 2 virtual stages, dp 4. */
static model_job_t job_of(model_dp_comm_t dp_comm, int pp_overlap) {
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("GPT-1.7B", &j.model), MODEL_OK);
    assert_int_equal(model_system_preset("DGX-H100", &j.system), MODEL_OK);
    j.system.nvlink_size = model_system_preset_domain("DGX-H100");
    j.compat = MODEL_COMPAT_CORRECTED;
    j.gpus = 32;
    j.global_batch = 64;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, 4, 4, 4, 1, 2, 2, 1, 4, 1, 0, 0};
    int64_t group[4] = {4, 1, 4, 2}, nv[4] = {0, 0, 0, 0};
    model_nvlink_counts(j.gpus, j.system.nvlink_size, group, nv);
    j.par.nv_dp = nv[2];
    j.par.nv_pp = nv[3];
    j.training.interleave = 2;
    j.training.dp_comm = dp_comm;
    j.training.pp_comm_overlap = pp_overlap;
    assert_int_equal(model_job_check(&j, NULL), MODEL_OK);
    return j;
}

static void assert_rel(double got, double want, double rel) {
    if (!(fabs(got - want) <= rel * fabs(want)))
        fail_msg("got %.17g, want %.17g (rel %g)", got, want, rel);
}

static const char *const BASE[] = {"estimate", "--model", "GPT-1.7B", "--system",     "DGX-H100", "--gpus",
                                   "32",       "--tp",    "4",        "--pp",         "2",        "--gbs",
                                   "64",       "--mbs",   "2",        "--interleave", "2",        "--json"};

static cJSON *estimate(const char *dp_comm, const char *pp_overlap) {
    const char *argv[N(BASE) + 4];
    int n = 0;
    for (int i = 0; i < N(BASE); i++)
        argv[n++] = BASE[i];
    argv[n++] = "--dp-comm";
    argv[n++] = dp_comm;
    argv[n++] = "--pp-comm-overlap";
    argv[n++] = pp_overlap;
    return cli_run_json(argv, n);
}

/* The options reach the model: the same iteration time as the hand-built job, the config echoes
 * them, and the breakdown holds their closed forms. */
static void test_estimate(void **state) {
    (void)state;
    for (int k = 0; k < 2; k++) {
        cJSON *doc = estimate("sharded-overlap", k ? "on" : "off");
        const model_job_t job = job_of(MODEL_DP_SHARDED_OVERLAP, k);
        static model_estimate_t e;
        assert_int_equal(model_estimate(&job, &e), MODEL_OK);
        assert_rel(cli_json_num(doc, "iteration_time_s"), e.summary.iteration_time_s, 1e-12);
        const cJSON *t =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "config"), "training");
        assert_string_equal(cli_json_str(t, "dp_comm"), "sharded-overlap");
        const cJSON *ov = cJSON_GetObjectItemCaseSensitive(t, "pp_comm_overlap");
        if (k)
            assert_true(cJSON_IsTrue(ov));
        else
            assert_null(ov); /* only when on */
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(doc, "breakdown_s");
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(doc, "detail");
        assert_rel(cli_json_num(b, "dp_comm"),
                   cli_json_num(d, "dp_allgather_s") + cli_json_num(d, "dp_reducescatter_s"), 1e-12);
        if (k) /* the fill and drain: 2 (pp v - 1) transfers */
            assert_rel(cli_json_num(b, "pp_comm"), 6.0 * cli_json_num(d, "p2p_one_s"), 1e-12);
        cJSON_Delete(doc);
    }
    /* the overlap shortens the iteration */
    cJSON *on = estimate("sharded-overlap", "on"), *off = estimate("sharded-overlap", "off");
    assert_true(cli_json_num(on, "iteration_time_s") < cli_json_num(off, "iteration_time_s"));
    cJSON_Delete(on);
    cJSON_Delete(off);
}

/* run: the header names the modes and says the sends are async. */
static void test_run_header(void **state) {
    (void)state;
    cli_run_t r =
        cli_run("run", "--model", "GPT-1.7B", "--system", "DGX-H100", "--gpus", "32", "--tp", "4", "--pp",
                "2", "--gbs", "64", "--mbs", "2", "--interleave", "2", "--dp-comm", "sharded-overlap",
                "--pp-comm-overlap", "on", "--comm", "analytic", "--quiet", NULL);
    if (r.rc != 0)
        fprintf(stderr, "stderr: %s\n", r.err);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "dp comm sharded-overlap"));
    assert_non_null(strstr(r.out, "pp comm overlap on (sends and receives under the compute)"));
    assert_non_null(strstr(r.out, "async sends"));
    cli_run_free(&r);
}

/* Bad values and the reference model: one line naming the option, exit 2. */
static void test_errors(void **state) {
    (void)state;
    const char *bad_pp[] = {"estimate", "--model", "GPT-1.7B", "--gpus", "8", "--pp-comm-overlap", "maybe"};
    const char *f1[] = {"--pp-comm-overlap", "maybe", "training.pp_comm_overlap", "on, off"};
    cli_expect_error("pp-comm-overlap maybe", bad_pp, N(bad_pp), 2, f1, N(f1));
    const char *bad_dp[] = {"estimate", "--model",   "GPT-1.7B",        "--gpus",
                            "8",        "--dp-comm", "sharded-overlapp"};
    const char *f2[] = {"--dp-comm", "sharded-overlapp", "sharded-overlap"};
    cli_expect_error("dp-comm typo", bad_dp, N(bad_dp), 2, f2, N(f2));
    const char *ref[] = {"estimate",          "--model", "GPT-1.7B", "--gpus",   "8",
                         "--pp-comm-overlap", "on",      "--compat", "reference"};
    const char *f3[] = {"--pp-comm-overlap", "reference"};
    cli_expect_error("reference", ref, N(ref), 2, f3, N(f3));
}

/* --fp8-param-gather: with --precision fp8 the estimate equals the hand-built job with the field set
 * (the all-gathers move FP8 parameters: less exposed all-gather time), the config echoes it, run's
 * header names it; without fp8, or with a data-parallel all-reduce, it is one line naming the field,
 * exit 2. */
static void test_fp8_param_gather(void **state) {
    (void)state;
    const char *argv[N(BASE) + 6];
    for (int k = 0; k < 2; k++) {
        int n = 0;
        for (int i = 0; i < N(BASE); i++)
            argv[n++] = BASE[i];
        argv[n++] = "--dp-comm";
        argv[n++] = "sharded-overlap";
        argv[n++] = "--precision";
        argv[n++] = "fp8";
        argv[n++] = "--fp8-param-gather";
        argv[n++] = k ? "on" : "off";
        cJSON *doc = cli_run_json(argv, n);
        model_job_t job = job_of(MODEL_DP_SHARDED_OVERLAP, 0);
        job.training.precision = MODEL_PRECISION_FP8;
        job.training.fp8_param_gather = k;
        static model_estimate_t e, bf16_gather;
        assert_int_equal(model_estimate(&job, &e), MODEL_OK);
        assert_rel(cli_json_num(doc, "iteration_time_s"), e.summary.iteration_time_s, 1e-12);
        const cJSON *t =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "config"), "training");
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(t, "fp8_param_gather");
        if (k) {
            assert_true(cJSON_IsTrue(g));
            job.training.fp8_param_gather = 0;
            assert_int_equal(model_estimate(&job, &bf16_gather), MODEL_OK);
            assert_true(e.summary.dp_allgather_one_s < bf16_gather.summary.dp_allgather_one_s);
        } else {
            assert_null(g); /* only when on */
        }
        cJSON_Delete(doc);
    }
    cli_run_t r =
        cli_run("run", "--model", "GPT-1.7B", "--system", "DGX-H100", "--gpus", "32", "--tp", "4", "--pp",
                "2", "--gbs", "64", "--mbs", "2", "--interleave", "2", "--dp-comm", "sharded-overlap",
                "--precision", "fp8", "--fp8-param-gather", "on", "--comm", "analytic", "--quiet", NULL);
    if (r.rc != 0)
        fprintf(stderr, "stderr: %s\n", r.err);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "fp8 param gather on"));
    cli_run_free(&r);
    const char *bf16[] = {"estimate", "--model", "GPT-1.7B",           "--system", "DGX-H100",
                          "--gpus",   "8",       "--fp8-param-gather", "on"};
    const char *f1[] = {"--fp8-param-gather", "needs precision fp8"};
    cli_expect_error("fp8-param-gather without fp8", bf16, N(bf16), 2, f1, N(f1));
    const char *ar[] = {"estimate", "--model",     "GPT-1.7B", "--system",  "DGX-H100",  "--gpus",
                        "8",        "--precision", "fp8",      "--dp-comm", "allreduce", "--fp8-param-gather",
                        "on"};
    const char *f2[] = {"--fp8-param-gather", "dp_comm sharded or sharded-overlap"};
    cli_expect_error("fp8-param-gather with allreduce", ar, N(ar), 2, f2, N(f2));
    const char *bad[] = {"estimate", "--model", "GPT-1.7B", "--gpus", "8", "--fp8-param-gather", "maybe"};
    const char *f3[] = {"--fp8-param-gather", "maybe", "on, off"};
    cli_expect_error("fp8-param-gather maybe", bad, N(bad), 2, f3, N(f3));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_estimate),
        cmocka_unit_test(test_fp8_param_gather),
        cmocka_unit_test(test_run_header),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
