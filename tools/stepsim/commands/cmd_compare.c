/* cmd_compare.c - `stepsim compare` (one workload on several topologies, optionally over GPU counts)
 * and `stepsim validate` without --measured (the waterfall from the closed form to the simulated
 * step). Both simulate through simpoint.h (step_simulate) and print text, --json, --csv and gnuplot
 * plots.
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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "output.h"
#include "simpoint.h"
#include "topo_json.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_TOPOS 16
#define MAX_GPUS 16
#define MAX_OPTS 64

/* ---- arguments ----------------------------------------------------------------------------------- */

/* The parsed options as compare and the waterfall read them. */
typedef struct cmp_args {
    const cli_args_t *args; /* the scenario file and options */
    const char *gpus_list;  /* compare: --gpus with a comma (the scaling view), else NULL */
    const char *topologies, *csv, *plot, *placement;
    int json;
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
    return rc;
}

/* ---- topologies ------------------------------------------------------------------------------------ */

typedef struct topo_item {
    char label[64];
    topo_spec_t spec; /* parsed when the option is read (topo_json.h: one meaning per name) */
} topo_item_t;

/* Parse text (a name or a {...} object) into it; where messages point: "--topologies: LABEL". */
static int parse_item(const char *text, topo_item_t *it, cli_diag_t *d) {
    cJSON *json = text[0] == '{' ? cJSON_Parse(text) : cJSON_CreateString(text);
    if (text[0] == '{' && !cJSON_IsObject(json)) {
        cJSON_Delete(json);
        return cli_fail(
            d, CLI_EUSAGE,
            "--topologies: \"%.60s\" is not a JSON object; allowed: a preset, kind, shortcut, file "
            "or {...}",
            text);
    }
    if (!json)
        return cli_fail(d, CLI_ERUNTIME, "compare: out of memory");
    if (cJSON_IsObject(json)) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(json, "name");
        const cJSON *kd = cJSON_GetObjectItemCaseSensitive(json, "kind");
        const cJSON *pr = cJSON_GetObjectItemCaseSensitive(json, "preset");
        snprintf(it->label, sizeof it->label, "%s",
                 cJSON_IsString(nm)   ? nm->valuestring
                 : cJSON_IsString(kd) ? kd->valuestring
                 : cJSON_IsString(pr) ? pr->valuestring
                                      : "object");
    } else {
        snprintf(it->label, sizeof it->label, "%s", text);
    }
    char where[96];
    snprintf(where, sizeof where, "--topologies: %s", it->label);
    const int rc = topo_spec_parse(json, where, &it->spec, d);
    cJSON_Delete(json);
    return rc;
}

/* Split "A,B,{..},C" at top-level commas; objects are JSON; "ideal" is put first if missing. */
static int parse_topologies(const char *list, topo_item_t *items, int *n, cli_diag_t *d) {
    *n = 0;
    int has_ideal = 0;
    const char *p = list;
    while (*p) {
        const char *start = p;
        int depth = 0;
        while (*p && (depth > 0 || *p != ',')) {
            depth += *p == '{' || *p == '[';
            depth -= *p == '}' || *p == ']';
            p++;
        }
        const size_t len = (size_t)(p - start);
        if (*p == ',')
            p++;
        if (len == 0)
            return cli_fail(d, CLI_EUSAGE, "--topologies: \"%.60s\" has an empty entry; allowed: A,B,C",
                            list);
        if (*n >= MAX_TOPOS - 1)
            return cli_fail(d, CLI_EUSAGE, "--topologies: more than %d topologies; allowed: at most %d",
                            MAX_TOPOS - 1, MAX_TOPOS - 1);
        char *text = malloc(len + 1);
        if (!text)
            return cli_fail(d, CLI_ERUNTIME, "compare: out of memory");
        memcpy(text, start, len);
        text[len] = '\0';
        const int rc = parse_item(text, &items[*n], d);
        has_ideal |= strcmp(text, "ideal") == 0;
        free(text);
        if (rc)
            return rc;
        (*n)++;
    }
    if (*n == 0)
        return cli_fail(d, CLI_EUSAGE,
                        "--topologies: empty; allowed: a comma-separated list, e.g. ideal,fat-tree");
    if (!has_ideal) {
        memmove(items + 1, items, (size_t)*n * sizeof *items);
        (*n)++;
        return parse_item("ideal", &items[0], d);
    }
    for (int i = 1; i < *n; i++)
        if (items[i].spec.is_name && strcmp(items[i].spec.word, "ideal") == 0) {
            const topo_item_t t = items[i];
            memmove(items + 1, items, (size_t)i * sizeof *items);
            items[0] = t;
        }
    return CLI_OK;
}

