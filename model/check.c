/* check.c - validation of a job: every rule the model relies on, reported as the first invalid
 * field with its value and what would be allowed (the tools layer adds file and option names). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "checked.h"
#include "model_internal.h"

static int fail(model_issue_t *is, const char *field, const char *value, const char *fmt, ...) {
    if (is) {
        snprintf(is->field, sizeof is->field, "%s", field);
        snprintf(is->value, sizeof is->value, "%s", value);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(is->allowed, sizeof is->allowed, fmt, ap);
        va_end(ap);
    }
    return MODEL_EINVAL;
}

static int fail_int(model_issue_t *is, const char *field, int64_t v, const char *fmt, int64_t arg) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    return fail(is, field, buf, fmt, (long long)arg);
}

/* An integer value with a fixed explanation (no argument). */
static int fail_text(model_issue_t *is, const char *field, int64_t v, const char *allowed) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    return fail(is, field, buf, "%s", allowed);
}

/* A positive finite real quantity (a rate, a size, an efficiency's lower side). */
static int check_pos(model_issue_t *is, const char *field, double v) {
    char buf[32];
    if (v > 0.0 && v < 1e300)
        return MODEL_OK;
    snprintf(buf, sizeof buf, "%g", v);
    return fail(is, field, buf, "must be a positive number");
}

static int check_system(const model_system_t *s, model_issue_t *is) {
    const struct {
        const char *field;
        double v;
    } pos[] = {
        {"system.matrix_flops_fp16", s->matrix_tflop_per_s},
        {"system.vector_flops_fp16", s->vector_tflop_per_s},
        {"system.hbm_bandwidth", s->hbm_gb_per_s},
        {"system.hbm_capacity", s->hbm_capacity_gb},
        {"system.nvlink_bandwidth", s->nvlink_gb_per_s},
        {"system.nvlink_eff", s->nvlink_eff},
        {"system.ib_bandwidth", s->ib_gb_per_s},
        {"system.ib_eff", s->ib_eff},
        {"system.element_size", s->element_gb},
        {"system.mask_element_size", s->mask_element_gb},
        {"system.flop_efficiency", s->flop_efficiency},
    };
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
        if (check_pos(is, pos[i].field, pos[i].v))
            return MODEL_EINVAL;
    char buf[32];
    if (s->nvlink_eff > 1.0 || s->ib_eff > 1.0 || s->flop_efficiency > 1.0) {
        snprintf(buf, sizeof buf, "%g",
                 s->nvlink_eff > 1.0 ? s->nvlink_eff
                 : s->ib_eff > 1.0   ? s->ib_eff
                                     : s->flop_efficiency);
        return fail(is,
                    s->nvlink_eff > 1.0 ? "system.nvlink_eff"
                    : s->ib_eff > 1.0   ? "system.ib_eff"
                                        : "system.flop_efficiency",
                    buf, "an efficiency must be in (0, 1]");
    }
    /* A latency above 1 s is not a link; the bound also keeps the simulator's picosecond route sums far
     * from saturating (SIM_LINK_LATENCY_MAX_S). */
    if (!(s->nvlink_latency_s <= 1.0) || !(s->ib_latency_s <= 1.0)) {
        const int nv = !(s->nvlink_latency_s <= 1.0);
        snprintf(buf, sizeof buf, "%g", nv ? s->nvlink_latency_s : s->ib_latency_s);
        return fail(is, nv ? "system.nvlink_latency" : "system.ib_latency", buf,
                    "a latency must be in [0, 1] s (a latency above 1 s is not a link)");
    }
    if (!(s->nvlink_latency_s >= 0.0) || !(s->ib_latency_s >= 0.0) || !(s->kernel_overhead_s >= 0.0)) {
        snprintf(buf, sizeof buf, "%g",
                 !(s->nvlink_latency_s >= 0.0) ? s->nvlink_latency_s : s->ib_latency_s);
        return fail(is, !(s->nvlink_latency_s >= 0.0) ? "system.nvlink_latency" : "system.ib_latency", buf,
                    "a latency must be >= 0 s");
    }
    if (s->sm_count < 0)
        return fail_int(is, "system.sm_count", s->sm_count,
                        "must be >= 0 (SMs per GPU; 0: the flat GEMM time)", 0);
    if (!(s->fp8_flop_efficiency >= 0.0 && s->fp8_flop_efficiency <= 1.0)) {
        snprintf(buf, sizeof buf, "%g", s->fp8_flop_efficiency);
        return fail(is, "system.fp8_flop_efficiency", buf, "must be in [0, 1] (0: flop_efficiency)");
    }
    if (!(s->attention_efficiency >= 0.0 && s->attention_efficiency <= 1.0)) {
        snprintf(buf, sizeof buf, "%g", s->attention_efficiency);
        return fail(is, "system.attention_efficiency", buf, "must be in [0, 1] (0: flop_efficiency)");
    }
    if (!(s->fp8_matrix_tflop_per_s >= 0.0 && s->fp8_matrix_tflop_per_s < 1e300)) {
        snprintf(buf, sizeof buf, "%g", s->fp8_matrix_tflop_per_s);
        return fail(is, "system.fp8_matrix_flops", buf, "must be a number >= 0 (0: no FP8)");
    }
    if (s->nvlink_size < 1)
        return fail_int(is, "nvlink_size", s->nvlink_size,
                        "must be a positive integer (GPUs per NVLink domain)", 0);
    if (s->nic_factor < 1)
        return fail_int(is, "system.nic_factor", s->nic_factor, "must be a positive integer (NICs per GPU)",
                        0);
    return MODEL_OK;
}

