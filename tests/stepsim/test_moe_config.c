/* stepsim/test_moe_config.c - mixture-of-experts models from the command line: the public Mixtral
 * 8x7B config.json (mistralai/Mixtral-8x7B-v0.1) gives the Mixtral-8x7B preset field for field; the
 * model object's expert keys; the estimate places the experts with --ep or a scenario's parallel.ep,
 * the simulated step runs them. */
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

#include "scenario.h"
#include "test_cli_run.h"

#include "test_cli_assert.h"

#define FIXTURE(name) STEPSIM_FIXTURE_DIR "/models/" name

static model_transformer_t model_of(const char *value) {
    scenario_t scn;
    cli_diag_t diag;
    memset(&diag, 0, sizeof diag);
    assert_int_equal(scenario_init(&scn, &diag), 0);
    assert_int_equal(scenario_set_option(&scn, "--model", value, &diag), 0);
    const model_transformer_t m = scn.model;
    scenario_destroy(&scn);
    return m;
}

static void test_mixtral_config_is_the_preset(void **state) {
    (void)state;
    const model_transformer_t a = model_of(FIXTURE("mixtral_8x7b_config.json")), b = model_of("Mixtral-8x7B");
    assert_string_equal(a.name, "mixtral_8x7b_config");
    model_transformer_t a2 = a;
    memcpy(a2.name, b.name, sizeof a2.name);
    assert_memory_equal(&a2, &b, sizeof a2); /* every field, the experts included */
    assert_int_equal(a.moe.experts, 8);
    assert_int_equal(a.moe.topk, 2);
    assert_int_equal(a.moe.expert_ffn_hidden, 14336);
}

static void test_model_object_keys(void **state) {
    (void)state;
    const model_transformer_t m =
        model_of("{\"base\": \"Llama3-8B\", \"experts\": 16, \"topk\": 4, \"shared_experts\": 1, "
                 "\"expert_ffn_hidden\": 1024, \"first_dense\": 2, \"capacity_factor\": 1.5}");
    assert_int_equal(m.moe.experts, 16);
    assert_int_equal(m.moe.topk, 4);
    assert_int_equal(m.moe.shared_experts, 1);
    assert_int_equal(m.moe.expert_ffn_hidden, 1024);
    assert_int_equal(m.moe.first_dense, 2);
    assert_true(m.moe.capacity_factor == 1.5);
}

/* The estimate places the experts (--ep), and so does the simulated step (its expert line); an
 * expert skew on a dense model is refused, one line naming it; an ep that does not divide the
 * experts names --ep. */
static void test_estimate_places_experts(void **state) {
    (void)state;
    cli_run_t r = cli_run("estimate", "--model", "Mixtral-8x7B", "--system", "H100", "--gpus", "64", "--gbs",
                          "256", "--tp", "2", "--pp", "4", "--ep", "8", "--json", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "\"ep\":\t8"));
    cli_run_free(&r);
    r = cli_run("run", "--model", "Mixtral-8x7B", "--system", "H100", "--gpus", "64", "--gbs", "256", "--tp",
                "2", "--pp", "4", "--ep", "8", "--comm", "analytic", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "experts: ep 8, expert data parallel 2, uniform routing"));
    cli_run_free(&r);
    const char *argv[] = {"run", "--model", "GPT-1.7B", "--gpus", "8", "--gbs", "8", "--expert-skew", "1"};
    const char *frags[] = {"expert skew: 1", "dense model"};
    cli_expect_error("run dense skew", argv, (int)(sizeof argv / sizeof argv[0]), 2, frags, 2);
    const char *argv3[] = {"estimate", "--model", "Mixtral-8x7B", "--system", "H100", "--gpus", "64",
                           "--gbs",    "256",     "--tp",         "2",        "--pp", "4",      "--ep",
                           "3"};
    const char *frags3[] = {"--ep", "3"};
    cli_expect_error("estimate ep 3", argv3, (int)(sizeof argv3 / sizeof argv3[0]), 2, frags3, 2);
}

/* run with experts on the network: the bytes per group gain ep (text and JSON, per GPU and total:
 * 4 all-to-alls of T e bytes k (ep - 1) / ep per block and microbatch), the JSON names the expert
 * groups and the skew, the trace's all-to-alls are cat "ep"; a dense run prints no ep row. */
