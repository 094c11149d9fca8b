/* model/test_training.c - the corrected model's training options (model_training_t): each feature
 * against its closed form (recomputation, sequence parallelism off, materialised attention, the
 * embedding and output layer, the optimizer step, interleaving, the data-parallel all-reduce), the
 * breakdown identity, and that the reference ignores every option. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"

#define HBM_EFF 0.9    /* MODEL_I_HBM_EFFICIENCY */
#define OPT_BYTES 52.0 /* OPTIMIZER_BYTES_PER_PARAM */

static void assert_close(double got, double want, double rel) {
    if (!(fabs(got - want) <= rel * fmax(fabs(want), 1e-300)))
        fail_msg("got %.17g, want %.17g (rel %g)", got, want, rel);
}

/* GPT-145B of Narayanan et al. 2021 on DGX-A100: tp 8, pp 8, dp 24, mbs 1, 1d. */
static model_job_t megatron_job(model_compat_t compat) {
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("GPT-145B", &j.model), MODEL_OK);
    assert_int_equal(model_system_preset("DGX-A100", &j.system), MODEL_OK);
    j.gpus = 1536;
    j.global_batch = 2304;
    j.compat = compat;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, 24, 8, 8, 1, 8, 1, 1, 8, 1, 1, 1};
    return j;
}

static void estimate(const model_job_t *j, model_estimate_t *e) {
    model_issue_t is;
    if (model_job_check(j, &is) != MODEL_OK)
        fail_msg("job rejected: %s = %s: %s", is.field, is.value, is.allowed);
    assert_int_equal(model_estimate(j, e), MODEL_OK);
}

static const model_layer_t *layer(const model_block_t *b, const char *name) {
    for (int i = 0; i < b->n_layers; i++)
        if (strcmp(b->layers[i].name, name) == 0)
            return &b->layers[i];
    for (int i = 0; i < b->n_edges; i++)
        if (strcmp(b->edges[i].name, name) == 0)
            return &b->edges[i];
    fail_msg("no layer %s", name);
    return NULL;
}

static void assert_identity(const model_summary_t *s) {
    assert_close(s->compute_s + s->memory_s + s->tp_comm_s + s->pp_comm_s + s->dp_comm_s + s->bubble_s,
                 s->iteration_time_s, 1e-12);
}

/* Full recomputation adds exactly the forward pass to the backward; the block keeps its input. */
static void test_full_recompute(void **state) {
    (void)state;
    model_job_t j = megatron_job(MODEL_COMPAT_CORRECTED);
    static model_estimate_t none, full;
    estimate(&j, &none);
    j.training.recompute = MODEL_RECOMPUTE_FULL;
    estimate(&j, &full);
    assert_close(full.block.t_fwd_s, none.block.t_fwd_s, 1e-15);
    assert_close(full.block.t_bwd_s, none.block.t_bwd_s + none.block.t_fwd_s, 1e-12);
    for (int i = 0; i < none.block.n_layers; i++) {
        const model_layer_t *a = &none.block.layers[i], *b = &full.block.layers[i];
        assert_close(b->bwd.time_s, a->bwd.time_s + a->fwd.time_s, 1e-12);
        assert_close(b->bwd.flops_tflop, a->bwd.flops_tflop + a->fwd.flops_tflop, 1e-12);
        assert_int_equal(b->bwd.n_colls, a->bwd.n_colls + a->fwd.n_colls);
        assert_close(b->bwd.comp_s + b->bwd.mem_exposed_s + b->bwd.comm_s, b->bwd.time_s, 1e-12);
    }
    /* the block input with sequence parallelism: b (l/tp) e elements of 2 bytes */
    const double input_gb = 1.0 * (2048.0 / 8.0) * 12288.0 * 2e-9;
    assert_close(full.block.checkpoint_gb, input_gb, 1e-12);
    /* activations: min(pp, nmb) in flight x D/pp block inputs, plus one block's working set */
    const double n_l = 80.0 / 8.0;
    assert_close(full.summary.activations_gb, 8.0 * n_l * input_gb + none.block.activations_gb, 1e-12);
    assert_close(none.summary.activations_gb, 8.0 * n_l * none.block.activations_gb, 1e-12);
    assert_identity(&full.summary);
}

