/* stepsim/test_cli.c - the command line end to end: default scenario, files vs options, derived degrees, JSON
 * shapes of estimate and search (docs/cli.md), help and version. Runs cli_main in-process. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "model.h"
#include "test_cli_run.h"

/* Parse stdout as exactly one JSON object (trailing whitespace only). */
static cJSON *parse_one(const cli_run_t *r) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(r->out, &end, 1);
    if (!root)
        fail_msg("stdout is not one JSON object: %.200s", r->out);
    assert_true(cJSON_IsObject(root));
    return root;
}

static double num(const cJSON *o, const char *a, const char *b) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b)
        n = cJSON_GetObjectItemCaseSensitive(n, b);
    if (!cJSON_IsNumber(n))
        fail_msg("missing number %s%s%s", a, b ? "." : "", b ? b : "");
    return n->valuedouble;
}

static const char *str(const cJSON *o, const char *a, const char *b) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b)
        n = cJSON_GetObjectItemCaseSensitive(n, b);
    if (!cJSON_IsString(n))
        fail_msg("missing string %s%s%s", a, b ? "." : "", b ? b : "");
    return n->valuestring;
}

static void assert_rel(double got, double want, double rel) {
    if (!(fabs(got - want) <= rel * fabs(want)))
        fail_msg("got %.17g, want %.17g (rel %g)", got, want, rel);
}

/* The built-in scenario is the reference's stored best 1d layout (docs/model-formulas.md, section 11). */
static void default_scenario_reference(void **state) {
    (void)state;
    cli_run_t r = cli_run("estimate", "--compat", "reference", "--json", NULL);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    cJSON *j = parse_one(&r);
    assert_rel(num(j, "iteration_time_s", NULL), 62.969025, 1e-7);
    assert_rel(num(j, "throughput_samples_per_s", NULL), 65.0479, 1e-6);
    assert_rel(num(j, "memory_gb", NULL), 75.744428, 1e-7);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "fits")));
    assert_rel(num(j, "breakdown_s", "bubble"), 6.727898, 1e-6);
    assert_rel(num(j, "memory_gb_parts", "optimizer"), 2.9496192, 1e-7);
    assert_rel(num(j, "block", "flops_tflop"), 12.27148, 1e-6);
    static const char *const keys[] = {"dp",    "tp",          "pp",          "mbs",
                                       "nv_tp", "nv_dp",       "nv_pp",       "n_microbatches",
                                       "gpus",  "nvlink_size", "global_batch"};
    static const double want[] = {16, 8, 32, 1, 8, 1, 1, 256, 4096, 8, 4096};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        assert_int_equal((int64_t)num(j, "config", keys[i]), (int64_t)want[i]);
    assert_string_equal(str(j, "config", "strategy"), "1d");
    assert_string_equal(str(j, "config", "model"), "gpt3_1T");
    assert_string_equal(str(j, "config", "system"), "A100");
    assert_string_equal(str(j, "config", "compat"), "reference");
    cJSON_Delete(j);
    cli_run_free(&r);
}

/* The same scenario written out as a file gives the same bytes. */
static void file_equals_default(void **state) {
    (void)state;
    cli_run_t a = cli_run("estimate", "--compat", "reference", "--json", NULL);
    cli_run_t b = cli_run("estimate", "@default_best.json", "--json", NULL);
    assert_int_equal(b.rc, 0);
    cJSON *ja = parse_one(&a), *jb = parse_one(&b);
    assert_true(num(ja, "iteration_time_s", NULL) == num(jb, "iteration_time_s", NULL));
    assert_string_equal(str(jb, "scenario", NULL), "default-best");
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    cli_run_free(&a);
    cli_run_free(&b);
}

