/* chakra_sample_write.c - write the Chakra codec's sample workload (chakra_sample.h) as DIR/sample.*.et
 * and, beside it, DIR/sample.expect: one line per node, "rank id type deps..." (type is Chakra's
 * NodeType number), for tests/chakra/check_et.py to compare with what Chakra's Python bindings read.
 * Usage: chakra_sample_write DIR. Exit 0, or 1 with one line on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chakra_sample.h"
#include "trace_chakra.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: chakra_sample_write DIR\n");
        return 1;
    }
    cs_build_t b;
    cs_sample(&b);
    char err[512];
    if (trace_chakra_write(argv[1], "sample", &b.w, err, sizeof err) != TRACE_OK) {
        fprintf(stderr, "chakra_sample_write: %s\n", err);
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/sample.expect", argv[1]);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "chakra_sample_write: cannot create %s\n", path);
        return 1;
    }
    static const int type[] = {4, 5, 6, 7}; /* COMP_NODE, COMM_SEND_NODE, COMM_RECV_NODE, COMM_COLL_NODE */
    for (int32_t r = 0; r < b.w.n_ranks; r++)
        for (int64_t i = b.w.rank_nodes_offset[r]; i < b.w.rank_nodes_offset[r + 1]; i++) {
            const step_wl_node_t *nd = &b.w.nodes[i];
            fprintf(f, "%d %llu %d", r, (unsigned long long)nd->id, type[nd->kind]);
            for (int32_t k = 0; k < nd->n_deps; k++)
                fprintf(f, " %llu", (unsigned long long)b.w.deps[nd->deps_offset + k]);
            fputc('\n', f);
        }
    const int bad = fclose(f) != 0;
    step_workload_free(&b.w);
    return bad;
}
