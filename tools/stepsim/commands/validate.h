/* validate.h - the result of `stepsim validate --measured`: computed by commands/cmd_validate.c,
 * printed by output/print_validate.c (print.h). */
#ifndef STEPSIM_VALIDATE_H
#define STEPSIM_VALIDATE_H

#include <stddef.h>

#include "model.h"

/* One measured run and its predictions. */
typedef struct run_row {
    char name[64];
    model_job_t job; /* the corrected job as predicted */
    char system[32];
    double measured_s;
    int64_t cp;
    int mbs_recorded, interleave_recorded, attention_recorded, dp_comm_recorded, grad_accum_recorded;
    model_summary_t pred, ref;
    double error_pct, ref_error_pct;
    /* --sim: the simulation with analytic communication and with the network (0: not simulated) */
    double sim_analytic_s, sim_network_s, sim_analytic_error_pct, sim_network_error_pct;
    double sim_unmodeled_s; /* the analytic cost added for what the simulation does not model */
    char sim_topology[64];
    char sim_error[200]; /* why a row was not simulated ("" if it was) */
    double sim_wall_s;
} run_row_t;

/* The analytic model's and the reference's errors over every row. */
typedef struct summary_stats {
    double mean_abs, max_abs, ref_mean_abs, ref_max_abs;
} summary_stats_t;

/* --sim: the errors over the rows simulated. */
typedef struct sim_stats {
    size_t simulated;
    double mean_abs[3], max_abs[3]; /* analytic, simulation analytic comm, simulation network */
} sim_stats_t;

/* --calibrate: one system's FLOP-efficiency fit; names[i] is run i's name (rows' storage). */
typedef struct validate_calib {
    const char *system;
    model_calibration_t fit;
    const char **names;
    int fitted; /* fit holds a result (model_calibrate_destroy) */
} validate_calib_t;

typedef struct validate_result {
    const char *file;                     /* the measured CSV */
    const char *source, *source_describe; /* the prediction source ("analytic") and its one line */
    int unrecorded_search;                /* --unrecorded search (else fixed) */
    const run_row_t *rows;
    size_t n;
    summary_stats_t stats;
    int sim; /* --sim: sim_stats and the rows' sim_* fields are filled */
    sim_stats_t sim_stats;
    int calibrate; /* --calibrate: one fit per system, in the order of each system's first row */
    validate_calib_t *calib;
    size_t n_calib;
} validate_result_t;

#endif
