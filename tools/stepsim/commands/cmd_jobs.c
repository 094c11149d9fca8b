/* cmd_jobs.c - `stepsim run` on a scenario with "jobs": each job resolved as a scenario of its own,
 * one topology sized to hold them all, the jobs placed on it by their allocation policies, simulated
 * together on one engine (step_simulate_jobs), then each alone on the same GPUs (the baseline, unless
 * --baseline off). output/print_jobs.c prints the result; docs/what-if.md ("Several jobs on one
 * fabric") describes the policies.
 *
 * Allocation (a job's GPUs; docs/cli.md):
 * - The unit is a node of the topology (its NVLink domain, D GPUs) when the job's GPU count is a
 *   multiple of D; else a GPU, which only a job whose layout puts no group inside a domain (every nv
 *   count 1) may use: a layout with nv counts above 1 needs whole domains (refused otherwise).
 * - Explicit GPU ranges are placed first (out of range or on another job's GPU: refused); then the
 *   other jobs in order, each over the units still wholly free, in id order (F of them, n needed):
 *   packed takes the first n; spread the units at positions floor(i F / n), i = 0..n-1 (as far apart
 *   as possible: on a tree whose leaves hold consecutive nodes, over the leaves); random n units
 *   drawn without replacement by a Fisher-Yates shuffle driven by splitmix64 keyed by (seed, job
 *   index). A job's GPU r is its r-th GPU in ascending order, so its domain r is one node.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checked.h"
#include "jobs.h"
#include "outfile.h"
#include "print.h"
#include "progress.h"
#include "scenario_jobs.h"
#include "simpoint.h"
#include "topo_json.h"
#include "topo_list.h"

/* ---- allocation ----------------------------------------------------------------------------------- */

/* splitmix64 as a generator: the state advances by its increment, each output is step_splitmix64's
 * mix of the state before. */
static uint64_t splitmix64(uint64_t *x) {
    const uint64_t out = step_splitmix64(*x);
    *x += 0x9e3779b97f4a7c15ULL;
    return out;
}

static int64_t nv_product(const model_parallel_t *p) {
    return p->nv_tp1 * p->nv_tp2 * p->nv_pp * p->nv_dp;
}

static int cmp_i32(const void *a, const void *b) {
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* "0-63,128-191" of ascending ids. */
static void ranges_text(const int32_t *g, int64_t n, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int64_t i = 0; i < n;) {
        int64_t k = i;
        while (k + 1 < n && g[k + 1] == g[k] + 1)
            k++;
        int w = k > i ? snprintf(buf + used, size - used, "%s%d-%d", used ? "," : "", (int)g[i], (int)g[k])
                      : snprintf(buf + used, size - used, "%s%d", used ? "," : "", (int)g[i]);
        if (w < 0 || (size_t)w >= size - used) {
            snprintf(buf + (size > 4 ? size - 4 : 0), size > 4 ? 4 : size, "...");
            return;
        }
        used += (size_t)w;
        i = k + 1;
    }
}

