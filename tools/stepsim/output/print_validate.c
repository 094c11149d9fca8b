/* print_validate.c - what `stepsim validate --measured` prints: the measured runs against the
 * predictions, the --sim table and the --calibrate fits, as text or as one JSON object. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "calibrate.h"
#include "output.h"
#include "print.h"
#include "validate.h"

static const char *const PRECISIONS[] = {"fp16", "bf16", "fp8"};
static const char *const FFN_ACTS[] = {"gelu", "swiglu", "relu2"};

static void breakdown_json(json_writer_t *w, const model_summary_t *s) {
    output_breakdown_json(w, s);
    json_open_object(w, "detail_s");
    json_number(w, "optimizer_step", s->optimizer_s);
    json_number(w, "dp_allreduce", s->dp_allreduce_s);
    json_number(w, "embedding_sync", s->embedding_sync_s);
    json_number(w, "first_stage_per_microbatch", s->stage_fwd_bwd_s[0]);
    json_number(w, "last_stage_per_microbatch", s->stage_fwd_bwd_s[1]);
    json_close_object(w);
}

static int print_json(FILE *out, const validate_result_t *vr, cJSON *sim, cJSON *calib) {
    const run_row_t *rows = vr->rows;
    const size_t n = vr->n;
    const summary_stats_t *st = &vr->stats;
    json_writer_t w;
    json_start(&w, out);
    json_open_array(&w, "rows");
    for (size_t i = 0; i < n; i++) {
        const run_row_t *r = &rows[i];
        const model_job_t *j = &r->job;
        json_open_object(&w, NULL);
        json_string(&w, "name", r->name);
        json_number(&w, "predicted_s", r->pred.iteration_time_s);
        json_number(&w, "measured_s", r->measured_s);
        json_number(&w, "error_pct", r->error_pct);
        output_throughput_json(&w, "", j, r->pred.iteration_time_s);
        output_throughput_json(&w, "measured_", j, r->measured_s);
        json_string(&w, "source", vr->source);
        json_number(&w, "reference_predicted_s", r->ref.iteration_time_s);
        json_number(&w, "reference_error_pct", r->ref_error_pct);
        json_string(&w, "system", r->system);
        json_int(&w, "gpus", j->gpus);
        json_int(&w, "tp", j->par.tp1);
        json_int(&w, "pp", j->par.pp);
        json_int(&w, "dp", j->par.dp);
        json_int(&w, "cp", r->cp);
        json_int(&w, "mbs", j->par.mbs);
        json_bool(&w, "mbs_recorded", r->mbs_recorded);
        json_int(&w, "interleave", r->pred.interleave);
        json_bool(&w, "interleave_recorded", r->interleave_recorded);
        json_string(&w, "recompute", model_recompute_name(j->training.recompute));
        json_bool(&w, "sequence_parallel", j->training.sequence_parallel == MODEL_SEQPAR_ON);
        json_string(&w, "attention", model_attention_name(j->training.attention));
        json_bool(&w, "attention_recorded", r->attention_recorded);
        json_string(&w, "dp_comm", model_dp_comm_name(j->training.dp_comm));
        json_string(&w, "grad_accumulation", model_grad_accum_name(j->training.grad_accumulation));
        json_int(&w, "gbs", j->global_batch);
        json_bool(&w, "gbs_recorded", r->gbs_recorded);
        json_int(&w, "ga", r->set.ga);
        json_string(&w, "precision", PRECISIONS[r->set.precision]);
        json_int(&w, "kv_heads", r->set.kv_heads);
        json_string(&w, "ffn_act", FFN_ACTS[r->set.ffn_act]);
        json_string(&w, "norm", r->set.norm == RUN_NORM_RMSNORM ? "rmsnorm" : "layernorm");
        json_string(&w, "position", r->set.position == RUN_POSITION_ROTARY ? "rotary" : "learned");
        json_bool(&w, "untied_embeddings", r->set.untied_embeddings);
        json_bool(&w, "fsdp", r->set.fsdp);
        json_bool(&w, "tp_comm_overlap", r->set.tp_comm_overlap);
        json_bool(&w, "distributed_optimizer", r->set.distributed_optimizer);
        json_bool(&w, "overlap_grad_reduce", r->set.overlap_grad_reduce);
        json_bool(&w, "overlap_param_gather", r->set.overlap_param_gather);
        json_bool(&w, "fp8_param_gather", r->job.training.fp8_param_gather);
        if (r->set.measured_tokens_per_s_per_gpu > 0.0)
            json_number(&w, "measured_tokens_per_s_per_gpu", r->set.measured_tokens_per_s_per_gpu);
        json_open_array(&w, "not_modelled");
        for (int k = 0; k < r->n_not_modelled; k++)
            json_string(&w, NULL, r->not_modelled[k]);
        json_close_array(&w);
        json_number(&w, "memory_gb", r->pred.memory_gb);
        json_bool(&w, "fits", r->pred.fits);
        breakdown_json(&w, &r->pred);
        json_close_object(&w);
    }
    json_close_array(&w);
    json_number(&w, "mean_abs_error_pct", st->mean_abs);
    json_number(&w, "max_abs_error_pct", st->max_abs);
    json_string(&w, "source", vr->source);
    json_string(&w, "compat", "corrected");
    json_string(&w, "file", vr->file);
    json_string(&w, "unrecorded", vr->unrecorded_search ? "search" : "fixed");
    json_open_object(&w, "reference");
    json_number(&w, "mean_abs_error_pct", st->ref_mean_abs);
    json_number(&w, "max_abs_error_pct", st->ref_max_abs);
    json_close_object(&w);
    /* owned by the document from here */
    if (sim && !w.failed && w.depth > 0)
        cJSON_AddItemToObject(w.stack[0], "simulation", sim);
    else
        cJSON_Delete(sim);
    if (calib && !w.failed && w.depth > 0)
        cJSON_AddItemToObject(w.stack[0], "calibration", calib);
    else
        cJSON_Delete(calib);
    return json_finish(&w);
}

