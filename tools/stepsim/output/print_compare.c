/* print_compare.c - what `stepsim compare` and the waterfall of `stepsim validate` print: the tables
 * as text, or one JSON object (the results of commands/compare.h); compare's --csv table and the
 * --plot files of both (gnuplot scripts with inline data, run by gnuplot). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "compare.h"
#include "outfile.h"
#include "output.h"
#include "print.h"

/* The job header and layout lines into buf (the scenario names the model and system). */
void print_compare_header(char *buf, size_t n, const char *cmd, const model_job_t *job,
                          const scenario_t *scn) {
    buf[0] = '\0';
    FILE *m = fmemopen(buf, n, "w");
    if (!m)
        return;
    output_job_header(m, cmd, job, scn);
    fprintf(m, "layout: ");
    output_layout_text(m, &job->par);
    fprintf(m, "\n");
    fclose(m);
}

/* Bytes per step: the busiest link's, all links', and each parallel group's sent per GPU. */
static void traffic_text(FILE *out, const cmp_run_t *r) {
    int any = 0;
    for (int i = 0; i < r->n_topo; i++)
        any |= r->row[i].p.has_traffic;
    if (!any)
        return;
    fprintf(out, "\n  %-16s %-22s %8s %10s %8s %8s %8s %8s\n", "bytes per step", "busiest link", "GB",
            "all links", "tp/GPU", "cp/GPU", "pp/GPU", "dp/GPU");
    for (int i = 0; i < r->n_topo; i++) {
        const simpoint_t *p = &r->row[i].p;
        if (!p->has_traffic)
            continue;
        const double *g = p->traffic.per_gpu_bytes;
        fprintf(out, "  %-16.16s %-22.22s %8.3f %10.3f %8.3f %8.3f %8.3f %8.3f\n", r->topo[i].label,
                p->busiest_link, p->busiest_link_bytes * 1e-9, p->total_link_bytes * 1e-9,
                g[STEP_TRAFFIC_TP] * 1e-9, g[STEP_TRAFFIC_CP] * 1e-9, g[STEP_TRAFFIC_PP] * 1e-9,
                g[STEP_TRAFFIC_DP] * 1e-9);
    }
    fprintf(out,
            "  (GB: the busiest link's and all links' wire bytes; per GPU: data bytes each group sent)\n");
}

static void compare_text(FILE *out, const cmp_run_t *r) {
    const model_summary_t *s = &r->analytic;
    fputs(r->header, out);
    fprintf(out, "analytic estimate: %.6f s per step\n\n", s->iteration_time_s);
    fprintf(out, "  %-14s %9s %7s %7s %7s %7s %7s %7s %6s %7s %9s\n", "topology", "step (s)", "vs ideal",
            "compute", "exp. TP", "exp. PP", "exp. DP", "bubble", "link %", "cost", "thr/kcost");
    for (int i = 0; i < r->n_topo; i++) {
        const cmp_row_t *w = &r->row[i];
        fprintf(out, "  %-14.14s %9.4f %6.3fx %7.3f %7.3f %7.3f %7.3f %7.3f %6.2f %7.0f %9.2f\n",
                r->topo[i].label, w->p.step_time_s, w->slowdown, w->p.compute_s, w->p.exposed_tp_s,
                w->p.exposed_pp_s, w->p.exposed_dp_s, w->p.bubble_idle_s, 100.0 * w->p.max_link_utilization,
                w->cost_units, w->perf_per_kcost);
    }
    fprintf(out, "\n  %-16s %18s %9s %14s\n", "topology", "model TFLOP/s/GPU", "MFU (%)", "tokens/s/GPU");
    for (int i = 0; i < r->n_topo; i++) {
        model_throughput_t t;
        model_throughput(&r->job, r->row[i].p.step_time_s, &t);
        fprintf(out, "  %-16.16s %18.1f %9.2f %14.1f\n", r->topo[i].label, t.model_tflops_per_gpu,
                100.0 * t.mfu, t.tokens_per_s_per_gpu);
    }
    traffic_text(out, r);
    if (r->approximate)
        fprintf(out, "\n  warning: %s\n", STEP_APPROX_WARNING);
    if (!r->perturbed)
        return;
    char what[400];
    scn_perturb_describe(&r->perturb, what, sizeof what);
    fprintf(out, "\n  what-if: the rows above are perturbed (seed %" PRIu64 "): %s\n", r->seed, what);
    if (r->slowed_gpus > 0)
        fprintf(out, "    %" PRId64 " GPU%s slowed\n", r->slowed_gpus, r->slowed_gpus == 1 ? "" : "s");
    if (!r->row[0].has_baseline) {
        fprintf(out, "    (no baseline: --baseline off)\n");
        return;
    }
    fprintf(out, "  %-16s %11s %12s %11s %9s\n", "topology", "what-if (s)", "baseline (s)", "cost (s)",
            "cost (%)");
    for (int i = 0; i < r->n_topo; i++) {
        const cmp_row_t *w = &r->row[i];
        const double c = w->p.step_time_s - w->baseline_step_s;
        fprintf(out, "  %-16.16s %11.4f %12.4f %+11.4f %+9.3f\n", r->topo[i].label, w->p.step_time_s,
                w->baseline_step_s, c, w->baseline_step_s > 0 ? 100.0 * c / w->baseline_step_s : 0.0);
    }
}