static void test_run_ep_outputs(void **state) {
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "/tmp/stepsim_moe_trace_%d.json", (int)getpid());
    cli_run_t r = cli_run("run", "--model", "Mixtral-8x7B", "--system", "H100", "--gpus", "16", "--gbs", "16",
                          "--tp", "1", "--pp", "2", "--ep", "8", "--trace", path, "--quiet", NULL);
    assert_int_equal(r.rc, 0);
    /* T = 32768 tokens, e 4096, 2 bytes, k 2, 7/8: 0.469762048 GB per all-to-all; x 4 x 16 blocks x 2
     * microbatches = 60.130 GB per GPU, 962.073 GB for 16 GPUs */
    assert_non_null(strstr(r.out, "    ep                                       60.130        962.073\n"));
    assert_non_null(strstr(r.out, "experts: ep 8, expert data parallel 1, uniform routing"));
    cli_run_free(&r);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)size + 1);
    assert_non_null(buf);
    assert_true(fread(buf, 1, (size_t)size, f) == (size_t)size);
    buf[size] = '\0';
    fclose(f);
    remove(path);
    assert_non_null(strstr(buf, "\"name\":\"ep alltoall\",\"cat\":\"ep\""));
    free(buf);
    r = cli_run("run", "--model", "Mixtral-8x7B", "--system", "H100", "--gpus", "16", "--gbs", "16", "--tp",
                "1", "--pp", "2", "--ep", "8", "--expert-skew", "0.5", "--seed", "3", "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *d = cJSON_Parse(r.out);
    assert_non_null(d);
    const cJSON *ep =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "bytes_sent"), "ep");
    assert_non_null(ep);
    const double per = cJSON_GetObjectItemCaseSensitive(ep, "per_gpu_bytes")->valuedouble;
    assert_true(per > 60.13e9); /* the skew: every member sends what the busiest receives */
    const cJSON *x =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "simulation"), "experts");
    assert_non_null(x);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(x, "ep")->valueint, 8);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(x, "seed")->valueint, 3);
    assert_true(cJSON_GetObjectItemCaseSensitive(x, "skew")->valuedouble == 0.5);
    cJSON_Delete(d);
    cli_run_free(&r);
    /* compare's bytes table gains an ep column, the same bytes */
    r = cli_run("compare", "--model", "Mixtral-8x7B", "--system", "H100", "--gpus", "16", "--gbs", "16",
                "--tp", "1", "--pp", "2", "--ep", "8", "--topologies", "ideal", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "dp/GPU   ep/GPU\n"));
    assert_non_null(strstr(r.out, "   60.130\n"));
    cli_run_free(&r);
    r = cli_run("run", "--model", "GPT-1.7B", "--gpus", "16", "--gbs", "16", "--tp", "2", "--pp", "2", NULL);
    assert_int_equal(r.rc, 0);
    assert_null(strstr(r.out, "    ep  "));
    assert_null(strstr(r.out, "experts:"));
    cli_run_free(&r);
}

/* A scenario's parallel.ep reaches the job as --ep does. */
static void test_scenario_ep(void **state) {
    (void)state;
    cJSON *root = cJSON_Parse("{\"model\": \"Mixtral-8x7B\", \"system\": \"H100\", \"gpus\": 64, "
                              "\"global_batch\": 256, \"parallel\": {\"tp\": 2, \"pp\": 4, \"ep\": 4}}");
    assert_non_null(root);
    scenario_t scn;
    cli_diag_t diag;
    memset(&diag, 0, sizeof diag);
    assert_int_equal(scenario_init(&scn, &diag), 0);
    assert_int_equal(scenario_load_json(&scn, root, "moe.json", &diag), 0);
    model_job_t job;
    assert_int_equal(scenario_resolve(&scn, &job, &diag), 0);
    assert_int_equal(job.experts_par.ep, 4);
    assert_int_equal(job.par.dp, 8);
    scenario_destroy(&scn);
    cJSON_Delete(root);
}

/* The expert groups' members per NVLink domain follow the layout: Mixtral 8x7B on 64 H100s, tp 2,
 * pp 4, ep 8, with the domains holding the tensor pair and four stages (--nv-dp 1 --nv-pp 4) rather
 * than the default (tensor pair and four data-parallel ranks), so each ep group spans four domains.
 * The estimate and the analytic step (members per domain from the placement) agree in both layouts
 * to 0.3%, and the spread group is slower. */
static void test_expert_groups_follow_layout(void **state) {
    (void)state;
    double step[2], est[2];
    for (int spread = 0; spread < 2; spread++) {
        cli_run_t r =
            spread ? cli_run("run", "--model", "Mixtral-8x7B", "--system", "DGX-H100", "--gpus", "64",
                             "--gbs", "16", "--tp", "2", "--pp", "4", "--ep", "8", "--recompute", "full",
                             "--comm", "analytic", "--nv-dp", "1", "--nv-pp", "4", "--json", NULL)
                   : cli_run("run", "--model", "Mixtral-8x7B", "--system", "DGX-H100", "--gpus", "64",
                             "--gbs", "16", "--tp", "2", "--pp", "4", "--ep", "8", "--recompute", "full",
                             "--comm", "analytic", "--json", NULL);
        if (r.rc != 0)
            fail_msg("run: rc %d, %s", r.rc, r.err);
        cJSON *j = cJSON_Parse(r.out);
        assert_non_null(j);
        step[spread] = cJSON_GetObjectItemCaseSensitive(j, "step_time_s")->valuedouble;
        est[spread] = cJSON_GetObjectItemCaseSensitive(j, "analytic_iteration_time_s")->valuedouble;
        print_message("spread %d: step %.6f s, estimate %.6f s\n", spread, step[spread], est[spread]);
        if (fabs(step[spread] - est[spread]) > 3e-3 * est[spread])
            fail_msg("spread %d: step %.9g s, estimate %.9g s", spread, step[spread], est[spread]);
        cJSON_Delete(j);
        cli_run_free(&r);
    }
    assert_true(est[1] > 1.1 * est[0]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixtral_config_is_the_preset),
        cmocka_unit_test(test_model_object_keys),
        cmocka_unit_test(test_estimate_places_experts),
        cmocka_unit_test(test_scenario_ep),
        cmocka_unit_test(test_run_ep_outputs),
        cmocka_unit_test(test_expert_groups_follow_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
