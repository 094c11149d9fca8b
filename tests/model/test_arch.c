/* model/test_arch.c - the architecture fields (docs/model-formulas.md, section 15): the per-layer
 * FLOPs and bytes of a grouped-query-attention + SwiGLU + RMSNorm + rotary block against their
 * closed forms, the weights against the parameter count, the Llama presets' parameter counts
 * against their published totals, tied and untied output layers, the defaults leaving GPT-style
 * models unchanged, and the rules of model_job_check (tp dividing kv_heads, the reference's refusal). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"

#define S 2e-9 /* bytes of one element, GB */

static void assert_rel(double got, double want, double tol) {
    if (!(fabs(got - want) <= tol * fabs(want)))
        fail_msg("got %.17g, want %.17g (relative tolerance %g)", got, want, tol);
}

static const model_layer_t *layer(const model_block_t *b, const char *name) {
    for (int i = 0; i < b->n_layers; i++)
        if (strcmp(b->layers[i].name, name) == 0)
            return &b->layers[i];
    for (int i = 0; i < b->n_edges; i++)
        if (strcmp(b->edges[i].name, name) == 0)
            return &b->edges[i];
    return NULL;
}

/* e 1024, h 16, kv 4 (q 64), f 2816, l 512, V 32000, 4 blocks: SwiGLU, RMSNorm, rotary, untied;
 * H100, 1d, tp 2 with sequence parallelism, mbs 2. */
static model_job_t gqa_job(int64_t tp) {
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_system_preset("H100", &j.system), MODEL_OK);
    j.model = (model_transformer_t){.name = "gqa",
                                    .seq_len = 512,
                                    .hidden = 1024,
                                    .heads = 16,
                                    .layers = 4,
                                    .ffn_hidden = 2816,
                                    .vocab = 32000,
                                    .kv_heads = 4,
                                    .ffn_act = MODEL_FFN_SWIGLU,
                                    .norm = MODEL_NORM_RMSNORM,
                                    .position = MODEL_POSITION_ROTARY,
                                    .untied_embeddings = 1};
    j.gpus = tp;
    j.global_batch = 2;
    j.compat = MODEL_COMPAT_CORRECTED;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, 1, tp, tp, 1, 1, 2, 1, tp, 1, 1, 1};
    return j;
}

