/* print_collective.c - what `stepsim collective` prints: per size the time, the closed form, algbw
 * and busbw (docs/cli.md), as a table or one JSON object. */
#include <stdio.h>

#include "output.h"
#include "print.h"

static const char *fidelity_name(sim_fidelity_t f) {
    return f == SIM_FIDELITY_STEP ? "step" : "fast";
}

static int print_json(FILE *out, const collective_result_t *r) {
    json_writer_t w;
    json_start(&w, out);
    json_string(&w, "op", sim_coll_op_name(r->op));
    json_string(&w, "algo", sim_coll_algo_name(r->algo));
    json_int(&w, "gpus", r->gpus);
    json_string(&w, "proto", sim_proto_name(r->proto));
    json_string(&w, "topology", topo_name(r->topo));
    json_int(&w, "gpus_per_node", r->gpus_per_node);
    json_int(&w, "groups", r->groups);
    json_string(&w, "placement", r->strided ? "strided" : "contiguous");
    json_string(&w, "fidelity", fidelity_name(r->fidelity));
    json_string(&w, "calibration", r->calibrated ? "nccl" : "none");
    json_number(&w, "network_efficiency", r->network_efficiency);
    json_number(&w, "nvlink_efficiency", r->nvlink_efficiency);
    json_open_array(&w, "results");
    for (int i = 0; i < r->n_rows; i++) {
        const sim_coll_bench_result_t *x = &r->rows[i].res;
        json_open_object(&w, NULL);
        json_number(&w, "size_bytes", r->rows[i].size_bytes);
        json_number(&w, "time_s", x->time_s);
        json_number(&w, "closed_form_s", x->closed_form_s);
        json_number(&w, "algbw_bytes_per_s", x->algbw_bytes_per_s);
        json_number(&w, "busbw_bytes_per_s", x->busbw_bytes_per_s);
        json_string(&w, "algo", sim_coll_algo_name(x->algo));
        json_string(&w, "proto", sim_proto_name(x->proto));
        json_int(&w, "channels", x->channels);
        json_int(&w, "flows", x->flows);
        json_close_object(&w);
    }
    json_close_array(&w);
    return json_finish(&w);
}

static void print_text(FILE *out, const collective_result_t *r) {
    const int64_t per_group = r->gpus / r->groups;
    fprintf(out, "stepsim collective: %s, algo %s, proto %s on %s (%s): %lld GPUs, %lld per node\n",
            sim_coll_op_name(r->op), sim_coll_algo_name(r->algo), sim_proto_name(r->proto),
            topo_name(r->topo), topo_kind_name(topo_kind(r->topo)), (long long)r->gpus,
            (long long)r->gpus_per_node);
    fprintf(out,
            "%lld group%s of %lld, %s; fidelity %s; calibration %s (network links x %.3g, NVLink x %.3g)\n\n",
            (long long)r->groups, r->groups > 1 ? "s" : "", (long long)per_group,
            r->strided ? "strided" : "contiguous", fidelity_name(r->fidelity),
            r->calibrated ? "nccl" : "none", r->network_efficiency, r->nvlink_efficiency);
    fprintf(out, "%14s %12s %12s %10s %10s  %-16s %-6s %8s\n", "size", "time", "closed form", "algbw",
            "busbw", "algo", "proto", "channels");
    fprintf(out, "%14s %12s %12s %10s %10s\n", "(B)", "(us)", "(us)", "(GB/s)", "(GB/s)");
    for (int i = 0; i < r->n_rows; i++) {
        const sim_coll_bench_result_t *x = &r->rows[i].res;
        fprintf(out, "%14.0f %12.2f %12.2f %10.2f %10.2f  %-16s %-6s %8d\n", r->rows[i].size_bytes,
                x->time_s * 1e6, x->closed_form_s * 1e6, x->algbw_bytes_per_s / 1e9,
                x->busbw_bytes_per_s / 1e9, sim_coll_algo_name(x->algo), sim_proto_name(x->proto),
                (int)x->channels);
    }
}

int print_collective(FILE *out, const collective_result_t *r, int json) {
    if (json)
        return print_json(out, r);
    print_text(out, r);
    return 0;
}
