/* scenario.c - scenario loading: defaults, then a JSON file, then options; every value keeps its origin.
 *
 * Parsing is strict: an unknown key, a wrong JSON type or an impossible value stops with one
 * diagnostic line naming the source (file or option), the JSON path, the value and what is allowed.
 * JSON files are parsed in scenario_json.c, degrees derived in scenario_resolve.c.
 */
#include "alloc.h"
#include "scenario.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input_check.h"
#include "scenario_internal.h"
#include "scenario_jobs.h"
#include "topo_json.h"

/* ---- diagnostics and did-you-mean ------------------------------------------------------------ */

int cli_fail(cli_diag_t *d, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    va_end(ap);
    /* The contract is one line: fold any newline a value smuggled in. */
    for (char *p = d->msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return code;
}

/* Case-insensitive Levenshtein distance, both strings at most 63 characters (longer: a large value). */
static size_t edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    size_t row[64];
    if (la > 63 || lb > 63)
        return 1000;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *cli_suggest(const char *word, const char *const *cands, size_t n) {
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        if (!cands[i])
            continue;
        size_t d = edit_distance(word, cands[i]);
        if (d < best_d) {
            best_d = d;
            best = cands[i];
        }
    }
    /* A plausible typo: at most 2 edits, and fewer than half of the word's letters. */
    size_t len = strlen(word);
    if (best && best_d <= 2 && best_d * 2 <= len + 1)
        return best;
    return NULL;
}

/* " (did you mean \"x\"?)" or "", written into the caller's buffer. */
const char *scn_hint(char *buf, size_t n, const char *word, const char *const *cands, size_t count) {
    const char *s = cli_suggest(word, cands, count);
    if (s)
        snprintf(buf, n, " (did you mean \"%s\"?)", s);
    else
        buf[0] = '\0';
    return buf;
}

/* ---- the field table ------------------------------------------------------------------------- */

static const struct {
    const char *path;
    const char *option;
} FIELDS[SCN_FIELD_COUNT] = {
    [SCN_MODEL] = {"model", "--model"},
    [SCN_SYSTEM] = {"system", "--system"},
    [SCN_NVS] = {"nvlink_size", "--nvs"},
    [SCN_GPUS] = {"gpus", "--gpus"},
    [SCN_GBS] = {"global_batch", "--gbs"},
    [SCN_STRATEGY] = {"parallel.strategy", "--strategy"},
    [SCN_DP] = {"parallel.dp", "--dp"},
    [SCN_TP] = {"parallel.tp", "--tp"},
    [SCN_TP1] = {"parallel.tp1", "--tp1"},
    [SCN_TP2] = {"parallel.tp2", "--tp2"},
    [SCN_PP] = {"parallel.pp", "--pp"},
    [SCN_MBS] = {"parallel.mbs", "--mbs"},
    [SCN_NB] = {"parallel.nb", "--nb"},
    [SCN_NV_TP] = {"parallel.nv.tp", "--nv-tp"},
    [SCN_NV_TP1] = {"parallel.nv.tp1", "--nv-tp1"},
    [SCN_NV_TP2] = {"parallel.nv.tp2", "--nv-tp2"},
    [SCN_NV_DP] = {"parallel.nv.dp", "--nv-dp"},
    [SCN_NV_PP] = {"parallel.nv.pp", "--nv-pp"},
    [SCN_COMPAT] = {"compat", "--compat"},
    [SCN_RECOMPUTE] = {"training.recompute", "--recompute"},
    [SCN_SEQPAR] = {"training.sequence_parallel", "--sequence-parallel"},
    [SCN_ATTENTION] = {"training.attention", "--attention"},
    [SCN_EMBEDDING] = {"training.embedding", "--embedding"},
    [SCN_OPTIMIZER_STEP] = {"training.optimizer_step", "--optimizer-step"},
    [SCN_INTERLEAVE] = {"training.interleave", "--interleave"},
    [SCN_DP_COMM] = {"training.dp_comm", "--dp-comm"},
    [SCN_GRAD_ACCUM] = {"training.grad_accumulation", "--grad-accumulation"},
    [SCN_PRECISION] = {"training.precision", "--precision"},
    [SCN_TP_COMM_OVERLAP] = {"training.tp_comm_overlap", "--tp-comm-overlap"},
    [SCN_CP_COMM] = {"training.cp_comm", "--cp-comm"},
    [SCN_PP_COMM_OVERLAP] = {"training.pp_comm_overlap", "--pp-comm-overlap"},
    [SCN_PIPELINE] = {"training.pipeline_schedule", "--pipeline-schedule"},
    [SCN_TOPOLOGY] = {"topology", "--topology"},
    [SCN_EP] = {"parallel.ep", "--ep"},
    [SCN_FP8_PARAM_GATHER] = {"training.fp8_param_gather", "--fp8-param-gather"},
    [SCN_ETP] = {"parallel.etp", "--etp"},
};

