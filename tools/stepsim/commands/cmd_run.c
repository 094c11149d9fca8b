/* cmd_run.c - `stepsim run [SCENARIO.json] [--option value ...]`: simulate one training step event by
 * event (sim/step*.c) and print where the time goes: the step time beside the closed-form estimate,
 * the critical GPU's breakdown, memory peaks against the model, and the busiest links; optionally a
 * Chrome trace (traces/).
 *
 * The scenario options are estimate's (options.c, applied after the file); --interleave and
 * --optimizer-step set the simulated schedule and optimizer step too (cmd_run_scenario_opts); the
 * run's own options choose the communication model, the schedule, the placement and what is traced.
 * The network is the scenario's topology (--topology, else the file's "topology", else "ideal" built
 * from the system and its NVLink domain); in analytic mode there is none.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "output.h"
#include "step.h"
#include "simpoint.h"
#include "topo.h"
#include "topo_json.h"
#include "trace.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_LINKS STEP_SIM_MAX_LINKS

/* ---- the run's own options ---------------------------------------------------------------------- */

static int pick(const char *opt, const char *v, const char *const *names, int n, int *out, cli_diag_t *d) {
    char allowed[128] = "";
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(v, names[i]) == 0) {
            *out = i;
            return CLI_OK;
        }
        used += (size_t)snprintf(allowed + used, used < sizeof allowed ? sizeof allowed - used : 0, "%s%s",
                                 i ? ", " : "", names[i]);
    }
    const char *s = cli_suggest(v, names, (size_t)n);
    return cli_fail(d, CLI_EUSAGE, "%s: \"%.60s\" is not allowed%s%s%s; allowed: %s", opt, v,
                    s ? " (did you mean \"" : "", s ? s : "", s ? "\"?)" : "", allowed);
}

/* Fill the step configuration from opts; links gets --links. */
static int run_step_config(const run_opts_t *o, step_config_t *c, int *links, cli_diag_t *d) {
    static const char *const COMM[] = {"network", "analytic"};
    static const char *const P2P[] = {"blocking", "async"};
    static const char *const COLLAPSE[] = {"auto", "off", "approx"};
    static const char *const GRAN[] = {"auto", "layer", "microbatch"};
    static const char *const OPT[] = {"auto", "on", "off"};
    static const char *const FID[] = {"fast", "step"};
    static const char *const CAL[] = {"nccl", "none"};
    step_config_default(c);
    int v = 0, rc = CLI_OK;
    if (o->comm && !(rc = pick("--comm", o->comm, COMM, 2, &v, d)))
        c->comm = v ? SIM_COMM_ANALYTIC : SIM_COMM_NETWORK;
    if (!rc && o->schedule && step_schedule_parse(o->schedule, &c->schedule, &c->virtual_stages) != SIM_OK)
        rc = cli_fail(
            d, CLI_EUSAGE,
            "--schedule: \"%.60s\" is not a schedule; allowed: 1f1b, gpipe, interleaved, interleaved:V "
            "(V >= 2)",
            o->schedule);
    if (!rc && o->placement && step_placement_parse(o->placement, &c->placement) != SIM_OK)
        rc = cli_fail(
            d, CLI_EUSAGE,
            "--placement: \"%.60s\" is not an order of dimensions; allowed: a comma-separated order of "
            "tp, cp, pp, dp (innermost first), e.g. tp,cp,pp,dp",
            o->placement);
    if (!rc && o->p2p && !(rc = pick("--p2p", o->p2p, P2P, 2, &v, d)))
        c->p2p_async = v;
    if (!rc && o->collapse && !(rc = pick("--collapse", o->collapse, COLLAPSE, 3, &v, d)))
        c->collapse = v == 0 ? STEP_COLLAPSE_AUTO : v == 1 ? STEP_COLLAPSE_OFF : STEP_COLLAPSE_APPROX;
    if (!rc && o->granularity && !(rc = pick("--granularity", o->granularity, GRAN, 3, &v, d)))
        c->granularity = v == 0   ? STEP_GRANULARITY_AUTO
                         : v == 1 ? STEP_GRANULARITY_LAYER
                                  : STEP_GRANULARITY_MICROBATCH;
    if (!rc && o->optimizer && !(rc = pick("--optimizer", o->optimizer, OPT, 3, &v, d)))
        c->optimizer_step = v == 0 ? -1 : v == 1 ? 1 : 0;
    if (!rc && o->fidelity && !(rc = pick("--fidelity", o->fidelity, FID, 2, &v, d)))
        c->engine.fidelity = v ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST;
    if (!rc && o->calibration)
        rc = pick("--calibration", o->calibration, CAL, 2, &v, d);
    *links = 5;
    if (!rc && o->links) {
        char *end = NULL;
        const long k = strtol(o->links, &end, 10);
        if (!o->links[0] || *end || k < 0 || k > MAX_LINKS)
            rc =
                cli_fail(d, CLI_EUSAGE, "--links: \"%.60s\"; allowed: an integer 0..%d", o->links, MAX_LINKS);
        else
            *links = (int)k;
    }
    if (!rc && o->max_memory) {
        char *end = NULL;
        const double gb = strtod(o->max_memory, &end);
        if (!o->max_memory[0] || *end || !(gb > 0.0 && gb < 1e9))
            rc = cli_fail(d, CLI_EUSAGE, "--max-memory: \"%.60s\"; allowed: a number of GB > 0",
                          o->max_memory);
        else
            c->max_memory_gb = gb;
    }
    if (!rc && o->trace_ranks && !o->trace)
        rc = cli_fail(d, CLI_EUSAGE,
                      "--trace-ranks: given without --trace; allowed: --trace FILE --trace-ranks LIST");
    return rc;
}

