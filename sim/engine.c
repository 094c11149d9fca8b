/* engine.c - the engine object and its main loop.
 *
 * The loop takes the earliest item of two heaps, the event queue (operation ends, collective
 * timers, delayed flow starts) and the flow heap (latency ends, completions), ordered by (time,
 * seq) with seq drawn from one per-engine counter. It processes every item of one timestamp, then
 * runs one batched max-min re-solve if any link changed, and moves on. Nothing here depends on
 * pointer values or hash order, so the same input gives the same run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "sim_internal.h"

const char *sim_status_name(int status) {
    switch (status) {
    case SIM_OK:
        return "ok";
    case SIM_EINVAL:
        return "invalid argument";
    case SIM_ENOMEM:
        return "out of memory";
    case SIM_ESTATE:
        return "not allowed in this state";
    case SIM_EDEADLOCK:
        return "deadlock";
    default:
        return "unknown status";
    }
}

sim_time_ps_t sim_s_to_ps(double s) {
    const double ps = nearbyint(s * (double)SIM_PS_PER_S);
    if (!(ps < 9.2e18))
        return SIM_TIME_NEVER;
    return (sim_time_ps_t)ps;
}

double sim_ps_to_s(sim_time_ps_t ps) {
    return (double)ps / (double)SIM_PS_PER_S;
}

int sim_i_fail(sim_engine_t *e, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->err, sizeof e->err, fmt, ap);
    va_end(ap);
    return status;
}

static int grow(void **arr, int64_t *cap, int64_t need, size_t elem, int zero) {
    const int64_t old = *cap;
    if (alloc_grow(arr, cap, need, elem))
        return SIM_ENOMEM;
    if (zero && *cap > old)
        memset((char *)*arr + (size_t)old * elem, 0, (size_t)(*cap - old) * elem);
    return SIM_OK;
}

/* Grow *arr to hold at least `need` elements, doubling; new memory is zeroed. */
int sim_i_grow(void **arr, int64_t *cap, int64_t need, size_t elem) {
    return grow(arr, cap, need, elem, 1);
}

static int grow32(void **arr, int32_t *cap, int64_t need, size_t elem, int zero) {
    if (need > INT32_MAX)
        return SIM_ENOMEM;
    int64_t c = *cap;
    if (grow(arr, &c, need, elem, zero))
        return SIM_ENOMEM;
    *cap = c < INT32_MAX ? (int32_t)c : INT32_MAX; /* the array may hold more than it says */
    return SIM_OK;
}

int sim_i_grow32_slow(void **arr, int32_t *cap, int64_t need, size_t elem) {
    return grow32(arr, cap, need, elem, 1);
}

int sim_i_grow32_raw(void **arr, int32_t *cap, int64_t need, size_t elem) {
    return need <= *cap ? SIM_OK : grow32(arr, cap, need, elem, 0);
}

int sim_i_schedule(sim_engine_t *e, sim_time_ps_t t, int32_t kind, int32_t a, int64_t b) {
    const sim_event_t ev = {.time_ps = t, .seq = e->seq++, .kind = kind, .a = a, .b = b};
    return sim_i_queue_push_seq(e->q, &ev);
}

void sim_config_default(sim_config_t *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->comm_streams = 2;
    cfg->seed = 1;
    cfg->chunk_bytes = 512.0 * 1024.0;
    cfg->link_efficiency = 1.0;
    cfg->fidelity = SIM_FIDELITY_FAST;
    cfg->comm_mode = SIM_COMM_NETWORK;
    cfg->compat = MODEL_COMPAT_CORRECTED;
    for (int k = 0; k < SIM_LINK_KIND_COUNT; k++)
        cfg->link_kind_efficiency[k] = 1.0;
    for (int p = SIM_PROTO_SIMPLE; p < SIM_PROTO_COUNT; p++) {
        sim_proto_params_t *pp = &cfg->proto[p];
        pp->enabled = pp->network = p == SIM_PROTO_SIMPLE;
        pp->efficiency[0] = pp->efficiency[1] = 1.0;
    }
    cfg->ring_latency = SIM_RING_LATENCY_SLOWEST;
    cfg->single_member_efficiency = 1.0;
    cfg->nvls_efficiency = 1.0;
    cfg->collnet_efficiency = 1.0;
}

