/* step/test_moe_options.c - training options with experts, in the closed form and the simulated step.
 *
 * FP8 (training.precision fp8): the routed and shared experts' grouped GEMMs run at the FP8 rate with
 * Transformer Engine's casts before them (the dispatched tokens in the forward, the output gradient in
 * the backward: 4 bytes per element, no LayerNorm to fuse into), keep their inputs in one byte, and
 * have FP8 weight copies; with FP8 parameters (training.fp8_param_gather) the experts' all-gather over
 * the expert-data-parallel group moves one byte per parameter, the dense weights' over dp likewise.
 * Checked: the layer table by hand, the all-gather closed form, the simulated step against the closed
 * form with analytic communication (to a picosecond per operation), and the bytes per GPU on a
 * network.
 *
 * The distributed optimizer with overlapped buckets (training.dp_comm sharded-overlap): the routed
 * experts in buckets of their own over the expert-data-parallel group, the rest over dp, both sequences
 * on the data-parallel stream. Checked: the simulated step against the closed form (model/distopt.c)
 * with analytic communication within 1% and to a picosecond per operation (communication hidden, partly
 * hidden, dominating; several buckets per sequence; edge layers; FP8 parameters), and the bytes each GPU
 * sends: sharded-overlap's buckets move exactly sharded's bytes.
 *
 * Tensor-parallel communication overlap (training.tp_comm_overlap) with experts: the attention's
 * collectives are hidden as in a dense block, none is put under the router or an expert GEMM (no
 * tensor-parallel collective of their own with etp 1), and the norm before the router gathers nothing
 * (the MoE layer takes the sequence-parallel shard). Checked in the layer table and the simulated step
 * against the closed form.
 *
 * Expert tensor parallelism (parallel.etp): in the closed form, the etp ranks holding slices of the same
 * experts all-gather each other's dispatched tokens and reduce-scatter the outputs; each computes the
 * FLOPs of etp 1 on 1 / etp of the routed weights; the step runs the same collectives over its
 * expert-tensor group. The refusals that remain: interleaving with sharded-overlap, a skew with etp. */
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

/* A small mixture of experts (8 experts, top 2, SwiGLU experts of f 2048, one shared expert) on
 * DGX H100s (FP8 peak) with NVLink domains of nvs: 1d, tp, one stage, dp, ep. */
static model_job_t moe_job(int64_t nvs, int64_t tp, int64_t dp, int64_t ep, double ib_gb_per_s,
                           model_dp_comm_t dp_comm, model_precision_t prec, int fp8_params) {
    model_job_t job;
    memset(&job, 0, sizeof job);
    assert_int_equal(model_system_preset("DGX-H100", &job.system), MODEL_OK);
    job.system.nvlink_size = nvs;
    if (ib_gb_per_s > 0.0)
        job.system.ib_gb_per_s = ib_gb_per_s;
    const model_transformer_t t = {
        .name = "moe",
        .seq_len = 1024,
        .hidden = 1024,
        .heads = 16,
        .layers = 4,
        .ffn_hidden = 4096,
        .vocab = 32000,
        .ffn_act = MODEL_FFN_SWIGLU,
        .moe = {.experts = 8, .topk = 2, .shared_experts = 1, .expert_ffn_hidden = 2048}};
    job.model = t;
    job.par = (model_parallel_t){
        .strategy = MODEL_STRATEGY_1D, .dp = dp, .tp = tp, .tp1 = tp, .tp2 = 1, .pp = 1, .mbs = 1, .nb = 1};
    const int64_t group[4] = {tp, 1, dp, 1};
    int64_t nv[4] = {0, 0, 0, 0};
    model_nvlink_counts(tp * dp, nvs, group, nv);
    job.par.nv_tp1 = nv[0];
    job.par.nv_tp2 = nv[1];
    job.par.nv_dp = nv[2];
    job.par.nv_pp = nv[3];
    job.experts_par.ep = ep;
    job.gpus = tp * dp;
    job.global_batch = 4 * dp;
    job.compat = MODEL_COMPAT_CORRECTED;
    job.training.dp_comm = dp_comm;
    job.training.optimizer_step = 1;
    job.training.precision = prec;
    job.training.fp8_param_gather = fp8_params;
    model_issue_t issue;
    if (model_job_check(&job, &issue) != MODEL_OK)
        fail_msg("bad test job: %s %s (%s)", issue.field, issue.value, issue.allowed);
    return job;
}

