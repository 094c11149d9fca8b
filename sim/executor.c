/* executor.c - the operation DAG over GPU streams.
 *
 * Each GPU has 1 + comm_streams streams (stream 0 computes). Operations on one stream run in the
 * order they were added, one at a time (CUDA stream semantics); the head of a stream starts once
 * every operation it depends on has ended. Compute operations end after their duration; member
 * operations of a collective "arrive" when they start and all end together when the collective
 * ends (the collective itself starts when its last member arrives: NCCL's implicit barrier).
 * Dependencies are kept per operation as its first successor (4 bytes) and, for the few with more, a
 * list of the others (8 bytes per further dependency), so the run never allocates for the DAG. */
#include <stdlib.h>

#include "alloc.h"
#include "sim_internal.h"

static sim_stream_t *stream_at(sim_engine_t *e, int32_t gs) {
    return &e->streams[gs];
}

static int op_done(const sim_op_t *op) {
    return op->t_end >= 0;
}

static sim_op_kind_t op_kind(const sim_engine_t *e, int32_t id) {
    const sim_op_t *op = &e->ops[id];
    if (op->coll < 0)
        return SIM_OP_COMPUTE;
    const sim_coll_inst_t *in = &e->colls[op->coll];
    if (e->plans[in->plan].op != SIM_COLL_SENDRECV)
        return SIM_OP_COLLECTIVE;
    return id == in->first_op ? SIM_OP_SEND : SIM_OP_RECV;
}

static sim_op_info_t op_info(const sim_engine_t *e, int32_t id) {
    const sim_op_t *op = &e->ops[id];
    const sim_op_info_t info = {.op = id,
                                .kind = op_kind(e, id),
                                .gpu = op->gs / e->streams_per_gpu,
                                .stream = op->gs % e->streams_per_gpu,
                                .coll = op->coll,
                                .name = e->names ? e->names[op->name & SIM_OP_NAME_MASK] : NULL};
    return info;
}

static uint64_t name_hash(const char *name) {
    uint64_t h = (uint64_t)(uintptr_t)name * 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 32);
}

/* The index of name (a pointer: names are borrowed, equal pointers are one name), added if new;
 * -1 when out of memory or past SIM_OP_MAX_NAMES. */
static int32_t name_index(sim_engine_t *e, const char *name) {
    if (!name)
        return 0;
    if (e->last_name > 0 && e->names[e->last_name] == name)
        return e->last_name;
    for (uint64_t i = e->name_tab_cap ? name_hash(name) & (uint64_t)(e->name_tab_cap - 1) : 0;
         e->name_tab_cap && e->name_tab[i]; i = (i + 1) & (uint64_t)(e->name_tab_cap - 1))
        if (e->names[e->name_tab[i]] == name)
            return e->last_name = e->name_tab[i];
    if (e->n_names > SIM_OP_MAX_NAMES) /* indices 1..SIM_OP_MAX_NAMES are taken */
        return -1;
    if (2 * (e->n_names + 1) > e->name_tab_cap) {
        const int32_t cap = e->name_tab_cap ? 2 * e->name_tab_cap : 64;
        uint16_t *tab = alloc_calloc((size_t)cap, sizeof *tab);
        const char **names = alloc_realloc(e->names, (size_t)(cap / 2 + 1) * sizeof *names);
        if (names)
            e->names = names;
        if (!tab || !names) {
            free(tab);
            return -1;
        }
        if (e->n_names == 0) {
            e->names[0] = NULL;
            e->n_names = 1;
        }
        for (int32_t k = 1; k < e->n_names; k++) {
            uint64_t i = name_hash(e->names[k]) & (uint64_t)(cap - 1);
            while (tab[i])
                i = (i + 1) & (uint64_t)(cap - 1);
            tab[i] = (uint16_t)k;
        }
        free(e->name_tab);
        e->name_tab = tab;
        e->name_tab_cap = cap;
    }
    uint64_t i = name_hash(name) & (uint64_t)(e->name_tab_cap - 1);
    while (e->name_tab[i] && e->names[e->name_tab[i]] != name)
        i = (i + 1) & (uint64_t)(e->name_tab_cap - 1);
    if (!e->name_tab[i]) {
        e->names[e->n_names] = name;
        e->name_tab[i] = (uint16_t)e->n_names++;
    }
    e->last_name = e->name_tab[i];
    return e->last_name;
}

