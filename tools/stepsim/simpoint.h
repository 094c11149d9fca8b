/* simpoint.h - what the commands that simulate a scenario's job share around step_simulate (step.h):
 * the topology the job runs on (built from the scenario's typed topology, checked against the job),
 * and compare's and validate's simulation with run's defaults, summed up as the figures they print.
 *
 * Contract
 * - The job is model.h's, already checked (scenario_resolve or validate's rows).
 * - simpoint_topology builds spec (topo_json.h's meaning of every name) for job->gpus GPUs on the
 *   job's system. The network's nodes are the job's NVLink domains: the ideal kind and the shortcuts
 *   get them from the system; any other topology whose nodes hold another number of GPUs than the
 *   system's nvlink_size (or gcd(gpus, nvlink_size)) is refused with one line naming both. A
 *   topology of another GPU count is refused too. where prefixes every message ("--topology").
 * - simpoint_run runs the job as run does with its defaults (step_config_default, NCCL's calibration
 *   on a network), except that the schedule follows the job: interleaved with
 *   job->training.interleave virtual stages when that is above 1, else 1F1B. spec NULL: analytic
 *   communication (no network).
 * - Errors: CLI_EUSAGE for a topology or job the simulation rejects (one line in d), CLI_ERUNTIME
 *   for memory or an engine failure. Installs igraph's ignoring error handler (tools/ owns it).
 */
#ifndef STEPSIM_SIMPOINT_H
#define STEPSIM_SIMPOINT_H

#include <stdint.h>

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
    double busiest_link_bytes, total_link_bytes; /* the busiest link's and every link's (network) */
    int has_traffic;                             /* traffic filled (a network) */
    step_traffic_t traffic;                      /* bytes each parallel group sent */
    char topology[64];                           /* the topology's name, or "none (analytic)" */
    int32_t gpus, simulated_gpus;                /* what was simulated after collapsing */
    int collapse_exact;                          /* 1: the collapse is exact */
    int has_summary;                             /* summary filled (want_summary and a network) */
    topo_summary_t summary;                      /* counts and the cost proxy */
    double wall_s;                               /* host time spent, seconds */
} simpoint_t;

/* perturb (may be NULL: the unperturbed baseline): the scenario's perturbations; its slow and failed
 * links are applied here, the one place a job's topology is built (perturb_links_apply: exit 2 for a
 * bad entry, 3 when failed links cut the job). */
int simpoint_topology(const model_job_t *job, const topo_spec_t *spec, const scn_perturb_t *perturb,
                      const char *where, topo_t **out, cli_diag_t *d);

struct cli_progress; /* output/progress.h */

/* Simulate job (see the contract). base: the step configuration to start from (NULL:
 * step_config_default; its comm and schedule are set here). want_summary: also compute
 * topo_summary_compute (BFS and one max-flow: slower on large topologies). progress (may be NULL)
 * is shown the simulation's progress. Returns CLI_OK and fills *out. */
int simpoint_run(const model_job_t *job, const step_config_t *base, const topo_spec_t *spec,
                 const scn_perturb_t *perturb, const char *where, int want_summary,
                 struct cli_progress *progress, simpoint_t *out, cli_diag_t *d);

/* The exit code and message of a failed step_simulate (prefix: where network errors point). */
int simpoint_fail(int status, const step_sim_result_t *r, const char *prefix, cli_diag_t *d);

/* The proxy's one number: switches + network cables + optical transceivers, each counted 1
 * (docs/compare.md). 0 without a summary. */
double simpoint_cost_units(const simpoint_t *p);

#endif
