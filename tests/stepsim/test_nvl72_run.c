/* stepsim/test_nvl72_run.c - `run` on the NVL72 rack presets: a two-rack GB200 job (tensor and data
 * parallelism inside each rack's NVLink domain, the two pipeline stages on different racks) runs
 * on gb200-nvl72-superpod, says whether its collapse is exact, and gives the same result twice;
 * sizes that are not whole racks fail on one line with exit 2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "test_cli_run.h"

static cJSON *run_json(const char *system, const char *topology) {
    cli_run_t r = cli_run("run", "--system", system, "--topology", topology, "--gpus", "144", "--gbs", "72",
                          "--tp", "8", "--pp", "2", "--model", "GPT-1.7B", "--json", NULL);
    if (r.rc != 0)
        fprintf(stderr, "%s", r.err);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    cJSON *j = cJSON_Parse(r.out);
    assert_non_null(j);
    cli_run_free(&r);
    cJSON_DeleteItemFromObjectCaseSensitive(j, "wall_time_s"); /* the only field that may differ */
    return j;
}

static const cJSON *field(const cJSON *o, const char *a, const char *b) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    return b ? cJSON_GetObjectItemCaseSensitive(x, b) : x;
}

static void check_run(const char *system, const char *topology) {
    cJSON *a = run_json(system, topology), *b = run_json(system, topology);
    assert_true(cJSON_Compare(a, b, 1)); /* deterministic: every field but the wall time */
    const cJSON *sim = field(a, "simulation", NULL);
    assert_string_equal(field(sim, "topology", NULL)->valuestring, topology);
    const cJSON *c = field(sim, "collapse", NULL);
    /* every GPU simulated (tensor and data-parallel traffic share each GPU's NVLink), hence exact */
    assert_string_equal(field(c, "collapsed", NULL)->valuestring, "none");
    assert_true(cJSON_IsTrue(field(c, "exact", NULL)));
    assert_int_equal(field(c, "simulated_gpus", NULL)->valueint, 144);
    assert_true(field(a, "step_time_s", NULL)->valuedouble > 0);
    /* the pipeline's sends cross the fabric between the racks */
    assert_true(field(a, "breakdown_s", "exposed_pp_comm")->valuedouble > 0);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

static void test_gb200(void **state) {
    (void)state;
    check_run("GB200-NVL72", "gb200-nvl72-superpod");
}

static void test_gb300(void **state) {
    (void)state;
    check_run("GB300-NVL72", "gb300-nvl72-superpod");
}

static void test_whole_racks(void **state) {
    (void)state;
    cli_run_t r = cli_run("run", "--system", "GB200-NVL72", "--topology", "gb200-nvl72-superpod", "--gpus",
                          "108", "--gbs", "108", "--tp", "4", "--pp", "1", "--model", "GPT-1.7B", NULL);
    assert_int_equal(r.rc, 2);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err,
                        "stepsim run: --topology: gpus: 108 must be a multiple of gpus_per_node (72)\n");
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gb200),
        cmocka_unit_test(test_gb300),
        cmocka_unit_test(test_whole_racks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
