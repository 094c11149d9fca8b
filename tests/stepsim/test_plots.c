/* stepsim/test_plots.c - what the --plot scripts of `stepsim compare` and of the `stepsim validate`
 * waterfall say, read structurally (never pixels): gnuplot is replaced (STEPSIM_GNUPLOT) by a shell
 * script that keeps the script it is given and writes an empty output file, so the test runs without
 * gnuplot. Checked: the workload is named in the title; compare's bars carry their values; the
 * slowdown panel's data is the step time against the best topology's (0 for the best); every bar
 * panel's y axis starts at 0; the scaling panel plots efficiency (1 for the analytic estimate at the
 * smallest GPU count) with its key outside the plot; a waterfall whose axis does not start at 0 says
 * so and marks the break. Every case is a tiny job. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "test_cli_run.h"

#define MODEL                                                                                                \
    "{\"name\":\"tiny-gpt\",\"seq_len\":512,\"hidden\":1024,\"heads\":8,\"layers\":4,\"ffn_hidden\":4096}"
#define TREE(spines, name)                                                                                   \
    "{\"kind\":\"fat-tree\",\"tiers\":2,\"leaves\":2,\"endpoints_per_leaf\":4,\"spines\":" spines            \
    ",\"links_per_leaf_spine\":1,\"link_bandwidth_bytes_per_s\":25e9,\"name\":\"" name "\"}"
#define CROSSING "--model", MODEL, "--gpus", "8", "--nvs", "1", "--tp", "4", "--pp", "1", "--gbs", "8"

typedef struct fake {
    char dir[64], gp[128], script[128];
} fake_t;

/* A stand-in for gnuplot: keeps its script as f->script and creates the file of its `set output`. */
static void fake_setup(fake_t *f) {
    snprintf(f->dir, sizeof f->dir, "/tmp/stepsim-plots-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->gp, sizeof f->gp, "%s/gnuplot", f->dir);
    snprintf(f->script, sizeof f->script, "%s/script.gp", f->dir);
    FILE *s = fopen(f->gp, "w");
    assert_non_null(s);
    fprintf(s,
            "#!/bin/sh\n[ \"$1\" = --version ] && exit 0\ncp \"$1\" '%s' || exit 1\n"
            "out=$(sed -n \"s/^set output '\\(.*\\)'$/\\1/p\" \"$1\" | head -n 1)\n: > \"$out\"\n",
            f->script);
    fclose(s);
    assert_int_equal(chmod(f->gp, 0755), 0);
    setenv("STEPSIM_GNUPLOT", f->gp, 1);
}

static char *fake_script(const fake_t *f) {
    FILE *s = fopen(f->script, "r");
    assert_non_null(s);
    fseek(s, 0, SEEK_END);
    const long n = ftell(s);
    rewind(s);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, s), (size_t)n);
    buf[n] = '\0';
    fclose(s);
    return buf;
}

static void fake_teardown(fake_t *f, const char *plot) {
    unsetenv("STEPSIM_GNUPLOT");
    remove(plot);
    remove(f->script);
    remove(f->gp);
    assert_int_equal(rmdir(f->dir), 0);
}

/* The lines of inline data block name ("$name << EOD" .. "EOD") as rows of up to 16 numbers after an
 * optional quoted label; returns the rows. */
static int data_block(const char *script, const char *name, double rows[][16], int max_rows, int *cols) {
    char head[64];
    snprintf(head, sizeof head, "%s << EOD\n", name);
    const char *p = strstr(script, head);
    assert_non_null(p);
    p += strlen(head);
    int n = 0;
    while (strncmp(p, "EOD", 3) != 0 && n < max_rows) {
        const char *end = strchr(p, '\n');
        assert_non_null(end);
        if (*p == '"')
            p = strchr(p + 1, '"') + 1;
        int c = 0;
        while (p < end && c < 16) {
            char *q;
            rows[n][c] = strtod(p, &q);
            if (q == p)
                break;
            c++;
            p = q;
        }
        *cols = c;
        n++;
        p = end + 1;
    }
    return n;
}

/* Every `set yrange [lo:` of the script: lows into lo[], returns how many. */
static int yranges(const char *script, double *lo, int max) {
    int n = 0;
    for (const char *p = script; (p = strstr(p, "set yrange [")) && n < max; p++)
        lo[n++] = strtod(p + strlen("set yrange ["), NULL);
    return n;
}

