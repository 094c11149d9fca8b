/* executor.c - the operation DAG over GPU streams.
 *
 * Each GPU has 1 + comm_streams streams (stream 0 computes). Operations on one stream run in the
 * order they were added, one at a time (CUDA stream semantics); the head of a stream starts once
 * every operation it depends on has ended. Compute operations end after their duration; member
 * operations of a collective "arrive" when they start and all end together when the collective
 * ends (the collective itself starts when its last member arrives: NCCL's implicit barrier).
 * Dependencies are collected as an edge list while the DAG is built and turned into a successor
 * array (CSR) when the run starts, so the run itself never allocates for the DAG. */
#include <stdlib.h>

#include "sim_internal.h"

static sim_stream_t *stream_of(sim_engine_t *e, int32_t gpu, int32_t stream) {
    return &e->streams[(int64_t)gpu * e->streams_per_gpu + stream];
}

static sim_op_info_t op_info(const sim_engine_t *e, int32_t id) {
    const sim_op_t *op = &e->ops[id];
    const sim_op_info_t info = {.op = id,
                                .kind = (sim_op_kind_t)op->kind,
                                .gpu = op->gpu,
                                .stream = op->stream,
                                .coll = op->kind == SIM_OP_COMPUTE ? -1 : (int32_t)op->arg,
                                .name = op->name};
    return info;
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
    sim_op_t *p = realloc(e->ops, (size_t)c * sizeof *p);
    if (!p)
        return SIM_ENOMEM;
    e->ops = p;
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
        sim_op_t *p = realloc(e->ops, (size_t)n_ops * sizeof *p);
        if (!p)
            return sim_i_fail(e, SIM_ENOMEM, "sim_engine_reserve: out of memory for %lld operations",
                              (long long)n_ops);
        e->ops = p;
        e->cap_ops = (int32_t)n_ops;
    }
    if (2 * n_dependencies > e->cap_edges) {
        int32_t *p = realloc(e->edges, (size_t)(2 * n_dependencies) * sizeof *p);
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
    if (sim_i_ops_reserve(e, (int64_t)e->n_ops + 1))
        return sim_i_fail(e, SIM_ENOMEM, "operation: out of memory");
    const int32_t id = e->n_ops++;
    sim_op_t *op = &e->ops[id];
    *op = (sim_op_t){.kind = (uint8_t)kind,
                     .gpu = gpu,
                     .stream = (uint16_t)stream,
                     .arg = kind == SIM_OP_COMPUTE ? dur_ps : coll,
                     .name = name,
                     .next_in_stream = -1,
                     .state = SIM_OPST_WAITING,
                     .t_start = SIM_TIME_NEVER,
                     .t_end = SIM_TIME_NEVER};
    sim_stream_t *s = stream_of(e, gpu, stream);
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
    if (!(duration_s >= 0.0) || duration_s > 9e6)
        return sim_i_fail(e, SIM_EINVAL, "sim_op_compute: duration_s %g must be in 0..9e6", duration_s);
    return sim_i_op_new(e, SIM_OP_COMPUTE, gpu, stream, sim_s_to_ps(duration_s), -1, name, out);
}

int sim_op_depend(sim_engine_t *e, sim_op_id_t op, sim_op_id_t after) {
    if (e->started)
        return sim_i_fail(e, SIM_ESTATE, "sim_op_depend: the run has started");
    if (op < 0 || op >= e->n_ops || after < 0 || after >= e->n_ops || op == after)
        return sim_i_fail(e, SIM_EINVAL, "sim_op_depend: op %d, after %d: unknown or equal ids (0..%d)", op,
                          after, e->n_ops - 1);
    if (sim_i_grow32_raw((void **)&e->edges, &e->cap_edges, 2 * ((int64_t)e->n_edges + 1), sizeof *e->edges))
        return sim_i_fail(e, SIM_ENOMEM, "sim_op_depend: out of memory");
    e->edges[2 * e->n_edges] = op;
    e->edges[2 * e->n_edges + 1] = after;
    e->n_edges++;
    e->ops[op].deps_left++;
    return SIM_OK;
}

int sim_op_times(const sim_engine_t *e, sim_op_id_t op, sim_time_ps_t *start_ps, sim_time_ps_t *end_ps) {
    if (op < 0 || op >= e->n_ops)
        return SIM_EINVAL;
    if (start_ps)
        *start_ps = e->ops[op].t_start;
    if (end_ps)
        *end_ps = e->ops[op].t_end;
    return SIM_OK;
}

