/* simulate.c - one simulated training step, end to end (step.h, "one simulated step"): the network
 * of a built topology, NCCL's calibration from its link technologies, the step built and run, and
 * the figures every command reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "step.h"
#include "topo.h"

static int fail(step_sim_result_t *out, step_sim_stage_t at, int rc, const char *msg) {
    out->failed_at = at;
    snprintf(out->error, sizeof out->error, "%s", msg);
    return rc;
}

int step_simulate(const model_job_t *job, const struct topo *topo, const step_sim_options_t *opts,
                  step_sim_result_t *out) {
    memset(out, 0, sizeof *out);
    step_config_t cfg = opts->step;
    sim_network_desc_t net;
    memset(&net, 0, sizeof net);
    const int network = cfg.comm == SIM_COMM_NETWORK;
    if (network) {
        if (!topo)
            return fail(out, STEP_SIM_AT_NETWORK, SIM_EINVAL, "network communication needs a topology");
        if (sim_topo_network(topo, &net) != SIM_OK)
            return fail(out, STEP_SIM_AT_NETWORK, SIM_EINVAL,
                        "too large for the engine (more than 2^31 GPUs or links)");
        if (opts->calibrate) {
            sim_config_nccl_topology(&cfg.engine, topo);
            out->calibrated = 1;
        }
    }
    out->engine = cfg.engine;
    step_t *step = NULL;
    char err[300] = "";
    int rc = step_new(job, &cfg, network ? &net : NULL, &step, err, sizeof err);
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
        fail(out, STEP_SIM_AT_RUN, rc, step_last_error(step));
        step_free(step);
        return rc;
    }
    if ((rc = step_result(step, &out->step)) != SIM_OK) {
        step_free(step);
        return fail(out, STEP_SIM_AT_RUN, rc, "no result");
    }
    const int64_t pp = job->par.pp;
    out->stage_peak_activations_gb =
        malloc((size_t)(pp > 0 ? pp : 1) * sizeof *out->stage_peak_activations_gb);
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
    if (network && k > 0) {
        int32_t ids[STEP_SIM_MAX_LINKS];
        out->n_links = step_links_busiest(step, k, ids, out->link_utilization, &out->links_partial);
        if (out->n_links < 0) {
            step_free(step);
            return fail(out, STEP_SIM_AT_RUN, SIM_ENOMEM, "out of memory");
        }
        for (int32_t i = 0; i < out->n_links; i++)
            topo_link_name(topo, ids[i], out->link_names[i], sizeof out->link_names[i]);
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
