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
    double params, gb, ag_gb, fwd_s, bwd_s; /* the open bucket; ag_gb: its all-gather (weights as stored) */
    double compute_end_s, rs_end_s;         /* the last microbatch's backward and the reduce-scatters */
    double ag_exposed_s, prev_ag_s;         /* prev_ag_s < 0: no bucket closed yet */
    double first_rs_s;
} acc_t;

static void close_bucket(const model_job_t *job, int64_t g, int64_t dom, acc_t *a) {
    const int any = g > 1 && a->gb > 0.0;
    const double ag_s =
        any ? model_collective_time_s(&job->system, job->compat, MODEL_COLL_ALLGATHER, a->ag_gb, g, dom)
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
    a->params = a->gb = a->ag_gb = a->fwd_s = a->bwd_s = 0.0;
}

static void add_part(const model_job_t *job, int64_t g, int64_t dom, double bucket_params, acc_t *a,
                     double gb, double ag_gb, double fwd_s, double bwd_s) {
    a->params += gb / job->system.element_gb;
    a->gb += gb;
    a->ag_gb += ag_gb;
    a->fwd_s += fwd_s;
    a->bwd_s += bwd_s;
    if (a->params >= bucket_params)
        close_bucket(job, g, dom, a);
}

/* ---- with experts: two bucket sequences --------------------------------------------------------------
 *
 * Megatron-Core keeps the expert-parallel parameters (the routed experts) in buffers of their own,
 * bucketed with the same bucket size and reduced over the expert-data-parallel group
 * (DistributedDataParallel's expert-parallel buffers); the rest is bucketed over the data-parallel group
 * as above. Both sequences' collectives run one after the other on the one data-parallel stream, in the
 * order they are issued (they share the GPU's links; the step does the same): in the last microbatch's
 * backward, at the end of each part, the dense bucket it closes then the expert bucket it closes; before
 * the first forward, the first bucket of each sequence, then at each part that comes first in a bucket
 * (forward order) the wait for that bucket's all-gather and the dispatch of the sequence's next one. The
 * closed form is this recurrence over the first stage's parts (one model chunk: model_job_check refuses
 * interleaving here). */

typedef struct seq {
    int64_t g, dom;                      /* its group */
    double gb[3], ag_gb[3];              /* per kind of part (the output layer, a block, the embedding):
                                            gradients, and the weights as stored (the all-gather) */
    int bucket[MODEL_DISTOPT_PARTS_MAX]; /* per part, backward order */
    double bucket_gb[MODEL_DISTOPT_PARTS_MAX], bucket_ag_gb[MODEL_DISTOPT_PARTS_MAX];
    int n_buckets;
    double pending_s; /* the end of the dispatched all-gather not yet waited for; < 0: none */
} seq_t;

static double seq_coll_s(const model_job_t *job, const seq_t *q, model_coll_op_t op, double gb) {
    return q->g > 1 && gb > 0.0 ? model_collective_time_s(&job->system, job->compat, op, gb, q->g, q->dom)
                                : 0.0;
}

/* Dispatch the all-gather of bucket k (k < 0: none) at t on the stream that is free at *stream_s. */
static void seq_dispatch(const model_job_t *job, seq_t *q, int k, double t, double *stream_s) {
    q->pending_s = -1.0;
    const double gb = k >= 0 ? q->bucket_ag_gb[k] : 0.0;
    if (q->g <= 1 || gb <= 0.0)
        return;
    *stream_s = fmax(*stream_s, t) + seq_coll_s(job, q, MODEL_COLL_ALLGATHER, gb);
    q->pending_s = *stream_s;
}

/* The buckets of one sequence: Megatron-Core's grouping (model_dp_buckets), one part at a time. */
static void seq_buckets(seq_t *q, const int *kind, int n, double element_gb, double cap) {
    double held = 0.0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        q->bucket[i] = k;
        q->bucket_gb[k] = (i && q->bucket[i - 1] == k ? q->bucket_gb[k] : 0.0) + q->gb[kind[i]];
        q->bucket_ag_gb[k] = (i && q->bucket[i - 1] == k ? q->bucket_ag_gb[k] : 0.0) + q->ag_gb[kind[i]];
        held += q->gb[kind[i]] / element_gb;
        if (held >= cap) {
            k++;
            held = 0.0;
        }
    }
    q->n_buckets = n > 0 && q->bucket[n - 1] == k ? k + 1 : k;
}

