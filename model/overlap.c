/* overlap.c - tensor-parallel communication overlap (training.tp_comm_overlap; docs/model-formulas.md,
 * section 16): Megatron-Core with Transformer Engine's userbuffers (--tp-comm-overlap) splits each
 * sequence-parallel all-gather and reduce-scatter of a block into chunks that run under the GEMM it
 * feeds or follows. Here each tensor-parallel collective of the block is attached to that GEMM's pass
 * with its method (ring exchange before the GEMM, pipelined chunks after it, or bulk beside the
 * weight-gradient GEMM), and the pass's exposed
 * communication is the closed form of model_overlap_exposed_s. The sums over the block (volumes,
 * collective counts, FLOPs) are unchanged: only where a collective sits and how much of it shows. */
#include <math.h>
#include <string.h>

#include "model_internal.h"

const char *model_overlap_name(model_overlap_t m) {
    switch (m) {
    case MODEL_OVERLAP_RING:
        return "ring";
    case MODEL_OVERLAP_PIPELINE:
        return "pipeline";
    case MODEL_OVERLAP_BULK:
        return "bulk";
    case MODEL_OVERLAP_NONE:
        break;
    }
    return "none";
}

/* C runs in n pieces of C/n. RING: n - 1 steps of T/(n-1), step k before piece k, piece 0 free:
 * the pieces end at max_k (k T/(n-1) + (n-k) C/n) = max(C, T + C/n). PIPELINE: n collectives of
 * T/n, collective k after piece k: the last ends at max(C + T/n, C/n + T). BULK: the collective after
 * piece 0, beside the others: max(C, C/n + T), the ring's value. */
double model_overlap_exposed_s(model_overlap_t method, int64_t chunks, double comm_s, double compute_s) {
    if (method == MODEL_OVERLAP_NONE || chunks < 2 || comm_s <= 0.0)
        return comm_s;
    const double piece_s = compute_s / (double)chunks;
    if (method == MODEL_OVERLAP_RING || method == MODEL_OVERLAP_BULK)
        return fmax(0.0, comm_s - compute_s + piece_s);
    return fmax(comm_s / (double)chunks, comm_s - compute_s + piece_s);
}

const char *model_cp_comm_name(model_cp_comm_t c) {
    return c == MODEL_CP_RING ? "ring" : c == MODEL_CP_ALLGATHER ? "allgather" : "?";
}

int model_cp_comm_parse(const char *name, model_cp_comm_t *out) {
    if (name && strcmp(name, "allgather") == 0)
        *out = MODEL_CP_ALLGATHER;
    else if (name && strcmp(name, "ring") == 0)
        *out = MODEL_CP_RING;
    else
        return MODEL_EINVAL;
    return MODEL_OK;
}

/* A GEMM of the block: a tensor-core layer with weights (not the attention core). */
static int is_gemm(const model_layer_t *ly) {
    return ly->tensor_core && ly->weights_gb > 0.0;
}

static int tp_colls_only(const model_pass_t *p) {
    for (int i = 0; i < p->n_colls; i++)
        if (p->colls[i].group != MODEL_GROUP_TP1)
            return 0;
    return p->n_colls > 0;
}

/* The router and the grouped expert GEMMs of a MoE block: no Transformer Engine userbuffers and,
 * with expert tensor parallelism 1, no tensor-parallel collective of their own to hide one under. */
static int expert_gemm(const model_layer_t *ly) {
    return strcmp(ly->name, "router") == 0 || strncmp(ly->name, "experts-", 8) == 0;
}

/* The next GEMM after layer i in pass order (forward: increasing, backward: decreasing), wrapping
 * around the block (the next block's first GEMM is this block's: every block is the same), not an
 * expert GEMM; -1. */
static int next_gemm(const model_block_t *blk, int i, int pass) {
    const int n = blk->n_layers;
    for (int k = 1; k < n; k++) {
        const int j = pass ? ((i - k) % n + n) % n : (i + k) % n;
        if (is_gemm(&blk->layers[j]) && !expert_gemm(&blk->layers[j]))
            return j;
    }
    return -1;
}

