/* iteration.c - one training iteration from the block table (docs/model-formulas.md, sections 7 and 8):
 * data-parallel collectives overlapped with one layer of one microbatch, pipeline p2p, the
 * (pp-1)/nmb bubble, and per-GPU memory. Identity: the breakdown adds up to the iteration time.
 *
 * The corrected model with training options (model_training_t; docs/validation.md) assembles the
 * iteration per pipeline stage instead: stage i takes T_i per microbatch (its blocks, its edge
 * layers, its p2p), the iteration is nmb max T_i + (sum T_i - max T_i) / v (1F1B with unequal
 * stages: the slowest stage sets the pace, the others' first forward and last backward are the
 * bubble; v virtual stages divide it) + data-parallel communication + the optimizer step. With no
 * option set the original code path runs, so numbers are unchanged to the bit. */
#include <math.h>
#include <string.h>

#include "model_internal.h"

/* The Adam step of Megatron's mixed-precision optimizer, HBM bytes per parameter: copy the fp16
 * gradient into the fp32 main gradient (read 2, write 4), unscale and check for inf/nan (4 + 4),
 * the gradient norm for clipping (read 4), fused Adam (read gradient, parameter, momentum and
 * variance: 16; write parameter, momentum, variance: 12), and the copy of the fp32 parameters back
 * to the fp16 model (4 + 2). Every pass is a streaming kernel over the local parameters. */
#define OPTIMIZER_BYTES_PER_PARAM 52.0

int model_i_training_active(const model_job_t *job) {
    const model_training_t *t = &job->training;
    return job->compat == MODEL_COMPAT_CORRECTED &&
           (t->recompute != MODEL_RECOMPUTE_NONE || t->sequence_parallel != MODEL_SEQPAR_ON ||
            t->attention != MODEL_ATTENTION_FLASH || t->dp_comm != MODEL_DP_SHARDED || t->embedding ||
            t->optimizer_step || t->interleave > 1 || t->grad_accumulation != MODEL_GRAD_ACCUM_FUSED ||
            t->tp_comm_overlap || t->cp_comm != MODEL_CP_ALLGATHER || t->pp_comm_overlap ||
            t->pipeline != MODEL_PIPELINE_1F1B || t->fp8_param_gather);
}

/* 7.1: one allgather (forward) and one reducescatter (backward) of a layer's weights per local
 * layer; only the first is fully exposed, the rest by what exceeds one layer's compute. */
/* A data-parallel collective of a block's weights: the dense weights over the data-parallel group
 * (g, t members per domain), and with experts the routed experts' weights over the
 * expert-data-parallel group (model_expert_groups). A dense block: exactly the one collective. */
static double block_dp_coll_s(const model_job_t *job, const model_block_t *blk, model_coll_op_t op, int64_t g,
                              int64_t t) {
    /* the parameter all-gather moves the weights as stored (FP8 with training.fp8_param_gather) */
    const int ag = op == MODEL_COLL_ALLGATHER;
    const double exp_saving_gb = ag ? blk->expert_fp8_param_saving_gb : 0.0;
    const double saving_gb = ag ? blk->fp8_param_saving_gb - exp_saving_gb : 0.0;
    double s = model_collective_time_s(&job->system, job->compat, op,
                                       blk->weights_gb - blk->expert_weights_gb - saving_gb, g, t);
    if (blk->expert_weights_gb > 0.0) {
        int64_t ep, ep_t, edp, edp_t;
        model_expert_groups(job, &ep, &ep_t, &edp, &edp_t);
        s += model_collective_time_s(&job->system, job->compat, op, blk->expert_weights_gb - exp_saving_gb,
                                     edp, edp_t);
    }
    return s;
}

/* The optimizer state (6 bytes per 2-byte weight: fp32 main weights, momentum and variance) of
 * weights_gb of which n_l blocks' experts: sharded over the data-parallel group (shards), the
 * routed experts over the expert-data-parallel group. */
static double optimizer_state_gb(const model_job_t *job, const model_block_t *blk, double weights_gb,
                                 double n_l, double shards) {
    const double exp_gb = blk->expert_weights_gb * n_l;
    double gb = 6.0 * (weights_gb - exp_gb) / shards;
    if (exp_gb > 0.0) {
        int64_t ep, ep_t, edp, edp_t;
        model_expert_groups(job, &ep, &ep_t, &edp, &edp_t);
        gb += 6.0 * exp_gb / (double)edp;
    }
    return gb;
}

