/* step/test_fp8_params.c - FP8 parameters (training.fp8_param_gather, Megatron-Core --fp8-param-gather)
 * in the closed form and in the simulated step.
 *
 * With FP8 parameters the FP8 layers' GEMM weights are stored in one byte instead of two (no BF16
 * copy; the FP8 transpose is still kept), the gradients and the optimizer states do not change, and
 * the distributed optimizer's parameter all-gather moves the stored bytes while the gradient
 * reduce-scatter still moves BF16. Checked here: the memory parts as closed forms of the FP8 weight
 * count; the refusals; the simulated step against the closed form with analytic communication (to a
 * picosecond per operation, as the distributed optimizer's own test); and the data-parallel bytes each
 * GPU sends on a network, (g - 1) / g of the stored weights less. */
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

/* A small GPT on DGX H100 (FP8 peak): tp 2 inside NVLink domains of 2, dp and pp across them. */
static model_job_t job_of(int64_t dp, int64_t pp, double ib_gb_per_s, model_dp_comm_t dpc, int fp8_params) {
    model_job_t job;
    memset(&job, 0, sizeof job);
    assert_int_equal(model_system_preset("DGX-H100", &job.system), MODEL_OK);
    job.system.nvlink_size = 2;
    if (ib_gb_per_s > 0.0)
        job.system.ib_gb_per_s = ib_gb_per_s;
    const model_transformer_t t = {.name = "small",
                                   .seq_len = 2048,
                                   .hidden = 2048,
                                   .heads = 16,
                                   .layers = 6 * pp,
                                   .ffn_hidden = 8192,
                                   .vocab = 50257};
    job.model = t;
    const model_parallel_t par = {MODEL_STRATEGY_1D, dp, 2, 2, 1, pp, 1, 1, 2, 1, 1, 1};
    job.par = par;
    job.gpus = 2 * dp * pp;
    job.global_batch = 16;
    job.compat = MODEL_COMPAT_CORRECTED;
    job.training.optimizer_step = 1;
    job.training.dp_comm = dpc;
    job.training.precision = MODEL_PRECISION_FP8;
    job.training.fp8_param_gather = fp8_params;
    model_issue_t issue;
    if (model_job_check(&job, &issue) != MODEL_OK)
        fail_msg("bad test job: %s %s (%s)", issue.field, issue.value, issue.allowed);
    return job;
}

static void near(const char *what, double got, double want) {
    if (fabs(got - want) > 1e-12 * fmax(1.0, fabs(want)))
        fail_msg("%s: %.15g, closed form %.15g", what, got, want);
}

/* The memory parts: the FP8 GEMM weights (N parameters per block, from the FP8 copies without FP8
 * parameters: 2 bytes each) are stored in 1 byte, the copies shrink to the transpose (1 byte), the
 * gradients and the optimizer states stay; N bytes less of each, 2 N in all. */
static void test_memory(void **state) {
    (void)state;
    static model_estimate_t off, on;
    for (int k = 0; k < 2; k++) {
        const model_dp_comm_t dpc = k ? MODEL_DP_SHARDED : MODEL_DP_SHARDED_OVERLAP;
        model_job_t j_off = job_of(4, 2, 0.0, dpc, 0), j_on = job_of(4, 2, 0.0, dpc, 1);
        assert_int_equal(model_estimate(&j_off, &off), MODEL_OK);
        assert_int_equal(model_estimate(&j_on, &on), MODEL_OK);
        const double n_l = (double)off.summary.layers_per_stage;
        const double fp8_params = off.block.fp8_weights_gb / 2e-9; /* per block */
        assert_true(fp8_params > 0.0);
        near("saving per block", on.block.fp8_param_saving_gb, fp8_params * 1e-9);
        assert_true(off.block.fp8_param_saving_gb == 0.0);
        near("FP8 copies", on.summary.fp8_weights_gb, off.summary.fp8_weights_gb / 2.0);
        near("weights", on.summary.weights_gb, off.summary.weights_gb - n_l * fp8_params * 1e-9);
        near("gradients", on.summary.grads_gb, off.summary.grads_gb);
        near("optimizer states", on.summary.optimizer_gb, off.summary.optimizer_gb);
        near("activations", on.summary.activations_gb, off.summary.activations_gb);
        near("memory", on.summary.memory_gb, off.summary.memory_gb - 2.0 * n_l * fp8_params * 1e-9);
        /* the compute is the same; only the all-gather moves fewer bytes */
        near("compute", on.summary.compute_s, off.summary.compute_s);
        assert_true(on.summary.dp_allgather_one_s < off.summary.dp_allgather_one_s);
        near("reduce-scatter", on.summary.dp_reducescatter_one_s, off.summary.dp_reducescatter_one_s);
    }
}