/* Place every job (see the file comment); owner[g] is the job on topology GPU g, -1 free. */
static int allocate(const scn_jobs_t *sj, jobs_result_t *r, int32_t *owner, cli_diag_t *d) {
    const int64_t total = r->topology_gpus, D = r->gpus_per_node;
    for (int64_t g = 0; g < total; g++)
        owner[g] = -1;
    for (int pass = 0; pass < 2; pass++)
        for (int32_t i = 0; i < r->n; i++) {
            const scn_job_t *sjob = &sj->job[i];
            jobs_job_t *j = &r->job[i];
            const int64_t n = j->job.gpus;
            const int whole = nv_product(&j->job.par) > 1;
            if ((sjob->alloc == SCN_ALLOC_GPUS) != (pass == 0))
                continue;
            if (whole && n % D != 0)
                return cli_fail(
                    d, CLI_EUSAGE,
                    "%s.gpus: %" PRId64 " is not a whole number of the topology's %" PRId64
                    "-GPU nodes, which the job's layout needs (its nv counts put groups in NVLink "
                    "domains); allowed: a multiple of %" PRId64 ", or nv counts of 1",
                    sjob->where, n, D, D);
            j->gpus = malloc((size_t)n * sizeof *j->gpus);
            if (!j->gpus)
                return cli_fail(d, CLI_ERUNTIME, "%s: out of memory", sjob->where);
            if (sjob->alloc == SCN_ALLOC_GPUS) {
                for (int64_t k = 0; k < n; k++) {
                    const int32_t g = sjob->gpus[k];
                    if (g >= total)
                        return cli_fail(d, CLI_EUSAGE,
                                        "%s.allocation: GPU %d is beyond the topology's last GPU (%" PRId64
                                        "); allowed: 0-%" PRId64 ", or a larger topology",
                                        sjob->where, (int)g, total - 1, total - 1);
                    if (owner[g] >= 0)
                        return cli_fail(
                            d, CLI_EUSAGE,
                            "%s.allocation: GPU %d is also job %s's; allowed: GPUs of no other job",
                            sjob->where, (int)g, r->job[owner[g]].name);
                    if (whole && (k % D == 0 ? g % D != 0 : g != sjob->gpus[k - 1] + 1))
                        return cli_fail(d, CLI_EUSAGE,
                                        "%s.allocation: \"%.60s\" splits an NVLink domain at GPU %d, and the "
                                        "job's layout puts groups in domains; allowed: whole %" PRId64
                                        "-GPU nodes (ranges that start at a multiple of %" PRId64 ")",
                                        sjob->where, sjob->alloc_text, (int)g, D, D);
                    owner[g] = i;
                    j->gpus[k] = g;
                }
                continue;
            }
            const int64_t unit = n % D == 0 ? D : 1, need = n / unit, units = total / unit;
            int32_t *cand = malloc((size_t)(units > 0 ? units : 1) * sizeof *cand);
            if (!cand)
                return cli_fail(d, CLI_ERUNTIME, "%s: out of memory", sjob->where);
            int64_t f = 0;
            for (int64_t u = 0; u < units; u++) {
                int free_unit = 1;
                for (int64_t k = 0; k < unit; k++)
                    free_unit &= owner[u * unit + k] < 0;
                if (free_unit)
                    cand[f++] = (int32_t)u;
            }
            if (f < need) {
                free(cand);
                return cli_fail(d, CLI_EUSAGE,
                                "%s.gpus: %" PRId64 " GPUs, but only %" PRId64 " of the topology's %" PRId64
                                " are free in whole %s; allowed: a larger topology "
                                "(its \"gpus\", or the scenario's gpus)",
                                sjob->where, n, f * unit, total, unit > 1 ? "nodes" : "GPUs");
            }
            if (sjob->alloc == SCN_ALLOC_SPREAD) {
                for (int64_t k = 0; k < need; k++)
                    cand[k] = cand[(k * f) / need]; /* positions increase: in-place is safe */
            } else if (sjob->alloc == SCN_ALLOC_RANDOM) {
                uint64_t state = r->seed ^ (0xd1b54a32d192ed03ULL * (uint64_t)(i + 1));
                for (int64_t k = 0; k < need; k++) {
                    const int64_t pick = k + (int64_t)(splitmix64(&state) % (uint64_t)(f - k));
                    const int32_t t = cand[k];
                    cand[k] = cand[pick];
                    cand[pick] = t;
                }
                qsort(cand, (size_t)need, sizeof *cand, cmp_i32);
            }
            for (int64_t k = 0; k < need; k++)
                for (int64_t q = 0; q < unit; q++) {
                    const int32_t g = (int32_t)(cand[k] * unit + q);
                    owner[g] = i;
                    j->gpus[k * unit + q] = g;
                }
            free(cand);
        }
    for (int32_t i = 0; i < r->n; i++)
        ranges_text(r->job[i].gpus, r->job[i].job.gpus, r->job[i].gpus_text, sizeof r->job[i].gpus_text);
    int64_t idle = 0;
    for (int64_t g = 0; g < total; g++)
        idle += owner[g] < 0;
    r->idle_gpus = idle;
    return CLI_OK;
}

/* ---- the trace -------------------------------------------------------------------------------------- */

typedef struct jobs_trace {
    const jobs_result_t *r;
    const topo_t *topo;
    const step_fabric_t *fabric;
    trace_writer_t *w;
    const run_opts_t *o;
    cli_diag_t *d;
    char name[160];
    outfile_t out; /* the trace's temporary file (out.slot -1: none) */
} jobs_trace_t;