/* ---- the trace ------------------------------------------------------------------------------------ */

typedef struct trace_ctx {
    const step_t *step;
    const topo_t *topo;
    trace_writer_t *w;
    char name[160];
} trace_ctx_t;

static int op_args(void *ctx, const sim_op_info_t *op, trace_op_args_t *out) {
    trace_ctx_t *c = ctx;
    step_op_t m;
    if (step_op(c->step, op->op, &m) != SIM_OK)
        return 0;
    out->pass = m.pass;
    out->microbatch = m.microbatch;
    out->stage = m.stage;
    out->collective = m.collective;
    out->group = m.group;
    if (m.kind == STEP_OP_COMPUTE || m.kind == STEP_OP_OPTIMIZER) {
        out->flops = m.flops_tflop * 1e12;
        out->bytes = m.hbm_gb * 1e9;
        out->layer = m.first_layer;
        if (m.kind == STEP_OP_COMPUTE) {
            if (m.n_blocks > 1)
                snprintf(c->name, sizeof c->name, "%s mb %d blocks %d-%d", m.pass, m.microbatch,
                         m.first_block, m.first_block + m.n_blocks - 1);
            else if (m.first_layer && m.last_layer && strcmp(m.first_layer, m.last_layer) != 0)
                snprintf(c->name, sizeof c->name, "%s mb %d block %d %s..%s", m.pass, m.microbatch,
                         m.first_block, m.first_layer, m.last_layer);
            else
                snprintf(c->name, sizeof c->name, "%s mb %d block %d %s", m.pass, m.microbatch, m.first_block,
                         m.first_layer ? m.first_layer : "");
            out->name = c->name;
        }
    } else {
        out->bytes = m.comm_gb * 1e9;
    }
    return 0;
}

static void link_name(void *ctx, int32_t link, char *buf, size_t size) {
    const trace_ctx_t *c = ctx;
    if (c->topo)
        topo_link_name(c->topo, link, buf, size);
    else
        snprintf(buf, size, "link %d", link);
}

static void memory_sample(void *ctx, sim_time_ps_t t, int32_t gpu, double gb) {
    trace_ctx_t *c = ctx;
    trace_writer_counter(c->w, t, gpu, "memory_gb", gb);
}

/* The links touching the traced GPUs (or every link of a small network). */
static int32_t *traced_links(const topo_t *t, const trace_ranks_t *ranks, int32_t *n) {
    const int64_t nl = topo_link_count(t);
    *n = 0;
    int32_t *links = malloc((size_t)(nl > 0 ? nl : 1) * sizeof *links);
    if (!links)
        return NULL;
    if (nl <= 4096) {
        for (int64_t l = 0; l < nl; l++)
            links[(*n)++] = (int32_t)l;
        return links;
    }
    for (int64_t l = 0; l < nl; l++) {
        topo_link_info_t li;
        topo_vertex_info_t a, b;
        if (topo_link_get(t, l, &li) || topo_vertex_get(t, li.from, &a) || topo_vertex_get(t, li.to, &b))
            continue;
        const int hit = (a.kind == TOPO_VERTEX_GPU && trace_ranks_contains(ranks, (int32_t)a.rank)) ||
                        (b.kind == TOPO_VERTEX_GPU && trace_ranks_contains(ranks, (int32_t)b.rank));
        if (hit)
            links[(*n)++] = (int32_t)l;
    }
    return links;
}

