/* step_collapse.c - when one tensor rank ("rail") of every stage and replica stands exactly for all of
 * them in network mode, and the idle-network time of the collectives that collapsing takes off the
 * network.
 *
 * Collapsing the tensor ranks is exact when (1) the links any two members of a tensor group might
 * use (every ordered pair is routed, whatever the algorithm) carry no other group's traffic: no
 * other tensor group's of the same kind, no data-, context- or pipeline-parallel traffic; groups of
 * different kinds (2D SUMMA's rows and columns) may share links only where they share a GPU, since
 * a GPU runs its tensor collectives one after another; (2) the other traffic of different rails
 * (data-parallel, pipeline, and the tied embedding's all-reduce between the first and the last
 * stage) uses disjoint links; and (3) shifting every rank's tensor coordinate by one maps every route of
 * that traffic onto another route link for link (one consistent, one-to-one link map with equal
 * capacities and latencies, and NVLink-domain membership preserved), so every rail sees the same
 * network. Then every rail's timeline is the same and a tensor collective takes the same time as on
 * an idle network, which step_measure measures once per collective kind, on every group at once,
 * checking that all groups agree. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "step_internal.h"

/* The most routes the check looks up (about 0.1 us each). */
#define MAX_CHECKED_ROUTES 1e8

typedef struct check {
    step_t *s;
    int n_k;
    step_dim_t k[2];        /* collapsed dims */
    int32_t *owner[2];      /* per fixed kind: the group (its leader GPU) using a link, -1 */
    int32_t *rail;          /* rail using a link (non-fixed traffic), -1 */
    int32_t *lambda[2];     /* per generator: link map, -1 unset */
    int32_t *lambda_inv[2]; /* its inverse */
    int32_t *members;
    char *note;
    size_t note_size;
    int failed;
} check_t;

static int fail(check_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(check_t *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->note, c->note_size, fmt, ap);
    va_end(ap);
    c->failed = 1;
    return 1;
}

static int route(const step_t *s, int32_t a, int32_t b, int32_t *links) {
    return s->net.route(s->net.route_ctx, a, b, links, SIM_ROUTE_MAX);
}

static int is_leader(const step_t *s, step_group_t g, const int64_t x[STEP_DIM_COUNT]) {
    int dims[STEP_DIM_COUNT];
    const int nd = step_group_dims(s, g, dims);
    for (int i = 0; i < nd; i++)
        if (x[dims[i]] != 0)
            return 0;
    return 1;
}

/* The rail of a rank: its collapsed coordinates as one number. */
static int32_t rail_of(const check_t *c, const int64_t x[STEP_DIM_COUNT]) {
    int64_t r = 0, stride = 1;
    for (int i = 0; i < c->n_k; i++) {
        r += x[c->k[i]] * stride;
        stride *= c->s->n[c->k[i]];
    }
    return (int32_t)r;
}

/* (1): tensor groups of kind slot (0: TP, 1: CP in 2d) own their links. */
static int fixed_links(check_t *c, int slot, step_group_t g) {
    step_t *s = c->s;
    int32_t buf[SIM_ROUTE_MAX];
    for (int32_t gpu = 0; gpu < s->gpus; gpu++) {
        int64_t x[STEP_DIM_COUNT];
        step_placement_coords(&s->cfg.placement, &s->job.par, gpu, x);
        if (!is_leader(s, g, x))
            continue;
        const int32_t n = step_group_members(s, g, x, c->members);
        for (int32_t i = 0; i < n; i++)
            for (int32_t j = 0; j < n; j++) {
                if (i == j)
                    continue;
                const int len = route(s, c->members[i], c->members[j], buf);
                if (len < 1)
                    return fail(c, "no route from GPU %d to GPU %d", c->members[i], c->members[j]);
                for (int l = 0; l < len; l++) {
                    int32_t *o = &c->owner[slot][buf[l]];
                    if (*o < 0)
                        *o = gpu;
                    else if (*o != gpu)
                        return fail(c, "the %s groups of GPUs %d and %d share link %d", slot ? "cp" : "tp",
                                    *o, gpu, buf[l]);
                }
            }
    }
    return 0;
}

