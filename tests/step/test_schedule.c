/* step/test_schedule.c - pipeline schedules against their closed forms, exactly (integer picoseconds):
 * with equal stages and free communication, GPipe and 1F1B take (m + pp - 1)(t_f + t_b), a bubble of
 * (pp - 1)/m of the work, and interleaved 1F1B with v virtual stages (m v + pp - 1)(t_f + t_b)/v, the
 * bubble divided by v; over several pp, m, v and models. Also the schedules' orders themselves (every
 * pass once, a forward before its backward, 1F1B's warm-up), 1F1B's activation peak of min(pp, m)
 * microbatches against GPipe's m, and the parsers of --schedule and --placement. */
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

/* A job whose only cost is compute: tensor and data parallelism 1, pipeline messages faster than a
 * picosecond (the model's p2p time rounds to 0 ps), no optimizer step. */
static model_job_t job_of(int64_t pp, int64_t layers, int64_t m, int64_t hidden) {
    return step_test_compute_job(pp, layers, m, hidden, 128, MODEL_COMPAT_REFERENCE);
}

typedef struct outcome {
    sim_time_ps_t step_ps, tf_ps, tb_ps; /* step; one forward / backward pass of one item */
    double peak_act_gb, block_act_gb;
} outcome_t;

static outcome_t simulate(const model_job_t *job, step_schedule_t sched, int32_t v, step_granularity_t g) {
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.comm = SIM_COMM_ANALYTIC;
    cfg.schedule = sched;
    cfg.virtual_stages = v;
    cfg.granularity = g;
    step_t *s = NULL;
    char err[256];
    if (step_new(job, &cfg, NULL, &s, err, sizeof err) != SIM_OK)
        fail_msg("step_new: %s", err);
    assert_int_equal(step_run(s), SIM_OK);
    step_result_t r;
    assert_int_equal(step_result(s, &r), SIM_OK);
    outcome_t o = {sim_s_to_ps(r.step_time_s), -1, -1, r.peak_activations_gb, 0.0};
    const sim_engine_t *e = step_engine(s);
    for (sim_op_id_t op = 0; op < sim_op_count(e); op++) {
        step_op_t m;
        sim_time_ps_t st, en;
        assert_int_equal(step_op(s, op, &m), SIM_OK);
        sim_op_times(e, op, &st, &en);
        if (m.kind != STEP_OP_COMPUTE)
            continue;
        sim_time_ps_t *slot = strcmp(m.pass, "fwd") == 0 ? &o.tf_ps : &o.tb_ps;
        if (*slot >= 0 && *slot != en - st)
            fail_msg("passes of one schedule differ: %lld ps and %lld ps", (long long)*slot,
                     (long long)(en - st));
        *slot = en - st;
        if (m.activations_gb > 0)
            o.block_act_gb = m.activations_gb / m.n_blocks;
    }
    step_free(s);
    return o;
}

static void test_gpipe_and_1f1b_bubble(void **state) {
    (void)state;
    static const int64_t pps[] = {1, 2, 3, 4, 8};
    static const int64_t ms[] = {1, 2, 3, 5, 8, 16};
    static const int64_t hidden[] = {256, 512};
    int n = 0;
    for (size_t a = 0; a < sizeof pps / sizeof pps[0]; a++)
        for (size_t b = 0; b < sizeof ms / sizeof ms[0]; b++)
            for (size_t h = 0; h < 2; h++)
                for (int sched = 0; sched < 2; sched++) {
                    const int64_t pp = pps[a], m = ms[b];
                    const model_job_t job = job_of(pp, 2 * pp, m, hidden[h]);
                    const step_schedule_t s = sched ? STEP_SCHEDULE_GPIPE : STEP_SCHEDULE_1F1B;
                    const outcome_t o = simulate(&job, s, 1, STEP_GRANULARITY_AUTO);
                    const sim_time_ps_t work = o.tf_ps + o.tb_ps;
                    if (o.step_ps != (m + pp - 1) * work)
                        fail_msg("%s pp %lld m %lld: step %lld ps, want (m + pp - 1)(t_f + t_b) = %lld ps",
                                 step_schedule_name(s), (long long)pp, (long long)m, (long long)o.step_ps,
                                 (long long)((m + pp - 1) * work));
                    /* the bubble is (pp - 1)/m of the work, exactly */
                    assert_true((o.step_ps - m * work) * m == (pp - 1) * m * work);
                    /* activation peak: 1F1B holds min(pp, m) microbatches on stage 0, GPipe m */
                    const double in_flight = s == STEP_SCHEDULE_GPIPE ? (double)m : (double)(pp < m ? pp : m);
                    const double want = in_flight * 2.0 * o.block_act_gb;
                    if (o.peak_act_gb > want * (1 + 1e-9) || o.peak_act_gb < want * (1 - 1e-9))
                        fail_msg("%s pp %lld m %lld: peak activations %.9g GB, want %.9g",
                                 step_schedule_name(s), (long long)pp, (long long)m, o.peak_act_gb, want);
                    n++;
                }
    printf("  %d GPipe and 1F1B runs reproduce (m + pp - 1)(t_f + t_b) to the picosecond\n", n);
}

