/* model/test_moe.c - mixture of experts in the model: the presets' parameter counts against the
 * published totals, the MoE block's closed form (router and expert FLOPs, the alltoall volume per GPU
 * T e bytes k (ep - 1)/ep, the expert weights per GPU), the model's alltoall time, and the checks
 * (ep dividing the experts and dp, the reference refusing experts, a dense model refusing ep). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"

static model_job_t mixtral_job(int64_t ep) {
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("Mixtral-8x7B", &j.model), MODEL_OK);
    assert_int_equal(model_system_preset("H100", &j.system), MODEL_OK);
    j.model.seq_len = 4096;
    j.gpus = 64;
    j.global_batch = 256;
    j.compat = MODEL_COMPAT_CORRECTED;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, 16, 2, 2, 1, 2, 1, 1, 2, 1, 4, 1};
    j.experts_par.ep = ep;
    return j;
}

static void assert_rel(double got, double want, double tol) {
    if (!(fabs(got - want) <= tol * fabs(want)))
        fail_msg("%.10g, expected %.10g", got, want);
}

static void test_param_counts(void **state) {
    (void)state;
    model_transformer_t m;
    assert_int_equal(model_transformer_preset("Mixtral-8x7B", &m), MODEL_OK);
    assert_true(model_is_moe(&m));
    assert_int_equal(model_moe_layers(&m), 32);
    /* Mistral AI: 46.7B parameters (12.9B active) */
    assert_rel(model_param_count(&m), 46.7e9, 0.002);
    assert_int_equal(model_transformer_preset("Mixtral-8x22B", &m), MODEL_OK);
    assert_rel(model_param_count(&m), 141e9, 0.005); /* Mistral AI: 141B (39B active) */
    assert_int_equal(model_transformer_preset("DeepSeek-V3-like", &m), MODEL_OK);
    assert_int_equal(model_moe_layers(&m), 58);
    /* DeepSeek-V3: 671B; the stand-in's multi-head attention has 4 e^2 = 205.5M parameters per block
     * where MLA has 187M, +1.1B over 61 blocks (docs/model-formulas.md) */
    assert_rel(model_param_count(&m), 671e9 + 61 * (4.0 * 7168 * 7168 - 187.1e6), 0.01);
    /* model FLOPs per token: the k = 2 experts of f_e 14336 each token visits (SwiGLU: 3 matrices) */
    assert_int_equal(model_transformer_preset("Mixtral-8x7B", &m), MODEL_OK);
    {
        const double L = 32, h = 4096, s = (double)m.seq_len, V = (double)m.vocab, fe = 14336;
        const double want =
            6 * (L * 2 * h * h * (1 + 8.0 / 32) + L * 3 * h * fe * 2 + h * V) + 12 * L * s * h;
        assert_rel(model_flops_per_token(&m), want, 1e-12);
    }
    /* dense presets are unchanged: not MoE, no MoE layers */
    assert_int_equal(model_transformer_preset("Llama3-8B", &m), MODEL_OK);
    assert_false(model_is_moe(&m));
    assert_int_equal(model_moe_layers(&m), 0);
}

