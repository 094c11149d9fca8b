/* model/test_calibrate.c - the FLOP efficiency fitted to measured runs (model_calibrate_fit): runs
 * made by the model at a known grid efficiency give it back with zero error (and every leave-one-out
 * fit too), two runs made at different efficiencies predict each other with the other's efficiency,
 * a fit beyond the grid stops at its end, one run has no leave-one-out, and bad input is refused. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"

/* GPT-145B of Narayanan et al. 2021 on DGX-A100 (tp 8, pp 8, dp 24, mbs 1, 1d) at a global batch. */
static model_job_t megatron_job(int64_t global_batch) {
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("GPT-145B", &j.model), MODEL_OK);
    assert_int_equal(model_system_preset("DGX-A100", &j.system), MODEL_OK);
    j.gpus = 1536;
    j.global_batch = global_batch;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, 24, 8, 8, 1, 8, 1, 1, 8, 1, 1, 1};
    return j;
}

static double grid(int k) {
    return MODEL_CALIBRATE_FROM + (double)k * MODEL_CALIBRATE_STEP;
}

/* The model's iteration time of job at efficiency eff. */
static double time_at(model_job_t job, double eff) {
    model_estimate_t e;
    job.system.flop_efficiency = eff;
    assert_int_equal(model_estimate(&job, &e), MODEL_OK);
    return e.summary.iteration_time_s;
}

enum { RUNS = 3 };
static const int64_t BATCHES[RUNS] = {1152, 2304, 4608};

static void test_recovers_known_efficiency(void **state) {
    (void)state;
    const double eff = grid(50); /* 0.65 */
    model_job_t jobs[RUNS];
    double measured[RUNS];
    for (int i = 0; i < RUNS; i++) {
        jobs[i] = megatron_job(BATCHES[i]);
        measured[i] = time_at(jobs[i], eff);
    }
    const double as_read = jobs[0].system.flop_efficiency;
    assert_true(as_read != eff);
    model_calibration_t fit;
    assert_int_equal(model_calibrate_fit(jobs, measured, RUNS, &fit), MODEL_OK);
    assert_int_equal(fit.n, RUNS);
    assert_true(fit.current_efficiency == as_read);
    assert_true(fit.current.mean_abs_pct > 1.0); /* the runs were made at another efficiency */
    assert_true(fit.best_efficiency == eff);
    assert_true(fit.best.mean_abs_pct == 0.0 && fit.best.max_abs_pct == 0.0 && fit.best.rms_pct == 0.0);
    assert_false(fit.at_edge);
    assert_true(fit.loo_valid);
    for (int i = 0; i < RUNS; i++) {
        assert_true(fit.loo_efficiency[i] == eff);
        assert_true(fit.loo_error_pct[i] == 0.0);
    }
    assert_true(fit.loo.max_abs_pct == 0.0);
    /* The current errors are the runs' errors at their own efficiency. */
    double mean = 0.0;
    for (int i = 0; i < RUNS; i++)
        mean += fabs(100.0 * (time_at(jobs[i], as_read) - measured[i]) / measured[i]) / RUNS;
    assert_true(fabs(fit.current.mean_abs_pct - mean) <= 1e-12 * mean);
    model_calibrate_destroy(&fit);
}

/* Two runs, made at two efficiencies: leaving one out fits the other exactly, so each run is
 * predicted at the other's efficiency; the fit of both lies between them. */
static void test_leave_one_out_two_runs(void **state) {
    (void)state;
    const double eff[2] = {grid(40), grid(60)}; /* 0.60, 0.70 */
    model_job_t jobs[2] = {megatron_job(2304), megatron_job(4608)};
    const double measured[2] = {time_at(jobs[0], eff[0]), time_at(jobs[1], eff[1])};
    model_calibration_t fit;
    assert_int_equal(model_calibrate_fit(jobs, measured, 2, &fit), MODEL_OK);
    assert_true(fit.loo_valid);
    double max_abs = 0.0;
    for (int i = 0; i < 2; i++) {
        const int other = 1 - i;
        assert_true(fit.loo_efficiency[i] == eff[other]);
        const double want = 100.0 * (time_at(jobs[i], eff[other]) - measured[i]) / measured[i];
        assert_true(fabs(fit.loo_error_pct[i] - want) <= 1e-12 * fabs(want));
        max_abs = fmax(max_abs, fabs(want));
    }
    /* A faster efficiency predicts a shorter time: run 0 comes out fast, run 1 slow. */
    assert_true(fit.loo_error_pct[0] < 0.0 && fit.loo_error_pct[1] > 0.0);
    assert_true(fabs(fit.loo.max_abs_pct - max_abs) <= 1e-12 * max_abs);
    assert_true(fit.best_efficiency > eff[0] && fit.best_efficiency < eff[1]);
    assert_true(fit.best.max_abs_pct > 0.0 && fit.best.max_abs_pct < max_abs);
    model_calibrate_destroy(&fit);
}

/* One run: a fit but no leave-one-out. Made below the grid: the fit stops at the grid's start. */
static void test_one_run_at_edge(void **state) {
    (void)state;
    model_job_t job = megatron_job(2304);
    const double measured = time_at(job, 0.30);
    model_calibration_t fit;
    assert_int_equal(model_calibrate_fit(&job, &measured, 1, &fit), MODEL_OK);
    assert_true(fit.best_efficiency == MODEL_CALIBRATE_FROM);
    assert_true(fit.at_edge);
    assert_true(fit.best.max_abs_pct > 0.0);
    assert_false(fit.loo_valid);
    assert_null(fit.loo_efficiency);
    assert_null(fit.loo_error_pct);
    model_calibrate_destroy(&fit);
}

static void test_errors(void **state) {
    (void)state;
    model_job_t jobs[2] = {megatron_job(2304), megatron_job(4608)};
    double measured[2] = {10.0, 20.0};
    model_calibration_t fit;
    assert_int_equal(model_calibrate_fit(jobs, measured, 0, &fit), MODEL_EINVAL);
    assert_null(fit.loo_efficiency);
    const double bad[3] = {0.0, -1.0, NAN};
    for (int b = 0; b < 3; b++) {
        measured[1] = bad[b];
        assert_int_equal(model_calibrate_fit(jobs, measured, 2, &fit), MODEL_EINVAL);
        assert_null(fit.loo_efficiency);
    }
    measured[1] = 20.0;
    jobs[1].par.pp = 7; /* does not divide the layers, and dp tp pp no longer makes the GPUs */
    assert_int_equal(model_calibrate_fit(jobs, measured, 2, &fit), MODEL_EINVAL);
    assert_null(fit.loo_efficiency);
    assert_null(fit.loo_error_pct);
    model_calibrate_destroy(&fit); /* a failed fit holds nothing: destroying it is harmless */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recovers_known_efficiency),
        cmocka_unit_test(test_leave_one_out_two_runs),
        cmocka_unit_test(test_one_run_at_edge),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
