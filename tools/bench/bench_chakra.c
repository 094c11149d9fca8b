/* bench_chakra.c - how fast the Chakra ET codec reads and writes (traces/chakra).
 *
 * Builds a synthetic training-step-like workload: RANKS ranks of NODES nodes each (default 64 x
 * 32,768 = 2,097,152 nodes), in repeating groups of eight per rank: five compute nodes (duration,
 * num_ops, tensor_size), a send or a receive to the neighbour rank, an all-reduce in the rank's
 * group of eight and an all-gather over all ranks; each node depends on the one before it and
 * every eighth also on the node eight before (two dependencies). Writes it once to a directory
 * (in /dev/shm when it exists, so that the disk is not what is measured) and reads it REPEATS times
 * (default 5), printing for each the wall and CPU time and, then, the medians: nodes per second read
 * and written and the bytes per node. CPU time is this process's (CLOCK_PROCESS_CPUTIME_ID): on a
 * shared machine the wall time also counts the other jobs. Target (docs/workloads.md): read >=
 * 1,000,000 nodes/s.
 *
 * With --dir DIR it reads an existing ET set (a directory or prefix, as `stepsim run --workload`)
 * REPEATS times instead (default 3), reporting the same read medians (nothing is written or
 * removed): whole (trace_chakra_read), or with --stream through the streaming reader (open, then
 * every rank in order, each freed before the next: what an importer holding one rank at a time
 * costs). Both print the process's peak resident set (getrusage's ru_maxrss: run the two modes as
 * separate processes to compare them).
 *
 * Usage: bench_chakra [RANKS [NODES [REPEATS]]]
 *        bench_chakra --dir DIR [--stream] [REPEATS]
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stats.h"
#include "trace_chakra.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double cpu_s(void) { /* this process's CPU time: what the codec costs on a shared machine */
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void build(step_workload_t *w, int32_t ranks, int64_t per) {
    memset(w, 0, sizeof *w);
    const int64_t n = ranks * per;
    w->n_ranks = ranks;
    w->rank_nodes_offset = calloc((size_t)ranks + 1, sizeof *w->rank_nodes_offset);
    w->nodes = calloc((size_t)n, sizeof *w->nodes);
    w->deps = calloc((size_t)n * 2, sizeof *w->deps);
    const int32_t n_groups = (ranks + 7) / 8;
    w->n_groups = n_groups;
    w->groups = calloc((size_t)n_groups, sizeof *w->groups);
    w->group_ranks = calloc((size_t)ranks, sizeof *w->group_ranks);
    if (!w->rank_nodes_offset || !w->nodes || !w->deps || !w->groups || !w->group_ranks) {
        fprintf(stderr, "bench_chakra: out of memory\n");
        exit(1);
    }
    for (int32_t g = 0; g < n_groups; g++) {
        snprintf(w->groups[g].name, sizeof w->groups[g].name, "tp %d", g);
        w->groups[g].ranks_offset = 8 * g;
        w->groups[g].n_ranks = ranks - 8 * g < 8 ? ranks - 8 * g : 8;
        for (int32_t i = 0; i < w->groups[g].n_ranks; i++)
            w->group_ranks[8 * g + i] = 8 * g + i;
    }
    int64_t k = 0, d = 0;
    for (int32_t r = 0; r < ranks; r++) {
        w->rank_nodes_offset[r] = k;
        for (int64_t i = 0; i < per; i++, k++) {
            step_wl_node_t *nd = &w->nodes[k];
            nd->id = (uint64_t)i;
            nd->peer = -1;
            nd->group = -1;
            nd->start_hint_s = -1;
            char name[32];
            snprintf(name, sizeof name, "op %lld", (long long)i);
            if (step_workload_name_add(w, name, &nd->name) != SIM_OK) {
                fprintf(stderr, "bench_chakra: out of memory\n");
                exit(1);
            }
            nd->deps_offset = d;
            if (i > 0)
                w->deps[d + nd->n_deps++] = (uint64_t)(i - 1);
            if (i >= 8 && i % 8 == 0)
                w->deps[d + nd->n_deps++] = (uint64_t)(i - 8);
            d += nd->n_deps;
            switch (i % 8) {
            case 5:
                nd->kind = ranks > 1 ? ((r % 2) == 0 ? STEP_WL_SEND : STEP_WL_RECV) : STEP_WL_COMPUTE;
                nd->peer = ranks > 1 ? (r % 2 == 0 ? (r + 1) % ranks : r - 1) : -1;
                nd->tag = i;
                nd->comm_bytes = 16777216;
                nd->duration_s = 1e-3;
                break;
            case 6:
                nd->kind = STEP_WL_COLL;
                nd->coll = STEP_WL_ALLREDUCE;
                nd->group = r / 8;
                nd->comm_bytes = 33554432;
                break;
            case 7:
                nd->kind = STEP_WL_COLL;
                nd->coll = STEP_WL_ALLGATHER;
                nd->comm_bytes = 8388608;
                break;
            default:
                nd->kind = STEP_WL_COMPUTE;
                nd->duration_s = 1.25e-4 * (double)(1 + i % 5);
                nd->flops = 2.0e12;
                nd->mem_bytes = 1.5e9;
            }
        }
    }
    w->rank_nodes_offset[ranks] = k;
}

