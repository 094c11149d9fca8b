/* step/test_moe.c - a mixture of experts in the simulated step: the dispatch and combine all-to-alls
 * of every MoE block (forward and backward) send, per GPU, tokens x hidden x bytes x topk x
 * (ep - 1) / ep each (step_group_traffic's ep, every GPU simulated on the network); an expert-parallel
 * group inside one NVLink domain puts none of its bytes on a network link, one across domains does
 * (the engine's flows, routed, and the link counters); with analytic communication and nothing to
 * overlap the step equals the estimate (the model's alltoall closed form); the expert skew: 0 is the
 * unskewed step exactly, more is slower and deterministic for one seed, and with one expert per GPU
 * (ep = E) the step grows by the closed form (E / H_{E,S} - 1) x the routed experts' time plus the
 * all-to-alls of the busiest receiver, exactly. */
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

/* A small mixture of experts (8 experts, top 2, GeLU experts of f 2048) on A100s with NVLink
 * domains of nvs: 1d, tp, pp, dp, ep, global batch gbs, microbatches of one sequence. */
static model_job_t moe_job(int64_t nvs, int64_t tp, int64_t pp, int64_t dp, int64_t ep, int64_t gbs,
                           model_dp_comm_t dp_comm) {
    model_job_t job;
    memset(&job, 0, sizeof job);
    assert_int_equal(model_system_preset("A100", &job.system), MODEL_OK);
    job.system.nvlink_size = nvs;
    const model_transformer_t t = {.name = "moe",
                                   .seq_len = 1024,
                                   .hidden = 1024,
                                   .heads = 16,
                                   .layers = 2 * pp,
                                   .ffn_hidden = 4096,
                                   .moe = {.experts = 8, .topk = 2, .expert_ffn_hidden = 2048}};
    job.model = t;
    job.par = (model_parallel_t){
        .strategy = MODEL_STRATEGY_1D, .dp = dp, .tp = tp, .tp1 = tp, .tp2 = 1, .pp = pp, .mbs = 1, .nb = 1};
    const int64_t group[4] = {tp, 1, dp, pp};
    int64_t nv[4] = {0, 0, 0, 0};
    model_nvlink_counts(tp * pp * dp, nvs, group, nv);
    job.par.nv_tp1 = nv[0];
    job.par.nv_tp2 = nv[1];
    job.par.nv_dp = nv[2];
    job.par.nv_pp = nv[3];
    job.experts_par.ep = ep;
    job.gpus = tp * pp * dp;
    job.global_batch = gbs;
    job.compat = MODEL_COMPAT_CORRECTED;
    job.training.dp_comm = dp_comm;
    job.training.optimizer_step = 1; /* as the step runs it (the corrected model) */
    model_issue_t issue;
    if (model_job_check(&job, &issue) != MODEL_OK)
        fail_msg("bad test job: %s %s (%s)", issue.field, issue.value, issue.allowed);
    return job;
}

/* The closed form: bytes one GPU sends in one all-to-all, T e bytes k (ep - 1) / ep, T = l / tp. */
static double a2a_bytes(const model_job_t *job) {
    const double T = (double)job->par.mbs * (double)job->model.seq_len / (double)job->par.tp;
    const double ep = (double)job->experts_par.ep;
    return T * (double)job->model.hidden * 2.0 * (double)job->model.moe.topk * (ep - 1.0) / ep;
}

/* ---- flows of the expert-parallel group on network links ---------------------------------------- */

typedef struct flows {
    int n, cap;
    sim_coll_id_t *coll;
    int32_t *src, *dst;
    double *bytes;
} flows_t;

