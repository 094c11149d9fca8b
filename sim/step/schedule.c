/* schedule.c - pipeline schedules: the order in which one stage runs its forward and backward passes.
 *
 * GPipe runs every forward, then every backward. 1F1B (PipeDream-flush) warms up with pp - stage - 1
 * forwards, then alternates one forward and one backward, then drains the backwards. Interleaved
 * 1F1B is Megatron-LM's (schedules.py, forward_backward_pipelining_with_interleaving): each stage
 * holds v model chunks; forwards visit the chunks in groups of pp microbatches, chunk 0 first,
 * backwards in the opposite chunk order; the warm-up is 2 (pp - stage - 1) + (v - 1) pp passes, or
 * every forward when there are exactly pp microbatches. With equal stages and free communication
 * the step takes (m + pp - 1)(t_f + t_b) for GPipe and 1F1B and m (t_f + t_b) + (pp - 1)(t_f + t_b)/v
 * interleaved (tests/step/test_schedule.c checks both exactly).
 *
 * ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", arXiv 2401.10241) splits each backward into
 * B, the input gradients the stage before waits for, and W, the weight gradients nobody waits for.
 * F and B keep 1F1B's order; stage i defers up to i W's in the steady state (so it holds at most pp
 * microbatches, 1F1B's peak on stage 0) and runs the deferred ones in the drain, where 1F1B idles.
 * With equal stages, m >= pp and W no longer than F or B, the step is
 * m (F + B + W) + (pp - 1)(F + B - W), the paper's bubble (tests/step/test_zero_bubble.c). */
#include <string.h>

#include "step.h"

const char *step_schedule_name(step_schedule_t s) {
    switch (s) {
    case STEP_SCHEDULE_1F1B:
        return "1f1b";
    case STEP_SCHEDULE_GPIPE:
        return "gpipe";
    case STEP_SCHEDULE_INTERLEAVED:
        return "interleaved";
    case STEP_SCHEDULE_ZB_H1:
        return "zb-h1";
    default:
        return "unknown";
    }
}

int step_schedule_parse(const char *text, step_schedule_t *s, int32_t *v) {
    if (!text)
        return SIM_EINVAL;
    if (strcmp(text, "1f1b") == 0 || strcmp(text, "gpipe") == 0) {
        *s = text[0] == '1' ? STEP_SCHEDULE_1F1B : STEP_SCHEDULE_GPIPE;
        *v = 1;
        return SIM_OK;
    }
    if (strcmp(text, "zb-h1") == 0) {
        *s = STEP_SCHEDULE_ZB_H1;
        *v = 1;
        return SIM_OK;
    }
    static const char prefix[] = "interleaved";
    const size_t n = sizeof prefix - 1;
    if (strncmp(text, prefix, n) != 0)
        return SIM_EINVAL;
    if (text[n] == '\0') {
        *s = STEP_SCHEDULE_INTERLEAVED;
        *v = 2;
        return SIM_OK;
    }
    if (text[n] != ':' || text[n + 1] == '\0')
        return SIM_EINVAL;
    int64_t val = 0;
    for (const char *c = text + n + 1; *c; c++) {
        if (*c < '0' || *c > '9' || val > 1000000)
            return SIM_EINVAL;
        val = val * 10 + (*c - '0');
    }
    if (val < 2)
        return SIM_EINVAL;
    *s = STEP_SCHEDULE_INTERLEAVED;
    *v = (int32_t)val;
    return SIM_OK;
}

int step_schedule_splits(step_schedule_t s) {
    return s == STEP_SCHEDULE_ZB_H1;
}

static step_sched_item_t item(int32_t pass, int32_t mb, int32_t chunk) {
    const step_sched_item_t it = {pass, mb, chunk};
    return it;
}

/* Megatron's k-th forward (pass 0) or backward (pass 1) of a stage with v chunks. */
static step_sched_item_t interleaved_item(int32_t pass, int64_t k, int32_t pp, int32_t v) {
    const int64_t in_group = k % ((int64_t)pp * v);
    int32_t chunk = (int32_t)(in_group / pp);
    if (pass)
        chunk = v - 1 - chunk;
    const int32_t mb = (int32_t)((k / ((int64_t)pp * v)) * pp + k % pp);
    return item(pass, mb, chunk);
}

int step_schedule_order(step_schedule_t s, int32_t pp, int32_t v, int32_t m, int32_t stage,
                        step_sched_item_t *it) {
    if (pp < 1 || m < 1 || stage < 0 || stage >= pp || !it)
        return SIM_EINVAL;
    int64_t n = 0;
    if (s == STEP_SCHEDULE_ZB_H1) {
        if (v != 1)
            return SIM_EINVAL;
        /* warm-up as 1F1B; then F, B and the oldest W once more than `stage` wait (the deferred W's
         * of the stages before the last fill their drain); in the drain B then one W; the rest last */
        const int32_t warm = pp - stage - 1 < m ? pp - stage - 1 : m;
        int32_t w_next = 0; /* the oldest microbatch whose W has not run */
        for (int32_t i = 0; i < warm; i++)
            it[n++] = item(0, i, 0);
        for (int32_t i = 0; i < m - warm; i++) {
            it[n++] = item(0, warm + i, 0);
            it[n++] = item(1, i, 0);
            if (i + 1 - w_next > stage)
                it[n++] = item(2, w_next++, 0);
        }
        for (int32_t i = m - warm; i < m; i++) {
            it[n++] = item(1, i, 0);
            it[n++] = item(2, w_next++, 0);
        }
        while (w_next < m)
            it[n++] = item(2, w_next++, 0);
        return SIM_OK;
    }
    if (s == STEP_SCHEDULE_GPIPE || s == STEP_SCHEDULE_1F1B) {
        if (v != 1)
            return SIM_EINVAL;
        if (s == STEP_SCHEDULE_GPIPE) {
            for (int32_t i = 0; i < m; i++)
                it[n++] = item(0, i, 0);
            for (int32_t i = 0; i < m; i++)
                it[n++] = item(1, i, 0);
            return SIM_OK;
        }
        const int32_t warm = pp - stage - 1 < m ? pp - stage - 1 : m;
        for (int32_t i = 0; i < warm; i++)
            it[n++] = item(0, i, 0);
        for (int32_t i = 0; i < m - warm; i++) {
            it[n++] = item(0, warm + i, 0);
            it[n++] = item(1, i, 0);
        }
        for (int32_t i = m - warm; i < m; i++)
            it[n++] = item(1, i, 0);
        return SIM_OK;
    }
    if (s != STEP_SCHEDULE_INTERLEAVED || v < 2 || pp < 2 || m % pp != 0)
        return SIM_EINVAL;
    const int64_t total = (int64_t)m * v;
    int64_t warm = (int64_t)(pp - stage - 1) * 2 + (int64_t)(v - 1) * pp;
    if (m == pp || warm > total)
        warm = total;
    for (int64_t k = 0; k < warm; k++)
        it[n++] = interleaved_item(0, k, pp, v);
    for (int64_t i = 0; i < total - warm; i++) {
        it[n++] = interleaved_item(0, warm + i, pp, v);
        it[n++] = interleaved_item(1, i, pp, v);
    }
    for (int64_t k = total - warm; k < total; k++)
        it[n++] = interleaved_item(1, k, pp, v);
    return SIM_OK;
}