static double dir_bytes(const char *dir) {
    DIR *d = opendir(dir);
    double total = 0;
    struct dirent *e;
    char path[4096];
    struct stat st;
    while (d && (e = readdir(d)) != NULL) {
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.' && stat(path, &st) == 0)
            total += (double)st.st_size;
    }
    if (d)
        closedir(d);
    return total;
}

static void rm_dir(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        remove(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* The set at path read streaming: open, every rank in order (each freed). Its node and rank counts;
 * 0 or 1 (the error printed). */
static int read_stream(const char *path, int64_t *nodes, int32_t *ranks) {
    char err[512];
    trace_chakra_reader_t *x = NULL;
    if (trace_chakra_reader_open(path, &x, err, sizeof err) != TRACE_OK) {
        fprintf(stderr, "bench_chakra: open: %s\n", err);
        return 1;
    }
    *ranks = trace_chakra_reader_shape(x)->n_ranks;
    *nodes = 0;
    for (int32_t r = 0; r < *ranks; r++) {
        step_workload_t part;
        if (trace_chakra_reader_rank(x, r, &part, err, sizeof err) != TRACE_OK) {
            fprintf(stderr, "bench_chakra: rank %d: %s\n", r, err);
            trace_chakra_reader_close(x);
            return 1;
        }
        *nodes += part.rank_nodes_offset[r + 1];
        step_workload_free(&part);
    }
    trace_chakra_reader_close(x);
    return 0;
}

/* Read the existing set at path REPEATS times, whole or streaming: the read medians, peak RSS. */
static int read_existing(const char *path, int repeats, int stream) {
    char err[512];
    double tr[100], cr[100];
    int64_t nodes = 0;
    for (int i = 0; i < repeats; i++) {
        int32_t ranks = 0;
        const double t1 = now_s(), c1 = cpu_s();
        if (stream) {
            if (read_stream(path, &nodes, &ranks) != 0)
                return 1;
        } else {
            step_workload_t back;
            if (trace_chakra_read(path, &back, err, sizeof err) != TRACE_OK) {
                fprintf(stderr, "bench_chakra: read: %s\n", err);
                return 1;
            }
            nodes = back.rank_nodes_offset[back.n_ranks];
            ranks = back.n_ranks;
            step_workload_free(&back);
        }
        tr[i] = now_s() - t1;
        cr[i] = cpu_s() - c1;
        printf("run %d: %s read %.3f s (CPU %.3f s), %d ranks, %lld nodes\n", i + 1,
               stream ? "streaming" : "whole", tr[i], cr[i], ranks, (long long)nodes);
    }
    const double mr = stats_median(tr, (size_t)repeats), mcr = stats_median(cr, (size_t)repeats);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("median %s read:  wall %.3f s = %.2f M nodes/s; CPU %.3f s = %.2f M nodes/s (%d runs); peak RSS "
           "%.1f MB\n",
           stream ? "streaming" : "whole", mr, (double)nodes / mr / 1e6, mcr, (double)nodes / mcr / 1e6,
           repeats, (double)ru.ru_maxrss / 1024.0);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "--dir") == 0) {
        const int stream = argc > 3 && strcmp(argv[3], "--stream") == 0;
        const int repeats = argc > 3 + stream ? atoi(argv[3 + stream]) : 3;
        if (repeats < 1 || repeats > 100) {
            fprintf(stderr, "usage: bench_chakra --dir DIR [--stream] [REPEATS]\n");
            return 2;
        }
        return read_existing(argv[2], repeats, stream);
    }
    const int32_t ranks = argc > 1 ? atoi(argv[1]) : 64;
    const int64_t per = argc > 2 ? atoll(argv[2]) : 32768;
    const int repeats = argc > 3 ? atoi(argv[3]) : 5;
    if (ranks < 1 || per < 1 || repeats < 1 || repeats > 100) {
        fprintf(stderr, "usage: bench_chakra [RANKS [NODES [REPEATS]]]\n");
        return 2;
    }
    char dir[256];
    snprintf(dir, sizeof dir, "%s/bench-chakra-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(dir)) {
        perror("bench_chakra: mkdtemp");
        return 1;
    }
    step_workload_t w;
    build(&w, ranks, per);
    const double nodes = (double)ranks * (double)per;
    char err[512];
    double tw[100], tr[100], cw[100], cr[100];
    for (int i = 0; i < repeats; i++) {
        const double t0 = now_s(), c0 = cpu_s();
        if (trace_chakra_write(dir, "bench", &w, err, sizeof err) != TRACE_OK) {
            fprintf(stderr, "bench_chakra: write: %s\n", err);
            return 1;
        }
        tw[i] = now_s() - t0;
        cw[i] = cpu_s() - c0;
        step_workload_t back;
        const double t1 = now_s(), c1 = cpu_s();
        if (trace_chakra_read(dir, &back, err, sizeof err) != TRACE_OK) {
            fprintf(stderr, "bench_chakra: read: %s\n", err);
            return 1;
        }
        tr[i] = now_s() - t1;
        cr[i] = cpu_s() - c1;
        if (back.rank_nodes_offset[ranks] != (int64_t)nodes) {
            fprintf(stderr, "bench_chakra: read %lld nodes, wrote %.0f\n",
                    (long long)back.rank_nodes_offset[ranks], nodes);
            return 1;
        }
        step_workload_free(&back);
        printf("run %d: write %.3f s (CPU %.3f s), read %.3f s (CPU %.3f s)\n", i + 1, tw[i], cw[i], tr[i],
               cr[i]);
    }
    const double bytes = dir_bytes(dir);
    const double mw = stats_median(tw, (size_t)repeats), mr = stats_median(tr, (size_t)repeats);
    const double mcw = stats_median(cw, (size_t)repeats), mcr = stats_median(cr, (size_t)repeats);
    printf("%d ranks x %lld nodes = %.0f nodes, %.1f MB on disk (%.1f bytes/node), %d runs\n", ranks,
           (long long)per, nodes, bytes / 1e6, bytes / nodes, repeats);
    printf("median write: wall %.3f s = %.2f M nodes/s; CPU %.3f s = %.2f M nodes/s (with fsync of every "
           "file)\n",
           mw, nodes / mw / 1e6, mcw, nodes / mcw / 1e6);
    printf("median read:  wall %.3f s = %.2f M nodes/s; CPU %.3f s = %.2f M nodes/s, %.0f MB/s of CPU time\n",
           mr, nodes / mr / 1e6, mcr, nodes / mcr / 1e6, bytes / mcr / 1e6);
    rm_dir(dir);
    step_workload_free(&w);
    return 0;
}
