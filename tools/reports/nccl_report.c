/* nccl_report.c - compare the reference and corrected collective models with measured NCCL times.
 *
 * Usage: nccl_report [--system NAME] [CSV]   (default CSV: tests/data/perlmutter-nccl.csv)
 * Reads one of two measured schemas, predicts every row with both compat modes and prints, per op,
 * regime (one GPU per node over the network; several GPUs per node over the network; one node) and
 * message class (< 8 MiB, >= 8 MiB), the row count and the median signed and mean absolute
 * percentage error of each mode, then the totals. Error = (predicted - measured) / measured.
 * Schemas: Perlmutter (op, num_nodes, gpus_per_node, size_bytes, t_meas_s; system A100) and the
 * H100 collection (collective, gpus, nodes, size_bytes, time_us; system H100; rows without a size
 * or a time, i.e. single statements, are skipped). The per-domain count t is GPUs per node.
 * Exit codes: 0 success, 2 bad usage or a missing or malformed file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "csv.h"
#include "stats.h"
#include "model.h"

#define MAX_FIELDS 64
#define SMALL_BYTES (8.0 * 1024.0 * 1024.0)

typedef struct row {
    model_coll_op_t op;
    int64_t nodes, per_node;
    double size_bytes, measured_s;
} row_t;

typedef struct table {
    row_t *rows;
    size_t n, cap;
} table_t;

/* Column indices of the schema found in the header; -1 if absent. */
typedef struct schema {
    int h100; /* 0: Perlmutter, 1: H100 collection */
    int op, nodes, per_node, gpus, size, time;
} schema_t;

typedef enum regime { REGIME_ONE_PER_NODE, REGIME_MULTI_PER_NODE, REGIME_ONE_NODE, REGIME_COUNT } regime_t;
static const char *const regime_names[REGIME_COUNT] = {"1 GPU/node", ">1 GPU/node", "single node"};

static int find_column(char **fields, int count, const char *name) {
    for (int i = 0; i < count; i++)
        if (strcmp(fields[i], name) == 0)
            return i;
    return -1;
}

static int schema_from_header(char **fields, int count, schema_t *sc, const char **missing) {
    sc->op = find_column(fields, count, "op");
    sc->h100 = sc->op < 0;
    if (sc->h100) {
        sc->op = find_column(fields, count, "collective");
        sc->nodes = find_column(fields, count, "nodes");
        sc->gpus = find_column(fields, count, "gpus");
        sc->time = find_column(fields, count, "time_us");
        sc->per_node = -1;
    } else {
        sc->nodes = find_column(fields, count, "num_nodes");
        sc->per_node = find_column(fields, count, "gpus_per_node");
        sc->time = find_column(fields, count, "t_meas_s");
        sc->gpus = -1;
    }
    sc->size = find_column(fields, count, "size_bytes");
    const struct {
        int idx;
        const char *name;
    } need[] = {{sc->op, sc->h100 ? "collective" : "op"},
                {sc->nodes, sc->h100 ? "nodes" : "num_nodes"},
                {sc->size, "size_bytes"},
                {sc->time, sc->h100 ? "time_us" : "t_meas_s"},
                {sc->h100 ? sc->gpus : sc->per_node, sc->h100 ? "gpus" : "gpus_per_node"}};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        if (need[i].idx < 0) {
            *missing = need[i].name;
            return -1;
        }
    }
    return 0;
}

static int parse_op(const char *text, model_coll_op_t *op) {
    static const struct {
        const char *name;
        model_coll_op_t op;
    } names[] = {{"allreduce", MODEL_COLL_ALLREDUCE},         {"all_reduce", MODEL_COLL_ALLREDUCE},
                 {"allgather", MODEL_COLL_ALLGATHER},         {"all_gather", MODEL_COLL_ALLGATHER},
                 {"reducescatter", MODEL_COLL_REDUCESCATTER}, {"reduce_scatter", MODEL_COLL_REDUCESCATTER}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(text, names[i].name) == 0) {
            *op = names[i].op;
            return 0;
        }
    }
    return -1;
}

static int parse_positive(const char *text, double *out) {
    char *end = NULL;
    errno = 0;
    const double value = strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 || !(value > 0.0))
        return -1;
    *out = value;
    return 0;
}