int sim_i_ops_reserve(sim_engine_t *e, int64_t need) {
    if (need <= e->cap_ops)
        return SIM_OK;
    if (need > INT32_MAX)
        return SIM_ENOMEM;
    int64_t c = e->cap_ops > 0 ? e->cap_ops : 1024;
    while (c < need)
        c *= 2;
    if (c > INT32_MAX)
        c = INT32_MAX;
    sim_op_t *p = alloc_realloc(e->ops, (size_t)c * sizeof *p);
    if (p)
        e->ops = p;
    int32_t *h = p ? alloc_realloc(e->succ, (size_t)c * sizeof *h) : NULL;
    if (!h)
        return SIM_ENOMEM;
    e->succ = h;
    e->cap_ops = (int32_t)c;
    return SIM_OK;
}

int sim_engine_reserve(sim_engine_t *e, int64_t n_ops, int64_t n_dependencies) {
    if (e->started)
        return sim_i_fail(e, SIM_ESTATE, "sim_engine_reserve: the run has started");
    if (n_ops < 0 || n_ops > INT32_MAX || n_dependencies < 0 || n_dependencies > INT32_MAX / 2)
        return sim_i_fail(e, SIM_EINVAL,
                          "sim_engine_reserve: %lld operations, %lld dependencies: out of range",
                          (long long)n_ops, (long long)n_dependencies);
    if (n_ops > e->cap_ops) {
        sim_op_t *p = alloc_realloc(e->ops, (size_t)n_ops * sizeof *p);
        if (p)
            e->ops = p;
        int32_t *h = p ? alloc_realloc(e->succ, (size_t)n_ops * sizeof *h) : NULL;
        if (!h)
            return sim_i_fail(e, SIM_ENOMEM, "sim_engine_reserve: out of memory for %lld operations",
                              (long long)n_ops);
        e->succ = h;
        e->cap_ops = (int32_t)n_ops;
    }
    if (2 * n_dependencies > e->cap_edges) {
        int32_t *p = alloc_realloc(e->edges, (size_t)(2 * n_dependencies) * sizeof *p);
        if (!p)
            return sim_i_fail(e, SIM_ENOMEM, "sim_engine_reserve: out of memory for %lld dependencies",
                              (long long)n_dependencies);
        e->edges = p;
        e->cap_edges = (int32_t)(2 * n_dependencies);
    }
    return SIM_OK;
}

int sim_i_op_new(sim_engine_t *e, sim_op_kind_t kind, int32_t gpu, int32_t stream, sim_time_ps_t dur_ps,
                 int32_t coll, const char *name, sim_op_id_t *out) {
    if (e->started)
        return sim_i_fail(e, SIM_ESTATE, "operations cannot be added after the run has started");
    if (gpu < 0 || gpu >= e->n_gpus)
        return sim_i_fail(e, SIM_EINVAL, "operation: gpu %d is not in 0..%d", gpu, e->n_gpus - 1);
    if (stream < 0 || stream >= e->streams_per_gpu)
        return sim_i_fail(e, SIM_EINVAL, "operation: stream %d is not in 0..%d", stream,
                          e->streams_per_gpu - 1);
    if (e->n_ops == INT32_MAX)
        return sim_i_fail(e, SIM_ENOMEM, "operation: too many operations");
    const int32_t name_id = name_index(e, name);
    if (name_id < 0)
        return sim_i_fail(e, SIM_ENOMEM, "operation: out of memory for names (at most %d distinct)",
                          SIM_OP_MAX_NAMES);
    if (sim_i_ops_reserve(e, (int64_t)e->n_ops + 1))
        return sim_i_fail(e, SIM_ENOMEM, "operation: out of memory");
    const int32_t id = e->n_ops++;
    const int32_t gs = gpu * e->streams_per_gpu + stream;
    e->ops[id] = (sim_op_t){.gs = gs,
                            .next_in_stream = -1,
                            .coll = kind == SIM_OP_COMPUTE ? -1 : coll,
                            .deps_left = 0,
                            .name = (uint16_t)name_id,
                            .t_start = SIM_TIME_NEVER,
                            .t_end = kind == SIM_OP_COMPUTE ? -1 - dur_ps : -1};
    e->succ[id] = -1;
    sim_stream_t *s = stream_at(e, gs);
    if (s->tail >= 0)
        e->ops[s->tail].next_in_stream = id;
    else
        s->head = id;
    s->tail = id;
    if (out)
        *out = id;
    return SIM_OK;
}

int sim_op_compute(sim_engine_t *e, int32_t gpu, int32_t stream, double duration_s, const char *name,
                   sim_op_id_t *out) {
    if (!(duration_s >= 0.0) || duration_s > SIM_OP_MAX_S)
        return sim_i_fail(e, SIM_EINVAL, "sim_op_compute: duration_s %g must be in 0..%g", duration_s,
                          SIM_OP_MAX_S);
    return sim_i_op_new(e, SIM_OP_COMPUTE, gpu, stream, sim_s_to_ps(duration_s), -1, name, out);
}

