/* arch.c - the transformer architecture fields (grouped-query attention, the feed-forward activation,
 * the norm, positions, tied or untied embeddings): names, parsers, defaults and the parameter count
 * (docs/model.md, "Architectures"; docs/model-formulas.md, section 15). */
#include <string.h>

#include "model.h"

int64_t model_kv_heads(const model_transformer_t *m) {
    return m->kv_heads > 0 ? m->kv_heads : m->heads;
}

int model_arch_is_default(const model_transformer_t *m) {
    return (m->kv_heads == 0 || m->kv_heads == m->heads) && m->ffn_act == MODEL_FFN_GELU &&
           m->norm == MODEL_NORM_LAYERNORM && m->position == MODEL_POSITION_LEARNED &&
           !m->untied_embeddings && !model_is_moe(m);
}

double model_param_count(const model_transformer_t *m) {
    const double e = (double)m->hidden, h = (double)m->heads, f = (double)m->ffn_hidden;
    const double kv = (double)model_kv_heads(m), q = (double)(m->hidden / m->heads);
    const double v = (double)m->vocab, l = (double)m->seq_len;
    const double norm = m->norm == MODEL_NORM_RMSNORM ? e : 2.0 * e; /* gain (and bias) */
    const double attention = e * (h + 2.0 * kv) * q + h * q * e;     /* Q, K, V; output projection */
    const double mlp = (m->ffn_act == MODEL_FFN_SWIGLU ? 3.0 : 2.0) * e * f;
    const double block = attention + mlp + 2.0 * norm;
    double total = (double)m->layers * block + v * e + norm;
    if (model_is_moe(m)) { /* MoE blocks: a router and E + s experts of hidden f_e instead of the MLP */
        const double fe = (double)(m->moe.expert_ffn_hidden > 0 ? m->moe.expert_ffn_hidden : m->ffn_hidden);
        const double experts = (double)(m->moe.experts + m->moe.shared_experts);
        const double moe_mlp = e * (double)m->moe.experts + experts * mlp / f * fe;
        total += (double)model_moe_layers(m) * (moe_mlp - mlp);
    }
    if (m->position == MODEL_POSITION_LEARNED)
        total += l * e;
    if (m->untied_embeddings)
        total += v * e;
    return total;
}

static const char *const ffn_act_names[] = {"gelu", "swiglu", "relu2"};
static const char *const norm_names[] = {"layernorm", "rmsnorm"};
static const char *const position_names[] = {"learned", "rotary"};

static int parse_in(const char *name, const char *const *names, int n, int *out) {
    for (int i = 0; name && i < n; i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = i;
            return MODEL_OK;
        }
    }
    return MODEL_EINVAL;
}

const char *model_ffn_act_name(model_ffn_act_t a) {
    return (unsigned)a < 3 ? ffn_act_names[a] : "?";
}

int model_ffn_act_parse(const char *name, model_ffn_act_t *out) {
    int v = 0;
    if (parse_in(name, ffn_act_names, 3, &v))
        return MODEL_EINVAL;
    *out = (model_ffn_act_t)v;
    return MODEL_OK;
}

const char *model_norm_name(model_norm_t n) {
    return (unsigned)n < 2 ? norm_names[n] : "?";
}

int model_norm_parse(const char *name, model_norm_t *out) {
    int v = 0;
    if (parse_in(name, norm_names, 2, &v))
        return MODEL_EINVAL;
    *out = (model_norm_t)v;
    return MODEL_OK;
}

const char *model_position_name(model_position_t p) {
    return (unsigned)p < 2 ? position_names[p] : "?";
}

int model_position_parse(const char *name, model_position_t *out) {
    int v = 0;
    if (parse_in(name, position_names, 2, &v))
        return MODEL_EINVAL;
    *out = (model_position_t)v;
    return MODEL_OK;
}

static const char *const mask_names[] = {"causal", "none"};

const char *model_mask_name(model_mask_t m) {
    return (unsigned)m < 2 ? mask_names[m] : "?";
}

int model_mask_parse(const char *name, model_mask_t *out) {
    int v = 0;
    if (parse_in(name, mask_names, 2, &v))
        return MODEL_EINVAL;
    *out = (model_mask_t)v;
    return MODEL_OK;
}
