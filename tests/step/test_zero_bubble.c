/* step/test_zero_bubble.c - the zero-bubble schedule ZB-H1 (Qi et al., "Zero Bubble Pipeline
 * Parallelism", arXiv 2401.10241) against its closed form: with equal stages and free communication
 * the simulated step is m (F + B + W) + (pp - 1)(F + B - W) (model_pipeline_form), its bubble smaller
 * than 1F1B's (pp - 1)(F + B + W) at the same activation peak; its order (every F, B and W once, B
 * after F, W after B, at most pp microbatches held); the backward's split (B + W = the whole backward,
 * W the weight GEMMs' forward time); and the DualPipe closed form of the DeepSeek-V3 report
 * (arXiv 2412.19437, table 2) against the report's ZB1P and 1F1B rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "step.h"
#include "step_jobs.h"

/* A job whose only cost is compute (as tests/step/test_schedule.c): pipeline messages faster than a
 * picosecond, tensor and data parallelism 1. */
static model_job_t job_of(int64_t pp, int64_t layers, int64_t m, int64_t hidden, model_compat_t compat) {
    return step_test_compute_job(pp, layers, m, hidden, 512, compat);
}

typedef struct outcome {
    double step_s, f_s, b_s, w_s; /* the step; per stage and microbatch F, B (whole backward if not
                                     split), W */
    double peak_act_gb;
} outcome_t;

static outcome_t simulate(const model_job_t *job, step_schedule_t sched) {
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.comm = SIM_COMM_ANALYTIC;
    cfg.schedule = sched;
    cfg.optimizer_step = 0; /* the schedule alone */
    step_t *s = NULL;
    char err[256];
    if (step_new(job, &cfg, NULL, &s, err, sizeof err) != SIM_OK)
        fail_msg("step_new: %s", err);
    assert_int_equal(step_run(s), SIM_OK);
    step_result_t r;
    assert_int_equal(step_result(s, &r), SIM_OK);
    outcome_t o = {r.step_time_s, 0.0, 0.0, 0.0, r.peak_activations_gb};
    const sim_engine_t *e = step_engine(s);
    for (sim_op_id_t op = 0; op < sim_op_count(e); op++) {
        step_op_t m;
        sim_time_ps_t st, en;
        assert_int_equal(step_op(s, op, &m), SIM_OK);
        if (m.kind != STEP_OP_COMPUTE || m.stage != 0 || m.microbatch != 0)
            continue;
        sim_op_times(e, op, &st, &en);
        const double d = (double)(en - st) * 1e-12;
        if (strcmp(m.pass, "fwd") == 0)
            o.f_s += d;
        else if (strcmp(m.pass, "bwd") == 0)
            o.b_s += d;
        else if (strcmp(m.pass, "wgrad") == 0)
            o.w_s += d;
    }
    step_free(s);
    return o;
}

static void check_close(const char *what, double got, double want, double rel) {
    if (!(got <= want * (1 + rel) && got >= want * (1 - rel)))
        fail_msg("%s: %.12g, want %.12g (within %g%%)", what, got, want, rel * 100);
}

static void test_zb_h1_closed_form(void **state) {
    (void)state;
    static const int64_t pps[] = {2, 3, 4, 8};
    static const int64_t mult[] = {1, 2, 4};
    int n = 0;
    double worst = 0.0;
    /* the reference compat prices the pipeline hops at 0 here; the corrected one at NCCL's base
     * latency, which the forms leave out: there only the split, the order of the bubbles and the
     * memory are checked */
    for (int compat = 0; compat < 2; compat++)
        for (size_t a = 0; a < sizeof pps / sizeof pps[0]; a++)
            for (size_t b = 0; b < sizeof mult / sizeof mult[0]; b++) {
                const int64_t pp = pps[a], m = pp * mult[b];
                const model_job_t job =
                    job_of(pp, 2 * pp, m, 1024, compat ? MODEL_COMPAT_CORRECTED : MODEL_COMPAT_REFERENCE);
                const outcome_t z = simulate(&job, STEP_SCHEDULE_ZB_H1);
                const outcome_t o = simulate(&job, STEP_SCHEDULE_1F1B);
                /* the split keeps the work: B + W is 1F1B's backward, F the same */
                check_close("F", z.f_s, o.f_s, 1e-9);
                check_close("B + W", z.b_s + z.w_s, o.b_s, 1e-9);
                assert_true(z.w_s > 0.0 && z.w_s <= z.f_s && z.w_s <= z.b_s);
                model_pipeline_form_t zf, of;
                assert_int_equal(
                    model_pipeline_form(MODEL_PIPELINE_ZB_H1, pp, m, z.f_s, z.b_s, z.w_s, -1, &zf), MODEL_OK);
                assert_int_equal(
                    model_pipeline_form(MODEL_PIPELINE_1F1B, pp, m, z.f_s, z.b_s, z.w_s, -1, &of), MODEL_OK);
                const double bubble = z.step_s - zf.work_s;
                if (!compat) { /* free communication: the step and the bubble within 1% of the forms */
                    check_close("ZB-H1 step", z.step_s, zf.step_s, 0.01);
                    check_close("ZB-H1 bubble", bubble, zf.bubble_s, 0.01);
                    check_close("1F1B bubble", o.step_s - of.work_s, of.bubble_s, 0.01);
                    const double rel = bubble / zf.bubble_s - 1.0;
                    worst = rel > worst ? rel : -rel > worst ? -rel : worst;
                }
                /* smaller than 1F1B's, at the same activation peak */
                assert_true(bubble < o.step_s - of.work_s);
                check_close("peak activations", z.peak_act_gb, o.peak_act_gb, 1e-9);
                n++;
            }
    printf("  %d ZB-H1 runs: bubble (pp - 1)(F + B - W) within %.2e relative; 1F1B's peak memory\n", n,
           worst);
}

