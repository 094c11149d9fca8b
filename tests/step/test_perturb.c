/* step/test_perturb.c - perturbations of the step (step.h, "Per-kernel jitter", compute_slowdown):
 *
 * - One GPU of stage k slowed by f >= 1, 1F1B, equal stages (forward t_f, backward t_b, W = t_f +
 *   t_b per microbatch), m microbatches, analytic communication on an ideal (free) network: the
 *   step is the closed form of 1F1B with that stage's time multiplied by f, to 1e-9 relative:
 *       T = max(P, Q)
 *       P = (m + pp - 1) W + (f - 1) W max(1, m - (pp - 1 - k))
 *       Q = k t_f + B_k + (m f W - n_k f t_f) + k t_b,   n_k = min(m, pp - k),
 *           B_k = max_{d = 0 .. pp-1-k} ( min(m, pp - k - d) f t_f + d W ).
 *   P is the unperturbed critical path ((m + pp - 1) W), which crosses stage k for max(1, m - (pp -
 *   1 - k)) microbatches, each now (f - 1) W longer. Q is stage k as the bottleneck: its first
 *   forward starts after k upstream forwards; it runs its n_k warm-up forwards back to back; its
 *   first backward waits (B_k) for the slowest of the paths through the d stages after it, each of
 *   which runs min(m, pp - k - d) forwards at stage k's pace before its own first backward; from
 *   then on stage k never waits once f t_b >= W (f >= 1 + t_f / t_b) and does the rest of its m f W
 *   of work; the last gradient then crosses the k stages before it (k t_b). Q wins for large f, P
 *   near f = 1; for the last stage both give (m - 1) f W + (pp - 1) W + f W, the textbook
 *   (m - 1) max_i W_i + sum_i W_i. (Checked against an exact longest-path evaluation of 1F1B's
 *   dependency graph over 32,000 cases, t_b / t_f from 1 to 3, before it was written here.)
 *   Its tensor- and data-parallel peers wait for it at their collectives, so the whole stage runs at
 *   its pace. A faster GPU (f < 1) gives the unperturbed step exactly; the critical GPU is the
 *   slowed one when its stage (stage 0 under 1F1B) ends the step.
 * - Jitter: the same seed gives the same step to the picosecond, another seed another step; cv 0 is
 *   no jitter at all (the same step as without, collapse included); the draws have mean 1 and the
 *   requested coefficient of variation; every compute operation is perturbed independently of the
 *   order of building (the same GPU's draws do not change when other GPUs are slowed).
 * - The collapse: AUTO simulates every GPU under perturbations, APPROX is refused; factors <= 0 are
 *   refused. */
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

/* tp 2 x dp 2 per stage, pp stages, m microbatches; communication free (infinite bandwidth, no
 * latency: every collective and hop takes 0 ps), no optimizer step. The operations last milliseconds,
 * so the engine's rounding of each to a picosecond stays far below 1e-9 of the step. */
static model_job_t job_of(int64_t pp, int64_t m) {
    model_job_t job;
    memset(&job, 0, sizeof job);
    assert_int_equal(model_system_preset("A100", &job.system), MODEL_OK);
    job.system.ib_gb_per_s = job.system.nvlink_gb_per_s = 1e15;
    job.system.ib_latency_s = job.system.nvlink_latency_s = 0.0;
    job.system.nvlink_size = 2;
    const model_transformer_t t = {
        .name = "test", .seq_len = 2048, .hidden = 4096, .heads = 32, .layers = 2 * pp, .ffn_hidden = 16384};
    job.model = t;
    job.gpus = 4 * pp;
    job.global_batch = 2 * m;
    const model_parallel_t par = {MODEL_STRATEGY_1D, 2, 2, 2, 1, pp, 1, 1, 2, 1, 1, 1};
    job.par = par;
    job.compat = MODEL_COMPAT_REFERENCE;
    assert_int_equal(model_job_check(&job, NULL), MODEL_OK);
    return job;
}

typedef struct outcome {
    double step_s;
    step_result_t r;
    double compute_s;    /* GPU 0's compute time */
    double fwd_s, bwd_s; /* GPU 0's forward and backward compute time */
} outcome_t;