static void on_flow_end(void *ctx, sim_time_ps_t t, const sim_flow_info_t *f) {
    (void)t;
    flows_t *x = ctx;
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 1024;
        x->coll = realloc(x->coll, (size_t)x->cap * sizeof *x->coll);
        x->src = realloc(x->src, (size_t)x->cap * sizeof *x->src);
        x->dst = realloc(x->dst, (size_t)x->cap * sizeof *x->dst);
        x->bytes = realloc(x->bytes, (size_t)x->cap * sizeof *x->bytes);
        assert_non_null(x->coll);
        assert_non_null(x->src);
        assert_non_null(x->dst);
        assert_non_null(x->bytes);
    }
    x->coll[x->n] = f->coll;
    x->src[x->n] = f->src_gpu;
    x->dst[x->n] = f->dst_gpu;
    x->bytes[x->n] = f->bytes;
    x->n++;
}

typedef struct ep_links {
    double ep_network_bytes;   /* the ep group's flows' bytes on network links (each link of a route) */
    double ep_flow_bytes;      /* all its flows' bytes */
    double network_link_bytes; /* the link counters of every network link */
    double ep_sent_per_gpu;    /* step_group_traffic */
} ep_links_t;

/* Run job on its star at step fidelity (a flow per pair) and sum the ep group's flows on network links. */
static void ep_on_links(const model_job_t *job, ep_links_t *out) {
    sim_star_t star;
    sim_network_desc_t net;
    step_test_star(job, &star, &net);
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.engine.fidelity = SIM_FIDELITY_STEP;
    step_t *s = NULL;
    char err[300];
    if (step_new(job, &cfg, &net, &s, err, sizeof err) != SIM_OK)
        fail_msg("step_new: %s", err);
    flows_t fl;
    memset(&fl, 0, sizeof fl);
    const sim_observer_t obs = {.ctx = &fl, .flow_end = on_flow_end};
    step_set_observer(s, &obs);
    assert_int_equal(step_run(s), SIM_OK);
    const sim_engine_t *e = step_engine(s);
    /* the group of every collective, from its member operations */
    const int64_t n_ops = sim_op_count(e);
    int8_t *is_ep = calloc((size_t)n_ops + 1, 1);
    assert_non_null(is_ep);
    for (sim_op_id_t op = 0; op < n_ops; op++) {
        const sim_coll_id_t c = sim_op_collective(e, op);
        step_op_t info;
        if (c >= 0 && step_op(s, op, &info) == SIM_OK && info.group && strcmp(info.group, "ep") == 0) {
            assert_true(c <= n_ops);
            is_ep[c] = 1;
            assert_string_equal(info.collective, "alltoall");
        }
    }
    memset(out, 0, sizeof *out);
    int32_t links[SIM_ROUTE_MAX];
    for (int i = 0; i < fl.n; i++) {
        if (fl.coll[i] < 0 || !is_ep[fl.coll[i]])
            continue;
        if (fl.src[i] < 0 || fl.dst[i] < 0)
            fail_msg("an ep flow merges several pairs: its links are not known");
        out->ep_flow_bytes += fl.bytes[i];
        const int len = net.route(net.route_ctx, fl.src[i], fl.dst[i], links, SIM_ROUTE_MAX);
        assert_true(len >= 1);
        for (int l = 0; l < len; l++)
            if (net.link_kind(net.route_ctx, links[l]) == SIM_LINK_NETWORK)
                out->ep_network_bytes += fl.bytes[i];
    }
    for (int32_t l = 0; l < net.n_links; l++) {
        sim_link_stats_t ls;
        assert_int_equal(sim_link_stats(e, l, &ls), SIM_OK);
        if (net.link_kind(net.route_ctx, l) == SIM_LINK_NETWORK)
            out->network_link_bytes += ls.bytes;
    }
    step_traffic_t tr;
    assert_int_equal(step_group_traffic(s, &tr), SIM_OK);
    assert_int_equal(tr.has_ep, 1);
    out->ep_sent_per_gpu = tr.per_gpu_bytes[STEP_TRAFFIC_EP];
    free(is_ep);
    free(fl.coll);
    free(fl.src);
    free(fl.dst);
    free(fl.bytes);
    step_free(s);
    sim_star_destroy(&star);
}

