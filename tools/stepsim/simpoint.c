/* simpoint.c - one simulated training step for compare and validate (simpoint.h): builds the
 * topology as run does (the ideal kind sized by the GCD of its node and the job), runs the step with
 * run's defaults and a schedule that follows the job's interleave, and collects the figures. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <igraph.h>

#include "step.h"
#include "simpoint.h"
#include "topo_json.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        const int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* NCCL's constants for the network mode, as `stepsim collective --calibration nccl` takes them
 * (tools/stepsim/commands/cmd_collective.c, docs/engine.md): the platform from the node (NVLink-4 and faster
 * nodes are Hopper-class; DGX A100, Perlmutter and Frontier nodes have AMD hosts; Perlmutter's and Frontier's
 * NICs sit behind the CPU, so no LL128 on the network there), InfiniBand links at 0.94 of their
 * rate, Slingshot (dragonflies) at 0.70, A100 NVLink at 0.67. Shared by run, compare and validate. */
void simpoint_calibrate(const topo_params_t *p, sim_config_t *cfg) {
    const char *name = p->node.name;
    const int slingshot = strcmp(name, "perlmutter-gpu") == 0 || strcmp(name, "frontier-node") == 0;
    sim_nccl_platform_t pl;
    pl.sm = p->node.nvlink_bandwidth_bytes_per_s >= 450e9 ? 90 : 80;
    pl.amd_host = slingshot || strcmp(name, "dgx-a100") == 0;
    pl.ll128_network = !slingshot;
    sim_config_nccl(cfg, &pl);
    cfg->link_kind_efficiency[SIM_LINK_NETWORK] = p->kind == TOPO_KIND_DRAGONFLY ? 0.70 : 0.94;
    if (pl.sm < 90)
        cfg->link_kind_efficiency[SIM_LINK_NVLINK] = 0.67;
}

/* An ideal topology takes its domains from the system's nvlink_size; a job that is not a multiple of
 * it gets domains of gcd(gpus, nvlink_size). Return the adjusted copy of spec (caller deletes), or
 * NULL when spec needs none (not ideal, or domains given, or they already divide the job). */
static cJSON *ideal_domains(const model_job_t *job, const cJSON *spec) {
    const int64_t nvs = job->system.nvlink_size > 0 ? job->system.nvlink_size : 1;
    const int64_t g = gcd64(job->gpus, nvs);
    const int is_ideal =
        (cJSON_IsString(spec) && strcmp(spec->valuestring, "ideal") == 0) ||
        (cJSON_IsObject(spec) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(spec, "kind")) &&
         strcmp(cJSON_GetObjectItemCaseSensitive(spec, "kind")->valuestring, "ideal") == 0 &&
         !cJSON_GetObjectItemCaseSensitive(spec, "gpus_per_node"));
    if (!is_ideal || g == nvs)
        return NULL;
    cJSON *copy = cJSON_IsObject(spec) ? cJSON_Duplicate(spec, 1) : cJSON_CreateObject();
    if (copy && !cJSON_GetObjectItemCaseSensitive(copy, "kind"))
        cJSON_AddStringToObject(copy, "kind", "ideal");
    if (copy) {
        cJSON_DeleteItemFromObjectCaseSensitive(copy, "nics_per_node");
        cJSON_AddNumberToObject(copy, "gpus_per_node", (double)g);
        cJSON_AddNumberToObject(copy, "nics_per_node", (double)g);
    }
    return copy;
}

int simpoint_topology(const model_job_t *job, const cJSON *spec, const char *where, topo_t **out,
                      topo_params_t *pp, cli_diag_t *d) {
    char store[1024], msg[400];
    topo_params_t p;
    cJSON *adjusted = ideal_domains(job, spec);
    int rc = topo_json_params(adjusted ? adjusted : spec, where, &job->system, job->gpus, &p, store,
                              sizeof store, d);
    cJSON_Delete(adjusted);
    if (rc)
        return rc;
    topo_issue_t issue;
    igraph_set_error_handler(igraph_error_handler_ignore);
    igraph_set_warning_handler(igraph_warning_handler_ignore);
    *pp = p;
    rc = topo_new(&p, out, &issue);
    if (rc)
        return cli_fail(d, topo_json_exit_code(rc), "%s: %s", where,
                        topo_issue_format(&issue, msg, sizeof msg));
    if (topo_gpu_count(*out) != job->gpus) {
        const int64_t n = topo_gpu_count(*out);
        topo_free(*out);
        *out = NULL;
        return cli_fail(d, CLI_EUSAGE,
                        "%s: the topology has %" PRId64 " GPUs but the job needs %" PRId64
                        "; allowed: a topology of %" PRId64 " GPUs",
                        where, n, job->gpus, job->gpus);
    }
    return CLI_OK;
}