/* Options override the file; dp is re-derived from the new GPU count. */
static void options_override_file(void **state) {
    (void)state;
    cli_run_t r = cli_run("estimate", "@default_best.json", "--gpus", "2048", "--dp", "8", "--compat",
                          "corrected", "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *j = parse_one(&r);
    assert_int_equal((int64_t)num(j, "config", "gpus"), 2048);
    assert_int_equal((int64_t)num(j, "config", "dp"), 8);
    assert_string_equal(str(j, "config", "compat"), "corrected");
    cJSON_Delete(j);
    cli_run_free(&r);
    r = cli_run("estimate", "--gpus", "1024", "--json", NULL);
    assert_int_equal(r.rc, 0);
    j = parse_one(&r);
    assert_int_equal((int64_t)num(j, "config", "dp"), 4); /* 1024 / (8 x 32) */
    cJSON_Delete(j);
    cli_run_free(&r);
}

/* Derived defaults: capped tp and pp, nv counts filled innermost-first or whole groups. */
static void derived_defaults(void **state) {
    (void)state;
    cli_run_t r = cli_run("estimate", "--model", "gpt3", "--gpus", "64", "--gbs", "1536", "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *j = parse_one(&r);
    assert_int_equal((int64_t)num(j, "config", "tp"), 8);
    assert_int_equal((int64_t)num(j, "config", "pp"), 8);
    assert_int_equal((int64_t)num(j, "config", "dp"), 1);
    assert_int_equal((int64_t)num(j, "config", "nv_tp"), 8);
    assert_int_equal((int64_t)num(j, "config", "nv_pp"), 1);
    cJSON_Delete(j);
    cli_run_free(&r);
    /* the whole job in one domain: every group gets its full size */
    r = cli_run("estimate", "--model", "gpt3", "--gpus", "8", "--nvs", "8", "--tp", "4", "--pp", "2",
                "--json", NULL);
    assert_int_equal(r.rc, 0);
    j = parse_one(&r);
    assert_int_equal((int64_t)num(j, "config", "nv_tp"), 4);
    assert_int_equal((int64_t)num(j, "config", "nv_dp"), 1);
    assert_int_equal((int64_t)num(j, "config", "nv_pp"), 2);
    cJSON_Delete(j);
    cli_run_free(&r);
}

/* Object model and system (base + override), 2d with nb derived, topology kept; fits false is exit 0. */
static void custom_objects_2d(void **state) {
    (void)state;
    cli_run_t r = cli_run("estimate", "@custom_objects.json", "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *j = parse_one(&r);
    assert_string_equal(str(j, "config", "strategy"), "2d");
    assert_int_equal((int64_t)num(j, "config", "tp"), 8);
    assert_int_equal((int64_t)num(j, "config", "tp1"), 4);
    assert_int_equal((int64_t)num(j, "config", "tp2"), 2);
    assert_int_equal((int64_t)num(j, "config", "nb"), 4);
    assert_int_equal((int64_t)num(j, "config", "dp"), 1);
    assert_int_equal((int64_t)num(j, "config", "nvlink_size"), 4);
    assert_int_equal((int64_t)num(j, "config", "nv_tp1") * (int64_t)num(j, "config", "nv_tp2"), 4);
    assert_rel(num(j, "detail", "hbm_capacity_gb"), 40, 0);
    assert_string_equal(str(j, "config", "model"), "custom");
    if (num(j, "memory_gb", NULL) > 40)
        assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "fits")));
    cJSON_Delete(j);
    cli_run_free(&r);
}

/* The reference's own system JSON keys (element_size in GB) give the preset's numbers. */
static void reference_system_keys(void **state) {
    (void)state;
    cli_run_t a = cli_run("estimate", "@reference_system.json", "--json", NULL);
    cli_run_t b =
        cli_run("estimate", "@reference_system.json", "--system", "A100", "--nvs", "8", "--json", NULL);
    assert_int_equal(a.rc, 0);
    assert_int_equal(b.rc, 0);
    cJSON *ja = parse_one(&a), *jb = parse_one(&b);
    assert_rel(num(ja, "iteration_time_s", NULL), num(jb, "iteration_time_s", NULL), 1e-12);
    assert_rel(num(ja, "memory_gb", NULL), num(jb, "memory_gb", NULL), 1e-12);
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    cli_run_free(&a);
    cli_run_free(&b);
}

/* --layers: a text table with units, and a "layers" array in JSON whose times add up to the block. */
static void layers_table(void **state) {
    (void)state;
    cli_run_t r = cli_run("estimate", "--layers", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "F TFLOP")); /* units in the header, 100 columns: no brackets */
    assert_non_null(strstr(r.out, "qkv"));
    assert_non_null(strstr(r.out, "samples/s"));
    cli_run_free(&r);
    r = cli_run("estimate", "--layers", "--json", NULL);
    cJSON *j = parse_one(&r);
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(j, "layers");
    assert_true(cJSON_GetArraySize(layers) > 0 && cJSON_GetArraySize(layers) <= MODEL_BLOCK_LAYERS);
    double fwd = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, layers) fwd += num(l, "fwd", "time_s");
    assert_rel(fwd, num(j, "block", "t_fwd_s"), 1e-9);
    cJSON_Delete(j);
    cli_run_free(&r);
}

