/* step.c - one training step on the engine: the decisions (what to collapse, how fine the
 * operations are), the engine and its observer (activation memory over time), and the results
 * (step time, the critical GPU's breakdown, memory peaks). The operations themselves are built by
 * step_build.c; docs/run.md describes the workload and every decision. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "step_internal.h"
#include "topo.h"

#define DEFAULT_MAX_OPS 1500000
/* auto: compare routes for a collapse only while they are at most this many per operation of the full
 * step; beyond, simulating every GPU is cheaper and just as exact. */
#define CHECK_ROUTES_PER_OP 2.0

int step_fail(step_t *s, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    return status;
}

int step_meta_reserve(step_t *s, int32_t n_ops) {
    n_ops -= s->op0; /* op ids from op0 */
    if (n_ops <= s->cap_rec)
        return SIM_OK;
    int64_t cap = s->cap_rec > 0 ? s->cap_rec : 1024;
    while (cap < n_ops)
        cap *= 2;
    if (cap > INT32_MAX)
        cap = INT32_MAX;
    step_rec_t *m = alloc_realloc(s->rec, (size_t)cap * sizeof *m);
    if (!m)
        return step_fail(s, SIM_ENOMEM, "step: out of memory for %d operations", n_ops);
    s->rec = m;
    s->cap_rec = (int32_t)cap;
    return SIM_OK;
}

_Static_assert(sizeof(step_info_t) % 8 == 0, "step_info_t hashes as whole words");

static uint64_t info_hash(const step_info_t *in) {
    uint64_t w[sizeof *in / 8], h = 0x9e3779b97f4a7c15ULL;
    memcpy(w, in, sizeof w);
    for (size_t i = 0; i < sizeof w / sizeof *w; i++) {
        h ^= w[i];
        h *= 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 31;
    }
    h *= 0x94d049bb133111ebULL;
    return h ^ (h >> 29);
}

static int64_t info_slot(const step_t *s, const step_info_t *in) {
    const uint64_t mask = (uint64_t)s->info_tab_cap - 1;
    for (uint64_t i = info_hash(in) & mask;; i = (i + 1) & mask) {
        const int32_t k = s->info_tab[i];
        if (k < 0 || memcmp(&s->info[k], in, sizeof *in) == 0)
            return (int64_t)i;
    }
}

/* The index of *in in the table, added if new (-1: out of memory). */
static int32_t info_intern(step_t *s, const step_info_t *in) {
    if (2 * ((int64_t)s->n_info + 1) > s->info_tab_cap) {
        const int64_t cap = s->info_tab_cap ? 2 * s->info_tab_cap : 256;
        int32_t *tab = alloc_malloc((size_t)cap * sizeof *tab);
        step_info_t *info = alloc_realloc(s->info, (size_t)(cap / 2) * sizeof *info);
        if (!tab || !info) {
            free(tab);
            if (info)
                s->info = info;
            return -1;
        }
        s->info = info;
        s->cap_info = (int32_t)(cap / 2);
        for (int64_t i = 0; i < cap; i++)
            tab[i] = -1;
        free(s->info_tab);
        s->info_tab = tab;
        s->info_tab_cap = cap;
        for (int32_t k = 0; k < s->n_info; k++)
            s->info_tab[info_slot(s, &s->info[k])] = k;
    }
    if (s->n_info > 0 && memcmp(&s->info[s->last_info], in, sizeof *in) == 0)
        return s->last_info; /* the common case: the same operation on the next GPU */
    const int64_t slot = info_slot(s, in);
    if (s->info_tab[slot] < 0) {
        s->info[s->n_info] = *in;
        s->info_tab[slot] = s->n_info++;
    }
    s->last_info = s->info_tab[slot];
    return s->last_info;
}

int step_meta_put(step_t *s, sim_op_id_t op, const step_meta_t *m) {
    step_info_t in;
    memset(&in, 0, sizeof in); /* padding too: the table compares bytes */
    in.chunk = m->chunk;
    in.microbatch = m->microbatch;
    in.first_block = m->first_block;
    in.n_blocks = m->n_blocks;
    in.kind = m->kind;
    in.pass = m->pass;
    in.layer0 = m->layer0;
    in.layer1 = m->layer1;
    in.coll_op = m->coll_op;
    in.group = m->group;
    in.fixed = m->fixed;
    in.flops_tflop = m->flops_tflop;
    in.hbm_gb = m->hbm_gb;
    in.comm_gb = m->comm_gb;
    in.tp_comm_s = m->tp_comm_s;
    in.act_gb = m->act_gb;
    const int32_t k = info_intern(s, &in);
    if (k < 0)
        return step_fail(s, SIM_ENOMEM, "step: out of memory for operation metadata");
    s->rec[op - s->op0].info = k;
    return SIM_OK;
}

void step_meta_get(const step_t *s, sim_op_id_t op, step_meta_t *m) {
    const step_info_t *in = &s->info[s->rec[op - s->op0].info];
    const int32_t gpu = sim_op_gpu(s->e, op);
    *m = (step_meta_t){.gpu = gpu,
                       .coll = sim_op_collective(s->e, op),
                       .stage = s->gpu_stage[gpu],
                       .chunk = in->chunk,
                       .microbatch = in->microbatch,
                       .first_block = in->first_block,
                       .n_blocks = in->n_blocks,
                       .kind = in->kind,
                       .pass = in->pass,
                       .layer0 = in->layer0,
                       .layer1 = in->layer1,
                       .coll_op = in->coll_op,
                       .group = in->group,
                       .fixed = in->fixed,
                       .flops_tflop = in->flops_tflop,
                       .hbm_gb = in->hbm_gb,
                       .comm_gb = in->comm_gb,
                       .tp_comm_s = in->tp_comm_s,
                       .act_gb = in->act_gb};
}

double step_memory_estimate_gb(int64_t n_ops) {
    return (STEP_MEMORY_BASE_BYTES + STEP_MEMORY_BYTES_PER_OP * (double)n_ops) * 1e-9;
}

double step_memory_budget_gb(void) {
    return topo_memory_budget_bytes() * 1e-9; /* one default budget for the topology and the step */
}

void step_config_default(step_config_t *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->comm = SIM_COMM_NETWORK;
    cfg->schedule = STEP_SCHEDULE_1F1B;
    cfg->virtual_stages = 1;
    step_placement_default(&cfg->placement);
    cfg->optimizer_step = -1;
    cfg->collapse = STEP_COLLAPSE_AUTO;
    cfg->granularity = STEP_GRANULARITY_AUTO;
    sim_config_default(&cfg->engine);
}

const char *step_collapse_name(step_collapse_t c) {
    return c == STEP_COLLAPSE_OFF ? "off" : c == STEP_COLLAPSE_APPROX ? "approx" : "auto";
}

int step_collapse_parse(const char *text, step_collapse_t *out) {
    static const step_collapse_t ALL[] = {STEP_COLLAPSE_AUTO, STEP_COLLAPSE_OFF, STEP_COLLAPSE_APPROX};
    for (size_t i = 0; text && i < sizeof ALL / sizeof ALL[0]; i++)
        if (strcmp(text, step_collapse_name(ALL[i])) == 0) {
            *out = ALL[i];
            return SIM_OK;
        }
    return SIM_EINVAL;
}

/* ---- groups and placement ----------------------------------------------------------------------- */

int step_group_dims(const step_t *s, step_group_t g, int dims[STEP_DIM_COUNT]) {
    int want[STEP_DIM_COUNT] = {0, 0, 0, 0}, n = 0;
    if (g == STEP_GROUP_TP)
        want[STEP_DIM_TP] = 1;
    else if (g == STEP_GROUP_CP)
        want[STEP_DIM_CP] = 1;
    else {
        want[STEP_DIM_DP] = 1;
        want[STEP_DIM_CP] = s->job.par.strategy == MODEL_STRATEGY_2D_SEQP;
    }
    for (int i = 0; i < STEP_DIM_COUNT; i++)
        if (want[s->cfg.placement.order[i]])
            dims[n++] = s->cfg.placement.order[i];
    return n;
}

