/* stepsim/test_cli_errors.c - invalid input never crashes or half-runs: exit code, one stderr line, empty
 * stdout.
 *
 * Each case runs cli_main in-process and checks the exit code, that stdout is empty, that stderr is
 * exactly one line, and that the line contains the expected fragments (the file or option, the JSON
 * path, the bad value, what is allowed). "@name" arguments are files in tests/fixtures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_cli_run.h"

typedef struct error_case {
    const char *name;
    const char *args[12]; /* NULL-terminated */
    int rc;
    const char *frag[3]; /* fragments that must all appear in the stderr line */
} error_case_t;

static const error_case_t CASES[] = {
    /* files and JSON syntax */
    {"missing_file", {"estimate", "no-such-scenario.json"}, 2, {"no-such-scenario.json", "cannot open"}},
    {"broken_json_line_col",
     {"estimate", "@err_syntax.json"},
     2,
     {"err_syntax.json: line 4, column 3", "invalid JSON"}},
    {"empty_file", {"estimate", "@err_empty.json"}, 2, {"err_empty.json: line 1, column 1", "invalid JSON"}},
    {"trailing_garbage", {"estimate", "@err_trailing.json"}, 2, {"line 1, column 14", "trailing"}},
    {"top_level_array", {"estimate", "@err_array.json"}, 2, {"err_array.json", "an array", "a JSON object"}},
    /* unknown keys with did-you-mean */
    {"unknown_key",
     {"estimate", "@err_unknown_key.json"},
     2,
     {"gpu: unknown key", "did you mean \"gpus\"", "allowed:"}},
    {"unknown_parallel_key",
     {"estimate", "@err_unknown_parallel_key.json"},
     2,
     {"parallel.tpp: unknown key", "did you mean \"tp", "allowed:"}},
    {"unknown_system_key",
     {"estimate", "@err_system_key.json"},
     2,
     {"system.hbm_capcity: unknown key", "did you mean \"hbm_capacity\""}},
    /* wrong JSON types and bad numbers */
    {"wrong_type_string",
     {"estimate", "@err_wrong_type.json"},
     2,
     {"gpus: \"4096\" (a string)", "not a number", "positive integer"}},
    {"nv_not_object", {"estimate", "@err_nv_type.json"}, 2, {"parallel.nv: an array", "not an object"}},
    {"non_integer_degree",
     {"estimate", "@err_nonint.json"},
     2,
     {"parallel.tp: 2.5", "not an integer", "positive integer"}},
    {"zero_degree", {"estimate", "@err_zero.json"}, 2, {"parallel.pp: 0", "zero", "positive integer"}},
    {"negative_gpus", {"estimate", "@err_negative.json"}, 2, {"err_negative.json: gpus: -8", "negative"}},
    {"efficiency_range", {"estimate", "@err_system_eff.json"}, 2, {"system.nvlink_eff: 1.5", "<= 1"}},
    /* the model walks its layers: their count is bounded (MODEL_MAX_LAYERS) */
    {"layers_too_many",
     {"estimate", "--model", "{\"base\": \"gpt3\", \"layers\": 100001}", "--pp", "1"},
     2,
     {"model.layers: 100001", "must be at most 100000"}},
    /* the SM count of the GEMM time by shape */
    {"sm_count_negative",
     {"estimate", "--system", "{\"base\": \"DGX-A100\", \"sm_count\": -1}"},
     2,
     {"system.sm_count: -1", ">= 0"}},
    {"sm_count_fraction",
     {"estimate", "--system", "{\"base\": \"DGX-A100\", \"sm_count\": 2.5}"},
     2,
     {"system.sm_count: 2.5", "integer"}},
    {"model_missing_key",
     {"estimate", "@err_model_missing.json"},
     2,
     {"model: missing key \"layers\"", "seq_len"}},
    {"model_heads_hidden", {"estimate", "@err_model_heads.json"}, 2, {"model.heads: 7", "hidden (1000)"}},
    /* the model's rules, from a file and from options */
    {"tp_heads_file",
     {"estimate", "@err_tp_heads.json"},
     2,
     {"err_tp_heads.json: parallel.tp: 6", "heads (160)", "allowed: 1, 2, 4, 5, 8"}},
    {"tp_heads_option", {"estimate", "--tp", "6"}, 2, {"--tp: 6 does not divide heads (160)", "allowed:"}},
    {"tp2_hidden", {"estimate", "@err_tp2_hidden.json"}, 2, {"parallel.tp2: 3", "hidden (25600)"}},
    {"pp_layers", {"estimate", "--pp", "5"}, 2, {"--pp: 5", "layers (128)", "allowed: 1, 2, 4"}},
    {"nv_not_divide",
     {"estimate", "@err_nv_divide.json"},
     2,
     {"parallel.nv.tp: 3", "group", "allowed: 1, 2, 4, 8"}},
    {"nv_exceeds_domain",
     {"estimate", "@err_nv_domain.json"},
     2,
     {"parallel.nv", "product 16", "nvlink_size (8)"}},
    {"nv_exceeds_domain_option",
     {"estimate", "--tp", "16", "--nv-tp", "16"},
     2,
     {"parallel.nv", "nvlink_size (8)"}},
    {"mbs_local_batch", {"estimate", "--mbs", "7"}, 2, {"--mbs: 7", "global_batch/dp (256)"}},
    {"tp2_with_1d", {"estimate", "--tp2", "2"}, 2, {"--tp2: 2", "strategy 2d", "1 or absent"}},
    {"strategy_all_estimate",
     {"estimate", "--strategy", "all"},
     2,
     {"--strategy: all", "only valid for search"}},
    /* names: strategy, compat, presets */
    {"unknown_strategy_file",
     {"estimate", "@err_strategy.json"},
     2,
     {"parallel.strategy: unknown strategy \"3d\"", "allowed: 1d, 2d, 2d-seqp"}},
    {"unknown_compat_file",
     {"estimate", "@err_compat.json"},
     2,
     {"compat: unknown compat \"exact\"", "reference, corrected"}},
    {"unknown_compat_option",
     {"estimate", "--compat", "referenc"},
     2,
     {"--compat", "did you mean \"reference\""}},
    {"unknown_model_preset",
     {"estimate", "--model", "gpt4"},
     2,
     {"--model: unknown model preset \"gpt4\"", "did you mean \"gpt3\"", "gpt3_1T"}},
    {"unknown_system_preset",
     {"search", "@err_system_preset.json"},
     2,
     {"system: unknown system preset \"H300\"", "A100"}},
    {"system_preset_case", {"estimate", "--system", "a100"}, 2, {"did you mean \"A100\""}},
    /* options and commands */
    {"option_not_integer",
     {"estimate", "--gpus", "abc"},
     2,
     {"--gpus: \"abc\" is not an integer", "positive integer"}},
    {"option_fraction", {"estimate", "--tp", "2.5"}, 2, {"--tp: 2.5 is not an integer"}},
    {"option_zero", {"estimate", "--dp", "0"}, 2, {"--dp: 0 is zero"}},
    {"option_missing_value", {"estimate", "--gpus"}, 2, {"--gpus: missing value", "--gpus N"}},
    {"option_value_is_option", {"estimate", "--model", "--json"}, 2, {"--model: missing value"}},
    {"unknown_option", {"estimate", "--gpu", "8"}, 2, {"--gpu: unknown option", "did you mean --gpus"}},
    {"flag_with_value", {"estimate", "--json=yes"}, 2, {"--json: takes no value"}},
    {"degree_option_in_search", {"search", "--tp", "8"}, 2, {"--tp: not an option of search"}},
    {"search_top_zero", {"search", "--top", "0"}, 2, {"--top: 0", "allowed: 1.."}},
    {"two_files", {"estimate", "a.json", "b.json"}, 2, {"b.json: unexpected argument", "one scenario file"}},
    {"unknown_command", {"estimat"}, 2, {"estimat: unknown command", "did you mean \"estimate\""}},
    {"missing_command", {NULL}, 2, {"missing command", "estimate, search, topo, collective, run, compare"}},
    {"help_unknown_command",
     {"help", "rn"},
     2,
     {"help: unknown command \"rn\"", "did you mean \"run\"", "compare"}},
    {"inline_model_json",
     {"estimate", "--model", "{\"seq_len\": 2048}"},
     2,
     {"--model: model: missing key \"hidden\""}},
    /* valid input, no result: exit 3 */
    {"product_mismatch_file",
     {"estimate", "@err_product.json"},
     3,
     {"err_product.json: parallel: dp (4) x tp (8) x pp (32) = 1024", "does not equal gpus (4096)"}},
    {"product_mismatch_options",
     {"estimate", "--dp", "4", "--tp", "8", "--pp", "32", "--json"},
     3,
     {"does not equal gpus (4096)"}},
    {"dp_not_derivable",
     {"estimate", "--gpus", "1000", "--pp", "16"},
     3,
     {"parallel.dp: cannot be derived: tp (8) x pp (16) = 128", "gpus (1000)"}},
    /* the simulation's memory budget */
    {"max_memory_not_a_number", {"run", "--max-memory", "lots"}, 2, {"--max-memory: \"lots\"", "allowed:"}},
    {"max_memory_too_small",
     {"run", "--comm", "analytic", "--max-memory", "0.1"},
     2,
     {"more than the memory budget of 0.1 GB (--max-memory)", "operations need about"}},
    /* the topology's memory budget: refused before it is built, the estimate in the message */
    {"max_memory_topo_k406",
     {"topo", "--topology", "{\"kind\":\"fat-tree\",\"tiers\":3,\"k\":406}", "--max-memory", "4"},
     2,
     {"--topology: topology: fat-tree needs about 13.6 GB (16936899 vertices, 100385124 links)",
      "more than the memory budget of 4 GB (--max-memory)"}},
    {"max_memory_collective_k406",
     {"collective", "--topology", "{\"kind\":\"fat-tree\",\"tiers\":3,\"k\":406}", "--max-memory", "4"},
     2,
     {"fat-tree needs about 13.6 GB", "more than the memory budget of 4 GB (--max-memory)"}},
    {"max_memory_run_topology",
     {"run", "--topology", "fat-tree", "--max-memory", "0.001"},
     2,
     {"--topology: topology: fat-tree needs about 0.00335 GB (4768 vertices, 24576 links)",
      "budget of 0.001 GB (--max-memory)"}},
    {"max_memory_jobs_topology",
     {"run", "@jobs/single.json", "--max-memory", "0.0001"},
     2,
     {"single.json: topology: topology: fat-tree needs about", "(54 vertices, 192 links)",
      "budget of 0.0001 GB (--max-memory)"}},
    {"max_memory_topo_not_a_number", {"topo", "--max-memory", "0"}, 2, {"--max-memory: \"0\"", "allowed:"}},
    /* degrees whose product passes 2^63: refused, never a wrapped product (they used to crash) */
    {"dp_huge",
     {"estimate", "--dp", "2305843009213693952"},
     2,
     {"--dp: 2305843009213693952 does not divide global_batch (4096)"}},
    {"dp_product_overflows",
     {"estimate", "--gbs", "4611686018427387904", "--dp", "2305843009213693952"},
     3,
     {"parallel: dp (2305843009213693952) x tp (8) x pp (32) overflows 64 bits", "gpus (4096)"}},
    {"pp_huge",
     {"estimate", "--pp", "2305843009213693952"},
     2,
     {"--pp: 2305843009213693952 does not divide"}},
    {"dp_product_overflows_run",
     {"run", "--comm", "analytic", "--gbs", "4611686018427387904", "--dp", "2305843009213693952"},
     3,
     {"overflows 64 bits"}},
    /* latencies that would saturate the picosecond clock: refused (1e7 s used to wrap the route sum
     * and make the collective and the step faster than with 1 us links) */
    {"link_latency_collective",
     {"collective", "--gpus", "8", "--topology", "{\"kind\":\"fat-tree\",\"k\":4,\"link_latency_s\":1e7}"},
     2,
     {"--topology: link_latency_s: 1e+07", "must be in [0, 1] s"}},
    {"link_latency_run",
     {"run", "--model", "gpt3", "--gpus", "64", "--topology",
      "{\"kind\":\"fat-tree\",\"k\":8,\"link_latency_s\":1e7}"},
     2,
     {"--topology: link_latency_s: 1e+07", "must be in [0, 1] s"}},
    {"nvlink_latency_collective",
     {"collective", "--gpus", "8", "--topology", "{\"kind\":\"fat-tree\",\"k\":4,\"nvlink_latency_s\":2}"},
     2,
     {"--topology: nvlink_latency_s: 2", "must be in [0, 1] s"}},
    {"system_ib_latency_run",
     {"run", "--model", "gpt3", "--gpus", "64", "--system", "{\"base\":\"A100\",\"ib_latency\":1e7}"},
     2,
     {"--system: system.ib_latency: 1e+07", "[0, 1] s"}},
    {"system_nvlink_latency_estimate",
     {"estimate", "--system", "{\"base\":\"A100\",\"nvlink_latency\":2}"},
     2,
     {"--system: system.nvlink_latency: 2", "[0, 1] s"}},
    /* the same budget in compare and the waterfall (every simulation they run) */
    {"max_memory_compare",
     {"compare", "--model", "gpt3", "--gpus", "64", "--topologies", "fat-tree", "--max-memory", "0.1"},
     2,
     {"more than the memory budget of 0.1 GB (--max-memory)", "operations need about"}},
    {"max_memory_validate",
     {"validate", "--model", "gpt3", "--gpus", "64", "--max-memory", "0.1"},
     2,
     {"more than the memory budget of 0.1 GB (--max-memory)", "operations need about"}},
    {"max_memory_compare_not_a_number",
     {"compare", "--max-memory", "-1"},
     2,
     {"--max-memory: \"-1\"", "allowed:"}},
};

static void run_case(void **state) {
    const error_case_t *c = *state;
    int argc = 0;
    while (argc < 12 && c->args[argc])
        argc++;
    cli_run_t r = cli_run_argv(argc, c->args);
    print_message("case %s: rc %d, stderr: %s", c->name, r.rc, r.err);
    assert_int_equal(r.rc, c->rc);
    assert_string_equal(r.out, "");
    assert_int_equal(cli_run_lines(r.err), 1);
    assert_true(strlen(r.err) > 1 && r.err[strlen(r.err) - 1] == '\n');
    for (int i = 0; i < 3 && c->frag[i]; i++) {
        if (!strstr(r.err, c->frag[i]))
            fail_msg("case %s: \"%s\" not in: %s", c->name, c->frag[i], r.err);
    }
    cli_run_free(&r);
}

int main(void) {
    enum { N = sizeof CASES / sizeof CASES[0] };
    struct CMUnitTest tests[N];
    for (int i = 0; i < N; i++) {
        struct CMUnitTest t = {CASES[i].name, run_case, NULL, NULL, (void *)&CASES[i]};
        tests[i] = t;
    }
    return _cmocka_run_group_tests("stepsim.cli_errors", tests, N, NULL, NULL);
}
