/* model/test_precision.c - BF16 and FP8 (training.precision), the system presets of today's
 * datasheets, and the throughput figures (model FLOPs per token, model TFLOP/s, tokens/s, MFU):
 * each against a hand calculation or its closed form, and the presets against docs/model.md. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"

static void assert_close(double got, double want, double rel) {
    if (!(fabs(got - want) <= rel * fmax(fabs(want), 1e-300)))
        fail_msg("got %.17g, want %.17g (rel %g)", got, want, rel);
}

/* GPT-3 175B on 1024 DGX H100 GPUs: 1d, tp 8, pp 8, dp 16, mbs 1, global batch 1536. */
static model_job_t gpt3_job(model_precision_t precision) {
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("gpt3", &j.model), MODEL_OK);
    assert_int_equal(model_system_preset("DGX-H100", &j.system), MODEL_OK);
    j.gpus = 1024;
    j.global_batch = 1536;
    j.compat = MODEL_COMPAT_CORRECTED;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, 16, 8, 8, 1, 8, 1, 1, 8, 1, 1, 1};
    j.training.precision = precision;
    return j;
}

static const model_layer_t *layer(const model_block_t *b, const char *name) {
    for (int i = 0; i < b->n_layers; i++)
        if (strcmp(b->layers[i].name, name) == 0)
            return &b->layers[i];
    fail_msg("no layer %s", name);
    return NULL;
}

/* GPT-3 175B at sequence 2048 (L 96, h 12288, f 4h, V 50257), by hand:
 *   72 L h^2 = 72 x 96 x 150,994,944        = 1,043,677,052,928
 *   12 L h s = 12 x 96 x 12,288 x 2,048     =    28,991,029,248
 *   6 h V    = 6 x 12,288 x 50,257          =     3,705,348,096
 *   per token                               = 1,076,373,430,272 FLOPs (close to 6 x 175e9 = 1.05e12) */
static void test_flops_per_token_gpt3(void **state) {
    (void)state;
    model_transformer_t m;
    assert_int_equal(model_transformer_preset("gpt3", &m), MODEL_OK);
    assert_close(model_flops_per_token(&m), 1076373430272.0, 1e-15);
    m.vocab = 0; /* no logits term */
    assert_close(model_flops_per_token(&m), 1076373430272.0 - 3705348096.0, 1e-15);
}

/* Narayanan et al. 2021 count 96 B s l h^2 (1 + s/6h + V/16lh) with full recomputation: four passes
 * over the layers (3/4 of it without the recomputed forward) and three over the logit GEMM
 * (96 B s l h^2 V/16lh = 6 B s h V, not recomputed, so the same as the model FLOPs' term). */
static void test_flops_match_narayanan(void **state) {
    (void)state;
    model_transformer_t m;
    assert_int_equal(model_transformer_preset("GPT-1T", &m), MODEL_OK);
    const double l = (double)m.layers, h = (double)m.hidden, s = (double)m.seq_len, v = (double)m.vocab;
    const double layers = 96.0 * s * l * h * h * (1.0 + s / (6.0 * h)) / s;
    const double logits = 96.0 * s * l * h * h * (v / (16.0 * l * h)) / s;
    assert_close(model_flops_per_token(&m), 0.75 * layers + logits, 1e-14);
}

/* MFU = model TFLOP/s per GPU / the dense peak of the precision; model TFLOP/s = FLOPs per token x
 * tokens per iteration / time / GPUs; tokens/s per GPU = batch x seq / time / GPUs. */
static void test_mfu_of_a_run(void **state) {
    (void)state;
    for (int p = 0; p < 2; p++) {
        const model_job_t j = gpt3_job((model_precision_t)p);
        static model_estimate_t e;
        assert_int_equal(model_estimate(&j, &e), MODEL_OK);
        const double t = e.summary.iteration_time_s;
        model_throughput_t th;
        model_throughput(&j, t, &th);
        const double tokens = 1536.0 * 2048.0;
        assert_close(th.tokens_per_s_per_gpu, tokens / t / 1024.0, 1e-14);
        assert_close(th.model_tflops_per_gpu, 1076373430272.0 * tokens / t / 1024.0 / 1e12, 1e-14);
        const double peak = p ? 1978.9 : 989.4;
        assert_close(th.mfu, th.model_tflops_per_gpu / peak, 1e-14);
        assert_true(th.mfu > 0.2 && th.mfu < 0.8);
    }
    /* the reference is BF16 whatever the training field says */
    model_job_t j = gpt3_job(MODEL_PRECISION_FP8);
    j.compat = MODEL_COMPAT_REFERENCE;
    model_throughput_t th;
    model_throughput(&j, 10.0, &th);
    assert_close(th.mfu, th.model_tflops_per_gpu / 989.4, 1e-14);
    model_throughput(&j, 0.0, &th);
    assert_true(th.mfu == 0.0 && th.model_tflops_per_gpu == 0.0 && th.tokens_per_s_per_gpu == 0.0);
}