/* A stage of a MoE with leading dense blocks (model.moe.first_dense): its first dense_n blocks are
 * the dense block table's, the rest the MoE table's; NULL (or dense_n 0): every block is blk. */
typedef struct stage_mix {
    const model_block_t *moe, *dense;
    int64_t dense_n;
} stage_mix_t;

static void data_parallel(const model_job_t *job, const model_block_t *blk, const stage_mix_t *mix,
                          model_summary_t *out) {
    const model_parallel_t *p = &job->par;
    const int seqp = p->strategy == MODEL_STRATEGY_2D_SEQP;
    const int64_t g = p->dp * (seqp ? p->tp2 : 1), t = p->nv_dp * (seqp ? p->nv_tp2 : 1);
    const double n_l = (double)out->layers_per_stage;
    if (mix && mix->dense_n > 0) {
        /* the stage's first block (a dense one) fully exposed, every other block by what its
         * collective exceeds its own pass; the dense blocks' weights over dp, never over edp */
        const model_block_t *d = mix->dense, *m = mix->moe;
        const double nd = (double)mix->dense_n, nm = n_l - nd;
        const double ag_d = block_dp_coll_s(job, d, MODEL_COLL_ALLGATHER, g, t);
        const double rs_d = block_dp_coll_s(job, d, MODEL_COLL_REDUCESCATTER, g, t);
        const double ag_m = nm > 0.0 ? block_dp_coll_s(job, m, MODEL_COLL_ALLGATHER, g, t) : 0.0;
        const double rs_m = nm > 0.0 ? block_dp_coll_s(job, m, MODEL_COLL_REDUCESCATTER, g, t) : 0.0;
        out->dp_allgather_one_s = ag_d;
        out->dp_reducescatter_one_s = rs_d;
        out->dp_allgather_s =
            ag_d + fmax(ag_d - d->t_fwd_s, 0.0) * (nd - 1.0) + fmax(ag_m - m->t_fwd_s, 0.0) * nm;
        out->dp_reducescatter_s =
            rs_d + fmax(rs_d - d->t_bwd_s, 0.0) * (nd - 1.0) + fmax(rs_m - m->t_bwd_s, 0.0) * nm;
        out->dp_comm_s = out->dp_allgather_s + out->dp_reducescatter_s;
        return;
    }
    const double ag_s = block_dp_coll_s(job, blk, MODEL_COLL_ALLGATHER, g, t);
    const double rs_s = block_dp_coll_s(job, blk, MODEL_COLL_REDUCESCATTER, g, t);
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
    out->grads_gb = blk->weights_gb * n_l; /* gradients and optimizer states: at the element size */
    out->weights_gb = (blk->weights_gb - blk->fp8_param_saving_gb) * n_l;
    out->optimizer_gb = optimizer_state_gb(job, blk, out->grads_gb, n_l, (double)(p->dp * seqp));
    out->activations_gb = blk->activations_gb * n_l * (double)in_flight;
    out->fp8_weights_gb = blk->fp8_weights_gb * n_l;
    out->memory_gb = out->weights_gb + out->grads_gb + out->optimizer_gb + out->activations_gb;
    out->memory_gb += out->fp8_weights_gb; /* 0 in BF16: the sum above is unchanged */
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

/* ---- the corrected model with training options -------------------------------------------- */

/* One pipeline transfer: the block output each rank sends. Without sequence parallelism in 1d the
 * output is replicated over the tensor group; Megatron's scatter/gather optimisation (Narayanan et
 * al. 2021, section 4.1) sends 1/tp of it per rank over its own NIC and all-gathers it over the
 * tensor group on arrival. Otherwise as pipeline(). */
static double p2p_transfer_s(const model_job_t *job, const model_block_t *blk, double *volume_gb) {
    const model_system_t *sys = &job->system;
    const model_parallel_t *p = &job->par;
    const int64_t pp = p->pp, t = p->nv_pp;
    double v_gb = blk->output_gb, gather_s = 0.0;
    if (job->training.sequence_parallel == MODEL_SEQPAR_OFF && p->tp > 1) {
        gather_s = model_collective_time_s(sys, job->compat, MODEL_COLL_ALLGATHER, v_gb, p->tp, p->nv_tp1);
        v_gb /= (double)p->tp;
    }
    *volume_gb = v_gb;
    if (pp <= 1)
        return 0.0;
    double p2p_s;
    if (t == 1) {
        p2p_s = model_collective_time_s(sys, job->compat, MODEL_COLL_P2P, v_gb, 2, 1);
    } else {
        const double total = (double)(pp - 1), slow = floor((double)pp / (double)t - 1.0);
        const double fast_s = model_collective_time_s(sys, job->compat, MODEL_COLL_P2P, v_gb, 2, 2);
        const double slow_s = model_collective_time_s(sys, job->compat, MODEL_COLL_P2P, v_gb, 2, 1);
        p2p_s = (total - slow) / total * fast_s + slow / total * slow_s;
    }
    return p2p_s + gather_s;
}

/* Sum the layer components of a set of layers into comp / mem / comm / flops. */
static void add_layers(const model_layer_t *ly, int n, double scale, double acc[4]) {
    for (int i = 0; i < n; i++) {
        acc[0] += (ly[i].fwd.comp_s + ly[i].bwd.comp_s) * scale;
        acc[1] += (ly[i].fwd.mem_exposed_s + ly[i].bwd.mem_exposed_s) * scale;
        acc[2] += (ly[i].fwd.comm_s + ly[i].bwd.comm_s) * scale;
        acc[3] += (ly[i].fwd.flops_tflop + ly[i].bwd.flops_tflop) * scale;
    }
}

/* Data-parallel gradient communication of a stage holding weights_gb, and the tied-embedding
 * gradient all-reduce between the first and the last stage. */
static void data_parallel_training(const model_job_t *job, const model_block_t *blk, const stage_mix_t *mix,
                                   double weights_gb, model_summary_t *out) {
    const model_parallel_t *p = &job->par;
    const model_training_t *t = &job->training;
    const int seqp = p->strategy == MODEL_STRATEGY_2D_SEQP;
    const int64_t g = p->dp * (seqp ? p->tp2 : 1), dom = p->nv_dp * (seqp ? p->nv_tp2 : 1);
    if (t->dp_comm == MODEL_DP_ALLREDUCE || t->dp_comm == MODEL_DP_ALLREDUCE_OVERLAP) {
        /* the routed experts' gradients over the expert-data-parallel group, the rest over dp */
        const double exp_gb = blk->expert_weights_gb * (double)out->layers_per_stage;
        double ar_s = model_collective_time_s(&job->system, job->compat, MODEL_COLL_ALLREDUCE,
                                              weights_gb - exp_gb, g, dom);
        if (exp_gb > 0.0) {
            int64_t ep, ep_t, edp, edp_t;
            model_expert_groups(job, &ep, &ep_t, &edp, &edp_t);
            ar_s +=
                model_collective_time_s(&job->system, job->compat, MODEL_COLL_ALLREDUCE, exp_gb, edp, edp_t);
        }
        out->dp_allreduce_s = ar_s;
        if (t->dp_comm == MODEL_DP_ALLREDUCE_OVERLAP) {
            /* buckets all-reduce while the last microbatch's backward runs; the first layer's
             * gradients are ready only at its very end */
            const double n_l = (double)out->layers_per_stage;
            out->dp_allreduce_s = fmax(ar_s - n_l * blk->t_bwd_s, ar_s / n_l);
        }
        out->dp_comm_s = out->dp_allreduce_s;
    } else if (t->dp_comm == MODEL_DP_SHARDED_OVERLAP) {
        model_i_distopt(job, blk, out); /* Megatron-Core's buckets, the edge layers' among them */
    } else if (t->dp_comm == MODEL_DP_FSDP) {
        model_i_fsdp(job, blk, out); /* every unit gathered twice and reduced once per microbatch */
    } else {
        data_parallel(job, blk, mix, out);
        /* the edge layers' weights: one more all-gather and reduce-scatter, not overlapped */
        const double edge_gb = weights_gb - blk->weights_gb * (double)out->layers_per_stage;
        if (edge_gb > 0.0)
            out->dp_comm_s +=
                model_collective_time_s(&job->system, job->compat, MODEL_COLL_ALLGATHER, edge_gb, g, dom) +
                model_collective_time_s(&job->system, job->compat, MODEL_COLL_REDUCESCATTER, edge_gb, g, dom);
    }
    if (t->pipeline == MODEL_PIPELINE_DUALPIPE && p->pp > 1) {
        /* DualPipe (pipeline.c): every GPU all-reduces its gradients, its stage's and its copy of the
         * mirror stage's (the tied embedding's among them), with the mirror GPU's; in embedding_sync_s */
        const int64_t same_domain = p->nv_pp == p->pp ? 2 : 1;
        out->embedding_sync_s = model_collective_time_s(&job->system, job->compat, MODEL_COLL_ALLREDUCE,
                                                        weights_gb, 2, same_domain);
        out->dp_comm_s += out->embedding_sync_s;
    } else if (t->embedding && p->pp > 1 && !job->model.untied_embeddings) {
        /* the tied word-embedding gradient: the output GEMM's copy on the last stage and the first's */
        double emb_gb = 0.0;
        for (int i = 0; i < blk->n_edges; i++)
            if (blk->edges[i].module == MODEL_MODULE_OUTPUT && blk->edges[i].tensor_core)
                emb_gb = blk->edges[i].weights_gb;
        const int64_t same_domain = p->nv_pp == p->pp ? 2 : 1;
        out->embedding_sync_s =
            model_collective_time_s(&job->system, job->compat, MODEL_COLL_ALLREDUCE, emb_gb, 2, same_domain);
        out->dp_comm_s += out->embedding_sync_s;
    }
}

/* Memory per GPU of one stage: in_flight microbatches of its blocks and edge layers. */
static double stage_memory(const model_job_t *job, const model_block_t *blk, double weights_gb,
                           double in_flight, double edge_acts_gb, double gathered_gb,
                           model_summary_t *parts) {
    const model_parallel_t *p = &job->par;
    const double n_l = (double)(job->model.layers / p->pp);
    const int64_t seqp = p->strategy == MODEL_STRATEGY_2D_SEQP ? p->tp2 : 1;
    parts->weights_gb = weights_gb - blk->fp8_param_saving_gb * n_l; /* stored: FP8 GEMM weights in 1 byte */
    parts->grads_gb = weights_gb;
    const model_dp_comm_t dpc = job->training.dp_comm;
    parts->optimizer_gb = dpc != MODEL_DP_SHARDED && dpc != MODEL_DP_SHARDED_OVERLAP
                              ? 6.0 * weights_gb
                              : optimizer_state_gb(job, blk, weights_gb, n_l, (double)(p->dp * seqp));
    if (job->training.recompute == MODEL_RECOMPUTE_FULL)
        parts->activations_gb = (blk->checkpoint_gb * n_l + edge_acts_gb) * in_flight + blk->activations_gb;
    else
        parts->activations_gb = (blk->activations_gb * n_l + edge_acts_gb) * in_flight;
    parts->fp8_weights_gb = blk->fp8_weights_gb * n_l;
    parts->fsdp_gathered_gb = 0.0;
    if (dpc == MODEL_DP_FSDP) { /* everything sharded; the units in flight whole (fsdp.c) */
        const double shards = (double)(p->dp * seqp);
        parts->weights_gb = parts->grads_gb = weights_gb / shards;
        parts->optimizer_gb = 6.0 * weights_gb / shards;
        parts->fp8_weights_gb /= shards;
        parts->fsdp_gathered_gb = shards > 1.0 ? gathered_gb : 0.0; /* one rank: nothing to gather */
    }
    return parts->weights_gb + parts->grads_gb + parts->optimizer_gb + parts->activations_gb +
           parts->fp8_weights_gb + parts->fsdp_gathered_gb;
}

static void summarize_training(const model_job_t *job, const model_block_t *blk, model_summary_t *out) {
    const model_parallel_t *p = &job->par;
    const model_training_t *t = &job->training;
    const double nmb = (double)out->n_microbatches, n_l = (double)out->layers_per_stage;
    const double v = t->interleave > 1 ? (double)t->interleave : 1.0;
    out->interleave = t->interleave > 1 ? t->interleave : 1;

    /* one microbatch on one stage: blocks, edge layers, p2p in both directions (v times with v
     * virtual stages: every chunk boundary is a transfer) */
    const double blocks_s = (blk->t_fwd_s + blk->t_bwd_s) * n_l;
    const double first_edge_s = blk->first_t_fwd_s + blk->first_t_bwd_s;
    const double last_edge_s = blk->last_t_fwd_s + blk->last_t_bwd_s;
    out->p2p_one_s = p2p_transfer_s(job, blk, &out->p2p_volume_gb);
    /* overlapped sends and receives (interleaved only): not in a stage's time per microbatch */
    const int p2p_overlap = t->pp_comm_overlap && v > 1.0 && p->pp > 1;
    const double p2p_mb_s = p2p_overlap ? 0.0 : 2.0 * v * out->p2p_one_s;
    double first_s, last_s, others_s;
    if (p->pp == 1) {
        first_s = last_s = blocks_s + first_edge_s + last_edge_s;
        others_s = 0.0;
    } else {
        first_s = blocks_s + first_edge_s + p2p_mb_s;
        last_s = blocks_s + last_edge_s + p2p_mb_s;
        others_s = (double)(p->pp - 2) * (blocks_s + p2p_mb_s);
    }
    const int slow_last = last_s > first_s;
    const double max_s = slow_last ? last_s : first_s;
    const double sum_s = p->pp == 1 ? first_s : first_s + last_s + others_s;
    out->stage_fwd_bwd_s[0] = first_s;
    out->stage_fwd_bwd_s[1] = last_s;
    out->slowest_stage = slow_last;

    /* breakdown of the work term: nmb x the slowest stage */
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    add_layers(blk->layers, blk->n_layers, nmb * n_l, acc);
    for (int i = 0; i < blk->n_edges; i++) {
        const int first = blk->edges[i].module == MODEL_MODULE_EMBEDDING;
        if (p->pp == 1 || first != slow_last)
            add_layers(&blk->edges[i], 1, nmb, acc);
    }
    out->compute_s = acc[0];
    out->memory_s = acc[1];
    out->tp_comm_s = acc[2];
    out->flops_per_gpu_tflop = acc[3];
    out->pp_fwd_s = out->pp_bwd_s = p->pp > 1 ? nmb * v * out->p2p_one_s : 0.0;
    if (p2p_overlap) /* docs/model-formulas.md, section 16.6 */
        out->pp_fwd_s = out->pp_bwd_s = model_i_p2p_overlap_exposed_s(job, blk, out) / 2.0;
    out->pp_comm_s = out->pp_fwd_s + out->pp_bwd_s;
    out->bubble_s = (sum_s - max_s) / v;
    if (t->pipeline == MODEL_PIPELINE_ZB_H1 && p->pp > 1) { /* pipeline.c: W fills the drain */
        double w_s = 0.0;
        for (int i = 0; i < blk->n_layers; i++)
            w_s += model_layer_wgrad_s(&blk->layers[i]);
        out->bubble_s -= 2.0 * (double)(p->pp - 1) * n_l * w_s;
    }
    if ((t->pipeline == MODEL_PIPELINE_ZB_V || t->pipeline == MODEL_PIPELINE_DUALPIPE) && p->pp > 1) {
        /* pipeline.c: the blocks' part of 1F1B's bubble, (pp - 1)(F + B + W) per stage, becomes the
         * schedule's closed form; the edge layers' and the hops' parts stay as 1F1B's */
        double w_s = 0.0;
        for (int i = 0; i < blk->n_layers; i++)
            w_s += model_layer_wgrad_s(&blk->layers[i]);
        const double f = blk->t_fwd_s * n_l, w = w_s * n_l, b = blk->t_bwd_s * n_l - w;
        model_pipeline_form_t form;
        if (model_pipeline_form(t->pipeline, p->pp, (int64_t)nmb, f, b, w, -1.0, &form) == MODEL_OK)
            out->bubble_s += form.bubble_s - (double)(p->pp - 1) * (f + b + w);
        if (t->pipeline == MODEL_PIPELINE_ZB_V) /* the V: two hops per GPU and microbatch each way */
            out->pp_fwd_s *= 2.0, out->pp_bwd_s *= 2.0, out->pp_comm_s *= 2.0;
    }

    /* weights of the heavier stage (the data-parallel and optimizer work of the iteration waits
     * for it) and memory of the fuller one */
    double w_first = blk->weights_gb * n_l + blk->first_weights_gb;
    double w_last = blk->weights_gb * n_l + blk->last_weights_gb;
    if (t->pipeline == MODEL_PIPELINE_DUALPIPE && p->pp > 1) /* a stage and its mirror's copy: both ends */
        w_first = w_last = w_first + w_last;
    const double w_one = p->pp == 1 ? blk->weights_gb * n_l + blk->first_weights_gb + blk->last_weights_gb
                                    : fmax(w_first, w_last);
    data_parallel_training(job, blk, NULL, w_one, out);
    if (t->optimizer_step) {
        const int64_t seqp = p->strategy == MODEL_STRATEGY_2D_SEQP ? p->tp2 : 1;
        const int sharded = t->dp_comm == MODEL_DP_SHARDED || t->dp_comm == MODEL_DP_SHARDED_OVERLAP ||
                            t->dp_comm == MODEL_DP_FSDP;
        const double shards = sharded ? (double)(p->dp * seqp) : 1.0;
        /* the local parameters; sharded with experts, theirs over the expert-data-parallel group */
        const double params =
            sharded && blk->expert_weights_gb > 0.0
                ? optimizer_state_gb(job, blk, w_one, n_l, shards) / 6.0 / job->system.element_gb
                : w_one / job->system.element_gb / shards;
        out->optimizer_s =
            params * OPTIMIZER_BYTES_PER_PARAM * 1e-9 / (MODEL_I_HBM_EFFICIENCY * job->system.hbm_gb_per_s);
        out->memory_s += out->optimizer_s;
    }

    /* 1F1B: the first stage holds min(pp, nmb) microbatches; interleaving multiplies that by
     * 1 + (pp-1)/(pp v) (Korthikanti et al. 2022); the last stage holds one */
    double in_flight = (double)(p->pp < out->n_microbatches ? p->pp : out->n_microbatches);
    if (v > 1.0)
        in_flight *= 1.0 + (double)(p->pp - 1) / ((double)p->pp * v);
    if (t->pipeline == MODEL_PIPELINE_DUALPIPE && p->pp > 1) /* pipeline.c: pp + 1 */
        in_flight = (double)(p->pp + 1);
    model_summary_t first, last;
    double mem;
    if (p->pp == 1) {
        mem = stage_memory(job, blk, w_one, in_flight, blk->first_activations_gb + blk->last_activations_gb,
                           model_i_fsdp_gathered_gb(blk, 1, 1, 1), &first);
        last = first;
    } else {
        const double m_first = stage_memory(job, blk, w_first, in_flight, blk->first_activations_gb,
                                            model_i_fsdp_gathered_gb(blk, p->pp, 1, 0), &first);
        const double m_last = stage_memory(job, blk, w_last, 1.0, blk->last_activations_gb,
                                           model_i_fsdp_gathered_gb(blk, p->pp, 0, 1), &last);
        mem = fmax(m_first, m_last);
        if (m_last > m_first)
            first = last;
    }
    out->weights_gb = first.weights_gb;
    out->grads_gb = first.grads_gb;
    out->optimizer_gb = first.optimizer_gb;
    out->activations_gb = first.activations_gb;
    out->fp8_weights_gb = first.fp8_weights_gb;
    out->fsdp_gathered_gb = first.fsdp_gathered_gb;
    out->memory_gb = mem;
    out->fits = out->memory_gb <= job->system.hbm_capacity_gb;

    out->iteration_time_s =
        out->compute_s + out->memory_s + out->tp_comm_s + out->pp_comm_s + out->bubble_s + out->dp_comm_s;
}

/* ---- leading dense blocks of a mixture of experts (model.moe.first_dense > 0) ------------------ */

/* Dense blocks on stage `stage` of n_l blocks each: the model's first first_dense blocks, in order. */
static int64_t stage_dense_blocks(int64_t first_dense, int64_t stage, int64_t n_l) {
    const int64_t d = first_dense - stage * n_l;
    return d <= 0 ? 0 : d < n_l ? d : n_l;
}

/* The stage's blocks as one table whose per-block totals are the means over its n_l blocks: every
 * quantity the stage assembly multiplies by n_l (times, FLOPs, weights, activations, the experts'
 * share of the weights) is then the sum over its dense and MoE blocks. The layers and the edge
 * layers stay the MoE table's; the breakdown sums the two tables' layers itself. */
static void stage_block(const stage_mix_t *mix, int64_t n_l, model_block_t *out) {
    const model_block_t *m = mix->moe, *d = mix->dense;
    *out = *m;
    if (mix->dense_n == 0)
        return;
    const double nd = (double)mix->dense_n, nm = (double)(n_l - mix->dense_n), n = (double)n_l;
#define STAGE_MEAN(f) out->f = (nm * m->f + nd * d->f) / n
    STAGE_MEAN(t_fwd_s);
    STAGE_MEAN(t_bwd_s);
    STAGE_MEAN(flops_tflop);
    STAGE_MEAN(activations_gb);
    STAGE_MEAN(weights_gb);
    STAGE_MEAN(fp8_weights_gb);
    STAGE_MEAN(fp8_param_saving_gb);
    STAGE_MEAN(checkpoint_gb);
    STAGE_MEAN(expert_weights_gb);
    STAGE_MEAN(expert_fp8_param_saving_gb);
#undef STAGE_MEAN
}

/* The per-stage assembly of summarize_training (plain 1F1B, v = 1; model_job_check refuses the rest
 * with leading dense blocks) over stages that differ in their blocks: stage i holds
 * stage_dense_blocks(first_dense, i, n_l) dense blocks (the dense table: the model's feed-forward
 * network of ffn_hidden) and the rest MoE blocks, the first stage the embedding, the last the output
 * layers. T_i its time per microbatch; the iteration is nmb max T_i + (sum T_i - max T_i) + the
 * data-parallel communication of the stage that takes longest + the optimizer step of the stage with
 * the most local parameters; memory is the fullest stage's (1F1B: stage i holds min(pp - i, nmb)
 * microbatches). Every stage is assembled as summarize_training assembles its first and last. */
static void summarize_stages(const model_job_t *job, const model_block_t *moe, const model_block_t *dense,
                             model_summary_t *out) {
    const model_parallel_t *p = &job->par;
    const model_training_t *t = &job->training;
    const int64_t pp = p->pp, n_l = out->layers_per_stage, fd = job->model.moe.first_dense;
    const double nmb = (double)out->n_microbatches;
    const int64_t seqp = p->strategy == MODEL_STRATEGY_2D_SEQP ? p->tp2 : 1;
    const int sharded = t->dp_comm == MODEL_DP_SHARDED || t->dp_comm == MODEL_DP_SHARDED_OVERLAP ||
                        t->dp_comm == MODEL_DP_FSDP;
    const double shards = sharded ? (double)(p->dp * seqp) : 1.0;
    out->interleave = 1;
    out->p2p_one_s = p2p_transfer_s(job, moe, &out->p2p_volume_gb);
    const double p2p_mb_s = pp > 1 ? 2.0 * out->p2p_one_s : 0.0;

    double max_s = 0.0, sum_s = 0.0, dp_max = -1.0, mem_max = -1.0, params_max = 0.0;
    int64_t slow = 0;
    model_summary_t dp_best, mem_best;
    memset(&dp_best, 0, sizeof dp_best);
    memset(&mem_best, 0, sizeof mem_best);
    for (int64_t i = 0; i < pp; i++) {
        const stage_mix_t mix = {moe, dense, stage_dense_blocks(fd, i, n_l)};
        model_block_t sb;
        stage_block(&mix, n_l, &sb);
        const int first = i == 0, last = i == pp - 1;
        double stage_s = (sb.t_fwd_s + sb.t_bwd_s) * (double)n_l + p2p_mb_s;
        double w_gb = sb.weights_gb * (double)n_l, edge_acts_gb = 0.0;
        if (first)
            stage_s += moe->first_t_fwd_s + moe->first_t_bwd_s, w_gb += moe->first_weights_gb,
                edge_acts_gb += moe->first_activations_gb;
        if (last)
            stage_s += moe->last_t_fwd_s + moe->last_t_bwd_s, w_gb += moe->last_weights_gb,
                edge_acts_gb += moe->last_activations_gb;
        if (first)
            out->stage_fwd_bwd_s[0] = stage_s;
        if (last)
            out->stage_fwd_bwd_s[1] = stage_s;
        sum_s += stage_s;
        if (first || stage_s > max_s)
            max_s = stage_s, slow = i;

        model_summary_t dps = *out;
        data_parallel_training(job, &sb, &mix, w_gb, &dps);
        if (dps.dp_comm_s > dp_max)
            dp_max = dps.dp_comm_s, dp_best = dps;

        /* the local parameters; sharded with experts, theirs over the expert-data-parallel group */
        const double params =
            sharded && sb.expert_weights_gb > 0.0
                ? optimizer_state_gb(job, &sb, w_gb, (double)n_l, shards) / 6.0 / job->system.element_gb
                : w_gb / job->system.element_gb / shards;
        params_max = fmax(params_max, params);

        const double in_flight = (double)(pp - i < out->n_microbatches ? pp - i : out->n_microbatches);
        model_summary_t parts;
        double mem = stage_memory(job, &sb, w_gb, in_flight, edge_acts_gb, 0.0, &parts);
        if (t->recompute == MODEL_RECOMPUTE_FULL) {
            /* the block recomputed whole: the stage's largest, not the mean */
            const double top_gb = fmax(mix.dense_n > 0 ? dense->activations_gb : 0.0,
                                       mix.dense_n < n_l ? moe->activations_gb : 0.0);
            parts.activations_gb += top_gb - sb.activations_gb;
            mem += top_gb - sb.activations_gb;
        }
        if (mem > mem_max)
            mem_max = mem, mem_best = parts;
    }
    out->slowest_stage = slow == 0 ? 0 : slow == pp - 1 ? 1 : 2;

    /* breakdown of the work term: nmb x the slowest stage, its dense and its MoE blocks */
    const int64_t ds = stage_dense_blocks(fd, slow, n_l);
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    add_layers(dense->layers, dense->n_layers, nmb * (double)ds, acc);
    add_layers(moe->layers, moe->n_layers, nmb * (double)(n_l - ds), acc);
    for (int i = 0; i < moe->n_edges; i++) {
        const int emb = moe->edges[i].module == MODEL_MODULE_EMBEDDING;
        if ((emb && slow == 0) || (!emb && slow == pp - 1))
            add_layers(&moe->edges[i], 1, nmb, acc);
    }
    out->compute_s = acc[0];
    out->memory_s = acc[1];
    out->tp_comm_s = acc[2];
    out->flops_per_gpu_tflop = acc[3];
    out->pp_fwd_s = out->pp_bwd_s = pp > 1 ? nmb * out->p2p_one_s : 0.0;
    out->pp_comm_s = out->pp_fwd_s + out->pp_bwd_s;
    out->bubble_s = sum_s - max_s;

    out->dp_allgather_one_s = dp_best.dp_allgather_one_s;
    out->dp_reducescatter_one_s = dp_best.dp_reducescatter_one_s;
    out->dp_allgather_s = dp_best.dp_allgather_s;
    out->dp_reducescatter_s = dp_best.dp_reducescatter_s;
    out->dp_allreduce_s = dp_best.dp_allreduce_s;
    out->embedding_sync_s = dp_best.embedding_sync_s;
    out->dp_comm_s = dp_best.dp_comm_s;
    if (t->optimizer_step) {
        out->optimizer_s = params_max * OPTIMIZER_BYTES_PER_PARAM * 1e-9 /
                           (MODEL_I_HBM_EFFICIENCY * job->system.hbm_gb_per_s);
        out->memory_s += out->optimizer_s;
    }

    out->weights_gb = mem_best.weights_gb;
    out->grads_gb = mem_best.grads_gb;
    out->optimizer_gb = mem_best.optimizer_gb;
    out->activations_gb = mem_best.activations_gb;
    out->fp8_weights_gb = mem_best.fp8_weights_gb;
    out->fsdp_gathered_gb = mem_best.fsdp_gathered_gb;
    out->memory_gb = mem_max;
    out->fits = out->memory_gb <= job->system.hbm_capacity_gb;

    out->iteration_time_s =
        out->compute_s + out->memory_s + out->tp_comm_s + out->pp_comm_s + out->bubble_s + out->dp_comm_s;
}

/* Assemble the summary of a job whose block table is built. */
static void summarize(const model_job_t *job, const model_block_t *blk, model_summary_t *out) {
    const model_parallel_t *p = &job->par;
    memset(out, 0, sizeof *out);
    out->par = *p;
    out->n_microbatches = (job->global_batch / p->dp) / p->mbs;
    out->layers_per_stage = job->model.layers / p->pp;
    out->interleave = 1;
    out->block_t_fwd_s = blk->t_fwd_s;
    out->block_t_bwd_s = blk->t_bwd_s;
    out->block_flops_tflop = blk->flops_tflop;
    out->block_activations_gb = blk->activations_gb;
    out->block_weights_gb = blk->weights_gb;
    out->experts_par = job->experts_par;
    if (model_is_moe(&job->model) && job->model.moe.first_dense > 0) {
        /* leading dense blocks: the dense block table beside the MoE one, stage by stage */
        model_job_t dense_job = *job;
        memset(&dense_job.model.moe, 0, sizeof dense_job.model.moe);
        memset(&dense_job.experts_par, 0, sizeof dense_job.experts_par);
        model_block_t dense;
        model_block_build(&dense_job, &dense);
        out->pipeline = job->training.pipeline;
        summarize_stages(job, blk, &dense, out);
        out->throughput_samples_per_s = (double)job->global_batch / out->iteration_time_s;
        return;
    }
    if (model_i_training_active(job)) {
        out->pipeline = job->training.pipeline;
        summarize_training(job, blk, out);
        out->throughput_samples_per_s = (double)job->global_batch / out->iteration_time_s;
        return;
    }
    const double nmb = (double)out->n_microbatches, n_l = (double)out->layers_per_stage;
    data_parallel(job, blk, NULL, out);
    pipeline(job, blk, out);
    memory(job, blk, out);
    breakdown(blk, nmb * n_l, out);

    const double work_s = (blk->t_fwd_s + blk->t_bwd_s) * nmb * n_l + out->pp_comm_s;
    out->bubble_s = (double)(p->pp - 1) * work_s / nmb;
    out->iteration_time_s = work_s + out->bubble_s + out->dp_comm_s;
    out->throughput_samples_per_s = (double)job->global_batch / out->iteration_time_s;
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
