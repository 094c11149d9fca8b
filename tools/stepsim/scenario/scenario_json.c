/* scenario_json.c - the scenario JSON format: file reading, syntax errors with line and column, keys.
 *
 * Keys are processed in a fixed order (model, system, then nvlink_size, ...), not in file order, so
 * a top-level nvlink_size always beats the nvlink_size key of a system object in the same file.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "input_check.h"
#include "readfile.h"
#include "scenario_internal.h"
#include "scenario_jobs.h"
#include "topo_json.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void set_given(scenario_t *scn, const scn_src_t *src, scenario_field_t f) {
    scn->given[f] = 1;
    scn->origin[f] = src->origin;
}

/* path + "." + key into buf. */
static const char *join(char *buf, size_t n, const char *path, const char *key) {
    snprintf(buf, n, "%s%s%s", path, path[0] ? "." : "", key);
    return buf;
}

/* ---- model ----------------------------------------------------------------------------------- */

static const char *const MODEL_KEYS[] = {"name",
                                         "base",
                                         "seq_len",
                                         "hidden",
                                         "heads",
                                         "layers",
                                         "ffn_hidden",
                                         "vocab",
                                         "kv_heads",
                                         "ffn_act",
                                         "norm",
                                         "position",
                                         "tied_embeddings",
                                         "attention_mask",
                                         "experts",
                                         "topk",
                                         "shared_experts",
                                         "expert_ffn_hidden",
                                         "first_dense",
                                         "capacity_factor"};

static int model_field(const scn_src_t *src, const cJSON *obj, const char *path, const char *key, int64_t min,
                       int64_t *dst, int *seen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    char p[96];
    if (!v)
        return CLI_OK;
    *seen = 1;
    return scn_json_int(src, v, join(p, sizeof p, path, key), min, dst);
}

static int model_wrong_type(const scn_src_t *src, const cJSON *v, const char *path) {
    char what[96], list[768];
    scn_describe(v, what, sizeof what);
    scn_preset_list(0, list, sizeof list);
    return cli_fail(
        src->diag, CLI_EUSAGE,
        "%s%s: %s is not a preset name or an object; allowed: %s, a config.json path, or {seq_len, "
        "hidden, heads, layers, ffn_hidden, vocab, kv_heads, ffn_act, norm, position, tied_embeddings, "
        "attention_mask, experts, topk, shared_experts, expert_ffn_hidden, first_dense, capacity_factor}",
        src->prefix, path, what, list);
}

/* "base": start from a preset. */
static int model_base(const scn_src_t *src, const cJSON *obj, const char *path, model_transformer_t *m,
                      int *has) {
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(obj, "base");
    const char *name;
    char p[96];
    *has = b != NULL;
    if (!b)
        return CLI_OK;
    join(p, sizeof p, path, "base");
    int rc = scn_json_string(src, b, p, "a model preset name or a config.json path", &name);
    return rc ? rc : scn_model_named(src, name, p, m);
}

int scn_parse_model(scenario_t *scn, const scn_src_t *src, const cJSON *v, const char *path) {
    model_transformer_t m;
    memset(&m, 0, sizeof m);
    if (cJSON_IsString(v))
        return scn_model_named(src, v->valuestring, path, &scn->model);
    if (!cJSON_IsObject(v))
        return model_wrong_type(src, v, path);
    int rc = scn_check_keys(src, v, path, MODEL_KEYS, COUNT(MODEL_KEYS));
    int has_base = 0, changed = 0, ffn_seen = 0;
    if (!rc)
        rc = model_base(src, v, path, &m, &has_base);
    if (!rc)
        rc = model_field(src, v, path, "seq_len", 1, &m.seq_len, &changed);
    if (!rc)
        rc = model_field(src, v, path, "hidden", 1, &m.hidden, &changed);
    if (!rc)
        rc = model_field(src, v, path, "heads", 1, &m.heads, &changed);
    if (!rc)
        rc = model_field(src, v, path, "layers", 1, &m.layers, &changed);
    if (!rc)
        rc = model_field(src, v, path, "vocab", 0, &m.vocab, &changed);
    if (!rc)
        rc = model_field(src, v, path, "ffn_hidden", 1, &m.ffn_hidden, &ffn_seen);
    if (!rc)
        rc = scn_model_arch_keys(src, v, path, &m, &changed);
    if (rc)
        return rc;
    static const char *const required[] = {"seq_len", "hidden", "heads", "layers"};
    for (size_t i = 0; i < COUNT(required) && !has_base; i++)
        if (!cJSON_GetObjectItemCaseSensitive(v, required[i]))
            return cli_fail(
                src->diag, CLI_EUSAGE,
                "%s%s: missing key \"%s\"; allowed: an object with seq_len, hidden, heads, layers "
                "(ffn_hidden defaults to 4*hidden; vocab optional), or \"base\": a preset",
                src->prefix, path, required[i]);
    if (!ffn_seen && (!has_base || cJSON_GetObjectItemCaseSensitive(v, "hidden")))
        m.ffn_hidden = 4 * m.hidden;
    if (changed || ffn_seen || !has_base)
        m.name[0] = '\0'; /* no longer the preset */
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(v, "name");
    if (name) {
        const char *s;
        char p[96];
        if ((rc = scn_json_string(src, name, join(p, sizeof p, path, "name"), "a string", &s)))
            return rc;
        snprintf(m.name, sizeof m.name, "%s", s);
    }
    scn->model = m;
    return CLI_OK;
}

