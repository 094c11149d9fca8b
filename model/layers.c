/* layers.c - the per-layer cost table of one transformer block (seed-model.md sections 5 and 6).
 * Each layer class fills FLOPs (TFLOP), HBM traffic (GB), collectives, activation and weight
 * memory (GB) for one microbatch on one GPU; finish_pass() turns them into roofline and
 * collective times. Local sizes are floor divisions, exactly as in the reference. */
#include <math.h>
#include <string.h>

#include "model_internal.h"

#define TFLOP 1e-12 /* FLOPs -> TFLOP */

/* What every layer builder needs: the job, the element sizes and the tensor-core/vector ratio. */
typedef struct {
    const model_job_t *job;
    double s_gb;  /* element size */
    double sm_gb; /* dropout-mask element size */
    double tcf;   /* matrix / vector FLOP rate, scales softmax and dropout inside fused attention */
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

/* ---- layer classes ---------------------------------------------------------------------- */

/* Linear / LinearSeqp (5.1, 5.2): Y = X W with W (e_in, f_out); m_row shards e_in, m_col shards
 * f_out, the sequence is split over m_seq (1 for plain Linear). comm over the weight group tp. */
static void linear(const ctx_t *c, model_layer_t *ly, int64_t e_in, int64_t f_out, int64_t m_row,
                   int64_t m_col, int64_t m_seq, grp_t tp) {
    const double s = c->s_gb;
    const double b = (double)c->job->par.mbs, l = (double)(c->job->model.seq_len / m_seq);
    const double el = (double)(e_in / m_row), fl = (double)(f_out / m_col);
    ly->fwd.flops_tflop = b * l * fl * (2.0 * el - 1.0) * TFLOP;
    ly->fwd.hbm_gb = (b * l * el + b * l * fl + el * fl) * s;
    ly->activations_gb = b * l * el * s;
    ly->weights_gb = ly->weight_grads_gb = el * fl * s;
    if (m_row > 1)
        add_coll(&ly->fwd, MODEL_COLL_REDUCESCATTER, b * l * (double)f_out * s, tp);
    ly->bwd.flops_tflop = (b * l * el * (2.0 * fl - 1.0) + el * fl * (2.0 * b * l - 1.0)) * TFLOP;
    ly->bwd.hbm_gb = (el * fl + b * l * el + 2.0 * b * l * fl + el * fl + b * l * el) * s;
    if (m_col > 1)
        add_coll(&ly->bwd, MODEL_COLL_REDUCESCATTER, b * l * (double)e_in * s, tp);
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

/* Dropout (5.6) on m local elements: only the 1-byte mask is kept. */
static void dropout(const ctx_t *c, model_layer_t *ly, double m) {
    ly->fwd.flops_tflop = ly->bwd.flops_tflop = m * TFLOP;
    ly->fwd.hbm_gb = ly->bwd.hbm_gb = m * c->s_gb + m * c->sm_gb + m * c->s_gb;
    ly->activations_gb = m * c->sm_gb;
}

/* LayerNorm statistics on a (b, ll, el) tile: FLOPs, traffic, activations, weights. */
static void norm_costs(const ctx_t *c, model_layer_t *ly, double ll, double el) {
    const double s = c->s_gb, b = (double)c->job->par.mbs;
    ly->fwd.flops_tflop = 9.0 * b * ll * el * TFLOP;
    ly->fwd.hbm_gb = (b * ll * el + 2.0 * b * ll + b * ll * el + 2.0 * el) * s;
    ly->activations_gb = b * ll * el * s;
    ly->weights_gb = ly->weight_grads_gb = 2.0 * el * s;
    ly->bwd.flops_tflop = (3.0 * b * ll * el + 5.0 * b * ll * el + 4.0 * b * ll * (el - 1.0)) * TFLOP;
    ly->bwd.hbm_gb = (4.0 * b * ll * el + 2.0 * el + b * ll * el) * s;
}

/* LayerNorm, sequence-parallel (5.7) over group g: AG before, RS in the backward. */
static void layernorm(const ctx_t *c, model_layer_t *ly, int64_t l, grp_t g) {
    const double e = (double)c->job->model.hidden, b = (double)c->job->par.mbs;
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
    add_coll(&ly->fwd, MODEL_COLL_ALLREDUCE, 2.0 * b * ll * s, g1);
    const double stats = (double)((2 * e) / g1.size) + floor(2.0 * b * (double)l / (double)g2.size);
    add_coll(&ly->bwd, MODEL_COLL_ALLREDUCE, stats * s, g1);
}

/* Softmax and dropout FLOPs of attention for rows x cols scores (scaled by tcf). */
static double softmax_flops(const ctx_t *c, double bh, double rows, double cols) {
    return c->tcf * (2.0 * bh * rows * cols + bh * rows * (cols - 1.0)) + c->tcf * bh * rows * cols;
}

/* Fused (flash) attention (5.9, 5.10): queries sharded over g2 (1 for 1D), heads over g1. K and V
 * are all-gathered over g2. With g2 of size 1 this is exactly FusedLA. */
static void fused_attention(const ctx_t *c, model_layer_t *ly, grp_t g1, grp_t g2) {
    const model_transformer_t *m = &c->job->model;
    const double s = c->s_gb, b = (double)c->job->par.mbs;
    const double l = (double)m->seq_len, q = (double)(m->hidden / m->heads);
    const double ll = (double)(m->seq_len / g2.size), bh = b * (double)(m->heads / g1.size);
    const double fwd_core =
        bh * ll * l * (2.0 * q - 1.0) + softmax_flops(c, bh, ll, l) + bh * ll * q * (2.0 * l - 1.0);
    ly->fwd.flops_tflop = fwd_core * TFLOP;
    ly->fwd.hbm_gb = (bh * ll * q + 2.0 * bh * l * q + bh * ll + bh * ll * q) * s;
    ly->activations_gb = (3.0 * bh * ll * q + bh * ll + bh * ll + bh * ll * q) * s;
    const double softmax_bwd =
        c->tcf * (2.0 * bh * ll * l + bh * ll * (l - 1.0) + bh * ll * l) + c->tcf * bh * ll * l;
    const double recompute = bh * ll * l * (2.0 * q - 1.0) + softmax_flops(c, bh, ll, l);
    ly->bwd.flops_tflop = (bh * ll * q * (2.0 * l - 1.0) + bh * l * q * (2.0 * ll - 1.0) + softmax_bwd +
                           bh * ll * l * (2.0 * q - 1.0) + bh * l * q * (2.0 * ll - 1.0) + recompute) *
                          TFLOP;
    ly->bwd.hbm_gb = (2.0 * bh * l * q + 2.0 * bh * ll * q) * s + ly->activations_gb;
    const double kv_gb = 2.0 * bh * l * q * s;
    add_coll(&ly->fwd, MODEL_COLL_ALLGATHER, kv_gb, g2);
    add_coll(&ly->bwd, MODEL_COLL_ALLGATHER, kv_gb, g2);
    add_coll(&ly->bwd, MODEL_COLL_REDUCESCATTER, kv_gb, g2);
}

/* ---- times ------------------------------------------------------------------------------ */

/* Roofline plus collectives (4.1), or the SUMMA panel-pipelining rule (5.3). */
static void finish_pass(const ctx_t *c, model_pass_t *p, int tensor_core, int summa) {
    const model_system_t *sys = &c->job->system;
    const double rate = tensor_core ? sys->matrix_tflop_per_s : sys->vector_tflop_per_s;
    p->comp_s = sys->kernel_overhead_s + p->flops_tflop / (sys->flop_efficiency * rate);
    p->mem_s = p->hbm_gb / sys->hbm_gb_per_s;
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
    p->comm_s = comm_s;
    p->time_s = fmax(p->comp_s, p->mem_s) + comm_s;
}

/* ---- modules (section 6) ---------------------------------------------------------------- */

static void block_1d(const ctx_t *c, model_block_t *blk, grp_t tp) {
    const int64_t l = c->job->model.seq_len, e = c->job->model.hidden, f = c->job->model.ffn_hidden;
    const int64_t m = tp.size, b = c->job->par.mbs;
    const grp_t none = {1, 1, MODEL_GROUP_TP2};
    linear(c, new_layer(blk, "qkv", MODEL_MODULE_SA, 1), e, 3 * e, 1, m, 1, tp);
    fused_attention(c, new_layer(blk, "fusedla", MODEL_MODULE_SA, 1), tp, none);
    linear(c, new_layer(blk, "vproj", MODEL_MODULE_SA, 1), e, e, m, 1, 1, tp);
    bias(c, new_layer(blk, "vproj-bias", MODEL_MODULE_SA, 0), l, e, 1, 1);
    dropout(c, new_layer(blk, "dpr_v", MODEL_MODULE_SA, 0), (double)(b * (l / m) * e));
    layernorm(c, new_layer(blk, "ln2", MODEL_MODULE_SA, 0), l, tp);
    linear(c, new_layer(blk, "fc1", MODEL_MODULE_MLP, 1), e, f, 1, m, 1, tp);
    bias(c, new_layer(blk, "fc1-bias", MODEL_MODULE_MLP, 0), l, f, 1, m);
    gelu(c, new_layer(blk, "act1", MODEL_MODULE_MLP, 0), (double)(b * l * (f / m)));
    dropout(c, new_layer(blk, "dpr1", MODEL_MODULE_MLP, 0), (double)(b * l * (f / m)));
    linear(c, new_layer(blk, "fc2", MODEL_MODULE_MLP, 1), f, e, m, 1, 1, tp);
    bias(c, new_layer(blk, "fc2-bias", MODEL_MODULE_MLP, 0), l, e, 1, 1);
    dropout(c, new_layer(blk, "dpr2", MODEL_MODULE_MLP, 0), (double)(b * (l / m) * e));
    layernorm(c, new_layer(blk, "ln1", MODEL_MODULE_MLP, 0), l, tp);
}

/* 2D SUMMA GEMMs with context-parallel attention (reference quirk 12.4: execute_2d uses sa_2d_seqp). */
static void block_2d(const ctx_t *c, model_block_t *blk, grp_t g1, grp_t g2) {
    const int64_t l = c->job->model.seq_len, e = c->job->model.hidden, f = c->job->model.ffn_hidden;
    const int64_t m1 = g1.size, m2 = g2.size, b = c->job->par.mbs;
    linear_summa(c, new_layer(blk, "qkv", MODEL_MODULE_SA, 1), e, 3 * e, g1, g2);
    fused_attention(c, new_layer(blk, "fusedla", MODEL_MODULE_SA, 1), g1, g2);
    linear_summa(c, new_layer(blk, "vproj", MODEL_MODULE_SA, 1), e, e, g1, g2);
    bias(c, new_layer(blk, "vproj-bias", MODEL_MODULE_SA, 0), l, e, m2, m1);
    dropout(c, new_layer(blk, "dpr_v", MODEL_MODULE_SA, 0), (double)(b * (l / m2) * (e / m1)));
    layernorm_2d(c, new_layer(blk, "ln2", MODEL_MODULE_SA, 0), g1, g2);
    linear_summa(c, new_layer(blk, "fc1", MODEL_MODULE_MLP, 1), e, f, g1, g2);
    bias(c, new_layer(blk, "fc1-bias", MODEL_MODULE_MLP, 0), l, f, m2, m1);
    gelu(c, new_layer(blk, "act1", MODEL_MODULE_MLP, 0), (double)(b * (l / m2) * (f / m1)));
    dropout(c, new_layer(blk, "dpr1", MODEL_MODULE_MLP, 0), (double)(b * (l / m2) * (f / m1)));
    linear_summa(c, new_layer(blk, "fc2", MODEL_MODULE_MLP, 1), f, e, g1, g2);
    bias(c, new_layer(blk, "fc2-bias", MODEL_MODULE_MLP, 0), l, e, m2, m1);
    dropout(c, new_layer(blk, "dpr2", MODEL_MODULE_MLP, 0), (double)(b * (l / m2) * (e / m1)));
    layernorm_2d(c, new_layer(blk, "ln1", MODEL_MODULE_MLP, 0), g1, g2);
}

/* 1D weights on g1 (Megatron), context parallel on g2, Megatron-SP over g1 inside each slice. */
static void block_2d_seqp(const ctx_t *c, model_block_t *blk, grp_t g1, grp_t g2) {
    const int64_t l = c->job->model.seq_len, e = c->job->model.hidden, f = c->job->model.ffn_hidden;
    const int64_t m1 = g1.size, m2 = g2.size, b = c->job->par.mbs;
    linear(c, new_layer(blk, "qkv", MODEL_MODULE_SA, 1), e, 3 * e, 1, m1, m2, g1);
    fused_attention(c, new_layer(blk, "fusedla", MODEL_MODULE_SA, 1), g1, g2);
    linear(c, new_layer(blk, "vproj", MODEL_MODULE_SA, 1), e, e, m1, 1, m2, g1);
    bias(c, new_layer(blk, "vproj-bias", MODEL_MODULE_SA, 0), l, e, m2, m1);
    dropout(c, new_layer(blk, "dpr_v", MODEL_MODULE_SA, 0), (double)(b * (l / (m1 * m2)) * e));
    layernorm(c, new_layer(blk, "ln2", MODEL_MODULE_SA, 0), l / m2, g1);
    linear(c, new_layer(blk, "fc1", MODEL_MODULE_MLP, 1), e, f, 1, m1, m2, g1);
    bias(c, new_layer(blk, "fc1-bias", MODEL_MODULE_MLP, 0), l, f, m2, m1);
    gelu(c, new_layer(blk, "act1", MODEL_MODULE_MLP, 0), (double)(b * (l / m2) * (f / m1)));
    dropout(c, new_layer(blk, "dpr1", MODEL_MODULE_MLP, 0), (double)(b * (l / m2) * (f / m1)));
    linear(c, new_layer(blk, "fc2", MODEL_MODULE_MLP, 1), f, e, m1, 1, m2, g1);
    bias(c, new_layer(blk, "fc2-bias", MODEL_MODULE_MLP, 0), l / m2, e, m1, 1);
    dropout(c, new_layer(blk, "dpr2", MODEL_MODULE_MLP, 0), (double)(b * (l / (m1 * m2)) * e));
    layernorm(c, new_layer(blk, "ln1", MODEL_MODULE_MLP, 0), l / m2, g1);
}

void model_block_build(const model_job_t *job, model_block_t *blk) {
    const model_system_t *sys = &job->system;
    const ctx_t c = {job, sys->element_gb, sys->mask_element_gb,
                     sys->matrix_tflop_per_s / sys->vector_tflop_per_s};
    const model_parallel_t *p = &job->par;
    const grp_t g1 = {p->strategy == MODEL_STRATEGY_1D ? p->tp : p->tp1, p->nv_tp1, MODEL_GROUP_TP1};
    const grp_t g2 = {p->strategy == MODEL_STRATEGY_1D ? 1 : p->tp2, p->nv_tp2, MODEL_GROUP_TP2};
    blk->n_layers = 0;
    if (p->strategy == MODEL_STRATEGY_1D)
        block_1d(&c, blk, g1);
    else if (p->strategy == MODEL_STRATEGY_2D)
        block_2d(&c, blk, g1, g2);
    else
        block_2d_seqp(&c, blk, g1, g2);

    blk->t_fwd_s = blk->t_bwd_s = blk->flops_tflop = blk->activations_gb = blk->weights_gb = 0.0;
    for (int i = 0; i < blk->n_layers; i++) {
        model_layer_t *ly = &blk->layers[i];
        finish_pass(&c, &ly->fwd, ly->tensor_core, ly->summa_overlap);
        finish_pass(&c, &ly->bwd, ly->tensor_core, ly->summa_overlap);
        blk->t_fwd_s += ly->fwd.time_s;
        blk->t_bwd_s += ly->bwd.time_s;
        blk->flops_tflop += ly->fwd.flops_tflop + ly->bwd.flops_tflop;
        blk->activations_gb += ly->activations_gb;
        blk->weights_gb += ly->weights_gb;
    }
}