static void near(const char *what, double got, double want, double tol) {
    if (!(fabs(got - want) <= tol * fmax(1e-30, fabs(want))))
        fail_msg("%s: %.15g, closed form %.15g", what, got, want);
}

static const model_layer_t *find_layer(const model_block_t *b, const char *name) {
    for (int i = 0; i < b->n_layers; i++)
        if (strcmp(b->layers[i].name, name) == 0)
            return &b->layers[i];
    return NULL;
}

/* ---- FP8 ------------------------------------------------------------------------------------------ */

/* The layer table with FP8, by hand: T = l / tp tokens, N = k T + s T = 3 T computed by each GPU's
 * experts, f_w = 2 f_e (SwiGLU). experts-fc1-cast: forward 4 N e bytes (the dispatched tokens),
 * backward 4 N f_w (the output gradient); experts-fc2-cast: 4 N f_e and 4 N e; the GEMMs keep their
 * inputs in one byte (N e and N f_e) and run at the FP8 rate (faster than BF16); the router stays
 * BF16; the FP8 copies are 2 bytes per parameter of both grouped GEMMs. */
static void test_fp8_layer_table(void **state) {
    (void)state;
    const double e = 1024, fe = 2048, fw = 2 * fe;
    static model_estimate_t f8, bf;
    for (int64_t tp = 1; tp <= 2; tp++) {
        const model_job_t j8 = moe_job(8, tp, 4, 4, 0.0, MODEL_DP_SHARDED, MODEL_PRECISION_FP8, 0);
        const model_job_t jb = moe_job(8, tp, 4, 4, 0.0, MODEL_DP_SHARDED, MODEL_PRECISION_BF16, 0);
        assert_int_equal(model_estimate(&j8, &f8), MODEL_OK);
        assert_int_equal(model_estimate(&jb, &bf), MODEL_OK);
        const double T = 1024.0 / (double)tp, N = 3 * T;
        const model_layer_t *c1 = find_layer(&f8.block, "experts-fc1-cast"),
                            *c2 = find_layer(&f8.block, "experts-fc2-cast"),
                            *f1 = find_layer(&f8.block, "experts-fc1"),
                            *f2 = find_layer(&f8.block, "experts-fc2"), *r = find_layer(&f8.block, "router");
        assert_non_null(c1);
        assert_non_null(c2);
        assert_ptr_equal(c1 + 1, f1);
        assert_ptr_equal(c2 + 1, f2);
        assert_null(find_layer(&bf.block, "experts-fc1-cast"));
        assert_true(f1->fp8_gemm && f2->fp8_gemm && !r->fp8_gemm);
        near("fc1 cast fwd", c1->fwd.hbm_gb, 4 * N * e * 1e-9, 1e-12);
        near("fc1 cast bwd", c1->bwd.hbm_gb, 4 * N * fw * 1e-9, 1e-12);
        near("fc2 cast fwd", c2->fwd.hbm_gb, 4 * N * fe * 1e-9, 1e-12);
        near("fc2 cast bwd", c2->bwd.hbm_gb, 4 * N * e * 1e-9, 1e-12);
        assert_true(c1->fwd.time_s > 0.0 && c2->fwd.time_s > 0.0);
        near("fc1 kept", f1->activations_gb, N * e * 1e-9, 1e-12);
        near("fc2 kept", f2->activations_gb, N * fe * 1e-9, 1e-12);
        const model_layer_t *b1 = find_layer(&bf.block, "experts-fc1");
        near("fc1 FLOPs", f1->fwd.flops_tflop, b1->fwd.flops_tflop, 1e-12);
        assert_true(f1->fwd.comp_s < b1->fwd.comp_s);
        /* the FP8 copies: both grouped GEMMs' (E / ep + s) experts, 2 bytes per parameter, with the
         * attention's qkv and vproj */
        const double w_exp = (8.0 / 4 + 1) * (e * fw + fe * e);
        const double w_att = find_layer(&f8.block, "qkv")->weights_gb / 2e-9 +
                             find_layer(&f8.block, "vproj")->weights_gb / 2e-9;
        near("FP8 copies", f8.block.fp8_weights_gb, 2 * (w_exp + w_att) * 1e-9, 1e-12);
        near("expert weights", f8.block.expert_weights_gb, bf.block.expert_weights_gb, 0.0);
        assert_true(f8.block.expert_fp8_param_saving_gb == 0.0);
    }
}

