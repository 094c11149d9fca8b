/* simpoint.c - the topology a job is simulated on, and compare's and validate's simulation through
 * step_simulate (simpoint.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <igraph.h>

#include "simpoint.h"
#include "progress.h"
#include "step.h"
#include "topo_json.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int simpoint_topology(const model_job_t *job, const topo_spec_t *spec, const scn_perturb_t *perturb,
                      double max_memory_gb, const char *where, topo_t **out, cli_diag_t *d) {
    char msg[400];
    topo_params_t p;
    *out = NULL;
    int rc = topo_spec_params(spec, where, &job->system, job->gpus, job->gpus, &p, d);
    if (rc)
        return rc;
    p.max_memory_bytes = max_memory_gb * 1e9;
    topo_issue_t issue;
    igraph_set_error_handler(igraph_error_handler_ignore);
    igraph_set_warning_handler(igraph_warning_handler_ignore);
    rc = topo_new(&p, out, &issue);
    if (rc)
        return cli_fail(d, topo_json_exit_code(rc), "%s: %s", where,
                        topo_issue_format(&issue, msg, sizeof msg));
    const int64_t n = topo_gpu_count(*out);
    sim_network_desc_t net;
    if (perturb && (rc = perturb_links_apply(&perturb->links, perturb->seed, *out, d))) {
        /* one line already in d */
    } else if (n != job->gpus) {
        rc = cli_fail(d, CLI_EUSAGE,
                      "%s: the topology has %" PRId64 " GPUs but the job needs %" PRId64
                      "; allowed: a topology of %" PRId64 " GPUs",
                      where, n, job->gpus, job->gpus);
    } else if (sim_topo_network(*out, &net) == SIM_OK) {
        /* the network's nodes are the job's NVLink domains */
        const int64_t nvs = job->system.nvlink_size > 0 ? job->system.nvlink_size : 1;
        const int64_t g = model_gcd(job->gpus, nvs), have = net.gpus_per_domain;
        if (have != nvs && have != g)
            rc = cli_fail(d, CLI_EUSAGE,
                          "%s: nodes of %" PRId64
                          " GPU%s, but the scenario's NVLink domain (nvlink_size) is %" PRId64
                          " GPUs; allowed: a topology whose nodes hold %" PRId64
                          " GPUs (\"node\" or \"gpus_per_node\"), or --nvs %" PRId64,
                          where, have, have == 1 ? "" : "s", nvs, nvs, have);
    }
    if (rc) {
        topo_free(*out);
        *out = NULL;
    }
    return rc;
}

int simpoint_fail(int status, const step_sim_result_t *r, const char *prefix, cli_diag_t *d) {
    switch (r->failed_at) {
    case STEP_SIM_AT_NETWORK:
        return cli_fail(d, CLI_EUSAGE, "%s%s", prefix, r->error);
    case STEP_SIM_AT_BUILD:
        if (status == SIM_EINVAL)
            return cli_fail(d, CLI_EUSAGE, "simulation: %s", r->error);
        return cli_fail(d, CLI_ERUNTIME, "simulation: %s", status == SIM_ENOMEM ? "out of memory" : r->error);
    case STEP_SIM_AT_HOOK:
        return status; /* the hook filled d */
    default:
        return cli_fail(d, CLI_ERUNTIME, "simulation: %s", r->error);
    }
}

int simpoint_run(const model_job_t *job, const step_config_t *base, const topo_spec_t *spec,
                 const scn_perturb_t *perturb, const char *where, int want_summary,
                 struct cli_progress *progress, simpoint_t *out, cli_diag_t *d) {
    const double t0 = now_s();
    memset(out, 0, sizeof *out);
    step_sim_options_t o;
    memset(&o, 0, sizeof o);
    if (base)
        o.step = *base;
    else
        step_config_default(&o.step);
    o.step.comm = spec ? SIM_COMM_NETWORK : SIM_COMM_ANALYTIC;
    if (job->training.interleave > 1) {
        o.step.schedule = STEP_SCHEDULE_INTERLEAVED;
        o.step.virtual_stages = (int32_t)job->training.interleave;
    }
    /* the corrected estimate's pipeline schedule, simulated as such (as run does) */
    const model_pipeline_t pl =
        job->compat == MODEL_COMPAT_CORRECTED ? job->training.pipeline : MODEL_PIPELINE_1F1B;
    if (pl == MODEL_PIPELINE_ZB_H1 || pl == MODEL_PIPELINE_ZB_V || pl == MODEL_PIPELINE_DUALPIPE) {
        o.step.schedule = pl == MODEL_PIPELINE_ZB_H1  ? STEP_SCHEDULE_ZB_H1
                          : pl == MODEL_PIPELINE_ZB_V ? STEP_SCHEDULE_ZB_V
                                                      : STEP_SCHEDULE_DUALPIPE;
        o.step.virtual_stages = pl == MODEL_PIPELINE_ZB_H1 ? 1 : 2;
    }
    o.calibrate = 1;
    o.links = 1;
    if (progress && progress->on) { /* no callback when nothing is shown */
        o.progress = cli_progress_sim;
        o.progress_ctx = progress;
    }
    topo_t *topo = NULL;
    int rc = CLI_OK;
    if (spec) {
        rc = simpoint_topology(job, spec, perturb, base ? base->max_memory_gb : 0.0, where, &topo, d);
        if (!rc)
            snprintf(out->topology, sizeof out->topology, "%s", topo_name(topo));
    } else {
        snprintf(out->topology, sizeof out->topology, "none (analytic)");
    }
    step_sim_result_t r;
    memset(&r, 0, sizeof r);
    if (!rc) {
        const int s = step_simulate(job, topo, &o, &r);
        if (s) {
            char prefix[320];
            snprintf(prefix, sizeof prefix, "%s: ", where);
            rc = simpoint_fail(s, &r, prefix, d);
        }
    }
    if (!rc) {
        out->step_time_s = r.step.step_time_s;
        out->compute_s = r.step.breakdown.compute_s;
        out->exposed_tp_s = r.step.breakdown.exposed_tp_comm_s;
        out->exposed_pp_s = r.step.breakdown.exposed_pp_comm_s;
        out->exposed_dp_s = r.step.breakdown.exposed_dp_comm_s;
        out->bubble_idle_s = r.step.breakdown.bubble_idle_s;
        out->gpus = r.step.gpus;
        out->simulated_gpus = r.step.simulated_gpus;
        out->collapse_exact = r.step.collapse_exact;
        if (r.n_links > 0) {
            out->max_link_utilization = r.link_utilization[0];
            snprintf(out->busiest_link, sizeof out->busiest_link, "%s", r.link_names[0]);
            out->busiest_link_bytes = r.link_bytes[0];
        }
        out->total_link_bytes = r.total_link_bytes;
        out->has_traffic = r.has_traffic;
        out->traffic = r.traffic;
    }
    step_sim_result_destroy(&r);
    if (!rc && topo && want_summary) {
        topo_issue_t issue;
        char msg[400];
        const int s = topo_summary_compute(topo, &out->summary, &issue);
        if (s)
            rc = cli_fail(d, topo_json_exit_code(s), "%s: summary: %s", where,
                          topo_issue_format(&issue, msg, sizeof msg));
        else
            out->has_summary = 1;
    }
    topo_free(topo);
    out->wall_s = now_s() - t0;
    return rc;
}

double simpoint_cost_units(const simpoint_t *p) {
    if (!p->has_summary)
        return 0.0;
    return (double)(p->summary.switches + p->summary.cables + p->summary.optical_transceivers);
}
