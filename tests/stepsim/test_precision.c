/* stepsim/test_precision.c - --precision and the throughput fields on the command line: FP8 refused
 * on a system without an FP8 peak and with --compat reference (one line, exit 2); estimate, search
 * and run report model_tflops_per_gpu, tokens_per_s_per_gpu and mfu that follow from their own time
 * and the dense peak of the precision (docs/model.md, "MFU"). */
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

static void assert_rel(double got, double want, double rel) {
    if (!(fabs(got - want) <= rel * fabs(want)))
        fail_msg("got %.17g, want %.17g (rel %g)", got, want, rel);
}

/* The three fields of o against time_s, for model m on gpus GPUs with batch gbs at peak. */
static void assert_throughput(const cJSON *o, double time_s, const char *model, double gpus, double gbs,
                              double peak) {
    model_transformer_t m;
    assert_int_equal(model_transformer_preset(model, &m), MODEL_OK);
    const double tokens = gbs * (double)m.seq_len;
    assert_rel(cli_json_num(o, "tokens_per_s_per_gpu"), tokens / time_s / gpus, 1e-12);
    const double tflops = model_flops_per_token(&m) * tokens / time_s / gpus * 1e-12;
    assert_rel(cli_json_num(o, "model_tflops_per_gpu"), tflops, 1e-12);
    assert_rel(cli_json_num(o, "mfu"), tflops / peak, 1e-12);
}

static void test_refusals(void **state) {
    (void)state;
    const char *a100[] = {"estimate", "--model", "gpt3",  "--system",    "DGX-A100",
                          "--gpus",   "1024",    "--gbs", "1536",        "--tp",
                          "8",        "--pp",    "8",     "--precision", "fp8"};
    const char *f1[] = {"--precision: fp8", "DGX-A100 has no FP8 peak", "allowed: bf16"};
    cli_expect_error("a100", a100, N(a100), 2, f1, N(f1));
    const char *ref[] = {"estimate", "--system", "DGX-H100", "--compat", "reference", "--precision", "fp8"};
    const char *f2[] = {"--precision", "reference model has no training options"};
    cli_expect_error("reference", ref, N(ref), 2, f2, N(f2));
    const char *bad[] = {"estimate", "--system", "DGX-H100", "--precision", "fp16"};
    const char *f3[] = {"--precision", "fp16", "bf16, fp8"};
    cli_expect_error("bad value", bad, N(bad), 2, f3, N(f3));
    const char *srch[] = {"search", "--system", "A100", "--precision", "fp8"};
    const char *f4[] = {"--precision: fp8", "no FP8 peak"};
    cli_expect_error("search a100", srch, N(srch), 2, f4, N(f4));
}

static void test_estimate_and_search(void **state) {
    (void)state;
    for (int fp8 = 0; fp8 < 2; fp8++) {
        const char *est[] = {"estimate", "--model", "gpt3",        "--system",
                             "DGX-H100", "--gpus",  "1024",        "--gbs",
                             "1536",     "--tp",    "8",           "--pp",
                             "8",        "--json",  "--precision", fp8 ? "fp8" : "bf16"};
        cJSON *doc = cli_run_json(est, N(est));
        assert_throughput(doc, cli_json_num(doc, "iteration_time_s"), "gpt3", 1024, 1536,
                          fp8 ? 1978.9 : 989.4);
        const cJSON *parts = cJSON_GetObjectItemCaseSensitive(doc, "memory_gb_parts");
        assert_true((cli_json_num(parts, "fp8_weights") > 0.0) == fp8);
        const cJSON *tr =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "config"), "training");
        if (fp8)
            assert_string_equal(cli_json_str(tr, "precision"), "fp8");
        else
            assert_null(tr); /* bf16 alone: no training object, as before */
        cJSON_Delete(doc);
    }
    const char *srch[] = {"search", "--model", "GPT-18B", "--system", "DGX-B200", "--gpus",      "256",
                          "--gbs",  "1024",    "--top",   "2",        "--json",   "--precision", "fp8"};
    cJSON *doc = cli_run_json(srch, N(srch));
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(doc, "results");
    assert_int_equal(cJSON_GetArraySize(res), 2);
    for (int i = 0; i < 2; i++) {
        const cJSON *r = cJSON_GetArrayItem(res, i);
        assert_throughput(r, cli_json_num(r, "iteration_time_s"), "GPT-18B", 256, 1024, 4500);
    }
    cJSON_Delete(doc);
}

/* The simulated step on a GB200 NVL72 rack: the fields follow the simulated step time. */
static void test_run_nvl72(void **state) {
    (void)state;
    const char *run[] = {"run", "--model", "GPT-1.7B",    "--system", "GB200-NVL72", "--gpus",
                         "72",  "--gbs",   "144",         "--tp",     "8",           "--pp",
                         "1",   "--json",  "--precision", "fp8"};
    cJSON *doc = cli_run_json(run, N(run));
    assert_throughput(doc, cli_json_num(doc, "step_time_s"), "GPT-1.7B", 72, 144, 5000);
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(doc, "config");
    assert_int_equal((int)cli_json_num(cfg, "nvlink_size"), 72);
    cJSON_Delete(doc);
}

/* The racks' presets bring their NVLink domain of 72 unless --nvs comes later; the reference's
 * systems keep the default 8. */
static void test_rack_domain(void **state) {
    (void)state;
    const struct {
        const char *system, *nvs;
        int want;
    } cases[] = {
        {"GB300-NVL72", NULL, 72}, {"GB200-NVL72", "8", 8}, {"A100", NULL, 8}, {"DGX-B200", NULL, 8}};
    for (int i = 0; i < N(cases); i++) {
        const char *argv[] = {"estimate", "--gpus", "144",      "--gbs",         "144",   "--model",
                              "GPT-1.7B", "--json", "--system", cases[i].system, "--nvs", cases[i].nvs};
        cJSON *doc = cli_run_json(argv, cases[i].nvs ? N(argv) : N(argv) - 2);
        const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(doc, "config");
        assert_int_equal((int)cli_json_num(cfg, "nvlink_size"), cases[i].want);
        cJSON_Delete(doc);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_estimate_and_search),
        cmocka_unit_test(test_run_nvl72),
        cmocka_unit_test(test_rack_domain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