/* (a) The all-to-all bytes per GPU: 4 all-to-alls (dispatch and combine, forward and backward) per
 * MoE block a stage runs and microbatch, each the closed form; tensor-parallel ranks in the expert
 * group (tp 2) and not (tp 1), inside and across NVLink domains. */
static void test_a2a_bytes_per_gpu(void **state) {
    (void)state;
    const struct {
        int64_t nvs, tp, pp, dp, ep;
    } cases[] = {{8, 1, 2, 8, 8}, {4, 2, 2, 4, 4}, {4, 1, 1, 8, 8}, {2, 2, 1, 4, 4}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const model_job_t job = moe_job(cases[i].nvs, cases[i].tp, cases[i].pp, cases[i].dp, cases[i].ep,
                                        2 * cases[i].dp, MODEL_DP_SHARDED);
        sim_star_t star;
        sim_network_desc_t net;
        step_test_star(&job, &star, &net);
        step_config_t cfg;
        step_config_default(&cfg);
        step_t *s = NULL;
        char err[300];
        if (step_new(&job, &cfg, &net, &s, err, sizeof err) != SIM_OK)
            fail_msg("step_new: %s", err);
        assert_int_equal(step_run(s), SIM_OK);
        step_result_t r;
        assert_int_equal(step_result(s, &r), SIM_OK);
        assert_int_equal(r.simulated_gpus, job.gpus); /* experts: every GPU simulated */
        step_traffic_t t;
        assert_int_equal(step_group_traffic(s, &t), SIM_OK);
        const double blocks = (double)(job.model.layers / job.par.pp), m = 2.0;
        const double want = 4.0 * blocks * m * a2a_bytes(&job);
        if (fabs(t.per_gpu_bytes[STEP_TRAFFIC_EP] - want) > 1e-3 * want)
            fail_msg("case %zu: ep bytes per GPU %.6g, closed form %.6g", i, t.per_gpu_bytes[STEP_TRAFFIC_EP],
                     want);
        assert_true(fabs(t.sent_bytes[STEP_TRAFFIC_EP] - want * (double)job.gpus) <= 1e-3 * want * job.gpus);
        /* the model's per-block closed form is the same number */
        model_moe_block_t mb;
        assert_int_equal(model_moe_block(&job, &mb), MODEL_OK);
        assert_true(fabs(mb.a2a_bytes - a2a_bytes(&job)) <= 1e-12 * mb.a2a_bytes);
        step_free(s);
        sim_star_destroy(&star);
    }
}

/* (b) ep 8 inside a domain of 8 (tp 1, pp 1, dp 8: nothing else leaves it either): no byte of the ep
 * group on a network link and none on any network link at all; across two domains of 4: the ep
 * group's flows cross the network, at least the half of every all-to-all that goes to the other
 * domain (each such byte crosses the sender's NIC and the receiver's). */
static void test_ep_inside_and_across_domains(void **state) {
    (void)state;
    ep_links_t in, across;
    const model_job_t j_in = moe_job(8, 1, 1, 8, 8, 8, MODEL_DP_SHARDED);
    ep_on_links(&j_in, &in);
    assert_true(in.ep_flow_bytes > 0.0);
    assert_true(in.ep_network_bytes == 0.0);
    assert_true(in.network_link_bytes == 0.0);
    const model_job_t j_out = moe_job(4, 1, 1, 8, 8, 8, MODEL_DP_SHARDED);
    ep_on_links(&j_out, &across);
    /* per all-to-all, each GPU sends 4 of its 7 peer shares to the other domain; 4 all-to-alls per
     * block, 2 blocks, 1 microbatch, 8 GPUs; every such byte crosses two network links */
    const double cross = a2a_bytes(&j_out) * 4.0 / 7.0 * 4.0 * 2.0 * 1.0 * 8.0;
    if (across.ep_network_bytes < 2.0 * cross * (1.0 - 1e-9))
        fail_msg("ep bytes on network links %.6g, at least %.6g expected", across.ep_network_bytes,
                 2.0 * cross);
    assert_true(across.network_link_bytes >= across.ep_network_bytes * (1.0 - 1e-9));
    /* the same bytes sent, wherever they go */
    assert_true(fabs(in.ep_sent_per_gpu - across.ep_sent_per_gpu) <= 1e-9 * in.ep_sent_per_gpu);
}