/* The architecture fields: known values; kv_heads dividing heads (each K/V head serves heads/kv_heads
 * query heads). */
static int check_arch(const model_transformer_t *m, model_issue_t *is) {
    if (m->kv_heads < 0)
        return fail_int(is, "model.kv_heads", m->kv_heads, "must be a positive integer", 0);
    if (m->kv_heads > 0 && m->heads % m->kv_heads != 0)
        return fail_int(is, "model.kv_heads", m->kv_heads, "must divide heads (%lld)", m->heads);
    if ((unsigned)m->ffn_act > MODEL_FFN_RELU2)
        return fail_text(is, "model.ffn_act", (int64_t)m->ffn_act, "one of gelu, swiglu, relu2");
    if ((unsigned)m->norm > MODEL_NORM_RMSNORM)
        return fail_text(is, "model.norm", (int64_t)m->norm, "one of layernorm, rmsnorm");
    if ((unsigned)m->position > MODEL_POSITION_ROTARY)
        return fail_text(is, "model.position", (int64_t)m->position, "one of learned, rotary");
    if (m->untied_embeddings != 0 && m->untied_embeddings != 1)
        return fail_text(is, "model.tied_embeddings", m->untied_embeddings, "true or false");
    return MODEL_OK;
}

static int check_model(const model_transformer_t *m, model_issue_t *is) {
    const struct {
        const char *field;
        int64_t v;
    } pos[] = {{"model.seq_len", m->seq_len},
               {"model.hidden", m->hidden},
               {"model.heads", m->heads},
               {"model.layers", m->layers},
               {"model.ffn_hidden", m->ffn_hidden}};
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
        if (pos[i].v < 1)
            return fail_int(is, pos[i].field, pos[i].v, "must be a positive integer", 0);
    if (m->layers > MODEL_MAX_LAYERS)
        return fail_int(is, "model.layers", m->layers, "must be at most %lld", MODEL_MAX_LAYERS);
    if (m->hidden % m->heads != 0)
        return fail_int(is, "model.heads", m->heads, "must divide hidden (%lld)", m->hidden);
    return check_arch(m, is);
}

/* The reference has one architecture (GPT: multi-head attention, GeLU, LayerNorm, learned
 * positions, tied embeddings); a job that asks it for another is refused, not approximated. */
static int check_reference_arch(const model_job_t *job, model_issue_t *is) {
    const model_transformer_t *m = &job->model;
    if (job->compat != MODEL_COMPAT_REFERENCE || model_arch_is_default(m))
        return MODEL_OK;
    const char *why = "the reference model has GPT's architecture only; allowed: compat corrected";
    if (model_is_moe(m))
        return fail_text(is, "model.experts", m->moe.experts, why);
    if (m->kv_heads != 0 && m->kv_heads != m->heads)
        return fail_text(is, "model.kv_heads", m->kv_heads, why);
    if (m->ffn_act != MODEL_FFN_GELU)
        return fail(is, "model.ffn_act", model_ffn_act_name(m->ffn_act), "%s", why);
    if (m->norm != MODEL_NORM_LAYERNORM)
        return fail(is, "model.norm", model_norm_name(m->norm), "%s", why);
    if (m->position != MODEL_POSITION_LEARNED)
        return fail(is, "model.position", model_position_name(m->position), "%s", why);
    return fail(is, "model.tied_embeddings", "false", "%s", why);
}

