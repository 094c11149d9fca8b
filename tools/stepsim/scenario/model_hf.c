/* model_hf.c - a transformer from a Hugging Face config.json (--model FILE.json, scenario
 * "model": "FILE.json" or {"base": "FILE.json", ...}) and the model object's architecture keys.
 *
 * Keys read: hidden_size, num_attention_heads, num_hidden_layers, intermediate_size, vocab_size,
 * max_position_embeddings and hidden_act (required); num_key_value_heads (default: the attention
 * heads, as transformers does) and tie_word_embeddings (default true, PretrainedConfig's default).
 * The norm is RMSNorm when the config names an rms_norm_eps, else LayerNorm; positions are rotary
 * when it names a rope_theta or a non-null rope_scaling, else learned. A mixture of experts:
 * num_local_experts (Mixtral) or n_routed_experts (DeepSeek), num_experts_per_tok,
 * moe_intermediate_size (default: intermediate_size), n_shared_experts, first_k_dense_replace.
 * Every other key is ignored (docs/model.md, "Hugging Face config.json"). */
#include <stdio.h>
#include <string.h>

#include "scenario_internal.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Whether name ends with ".json": a config file rather than a preset name. */
int scn_model_is_file(const char *name) {
    const size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".json") == 0;
}

static int hf_int(const scn_src_t *src, const cJSON *root, const char *key, int required, int64_t *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v) {
        if (!required)
            return CLI_OK;
        return cli_fail(src->diag, CLI_EUSAGE,
                        "%s%s: missing; allowed: a Hugging Face config.json with hidden_size, "
                        "num_attention_heads, num_hidden_layers, intermediate_size, vocab_size, "
                        "max_position_embeddings, hidden_act",
                        src->prefix, key);
    }
    return scn_json_int(src, v, key, 1, out);
}

/* hidden_act: SiLU is the gated SwiGLU feed-forward of Llama-family configs. */
static int hf_act(const scn_src_t *src, const cJSON *root, model_ffn_act_t *out) {
    static const struct {
        const char *act;
        model_ffn_act_t ffn;
    } acts[] = {{"silu", MODEL_FFN_SWIGLU},           {"swish", MODEL_FFN_SWIGLU},
                {"relu2", MODEL_FFN_RELU2},           {"gelu", MODEL_FFN_GELU},
                {"gelu_new", MODEL_FFN_GELU},         {"gelu_fast", MODEL_FFN_GELU},
                {"gelu_pytorch_tanh", MODEL_FFN_GELU}};
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "hidden_act");
    const char *s;
    int64_t unused;
    if (!v)
        return hf_int(src, root, "hidden_act", 1, &unused); /* the "missing" line */
    int rc = scn_json_string(src, v, "hidden_act",
                             "silu, swish, relu2, gelu, gelu_new, gelu_fast, "
                             "gelu_pytorch_tanh",
                             &s);
    if (rc)
        return rc;
    for (size_t i = 0; i < COUNT(acts); i++) {
        if (strcmp(s, acts[i].act) == 0) {
            *out = acts[i].ffn;
            return CLI_OK;
        }
    }
    return cli_fail(src->diag, CLI_EUSAGE,
                    "%shidden_act: \"%.60s\" is not supported; allowed: silu, swish (SwiGLU), relu2, gelu, "
                    "gelu_new, gelu_fast, gelu_pytorch_tanh",
                    src->prefix, s);
}

