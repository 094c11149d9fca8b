/* calibrate.h - fit a system's FLOP efficiency to measured training runs (`validate --calibrate`).
 *
 * Contract
 * - calib_fit() predicts every run with the analytic model at each efficiency of a fixed grid
 *   (CALIB_FROM..CALIB_TO in steps of CALIB_STEP), the system's flop_efficiency replaced and nothing
 *   else changed, and keeps the efficiency with the least sum of squared percentage errors (ties:
 *   the lower efficiency). The runs should share one system; the caller groups them.
 * - Leave-one-out: each run is predicted with the efficiency fitted to the other runs alone, which
 *   estimates the error on a run the fit has not seen. It needs at least two runs (loo_valid).
 * - Deterministic, no globals. calib_fit allocates its scratch and frees it; calib_free releases the
 *   per-run arrays of a fit. Returns CLI_OK or an exit code with diag filled.
 */
#ifndef STEPSIM_CALIBRATE_H
#define STEPSIM_CALIBRATE_H

#include <stddef.h>
#include <stdio.h>

#include "model.h"
#include "scenario.h"

#define CALIB_FROM 0.40
#define CALIB_TO 1.00
#define CALIB_STEP 0.005

typedef struct calib_errors {
    double mean_abs_pct, max_abs_pct, rms_pct;
} calib_errors_t;

typedef struct calib_fit {
    char system[32];
    size_t n;                  /* runs */
    double current_efficiency; /* the efficiency the runs were read with */
    calib_errors_t current;    /* their errors at it */
    double best_efficiency;
    calib_errors_t best;
    int at_edge; /* the best efficiency is an end of the grid */
    int loo_valid;
    calib_errors_t loo;
    double *loo_efficiency; /* per run: fitted to the others */
    double *loo_error_pct;  /* per run: its error at that efficiency */
} calib_fit_t;

int calib_fit(const model_job_t *jobs, const double *measured_s, size_t n, calib_fit_t *out,
              cli_diag_t *diag);
void calib_free(calib_fit_t *fit);

/* The text block of one fit; names[i] is run i's name. */
void calib_print_text(FILE *out, const calib_fit_t *fit, const char *const *names);
/* The JSON object of one fit (the caller frees it with cJSON_Delete), or NULL if out of memory. */
struct cJSON *calib_json(const calib_fit_t *fit, const char *const *names);

#endif
