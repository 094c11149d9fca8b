/* model/test_units.c - model/ behaviour beyond the golden reference rows: job validation, the
 * corrected model's fixes (docs/model-formulas.md, section 12, quirks 1-3), the worked example's hand checks
 * (section 11) and search properties (ordering, top-K, feasibility). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"

/* The worked example of docs/model-formulas.md, section 11: gpt3_1T, A100, NVS 8, 1d tp 8, dp 16, pp 32. */
static model_job_t worked_example(model_compat_t compat) {
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("gpt3_1T", &j.model), MODEL_OK);
    assert_int_equal(model_system_preset("A100", &j.system), MODEL_OK);
    j.system.nvlink_size = 8;
    j.gpus = 4096;
    j.global_batch = 4096;
    j.compat = compat;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, 16, 8, 8, 1, 32, 1, 1, 8, 1, 1, 1};
    return j;
}

/* gpt3_1T on H200, 2D SUMMA 4 x 2 over 1024 GPUs (point case 21), NVLink domain 8. */
static model_job_t summa_example(model_compat_t compat) {
    model_job_t j = worked_example(compat);
    assert_int_equal(model_system_preset("H200", &j.system), MODEL_OK);
    j.system.nvlink_size = 8;
    j.gpus = 1024;
    j.par = (model_parallel_t){MODEL_STRATEGY_2D, 4, 8, 4, 2, 32, 1, 8, 4, 2, 1, 1};
    return j;
}

static void test_worked_example_hand_checks(void **state) {
    (void)state;
    model_job_t j = worked_example(MODEL_COMPAT_REFERENCE);
    model_estimate_t e;
    assert_int_equal(model_estimate(&j, &e), MODEL_OK);
    const model_layer_t *qkv = &e.block.layers[0];
    assert_string_equal(qkv->name, "qkv");
    assert_float_equal(qkv->fwd.flops_tflop, 1.0066132992, 1e-12);
    assert_float_equal(qkv->fwd.comp_s, 0.00405291, 1e-8);
    assert_float_equal(qkv->bwd.comm_s, 0.000454407, 1e-9);
    assert_float_equal(e.summary.iteration_time_s, 62.969025, 1e-6);
    assert_float_equal(e.summary.throughput_samples_per_s, 65.0479, 1e-4);
    assert_float_equal(e.summary.memory_gb, 75.744428, 1e-6);
    assert_true(e.summary.fits);
    assert_float_equal(e.summary.p2p_one_s, 5e-6 + 0.0131072 / 17.5, 1e-12);
}

static void test_reference_collective_branches(void **state) {
    (void)state;
    model_system_t a100;
    assert_int_equal(model_system_preset("A100", &a100), MODEL_OK);
    const model_compat_t R = MODEL_COMPAT_REFERENCE;
    /* quirk 3: allreduce equals allgather inside one domain and all-IB; doubled when hierarchical */
    assert_float_equal(model_collective_time_s(&a100, R, MODEL_COLL_ALLREDUCE, 1.0, 8, 8),
                       model_collective_time_s(&a100, R, MODEL_COLL_ALLGATHER, 1.0, 8, 8), 0.0);
    assert_float_equal(model_collective_time_s(&a100, R, MODEL_COLL_ALLREDUCE, 1.0, 16, 1),
                       model_collective_time_s(&a100, R, MODEL_COLL_ALLGATHER, 1.0, 16, 1), 0.0);
    const double ar = model_collective_time_s(&a100, R, MODEL_COLL_ALLREDUCE, 1.0, 32, 4);
    const double ag = model_collective_time_s(&a100, R, MODEL_COLL_ALLGATHER, 1.0, 32, 4);
    const double lat_s = 5e-6 * 7 + 2.5e-6 * 24;
    assert_float_equal(ar - lat_s, 2.0 * (ag - lat_s), 1e-15);
    assert_float_equal(model_collective_time_s(&a100, R, MODEL_COLL_ALLGATHER, 1.0, 1, 1), 0.0, 0.0);
    assert_float_equal(model_collective_time_s(&a100, R, MODEL_COLL_ALLGATHER, 0.0, 8, 8), 0.0, 0.0);
    /* quirk 2's root: a p2p "group" of one costs nothing */
    assert_float_equal(model_collective_time_s(&a100, R, MODEL_COLL_P2P, 1.0, 1, 1), 0.0, 0.0);
}