/* Degrees: positive, tensor-parallel divisibility, and the product with the GPU count. */
/* Products of positive integers from input saturate at INT64_MAX (checked_mul_sat_i64): a product
 * that large never equals a GPU count or fits a domain, so the checks below report it. */

static int check_degrees(const model_job_t *job, model_issue_t *is) {
    const model_parallel_t *p = &job->par;
    const model_transformer_t *m = &job->model;
    const int d1 = p->strategy == MODEL_STRATEGY_1D;
    const struct {
        const char *field;
        int64_t v;
    } pos[] = {{"parallel.dp", p->dp},   {"parallel.tp", p->tp}, {"parallel.tp1", p->tp1},
               {"parallel.tp2", p->tp2}, {"parallel.pp", p->pp}, {"parallel.mbs", p->mbs},
               {"parallel.nb", p->nb},   {"gpus", job->gpus},    {"global_batch", job->global_batch}};
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
        if (pos[i].v < 1)
            return fail_int(is, pos[i].field, pos[i].v, "must be a positive integer", 0);
    const char *tp1 = d1 ? "parallel.tp" : "parallel.tp1";
    if (d1 && p->tp2 != 1)
        return fail_int(is, "parallel.tp2", p->tp2, "must be 1 for strategy 1d", 0);
    if (p->tp != checked_mul_sat_i64(p->tp1, p->tp2))
        return fail_int(is, "parallel.tp", p->tp, "must equal tp1 x tp2 (%lld)",
                        checked_mul_sat_i64(p->tp1, p->tp2));
    if (m->heads % p->tp1 != 0)
        return fail_int(is, tp1, p->tp1, "does not divide heads (%lld)", m->heads);
    if (m->hidden % p->tp1 != 0)
        return fail_int(is, tp1, p->tp1, "does not divide hidden (%lld)", m->hidden);
    /* Megatron-Core splits the K/V heads (query groups) over the tensor group and asserts that tp
     * divides their number (no replication of K/V heads across tensor ranks) */
    if (model_kv_heads(m) % p->tp1 != 0)
        return fail_int(is, tp1, p->tp1, "does not divide kv_heads (%lld)", model_kv_heads(m));
    if (p->strategy == MODEL_STRATEGY_2D && m->hidden % p->tp2 != 0)
        return fail_int(is, "parallel.tp2", p->tp2, "does not divide hidden (%lld)", m->hidden);
    if (m->layers % p->pp != 0)
        return fail_int(is, "parallel.pp", p->pp, "does not divide the number of layers (%lld)", m->layers);
    const int64_t product = checked_mul_sat_i64(checked_mul_sat_i64(p->dp, p->tp), p->pp);
    if (product != job->gpus) {
        char buf[64];
        if (product == INT64_MAX)
            snprintf(buf, sizeof buf, "dp*tp*pp overflows 64 bits");
        else
            snprintf(buf, sizeof buf, "dp*tp*pp = %lld", (long long)product);
        return fail(is, "parallel", buf, "must equal gpus (%lld)", (long long)job->gpus);
    }
    if (job->global_batch % p->dp != 0)
        return fail_int(is, "parallel.dp", p->dp, "does not divide global_batch (%lld)", job->global_batch);
    if ((job->global_batch / p->dp) % p->mbs != 0)
        return fail_int(is, "parallel.mbs", p->mbs,
                        "does not divide the per-replica batch global_batch/dp (%lld)",
                        job->global_batch / p->dp);
    return MODEL_OK;
}