/* FP8 parameters: the routed experts' share of the saving is half their weights; the sharded
 * all-gather moves the dense weights less their saving over dp and the experts' in one byte over the
 * expert-data-parallel group; the reduce-scatter is BF16's. */
static void test_fp8_params_closed_form(void **state) {
    (void)state;
    static model_estimate_t on, off;
    const int64_t dp = 8, ep = 2, tp = 1, edp = dp * tp / ep;
    const model_job_t j_on = moe_job(4, tp, dp, ep, 0.0, MODEL_DP_SHARDED, MODEL_PRECISION_FP8, 1);
    const model_job_t j_off = moe_job(4, tp, dp, ep, 0.0, MODEL_DP_SHARDED, MODEL_PRECISION_FP8, 0);
    assert_int_equal(model_estimate(&j_on, &on), MODEL_OK);
    assert_int_equal(model_estimate(&j_off, &off), MODEL_OK);
    const model_block_t *b = &on.block;
    near("expert saving", b->expert_fp8_param_saving_gb, b->expert_weights_gb / 2, 1e-12);
    near("saving", b->fp8_param_saving_gb, off.block.fp8_weights_gb / 2, 1e-12);
    const double ag = model_collective_time_s(&j_on.system, j_on.compat, MODEL_COLL_ALLGATHER,
                                              b->weights_gb - b->expert_weights_gb -
                                                  (b->fp8_param_saving_gb - b->expert_fp8_param_saving_gb),
                                              dp, 4) +
                      model_collective_time_s(&j_on.system, j_on.compat, MODEL_COLL_ALLGATHER,
                                              b->expert_weights_gb / 2, edp, 2);
    near("all-gather", on.summary.dp_allgather_one_s, ag, 1e-12);
    near("reduce-scatter", on.summary.dp_reducescatter_one_s, off.summary.dp_reducescatter_one_s, 1e-12);
    assert_true(on.summary.dp_allgather_one_s < off.summary.dp_allgather_one_s);
    near("memory", on.summary.memory_gb, off.summary.memory_gb - 2.0 * b->fp8_param_saving_gb * 4, 1e-9);
}

/* The simulated step with analytic communication against the closed form, FP8 with and without FP8
 * parameters, the network of the preset and a slow one (1 GB/s, the all-gathers exposed): within 1% and
 * to a picosecond per operation. */
static void test_fp8_step_closed_form(void **state) {
    (void)state;
    const double ib[] = {0.0, 1.0};
    for (int a = 0; a < 2; a++)
        for (int on = 0; on < 2; on++) {
            const model_job_t job = moe_job(4, 1, 8, 2, ib[a], MODEL_DP_SHARDED, MODEL_PRECISION_FP8, on);
            static model_estimate_t e;
            assert_int_equal(model_estimate(&job, &e), MODEL_OK);
            step_t *s = step_test_run(&job, SIM_COMM_ANALYTIC, NULL);
            step_result_t r;
            assert_int_equal(step_result(s, &r), SIM_OK);
            step_free(s);
            const double tol = 1e-12 * (double)r.operations + 1e-9 * e.summary.iteration_time_s;
            print_message(
                "fp8 ib %g params %d: step %.9f s, closed form %.9f s, exposed dp %.9f s (%.9f s)\n", ib[a],
                on, r.step_time_s, e.summary.iteration_time_s, r.breakdown.exposed_dp_comm_s,
                e.summary.dp_comm_s);
            assert_true(fabs(r.step_time_s - e.summary.iteration_time_s) <=
                        0.01 * e.summary.iteration_time_s);
            assert_true(fabs(r.step_time_s - e.summary.iteration_time_s) <= tol);
            assert_true(fabs(r.breakdown.exposed_dp_comm_s - e.summary.dp_comm_s) <= tol);
        }
}

