/* step/test_collapse.c - simulating identical ranks once changes nothing: on small jobs the collapsed
 * run (one GPU per stage with analytic communication, one tensor rank per stage and replica on the
 * network) gives the full run's step time, breakdown and memory peak, for 1d, 2D SUMMA, 2D context
 * parallelism, interleaving and both compat modes; the network check refuses to collapse when tensor
 * traffic shares links with other traffic. Also determinism: the same step twice (two engines in
 * one process) gives the same results and the same observer log; and bad jobs and configurations
 * are refused with a message naming the field. */
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

typedef struct layout {
    model_strategy_t strategy;
    int64_t dp, tp1, tp2, pp, nb, nv_tp1, nv_tp2, nv_dp, nv_pp;
} layout_t;

/* A small transformer (8 blocks) on A100s with NVLink domains of nvs. */
static model_job_t job_of(const layout_t *l, int64_t nvs, int64_t gbs, model_compat_t compat) {
    model_job_t job;
    memset(&job, 0, sizeof job);
    assert_int_equal(model_system_preset("A100", &job.system), MODEL_OK);
    job.system.nvlink_size = nvs;
    const model_transformer_t t = {
        .name = "small", .seq_len = 512, .hidden = 1024, .heads = 16, .layers = 8, .ffn_hidden = 4096};
    job.model = t;
    const int64_t tp = l->tp1 * l->tp2;
    const model_parallel_t par = {l->strategy, l->dp, tp,        l->tp1,    l->tp2,   l->pp,
                                  1,           l->nb, l->nv_tp1, l->nv_tp2, l->nv_dp, l->nv_pp};
    job.par = par;
    job.gpus = l->dp * tp * l->pp;
    job.global_batch = gbs;
    job.compat = compat;
    model_issue_t issue;
    if (model_job_check(&job, &issue) != MODEL_OK)
        fail_msg("bad test job: %s %s (%s)", issue.field, issue.value, issue.allowed);
    return job;
}

/* The same with the corrected model's embedding and output layer (vocabulary 50,257), Megatron's
 * data-parallel all-reduce (dp_comm, or the overlapped buckets) and the optimizer step: the first
 * and last stages now differ from the middle ones. */
static model_job_t emb_job_of(const layout_t *l, int64_t nvs, int64_t gbs, model_dp_comm_t dp_comm) {
    model_job_t job = job_of(l, nvs, gbs, MODEL_COMPAT_CORRECTED);
    job.model.vocab = 50257;
    job.training.embedding = 1;
    job.training.dp_comm = dp_comm;
    job.training.optimizer_step = 1;
    model_issue_t issue;
    if (model_job_check(&job, &issue) != MODEL_OK)
        fail_msg("bad test job: %s %s (%s)", issue.field, issue.value, issue.allowed);
    return job;
}

typedef struct net {
    sim_star_t star;
    sim_network_desc_t desc;
} net_t;

/* The ideal topology: every GPU with its own NIC and NVLink port (the system's bandwidths). */
static void net_init(net_t *n, const model_job_t *job) {
    const model_system_t *s = &job->system;
    const sim_star_params_t p = {.n_gpus = (int32_t)job->gpus,
                                 .nic_bytes_per_s = s->ib_gb_per_s * 1e9 * (double)s->nic_factor,
                                 .nic_latency_s = s->ib_latency_s / 2,
                                 .gpus_per_domain =
                                     (int32_t)(s->nvlink_size < job->gpus ? s->nvlink_size : job->gpus),
                                 .nvlink_bytes_per_s = s->nvlink_gb_per_s * 1e9,
                                 .nvlink_latency_s = s->nvlink_latency_s / 2};
    assert_int_equal(sim_star_init(&n->star, &p), SIM_OK);
    sim_star_network(&n->star, &n->desc);
}

static int g_nccl; /* 1: the engine runs NCCL's cost model (sim_config_nccl, A100) */

static step_result_t run(const model_job_t *job, sim_comm_mode_t comm, step_collapse_t collapse,
                         step_schedule_t sched, int32_t v, const sim_observer_t *obs) {
    net_t n;
    net_init(&n, job);
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.comm = comm;
    cfg.collapse = collapse;
    cfg.schedule = sched;
    cfg.virtual_stages = v;
    if (g_nccl) {
        const sim_nccl_platform_t pl = {80, 1, 1};
        sim_config_nccl(&cfg.engine, &pl);
        cfg.engine.link_kind_efficiency[SIM_LINK_NETWORK] = 0.94;
        cfg.engine.link_kind_efficiency[SIM_LINK_NVLINK] = 0.67;
    }
    step_t *s = NULL;
    char err[256];
    if (step_new(job, &cfg, &n.desc, &s, err, sizeof err) != SIM_OK)
        fail_msg("step_new: %s", err);
    if (obs)
        step_set_observer(s, obs);
    if (step_run(s) != SIM_OK)
        fail_msg("step_run: %s", step_last_error(s));
    step_result_t r;
    assert_int_equal(step_result(s, &r), SIM_OK);
    step_free(s);
    sim_star_destroy(&n.star);
    return r;
}