static void scaling_text(FILE *out, const cmp_run_t *r) {
    if (r->n_gpus == 0)
        return;
    fprintf(out, "\n  scaling (global batch fixed): step time in s, throughput in samples/s\n");
    fprintf(out, "  %-8s %10s", "gpus", "analytic");
    for (int i = 0; i < r->n_topo; i++)
        fprintf(out, " %12.12s", r->topo[i].label);
    fprintf(out, "\n");
    for (int g = 0; g < r->n_gpus; g++) {
        fprintf(out, "  %-8" PRId64, r->gpus[g]);
        if (r->scale_analytic[g] > 0)
            fprintf(out, " %10.4f", r->scale_analytic[g]);
        else
            fprintf(out, " %10s", "-");
        for (int i = 0; i < r->n_topo; i++) {
            if (r->scale[g][i].ok)
                fprintf(out, " %12.4f", r->scale[g][i].step_s);
            else
                fprintf(out, " %12s", "-");
        }
        fprintf(out, "\n  %-8s", "");
        if (r->scale_analytic[g] > 0)
            fprintf(out, " %10.3f", (double)r->scale_gbs[g] / r->scale_analytic[g]);
        else
            fprintf(out, " %10s", "");
        for (int i = 0; i < r->n_topo; i++) {
            if (r->scale[g][i].ok)
                fprintf(out, " %12.3f", (double)r->scale_gbs[g] / r->scale[g][i].step_s);
            else
                fprintf(out, " %12s", "");
        }
        fprintf(out, "\n");
    }
    for (int g = 0; g < r->n_gpus; g++) {
        if (r->scale_analytic[g] <= 0) {
            fprintf(out, "  %" PRId64 " GPUs: not evaluated: %s\n", r->gpus[g], r->scale_analytic_error[g]);
            continue;
        }
        for (int i = 0; i < r->n_topo; i++)
            if (!r->scale[g][i].ok)
                fprintf(out, "  %" PRId64 " GPUs on %s: not simulated: %s\n", r->gpus[g], r->topo[i].label,
                        r->scale[g][i].error);
    }
}

/* "config": the job's size and layout, shared by compare's and the waterfall's JSON. */
static void config_json(json_writer_t *w, const model_job_t *job, int training_given) {
    json_open_object(w, "config");
    json_int(w, "gpus", job->gpus);
    json_int(w, "global_batch", job->global_batch);
    json_int(w, "dp", job->par.dp);
    json_int(w, "tp", job->par.tp);
    json_int(w, "pp", job->par.pp);
    json_int(w, "mbs", job->par.mbs);
    json_string(w, "system", job->system.name);
    output_training_json(w, job, training_given); /* the options simulated and estimated */
    json_close_object(w);
}