/* Fix 1: LayerNorm2D's local width is e/m1, so its activation and the p2p volume use e. */
static void test_corrected_layernorm_2d_width(void **state) {
    (void)state;
    model_estimate_t ref, cor;
    model_job_t jr = summa_example(MODEL_COMPAT_REFERENCE), jc = summa_example(MODEL_COMPAT_CORRECTED);
    assert_int_equal(model_estimate(&jr, &ref), MODEL_OK);
    assert_int_equal(model_estimate(&jc, &cor), MODEL_OK);
    const model_layer_t *lr = &ref.block.layers[13], *lc = &cor.block.layers[13];
    assert_string_equal(lc->name, "ln1");
    /* b * (l / m2) * (width / m1) * 2e-9 with width l (reference) or e (corrected) */
    assert_float_equal(lr->activations_gb, 1024.0 * (2048 / 4) * 2e-9, 1e-15);
    assert_float_equal(lc->activations_gb, 1024.0 * (25600 / 4) * 2e-9, 1e-15);
    assert_float_equal(lc->weights_gb, 2.0 * (25600 / 4) * 2e-9, 1e-15);
    assert_float_equal(cor.summary.p2p_volume_gb, lc->activations_gb, 0.0);
}

/* Fix 2: a pipeline partly inside NVLink domains pays its scale-out hops. */
static void test_corrected_pipeline_slow_links(void **state) {
    (void)state;
    model_job_t j = worked_example(MODEL_COMPAT_REFERENCE);
    j.gpus = 512;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, 1, 4, 4, 1, 128, 1, 1, 4, 1, 1, 2};
    j.system.nvlink_size = 8;
    model_estimate_t ref, cor;
    assert_int_equal(model_estimate(&j, &ref), MODEL_OK);
    j.compat = MODEL_COMPAT_CORRECTED;
    assert_int_equal(model_estimate(&j, &cor), MODEL_OK);
    const double v = ref.summary.p2p_volume_gb;
    const double fast_s = 2.5e-6 + v / 210.0;
    /* reference: 64 of the 127 hops are NVLink, the 63 slow ones cost zero */
    assert_float_equal(ref.summary.p2p_one_s, 64.0 / 127.0 * fast_s, 1e-15);
    const double slow_share = 63.0 / 127.0;
    const double slow_s = model_collective_time_s(&j.system, MODEL_COMPAT_CORRECTED, MODEL_COLL_P2P, v, 2, 1);
    assert_true(slow_s > 0.0);
    assert_true(cor.summary.p2p_one_s >= slow_share * slow_s);
    assert_true(cor.summary.pp_comm_s > 5.0 * ref.summary.pp_comm_s);
}

/* Fix 3: allreduce is a reduce-scatter plus an all-gather in every branch. */
static void test_corrected_allreduce_doubled(void **state) {
    (void)state;
    model_system_t a100;
    assert_int_equal(model_system_preset("A100", &a100), MODEL_OK);
    const model_compat_t C = MODEL_COMPAT_CORRECTED;
    const int64_t shapes[][2] = {{8, 4}, {16, 1}, {64, 4}};
    for (size_t i = 0; i < 3; i++) {
        const int64_t n = shapes[i][0], t = shapes[i][1] > 4 ? 4 : shapes[i][1];
        a100.nvlink_size = 4;
        const double ar = model_collective_time_s(&a100, C, MODEL_COLL_ALLREDUCE, 8.0, n, t);
        const double ag = model_collective_time_s(&a100, C, MODEL_COLL_ALLGATHER, 8.0, n, t);
        const double rs = model_collective_time_s(&a100, C, MODEL_COLL_REDUCESCATTER, 8.0, n, t);
        /* 8 GB: bandwidth-bound; allreduce moves twice the bytes of either half */
        assert_true(ar > 1.7 * ag);
        assert_true(ar > 1.7 * rs);
    }
}

typedef struct {
    void (*mutate)(model_job_t *);
    const char *field;
} bad_case_t;