/* A compute-bound GEMM (fc1: 2048 x 12288 x 6144 per GPU) takes BF16 peak / FP8 peak of its BF16
 * compute time, kernel overhead aside; the cast kernel before it moves 4 bytes per input element
 * forward and per output-gradient element backward. */
static void test_fp8_gemm_ratio_and_casts(void **state) {
    (void)state;
    static model_estimate_t bf, f8;
    model_job_t jb = gpt3_job(MODEL_PRECISION_BF16), jf = gpt3_job(MODEL_PRECISION_FP8);
    assert_int_equal(model_estimate(&jb, &bf), MODEL_OK);
    assert_int_equal(model_estimate(&jf, &f8), MODEL_OK);
    const double k = jb.system.kernel_overhead_s;
    for (int pass = 0; pass < 2; pass++) {
        const model_pass_t *b = pass ? &layer(&bf.block, "fc1")->bwd : &layer(&bf.block, "fc1")->fwd;
        const model_pass_t *f = pass ? &layer(&f8.block, "fc1")->bwd : &layer(&f8.block, "fc1")->fwd;
        assert_true(b->mem_exposed_s == 0.0 && f->mem_exposed_s == 0.0); /* compute-bound */
        assert_true(f->flops_tflop == b->flops_tflop);
        /* the FP8 peak at the FP8 GEMM efficiency, against the BF16 peak at the FLOP efficiency */
        assert_close((f->comp_s - k) / (b->comp_s - k),
                     (989.4 * jb.system.flop_efficiency) / (1978.9 * jf.system.fp8_flop_efficiency), 1e-12);
    }
    /* the attention core and the vector layers keep their BF16 times */
    assert_true(layer(&f8.block, "fusedla")->fwd.time_s == layer(&bf.block, "fusedla")->fwd.time_s);
    assert_true(layer(&f8.block, "act1")->bwd.time_s == layer(&bf.block, "act1")->bwd.time_s);
    /* four casts, BF16 has none */
    assert_int_equal(f8.block.n_layers, bf.block.n_layers + 4);
    const model_layer_t *cast = layer(&f8.block, "fc1-cast");
    assert_true(cast[1].fp8_gemm && strcmp(cast[1].name, "fc1") == 0 && !cast->tensor_core);
    const double dout = 2048.0 * 6144.0;                             /* fc1's output gradient: b l f/tp */
    assert_true(cast->fwd.hbm_gb == 0.0 && cast->fwd.time_s == 0.0); /* fused into ln2 */
    assert_close(cast->bwd.hbm_gb, 4.0 * dout * 1e-9, 1e-14);
    assert_close(cast->bwd.mem_s, cast->bwd.hbm_gb / (0.9 * 3350.0), 1e-14);
    /* fc2's input (b l f/tp) is cast by its own kernel; its output gradient is b l e */
    cast = layer(&f8.block, "fc2-cast");
    assert_close(cast->fwd.hbm_gb, 4.0 * 2048.0 * 6144.0 * 1e-9, 1e-14);
    assert_close(cast->bwd.hbm_gb, 4.0 * 2048.0 * 12288.0 * 1e-9, 1e-14);
    assert_close(cast->fwd.time_s, fmax(cast->fwd.comp_s, cast->fwd.mem_s), 1e-14);
    /* saved input in FP8 (1 byte), BF16 kept 2 */
    assert_close(layer(&f8.block, "fc1")->activations_gb, 0.5 * layer(&bf.block, "fc1")->activations_gb,
                 1e-14);
    /* FP8 weight copies: 2 bytes per GEMM parameter = the GEMMs' BF16 bytes; in memory_gb */
    const double gemm_w = layer(&bf.block, "qkv")->weights_gb + layer(&bf.block, "vproj")->weights_gb +
                          layer(&bf.block, "fc1")->weights_gb + layer(&bf.block, "fc2")->weights_gb;
    assert_close(f8.block.fp8_weights_gb, gemm_w, 1e-14);
    assert_true(bf.block.fp8_weights_gb == 0.0 && bf.summary.fp8_weights_gb == 0.0);
    assert_close(f8.summary.fp8_weights_gb, gemm_w * 12.0, 1e-14);
    const model_summary_t *s = &f8.summary;
    assert_close(s->memory_gb,
                 s->weights_gb + s->grads_gb + s->optimizer_gb + s->activations_gb + s->fp8_weights_gb,
                 1e-14);
    assert_true(f8.summary.iteration_time_s < bf.summary.iteration_time_s);
}

