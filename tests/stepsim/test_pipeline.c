/* stepsim/test_pipeline.c - one simulation pipeline and one meaning per topology name, end to end in
 * process: run, compare and the validate waterfall given the same topology word simulate the same
 * network (equal step times for gpt3 on 1,024 GPUs on the dragonfly and fat-tree shortcuts); a bad
 * topology file fails before any model or simulation work (exit 2, one line, empty stdout, no trace
 * written, even with an option that would fail later); a topology whose nodes are not the job's
 * NVLink domain is refused with one line naming both; the shortcuts mean the same network in topo;
 * NCCL's network efficiency follows the topology's network technology (Slingshot 0.70, InfiniBand
 * 0.94) in every command. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "test_cli_run.h"

static cJSON *json_of(cli_run_t *r) {
    if (r->rc != 0)
        fail_msg("exit %d: %s", r->rc, r->err);
    cJSON *j = cJSON_Parse(r->out);
    if (!j)
        fail_msg("not JSON: %.200s", r->out);
    return j;
}

static double num(const cJSON *o, const char *key) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(n))
        fail_msg("%s: missing or not a number", key);
    return n->valuedouble;
}

/* The step time that run, compare and validate print for gpt3 on 1,024 GPUs on topology word t.
 * With --collapse approx: simulating every GPU of the dragonfly (what auto does where collapsing is
 * not exact) is over 50 million operations, too many for a unit test. */
static void three_commands(const char *t, double *run_s, double *compare_s, double *validate_s) {
    cli_run_t r = cli_run("run", "--model", "gpt3", "--gpus", "1024", "--topology", t, "--collapse", "approx",
                          "--json", NULL);
    cJSON *j = json_of(&r);
    *run_s = num(j, "step_time_s");
    assert_string_equal(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "simulation"), "topology")
            ->valuestring,
        t);
    cJSON_Delete(j);
    cli_run_free(&r);
    r = cli_run("compare", "--model", "gpt3", "--gpus", "1024", "--topologies", t, "--collapse", "approx",
                "--json", NULL);
    j = json_of(&r);
    *compare_s = -1;
    const cJSON *x = NULL;
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(j, "topologies")) {
        if (strcmp(cJSON_GetObjectItemCaseSensitive(x, "name")->valuestring, t) == 0)
            *compare_s = num(x, "step_time_s");
    }
    cJSON_Delete(j);
    cli_run_free(&r);
    r = cli_run("validate", "--model", "gpt3", "--gpus", "1024", "--topology", t, "--collapse", "approx",
                "--json", NULL);
    j = json_of(&r);
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(j, "steps");
    *validate_s = num(cJSON_GetArrayItem(steps, cJSON_GetArraySize(steps) - 1), "total_s");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "topology")->valuestring, t);
    cJSON_Delete(j);
    cli_run_free(&r);
}

