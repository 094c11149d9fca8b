/* output.c - a JSON writer over cJSON (exact doubles) and the result blocks shared by estimate and search. */
#include "output.h"
#include "trace.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* ---- JSON writer ----------------------------------------------------------------------------- */

/* The writer builds a cJSON tree in call order and cJSON prints it at json_finish(): cJSON owns the
 * escaping and the number format (shortest form that round-trips the double exactly). A failed
 * allocation marks the writer; json_finish() then prints nothing and reports it. */

static void attach(json_writer_t *w, const char *key, cJSON *item) {
    cJSON *parent = w->depth > 0 ? w->stack[w->depth - 1] : NULL;
    if (!item || !parent || w->failed) {
        cJSON_Delete(item);
        w->failed = 1;
        return;
    }
    /* Adding to an object copies the key: that allocation can fail too, and then the item is not
     * attached (a missing key is a lie; the writer fails instead). */
    const int added = cJSON_IsArray(parent) ? cJSON_AddItemToArray(parent, item)
                                            : cJSON_AddItemToObject(parent, key ? key : "", item);
    if (!added) {
        cJSON_Delete(item);
        w->failed = 1;
    }
}

static void open_container(json_writer_t *w, const char *key, cJSON *c) {
    if (!w->failed && c && w->depth < JSON_MAX_DEPTH) {
        attach(w, key, c);
        w->stack[w->depth++] = c;
        return;
    }
    cJSON_Delete(c);
    w->failed = 1;
    w->unpushed++; /* so that the matching close pops nothing */
}

static void close_container(json_writer_t *w) {
    if (w->unpushed > 0)
        w->unpushed--;
    else if (w->depth > 1)
        w->depth--;
}

void json_start(json_writer_t *w, FILE *f) {
    memset(w, 0, sizeof *w);
    w->f = f;
    w->stack[0] = cJSON_CreateObject();
    w->depth = 1;
    w->failed = w->stack[0] == NULL;
}

struct cJSON *json_take(json_writer_t *w) {
    cJSON *doc = w->stack[0];
    w->stack[0] = NULL;
    w->depth = 0;
    if (w->failed) {
        cJSON_Delete(doc);
        return NULL;
    }
    return doc;
}

int json_print(FILE *f, const cJSON *doc) {
    char *text = doc ? cJSON_Print(doc) : NULL;
    if (!text)
        return -1;
    fputs(text, f);
    fputc('\n', f);
    cJSON_free(text);
    return 0;
}

int json_finish(json_writer_t *w) {
    cJSON *doc = json_take(w);
    int rc = json_print(w->f, doc);
    cJSON_Delete(doc);
    return rc;
}

void json_open_object(json_writer_t *w, const char *key) {
    open_container(w, key, cJSON_CreateObject());
}

void json_close_object(json_writer_t *w) {
    close_container(w);
}

void json_open_array(json_writer_t *w, const char *key) {
    open_container(w, key, cJSON_CreateArray());
}

void json_close_array(json_writer_t *w) {
    close_container(w);
}

void json_number(json_writer_t *w, const char *key, double v) {
    attach(w, key, isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull());
}

void json_int(json_writer_t *w, const char *key, int64_t v) {
    attach(w, key, cJSON_CreateNumber((double)v));
}

/* Every string of the JSON output is UTF-8: input text that is not is refused by its reader, but a
 * file name (the topology's name is its file's) may hold any bytes; each invalid one becomes U+FFFD. */
void json_string(json_writer_t *w, const char *key, const char *s) {
    s = s ? s : "";
    const size_t n = strlen(s);
    if (utf8_invalid_at(s, n) == n) {
        attach(w, key, cJSON_CreateString(s));
        return;
    }
    char *clean = utf8_sanitize(s);
    attach(w, key, clean ? cJSON_CreateString(clean) : NULL);
    free(clean);
}

void json_bool(json_writer_t *w, const char *key, int b) {
    attach(w, key, cJSON_CreateBool(b));
}

/* ---- shared result blocks -------------------------------------------------------------------- */

void output_breakdown_json(json_writer_t *w, const model_summary_t *s) {
    json_open_object(w, "breakdown_s");
    json_number(w, "compute", s->compute_s);
    json_number(w, "memory", s->memory_s);
    json_number(w, "tp_comm", s->tp_comm_s);
    json_number(w, "pp_comm", s->pp_comm_s);
    json_number(w, "dp_comm", s->dp_comm_s);
    json_number(w, "bubble", s->bubble_s);
    json_close_object(w);
}

