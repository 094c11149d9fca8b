/* stepsim/test_model_config.c - models from a Hugging Face config.json and the model object's
 * architecture keys, end to end through the command line: the public Llama 3 8B config.json gives
 * the Llama3-8B preset field for field and the same estimate; a GPT-style config gives the defaults
 * (the same estimate as the equivalent preset); the reference refuses other architectures; errors
 * are one line naming the file or option, the key and the value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "scenario.h"
#include "test_cli_run.h"

#include "test_cli_assert.h"

#define FIXTURE(name) STEPSIM_FIXTURE_DIR "/models/" name

/* The transformer a --model value resolves to. */
static model_transformer_t model_of(const char *value) {
    scenario_t scn;
    cli_diag_t diag;
    memset(&diag, 0, sizeof diag);
    assert_int_equal(scenario_init(&scn, &diag), 0);
    assert_int_equal(scenario_set_option(&scn, "--model", value, &diag), 0);
    const model_transformer_t m = scn.model;
    scenario_destroy(&scn);
    return m;
}

static void assert_same_model(const model_transformer_t *a, const model_transformer_t *b) {
    assert_int_equal(a->seq_len, b->seq_len);
    assert_int_equal(a->hidden, b->hidden);
    assert_int_equal(a->heads, b->heads);
    assert_int_equal(a->layers, b->layers);
    assert_int_equal(a->ffn_hidden, b->ffn_hidden);
    assert_int_equal(a->vocab, b->vocab);
    assert_int_equal(a->kv_heads, b->kv_heads);
    assert_int_equal(a->ffn_act, b->ffn_act);
    assert_int_equal(a->norm, b->norm);
    assert_int_equal(a->position, b->position);
    assert_int_equal(a->untied_embeddings, b->untied_embeddings);
}

/* The estimate's JSON without the model's name (the only field that differs). */
static char *estimate_json(const char *model) {
    const char *argv[] = {"estimate", "--json", "--model",     model, "--system",    "H100",
                          "--gpus",   "16",     "--gbs",       "64",  "--tp",        "4",
                          "--pp",     "2",      "--embedding", "on",  "--recompute", "selective"};
    cJSON *doc = cli_run_json(argv, (int)(sizeof argv / sizeof argv[0]));
    cJSON *config = cJSON_GetObjectItemCaseSensitive(doc, "config");
    assert_non_null(config);
    assert_non_null(cJSON_GetObjectItemCaseSensitive(config, "model"));
    cJSON_DeleteItemFromObjectCaseSensitive(config, "model");
    char *text = cJSON_Print(doc);
    cJSON_Delete(doc);
    return text;
}

static void test_llama3_config_is_the_preset(void **state) {
    (void)state;
    model_transformer_t preset;
    assert_int_equal(model_transformer_preset("Llama3-8B", &preset), MODEL_OK);
    const model_transformer_t file = model_of(FIXTURE("llama3_8b_config.json"));
    assert_same_model(&file, &preset);
    assert_string_equal(file.name, "llama3_8b_config");
    char *a = estimate_json("Llama3-8B");
    char *b = estimate_json(FIXTURE("llama3_8b_config.json"));
    assert_string_equal(a, b);
    free(a);
    free(b);
}

/* A GPT-2-style config (GeLU, layer_norm_eps, no rope_theta, tie_word_embeddings absent: tied) is
 * the default architecture: the Narayanan et al. GPT 1.7B preset with l 2048. */
static void test_gpt_style_config(void **state) {
    (void)state;
    model_transformer_t preset;
    assert_int_equal(model_transformer_preset("GPT-1.7B", &preset), MODEL_OK);
    const model_transformer_t file = model_of(FIXTURE("gpt2_style_config.json"));
    assert_same_model(&file, &preset);
    assert_true(model_arch_is_default(&file));
}