int64_t step_group_size(const step_t *s, step_group_t g) {
    if (g == STEP_GROUP_EP || g == STEP_GROUP_EDP || g == STEP_GROUP_ETP)
        return g == STEP_GROUP_EP ? s->ep : g == STEP_GROUP_EDP ? s->edp : s->etp;
    int dims[STEP_DIM_COUNT];
    const int nd = step_group_dims(s, g, dims);
    int64_t size = 1;
    for (int i = 0; i < nd; i++)
        size *= s->n[dims[i]];
    return size;
}

int32_t step_gpu(const step_t *s, const int64_t x[STEP_DIM_COUNT]) {
    return (int32_t)step_placement_gpu(&s->cfg.placement, &s->job.par, x);
}

int64_t step_expert_member(const step_t *s, step_group_t g, int64_t q, int64_t r) {
    const int64_t ep = s->ep, et = s->etp, block = ep * et;
    if (g == STEP_GROUP_ETP)
        return q - q % et + r;
    return g == STEP_GROUP_EP ? q - q % block + q % et + et * r : q % block + block * r;
}

int32_t step_group_members(const step_t *s, step_group_t g, const int64_t x[STEP_DIM_COUNT],
                           int32_t *members) {
    if (g == STEP_GROUP_EP || g == STEP_GROUP_EDP || g == STEP_GROUP_ETP) {
        /* the expert grid (1d): q = tp rank + tp x dp rank; ETP: etp consecutive q, EP: ep q etp apart,
         * EDP: q mod ep etp equal (step_expert_member) */
        const int64_t ntp = s->n[STEP_DIM_TP], q = x[STEP_DIM_TP] + ntp * x[STEP_DIM_DP];
        const int64_t size = step_group_size(s, g);
        int64_t y[STEP_DIM_COUNT];
        memcpy(y, x, sizeof y);
        for (int64_t r = 0; r < size; r++) {
            const int64_t q2 = step_expert_member(s, g, q, r);
            y[STEP_DIM_TP] = q2 % ntp;
            y[STEP_DIM_DP] = q2 / ntp;
            members[r] = step_gpu(s, y);
        }
        return (int32_t)size;
    }
    int dims[STEP_DIM_COUNT];
    const int nd = step_group_dims(s, g, dims);
    const int64_t size = step_group_size(s, g);
    int64_t y[STEP_DIM_COUNT];
    memcpy(y, x, sizeof y);
    for (int64_t r = 0; r < size; r++) {
        int64_t q = r;
        for (int k = 0; k < nd; k++) {
            y[dims[k]] = q % s->n[dims[k]];
            q /= s->n[dims[k]];
        }
        members[r] = step_gpu(s, y);
    }
    return (int32_t)size;
}

double step_analytic_coll_s(const step_t *s, step_group_t g, model_coll_op_t op, double volume_gb) {
    return model_collective_time_s(&s->job.system, s->job.compat, op, volume_gb, step_group_size(s, g),
                                   s->group_per_domain[g]);
}

const model_layer_t *step_layer(const step_t *s, int id) {
    const model_block_t *b = &s->est.block;
    if (id >= 0 && id < b->n_layers)
        return &b->layers[id];
    if (id >= STEP_EDGE_ID && id - STEP_EDGE_ID < b->n_edges)
        return &b->edges[id - STEP_EDGE_ID];
    return NULL;
}

double step_part_weights_gb(const step_t *s, step_part_t part) {
    const model_block_t *b = &s->est.block;
    if (part == STEP_PART_BLOCK)
        return b->weights_gb;
    return part == STEP_PART_EMBEDDING ? b->first_weights_gb : b->last_weights_gb;
}

/* The weights as stored, which the data-parallel all-gather moves: with training.fp8_param_gather the
 * blocks' FP8 GEMM weights in one byte (model_block_t.fp8_param_saving_gb). */
double step_part_gather_gb(const step_t *s, step_part_t part) {
    const model_block_t *b = &s->est.block;
    return step_part_weights_gb(s, part) - (part == STEP_PART_BLOCK ? b->fp8_param_saving_gb : 0.0);
}

/* As the model sums them (model_estimate's w_first, w_last; with one stage both edges): the edges
 * on the stages that run the first and the last virtual stage (ZB-V: both on stage 0; DualPipe: both
 * on stage 0 and on stage pp - 1, one of each a copy). */
double step_stage_weights_gb(const step_t *s, int32_t stage) {
    const model_block_t *b = &s->est.block;
    double w = b->weights_gb * (double)s->layers_per_stage;
    int first = 0, last = 0;
    for (int32_t c = 0; c < s->v; c++) {
        first |= step_vs_first(s, stage, c);
        last |= step_vs_last(s, stage, c);
    }
    if (first)
        w += b->first_weights_gb;
    if (last)
        w += b->last_weights_gb;
    return w;
}

int step_vs_first(const step_t *s, int32_t p, int32_t c) {
    return step_schedule_vstage(s->cfg.schedule, s->pp, s->v, p, c) == 0;
}

int step_vs_last(const step_t *s, int32_t p, int32_t c) {
    return step_schedule_vstage(s->cfg.schedule, s->pp, s->v, p, c) ==
           step_schedule_vstages(s->cfg.schedule, s->pp, s->v) - 1;
}

int32_t step_chunk_microbatches(const step_t *s) {
    return s->cfg.schedule == STEP_SCHEDULE_DUALPIPE ? s->m / 2 : s->m;
}

double step_hop_s(const step_t *s, int32_t a, int32_t b) {
    if (s->job.compat == MODEL_COMPAT_REFERENCE)
        return s->est.summary.p2p_one_s;
    const int64_t xa[STEP_DIM_COUNT] = {0, 0, a, 0}, xb[STEP_DIM_COUNT] = {0, 0, b, 0};
    const int same = step_gpu(s, xa) / s->gpus_per_domain == step_gpu(s, xb) / s->gpus_per_domain;
    return model_collective_time_s(&s->job.system, s->job.compat, MODEL_COLL_P2P,
                                   s->est.summary.p2p_volume_gb, 2, same ? 2 : 1);
}

int step_fixed_time(step_t *s, step_group_t g, model_coll_op_t op, double size_bytes, int root,
                    double *out_s) {
    if (s->cfg.comm == SIM_COMM_ANALYTIC) {
        *out_s = step_analytic_coll_s(s, g, op, size_bytes * 1e-9);
        return SIM_OK;
    }
    if (op != MODEL_COLL_BROADCAST && op != MODEL_COLL_REDUCE)
        root = 0;
    for (int32_t i = 0; i < s->n_fixed; i++) {
        const step_fixed_key_t *k = &s->fixed[i];
        if (k->group == (int)g && k->op == (int)op && k->size_bytes == size_bytes && k->root == root) {
            *out_s = k->time_s;
            return SIM_OK;
        }
    }
    double t = 0.0;
    int agree = 1;
    step_fixed_key_t k = {(int)g, (int)op, size_bytes, root, 0.0, 0, NULL, NULL, 0.0};
    int rc = step_measure(s, g, op, size_bytes, root, &t, &agree, &k);
    if (rc) {
        free(k.links);
        free(k.bytes);
        return rc;
    }
    k.time_s = t;
    if (!agree && s->collapse_exact) {
        s->collapse_exact = 0;
        snprintf(s->collapse_note, sizeof s->collapse_note,
                 "approximate: the %s groups' %s of %.6g bytes take different times on this network",
                 g == STEP_GROUP_CP ? "cp" : "tp", model_coll_op_name(op), size_bytes);
    }
    if (s->n_fixed == s->cap_fixed) {
        const int32_t cap = s->cap_fixed ? 2 * s->cap_fixed : 16;
        step_fixed_key_t *f = alloc_realloc(s->fixed, (size_t)cap * sizeof *f);
        if (!f) {
            free(k.links);
            free(k.bytes);
            return step_fail(s, SIM_ENOMEM, "step: out of memory");
        }
        s->fixed = f;
        s->cap_fixed = cap;
    }
    s->fixed[s->n_fixed++] = k;
    *out_s = t;
    return SIM_OK;
}

