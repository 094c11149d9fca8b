/* trace_test_util.h - the small simulated step the traces tests write out, built by hand through
 * sim.h, and helpers to read a trace back. Include after <cmocka.h>.
 *
 * The step: 8 GPUs on the ideal star (25 GB/s NICs, 1 us), NVLink domains (= trace nodes) of 4
 * (300 GB/s, 0.5 us), 3 streams per GPU. Every GPU runs "fwd g" then "bwd g" on its compute stream;
 * a ring all-reduce of 100 MB over all 8 GPUs on stream 1 waits for every "fwd"; a point-to-point
 * message of 64 MB goes from GPU 1 (stream 2) to GPU 5 (stream 2) after "fwd 1", and "bwd 5" waits
 * for it; another of 16 MB from GPU 2 to GPU 3 (stream 2) inside node 0. Durations are not whole
 * nanoseconds, so the nanosecond rounding is exercised. A wrapping observer also records every
 * operation and feeds a "memory_gb" counter per GPU (two samples at each operation end: the
 * writer keeps the second). */
#ifndef STEPSIM_TRACE_TEST_UTIL_H
#define STEPSIM_TRACE_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "sim.h"
#include "trace.h"

#define TT_GPUS 8
#define TT_GPN 4
#define TT_STREAMS 3
#define TT_SCENARIO                                                                                          \
    "{\"name\":\"trace-small\",\"gpus\":8,\"nvlink_size\":4,\"note\":\"quote \\\" and tab \\t\"}"

typedef struct tt_op {
    int32_t gpu, stream;
    sim_op_kind_t kind;
    const char *name;
    sim_time_ps_t start_ps, end_ps;
} tt_op_t;

typedef struct tt_step {
    sim_star_t star;
    sim_engine_t *e;
    trace_writer_t *w;
    sim_observer_t inner;
    char names[64][32]; /* operation names (the engine borrows them) */
    int n_names;
    tt_op_t ops[64]; /* by operation id, filled by the wrapping observer */
    int32_t n_ops;
    double mem_gb[TT_GPUS];
    int drop_compute_of_gpu; /* op_args drops the compute operations of this GPU (-1: none) */
} tt_step_t;

static inline const char *tt_name(tt_step_t *s, const char *fmt, int a) {
    assert_true(s->n_names < 64);
    snprintf(s->names[s->n_names], sizeof s->names[0], fmt, a);
    return s->names[s->n_names++];
}

/* The writer's args callback: layer, pass, microbatch, FLOPs and bytes of compute; collective,
 * group and bytes of communication. */
static inline int tt_op_args(void *ctx, const sim_op_info_t *op, trace_op_args_t *out) {
    tt_step_t *s = ctx;
    assert_int_equal(out->microbatch, -1); /* the writer clears *out first */
    assert_null(out->layer);
    if (op->kind == SIM_OP_COMPUTE) {
        if (op->gpu == s->drop_compute_of_gpu)
            return 1;
        const int bwd = op->name && op->name[0] == 'b';
        out->layer = "mlp";
        out->pass = bwd ? "bwd" : "fwd";
        out->microbatch = 0;
        out->stage = op->gpu / TT_GPN;
        out->flops = bwd ? 2.5e12 : 1.25e12;
        out->bytes = 3.5e9;
    } else if (op->kind == SIM_OP_COLLECTIVE) {
        out->collective = "allreduce";
        out->group = "dp";
        out->bytes = 100e6;
    } else {
        out->collective = "sendrecv";
        out->group = "pp";
        out->bytes = op->gpu == 2 || op->gpu == 3 ? 16e6 : 64e6;
    }
    return 0;
}

static inline void tt_link_name(void *ctx, int32_t link, char *buf, size_t size) {
    (void)ctx;
    const int32_t n = TT_GPUS, g = link < 2 * n ? link / 2 : (link - 2 * n) / 2;
    snprintf(buf, size, "gpu %d %s %s", (int)g, link < 2 * n ? "nic" : "nvlink", link % 2 ? "down" : "up");
}

static inline void tt_obs_start(void *ctx, sim_time_ps_t t, const sim_op_info_t *op) {
    tt_step_t *s = ctx;
    assert_true(op->op >= 0 && op->op < 64);
    s->ops[op->op] = (tt_op_t){.gpu = op->gpu,
                               .stream = op->stream,
                               .kind = op->kind,
                               .name = op->name,
                               .start_ps = t,
                               .end_ps = -1};
    if (op->op >= s->n_ops)
        s->n_ops = op->op + 1;
    if (s->inner.op_start)
        s->inner.op_start(s->inner.ctx, t, op);
}

static inline void tt_obs_end(void *ctx, sim_time_ps_t t, const sim_op_info_t *op) {
    tt_step_t *s = ctx;
    s->ops[op->op].end_ps = t;
    if (s->inner.op_end)
        s->inner.op_end(s->inner.ctx, t, op);
    if (s->w && op->kind == SIM_OP_COMPUTE) {
        s->mem_gb[op->gpu] += op->name && op->name[0] == 'f' ? 10.25 : -4.5;
        /* A transient value first, then the real one at the same timestamp: only the latter is
         * written. */
        assert_int_equal(trace_writer_counter(s->w, t, op->gpu, "memory_gb", 999.0), TRACE_OK);
        assert_int_equal(trace_writer_counter(s->w, t, op->gpu, "memory_gb", s->mem_gb[op->gpu]), TRACE_OK);
    }
}

static inline void tt_obs_counter(void *ctx, sim_time_ps_t t, const sim_counter_t *c) {
    tt_step_t *s = ctx;
    if (s->inner.counter)
        s->inner.counter(s->inner.ctx, t, c);
}

