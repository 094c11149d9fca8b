/* model/test_gemm.c - the corrected model's GEMM time (model_gemm_time_s, docs/model.md "GEMM
 * time"): whole waves give the closed form FLOPs / (efficiency x peak); one tile past k full waves
 * costs exactly one more wave; a skinny GEMM in a layer is memory-bound and takes exactly its bytes
 * over the HBM bandwidth; the time never falls as M, N or K grow; the layer table records each
 * GEMM's M, N and K in the corrected model only; FP8 GEMMs run at the FP8 peak times the FP8
 * efficiency, flash attention keeps the flat rule at the attention efficiency; the reference is
 * untouched by the SM count. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"

#define HBM_EFF 0.9 /* MODEL_I_HBM_EFFICIENCY */

static void assert_close(double got, double want, double rel) {
    if (!(fabs(got - want) <= rel * fmax(fabs(want), 1e-300)))
        fail_msg("got %.17g, want %.17g (rel %g)", got, want, rel);
}

static model_system_t dgx_a100(void) {
    model_system_t s;
    assert_int_equal(model_system_preset("DGX-A100", &s), MODEL_OK);
    assert_int_equal(s.sm_count, 108);
    return s;
}

/* The BF16 GEMM rate of s: its efficiency times its dense 16-bit peak. */
static double bf16_rate(const model_system_t *s) {
    return s->flop_efficiency * s->matrix_tflop_per_s;
}

/* One SM's time for one tm x tn tile of depth k. */
static double tile_s(const model_system_t *s, int64_t tm, int64_t tn, int64_t k) {
    return 2.0 * (double)tm * (double)tn * (double)k * 1e-12 / (bf16_rate(s) / (double)s->sm_count);
}

static double gemm(const model_system_t *s, int64_t m, int64_t n, int64_t k, model_gemm_t *out) {
    model_gemm_t g = {m, n, k, 1, 0, 0, 0, 0, 0, 0.0};
    const double t = model_gemm_time_s(s->sm_count, bf16_rate(s), &g);
    assert_true(t == g.time_s);
    if (out)
        *out = g;
    return t;
}

/* N = 128: only 128-row tiles fit (128 x 128 or 256 x 128). 3 x 108 tiles of 128 x 128 are exactly
 * three waves, and the time is the closed form 2 M N K / (efficiency x peak); one tile less is the
 * same three waves; one tile more adds exactly one wave, one tile's time. */
static void test_wave_step(void **state) {
    (void)state;
    const model_system_t s = dgx_a100();
    const int64_t n = 128, k = 4096, m = 128 * 108 * 3;
    model_gemm_t full, less, more;
    const double t_full = gemm(&s, m, n, k, &full), t_less = gemm(&s, m - 128, n, k, &less),
                 t_more = gemm(&s, m + 128, n, k, &more);
    assert_int_equal(full.tiles, 324);
    assert_int_equal(full.waves, 3);
    assert_int_equal(full.split_k, 1);
    assert_int_equal(full.tile_m * full.tile_n, 128 * 128);
    assert_close(t_full, 2.0 * (double)m * (double)n * (double)k * 1e-12 / bf16_rate(&s), 1e-12);
    assert_true(t_less == t_full);
    assert_int_equal(more.waves * more.tile_m * more.tile_n, 4 * 128 * 128);
    assert_close(t_more - t_full, tile_s(&s, 128, 128, k), 1e-12);
    assert_close(t_more - t_full, t_full / 3.0, 1e-12); /* one wave of three */
}

/* The same on H100 (132 SMs) with 128 x 256 tiles: k full waves, then one tile more. */
static void test_wave_step_h100(void **state) {
    (void)state;
    model_system_t s;
    assert_int_equal(model_system_preset("DGX-H100", &s), MODEL_OK);
    assert_int_equal(s.sm_count, 132);
    const int64_t m = 128 * 132 * 2, n = 256, k = 8192; /* 264 tiles of 128 x 256: two waves */
    model_gemm_t a, b;
    const double t2 = gemm(&s, m, n, k, &a), t3 = gemm(&s, m + 1, n, k, &b);
    assert_int_equal(a.tile_m, 128);
    assert_int_equal(a.tile_n, 256);
    assert_int_equal(a.waves, 2);
    assert_close(t2, 2.0 * (double)m * (double)n * (double)k * 1e-12 / (s.flop_efficiency * 989.4), 1e-12);
    /* one row more: the cheapest kernel runs one wave more of its own tile (a 16-row one here),
     * never more than one 128 x 256 wave */
    assert_true(t3 > t2);
    assert_true(t3 - t2 <= tile_s(&s, 128, 256, k) * (1.0 + 1e-12));
    assert_close(t3 - t2, (double)(b.waves * b.tile_m * b.tile_n - 2 * 128 * 256) * (t2 / (2.0 * 128 * 256)),
                 1e-12);
}