/* The run names' column width: 14, or the longest name up to 40. */
static int name_width(const run_row_t *rows, size_t n) {
    int w = 14;
    for (size_t i = 0; i < n; i++) {
        const int len = (int)strlen(rows[i].name);
        w = len > w ? (len < 30 ? len : 30) : w; /* at most 30: the tables fit 100 columns */
    }
    return w;
}

static void print_text(FILE *out, const validate_result_t *vr) {
    const run_row_t *rows = vr->rows;
    const size_t n = vr->n;
    const summary_stats_t *st = &vr->stats;
    const int nw = name_width(rows, n);
    size_t gbs_ruled = 0, noted = 0;
    for (size_t i = 0; i < n; i++) {
        gbs_ruled += !rows[i].gbs_recorded;
        noted += rows[i].n_not_modelled > 0;
    }
    char line[1024];
    snprintf(line, sizeof line, "stepsim validate: %s: %zu measured runs", vr->file, n);
    output_wrapped(out, 2, line);
    snprintf(line, sizeof line,
             "prediction source: %s (%s); reference: the published model on the same layout", vr->source,
             vr->source_describe);
    output_wrapped(out, 2, line);
    fprintf(out, "unrecorded mbs / interleave (marked *): %s\n",
            vr->unrecorded_search ? "search (fastest predicted setting that fits, for the run's degrees)"
                                  : "fixed (mbs 1, interleave 1)");
    if (gbs_ruled)
        fprintf(out,
                "unrecorded gbs (%zu runs): dp x mbs x ga, ga = pp unless given; their measured time is "
                "the measured throughput at that gbs\n",
                gbs_ruled);
    fprintf(out, "\n");
    /* two tables of 100 columns at most: the runs as predicted, then the times */
    fprintf(out, "  %-*s %5s %3s %3s %3s %3s %4s %3s %-9s %2s %s\n", nw, "run", "gpus", "tp", "pp", "dp",
            "cp", "mbs", "v", "recompute", "sp", "attention");
    for (size_t i = 0; i < n; i++) {
        const run_row_t *r = &rows[i];
        const model_job_t *j = &r->job;
        char mbs[16], v[16];
        snprintf(mbs, sizeof mbs, "%" PRId64 "%s", j->par.mbs, r->mbs_recorded ? "" : "*");
        snprintf(v, sizeof v, "%" PRId64 "%s", r->pred.interleave, r->interleave_recorded ? "" : "*");
        fprintf(out,
                "  %-*.*s %5" PRId64 " %3" PRId64 " %3" PRId64 " %3" PRId64 " %3" PRId64
                " %4s %3s %-9s %2d %s\n",
                nw, nw, r->name, j->gpus, j->par.tp1, j->par.pp, j->par.dp, r->cp, mbs, v,
                model_recompute_name(j->training.recompute), j->training.sequence_parallel == MODEL_SEQPAR_ON,
                model_attention_name(j->training.attention));
    }
    fprintf(out, "\n  %-*s %12s %12s %9s %13s %9s\n", nw, "run", "analytic (s)", "measured (s)", "error %",
            "reference (s)", "error %");
    for (size_t i = 0; i < n; i++) {
        const run_row_t *r = &rows[i];
        fprintf(out, "  %-*.*s %12.4f %12.4f %+9.2f %13.4f %+9.2f%s\n", nw, nw, r->name,
                r->pred.iteration_time_s, r->measured_s, r->error_pct, r->ref.iteration_time_s,
                r->ref_error_pct, r->pred.fits ? "" : "  no fit");
    }
    for (size_t i = 0; i < n; i++)
        if (!rows[i].pred.fits) {
            fprintf(out,
                    "  (no fit: predicted not to fit in the GPU's memory; the run is predicted anyway)\n");
            break;
        }
    fprintf(out, "\n  %-30s %9.2f %%   (reference %.2f %%)\n", "mean absolute error", st->mean_abs,
            st->ref_mean_abs);
    fprintf(out, "  %-30s %9.2f %%   (reference %.2f %%)\n", "max absolute error", st->max_abs,
            st->ref_max_abs);
    fprintf(out, "\n  per GPU, predicted and measured (MFU against the dense peak of the run's precision)\n");
    fprintf(out, "  %-14s %11s %11s %13s %13s %11s %11s\n", "run", "MFU an. %", "MFU meas. %", "TFLOP/s an.",
            "TFLOP/s meas.", "tok/s an.", "tok/s meas.");
    for (size_t i = 0; i < n; i++) {
        model_throughput_t a, m;
        model_throughput(&rows[i].job, rows[i].pred.iteration_time_s, &a);
        model_throughput(&rows[i].job, rows[i].measured_s, &m);
        fprintf(out, "  %-14.14s %11.2f %11.2f %13.1f %13.1f %11.1f %11.1f\n", rows[i].name, 100.0 * a.mfu,
                100.0 * m.mfu, a.model_tflops_per_gpu, m.model_tflops_per_gpu, a.tokens_per_s_per_gpu,
                m.tokens_per_s_per_gpu);
    }
    if (!noted)
        return;
    fprintf(out, "\nnot modelled (%zu of %zu runs; each is predicted without what is listed):\n", noted, n);
    for (size_t i = 0; i < n; i++) {
        if (!rows[i].n_not_modelled)
            continue;
        size_t used = (size_t)snprintf(line, sizeof line, "  %-*.*s ", nw, nw, rows[i].name);
        for (int k = 0; k < rows[i].n_not_modelled && used < sizeof line; k++)
            used += (size_t)snprintf(line + used, sizeof line - used, "%s%s", k ? ", " : "",
                                     rows[i].not_modelled[k]);
        output_wrapped_list(out, nw + 3, line);
    }
}

