/* step/test_distopt.c - Megatron-Core's distributed optimizer with --overlap-grad-reduce and
 * --overlap-param-gather (training.dp_comm sharded-overlap) in the closed form and in the simulated
 * step.
 *
 * The closed form (model_estimate, docs/model-formulas.md, section 16.5) groups the first stage's
 * parts into Megatron-Core's buckets (model_dp_buckets) and charges the all-gathers the first one
 * whole and each later one by what exceeds the forward of the bucket before it, the reduce-scatters by
 * how far the last ends after the last microbatch's backward. The simulated step runs the same buckets
 * as collectives on the data-parallel stream beside the compute. With analytic communication they
 * must agree: the step time within 1% (the acceptance bound) and to a picosecond per operation, on
 * jobs where the compute hides the communication, hides part of it, and where it dominates. With
 * every block filling a bucket of its own and no edge layers the buckets are sharded's per-block
 * ones, and the two modes give the same step. */
#include <math.h>
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

typedef step_test_spec_t spec_t;

static step_result_t simulate(const model_job_t *job, int32_t v) {
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.comm = SIM_COMM_ANALYTIC;
    cfg.granularity = STEP_GRANULARITY_LAYER;
    if (v > 1) {
        cfg.schedule = STEP_SCHEDULE_INTERLEAVED;
        cfg.virtual_stages = v;
    }
    step_t *s = NULL;
    char err[256];
    if (step_new(job, &cfg, NULL, &s, err, sizeof err) != SIM_OK)
        fail_msg("step_new: %s", err);
    if (step_run(s) != SIM_OK)
        fail_msg("step_run: %s", step_last_error(s));
    step_result_t r;
    assert_int_equal(step_result(s, &r), SIM_OK);
    step_free(s);
    return r;
}

static const char *describe(const spec_t *sp, char *buf, size_t n) {
    snprintf(buf, n, "tp %lld dp %lld pp %lld v %lld layers %lld gbs %lld ib %g embedding %d dp_comm %s",
             (long long)sp->tp, (long long)sp->dp, (long long)sp->pp, (long long)sp->interleave,
             (long long)sp->layers, (long long)sp->gbs, sp->ib_gb_per_s, sp->embedding,
             model_dp_comm_name(sp->dp_comm));
    return buf;
}

static void close_to(const char *what, const char *quantity, double sim, double model, int64_t ops) {
    const double tol = 1e-12 * (double)ops + 1e-9 * fabs(model);
    if (fabs(sim - model) > tol)
        fail_msg("%s: %s simulated %.12g s, closed form %.12g s (difference %.3g s, allowed %.3g s)", what,
                 quantity, sim, model, sim - model, tol);
}

static model_summary_t check_job(const char *what, const model_job_t *job, int32_t v);

/* The step against the closed form; returns the model's summary. */
static model_summary_t check(const spec_t *sp) {
    char what[200];
    describe(sp, what, sizeof what);
    const model_job_t job = step_test_gpt_job(sp);
    return check_job(what, &job, (int32_t)(sp->interleave > 1 ? sp->interleave : 1));
}

static model_summary_t check_job(const char *what, const model_job_t *jp, int32_t v) {
    const model_job_t job = *jp;
    static model_estimate_t e;
    assert_int_equal(model_estimate(&job, &e), MODEL_OK);
    const step_result_t r = simulate(&job, v);
    const model_summary_t *su = &e.summary;
    print_message("%s: step %.9f s (closed form %.9f s), exposed dp %.9f s (closed form %.9f s: all-gather "
                  "%.9f, reduce-scatter %.9f)\n",
                  what, r.step_time_s, su->iteration_time_s, r.breakdown.exposed_dp_comm_s, su->dp_comm_s,
                  su->dp_allgather_s, su->dp_reducescatter_s);
    assert_true(fabs(r.step_time_s - su->iteration_time_s) <= 0.01 * su->iteration_time_s);
    close_to(what, "step time", r.step_time_s, su->iteration_time_s, r.operations);
    close_to(what, "exposed data-parallel communication", r.breakdown.exposed_dp_comm_s, su->dp_comm_s,
             r.operations);
    return e.summary;
}

