/* output.h - what estimate and search print: a small JSON writer (over cJSON) and the shared blocks.
 *
 * Contract
 * - json_writer_t is caller-allocated and writes to a caller-owned FILE. It builds a cJSON tree in
 *   call order (members keep their order) and json_finish() prints it with cJSON_Print, frees it and
 *   ends the document with a newline; it returns -1 (printing nothing) if an allocation failed.
 *   json_take() hands the tree to the caller instead (for sweep lines); then f may be NULL.
 *   Doubles round-trip exactly (cJSON prints 17 significant digits when 15 do not suffice);
 *   non-finite doubles print as null. The caller balances open/close calls (depth <= 16).
 * - The output_* functions print the JSON shapes fixed by docs/cli.md (breakdown_s, config, ...)
 *   and the matching text. Write errors are left in the FILE's error flag for the caller to check.
 */
#ifndef STEPSIM_OUTPUT_H
#define STEPSIM_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

#include "model.h"
#include "scenario.h"
#include "step.h"

#define JSON_MAX_DEPTH 16

struct cJSON;
typedef struct json_writer {
    FILE *f;
    struct cJSON *stack[JSON_MAX_DEPTH]; /* stack[0] is the document, stack[depth-1] the open container */
    int depth;
    int failed;   /* an allocation failed, or nesting exceeded JSON_MAX_DEPTH */
    int unpushed; /* containers opened after a failure, not on the stack */
} json_writer_t;

void json_start(json_writer_t *w, FILE *f); /* opens the top-level object */
int json_finish(json_writer_t *w);          /* prints the document and "\n"; -1 if out of memory */
/* Ends the document and returns it (the caller frees it with cJSON_Delete), or NULL if an allocation
 * failed (nothing to free). */
struct cJSON *json_take(json_writer_t *w);
/* Print a document as json_finish() does: cJSON_Print, then "\n". -1 if out of memory. */
int json_print(FILE *f, const struct cJSON *doc);
/* key is NULL inside arrays. */
void json_open_object(json_writer_t *w, const char *key);
void json_close_object(json_writer_t *w);
void json_open_array(json_writer_t *w, const char *key);
void json_close_array(json_writer_t *w);
void json_number(json_writer_t *w, const char *key, double v);
void json_int(json_writer_t *w, const char *key, int64_t v);
void json_string(json_writer_t *w, const char *key, const char *s);
void json_bool(json_writer_t *w, const char *key, int b);

/* "breakdown_s": compute, memory, tp_comm, pp_comm, dp_comm, bubble (seconds). */
void output_breakdown_json(json_writer_t *w, const model_summary_t *s);
/* "config": strategy, degrees, nv counts (nv_tp = nv_tp1 * nv_tp2) and n_microbatches; with job
 * (estimate) also gpus, nvlink_size, global_batch, model, system, compat. */
void output_config_json(json_writer_t *w, const model_summary_t *s, const model_job_t *job,
                        const scenario_t *scn);
/* "training": the corrected model's training options in effect (every field, when any is set or
 * given is 1: scenario_optimizer_step_given; the same object as in "config"), for outputs whose "config"
 * is not output_config_json's (search, compare, validate). */
void output_training_json(json_writer_t *w, const model_job_t *job, int given);
/* "trace": file, complete_events, flow_arrows, counter_events (a written trace). */
struct trace_writer_stats;
void output_trace_json(json_writer_t *w, const char *file, const struct trace_writer_stats *st);
/* "memory_gb_parts": weights, gradients, optimizer, activations, fp8_weights (GB per GPU). */
void output_memory_json(json_writer_t *w, const model_summary_t *s);

/* Throughput as people read it for a job whose iteration takes iteration_time_s (model_throughput):
 * the keys model_tflops_per_gpu (TFLOP/s), tokens_per_s_per_gpu and mfu (a fraction), with prefix
 * before each key ("" or e.g. "sim_"). */
void output_throughput_json(json_writer_t *w, const char *prefix, const model_job_t *job,
                            double iteration_time_s);
/* Two text lines, indented by two, labels padded to label_width: "model TFLOP/s per GPU  412.3 (MFU
 * 41.67% of the bf16 peak 989.4)" and "tokens/s per GPU  ...". */
void output_throughput_text(FILE *f, int label_width, const model_job_t *job, double iteration_time_s);
/* The precision in effect: the training field in the corrected model, bf16 in the reference. */
model_precision_t output_precision(const model_job_t *job);

/* "1d dp 16 tp 8 pp 32 ..." style text of a layout: "tp 8" or "tp 4x2 (tp1 x tp2)". */
void output_layout_text(FILE *f, const model_parallel_t *p);
/* "(tp 8, dp 1, pp 1)" or "(tp1 4, tp2 2, dp 1, pp 1)". */
void output_nv_text(char *buf, size_t n, const model_parallel_t *p);
/* Text output fits OUTPUT_COLUMNS columns (tests/stepsim/test_columns.c checks every command). */
#define OUTPUT_COLUMNS 100
/* text and a line break, wrapped at spaces to OUTPUT_COLUMNS; continuation lines are indented by
 * indent spaces; a '\n' in text starts a new line (not indented). */
void output_wrapped(FILE *f, int indent, const char *text);
/* The same, breaking only after ", " (a list whose items stay whole). */
void output_wrapped_list(FILE *f, int indent, const char *text);
/* The header: model, system, GPUs, NVLink domain, global batch, compat (wrapped), and the training
 * options when set. */
void output_job_header(FILE *f, const char *command, const model_job_t *job, const scenario_t *scn);

/* The data bytes each parallel group sent over the step (step_group_traffic): a text table, or the
 * JSON object "bytes_sent": {"tp": {"per_gpu_bytes", "total_bytes"}, "cp", "pp", "dp"}. */
void output_traffic_text(FILE *f, const step_traffic_t *t);
void output_traffic_json(json_writer_t *w, const step_traffic_t *t);

#endif