static int op_args(void *ctx, const sim_op_info_t *op, trace_op_args_t *out) {
    jobs_trace_t *c = ctx;
    const int32_t j = step_fabric_job_of_gpu(c->fabric, op->gpu);
    return j < 0 ? 0 : cmd_trace_op_args(step_fabric_step(c->fabric, j), op, out, c->name, sizeof c->name);
}

static void link_name(void *ctx, int32_t link, char *buf, size_t size) {
    const jobs_trace_t *c = ctx;
    cmd_trace_link_name(c->topo, link, buf, size);
}

static int32_t gpu_group(void *ctx, int32_t gpu) {
    const jobs_trace_t *c = ctx;
    return step_fabric_job_of_gpu(c->fabric, gpu);
}

static void group_name(void *ctx, int32_t group, char *buf, size_t size) {
    const jobs_trace_t *c = ctx;
    snprintf(buf, size, "job %s", c->r->job[group].name);
}

static void memory_sample(void *ctx, sim_time_ps_t t, int32_t gpu, double gb) {
    jobs_trace_t *c = ctx;
    trace_writer_counter(c->w, t, gpu, "memory_gb", gb);
}

static int attach_trace(void *ctx, step_fabric_t *f) {
    jobs_trace_t *c = ctx;
    char err[300];
    trace_ranks_t ranks;
    memset(&ranks, 0, sizeof ranks);
    c->fabric = f;
    int rc = trace_ranks_parse(c->o->trace_ranks ? c->o->trace_ranks : "all", (int32_t)c->r->topology_gpus,
                               &ranks, err, sizeof err);
    if (rc)
        return cli_fail(c->d, rc == TRACE_ENOMEM ? CLI_ERUNTIME : CLI_EUSAGE, "--trace-ranks: %s", err);
    const trace_options_t opt = {.n_gpus = (int32_t)c->r->topology_gpus,
                                 .gpus_per_node = c->r->gpus_per_node,
                                 .streams_per_gpu = 7,
                                 .ranks = &ranks,
                                 .links = NULL,
                                 /* every link's counter on small fabrics, as run does */
                                 .n_links = topo_link_count(c->topo) <= 4096 ? TRACE_LINKS_ALL : 0,
                                 .link_name = link_name,
                                 .op_args = op_args,
                                 .n_groups = c->r->n,
                                 .gpu_group = gpu_group,
                                 .group_name = group_name,
                                 .ctx = c};
    rc = outfile_reserve(&c->out, "--trace", c->o->trace, c->d);
    if (rc) {
        trace_ranks_destroy(&ranks);
        return rc;
    }
    rc = trace_writer_open(outfile_tmp_path(&c->out), &opt, &c->w, err, sizeof err);
    trace_ranks_destroy(&ranks);
    if (rc)
        outfile_discard(&c->out);
    if (rc)
        return cli_fail(c->d, rc == TRACE_EINVAL ? CLI_EUSAGE : CLI_ERUNTIME, "--trace %s: %s", c->o->trace,
                        rc == TRACE_ENOMEM ? "out of memory" : err);
    sim_observer_t obs;
    trace_writer_observer(c->w, &obs);
    step_fabric_set_observer(f, &obs);
    for (int32_t j = 0; j < step_fabric_jobs(f); j++)
        step_set_memory_callback(step_fabric_step(f, j), memory_sample, c);
    return CLI_OK;
}

/* ---- running ---------------------------------------------------------------------------------------- */

static void jobs_result_free(jobs_result_t *r) {
    if (!r)
        return;
    for (int32_t i = 0; i < r->n; i++)
        free(r->job[i].gpus);
    free(r->job);
    step_jobs_result_destroy(&r->sim);
    free(r);
}

static int sim_fail(int s, const step_jobs_result_t *sr, const char *where, cli_diag_t *d) {
    switch (sr->failed_at) {
    case STEP_SIM_AT_NETWORK:
        return cli_fail(d, CLI_EUSAGE, "%s: %s", where, sr->error);
    case STEP_SIM_AT_BUILD:
        return cli_fail(d, s == SIM_EINVAL ? CLI_EUSAGE : CLI_ERUNTIME, "simulation: %s", sr->error);
    case STEP_SIM_AT_HOOK:
        return s;
    default:
        return cli_fail(d, CLI_ERUNTIME, "simulation: %s", sr->error);
    }
}