/* SUMMA rows and columns may share a link only within one tensor block (same stage and replica). */
static int cross_kind(check_t *c) {
    const step_t *s = c->s;
    for (int32_t l = 0; l < s->net.n_links; l++) {
        const int32_t a = c->owner[0][l], b = c->owner[1][l];
        if (a < 0 || b < 0)
            continue;
        int64_t xa[STEP_DIM_COUNT], xb[STEP_DIM_COUNT];
        step_placement_coords(&s->cfg.placement, &s->job.par, a, xa);
        step_placement_coords(&s->cfg.placement, &s->job.par, b, xb);
        if (xa[STEP_DIM_PP] != xb[STEP_DIM_PP] || xa[STEP_DIM_DP] != xb[STEP_DIM_DP])
            return fail(c, "tensor groups of different stages or replicas share link %d", l);
    }
    return 0;
}

/* The shifted GPU: collapsed coordinate k plus one. */
static int32_t shifted(const check_t *c, int gen, int32_t gpu) {
    int64_t x[STEP_DIM_COUNT];
    step_placement_coords(&c->s->cfg.placement, &c->s->job.par, gpu, x);
    const step_dim_t d = c->k[gen];
    x[d] = (x[d] + 1) % c->s->n[d];
    return step_gpu(c->s, x);
}

/* (2) and (3) for one pair of non-tensor traffic. */
static int other_pair(check_t *c, int32_t a, int32_t b, const char *what) {
    step_t *s = c->s;
    int32_t r1[SIM_ROUTE_MAX], r2[SIM_ROUTE_MAX];
    const int len = route(s, a, b, r1);
    if (len < 1)
        return fail(c, "no route from GPU %d to GPU %d", a, b);
    int64_t x[STEP_DIM_COUNT];
    step_placement_coords(&s->cfg.placement, &s->job.par, a, x);
    const int32_t rail = rail_of(c, x);
    for (int l = 0; l < len; l++) {
        const int32_t id = r1[l];
        if (c->owner[0][id] >= 0 || (c->n_k > 1 && c->owner[1][id] >= 0))
            return fail(c, "tensor traffic shares link %d with %s traffic", id, what);
        if (c->rail[id] < 0)
            c->rail[id] = rail;
        else if (c->rail[id] != rail)
            return fail(c, "the %s traffic of tensor ranks %d and %d shares link %d", what, c->rail[id], rail,
                        id);
    }
    const int32_t g = s->gpus_per_domain;
    for (int gen = 0; gen < c->n_k; gen++) {
        const int32_t sa = shifted(c, gen, a), sb = shifted(c, gen, b);
        if ((a / g == b / g) != (sa / g == sb / g))
            return fail(c, "shifting the %s rank changes which %s pairs share an NVLink domain",
                        step_dim_name(c->k[gen]), what);
        const int len2 = route(s, sa, sb, r2);
        if (len2 != len)
            return fail(c, "the routes %d->%d and %d->%d differ in length", a, b, sa, sb);
        for (int l = 0; l < len; l++) {
            int32_t *m = &c->lambda[gen][r1[l]], *mi = &c->lambda_inv[gen][r2[l]];
            if ((*m >= 0 && *m != r2[l]) || (*mi >= 0 && *mi != r1[l]))
                return fail(c, "the %s routes of different tensor ranks do not map onto each other (link %d)",
                            what, r1[l]);
            if (s->net.capacity_bytes_per_s[r1[l]] != s->net.capacity_bytes_per_s[r2[l]] ||
                s->net.latency_s[r1[l]] != s->net.latency_s[r2[l]])
                return fail(c, "links %d and %d of shifted %s routes differ in capacity or latency", r1[l],
                            r2[l], what);
            *m = r2[l];
            *mi = r1[l];
        }
    }
    return 0;
}

