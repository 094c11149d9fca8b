/* stepsim/test_collective.c - `stepsim collective` end to end through cli_main: the JSON fields of
 * docs/cli.md and their relations (algbw = size / time, busbw's factor), size sweeps, an uncalibrated
 * ring on a fat-tree against its alpha-beta form, groups and placement, the text table, help, and
 * every bad option: exit code 2, empty stdout, exactly one stderr line naming the option, the value
 * and what is allowed. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "test_cli_run.h"
#include "test_cli_assert.h"

#define MIB (1024.0 * 1024.0)

typedef struct error_case {
    const char *name;
    const char *args[16]; /* NULL-terminated */
    const char *frag[3];  /* fragments that must all appear in the stderr line */
} error_case_t;

static const error_case_t CASES[] = {
    {"unknown_option", {"collective", "--sise", "1M"}, {"--sise: unknown option", "did you mean --size"}},
    {"missing_value", {"collective", "--op"}, {"--op: missing value", "--op OP"}},
    {"flag_value", {"collective", "--json=yes"}, {"--json: takes no value", "yes"}},
    {"bad_op",
     {"collective", "--op", "allreduc"},
     {"--op: \"allreduc\"", "did you mean \"allreduce\"", "allowed:"}},
    {"bad_algo", {"collective", "--algo", "rings"}, {"--algo: \"rings\"", "allowed: ring, tree"}},
    {"bad_proto", {"collective", "--proto", "LL"}, {"--proto: \"LL\"", "allowed: simple, ll, ll128, auto"}},
    {"tree_allgather",
     {"collective", "--op", "allgather", "--algo", "tree"},
     {"--algo: tree applies to allreduce only (--op allgather)"}},
    {"chain_allreduce", {"collective", "--algo", "chain"}, {"--algo: chain applies to broadcast and reduce"}},
    {"ring_alltoall",
     {"collective", "--op", "alltoall", "--algo", "ring"},
     {"--algo: ring does not apply (--op alltoall)"}},
    {"zero_gpus", {"collective", "--gpus", "0"}, {"--gpus: 0 is out of range", "allowed: 1.."}},
    {"text_gpus", {"collective", "--gpus", "eight"}, {"--gpus: \"eight\" is not an integer"}},
    {"gpus_not_multiple",
     {"collective", "--topology", "perlmutter", "--gpus", "10"},
     {"--gpus: 10 is not a multiple of 4 GPUs per node"}},
    {"gpus_too_many",
     {"collective", "--topology", "torus", "--gpus", "128"},
     {"--gpus: 128 at 1 per node need 128 nodes; the topology has 64"}},
    {"gpn_too_big",
     {"collective", "--topology", "perlmutter", "--gpus-per-node", "8"},
     {"--gpus-per-node: 8 exceeds the topology's 4 GPUs per node", "allowed: 1..4"}},
    {"bad_suffix", {"collective", "--size", "12X"}, {"--size: \"12X\" is not a size", "K, M or G suffix"}},
    {"zero_size", {"collective", "--size", "0"}, {"--size: 0 is out of range", "1 byte"}},
    {"negative_size", {"collective", "--size", "-4K"}, {"--size: \"-4K\" is not a size"}},
    {"sizes_order", {"collective", "--sizes", "8M:1M"}, {"--sizes: MIN 8M is larger than MAX 1M"}},
    {"sizes_format", {"collective", "--sizes", "1M-8M"}, {"--sizes: \"1M-8M\" is not MIN:MAX"}},
    {"size_and_sizes",
     {"collective", "--size", "1M", "--sizes", "1M:2M"},
     {"--size: given with --sizes 1M:2M"}},
    {"groups_divide",
     {"collective", "--topology", "perlmutter", "--gpus", "16", "--groups", "3"},
     {"--groups: 3 does not divide --gpus 16"}},
    {"sendrecv_pairs",
     {"collective", "--topology", "perlmutter", "--gpus", "16", "--op", "sendrecv"},
     {"--groups: sendrecv runs in groups of 2 GPUs, got 1 of 16", "allowed: --groups 8"}},
    {"hd_pow2",
     {"collective", "--topology", "perlmutter", "--gpus", "12", "--algo", "halving-doubling"},
     {"--algo: halving-doubling needs a power-of-two group, got 12 GPUs"}},
    {"hier_uneven",
     {"collective", "--topology", "perlmutter", "--gpus", "12", "--gpus-per-node", "3", "--groups", "2",
      "--placement", "strided", "--algo", "hierarchical"},
     {"hierarchical needs the same number of members in every domain", "allowed: another --algo"}},
    {"bad_placement",
     {"collective", "--placement", "random"},
     {"--placement: \"random\"", "contiguous, strided"}},
    {"bad_fidelity", {"collective", "--fidelity", "exact"}, {"--fidelity: \"exact\"", "allowed: step, fast"}},
    {"bad_calibration",
     {"collective", "--calibration", "fit"},
     {"--calibration: \"fit\"", "allowed: nccl, none"}},
    {"bad_efficiency",
     {"collective", "--net-efficiency", "1.5"},
     {"--net-efficiency: \"1.5\" is not a fraction"}},
    {"zero_channels", {"collective", "--channels", "0"}, {"--channels: 0 is out of range", "allowed: 1..64"}},
    {"bad_topology",
     {"collective", "--topology", "perlmuter"},
     {"--topology: \"perlmuter\" is not a topology preset", "did you mean \"perlmutter\""}},
    {"bad_system", {"collective", "--system", "A10"}, {"--system", "A10"}},
    {"two_scenarios", {"collective", "a.json", "b.json"}, {"b.json: unexpected argument", "a.json"}},
};