/* ---- system ---------------------------------------------------------------------------------- */

/* Reference key -> model_system_t double field. min_zero: 0 is allowed; max: upper bound if > 0. */
static const struct {
    const char *key;
    size_t offset;
    int required;
    int min_zero;
    double max;
} SYSTEM_NUMBERS[] = {
    {"matrix_flops_fp16", offsetof(model_system_t, matrix_tflop_per_s), 1, 0, 0},
    {"vector_flops_fp16", offsetof(model_system_t, vector_tflop_per_s), 1, 0, 0},
    {"vector_flops_fp32", offsetof(model_system_t, vector_fp32_tflop_per_s), 0, 1, 0},
    {"hbm_bandwidth", offsetof(model_system_t, hbm_gb_per_s), 1, 0, 0},
    {"hbm_capacity", offsetof(model_system_t, hbm_capacity_gb), 1, 0, 0},
    {"nvlink_bandwidth", offsetof(model_system_t, nvlink_gb_per_s), 1, 0, 0},
    {"nvlink_eff", offsetof(model_system_t, nvlink_eff), 1, 0, 1},
    {"nvlink_latency", offsetof(model_system_t, nvlink_latency_s), 1, 1, 0},
    {"ib_bandwidth", offsetof(model_system_t, ib_gb_per_s), 1, 0, 0},
    {"ib_eff", offsetof(model_system_t, ib_eff), 1, 0, 1},
    {"ib_latency", offsetof(model_system_t, ib_latency_s), 1, 1, 0},
    {"element_size", offsetof(model_system_t, element_gb), 0, 0, 0},
    {"mask_element_size", offsetof(model_system_t, mask_element_gb), 0, 0, 0},
    {"flop_efficiency", offsetof(model_system_t, flop_efficiency), 0, 0, 1},
    {"kernel_overhead", offsetof(model_system_t, kernel_overhead_s), 0, 1, 0},
    {"fp8_matrix_flops", offsetof(model_system_t, fp8_matrix_tflop_per_s), 0, 1, 0},
    {"fp8_flop_efficiency", offsetof(model_system_t, fp8_flop_efficiency), 0, 1, 1},
    {"attention_efficiency", offsetof(model_system_t, attention_efficiency), 0, 1, 1},
};

static const char *const SYSTEM_KEYS[] = {"name",
                                          "base",
                                          "matrix_flops_fp16",
                                          "vector_flops_fp16",
                                          "vector_flops_fp32",
                                          "hbm_bandwidth",
                                          "hbm_capacity",
                                          "nvlink_bandwidth",
                                          "nvlink_eff",
                                          "nvlink_latency",
                                          "ib_bandwidth",
                                          "ib_eff",
                                          "ib_latency",
                                          "nvlink_size",
                                          "nic_factor",
                                          "element_size",
                                          "mask_element_size",
                                          "flop_efficiency",
                                          "kernel_overhead",
                                          "fp8_matrix_flops",
                                          "fp8_flop_efficiency",
                                          "attention_efficiency",
                                          "sm_count",
                                          "empirical",
                                          "summa_nb",
                                          "flops_units"};