const char *scenario_field_option(scenario_field_t f) {
    return (unsigned)f < SCN_FIELD_COUNT ? FIELDS[f].option : "?";
}

const char *scenario_field_path(scenario_field_t f) {
    return (unsigned)f < SCN_FIELD_COUNT ? FIELDS[f].path : "?";
}

int scn_field_by_path(const char *path) {
    for (int f = 0; f < SCN_FIELD_COUNT; f++)
        if (strcmp(FIELDS[f].path, path) == 0)
            return f;
    return -1;
}

static int field_by_option(const char *option) {
    for (int f = 0; f < SCN_FIELD_COUNT; f++)
        if (strcmp(FIELDS[f].option, option) == 0)
            return f;
    return -1;
}

/* ---- init / destroy -------------------------------------------------------------------------- */

int scenario_init(scenario_t *scn, cli_diag_t *diag) {
    memset(scn, 0, sizeof *scn);
    if (model_transformer_preset(SCN_DEFAULT_MODEL, &scn->model) != MODEL_OK)
        return cli_fail(diag, CLI_ERUNTIME, "internal error: model preset %s is missing", SCN_DEFAULT_MODEL);
    if (model_system_preset(SCN_DEFAULT_SYSTEM, &scn->system) != MODEL_OK)
        return cli_fail(diag, CLI_ERUNTIME, "internal error: system preset %s is missing",
                        SCN_DEFAULT_SYSTEM);
    scn->value[SCN_NVS] = SCN_DEFAULT_NVS;
    scn->value[SCN_GPUS] = SCN_DEFAULT_GPUS;
    scn->value[SCN_GBS] = SCN_DEFAULT_GBS;
    scn->strategy = MODEL_STRATEGY_1D;
    scn->compat = MODEL_COMPAT_CORRECTED;
    scn->perturb.seed = 1;
    topo_spec_none(&scn->topology);
    return CLI_OK;
}

void scenario_destroy(scenario_t *scn) {
    if (scn) /* the topology is typed values; the jobs are owned */
        scenario_jobs_free(scn);
}

void scenario_system(const scenario_t *scn, model_system_t *out) {
    *out = scn->system;
    if (scn->value[SCN_NVS] > 0)
        out->nvlink_size = scn->value[SCN_NVS];
}

const char *scenario_model_name(const scenario_t *scn) {
    return scn->model.name[0] ? scn->model.name : "custom";
}

const char *scenario_system_name(const scenario_t *scn) {
    return scn->system.name[0] ? scn->system.name : "custom";
}

/* ---- JSON value helpers ---------------------------------------------------------------------- */

/* Describe a JSON value for a message: numbers and strings by value, the rest by type. */
void scn_describe(const cJSON *v, char *buf, size_t n) {
    if (cJSON_IsNumber(v))
        snprintf(buf, n, "%.17g", v->valuedouble);
    else if (cJSON_IsString(v))
        snprintf(buf, n, "\"%.60s\" (a string)", v->valuestring);
    else if (cJSON_IsBool(v))
        snprintf(buf, n, "%s (a boolean)", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNull(v))
        snprintf(buf, n, "null");
    else if (cJSON_IsArray(v))
        snprintf(buf, n, "an array");
    else if (cJSON_IsObject(v))
        snprintf(buf, n, "an object");
    else
        snprintf(buf, n, "an invalid value");
}

