/* commands.h - the commands behind cli_main: each resolves a scenario, runs the model and prints.
 *
 * Contract: cli.c parses the command line with options.c's one table (options.h); estimate and search
 * get the loaded scenario (defaults, file, options), the other commands their parsed options
 * (cli_args_t) and load it with cli_apply_scenario. A command resolves the scenario, writes
 * its result to out and returns an exit code (scenario.h CLI_*), filling diag with one line on
 * failure. Commands never print to stderr themselves, except warnings through the caller's err.
 * The *_result variants do the same work without printing: they return the object that --json
 * prints, for callers that collect results in-process (sweep).
 */
#ifndef STEPSIM_COMMANDS_H
#define STEPSIM_COMMANDS_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "options.h"
#include "scenario.h"
#include "step.h"

/* Flags that are not scenario fields. */
typedef struct cli_opts {
    int json;   /* --json */
    int layers; /* --layers (estimate) */
    int top_k;  /* --top K (search), default 10 */
} cli_opts_t;

int cmd_estimate(scenario_t *scn, const cli_opts_t *opts, FILE *out, cli_diag_t *diag);
int cmd_search(scenario_t *scn, const cli_opts_t *opts, FILE *out, cli_diag_t *diag);

/* The --json object of estimate / search for a loaded scenario (opts->json is ignored). On return
 * *result is a new object owned by the caller (cJSON_Delete) or NULL. estimate: CLI_OK with a result,
 * or an error code without one. search: CLI_OK, or CLI_ENORESULT with a result whose "results" list
 * is empty (nothing fits), or another error code without a result. */
int cmd_estimate_result(scenario_t *scn, const cli_opts_t *opts, cJSON **result, cli_diag_t *diag);
int cmd_search_result(scenario_t *scn, const cli_opts_t *opts, cJSON **result, cli_diag_t *diag);

/* The best layout of a loaded scenario (search with top 1 over its strategy, or all): CLI_OK and
 * *best, or the search's error (CLI_ENORESULT when nothing fits). evaluated and feasible count the
 * candidates. */
int cmd_search_best(scenario_t *scn, model_parallel_t *best, int64_t *evaluated, int64_t *feasible,
                    cli_diag_t *diag);

/* The commands below take their parsed options (options.h: a->file is the positional argument).
 * `stepsim sweep GRID.json --out FILE.jsonl ...` (sweep.c): the summary goes to out, progress and
 * warnings to err. cmd_sweep_about / cmd_sweep_tail: sweep's help text around the option list. */
int cmd_sweep(const cli_args_t *a, FILE *out, FILE *err, cli_diag_t *diag);
void cmd_sweep_about(FILE *out);
void cmd_sweep_tail(FILE *out);

/* `stepsim topo [SCENARIO.json] --topology X ...` (cmd_topo.c): the summary goes to out. */
int cmd_topo(const cli_args_t *a, FILE *out, FILE *err, cli_diag_t *diag);

/* `stepsim validate --measured FILE.csv` (cmd_validate.c): measured runs against the analytic model;
 * without --measured the waterfall (cmd_waterfall). */
int cmd_validate(const cli_args_t *a, FILE *out, FILE *err, cli_diag_t *diag);

/* `stepsim run [SCENARIO.json] ...` (cmd_run.c): one training step simulated event by event. The
 * options that are not scenario fields, as text (NULL: the default); deterministic leaves out the
 * wall time (sweep lines must not depend on it). cmd_run_result returns the --json object. */
typedef struct run_opts {
    int json, deterministic;
    const char *comm, *schedule, *placement, *p2p, *collapse, *granularity, *optimizer, *fidelity, *links;
    const char *calibration, *max_memory;
    const char *trace, *trace_ranks;
    char schedule_text[32],
        optimizer_text[8]; /* storage of schedule / optimizer when set from the scenario */
} run_opts_t;
int cmd_run(const cli_args_t *a, FILE *out, FILE *err, cli_diag_t *diag);
int cmd_run_result(scenario_t *scn, const run_opts_t *opts, cJSON **result, cli_diag_t *diag);
/* The run's own options checked (the values of --comm, --schedule, ...): CLI_OK or one line. */
int cmd_run_check(const run_opts_t *opts, cli_diag_t *diag);

/* The scenario's part of the simulated step, the same for run, compare and validate: --interleave V
 * (training.interleave) makes the schedule interleaved with V virtual stages unless opts->schedule
 * names one; --optimizer-step (training.optimizer_step, from an option or the file) decides whether
 * the step simulates the optimizer (not given: opts->optimizer stays NULL, run's auto). */
void cmd_run_scenario_opts(const scenario_t *scn, run_opts_t *opts);

/* The step configuration that compare and validate simulate with: step_config_default with the
 * scenario's optimizer step (as cmd_run_scenario_opts) and --placement (checked, may be NULL). */
void cmd_sim_config(const scenario_t *scn, const char *placement, step_config_t *cfg);

/* `stepsim collective [SCENARIO.json] --op OP ...` (cmd_collective.c): one collective simulated on a
 * topology, nccl-tests style. */
int cmd_collective(const cli_args_t *a, FILE *out, FILE *err, cli_diag_t *diag);

/* `stepsim compare [SCENARIO.json] --topologies A,B,C ...` (cmd_compare.c): one workload simulated on
 * several topologies (and GPU counts); `stepsim validate [SCENARIO.json]` without --measured: the
 * waterfall from the analytic estimate to the simulated step (cmd_validate calls cmd_waterfall). */
int cmd_compare(const cli_args_t *a, FILE *out, FILE *err, cli_diag_t *diag);
int cmd_waterfall(const cli_args_t *a, FILE *out, FILE *err, cli_diag_t *diag);

#endif
