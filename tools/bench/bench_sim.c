/* bench_sim.c - prints the engine's speed figures (docs/engine.md, "Speed"): event-queue hold operations per
 * second, max-min re-solve time for 8k and 65k flows on a leaf/spine, and the wall time of a 1 GiB ring
 * all-reduce over 64..4096 GPUs in fast and step fidelity, with the simulated time's deviation from
 * the closed form. Networks: for max-min, a hand-made 2-tier leaf/spine (32 endpoints per leaf, 32
 * spines, D-mod-k: a flow to endpoint d leaves its leaf through spine d mod 32), the setting
 * of the stand-alone solver figures that docs/engine.md compares with; for the ring, the ideal star and
 * topo/'s k-ary fat-tree. Targets: >= 10 M hold ops/s; 1024 GPUs fast <= 50 ms, step <= 2 s. Usage: bench_sim
 * [--quick]   (--quick skips the 4096-GPU step-fidelity runs) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <igraph.h>

#include "alloc.h"
#include "sim.h"
#include "topo.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* ---- event queue ---------------------------------------------------------------------------------- */

static void bench_queue(void) {
    printf("# event queue: hold operations (pop the earliest, push one at t + random increment)\n");
    printf("%-10s %14s %14s\n", "pending", "hold_ops", "hold_ops_per_s");
    const size_t sizes[3] = {1000, 100000, 1000000};
    for (int k = 0; k < 3; k++) {
        sim_queue_t *q = sim_queue_new(sizes[k]);
        uint64_t s = 1;
        for (size_t i = 0; i < sizes[k]; i++) {
            const sim_event_t ev = {.time_ps = (sim_time_ps_t)(rng_next(&s) % 1000000)};
            sim_queue_push(q, &ev);
        }
        const long ops = 10000000;
        sim_event_t ev;
        const double t0 = now_s();
        for (long i = 0; i < ops; i++) {
            sim_queue_pop(q, &ev);
            ev.time_ps += (sim_time_ps_t)(rng_next(&s) % 1000000);
            sim_queue_push(q, &ev);
        }
        const double dt = now_s() - t0;
        printf("%-10zu %14ld %14.3g\n", sizes[k], ops, (double)ops / dt);
        sim_queue_free(q);
    }
}

/* ---- a hand-made 2-tier leaf/spine ---------------------------------------------------------------- */

#define PER_LEAF 32
#define SPINES 32

/* Links: endpoint e up 2e, down 2e+1; then for leaf l and spine s: up (leaf -> spine) and down. */
typedef struct leafspine {
    int32_t n, leaves, n_links;
    double *cap, *lat;
} leafspine_t;

static int32_t ls_spine_link(const leafspine_t *t, int32_t leaf, int32_t spine, int down) {
    return 2 * t->n + 2 * (leaf * SPINES + spine) + down;
}

static int ls_route(void *ctx, int32_t src, int32_t dst, int32_t *links, int32_t cap) {
    const leafspine_t *t = ctx;
    if (src == dst || cap < 4)
        return -1;
    const int32_t ls = src / PER_LEAF, ld = dst / PER_LEAF;
    if (ls == ld) {
        links[0] = 2 * src;
        links[1] = 2 * dst + 1;
        return 2;
    }
    const int32_t spine = dst % SPINES;
    links[0] = 2 * src;
    links[1] = ls_spine_link(t, ls, spine, 0);
    links[2] = ls_spine_link(t, ld, spine, 1);
    links[3] = 2 * dst + 1;
    return 4;
}

/* Non-blocking: every link 50 GB/s (the leaf has 32 endpoints and 32 spine links), 1 us each. */
static int ls_init(leafspine_t *t, int32_t n) {
    t->n = n;
    t->leaves = (n + PER_LEAF - 1) / PER_LEAF;
    t->n_links = 2 * n + 2 * t->leaves * SPINES;
    t->cap = alloc_malloc((size_t)t->n_links * sizeof *t->cap);
    t->lat = alloc_malloc((size_t)t->n_links * sizeof *t->lat);
    if (!t->cap || !t->lat)
        return -1;
    for (int32_t i = 0; i < t->n_links; i++) {
        t->cap[i] = 50e9;
        t->lat[i] = 1e-6;
    }
    return 0;
}

