/* commands.h - the commands behind cli_main: each resolves a scenario, runs the model or the
 * simulation into a typed result, and hands it to its printer (output/print.h).
 *
 * Contract: cli.c parses the command line with options.c's one table (options.h); estimate and search
 * get the loaded scenario (defaults, file, options), the other commands their parsed options
 * (cli_args_t) and load it with cli_apply_scenario. A command resolves the scenario, computes its
 * typed result (declared here, or in commands/compare.h and commands/validate.h), has its printer
 * write it to out (text or --json; the commands never build JSON) and returns an exit code
 * (scenario.h CLI_*), filling diag with one line on failure. Commands never print to stderr
 * themselves, except warnings through the caller's err. The *_compute functions stop at the result,
 * for callers that print it themselves (sweep takes the --json objects from print.h's print_*_json).
 */
#ifndef STEPSIM_COMMANDS_H
#define STEPSIM_COMMANDS_H

#include <stdio.h>

#include "options.h"
#include "scenario.h"
#include "sim.h"
#include "step.h"
#include "topo.h"
#include "trace.h"

/* Results that are not finite are errors (cmd_finite.c): CLI_OK if v is finite, else CLI_ERUNTIME
 * (exit 1) with one line "WHAT is not finite (CAUSE)", the cause being the system rate furthest
 * below the A100 preset's, or the model's sizes; job may be NULL. The _estimate form checks the
 * closed form's iteration time, throughput, breakdown and memory (where prefixes WHAT if given). */
int cmd_require_finite(double v, const char *what, const model_job_t *job, cli_diag_t *d);
int cmd_require_finite_estimate(const model_estimate_t *e, const model_job_t *job, const char *where,
                                cli_diag_t *d);
/* Before a simulation: CLI_EUSAGE (exit 2) if the closed-form step is longer than the simulator's
 * clock can hold (SIM_OP_MAX_S), naming the cause as above. */
int cmd_require_simulable(const model_estimate_t *e, const model_job_t *job, cli_diag_t *d);

/* Flags that are not scenario fields. */
typedef struct cli_opts {
    int json;   /* --json */
    int layers; /* --layers (estimate) */
    int top_k;  /* --top K (search), default 10 */
} cli_opts_t;

int cmd_estimate(scenario_t *scn, const cli_opts_t *opts, FILE *out, cli_diag_t *diag);
int cmd_search(scenario_t *scn, const cli_opts_t *opts, FILE *out, cli_diag_t *diag);

/* estimate's result: the resolved job and its estimate (est is owned: estimate_result_destroy). */
typedef struct estimate_result {
    model_job_t job;
    model_estimate_t *est;
    const scenario_t *scn; /* the scenario it was computed from (names, file) */
} estimate_result_t;
/* CLI_OK with *r filled (destroy it), or an error code with nothing to destroy. */
int cmd_estimate_compute(scenario_t *scn, estimate_result_t *r, cli_diag_t *diag);
void estimate_result_destroy(estimate_result_t *r);

/* search's result: the top K (res), the job and the strategies searched (mask). */
typedef struct search_result {
    model_job_t job;
    unsigned mask;
    model_search_result_t res;
    const scenario_t *scn;
    int searched; /* the search ran: res is filled (search_result_destroy), even when nothing fits */
} search_result_t;
/* CLI_OK, or CLI_ENORESULT with r->searched set and an empty res (nothing fits), or another error
 * code (r->searched tells whether res must be destroyed). */
int cmd_search_compute(scenario_t *scn, const cli_opts_t *opts, search_result_t *r, cli_diag_t *diag);
void search_result_destroy(search_result_t *r);
/* "1d, 2d, 2d-seqp" for a strategy mask. */
void cmd_search_strategies_text(char *buf, size_t n, unsigned mask);

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
/* topo's result: the built topology, its summary and its switches per tier (index 1..3). */
typedef struct topo_result {
    const topo_t *topo;
    topo_summary_t summary;
    int64_t switches_by_tier[4];
} topo_result_t;

/* `stepsim validate --measured FILE.csv` (cmd_validate.c): measured runs against the analytic model;
 * without --measured the waterfall (cmd_waterfall). */
int cmd_validate(const cli_args_t *a, FILE *out, FILE *err, cli_diag_t *diag);

/* `stepsim run [SCENARIO.json] ...` (cmd_run.c): one training step simulated event by event. The
 * options that are not scenario fields, as text (NULL: the default); deterministic leaves out the
 * wall time (sweep lines must not depend on it). */
struct cli_progress; /* output/progress.h */

