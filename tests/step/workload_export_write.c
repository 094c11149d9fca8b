/* workload_export_write.c - export a simulated step (step_workload_export) as Chakra traces,
 * DIR/stepsim.*.et, and beside them DIR/stepsim.expect: one line per node, "rank id type deps..."
 * (type is Chakra's NodeType number), for tests/chakra/check_et.py to compare with what Chakra's
 * Python bindings read. The step: a small GPT (4 blocks per stage) on 16 GPUs, dp 2, tp 4, pp 2 in
 * NVLink domains of 4, every GPU simulated on a star network, run before the export.
 * Usage: workload_export_write DIR. Exit 0, or 1 with one line on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "step.h"
#include "trace_chakra.h"

static int fail(const char *what, const char *msg) {
    fprintf(stderr, "workload_export_write: %s: %s\n", what, msg);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2)
        return fail("usage", "workload_export_write DIR");
    model_job_t job;
    memset(&job, 0, sizeof job);
    if (model_system_preset("A100", &job.system) != MODEL_OK)
        return fail("system", "no A100 preset");
    job.system.nvlink_size = 4;
    const model_transformer_t t = {
        .name = "small", .seq_len = 512, .hidden = 1024, .heads = 16, .layers = 8, .ffn_hidden = 4096};
    job.model = t;
    const model_parallel_t par = {MODEL_STRATEGY_1D, 2, 4, 4, 1, 2, 1, 1, 4, 1, 1, 1};
    job.par = par;
    job.gpus = 16;
    job.global_batch = 8;
    job.compat = MODEL_COMPAT_CORRECTED;
    model_issue_t issue;
    if (model_job_check(&job, &issue) != MODEL_OK)
        return fail("job", issue.field);
    sim_star_t star;
    const sim_star_params_t sp = {.n_gpus = 16,
                                  .nic_bytes_per_s = 25e9,
                                  .nic_latency_s = 1e-6,
                                  .gpus_per_domain = 4,
                                  .nvlink_bytes_per_s = 300e9,
                                  .nvlink_latency_s = 0.5e-6};
    if (sim_star_init(&star, &sp) != SIM_OK)
        return fail("network", "sim_star_init");
    sim_network_desc_t net;
    sim_star_network(&star, &net);
    step_config_t cfg;
    step_config_default(&cfg);
    cfg.collapse = STEP_COLLAPSE_OFF;
    step_t *s = NULL;
    char err[512];
    if (step_new(&job, &cfg, &net, &s, err, sizeof err) != SIM_OK)
        return fail("step", err);
    if (step_run(s) != SIM_OK)
        return fail("run", step_last_error(s));
    step_workload_t w;
    if (step_workload_export(s, &w, err, sizeof err) != SIM_OK)
        return fail("export", err);
    if (trace_chakra_write(argv[1], "stepsim", &w, err, sizeof err) != TRACE_OK)
        return fail("write", err);
    char path[4096];
    snprintf(path, sizeof path, "%s/stepsim.expect", argv[1]);
    FILE *f = fopen(path, "w");
    if (!f)
        return fail("cannot create", path);
    static const int type[] = {4, 5, 6, 7}; /* COMP_NODE, COMM_SEND_NODE, COMM_RECV_NODE, COMM_COLL_NODE */
    for (int32_t r = 0; r < w.n_ranks; r++)
        for (int64_t i = w.rank_nodes_offset[r]; i < w.rank_nodes_offset[r + 1]; i++) {
            const step_wl_node_t *nd = &w.nodes[i];
            fprintf(f, "%d %llu %d", r, (unsigned long long)nd->id, type[nd->kind]);
            for (int32_t k = 0; k < nd->n_deps; k++)
                fprintf(f, " %llu", (unsigned long long)w.deps[nd->deps_offset + k]);
            fputc('\n', f);
        }
    const int bad = fclose(f) != 0;
    step_workload_free(&w);
    step_free(s);
    sim_star_destroy(&star);
    return bad;
}
