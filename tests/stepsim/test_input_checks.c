/* stepsim/test_input_checks.c - input files are read up to a stated size limit, JSON objects have each
 * key once, and text is UTF-8: every refusal is exit 2 with one stderr line naming the file and the
 * culprit, never a crash; and every JSON output is valid JSON in UTF-8, whatever bytes came in.
 *
 * Files over a limit are sparse (ftruncate): they take no disk space. /dev/zero stands for an input
 * that never ends. Each case writes its file in the test's working directory (the build tree).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <fcntl.h>
#include <unistd.h>

#include "../../tools/common/readfile.h"
#include "../../tools/common/utf8.h"
#include "sweep_test_util.h"
#include "test_cli_run.h"

#define MIB ((long long)1 << 20)

typedef struct input_case {
    const char *name;
    const char *file; /* scratch file name; "/dev/zero" is used as it is */
    const char *text; /* its contents, or NULL: a sparse file of sparse_bytes */
    long long sparse_bytes;
    const char *args[8]; /* "%F" is the file; NULL-terminated */
    int rc;
    const char *frag[3]; /* fragments that must all appear in the stderr line ("%F": the file) */
} input_case_t;

#define GRID "{\"command\": \"estimate\", \"vary\": {\"gpus\": [4096]}}"

static const input_case_t CASES[] = {
    /* size limits */
    {"scenario_over_limit",
     "big.json",
     NULL,
     16 * MIB + 1,
     {"estimate", "%F"},
     2,
     {"%F: scenario file too large (16777217 bytes)", "allowed: at most 16 MiB (16777216 bytes)"}},
    {"scenario_at_limit_is_read",
     "limit.json",
     NULL,
     16 * MIB,
     {"estimate", "%F"},
     2,
     {"%F: line 1, column 1", "invalid JSON"}},
    {"scenario_dev_zero",
     "/dev/zero",
     "",
     0,
     {"estimate", "%F"},
     2,
     {"/dev/zero: scenario file too large (more than 16777216 bytes)", "allowed: at most 16 MiB"}},
    {"topology_json_over_limit",
     "bigtopo.json",
     NULL,
     16 * MIB + 1,
     {"topo", "--topology", "%F"},
     2,
     {"%F: topology file too large (16777217 bytes)"}},
    {"graphml_over_limit",
     "big.graphml",
     NULL,
     256 * MIB + 1,
     {"topo", "--topology", "%F"},
     2,
     {"%F: GraphML file too large (268435457 bytes)", "allowed: at most 256 MiB (268435456 bytes)"}},
    {"grid_over_limit",
     "biggrid.json",
     NULL,
     16 * MIB + 1,
     {"sweep", "%F", "--out", "unused.jsonl"},
     2,
     {"%F: grid file too large (16777217 bytes)"}},
    {"grid_dev_zero",
     "/dev/zero",
     "",
     0,
     {"sweep", "%F", "--out", "unused.jsonl"},
     2,
     {"/dev/zero: grid file too large (more than 16777216 bytes)"}},
    {"measured_csv_over_limit",
     "big.csv",
     NULL,
     64 * MIB + 1,
     {"validate", "--measured", "%F"},
     2,
     {"%F: measured-runs CSV file too large (67108865 bytes)", "allowed: at most 64 MiB (67108864 bytes)"}},
    {"measured_csv_dev_zero",
     "/dev/zero",
     "",
     0,
     {"validate", "--measured", "%F"},
     2,
     {"/dev/zero: measured-runs CSV file too large (more than 67108864 bytes)"}},
    {"journal_over_limit",
     "big.jsonl",
     NULL,
     1024 * MIB + 1,
     {"sweep", "@sweep/small_search.json", "--out", "%F", "--resume"},
     2,
     {"%F: sweep output file too large (1073741825 bytes)", "allowed: at most 1 GiB (1073741824 bytes)"}},
    /* text that is not UTF-8: refused at the reader with the JSON path and the byte's offset, so no
     * name is ever echoed raw into --json output */
    {"utf8_model_name",
     "ff_name.json",
     "{\"model\": {\"base\": \"gpt3\", \"name\": \"x\xffy\"}}",
     0,
     {"estimate", "%F", "--json"},
     2,
     {"%F: model.name: invalid UTF-8 in the string (byte 0xff at offset 1)", "allowed: UTF-8 text"}},
    {"utf8_key",
     "ff_key.json",
     "{\"gp\xc3\x28us\": 8}",
     0,
     {"estimate", "%F"},
     2,
     {"%F: top level: invalid UTF-8 in a key (byte 0xc3 at offset 2)"}},
    {"utf8_overlong",
     "ff_overlong.json",
     "{\"model\": {\"base\": \"gpt3\", \"name\": \"\xc0\xaf\"}}",
     0,
     {"estimate", "%F"},
     2,
     {"%F: model.name: invalid UTF-8", "byte 0xc0 at offset 0"}},
    {"utf8_surrogate",
     "ff_surrogate.json",
     "{\"model\": {\"base\": \"gpt3\", \"name\": \"a\xed\xa0\x80\"}}",
     0,
     {"estimate", "%F"},
     2,
     {"%F: model.name: invalid UTF-8", "byte 0xed at offset 1"}},
    {"utf8_job_name",
     "ff_job.json",
     "{\"model\": \"gpt3\", \"topology\": \"fat-tree\", \"jobs\": [{\"name\": \"\xfe\", \"gpus\": 8}]}",
     0,
     {"run", "%F", "--json"},
     2,
     {"%F: jobs[0].name: invalid UTF-8", "byte 0xfe at offset 0"}},
    {"utf8_topology_file",
     "ff_topo.json",
     "{\"kind\": \"fat-tree\", \"k\": 4, \"node\": \"dgx\xff\"}",
     0,
     {"topo", "--topology", "%F", "--json"},
     2,
     {"%F: node: invalid UTF-8", "byte 0xff at offset 3"}},
    {"utf8_grid",
     "ff_grid.json",
     "{\"command\": \"estimate\", \"vary\": {\"model\": [\"gpt\xff\"]}}",
     0,
     {"sweep", "%F", "--out", "unused.jsonl"},
     2,
     {"%F: vary.model[0]: invalid UTF-8", "byte 0xff at offset 3"}},
    {"utf8_model_option",
     "unused.json",
     "",
     0,
     {"estimate", "--model", "{\"base\": \"gpt3\", \"name\": \"\xff\"}", "--json"},
     2,
     {"--model: name: invalid UTF-8", "byte 0xff at offset 0"}},
    {"utf8_measured_csv",
     "ff.csv",
     "name,hidden,heads,layers,seq_len,vocab,gpus,tp,pp,dp,gbs,recompute,sequence_parallel,system,"
     "measured_iteration_s\nrun\xff,2304,24,24,2048,51200,32,1,1,32,512,full,0,DGX-A100,3.5\n",
     0,
     {"validate", "--measured", "%F", "--json"},
     2,
     {"%F: row 1, column name: invalid UTF-8", "byte 0xff at offset 3"}},
    /* duplicate keys: a second value used to be ignored without a word */
    {"dup_top_level",
     "dup_top.json",
     "{\"gpus\": 8, \"model\": \"gpt3\", \"gpus\": 16}",
     0,
     {"estimate", "%F"},
     2,
     {"%F: gpus: duplicate key \"gpus\"", "allowed: each key once in an object"}},
    {"dup_parallel",
     "dup_par.json",
     "{\"parallel\": {\"dp\": 4, \"tp\": 8, \"dp\": 8}}",
     0,
     {"estimate", "%F"},
     2,
     {"%F: parallel.dp: duplicate key \"dp\""}},
    {"dup_topology_object",
     "dup_topo.json",
     "{\"topology\": {\"kind\": \"fat-tree\", \"k\": 4, \"k\": 8}}",
     0,
     {"estimate", "%F"},
     2,
     {"%F: topology.k: duplicate key \"k\""}},
    {"dup_topology_file",
     "dup_topofile.json",
     "{\"kind\": \"fat-tree\", \"kind\": \"torus\"}",
     0,
     {"topo", "--topology", "%F"},
     2,
     {"%F: kind: duplicate key \"kind\""}},
    {"dup_topology_option",
     "unused.json",
     "",
     0,
     {"collective", "--gpus", "8", "--topology", "{\"kind\": \"fat-tree\", \"k\": 4, \"k\": 6}"},
     2,
     {"--topology: k: duplicate key \"k\""}},
    {"dup_topologies_option",
     "unused.json",
     "",
     0,
     {"compare", "--topologies", "{\"kind\": \"fat-tree\", \"name\": \"a\", \"name\": \"b\"}"},
     2,
     {"--topologies: name: duplicate key \"name\""}},
    {"dup_system_option",
     "unused.json",
     "",
     0,
     {"estimate", "--system", "{\"base\": \"A100\", \"hbm_capacity\": 40, \"hbm_capacity\": 80}"},
     2,
     {"--system: hbm_capacity: duplicate key \"hbm_capacity\""}},
    {"dup_perturbations",
     "dup_perturb.json",
     "{\"model\": \"gpt3\", \"perturbations\": {\"seed\": 1, \"seed\": 2}}",
     0,
     {"run", "%F"},
     2,
     {"%F: perturbations.seed: duplicate key \"seed\""}},
    {"dup_perturbations_gpus",
     "dup_perturb_gpus.json",
     "{\"perturbations\": {\"gpus\": [{\"gpus\": \"1\", \"slowdown\": 1.2, \"slowdown\": 1.5}]}}",
     0,
     {"run", "%F"},
     2,
     {"%F: perturbations.gpus[0].slowdown: duplicate key \"slowdown\""}},
    {"dup_job",
     "dup_job.json",
     "{\"jobs\": [{\"name\": \"a\", \"gpus\": 8}, {\"name\": \"b\", \"gpus\": 8, \"gpus\": 16}]}",
     0,
     {"run", "%F"},
     2,
     {"%F: jobs[1].gpus: duplicate key \"gpus\""}},
    {"dup_job_parallel",
     "dup_job_par.json",
     "{\"jobs\": [{\"name\": \"a\", \"parallel\": {\"tp\": 1, \"tp\": 2}}]}",
     0,
     {"run", "%F"},
     2,
     {"%F: jobs[0].parallel.tp: duplicate key \"tp\""}},
    {"dup_grid",
     "dup_grid.json",
     "{\"command\": \"estimate\", \"vary\": {\"gpus\": [8]}, \"command\": \"search\"}",
     0,
     {"sweep", "%F", "--out", "unused.jsonl"},
     2,
     {"%F: command: duplicate key \"command\""}},
    {"dup_nested_first_repeat",
     "dup_order.json",
     "{\"system\": {\"base\": \"A100\", \"b\": 1, \"a\": 1, \"b\": 2, \"a\": 2}}",
     0,
     {"estimate", "%F"},
     2,
     {"%F: system.b: duplicate key \"b\""}},
    /* checked arithmetic: products and casts of input integers that used to wrap */
    {"csv_degree_product_past_2_64",
     "prod.csv",
     "name,hidden,heads,layers,seq_len,vocab,gpus,tp,pp,dp,gbs,recompute,sequence_parallel,system,measured_"
     "iteration_s\na,2304,24,24,2048,51200,64,4294967296,4294967296,1,512,full,0,DGX-A100,3.5\n",
     0,
     {"validate", "--measured", "%F"},
     2,
     {"%F: row 1 (a): column gpus", "= more than 2^63", "allowed: a product of at most 2^63 - 1"}},
    {"csv_dp_mbs_product_past_2_64",
     "mbs.csv",
     "name,hidden,heads,layers,seq_len,vocab,gpus,tp,pp,dp,gbs,recompute,sequence_parallel,system,measured_"
     "iteration_s,mbs\na,2304,24,24,2048,51200,32,1,1,32,512,full,0,DGX-A100,3.5,4611686018427387904\n",
     0,
     {"validate", "--measured", "%F"},
     2,
     {"%F: row 1 (a): column mbs: \"4611686018427387904\"", "does not divide"}},
    {"csv_empty_gbs_product_past_2_64",
     "gbs.csv",
     "name,hidden,heads,layers,seq_len,vocab,gpus,tp,pp,dp,gbs,recompute,sequence_parallel,system,measured_"
     "iteration_s,mbs,ga\na,2304,24,24,2048,51200,32,1,1,32,,full,0,DGX-A100,3.5,4294967296,4294967296\n",
     0,
     {"validate", "--measured", "%F"},
     2,
     {"%F: row 1 (a): column gbs", "dp x mbs x ga passes 2^63 - 1"}},
    {"scenario_degree_product_past_2_64",
     "prod.json",
     "{\"model\": \"gpt3_1T\", \"gpus\": 4096, \"global_batch\": 9000000000000000, \"parallel\": "
     "{\"dp\": 9000000000000000, \"tp\": 32, \"pp\": 128}}",
     0,
     {"estimate", "%F"},
     3,
     {"%F: parallel: dp (9000000000000000) x tp (32) x pp (128) overflows 64 bits"}},
    {"grid_option_past_int64",
     "optgrid.json",
     "{\"command\": \"search\", \"vary\": {\"gpus\": [64]}, \"options\": {\"top\": 1e30}}",
     0,
     {"sweep", "%F", "--out", "unused.jsonl"},
     2,
     {"%F: options.top: 1e+30", "allowed: an integer"}},
    /* the picosecond clock: latencies that would saturate it are refused with the bound */
    {"graphml_latency_past_clock",
     "lat.graphml",
     "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     "<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\">\n"
     "  <key id=\"k\" for=\"node\" attr.name=\"kind\" attr.type=\"string\"/>\n"
     "  <key id=\"n\" for=\"node\" attr.name=\"node\" attr.type=\"int\"/>\n"
     "  <key id=\"bw\" for=\"edge\" attr.name=\"bandwidth_bytes_per_s\" attr.type=\"double\"/>\n"
     "  <key id=\"lat\" for=\"edge\" attr.name=\"latency_s\" attr.type=\"double\"/>\n"
     "  <graph id=\"two-nodes\" edgedefault=\"undirected\">\n"
     "    <node id=\"g0\"><data key=\"k\">gpu</data><data key=\"n\">0</data></node>\n"
     "    <node id=\"g1\"><data key=\"k\">gpu</data><data key=\"n\">0</data></node>\n"
     "    <node id=\"g2\"><data key=\"k\">gpu</data><data key=\"n\">1</data></node>\n"
     "    <node id=\"g3\"><data key=\"k\">gpu</data><data key=\"n\">1</data></node>\n"
     "    <node id=\"nvs0\"><data key=\"k\">nvswitch</data><data key=\"n\">0</data></node>\n"
     "    <node id=\"nvs1\"><data key=\"k\">nvswitch</data><data key=\"n\">1</data></node>\n"
     "    <node id=\"sw\"><data key=\"k\">switch</data><data key=\"n\">-1</data></node>\n"
     "    <edge source=\"g0\" target=\"nvs0\"><data key=\"bw\">3e11</data><data "
     "key=\"lat\">1e7</data></edge>\n"
     "    <edge source=\"g1\" target=\"nvs0\"><data key=\"bw\">3e11</data><data "
     "key=\"lat\">1e-06</data></edge>\n"
     "    <edge source=\"g2\" target=\"nvs1\"><data key=\"bw\">3e11</data><data "
     "key=\"lat\">1e-06</data></edge>\n"
     "    <edge source=\"g3\" target=\"nvs1\"><data key=\"bw\">3e11</data><data "
     "key=\"lat\">1e-06</data></edge>\n"
     "    <edge source=\"g0\" target=\"sw\"><data key=\"bw\">2.5e10</data><data "
     "key=\"lat\">1e-06</data></edge>\n"
     "    <edge source=\"g2\" target=\"sw\"><data key=\"bw\">2.5e10</data><data "
     "key=\"lat\">1e-06</data></edge>\n"
     "  </graph>\n"
     "</graphml>\n"
     "",
     0,
     {"topo", "--topology", "%F"},
     2,
     {"edge 0: latency_s 1e+07 must be in [0, 1] s"}},
    {"topology_pcie_latency_past_clock",
     "pcie.json",
     "{\"kind\": \"fat-tree\", \"k\": 4, \"pcie_latency_s\": 5}",
     0,
     {"topo", "--topology", "%F"},
     2,
     {"%F: pcie_latency_s: 5 must be in [0, 1] s"}},
    {"scenario_topology_latency_past_clock",
     "lat.json",
     "{\"model\": \"gpt3\", \"gpus\": 64, \"topology\": {\"kind\": \"fat-tree\", \"k\": 8, "
     "\"link_latency_s\": 1e7}}",
     0,
     {"run", "%F"},
     2,
     {"link_latency_s: 1e+07 must be in [0, 1] s"}},
    {"scenario_system_latency_past_clock",
     "syslat.json",
     "{\"model\": \"gpt3\", \"gpus\": 64, \"system\": {\"base\": \"A100\", \"ib_latency\": 1e7}}",
     0,
     {"run", "%F"},
     2,
     {"%F: system.ib_latency: 1e+07", "[0, 1] s"}},
};