/* Megatron-Core's bucket size and the grouping rule. */
static void test_buckets(void **state) {
    (void)state;
    assert_true(model_dp_bucket_params(8) == 40e6);
    assert_true(model_dp_bucket_params(64) == 64e6);
    /* backward order: 25 M blocks fill a 40 M bucket two at a time; the rest form one more */
    const double params[] = {25e6, 25e6, 25e6, 25e6, 25e6, 60e6, 10e6};
    int of[7];
    assert_int_equal(model_dp_buckets(params, 7, 40e6, of), 4);
    const int want[] = {0, 0, 1, 1, 2, 2, 3};
    for (int i = 0; i < 7; i++)
        assert_int_equal(of[i], want[i]);
    assert_int_equal(model_dp_buckets(params, 2, 40e6, of), 1);
    assert_int_equal(model_dp_buckets(params, 0, 40e6, of), 0);
}

/* Hidden (the A100's 25 GB/s scale-out), partly hidden (2 GB/s) and dominant (0.2 GB/s): six blocks
 * of 25 M parameters per GPU (tp 2) in three buckets, with and without the embedding and output layer
 * (the embedding's 51 M parameters join the first block's bucket). */
static void test_one_stage(void **state) {
    (void)state;
    const double ib[] = {400.0, 0.0, 0.2};
    for (size_t a = 0; a < sizeof ib / sizeof ib[0]; a++)
        for (int emb = 0; emb < 2; emb++) {
            const spec_t sp = {2, 4, 1, 6, 16, 0, ib[a], emb, MODEL_DP_SHARDED_OVERLAP};
            const model_summary_t su = check(&sp);
            if (a == 0 && !emb) /* hidden: only the first all-gather and the last reduce-scatter show */
                assert_true(fabs(su.dp_comm_s - su.dp_allgather_one_s - su.dp_reducescatter_one_s) <=
                            1e-12 * su.dp_comm_s);
            if (a == 2) /* dominant: the communication is most of the step */
                assert_true(su.dp_comm_s > 0.5 * su.iteration_time_s);
        }
}

/* With each block a bucket of its own (tp 1: 50 M parameters) and no edge layers, Megatron-Core's
 * buckets are sharded's per-block ones: the same closed form and the same simulated step. */
static void test_equals_sharded(void **state) {
    (void)state;
    const double ib[] = {0.0, 2.0};
    for (size_t a = 0; a < sizeof ib / sizeof ib[0]; a++) {
        const spec_t ov = {1, 4, 1, 4, 16, 0, ib[a], 0, MODEL_DP_SHARDED_OVERLAP};
        const spec_t sh = {1, 4, 1, 4, 16, 0, ib[a], 0, MODEL_DP_SHARDED};
        const model_summary_t a_ov = check(&ov), a_sh = check(&sh);
        assert_true(fabs(a_ov.dp_comm_s - a_sh.dp_comm_s) <= 1e-12 * a_sh.dp_comm_s);
        assert_true(fabs(a_ov.iteration_time_s - a_sh.iteration_time_s) <= 1e-12 * a_sh.iteration_time_s);
        const model_job_t j_ov = step_test_gpt_job(&ov), j_sh = step_test_gpt_job(&sh);
        const step_result_t r_ov = simulate(&j_ov, 1), r_sh = simulate(&j_sh, 1);
        assert_true(fabs(r_ov.step_time_s - r_sh.step_time_s) <= 1e-12 * (double)r_sh.operations);
    }
}

/* FP8 parameters gathered (training.fp8_param_gather, Megatron's --fp8-param-gather): on H100s with
 * precision fp8, sharded-overlap's buckets and sharded's per-block collectives all-gather the FP8 GEMM
 * weights in one byte. The closed form's first all-gather is exactly the collective of the stored weights,
 * the reduce-scatter unchanged, and the simulated step reproduces the closed form (step time and
 * exposed data-parallel time, to a picosecond per operation) with the communication hidden, partly
 * hidden and dominant; the data-parallel time is below the BF16 gather's wherever it shows. */
