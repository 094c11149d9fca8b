/* simulate.c - one simulated training step, end to end (step.h, "one simulated step"): the network
 * of a built topology, NCCL's calibration from its link technologies, the step built and run, and
 * the figures every command reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "step.h"
#include "topo.h"

static int fail(step_sim_result_t *out, step_sim_stage_t at, int rc, const char *msg) {
    out->failed_at = at;
    snprintf(out->error, sizeof out->error, "%s", msg);
    return rc;
}

/* The topology as the engine's network, and NCCL's calibration on engine when asked for: NULL or
 * the message of a failure. */
static const char *network_of(const struct topo *topo, const step_sim_options_t *opts,
                              sim_network_desc_t *net, sim_config_t *engine, int *calibrated) {
    if (!topo)
        return "network communication needs a topology";
    if (sim_topo_network(topo, net) != SIM_OK)
        return "too large for the engine (more than 2^31 GPUs or links)";
    if (opts->calibrate) {
        sim_config_nccl_topology(engine, topo);
        *calibrated = 1;
    }
    return NULL;
}

int step_simulate(const model_job_t *job, const struct topo *topo, const step_sim_options_t *opts,
                  step_sim_result_t *out) {
    memset(out, 0, sizeof *out);
    step_config_t cfg = opts->step;
    sim_network_desc_t net;
    memset(&net, 0, sizeof net);
    const int network = cfg.comm == SIM_COMM_NETWORK;
    const char *bad = network ? network_of(topo, opts, &net, &cfg.engine, &out->calibrated) : NULL;
    if (bad)
        return fail(out, STEP_SIM_AT_NETWORK, SIM_EINVAL, bad);
    out->engine = cfg.engine;
    step_t *step = NULL;
    char err[300] = "";
    int rc = opts->workload
                 ? step_new_workload_source(opts->workload, &cfg, network ? &net : NULL, &job->system,
                                            (step_wl_compute_t)opts->wl_compute, &step, err, sizeof err)
                 : step_new(job, &cfg, network ? &net : NULL, &step, err, sizeof err);
    if (rc)
        return fail(out, STEP_SIM_AT_BUILD, rc, rc == SIM_ENOMEM && !err[0] ? "out of memory" : err);
    if (opts->before_run && (rc = opts->before_run(opts->ctx, step)) != 0) {
        step_free(step);
        out->failed_at = STEP_SIM_AT_HOOK;
        return rc;
    }
    if (opts->progress)
        step_set_progress(step, opts->progress, opts->progress_ctx);
    if ((rc = step_run(step)) != SIM_OK) {
        const char *why = step_last_error(step);
        fail(out, STEP_SIM_AT_RUN, rc, rc == SIM_ENOMEM && (!why || !why[0]) ? "out of memory" : why);
        step_free(step);
        return rc;
    }
    if ((rc = step_result(step, &out->step)) != SIM_OK) {
        step_free(step);
        return fail(out, STEP_SIM_AT_RUN, rc, rc == SIM_ENOMEM ? "out of memory" : "no result");
    }
    if (opts->after_run && (rc = opts->after_run(opts->ctx, step)) != 0) {
        step_free(step);
        out->failed_at = STEP_SIM_AT_HOOK;
        return rc;
    }
    const int64_t pp = opts->workload ? 0 : job->par.pp; /* a workload has no stages */
    out->stage_peak_activations_gb =
        alloc_malloc((size_t)(pp > 0 ? pp : 1) * sizeof *out->stage_peak_activations_gb);
    if (!out->stage_peak_activations_gb) {
        step_free(step);
        return fail(out, STEP_SIM_AT_RUN, SIM_ENOMEM, "out of memory");
    }
    for (int64_t p = 0; p < pp; p++) {
        const int64_t x[STEP_DIM_COUNT] = {0, 0, p, 0};
        out->stage_peak_activations_gb[p] =
            step_gpu_peak_activations_gb(step, (int32_t)step_placement_gpu(&cfg.placement, &job->par, x));
    }
    const int32_t k = opts->links < 0                    ? 0
                      : opts->links > STEP_SIM_MAX_LINKS ? STEP_SIM_MAX_LINKS
                                                         : opts->links;
    int32_t link_ids[STEP_SIM_MAX_LINKS];
    if (network && k > 0) {
        int32_t *ids = link_ids;
        out->n_links = step_links_busiest(step, k, ids, out->link_utilization, &out->links_partial);
        if (out->n_links < 0) {
            step_free(step);
            return fail(out, STEP_SIM_AT_RUN, SIM_ENOMEM, "out of memory");
        }
        for (int32_t i = 0; i < out->n_links; i++)
            topo_link_name(topo, ids[i], out->link_names[i], sizeof out->link_names[i]);
    }
    if (network) {
        const int32_t nl = (int32_t)topo_link_count(topo);
        double *bytes = alloc_malloc((size_t)(nl > 0 ? nl : 1) * sizeof *bytes);
        int partial = 0;
        if (!bytes || step_link_bytes(step, bytes, &partial) != SIM_OK ||
            step_group_traffic(step, &out->traffic) != SIM_OK) {
            free(bytes);
            step_free(step);
            return fail(out, STEP_SIM_AT_RUN, SIM_ENOMEM, "out of memory");
        }
        for (int32_t i = 0; i < out->n_links; i++)
            out->link_bytes[i] = bytes[link_ids[i]];
        for (int32_t l = 0; l < nl; l++)
            out->total_link_bytes += bytes[l];
        free(bytes);
        out->has_traffic = 1;
    }
    step_free(step);
    return SIM_OK;
}

