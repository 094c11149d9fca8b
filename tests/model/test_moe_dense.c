/* model/test_moe_dense.c - leading dense blocks of a mixture of experts (model.moe.first_dense > 0):
 * the estimate equals the hand sums of the dense and the MoE block tables, stage by stage (time per
 * microbatch, the iteration, FLOPs, memory) with pp 1 and pp 2, the dense blocks' weights over dp and
 * the experts' over the expert-data-parallel group; the DeepSeek-V3-like preset estimates and its
 * weights per GPU are the parameters one GPU holds; the schedules the stages are not assembled for are
 * refused. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"

#define TOL 1e-9

static void assert_rel(double got, double want, double tol) {
    if (!(fabs(got - want) <= tol * fabs(want)))
        fail_msg("%.15g, expected %.15g", got, want);
}

/* A small MoE: 4 blocks, 4 experts (top 2) of f_e 1024 beside a dense f of 2816, on 8 H100s. */
static model_job_t small_job(int64_t pp, int64_t first_dense) {
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("Mixtral-8x7B", &j.model), MODEL_OK);
    assert_int_equal(model_system_preset("H100", &j.system), MODEL_OK);
    j.model.seq_len = 1024;
    j.model.hidden = 1024;
    j.model.heads = 8;
    j.model.kv_heads = 8;
    j.model.layers = 4;
    j.model.ffn_hidden = 2816;
    j.model.vocab = 32000;
    j.model.moe.experts = 4;
    j.model.moe.topk = 2;
    j.model.moe.expert_ffn_hidden = 1024;
    j.model.moe.first_dense = first_dense;
    j.gpus = 8;
    j.global_batch = 64;
    j.compat = MODEL_COMPAT_CORRECTED;
    const int64_t dp = 8 / pp;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, dp, 1, 1, 1, pp, 1, 1, 1, 1, dp, pp};
    j.experts_par.ep = 2;
    j.training.embedding = 1;
    j.training.optimizer_step = 1;
    return j;
}

static void tables(const model_job_t *j, model_block_t *moe, model_block_t *dense) {
    model_block_build(j, moe);
    model_job_t d = *j;
    memset(&d.model.moe, 0, sizeof d.model.moe);
    memset(&d.experts_par, 0, sizeof d.experts_par);
    model_block_build(&d, dense);
    assert_true(moe->expert_weights_gb > 0.0);
    assert_true(dense->expert_weights_gb == 0.0);
    assert_true(fabs(dense->weights_gb - moe->weights_gb) > 1e-6); /* the two tables differ */
}

static double edge_flops(const model_block_t *b, int embedding) {
    double f = 0.0;
    for (int i = 0; i < b->n_edges; i++)
        if ((b->edges[i].module == MODEL_MODULE_EMBEDDING) == embedding)
            f += b->edges[i].fwd.flops_tflop + b->edges[i].bwd.flops_tflop;
    return f;
}

/* The stage's memory by hand: weights, gradients, the optimizer states (dense part over dp, the
 * routed experts over edp) and in_flight microbatches of activations. */
static double stage_mem(const model_job_t *j, const model_block_t *m, const model_block_t *d, int64_t nd,
                        int64_t nm, double edge_w, double edge_a, double in_flight) {
    const int64_t edp = j->par.dp / j->experts_par.ep;
    const double w = (double)nd * d->weights_gb + (double)nm * m->weights_gb + edge_w;
    const double exp_w = (double)nm * m->expert_weights_gb;
    const double opt = 6.0 * (w - exp_w) / (double)j->par.dp + 6.0 * exp_w / (double)edp;
    const double act = ((double)nd * d->activations_gb + (double)nm * m->activations_gb + edge_a) * in_flight;
    return w + w + opt + act;
}

