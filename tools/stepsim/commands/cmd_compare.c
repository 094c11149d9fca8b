/* cmd_compare.c - `stepsim compare` (one workload on several topologies, optionally over GPU counts)
 * and `stepsim validate` without --measured (the waterfall from the closed form to the simulated
 * step). Both simulate through simpoint.h (step_simulate) into the results of compare.h;
 * output/print_compare.c prints them (text or --json) and writes the --csv table and gnuplot plots.
 *
 * The waterfall's totals are analytic estimate -> simulation with analytic communication ->
 * simulation with network communication on ideal -> on the chosen topology; every delta is the
 * difference of consecutive totals, so the deltas add up to the simulated step exactly (in floating
 * point the sum is recomputed from the same doubles; the test checks it to 1e-9 relative).
 * Every --topologies entry is parsed when the option is read (topo_json.h: the same meaning as in
 * every command; the shortcuts fat-tree, fat-tree-2:1, rail, dragonfly and dragonfly-ugal are sized
 * to the job's GPUs and its system's NVLink domain, docs/compare.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "compare.h"
#include "jobs.h"
#include "print.h"
#include "progress.h"
#include "simpoint.h"
#include "topo_json.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_OPTS 64

/* ---- arguments ----------------------------------------------------------------------------------- */

/* The parsed options as compare and the waterfall read them. */
typedef struct cmp_args {
    const cli_args_t *args; /* the scenario file and options */
    const char *gpus_list;  /* compare: --gpus with a comma (the scaling view), else NULL */
    const char *topologies, *csv, *plot, *placement;
    int baseline; /* --baseline on (default) */
    step_collapse_t collapse;
    double max_memory_gb; /* 0: the default budget */
    int json;
    cli_progress_t *progress; /* stderr's progress display */
} cmp_args_t;

static int from_args(const cli_args_t *p, cmp_args_t *a, cli_diag_t *d) {
    memset(a, 0, sizeof *a);
    a->args = p;
    const char *gpus = cli_scenario_value(p, "--gpus");
    if (p->cmd == CLI_CMD_COMPARE && gpus && strchr(gpus, ','))
        a->gpus_list = gpus;
    a->topologies = p->value[CLI_OPT_TOPOLOGIES];
    a->csv = p->value[CLI_OPT_CSV];
    a->plot = p->value[CLI_OPT_PLOT];
    a->placement = p->value[CLI_OPT_PLACEMENT];
    a->json = cli_has(p, CLI_OPT_JSON);
    const char *baseline = p->value[CLI_OPT_BASELINE];
    a->baseline = 1;
    if (baseline && strcmp(baseline, "on") != 0 && strcmp(baseline, "off") != 0) {
        static const char *const OFF_ON[] = {"off", "on"};
        const char *s = cli_suggest(baseline, OFF_ON, 2);
        return cli_fail(d, CLI_EUSAGE, "--baseline: \"%.60s\" is not allowed%s%s%s; allowed: off, on",
                        baseline, s ? " (did you mean \"" : "", s ? s : "", s ? "\"?)" : "");
    }
    if (baseline)
        a->baseline = strcmp(baseline, "on") == 0;
    const char *collapse = p->value[CLI_OPT_COLLAPSE];
    if (collapse) {
        const int rc = cmd_parse_collapse(collapse, &a->collapse, d);
        if (rc)
            return rc;
    }
    const char *max_memory = p->value[CLI_OPT_MAX_MEMORY];
    if (max_memory) {
        const int rc = cmd_parse_max_memory(max_memory, &a->max_memory_gb, d);
        if (rc)
            return rc;
    }
    if (a->plot) {
        const char *dot = strrchr(a->plot, '.');
        if (!dot || (strcmp(dot, ".png") != 0 && strcmp(dot, ".svg") != 0))
            return cli_fail(d, CLI_EUSAGE,
                            "--plot: \"%.60s\" has no .png or .svg extension; allowed: FILE.png, FILE.svg",
                            a->plot);
    }
    return cli_check_placement(p, d);
}

