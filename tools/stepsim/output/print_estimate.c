/* print_estimate.c - what `stepsim estimate` prints: its --json object and its text. */
#include <inttypes.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "output.h"
#include "print.h"

/* ---- JSON ------------------------------------------------------------------------------------ */

static void block_json(json_writer_t *w, const model_summary_t *s) {
    json_open_object(w, "block");
    json_number(w, "t_fwd_s", s->block_t_fwd_s);
    json_number(w, "t_bwd_s", s->block_t_bwd_s);
    json_number(w, "flops_tflop", s->block_flops_tflop);
    json_number(w, "activations_gb", s->block_activations_gb);
    json_number(w, "weights_gb", s->block_weights_gb);
    json_close_object(w);
}

static void detail_json(json_writer_t *w, const model_summary_t *s, const model_job_t *job) {
    json_open_object(w, "detail");
    json_int(w, "layers_per_stage", s->layers_per_stage);
    json_number(w, "flops_per_gpu_tflop", s->flops_per_gpu_tflop);
    json_number(w, "hbm_capacity_gb", job->system.hbm_capacity_gb);
    json_number(w, "dp_allgather_one_s", s->dp_allgather_one_s);
    json_number(w, "dp_reducescatter_one_s", s->dp_reducescatter_one_s);
    json_number(w, "dp_allgather_s", s->dp_allgather_s);
    json_number(w, "dp_reducescatter_s", s->dp_reducescatter_s);
    json_number(w, "p2p_volume_gb", s->p2p_volume_gb);
    json_number(w, "p2p_one_s", s->p2p_one_s);
    json_number(w, "pp_fwd_s", s->pp_fwd_s);
    json_number(w, "pp_bwd_s", s->pp_bwd_s);
    json_close_object(w);
}

static const char *group_name(model_group_t g) {
    static const char *const names[] = {"tp1", "tp2", "dp", "pp"};
    if (g == MODEL_GROUP_EP)
        return "ep";
    if (g == MODEL_GROUP_ETP)
        return "etp";
    return (unsigned)g < 4 ? names[g] : "?";
}

static void pass_json(json_writer_t *w, const char *key, const model_pass_t *p) {
    json_open_object(w, key);
    json_number(w, "flops_tflop", p->flops_tflop);
    json_number(w, "hbm_gb", p->hbm_gb);
    json_number(w, "comp_s", p->comp_s);
    json_number(w, "mem_s", p->mem_s);
    json_number(w, "mem_exposed_s", p->mem_exposed_s);
    json_number(w, "comm_s", p->comm_s);
    json_number(w, "time_s", p->time_s);
    json_open_array(w, "colls");
    for (int i = 0; i < p->n_colls && i < MODEL_MAX_COLLS; i++) {
        const model_coll_t *c = &p->colls[i];
        json_open_object(w, NULL);
        json_string(w, "op", model_coll_op_name(c->op));
        json_string(w, "group", group_name(c->group));
        json_number(w, "volume_gb", c->volume_gb);
        json_int(w, "group_size", c->group_size);
        json_int(w, "per_domain", c->per_domain);
        json_number(w, "time_s", c->time_s);
        json_close_object(w);
    }
    json_close_array(w);
    if (p->n_gemms > 0) { /* the GEMM time by shape (a system with an SM count): tiles and waves */
        json_open_array(w, "gemms");
        for (int i = 0; i < p->n_gemms && i < MODEL_MAX_GEMMS; i++) {
            const model_gemm_t *g = &p->gemms[i];
            json_open_object(w, NULL);
            json_int(w, "m", g->m);
            json_int(w, "n", g->n);
            json_int(w, "k", g->k);
            json_int(w, "batch", g->batch);
            json_int(w, "tile_m", g->tile_m);
            json_int(w, "tile_n", g->tile_n);
            json_int(w, "tiles", g->tiles);
            json_int(w, "split_k", g->split_k);
            json_int(w, "waves", g->waves);
            json_number(w, "time_s", g->time_s);
            json_close_object(w);
        }
        json_close_array(w);
    }
    json_close_object(w);
}

