/* stepsim/test_compare.c - `stepsim compare` and the `stepsim validate` waterfall end to end, in process:
 * the waterfall's changes add up to the simulated step (and that is run's step on the same topology);
 * a 2:1 tapered tree ranks behind its non-blocking twin when data-parallel traffic crosses the taper
 * and ties with it when the job stays under one leaf; --plot writes a PNG whose signature and IHDR
 * size are checked (skipped without gnuplot); a missing gnuplot exits 1; bad options exit 2 with one
 * line. Every case is a tiny job (milliseconds of simulated time). */
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

#define MODEL "{\"seq_len\":512,\"hidden\":1024,\"heads\":8,\"layers\":4,\"ffn_hidden\":4096}"
/* two leaves of four GPUs; the twin has half the spines (2:1 at the leaves) */
#define TREE(spines, name)                                                                                   \
    "{\"kind\":\"fat-tree\",\"tiers\":2,\"leaves\":2,\"endpoints_per_leaf\":4,\"spines\":" spines            \
    ",\"links_per_leaf_spine\":1,\"link_bandwidth_bytes_per_s\":25e9,\"name\":\"" name "\"}"
#define NB TREE("4", "nb")
#define TAPER TREE("2", "tap")
/* 8 GPUs, one per NVLink domain: tensor groups fill a leaf, data-parallel pairs cross the leaves */
#define CROSSING "--model", MODEL, "--gpus", "8", "--nvs", "1", "--tp", "4", "--pp", "1", "--gbs", "8"
/* 4 GPUs: all under the first leaf */
#define ONE_LEAF "--model", MODEL, "--gpus", "4", "--nvs", "1", "--tp", "2", "--pp", "1", "--gbs", "8"

static double num(const cJSON *o, const char *key) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(n))
        fail_msg("%s: missing or not a number", key);
    return n->valuedouble;
}

static cJSON *run_json(cli_run_t *r) {
    if (r->rc != 0)
        fail_msg("exit %d: %s", r->rc, r->err);
    cJSON *j = cJSON_Parse(r->out);
    if (!j)
        fail_msg("not JSON: %.200s", r->out);
    return j;
}

static void test_waterfall_sums(void **state) {
    (void)state;
    cli_run_t r = cli_run("validate", CROSSING, "--topology", TAPER, "--json", NULL);
    cJSON *j = run_json(&r);
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(j, "steps");
    assert_int_equal(cJSON_GetArraySize(steps), 4);
    double total = num(j, "analytic_iteration_time_s"), pct = 0;
    const cJSON *s = NULL;
    int k = 0;
    cJSON_ArrayForEach(s, steps) {
        if (k == 0)
            assert_true(num(s, "total_s") == total);
        else
            total += num(s, "delta_s");
        pct += num(s, "delta_pct_of_analytic");
        k++;
    }
    const double sim = num(j, "simulated_step_time_s");
    assert_true(fabs(total - sim) <= 1e-12 * sim);
    const double a = num(j, "analytic_iteration_time_s");
    assert_true(fabs(pct - 100.0 * (sim - a) / a) < 1e-9);
    /* the last total is run's simulated step on the same topology */
    cli_run_t rr = cli_run("run", CROSSING, "--topology", TAPER, "--json", NULL);
    cJSON *jr = run_json(&rr);
    assert_true(fabs(num(jr, "step_time_s") - sim) <= 1e-12 * sim);
    /* and the analytic-communication step is run's with --comm analytic */
    cli_run_t ra = cli_run("run", CROSSING, "--comm", "analytic", "--json", NULL);
    cJSON *ja = run_json(&ra);
    assert_true(fabs(num(ja, "step_time_s") - num(cJSON_GetArrayItem(steps, 1), "total_s")) <= 1e-12 * sim);
    cJSON_Delete(ja);
    cJSON_Delete(jr);
    cJSON_Delete(j);
    cli_run_free(&ra);
    cli_run_free(&rr);
    cli_run_free(&r);
    /* the text form names every step */
    r = cli_run("validate", CROSSING, "--topology", TAPER, NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "scheduling"));
    assert_non_null(strstr(r.out, "routing and contention"));
    assert_non_null(strstr(r.out, "simulated step (total)"));
    cli_run_free(&r);
}

/* The step times of nb and tap, and the ideal baseline first. */
static void compare_pair(const char *mode, double *nb, double *tap) {
    cli_run_t r = strcmp(mode, "crossing") == 0
                      ? cli_run("compare", CROSSING, "--topologies", NB "," TAPER, "--json", NULL)
                      : cli_run("compare", ONE_LEAF, "--topologies", NB "," TAPER, "--json", NULL);
    cJSON *j = run_json(&r);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "topologies");
    assert_int_equal(cJSON_GetArraySize(t), 3);
    const cJSON *first = cJSON_GetArrayItem(t, 0);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(first, "label")->valuestring, "ideal");
    assert_true(num(first, "slowdown_vs_ideal") == 1.0);
    const cJSON *e = NULL;
    cJSON_ArrayForEach(e, t) {
        const char *label = cJSON_GetObjectItemCaseSensitive(e, "label")->valuestring;
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(e, "breakdown_s");
        const double parts = num(b, "compute") + num(b, "exposed_tp_comm") + num(b, "exposed_pp_comm") +
                             num(b, "exposed_dp_comm") + num(b, "bubble_idle");
        assert_true(fabs(parts - num(e, "step_time_s")) <= 1e-9 * num(e, "step_time_s"));
        if (strcmp(label, "nb") == 0)
            *nb = num(e, "step_time_s");
        if (strcmp(label, "tap") == 0) {
            *tap = num(e, "step_time_s");
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "cost");
            /* crossing: 2 leaves and 2 spines; one leaf: the empty leaf is not built */
            assert_int_equal((int)num(c, "switches"), strcmp(mode, "crossing") == 0 ? 4 : 3);
        }
    }
    cJSON_Delete(j);
    cli_run_free(&r);
}