int simpoint_run(const model_job_t *job, const step_config_t *base, const cJSON *spec, const char *where,
                 int want_summary, simpoint_t *out, cli_diag_t *d) {
    const double t0 = now_s();
    memset(out, 0, sizeof *out);
    step_config_t cfg;
    if (base)
        cfg = *base;
    else
        step_config_default(&cfg);
    cfg.comm = spec ? SIM_COMM_NETWORK : SIM_COMM_ANALYTIC;
    if (job->training.interleave > 1) {
        cfg.schedule = STEP_SCHEDULE_INTERLEAVED;
        cfg.virtual_stages = (int32_t)job->training.interleave;
    }
    topo_t *topo = NULL;
    sim_network_desc_t net;
    memset(&net, 0, sizeof net);
    int rc = CLI_OK;
    if (spec) {
        topo_params_t params;
        rc = simpoint_topology(job, spec, where, &topo, &params, d);
        if (!rc)
            simpoint_calibrate(&params, &cfg.engine);
        if (!rc && sim_topo_network(topo, &net) != SIM_OK)
            rc =
                cli_fail(d, CLI_EUSAGE, "%s: too large for the engine (more than 2^31 GPUs or links)", where);
        if (!rc)
            snprintf(out->topology, sizeof out->topology, "%s", topo_name(topo));
    } else {
        snprintf(out->topology, sizeof out->topology, "none (analytic)");
    }
    step_t *step = NULL;
    char err[300];
    if (!rc) {
        const int s = step_new(job, &cfg, topo ? &net : NULL, &step, err, sizeof err);
        if (s == SIM_EINVAL)
            rc = cli_fail(d, CLI_EUSAGE, "simulation: %s", err);
        else if (s)
            rc = cli_fail(d, CLI_ERUNTIME, "simulation: %s", s == SIM_ENOMEM ? "out of memory" : err);
    }
    if (!rc && step_run(step) != SIM_OK)
        rc = cli_fail(d, CLI_ERUNTIME, "simulation: %s", step_last_error(step));
    step_result_t r;
    memset(&r, 0, sizeof r);
    if (!rc && step_result(step, &r) != SIM_OK)
        rc = cli_fail(d, CLI_ERUNTIME, "simulation: no result");
    if (!rc) {
        out->step_time_s = r.step_time_s;
        out->compute_s = r.breakdown.compute_s;
        out->exposed_tp_s = r.breakdown.exposed_tp_comm_s;
        out->exposed_pp_s = r.breakdown.exposed_pp_comm_s;
        out->exposed_dp_s = r.breakdown.exposed_dp_comm_s;
        out->bubble_idle_s = r.breakdown.bubble_idle_s;
        out->gpus = r.gpus;
        out->simulated_gpus = r.simulated_gpus;
        out->collapse_exact = r.collapse_exact;
    }
    if (!rc && topo) {
        int32_t id = -1;
        double u = 0.0;
        if (sim_links_busiest(step_engine(step), 1, &id, &u) == 1) {
            out->max_link_utilization = u;
            topo_link_name(topo, id, out->busiest_link, sizeof out->busiest_link);
        }
    }
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
    step_free(step);
    topo_free(topo);
    out->wall_s = now_s() - t0;
    return rc;
}

double simpoint_cost_units(const simpoint_t *p) {
    if (!p->has_summary)
        return 0.0;
    return (double)(p->summary.switches + p->summary.cables + p->summary.optical_transceivers);
}
