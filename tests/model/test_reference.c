/* model/test_reference.c - --compat reference reproduces every row of the reference's
 * point-cases.csv (whole iterations) and layer-cases.csv (every layer of one block) to 1e-9. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ref_cases.h"

#define REL 1e-9

static int check(const char *what, int row_case, double got, double want) {
    if (ref_close(got, want, REL))
        return 0;
    print_error("case %d: %s = %.17g, reference %.17g\n", row_case, what, got, want);
    return 1;
}

static void test_point_cases(void **state) {
    (void)state;
    csv_table_t t;
    assert_int_equal(csv_load(STEPSIM_DATA_DIR "/point-cases.csv", &t), 0);
    assert_true(t.n_rows > 20);
    int failures = 0;
    for (size_t r = 1; r < t.n_rows; r++) {
        model_job_t job;
        model_estimate_t est;
        const int id = (int)ref_num(&t, r, "case");
        assert_int_equal(ref_case_job(&t, r, &job), 0);
        model_issue_t is;
        if (model_job_check(&job, &is) != MODEL_OK)
            print_error("case %d: %s = %s: %s\n", id, is.field, is.value, is.allowed);
        assert_int_equal(model_estimate(&job, &est), MODEL_OK);
        const model_summary_t *s = &est.summary;
        const struct {
            const char *col;
            double got;
        } cols[] = {
            {"t_iter_s", s->iteration_time_s},
            {"throughput", s->throughput_samples_per_s},
            {"mem_GB", s->memory_gb},
            {"fits", (double)s->fits},
            {"t_comp", s->compute_s},
            {"t_mem", s->memory_s},
            {"t_tp_comm", s->tp_comm_s},
            {"t_pp_comm", s->pp_comm_s},
            {"t_dp_comm", s->dp_comm_s},
            {"t_bubble", s->bubble_s},
            {"flops_per_gpu", s->flops_per_gpu_tflop},
            {"wts_mem", s->weights_gb},
            {"wts_grad_mem", s->grads_gb},
            {"wts_optimizer_states_mem", s->optimizer_gb},
            {"acts_mem", s->activations_gb},
            {"block_t_fwd", s->block_t_fwd_s},
            {"block_t_bwd", s->block_t_bwd_s},
            {"block_flops", s->block_flops_tflop},
            {"block_acts_GB", s->block_activations_gb},
            {"block_wts_GB", s->block_weights_gb},
            {"dp_t_allgather", s->dp_allgather_s},
            {"dp_t_reducescatter", s->dp_reducescatter_s},
            {"pp_t_fwd", s->pp_fwd_s},
            {"pp_t_bwd", s->pp_bwd_s},
            {"p2p_vol_GB", s->p2p_volume_gb},
        };
        for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
            failures += check(cols[c].col, id, cols[c].got, ref_num(&t, r, cols[c].col));
        /* the breakdown adds up to the iteration time */
        const double sum =
            s->compute_s + s->memory_s + s->tp_comm_s + s->pp_comm_s + s->dp_comm_s + s->bubble_s;
        failures += check("sum of breakdown", id, sum, s->iteration_time_s);
    }
    csv_free(&t);
    assert_int_equal(failures, 0);
}

/* Sum of the ';'-separated volumes of a comm cell. */
static double volume_sum(const char *cell) {
    double sum = 0.0;
    for (const char *p = cell; *p;) {
        char *end;
        sum += strtod(p, &end);
        p = *end == ';' ? end + 1 : end + strlen(end);
    }
    return sum;
}

static double pass_volume(const model_pass_t *p) {
    double v = 0.0;
    for (int i = 0; i < p->n_colls; i++)
        v += p->colls[i].volume_gb;
    return v;
}

