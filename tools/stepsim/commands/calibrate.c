/* calibrate.c - least-squares fit of a system's FLOP efficiency to measured runs, with leave-one-out
 * errors (calibrate.h). The grid is coarse enough to be exhaustive (121 points) and fine enough that
 * the step (0.005) moves a prediction by well under a percent. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "output.h"

static size_t grid_points(void) {
    return (size_t)lround((CALIB_TO - CALIB_FROM) / CALIB_STEP) + 1;
}

static double grid_efficiency(size_t k) {
    return CALIB_FROM + (double)k * CALIB_STEP;
}

/* out[i]: the percentage error of run i at efficiency eff (<= 0: the run's own). */
static int errors_at(const model_job_t *jobs, const double *measured_s, size_t n, double eff, double *out,
                     model_estimate_t *e, cli_diag_t *d) {
    for (size_t i = 0; i < n; i++) {
        model_job_t job = jobs[i];
        if (eff > 0.0)
            job.system.flop_efficiency = eff;
        if (model_estimate(&job, e) != MODEL_OK)
            return cli_fail(d, CLI_EUSAGE, "validate: --calibrate: the model rejected a checked job");
        out[i] = 100.0 * (e->summary.iteration_time_s - measured_s[i]) / measured_s[i];
    }
    return CLI_OK;
}

/* err[k * n + i]: the error of run i at grid point k; row: at the runs' own efficiency. */
static int error_table(const model_job_t *jobs, const double *measured_s, size_t n, double *err, double *row,
                       cli_diag_t *d) {
    model_estimate_t *e = malloc(sizeof *e);
    if (!e)
        return cli_fail(d, CLI_ERUNTIME, "validate: out of memory");
    int rc = errors_at(jobs, measured_s, n, 0.0, row, e, d);
    for (size_t k = 0; k < grid_points() && !rc; k++)
        rc = errors_at(jobs, measured_s, n, grid_efficiency(k), &err[k * n], e, d);
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

static calib_errors_t errors_of(const double *e, size_t n) {
    calib_errors_t s = {0.0, 0.0, 0.0};
    for (size_t i = 0; i < n; i++) {
        s.mean_abs_pct += fabs(e[i]) / (double)n;
        s.max_abs_pct = fmax(s.max_abs_pct, fabs(e[i]));
        s.rms_pct += e[i] * e[i] / (double)n;
    }
    s.rms_pct = sqrt(s.rms_pct);
    return s;
}

int calib_fit(const model_job_t *jobs, const double *measured_s, size_t n, calib_fit_t *out, cli_diag_t *d) {
    memset(out, 0, sizeof *out);
    if (n == 0)
        return cli_fail(d, CLI_EUSAGE, "validate: --calibrate: no runs to fit");
    snprintf(out->system, sizeof out->system, "%s", jobs[0].system.name);
    out->n = n;
    out->current_efficiency = jobs[0].system.flop_efficiency;
    double *err = malloc(grid_points() * n * sizeof *err);
    double *row = malloc(n * sizeof *row);
    out->loo_efficiency = malloc(n * sizeof *out->loo_efficiency);
    out->loo_error_pct = malloc(n * sizeof *out->loo_error_pct);
    int rc = err && row && out->loo_efficiency && out->loo_error_pct
                 ? CLI_OK
                 : cli_fail(d, CLI_ERUNTIME, "validate: out of memory");
    if (!rc)
        rc = error_table(jobs, measured_s, n, err, row, d);
    if (!rc) {
        out->current = errors_of(row, n);
        const size_t k = best_point(err, n, n);
        out->best_efficiency = grid_efficiency(k);
        out->best = errors_of(&err[k * n], n);
        out->at_edge = k == 0 || k + 1 == grid_points();
        out->loo_valid = n >= 2;
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
    if (rc)
        calib_free(out);
    return rc;
}

void calib_free(calib_fit_t *fit) {
    free(fit->loo_efficiency);
    free(fit->loo_error_pct);
    fit->loo_efficiency = fit->loo_error_pct = NULL;
}

/* ---- report ----------------------------------------------------------------------------------- */

static void errors_line(FILE *out, const char *label, double eff, const calib_errors_t *e) {
    fprintf(out, "    %-28s %10.3f %12.2f %% %11.2f %% %9.2f %%\n", label, eff, e->mean_abs_pct,
            e->max_abs_pct, e->rms_pct);
}

void calib_print_text(FILE *out, const calib_fit_t *fit, const char *const *names) {
    fprintf(out, "\n  %s, %zu runs:  %10s %14s %13s %11s\n", fit->system, fit->n, "efficiency",
            "mean abs err", "max abs err", "rms err");
    errors_line(out, "as read", fit->current_efficiency, &fit->current);
    errors_line(out, "fitted (least squares)", fit->best_efficiency, &fit->best);
    if (fit->at_edge)
        fprintf(out,
                "    the fit is at an end of the grid: the efficiency alone cannot explain these runs\n");
    if (!fit->loo_valid) {
        fprintf(out, "    leave-one-out: needs at least two runs\n");
        return;
    }
    fprintf(out, "    leave-one-out (each run predicted with the efficiency fitted to the others):\n");
    for (size_t i = 0; i < fit->n; i++)
        fprintf(out, "      %-24.24s %10.3f %+12.2f %%\n", names[i], fit->loo_efficiency[i],
                fit->loo_error_pct[i]);
    fprintf(out, "    %-28s %10s %12.2f %% %11.2f %% %9.2f %%\n", "leave-one-out", "", fit->loo.mean_abs_pct,
            fit->loo.max_abs_pct, fit->loo.rms_pct);
}

static void errors_json(json_writer_t *w, const char *key, double eff, const calib_errors_t *e) {
    json_open_object(w, key);
    if (eff > 0.0)
        json_number(w, "flop_efficiency", eff);
    json_number(w, "mean_abs_error_pct", e->mean_abs_pct);
    json_number(w, "max_abs_error_pct", e->max_abs_pct);
    json_number(w, "rms_error_pct", e->rms_pct);
    json_close_object(w);
}

struct cJSON *calib_json(const calib_fit_t *fit, const char *const *names) {
    json_writer_t w;
    json_start(&w, NULL);
    json_string(&w, "system", fit->system);
    json_int(&w, "runs", (int64_t)fit->n);
    errors_json(&w, "as_read", fit->current_efficiency, &fit->current);
    errors_json(&w, "fitted", fit->best_efficiency, &fit->best);
    json_bool(&w, "at_grid_edge", fit->at_edge);
    if (fit->loo_valid) {
        errors_json(&w, "leave_one_out", 0.0, &fit->loo);
        json_open_array(&w, "leave_one_out_rows");
        for (size_t i = 0; i < fit->n; i++) {
            json_open_object(&w, NULL);
            json_string(&w, "name", names[i]);
            json_number(&w, "flop_efficiency", fit->loo_efficiency[i]);
            json_number(&w, "error_pct", fit->loo_error_pct[i]);
            json_close_object(&w);
        }
        json_close_array(&w);
    }
    return json_take(&w);
}
