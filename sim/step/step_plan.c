/* step_plan.c - the forward and backward pass of a run of layers (a block, the embedding, the output
 * layers) as a plan: runs of layers without communication merged into one compute segment (comp_s +
 * mem_exposed_s each, the roofline time), each collective of a layer after that layer's compute, and
 * SUMMA layers (whose panel broadcasts overlap their GEMM) and GEMMs whose tensor-parallel collective
 * runs in chunks under them (training.tp_comm_overlap) as segments of their own. The backward pass
 * visits the layers in reverse. */
#include "step_internal.h"

step_group_t step_group_of(model_group_t g) {
    switch (g) {
    case MODEL_GROUP_TP2:
        return STEP_GROUP_CP;
    case MODEL_GROUP_DP:
        return STEP_GROUP_DP;
    case MODEL_GROUP_EP:
        return STEP_GROUP_EP;
    case MODEL_GROUP_ETP:
        return STEP_GROUP_ETP;
    default:
        return STEP_GROUP_TP;
    }
}

static void flush(step_plan_t *p, step_seg_t *acc, int *open) {
    if (*open && p->n < STEP_MAX_SEGS)
        p->seg[p->n++] = *acc;
    *open = 0;
}

/* Full recomputation keeps only the block's input between its forward and backward passes: the
 * checkpoint is allocated by the forward's last computing segment and freed by the backward's last
 * one (collective segments carry no memory), and no layer keeps its own activations. */
static void keep_checkpoint(step_plan_t *p, double checkpoint_gb) {
    int last = -1;
    for (int i = 0; i < p->n; i++) {
        p->seg[i].act_gb = 0.0;
        if (p->seg[i].kind != STEP_SEG_COLL)
            last = i;
    }
    if (last >= 0)
        p->seg[last].act_gb = checkpoint_gb;
}

void step_plan_build(const model_layer_t *layers, int n_layers, int id0, double checkpoint_gb,
                     step_plan_t plans[2]) {
    for (int pass = 0; pass < 2; pass++) {
        step_plan_t *p = &plans[pass];
        step_seg_t acc = {0};
        int open = 0;
        p->n = 0;
        for (int k = 0; k < n_layers; k++) {
            const int li = pass ? n_layers - 1 - k : k, i = id0 + li;
            const model_layer_t *ly = &layers[li];
            const model_pass_t *ps = pass ? &ly->bwd : &ly->fwd;
            const double dur = ps->comp_s + ps->mem_exposed_s;
            if (ly->summa_overlap && ps->n_colls > 0) {
                flush(p, &acc, &open);
                const step_seg_t seg = {
                    STEP_SEG_SUMMA,    i, i, -1, dur, ps->flops_tflop, ps->hbm_gb, ly->activations_gb, 0,
                    MODEL_OVERLAP_NONE};
                if (p->n < STEP_MAX_SEGS)
                    p->seg[p->n++] = seg;
                continue;
            }
            if (ps->overlap != MODEL_OVERLAP_NONE && ps->n_colls >= 1 && ps->chunks > 1) {
                flush(p, &acc, &open);
                const step_seg_t seg = {
                    STEP_SEG_OVERLAP, i,          i, 0, dur, ps->flops_tflop, ps->hbm_gb, ly->activations_gb,
                    (int)ps->chunks,  ps->overlap};
                if (p->n < STEP_MAX_SEGS)
                    p->seg[p->n++] = seg;
                continue;
            }
            if (!open) {
                const step_seg_t start = {STEP_SEG_COMPUTE,  i, i, -1, 0.0, 0.0, 0.0, 0.0, 0,
                                          MODEL_OVERLAP_NONE};
                acc = start;
                open = 1;
            }
            acc.layer1 = i;
            acc.dur_s += dur;
            acc.flops_tflop += ps->flops_tflop;
            acc.hbm_gb += ps->hbm_gb;
            acc.act_gb += ly->activations_gb;
            if (ps->n_colls <= 0)
                continue;
            flush(p, &acc, &open);
            for (int c = 0; c < ps->n_colls && c < MODEL_MAX_COLLS; c++) {
                const step_seg_t seg = {STEP_SEG_COLL, i, i, c, 0.0, 0.0, 0.0, 0.0, 0, MODEL_OVERLAP_NONE};
                if (p->n < STEP_MAX_SEGS)
                    p->seg[p->n++] = seg;
            }
        }
        flush(p, &acc, &open);
        if (checkpoint_gb >= 0.0)
            keep_checkpoint(p, checkpoint_gb);
    }
}