/* Equal up to rounding: every operation's duration is rounded to a picosecond once, and a collapsed
 * run rounds merged or fixed-time operations (a SUMMA layer's exposed panels, say) once where the
 * full run rounds each of their parts; allow a picosecond per operation of the full run. */
static void assert_close(const char *what, double a, double b, int64_t ops) {
    if (fabs(a - b) > 1e-12 * (double)ops)
        fail_msg("%s: collapsed %.12g, full %.12g", what, a, b);
}

static void same(const step_result_t *c, const step_result_t *f) {
    const int64_t n = f->operations;
    assert_close("step time", c->step_time_s, f->step_time_s, n);
    assert_close("compute", c->breakdown.compute_s, f->breakdown.compute_s, n);
    assert_close("exposed tp", c->breakdown.exposed_tp_comm_s, f->breakdown.exposed_tp_comm_s, n);
    assert_close("exposed pp", c->breakdown.exposed_pp_comm_s, f->breakdown.exposed_pp_comm_s, n);
    assert_close("exposed dp", c->breakdown.exposed_dp_comm_s, f->breakdown.exposed_dp_comm_s, n);
    assert_close("bubble", c->breakdown.bubble_idle_s, f->breakdown.bubble_idle_s, n);
    if (fabs(c->peak_activations_gb - f->peak_activations_gb) > 1e-9 * f->peak_activations_gb)
        fail_msg("peak activations: collapsed %.12g GB, full %.12g GB", c->peak_activations_gb,
                 f->peak_activations_gb);
}

static void test_analytic_stages(void **state) {
    (void)state;
    const layout_t layouts[] = {
        {MODEL_STRATEGY_1D, 2, 4, 1, 2, 1, 4, 1, 1, 2},      /* tp in the domain, stages share it */
        {MODEL_STRATEGY_1D, 4, 2, 1, 2, 1, 1, 1, 2, 2},      /* tp across domains */
        {MODEL_STRATEGY_2D, 2, 2, 2, 2, 2, 2, 2, 1, 1},      /* SUMMA */
        {MODEL_STRATEGY_2D_SEQP, 2, 2, 2, 2, 1, 2, 2, 2, 1}, /* context parallel */
    };
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        for (int compat = 0; compat < 2; compat++) {
            const model_job_t job = job_of(&layouts[i], 8, 8, (model_compat_t)compat);
            const step_result_t c =
                run(&job, SIM_COMM_ANALYTIC, STEP_COLLAPSE_AUTO, STEP_SCHEDULE_1F1B, 1, NULL);
            const step_result_t f =
                run(&job, SIM_COMM_ANALYTIC, STEP_COLLAPSE_OFF, STEP_SCHEDULE_1F1B, 1, NULL);
            assert_int_equal(c.collapsed, STEP_STAGES);
            assert_int_equal(c.simulated_gpus, (int32_t)job.par.pp);
            assert_int_equal(f.simulated_gpus, (int32_t)job.gpus);
            same(&c, &f);
        }
    const layout_t il = {MODEL_STRATEGY_1D, 2, 2, 1, 2, 1, 2, 1, 2, 1};
    const model_job_t job = job_of(&il, 8, 8, MODEL_COMPAT_CORRECTED);
    const step_result_t c =
        run(&job, SIM_COMM_ANALYTIC, STEP_COLLAPSE_AUTO, STEP_SCHEDULE_INTERLEAVED, 2, NULL);
    const step_result_t f =
        run(&job, SIM_COMM_ANALYTIC, STEP_COLLAPSE_OFF, STEP_SCHEDULE_INTERLEAVED, 2, NULL);
    same(&c, &f);
}