/* A skinny GEMM inside a layer: GPT-1T's qkv at 16 tokens, tp 8 (M 16, N 9600, K 25600) on DGX-A100.
 * The weights dominate its bytes, the tile is cut to 16 rows and k is split over the idle SMs, so
 * its compute is far below its HBM time and the pass takes exactly bytes / (0.9 x bandwidth). */
static void test_skinny_memory_bound(void **state) {
    (void)state;
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("GPT-1T", &j.model), MODEL_OK);
    j.model.seq_len = 16;
    j.system = dgx_a100();
    j.gpus = 8;
    j.global_batch = 1;
    j.compat = MODEL_COMPAT_CORRECTED;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, 1, 8, 8, 1, 1, 1, 1, 8, 1, 1, 1};
    model_block_t b;
    model_block_build(&j, &b);
    const model_layer_t *qkv = &b.layers[0];
    assert_string_equal(qkv->name, "qkv");
    const model_pass_t *f = &qkv->fwd;
    assert_int_equal(f->n_gemms, 1);
    const model_gemm_t *g = &f->gemms[0];
    assert_int_equal(g->m, 16);
    assert_int_equal(g->n, 3 * 25600 / 8);
    assert_int_equal(g->k, 25600);
    assert_int_equal(g->tile_m, 16);
    assert_true(g->split_k > 1);
    const double bytes = (double)(g->m * g->k + g->k * g->n + g->m * g->n) * 2.0;
    assert_close(f->hbm_gb, bytes * 1e-9, 1e-12);
    assert_true(f->comp_s < 0.5 * f->mem_s);
    assert_close(f->time_s, bytes * 1e-9 / (HBM_EFF * j.system.hbm_gb_per_s), 1e-12);
    assert_close(f->time_s, f->comp_s + f->mem_exposed_s, 1e-12);
}

/* Growing any of M, N, K never makes a GEMM faster (min over tiles of non-decreasing times). */
static void test_monotone(void **state) {
    (void)state;
    const model_system_t s = dgx_a100();
    const int64_t base[3] = {2048, 3072, 4096};
    for (int d = 0; d < 3; d++) {
        double prev = 0.0;
        for (int64_t v = 8; v <= 20000; v += 8 + v / 16) {
            int64_t x[3] = {base[0], base[1], base[2]};
            x[d] = v;
            const double t = gemm(&s, x[0], x[1], x[2], NULL);
            if (t < prev)
                fail_msg("dimension %d = %lld: %.17g < %.17g", d, (long long)v, t, prev);
            prev = t;
        }
    }
}

/* The layer table records Y = X W, dX and dW with their shapes in the corrected model; the pass's
 * compute is the overhead plus the GEMMs; the reference records none and ignores the SM count. */
static void test_layer_shapes_and_reference(void **state) {
    (void)state;
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("GPT-18B", &j.model), MODEL_OK);
    j.system = dgx_a100();
    j.gpus = 8;
    j.global_batch = 8;
    j.compat = MODEL_COMPAT_CORRECTED;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, 1, 8, 8, 1, 1, 1, 1, 8, 1, 1, 1};
    model_block_t b;
    model_block_build(&j, &b);
    const model_layer_t *fc1 = NULL;
    for (int i = 0; i < b.n_layers; i++)
        if (strcmp(b.layers[i].name, "fc1") == 0)
            fc1 = &b.layers[i];
    assert_non_null(fc1);
    const int64_t bl = 2048, e = 6144, f = 24576 / 8;
    assert_int_equal(fc1->fwd.n_gemms, 1);
    assert_true(fc1->fwd.gemms[0].m == bl && fc1->fwd.gemms[0].n == f && fc1->fwd.gemms[0].k == e);
    assert_int_equal(fc1->bwd.n_gemms, 2);
    assert_true(fc1->bwd.gemms[0].m == bl && fc1->bwd.gemms[0].n == e && fc1->bwd.gemms[0].k == f);
    assert_true(fc1->bwd.gemms[1].m == e && fc1->bwd.gemms[1].n == f && fc1->bwd.gemms[1].k == bl);
    assert_close(fc1->bwd.comp_s,
                 j.system.kernel_overhead_s + fc1->bwd.gemms[0].time_s + fc1->bwd.gemms[1].time_s, 1e-12);

    model_job_t r = j, r0 = j;
    r.compat = r0.compat = MODEL_COMPAT_REFERENCE;
    r0.system.sm_count = 0;
    model_estimate_t e1, e0;
    assert_int_equal(model_estimate(&r, &e1), MODEL_OK);
    assert_int_equal(model_estimate(&r0, &e0), MODEL_OK);
    assert_true(e1.summary.iteration_time_s == e0.summary.iteration_time_s);
    for (int i = 0; i < e1.block.n_layers; i++)
        assert_int_equal(e1.block.layers[i].fwd.n_gemms + e1.block.layers[i].bwd.n_gemms, 0);
    const model_layer_t *rfc1 = &e1.block.layers[6];
    assert_string_equal(rfc1->name, "fc1");
    assert_close(rfc1->fwd.comp_s,
                 j.system.kernel_overhead_s + rfc1->fwd.flops_tflop / (j.system.flop_efficiency * 312.0),
                 1e-12);
}