/* NCCL's tuner constants (src/graph/tuning.cc, NCCL 2.19 to 2.28), in microseconds and GB/s.
 * Index: [protocol LL, LL128, Simple] and [ring, tree]. */
static const double NCCL_BASE_US[3][2] = {{6.6, 6.8}, {14.0, 14.0}, {8.4, 8.4}};  /* baseLat */
static const double NCCL_NVLINK_US[3][2] = {{0.6, 0.6}, {1.9, 1.25}, {3.4, 4.0}}; /* hwLat NVLink */
static const double NCCL_NET_US[3][2] = {{2.7, 5.0}, {4.0, 8.5}, {14.0, 14.0}};   /* hwLat NET */
/* Ring LL: busBw x 0.5; LL128: x 0.92 (120/128); tree: x 0.92, LL x 1/3.8, LL128 x 0.92 x 120/128. */
static const double NCCL_EFF[3][2] = {{0.5, 0.92 / 3.8}, {0.92, 0.92 * 120.0 / 128.0}, {1.0, 0.92}};

void sim_config_nccl(sim_config_t *cfg, const sim_nccl_platform_t *pl) {
    static const sim_proto_t protos[3] = {SIM_PROTO_LL, SIM_PROTO_LL128, SIM_PROTO_SIMPLE};
    const int hopper = pl->sm >= 90;
    /* getNetOverhead: 2 us on AMD hosts, 1 us otherwise. Simple pays it again for the flush. */
    const double overhead_us = pl->amd_host ? 2.0 : 1.0;
    for (int i = 0; i < 3; i++) {
        sim_proto_params_t *pp = &cfg->proto[protos[i]];
        const int simple = protos[i] == SIM_PROTO_SIMPLE;
        pp->enabled = 1;
        pp->network = protos[i] != SIM_PROTO_LL128 || pl->ll128_network;
        for (int a = 0; a < 2; a++) {
            pp->launch_s[a] = NCCL_BASE_US[i][a] * 1e-6;
            pp->nvlink_step_s[a] = NCCL_NVLINK_US[i][a] * 1e-6;
            pp->net_step_s[a] = (NCCL_NET_US[i][a] + overhead_us * (simple ? 2.0 : 1.0)) * 1e-6;
            pp->efficiency[a] = NCCL_EFF[i][a];
        }
        /* "Inter-node rings still have to launch nsteps * net overhead", 3x for Simple. */
        pp->crossing_nvlink_step_min_s = overhead_us * (simple ? 3.0 : 1.0) * 1e-6;
        pp->max_busbw_bytes_per_s[0] = pp->max_busbw_bytes_per_s[1] = 0.0;
    }
    /* llMaxBws: one node by GPU (Ampere 87.7, Hopper 141 GB/s), several nodes by CPU (AMD 19.0,
     * Intel 20.4 GB/s beyond two nodes). */
    cfg->proto[SIM_PROTO_LL].max_busbw_bytes_per_s[0] = (hopper ? 141.0 : 87.7) * 1e9;
    cfg->proto[SIM_PROTO_LL].max_busbw_bytes_per_s[1] = (pl->amd_host ? 19.0 : 20.4) * 1e9;
    cfg->ring_latency = SIM_RING_LATENCY_MEAN;
    /* NCCL's tuner before 2.19: LL128 busBw x (ppn < 2 ? 0.7 : 0.92), "sending/receiving at the same
     * GPU through the NIC". */
    cfg->single_member_efficiency = 0.7 / 0.92;
    cfg->tree_chunk_min_bytes = 128.0 * 1024.0;
    /* NCCL's model of one NVLink (topo.h): SM80 20.0, SM90 20.6 GB/s of the 25 GB/s line rate. */
    cfg->link_kind_efficiency[SIM_LINK_NVLINK] = (hopper ? 20.6 : 20.0) / 25.0;
    /* NVLink SHARP (NCCL 2.17+ on sm90 and later with an NVSwitch): nvlsEfficiency (Hopper 0.85,
     * Blackwell 0.74), hwLat NVLink NVLS Simple 25 us with baseLat 0. */
    cfg->nvls = hopper;
    cfg->nvls_efficiency = pl->sm >= 100 ? 0.74 : hopper ? 0.85 : 1.0;
    cfg->nvls_step_s = hopper ? 25e-6 : 0.0;
    /* CollNet Direct (left off: NCCL needs its SHARP plugin and NCCL_COLLNET_ENABLE=1): busBw x 0.85 on
     * sm90+; hwLat NET CollNetDirect Simple 31 us plus the network overhead twice (flush). */
    cfg->collnet_efficiency = hopper ? 0.85 : 1.0;
    cfg->collnet_step_s = (31.0 + 2.0 * overhead_us) * 1e-6;
}