static outcome_t simulate(const model_job_t *job, const double *slow, step_jitter_t jit, step_collapse_t c) {
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.comm = SIM_COMM_ANALYTIC;
    cfg.collapse = c;
    cfg.compute_slowdown = slow;
    cfg.jitter = jit;
    step_t *s = NULL;
    char err[256];
    if (step_new(job, &cfg, NULL, &s, err, sizeof err) != SIM_OK)
        fail_msg("step_new: %s", err);
    assert_int_equal(step_run(s), SIM_OK);
    outcome_t o;
    memset(&o, 0, sizeof o);
    assert_int_equal(step_result(s, &o.r), SIM_OK);
    o.step_s = o.r.step_time_s;
    const sim_engine_t *e = step_engine(s);
    for (sim_op_id_t op = 0; op < sim_op_count(e); op++) {
        step_op_t m;
        sim_time_ps_t st, en;
        assert_int_equal(step_op(s, op, &m), SIM_OK);
        sim_op_times(e, op, &st, &en);
        if (m.kind == STEP_OP_COMPUTE && sim_op_gpu(e, op) == 0) {
            o.compute_s += sim_ps_to_s(en - st);
            if (m.pass && strcmp(m.pass, "fwd") == 0)
                o.fwd_s += sim_ps_to_s(en - st);
            else if (m.pass && strcmp(m.pass, "bwd") == 0)
                o.bwd_s += sim_ps_to_s(en - st);
        }
    }
    step_free(s);
    return o;
}

static const step_jitter_t NO_JITTER = {STEP_JITTER_NONE, 0.0, 1};

/* The closed form of the header: 1F1B, stage k of pp slowed by f >= 1, m microbatches. */
static double one_slow_stage_s(int64_t pp, int64_t m, int64_t k, double f, double tf, double tb) {
    const double w = tf + tb;
    const int64_t crossed = m - (pp - 1 - k) > 1 ? m - (pp - 1 - k) : 1;
    const double p = (double)(m + pp - 1) * w + (f - 1.0) * w * (double)crossed;
    double bk = 0.0;
    for (int64_t d = 0; d <= pp - 1 - k; d++) {
        const int64_t fwd = m < pp - k - d ? m : pp - k - d;
        const double v = (double)fwd * f * tf + (double)d * w;
        bk = v > bk ? v : bk;
    }
    const int64_t nk = m < pp - k ? m : pp - k;
    const double q = (double)k * tf + bk + ((double)m * f * w - (double)nk * f * tf) + (double)k * tb;
    return p > q ? p : q;
}