static int table_push(table_t *tab, const row_t *row) {
    if (tab->n == tab->cap) {
        const size_t cap = tab->cap ? 2 * tab->cap : 256;
        row_t *rows = alloc_realloc(tab->rows, cap * sizeof *rows);
        if (!rows)
            return -1;
        tab->rows = rows;
        tab->cap = cap;
    }
    tab->rows[tab->n++] = *row;
    return 0;
}

/* Parse one data line into *row. Return 1 for a row, 0 for a row to skip, -1 (with *why) on error. */
static int parse_row(char **fields, int count, const schema_t *sc, row_t *row, const char **why,
                     char *why_buf, size_t why_len) {
    const int last = sc->op > sc->nodes ? sc->op : sc->nodes;
    if (count <= last || count <= sc->size || count <= sc->time ||
        count <= (sc->h100 ? sc->gpus : sc->per_node)) {
        *why = "too few fields";
        return -1;
    }
    if (sc->h100 && (fields[sc->size][0] == '\0' || fields[sc->time][0] == '\0'))
        return 0; /* a single statement, not a sweep point */
    double nodes, gpus, time;
    if (parse_op(fields[sc->op], &row->op) != 0) {
        *why = "unknown collective";
        return -1;
    }
    const struct {
        int idx;
        double *out;
    } numbers[] = {{sc->nodes, &nodes},
                   {sc->size, &row->size_bytes},
                   {sc->time, &time},
                   {sc->h100 ? sc->gpus : sc->per_node, &gpus}};
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
        if (parse_positive(fields[numbers[i].idx], numbers[i].out) != 0) {
            snprintf(why_buf, why_len, "column %d: '%s' is not a positive number", numbers[i].idx + 1,
                     fields[numbers[i].idx]);
            *why = why_buf;
            return -1;
        }
    }
    row->nodes = (int64_t)nodes;
    row->per_node = sc->h100 ? (int64_t)(gpus / nodes) : (int64_t)gpus;
    row->measured_s = sc->h100 ? time * 1e-6 : time;
    if (row->nodes < 1 || row->per_node < 1) {
        *why = "fewer than one node or GPU per node";
        return -1;
    }
    return 1;
}

/* Read path into tab and sc. Print the error and return -1 on failure. */
static int read_csv(const char *path, table_t *tab, schema_t *sc) {
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "nccl_report: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char *line = NULL, *fields[MAX_FIELDS];
    size_t line_cap = 0;
    long line_no = 0;
    int rc = -1;
    const char *why = NULL;
    char why_buf[160];
    while (getline(&line, &line_cap, fp) >= 0) {
        line_no++;
        const int count = csv_split_line(line, fields, MAX_FIELDS);
        if (count < 0) {
            why = "unbalanced quotes or too many fields";
            goto err;
        }
        if (line_no == 1) {
            if (schema_from_header(fields, count, sc, &why) != 0) {
                fprintf(stderr, "nccl_report: %s: line 1: missing column '%s' (not a measured NCCL CSV)\n",
                        path, why);
                goto out;
            }
            continue;
        }
        if (count == 1 && fields[0][0] == '\0')
            continue; /* blank line */
        row_t row;
        const int got = parse_row(fields, count, sc, &row, &why, why_buf, sizeof why_buf);
        if (got < 0)
            goto err;
        if (got > 0 && table_push(tab, &row) != 0) {
            why = "out of memory";
            goto err;
        }
    }
    if (line_no == 0 || tab->n == 0) {
        fprintf(stderr, "nccl_report: %s: no data rows\n", path);
        goto out;
    }
    rc = 0;
    goto out;
err:
    fprintf(stderr, "nccl_report: %s: line %ld: %s\n", path, line_no, why);
out:
    free(line);
    fclose(fp);
    return rc;
}

static regime_t row_regime(const row_t *r) {
    if (r->nodes == 1)
        return REGIME_ONE_NODE;
    return r->per_node == 1 ? REGIME_ONE_PER_NODE : REGIME_MULTI_PER_NODE;
}

static double row_error_pct(const row_t *r, const model_system_t *sys, model_compat_t compat) {
    const double predicted_s = model_collective_time_s(sys, compat, r->op, r->size_bytes * 1e-9,
                                                       r->nodes * r->per_node, r->per_node);
    return 100.0 * (predicted_s - r->measured_s) / r->measured_s;
}

/* Selection of rows: op (MODEL_COLL_NONE = any), regime (REGIME_COUNT = any), size class
 * (0 small, 1 large, 2 any). */