typedef struct run_opts {
    int json, deterministic;
    int layers;                    /* --layers: one block as simulated (step_block_view) */
    struct cli_progress *progress; /* the step's progress display, or NULL */
    const char *comm, *schedule, *placement, *p2p, *collapse, *granularity, *optimizer, *fidelity, *links;
    const char *calibration, *max_memory;
    const char *trace, *trace_ranks;
    FILE *warn;                         /* stderr: the trace's size warning and rank notes (NULL: none) */
    const char *baseline, *entry_costs; /* --baseline on|off, --entry-costs auto|on|off (NULL: default) */
    const char *expert_skew;            /* --expert-skew S (NULL: 0) */
    int64_t interleave;                 /* the scenario's virtual stages per GPU (cmd_run_scenario_opts) */
    int pipeline;                       /* the scenario's model_pipeline_t (cmd_run_scenario_opts) */
    char optimizer_text[8];             /* storage of optimizer when set from the scenario */
    /* --workload, --compute, --export-et (docs/workloads.md; NULL: not given) */
    const char *workload, *compute, *export_et;
} run_opts_t;
int cmd_run(const cli_args_t *a, FILE *out, FILE *err, cli_diag_t *diag);
/* run's result: the job, the model's estimate, the step configuration and the simulated step. */
#define RUN_MAX_LINKS STEP_SIM_MAX_LINKS
/* One perturbation entry's cost: the step with only that entry minus the baseline step. */
#define RUN_MAX_ENTRIES (SCN_PERTURB_MAX_GPUS + 1)
typedef struct run_entry {
    char label[160]; /* scenario_perturbation_label */
    double step_s;   /* the step with only this entry */
    double cost_s;   /* step_s - the baseline's step time */
} run_entry_t;
/* The entry costs' policy: computed when on, or (auto) with at least two entries and at most this
 * many operations in the what-if run (one more simulation each); with one entry its cost is the
 * what-if's. */
#define RUN_ENTRY_COSTS_MAX_OPS 5000000
typedef struct run_result {
    model_job_t job;
    model_estimate_t est;
    step_config_t cfg;
    step_result_t res;
    char topology[80];
    int n_links;
    char link_names[RUN_MAX_LINKS][96];
    double link_util[RUN_MAX_LINKS];
    double wall_s;          /* left out of the output with run_opts_t.deterministic */
    int traced, calibrated; /* a trace was written (trace_stats); NCCL's calibration was on */
    trace_writer_stats_t trace_stats;
    step_sim_result_t sim;
    double *stage_act_gb; /* peak activations of each stage's first GPU (pp entries), or NULL: sim's */
    int has_view;         /* --layers: view holds one block as simulated */
    step_block_view_t view;
    /* the what-if (docs/what-if.md): the scenario's perturbations and, unless --baseline off, the
     * same scenario simulated without them (scenario_clear_perturbations) */
    int perturbed;               /* the scenario has perturbations */
    int64_t slowed_gpus;         /* GPUs whose compute factor is not 1 */
    char *slowed_list;           /* those GPUs as ranges (scenario_slowed_list), owned; NULL: none */
    uint64_t seed;               /* the perturbations' seed */
    struct run_result *baseline; /* NULL: not simulated */
    int n_entries;               /* perturbation entries (scenario_perturbation_entries) */
    int entry_costs;             /* 1: entry[] holds each entry's cost */
    char entry_costs_note[200];  /* why not, when not */
    run_entry_t entry[RUN_MAX_ENTRIES];
    /* --workload: the workload simulated in place of the model's step (no estimate, no memory) */
    int workload;
    int32_t wl_ranks;
    int64_t wl_nodes;
    step_wl_compute_t wl_compute;
    /* --export-et: the ranks and nodes written */
    int exported;
    int32_t exported_ranks;
    int64_t exported_nodes;
} run_result_t;
/* The what-if's cost in seconds and percent of the baseline's step (perturbed - baseline). */
double run_cost_s(const run_result_t *r);
double run_cost_percent(const run_result_t *r);

/* The run simulated: CLI_OK or an error code; *r is allocated either way unless out of memory
 * (free it with run_result_free, which takes NULL). */
int cmd_run_compute(scenario_t *scn, const run_opts_t *opts, run_result_t **r, cli_diag_t *diag);
void run_result_free(run_result_t *r);
/* The run's own options checked (the values of --comm, --schedule, ...): CLI_OK or one line. */
int cmd_run_check(const run_opts_t *opts, cli_diag_t *diag);
/* The same into the step configuration they give, and --links into *links. */
int cmd_run_config(const run_opts_t *opts, step_config_t *cfg, int *links, cli_diag_t *diag);

/* The simulating commands' scenario (run, compare, validate's waterfall, sweep's run points, each job
 * of a jobs scenario), called after the file and the options and before the job is resolved, so that
 * the estimate printed beside a simulation is the estimate of the configuration simulated: in the
 * corrected model the optimizer step is on unless --optimizer-step (training.optimizer_step) says
 * otherwise, since the simulated step runs it (the reference model has neither). */
void cmd_sim_scenario(scenario_t *scn);

/* The scenario's part of the simulated step, the same for run, compare and validate: --interleave V
 * (training.interleave) is the one way to the interleaved schedule, in the estimate and the
 * simulated step alike (--schedule takes 1f1b or gpipe; gpipe with V > 1 is refused);
 * --optimizer-step (training.optimizer_step, from an option, the file or cmd_sim_scenario) decides
 * whether the step simulates the optimizer (not given: opts->optimizer stays NULL, the step's auto). */
