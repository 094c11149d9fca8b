/* stepsim/test_point_cases.c - end to end: `stepsim estimate --compat reference --json` reproduces every row
 * of the reference's point-cases.csv to 1e-9 relative, in iteration time, throughput, memory, fits and every
 * breakdown and memory component (the field names of docs/cli.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "cli.h"
#include "ref_cases.h"

#define REL 1e-9

/* Run stepsim with argv; return its stdout (caller frees) and exit code. */
static char *run_cli(int argc, char **argv, int *code) {
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    FILE *err = tmpfile();
    assert_non_null(out);
    assert_non_null(err);
    *code = cli_main(argc, argv, out, err);
    fclose(out);
    fclose(err);
    return buf;
}

static double json_num(const cJSON *root, const char *a, const char *b) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, a);
    if (b)
        n = cJSON_GetObjectItemCaseSensitive(n, b);
    if (cJSON_IsBool(n))
        return cJSON_IsTrue(n) ? 1.0 : 0.0;
    assert_true(cJSON_IsNumber(n));
    return n->valuedouble;
}

/* argv for one point case: every degree and NVLink count given explicitly. */
static int case_argv(const csv_table_t *t, size_t r, char store[][40], char **argv) {
    const char *strategy = csv_cell(t, r, csv_column(t, "strategy"));
    const int d1 = strcmp(strategy, "1d") == 0;
    const struct {
        const char *opt, *col;
    } map[] = {
        {"--model", "model"},
        {"--system", "system"},
        {"--nvs", "nvs"},
        {"--gpus", "n_gpus"},
        {"--gbs", "global_batch_size"},
        {"--strategy", "strategy"},
        {"--dp", "dp"},
        {"--pp", "pp"},
        {"--mbs", "mbs"},
        {d1 ? "--tp" : "--tp1", d1 ? "tp" : "tp1"},
        {d1 ? NULL : "--tp2", "tp2"},
        {d1 ? NULL : "--nb", "nb"},
        {d1 ? "--nv-tp" : "--nv-tp1", "nv_tp1"},
        {d1 ? NULL : "--nv-tp2", "nv_tp2"},
        {"--nv-dp", "nv_dp"},
        {"--nv-pp", "nv_pp"},
    };
    int argc = 0;
    argv[argc++] = "stepsim";
    argv[argc++] = "estimate";
    argv[argc++] = "--compat";
    argv[argc++] = "reference";
    argv[argc++] = "--json";
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        const char *v = csv_cell(t, r, csv_column(t, map[i].col));
        if (!map[i].opt || !*v)
            continue;
        argv[argc++] = (char *)map[i].opt;
        snprintf(store[i], 40, "%s", v);
        argv[argc++] = store[i];
    }
    return argc;
}

static void test_point_cases_through_cli(void **state) {
    (void)state;
    csv_table_t t;
    assert_int_equal(csv_load(STEPSIM_DATA_DIR "/point-cases.csv", &t), 0);
    int failures = 0;
    for (size_t r = 1; r < t.n_rows; r++) {
        char store[32][40];
        char *argv[48];
        int code;
        const int argc = case_argv(&t, r, store, argv);
        char *json = run_cli(argc, argv, &code);
        assert_int_equal(code, 0);
        cJSON *root = cJSON_Parse(json);
        assert_non_null(root);
        const struct {
            const char *a, *b, *col;
        } fields[] = {
            {"iteration_time_s", NULL, "t_iter_s"},
            {"throughput_samples_per_s", NULL, "throughput"},
            {"memory_gb", NULL, "mem_GB"},
            {"fits", NULL, "fits"},
            {"breakdown_s", "compute", "t_comp"},
            {"breakdown_s", "memory", "t_mem"},
            {"breakdown_s", "tp_comm", "t_tp_comm"},
            {"breakdown_s", "pp_comm", "t_pp_comm"},
            {"breakdown_s", "dp_comm", "t_dp_comm"},
            {"breakdown_s", "bubble", "t_bubble"},
            {"memory_gb_parts", "weights", "wts_mem"},
            {"memory_gb_parts", "gradients", "wts_grad_mem"},
            {"memory_gb_parts", "optimizer", "wts_optimizer_states_mem"},
            {"memory_gb_parts", "activations", "acts_mem"},
            {"block", "t_fwd_s", "block_t_fwd"},
            {"block", "t_bwd_s", "block_t_bwd"},
            {"block", "flops_tflop", "block_flops"},
            {"block", "activations_gb", "block_acts_GB"},
            {"block", "weights_gb", "block_wts_GB"},
        };
        for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
            const double got = json_num(root, fields[f].a, fields[f].b), want = ref_num(&t, r, fields[f].col);
            if (!ref_close(got, want, REL)) {
                print_error("case %s: %s.%s = %.17g, reference %.17g\n", csv_cell(&t, r, 0), fields[f].a,
                            fields[f].b ? fields[f].b : "", got, want);
                failures++;
            }
        }
        cJSON_Delete(root);
        free(json);
    }
    assert_int_equal(t.n_rows - 1, 25);
    csv_free(&t);
    assert_int_equal(failures, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_point_cases_through_cli)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
