/* stepsim/test_links.c - slow and failed links through the command line: --slow-links, --fail-links
 * and the scenario's perturbations.links in run, topo and collective.
 * - The collapse: a link slowed or failed on one rail's data-parallel route, or one tensor group's
 *   NVLink slowed, makes auto simulate every GPU (the collapse note says why) and gives exactly what
 *   --collapse off gives; the same slowdown on every leaf-spine link keeps the exact collapse and
 *   again equals --collapse off.
 * - The scenario file's entry and the equivalent option give the same run.
 * - The default-size run with slowed links, and a smaller one with a failed link, are byte-identical
 *   twice.
 * - A failed leaf-spine cable carries nothing in the trace: its link counters (named as topo names
 *   links) never appear, while its leaf's other uplinks carry the rerouted traffic.
 * - topo lists the failed and slowed links by name; collective gets slower on a slowed ring link;
 *   compare applies them to every topology, a class one lacks leaving it unchanged.
 * - Errors: one line, exit 2, naming the file or option, the field and the value (unknown link name
 *   with a did-you-mean, unknown class, factor out of range, a class the topology lacks, analytic
 *   communication); exit 3 naming two GPUs when failed links cut the GPUs apart. */
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

#include "test_cli_assert.h"

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* run --json of a small job (gpt3, 64 GPUs, pp 2) on the fat-tree shortcut with extra arguments. */
static cJSON *small_run(const char *collapse, const char *opt, const char *value) {
    const char *argv[] = {"run", "--model",    "gpt3",     "--gpus", "64",         "--gbs",  "64", "--pp",
                          "2",   "--topology", "fat-tree", "--json", "--collapse", collapse, opt,  value};
    return cli_run_json(argv, opt ? N(argv) : N(argv) - 2);
}

static const char *collapse_note(const cJSON *doc) {
    const cJSON *c =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "simulation"), "collapse");
    return cli_json_str(c, "note");
}

static void test_collapse(void **state) {
    (void)state;
    static const struct {
        const char *opt, *value;
        int collapses; /* 1: auto still collapses exactly */
    } CASES[] = {
        {"--slow-links", "leaf0->spine1:0.5", 0},   /* one rail's data-parallel route */
        {"--fail-links", "leaf0<->spine1", 0},      /* rerouted: routes no longer map */
        {"--slow-links", "gpu1->nvs0:0.5", 0},      /* one tensor group's NVLink */
        {"--slow-links", "class:leaf-spine:0.5", 1} /* every rail alike */
    };
    cJSON *base = small_run("auto", NULL, NULL);
    const double base_s = cli_json_num(base, "step_time_s");
    cJSON_Delete(base);
    for (int i = 0; i < N(CASES); i++) {
        cJSON *a = small_run("auto", CASES[i].opt, CASES[i].value);
        cJSON *o = small_run("off", CASES[i].opt, CASES[i].value);
        const double ta = cli_json_num(a, "step_time_s"), to = cli_json_num(o, "step_time_s");
        if (ta != to)
            fail_msg("%s %s: auto %.12g s, off %.12g s", CASES[i].opt, CASES[i].value, ta, to);
        assert_true(ta > base_s * 1.01); /* the perturbation costs time */
        const char *note = collapse_note(a);
        if (CASES[i].collapses)
            assert_non_null(strstr(note, "exact: tensor groups own their links"));
        else
            assert_non_null(strstr(note, "every GPU simulated: collapsing would not be exact"));
        cJSON_Delete(a);
        cJSON_Delete(o);
    }
}

static void test_scenario_file(void **state) {
    (void)state;
    const char *file[] = {"run", "@scenarios/links_ok.json", "--json"};
    const char *opt[] = {
        "run",  "--model", "gpt3",       "--gpus",   "64",     "--gbs",        "64",
        "--pp", "2",       "--topology", "fat-tree", "--json", "--slow-links", "leaf0->spine1:0.5"};
    cli_run_t a = cli_run_argv(N(file), file), b = cli_run_argv(N(opt), opt);
    assert_int_equal(a.rc, 0);
    assert_int_equal(b.rc, 0);
    cJSON *da = cJSON_Parse(a.out), *db = cJSON_Parse(b.out);
    assert_true(cli_json_num(da, "step_time_s") == cli_json_num(db, "step_time_s"));
    cJSON_Delete(da);
    cJSON_Delete(db);
    cli_run_free(&a);
    cli_run_free(&b);
}