/* The data-parallel bytes per GPU on a network (the ideal star, one GPU per domain so that every
 * collective is a flat ring, every GPU simulated): FP8 parameters
 * take (dp - 1) / dp of the dense saving and (edp - 1) / edp of the experts' off each block's
 * all-gathers. */
static void test_fp8_dp_bytes(void **state) {
    (void)state;
    const int64_t dp = 8, ep = 2, edp = dp / ep;
    double per_gpu[2], dense_gb = 0.0, exp_gb = 0.0, n_l = 0.0;
    for (int on = 0; on < 2; on++) {
        const model_job_t job = moe_job(1, 1, dp, ep, 0.0, MODEL_DP_SHARDED, MODEL_PRECISION_FP8, on);
        static model_estimate_t e;
        assert_int_equal(model_estimate(&job, &e), MODEL_OK);
        if (on) {
            exp_gb = e.block.expert_fp8_param_saving_gb;
            dense_gb = e.block.fp8_param_saving_gb - exp_gb;
            n_l = (double)e.summary.layers_per_stage;
        }
        step_traffic_t t;
        step_test_traffic(&job, &t);
        per_gpu[on] = t.per_gpu_bytes[STEP_TRAFFIC_DP];
    }
    const double want =
        ((double)(dp - 1) / (double)dp * dense_gb + (double)(edp - 1) / (double)edp * exp_gb) * 1e9 * n_l;
    print_message(
        "fp8 params with experts: dp bytes per GPU %.6g without, %.6g with; difference %.6g, closed "
        "form %.6g\n",
        per_gpu[0], per_gpu[1], per_gpu[0] - per_gpu[1], want);
    assert_true(exp_gb > 0.0 && dense_gb > 0.0);
    assert_true(fabs((per_gpu[0] - per_gpu[1]) - want) <= 1e-9 * per_gpu[0]);
}

/* ---- sharded-overlap ------------------------------------------------------------------------------- */

/* job with L blocks, the edge layers (emb), FP8 with FP8 parameters (fp8) */
static model_job_t overlap_job(int64_t nvs, int64_t dp, int64_t ep, double ib, model_dp_comm_t dpc, int64_t L,
                               int emb, int fp8) {
    model_job_t job = moe_job(nvs, 1, dp, ep, ib, dpc, fp8 ? MODEL_PRECISION_FP8 : MODEL_PRECISION_BF16, fp8);
    job.model.layers = L;
    job.training.embedding = emb;
    model_issue_t issue;
    if (model_job_check(&job, &issue) != MODEL_OK)
        fail_msg("bad test job: %s %s (%s)", issue.field, issue.value, issue.allowed);
    return job;
}

static void test_overlap_step_closed_form(void **state) {
    (void)state;
    const double ib[] = {400.0, 0.0, 2.0, 0.2};
    const int64_t layers[] = {4, 12};
    for (size_t a = 0; a < sizeof ib / sizeof ib[0]; a++)
        for (size_t l = 0; l < 2; l++)
            for (int emb = 0; emb < 2; emb++)
                for (int fp8 = 0; fp8 < 2; fp8++) {
                    const model_job_t job =
                        overlap_job(4, 8, 2, ib[a], MODEL_DP_SHARDED_OVERLAP, layers[l], emb, fp8);
                    static model_estimate_t e;
                    assert_int_equal(model_estimate(&job, &e), MODEL_OK);
                    step_t *s = step_test_run(&job, SIM_COMM_ANALYTIC, NULL);
                    step_result_t r;
                    assert_int_equal(step_result(s, &r), SIM_OK);
                    step_free(s);
                    const double tol = 1e-12 * (double)r.operations + 1e-9 * e.summary.iteration_time_s;
                    print_message(
                        "sharded-overlap ib %g L %lld emb %d fp8 %d: step %.9f s, closed form %.9f s, "
                        "exposed dp %.9f s (%.9f s)\n",
                        ib[a], (long long)layers[l], emb, fp8, r.step_time_s, e.summary.iteration_time_s,
                        r.breakdown.exposed_dp_comm_s, e.summary.dp_comm_s);
                    assert_true(fabs(r.step_time_s - e.summary.iteration_time_s) <=
                                0.01 * e.summary.iteration_time_s);
                    if (fabs(r.step_time_s - e.summary.iteration_time_s) > tol)
                        fail_msg("step %.12f s, closed form %.12f s (%lld operations)", r.step_time_s,
                                 e.summary.iteration_time_s, (long long)r.operations);
                    assert_true(fabs(r.breakdown.exposed_dp_comm_s - e.summary.dp_comm_s) <= tol);
                }
}