static void tp_not_heads(model_job_t *j) {
    j->par.tp = j->par.tp1 = 6, j->par.dp = 4096 / 6;
}
static void product_wrong(model_job_t *j) {
    j->par.dp = 8;
}
static void pp_not_layers(model_job_t *j) {
    j->par.pp = 3;
}
static void mbs_not_batch(model_job_t *j) {
    j->par.mbs = 3;
}
static void nv_not_dividing(model_job_t *j) {
    j->par.nv_dp = 3;
}
static void nv_too_many(model_job_t *j) {
    j->par.nv_dp = 2;
}
static void zero_dp(model_job_t *j) {
    j->par.dp = 0;
}
static void neg_hbm(model_job_t *j) {
    j->system.hbm_gb_per_s = -1.0;
}
static void eff_above_one(model_job_t *j) {
    j->system.ib_eff = 1.5;
}
static void zero_layers(model_job_t *j) {
    j->model.layers = 0;
}
static void dp_not_gbs(model_job_t *j) {
    j->global_batch = 4100;
}
static void tp2_in_1d(model_job_t *j) {
    j->par.tp2 = 2;
}

static void test_job_check(void **state) {
    (void)state;
    const bad_case_t cases[] = {
        {tp_not_heads, "parallel.tp"},
        {product_wrong, "parallel"},
        {pp_not_layers, "parallel.pp"},
        {mbs_not_batch, "parallel.mbs"},
        {nv_not_dividing, "parallel.nv.dp"},
        {nv_too_many, "parallel.nv"},
        {zero_dp, "parallel.dp"},
        {neg_hbm, "system.hbm_bandwidth"},
        {eff_above_one, "system.ib_eff"},
        {zero_layers, "model.layers"},
        {dp_not_gbs, "parallel.dp"},
        {tp2_in_1d, "parallel.tp2"},
    };
    model_job_t good = worked_example(MODEL_COMPAT_CORRECTED);
    model_issue_t is;
    assert_int_equal(model_job_check(&good, &is), MODEL_OK);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        model_job_t j = good;
        cases[i].mutate(&j);
        memset(&is, 0, sizeof is);
        assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
        assert_string_equal(is.field, cases[i].field);
        assert_true(strlen(is.value) > 0 && strlen(is.allowed) > 0);
        model_estimate_t e;
        assert_int_equal(model_estimate(&j, &e), MODEL_EINVAL);
    }
}

static void test_search_properties(void **state) {
    (void)state;
    model_job_t j = worked_example(MODEL_COMPAT_REFERENCE);
    model_search_result_t top10, top1, all;
    assert_int_equal(model_search_run(&j, 1u << MODEL_STRATEGY_1D, 10, &top10), MODEL_OK);
    assert_int_equal(model_search_run(&j, 1u << MODEL_STRATEGY_1D, 1, &top1), MODEL_OK);
    assert_int_equal(top10.candidates_evaluated, 2544);
    assert_int_equal(top10.n_results, 10);
    assert_int_equal(top1.n_results, 1);
    assert_float_equal(top1.results[0].throughput_samples_per_s, top10.results[0].throughput_samples_per_s,
                       0.0);
    for (int i = 0; i < top10.n_results; i++) {
        const model_summary_t *s = &top10.results[i];
        assert_true(s->fits && s->memory_gb <= 80.0);
        if (i > 0)
            assert_true(s->throughput_samples_per_s <= top10.results[i - 1].throughput_samples_per_s);
        /* each result is what estimate gives for its layout */
        model_job_t again = j;
        again.par = s->par;
        model_estimate_t e;
        assert_int_equal(model_estimate(&again, &e), MODEL_OK);
        assert_float_equal(e.summary.iteration_time_s, s->iteration_time_s, 0.0);
    }
    /* rank 0 is the worked example's layout */
    assert_int_equal(top10.results[0].par.tp, 8);
    assert_int_equal(top10.results[0].par.pp, 32);
    assert_int_equal(top10.results[0].par.dp, 16);
    /* all strategies together: the best of the three, and every candidate counted */
    assert_int_equal(model_search_run(&j, 7u, 10, &all), MODEL_OK);
    assert_int_equal(all.candidates_evaluated, 2544 + 59390 + 22712);
    assert_int_equal(all.results[0].par.strategy, MODEL_STRATEGY_2D);
    assert_true(all.results[0].throughput_samples_per_s > top10.results[0].throughput_samples_per_s);
    model_search_result_destroy(&top10);
    model_search_result_destroy(&top1);
    model_search_result_destroy(&all);
    model_search_result_destroy(NULL);
}