static int group_pairs(check_t *c, step_group_t g, const char *what) {
    step_t *s = c->s;
    if (step_group_size(s, g) <= 1)
        return 0;
    for (int32_t gpu = 0; gpu < s->gpus; gpu++) {
        int64_t x[STEP_DIM_COUNT];
        step_placement_coords(&s->cfg.placement, &s->job.par, gpu, x);
        if (!is_leader(s, g, x))
            continue;
        const int32_t n = step_group_members(s, g, x, c->members);
        for (int32_t i = 0; i < n; i++)
            for (int32_t j = 0; j < n; j++)
                if (i != j && other_pair(c, c->members[i], c->members[j], what))
                    return 1;
    }
    return 0;
}

static int pipeline_pairs(check_t *c) {
    step_t *s = c->s;
    if (s->pp <= 1)
        return 0;
    for (int32_t gpu = 0; gpu < s->gpus; gpu++) {
        int64_t x[STEP_DIM_COUNT];
        step_placement_coords(&s->cfg.placement, &s->job.par, gpu, x);
        if (x[STEP_DIM_PP] == s->pp - 1 && (s->v <= 1 || s->cfg.schedule != STEP_SCHEDULE_INTERLEAVED))
            continue;
        x[STEP_DIM_PP] = (x[STEP_DIM_PP] + 1) % s->pp;
        const int32_t next = step_gpu(s, x);
        if (other_pair(c, gpu, next, "pipeline") || other_pair(c, next, gpu, "pipeline"))
            return 1;
    }
    return 0;
}

/* The tied embedding's gradient all-reduce between every first-stage GPU and its last-stage
 * counterpart. */
static int embedding_pairs(check_t *c) {
    step_t *s = c->s;
    const int mirror = s->cfg.schedule == STEP_SCHEDULE_DUALPIPE; /* every stage with its mirror */
    if (!mirror &&
        (!s->emb || s->pp <= 1 || s->job.model.untied_embeddings || s->cfg.schedule == STEP_SCHEDULE_ZB_V))
        return 0;
    for (int32_t gpu = 0; gpu < s->gpus; gpu++) {
        int64_t x[STEP_DIM_COUNT];
        step_placement_coords(&s->cfg.placement, &s->job.par, gpu, x);
        if (mirror ? 2 * x[STEP_DIM_PP] >= s->pp : x[STEP_DIM_PP] != 0)
            continue;
        x[STEP_DIM_PP] = s->pp - 1 - x[STEP_DIM_PP];
        const int32_t last = step_gpu(s, x);
        if (other_pair(c, gpu, last, "embedding") || other_pair(c, last, gpu, "embedding"))
            return 1;
    }
    return 0;
}

double step_rails_check_routes(const step_t *s) {
    const int two_d = s->job.par.strategy == MODEL_STRATEGY_2D;
    const double n_k = two_d ? 2.0 : 1.0;
    double pairs = (double)s->gpus * (double)(step_group_size(s, STEP_GROUP_TP) +
                                              (two_d ? step_group_size(s, STEP_GROUP_CP) : 0));
    pairs += (double)s->gpus * (double)step_group_size(s, STEP_GROUP_DP) * (1.0 + n_k);
    if (s->job.par.strategy == MODEL_STRATEGY_2D_SEQP)
        pairs += (double)s->gpus * (double)step_group_size(s, STEP_GROUP_CP) * (1.0 + n_k);
    return pairs;
}