const char *sim_proto_name(sim_proto_t proto) {
    static const char *const names[SIM_PROTO_COUNT] = {"auto", "simple", "ll", "ll128"};
    return (unsigned)proto < SIM_PROTO_COUNT ? names[proto] : "unknown";
}

int sim_proto_parse(const char *name, sim_proto_t *out) {
    for (int p = 0; p < SIM_PROTO_COUNT; p++)
        if (name && strcmp(name, sim_proto_name((sim_proto_t)p)) == 0) {
            *out = (sim_proto_t)p;
            return SIM_OK;
        }
    return SIM_EINVAL;
}

static int check_proto(sim_engine_t *e, const sim_config_t *c) {
    static const char *const arrays[3] = {"launch_s", "nvlink_step_s", "net_step_s"};
    for (int p = SIM_PROTO_SIMPLE; p < SIM_PROTO_COUNT; p++) {
        const sim_proto_params_t *pp = &c->proto[p];
        const char *name = sim_proto_name((sim_proto_t)p);
        for (int a = 0; a < 2; a++) {
            const double t[3] = {pp->launch_s[a], pp->nvlink_step_s[a], pp->net_step_s[a]};
            for (int k = 0; k < 3; k++)
                if (!(t[k] >= 0.0 && t[k] <= SIM_LINK_LATENCY_MAX_S))
                    return sim_i_fail(e, SIM_EINVAL, "config: proto[%s].%s[%d] %g must be in [0, %g] s", name,
                                      arrays[k], a, t[k], SIM_LINK_LATENCY_MAX_S);
            if (!(pp->efficiency[a] > 0.0 && pp->efficiency[a] <= 1.0))
                return sim_i_fail(e, SIM_EINVAL, "config: proto[%s].efficiency[%d] %g must be in (0, 1]",
                                  name, a, pp->efficiency[a]);
            if (!(pp->max_busbw_bytes_per_s[a] >= 0.0) || !isfinite(pp->max_busbw_bytes_per_s[a]))
                return sim_i_fail(e, SIM_EINVAL,
                                  "config: proto[%s].max_busbw_bytes_per_s[%d] %g must be >= 0", name, a,
                                  pp->max_busbw_bytes_per_s[a]);
        }
        if (!(pp->crossing_nvlink_step_min_s >= 0.0) || !isfinite(pp->crossing_nvlink_step_min_s))
            return sim_i_fail(e, SIM_EINVAL, "config: proto[%s].crossing_nvlink_step_min_s %g must be >= 0",
                              name, pp->crossing_nvlink_step_min_s);
    }
    if (!c->proto[SIM_PROTO_SIMPLE].enabled && !c->proto[SIM_PROTO_LL].enabled &&
        !c->proto[SIM_PROTO_LL128].enabled)
        return sim_i_fail(e, SIM_EINVAL, "config: proto: no protocol is enabled");
    return SIM_OK;
}

