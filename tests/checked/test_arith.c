/* checked/test_arith.c - the one checked arithmetic (checked/include/checked.h) at its edges, and the
 * layer model's element counts computed without an int64 product that could wrap.
 *
 * The dropout and activation layers used to count b x l x e elements in an int64 before turning it
 * into a double: with mbs 2^20, seq_len 2^22 and hidden 2^22 the product is 2^64, which wrapped (to 0
 * on x86, undefined in C) and the layer did no work. Now the count is exact in double.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "checked.h"
#include "model.h"

static void test_mul_add(void **state) {
    (void)state;
    int64_t r = 0;
    assert_int_equal(checked_mul_i64(INT64_C(3037000499), INT64_C(3037000499), &r), 0);
    assert_true(r == INT64_C(9223372030926249001));
    assert_int_equal(checked_mul_i64(INT64_C(3037000500), INT64_C(3037000500), &r), 1);
    assert_int_equal(checked_mul_i64(INT64_C(1) << 32, INT64_C(1) << 32, &r), 1); /* 2^64 used to wrap to 0 */
    assert_int_equal(checked_mul_i64(-1, INT64_MIN, &r), 1);
    assert_int_equal(checked_add_i64(INT64_MAX - 1, 1, &r), 0);
    assert_true(r == INT64_MAX);
    assert_int_equal(checked_add_i64(INT64_MAX, 1, &r), 1);
    assert_int_equal(checked_add_i64(INT64_MIN, -1, &r), 1);
    assert_true(checked_mul_sat_i64(INT64_C(1) << 40, INT64_C(1) << 40) == INT64_MAX);
    assert_true(checked_mul_sat_i64(-(INT64_C(1) << 40), INT64_C(1) << 40) == INT64_MIN);
    assert_true(checked_mul_sat_i64(6, 7) == 42);
    assert_true(checked_add_sat_i64(INT64_MAX, INT64_MAX) == INT64_MAX);
    assert_true(checked_add_sat_i64(INT64_MIN, -5) == INT64_MIN);
    assert_true(checked_add_sat_i64(40, 2) == 42);
}

static void test_double_to_i64(void **state) {
    (void)state;
    int64_t r = 7;
    const double bad[] = {
        NAN, INFINITY, -INFINITY, 9223372036854775808.0, 1e30, -1e30, -9223372036854777856.0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(checked_double_to_i64(bad[i], &r), 1);
        assert_true(r == 7); /* untouched */
    }
    assert_int_equal(checked_double_to_i64(-9223372036854775808.0, &r), 0);
    assert_true(r == INT64_MIN);
    assert_int_equal(checked_double_to_i64(9223372036854774784.0, &r), 0); /* the largest double below 2^63 */
    assert_true(r == INT64_C(9223372036854774784));
    assert_int_equal(checked_double_to_i64(-2.9, &r), 0);
    assert_true(r == -2);
}

/* A job whose b x l x e is exactly 2^64: every dropout layer's FLOPs are b l e x 1e-12 TFLOP. */
static void test_layer_counts_past_int64(void **state) {
    (void)state;
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("gpt3", &j.model), MODEL_OK);
    assert_int_equal(model_system_preset("A100", &j.system), MODEL_OK);
    j.model.seq_len = INT64_C(1) << 22;
    j.model.hidden = INT64_C(1) << 22;
    j.model.ffn_hidden = INT64_C(1) << 24;
    j.model.heads = 32;
    j.model.layers = 1;
    j.system.nvlink_size = 1;
    j.gpus = 1;
    j.global_batch = INT64_C(1) << 20;
    j.compat = MODEL_COMPAT_REFERENCE;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, 1, 1, 1, 1, 1, INT64_C(1) << 20, 1, 1, 1, 1, 1};
    model_block_t *blk = calloc(1, sizeof *blk);
    assert_non_null(blk);
    model_block_build(&j, blk);
    const double ble = ldexp(1.0, 64), blf = ldexp(1.0, 66);
    int seen = 0;
    for (int i = 0; i < blk->n_layers; i++) {
        const model_layer_t *ly = &blk->layers[i];
        double want = -1;
        if (strcmp(ly->name, "dpr_v") == 0 || strcmp(ly->name, "dpr2") == 0)
            want = ble * 1e-12;
        else if (strcmp(ly->name, "dpr1") == 0)
            want = blf * 1e-12;
        if (want < 0)
            continue;
        seen++;
        assert_true(ly->fwd.flops_tflop > 0);
        assert_true(fabs(ly->fwd.flops_tflop - want) <= 1e-15 * want);
    }
    assert_int_equal(seen, 3);
    free(blk);
}

/* A GEMM of 2^45 x 2^45 outputs: 2^75 tiles of 128 x 256, past int64_t (a 2e12-token sequence made
 * one in a fuzzed measured run, and the tile count overflowed). The counts are doubles now: the time
 * is the closed form 2 m n k / rate to the waves' rounding, and the kept counts saturate. */
static void test_gemm_counts_past_int64(void **state) {
    (void)state;
    model_gemm_t g = {.m = INT64_C(1) << 45, .n = INT64_C(1) << 45, .k = 4096, .batch = 1};
    const double rate_tflop_per_s = 500.0, t = model_gemm_time_s(132, rate_tflop_per_s, &g);
    const double closed_s = 2.0 * ldexp(1.0, 90) * 4096.0 * 1e-12 / rate_tflop_per_s;
    assert_true(isfinite(t) && t > 0.0);
    assert_true(fabs(t - closed_s) <= 1e-9 * closed_s);
    assert_true(g.tiles == INT64_MAX);
    assert_true(g.waves > 0 && g.split_k == 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mul_add),
        cmocka_unit_test(test_double_to_i64),
        cmocka_unit_test(test_layer_counts_past_int64),
        cmocka_unit_test(test_gemm_counts_past_int64),
    };
    return cmocka_run_group_tests_name("checked.arith", tests, NULL, NULL);
}