void output_memory_json(json_writer_t *w, const model_summary_t *s) {
    json_open_object(w, "memory_gb_parts");
    json_number(w, "weights", s->weights_gb);
    json_number(w, "gradients", s->grads_gb);
    json_number(w, "optimizer", s->optimizer_gb);
    json_number(w, "activations", s->activations_gb);
    json_number(w, "fp8_weights", s->fp8_weights_gb);
    if (s->fsdp_gathered_gb > 0.0) /* fsdp only: other outputs unchanged */
        json_number(w, "fsdp_gathered", s->fsdp_gathered_gb);
    json_close_object(w);
}

model_precision_t output_precision(const model_job_t *job) {
    return job->compat == MODEL_COMPAT_CORRECTED ? job->training.precision : MODEL_PRECISION_BF16;
}

void output_throughput_json(json_writer_t *w, const char *prefix, const model_job_t *job,
                            double iteration_time_s) {
    model_throughput_t t;
    model_throughput(job, iteration_time_s, &t);
    char key[64];
    snprintf(key, sizeof key, "%smodel_tflops_per_gpu", prefix);
    json_number(w, key, t.model_tflops_per_gpu);
    snprintf(key, sizeof key, "%stokens_per_s_per_gpu", prefix);
    json_number(w, key, t.tokens_per_s_per_gpu);
    snprintf(key, sizeof key, "%smfu", prefix);
    json_number(w, key, t.mfu);
}

void output_throughput_text(FILE *f, int label_width, const model_job_t *job, double iteration_time_s) {
    model_throughput_t t;
    model_throughput(job, iteration_time_s, &t);
    const model_precision_t p = output_precision(job);
    fprintf(f, "  %-*s %.1f (MFU %.2f%% of the %s peak %.6g)\n", label_width, "model TFLOP/s per GPU",
            t.model_tflops_per_gpu, 100.0 * t.mfu, model_precision_name(p),
            model_peak_tflop_per_s(&job->system, p));
    fprintf(f, "  %-*s %.1f\n", label_width, "tokens/s per GPU", t.tokens_per_s_per_gpu);
}

/* Whether a corrected job uses any training option, or its optimizer step was given (even off, the
 * estimate's default and not the simulations'; the reference has none). */
static int has_training(const model_job_t *job, int given) {
    const model_training_t *t = &job->training;
    return job->compat == MODEL_COMPAT_CORRECTED &&
           (given || t->recompute || t->sequence_parallel || t->attention || t->embedding ||
            t->optimizer_step || t->interleave > 1 || t->dp_comm || t->grad_accumulation || t->precision ||
            t->tp_comm_overlap || t->cp_comm || t->pp_comm_overlap || t->pipeline || t->fp8_param_gather);
}

/* "training": every field, when any is set. */
void output_training_json(json_writer_t *w, const model_job_t *job, int given) {
    const model_training_t *t = &job->training;
    if (!has_training(job, given))
        return;
    json_open_object(w, "training");
    json_string(w, "recompute", model_recompute_name(t->recompute));
    json_bool(w, "sequence_parallel", t->sequence_parallel == MODEL_SEQPAR_ON);
    json_string(w, "attention", model_attention_name(t->attention));
    json_bool(w, "embedding", t->embedding);
    json_bool(w, "optimizer_step", t->optimizer_step);
    json_int(w, "interleave", t->interleave > 1 ? t->interleave : 1);
    json_string(w, "dp_comm", model_dp_comm_name(t->dp_comm));
    json_string(w, "grad_accumulation", model_grad_accum_name(t->grad_accumulation));
    json_string(w, "precision", model_precision_name(t->precision));
    if (t->tp_comm_overlap) /* only when on, so that outputs without it stay as they were */
        json_bool(w, "tp_comm_overlap", 1);
    if (t->cp_comm != MODEL_CP_ALLGATHER) /* likewise */
        json_string(w, "cp_comm", model_cp_comm_name(t->cp_comm));
    if (t->pp_comm_overlap) /* likewise */
        json_bool(w, "pp_comm_overlap", 1);
    if (t->pipeline != MODEL_PIPELINE_1F1B) /* likewise */
        json_string(w, "pipeline_schedule", model_pipeline_name(t->pipeline));
    if (t->fp8_param_gather) /* likewise */
        json_bool(w, "fp8_param_gather", 1);
    json_close_object(w);
}

