/* distopt.c - the distributed optimizer as Megatron-Core runs it with --overlap-grad-reduce and
 * --overlap-param-gather (training.dp_comm sharded-overlap; docs/model-formulas.md, section 16.5).
 *
 * Megatron-Core's DistributedDataParallel keeps each model chunk's parameters and gradients in
 * buckets of at least bucket_size parameters, filled in backward order. During the last microbatch's
 * backward a bucket's reduce-scatter is launched as soon as every gradient in it is final; the
 * reduce-scatters run one after the other on the communication stream. Before the first forward of
 * the next step the forward pre-hook of a bucket's first module waits for that bucket's all-gather
 * and dispatches the next bucket's, so bucket k + 1's all-gather runs under bucket k's forward. The
 * model places the all-gathers at the start of the same step, before and under the first
 * microbatch's forward: the first bucket's all-gather is exposed, the others by what exceeds the
 * forward they run under. */
#include <math.h>

#include "model_internal.h"

/* One FP8 parameter (Transformer Engine's Float8Tensor data), in GB. */
#define FP8_PARAM_GB 1e-9

double model_dp_allgather_gb(const model_job_t *job, double weights_gb) {
    const int fp8 = job->compat == MODEL_COMPAT_CORRECTED && job->training.fp8_param_gather &&
                    job->training.precision == MODEL_PRECISION_FP8 && job->system.element_gb > 0.0;
    return fp8 ? weights_gb * FP8_PARAM_GB / job->system.element_gb : weights_gb;
}

double model_dp_bucket_params(int64_t dp_group) {
    return fmax(40e6, 1e6 * (double)dp_group);
}

int model_dp_buckets(const double *params, int n, double bucket_params, int *bucket_of) {
    int bucket = 0;
    double held = 0.0;
    for (int i = 0; i < n; i++) {
        bucket_of[i] = bucket;
        held += params[i];
        if (held >= bucket_params) {
            bucket++;
            held = 0.0;
        }
    }
    return n > 0 && bucket_of[n - 1] == bucket ? bucket + 1 : bucket;
}

/* One bucket closed, in backward order: its reduce-scatter after its backward and the one before;
 * its all-gather before the forward of the bucket closed before it (the next one in forward order). */
typedef struct acc {
    double params, gb, fwd_s, bwd_s; /* the open bucket */
    double compute_end_s, rs_end_s;  /* the last microbatch's backward and the reduce-scatters */
    double ag_exposed_s, prev_ag_s;  /* prev_ag_s < 0: no bucket closed yet */
    double first_rs_s;
} acc_t;

static void close_bucket(const model_job_t *job, int64_t g, int64_t dom, acc_t *a) {
    const int any = g > 1 && a->gb > 0.0;
    const double ag_s = any ? model_collective_time_s(&job->system, job->compat, MODEL_COLL_ALLGATHER,
                                                      model_dp_allgather_gb(job, a->gb), g, dom)
                            : 0.0;
    const double rs_s =
        any ? model_collective_time_s(&job->system, job->compat, MODEL_COLL_REDUCESCATTER, a->gb, g, dom)
            : 0.0;
    a->compute_end_s += a->bwd_s;
    a->rs_end_s = fmax(a->rs_end_s, a->compute_end_s) + rs_s;
    if (a->prev_ag_s >= 0.0) /* the later bucket's all-gather runs under this one's forward */
        a->ag_exposed_s += fmax(0.0, a->prev_ag_s - a->fwd_s);
    else
        a->first_rs_s = rs_s;
    a->prev_ag_s = ag_s;
    a->params = a->gb = a->fwd_s = a->bwd_s = 0.0;
}

static void add_part(const model_job_t *job, int64_t g, int64_t dom, double bucket_params, acc_t *a,
                     double gb, double fwd_s, double bwd_s) {
    a->params += gb / job->system.element_gb;
    a->gb += gb;
    a->fwd_s += fwd_s;
    a->bwd_s += bwd_s;
    if (a->params >= bucket_params)
        close_bucket(job, g, dom, a);
}

/* The closed form on the first stage: the stage whose first forward starts the step and whose last
 * backward ends it (docs/model-formulas.md, section 16.5). Its parts in backward order: with one stage
 * the output layer, its blocks, the embedding (training.embedding). The same grouping as
 * model_dp_buckets, one part at a time. With interleaving the stage's chunks are one sequence of
 * buckets, and at each chunk boundary the other microbatches of the chunk (min(pp, nmb) - 1 of them,
 * the interleaved schedule's groups) add their compute to the window the boundary's collective runs
 * under. */
void model_i_distopt(const model_job_t *job, const model_block_t *blk, model_summary_t *out) {
    const model_parallel_t *p = &job->par;
    const int seqp = p->strategy == MODEL_STRATEGY_2D_SEQP;
    const int64_t g = p->dp * (seqp ? p->tp2 : 1), dom = p->nv_dp * (seqp ? p->nv_tp2 : 1);
    const int64_t blocks = out->layers_per_stage;
    const int emb = blk->n_edges > 0;
    const double bucket_params = model_dp_bucket_params(g);
    acc_t a = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0};
    if (emb && p->pp == 1)
        add_part(job, g, dom, bucket_params, &a, blk->last_weights_gb, blk->last_t_fwd_s, blk->last_t_bwd_s);
    /* interleaved: the stage's blocks are v chunks; between one chunk's first forward (last backward)
     * and the next chunk's, the schedule runs the other min(pp, nmb) - 1 microbatches of the chunk,
     * compute the chunk boundary's all-gather (reduce-scatter) runs under */
    const int64_t v = job->training.interleave > 1 ? job->training.interleave : 1;
    const int64_t per_chunk = v > 1 && blocks % v == 0 ? blocks / v : blocks;
    const double others =
        v > 1 ? (double)(p->pp < out->n_microbatches ? p->pp : out->n_microbatches) - 1.0 : 0.0;
    for (int64_t i = 0; i < blocks; i++) {
        const int boundary = v > 1 && i > 0 && i % per_chunk == 0;
        const double extra = boundary ? others * (double)per_chunk : 0.0;
        add_part(job, g, dom, bucket_params, &a, blk->weights_gb, blk->t_fwd_s * (1.0 + extra),
                 blk->t_bwd_s * (1.0 + extra));
    }
    if (emb)
        add_part(job, g, dom, bucket_params, &a, blk->first_weights_gb, blk->first_t_fwd_s,
                 blk->first_t_bwd_s);
    if (a.params > 0.0 || a.fwd_s > 0.0 || a.bwd_s > 0.0) /* the parts after the last full bucket */
        close_bucket(job, g, dom, &a);
    const double first_ag_s = fmax(a.prev_ag_s, 0.0); /* the first in forward order: exposed whole */
    out->dp_allgather_one_s = first_ag_s;
    out->dp_reducescatter_one_s = a.first_rs_s;
    out->dp_allgather_s = a.ag_exposed_s + first_ag_s;
    out->dp_reducescatter_s = fmax(0.0, a.rs_end_s - a.compute_end_s);
    out->dp_comm_s = out->dp_allgather_s + out->dp_reducescatter_s;
}