/* pp 1: one stage of first_dense dense blocks and 4 - first_dense MoE blocks with both edges. */
static void test_pp1(void **state) {
    (void)state;
    for (int64_t fd = 1; fd <= 2; fd++) {
        const model_job_t j = small_job(1, fd);
        model_estimate_t e;
        assert_int_equal(model_estimate(&j, &e), MODEL_OK);
        model_block_t m, d;
        tables(&j, &m, &d);
        const model_summary_t *s = &e.summary;
        const double nmb = 8.0, nd = (double)fd, nm = 4.0 - nd;
        const double t0 = nd * (d.t_fwd_s + d.t_bwd_s) + nm * (m.t_fwd_s + m.t_bwd_s) + m.first_t_fwd_s +
                          m.first_t_bwd_s + m.last_t_fwd_s + m.last_t_bwd_s;
        assert_rel(s->stage_fwd_bwd_s[0], t0, TOL);
        assert_rel(s->iteration_time_s, nmb * t0 + s->dp_comm_s + s->optimizer_s, TOL);
        assert_true(s->bubble_s == 0.0 && s->pp_comm_s == 0.0);
        const double flops =
            nmb * (nd * d.flops_tflop + nm * m.flops_tflop + edge_flops(&m, 1) + edge_flops(&m, 0));
        assert_rel(s->flops_per_gpu_tflop, flops, TOL);
        const double w = nd * d.weights_gb + nm * m.weights_gb + m.first_weights_gb + m.last_weights_gb;
        assert_rel(s->weights_gb, w, TOL);
        assert_rel(s->grads_gb, w, TOL);
        assert_rel(s->memory_gb,
                   stage_mem(&j, &m, &d, fd, 4 - fd, m.first_weights_gb + m.last_weights_gb,
                             m.first_activations_gb + m.last_activations_gb, 1.0),
                   TOL);
        /* the Adam step over the local parameters: the dense blocks' sharded over dp, the experts' over edp
         */
        const double exp_w = nm * m.expert_weights_gb;
        const double params = ((w - exp_w) / 8.0 + exp_w / 4.0) / j.system.element_gb;
        assert_rel(s->optimizer_s, params * 52.0 * 1e-9 / (0.9 * j.system.hbm_gb_per_s), TOL);
        /* the data-parallel all-gather: the first (dense) block whole, every other block by what its
         * collective exceeds its forward, plus the edge layers' weights */
        assert_true(s->dp_allgather_one_s > 0.0);
        assert_true(s->dp_comm_s >= s->dp_allgather_s + s->dp_reducescatter_s);
    }
}

/* pp 2 (2 blocks per stage): first_dense 1 and 2 on stage 0 alone, 3 reaching stage 1. */
static void test_pp2(void **state) {
    (void)state;
    for (int64_t fd = 1; fd <= 3; fd++) {
        const model_job_t j = small_job(2, fd);
        model_estimate_t e;
        assert_int_equal(model_estimate(&j, &e), MODEL_OK);
        model_block_t m, d;
        tables(&j, &m, &d);
        const model_summary_t *s = &e.summary;
        const double nmb = 16.0, p2p = s->p2p_one_s;
        const int64_t d0 = fd < 2 ? fd : 2, d1 = fd - d0;
        const double t0 = (double)d0 * (d.t_fwd_s + d.t_bwd_s) + (double)(2 - d0) * (m.t_fwd_s + m.t_bwd_s) +
                          m.first_t_fwd_s + m.first_t_bwd_s + 2.0 * p2p;
        const double t1 = (double)d1 * (d.t_fwd_s + d.t_bwd_s) + (double)(2 - d1) * (m.t_fwd_s + m.t_bwd_s) +
                          m.last_t_fwd_s + m.last_t_bwd_s + 2.0 * p2p;
        assert_true(p2p > 0.0);
        assert_rel(s->stage_fwd_bwd_s[0], t0, TOL);
        assert_rel(s->stage_fwd_bwd_s[1], t1, TOL);
        const double mx = fmax(t0, t1);
        assert_rel(s->bubble_s, t0 + t1 - mx, TOL);
        assert_rel(s->iteration_time_s, nmb * mx + (t0 + t1 - mx) + s->dp_comm_s + s->optimizer_s, TOL);
        const int slow_last = t1 > t0;
        assert_int_equal(s->slowest_stage, slow_last);
        const int64_t ds = slow_last ? d1 : d0;
        const double flops = nmb * ((double)ds * d.flops_tflop + (double)(2 - ds) * m.flops_tflop +
                                    edge_flops(&m, !slow_last));
        assert_rel(s->flops_per_gpu_tflop, flops, TOL);
        /* 1F1B: stage 0 holds min(pp, nmb) = 2 microbatches, stage 1 one */
        const double m0 = stage_mem(&j, &m, &d, d0, 2 - d0, m.first_weights_gb, m.first_activations_gb, 2.0);
        const double m1 = stage_mem(&j, &m, &d, d1, 2 - d1, m.last_weights_gb, m.last_activations_gb, 1.0);
        assert_rel(s->memory_gb, fmax(m0, m1), TOL);
    }
}