static void test_network_rails(void **state) {
    (void)state;
    const layout_t layouts[] = {
        {MODEL_STRATEGY_1D, 2, 8, 1, 2, 1, 8, 1, 1, 1}, /* tp 8 fills a domain of 8 */
        {MODEL_STRATEGY_1D, 4, 4, 1, 2, 1, 4, 1, 1, 1}, /* tp 4 in a domain of 4 */
        {MODEL_STRATEGY_2D, 2, 2, 2, 2, 2, 2, 2, 1, 1}, /* SUMMA rows and columns in a domain of 4 */
    };
    const int64_t nvs[] = {8, 4, 4};
    for (size_t k = 0; k < 2 * sizeof layouts / sizeof layouts[0]; k++) {
        const size_t i = k % (sizeof layouts / sizeof layouts[0]);
        g_nccl = k >= sizeof layouts / sizeof layouts[0];
        const model_job_t job = job_of(&layouts[i], nvs[i], 8, MODEL_COMPAT_CORRECTED);
        const step_result_t c = run(&job, SIM_COMM_NETWORK, STEP_COLLAPSE_AUTO, STEP_SCHEDULE_1F1B, 1, NULL);
        const step_result_t f = run(&job, SIM_COMM_NETWORK, STEP_COLLAPSE_OFF, STEP_SCHEDULE_1F1B, 1, NULL);
        if (c.collapsed != STEP_RAILS || !c.collapse_exact)
            fail_msg("layout %zu: not collapsed exactly: %s", i, c.collapse_note);
        assert_true(c.simulated_gpus < f.simulated_gpus);
        assert_true(f.flows > c.flows);
        same(&c, &f);
    }
    /* interleaved, reference compat; then NCCL's cost model (protocols, latencies, efficiencies) */
    const model_job_t job = job_of(&layouts[0], 8, 8, MODEL_COMPAT_REFERENCE);
    for (g_nccl = 0; g_nccl < 2; g_nccl++) {
        const step_result_t c =
            run(&job, SIM_COMM_NETWORK, STEP_COLLAPSE_AUTO, STEP_SCHEDULE_INTERLEAVED, 2, NULL);
        const step_result_t f =
            run(&job, SIM_COMM_NETWORK, STEP_COLLAPSE_OFF, STEP_SCHEDULE_INTERLEAVED, 2, NULL);
        same(&c, &f);
    }
    g_nccl = 0;
}

/* Embedding jobs (the end stages differ): analytic stage collapse and the network rail collapse
 * against every GPU, 1d with 2 and 4 stages, 1F1B and interleaved, all three data-parallel modes. */
static void test_embedding(void **state) {
    (void)state;
    const layout_t analytic[] = {
        {MODEL_STRATEGY_1D, 2, 4, 1, 2, 1, 4, 1, 1, 2}, /* tp in the domain, stages share it */
        {MODEL_STRATEGY_1D, 2, 2, 1, 4, 1, 2, 1, 2, 1}, /* four stages across domains */
    };
    for (size_t i = 0; i < sizeof analytic / sizeof analytic[0]; i++)
        for (int d = 0; d < 3; d++) {
            const model_job_t job = emb_job_of(&analytic[i], 8, 8, (model_dp_comm_t)d);
            for (int32_t v = 1; v <= 2; v++) {
                const step_schedule_t sc = v > 1 ? STEP_SCHEDULE_INTERLEAVED : STEP_SCHEDULE_1F1B;
                model_job_t jv = job;
                jv.training.interleave = v;
                const step_result_t c = run(&jv, SIM_COMM_ANALYTIC, STEP_COLLAPSE_AUTO, sc, v, NULL);
                const step_result_t f = run(&jv, SIM_COMM_ANALYTIC, STEP_COLLAPSE_OFF, sc, v, NULL);
                assert_int_equal(c.collapsed, STEP_STAGES);
                same(&c, &f);
            }
        }
    const layout_t rails[] = {
        {MODEL_STRATEGY_1D, 2, 8, 1, 2, 1, 8, 1, 1, 1}, /* tp 8 fills a domain of 8 */
        {MODEL_STRATEGY_1D, 2, 4, 1, 4, 1, 4, 1, 1, 1}, /* tp 4 in a domain of 4, four stages */
    };
    const int64_t nvs[] = {8, 4};
    for (size_t i = 0; i < sizeof rails / sizeof rails[0]; i++)
        for (int d = 0; d < 3; d++) {
            const model_job_t job = emb_job_of(&rails[i], nvs[i], 8, (model_dp_comm_t)d);
            const step_result_t c =
                run(&job, SIM_COMM_NETWORK, STEP_COLLAPSE_AUTO, STEP_SCHEDULE_1F1B, 1, NULL);
            const step_result_t f =
                run(&job, SIM_COMM_NETWORK, STEP_COLLAPSE_OFF, STEP_SCHEDULE_1F1B, 1, NULL);
            if (c.collapsed != STEP_RAILS || !c.collapse_exact)
                fail_msg("layout %zu: not collapsed exactly: %s", i, c.collapse_note);
            assert_true(c.simulated_gpus < f.simulated_gpus);
            assert_true(c.breakdown.exposed_dp_comm_s > 0.0);
            same(&c, &f);
        }
}