/* Selective: the attention core is recomputed and its 5 a s^2 b / t bytes are not kept
 * (Korthikanti et al. 2022, with materialised attention). */
static void test_selective_recompute(void **state) {
    (void)state;
    model_job_t j = megatron_job(MODEL_COMPAT_CORRECTED);
    j.training.attention = MODEL_ATTENTION_MATERIALIZED;
    static model_estimate_t none, sel;
    estimate(&j, &none);
    j.training.recompute = MODEL_RECOMPUTE_SELECTIVE;
    estimate(&j, &sel);
    static const char *const core[] = {"attn-qk", "softmax", "attn-dropout", "attn-av"};
    double core_fwd_s = 0.0;
    for (size_t i = 0; i < 4; i++)
        core_fwd_s += layer(&none.block, core[i])->fwd.time_s;
    assert_close(sel.block.t_bwd_s, none.block.t_bwd_s + core_fwd_s, 1e-12);
    assert_close(layer(&sel.block, "qkv")->bwd.time_s, layer(&none.block, "qkv")->bwd.time_s, 1e-15);
    const double a_over_t = 96.0 / 8.0, s = 2048.0;
    assert_close(none.block.activations_gb - sel.block.activations_gb, 5.0 * a_over_t * s * s * 1e-9, 1e-9);
}

/* Materialised attention: four layers, the scores written and read in HBM. */
static void test_materialized_attention(void **state) {
    (void)state;
    model_job_t j = megatron_job(MODEL_COMPAT_CORRECTED);
    static model_estimate_t flash, mat;
    estimate(&j, &flash);
    j.training.attention = MODEL_ATTENTION_MATERIALIZED;
    estimate(&j, &mat);
    assert_int_equal(flash.block.n_layers, 14);
    assert_int_equal(mat.block.n_layers, 17);
    const double n = 12.0 * 2048.0 * 2048.0; /* b (a/t) l l scores */
    const model_layer_t *sm = layer(&mat.block, "softmax");
    assert_false(sm->tensor_core);
    assert_close(sm->fwd.hbm_gb, 2.0 * n * 2e-9, 1e-12);
    assert_close(sm->bwd.hbm_gb, 3.0 * n * 2e-9, 1e-12);
    assert_close(sm->fwd.mem_s, sm->fwd.hbm_gb / (HBM_EFF * 2039.0), 1e-12);
    /* Q K^T and P V FLOPs equal flash attention's GEMM FLOPs of the forward */
    const double q = 128.0, l = 2048.0;
    assert_close(layer(&mat.block, "attn-qk")->fwd.flops_tflop, 12.0 * l * l * (2.0 * q - 1.0) * 1e-12,
                 1e-12);
    assert_close(layer(&mat.block, "attn-av")->fwd.flops_tflop, 12.0 * l * q * (2.0 * l - 1.0) * 1e-12,
                 1e-12);
    assert_true(mat.block.t_fwd_s > flash.block.t_fwd_s);
}

/* Bytes a collective moves per rank per byte of its buffer, up to the common (n-1)/n. */
static double bus_units(const model_coll_t *c) {
    return c->op == MODEL_COLL_ALLREDUCE ? 2.0 * c->volume_gb : c->volume_gb;
}

/* Sequence parallelism off: each AG/RS pair of the same buffer becomes one all-reduce; LayerNorm
 * and dropout run on the whole sequence. */
