/* step/test_overlap.c - Megatron-Core's overlaps in the closed form and in the simulated step.
 *
 * Tensor-parallel communication overlap (training.tp_comm_overlap): the layer table attaches every
 * tensor-parallel collective of a block to the GEMM it feeds (ring exchange) or follows (pipelined
 * chunks), with model_overlap_exposed_s as the exposed time; the simulated step runs the GEMM in tp
 * pieces on the compute stream and the collective's chunks on the TP stream as operations of their
 * own. The distributed optimizer with overlapped gradient reduce-scatter and parameter all-gather is
 * training.dp_comm sharded (per-block buckets: the all-gathers back to back under the first
 * microbatch's forward, the reduce-scatters under the last one's backward). On one pipeline stage
 * with analytic communication the closed forms are exact, and the simulation must reproduce them:
 * the step time, the exposed tensor- and data-parallel communication, to a picosecond per operation,
 * both where the compute hides the communication and where it cannot (slow links). */
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

typedef struct spec {
    int64_t tp, dp, layers, gbs;
    int overlap;
    double nvlink_gb_per_s, ib_gb_per_s; /* 0: the A100 preset's */
    model_dp_comm_t dp_comm;
    model_recompute_t recompute;
    int64_t cp; /* 0 or 1: 1d; else 2d-seqp with tp1 = tp, tp2 = cp */
    model_cp_comm_t cp_comm;
} spec_t;

/* A small GPT on A100s, one pipeline stage: tp x dp GPUs, tp inside NVLink domains of tp GPUs, dp
 * across them (one member per domain). */
static model_job_t job_of(const spec_t *sp) {
    model_job_t job;
    memset(&job, 0, sizeof job);
    assert_int_equal(model_system_preset("A100", &job.system), MODEL_OK);
    const int64_t cp = sp->cp > 1 ? sp->cp : 1;
    job.system.nvlink_size = sp->tp * cp;
    if (sp->nvlink_gb_per_s > 0.0)
        job.system.nvlink_gb_per_s = sp->nvlink_gb_per_s;
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
    const model_parallel_t par = {cp > 1 ? MODEL_STRATEGY_2D_SEQP : MODEL_STRATEGY_1D,
                                  sp->dp,
                                  sp->tp * cp,
                                  sp->tp,
                                  cp,
                                  1,
                                  1,
                                  1,
                                  sp->tp,
                                  cp,
                                  1,
                                  1};
    job.par = par;
    job.gpus = sp->tp * cp * sp->dp;
    job.training.cp_comm = sp->cp_comm;
    job.global_batch = sp->gbs;
    job.compat = MODEL_COMPAT_CORRECTED;
    job.training.optimizer_step = 1;
    job.training.dp_comm = sp->dp_comm;
    job.training.recompute = sp->recompute;
    job.training.tp_comm_overlap = sp->overlap;
    model_issue_t issue;
    if (model_job_check(&job, &issue) != MODEL_OK)
        fail_msg("bad test job: %s %s (%s)", issue.field, issue.value, issue.allowed);
    return job;
}