void output_config_json(json_writer_t *w, const model_summary_t *s, const model_job_t *job,
                        const scenario_t *scn) {
    const model_parallel_t *p = &s->par;
    json_open_object(w, "config");
    json_string(w, "strategy", model_strategy_name(p->strategy));
    json_int(w, "dp", p->dp);
    json_int(w, "tp", p->tp);
    json_int(w, "tp1", p->tp1);
    json_int(w, "tp2", p->tp2);
    json_int(w, "pp", p->pp);
    json_int(w, "mbs", p->mbs);
    json_int(w, "nb", p->nb);
    json_int(w, "nv_tp", p->nv_tp1 * p->nv_tp2);
    json_int(w, "nv_tp1", p->nv_tp1);
    json_int(w, "nv_tp2", p->nv_tp2);
    json_int(w, "nv_dp", p->nv_dp);
    json_int(w, "nv_pp", p->nv_pp);
    if (s->experts_par.ep > 0 || (job && model_is_moe(&job->model))) /* MoE only: dense output unchanged */
        json_int(w, "ep", s->experts_par.ep > 1 ? s->experts_par.ep : 1);
    if (s->experts_par.etp > 1) /* only with etp > 1: outputs with etp 1 unchanged */
        json_int(w, "etp", s->experts_par.etp);
    json_int(w, "n_microbatches", s->n_microbatches);
    if (job) {
        json_int(w, "gpus", job->gpus);
        json_int(w, "nvlink_size", job->system.nvlink_size);
        json_int(w, "global_batch", job->global_batch);
        json_string(w, "model", scenario_model_name(scn));
        json_string(w, "system", scenario_system_name(scn));
        json_string(w, "compat", model_compat_name(job->compat));
        output_training_json(w, job, scn && scenario_optimizer_step_given(scn));
    }
    json_close_object(w);
}

/* ---- text ------------------------------------------------------------------------------------ */

void output_nv_text(char *buf, size_t n, const model_parallel_t *p) {
    if (p->strategy == MODEL_STRATEGY_1D)
        snprintf(buf, n, "(tp %" PRId64 ", dp %" PRId64 ", pp %" PRId64 ")", p->nv_tp1, p->nv_dp, p->nv_pp);
    else
        snprintf(buf, n, "(tp1 %" PRId64 ", tp2 %" PRId64 ", dp %" PRId64 ", pp %" PRId64 ")", p->nv_tp1,
                 p->nv_tp2, p->nv_dp, p->nv_pp);
}

void output_layout_text(FILE *f, const model_parallel_t *p) {
    char nv[96];
    output_nv_text(nv, sizeof nv, p);
    fprintf(f, "%s  dp %" PRId64 "  ", model_strategy_name(p->strategy), p->dp);
    if (p->strategy == MODEL_STRATEGY_1D)
        fprintf(f, "tp %" PRId64, p->tp);
    else
        fprintf(f, "tp %" PRId64 " (tp1 %" PRId64 " x tp2 %" PRId64 ")", p->tp, p->tp1, p->tp2);
    fprintf(f, "  pp %" PRId64 "  mbs %" PRId64, p->pp, p->mbs);
    if (p->strategy == MODEL_STRATEGY_2D)
        fprintf(f, "  nb %" PRId64, p->nb);
    fprintf(f, "  nv %s", nv);
}

/* text wrapped to OUTPUT_COLUMNS, breaking only after an occurrence of sep (its trailing spaces
 * dropped at the break); continuation lines indented by indent; '\n' in text ends a line. */
static void wrap_at(FILE *f, int indent, const char *text, const char *sep) {
    const size_t sl = strlen(sep);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        const char *end = nl ? nl : p + strlen(p);
        int col = 0;
        size_t pending = 0; /* spaces owed before the next token on this line */
        for (const char *q = p; q < end;) {
            const char *s = q;
            while (s < end && strncmp(s, sep, sl) != 0)
                s++;
            const char *tok_end = s < end ? s + sl : end;
            size_t len = (size_t)(tok_end - q), trail = 0;
            while (trail < len && q[len - 1 - trail] == ' ')
                trail++;
            if (col > indent && col + (int)pending + (int)(len - trail) > OUTPUT_COLUMNS) {
                col = fprintf(f, "\n%*s", indent, "") - 1;
                pending = 0;
                while (len > trail && *q == ' ') /* no leading spaces on a continuation */
                    q++, len--;
            }
            col += fprintf(f, "%*s%.*s", (int)pending, "", (int)(len - trail), q);
            pending = trail;
            q = tok_end;
        }
        fputc('\n', f);
        p = nl ? nl + 1 : end;
    }
}

void output_wrapped(FILE *f, int indent, const char *text) {
    wrap_at(f, indent, text, " ");
}

void output_wrapped_list(FILE *f, int indent, const char *text) {
    wrap_at(f, indent, text, ", ");
}

