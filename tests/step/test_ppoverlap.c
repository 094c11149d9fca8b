/* step/test_ppoverlap.c - pipeline sends and receives overlapped with compute (training.pp_comm_overlap,
 * Megatron-Core's overlap_p2p_comm on the interleaved schedule) in the closed form and in the
 * simulated step.
 *
 * The closed form (docs/model-formulas.md, section 16.6) takes the transfers out of a stage's time per
 * microbatch and charges the pipeline's fill and drain, 2 (pp v - 1) transfers, while one transfer
 * fits under one microbatch's forward of one model chunk. The simulated step runs the interleaved
 * schedule with sends that do not hold up the sender. With analytic communication, every hop the same
 * (each stage in a domain of its own) and equal stages, they must agree: the step time within 1% (the
 * acceptance bound) and to a picosecond per operation, for pp 2 and 4, 2 and 4 virtual stages, 8 and
 * 16 microbatches, transfers from a few percent of a chunk's forward to nearly all of it. Without
 * interleaving the option changes nothing. */
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

/* A small GPT on A100s: pp stages, one GPU each, each in an NVLink domain of its own. */
static model_job_t job_of(int64_t pp, int64_t v, int64_t nmb, double ib_gb_per_s, int overlap) {
    model_job_t job;
    memset(&job, 0, sizeof job);
    assert_int_equal(model_system_preset("A100", &job.system), MODEL_OK);
    job.system.nvlink_size = 1;
    job.system.ib_gb_per_s = ib_gb_per_s;
    const model_transformer_t t = {.name = "small",
                                   .seq_len = 2048,
                                   .hidden = 2048,
                                   .heads = 16,
                                   .layers = 16,
                                   .ffn_hidden = 8192,
                                   .vocab = 50257};
    job.model = t;
    const model_parallel_t par = {MODEL_STRATEGY_1D, 1, 1, 1, 1, pp, 1, 1, 1, 1, 1, 1};
    job.par = par;
    job.gpus = pp;
    job.global_batch = nmb;
    job.compat = MODEL_COMPAT_CORRECTED;
    job.training.optimizer_step = 1;
    job.training.interleave = v;
    job.training.pp_comm_overlap = overlap;
    model_issue_t issue;
    if (model_job_check(&job, &issue) != MODEL_OK)
        fail_msg("bad test job: %s %s (%s)", issue.field, issue.value, issue.allowed);
    return job;
}

static step_result_t simulate(const model_job_t *job) {
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.comm = SIM_COMM_ANALYTIC;
    cfg.granularity = STEP_GRANULARITY_MICROBATCH;
    if (job->training.interleave > 1) {
        cfg.schedule = STEP_SCHEDULE_INTERLEAVED;
        cfg.virtual_stages = (int32_t)job->training.interleave;
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

/* Interleaved: the simulated step equals the closed form while a transfer fits under a chunk's
 * forward; the closed form is below the one without the overlap. */
static void test_interleaved(void **state) {
    (void)state;
    const int64_t pps[] = {2, 4}, vs[] = {2, 4}, nmbs[] = {8, 16};
    const double ib[] = {25.0, 10.0, 5.0, 3.0};
    for (size_t a = 0; a < 2; a++)
        for (size_t b = 0; b < 2; b++)
            for (size_t m = 0; m < 2; m++)
                for (size_t k = 0; k < 4; k++) {
                    const model_job_t job = job_of(pps[a], vs[b], nmbs[m], ib[k], 1);
                    static model_estimate_t e, off;
                    assert_int_equal(model_estimate(&job, &e), MODEL_OK);
                    const model_summary_t *su = &e.summary;
                    const double chunk_fwd_s =
                        su->block_t_fwd_s * (double)su->layers_per_stage / (double)vs[b];
                    if (su->p2p_one_s > chunk_fwd_s)
                        continue; /* beyond the closed form's range: test_beyond */
                    const step_result_t r = simulate(&job);
                    const double tol = 1e-12 * (double)r.operations + 1e-9 * su->iteration_time_s;
                    print_message(
                        "pp %lld v %lld nmb %lld ib %g: d / F_c %.3f, step %.9f s, closed form %.9f "
                        "s, exposed pp %.9f s\n",
                        (long long)pps[a], (long long)vs[b], (long long)nmbs[m], ib[k],
                        su->p2p_one_s / chunk_fwd_s, r.step_time_s, su->iteration_time_s, su->pp_comm_s);
                    assert_true(fabs(r.step_time_s - su->iteration_time_s) <= 0.01 * su->iteration_time_s);
                    if (fabs(r.step_time_s - su->iteration_time_s) > tol)
                        fail_msg("step %.12g s, closed form %.12g s", r.step_time_s, su->iteration_time_s);
                    const double fill = 2.0 * (double)(pps[a] * vs[b] - 1) * su->p2p_one_s;
                    assert_true(fabs(su->pp_comm_s - fill) <= 1e-12 * fill);
                    const model_job_t plain = job_of(pps[a], vs[b], nmbs[m], ib[k], 0);
                    assert_int_equal(model_estimate(&plain, &off), MODEL_OK);
                    assert_true(su->iteration_time_s < off.summary.iteration_time_s);
                }
}

/* Beyond the range (a transfer longer than a chunk's forward) the transfers set the pace: the closed
 * form adds (d - F_c) per microbatch and chunk, more than the simulated step shows. */
static void test_beyond(void **state) {
    (void)state;
    const double ib[] = {1.0, 0.2};
    for (size_t k = 0; k < 2; k++) {
        const model_job_t job = job_of(4, 2, 16, ib[k], 1);
        static model_estimate_t e;
        assert_int_equal(model_estimate(&job, &e), MODEL_OK);
        const model_summary_t *su = &e.summary;
        const double chunk_fwd_s = su->block_t_fwd_s * (double)su->layers_per_stage / 2.0;
        assert_true(su->p2p_one_s > chunk_fwd_s);
        const step_result_t r = simulate(&job);
        print_message("beyond: ib %g d / F_c %.3f: step %.6f s, closed form %.6f s (%+.2f%%)\n", ib[k],
                      su->p2p_one_s / chunk_fwd_s, r.step_time_s, su->iteration_time_s,
                      100.0 * (r.step_time_s / su->iteration_time_s - 1.0));
        assert_true(r.step_time_s <= su->iteration_time_s);
        assert_true(r.step_time_s >= 0.8 * su->iteration_time_s);
    }
}

/* Without interleaving Megatron-Core turns overlap_p2p_comm off: the same closed form and the same
 * simulated step. */
static void test_plain_1f1b_unchanged(void **state) {
    (void)state;
    const model_job_t on = job_of(4, 1, 8, 2.0, 1), off = job_of(4, 1, 8, 2.0, 0);
    static model_estimate_t a, b;
    assert_int_equal(model_estimate(&on, &a), MODEL_OK);
    assert_int_equal(model_estimate(&off, &b), MODEL_OK);
    assert_true(a.summary.iteration_time_s == b.summary.iteration_time_s);
    const step_result_t ra = simulate(&on), rb = simulate(&off);
    assert_true(ra.step_time_s == rb.step_time_s);
    /* and a value other than 0 or 1 is refused with the field named */
    model_job_t bad = on;
    bad.training.pp_comm_overlap = 2;
    model_issue_t issue;
    assert_int_equal(model_job_check(&bad, &issue), MODEL_EINVAL);
    assert_string_equal(issue.field, "training.pp_comm_overlap");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interleaved),
        cmocka_unit_test(test_beyond),
        cmocka_unit_test(test_plain_1f1b_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