static void twice_identical(const char *const *argv, int n) {
    cli_run_t a = cli_run_argv(n, argv), b = cli_run_argv(n, argv);
    if (a.rc)
        fprintf(stderr, "%s\n", a.err);
    assert_int_equal(a.rc, 0);
    assert_int_equal(b.rc, 0);
    /* the wall time differs run to run: compare everything before it */
    char *wa = strstr(a.out, "wall_time_s"), *wb = strstr(b.out, "wall_time_s");
    assert_non_null(wa);
    assert_non_null(wb);
    *wa = *wb = '\0';
    assert_string_equal(a.out, b.out);
    cli_run_free(&a);
    cli_run_free(&b);
}

static void test_deterministic(void **state) {
    (void)state;
    /* the default job (4,096 GPUs) on the fat-tree with every leaf-spine link at 0.5: still collapsed,
     * so quick */
    const char *big[] = {"run", "--topology", "fat-tree", "--slow-links", "class:leaf-spine:0.5", "--json"};
    twice_identical(big, N(big));
    const char *failed[] = {
        "run",  "--model", "gpt3",       "--gpus",   "64",     "--gbs",        "64",
        "--pp", "2",       "--topology", "fat-tree", "--json", "--fail-links", "fraction:0.05:leaf-spine"};
    twice_identical(failed, N(failed));
}

/* Every value of the trace's counter `name` (a link's utilisation), their count in *n, their max. */
static double counter_max(const cJSON *events, const char *name, int *n) {
    double mx = 0.0;
    *n = 0;
    const cJSON *ev;
    cJSON_ArrayForEach(ev, events) {
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(ev, "ph");
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(ev, "name");
        if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "C") != 0 || !cJSON_IsString(nm) ||
            strcmp(nm->valuestring, name) != 0)
            continue;
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
        const cJSON *v = args ? args->child : NULL;
        assert_true(cJSON_IsNumber(v));
        mx = v->valuedouble > mx ? v->valuedouble : mx;
        (*n)++;
    }
    return mx;
}

/* The trace of `run` on 64 GPUs of a fat-tree (2 leaves of 32 GPUs, 8 spines), pure data
 * parallelism (the all-reduces cross the leaves), with --fail-links fail ("" for none). */
static cJSON *dp_trace(const char *fail) {
    char path[96];
    snprintf(path, sizeof path, "/tmp/stepsim_links_trace_%d.json", (int)getpid());
    cli_run_t r = fail[0] ? cli_run("run", "--model", "gpt3", "--gpus", "64", "--gbs", "64", "--tp", "1",
                                    "--pp", "1", "--topology", "fat-tree", "--fail-links", fail, "--baseline",
                                    "off", "--trace", path, "--quiet", NULL)
                          : cli_run("run", "--model", "gpt3", "--gpus", "64", "--gbs", "64", "--tp", "1",
                                    "--pp", "1", "--topology", "fat-tree", "--trace", path, "--quiet", NULL);
    assert_int_equal(r.rc, 0);
    cli_run_free(&r);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END); /* cli_run_slurp reads up to the position, then closes f */
    char *text = cli_run_slurp(f);
    unlink(path);
    cJSON *doc = cJSON_Parse(text);
    free(text);
    assert_non_null(doc);
    assert_true(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "traceEvents")));
    return doc;
}

static void test_trace_counters(void **state) {
    (void)state;
    cJSON *base = dp_trace(""), *failed = dp_trace("leaf0<->spine0");
    const cJSON *eb = cJSON_GetObjectItemCaseSensitive(base, "traceEvents");
    const cJSON *ef = cJSON_GetObjectItemCaseSensitive(failed, "traceEvents");
    int n = 0;
    /* counters are named as the topology names links, spaced as --fail-links accepts them;
     * intact, the cable carries its share; failed, its counters never leave 0 */
    assert_true(counter_max(eb, "leaf 0 -> spine 0", &n) > 0.5 && n > 0);
    assert_true(counter_max(eb, "spine 0 -> leaf 0", &n) > 0.5 && n > 0);
    assert_true(counter_max(ef, "leaf 0 -> spine 0", &n) == 0.0);
    assert_true(counter_max(ef, "spine 0 -> leaf 0", &n) == 0.0);
    /* nor does the rest of the route through spine 0 (it only joins the two leaves) */
    assert_true(counter_max(ef, "leaf 1 -> spine 0", &n) == 0.0);
    assert_true(counter_max(ef, "spine 0 -> leaf 1", &n) == 0.0);
    for (int sp = 1; sp < 8; sp++) { /* the other uplinks of leaf 0 carry the traffic */
        char up[32], down[32];
        snprintf(up, sizeof up, "leaf 0 -> spine %d", sp);
        snprintf(down, sizeof down, "spine %d -> leaf 0", sp);
        assert_true(counter_max(ef, up, &n) > 0.5 && n > 0);
        assert_true(counter_max(ef, down, &n) > 0.5 && n > 0);
    }
    cJSON_Delete(base);
    cJSON_Delete(failed);
}