static void distopt_experts(const model_job_t *job, const model_block_t *blk, model_summary_t *out, int64_t g,
                            int64_t dom) {
    const model_parallel_t *p = &job->par;
    const int emb = blk->n_edges > 0;
    const int64_t blocks = out->layers_per_stage;
    int64_t ep, ep_t, edp, edp_t;
    model_expert_groups(job, &ep, &ep_t, &edp, &edp_t);
    seq_t seqs[2];
    int kind[MODEL_DISTOPT_PARTS_MAX];
    seq_t *d = &seqs[0], *x = &seqs[1];
    d->g = g, d->dom = dom, x->g = edp, x->dom = edp_t;
    const double exp_ag = blk->expert_weights_gb - blk->expert_fp8_param_saving_gb;
    d->gb[0] = d->ag_gb[0] = blk->last_weights_gb;
    d->gb[1] = blk->weights_gb - blk->expert_weights_gb;
    d->ag_gb[1] = blk->weights_gb - blk->fp8_param_saving_gb - exp_ag;
    d->gb[2] = d->ag_gb[2] = blk->first_weights_gb;
    x->gb[0] = x->ag_gb[0] = x->gb[2] = x->ag_gb[2] = 0.0;
    x->gb[1] = blk->expert_weights_gb;
    x->ag_gb[1] = exp_ag;
    const double fwd[3] = {blk->last_t_fwd_s, blk->t_fwd_s, blk->first_t_fwd_s};
    const double bwd[3] = {blk->last_t_bwd_s, blk->t_bwd_s, blk->first_t_bwd_s};
    int n = 0; /* the first stage's parts in backward order (model_job_check bounds their number) */
    if (emb && p->pp == 1)
        kind[n++] = 0;
    for (int64_t i = 0; i < blocks && n < MODEL_DISTOPT_PARTS_MAX - 1; i++)
        kind[n++] = 1;
    if (emb)
        kind[n++] = 2;
    const double cap = model_dp_bucket_params(g);
    for (int k = 0; k < 2; k++)
        seq_buckets(&seqs[k], kind, n, job->system.element_gb, cap);
    /* the last microbatch's backward: each part's closing buckets reduce-scattered after it */
    double compute_s = 0.0, stream_s = 0.0, first_rs_s[2] = {0.0, 0.0};
    int closed[2] = {0, 0};
    for (int i = 0; i < n; i++) {
        compute_s += bwd[kind[i]];
        for (int k = 0; k < 2; k++) {
            const seq_t *q = &seqs[k];
            if (!(i == n - 1 || q->bucket[i + 1] != q->bucket[i]))
                continue;
            const double rs_s = seq_coll_s(job, q, MODEL_COLL_REDUCESCATTER, q->bucket_gb[q->bucket[i]]);
            if (!closed[k]++)
                first_rs_s[k] = rs_s;
            if (rs_s > 0.0)
                stream_s = fmax(stream_s, compute_s) + rs_s;
        }
    }
    out->dp_reducescatter_s = fmax(0.0, stream_s - compute_s);
    out->dp_reducescatter_one_s = first_rs_s[0] + first_rs_s[1];
    /* the first microbatch's forward, parts in forward order */
    double t = 0.0, fwd_sum = 0.0;
    stream_s = 0.0;
    for (int k = 0; k < 2; k++)
        seq_dispatch(job, &seqs[k], seqs[k].n_buckets - 1, 0.0, &stream_s);
    out->dp_allgather_one_s = stream_s;
    for (int i = n - 1; i >= 0; i--) {
        double start = t;
        for (int k = 0; k < 2; k++) {
            seq_t *q = &seqs[k];
            if (!(i == n - 1 || q->bucket[i + 1] != q->bucket[i]))
                continue;
            start = fmax(start, q->pending_s);
            seq_dispatch(job, q, q->bucket[i] - 1, t, &stream_s);
        }
        t = start + fwd[kind[i]];
        fwd_sum += fwd[kind[i]];
    }
    out->dp_allgather_s = fmax(0.0, t - fwd_sum);
    out->dp_comm_s = out->dp_allgather_s + out->dp_reducescatter_s;
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
    if (blk->expert_weights_gb > 0.0) {
        distopt_experts(job, blk, out, g, dom);
        return;
    }
    const int64_t blocks = out->layers_per_stage;
    const int emb = blk->n_edges > 0;
    const double bucket_params = model_dp_bucket_params(g);
    acc_t a = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0};
    if (emb && p->pp == 1)
        add_part(job, g, dom, bucket_params, &a, blk->last_weights_gb, blk->last_weights_gb,
                 blk->last_t_fwd_s, blk->last_t_bwd_s);
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
        add_part(job, g, dom, bucket_params, &a, blk->weights_gb, blk->weights_gb - blk->fp8_param_saving_gb,
                 blk->t_fwd_s * (1.0 + extra), blk->t_bwd_s * (1.0 + extra));
    }
    if (emb)
        add_part(job, g, dom, bucket_params, &a, blk->first_weights_gb, blk->first_weights_gb,
                 blk->first_t_fwd_s, blk->first_t_bwd_s);
    if (a.params > 0.0 || a.fwd_s > 0.0 || a.bwd_s > 0.0) /* the parts after the last full bucket */
        close_bucket(job, g, dom, &a);
    const double first_ag_s = fmax(a.prev_ag_s, 0.0); /* the first in forward order: exposed whole */
    out->dp_allgather_one_s = first_ag_s;
    out->dp_reducescatter_one_s = a.first_rs_s;
    out->dp_allgather_s = a.ag_exposed_s + first_ag_s;
    out->dp_reducescatter_s = fmax(0.0, a.rs_end_s - a.compute_end_s);
    out->dp_comm_s = out->dp_allgather_s + out->dp_reducescatter_s;
}
