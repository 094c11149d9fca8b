/* step/test_simulate.c - step_simulate, the one entry point from a checked job and a built topology
 * to a summed-up step: it gives what step_new/step_run give by hand (analytic and network); NCCL's
 * calibration follows the topology's link technologies (Slingshot 0.70, InfiniBand 0.94, A100 NVLink
 * 0.67) and is off on request; the busiest links are named; every stage's peak activations are
 * reported; a network without a topology and a failing before_run hook stop it with their stage; the
 * progress callback is called with a simulated time and operation count that never go back, ends at
 * every operation done, and changes nothing in the result; a step whose memory estimate exceeds the
 * budget is refused with one line naming both. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <igraph.h>

#include "step.h"
#include "topo.h"
#include "step_jobs.h"

/* 16 GPUs: dp 2, tp 4, pp 2 on NVLink domains of 4 (Perlmutter's nodes). */
static model_job_t small_job(void) {
    return step_test_small_job(2);
}

static topo_t *perlmutter(topo_tech_t network) {
    topo_params_t p;
    assert_int_equal(topo_params_preset("perlmutter", 16, &p), TOPO_OK);
    p.network = network;
    topo_t *t = NULL;
    topo_issue_t issue;
    assert_int_equal(topo_new(&p, &t, &issue), TOPO_OK);
    return t;
}

static void defaults(step_sim_options_t *o, sim_comm_mode_t comm) {
    memset(o, 0, sizeof *o);
    step_config_default(&o->step);
    o->step.comm = comm;
    o->calibrate = 1;
    o->links = 3;
}

/* The step by hand, for comparison. */
static double by_hand(const model_job_t *job, const step_config_t *cfg, const sim_network_desc_t *net) {
    step_t *s = NULL;
    char err[300];
    assert_int_equal(step_new(job, cfg, net, &s, err, sizeof err), SIM_OK);
    assert_int_equal(step_run(s), SIM_OK);
    step_result_t r;
    assert_int_equal(step_result(s, &r), SIM_OK);
    step_free(s);
    return r.step_time_s;
}

static void test_analytic(void **state) {
    (void)state;
    const model_job_t job = small_job();
    step_sim_options_t o;
    defaults(&o, SIM_COMM_ANALYTIC);
    step_sim_result_t r;
    assert_int_equal(step_simulate(&job, NULL, &o, &r), SIM_OK);
    assert_true(r.step.step_time_s > 0);
    assert_true(r.step.step_time_s == by_hand(&job, &o.step, NULL));
    assert_int_equal(r.calibrated, 0);
    assert_int_equal(r.n_links, 0);
    assert_non_null(r.stage_peak_activations_gb);
    for (int p = 0; p < 2; p++)
        assert_true(r.stage_peak_activations_gb[p] > 0);
    step_sim_result_destroy(&r);
    assert_null(r.stage_peak_activations_gb);
}

static void test_network_calibrated_by_technology(void **state) {
    (void)state;
    const model_job_t job = small_job();
    step_sim_options_t o;
    defaults(&o, SIM_COMM_NETWORK);
    topo_t *slingshot = perlmutter(TOPO_TECH_SLINGSHOT11), *ib = perlmutter(TOPO_TECH_IB_HDR);
    step_sim_result_t a, b;
    assert_int_equal(step_simulate(&job, slingshot, &o, &a), SIM_OK);
    assert_int_equal(step_simulate(&job, ib, &o, &b), SIM_OK);
    assert_int_equal(a.calibrated, 1);
    assert_true(a.engine.link_kind_efficiency[SIM_LINK_NETWORK] == 0.70);
    assert_true(b.engine.link_kind_efficiency[SIM_LINK_NETWORK] == 0.94);
    assert_true(a.engine.link_kind_efficiency[SIM_LINK_NVLINK] == 0.67); /* NVLink-3 nodes */
    /* the same as building the step by hand on the calibrated engine */
    step_config_t cfg = o.step;
    sim_config_nccl_topology(&cfg.engine, slingshot);
    sim_network_desc_t net;
    assert_int_equal(sim_topo_network(slingshot, &net), SIM_OK);
    assert_true(a.step.step_time_s == by_hand(&job, &cfg, &net));
    /* the busiest links, named, busiest first */
    assert_true(a.n_links >= 1 && a.n_links <= 3);
    for (int i = 0; i < a.n_links; i++) {
        assert_true(strlen(a.link_names[i]) > 0);
        assert_true(i == 0 || a.link_utilization[i] <= a.link_utilization[i - 1]);
    }
    /* uncalibrated: nominal links */
    o.calibrate = 0;
    step_sim_result_t c;
    assert_int_equal(step_simulate(&job, slingshot, &o, &c), SIM_OK);
    assert_int_equal(c.calibrated, 0);
    assert_true(c.engine.link_kind_efficiency[SIM_LINK_NETWORK] == 1.0);
    step_sim_result_destroy(&a);
    step_sim_result_destroy(&b);
    step_sim_result_destroy(&c);
    topo_free(slingshot);
    topo_free(ib);
}

static int failing_hook(void *ctx, step_t *step) {
    assert_non_null(step);
    ++*(int *)ctx;
    return 7;
}