static void test_same_word_same_network(void **state) {
    (void)state;
    static const char *const WORDS[] = {"dragonfly", "fat-tree"};
    for (int i = 0; i < 2; i++) {
        double run_s, compare_s, validate_s;
        three_commands(WORDS[i], &run_s, &compare_s, &validate_s);
        print_message("%s: run %.9f s, compare %.9f s, validate %.9f s\n", WORDS[i], run_s, compare_s,
                      validate_s);
        assert_true(run_s > 0);
        assert_true(run_s == compare_s);
        assert_true(run_s == validate_s);
    }
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The failure is the topology's, on one line, with nothing on stdout and no trace written. */
static void expect_topology_first(cli_run_t *r, const char *fragment, const char *trace) {
    if (r->rc != 2 || cli_run_lines(r->err) != 1 || !strstr(r->err, fragment))
        fail_msg("exit %d, stderr: %s (wanted %s)", r->rc, r->err, fragment);
    assert_string_equal(r->out, "");
    assert_int_equal(access(trace, F_OK), -1);
}

static void test_topology_parsed_first(void **state) {
    (void)state;
    char dir[] = "/tmp/stepsim-pipeline-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char topo[96], scn[96], gml_scn[96], trace[96], text[512];
    snprintf(topo, sizeof topo, "%s/topo.json", dir);
    snprintf(scn, sizeof scn, "%s/scenario.json", dir);
    snprintf(gml_scn, sizeof gml_scn, "%s/graphml.json", dir);
    snprintf(trace, sizeof trace, "%s/trace.json", dir);
    write_file(topo, "{\"kind\": \"fat-tree\", \"tiers\": 2,");
    snprintf(
        text, sizeof text,
        "{\"model\": \"gpt3\", \"gpus\": 64, \"global_batch\": 16, \"parallel\": {\"pp\": 4, \"dp\": 2}, "
        "\"topology\": \"%s\"}",
        topo);
    write_file(scn, text);
    snprintf(
        text, sizeof text,
        "{\"model\": \"gpt3\", \"gpus\": 64, \"global_batch\": 16, \"parallel\": {\"pp\": 1, \"dp\": 8}, "
        "\"topology\": \"%s/topo/malformed.graphml\"}",
        STEPSIM_FIXTURE_DIR);
    write_file(gml_scn, text);
    /* a topology file that is not JSON: the scenario's load fails */
    cli_run_t r = cli_run("run", scn, "--trace", trace, NULL);
    expect_topology_first(&r, "topo.json: line 1", trace);
    cli_run_free(&r);
    /* a GraphML file that does not parse, with a memory budget the step would refuse later (the
     * interleaved schedule, which this case used before, is --interleave now: the scenario refuses
     * it with pp 1 before any topology) */
    r = cli_run("run", gml_scn, "--max-memory", "0.01", "--trace", trace, NULL);
    expect_topology_first(&r, "malformed.graphml is not readable GraphML", trace);
    cli_run_free(&r);
    /* the same budget on a good topology is refused by the step: the order above is the parse's */
    r = cli_run("run", "--model", "gpt3", "--gpus", "64", "--gbs", "16", "--pp", "1", "--dp", "8",
                "--max-memory", "0.01", "--trace", trace, NULL);
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "more than the memory budget"));
    cli_run_free(&r);
    snprintf(text, sizeof text, "fat-tree,%s/topo/malformed.graphml", STEPSIM_FIXTURE_DIR);
    r = cli_run("compare", "--model", "gpt3", "--gpus", "64", "--gbs", "16", "--pp", "4", "--topologies",
                text, NULL);
    expect_topology_first(&r, "malformed.graphml is not readable GraphML", trace);
    cli_run_free(&r);
    remove(topo);
    remove(scn);
    remove(gml_scn);
    rmdir(dir);
}

/* Nodes that are not the scenario's NVLink domain: refused with one line naming both sizes. */
static void test_nodes_are_the_nvlink_domain(void **state) {
    (void)state;
    const char *bare = "{\"kind\": \"fat-tree\", \"tiers\": 2, \"k\": 16}";
    const char *dgx = "{\"kind\": \"fat-tree\", \"tiers\": 2, \"k\": 16, \"node\": \"dgx-a100\"}";
    static const char *const CMDS[] = {"run", "validate", "compare"};
    for (int i = 0; i < 3; i++) {
        const char *opt = i == 2 ? "--topologies" : "--topology";
        cli_run_t r = cli_run(CMDS[i], "--model", "gpt3", "--gpus", "64", "--gbs", "16", "--pp", "4", opt,
                              bare, "--json", NULL);
        if (r.rc != 2 || cli_run_lines(r.err) != 1 || !strstr(r.err, "nodes of 1 GPU,") ||
            !strstr(r.err, "NVLink domain (nvlink_size) is 8 GPUs"))
            fail_msg("%s: exit %d: %s", CMDS[i], r.rc, r.err);
        assert_string_equal(r.out, "");
        cli_run_free(&r);
    }
    cli_run_t r = cli_run("run", "--model", "gpt3", "--gpus", "64", "--gbs", "16", "--pp", "4", "--topology",
                          dgx, "--json", NULL);
    cJSON *j = json_of(&r);
    assert_true(num(j, "step_time_s") > 0);
    cJSON_Delete(j);
    cli_run_free(&r);
    /* --nvs 1 makes the bare tree's nodes the domain */
    r = cli_run("run", "--model", "gpt3", "--gpus", "64", "--gbs", "16", "--pp", "4", "--nvs", "1",
                "--topology", bare, "--json", NULL);
    j = json_of(&r);
    cJSON_Delete(j);
    cli_run_free(&r);
}