static void test_fp8_param_gather(void **state) {
    (void)state;
    const double ib[] = {0.0, 2.0, 0.2};
    const model_dp_comm_t modes[] = {MODEL_DP_SHARDED_OVERLAP, MODEL_DP_SHARDED};
    for (size_t a = 0; a < sizeof ib / sizeof ib[0]; a++)
        for (size_t m = 0; m < 2; m++) {
            const spec_t sp = {1, 4, 1, 4, 16, 0, ib[a], 0, modes[m]};
            model_job_t job = step_test_gpt_job(&sp);
            assert_int_equal(model_system_preset("H100", &job.system), MODEL_OK);
            job.system.nvlink_size = 1;
            if (ib[a] > 0.0)
                job.system.ib_gb_per_s = ib[a];
            job.training.precision = MODEL_PRECISION_FP8;
            static model_estimate_t bf16_gather;
            assert_int_equal(model_estimate(&job, &bf16_gather), MODEL_OK);
            job.training.fp8_param_gather = 1;
            model_issue_t issue;
            if (model_job_check(&job, &issue) != MODEL_OK)
                fail_msg("bad test job: %s %s (%s)", issue.field, issue.value, issue.allowed);
            char what[240];
            snprintf(what, sizeof what, "H100 fp8, fp8_param_gather, ib %g, dp_comm %s", ib[a],
                     model_dp_comm_name(modes[m]));
            const model_summary_t su = check_job(what, &job, 1);
            /* one block a bucket (50 M parameters, tp 1): the first all-gather is one block's weights as
             * stored, its FP8 GEMM weights in one byte (model-formulas.md, section 16.8) */
            static model_estimate_t fp8_gather;
            assert_int_equal(model_estimate(&job, &fp8_gather), MODEL_OK);
            const double blk_gb = bf16_gather.block.weights_gb;
            const double stored_gb = blk_gb - fp8_gather.block.fp8_param_saving_gb;
            assert_true(fp8_gather.block.fp8_param_saving_gb > 0.4 * blk_gb && stored_gb < 0.6 * blk_gb);
            const double ag_s =
                model_collective_time_s(&job.system, job.compat, MODEL_COLL_ALLGATHER, stored_gb, sp.dp, 1);
            assert_true(fabs(su.dp_allgather_one_s - ag_s) <= 1e-12 * ag_s);
            assert_true(fabs(su.dp_reducescatter_one_s - bf16_gather.summary.dp_reducescatter_one_s) <=
                        1e-12 * su.dp_reducescatter_one_s);
            assert_true(su.dp_allgather_s < bf16_gather.summary.dp_allgather_s);
        }
    /* bf16 refuses it, and so does a data-parallel all-reduce (no parameters to gather) */
    const spec_t sp = {1, 4, 1, 4, 16, 0, 0.0, 0, MODEL_DP_SHARDED_OVERLAP};
    model_job_t job = step_test_gpt_job(&sp);
    job.training.fp8_param_gather = 1;
    model_issue_t issue;
    assert_int_equal(model_job_check(&job, &issue), MODEL_EINVAL);
    assert_string_equal(issue.field, "training.fp8_param_gather");
    assert_int_equal(model_system_preset("H100", &job.system), MODEL_OK);
    job.training.precision = MODEL_PRECISION_FP8;
    job.training.dp_comm = MODEL_DP_ALLREDUCE;
    assert_int_equal(model_job_check(&job, &issue), MODEL_EINVAL);
    assert_string_equal(issue.field, "training.fp8_param_gather");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buckets),
        cmocka_unit_test(test_one_stage),
        cmocka_unit_test(test_equals_sharded),
        cmocka_unit_test(test_fp8_param_gather),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