static step_result_t simulate(const model_job_t *job) {
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.comm = SIM_COMM_ANALYTIC;
    cfg.granularity = STEP_GRANULARITY_LAYER; /* every chunk an operation of its own */
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

static void close_to(const char *what, const char *quantity, double sim, double model, int64_t ops) {
    const double tol = 1e-12 * (double)ops + 1e-9 * fabs(model);
    if (fabs(sim - model) > tol)
        fail_msg("%s: %s simulated %.12g s, closed form %.12g s (difference %.3g s, allowed %.3g s)", what,
                 quantity, sim, model, sim - model, tol);
}

static const char *describe(const spec_t *sp, char *buf, size_t n) {
    snprintf(buf, n,
             "tp %lld cp %lld (%s) dp %lld layers %lld gbs %lld overlap %d nvlink %g ib %g dp_comm %s "
             "recompute %s",
             (long long)sp->tp, (long long)sp->cp, model_cp_comm_name(sp->cp_comm), (long long)sp->dp,
             (long long)sp->layers, (long long)sp->gbs, sp->overlap, sp->nvlink_gb_per_s, sp->ib_gb_per_s,
             model_dp_comm_name(sp->dp_comm), model_recompute_name(sp->recompute));
    return buf;
}

/* The step against the closed form: its time, and the exposed tensor- and data-parallel time. */
static void check_against_model(const spec_t *sp) {
    char what[200];
    describe(sp, what, sizeof what);
    const model_job_t job = job_of(sp);
    static model_estimate_t e;
    assert_int_equal(model_estimate(&job, &e), MODEL_OK);
    const step_result_t r = simulate(&job);
    const model_summary_t *su = &e.summary;
    close_to(what, "step time", r.step_time_s, su->iteration_time_s, r.operations);
    close_to(what, "exposed tensor-parallel communication", r.breakdown.exposed_tp_comm_s, su->tp_comm_s,
             r.operations);
    close_to(what, "exposed data-parallel communication", r.breakdown.exposed_dp_comm_s, su->dp_comm_s,
             r.operations);
    /* the acceptance bound, stated as such */
    assert_true(fabs(r.step_time_s - su->iteration_time_s) <= 0.01 * su->iteration_time_s);
}

/* Every pass of a GEMM with its collective: the closed form with the layer's own numbers. */
static void check_layer_table(const spec_t *sp) {
    char what[200];
    describe(sp, what, sizeof what);
    const model_job_t job = job_of(sp);
    spec_t off = *sp;
    off.overlap = 0;
    const model_job_t plain = job_of(&off);
    static model_block_t with, without;
    model_block_build(&job, &with);
    model_block_build(&plain, &without);
    int overlapped = 0;
    double vol_with = 0.0, vol_without = 0.0;
    for (int i = 0; i < with.n_layers; i++) {
        for (int pass = 0; pass < 2; pass++) {
            const model_pass_t *p = pass ? &with.layers[i].bwd : &with.layers[i].fwd;
            const model_pass_t *q = pass ? &without.layers[i].bwd : &without.layers[i].fwd;
            for (int c = 0; c < p->n_colls; c++)
                vol_with += p->colls[c].volume_gb;
            for (int c = 0; c < q->n_colls; c++)
                vol_without += q->colls[c].volume_gb;
            if (p->overlap == MODEL_OVERLAP_NONE)
                continue;
            overlapped++;
            assert_int_equal(p->n_colls, 1);
            /* forward: the ring before qkv and fc1, pipelined after vproj and fc2; backward: the ring
             * before vproj and fc2, bulk beside qkv's and fc1's weight-gradient GEMM */
            const int col =
                strcmp(with.layers[i].name, "qkv") == 0 || strcmp(with.layers[i].name, "fc1") == 0;
            const model_overlap_t method = col ? (pass ? MODEL_OVERLAP_BULK : MODEL_OVERLAP_RING)
                                               : (pass ? MODEL_OVERLAP_RING : MODEL_OVERLAP_PIPELINE);
            assert_int_equal(p->overlap, method);
            assert_int_equal(p->chunks, method == MODEL_OVERLAP_BULK ? 2 : sp->tp);
            const double tc = p->colls[0].time_s, g = fmax(p->comp_s, p->mem_s), n = (double)p->chunks;
            const double want = p->overlap == MODEL_OVERLAP_PIPELINE ? fmax(tc / n, tc - g + g / n)
                                                                     : fmax(0.0, tc - g + g / n);
            if (fabs(p->comm_s - want) > 1e-15 + 1e-12 * want)
                fail_msg("%s: %s %s exposed %.12g s, closed form %.12g s", what, with.layers[i].name,
                         pass ? "backward" : "forward", p->comm_s, want);
            assert_true(fabs(p->time_s - (g + p->comm_s)) <= 1e-15 + 1e-12 * p->time_s);
        }
    }
    /* qkv, vproj, fc1, fc2 in both passes carry one collective each: all eight of the block */
    assert_int_equal(overlapped, 8);
    assert_true(fabs(vol_with - vol_without) <= 1e-12 * vol_without);
    assert_true(with.t_fwd_s + with.t_bwd_s < without.t_fwd_s + without.t_bwd_s);
    assert_true(with.flops_tflop == without.flops_tflop);
}

/* The GEMMs with their chunked all-gather and reduce-scatter: the compute hides the communication
 * (A100 NVLink), and it cannot (NVLink at 5 GB/s). */
static void test_tp_overlap(void **state) {
    (void)state;
    const double nvlink[] = {0.0, 5.0};
    const int64_t tps[] = {2, 4, 8};
    for (size_t a = 0; a < sizeof nvlink / sizeof nvlink[0]; a++)
        for (size_t b = 0; b < sizeof tps / sizeof tps[0]; b++) {
            const spec_t sp = {tps[b],
                               1,
                               2,
                               2,
                               1,
                               nvlink[a],
                               0.0,
                               MODEL_DP_SHARDED,
                               MODEL_RECOMPUTE_NONE,
                               0,
                               MODEL_CP_ALLGATHER};
            check_layer_table(&sp);
            check_against_model(&sp);
        }
}

/* Off, the step is what it was: the overlap changes only the jobs that ask for it. */
static void test_tp_overlap_off_unchanged(void **state) {
    (void)state;
    const spec_t sp = {
        4, 1, 2, 2, 0, 0.0, 0.0, MODEL_DP_SHARDED, MODEL_RECOMPUTE_NONE, 0, MODEL_CP_ALLGATHER};
    check_against_model(&sp);
    const model_job_t job = job_of(&sp);
    static model_block_t blk;
    model_block_build(&job, &blk);
    for (int i = 0; i < blk.n_layers; i++)
        assert_int_equal(blk.layers[i].fwd.overlap + blk.layers[i].bwd.overlap, MODEL_OVERLAP_NONE);
}

/* The distributed optimizer (dp_comm sharded): the reduce-scatters under the last microbatch's
 * backward and the all-gathers under the first one's forward, hidden (scale-out at the A100's 25
 * GB/s) or not (2 GB/s); with and without the tensor-parallel overlap, selective recomputation. */
static void test_distributed_optimizer(void **state) {
    (void)state;
    const double ib[] = {0.0, 2.0};
    for (size_t a = 0; a < sizeof ib / sizeof ib[0]; a++)
        for (int overlap = 0; overlap < 2; overlap++) {
            const spec_t sp = {2,
                               4,
                               3,
                               16,
                               overlap,
                               0.0,
                               ib[a],
                               MODEL_DP_SHARDED,
                               MODEL_RECOMPUTE_SELECTIVE,
                               0,
                               MODEL_CP_ALLGATHER};
            check_against_model(&sp);
        }
    /* the optimizer states are sharded over dp (ZeRO-1), replicated with the all-reduce */
    spec_t sp = {2, 4, 3, 16, 1, 0.0, 0.0, MODEL_DP_SHARDED, MODEL_RECOMPUTE_NONE, 0, MODEL_CP_ALLGATHER};
    static model_estimate_t sharded, replicated;
    model_job_t job = job_of(&sp);
    assert_int_equal(model_estimate(&job, &sharded), MODEL_OK);
    sp.dp_comm = MODEL_DP_ALLREDUCE;
    job = job_of(&sp);
    assert_int_equal(model_estimate(&job, &replicated), MODEL_OK);
    assert_true(fabs(sharded.summary.optimizer_gb * 4.0 - replicated.summary.optimizer_gb) <=
                1e-12 * replicated.summary.optimizer_gb);
}

/* Context parallelism as Megatron-Core runs it (training.cp_comm ring): K and V passed around the cp
 * ranks in cp - 1 steps under the attention's cp pieces, forward and backward (the backward with
 * their gradients, and with selective recomputation the recomputed forward's exchange too); with and
 * without the tensor-parallel overlap, hidden and exposed (NVLink at 2 GB/s). */
static void test_cp_ring(void **state) {
    (void)state;
    const double nvlink[] = {0.0, 2.0};
    const model_recompute_t rec[] = {MODEL_RECOMPUTE_NONE, MODEL_RECOMPUTE_SELECTIVE};
    for (size_t a = 0; a < sizeof nvlink / sizeof nvlink[0]; a++)
        for (size_t r = 0; r < sizeof rec / sizeof rec[0]; r++)
            for (int overlap = 0; overlap < 2; overlap++) {
                const spec_t sp = {
                    2, 2, 2, 4, overlap, nvlink[a], 0.0, MODEL_DP_SHARDED, rec[r], 4, MODEL_CP_RING};
                check_against_model(&sp);
                /* the attention's passes: one ring over its context-parallel collectives */
                const model_job_t job = job_of(&sp);
                static model_block_t blk;
                model_block_build(&job, &blk);
                const model_layer_t *fa = &blk.layers[1];
                assert_string_equal(fa->name, "fusedla");
                for (int pass = 0; pass < 2; pass++) {
                    const model_pass_t *p = pass ? &fa->bwd : &fa->fwd;
                    assert_int_equal(p->overlap, MODEL_OVERLAP_RING);
                    assert_int_equal(p->chunks, 4);
                    double t = 0.0;
                    for (int c = 0; c < p->n_colls; c++)
                        t += p->colls[c].time_s;
                    const double g = p->comp_s + p->mem_exposed_s;
                    assert_true(fabs(p->comm_s - fmax(0.0, t - g + g / 4.0)) <= 1e-15 + 1e-12 * t);
                }
            }
    /* the ring exposes less than the all-gather it replaces */
    spec_t sp = {2, 2, 2, 4, 0, 2.0, 0.0, MODEL_DP_SHARDED, MODEL_RECOMPUTE_NONE, 4, MODEL_CP_RING};
    static model_estimate_t ring, gather;
    model_job_t job = job_of(&sp);
    assert_int_equal(model_estimate(&job, &ring), MODEL_OK);
    sp.cp_comm = MODEL_CP_ALLGATHER;
    job = job_of(&sp);
    assert_int_equal(model_estimate(&job, &gather), MODEL_OK);
    assert_true(ring.summary.tp_comm_s < gather.summary.tp_comm_s);
    /* and only with 2d-seqp */
    job.par.strategy = MODEL_STRATEGY_1D;
    job.par.tp2 = job.par.nv_tp2 = 1;
    job.par.tp = job.par.tp1;
    job.gpus = job.par.tp * job.par.dp;
    job.training.cp_comm = MODEL_CP_RING;
    model_issue_t issue;
    assert_int_equal(model_job_check(&job, &issue), MODEL_EINVAL);
    assert_string_equal(issue.field, "training.cp_comm");
}

/* The rules: SUMMA, sequence parallelism off and full recomputation are refused with the field named. */
static void test_overlap_rules(void **state) {
    (void)state;
    const spec_t sp = {
        2, 1, 2, 2, 1, 0.0, 0.0, MODEL_DP_SHARDED, MODEL_RECOMPUTE_NONE, 0, MODEL_CP_ALLGATHER};
    model_job_t job = job_of(&sp);
    model_issue_t issue;
    job.training.recompute = MODEL_RECOMPUTE_FULL;
    assert_int_equal(model_job_check(&job, &issue), MODEL_EINVAL);
    assert_string_equal(issue.field, "training.tp_comm_overlap");
    job.training.recompute = MODEL_RECOMPUTE_NONE;
    job.training.sequence_parallel = MODEL_SEQPAR_OFF;
    assert_int_equal(model_job_check(&job, &issue), MODEL_EINVAL);
    assert_string_equal(issue.field, "training.tp_comm_overlap");
    job.training.sequence_parallel = MODEL_SEQPAR_ON;
    job.training.tp_comm_overlap = 2;
    assert_int_equal(model_job_check(&job, &issue), MODEL_EINVAL);
    assert_string_equal(issue.field, "training.tp_comm_overlap");
    /* the reference ignores it, bit for bit */
    job.training.tp_comm_overlap = 1;
    job.compat = MODEL_COMPAT_REFERENCE;
    static model_estimate_t a, b;
    assert_int_equal(model_estimate(&job, &a), MODEL_OK);
    job.training.tp_comm_overlap = 0;
    assert_int_equal(model_estimate(&job, &b), MODEL_OK);
    assert_true(a.summary.iteration_time_s == b.summary.iteration_time_s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tp_overlap),
        cmocka_unit_test(test_tp_overlap_off_unchanged),
        cmocka_unit_test(test_distributed_optimizer),
        cmocka_unit_test(test_cp_ring),
        cmocka_unit_test(test_overlap_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
