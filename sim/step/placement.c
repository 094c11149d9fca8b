/* placement.c - which GPU runs which rank: coordinates (tp1, tp2, stage, replica) <-> GPU id.
 *
 * A GPU id is block * P + local with P = nv_tp1 nv_tp2 nv_pp nv_dp. Each coordinate x of a dimension
 * of size n with nv members per domain splits into its in-domain part x mod nv and its block part
 * x / nv; local is the mixed-radix number of the in-domain parts (radices nv) and block that of the
 * block parts (radices n / nv), both in the placement's order, innermost first. So with P equal to
 * the NVLink domain every group has exactly its nv members in each domain it touches, and with the
 * default order (TP, CP, PP, DP) consecutive GPUs are consecutive tensor ranks, as in Megatron. */
#include <stdio.h>
#include <string.h>

#include "step.h"

static const char *const DIM_NAMES[STEP_DIM_COUNT] = {"tp", "cp", "pp", "dp"};

const char *step_dim_name(step_dim_t d) {
    return (unsigned)d < STEP_DIM_COUNT ? DIM_NAMES[d] : "?";
}

void step_placement_default(step_placement_t *out) {
    for (int i = 0; i < STEP_DIM_COUNT; i++)
        out->order[i] = (step_dim_t)i;
}

static int dim_of(const char *s, size_t n) {
    static const struct {
        const char *name;
        step_dim_t dim;
    } names[] = {{"tp", STEP_DIM_TP},  {"tp1", STEP_DIM_TP}, {"cp", STEP_DIM_CP},
                 {"tp2", STEP_DIM_CP}, {"pp", STEP_DIM_PP},  {"dp", STEP_DIM_DP}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i].name) == n && strncmp(names[i].name, s, n) == 0)
            return (int)names[i].dim;
    return -1;
}

int step_placement_parse(const char *text, step_placement_t *out) {
    int seen[STEP_DIM_COUNT] = {0}, n = 0;
    if (!text || !*text)
        return SIM_EINVAL;
    const char *p = text;
    for (;;) {
        const char *end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        const int d = dim_of(p, len);
        if (d < 0 || seen[d])
            return SIM_EINVAL;
        seen[d] = 1;
        out->order[n++] = (step_dim_t)d;
        if (!end)
            break;
        p = end + 1;
    }
    for (int d = 0; d < STEP_DIM_COUNT; d++) /* the rest in the default order */
        if (!seen[d])
            out->order[n++] = (step_dim_t)d;
    return SIM_OK;
}

char *step_placement_format(const step_placement_t *p, char *buf, size_t size) {
    snprintf(buf, size, "%s,%s,%s,%s", step_dim_name(p->order[0]), step_dim_name(p->order[1]),
             step_dim_name(p->order[2]), step_dim_name(p->order[3]));
    return buf;
}

/* Sizes and nv counts per dimension; 1d has no second tensor dimension. */
static void dims(const model_parallel_t *par, int64_t n[STEP_DIM_COUNT], int64_t nv[STEP_DIM_COUNT]) {
    const int one_d = par->strategy == MODEL_STRATEGY_1D;
    n[STEP_DIM_TP] = one_d ? par->tp : par->tp1;
    n[STEP_DIM_CP] = one_d ? 1 : par->tp2;
    n[STEP_DIM_PP] = par->pp;
    n[STEP_DIM_DP] = par->dp;
    nv[STEP_DIM_TP] = par->nv_tp1;
    nv[STEP_DIM_CP] = one_d ? 1 : par->nv_tp2;
    nv[STEP_DIM_PP] = par->nv_pp;
    nv[STEP_DIM_DP] = par->nv_dp;
    for (int d = 0; d < STEP_DIM_COUNT; d++)
        if (nv[d] < 1 || nv[d] > n[d] || n[d] % nv[d])
            nv[d] = 1; /* model_job_check rejects these; stay well defined anyway */
}

int64_t step_placement_gpu(const step_placement_t *pl, const model_parallel_t *par,
                           const int64_t x[STEP_DIM_COUNT]) {
    int64_t n[STEP_DIM_COUNT], nv[STEP_DIM_COUNT], local = 0, block = 0, ls = 1, bs = 1;
    dims(par, n, nv);
    for (int i = 0; i < STEP_DIM_COUNT; i++) {
        const step_dim_t d = pl->order[i];
        local += (x[d] % nv[d]) * ls;
        block += (x[d] / nv[d]) * bs;
        ls *= nv[d];
        bs *= n[d] / nv[d];
    }
    return block * ls + local;
}

void step_placement_coords(const step_placement_t *pl, const model_parallel_t *par, int64_t gpu,
                           int64_t x[STEP_DIM_COUNT]) {
    int64_t n[STEP_DIM_COUNT], nv[STEP_DIM_COUNT], p = 1;
    dims(par, n, nv);
    for (int d = 0; d < STEP_DIM_COUNT; d++)
        p *= nv[d];
    int64_t local = gpu % p, block = gpu / p;
    for (int i = 0; i < STEP_DIM_COUNT; i++) {
        const step_dim_t d = pl->order[i];
        const int64_t nb = n[d] / nv[d];
        x[d] = (block % nb) * nv[d] + local % nv[d];
        local /= nv[d];
        block /= nb;
    }
}