static void expand(const char *pattern, const char *file, char *out, size_t size) {
    const char *at = strstr(pattern, "%F");
    if (!at)
        snprintf(out, size, "%s", pattern);
    else
        snprintf(out, size, "%.*s%s%s", (int)(at - pattern), pattern, file, at + 2);
}

static void make_file(const input_case_t *c, const char *path) {
    if (strcmp(c->file, "/dev/zero") == 0)
        return;
    if (c->text) {
        sweep_write_file(path, c->text, strlen(c->text));
        return;
    }
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)c->sparse_bytes), 0);
    assert_int_equal(close(fd), 0);
}

static void run_case(void **state) {
    const input_case_t *c = *state;
    char path[160], args[8][400], frag[400];
    const char *argv[8] = {0};
    if (strcmp(c->file, "/dev/zero") == 0)
        snprintf(path, sizeof path, "%s", c->file);
    else
        sweep_scratch(path, sizeof path, c->file);
    make_file(c, path);
    int argc = 0;
    for (; argc < 8 && c->args[argc]; argc++) {
        expand(c->args[argc], path, args[argc], sizeof args[argc]);
        argv[argc] = args[argc];
    }
    cli_run_t r = cli_run_argv(argc, argv);
    print_message("case %s: rc %d, stderr: %s", c->name, r.rc, r.err);
    assert_int_equal(r.rc, c->rc);
    assert_string_equal(r.out, "");
    assert_int_equal(cli_run_lines(r.err), 1);
    for (int i = 0; i < 3 && c->frag[i]; i++) {
        expand(c->frag[i], path, frag, sizeof frag);
        if (!strstr(r.err, frag))
            fail_msg("case %s: \"%s\" not in: %s", c->name, frag, r.err);
    }
    cli_run_free(&r);
    if (strcmp(c->file, "/dev/zero") != 0)
        remove(path);
}