/* Measure every fixed collective the plans use (so that a disagreement is known before building). */
static int prime_fixed(step_t *s) {
    const double nb = (double)(s->job.par.nb > 0 ? s->job.par.nb : 1);
    for (int part = 0; part < STEP_PARTS; part++)
        for (int pass = 0; pass < 2; pass++) {
            const step_plan_t *plan = &s->plans[part][pass];
            for (int k = 0; k < plan->n; k++) {
                const step_seg_t *seg = &plan->seg[k];
                const model_layer_t *ly = step_layer(s, seg->layer0);
                const model_pass_t *ps = pass ? &ly->bwd : &ly->fwd;
                for (int c = 0; c < ps->n_colls && c < MODEL_MAX_COLLS; c++) {
                    if (seg->kind == STEP_SEG_COLL && c != seg->coll)
                        continue;
                    if (seg->kind == STEP_SEG_COMPUTE)
                        continue;
                    const model_coll_t *mc = &ps->colls[c];
                    const step_group_t g = step_group_of(mc->group);
                    if (!s->fixed_group[g])
                        continue;
                    const int panels = seg->kind == STEP_SEG_SUMMA ? (int)nb : 1;
                    const double bytes = mc->volume_gb * 1e9 / (seg->kind == STEP_SEG_SUMMA ? nb : 1.0);
                    for (int i = 0; i < panels; i++) {
                        double t;
                        const int rc = step_fixed_time(
                            s, g, mc->op, bytes, i % (int)(mc->group_size > 0 ? mc->group_size : 1), &t);
                        if (rc)
                            return rc;
                    }
                }
            }
        }
    return SIM_OK;
}

/* Whether the corrected job recomputes whole blocks (the reference has no recomputation). */
static int recompute_full(const step_t *s) {
    return s->job.compat == MODEL_COMPAT_CORRECTED && s->job.training.recompute == MODEL_RECOMPUTE_FULL;
}

/* The optimizer step: the model's Adam step (model_estimate with training.optimizer_step, the
 * corrected model's HBM-bound pass over this GPU's shard of the stage's parameters). */
static int optimizer_s(step_t *s, double *out_s) {
    model_job_t j = s->job;
    model_estimate_t *e = alloc_malloc(sizeof *e);
    if (!e)
        return step_fail(s, SIM_ENOMEM, "step: out of memory");
    j.compat = MODEL_COMPAT_CORRECTED;
    j.training.optimizer_step = 1;
    const int mrc = model_estimate(&j, e);
    *out_s = mrc == MODEL_OK ? e->summary.optimizer_s : 0.0;
    free(e);
    if (mrc == MODEL_ENOMEM)
        return step_fail(s, SIM_ENOMEM, "step: out of memory");
    if (mrc != MODEL_OK)
        return step_fail(s, SIM_EINVAL, "step: the optimizer step's estimate failed (%d)", mrc);
    return SIM_OK;
}

/* ---- the decisions -------------------------------------------------------------------------------- */

static void set_level(step_t *s, step_collapsed_t level) {
    s->level = level;
    memset(s->collapsed_dim, 0, sizeof s->collapsed_dim);
    memset(s->fixed_group, 0, sizeof s->fixed_group);
    if (level == STEP_STAGES) {
        s->collapsed_dim[STEP_DIM_TP] = s->collapsed_dim[STEP_DIM_CP] = s->collapsed_dim[STEP_DIM_DP] = 1;
        s->fixed_group[STEP_GROUP_TP] = s->fixed_group[STEP_GROUP_CP] = s->fixed_group[STEP_GROUP_DP] = 1;
        s->fixed_group[STEP_GROUP_EP] = s->fixed_group[STEP_GROUP_EDP] = s->fixed_group[STEP_GROUP_ETP] = 1;
    } else if (level == STEP_RAILS) {
        const int two_d = s->job.par.strategy == MODEL_STRATEGY_2D;
        s->collapsed_dim[STEP_DIM_TP] = 1;
        s->collapsed_dim[STEP_DIM_CP] = two_d;
        s->fixed_group[STEP_GROUP_TP] = 1;
        s->fixed_group[STEP_GROUP_CP] = two_d;
    }
}