static int system_number(const scn_src_t *src, const cJSON *v, const char *path, size_t i,
                         model_system_t *s) {
    char p[96];
    double *dst = (double *)(void *)((char *)s + SYSTEM_NUMBERS[i].offset);
    join(p, sizeof p, path, SYSTEM_NUMBERS[i].key);
    if (SYSTEM_NUMBERS[i].min_zero && cJSON_IsNumber(v) && v->valuedouble == 0) {
        *dst = 0;
        return CLI_OK;
    }
    return scn_json_pos(src, v, p, SYSTEM_NUMBERS[i].max, dst);
}

/* The keys that are accepted for compatibility with the reference's files but change nothing. */
static int system_ignored(const scn_src_t *src, const cJSON *obj, const char *path) {
    char p[96];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "empirical");
    if (v && !cJSON_IsFalse(v)) {
        char what[96];
        scn_describe(v, what, sizeof what);
        return cli_fail(src->diag, CLI_EUSAGE, "%s%s: %s is not supported; allowed: false", src->prefix,
                        join(p, sizeof p, path, "empirical"), what);
    }
    v = cJSON_GetObjectItemCaseSensitive(obj, "flops_units");
    if (v && !(cJSON_IsNumber(v) && v->valuedouble == 1e-12)) {
        char what[96];
        scn_describe(v, what, sizeof what);
        return cli_fail(src->diag, CLI_EUSAGE, "%s%s: %s is not supported; allowed: 1e-12 (TFLOP)",
                        src->prefix, join(p, sizeof p, path, "flops_units"), what);
    }
    int64_t ignored;
    v = cJSON_GetObjectItemCaseSensitive(obj, "summa_nb"); /* nb is a parallel degree here */
    return v ? scn_json_int(src, v, join(p, sizeof p, path, "summa_nb"), 1, &ignored) : CLI_OK;
}

static int system_ints(scenario_t *scn, const scn_src_t *src, const cJSON *obj, const char *path,
                       model_system_t *s) {
    char p[96];
    int rc = CLI_OK;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "nic_factor");
    if (v && (rc = scn_json_int(src, v, join(p, sizeof p, path, "nic_factor"), 1, &s->nic_factor)))
        return rc;
    v = cJSON_GetObjectItemCaseSensitive(obj, "sm_count");
    if (v && (rc = scn_json_int(src, v, join(p, sizeof p, path, "sm_count"), 0, &s->sm_count)))
        return rc;
    v = cJSON_GetObjectItemCaseSensitive(obj, "nvlink_size");
    if (!v)
        return CLI_OK;
    if ((rc = scn_json_int(src, v, join(p, sizeof p, path, "nvlink_size"), 1, &s->nvlink_size)))
        return rc;
    /* The system's own domain size applies unless a top-level nvlink_size / --nvs comes later. */
    scn->value[SCN_NVS] = s->nvlink_size;
    set_given(scn, src, SCN_NVS);
    return CLI_OK;
}

static int system_fields(scenario_t *scn, const scn_src_t *src, const cJSON *obj, const char *path,
                         model_system_t *s, int has_base) {
    int rc;
    for (size_t i = 0; i < COUNT(SYSTEM_NUMBERS); i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, SYSTEM_NUMBERS[i].key);
        if (!v && SYSTEM_NUMBERS[i].required && !has_base)
            return cli_fail(src->diag, CLI_EUSAGE,
                            "%s%s: missing key \"%s\"; allowed: every key of a system "
                            "(docs/model-formulas.md, section 2), "
                            "or \"base\": a preset plus the keys to change",
                            src->prefix, path, SYSTEM_NUMBERS[i].key);
        if (v && (rc = system_number(src, v, path, i, s)))
            return rc;
    }
    if ((rc = system_ints(scn, src, obj, path, s)))
        return rc;
    return system_ignored(src, obj, path);
}

/* A system object without "base" starts from the reference's fixed constants. */
static void system_blank(model_system_t *s) {
    memset(s, 0, sizeof *s);
    s->nvlink_size = SCN_DEFAULT_NVS;
    s->nic_factor = 1;
    s->element_gb = 2e-9;
    s->mask_element_gb = 1e-9;
    s->flop_efficiency = 0.8;
    s->kernel_overhead_s = 20e-6;
}