void model_i_tp_overlap_plan(model_block_t *blk) {
    for (int pass = 0; pass < 2; pass++) {
        /* first the collectives of the layers between GEMMs (the norms' all-gather of the GEMM's
         * input, forward; their reduce-scatter before the row-parallel GEMM's backward) move onto the
         * GEMM they feed, as ring exchanges */
        for (int i = 0; i < blk->n_layers; i++) {
            model_layer_t *ly = &blk->layers[i];
            model_pass_t *src = pass ? &ly->bwd : &ly->fwd;
            if (is_gemm(ly) || src->n_colls != 1 || !tp_colls_only(src))
                continue;
            const int j = next_gemm(blk, i, pass);
            if (j < 0)
                continue;
            model_pass_t *dst = pass ? &blk->layers[j].bwd : &blk->layers[j].fwd;
            if (dst->n_colls != 0)
                continue; /* the GEMM has a collective of its own: leave this one where it is */
            dst->colls[0] = src->colls[0];
            dst->n_colls = 1;
            dst->overlap = MODEL_OVERLAP_RING;
            dst->chunks = src->colls[0].group_size;
            memset(&src->colls[0], 0, sizeof src->colls[0]);
            src->n_colls = 0;
        }
        /* then a GEMM's own collective: forward, the reduce-scatter of its output in pipelined chunks;
         * backward, the input gradient's reduce-scatter beside the weight-gradient GEMM (bulk: the
         * two GEMMs have the same FLOPs, 2 b l e_l f_l each up to the -1 terms, so two pieces) */
        for (int i = 0; i < blk->n_layers; i++) {
            model_layer_t *ly = &blk->layers[i];
            model_pass_t *p = pass ? &ly->bwd : &ly->fwd;
            if (!is_gemm(ly) || p->overlap != MODEL_OVERLAP_NONE || p->n_colls != 1 || !tp_colls_only(p))
                continue;
            p->overlap = pass ? MODEL_OVERLAP_BULK : MODEL_OVERLAP_PIPELINE;
            p->chunks = pass ? 2 : p->colls[0].group_size;
        }
    }
}

/* Megatron-Core's context parallelism: the attention core (a tensor-core layer without weights:
 * fusedla, or materialised attention's score and value GEMMs) keeps its query shard and passes K and V
 * around the tp2 ranks, one block per step, while it computes on the block it has (forward); the
 * backward passes K and V and their gradients the same way. Its context-parallel collectives (the
 * all-gather of K and V, and the backward's reduce-scatter of their gradients) become the steps of a
 * ring exchange under it: their whole time T in tp2 - 1 steps, the attention C in tp2 pieces. */
void model_i_cp_ring_plan(model_block_t *blk) {
    for (int i = 0; i < blk->n_layers; i++) {
        model_layer_t *ly = &blk->layers[i];
        if (!ly->tensor_core || ly->weights_gb > 0.0)
            continue;
        for (int pass = 0; pass < 2; pass++) {
            model_pass_t *p = pass ? &ly->bwd : &ly->fwd;
            int ok = p->n_colls > 0;
            for (int c = 0; c < p->n_colls; c++)
                ok = ok && p->colls[c].group == MODEL_GROUP_TP2;
            if (!ok)
                continue;
            p->overlap = MODEL_OVERLAP_RING;
            p->chunks = p->colls[0].group_size;
        }
    }
}

void model_i_overlap_refresh(model_block_t *blk) {
    for (int i = 0; i < blk->n_layers; i++)
        for (int pass = 0; pass < 2; pass++) {
            model_pass_t *p = pass ? &blk->layers[i].bwd : &blk->layers[i].fwd;
            if (p->overlap == MODEL_OVERLAP_NONE)
                continue;
            double t = 0.0;
            for (int c = 0; c < p->n_colls; c++)
                t += p->colls[c].time_s;
            const double compute_s = p->comp_s + p->mem_exposed_s;
            p->comm_s = model_overlap_exposed_s(p->overlap, p->chunks, t, compute_s);
            p->time_s = compute_s + p->comm_s;
        }
}
