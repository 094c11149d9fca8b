/* step/test_training.c - the corrected model's training options in the simulated step: the embedding
 * and output layer on the first and last virtual stage, the tied embedding's gradient all-reduce
 * between them, and Megatron's data-parallel all-reduce (after the backward, or in per-block buckets
 * during the last microbatch's backward). With analytic communication and 1F1B the step reproduces
 * model_estimate to a picosecond per operation once the one residual is taken off: the last stage,
 * the slowest with the output layer, sends no activations, so of the model's 2 p2p per microbatch
 * and stage it pays one (docs/run.md: m + 1 hops on the critical path). Also the exposed
 * data-parallel time and the activation peaks of the end stages, interleaved schedules (between the
 * closed form less those hops and that plus the edge layers' share of the bubble the closed form
 * divides by v, which the schedule does not), the overlapped and sharded variants against their
 * bounds, a network run, and the refusal of embedding outside 1d. */
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
    int64_t pp, v;
    int seq_off, recompute_full;
    model_dp_comm_t dp_comm;
} spec_t;

/* A small GPT (8 blocks, vocabulary 50,257) on A100s, tp 2 x dp 2 in NVLink domains of 4 (the nv
 * counts match the placement), pp stages across domains, 8 microbatches. */
static model_job_t job_of(const spec_t *sp) {
    model_job_t job;
    memset(&job, 0, sizeof job);
    assert_int_equal(model_system_preset("A100", &job.system), MODEL_OK);
    job.system.nvlink_size = 4;
    const model_transformer_t t = {.name = "small",
                                   .seq_len = 1024,
                                   .hidden = 1024,
                                   .heads = 16,
                                   .layers = 8,
                                   .ffn_hidden = 4096,
                                   .vocab = 50257};
    job.model = t;
    const model_parallel_t par = {MODEL_STRATEGY_1D, 2, 2, 2, 1, sp->pp, 1, 1, 2, 1, 2, 1};
    job.par = par;
    job.gpus = 4 * sp->pp;
    job.global_batch = 16;
    job.compat = MODEL_COMPAT_CORRECTED;
    job.training.embedding = 1;
    job.training.optimizer_step = 1;
    job.training.dp_comm = sp->dp_comm;
    job.training.sequence_parallel = sp->seq_off ? MODEL_SEQPAR_OFF : MODEL_SEQPAR_ON;
    job.training.recompute = sp->recompute_full ? MODEL_RECOMPUTE_FULL : MODEL_RECOMPUTE_NONE;
    job.training.interleave = sp->v > 1 ? sp->v : 0;
    model_issue_t issue;
    if (model_job_check(&job, &issue) != MODEL_OK)
        fail_msg("bad test job: %s %s (%s)", issue.field, issue.value, issue.allowed);
    return job;
}

typedef struct outcome {
    step_result_t r;
    double first_peak_gb, last_peak_gb; /* activation peaks of GPU 0 and the last stage's first GPU */
} outcome_t;

typedef struct net {
    sim_star_t star;
    sim_network_desc_t desc;
} net_t;

static outcome_t simulate(const model_job_t *job, int64_t v, sim_comm_mode_t comm, step_collapse_t collapse) {
    net_t n;
    memset(&n, 0, sizeof n);
    if (comm == SIM_COMM_NETWORK) {
        const model_system_t *s = &job->system;
        const sim_star_params_t p = {.n_gpus = (int32_t)job->gpus,
                                     .nic_bytes_per_s = s->ib_gb_per_s * 1e9 * (double)s->nic_factor,
                                     .nic_latency_s = s->ib_latency_s / 2,
                                     .gpus_per_domain = (int32_t)s->nvlink_size,
                                     .nvlink_bytes_per_s = s->nvlink_gb_per_s * 1e9,
                                     .nvlink_latency_s = s->nvlink_latency_s / 2};
        assert_int_equal(sim_star_init(&n.star, &p), SIM_OK);
        sim_star_network(&n.star, &n.desc);
    }
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.comm = comm;
    cfg.collapse = collapse;
    if (v > 1) {
        cfg.schedule = STEP_SCHEDULE_INTERLEAVED;
        cfg.virtual_stages = (int32_t)v;
    }
    step_t *s = NULL;
    char err[256];
    if (step_new(job, &cfg, comm == SIM_COMM_NETWORK ? &n.desc : NULL, &s, err, sizeof err) != SIM_OK)
        fail_msg("step_new: %s", err);
    if (step_run(s) != SIM_OK)
        fail_msg("step_run: %s", step_last_error(s));
    outcome_t o;
    assert_int_equal(step_result(s, &o.r), SIM_OK);
    const int64_t x0[STEP_DIM_COUNT] = {0, 0, 0, 0}, xl[STEP_DIM_COUNT] = {0, 0, job->par.pp - 1, 0};
    step_placement_t pl;
    step_placement_default(&pl);
    o.first_peak_gb = step_gpu_peak_activations_gb(s, (int32_t)step_placement_gpu(&pl, &job->par, x0));
    o.last_peak_gb = step_gpu_peak_activations_gb(s, (int32_t)step_placement_gpu(&pl, &job->par, xl));
    step_free(s);
    if (comm == SIM_COMM_NETWORK)
        sim_star_destroy(&n.star);
    return o;
}

