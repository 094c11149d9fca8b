/* print_search.c - what `stepsim search` prints: its --json object and its text table. */
#include <inttypes.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "output.h"
#include "print.h"

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
    output_training_json(&w, job, scenario_optimizer_step_given(scn));
    if (scn->pipeline_all) { /* --pipeline-schedule all: the schedules tried (only then, so other
                                outputs stay as they were) */
        json_open_array(&w, "pipeline_schedules");
        for (int pl = 0; pl <= MODEL_PIPELINE_ZB_V; pl++)
            if (pl != MODEL_PIPELINE_GPIPE &&
                (pl == MODEL_PIPELINE_1F1B || job->compat == MODEL_COMPAT_CORRECTED))
                json_string(&w, NULL, model_pipeline_name((model_pipeline_t)pl));
        json_close_array(&w);
    }
    json_open_array(&w, "results");
    for (int i = 0; i < r->n_results; i++) {
        const model_summary_t *s = &r->results[i];
        json_open_object(&w, NULL);
        json_int(&w, "rank", i);
        json_number(&w, "throughput_samples_per_s", s->throughput_samples_per_s);
        json_number(&w, "iteration_time_s", s->iteration_time_s);
        output_throughput_json(&w, "", job, s->iteration_time_s);
        json_number(&w, "memory_gb", s->memory_gb);
        if (scn->pipeline_all || s->pipeline != MODEL_PIPELINE_1F1B)
            json_string(&w, "pipeline_schedule", model_pipeline_name(s->pipeline));
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
            "%4d %12.6f %12.6f %9.3f  %-7s %5" PRId64 " %-11s %4" PRId64 " %4" PRId64 " %3" PRId64 "  %s",
            rank, s->throughput_samples_per_s, s->iteration_time_s, s->memory_gb,
            model_strategy_name(p->strategy), p->dp, tp, p->pp, p->mbs, p->nb, nv);
    if (s->experts_par.ep > 0) /* a mixture of experts: the expert-parallel degree */
        fprintf(out, "%*s%3" PRId64, (int)(16 - strlen(nv)), "", s->experts_par.ep);
    fputc('\n', out);
}

static void search_text(FILE *out, const model_search_result_t *r, const model_job_t *job,
                        const scenario_t *scn, unsigned mask) {
    char strategies[64];
    cmd_search_strategies_text(strategies, sizeof strategies, mask);
    output_job_header(out, "search", job, scn);
    fprintf(out, "strategies %s: %" PRId64 " candidates evaluated, %" PRId64 " fit in %.6g GB per GPU\n",
            strategies, r->candidates_evaluated, r->candidates_feasible, job->system.hbm_capacity_gb);
    if (scn->pipeline_all)
        fprintf(out, "pipeline schedules all (%s): each layout's fastest that fits, where valid\n",
                job->compat == MODEL_COMPAT_CORRECTED ? "1f1b, zb-h1, zb-v, dualpipe"
                                                      : "the reference: 1f1b");
    if (r->n_results == 0)
        return;
    fprintf(out, "\n%4s %12s %12s %9s  %-7s %5s %-11s %4s %4s %3s  %s%s\n", "rank", "samples/s", "iter. (s)",
            "mem. (GB)", "layout", "dp", "tp (1x2)", "pp", "mbs", "nb", "nv (t1,t2,d,p)",
            model_is_moe(&job->model) ? "   ep" : "");
    for (int i = 0; i < r->n_results; i++)
        result_row(out, i, &r->results[i]);
    if (scn->pipeline_all) { /* each rank's schedule (a column would pass 100 characters) */
        char line[2048] = "\npipeline schedule by rank:";
        for (int i = 0; i < r->n_results; i++) {
            const size_t used = strlen(line);
            snprintf(line + used, sizeof line - used, "%s %d %s", i ? "," : "", i,
                     model_pipeline_name(r->results[i].pipeline));
        }
        output_wrapped(out, 0, line + 1);
    }
    fprintf(out, "\nrank 0:\n");
    output_throughput_text(out, 30, job, r->results[0].iteration_time_s);
}

cJSON *print_search_json(const search_result_t *r) {
    return search_json(&r->res, &r->job, r->scn, r->mask);
}

int print_search(FILE *out, const search_result_t *r, const cli_opts_t *opts) {
    if (!opts->json) {
        search_text(out, &r->res, &r->job, r->scn, r->mask);
        return 0;
    }
    cJSON *doc = print_search_json(r);
    int rc = doc ? json_print(out, doc) : -1;
    cJSON_Delete(doc);
    return rc;
}