static void test_taper_ranking(void **state) {
    (void)state;
    double nb = 0, tap = 0;
    compare_pair("crossing", &nb, &tap);
    assert_true(nb > 0 && tap > nb * 1.005);
    nb = tap = 0;
    compare_pair("one-leaf", &nb, &tap);
    assert_true(nb > 0 && fabs(tap - nb) <= 1e-12 * nb);
}

static int have_gnuplot(void) {
    return system("gnuplot --version >/dev/null 2>&1") == 0;
}

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void check_png(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char h[24];
    assert_int_equal(fread(h, 1, sizeof h, f), sizeof h);
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    fclose(f);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    assert_memory_equal(h, sig, 8);
    assert_memory_equal(h + 12, "IHDR", 4);
    assert_int_equal(be32(h + 16), 900);
    assert_int_equal(be32(h + 20), 540);
    assert_true(size > 2000);
}

static void test_plot_png(void **state) {
    (void)state;
    if (!have_gnuplot()) {
        print_message("gnuplot is not installed: skipping the --plot PNG check\n");
        skip();
    }
    char dir[] = "/tmp/stepsim-compare-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char png[256], wf[256], svg[256];
    snprintf(png, sizeof png, "%s/compare.png", dir);
    snprintf(wf, sizeof wf, "%s/waterfall.png", dir);
    snprintf(svg, sizeof svg, "%s/scaling.svg", dir);
    cli_run_t r = cli_run("compare", CROSSING, "--topologies", NB "," TAPER, "--plot", png, NULL);
    assert_int_equal(r.rc, 0);
    cli_run_free(&r);
    check_png(png);
    r = cli_run("validate", CROSSING, "--topology", TAPER, "--plot", wf, NULL);
    assert_int_equal(r.rc, 0);
    cli_run_free(&r);
    check_png(wf);
    r = cli_run("compare", "--model", MODEL, "--nvs", "1", "--tp", "2", "--pp", "1", "--gbs", "8", "--gpus",
                "2,4,8", "--topologies", "fat-tree", "--plot", svg, NULL);
    if (r.rc != 0)
        fail_msg("exit %d: %s", r.rc, r.err);
    assert_non_null(strstr(r.out, "scaling"));
    cli_run_free(&r);
    FILE *f = fopen(svg, "r");
    assert_non_null(f);
    char head[512] = "";
    size_t got = fread(head, 1, sizeof head - 1, f);
    head[got] = '\0';
    fclose(f);
    assert_non_null(strstr(head, "<svg"));
    remove(png);
    remove(wf);
    remove(svg);
    assert_int_equal(rmdir(dir), 0); /* no temporary files left behind */
}

static void test_gnuplot_missing(void **state) {
    (void)state;
    setenv("STEPSIM_GNUPLOT", "/nonexistent/gnuplot", 1);
    cli_run_t r = cli_run("compare", ONE_LEAF, "--topologies", NB, "--plot", "/tmp/stepsim-never.png", NULL);
    unsetenv("STEPSIM_GNUPLOT");
    assert_int_equal(r.rc, 1);
    assert_int_equal(cli_run_lines(r.err), 1);
    assert_non_null(strstr(r.err, "gnuplot"));
    assert_int_equal(access("/tmp/stepsim-never.png", F_OK), -1);
    cli_run_free(&r);
}

static void test_bad_options(void **state) {
    (void)state;
    static const char *const cases[][12] = {
        {"compare", "--bogus", "1", NULL},
        {"compare", "--topologies", "", NULL},
        {"compare", "--topologies", "ideal,,nb", NULL},
        {"compare", "--topologies", "{nope", NULL},
        {"compare", "--plot", "out.jpg", NULL},
        {"compare", "--gpus", "8,x", NULL},
        {"compare", "--csv", NULL},
        {"validate", "--plot", "wf.pdf", NULL},
        {"validate", "--topologies", "ideal", NULL},
        {"compare", "--topologies", "no-such-topology", "--gpus", "8", "--nvs", "1", "--tp", "1", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n = 0;
        while (cases[i][n])
            n++;
        cli_run_t r = cli_run_argv(n, cases[i]);
        if (r.rc != 2 || cli_run_lines(r.err) != 1 || r.out[0])
            fail_msg("case %zu (%s %s): exit %d, stderr \"%s\", stdout %zu bytes", i, cases[i][0],
                     cases[i][1], r.rc, r.err, strlen(r.out));
        cli_run_free(&r);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_waterfall_sums), cmocka_unit_test(test_taper_ranking),
        cmocka_unit_test(test_plot_png),       cmocka_unit_test(test_gnuplot_missing),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