static cJSON *compare_json(const cmp_run_t *r) {
    json_writer_t w;
    json_start(&w, NULL);
    if (r->approximate)
        json_string(&w, "warning", STEP_APPROX_WARNING);
    json_number(&w, "analytic_iteration_time_s", r->analytic.iteration_time_s);
    if (r->perturbed) {
        json_open_object(&w, "perturbations");
        json_int(&w, "seed", (int64_t)r->seed);
        json_int(&w, "slowed_gpus", r->slowed_gpus);
        json_open_array(&w, "entries"); /* as run's entries[].entry */
        for (int k = 0; k < scn_perturb_entries(&r->perturb); k++) {
            char label[240];
            scn_perturb_label(&r->perturb, k, label, sizeof label);
            json_string(&w, NULL, label);
        }
        json_close_array(&w);
        if (r->jitter) {
            json_open_object(&w, "jitter");
            json_string(&w, "distribution", step_jitter_name((step_jitter_dist_t)r->jitter));
            json_number(&w, "cv", r->jitter_cv);
            json_close_object(&w);
        }
        json_close_object(&w);
    }
    json_open_array(&w, "topologies");
    for (int i = 0; i < r->n_topo; i++) {
        const cmp_row_t *x = &r->row[i];
        json_open_object(&w, NULL);
        json_string(&w, "label", r->topo[i].label);
        json_string(&w, "name", x->p.topology);
        json_number(&w, "step_time_s", x->p.step_time_s);
        json_number(&w, "throughput_samples_per_s", x->throughput);
        output_throughput_json(&w, "", &r->job, x->p.step_time_s);
        json_number(&w, "slowdown_vs_ideal", x->slowdown);
        if (x->has_baseline) {
            const double c = x->p.step_time_s - x->baseline_step_s;
            json_number(&w, "baseline_step_time_s", x->baseline_step_s);
            json_number(&w, "what_if_cost_s", c);
            json_number(&w, "what_if_cost_percent",
                        x->baseline_step_s > 0 ? 100.0 * c / x->baseline_step_s : 0.0);
        }
        json_open_object(&w, "breakdown_s");
        json_number(&w, "compute", x->p.compute_s);
        json_number(&w, "exposed_tp_comm", x->p.exposed_tp_s);
        json_number(&w, "exposed_pp_comm", x->p.exposed_pp_s);
        json_number(&w, "exposed_dp_comm", x->p.exposed_dp_s);
        json_number(&w, "bubble_idle", x->p.bubble_idle_s);
        json_close_object(&w);
        json_number(&w, "max_link_utilization", x->p.max_link_utilization);
        json_string(&w, "busiest_link", x->p.busiest_link);
        if (x->p.has_traffic) {
            json_number(&w, "busiest_link_bytes", x->p.busiest_link_bytes);
            json_number(&w, "total_link_bytes", x->p.total_link_bytes);
            output_traffic_json(&w, &x->p.traffic);
        }
        json_open_object(&w, "cost");
        json_int(&w, "switches", x->p.summary.switches);
        json_int(&w, "cables", x->p.summary.cables);
        json_int(&w, "optical_transceivers", x->p.summary.optical_transceivers);
        json_number(&w, "units", x->cost_units);
        json_close_object(&w);
        json_number(&w, "throughput_per_kcost", x->perf_per_kcost);
        json_int(&w, "simulated_gpus", x->p.simulated_gpus);
        json_bool(&w, "collapse_exact", x->p.collapse_exact);
        if (!x->p.collapse_exact)
            json_string(&w, "warning", STEP_APPROX_WARNING);
        json_close_object(&w);
    }
    json_close_array(&w);
    if (r->n_gpus > 0) {
        json_open_array(&w, "scaling");
        for (int g = 0; g < r->n_gpus; g++) {
            json_open_object(&w, NULL);
            json_int(&w, "gpus", r->gpus[g]);
            if (r->scale_analytic[g] > 0)
                json_number(&w, "analytic_step_time_s", r->scale_analytic[g]);
            else
                json_string(&w, "error", r->scale_analytic_error[g]);
            json_open_object(&w, "step_time_s");
            for (int i = 0; i < r->n_topo; i++)
                if (r->scale[g][i].ok)
                    json_number(&w, r->topo[i].label, r->scale[g][i].step_s);
            json_close_object(&w);
            json_open_object(&w, "errors");
            for (int i = 0; i < r->n_topo; i++)
                if (!r->scale[g][i].ok && r->scale_analytic[g] > 0)
                    json_string(&w, r->topo[i].label, r->scale[g][i].error);
            json_close_object(&w);
            json_close_object(&w);
        }
        json_close_array(&w);
    }
    config_json(&w, &r->job, r->training_given);
    return json_take(&w);
}

static const char *const WF_NAMES[WF_COUNT] = {"analytic estimate", "simulation, analytic communication",
                                               "simulation, network on ideal",
                                               "simulation, network on topology"};
static const char *const WF_KEYS[WF_COUNT] = {"analytic", "sim_analytic_comm", "sim_network_ideal",
                                              "sim_network_topology"};
static const char *const WF_CAUSE[WF_COUNT] = {
    "the closed form", "scheduling: overlap, bubbles, the schedule",
    "collective algorithms and protocols (ideal network)", "routing and contention on the topology"};

static const char *const PART_NAMES[5] = {"compute", "exposed TP comm", "exposed PP comm", "exposed DP comm",
                                          "bubble and idle"};
static const char *const PART_KEYS[5] = {"compute", "exposed_tp_comm", "exposed_pp_comm", "exposed_dp_comm",
                                         "bubble_idle"};