static int check_config(sim_engine_t *e, const sim_config_t *c, const sim_network_desc_t *net) {
    if (c->comm_streams < 1 || c->comm_streams > 64)
        return sim_i_fail(e, SIM_EINVAL, "config: comm_streams %d must be in 1..64", c->comm_streams);
    if (!(c->step_overhead_s >= 0.0 && c->step_overhead_s <= SIM_LINK_LATENCY_MAX_S))
        return sim_i_fail(e, SIM_EINVAL, "config: step_overhead_s %g must be in [0, %g] s",
                          c->step_overhead_s, SIM_LINK_LATENCY_MAX_S);
    if (!(c->link_efficiency > 0.0 && c->link_efficiency <= 1.0))
        return sim_i_fail(e, SIM_EINVAL, "config: link_efficiency %g must be in (0, 1]", c->link_efficiency);
    if (!(c->chunk_bytes >= 1.0) || !isfinite(c->chunk_bytes))
        return sim_i_fail(e, SIM_EINVAL, "config: chunk_bytes %g must be >= 1", c->chunk_bytes);
    if (c->fidelity != SIM_FIDELITY_STEP && c->fidelity != SIM_FIDELITY_FAST)
        return sim_i_fail(e, SIM_EINVAL, "config: fidelity %d must be step or fast", (int)c->fidelity);
    for (int k = 0; k < SIM_LINK_KIND_COUNT; k++)
        if (!(c->link_kind_efficiency[k] > 0.0 && c->link_kind_efficiency[k] <= 1.0))
            return sim_i_fail(e, SIM_EINVAL, "config: link_kind_efficiency[%d] %g must be in (0, 1]", k,
                              c->link_kind_efficiency[k]);
    if (!(c->single_member_efficiency > 0.0 && c->single_member_efficiency <= 1.0))
        return sim_i_fail(e, SIM_EINVAL, "config: single_member_efficiency %g must be in (0, 1]",
                          c->single_member_efficiency);
    if (!(c->tree_chunk_min_bytes >= 0.0) || !isfinite(c->tree_chunk_min_bytes))
        return sim_i_fail(e, SIM_EINVAL, "config: tree_chunk_min_bytes %g must be >= 0",
                          c->tree_chunk_min_bytes);
    if (c->ring_latency != SIM_RING_LATENCY_SLOWEST && c->ring_latency != SIM_RING_LATENCY_MEAN)
        return sim_i_fail(e, SIM_EINVAL, "config: ring_latency %d must be slowest or mean",
                          (int)c->ring_latency);
    if (c->nvls != 0 && c->nvls != 1)
        return sim_i_fail(e, SIM_EINVAL, "config: nvls %d must be 0 or 1", c->nvls);
    if (!(c->nvls_efficiency > 0.0 && c->nvls_efficiency <= 1.0))
        return sim_i_fail(e, SIM_EINVAL, "config: nvls_efficiency %g must be in (0, 1]", c->nvls_efficiency);
    if (!(c->nvls_step_s >= 0.0 && c->nvls_step_s <= SIM_LINK_LATENCY_MAX_S))
        return sim_i_fail(e, SIM_EINVAL, "config: nvls_step_s %g must be in [0, %g] s", c->nvls_step_s,
                          SIM_LINK_LATENCY_MAX_S);
    if (c->collnet != 0 && c->collnet != 1)
        return sim_i_fail(e, SIM_EINVAL, "config: collnet %d must be 0 or 1", c->collnet);
    if (!(c->collnet_efficiency > 0.0 && c->collnet_efficiency <= 1.0))
        return sim_i_fail(e, SIM_EINVAL, "config: collnet_efficiency %g must be in (0, 1]",
                          c->collnet_efficiency);
    if (!(c->collnet_step_s >= 0.0 && c->collnet_step_s <= SIM_LINK_LATENCY_MAX_S))
        return sim_i_fail(e, SIM_EINVAL, "config: collnet_step_s %g must be in [0, %g] s", c->collnet_step_s,
                          SIM_LINK_LATENCY_MAX_S);
    const int prc = check_proto(e, c);
    if (prc)
        return prc;
    if (!net || net->n_gpus < 1 || net->n_links < 0 || (net->n_links > 0 && !net->capacity_bytes_per_s) ||
        (net->n_links > 0 && !net->latency_s) || !net->route)
        return sim_i_fail(e, SIM_EINVAL,
                          "network: n_gpus %d must be >= 1 with link arrays and a route function",
                          net ? net->n_gpus : 0);
    if (net->gpus_per_domain < 0)
        return sim_i_fail(e, SIM_EINVAL, "network: gpus_per_domain %d must be >= 1", net->gpus_per_domain);
    return SIM_OK;
}