/* NVLink counts: each divides its group, and together they fit in one domain. */
static int check_nv(const model_job_t *job, model_issue_t *is) {
    const model_parallel_t *p = &job->par;
    const int d1 = p->strategy == MODEL_STRATEGY_1D;
    const struct {
        const char *field;
        int64_t nv, group;
    } nv[] = {{d1 ? "parallel.nv.tp" : "parallel.nv.tp1", p->nv_tp1, d1 ? p->tp : p->tp1},
              {"parallel.nv.tp2", p->nv_tp2, d1 ? 1 : p->tp2},
              {"parallel.nv.dp", p->nv_dp, p->dp},
              {"parallel.nv.pp", p->nv_pp, p->pp}};
    int64_t product = 1;
    for (size_t i = 0; i < sizeof nv / sizeof nv[0]; i++) {
        if (nv[i].nv < 1)
            return fail_int(is, nv[i].field, nv[i].nv, "must be a positive integer", 0);
        if (nv[i].group % nv[i].nv != 0)
            return fail_int(is, nv[i].field, nv[i].nv, "must divide its group's size (%lld)", nv[i].group);
        product = checked_mul_sat_i64(product, nv[i].nv);
    }
    if (product > job->system.nvlink_size) {
        char buf[48];
        snprintf(buf, sizeof buf, "product %lld", (long long)product);
        return fail(is, "parallel.nv", buf, "the nv counts must multiply to at most nvlink_size (%lld)",
                    (long long)job->system.nvlink_size);
    }
    return MODEL_OK;
}