static void sim_text(FILE *out, const run_row_t *rows, size_t n, const sim_stats_t *s) {
    const sim_stats_t st = *s;
    const int nw = name_width(rows, n);
    fprintf(out,
            "\nthrough the simulation (--sim): each run's step simulated as it is; the simulation has the\n"
            "embedding and output layer in 1d only, so a 2d or 2d-seqp run gets their analytic cost\n"
            "(column 'added')\n\n");
    const int sw = nw < 14 ? nw : 14; /* names cut to 14, networks to 17: the table fits 100 columns */
    fprintf(out, "  %-*s %7s %9s %7s %9s %7s %9s %6s  %s\n", sw, "run", "added s", "sim,an. s", "error %",
            "sim,net s", "error %", "meas. s", "wall s", "network");
    for (size_t i = 0; i < n; i++) {
        const run_row_t *r = &rows[i];
        if (r->sim_error[0]) {
            char line[1024];
            snprintf(line, sizeof line, "  %-*.*s not simulated: %s", sw, sw, r->name, r->sim_error);
            output_wrapped(out, sw + 3, line);
            continue;
        }
        fprintf(out, "  %-*.*s %7.4f %9.4f %+7.2f %9.4f %+7.2f %9.4f %6.2f  %.17s\n", sw, sw, r->name,
                r->sim_unmodeled_s, r->sim_analytic_s, r->sim_analytic_error_pct, r->sim_network_s,
                r->sim_network_error_pct, r->measured_s, r->sim_wall_s, r->sim_topology);
    }
    fprintf(out, "\n  on the %zu of %zu runs simulated:   mean abs error   max abs error\n", st.simulated, n);
    static const char *const NAMES[3] = {"analytic model", "simulation, analytic comm",
                                         "simulation, network"};
    for (int k = 0; k < 3; k++)
        fprintf(out, "  %-34s %12.2f %% %13.2f %%\n", NAMES[k], st.mean_abs[k], st.max_abs[k]);
}