int step_rails_exact(step_t *s, char *note, size_t note_size) {
    if (s->net.route_load) {
        /* UGAL routes each flow by the load of every rail's flows: one rail alone would see less */
        snprintf(note, note_size, "adaptive routing chooses routes by the load of every rail");
        return 0;
    }
    check_t c;
    memset(&c, 0, sizeof c);
    c.s = s;
    c.note = note;
    c.note_size = note_size;
    c.k[c.n_k++] = STEP_DIM_TP;
    const int two_d = s->job.par.strategy == MODEL_STRATEGY_2D;
    if (two_d)
        c.k[c.n_k++] = STEP_DIM_CP;
    const size_t nl = (size_t)(s->net.n_links > 0 ? s->net.n_links : 1);
    int64_t max_group = 1;
    for (int g = 0; g < STEP_GROUP_COUNT; g++)
        if (step_group_size(s, (step_group_t)g) > max_group)
            max_group = step_group_size(s, (step_group_t)g);
    c.members = alloc_malloc((size_t)max_group * sizeof *c.members);
    c.rail = alloc_malloc(nl * sizeof *c.rail);
    int ok = c.members && c.rail;
    for (int i = 0; i < 2 && ok; i++) {
        c.owner[i] = alloc_malloc(nl * sizeof *c.owner[i]);
        c.lambda[i] = alloc_malloc(nl * sizeof *c.lambda[i]);
        c.lambda_inv[i] = alloc_malloc(nl * sizeof *c.lambda_inv[i]);
        ok = c.owner[i] && c.lambda[i] && c.lambda_inv[i];
        if (ok) {
            memset(c.owner[i], 0xff, nl * sizeof *c.owner[i]);
            memset(c.lambda[i], 0xff, nl * sizeof *c.lambda[i]);
            memset(c.lambda_inv[i], 0xff, nl * sizeof *c.lambda_inv[i]);
        }
    }
    int exact = 0;
    if (!ok) {
        step_fail(s, SIM_ENOMEM, "step: out of memory for the collapse check");
    } else {
        memset(c.rail, 0xff, nl * sizeof *c.rail);
        /* every ordered pair of every group is routed (twice more for the shifts): keep it bounded */
        const double pairs = step_rails_check_routes(s);
        if (pairs > MAX_CHECKED_ROUTES)
            fail(&c, "not checked: %.3g routes to compare (more than %.3g)", pairs, MAX_CHECKED_ROUTES);
        const int bad = c.failed || fixed_links(&c, 0, STEP_GROUP_TP) ||
                        (two_d && fixed_links(&c, 1, STEP_GROUP_CP)) || (two_d && cross_kind(&c)) ||
                        group_pairs(&c, STEP_GROUP_DP, "data-parallel") ||
                        (s->job.par.strategy == MODEL_STRATEGY_2D_SEQP &&
                         group_pairs(&c, STEP_GROUP_CP, "context-parallel")) ||
                        pipeline_pairs(&c) || embedding_pairs(&c);
        exact = !bad;
        if (exact)
            snprintf(
                note, note_size,
                "exact: tensor groups own their links, and every tensor rank's other traffic uses its own, "
                "isomorphic links");
    }
    free(c.members);
    free(c.rail);
    for (int i = 0; exact && i < c.n_k; i++) {
        /* the symmetry, kept for the link report */
        s->rail_map[i] = c.lambda[i];
        s->link_owner[i] = c.owner[i];
        c.lambda[i] = c.owner[i] = NULL;
    }
    for (int i = 0; i < 2; i++) {
        free(c.owner[i]);
        free(c.lambda[i]);
        free(c.lambda_inv[i]);
    }
    return exact;
}

