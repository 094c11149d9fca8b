/* stepsim/test_topo.c - `stepsim topo` end to end through cli_main: the JSON fields of docs/cli.md and
 * values, presets sized by --gpus, scenario and JSON files, GraphML/DOT export written atomically and
 * loaded back, and every bad-input case: exit code, empty stdout, exactly one stderr line naming the
 * option or file, the key, the value and what is allowed. "@name" arguments are tests/fixtures files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "test_cli_run.h"
#include "test_cli_assert.h"

typedef struct error_case {
    const char *name;
    const char *args[8]; /* NULL-terminated */
    int rc;
    const char *frag[3]; /* fragments that must all appear in the stderr line */
} error_case_t;

static const error_case_t CASES[] = {
    /* parameters that cannot be built */
    {"odd_k",
     {"topo", "--topology", "{\"kind\": \"fat-tree\", \"tiers\": 3, \"k\": 7}"},
     2,
     {"--topology: k: 7 must be even"}},
    {"negative_count",
     {"topo", "--topology", "{\"kind\": \"dragonfly\", \"a\": -1}"},
     2,
     {"--topology: a: -1 must be >= 1"}},
    {"zero_leaves",
     {"topo", "--topology", "{\"kind\": \"fat-tree\", \"tiers\": 2, \"leaves\": 0, \"spines\": 2}"},
     2,
     {"--topology: leaves: 0 must be >= 1"}},
    {"unwireable_g",
     {"topo", "--topology", "{\"kind\": \"dragonfly\", \"p\": 2, \"a\": 4, \"h\": 2, \"g\": 10}"},
     2,
     {"g: 10 cannot be wired", "a*h = 8", "at most 9 groups"}},
    {"too_many_globals",
     {"topo", "--topology",
      "{\"kind\": \"dragonfly\", \"p\": 2, \"a\": 4, \"h\": 2, \"g\": 5, \"global_links_per_pair\": 3}"},
     2,
     {"global_links_per_pair: 3 needs (g-1)*3 = 12", "a*h = 8"}},
    {"torus_dim",
     {"topo", "--topology", "{\"kind\": \"torus\", \"dims\": [4, 1]}"},
     2,
     {"dims[1]: 1 must be >= 2"}},
    {"torus_gpus",
     {"topo", "--topology", "torus", "--gpus", "100"},
     2,
     {"gpus: 100 must equal the torus size 64"}},
    {"rail_too_big",
     {"topo", "--topology", "dgx-h100-superpod", "--gpus", "100000"},
     2,
     {"gpus: 100000 needs more than 3 tiers of radix-64 switches", "switch_radix"}},
    {"bad_routing",
     {"topo", "--topology", "{\"kind\": \"fat-tree\", \"routing\": \"valiant\"}"},
     2,
     {"routing: valiant is not available on fat-tree", "dmodk, ecmp-hash or ecmp-spread"}},
    /* GraphML files */
    {"graphml_no_kind",
     {"topo", "--topology", "@topo/no_kind.graphml"},
     2,
     {"no_kind.graphml has no vertex attribute 'kind'", "gpu, nvswitch, nic or switch"}},
    {"graphml_no_bandwidth",
     {"topo", "--topology", "@topo/no_bandwidth.graphml"},
     2,
     {"no_bandwidth.graphml has no edge attribute 'bandwidth_bytes_per_s' (required)"}},
    {"graphml_bad_kind",
     {"topo", "--topology", "@topo/bad_kind.graphml"},
     2,
     {"vertex 6: kind 'router' must be gpu, nvswitch, nic or switch"}},
    {"graphml_disconnected",
     {"topo", "--topology", "@topo/disconnected.graphml"},
     2,
     {"disconnected.graphml is disconnected", "GPU 0 (vertex 0) cannot reach GPU 2 (vertex 2)"}},
    {"graphml_malformed",
     {"topo", "--topology", "@topo/malformed.graphml"},
     2,
     {"malformed.graphml is not readable GraphML"}},
    {"graphml_missing",
     {"topo", "--topology", "{\"kind\": \"graphml\", \"file\": \"no-such.graphml\"}"},
     2,
     {"file: no-such.graphml cannot be opened"}},
    /* the specification itself */
    {"unknown_name",
     {"topo", "--topology", "dgx-h100-superpot"},
     2,
     {"\"dgx-h100-superpot\" is not a topology preset, kind or file", "did you mean \"dgx-h100-superpod\"",
      "allowed:"}},
    {"unknown_key",
     {"topo", "--topology", "{\"kind\": \"fat-tree\", \"leafs\": 4}"},
     2,
     {"leafs: unknown key for fat-tree", "did you mean \"leaves\"", "allowed:"}},
    {"non_integer",
     {"topo", "--topology", "{\"kind\": \"fat-tree\", \"k\": 7.5}"},
     2,
     {"k: 7.5 is not an integer"}},
    {"missing_kind", {"topo", "--topology", "{\"k\": 8}"}, 2, {"--topology: missing key \"kind\"", "preset"}},
    {"bad_node",
     {"topo", "--topology", "{\"preset\": \"frontier\", \"node\": \"dgx-h200\"}"},
     2,
     {"node: \"dgx-h200\" is not a node preset", "did you mean \"dgx-h100\""}},
    {"invalid_json", {"topo", "--topology", "{\"kind\":"}, 2, {"--topology: invalid JSON"}},
    {"scenario_path",
     {"topo", "@topo/scenario_bad_k.json"},
     2,
     {"scenario_bad_k.json: topology.k: 7 must be even"}},
    {"json_file",
     {"topo", "--topology", "@topo/bad_torus.json"},
     2,
     {"bad_torus.json: dims[1]: 0 must be >= 2"}},
    /* options */
    {"unknown_option", {"topo", "--topolgy", "fat-tree"}, 2, {"--topolgy: unknown option", "--topology"}},
    {"missing_value", {"topo", "--topology"}, 2, {"--topology: missing value"}},
    {"zero_gpus", {"topo", "--gpus", "0"}, 2, {"--gpus: 0"}},
    {"unwritable_export",
     {"topo", "--topology", "fat-tree", "--graphml", "/nonexistent-dir/x.graphml"},
     2,
     {"--graphml /nonexistent-dir/x.graphml: cannot create"}},
};