static void test_sequence_parallel_off(void **state) {
    (void)state;
    model_job_t j = megatron_job(MODEL_COMPAT_CORRECTED);
    static model_estimate_t on, off;
    estimate(&j, &on);
    j.training.sequence_parallel = MODEL_SEQPAR_OFF;
    estimate(&j, &off);
    double bus_on = 0.0, bus_off = 0.0;
    int ar_off = 0, rsag_on = 0, other = 0;
    for (int i = 0; i < on.block.n_layers; i++) {
        const model_pass_t *p_on[2] = {&on.block.layers[i].fwd, &on.block.layers[i].bwd};
        const model_pass_t *p_off[2] = {&off.block.layers[i].fwd, &off.block.layers[i].bwd};
        for (int k = 0; k < 2; k++) {
            for (int c = 0; c < p_on[k]->n_colls; c++) {
                bus_on += bus_units(&p_on[k]->colls[c]);
                rsag_on += p_on[k]->colls[c].op == MODEL_COLL_ALLGATHER ||
                           p_on[k]->colls[c].op == MODEL_COLL_REDUCESCATTER;
            }
            for (int c = 0; c < p_off[k]->n_colls; c++) {
                bus_off += bus_units(&p_off[k]->colls[c]);
                ar_off += p_off[k]->colls[c].op == MODEL_COLL_ALLREDUCE;
                other += p_off[k]->colls[c].op != MODEL_COLL_ALLREDUCE;
            }
        }
    }
    assert_int_equal(rsag_on, 8); /* 4 per pass */
    assert_int_equal(ar_off, 4);  /* 2 per pass */
    assert_int_equal(other, 0);
    assert_close(bus_off, bus_on, 1e-12);
    const double full = 2048.0 * 12288.0;
    assert_close(layer(&off.block, "ln1")->activations_gb, full * 2e-9, 1e-12);
    assert_close(layer(&on.block, "ln1")->activations_gb, full / 8.0 * 2e-9, 1e-12);
    assert_close(layer(&off.block, "dpr2")->activations_gb, full * 1e-9, 1e-12);
    /* GEMMs are unchanged */
    assert_close(layer(&off.block, "fc1")->fwd.comp_s, layer(&on.block, "fc1")->fwd.comp_s, 1e-15);
    /* the pipeline sends 1/tp of the replicated output and all-gathers it (scatter/gather) */
    assert_close(off.summary.p2p_volume_gb, full / 8.0 * 2e-9, 1e-12);
    assert_true(off.summary.p2p_one_s > on.summary.p2p_one_s);
}

/* Interleaving: v virtual stages divide the bubble's block time by v and multiply the p2p by v. */
static void test_interleave(void **state) {
    (void)state;
    model_job_t j = megatron_job(MODEL_COMPAT_CORRECTED);
    j.training.optimizer_step = 1; /* any option: the per-stage assembly */
    static model_estimate_t one, five;
    estimate(&j, &one);
    j.training.interleave = 5;
    estimate(&j, &five);
    const model_summary_t *a = &one.summary, *b = &five.summary;
    const double blocks_s = (one.block.t_fwd_s + one.block.t_bwd_s) * 10.0;
    assert_close(a->bubble_s, 7.0 * (blocks_s + 2.0 * a->p2p_one_s), 1e-12);
    assert_close(b->bubble_s, 7.0 * (blocks_s / 5.0 + 2.0 * b->p2p_one_s), 1e-12);
    assert_close(b->pp_comm_s, 5.0 * a->pp_comm_s, 1e-12);
    assert_int_equal(b->interleave, 5);
    assert_close(b->compute_s, a->compute_s, 1e-15);
    /* Korthikanti et al.: the first stage holds 1 + (pp-1)/(pp v) times the 1F1B activations */
    assert_close(b->activations_gb, a->activations_gb * (1.0 + 7.0 / 40.0), 1e-12);
    assert_identity(b);
    /* Megatron's conditions */
    model_issue_t is;
    j.training.interleave = 3; /* does not divide the 10 layers per stage */
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "training.interleave");
    j.training.interleave = 2;
    j.par.mbs = 3; /* 96 / 3 = 32 microbatches: a multiple of pp 8, fine */
    assert_int_equal(model_job_check(&j, NULL), MODEL_OK);
    j.par.mbs = 2;            /* 48: fine */
    j.global_batch = 24 * 12; /* 12 per replica, 6 microbatches: not a multiple of pp */
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "training.interleave");
}

/* With only the optimizer step the per-stage assembly gives the original iteration plus the step. */
static void test_optimizer_step(void **state) {
    (void)state;
    model_job_t j = megatron_job(MODEL_COMPAT_CORRECTED);
    static model_estimate_t base, opt;
    estimate(&j, &base);
    j.training.optimizer_step = 1;
    estimate(&j, &opt);
    const double params = base.summary.weights_gb / 2e-9 / 24.0; /* ZeRO-1: states sharded over dp */
    assert_close(opt.summary.optimizer_s, params * OPT_BYTES * 1e-9 / (HBM_EFF * 2039.0), 1e-12);
    assert_close(opt.summary.iteration_time_s - opt.summary.optimizer_s, base.summary.iteration_time_s,
                 1e-12);
    assert_close(opt.summary.bubble_s, base.summary.bubble_s, 1e-12);
    assert_close(opt.summary.dp_comm_s, base.summary.dp_comm_s, 1e-12);
    /* replicated states (Megatron's all-reduce): every local parameter */
    j.training.dp_comm = MODEL_DP_ALLREDUCE;
    estimate(&j, &opt);
    assert_close(opt.summary.optimizer_s, params * 24.0 * OPT_BYTES * 1e-9 / (HBM_EFF * 2039.0), 1e-12);
    assert_close(opt.summary.optimizer_gb, 6.0 * opt.summary.weights_gb, 1e-12);
}