static void breakdown_adds_up(const char *what, const step_result_t *r) {
    const step_breakdown_t *b = &r->breakdown;
    const double sum =
        b->compute_s + b->exposed_tp_comm_s + b->exposed_pp_comm_s + b->exposed_dp_comm_s + b->bubble_idle_s;
    if (fabs(sum - r->step_time_s) > 1e-9 * r->step_time_s)
        fail_msg("%s: the breakdown adds up to %.12g s, the step is %.12g s", what, sum, r->step_time_s);
}

static const char *describe(const spec_t *sp, char *buf, size_t size) {
    snprintf(buf, size, "pp %lld v %lld seqpar %s recompute %s dp %s", (long long)sp->pp, (long long)sp->v,
             sp->seq_off ? "off" : "on", sp->recompute_full ? "full" : "none",
             model_dp_comm_name(sp->dp_comm));
    return buf;
}

/* The model's estimate of job (the caller frees it). */
static model_estimate_t *estimated(const model_job_t *job) {
    model_estimate_t *e = malloc(sizeof *e);
    assert_non_null(e);
    assert_int_equal(model_estimate(job, e), MODEL_OK);
    return e;
}

/* 1F1B, allreduce: the model's closed form to a picosecond per operation, less m + 1 hops with pp > 1;
 * the exposed data-parallel time (the all-reduce and the embedding sync) and both end stages'
 * activation peaks are the model's (with full recomputation: the blocks' inputs per microbatch in
 * flight plus one block's working set). */
static void test_closed_form(void **state) {
    (void)state;
    for (int64_t pp = 1; pp <= 4; pp *= 2)
        for (int seq_off = 0; seq_off < 2; seq_off++)
            for (int rec = 0; rec < 2; rec++) {
                const spec_t sp = {pp, 1, seq_off, rec, MODEL_DP_ALLREDUCE};
                char what[128];
                describe(&sp, what, sizeof what);
                const model_job_t job = job_of(&sp);
                model_estimate_t *e = estimated(&job);
                const model_summary_t *su = &e->summary;
                const model_block_t *blk = &e->block;
                const outcome_t o = simulate(&job, 1, SIM_COMM_ANALYTIC, STEP_COLLAPSE_AUTO);
                const double m = (double)su->n_microbatches;
                const double residual_s = pp > 1 ? (m + 1.0) * su->p2p_one_s : 0.0;
                const double want = su->iteration_time_s - residual_s, got = o.r.step_time_s;
                const double tol = 1e-12 * (double)o.r.operations;
                printf("  %-52s estimate %.9f s  simulated %.9f s  %+.5f%%  less m+1 hops %+.3g s\n", what,
                       su->iteration_time_s, got, 100.0 * (got - su->iteration_time_s) / su->iteration_time_s,
                       got - want);
                if (fabs(got - want) > tol)
                    fail_msg("%s: simulated %.12f s, estimate %.12f s less %.12f s of hops", what, got,
                             su->iteration_time_s, residual_s);
                if (fabs(o.r.breakdown.exposed_dp_comm_s - su->dp_comm_s) > tol)
                    fail_msg("%s: exposed dp %.12f s, the model's %.12f s", what,
                             o.r.breakdown.exposed_dp_comm_s, su->dp_comm_s);
                assert_true(su->dp_allreduce_s > 0.0);
                assert_true(pp == 1 || su->embedding_sync_s > 0.0);
                breakdown_adds_up(what, &o.r);
                {
                    /* full recomputation keeps each block's input and one block's working set */
                    const double kept_gb = rec ? blk->checkpoint_gb : blk->activations_gb;
                    const double work_gb = rec ? blk->activations_gb : 0.0;
                    const double blocks_gb = kept_gb * (double)su->layers_per_stage;
                    const double in_flight = (double)(pp < su->n_microbatches ? pp : su->n_microbatches);
                    const double first_gb = in_flight * (blocks_gb + blk->first_activations_gb +
                                                         (pp == 1 ? blk->last_activations_gb : 0.0)) +
                                            work_gb;
                    const double last_gb =
                        pp == 1 ? first_gb : blocks_gb + blk->last_activations_gb + work_gb;
                    assert_true(!rec || blk->checkpoint_gb > 0.0);
                    if (fabs(o.first_peak_gb - first_gb) > 1e-9 * first_gb ||
                        fabs(o.last_peak_gb - last_gb) > 1e-9 * last_gb)
                        fail_msg("%s: activation peaks %.9g / %.9g GB, the model's %.9g / %.9g GB", what,
                                 o.first_peak_gb, o.last_peak_gb, first_gb, last_gb);
                }
                free(e);
            }
}

