/* block_view.c - one block's forward and backward passes as the engine ran them (step.h,
 * step_block_view): the operations of one GPU for one microbatch and one block, row by row (a run of
 * layers computed as one operation, then the collectives after it), with the part of each
 * collective no compute of that GPU hid, beside the model's per-layer times. */
#include <stdlib.h>
#include <string.h>

#include "step_internal.h"

/* The time of [a, b) not covered by the sorted, disjoint intervals iv[0..n). */
static sim_time_ps_t uncovered(sim_time_ps_t a, sim_time_ps_t b, sim_time_ps_t (*iv)[2], int64_t n) {
    sim_time_ps_t left = b - a;
    for (int64_t i = 0; i < n && iv[i][0] < b; i++) {
        const sim_time_ps_t lo = iv[i][0] > a ? iv[i][0] : a, hi = iv[i][1] < b ? iv[i][1] : b;
        if (hi > lo)
            left -= hi - lo;
    }
    return left;
}

static int by_start(const void *x, const void *y) {
    const sim_time_ps_t *a = x, *b = y;
    return a[0] < b[0] ? -1 : a[0] > b[0];
}

typedef struct item {
    sim_time_ps_t start, end;
    sim_op_id_t op;
} item_t;

static int item_order(const void *x, const void *y) {
    const item_t *a = x, *b = y;
    return a->start != b->start ? (a->start < b->start ? -1 : 1) : (a->op > b->op) - (a->op < b->op);
}

int step_block_view(const step_t *s, step_block_view_t *out) {
    memset(out, 0, sizeof *out);
    if (!s->ran || !s->e)
        return SIM_ESTATE;
    if (s->granularity != STEP_GRANULARITY_LAYER)
        return SIM_EINVAL;
    const sim_engine_t *e = s->e;
    const int32_t gpu = s->stage_gpus[0]; /* stage 0's first GPU, always simulated */
    const model_block_t *blk = &s->est.block;
    /* the GPU's compute intervals, and the first block stage 0 computes for microbatch 0 */
    int64_t n_comp = 0, cap = 256;
    sim_time_ps_t(*iv)[2] = malloc((size_t)cap * sizeof *iv);
    item_t *items = malloc(sizeof *items);
    if (!iv || !items) {
        free(iv);
        free(items);
        return SIM_ENOMEM;
    }
    int32_t block = -1;
    for (sim_op_id_t op = s->op0; op < s->op_end; op++) {
        step_meta_t m;
        step_meta_get(s, op, &m);
        if (m.gpu != gpu)
            continue;
        sim_time_ps_t a, b;
        sim_op_times(e, op, &a, &b);
        if (m.kind == STEP_OP_COMPUTE && !m.fixed) {
            if (n_comp == cap) {
                cap *= 2;
                sim_time_ps_t(*p)[2] = realloc(iv, (size_t)cap * sizeof *iv);
                if (!p) {
                    free(iv);
                    free(items);
                    return SIM_ENOMEM;
                }
                iv = p;
            }
            iv[n_comp][0] = a;
            iv[n_comp++][1] = b;
            if (m.microbatch == 0 && m.chunk == 0 && m.pass == 0 && m.layer0 >= 0 &&
                m.layer0 < blk->n_layers && m.n_blocks >= 1 && (block < 0 || m.first_block < block))
                block = m.first_block;
        }
    }
    qsort(iv, (size_t)n_comp, sizeof *iv, by_start);
    /* microbatch 0's compute operations on the GPU and its tensor- and context-parallel collectives,
     * by start time: a collective belongs to the compute operation before it */
    int64_t n_items = 0;
    for (sim_op_id_t op = s->op0; op < s->op_end && block >= 0; op++) {
        step_meta_t m;
        step_meta_get(s, op, &m);
        if (m.gpu == gpu && m.microbatch == 0 && m.chunk == 0 && (m.pass == 0 || m.pass == 1) &&
            (m.kind == STEP_OP_COMPUTE || m.kind == STEP_OP_TP))
            n_items++;
    }
    free(items);
    items = malloc((size_t)(n_items > 0 ? n_items : 1) * sizeof *items);
    if (!items) {
        free(iv);
        return SIM_ENOMEM;
    }
    n_items = 0;
    for (sim_op_id_t op = s->op0; op < s->op_end && block >= 0; op++) {
        step_meta_t m;
        step_meta_get(s, op, &m);
        if (m.gpu != gpu || m.microbatch != 0 || m.chunk != 0 || (m.pass != 0 && m.pass != 1) ||
            (m.kind != STEP_OP_COMPUTE && m.kind != STEP_OP_TP))
            continue;
        item_t *it = &items[n_items++];
        sim_op_times(e, op, &it->start, &it->end);
        it->op = op;
    }
    qsort(items, (size_t)n_items, sizeof *items, item_order);
    out->gpu = gpu;
    out->block = block;
    int in_block = 0; /* the last compute operation was one of the block's (then it is the last row) */
    for (int64_t i = 0; i < n_items; i++) {
        step_meta_t m;
        step_meta_get(s, items[i].op, &m);
        const double dur_s = sim_ps_to_s(items[i].end - items[i].start);
        if (m.kind == STEP_OP_COMPUTE && !m.fixed) {
            in_block = m.layer0 >= 0 && m.layer0 < blk->n_layers && m.layer1 >= 0 &&
                       m.layer1 < blk->n_layers && m.n_blocks >= 1 && block >= m.first_block &&
                       block < m.first_block + m.n_blocks && out->n < STEP_VIEW_MAX;
            if (!in_block)
                continue;
            step_view_row_t *r = &out->row[out->n++];
            r->pass = m.pass;
            r->layer0 = m.layer0 < m.layer1 ? m.layer0 : m.layer1;
            r->layer1 = m.layer0 < m.layer1 ? m.layer1 : m.layer0;
            r->first_layer = blk->layers[m.layer0].name;
            r->last_layer = blk->layers[m.layer1].name;
            r->blocks = m.n_blocks;
            r->compute_s = dur_s / m.n_blocks;
            for (int l = r->layer0; l <= r->layer1; l++)
                r->analytic_s += m.pass ? blk->layers[l].bwd.time_s : blk->layers[l].fwd.time_s;
        } else if (in_block &&
                   m.kind == STEP_OP_TP) { /* a collective (or its stand-in) after the row's compute */
            step_view_row_t *r = &out->row[out->n - 1];
            r->comm_s += dur_s;
            r->exposed_comm_s += sim_ps_to_s(uncovered(items[i].start, items[i].end, iv, n_comp));
        }
    }
    for (int i = 0; i < out->n; i++) {
        const step_view_row_t *r = &out->row[i];
        out->total_s[r->pass] += r->compute_s + r->exposed_comm_s;
        out->analytic_total_s[r->pass] += r->analytic_s;
    }
    free(iv);
    free(items);
    return SIM_OK;
}