int sim_engine_new(const sim_config_t *cfg, const sim_network_desc_t *net, sim_engine_t **out, char *err,
                   size_t err_size) {
    *out = NULL;
    if (err && err_size)
        err[0] = '\0';
    sim_engine_t *e = alloc_calloc(1, sizeof *e);
    if (!e) {
        if (err && err_size)
            snprintf(err, err_size, "engine: out of memory");
        return SIM_ENOMEM;
    }
    sim_config_t def;
    sim_config_default(&def);
    e->cfg = cfg ? *cfg : def;
    int rc = check_config(e, &e->cfg, net);
    if (rc)
        goto fail;
    e->n_gpus = net->n_gpus;
    e->gpus_per_domain = net->gpus_per_domain > 0 ? net->gpus_per_domain : 1;
    e->streams_per_gpu = 1 + e->cfg.comm_streams;
    if ((int64_t)e->n_gpus * e->streams_per_gpu > INT32_MAX) {
        rc = sim_i_fail(e, SIM_EINVAL, "network: n_gpus %d x %d streams exceeds 2^31 streams", e->n_gpus,
                        e->streams_per_gpu);
        goto fail;
    }
    e->route = net->route;
    e->route_ctx = net->route_ctx;
    e->route_load = net->route_load;
    e->rng = e->cfg.seed;
    e->q = sim_queue_new(1024);
    e->streams = alloc_calloc((size_t)e->n_gpus * (size_t)e->streams_per_gpu, sizeof *e->streams);
    if (!e->q || !e->streams) {
        rc = SIM_ENOMEM;
        goto fail;
    }
    for (int64_t i = 0; i < (int64_t)e->n_gpus * e->streams_per_gpu; i++)
        e->streams[i].head = e->streams[i].tail = -1;
    rc = sim_i_net_init(e, net);
    if (rc)
        goto fail;
    *out = e;
    return SIM_OK;
fail:
    if (err && err_size)
        snprintf(err, err_size, "%s", e->err[0] ? e->err : sim_status_name(rc));
    sim_engine_free(e);
    return rc;
}

void sim_engine_free(sim_engine_t *e) {
    if (!e)
        return;
    sim_queue_free(e->q);
    sim_i_net_destroy(&e->net);
    sim_i_coll_free_all(e);
    free(e->ops);
    free(e->names);
    free(e->name_tab);
    free(e->edges);
    free(e->succ);
    free(e->more);
    free(e->streams);
    free(e);
}

const char *sim_engine_last_error(const sim_engine_t *e) {
    return e->err;
}

sim_time_ps_t sim_engine_now(const sim_engine_t *e) {
    return e->now;
}

