/* nccl_sim_report.c - `stepsim collective` against measured nccl-tests runs, next to the reference
 * model's errors: the acceptance table of docs/engine.md, "Measured accuracy".
 *
 * Usage: nccl_sim_report [--every K] [--rows] [--check PCT] [--fidelity fast|step] [--calibration nccl|none]
 * [CSV]
 *                        [-- COLLECTIVE-OPTIONS]
 *   CSV defaults to tests/data/perlmutter-nccl.csv. Two schemas:
 *   - Perlmutter (op, num_nodes, gpus_per_node, size_bytes, t_meas_s, t_model_estimates_py_s): every row
 *     runs on the `perlmutter` topology preset at its nodes and GPUs per node; the reference column is
 *     the CSV's own t_model_estimates_py_s.
 *   - the H100 collection (dataset, collective, gpus, nodes, size_bytes, time_us): the 8 x H100 rows of
 *     one node (xla_h100_8gpu_intranode) run on one DGX H100 node of the `dgx-h100-superpod` preset
 *     with --nvls off (the table's allreduce peaks at ring's bus bandwidth, not NVLink SHARP's);
 *     the reference column is the reference model (model_collective_time_s, compat reference, system
 *     H100), as tools/nccl_report computes it.
 *   Rows of one (op, nodes, GPUs per node) go through one `stepsim collective --json --sizes MIN:MAX`
 *   call in-process (cli_main), so the table is exactly what the command predicts.
 *   --every K keeps every K-th (op, nodes, GPUs per node) group in file order (a deterministic sample);
 *   Arguments after -- go to every `stepsim collective` call (e.g. -- --nvlink-efficiency 0.7).
 *   --rows also prints every row as CSV (op, nodes, GPUs per node, size, measured, simulated, errors);
 *   --check PCT exits 1 unless, for every op and regime, the median absolute error of the messages of
 *   1 MiB and more is at most PCT percent.
 * Output: per op and regime (1, 2, 4 GPUs per node; single node) and size class (< 1 MiB, >= 1 MiB,
 * all): rows, the simulator's median signed, median absolute and mean absolute percentage error, and
 * the reference's median and mean absolute error. Error = (predicted - measured) / measured.
 * Exit codes: 0 success, 1 a --check failed, 2 bad usage or a bad file. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "alloc.h"
#include "cli.h"
#include "csv.h"
#include "stats.h"
#include "model.h"

#define MAX_FIELDS 64
#define MIB (1024.0 * 1024.0)
#define MAX_REGIMES 4

typedef struct row {
    char op[16];
    int64_t nodes, per_node;
    double size_bytes, measured_s, reference_s, simulated_s;
} row_t;

typedef struct table {
    row_t *rows;
    size_t n, cap;
    int h100;
} table_t;

static const char *const OPS[3] = {"allgather", "reducescatter", "allreduce"};
static const char *const REGIMES[MAX_REGIMES] = {"1 GPU/node", "2 GPUs/node", "4 GPUs/node", "single node"};

static int column(char **fields, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(fields[i], name) == 0)
            return i;
    return -1;
}

static int number(const char *text, double *out) {
    char *end = NULL;
    errno = 0;
    const double v = strtod(text, &end);
    if (end == text || *end || errno || !(v > 0.0))
        return -1;
    *out = v;
    return 0;
}

/* "all_reduce" and "allreduce" alike; NULL if not one of the three ops. */
static const char *op_name(const char *text) {
    static const char *const alias[3] = {"all_gather", "reduce_scatter", "all_reduce"};
    for (int i = 0; i < 3; i++)
        if (strcmp(text, OPS[i]) == 0 || strcmp(text, alias[i]) == 0)
            return OPS[i];
    return NULL;
}

static int push(table_t *t, const row_t *r) {
    if (t->n == t->cap) {
        const size_t cap = t->cap ? 2 * t->cap : 512;
        row_t *rows = alloc_realloc(t->rows, cap * sizeof *rows);
        if (!rows)
            return -1;
        t->rows = rows;
        t->cap = cap;
    }
    t->rows[t->n++] = *r;
    return 0;
}

