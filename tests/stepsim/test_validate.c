/* stepsim/test_validate.c - `stepsim validate --measured`: the three-row fixture against separate model
 * estimates of the same layouts (1e-9), the summary errors, the unrecorded-settings rules, the text
 * report, and one-line errors (exit 2) for bad files. Runs cli_main in-process. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include <stdlib.h>
#include <unistd.h>

#include "model.h"
#include "test_cli_run.h"

#define MEASURED_DIR "@measured/"

static cJSON *parse_one(const cli_run_t *r) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(r->out, &end, 1);
    if (!root)
        fail_msg("stdout is not one JSON object: %.300s", r->out);
    return root;
}

static double num(const cJSON *o, const char *key) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(n))
        fail_msg("missing number %s", key);
    return n->valuedouble;
}

static void assert_rel(double got, double want, double rel) {
    if (!(fabs(got - want) <= rel * fabs(want)))
        fail_msg("got %.17g, want %.17g (rel %g)", got, want, rel);
}

/* The fixture's rows as jobs, built by hand from the documented mapping (docs/validation.md). */
static model_job_t fixture_job(int row) {
    model_job_t j;
    memset(&j, 0, sizeof j);
    j.compat = MODEL_COMPAT_CORRECTED;
    j.training.dp_comm = MODEL_DP_ALLREDUCE;
    j.training.embedding = 1;
    j.training.optimizer_step = 1;
    j.training.interleave = 1;
    if (row == 0) { /* small-full: tp 1, pp 1, dp 32 on 4 DGX-A100 nodes, mbs 2, full, SP off */
        j.model = (model_transformer_t){.name = "x",
                                        .seq_len = 2048,
                                        .hidden = 2304,
                                        .heads = 24,
                                        .layers = 24,
                                        .ffn_hidden = 9216,
                                        .vocab = 51200};
        assert_int_equal(model_system_preset("DGX-A100", &j.system), MODEL_OK);
        j.gpus = 32;
        j.global_batch = 512;
        j.par = (model_parallel_t){MODEL_STRATEGY_1D, 32, 1, 1, 1, 1, 2, 1, 1, 1, 8, 1};
        j.training.recompute = MODEL_RECOMPUTE_FULL;
        j.training.sequence_parallel = MODEL_SEQPAR_OFF;
        j.training.attention = MODEL_ATTENTION_MATERIALIZED;
        j.training.grad_accumulation = MODEL_GRAD_ACCUM_ADD;
    } else if (row == 1) { /* mid-selective: tp 8, pp 4, dp 8, interleave 2, SP on */
        j.model = (model_transformer_t){.name = "x",
                                        .seq_len = 2048,
                                        .hidden = 6144,
                                        .heads = 48,
                                        .layers = 40,
                                        .ffn_hidden = 4 * 6144,
                                        .vocab = 51200};
        assert_int_equal(model_system_preset("DGX-A100", &j.system), MODEL_OK);
        j.gpus = 256;
        j.global_batch = 512;
        j.par = (model_parallel_t){MODEL_STRATEGY_1D, 8, 8, 8, 1, 4, 1, 1, 8, 1, 1, 1};
        j.training.recompute = MODEL_RECOMPUTE_SELECTIVE;
        j.training.attention = MODEL_ATTENTION_MATERIALIZED;
        j.training.grad_accumulation = MODEL_GRAD_ACCUM_ADD;
        j.training.interleave = 2;
    } else { /* h100-cp: tp 4 x cp 2 (2d-seqp), pp 2, dp 4, mbs unrecorded (1), flash on H100 */
        j.model = (model_transformer_t){.name = "x",
                                        .seq_len = 4096,
                                        .hidden = 4096,
                                        .heads = 32,
                                        .layers = 32,
                                        .ffn_hidden = 11008,
                                        .vocab = 32000};
        assert_int_equal(model_system_preset("DGX-H100", &j.system), MODEL_OK);
        j.gpus = 64;
        j.global_batch = 64;
        j.par = (model_parallel_t){MODEL_STRATEGY_2D_SEQP, 4, 8, 4, 2, 2, 1, 1, 4, 2, 1, 1};
        j.training.dp_comm = MODEL_DP_SHARDED_OVERLAP; /* Hopper: the distributed optimizer, overlapped */
        j.training.cp_comm = MODEL_CP_RING;            /* Megatron-Core's context parallelism */
    }
    assert_int_equal(model_job_check(&j, NULL), MODEL_OK);
    return j;
}