/* The analytic step of job (every GPU simulated or stages collapsed) and its estimate. */
static double analytic_step(const model_job_t *job, step_collapse_t collapse, double skew, uint64_t seed,
                            step_result_t *res) {
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.comm = SIM_COMM_ANALYTIC;
    cfg.collapse = collapse;
    cfg.expert_skew = skew;
    cfg.expert_seed = seed;
    step_t *s = NULL;
    char err[300];
    if (step_new(job, &cfg, NULL, &s, err, sizeof err) != SIM_OK)
        fail_msg("step_new: %s", err);
    assert_int_equal(step_run(s), SIM_OK);
    assert_int_equal(step_result(s, res), SIM_OK);
    step_free(s);
    return res->step_time_s;
}

/* (c) Analytic communication, one stage, the gradients all-reduced after the last backward (nothing
 * overlaps): the step is the estimate, and its exposed tensor-parallel time (the all-to-alls with
 * the tensor collectives) is the model's, ep inside and across domains, stages collapsed and every
 * GPU simulated. */
static void test_analytic_matches_estimate(void **state) {
    (void)state;
    const struct {
        int64_t nvs, tp, dp, ep;
    } cases[] = {{8, 1, 8, 8}, {4, 1, 8, 8}, {8, 2, 4, 4}, {2, 2, 4, 4}, {8, 1, 8, 2}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const model_job_t job = moe_job(cases[i].nvs, cases[i].tp, 1, cases[i].dp, cases[i].ep,
                                        4 * cases[i].dp, MODEL_DP_ALLREDUCE);
        model_estimate_t *est = malloc(sizeof *est);
        assert_non_null(est);
        assert_int_equal(model_estimate(&job, est), MODEL_OK);
        const double want = est->summary.iteration_time_s, want_tp = est->summary.tp_comm_s;
        assert_true(want_tp > 0.0);
        for (int full = 0; full < 2; full++) {
            step_result_t r;
            const double got = analytic_step(&job, full ? STEP_COLLAPSE_OFF : STEP_COLLAPSE_AUTO, 0.0, 1, &r);
            if (fabs(got - want) > 1e-6 * want)
                fail_msg("case %zu (%s): step %.9g s, estimate %.9g s", i, full ? "full" : "collapsed", got,
                         want);
            if (fabs(r.breakdown.exposed_tp_comm_s - want_tp) > 1e-6 * want_tp)
                fail_msg("case %zu (%s): exposed tp %.9g s, model %.9g s", i, full ? "full" : "collapsed",
                         r.breakdown.exposed_tp_comm_s, want_tp);
        }
        free(est);
    }
}

/* The stage collapse of analytic mode stays exact with experts: two stages, the sharded and the
 * all-reduce-overlap data parallelism (its all-gathers and reduce-scatters of the dense weights over
 * dp and the experts' over the expert-data-parallel group overlap the passes), ep inside and across
 * domains: collapsed and every GPU simulated agree to a picosecond per operation. */
static void test_analytic_collapse_exact(void **state) {
    (void)state;
    const model_dp_comm_t modes[] = {MODEL_DP_SHARDED, MODEL_DP_ALLREDUCE_OVERLAP};
    for (int k = 0; k < 2; k++)
        for (int64_t nvs = 4; nvs <= 8; nvs *= 2) {
            const model_job_t job = moe_job(nvs, 2, 2, 4, 4, 16, modes[k]);
            step_result_t a, b;
            const double ta = analytic_step(&job, STEP_COLLAPSE_AUTO, 0.0, 1, &a);
            const double tb = analytic_step(&job, STEP_COLLAPSE_OFF, 0.0, 1, &b);
            assert_true(a.simulated_gpus == 2 && b.simulated_gpus == job.gpus);
            if (fabs(ta - tb) > 1e-12 * (double)b.operations + 1e-12 * tb)
                fail_msg("dp_comm %d, nvs %lld: collapsed %.12g s, full %.12g s", (int)modes[k],
                         (long long)nvs, ta, tb);
            assert_true(fabs(a.breakdown.exposed_dp_comm_s - b.breakdown.exposed_dp_comm_s) <=
                        1e-12 * (double)b.operations + 1e-9 * tb);
        }
}