/* The jobs resolved and the run's options checked, before any topology: r's jobs, their
 * configurations, *links (--links) and *need (the fabric's GPUs). */
static int prepare(const cli_args_t *a, scenario_t *scn, const run_opts_t *o, jobs_result_t *r, int *links,
                   int64_t *need_out, cli_diag_t *d) {
    const scn_jobs_t *sj = scn->jobs;
    static const char *const fabric_opts[] = {"--topology", "--slow-links", "--fail-links", "--seed"};
    for (int i = 0; i < a->n_scenario; i++) {
        int fabric = 0;
        for (size_t k = 0; k < sizeof fabric_opts / sizeof *fabric_opts; k++)
            fabric |= strcmp(a->scenario_opt[i]->name, fabric_opts[k]) == 0;
        if (!fabric)
            return cli_fail(d, CLI_EUSAGE,
                            "%s: a scenario with jobs takes its model, system and layout from each job; "
                            "allowed: --topology, --slow-links, --fail-links, --seed and run's own options",
                            a->scenario_opt[i]->name);
    }
    if (scn->perturb.n_slow > 0 || scn->perturb.jitter.given)
        return cli_fail(d, CLI_EUSAGE,
                        "%s: perturbations.%s: slowed GPUs and jitter are not simulated beside jobs; "
                        "allowed: perturbations.links and perturbations.seed",
                        scn->file[0] ? scn->file : "scenario", scn->perturb.n_slow > 0 ? "gpus" : "jitter");
    int rc = cmd_run_config(o, &r->cfg, links, d);
    if (rc)
        return rc;
    if (r->cfg.comm != SIM_COMM_NETWORK)
        return cli_fail(d, CLI_EUSAGE, "--comm: \"analytic\": jobs meet only on a network; allowed: network");
    if (r->cfg.collapse == STEP_COLLAPSE_APPROX)
        return cli_fail(d, CLI_EUSAGE,
                        "--collapse: \"approx\": jobs on one fabric simulate every GPU; allowed: off, auto");
    r->baseline = 1;
    if (a->value[CLI_OPT_BASELINE]) {
        if (strcmp(a->value[CLI_OPT_BASELINE], "off") == 0)
            r->baseline = 0;
        else if (strcmp(a->value[CLI_OPT_BASELINE], "on") != 0)
            return cli_fail(d, CLI_EUSAGE, "--baseline: \"%.60s\" is not allowed; allowed: on, off",
                            a->value[CLI_OPT_BASELINE]);
    }
    r->n = sj->n;
    r->seed = scn->perturb.seed; /* perturbations.seed, --seed */
    r->job = calloc((size_t)sj->n, sizeof *r->job);
    if (!r->job)
        return cli_fail(d, CLI_ERUNTIME, "run: out of memory");
    model_system_t sys;
    scenario_system(scn, &sys);
    int64_t need = 0, sum = 0; /* the fabric's GPUs: the scenario's gpus, else enough for every job */
    for (int32_t i = 0; i < r->n && !rc; i++) {
        scn_job_t *sjob = &sj->job[i];
        jobs_job_t *j = &r->job[i];
        snprintf(j->name, sizeof j->name, "%s", sjob->name);
        snprintf(j->allocation, sizeof j->allocation, "%s", sjob->alloc_text);
        cmd_sim_scenario(&sjob->scn); /* the job's estimate is of the step simulated */
        rc = scenario_resolve(&sjob->scn, &j->job, d);
        if (!rc && j->job.system.nvlink_size != sys.nvlink_size)
            rc = cli_fail(d, CLI_EUSAGE,
                          "%s.nvlink_size: %" PRId64 ", but the fabric's nodes (the scenario's nvlink_size) "
                          "hold %" PRId64 " GPUs; allowed: %" PRId64,
                          sjob->where, j->job.system.nvlink_size, sys.nvlink_size, sys.nvlink_size);
        if (!rc && model_estimate(&j->job, &j->est) != MODEL_OK)
            rc = cli_fail(d, CLI_EUSAGE, "%s: the model rejected this configuration", sjob->where);
        if (rc)
            break;
        run_opts_t jo = *o; /* the job's own interleave and optimizer step, unless the options say */
        cmd_run_scenario_opts(&sjob->scn, &jo);
        rc = cmd_run_config(&jo, &j->cfg, links, d);
        sum = checked_add_sat_i64(sum, j->job.gpus); /* a saturated sum is refused as too many GPUs */
        for (int64_t k = 0; sjob->alloc == SCN_ALLOC_GPUS && k < sjob->n_gpus; k++)
            need = sjob->gpus[k] + 1 > need ? sjob->gpus[k] + 1 : need;
    }
    if (rc)
        return rc;
    if (scn->given[SCN_GPUS] && scn->value[SCN_GPUS] < sum)
        return cli_fail(d, CLI_EUSAGE,
                        "%s: gpus: %" PRId64 " is fewer than the jobs' %" PRId64
                        " GPUs; allowed: at least %" PRId64 " (the fabric's size), or leave it out",
                        scn->file, scn->value[SCN_GPUS], sum, sum);
    if (!scn->given[SCN_GPUS]) /* sized to hold every job */
        need = sum > need ? sum : need;
    else
        need = scn->value[SCN_GPUS];
    *need_out = need;
    return CLI_OK;
}