static void test_interleaved_divides_the_bubble(void **state) {
    (void)state;
    static const int64_t pps[] = {2, 3, 4, 8};
    static const int64_t mult[] = {1, 2, 3};
    static const int32_t vs[] = {2, 3, 4};
    int n = 0;
    for (size_t a = 0; a < sizeof pps / sizeof pps[0]; a++)
        for (size_t b = 0; b < sizeof mult / sizeof mult[0]; b++)
            for (size_t c = 0; c < sizeof vs / sizeof vs[0]; c++)
                for (int gran = 1; gran <= 2; gran++) {
                    const int64_t pp = pps[a], m = pp * mult[b];
                    const int32_t v = vs[c];
                    const model_job_t job = job_of(pp, pp * v, m, 256);
                    const outcome_t o =
                        simulate(&job, STEP_SCHEDULE_INTERLEAVED, v, (step_granularity_t)gran);
                    const sim_time_ps_t chunk = o.tf_ps + o.tb_ps; /* one model chunk: 1/v of a stage */
                    const sim_time_ps_t want = (m * v + pp - 1) * chunk;
                    if (o.step_ps != want)
                        fail_msg(
                            "interleaved:%d pp %lld m %lld: step %lld ps, want (m v + pp - 1) t_chunk = %lld",
                            v, (long long)pp, (long long)m, (long long)o.step_ps, (long long)want);
                    /* bubble (pp - 1) t_chunk = the 1F1B bubble (pp - 1)(t_f + t_b) divided by v */
                    assert_true((o.step_ps - m * v * chunk) * v == (pp - 1) * v * chunk);
                    n++;
                }
    printf("  %d interleaved runs: the bubble is (pp - 1)(t_f + t_b)/v to the picosecond\n", n);
}

static void test_orders(void **state) {
    (void)state;
    step_sched_item_t it[2 * 24 * 4];
    for (int sched = 0; sched < 3; sched++)
        for (int32_t pp = 2; pp <= 4; pp++)
            for (int32_t stage = 0; stage < pp; stage++) {
                const int32_t v = sched == STEP_SCHEDULE_INTERLEAVED ? 2 : 1, m = 2 * pp;
                assert_int_equal(step_schedule_order((step_schedule_t)sched, pp, v, m, stage, it), SIM_OK);
                int seen[2][4][24];
                memset(seen, 0, sizeof seen);
                for (int32_t i = 0; i < 2 * m * v; i++) {
                    assert_true(it[i].microbatch >= 0 && it[i].microbatch < m);
                    assert_true(it[i].chunk >= 0 && it[i].chunk < v);
                    assert_int_equal(seen[it[i].pass][it[i].chunk][it[i].microbatch]++, 0);
                    if (it[i].pass) /* a backward after its forward */
                        assert_int_equal(seen[0][it[i].chunk][it[i].microbatch], 1);
                }
                if (sched == STEP_SCHEDULE_1F1B) /* warm-up: pp - stage - 1 forwards, then a forward */
                    for (int32_t i = 0; i < pp - stage; i++)
                        assert_int_equal(it[i].pass, 0);
            }
    /* interleaved needs m a multiple of pp, pp >= 2, v >= 2 */
    assert_int_equal(step_schedule_order(STEP_SCHEDULE_INTERLEAVED, 4, 2, 6, 0, it), SIM_EINVAL);
    assert_int_equal(step_schedule_order(STEP_SCHEDULE_INTERLEAVED, 1, 2, 4, 0, it), SIM_EINVAL);
    assert_int_equal(step_schedule_order(STEP_SCHEDULE_1F1B, 4, 2, 8, 0, it), SIM_EINVAL);
}

