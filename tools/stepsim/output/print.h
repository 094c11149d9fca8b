/* print.h - the printers: each command's typed result (commands.h) as text or as its --json object.
 *
 * Contract: print_X(out, result, ...) writes the command's text, or with --json its object followed
 * by a newline; it returns 0, or -1 if an allocation failed while building the JSON (nothing printed).
 * Write errors stay in out's error flag for the caller. print_X_json returns the --json object itself
 * (the caller frees it with cJSON_Delete), or NULL when out of memory: sweep's lines are these objects.
 * Only the printers and the loaders use cJSON; the commands never do.
 */
#ifndef STEPSIM_PRINT_H
#define STEPSIM_PRINT_H

#include <stdio.h>

#include "commands.h"

struct cJSON;

int print_estimate(FILE *out, const estimate_result_t *r, const cli_opts_t *opts);
struct cJSON *print_estimate_json(const estimate_result_t *r, int layers);

int print_search(FILE *out, const search_result_t *r, const cli_opts_t *opts);
struct cJSON *print_search_json(const search_result_t *r);

/* run (o->json chooses; o->trace and o->deterministic shape it). */
int print_run(FILE *out, const run_result_t *r, const scenario_t *scn, const run_opts_t *o);
struct cJSON *print_run_json(const run_result_t *r, const scenario_t *scn, const run_opts_t *o);
/* The scenario object of a trace's metadata, unformatted (malloc'd: free it), or NULL if out of memory. */
char *print_run_trace_scenario(const model_summary_t *su, const model_job_t *job, const scenario_t *scn,
                               const step_config_t *c);
/* The same for --workload: the workload (path, ranks, nodes, compute), the system and the
 * communication; malloc'd, NULL when out of memory. */
char *print_run_trace_workload(const char *path, int32_t ranks, int64_t nodes, const char *compute,
                               const model_job_t *job, const step_config_t *c);

/* run with jobs (commands/jobs.h; o->json chooses). */
struct jobs_result;
int print_jobs(FILE *out, const struct jobs_result *r, const scenario_t *scn, const run_opts_t *o);
/* compare with jobs: one result per topology (labels as listed), a table or with json its object. */
int print_jobs_compare(FILE *out, const struct jobs_result *const *rs, const char *const *labels, int n,
                       const scenario_t *scn, int json);

/* topo's summary as text, or with json its object. */
int print_topo(FILE *out, const topo_result_t *r, int json);

/* collective's table, or with json its object. */
int print_collective(FILE *out, const collective_result_t *r, int json);

/* compare's tables (and the lines naming the --csv and --plot files written), or with json its object;
 * the waterfall likewise. print_compare_header: the job header and layout lines into buf (the
 * scenario names the model and system), kept by the command while the scenario is alive. */
struct cmp_run;
struct waterfall;
int print_compare(FILE *out, const struct cmp_run *r, int json, const char *csv, const char *plot);
int print_waterfall(FILE *out, const struct waterfall *w, int json, const char *plot);
void print_compare_header(char *buf, size_t n, const char *cmd, const model_job_t *job,
                          const scenario_t *scn);
/* The --csv table of compare, and the --plot files of compare and the waterfall (a .svg or .png by
 * the name; gnuplot, or $STEPSIM_GNUPLOT, runs the script): each written beside path and renamed into
 * place. CLI_OK or an exit code with one line in d. */
int print_compare_csv(const char *path, const struct cmp_run *r, cli_diag_t *d);
int print_compare_plot(const char *path, const struct cmp_run *r, cli_diag_t *d);
int print_waterfall_plot(const char *path, const struct waterfall *w, cli_diag_t *d);

/* validate --measured: the runs, with --sim the simulation's table, with --calibrate the fits; or
 * with json one object. */
struct validate_result;
int print_validate(FILE *out, const struct validate_result *v, int json);

#endif