int scn_system_preset(scenario_t *scn, const scn_src_t *src, const char *name, const char *path) {
    const int rc = scn_preset_lookup(src, 1, name, path, &scn->system);
    const int64_t domain = rc ? 0 : model_system_preset_domain(name);
    /* A machine's own NVLink domain (the racks' 72) applies like a system object's nvlink_size: unless
     * a top-level nvlink_size / --nvs comes later. */
    if (domain > 0 && domain != scn->value[SCN_NVS]) {
        scn->value[SCN_NVS] = domain;
        set_given(scn, src, SCN_NVS);
    }
    return rc;
}

int scn_parse_system(scenario_t *scn, const scn_src_t *src, const cJSON *v, const char *path) {
    model_system_t s;
    char p[96];
    const char *name = NULL;
    int rc;
    if (cJSON_IsString(v))
        return scn_system_preset(scn, src, v->valuestring, path);
    if (!cJSON_IsObject(v)) {
        char what[96], list[768];
        scn_describe(v, what, sizeof what);
        scn_preset_list(1, list, sizeof list);
        return cli_fail(
            src->diag, CLI_EUSAGE,
            "%s%s: %s is not a preset name or an object; allowed: %s, or an object with the keys of "
            "docs/model-formulas.md, section 2",
            src->prefix, path, what, list);
    }
    if ((rc = scn_check_keys(src, v, path, SYSTEM_KEYS, COUNT(SYSTEM_KEYS))))
        return rc;
    system_blank(&s);
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(v, "base");
    if (base) {
        join(p, sizeof p, path, "base");
        if ((rc = scn_json_string(src, base, p, "a system preset name", &name)) ||
            (rc = scn_preset_lookup(src, 1, name, p, &s)))
            return rc;
    }
    if ((rc = system_fields(scn, src, v, path, &s, base != NULL)))
        return rc;
    int only_base = cJSON_GetArraySize(v) == 1 && base;
    if (!only_base)
        s.name[0] = '\0';
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(v, "name");
    if (nm) {
        if ((rc = scn_json_string(src, nm, join(p, sizeof p, path, "name"), "a string", &name)))
            return rc;
        snprintf(s.name, sizeof s.name, "%s", name);
    }
    scn->system = s;
    return CLI_OK;
}

/* ---- parallel -------------------------------------------------------------------------------- */

static const char *const PARALLEL_KEYS[] = {"strategy", "dp", "tp", "tp1", "tp2", "pp",
                                            "mbs",      "nb", "nv", "ep",  "etp"};
static const char *const NV_KEYS[] = {"tp", "tp1", "tp2", "dp", "pp"};

/* Integer field f at its scenario path, if present in obj under key. */
static int int_field(scenario_t *scn, const scn_src_t *src, const cJSON *obj, const char *key,
                     scenario_field_t f) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return CLI_OK;
    int rc = scn_json_int(src, v, scenario_field_path(f), 1, &scn->value[f]);
    if (rc == CLI_OK)
        set_given(scn, src, f);
    return rc;
}

static int object_or_fail(const scn_src_t *src, const cJSON *v, const char *path, const char *allowed) {
    if (cJSON_IsObject(v))
        return CLI_OK;
    char what[96];
    scn_describe(v, what, sizeof what);
    return cli_fail(src->diag, CLI_EUSAGE, "%s%s: %s is not an object; allowed: %s", src->prefix, path, what,
                    allowed);
}

static int parse_nv(scenario_t *scn, const scn_src_t *src, const cJSON *nv) {
    static const scenario_field_t fields[] = {SCN_NV_TP, SCN_NV_TP1, SCN_NV_TP2, SCN_NV_DP, SCN_NV_PP};
    int rc = object_or_fail(src, nv, "parallel.nv", "an object with tp (1d) or tp1, tp2 (2d), dp, pp");
    if (!rc)
        rc = scn_check_keys(src, nv, "parallel.nv", NV_KEYS, COUNT(NV_KEYS));
    for (size_t i = 0; i < COUNT(fields) && !rc; i++)
        rc = int_field(scn, src, nv, NV_KEYS[i], fields[i]);
    return rc;
}