static void test_parsers(void **state) {
    (void)state;
    step_schedule_t s;
    int32_t v = 0;
    assert_int_equal(step_schedule_parse("1f1b", &s, &v), SIM_OK);
    assert_true(s == STEP_SCHEDULE_1F1B && v == 1);
    assert_int_equal(step_schedule_parse("gpipe", &s, &v), SIM_OK);
    assert_true(s == STEP_SCHEDULE_GPIPE);
    assert_int_equal(step_schedule_parse("interleaved", &s, &v), SIM_OK);
    assert_true(s == STEP_SCHEDULE_INTERLEAVED && v == 2);
    assert_int_equal(step_schedule_parse("interleaved:4", &s, &v), SIM_OK);
    assert_int_equal(v, 4);
    assert_int_equal(step_schedule_parse("interleaved:1", &s, &v), SIM_EINVAL);
    assert_int_equal(step_schedule_parse("interleaved:", &s, &v), SIM_EINVAL);
    assert_int_equal(step_schedule_parse("zb-h1", &s, &v), SIM_OK);
    assert_true(s == STEP_SCHEDULE_ZB_H1 && v == 1);
    assert_int_equal(step_schedule_parse("zb-h1:2", &s, &v), SIM_EINVAL);
    step_placement_t p;
    char buf[32];
    assert_int_equal(step_placement_parse("dp,pp", &p), SIM_OK);
    assert_string_equal(step_placement_format(&p, buf, sizeof buf), "dp,pp,tp,cp");
    assert_int_equal(step_placement_parse("tp1,tp2,pp,dp", &p), SIM_OK);
    assert_string_equal(step_placement_format(&p, buf, sizeof buf), "tp,cp,pp,dp");
    assert_int_equal(step_placement_parse("tp,tp", &p), SIM_EINVAL);
    assert_int_equal(step_placement_parse("tp,xp", &p), SIM_EINVAL);
    /* placement round trip and the nv counts: tp 4 (2 per domain), pp 2 (2 per domain), dp 2 */
    const model_parallel_t par = {MODEL_STRATEGY_1D, 2, 4, 4, 1, 2, 1, 1, 2, 1, 1, 2};
    step_placement_default(&p);
    for (int64_t gpu = 0; gpu < 16; gpu++) {
        int64_t x[STEP_DIM_COUNT];
        step_placement_coords(&p, &par, gpu, x);
        assert_int_equal(step_placement_gpu(&p, &par, x), gpu);
    }
    const int64_t a[STEP_DIM_COUNT] = {0, 0, 0, 0}, b[STEP_DIM_COUNT] = {1, 0, 0, 0},
                  c[STEP_DIM_COUNT] = {2, 0, 0, 0}, d[STEP_DIM_COUNT] = {0, 0, 1, 0};
    assert_int_equal(step_placement_gpu(&p, &par, a), 0);
    assert_int_equal(step_placement_gpu(&p, &par, b), 1);
    assert_int_equal(step_placement_gpu(&p, &par, d), 2); /* the next stage shares the domain of 4 */
    assert_int_equal(step_placement_gpu(&p, &par, c), 4); /* tp rank 2: the next domain */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpipe_and_1f1b_bubble),
        cmocka_unit_test(test_interleaved_divides_the_bubble),
        cmocka_unit_test(test_orders),
        cmocka_unit_test(test_parsers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