static char *scenario_text(const model_summary_t *su, const model_job_t *job, const scenario_t *scn,
                           const step_config_t *c) {
    json_writer_t w;
    char buf[64];
    json_start(&w, NULL);
    output_config_json(&w, su, job, scn);
    json_string(&w, "comm", c->comm == SIM_COMM_ANALYTIC ? "analytic" : "network");
    json_string(&w, "schedule", step_schedule_name(c->schedule));
    json_int(&w, "virtual_stages", c->schedule == STEP_SCHEDULE_INTERLEAVED ? c->virtual_stages : 1);
    json_string(&w, "placement", step_placement_format(&c->placement, buf, sizeof buf));
    cJSON *doc = json_take(&w);
    char *text = doc ? cJSON_PrintUnformatted(doc) : NULL;
    cJSON_Delete(doc);
    return text;
}

static int trace_open(const char *path, const run_opts_t *o, const step_t *step, const topo_t *topo,
                      const model_summary_t *su, const model_job_t *job, const scenario_t *scn,
                      const step_config_t *c, trace_ctx_t *tc, cli_diag_t *d) {
    char err[300];
    trace_ranks_t ranks;
    memset(&ranks, 0, sizeof ranks);
    int rc = trace_ranks_parse(o->trace_ranks ? o->trace_ranks : "all", (int32_t)job->gpus, &ranks, err,
                               sizeof err);
    if (rc)
        return cli_fail(d, rc == TRACE_ENOMEM ? CLI_ERUNTIME : CLI_EUSAGE, "--trace-ranks: %s", err);
    int32_t n_links = 0;
    int32_t *links = topo ? traced_links(topo, &ranks, &n_links) : NULL;
    char *scen = scenario_text(su, job, scn, c);
    const sim_engine_t *e = step_engine(step);
    (void)e;
    tc->step = step;
    tc->topo = topo;
    const trace_options_t opt = {
        .n_gpus = (int32_t)job->gpus,
        .gpus_per_node =
            (int32_t)(topo ? topo_gpu_count(topo) / topo_node_count(topo) : job->system.nvlink_size),
        .streams_per_gpu = 7,
        .ranks = &ranks,
        .scenario_json = scen,
        .links = links,
        .n_links = n_links,
        .link_name = link_name,
        .op_args = op_args,
        .ctx = tc};
    if ((topo && !links) || !scen)
        rc = TRACE_ENOMEM;
    else
        rc = trace_writer_open(path, &opt, &tc->w, err, sizeof err);
    free(links);
    cJSON_free(scen);
    trace_ranks_destroy(&ranks);
    if (rc)
        return cli_fail(d, rc == TRACE_EINVAL ? CLI_EUSAGE : CLI_ERUNTIME, "--trace %s: %s", path,
                        rc == TRACE_ENOMEM ? "out of memory" : err);
    return CLI_OK;
}

/* ---- running ---------------------------------------------------------------------------------------- */

typedef struct run_out {
    model_job_t job;
    model_estimate_t est;
    step_config_t cfg;
    step_result_t res;
    char topology[80];
    int n_links;
    char link_names[MAX_LINKS][96];
    double link_util[MAX_LINKS];
    double wall_s;
    int traced, calibrated;
    trace_writer_stats_t trace_stats;
    step_sim_result_t sim;
    double *stage_act_gb; /* peak activations of each stage's first GPU (pp entries), or NULL: sim's */
} run_out_t;