static void layers_json(json_writer_t *w, const model_block_t *b) {
    json_open_array(w, "layers");
    for (int i = 0; i < b->n_layers && i < MODEL_BLOCK_LAYERS; i++) {
        const model_layer_t *l = &b->layers[i];
        json_open_object(w, NULL);
        json_string(w, "name", l->name);
        json_string(w, "module", l->module == MODEL_MODULE_SA ? "sa" : "mlp");
        json_bool(w, "tensor_core", l->tensor_core);
        json_number(w, "weights_gb", l->weights_gb);
        json_number(w, "weight_grads_gb", l->weight_grads_gb);
        json_number(w, "activations_gb", l->activations_gb);
        pass_json(w, "fwd", &l->fwd);
        pass_json(w, "bwd", &l->bwd);
        json_close_object(w);
    }
    json_close_array(w);
}

static cJSON *estimate_json(const model_estimate_t *e, const model_job_t *job, const scenario_t *scn,
                            int layers) {
    const model_summary_t *s = &e->summary;
    json_writer_t w;
    json_start(&w, NULL);
    json_number(&w, "iteration_time_s", s->iteration_time_s);
    json_number(&w, "throughput_samples_per_s", s->throughput_samples_per_s);
    output_throughput_json(&w, "", job, s->iteration_time_s);
    json_number(&w, "memory_gb", s->memory_gb);
    json_bool(&w, "fits", s->fits);
    output_breakdown_json(&w, s);
    output_memory_json(&w, s);
    block_json(&w, s);
    output_config_json(&w, s, job, scn);
    detail_json(&w, s, job);
    if (scn->name[0])
        json_string(&w, "scenario", scn->name);
    if (layers)
        layers_json(&w, &e->block);
    return json_take(&w);
}

/* ---- text ------------------------------------------------------------------------------------ */

static void breakdown_row(FILE *out, const char *label, double t, double total) {
    fprintf(out, "    %-26s %14.6f %9.2f\n", label, t, total > 0 ? 100.0 * t / total : 0.0);
}

static void summary_text(FILE *out, const model_summary_t *s, const model_job_t *job) {
    double t = s->iteration_time_s;
    fprintf(out, "\n  %-30s %.6f s\n", "iteration time", t);
    fprintf(out, "  %-30s %.4f samples/s\n", "throughput", s->throughput_samples_per_s);
    output_throughput_text(out, 30, job, t);
    fprintf(out, "  %-30s %.3f GB of %.6g GB: %s\n", "memory per GPU", s->memory_gb,
            job->system.hbm_capacity_gb, s->fits ? "fits" : "DOES NOT FIT");
    fprintf(out, "  %-30s %.6g TFLOP\n", "FLOPs per GPU per iteration", s->flops_per_gpu_tflop);
    fprintf(out, "\n  %-30s %14s %9s\n", "time breakdown", "time (s)", "share (%)");
    breakdown_row(out, "compute", s->compute_s, t);
    breakdown_row(out, "memory (exposed)", s->memory_s, t);
    breakdown_row(out, "tensor-parallel comm", s->tp_comm_s, t);
    breakdown_row(out, "pipeline p2p comm", s->pp_comm_s, t);
    breakdown_row(out, "data-parallel comm", s->dp_comm_s, t);
    breakdown_row(out, "pipeline bubble", s->bubble_s, t);
    fprintf(out, "\n  %-30s %14s\n", "memory per GPU", "size (GB)");
    fprintf(out, "    %-26s %14.6f\n", "weights", s->weights_gb);
    fprintf(out, "    %-26s %14.6f\n", "gradients", s->grads_gb);
    fprintf(out, "    %-26s %14.6f\n", "optimizer states", s->optimizer_gb);
    fprintf(out, "    %-26s %14.6f\n", "activations", s->activations_gb);
    if (s->fp8_weights_gb > 0.0)
        fprintf(out, "    %-26s %14.6f\n", "FP8 weight copies", s->fp8_weights_gb);
    if (s->fsdp_gathered_gb > 0.0)
        fprintf(out, "    %-26s %14.6f\n", "fsdp units in flight", s->fsdp_gathered_gb);
}