/* A shortcut is the same network in topo: sized to the GPUs, nodes of the system's NVLink domain. */
static void test_shortcuts_in_topo(void **state) {
    (void)state;
    const char *args[] = {"topo", "--topology", "fat-tree", "--gpus", "64", "--json"};
    cJSON *j = NULL;
    cli_run_t r = cli_run_argv(6, args);
    j = json_of(&r);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "name")->valuestring, "fat-tree");
    assert_int_equal((int64_t)num(j, "gpus"), 64);
    assert_int_equal((int64_t)num(j, "nodes"), 8);         /* A100 system: NVLink domains of 8 */
    assert_int_equal((int64_t)num(j, "switches"), 2 + 32); /* 2 leaves of 32 endpoints, 32 spines */
    cJSON_Delete(j);
    cli_run_free(&r);
    const char *rail[] = {"topo", "--topology", "rail", "--gpus", "64", "--json"};
    r = cli_run_argv(6, rail);
    j = json_of(&r);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "kind")->valuestring, "rail-optimized");
    assert_int_equal((int64_t)num(j, "nodes"), 8);
    cJSON_Delete(j);
    cli_run_free(&r);
}

static double net_efficiency(const char *topology) {
    cli_run_t r =
        cli_run("collective", "--topology", topology, "--gpus", "16", "--size", "1M", "--json", NULL);
    cJSON *j = json_of(&r);
    const double e = num(j, "network_efficiency");
    cJSON_Delete(j);
    cli_run_free(&r);
    return e;
}

/* The NCCL platform follows the network technology: Slingshot presets and the dragonfly kind 0.70;
 * InfiniBand presets, the shortcuts (the dragonfly shortcut included) and an object naming
 * "network": "infiniband" 0.94. */
static void test_network_technology(void **state) {
    (void)state;
    assert_true(net_efficiency("perlmutter") == 0.70);
    assert_true(net_efficiency("{\"kind\": \"dragonfly\", \"p\": 2, \"a\": 4, \"h\": 2, \"g\": 9}") == 0.70);
    assert_true(net_efficiency("dgx-h100-superpod") == 0.94);
    assert_true(net_efficiency("dragonfly") == 0.94);
    assert_true(net_efficiency("{\"preset\": \"perlmutter\", \"network\": \"infiniband\"}") == 0.94);
    cli_run_t r =
        cli_run("collective", "--topology", "{\"preset\": \"perlmutter\", \"network\": \"ethernet\"}", NULL);
    assert_int_equal(r.rc, 2);
    assert_int_equal(cli_run_lines(r.err), 1);
    assert_non_null(strstr(r.err, "network: \"ethernet\" is not a network technology"));
    cli_run_free(&r);
}

/* The technologies topo prints for a topology (scenario may be NULL): "name@bandwidth@latency"
 * joined by spaces, in the order printed. */