/* Read the CSV; print one line and return -1 on error. */
static int read_csv(const char *path, table_t *t) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "nccl_sim_report: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char *line = NULL, *fl[MAX_FIELDS];
    size_t cap = 0;
    long no = 0;
    int c_op = -1, c_nodes = -1, c_gpn = -1, c_gpus = -1, c_size = -1, c_time = -1, c_ref = -1, c_set = -1,
        rc = 0;
    model_system_t h100;
    model_system_preset("H100", &h100);
    while (rc == 0 && getline(&line, &cap, f) >= 0) {
        no++;
        const int n = csv_split_line(line, fl, MAX_FIELDS);
        if (n < 0) {
            fprintf(stderr, "nccl_sim_report: %s: line %ld: unbalanced quotes or too many fields\n", path,
                    no);
            rc = -1;
            break;
        }
        if (no == 1) {
            c_op = column(fl, n, "op");
            t->h100 = c_op < 0;
            if (t->h100) {
                c_op = column(fl, n, "collective");
                c_set = column(fl, n, "dataset");
                c_gpus = column(fl, n, "gpus");
                c_time = column(fl, n, "time_us");
            } else {
                c_gpn = column(fl, n, "gpus_per_node");
                c_time = column(fl, n, "t_meas_s");
                c_ref = column(fl, n, "t_model_estimates_py_s");
            }
            c_nodes = column(fl, n, t->h100 ? "nodes" : "num_nodes");
            c_size = column(fl, n, "size_bytes");
            if (c_op < 0 || c_nodes < 0 || c_size < 0 || c_time < 0 ||
                (t->h100 ? c_gpus < 0 || c_set < 0 : c_gpn < 0 || c_ref < 0)) {
                fprintf(stderr, "nccl_sim_report: %s: line 1: not a Perlmutter or H100 nccl-tests CSV\n",
                        path);
                rc = -1;
            }
            continue;
        }
        if (n == 1 && !fl[0][0])
            continue;
        const int need = c_op > c_time ? c_op : c_time;
        if (n <= need || n <= c_size || n <= c_nodes) {
            fprintf(stderr, "nccl_sim_report: %s: line %ld: too few fields\n", path, no);
            rc = -1;
            break;
        }
        if (t->h100 && strcmp(fl[c_set], "xla_h100_8gpu_intranode") != 0)
            continue; /* the 2-node sweep and the single statements */
        row_t r;
        memset(&r, 0, sizeof r);
        const char *op = op_name(fl[c_op]);
        double nodes, gpus, time;
        if (!op || number(fl[c_nodes], &nodes) || number(fl[c_size], &r.size_bytes) ||
            number(fl[c_time], &time) || number(fl[t->h100 ? c_gpus : c_gpn], &gpus)) {
            fprintf(stderr,
                    "nccl_sim_report: %s: line %ld: unknown op or a field that is not a positive number\n",
                    path, no);
            rc = -1;
            break;
        }
        snprintf(r.op, sizeof r.op, "%s", op);
        r.nodes = (int64_t)nodes;
        r.per_node = t->h100 ? (int64_t)(gpus / nodes) : (int64_t)gpus;
        r.measured_s = t->h100 ? time * 1e-6 : time;
        if (t->h100) {
            const model_coll_op_t mop = strcmp(op, "allreduce") == 0   ? MODEL_COLL_ALLREDUCE
                                        : strcmp(op, "allgather") == 0 ? MODEL_COLL_ALLGATHER
                                                                       : MODEL_COLL_REDUCESCATTER;
            r.reference_s = model_collective_time_s(&h100, MODEL_COMPAT_REFERENCE, mop, r.size_bytes * 1e-9,
                                                    r.nodes * r.per_node, r.per_node);
        } else if (number(fl[c_ref], &r.reference_s)) {
            fprintf(stderr,
                    "nccl_sim_report: %s: line %ld: t_model_estimates_py_s is not a positive number\n", path,
                    no);
            rc = -1;
            break;
        }
        r.simulated_s = NAN;
        if (push(t, &r)) {
            fprintf(stderr, "nccl_sim_report: out of memory\n");
            rc = -1;
        }
    }
    if (rc == 0 && t->n == 0) {
        fprintf(stderr, "nccl_sim_report: %s: no data rows\n", path);
        rc = -1;
    }
    free(line);
    fclose(f);
    return rc;
}

/* ---- simulating through `stepsim collective` -------------------------------------------------------- */

typedef struct opts {
    int every, rows;
    double check_pct;
    const char *fidelity, *calibration;
    char **extra; /* more `stepsim collective` options (after --), NULL-terminated */
    int n_extra;
} opts_t;

static int same_group(const row_t *a, const row_t *b) {
    return strcmp(a->op, b->op) == 0 && a->nodes == b->nodes && a->per_node == b->per_node;
}