/* pp 4 (one block per stage), first_dense 3: stages 0-2 dense, stage 3 MoE; the middle stages' times
 * by hand, the iteration nmb max T_i + (sum T_i - max T_i); the data-parallel gather of pp 1 by hand:
 * the first (dense) block whole, every other by what exceeds its forward, the dense blocks' weights
 * over dp, the experts' over edp. */
static void test_pp4_and_dp(void **state) {
    (void)state;
    {
        model_job_t j = small_job(4, 3);
        j.training.optimizer_step = 0;
        model_estimate_t e;
        assert_int_equal(model_estimate(&j, &e), MODEL_OK);
        model_block_t m, d;
        tables(&j, &m, &d);
        const model_summary_t *s = &e.summary;
        const double nmb = 32.0, p2p = 2.0 * s->p2p_one_s, td = d.t_fwd_s + d.t_bwd_s;
        const double t[4] = {td + m.first_t_fwd_s + m.first_t_bwd_s + p2p, td + p2p, td + p2p,
                             m.t_fwd_s + m.t_bwd_s + m.last_t_fwd_s + m.last_t_bwd_s + p2p};
        double mx = 0.0, sum = 0.0;
        for (int i = 0; i < 4; i++)
            mx = fmax(mx, t[i]), sum += t[i];
        assert_rel(s->stage_fwd_bwd_s[0], t[0], TOL);
        assert_rel(s->stage_fwd_bwd_s[1], t[3], TOL);
        assert_rel(s->iteration_time_s, nmb * mx + (sum - mx) + s->dp_comm_s, TOL);
    }
    for (int64_t fd = 1; fd <= 2; fd++) {
        model_job_t j = small_job(1, fd);
        j.training.embedding = 0;
        model_estimate_t e;
        assert_int_equal(model_estimate(&j, &e), MODEL_OK);
        model_block_t m, d;
        tables(&j, &m, &d);
        int64_t ep, ep_t, edp, edp_t;
        model_expert_groups(&j, &ep, &ep_t, &edp, &edp_t);
        assert_int_equal(edp, 4);
        const model_system_t *sys = &j.system;
        const double ag_d = model_collective_time_s(sys, j.compat, MODEL_COLL_ALLGATHER, d.weights_gb, 8, 8);
        const double ag_m =
            model_collective_time_s(sys, j.compat, MODEL_COLL_ALLGATHER, m.weights_gb - m.expert_weights_gb,
                                    8, 8) +
            model_collective_time_s(sys, j.compat, MODEL_COLL_ALLGATHER, m.expert_weights_gb, edp, edp_t);
        const double want = ag_d + fmax(ag_d - d.t_fwd_s, 0.0) * (double)(fd - 1) +
                            fmax(ag_m - m.t_fwd_s, 0.0) * (double)(4 - fd);
        assert_rel(e.summary.dp_allgather_one_s, ag_d, TOL);
        assert_rel(e.summary.dp_allgather_s, want, TOL);
    }
}

/* One MoE block swapped for a dense one (first_dense 0 -> 1, one stage): the stage time moves by the
 * two tables' difference. */