int scn_json_int(const scn_src_t *src, const cJSON *v, const char *path, int64_t min, int64_t *out) {
    char what[96];
    const char *allowed = min >= 1 ? "a positive integer" : "an integer >= 0";
    scn_describe(v, what, sizeof what);
    if (!cJSON_IsNumber(v))
        return cli_fail(src->diag, CLI_EUSAGE, "%s%s: %s is not a number; allowed: %s", src->prefix, path,
                        what, allowed);
    double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d) || fabs(d) > 9.0e15)
        return cli_fail(src->diag, CLI_EUSAGE, "%s%s: %s is not an integer; allowed: %s", src->prefix, path,
                        what, allowed);
    if (d < (double)min)
        return cli_fail(src->diag, CLI_EUSAGE, "%s%s: %s is %s; allowed: %s", src->prefix, path, what,
                        d == 0 ? "zero" : "negative", allowed);
    *out = (int64_t)d;
    return CLI_OK;
}

int scn_json_pos(const scn_src_t *src, const cJSON *v, const char *path, double max, double *out) {
    char what[96], allowed[64];
    scn_describe(v, what, sizeof what);
    if (max > 0)
        snprintf(allowed, sizeof allowed, "a number > 0 and <= %g", max);
    else
        snprintf(allowed, sizeof allowed, "a number > 0");
    if (!cJSON_IsNumber(v))
        return cli_fail(src->diag, CLI_EUSAGE, "%s%s: %s is not a number; allowed: %s", src->prefix, path,
                        what, allowed);
    double d = v->valuedouble;
    if (!isfinite(d) || d <= 0 || (max > 0 && d > max))
        return cli_fail(src->diag, CLI_EUSAGE, "%s%s: %s is out of range; allowed: %s", src->prefix, path,
                        what, allowed);
    *out = d;
    return CLI_OK;
}

int scn_json_string(const scn_src_t *src, const cJSON *v, const char *path, const char *allowed,
                    const char **out) {
    if (!cJSON_IsString(v) || !v->valuestring) {
        char what[96];
        scn_describe(v, what, sizeof what);
        return cli_fail(src->diag, CLI_EUSAGE, "%s%s: %s is not a string; allowed: %s", src->prefix, path,
                        what, allowed);
    }
    *out = v->valuestring;
    return CLI_OK;
}

/* Reject the first key of obj not in keys[0..n-1], with a did-you-mean. */
int scn_check_keys(const scn_src_t *src, const cJSON *obj, const char *path, const char *const *keys,
                   size_t n) {
    const cJSON *it;
    cJSON_ArrayForEach(it, obj) {
        int known = 0;
        for (size_t i = 0; i < n && !known; i++)
            known = strcmp(it->string, keys[i]) == 0;
        if (known)
            continue;
        char hint[96], list[768] = "";
        scn_hint(hint, sizeof hint, it->string, keys, n);
        for (size_t i = 0; i < n; i++) {
            size_t used = strlen(list);
            snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", keys[i]);
        }
        return cli_fail(src->diag, CLI_EUSAGE, "%s%s%s%.60s: unknown key%s; allowed: %s", src->prefix, path,
                        path[0] ? "." : "", it->string, hint, list);
    }
    return CLI_OK;
}

/* ---- preset lookups -------------------------------------------------------------------------- */

/* Collect preset names into names[0..cap-1]; return the count. */
static size_t preset_names(int system, const char **names, size_t cap) {
    size_t n = 0;
    for (; n < cap; n++) {
        names[n] = system ? model_system_preset_name(n) : model_transformer_preset_name(n);
        if (!names[n])
            break;
    }
    return n;
}

/* Comma-separated preset names into buf. */
void scn_preset_list(int system, char *buf, size_t n) {
    const char *names[64];
    size_t count = preset_names(system, names, 64);
    buf[0] = '\0';
    for (size_t i = 0; i < count; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, n - used, "%s%s", i ? ", " : "", names[i]);
    }
}

