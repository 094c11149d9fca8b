/* fuzz_chakra.c - libFuzzer target: a Chakra execution trace (one rank's file), as
 * `trace_chakra_read` reads it: the varint framing, protobuf-c's decoding of GlobalMetadata and Node
 * records, the mapping of every node type and attribute, process groups, dependencies (duplicates,
 * dangling, cycles). The bytes are read twice: as the only rank (w.0.et), and as both ranks of a
 * two-rank workload (v.0.et and v.1.et, the same bytes), so peers and groups see another rank.
 * Contract checked on every input: the status is one of the four, a failure fills err with exactly
 * one non-empty line, a failed read leaves the workload zeroed, and a workload read passes
 * trace_chakra_check (what the reader accepts, the writer accepts). For one input in four (by its
 * bytes) the two-rank workload is read again on two decoding threads (the reader's internal entry
 * point; a set this small is otherwise read on the caller's thread, and starting threads for every
 * input would cut the executions a second threefold): the same status, line and workload. The
 * one-rank set, and the two-rank set for another one input in four, are also read through the
 * streaming reader (open, then rank by rank): the same status and first error line as
 * trace_chakra_read, every rank's nodes as many as the whole read gives it. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chakra_internal.h"
#include "fuzz_util.h"
#include "trace_chakra.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* a and b hold the same workload (nodes, dependencies, names, groups) */
static int same(const step_workload_t *a, const step_workload_t *b) {
    if (a->n_ranks != b->n_ranks || a->n_groups != b->n_groups)
        return 0;
    for (int32_t r = 0; r <= a->n_ranks; r++)
        if (a->rank_nodes_offset[r] != b->rank_nodes_offset[r])
            return 0;
    for (int64_t i = 0; i < a->rank_nodes_offset[a->n_ranks]; i++) {
        const step_wl_node_t *x = &a->nodes[i], *y = &b->nodes[i];
        if (x->id != y->id || x->kind != y->kind || x->n_deps != y->n_deps || x->peer != y->peer ||
            x->group != y->group || x->tag != y->tag || x->coll != y->coll ||
            memcmp(&x->duration_s, &y->duration_s, sizeof x->duration_s) != 0 ||
            memcmp(&x->flops, &y->flops, sizeof x->flops) != 0 ||
            memcmp(&x->mem_bytes, &y->mem_bytes, sizeof x->mem_bytes) != 0 ||
            memcmp(&x->comm_bytes, &y->comm_bytes, sizeof x->comm_bytes) != 0 ||
            strcmp(step_workload_name(a, x->name), step_workload_name(b, y->name)) != 0)
            return 0;
        for (int32_t d = 0; d < x->n_deps; d++)
            if (a->deps[x->deps_offset + d] != b->deps[y->deps_offset + d])
                return 0;
    }
    for (int32_t g = 0; g < a->n_groups; g++) {
        const step_wl_group_t *x = &a->groups[g], *y = &b->groups[g];
        if (x->n_ranks != y->n_ranks || strcmp(x->name, y->name) != 0 ||
            memcmp(a->group_ranks + x->ranks_offset, b->group_ranks + y->ranks_offset,
                   (size_t)x->n_ranks * sizeof *a->group_ranks) != 0)
            return 0;
    }
    return 1;
}

/* The streaming read of prefix against the whole read's status rc, line err and workload w. */
static void stream_one(const char *prefix, int rc, const char *err, const step_workload_t *w) {
    char e2[1024];
    e2[0] = '\0';
    trace_chakra_reader_t *x = NULL;
    int rc2 = trace_chakra_reader_open(prefix, &x, e2, sizeof e2);
    for (int32_t r = 0; rc2 == TRACE_OK && r < trace_chakra_reader_shape(x)->n_ranks; r++) {
        step_workload_t p;
        rc2 = trace_chakra_reader_rank(x, r, &p, e2, sizeof e2);
        if (rc2 == TRACE_OK && rc == TRACE_OK &&
            p.rank_nodes_offset[r + 1] != w->rank_nodes_offset[r + 1] - w->rank_nodes_offset[r]) {
            fprintf(stderr, "fuzz: streaming: rank %d: another node count\n", r);
            abort();
        }
        step_workload_free(&p);
    }
    trace_chakra_reader_close(x);
    if (rc2 != rc || strcmp(err, e2) != 0) {
        fprintf(stderr, "fuzz: streaming differs: status %d \"%s\" against %d \"%s\"\n", rc2, e2, rc, err);
        abort();
    }
}

static void read_one(const char *prefix, int threaded, int streamed) {
    step_workload_t w;
    char err[1024];
    err[0] = '\0';
    const int rc = trace_chakra_read(prefix, &w, err, sizeof err);
    if (streamed)
        stream_one(prefix, rc, err, &w);
    if (threaded) {
        step_workload_t w2;
        char err2[1024];
        err2[0] = '\0';
        const int rc2 = chakra_read_threads(prefix, 2, &w2, err2, sizeof err2);
        if (rc2 != rc || strcmp(err, err2) != 0 || (rc == TRACE_OK && !same(&w, &w2))) {
            fprintf(stderr, "fuzz: two threads differ: status %d \"%s\" against %d \"%s\"\n", rc2, err2, rc,
                    err);
            abort();
        }
        step_workload_free(&w2);
    }
    if (rc != TRACE_OK && rc != TRACE_EINVAL && rc != TRACE_ENOMEM && rc != TRACE_EIO) {
        fprintf(stderr, "fuzz: status %d\n", rc);
        abort();
    }
    if (rc != TRACE_OK) {
        if (!err[0] || strchr(err, '\n') || w.nodes || w.n_ranks) {
            fprintf(stderr, "fuzz: contract broken: status %d, err \"%s\"\n", rc, err);
            abort();
        }
        return;
    }
    if (trace_chakra_check(&w, err, sizeof err) != TRACE_OK) {
        fprintf(stderr, "fuzz: read a workload its own check refuses: %s\n", err);
        abort();
    }
    step_workload_free(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char one[600], two[600];
    if (!one[0]) {
        snprintf(one, sizeof one, "%s", fuzz_path("w.0.et"));
        one[strlen(one) - strlen(".0.et")] = '\0';
        snprintf(two, sizeof two, "%s", fuzz_path("v.0.et"));
        two[strlen(two) - strlen(".0.et")] = '\0';
    }
    fuzz_write(fuzz_path("w.0.et"), data, size);
    read_one(one, 0, 1);
    fuzz_write(fuzz_path("v.0.et"), data, size);
    fuzz_write(fuzz_path("v.1.et"), data, size);
    uint32_t h = 2166136261u; /* FNV-1a of the input: which inputs also go through the threads */
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 16777619u;
    read_one(two, (h & 3u) == 0, (h & 3u) == 1);
    return 0;
}