static int parse_strategy(scenario_t *scn, const scn_src_t *src, const cJSON *v) {
    const char *name;
    model_strategy_t s;
    int rc = scn_json_string(src, v, "parallel.strategy", "1d, 2d, 2d-seqp (search also: all)", &name);
    if (rc)
        return rc;
    if (strcmp(name, "all") == 0)
        scn->strategy = SCN_STRATEGY_ALL;
    else if (model_strategy_parse(name, &s) == MODEL_OK)
        scn->strategy = (int)s;
    else {
        char where[300];
        snprintf(where, sizeof where, "%sparallel.strategy", src->prefix);
        return scn_bad_strategy(src->diag, where, name);
    }
    set_given(scn, src, SCN_STRATEGY);
    return CLI_OK;
}

static int parse_parallel(scenario_t *scn, const scn_src_t *src, const cJSON *par) {
    static const scenario_field_t fields[] = {SCN_DP, SCN_TP, SCN_TP1, SCN_TP2, SCN_PP, SCN_MBS, SCN_NB};
    int rc = object_or_fail(src, par, "parallel",
                            "an object with strategy, dp, tp, tp1, tp2, pp, mbs, nb, nv, ep");
    if (!rc)
        rc = scn_check_keys(src, par, "parallel", PARALLEL_KEYS, COUNT(PARALLEL_KEYS));
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(par, "strategy");
    if (!rc && v)
        rc = parse_strategy(scn, src, v);
    for (size_t i = 0; i < COUNT(fields) && !rc; i++)
        rc = int_field(scn, src, par, PARALLEL_KEYS[i + 1], fields[i]);
    if (!rc)
        rc = int_field(scn, src, par, "ep", SCN_EP);
    if (!rc)
        rc = int_field(scn, src, par, "etp", SCN_ETP);
    v = cJSON_GetObjectItemCaseSensitive(par, "nv");
    if (!rc && v)
        rc = parse_nv(scn, src, v);
    return rc;
}

/* ---- top level ------------------------------------------------------------------------------- */

static const char *const TOP_KEYS[] = {"name",     "description",   "model",    "system", "nvlink_size",
                                       "gpus",     "global_batch",  "parallel", "compat", "training",
                                       "topology", "perturbations", "jobs"};

static int parse_text(const scn_src_t *src, const cJSON *root, const char *key, char *dst, size_t n) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    const char *s;
    if (!v)
        return CLI_OK;
    int rc = scn_json_string(src, v, key, "a string", &s);
    if (!rc)
        snprintf(dst, n, "%s", s);
    return rc;
}

static int parse_compat(scenario_t *scn, const scn_src_t *src, const cJSON *v) {
    const char *name;
    int rc = scn_json_string(src, v, "compat", "reference, corrected", &name);
    if (rc)
        return rc;
    if (model_compat_parse(name, &scn->compat) != MODEL_OK) {
        char where[300];
        snprintf(where, sizeof where, "%scompat", src->prefix);
        return scn_bad_compat(src->diag, where, name);
    }
    set_given(scn, src, SCN_COMPAT);
    return CLI_OK;
}

static int parse_topology(scenario_t *scn, const scn_src_t *src, const cJSON *v) {
    if (!cJSON_IsString(v) && !cJSON_IsObject(v)) {
        char what[96];
        scn_describe(v, what, sizeof what);
        return cli_fail(src->diag, CLI_EUSAGE,
                        "%stopology: %s is not a name or an object; allowed: a topology "
                        "preset name or object",
                        src->prefix, what);
    }
    char where[320];
    snprintf(where, sizeof where, "%stopology", src->prefix);
    topo_spec_t *spec = alloc_malloc(sizeof *spec);
    if (!spec)
        return cli_fail(src->diag, CLI_ERUNTIME, "%stopology: out of memory", src->prefix);
    const int rc = topo_spec_parse(v, where, spec, src->diag);
    if (!rc) {
        scn->topology = *spec;
        set_given(scn, src, SCN_TOPOLOGY);
    }
    free(spec);
    return rc;
}

static int parse_objects(scenario_t *scn, const scn_src_t *src, const cJSON *root) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "model");
    int rc = CLI_OK;
    if (v && !(rc = scn_parse_model(scn, src, v, "model")))
        set_given(scn, src, SCN_MODEL);
    v = cJSON_GetObjectItemCaseSensitive(root, "system");
    if (!rc && v && !(rc = scn_parse_system(scn, src, v, "system")))
        set_given(scn, src, SCN_SYSTEM);
    return rc;
}

