/* scenario_training.c - the scenario's "training" object and its options (--recompute,
 * --sequence-parallel, ...): what a training run does beyond the transformer blocks
 * (model_training_t; docs/validation.md lists what each does). The corrected model only: the
 * reference has none of them, so giving one with compat reference is an error, not ignored. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checked.h"
#include "scenario_internal.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
    scenario_field_t field;
    const char *key;     /* in the "training" object */
    const char *allowed; /* for messages and help */
} TRAINING[] = {
    {SCN_RECOMPUTE, "recompute", "none, selective, full"},
    {SCN_SEQPAR, "sequence_parallel", "on, off"},
    {SCN_ATTENTION, "attention", "flash, materialized"},
    {SCN_EMBEDDING, "embedding", "on, off"},
    {SCN_OPTIMIZER_STEP, "optimizer_step", "on, off"},
    {SCN_INTERLEAVE, "interleave", "a positive integer (virtual stages per GPU)"},
    {SCN_DP_COMM, "dp_comm", "sharded, allreduce, allreduce-overlap, sharded-overlap, fsdp"},
    {SCN_GRAD_ACCUM, "grad_accumulation", "fused, add"},
    {SCN_PRECISION, "precision", "bf16, fp8"},
    {SCN_TP_COMM_OVERLAP, "tp_comm_overlap", "on, off"},
    {SCN_CP_COMM, "cp_comm", "allgather, ring"},
    {SCN_PP_COMM_OVERLAP, "pp_comm_overlap", "on, off"},
    {SCN_PIPELINE, "pipeline_schedule", "1f1b, zb-h1, zb-v, dualpipe (search: all)"},
    {SCN_FP8_PARAM_GATHER, "fp8_param_gather", "on, off"},
};

static int index_of(scenario_field_t f) {
    for (size_t i = 0; i < COUNT(TRAINING); i++)
        if (TRAINING[i].field == f)
            return (int)i;
    return -1;
}

int scn_is_training(scenario_field_t f) {
    return index_of(f) >= 0;
}

int scenario_optimizer_step_given(const scenario_t *scn) {
    return scn->given[SCN_OPTIMIZER_STEP];
}

/* on/off, also 1/0 and true/false; -1 for anything else. */
static int on_off(const char *text) {
    if (!strcmp(text, "on") || !strcmp(text, "1") || !strcmp(text, "true"))
        return 1;
    if (!strcmp(text, "off") || !strcmp(text, "0") || !strcmp(text, "false"))
        return 0;
    return -1;
}

static int positive(const char *text, int64_t *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (!text[0] || *end || errno || v < 1)
        return 0;
    *out = (int64_t)v;
    return 1;
}

/* Parse text into t's field f; 1 if it is one of the allowed values. */
static int parse_value(model_training_t *t, scenario_field_t f, const char *text) {
    const int b = on_off(text);
    switch (f) {
    case SCN_RECOMPUTE:
        return model_recompute_parse(text, &t->recompute) == MODEL_OK;
    case SCN_ATTENTION:
        return model_attention_parse(text, &t->attention) == MODEL_OK;
    case SCN_DP_COMM:
        return model_dp_comm_parse(text, &t->dp_comm) == MODEL_OK;
    case SCN_CP_COMM:
        return model_cp_comm_parse(text, &t->cp_comm) == MODEL_OK;
    case SCN_GRAD_ACCUM:
        return model_grad_accum_parse(text, &t->grad_accumulation) == MODEL_OK;
    case SCN_PRECISION:
        return model_precision_parse(text, &t->precision) == MODEL_OK;
    case SCN_SEQPAR:
        if (b >= 0)
            t->sequence_parallel = b ? MODEL_SEQPAR_ON : MODEL_SEQPAR_OFF;
        return b >= 0;
    case SCN_EMBEDDING:
        t->embedding = b;
        return b >= 0;
    case SCN_OPTIMIZER_STEP:
        t->optimizer_step = b;
        return b >= 0;
    case SCN_TP_COMM_OVERLAP:
        t->tp_comm_overlap = b;
        return b >= 0;
    case SCN_PP_COMM_OVERLAP:
        t->pp_comm_overlap = b;
        return b >= 0;
    case SCN_FP8_PARAM_GATHER:
        t->fp8_param_gather = b;
        return b >= 0;
    case SCN_INTERLEAVE:
        return positive(text, &t->interleave);
    case SCN_PIPELINE: /* the estimate's schedules (model_job_check) */
        return model_pipeline_parse(text, &t->pipeline) == MODEL_OK && t->pipeline != MODEL_PIPELINE_GPIPE;
    default:
        return 0;
    }
}