int scn_preset_lookup(const scn_src_t *src, int system, const char *name, const char *path, void *out) {
    int rc = system ? model_system_preset(name, out) : model_transformer_preset(name, out);
    if (rc == MODEL_OK)
        return CLI_OK;
    const char *names[64];
    size_t count = preset_names(system, names, 64);
    char hint[96], list[768];
    scn_hint(hint, sizeof hint, name, names, count);
    scn_preset_list(system, list, sizeof list);
    return cli_fail(src->diag, CLI_EUSAGE, "%s%s: unknown %s preset \"%.60s\"%s; allowed: %s%s", src->prefix,
                    path, system ? "system" : "model", name, hint, list,
                    system ? " or a system object" : " or a model object");
}

/* ---- options --------------------------------------------------------------------------------- */

/* Parse an integer option value: digits only, >= 1. */
static int option_int(const char *option, const char *value, int64_t *out, cli_diag_t *diag) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(value, &end, 10);
    if (!value[0] || *end != '\0' || errno == ERANGE || isspace((unsigned char)value[0])) {
        double d = strtod(value, &end);
        if (value[0] && *end == '\0' && d != floor(d))
            return cli_fail(diag, CLI_EUSAGE, "%s: %s is not an integer; allowed: a positive integer", option,
                            value);
        return cli_fail(diag, CLI_EUSAGE, "%s: \"%.60s\" is not an integer; allowed: a positive integer",
                        option, value);
    }
    if (v <= 0)
        return cli_fail(diag, CLI_EUSAGE, "%s: %lld is %s; allowed: a positive integer", option, v,
                        v == 0 ? "zero" : "negative");
    *out = (int64_t)v;
    return CLI_OK;
}

/* --model / --system: a preset name or an inline JSON object. */
static int option_object(scenario_t *scn, scenario_field_t f, const char *option, const char *value,
                         cli_diag_t *diag) {
    if (value[0] != '{') {
        scn_src_t psrc = {diag, "", SCN_FROM_OPTION};
        if (f == SCN_MODEL)
            return scn_model_named(&psrc, value, option, &scn->model);
        return scn_system_preset(scn, &psrc, value, option);
    }
    char prefix[48];
    snprintf(prefix, sizeof prefix, "%s: ", option);
    scn_src_t src = {diag, prefix, SCN_FROM_OPTION};
    const char *end = NULL;
    const uint64_t failed = alloc_failures();
    cJSON *obj = cJSON_ParseWithOpts(value, &end, 1);
    if (!obj && alloc_failures() != failed)
        return cli_fail(diag, CLI_ERUNTIME, "%s: out of memory", option);
    if (!obj)
        return cli_fail(diag, CLI_EUSAGE,
                        "%s: invalid JSON at character %ld; allowed: a preset name or a JSON object", option,
                        end ? (long)(end - value) + 1 : 0L);
    int rc = input_check_json(obj, option, diag);
    if (!rc)
        rc = f == SCN_MODEL ? scn_parse_model(scn, &src, obj, "model")
                            : scn_parse_system(scn, &src, obj, "system");
    cJSON_Delete(obj);
    return rc;
}

static int option_named(scenario_t *scn, scenario_field_t f, const char *option, const char *value,
                        cli_diag_t *diag) {
    if (f == SCN_STRATEGY) {
        model_strategy_t s;
        if (strcmp(value, "all") == 0)
            scn->strategy = SCN_STRATEGY_ALL;
        else if (model_strategy_parse(value, &s) == MODEL_OK)
            scn->strategy = (int)s;
        else
            return scn_bad_strategy(diag, option, value);
        return CLI_OK;
    }
    if (f == SCN_COMPAT) {
        if (model_compat_parse(value, &scn->compat) != MODEL_OK)
            return scn_bad_compat(diag, option, value);
        return CLI_OK;
    }
    /* --topology: an inline object or a name/file, parsed now (a file it names is read now). */
    topo_spec_t *spec = alloc_malloc(sizeof *spec);
    if (!spec)
        return cli_fail(diag, CLI_ERUNTIME, "%s: out of memory", option);
    const int rc = topo_spec_parse_text(value, option, spec, diag);
    if (!rc)
        scn->topology = *spec;
    free(spec);
    return rc;
}