int step_measure(step_t *s, step_group_t g, model_coll_op_t op, double size_bytes, int root, double *out_s,
                 int *agree, step_fixed_key_t *load) {
    static const sim_coll_op_t OPS[] = {SIM_COLL_SENDRECV,      SIM_COLL_ALLREDUCE, SIM_COLL_ALLGATHER,
                                        SIM_COLL_REDUCESCATTER, SIM_COLL_BROADCAST, SIM_COLL_REDUCE};
    *out_s = 0.0;
    *agree = 1;
    if ((unsigned)op >= sizeof OPS / sizeof OPS[0] || op == MODEL_COLL_NONE)
        return step_fail(s, SIM_EINVAL, "step: collective %s cannot be measured", model_coll_op_name(op));
    const int64_t size = step_group_size(s, g);
    if (size <= 1)
        return SIM_OK;
    sim_config_t ec = s->cfg.engine;
    ec.comm_streams = 1;
    ec.comm_mode = SIM_COMM_NETWORK;
    ec.has_system = 1;
    ec.system = s->job.system;
    ec.compat = s->job.compat;
    sim_engine_t *e = NULL;
    char err[256];
    int rc = sim_engine_new(&ec, &s->net, &e, err, sizeof err);
    if (rc)
        return step_fail(s, rc, "engine: %s", err);
    int32_t *members = alloc_malloc((size_t)size * sizeof *members);
    int32_t *colls = alloc_malloc(((size_t)s->gpus / (size_t)size + 1) * sizeof *colls);
    int32_t n_colls = 0;
    if (!members || !colls)
        rc = step_fail(s, SIM_ENOMEM, "step: out of memory");
    for (int32_t gpu = 0; gpu < s->gpus && !rc; gpu++) {
        int64_t x[STEP_DIM_COUNT];
        step_placement_coords(&s->cfg.placement, &s->job.par, gpu, x);
        if (!is_leader(s, g, x))
            continue;
        const int32_t n = step_group_members(s, g, x, members);
        const sim_coll_desc_t d = {.op = OPS[op],
                                   .algo = SIM_ALGO_AUTO,
                                   .fidelity = SIM_FIDELITY_DEFAULT,
                                   .mode = SIM_COMM_NETWORK,
                                   .size_bytes = size_bytes,
                                   .gpus = members,
                                   .n_gpus = n,
                                   .root = root % n,
                                   .stream = 1};
        rc = sim_coll_add(e, &d, NULL, &colls[n_colls++]);
        if (rc)
            rc = step_fail(s, rc, "step: measuring a %s: %s", model_coll_op_name(op),
                           sim_engine_last_error(e));
    }
    if (!rc && (rc = sim_engine_run(e)))
        rc = step_fail(s, rc, "step: measuring a %s: %s", model_coll_op_name(op), sim_engine_last_error(e));
    sim_time_ps_t first = -1, worst = 0;
    for (int32_t i = 0; i < n_colls && !rc; i++) {
        sim_coll_result_t r;
        sim_coll_result(e, colls[i], &r);
        load->sent_bytes += r.sent_bytes / ((double)n_colls * (double)size);
        const sim_time_ps_t t = r.end_ps - r.start_ps;
        if (first < 0)
            first = t;
        if (t - first > 1 || first - t > 1)
            *agree = 0;
        if (t > worst)
            worst = t;
    }
    *out_s = sim_ps_to_s(worst);
    int32_t used = 0;
    for (int32_t l = 0; l < s->net.n_links && !rc; l++) {
        sim_link_stats_t ls;
        sim_link_stats(e, l, &ls);
        used += ls.bytes > 0.0;
    }
    if (!rc && used > 0) {
        load->links = alloc_malloc((size_t)used * sizeof *load->links);
        load->bytes = alloc_malloc((size_t)used * sizeof *load->bytes);
        if (!load->links || !load->bytes)
            rc = step_fail(s, SIM_ENOMEM, "step: out of memory");
        for (int32_t l = 0; l < s->net.n_links && !rc; l++) {
            sim_link_stats_t ls;
            sim_link_stats(e, l, &ls);
            if (ls.bytes > 0.0) {
                load->links[load->n_links] = l;
                load->bytes[load->n_links++] = ls.bytes;
            }
        }
    }
    free(members);
    free(colls);
    sim_engine_free(e);
    return rc;
}

/* ---- the link report ----------------------------------------------------------------------------- */

/* The measured collective of group g, op, size and root (as step_fixed_time keys it), -1 if none. */
static int32_t key_find(const step_t *s, int g, model_coll_op_t op, double bytes, int root) {
    if (op != MODEL_COLL_BROADCAST && op != MODEL_COLL_REDUCE)
        root = 0;
    for (int32_t i = 0; i < s->n_fixed; i++) {
        const step_fixed_key_t *k = &s->fixed[i];
        if (k->group == g && k->op == (int)op && k->root == root &&
            fabs(k->size_bytes - bytes) <= 1e-12 * fabs(bytes))
            return i;
    }
    return -1;
}

/* Add times x the fixed collectives of one pass of a part (its plan, as step_build runs it) to
 * count[key]. Returns 1 if one of them was never measured. */
