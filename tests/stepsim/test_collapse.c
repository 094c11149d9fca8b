/* stepsim/test_collapse.c - `--collapse auto` never approximates: on fat-trees (2:1 tapered
 * included) it collapses the tensor ranks exactly and gives what `--collapse off` gives, step time,
 * breakdown and the busiest links with their utilisation, NVLink links included (they carry the
 * collapsed tensor collectives); where collapsing is not exact (a dragonfly whose rails share global
 * cables) it simulates every GPU.
 * `--collapse approx` is labelled approximate, with the measured error, in run (text and JSON),
 * compare (text, JSON, CSV) and validate's waterfall (text and JSON). The dragonflies of 256-512 GPUs
 * are stepsim.collapse_full (slow). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "collapse_check.h"
#include "step.h"

/* Returns how many of the 64 busiest links are NVLink links. */
static int expect_collapsed(const char *const *args, const char *want) {
    char level[32];
    const int nvlink = collapse_same_as_off(args, level, sizeof level);
    assert_string_equal(level, want);
    return nvlink;
}

static void test_fat_tree(void **state) {
    (void)state;
    const char *const a[] = {"--model", "GPT-18B", "--gpus", "64",         "--tp",     "8", "--pp",
                             "2",       "--gbs",   "64",     "--topology", "fat-tree", NULL};
    /* NVLink links among the busiest: the tensor collectives' links of every collapsed rank */
    assert_true(expect_collapsed(a, "tensor ranks") > 0);
}

static void test_fat_tree_tapered(void **state) {
    (void)state;
    const char *const a[] = {"--model", "GPT-18B", "--gpus", "128",        "--tp",         "8", "--pp",
                             "2",       "--gbs",   "128",    "--topology", "fat-tree-2:1", NULL};
    expect_collapsed(a, "tensor ranks");
}

/* A dragonfly whose rails share global cables (stepsim.compare_ugal's job): collapsing is not exact. */
#define MODEL "{\"seq_len\":512,\"hidden\":1024,\"heads\":8,\"layers\":4,\"ffn_hidden\":4096}"

static void test_dragonfly_small(void **state) {
    (void)state;
    const char *const a[] = {"--model", MODEL, "--gpus", "32", "--nvs",      "4",         "--tp", "4",
                             "--pp",    "1",   "--gbs",  "32", "--topology", "dragonfly", NULL};
    expect_collapsed(a, "none");
}

static void expect_warning(const cJSON *o, const char *where) {
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "warning");
    if (!cJSON_IsString(w) || strcmp(w->valuestring, STEP_APPROX_WARNING) != 0)
        fail_msg("%s: no approximate warning", where);
}