/* The buckets: with 12 blocks both sequences have several (the experts' 25.2 M parameters per block
 * fill Megatron-Core's 40 M-parameter bucket every two blocks: 6; the dense 10.5 M every four: 3), and on
 * a slow network the exposed reduce-scatter is at least the experts' last bucket's. */
static void test_overlap_buckets(void **state) {
    (void)state;
    static model_estimate_t e;
    const model_job_t job = overlap_job(4, 8, 2, 0.2, MODEL_DP_SHARDED_OVERLAP, 12, 0, 0);
    assert_int_equal(model_estimate(&job, &e), MODEL_OK);
    const double exp_params = e.block.expert_weights_gb / 2e-9,
                 dense_params = (e.block.weights_gb - e.block.expert_weights_gb) / 2e-9;
    near("expert parameters per block", exp_params, 4 * (1024.0 * 4096 + 2048 * 1024), 1e-12);
    assert_true(dense_params > 10e6 && dense_params < 40e6 / 3);
    int bucket[12];
    double params[12];
    for (int i = 0; i < 12; i++)
        params[i] = exp_params;
    assert_int_equal(model_dp_buckets(params, 12, model_dp_bucket_params(8), bucket), 6);
    for (int i = 0; i < 12; i++)
        params[i] = dense_params;
    assert_int_equal(model_dp_buckets(params, 12, model_dp_bucket_params(8), bucket), 3);
    const double rs_x = model_collective_time_s(&job.system, job.compat, MODEL_COLL_REDUCESCATTER,
                                                2 * e.block.expert_weights_gb, 4, 2);
    assert_true(e.summary.dp_reducescatter_s >= rs_x);
}

/* The bytes per GPU on a network (one GPU per domain, every GPU simulated): the buckets regroup the same
 * weights, so sharded-overlap sends what sharded sends, over dp and over the expert-data-parallel group. */
static void test_overlap_bytes(void **state) {
    (void)state;
    double per_gpu[2];
    for (int k = 0; k < 2; k++) {
        const model_job_t job =
            overlap_job(1, 8, 2, 0.0, k ? MODEL_DP_SHARDED_OVERLAP : MODEL_DP_SHARDED, 4, 1, 1);
        step_traffic_t t;
        step_test_traffic(&job, &t);
        per_gpu[k] = t.per_gpu_bytes[STEP_TRAFFIC_DP];
    }
    print_message("dp bytes per GPU: sharded %.9g, sharded-overlap %.9g\n", per_gpu[0], per_gpu[1]);
    assert_true(per_gpu[0] > 0.0);
    near("sharded-overlap bytes", per_gpu[1], per_gpu[0], 1e-9);
}

/* ---- tp_comm_overlap -------------------------------------------------------------------------------- */