static int count_plan(const step_t *s, step_part_t part, int pass, int64_t times, int64_t *count) {
    const step_plan_t *plan = &s->plans[part][pass];
    const double nb = (double)(s->job.par.nb > 0 ? s->job.par.nb : 1);
    for (int k = 0; k < plan->n; k++) {
        const step_seg_t *seg = &plan->seg[k];
        const model_layer_t *ly = step_layer(s, seg->layer0);
        const model_pass_t *ps = pass ? &ly->bwd : &ly->fwd;
        if (seg->kind == STEP_SEG_OVERLAP) { /* in chunks: the same bytes as the whole collectives */
            for (int c = 0; c < ps->n_colls && c < MODEL_MAX_COLLS; c++) {
                const model_coll_t *mc = &ps->colls[c];
                const step_group_t g = step_group_of(mc->group);
                if (!s->fixed_group[g])
                    continue;
                const int32_t key = key_find(s, g, mc->op, mc->volume_gb * 1e9, 0);
                if (key < 0)
                    return 1;
                count[key] += times;
            }
        } else if (seg->kind == STEP_SEG_COLL) {
            const model_coll_t *c = &ps->colls[seg->coll];
            const step_group_t g = step_group_of(c->group);
            if (!s->fixed_group[g])
                continue;
            const int32_t key = key_find(s, g, c->op, c->volume_gb * 1e9, 0);
            if (key < 0)
                return 1;
            count[key] += times;
        } else if (seg->kind == STEP_SEG_SUMMA && s->fixed_group[STEP_GROUP_TP] &&
                   s->fixed_group[STEP_GROUP_CP]) {
            for (int i = 0; i < (int)nb; i++)
                for (int c = 0; c < ps->n_colls && c < MODEL_MAX_COLLS; c++) {
                    const model_coll_t *mc = &ps->colls[c];
                    const int32_t key =
                        key_find(s, step_group_of(mc->group), mc->op, mc->volume_gb / nb * 1e9,
                                 i % (int)(mc->group_size > 0 ? mc->group_size : 1));
                    if (key < 0)
                        return 1;
                    count[key] += times;
                }
        }
    }
    return 0;
}

/* The fixed collectives one simulated GPU of stage p runs, per key, walking its schedule as
 * step_build does (the pipeline all-gather, the edge parts, the blocks of every item). Returns 1 if
 * one of them was never measured, -1 out of memory. */
static int count_stage(const step_t *s, int32_t p, int64_t *count) {
    const int64_t n_items = step_schedule_items(s->cfg.schedule, s->v, s->m);
    step_sched_item_t *items = alloc_malloc((size_t)n_items * sizeof *items);
    if (!items)
        return -1;
    int bad = step_schedule_order(s->cfg.schedule, s->pp, s->v, s->m, p, items) != SIM_OK;
    const int gather = s->job.compat == MODEL_COMPAT_CORRECTED &&
                       s->job.training.sequence_parallel == MODEL_SEQPAR_OFF &&
                       step_group_size(s, STEP_GROUP_TP) > 1;
    const int32_t gather_key =
        gather ? key_find(s, STEP_GROUP_TP, MODEL_COLL_ALLGATHER, s->est.block.output_gb * 1e9, 0) : -1;
    for (int64_t i = 0; i < n_items && !bad; i++) {
        const step_sched_item_t *it = &items[i];
        if (it->pass == 2) /* a W pass (split schedules) runs no collective */
            continue;
        const int vs_first = s->emb && step_vs_first(s, p, it->chunk);
        const int vs_last = s->emb && step_vs_last(s, p, it->chunk);
        /* as step_build: nothing arrives at a path's end, nor at ZB-V's turn of the V (same GPU) */
        const int turn = s->cfg.schedule == STEP_SCHEDULE_ZB_V && p == s->pp - 1 && it->chunk == !it->pass;
        const int receives =
            !(it->pass ? step_vs_last(s, p, it->chunk) : step_vs_first(s, p, it->chunk)) && !turn;
        if (gather && receives && s->fixed_group[STEP_GROUP_TP]) {
            if (gather_key < 0)
                bad = 1;
            else
                count[gather_key]++;
        }
        bad = bad || (vs_first && count_plan(s, STEP_PART_EMBEDDING, it->pass, 1, count)) ||
              (vs_last && count_plan(s, STEP_PART_OUTPUT, it->pass, 1, count)) ||
              count_plan(s, STEP_PART_BLOCK, it->pass, s->chunk_blocks, count);
    }
    free(items);
    return bad;
}