/* The routed experts' time of one block and microbatch, forward plus backward (the experts-*
 * layers), and the all-to-all buffer. */
static double experts_s(const model_job_t *job) {
    model_block_t *b = malloc(sizeof *b);
    assert_non_null(b);
    model_block_build(job, b);
    double t = 0.0;
    int seen = 0;
    for (int i = 0; i < b->n_layers; i++)
        if (strncmp(b->layers[i].name, "experts-", 8) == 0) {
            const model_layer_t *ly = &b->layers[i];
            t += ly->fwd.comp_s + ly->fwd.mem_exposed_s + ly->bwd.comp_s + ly->bwd.mem_exposed_s;
            seen++;
        }
    assert_int_equal(seen, 3);
    free(b);
    return t;
}

/* (d) The skew: 0 is the unskewed step exactly; S > 0 is slower, the same for one seed; with one
 * expert per GPU (ep = E = 8) the busiest GPU computes E / H_{E,S} times the uniform load in every
 * block and microbatch whatever the permutation, so the step (one stage, nothing overlapped) grows by
 * m L [(f - 1) X + 4 (A(f V) - A(V))], X the routed experts' time, A the model's alltoall. */
static void test_skew(void **state) {
    (void)state;
    const model_job_t job = moe_job(8, 1, 1, 8, 8, 16, MODEL_DP_ALLREDUCE);
    step_result_t r0, rz, r1, r1b, r2;
    const double t0 = analytic_step(&job, STEP_COLLAPSE_OFF, 0.0, 1, &r0);
    const double tz = analytic_step(&job, STEP_COLLAPSE_OFF, 0.0, 7, &rz);
    assert_true(t0 == tz);
    assert_true(r0.operations == rz.operations);
    const double t1 = analytic_step(&job, STEP_COLLAPSE_AUTO, 1.0, 1, &r1);
    const double t1b = analytic_step(&job, STEP_COLLAPSE_AUTO, 1.0, 1, &r1b);
    assert_true(t1 == t1b);
    assert_true(r1.simulated_gpus == job.gpus); /* the skew: every GPU simulated */
    assert_true(t1 > t0);
    /* the closed form */
    const int64_t E = 8;
    double H = 0.0;
    for (int64_t r = E; r >= 1; r--)
        H += pow((double)r, -1.0);
    const double f = (double)E / H;
    for (uint64_t seed = 1; seed < 20; seed++) {
        double fac[8], sh[8];
        const double fm = step_expert_shares(E, E, 1.0, seed, (int64_t)seed % 3, 5, sh, fac);
        assert_true(fabs(fm - f) <= 1e-12 * f);
        double sum = 0.0;
        for (int i = 0; i < 8; i++)
            sum += sh[i];
        assert_true(fabs(sum - 1.0) <= 1e-12);
        assert_true(step_expert_shares(E, 1, 1.0, seed, 0, 0, NULL, NULL) <= 1.0 + 1e-12);
    }
    const double m = 2.0, L = 2.0, V = a2a_bytes(&job) * 8.0 / 7.0; /* the whole buffer */
    const double A1 =
        model_collective_time_s(&job.system, job.compat, MODEL_COLL_ALLTOALL, f * V * 1e-9, 8, 8);
    const double A0 = model_collective_time_s(&job.system, job.compat, MODEL_COLL_ALLTOALL, V * 1e-9, 8, 8);
    const double want = m * L * ((f - 1.0) * experts_s(&job) + 4.0 * (A1 - A0));
    if (fabs((t1 - t0) - want) > 1e-9 * t0)
        fail_msg("skew 1: the step grew by %.12g s, closed form %.12g s", t1 - t0, want);
    /* another seed: another permutation, the same growth (ep = E) */
    const double t2 = analytic_step(&job, STEP_COLLAPSE_AUTO, 1.0, 99, &r2);
    assert_true(fabs(t2 - t1) <= 1e-9 * t1);
    /* ep < E: the growth depends on the draw, and more skew costs more */
    const model_job_t j4 = moe_job(8, 1, 1, 8, 4, 16, MODEL_DP_ALLREDUCE);
    step_result_t a, b, c;
    const double u0 = analytic_step(&j4, STEP_COLLAPSE_AUTO, 0.0, 3, &a);
    const double u1 = analytic_step(&j4, STEP_COLLAPSE_AUTO, 0.5, 3, &b);
    const double u2 = analytic_step(&j4, STEP_COLLAPSE_AUTO, 2.0, 3, &c);
    assert_true(u0 < u1 && u1 < u2);
    /* and each block and microbatch pays its own draw's busiest GPU: the growth is the sum over the
     * draws of the same terms, f_max from step_expert_shares */
    const double V4 = a2a_bytes(&j4) * 4.0 / 3.0, X4 = experts_s(&j4);
    const double B0 = model_collective_time_s(&j4.system, j4.compat, MODEL_COLL_ALLTOALL, V4 * 1e-9, 4, 4);
    double grow = 0.0, fsum = 0.0;
    for (int64_t blk = 0; blk < 2; blk++)
        for (int64_t mb = 0; mb < 2; mb++) {
            const double fm = step_expert_shares(E, 4, 2.0, 3, blk, mb, NULL, NULL);
            const double B1 =
                model_collective_time_s(&j4.system, j4.compat, MODEL_COLL_ALLTOALL, fm * V4 * 1e-9, 4, 4);
            grow += (fm - 1.0) * X4 + 4.0 * (B1 - B0);
            fsum += fm;
        }
    if (fabs((u2 - u0) - grow) > 1e-9 * u0)
        fail_msg("ep 4, skew 2: the step grew by %.12g s, the draws' sum %.12g s", u2 - u0, grow);
    assert_true(fsum > 4.0 * 1.01); /* the draws are skewed */
}

