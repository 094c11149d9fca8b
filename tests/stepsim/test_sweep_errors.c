/* stepsim/test_sweep_errors.c - a bad grid or bad arguments: exit 2, one stderr line naming the file, the
 * JSON path and the value, nothing on stdout, and the output file never created (or never changed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "sweep_test_util.h"
#include "test_cli_run.h"

typedef struct grid_case {
    const char *name;
    const char *grid; /* the grid file's text */
    const char *frag[3];
} grid_case_t;

static const grid_case_t CASES[] = {
    {"command_unknown",
     "{\"command\": \"estimat\"}",
     {"command: \"estimat\" is not a command", "did you mean \"estimate\""}},
    {"command_type", "{\"command\": 3}", {"command: 3 is not a string", "allowed: estimate, search"}},
    {"command_missing", "{\"vary\": {\"gpus\": [8]}}", {"command: missing", "allowed: estimate, search"}},
    {"unknown_grid_key",
     "{\"command\": \"search\", \"varry\": {}}",
     {"varry: unknown key", "did you mean \"vary\""}},
    {"top_level_array", "[1]", {"(top level): an array", "allowed: a grid object"}},
    {"syntax", "{\"command\": \"search\",", {"line 1, column", "invalid JSON"}},
    {"duplicate_key",
     "{\"command\": \"search\", \"scenario\": {\"gpus\": 4, \"gpus\": 8}}",
     {"scenario.gpus: duplicate key"}},
    {"scenario_type", "{\"command\": \"search\", \"scenario\": []}", {"scenario: an array is not an object"}},
    {"scenario_field",
     "{\"command\": \"search\", \"scenario\": {\"gpus\": \"many\"}}",
     {": scenario: gpus: \"many\" (a string)", "not a number"}},
    {"vary_unknown_path",
     "{\"command\": \"search\", \"vary\": {\"parallel.mbz\": [1]}}",
     {"vary[\"parallel.mbz\"][0]: parallel.mbz: unknown key", "did you mean \"mbs\"", "allowed:"}},
    {"vary_unknown_top_path",
     "{\"command\": \"search\", \"vary\": {\"gpu\": [4]}}",
     {"vary[\"gpu\"][0]: gpu: unknown key", "did you mean \"gpus\""}},
    {"vary_path_into_number",
     "{\"command\": \"search\", \"vary\": {\"gpus.count\": [4]}}",
     {"vary[\"gpus.count\"][0]: gpus is not an object of a scenario", "allowed: dotted paths"}},
    {"vary_bad_path",
     "{\"command\": \"search\", \"vary\": {\"a..b\": [4]}}",
     {"vary[\"a..b\"]: not a dotted path"}},
    {"vary_empty_list",
     "{\"command\": \"search\", \"vary\": {\"gpus\": []}}",
     {"vary[\"gpus\"]: [] is an empty list", "non-empty array"}},
    {"vary_not_list",
     "{\"command\": \"search\", \"vary\": {\"gpus\": 4}}",
     {"vary[\"gpus\"]: 4 is not a list"}},
    {"vary_empty_object", "{\"command\": \"search\", \"vary\": {}}", {"vary: an object with no keys"}},
    {"vary_bad_type",
     "{\"command\": \"search\", \"vary\": {\"gpus\": [4, \"x\"]}}",
     {"vary[\"gpus\"][1]: gpus: \"x\" (a string)", "not a number"}},
    {"vary_bad_value",
     "{\"command\": \"estimate\", \"vary\": {\"system.hbm_capacity\": [40, -1]}}",
     {"vary[\"system.hbm_capacity\"][1]", "-1 is out of range"}},
    {"vary_bad_preset",
     "{\"command\": \"search\", \"vary\": {\"system\": [\"A100\", \"A200\"]}}",
     {"vary[\"system\"][1]: system: unknown system preset \"A200\"", "did you mean \"A100\""}},
    {"vary_overlap",
     "{\"command\": \"search\", \"vary\": {\"parallel\": [{}], \"parallel.strategy\": [\"1d\"]}}",
     {"vary[\"parallel.strategy\"]: overlaps vary[\"parallel\"]"}},
    {"vary_duplicate_point",
     "{\"command\": \"search\", \"vary\": {\"gpus\": [4, 4]}}",
     {"point 1 (gpus=4) is the same scenario as point 0 (gpus=4)", "allowed: distinct points"}},
    {"points_not_list", "{\"command\": \"search\", \"points\": {}}", {"points: an object is not a list"}},
    {"points_entry", "{\"command\": \"search\", \"points\": [3]}", {"points[0]: 3 is not an object"}},
    {"points_empty",
     "{\"command\": \"search\", \"points\": []}",
     {"points: [] is an empty list and there is no vary"}},
    {"points_bad_layout",
     "{\"command\": \"estimate\", \"points\": [{\"parallel\": {\"layout\": \"best\"}}]}",
     {"points[0]: parallel.layout: \"best\"", "allowed: \"search\""}},
    {"points_bad_field",
     "{\"command\": \"estimate\", \"points\": [{}, {\"parallel\": {\"tp\": 0}}]}",
     {"points[1]: parallel.tp: 0 is zero"}},
    {"options_type", "{\"command\": \"search\", \"options\": [1]}", {"options: an array is not an object"}},
    {"options_top_range",
     "{\"command\": \"search\", \"options\": {\"top\": 0}}",
     {"options.top: 0", "allowed: an integer 1..1000000"}},
    {"options_layers_type",
     "{\"command\": \"estimate\", \"options\": {\"layers\": 1}}",
     {"options.layers: 1 is not a boolean"}},
    {"options_degree_in_search",
     "{\"command\": \"search\", \"options\": {\"tp\": 8}}",
     {"options.tp: not an option of search", "allowed: top, model"}},
    {"options_unknown",
     "{\"command\": \"search\", \"options\": {\"tpo\": 8}}",
     {"options.tpo: unknown option of search", "did you mean \"top\""}},
    {"options_json",
     "{\"command\": \"search\", \"options\": {\"json\": true}}",
     {"options.json: not an option in a grid"}},
    {"options_bad_compat",
     "{\"command\": \"estimate\", \"options\": {\"compat\": \"referenc\"}}",
     {"options: compat: unknown compat \"referenc\"", "did you mean \"reference\""}},
    {"options_vs_vary",
     "{\"command\": \"estimate\", \"vary\": {\"compat\": [\"reference\"]}, \"options\": {\"compat\": "
     "\"reference\"}}",
     {"options.compat: also varied by vary[\"compat\"]"}},
};