/* --layers on a system with an SM count: the GEMM table in text, and each GEMM layer's passes carry
 * their GEMMs in JSON, whose times plus the launch overhead are the pass's compute; the default
 * system (A100, no SM count) lists none. */
static void layers_gemms(void **state) {
    (void)state;
    const char *const args[] = {"estimate", "--system", "DGX-H100", "--model", "Llama3-8B",
                                "--gpus",   "8",        "--tp",     "2",       "--layers"};
    cli_run_t r = cli_run_argv(10, args);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "GEMMs: C (M x N)"));
    assert_non_null(strstr(r.out, "split-K"));
    cli_run_free(&r);
    r = cli_run("estimate", "--system", "DGX-H100", "--model", "Llama3-8B", "--gpus", "8", "--tp", "2",
                "--layers", "--json", NULL);
    cJSON *j = parse_one(&r);
    int seen = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(j, "layers")) {
        const cJSON *bwd = cJSON_GetObjectItemCaseSensitive(l, "bwd");
        const cJSON *gemms = cJSON_GetObjectItemCaseSensitive(bwd, "gemms");
        if (!gemms)
            continue;
        double t = 20e-6; /* the preset's kernel overhead */
        const cJSON *g;
        cJSON_ArrayForEach(g, gemms) {
            assert_true(num(g, "waves", NULL) >= 1);
            t += num(g, "time_s", NULL);
        }
        assert_rel(t, num(bwd, "comp_s", NULL), 1e-9);
        seen++;
    }
    assert_int_equal(seen, 4); /* qkv, vproj, fc1, fc2 */
    cJSON_Delete(j);
    cli_run_free(&r);
    r = cli_run("estimate", "--layers", NULL);
    assert_null(strstr(r.out, "GEMMs: C (M x N)"));
    cli_run_free(&r);
}

/* search --json: the shape of docs/cli.md, best first, and the reference's rank-0 for 1d at 4096 GPUs. */
static void search_json(void **state) {
    (void)state;
    cli_run_t r =
        cli_run("search", "--strategy", "1d", "--top", "3", "--compat", "reference", "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *j = parse_one(&r);
    assert_true(num(j, "candidates_evaluated", NULL) > 0);
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(j, "results");
    assert_int_equal(cJSON_GetArraySize(res), 3);
    const cJSON *first = cJSON_GetArrayItem(res, 0);
    assert_int_equal((int64_t)num(first, "rank", NULL), 0);
    /* search-outputs.csv: 1d, gpt3_1T, A100-NVS8, 4096 GPUs, rank 0 */
    assert_rel(num(first, "throughput_samples_per_s", NULL), 65.04785531084015, 1e-9);
    assert_string_equal(str(first, "config", "strategy"), "1d");
    num(first, "config", "nv_tp1");
    num(first, "config", "nv_tp2");
    num(first, "config", "nb");
    num(first, "breakdown_s", "bubble");
    num(first, "iteration_time_s", NULL);
    num(first, "memory_gb", NULL);
    double prev = INFINITY;
    const cJSON *it;
    cJSON_ArrayForEach(it, res) {
        assert_true(num(it, "throughput_samples_per_s", NULL) <= prev);
        prev = num(it, "throughput_samples_per_s", NULL);
    }
    cJSON_Delete(j);
    cli_run_free(&r);
}

/* Nothing fits: exit 3, one stderr line, JSON with empty results (text: the header only). */
static void search_nothing_fits(void **state) {
    (void)state;
    cli_run_t r = cli_run("search", "--gpus", "8", "--json", NULL);
    assert_int_equal(r.rc, 3);
    assert_int_equal(cli_run_lines(r.err), 1);
    assert_non_null(strstr(r.err, "no configuration fits"));
    cJSON *j = parse_one(&r);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "results")), 0);
    cJSON_Delete(j);
    cli_run_free(&r);
    r = cli_run("search", "--gpus", "8", NULL);
    assert_int_equal(r.rc, 3);
    assert_non_null(strstr(r.out, "candidates evaluated"));
    cli_run_free(&r);
}