void output_job_header(FILE *f, const char *command, const model_job_t *job, const scenario_t *scn) {
    char line[1024];
    int n = snprintf(line, sizeof line, "stepsim %s", command);
    if (scn->name[0])
        n += snprintf(line + n, sizeof line - (size_t)n, " [%s]", scn->name);
    snprintf(line + n, sizeof line - (size_t)n,
             ": model %s on %" PRId64 " x %s GPUs, NVLink domains of %" PRId64 ", global batch %" PRId64
             " sequences, compat %s",
             scenario_model_name(scn), job->gpus, scenario_system_name(scn), job->system.nvlink_size,
             job->global_batch, model_compat_name(job->compat));
    output_wrapped_list(f, 2, line);
    const model_training_t *t = &job->training;
    const int given = scenario_optimizer_step_given(scn);
    if (has_training(job, given)) {
        snprintf(line, sizeof line,
                 "training: recompute %s, sequence parallelism %s, %s attention, embedding %s, optimizer "
                 "step %s, interleave %" PRId64 ", dp comm %s, grad accumulation %s",
                 model_recompute_name(t->recompute), t->sequence_parallel == MODEL_SEQPAR_ON ? "on" : "off",
                 model_attention_name(t->attention), t->embedding ? "on" : "off",
                 t->optimizer_step ? "on" : "off", t->interleave > 1 ? t->interleave : 1,
                 model_dp_comm_name(t->dp_comm), model_grad_accum_name(t->grad_accumulation));
        output_wrapped_list(f, 10, line);
    }
    if (has_training(job, given) && t->precision != MODEL_PRECISION_BF16)
        fprintf(f, "precision: %s (Transformer Engine: the block's GEMMs at %.6g TFLOP/s)\n",
                model_precision_name(t->precision), model_peak_tflop_per_s(&job->system, t->precision));
    if (has_training(job, given) && t->tp_comm_overlap)
        fprintf(f, "          tp comm overlap on (chunked under the GEMMs)\n");
    if (has_training(job, given) && t->fp8_param_gather)
        fprintf(f, "          fp8 param gather on (GEMM weights stored and all-gathered in FP8)\n");
    if (has_training(job, given) && t->pp_comm_overlap)
        fprintf(f, "          pp comm overlap on (%s)\n",
                t->interleave > 1 ? "sends and receives under the compute"
                                  : "no effect without interleaving: batched send/receive pairs");
    if (has_training(job, given) && t->pipeline != MODEL_PIPELINE_1F1B)
        fprintf(f, "          pipeline schedule %s (%s)\n", model_pipeline_name(t->pipeline),
                t->pipeline == MODEL_PIPELINE_ZB_V ? "zero bubble on a V: two chunks per GPU, 1F1B's memory"
                : t->pipeline == MODEL_PIPELINE_DUALPIPE
                    ? "bidirectional: a stage and its mirror's copy per GPU, pp + 1 microbatches"
                    : "zero bubble: weight gradients fill the drain");
    if (has_training(job, given) && t->cp_comm != MODEL_CP_ALLGATHER)
        fprintf(f, "          cp comm %s (K and V passed around the context-parallel ranks)\n",
                model_cp_comm_name(t->cp_comm));
}

void output_trace_json(json_writer_t *w, const char *file, const trace_writer_stats_t *st) {
    json_open_object(w, "trace");
    json_string(w, "file", file);
    json_int(w, "complete_events", st->complete_events);
    json_int(w, "flow_arrows", st->flow_arrows);
    json_int(w, "counter_events", st->counter_events);
    json_close_object(w);
}

static const char *const TRAFFIC_GROUP[STEP_TRAFFIC_GROUPS] = {"tp", "cp", "pp", "dp", "ep"};

/* The groups printed: ep only for a job with experts (a dense job's output is unchanged). */
static int traffic_groups(const step_traffic_t *t) {
    return t->has_ep ? STEP_TRAFFIC_GROUPS : STEP_TRAFFIC_EP;
}

void output_traffic_text(FILE *f, const step_traffic_t *t) {
    fprintf(f, "\n  bytes sent per step (data bytes)   %14s %14s\n", "per GPU (GB)", "all GPUs (GB)");
    for (int g = 0; g < traffic_groups(t); g++)
        fprintf(f, "    %-32s %14.3f %14.3f\n", TRAFFIC_GROUP[g], t->per_gpu_bytes[g] * 1e-9,
                t->sent_bytes[g] * 1e-9);
    if (t->partial)
        fprintf(f, "    (a tensor collective was never measured: its bytes are left out)\n");
}

void output_traffic_json(json_writer_t *w, const step_traffic_t *t) {
    json_open_object(w, "bytes_sent");
    for (int g = 0; g < traffic_groups(t); g++) {
        json_open_object(w, TRAFFIC_GROUP[g]);
        json_number(w, "per_gpu_bytes", t->per_gpu_bytes[g]);
        json_number(w, "total_bytes", t->sent_bytes[g]);
        json_close_object(w);
    }
    if (t->partial)
        json_bool(w, "tensor_left_out", 1);
    json_close_object(w);
}
