/* cmd_run.c - `stepsim run [SCENARIO.json] [--option value ...]`: simulate one training step event by
 * event (sim/step*.c) and print where the time goes: the step time beside the closed-form estimate,
 * the critical GPU's breakdown, memory peaks against the model, and the busiest links; optionally a
 * Chrome trace (traces/). output/print_run.c prints the result.
 *
 * The scenario options are estimate's (options.c, applied after the file); --interleave and
 * --optimizer-step set the simulated schedule and optimizer step and the estimate beside it alike
 * (cmd_sim_scenario, cmd_run_scenario_opts); the
 * run's own options choose the communication model, the schedule, the placement and what is traced.
 * The network is the scenario's topology (--topology, else the file's "topology", else "ideal" built
 * from the system and its NVLink domain); in analytic mode there is none.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "commands.h"
#include "outfile.h"
#include "jobs.h"
#include "print.h"
#include "progress.h"
#include "step.h"
#include "simpoint.h"
#include "topo.h"
#include "topo_json.h"
#include "trace.h"
#include "trace_chakra.h"

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

int cmd_parse_collapse(const char *text, step_collapse_t *out, cli_diag_t *d) {
    static const char *const COLLAPSE[] = {"auto", "off", "approx"};
    int v = 0;
    const int rc = pick("--collapse", text, COLLAPSE, 3, &v, d);
    if (!rc)
        (void)step_collapse_parse(COLLAPSE[v], out);
    return rc;
}

/* Fill the step configuration from opts; links gets --links. */
static int run_step_config(const run_opts_t *o, step_config_t *c, int *links, cli_diag_t *d) {
    static const char *const COMM[] = {"network", "analytic"};
    static const char *const P2P[] = {"blocking", "async"};
    static const char *const GRAN[] = {"auto", "layer", "microbatch"};
    static const char *const OPT[] = {"auto", "on", "off"};
    static const char *const FID[] = {"fast", "step"};
    static const char *const CAL[] = {"nccl", "none"};
    static const char *const OFF_ON[] = {"off", "on"};
    static const char *const AUTO_ON_OFF[] = {"auto", "on", "off"};
    step_config_default(c);
    int v = 0, rc = CLI_OK;
    if (o->comm && !(rc = pick("--comm", o->comm, COMM, 2, &v, d)))
        c->comm = v ? SIM_COMM_ANALYTIC : SIM_COMM_NETWORK;
    if (!rc && o->schedule && step_schedule_parse(o->schedule, &c->schedule, &c->virtual_stages) != SIM_OK)
        rc = cli_fail(d, CLI_EUSAGE,
                      "--schedule: \"%.60s\" is not a schedule; allowed: 1f1b, gpipe (interleaved: "
                      "--interleave V)",
                      o->schedule);
    else if (!rc && c->schedule == STEP_SCHEDULE_INTERLEAVED) /* one way: --interleave V */
        rc = cli_fail(d, CLI_EUSAGE,
                      "--schedule: \"%.60s\": the interleaved schedule is --interleave V (training."
                      "interleave), which makes the estimate beside the simulation interleaved too; allowed: "
                      "1f1b, gpipe",
                      o->schedule);
    else if (!rc && step_schedule_splits(c->schedule)) /* one way: --pipeline-schedule S */
        rc = cli_fail(d, CLI_EUSAGE,
                      "--schedule: \"%.60s\": the zero-bubble schedule is --pipeline-schedule %s "
                      "(training.pipeline_schedule), which makes the estimate beside the simulation "
                      "the same schedule; allowed: 1f1b, gpipe",
                      o->schedule, step_schedule_name(c->schedule));
    else if (!rc && o->pipeline != MODEL_PIPELINE_1F1B && c->schedule == STEP_SCHEDULE_GPIPE)
        rc = cli_fail(d, CLI_EUSAGE,
                      "--schedule: gpipe with --pipeline-schedule %s (training.pipeline_schedule); "
                      "allowed: 1f1b (the pipeline schedule), or gpipe with the 1f1b pipeline schedule",
                      model_pipeline_name((model_pipeline_t)o->pipeline));
    else if (!rc && o->pipeline == MODEL_PIPELINE_ZB_H1)
        c->schedule = STEP_SCHEDULE_ZB_H1;
    else if (!rc && (o->pipeline == MODEL_PIPELINE_ZB_V || o->pipeline == MODEL_PIPELINE_DUALPIPE)) {
        c->schedule = o->pipeline == MODEL_PIPELINE_ZB_V ? STEP_SCHEDULE_ZB_V : STEP_SCHEDULE_DUALPIPE;
        c->virtual_stages = 2;
    } else if (!rc && o->interleave > 1 && c->schedule == STEP_SCHEDULE_GPIPE)
        rc = cli_fail(d, CLI_EUSAGE,
                      "--schedule: gpipe with --interleave %" PRId64
                      " (training.interleave); allowed: 1f1b (interleaved with V virtual stages), or "
                      "gpipe with interleave 1",
                      o->interleave);
    else if (!rc && o->interleave > 1) {
        c->schedule = STEP_SCHEDULE_INTERLEAVED;
        c->virtual_stages = (int32_t)o->interleave;
    }
    if (!rc && o->placement && step_placement_parse(o->placement, &c->placement) != SIM_OK)
        rc = cli_fail(
            d, CLI_EUSAGE,
            "--placement: \"%.60s\" is not an order of dimensions; allowed: a comma-separated order of "
            "tp, cp, pp, dp (innermost first), e.g. tp,cp,pp,dp",
            o->placement);
    if (!rc && o->p2p && !(rc = pick("--p2p", o->p2p, P2P, 2, &v, d)))
        c->p2p_async = v;
    if (!rc && o->collapse)
        rc = cmd_parse_collapse(o->collapse, &c->collapse, d);
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
    if (!rc && o->max_memory)
        rc = cmd_parse_max_memory(o->max_memory, &c->max_memory_gb, d);
    if (!rc && o->baseline)
        rc = pick("--baseline", o->baseline, OFF_ON, 2, &v, d);
    if (!rc && o->entry_costs)
        rc = pick("--entry-costs", o->entry_costs, AUTO_ON_OFF, 3, &v, d);
    if (!rc && o->expert_skew) {
        char *end = NULL;
        const double x = strtod(o->expert_skew, &end);
        if (!o->expert_skew[0] || *end || !(x >= 0.0 && x <= STEP_EXPERT_SKEW_MAX))
            rc = cli_fail(d, CLI_EUSAGE, "--expert-skew: \"%.60s\"; allowed: a number 0..%g", o->expert_skew,
                          (double)STEP_EXPERT_SKEW_MAX);
        else
            c->expert_skew = x;
    }
    if (!rc && o->trace_ranks && !o->trace)
        rc = cli_fail(d, CLI_EUSAGE,
                      "--trace-ranks: given without --trace; allowed: --trace FILE --trace-ranks LIST");
    if (!rc && o->compute && !o->workload)
        rc =
            cli_fail(d, CLI_EUSAGE,
                     "--compute: given without --workload; allowed: --workload DIR --compute %s", o->compute);
    step_wl_compute_t wc;
    if (!rc && o->compute && step_wl_compute_parse(o->compute, &wc) != SIM_OK)
        rc =
            cli_fail(d, CLI_EUSAGE, "--compute: \"%.60s\" is not allowed; allowed: trace, model", o->compute);
    if (!rc && o->workload && o->layers)
        rc = cli_fail(d, CLI_EUSAGE,
                      "--layers: not with --workload (a workload has no layers); allowed: one of them");
    /* Chakra traces are per rank: an export needs every GPU simulated (a workload always is) */
    if (!rc && o->export_et && !o->workload && c->collapse != STEP_COLLAPSE_OFF)
        rc = cli_fail(
            d, CLI_EUSAGE,
            "--export-et: needs every GPU simulated (a Chakra trace is per rank, and a collapsed step "
            "simulates one GPU for many); allowed: --export-et DIR --collapse off");
    return rc;
}