static void test_error_cases(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const error_case_t *c = &CASES[i];
        int n = 0;
        while (n < 8 && c->args[n])
            n++;
        cli_expect_error(c->name, c->args, n, c->rc, c->frag, 3);
    }
}

static void test_json_fields(void **state) {
    (void)state;
    const char *args[] = {"topo", "--topology", "{\"kind\": \"fat-tree\", \"tiers\": 3, \"k\": 8}", "--json"};
    cJSON *doc = cli_run_json(args, 4);
    assert_string_equal(cli_json_str(doc, "name"), "fat-tree");
    assert_string_equal(cli_json_str(doc, "kind"), "fat-tree");
    assert_int_equal((int64_t)cli_json_num(doc, "gpus"), 128);
    assert_int_equal((int64_t)cli_json_num(doc, "nodes"), 128);
    assert_int_equal((int64_t)cli_json_num(doc, "switches"), 80);
    assert_int_equal((int64_t)cli_json_num(doc, "links"), 384);
    assert_int_equal((int64_t)cli_json_num(doc, "diameter_hops"), 6);
    assert_float_equal(cli_json_num(doc, "bisection_bandwidth_bytes_per_s"), 64 * 50e9, 1);
    assert_float_equal(cli_json_num(doc, "injection_bandwidth_bytes_per_s"), 128 * 50e9, 1);
    assert_float_equal(cli_json_num(doc, "bisection_closed_form_bytes_per_s"), 64 * 50e9, 1);
    const cJSON *cost = cJSON_GetObjectItemCaseSensitive(doc, "cost");
    assert_int_equal((int64_t)cli_json_num(cost, "optical_transceivers"), 512);
    cJSON_Delete(doc);
}