/* Data parallelism as Megatron 2021: one exposed all-reduce of the stage's gradients. */
static void test_dp_allreduce(void **state) {
    (void)state;
    model_job_t j = megatron_job(MODEL_COMPAT_CORRECTED);
    j.training.dp_comm = MODEL_DP_ALLREDUCE;
    static model_estimate_t e, o;
    estimate(&j, &e);
    const double want = model_collective_time_s(&j.system, MODEL_COMPAT_CORRECTED, MODEL_COLL_ALLREDUCE,
                                                e.summary.weights_gb, 24, 1);
    assert_close(e.summary.dp_allreduce_s, want, 1e-15);
    assert_close(e.summary.dp_comm_s, want, 1e-15);
    j.training.dp_comm = MODEL_DP_ALLREDUCE_OVERLAP;
    estimate(&j, &o);
    assert_close(o.summary.dp_comm_s, fmax(want - 10.0 * o.block.t_bwd_s, want / 10.0), 1e-12);
    assert_true(o.summary.dp_comm_s < e.summary.dp_comm_s);
}

/* The embedding and output layer: vocab-parallel GEMM on the last stage, the slowest one. */
static void test_embedding(void **state) {
    (void)state;
    model_job_t j = megatron_job(MODEL_COMPAT_CORRECTED);
    j.training.embedding = 1;
    static model_estimate_t e, base;
    estimate(&j, &e);
    j.training.embedding = 0;
    j.training.optimizer_step = 1;
    estimate(&j, &base);
    const model_summary_t *s = &e.summary;
    const double b = 1.0, l = 2048.0, h = 12288.0, v_local = 51200.0 / 8.0;
    const model_layer_t *logits = layer(&e.block, "logits");
    assert_close(logits->fwd.flops_tflop, b * l * v_local * (2.0 * h - 1.0) * 1e-12, 1e-12);
    assert_close(logits->weights_gb, v_local * h * 2e-9, 1e-12);
    assert_close(layer(&e.block, "embedding")->weights_gb, (v_local * h + l * h) * 2e-9, 1e-12);
    assert_int_equal(layer(&e.block, "embedding")->fwd.colls[0].op, MODEL_COLL_REDUCESCATTER);
    assert_int_equal(s->slowest_stage, 1);
    const double nmb = 96.0;
    const double last_s = (e.block.t_fwd_s + e.block.t_bwd_s) * 10.0 + e.block.last_t_fwd_s +
                          e.block.last_t_bwd_s + 2.0 * s->p2p_one_s;
    assert_close(s->stage_fwd_bwd_s[1], last_s, 1e-12);
    /* the work is nmb x the last stage; the bubble is the sum of the other stages */
    const double first_s = s->stage_fwd_bwd_s[0],
                 middle_s = (e.block.t_fwd_s + e.block.t_bwd_s) * 10.0 + 2.0 * s->p2p_one_s;
    assert_close(s->bubble_s, first_s + 6.0 * middle_s, 1e-12);
    assert_close(s->compute_s + s->memory_s + s->tp_comm_s + s->pp_comm_s, nmb * last_s, 1e-12);
    assert_true(s->embedding_sync_s > 0.0);
    assert_identity(s);
    assert_true(s->iteration_time_s > base.summary.iteration_time_s - base.summary.optimizer_s);
    /* Megatron pads the vocabulary to a multiple of 128 x tp: 50257 -> 6400 rows per rank at tp 8 */
    j.model.vocab = 50257;
    j.training.embedding = 1;
    estimate(&j, &e);
    assert_close(layer(&e.block, "logits")->weights_gb, 6400.0 * h * 2e-9, 1e-12);
    /* one stage: the output GEMM shares the embedding's matrix */
    j.par.pp = 1;
    j.par.dp = 192;
    j.global_batch = 192 * 4;
    estimate(&j, &e);
    assert_close(layer(&e.block, "logits")->weights_gb, 0.0, 0.0);
    assert_close(e.summary.embedding_sync_s, 0.0, 0.0);
    assert_identity(&e.summary);
}

