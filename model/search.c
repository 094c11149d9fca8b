/* search.c - brute-force layout search of docs/model-formulas.md, section 9: every (tp | tp1 x tp2, pp, dp,
 * mbs, nb, NVLink tuple) the reference enumerates, evaluated with the closed form, keeping only
 * the best top_k feasible candidates (sorted insertion; ties keep enumeration order, like
 * heapq.nlargest). The block table depends only on (tp1, tp2, mbs, nb, nv_tp1, nv_tp2), so it is
 * built once per such tuple and reused across the dp/pp NVLink counts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model_internal.h"

#define MAX_DIVISORS 128

typedef struct {
    int64_t v[MAX_DIVISORS];
    int n;
} divs_t;

typedef struct {
    model_job_t job; /* job.par is the candidate being evaluated */
    model_block_t block;
    model_summary_t *top;
    int top_k, n_top;
    int64_t evaluated, feasible;
    int training;       /* the job asks for training options: check their rules per candidate */
    unsigned pipelines; /* the schedules tried per layout (1 << model_pipeline_t) */
} search_t;

/* All divisors of x in ascending order, in O(sqrt x). */
static void divisors(int64_t x, divs_t *d) {
    int64_t high[MAX_DIVISORS];
    int n_high = 0;
    d->n = 0;
    for (int64_t c = 1; c * c <= x; c++) {
        if (x % c != 0)
            continue;
        if (d->n < MAX_DIVISORS)
            d->v[d->n++] = c;
        if (c * c != x && n_high < MAX_DIVISORS)
            high[n_high++] = x / c;
    }
    while (n_high > 0 && d->n < MAX_DIVISORS)
        d->v[d->n++] = high[--n_high];
}

static void keep(search_t *s, const model_summary_t *cand) {
    if (s->n_top == s->top_k &&
        !(cand->throughput_samples_per_s > s->top[s->n_top - 1].throughput_samples_per_s))
        return;
    int i = s->n_top < s->top_k ? s->n_top++ : s->top_k - 1;
    while (i > 0 && cand->throughput_samples_per_s > s->top[i - 1].throughput_samples_per_s) {
        s->top[i] = s->top[i - 1];
        i--;
    }
    s->top[i] = *cand;
}

static void evaluate(search_t *s) {
    const model_pipeline_t given = s->job.training.pipeline;
    const int several = (s->pipelines & (s->pipelines - 1u)) != 0;
    model_summary_t best;
    int have = 0;
    for (int pl = 0; pl <= MODEL_PIPELINE_ZB_V; pl++) {
        if (!(s->pipelines & (1u << pl)) || pl == MODEL_PIPELINE_GPIPE ||
            (several && pl != MODEL_PIPELINE_1F1B && s->job.par.pp == 1))
            continue;
        s->job.training.pipeline = (model_pipeline_t)pl;
        if ((s->training || pl != MODEL_PIPELINE_1F1B) && model_i_training_check(&s->job, NULL) != MODEL_OK)
            continue; /* e.g. an interleave that does not divide this candidate's stages */
        model_summary_t sum;
        model_i_summarize(&s->job, &s->block, &sum);
        s->evaluated++;
        if (!sum.fits)
            continue;
        s->feasible++;
        if (!have || sum.throughput_samples_per_s > best.throughput_samples_per_s)
            best = sum;
        have = 1;
    }
    s->job.training.pipeline = given;
    if (have)
        keep(s, &best);
}

/* The NVLink tuple: with the whole job in one domain every group gets its full size; otherwise
 * every ordered tuple of divisors of the degrees whose product is exactly the domain size. */
static void nv_tuples(search_t *s) {
    model_parallel_t *p = &s->job.par;
    const int64_t nvs = s->job.system.nvlink_size;
    const int two_d = p->strategy != MODEL_STRATEGY_1D;
    if (s->job.gpus <= nvs) {
        p->nv_tp1 = p->tp1;
        p->nv_tp2 = p->tp2;
        p->nv_dp = p->dp;
        p->nv_pp = p->pp;
        model_block_build(&s->job, &s->block);
        evaluate(s);
        return;
    }
    divs_t d1, d2, dd;
    divisors(p->tp1, &d1);
    divisors(two_d ? p->tp2 : 1, &d2);
    divisors(p->dp, &dd);
    for (int i = 0; i < d1.n; i++) {
        for (int j = 0; j < d2.n; j++) {
            const int64_t ab = d1.v[i] * d2.v[j];
            if (nvs % ab != 0)
                continue;
            p->nv_tp1 = d1.v[i];
            p->nv_tp2 = d2.v[j];
            int built = 0;
            for (int k = 0; k < dd.n; k++) {
                const int64_t abc = ab * dd.v[k];
                if (nvs % abc != 0 || p->pp % (nvs / abc) != 0)
                    continue;
                p->nv_dp = dd.v[k];
                p->nv_pp = nvs / abc;
                if (!built)
                    model_block_build(&s->job, &s->block);
                built = 1;
                evaluate(s);
            }
        }
    }
}

/* SUMMA panel counts (section 9): start = max(tp1, tp2), doubling while k < log2(e // start);
 * with e / start < 512 only start itself, else the divisors of e leaving panels >= 512 wide. */
static void panels(search_t *s) {
    model_parallel_t *p = &s->job.par;
    const int64_t e = s->job.model.hidden, start = p->tp1 > p->tp2 ? p->tp1 : p->tp2;
    if ((double)e / (double)start < 512.0) {
        p->nb = start;
        nv_tuples(s);
        return;
    }
    const double kmax = log2((double)(e / start));
    for (int k = 0; (double)k < kmax; k++) {
        const int64_t c = start << k;
        if (e % c == 0 && e / c >= 512) {
            p->nb = c;
            nv_tuples(s);
        }
    }
}