/* The reader's limit is exact: limit bytes are read, limit + 1 are refused. */
static void bounded_read_exact(void **state) {
    (void)state;
    char path[160], *buf = NULL;
    size_t len = 0;
    long long size = 0;
    sweep_scratch(path, sizeof path, "exact.txt");
    sweep_write_file(path, "0123456789", 10);
    assert_int_equal(readfile_bounded(path, 10, &buf, &len, &size), READFILE_OK);
    assert_int_equal(len, 10);
    assert_string_equal(buf, "0123456789");
    free(buf);
    assert_int_equal(readfile_bounded(path, 9, &buf, &len, &size), READFILE_TOO_LARGE);
    assert_int_equal(size, 10);
    assert_null(buf);
    assert_int_equal(readfile_bounded("/dev/zero", 100000, &buf, &len, &size), READFILE_TOO_LARGE);
    assert_int_equal(size, -1);
    assert_int_equal(readfile_check_size("/dev/zero", 100000, &size), READFILE_TOO_LARGE);
    assert_int_equal(readfile_bounded(".", 10, &buf, &len, &size), READFILE_ERRNO);
    remove(path);
}

/* A file name is not input text: it may hold any bytes, and --json still prints UTF-8 (each invalid
 * byte as U+FFFD); it used to echo the name raw, so the output was not JSON. */