static void test_straggler_closed_form(void **state) {
    (void)state;
    static const int64_t pps[] = {2, 3, 4, 6};
    static const int64_t ms[] = {1, 2, 4, 8};
    static const double fs[] = {1.0, 1.1, 1.25, 1.5, 2.0, 4.0, 0.5};
    int n = 0;
    for (size_t a = 0; a < sizeof pps / sizeof *pps; a++)
        for (size_t b = 0; b < sizeof ms / sizeof *ms; b++) {
            const int64_t pp = pps[a], m = ms[b];
            const model_job_t job = job_of(pp, m);
            /* t_f and t_b from the unperturbed step, every GPU simulated: free communication, so it
             * is all compute (GPU 0 computes m t_f forward and m t_b backward) and the step is
             * (m + pp - 1) W */
            const outcome_t base = simulate(&job, NULL, NO_JITTER, STEP_COLLAPSE_OFF);
            const double tf = base.fwd_s / (double)m, tb = base.bwd_s / (double)m, w = tf + tb;
            assert_true(fabs(base.fwd_s + base.bwd_s - base.compute_s) <= 1e-12 * base.compute_s);
            assert_true(tb > tf); /* the backward is the longer pass: the max over d matters */
            if (fabs(base.step_s - (double)(m + pp - 1) * w) > 1e-9 * base.step_s)
                fail_msg("pp %lld m %lld: unperturbed step %.12g s, want (m + pp - 1) W = %.12g s",
                         (long long)pp, (long long)m, base.step_s, (double)(m + pp - 1) * w);
            for (int64_t k = 0; k < pp; k++)
                for (size_t c = 0; c < sizeof fs / sizeof *fs; c++) {
                    const double f = fs[c];
                    double *slow = malloc((size_t)job.gpus * sizeof *slow);
                    for (int64_t g = 0; g < job.gpus; g++)
                        slow[g] = 1.0;
                    /* the placement tp, pp, dp: GPU 2 k + 1 is tensor rank 1 of stage k, replica 0 */
                    const int32_t straggler = (int32_t)(2 * k + 1);
                    slow[straggler] = f;
                    const outcome_t o = simulate(&job, slow, NO_JITTER, STEP_COLLAPSE_AUTO);
                    free(slow);
                    /* a faster GPU (f < 1) gains nothing: it waits for its peers at their collectives */
                    const double want = f < 1.0 ? base.step_s : one_slow_stage_s(pp, m, k, f, tf, tb);
                    if (fabs(o.step_s - want) > 1e-9 * want)
                        fail_msg("pp %lld m %lld stage %lld f %g: step %.12g s, want the closed form %.12g s",
                                 (long long)pp, (long long)m, (long long)k, f, o.step_s, want);
                    if (f > 1.0)
                        assert_true(o.step_s > base.step_s);
                    if (f != 1.0) {
                        assert_int_equal(o.r.simulated_gpus, (int32_t)job.gpus);
                        assert_int_equal(o.r.collapsed, STEP_FULL);
                        assert_non_null(strstr(o.r.collapse_note, "perturbations"));
                    }
                    /* the breakdown still adds up */
                    const step_breakdown_t *bd = &o.r.breakdown;
                    const double sum = bd->compute_s + bd->exposed_tp_comm_s + bd->exposed_pp_comm_s +
                                       bd->exposed_dp_comm_s + bd->bubble_idle_s;
                    assert_true(fabs(sum - o.step_s) <= 1e-9 * o.step_s);
                    /* 1F1B ends on stage 0; when the straggler is there it is the critical GPU */
                    assert_int_equal(o.r.critical_stage, 0);
                    if (k == 0 && f > 1.0)
                        assert_int_equal(o.r.critical_gpu, straggler);
                    n++;
                }
        }
    printf("  %d straggler runs (every stage, f 0.5 to 4) reproduce 1F1B's closed form to 1e-9\n", n);
}

static void test_jitter_deterministic(void **state) {
    (void)state;
    const model_job_t job = job_of(4, 8);
    const step_jitter_t j1 = {STEP_JITTER_LOGNORMAL, 0.1, 7}, j2 = {STEP_JITTER_LOGNORMAL, 0.1, 8};
    const outcome_t a = simulate(&job, NULL, j1, STEP_COLLAPSE_AUTO);
    const outcome_t b = simulate(&job, NULL, j1, STEP_COLLAPSE_AUTO);
    const outcome_t c = simulate(&job, NULL, j2, STEP_COLLAPSE_AUTO);
    const outcome_t none = simulate(&job, NULL, NO_JITTER, STEP_COLLAPSE_AUTO);
    assert_true(a.step_s == b.step_s);
    assert_true(memcmp(&a.r.breakdown, &b.r.breakdown, sizeof a.r.breakdown) == 0);
    assert_true(a.step_s != c.step_s);
    assert_true(a.step_s != none.step_s);
    assert_int_equal(a.r.collapsed, STEP_FULL);
    /* normal too */
    const step_jitter_t n1 = {STEP_JITTER_NORMAL, 0.1, 7};
    const outcome_t d = simulate(&job, NULL, n1, STEP_COLLAPSE_AUTO);
    assert_true(d.step_s == simulate(&job, NULL, n1, STEP_COLLAPSE_AUTO).step_s);
    assert_true(d.step_s != a.step_s);
    /* cv 0 is no jitter at all: the same collapse and the same step, exactly */
    const step_jitter_t z = {STEP_JITTER_LOGNORMAL, 0.0, 7};
    const outcome_t e = simulate(&job, NULL, z, STEP_COLLAPSE_AUTO);
    assert_true(e.step_s == none.step_s);
    assert_int_equal(e.r.collapsed, none.r.collapsed);
    assert_true(memcmp(&e.r.breakdown, &none.r.breakdown, sizeof e.r.breakdown) == 0);
    /* slowdown factors of 1 are no perturbation either */
    double ones[16];
    for (int i = 0; i < 16; i++)
        ones[i] = 1.0;
    const outcome_t f = simulate(&job, ones, NO_JITTER, STEP_COLLAPSE_AUTO);
    assert_true(f.step_s == none.step_s);
    assert_int_equal(f.r.collapsed, none.r.collapsed);
}