sim_coll_id_t sim_op_collective(const sim_engine_t *e, sim_op_id_t op) {
    if (op < 0 || op >= e->n_ops || e->ops[op].kind == SIM_OP_COMPUTE)
        return -1;
    return (sim_coll_id_t)e->ops[op].arg;
}

int32_t sim_op_count(const sim_engine_t *e) {
    return e->n_ops;
}

/* Start the head of a stream if it is free and the head's dependencies are done. */
static void stream_try(sim_engine_t *e, int32_t gpu, int32_t stream) {
    sim_stream_t *s = stream_of(e, gpu, stream);
    if (s->busy || s->head < 0)
        return;
    sim_op_t *op = &e->ops[s->head];
    if (op->deps_left > 0 || op->state != SIM_OPST_WAITING)
        return;
    s->busy = 1;
    op->state = SIM_OPST_RUNNING;
    op->t_start = e->now;
    if (e->has_obs && e->obs.op_start) {
        const sim_op_info_t info = op_info(e, s->head);
        e->obs.op_start(e->obs.ctx, e->now, &info);
    }
    if (op->kind == SIM_OP_COMPUTE) {
        if (sim_i_schedule(e, e->now + op->arg, SIM_EV_OP_END, s->head, 0))
            e->fatal = sim_i_fail(e, SIM_ENOMEM, "executor: out of memory");
    } else {
        sim_i_coll_arrive(e, (int32_t)op->arg);
    }
}

void sim_i_op_end(sim_engine_t *e, int32_t id) {
    sim_op_t *op = &e->ops[id];
    op->state = SIM_OPST_DONE;
    op->t_end = e->now;
    if (e->has_obs && e->obs.op_end) {
        const sim_op_info_t info = op_info(e, id);
        e->obs.op_end(e->obs.ctx, e->now, &info);
    }
    sim_stream_t *s = stream_of(e, op->gpu, op->stream);
    s->busy = 0;
    s->head = op->next_in_stream;
    for (int32_t i = e->succ_off[id]; i < e->succ_off[id + 1]; i++) {
        sim_op_t *next = &e->ops[e->succ[i]];
        if (--next->deps_left == 0)
            stream_try(e, next->gpu, next->stream);
    }
    stream_try(e, op->gpu, op->stream);
}

/* Build the successor CSR and start every stream's head. */
int sim_i_exec_start(sim_engine_t *e) {
    e->started = 1;
    e->succ_off = calloc((size_t)e->n_ops + 1, sizeof *e->succ_off);
    e->succ = malloc(((size_t)e->n_edges + 1) * sizeof *e->succ);
    if (!e->succ_off || !e->succ)
        return sim_i_fail(e, SIM_ENOMEM, "executor: out of memory for %d dependencies", e->n_edges);
    for (int32_t i = 0; i < e->n_edges; i++)
        e->succ_off[e->edges[2 * i + 1] + 1]++;
    for (int32_t i = 0; i < e->n_ops; i++)
        e->succ_off[i + 1] += e->succ_off[i];
    int32_t *fill = calloc((size_t)e->n_ops + 1, sizeof *fill);
    if (!fill)
        return sim_i_fail(e, SIM_ENOMEM, "executor: out of memory");
    /* Successors keep the order the dependencies were added in: determinism. */
    for (int32_t i = 0; i < e->n_edges; i++) {
        const int32_t after = e->edges[2 * i + 1];
        e->succ[e->succ_off[after] + fill[after]++] = e->edges[2 * i];
    }
    free(fill);
    free(e->edges); /* the CSR holds them now */
    e->edges = NULL;
    e->cap_edges = 0;
    for (int32_t g = 0; g < e->n_gpus; g++)
        for (int32_t s = 0; s < e->streams_per_gpu; s++)
            stream_try(e, g, s);
    return SIM_OK;
}

int sim_i_exec_check(sim_engine_t *e) {
    for (int32_t i = 0; i < e->n_ops; i++)
        if (e->ops[i].state != SIM_OPST_DONE)
            return sim_i_fail(
                e, SIM_EDEADLOCK,
                "run ended with operation %d (gpu %d, stream %d, %s) never %s: a dependency cycle or "
                "collective members blocked behind each other",
                i, e->ops[i].gpu, e->ops[i].stream, e->ops[i].name ? e->ops[i].name : "unnamed",
                e->ops[i].state == SIM_OPST_WAITING ? "started" : "ended");
    return SIM_OK;
}