int scn_model_hf_file(const scn_src_t *src, const char *file, model_transformer_t *out) {
    cJSON *root = NULL;
    int rc = scenario_json_read(file, "model config", &root, src->diag);
    if (rc)
        return rc;
    char prefix[320];
    snprintf(prefix, sizeof prefix, "%.300s: ", file);
    const scn_src_t hf = {src->diag, prefix, src->origin};
    model_transformer_t m;
    memset(&m, 0, sizeof m);
    if (!cJSON_IsObject(root))
        rc = cli_fail(src->diag, CLI_EUSAGE, "%s: not a JSON object; allowed: a Hugging Face config.json",
                      file);
    if (!rc)
        rc = hf_int(&hf, root, "hidden_size", 1, &m.hidden);
    if (!rc)
        rc = hf_int(&hf, root, "num_attention_heads", 1, &m.heads);
    if (!rc)
        rc = hf_int(&hf, root, "num_hidden_layers", 1, &m.layers);
    if (!rc)
        rc = hf_int(&hf, root, "intermediate_size", 1, &m.ffn_hidden);
    if (!rc)
        rc = hf_int(&hf, root, "vocab_size", 1, &m.vocab);
    if (!rc)
        rc = hf_int(&hf, root, "max_position_embeddings", 1, &m.seq_len);
    if (!rc)
        rc = hf_act(&hf, root, &m.ffn_act);
    if (!rc)
        rc = hf_int(&hf, root, "num_key_value_heads", 0, &m.kv_heads);
    if (!rc)
        rc = hf_int(&hf, root, "num_local_experts", 0, &m.moe.experts);
    if (!rc && !m.moe.experts)
        rc = hf_int(&hf, root, "n_routed_experts", 0, &m.moe.experts);
    if (!rc && m.moe.experts) { /* the rest only for a mixture of experts (dense configs may name them) */
        rc = hf_int(&hf, root, "num_experts_per_tok", 1, &m.moe.topk);
        if (!rc)
            rc = hf_int(&hf, root, "moe_intermediate_size", 0, &m.moe.expert_ffn_hidden);
        if (!rc && !m.moe.expert_ffn_hidden)
            m.moe.expert_ffn_hidden = m.ffn_hidden;
        if (!rc)
            rc = hf_int(&hf, root, "n_shared_experts", 0, &m.moe.shared_experts);
        if (!rc)
            rc = hf_int(&hf, root, "first_k_dense_replace", 0, &m.moe.first_dense);
    }
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    if (!rc && tie && !cJSON_IsBool(tie)) {
        char what[96];
        scn_describe(tie, what, sizeof what);
        rc = cli_fail(src->diag, CLI_EUSAGE,
                      "%stie_word_embeddings: %s is not a boolean; allowed: true, false", prefix, what);
    }
    if (!rc) {
        m.untied_embeddings = tie && cJSON_IsFalse(tie);
        m.norm = cJSON_GetObjectItemCaseSensitive(root, "rms_norm_eps") ? MODEL_NORM_RMSNORM
                                                                        : MODEL_NORM_LAYERNORM;
        const cJSON *scaling = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
        m.position =
            cJSON_GetObjectItemCaseSensitive(root, "rope_theta") || (scaling && !cJSON_IsNull(scaling))
                ? MODEL_POSITION_ROTARY
                : MODEL_POSITION_LEARNED;
        /* the name: the file's base name without ".json" */
        const char *base = strrchr(file, '/');
        base = base ? base + 1 : file;
        snprintf(m.name, sizeof m.name, "%.*s", (int)(strlen(base) - 5 < 31 ? strlen(base) - 5 : 31), base);
        *out = m;
    }
    cJSON_Delete(root);
    return rc;
}

int scn_model_named(const scn_src_t *src, const char *name, const char *path, model_transformer_t *out) {
    if (scn_model_is_file(name))
        return scn_model_hf_file(src, name, out);
    return scn_preset_lookup(src, 0, name, path, out);
}

/* ---- the model object's architecture keys ------------------------------------------------------ */

static int arch_enum(const scn_src_t *src, const cJSON *obj, const char *path, const char *key,
                     const char *allowed, int (*parse)(const char *, int *), int *dst, int *seen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    char p[96];
    const char *s;
    if (!v)
        return CLI_OK;
    *seen = 1;
    snprintf(p, sizeof p, "%s%s%s", path, path[0] ? "." : "", key);
    int rc = scn_json_string(src, v, p, allowed, &s);
    if (rc)
        return rc;
    if (parse(s, dst) != MODEL_OK)
        return cli_fail(src->diag, CLI_EUSAGE, "%s%s: \"%.60s\" is not a value of it; allowed: %s",
                        src->prefix, p, s, allowed);
    return CLI_OK;
}