static void test_gqa_swiglu_block(void **state) {
    (void)state;
    model_job_t j = gqa_job(2);
    model_estimate_t est;
    assert_int_equal(model_estimate(&j, &est), MODEL_OK);
    const model_block_t *b = &est.block;
    const double bb = 2, l = 512, e = 1024, q = 64;

    /* qkv: e x (h + 2 kv) q over tp 2: 1024 x 768 per rank */
    const model_layer_t *qkv = layer(b, "qkv");
    assert_non_null(qkv);
    const double fl = (16.0 + 2.0 * 4.0) * q / 2.0;
    assert_rel(qkv->fwd.flops_tflop, bb * l * fl * (2.0 * e - 1.0) * 1e-12, 1e-12);
    assert_rel(qkv->fwd.hbm_gb, (bb * l * e + bb * l * fl + e * fl) * S, 1e-12);
    assert_rel(qkv->weights_gb, e * fl * S, 1e-12);

    /* rope on the local Q and K heads (8 + 2): 3 FLOPs, 2 elements of traffic each; nothing kept */
    const model_layer_t *rope = layer(b, "rope");
    assert_non_null(rope);
    const double nr = bb * l * (8.0 + 2.0) * q;
    assert_rel(rope->fwd.flops_tflop, 3.0 * nr * 1e-12, 1e-12);
    assert_rel(rope->bwd.hbm_gb, 2.0 * nr * S, 1e-12);
    assert_true(rope->activations_gb == 0.0 && !rope->tensor_core);

    /* flash attention: 8 query heads and 2 K/V heads per rank */
    const model_layer_t *fa = layer(b, "fusedla");
    const double bh = bb * 8.0, bkv = bb * 2.0;
    assert_rel(fa->fwd.hbm_gb, (bh * l * q + 2.0 * bkv * l * q + bh * l + bh * l * q) * S, 1e-12);
    /* kept: Q, K, V and the statistics; the output O is vproj's kept input (BF16: one tensor) */
    assert_rel(fa->activations_gb, ((bh + 2.0 * bkv) * l * q + 2.0 * bh * l) * S, 1e-12);
    assert_rel(fa->bwd.hbm_gb,
               (2.0 * bkv * l * q + 2.0 * bh * l * q) * S + fa->activations_gb + bh * l * q * S, 1e-12);

    /* fc1: gate and up, e x 2f over tp 2 */
    const model_layer_t *fc1 = layer(b, "fc1");
    assert_rel(fc1->fwd.flops_tflop, bb * l * 2816.0 * (2.0 * e - 1.0) * 1e-12, 1e-12);
    assert_rel(fc1->weights_gb, e * 2816.0 * S, 1e-12);
    /* SwiGLU on b l f/tp outputs: 6 and 11 FLOPs, 3 and 5 elements of traffic, gate and up kept */
    const model_layer_t *act = layer(b, "act1");
    const double m = bb * l * 1408.0;
    assert_rel(act->fwd.flops_tflop, 6.0 * m * 1e-12, 1e-12);
    assert_rel(act->bwd.flops_tflop, 11.0 * m * 1e-12, 1e-12);
    assert_rel(act->fwd.hbm_gb, 3.0 * m * S, 1e-12);
    assert_rel(act->bwd.hbm_gb, 5.0 * m * S, 1e-12);
    assert_rel(act->activations_gb, 2.0 * m * S, 1e-12);
    /* fc2: f x e, rows over tp */
    assert_rel(layer(b, "fc2")->weights_gb, 1408.0 * e * S, 1e-12);

    /* RMSNorm on the sequence shard (l / tp rows): 6n forward, gain only */
    const model_layer_t *ln = layer(b, "ln1");
    const double ll = l / 2.0, n = bb * ll * e;
    assert_rel(ln->fwd.flops_tflop, 6.0 * n * 1e-12, 1e-12);
    assert_rel(ln->fwd.hbm_gb, (2.0 * n + bb * ll + e) * S, 1e-12);
    assert_rel(ln->bwd.flops_tflop, (6.0 * n + 2.0 * bb * ll * (e - 1.0)) * 1e-12, 1e-12);
    assert_rel(ln->bwd.hbm_gb, (5.0 * n + e) * S, 1e-12);
    assert_rel(ln->weights_gb, e * S, 1e-12);
}

/* Attention FLOPs do not depend on kv_heads (every query head attends to its group's K and V). */
static void test_gqa_flops_equal_mha(void **state) {
    (void)state;
    model_job_t g = gqa_job(2), mha = gqa_job(2);
    mha.model.kv_heads = 0;
    model_estimate_t a, c;
    assert_int_equal(model_estimate(&g, &a), MODEL_OK);
    assert_int_equal(model_estimate(&mha, &c), MODEL_OK);
    assert_true(layer(&a.block, "fusedla")->fwd.flops_tflop == layer(&c.block, "fusedla")->fwd.flops_tflop);
    assert_true(layer(&a.block, "fusedla")->fwd.hbm_gb < layer(&c.block, "fusedla")->fwd.hbm_gb);
    assert_true(layer(&a.block, "qkv")->weights_gb < layer(&c.block, "qkv")->weights_gb);
}

/* With tp 1, the embedding and output layer on and one stage, the weights of one GPU are the
 * parameter count plus the linear layers' biases the block table keeps (e + 2f + e per block). */
