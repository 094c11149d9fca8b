/* fsdp.c - fully sharded data parallelism (training.dp_comm fsdp; docs/model-formulas.md, section 16.7):
 * ZeRO stage 3 (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
 * Models", arXiv 1910.02054), as Megatron-Core's Megatron-FSDP and PyTorch's FSDP2 run it.
 *
 * Each GPU keeps 1/N of the parameters, gradients and optimizer states of its stage (N the
 * data-parallel group). The unit of sharding is a part of the stage: each transformer block, the
 * embedding, the output layer. Every microbatch all-gathers a unit's parameters before its forward,
 * frees them after it, all-gathers them again before its backward and reduce-scatters the unit's
 * gradients after it: per microbatch and unit 3 collectives of the unit's weights, 3 (N - 1) / N of
 * them sent per GPU (ZeRO's 1.5x the all-reduce's volume per microbatch).
 *
 * The collectives run one after another on the data-parallel stream (one NCCL communicator), in the
 * order they are issued; the compute runs the stage's unit passes (a unit's forward or backward of one
 * microbatch) in 1F1B order. Prefetch depth 1 (FSDP2's default, Megatron-FSDP's): the all-gather of
 * pass k + 1 is issued when pass k starts, i.e. once pass k - 1's compute has ended and the stream is
 * free; the reduce-scatter of a backward pass when its compute ends. With c_k the compute of pass k
 * (its block or edge time), a_k its all-gather, r_k its reduce-scatter (backward passes only), E_k
 * the end of its compute and D the time the data-parallel stream becomes free:
 *
 *     at the start of pass k:  D = max(D, E_(k-1)) + a_(k+1)   (A_(k+1) = D, the all-gather's end)
 *     S_k = max(E_(k-1), A_k),  E_k = S_k + c_k
 *     after a backward pass:   D = max(D, E_k) + r_k
 *
 * A_1 = a_1 (the first gather is exposed whole), a zero all-gather (no data-parallel group, a tied
 * output layer sharing the embedding's weights) occupies nothing and is waited for by nothing. The
 * step ends at max(E_P, D): the data-parallel communication exposed is that less the compute, split
 * into the all-gathers' stalls of the compute and the reduce-scatters' tail after it. This is the
 * simulated step's rule (sim/step/step_build.c) evaluated without the engine: with one stage they agree
 * to rounding. With pipeline stages the first stage's passes are walked in its 1F1B order without the
 * waits for the other stages, so communication the pipeline's own idle time would hide is charged. */
#include <math.h>

#include "model_internal.h"

typedef struct walk {
    const model_job_t *job;
    int64_t g, dom;
    double e_prev_s;  /* E_(k-1) */
    double dp_free_s; /* D */
    double ag_end_s;  /* A_k of the pass about to start; < 0: no all-gather to wait for */
    double compute_s; /* the sum of c_k */
    double stall_s;   /* the compute's waits for all-gathers */
    int started;
    double next_gb, next_c_s; /* the pass after the current one (the walk looks one ahead) */
    int next_bwd, has_next;
} walk_t;

static double coll_s(const walk_t *w, model_coll_op_t op, double gb) {
    if (w->g <= 1 || gb <= 0.0)
        return 0.0;
    return model_collective_time_s(&w->job->system, w->job->compat, op, gb, w->g, w->dom);
}

/* Run the buffered pass (next_*) now that the one after it (gb) is known. */
static void run_pass(walk_t *w, double following_gb) {
    /* at the start of the pass: issue the all-gather of the one after it */
    const double a_next = coll_s(w, MODEL_COLL_ALLGATHER, following_gb);
    double next_end = -1.0;
    if (a_next > 0.0) {
        w->dp_free_s = fmax(w->dp_free_s, w->e_prev_s) + a_next;
        next_end = w->dp_free_s;
    }
    const double s = w->ag_end_s > w->e_prev_s ? w->ag_end_s : w->e_prev_s;
    w->stall_s += s - w->e_prev_s;
    w->e_prev_s = s + w->next_c_s;
    w->compute_s += w->next_c_s;
    if (w->next_bwd) {
        const double r = coll_s(w, MODEL_COLL_REDUCESCATTER, w->next_gb);
        if (r > 0.0)
            w->dp_free_s = fmax(w->dp_free_s, w->e_prev_s) + r;
    }
    w->ag_end_s = next_end;
}