void cmd_run_scenario_opts(const scenario_t *scn, run_opts_t *opts);

/* --max-memory GB (topo, collective, run, compare, validate, jobs): a positive number of GB into *gb_out,
 * else CLI_EUSAGE with one line naming the option and the value. */
int cmd_parse_max_memory(const char *text, double *gb_out, cli_diag_t *d);
/* --collapse auto|off|approx (run, compare, validate) into *out, else CLI_EUSAGE (did-you-mean). */
int cmd_parse_collapse(const char *text, step_collapse_t *out, cli_diag_t *d);

/* The step configuration that compare and validate simulate with: step_config_default with the
 * scenario's optimizer step (as cmd_run_scenario_opts) and --placement (checked, may be NULL). */
void cmd_sim_config(const scenario_t *scn, const char *placement, step_config_t *cfg);

/* `stepsim collective [SCENARIO.json] --op OP ...` (cmd_collective.c): one collective simulated on a
 * topology, nccl-tests style. */
int cmd_collective(const cli_args_t *a, FILE *out, FILE *err, cli_diag_t *diag);
/* collective's result: the request as resolved, the topology, the engine's link efficiencies and one
 * row per size. */
typedef struct collective_row {
    double size_bytes;
    sim_coll_bench_result_t res;
} collective_row_t;
typedef struct collective_result {
    sim_coll_op_t op;
    sim_coll_algo_t algo;
    sim_proto_t proto;
    sim_fidelity_t fidelity;
    int64_t gpus, gpus_per_node, groups;
    int strided, calibrated;
    const topo_t *topo;
    double network_efficiency, nvlink_efficiency;
    const collective_row_t *rows;
    int n_rows;
} collective_result_t;

/* `stepsim compare [SCENARIO.json] --topologies A,B,C ...` (cmd_compare.c): one workload simulated on
 * several topologies (and GPU counts); `stepsim validate [SCENARIO.json]` without --measured: the
 * waterfall from the analytic estimate to the simulated step (cmd_validate calls cmd_waterfall). */
int cmd_compare(const cli_args_t *a, FILE *out, FILE *err, cli_diag_t *diag);
int cmd_waterfall(const cli_args_t *a, FILE *out, FILE *err, cli_diag_t *diag);

/* The trace arguments of one of step's operations (trace_writer's op_args callback): pass,
 * microbatch, stage, collective, group, FLOPs and bytes, and for a compute operation a name such as
 * "fwd mb 3 block 5 qkv..fc2" written into name[0..name_size). Returns 0. */
int cmd_trace_op_args(const step_t *step, const sim_op_info_t *op, trace_op_args_t *out, char *name,
                      size_t name_size);

/* End a trace written to out's temporary file (run and jobs): with rc set, abort it (the temporary
 * is removed by outfile_discard) and return rc; else close it and rename it into place, setting
 * *traced. *stats gets the writer's counts either way. Returns rc or the error (one line in d). */
/* run's trace, planned once the step is built (trace_plan.c; docs/traces.md "Size"): the GPUs to
 * trace from --trace-ranks text (NULL: not given), collapsed ranks mapped to the simulated GPU that
 * represents them (said once on warn), the size estimate and, above CMD_TRACE_WARN_BYTES, a warning
 * naming the --trace-ranks that fit, or without --trace-ranks one tensor group per pipeline stage
 * instead of the whole job (said once). The estimate, per traced operation: its slice, plus for a
 * compute operation its memory sample, for a send or receive its flow event and two link samples
 * (bytes per event as measured on the default scenario; collectives' link samples are not counted). */
#define CMD_TRACE_SLICE_BYTES 300.0
#define CMD_TRACE_COMPUTE_EXTRA_BYTES 100.0
#define CMD_TRACE_P2P_EXTRA_BYTES 310.0
#define CMD_TRACE_WARN_BYTES 100e6
typedef struct cmd_trace_plan {
    trace_ranks_t ranks;   /* the GPUs traced; trace_ranks_destroy */
    double estimate_bytes; /* of the trace of those GPUs */
    int reduced;           /* 1: the whole job was too large, one tensor group per stage is traced */
    int folds_tp;          /* 1: compute operations hold folded tensor-parallel collectives */
} cmd_trace_plan_t;
int cmd_trace_plan(const step_t *step, const model_job_t *job, const step_config_t *cfg, const char *text,
                   FILE *warn, cmd_trace_plan_t *plan, cli_diag_t *d);
/* A link's name as the topology's (topo_link_name) with spaces: "leaf 3 -> spine 1", the spelling
 * docs and --fail-links use (spaces ignored there). */
void cmd_trace_link_name(const topo_t *t, int32_t link, char *buf, size_t size);

struct outfile;
int cmd_trace_finish(trace_writer_t *w, struct outfile *out, int rc, const char *path,
                     trace_writer_stats_t *stats, int *traced, cli_diag_t *d);

#endif