int scn_training_set(scenario_t *scn, scenario_field_t f, const char *where, const char *text,
                     cli_diag_t *diag) {
    const int i = index_of(f);
    model_training_t t = scn->training;
    if (f == SCN_PIPELINE) /* "all": a search dimension (scenario_resolve refuses it elsewhere) */
        scn->pipeline_all = strcmp(text, "all") == 0;
    if (f == SCN_PIPELINE && scn->pipeline_all)
        t.pipeline = MODEL_PIPELINE_1F1B;
    else if (i < 0 || !parse_value(&t, f, text))
        return cli_fail(diag, CLI_EUSAGE, "%s: \"%.60s\" is not a value of %s; allowed: %s", where, text,
                        scenario_field_path(f), i < 0 ? "?" : TRAINING[i].allowed);
    scn->training = t;
    return CLI_OK;
}

/* The text of a JSON value for scn_training_set: a string as is, a boolean as on/off, an integral
 * number in decimal; NULL for anything else. */
static const char *value_text(const cJSON *v, char *buf, size_t n) {
    if (cJSON_IsString(v) && v->valuestring)
        return v->valuestring;
    if (cJSON_IsBool(v))
        return cJSON_IsTrue(v) ? "on" : "off";
    int64_t iv; /* the cast only after the range check (checked_double_to_i64) */
    if (cJSON_IsNumber(v) && !checked_double_to_i64(v->valuedouble, &iv) && v->valuedouble == (double)iv) {
        snprintf(buf, n, "%lld", (long long)iv);
        return buf;
    }
    return NULL;
}

int scn_parse_training(scenario_t *scn, const scn_src_t *src, const cJSON *obj) {
    const char *keys[COUNT(TRAINING)];
    for (size_t i = 0; i < COUNT(TRAINING); i++)
        keys[i] = TRAINING[i].key;
    if (!cJSON_IsObject(obj)) {
        char what[96];
        scn_describe(obj, what, sizeof what);
        return cli_fail(src->diag, CLI_EUSAGE,
                        "%straining: %s is not an object; allowed: an object with %s, %s, ...", src->prefix,
                        what, keys[0], keys[1]);
    }
    int rc = scn_check_keys(src, obj, "training", keys, COUNT(keys));
    for (size_t i = 0; i < COUNT(TRAINING) && !rc; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, TRAINING[i].key);
        if (!v)
            continue;
        char where[320], num[32], what[96];
        snprintf(where, sizeof where, "%s%s", src->prefix, scenario_field_path(TRAINING[i].field));
        const char *text = value_text(v, num, sizeof num);
        scn_describe(v, what, sizeof what);
        if (!text)
            return cli_fail(src->diag, CLI_EUSAGE, "%s: %s is not a value of it; allowed: %s", where, what,
                            TRAINING[i].allowed);
        rc = scn_training_set(scn, TRAINING[i].field, where, text, src->diag);
        if (!rc) {
            scn->given[TRAINING[i].field] = 1;
            scn->origin[TRAINING[i].field] = src->origin;
        }
    }
    return rc;
}

int scn_training_for_reference(const scenario_t *scn, cli_diag_t *diag) {
    if (scn->compat != MODEL_COMPAT_REFERENCE)
        return CLI_OK;
    for (size_t i = 0; i < COUNT(TRAINING); i++) {
        const scenario_field_t f = TRAINING[i].field;
        if (!scn->given[f])
            continue;
        if (scn->origin[f] == SCN_FROM_OPTION)
            return cli_fail(diag, CLI_EUSAGE,
                            "%s: the reference model has no training options; allowed: --compat corrected",
                            scenario_field_option(f));
        return cli_fail(diag, CLI_EUSAGE,
                        "%s: %s: the reference model has no training options; allowed: compat corrected",
                        scn->file, scenario_field_path(f));
    }
    return CLI_OK;
}