/* The parts that moved most from step k-1 to k, as text. */
static void moved_text(const waterfall_t *w, int k, char *buf, size_t n) {
    int order[5] = {0, 1, 2, 3, 4};
    double dx[5];
    for (int i = 0; i < 5; i++)
        dx[i] = w->part[k][i] - w->part[k - 1][i];
    for (int i = 1; i < 5; i++)
        for (int j = i; j > 0 && fabs(dx[order[j]]) > fabs(dx[order[j - 1]]); j--) {
            const int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < 3 && used < n; i++) {
        if (fabs(dx[order[i]]) < 5e-7)
            break;
        used += (size_t)snprintf(buf + used, n - used, "%s%s %+.4f s", i ? ", " : "", PART_NAMES[order[i]],
                                 dx[order[i]]);
    }
    if (!buf[0])
        snprintf(buf, n, "no part moved");
}

static void waterfall_text(FILE *out, const waterfall_t *w) {
    fputs(w->header, out);
    fprintf(out, "waterfall: from the closed form to the simulated step on %s\n", w->topology);
    if (w->approximate)
        fprintf(out, "  warning: %s\n", STEP_APPROX_WARNING);
    fprintf(out, "\n");
    const double a = w->total[WF_ANALYTIC];
    fprintf(out, "  %-36s %12s %12s %9s\n", "step", "total (s)", "change (s)", "change %");
    fprintf(out, "  %-36s %12.6f\n      from: %s\n", WF_NAMES[0], a, WF_CAUSE[0]);
    for (int k = 1; k < WF_COUNT; k++) {
        const double dk = w->total[k] - w->total[k - 1];
        char moved[200], line[400];
        moved_text(w, k, moved, sizeof moved);
        fprintf(out, "  %-36s %12.6f %+12.6f %+8.2f%%\n", WF_NAMES[k], w->total[k], dk,
                a > 0 ? 100.0 * dk / a : 0.0);
        fprintf(out, "      from: %s\n", WF_CAUSE[k]);
        snprintf(line, sizeof line, "      parts moved: %s", moved);
        output_wrapped_list(out, 19, line);
    }
    const double gap = w->total[WF_SIM_TOPO] - a;
    fprintf(out, "  %-36s %12.6f %+12.6f %+8.2f%%  the sum of the changes\n", "simulated step (total)",
            w->total[WF_SIM_TOPO], gap, a > 0 ? 100.0 * gap / a : 0.0);
    output_throughput_text(out, 36, &w->job, w->total[WF_SIM_TOPO]);
    fprintf(out, "\n  busiest link: %.2f%% on ideal, %.2f%% on %s\n", 100.0 * w->max_link[WF_SIM_IDEAL],
            100.0 * w->max_link[WF_SIM_TOPO], w->topology);
    fprintf(out,
            "  (percentages are of the analytic estimate; parts: the critical GPU's breakdown, the analytic\n"
            "   one being compute+memory, tp, pp, dp communication and bubble)\n");
}

static cJSON *waterfall_json(const waterfall_t *w) {
    json_writer_t j;
    json_start(&j, NULL);
    json_number(&j, "analytic_iteration_time_s", w->total[WF_ANALYTIC]);
    json_number(&j, "simulated_step_time_s", w->total[WF_SIM_TOPO]);
    output_throughput_json(&j, "", &w->job, w->total[WF_SIM_TOPO]);
    if (w->approximate)
        json_string(&j, "warning", STEP_APPROX_WARNING);
    json_string(&j, "topology", w->topology);
    json_open_array(&j, "steps");
    for (int k = 0; k < WF_COUNT; k++) {
        json_open_object(&j, NULL);
        json_string(&j, "step", WF_KEYS[k]);
        json_string(&j, "label", WF_NAMES[k]);
        json_string(&j, "cause", WF_CAUSE[k]);
        json_number(&j, "total_s", w->total[k]);
        const double dk = k ? w->total[k] - w->total[k - 1] : 0.0;
        json_number(&j, "delta_s", dk);
        json_number(&j, "delta_pct_of_analytic", w->total[0] > 0 ? 100.0 * dk / w->total[0] : 0.0);
        json_number(&j, "delta_pct_of_previous",
                    k && w->total[k - 1] > 0 ? 100.0 * dk / w->total[k - 1] : 0.0);
        json_open_object(&j, "breakdown_s");
        for (int i = 0; i < 5; i++)
            json_number(&j, PART_KEYS[i], w->part[k][i]);
        json_close_object(&j);
        json_open_object(&j, "breakdown_delta_s");
        for (int i = 0; i < 5; i++)
            json_number(&j, PART_KEYS[i], k ? w->part[k][i] - w->part[k - 1][i] : 0.0);
        json_close_object(&j);
        if (k >= WF_SIM_IDEAL)
            json_number(&j, "max_link_utilization", w->max_link[k]);
        json_close_object(&j);
    }
    json_close_array(&j);
    config_json(&j, &w->job, w->training_given);
    return json_take(&j);
}