static void test_presets_and_files(void **state) {
    (void)state;
    const char *h100[] = {"topo", "--topology", "dgx-h100-superpod", "--gpus", "248", "--json"};
    cJSON *doc = cli_run_json(h100, 6);
    assert_int_equal((int64_t)cli_json_num(doc, "switches"), 12);
    assert_int_equal((int64_t)cli_json_num(doc, "nodes"), 31);
    cJSON_Delete(doc);
    const char *frontier[] = {"topo", "--topology", "{\"preset\": \"frontier\", \"gpus\": 4096}", "--json"};
    doc = cli_run_json(frontier, 4);
    assert_int_equal((int64_t)cli_json_num(doc, "nodes"), 512);
    assert_int_equal((int64_t)cli_json_num(doc, "switches"), 4 * 32);
    assert_string_equal(cli_json_str(doc, "routing"), "ugal");
    cJSON_Delete(doc);
    const char *scenario[] = {"topo", "@topo/scenario_b200.json", "--json"};
    doc = cli_run_json(scenario, 3);
    assert_int_equal((int64_t)cli_json_num(doc, "gpus"), 2048);
    assert_int_equal((int64_t)cli_json_num(doc, "switches"), 64 + 32); /* 8 SUs: 2 tiers, 32 spines */
    cJSON_Delete(doc);
    const char *file[] = {"topo", "--topology", "@topo/dragonfly.json", "--json"};
    doc = cli_run_json(file, 4);
    assert_int_equal((int64_t)cli_json_num(doc, "switches"), 36);
    assert_int_equal((int64_t)cli_json_num(doc, "diameter_hops"), 5);
    cJSON_Delete(doc);
    const char *ideal[] = {"topo", "--json"}; /* the default scenario's A100 system, 4096 GPUs */
    doc = cli_run_json(ideal, 2);
    assert_string_equal(cli_json_str(doc, "kind"), "ideal");
    assert_int_equal((int64_t)cli_json_num(doc, "gpus"), 4096);
    assert_int_equal((int64_t)cli_json_num(doc, "switches"), 1);
    assert_float_equal(cli_json_num(doc, "injection_bandwidth_bytes_per_s"), 4096 * 25e9, 1);
    cJSON_Delete(doc);
}

static void test_export_and_reload(void **state) {
    (void)state;
    char dir[] = "/tmp/stepsim-topo-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char gml[96], dot[96];
    snprintf(gml, sizeof gml, "%s/cluster.graphml", dir);
    snprintf(dot, sizeof dot, "%s/cluster.dot", dir);
    const char *exp[] = {
        "topo", "--topology", "dgx-h100-superpod", "--gpus", "504", "--json", "--graphml", gml, "--dot", dot};
    cJSON *a = cli_run_json(exp, 10);
    const char *back[] = {"topo", "--topology", gml, "--json"};
    cJSON *b = cli_run_json(back, 4);
    assert_string_equal(cli_json_str(b, "kind"), "graphml");
    assert_string_equal(cli_json_str(b, "name"), "dgx-h100-superpod");
    static const char *const same[] = {"gpus",
                                       "nodes",
                                       "switches",
                                       "links",
                                       "diameter_hops",
                                       "bisection_bandwidth_bytes_per_s",
                                       "injection_bandwidth_bytes_per_s"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        assert_float_equal(cli_json_num(a, same[i]), cli_json_num(b, same[i]),
                           1e-6 * (cli_json_num(a, same[i]) + 1));
    cJSON_Delete(a);
    cJSON_Delete(b);
    FILE *f = fopen(dot, "r");
    assert_non_null(f);
    char line[64];
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    /* nothing but the two files: no temporary left behind */
    char cmd[160];
    snprintf(cmd, sizeof cmd, "test $(ls %s | wc -l) -eq 2", dir);
    assert_int_equal(system(cmd), 0);
    unlink(gml);
    unlink(dot);
    rmdir(dir);
}

static void test_text_and_help(void **state) {
    (void)state;
    cli_run_t r = cli_run("topo", "--topology", "torus", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "diameter        6 links"));
    assert_non_null(strstr(r.out, "bisection       1.6 TB/s (closed form 1.6 TB/s)"));
    cli_run_free(&r);
    r = cli_run("topo", "--help", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "--graphml FILE"));
    assert_non_null(strstr(r.out, "dgx-b200-superpod"));
    assert_non_null(strstr(r.out, "nvl72"));
    cli_run_free(&r);
    r = cli_run("help", "topo", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "--topology NAME|FILE|JSON"));
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_cases),       cmocka_unit_test(test_json_fields),
        cmocka_unit_test(test_presets_and_files), cmocka_unit_test(test_export_and_reload),
        cmocka_unit_test(test_text_and_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
