/* study_report.c - turns the paper study's sweep (tools/paper-study.sh) into CSV tables and checks
 * its --compat reference half against the reference's stored search results.
 *
 * Usage: study_report STUDY.jsonl [--csv FILE] [--best FILE] [--check SEARCH_OUTPUTS.csv]
 *   --csv    one row per point (model, system, nvs, gpus, strategy, compat, status, the rank-0 layout's
 *            throughput, iteration time, memory, degrees, layout text and time breakdown), sorted by
 *            model, compat, system, nvs, strategy, gpus, so that each curve of a plot is one run of rows
 *   --best   one row per model, compat, system, nvs and gpus: the best strategy's rank-0 layout and
 *            its time breakdown (the breakdown figure)
 *   --check  every stored result of search-outputs.csv (top 10 per strategy, model, system, NVLink
 *            domain and GPU count, global batch 4096) must be reproduced by the reference points:
 *            the same throughput at every rank (1e-9 relative), and no result where none fits
 * Text fields never hold commas (messages have theirs turned into ';'), so the CSV needs no quoting.
 * Exit status: 0, 1 when a check fails, 2 on bad input.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "csv.h"

#define REL 1e-9
#define MAX_TOP 10

typedef struct point {
    char model[32], system[32], strategy[16], compat[16], status[16];
    long nvs, gpus;
    int n_results;
    double thr[MAX_TOP];
    double iter_s, mem_gb, breakdown_s[6];
    long deg[11]; /* dp tp tp1 tp2 pp mbs nb nv_tp1 nv_tp2 nv_dp nv_pp */
    double evaluated, feasible;
    char id[17];
    char error[240];
} point_t;

static const char *const DEGREES[11] = {"dp", "tp",     "tp1",    "tp2",   "pp",   "mbs",
                                        "nb", "nv_tp1", "nv_tp2", "nv_dp", "nv_pp"};
static const char *const PARTS[6] = {"compute", "memory", "tp_comm", "pp_comm", "dp_comm", "bubble"};