static int parse_act(const char *s, int *v) {
    model_ffn_act_t a;
    int rc = model_ffn_act_parse(s, &a);
    *v = (int)a;
    return rc;
}

static int parse_norm(const char *s, int *v) {
    model_norm_t n;
    int rc = model_norm_parse(s, &n);
    *v = (int)n;
    return rc;
}

static int parse_mask(const char *s, int *v) {
    model_mask_t m;
    int rc = model_mask_parse(s, &m);
    *v = (int)m;
    return rc;
}

static int parse_position(const char *s, int *v) {
    model_position_t p;
    int rc = model_position_parse(s, &p);
    *v = (int)p;
    return rc;
}

int scn_model_arch_keys(const scn_src_t *src, const cJSON *obj, const char *path, model_transformer_t *m,
                        int *changed) {
    char p[96];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "kv_heads");
    int rc = CLI_OK, act = (int)m->ffn_act, norm = (int)m->norm, pos = (int)m->position;
    int mask = (int)m->attention_mask;
    if (v) {
        *changed = 1;
        snprintf(p, sizeof p, "%s%skv_heads", path, path[0] ? "." : "");
        rc = scn_json_int(src, v, p, 1, &m->kv_heads);
    }
    static const char *const moe_keys[] = {"experts", "topk", "shared_experts", "expert_ffn_hidden",
                                           "first_dense"};
    int64_t *moe_dst[] = {&m->moe.experts, &m->moe.topk, &m->moe.shared_experts, &m->moe.expert_ffn_hidden,
                          &m->moe.first_dense};
    for (size_t i = 0; !rc && i < COUNT(moe_keys); i++)
        if ((v = cJSON_GetObjectItemCaseSensitive(obj, moe_keys[i]))) {
            *changed = 1;
            snprintf(p, sizeof p, "%s%s%s", path, path[0] ? "." : "", moe_keys[i]);
            rc = scn_json_int(src, v, p, i < 2 ? 1 : 0, moe_dst[i]);
        }
    if (!rc && (v = cJSON_GetObjectItemCaseSensitive(obj, "capacity_factor"))) {
        *changed = 1;
        snprintf(p, sizeof p, "%s%scapacity_factor", path, path[0] ? "." : "");
        rc = scn_json_pos(src, v, p, 0.0, &m->moe.capacity_factor);
    }
    if (!rc)
        rc = arch_enum(src, obj, path, "ffn_act", "gelu, swiglu, relu2", parse_act, &act, changed);
    if (!rc)
        rc = arch_enum(src, obj, path, "norm", "layernorm, rmsnorm", parse_norm, &norm, changed);
    if (!rc)
        rc = arch_enum(src, obj, path, "position", "learned, rotary", parse_position, &pos, changed);
    if (!rc)
        rc = arch_enum(src, obj, path, "attention_mask", "causal, none", parse_mask, &mask, changed);
    v = cJSON_GetObjectItemCaseSensitive(obj, "tied_embeddings");
    if (!rc && v) {
        *changed = 1;
        if (!cJSON_IsBool(v)) {
            char what[96];
            scn_describe(v, what, sizeof what);
            return cli_fail(src->diag, CLI_EUSAGE,
                            "%s%s%stied_embeddings: %s is not a boolean; allowed: true, false", src->prefix,
                            path, path[0] ? "." : "", what);
        }
        m->untied_embeddings = cJSON_IsFalse(v);
    }
    m->ffn_act = (model_ffn_act_t)act;
    m->norm = (model_norm_t)norm;
    m->position = (model_position_t)pos;
    m->attention_mask = (model_mask_t)mask;
    return rc;
}