static void grid_case(void **state) {
    const grid_case_t *c = *state;
    char grid[128], out[128];
    sweep_scratch(grid, sizeof grid, "bad.json");
    sweep_scratch(out, sizeof out, "bad.jsonl");
    sweep_write_file(grid, c->grid, strlen(c->grid));
    remove(out);
    cli_run_t r = cli_run("sweep", grid, "--out", out, NULL);
    if (r.rc != 2 || cli_run_lines(r.err) != 1 || r.out[0] != '\0')
        fail_msg("%s: rc %d, stdout \"%s\", stderr \"%s\"", c->name, r.rc, r.out, r.err);
    if (!strstr(r.err, grid))
        fail_msg("%s: the message does not name the grid file: %s", c->name, r.err);
    for (int i = 0; i < 3 && c->frag[i]; i++)
        if (!strstr(r.err, c->frag[i]))
            fail_msg("%s: \"%s\" not in: %s", c->name, c->frag[i], r.err);
    struct stat st;
    if (stat(out, &st) == 0)
        fail_msg("%s: the output file was created", c->name);
    cli_run_free(&r);
    remove(grid);
}

/* Argument errors: one line, exit 2. */
static void argument_errors(void **state) {
    (void)state;
    static const struct {
        const char *args[8];
        const char *frag;
    } cases[] = {
        {{"sweep", "@sweep/small_search.json"}, "--out: missing"},
        {{"sweep", "--out", "x.jsonl"}, "missing grid file"},
        {{"sweep", "@sweep/small_search.json", "--out", "x.jsonl", "--shard", "3/3"},
         "--shard: 3/3: I = 3 is not below N = 3"},
        {{"sweep", "@sweep/small_search.json", "--out", "x.jsonl", "--shard", "1/0"},
         "N = 0 is out of range"},
        {{"sweep", "@sweep/small_search.json", "--out", "x.jsonl", "--shard", "-1/2"},
         "--shard: \"-1/2\" is not I/N"},
        {{"sweep", "@sweep/small_search.json", "--out", "x.jsonl", "--shard", "1"}, "is not I/N"},
        {{"sweep", "@sweep/small_search.json", "--out", "x.jsonl", "--resume", "--force"},
         "--force: cannot be combined with --resume"},
        {{"sweep", "@sweep/small_search.json", "--out", "x.jsonl", "--resum"}, "did you mean --resume"},
        {{"sweep", "@sweep/small_search.json", "@sweep/estimates.json", "--out", "x.jsonl"},
         "unexpected argument"},
        {{"sweep", "no-such-grid.json", "--out", "x.jsonl"}, "no-such-grid.json: cannot open grid file"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n = 0;
        while (n < 8 && cases[i].args[n])
            n++;
        cli_run_t r = cli_run_argv(n, cases[i].args);
        if (r.rc != 2 || cli_run_lines(r.err) != 1 || !strstr(r.err, cases[i].frag))
            fail_msg("case %zu: rc %d, stderr \"%s\" (want \"%s\")", i, r.rc, r.err, cases[i].frag);
        cli_run_free(&r);
    }
    struct stat st;
    assert_int_not_equal(stat("x.jsonl", &st), 0);
}

/* An existing, non-empty output is kept unless --resume or --force says what to do with it. */
static void existing_output(void **state) {
    (void)state;
    char out[128];
    sweep_scratch(out, sizeof out, "existing.jsonl");
    static const char text[] = "{\"id\": \"0123456789abcdef\"}\n";
    sweep_write_file(out, text, sizeof text - 1);
    cli_run_t r = cli_run("sweep", "@sweep/small_search.json", "--out", out, NULL);
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "exists and is not empty"));
    assert_non_null(strstr(r.err, "allowed: --resume to complete it, --force to start over"));
    cli_run_free(&r);
    char *now = sweep_read_file(out, NULL);
    assert_string_equal(now, text);
    free(now);
    /* A line that is not a sweep line stops --resume (exit 2) and is left alone. */
    static const char junk[] = "hello\n";
    sweep_write_file(out, junk, sizeof junk - 1);
    r = cli_run("sweep", "@sweep/small_search.json", "--out", out, "--resume", NULL);
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, ": line 1: not a JSON object"));
    cli_run_free(&r);
    now = sweep_read_file(out, NULL);
    assert_string_equal(now, junk);
    free(now);
    remove(out);
}

int main(void) {
    enum { N = sizeof CASES / sizeof CASES[0] };
    struct CMUnitTest tests[N + 2];
    for (int i = 0; i < N; i++) {
        struct CMUnitTest t = {CASES[i].name, grid_case, NULL, NULL, (void *)&CASES[i]};
        tests[i] = t;
    }
    struct CMUnitTest args = cmocka_unit_test(argument_errors), existing = cmocka_unit_test(existing_output);
    tests[N] = args;
    tests[N + 1] = existing;
    return _cmocka_run_group_tests("stepsim.sweep_errors", tests, N + 2, NULL, NULL);
}