/* The slot of operation op in the table of further successors, or the empty slot where it goes. */
static int64_t more_slot(const sim_engine_t *e, int32_t op) {
    const uint64_t mask = (uint64_t)e->more_cap - 1;
    uint64_t i = ((uint64_t)(uint32_t)op * 0x9e3779b97f4a7c15ULL >> 20) & mask;
    while (e->more[2 * i] >= 0 && e->more[2 * i] != op)
        i = (i + 1) & mask;
    return (int64_t)i;
}

/* Room for one more operation in the table (SIM_OK or SIM_ENOMEM). */
static int more_grow(sim_engine_t *e) {
    if (2 * (e->more_n + 1) <= e->more_cap)
        return SIM_OK;
    const int64_t old_cap = e->more_cap, cap = old_cap ? 2 * old_cap : 1024;
    int32_t *old = e->more, *tab = alloc_malloc((size_t)cap * 2 * sizeof *tab);
    if (!tab)
        return SIM_ENOMEM;
    for (int64_t i = 0; i < cap; i++)
        tab[2 * i] = -1;
    e->more = tab;
    e->more_cap = cap;
    for (int64_t i = 0; i < old_cap; i++)
        if (old[2 * i] >= 0) {
            const int64_t k = more_slot(e, old[2 * i]);
            tab[2 * k] = old[2 * i];
            tab[2 * k + 1] = old[2 * i + 1];
        }
    free(old);
    return SIM_OK;
}

int sim_op_depend(sim_engine_t *e, sim_op_id_t op, sim_op_id_t after) {
    if (e->started)
        return sim_i_fail(e, SIM_ESTATE, "sim_op_depend: the run has started");
    if (op < 0 || op >= e->n_ops || after < 0 || after >= e->n_ops || op == after)
        return sim_i_fail(e, SIM_EINVAL, "sim_op_depend: op %d, after %d: unknown or equal ids (0..%d)", op,
                          after, e->n_ops - 1);
    if (e->ops[after].gs == e->ops[op].gs && after < op)
        return SIM_OK; /* implied: a stream runs its operations in the order they were added */
    if (e->ops[op].deps_left == SIM_OP_MAX_DEPS)
        return sim_i_fail(e, SIM_EINVAL,
                          "sim_op_depend: op %d already has %d dependencies; allowed: at most %d", op,
                          SIM_OP_MAX_DEPS, SIM_OP_MAX_DEPS);
    if (e->succ[after] < 0) { /* the first successor is kept with the operation */
        e->succ[after] = op;
    } else {
        const int fresh = !(e->ops[after].name & SIM_OP_MORE);
        if (e->n_edges == INT32_MAX / 2 ||
            sim_i_grow32_raw((void **)&e->edges, &e->cap_edges, 2 * ((int64_t)e->n_edges + 1),
                             sizeof *e->edges) ||
            (fresh && more_grow(e)))
            return sim_i_fail(e, SIM_ENOMEM, "sim_op_depend: out of memory");
        const int64_t k = more_slot(e, after);
        if (fresh) {
            e->ops[after].name |= SIM_OP_MORE;
            e->more[2 * k] = after;
            e->more[2 * k + 1] = -1;
            e->more_n++;
        }
        e->edges[2 * e->n_edges] = op;
        e->edges[2 * e->n_edges + 1] = e->more[2 * k + 1];
        e->more[2 * k + 1] = e->n_edges++;
    }
    e->ops[op].deps_left++;
    return SIM_OK;
}

int sim_op_times(const sim_engine_t *e, sim_op_id_t op, sim_time_ps_t *start_ps, sim_time_ps_t *end_ps) {
    if (op < 0 || op >= e->n_ops)
        return SIM_EINVAL;
    if (start_ps)
        *start_ps = e->ops[op].t_start;
    if (end_ps)
        *end_ps = op_done(&e->ops[op]) ? e->ops[op].t_end : SIM_TIME_NEVER;
    return SIM_OK;
}

int32_t sim_op_gpu(const sim_engine_t *e, sim_op_id_t op) {
    return op < 0 || op >= e->n_ops ? -1 : e->ops[op].gs / e->streams_per_gpu;
}

sim_coll_id_t sim_op_collective(const sim_engine_t *e, sim_op_id_t op) {
    return op < 0 || op >= e->n_ops ? -1 : e->ops[op].coll;
}

int32_t sim_op_count(const sim_engine_t *e) {
    return e->n_ops;
}