/* The corrected model's estimate with training.pipeline_schedule zb-h1: 1F1B's less 2 (pp - 1) W per
 * stage, the bubble (pp - 1)(F + B - W) plus the hops, and the simulated ZB-H1 step within 0.5% of it
 * (analytic communication; the residual is the pipeline's end stages, as with 1F1B). */
static void test_zb_h1_estimate(void **state) {
    (void)state;
    static const int64_t pps[] = {2, 4, 8};
    for (size_t a = 0; a < sizeof pps / sizeof pps[0]; a++) {
        const int64_t pp = pps[a], m = 4 * pp;
        model_job_t job = job_of(pp, 2 * pp, m, 1024, MODEL_COMPAT_CORRECTED);
        model_estimate_t e1, ez;
        assert_int_equal(model_estimate(&job, &e1), MODEL_OK);
        job.training.pipeline = MODEL_PIPELINE_ZB_H1;
        assert_int_equal(model_job_check(&job, NULL), MODEL_OK);
        assert_int_equal(model_estimate(&job, &ez), MODEL_OK);
        double w_s = 0.0;
        for (int i = 0; i < ez.block.n_layers; i++)
            w_s += model_layer_wgrad_s(&ez.block.layers[i]);
        const double less = 2.0 * (double)(pp - 1) * 2.0 * w_s; /* 2 blocks per stage */
        check_close("estimate", ez.summary.iteration_time_s, e1.summary.iteration_time_s - less, 1e-12);
        check_close("bubble", ez.summary.bubble_s, e1.summary.bubble_s - less, 1e-12);
        const outcome_t z = simulate(&job, STEP_SCHEDULE_ZB_H1);
        check_close("simulated against the estimate", z.step_s, ez.summary.iteration_time_s, 0.005);
        /* the memory: 1F1B's */
        check_close("memory", ez.summary.memory_gb, e1.summary.memory_gb, 1e-12);
    }
    /* outside the closed form: fewer microbatches than stages, interleaving */
    model_job_t job = job_of(4, 8, 2, 1024, MODEL_COMPAT_CORRECTED);
    job.training.pipeline = MODEL_PIPELINE_ZB_H1;
    model_issue_t is;
    assert_int_equal(model_job_check(&job, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "training.pipeline_schedule");
    job = job_of(4, 8, 8, 1024, MODEL_COMPAT_CORRECTED);
    job.training.pipeline = MODEL_PIPELINE_ZB_H1;
    job.training.interleave = 2;
    assert_int_equal(model_job_check(&job, &is), MODEL_EINVAL);
    job.training.interleave = 1;
    job.training.pipeline = MODEL_PIPELINE_GPIPE; /* a closed form only */
    assert_int_equal(model_job_check(&job, &is), MODEL_EINVAL);
    job.training.pipeline = MODEL_PIPELINE_DUALPIPE; /* 8 microbatches on pp 4: 2 pp, the least */
    assert_int_equal(model_job_check(&job, &is), MODEL_OK);
    job = job_of(4, 8, 6, 1024, MODEL_COMPAT_CORRECTED);
    job.training.pipeline = MODEL_PIPELINE_DUALPIPE;
    assert_int_equal(model_job_check(&job, &is), MODEL_EINVAL);
    job.training.pipeline = MODEL_PIPELINE_ZB_V;
    assert_int_equal(model_job_check(&job, &is), MODEL_EINVAL);
}

static void test_zb_h1_order(void **state) {
    (void)state;
    step_sched_item_t it[3 * 40];
    for (int32_t pp = 1; pp <= 8; pp++)
        for (int32_t m = 1; m <= 40; m += 3)
            for (int32_t stage = 0; stage < pp; stage++) {
                assert_int_equal(step_schedule_order(STEP_SCHEDULE_ZB_H1, pp, 1, m, stage, it), SIM_OK);
                char seen[3][40];
                memset(seen, 0, sizeof seen);
                int held = 0, peak = 0;
                for (int32_t i = 0; i < 3 * m; i++) {
                    assert_true(it[i].pass >= 0 && it[i].pass <= 2 && it[i].chunk == 0);
                    assert_true(it[i].microbatch >= 0 && it[i].microbatch < m);
                    assert_int_equal(seen[it[i].pass][it[i].microbatch]++, 0);
                    if (it[i].pass) /* B after F, W after B */
                        assert_int_equal(seen[it[i].pass - 1][it[i].microbatch], 1);
                    held += it[i].pass == 0 ? 1 : it[i].pass == 2 ? -1 : 0;
                    peak = held > peak ? held : peak;
                }
                assert_true(peak <= (pp < m ? pp : m)); /* 1F1B's peak on stage 0 */
                /* F and B in 1F1B's order */
                step_sched_item_t ref[2 * 40];
                assert_int_equal(step_schedule_order(STEP_SCHEDULE_1F1B, pp, 1, m, stage, ref), SIM_OK);
                int32_t k = 0;
                for (int32_t i = 0; i < 3 * m; i++)
                    if (it[i].pass < 2) {
                        assert_int_equal(it[i].pass, ref[k].pass);
                        assert_int_equal(it[i].microbatch, ref[k].microbatch);
                        k++;
                    }
            }
    assert_int_equal(step_schedule_order(STEP_SCHEDULE_ZB_H1, 4, 2, 8, 0, it), SIM_EINVAL);
    assert_true(step_schedule_splits(STEP_SCHEDULE_ZB_H1));
    assert_false(step_schedule_splits(STEP_SCHEDULE_1F1B));
}

/* The weight-gradient share of a layer: a GEMM with weights, its forward's compute; else nothing. */
static void test_wgrad_share(void **state) {
    (void)state;
    const model_job_t job = job_of(1, 2, 1, 1024, MODEL_COMPAT_CORRECTED);
    model_estimate_t est;
    assert_int_equal(model_estimate(&job, &est), MODEL_OK);
    int gemms = 0;
    for (int i = 0; i < est.block.n_layers; i++) {
        const model_layer_t *ly = &est.block.layers[i];
        const double w = model_layer_wgrad_s(ly);
        if (ly->tensor_core && ly->weights_gb > 0.0) {
            assert_true(w == ly->fwd.comp_s && w < ly->bwd.comp_s);
            gemms++;
        } else {
            assert_true(w == 0.0);
        }
    }
    assert_true(gemms >= 4); /* qkv, projection, fc1, fc2 */
}

/* DualPipe's closed form as the DeepSeek-V3 report's table 2 gives it, beside ZB1P and 1F1B in the
 * report's notation (B the whole backward): 1F1B (PP - 1)(F + B), ZB1P (PP - 1)(F + B - 2W), DualPipe
 * (PP/2 - 1)(F&B + B - 3W), with 2 copies of the parameters and PP + 1 microbatches held. */
static void test_dualpipe_form(void **state) {
    (void)state;
    const double f = 1.0, bi = 1.3, w = 0.9, fb = 2.5; /* B = bi + w = 2.2 */
    model_pipeline_form_t d, z, o;
    assert_int_equal(model_pipeline_form(MODEL_PIPELINE_DUALPIPE, 8, 16, f, bi, w, fb, &d), MODEL_OK);
    assert_int_equal(model_pipeline_form(MODEL_PIPELINE_ZB_H1, 8, 16, f, bi, w, -1, &z), MODEL_OK);
    assert_int_equal(model_pipeline_form(MODEL_PIPELINE_1F1B, 8, 16, f, bi, w, -1, &o), MODEL_OK);
    check_close("DualPipe", d.bubble_s, 3.0 * (fb + (bi + w) - 3.0 * w), 1e-12);
    check_close("ZB1P", z.bubble_s, 7.0 * (f + (bi + w) - 2.0 * w), 1e-12);
    check_close("1F1B", o.bubble_s, 7.0 * (f + bi + w), 1e-12);
    assert_true(d.bubble_s < z.bubble_s && z.bubble_s < o.bubble_s);
    assert_true(d.weight_copies == 2.0 && d.activation_microbatches == 9.0);
    assert_true(z.activation_microbatches == 8.0 && o.activation_microbatches == 8.0);
    /* no overlap: F&B = F + B */
    assert_int_equal(model_pipeline_form(MODEL_PIPELINE_DUALPIPE, 8, 16, f, bi, w, -1, &d), MODEL_OK);
    check_close("DualPipe, no overlap", d.bubble_s, 3.0 * (f + 2.0 * (bi + w) - 3.0 * w), 1e-12);
    /* outside the forms' domains */
    assert_int_equal(model_pipeline_form(MODEL_PIPELINE_DUALPIPE, 7, 16, f, bi, w, fb, &d), MODEL_EINVAL);
    assert_int_equal(model_pipeline_form(MODEL_PIPELINE_ZB_H1, 8, 4, f, bi, w, -1, &z), MODEL_EINVAL);
    assert_int_equal(model_pipeline_form(MODEL_PIPELINE_ZB_H1, 8, 16, f, 0.5, w, -1, &z), MODEL_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zb_h1_closed_form), cmocka_unit_test(test_zb_h1_order),
        cmocka_unit_test(test_zb_h1_estimate),    cmocka_unit_test(test_wgrad_share),
        cmocka_unit_test(test_dualpipe_form),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