/* A Llama-style block (grouped-query attention, SwiGLU, RMSNorm, untied output layer; rotary or
 * learned positions): the simulated step is the closed form less the same m + 1 hops, and with
 * pp > 1 the untied output layer shares no gradient with the embedding (no embedding sync, in the
 * model or the step). The closed form adds the heavier stage's data-parallel all-reduce after the
 * pipeline, and its optimizer step; the step ends with the first stage's. With rotary positions the
 * first stage has no position table and the last stage (output matrix and final norm) is the
 * heavier, so the closed form exceeds the step by the difference of the two stages' all-reduces and
 * optimizer steps, and by nothing else. */
static void test_architecture(void **state) {
    (void)state;
    for (int64_t pp = 1; pp <= 2; pp++)
        for (int rotary = 0; rotary < 2; rotary++) {
            const spec_t sp = {pp, 1, 0, 0, MODEL_DP_ALLREDUCE};
            model_job_t job = job_of(&sp);
            job.model.kv_heads = 4;
            job.model.ffn_act = MODEL_FFN_SWIGLU;
            job.model.norm = MODEL_NORM_RMSNORM;
            job.model.position = rotary ? MODEL_POSITION_ROTARY : MODEL_POSITION_LEARNED;
            job.model.untied_embeddings = 1;
            model_estimate_t *e = estimated(&job);
            const model_summary_t *su = &e->summary;
            const model_block_t *blk = &e->block;
            const outcome_t o = simulate(&job, 1, SIM_COMM_ANALYTIC, STEP_COLLAPSE_AUTO);
            const double m = (double)su->n_microbatches;
            double want = su->iteration_time_s - (pp > 1 ? (m + 1.0) * su->p2p_one_s : 0.0);
            const double n_l = (double)su->layers_per_stage;
            const double w_first = blk->weights_gb * n_l + blk->first_weights_gb;
            const double w_last = blk->weights_gb * n_l + blk->last_weights_gb;
            double dp_first_s = su->dp_comm_s;
            if (pp > 1 && w_last > w_first) {
                assert_true(rotary);
                dp_first_s = model_collective_time_s(&job.system, job.compat, MODEL_COLL_ALLREDUCE, w_first,
                                                     job.par.dp, job.par.nv_dp);
                want -= su->dp_comm_s - dp_first_s;
                /* and the optimizer step, linear in the stage's parameters */
                want -= su->optimizer_s * (1.0 - w_first / w_last);
            }
            const double tol = 1e-12 * (double)o.r.operations;
            if (fabs(o.r.step_time_s - want) > tol)
                fail_msg("pp %lld rotary %d: simulated %.12f s, want %.12f s", (long long)pp, rotary,
                         o.r.step_time_s, want);
            assert_true(su->embedding_sync_s == 0.0);
            if (fabs(o.r.breakdown.exposed_dp_comm_s - dp_first_s) > tol)
                fail_msg("pp %lld: exposed dp %.12f s, the first stage's all-reduce %.12f s", (long long)pp,
                         o.r.breakdown.exposed_dp_comm_s, dp_first_s);
            breakdown_adds_up("architecture", &o.r);
            free(e);
        }
}