static void test_approx_labelled(void **state) {
    (void)state;
    /* run: JSON and text */
    cli_run_t r = cli_run("run", "--model", MODEL, "--gpus", "32", "--nvs", "4", "--tp", "4", "--pp", "1",
                          "--gbs", "32", "--topology", "dragonfly", "--collapse", "approx", "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *j = cJSON_Parse(r.out);
    assert_non_null(j);
    expect_warning(j, "run --json");
    const cJSON *c =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "simulation"), "collapse");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(c, "exact")));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(c, "collapsed")->valuestring, "tensor ranks");
    cJSON_Delete(j);
    cli_run_free(&r);
    assert_non_null(strstr(STEP_APPROX_WARNING, "approximate"));
    assert_non_null(strstr(STEP_APPROX_WARNING, "% below the full simulation"));
    r = cli_run("run", "--model", MODEL, "--gpus", "32", "--nvs", "4", "--tp", "4", "--pp", "1", "--gbs",
                "32", "--topology", "dragonfly", "--collapse", "approx", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "warning: " STEP_APPROX_WARNING));
    cli_run_free(&r);
    /* compare: JSON (top level and the row), text, CSV */
    char dir[] = "/tmp/stepsim-collapse-XXXXXX", csv[96];
    assert_non_null(mkdtemp(dir));
    snprintf(csv, sizeof csv, "%s/t.csv", dir);
    r = cli_run("compare", "--model", MODEL, "--gpus", "32", "--nvs", "4", "--tp", "4", "--pp", "1", "--gbs",
                "32", "--topologies", "dragonfly", "--collapse", "approx", "--json", NULL);
    assert_int_equal(r.rc, 0);
    j = cJSON_Parse(r.out);
    assert_non_null(j);
    expect_warning(j, "compare --json");
    const cJSON *row = NULL;
    int approx_rows = 0;
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(j, "topologies")) {
        if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(row, "collapse_exact"))) {
            expect_warning(row, "compare row");
            approx_rows++;
        }
    }
    assert_int_equal(approx_rows, 1); /* the dragonfly; ideal collapses exactly */
    cJSON_Delete(j);
    cli_run_free(&r);
    r = cli_run("compare", "--model", MODEL, "--gpus", "32", "--nvs", "4", "--tp", "4", "--pp", "1", "--gbs",
                "32", "--topologies", "dragonfly", "--collapse", "approx", "--csv", csv, NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "warning: " STEP_APPROX_WARNING));
    cli_run_free(&r);
    FILE *f = fopen(csv, "r");
    assert_non_null(f);
    char text[4096];
    const size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    assert_non_null(strstr(text, ",collapse\n"));
    assert_non_null(strstr(text, ",exact\n"));
    assert_non_null(strstr(text, "," STEP_APPROX_WARNING "\n"));
    remove(csv);
    rmdir(dir);
    /* validate's waterfall */
    r = cli_run("validate", "--model", MODEL, "--gpus", "32", "--nvs", "4", "--tp", "4", "--pp", "1", "--gbs",
                "32", "--topology", "dragonfly", "--collapse", "approx", "--json", NULL);
    assert_int_equal(r.rc, 0);
    j = cJSON_Parse(r.out);
    assert_non_null(j);
    expect_warning(j, "validate --json");
    cJSON_Delete(j);
    cli_run_free(&r);
    r = cli_run("validate", "--model", MODEL, "--gpus", "32", "--nvs", "4", "--tp", "4", "--pp", "1", "--gbs",
                "32", "--topology", "dragonfly", "--collapse", "approx", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "warning: " STEP_APPROX_WARNING));
    cli_run_free(&r);
    /* the defaults are exact: no warning anywhere */
    r = cli_run("compare", "--model", MODEL, "--gpus", "32", "--nvs", "4", "--tp", "4", "--pp", "1", "--gbs",
                "32", "--topologies", "dragonfly", "--json", NULL);
    assert_int_equal(r.rc, 0);
    assert_null(strstr(r.out, "approximate"));
    cli_run_free(&r);
    r = cli_run("validate", "--model", MODEL, "--gpus", "32", "--nvs", "4", "--tp", "4", "--pp", "1", "--gbs",
                "32", "--topology", "dragonfly", "--json", NULL);
    assert_int_equal(r.rc, 0);
    assert_null(strstr(r.out, "approximate"));
    cli_run_free(&r);
    /* a bad value names the option */
    r = cli_run("compare", "--collapse", "maybe", NULL);
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "--collapse"));
    cli_run_free(&r);
}

/* Data-parallel groups so wide that checking a collapse would compare more routes than the full step
 * has operations (here 512 GPUs, dp 64, one microbatch each): auto simulates every GPU without the
 * check, says why, and equals off. */
static void test_check_costlier_than_full(void **state) {
    (void)state;
    const char *const a[] = {"--model",    "{\"seq_len\":1024,\"hidden\":1024,\"heads\":16,\"layers\":2}",
                             "--gpus",     "512",
                             "--tp",       "8",
                             "--pp",       "1",
                             "--gbs",      "64",
                             "--topology", "fat-tree",
                             NULL};
    expect_collapsed(a, "none");
    cJSON *j = collapse_run_json("auto", a);
    const cJSON *sim = cJSON_GetObjectItemCaseSensitive(j, "simulation");
    const cJSON *col = cJSON_GetObjectItemCaseSensitive(sim, "collapse");
    const cJSON *note = cJSON_GetObjectItemCaseSensitive(col, "note");
    assert_true(cJSON_IsString(note));
    assert_non_null(strstr(note->valuestring, "every GPU simulated: checking a collapse would compare"));
    cJSON_Delete(j);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fat_tree),        cmocka_unit_test(test_fat_tree_tapered),
        cmocka_unit_test(test_dragonfly_small), cmocka_unit_test(test_check_costlier_than_full),
        cmocka_unit_test(test_approx_labelled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
