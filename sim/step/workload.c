/* workload.c - per-rank operation DAGs (step.h, "workloads"): their memory. */
#include <stdlib.h>
#include <string.h>

#include "step.h"

void step_workload_free(step_workload_t *w) {
    if (w == NULL)
        return;
    free(w->rank_nodes_offset);
    free(w->nodes);
    free(w->deps);
    free(w->groups);
    free(w->group_ranks);
    memset(w, 0, sizeof *w);
}