static void test_network_refuses(void **state) {
    (void)state;
    /* tp 4 with 2 per domain: tensor traffic crosses NICs that pipeline traffic also uses */
    const layout_t l = {MODEL_STRATEGY_1D, 1, 4, 1, 2, 1, 2, 1, 1, 1};
    const model_job_t job = job_of(&l, 2, 4, MODEL_COMPAT_CORRECTED);
    const step_result_t r = run(&job, SIM_COMM_NETWORK, STEP_COLLAPSE_AUTO, STEP_SCHEDULE_1F1B, 1, NULL);
    assert_int_equal(r.collapsed, STEP_FULL);
    assert_non_null(strstr(r.collapse_note, "tensor traffic shares link"));
    const step_result_t a = run(&job, SIM_COMM_NETWORK, STEP_COLLAPSE_APPROX, STEP_SCHEDULE_1F1B, 1, NULL);
    assert_int_equal(a.collapsed, STEP_RAILS);
    assert_int_equal(a.collapse_exact, 0);
}

/* FNV-1a over every observed event. */
typedef struct hasher {
    uint64_t h;
    int64_t n;
} hasher_t;

static void mix(hasher_t *x, int64_t v) {
    for (int i = 0; i < 8; i++) {
        x->h ^= (uint64_t)(v >> (8 * i)) & 0xff;
        x->h *= 1099511628211ULL;
    }
    x->n++;
}

static void on_op(void *ctx, sim_time_ps_t t, const sim_op_info_t *op) {
    hasher_t *x = ctx;
    mix(x, t);
    mix(x, op->op);
    mix(x, op->gpu * 16 + op->stream);
}

static void on_flow(void *ctx, sim_time_ps_t t, const sim_flow_info_t *f) {
    hasher_t *x = ctx;
    mix(x, t);
    mix(x, f->flow);
    mix(x, (int64_t)f->bytes);
}

static void test_deterministic(void **state) {
    (void)state;
    const layout_t l = {MODEL_STRATEGY_1D, 2, 4, 1, 2, 1, 4, 1, 1, 1};
    const model_job_t job = job_of(&l, 4, 8, MODEL_COMPAT_CORRECTED);
    hasher_t h[2] = {{1469598103934665603ULL, 0}, {1469598103934665603ULL, 0}};
    step_result_t r[2];
    for (int i = 0; i < 2; i++) {
        const sim_observer_t obs = {&h[i], on_op, on_op, on_flow, on_flow, NULL};
        r[i] = run(&job, SIM_COMM_NETWORK, STEP_COLLAPSE_OFF, STEP_SCHEDULE_1F1B, 1, &obs);
    }
    assert_true(h[0].n > 1000);
    assert_int_equal(h[0].n, h[1].n);
    assert_true(h[0].h == h[1].h);
    assert_memory_equal(&r[0], &r[1], sizeof r[0]);
}

static void test_refusals(void **state) {
    (void)state;
    const layout_t l = {MODEL_STRATEGY_1D, 2, 2, 1, 2, 1, 2, 1, 1, 1};
    model_job_t job = job_of(&l, 8, 6, MODEL_COMPAT_CORRECTED);
    step_config_t cfg;
    step_config_default(&cfg);
    step_t *s = NULL;
    char err[256];
    /* network mode without a network */
    assert_int_equal(step_new(&job, &cfg, NULL, &s, err, sizeof err), SIM_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err, "network"));
    /* interleaved with 3 microbatches on 2 stages */
    cfg.comm = SIM_COMM_ANALYTIC;
    cfg.schedule = STEP_SCHEDULE_INTERLEAVED;
    cfg.virtual_stages = 2;
    assert_int_equal(step_new(&job, &cfg, NULL, &s, err, sizeof err), SIM_EINVAL);
    assert_non_null(strstr(err, "multiple of pp"));
    /* interleaved:3 does not divide 4 blocks per stage */
    job.global_batch = 8;
    cfg.virtual_stages = 3;
    assert_int_equal(step_new(&job, &cfg, NULL, &s, err, sizeof err), SIM_EINVAL);
    assert_non_null(strstr(err, "does not divide"));
    /* a job the model rejects */
    job.par.tp = 3;
    assert_int_equal(step_new(&job, &cfg, NULL, &s, err, sizeof err), SIM_EINVAL);
    assert_non_null(strstr(err, "job: "));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_analytic_stages), cmocka_unit_test(test_network_rails),
        cmocka_unit_test(test_network_refuses), cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_refusals),        cmocka_unit_test(test_embedding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