static void test_compare_plot(void **state) {
    (void)state;
    fake_t f;
    fake_setup(&f);
    char png[128];
    snprintf(png, sizeof png, "%s/compare.png", f.dir);
    cli_run_t r = cli_run("compare", CROSSING, "--topologies", TREE("4", "nb") "," TREE("2", "tap"), "--plot",
                          png, "--json", NULL);
    if (r.rc != 0)
        fail_msg("exit %d: %s", r.rc, r.err);
    char *s = fake_script(&f);
    /* the workload in the title */
    const char *title = strstr(s, "set multiplot layout 1,2 title \"");
    assert_non_null(title);
    const char *eol = strchr(title, '\n');
    const char *name = strstr(title, "tiny-gpt on 8 x ");
    assert_true(name && name < eol);
    /* slowdown against the best topology, from the step times of the JSON */
    cJSON *j = cJSON_Parse(r.out);
    assert_non_null(j);
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(j, "topologies");
    assert_true(cJSON_IsArray(rows));
    double bars[16][16];
    int cols = 0;
    const int n = data_block(s, "$bars", bars, 16, &cols);
    assert_int_equal(n, cJSON_GetArraySize(rows));
    assert_int_equal(n, 3);    /* ideal, nb, tap */
    assert_int_equal(cols, 7); /* compute, tp, pp, dp, bubble, total, slowdown % */
    double best = INFINITY;
    for (int i = 0; i < n; i++) {
        const double step =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(rows, i), "step_time_s")->valuedouble;
        assert_true(fabs(bars[i][5] - step) <= 1e-8 * step); /* written with 9 digits */
        best = fmin(best, step);
    }
    int zeros = 0;
    for (int i = 0; i < n; i++) {
        assert_true(fabs(bars[i][6] - 100.0 * (bars[i][5] / best - 1.0)) <= 1e-5);
        zeros += bars[i][6] == 0.0;
    }
    assert_int_equal(zeros, 1);
    assert_true(bars[2][6] > 0.5); /* the tapered tree is visibly slower than nb here */
    /* values on both bar panels, y axes from zero */
    assert_non_null(strstr(s, "using 0:7:(sprintf("));
    assert_non_null(strstr(s, "using 0:8:(sprintf("));
    assert_non_null(strstr(s, "Slowdown against the best topology (nb)"));
    double lo[8];
    const int ny = yranges(s, lo, 8);
    assert_int_equal(ny, 2);
    for (int i = 0; i < ny; i++)
        assert_true(lo[i] == 0.0);
    free(s);
    cJSON_Delete(j);
    cli_run_free(&r);
    fake_teardown(&f, png);
}

static void test_scaling_panel(void **state) {
    (void)state;
    fake_t f;
    fake_setup(&f);
    char svg[128];
    snprintf(svg, sizeof svg, "%s/scaling.svg", f.dir);
    cli_run_t r = cli_run("compare", "--model", MODEL, "--nvs", "1", "--tp", "2", "--pp", "1", "--gbs", "8",
                          "--gpus", "4,2,8", "--topologies", "fat-tree,ideal", "--plot", svg, NULL);
    if (r.rc != 0)
        fail_msg("exit %d: %s", r.rc, r.err);
    char *s = fake_script(&f);
    assert_non_null(strstr(s, "set multiplot layout 1,3 title \"tiny-gpt on 8 x "));
    double sc[16][16];
    int cols = 0;
    const int n = data_block(s, "$scale", sc, 16, &cols);
    assert_int_equal(n, 3);
    assert_int_equal(cols, 4); /* gpus, analytic, fat-tree, ideal */
    /* efficiency: 1 for the analytic estimate at the smallest count (2 GPUs, the second row), every
     * value in (0, top], the plotted range (at least 1.15) */
    assert_true(sc[1][0] == 2.0);
    assert_true(fabs(sc[1][1] - 1.0) <= 1e-12);
    const char *yr = strstr(strstr(s, "set title 'Scaling efficiency"), "set yrange [0:");
    assert_non_null(yr);
    const double top = strtod(yr + strlen("set yrange [0:"), NULL);
    assert_true(top >= 1.15);
    for (int i = 0; i < n; i++)
        for (int c = 1; c < cols; c++)
            assert_true(sc[i][c] > 0.0 && sc[i][c] <= top);
    /* the scaling panel: efficiency from zero, its key outside the plot area */
    const char *panel = strstr(s, "set title 'Scaling efficiency");
    assert_non_null(panel);
    const char *key = strstr(panel, "set key ");
    assert_non_null(key);
    assert_true(strncmp(key, "set key outside", 15) == 0);
    assert_non_null(strstr(panel, "set yrange [0:"));
    free(s);
    cli_run_free(&r);
    fake_teardown(&f, svg);
}

static void test_waterfall_break(void **state) {
    (void)state;
    fake_t f;
    fake_setup(&f);
    char png[128];
    snprintf(png, sizeof png, "%s/waterfall.png", f.dir);
    cli_run_t r = cli_run("validate", CROSSING, "--topology", TREE("2", "tap"), "--plot", png, NULL);
    if (r.rc != 0)
        fail_msg("exit %d: %s", r.rc, r.err);
    char *s = fake_script(&f);
    assert_non_null(strstr(s, "tiny-gpt on 8 x "));
    double lo[4];
    assert_int_equal(yranges(s, lo, 4), 1);
    /* this job's changes are small against its step: the axis is zoomed, so it is marked broken */
    assert_true(lo[0] > 0.0);
    char said[96];
    snprintf(said, sizeof said, "y axis broken: it starts at %.4g s, not at 0", lo[0]);
    assert_non_null(strstr(s, said));
    assert_non_null(strstr(s, "set arrow 1 from graph -0.025"));
    free(s);
    cli_run_free(&r);
    fake_teardown(&f, png);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compare_plot),
        cmocka_unit_test(test_scaling_panel),
        cmocka_unit_test(test_waterfall_break),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