static int decide(step_t *s) {
    char note[200] = "";
    int64_t max_ops = s->cfg.max_ops > 0 ? s->cfg.max_ops : DEFAULT_MAX_OPS;
    s->collapse_exact = 1;
    if (s->perturbed && s->cfg.collapse == STEP_COLLAPSE_APPROX)
        return step_fail(s, SIM_EINVAL,
                         "collapse: approx with perturbations (slow GPUs or jitter), which make identical "
                         "ranks differ; allowed: auto or off (every GPU simulated)");
    if (s->expert_skew > 0.0 && s->cfg.collapse == STEP_COLLAPSE_APPROX)
        return step_fail(s, SIM_EINVAL,
                         "collapse: approx with an expert skew, which makes the ranks of an expert-parallel "
                         "group differ; allowed: auto or off (every GPU simulated)");
    if (s->moe && s->cfg.comm == SIM_COMM_NETWORK && s->cfg.collapse == STEP_COLLAPSE_APPROX)
        return step_fail(s, SIM_EINVAL,
                         "collapse: approx with experts, whose all-to-alls mix tensor and data ranks that "
                         "one tensor rank cannot stand for; allowed: auto or off (every GPU simulated)");
    if (s->cfg.collapse == STEP_COLLAPSE_OFF) {
        set_level(s, STEP_FULL);
        snprintf(s->collapse_note, sizeof s->collapse_note, "off: every GPU simulated");
    } else if (s->perturbed) {
        set_level(s, STEP_FULL);
        snprintf(s->collapse_note, sizeof s->collapse_note,
                 "every GPU simulated: perturbations (slow GPUs or jitter) make identical ranks differ");
    } else if (s->expert_skew > 0.0) {
        set_level(s, STEP_FULL);
        snprintf(s->collapse_note, sizeof s->collapse_note,
                 "every GPU simulated: the expert skew makes the ranks of an expert-parallel group differ");
    } else if (s->cfg.comm == SIM_COMM_ANALYTIC) {
        set_level(s, STEP_STAGES);
        snprintf(s->collapse_note, sizeof s->collapse_note,
                 "exact: in analytic mode every tensor- and data-parallel rank of a stage is identical");
    } else {
        const int64_t rail =
            s->n[STEP_DIM_TP] * (s->job.par.strategy == MODEL_STRATEGY_2D ? s->n[STEP_DIM_CP] : 1);
        const step_granularity_t gran =
            s->cfg.granularity != STEP_GRANULARITY_AUTO ? s->cfg.granularity : STEP_GRANULARITY_LAYER;
        const double full_ops = (double)step_estimate_ops(s, STEP_FULL, gran);
        const double routes = step_rails_check_routes(s);
        if (rail <= 1) {
            set_level(s, STEP_FULL);
            snprintf(s->collapse_note, sizeof s->collapse_note, "none: one tensor rank, nothing to collapse");
        } else if (s->moe) {
            /* the expert groups (q = tp rank + tp x dp rank) mix tensor and data ranks: a rail does not
             * hold its own expert traffic, so collapsing the tensor ranks would not be exact */
            set_level(s, STEP_FULL);
            snprintf(s->collapse_note, sizeof s->collapse_note,
                     "every GPU simulated: the expert-parallel all-to-alls and the expert gradients' "
                     "reduction mix tensor and data ranks, which one tensor rank cannot stand for");
        } else if (s->cfg.collapse == STEP_COLLAPSE_AUTO && routes > CHECK_ROUTES_PER_OP * full_ops) {
            /* Checking costs more than it can save: a route compared costs about half an operation
             * simulated, and the collapsed step still simulates an eighth or more of the operations
             * (docs/performance.md, "Scaling matrix"). Every GPU simulated is exact too. */
            set_level(s, STEP_FULL);
            snprintf(s->collapse_note, sizeof s->collapse_note,
                     "every GPU simulated: checking a collapse would compare %.3g routes, more than %g per "
                     "operation of the full step (%.3g)",
                     routes, CHECK_ROUTES_PER_OP, full_ops);
        } else {
            int exact = step_rails_exact(s, note, sizeof note);
            if (s->err[0])
                return SIM_ENOMEM;
            if (exact) {
                set_level(s, STEP_RAILS);
                snprintf(s->collapse_note, sizeof s->collapse_note, "%s", note);
                int rc = prime_fixed(s);
                if (rc)
                    return rc;
                exact = s->collapse_exact;
                if (!exact)
                    snprintf(note, sizeof note, "%s", s->collapse_note);
            }
            if (!exact && s->cfg.collapse == STEP_COLLAPSE_AUTO) {
                /* auto never approximates: what is not provably exact is simulated in full */
                set_level(s, STEP_FULL);
                s->collapse_exact = 1;
                snprintf(s->collapse_note, sizeof s->collapse_note,
                         "every GPU simulated: collapsing would not be exact (%.140s)", note);
            } else if (!exact) {
                set_level(s, STEP_RAILS);
                s->collapse_exact = 0;
                snprintf(s->collapse_note, sizeof s->collapse_note, "approximate: %.170s", note);
                const int rc = prime_fixed(s);
                if (rc)
                    return rc;
            }
        }
    }
    if (s->cfg.granularity != STEP_GRANULARITY_AUTO)
        s->granularity = s->cfg.granularity;
    else
        s->granularity = step_estimate_ops(s, s->level, STEP_GRANULARITY_LAYER) <= max_ops
                             ? STEP_GRANULARITY_LAYER
                             : STEP_GRANULARITY_MICROBATCH;
    const int64_t est = step_estimate_ops(s, s->level, s->granularity);
    const double need_gb = step_memory_estimate_gb(est);
    const double budget_gb = s->cfg.max_memory_gb > 0.0 ? s->cfg.max_memory_gb : step_memory_budget_gb();
    if (need_gb > budget_gb || est > INT32_MAX)
        return step_fail(s, SIM_EINVAL,
                         "step: about %lld operations need about %.1f GB, more than the memory budget of "
                         "%.1f GB (--max-memory); allowed: a smaller job, analytic communication, an "
                         "approximate collapse (--collapse approx), or a larger budget",
                         (long long)est, need_gb, budget_gb);
    s->est_ops = est;
    return SIM_OK;
}

/* The simulated GPUs of every stage: the free (not collapsed) coordinates, TP fastest. */
static int stage_gpus(step_t *s) {
    static const step_dim_t order[3] = {STEP_DIM_TP, STEP_DIM_CP, STEP_DIM_DP};
    int64_t per = 1;
    for (int i = 0; i < 3; i++)
        per *= s->collapsed_dim[order[i]] ? 1 : s->n[order[i]];
    s->per_stage = (int32_t)per;
    s->stage_gpus = alloc_malloc((size_t)s->pp * (size_t)per * sizeof *s->stage_gpus);
    s->gpu_stage = alloc_malloc((size_t)s->engine_gpus * sizeof *s->gpu_stage);
    if (!s->stage_gpus || !s->gpu_stage)
        return step_fail(s, SIM_ENOMEM, "step: out of memory");
    for (int32_t g = 0; g < s->engine_gpus; g++)
        s->gpu_stage[g] = -1;
    for (int32_t p = 0; p < s->pp; p++)
        for (int64_t j = 0; j < per; j++) {
            int64_t x[STEP_DIM_COUNT] = {0, 0, p, 0}, rem = j;
            for (int i = 0; i < 3; i++)
                if (!s->collapsed_dim[order[i]]) {
                    x[order[i]] = rem % s->n[order[i]];
                    rem /= s->n[order[i]];
                }
            const int32_t gpu = step_gpu(s, x);
            s->stage_gpus[(int64_t)p * per + j] = s->map ? s->map[gpu] : gpu;
            s->gpu_stage[s->stage_gpus[(int64_t)p * per + j]] = p;
        }
    return SIM_OK;
}

