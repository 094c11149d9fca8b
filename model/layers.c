/* layers.c - the per-layer cost table of one transformer block (docs/model-formulas.md, sections 5 and 6).
 * Each layer class fills FLOPs (TFLOP), HBM traffic (GB), collectives, activation and weight
 * memory (GB) for one microbatch on one GPU; finish_pass() turns them into roofline and
 * collective times. Local sizes are floor divisions, exactly as in the reference.
 *
 * The corrected model's training options (model_training_t, docs/validation.md) change the table:
 * sequence parallelism off (all-reduces, whole-sequence LayerNorm and dropout), materialised
 * attention (four layers instead of fusedla), recomputation (a recomputed layer's backward pass
 * carries its forward pass) and the edge layers (embedding, output GEMM, loss). With a zeroed
 * model_training_t every number is exactly the one the model gave before these options.
 *
 * The architecture fields of model_transformer_t (docs/model-formulas.md, section 15) change the
 * table too: grouped-query attention (K and V of kv_heads heads), the feed-forward activation
 * (GeLU; SwiGLU with fc1 twice as wide; squared ReLU), RMSNorm, rotary embeddings (a "rope" layer,
 * no position table) and an untied output matrix. At their defaults (zero) every number is
 * unchanged. */
#include <math.h>
#include <string.h>

#include "model_internal.h"

#define TFLOP 1e-12  /* FLOPs -> TFLOP */
#define BYTE_GB 1e-9 /* bytes -> GB */

/* Megatron's vocab-parallel cross-entropy (2021-2023: the logits are cast to fp32 unless
 * --fp16-lm-cross-entropy). HBM bytes per logit element: forward = cast (read 2, write 4), max
 * (read 4), subtract the max in place (4 + 4), exp into a new buffer (4 + 4), sum (4), divide in
 * place (4 + 4) = 38; backward = (softmax - one-hot) x the loss gradient in place (4 + 4) and the
 * cast back to fp16 for the GEMM (4 + 2) = 14. The fp32 softmax (4 bytes) is kept. */
#define CE_FWD_BYTES 38.0
#define CE_BWD_BYTES 14.0
#define CE_KEPT_BYTES 4.0
/* FLOPs per logit element: forward max, subtract, exp, sum, divide; backward subtract, multiply
 * and the cast. */
#define CE_FWD_FLOPS 5.0
#define CE_BWD_FLOPS 3.0
/* The three small fp32 all-reduces of the vocab-parallel loss (max, sum of exp, target logit), each
 * of b*l values of 4 bytes. */
#define CE_STAT_BYTES 4.0

/* What every layer builder needs: the job, the element sizes and the tensor-core/vector ratio. */
typedef struct {
    const model_job_t *job;
    double s_gb;         /* element size */
    double sm_gb;        /* dropout-mask element size */
    double tcf;          /* matrix / vector FLOP rate, scales softmax and dropout inside fused attention */
    model_training_t tr; /* the training options in effect (all zero for the reference) */
} ctx_t;

/* A parallel group as a layer sees it: its size, members per NVLink domain, and which group. */
typedef struct {
    int64_t size, per_domain;
    model_group_t id;
} grp_t;

static void add_coll(model_pass_t *p, model_coll_op_t op, double volume_gb, grp_t g) {
    if (g.size <= 1 || volume_gb == 0.0)
        return;
    model_coll_t *c = &p->colls[p->n_colls++];
    c->op = op;
    c->group = g.id;
    c->volume_gb = volume_gb;
    c->group_size = g.size;
    c->per_domain = g.per_domain;
}

static model_layer_t *new_layer(model_block_t *blk, const char *name, model_module_t module,
                                int tensor_core) {
    model_layer_t *ly = &blk->layers[blk->n_layers++];
    memset(ly, 0, sizeof *ly);
    ly->name = name;
    ly->module = module;
    ly->tensor_core = tensor_core;
    return ly;
}

/* Record one GEMM of a pass (corrected model on a system with an SM count only: otherwise every
 * layer is timed by the flat rule and its table stays as it was). m x n output, k reduction, batch
 * products of that shape. */
static void add_gemm(const ctx_t *c, model_pass_t *p, double m, double n, double k, double batch) {
    if (c->job->compat != MODEL_COMPAT_CORRECTED || c->job->system.sm_count <= 0 ||
        p->n_gemms >= MODEL_MAX_GEMMS)
        return;
    model_gemm_t *g = &p->gemms[p->n_gemms++];
    g->m = (int64_t)m;
    g->n = (int64_t)n;
    g->k = (int64_t)k;
    g->batch = (int64_t)batch;
}

/* ---- FP8 (training.precision fp8; docs/model.md, "Precision") ------------------------------ */

/* Transformer Engine's cast kernel before an FP8 GEMM, per element of the GEMM input it casts: read
 * the BF16 element (2 bytes), write it in FP8 (1) and its FP8 transpose for the other GEMM of the
 * backward (1); the amax of the tensor (the scaling statistic) is reduced in the same kernel.
 * FLOPs: the scale multiply and the amax comparison. */
#define FP8_CAST_BYTES 4.0
#define FP8_CAST_FLOPS 2.0
/* Bytes of one FP8 element: the GEMM inputs Transformer Engine saves for the backward. */
#define FP8_ELEMENT_BYTES 1.0
/* Bytes per parameter of the FP8 weight copies Transformer Engine keeps beside the BF16 weights:
 * the FP8 weight and its FP8 transpose (Hopper's FP8 GEMMs take one operand layout, so the forward
 * and the input-gradient GEMM each need their own). */
#define FP8_WEIGHT_COPY_BYTES 2.0