typedef struct filter {
    model_coll_op_t op;
    regime_t regime;
    int size_class;
} filter_t;

static int row_matches(const row_t *r, const filter_t *f) {
    if (f->op != MODEL_COLL_NONE && r->op != f->op)
        return 0;
    if (f->regime != REGIME_COUNT && row_regime(r) != f->regime)
        return 0;
    return f->size_class == 2 || (r->size_bytes >= SMALL_BYTES) == f->size_class;
}

/* Print one line of the table; nothing if no row matches. scratch holds tab->n doubles. */
static void print_group(const table_t *tab, const model_system_t *sys, const filter_t *f, const char *label,
                        double *scratch) {
    static const model_compat_t modes[2] = {MODEL_COMPAT_REFERENCE, MODEL_COMPAT_CORRECTED};
    static const char *const size_names[3] = {"< 8 MiB", ">= 8 MiB", "all"};
    double med[2] = {0, 0}, mean_abs[2] = {0, 0};
    size_t count = 0;
    for (int m = 0; m < 2; m++) {
        count = 0;
        for (size_t i = 0; i < tab->n; i++) {
            if (!row_matches(&tab->rows[i], f))
                continue;
            scratch[count] = row_error_pct(&tab->rows[i], sys, modes[m]);
            mean_abs[m] += scratch[count] < 0 ? -scratch[count] : scratch[count];
            count++;
        }
        if (count == 0)
            return;
        mean_abs[m] /= (double)count;
        med[m] = stats_median(scratch, count);
    }
    printf("| %-13s | %-11s | %-8s | %5zu | %+8.1f | %7.1f | %+8.1f | %7.1f |\n", label,
           f->regime == REGIME_COUNT ? "all" : regime_names[f->regime], size_names[f->size_class], count,
           med[0], mean_abs[0], med[1], mean_abs[1]);
}

static void print_report(const table_t *tab, const model_system_t *sys, const char *path) {
    static const model_coll_op_t ops[] = {MODEL_COLL_ALLGATHER, MODEL_COLL_REDUCESCATTER,
                                          MODEL_COLL_ALLREDUCE, MODEL_COLL_NONE};
    double *scratch = alloc_malloc(tab->n * sizeof *scratch);
    if (!scratch) {
        fprintf(stderr, "nccl_report: out of memory\n");
        exit(2);
    }
    printf("%s: %zu rows, system %s; error = (predicted - measured) / measured, in %%\n\n", path, tab->n,
           sys->name);
    printf("| op            | regime      | size     |  rows | ref med  | ref |e| | corr med | corr |e| |\n");
    printf("|---------------|-------------|----------|------:|---------:|--------:|---------:|---------:|\n");
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        const char *label = ops[o] == MODEL_COLL_NONE ? "all ops" : model_coll_op_name(ops[o]);
        for (int rg = 0; rg <= REGIME_COUNT; rg++) {
            for (int sz = 0; sz < 3; sz++) {
                if (rg != REGIME_COUNT && sz == 2)
                    continue; /* per regime: the two size classes; per op: also the total */
                const filter_t f = {ops[o], (regime_t)rg, sz};
                print_group(tab, sys, &f, label, scratch);
            }
        }
    }
    free(scratch);
}

static void usage(FILE *out) {
    fprintf(out, "usage: nccl_report [--system NAME] [CSV]\n"
                 "  CSV defaults to tests/data/perlmutter-nccl.csv; NAME defaults to A100 for the\n"
                 "  Perlmutter schema and H100 for the H100 collection.\n");
}

int main(int argc, char **argv) {
    const char *path = "tests/data/perlmutter-nccl.csv", *system_name = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--system") == 0 && i + 1 < argc) {
            system_name = argv[++i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "nccl_report: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else {
            path = argv[i];
        }
    }
    table_t tab = {NULL, 0, 0};
    schema_t sc = {0, -1, -1, -1, -1, -1, -1};
    if (read_csv(path, &tab, &sc) != 0) {
        free(tab.rows);
        return 2;
    }
    model_system_t sys;
    if (!system_name)
        system_name = sc.h100 ? "H100" : "A100";
    if (model_system_preset(system_name, &sys) != MODEL_OK) {
        fprintf(stderr, "nccl_report: --system: unknown preset '%s'\n", system_name);
        free(tab.rows);
        return 2;
    }
    print_report(&tab, &sys, path);
    free(tab.rows);
    return 0;
}