static int simulate_on(const model_job_t *job, const step_config_t *cfg, const topo_item_t *it, int summary,
                       simpoint_t *out, cli_diag_t *d) {
    char where[96];
    snprintf(where, sizeof where, "--topologies: %s", it->label);
    return simpoint_run(job, cfg, &it->spec, where, summary, out, d);
}

/* ---- plots ------------------------------------------------------------------------------------------ */

/* Run gnuplot on script (which writes to tmp), then rename tmp to path. */
static int gnuplot_run(const char *script_text, const char *path, const char *tmp, cli_diag_t *d) {
    const char *gp = getenv("STEPSIM_GNUPLOT");
    if (!gp || !gp[0])
        gp = "gnuplot";
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s --version >/dev/null 2>&1", gp);
    if (system(cmd) != 0)
        return cli_fail(d, CLI_ERUNTIME,
                        "--plot %.200s: gnuplot (%.100s) was not found or does not run; install gnuplot "
                        "(e.g. apt-get install gnuplot-nox) or leave out --plot",
                        path, gp);
    char script[1100];
    snprintf(script, sizeof script, "%s.gp", tmp);
    FILE *f = fopen(script, "w");
    if (!f)
        return cli_fail(d, CLI_ERUNTIME, "--plot %.200s: cannot write %.200s: %s", path, script,
                        strerror(errno));
    fputs(script_text, f);
    if (fclose(f) != 0) {
        remove(script);
        return cli_fail(d, CLI_ERUNTIME, "--plot %.200s: cannot write %.200s", path, script);
    }
    snprintf(cmd, sizeof cmd, "%s '%s' 2>/dev/null", gp, script);
    const int s = system(cmd);
    remove(script);
    if (s != 0) {
        remove(tmp);
        return cli_fail(d, CLI_ERUNTIME, "--plot %.200s: gnuplot failed (status %d)", path, s);
    }
    if (rename(tmp, path) != 0) {
        const int e = errno;
        remove(tmp);
        return cli_fail(d, CLI_ERUNTIME, "--plot %.200s: cannot rename into place: %s", path, strerror(e));
    }
    return CLI_OK;
}

