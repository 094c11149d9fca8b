/* model/test_collective.c - the collective-time models: reference spot values (docs/model-formulas.md,
 * section 11), the corrected model's allreduce doubling, monotonicity in volume and group size, the zero
 * cases, and its accuracy against the measured Perlmutter NCCL sweep, held in aggregate. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"

#define N_OPS 6
static const model_coll_op_t all_ops[N_OPS] = {MODEL_COLL_ALLREDUCE,     MODEL_COLL_ALLGATHER,
                                               MODEL_COLL_REDUCESCATTER, MODEL_COLL_BROADCAST,
                                               MODEL_COLL_REDUCE,        MODEL_COLL_P2P};

static model_system_t a100(void) {
    model_system_t sys;
    assert_int_equal(model_system_preset("A100", &sys), MODEL_OK);
    return sys;
}

static double coll_s(const model_system_t *sys, model_compat_t compat, model_coll_op_t op, double volume_gb,
                     int64_t n, int64_t t) {
    return model_collective_time_s(sys, compat, op, volume_gb, n, t);
}

static void assert_rel(double got, double want, double tol) {
    if (fabs(got - want) > tol * fabs(want))
        fail_msg("got %.9g, want %.9g (relative tolerance %g)", got, want, tol);
}

static void test_reference_spot_values(void **state) {
    (void)state;
    const model_system_t sys = a100();
    /* Worked example: the TP collective, one NVLink domain of 8. */
    assert_rel(coll_s(&sys, MODEL_COMPAT_REFERENCE, MODEL_COLL_ALLGATHER, 0.1048576, 8, 8), 0.000454407,
               1e-6);
    /* Its data-parallel all-gather, all IB (16 domains of one): 0.105420 s as printed, and exactly
     * 15 ls + (15/16) V / bs. */
    const double dp_s = coll_s(&sys, MODEL_COMPAT_REFERENCE, MODEL_COLL_ALLGATHER, 1.9664128, 16, 1);
    assert_rel(dp_s, 0.105420, 2e-5);
    assert_rel(dp_s, 15 * 5e-6 + 15.0 / 16.0 * 1.9664128 / 17.5, 1e-12);
    /* Quirk kept: the reference does not double allreduce in these two branches. */
    assert_rel(coll_s(&sys, MODEL_COMPAT_REFERENCE, MODEL_COLL_ALLREDUCE, 0.1048576, 8, 8), 0.000454407,
               1e-6);
}

static void test_corrected_doubles_allreduce(void **state) {
    (void)state;
    const model_system_t sys = a100();
    const double v_gb = 10.0;
    /* One NVLink domain: same bandwidth tier as the reference, twice the bytes. */
    const double ref_dom = coll_s(&sys, MODEL_COMPAT_REFERENCE, MODEL_COLL_ALLREDUCE, v_gb, 8, 8);
    const double cor_dom = coll_s(&sys, MODEL_COMPAT_CORRECTED, MODEL_COLL_ALLREDUCE, v_gb, 8, 8);
    assert_rel(cor_dom / ref_dom, 2.0, 0.02);
    /* All IB: allreduce = reduce-scatter + all-gather, and the single-rail efficiency on top. */
    const double ref_ib = coll_s(&sys, MODEL_COMPAT_REFERENCE, MODEL_COLL_ALLREDUCE, v_gb, 16, 1);
    const double cor_ib = coll_s(&sys, MODEL_COMPAT_CORRECTED, MODEL_COLL_ALLREDUCE, v_gb, 16, 1);
    const double cor_ag = coll_s(&sys, MODEL_COMPAT_CORRECTED, MODEL_COLL_ALLGATHER, v_gb, 16, 1);
    assert_rel(cor_ib / cor_ag, 2.0, 0.02);
    assert_true(cor_ib > 1.9 * ref_ib);
    /* Hierarchical: the reference already doubles; corrected stays within a few percent. */
    const double ref_h = coll_s(&sys, MODEL_COMPAT_REFERENCE, MODEL_COLL_ALLREDUCE, v_gb, 32, 4);
    const double cor_h = coll_s(&sys, MODEL_COMPAT_CORRECTED, MODEL_COLL_ALLREDUCE, v_gb, 32, 4);
    assert_rel(cor_h / ref_h, 1.0, 0.05);
}