static cJSON *sim_json(const run_row_t *rows, size_t n, const sim_stats_t *s) {
    const sim_stats_t st = *s;
    json_writer_t w;
    json_start(&w, NULL);
    json_int(&w, "simulated_rows", (int64_t)st.simulated);
    static const char *const KEYS[3] = {"analytic", "sim_analytic_comm", "sim_network"};
    for (int k = 0; k < 3; k++) {
        json_open_object(&w, KEYS[k]);
        json_number(&w, "mean_abs_error_pct", st.mean_abs[k]);
        json_number(&w, "max_abs_error_pct", st.max_abs[k]);
        json_close_object(&w);
    }
    json_open_array(&w, "rows");
    for (size_t i = 0; i < n; i++) {
        const run_row_t *r = &rows[i];
        json_open_object(&w, NULL);
        json_string(&w, "name", r->name);
        if (r->sim_error[0]) {
            json_string(&w, "error", r->sim_error);
        } else {
            json_string(&w, "topology", r->sim_topology);
            json_number(&w, "unmodeled_added_s", r->sim_unmodeled_s);
            json_number(&w, "sim_analytic_comm_s", r->sim_analytic_s);
            json_number(&w, "sim_analytic_comm_error_pct", r->sim_analytic_error_pct);
            json_number(&w, "sim_network_s", r->sim_network_s);
            json_number(&w, "sim_network_error_pct", r->sim_network_error_pct);
        }
        json_close_object(&w);
    }
    json_close_array(&w);
    return json_take(&w);
}

/* The --calibrate object: every system's fit. NULL if out of memory. */
static cJSON *calibration_json(const validate_result_t *v) {
    cJSON *root = cJSON_CreateObject();
    cJSON *systems = root ? cJSON_AddArrayToObject(root, "systems") : NULL;
    if (!systems) {
        cJSON_Delete(root);
        return NULL;
    }
    cJSON_AddStringToObject(root, "objective", "least squares of the percentage errors");
    cJSON_AddNumberToObject(root, "grid_from", MODEL_CALIBRATE_FROM);
    cJSON_AddNumberToObject(root, "grid_to", MODEL_CALIBRATE_TO);
    cJSON_AddNumberToObject(root, "grid_step", MODEL_CALIBRATE_STEP);
    for (size_t i = 0; i < v->n_calib; i++) {
        cJSON *o = calib_json(v->calib[i].system, &v->calib[i].fit, v->calib[i].names);
        if (!o) {
            cJSON_Delete(root);
            return NULL;
        }
        cJSON_AddItemToArray(systems, o);
    }
    return root;
}

static void calibration_text(FILE *out, const validate_result_t *v) {
    fprintf(out,
            "\ncalibration (--calibrate): each system's FLOP efficiency fitted to its runs, least squares\n"
            "of the percentage errors over %.3f..%.3f in steps of %.3f, analytic model, the runs'\n"
            "settings kept as read; leave-one-out predicts each run from a fit to the others\n",
            MODEL_CALIBRATE_FROM, MODEL_CALIBRATE_TO, MODEL_CALIBRATE_STEP);
    for (size_t i = 0; i < v->n_calib; i++)
        calib_print_text(out, v->calib[i].system, &v->calib[i].fit, v->calib[i].names);
}

int print_validate(FILE *out, const validate_result_t *v, int json) {
    if (!json) {
        print_text(out, v);
        if (v->sim)
            sim_text(out, v->rows, v->n, &v->sim_stats);
        if (v->calibrate)
            calibration_text(out, v);
        return 0;
    }
    cJSON *calib = v->calibrate ? calibration_json(v) : NULL;
    if (v->calibrate && !calib)
        return -1;
    cJSON *sim = v->sim ? sim_json(v->rows, v->n, &v->sim_stats) : NULL;
    if (v->sim && !sim) {
        cJSON_Delete(calib);
        return -1;
    }
    return print_json(out, v, sim, calib);
}