uint64_t sim_engine_rand(sim_engine_t *e) {
    uint64_t z = (e->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void sim_engine_set_observer(sim_engine_t *e, const sim_observer_t *obs) {
    if (obs) {
        e->obs = *obs;
        e->has_obs = 1;
    } else {
        memset(&e->obs, 0, sizeof e->obs);
        e->has_obs = 0;
    }
}

void sim_engine_set_progress(sim_engine_t *e, sim_progress_fn fn, void *ctx) {
    e->progress = fn;
    e->progress_ctx = ctx;
    e->progress_tick = 0;
}

static void report_progress(sim_engine_t *e) {
    e->progress_tick = 0;
    const sim_progress_t p = {.now_ps = e->now,
                              .ops_done = e->ops_done,
                              .ops_total = e->n_ops,
                              .events = e->stats.events + e->stats.flow_events};
    e->progress(e->progress_ctx, &p);
}

void sim_engine_stats(const sim_engine_t *e, sim_engine_stats_t *out) {
    *out = e->stats;
}

static void dispatch(sim_engine_t *e, const sim_event_t *ev) {
    e->stats.events++;
    switch (ev->kind) {
    case SIM_EV_OP_END:
        sim_i_op_end(e, ev->a);
        break;
    case SIM_EV_COLL_DONE:
        sim_i_coll_done_event(e, ev->a);
        break;
    case SIM_EV_COLL_BEGIN:
        sim_i_phase_begin(e, ev->a);
        break;
    case SIM_EV_FLOW_START: {
        const sim_flow_t *f = &e->net.flows[ev->a];
        if (f->state == SIM_FLOW_PENDING && f->gen == (uint32_t)ev->b &&
            sim_i_flow_activate_pending(e, ev->a))
            e->fatal = sim_i_fail(e, SIM_ENOMEM, "network: out of memory starting a flow");
        break;
    }
    default:
        break;
    }
}

/* Pop and process the earliest item if its time is `t`; return 0 when none is left at t. */
static int step_at(sim_engine_t *e, sim_time_ps_t t) {
    const sim_event_t *top = sim_queue_peek(e->q);
    uint64_t fseq = 0;
    const sim_time_ps_t ft = sim_i_net_next_time(e, &fseq);
    const int q_here = top && top->time_ps == t;
    const int f_here = ft == t;
    if (!q_here && !f_here)
        return 0;
    if (q_here && (!f_here || top->seq < fseq)) {
        sim_event_t ev;
        sim_queue_pop(e->q, &ev);
        dispatch(e, &ev);
    } else {
        sim_i_net_pop(e);
    }
    return 1;
}

int sim_engine_run_until(sim_engine_t *e, sim_time_ps_t limit) {
    if (!e->started) {
        const int rc = sim_i_exec_start(e);
        if (rc)
            return rc;
    }
    while (!e->fatal) {
        const sim_event_t *top = sim_queue_peek(e->q);
        uint64_t fseq = 0;
        sim_time_ps_t t = sim_i_net_next_time(e, &fseq);
        if (top && top->time_ps < t)
            t = top->time_ps;
        if (t == SIM_TIME_NEVER || t > limit)
            break;
        if (t >= SIM_I_TIME_SATURATED)
            return e->fatal =
                       sim_i_fail(e, SIM_EINVAL,
                                  "an event falls at or past the clock's end (%.4g s of simulated time, "
                                  "INT64_MAX ps): a flow too slow or a time too long to simulate",
                                  sim_ps_to_s(SIM_I_TIME_SATURATED));
        e->now = t;
        while (!e->fatal && step_at(e, t))
            ;
        if (sim_i_net_dirty(e))
            sim_i_net_solve(e);
        if (e->progress && ++e->progress_tick >= SIM_PROGRESS_EVERY)
            report_progress(e);
    }
    if (e->progress)
        report_progress(e);
    return e->fatal;
}

int sim_engine_run(sim_engine_t *e) {
    const int rc = sim_engine_run_until(e, SIM_TIME_NEVER - 1);
    return rc ? rc : sim_i_exec_check(e);
}