static int check_job(step_t *s) {
    model_issue_t issue;
    memset(&issue, 0, sizeof issue);
    if (model_job_check(&s->job, &issue) != MODEL_OK)
        return step_fail(s, SIM_EINVAL, "job: %s: %s; allowed: %s", issue.field, issue.value, issue.allowed);
    /* a stage's operations come from one block table (build_ops); the estimate places leading dense
     * blocks (model/iteration.c), the step does not yet */
    if (model_is_moe(&s->job.model) && s->job.model.moe.first_dense > 0)
        return step_fail(s, SIM_EINVAL,
                         "job: model.first_dense: %lld; allowed: 0 in the simulated step (leading dense "
                         "blocks of a mixture of experts are estimated only: stepsim estimate)",
                         (long long)s->job.model.moe.first_dense);
    s->ep = s->edp = s->etp = 1;
    s->moe = model_is_moe(&s->job.model) && model_moe_layers(&s->job.model) > 0;
    if (s->moe) {
        int64_t ep, ep_t, edp, edp_t;
        model_expert_groups(&s->job, &ep, &ep_t, &edp, &edp_t);
        s->ep = (int32_t)ep;
        s->edp = (int32_t)edp;
        s->etp = s->job.experts_par.etp > 1 ? (int32_t)s->job.experts_par.etp : 1;
    }
    s->expert_skew = s->cfg.expert_skew;
    s->expert_seed = s->cfg.expert_seed;
    if (!(s->expert_skew >= 0.0 && s->expert_skew <= STEP_EXPERT_SKEW_MAX))
        return step_fail(s, SIM_EINVAL, "expert skew: %g; allowed: 0..%g", s->expert_skew,
                         (double)STEP_EXPERT_SKEW_MAX);
    if (s->expert_skew > 0.0 && !s->moe)
        return step_fail(s, SIM_EINVAL,
                         "expert skew: %g with a dense model (model.experts 0); allowed: 0, or a model "
                         "with experts",
                         s->expert_skew);
    if (s->expert_skew > 0.0 && s->job.model.moe.experts > STEP_EXPERT_MAX)
        return step_fail(s, SIM_EINVAL,
                         "expert skew: %g with %lld experts; allowed: 0, or at most %d experts",
                         s->expert_skew, (long long)s->job.model.moe.experts, STEP_EXPERT_MAX);
    if (s->expert_skew > 0.0 && s->etp > 1)
        return step_fail(s, SIM_EINVAL, "expert skew: %g with etp %d; allowed: 0, or etp 1", s->expert_skew,
                         (int)s->etp);
    if (s->expert_skew > 0.0 && s->job.model.moe.capacity_factor > 0.0)
        return step_fail(s, SIM_EINVAL,
                         "expert skew: %g with model.capacity_factor %g (tokens padded to capacity: the "
                         "skew would change nothing); allowed: 0, or a dropless model (capacity_factor 0)",
                         s->expert_skew, s->job.model.moe.capacity_factor);
    if (s->job.gpus > INT32_MAX / 8)
        return step_fail(s, SIM_EINVAL, "job: gpus %lld; allowed: at most %d", (long long)s->job.gpus,
                         INT32_MAX / 8);
    if (model_estimate(&s->job, &s->est) != MODEL_OK)
        return step_fail(s, SIM_EINVAL, "job: rejected by the model");
    const model_summary_t *su = &s->est.summary;
    if (su->n_microbatches > INT32_MAX / 4)
        return step_fail(s, SIM_EINVAL, "job: %lld microbatches; allowed: at most %d",
                         (long long)su->n_microbatches, INT32_MAX / 4);
    s->m = (int32_t)su->n_microbatches;
    s->pp = (int32_t)s->job.par.pp;
    s->layers_per_stage = (int32_t)su->layers_per_stage;
    s->gpus = (int32_t)s->job.gpus;
    const step_config_t *c = &s->cfg;
    /* one stage: nothing to schedule, the estimate is 1F1B's and so is the step */
    if ((c->schedule == STEP_SCHEDULE_ZB_V || c->schedule == STEP_SCHEDULE_DUALPIPE) && s->pp == 1) {
        s->cfg.schedule = STEP_SCHEDULE_1F1B;
        s->cfg.virtual_stages = 1;
    }
    if (c->schedule == STEP_SCHEDULE_ZB_V || c->schedule == STEP_SCHEDULE_DUALPIPE) {
        const int dp = c->schedule == STEP_SCHEDULE_DUALPIPE;
        const char *name = step_schedule_name(c->schedule);
        s->v = 2;
        if (s->pp < 2 || (dp && s->pp % 2))
            return step_fail(s, SIM_EINVAL, "schedule: %s with pp %d; allowed: pp >= 2%s", name, s->pp,
                             dp ? " and even" : "");
        if (s->m < 2 * s->pp || (dp && s->m % 2))
            return step_fail(s, SIM_EINVAL,
                             "schedule: %s with %d microbatches; allowed: at least 2 pp (%d)%s", name, s->m,
                             2 * s->pp, dp ? " and even" : "");
        if (!dp && s->layers_per_stage % 2)
            return step_fail(s, SIM_EINVAL,
                             "schedule: zb-v splits each stage's %d blocks into two chunks; allowed: an "
                             "even number of blocks per stage",
                             s->layers_per_stage);
        if (dp) /* each GPU holds its stage and a copy of the mirror stage */
            s->layers_per_stage *= 2;
    } else if (c->schedule != STEP_SCHEDULE_INTERLEAVED) {
        if (c->schedule != STEP_SCHEDULE_1F1B && c->schedule != STEP_SCHEDULE_GPIPE &&
            c->schedule != STEP_SCHEDULE_ZB_H1)
            return step_fail(s, SIM_EINVAL,
                             "schedule: %d is not a schedule; allowed: 1f1b, gpipe, interleaved, zb-h1, "
                             "zb-v, dualpipe",
                             (int)c->schedule);
        s->v = 1;
    } else {
        s->v = c->virtual_stages;
        if (s->v < 2)
            return step_fail(s, SIM_EINVAL, "schedule: interleaved:%d; allowed: 2 or more virtual stages",
                             s->v);
        if (s->pp < 2)
            return step_fail(s, SIM_EINVAL, "schedule: interleaved needs pp >= 2 (pp is %d)", s->pp);
        if (s->layers_per_stage % s->v)
            return step_fail(
                s, SIM_EINVAL,
                "schedule: interleaved:%d does not divide the %d blocks per stage; allowed: a divisor "
                "of %d",
                s->v, s->layers_per_stage, s->layers_per_stage);
        if (s->m % s->pp)
            return step_fail(
                s, SIM_EINVAL,
                "schedule: interleaved needs the microbatch count (%d) to be a multiple of pp (%d), "
                "as Megatron does",
                s->m, s->pp);
    }
    s->chunk_blocks = s->layers_per_stage / s->v;
    const model_training_t *t = &s->job.training;
    s->emb = s->est.block.n_edges > 0;
    s->dp_comm = s->job.compat == MODEL_COMPAT_CORRECTED ? t->dp_comm : MODEL_DP_SHARDED;
    /* Megatron-Core's overlap_p2p_comm (interleaved schedule only): sends do not hold up the sender */
    if (s->job.compat == MODEL_COMPAT_CORRECTED && t->pp_comm_overlap && s->v > 1 &&
        c->schedule == STEP_SCHEDULE_INTERLEAVED)
        s->cfg.p2p_async = 1;
    if (s->emb && s->job.par.strategy != MODEL_STRATEGY_1D)
        return step_fail(
            s, SIM_EINVAL,
            "job: training.embedding with strategy %s: its vocab-parallel layers use the whole "
            "tensor group (tp1 x tp2), which the simulated step does not form; allowed: strategy "
            "1d, or embedding 0",
            model_strategy_name(s->job.par.strategy));
    if (s->dp_comm != MODEL_DP_SHARDED && s->dp_comm != MODEL_DP_ALLREDUCE &&
        s->dp_comm != MODEL_DP_ALLREDUCE_OVERLAP && s->dp_comm != MODEL_DP_SHARDED_OVERLAP &&
        s->dp_comm != MODEL_DP_FSDP)
        return step_fail(s, SIM_EINVAL,
                         "job: training.dp_comm: %d; allowed: sharded, allreduce, allreduce-overlap, "
                         "sharded-overlap, fsdp",
                         (int)s->dp_comm);
    if (s->dp_comm == MODEL_DP_FSDP && (s->v > 1 || step_schedule_splits(c->schedule)))
        return step_fail(s, SIM_EINVAL, "schedule: %s with training.dp_comm fsdp; allowed: 1f1b or gpipe",
                         step_schedule_name(c->schedule));
    if (s->job.compat == MODEL_COMPAT_CORRECTED && t->interleave > 1 && t->interleave != s->v)
        return step_fail(
            s, SIM_EINVAL,
            "job: training.interleave %lld differs from the schedule's %d virtual stages; allowed: "
            "the same",
            (long long)t->interleave, s->v);
    if (c->comm != SIM_COMM_NETWORK && c->comm != SIM_COMM_ANALYTIC)
        return step_fail(s, SIM_EINVAL, "comm: %d; allowed: network, analytic", (int)c->comm);
    int seen[STEP_DIM_COUNT] = {0};
    for (int i = 0; i < STEP_DIM_COUNT; i++) {
        const unsigned d = (unsigned)c->placement.order[i];
        if (d >= STEP_DIM_COUNT || seen[d]++)
            return step_fail(s, SIM_EINVAL, "placement: not an order of tp, cp, pp, dp");
    }
    return SIM_OK;
}

static int make_network(step_t *s, const sim_network_desc_t *net) {
    if (s->cfg.comm == SIM_COMM_NETWORK) {
        if (!net)
            return step_fail(s, SIM_EINVAL, "network: required with network communication");
        if (s->map ? net->n_gpus < s->gpus : net->n_gpus != s->gpus)
            return step_fail(s, SIM_EINVAL, "network: %d GPUs, but the job has %d; allowed: %d", net->n_gpus,
                             s->gpus, s->gpus);
        s->net = *net;
        s->engine_gpus = net->n_gpus;
        s->gpus_per_domain = net->gpus_per_domain > 0 ? net->gpus_per_domain : 1;
        return SIM_OK;
    }
    s->engine_gpus = s->gpus;
    int64_t g = s->job.system.nvlink_size;
    if (g < 1 || g > s->gpus)
        g = g < 1 ? 1 : s->gpus;
    s->gpus_per_domain = (int32_t)g;
    const sim_star_params_t sp = {.n_gpus = s->gpus,
                                  .nic_bytes_per_s = 1e9,
                                  .nic_latency_s = 0.0,
                                  .gpus_per_domain = s->gpus_per_domain,
                                  .nvlink_bytes_per_s = 1e9,
                                  .nvlink_latency_s = 0.0};
    const int rc = sim_star_init(&s->star, &sp);
    if (rc)
        return step_fail(s, rc, "step: the analytic stand-in network: %s", sim_status_name(rc));
    sim_star_network(&s->star, &s->net);
    return SIM_OK;
}

