/* jobs.h - `stepsim run` on a scenario with "jobs" (cmd_jobs.c): several jobs placed on one topology
 * by their allocation policies, simulated together on one engine (step_simulate_jobs), each against
 * itself alone on the same GPUs (--baseline), with the links where they met. print_jobs.c prints it.
 */
#ifndef STEPSIM_JOBS_H
#define STEPSIM_JOBS_H

#include "commands.h"

typedef struct jobs_job {
    char name[64];
    char allocation[128]; /* the policy as given */
    model_job_t job;
    model_estimate_t est; /* the model's estimate of the job alone */
    step_config_t cfg;
    int32_t *gpus;       /* [job.gpus] the topology GPU of each job GPU, ascending */
    char gpus_text[160]; /* the same as ranges, "0-63,128-191" */
    step_result_t res;   /* together */
    int has_alone;
    step_result_t alone; /* alone on the same GPUs (--baseline on) */
} jobs_job_t;

typedef struct jobs_result {
    int32_t n;
    jobs_job_t *job;
    char topology[80];
    int64_t topology_gpus, idle_gpus;
    int32_t gpus_per_node;
    uint64_t seed;
    int calibrated, baseline;
    step_config_t cfg; /* the run's options (each job adds its schedule and optimizer step) */
    step_jobs_result_t sim;
    int traced;
    trace_writer_stats_t trace_stats;
} jobs_result_t;

/* `stepsim run` with jobs: the scenario is loaded (scn->jobs set); opts are run's. */
int cmd_run_jobs(const cli_args_t *a, scenario_t *scn, const run_opts_t *opts, FILE *out, cli_diag_t *diag);

/* `stepsim compare` with jobs: the jobs placed and simulated (together and alone) on each topology
 * of the list, with run's defaults and compare's --placement, --collapse, --max-memory and
 * --baseline; a table of each job's step time and slowdown per topology. No --csv, --plot or GPU
 * list. */
struct topo_item;
int cmd_compare_jobs(const cli_args_t *a, scenario_t *scn, const struct topo_item *topos, int n_topo,
                     FILE *out, cli_diag_t *diag);

#endif
