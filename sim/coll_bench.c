/* coll_bench.c - nccl-tests for a simulated cluster: G equal, disjoint groups (contiguous or strided
 * over the GPUs selected with gpus_per_node) run one collective at once on a fresh engine; the
 * result is the time until the last group finished, with algbw, busbw and the closed form. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "sim.h"

static int fail(char *err, size_t size, int status, const char *fmt, ...) {
    if (err && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, size, fmt, ap);
        va_end(ap);
    }
    return status;
}

/* The GPUs to use: the first K of every domain, or 0..gpus-1. */
static int select_gpus(const sim_network_desc_t *net, const sim_coll_bench_t *b, int32_t *sel, char *err,
                       size_t size) {
    const int32_t k = b->gpus_per_node, dom = net->gpus_per_domain > 0 ? net->gpus_per_domain : 1;
    if (k < 0 || k > dom)
        return fail(err, size, SIM_EINVAL, "gpus_per_node: %d must be in 0..%d (the NVLink domain)", k, dom);
    if (k > 0 && b->gpus % k)
        return fail(err, size, SIM_EINVAL, "gpus: %d is not a multiple of gpus_per_node %d", b->gpus, k);
    for (int32_t i = 0; i < b->gpus; i++) {
        sel[i] = k > 0 ? (i / k) * dom + i % k : i;
        if (sel[i] >= net->n_gpus)
            return fail(err, size, SIM_EINVAL, "gpus: %d (%d per node) do not fit the topology's %d GPUs",
                        b->gpus, k, net->n_gpus);
    }
    return SIM_OK;
}

static double bus_factor(sim_coll_op_t op, int32_t n) {
    switch (op) {
    case SIM_COLL_ALLREDUCE:
        return 2.0 * (n - 1) / n;
    case SIM_COLL_ALLGATHER:
    case SIM_COLL_REDUCESCATTER:
    case SIM_COLL_ALLTOALL: /* nccl-tests: doc/PERFORMANCE.md */
        return (double)(n - 1) / n;
    default:
        return 1.0;
    }
}

/* Add group g's collective(s); record the id of group 0's first one in *first. */
static int add_group(sim_engine_t *e, const sim_coll_bench_t *b, const int32_t *sel, int32_t g, int32_t m,
                     int32_t *members, sim_coll_id_t *first) {
    const int32_t groups = b->groups > 0 ? b->groups : 1;
    for (int32_t i = 0; i < m; i++)
        members[i] = b->strided ? sel[g + (int64_t)groups * i] : sel[(int64_t)g * m + i];
    sim_coll_desc_t d = {.op = b->op,
                         .algo = b->algo,
                         .fidelity = b->fidelity,
                         .mode = b->mode,
                         .size_bytes = b->size_bytes,
                         .gpus = members,
                         .n_gpus = m,
                         .channels = b->channels,
                         .stream = 1,
                         .name = sim_coll_op_name(b->op),
                         .proto = b->proto};
    sim_coll_id_t id;
    int rc = sim_coll_add(e, &d, NULL, &id);
    if (!rc && g == 0)
        *first = id;
    if (!rc && b->op == SIM_COLL_SENDRECV) { /* the other direction of the pairwise exchange */
        const int32_t back[2] = {members[1], members[0]};
        d.gpus = back;
        d.stream = 2;
        rc = sim_coll_add(e, &d, NULL, NULL);
    }
    return rc;
}

static int check(const sim_coll_bench_t *b, const sim_config_t *cfg, char *err, size_t size) {
    const int32_t groups = b->groups > 0 ? b->groups : 1;
    if (b->gpus < 1 || b->gpus % groups)
        return fail(err, size, SIM_EINVAL, "gpus: %d must be >= 1 and a multiple of groups (%d)", b->gpus,
                    groups);
    if (b->op == SIM_COLL_SENDRECV && b->gpus / groups != 2)
        return fail(err, size, SIM_EINVAL, "groups: sendrecv needs groups of 2 GPUs, got %d",
                    b->gpus / groups);
    if (b->op == SIM_COLL_SENDRECV && cfg && cfg->comm_streams < 2)
        return fail(err, size, SIM_EINVAL, "comm_streams: sendrecv needs 2, got %d", cfg->comm_streams);
    return SIM_OK;
}

int sim_coll_bench_run(const sim_config_t *cfg, const sim_network_desc_t *net, const sim_coll_bench_t *b,
                       sim_coll_bench_result_t *out, char *err, size_t err_size) {
    memset(out, 0, sizeof *out);
    int rc = check(b, cfg, err, err_size);
    if (rc)
        return rc;
    const int32_t groups = b->groups > 0 ? b->groups : 1, m = b->gpus / groups;
    int32_t *sel = alloc_malloc((size_t)b->gpus * sizeof *sel),
            *members = alloc_malloc((size_t)m * sizeof *members);
    sim_engine_t *e = NULL;
    if (!sel || !members) {
        rc = fail(err, err_size, SIM_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = select_gpus(net, b, sel, err, err_size)))
        goto out;
    if ((rc = sim_engine_new(cfg, net, &e, err, err_size)))
        goto out;
    sim_coll_id_t first = 0;
    for (int32_t g = 0; g < groups && !rc; g++)
        rc = add_group(e, b, sel, g, m, members, &first);
    if (!rc)
        rc = sim_engine_run(e);
    if (rc) {
        rc = fail(err, err_size, rc, "%s", sim_engine_last_error(e));
        goto out;
    }
    sim_coll_result_t r;
    sim_coll_result(e, first, &r);
    sim_engine_stats_t st;
    sim_engine_stats(e, &st);
    out->time_s = sim_ps_to_s(sim_engine_now(e));
    out->closed_form_s = r.closed_form_s;
    out->algbw_bytes_per_s = out->time_s > 0.0 ? b->size_bytes / out->time_s : 0.0;
    out->busbw_bytes_per_s = out->algbw_bytes_per_s * bus_factor(b->op, m);
    out->algo = r.algo;
    out->proto = r.proto;
    out->channels = r.channels;
    out->flows = st.flows_started;
    out->events = st.events + st.flow_events;
out:
    sim_engine_free(e);
    free(sel);
    free(members);
    return rc;
}