static int check_layer(const csv_table_t *t, size_t r, int id, const model_layer_t *ly) {
    const struct {
        const char *col;
        double got;
    } cols[] = {
        {"weights_mem", ly->weights_gb},
        {"weights_grad_mem", ly->weight_grads_gb},
        {"activation_buffer", ly->activations_gb},
        {"flops_fwd", ly->fwd.flops_tflop},
        {"flops_bwd", ly->bwd.flops_tflop},
        {"t_fwd", ly->fwd.time_s},
        {"t_fwd_comp", ly->fwd.comp_s},
        {"t_fwd_mem", ly->fwd.mem_exposed_s},
        {"t_fwd_comm", ly->fwd.comm_s},
        {"t_bwd", ly->bwd.time_s},
        {"t_bwd_comp", ly->bwd.comp_s},
        {"t_bwd_mem", ly->bwd.mem_exposed_s},
        {"t_bwd_comm", ly->bwd.comm_s},
        {"mem_fwd_GB", ly->fwd.hbm_gb},
        {"mem_bwd_GB", ly->bwd.hbm_gb},
        {"intensity_fwd", ly->fwd.comp_s / ly->fwd.mem_s},
        {"intensity_bwd", ly->bwd.comp_s / ly->bwd.mem_s},
    };
    int failures = 0;
    char what[96];
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
        snprintf(what, sizeof what, "%s.%s", ly->name, cols[c].col);
        failures += check(what, id, cols[c].got, ref_num(t, r, cols[c].col));
    }
    snprintf(what, sizeof what, "%s.comm_fwd", ly->name);
    failures += check(what, id, pass_volume(&ly->fwd), volume_sum(csv_cell(t, r, csv_column(t, "comm_fwd"))));
    snprintf(what, sizeof what, "%s.comm_bwd", ly->name);
    failures += check(what, id, pass_volume(&ly->bwd), volume_sum(csv_cell(t, r, csv_column(t, "comm_bwd"))));
    return failures;
}

/* The dp and pp pseudo-layers: volumes and exposed times. */
static int check_pseudo(const csv_table_t *t, size_t r, int id, const model_summary_t *s) {
    const int dp = strcmp(csv_cell(t, r, csv_column(t, "module")), "dp") == 0;
    int failures = 0;
    failures +=
        check(dp ? "dp.t_fwd" : "pp.t_fwd", id, dp ? s->dp_allgather_s : s->pp_fwd_s, ref_num(t, r, "t_fwd"));
    failures += check(dp ? "dp.t_bwd" : "pp.t_bwd", id, dp ? s->dp_reducescatter_s : s->pp_bwd_s,
                      ref_num(t, r, "t_bwd"));
    failures += check(dp ? "dp.comm_fwd" : "pp.comm_fwd", id, dp ? s->block_weights_gb : s->p2p_volume_gb,
                      ref_num(t, r, "comm_fwd"));
    return failures;
}

/* layer-cases.csv has no gpus/dp/pp columns: take them from the same case of point-cases.csv. */
static void test_layer_cases(void **state) {
    (void)state;
    csv_table_t lt, pt;
    assert_int_equal(csv_load(STEPSIM_DATA_DIR "/layer-cases.csv", &lt), 0);
    assert_int_equal(csv_load(STEPSIM_DATA_DIR "/point-cases.csv", &pt), 0);
    int failures = 0, layers_checked = 0;
    for (size_t r = 1; r < lt.n_rows;) {
        const int id = (int)ref_num(&lt, r, "case");
        size_t pr = 1;
        while (pr < pt.n_rows && (int)ref_num(&pt, pr, "case") != id)
            pr++;
        assert_true(pr < pt.n_rows);
        model_job_t job;
        model_estimate_t est;
        assert_int_equal(ref_case_job(&pt, pr, &job), 0);
        assert_int_equal(model_estimate(&job, &est), MODEL_OK);
        for (int i = 0; r < lt.n_rows && (int)ref_num(&lt, r, "case") == id; r++) {
            const char *module = csv_cell(&lt, r, csv_column(&lt, "module"));
            if (strcmp(module, "dp") == 0 || strcmp(module, "pp") == 0) {
                failures += check_pseudo(&lt, r, id, &est.summary);
                continue;
            }
            const model_layer_t *ly = &est.block.layers[i++];
            assert_string_equal(ly->name, csv_cell(&lt, r, csv_column(&lt, "layer")));
            failures += check_layer(&lt, r, id, ly);
            layers_checked++;
        }
    }
    csv_free(&lt);
    csv_free(&pt);
    assert_int_equal(layers_checked, 14 * 4);
    assert_int_equal(failures, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_point_cases),
        cmocka_unit_test(test_layer_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