/* Refused: a skew on a dense model, a skew with a capacity factor, --collapse approx with experts on
 * the network; each one line naming it. */
static void test_refusals(void **state) {
    (void)state;
    model_job_t job = moe_job(8, 1, 1, 8, 8, 8, MODEL_DP_SHARDED);
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.comm = SIM_COMM_ANALYTIC;
    cfg.expert_skew = 1.0;
    step_t *s = NULL;
    char err[300];
    job.model.moe.capacity_factor = 1.25;
    assert_int_equal(step_new(&job, &cfg, NULL, &s, err, sizeof err), SIM_EINVAL);
    assert_non_null(strstr(err, "capacity_factor"));
    job.model.moe.capacity_factor = 0.0;
    cfg.expert_skew = 9.0;
    assert_int_equal(step_new(&job, &cfg, NULL, &s, err, sizeof err), SIM_EINVAL);
    assert_non_null(strstr(err, "expert skew: 9"));
    cfg.expert_skew = 0.0;
    sim_star_t star;
    sim_network_desc_t net;
    step_test_star(&job, &star, &net);
    cfg.comm = SIM_COMM_NETWORK;
    cfg.collapse = STEP_COLLAPSE_APPROX;
    assert_int_equal(step_new(&job, &cfg, &net, &s, err, sizeof err), SIM_EINVAL);
    assert_non_null(strstr(err, "approx with experts"));
    assert_null(strchr(err, '\n'));
    sim_star_destroy(&star);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a2a_bytes_per_gpu),
        cmocka_unit_test(test_ep_inside_and_across_domains),
        cmocka_unit_test(test_analytic_matches_estimate),
        cmocka_unit_test(test_analytic_collapse_exact),
        cmocka_unit_test(test_skew),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