/* A mixture of experts: every expert-parallel degree ep dividing both the experts and dp (1d only:
 * model_job_check), each with its own block table; a dense model: ep stays as given (0). */
static void expert_degrees(search_t *s) {
    if (!model_is_moe(&s->job.model)) {
        nv_tuples(s);
        return;
    }
    divs_t de;
    divisors(model_gcd(s->job.model.moe.experts, s->job.par.dp), &de);
    for (int i = 0; i < de.n; i++) {
        s->job.experts_par.ep = de.v[i];
        nv_tuples(s);
    }
}

/* pp, dp and mbs for a fixed tensor layout. */
static void outer_degrees(search_t *s, int64_t mbs_divisor) {
    model_parallel_t *p = &s->job.par;
    const int64_t n = s->job.gpus, gbs = s->job.global_batch, depth = s->job.model.layers;
    const int64_t tp = p->tp1 * p->tp2;
    divs_t dpp, dmb;
    divisors(n / tp < depth ? n / tp : depth, &dpp);
    for (int i = 0; i < dpp.n; i++) {
        const int64_t pp = dpp.v[i];
        if (n % (tp * pp) != 0 || depth % pp != 0)
            continue;
        const int64_t dp = n / (tp * pp);
        if (dp > gbs || gbs % dp != 0)
            continue;
        p->pp = pp;
        p->dp = dp;
        divisors(gbs / dp, &dmb);
        for (int j = 0; j < dmb.n; j++) {
            if ((dmb.v[j] * s->job.model.seq_len) % mbs_divisor != 0)
                continue;
            p->mbs = dmb.v[j];
            if (p->strategy == MODEL_STRATEGY_2D) {
                panels(s);
            } else {
                p->nb = 1;
                expert_degrees(s);
            }
        }
    }
}

static void search_1d(search_t *s) {
    const model_transformer_t *m = &s->job.model;
    model_parallel_t *p = &s->job.par;
    divs_t dt;
    divisors(s->job.gpus, &dt);
    for (int i = 0; i < dt.n; i++) {
        const int64_t tp = dt.v[i];
        /* kv_heads divides heads: dividing it is dividing both (model_job_check's rule) */
        if (model_kv_heads(m) % tp != 0 || m->hidden % tp != 0 || (3 * m->hidden) / tp < 128)
            continue;
        p->tp = p->tp1 = tp;
        p->tp2 = 1;
        outer_degrees(s, tp);
    }
}

static void search_2d(search_t *s, int seqp) {
    const model_transformer_t *m = &s->job.model;
    model_parallel_t *p = &s->job.par;
    divs_t d1, d2;
    divisors(s->job.gpus, &d1);
    for (int i = 0; i < d1.n; i++) {
        const int64_t tp1 = d1.v[i];
        if (model_kv_heads(m) % tp1 != 0 || m->hidden % tp1 != 0)
            continue;
        divisors(s->job.gpus / tp1, &d2);
        for (int j = 0; j < d2.n; j++) {
            const int64_t tp2 = d2.v[j];
            if ((!seqp && m->hidden % tp2 != 0) || m->hidden / tp1 < 128 || m->seq_len / tp2 < 128)
                continue;
            p->tp1 = tp1;
            p->tp2 = tp2;
            p->tp = tp1 * tp2;
            outer_degrees(s, seqp ? tp1 * tp2 : tp2);
        }
    }
}

int model_search_run(const model_job_t *job, unsigned strategy_mask, int top_k, model_search_result_t *out) {
    return model_search_run_pipelines(job, strategy_mask, 1u << job->training.pipeline, top_k, out);
}

int model_search_run_pipelines(const model_job_t *job, unsigned strategy_mask, unsigned pipeline_mask,
                               int top_k, model_search_result_t *out) {
    memset(out, 0, sizeof *out);
    if (job->compat != MODEL_COMPAT_CORRECTED) /* the reference: 1F1B only */
        pipeline_mask &= 1u << MODEL_PIPELINE_1F1B;
    if (!pipeline_mask)
        return MODEL_EINVAL;
    if (top_k < 1 || job->gpus < 1 || job->global_batch < 1 || job->model.heads < 1 ||
        job->model.hidden < 1 || job->model.layers < 1 || job->model.seq_len < 1 ||
        job->system.nvlink_size < 1)
        return MODEL_EINVAL;
    search_t *s = alloc_calloc(1, sizeof *s);
    model_summary_t *top = alloc_calloc((size_t)top_k, sizeof *top);
    if (!s || !top) {
        free(s);
        free(top);
        return MODEL_ENOMEM;
    }
    s->job = *job;
    s->top = top;
    s->top_k = top_k;
    s->training = model_i_training_active(job);
    s->pipelines = pipeline_mask;
    for (int st = 0; st < MODEL_STRATEGY_COUNT; st++) {
        if (!(strategy_mask & (1u << st)) || (model_is_moe(&job->model) && st != MODEL_STRATEGY_1D))
            continue; /* the MoE block is placed in 1d layouts only */
        s->job.par.strategy = (model_strategy_t)st;
        if (st == MODEL_STRATEGY_1D)
            search_1d(s);
        else
            search_2d(s, st == MODEL_STRATEGY_2D_SEQP);
    }
    out->results = top;
    out->n_results = s->n_top;
    out->candidates_evaluated = s->evaluated;
    out->candidates_feasible = s->feasible;
    free(s);
    return MODEL_OK;
}

void model_search_result_destroy(model_search_result_t *res) {
    if (!res)
        return;
    free(res->results);
    res->results = NULL;
    res->n_results = 0;
}