/* ---- the trace ------------------------------------------------------------------------------------ */

typedef struct trace_ctx {
    const step_t *step;
    const topo_t *topo;
    trace_writer_t *w;
    outfile_t out; /* the trace's temporary file (out.slot -1: none) */
    char name[160];
} trace_ctx_t;

int cmd_trace_op_args(const step_t *step, const sim_op_info_t *op, trace_op_args_t *out, char *name,
                      size_t name_size) {
    step_op_t m;
    if (step_op(step, op->op, &m) != SIM_OK)
        return 0;
    out->pass = m.pass;
    out->microbatch = m.microbatch;
    out->stage = m.stage;
    out->collective = m.collective;
    out->group = m.group;
    if (m.name) /* a workload's node: its own name */
        out->name = m.name;
    if (m.kind == STEP_OP_COMPUTE || m.kind == STEP_OP_OPTIMIZER) {
        out->flops = m.flops_tflop * 1e12;
        out->bytes = m.hbm_gb * 1e9;
        out->layer = m.first_layer;
        if (m.kind == STEP_OP_COMPUTE && !m.name)
            out->name = step_op_label(step, op->op, name, name_size);
        if (m.kind == STEP_OP_COMPUTE)
            out->tp_comm_s = m.tp_comm_s;
    } else {
        out->bytes = m.comm_gb * 1e9;
    }
    return 0;
}

