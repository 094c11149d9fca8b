/* bench_topo.c - how long topologies take to build and route, and how much memory they need.
 *
 * For 16,384- and 100,000-GPU rail-optimized fat-trees (DGX H100 SuperPOD; radix-128 switches at
 * 100k, since three tiers of radix-64 switches stop at 65,536 GPUs) and dragonflies (the Frontier
 * preset sized by GPUs) it prints: topo_new's phases (build = vertices, cables and routing tables;
 * graph = adjacency and the igraph graph; check = reachability of every GPU pair), "ready" (their
 * sum), the routing tables' size, the mean cost of one route lookup over random GPU pairs, the
 * summary time (diameter BFS and max-flow bisection) and the peak resident memory (getrusage). Each
 * case runs in its own process so that peaks do not accumulate. Targets (docs/topology.md, "Scale"): ready <=
 * 2 s at 16k GPUs, <= 15 s at 100k, memory < 2 GB.
 *
 * Usage: bench_topo [--routes N] [--no-summary]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <igraph.h>

#include "topo.h"

typedef struct {
    const char *label, *preset;
    int64_t gpus, radix;
} bench_case_t;

static const bench_case_t CASES[] = {
    {"rail-optimized", "dgx-h100-superpod", 16384, 0},
    {"dragonfly", "frontier", 16384, 0},
    {"rail-optimized", "dgx-h100-superpod", 100000, 128},
    {"dragonfly", "frontier", 100000, 0},
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t next_rand(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 17;
}

/* Mean seconds per topo_route over n random pairs with random flow keys. */
static double route_cost(const topo_t *t, long n) {
    topo_link_id_t links[256];
    uint64_t s = 12345;
    int64_t g = topo_gpu_count(t), total = 0;
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        topo_flow_t f = {(int64_t)(next_rand(&s) % (uint64_t)g), (int64_t)(next_rand(&s) % (uint64_t)g),
                         next_rand(&s), TOPO_ROUTING_DEFAULT, NULL};
        int k = topo_route(t, &f, links, 256);
        if (k < 0) {
            fprintf(stderr, "bench_topo: route failed: %s\n", topo_status_name(k));
            exit(1);
        }
        total += k;
    }
    double dt = now_s() - t0;
    if (total < 0) /* keep the loop observable */
        puts("");
    return dt / (double)n;
}

static int run_case(const bench_case_t *c, long routes, int summary) {
    topo_params_t p;
    topo_issue_t issue;
    char msg[320];
    if (topo_params_preset(c->preset, c->gpus, &p) != TOPO_OK)
        return 1;
    if (c->radix)
        p.switch_radix = c->radix;
    topo_t *t;
    double t0 = now_s();
    int rc = topo_new(&p, &t, &issue);
    double wall = now_s() - t0;
    if (rc) {
        fprintf(stderr, "bench_topo: %s: %s\n", c->preset, topo_issue_format(&issue, msg, sizeof msg));
        return 1;
    }
    topo_build_stats_t st;
    topo_build_stats_get(t, &st);
    double per_route = route_cost(t, routes);
    double sum_s = 0;
    topo_summary_t s;
    memset(&s, 0, sizeof s);
    if (summary) {
        t0 = now_s();
        if (topo_summary_compute(t, &s, &issue) != TOPO_OK)
            fprintf(stderr, "bench_topo: summary: %s\n", topo_issue_format(&issue, msg, sizeof msg));
        sum_s = now_s() - t0;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%-15s %-18s %7lld %8lld %8lld %7.3f %7.3f %7.3f %7.3f %8.2f %8.1f %8.3f %6lld %8.1f\n", c->label,
           c->preset, (long long)topo_gpu_count(t), (long long)topo_vertex_count(t),
           (long long)topo_link_count(t), st.build_s, st.graph_s, st.check_s, wall,
           (double)st.route_table_bytes / 1e6, per_route * 1e9, sum_s, (long long)s.diameter_hops,
           (double)ru.ru_maxrss / 1024.0);
    fflush(stdout);
    topo_free(t);
    return 0;
}

int main(int argc, char **argv) {
    long routes = 1000000;
    int summary = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--routes") == 0 && i + 1 < argc)
            routes = atol(argv[++i]);
        else if (strcmp(argv[i], "--no-summary") == 0)
            summary = 0;
        else {
            fprintf(stderr, "usage: bench_topo [--routes N] [--no-summary]\n");
            return 2;
        }
    }
    if (routes < 1)
        routes = 1;
    igraph_set_error_handler(igraph_error_handler_printignore);
    printf("%-15s %-18s %7s %8s %8s %7s %7s %7s %7s %8s %8s %8s %6s %8s\n", "kind", "preset", "gpus",
           "vertices", "links", "build_s", "graph_s", "check_s", "ready_s", "table_MB", "route_ns", "summ_s",
           "diam", "peak_MB");
    int failed = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0)
            _exit(run_case(&CASES[i], routes, summary));
        int status = 1;
        if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed = 1;
    }
    printf("targets: ready_s <= 2 at 16k GPUs, <= 15 at 100k; peak_MB < 2000\n");
    return failed;
}