static void test_error_cases(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const error_case_t *c = &CASES[i];
        int n = 0;
        while (n < 16 && c->args[n])
            n++;
        cli_expect_error(c->name, c->args, n, 2, c->frag, 3);
    }
}

/* The shape of docs/cli.md; algbw and busbw follow from the time; the sweep doubles. */
static void test_json_fields(void **state) {
    (void)state;
    const char *args[] = {"collective", "--topology", "perlmutter", "--gpus",
                          "16",         "--sizes",    "1M:8M",      "--json"};
    cJSON *doc = cli_run_json(args, 8);
    assert_string_equal(cli_json_str(doc, "op"), "allreduce");
    assert_string_equal(cli_json_str(doc, "algo"), "auto");
    assert_int_equal((int)cli_json_num(doc, "gpus"), 16);
    assert_int_equal((int)cli_json_num(doc, "gpus_per_node"), 4);
    assert_string_equal(cli_json_str(doc, "calibration"), "nccl");
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(doc, "results");
    assert_int_equal(cJSON_GetArraySize(results), 4);
    double want = MIB, prev_busbw = 0;
    const cJSON *res;
    cJSON_ArrayForEach(res, results) {
        const double size = cli_json_num(res, "size_bytes"), t = cli_json_num(res, "time_s");
        assert_true(size == want);
        want *= 2;
        assert_true(t > 0 && cli_json_num(res, "closed_form_s") > 0);
        assert_true(fabs(cli_json_num(res, "algbw_bytes_per_s") - size / t) < 1e-9 * size / t);
        assert_true(fabs(cli_json_num(res, "busbw_bytes_per_s") - size / t * 2.0 * 15 / 16) <
                    1e-9 * size / t);
        assert_true(cli_json_num(res, "busbw_bytes_per_s") >
                    prev_busbw); /* latency matters less as size grows */
        prev_busbw = cli_json_num(res, "busbw_bytes_per_s");
        assert_true(strlen(cli_json_str(res, "algo")) > 0 && strlen(cli_json_str(res, "proto")) > 0);
    }
    cJSON_Delete(doc);
}

/* Uncalibrated, the ring on an idle 2-tier fat-tree (k = 4: 8 hosts, 50 GB/s, 0.15 us per link) is
 * its alpha-beta form: 14 steps of (4 links x 0.15 us + M / 8 / 50 GB/s), the slowest hop crossing
 * the spines. busbw with the (n-1)/n factor of allgather. */
static void test_uncalibrated_ring(void **state) {
    (void)state;
    const char *args[] = {"collective",    "--topology", "{\"kind\": \"fat-tree\", \"tiers\": 2, \"k\": 4}",
                          "--calibration", "none",       "--algo",
                          "ring",          "--channels", "1",
                          "--size",        "16M",        "--json"};
    cJSON *doc = cli_run_json(args, 12);
    const cJSON *res = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "results"), 0);
    const double m = 16 * MIB, want = 14 * (0.6e-6 + m / 8 / 50e9);
    assert_true(fabs(cli_json_num(res, "time_s") - want) < 1e-6 * want);
    assert_true(fabs(cli_json_num(res, "closed_form_s") - want) < 1e-6 * want);
    assert_string_equal(cli_json_str(res, "proto"), "simple");
    cJSON_Delete(doc);
    const char *ag[] = {"collective",    "--topology", "{\"kind\": \"fat-tree\", \"tiers\": 2, \"k\": 4}",
                        "--calibration", "none",       "--op",
                        "allgather",     "--size",     "16M",
                        "--fidelity",    "step",       "--json"};
    doc = cli_run_json(ag, 12);
    res = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "results"), 0);
    const double t = cli_json_num(res, "time_s");
    assert_true(fabs(t - 7 * (0.6e-6 + m / 8 / 50e9)) < 1e-3 * t);
    assert_true(fabs(cli_json_num(res, "busbw_bytes_per_s") - m / t * 7 / 8) < 1e-9 * m / t);
    cJSON_Delete(doc);
}