static const cJSON *get(const cJSON *o, const char *k) {
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static void text(char *dst, size_t n, const cJSON *v, const char *def) {
    snprintf(dst, n, "%s", cJSON_IsString(v) ? v->valuestring : def);
    for (char *p = dst; *p; p++)
        if (*p == ',' || *p == '\n' || *p == '"')
            *p = ';';
}

static double num(const cJSON *v) {
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* One line of the sweep; -1 if it is not a search line of the study. */
static int parse_line(const char *line, point_t *p) {
    cJSON *o = cJSON_Parse(line);
    const cJSON *scn = get(o, "scenario"), *res = get(o, "result");
    memset(p, 0, sizeof *p);
    if (!cJSON_IsObject(scn) || !cJSON_IsString(get(o, "id"))) {
        cJSON_Delete(o);
        return -1;
    }
    text(p->model, sizeof p->model, get(scn, "model"), "custom");
    text(p->system, sizeof p->system, get(scn, "system"), "custom");
    text(p->strategy, sizeof p->strategy, get(get(scn, "parallel"), "strategy"), "all");
    text(p->compat, sizeof p->compat, get(scn, "compat"), "corrected");
    text(p->id, sizeof p->id, get(o, "id"), "");
    p->nvs = (long)num(get(scn, "nvlink_size"));
    p->gpus = (long)num(get(scn, "gpus"));
    const cJSON *results = get(res, "results");
    p->n_results = cJSON_IsArray(results) ? cJSON_GetArraySize(results) : 0;
    if (p->n_results > MAX_TOP)
        p->n_results = MAX_TOP;
    for (int i = 0; i < p->n_results; i++)
        p->thr[i] = num(get(cJSON_GetArrayItem(results, i), "throughput_samples_per_s"));
    const cJSON *r0 = cJSON_GetArrayItem(results, 0);
    p->iter_s = num(get(r0, "iteration_time_s"));
    p->mem_gb = num(get(r0, "memory_gb"));
    for (int i = 0; i < 6; i++)
        p->breakdown_s[i] = num(get(get(r0, "breakdown_s"), PARTS[i]));
    for (int i = 0; i < 11; i++)
        p->deg[i] = (long)num(get(get(r0, "config"), DEGREES[i]));
    p->evaluated = num(get(res, "candidates_evaluated"));
    p->feasible = num(get(res, "candidates_feasible"));
    const cJSON *code = get(o, "exit_code");
    if (res && p->n_results > 0)
        snprintf(p->status, sizeof p->status, "ok");
    else if (cJSON_IsFalse(get(res, "fits")) || (cJSON_IsNumber(code) && code->valuedouble == 3))
        snprintf(p->status, sizeof p->status, "no-fit");
    else
        snprintf(p->status, sizeof p->status, "error");
    text(p->error, sizeof p->error, get(o, "error"), "");
    if (!p->error[0]) /* nothing fits: the result's note says why */
        text(p->error, sizeof p->error, get(res, "note"), "");
    cJSON_Delete(o);
    return 0;
}

static int by_curve(const void *a, const void *b) {
    const point_t *x = a, *y = b;
    int c;
    if ((c = strcmp(x->model, y->model)) || (c = strcmp(x->compat, y->compat)) ||
        (c = strcmp(x->system, y->system)))
        return c;
    if (x->nvs != y->nvs)
        return x->nvs < y->nvs ? -1 : 1;
    if ((c = strcmp(x->strategy, y->strategy)))
        return c;
    return (x->gpus > y->gpus) - (x->gpus < y->gpus);
}

/* Same model, compat, system, nvs and gpus (the strategy aside). */
static int same_config(const point_t *x, const point_t *y) {
    return !strcmp(x->model, y->model) && !strcmp(x->compat, y->compat) && !strcmp(x->system, y->system) &&
           x->nvs == y->nvs && x->gpus == y->gpus;
}

static void layout_text(const point_t *p, char *buf, size_t n) {
    if (strcmp(p->status, "ok") != 0) {
        buf[0] = '\0';
        return;
    }
    const long *d = p->deg;
    if (!strcmp(p->strategy, "1d"))
        snprintf(buf, n, "dp %ld tp %ld pp %ld mbs %ld nv %ld/%ld/%ld", d[0], d[1], d[4], d[5], d[7], d[9],
                 d[10]);
    else
        snprintf(buf, n, "dp %ld tp %ldx%ld pp %ld mbs %ld nb %ld nv %ldx%ld/%ld/%ld", d[0], d[2], d[3], d[4],
                 d[5], d[6], d[7], d[8], d[9], d[10]);
}

static void cell(FILE *f, double v) {
    if (isnan(v))
        fputs(",", f);
    else
        fprintf(f, ",%.17g", v);
}

static int write_csv(const char *path, const point_t *pts, size_t n) {
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "model,system,nvs,gpus,strategy,compat,status,throughput_samples_per_s,iteration_time_s,"
               "memory_gb");
    for (int i = 0; i < 11; i++)
        fprintf(f, ",%s", DEGREES[i]);
    fprintf(f, ",layout");
    for (int i = 0; i < 6; i++)
        fprintf(f, ",%s_s", PARTS[i]);
    fprintf(f, ",candidates_evaluated,candidates_feasible,id,error\n");
    for (size_t k = 0; k < n; k++) {
        const point_t *p = &pts[k];
        int ok = !strcmp(p->status, "ok");
        char layout[128];
        layout_text(p, layout, sizeof layout);
        fprintf(f, "%s,%s,%ld,%ld,%s,%s,%s", p->model, p->system, p->nvs, p->gpus, p->strategy, p->compat,
                p->status);
        cell(f, ok ? p->thr[0] : NAN);
        cell(f, ok ? p->iter_s : NAN);
        cell(f, ok ? p->mem_gb : NAN);
        for (int i = 0; i < 11; i++)
            cell(f, ok ? (double)p->deg[i] : NAN);
        fprintf(f, ",%s", layout);
        for (int i = 0; i < 6; i++)
            cell(f, ok ? p->breakdown_s[i] : NAN);
        cell(f, p->evaluated);
        cell(f, p->feasible);
        fprintf(f, ",%s,%s\n", p->id, p->error);
    }
    return fclose(f);
}

/* The best strategy for each model, compat, system, nvs and gpus (pts sorted by by_curve). */
static int write_best(const char *path, const point_t *pts, size_t n) {
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "model,system,nvs,gpus,compat,strategy,throughput_samples_per_s,iteration_time_s,layout");
    for (int i = 0; i < 6; i++)
        fprintf(f, ",%s_s", PARTS[i]);
    fprintf(f, "\n");
    /* Rows of one configuration are spread over the strategies: gather them by a second pass. */
    char *done = calloc(n ? n : 1, 1);
    if (!done) {
        fclose(f);
        return -1;
    }
    for (size_t k = 0; k < n; k++) {
        if (done[k])
            continue;
        const point_t *best = NULL;
        for (size_t j = k; j < n; j++) {
            if (done[j] || !same_config(&pts[k], &pts[j]))
                continue;
            done[j] = 1;
            if (!strcmp(pts[j].status, "ok") && (!best || pts[j].thr[0] > best->thr[0]))
                best = &pts[j];
        }
        if (!best)
            continue;
        char layout[128];
        layout_text(best, layout, sizeof layout);
        fprintf(f, "%s,%s,%ld,%ld,%s,%s,%.17g,%.17g,%s", best->model, best->system, best->nvs, best->gpus,
                best->compat, best->strategy, best->thr[0], best->iter_s, layout);
        for (int i = 0; i < 6; i++)
            fprintf(f, ",%.17g", best->breakdown_s[i]);
        fprintf(f, "\n");
    }
    free(done);
    return fclose(f);
}

