/* scenario_internal.h - helpers shared by scenario.c, scenario_json.c and scenario_resolve.c only
 * (sweep_grid.c takes the default presets' names). */
#ifndef STEPSIM_SCENARIO_INTERNAL_H
#define STEPSIM_SCENARIO_INTERNAL_H

#include "scenario.h"

/* The built-in default scenario (docs/model-formulas.md, section 11: the reference's stored best 1d layout at
 * 4096 GPUs). */
#define SCN_DEFAULT_MODEL "gpt3_1T"
#define SCN_DEFAULT_SYSTEM "A100"
#define SCN_DEFAULT_NVS 8
#define SCN_DEFAULT_GPUS 4096
#define SCN_DEFAULT_GBS 4096
/* Caps of the derived defaults: tp (or tp1) <= 8, pp <= 32. */
#define SCN_DEFAULT_TP_CAP 8
#define SCN_DEFAULT_PP_CAP 32

/* Where parsed JSON values come from: prefix is "file.json: " or "--model: " (may be ""). */
typedef struct scn_src {
    cli_diag_t *diag;
    const char *prefix;
    scenario_origin_t origin;
} scn_src_t;

const char *scn_hint(char *buf, size_t n, const char *word, const char *const *cands, size_t count);
int scn_field_by_path(const char *path);
void scn_describe(const cJSON *v, char *buf, size_t n);
int scn_json_int(const scn_src_t *src, const cJSON *v, const char *path, int64_t min, int64_t *out);
/* A finite number > 0, and <= max when max > 0. */
int scn_json_pos(const scn_src_t *src, const cJSON *v, const char *path, double max, double *out);
int scn_json_string(const scn_src_t *src, const cJSON *v, const char *path, const char *allowed,
                    const char **out);
int scn_check_keys(const scn_src_t *src, const cJSON *obj, const char *path, const char *const *keys,
                   size_t n);
void scn_preset_list(int system, char *buf, size_t n);
/* out is a model_system_t (system != 0) or a model_transformer_t. */
int scn_preset_lookup(const scn_src_t *src, int system, const char *name, const char *path, void *out);
int scn_parse_model(scenario_t *scn, const scn_src_t *src, const cJSON *v, const char *path);
/* model_hf.c: a model name is a preset, or a Hugging Face config.json when it ends with ".json"
 * (read from that path); path names the JSON path or option for the preset's error. */
int scn_model_is_file(const char *name);
int scn_model_hf_file(const scn_src_t *src, const char *file, model_transformer_t *out);
int scn_model_named(const scn_src_t *src, const char *name, const char *path, model_transformer_t *out);
/* The model object's kv_heads, ffn_act, norm, position and tied_embeddings keys over *m; *changed
 * is set when one is given. */
int scn_model_arch_keys(const scn_src_t *src, const cJSON *obj, const char *path, model_transformer_t *m,
                        int *changed);
int scn_parse_system(scenario_t *scn, const scn_src_t *src, const cJSON *v, const char *path);
/* A system preset by name; a machine's own NVLink domain (model_system_preset_domain) becomes
 * nvlink_size, as a system object's nvlink_size does. */
int scn_system_preset(scenario_t *scn, const scn_src_t *src, const char *name, const char *path);
int scn_bad_strategy(cli_diag_t *diag, const char *where, const char *value);
int scn_bad_compat(cli_diag_t *diag, const char *where, const char *value);

/* scenario_training.c: the training.* fields. */
int scn_is_training(scenario_field_t f);
/* Set training field f from its text ("full", "off", "2"); where names it in messages. */
int scn_training_set(scenario_t *scn, scenario_field_t f, const char *where, const char *text,
                     cli_diag_t *diag);
/* The "training" object of a scenario file: strings, booleans for on/off fields, an integer
 * interleave. */
int scn_parse_training(scenario_t *scn, const scn_src_t *src, const cJSON *obj);
/* A training field given with compat reference (which has none): CLI_EUSAGE naming it; else CLI_OK. */
int scn_training_for_reference(const scenario_t *scn, cli_diag_t *diag);

#endif
