/* model/test_activations.c - the corrected model's activation memory against Korthikanti et al. 2022
 * ("Reducing Activation Recomputation in Large Transformer Models", arXiv 2205.05198, section 4 and
 * Table 2): bytes kept per transformer layer for s b h with a heads and tensor degree t, 2-byte
 * activations and 1-byte dropout masks. GPT-3 175B as in the paper's runs: s 2048, h 12288, a 96,
 * 96 layers, t 8, p 8, microbatch 1. Every division is exact, so the checks are to rounding. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"

#define SEQ 2048.0
#define HID 12288.0
#define HEADS 96.0
#define LAYERS 96.0
#define TP 8.0
#define SBH (SEQ * 1.0 * HID) /* s b h with b = 1 */

static void assert_close(double got, double want, double rel) {
    if (!(fabs(got - want) <= rel * fmax(fabs(want), 1e-300)))
        fail_msg("got %.17g, want %.17g (rel %g)", got, want, rel);
}

/* GPT-3 175B on DGX-A100, 1d, tp 8, pp 8, dp 1, mbs 1, global batch 64 (64 microbatches). */
static model_job_t gpt175b(model_recompute_t rc, model_attention_t attn, model_seqpar_t sp) {
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("gpt3", &j.model), MODEL_OK);
    assert_int_equal(model_system_preset("DGX-A100", &j.system), MODEL_OK);
    j.gpus = 64;
    j.global_batch = 64;
    j.compat = MODEL_COMPAT_CORRECTED;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, 1, 8, 8, 1, 8, 1, 1, 8, 1, 1, 1};
    j.training.recompute = rc;
    j.training.attention = attn;
    j.training.sequence_parallel = sp;
    return j;
}

static void estimate(const model_job_t *j, model_estimate_t *e) {
    model_issue_t is;
    if (model_job_check(j, &is) != MODEL_OK)
        fail_msg("job rejected: %s = %s: %s", is.field, is.value, is.allowed);
    assert_int_equal(model_estimate(j, e), MODEL_OK);
}

/* Bytes per layer -> GB. */
static double gb(double bytes) {
    return bytes * 1e-9;
}

/* Selective recomputation with sequence parallelism: s b h 34 / t (Table 2), flash or materialised. */
static void test_selective_sequence_parallel(void **state) {
    (void)state;
    static model_estimate_t e;
    const model_attention_t attn[] = {MODEL_ATTENTION_FLASH, MODEL_ATTENTION_MATERIALIZED};
    for (size_t i = 0; i < 2; i++) {
        model_job_t j = gpt175b(MODEL_RECOMPUTE_SELECTIVE, attn[i], MODEL_SEQPAR_ON);
        estimate(&j, &e);
        assert_close(e.block.activations_gb, gb(SBH * 34.0 / TP), 1e-12);
    }
}

/* No recomputation, sequence parallelism, materialised attention: s b h (34/t + 5 a s / (h t)). */
static void test_none_sequence_parallel(void **state) {
    (void)state;
    static model_estimate_t e;
    model_job_t j = gpt175b(MODEL_RECOMPUTE_NONE, MODEL_ATTENTION_MATERIALIZED, MODEL_SEQPAR_ON);
    estimate(&j, &e);
    assert_close(e.block.activations_gb, gb(SBH * (34.0 / TP + 5.0 * HEADS * SEQ / (HID * TP))), 1e-12);
    /* flash attention keeps no scores, only its two softmax statistics per row (2 x 2 bytes) */
    j.training.attention = MODEL_ATTENTION_FLASH;
    estimate(&j, &e);
    assert_close(e.block.activations_gb, gb(SBH * 34.0 / TP + 4.0 * HEADS / TP * SEQ), 1e-12);
}

/* Tensor parallelism without sequence parallelism: s b h (10 + 24/t) selective, and
 * s b h (10 + 24/t + 5 a s / (h t)) without recomputation (Table 2). */
static void test_tensor_parallel_only(void **state) {
    (void)state;
    static model_estimate_t e;
    model_job_t j = gpt175b(MODEL_RECOMPUTE_SELECTIVE, MODEL_ATTENTION_MATERIALIZED, MODEL_SEQPAR_OFF);
    estimate(&j, &e);
    assert_close(e.block.activations_gb, gb(SBH * (10.0 + 24.0 / TP)), 1e-12);
    j.training.recompute = MODEL_RECOMPUTE_NONE;
    estimate(&j, &e);
    assert_close(e.block.activations_gb, gb(SBH * (10.0 + 24.0 / TP + 5.0 * HEADS * SEQ / (HID * TP))),
                 1e-12);
}

/* The first pipeline stage: 1F1B keeps pp microbatches of L/pp layers, L layers in all (the paper's
 * s b h L 34 / t); interleaving with v chunks multiplies it by 1 + (pp-1)/(pp v). */
static void test_pipeline_stage(void **state) {
    (void)state;
    static model_estimate_t e;
    model_job_t j = gpt175b(MODEL_RECOMPUTE_SELECTIVE, MODEL_ATTENTION_FLASH, MODEL_SEQPAR_ON);
    estimate(&j, &e);
    const double one_f_one_b = gb(SBH * LAYERS * 34.0 / TP);
    assert_close(e.summary.activations_gb, one_f_one_b, 1e-12);
    j.training.interleave = 3;
    estimate(&j, &e);
    assert_close(e.summary.activations_gb, one_f_one_b * (1.0 + 7.0 / (8.0 * 3.0)), 1e-12);
}

/* What a layer keeps changes none of its work: per layer the corrected block (1d, no options) has the
 * reference's FLOPs (flash attention's less the causal mask's skipped half) and HBM traffic, while qkv and
 * fc1 keep 1/t of the reference's kept input (the sequence-parallel shard instead of the gathered input,
 * quirk 11). */
static void test_reference_keeps_gathered_input(void **state) {
    (void)state;
    static model_estimate_t c, r;
    model_job_t j = gpt175b(MODEL_RECOMPUTE_NONE, MODEL_ATTENTION_FLASH, MODEL_SEQPAR_ON);
    estimate(&j, &c);
    j.compat = MODEL_COMPAT_REFERENCE;
    memset(&j.training, 0, sizeof j.training);
    estimate(&j, &r);
    assert_int_equal(c.block.n_layers, r.block.n_layers);
    for (int i = 0; i < c.block.n_layers; i++) {
        const model_layer_t *a = &c.block.layers[i], *b = &r.block.layers[i];
        /* flash attention under the causal mask skips the blocks above the diagonal: (l + 1) / 2l */
        const double l = (double)j.model.seq_len;
        const double share = strcmp(a->name, "fusedla") == 0 ? (l + 1.0) / (2.0 * l) : 1.0;
        assert_close(a->fwd.flops_tflop, share * b->fwd.flops_tflop, 1e-15);
        assert_close(a->bwd.flops_tflop, share * b->bwd.flops_tflop, 1e-15);
        assert_close(a->fwd.hbm_gb, b->fwd.hbm_gb, 1e-15);
        assert_close(a->bwd.hbm_gb, b->bwd.hbm_gb, 1e-15);
        if (strcmp(a->name, "qkv") == 0 || strcmp(a->name, "fc1") == 0)
            assert_close(a->activations_gb, b->activations_gb / TP, 1e-15);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_selective_sequence_parallel),    cmocka_unit_test(test_none_sequence_parallel),
        cmocka_unit_test(test_tensor_parallel_only),           cmocka_unit_test(test_pipeline_stage),
        cmocka_unit_test(test_reference_keeps_gathered_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