/* ---- the check against search-outputs.csv ---------------------------------------------------- */

static const point_t *find(const point_t *pts, size_t n, const char *model, const char *system, long nvs,
                           long gpus, const char *strategy) {
    for (size_t k = 0; k < n; k++) {
        const point_t *p = &pts[k];
        if (!strcmp(p->compat, "reference") && !strcmp(p->model, model) && !strcmp(p->system, system) &&
            p->nvs == nvs && p->gpus == gpus && !strcmp(p->strategy, strategy))
            return p;
    }
    return NULL;
}

static int close_rel(double a, double b) {
    return a == b || fabs(a - b) <= REL * fmax(fabs(a), fabs(b));
}

static int check(const char *path, const point_t *pts, size_t n) {
    csv_table_t t;
    if (csv_load(path, &t) != 0 || csv_column(&t, "throughput_samples_per_s") < 0) {
        fprintf(stderr, "study_report: %s: cannot read a search-outputs table\n", path);
        return 2;
    }
    int c_strat = csv_column(&t, "strategy"), c_model = csv_column(&t, "model"),
        c_sys = csv_column(&t, "system");
    int c_nvs = csv_column(&t, "nvs"), c_gpus = csv_column(&t, "n_gpus"), c_feas = csv_column(&t, "feasible");
    int c_rank = csv_column(&t, "rank"), c_thr = csv_column(&t, "throughput_samples_per_s");
    long rank0 = 0, rank0_bad = 0, rows = 0, rows_bad = 0, nofit = 0, nofit_bad = 0, missing = 0;
    for (size_t r = 1; r < t.n_rows; r++) {
        char system[32];
        snprintf(system, sizeof system, "%s", csv_cell(&t, r, c_sys));
        char *dash = strstr(system, "-NVS");
        if (dash)
            *dash = '\0';
        long nvs = atol(csv_cell(&t, r, c_nvs)), gpus = atol(csv_cell(&t, r, c_gpus));
        const char *strategy = csv_cell(&t, r, c_strat), *model = csv_cell(&t, r, c_model);
        const point_t *p = find(pts, n, model, system, nvs, gpus, strategy);
        if (!p) {
            missing++;
            fprintf(stderr, "MISSING %s %s %s nvs %ld gpus %ld: not in the study\n", strategy, model, system,
                    nvs, gpus);
            continue;
        }
        if (atoi(csv_cell(&t, r, c_feas)) == 0) {
            nofit++;
            if (strcmp(p->status, "no-fit") != 0) {
                nofit_bad++;
                fprintf(stderr,
                        "MISMATCH %s %s %s nvs %ld gpus %ld: the reference found no layout, the study %s\n",
                        strategy, model, system, nvs, gpus, p->status);
            }
            continue;
        }
        int rank = atoi(csv_cell(&t, r, c_rank));
        double want = strtod(csv_cell(&t, r, c_thr), NULL);
        int ok = rank < p->n_results && close_rel(p->thr[rank], want);
        rows++;
        rows_bad += !ok;
        if (rank == 0) {
            rank0++;
            rank0_bad += !ok;
        }
        if (!ok)
            fprintf(stderr, "MISMATCH %s %s %s nvs %ld gpus %ld rank %d: %.17g samples/s, reference %.17g\n",
                    strategy, model, system, nvs, gpus, rank, rank < p->n_results ? p->thr[rank] : NAN, want);
    }
    printf("check: %ld rank-0 throughputs of %s compared (1e-9 relative): %ld reproduced, %ld mismatches\n",
           rank0, path, rank0 - rank0_bad, rank0_bad);
    printf("check: all %ld stored ranks (top 10): %ld reproduced, %ld mismatches; %ld groups where nothing "
           "fits: "
           "%ld agree, %ld mismatches; %ld groups missing from the study\n",
           rows, rows - rows_bad, rows_bad, nofit, nofit - nofit_bad, nofit_bad, missing);
    csv_free(&t);
    return rank0_bad || rows_bad || nofit_bad || missing ? 1 : 0;
}