static void test_tp_overlap_layer_table(void **state) {
    (void)state;
    static model_estimate_t on, off;
    model_job_t j = moe_job(8, 2, 4, 4, 0.0, MODEL_DP_ALLREDUCE, MODEL_PRECISION_BF16, 0);
    assert_int_equal(model_estimate(&j, &off), MODEL_OK);
    j.training.tp_comm_overlap = 1;
    model_issue_t is;
    assert_int_equal(model_job_check(&j, &is), MODEL_OK);
    assert_int_equal(model_estimate(&j, &on), MODEL_OK);
    for (int k = 0; k < 2; k++) {
        const model_block_t *b = k ? &on.block : &off.block;
        const model_layer_t *ln2 = find_layer(b, "ln2");
        assert_non_null(ln2);
        assert_int_equal(ln2->fwd.n_colls, 0);
        assert_int_equal(ln2->bwd.n_colls, 0);
        for (int i = 0; i < b->n_layers; i++) {
            const model_layer_t *ly = &b->layers[i];
            if (strcmp(ly->name, "router") && strncmp(ly->name, "experts-", 8))
                continue;
            assert_int_equal(ly->fwd.n_colls, 0);
            assert_int_equal(ly->bwd.n_colls, 0);
            assert_int_equal(ly->fwd.overlap, MODEL_OVERLAP_NONE);
            assert_int_equal(ly->bwd.overlap, MODEL_OVERLAP_NONE);
        }
    }
    /* the attention's collectives are placed as in a dense block: qkv's forward takes the next block's
     * norm's all-gather as a ring, vproj's reduce-scatter runs in pipelined chunks */
    assert_int_equal(find_layer(&on.block, "qkv")->fwd.overlap, MODEL_OVERLAP_RING);
    assert_int_equal(find_layer(&on.block, "vproj")->fwd.overlap, MODEL_OVERLAP_PIPELINE);
    assert_int_equal(find_layer(&on.block, "ln1")->fwd.n_colls, 0);
    /* the all-to-alls stay where they are, whole */
    near("dispatch", find_layer(&on.block, "dispatch")->fwd.comm_s,
         find_layer(&off.block, "dispatch")->fwd.comm_s, 0.0);
    assert_true(on.summary.tp_comm_s < off.summary.tp_comm_s);
    assert_true(on.summary.iteration_time_s < off.summary.iteration_time_s);
}

/* The step with analytic communication, one stage, the gradients all-reduced after the last backward:
 * with the overlap on it is the estimate (to a picosecond per operation), ep inside and across NVLink
 * domains. */
static void test_tp_overlap_step(void **state) {
    (void)state;
    const int64_t nvs[] = {8, 2};
    for (size_t a = 0; a < 2; a++) {
        model_job_t job = moe_job(nvs[a], 2, 4, 4, 0.0, MODEL_DP_ALLREDUCE, MODEL_PRECISION_FP8, 0);
        job.training.tp_comm_overlap = 1;
        static model_estimate_t e;
        assert_int_equal(model_estimate(&job, &e), MODEL_OK);
        step_t *s = step_test_run(&job, SIM_COMM_ANALYTIC, NULL);
        step_result_t r;
        assert_int_equal(step_result(s, &r), SIM_OK);
        step_free(s);
        print_message("tp overlap nvs %lld: step %.9f s, closed form %.9f s, exposed tp %.9f s (%.9f s)\n",
                      (long long)nvs[a], r.step_time_s, e.summary.iteration_time_s,
                      r.breakdown.exposed_tp_comm_s, e.summary.tp_comm_s);
        const double tol = 1e-12 * (double)r.operations + 1e-9 * e.summary.iteration_time_s;
        assert_true(fabs(r.step_time_s - e.summary.iteration_time_s) <= tol);
        assert_true(fabs(r.breakdown.exposed_tp_comm_s - e.summary.tp_comm_s) <= tol);
    }
}

/* What stays refused with experts: sharded-overlap interleaved (one line naming training.dp_comm). */
static void test_still_refused(void **state) {
    (void)state;
    model_job_t j = moe_job(8, 1, 4, 4, 0.0, MODEL_DP_SHARDED_OVERLAP, MODEL_PRECISION_BF16, 0);
    j.par.pp = 2;
    j.gpus = 8;
    j.training.interleave = 2;
    j.global_batch = 16;
    model_issue_t is;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "training.dp_comm");
    assert_non_null(strstr(is.allowed, "interleave"));
}

/* ---- expert tensor parallelism ------------------------------------------------------------------------ */