/* Interleaved: the closed form, less the same m + 1 hops, is a lower bound, and the difference is at
 * most the edge layers' share of the bubble that the closed form divides by v, (1 - 1/v) (E_first +
 * E_last): its bubble (sum_i T_i - max_i T_i) / v divides the whole of the other stages' work by v,
 * but the schedule runs the embedding only on the first virtual stage and the output layer only on
 * the last, at full cost, so they do not shrink with v (docs/run.md; measured, not a proven bound).
 * The exposed data-parallel time is the model's. */
static void test_interleaved(void **state) {
    (void)state;
    for (int64_t pp = 2; pp <= 4; pp *= 2)
        for (int seq_off = 0; seq_off < 2; seq_off++) {
            const spec_t sp = {pp, 2, seq_off, 1, MODEL_DP_ALLREDUCE};
            char what[128];
            describe(&sp, what, sizeof what);
            const model_job_t job = job_of(&sp);
            model_estimate_t *e = estimated(&job);
            const model_summary_t *su = &e->summary;
            const model_block_t *blk = &e->block;
            const outcome_t o = simulate(&job, 2, SIM_COMM_ANALYTIC, STEP_COLLAPSE_AUTO);
            const double base = su->iteration_time_s - (double)(su->n_microbatches + 1) * su->p2p_one_s;
            const double edges_s =
                blk->first_t_fwd_s + blk->first_t_bwd_s + blk->last_t_fwd_s + blk->last_t_bwd_s;
            const double got = o.r.step_time_s, tol = 1e-12 * (double)o.r.operations;
            printf("  %-52s estimate %.9f s  simulated %.9f s  %+.5f%%  less m+1 hops %+.3g s of %.3g s\n",
                   what, su->iteration_time_s, got,
                   100.0 * (got - su->iteration_time_s) / su->iteration_time_s, got - base, 0.5 * edges_s);
            if (got < base - tol || got > base + 0.5 * edges_s + tol)
                fail_msg("%s: simulated %.9f s, closed form less m+1 hops %.9f s, edge layers %.9f s", what,
                         got, base, edges_s);
            if (fabs(o.r.breakdown.exposed_dp_comm_s - su->dp_comm_s) > tol)
                fail_msg("%s: exposed dp %.12f s, the model's %.12f s", what, o.r.breakdown.exposed_dp_comm_s,
                         su->dp_comm_s);
            breakdown_adds_up(what, &o.r);
            free(e);
        }
}

/* allreduce-overlap: per-block buckets during the last microbatch's backward hide most of the
 * all-reduce: the step is shorter than with allreduce, but at least the last bucket (the embedding's
 * gradients, ready at the very end) stays exposed. Sharded: the edge layers' all-gather and
 * reduce-scatter partly overlap the embedding's compute, which the model does not credit, so the
 * simulation is at most the model's. */