static void ls_network(leafspine_t *t, sim_network_desc_t *d) {
    memset(d, 0, sizeof *d);
    d->n_gpus = t->n;
    d->n_links = t->n_links;
    d->capacity_bytes_per_s = t->cap;
    d->latency_s = t->lat;
    d->route = ls_route;
    d->route_ctx = t;
    d->gpus_per_domain = 1;
}

/* ---- max-min re-solve ------------------------------------------------------------------------------ */

/* Start one flow per endpoint to a random other endpoint (a permutation), all at time t. */
static void add_permutation(sim_engine_t *e, leafspine_t *t, sim_time_ps_t at, uint64_t seed) {
    const int32_t n = t->n;
    int32_t *perm = alloc_malloc((size_t)n * sizeof *perm);
    for (int32_t i = 0; i < n; i++)
        perm[i] = i;
    uint64_t s = seed;
    for (int32_t i = n - 1; i > 0; i--) {
        const int32_t j = (int32_t)(rng_next(&s) % (uint64_t)(i + 1)), x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
    int32_t links[8];
    for (int32_t i = 0; i < n; i++) {
        const int32_t dst = perm[i] == i ? (i + 1) % n : perm[i];
        const int len = ls_route(t, i, dst, links, 8);
        const sim_flow_desc_t fd = {.links = links, .n_links = len, .bytes = 1e9, .start_ps = at};
        sim_flow_add(e, &fd, NULL);
    }
    free(perm);
}

/* Time the batch at `at` (every flow start of one timestamp and its one re-solve). */
static double time_batch(sim_engine_t *e, sim_time_ps_t at, int64_t *flows) {
    sim_engine_stats_t a, b;
    sim_engine_stats(e, &a);
    const double t0 = now_s();
    sim_engine_run_until(e, at);
    const double ms = 1e3 * (now_s() - t0);
    sim_engine_stats(e, &b);
    *flows = b.solve_flows - a.solve_flows;
    return ms;
}

static void bench_maxmin(void) {
    printf("\n# max-min re-solve, leaf/spine, one flow per endpoint to a random endpoint (permutation), all\n"
           "# starting at one timestamp: one batched re-solve. 'cold' includes first-touch allocation of\n"
           "# the links' flow lists; 'warm' is a second permutation after the first finished; 'all' adds\n"
           "# a third permutation on top of the second, so the re-solve covers 2x the flows.\n");
    printf("%-8s %8s %10s %10s %10s %12s %12s %14s\n", "flows", "links", "cold_ms", "warm_ms", "all_ms",
           "all_flows", "one_more_ms", "one_more_flows");
    const int32_t sizes[2] = {8192, 65536};
    for (int k = 0; k < 2; k++) {
        leafspine_t t;
        if (ls_init(&t, sizes[k]))
            return;
        for (int32_t i = 0; i < t.n_links; i++)
            t.lat[i] = 0.0; /* flows drain from their start: one solve holds them all */
        sim_network_desc_t d;
        ls_network(&t, &d);
        sim_engine_t *e;
        if (sim_engine_new(NULL, &d, &e, NULL, 0))
            return;
        int64_t f_cold, f_warm, f_all, f_inc;
        add_permutation(e, &t, 0, 3);
        const double cold = time_batch(e, 0, &f_cold);
        sim_engine_run(e); /* let them finish */
        const sim_time_ps_t t1 = sim_engine_now(e) + 1;
        add_permutation(e, &t, t1, 4);
        const double warm = time_batch(e, t1, &f_warm);
        add_permutation(e, &t, t1 + 1, 5);
        const double all = time_batch(e, t1 + 1, &f_all);
        int32_t links[8];
        const int len = ls_route(&t, 0, sizes[k] / 2 + 1, links, 8);
        const sim_flow_desc_t fd = {.links = links, .n_links = len, .bytes = 1e9, .start_ps = t1 + 2};
        sim_flow_add(e, &fd, NULL);
        const double inc = time_batch(e, t1 + 2, &f_inc);
        printf("%-8d %8d %10.3f %10.3f %10.3f %12lld %12.4f %14lld\n", sizes[k], t.n_links, cold, warm, all,
               (long long)f_all, inc, (long long)f_inc);
        sim_engine_free(e);
        free(t.cap);
        free(t.lat);
    }
}

/* ---- ring all-reduce -------------------------------------------------------------------------------- */

static void ring_once(const char *net_name, const sim_network_desc_t *d, int32_t n, sim_fidelity_t fid) {
    sim_config_t cfg;
    sim_config_default(&cfg);
    const double t0 = now_s();
    sim_engine_t *e;
    if (sim_engine_new(&cfg, d, &e, NULL, 0))
        return;
    int32_t *gpus = alloc_malloc((size_t)n * sizeof *gpus);
    for (int32_t i = 0; i < n; i++)
        gpus[i] = i;
    const sim_coll_desc_t cd = {.op = SIM_COLL_ALLREDUCE,
                                .algo = SIM_ALGO_RING,
                                .fidelity = fid,
                                .size_bytes = GIB,
                                .gpus = gpus,
                                .n_gpus = n,
                                .stream = 1};
    sim_coll_id_t c;
    if (sim_coll_add(e, &cd, NULL, &c) || sim_engine_run(e)) {
        printf("%s: %s\n", net_name, sim_engine_last_error(e));
        sim_engine_free(e);
        free(gpus);
        return;
    }
    const double wall = now_s() - t0;
    sim_coll_result_t r;
    sim_coll_result(e, c, &r);
    sim_engine_stats_t st;
    sim_engine_stats(e, &st);
    const double sim_s = sim_ps_to_s(r.end_ps - r.start_ps);
    printf("%-14s %6d %-5s %12.4f %14.6f %12.3g %12lld %10lld\n", net_name, n,
           fid == SIM_FIDELITY_FAST ? "fast" : "step", 1e3 * wall, sim_s, sim_s / r.closed_form_s - 1.0,
           (long long)st.flows_started, (long long)st.solves);
    fflush(stdout);
    sim_engine_free(e);
    free(gpus);
}

/* topo/'s k-ary 3-tier fat-tree (defaults: 50 GB/s, 0.15 us links, one GPU per node, D-mod-k) with
 * the smallest even k whose k^3/4 hosts hold n GPUs; NULL if it cannot be built. */
static topo_t *fat_tree(int32_t n, int64_t *k_out) {
    topo_params_t p;
    topo_params_init(&p, TOPO_KIND_FAT_TREE);
    int64_t k = 4;
    while (k * k * k / 4 < n)
        k += 2;
    p.fat_tree.tiers = 3;
    p.fat_tree.k = k;
    p.gpus = n;
    topo_t *t = NULL;
    topo_issue_t issue;
    *k_out = k;
    return topo_new(&p, &t, &issue) == TOPO_OK ? t : NULL;
}

static void bench_ring(int quick) {
    printf(
        "\n# 1 GiB ring all-reduce, GPUs 0..n-1 in ring order (wall time includes set-up). star: 50 GB/s,\n"
        "# 1 us links; fat-tree: topo/'s k-ary 3-tier tree (50 GB/s, 0.15 us links, D-mod-k routing)\n");
    printf("%-14s %6s %-5s %12s %14s %12s %12s %10s\n", "network", "gpus", "mode", "wall_ms", "simulated_s",
           "vs_closed", "flows", "solves");
    const int32_t sizes[4] = {64, 256, 1024, 4096};
    for (int i = 0; i < 4; i++) {
        const int32_t n = sizes[i];
        sim_star_t star;
        const sim_star_params_t sp = {.n_gpus = n, .nic_bytes_per_s = 50e9, .nic_latency_s = 1e-6};
        int64_t k = 0;
        topo_t *tree = fat_tree(n, &k);
        if (sim_star_init(&star, &sp) || !tree) {
            fprintf(stderr, "bench_sim: could not build the networks for %d GPUs\n", n);
            topo_free(tree);
            return;
        }
        sim_network_desc_t ds, dt;
        sim_star_network(&star, &ds);
        sim_topo_network(tree, &dt);
        char name[32];
        snprintf(name, sizeof name, "fat-tree k=%lld", (long long)k);
        for (int f = 0; f < 2; f++) {
            const sim_fidelity_t fid = f ? SIM_FIDELITY_STEP : SIM_FIDELITY_FAST;
            if (quick && n > 1024 && fid == SIM_FIDELITY_STEP)
                continue;
            ring_once("star", &ds, n, fid);
            ring_once(name, &dt, n, fid);
        }
        sim_star_destroy(&star);
        topo_free(tree);
    }
}

int main(int argc, char **argv) {
    const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    if (argc > 1 && !quick) {
        fprintf(stderr, "usage: bench_sim [--quick]\n");
        return 2;
    }
    igraph_set_error_handler(igraph_error_handler_printignore); /* topo/'s contract */
    bench_queue();
    bench_maxmin();
    bench_ring(quick);
    return 0;
}