static void test_errors(void **state) {
    (void)state;
    const model_job_t job = small_job();
    step_sim_options_t o;
    defaults(&o, SIM_COMM_NETWORK);
    step_sim_result_t r;
    assert_int_equal(step_simulate(&job, NULL, &o, &r), SIM_EINVAL);
    assert_int_equal(r.failed_at, STEP_SIM_AT_NETWORK);
    assert_non_null(strstr(r.error, "needs a topology"));
    step_sim_result_destroy(&r);
    defaults(&o, SIM_COMM_ANALYTIC);
    int calls = 0;
    o.before_run = failing_hook;
    o.ctx = &calls;
    assert_int_equal(step_simulate(&job, NULL, &o, &r), 7);
    assert_int_equal(r.failed_at, STEP_SIM_AT_HOOK);
    assert_int_equal(calls, 1);
    step_sim_result_destroy(&r);
    /* a configuration the step refuses: interleaved needs pp >= 2 virtual stages that divide */
    defaults(&o, SIM_COMM_ANALYTIC);
    o.step.schedule = STEP_SCHEDULE_INTERLEAVED;
    o.step.virtual_stages = 3;
    assert_int_equal(step_simulate(&job, NULL, &o, &r), SIM_EINVAL);
    assert_int_equal(r.failed_at, STEP_SIM_AT_BUILD);
    assert_true(strlen(r.error) > 0);
    step_sim_result_destroy(&r);
    /* the memory budget: the estimate is the fixed part plus so much per operation */
    assert_true(step_memory_estimate_gb(0) == STEP_MEMORY_BASE_BYTES * 1e-9);
    assert_true(step_memory_estimate_gb(1000000) ==
                (STEP_MEMORY_BASE_BYTES + 1e6 * STEP_MEMORY_BYTES_PER_OP) * 1e-9);
    assert_true(step_memory_budget_gb() > 0.0);
    defaults(&o, SIM_COMM_ANALYTIC);
    o.step.max_memory_gb = 0.1;
    assert_int_equal(step_simulate(&job, NULL, &o, &r), SIM_EINVAL);
    assert_non_null(strstr(r.error, "need about 0.2 GB, more than the memory budget of 0.1 GB"));
    step_sim_result_destroy(&r);
    o.step.max_memory_gb = 0.3;
    assert_int_equal(step_simulate(&job, NULL, &o, &r), SIM_OK);
    step_sim_result_destroy(&r);
}

typedef struct progress_log {
    int calls;
    int monotone;
    sim_progress_t last;
} progress_log_t;

static void log_progress(void *ctx, const sim_progress_t *p) {
    progress_log_t *l = ctx;
    if (l->calls > 0 && (p->now_ps < l->last.now_ps || p->ops_done < l->last.ops_done ||
                         p->events < l->last.events || p->ops_total != l->last.ops_total))
        l->monotone = 0;
    l->last = *p;
    l->calls++;
}

static void test_progress(void **state) {
    (void)state;
    const model_job_t job = small_job();
    topo_t *t = perlmutter(TOPO_TECH_SLINGSHOT11);
    step_sim_options_t o;
    defaults(&o, SIM_COMM_NETWORK);
    step_sim_result_t plain, watched;
    assert_int_equal(step_simulate(&job, t, &o, &plain), SIM_OK);
    progress_log_t log = {0, 1, {0, 0, 0, 0}};
    o.progress = log_progress;
    o.progress_ctx = &log;
    assert_int_equal(step_simulate(&job, t, &o, &watched), SIM_OK);
    /* called during the run (this step has more than SIM_PROGRESS_EVERY timestamps) and at its end */
    assert_true(log.calls >= 2);
    assert_int_equal(log.monotone, 1);
    assert_true(log.last.ops_total > 0);
    assert_int_equal(log.last.ops_done, log.last.ops_total);
    assert_true(log.last.events > 0);
    assert_true(log.last.now_ps > 0 && sim_ps_to_s(log.last.now_ps) <= plain.step.step_time_s);
    /* the same result, figure for figure */
    assert_true(watched.step.step_time_s == plain.step.step_time_s);
    const step_breakdown_t *a = &watched.step.breakdown, *b = &plain.step.breakdown;
    assert_true(a->compute_s == b->compute_s && a->exposed_tp_comm_s == b->exposed_tp_comm_s &&
                a->exposed_pp_comm_s == b->exposed_pp_comm_s &&
                a->exposed_dp_comm_s == b->exposed_dp_comm_s && a->bubble_idle_s == b->bubble_idle_s);
    assert_int_equal(watched.step.critical_gpu, plain.step.critical_gpu);
    assert_int_equal(watched.step.operations, plain.step.operations);
    assert_int_equal(watched.step.events, plain.step.events);
    assert_int_equal(watched.step.flows, plain.step.flows);
    assert_true(watched.step.peak_memory_gb == plain.step.peak_memory_gb);
    assert_int_equal(watched.n_links, plain.n_links);
    for (int i = 0; i < plain.n_links; i++) {
        assert_string_equal(watched.link_names[i], plain.link_names[i]);
        assert_true(watched.link_utilization[i] == plain.link_utilization[i]);
    }
    for (int p = 0; p < 2; p++)
        assert_true(watched.stage_peak_activations_gb[p] == plain.stage_peak_activations_gb[p]);
    step_sim_result_destroy(&plain);
    step_sim_result_destroy(&watched);
    topo_free(t);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_analytic),
                                       cmocka_unit_test(test_network_calibrated_by_technology),
                                       cmocka_unit_test(test_errors), cmocka_unit_test(test_progress)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