static const char *terminal_of(const char *path) {
    const char *dot = strrchr(path, '.');
    return dot && strcmp(dot, ".svg") == 0 ? "svg size 900,540 dynamic background rgb 'white'"
                                           : "pngcairo size 900,540";
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

/* Run the script in b (frees it) writing tmp, renamed onto path; on failure tmp is removed. */
static int plot_finish(sbuf_t *b, const char *path, const char *tmp, cli_diag_t *d) {
    int rc;
    if (b->failed)
        rc = cli_fail(d, CLI_ERUNTIME, "--plot: out of memory");
    else
        rc = gnuplot_run(b->s, path, tmp, d);
    if (rc)
        remove(tmp);
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

/* ---- compare ------------------------------------------------------------------------------------------ */

typedef struct cmp_row {
    simpoint_t p;
    double slowdown, throughput, cost_units, perf_per_kcost;
} cmp_row_t;

typedef struct scale_cell {
    int ok;
    double step_s;
    char error[160];
} scale_cell_t;

typedef struct cmp_run {
    model_job_t job;
    char header[1024]; /* the job header and layout lines, printed while the scenario was alive */
    model_summary_t analytic;
    topo_item_t topo[MAX_TOPOS];
    int n_topo;
    cmp_row_t row[MAX_TOPOS];
    int64_t gpus[MAX_GPUS];
    int n_gpus;
    double scale_analytic[MAX_GPUS]; /* 0: failed */
    int64_t scale_gbs[MAX_GPUS];
    char scale_analytic_error[MAX_GPUS][160];
    scale_cell_t scale[MAX_GPUS][MAX_TOPOS];
    step_config_t cfg; /* the scenario's optimizer step and --placement (cmd_sim_config) */
} cmp_run_t;

/* The job header and layout lines into buf (the scenario names the model and system). */
static void header_text(char *buf, size_t n, const char *cmd, const model_job_t *job, const scenario_t *scn) {
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

static int compare_run(const cmp_args_t *a, cmp_run_t *r, FILE *err, cli_diag_t *d) {
    scenario_t scn;
    /* with a scaling list, the table is of its last (largest) count */
    int rc = load_scenario(a, r->n_gpus > 0 ? r->gpus[r->n_gpus - 1] : 0, &scn, d);
    if (!rc)
        rc = scenario_resolve(&scn, &r->job, d);
    if (!rc)
        header_text(r->header, sizeof r->header, "compare", &r->job, &scn);
    if (!rc)
        cmd_sim_config(&scn, a->placement, &r->cfg);
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
        r->analytic = e->summary;
    for (int i = 0; !rc && i < r->n_topo; i++) {
        rc = simulate_on(&r->job, &r->cfg, &r->topo[i], 1, &r->row[i].p, d);
        if (rc)
            break;
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
        if (prc) {
            snprintf(r->scale_analytic_error[g], sizeof r->scale_analytic_error[g], "%.159s", pd.msg);
            for (int i = 0; i < r->n_topo; i++)
                snprintf(r->scale[g][i].error, sizeof r->scale[g][i].error, "%.159s", pd.msg);
            continue;
        }
        r->scale_analytic[g] = e->summary.iteration_time_s;
        r->scale_gbs[g] = job.global_batch;
        for (int i = 0; i < r->n_topo; i++) {
            simpoint_t p;
            pd.msg[0] = '\0';
            if (simulate_on(&job, &r->cfg, &r->topo[i], 0, &p, &pd) == CLI_OK) {
                r->scale[g][i].ok = 1;
                r->scale[g][i].step_s = p.step_time_s;
            } else {
                snprintf(r->scale[g][i].error, sizeof r->scale[g][i].error, "%.159s", pd.msg);
                if (err)
                    fprintf(err, "stepsim compare: %" PRId64 " GPUs on %s: %s\n", r->gpus[g],
                            r->topo[i].label, pd.msg);
            }
        }
    }
    free(e);
    return rc;
}

static void compare_text(FILE *out, const cmp_run_t *r) {
    const model_summary_t *s = &r->analytic;
    fputs(r->header, out);
    fprintf(out, "analytic estimate: %.6f s per step\n\n", s->iteration_time_s);
    fprintf(out, "  %-16s %11s %8s %10s %10s %10s %10s %10s %8s %10s %10s\n", "topology", "step (s)",
            "vs ideal", "compute", "exp. TP", "exp. PP", "exp. DP", "bubble", "link %", "cost", "thr/kcost");
    for (int i = 0; i < r->n_topo; i++) {
        const cmp_row_t *w = &r->row[i];
        fprintf(out, "  %-16.16s %11.4f %7.3fx %10.4f %10.4f %10.4f %10.4f %10.4f %8.2f %10.0f %10.4f\n",
                r->topo[i].label, w->p.step_time_s, w->slowdown, w->p.compute_s, w->p.exposed_tp_s,
                w->p.exposed_pp_s, w->p.exposed_dp_s, w->p.bubble_idle_s, 100.0 * w->p.max_link_utilization,
                w->cost_units, w->perf_per_kcost);
    }
}

static void scaling_text(FILE *out, const cmp_run_t *r) {
    if (r->n_gpus == 0)
        return;
    fprintf(out, "\n  scaling (global batch fixed): step time in s, throughput in samples/s\n");
    fprintf(out, "  %-8s %12s", "gpus", "analytic");
    for (int i = 0; i < r->n_topo; i++)
        fprintf(out, " %14.14s", r->topo[i].label);
    fprintf(out, "\n");
    for (int g = 0; g < r->n_gpus; g++) {
        fprintf(out, "  %-8" PRId64, r->gpus[g]);
        if (r->scale_analytic[g] > 0)
            fprintf(out, " %12.4f", r->scale_analytic[g]);
        else
            fprintf(out, " %12s", "-");
        for (int i = 0; i < r->n_topo; i++) {
            if (r->scale[g][i].ok)
                fprintf(out, " %14.4f", r->scale[g][i].step_s);
            else
                fprintf(out, " %14s", "-");
        }
        fprintf(out, "\n  %-8s", "");
        if (r->scale_analytic[g] > 0)
            fprintf(out, " %12.3f", (double)r->scale_gbs[g] / r->scale_analytic[g]);
        else
            fprintf(out, " %12s", "");
        for (int i = 0; i < r->n_topo; i++) {
            if (r->scale[g][i].ok)
                fprintf(out, " %14.3f", (double)r->scale_gbs[g] / r->scale[g][i].step_s);
            else
                fprintf(out, " %14s", "");
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
static void config_json(json_writer_t *w, const model_job_t *job) {
    json_open_object(w, "config");
    json_int(w, "gpus", job->gpus);
    json_int(w, "global_batch", job->global_batch);
    json_int(w, "dp", job->par.dp);
    json_int(w, "tp", job->par.tp);
    json_int(w, "pp", job->par.pp);
    json_int(w, "mbs", job->par.mbs);
    json_string(w, "system", job->system.name);
    json_close_object(w);
}

static cJSON *compare_json(const cmp_run_t *r) {
    json_writer_t w;
    json_start(&w, NULL);
    json_number(&w, "analytic_iteration_time_s", r->analytic.iteration_time_s);
    json_open_array(&w, "topologies");
    for (int i = 0; i < r->n_topo; i++) {
        const cmp_row_t *x = &r->row[i];
        json_open_object(&w, NULL);
        json_string(&w, "label", r->topo[i].label);
        json_string(&w, "name", x->p.topology);
        json_number(&w, "step_time_s", x->p.step_time_s);
        json_number(&w, "throughput_samples_per_s", x->throughput);
        json_number(&w, "slowdown_vs_ideal", x->slowdown);
        json_open_object(&w, "breakdown_s");
        json_number(&w, "compute", x->p.compute_s);
        json_number(&w, "exposed_tp_comm", x->p.exposed_tp_s);
        json_number(&w, "exposed_pp_comm", x->p.exposed_pp_s);
        json_number(&w, "exposed_dp_comm", x->p.exposed_dp_s);
        json_number(&w, "bubble_idle", x->p.bubble_idle_s);
        json_close_object(&w);
        json_number(&w, "max_link_utilization", x->p.max_link_utilization);
        json_string(&w, "busiest_link", x->p.busiest_link);
        json_open_object(&w, "cost");
        json_int(&w, "switches", x->p.summary.switches);
        json_int(&w, "cables", x->p.summary.cables);
        json_int(&w, "optical_transceivers", x->p.summary.optical_transceivers);
        json_number(&w, "units", x->cost_units);
        json_close_object(&w);
        json_number(&w, "throughput_per_kcost", x->perf_per_kcost);
        json_int(&w, "simulated_gpus", x->p.simulated_gpus);
        json_bool(&w, "collapse_exact", x->p.collapse_exact);
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
    config_json(&w, &r->job);
    return json_take(&w);
}

static int tmp_name(const char *path, char *tmp, size_t n, cli_diag_t *d) {
    snprintf(tmp, n, "%s.tmp-XXXXXX", path);
    const int fd = mkstemp(tmp);
    if (fd < 0)
        return cli_fail(d, CLI_ERUNTIME, "%.200s: cannot create a temporary file: %s", path, strerror(errno));
    close(fd);
    return CLI_OK;
}

static int write_csv(const char *path, const cmp_run_t *r, cli_diag_t *d) {
    char tmp[1100];
    int rc = tmp_name(path, tmp, sizeof tmp, d);
    if (rc)
        return rc;
    FILE *f = fopen(tmp, "w");
    if (!f) {
        remove(tmp);
        return cli_fail(d, CLI_ERUNTIME, "--csv %.200s: cannot write: %s", path, strerror(errno));
    }
    fprintf(f, "topology,step_time_s,throughput_samples_per_s,slowdown_vs_ideal,compute_s,exposed_tp_comm_s,"
               "exposed_pp_comm_s,exposed_dp_comm_s,bubble_idle_s,max_link_utilization,switches,cables,"
               "optical_transceivers,cost_units,throughput_per_kcost\n");
    for (int i = 0; i < r->n_topo; i++) {
        const cmp_row_t *x = &r->row[i];
        char label[64];
        gp_label(label, sizeof label, r->topo[i].label);
        for (char *c = label; *c; c++)
            if (*c == ',')
                *c = ';';
        fprintf(f,
                "%s,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%" PRId64 ",%" PRId64 ",%" PRId64
                ",%.0f,%.9g\n",
                label, x->p.step_time_s, x->throughput, x->slowdown, x->p.compute_s, x->p.exposed_tp_s,
                x->p.exposed_pp_s, x->p.exposed_dp_s, x->p.bubble_idle_s, x->p.max_link_utilization,
                x->p.summary.switches, x->p.summary.cables, x->p.summary.optical_transceivers, x->cost_units,
                x->perf_per_kcost);
    }
    if (ferror(f) | (fclose(f) != 0)) {
        remove(tmp);
        return cli_fail(d, CLI_ERUNTIME, "--csv %.200s: write error", path);
    }
    if (rename(tmp, path) != 0) {
        const int e = errno;
        remove(tmp);
        return cli_fail(d, CLI_ERUNTIME, "--csv %.200s: cannot rename into place: %s", path, strerror(e));
    }
    return CLI_OK;
}

static int compare_plot(const char *path, const cmp_run_t *r, cli_diag_t *d) {
    char tmp[1100];
    int rc = tmp_name(path, tmp, sizeof tmp, d);
    if (rc)
        return rc;
    sbuf_t b = {0};
    sb_printf(&b, "set terminal %s\nset output '%s'\n", terminal_of(path), tmp);
    sb_printf(&b, "$bars << EOD\n");
    for (int i = 0; i < r->n_topo; i++) {
        char label[64];
        gp_label(label, sizeof label, r->topo[i].label);
        const simpoint_t *p = &r->row[i].p;
        sb_printf(&b, "\"%s\" %.9g %.9g %.9g %.9g %.9g\n", label, p->compute_s, p->exposed_tp_s,
                  p->exposed_pp_s, p->exposed_dp_s, p->bubble_idle_s);
    }
    sb_printf(&b, "EOD\n");
    if (r->n_gpus > 0) {
        sb_printf(&b, "$scale << EOD\n");
        for (int g = 0; g < r->n_gpus; g++) {
            sb_printf(&b, "%" PRId64, r->gpus[g]);
            if (r->scale_analytic[g] > 0)
                sb_printf(&b, " %.9g", r->scale_analytic[g]);
            else
                sb_printf(&b, " NaN");
            for (int i = 0; i < r->n_topo; i++)
                if (r->scale[g][i].ok)
                    sb_printf(&b, " %.9g", r->scale[g][i].step_s);
                else
                    sb_printf(&b, " NaN");
            sb_printf(&b, "\n");
        }
        sb_printf(&b, "EOD\nset multiplot layout 1,2\n");
    }
    sb_printf(
        &b, "set title 'Step time per topology (critical GPU)'\nset ylabel 'seconds'\n"
            "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.8 border -1\n"
            "set boxwidth 0.7\nset key outside bottom center horizontal\nset xtics rotate by -30\n"
            "set yrange [0:*]\n"
            "plot $bars using 2:xtic(1) title 'compute', '' using 3 title 'exposed TP', "
            "'' using 4 title 'exposed PP', '' using 5 title 'exposed DP', '' using 6 title 'bubble/idle'\n");
    if (r->n_gpus > 0) {
        sb_printf(&b, "unset style\nset style data linespoints\nset title 'Strong scaling'\n"
                      "set xlabel 'GPUs'\nset ylabel 'step time (s)'\nset logscale xy\nset xtics norotate\n"
                      "set autoscale\nset key top right\nplot $scale using 1:2 with linespoints dt 2 lw 2 "
                      "title 'analytic'");
        for (int i = 0; i < r->n_topo; i++) {
            char label[64];
            gp_label(label, sizeof label, r->topo[i].label);
            sb_printf(&b, ", '' using 1:%d with linespoints title '%s'", i + 3, label);
        }
        sb_printf(&b, "\nunset multiplot\n");
    }
    sb_printf(&b, "set output\n");
    return plot_finish(&b, path, tmp, d);
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
    rc = parse_topologies(topologies, r->topo, &r->n_topo, d);
    if (!rc && a.gpus_list)
        rc = parse_gpus_list(a.gpus_list, r, d);
    if (!rc)
        rc = compare_run(&a, r, err, d);
    if (!rc && a.csv)
        rc = write_csv(a.csv, r, d);
    if (!rc && a.plot)
        rc = compare_plot(a.plot, r, d);
    if (!rc && a.json) {
        cJSON *doc = compare_json(r);
        if (!doc || json_print(out, doc) != 0)
            rc = cli_fail(d, CLI_ERUNTIME, "compare: out of memory while printing the JSON result");
        cJSON_Delete(doc);
    } else if (!rc) {
        compare_text(out, r);
        scaling_text(out, r);
        if (a.csv)
            fprintf(out, "\n  table written to %s\n", a.csv);
        if (a.plot)
            fprintf(out, "  plot written to %s\n", a.plot);
    }
    free(r);
    return rc;
}

/* ---- validate: the waterfall --------------------------------------------------------------------------- */

enum { WF_ANALYTIC, WF_SIM_ANALYTIC, WF_SIM_IDEAL, WF_SIM_TOPO, WF_COUNT };

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

typedef struct waterfall {
    model_job_t job;
    char header[1024];
    char topology[64];
    double total[WF_COUNT];
    double part[WF_COUNT][5];
    double max_link[WF_COUNT];
} waterfall_t;

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
    if (!rc)
        rc = scenario_resolve(&scn, &w->job, d);
    step_config_t cfg;
    step_config_default(&cfg);
    if (!rc)
        header_text(w->header, sizeof w->header, "validate", &w->job, &scn);
    if (!rc)
        cmd_sim_config(&scn, a->placement, &cfg);
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
        rc = simpoint_run(&w->job, &cfg, NULL, "--comm analytic", 0, &p, d);
    if (!rc) {
        w->total[WF_SIM_ANALYTIC] = p.step_time_s;
        parts_of(&p, w->part[WF_SIM_ANALYTIC]);
    }
    topo_item_t ideal;
    if (!rc)
        rc = parse_item("ideal", &ideal, d);
    if (!rc)
        rc = simulate_on(&w->job, &cfg, &ideal, 0, &p, d);
    if (!rc) {
        w->total[WF_SIM_IDEAL] = p.step_time_s;
        w->max_link[WF_SIM_IDEAL] = p.max_link_utilization;
        parts_of(&p, w->part[WF_SIM_IDEAL]);
    }
    if (!rc)
        rc = simulate_on(&w->job, &cfg, &chosen, 0, &p, d);
    if (!rc) {
        w->total[WF_SIM_TOPO] = p.step_time_s;
        w->max_link[WF_SIM_TOPO] = p.max_link_utilization;
        parts_of(&p, w->part[WF_SIM_TOPO]);
        snprintf(w->topology, sizeof w->topology, "%s", chosen.label);
    }
    return rc;
}

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
    fprintf(out, "waterfall: from the closed form to the simulated step on %s\n\n", w->topology);
    const double a = w->total[WF_ANALYTIC];
    fprintf(out, "  %-36s %12s %12s %9s  %s\n", "step", "total (s)", "change (s)", "change %", "from");
    fprintf(out, "  %-36s %12.6f %12s %9s  %s\n", WF_NAMES[0], a, "", "", WF_CAUSE[0]);
    for (int k = 1; k < WF_COUNT; k++) {
        const double dk = w->total[k] - w->total[k - 1];
        char moved[200];
        moved_text(w, k, moved, sizeof moved);
        fprintf(out, "  %-36s %12.6f %+12.6f %+8.2f%%  %s\n", WF_NAMES[k], w->total[k], dk,
                a > 0 ? 100.0 * dk / a : 0.0, WF_CAUSE[k]);
        fprintf(out, "  %-36s %12s %12s %9s    (%s)\n", "", "", "", "", moved);
    }
    const double gap = w->total[WF_SIM_TOPO] - a;
    fprintf(out, "  %-36s %12.6f %+12.6f %+8.2f%%  the sum of the changes\n", "simulated step (total)",
            w->total[WF_SIM_TOPO], gap, a > 0 ? 100.0 * gap / a : 0.0);
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
    config_json(&j, &w->job);
    return json_take(&j);
}

static int waterfall_plot(const char *path, const waterfall_t *w, cli_diag_t *d) {
    char tmp[1100];
    int rc = tmp_name(path, tmp, sizeof tmp, d);
    if (rc)
        return rc;
    static const char *const SHORT[WF_COUNT] = {"analytic", "+ scheduling", "+ collectives (ideal)",
                                                "+ topology"};
    sbuf_t b = {0};
    sb_printf(&b, "set terminal %s\nset output '%s'\n$wf << EOD\n", terminal_of(path), tmp);
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
    char topo[64];
    gp_label(topo, sizeof topo, w->topology);
    sb_printf(&b,
              "set title 'From the closed form to the simulated step (%s)'\nset ylabel 'seconds'\n"
              "set style fill solid 0.85 border -1\nset boxwidth 0.6\nunset key\nset grid ytics\n"
              "set xrange [-0.6:%d.6]\nset yrange [%.9g:%.9g]\n"
              "set palette defined (0 '#4c72b0', 1 '#dd8452', 2 '#55a868', 3 '#8172b2')\nset cbrange [0:3]\n"
              "unset colorbox\n"
              "plot $wf using 1:(($2+$3)/2):($1-0.3):($1+0.3):2:3:4:xtic(5) with boxxyerror fc palette, "
              "$wf using 1:3:(sprintf('%%.3f', ($4==1||$4==2) ? ($4==1 ? $3-$2 : $2-$3) : $3)) "
              "with labels offset 0,0.8\nset output\n",
              topo, WF_COUNT, lo - 0.15 * (hi - lo) - 1e-9 > 0 ? lo - 0.15 * (hi - lo) - 1e-9 : 0,
              hi + 0.15 * (hi - lo) + 1e-9);
    return plot_finish(&b, path, tmp, d);
}

int cmd_waterfall(const cli_args_t *args, FILE *out, FILE *err, cli_diag_t *d) {
    (void)err;
    cmp_args_t a;
    int rc = from_args(args, &a, d);
    if (rc)
        return rc;
    waterfall_t *w = calloc(1, sizeof *w);
    if (!w)
        return cli_fail(d, CLI_ERUNTIME, "validate: out of memory");
    rc = waterfall_run(&a, w, d);
    if (!rc && a.plot)
        rc = waterfall_plot(a.plot, w, d);
    if (!rc && a.json) {
        cJSON *doc = waterfall_json(w);
        if (!doc || json_print(out, doc) != 0)
            rc = cli_fail(d, CLI_ERUNTIME, "validate: out of memory while printing the JSON result");
        cJSON_Delete(doc);
    } else if (!rc) {
        waterfall_text(out, w);
        if (a.plot)
            fprintf(out, "  plot written to %s\n", a.plot);
    }
    free(w);
    return rc;
}