int scenario_load_json(scenario_t *scn, const cJSON *root, const char *source, cli_diag_t *diag) {
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s: ", source);
    scn_src_t src = {diag, prefix, SCN_FROM_FILE};
    if (!cJSON_IsObject(root)) {
        char what[96];
        scn_describe(root, what, sizeof what);
        return cli_fail(diag, CLI_EUSAGE, "%s(top level): %s; allowed: a JSON object", prefix, what);
    }
    snprintf(scn->file, sizeof scn->file, "%s", source);
    int rc = scn_check_keys(&src, root, "", TOP_KEYS, COUNT(TOP_KEYS));
    if (!rc)
        rc = parse_text(&src, root, "name", scn->name, sizeof scn->name);
    if (!rc)
        rc = parse_text(&src, root, "description", scn->description, sizeof scn->description);
    if (!rc)
        rc = parse_objects(scn, &src, root);
    if (!rc)
        rc = int_field(scn, &src, root, "nvlink_size", SCN_NVS);
    if (!rc)
        rc = int_field(scn, &src, root, "gpus", SCN_GPUS);
    if (!rc)
        rc = int_field(scn, &src, root, "global_batch", SCN_GBS);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "parallel");
    if (!rc && v)
        rc = parse_parallel(scn, &src, v);
    if (!rc && (v = cJSON_GetObjectItemCaseSensitive(root, "compat")))
        rc = parse_compat(scn, &src, v);
    if (!rc && (v = cJSON_GetObjectItemCaseSensitive(root, "training")))
        rc = scn_parse_training(scn, &src, v);
    if (!rc && (v = cJSON_GetObjectItemCaseSensitive(root, "topology")))
        rc = parse_topology(scn, &src, v);
    if (!rc && (v = cJSON_GetObjectItemCaseSensitive(root, "perturbations")))
        rc = scn_parse_perturbations(scn, &src, v);
    if (!rc) /* last: each job starts from the scenario above */
        rc = scn_parse_jobs(scn, &src, cJSON_GetObjectItemCaseSensitive(root, "jobs"));
    return rc;
}

/* ---- files ----------------------------------------------------------------------------------- */

/* One line "line L, column C" diagnostic for a JSON syntax error at err inside buf. */
static int syntax_error(const char *path, const char *buf, const char *err, cli_diag_t *diag) {
    long line = 1, col = 1;
    if (!err || err < buf)
        err = buf;
    for (const char *p = buf; p < err && *p; p++) {
        if (*p == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    char near[24];
    size_t n = 0;
    for (const char *p = err; *p && n < 16 && *p != '\n' && *p != '\r'; p++)
        near[n++] = (*p == '\t') ? ' ' : *p;
    near[n] = '\0';
    if (n == 0)
        return cli_fail(diag, CLI_EUSAGE,
                        "%s: line %ld, column %ld: invalid JSON: unexpected end of %s; allowed: "
                        "one JSON object",
                        path, line, col, *err ? "line" : "file");
    return cli_fail(diag, CLI_EUSAGE,
                    "%s: line %ld, column %ld: invalid JSON near '%s'; allowed: one JSON object", path, line,
                    col, near);
}

void scenario_json_hooks(void) {
    cJSON_Hooks hooks = {alloc_malloc, free};
    cJSON_InitHooks(&hooks);
}

int scenario_json_read(const char *path, const char *kind, cJSON **root, cli_diag_t *diag) {
    char *buf = NULL;
    *root = NULL;
    int rc = input_read_file(path, kind, READFILE_JSON_LIMIT_BYTES, &buf, NULL, diag);
    if (rc)
        return rc;
    const char *end = NULL;
    const uint64_t failed = alloc_failures();
    *root = cJSON_ParseWithOpts(buf, &end, 1);
    if (!*root && alloc_failures() != failed)
        rc = cli_fail(diag, CLI_ERUNTIME, "%s: out of memory", path);
    else if (!*root)
        rc = syntax_error(path, buf, end, diag);
    free(buf);
    if (!rc && (rc = input_check_json(*root, path, diag)) != CLI_OK) {
        cJSON_Delete(*root);
        *root = NULL;
    }
    return rc;
}

int scenario_load_file(scenario_t *scn, const char *path, cli_diag_t *diag) {
    cJSON *root = NULL;
    int rc = scenario_json_read(path, "scenario", &root, diag);
    if (!rc)
        rc = scenario_load_json(scn, root, path, diag);
    cJSON_Delete(root);
    return rc;
}