static void test_block_closed_form(void **state) {
    (void)state;
    for (int64_t ep = 1; ep <= 8; ep *= 2) {
        const model_job_t j = mixtral_job(ep);
        model_moe_block_t b;
        assert_int_equal(model_moe_block(&j, &b), MODEL_OK);
        const double T = 1.0 * 4096 / 2, e = 4096, k = 2, E = 8, fe = 14336;
        assert_rel(b.tokens, T, 1e-12);
        assert_rel(b.router_tflop, 2 * T * e * E * 1e-12, 1e-12);
        assert_rel(b.expert_tflop, k * T * 3 * 2 * e * fe * 1e-12, 1e-12); /* dropless, SwiGLU */
        if (ep == 1) {
            assert_true(b.a2a_bytes == 0.0 && b.a2a_time_s == 0.0);
        } else {
            assert_rel(b.a2a_bytes, T * e * 2 * k * (ep - 1.0) / ep, 1e-12);
            assert_true(b.a2a_time_s > 0.0);
        }
        assert_rel(b.experts_per_gpu, E / ep, 1e-12);
        assert_rel(b.expert_weight_bytes, E / ep * 3 * e * fe * 2, 1e-12);
        assert_int_equal(model_job_check(&j, NULL), MODEL_OK);
    }
    /* a capacity factor pads every expert to c x its fair share; shared experts see every token */
    model_job_t j = mixtral_job(4);
    j.model.moe.capacity_factor = 1.25;
    j.model.moe.shared_experts = 1;
    model_moe_block_t b;
    assert_int_equal(model_moe_block(&j, &b), MODEL_OK);
    assert_rel(b.expert_tflop, (1.25 * 2 + 1) * 2048 * 3 * 2 * 4096.0 * 14336 * 1e-12, 1e-12);
    assert_rel(b.expert_weight_bytes, (2 + 1) * 3 * 4096.0 * 14336 * 2, 1e-12);
    j.experts_par.ep = 3; /* does not divide 8 experts */
    assert_int_equal(model_moe_block(&j, &b), MODEL_EINVAL);
}

/* The model's alltoall: one step's latency, then the NVLink and network shares at once. */
static void test_alltoall_time(void **state) {
    (void)state;
    model_system_t h;
    assert_int_equal(model_system_preset("H100", &h), MODEL_OK);
    const double v = 1.0; /* GB */
    const double in_node = model_collective_time_s(&h, MODEL_COMPAT_CORRECTED, MODEL_COLL_ALLTOALL, v, 8, 8);
    const double two_nodes =
        model_collective_time_s(&h, MODEL_COMPAT_CORRECTED, MODEL_COLL_ALLTOALL, v, 16, 8);
    const double nvl = h.nvlink_gb_per_s * h.nvlink_eff,
                 nic = h.ib_gb_per_s * h.ib_eff * (double)h.nic_factor;
    assert_true(in_node > 7.0 / 8.0 * v / nvl && in_node < 7.0 / 8.0 * v / nvl + 50e-6);
    assert_true(two_nodes > 8.0 / 16.0 * v / nic && two_nodes < 8.0 / 16.0 * v / nic + 100e-6);
    /* the reference has no alltoall: both compat modes give the same time */
    assert_true(model_collective_time_s(&h, MODEL_COMPAT_REFERENCE, MODEL_COLL_ALLTOALL, v, 16, 8) ==
                two_nodes);
    assert_string_equal(model_coll_op_name(MODEL_COLL_ALLTOALL), "alltoall");
}

static void test_checks(void **state) {
    (void)state;
    model_issue_t is;
    model_job_t j = mixtral_job(32); /* ep 32 does not divide 8 experts */
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "parallel.ep");
    j = mixtral_job(1);
    j.model.moe.topk = 9;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "model.topk");
    j = mixtral_job(1);
    j.compat = MODEL_COMPAT_REFERENCE;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "model.experts");
    j = mixtral_job(2);
    memset(&j.model.moe, 0, sizeof j.model.moe); /* a dense model with ep 2 */
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "parallel.ep");
}

static const model_layer_t *find_layer(const model_block_t *b, const char *name) {
    for (int i = 0; i < b->n_layers; i++)
        if (strcmp(b->layers[i].name, name) == 0)
            return &b->layers[i];
    return NULL;
}

/* The MoE block in the layer table, by hand: T = b l / tp = 2048 tokens, e 4096, E 8, k 2, f_e 14336,
 * SwiGLU; the router 2 T e E, the grouped GEMMs 2 k T e (2 f_e) and 2 k T f_e e forward and twice that
 * backward; the dispatch and combine alltoalls of a T k e x 2-byte buffer over the ep group, one
 * each way in each pass, sending T e 2 k (ep - 1) / ep bytes per GPU; the routed experts' gradients
 * over the expert-data-parallel group of dp tp / ep GPUs. */
