/* moe.c - mixture of experts: which blocks have experts, and the closed form of one MoE block of one
 * microbatch on one GPU (router, grouped expert GEMMs, the alltoall dispatch and combine, the expert
 * weights one GPU holds). docs/model-formulas.md, "Mixture of experts". */
#include <math.h>
#include <string.h>

#include "model_internal.h"

int model_is_moe(const model_transformer_t *m) {
    return m->moe.experts > 0;
}

int64_t model_moe_layers(const model_transformer_t *m) {
    if (!model_is_moe(m))
        return 0;
    const int64_t first = m->moe.first_dense < m->layers ? m->moe.first_dense : m->layers;
    return m->layers - (first > 0 ? first : 0);
}

/* Matrices of one feed-forward network of hidden size f: 3 with SwiGLU (gate, up, down), else 2. */
static double ffn_mats(const model_transformer_t *m) {
    return m->ffn_act == MODEL_FFN_SWIGLU ? 3.0 : 2.0;
}

int model_moe_block(const model_job_t *job, model_moe_block_t *out) {
    memset(out, 0, sizeof *out);
    const model_transformer_t *m = &job->model;
    const model_parallel_t *p = &job->par;
    const int64_t ep = job->experts_par.ep > 1 ? job->experts_par.ep : 1,
                  etp = job->experts_par.etp > 1 ? job->experts_par.etp : 1;
    if (!model_is_moe(m) || m->moe.experts % ep != 0 || p->tp < 1 || p->mbs < 1)
        return MODEL_EINVAL;
    const double e = (double)m->hidden, E = (double)m->moe.experts, k = (double)m->moe.topk;
    const double s = (double)m->moe.shared_experts;
    const double fe = (double)(m->moe.expert_ffn_hidden > 0 ? m->moe.expert_ffn_hidden : m->ffn_hidden);
    const double cap = m->moe.capacity_factor > 0.0 ? m->moe.capacity_factor : 1.0;
    const double bytes = 2.0; /* BF16 activations and weights */
    const double T = (double)p->mbs * (double)m->seq_len / (double)p->tp;
    const double mats = ffn_mats(m);
    out->tokens = T;
    out->router_tflop = 2.0 * T * e * E * 1e-12;
    /* every GPU of the expert-parallel group computes, on average, the tokens routed to its E / ep
     * experts from all ep GPUs: ep T k / ep = T k (times the capacity factor when tokens are padded
     * to capacity); with etp > 1 the etp GPUs holding slices of the same experts gather each other's
     * tokens, etp T k on 1 / etp of the hidden size: the same FLOPs. Shared experts run on the GPU's
     * own T tokens. */
    out->expert_tflop = (cap * k * T + s * T) * mats * 2.0 * e * fe * 1e-12;
    out->dense_ffn_tflop = T * mats * 2.0 * e * (double)m->ffn_hidden * 1e-12;
    out->a2a_bytes = T * e * bytes * k * (double)(ep - 1) / (double)ep;
    int64_t ep_n, per_domain, edp, edp_t;
    model_expert_groups(job, &ep_n, &per_domain, &edp, &edp_t);
    out->a2a_time_s = ep > 1
                          ? model_collective_time_s(&job->system, MODEL_COMPAT_CORRECTED, MODEL_COLL_ALLTOALL,
                                                    T * e * bytes * k * 1e-9, ep, per_domain)
                          : 0.0;
    out->experts_per_gpu = E / (double)ep;
    out->expert_weight_bytes = (E / (double)ep / (double)etp + s) * mats * e * fe * bytes;
    return MODEL_OK;
}

void model_expert_groups(const model_job_t *job, int64_t *ep, int64_t *ep_t, int64_t *edp, int64_t *edp_t) {
    const model_parallel_t *p = &job->par;
    const int64_t e = job->experts_par.ep > 1 ? job->experts_par.ep : 1,
                  et = job->experts_par.etp > 1 ? job->experts_par.etp : 1;
    const int64_t nvs = job->system.nvlink_size > 0 ? job->system.nvlink_size : 1;
    /* the run of consecutive expert-grid ranks (tp fastest, then dp) one NVLink domain holds, from the
     * layout's members per domain (placement order tp, cp, dp, pp): a tensor group split over domains
     * leaves nv_tp of them together, a whole one tp x nv_dp; without the counts, the domain size */
    int64_t run = nvs;
    if (p->nv_tp1 > 0 && p->nv_dp > 0)
        run = p->nv_tp1 < p->tp1 ? p->nv_tp1 : p->tp1 * p->nv_dp;
    *ep = e;
    /* Megatron-Core's expert grid orders etp innermost, then ep: the ep members are et apart */
    *ep_t = et >= run ? 1 : model_divisor_upto(e, run / et);
    *edp = p->dp * p->tp / (e * et);
    /* the expert-data-parallel ranks are e et apart: the run holds run / (e et) of them */
    *edp_t = e * et >= run ? 1 : model_divisor_upto(*edp, run / (e * et));
}