/* run's text names the link entries of the what-if (not "0 GPUs slowed"), and their cost */
static void test_run_text(void **state) {
    (void)state;
    cli_run_t r = cli_run("run", "--model", "gpt3", "--gpus", "64", "--gbs", "64", "--pp", "2", "--topology",
                          "fat-tree", "--fail-links", "leaf0<->spine0", "--slow-links",
                          "class:leaf-spine:0.5", "--quiet", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(
        strstr(r.out, "what-if (seed 1): links leaf0<->spine0 failed; links class:leaf-spine x0.5\n"));
    assert_null(strstr(r.out, "slowed"));
    assert_non_null(strstr(r.out, "    links leaf0<->spine0 failed      +"));
    cli_run_free(&r);
}

static void test_topo_lists(void **state) {
    (void)state;
    cli_run_t r = cli_run("topo", "--topology", "{\"kind\":\"fat-tree\",\"k\":8}", "--fail-links",
                          "leaf 3 -> spine 1", "--slow-links", "leaf0<->spine2:0.25", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "failed links    1: leaf3->spine1\n"));
    assert_non_null(strstr(r.out, "slowed links    2: leaf0->spine2 x0.25, spine2->leaf0 x0.25\n"));
    assert_non_null(strstr(r.out, "ib-ndr: 1 links at 12.5 GB/s"));
    cli_run_free(&r);
    const char *argv[] = {"topo",         "--topology",    "{\"kind\":\"fat-tree\",\"k\":8}",
                          "--fail-links", "leaf3->spine1", "--json"};
    cJSON *doc = cli_run_json(argv, N(argv));
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(doc, "failed_links");
    assert_int_equal(cJSON_GetArraySize(f), 1);
    assert_string_equal(cJSON_GetArrayItem(f, 0)->valuestring, "leaf3->spine1");
    cJSON_Delete(doc);
}

static double collective_s(const char *opt, const char *value) {
    const char *argv[] = {"collective", "--topology", "{\"kind\":\"fat-tree\",\"k\":8}",
                          "--algo",     "ring",       "--size",
                          "64M",        "--json",     opt,
                          value};
    cJSON *doc = cli_run_json(argv, opt ? N(argv) : N(argv) - 2);
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(doc, "results");
    assert_non_null(rows);
    const double t = cli_json_num(cJSON_GetArrayItem(rows, 0), "time_s");
    cJSON_Delete(doc);
    return t;
}

static void test_collective(void **state) {
    (void)state;
    const double base = collective_s(NULL, NULL), slow = collective_s("--slow-links", "gpu15->leaf3:0.25");
    /* the ring's bandwidth term runs at a quarter of the link's rate (LL128's fixed costs do not) */
    assert_true(slow > 2.5 * base);
}

static const cJSON *compare_rows(const char *opt, const char *value, cJSON **doc) {
    const char *argv[] = {"compare",
                          "--model",
                          "gpt3",
                          "--gpus",
                          "64",
                          "--gbs",
                          "64",
                          "--pp",
                          "2",
                          "--topologies",
                          "fat-tree,dragonfly",
                          "--json",
                          opt,
                          value};
    *doc = cli_run_json(argv, opt ? N(argv) : N(argv) - 2);
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(*doc, "topologies");
    assert_int_equal(cJSON_GetArraySize(rows), 3); /* ideal, fat-tree, dragonfly */
    return rows;
}

/* compare applies the scenario's links to every topology; a class one lacks (global on the ideal and
 * fat-tree rows) leaves it as it is, while names stay strict. */
