/* throughput.c - the figures people read beside the step time: model FLOPs per token as NVIDIA
 * counts them (Megatron-LM's num_floating_point_operations, NeMo's GPT-3 FLOPs formula), model
 * TFLOP/s per GPU, tokens per second per GPU and the model FLOPs utilisation (MFU) against the dense
 * peak of the precision in effect (docs/model.md, "MFU"). */
#include "model_internal.h"

/* Per token: 3 passes (forward, input gradient, weight gradient) x 2 FLOPs per multiply-add over
 * the block's GEMMs, Q K^T and P V (the full s x s square, as NVIDIA counts it whatever the mask)
 * and the logits GEMM:
 *   attention  Q and output 2h^2, K and V 2h^2 g/a (g K/V heads of a), scores and context 2 s h
 *   MLP        two GEMMs of h x f (three with SwiGLU: gate, up, down)
 *   logits     h x V
 * = 6 [L (2h^2 (1 + g/a) + k h f) + h V] + 12 L s h, k = 3 for SwiGLU else 2; for the GPT
 * architecture 12 L h^2 (2 + s/h + f/h) + 6 h V. Recomputation is not counted (model FLOPs, not
 * hardware FLOPs); biases, norms, softmax and the loss are left out as Megatron leaves them out. */
double model_flops_per_token(const model_transformer_t *m) {
    const double L = (double)m->layers, h = (double)m->hidden, s = (double)m->seq_len;
    const double f = (double)m->ffn_hidden, v = m->vocab > 0 ? (double)m->vocab : 0.0;
    const double g_over_a = (double)model_kv_heads(m) / (double)m->heads;
    const double k = m->ffn_act == MODEL_FFN_SWIGLU ? 3.0 : 2.0;
    if (model_is_moe(m)) {
        /* MoE blocks: the k routed and s shared experts each token visits, as Megatron-LM counts
         * them (ffn_hidden x topk, plus the shared experts); the router's e x E GEMM left out */
        const double fe = (double)(m->moe.expert_ffn_hidden > 0 ? m->moe.expert_ffn_hidden : m->ffn_hidden);
        const double L_moe = (double)model_moe_layers(m), L_dense = L - L_moe;
        const double mlp =
            L_dense * k * h * f + L_moe * k * h * fe * (double)(m->moe.topk + m->moe.shared_experts);
        return 6.0 * (L * 2.0 * h * h * (1.0 + g_over_a) + mlp + h * v) + 12.0 * L * s * h;
    }
    return 6.0 * (L * (2.0 * h * h * (1.0 + g_over_a) + k * h * f) + h * v) + 12.0 * L * s * h;
}

double model_peak_tflop_per_s(const model_system_t *sys, model_precision_t precision) {
    return precision == MODEL_PRECISION_FP8 ? sys->fp8_matrix_tflop_per_s : sys->matrix_tflop_per_s;
}

void model_throughput(const model_job_t *job, double iteration_time_s, model_throughput_t *out) {
    out->model_tflops_per_gpu = out->tokens_per_s_per_gpu = out->mfu = 0.0;
    if (!(iteration_time_s > 0.0) || job->gpus < 1)
        return;
    const model_precision_t precision =
        job->compat == MODEL_COMPAT_CORRECTED ? job->training.precision : MODEL_PRECISION_BF16;
    const double tokens = (double)job->global_batch * (double)job->model.seq_len;
    const double gpus = (double)job->gpus;
    out->tokens_per_s_per_gpu = tokens / iteration_time_s / gpus;
    out->model_tflops_per_gpu = model_flops_per_token(&job->model) * tokens / iteration_time_s / gpus * 1e-12;
    const double peak = model_peak_tflop_per_s(&job->system, precision);
    out->mfu = peak > 0.0 ? out->model_tflops_per_gpu / peak : 0.0;
}