/* Unfused gradient accumulation: one add per microbatch over the block's weight gradients (read
 * both, write one), as a vector kernel in the backward; the edge layers add theirs too. */
static void test_grad_accumulation(void **state) {
    (void)state;
    model_job_t j = megatron_job(MODEL_COMPAT_CORRECTED);
    j.training.embedding = 1;
    static model_estimate_t fused, add;
    estimate(&j, &fused);
    j.training.grad_accumulation = MODEL_GRAD_ACCUM_ADD;
    estimate(&j, &add);
    assert_int_equal(add.block.n_layers, fused.block.n_layers + 1);
    const model_layer_t *g = layer(&add.block, "wgrad-add");
    assert_close(g->bwd.hbm_gb, 3.0 * fused.block.weights_gb, 1e-12);
    assert_close(g->bwd.time_s,
                 fmax(20e-6 + g->bwd.flops_tflop / (0.8 * 78.0), g->bwd.hbm_gb / (HBM_EFF * 2039.0)), 1e-12);
    assert_close(g->weights_gb, 0.0, 0.0);
    assert_close(add.block.t_bwd_s, fused.block.t_bwd_s + g->bwd.time_s, 1e-12);
    assert_close(add.block.output_gb, fused.block.output_gb, 0.0);
    assert_close(add.summary.p2p_one_s, fused.summary.p2p_one_s, 0.0);
    const model_layer_t *lf = layer(&fused.block, "logits"), *la = layer(&add.block, "logits");
    assert_close(la->bwd.hbm_gb, lf->bwd.hbm_gb + 3.0 * lf->weights_gb, 1e-12);
    assert_identity(&add.summary);
}

/* The reference ignores every training option, bit for bit. */
static void test_reference_ignores_training(void **state) {
    (void)state;
    model_job_t j = megatron_job(MODEL_COMPAT_REFERENCE);
    static model_estimate_t plain, opts;
    estimate(&j, &plain);
    j.training = (model_training_t){MODEL_RECOMPUTE_FULL,
                                    MODEL_SEQPAR_OFF,
                                    MODEL_ATTENTION_MATERIALIZED,
                                    MODEL_DP_ALLREDUCE,
                                    1,
                                    1,
                                    5,
                                    MODEL_GRAD_ACCUM_ADD,
                                    MODEL_PRECISION_FP8,
                                    1,
                                    MODEL_CP_RING,
                                    0,
                                    MODEL_PIPELINE_1F1B,
                                    1};
    j.model.vocab = 0; /* not even checked */
    estimate(&j, &opts);
    assert_true(plain.summary.iteration_time_s == opts.summary.iteration_time_s);
    assert_true(plain.summary.memory_gb == opts.summary.memory_gb);
    assert_true(plain.block.t_bwd_s == opts.block.t_bwd_s);
    assert_int_equal(opts.block.n_layers, 14); /* no split attention, no wgrad-add */
    assert_int_equal(opts.block.n_edges, 0);
    assert_int_equal(opts.summary.interleave, 1);
}

/* A corrected job without options takes the original code path; the per-stage assembly agrees with
 * it when every stage is equal (checked through the optimizer test above) and the search accepts
 * training options, skipping candidates that break their rules. */
static void test_search_with_training(void **state) {
    (void)state;
    model_job_t j = megatron_job(MODEL_COMPAT_CORRECTED);
    j.gpus = 64;
    j.global_batch = 64;
    j.training.recompute = MODEL_RECOMPUTE_FULL;
    j.training.interleave = 2;
    j.training.embedding = 1;
    model_search_result_t r;
    assert_int_equal(model_search_run(&j, 1u << MODEL_STRATEGY_1D, 5, &r), MODEL_OK);
    assert_true(r.n_results > 0);
    for (int i = 0; i < r.n_results; i++) {
        const model_parallel_t *p = &r.results[i].par;
        assert_true(p->pp > 1 && (80 / p->pp) % 2 == 0);
        assert_int_equal(r.results[i].interleave, 2);
    }
    model_search_result_destroy(&r);
}