int cmd_trace_finish(trace_writer_t *w, outfile_t *out, int rc, const char *path, trace_writer_stats_t *stats,
                     int *traced, cli_diag_t *d) {
    char err[300];
    trace_writer_stats(w, stats);
    if (rc) {
        trace_writer_abort(w);
        return rc;
    }
    if (trace_writer_close(w, err, sizeof err) != TRACE_OK)
        return cli_fail(d, CLI_ERUNTIME, "--trace %s: %s", path, err);
    if ((rc = outfile_commit(out, d)) == CLI_OK)
        *traced = 1;
    return rc;
}

static int op_args(void *ctx, const sim_op_info_t *op, trace_op_args_t *out) {
    trace_ctx_t *c = ctx;
    return cmd_trace_op_args(c->step, op, out, c->name, sizeof c->name);
}

static void link_name(void *ctx, int32_t link, char *buf, size_t size) {
    const trace_ctx_t *c = ctx;
    if (c->topo)
        cmd_trace_link_name(c->topo, link, buf, size);
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
    int32_t *links = alloc_malloc((size_t)(nl > 0 ? nl : 1) * sizeof *links);
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

/* The streams a GPU of the step uses (a workload's may exceed the model's step's 7). */
static int32_t streams_per_gpu(const step_t *step) {
    const sim_engine_t *e = step_engine(step);
    int32_t n = 7;
    for (sim_op_id_t op = 0; op < sim_op_count(e); op++) {
        sim_op_desc_t od;
        if (sim_op_describe(e, op, &od) == SIM_OK && od.stream + 1 > n)
            n = od.stream + 1;
    }
    return n;
}

static int trace_open(const char *path, const run_opts_t *o, const step_t *step, const topo_t *topo,
                      const model_summary_t *su, const model_job_t *job, const scenario_t *scn,
                      const step_config_t *c, trace_ctx_t *tc, cli_diag_t *d) {
    char err[300];
    cmd_trace_plan_t plan;
    int rc = cmd_trace_plan(step, job, c, o->trace_ranks, o->warn, &plan, d);
    if (rc)
        return rc;
    trace_ranks_t ranks = plan.ranks;
    int32_t n_links = 0;
    int32_t *links = topo ? traced_links(topo, &ranks, &n_links) : NULL;
    char *scen = o->workload ? print_run_trace_workload(o->workload, (int32_t)job->gpus,
                                                        sim_op_count(step_engine(step)),
                                                        o->compute ? o->compute : "trace", job, c)
                             : print_run_trace_scenario(su, job, scn, c);
    const sim_engine_t *e = step_engine(step);
    (void)e;
    tc->step = step;
    tc->topo = topo;
    const trace_options_t opt = {
        .n_gpus = (int32_t)job->gpus,
        .gpus_per_node =
            (int32_t)(topo ? topo_gpu_count(topo) / topo_node_count(topo) : job->system.nvlink_size),
        .streams_per_gpu = streams_per_gpu(step),
        .ranks = &ranks,
        .scenario_json = scen,
        .links = links,
        .n_links = n_links,
        .link_name = link_name,
        .op_args = op_args,
        .ctx = tc,
        .compute_note = plan.folds_tp ? "incl. tp comm" : NULL};
    int reserved = CLI_OK;
    if ((topo && !links) || !scen)
        rc = TRACE_ENOMEM;
    else if ((reserved = outfile_reserve(&tc->out, "--trace", path, d)) == CLI_OK)
        rc = trace_writer_open(outfile_tmp_path(&tc->out), &opt, &tc->w, err, sizeof err);
    free(links);
    free(scen);
    trace_ranks_destroy(&ranks);
    if (reserved)
        return reserved; /* outfile_reserve said why */
    if (rc)
        outfile_discard(&tc->out);
    if (rc)
        return cli_fail(d, rc == TRACE_EINVAL ? CLI_EUSAGE : CLI_ERUNTIME, "--trace %s: %s", path,
                        rc == TRACE_ENOMEM ? "out of memory" : err);
    return CLI_OK;
}

/* ---- running ---------------------------------------------------------------------------------------- */

void run_result_free(run_result_t *r) {
    if (r) {
        step_sim_result_destroy(&r->sim);
        run_result_free(r->baseline);
        free(r->slowed_list);
    }
    free(r);
}

double run_cost_s(const run_result_t *r) {
    return r->baseline ? r->res.step_time_s - r->baseline->res.step_time_s : 0.0;
}

double run_cost_percent(const run_result_t *r) {
    const double b = r->baseline ? r->baseline->res.step_time_s : 0.0;
    return b > 0.0 ? 100.0 * run_cost_s(r) / b : 0.0;
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
    run_result_t *r;
    const scenario_t *scn;
    trace_ctx_t *tc;
    cli_diag_t *d;
    struct wl_feed *wl; /* --workload: closed once the step is built (the step keeps none of it) */
} run_hook_t;

/* --workload: the ET set read one rank at a time into the step's import (step_wl_source_t), so that
 * only the step and the rank being built are held. */
typedef struct wl_feed {
    const char *path;
    trace_chakra_reader_t *rd;
    step_workload_t cur;      /* the rank handed over last */
    cli_progress_t *progress; /* NULL: none shown */
} wl_feed_t;

static int wl_feed_rank(void *ctx, int32_t r, const step_workload_t **out, char *err, size_t err_size) {
    wl_feed_t *f = ctx;
    step_workload_free(&f->cur);
    char e[400];
    const int trc = trace_chakra_reader_rank(f->rd, r, &f->cur, e, sizeof e);
    if (trc) {
        snprintf(err, err_size, "--workload %s: %s", f->path, trc == TRACE_ENOMEM ? "out of memory" : e);
        return trc == TRACE_ENOMEM ? SIM_ENOMEM : SIM_EINVAL;
    }
    *out = &f->cur;
    if (f->progress) {
        char what[96];
        snprintf(what, sizeof what, "reading and building the workload: rank %d of %d", r + 1,
                 f->cur.n_ranks);
        cli_progress_count(f->progress, -1.0, what);
    }
    return SIM_OK;
}

static void wl_feed_close(wl_feed_t *f) {
    step_workload_free(&f->cur);
    trace_chakra_reader_close(f->rd);
    f->rd = NULL;
}

static int attach_trace(void *ctx, step_t *step) {
    run_hook_t *h = ctx;
    if (h->wl) {
        wl_feed_close(h->wl);
        h->r->wl_nodes = sim_op_count(step_engine(step)); /* a node is an operation */
    }
    if (!h->o->trace)
        return CLI_OK;
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

/* --layers: one block as the engine ran it, kept before the step is freed. */
static int keep_block_view(void *ctx, const step_t *step) {
    run_hook_t *h = ctx;
    const int rc = step_block_view(step, &h->r->view);
    if (rc == SIM_ENOMEM)
        return cli_fail(h->d, CLI_ERUNTIME, "run: out of memory");
    h->r->has_view = rc == SIM_OK;
    return CLI_OK;
}

/* --export-et in two stages side by side: this thread makes rank r + 1's nodes (the step's export)
 * while a writer thread encodes and writes rank r (the Chakra writer, which runs on whichever one
 * thread calls it). One rank waits in the hand-over slot, so at most three ranks' nodes are held.
 * The files are the same bytes as from one thread: the ranks are written in order, by one writer. */
typedef struct et_pipe {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    trace_chakra_writer_t *wr;
    step_workload_t part; /* the slot: the next rank to write */
    int32_t rank;         /* its rank, -1 when the slot is empty */
    int done;             /* no rank will be handed over any more */
    int trc;              /* the writer's first failure (TRACE_OK: none), its message in err */
    char err[300];
} et_pipe_t;

static void *et_write_ranks(void *arg) {
    et_pipe_t *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->rank < 0 && !p->done)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->rank < 0)
            break;
        step_workload_t part = p->part;
        const int32_t r = p->rank;
        const int ok = p->trc == TRACE_OK;
        p->rank = -1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        char err[sizeof p->err];
        const int trc = ok ? trace_chakra_writer_rank(p->wr, &part, r, err, sizeof err) : TRACE_OK;
        step_workload_free(&part);
        pthread_mutex_lock(&p->mu);
        if (trc != TRACE_OK) {
            p->trc = trc;
            memcpy(p->err, err, sizeof err);
            pthread_cond_broadcast(&p->cv);
        }
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Hand rank r's nodes to the writer (ownership passes); 0, or the writer's failure (part freed). */
static int et_hand_over(et_pipe_t *p, step_workload_t *part, int32_t r) {
    pthread_mutex_lock(&p->mu);
    while (p->rank >= 0 && p->trc == TRACE_OK)
        pthread_cond_wait(&p->cv, &p->mu);
    const int trc = p->trc;
    if (trc == TRACE_OK) {
        p->part = *part;
        p->rank = r;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    if (trc != TRACE_OK)
        step_workload_free(part);
    return trc;
}

/* --export-et: the step as it ran (start times included) as Chakra traces, one file per rank, each
 * rank's nodes made and written in turn (the whole workload is never held). */
static int export_et(run_hook_t *h, const step_t *step) {
    char err[300];
    step_wl_export_t *x = NULL;
    int rc = step_workload_export_begin(step, &x, err, sizeof err);
    if (rc == SIM_EINVAL)
        return cli_fail(h->d, CLI_EUSAGE, "--export-et %s: %s", h->o->export_et, err);
    if (rc)
        return cli_fail(h->d, CLI_ERUNTIME, "--export-et %s: out of memory", h->o->export_et);
    const int32_t nr = step_workload_export_ranks(x);
    et_pipe_t p = {.rank = -1, .trc = TRACE_OK};
    int trc = trace_chakra_writer_open(h->o->export_et, "stepsim", nr, 1, &p.wr, err, sizeof err);
    pthread_t writer;
    if (trc == TRACE_OK) {
        pthread_mutex_init(&p.mu, NULL);
        pthread_cond_init(&p.cv, NULL);
        if (pthread_create(&writer, NULL, et_write_ranks, &p) != 0) {
            trace_chakra_writer_abort(p.wr);
            step_workload_export_end(x);
            pthread_mutex_destroy(&p.mu);
            pthread_cond_destroy(&p.cv);
            return cli_fail(h->d, CLI_ERUNTIME, "--export-et %s: cannot start the writer thread",
                            h->o->export_et);
        }
    }
    int64_t nodes = 0;
    for (int32_t r = 0; r < nr && !rc && trc == TRACE_OK; r++) {
        step_workload_t part;
        if ((rc = step_workload_export_rank(x, r, &part, err, sizeof err)))
            break;
        nodes += part.rank_nodes_offset[r + 1] - part.rank_nodes_offset[r];
        trc = et_hand_over(&p, &part, r);
    }
    step_workload_export_end(x);
    if (p.wr) { /* the writer thread runs */
        pthread_mutex_lock(&p.mu);
        p.done = 1;
        pthread_cond_broadcast(&p.cv);
        pthread_mutex_unlock(&p.mu);
        pthread_join(writer, NULL);
        pthread_mutex_destroy(&p.mu);
        pthread_cond_destroy(&p.cv);
        trc = trc == TRACE_OK ? p.trc : trc;
    }
    /* A failed write is of an earlier rank than any rank the maker failed on (the writer is behind
     * it), so it is the one reported, as one thread would have stopped there. */
    if (trc != TRACE_OK && p.wr) /* the writer's message (the open's is in err already) */
        memcpy(err, p.err, sizeof err);
    if (rc || trc != TRACE_OK) {
        trace_chakra_writer_abort(p.wr);
    } else {
        trc = trace_chakra_writer_close(p.wr, err, sizeof err);
    }
    if (trc != TRACE_OK)
        return cli_fail(h->d, trc == TRACE_EINVAL ? CLI_EUSAGE : CLI_ERUNTIME, "--export-et %s: %s",
                        h->o->export_et, trc == TRACE_ENOMEM ? "out of memory" : err);
    if (rc == SIM_EINVAL)
        return cli_fail(h->d, CLI_EUSAGE, "--export-et %s: %s", h->o->export_et, err);
    if (rc)
        return cli_fail(h->d, CLI_ERUNTIME, "--export-et %s: out of memory", h->o->export_et);
    h->r->exported = 1;
    h->r->exported_ranks = nr;
    h->r->exported_nodes = nodes;
    return CLI_OK;
}

static int after_run(void *ctx, const step_t *step) {
    run_hook_t *h = ctx;
    int rc = h->o->layers ? keep_block_view(ctx, step) : CLI_OK;
    if (!rc && h->o->export_et)
        rc = export_et(h, step);
    return rc;
}

/* The job, the run's options and the topology first (every input checked and the network built),
 * then the model's estimate and the simulation. */
static int simulate(scenario_t *scn, const run_opts_t *o, run_result_t *r, cli_diag_t *d) {
    const double t0 = now_s();
    int links = 5;
    int rc = scenario_resolve(scn, &r->job, d);
    if (!rc)
        rc = run_step_config(o, &r->cfg, &links, d);
    if (!rc && o->layers && r->cfg.granularity == STEP_GRANULARITY_MICROBATCH)
        rc =
            cli_fail(d, CLI_EUSAGE,
                     "--layers: needs an operation per run of layers, not --granularity microbatch; allowed: "
                     "--granularity layer or auto");
    if (rc)
        return rc;
    if (o->layers) /* the view needs an operation per run of layers */
        r->cfg.granularity = STEP_GRANULARITY_LAYER;
    wl_feed_t feed = {.path = o->workload, .progress = o->progress};
    step_wl_source_t src;
    memset(&src, 0, sizeof src);
    if (o->workload) { /* the workload's ranks on as many GPUs; the scenario gives the system */
        char err[400];
        const int trc = trace_chakra_reader_open(o->workload, &feed.rd, err, sizeof err);
        if (trc)
            return cli_fail(d, trc == TRACE_ENOMEM ? CLI_ERUNTIME : CLI_EUSAGE, "--workload %s: %s",
                            o->workload, trc == TRACE_ENOMEM ? "out of memory" : err);
        src = (step_wl_source_t){.shape = trace_chakra_reader_shape(feed.rd),
                                 .group_used = trace_chakra_reader_group_used(feed.rd),
                                 .rank = wl_feed_rank,
                                 .ctx = &feed};
        r->workload = 1;
        r->wl_ranks = src.shape->n_ranks;
        r->wl_compute = STEP_WL_COMPUTE_TRACE;
        if (o->compute)
            (void)step_wl_compute_parse(o->compute, &r->wl_compute); /* checked by run_step_config */
        r->job.gpus = src.shape->n_ranks;
    }
    topo_t *topo = NULL;
    const char *where = scn->topology.where;
    r->calibrated = !o->calibration || strcmp(o->calibration, "nccl") == 0;
    if (r->cfg.comm == SIM_COMM_NETWORK) {
        if ((rc = simpoint_topology(&r->job, &scn->topology, &scn->perturb, r->cfg.max_memory_gb, where,
                                    &topo, d))) {
            wl_feed_close(&feed);
            return rc;
        }
        snprintf(r->topology, sizeof r->topology, "%s", topo_name(topo));
    } else if (scn->perturb.links.n > 0) {
        wl_feed_close(&feed);
        return cli_fail(d, CLI_EUSAGE, "%s: slow and failed links need a network; allowed: --comm network",
                        scn->perturb.links.e[0].where);
    } else {
        r->calibrated = 0;
        snprintf(r->topology, sizeof r->topology, "none");
    }
    if (!o->workload && model_estimate(&r->job, &r->est) != MODEL_OK) {
        topo_free(topo);
        return cli_fail(d, CLI_EUSAGE, "the model rejected this configuration");
    }
    if (!o->workload && ((rc = cmd_require_finite_estimate(&r->est, &r->job, "closed form", d)) ||
                         (rc = cmd_require_simulable(&r->est, &r->job, d)))) {
        topo_free(topo);
        return rc;
    }
    double *factors = NULL; /* the perturbations' compute factors, for step_new only */
    if ((rc = scenario_perturb_step(scn, &r->job, &r->cfg, &factors, d))) {
        topo_free(topo);
        wl_feed_close(&feed);
        return rc;
    }
    r->perturbed = scenario_has_perturbations(scn);
    if (r->perturbed && r->cfg.collapse == STEP_COLLAPSE_APPROX)
        rc = cli_fail(d, CLI_EUSAGE,
                      "--collapse: approx with perturbations, which make identical ranks differ; "
                      "allowed: auto, off (every GPU simulated)");
    if (rc) {
        free(factors);
        topo_free(topo);
        wl_feed_close(&feed);
        return rc;
    }
    r->slowed_gpus = scenario_slowed_gpus(factors, r->job.gpus);
    if (r->perturbed && !(r->slowed_list = scenario_slowed_list(factors, r->job.gpus)))
        rc = cli_fail(d, CLI_ERUNTIME, "run: out of memory");
    r->seed = scn->perturb.seed_given ? scn->perturb.seed : 1;
    r->cfg.expert_seed = (uint64_t)r->seed; /* the expert skew's draws: --seed, as the perturbations' */
    trace_ctx_t tc;
    memset(&tc, 0, sizeof tc);
    tc.out.slot = -1;
    run_hook_t hook = {o, topo, r, scn, &tc, d, o->workload ? &feed : NULL};
    step_sim_options_t so;
    memset(&so, 0, sizeof so);
    so.step = r->cfg;
    so.calibrate = r->calibrated;
    so.links = links;
    so.before_run = o->trace || o->workload ? attach_trace : NULL;
    so.after_run = o->layers || o->export_et ? after_run : NULL;
    so.workload = o->workload ? &src : NULL;
    so.wl_compute = (int)r->wl_compute;
    so.ctx = &hook;
    so.progress = o->progress ? cli_progress_sim : NULL;
    so.progress_ctx = o->progress;
    const int s = step_simulate(&r->job, topo, &so, &r->sim);
    free(factors);
    wl_feed_close(&feed);
    r->cfg.compute_slowdown = NULL;
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
    if (tc.w)
        rc = cmd_trace_finish(tc.w, &tc.out, rc, o->trace, &r->trace_stats, &r->traced, d);
    outfile_discard(&tc.out);
    topo_free(topo);
    r->wall_s = now_s() - t0;
    return rc;
}

/* ---- entry points ------------------------------------------------------------------------------------- */

/* The scenario s (a copy of the what-if's, changed by the caller) simulated without a trace: its step
 * time into *step_s. */
static int simulate_variant(const scenario_t *s, const run_opts_t *opts, run_result_t **out, cli_diag_t *d) {
    scenario_t *copy = alloc_malloc(sizeof *copy);
    run_result_t *r = alloc_calloc(1, sizeof *r);
    if (!copy || !r) {
        free(copy);
        free(r);
        return cli_fail(d, CLI_ERUNTIME, "run: out of memory");
    }
    *copy = *s;
    run_opts_t o = *opts;
    o.trace = o.trace_ranks = NULL; /* only the what-if is traced */
    o.export_et = NULL;             /* and exported */
    const int rc = simulate(copy, &o, r, d);
    free(copy);
    if (rc) {
        run_result_free(r);
        return rc;
    }
    *out = r;
    return CLI_OK;
}

/* The baseline (the scenario without its perturbations) and, by the policy of --entry-costs, the
 * cost of each perturbation entry alone. */
static int what_if(const scenario_t *scn, const run_opts_t *opts, run_result_t *r, cli_diag_t *d) {
    scenario_t *s = alloc_malloc(sizeof *s);
    if (!s)
        return cli_fail(d, CLI_ERUNTIME, "run: out of memory");
    *s = *scn;
    scenario_clear_perturbations(s);
    int rc = simulate_variant(s, opts, &r->baseline, d);
    r->n_entries = scenario_perturbation_entries(scn);
    if (r->n_entries > RUN_MAX_ENTRIES)
        r->n_entries = RUN_MAX_ENTRIES;
    for (int k = 0; k < r->n_entries; k++)
        scenario_perturbation_label(scn, k, r->entry[k].label, sizeof r->entry[k].label);
    const char *policy = opts->entry_costs ? opts->entry_costs : "auto";
    const int on = strcmp(policy, "on") == 0, off = strcmp(policy, "off") == 0;
    if (rc) {
        free(s);
        return rc;
    }
    if (r->n_entries == 1) { /* the one entry's cost is the what-if's */
        r->entry[0].step_s = r->res.step_time_s;
        r->entry[0].cost_s = run_cost_s(r);
        r->entry_costs = 1;
    } else if (off) {
        snprintf(r->entry_costs_note, sizeof r->entry_costs_note, "not computed (--entry-costs off)");
    } else if (!on && r->res.operations > RUN_ENTRY_COSTS_MAX_OPS) {
        snprintf(r->entry_costs_note, sizeof r->entry_costs_note,
                 "not computed: %d more runs of %" PRId64 " operations (more than %d; --entry-costs on)",
                 r->n_entries, r->res.operations, RUN_ENTRY_COSTS_MAX_OPS);
    } else {
        for (int k = 0; k < r->n_entries && !rc; k++) {
            *s = *scn;
            scenario_keep_perturbation(s, k);
            run_result_t *one = NULL;
            if (!(rc = simulate_variant(s, opts, &one, d))) {
                r->entry[k].step_s = one->res.step_time_s;
                r->entry[k].cost_s = one->res.step_time_s - r->baseline->res.step_time_s;
            }
            run_result_free(one);
        }
        r->entry_costs = !rc;
    }
    free(s);
    return rc;
}

int cmd_run_compute(scenario_t *scn, const run_opts_t *opts, run_result_t **result, cli_diag_t *diag) {
    *result = alloc_calloc(1, sizeof **result);
    if (!*result)
        return cli_fail(diag, CLI_ERUNTIME, "run: out of memory");
    scenario_t *copy = alloc_malloc(sizeof *copy); /* the scenario as given, before simulate resolves it */
    if (!copy)
        return cli_fail(diag, CLI_ERUNTIME, "run: out of memory");
    *copy = *scn;
    int rc = simulate(scn, opts, *result, diag);
    const int baseline = !opts->baseline || strcmp(opts->baseline, "on") == 0;
    if (!rc && (*result)->perturbed && baseline)
        rc = what_if(copy, opts, *result, diag);
    free(copy);
    return rc;
}

int cmd_run_config(const run_opts_t *o, step_config_t *c, int *links, cli_diag_t *d) {
    return run_step_config(o, c, links, d);
}

int cmd_run_check(const run_opts_t *o, cli_diag_t *d) {
    step_config_t c;
    int links;
    return run_step_config(o, &c, &links, d);
}

void cmd_sim_scenario(scenario_t *scn) {
    if (scn->compat == MODEL_COMPAT_CORRECTED && !scn->given[SCN_OPTIMIZER_STEP]) {
        scn->training.optimizer_step = 1;
        scn->given[SCN_OPTIMIZER_STEP] = 1;
        scn->origin[SCN_OPTIMIZER_STEP] = SCN_FROM_DERIVED;
    }
}

void cmd_run_scenario_opts(const scenario_t *scn, run_opts_t *o) {
    o->interleave = scn->training.interleave;
    o->pipeline = (int)scn->training.pipeline;
    if (scn->given[SCN_OPTIMIZER_STEP]) {
        snprintf(o->optimizer_text, sizeof o->optimizer_text, "%s",
                 scn->training.optimizer_step ? "on" : "off");
        o->optimizer = o->optimizer_text;
    }
}

int cmd_parse_max_memory(const char *text, double *gb_out, cli_diag_t *d) {
    char *end = NULL;
    const double gb = strtod(text, &end);
    if (!text[0] || *end || !(gb > 0.0 && gb < 1e9))
        return cli_fail(d, CLI_EUSAGE, "--max-memory: \"%.60s\"; allowed: a number of GB > 0", text);
    *gb_out = gb;
    return CLI_OK;
}

void cmd_sim_config(const scenario_t *scn, const char *placement, step_config_t *c) {
    step_config_default(c);
    if (placement)
        (void)step_placement_parse(placement, &c->placement); /* checked by cli_check_placement */
    if (scn->given[SCN_OPTIMIZER_STEP])
        c->optimizer_step = scn->training.optimizer_step ? 1 : 0;
}

int cmd_run(const cli_args_t *a, FILE *out, FILE *err, cli_diag_t *d) {
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
    o.warn = err;
    o.baseline = v[CLI_OPT_BASELINE];
    o.entry_costs = v[CLI_OPT_ENTRY_COSTS];
    o.expert_skew = v[CLI_OPT_EXPERT_SKEW];
    o.layers = cli_has(a, CLI_OPT_LAYERS);
    o.workload = v[CLI_OPT_WORKLOAD];
    o.compute = v[CLI_OPT_COMPUTE];
    o.export_et = v[CLI_OPT_EXPORT_ET];
    int rc = cli_check_placement(a, d);
    if (!rc)
        rc = cli_apply_scenario(a, &scn, NULL, d);
    else
        memset(&scn, 0, sizeof scn);
    if (!rc && !scn.jobs) /* each job's own scenario: cmd_jobs.c */
        cmd_sim_scenario(&scn);
    if (!rc)
        cmd_run_scenario_opts(&scn, &o);
    if (!rc) /* validate the run's own options before anything is built */
        rc = cmd_run_check(&o, d);
    if (!rc && scn.jobs && (o.workload || o.export_et))
        rc = cli_fail(d, CLI_EUSAGE, "%s: not with a scenario of several jobs; allowed: a one-job scenario",
                      o.workload ? "--workload" : "--export-et");
    if (!rc && scn.jobs && o.layers)
        rc = cli_fail(d, CLI_EUSAGE,
                      "--layers: not with a scenario of several jobs; allowed: a one-job scenario");
    if (!rc && scn.jobs) /* several jobs on one fabric: cmd_jobs.c */
        rc = cmd_run_jobs(a, &scn, &o, out, d);
    else if (!rc) {
        run_result_t *r = NULL;
        cli_progress_t progress;
        cli_progress_init(&progress, err, "run", cli_has(a, CLI_OPT_QUIET), 0);
        o.progress = progress.on ? &progress : NULL; /* no callback when nothing is shown */
        rc = cmd_run_compute(&scn, &o, &r, d);
        cli_progress_end(&progress);
        if (!rc && print_run(out, r, &scn, &o) != 0)
            rc = cli_fail(d, CLI_ERUNTIME, "run: out of memory while printing the JSON result");
        run_result_free(r);
    }
    scenario_destroy(&scn);
    return rc;
}