/* A fresh scenario: defaults, the file, the options; gpus > 0 overrides --gpus. */
static int load_scenario(const cmp_args_t *a, int64_t gpus, scenario_t *scn, cli_diag_t *d) {
    int rc = cli_apply_scenario(a->args, scn, a->gpus_list ? "--gpus" : NULL, d);
    if (!rc && gpus > 0) {
        char v[32];
        snprintf(v, sizeof v, "%" PRId64, gpus);
        rc = scenario_set_option(scn, "--gpus", v, d);
    }
    if (!rc && !scn->jobs) /* the estimate beside the simulations is of the step they simulate */
        cmd_sim_scenario(scn);
    return rc;
}

/* Simulation k of n (progress: what it is on). */
static int simulate_on(const model_job_t *job, const step_config_t *cfg, const topo_item_t *it,
                       const scn_perturb_t *perturb, int summary, cli_progress_t *progress, int64_t k,
                       int64_t n, simpoint_t *out, cli_diag_t *d) {
    char where[96], what[96];
    snprintf(where, sizeof where, "--topologies: %s", it->label);
    snprintf(what, sizeof what, "%.60s, %" PRId64 " GPUs", it->label, job->gpus);
    cli_progress_stage(progress, k, n, what);
    return simpoint_run(job, cfg, &it->spec, perturb, where, summary, progress, out, d);
}

/* ---- compare ------------------------------------------------------------------------------------------ */

static int parse_gpus_list(const char *list, cmp_run_t *r, cli_diag_t *d) {
    const char *p = list;
    r->n_gpus = 0;
    while (*p) {
        char *end = NULL;
        errno = 0;
        const long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 1 || (*end && *end != ','))
            return cli_fail(d, CLI_EUSAGE,
                            "--gpus: \"%.60s\" is not a list of GPU counts; allowed: e.g. 512,1024,2048",
                            list);
        if (r->n_gpus >= MAX_GPUS)
            return cli_fail(d, CLI_EUSAGE, "--gpus: more than %d counts; allowed: at most %d", MAX_GPUS,
                            MAX_GPUS);
        r->gpus[r->n_gpus++] = (int64_t)v;
        p = *end ? end + 1 : end;
    }
    return CLI_OK;
}

/* The perturbations of scn for job into cfg (*factors: the compute factors, freed by the caller
 * after the simulations); with base, the same configuration for the scenario without them. */
static int perturb_config(const scenario_t *scn, const model_job_t *job, step_config_t *cfg, double **factors,
                          step_config_t *base, cli_diag_t *d) {
    int rc = scenario_perturb_step(scn, job, cfg, factors, d);
    if (!rc && base) {
        scenario_t *plain = malloc(sizeof *plain);
        double *none = NULL;
        if (!plain)
            return cli_fail(d, CLI_ERUNTIME, "compare: out of memory");
        *plain = *scn;
        scenario_clear_perturbations(plain);
        *base = *cfg;
        rc = scenario_perturb_step(plain, job, base, &none, d);
        free(none);
        free(plain);
    }
    return rc;
}