static void json_output_utf8_file_name(void **state) {
    (void)state;
    char *text = NULL, path[160];
    size_t len = 0;
    long long size = 0;
    assert_int_equal(
        readfile_bounded(STEPSIM_FIXTURE_DIR "/topo/undirected.graphml", 1 << 20, &text, &len, &size),
        READFILE_OK);
    sweep_scratch(path, sizeof path, "n\xff.graphml");
    sweep_write_file(path, text, len);
    free(text);
    cli_run_t r = cli_run("topo", "--topology", path, "--json", NULL);
    assert_int_equal(r.rc, 0);
    const size_t n = strlen(r.out);
    assert_int_equal(utf8_invalid_at(r.out, n), n);
    assert_non_null(strstr(r.out, "n\xef\xbf\xbd.graphml"));
    cJSON *doc = cJSON_Parse(r.out);
    assert_non_null(doc);
    cJSON_Delete(doc);
    cli_run_free(&r);
    remove(path);
}

int main(void) {
    enum { N = sizeof CASES / sizeof CASES[0] };
    struct CMUnitTest tests[N + 2];
    for (int i = 0; i < N; i++) {
        struct CMUnitTest t = {CASES[i].name, run_case, NULL, NULL, (void *)&CASES[i]};
        tests[i] = t;
    }
    tests[N] = (struct CMUnitTest)cmocka_unit_test(bounded_read_exact);
    tests[N + 1] = (struct CMUnitTest)cmocka_unit_test(json_output_utf8_file_name);
    return _cmocka_run_group_tests("stepsim.input_checks", tests, N + 2, NULL, NULL);
}
