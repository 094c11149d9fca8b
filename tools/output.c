/* output.c - a streaming JSON writer (exact doubles) and the result blocks shared by estimate and search. */
#include "output.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* ---- JSON writer ----------------------------------------------------------------------------- */

static void indent(json_writer_t *w) {
    fputc('\n', w->f);
    for (int i = 0; i < w->depth; i++)
        fputs("  ", w->f);
}

static void write_escaped(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* Separator, newline and indentation, then "key": when key is given. */
static void member(json_writer_t *w, const char *key) {
    if (!w->first)
        fputc(',', w->f);
    w->first = 0;
    indent(w);
    if (key) {
        write_escaped(w->f, key);
        fputs(": ", w->f);
    }
}

static void open_container(json_writer_t *w, const char *key, char c) {
    member(w, key);
    fputc(c, w->f);
    w->depth++;
    w->first = 1;
}

static void close_container(json_writer_t *w, char c) {
    w->depth--;
    if (!w->first)
        indent(w);
    fputc(c, w->f);
    w->first = 0;
}

void json_start(json_writer_t *w, FILE *f) {
    w->f = f;
    w->depth = 1;
    w->first = 1;
    fputc('{', f);
}

void json_finish(json_writer_t *w) {
    close_container(w, '}');
    fputc('\n', w->f);
}

void json_open_object(json_writer_t *w, const char *key) {
    open_container(w, key, '{');
}

void json_close_object(json_writer_t *w) {
    close_container(w, '}');
}

void json_open_array(json_writer_t *w, const char *key) {
    open_container(w, key, '[');
}

void json_close_array(json_writer_t *w) {
    close_container(w, ']');
}

void json_number(json_writer_t *w, const char *key, double v) {
    member(w, key);
    if (isfinite(v))
        fprintf(w->f, "%.17g", v);
    else
        fputs("null", w->f);
}

void json_int(json_writer_t *w, const char *key, int64_t v) {
    member(w, key);
    fprintf(w->f, "%" PRId64, v);
}

void json_string(json_writer_t *w, const char *key, const char *s) {
    member(w, key);
    write_escaped(w->f, s);
}

void json_bool(json_writer_t *w, const char *key, int b) {
    member(w, key);
    fputs(b ? "true" : "false", w->f);
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
    json_int(w, "n_microbatches", s->n_microbatches);
    if (job) {
        json_int(w, "gpus", job->gpus);
        json_int(w, "nvlink_size", job->system.nvlink_size);
        json_int(w, "global_batch", job->global_batch);
        json_string(w, "model", scenario_model_name(scn));
        json_string(w, "system", scenario_system_name(scn));
        json_string(w, "compat", model_compat_name(job->compat));
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

void output_job_header(FILE *f, const char *command, const model_job_t *job, const scenario_t *scn) {
    fprintf(f, "stepsim %s", command);
    if (scn->name[0])
        fprintf(f, " [%s]", scn->name);
    fprintf(f,
            ": model %s on %" PRId64 " x %s GPUs, NVLink domains of %" PRId64 ", global batch %" PRId64
            " sequences, compat %s\n",
            scenario_model_name(scn), job->gpus, scenario_system_name(scn), job->system.nvlink_size,
            job->global_batch, model_compat_name(job->compat));
}