static int compare_run(const cmp_args_t *a, cmp_run_t *r, FILE *err, cli_diag_t *d) {
    scenario_t scn;
    double *factors = NULL;
    step_config_t base;
    /* with a scaling list, the table is of its last (largest) count */
    int rc = load_scenario(a, r->n_gpus > 0 ? r->gpus[r->n_gpus - 1] : 0, &scn, d);
    if (!rc)
        rc = scenario_resolve(&scn, &r->job, d);
    r->training_given = !rc && scenario_optimizer_step_given(&scn);
    if (!rc)
        print_compare_header(r->header, sizeof r->header, "compare", &r->job, &scn);
    if (!rc) {
        cmd_sim_config(&scn, a->placement, &r->cfg);
        r->perturb = scn.perturb;
        /* one scenario on several kinds: a class a topology lacks (global on a tree) leaves it be */
        for (int i = 0; i < r->perturb.links.n; i++)
            r->perturb.links.e[i].absent_ok = 1;
        r->cfg.collapse = a->collapse;
        r->cfg.max_memory_gb = a->max_memory_gb;
        r->perturbed = scenario_has_perturbations(&scn);
        r->seed = scn.perturb.seed_given ? scn.perturb.seed : 1;
        r->jitter = scn.perturb.jitter.given ? (int)scn.perturb.jitter.dist : 0;
        r->jitter_cv = scn.perturb.jitter.cv;
        if (r->perturbed && a->collapse == STEP_COLLAPSE_APPROX)
            rc = cli_fail(d, CLI_EUSAGE,
                          "--collapse: approx with perturbations, which make identical ranks "
                          "differ; allowed: auto, off (every GPU simulated)");
        if (!rc)
            rc = perturb_config(&scn, &r->job, &r->cfg, &factors, r->perturbed && a->baseline ? &base : NULL,
                                d);
        r->slowed_gpus = scenario_slowed_gpus(factors, r->job.gpus);
    }
    scenario_destroy(&scn);
    if (rc)
        return rc;
    model_estimate_t *e = malloc(sizeof *e);
    if (!e)
        return cli_fail(d, CLI_ERUNTIME, "compare: out of memory");
    rc = model_estimate(&r->job, e) == MODEL_OK
             ? CLI_OK
             : cli_fail(d, CLI_EUSAGE, "the model rejected this configuration");
    if (!rc)
        rc = cmd_require_finite_estimate(e, &r->job, "closed form", d);
    if (!rc)
        rc = cmd_require_simulable(e, &r->job, d);
    if (!rc)
        r->analytic = e->summary;
    const int with_base = r->perturbed && a->baseline;
    const int64_t n_sims = (int64_t)r->n_topo * (1 + r->n_gpus + with_base);
    for (int i = 0; !rc && i < r->n_topo; i++) {
        rc = simulate_on(&r->job, &r->cfg, &r->topo[i], &r->perturb, 1, a->progress, i, n_sims, &r->row[i].p,
                         d);
        if (!rc && with_base) { /* the same topology without its link perturbations either */
            simpoint_t b;
            rc = simulate_on(&r->job, &base, &r->topo[i], NULL, 0, a->progress,
                             (int64_t)r->n_topo * (1 + r->n_gpus) + i, n_sims, &b, d);
            r->row[i].has_baseline = !rc;
            r->row[i].baseline_step_s = b.step_time_s;
        }
        if (rc)
            break;
        r->approximate |= !r->row[i].p.collapse_exact;
        cmp_row_t *w = &r->row[i];
        w->throughput = w->p.step_time_s > 0 ? (double)r->job.global_batch / w->p.step_time_s : 0;
        w->slowdown = r->row[0].p.step_time_s > 0 ? w->p.step_time_s / r->row[0].p.step_time_s : 0;
        w->cost_units = simpoint_cost_units(&w->p);
        w->perf_per_kcost = w->cost_units > 0 ? 1000.0 * w->throughput / w->cost_units : 0;
    }
    /* the scaling view: a failing point is reported in its cell, not fatal */
    for (int g = 0; !rc && g < r->n_gpus; g++) {
        model_job_t job;
        cli_diag_t pd;
        pd.msg[0] = '\0';
        int prc = load_scenario(a, r->gpus[g], &scn, &pd);
        if (!prc)
            prc = scenario_resolve(&scn, &job, &pd);
        scenario_destroy(&scn);
        if (!prc && model_estimate(&job, e) != MODEL_OK)
            prc = cli_fail(&pd, CLI_EUSAGE, "the model rejected this configuration");
        if (!prc)
            prc = cmd_require_finite_estimate(e, &job, "closed form", &pd);
        if (prc) {
            snprintf(r->scale_analytic_error[g], sizeof r->scale_analytic_error[g], "%.159s", pd.msg);
            for (int i = 0; i < r->n_topo; i++)
                snprintf(r->scale[g][i].error, sizeof r->scale[g][i].error, "%.159s", pd.msg);
            continue;
        }
        r->scale_analytic[g] = e->summary.iteration_time_s;
        r->scale_gbs[g] = job.global_batch;
        step_config_t cfg = r->cfg; /* this count's perturbations (its GPUs) */
        double *f = NULL;
        if (r->perturbed && (prc = load_scenario(a, r->gpus[g], &scn, &pd)) == CLI_OK &&
            (prc = scenario_resolve(&scn, &job, &pd)) == CLI_OK)
            prc = perturb_config(&scn, &job, &cfg, &f, NULL, &pd);
        if (prc) {
            for (int i = 0; i < r->n_topo; i++)
                snprintf(r->scale[g][i].error, sizeof r->scale[g][i].error, "%.159s", pd.msg);
            continue;
        }
        for (int i = 0; i < r->n_topo; i++) {
            simpoint_t p;
            pd.msg[0] = '\0';
            const int64_t k = (int64_t)r->n_topo * (1 + g) + i;
            if (simulate_on(&job, &cfg, &r->topo[i], &r->perturb, 0, a->progress, k, n_sims, &p, &pd) ==
                CLI_OK) {
                r->scale[g][i].ok = 1;
                r->scale[g][i].step_s = p.step_time_s;
                r->approximate |= !p.collapse_exact;
            } else {
                snprintf(r->scale[g][i].error, sizeof r->scale[g][i].error, "%.159s", pd.msg);
                cli_progress_clear(a->progress);
                if (err)
                    fprintf(err, "stepsim compare: %" PRId64 " GPUs on %s: %s\n", r->gpus[g],
                            r->topo[i].label, pd.msg);
            }
        }
        free(f);
    }
    free(e);
    free(factors);
    r->cfg.compute_slowdown = NULL;
    return rc;
}