/* One unit pass in order: weights gb, compute c_s, backward or not. */
static void pass(walk_t *w, double gb, double c_s, int bwd) {
    if (!w->started) { /* the first all-gather, issued at the start of the step */
        w->started = 1;
        const double a = coll_s(w, MODEL_COLL_ALLGATHER, gb);
        w->dp_free_s = a;
        w->ag_end_s = a > 0.0 ? a : -1.0;
    } else {
        run_pass(w, gb);
    }
    w->next_gb = gb;
    w->next_c_s = c_s;
    w->next_bwd = bwd;
    w->has_next = 1;
}

/* One microbatch's forward (bwd 0) or backward (1) on the first stage: its units in pass order. */
static void stage_pass(walk_t *w, const model_block_t *blk, int64_t blocks, int first_edge, int last_edge,
                       int bwd) {
    if (!bwd && first_edge)
        pass(w, blk->first_weights_gb, blk->first_t_fwd_s, 0);
    if (bwd && last_edge)
        pass(w, blk->last_weights_gb, blk->last_t_bwd_s, 1);
    for (int64_t i = 0; i < blocks; i++)
        pass(w, blk->weights_gb, bwd ? blk->t_bwd_s : blk->t_fwd_s, bwd);
    if (!bwd && last_edge)
        pass(w, blk->last_weights_gb, blk->last_t_fwd_s, 0);
    if (bwd && first_edge)
        pass(w, blk->first_weights_gb, blk->first_t_bwd_s, 1);
}

void model_i_fsdp(const model_job_t *job, const model_block_t *blk, model_summary_t *out) {
    const model_parallel_t *p = &job->par;
    const int seqp = p->strategy == MODEL_STRATEGY_2D_SEQP;
    walk_t w = {0};
    w.job = job;
    w.g = p->dp * (seqp ? p->tp2 : 1);
    w.dom = p->nv_dp * (seqp ? p->nv_tp2 : 1);
    w.ag_end_s = -1.0;
    const int emb = blk->n_edges > 0;
    const int first_edge = emb, last_edge = emb && p->pp == 1;
    const int64_t m = out->n_microbatches, blocks = out->layers_per_stage;
    const int64_t warm = p->pp - 1 < m ? p->pp - 1 : m; /* 1F1B on the first stage */
    for (int64_t i = 0; i < warm; i++)
        stage_pass(&w, blk, blocks, first_edge, last_edge, 0);
    for (int64_t i = 0; i < m - warm; i++) {
        stage_pass(&w, blk, blocks, first_edge, last_edge, 0);
        stage_pass(&w, blk, blocks, first_edge, last_edge, 1);
    }
    for (int64_t i = 0; i < warm; i++)
        stage_pass(&w, blk, blocks, first_edge, last_edge, 1);
    if (w.has_next)
        run_pass(&w, 0.0);
    const double end_s = fmax(w.e_prev_s, w.dp_free_s);
    out->dp_allgather_one_s = coll_s(&w, MODEL_COLL_ALLGATHER, emb ? blk->first_weights_gb : blk->weights_gb);
    out->dp_reducescatter_one_s = coll_s(&w, MODEL_COLL_REDUCESCATTER, blk->weights_gb);
    out->dp_allgather_s = w.stall_s;
    out->dp_reducescatter_s = end_s - w.e_prev_s;
    out->dp_comm_s = out->dp_allgather_s + out->dp_reducescatter_s;
}

double model_i_fsdp_gathered_gb(const model_block_t *blk, int64_t pp, int stage_first, int stage_last) {
    double unit = blk->weights_gb;
    if (blk->n_edges > 0 && stage_first)
        unit = fmax(unit, blk->first_weights_gb);
    if (blk->n_edges > 0 && (stage_last || pp == 1))
        unit = fmax(unit, blk->last_weights_gb);
    return 4.0 * unit;
}