static void techs_of(const char *scenario, const char *topology, char *buf, size_t size) {
    cli_run_t r = scenario ? cli_run("topo", scenario, "--topology", topology, "--gpus", "64", "--json", NULL)
                           : cli_run("topo", "--topology", topology, "--json", NULL);
    cJSON *j = json_of(&r);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "technologies"), *x;
    assert_true(cJSON_IsArray(a));
    size_t used = 0;
    buf[0] = '\0';
    cJSON_ArrayForEach(x, a) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(x, "name");
        assert_true(cJSON_IsString(name));
        assert_true(num(x, "links") > 0);
        assert_true(num(x, "efficiency") > 0 && num(x, "efficiency") <= 1);
        used += (size_t)snprintf(buf + used, size - used, "%s%s@%g@%g", used ? " " : "", name->valuestring,
                                 num(x, "bandwidth_bytes_per_s"), num(x, "latency_s"));
    }
    cJSON_Delete(j);
    cli_run_free(&r);
}

static void expect_techs(const char *scenario, const char *topology, const char *want) {
    char got[512];
    techs_of(scenario, topology, got, sizeof got);
    if (strcmp(got, want) != 0)
        fail_msg("%s: technologies %s, want %s", topology, got, want);
}

static void expect_error(const char *topology, const char *want) {
    cli_run_t r = cli_run("topo", "--topology", topology, NULL);
    assert_int_equal(r.rc, 2);
    assert_int_equal(cli_run_lines(r.err), 1);
    if (!strstr(r.err, want))
        fail_msg("stderr %s lacks %s", r.err, want);
    cli_run_free(&r);
}

/* Topology objects name link technologies per link class ("network", "nvlink", "pcie"); a technology
 * brings its bandwidth and latency, which explicit keys override; the first round's family names and
 * nvlink_generation keep the rates; presets carry their own; bad names fail on one line naming the
 * key and value with did-you-mean. */
static void test_technology_keys(void **state) {
    (void)state;
    expect_techs(NULL, "dgx-a100-superpod", "nvlink3@3e+11@2.5e-07 ib-hdr@2.5e+10@1.5e-07");
    expect_techs(NULL, "dgx-h100-superpod", "nvlink4@4.5e+11@2.5e-07 ib-ndr@5e+10@1.5e-07");
    expect_techs(NULL, "dgx-b200-superpod", "nvlink5@9e+11@2.5e-07 ib-ndr@5e+10@1.5e-07");
    expect_techs(NULL, "{\"preset\": \"frontier\", \"gpus\": 64}",
                 "nvlink3@5e+10@2.5e-07 pcie4@5e+10@2.5e-07 slingshot11@2.5e+10@3.5e-07");
    expect_techs(NULL, "{\"kind\": \"fat-tree\", \"network\": \"ib-hdr\"}", "ib-hdr@2.5e+10@1.5e-07");
    expect_techs(NULL, "{\"kind\": \"fat-tree\", \"network\": \"roce-400g\", \"link_latency_s\": 1e-6}",
                 "roce-400g@5e+10@1e-06");
    expect_techs(
        NULL, "{\"kind\": \"fat-tree\", \"link_bandwidth_bytes_per_s\": 1e11, \"network\": \"slingshot11\"}",
        "slingshot11@1e+11@3.5e-07");
    expect_techs(NULL,
                 "{\"kind\": \"fat-tree\", \"node\": \"dgx-h100\", \"nvlink\": \"nvlink5\", \"gpus\": 32}",
                 "nvlink5@9e+11@2.5e-07 ib-ndr@5e+10@1.5e-07");
    expect_techs(NULL,
                 "{\"kind\": \"fat-tree\", \"node\": \"frontier-node\", \"pcie\": \"pcie5\", \"gpus\": 32}",
                 "nvlink3@5e+10@2.5e-07 pcie5@6.4e+10@2.5e-07 ib-ndr@5e+10@1.5e-07");
    /* the first round's spellings: the rates stay */
    expect_techs(NULL, "{\"preset\": \"perlmutter\", \"network\": \"infiniband\", \"gpus\": 64}",
                 "nvlink3@1e+11@2.5e-07 ib-hdr@2.5e+10@3.5e-07");
    expect_techs(NULL, "{\"kind\": \"fat-tree\", \"network\": \"slingshot\"}", "slingshot11@5e+10@1.5e-07");
    expect_techs(NULL,
                 "{\"kind\": \"fat-tree\", \"node\": \"dgx-h100\", \"nvlink_generation\": 3, \"gpus\": 32}",
                 "nvlink3@4.5e+11@2.5e-07 ib-ndr@5e+10@1.5e-07");
    expect_error(
        "{\"kind\": \"fat-tree\", \"network\": \"ib-ndx\"}",
        "--topology: network: \"ib-ndx\" is not a network technology (did you mean \"ib-ndr\"?); allowed: "
        "ib-hdr, ib-ndr, ib-xdr, roce-400g, slingshot11");
    expect_error("{\"kind\": \"fat-tree\", \"nvlink\": \"ib-ndr\"}",
                 "--topology: nvlink: \"ib-ndr\" is not an NVLink technology (it is a network technology); "
                 "allowed: nvlink3, nvlink4, nvlink5");
    expect_error("{\"kind\": \"fat-tree\", \"pcie\": \"pcie6\"}",
                 "--topology: pcie: \"pcie6\" is not a PCIe technology (did you mean \"pcie4\"?)");
    expect_error("{\"kind\": \"fat-tree\", \"nvlink\": 4}", "--topology: nvlink: 4 is not a string");
    expect_error("{\"kind\": \"fat-tree\", \"nvlink_generation\": 7}",
                 "--topology: nvlink_generation: 7 is not an NVLink generation");
}