int main(int argc, char **argv) {
    const char *in = NULL, *csv = NULL, *best = NULL, *ref = NULL;
    for (int i = 1; i < argc; i++) {
        const char **dst = !strcmp(argv[i], "--csv")     ? &csv
                           : !strcmp(argv[i], "--best")  ? &best
                           : !strcmp(argv[i], "--check") ? &ref
                                                         : NULL;
        if (dst && i + 1 < argc)
            *dst = argv[++i];
        else if (argv[i][0] != '-' && !in)
            in = argv[i];
        else {
            fprintf(stderr,
                    "study_report: %s: unexpected argument; usage: study_report STUDY.jsonl [--csv FILE] "
                    "[--best FILE] [--check SEARCH_OUTPUTS.csv]\n",
                    argv[i]);
            return 2;
        }
    }
    FILE *f = in ? fopen(in, "r") : NULL;
    if (!f) {
        fprintf(stderr, "study_report: %s: cannot open the sweep's results\n", in ? in : "(none given)");
        return 2;
    }
    size_t n = 0, cap = 1024, lineno = 0;
    point_t *pts = malloc(cap * sizeof *pts);
    char *line = NULL;
    size_t linecap = 0;
    while (pts && getline(&line, &linecap, f) > 0) {
        lineno++;
        if (n == cap) {
            point_t *bigger = realloc(pts, 2 * cap * sizeof *pts);
            if (!bigger)
                break;
            pts = bigger;
            cap *= 2;
        }
        if (parse_line(line, &pts[n]) != 0) {
            fprintf(stderr, "study_report: %s: line %zu is not a sweep line\n", in, lineno);
            free(line);
            free(pts);
            fclose(f);
            return 2;
        }
        n++;
    }
    free(line);
    fclose(f);
    if (!pts) {
        fprintf(stderr, "study_report: out of memory\n");
        return 2;
    }
    qsort(pts, n, sizeof *pts, by_curve);
    size_t ok = 0, nofit = 0;
    for (size_t k = 0; k < n; k++) {
        ok += !strcmp(pts[k].status, "ok");
        nofit += !strcmp(pts[k].status, "no-fit");
    }
    printf("study: %zu points: %zu with a layout, %zu where nothing fits, %zu other errors\n", n, ok, nofit,
           n - ok - nofit);
    int rc = 0;
    if (csv && write_csv(csv, pts, n) != 0) {
        fprintf(stderr, "study_report: %s: cannot write\n", csv);
        rc = 2;
    }
    if (best && write_best(best, pts, n) != 0) {
        fprintf(stderr, "study_report: %s: cannot write\n", best);
        rc = 2;
    }
    if (ref && !rc)
        rc = check(ref, pts, n);
    free(pts);
    return rc;
}