static const char *cast_name(const char *gemm) {
    static const char *const names[][2] = {{"qkv", "qkv-cast"},
                                           {"vproj", "vproj-cast"},
                                           {"fc1", "fc1-cast"},
                                           {"fc2", "fc2-cast"},
                                           {"experts-fc1", "experts-fc1-cast"},
                                           {"experts-fc2", "experts-fc2-cast"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(gemm, names[i][0]) == 0)
            return names[i][1];
    return "cast";
}

/* One of the block's four Linear GEMMs. With FP8 its cast kernel comes first, as its own vector
 * layer (filled by fp8_cast once the GEMM's shapes are known: the layer just before the GEMM). */
static model_layer_t *gemm_layer(const ctx_t *c, model_block_t *blk, const char *name,
                                 model_module_t module) {
    const int fp8 = c->tr.precision == MODEL_PRECISION_FP8;
    if (fp8)
        new_layer(blk, cast_name(name), module, 0);
    model_layer_t *ly = new_layer(blk, name, module, 1);
    ly->fp8_gemm = fp8;
    return ly;
}

/* qkv and fc1 read a LayerNorm's output: Transformer Engine's LayerNormLinear and LayerNormMLP
 * write it in FP8 (and its transpose) from the norm kernel itself, so their forward cast is no
 * kernel of its own and costs nothing (1 + 1 bytes written instead of 2). */
static int cast_fused_forward(const model_layer_t *cast) {
    return strcmp(cast->name, "qkv-cast") == 0 || strcmp(cast->name, "fc1-cast") == 0;
}

/* The cast layer of an FP8 GEMM: in_elems of its input in the forward (unless fused into the
 * LayerNorm), out_elems of its output gradient in the backward; the GEMM keeps its input in FP8 for
 * the backward. */
static void fp8_cast(model_layer_t *gemm, double in_elems, double out_elems, double kept_elems) {
    model_layer_t *cast = gemm - 1;
    const double fwd_elems = cast_fused_forward(cast) ? 0.0 : in_elems;
    cast->fwd.flops_tflop = FP8_CAST_FLOPS * fwd_elems * TFLOP;
    cast->fwd.hbm_gb = FP8_CAST_BYTES * fwd_elems * BYTE_GB;
    cast->bwd.flops_tflop = FP8_CAST_FLOPS * out_elems * TFLOP;
    cast->bwd.hbm_gb = FP8_CAST_BYTES * out_elems * BYTE_GB;
    gemm->activations_gb = FP8_ELEMENT_BYTES * kept_elems * BYTE_GB;
}

/* ---- layer classes ---------------------------------------------------------------------- */

/* Rows of a Linear GEMM's input it keeps for the backward (the weight gradient), of the l rows it
 * multiplies. A column-parallel GEMM (m_col > 1) with sequence parallelism multiplies the input
 * all-gathered over its tensor group; the corrected model keeps only this rank's l / m_col rows and
 * gathers them again in the backward, as Megatron does (Korthikanti et al. 2022, sequence
 * parallelism, section 4). The re-gather is not timed: Megatron-LM starts it asynchronously under
 * the input-gradient GEMM (LinearWithGradAccumulationAndAsyncCommunication,
 * megatron/core/tensor_parallel/layers.py), and Transformer Engine's bulk overlap does the same
 * (model-formulas.md, section 16.1). The reference keeps the gathered input (quirk 11): all l rows. */
static double kept_rows(const ctx_t *c, int64_t l, int64_t m_col) {
    if (c->job->compat == MODEL_COMPAT_CORRECTED && c->tr.sequence_parallel != MODEL_SEQPAR_OFF && m_col > 1)
        return (double)(l / m_col);
    return (double)l;
}

/* Linear / LinearSeqp (5.1, 5.2): Y = X W with W (e_in, f_out); m_row shards e_in, m_col shards
 * f_out, the sequence is split over m_seq (1 for plain Linear). comm over the weight group tp:
 * reduce-scatters with sequence parallelism, all-reduces of the same buffer without it. */
static void linear(const ctx_t *c, model_layer_t *ly, int64_t e_in, int64_t f_out, int64_t m_row,
                   int64_t m_col, int64_t m_seq, grp_t tp) {
    const model_coll_op_t op =
        c->tr.sequence_parallel == MODEL_SEQPAR_OFF ? MODEL_COLL_ALLREDUCE : MODEL_COLL_REDUCESCATTER;
    const double s = c->s_gb;
    const double b = (double)c->job->par.mbs, l = (double)(c->job->model.seq_len / m_seq);
    const double el = (double)(e_in / m_row), fl = (double)(f_out / m_col);
    ly->fwd.flops_tflop = b * l * fl * (2.0 * el - 1.0) * TFLOP;
    ly->fwd.hbm_gb = (b * l * el + b * l * fl + el * fl) * s;
    const double kept = b * kept_rows(c, c->job->model.seq_len / m_seq, m_col) * el;
    ly->activations_gb = kept * s;
    ly->weights_gb = ly->weight_grads_gb = el * fl * s;
    if (m_row > 1)
        add_coll(&ly->fwd, op, b * l * (double)f_out * s, tp);
    ly->bwd.flops_tflop = (b * l * el * (2.0 * fl - 1.0) + el * fl * (2.0 * b * l - 1.0)) * TFLOP;
    ly->bwd.hbm_gb = (el * fl + b * l * el + 2.0 * b * l * fl + el * fl + b * l * el) * s;
    if (m_col > 1)
        add_coll(&ly->bwd, op, b * l * (double)e_in * s, tp);
    add_gemm(c, &ly->fwd, b * l, fl, el, 1.0); /* Y = X W */
    add_gemm(c, &ly->bwd, b * l, el, fl, 1.0); /* dX = dY W^T */
    add_gemm(c, &ly->bwd, el, fl, b * l, 1.0); /* dW = X^T dY */
    if (ly->fp8_gemm)
        fp8_cast(ly, b * l * el, b * l * fl, kept);
}

/* LinearSumma (5.3): grid m2 (rows, group g2) x m1 (columns, group g1), nb panels. */
static void linear_summa(const ctx_t *c, model_layer_t *ly, int64_t e_in, int64_t f_out, grp_t g1, grp_t g2) {
    const double s = c->s_gb, nb = (double)c->job->par.nb;
    const double b = (double)c->job->par.mbs, ein = (double)e_in;
    const double ll = (double)(c->job->model.seq_len / g2.size), fl = (double)(f_out / g1.size);
    const double e1 = (double)(e_in / g1.size), e2 = (double)(e_in / g2.size);
    ly->summa_overlap = 1;
    ly->fwd.flops_tflop = b * ll * fl * (2.0 * ein) * TFLOP;
    ly->fwd.hbm_gb = (b * ll * ein + ein * fl + nb * b * ll * fl) * s;
    ly->activations_gb = b * ll * e1 * s;
    ly->weights_gb = ly->weight_grads_gb = e2 * fl * s;
    add_coll(&ly->fwd, MODEL_COLL_BROADCAST, b * ll * ein * s, g1);
    add_coll(&ly->fwd, MODEL_COLL_BROADCAST, ein * fl * s, g2);
    ly->bwd.flops_tflop = (b * ll * ein * (2.0 * fl - 1.0) + ein * fl * (2.0 * b * ll - 1.0)) * TFLOP;
    ly->bwd.hbm_gb =
        (fl * ein + nb * b * ll * fl + b * ll * ein) * s + (ein * b * ll + nb * b * ll * fl + ein * fl) * s;
    add_coll(&ly->bwd, MODEL_COLL_BROADCAST, ein * fl * s, g2);
    add_coll(&ly->bwd, MODEL_COLL_REDUCE, b * ll * ein * s, g1);
    add_coll(&ly->bwd, MODEL_COLL_BROADCAST, b * ll * ein * s, g1);
    add_coll(&ly->bwd, MODEL_COLL_REDUCE, ein * fl * s, g2);
    add_gemm(c, &ly->fwd, b * ll, fl, ein, 1.0); /* all panels together: Y = X W */
    add_gemm(c, &ly->bwd, b * ll, ein, fl, 1.0); /* dX */
    add_gemm(c, &ly->bwd, ein, fl, b * ll, 1.0); /* dW */
    if (ly->fp8_gemm)
        fp8_cast(ly, b * ll * e1, b * ll * fl, b * ll * e1);
}

/* Bias (5.4) on a (b, l/m2, f/m1) tile. */
static void bias(const ctx_t *c, model_layer_t *ly, int64_t l, int64_t f, int64_t m2, int64_t m1) {
    const double s = c->s_gb, b = (double)c->job->par.mbs;
    const double ll = (double)(l / m2), fl = (double)(f / m1);
    ly->fwd.flops_tflop = ly->bwd.flops_tflop = b * ll * fl * TFLOP;
    ly->fwd.hbm_gb = ly->bwd.hbm_gb = (b * ll * fl + fl) * s;
    ly->weights_gb = ly->weight_grads_gb = fl * s;
}

/* GeLU (5.5) on m local elements. */
static void gelu(const ctx_t *c, model_layer_t *ly, double m) {
    ly->fwd.flops_tflop = 8.0 * m * TFLOP;
    ly->fwd.hbm_gb = 2.0 * m * c->s_gb;
    ly->activations_gb = m * c->s_gb;
    ly->bwd.flops_tflop = 13.0 * m * TFLOP;
    ly->bwd.hbm_gb = 3.0 * m * c->s_gb;
}

/* SwiGLU on m local outputs: silu(a) x b of the two halves a (gate) and b (up) of fc1's output.
 * Forward per output: sigmoid (negate, exp, add 1, divide: 4), times a, times b = 6 FLOPs; read a
 * and b, write the output. Backward: the sigmoid and silu again (5), silu's derivative s + silu
 * (1 - s) (3), da = dy b silu' (2), db = dy silu (1) = 11 FLOPs; read dy, a, b, write da and db.
 * a and b are kept (Megatron-Core keeps fc1's output for the activation's backward). */
static void swiglu(const ctx_t *c, model_layer_t *ly, double m) {
    ly->fwd.flops_tflop = 6.0 * m * TFLOP;
    ly->fwd.hbm_gb = 3.0 * m * c->s_gb;
    ly->activations_gb = 2.0 * m * c->s_gb;
    ly->bwd.flops_tflop = 11.0 * m * TFLOP;
    ly->bwd.hbm_gb = 5.0 * m * c->s_gb;
}

/* Squared ReLU (Nemotron) on m local elements: max(x, 0)^2, 2 FLOPs; backward dy 2 max(x, 0), 3
 * FLOPs. Traffic and kept input as GeLU. */
static void relu2(const ctx_t *c, model_layer_t *ly, double m) {
    ly->fwd.flops_tflop = 2.0 * m * TFLOP;
    ly->fwd.hbm_gb = 2.0 * m * c->s_gb;
    ly->activations_gb = m * c->s_gb;
    ly->bwd.flops_tflop = 3.0 * m * TFLOP;
    ly->bwd.hbm_gb = 3.0 * m * c->s_gb;
}

/* The feed-forward activation of the model on m local outputs. */
static void ffn_activation(const ctx_t *c, model_layer_t *ly, double m) {
    if (c->job->model.ffn_act == MODEL_FFN_SWIGLU)
        swiglu(c, ly, m);
    else if (c->job->model.ffn_act == MODEL_FFN_RELU2)
        relu2(c, ly, m);
    else
        gelu(c, ly, m);
}

/* fc1's output width: 2f for SwiGLU (gate and up in one GEMM), else f. */
static int64_t fc1_width(const ctx_t *c) {
    const model_transformer_t *m = &c->job->model;
    return m->ffn_act == MODEL_FFN_SWIGLU ? 2 * m->ffn_hidden : m->ffn_hidden;
}

/* The QKV projection's output width: (h + 2 kv) head dimensions; 3e with multi-head attention. */
static int64_t qkv_width(const ctx_t *c) {
    const model_transformer_t *m = &c->job->model;
    return (m->heads + 2 * model_kv_heads(m)) * (m->hidden / m->heads);
}

/* Dropout (5.6) on m local elements: only the 1-byte mask is kept. */
static void dropout(const ctx_t *c, model_layer_t *ly, double m) {
    ly->fwd.flops_tflop = ly->bwd.flops_tflop = m * TFLOP;
    ly->fwd.hbm_gb = ly->bwd.hbm_gb = m * c->s_gb + m * c->sm_gb + m * c->s_gb;
    ly->activations_gb = m * c->sm_gb;
}

/* The reference's dropout between the feed-forward activation and fc2 (dpr1). Megatron's MLP has
 * none (fc1, activation, fc2; its dropout follows fc2, dpr2), and Korthikanti et al. 2022 count the
 * MLP's activations as fc1's input, the activation's input, fc2's input and one dropout mask
 * (19 s b h). The corrected model keeps no mask for it; its time stays the reference's. */
static void mlp_dropout(const ctx_t *c, model_layer_t *ly, double m) {
    dropout(c, ly, m);
    if (c->job->compat == MODEL_COMPAT_CORRECTED)
        ly->activations_gb = 0.0;
}

/* RMSNorm on a (b, ll, el) tile of n elements: LayerNorm's counts without what RMSNorm does not
 * compute, the mean (a row sum and a subtraction per element), the bias and its gradient. Forward
 * 9n - 3n FLOPs; one statistic per row and one gain vector in HBM. Backward: the gain gradient
 * (2n), the input gradient (4n: LayerNorm's 5n less the mean-gradient term) and one row reduction
 * (2 b ll (el - 1)) instead of two; traffic as LayerNorm's less the bias gradient. */
static void rmsnorm_costs(const ctx_t *c, model_layer_t *ly, double ll, double el) {
    const double s = c->s_gb, b = (double)c->job->par.mbs, n = b * ll * el;
    ly->fwd.flops_tflop = 6.0 * n * TFLOP;
    ly->fwd.hbm_gb = (n + b * ll + n + el) * s;
    ly->activations_gb = n * s;
    ly->weights_gb = ly->weight_grads_gb = el * s;
    ly->bwd.flops_tflop = (2.0 * n + 4.0 * n + 2.0 * b * ll * (el - 1.0)) * TFLOP;
    ly->bwd.hbm_gb = (4.0 * n + el + n) * s;
}

/* LayerNorm statistics on a (b, ll, el) tile: FLOPs, traffic, activations, weights (RMSNorm when
 * the model asks for it). */
static void norm_costs(const ctx_t *c, model_layer_t *ly, double ll, double el) {
    if (c->job->model.norm == MODEL_NORM_RMSNORM) {
        rmsnorm_costs(c, ly, ll, el);
        return;
    }
    const double s = c->s_gb, b = (double)c->job->par.mbs;
    ly->fwd.flops_tflop = 9.0 * b * ll * el * TFLOP;
    ly->fwd.hbm_gb = (b * ll * el + 2.0 * b * ll + b * ll * el + 2.0 * el) * s;
    ly->activations_gb = b * ll * el * s;
    ly->weights_gb = ly->weight_grads_gb = 2.0 * el * s;
    ly->bwd.flops_tflop = (3.0 * b * ll * el + 5.0 * b * ll * el + 4.0 * b * ll * (el - 1.0)) * TFLOP;
    ly->bwd.hbm_gb = (4.0 * b * ll * el + 2.0 * el + b * ll * el) * s;
}

/* LayerNorm, sequence-parallel (5.7) over group g: AG before, RS in the backward. Without sequence
 * parallelism every tensor rank normalises the whole sequence and nothing is communicated. */
static void layernorm(const ctx_t *c, model_layer_t *ly, int64_t l, grp_t g) {
    const double e = (double)c->job->model.hidden, b = (double)c->job->par.mbs;
    if (c->tr.sequence_parallel == MODEL_SEQPAR_OFF) {
        norm_costs(c, ly, (double)l, e);
        return;
    }
    norm_costs(c, ly, (double)(l / g.size), e);
    add_coll(&ly->fwd, MODEL_COLL_ALLGATHER, b * (double)l * e * c->s_gb, g);
    add_coll(&ly->bwd, MODEL_COLL_REDUCESCATTER, b * (double)l * e * c->s_gb, g);
}

/* LayerNorm2D (5.8) on a (b, l/m2, e/m1) tile; reference quirk: local width l//m1. */
static void layernorm_2d(const ctx_t *c, model_layer_t *ly, grp_t g1, grp_t g2) {
    const int64_t l = c->job->model.seq_len, e = c->job->model.hidden;
    const double b = (double)c->job->par.mbs, s = c->s_gb;
    const int64_t width = c->job->compat == MODEL_COMPAT_REFERENCE ? l : e;
    const double ll = (double)(l / g2.size);
    norm_costs(c, ly, ll, (double)(width / g1.size));
    if (c->job->model.norm == MODEL_NORM_RMSNORM) { /* one statistic per row, gain only */
        add_coll(&ly->fwd, MODEL_COLL_ALLREDUCE, b * ll * s, g1);
        const double stats = (double)(e / g1.size) + floor(b * (double)l / (double)g2.size);
        add_coll(&ly->bwd, MODEL_COLL_ALLREDUCE, stats * s, g1);
        return;
    }
    add_coll(&ly->fwd, MODEL_COLL_ALLREDUCE, 2.0 * b * ll * s, g1);
    const double stats = (double)((2 * e) / g1.size) + floor(2.0 * b * (double)l / (double)g2.size);
    add_coll(&ly->bwd, MODEL_COLL_ALLREDUCE, stats * s, g1);
}

/* Softmax and dropout FLOPs of attention for rows x cols scores (scaled by tcf). */
static double softmax_flops(const ctx_t *c, double bh, double rows, double cols) {
    return c->tcf * (2.0 * bh * rows * cols + bh * rows * (cols - 1.0)) + c->tcf * bh * rows * cols;
}

/* The share of the l x l score square a flash-attention kernel computes: with a causal mask it skips
 * the blocks above the diagonal, l (l + 1) / 2 of the l^2 entries (the corrected model; context
 * parallelism as Megatron-Core runs it gives every rank two mirrored chunks of the sequence, so each
 * computes this share of its queries' rows). Materialised attention computes the whole square and
 * masks it; the reference counts the whole square. */
static double causal_fraction(const ctx_t *c) {
    const model_transformer_t *m = &c->job->model;
    if (c->job->compat != MODEL_COMPAT_CORRECTED || m->attention_mask == MODEL_MASK_NONE)
        return 1.0;
    return ((double)m->seq_len + 1.0) / (2.0 * (double)m->seq_len);
}

/* Fused (flash) attention (5.9, 5.10): queries sharded over g2 (1 for 1D), heads over g1. K and V
 * are all-gathered over g2. With g2 of size 1 this is exactly FusedLA. */
static void fused_attention(const ctx_t *c, model_layer_t *ly, grp_t g1, grp_t g2) {
    const model_transformer_t *m = &c->job->model;
    const double s = c->s_gb, b = (double)c->job->par.mbs;
    const double l = (double)m->seq_len, q = (double)(m->hidden / m->heads);
    const double ll = (double)(m->seq_len / g2.size), bh = b * (double)(m->heads / g1.size);
    const double bkv = b * (double)(model_kv_heads(m) / g1.size); /* K and V heads (GQA) */
    const double fwd_core =
        bh * ll * l * (2.0 * q - 1.0) + softmax_flops(c, bh, ll, l) + bh * ll * q * (2.0 * l - 1.0);
    ly->fwd.flops_tflop = fwd_core * TFLOP;
    ly->fwd.hbm_gb = (bh * ll * q + 2.0 * bkv * l * q + bh * ll + bh * ll * q) * s;
    ly->activations_gb = ((bh + 2.0 * bkv) * ll * q + bh * ll + bh * ll + bh * ll * q) * s;
    const double softmax_bwd =
        c->tcf * (2.0 * bh * ll * l + bh * ll * (l - 1.0) + bh * ll * l) + c->tcf * bh * ll * l;
    const double recompute = bh * ll * l * (2.0 * q - 1.0) + softmax_flops(c, bh, ll, l);
    ly->bwd.flops_tflop = (bh * ll * q * (2.0 * l - 1.0) + bh * l * q * (2.0 * ll - 1.0) + softmax_bwd +
                           bh * ll * l * (2.0 * q - 1.0) + bh * l * q * (2.0 * ll - 1.0) + recompute) *
                          TFLOP;
    ly->bwd.hbm_gb = (2.0 * bkv * l * q + 2.0 * bh * ll * q) * s + ly->activations_gb;
    /* The output O (bh ll q) is also vproj's input, which vproj keeps (5.1). In BF16 they are one
     * tensor: the corrected model counts it once, in vproj, as Korthikanti et al. 2022 do (the
     * backward traffic above still reads it). With FP8, vproj keeps its own FP8 cast and both stay. */
    if (c->job->compat == MODEL_COMPAT_CORRECTED && c->tr.precision != MODEL_PRECISION_FP8)
        ly->activations_gb -= bh * ll * q * s;
    const double frac = causal_fraction(c);
    ly->fwd.flops_tflop *= frac;
    ly->bwd.flops_tflop *= frac;
    ly->attention_kernel = 1;
    const double kv_gb = 2.0 * bkv * l * q * s;
    add_coll(&ly->fwd, MODEL_COLL_ALLGATHER, kv_gb, g2);
    add_coll(&ly->bwd, MODEL_COLL_ALLGATHER, kv_gb, g2);
    add_coll(&ly->bwd, MODEL_COLL_REDUCESCATTER, kv_gb, g2);
}

/* Materialised attention (Megatron-LM before flash attention): two batched GEMMs around a fused
 * scale-mask-softmax kernel and a dropout kernel, with the b*h*ll*l score matrix written to and
 * read from HBM by each. The shapes are fused_attention's (queries over g2, heads over g1, K and V
 * all-gathered over g2). Kept for the backward (Korthikanti et al. 2022: 5 a s^2 b bytes per
 * layer): the softmax output (2 bytes), the dropout mask (1) and the dropout output (2). */
static void attention_scores(const ctx_t *c, model_layer_t *ly, grp_t g1, grp_t g2) {
    const model_transformer_t *m = &c->job->model;
    const double s = c->s_gb, b = (double)c->job->par.mbs;
    const double l = (double)m->seq_len, q = (double)(m->hidden / m->heads);
    const double ll = (double)(m->seq_len / g2.size), bh = b * (double)(m->heads / g1.size);
    const double n = bh * ll * l, bkv = b * (double)(model_kv_heads(m) / g1.size);
    /* S = Q K^T: read Q and the gathered K, write the scores. Q, K and V are kept. */
    ly->fwd.flops_tflop = bh * ll * l * (2.0 * q - 1.0) * TFLOP;
    ly->fwd.hbm_gb = (bh * ll * q + bkv * l * q + n) * s;
    ly->activations_gb = (bh + 2.0 * bkv) * ll * q * s;
    /* dQ = dS K and dK = dS^T Q: read dS twice, read Q and K, write dQ and dK. */
    ly->bwd.flops_tflop = (bh * ll * q * (2.0 * l - 1.0) + bh * l * q * (2.0 * ll - 1.0)) * TFLOP;
    ly->bwd.hbm_gb = (2.0 * n + 2.0 * bh * ll * q + 2.0 * bkv * l * q) * s;
    const double kv_gb = 2.0 * bkv * l * q * s;
    add_coll(&ly->fwd, MODEL_COLL_ALLGATHER, kv_gb, g2);
    add_coll(&ly->bwd, MODEL_COLL_ALLGATHER, kv_gb, g2);
    add_coll(&ly->bwd, MODEL_COLL_REDUCESCATTER, kv_gb, g2);
    add_gemm(c, &ly->fwd, ll, l, q, bh); /* S = Q K^T, one per head and sequence */
    add_gemm(c, &ly->bwd, ll, q, l, bh); /* dQ = dS K */
    add_gemm(c, &ly->bwd, l, q, ll, bh); /* dK = dS^T Q */
}

/* Fused scale, mask and softmax on n scores (vector units): read and write each score; the output
 * is kept. Backward: read the output and its gradient, write the input gradient. FLOPs as the
 * reference's softmax (exp, max, sum, divide) plus the scaling. */
static void attention_softmax(const ctx_t *c, model_layer_t *ly, double rows, double cols) {
    const double n = rows * cols, s = c->s_gb;
    ly->fwd.flops_tflop = (2.0 * n + rows * (cols - 1.0) + n) * TFLOP;
    ly->fwd.hbm_gb = 2.0 * n * s;
    ly->activations_gb = n * s;
    ly->bwd.flops_tflop = (2.0 * n + rows * (cols - 1.0) + n) * TFLOP;
    ly->bwd.hbm_gb = 3.0 * n * s;
}

/* P' V: read the dropped-out probabilities (kept) and V, write the context. Backward: dP' = dC V^T
 * and dV = P'^T dC. */
static void attention_values(const ctx_t *c, model_layer_t *ly, grp_t g1, grp_t g2) {
    const model_transformer_t *m = &c->job->model;
    const double s = c->s_gb, b = (double)c->job->par.mbs;
    const double l = (double)m->seq_len, q = (double)(m->hidden / m->heads);
    const double ll = (double)(m->seq_len / g2.size), bh = b * (double)(m->heads / g1.size);
    const double n = bh * ll * l, bkv = b * (double)(model_kv_heads(m) / g1.size);
    ly->fwd.flops_tflop = bh * ll * q * (2.0 * l - 1.0) * TFLOP;
    ly->fwd.hbm_gb = (n + bkv * l * q + bh * ll * q) * s;
    ly->activations_gb = n * s;
    ly->bwd.flops_tflop = (bh * ll * l * (2.0 * q - 1.0) + bh * l * q * (2.0 * ll - 1.0)) * TFLOP;
    ly->bwd.hbm_gb = (2.0 * n + bh * ll * q + 2.0 * bkv * l * q) * s;
    add_gemm(c, &ly->fwd, ll, q, l, bh); /* C = P' V */
    add_gemm(c, &ly->bwd, ll, l, q, bh); /* dP' = dC V^T */
    add_gemm(c, &ly->bwd, l, q, ll, bh); /* dV = P'^T dC */
}

/* Rotary embeddings (Megatron-Core's fused RoPE kernel): Q and K of the local heads rotated in
 * place, x cos + rotate(x) sin, 3 FLOPs per element; read and write each element. The backward
 * rotates the gradients back the same way. Nothing is kept (the angles depend on positions only). */
static void rope(const ctx_t *c, model_block_t *blk, grp_t g1, grp_t g2) {
    const model_transformer_t *m = &c->job->model;
    if (m->position != MODEL_POSITION_ROTARY)
        return;
    model_layer_t *ly = new_layer(blk, "rope", MODEL_MODULE_SA, 0);
    const double heads = (double)(m->heads / g1.size) + (double)(model_kv_heads(m) / g1.size);
    const double n =
        (double)c->job->par.mbs * (double)(m->seq_len / g2.size) * heads * (double)(m->hidden / m->heads);
    ly->fwd.flops_tflop = ly->bwd.flops_tflop = 3.0 * n * TFLOP;
    ly->fwd.hbm_gb = ly->bwd.hbm_gb = 2.0 * n * c->s_gb;
}

/* The attention core: fusedla, or the four layers of materialised attention. */
static void attention(const ctx_t *c, model_block_t *blk, grp_t g1, grp_t g2) {
    rope(c, blk, g1, g2);
    if (c->tr.attention != MODEL_ATTENTION_MATERIALIZED) {
        fused_attention(c, new_layer(blk, "fusedla", MODEL_MODULE_SA, 1), g1, g2);
        return;
    }
    const model_transformer_t *m = &c->job->model;
    const double rows =
        (double)c->job->par.mbs * (double)(m->heads / g1.size) * (double)(m->seq_len / g2.size);
    const double cols = (double)m->seq_len;
    attention_scores(c, new_layer(blk, "attn-qk", MODEL_MODULE_SA, 1), g1, g2);
    attention_softmax(c, new_layer(blk, "softmax", MODEL_MODULE_SA, 0), rows, cols);
    dropout(c, new_layer(blk, "attn-dropout", MODEL_MODULE_SA, 0), rows * cols);
    attention_values(c, new_layer(blk, "attn-av", MODEL_MODULE_SA, 1), g1, g2);
}

/* Unfused gradient accumulation: after each microbatch's backward, its weight gradients (weights_gb
 * of them) are added to the accumulated gradients: read both, write the sum, one add per element.
 * A separate vector kernel in the backward pass. */
static void grad_add(const ctx_t *c, model_layer_t *ly, double weights_gb) {
    ly->bwd.flops_tflop = weights_gb / c->s_gb * TFLOP;
    ly->bwd.hbm_gb = 3.0 * weights_gb;
}

/* ---- edge layers (corrected model, training.embedding) ----------------------------------- */

/* Rows of the word embedding on one of T tensor ranks: Megatron pads the vocabulary to a multiple of
 * 128 x T (--make-vocab-size-divisible-by 128), so each rank holds ceil(V / 128T) x 128 rows. */
static int64_t vocab_local(const model_job_t *job, int64_t t) {
    const int64_t unit = 128 * t;
    return (job->model.vocab + unit - 1) / unit * 128;
}

/* Whether the block's input and output are sharded over the whole tensor group (1d with sequence
 * parallelism, 2d tiles, 2d-seqp sequence slices) or replicated (1d without it). */
static int io_sharded(const ctx_t *c) {
    return c->tr.sequence_parallel != MODEL_SEQPAR_OFF;
}

/* Vocab-parallel word embedding (V/T rows per rank) plus replicated position embedding (learned
 * positions only; rotary embeddings have no table and no add) and dropout, first stage. Every rank writes the
 * whole (b, l, e) lookup, zero outside its rows; the ranks then reduce it: a reduce-scatter to sequence
 * shards, or an all-reduce without sequence parallelism. Backward: dropout, the all-gather of the gradient
 * (sequence parallel), and the scatter-add of b*l rows into the table (read the gradient, read and write the
 * rows). */
static void embedding(const ctx_t *c, model_layer_t *ly, grp_t tp) {
    const model_job_t *job = c->job;
    const double s = c->s_gb, b = (double)job->par.mbs;
    const double l = (double)job->model.seq_len, e = (double)job->model.hidden;
    const double v_local = (double)vocab_local(job, tp.size);
    const double full = b * l * e, local = io_sharded(c) ? full / (double)tp.size : full;
    if (job->model.position == MODEL_POSITION_ROTARY) { /* dropout only; the word table only */
        ly->fwd.flops_tflop = ly->bwd.flops_tflop = local * TFLOP;
        ly->fwd.hbm_gb = 2.0 * full * s + local * (2.0 * s + c->sm_gb);
        ly->bwd.hbm_gb = 3.0 * full * s + local * (2.0 * s + c->sm_gb);
        ly->weights_gb = ly->weight_grads_gb = v_local * e * s;
    } else {
        ly->fwd.flops_tflop = (local + local) * TFLOP; /* position add, dropout */
        ly->fwd.hbm_gb = (2.0 * full + 3.0 * local) * s + local * (2.0 * s + c->sm_gb);
        ly->bwd.flops_tflop = (local + local) * TFLOP;
        ly->bwd.hbm_gb = (3.0 * full + 2.0 * local) * s + local * (2.0 * s + c->sm_gb);
        ly->weights_gb = ly->weight_grads_gb = (v_local * e + l * e) * s;
    }
    ly->activations_gb = local * c->sm_gb;
    /* the dense table gradient is zero-filled before the scatter-add; unfused accumulation adds it */
    ly->bwd.hbm_gb += v_local * e * s;
    if (c->tr.grad_accumulation == MODEL_GRAD_ACCUM_ADD)
        ly->bwd.hbm_gb += 3.0 * ly->weights_gb;
    if (io_sharded(c)) {
        add_coll(&ly->fwd, MODEL_COLL_REDUCESCATTER, full * s, tp);
        add_coll(&ly->bwd, MODEL_COLL_ALLGATHER, full * s, tp);
    } else {
        add_coll(&ly->fwd, MODEL_COLL_ALLREDUCE, full * s, tp);
    }
}

/* Last stage: final LayerNorm (on the local shard), the all-gather of its output over the tensor
 * group (sequence parallel) for the vocab-parallel GEMM Y = X E^T (E: the V/T x e rows of the tied
 * word embedding, or of the output layer's own matrix when untied; without sequence parallelism its
 * input-gradient all-reduce), and the fp32 vocab-parallel cross-entropy. Tied with one pipeline
 * stage, E is the embedding's own matrix (its weights counted once). */
static void output_layers(const ctx_t *c, model_block_t *blk, grp_t tp) {
    const model_job_t *job = c->job;
    const double s = c->s_gb, b = (double)job->par.mbs;
    const int64_t l = job->model.seq_len, e = job->model.hidden;
    const double full = b * (double)l * (double)e;
    const grp_t none = {1, 1, MODEL_GROUP_TP};

    model_layer_t *ln = &blk->edges[blk->n_edges++];
    memset(ln, 0, sizeof *ln);
    ln->name = "final-ln";
    ln->module = MODEL_MODULE_OUTPUT;
    norm_costs(c, ln, io_sharded(c) ? (double)l / (double)tp.size : (double)l, (double)e);
    if (io_sharded(c)) {
        add_coll(&ln->fwd, MODEL_COLL_ALLGATHER, full * s, tp);
        add_coll(&ln->bwd, MODEL_COLL_REDUCESCATTER, full * s, tp);
    }

    model_layer_t *gemm = &blk->edges[blk->n_edges++];
    memset(gemm, 0, sizeof *gemm);
    gemm->name = "logits";
    gemm->module = MODEL_MODULE_OUTPUT;
    gemm->tensor_core = 1;
    linear(c, gemm, e, vocab_local(job, tp.size), 1, 1, 1, none);
    if (c->tr.grad_accumulation == MODEL_GRAD_ACCUM_ADD) /* tied or not, its own add */
        gemm->bwd.hbm_gb += 3.0 * gemm->weights_gb;
    if (job->par.pp == 1 && !job->model.untied_embeddings)
        gemm->weights_gb = gemm->weight_grads_gb = 0.0; /* tied: the embedding's matrix */
    if (!io_sharded(c))
        add_coll(&gemm->bwd, MODEL_COLL_ALLREDUCE, full * s, tp);

    model_layer_t *loss = &blk->edges[blk->n_edges++];
    memset(loss, 0, sizeof *loss);
    loss->name = "loss";
    loss->module = MODEL_MODULE_OUTPUT;
    const double n = b * (double)l * (double)vocab_local(job, tp.size);
    loss->fwd.flops_tflop = CE_FWD_FLOPS * n * TFLOP;
    loss->fwd.hbm_gb = CE_FWD_BYTES * n * BYTE_GB;
    loss->bwd.flops_tflop = CE_BWD_FLOPS * n * TFLOP;
    loss->bwd.hbm_gb = CE_BWD_BYTES * n * BYTE_GB;
    loss->activations_gb = CE_KEPT_BYTES * n * BYTE_GB;
    for (int i = 0; i < 3; i++)
        add_coll(&loss->fwd, MODEL_COLL_ALLREDUCE, b * (double)l * CE_STAT_BYTES * BYTE_GB, tp);
}

/* ---- times ------------------------------------------------------------------------------ */

/* The peak rate a layer's passes run at: the vector rate, or the tensor-core peak of its GEMMs'
 * precision (FP8 for the block's Linear GEMMs with training.precision fp8, else BF16). */
static double layer_peak_tflop_per_s(const model_system_t *sys, const model_layer_t *ly) {
    if (!ly->tensor_core)
        return sys->vector_tflop_per_s;
    return model_peak_tflop_per_s(sys, ly->fp8_gemm ? MODEL_PRECISION_FP8 : MODEL_PRECISION_BF16);
}

/* The fraction of its peak a layer's kernels reach: system.flop_efficiency, or in the corrected model
 * the FP8 GEMM and the flash-attention efficiencies where the system gives them (docs/model.md,
 * "Kernel efficiencies"). */
static double kernel_efficiency(const model_job_t *job, const model_layer_t *ly) {
    const model_system_t *sys = &job->system;
    if (job->compat != MODEL_COMPAT_CORRECTED)
        return sys->flop_efficiency;
    if (ly->fp8_gemm && sys->fp8_flop_efficiency > 0.0)
        return sys->fp8_flop_efficiency;
    if (ly->attention_kernel && sys->attention_efficiency > 0.0)
        return sys->attention_efficiency;
    return sys->flop_efficiency;
}

/* The compute time of a pass (4.1): the launch overhead plus, in the corrected model on a GPU with
 * an SM count, the tile-and-wave time of each of the pass's GEMMs (model_gemm_time_s at the layer's
 * efficiency times the peak of its precision); otherwise, and for every layer that records no GEMM
 * (vector layers, flash attention), the flat rule F / (efficiency x rate). The HBM roofline is
 * applied by the caller. */
static double compute_s(const ctx_t *c, const model_layer_t *ly, model_pass_t *p) {
    const model_system_t *sys = &c->job->system;
    const double rate = kernel_efficiency(c->job, ly) * layer_peak_tflop_per_s(sys, ly);
    if (p->n_gemms > 0 && sys->sm_count > 0) {
        double t = sys->kernel_overhead_s;
        for (int i = 0; i < p->n_gemms; i++)
            t += model_gemm_time_s(sys->sm_count, rate, &p->gemms[i]);
        return t;
    }
    return sys->kernel_overhead_s + p->flops_tflop / rate;
}

/* Roofline plus collectives (4.1), or the SUMMA panel-pipelining rule (5.3). */
static void finish_pass(const ctx_t *c, const model_layer_t *ly, model_pass_t *p) {
    const model_system_t *sys = &c->job->system;
    const int summa = ly->summa_overlap;
    if (p == &ly->fwd && ly->name && cast_fused_forward(ly)) {
        p->comp_s = p->mem_s = p->mem_exposed_s = p->comm_s = p->time_s = 0.0; /* no kernel */
        return;
    }
    p->comp_s = compute_s(c, ly, p);
    const double hbm_eff = c->job->compat == MODEL_COMPAT_CORRECTED ? MODEL_I_HBM_EFFICIENCY : 1.0;
    p->mem_s = p->hbm_gb / (hbm_eff * sys->hbm_gb_per_s);
    p->mem_exposed_s = fmax(p->mem_s - p->comp_s, 0.0);
    const double nb = summa ? (double)c->job->par.nb : 1.0;
    double comm_s = 0.0;
    for (int i = 0; i < p->n_colls; i++) {
        model_coll_t *k = &p->colls[i];
        k->time_s = model_collective_time_s(sys, c->job->compat, k->op, k->volume_gb / nb, k->group_size,
                                            k->per_domain);
        comm_s += k->time_s;
    }
    if (summa)
        comm_s = comm_s + fmax(nb * comm_s - fmax(p->comp_s, p->mem_s), 0.0);
    else if (p->overlap != MODEL_OVERLAP_NONE)
        comm_s = model_overlap_exposed_s(p->overlap, p->chunks, comm_s, fmax(p->comp_s, p->mem_s));
    p->comm_s = comm_s;
    p->time_s = fmax(p->comp_s, p->mem_s) + comm_s;
}

/* ---- mixture of experts (docs/model-formulas.md, section 18) ---------------------------------- */

/* The feed-forward network of a MoE block (1d, sequence parallel, etp 1: model_job_check), in
 * Megatron-Core's order with its alltoall token dispatcher (megatron/core/transformer/moe): the
 * router on the T = b l / tp tokens this rank holds, the dispatch (permute, alltoall over the ep
 * group), the grouped GEMMs of its E / ep experts (and the shared experts) on the N = c k T + s T
 * tokens it receives on average, the combine (alltoall back, unpermute and the weighted sum of the
 * k outputs). The alltoalls' gradients are alltoalls of the same size in the backward. */
static void moe_ffn(const ctx_t *c, model_block_t *blk, double T) {
    const model_transformer_t *m = &c->job->model;
    const double s = c->s_gb, e = (double)m->hidden, E = (double)m->moe.experts, k = (double)m->moe.topk;
    const double fe = (double)(m->moe.expert_ffn_hidden > 0 ? m->moe.expert_ffn_hidden : m->ffn_hidden);
    const double fw = m->ffn_act == MODEL_FFN_SWIGLU ? 2.0 * fe : fe; /* fc1's width per expert */
    const double cap = m->moe.capacity_factor > 0.0 ? m->moe.capacity_factor : 1.0;
    int64_t ep, ep_t, edp, edp_t;
    model_expert_groups(c->job, &ep, &ep_t, &edp, &edp_t);
    const grp_t epg = {ep, ep_t, MODEL_GROUP_EP};
    /* expert tensor parallelism: each routed expert's matrices split over etp consecutive ranks, which
     * gather each other's dispatched tokens before the GEMMs and reduce-scatter the outputs after them
     * (Megatron-Core's alltoall dispatcher with expert_tensor_parallel_size > 1) */
    const double et = c->job->experts_par.etp > 1 ? (double)c->job->experts_par.etp : 1.0;
    const int64_t nvs = c->job->system.nvlink_size > 0 ? c->job->system.nvlink_size : 1;
    const grp_t etpg = {(int64_t)et, model_divisor_upto((int64_t)et, nvs), MODEL_GROUP_ETP};
    const double routed = E / (double)ep, shared = (double)m->moe.shared_experts;
    const double R = cap * k * T * et; /* routed tokens this rank's expert slices compute */
    const double N = R + shared * T;
    const double a2a_gb = T * k * e * s; /* the buffer each rank sends (and receives) */

    model_layer_t *r = new_layer(blk, "router", MODEL_MODULE_MLP, 1);
    r->fwd.flops_tflop = 2.0 * T * e * E * TFLOP;
    r->fwd.hbm_gb = (T * e + e * E + T * E) * s;
    r->bwd.flops_tflop = 4.0 * T * e * E * TFLOP;
    r->bwd.hbm_gb = (2.0 * e * E + 2.0 * T * e + 2.0 * T * E) * s;
    r->activations_gb = T * e * s;
    r->weights_gb = r->weight_grads_gb = e * E * s;

    model_layer_t *d = new_layer(blk, "dispatch", MODEL_MODULE_MLP, 0);
    d->fwd.hbm_gb = d->bwd.hbm_gb = 2.0 * a2a_gb; /* permute: gather the k copies of each token */
    add_coll(&d->fwd, MODEL_COLL_ALLTOALL, a2a_gb, epg);
    add_coll(&d->bwd, MODEL_COLL_ALLTOALL, a2a_gb, epg);

    /* with FP8, Transformer Engine's grouped linear casts each GEMM's input (the dispatched tokens:
     * no LayerNorm to fuse the cast into) and its output gradient, as the dense fc1 and fc2 */
    if (et > 1.0) { /* the all-gather of the dispatched tokens (its gradient: a reduce-scatter) */
        model_layer_t *g = new_layer(blk, "experts-gather", MODEL_MODULE_MLP, 0);
        add_coll(&g->fwd, MODEL_COLL_ALLGATHER, R * e * s, etpg);
        add_coll(&g->bwd, MODEL_COLL_REDUCESCATTER, R * e * s, etpg);
    }
    /* the routed experts' slices, fw / et and fe / et wide, on the R gathered tokens, and the shared
     * experts whole on the rank's own T: the outputs are N1 fw and N1 fe elements, N1 = c k T + s T
     * (the FLOPs of etp 1), the inputs N e */
    const double N1 = cap * k * T + shared * T;
    const double w1 = (routed / et + shared) * e * fw, w2 = (routed / et + shared) * fe * e;
    model_layer_t *f1 = gemm_layer(c, blk, "experts-fc1", MODEL_MODULE_MLP);
    f1->fwd.flops_tflop = 2.0 * N1 * e * fw * TFLOP;
    f1->fwd.hbm_gb = (N * e + N1 * fw + w1) * s;
    f1->bwd.flops_tflop = 4.0 * N1 * e * fw * TFLOP;
    f1->bwd.hbm_gb = (2.0 * w1 + 2.0 * N * e + 2.0 * N1 * fw) * s;
    f1->activations_gb = N * e * s;
    f1->weights_gb = f1->weight_grads_gb = w1 * s;
    if (f1->fp8_gemm)
        fp8_cast(f1, N * e, N1 * fw, N * e);
    ffn_activation(c, new_layer(blk, "experts-act", MODEL_MODULE_MLP, 0), N1 * fe);
    model_layer_t *f2 = gemm_layer(c, blk, "experts-fc2", MODEL_MODULE_MLP);
    f2->fwd.flops_tflop = 2.0 * N1 * fe * e * TFLOP;
    f2->fwd.hbm_gb = (N1 * fe + N * e + w2) * s;
    f2->bwd.flops_tflop = 4.0 * N1 * fe * e * TFLOP;
    f2->bwd.hbm_gb = (2.0 * w2 + 2.0 * N1 * fe + 2.0 * N * e) * s;
    f2->activations_gb = N1 * fe * s;
    f2->weights_gb = f2->weight_grads_gb = w2 * s;
    if (f2->fp8_gemm)
        fp8_cast(f2, N1 * fe, N * e, N1 * fe);
    if (et > 1.0) { /* the partial sums reduce-scattered back to the ranks the tokens came from */
        model_layer_t *sc = new_layer(blk, "experts-scatter", MODEL_MODULE_MLP, 0);
        add_coll(&sc->fwd, MODEL_COLL_REDUCESCATTER, R * e * s, etpg);
        add_coll(&sc->bwd, MODEL_COLL_ALLGATHER, R * e * s, etpg);
    }
    blk->expert_weights_gb = routed / et * (e * fw + fe * e) * s;
    /* Grouped GEMMs (Megatron-Core's GroupedMLP / TEGroupedLinear): one GEMM per local expert slice,
     * each on its share of the R routed rows (balanced routing, rounded up to whole rows), fw / et and
     * fe / et wide, and the shared experts' GEMMs whole on the T rows */
    const double m_e = routed > 0.0 ? ceil(R / routed) : 0.0, n_r = ceil(routed);
    const double shapes[2][2][2] = {{{e, fw / et}, {fe / et, e}},
                                    {{e, fw}, {fe, e}}}; /* [kind][fc] in, out */
    const double rows[2] = {m_e, T}, count[2] = {n_r, shared};
    model_layer_t *const fcs[2] = {f1, f2};
    for (int i = 0; i < 2; i++)
        for (int g = 0; g < 2; g++) {
            const double in = shapes[g][i][0], out = shapes[g][i][1];
            if (rows[g] <= 0.0 || count[g] <= 0.0)
                continue;
            add_gemm(c, &fcs[i]->fwd, rows[g], out, in, count[g]); /* Y = X W */
            add_gemm(c, &fcs[i]->bwd, rows[g], in, out, count[g]); /* dX = dY W^T */
            add_gemm(c, &fcs[i]->bwd, in, out, rows[g], count[g]); /* dW = X^T dY */
        }
    add_gemm(c, &r->fwd, T, E, e, 1.0); /* the router's logits */
    add_gemm(c, &r->bwd, T, e, E, 1.0);
    add_gemm(c, &r->bwd, e, E, T, 1.0);

    model_layer_t *cb = new_layer(blk, "combine", MODEL_MODULE_MLP, 0);
    add_coll(&cb->fwd, MODEL_COLL_ALLTOALL, a2a_gb, epg);
    add_coll(&cb->bwd, MODEL_COLL_ALLTOALL, a2a_gb, epg);
    /* unpermute and the weighted sum of each token's k outputs: read k e and k weights, write e */
    cb->fwd.flops_tflop = cb->bwd.flops_tflop = 2.0 * T * k * e * TFLOP;
    cb->fwd.hbm_gb = cb->bwd.hbm_gb = (T * k * e + T * k + T * e) * s;
    cb->activations_gb = T * k * s; /* the routing weights */
}

/* ---- modules (section 6) ---------------------------------------------------------------- */

static void block_1d(const ctx_t *c, model_block_t *blk, grp_t tp) {
    const int64_t l = c->job->model.seq_len, e = c->job->model.hidden, f = c->job->model.ffn_hidden;
    const int64_t m = tp.size, b = c->job->par.mbs;
    const grp_t none = {1, 1, MODEL_GROUP_TP2};
    /* rows of the (l, e) activations each rank holds between the modules */
    const int64_t l_io = c->tr.sequence_parallel == MODEL_SEQPAR_OFF ? l : l / m;
    linear(c, gemm_layer(c, blk, "qkv", MODEL_MODULE_SA), e, qkv_width(c), 1, m, 1, tp);
    attention(c, blk, tp, none);
    linear(c, gemm_layer(c, blk, "vproj", MODEL_MODULE_SA), e, e, m, 1, 1, tp);
    bias(c, new_layer(blk, "vproj-bias", MODEL_MODULE_SA, 0), l, e, 1, 1);
    dropout(c, new_layer(blk, "dpr_v", MODEL_MODULE_SA, 0), (double)b * (double)l_io * (double)e);
    if (model_is_moe(&c->job->model)) {
        /* the router and the dispatch take this rank's sequence-parallel shard as it is (Megatron-Core's
         * MoELayer): the norm before them gathers nothing */
        norm_costs(c, new_layer(blk, "ln2", MODEL_MODULE_SA, 0), (double)l_io, (double)e);
        moe_ffn(c, blk, (double)b * (double)l_io);
    } else {
        layernorm(c, new_layer(blk, "ln2", MODEL_MODULE_SA, 0), l, tp);
        linear(c, gemm_layer(c, blk, "fc1", MODEL_MODULE_MLP), e, fc1_width(c), 1, m, 1, tp);
        bias(c, new_layer(blk, "fc1-bias", MODEL_MODULE_MLP, 0), l, fc1_width(c), 1, m);
        ffn_activation(c, new_layer(blk, "act1", MODEL_MODULE_MLP, 0),
                       (double)b * (double)l * (double)(f / m));
        mlp_dropout(c, new_layer(blk, "dpr1", MODEL_MODULE_MLP, 0), (double)b * (double)l * (double)(f / m));
        linear(c, gemm_layer(c, blk, "fc2", MODEL_MODULE_MLP), f, e, m, 1, 1, tp);
        bias(c, new_layer(blk, "fc2-bias", MODEL_MODULE_MLP, 0), l, e, 1, 1);
    }
    dropout(c, new_layer(blk, "dpr2", MODEL_MODULE_MLP, 0), (double)b * (double)l_io * (double)e);
    layernorm(c, new_layer(blk, "ln1", MODEL_MODULE_MLP, 0), l, tp);
}

/* 2D SUMMA GEMMs with context-parallel attention (reference quirk 12.4: execute_2d uses sa_2d_seqp). */
static void block_2d(const ctx_t *c, model_block_t *blk, grp_t g1, grp_t g2) {
    const int64_t l = c->job->model.seq_len, e = c->job->model.hidden, f = c->job->model.ffn_hidden;
    const int64_t m1 = g1.size, m2 = g2.size, b = c->job->par.mbs;
    linear_summa(c, gemm_layer(c, blk, "qkv", MODEL_MODULE_SA), e, qkv_width(c), g1, g2);
    attention(c, blk, g1, g2);
    linear_summa(c, gemm_layer(c, blk, "vproj", MODEL_MODULE_SA), e, e, g1, g2);
    bias(c, new_layer(blk, "vproj-bias", MODEL_MODULE_SA, 0), l, e, m2, m1);
    dropout(c, new_layer(blk, "dpr_v", MODEL_MODULE_SA, 0), (double)b * (double)(l / m2) * (double)(e / m1));
    layernorm_2d(c, new_layer(blk, "ln2", MODEL_MODULE_SA, 0), g1, g2);
    linear_summa(c, gemm_layer(c, blk, "fc1", MODEL_MODULE_MLP), e, fc1_width(c), g1, g2);
    bias(c, new_layer(blk, "fc1-bias", MODEL_MODULE_MLP, 0), l, fc1_width(c), m2, m1);
    ffn_activation(c, new_layer(blk, "act1", MODEL_MODULE_MLP, 0),
                   (double)b * (double)(l / m2) * (double)(f / m1));
    mlp_dropout(c, new_layer(blk, "dpr1", MODEL_MODULE_MLP, 0),
                (double)b * (double)(l / m2) * (double)(f / m1));
    linear_summa(c, gemm_layer(c, blk, "fc2", MODEL_MODULE_MLP), f, e, g1, g2);
    bias(c, new_layer(blk, "fc2-bias", MODEL_MODULE_MLP, 0), l, e, m2, m1);
    dropout(c, new_layer(blk, "dpr2", MODEL_MODULE_MLP, 0), (double)b * (double)(l / m2) * (double)(e / m1));
    layernorm_2d(c, new_layer(blk, "ln1", MODEL_MODULE_MLP, 0), g1, g2);
}

/* 1D weights on g1 (Megatron), context parallel on g2, Megatron-SP over g1 inside each slice. */
static void block_2d_seqp(const ctx_t *c, model_block_t *blk, grp_t g1, grp_t g2) {
    const int64_t l = c->job->model.seq_len, e = c->job->model.hidden, f = c->job->model.ffn_hidden;
    const int64_t m1 = g1.size, m2 = g2.size, b = c->job->par.mbs;
    linear(c, gemm_layer(c, blk, "qkv", MODEL_MODULE_SA), e, qkv_width(c), 1, m1, m2, g1);
    attention(c, blk, g1, g2);
    linear(c, gemm_layer(c, blk, "vproj", MODEL_MODULE_SA), e, e, m1, 1, m2, g1);
    bias(c, new_layer(blk, "vproj-bias", MODEL_MODULE_SA, 0), l, e, m2, m1);
    dropout(c, new_layer(blk, "dpr_v", MODEL_MODULE_SA, 0), (double)b * (double)(l / (m1 * m2)) * (double)e);
    layernorm(c, new_layer(blk, "ln2", MODEL_MODULE_SA, 0), l / m2, g1);
    linear(c, gemm_layer(c, blk, "fc1", MODEL_MODULE_MLP), e, fc1_width(c), 1, m1, m2, g1);
    bias(c, new_layer(blk, "fc1-bias", MODEL_MODULE_MLP, 0), l, fc1_width(c), m2, m1);
    ffn_activation(c, new_layer(blk, "act1", MODEL_MODULE_MLP, 0),
                   (double)b * (double)(l / m2) * (double)(f / m1));
    mlp_dropout(c, new_layer(blk, "dpr1", MODEL_MODULE_MLP, 0),
                (double)b * (double)(l / m2) * (double)(f / m1));
    linear(c, gemm_layer(c, blk, "fc2", MODEL_MODULE_MLP), f, e, m1, 1, m2, g1);
    bias(c, new_layer(blk, "fc2-bias", MODEL_MODULE_MLP, 0), l / m2, e, m1, 1);
    dropout(c, new_layer(blk, "dpr2", MODEL_MODULE_MLP, 0), (double)b * (double)(l / (m1 * m2)) * (double)e);
    layernorm(c, new_layer(blk, "ln1", MODEL_MODULE_MLP, 0), l / m2, g1);
}

/* ---- recomputation ------------------------------------------------------------------------ */

/* The backward pass re-runs the forward first: add the forward's costs and collectives to it. */
static void add_recompute(model_layer_t *ly) {
    model_pass_t *b = &ly->bwd;
    const model_pass_t *f = &ly->fwd;
    b->flops_tflop += f->flops_tflop;
    b->hbm_gb += f->hbm_gb;
    for (int i = 0; i < f->n_colls && b->n_colls < MODEL_MAX_COLLS; i++)
        b->colls[b->n_colls++] = f->colls[i];
    for (int i = 0; i < f->n_gemms && b->n_gemms < MODEL_MAX_GEMMS; i++)
        b->gemms[b->n_gemms++] = f->gemms[i];
    b->comp_s += f->comp_s;
    b->mem_s += f->mem_s;
    b->mem_exposed_s += f->mem_exposed_s;
    b->comm_s += f->comm_s;
    b->time_s += f->time_s;
}

/* The attention core that selective recomputation recomputes (Korthikanti et al. 2022): fusedla,
 * or the scores, softmax, dropout and AV of materialised attention. */
static int attention_core(const model_layer_t *ly) {
    static const char *const core[] = {"fusedla", "attn-qk", "softmax", "attn-dropout", "attn-av"};
    for (size_t i = 0; i < sizeof core / sizeof core[0]; i++)
        if (strcmp(ly->name, core[i]) == 0)
            return 1;
    return 0;
}

/* Selective: the core is recomputed and keeps only Q, K and V (3 b h_local l_local q elements).
 * Full: every layer is recomputed; the block keeps its input (checkpoint_gb), and A_blk stays the
 * working set of the one block being recomputed. */
static void recompute(const ctx_t *c, model_block_t *blk) {
    const model_transformer_t *m = &c->job->model;
    if (c->tr.recompute == MODEL_RECOMPUTE_FULL)
        blk->checkpoint_gb = blk->output_gb;
    for (int i = 0; i < blk->n_layers; i++) {
        model_layer_t *ly = &blk->layers[i];
        if (c->tr.recompute == MODEL_RECOMPUTE_FULL) {
            add_recompute(ly);
        } else if (c->tr.recompute == MODEL_RECOMPUTE_SELECTIVE && attention_core(ly)) {
            add_recompute(ly);
            const int qkv_holder = strcmp(ly->name, "fusedla") == 0 || strcmp(ly->name, "attn-qk") == 0;
            if (qkv_holder) {
                const model_parallel_t *p = &c->job->par;
                const int64_t g1 = p->strategy == MODEL_STRATEGY_1D ? p->tp : p->tp1;
                const int64_t g2 = p->strategy == MODEL_STRATEGY_1D ? 1 : p->tp2;
                const double bh = (double)p->mbs * (double)(m->heads / g1);
                const double bkv = (double)p->mbs * (double)(model_kv_heads(m) / g1);
                ly->activations_gb =
                    (bh + 2.0 * bkv) * (double)(m->seq_len / g2) * (double)(m->hidden / m->heads) * c->s_gb;
            } else {
                ly->activations_gb = 0.0;
            }
        }
    }
}

/* The training options in effect: none for the reference. */
static model_training_t training_of(const model_job_t *job) {
    model_training_t t;
    memset(&t, 0, sizeof t);
    if (job->compat == MODEL_COMPAT_CORRECTED)
        t = job->training;
    return t;
}

static void edges_build(const ctx_t *c, model_block_t *blk) {
    const model_parallel_t *p = &c->job->par;
    const grp_t tp = {p->tp, p->nv_tp1 * p->nv_tp2, MODEL_GROUP_TP};
    blk->n_edges = 0;
    model_layer_t *emb = &blk->edges[blk->n_edges++];
    memset(emb, 0, sizeof *emb);
    emb->name = "embedding";
    emb->module = MODEL_MODULE_EMBEDDING;
    embedding(c, emb, tp);
    output_layers(c, blk, tp);
    for (int i = 0; i < blk->n_edges; i++) {
        model_layer_t *ly = &blk->edges[i];
        finish_pass(c, ly, &ly->fwd);
        finish_pass(c, ly, &ly->bwd);
        const int first = ly->module == MODEL_MODULE_EMBEDDING;
        *(first ? &blk->first_t_fwd_s : &blk->last_t_fwd_s) += ly->fwd.time_s;
        *(first ? &blk->first_t_bwd_s : &blk->last_t_bwd_s) += ly->bwd.time_s;
        *(first ? &blk->first_weights_gb : &blk->last_weights_gb) += ly->weights_gb;
        *(first ? &blk->first_activations_gb : &blk->last_activations_gb) += ly->activations_gb;
    }
}

void model_block_build(const model_job_t *job, model_block_t *blk) {
    const model_system_t *sys = &job->system;
    const ctx_t c = {job, sys->element_gb, sys->mask_element_gb,
                     sys->matrix_tflop_per_s / sys->vector_tflop_per_s, training_of(job)};
    const model_parallel_t *p = &job->par;
    const grp_t g1 = {p->strategy == MODEL_STRATEGY_1D ? p->tp : p->tp1, p->nv_tp1, MODEL_GROUP_TP1};
    const grp_t g2 = {p->strategy == MODEL_STRATEGY_1D ? 1 : p->tp2, p->nv_tp2, MODEL_GROUP_TP2};
    blk->n_layers = 0;
    blk->expert_weights_gb = 0.0;
    if (p->strategy == MODEL_STRATEGY_1D)
        block_1d(&c, blk, g1);
    else if (p->strategy == MODEL_STRATEGY_2D)
        block_2d(&c, blk, g1, g2);
    else
        block_2d_seqp(&c, blk, g1, g2);
    blk->output_gb = blk->layers[blk->n_layers - 1].activations_gb;
    if (c.tr.grad_accumulation == MODEL_GRAD_ACCUM_ADD) {
        double w_gb = 0.0;
        for (int i = 0; i < blk->n_layers; i++)
            w_gb += blk->layers[i].weight_grads_gb;
        grad_add(&c, new_layer(blk, "wgrad-add", MODEL_MODULE_MLP, 0), w_gb);
    }

    if (c.tr.tp_comm_overlap)
        model_i_tp_overlap_plan(blk);
    if (c.tr.cp_comm == MODEL_CP_RING)
        model_i_cp_ring_plan(blk);

    blk->t_fwd_s = blk->t_bwd_s = blk->flops_tflop = blk->activations_gb = blk->weights_gb = 0.0;
    blk->fp8_weights_gb = blk->fp8_param_saving_gb = blk->expert_fp8_param_saving_gb = 0.0;
    for (int i = 0; i < blk->n_layers; i++) {
        model_layer_t *ly = &blk->layers[i];
        finish_pass(&c, ly, &ly->fwd);
        finish_pass(&c, ly, &ly->bwd);
    }
    blk->checkpoint_gb = 0.0;
    if (c.tr.recompute != MODEL_RECOMPUTE_NONE)
        recompute(&c, blk);
    if (c.tr.tp_comm_overlap || c.tr.cp_comm == MODEL_CP_RING)
        model_i_overlap_refresh(blk);
    for (int i = 0; i < blk->n_layers; i++) {
        const model_layer_t *ly = &blk->layers[i];
        blk->t_fwd_s += ly->fwd.time_s;
        blk->t_bwd_s += ly->bwd.time_s;
        blk->flops_tflop += ly->fwd.flops_tflop + ly->bwd.flops_tflop;
        blk->activations_gb += ly->activations_gb;
        blk->weights_gb += ly->weights_gb;
        if (ly->fp8_gemm && c.tr.fp8_param_gather) {
            /* the parameter is the FP8 weight: only the transpose is an extra copy */
            blk->fp8_weights_gb +=
                ly->weights_gb / c.s_gb * (FP8_WEIGHT_COPY_BYTES - FP8_ELEMENT_BYTES) * BYTE_GB;
            blk->fp8_param_saving_gb +=
                ly->weights_gb - ly->weights_gb / c.s_gb * FP8_ELEMENT_BYTES * BYTE_GB;
        } else if (ly->fp8_gemm) {
            blk->fp8_weights_gb += ly->weights_gb / c.s_gb * FP8_WEIGHT_COPY_BYTES * BYTE_GB;
        }
    }
    /* the routed experts' share of the saving (their grouped GEMMs are FP8 whenever the block's are) */
    if (c.tr.fp8_param_gather && c.tr.precision == MODEL_PRECISION_FP8 && blk->expert_weights_gb > 0.0)
        blk->expert_fp8_param_saving_gb =
            blk->expert_weights_gb - blk->expert_weights_gb / c.s_gb * FP8_ELEMENT_BYTES * BYTE_GB;

    blk->n_edges = 0;
    blk->first_t_fwd_s = blk->first_t_bwd_s = blk->last_t_fwd_s = blk->last_t_bwd_s = 0.0;
    blk->first_weights_gb = blk->last_weights_gb = 0.0;
    blk->first_activations_gb = blk->last_activations_gb = 0.0;
    if (c.tr.embedding)
        edges_build(&c, blk);
}