int cmd_compare(const cli_args_t *args, FILE *out, FILE *err, cli_diag_t *d) {
    cmp_args_t a;
    int rc = from_args(args, &a, d);
    if (rc)
        return rc;
    cmp_run_t *r = calloc(1, sizeof *r);
    if (!r)
        return cli_fail(d, CLI_ERUNTIME, "compare: out of memory");
    /* the default is the option table's (what help shows) */
    const char *topologies =
        a.topologies ? a.topologies : cli_option_find("--topologies", CLI_CMD_COMPARE)->def;
    rc = topo_list_parse(topologies, r->topo, &r->n_topo, MAX_TOPOS, d);
    if (!rc && args->file) { /* a scenario with jobs: cmd_jobs.c */
        scenario_t scn;
        rc = cli_apply_scenario(args, &scn, a.gpus_list ? "--gpus" : NULL, d);
        if (!rc && scn.jobs) {
            rc = a.gpus_list ? cli_fail(d, CLI_EUSAGE,
                                        "--gpus: \"%.60s\": not with jobs (each job has its GPU count); "
                                        "allowed: one scenario's jobs",
                                        a.gpus_list)
                             : cmd_compare_jobs(args, &scn, r->topo, r->n_topo, out, d);
            scenario_destroy(&scn);
            free(r);
            return rc;
        }
        scenario_destroy(&scn);
    }
    if (!rc && a.gpus_list)
        rc = parse_gpus_list(a.gpus_list, r, d);
    cli_progress_t progress;
    cli_progress_init(&progress, err, "compare", cli_has(args, CLI_OPT_QUIET), 0);
    a.progress = &progress;
    if (!rc)
        rc = compare_run(&a, r, err, d);
    cli_progress_end(&progress);
    if (!rc && a.csv)
        rc = print_compare_csv(a.csv, r, d);
    if (!rc && a.plot)
        rc = print_compare_plot(a.plot, r, d);
    if (!rc && print_compare(out, r, a.json, a.csv, a.plot) != 0)
        rc = cli_fail(d, CLI_ERUNTIME, "compare: out of memory while printing the JSON result");
    free(r);
    return rc;
}

/* ---- validate: the waterfall --------------------------------------------------------------------------- */

static void parts_of(const simpoint_t *p, double *x) {
    x[0] = p->compute_s;
    x[1] = p->exposed_tp_s;
    x[2] = p->exposed_pp_s;
    x[3] = p->exposed_dp_s;
    x[4] = p->bubble_idle_s;
}