/* Under an exact rail collapse every rail carries what the simulated one does, link for link: its
 * non-tensor links' images under the shifts carry the same bytes, and every tensor group's links
 * the bytes of the collectives its stage runs (counted from the schedule and the plans, each a
 * measured collective's per-link bytes). Returns 0; 1 when a collective was never measured (then
 * the tensor links are left out); -1 out of memory. as_bytes: bytes instead of utilisations. */
static int full_values(const step_t *s, double *util, int as_bytes) {
    const sim_engine_t *e = s->e;
    const int32_t nl = s->net.n_links;
    const double now_s = sim_ps_to_s(sim_engine_now(e));
    const int64_t n0 = s->n[STEP_DIM_TP],
                  n1 = s->job.par.strategy == MODEL_STRATEGY_2D ? s->n[STEP_DIM_CP] : 1;
    for (int32_t l = 0; l < nl; l++) {
        sim_link_stats_t ls;
        sim_link_stats(e, l, &ls);
        if (!(ls.bytes > 0.0))
            continue;
        int32_t a = l;
        for (int64_t i = 0; i < n0 && a >= 0; i++) {
            int32_t b = a;
            for (int64_t j = 0; j < n1 && b >= 0; j++) {
                util[b] = as_bytes ? ls.bytes : ls.utilization;
                b = s->rail_map[1] ? s->rail_map[1][b] : -1;
            }
            a = s->rail_map[0][a];
        }
    }
    if (!(now_s > 0.0) || s->n_fixed == 0)
        return 0;
    /* executions of every fixed key per stage */
    int64_t *count = alloc_calloc((size_t)s->n_fixed * (size_t)s->pp, sizeof *count);
    if (!count)
        return -1;
    int partial = 0;
    for (int32_t p = 0; p < s->pp && !partial; p++)
        partial = count_stage(s, p, count + (int64_t)p * s->n_fixed);
    for (int32_t i = 0; i < s->n_fixed && !partial; i++) {
        const step_fixed_key_t *k = &s->fixed[i];
        const int32_t *owner = s->link_owner[k->group == STEP_GROUP_CP ? 1 : 0];
        for (int32_t j = 0; j < k->n_links && owner; j++) {
            const int32_t l = k->links[j], leader = owner[l];
            if (leader < 0)
                continue;
            int64_t x[STEP_DIM_COUNT];
            step_placement_coords(&s->cfg.placement, &s->job.par, leader, x);
            const double bytes = k->bytes[j] * (double)count[x[STEP_DIM_PP] * s->n_fixed + i];
            util[l] += as_bytes ? bytes : bytes / (s->net.capacity_bytes_per_s[l] * now_s);
        }
    }
    free(count);
    return partial;
}

int32_t step_links_busiest(const step_t *s, int32_t k, int32_t *links, double *utilization, int *partial) {
    *partial = 0;
    if (!s->ran || !s->e || s->cfg.comm != SIM_COMM_NETWORK)
        return 0;
    if (s->level != STEP_RAILS || !s->collapse_exact || !s->rail_map[0])
        return sim_links_busiest(s->e, k, links, utilization);
    double *util = alloc_calloc((size_t)(s->net.n_links > 0 ? s->net.n_links : 1), sizeof *util);
    if (!util)
        return -1;
    const int rc = full_values(s, util, 0);
    if (rc < 0) {
        free(util);
        return -1;
    }
    *partial = rc;
    int32_t n = 0;
    for (int32_t id = 0; id < s->net.n_links && k > 0; id++) {
        const double u = util[id];
        if (!(u > 0.0) || (n == k && u <= utilization[k - 1]))
            continue;
        int32_t i = n < k ? n++ : k - 1;
        for (; i > 0 && u > utilization[i - 1]; i--) {
            links[i] = links[i - 1];
            utilization[i] = utilization[i - 1];
        }
        links[i] = id;
        utilization[i] = u;
    }
    free(util);
    return n;
}

/* ---- bytes per link and per group ---------------------------------------------------------------- */