static void block_text(FILE *out, const model_summary_t *s) {
    fprintf(out, "\n  one block, one microbatch\n");
    fprintf(out, "    %-26s %14.6g s\n", "forward time", s->block_t_fwd_s);
    fprintf(out, "    %-26s %14.6g s\n", "backward time", s->block_t_bwd_s);
    fprintf(out, "    %-26s %14.6g TFLOP\n", "FLOPs (fwd + bwd)", s->block_flops_tflop);
    fprintf(out, "    %-26s %14.6g GB\n", "activations kept", s->block_activations_gb);
    fprintf(out, "    %-26s %14.6g GB\n", "weights", s->block_weights_gb);
}

static const char *op_short(model_coll_op_t op) {
    switch (op) {
    case MODEL_COLL_ALLREDUCE:
        return "AR";
    case MODEL_COLL_ALLGATHER:
        return "AG";
    case MODEL_COLL_REDUCESCATTER:
        return "RS";
    case MODEL_COLL_BROADCAST:
        return "BC";
    case MODEL_COLL_REDUCE:
        return "RD";
    case MODEL_COLL_ALLTOALL:
        return "A2A";
    case MODEL_COLL_P2P:
        return "P2P";
    default:
        return "-";
    }
}

/* "AG 0.105" or "AG+RS 0.21" (total volume, GB, 3 digits as the table's) or "-". */
static void comm_cell(char *buf, size_t n, const model_pass_t *p) {
    double v = 0;
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->n_colls && i < MODEL_MAX_COLLS; i++) {
        used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "%s%s", i ? "+" : "",
                                 op_short(p->colls[i].op));
        v += p->colls[i].volume_gb;
    }
    if (p->n_colls <= 0)
        snprintf(buf, n, "-");
    else if (used < n)
        snprintf(buf + used, n - used, " %.3g", v);
}

/* One pass of a layer: 100 columns with the fwd row's act and weights cells (3 significant digits;
 * --json has every digit). */
static void pass_row(FILE *out, const char *name, const char *pass, const model_pass_t *p) {
    char comm[48];
    comm_cell(comm, sizeof comm, p);
    fprintf(out, "  %-10s %-3s %8.3g %8.3g %-11s %8.3g %8.3g %8.3g %8.3g", name, pass, p->flops_tflop,
            p->hbm_gb, comm, p->time_s, p->comp_s, p->mem_exposed_s, p->comm_s);
}

/* The GEMMs of the GEMM time by shape (none without an SM count): shape, tile, tiles, waves, time. */
static void gemms_text(FILE *out, const model_block_t *b) {
    int any = 0;
    for (int i = 0; i < b->n_layers && i < MODEL_BLOCK_LAYERS; i++)
        any |= b->layers[i].fwd.n_gemms > 0;
    if (!any)
        return;
    fprintf(out, "\n  GEMMs: C (M x N) = A (M x K) B (K x N), batch products; output tiles in waves over the "
                 "SMs\n");
    fprintf(out, "  %-10s %-3s %8s %8s %8s %6s %9s %7s %7s %6s %9s\n", "layer", "pass", "M", "N", "K",
            "batch", "tile", "tiles", "split-K", "waves", "time (s)");
    for (int i = 0; i < b->n_layers && i < MODEL_BLOCK_LAYERS; i++) {
        const model_layer_t *l = &b->layers[i];
        for (int pass = 0; pass < 2; pass++) {
            const model_pass_t *p = pass ? &l->bwd : &l->fwd;
            for (int j = 0; j < p->n_gemms && j < MODEL_MAX_GEMMS; j++) {
                const model_gemm_t *g = &p->gemms[j];
                char tile[48];
                snprintf(tile, sizeof tile, "%lldx%lld", (long long)g->tile_m, (long long)g->tile_n);
                fprintf(out, "  %-10s %-3s %8lld %8lld %8lld %6lld %9s %7lld %7lld %6lld %9.3g\n",
                        j ? "" : l->name, j ? "" : (pass ? "bwd" : "fwd"), (long long)g->m, (long long)g->n,
                        (long long)g->k, (long long)g->batch, tile, (long long)g->tiles,
                        (long long)g->split_k, (long long)g->waves, g->time_s);
            }
        }
    }
}

