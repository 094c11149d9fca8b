/* cmd_search.c - `stepsim search`: the top K layouts by throughput (printed by output/print_search.c;
 * exit 3 if none fits). */
#include <inttypes.h>
#include <string.h>

#include "commands.h"
#include "print.h"

void cmd_search_strategies_text(char *buf, size_t n, unsigned mask) {
    buf[0] = '\0';
    for (int s = 0; s < MODEL_STRATEGY_COUNT; s++) {
        if (!(mask & (1u << s)))
            continue;
        size_t used = strlen(buf);
        snprintf(buf + used, n - used, "%s%s", used ? ", " : "", model_strategy_name((model_strategy_t)s));
    }
}

/* Resolve the scenario and run the search; on CLI_OK res holds the results (caller destroys). */
static int search_run(scenario_t *scn, const cli_opts_t *opts, model_job_t *job, unsigned *mask,
                      model_search_result_t *res, cli_diag_t *diag) {
    memset(res, 0, sizeof *res);
    int rc = scenario_resolve_search(scn, job, mask, diag);
    if (rc)
        return rc;
    /* --pipeline-schedule all: every schedule where it is valid; else the one given (1f1b) */
    const unsigned pipelines = scn->pipeline_all
                                   ? (1u << MODEL_PIPELINE_1F1B) | (1u << MODEL_PIPELINE_ZB_H1) |
                                         (1u << MODEL_PIPELINE_ZB_V) | (1u << MODEL_PIPELINE_DUALPIPE)
                                   : 1u << job->training.pipeline;
    int mrc = model_search_run_pipelines(job, *mask, pipelines, opts->top_k, res);
    if (mrc == MODEL_ENOMEM)
        return cli_fail(diag, CLI_ERUNTIME, "out of memory (--top %d)", opts->top_k);
    if (mrc == MODEL_EINVAL)
        return cli_fail(diag, CLI_EUSAGE,
                        "%s%sthe model or system cannot be searched; allowed: positive sizes and "
                        "rates (see `stepsim search --help`)",
                        scn->file, scn->file[0] ? ": " : "");
    if (mrc != MODEL_OK)
        return cli_fail(diag, CLI_ERUNTIME, "search failed (model status %d)", mrc);
    for (int i = 0; i < res->n_results; i++) {
        const model_summary_t *s = &res->results[i];
        char what[64];
        snprintf(what, sizeof what, "search: iteration time of layout %d", i);
        if ((rc = cmd_require_finite(s->iteration_time_s, what, job, diag)) ||
            (rc = cmd_require_finite(s->throughput_samples_per_s, what, job, diag))) {
            model_search_result_destroy(res);
            return rc;
        }
    }
    return CLI_OK;
}

/* CLI_OK, or CLI_ENORESULT with its message when nothing fits. */
static int search_outcome(const model_search_result_t *res, const model_job_t *job, const scenario_t *scn,
                          unsigned mask, cli_diag_t *diag) {
    if (res->n_results > 0)
        return CLI_OK;
    char strategies[64];
    cmd_search_strategies_text(strategies, sizeof strategies, mask);
    if (res->candidates_evaluated == 0)
        return cli_fail(diag, CLI_ENORESULT,
                        "no configuration: no layout of %s exists for %s on %" PRId64
                        " GPUs with global batch "
                        "%" PRId64 "; try another GPU count or global batch",
                        strategies, scenario_model_name(scn), job->gpus, job->global_batch);
    return cli_fail(diag, CLI_ENORESULT,
                    "no configuration fits: all %" PRId64 " candidates of %s for %s on %" PRId64
                    " x %s GPUs need more than %.6g GB per GPU; try more GPUs or another system",
                    res->candidates_evaluated, strategies, scenario_model_name(scn), job->gpus,
                    scenario_system_name(scn), job->system.hbm_capacity_gb);
}

int cmd_search_compute(scenario_t *scn, const cli_opts_t *opts, search_result_t *r, cli_diag_t *diag) {
    memset(r, 0, sizeof *r);
    r->scn = scn;
    int rc = search_run(scn, opts, &r->job, &r->mask, &r->res, diag);
    if (rc)
        return rc;
    r->searched = 1;
    return search_outcome(&r->res, &r->job, scn, r->mask, diag);
}

void search_result_destroy(search_result_t *r) {
    model_search_result_destroy(&r->res);
}

int cmd_search(scenario_t *scn, const cli_opts_t *opts, FILE *out, cli_diag_t *diag) {
    search_result_t r;
    int rc = cmd_search_compute(scn, opts, &r, diag);
    if (!r.searched)
        return rc;
    if (print_search(out, &r, opts) != 0)
        rc = cli_fail(diag, CLI_ERUNTIME, "out of memory while printing the JSON result");
    search_result_destroy(&r);
    return rc;
}

int cmd_search_best(scenario_t *scn, model_parallel_t *best, int64_t *evaluated, int64_t *feasible,
                    cli_diag_t *diag) {
    model_job_t job;
    unsigned mask = 0;
    model_search_result_t res;
    cli_opts_t opts = {0, 0, 1};
    int rc = search_run(scn, &opts, &job, &mask, &res, diag);
    if (rc)
        return rc;
    rc = search_outcome(&res, &job, scn, mask, diag);
    if (rc == CLI_OK)
        *best = res.results[0].par;
    *evaluated = res.candidates_evaluated;
    *feasible = res.candidates_feasible;
    model_search_result_destroy(&res);
    return rc;
}
