/* calibrate.c - least-squares fit of a system's FLOP efficiency to measured runs over a fixed grid,
 * with leave-one-out errors (model.h, model_calibrate_fit). One table of every run's error at every
 * grid point serves the fit and every leave-one-out fit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model_internal.h"

static size_t grid_points(void) {
    return (size_t)lround((MODEL_CALIBRATE_TO - MODEL_CALIBRATE_FROM) / MODEL_CALIBRATE_STEP) + 1;
}

static double grid_efficiency(size_t k) {
    return MODEL_CALIBRATE_FROM + (double)k * MODEL_CALIBRATE_STEP;
}

/* The efficiency the fit adjusts: the FP8 GEMM efficiency of a corrected FP8 run on a system that has
 * one, else the FLOP efficiency (docs/model.md, "Kernel efficiencies"). */
static double *fitted_efficiency(model_job_t *job) {
    if (job->compat == MODEL_COMPAT_CORRECTED && job->training.precision == MODEL_PRECISION_FP8 &&
        job->system.fp8_flop_efficiency > 0.0)
        return &job->system.fp8_flop_efficiency;
    return &job->system.flop_efficiency;
}

/* out[i]: the percentage error of run i at efficiency eff (<= 0: the run's own). */
static int errors_at(const model_job_t *jobs, const double *measured_s, size_t n, double eff, double *out,
                     model_estimate_t *e) {
    for (size_t i = 0; i < n; i++) {
        model_job_t job = jobs[i];
        if (eff > 0.0)
            *fitted_efficiency(&job) = eff;
        if (model_estimate(&job, e) != MODEL_OK)
            return MODEL_EINVAL;
        out[i] = 100.0 * (e->summary.iteration_time_s - measured_s[i]) / measured_s[i];
    }
    return MODEL_OK;
}

/* err[k * n + i]: the error of run i at grid point k; row: at the runs' own efficiency. */
static int error_table(const model_job_t *jobs, const double *measured_s, size_t n, double *err,
                       double *row) {
    model_estimate_t *e = alloc_malloc(sizeof *e);
    if (!e)
        return MODEL_ENOMEM;
    int rc = errors_at(jobs, measured_s, n, 0.0, row, e);
    for (size_t k = 0; k < grid_points() && !rc; k++)
        rc = errors_at(jobs, measured_s, n, grid_efficiency(k), &err[k * n], e);
    free(e);
    return rc;
}

/* The grid point with the least sum of squares over the runs other than skip (n: none). */
static size_t best_point(const double *err, size_t n, size_t skip) {
    size_t best = 0;
    double best_ss = INFINITY;
    for (size_t k = 0; k < grid_points(); k++) {
        double ss = 0.0;
        for (size_t i = 0; i < n; i++)
            if (i != skip)
                ss += err[k * n + i] * err[k * n + i];
        if (ss < best_ss) {
            best_ss = ss;
            best = k;
        }
    }
    return best;
}

static model_calibrate_errors_t errors_of(const double *e, size_t n) {
    model_calibrate_errors_t s = {0.0, 0.0, 0.0};
    for (size_t i = 0; i < n; i++) {
        s.mean_abs_pct += fabs(e[i]) / (double)n;
        s.max_abs_pct = fmax(s.max_abs_pct, fabs(e[i]));
        s.rms_pct += e[i] * e[i] / (double)n;
    }
    s.rms_pct = sqrt(s.rms_pct);
    return s;
}

int model_calibrate_fit(const model_job_t *jobs, const double *measured_s, size_t n,
                        model_calibration_t *out) {
    memset(out, 0, sizeof *out);
    if (n == 0)
        return MODEL_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!(measured_s[i] > 0.0) || !isfinite(measured_s[i]))
            return MODEL_EINVAL;
    out->n = n;
    model_job_t first = jobs[0];
    out->current_efficiency = *fitted_efficiency(&first);
    out->fp8 = fitted_efficiency(&first) == &first.system.fp8_flop_efficiency;
    out->loo_valid = n >= 2;
    double *err = alloc_malloc(grid_points() * n * sizeof *err);
    double *row = alloc_malloc(n * sizeof *row);
    if (out->loo_valid) {
        out->loo_efficiency = alloc_malloc(n * sizeof *out->loo_efficiency);
        out->loo_error_pct = alloc_malloc(n * sizeof *out->loo_error_pct);
    }
    int rc = err && row && (!out->loo_valid || (out->loo_efficiency && out->loo_error_pct)) ? MODEL_OK
                                                                                            : MODEL_ENOMEM;
    if (!rc)
        rc = error_table(jobs, measured_s, n, err, row);
    if (!rc) {
        out->current = errors_of(row, n);
        const size_t k = best_point(err, n, n);
        out->best_efficiency = grid_efficiency(k);
        out->best = errors_of(&err[k * n], n);
        out->at_edge = k == 0 || k + 1 == grid_points();
        for (size_t i = 0; i < n && out->loo_valid; i++) {
            const size_t ki = best_point(err, n, i);
            out->loo_efficiency[i] = grid_efficiency(ki);
            out->loo_error_pct[i] = err[ki * n + i];
        }
        if (out->loo_valid)
            out->loo = errors_of(out->loo_error_pct, n);
    }
    free(err);
    free(row);
    if (rc) {
        model_calibrate_destroy(out);
        memset(out, 0, sizeof *out);
    }
    return rc;
}

void model_calibrate_destroy(model_calibration_t *fit) {
    free(fit->loo_efficiency);
    free(fit->loo_error_pct);
    fit->loo_efficiency = fit->loo_error_pct = NULL;
}