/* sm_count 0: the flat rule at the rate given, no tiles; an empty GEMM takes no time. */
static void test_flat_without_sms(void **state) {
    (void)state;
    model_gemm_t g = {1000, 3000, 5000, 2, 0, 0, 0, 0, 0, 0.0};
    const double rate = 0.81 * 312.0;
    assert_close(model_gemm_time_s(0, rate, &g), 2.0 * 1000 * 3000 * 5000 * 2 * 1e-12 / rate, 1e-12);
    assert_int_equal(g.tiles, 0);
    assert_int_equal(g.waves, 0);
    model_gemm_t empty = {0, 3000, 5000, 1, 0, 0, 0, 0, 0, 0.0};
    assert_true(model_gemm_time_s(108, rate, &empty) == 0.0);
}

/* A Llama-style job on DGX-H100: Llama 3 8B, tp 2, flash attention. */
static model_job_t h100_job(model_precision_t precision) {
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("Llama3-8B", &j.model), MODEL_OK);
    assert_int_equal(model_system_preset("DGX-H100", &j.system), MODEL_OK);
    assert_int_equal(j.system.sm_count, 132);
    j.gpus = 2;
    j.global_batch = 1;
    j.compat = MODEL_COMPAT_CORRECTED;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, 1, 2, 2, 1, 1, 1, 1, 2, 1, 1, 1};
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

/* The experts' grouped GEMMs: one GEMM per local expert on its share of the routed rows (ceil(c k T /
 * (E / ep))) and the shared experts' on all T rows, batch = the experts of each kind, forward and the
 * two backward products; the router's logits GEMM (T x E x hidden); the pass's compute is the launch
 * overhead plus the GEMMs' times. With full recomputation the backward also holds the forward's. A
 * DeepSeek-like block: 16 experts, top 2, one shared expert, expert width 1024, on ep 4 (4 local). */