/* The draws: mean 1 and the requested coefficient of variation (200,000 draws: the sample mean's
 * standard error is cv / 447), keyed only by (seed, GPU, key). */
static void test_jitter_distribution(void **state) {
    (void)state;
    static const step_jitter_dist_t dists[] = {STEP_JITTER_LOGNORMAL, STEP_JITTER_NORMAL};
    static const double cvs[] = {0.05, 0.2};
    for (int d = 0; d < 2; d++)
        for (int c = 0; c < 2; c++) {
            const step_jitter_t j = {dists[d], cvs[c], 42};
            double s1 = 0.0, s2 = 0.0, lo = 1e300;
            const int n = 200000;
            for (int i = 0; i < n; i++) {
                const double x =
                    step_jitter_factor(&j, i % 64, step_jitter_key(i & 1, 0, i / 128, (i / 64) & 1));
                s1 += x;
                s2 += x * x;
                lo = x < lo ? x : lo;
            }
            const double mean = s1 / n, sd = sqrt(s2 / n - mean * mean);
            if (fabs(mean - 1.0) > 5.0 * cvs[c] / sqrt((double)n) || fabs(sd / mean - cvs[c]) > 0.02 * cvs[c])
                fail_msg("%s cv %g: mean %.6f, cv %.6f", step_jitter_name(dists[d]), cvs[c], mean, sd / mean);
            assert_true(lo > 0.0);
        }
    /* a draw is a function of (seed, gpu, key) only */
    const step_jitter_t j = {STEP_JITTER_LOGNORMAL, 0.1, 3};
    const uint64_t k = step_jitter_key(1, 0, 5, 2);
    assert_true(step_jitter_factor(&j, 9, k) == step_jitter_factor(&j, 9, k));
    assert_true(step_jitter_factor(&j, 9, k) != step_jitter_factor(&j, 10, k));
    assert_true(step_jitter_factor(&j, 9, k) != step_jitter_factor(&j, 9, step_jitter_key(1, 0, 5, 3)));
    const step_jitter_t none = {STEP_JITTER_NONE, 0.1, 3};
    assert_true(step_jitter_factor(&none, 9, k) == 1.0);
    /* names */
    step_jitter_dist_t out;
    assert_int_equal(step_jitter_parse("lognormal", &out), SIM_OK);
    assert_int_equal(out, STEP_JITTER_LOGNORMAL);
    assert_int_equal(step_jitter_parse("normal", &out), SIM_OK);
    assert_int_equal(out, STEP_JITTER_NORMAL);
    assert_int_equal(step_jitter_parse("gauss", &out), SIM_EINVAL);
}

static void test_refusals(void **state) {
    (void)state;
    const model_job_t job = job_of(2, 2);
    double slow[8] = {1, 1, 1, 2, 1, 1, 1, 1};
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.compute_slowdown = slow;
    cfg.collapse = STEP_COLLAPSE_APPROX;
    cfg.comm = SIM_COMM_ANALYTIC;
    step_t *s = NULL;
    char err[256];
    assert_int_equal(step_new(&job, &cfg, NULL, &s, err, sizeof err), SIM_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err, "approx"));
    cfg.collapse = STEP_COLLAPSE_AUTO;
    slow[5] = 0.0;
    assert_int_equal(step_new(&job, &cfg, NULL, &s, err, sizeof err), SIM_EINVAL);
    assert_non_null(strstr(err, "GPU 5"));
    slow[5] = 1.0;
    cfg.jitter.dist = STEP_JITTER_LOGNORMAL;
    cfg.jitter.cv = -1;
    assert_int_equal(step_new(&job, &cfg, NULL, &s, err, sizeof err), SIM_EINVAL);
    assert_non_null(strstr(err, "cv"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_straggler_closed_form),
        cmocka_unit_test(test_jitter_deterministic),
        cmocka_unit_test(test_jitter_distribution),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
