/* step_jobs.h - the small jobs several tests/step tests run (include after <cmocka.h> and "step.h").
 * One definition each, so a new model or layout field changes one place. */
#ifndef STEPSIM_TESTS_STEP_JOBS_H
#define STEPSIM_TESTS_STEP_JOBS_H

#include <string.h>

#include "model.h"

/* 8 pp GPUs: dp 2, tp 4 on NVLink domains of 4 (Perlmutter's nodes), 4 layers per stage, a small GPT,
 * global batch 8, corrected model; checked by model_job_check. */
static inline model_job_t step_test_small_job(int64_t pp) {
    model_job_t job;
    memset(&job, 0, sizeof job);
    assert_int_equal(model_system_preset("A100", &job.system), MODEL_OK);
    job.system.nvlink_size = 4;
    const model_transformer_t t = {
        .name = "small", .seq_len = 512, .hidden = 1024, .heads = 16, .layers = 4 * pp, .ffn_hidden = 4096};
    job.model = t;
    const model_parallel_t par = {MODEL_STRATEGY_1D, 2, 4, 4, 1, pp, 1, 1, 4, 1, 1, 1};
    job.par = par;
    job.gpus = 8 * pp;
    job.global_batch = 8;
    job.compat = MODEL_COMPAT_CORRECTED;
    model_issue_t issue;
    if (model_job_check(&job, &issue) != MODEL_OK)
        fail_msg("bad test job: %s %s (%s)", issue.field, issue.value, issue.allowed);
    return job;
}

/* A pipeline whose only cost is compute: pp stages of one GPU, m microbatches of one sequence of
 * seq_len, tensor and data parallelism 1, links so fast that a pipeline message rounds to 0 ps. */
static inline model_job_t step_test_compute_job(int64_t pp, int64_t layers, int64_t m, int64_t hidden,
                                                int64_t seq_len, model_compat_t compat) {
    model_job_t job;
    memset(&job, 0, sizeof job);
    assert_int_equal(model_system_preset("A100", &job.system), MODEL_OK);
    job.system.ib_gb_per_s = job.system.nvlink_gb_per_s = 1e12;
    job.system.ib_latency_s = job.system.nvlink_latency_s = 0.0;
    job.system.nvlink_size = 1;
    const model_transformer_t t = {.name = "test",
                                   .seq_len = seq_len,
                                   .hidden = hidden,
                                   .heads = 8,
                                   .layers = layers,
                                   .ffn_hidden = 4 * hidden};
    job.model = t;
    job.gpus = pp;
    job.global_batch = m;
    const model_parallel_t par = {MODEL_STRATEGY_1D, 1, 1, 1, 1, pp, 1, 1, 1, 1, 1, 1};
    job.par = par;
    job.compat = compat;
    return job;
}

/* The ideal star of a job's system (include "step.h" first): every GPU with its own NIC and NVLink
 * port at the system's bandwidths, half of each latency per end, NVLink domains of nvlink_size.
 * The caller destroys *star after the last step that uses *net. */
static inline void step_test_star(const model_job_t *job, sim_star_t *star, sim_network_desc_t *net) {
    const model_system_t *sy = &job->system;
    const sim_star_params_t sp = {.n_gpus = (int32_t)job->gpus,
                                  .nic_bytes_per_s = sy->ib_gb_per_s * 1e9 * (double)sy->nic_factor,
                                  .nic_latency_s = sy->ib_latency_s / 2,
                                  .gpus_per_domain = (int32_t)sy->nvlink_size,
                                  .nvlink_bytes_per_s = sy->nvlink_gb_per_s * 1e9,
                                  .nvlink_latency_s = sy->nvlink_latency_s / 2};
    assert_int_equal(sim_star_init(star, &sp), SIM_OK);
    sim_star_network(star, net);
}

/* job's step with communication comm (net: the network in network mode, else NULL) at layer
 * granularity, built and run; fails the test on any error. The caller frees it. */
static inline step_t *step_test_run(const model_job_t *job, sim_comm_mode_t comm,
                                    const sim_network_desc_t *net) {
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.comm = comm;
    cfg.granularity = STEP_GRANULARITY_LAYER;
    step_t *s = NULL;
    char err[256];
    if (step_new(job, &cfg, net, &s, err, sizeof err) != SIM_OK)
        fail_msg("step_new: %s", err);
    if (step_run(s) != SIM_OK)
        fail_msg("step_run: %s", step_last_error(s));
    return s;
}

/* The bytes every parallel group sends over job's step on its ideal star (network mode, every GPU
 * simulated: t->partial must be 0). */
static inline void step_test_traffic(const model_job_t *job, step_traffic_t *t) {
    sim_star_t star;
    sim_network_desc_t net;
    step_test_star(job, &star, &net);
    step_t *s = step_test_run(job, SIM_COMM_NETWORK, &net);
    assert_int_equal(step_group_traffic(s, t), SIM_OK);
    assert_int_equal(t->partial, 0);
    step_free(s);
    sim_star_destroy(&star);
}

/* A small GPT on A100s for the data-parallel tests: tp inside an NVLink domain of tp GPUs, dp and pp
 * across domains; interleave 0 or 1: none; ib_gb_per_s 0: the A100 preset's. Checked by
 * model_job_check. */
typedef struct step_test_spec {
    int64_t tp, dp, pp, layers, gbs, interleave;
    double ib_gb_per_s; /* 0: the A100 preset's */
    int embedding;
    model_dp_comm_t dp_comm;
} step_test_spec_t;

static inline model_job_t step_test_gpt_job(const step_test_spec_t *sp) {
    model_job_t job;
    memset(&job, 0, sizeof job);
    assert_int_equal(model_system_preset("A100", &job.system), MODEL_OK);
    job.system.nvlink_size = sp->tp;
    if (sp->ib_gb_per_s > 0.0)
        job.system.ib_gb_per_s = sp->ib_gb_per_s;
    const model_transformer_t t = {.name = "small",
                                   .seq_len = 2048,
                                   .hidden = 2048,
                                   .heads = 16,
                                   .layers = sp->layers,
                                   .ffn_hidden = 8192,
                                   .vocab = 50257};
    job.model = t;
    const model_parallel_t par = {
        MODEL_STRATEGY_1D, sp->dp, sp->tp, sp->tp, 1, sp->pp, 1, 1, sp->tp, 1, 1, 1};
    job.par = par;
    job.gpus = sp->tp * sp->dp * sp->pp;
    job.global_batch = sp->gbs;
    job.compat = MODEL_COMPAT_CORRECTED;
    job.training.optimizer_step = 1;
    job.training.embedding = sp->embedding;
    job.training.interleave = sp->interleave;
    job.training.dp_comm = sp->dp_comm;
    model_issue_t issue;
    if (model_job_check(&job, &issue) != MODEL_OK)
        fail_msg("bad test job: %s %s (%s)", issue.field, issue.value, issue.allowed);
    return job;
}

#endif