static void test_search_nothing_fits(void **state) {
    (void)state;
    model_job_t j = worked_example(MODEL_COMPAT_REFERENCE);
    j.gpus = 8; /* a 1T model cannot fit on 8 A100s */
    model_search_result_t r;
    assert_int_equal(model_search_run(&j, 7u, 10, &r), MODEL_OK);
    assert_int_equal(r.n_results, 0);
    assert_true(r.candidates_evaluated > 0);
    assert_int_equal(r.candidates_feasible, 0);
    model_search_result_destroy(&r);
    assert_int_equal(model_search_run(&j, 7u, 0, &r), MODEL_EINVAL);
}

static void test_presets(void **state) {
    (void)state;
    const char *systems[] = {"A100", "H200", "B200", "B200-next", "H100", "DGX-A100", "DGX-H100"};
    const char *models[] = {"gpt3", "gpt3_1T", "vit_era5", "GPT-1.7B", "GPT-1T"};
    model_system_t s;
    model_transformer_t m;
    for (size_t i = 0; i < sizeof systems / sizeof systems[0]; i++) {
        assert_int_equal(model_system_preset(systems[i], &s), MODEL_OK);
        assert_non_null(model_system_preset_summary(systems[i]));
    }
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        assert_int_equal(model_transformer_preset(models[i], &m), MODEL_OK);
    assert_int_equal(model_system_preset("A1000", &s), MODEL_EINVAL);
    assert_null(model_system_preset_name(1000));
    assert_float_equal(s.matrix_tflop_per_s, 989.4, 0.0); /* untouched since the DGX-H100 lookup */
    model_strategy_t st;
    assert_int_equal(model_strategy_parse("2d-seqp", &st), MODEL_OK);
    assert_int_equal(st, MODEL_STRATEGY_2D_SEQP);
    assert_int_equal(model_strategy_parse("3d", &st), MODEL_EINVAL);
}

/* Layout arithmetic: gcd, the largest divisor under a cap, and the NVLink counts rule (whole groups
 * when the job fits in a domain, else innermost-first, given counts kept and their room taken). */
static void test_layout_arithmetic(void **state) {
    (void)state;
    assert_int_equal(model_gcd(12, 8), 4);
    assert_int_equal(model_gcd(7, 0), 7);
    assert_int_equal(model_gcd(1024, 72), 8);
    assert_int_equal(model_divisor_upto(12, 5), 4);
    assert_int_equal(model_divisor_upto(12, 12), 12);
    assert_int_equal(model_divisor_upto(7, 6), 1);
    assert_int_equal(model_divisor_upto(8, 1), 1);
    /* 4096 GPUs, domains of 8: tp 8 fills the domain */
    const int64_t g1[4] = {8, 1, 16, 32};
    int64_t nv[4] = {0, 0, 0, 0};
    model_nvlink_counts(4096, 8, g1, nv);
    assert_true(nv[0] == 8 && nv[1] == 1 && nv[2] == 1 && nv[3] == 1);
    /* tp 2 leaves room 4; dp 6 takes its largest divisor that fits, 3 */
    const int64_t g2[4] = {2, 1, 6, 4};
    memset(nv, 0, sizeof nv);
    model_nvlink_counts(48, 8, g2, nv);
    assert_true(nv[0] == 2 && nv[1] == 1 && nv[2] == 3 && nv[3] == 1);
    /* the whole job in one domain: every group whole */
    const int64_t g3[4] = {2, 2, 1, 2};
    memset(nv, 0, sizeof nv);
    model_nvlink_counts(8, 8, g3, nv);
    assert_true(nv[0] == 2 && nv[1] == 2 && nv[2] == 1 && nv[3] == 2);
    /* a given count is kept and its room taken first: nv_dp 4 leaves 2 for tp */
    const int64_t g4[4] = {8, 1, 4, 2};
    int64_t nv4[4] = {0, 0, 4, 0};
    model_nvlink_counts(64, 8, g4, nv4);
    assert_true(nv4[0] == 2 && nv4[1] == 1 && nv4[2] == 4 && nv4[3] == 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worked_example_hand_checks),
        cmocka_unit_test(test_reference_collective_branches),
        cmocka_unit_test(test_corrected_layernorm_2d_width),
        cmocka_unit_test(test_corrected_pipeline_slow_links),
        cmocka_unit_test(test_corrected_allreduce_doubled),
        cmocka_unit_test(test_job_check),
        cmocka_unit_test(test_search_properties),
        cmocka_unit_test(test_search_nothing_fits),
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_layout_arithmetic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