static void per_domain_counts(step_t *s) {
    int32_t *m = alloc_malloc((size_t)s->gpus * sizeof *m);
    for (int g = 0; g < STEP_GROUP_COUNT; g++) {
        s->group_per_domain[g] = 1;
        if (!m)
            continue;
        const int64_t x[STEP_DIM_COUNT] = {0, 0, 0, 0};
        const int32_t n = step_group_members(s, (step_group_t)g, x, m);
        int32_t t = 0;
        for (int32_t i = 0; i < n; i++)
            t += m[i] / s->gpus_per_domain == m[0] / s->gpus_per_domain;
        s->group_per_domain[g] = t > 0 ? t : 1;
    }
    free(m);
}

/* step_new, or with shared (map given) a step on a fabric's engine. */
static int create(const model_job_t *job, const step_config_t *cfg, const sim_network_desc_t *net,
                  sim_engine_t *shared, const int32_t *map, step_t **out, char *err, size_t err_size) {
    *out = NULL;
    if (err && err_size)
        err[0] = '\0';
    step_t *s = alloc_calloc(1, sizeof *s);
    if (!s) {
        if (err && err_size)
            snprintf(err, err_size, "step: out of memory");
        return SIM_ENOMEM;
    }
    s->job = *job;
    if (cfg)
        s->cfg = *cfg;
    else
        step_config_default(&s->cfg);
    int rc = SIM_OK;
    if (shared) {
        /* identical ranks of one job are not identical once other jobs share their links */
        s->cfg.collapse = STEP_COLLAPSE_OFF;
        if (s->cfg.comm != SIM_COMM_NETWORK)
            rc = step_fail(s, SIM_EINVAL, "comm: jobs on one fabric need network communication");
        s->map = alloc_malloc((size_t)(job->gpus > 0 ? job->gpus : 1) * sizeof *s->map);
        if (!rc && !s->map)
            rc = step_fail(s, SIM_ENOMEM, "step: out of memory");
        for (int64_t g = 0; !rc && g < job->gpus; g++)
            s->map[g] = map[g];
    }
    if (!rc)
        rc = check_job(s);
    if (!rc) {
        s->n[STEP_DIM_TP] = job->par.strategy == MODEL_STRATEGY_1D ? job->par.tp : job->par.tp1;
        s->n[STEP_DIM_CP] = job->par.strategy == MODEL_STRATEGY_1D ? 1 : job->par.tp2;
        s->n[STEP_DIM_PP] = job->par.pp;
        s->n[STEP_DIM_DP] = job->par.dp;
        const model_block_t *blk = &s->est.block;
        step_plan_build(blk->layers, blk->n_layers, 0, recompute_full(s) ? blk->checkpoint_gb : -1.0,
                        s->plans[STEP_PART_BLOCK]);
        /* the edges: the embedding first, then the output layers in order (model_block_build) */
        const int n_emb = blk->n_edges > 0 ? 1 : 0;
        step_plan_build(blk->edges, n_emb, STEP_EDGE_ID, -1.0, s->plans[STEP_PART_EMBEDDING]);
        step_plan_build(blk->edges + n_emb, blk->n_edges - n_emb, STEP_EDGE_ID + n_emb, -1.0,
                        s->plans[STEP_PART_OUTPUT]);
        rc = make_network(s, net);
    }
    if (!rc)
        rc = step_perturb_init(s);
    if (!rc) {
        per_domain_counts(s);
        const int opt =
            s->cfg.optimizer_step < 0 ? job->compat == MODEL_COMPAT_CORRECTED : s->cfg.optimizer_step;
        s->optimizer_s = 0.0;
        if (opt)
            rc = optimizer_s(s, &s->optimizer_s);
    }
    if (!rc) {
        s->static_gb = s->est.summary.weights_gb + s->est.summary.grads_gb + s->est.summary.optimizer_gb +
                       s->est.summary.fp8_weights_gb      /* 0 in BF16 */
                       + s->est.summary.fsdp_gathered_gb; /* 0 but with fsdp */
        /* DualPipe: the mirror stage's copy of weights, gradients and state (the corrected model's
         * estimate with training.pipeline_schedule dualpipe counts it already) */
        if (s->cfg.schedule == STEP_SCHEDULE_DUALPIPE &&
            !(job->compat == MODEL_COMPAT_CORRECTED && job->training.pipeline == MODEL_PIPELINE_DUALPIPE))
            s->static_gb *= 2.0;
        rc = decide(s);
    }
    if (!rc && shared)
        snprintf(s->collapse_note, sizeof s->collapse_note,
                 "off: every GPU simulated (jobs share the fabric: no collapse within or across jobs)");
    if (!rc)
        rc = stage_gpus(s);
    if (!rc && shared) {
        s->e = shared;
        s->op0 = sim_op_count(shared);
    } else if (!rc) {
        s->own_engine = 1;
        sim_config_t ec = s->cfg.engine;
        ec.comm_streams = STEP_COMM_STREAMS;
        ec.comm_mode = s->cfg.comm;
        ec.has_system = 1;
        ec.system = job->system;
        ec.compat = job->compat;
        char eerr[256];
        rc = sim_engine_new(&ec, &s->net, &s->e, eerr, sizeof eerr);
        if (rc)
            step_fail(s, rc, "engine: %s", eerr);
    }
    if (!rc) {
        s->act_gb = alloc_calloc((size_t)s->engine_gpus, sizeof *s->act_gb);
        s->peak_act_gb = alloc_calloc((size_t)s->engine_gpus, sizeof *s->peak_act_gb);
        if (!s->act_gb || !s->peak_act_gb)
            rc = step_fail(s, SIM_ENOMEM, "step: out of memory");
        /* full recomputation: the working set of the one block being recomputed, as the model */
        for (int64_t i = 0; !rc && recompute_full(s) && i < (int64_t)s->pp * s->per_stage; i++)
            s->act_gb[s->stage_gpus[i]] = s->peak_act_gb[s->stage_gpus[i]] = s->est.block.activations_gb;
    }
    if (!rc)
        rc = step_build(s);
    if (!rc)
        s->op_end = sim_op_count(s->e);
    if (rc) {
        if (err && err_size)
            snprintf(err, err_size, "%s", s->err[0] ? s->err : sim_status_name(rc));
        step_free(s);
        return rc;
    }
    *out = s;
    return SIM_OK;
}

int step_new(const model_job_t *job, const step_config_t *cfg, const sim_network_desc_t *net, step_t **out,
             char *err, size_t err_size) {
    return create(job, cfg, net, NULL, NULL, out, err, err_size);
}

int step_new_shared(const model_job_t *job, const step_config_t *cfg, const sim_network_desc_t *net,
                    sim_engine_t *e, const int32_t *map, step_t **out, char *err, size_t err_size) {
    return create(job, cfg, net, e, map, out, err, err_size);
}

void step_free(step_t *s) {
    if (!s)
        return;
    if (s->own_engine)
        sim_engine_free(s->e);
    free(s->map);
    sim_star_destroy(&s->star);
    free(s->stage_gpus);
    for (int32_t i = 0; i < s->n_fixed; i++) {
        free(s->fixed[i].links);
        free(s->fixed[i].bytes);
    }
    free(s->fixed);
    for (int i = 0; i < 2; i++) {
        free(s->rail_map[i]);
        free(s->link_owner[i]);
    }
    free(s->gpu_stage);
    free(s->rec);
    free(s->info);
    free(s->info_tab);
    free(s->act_gb);
    free(s->peak_act_gb);
    free(s->slow);
    step_workload_free(&s->wl_names);
    free(s->wl_engine_names);
    free(s->wl_op_name);
    free(s);
}

