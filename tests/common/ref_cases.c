/* ref_cases.c - see ref_cases.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_cases.h"

double ref_num(const csv_table_t *t, size_t r, const char *column) {
    const char *cell = csv_cell(t, r, csv_column(t, column));
    if (!*cell)
        return NAN;
    return strtod(cell, NULL);
}

static int64_t num_or(const csv_table_t *t, size_t r, const char *column, int64_t dflt) {
    double v = ref_num(t, r, column);
    return isnan(v) ? dflt : (int64_t)v;
}

int ref_close(double a, double b, double rel) {
    if (a == b)
        return 1;
    return fabs(a - b) <= rel * fmax(fabs(a), fabs(b));
}

int ref_case_job(const csv_table_t *t, size_t r, model_job_t *job) {
    memset(job, 0, sizeof *job);
    if (model_system_preset(csv_cell(t, r, csv_column(t, "system")), &job->system) ||
        model_transformer_preset(csv_cell(t, r, csv_column(t, "model")), &job->model) ||
        model_strategy_parse(csv_cell(t, r, csv_column(t, "strategy")), &job->par.strategy))
        return -1;
    job->compat = MODEL_COMPAT_REFERENCE;
    job->system.nvlink_size = num_or(t, r, "nvs", 0);
    job->gpus = num_or(t, r, "n_gpus", 0);
    job->global_batch = num_or(t, r, "global_batch_size", 0);
    model_parallel_t *p = &job->par;
    p->tp1 = num_or(t, r, "tp1", 1);
    p->tp2 = num_or(t, r, "tp2", 1);
    p->tp = num_or(t, r, "tp", p->tp1 * p->tp2);
    p->dp = num_or(t, r, "dp", 1);
    p->pp = num_or(t, r, "pp", 1);
    p->mbs = num_or(t, r, "mbs", 1);
    p->nb = num_or(t, r, "nb", 1);
    p->nv_tp1 = num_or(t, r, "nv_tp1", 1);
    p->nv_tp2 = num_or(t, r, "nv_tp2", 1);
    p->nv_dp = num_or(t, r, "nv_dp", 1);
    p->nv_pp = num_or(t, r, "nv_pp", 1);
    return 0;
}