/* FP8 needs an FP8 peak: refused on the A100 with the field training.precision. */
static void test_fp8_refused_without_peak(void **state) {
    (void)state;
    model_job_t j = gpt3_job(MODEL_PRECISION_FP8);
    assert_int_equal(model_system_preset("DGX-A100", &j.system), MODEL_OK);
    assert_true(j.system.fp8_matrix_tflop_per_s == 0.0);
    model_issue_t is;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "training.precision");
    assert_string_equal(is.value, "fp8");
    assert_non_null(strstr(is.allowed, "DGX-A100 has no FP8 peak"));
    j.training.precision = MODEL_PRECISION_BF16;
    assert_int_equal(model_job_check(&j, NULL), MODEL_OK);
    j.training.precision = (model_precision_t)7;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "training.precision");
    model_precision_t p;
    assert_int_equal(model_precision_parse("fp8", &p), MODEL_OK);
    assert_int_equal(p, MODEL_PRECISION_FP8);
    assert_int_equal(model_precision_parse("fp16", &p), MODEL_EINVAL);
    assert_string_equal(model_precision_name(MODEL_PRECISION_BF16), "bf16");
}

/* The presets table of docs/model.md ("System presets"): every row equals its preset. Columns:
 * preset, BF16, FP8, HBM GB, HBM GB/s, NVLink GB/s, NIC GB/s, NVLink domain, FP32, sources. */
static void test_presets_match_docs(void **state) {
    (void)state;
    FILE *f = fopen(STEPSIM_SOURCE_DIR "/docs/model.md", "r");
    assert_non_null(f);
    char line[1024];
    int in_table = 0, rows = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "## System presets", 17) == 0)
            in_table = 1;
        else if (in_table && strncmp(line, "## ", 3) == 0)
            break;
        if (!in_table || strncmp(line, "| `", 3) != 0)
            continue;
        char name[32];
        double v[8];
        if (sscanf(line, "| `%31[^`]` | %lf | %lf | %lf | %lf | %lf | %lf | %lf | %lf |", name, &v[0], &v[1],
                   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 9)
            fail_msg("unparsed row: %s", line);
        model_system_t s;
        if (model_system_preset(name, &s) != MODEL_OK)
            fail_msg("no preset %s", name);
        assert_true(s.matrix_tflop_per_s == v[0]);
        assert_true(s.fp8_matrix_tflop_per_s == v[1]);
        assert_close(s.hbm_capacity_gb, v[2] * 1.073741824, 1e-15); /* the table prints GiB */
        assert_true(s.hbm_gb_per_s == v[3]);
        assert_true(s.nvlink_gb_per_s == v[4]);
        assert_true(s.ib_gb_per_s == v[5]);
        assert_true((double)s.nvlink_size == v[6]);
        assert_true(s.vector_fp32_tflop_per_s == v[7]);
        assert_true(s.vector_tflop_per_s == 2.0 * v[7]); /* non-tensor FP16 = 2 x FP32 */
        rows++;
    }
    fclose(f);
    assert_int_equal(rows, 6); /* H100, DGX-H100, DGX-H200, DGX-B200, GB200-NVL72, GB300-NVL72 */
    /* the racks are NVLink domains of 72; the paper's systems have no FP8 */
    model_system_t s;
    assert_int_equal(model_system_preset("GB300-NVL72", &s), MODEL_OK);
    assert_int_equal(s.nvlink_size, 72);
    assert_int_equal(model_system_preset("B200", &s), MODEL_OK);
    assert_true(s.fp8_matrix_tflop_per_s == 0.0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flops_per_token_gpt3),
        cmocka_unit_test(test_flops_match_narayanan),
        cmocka_unit_test(test_mfu_of_a_run),
        cmocka_unit_test(test_fp8_gemm_ratio_and_casts),
        cmocka_unit_test(test_fp8_refused_without_peak),
        cmocka_unit_test(test_presets_match_docs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