static void test_weights_match_param_count(void **state) {
    (void)state;
    model_job_t j = gqa_job(1);
    j.training.embedding = 1;
    model_estimate_t est;
    assert_int_equal(model_estimate(&j, &est), MODEL_OK);
    const model_block_t *b = &est.block;
    const double w_gb = b->weights_gb * 4.0 + b->first_weights_gb + b->last_weights_gb;
    const double biases = 4.0 * (1024.0 + 2.0 * 2816.0 + 1024.0);
    assert_rel(w_gb / S, model_param_count(&j.model) + biases, 1e-12);
    /* the closed form by hand: per block Q, K, V, O, three e x f matrices, two RMSNorm gains */
    const double block = 1024.0 * 1024 + 2.0 * 1024 * 256 + 1024.0 * 1024 + 3.0 * 1024 * 2816 + 2.0 * 1024;
    assert_rel(model_param_count(&j.model), 4.0 * block + 2.0 * 32000 * 1024 + 1024, 1e-15);
}

/* Published totals (Hugging Face model cards: safetensors parameter counts). */
static void test_llama_param_counts(void **state) {
    (void)state;
    static const struct {
        const char *preset;
        double published;
    } cases[] = {{"Llama2-7B", 6.74e9}, {"Llama2-13B", 13.0e9}, {"Llama2-70B", 69.0e9},
                 {"Llama3-8B", 8.03e9}, {"Llama3-70B", 70.6e9}, {"Llama3.1-405B", 406e9}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        model_transformer_t m;
        assert_int_equal(model_transformer_preset(cases[i].preset, &m), MODEL_OK);
        assert_rel(model_param_count(&m), cases[i].published, 0.005);
    }
    model_transformer_t m;
    assert_int_equal(model_transformer_preset("Llama3-8B", &m), MODEL_OK);
    assert_true(model_param_count(&m) == 8030261248.0); /* meta-llama/Meta-Llama-3-8B, exactly */
    assert_int_equal(model_transformer_preset("Llama2-7B", &m), MODEL_OK);
    assert_true(model_param_count(&m) == 6738415616.0); /* meta-llama/Llama-2-7b-hf, exactly */
}

/* An explicit kv_heads = heads is the default: the GPT block is the same to the bit. */
static void test_defaults_unchanged(void **state) {
    (void)state;
    model_job_t a;
    memset(&a, 0, sizeof a);
    assert_int_equal(model_transformer_preset("GPT-18B", &a.model), MODEL_OK);
    assert_int_equal(model_system_preset("DGX-A100", &a.system), MODEL_OK);
    a.gpus = 16;
    a.global_batch = 16;
    a.par = (model_parallel_t){MODEL_STRATEGY_1D, 2, 8, 8, 1, 1, 1, 1, 8, 1, 1, 1};
    a.training.embedding = 1;
    a.training.recompute = MODEL_RECOMPUTE_SELECTIVE;
    model_job_t b = a;
    b.model.kv_heads = b.model.heads;
    assert_true(model_arch_is_default(&a.model) && model_arch_is_default(&b.model));
    model_estimate_t ea, eb;
    assert_int_equal(model_estimate(&a, &ea), MODEL_OK);
    assert_int_equal(model_estimate(&b, &eb), MODEL_OK);
    assert_int_equal(ea.block.n_layers, eb.block.n_layers);
    assert_null(layer(&ea.block, "rope"));
    for (int i = 0; i < ea.block.n_layers; i++) {
        assert_true(ea.block.layers[i].fwd.time_s == eb.block.layers[i].fwd.time_s);
        assert_true(ea.block.layers[i].bwd.hbm_gb == eb.block.layers[i].bwd.hbm_gb);
        assert_true(ea.block.layers[i].activations_gb == eb.block.layers[i].activations_gb);
    }
    assert_true(ea.summary.iteration_time_s == eb.summary.iteration_time_s);
    assert_true(ea.summary.memory_gb == eb.summary.memory_gb);
}

/* Untied: the output layer keeps its own matrix with one stage, and no gradient is shared between
 * the first and the last stage with several. */
