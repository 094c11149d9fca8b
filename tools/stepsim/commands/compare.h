/* compare.h - the results of `stepsim compare` and of the waterfall of `stepsim validate`: computed by
 * commands/cmd_compare.c, printed by output/print_compare.c (print.h). */
#ifndef STEPSIM_COMPARE_H
#define STEPSIM_COMPARE_H

#include "model.h"
#include "simpoint.h"
#include "step.h"
#include "topo_list.h"

#define MAX_TOPOS 16
#define MAX_GPUS 16

/* compare: one row per topology, and the scaling view (one cell per GPU count and topology). */
typedef struct cmp_row {
    simpoint_t p;
    double slowdown, throughput, cost_units, perf_per_kcost;
    int has_baseline;       /* the what-if's baseline was simulated on this topology */
    double baseline_step_s; /* the scenario without its perturbations */
} cmp_row_t;

typedef struct scale_cell {
    int ok;
    double step_s;
    char error[160];
} scale_cell_t;

typedef struct cmp_run {
    model_job_t job;
    int training_given;    /* the optimizer step was given or derived (scenario_optimizer_step_given) */
    scn_perturb_t perturb; /* the scenario's perturbations, applied to every topology */
    char header[1024];     /* the job header and layout lines, printed while the scenario was alive */
    model_summary_t analytic;
    topo_item_t topo[MAX_TOPOS];
    int n_topo;
    cmp_row_t row[MAX_TOPOS];
    int64_t gpus[MAX_GPUS];
    int n_gpus;
    double scale_analytic[MAX_GPUS]; /* 0: failed */
    int64_t scale_gbs[MAX_GPUS];
    char scale_analytic_error[MAX_GPUS][160];
    scale_cell_t scale[MAX_GPUS][MAX_TOPOS];
    int approximate;   /* 1: some simulation collapsed approximately (--collapse approx) */
    step_config_t cfg; /* the scenario's optimizer step and --placement (cmd_sim_config) */
    /* the what-if (docs/what-if.md): the table's rows are the perturbed scenario; with a baseline
     * each row also has the scenario without its perturbations (the scaling view: perturbed only) */
    int perturbed;
    int64_t slowed_gpus;
    uint64_t seed;
    int jitter; /* step_jitter_dist_t of the perturbations, with jitter_cv */
    double jitter_cv;
} cmp_run_t;

/* The waterfall's steps: analytic estimate -> simulation with analytic communication -> network on
 * ideal -> network on the chosen topology. */
enum { WF_ANALYTIC, WF_SIM_ANALYTIC, WF_SIM_IDEAL, WF_SIM_TOPO, WF_COUNT };

typedef struct waterfall {
    model_job_t job;
    int training_given; /* as cmp_run_t's */
    char header[1024];
    char topology[64];
    double total[WF_COUNT];
    double part[WF_COUNT][5];
    double max_link[WF_COUNT];
    int approximate; /* 1: a network simulation collapsed approximately (--collapse approx) */
} waterfall_t;

#endif