/* ---- files: --csv and --plot ---------------------------------------------------------------------- */

/* Run gnuplot on script_text (which writes to of's temporary file), then commit of. The script
 * itself is a temporary file of its own, removed after the run (and by a signal). */
static int gnuplot_run(const char *script_text, outfile_t *of, cli_diag_t *d) {
    const char *path = of->path;
    const char *gp = getenv("STEPSIM_GNUPLOT");
    if (!gp || !gp[0])
        gp = "gnuplot";
    char cmd[OUTFILE_PATH_MAX + 300];
    snprintf(cmd, sizeof cmd, "%.200s --version >/dev/null 2>&1", gp);
    if (system(cmd) != 0)
        return cli_fail(d, CLI_ERUNTIME,
                        "--plot %.200s: gnuplot (%.100s) was not found or does not run; install gnuplot "
                        "(e.g. apt-get install gnuplot-nox) or leave out --plot",
                        path, gp);
    outfile_t script;
    int rc = outfile_open(&script, "--plot", path, d);
    if (rc)
        return rc;
    fputs(script_text, script.f);
    if ((fflush(script.f) != 0) | ferror(script.f)) {
        outfile_discard(&script);
        return cli_fail(d, CLI_ERUNTIME, "--plot %.200s: cannot write the gnuplot script", path);
    }
    snprintf(cmd, sizeof cmd, "%.200s '%s' 2>/dev/null", gp, outfile_tmp_path(&script));
    const int s = system(cmd);
    outfile_discard(&script);
    if (s != 0)
        return cli_fail(d, CLI_ERUNTIME, "--plot %.200s: gnuplot failed (status %d)", path, s);
    return outfile_commit(of, d);
}

/* The terminal for path's extension, width x 540 pixels. */
static const char *terminal_of(char *t, size_t n, const char *path, int width) {
    const char *dot = strrchr(path, '.');
    snprintf(t, n,
             dot && strcmp(dot, ".svg") == 0 ? "svg size %d,540 dynamic background rgb 'white'"
                                             : "pngcairo size %d,540",
             width);
    return t;
}