static void test_untied(void **state) {
    (void)state;
    model_job_t j = gqa_job(1);
    j.training.embedding = 1;
    model_estimate_t untied, tied;
    assert_int_equal(model_estimate(&j, &untied), MODEL_OK);
    j.model.untied_embeddings = 0;
    assert_int_equal(model_estimate(&j, &tied), MODEL_OK);
    assert_true(layer(&tied.block, "logits")->weights_gb == 0.0);
    assert_rel(layer(&untied.block, "logits")->weights_gb, 32000.0 * 1024 * S, 1e-12);
    /* rotary: no position table */
    assert_rel(layer(&untied.block, "embedding")->weights_gb, 32000.0 * 1024 * S, 1e-12);

    j = gqa_job(1);
    j.training.embedding = 1;
    j.gpus = 2;
    j.par.pp = 2;
    assert_int_equal(model_estimate(&j, &untied), MODEL_OK);
    assert_true(untied.summary.embedding_sync_s == 0.0);
    j.model.untied_embeddings = 0;
    assert_int_equal(model_estimate(&j, &tied), MODEL_OK);
    assert_true(tied.summary.embedding_sync_s > 0.0);
}

static void test_checks(void **state) {
    (void)state;
    model_issue_t is;
    /* Megatron-Core: tp divides the K/V heads */
    model_job_t j = gqa_job(8);
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "parallel.tp");
    assert_non_null(strstr(is.allowed, "kv_heads (4)"));
    j = gqa_job(4);
    assert_int_equal(model_job_check(&j, &is), MODEL_OK);
    j.model.kv_heads = 3;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "model.kv_heads");
    /* the reference has GPT's architecture only: the first non-default field is named */
    j = gqa_job(2);
    j.compat = MODEL_COMPAT_REFERENCE;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "model.kv_heads");
    j.model.kv_heads = 0;
    j.model.ffn_act = MODEL_FFN_GELU;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "model.norm");
    assert_string_equal(is.value, "rmsnorm");
    j.model.norm = MODEL_NORM_LAYERNORM;
    j.model.position = MODEL_POSITION_LEARNED;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "model.tied_embeddings");
    j.model.untied_embeddings = 0;
    assert_int_equal(model_job_check(&j, &is), MODEL_OK);
}

/* The search keeps to layouts whose tensor degree divides kv_heads. */
static void test_search_kv_rule(void **state) {
    (void)state;
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("Llama3-8B", &j.model), MODEL_OK);
    j.model.kv_heads = 2;
    assert_int_equal(model_system_preset("H100", &j.system), MODEL_OK);
    j.gpus = 64;
    j.global_batch = 64;
    model_search_result_t res;
    assert_int_equal(model_search_run(&j, 1u << MODEL_STRATEGY_1D, 100, &res), MODEL_OK);
    assert_true(res.n_results > 0);
    for (int i = 0; i < res.n_results; i++)
        assert_true(2 % res.results[i].par.tp == 0);
    model_search_result_destroy(&res);
}

static void test_names(void **state) {
    (void)state;
    model_ffn_act_t a;
    model_norm_t n;
    model_position_t p;
    assert_int_equal(model_ffn_act_parse("swiglu", &a), MODEL_OK);
    assert_string_equal(model_ffn_act_name(a), "swiglu");
    assert_int_equal(model_ffn_act_parse("silu", &a), MODEL_EINVAL);
    assert_int_equal(model_norm_parse("rmsnorm", &n), MODEL_OK);
    assert_string_equal(model_norm_name(n), "rmsnorm");
    assert_int_equal(model_position_parse("rotary", &p), MODEL_OK);
    assert_string_equal(model_position_name(p), "rotary");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gqa_swiglu_block),
        cmocka_unit_test(test_gqa_flops_equal_mha),
        cmocka_unit_test(test_weights_match_param_count),
        cmocka_unit_test(test_llama_param_counts),
        cmocka_unit_test(test_defaults_unchanged),
        cmocka_unit_test(test_untied),
        cmocka_unit_test(test_checks),
        cmocka_unit_test(test_search_kv_rule),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