/* ---- running -------------------------------------------------------------------------------------- */

static void obs_op_start(void *ctx, sim_time_ps_t t, const sim_op_info_t *op) {
    const step_t *s = ctx;
    s->user_obs.op_start(s->user_obs.ctx, t, op);
}

void step_op_ended(step_t *s, sim_time_ps_t t, const sim_op_info_t *op) {
    if (op->op >= s->op0 && op->op - s->op0 < s->cap_rec) {
        const double act = s->info[s->rec[op->op - s->op0].info].act_gb;
        if (act != 0.0) {
            const int32_t g = op->gpu;
            double *a = &s->act_gb[g];
            *a += act;
            if (*a < 1e-12 && *a > -1e-12)
                *a = 0.0; /* allocations and frees cancel exactly in value, not always in rounding */
            if (*a > s->peak_act_gb[g])
                s->peak_act_gb[g] = *a;
            if (s->mem_fn)
                s->mem_fn(s->mem_ctx, t, g, s->static_gb + *a);
        }
    }
}

void step_mark_ran(step_t *s) {
    s->ran = 1;
}

static void obs_op_end(void *ctx, sim_time_ps_t t, const sim_op_info_t *op) {
    step_t *s = ctx;
    step_op_ended(s, t, op);
    if (s->user_obs.op_end)
        s->user_obs.op_end(s->user_obs.ctx, t, op);
}

static void obs_flow_start(void *ctx, sim_time_ps_t t, const sim_flow_info_t *f) {
    const step_t *s = ctx;
    s->user_obs.flow_start(s->user_obs.ctx, t, f);
}

static void obs_flow_end(void *ctx, sim_time_ps_t t, const sim_flow_info_t *f) {
    const step_t *s = ctx;
    s->user_obs.flow_end(s->user_obs.ctx, t, f);
}

static void obs_counter(void *ctx, sim_time_ps_t t, const sim_counter_t *c) {
    const step_t *s = ctx;
    s->user_obs.counter(s->user_obs.ctx, t, c);
}

void step_set_observer(step_t *s, const sim_observer_t *obs) {
    if (obs) {
        s->user_obs = *obs;
        s->has_user_obs = 1;
    } else {
        memset(&s->user_obs, 0, sizeof s->user_obs);
        s->has_user_obs = 0;
    }
}

void step_set_memory_callback(step_t *s, step_memory_fn fn, void *ctx) {
    s->mem_fn = fn;
    s->mem_ctx = ctx;
}

void step_set_progress(step_t *s, sim_progress_fn fn, void *ctx) {
    sim_engine_set_progress(s->e, fn, ctx);
}

int step_run(step_t *s) {
    if (s->ran)
        return step_fail(s, SIM_ESTATE, "step: already run");
    if (!s->own_engine)
        return step_fail(s, SIM_ESTATE, "step: on a shared engine, run by its fabric");
    int acts = 0; /* an operation that allocates or frees activations (none in a workload) */
    for (int32_t k = 0; k < s->n_info && !acts; k++)
        acts = s->info[k].act_gb != 0.0;
    const sim_observer_t obs = {.ctx = s,
                                .op_start = s->user_obs.op_start ? obs_op_start : NULL,
                                .op_end = acts || s->user_obs.op_end ? obs_op_end : NULL,
                                .flow_start = s->user_obs.flow_start ? obs_flow_start : NULL,
                                .flow_end = s->user_obs.flow_end ? obs_flow_end : NULL,
                                .counter = s->user_obs.counter ? obs_counter : NULL};
    sim_engine_set_observer(s->e, &obs);
    if (s->mem_fn) /* the static part from the start */
        for (int64_t i = 0; i < (int64_t)s->pp * s->per_stage; i++)
            s->mem_fn(s->mem_ctx, 0, s->stage_gpus[i], s->static_gb);
    const int rc = sim_engine_run(s->e);
    s->ran = 1;
    if (rc)
        return step_fail(s, rc, "%s", sim_engine_last_error(s->e));
    return SIM_OK;
}

const sim_engine_t *step_engine(const step_t *s) {
    return s->e;
}

const char *step_last_error(const step_t *s) {
    return s->err;
}

/* ---- results ------------------------------------------------------------------------------------ */

typedef struct edge {
    sim_time_ps_t t;
    int32_t cat, delta;
} edge_t;

static int cmp_edge(const void *a, const void *b) {
    const edge_t *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->delta > y->delta) - (x->delta < y->delta); /* ends before starts: no zero-length overlap */
}

enum { CAT_COMPUTE = 0, CAT_TP = 1, CAT_PP = 2, CAT_DP = 3, CAT_COUNT = 4 };

static int push_edge(edge_t **e, int64_t *n, int64_t *cap, sim_time_ps_t a, sim_time_ps_t b, int32_t cat) {
    if (b <= a)
        return 0;
    if (*n + 2 > *cap) {
        const int64_t nc = *cap ? 2 * *cap : 1024;
        edge_t *ne = alloc_realloc(*e, (size_t)nc * sizeof *ne);
        if (!ne)
            return -1;
        *e = ne;
        *cap = nc;
    }
    (*e)[(*n)++] = (edge_t){a, cat, 1};
    (*e)[(*n)++] = (edge_t){b, cat, -1};
    return 0;
}

/* The critical GPU's timeline, each instant to its highest-priority busy category. */
static int breakdown(const step_t *s, sim_time_ps_t end, int32_t gpu, step_breakdown_t *out) {
    edge_t *ev = NULL;
    int64_t n = 0, cap = 0;
    for (int32_t op = s->op0; op < s->op_end; op++) {
        if (sim_op_gpu(s->e, op) != gpu)
            continue;
        step_meta_t mm;
        step_meta_get(s, op, &mm);
        const step_meta_t *m = &mm;
        sim_time_ps_t st, en;
        sim_op_times(s->e, op, &st, &en);
        if (st == SIM_TIME_NEVER || en == SIM_TIME_NEVER)
            continue;
        int bad = 0;
        if (m->kind == STEP_OP_COMPUTE || m->kind == STEP_OP_OPTIMIZER) {
            sim_time_ps_t tp = m->tp_comm_s > 0 ? sim_s_to_ps(m->tp_comm_s) : 0;
            if (tp > en - st)
                tp = en - st;
            bad |= push_edge(&ev, &n, &cap, st, en - tp, CAT_COMPUTE);
            bad |= push_edge(&ev, &n, &cap, en - tp, en, CAT_TP);
        } else {
            if (!m->fixed && m->coll >= 0) {
                sim_coll_result_t cr;
                if (sim_coll_result(s->e, m->coll, &cr) == SIM_OK && cr.start_ps != SIM_TIME_NEVER)
                    st = cr.start_ps > st ? cr.start_ps : st;
            }
            const int32_t cat = m->kind == STEP_OP_TP ? CAT_TP : m->kind == STEP_OP_PP ? CAT_PP : CAT_DP;
            bad |= push_edge(&ev, &n, &cap, st, en, cat);
        }
        if (bad) {
            free(ev);
            return SIM_ENOMEM;
        }
    }
    qsort(ev, (size_t)n, sizeof *ev, cmp_edge);
    sim_time_ps_t acc[CAT_COUNT] = {0, 0, 0, 0}, prev = 0;
    int32_t active[CAT_COUNT] = {0, 0, 0, 0};
    for (int64_t i = 0; i < n; i++) {
        const sim_time_ps_t t = ev[i].t < end ? ev[i].t : end;
        for (int c = 0; c < CAT_COUNT; c++)
            if (active[c] > 0) {
                acc[c] += t - prev;
                break;
            }
        prev = t;
        active[ev[i].cat] += ev[i].delta;
    }
    free(ev);
    const sim_time_ps_t busy = acc[0] + acc[1] + acc[2] + acc[3];
    out->compute_s = sim_ps_to_s(acc[CAT_COMPUTE]);
    out->exposed_tp_comm_s = sim_ps_to_s(acc[CAT_TP]);
    out->exposed_pp_comm_s = sim_ps_to_s(acc[CAT_PP]);
    out->exposed_dp_comm_s = sim_ps_to_s(acc[CAT_DP]);
    out->bubble_idle_s = sim_ps_to_s(end - busy);
    return SIM_OK;
}