static void test_corrected_zero_cases(void **state) {
    (void)state;
    const model_system_t sys = a100();
    for (int o = 0; o < N_OPS; o++) {
        assert_true(coll_s(&sys, MODEL_COMPAT_CORRECTED, all_ops[o], 1.0, 1, 1) == 0.0);
        assert_true(coll_s(&sys, MODEL_COMPAT_CORRECTED, all_ops[o], 0.0, 64, 4) == 0.0);
        assert_true(coll_s(&sys, MODEL_COMPAT_CORRECTED, all_ops[o], NAN, 64, 4) == 0.0);
        assert_true(coll_s(&sys, MODEL_COMPAT_CORRECTED, all_ops[o], 1e-6, 64, 4) > 0.0);
    }
    assert_true(coll_s(&sys, MODEL_COMPAT_CORRECTED, MODEL_COLL_NONE, 1.0, 8, 8) == 0.0);
}

/* Non-decreasing in V over 1 byte .. 100 GB, 40 points per decade, for every op and several shapes. */
static void test_corrected_monotone_in_volume(void **state) {
    (void)state;
    const model_system_t sys = a100();
    static const int64_t shapes[][2] = {{2, 1},   {2, 2}, {4, 4},  {8, 8},  {16, 1},
                                        {256, 1}, {8, 2}, {64, 4}, {512, 4}};
    for (int o = 0; o < N_OPS; o++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            double prev_s = 0.0;
            for (int i = 0; i <= 11 * 40; i++) {
                const double v_gb = 1e-9 * pow(10.0, i / 40.0);
                const double t_s =
                    coll_s(&sys, MODEL_COMPAT_CORRECTED, all_ops[o], v_gb, shapes[s][0], shapes[s][1]);
                if (t_s < prev_s)
                    fail_msg("%s n=%lld t=%lld: T(%g GB) = %g < %g", model_coll_op_name(all_ops[o]),
                             (long long)shapes[s][0], (long long)shapes[s][1], v_gb, t_s, prev_s);
                prev_s = t_s;
            }
        }
    }
}

/* Non-decreasing in the group size at a fixed number of members per domain. */
static void test_corrected_monotone_in_group(void **state) {
    (void)state;
    const model_system_t sys = a100();
    static const double volumes_gb[] = {32768e-9, 1e-3, 8.4e-3, 0.1, 4.0};
    static const int64_t per_domain[] = {1, 2, 4, 8};
    for (int o = 0; o < 3; o++) {
        for (size_t v = 0; v < sizeof volumes_gb / sizeof volumes_gb[0]; v++) {
            for (size_t k = 0; k < sizeof per_domain / sizeof per_domain[0]; k++) {
                const int64_t t = per_domain[k];
                double prev_s = 0.0;
                for (int64_t nodes = 1; nodes <= 300; nodes++) {
                    const double t_s =
                        coll_s(&sys, MODEL_COMPAT_CORRECTED, all_ops[o], volumes_gb[v], nodes * t, t);
                    if (t_s < prev_s)
                        fail_msg("%s V=%g t=%lld: T(n=%lld) = %g < %g", model_coll_op_name(all_ops[o]),
                                 volumes_gb[v], (long long)t, (long long)(nodes * t), t_s, prev_s);
                    prev_s = t_s;
                }
            }
        }
    }
}

/* ---- measured Perlmutter sweep ------------------------------------------------------------- */

typedef struct accuracy {
    int rows;
    double ref_abs_pct, cor_abs_pct; /* sums, then means */
} accuracy_t;

static model_coll_op_t op_from_name(const char *name) {
    if (strcmp(name, "allreduce") == 0)
        return MODEL_COLL_ALLREDUCE;
    if (strcmp(name, "allgather") == 0)
        return MODEL_COLL_ALLGATHER;
    if (strcmp(name, "reducescatter") == 0)
        return MODEL_COLL_REDUCESCATTER;
    return MODEL_COLL_NONE;
}

