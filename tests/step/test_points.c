/* step/test_points.c - the simulated step reproduces the closed-form model: with the model's
 * collective times (--comm analytic), --compat reference and the reference's assumptions (blocking
 * pipeline sends, per-layer data-parallel collectives overlapping one microbatch, 1F1B), every
 * configuration of tests/data/point-cases.csv that fits in memory takes its `stepsim estimate`
 * iteration time within 1% (docs/run.md lists the residuals: a pipeline's end stages send one way
 * only, which the model charges both ways). Also: the breakdown adds up to the step time, and peak
 * activation memory is the model's (1F1B holds min(pp, microbatches) in flight on stage 0). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ref_cases.h"
#include "step.h"

#define TOLERANCE 0.01

static void run_case(const model_job_t *job, step_result_t *r) {
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.comm = SIM_COMM_ANALYTIC;
    cfg.granularity = STEP_GRANULARITY_MICROBATCH; /* exact either way; fewer operations */
    step_t *s = NULL;
    char err[256];
    if (step_new(job, &cfg, NULL, &s, err, sizeof err) != SIM_OK)
        fail_msg("step_new: %s", err);
    if (step_run(s) != SIM_OK)
        fail_msg("step_run: %s", step_last_error(s));
    assert_int_equal(step_result(s, r), SIM_OK);
    step_free(s);
}

static void test_point_cases(void **state) {
    (void)state;
    csv_table_t t;
    assert_int_equal(csv_load(STEPSIM_DATA_DIR "/point-cases.csv", &t), 0);
    int checked = 0, skipped = 0;
    double worst = 0.0;
    for (size_t r = 1; r < t.n_rows; r++) {
        model_job_t job;
        assert_int_equal(ref_case_job(&t, r, &job), 0);
        model_estimate_t *e = malloc(sizeof *e);
        assert_non_null(e);
        assert_int_equal(model_estimate(&job, e), MODEL_OK);
        if (!e->summary.fits) {
            skipped++;
            free(e);
            continue;
        }
        step_result_t res;
        run_case(&job, &res);
        const double want = e->summary.iteration_time_s, got = res.step_time_s;
        const double rel = (got - want) / want;
        printf("  case %-3s %-9s %-7s %-8s gpus %5lld  estimate %14.6f s  simulated %14.6f s  %+.5f%%  (%lld "
               "ops)\n",
               csv_cell(&t, r, csv_column(&t, "case")), csv_cell(&t, r, csv_column(&t, "model")),
               csv_cell(&t, r, csv_column(&t, "system")), csv_cell(&t, r, csv_column(&t, "strategy")),
               (long long)job.gpus, want, got, 100.0 * rel, (long long)res.operations);
        if (fabs(rel) > TOLERANCE)
            fail_msg("case %s: simulated %.6f s, estimate %.6f s (%+.3f%%)",
                     csv_cell(&t, r, csv_column(&t, "case")), got, want, 100.0 * rel);
        worst = fmax(worst, fabs(rel));
        const step_breakdown_t *b = &res.breakdown;
        const double sum = b->compute_s + b->exposed_tp_comm_s + b->exposed_pp_comm_s + b->exposed_dp_comm_s +
                           b->bubble_idle_s;
        if (fabs(sum - got) > 1e-9 * got)
            fail_msg("case %s: the breakdown adds up to %.12g s, the step is %.12g s",
                     csv_cell(&t, r, csv_column(&t, "case")), sum, got);
        if (fabs(res.peak_activations_gb - e->summary.activations_gb) > 1e-6 * e->summary.activations_gb)
            fail_msg("case %s: peak activations %.9g GB, the model's %.9g GB",
                     csv_cell(&t, r, csv_column(&t, "case")), res.peak_activations_gb,
                     e->summary.activations_gb);
        checked++;
        free(e);
    }
    printf("  %d cases checked (largest difference %.4f%%), %d do not fit in memory\n", checked,
           100.0 * worst, skipped);
    assert_true(checked >= 15);
    csv_free(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_point_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