static int waterfall_run(const cmp_args_t *a, waterfall_t *w, cli_diag_t *d) {
    scenario_t scn;
    int rc = load_scenario(a, 0, &scn, d);
    if (!rc && scenario_has_perturbations(&scn)) /* not silently dropped */
        rc =
            cli_fail(d, CLI_EUSAGE,
                     "%s%sperturbations: the waterfall does not simulate them; allowed: run or compare, or a "
                     "scenario without perturbations",
                     scn.file, scn.file[0] ? ": " : "");
    if (!rc)
        rc = scenario_resolve(&scn, &w->job, d);
    w->training_given = !rc && scenario_optimizer_step_given(&scn);
    step_config_t cfg;
    step_config_default(&cfg);
    if (!rc)
        print_compare_header(w->header, sizeof w->header, "validate", &w->job, &scn);
    if (!rc) {
        cmd_sim_config(&scn, a->placement, &cfg);
        cfg.collapse = a->collapse;
        cfg.max_memory_gb = a->max_memory_gb;
    }
    topo_item_t chosen;
    memset(&chosen, 0, sizeof chosen);
    if (!rc) {
        chosen.spec = scn.topology;
        snprintf(chosen.label, sizeof chosen.label, "%s",
                 scn.topology.form == TOPO_SPEC_NONE ? "ideal"
                 : scn.topology.is_name              ? scn.topology.label
                                                     : "topology");
    }
    scenario_destroy(&scn);
    model_estimate_t *e = rc ? NULL : malloc(sizeof *e);
    if (!rc && !e)
        rc = cli_fail(d, CLI_ERUNTIME, "validate: out of memory");
    if (!rc && model_estimate(&w->job, e) != MODEL_OK)
        rc = cli_fail(d, CLI_EUSAGE, "the model rejected this configuration");
    if (!rc)
        rc = cmd_require_finite_estimate(e, &w->job, "analytic estimate", d);
    if (!rc)
        rc = cmd_require_simulable(e, &w->job, d);
    if (!rc) {
        const model_summary_t *s = &e->summary;
        w->total[WF_ANALYTIC] = s->iteration_time_s;
        w->part[WF_ANALYTIC][0] = s->compute_s + s->memory_s;
        w->part[WF_ANALYTIC][1] = s->tp_comm_s;
        w->part[WF_ANALYTIC][2] = s->pp_comm_s;
        w->part[WF_ANALYTIC][3] = s->dp_comm_s;
        w->part[WF_ANALYTIC][4] = s->bubble_s;
    }
    free(e);
    simpoint_t p;
    if (!rc)
        cli_progress_stage(a->progress, 0, 3, "analytic communication");
    if (!rc)
        rc = simpoint_run(&w->job, &cfg, NULL, NULL, "--comm analytic", 0, a->progress, &p, d);
    if (!rc) {
        w->total[WF_SIM_ANALYTIC] = p.step_time_s;
        parts_of(&p, w->part[WF_SIM_ANALYTIC]);
    }
    topo_item_t ideal;
    if (!rc)
        rc = topo_item_parse("ideal", &ideal, d);
    if (!rc)
        rc = simulate_on(&w->job, &cfg, &ideal, NULL, 0, a->progress, 1, 3, &p, d);
    if (!rc) {
        w->total[WF_SIM_IDEAL] = p.step_time_s;
        w->max_link[WF_SIM_IDEAL] = p.max_link_utilization;
        w->approximate |= !p.collapse_exact;
        parts_of(&p, w->part[WF_SIM_IDEAL]);
    }
    if (!rc)
        rc = simulate_on(&w->job, &cfg, &chosen, NULL, 0, a->progress, 2, 3, &p, d);
    if (!rc) {
        w->total[WF_SIM_TOPO] = p.step_time_s;
        w->max_link[WF_SIM_TOPO] = p.max_link_utilization;
        w->approximate |= !p.collapse_exact;
        parts_of(&p, w->part[WF_SIM_TOPO]);
        snprintf(w->topology, sizeof w->topology, "%s", chosen.label);
    }
    return rc;
}

int cmd_waterfall(const cli_args_t *args, FILE *out, FILE *err, cli_diag_t *d) {
    cmp_args_t a;
    int rc = from_args(args, &a, d);
    if (rc)
        return rc;
    waterfall_t *w = calloc(1, sizeof *w);
    if (!w)
        return cli_fail(d, CLI_ERUNTIME, "validate: out of memory");
    cli_progress_t progress;
    cli_progress_init(&progress, err, "validate", cli_has(args, CLI_OPT_QUIET), 0);
    a.progress = &progress;
    rc = waterfall_run(&a, w, d);
    cli_progress_end(&progress);
    if (!rc && a.plot)
        rc = print_waterfall_plot(a.plot, w, d);
    if (!rc && print_waterfall(out, w, a.json, a.plot) != 0)
        rc = cli_fail(d, CLI_ERUNTIME, "validate: out of memory while printing the JSON result");
    free(w);
    return rc;
}