static double predict(model_job_t j, model_compat_t compat) {
    static model_estimate_t e;
    j.compat = compat;
    assert_int_equal(model_estimate(&j, &e), MODEL_OK);
    return e.summary.iteration_time_s;
}

static void test_three_rows_json(void **state) {
    (void)state;
    cli_run_t r = cli_run("validate", "--measured", MEASURED_DIR "three_rows.csv", "--json", NULL);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    cJSON *j = parse_one(&r);
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(j, "rows");
    assert_int_equal(cJSON_GetArraySize(rows), 3);
    static const char *const names[] = {"small-full", "mid-selective", "h100-cp"};
    static const double measured[] = {3.5, 9.0, 2.0};
    double sum = 0.0, max = 0.0, ref_sum = 0.0, ref_max = 0.0;
    for (int i = 0; i < 3; i++) {
        const cJSON *row = cJSON_GetArrayItem(rows, i);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(row, "name")->valuestring, names[i]);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(row, "source")->valuestring, "analytic");
        const model_job_t job = fixture_job(i);
        const double want = predict(job, MODEL_COMPAT_CORRECTED), ref = predict(job, MODEL_COMPAT_REFERENCE);
        assert_rel(num(row, "predicted_s"), want, 1e-9);
        assert_rel(num(row, "reference_predicted_s"), ref, 1e-9);
        assert_rel(num(row, "measured_s"), measured[i], 1e-15);
        const double err = 100.0 * (want - measured[i]) / measured[i];
        const double ref_err = 100.0 * (ref - measured[i]) / measured[i];
        assert_rel(num(row, "error_pct"), err, 1e-9);
        assert_rel(num(row, "reference_error_pct"), ref_err, 1e-9);
        sum += fabs(err);
        max = fmax(max, fabs(err));
        ref_sum += fabs(ref_err);
        ref_max = fmax(ref_max, fabs(ref_err));
    }
    assert_int_equal((int)num(cJSON_GetArrayItem(rows, 0), "mbs"), 2);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(rows, 2), "mbs_recorded")));
    assert_int_equal((int)num(cJSON_GetArrayItem(rows, 1), "interleave"), 2);
    assert_rel(num(j, "mean_abs_error_pct"), sum / 3.0, 1e-9);
    assert_rel(num(j, "max_abs_error_pct"), max, 1e-9);
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(j, "reference");
    assert_rel(num(ref, "mean_abs_error_pct"), ref_sum / 3.0, 1e-9);
    assert_rel(num(ref, "max_abs_error_pct"), ref_max, 1e-9);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "source")->valuestring, "analytic");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "unrecorded")->valuestring, "fixed");
    cJSON_Delete(j);
    cli_run_free(&r);
}

/* The figures docs/validation.md and the README report for Narayanan et al. 2021 (Table 1): if the
 * model changes, re-run `stepsim validate --measured tests/data/megatron-narayanan2021-runs.csv` and
 * update both. */
#define MEAN_ABS 4.74964609062472
#define MAX_ABS 12.28220694328332
static void test_megatron_set(void **state) {
    (void)state;
    cli_run_t r = cli_run("validate", "--measured", STEPSIM_DATA_DIR "/megatron-narayanan2021-runs.csv",
                          "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *j = parse_one(&r);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "rows")), 10);
    assert_rel(num(j, "mean_abs_error_pct"), MEAN_ABS, 1e-9);
    assert_rel(num(j, "max_abs_error_pct"), MAX_ABS, 1e-9);
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(j, "reference");
    /* the published model at the preset's FLOP efficiency (0.81) */
    assert_rel(num(ref, "mean_abs_error_pct"), 41.519632906234754, 1e-9);
    assert_rel(num(ref, "max_abs_error_pct"), 52.86460308900184, 1e-9);
    cJSON_Delete(j);
    cli_run_free(&r);
}

/* The search rule only fills what a row leaves empty, and never predicts slower than fixed. */
static void test_search_rule(void **state) {
    (void)state;
    cli_run_t f = cli_run("validate", "--measured", MEASURED_DIR "three_rows.csv", "--json", NULL);
    cli_run_t s = cli_run("validate", "--measured=" STEPSIM_FIXTURE_DIR "/measured/three_rows.csv", "--json",
                          "--unrecorded", "search", NULL);
    assert_int_equal(f.rc, 0);
    assert_int_equal(s.rc, 0);
    cJSON *jf = parse_one(&f), *js = parse_one(&s);
    const cJSON *rf = cJSON_GetObjectItemCaseSensitive(jf, "rows"),
                *rs = cJSON_GetObjectItemCaseSensitive(js, "rows");
    for (int i = 0; i < 3; i++) {
        const cJSON *a = cJSON_GetArrayItem(rf, i), *b = cJSON_GetArrayItem(rs, i);
        assert_true(num(b, "predicted_s") <= num(a, "predicted_s") * (1.0 + 1e-12) ||
                    !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "fits")));
    }
    /* row 2 records both settings: identical */
    assert_rel(num(cJSON_GetArrayItem(rs, 1), "predicted_s"), num(cJSON_GetArrayItem(rf, 1), "predicted_s"),
               1e-15);
    /* row 1 records mbs 2 and has one stage: nothing to choose */
    assert_rel(num(cJSON_GetArrayItem(rs, 0), "predicted_s"), num(cJSON_GetArrayItem(rf, 0), "predicted_s"),
               1e-15);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(js, "unrecorded")->valuestring, "search");
    cJSON_Delete(jf);
    cJSON_Delete(js);
    cli_run_free(&f);
    cli_run_free(&s);
}