/* A growing text buffer for scripts with inline data. */
typedef struct sbuf {
    char *s;
    size_t len, cap;
    int failed;
} sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...) {
    if (b->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        const int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        const size_t cap = (b->cap + (size_t)n + 1) * 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
}

/* Run the script in b (frees it) writing of's temporary file, committed onto the destination; on
 * failure the temporary file is removed. */
static int plot_finish(sbuf_t *b, outfile_t *of, cli_diag_t *d) {
    int rc;
    if (b->failed)
        rc = cli_fail(d, CLI_ERUNTIME, "--plot: out of memory");
    else
        rc = gnuplot_run(b->s, of, d);
    if (rc)
        outfile_discard(of);
    free(b->s);
    return rc;
}

/* Quote a label for gnuplot's inline data (no quotes inside). */
static void gp_label(char *out, size_t n, const char *s) {
    size_t j = 0;
    for (size_t i = 0; s[i] && j + 1 < n; i++)
        out[j++] = s[i] == '"' || s[i] == '\'' || s[i] == '\n' ? '_' : s[i];
    out[j] = '\0';
}

int print_compare_csv(const char *path, const cmp_run_t *r, cli_diag_t *d) {
    outfile_t of;
    const int rc = outfile_open(&of, "--csv", path, d);
    if (rc)
        return rc;
    FILE *f = of.f;
    fprintf(f,
            "topology,step_time_s,throughput_samples_per_s,slowdown_vs_ideal,compute_s,exposed_tp_comm_s,"
            "exposed_pp_comm_s,exposed_dp_comm_s,bubble_idle_s,max_link_utilization,switches,cables,"
            "optical_transceivers,cost_units,throughput_per_kcost,collapse%s\n",
            r->row[0].has_baseline ? ",baseline_step_time_s,what_if_cost_s" : "");
    for (int i = 0; i < r->n_topo; i++) {
        const cmp_row_t *x = &r->row[i];
        char label[64];
        gp_label(label, sizeof label, r->topo[i].label);
        for (char *c = label; *c; c++)
            if (*c == ',')
                *c = ';';
        fprintf(f,
                "%s,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%" PRId64 ",%" PRId64 ",%" PRId64
                ",%.0f,%.9g,%s",
                label, x->p.step_time_s, x->throughput, x->slowdown, x->p.compute_s, x->p.exposed_tp_s,
                x->p.exposed_pp_s, x->p.exposed_dp_s, x->p.bubble_idle_s, x->p.max_link_utilization,
                x->p.summary.switches, x->p.summary.cables, x->p.summary.optical_transceivers, x->cost_units,
                x->perf_per_kcost, x->p.collapse_exact ? "exact" : STEP_APPROX_WARNING);
        if (x->has_baseline)
            fprintf(f, ",%.9g,%.9g", x->baseline_step_s, x->p.step_time_s - x->baseline_step_s);
        fprintf(f, "\n");
    }
    return outfile_commit(&of, d);
}

/* The workload in one line for a plot's title: model, GPUs and system, global batch, layout. */
static void plot_workload(char *buf, size_t n, const model_job_t *job) {
    char layout[256] = "";
    FILE *m = fmemopen(layout, sizeof layout, "w");
    if (m) {
        output_layout_text(m, &job->par);
        fclose(m);
    }
    char model[40], system[40], lay[256];
    gp_label(model, sizeof model, job->model.name);
    gp_label(system, sizeof system, job->system.name);
    gp_label(lay, sizeof lay, layout);
    snprintf(buf, n, "%s on %" PRId64 " x %s, global batch %" PRId64 ", %s", model, job->gpus, system,
             job->global_batch, lay);
}

/* The scaling panel's base: samples/s per GPU of the analytic estimate at the smallest GPU count that
 * has one, else of the fastest topology there; 0 if nothing was evaluated. */
static double scaling_base(const cmp_run_t *r, int64_t *base_gpus, const char **base_what) {
    int order[MAX_GPUS];
    for (int g = 0; g < r->n_gpus; g++) {
        int k = g;
        for (; k > 0 && r->gpus[order[k - 1]] > r->gpus[g]; k--)
            order[k] = order[k - 1];
        order[k] = g;
    }
    for (int o = 0; o < r->n_gpus; o++) {
        const int g = order[o];
        if (r->scale_analytic[g] > 0) {
            *base_gpus = r->gpus[g];
            *base_what = "analytic";
            return (double)r->scale_gbs[g] / r->scale_analytic[g] / (double)r->gpus[g];
        }
        double best = 0;
        for (int i = 0; i < r->n_topo; i++)
            if (r->scale[g][i].ok && (best == 0 || r->scale[g][i].step_s < best))
                best = r->scale[g][i].step_s;
        if (best > 0) {
            *base_gpus = r->gpus[g];
            *base_what = "fastest";
            return (double)r->scale_gbs[g] / best / (double)r->gpus[g];
        }
    }
    return 0;
}

/* compare --plot: the step-time breakdown (from zero, totals on the bars), the slowdown against the
 * best topology (from zero, values on the bars) and, with --gpus, the scaling efficiency against GPUs
 * (from zero; the key below the panel, so no label sits on a curve); the workload in the title. */
int print_compare_plot(const char *path, const cmp_run_t *r, cli_diag_t *d) {
    outfile_t of;
    const int rc = outfile_reserve(&of, "--plot", path, d);
    if (rc)
        return rc;
    const int panels = r->n_gpus > 0 ? 3 : 2;
    char term[96];
    sbuf_t b = {0};
    sb_printf(&b, "set terminal %s\nset output '%s'\n",
              terminal_of(term, sizeof term, path, panels == 3 ? 1350 : 900), outfile_tmp_path(&of));
    int best = 0;
    for (int i = 1; i < r->n_topo; i++)
        if (r->row[i].p.step_time_s < r->row[best].p.step_time_s)
            best = i;
    const double best_s = r->row[best].p.step_time_s;
    double max_total = 0, max_slow = 0;
    /* label compute tp pp dp bubble total slowdown_pct */
    sb_printf(&b, "$bars << EOD\n");
    for (int i = 0; i < r->n_topo; i++) {
        char label[64];
        gp_label(label, sizeof label, r->topo[i].label);
        const simpoint_t *p = &r->row[i].p;
        const double slow = best_s > 0 ? 100.0 * (p->step_time_s / best_s - 1.0) : 0.0;
        sb_printf(&b, "\"%s\" %.9g %.9g %.9g %.9g %.9g %.9g %.9g\n", label, p->compute_s, p->exposed_tp_s,
                  p->exposed_pp_s, p->exposed_dp_s, p->bubble_idle_s, p->step_time_s, slow);
        max_total = fmax(max_total, p->step_time_s);
        max_slow = fmax(max_slow, slow);
    }
    sb_printf(&b, "EOD\n");
    int64_t base_gpus = 0;
    const char *base_what = "";
    const double base = r->n_gpus > 0 ? scaling_base(r, &base_gpus, &base_what) : 0;
    double max_eff = 0.0; /* the efficiency axis reaches past every value (the simulation can beat the
                             estimate the base is taken from) */
    if (r->n_gpus > 0) {
        /* gpus, then the efficiency of the analytic estimate and of each topology (NaN: not evaluated) */
        sb_printf(&b, "$scale << EOD\n");
        for (int g = 0; g < r->n_gpus; g++) {
            const double per = base > 0 ? (double)r->scale_gbs[g] / (double)r->gpus[g] / base : 0;
            sb_printf(&b, "%" PRId64, r->gpus[g]);
            if (r->scale_analytic[g] > 0 && per > 0) {
                sb_printf(&b, " %.9g", per / r->scale_analytic[g]);
                max_eff = fmax(max_eff, per / r->scale_analytic[g]);
            } else {
                sb_printf(&b, " NaN");
            }
            for (int i = 0; i < r->n_topo; i++)
                if (r->scale[g][i].ok && per > 0) {
                    sb_printf(&b, " %.9g", per / r->scale[g][i].step_s);
                    max_eff = fmax(max_eff, per / r->scale[g][i].step_s);
                } else {
                    sb_printf(&b, " NaN");
                }
            sb_printf(&b, "\n");
        }
        sb_printf(&b, "EOD\n");
    }
    char workload[400], best_label[64];
    plot_workload(workload, sizeof workload, &r->job);
    gp_label(best_label, sizeof best_label, r->topo[best].label);
    sb_printf(&b, "set multiplot layout 1,%d title \"%s%s\"\n", panels, workload,
              r->approximate ? "\\n" STEP_APPROX_WARNING : "");
    sb_printf(
        &b,
        "set title 'Step time per topology (critical GPU)'\nset ylabel 'seconds'\n"
        "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.8 border -1\n"
        "set boxwidth 0.7\nset key outside bottom center horizontal\nset xtics rotate by -30\n"
        "set yrange [0:%.9g]\n"
        "plot $bars using 2:xtic(1) title 'compute', '' using 3 title 'exposed TP', "
        "'' using 4 title 'exposed PP', '' using 5 title 'exposed DP', '' using 6 title 'bubble/idle', "
        "'' using 0:7:(sprintf('%%.4g s', $7)) with labels rotate by 90 left offset 0,0.5 font ',9' "
        "notitle\n",
        max_total > 0 ? 1.3 * max_total : 1.0);
    sb_printf(&b,
              "unset style\nset style fill solid 0.8 border -1\nset boxwidth 0.7\nunset key\n"
              "set title 'Slowdown against the best topology (%s)'\nset ylabel '%% slower than %s'\n"
              "set yrange [0:%.9g]\nset xrange [-0.6:%d.6]\nset xtics rotate by -30\n"
              "plot $bars using 0:8:xtic(1) with boxes lc rgb '#c44e52' notitle, "
              "'' using 0:8:(sprintf('+%%.2f%%%%', $8)) with labels rotate by 90 left offset 0,0.5 font ',9' "
              "notitle\n",
              best_label, best_label, max_slow > 0 ? 1.3 * max_slow : 1.0, r->n_topo - 1);
    if (r->n_gpus > 0) {
        sb_printf(&b,
                  "unset xrange\nset title 'Scaling efficiency (global batch fixed)'\nset xlabel 'GPUs'\n"
                  "set ylabel 'per-GPU throughput, 1 = %s at %" PRId64 " GPUs' font ',9'\nset logscale x 2\n"
                  "set xtics norotate\nset xtics (",
                  base_what, base_gpus);
        int64_t lo_gpus = r->gpus[0], hi_gpus = r->gpus[0];
        for (int g = 0; g < r->n_gpus; g++) {
            sb_printf(&b, "%s\"%" PRId64 "\" %" PRId64, g ? ", " : "", r->gpus[g], r->gpus[g]);
            lo_gpus = r->gpus[g] < lo_gpus ? r->gpus[g] : lo_gpus;
            hi_gpus = r->gpus[g] > hi_gpus ? r->gpus[g] : hi_gpus;
        }
        sb_printf(&b,
                  ")\nset xrange [%.9g:%.9g]\nset yrange [0:%.9g]\nset grid ytics\n"
                  "set key outside bottom center horizontal maxrows 3\n"
                  "plot $scale using 1:2 with linespoints dt 2 lw 2 title 'analytic'",
                  (double)lo_gpus / 1.3, (double)hi_gpus * 1.3, fmax(1.15, 1.1 * max_eff));
        for (int i = 0; i < r->n_topo; i++) {
            char label[64];
            gp_label(label, sizeof label, r->topo[i].label);
            sb_printf(&b, ", '' using 1:%d with linespoints lw 2 title '%s'", i + 3, label);
        }
        sb_printf(&b, "\n");
    }
    sb_printf(&b, "unset multiplot\nset output\n");
    return plot_finish(&b, &of, d);
}

int print_waterfall_plot(const char *path, const waterfall_t *w, cli_diag_t *d) {
    outfile_t of;
    const int rc = outfile_reserve(&of, "--plot", path, d);
    if (rc)
        return rc;
    static const char *const SHORT[WF_COUNT] = {"analytic", "+ scheduling", "+ collectives (ideal)",
                                                "+ topology"};
    char term[96];
    sbuf_t b = {0};
    sb_printf(&b, "set terminal %s\nset output '%s'\n$wf << EOD\n", terminal_of(term, sizeof term, path, 900),
              outfile_tmp_path(&of));
    /* x, low, high, colour index (0 base, 1 up, 2 down, 3 total) */
    sb_printf(&b, "0 0 %.9g 0 \"%s\"\n", w->total[0], SHORT[0]);
    for (int k = 1; k < WF_COUNT; k++) {
        const double lo = fmin(w->total[k - 1], w->total[k]), hi = fmax(w->total[k - 1], w->total[k]);
        sb_printf(&b, "%d %.9g %.9g %d \"%s\"\n", k, lo, hi, w->total[k] >= w->total[k - 1] ? 1 : 2,
                  SHORT[k]);
    }
    sb_printf(&b, "%d 0 %.9g 3 \"simulated\"\nEOD\n", WF_COUNT, w->total[WF_SIM_TOPO]);
    const double lo = fmin(fmin(w->total[0], w->total[1]), fmin(w->total[2], w->total[3]));
    const double hi = fmax(fmax(w->total[0], w->total[1]), fmax(w->total[2], w->total[3]));
    char topo[64], workload[400];
    gp_label(topo, sizeof topo, w->topology);
    plot_workload(workload, sizeof workload, &w->job);
    const double y0 = lo - 0.15 * (hi - lo) - 1e-9 > 0 ? lo - 0.15 * (hi - lo) - 1e-9 : 0;
    if (y0 > 0) /* the axis does not start at zero: a break mark on it, and the bound in words */
        sb_printf(
            &b,
            "set arrow 1 from graph -0.025, graph 0.010 to graph 0.025, graph 0.040 nohead lw 2 front\n"
            "set arrow 2 from graph -0.025, graph 0.035 to graph 0.025, graph 0.065 nohead lw 2 front\n"
            "set label 1 'y axis broken: it starts at %.4g s, not at 0' at screen 0.5, screen 0.035 center\n"
            "set bmargin 4.5\n",
            y0);
    sb_printf(&b, "set label 2 \"%s\" at screen 0.5, screen 0.975 center\nset tmargin 4\n", workload);
    sb_printf(&b,
              "set title 'From the closed form to the simulated step (%s)%s'\nset ylabel 'seconds'\n"
              "set style fill solid 0.85 border -1\nset boxwidth 0.6\nunset key\nset grid ytics\n"
              "set xrange [-0.6:%d.6]\nset yrange [%.9g:%.9g]\n"
              "set palette defined (0 '#4c72b0', 1 '#dd8452', 2 '#55a868', 3 '#8172b2')\nset cbrange [0:3]\n"
              "unset colorbox\n"
              "plot $wf using 1:(($2+$3)/2):($1-0.3):($1+0.3):2:3:4:xtic(5) with boxxyerror fc palette, "
              "$wf using 1:3:(sprintf('%%.3f', ($4==1||$4==2) ? ($4==1 ? $3-$2 : $2-$3) : $3)) "
              "with labels offset 0,0.8\nset output\n",
              topo, w->approximate ? " - " STEP_APPROX_WARNING : "", WF_COUNT, y0,
              hi + 0.15 * (hi - lo) + 1e-9);
    return plot_finish(&b, &of, d);
}

int print_compare(FILE *out, const cmp_run_t *r, int json, const char *csv, const char *plot) {
    if (json) {
        cJSON *doc = compare_json(r);
        const int rc = doc ? json_print(out, doc) : -1;
        cJSON_Delete(doc);
        return rc;
    }
    compare_text(out, r);
    scaling_text(out, r);
    if (csv)
        fprintf(out, "\n  table written to %s\n", csv);
    if (plot)
        fprintf(out, "  plot written to %s\n", plot);
    return 0;
}

int print_waterfall(FILE *out, const waterfall_t *w, int json, const char *plot) {
    if (json) {
        cJSON *doc = waterfall_json(w);
        const int rc = doc ? json_print(out, doc) : -1;
        cJSON_Delete(doc);
        return rc;
    }
    waterfall_text(out, w);
    if (plot)
        fprintf(out, "  plot written to %s\n", plot);
    return 0;
}