void step_sim_result_destroy(step_sim_result_t *r) {
    if (!r)
        return;
    free(r->stage_peak_activations_gb);
    r->stage_peak_activations_gb = NULL;
}

/* ---- several jobs on one topology ---------------------------------------------------------------- */

static int jobs_fail(step_jobs_result_t *out, step_sim_stage_t at, int rc, const char *msg) {
    out->failed_at = at;
    snprintf(out->error, sizeof out->error, "%s", msg);
    return rc;
}

/* The links that carried bytes of more than one job: how many, and the k busiest (utilisation over
 * end_ps, ties by id) with every job's bytes. */
static int links_met(const step_fabric_t *f, const struct topo *topo, int32_t k, step_jobs_result_t *out) {
    const sim_engine_t *e = step_fabric_engine(f);
    const int32_t nj = out->n_jobs, nl = (int32_t)topo_link_count(topo);
    out->met_job_bytes = alloc_calloc((size_t)(k > 0 ? k : 1) * (size_t)nj, sizeof *out->met_job_bytes);
    if (!out->met_job_bytes)
        return SIM_ENOMEM;
    for (int32_t l = 0; l < nl; l++) {
        int32_t jobs = 0;
        for (int32_t j = 0; j < nj; j++)
            jobs += step_fabric_link_bytes(f, l, j) > 0.0;
        if (jobs < 2)
            continue;
        out->met_total++;
        sim_link_stats_t ls; /* its utilisation over the run: the engine's clock ends with the last job */
        if (sim_link_stats(e, l, &ls) != SIM_OK)
            continue;
        const double util = ls.utilization;
        if (out->n_met == k && (k == 0 || util <= out->met_utilization[k - 1]))
            continue;
        int32_t i = out->n_met < k ? out->n_met++ : k - 1;
        for (; i > 0 && util > out->met_utilization[i - 1]; i--) {
            out->met_link[i] = out->met_link[i - 1];
            out->met_utilization[i] = out->met_utilization[i - 1];
        }
        out->met_link[i] = l;
        out->met_utilization[i] = util;
    }
    for (int32_t i = 0; i < out->n_met; i++) {
        topo_link_name(topo, out->met_link[i], out->met_names[i], sizeof out->met_names[i]);
        for (int32_t j = 0; j < nj; j++)
            out->met_job_bytes[(int64_t)i * nj + j] = step_fabric_link_bytes(f, out->met_link[i], j);
    }
    return SIM_OK;
}

int step_simulate_jobs(const step_fabric_job_t *jobs, int32_t n_jobs, const struct topo *topo,
                       const step_sim_options_t *opts, step_jobs_result_t *out) {
    memset(out, 0, sizeof *out);
    sim_config_t engine = opts->step.engine;
    sim_network_desc_t net;
    memset(&net, 0, sizeof net);
    const char *bad = network_of(topo, opts, &net, &engine, &out->calibrated);
    if (bad)
        return jobs_fail(out, STEP_SIM_AT_NETWORK, SIM_EINVAL, bad);
    out->engine = engine;
    step_fabric_t *f = NULL;
    char err[300] = "";
    int rc = step_fabric_new(jobs, n_jobs, &engine, &net, &f, err, sizeof err);
    if (rc)
        return jobs_fail(out, STEP_SIM_AT_BUILD, rc, rc == SIM_ENOMEM && !err[0] ? "out of memory" : err);
    if (opts->before_run_fabric && (rc = opts->before_run_fabric(opts->ctx, f)) != 0) {
        step_fabric_free(f);
        out->failed_at = STEP_SIM_AT_HOOK;
        return rc;
    }
    if (opts->progress)
        step_fabric_set_progress(f, opts->progress, opts->progress_ctx);
    if ((rc = step_fabric_run(f)) != SIM_OK) {
        jobs_fail(out, STEP_SIM_AT_RUN, rc, step_fabric_last_error(f));
        step_fabric_free(f);
        return rc;
    }
    out->n_jobs = n_jobs;
    out->jobs = alloc_calloc((size_t)n_jobs, sizeof *out->jobs);
    if (!out->jobs) {
        step_fabric_free(f);
        return jobs_fail(out, STEP_SIM_AT_RUN, SIM_ENOMEM, "out of memory");
    }
    for (int32_t j = 0; j < n_jobs; j++) {
        if ((rc = step_result(step_fabric_step(f, j), &out->jobs[j])) != SIM_OK) {
            step_fabric_free(f);
            return jobs_fail(out, STEP_SIM_AT_RUN, rc, rc == SIM_ENOMEM ? "out of memory" : "no result");
        }
        out->operations += out->jobs[j].operations;
        if (out->jobs[j].step_time_s > out->end_s)
            out->end_s = out->jobs[j].step_time_s;
    }
    sim_engine_stats_t es;
    sim_engine_stats(step_fabric_engine(f), &es);
    out->events = es.events;
    out->flows = es.flows_started;
    const int32_t k = opts->links < 0                    ? 0
                      : opts->links > STEP_SIM_MAX_LINKS ? STEP_SIM_MAX_LINKS
                                                         : opts->links;
    rc = links_met(f, topo, k, out);
    step_fabric_free(f);
    return rc ? jobs_fail(out, STEP_SIM_AT_RUN, rc, "out of memory") : SIM_OK;
}

void step_jobs_result_destroy(step_jobs_result_t *r) {
    if (!r)
        return;
    free(r->jobs);
    free(r->met_job_bytes);
    r->jobs = NULL;
    r->met_job_bytes = NULL;
}