static void test_layer_table(void **state) {
    (void)state;
    const double T = 2048, e = 4096, E = 8, k = 2, fe = 14336;
    for (int64_t ep = 1; ep <= 8; ep *= 2) {
        const model_job_t j = mixtral_job(ep);
        model_estimate_t est;
        assert_int_equal(model_estimate(&j, &est), MODEL_OK);
        const model_block_t *b = &est.block;
        assert_null(find_layer(b, "fc1"));
        const model_layer_t *r = find_layer(b, "router"), *d = find_layer(b, "dispatch"),
                            *f1 = find_layer(b, "experts-fc1"), *f2 = find_layer(b, "experts-fc2"),
                            *cb = find_layer(b, "combine");
        assert_non_null(r);
        assert_non_null(d);
        assert_non_null(f1);
        assert_non_null(f2);
        assert_non_null(cb);
        assert_rel(r->fwd.flops_tflop, 2 * T * e * E * 1e-12, 1e-12);
        assert_rel(r->bwd.flops_tflop, 4 * T * e * E * 1e-12, 1e-12);
        assert_rel(f1->fwd.flops_tflop, 2 * k * T * e * 2 * fe * 1e-12, 1e-12);
        assert_rel(f2->fwd.flops_tflop, 2 * k * T * fe * e * 1e-12, 1e-12);
        assert_rel(f1->bwd.flops_tflop + f2->bwd.flops_tflop, 2 * (f1->fwd.flops_tflop + f2->fwd.flops_tflop),
                   1e-12);
        model_moe_block_t mb;
        assert_int_equal(model_moe_block(&j, &mb), MODEL_OK);
        assert_rel(f1->fwd.flops_tflop + f2->fwd.flops_tflop, mb.expert_tflop, 1e-12);
        assert_rel(f1->weights_gb + f2->weights_gb, mb.expert_weight_bytes * 1e-9, 1e-12);
        assert_rel(b->expert_weights_gb, E / ep * 3 * e * fe * 2 * 1e-9, 1e-12);
        const model_pass_t *passes[4] = {&d->fwd, &d->bwd, &cb->fwd, &cb->bwd};
        for (int i = 0; i < 4; i++) {
            if (ep == 1) {
                assert_int_equal(passes[i]->n_colls, 0);
                continue;
            }
            assert_int_equal(passes[i]->n_colls, 1);
            const model_coll_t *c = &passes[i]->colls[0];
            assert_int_equal(c->op, MODEL_COLL_ALLTOALL);
            assert_int_equal(c->group, MODEL_GROUP_EP);
            assert_int_equal(c->group_size, ep);
            assert_int_equal(c->per_domain, ep); /* ep <= 8: one NVLink domain */
            /* bytes each GPU sends: T e bytes k (ep - 1) / ep */
            assert_rel(c->volume_gb * 1e9 * (ep - 1.0) / ep, T * e * 2 * k * (ep - 1.0) / ep, 1e-12);
            assert_rel(c->volume_gb * 1e9 * (ep - 1.0) / ep, mb.a2a_bytes, 1e-12);
            assert_rel(c->time_s, mb.a2a_time_s, 1e-12);
        }
        /* memory: the routed experts' optimizer state sharded over dp tp / ep, the rest over dp */
        const model_summary_t *s = &est.summary;
        const double n_l = 16, w = b->weights_gb * n_l, we = b->expert_weights_gb * n_l;
        assert_rel(s->weights_gb, w, 1e-12);
        assert_rel(s->optimizer_gb, 6 * (w - we) / 16 + 6 * we / (16.0 * 2 / ep), 1e-12);
        assert_int_equal(s->experts_par.ep, ep);
        /* the data-parallel collectives: dense weights over dp, experts over the expert-dp group */
        const double ag = model_collective_time_s(&j.system, j.compat, MODEL_COLL_ALLGATHER,
                                                  b->weights_gb - b->expert_weights_gb, 16, 4) +
                          model_collective_time_s(&j.system, j.compat, MODEL_COLL_ALLGATHER,
                                                  b->expert_weights_gb, 16 * 2 / ep, 8 / ep);
        if (ep > 1)
            assert_rel(s->dp_allgather_one_s, ag, 1e-12);
    }
    /* the optimizer step streams the local shard: the experts' over the expert-data-parallel group,
     * so its time per optimizer-state byte is a dense model's */
    {
        model_job_t o = mixtral_job(4), d = mixtral_job(1);
        o.training.optimizer_step = d.training.optimizer_step = 1;
        memset(&d.model.moe, 0, sizeof d.model.moe);
        d.experts_par.ep = 0;
        model_estimate_t eo, ed;
        assert_int_equal(model_estimate(&o, &eo), MODEL_OK);
        assert_int_equal(model_estimate(&d, &ed), MODEL_OK);
        assert_rel(eo.summary.optimizer_s / eo.summary.optimizer_gb,
                   ed.summary.optimizer_s / ed.summary.optimizer_gb, 1e-12);
    }
    /* placements the table does not make are refused, one field each */
    model_issue_t is;
    model_job_t j = mixtral_job(2);
    j.experts_par.etp = 32; /* divides f_e, not tp x dp / ep = 16 */
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "parallel.etp");
    j = mixtral_job(2);
    j.model.moe.first_dense = 32; /* leading dense blocks: at most layers - 1 (test_moe_dense.c) */
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "model.first_dense");
    j = mixtral_job(2);
    j.training.sequence_parallel = MODEL_SEQPAR_OFF;
    assert_int_equal(model_job_check(&j, &is), MODEL_EINVAL);
    assert_string_equal(is.field, "training.sequence_parallel");
}

