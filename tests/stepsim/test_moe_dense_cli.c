/* stepsim/test_moe_dense_cli.c - leading dense blocks of a mixture of experts from the command line:
 * the DeepSeek-V3-like preset (3 of 61 blocks dense) estimates with --ep 64 on 256 H100s, its memory
 * the job's fullest stage; the simulated step refuses first_dense > 0 with one line naming the field
 * and exit 2, and leaves no trace file behind. */
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

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v))
        fail_msg("no number %s", key);
    return v->valuedouble;
}

static void test_estimate_deepseek(void **state) {
    (void)state;
    const char *argv[] = {"estimate", "--model",  "DeepSeek-V3-like",
                          "--system", "DGX-H100", "--gpus",
                          "256",      "--gbs",    "256",
                          "--tp",     "1",        "--pp",
                          "1",        "--ep",     "64",
                          "--json"};
    cJSON *doc = cli_run_json(argv, (int)(sizeof argv / sizeof argv[0]));
    const double t = num(doc, "iteration_time_s"), mem = num(doc, "memory_gb");
    const cJSON *parts = cJSON_GetObjectItemCaseSensitive(doc, "memory_gb_parts");
    assert_non_null(parts);
    const double w = num(parts, "weights");
    assert_true(t > 0.1 && t < 100.0);
    /* 61 blocks on one stage: the held parameters (every one but other GPUs' routed experts, 26.6e9)
     * at 2 bytes; the memory is its parts' sum; no 80 GB GPU holds it */
    assert_true(w > 2.0 * 26.0 && w < 2.0 * 27.0);
    const double sum = w + num(parts, "gradients") + num(parts, "optimizer") + num(parts, "activations") +
                       num(parts, "fp8_weights");
    assert_true(fabs(sum - mem) <= 1e-9 * mem);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(doc, "fits")));
    cJSON_Delete(doc);
}

static void test_run_refuses(void **state) {
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "/tmp/stepsim-fdense-%d.json", (int)getpid());
    unlink(path);
    const char *argv[] = {"run",      "--model",  "DeepSeek-V3-like",
                          "--system", "DGX-H100", "--gpus",
                          "256",      "--gbs",    "256",
                          "--tp",     "1",        "--pp",
                          "1",        "--ep",     "64",
                          "--comm",   "analytic", "--trace",
                          path};
    const char *frags[] = {"model.first_dense", "3", "estimate"};
    cli_expect_error("run first_dense", argv, (int)(sizeof argv / sizeof argv[0]), 2, frags, 3);
    assert_int_equal(access(path, F_OK), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_estimate_deepseek),
        cmocka_unit_test(test_run_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