/* Run `stepsim collective --json` for the rows [lo, hi) of one group; fill their simulated_s. */
static int simulate_group(const table_t *t, size_t lo, size_t hi, const opts_t *o) {
    const row_t *r0 = &t->rows[lo];
    double min = r0->size_bytes, max = r0->size_bytes;
    for (size_t i = lo; i < hi; i++) {
        min = fmin(min, t->rows[i].size_bytes);
        max = fmax(max, t->rows[i].size_bytes);
    }
    char gpus[32], gpn[32], sizes[64];
    snprintf(gpus, sizeof gpus, "%lld", (long long)(r0->nodes * r0->per_node));
    snprintf(gpn, sizeof gpn, "%lld", (long long)r0->per_node);
    snprintf(sizes, sizeof sizes, "%.0f:%.0f", min, max);
    const char *topology = t->h100 ? "{\"preset\": \"dgx-h100-superpod\"}" : "perlmutter";
    char *argv[64] = {"stepsim", "collective", "--topology", (char *)topology, "--op", (char *)r0->op,
                      "--gpus", gpus, "--gpus-per-node", gpn, "--sizes", sizes, "--fidelity",
                      (char *)o->fidelity, "--calibration", (char *)o->calibration, "--json",
                      /* XLA's H100 table peaks at 393 GB/s of allreduce bus bandwidth, ring's range (NVIDIA:
                         ~370), not NVLink SHARP's ~480 (nccl-tests #212): it ran without NVLS */
                      t->h100 ? "--nvls" : NULL, "off"};
    int argc = t->h100 ? 19 : 17;
    for (int i = 0; i < o->n_extra && argc < 63; i++)
        argv[argc++] = o->extra[i];
    argv[argc] = NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return -1;
    const int rc = cli_main(argc, argv, out, stderr);
    fclose(out);
    cJSON *doc = rc == 0 ? cJSON_Parse(text) : NULL;
    free(text);
    if (!doc) {
        fprintf(stderr,
                "nccl_sim_report: stepsim collective --op %s --gpus %s --gpus-per-node %s failed (%d)\n",
                r0->op, gpus, gpn, rc);
        return -1;
    }
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(doc, "results"), *res;
    cJSON_ArrayForEach(res, results) {
        const double size = cJSON_GetObjectItemCaseSensitive(res, "size_bytes")->valuedouble;
        const double time = cJSON_GetObjectItemCaseSensitive(res, "time_s")->valuedouble;
        for (size_t i = lo; i < hi; i++)
            if (t->rows[i].size_bytes == size)
                t->rows[i].simulated_s = time;
    }
    cJSON_Delete(doc);
    return 0;
}

/* ---- the table ------------------------------------------------------------------------------------- */

static int regime_of(const row_t *r) {
    if (r->nodes == 1)
        return 3;
    return r->per_node == 1 ? 0 : r->per_node == 2 ? 1 : r->per_node == 4 ? 2 : -1;
}

typedef struct stats {
    size_t n;
    double sim_med, sim_med_abs, sim_mean_abs, ref_med_abs, ref_mean_abs;
} stats_t;

/* op NULL: every op; regime -1: every regime; size class 0 (< 1 MiB), 1 (>= 1 MiB), 2 (all). */
static stats_t group_stats(const table_t *t, const char *op, int regime, int size_class, double *scratch) {
    stats_t s;
    memset(&s, 0, sizeof s);
    double *sim = scratch, *sim_abs = scratch + t->n, *ref_abs = scratch + 2 * t->n;
    for (size_t i = 0; i < t->n; i++) {
        const row_t *r = &t->rows[i];
        if ((op && strcmp(r->op, op) != 0) || (regime >= 0 && regime_of(r) != regime) ||
            isnan(r->simulated_s))
            continue;
        if (size_class < 2 && (r->size_bytes >= MIB) != size_class)
            continue;
        sim[s.n] = 100.0 * (r->simulated_s - r->measured_s) / r->measured_s;
        sim_abs[s.n] = fabs(sim[s.n]);
        ref_abs[s.n] = fabs(100.0 * (r->reference_s - r->measured_s) / r->measured_s);
        s.sim_mean_abs += sim_abs[s.n];
        s.ref_mean_abs += ref_abs[s.n];
        s.n++;
    }
    if (s.n == 0)
        return s;
    s.sim_mean_abs /= (double)s.n;
    s.ref_mean_abs /= (double)s.n;
    s.sim_med = stats_median(sim, s.n);
    s.sim_med_abs = stats_median(sim_abs, s.n);
    s.ref_med_abs = stats_median(ref_abs, s.n);
    return s;
}