static void test_overlap_and_sharded(void **state) {
    (void)state;
    for (int64_t pp = 1; pp <= 2; pp++) {
        const spec_t ar = {pp, 1, 0, 1, MODEL_DP_ALLREDUCE}, ov = {pp, 1, 0, 1, MODEL_DP_ALLREDUCE_OVERLAP},
                     sh = {pp, 1, 0, 1, MODEL_DP_SHARDED};
        const model_job_t jar = job_of(&ar), jov = job_of(&ov), jsh = job_of(&sh);
        const outcome_t oar = simulate(&jar, 1, SIM_COMM_ANALYTIC, STEP_COLLAPSE_AUTO);
        const outcome_t oov = simulate(&jov, 1, SIM_COMM_ANALYTIC, STEP_COLLAPSE_AUTO);
        const outcome_t osh = simulate(&jsh, 1, SIM_COMM_ANALYTIC, STEP_COLLAPSE_AUTO);
        model_estimate_t *e = malloc(sizeof *e);
        assert_non_null(e);
        assert_int_equal(model_estimate(&jov, e), MODEL_OK);
        const model_block_t *blk = &e->block;
        /* the first stage's last bucket: its embedding (with one stage, the output layer's final
         * LayerNorm too, whose bucket comes earlier) over dp 2 in one domain */
        const double last_bucket_s = model_collective_time_s(&jov.system, jov.compat, MODEL_COLL_ALLREDUCE,
                                                             blk->first_weights_gb, 2, 2);
        const double sync_s = pp > 1 ? e->summary.embedding_sync_s : 0.0;
        printf(
            "  pp %lld: allreduce %.9f s (dp %.9f)  allreduce-overlap %.9f s (dp %.9f, model %.9f)  sharded "
            "%.9f s\n",
            (long long)pp, oar.r.step_time_s, oar.r.breakdown.exposed_dp_comm_s, oov.r.step_time_s,
            oov.r.breakdown.exposed_dp_comm_s, e->summary.dp_comm_s, osh.r.step_time_s);
        assert_true(oov.r.step_time_s < oar.r.step_time_s);
        assert_true(oov.r.breakdown.exposed_dp_comm_s < oar.r.breakdown.exposed_dp_comm_s);
        assert_true(oov.r.breakdown.exposed_dp_comm_s >=
                    last_bucket_s + sync_s - 1e-12 * (double)oov.r.operations);
        breakdown_adds_up("allreduce-overlap", &oov.r);
        assert_int_equal(model_estimate(&jsh, e), MODEL_OK);
        const double residual_s =
            pp > 1 ? (double)(e->summary.n_microbatches + 1) * e->summary.p2p_one_s : 0.0;
        assert_true(osh.r.step_time_s <=
                    e->summary.iteration_time_s - residual_s + 1e-12 * (double)osh.r.operations);
        assert_true(osh.r.breakdown.exposed_dp_comm_s > 0.0);
        breakdown_adds_up("sharded", &osh.r);
        free(e);
    }
}

/* On the network (ideal topology): the step completes, its data-parallel all-reduce and embedding
 * sync are exposed, and it takes at least the compute of the analytic run's critical GPU (the same
 * compute operations; the network changes only communication). */
static void test_network(void **state) {
    (void)state;
    const spec_t sp = {2, 1, 0, 1, MODEL_DP_ALLREDUCE};
    const model_job_t job = job_of(&sp);
    const outcome_t a = simulate(&job, 1, SIM_COMM_ANALYTIC, STEP_COLLAPSE_AUTO);
    const outcome_t n = simulate(&job, 1, SIM_COMM_NETWORK, STEP_COLLAPSE_AUTO);
    printf("  network %.9f s (dp %.9f, %lld flows)  analytic %.9f s (dp %.9f)\n", n.r.step_time_s,
           n.r.breakdown.exposed_dp_comm_s, (long long)n.r.flows, a.r.step_time_s,
           a.r.breakdown.exposed_dp_comm_s);
    assert_true(n.r.flows > 0);
    assert_true(n.r.breakdown.exposed_dp_comm_s > 0.0);
    breakdown_adds_up("network", &n.r);
    assert_true(n.r.step_time_s > a.r.breakdown.compute_s);
}

/* The embedding's vocab-parallel layers use the whole tensor group, which 2d layouts do not form. */
static void test_refusal(void **state) {
    (void)state;
    model_job_t job = job_of(&(spec_t){1, 1, 0, 0, MODEL_DP_ALLREDUCE});
    job.par.strategy = MODEL_STRATEGY_2D_SEQP;
    job.par.tp1 = 1;
    job.par.tp2 = 2;
    job.par.nv_tp1 = 1;
    job.par.nv_tp2 = 2;
    model_issue_t issue;
    assert_int_equal(model_job_check(&job, &issue), MODEL_OK);
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.comm = SIM_COMM_ANALYTIC;
    step_t *s = NULL;
    char err[256];
    assert_int_equal(step_new(&job, &cfg, NULL, &s, err, sizeof err), SIM_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err, "training.embedding"));
    assert_non_null(strstr(err, "2d-seqp"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_closed_form), cmocka_unit_test(test_architecture),
        cmocka_unit_test(test_interleaved), cmocka_unit_test(test_overlap_and_sharded),
        cmocka_unit_test(test_network),     cmocka_unit_test(test_refusal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