/* The search over tp, pp, dp, mbs and ep for Mixtral 8x7B on 64 H100s: its best layout fits, and
 * estimating that layout again gives the same time and memory; ep is searched (each ep dividing the
 * experts and dp appears) and only 1d layouts are kept. */
static void test_search(void **state) {
    (void)state;
    model_job_t j;
    memset(&j, 0, sizeof j);
    assert_int_equal(model_transformer_preset("Mixtral-8x7B", &j.model), MODEL_OK);
    assert_int_equal(model_system_preset("H100", &j.system), MODEL_OK);
    j.system.nvlink_size = 8;
    j.gpus = 64;
    j.global_batch = 256;
    j.compat = MODEL_COMPAT_CORRECTED;
    model_search_result_t res;
    assert_int_equal(model_search_run(&j, 7u, 64, &res), MODEL_OK);
    assert_true(res.n_results > 0);
    const model_summary_t *best = &res.results[0];
    assert_true(best->fits);
    assert_true(best->memory_gb <= j.system.hbm_capacity_gb);
    model_job_t b = j;
    b.par = best->par;
    b.experts_par = best->experts_par;
    model_estimate_t est;
    assert_int_equal(model_estimate(&b, &est), MODEL_OK);
    assert_true(est.summary.iteration_time_s == best->iteration_time_s);
    assert_true(est.summary.memory_gb == best->memory_gb && est.summary.fits);
    int seen[9] = {0};
    for (int i = 0; i < res.n_results; i++) {
        const model_summary_t *s = &res.results[i];
        assert_int_equal(s->par.strategy, MODEL_STRATEGY_1D);
        assert_true(s->experts_par.ep >= 1 && 8 % s->experts_par.ep == 0 &&
                    s->par.dp % s->experts_par.ep == 0);
        seen[s->experts_par.ep] = 1;
    }
    assert_true(seen[1] && seen[2] && seen[4] && seen[8]);
    model_search_result_destroy(&res);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_counts),  cmocka_unit_test(test_block_closed_form),
        cmocka_unit_test(test_alltoall_time), cmocka_unit_test(test_checks),
        cmocka_unit_test(test_layer_table),   cmocka_unit_test(test_search),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