/* The shortcuts take the system's technologies (NVLink by its NVLink rate, InfiniBand by its
 * per-GPU rate), so compare builds them all from the same links; a GraphML export carries them. */
static void test_shortcut_technologies(void **state) {
    (void)state;
    char dir[] = "/tmp/stepsim-tech-XXXXXX", h100[64], gml[64];
    assert_non_null(mkdtemp(dir));
    snprintf(h100, sizeof h100, "%s/h100.json", dir);
    FILE *f = fopen(h100, "w");
    fputs("{\"system\": {\"base\": \"H100\"}, \"gpus\": 64}\n", f);
    fclose(f);
    static const char *const SHORTCUTS[] = {"fat-tree", "fat-tree-2:1", "rail", "dragonfly",
                                            "dragonfly-ugal"};
    for (size_t i = 0; i < sizeof SHORTCUTS / sizeof SHORTCUTS[0]; i++) {
        char a100[512], h[512];
        techs_of(STEPSIM_FIXTURE_DIR "/default_best.json", SHORTCUTS[i], a100, sizeof a100);
        techs_of(h100, SHORTCUTS[i], h, sizeof h);
        assert_non_null(strstr(a100, "nvlink3@3e+11"));
        assert_non_null(strstr(a100, "ib-hdr@2.5e+10"));
        assert_non_null(strstr(h, "nvlink4@4.5e+11"));
        assert_non_null(strstr(h, "ib-ndr@5e+10"));
    }
    /* export and load: the same technologies */
    snprintf(gml, sizeof gml, "%s/t.graphml", dir);
    cli_run_t r =
        cli_run("topo", "--topology", "{\"preset\": \"frontier\", \"gpus\": 64}", "--graphml", gml, NULL);
    assert_int_equal(r.rc, 0);
    cli_run_free(&r);
    char before[512], after[512];
    techs_of(NULL, "{\"preset\": \"frontier\", \"gpus\": 64}", before, sizeof before);
    techs_of(NULL, gml, after, sizeof after);
    assert_string_equal(before, after);
    unlink(gml);
    unlink(h100);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_word_same_network),      cmocka_unit_test(test_topology_parsed_first),
        cmocka_unit_test(test_nodes_are_the_nvlink_domain), cmocka_unit_test(test_shortcuts_in_topo),
        cmocka_unit_test(test_network_technology),          cmocka_unit_test(test_technology_keys),
        cmocka_unit_test(test_shortcut_technologies)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
