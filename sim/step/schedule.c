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
 * m (F + B + W) + (pp - 1)(F + B - W), the paper's bubble (tests/step/test_zero_bubble.c).
 *
 * DualPipe (DeepSeek-V3 technical report, arXiv 2412.19437, and the deepseek-ai/DualPipe repository,
 * dualpipe.py): GPU i holds stage i and a copy of stage pp - 1 - i; chunk 0 carries microbatches
 * 0 .. m/2 - 1 from GPU 0 on, chunk 1 the rest from GPU pp - 1 on. Each GPU runs the repository's
 * eight phases (nF0, nF0F1, nB1W1F1, the main nF0B1F1B0, nB1F1B0, nB1B0, nWB0, nW; "phase 0" is the
 * GPU's own direction for the first half of the GPUs, the other for the second half), an overlapped
 * pair as its forward then its backward, a backward with zero bubble on as B with its W deferred to a
 * first-in-first-out queue, otherwise as B then W. The repository's exchanges block (every compute
 * waits for what was posted before it; a send completes once its receive is posted): the items carry
 * where each send and receive is posted (send_post, recv_post) and the step makes those waits. With
 * equal stages and F = B = W the step is m (F + B + W) + (pp/2 - 1)(F&B + B' - 3W) (B' = B + W the
 * whole backward, F&B = F + B' since the pair runs one after the other), the report's bubble.
 *
 * ZB-V (Qi et al., arXiv 2401.10241, section 6: two chunks per GPU in a V, GPU i holding virtual
 * stages i and 2 pp - 1 - i): the same eight phases on the V (the repository's dualpipev.py, the
 * "cut-in-half" V-shape schedule) with each pair run backward first and chunk 1's forward after both
 * backwards in the fifth phase, so a GPU holds at most 2 pp chunk microbatches, 1F1B's pp stage
 * microbatches. With equal stages, m >= 2 pp, W <= B and F <= B + W (per stage and microbatch) the step
 * is m (F + B + W) + (pp - 1)(max(F, B) + B - W) / 2 (model_pipeline_form; derived for this order and
 * checked by tests/step/test_zero_bubble.c). At F = B = W that is (pp - 1) F / 2, the last GPU's wait
 * for its first forward: the paper's zero bubble counts from each GPU's first pass (its optimizer
 * step does not synchronise the stages), a synchronous step cannot. */
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
    case STEP_SCHEDULE_ZB_V:
        return "zb-v";
    case STEP_SCHEDULE_DUALPIPE:
        return "dualpipe";
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
    if (strcmp(text, "zb-v") == 0 || strcmp(text, "dualpipe") == 0) {
        *s = text[0] == 'z' ? STEP_SCHEDULE_ZB_V : STEP_SCHEDULE_DUALPIPE;
        *v = 2;
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
    return s == STEP_SCHEDULE_ZB_H1 || s == STEP_SCHEDULE_ZB_V || s == STEP_SCHEDULE_DUALPIPE;
}

int64_t step_schedule_items(step_schedule_t s, int32_t v, int32_t m) {
    return (step_schedule_splits(s) ? 3 : 2) * (int64_t)m * (s == STEP_SCHEDULE_DUALPIPE ? 1 : v);
}

int32_t step_schedule_vstages(step_schedule_t s, int32_t pp, int32_t v) {
    return s == STEP_SCHEDULE_DUALPIPE ? pp : pp * v;
}

int32_t step_schedule_vstage(step_schedule_t s, int32_t pp, int32_t v, int32_t p, int32_t c) {
    if (s == STEP_SCHEDULE_DUALPIPE)
        return c ? pp - 1 - p : p;
    if (s == STEP_SCHEDULE_ZB_V)
        return c ? 2 * pp - 1 - p : p;
    (void)v;
    return c * pp + p;
}

void step_schedule_owner(step_schedule_t s, int32_t pp, int32_t v, int32_t vs, int32_t c, int32_t *p,
                         int32_t *c2) {
    (void)v;
    if (s == STEP_SCHEDULE_DUALPIPE) {
        *c2 = c;
        *p = c ? pp - 1 - vs : vs;
    } else if (s == STEP_SCHEDULE_ZB_V) {
        *c2 = vs >= pp;
        *p = vs >= pp ? 2 * pp - 1 - vs : vs;
    } else {
        *c2 = vs / pp;
        *p = vs % pp;
    }
}

static step_sched_item_t item(int32_t pass, int32_t mb, int32_t chunk) {
    const step_sched_item_t it = {pass, mb, chunk, 0, 0};
    return it;
}

/* ---- DualPipe and ZB-V: the repository's eight phases --------------------------------------------- */

typedef struct dual {
    step_sched_item_t *it;
    int64_t n;            /* items so far */
    int32_t flip;         /* phase ^ flip is the chunk */
    int32_t stride;       /* chunk c's k-th microbatch is c stride + k */
    int32_t fc[2], bc[2]; /* forwards, backwards run per chunk */
    int64_t wq;           /* the scan for the oldest deferred B */
    int track;            /* DualPipe: record where sends and receives are posted */
    int32_t pp, stage;    /* for the ends of each direction */
    int64_t sent[2][2];   /* [pass][chunk]: the scan for the next output to send */
    int64_t rq[2][2][4];  /* [pass][chunk]: receives posted before their item (positions) */
    int32_t rq_n[2][2];
} dual_t;

/* chunk c's direction starts (forward input from nowhere) or ends on this stage */
static int dual_first(const dual_t *d, int32_t c) {
    return d->stage == (c ? d->pp - 1 : 0);
}

static int dual_last(const dual_t *d, int32_t c) {
    return d->stage == (c ? 0 : d->pp - 1);
}

static void dual_recv(dual_t *d, int32_t pass, int32_t ph) {
    const int32_t c = ph ^ d->flip;
    if (!d->track || (pass ? dual_last(d, c) : dual_first(d, c)) || d->rq_n[pass][c] >= 4)
        return;
    d->rq[pass][c][d->rq_n[pass][c]++] = d->n - 1;
}

static void dual_send(dual_t *d, int32_t pass, int32_t ph) {
    const int32_t c = ph ^ d->flip;
    if (!d->track || (pass ? dual_first(d, c) : dual_last(d, c)))
        return;
    int64_t *k = &d->sent[pass][c];
    while (*k < d->n && !(d->it[*k].pass == pass && d->it[*k].chunk == c))
        ++*k;
    if (*k < d->n) { /* posted after the last item so far */
        d->it[*k].send_post = (int32_t)(d->n - 1 - *k) + 1;
        ++*k;
    }
}

static void dual_emit(dual_t *d, int32_t pass, int32_t mb, int32_t c) {
    step_sched_item_t x = item(pass, mb, c);
    if (d->track && pass < 2 && d->rq_n[pass][c] > 0) {
        x.recv_post = (int32_t)(d->n - d->rq[pass][c][0]);
        for (int32_t i = 1; i < d->rq_n[pass][c]; i++)
            d->rq[pass][c][i - 1] = d->rq[pass][c][i];
        d->rq_n[pass][c]--;
    }
    d->it[d->n++] = x;
}

static void dual_f(dual_t *d, int32_t ph, int recv, int send) {
    const int32_t c = ph ^ d->flip;
    if (recv)
        dual_recv(d, 0, ph);
    dual_emit(d, 0, c * d->stride + d->fc[c]++, c);
    if (send)
        dual_send(d, 0, ph);
}

/* A backward: B with its W deferred (zb), or B then W. */
static void dual_bc(dual_t *d, int32_t ph, int zb) {
    const int32_t c = ph ^ d->flip, mb = c * d->stride + d->bc[c]++;
    dual_emit(d, 1, mb, c);
    if (!zb)
        dual_emit(d, 2, mb, c);
}

static void dual_b(dual_t *d, int32_t ph, int zb, int recv, int send) {
    if (recv)
        dual_recv(d, 1, ph);
    dual_bc(d, ph, zb);
    if (send)
        dual_send(d, 1, ph);
}

/* The oldest deferred B's W: a B is deferred unless its own W follows it at once. */
static void dual_w(dual_t *d) {
    while (d->wq < d->n) {
        const step_sched_item_t *b = &d->it[d->wq];
        const int done = d->wq + 1 < d->n && d->it[d->wq + 1].pass == 2 &&
                         d->it[d->wq + 1].microbatch == b->microbatch && d->it[d->wq + 1].chunk == b->chunk;
        if (b->pass == 1 && !done)
            break;
        d->wq++;
    }
    if (d->wq < d->n) {
        const step_sched_item_t b = d->it[d->wq++];
        dual_emit(d, 2, b.microbatch, b.chunk);
    }
}

/* DualPipe's overlapped pair (forward of ph0, backward of ph1), run forward first. */
static void dual_fb(dual_t *d, int32_t ph0, int32_t ph1, int recv0) {
    if (recv0)
        dual_recv(d, 0, ph0);
    dual_recv(d, 1, ph1);
    dual_f(d, ph0, 0, 0);
    dual_bc(d, ph1, 0);
    dual_send(d, 0, ph0);
    dual_send(d, 1, ph1);
}

/* halves: the GPUs per direction (pp / 2 for DualPipe, pp for ZB-V); h the GPU's place in its half;
 * n_per the microbatches per chunk. */
static int dual_order(dual_t *d, int32_t halves, int32_t h, int32_t n_per, int v_shape) {
    const int middle = !v_shape && (d->stage == halves - 1 || d->stage == halves);
    const int last_v = v_shape && d->stage == d->pp - 1;
    for (int32_t i = 0; i < 2 * (halves - h - 1); i++)
        dual_f(d, 0, 1, 1);
    dual_recv(d, 0, 0);
    for (int32_t i = 0; i <= h; i++) { /* nF0F1 */
        dual_f(d, 0, 0, middle);
        dual_recv(d, 0, 0);
        dual_f(d, 1, 1, !(middle || last_v) || i < h);
        if (!middle)
            dual_send(d, 0, 0);
    }
    for (int32_t i = 0; i < halves - h - 1; i++) { /* nB1W1F1 */
        dual_b(d, 1, 1, 1, 1);
        dual_recv(d, 0, 1);
        dual_w(d);
        dual_f(d, 1, 0, 1);
    }
    const int32_t main = n_per - 2 * halves + h + 1; /* nF0B1F1B0 */
    for (int32_t i = 0; i < main; i++) {
        if (v_shape) { /* backward first: 1F1B's peak */
            dual_b(d, 1, 0, 1, 1);
            dual_f(d, 0, i > 0, 1);
            dual_b(d, 0, 0, 1, 1);
            dual_f(d, 1, 1, 1);
            continue;
        }
        if (i == 0 && middle) { /* the repository runs these two one after the other */
            dual_f(d, 0, 0, 0);
            dual_send(d, 0, 1);
            dual_b(d, 1, 0, 1, 0);
            dual_send(d, 0, 0);
            dual_send(d, 1, 1);
        } else {
            dual_fb(d, 0, 1, i > 0);
        }
        dual_fb(d, 1, 0, 1);
    }
    for (int32_t i = 0; i < halves - h - 1; i++) { /* nB1F1B0 */
        dual_b(d, 1, 0, 1, 1);
        if (v_shape) {
            dual_b(d, 0, 0, 1, 1);
            dual_f(d, 1, 1, 1);
        } else {
            dual_fb(d, 1, 0, 1);
        }
    }
    int zb = 0; /* nB1B0: the second half with zero bubble */
    for (int32_t i = 0; i <= h; i++) {
        if (i == (h + 1) / 2 && h % 2 == 1)
            zb = 1;
        dual_b(d, 1, zb, 1, 1);
        if (i == (h + 1) / 2 && h % 2 == 0)
            zb = 1;
        dual_b(d, 0, zb, 1, 1);
    }
    for (int32_t i = 0; i < halves - h - 1; i++) { /* nWB0 */
        dual_w(d);
        dual_b(d, 0, 1, 1, 1);
    }
    for (int32_t i = 0; i <= h; i++) /* nW */
        dual_w(d);
    return d->fc[0] == n_per && d->fc[1] == n_per && d->bc[0] == n_per && d->bc[1] == n_per ? SIM_OK
                                                                                            : SIM_EINVAL;
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
    if (s == STEP_SCHEDULE_DUALPIPE || s == STEP_SCHEDULE_ZB_V) {
        const int dp = s == STEP_SCHEDULE_DUALPIPE;
        if (v != 2 || pp < 2 || m < 2 * pp || (dp && (pp % 2 || m % 2)))
            return SIM_EINVAL;
        dual_t d;
        memset(&d, 0, sizeof d);
        d.it = it;
        d.pp = pp;
        d.stage = stage;
        d.track = dp;
        const int32_t halves = dp ? pp / 2 : pp;
        d.flip = dp && stage >= pp / 2;
        d.stride = dp ? m / 2 : 0;
        const int32_t h = dp ? (stage < pp - 1 - stage ? stage : pp - 1 - stage) : stage;
        return dual_order(&d, halves, h, dp ? m / 2 : m, !dp);
    }
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
