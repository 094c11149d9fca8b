/* fuzz_chakra.c - libFuzzer target: a Chakra execution trace (one rank's file), as
 * `trace_chakra_read` reads it: the varint framing, protobuf-c's decoding of GlobalMetadata and Node
 * records, the mapping of every node type and attribute, process groups, dependencies (duplicates,
 * dangling, cycles). The bytes are read twice: as the only rank (w.0.et), and as both ranks of a
 * two-rank workload (v.0.et and v.1.et, the same bytes), so peers and groups see another rank.
 * Contract checked on every input: the status is one of the four, a failure fills err with exactly
 * one non-empty line, a failed read leaves the workload zeroed, and a workload read passes
 * trace_chakra_check (what the reader accepts, the writer accepts). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "trace_chakra.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_one(const char *prefix) {
    step_workload_t w;
    char err[1024];
    err[0] = '\0';
    const int rc = trace_chakra_read(prefix, &w, err, sizeof err);
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
    read_one(one);
    fuzz_write(fuzz_path("v.0.et"), data, size);
    fuzz_write(fuzz_path("v.1.et"), data, size);
    read_one(two);
    return 0;
}