/* The training fields (corrected model only; the reference ignores them). */
int model_i_training_check(const model_job_t *job, model_issue_t *is) {
    const model_training_t *t = &job->training;
    const model_parallel_t *p = &job->par;
    char buf[32];
    if ((unsigned)t->precision > MODEL_PRECISION_FP8)
        return fail_text(is, "training.precision", (int64_t)t->precision, "one of bf16, fp8");
    if (t->precision == MODEL_PRECISION_FP8 && !(job->system.fp8_matrix_tflop_per_s > 0.0))
        return fail(is, "training.precision", "fp8",
                    "system %s has no FP8 peak (system.fp8_matrix_flops); allowed: bf16",
                    job->system.name[0] ? job->system.name : "(unnamed)");
    if ((unsigned)t->recompute > MODEL_RECOMPUTE_FULL)
        return fail_text(is, "training.recompute", (int64_t)t->recompute, "one of none, selective, full");
    if ((unsigned)t->attention > MODEL_ATTENTION_MATERIALIZED)
        return fail_text(is, "training.attention", (int64_t)t->attention, "one of flash, materialized");
    if ((unsigned)t->dp_comm > MODEL_DP_FSDP)
        return fail_text(is, "training.dp_comm", (int64_t)t->dp_comm,
                         "one of sharded, allreduce, allreduce-overlap, sharded-overlap, fsdp");
    if ((unsigned)t->grad_accumulation > MODEL_GRAD_ACCUM_ADD)
        return fail_text(is, "training.grad_accumulation", (int64_t)t->grad_accumulation,
                         "one of fused, add");
    if ((unsigned)t->sequence_parallel > MODEL_SEQPAR_OFF)
        return fail_text(is, "training.sequence_parallel", (int64_t)t->sequence_parallel, "0 or 1");
    if (t->sequence_parallel == MODEL_SEQPAR_OFF && p->strategy != MODEL_STRATEGY_1D) {
        snprintf(buf, sizeof buf, "off");
        return fail(is, "training.sequence_parallel", buf,
                    "sequence parallelism can be switched off with strategy 1d only");
    }
    if (t->embedding != 0 && t->embedding != 1)
        return fail_text(is, "training.embedding", t->embedding, "0 or 1");
    if (t->optimizer_step != 0 && t->optimizer_step != 1)
        return fail_text(is, "training.optimizer_step", t->optimizer_step, "0 or 1");
    if (t->pp_comm_overlap != 0 && t->pp_comm_overlap != 1)
        return fail_text(is, "training.pp_comm_overlap", t->pp_comm_overlap, "0 or 1");
    if (t->tp_comm_overlap != 0 && t->tp_comm_overlap != 1)
        return fail_text(is, "training.tp_comm_overlap", t->tp_comm_overlap, "0 or 1");
    if (t->tp_comm_overlap && p->strategy == MODEL_STRATEGY_2D)
        return fail(is, "training.tp_comm_overlap", "on",
                    "tensor-parallel communication overlap needs strategy 1d or 2d-seqp (not SUMMA)");
    if (t->tp_comm_overlap && t->sequence_parallel == MODEL_SEQPAR_OFF)
        return fail(is, "training.tp_comm_overlap", "on",
                    "tensor-parallel communication overlap needs sequence parallelism on, as Megatron does");
    if (t->tp_comm_overlap && t->recompute == MODEL_RECOMPUTE_FULL)
        return fail(is, "training.tp_comm_overlap", "on",
                    "not modelled with full recomputation; allowed: recompute none or selective");
    if (t->fp8_param_gather != 0 && t->fp8_param_gather != 1)
        return fail_text(is, "training.fp8_param_gather", t->fp8_param_gather, "0 or 1");
    if (t->fp8_param_gather && t->precision != MODEL_PRECISION_FP8)
        return fail(is, "training.fp8_param_gather", "on",
                    "needs precision fp8 (FP8 parameters are the FP8 GEMMs' weights)");
    if (t->fp8_param_gather && t->dp_comm != MODEL_DP_SHARDED && t->dp_comm != MODEL_DP_SHARDED_OVERLAP)
        return fail(is, "training.fp8_param_gather", "on",
                    "the FP8 parameter all-gather needs dp_comm sharded or sharded-overlap (the distributed "
                    "optimizer holds the fp32 main weights)");
    if ((unsigned)t->cp_comm > MODEL_CP_RING)
        return fail_text(is, "training.cp_comm", (int64_t)t->cp_comm, "one of allgather, ring");
    if (t->cp_comm == MODEL_CP_RING && p->strategy != MODEL_STRATEGY_2D_SEQP)
        return fail(is, "training.cp_comm", "ring",
                    "the context-parallel ring needs strategy 2d-seqp (context parallelism over tp2)");
    if (t->embedding && job->model.vocab < 1)
        return fail_text(is, "model.vocab", job->model.vocab,
                         "must be a positive integer with the embedding");
    if (t->interleave < 0)
        return fail_text(is, "training.interleave", t->interleave, "must be >= 0 (0 or 1: no interleaving)");
    if (t->interleave > 1) {
        const int64_t per_stage = job->model.layers / p->pp, nmb = (job->global_batch / p->dp) / p->mbs;
        if (p->pp < 2)
            return fail_text(is, "training.interleave", t->interleave, "needs pp > 1");
        if (per_stage % t->interleave != 0)
            return fail_int(is, "training.interleave", t->interleave,
                            "must divide the layers per pipeline stage (%lld)", per_stage);
        if (nmb % p->pp != 0)
            return fail_int(is, "training.interleave", t->interleave,
                            "needs the microbatch count to be a multiple of pp (%lld)", p->pp);
    }
    if (t->pipeline != MODEL_PIPELINE_1F1B && t->pipeline != MODEL_PIPELINE_ZB_H1 &&
        t->pipeline != MODEL_PIPELINE_ZB_V && t->pipeline != MODEL_PIPELINE_DUALPIPE)
        return fail(is, "training.pipeline_schedule", model_pipeline_name(t->pipeline),
                    "the estimate takes 1f1b, zb-h1, zb-v or dualpipe (gpipe is a closed form only: "
                    "model_pipeline_form)");
    /* pp 1: nothing to schedule, the estimate is 1F1B's */
    if ((t->pipeline == MODEL_PIPELINE_ZB_V || t->pipeline == MODEL_PIPELINE_DUALPIPE) && p->pp > 1) {
        const int64_t nmb = (job->global_batch / p->dp) / p->mbs;
        const char *name = model_pipeline_name(t->pipeline);
        const int dual = t->pipeline == MODEL_PIPELINE_DUALPIPE;
        if (t->interleave > 1)
            return fail(is, "training.pipeline_schedule", name,
                        "needs interleave 1 (its two chunks per GPU are fixed)");
        if (dual && p->pp % 2)
            return fail(is, "training.pipeline_schedule", name, "needs an even pp (pp is %lld)",
                        (long long)p->pp);
        if (nmb < 2 * p->pp || (dual && nmb % 2))
            return fail(is, "training.pipeline_schedule", name,
                        "needs at least 2 pp (%lld)%s microbatches (%lld here)", (long long)(2 * p->pp),
                        dual ? ", an even number of," : "", (long long)nmb);
        if (!dual && (job->model.layers / p->pp) % 2)
            return fail(is, "training.pipeline_schedule", name,
                        "needs an even number of layers per stage (%lld) for its two chunks",
                        (long long)(job->model.layers / p->pp));
    }
    if (t->pipeline == MODEL_PIPELINE_ZB_H1) {
        const int64_t nmb = (job->global_batch / p->dp) / p->mbs;
        if (t->interleave > 1)
            return fail(is, "training.pipeline_schedule", "zb-h1",
                        "needs interleave 1 (ZB-H1 is not interleaved)");
        if (nmb < p->pp)
            return fail(is, "training.pipeline_schedule", "zb-h1",
                        "needs at least pp (%lld) microbatches (%lld here) for its closed form",
                        (long long)p->pp, (long long)nmb);
    }
    /* fully sharded data parallelism: the unit order of plain 1F1B (fsdp.c) */
    if (t->dp_comm == MODEL_DP_FSDP && t->interleave > 1)
        return fail(is, "training.dp_comm", "fsdp", "%s", "needs interleave 1 (not modelled interleaved)");
    if (t->dp_comm == MODEL_DP_FSDP && t->pipeline != MODEL_PIPELINE_1F1B)
        return fail(is, "training.dp_comm", "fsdp", "%s",
                    "needs pipeline_schedule 1f1b (not modelled with a split backward)");
    if (t->dp_comm == MODEL_DP_FSDP && model_is_moe(&job->model))
        return fail(is, "training.dp_comm", "fsdp", "%s",
                    "sharded, allreduce, allreduce-overlap (fsdp is not modelled with experts)");
    /* leading dense blocks (iteration.c, stages of two block tables): plain 1F1B stages, whole buckets */
    if (model_is_moe(&job->model) && job->model.moe.first_dense > 0) {
        if (t->interleave > 1)
            return fail_int(is, "training.interleave", t->interleave,
                            "0 or 1 with model.first_dense %lld (leading dense blocks are placed on plain "
                            "1F1B stages only)",
                            job->model.moe.first_dense);
        if (t->pipeline != MODEL_PIPELINE_1F1B && p->pp > 1)
            return fail(is, "training.pipeline_schedule", model_pipeline_name(t->pipeline),
                        "1f1b with model.first_dense %lld (leading dense blocks are placed on 1F1B stages "
                        "only)",
                        (long long)job->model.moe.first_dense);
        if (t->dp_comm == MODEL_DP_SHARDED_OVERLAP)
            return fail(is, "training.dp_comm", "sharded-overlap",
                        "sharded, allreduce or allreduce-overlap with model.first_dense %lld (the "
                        "distributed optimizer's buckets are not walked over two block tables)",
                        (long long)job->model.moe.first_dense);
    }
    return MODEL_OK;
}