static void test_text_report(void **state) {
    (void)state;
    cli_run_t r = cli_run("validate", "--measured", MEASURED_DIR "three_rows.csv", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "prediction source: analytic"));
    assert_non_null(strstr(r.out, "mean absolute error"));
    assert_non_null(strstr(r.out, "max absolute error"));
    assert_non_null(strstr(r.out, "h100-cp"));
    assert_non_null(strstr(r.out, "MFU meas. %"));
    /* header (the prediction source wrapped to 100 columns: two lines), the runs' table and the times'
     * table (each: blank, header, a line per run), errors, the per-GPU table (blank, title, header,
     * one line per run); nothing is left unmodelled (h100-cp runs without the tensor-parallel
     * overlap: its column says 0) */
    assert_null(strstr(r.out, "not modelled"));
    assert_int_equal(cli_run_lines(r.out), 4 + 2 + 3 + 2 + 3 + 3 + 3 + 3);
    cli_run_free(&r);
    r = cli_run("validate", "--help", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "--unrecorded"));
    assert_non_null(strstr(r.out, "mbs 1 and interleave 1"));
    cli_run_free(&r);
    r = cli_run("help", "validate", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "--measured"));
    cli_run_free(&r);
}

/* Each bad input: exit 2 and one line naming the file, the row and the column. */
static void test_errors(void **state) {
    (void)state;
    static const struct {
        const char *file;
        const char *const want[3];
    } cases[] = {
        {"err_missing_column.csv",
         {"err_missing_column.csv: header: column tp is missing", "allowed:", NULL}},
        {"err_nonnumeric.csv",
         {"err_nonnumeric.csv: row 2 (b): column pp: \"two\"", "positive integer", NULL}},
        {"err_product.csv",
         {"err_product.csv: row 1 (a): column gpus: \"100\"", "tp x pp x dp x cp", "= 32"}},
        {"err_system.csv",
         {"err_system.csv: row 1 (a): column system: \"DGX-A10O\"", "did you mean DGX-A100", "allowed:"}},
        {"err_recompute.csv",
         {"err_recompute.csv: row 1 (a): column recompute: \"partial\"", "allowed: none, selective, full",
          NULL}},
        {"err_measured.csv",
         {"err_measured.csv: row 1 (a): column measured_iteration_s: \"-3\"", "positive number", NULL}},
        {"err_heads.csv", {"err_heads.csv: row 1 (a): column tp: \"5\"", "does not divide heads (24)", NULL}},
        {"err_interleave.csv",
         {"err_interleave.csv: row 1 (a): column interleave: \"5\"",
          "must divide the layers per pipeline stage (12)", NULL}},
        {"err_empty.csv", {"err_empty.csv: no data rows", NULL, NULL}},
        {"does_not_exist.csv", {"does_not_exist.csv: cannot read", NULL, NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/measured/%s", STEPSIM_FIXTURE_DIR, cases[i].file);
        cli_run_t r = cli_run("validate", "--measured", path, "--json", NULL);
        if (r.rc != 2)
            fail_msg("%s: rc %d, stderr %s", cases[i].file, r.rc, r.err);
        assert_string_equal(r.out, "");
        assert_int_equal(cli_run_lines(r.err), 1);
        for (int k = 0; k < 3 && cases[i].want[k]; k++)
            if (!strstr(r.err, cases[i].want[k]))
                fail_msg("%s: stderr lacks \"%s\": %s", cases[i].file, cases[i].want[k], r.err);
        cli_run_free(&r);
    }
}

static void test_usage_errors(void **state) {
    (void)state;
    static const char *const want[] = {"--measured FILE.csv is required",
                                       "\"best\" is not a rule",
                                       "unknown option (did you mean --measured?)",
                                       "--flop-efficiency: \"0\" is not a number in (0, 1]",
                                       "--flop-efficiency: \"1.5\" is not a number in (0, 1]",
                                       "--flop-efficiency: \"fast\" is not a number in (0, 1]",
                                       "--measured FILE.csv is required"};
    cli_run_t r[7] = {cli_run("validate", "--sim", "--json", NULL), /* without: the waterfall */
                      cli_run("validate", "--measured", "x.csv", "--unrecorded", "best", NULL),
                      cli_run("validate", "--measure", "x.csv", NULL),
                      cli_run("validate", "--measured", "x.csv", "--flop-efficiency", "0", NULL),
                      cli_run("validate", "--measured", "x.csv", "--flop-efficiency=1.5", NULL),
                      cli_run("validate", "--measured", "x.csv", "--flop-efficiency", "fast", NULL),
                      cli_run("validate", "--calibrate", NULL)};
    for (int i = 0; i < 7; i++) {
        assert_int_equal(r[i].rc, 2);
        assert_int_equal(cli_run_lines(r[i].err), 1);
        if (!strstr(r[i].err, want[i]))
            fail_msg("stderr lacks \"%s\": %s", want[i], r[i].err);
        cli_run_free(&r[i]);
    }
}

static const cJSON *item(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v)
        fail_msg("missing %s", key);
    return v;
}

/* --flop-efficiency X: every prediction is the model's with the system's efficiency replaced. */
static void test_flop_efficiency(void **state) {
    (void)state;
    cli_run_t r = cli_run("validate", "--measured", MEASURED_DIR "three_rows.csv", "--flop-efficiency",
                          "0.65", "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *j = parse_one(&r);
    for (int i = 0; i < 3; i++) {
        model_job_t job = fixture_job(i);
        job.system.flop_efficiency = 0.65;
        assert_rel(num(cJSON_GetArrayItem(item(j, "rows"), i), "predicted_s"),
                   predict(job, MODEL_COMPAT_CORRECTED), 1e-9);
    }
    cJSON_Delete(j);
    cli_run_free(&r);
}

/* Writes the fixture's rows with measured times made by the model at efficiency eff: a set whose
 * least-squares efficiency is eff with zero error. */
static void write_synthetic(const char *path, double eff) {
    static const char *const lines[] = {
        "small-full,2304,24,24,2048,51200,9216,32,1,1,32,1,512,2,,full,0,,DGX-A100",
        "mid-selective,6144,48,40,2048,51200,,256,8,4,8,1,512,1,2,selective,1,,DGX-A100",
        "h100-cp,4096,32,32,4096,32000,11008,64,4,2,4,2,64,,,none,1,0,DGX-H100"};
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "name,hidden,heads,layers,seq_len,vocab,ffn_hidden,gpus,tp,pp,dp,cp,gbs,mbs,interleave,"
               "recompute,sequence_parallel,tp_comm_overlap,system,measured_iteration_s\n");
    for (int i = 0; i < 3; i++) {
        model_job_t job = fixture_job(i);
        job.system.flop_efficiency = eff;
        fprintf(f, "%s,%.17g\n", lines[i], predict(job, MODEL_COMPAT_CORRECTED));
    }
    assert_int_equal(fclose(f), 0);
}

/* --calibrate recovers the efficiency that made the measured times, per system, with zero error, and
 * leave-one-out needs two runs of a system. On the Narayanan set the fit is the DGX-A100 preset's. */
static void test_calibrate(void **state) {
    (void)state;
    char path[] = "/tmp/stepsim-calib-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_synthetic(path, 0.655);
    cli_run_t r = cli_run("validate", "--measured", path, "--calibrate", "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *j = parse_one(&r);
    const cJSON *systems = item(item(j, "calibration"), "systems");
    assert_int_equal(cJSON_GetArraySize(systems), 2);
    static const char *const names[] = {"DGX-A100", "DGX-H100"};
    for (int k = 0; k < 2; k++) {
        const cJSON *s = cJSON_GetArrayItem(systems, k);
        assert_string_equal(item(s, "system")->valuestring, names[k]);
        assert_int_equal((int)num(s, "runs"), 2 - k);
        assert_rel(num(item(s, "fitted"), "flop_efficiency"), 0.655, 1e-12);
        assert_true(num(item(s, "fitted"), "max_abs_error_pct") < 1e-9);
        assert_rel(num(item(s, "as_read"), "flop_efficiency"), k == 0 ? 0.81 : 0.8, 1e-12);
        assert_true(num(item(s, "as_read"), "mean_abs_error_pct") > 1.0);
        assert_true(cJSON_IsFalse(item(s, "at_grid_edge")));
        assert_true(k == 1 || num(item(s, "leave_one_out"), "max_abs_error_pct") < 1e-9);
        assert_true(k == 0 || !cJSON_GetObjectItemCaseSensitive(s, "leave_one_out"));
    }
    cJSON_Delete(j);
    cli_run_free(&r);
    r = cli_run("validate", "--measured", path, "--calibrate", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "fitted (least squares)            0.655"));
    assert_non_null(strstr(r.out, "leave-one-out: needs at least two runs"));
    cli_run_free(&r);
    remove(path);

    r = cli_run("validate", "--measured", STEPSIM_DATA_DIR "/megatron-narayanan2021-runs.csv", "--calibrate",
                "--json", NULL);
    assert_int_equal(r.rc, 0);
    j = parse_one(&r);
    const cJSON *fit = cJSON_GetArrayItem(item(item(j, "calibration"), "systems"), 0);
    assert_rel(num(item(fit, "fitted"), "flop_efficiency"), num(item(fit, "as_read"), "flop_efficiency"),
               1e-12);
    /* the DGX-A100 preset's fit with the GEMM time by shape and its leave-one-out figures
     * (docs/validation.md, "Fitted constants") */
    assert_rel(num(item(fit, "fitted"), "flop_efficiency"), 0.81, 1e-12);
    assert_rel(num(item(fit, "leave_one_out"), "mean_abs_error_pct"), 5.279613403346158, 1e-9);
    assert_rel(num(item(fit, "leave_one_out"), "max_abs_error_pct"), 13.018278165388496, 1e-9);
    cJSON_Delete(j);
    cli_run_free(&r);
}

/* --sim on the fixture: the auto networks; the added cost only where the simulation lacks the
 * embedding layer (2d-seqp: the analytic difference, checked against separate estimates), none
 * elsewhere; the one-stage row reproduced exactly by the simulation with analytic communication,
 * the others within their scheduling difference. */
static void test_sim_fixture(void **state) {
    (void)state;
    cli_run_t r = cli_run("validate", "--measured", MEASURED_DIR "three_rows.csv", "--sim", "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *j = parse_one(&r);
    const cJSON *sim = item(j, "simulation");
    assert_int_equal((int)num(sim, "simulated_rows"), 3);
    static const char *const nets[] = {"dgx-a100-superpod", "dgx-a100-superpod", "dgx-h100-superpod"};
    static const double measured[] = {3.5, 9.0, 2.0};
    double sum = 0.0;
    for (int i = 0; i < 3; i++) {
        const cJSON *row = cJSON_GetArrayItem(item(sim, "rows"), i);
        const double analytic = num(cJSON_GetArrayItem(item(j, "rows"), i), "predicted_s");
        assert_string_equal(item(row, "topology")->valuestring, nets[i]);
        model_job_t plain = fixture_job(i);
        plain.training.embedding = 0;
        if (i == 2)
            assert_rel(num(row, "unmodeled_added_s"), analytic - predict(plain, MODEL_COMPAT_CORRECTED),
                       1e-9);
        else
            assert_true(num(row, "unmodeled_added_s") == 0.0);
        const double s_an = num(row, "sim_analytic_comm_s"), s_net = num(row, "sim_network_s");
        assert_rel(s_an, analytic, i == 0 ? 1e-9 : 0.03);
        assert_rel(s_net, analytic, 0.05);
        assert_rel(num(row, "sim_network_error_pct"), 100.0 * (s_net - measured[i]) / measured[i], 1e-9);
        sum += fabs(num(row, "sim_network_error_pct"));
    }
    assert_rel(num(item(sim, "sim_network"), "mean_abs_error_pct"), sum / 3.0, 1e-9);
    cJSON_Delete(j);
    cli_run_free(&r);
    r = cli_run("validate", "--measured", MEASURED_DIR "three_rows.csv", "--sim", "--sim-topology", "ideal",
                NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "small-full")); /* the network is the last column (100 columns) */
    assert_non_null(strstr(r.out, "  ideal\n"));
    assert_non_null(strstr(r.out, "simulation, network"));
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_rows_json), cmocka_unit_test(test_megatron_set),
        cmocka_unit_test(test_search_rule),     cmocka_unit_test(test_text_report),
        cmocka_unit_test(test_errors),          cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_flop_efficiency), cmocka_unit_test(test_calibrate),
        cmocka_unit_test(test_sim_fixture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
