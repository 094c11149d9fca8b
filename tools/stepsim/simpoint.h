/* simpoint.h - one simulated training step of a checked job, as compare and validate need it: the
 * step time, the critical GPU's breakdown, the busiest link and (optionally) the topology's cost
 * proxy, without printing.
 *
 * Contract
 * - The job is model.h's, already checked (scenario_resolve or validate's rows). The simulation
 *   runs it as the run command would with its defaults (step_config_default, and on a network
 *   NCCL's calibration, run's --calibration nccl), except that the schedule follows the job: interleaved with
 * job->training.interleave virtual stages when that is above 1, else 1F1B.
 * - spec NULL: analytic communication (no network). Otherwise a topology specification as
 *   topo_json_params takes it (a preset, kind, file name or object), sized to the job's GPUs; the
 *   "ideal" kind is filled from the job's system. where prefixes error messages ("--topologies").
 * - Errors: CLI_EUSAGE for a topology or job the simulation rejects (one line in diag), CLI_ERUNTIME
 *   for memory or an engine failure. Installs igraph's ignoring error handler (tools/ owns it).
 */
#ifndef STEPSIM_SIMPOINT_H
#define STEPSIM_SIMPOINT_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "model.h"
#include "scenario.h"
#include "sim.h"
#include "step.h"
#include "topo.h"

typedef struct simpoint {
    double step_time_s;
    /* the critical GPU's breakdown (adds up to step_time_s) */
    double compute_s, exposed_tp_s, exposed_pp_s, exposed_dp_s, bubble_idle_s;
    double max_link_utilization; /* the busiest link's average utilisation, 0..1; 0 without a network */
    char busiest_link[96];
    char topology[64];            /* the topology's name, or "none (analytic)" */
    int32_t gpus, simulated_gpus; /* what was simulated after collapsing */
    int collapse_exact;           /* 1: the collapse is exact */
    int has_summary;              /* summary filled (want_summary and a network) */
    topo_summary_t summary;       /* counts and the cost proxy */
    double wall_s;                /* host time spent, seconds */
} simpoint_t;

/* Simulate job (see the contract). base: the step configuration to start from (NULL:
 * step_config_default; its comm and schedule are set here). want_summary: also compute
 * topo_summary_compute (BFS and one max-flow: slower on large topologies). Returns CLI_OK and fills
 * *out. */
int simpoint_run(const model_job_t *job, const step_config_t *base, const cJSON *spec, const char *where,
                 int want_summary, simpoint_t *out, cli_diag_t *d);

/* Build the topology of spec (as topo_json_params takes it) for job->gpus GPUs, its parameters in
 * *params; an ideal topology whose domains do not divide the job gets domains of
 * gcd(gpus, gpus_per_node). where prefixes error messages. CLI_OK, or the topology's exit code with
 * one line in d. Installs igraph's ignoring error handler. */
int simpoint_topology(const model_job_t *job, const cJSON *spec, const char *where, topo_t **out,
                      topo_params_t *params, cli_diag_t *d);

/* NCCL's calibration of the network mode for a topology built from p (run's --calibration nccl,
 * the default): platform constants, and link efficiencies per link kind. */
void simpoint_calibrate(const topo_params_t *p, sim_config_t *cfg);

/* The proxy's one number: switches + network cables + optical transceivers, each counted 1
 * (docs/compare.md). 0 without a summary. */
double simpoint_cost_units(const simpoint_t *p);

#endif