static void test_training_checks(void **state) {
    (void)state;
    model_issue_t is;
    model_job_t j = megatron_job(MODEL_COMPAT_CORRECTED);
    j.training.embedding = 1;
    j.model.vocab = 0;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "model.vocab");
    j = megatron_job(MODEL_COMPAT_CORRECTED);
    j.training.recompute = (model_recompute_t)7;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "training.recompute");
    j = megatron_job(MODEL_COMPAT_CORRECTED);
    j.par = (model_parallel_t){MODEL_STRATEGY_2D_SEQP, 24, 8, 4, 2, 8, 1, 1, 4, 2, 1, 1};
    j.training.sequence_parallel = MODEL_SEQPAR_OFF;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "training.sequence_parallel");
    j = megatron_job(MODEL_COMPAT_CORRECTED);
    j.training.interleave = -1;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    j.par.pp = 1;
    j.par.dp = 192;
    j.training.interleave = 2;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "training.interleave");
    model_recompute_t r;
    model_attention_t a;
    model_dp_comm_t d;
    assert_int_equal(model_recompute_parse("selective", &r), MODEL_OK);
    assert_int_equal(r, MODEL_RECOMPUTE_SELECTIVE);
    assert_int_equal(model_recompute_parse("partial", &r), MODEL_EINVAL);
    assert_int_equal(model_attention_parse("materialized", &a), MODEL_OK);
    assert_int_equal(model_dp_comm_parse("allreduce-overlap", &d), MODEL_OK);
    assert_string_equal(model_dp_comm_name(d), "allreduce-overlap");
    assert_string_equal(model_recompute_name(MODEL_RECOMPUTE_FULL), "full");
    assert_string_equal(model_attention_name(MODEL_ATTENTION_FLASH), "flash");
    model_grad_accum_t g;
    assert_int_equal(model_grad_accum_parse("add", &g), MODEL_OK);
    assert_string_equal(model_grad_accum_name(g), "add");
}

/* Every option together: 2d-seqp with the edges, the identity, and memory that includes the logits. */
static void test_all_options_2d_seqp(void **state) {
    (void)state;
    model_job_t j = megatron_job(MODEL_COMPAT_CORRECTED);
    j.par = (model_parallel_t){MODEL_STRATEGY_2D_SEQP, 24, 8, 4, 2, 8, 1, 1, 4, 2, 1, 1};
    j.training = (model_training_t){MODEL_RECOMPUTE_SELECTIVE,
                                    MODEL_SEQPAR_ON,
                                    MODEL_ATTENTION_MATERIALIZED,
                                    MODEL_DP_ALLREDUCE,
                                    1,
                                    1,
                                    2,
                                    MODEL_GRAD_ACCUM_ADD,
                                    MODEL_PRECISION_BF16,
                                    1,
                                    MODEL_CP_RING,
                                    0,
                                    MODEL_PIPELINE_1F1B,
                                    0};
    static model_estimate_t e;
    estimate(&j, &e);
    assert_identity(&e.summary);
    assert_int_equal(e.block.n_edges, 4);
    assert_true(e.summary.memory_gb > 0.0 && e.summary.optimizer_s > 0.0);
    /* the output layer's collectives run over the whole tensor group */
    const model_layer_t *ln = layer(&e.block, "final-ln");
    assert_int_equal(ln->fwd.colls[0].group, MODEL_GROUP_TP);
    assert_int_equal(ln->fwd.colls[0].group_size, 8);
    assert_int_equal(ln->fwd.colls[0].per_domain, 8);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_recompute),
        cmocka_unit_test(test_selective_recompute),
        cmocka_unit_test(test_materialized_attention),
        cmocka_unit_test(test_sequence_parallel_off),
        cmocka_unit_test(test_interleave),
        cmocka_unit_test(test_optimizer_step),
        cmocka_unit_test(test_dp_allreduce),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_grad_accumulation),
        cmocka_unit_test(test_reference_ignores_training),
        cmocka_unit_test(test_search_with_training),
        cmocka_unit_test(test_training_checks),
        cmocka_unit_test(test_all_options_2d_seqp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