/* The prepared jobs on the topology spec for need GPUs: placed, simulated together, each alone. */
static int run_on(const scenario_t *scn, const topo_spec_t *spec, const char *where, const run_opts_t *o,
                  int links, int64_t need, jobs_result_t *r, cli_diag_t *d) {
    const scn_jobs_t *sj = scn->jobs;
    model_system_t sys;
    scenario_system(scn, &sys);
    /* the fabric: the topology for `need` GPUs of the scenario's system */
    model_job_t fabric = r->job[0].job;
    fabric.system = sys;
    fabric.gpus = need;
    topo_t *topo = NULL;
    int rc = simpoint_topology(&fabric, spec, &scn->perturb, where, &topo, d); /* the links perturbed */
    if (rc)
        return rc;
    snprintf(r->topology, sizeof r->topology, "%s", topo_name(topo));
    r->topology_gpus = topo_gpu_count(topo);
    r->gpus_per_node = (int32_t)(r->topology_gpus / topo_node_count(topo));
    r->calibrated = !o->calibration || strcmp(o->calibration, "nccl") == 0;
    int32_t *owner = malloc((size_t)r->topology_gpus * sizeof *owner);
    step_fabric_job_t *fj = calloc((size_t)r->n, sizeof *fj);
    if (!owner || !fj)
        rc = cli_fail(d, CLI_ERUNTIME, "run: out of memory");
    if (!rc)
        rc = allocate(sj, r, owner, d);
    free(owner);
    for (int32_t i = 0; !rc && i < r->n; i++)
        fj[i] = (step_fabric_job_t){&r->job[i].job, r->job[i].gpus, r->job[i].cfg};
    jobs_trace_t tc = {r, topo, NULL, NULL, o, d, "", {NULL, NULL, -1, NULL}};
    step_sim_options_t so;
    memset(&so, 0, sizeof so);
    so.step = r->cfg;
    so.calibrate = r->calibrated;
    so.links = links;
    so.before_run_fabric = o->trace ? attach_trace : NULL;
    so.ctx = &tc;
    so.progress = o->progress ? cli_progress_sim : NULL;
    so.progress_ctx = o->progress;
    if (!rc) {
        const int s = step_simulate_jobs(fj, r->n, topo, &so, &r->sim);
        if (s)
            rc = sim_fail(s, &r->sim, where, d);
    }
    if (tc.w)
        rc = cmd_trace_finish(tc.w, &tc.out, rc, o->trace, &r->trace_stats, &r->traced, d);
    outfile_discard(&tc.out);
    for (int32_t i = 0; !rc && i < r->n; i++)
        r->job[i].res = r->sim.jobs[i];
    /* the baseline: each job alone on the same GPUs of the same topology */
    so.before_run_fabric = NULL;
    so.links = 0;
    for (int32_t i = 0; !rc && r->baseline && i < r->n; i++) {
        step_jobs_result_t alone;
        const int s = step_simulate_jobs(&fj[i], 1, topo, &so, &alone);
        if (s)
            rc = sim_fail(s, &alone, where, d);
        else {
            r->job[i].alone = alone.jobs[0];
            r->job[i].has_alone = 1;
        }
        step_jobs_result_destroy(&alone);
    }
    free(fj);
    topo_free(topo);
    return rc;
}