/* Groups: 8 pairwise exchanges between GPU g and g + 8 (strided) on Perlmutter's nodes; and four
 * contiguous all-reduce groups, each inside one node, take as long as one alone. */
static void test_groups_and_placement(void **state) {
    (void)state;
    const char *pairs[] = {"collective", "--topology", "perlmutter",  "--gpus",  "16",     "--op", "sendrecv",
                           "--groups",   "8",          "--placement", "strided", "--size", "64M",  "--json"};
    cJSON *doc = cli_run_json(pairs, 14);
    assert_string_equal(cli_json_str(doc, "placement"), "strided");
    const cJSON *res = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "results"), 0);
    assert_string_equal(cli_json_str(res, "algo"), "direct");
    /* one NIC each way at 0.7 x 25 GB/s */
    assert_true(fabs(cli_json_num(res, "busbw_bytes_per_s") - 17.5e9) < 0.02 * 17.5e9);
    cJSON_Delete(doc);
    const char *one[] = {"collective", "--topology", "perlmutter", "--gpus", "4", "--size", "256M", "--json"};
    const char *four[] = {"collective", "--topology", "perlmutter", "--gpus", "16",
                          "--groups",   "4",          "--size",     "256M",   "--json"};
    cJSON *a = cli_run_json(one, 8), *b = cli_run_json(four, 10);
    const double ta =
        cli_json_num(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(a, "results"), 0), "time_s");
    const double tb =
        cli_json_num(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(b, "results"), 0), "time_s");
    assert_true(fabs(ta - tb) < 1e-9 * ta);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

/* Alltoall on 2 nodes of 8: the time is the closed form, busbw = algbw (n - 1)/n, auto takes the flat
 * algorithm on the non-blocking rail-optimized fabric. */
static void test_alltoall(void **state) {
    (void)state;
    const char *args[] = {"collective", "--topology", "rail",     "--system", "H100", "--gpus",
                          "16",         "--op",       "alltoall", "--size",   "64M",  "--json"};
    cJSON *doc = cli_run_json(args, 12);
    assert_string_equal(cli_json_str(doc, "op"), "alltoall");
    const cJSON *res = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "results"), 0);
    assert_string_equal(cli_json_str(res, "algo"), "direct");
    const double t = cli_json_num(res, "time_s"), m = 64 * MIB;
    assert_true(fabs(t / cli_json_num(res, "closed_form_s") - 1.0) < 1e-3);
    assert_true(fabs(cli_json_num(res, "busbw_bytes_per_s") - m / t * 15 / 16) < 1e-9 * m / t);
    cJSON_Delete(doc);
}

static void test_text_and_help(void **state) {
    (void)state;
    cli_run_t r = cli_run("collective", "--topology", "perlmutter", "--gpus", "8", "--size", "64K", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "allreduce, algo auto"));
    assert_non_null(strstr(r.out, "(B)"));
    assert_non_null(strstr(r.out, "(us)"));
    assert_non_null(strstr(r.out, "(GB/s)"));
    assert_non_null(strstr(r.out, "         65536 "));
    assert_int_equal(cli_run_lines(r.out), 6);
    cli_run_free(&r);
    r = cli_run("collective", "--help", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "--sizes MIN:MAX"));
    assert_non_null(strstr(r.out, "--placement P"));
    assert_non_null(strstr(r.out, "perlmutter"));
    cli_run_free(&r);
    r = cli_run("help", "collective", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "--gpus-per-node K"));
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_cases),       cmocka_unit_test(test_json_fields),
        cmocka_unit_test(test_uncalibrated_ring), cmocka_unit_test(test_groups_and_placement),
        cmocka_unit_test(test_text_and_help),     cmocka_unit_test(test_alltoall),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
