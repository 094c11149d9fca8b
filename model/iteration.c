/* iteration.c - one training iteration from the block table (seed-model.md sections 7 and 8):
 * data-parallel collectives overlapped with one layer of one microbatch, pipeline p2p, the
 * (pp-1)/nmb bubble, and per-GPU memory. Identity: the breakdown adds up to the iteration time. */
#include <math.h>
#include <string.h>

#include "model_internal.h"

/* 7.1: one allgather (forward) and one reducescatter (backward) of a layer's weights per local
 * layer; only the first is fully exposed, the rest by what exceeds one layer's compute. */
static void data_parallel(const model_job_t *job, const model_block_t *blk, model_summary_t *out) {
    const model_parallel_t *p = &job->par;
    const int seqp = p->strategy == MODEL_STRATEGY_2D_SEQP;
    const int64_t g = p->dp * (seqp ? p->tp2 : 1), t = p->nv_dp * (seqp ? p->nv_tp2 : 1);
    const double n_l = (double)out->layers_per_stage;
    const double ag_s =
        model_collective_time_s(&job->system, job->compat, MODEL_COLL_ALLGATHER, blk->weights_gb, g, t);
    const double rs_s =
        model_collective_time_s(&job->system, job->compat, MODEL_COLL_REDUCESCATTER, blk->weights_gb, g, t);
    out->dp_allgather_one_s = ag_s;
    out->dp_reducescatter_one_s = rs_s;
    out->dp_allgather_s = ag_s + fmax(ag_s - blk->t_fwd_s, 0.0) * (n_l - 1.0);
    out->dp_reducescatter_s = rs_s + fmax(rs_s - blk->t_bwd_s, 0.0) * (n_l - 1.0);
    out->dp_comm_s = out->dp_allgather_s + out->dp_reducescatter_s;
}

/* 7.2: the activation of the block's last LayerNorm crosses each stage boundary, once per
 * microbatch and direction. Reference quirk 12.2: hops that leave the NVLink domain cost zero. */
static void pipeline(const model_job_t *job, const model_block_t *blk, model_summary_t *out) {
    const model_system_t *sys = &job->system;
    const int64_t pp = job->par.pp, t = job->par.nv_pp;
    const double v_gb = blk->layers[blk->n_layers - 1].activations_gb;
    double p2p_s = 0.0;
    if (pp > 1 && t == 1) {
        p2p_s = model_collective_time_s(sys, job->compat, MODEL_COLL_P2P, v_gb, 2, 1);
    } else if (pp > 1) {
        const double total = (double)(pp - 1), slow = floor((double)pp / (double)t - 1.0);
        const double fast_s = model_collective_time_s(sys, job->compat, MODEL_COLL_P2P, v_gb, 2, 2);
        const int64_t slow_n = job->compat == MODEL_COMPAT_REFERENCE ? 1 : 2;
        const double slow_s = model_collective_time_s(sys, job->compat, MODEL_COLL_P2P, v_gb, slow_n, 1);
        p2p_s = (total - slow) / total * fast_s + slow / total * slow_s;
    }
    out->p2p_volume_gb = v_gb;
    out->p2p_one_s = p2p_s;
    out->pp_fwd_s = out->pp_bwd_s = (double)out->n_microbatches * p2p_s;
    out->pp_comm_s = out->pp_fwd_s + out->pp_bwd_s;
}

static void memory(const model_job_t *job, const model_block_t *blk, model_summary_t *out) {
    const model_parallel_t *p = &job->par;
    const double n_l = (double)out->layers_per_stage;
    const int64_t seqp = p->strategy == MODEL_STRATEGY_2D_SEQP ? p->tp2 : 1;
    const int64_t in_flight = p->pp < out->n_microbatches ? p->pp : out->n_microbatches;
    out->weights_gb = blk->weights_gb * n_l;
    out->grads_gb = out->weights_gb;
    out->optimizer_gb = 6.0 * out->weights_gb / (double)(p->dp * seqp);
    out->activations_gb = blk->activations_gb * n_l * (double)in_flight;
    out->memory_gb = out->weights_gb + out->grads_gb + out->optimizer_gb + out->activations_gb;
    out->fits = out->memory_gb <= job->system.hbm_capacity_gb;
}

static void breakdown(const model_block_t *blk, double scale, model_summary_t *out) {
    double comp = 0.0, mem = 0.0, comm = 0.0, flops = 0.0;
    for (int i = 0; i < blk->n_layers; i++) {
        const model_layer_t *ly = &blk->layers[i];
        comp += ly->fwd.comp_s + ly->bwd.comp_s;
        mem += ly->fwd.mem_exposed_s + ly->bwd.mem_exposed_s;
        comm += ly->fwd.comm_s + ly->bwd.comm_s;
        flops += ly->fwd.flops_tflop + ly->bwd.flops_tflop;
    }
    out->compute_s = comp * scale;
    out->memory_s = mem * scale;
    out->tp_comm_s = comm * scale;
    out->flops_per_gpu_tflop = flops * scale;
}

/* Assemble the summary of a job whose block table is built. */
static void summarize(const model_job_t *job, const model_block_t *blk, model_summary_t *out) {
    const model_parallel_t *p = &job->par;
    memset(out, 0, sizeof *out);
    out->par = *p;
    out->n_microbatches = (job->global_batch / p->dp) / p->mbs;
    out->layers_per_stage = job->model.layers / p->pp;
    const double nmb = (double)out->n_microbatches, n_l = (double)out->layers_per_stage;
    data_parallel(job, blk, out);
    pipeline(job, blk, out);
    memory(job, blk, out);
    breakdown(blk, nmb * n_l, out);

    const double work_s = (blk->t_fwd_s + blk->t_bwd_s) * nmb * n_l + out->pp_comm_s;
    out->bubble_s = (double)(p->pp - 1) * work_s / nmb;
    out->iteration_time_s = work_s + out->bubble_s + out->dp_comm_s;
    out->throughput_samples_per_s = (double)job->global_batch / out->iteration_time_s;
    out->block_t_fwd_s = blk->t_fwd_s;
    out->block_t_bwd_s = blk->t_bwd_s;
    out->block_flops_tflop = blk->flops_tflop;
    out->block_activations_gb = blk->activations_gb;
    out->block_weights_gb = blk->weights_gb;
}

void model_i_summarize(const model_job_t *job, const model_block_t *blk, model_summary_t *out) {
    summarize(job, blk, out);
}

int model_estimate(const model_job_t *job, model_estimate_t *out) {
    if (model_job_check(job, NULL) != MODEL_OK)
        return MODEL_EINVAL;
    model_block_build(job, &out->block);
    summarize(job, &out->block, &out->summary);
    return MODEL_OK;
}