/* Mixture of experts: the expert fields, ep and etp. */
static int check_moe(const model_job_t *job, model_issue_t *is) {
    const model_moe_t *x = &job->model.moe;
    const model_parallel_t *p = &job->par;
    if (x->experts < 0)
        return fail_text(is, "model.experts", x->experts, ">= 0 (0: a dense model)");
    if (!model_is_moe(&job->model)) {
        if (job->experts_par.ep > 1)
            return fail_text(is, "parallel.ep", job->experts_par.ep, "1 (a dense model has no experts)");
        return job->experts_par.etp > 1
                   ? fail_text(is, "parallel.etp", job->experts_par.etp, "1 (a dense model has no experts)")
                   : MODEL_OK;
    }
    if (x->topk < 1 || x->topk > x->experts)
        return fail_int(is, "model.topk", x->topk, "in 1..%lld (the experts)", x->experts);
    if (x->shared_experts < 0)
        return fail_text(is, "model.shared_experts", x->shared_experts, ">= 0");
    if (x->expert_ffn_hidden < 0)
        return fail_text(is, "model.expert_ffn_hidden", x->expert_ffn_hidden, ">= 0 (0: ffn_hidden)");
    if (x->first_dense < 0 || x->first_dense >= job->model.layers)
        return fail_int(is, "model.first_dense", x->first_dense, "in 0..%lld (layers - 1)",
                        job->model.layers - 1);
    if (!(x->capacity_factor >= 0.0 && x->capacity_factor < 1e6)) {
        char buf[32];
        snprintf(buf, sizeof buf, "%g", x->capacity_factor);
        return fail(is, "model.capacity_factor", buf, "%s", ">= 0 (0: dropless)");
    }
    const int64_t ep = job->experts_par.ep > 1 ? job->experts_par.ep : 1;
    if (job->experts_par.ep < 0 || x->experts % ep)
        return fail_int(is, "parallel.ep", job->experts_par.ep, "a divisor of the experts (%lld)",
                        x->experts);
    if (p->dp % ep)
        return fail_int(is, "parallel.ep", job->experts_par.ep,
                        "a divisor of dp (%lld): experts are split over data-parallel ranks", p->dp);
    const int64_t fe = x->expert_ffn_hidden > 0 ? x->expert_ffn_hidden : job->model.ffn_hidden;
    if (job->experts_par.etp < 0 || (job->experts_par.etp > 1 && fe % job->experts_par.etp))
        return fail_int(is, "parallel.etp", job->experts_par.etp,
                        "a divisor of the expert hidden size (%lld)", fe);
    /* What the layer table places (docs/model-formulas.md, section 18): 1d layouts with sequence
     * parallelism (Megatron-Core requires it for MoE with tensor parallelism), every block with
     * experts, experts whole on each GPU; refuse the rest rather than time it as something else. */
    if (p->strategy != MODEL_STRATEGY_1D)
        return fail(is, "parallel.strategy", model_strategy_name(p->strategy), "%s",
                    "1d (the MoE block is placed in 1d layouts only)");
    /* the expert grid: etp x ep x the expert-data-parallel ranks over the stage's tp x dp ranks */
    const int64_t etp = job->experts_par.etp > 1 ? job->experts_par.etp : 1;
    if ((p->dp * p->tp) % (ep * etp))
        return fail_int(is, "parallel.etp", job->experts_par.etp,
                        "a divisor of tp x dp / ep (%lld): the expert grid is etp x ep x edp",
                        p->dp * p->tp / ep);
    const model_training_t *t = &job->training;
    if (t->sequence_parallel == MODEL_SEQPAR_OFF && p->tp > 1)
        return fail(is, "training.sequence_parallel", "off", "%s",
                    "on (Megatron-Core requires sequence parallelism for MoE with tp > 1)");
    /* the distributed optimizer's two bucket sequences (distopt.c): one model chunk per stage */
    if (t->dp_comm == MODEL_DP_SHARDED_OVERLAP && t->interleave > 1)
        return fail(is, "training.dp_comm", "sharded-overlap", "%s",
                    "sharded, allreduce, allreduce-overlap (with experts and interleave > 1)");
    if (t->dp_comm == MODEL_DP_SHARDED_OVERLAP && job->model.layers / p->pp > MODEL_DISTOPT_PARTS_MAX - 2)
        return fail_int(is, "parallel.pp", p->pp, "with layers / pp <= %lld (sharded-overlap with experts)",
                        (int64_t)(MODEL_DISTOPT_PARTS_MAX - 2));
    return MODEL_OK;
}

