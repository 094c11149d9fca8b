/* check_search.c - checks `model_search_run --compat reference` against the reference's stored
 * search results (search-outputs.csv: top 10 per strategy, model, system, NVLink domain and GPU
 * count): the same number of feasible results, the same throughput at every rank (1e-9 relative),
 * and the same rank-0 configuration, iteration time and memory.
 * Usage: check_search [--every K] [CSV]   (K: check every K-th group only; default 1, all) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "csv.h"
#include "model.h"

#define REL 1e-9
#define TOP_K 10

typedef struct {
    int groups, failures, rows;
} tally_t;

static double cell_num(const csv_table_t *t, size_t r, const char *col) {
    const char *c = csv_cell(t, r, csv_column(t, col));
    return *c ? strtod(c, NULL) : NAN;
}

static const char *cell(const csv_table_t *t, size_t r, const char *col) {
    return csv_cell(t, r, csv_column(t, col));
}

static int close_rel(double a, double b) {
    return a == b || fabs(a - b) <= REL * fmax(fabs(a), fabs(b));
}

static int same_group(const csv_table_t *t, size_t a, size_t b) {
    static const char *const keys[] = {"strategy", "model", "system", "n_gpus"};
    for (size_t i = 0; i < 4; i++)
        if (strcmp(cell(t, a, keys[i]), cell(t, b, keys[i])) != 0)
            return 0;
    return 1;
}

/* Build the job of a group from its first row. */
static int group_job(const csv_table_t *t, size_t r, model_job_t *job, unsigned *mask) {
    char sys[64];
    snprintf(sys, sizeof sys, "%s", cell(t, r, "system"));
    char *dash = strstr(sys, "-NVS");
    if (dash)
        *dash = '\0';
    model_strategy_t st;
    memset(job, 0, sizeof *job);
    if (model_system_preset(sys, &job->system) ||
        model_transformer_preset(cell(t, r, "model"), &job->model) ||
        model_strategy_parse(cell(t, r, "strategy"), &st))
        return -1;
    job->system.nvlink_size = (int64_t)cell_num(t, r, "nvs");
    job->gpus = (int64_t)cell_num(t, r, "n_gpus");
    job->global_batch = 4096; /* every stored search used gbs 4096 */
    job->compat = MODEL_COMPAT_REFERENCE;
    *mask = 1u << st;
    return 0;
}

static int check_rank0(const csv_table_t *t, size_t r, const model_summary_t *s) {
    const model_parallel_t *p = &s->par;
    const int d1 = p->strategy == MODEL_STRATEGY_1D;
    int ok = close_rel(s->iteration_time_s, cell_num(t, r, "st_t")) &&
             close_rel(s->memory_gb, cell_num(t, r, "mem_GB"));
    ok = ok && p->dp == (int64_t)cell_num(t, r, "cfg_dp") && p->tp == (int64_t)cell_num(t, r, "cfg_tp");
    ok = ok && p->pp == (int64_t)cell_num(t, r, "cfg_pp") && p->mbs == (int64_t)cell_num(t, r, "cfg_mbs");
    if (!d1)
        ok = ok && p->tp1 == (int64_t)cell_num(t, r, "cfg_tp1") &&
             p->tp2 == (int64_t)cell_num(t, r, "cfg_tp2");
    if (p->strategy == MODEL_STRATEGY_2D)
        ok = ok && p->nb == (int64_t)cell_num(t, r, "cfg_nb");
    return ok;
}

/* Check the group starting at row r (n rows). Return the number of failures (0 or 1). */
static int check_group(const csv_table_t *t, size_t r, size_t n) {
    model_job_t job;
    unsigned mask;
    model_search_result_t res;
    if (group_job(t, r, &job, &mask) || model_search_run(&job, mask, TOP_K, &res) != MODEL_OK) {
        fprintf(stderr, "row %zu: cannot run the search\n", r + 1);
        return 1;
    }
    const int feasible = cell_num(t, r, "feasible") > 0.5;
    const int want = feasible ? (int)n : 0;
    int ok = res.n_results == want;
    for (int i = 0; ok && i < want; i++)
        ok = close_rel(res.results[i].throughput_samples_per_s,
                       cell_num(t, r + (size_t)i, "throughput_samples_per_s"));
    if (ok && want > 0)
        ok = check_rank0(t, r, &res.results[0]);
    if (!ok)
        fprintf(stderr, "MISMATCH %s %s %s n=%s: %d results (want %d), rank 0 %.12g samples/s (want %s)\n",
                cell(t, r, "strategy"), cell(t, r, "model"), cell(t, r, "system"), cell(t, r, "n_gpus"),
                res.n_results, want, res.n_results ? res.results[0].throughput_samples_per_s : 0.0,
                cell(t, r, "throughput_samples_per_s"));
    model_search_result_destroy(&res);
    return !ok;
}

int main(int argc, char **argv) {
    const char *path = "tests/data/search-outputs.csv";
    int every = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--every") == 0 && i + 1 < argc) {
            every = atoi(argv[++i]);
            if (every < 1) {
                fprintf(stderr, "check_search: --every: '%s' must be a positive integer\n", argv[i]);
                return 2;
            }
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "check_search: unknown option '%s' (usage: check_search [--every K] [CSV])\n",
                    argv[i]);
            return 2;
        } else {
            path = argv[i];
        }
    }
    csv_table_t t;
    if (csv_load(path, &t) != 0 || csv_column(&t, "throughput_samples_per_s") < 0) {
        fprintf(stderr, "check_search: %s: cannot read a search-outputs table\n", path);
        return 2;
    }
    tally_t tally = {0, 0, 0};
    const clock_t c0 = clock();
    int index = 0;
    for (size_t r = 1; r < t.n_rows;) {
        size_t n = 1;
        while (r + n < t.n_rows && same_group(&t, r, r + n))
            n++;
        if (index++ % every == 0) {
            tally.failures += check_group(&t, r, n);
            tally.groups++;
            tally.rows += (int)n;
        }
        r += n;
    }
    printf("check_search: %d groups (%d rows) checked, %d mismatches, %.2f s CPU\n", tally.groups, tally.rows,
           tally.failures, (double)(clock() - c0) / CLOCKS_PER_SEC);
    csv_free(&t);
    return tally.failures ? 1 : 0;
}