/* Start the head of stream gs if it is free and the head's dependencies are done. */
static void stream_try(sim_engine_t *e, int32_t gs) {
    sim_stream_t *s = stream_at(e, gs);
    if (s->busy || s->head < 0)
        return;
    sim_op_t *op = &e->ops[s->head];
    if (op->deps_left > 0 || op->t_start != SIM_TIME_NEVER)
        return;
    s->busy = 1;
    op->t_start = e->now;
    if (e->has_obs && e->obs.op_start) {
        const sim_op_info_t info = op_info(e, s->head);
        e->obs.op_start(e->obs.ctx, e->now, &info);
    }
    if (op->coll < 0) {
        if (sim_i_schedule(e, e->now + (-1 - op->t_end), SIM_EV_OP_END, s->head, 0))
            e->fatal = sim_i_fail(e, SIM_ENOMEM, "executor: out of memory");
    } else {
        sim_i_coll_arrive(e, op->coll);
    }
}

/* One dependency of operation k has ended. */
static void release(sim_engine_t *e, int32_t k) {
    sim_op_t *next = &e->ops[k];
    if (--next->deps_left == 0)
        stream_try(e, next->gs);
}

void sim_i_op_end(sim_engine_t *e, int32_t id) {
    sim_op_t *op = &e->ops[id];
    op->t_end = e->now;
    e->ops_done++;
    if (e->has_obs && e->obs.op_end) {
        const sim_op_info_t info = op_info(e, id);
        e->obs.op_end(e->obs.ctx, e->now, &info);
    }
    sim_stream_t *s = stream_at(e, op->gs);
    s->busy = 0;
    s->head = op->next_in_stream;
    if (e->succ[id] >= 0) { /* the others only exist after a first */
        const int more = op->name & SIM_OP_MORE;
        release(e, e->succ[id]);
        for (int32_t i = more ? e->more[2 * more_slot(e, id) + 1] : -1; i >= 0; i = e->edges[2 * i + 1])
            release(e, e->edges[2 * i]);
    }
    stream_try(e, op->gs);
}

/* Put every successor list in the order its dependencies were added (determinism) and start every
 * stream's head. */
int sim_i_exec_start(sim_engine_t *e) {
    e->started = 1;
    for (int64_t k = 0; k < e->more_cap; k++) {
        if (e->more[2 * k] < 0)
            continue;
        int32_t prev = -1, i = e->more[2 * k + 1];
        while (i >= 0) {
            const int32_t next = e->edges[2 * i + 1];
            e->edges[2 * i + 1] = prev;
            prev = i;
            i = next;
        }
        e->more[2 * k + 1] = prev;
    }
    for (int32_t gs = 0; gs < e->n_gpus * e->streams_per_gpu; gs++)
        stream_try(e, gs);
    return SIM_OK;
}

int sim_i_exec_check(sim_engine_t *e) {
    for (int32_t i = 0; i < e->n_ops; i++)
        if (!op_done(&e->ops[i])) {
            const sim_op_info_t info = op_info(e, i);
            return sim_i_fail(
                e, SIM_EDEADLOCK,
                "run ended with operation %d (gpu %d, stream %d, %s) never %s: a dependency cycle or "
                "collective members blocked behind each other",
                i, info.gpu, info.stream, info.name ? info.name : "unnamed",
                e->ops[i].t_start == SIM_TIME_NEVER ? "started" : "ended");
        }
    return SIM_OK;
}

int sim_op_describe(const sim_engine_t *e, sim_op_id_t id, sim_op_desc_t *out) {
    if (id < 0 || id >= e->n_ops)
        return SIM_EINVAL;
    const sim_op_t *op = &e->ops[id];
    const sim_op_info_t info = op_info(e, id);
    out->kind = info.kind;
    out->gpu = info.gpu;
    out->stream = info.stream;
    out->coll = info.coll;
    out->name = info.name;
    out->member = op->coll >= 0 ? id - e->colls[op->coll].first_op : -1;
    out->duration_s = -1.0;
    if (op->coll < 0)
        out->duration_s = sim_ps_to_s(op_done(op) ? op->t_end - op->t_start : -1 - op->t_end);
    return SIM_OK;
}

int32_t sim_op_successors(const sim_engine_t *e, sim_op_id_t id, sim_op_id_t *out, int32_t cap) {
    if (id < 0 || id >= e->n_ops)
        return -1;
    int32_t n = 0;
    if (e->succ[id] >= 0) {
        if (n < cap)
            out[n] = e->succ[id];
        n++;
    }
    if (e->ops[id].name & SIM_OP_MORE)
        for (int32_t i = e->more[2 * more_slot(e, id) + 1]; i >= 0; i = e->edges[2 * i + 1]) {
            if (n < cap)
                out[n] = e->edges[2 * i];
            n++;
        }
    return n;
}
