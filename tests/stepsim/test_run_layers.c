/* stepsim/test_run_layers.c - `run --layers`: one block as simulated beside the estimate's per-layer
 * table. With the model's collective costs on the step (--comm analytic) and no overlap, every row's
 * simulated time (compute + exposed communication) equals the estimate --layers times of its layers
 * summed, and the block's forward and backward times equal the sums of the whole table, with every GPU
 * simulated and collapsed; on a network the collectives take their simulated time, exposed at most
 * all of it; --granularity microbatch (no operation per layer) is refused with one line. */
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
/* every operation's duration is rounded to a picosecond once: a row sums a few */
#define PS_TOL 1e-11

static double num(const cJSON *o, const char *key) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(n))
        fail_msg("no number %s", key);
    return n->valuedouble;
}

static const char *str(const cJSON *o, const char *key) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(s))
        fail_msg("no string %s", key);
    return s->valuestring;
}

/* The estimate's per-layer time of one pass summed over the layers from a to b (names; the table's
 * order, either way round). */
static double estimate_sum(const cJSON *layers, const char *pass, const char *a, const char *b) {
    int ia = -1, ib = -1, i = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, layers) {
        if (strcmp(str(l, "name"), a) == 0)
            ia = i;
        if (strcmp(str(l, "name"), b) == 0)
            ib = i;
        i++;
    }
    assert_true(ia >= 0 && ib >= 0);
    const int lo = ia < ib ? ia : ib, hi = ia < ib ? ib : ia;
    double sum = 0.0;
    for (i = lo; i <= hi; i++)
        sum += num(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(layers, i), pass), "time_s");
    return sum;
}

static void check_analytic(const char *collapse) {
    cli_run_t e = cli_run("estimate", JOB, "--layers", "--json", NULL);
    assert_int_equal(e.rc, 0);
    cJSON *est = cJSON_Parse(e.out);
    assert_non_null(est);
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(est, "layers");
    assert_true(cJSON_IsArray(layers));
    cli_run_t r =
        cli_run("run", JOB, "--comm", "analytic", "--collapse", collapse, "--layers", "--json", NULL);
    if (r.rc != 0)
        fail_msg("exit %d: %s", r.rc, r.err);
    cJSON *run = cJSON_Parse(r.out);
    assert_non_null(run);
    const cJSON *view = cJSON_GetObjectItemCaseSensitive(run, "layers");
    assert_non_null(view);
    const cJSON *row;
    double total[2] = {0, 0};
    int n = 0, with_comm = 0;
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(view, "rows")) {
        const char *pass = str(row, "pass");
        const double want = estimate_sum(layers, pass, str(row, "first_layer"), str(row, "last_layer"));
        const double got = num(row, "compute_s") + num(row, "exposed_comm_s");
        if (fabs(got - want) > PS_TOL)
            fail_msg("%s %s..%s: simulated %.12g s, estimate %.12g s", pass, str(row, "first_layer"),
                     str(row, "last_layer"), got, want);
        assert_true(fabs(num(row, "analytic_time_s") - want) <= 1e-12 * want);
        assert_true(num(row, "exposed_comm_s") == num(row, "comm_s")); /* nothing overlaps */
        with_comm += num(row, "comm_s") > 0.0;
        total[strcmp(pass, "bwd") == 0] += want;
        n++;
    }
    assert_true(n >= 4 && with_comm >= 4);
    /* the whole table: the block's forward and backward */
    double table[2] = {0, 0};
    const cJSON *l;
    cJSON_ArrayForEach(l, layers) {
        table[0] += num(cJSON_GetObjectItemCaseSensitive(l, "fwd"), "time_s");
        table[1] += num(cJSON_GetObjectItemCaseSensitive(l, "bwd"), "time_s");
    }
    assert_true(fabs(total[0] - table[0]) <= 1e-12 * table[0] &&
                fabs(total[1] - table[1]) <= 1e-12 * table[1]);
    assert_true(fabs(num(view, "fwd_time_s") - table[0]) <= PS_TOL * n);
    assert_true(fabs(num(view, "bwd_time_s") - table[1]) <= PS_TOL * n);
    cJSON_Delete(est);
    cJSON_Delete(run);
    cli_run_free(&e);
    cli_run_free(&r);
}

static void test_analytic_equals_estimate(void **state) {
    (void)state;
    check_analytic("off");
    check_analytic("auto");
}

static void test_network(void **state) {
    (void)state;
    cli_run_t r = cli_run("run", JOB, "--topology", "fat-tree", "--layers", "--json", NULL);
    if (r.rc != 0)
        fail_msg("exit %d: %s", r.rc, r.err);
    cJSON *run = cJSON_Parse(r.out);
    const cJSON *view = cJSON_GetObjectItemCaseSensitive(run, "layers");
    assert_non_null(view);
    const cJSON *row;
    double comm = 0.0;
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(view, "rows")) {
        assert_true(num(row, "exposed_comm_s") >= 0.0 && num(row, "exposed_comm_s") <= num(row, "comm_s"));
        comm += num(row, "comm_s");
    }
    assert_true(comm > 0.0);
    cJSON_Delete(run);
    cli_run_free(&r);
    r = cli_run("run", JOB, "--layers", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "one block as simulated"));
    cli_run_free(&r);
    r = cli_run("run", JOB, "--layers", "--granularity", "microbatch", NULL);
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "--layers"));
    assert_non_null(strstr(r.err, "--granularity"));
    assert_non_null(strchr(r.err, '\n'));
    assert_true(strchr(r.err, '\n') == r.err + strlen(r.err) - 1); /* one line */
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_analytic_equals_estimate),
        cmocka_unit_test(test_network),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