int step_link_bytes(const step_t *s, double *bytes, int *partial) {
    *partial = 0;
    if (!s->ran || !s->e || s->cfg.comm != SIM_COMM_NETWORK)
        return SIM_ESTATE;
    for (int32_t l = 0; l < s->net.n_links; l++)
        bytes[l] = 0.0;
    if (s->level != STEP_RAILS || !s->collapse_exact || !s->rail_map[0]) {
        for (int32_t l = 0; l < s->net.n_links; l++) {
            sim_link_stats_t ls;
            sim_link_stats(s->e, l, &ls);
            bytes[l] = ls.bytes;
        }
        return SIM_OK;
    }
    const int rc = full_values(s, bytes, 1);
    if (rc < 0)
        return SIM_ENOMEM;
    *partial = rc;
    return SIM_OK;
}

int step_group_traffic(const step_t *s, step_traffic_t *out) {
    memset(out, 0, sizeof *out);
    if (!s->ran || !s->e || s->cfg.comm != SIM_COMM_NETWORK)
        return SIM_ESTATE;
    const sim_engine_t *e = s->e;
    /* the simulated GPUs' collectives, each member's share of its collective's bytes; a simulated
     * GPU stands for gpus / simulated GPUs of the job (identical ranks) */
    double sim_sent[STEP_TRAFFIC_GROUPS] = {0};
    for (sim_op_id_t op = s->op0; op < s->op_end; op++) {
        const sim_coll_id_t c = sim_op_collective(e, op);
        step_op_t info;
        if (c < 0 || step_op(s, op, &info) != SIM_OK || !info.group)
            continue;
        sim_coll_result_t r;
        if (sim_coll_result(e, c, &r) != SIM_OK || r.members < 1)
            continue;
        const int g = strcmp(info.group, "tp") == 0 || strcmp(info.group, "etp") == 0 ? STEP_TRAFFIC_TP
                      : strcmp(info.group, "cp") == 0                                 ? STEP_TRAFFIC_CP
                      : strcmp(info.group, "pp") == 0                                 ? STEP_TRAFFIC_PP
                      : strcmp(info.group, "dp") == 0                                 ? STEP_TRAFFIC_DP
                      : strcmp(info.group, "ep") == 0                                 ? STEP_TRAFFIC_EP
                                                                                      : -1;
        if (g >= 0)
            sim_sent[g] += r.sent_bytes / (double)r.members;
    }
    const double simulated = (double)s->pp * (double)s->per_stage;
    const double scale = simulated > 0 ? (double)s->gpus / simulated : 0.0;
    for (int g = 0; g < STEP_TRAFFIC_GROUPS; g++)
        out->sent_bytes[g] = sim_sent[g] * scale;
    /* collectives taken off the network (a rail collapse): their executions per stage, counted from
     * the schedule, times what one member sends in one (measured on an idle network) */
    if (s->n_fixed > 0) {
        int64_t *count = alloc_calloc((size_t)s->n_fixed * (size_t)s->pp, sizeof *count);
        if (!count)
            return SIM_ENOMEM;
        int bad = 0;
        for (int32_t p = 0; p < s->pp && !bad; p++)
            bad = count_stage(s, p, count + (int64_t)p * s->n_fixed);
        const double per_stage_gpus = (double)s->gpus / (double)s->pp;
        for (int32_t p = 0; p < s->pp && !bad; p++)
            for (int32_t i = 0; i < s->n_fixed; i++) {
                const step_fixed_key_t *k = &s->fixed[i];
                const int g = k->group == STEP_GROUP_CP ? STEP_TRAFFIC_CP : STEP_TRAFFIC_TP;
                out->sent_bytes[g] +=
                    (double)count[(int64_t)p * s->n_fixed + i] * k->sent_bytes * per_stage_gpus;
            }
        free(count);
        if (bad < 0)
            return SIM_ENOMEM;
        out->partial = bad;
    }
    for (int g = 0; g < STEP_TRAFFIC_GROUPS; g++)
        out->per_gpu_bytes[g] = s->gpus > 0 ? out->sent_bytes[g] / (double)s->gpus : 0.0;
    out->has_ep = s->moe;
    return SIM_OK;
}