int step_result(const step_t *s, step_result_t *r) {
    if (!s->ran)
        return SIM_ESTATE;
    memset(r, 0, sizeof *r);
    const int32_t n_ops = s->op_end - s->op0;
    sim_time_ps_t end = 0;
    int32_t crit = -1, crit_stage = -1;
    for (int32_t op = s->op0; op < s->op_end; op++) {
        sim_time_ps_t st, en;
        sim_op_times(s->e, op, &st, &en);
        if (en == SIM_TIME_NEVER)
            continue;
        const int32_t g = sim_op_gpu(s->e, op);
        if (en > end || (en == end && (crit < 0 || g < crit))) {
            end = en;
            crit = g;
            crit_stage = s->gpu_stage[g];
        }
    }
    if ((s->perturbed || s->expert_skew > 0.0) && crit >= 0) {
        /* several GPUs end together (the members of a collective): the critical one is the one with
         * the most compute time, the one the others waited for (then the lowest id) */
        sim_time_ps_t *busy = alloc_calloc((size_t)s->gpus, sizeof *busy);
        char *last = alloc_calloc((size_t)s->gpus, 1);
        if (!busy || !last) {
            free(busy);
            free(last);
            return SIM_ENOMEM;
        }
        for (int32_t op = 0; op < n_ops; op++) {
            sim_time_ps_t st, en;
            sim_op_times(s->e, op, &st, &en);
            if (en == SIM_TIME_NEVER)
                continue;
            const int32_t g = sim_op_gpu(s->e, op);
            last[g] |= en == end;
            step_meta_t m;
            step_meta_get(s, op, &m);
            if (m.kind == STEP_OP_COMPUTE || m.kind == STEP_OP_OPTIMIZER)
                busy[g] += en - st;
        }
        for (int32_t g = 0; g < s->gpus; g++)
            if (last[g] && busy[g] > busy[crit]) {
                crit = g;
                crit_stage = s->gpu_stage[g];
            }
        free(busy);
        free(last);
    }
    r->step_time_s = sim_ps_to_s(end);
    r->critical_gpu = crit;
    r->critical_stage = crit_stage;
    if (crit >= 0 && breakdown(s, end, crit, &r->breakdown) != SIM_OK)
        return SIM_ENOMEM;
    r->microbatches = s->m;
    r->virtual_stages = s->v;
    r->gpus = s->gpus;
    r->simulated_gpus = s->pp * s->per_stage;
    r->collapsed = s->level;
    r->collapse_exact = s->collapse_exact;
    snprintf(r->collapse_note, sizeof r->collapse_note, "%s", s->collapse_note);
    r->granularity = s->granularity;
    sim_engine_stats_t es;
    sim_engine_stats(s->e, &es);
    r->operations = n_ops;
    r->events = es.events;
    r->flows = es.flows_started;
    r->optimizer_s = s->optimizer_s;
    r->static_memory_gb = s->static_gb;
    r->peak_memory_gpu = -1;
    for (int64_t i = 0; i < (int64_t)s->pp * s->per_stage; i++) {
        const int32_t g = s->stage_gpus[i];
        if (r->peak_memory_gpu < 0 || s->peak_act_gb[g] > r->peak_activations_gb ||
            (s->peak_act_gb[g] == r->peak_activations_gb && g < r->peak_memory_gpu)) {
            r->peak_activations_gb = s->peak_act_gb[g];
            r->peak_memory_gpu = g;
        }
    }
    r->peak_memory_gb = s->static_gb + r->peak_activations_gb;
    return SIM_OK;
}

double step_gpu_peak_activations_gb(const step_t *s, int32_t gpu) {
    if (gpu < 0 || gpu >= s->engine_gpus)
        return -1.0;
    for (int64_t i = 0; i < (int64_t)s->pp * s->per_stage; i++)
        if (s->stage_gpus[i] == gpu)
            return s->peak_act_gb[gpu];
    return -1.0;
}

int step_op(const step_t *s, sim_op_id_t op, step_op_t *out) {
    if (op < s->op0 || op >= s->op_end || op - s->op0 >= s->cap_rec)
        return SIM_EINVAL;
    static const char *const PASS[4] = {"fwd", "bwd", "opt", "wgrad"};
    /* by step_group_t, then STEP_META_GROUP_PP; the expert gradients' group is data parallel */
    static const char *const GROUP[7] = {"tp", "cp", "dp", "ep", "dp", "etp", "pp"};
    step_meta_t mm;
    step_meta_get(s, op, &mm);
    const step_meta_t *m = &mm;
    memset(out, 0, sizeof *out);
    out->kind = (step_op_kind_t)m->kind;
    out->pass = m->pass >= 0 && m->pass < 4 ? PASS[m->pass] : NULL;
    out->stage = m->stage;
    out->chunk = m->chunk;
    out->microbatch = m->microbatch;
    out->first_block = m->first_block;
    out->n_blocks = m->n_blocks;
    const model_layer_t *l0 = step_layer(s, m->layer0), *l1 = step_layer(s, m->layer1);
    out->first_layer = l0 ? l0->name : NULL;
    out->last_layer = l1 ? l1->name : NULL;
    out->collective = m->coll_op >= 0 ? model_coll_op_name((model_coll_op_t)m->coll_op) : NULL;
    out->group = m->group >= 0 && m->group < 7 ? GROUP[m->group] : NULL;
    out->flops_tflop = m->flops_tflop;
    out->hbm_gb = m->hbm_gb;
    out->comm_gb = m->comm_gb;
    out->tp_comm_s = m->tp_comm_s;
    out->activations_gb = m->act_gb;
    if (s->wl_op_name && s->wl_op_name[op - s->op0] >= 0)
        out->name = step_workload_name(&s->wl_names, s->wl_op_name[op - s->op0] + 1);
    return SIM_OK;
}

char *step_op_label(const step_t *s, sim_op_id_t op, char *buf, size_t size) {
    step_op_t m;
    if (size)
        buf[0] = '\0';
    if (step_op(s, op, &m) != SIM_OK)
        return buf;
    if (m.name) {
        snprintf(buf, size, "%s", m.name);
    } else if (m.kind == STEP_OP_COMPUTE && m.pass) {
        if (m.n_blocks > 1)
            snprintf(buf, size, "%s mb %d blocks %d-%d", m.pass, m.microbatch, m.first_block,
                     m.first_block + m.n_blocks - 1);
        else if (m.first_layer && m.last_layer && strcmp(m.first_layer, m.last_layer) != 0)
            snprintf(buf, size, "%s mb %d block %d %s..%s", m.pass, m.microbatch, m.first_block,
                     m.first_layer, m.last_layer);
        else
            snprintf(buf, size, "%s mb %d block %d %s", m.pass, m.microbatch, m.first_block,
                     m.first_layer ? m.first_layer : "");
    } else {
        sim_op_desc_t d;
        if (sim_op_describe(s->e, op, &d) == SIM_OK && d.name)
            snprintf(buf, size, "%s", d.name);
    }
    return buf;
}