static void run_out_free(run_out_t *r) {
    if (r)
        step_sim_result_destroy(&r->sim);
    free(r);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* before_run of step_simulate: open the trace and attach it to the step. */
typedef struct run_hook {
    const run_opts_t *o;
    const topo_t *topo;
    run_out_t *r;
    const scenario_t *scn;
    trace_ctx_t *tc;
    cli_diag_t *d;
} run_hook_t;

static int attach_trace(void *ctx, step_t *step) {
    run_hook_t *h = ctx;
    const int rc = trace_open(h->o->trace, h->o, step, h->topo, &h->r->est.summary, &h->r->job, h->scn,
                              &h->r->cfg, h->tc, h->d);
    if (rc)
        return rc;
    sim_observer_t obs;
    trace_writer_observer(h->tc->w, &obs);
    step_set_observer(step, &obs);
    step_set_memory_callback(step, memory_sample, h->tc);
    return CLI_OK;
}

/* The job, the run's options and the topology first (every input checked and the network built),
 * then the model's estimate and the simulation. */
static int simulate(scenario_t *scn, const run_opts_t *o, run_out_t *r, cli_diag_t *d) {
    const double t0 = now_s();
    int links = 5;
    int rc = scenario_resolve(scn, &r->job, d);
    if (!rc)
        rc = run_step_config(o, &r->cfg, &links, d);
    if (rc)
        return rc;
    topo_t *topo = NULL;
    const char *where = scn->topology.where;
    r->calibrated = !o->calibration || strcmp(o->calibration, "nccl") == 0;
    if (r->cfg.comm == SIM_COMM_NETWORK) {
        if ((rc = simpoint_topology(&r->job, &scn->topology, where, &topo, d)))
            return rc;
        snprintf(r->topology, sizeof r->topology, "%s", topo_name(topo));
    } else {
        r->calibrated = 0;
        snprintf(r->topology, sizeof r->topology, "none");
    }
    if (model_estimate(&r->job, &r->est) != MODEL_OK) {
        topo_free(topo);
        return cli_fail(d, CLI_EUSAGE, "the model rejected this configuration");
    }
    trace_ctx_t tc;
    memset(&tc, 0, sizeof tc);
    run_hook_t hook = {o, topo, r, scn, &tc, d};
    step_sim_options_t so;
    memset(&so, 0, sizeof so);
    so.step = r->cfg;
    so.calibrate = r->calibrated;
    so.links = links;
    so.before_run = o->trace ? attach_trace : NULL;
    so.ctx = &hook;
    const int s = step_simulate(&r->job, topo, &so, &r->sim);
    if (s && r->sim.failed_at == STEP_SIM_AT_BUILD && s == SIM_EINVAL)
        rc = cli_fail(d, CLI_EUSAGE, "%s", r->sim.error);
    else if (s) {
        char prefix[320];
        snprintf(prefix, sizeof prefix, "%s: ", where);
        rc = simpoint_fail(s, &r->sim, prefix, d);
    }
    r->res = r->sim.step;
    r->stage_act_gb = r->sim.stage_peak_activations_gb;
    r->n_links = r->sim.n_links;
    for (int i = 0; i < r->n_links; i++) {
        r->link_util[i] = r->sim.link_utilization[i];
        snprintf(r->link_names[i], sizeof r->link_names[i], "%s", r->sim.link_names[i]);
    }
    if (tc.w) {
        char err[300];
        trace_writer_stats(tc.w, &r->trace_stats);
        if (rc)
            trace_writer_abort(tc.w);
        else if (trace_writer_close(tc.w, err, sizeof err) != TRACE_OK)
            rc = cli_fail(d, CLI_ERUNTIME, "--trace %s: %s", o->trace, err);
        else
            r->traced = 1;
    }
    topo_free(topo);
    r->wall_s = now_s() - t0;
    return rc;
}

/* ---- output ----------------------------------------------------------------------------------------- */

static const char *level_name(step_collapsed_t l) {
    return l == STEP_STAGES ? "stages" : l == STEP_RAILS ? "tensor ranks" : "none";
}

static cJSON *result_json(const run_out_t *r, const scenario_t *scn, const run_opts_t *o) {
    const step_result_t *s = &r->res;
    const model_summary_t *su = &r->est.summary;
    json_writer_t w;
    char buf[64];
    json_start(&w, NULL);
    json_number(&w, "step_time_s", s->step_time_s);
    json_number(&w, "analytic_iteration_time_s", su->iteration_time_s);
    json_number(&w, "throughput_samples_per_s",
                s->step_time_s > 0 ? (double)r->job.global_batch / s->step_time_s : 0);
    json_open_object(&w, "breakdown_s");
    json_number(&w, "compute", s->breakdown.compute_s);
    json_number(&w, "exposed_tp_comm", s->breakdown.exposed_tp_comm_s);
    json_number(&w, "exposed_pp_comm", s->breakdown.exposed_pp_comm_s);
    json_number(&w, "exposed_dp_comm", s->breakdown.exposed_dp_comm_s);
    json_number(&w, "bubble_idle", s->breakdown.bubble_idle_s);
    json_close_object(&w);
    json_int(&w, "events", s->events);
    json_int(&w, "flows", s->flows);
    if (!o->deterministic)
        json_number(&w, "wall_time_s", r->wall_s);
    json_open_object(&w, "links");
    json_number(&w, "max_utilization", r->n_links > 0 ? r->link_util[0] : 0.0);
    json_open_array(&w, "busiest");
    for (int i = 0; i < r->n_links; i++) {
        json_open_object(&w, NULL);
        json_string(&w, "link", r->link_names[i]);
        json_number(&w, "utilization", r->link_util[i]);
        json_close_object(&w);
    }
    json_close_array(&w);
    json_close_object(&w);
    json_open_object(&w, "memory_gb");
    json_number(&w, "peak", s->peak_memory_gb);
    json_int(&w, "peak_gpu", s->peak_memory_gpu);
    json_number(&w, "peak_activations", s->peak_activations_gb);
    json_number(&w, "static", s->static_memory_gb);
    json_number(&w, "analytic", su->memory_gb);
    json_number(&w, "analytic_activations", su->activations_gb);
    json_number(&w, "capacity", r->job.system.hbm_capacity_gb);
    json_bool(&w, "fits", s->peak_memory_gb <= r->job.system.hbm_capacity_gb);
    if (r->stage_act_gb) {
        json_open_array(&w, "stage_peak_activations");
        for (int64_t p = 0; p < r->job.par.pp; p++)
            json_number(&w, NULL, r->stage_act_gb[p]);
        json_close_array(&w);
    }
    json_close_object(&w);
    json_open_object(&w, "simulation");
    json_string(&w, "comm", r->cfg.comm == SIM_COMM_ANALYTIC ? "analytic" : "network");
    json_string(&w, "topology", r->topology);
    json_string(&w, "calibration", r->calibrated ? "nccl" : "none");
    json_string(&w, "schedule", step_schedule_name(r->cfg.schedule));
    json_int(&w, "virtual_stages", s->virtual_stages);
    json_string(&w, "placement", step_placement_format(&r->cfg.placement, buf, sizeof buf));
    json_string(&w, "p2p", r->cfg.p2p_async ? "async" : "blocking");
    json_string(&w, "granularity", s->granularity == STEP_GRANULARITY_LAYER ? "layer" : "microbatch");
    json_open_object(&w, "collapse");
    json_string(&w, "collapsed", level_name(s->collapsed));
    json_bool(&w, "exact", s->collapse_exact);
    json_int(&w, "simulated_gpus", s->simulated_gpus);
    json_int(&w, "gpus", s->gpus);
    json_string(&w, "note", s->collapse_note);
    json_close_object(&w);
    json_int(&w, "operations", s->operations);
    json_int(&w, "microbatches", s->microbatches);
    json_int(&w, "critical_gpu", s->critical_gpu);
    json_int(&w, "critical_stage", s->critical_stage);
    json_number(&w, "optimizer_s", s->optimizer_s);
    json_close_object(&w);
    if (r->traced) {
        json_open_object(&w, "trace");
        json_string(&w, "file", o->trace);
        json_int(&w, "complete_events", r->trace_stats.complete_events);
        json_int(&w, "flow_arrows", r->trace_stats.flow_arrows);
        json_int(&w, "counter_events", r->trace_stats.counter_events);
        json_close_object(&w);
    }
    output_config_json(&w, su, &r->job, scn);
    if (scn->name[0])
        json_string(&w, "scenario", scn->name);
    return json_take(&w);
}

static void row(FILE *out, const char *label, double t, double total) {
    fprintf(out, "    %-32s %14.6f %9.2f\n", label, t, total > 0 ? 100.0 * t / total : 0.0);
}

static void result_text(FILE *out, const run_out_t *r, const scenario_t *scn, const run_opts_t *o) {
    const step_result_t *s = &r->res;
    const model_summary_t *su = &r->est.summary;
    char buf[64];
    model_job_t shown = r->job; /* the header says whether the simulation ran the optimizer step */
    shown.training.optimizer_step = s->optimizer_s > 0.0;
    output_job_header(out, "run", &shown, scn);
    fprintf(out, "layout: ");
    output_layout_text(out, &su->par);
    fprintf(out,
            "\n        %" PRId64 " microbatches of %" PRId64 " sequences, %" PRId64 " blocks per stage\n",
            su->n_microbatches, su->par.mbs, su->layers_per_stage);
    fprintf(out, "simulation: %s", step_schedule_name(r->cfg.schedule));
    if (s->virtual_stages > 1)
        fprintf(out, ":%d", s->virtual_stages);
    if (r->cfg.comm == SIM_COMM_ANALYTIC)
        fprintf(out, " schedule, %s sends, analytic communication (the model's times, no network)",
                r->cfg.p2p_async ? "async" : "blocking");
    else
        fprintf(out, " schedule, %s sends, network communication on %s (calibration %s)",
                r->cfg.p2p_async ? "async" : "blocking", r->topology, r->calibrated ? "nccl" : "none");
    fprintf(out, ", placement %s\n", step_placement_format(&r->cfg.placement, buf, sizeof buf));
    fprintf(out, "            %d of %d GPUs simulated (collapsed: %s; %s)\n", s->simulated_gpus, s->gpus,
            level_name(s->collapsed), s->collapse_note);
    fprintf(out, "            %" PRId64 " operations (%s granularity), %" PRId64 " events, %" PRId64 " flows",
            s->operations, s->granularity == STEP_GRANULARITY_LAYER ? "layer" : "microbatch", s->events,
            s->flows);
    if (!o->deterministic)
        fprintf(out, ", %.2f s wall", r->wall_s);
    fprintf(out, "\n\n");
    const double t = s->step_time_s, a = su->iteration_time_s;
    fprintf(out, "  %-34s %.6f s\n", "step time (simulated)", t);
    fprintf(out, "  %-34s %.6f s (simulated %+.3f%%)\n", "iteration time (analytic estimate)", a,
            a > 0 ? 100.0 * (t / a - 1.0) : 0.0);
    fprintf(out, "  %-34s %.4f samples/s\n", "throughput", t > 0 ? (double)r->job.global_batch / t : 0.0);
    fprintf(out, "\n  %-34s %14s %9s\n", "time breakdown", "time (s)", "share (%)");
    fprintf(out, "    (GPU %d, stage %d: the last to finish)\n", s->critical_gpu, s->critical_stage);
    row(out, "compute", s->breakdown.compute_s, t);
    row(out, "exposed tensor-parallel comm", s->breakdown.exposed_tp_comm_s, t);
    row(out, "exposed pipeline comm", s->breakdown.exposed_pp_comm_s, t);
    row(out, "exposed data-parallel comm", s->breakdown.exposed_dp_comm_s, t);
    row(out, "bubble and idle", s->breakdown.bubble_idle_s, t);
    if (s->optimizer_s > 0)
        fprintf(out, "    (compute includes the optimizer step, %.6f s)\n", s->optimizer_s);
    fprintf(out, "\n  %-34s %14s %14s\n", "memory per GPU (GB)", "simulated", "analytic");
    fprintf(out, "    %-32s %14.3f %14.3f\n", "weights, gradients, optimizer", s->static_memory_gb,
            su->weights_gb + su->grads_gb + su->optimizer_gb);
    fprintf(out, "    %-32s %14.3f %14.3f\n", "activations (peak)", s->peak_activations_gb,
            su->activations_gb);
    fprintf(out, "    %-32s %14.3f %14.3f   of %.6g: %s\n", "total (peak)", s->peak_memory_gb, su->memory_gb,
            r->job.system.hbm_capacity_gb,
            s->peak_memory_gb <= r->job.system.hbm_capacity_gb ? "fits" : "DOES NOT FIT");
    fprintf(out, "    (peak on GPU %d)\n", s->peak_memory_gpu);
    if (r->n_links > 0) {
        fprintf(out, "\n  busiest links (average utilization over the step)\n");
        for (int i = 0; i < r->n_links; i++)
            fprintf(out, "    %-40s %8.2f%%\n", r->link_names[i], 100.0 * r->link_util[i]);
    }
    if (r->traced)
        fprintf(out, "\n  trace: %s (%" PRId64 " slices, %" PRId64 " arrows, %" PRId64 " counter samples)\n",
                o->trace, r->trace_stats.complete_events, r->trace_stats.flow_arrows,
                r->trace_stats.counter_events);
}

/* ---- entry points ------------------------------------------------------------------------------------- */

int cmd_run_result(scenario_t *scn, const run_opts_t *opts, cJSON **result, cli_diag_t *diag) {
    *result = NULL;
    run_out_t *r = calloc(1, sizeof *r);
    if (!r)
        return cli_fail(diag, CLI_ERUNTIME, "run: out of memory");
    int rc = simulate(scn, opts, r, diag);
    if (!rc) {
        *result = result_json(r, scn, opts);
        if (!*result)
            rc = cli_fail(diag, CLI_ERUNTIME, "run: out of memory while printing the JSON result");
    }
    run_out_free(r);
    return rc;
}

int cmd_run_check(const run_opts_t *o, cli_diag_t *d) {
    step_config_t c;
    int links;
    return run_step_config(o, &c, &links, d);
}

void cmd_run_scenario_opts(const scenario_t *scn, run_opts_t *o) {
    if (!o->schedule && scn->training.interleave > 1) {
        snprintf(o->schedule_text, sizeof o->schedule_text, "interleaved:%" PRId64, scn->training.interleave);
        o->schedule = o->schedule_text;
    }
    if (scn->given[SCN_OPTIMIZER_STEP]) {
        snprintf(o->optimizer_text, sizeof o->optimizer_text, "%s",
                 scn->training.optimizer_step ? "on" : "off");
        o->optimizer = o->optimizer_text;
    }
}

void cmd_sim_config(const scenario_t *scn, const char *placement, step_config_t *c) {
    step_config_default(c);
    if (placement)
        (void)step_placement_parse(placement, &c->placement); /* checked by cli_check_placement */
    if (scn->given[SCN_OPTIMIZER_STEP])
        c->optimizer_step = scn->training.optimizer_step ? 1 : 0;
}

int cmd_run(const cli_args_t *a, FILE *out, FILE *err, cli_diag_t *d) {
    (void)err;
    scenario_t scn;
    run_opts_t o;
    memset(&o, 0, sizeof o);
    const char *const *v = a->value;
    o.json = cli_has(a, CLI_OPT_JSON);
    o.comm = v[CLI_OPT_COMM];
    o.schedule = v[CLI_OPT_SCHEDULE];
    o.placement = v[CLI_OPT_PLACEMENT];
    o.p2p = v[CLI_OPT_P2P];
    o.collapse = v[CLI_OPT_COLLAPSE];
    o.granularity = v[CLI_OPT_GRANULARITY];
    o.fidelity = v[CLI_OPT_FIDELITY];
    o.calibration = v[CLI_OPT_CALIBRATION];
    o.links = v[CLI_OPT_LINKS];
    o.max_memory = v[CLI_OPT_MAX_MEMORY];
    o.trace = v[CLI_OPT_TRACE];
    o.trace_ranks = v[CLI_OPT_TRACE_RANKS];
    int rc = cli_check_placement(a, d);
    if (!rc)
        rc = cli_apply_scenario(a, &scn, NULL, d);
    else
        memset(&scn, 0, sizeof scn);
    if (!rc)
        cmd_run_scenario_opts(&scn, &o);
    if (!rc) /* validate the run's own options before anything is built */
        rc = cmd_run_check(&o, d);
    if (!rc && o.json) {
        cJSON *result = NULL;
        rc = cmd_run_result(&scn, &o, &result, d);
        if (!rc && json_print(out, result) != 0)
            rc = cli_fail(d, CLI_ERUNTIME, "run: out of memory while printing the JSON result");
        cJSON_Delete(result);
    } else if (!rc) {
        run_out_t *r = calloc(1, sizeof *r);
        if (!r)
            rc = cli_fail(d, CLI_ERUNTIME, "run: out of memory");
        if (!rc)
            rc = simulate(&scn, &o, r, d);
        if (!rc)
            result_text(out, r, &scn, &o);
        run_out_free(r);
    }
    scenario_destroy(&scn);
    return rc;
}
