/* step/test_innet.c - in-network reductions in the simulated step (docs/what-if.md, "In-network
 * reductions"): on two DGX H100 nodes with plain tensor parallelism (all-reduces inside a node),
 * step_simulate's calibrated engine has NVLink SHARP on and the step equals the step built by hand on
 * that engine, and is shorter than the same step with config.nvls 0; on A100 nodes NVLS stays off.
 * With config.collnet 1 (NCCL's CollNet, off by default as NCCL's) the data-parallel all-reduces
 * across the nodes run InfiniBand SHARP and the step changes; with it 0 it is the default step. */
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

/* 16 GPUs: dp 2 across two nodes, tp 8 inside each, all-reduces for TP and DP. */
static model_job_t job_on(const char *system) {
    model_job_t job;
    memset(&job, 0, sizeof job);
    assert_int_equal(model_system_preset(system, &job.system), MODEL_OK);
    job.system.nvlink_size = 8;
    const model_transformer_t t = {
        .name = "small", .seq_len = 2048, .hidden = 4096, .heads = 32, .layers = 8, .ffn_hidden = 16384};
    job.model = t;
    const model_parallel_t par = {MODEL_STRATEGY_1D, 2, 8, 8, 1, 1, 1, 1, 8, 1, 1, 1};
    job.par = par;
    job.gpus = 16;
    job.global_batch = 16;
    job.compat = MODEL_COMPAT_CORRECTED;
    job.training.sequence_parallel = MODEL_SEQPAR_OFF;
    job.training.dp_comm = MODEL_DP_ALLREDUCE;
    model_issue_t issue;
    if (model_job_check(&job, &issue) != MODEL_OK)
        fail_msg("bad test job: %s %s (%s)", issue.field, issue.value, issue.allowed);
    return job;
}

static topo_t *preset(const char *name) {
    topo_params_t p;
    assert_int_equal(topo_params_preset(name, 16, &p), TOPO_OK);
    topo_t *t = NULL;
    topo_issue_t issue;
    assert_int_equal(topo_new(&p, &t, &issue), TOPO_OK);
    return t;
}

static double by_hand(const model_job_t *job, const step_config_t *cfg, const topo_t *t) {
    sim_network_desc_t net;
    assert_int_equal(sim_topo_network(t, &net), SIM_OK);
    step_t *s = NULL;
    char err[300];
    assert_int_equal(step_new(job, cfg, &net, &s, err, sizeof err), SIM_OK);
    assert_int_equal(step_run(s), SIM_OK);
    step_result_t r;
    assert_int_equal(step_result(s, &r), SIM_OK);
    step_free(s);
    return r.step_time_s;
}

static void test_nvls_in_step(void **state) {
    (void)state;
    const model_job_t job = job_on("H100");
    topo_t *t = preset("dgx-h100-superpod");
    step_sim_options_t o;
    memset(&o, 0, sizeof o);
    step_config_default(&o.step);
    o.calibrate = 1;
    step_sim_result_t r;
    assert_int_equal(step_simulate(&job, t, &o, &r), SIM_OK);
    assert_int_equal(r.engine.nvls, 1);
    step_config_t cfg = o.step;
    sim_config_nccl_topology(&cfg.engine, t);
    assert_true(r.step.step_time_s == by_hand(&job, &cfg, t));
    cfg.engine.nvls = 0;
    const double without = by_hand(&job, &cfg, t);
    print_message("2 x 8 H100, tp 8 all-reduces: step %.6f s with NVLS, %.6f s without\n", r.step.step_time_s,
                  without);
    assert_true(r.step.step_time_s < without);
    /* CollNet: off by default; on, the data-parallel all-reduce across the nodes changes the step */
    assert_int_equal(r.engine.collnet, 0);
    cfg.engine.nvls = 1;
    cfg.engine.collnet = 1;
    const double collnet = by_hand(&job, &cfg, t);
    print_message("... with CollNet: %.6f s\n", collnet);
    assert_true(collnet != r.step.step_time_s);
    step_sim_result_destroy(&r);
    topo_free(t);
}

static void test_a100_unchanged(void **state) {
    (void)state;
    const model_job_t job = job_on("A100");
    topo_t *t = preset("dgx-a100-superpod");
    step_sim_options_t o;
    memset(&o, 0, sizeof o);
    step_config_default(&o.step);
    o.calibrate = 1;
    step_sim_result_t r;
    assert_int_equal(step_simulate(&job, t, &o, &r), SIM_OK);
    assert_int_equal(r.engine.nvls, 0);
    step_config_t cfg = o.step;
    sim_config_nccl_topology(&cfg.engine, t);
    cfg.engine.nvls = 1; /* the A100 node's routes go through its NVSwitch: only config.nvls keeps it off */
    assert_true(by_hand(&job, &cfg, t) != r.step.step_time_s);
    step_sim_result_destroy(&r);
    topo_free(t);
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_ignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvls_in_step),
        cmocka_unit_test(test_a100_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