/* Build the step's engine (operations added, not run). */
static inline void tt_build(tt_step_t *s) {
    memset(s, 0, sizeof *s);
    s->drop_compute_of_gpu = -1;
    const sim_star_params_t sp = {.n_gpus = TT_GPUS,
                                  .nic_bytes_per_s = 25e9,
                                  .nic_latency_s = 1e-6,
                                  .gpus_per_domain = TT_GPN,
                                  .nvlink_bytes_per_s = 300e9,
                                  .nvlink_latency_s = 0.5e-6};
    assert_int_equal(sim_star_init(&s->star, &sp), SIM_OK);
    sim_network_desc_t d;
    sim_star_network(&s->star, &d);
    /* Pinned rather than defaulted, so that the golden trace changes only with the engine's
     * behaviour, not with its defaults. */
    sim_config_t cfg;
    sim_config_default(&cfg);
    cfg.comm_streams = TT_STREAMS - 1;
    cfg.step_overhead_s = 0.0;
    cfg.link_efficiency = 1.0;
    cfg.fidelity = SIM_FIDELITY_FAST;
    cfg.comm_mode = SIM_COMM_NETWORK;
    char err[256];
    assert_int_equal(sim_engine_new(&cfg, &d, &s->e, err, sizeof err), SIM_OK);
    sim_op_id_t fwd[TT_GPUS], bwd[TT_GPUS], ar[TT_GPUS], send, recv, send2, recv2;
    for (int g = 0; g < TT_GPUS; g++)
        assert_int_equal(
            sim_op_compute(s->e, g, 0, 1.0000000012e-3 + 0.1234567e-3 * g, tt_name(s, "fwd %d", g), &fwd[g]),
            SIM_OK);
    const int32_t all[TT_GPUS] = {0, 1, 2, 3, 4, 5, 6, 7};
    const sim_coll_desc_t cd = {.op = SIM_COLL_ALLREDUCE,
                                .algo = SIM_ALGO_RING,
                                .size_bytes = 100e6,
                                .gpus = all,
                                .n_gpus = TT_GPUS,
                                .stream = 1,
                                .name = "allreduce grads"};
    assert_int_equal(sim_coll_add(s->e, &cd, ar, NULL), SIM_OK);
    for (int g = 0; g < TT_GPUS; g++)
        assert_int_equal(sim_op_depend(s->e, ar[g], fwd[g]), SIM_OK);
    assert_int_equal(sim_p2p_add(s->e, 1, 2, 5, 2, 64e6, "act 1->5", &send, &recv), SIM_OK);
    assert_int_equal(sim_op_depend(s->e, send, fwd[1]), SIM_OK);
    assert_int_equal(sim_p2p_add(s->e, 2, 2, 3, 2, 16e6, "act 2->3", &send2, &recv2), SIM_OK);
    assert_int_equal(sim_op_depend(s->e, send2, fwd[2]), SIM_OK);
    for (int g = 0; g < TT_GPUS; g++)
        assert_int_equal(sim_op_compute(s->e, g, 0, 2.0000000007e-3, tt_name(s, "bwd %d", g), &bwd[g]),
                         SIM_OK);
    assert_int_equal(sim_op_depend(s->e, bwd[5], recv), SIM_OK);
    assert_int_equal(sim_op_depend(s->e, bwd[3], recv2), SIM_OK);
}

static inline void tt_free(tt_step_t *s) {
    sim_engine_free(s->e);
    sim_star_destroy(&s->star);
}

/* Options for the step: every link's counter, the scenario, the args and link-name callbacks. */
static inline trace_options_t tt_options(tt_step_t *s) {
    trace_options_t o;
    memset(&o, 0, sizeof o);
    o.n_gpus = TT_GPUS;
    o.gpus_per_node = TT_GPN;
    o.streams_per_gpu = TT_STREAMS;
    o.scenario_json = TT_SCENARIO;
    o.n_links = TRACE_LINKS_ALL;
    o.link_name = tt_link_name;
    o.op_args = tt_op_args;
    o.ctx = s;
    return o;
}

/* Build and run the step with a writer on path (opened with *o); close it. */
static inline void tt_run(tt_step_t *s, const char *path, const trace_options_t *o) {
    char err[512];
    int rc = trace_writer_open(path, o, &s->w, err, sizeof err);
    if (rc)
        fail_msg("trace_writer_open: %s", err);
    trace_writer_observer(s->w, &s->inner);
    const sim_observer_t outer = {
        .ctx = s, .op_start = tt_obs_start, .op_end = tt_obs_end, .counter = tt_obs_counter};
    sim_engine_set_observer(s->e, &outer);
    assert_int_equal(sim_engine_run(s->e), SIM_OK);
    rc = trace_writer_close(s->w, err, sizeof err);
    s->w = NULL;
    if (rc)
        fail_msg("trace_writer_close: %s", err);
}

/* A fresh path in $TMPDIR (the file does not exist); free() it. */
static inline char *tt_temp_path(const char *tag) {
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char *path = malloc(strlen(dir) + strlen(tag) + 64);
    assert_non_null(path);
    static int counter;
    sprintf(path, "%s/stepsim-trace-%s-%ld-%d.json", dir, tag, (long)getpid(), counter++);
    remove(path);
    return path;
}

static inline int tt_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f)
        fclose(f);
    return f != NULL;
}

static inline char *tt_slurp(const char *path, size_t *len) {
    if (len)
        *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

static inline cJSON *tt_parse_file(const char *path) {
    char *text = tt_slurp(path, NULL);
    assert_non_null(text);
    cJSON *j = cJSON_Parse(text);
    if (!j)
        fail_msg("%s does not parse as JSON near: %.60s", path, cJSON_GetErrorPtr());
    free(text);
    return j;
}

#endif