int cmd_run_jobs(const cli_args_t *a, scenario_t *scn, const run_opts_t *o, FILE *out, cli_diag_t *d) {
    jobs_result_t *r = calloc(1, sizeof *r);
    if (!r)
        return cli_fail(d, CLI_ERUNTIME, "run: out of memory");
    int links = 5;
    int64_t need = 0;
    int rc = prepare(a, scn, o, r, &links, &need, d);
    if (!rc)
        rc = run_on(scn, &scn->topology, scn->topology.where, o, links, need, r, d);
    if (!rc && print_jobs(out, r, scn, o) != 0)
        rc = cli_fail(d, CLI_ERUNTIME, "run: out of memory while printing the JSON result");
    jobs_result_free(r);
    return rc;
}

/* ---- compare --------------------------------------------------------------------------------------- */

int cmd_compare_jobs(const cli_args_t *a, scenario_t *scn, const topo_item_t *topos, int n_topo, FILE *out,
                     cli_diag_t *d) {
    static const int UNSUPPORTED[] = {CLI_OPT_CSV, CLI_OPT_PLOT};
    for (size_t i = 0; i < sizeof UNSUPPORTED / sizeof *UNSUPPORTED; i++)
        if (a->value[UNSUPPORTED[i]])
            return cli_fail(d, CLI_EUSAGE, "%s: not with jobs; allowed: the text or --json tables",
                            UNSUPPORTED[i] == CLI_OPT_CSV ? "--csv" : "--plot");
    run_opts_t o; /* run's defaults, with compare's placement and collapse */
    memset(&o, 0, sizeof o);
    o.placement = a->value[CLI_OPT_PLACEMENT];
    o.collapse = a->value[CLI_OPT_COLLAPSE];
    o.max_memory = a->value[CLI_OPT_MAX_MEMORY];
    cmd_run_scenario_opts(scn, &o);
    jobs_result_t *base = calloc(1, sizeof *base);
    jobs_result_t **rs = calloc((size_t)n_topo, sizeof *rs);
    if (!base || !rs) {
        free(base);
        free(rs);
        return cli_fail(d, CLI_ERUNTIME, "compare: out of memory");
    }
    int links = 5;
    int64_t need = 0;
    int rc = prepare(a, scn, &o, base, &links, &need, d);
    for (int t = 0; !rc && t < n_topo; t++) {
        rs[t] = calloc(1, sizeof *rs[t]);
        if (rs[t]) {
            *rs[t] = *base;
            memset(&rs[t]->sim, 0, sizeof rs[t]->sim);
            rs[t]->job = malloc((size_t)base->n * sizeof *rs[t]->job);
        }
        if (!rs[t] || !rs[t]->job) {
            if (rs[t])
                rs[t]->n = 0;
            rc = cli_fail(d, CLI_ERUNTIME, "compare: out of memory");
            break;
        }
        memcpy(rs[t]->job, base->job, (size_t)base->n * sizeof *rs[t]->job);
        char where[96];
        snprintf(where, sizeof where, "--topologies: %s", topos[t].label);
        rc = run_on(scn, &topos[t].spec, where, &o, links, need, rs[t], d);
    }
    if (!rc) {
        const char *labels[64];
        for (int t = 0; t < n_topo && t < 64; t++)
            labels[t] = topos[t].label;
        if (print_jobs_compare(out, (const jobs_result_t *const *)rs, labels, n_topo, scn,
                               cli_has(a, CLI_OPT_JSON)) != 0)
            rc = cli_fail(d, CLI_ERUNTIME, "compare: out of memory while printing the JSON result");
    }
    for (int t = 0; t < n_topo; t++)
        jobs_result_free(rs[t]);
    free(rs);
    jobs_result_free(base);
    return rc;
}
