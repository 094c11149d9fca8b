/* cmd_search.c - `stepsim search`: the top K layouts by throughput, as text or JSON (exit 3 if none fits). */
#include <inttypes.h>
#include <string.h>

#include "commands.h"
#include "output.h"

/* "1d, 2d, 2d-seqp" for a strategy mask. */
static void mask_text(char *buf, size_t n, unsigned mask) {
    buf[0] = '\0';
    for (int s = 0; s < MODEL_STRATEGY_COUNT; s++) {
        if (!(mask & (1u << s)))
            continue;
        size_t used = strlen(buf);
        snprintf(buf + used, n - used, "%s%s", used ? ", " : "", model_strategy_name((model_strategy_t)s));
    }
}

static cJSON *search_json(const model_search_result_t *r, const model_job_t *job, const scenario_t *scn,
                          unsigned mask) {
    json_writer_t w;
    json_start(&w, NULL);
    json_int(&w, "candidates_evaluated", r->candidates_evaluated);
    json_int(&w, "candidates_feasible", r->candidates_feasible);
    json_open_array(&w, "strategies");
    for (int s = 0; s < MODEL_STRATEGY_COUNT; s++)
        if (mask & (1u << s))
            json_string(&w, NULL, model_strategy_name((model_strategy_t)s));
    json_close_array(&w);
    json_string(&w, "model", scenario_model_name(scn));
    json_string(&w, "system", scenario_system_name(scn));
    json_int(&w, "gpus", job->gpus);
    json_int(&w, "nvlink_size", job->system.nvlink_size);
    json_int(&w, "global_batch", job->global_batch);
    json_string(&w, "compat", model_compat_name(job->compat));
    json_open_array(&w, "results");
    for (int i = 0; i < r->n_results; i++) {
        const model_summary_t *s = &r->results[i];
        json_open_object(&w, NULL);
        json_int(&w, "rank", i);
        json_number(&w, "throughput_samples_per_s", s->throughput_samples_per_s);
        json_number(&w, "iteration_time_s", s->iteration_time_s);
        json_number(&w, "memory_gb", s->memory_gb);
        output_config_json(&w, s, NULL, scn);
        output_breakdown_json(&w, s);
        output_memory_json(&w, s);
        json_close_object(&w);
    }
    json_close_array(&w);
    return json_take(&w);
}

static void result_row(FILE *out, int rank, const model_summary_t *s) {
    const model_parallel_t *p = &s->par;
    char tp[48], nv[64];
    if (p->strategy == MODEL_STRATEGY_1D)
        snprintf(tp, sizeof tp, "%" PRId64, p->tp);
    else
        snprintf(tp, sizeof tp, "%" PRId64 " (%" PRId64 "x%" PRId64 ")", p->tp, p->tp1, p->tp2);
    snprintf(nv, sizeof nv, "(%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ")", p->nv_tp1, p->nv_tp2,
             p->nv_dp, p->nv_pp);
    fprintf(out,
            "%4d %16.6f %14.6f %12.3f  %-8s %6" PRId64 " %-14s %5" PRId64 " %5" PRId64 " %5" PRId64 "  %s\n",
            rank, s->throughput_samples_per_s, s->iteration_time_s, s->memory_gb,
            model_strategy_name(p->strategy), p->dp, tp, p->pp, p->mbs, p->nb, nv);
}

static void search_text(FILE *out, const model_search_result_t *r, const model_job_t *job,
                        const scenario_t *scn, unsigned mask) {
    char strategies[64];
    mask_text(strategies, sizeof strategies, mask);
    output_job_header(out, "search", job, scn);
    fprintf(out, "strategies %s: %" PRId64 " candidates evaluated, %" PRId64 " fit in %.6g GB per GPU\n",
            strategies, r->candidates_evaluated, r->candidates_feasible, job->system.hbm_capacity_gb);
    if (r->n_results == 0)
        return;
    fprintf(out, "\n%4s %16s %14s %12s  %-8s %6s %-14s %5s %5s %5s  %s\n", "rank", "thr (samples/s)",
            "iteration (s)", "memory (GB)", "strategy", "dp", "tp (tp1xtp2)", "pp", "mbs", "nb",
            "nv (tp1,tp2,dp,pp)");
    for (int i = 0; i < r->n_results; i++)
        result_row(out, i, &r->results[i]);
}

/* Resolve the scenario and run the search; on CLI_OK res holds the results (caller destroys). */
static int search_run(scenario_t *scn, const cli_opts_t *opts, model_job_t *job, unsigned *mask,
                      model_search_result_t *res, cli_diag_t *diag) {
    memset(res, 0, sizeof *res);
    int rc = scenario_resolve_search(scn, job, mask, diag);
    if (rc)
        return rc;
    int mrc = model_search_run(job, *mask, opts->top_k, res);
    if (mrc == MODEL_ENOMEM)
        return cli_fail(diag, CLI_ERUNTIME, "out of memory (--top %d)", opts->top_k);
    if (mrc == MODEL_EINVAL)
        return cli_fail(diag, CLI_EUSAGE,
                        "%s%sthe model or system cannot be searched; allowed: positive sizes and "
                        "rates (see `stepsim search --help`)",
                        scn->file, scn->file[0] ? ": " : "");
    if (mrc != MODEL_OK)
        return cli_fail(diag, CLI_ERUNTIME, "search failed (model status %d)", mrc);
    return CLI_OK;
}

/* CLI_OK, or CLI_ENORESULT with its message when nothing fits. */
static int search_outcome(const model_search_result_t *res, const model_job_t *job, const scenario_t *scn,
                          unsigned mask, cli_diag_t *diag) {
    if (res->n_results > 0)
        return CLI_OK;
    char strategies[64];
    mask_text(strategies, sizeof strategies, mask);
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

int cmd_search_result(scenario_t *scn, const cli_opts_t *opts, cJSON **result, cli_diag_t *diag) {
    model_job_t job;
    unsigned mask = 0;
    model_search_result_t res;
    *result = NULL;
    int rc = search_run(scn, opts, &job, &mask, &res, diag);
    if (rc)
        return rc;
    *result = search_json(&res, &job, scn, mask);
    if (!*result)
        rc = cli_fail(diag, CLI_ERUNTIME, "out of memory while printing the JSON result");
    else
        rc = search_outcome(&res, &job, scn, mask, diag);
    model_search_result_destroy(&res);
    return rc;
}

int cmd_search(scenario_t *scn, const cli_opts_t *opts, FILE *out, cli_diag_t *diag) {
    if (opts->json) {
        cJSON *result = NULL;
        int rc = cmd_search_result(scn, opts, &result, diag);
        if (result && json_print(out, result) != 0) {
            cJSON_Delete(result);
            return cli_fail(diag, CLI_ERUNTIME, "out of memory while printing the JSON result");
        }
        cJSON_Delete(result);
        return rc;
    }
    model_job_t job;
    unsigned mask = 0;
    model_search_result_t res;
    int rc = search_run(scn, opts, &job, &mask, &res, diag);
    if (rc)
        return rc;
    search_text(out, &res, &job, scn, mask);
    rc = search_outcome(&res, &job, scn, mask, diag);
    model_search_result_destroy(&res);
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