/* The model object's keys, over a preset or alone; "base" may name a config.json. */
static void test_object_keys(void **state) {
    (void)state;
    model_transformer_t m =
        model_of("{\"base\": \"GPT-1.7B\", \"kv_heads\": 4, \"ffn_act\": \"swiglu\", \"norm\": \"rmsnorm\", "
                 "\"position\": \"rotary\", \"tied_embeddings\": false}");
    assert_int_equal(m.kv_heads, 4);
    assert_int_equal(m.ffn_act, MODEL_FFN_SWIGLU);
    assert_int_equal(m.norm, MODEL_NORM_RMSNORM);
    assert_int_equal(m.position, MODEL_POSITION_ROTARY);
    assert_int_equal(m.untied_embeddings, 1);
    assert_int_equal(m.hidden, 2304);
    m = model_of("{\"base\": \"" FIXTURE("llama3_8b_config.json") "\", \"seq_len\": 4096}");
    assert_int_equal(m.seq_len, 4096);
    assert_int_equal(m.kv_heads, 8);
    assert_int_equal(m.ffn_hidden, 14336);
    assert_string_equal(m.name, "");
    m = model_of(
        "{\"seq_len\": 2048, \"hidden\": 1024, \"heads\": 16, \"layers\": 4, \"ffn_act\": \"relu2\"}");
    assert_int_equal(m.ffn_act, MODEL_FFN_RELU2);
    assert_int_equal(m.kv_heads, 0);
}

static void test_errors(void **state) {
    (void)state;
    const char *const gpus[] = {"--gpus", "8", "--gbs", "8"};
    struct {
        const char *name, *model, *compat;
        const char *frags[3];
    } cases[] = {
        {"missing key",
         FIXTURE("err_missing_layers.json"),
         NULL,
         {"err_missing_layers.json: num_hidden_layers: missing", "allowed:", NULL}},
        {"bad hidden_act",
         FIXTURE("err_hidden_act.json"),
         NULL,
         {"err_hidden_act.json: hidden_act: \"tanh\"", "allowed: silu", NULL}},
        {"no file", "no_such_config.json", NULL, {"no_such_config.json: cannot open", NULL, NULL}},
        {"reference", "Llama3-8B", "reference", {"model.kv_heads: 8", "compat corrected", NULL}},
        {"reference norm",
         "{\"base\": \"GPT-1.7B\", \"norm\": \"rmsnorm\"}",
         "reference",
         {"model.norm: rmsnorm", "compat corrected", NULL}},
        {"ffn_act value",
         "{\"base\": \"GPT-1.7B\", \"ffn_act\": \"relu\"}",
         NULL,
         {"--model: model.ffn_act: \"relu\"", "allowed: gelu, swiglu, relu2", NULL}},
        {"position value",
         "{\"base\": \"GPT-1.7B\", \"position\": 1}",
         NULL,
         {"model.position: 1 is not a string", NULL, NULL}},
        {"tied type",
         "{\"base\": \"GPT-1.7B\", \"tied_embeddings\": \"no\"}",
         NULL,
         {"model.tied_embeddings: \"no\" (a string) is not a boolean", "allowed: true, false", NULL}},
        {"kv_heads zero", "{\"base\": \"GPT-1.7B\", \"kv_heads\": 0}", NULL, {"model.kv_heads", NULL, NULL}},
        {"kv_heads divides heads",
         "{\"base\": \"GPT-1.7B\", \"kv_heads\": 5}",
         NULL,
         {"model.kv_heads: 5", "must divide heads (24)", NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *argv[10] = {"estimate", "--model", cases[i].model, gpus[0], gpus[1], gpus[2], gpus[3]};
        int n = 7;
        if (cases[i].compat) {
            argv[n++] = "--compat";
            argv[n++] = cases[i].compat;
        }
        cli_expect_error(cases[i].name, argv, n, 2, cases[i].frags, 3);
    }
    /* the tensor degree must divide kv_heads (Megatron-Core) */
    const char *argv[] = {"estimate", "--model", "Llama3-8B", "--gpus", "16", "--gbs", "16", "--tp", "16"};
    const char *frags[] = {"--tp: 16 does not divide kv_heads (8)", "allowed: 1, 2, 4, 8"};
    cli_expect_error("tp kv", argv, 9, 2, frags, 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama3_config_is_the_preset),
        cmocka_unit_test(test_gpt_style_config),
        cmocka_unit_test(test_object_keys),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