static void test_one_block_swapped(void **state) {
    (void)state;
    model_estimate_t e0, e1;
    const model_job_t j0 = small_job(1, 0), j1 = small_job(1, 1);
    assert_int_equal(model_estimate(&j0, &e0), MODEL_OK);
    assert_int_equal(model_estimate(&j1, &e1), MODEL_OK);
    model_block_t m, d;
    tables(&j1, &m, &d);
    /* replacing one MoE block by a dense one moves the stage time by the tables' difference */
    assert_rel(e1.summary.stage_fwd_bwd_s[0] - e0.summary.stage_fwd_bwd_s[0],
               d.t_fwd_s + d.t_bwd_s - m.t_fwd_s - m.t_bwd_s, 1e-6);
}

/* The DeepSeek-V3-like preset (3 of 61 blocks dense) on 256 H100s, ep 64: it estimates, and its
 * weights per GPU are the parameters one GPU holds (every parameter but the routed experts of other
 * GPUs) at 2 bytes, within the norms' and the router's rounding. */
static void test_deepseek(void **state) {
    (void)state;
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("DeepSeek-V3-like", &j.model), MODEL_OK);
    assert_int_equal(model_system_preset("DGX-H100", &j.system), MODEL_OK);
    assert_int_equal(j.model.moe.first_dense, 3);
    j.gpus = 256;
    j.global_batch = 256;
    j.compat = MODEL_COMPAT_CORRECTED;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, 256, 1, 1, 1, 1, 1, 1, 1, 1, 8, 1};
    j.experts_par.ep = 64;
    j.training.embedding = 1;
    model_estimate_t e;
    assert_int_equal(model_estimate(&j, &e), MODEL_OK);
    const model_summary_t *s = &e.summary;
    assert_true(isfinite(s->iteration_time_s) && s->iteration_time_s > 0.0);
    const double held = model_param_count(&j.model) - 58.0 * (256.0 - 4.0) * 3.0 * 7168.0 * 2048.0;
    assert_rel(s->weights_gb, held * 2e-9, 0.01);
    /* 61 blocks on one GPU do not fit in 80 GB; the optimizer states are sharded (dense over 256,
     * experts over 4) */
    assert_false(s->fits);
    assert_true(s->optimizer_gb < s->weights_gb);
    model_block_t m, d;
    model_block_build(&j, &m);
    model_job_t dj = j;
    memset(&dj.model.moe, 0, sizeof dj.model.moe);
    memset(&dj.experts_par, 0, sizeof dj.experts_par);
    model_block_build(&dj, &d);
    assert_rel(s->flops_per_gpu_tflop,
               3.0 * d.flops_tflop + 58.0 * m.flops_tflop + edge_flops(&m, 1) + edge_flops(&m, 0), TOL);
}

/* What the stages are not assembled for is refused, one field each; the same job without leading
 * dense blocks is accepted. */
static void test_refused(void **state) {
    (void)state;
    struct {
        int what;
        const char *field;
    } cases[] = {{0, "training.interleave"}, {1, "training.pipeline_schedule"}, {2, "training.dp_comm"}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int64_t fd = 0; fd <= 1; fd++) {
            model_job_t j = small_job(2, fd);
            if (cases[c].what == 0)
                j.training.interleave = 2;
            else if (cases[c].what == 1)
                j.training.pipeline = MODEL_PIPELINE_ZB_H1;
            else
                j.training.dp_comm = MODEL_DP_SHARDED_OVERLAP;
            model_issue_t is;
            memset(&is, 0, sizeof is);
            if (fd == 0) {
                assert_int_equal(model_job_check(&j, &is), MODEL_OK);
                continue;
            }
            assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
            assert_string_equal(is.field, cases[c].field);
            assert_non_null(strstr(is.allowed, "first_dense"));
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pp1),        cmocka_unit_test(test_pp2),
        cmocka_unit_test(test_pp4_and_dp), cmocka_unit_test(test_one_block_swapped),
        cmocka_unit_test(test_deepseek),   cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