static void test_grouped_gemms(void **state) {
    (void)state;
    for (int rec = 0; rec < 2; rec++) {
        model_job_t j;
        memset(&j, 0, sizeof j);
        j.model = (model_transformer_t){
            .name = "moe",
            .seq_len = 4096,
            .hidden = 2048,
            .heads = 16,
            .layers = 4,
            .ffn_hidden = 8192,
            .vocab = 32000,
            .ffn_act = MODEL_FFN_SWIGLU,
            .moe = {.experts = 16, .topk = 2, .shared_experts = 1, .expert_ffn_hidden = 1024}};
        assert_int_equal(model_system_preset("DGX-H100", &j.system), MODEL_OK);
        j.gpus = 8;
        j.global_batch = 8;
        j.compat = MODEL_COMPAT_CORRECTED;
        j.par = (model_parallel_t){MODEL_STRATEGY_1D, 4, 2, 2, 1, 1, 1, 1, 2, 1, 1, 1};
        j.experts_par.ep = 4;
        j.training.recompute = rec ? MODEL_RECOMPUTE_FULL : MODEL_RECOMPUTE_NONE;
        model_issue_t is;
        if (model_job_check(&j, &is) != MODEL_OK)
            fail_msg("job: %s %s (%s)", is.field, is.value, is.allowed);
        model_block_t b;
        model_block_build(&j, &b);
        const int64_t T = 4096 / 2, e = 2048, fe = 1024, fw = 2 * fe, routed = 4,
                      m_e = (2 * T + routed - 1) / routed;
        const model_layer_t *f1 = layer(&b, "experts-fc1"), *f2 = layer(&b, "experts-fc2");
        const model_layer_t *r = layer(&b, "router");
        const int64_t want[2][2] = {{e, fw}, {fe, e}};
        const model_layer_t *fc[2] = {f1, f2};
        for (int i = 0; i < 2; i++) {
            const int64_t in = want[i][0], out = want[i][1];
            assert_int_equal(fc[i]->fwd.n_gemms, 2);
            const model_gemm_t *g = fc[i]->fwd.gemms;
            assert_true(g[0].m == m_e && g[0].n == out && g[0].k == in && g[0].batch == routed);
            assert_true(g[1].m == T && g[1].n == out && g[1].k == in && g[1].batch == 1);
            assert_int_equal(fc[i]->bwd.n_gemms, rec ? 6 : 4);
            const model_gemm_t *h = fc[i]->bwd.gemms;
            assert_true(h[0].m == m_e && h[0].n == in && h[0].k == out && h[0].batch == routed);
            assert_true(h[1].m == in && h[1].n == out && h[1].k == m_e && h[1].batch == routed);
            assert_true(h[2].m == T && h[2].n == in && h[2].k == out && h[2].batch == 1);
            assert_true(h[3].m == in && h[3].n == out && h[3].k == T && h[3].batch == 1);
            double sum = 0.0;
            for (int q = 0; q < fc[i]->fwd.n_gemms; q++)
                sum += fc[i]->fwd.gemms[q].time_s;
            assert_close(fc[i]->fwd.comp_s, j.system.kernel_overhead_s + sum, 1e-12);
        }
        assert_true(r->fwd.n_gemms == 1 && r->fwd.gemms[0].m == T && r->fwd.gemms[0].n == 16 &&
                    r->fwd.gemms[0].k == e);
    }
}

/* The efficiency of each kind: an FP8 GEMM's tiles run at fp8_flop_efficiency x the FP8 peak, a
 * BF16 GEMM's at flop_efficiency x the BF16 peak; flash attention records no GEMM and keeps the
 * flat rule at attention_efficiency x the BF16 peak. */
static void test_efficiency_per_kind(void **state) {
    (void)state;
    for (int fp8 = 0; fp8 < 2; fp8++) {
        const model_job_t j = h100_job(fp8 ? MODEL_PRECISION_FP8 : MODEL_PRECISION_BF16);
        const model_system_t *s = &j.system;
        model_block_t b;
        model_block_build(&j, &b);
        const model_layer_t *fc1 = layer(&b, "fc1");
        assert_int_equal(fc1->fp8_gemm, fp8);
        model_gemm_t g = fc1->fwd.gemms[0];
        const double rate = fp8 ? s->fp8_flop_efficiency * s->fp8_matrix_tflop_per_s : bf16_rate(s);
        assert_close(fc1->fwd.comp_s, s->kernel_overhead_s + model_gemm_time_s(s->sm_count, rate, &g), 1e-12);
        assert_close(g.time_s,
                     (double)g.waves * 2.0 * (double)(g.tile_m * g.tile_n) *
                         (double)((g.k + g.split_k - 1) / g.split_k) * 1e-12 / (rate / 132.0),
                     1e-12);
        const model_layer_t *fa = layer(&b, "fusedla");
        assert_int_equal(fa->fwd.n_gemms + fa->bwd.n_gemms, 0);
        assert_close(fa->fwd.comp_s,
                     s->kernel_overhead_s +
                         fa->fwd.flops_tflop / (s->attention_efficiency * s->matrix_tflop_per_s),
                     1e-12);
    }
}

/* model_job_check names the GEMM constants it refuses. */
static void test_check(void **state) {
    (void)state;
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("GPT-18B", &j.model), MODEL_OK);
    j.system = dgx_a100();
    j.gpus = 8;
    j.global_batch = 8;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, 1, 8, 8, 1, 1, 1, 1, 8, 1, 1, 1};
    model_issue_t is;
    assert_int_equal(model_job_check(&j, &is), MODEL_OK);
    j.system.sm_count = -1;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "system.sm_count");
    j.system.sm_count = 0; /* the flat rule */
    assert_int_equal(model_job_check(&j, &is), MODEL_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wave_step),
        cmocka_unit_test(test_wave_step_h100),
        cmocka_unit_test(test_skinny_memory_bound),
        cmocka_unit_test(test_monotone),
        cmocka_unit_test(test_layer_shapes_and_reference),
        cmocka_unit_test(test_flat_without_sms),
        cmocka_unit_test(test_grouped_gemms),
        cmocka_unit_test(test_efficiency_per_kind),
        cmocka_unit_test(test_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