int scenario_set_option(scenario_t *scn, const char *option, const char *value, cli_diag_t *diag) {
    if (scn_perturb_is_option(option))
        return scn_perturb_set_option(scn, option, value, diag);
    int f = field_by_option(option);
    if (f < 0)
        return cli_fail(diag, CLI_EUSAGE, "%s: not a scenario option", option);
    int rc;
    if (f == SCN_MODEL || f == SCN_SYSTEM)
        rc = option_object(scn, (scenario_field_t)f, option, value, diag);
    else if (f == SCN_STRATEGY || f == SCN_COMPAT || f == SCN_TOPOLOGY)
        rc = option_named(scn, (scenario_field_t)f, option, value, diag);
    else if (scn_is_training((scenario_field_t)f))
        rc = scn_training_set(scn, (scenario_field_t)f, option, value, diag);
    else
        rc = option_int(option, value, &scn->value[f], diag);
    if (rc != CLI_OK)
        return rc;
    scn->given[f] = 1;
    scn->origin[f] = SCN_FROM_OPTION;
    return CLI_OK;
}

static void set_field(scenario_t *scn, scenario_field_t f, int64_t v, scenario_origin_t origin) {
    scn->value[f] = v;
    scn->given[f] = 1;
    scn->origin[f] = origin;
}

void scenario_set_layout(scenario_t *scn, const model_parallel_t *p, scenario_origin_t origin) {
    static const scenario_field_t degrees[] = {SCN_DP,     SCN_TP,     SCN_TP1,   SCN_TP2,
                                               SCN_PP,     SCN_MBS,    SCN_NB,    SCN_NV_TP,
                                               SCN_NV_TP1, SCN_NV_TP2, SCN_NV_DP, SCN_NV_PP};
    for (size_t i = 0; i < sizeof degrees / sizeof degrees[0]; i++) {
        scn->value[degrees[i]] = 0;
        scn->given[degrees[i]] = 0;
        scn->origin[degrees[i]] = SCN_FROM_DEFAULT;
    }
    scn->strategy = (int)p->strategy;
    scn->given[SCN_STRATEGY] = 1;
    scn->origin[SCN_STRATEGY] = origin;
    set_field(scn, SCN_DP, p->dp, origin);
    set_field(scn, SCN_PP, p->pp, origin);
    set_field(scn, SCN_MBS, p->mbs, origin);
    set_field(scn, SCN_NV_DP, p->nv_dp, origin);
    set_field(scn, SCN_NV_PP, p->nv_pp, origin);
    if (p->strategy == MODEL_STRATEGY_1D) {
        set_field(scn, SCN_TP, p->tp, origin);
        set_field(scn, SCN_NV_TP, p->nv_tp1, origin);
        return;
    }
    set_field(scn, SCN_TP1, p->tp1, origin);
    set_field(scn, SCN_TP2, p->tp2, origin);
    set_field(scn, SCN_NV_TP1, p->nv_tp1, origin);
    set_field(scn, SCN_NV_TP2, p->nv_tp2, origin);
    if (p->strategy == MODEL_STRATEGY_2D)
        set_field(scn, SCN_NB, p->nb, origin);
}

/* ---- shared messages ------------------------------------------------------------------------- */

int scn_bad_strategy(cli_diag_t *diag, const char *where, const char *value) {
    static const char *const names[] = {"1d", "2d", "2d-seqp", "all"};
    char hint[96];
    scn_hint(hint, sizeof hint, value, names, 4);
    return cli_fail(diag, CLI_EUSAGE,
                    "%s: unknown strategy \"%.60s\"%s; allowed: 1d, 2d, 2d-seqp (search also: all)", where,
                    value, hint);
}

int scn_bad_compat(cli_diag_t *diag, const char *where, const char *value) {
    static const char *const names[] = {"reference", "corrected"};
    char hint[96];
    scn_hint(hint, sizeof hint, value, names, 2);
    return cli_fail(diag, CLI_EUSAGE, "%s: unknown compat \"%.60s\"%s; allowed: reference, corrected", where,
                    value, hint);
}