static void layers_text(FILE *out, const model_block_t *b) {
    fprintf(out, "\n  per-layer table: one block, one microbatch (comm: op and total volume; mem: exposed "
                 "time;\n  units in the header: TFLOP, GB, s)\n");
    fprintf(out, "  %-10s %-3s %8s %8s %-11s %8s %8s %8s %8s %8s %8s\n", "layer", "", "F TFLOP", "HBM GB",
            "comm GB", "time s", "comp s", "mem s", "comm s", "act GB", "wts GB");
    int module = -1;
    for (int i = 0; i < b->n_layers && i < MODEL_BLOCK_LAYERS; i++) {
        const model_layer_t *l = &b->layers[i];
        if ((int)l->module != module) {
            module = (int)l->module;
            fprintf(out, "  %s\n", l->module == MODEL_MODULE_SA ? "self-attention (SA):" : "MLP:");
        }
        pass_row(out, l->name, "fwd", &l->fwd);
        fprintf(out, " %8.3g %8.3g\n", l->activations_gb, l->weights_gb);
        pass_row(out, "", "bwd", &l->bwd);
        fputc('\n', out);
    }
    fprintf(out, "  %-10s %-3s %8s %8s %-11s %8.3g\n", "block", "fwd", "", "", "", b->t_fwd_s);
    fprintf(out, "  %-10s %-3s %8s %8s %-11s %8.3g\n", "", "bwd", "", "", "", b->t_bwd_s);
    gemms_text(out, b);
}

static void estimate_text(FILE *out, const model_estimate_t *e, const model_job_t *job, const scenario_t *scn,
                          int layers) {
    const model_summary_t *s = &e->summary;
    output_job_header(out, "estimate", job, scn);
    fprintf(out, "layout: ");
    output_layout_text(out, &s->par);
    if (model_is_moe(&job->model))
        fprintf(out, "  ep %" PRId64, s->experts_par.ep > 1 ? s->experts_par.ep : (int64_t)1);
    if (s->experts_par.etp > 1) /* etp 1 prints nothing: the outputs before etp are unchanged */
        fprintf(out, "  etp %" PRId64, s->experts_par.etp);
    fprintf(out,
            "\n        %" PRId64 " microbatches of %" PRId64 " sequences, %" PRId64 " blocks per stage\n",
            s->n_microbatches, s->par.mbs, s->layers_per_stage);
    summary_text(out, s, job);
    block_text(out, s);
    if (layers)
        layers_text(out, &e->block);
}

cJSON *print_estimate_json(const estimate_result_t *r, int layers) {
    return estimate_json(r->est, &r->job, r->scn, layers);
}

int print_estimate(FILE *out, const estimate_result_t *r, const cli_opts_t *opts) {
    if (!opts->json) {
        estimate_text(out, r->est, &r->job, r->scn, opts->layers);
        return 0;
    }
    cJSON *doc = print_estimate_json(r, opts->layers);
    int rc = doc ? json_print(out, doc) : -1;
    cJSON_Delete(doc);
    return rc;
}