/* tp 2, dp 4, ep 4, etp 2 (tp dp / ep = 2): T = 512 tokens, R = etp k T = 2048 gathered. */
static void test_etp_closed_form(void **state) {
    (void)state;
    static model_estimate_t one, two;
    model_job_t j1 = moe_job(8, 2, 4, 4, 0.0, MODEL_DP_SHARDED, MODEL_PRECISION_BF16, 0), j2 = j1;
    j2.experts_par.etp = 2;
    model_issue_t is;
    assert_int_equal(model_job_check(&j2, &is), MODEL_OK);
    assert_int_equal(model_estimate(&j1, &one), MODEL_OK);
    assert_int_equal(model_estimate(&j2, &two), MODEL_OK);
    const double e = 1024, fe = 2048, T = 512, R = 2 * 2 * T;
    assert_null(find_layer(&one.block, "experts-gather"));
    const model_layer_t *g = find_layer(&two.block, "experts-gather"),
                        *sc = find_layer(&two.block, "experts-scatter");
    assert_non_null(g);
    assert_non_null(sc);
    assert_ptr_equal(g + 1, find_layer(&two.block, "experts-fc1"));
    assert_int_equal(g->fwd.n_colls, 1);
    assert_int_equal(g->fwd.colls[0].op, MODEL_COLL_ALLGATHER);
    assert_int_equal(g->bwd.colls[0].op, MODEL_COLL_REDUCESCATTER);
    assert_int_equal(sc->fwd.colls[0].op, MODEL_COLL_REDUCESCATTER);
    assert_int_equal(sc->bwd.colls[0].op, MODEL_COLL_ALLGATHER);
    assert_int_equal(g->fwd.colls[0].group, MODEL_GROUP_ETP);
    assert_int_equal(g->fwd.colls[0].group_size, 2);
    assert_int_equal(g->fwd.colls[0].per_domain, 2);
    near("gather volume", g->fwd.colls[0].volume_gb, R * e * 2e-9, 1e-12);
    near("scatter volume", sc->fwd.colls[0].volume_gb, R * e * 2e-9, 1e-12);
    /* the same FLOPs; the routed weights halved, the shared expert whole; the gathered input kept */
    const model_layer_t *f1 = find_layer(&two.block, "experts-fc1"),
                        *f1o = find_layer(&one.block, "experts-fc1");
    near("fc1 FLOPs", f1->fwd.flops_tflop, f1o->fwd.flops_tflop, 1e-12);
    near("fc2 FLOPs", find_layer(&two.block, "experts-fc2")->bwd.flops_tflop,
         find_layer(&one.block, "experts-fc2")->bwd.flops_tflop, 1e-12);
    near("fc1 weights", f1->weights_gb, (8.0 / 4 / 2 + 1) * e * 2 * fe * 2e-9, 1e-12);
    near("expert weights", two.block.expert_weights_gb, one.block.expert_weights_gb / 2, 1e-12);
    near("fc1 kept", f1->activations_gb, (R + T) * e * 2e-9, 1e-12);
    model_moe_block_t mb;
    assert_int_equal(model_moe_block(&j2, &mb), MODEL_OK);
    near("model_moe_block FLOPs", mb.expert_tflop,
         f1->fwd.flops_tflop + find_layer(&two.block, "experts-fc2")->fwd.flops_tflop, 1e-12);
    near("model_moe_block weights", mb.expert_weight_bytes * 1e-9,
         f1->weights_gb + find_layer(&two.block, "experts-fc2")->weights_gb, 1e-12);
    /* the groups: ep members etp apart (4 of them in a domain of 8), the expert-data-parallel group
     * tp dp / (ep etp) = 1 */
    int64_t ep, ep_t, edp, edp_t;
    model_expert_groups(&j2, &ep, &ep_t, &edp, &edp_t);
    assert_int_equal(ep_t, 4);
    assert_int_equal(edp, 1);
    /* refused where etp x ep does not divide tp x dp */
    j2.experts_par.etp = 4;
    assert_int_equal(model_job_check(&j2, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "parallel.etp");
}

/* The step with etp 2: with analytic communication, one stage and the gradients all-reduced after the
 * last backward it equals the estimate (to a picosecond per operation), stages collapsed and every GPU
 * simulated, the etp group inside and across NVLink domains; on a network (every GPU simulated) each
 * GPU sends in the etp collectives 4 x (etp - 1) / etp x R e 2 bytes per MoE block and microbatch (the
 * all-gather and the reduce-scatter, forward and backward), counted with the tensor-parallel bytes;
 * a skew with etp > 1 is refused in one line. */
static void test_etp_step(void **state) {
    (void)state;
    const int64_t nvs[] = {8, 2, 1};
    for (size_t a = 0; a < 3; a++) {
        model_job_t job = moe_job(nvs[a], 2, 4, 4, 0.0, MODEL_DP_ALLREDUCE, MODEL_PRECISION_BF16, 0);
        job.experts_par.etp = 2;
        static model_estimate_t e;
        assert_int_equal(model_estimate(&job, &e), MODEL_OK);
        for (int full = 0; full < 2; full++) {
            step_config_t cfg;
            step_config_default(&cfg);
            cfg.comm = SIM_COMM_ANALYTIC;
            cfg.collapse = full ? STEP_COLLAPSE_OFF : STEP_COLLAPSE_AUTO;
            step_t *s = NULL;
            char err[300];
            if (step_new(&job, &cfg, NULL, &s, err, sizeof err) != SIM_OK)
                fail_msg("step_new: %s", err);
            assert_int_equal(step_run(s), SIM_OK);
            step_result_t r;
            assert_int_equal(step_result(s, &r), SIM_OK);
            step_free(s);
            const double tol = 1e-12 * (double)r.operations + 1e-9 * e.summary.iteration_time_s;
            print_message("etp 2 nvs %lld %s: step %.9f s, closed form %.9f s, exposed tp %.9f s (%.9f s)\n",
                          (long long)nvs[a], full ? "full" : "collapsed", r.step_time_s,
                          e.summary.iteration_time_s, r.breakdown.exposed_tp_comm_s, e.summary.tp_comm_s);
            assert_true(fabs(r.step_time_s - e.summary.iteration_time_s) <= tol);
            assert_true(fabs(r.breakdown.exposed_tp_comm_s - e.summary.tp_comm_s) <= tol);
        }
    }
    /* the bytes: etp 2 against etp 1 on the same star, one GPU per domain */
    double tp_bytes[2];
    for (int k = 0; k < 2; k++) {
        model_job_t job = moe_job(1, 2, 4, 4, 0.0, MODEL_DP_ALLREDUCE, MODEL_PRECISION_BF16, 0);
        job.experts_par.etp = k ? 2 : 1;
        step_traffic_t t;
        step_test_traffic(&job, &t);
        tp_bytes[k] = t.per_gpu_bytes[STEP_TRAFFIC_TP];
    }
    const double R = 2 * 2 * 512.0, blocks_mbs = 4 * 4; /* 4 blocks, 4 microbatches */
    const double want = blocks_mbs * 4 * 0.5 * R * 1024 * 2;
    print_message("etp bytes per GPU %.9g (tp and etp, etp 2) - %.9g (etp 1) = %.9g, closed form %.9g\n",
                  tp_bytes[1], tp_bytes[0], tp_bytes[1] - tp_bytes[0], want);
    near("etp bytes", tp_bytes[1] - tp_bytes[0], want, 1e-9);
    /* the skew is drawn per ep rank of etp 1 */
    model_job_t job = moe_job(8, 2, 4, 4, 0.0, MODEL_DP_ALLREDUCE, MODEL_PRECISION_BF16, 0);
    job.experts_par.etp = 2;
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.comm = SIM_COMM_ANALYTIC;
    cfg.expert_skew = 1.0;
    step_t *st = NULL;
    char err[300];
    assert_int_equal(step_new(&job, &cfg, NULL, &st, err, sizeof err), SIM_EINVAL);
    assert_non_null(strstr(err, "etp 2"));
    assert_null(strchr(err, '\n'));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp8_layer_table),
        cmocka_unit_test(test_fp8_params_closed_form),
        cmocka_unit_test(test_fp8_step_closed_form),
        cmocka_unit_test(test_fp8_dp_bytes),
        cmocka_unit_test(test_overlap_step_closed_form),
        cmocka_unit_test(test_overlap_buckets),
        cmocka_unit_test(test_overlap_bytes),
        cmocka_unit_test(test_tp_overlap_layer_table),
        cmocka_unit_test(test_tp_overlap_step),
        cmocka_unit_test(test_still_refused),
        cmocka_unit_test(test_etp_closed_form),
        cmocka_unit_test(test_etp_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