/* Refused: BF16 (no FP8 weights) and a data-parallel mode without the distributed optimizer. */
static void test_refused(void **state) {
    (void)state;
    model_job_t j = job_of(4, 2, 0.0, MODEL_DP_SHARDED_OVERLAP, 1);
    model_issue_t is;
    j.training.precision = MODEL_PRECISION_BF16;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "training.fp8_param_gather");
    j = job_of(4, 2, 0.0, MODEL_DP_SHARDED_OVERLAP, 1);
    j.training.dp_comm = MODEL_DP_ALLREDUCE;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "training.fp8_param_gather");
    j.training.fp8_param_gather = 2;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
}

/* The simulated step with analytic communication against the closed form, where the data-parallel
 * communication is partly hidden (the preset's network) and where it dominates (1 GB/s): within 1% and to
 * a picosecond per operation, and FP8 parameters expose less of the all-gathers. */
static void test_step_closed_form(void **state) {
    (void)state;
    const double ib[] = {0.0, 1.0};
    const model_dp_comm_t modes[] = {MODEL_DP_SHARDED_OVERLAP, MODEL_DP_SHARDED};
    for (int a = 0; a < 2; a++)
        for (int k = 0; k < 2; k++) {
            double exposed[2];
            for (int on = 0; on < 2; on++) {
                const model_job_t job = job_of(4, 1, ib[a], modes[k], on);
                static model_estimate_t e;
                assert_int_equal(model_estimate(&job, &e), MODEL_OK);
                step_t *s = step_test_run(&job, SIM_COMM_ANALYTIC, NULL);
                step_result_t r;
                assert_int_equal(step_result(s, &r), SIM_OK);
                step_free(s);
                const double tol = 1e-12 * (double)r.operations + 1e-9 * e.summary.iteration_time_s;
                print_message("ib %g dp_comm %s fp8 params %d: step %.9f s, closed form %.9f s, exposed dp "
                              "%.9f s (closed form %.9f s)\n",
                              ib[a], model_dp_comm_name(modes[k]), on, r.step_time_s,
                              e.summary.iteration_time_s, r.breakdown.exposed_dp_comm_s, e.summary.dp_comm_s);
                assert_true(fabs(r.step_time_s - e.summary.iteration_time_s) <=
                            0.01 * e.summary.iteration_time_s);
                assert_true(fabs(r.step_time_s - e.summary.iteration_time_s) <= tol);
                assert_true(fabs(r.breakdown.exposed_dp_comm_s - e.summary.dp_comm_s) <= tol);
                exposed[on] = r.breakdown.exposed_dp_comm_s;
            }
            if (ib[a] > 0.0) /* the communication-bound job: the smaller all-gathers show */
                assert_true(exposed[1] < exposed[0]);
        }
}

/* The data-parallel bytes per GPU on a network (the ideal star): with FP8 parameters each all-gather
 * moves the stored bytes, so every GPU sends (g - 1) / g x the saving x its blocks less. */
static void test_dp_bytes(void **state) {
    (void)state;
    double per_gpu[2], saving_gb = 0.0, n_l = 0.0;
    const int64_t g = 4;
    for (int on = 0; on < 2; on++) {
        const model_job_t job = job_of(g, 2, 0.0, MODEL_DP_SHARDED_OVERLAP, on);
        static model_estimate_t e;
        assert_int_equal(model_estimate(&job, &e), MODEL_OK);
        if (on) {
            saving_gb = e.block.fp8_param_saving_gb;
            n_l = (double)e.summary.layers_per_stage;
        }
        step_traffic_t t;
        step_test_traffic(&job, &t);
        per_gpu[on] = t.per_gpu_bytes[STEP_TRAFFIC_DP];
    }
    const double want = (double)(g - 1) / (double)g * saving_gb * 1e9 * n_l;
    print_message("dp bytes per GPU: %.6g without FP8 parameters, %.6g with; difference %.6g, closed form "
                  "%.6g\n",
                  per_gpu[0], per_gpu[1], per_gpu[0] - per_gpu[1], want);
    assert_true(want > 0.0);
    assert_true(fabs((per_gpu[0] - per_gpu[1]) - want) <= 1e-9 * per_gpu[0]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_step_closed_form),
        cmocka_unit_test(test_dp_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