static int print_report(const table_t *t, const char *path, const opts_t *o) {
    static const char *const classes[3] = {"< 1 MiB", ">= 1 MiB", "all"};
    double *scratch = alloc_malloc(3 * t->n * sizeof *scratch);
    if (!scratch)
        return -1;
    size_t simulated = 0;
    for (size_t i = 0; i < t->n; i++)
        simulated += !isnan(t->rows[i].simulated_s);
    printf("%s: %zu of %zu rows simulated (every %d%s group), `stepsim collective` on %s, fidelity %s, "
           "calibration %s\n",
           path, simulated, t->n, o->every, o->every == 1 ? "st" : "th",
           t->h100 ? "one DGX H100 node (dgx-h100-superpod)" : "the perlmutter preset", o->fidelity,
           o->calibration);
    printf("error = (predicted - measured) / measured, in %%; med = median, |e| = absolute error\n\n");
    printf("| op            | regime      | size     |  rows | sim med | sim med|e| | sim mean|e| | ref "
           "med|e| | "
           "ref mean|e| |\n");
    printf(
        "|---------------|-------------|----------|------:|--------:|-----------:|------------:|-----------:|"
        "------------:|\n");
    int failed = 0;
    for (int op = 0; op <= 3; op++) {
        for (int rg = 0; rg <= MAX_REGIMES; rg++) {
            for (int sc = 0; sc < 3; sc++) {
                const char *opn = op < 3 ? OPS[op] : NULL;
                const int regime = rg < MAX_REGIMES ? rg : -1;
                const stats_t s = group_stats(t, opn, regime, sc, scratch);
                if (s.n == 0)
                    continue;
                printf("| %-13s | %-11s | %-8s | %5zu | %+7.1f | %10.1f | %11.1f | %10.1f | %11.1f |\n",
                       opn ? opn : "all ops", regime >= 0 ? REGIMES[regime] : "all", classes[sc], s.n,
                       s.sim_med, s.sim_med_abs, s.sim_mean_abs, s.ref_med_abs, s.ref_mean_abs);
                if (o->check_pct > 0 && opn && regime >= 0 && sc == 1 && s.sim_med_abs > o->check_pct) {
                    fprintf(stderr,
                            "nccl_sim_report: check: %s, %s, >= 1 MiB: median |error| %.1f%% > %.1f%%\n", opn,
                            REGIMES[regime], s.sim_med_abs, o->check_pct);
                    failed = 1;
                }
            }
        }
    }
    free(scratch);
    return failed;
}

static void usage(FILE *f) {
    fprintf(
        f, "usage: nccl_sim_report [--every K] [--rows] [--check PCT] [--fidelity fast|step] "
           "[--calibration nccl|none] [CSV] [-- COLLECTIVE-OPTIONS]\n"
           "  CSV defaults to tests/data/perlmutter-nccl.csv (also: tests/data/h100-nccl-collectives.csv)\n");
}

int main(int argc, char **argv) {
    const char *path = "tests/data/perlmutter-nccl.csv";
    opts_t o = {1, 0, 0.0, "fast", "nccl", NULL, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int has_value = i + 1 < argc;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--every") == 0 && has_value) {
            o.every = atoi(argv[++i]);
            if (o.every < 1) {
                fprintf(stderr, "nccl_sim_report: --every: %s must be >= 1\n", argv[i]);
                return 2;
            }
        } else if (strcmp(a, "--") == 0) {
            o.extra = argv + i + 1;
            o.n_extra = argc - i - 1;
            break;
        } else if (strcmp(a, "--rows") == 0) {
            o.rows = 1;
        } else if (strcmp(a, "--check") == 0 && has_value) {
            o.check_pct = atof(argv[++i]);
        } else if (strcmp(a, "--fidelity") == 0 && has_value) {
            o.fidelity = argv[++i];
        } else if (strcmp(a, "--calibration") == 0 && has_value) {
            o.calibration = argv[++i];
        } else if (a[0] == '-') {
            fprintf(stderr, "nccl_sim_report: %s: unknown option or missing value\n", a);
            usage(stderr);
            return 2;
        } else {
            path = a;
        }
    }
    table_t t = {NULL, 0, 0, 0};
    if (read_csv(path, &t)) {
        free(t.rows);
        return 2;
    }
    int group = 0, rc = 0;
    for (size_t lo = 0; lo < t.n && rc == 0;) {
        size_t hi = lo + 1;
        while (hi < t.n && same_group(&t.rows[lo], &t.rows[hi]))
            hi++;
        if (group++ % o.every == 0 && simulate_group(&t, lo, hi, &o))
            rc = 2;
        lo = hi;
    }
    if (rc == 0 && o.rows) {
        printf("op,nodes,gpus_per_node,size_bytes,measured_s,simulated_s,error_pct,reference_error_pct\n");
        for (size_t i = 0; i < t.n; i++) {
            const row_t *r = &t.rows[i];
            if (!isnan(r->simulated_s))
                printf("%s,%lld,%lld,%.0f,%.6g,%.6g,%.1f,%.1f\n", r->op, (long long)r->nodes,
                       (long long)r->per_node, r->size_bytes, r->measured_s, r->simulated_s,
                       100.0 * (r->simulated_s - r->measured_s) / r->measured_s,
                       100.0 * (r->reference_s - r->measured_s) / r->measured_s);
        }
        printf("\n");
    }
    if (rc == 0) {
        const int failed = print_report(&t, path, &o);
        rc = failed < 0 ? 2 : failed;
    }
    free(t.rows);
    return rc;
}