/* A scenario's parallel.strategy restricts the search; its degrees are ignored. */
static void search_scenario_strategy(void **state) {
    (void)state;
    cli_run_t r = cli_run("search", "@custom_objects.json", "--system", "A100", "--top", "1", "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *j = parse_one(&r);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "strategies");
    assert_int_equal(cJSON_GetArraySize(s), 1);
    assert_string_equal(cJSON_GetArrayItem(s, 0)->valuestring, "2d");
    cJSON_Delete(j);
    cli_run_free(&r);
}

/* --help lists every option with a default, and the presets; help and --version. */
static void help_and_version(void **state) {
    (void)state;
    static const char *const opts[] = {
        "--model", "--system", "--nvs",    "--gpus",     "--gbs",  "--strategy", "--dp",     "--tp",
        "--tp1",   "--tp2",    "--pp",     "--mbs",      "--nb",   "--nv-tp",    "--nv-tp1", "--nv-tp2",
        "--nv-dp", "--nv-pp",  "--compat", "--topology", "--json", "--layers"};
    cli_run_t r = cli_run("estimate", "--help", NULL);
    assert_int_equal(r.rc, 0);
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        if (!strstr(r.out, opts[i]))
            fail_msg("estimate --help lacks %s", opts[i]);
    for (size_t i = 0; model_system_preset_name(i); i++)
        assert_non_null(strstr(r.out, model_system_preset_name(i)));
    for (size_t i = 0; model_transformer_preset_name(i); i++)
        assert_non_null(strstr(r.out, model_transformer_preset_name(i)));
    assert_non_null(strstr(r.out, "[corrected]"));
    cli_run_free(&r);
    r = cli_run("search", "--help", NULL);
    assert_non_null(strstr(r.out, "--top K"));
    assert_non_null(strstr(r.out, "[10]"));
    assert_null(strstr(r.out, "--nv-tp"));
    cli_run_free(&r);
    r = cli_run("help", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "estimate"));
    cli_run_free(&r);
    r = cli_run("--version", NULL);
    assert_int_equal(r.rc, 0);
    assert_true(strncmp(r.out, "stepsim ", 8) == 0);
    cli_run_free(&r);
}

/* In 1d, tp2 1 is the unused second tensor group at its only allowed value: the same result as
 * without it in every command that takes a scenario (it used to leave the tensor degree 0 and
 * divide by it). */
static void tp2_one_in_1d(void **state) {
    (void)state;
    const char *cmds[] = {"estimate", "run", "compare", "validate"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        cli_run_t plain = cli_run(cmds[i], "--model", "gpt3", "--gpus", "64", "--gbs", "64", "--json", NULL);
        cli_run_t with =
            cli_run(cmds[i], "--model", "gpt3", "--gpus", "64", "--gbs", "64", "--tp2", "1", "--json", NULL);
        assert_int_equal(plain.rc, 0);
        assert_int_equal(with.rc, 0);
        /* run prints its wall time: compare up to it */
        const char *wall_a = strstr(plain.out, "\"wall_time_s\"");
        const char *wall_b = strstr(with.out, "\"wall_time_s\"");
        assert_int_equal(wall_a == NULL, wall_b == NULL);
        if (wall_a)
            assert_memory_equal(plain.out, with.out, (size_t)(wall_a - plain.out));
        else
            assert_string_equal(plain.out, with.out);
        cli_run_free(&plain);
        cli_run_free(&with);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_scenario_reference),
        cmocka_unit_test(file_equals_default),
        cmocka_unit_test(options_override_file),
        cmocka_unit_test(derived_defaults),
        cmocka_unit_test(custom_objects_2d),
        cmocka_unit_test(reference_system_keys),
        cmocka_unit_test(layers_table),
        cmocka_unit_test(layers_gemms),
        cmocka_unit_test(search_json),
        cmocka_unit_test(search_nothing_fits),
        cmocka_unit_test(search_scenario_strategy),
        cmocka_unit_test(help_and_version),
        cmocka_unit_test(tp2_one_in_1d),
    };
    return cmocka_run_group_tests_name("stepsim.cli", tests, NULL, NULL);
}