static void test_compare(void **state) {
    (void)state;
    cJSON *d0, *d1;
    const cJSON *r0 = compare_rows(NULL, NULL, &d0),
                *r1 = compare_rows("--fail-links", "fraction:0.1:global", &d1);
    for (int i = 0; i < 3; i++) {
        const double a = cli_json_num(cJSON_GetArrayItem(r0, i), "step_time_s");
        const double b = cli_json_num(cJSON_GetArrayItem(r1, i), "step_time_s");
        if (i < 2)
            assert_true(a == b);
        else
            assert_true(b != a);
    }
    cJSON_Delete(d0);
    cJSON_Delete(d1);
    const char *argv[] = {"compare",  "--model",      "gpt3",          "--gpus", "64",
                          "--gbs",    "64",           "--pp",          "2",      "--topologies",
                          "fat-tree", "--fail-links", "leaf0->spine99"};
    const char *frags[] = {"--fail-links: \"leaf0->spine99\" names no link of this topology"};
    cli_expect_error("compare name", argv, N(argv), 2, frags, 1);
}

static void test_errors(void **state) {
    (void)state;
    static const struct {
        const char *name;
        const char *argv[10];
        int n, rc;
        const char *frags[3];
    } CASES[] = {
        {"unknown name",
         {"run", "@scenarios/err_links_name.json"},
         2,
         2,
         {"err_links_name.json: perturbations.links[0].links: \"leaf0->spin2\" names no link of this "
          "topology "
          "(did you mean \"leaf0->spine2\"?)"}},
        {"both",
         {"run", "@scenarios/err_links_both.json"},
         2,
         2,
         {"perturbations.links[0].bandwidth: given with fail: true"}},
        {"key",
         {"run", "@scenarios/err_links_key.json"},
         2,
         2,
         {"perturbations.links[0].link: unknown key (did you mean \"links\"?)"}},
        {"class",
         {"run", "@scenarios/err_links_class.json"},
         2,
         2,
         {"perturbations.links[0].class: \"globl\" is not a link class (did you mean \"global\"?)"}},
        {"factor",
         {"run", "@scenarios/err_links_factor.json"},
         2,
         2,
         {"perturbations.links[0].bandwidth: 2 is out of range"}},
        {"option factor",
         {"run", "--slow-links", "leaf0->spine1:1.5"},
         3,
         2,
         {"--slow-links: \"leaf0->spine1:1.5\" has no factor in (0, 1]"}},
        {"option name",
         {"topo", "--topology", "{\"kind\":\"fat-tree\",\"k\":8}", "--fail-links", "leaf 3 -> spine 9"},
         5,
         2,
         {"--fail-links: \"leaf 3 -> spine 9\" names no link of this topology (did you mean "
          "\"leaf3->spine0\"?)"}},
        {"absent class",
         {"run", "--topology", "fat-tree", "--fail-links", "class:global"},
         5,
         2,
         {"--fail-links: global selects no link of this topology (fat-tree); allowed: nvlink, network, "
          "access, "
          "leaf-spine"}},
        {"analytic",
         {"run", "--comm", "analytic", "--fail-links", "class:global"},
         5,
         2,
         {"--fail-links: slow and failed links need a network"}},
        {"cut",
         {"topo", "--topology", "{\"kind\":\"fat-tree\",\"k\":8}", "--fail-links",
          "leaf0->spine0;leaf0->spine1;leaf0->spine2;leaf0->spine3"},
         5,
         3,
         {"--fail-links: the failed links leave GPU 3 without a route to GPU 4"}},
        {"cut run",
         {"run", "--model", "gpt3", "--gpus", "64", "--topology", "fat-tree", "--fail-links", "class:access"},
         9,
         3,
         {"--fail-links: the failed links leave GPU 0 without a route to GPU 8"}},
    };
    for (int i = 0; i < N(CASES); i++)
        cli_expect_error(CASES[i].name, CASES[i].argv, CASES[i].n, CASES[i].rc, CASES[i].frags, 3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collapse),      cmocka_unit_test(test_scenario_file),
        cmocka_unit_test(test_deterministic), cmocka_unit_test(test_topo_lists),
        cmocka_unit_test(test_collective),    cmocka_unit_test(test_compare),
        cmocka_unit_test(test_errors),        cmocka_unit_test(test_trace_counters),
        cmocka_unit_test(test_run_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