/* Columns: op,num_nodes,gpus_per_node,n_gpus,size_bytes,...,t_meas_s (13th). Accumulate the mean
 * absolute error of both modes over rows with size >= min_bytes and < max_bytes. */
static accuracy_t perlmutter_accuracy(double min_bytes, double max_bytes) {
    const model_system_t sys = a100();
    FILE *fp = fopen(STEPSIM_DATA_DIR "/perlmutter-nccl.csv", "r");
    assert_non_null(fp);
    char line[1024];
    accuracy_t acc = {0, 0.0, 0.0};
    assert_non_null(fgets(line, sizeof line, fp)); /* header */
    while (fgets(line, sizeof line, fp)) {
        char op_name[32];
        long long nodes, per_node, gpus;
        double size_bytes, meas_s;
        char *field = line;
        assert_int_equal(
            sscanf(line, "%31[^,],%lld,%lld,%lld,%lf", op_name, &nodes, &per_node, &gpus, &size_bytes), 5);
        for (int c = 0; c < 12; c++) {
            field = strchr(field, ',');
            assert_non_null(field);
            field++;
        }
        meas_s = strtod(field, NULL);
        assert_true(meas_s > 0.0);
        if (size_bytes < min_bytes || size_bytes >= max_bytes)
            continue;
        const model_coll_op_t op = op_from_name(op_name);
        assert_int_not_equal(op, MODEL_COLL_NONE);
        const double ref_s = coll_s(&sys, MODEL_COMPAT_REFERENCE, op, size_bytes * 1e-9, gpus, per_node);
        const double cor_s = coll_s(&sys, MODEL_COMPAT_CORRECTED, op, size_bytes * 1e-9, gpus, per_node);
        acc.ref_abs_pct += 100.0 * fabs(ref_s - meas_s) / meas_s;
        acc.cor_abs_pct += 100.0 * fabs(cor_s - meas_s) / meas_s;
        acc.rows++;
    }
    fclose(fp);
    assert_true(acc.rows > 0);
    acc.ref_abs_pct /= acc.rows;
    acc.cor_abs_pct /= acc.rows;
    return acc;
}

/* docs/collectives.md: >= 8 MiB, all 769 rows: reference 25.1%, corrected 9.3%. */
static void test_corrected_accuracy_large(void **state) {
    (void)state;
    const accuracy_t acc = perlmutter_accuracy(8.0 * 1024 * 1024, INFINITY);
    print_message("large messages: %d rows, mean |error| reference %.1f%%, corrected %.1f%%\n", acc.rows,
                  acc.ref_abs_pct, acc.cor_abs_pct);
    assert_int_equal(acc.rows, 769);
    assert_true(acc.ref_abs_pct > 20.0); /* the bound below is one the reference fails */
    assert_true(acc.cor_abs_pct < 12.0);
}

/* < 8 MiB, 560 rows: reference 52.9%, corrected 17.7%. */
static void test_corrected_accuracy_small(void **state) {
    (void)state;
    const accuracy_t acc = perlmutter_accuracy(0.0, 8.0 * 1024 * 1024);
    print_message("small messages: %d rows, mean |error| reference %.1f%%, corrected %.1f%%\n", acc.rows,
                  acc.ref_abs_pct, acc.cor_abs_pct);
    assert_int_equal(acc.rows, 560);
    assert_true(acc.ref_abs_pct > 40.0);
    assert_true(acc.cor_abs_pct < 22.0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_spot_values),
        cmocka_unit_test(test_corrected_doubles_allreduce),
        cmocka_unit_test(test_corrected_zero_cases),
        cmocka_unit_test(test_corrected_monotone_in_volume),
        cmocka_unit_test(test_corrected_monotone_in_group),
        cmocka_unit_test(test_corrected_accuracy_large),
        cmocka_unit_test(test_corrected_accuracy_small),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
