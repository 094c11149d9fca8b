/* stepsim/test_bytes.c - the bytes per link and per parallel group that `run` and `compare` report:
 * run's JSON has every busiest link's bytes, all links' together and each group's data bytes (per
 * GPU = total over the GPUs); on the ideal network without NCCL's calibration every byte sent crosses
 * two links, so all links carry twice what the groups sent (up to the links' picosecond rounding); the text
 * prints them; compare's row of a topology reports what run reports on it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "test_cli_run.h"

#define JOB "--model", "GPT-1.7B", "--gpus", "16", "--gbs", "16", "--tp", "2", "--pp", "2"

static const char *const GROUPS[] = {"tp", "cp", "pp", "dp"};

static double num(const cJSON *o, const char *key) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(n))
        fail_msg("no number %s", key);
    return n->valuedouble;
}

static const cJSON *obj(const cJSON *o, const char *key) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!x)
        fail_msg("no field %s", key);
    return x;
}

/* The groups' total bytes summed; checks per GPU x GPUs = total for each. */
static double groups_sum(const cJSON *sent, double gpus) {
    double sum = 0.0;
    for (int g = 0; g < 4; g++) {
        const cJSON *x = obj(sent, GROUPS[g]);
        const double total = num(x, "total_bytes"), per = num(x, "per_gpu_bytes");
        assert_true(fabs(per * gpus - total) <= 1e-12 * total);
        sum += total;
    }
    return sum;
}

static void test_run_ideal(void **state) {
    (void)state;
    cli_run_t r = cli_run("run", JOB, "--topology", "ideal", "--calibration", "none", "--json", NULL);
    if (r.rc != 0)
        fail_msg("exit %d: %s", r.rc, r.err);
    cJSON *j = cJSON_Parse(r.out);
    assert_non_null(j);
    const cJSON *links = obj(j, "links");
    const double total = num(links, "total_bytes");
    const cJSON *b;
    int n = 0;
    cJSON_ArrayForEach(b, obj(links, "busiest")) {
        assert_true(num(b, "bytes") > 0.0 && num(b, "bytes") <= total);
        n++;
    }
    assert_int_equal(n, 5);
    const cJSON *sent = obj(j, "bytes_sent");
    const double sum = groups_sum(sent, 16.0);
    assert_true(num(obj(sent, "tp"), "total_bytes") > 0 && num(obj(sent, "pp"), "total_bytes") > 0 &&
                num(obj(sent, "dp"), "total_bytes") > 0);
    assert_true(num(obj(sent, "cp"), "total_bytes") == 0.0);
    /* a link integrates its load up to completion times rounded up to whole picoseconds (sim.h):
     * at most one picosecond at its rate per flow more (here 4e-8 of the total), never less */
    assert_true(total >= 2.0 * sum && total - 2.0 * sum <= 1e-7 * total);
    cJSON_Delete(j);
    cli_run_free(&r);
    r = cli_run("run", JOB, "--topology", "ideal", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "all links together"));
    assert_non_null(strstr(r.out, "bytes sent per step (data bytes)"));
    cli_run_free(&r);
}

static void test_compare_as_run(void **state) {
    (void)state;
    cli_run_t r = cli_run("run", JOB, "--topology", "fat-tree", "--json", NULL);
    if (r.rc != 0)
        fail_msg("exit %d: %s", r.rc, r.err);
    cJSON *run = cJSON_Parse(r.out);
    assert_non_null(run);
    cli_run_free(&r);
    r = cli_run("compare", JOB, "--topologies", "fat-tree", "--json", NULL);
    if (r.rc != 0)
        fail_msg("exit %d: %s", r.rc, r.err);
    cJSON *cmp = cJSON_Parse(r.out);
    assert_non_null(cmp);
    const cJSON *row, *ft = NULL;
    cJSON_ArrayForEach(row, obj(cmp, "topologies")) {
        if (strcmp(cJSON_GetObjectItemCaseSensitive(row, "label")->valuestring, "fat-tree") == 0)
            ft = row;
        groups_sum(obj(row, "bytes_sent"), 16.0);
    }
    assert_non_null(ft);
    const cJSON *links = obj(run, "links");
    assert_true(num(ft, "total_link_bytes") == num(links, "total_bytes"));
    assert_true(num(ft, "busiest_link_bytes") == num(cJSON_GetArrayItem(obj(links, "busiest"), 0), "bytes"));
    for (int g = 0; g < 4; g++)
        assert_true(num(obj(obj(ft, "bytes_sent"), GROUPS[g]), "per_gpu_bytes") ==
                    num(obj(obj(run, "bytes_sent"), GROUPS[g]), "per_gpu_bytes"));
    cJSON_Delete(run);
    cJSON_Delete(cmp);
    cli_run_free(&r);
    r = cli_run("compare", JOB, "--topologies", "fat-tree", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "bytes per step   busiest link"));
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_ideal),
        cmocka_unit_test(test_compare_as_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