int model_job_check(const model_job_t *job, model_issue_t *issue) {
    if (job->par.strategy != MODEL_STRATEGY_1D && job->par.strategy != MODEL_STRATEGY_2D &&
        job->par.strategy != MODEL_STRATEGY_2D_SEQP)
        return fail(issue, "parallel.strategy", "?", "one of 1d, 2d, 2d-seqp");
    if (check_system(&job->system, issue) || check_model(&job->model, issue) ||
        check_reference_arch(job, issue) || check_degrees(job, issue) || check_nv(job, issue) ||
        check_moe(job, issue))
        return MODEL_EINVAL;
    if (job->compat == MODEL_COMPAT_CORRECTED && model_i_training_check(job, issue))
        return MODEL_EINVAL;
    return MODEL_OK;
}

int64_t model_gcd(int64_t a, int64_t b) {
    while (b) {
        const int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int64_t model_divisor_upto(int64_t n, int64_t cap) {
    for (int64_t d = cap < n ? cap : n; d > 1; d--)
        if (n % d == 0)
            return d;
    return 1;
}

void model_nvlink_counts(int64_t gpus, int64_t nvlink_size, const int64_t group[4], int64_t nv[4]) {
    const int fits = gpus <= nvlink_size;
    int64_t room = nvlink_size;
    for (int i = 0; i < 4; i++)
        if (nv[i] > 0)
            room /= nv[i];
    for (int i = 0; i < 4; i++) {
        if (nv[i] > 0)
            continue;
        nv[i] = fits ? group[i] : model_divisor_upto(group[i], room);
        room = nv[i] > 0 ? room / nv[i] : room;
    }
}
