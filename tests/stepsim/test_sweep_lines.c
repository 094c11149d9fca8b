/* stepsim/test_sweep_lines.c - what a sweep writes: one line per point, deterministic, ids as documented,
 * results equal to the command's own --json output, error lines for failing points (the sweep goes
 * on, exit 0), searched layouts, and the --json summary. */
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sweep_test_util.h"
#include "test_cli_run.h"

static uint64_t fnv1a(uint64_t h, const char *s) {
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* Run a grid fixture into a fresh scratch file; returns the parsed lines (a JSON array). */
static cJSON *run_grid(const char *fixture, const char *out) {
    char arg[128];
    snprintf(arg, sizeof arg, "@sweep/%s", fixture);
    remove(out);
    cli_run_t r = cli_run("sweep", arg, "--out", out, NULL);
    if (r.rc != 0)
        fail_msg("sweep %s: rc %d: %s", fixture, r.rc, r.err);
    cli_run_free(&r);
    char *text = sweep_read_file(out, NULL);
    assert_non_null(text);
    cJSON *lines = cJSON_CreateArray();
    for (char *p = text; *p;) {
        char *nl = strchr(p, '\n');
        assert_non_null(nl);
        *nl = '\0';
        cJSON *o = cJSON_Parse(p);
        if (!cJSON_IsObject(o))
            fail_msg("not a JSON object: %.200s", p);
        cJSON_AddItemToArray(lines, o);
        p = nl + 1;
    }
    free(text);
    return lines;
}

/* The command's own --json output for a line's scenario (written to a file) and extra arguments. */
static cJSON *command_json(const char *command, const cJSON *scenario, const char *a1, const char *a2,
                           int *rc) {
    char path[128];
    sweep_scratch(path, sizeof path, "point.json");
    char *text = cJSON_PrintUnformatted(scenario);
    sweep_write_file(path, text, strlen(text));
    cJSON_free(text);
    cli_run_t r =
        a1 ? cli_run(command, path, "--json", a1, a2, NULL) : cli_run(command, path, "--json", NULL);
    *rc = r.rc;
    cJSON *j = cJSON_Parse(r.out);
    cli_run_free(&r);
    remove(path);
    return j;
}

static const cJSON *get(const cJSON *o, const char *k) {
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* Twice the same bytes; ids as documented; every result equal to `stepsim search --json`. */
static void search_lines(void **state) {
    (void)state;
    char out1[128], out2[128];
    sweep_scratch(out1, sizeof out1, "lines1.jsonl");
    sweep_scratch(out2, sizeof out2, "lines2.jsonl");
    cJSON *lines = run_grid("small_search.json", out1);
    cJSON_Delete(run_grid("small_search.json", out2));
    char *a = sweep_read_file(out1, NULL), *b = sweep_read_file(out2, NULL);
    assert_string_equal(a, b);
    free(a);
    free(b);
    assert_int_equal(cJSON_GetArraySize(lines), 10); /* 2 x 2 x 2 vary points + 2 points */
    int errors = 0, nofit = 0;
    const cJSON *line;
    cJSON_ArrayForEach(line, lines) {
        const cJSON *id = get(line, "id"), *scn = get(line, "scenario"), *opts = get(line, "options");
        assert_true(cJSON_IsString(id) && strlen(id->valuestring) == 16);
        assert_string_equal(get(line, "command")->valuestring, "search");
        assert_int_equal((int)get(opts, "top")->valuedouble, 2);
        /* The options that are scenario fields land in the scenario. */
        assert_string_equal(get(scn, "compat")->valuestring, "reference");
        /* id = FNV-1a 64 of command, canonical scenario and options, joined by newlines. */
        char *st = cJSON_PrintUnformatted(scn), *ot = cJSON_PrintUnformatted(opts), hex[17];
        uint64_t h =
            fnv1a(fnv1a(fnv1a(fnv1a(fnv1a(UINT64_C(0xcbf29ce484222325), "search"), "\n"), st), "\n"), ot);
        snprintf(hex, sizeof hex, "%016" PRIx64, h);
        assert_string_equal(id->valuestring, hex);
        cJSON_free(st);
        cJSON_free(ot);
        int rc = 0;
        cJSON *want = command_json("search", scn, "--top", "2", &rc);
        if (get(line, "error")) {
            errors++;
        } else if (cJSON_IsFalse(get(get(line, "result"), "fits"))) {
            /* nothing fits: a result (search itself exits 3), the empty list and the reason */
            nofit++;
            assert_int_equal(rc, 3);
            assert_int_equal(cJSON_GetArraySize(get(get(line, "result"), "results")), 0);
            assert_true(get(get(line, "result"), "candidates_evaluated")->valuedouble > 0);
            assert_non_null(strstr(get(get(line, "result"), "note")->valuestring, "no configuration fits"));
        } else {
            assert_int_equal(rc, 0);
            if (!cJSON_Compare(get(line, "result"), want, 1))
                fail_msg("result differs from stepsim search --json for %s", id->valuestring);
        }
        cJSON_Delete(want);
    }
    assert_int_equal(errors, 0);
    assert_int_equal(nofit, 5); /* nothing fits on 4 GPUs, nor 2d on 128 */
    cJSON_Delete(lines);
    remove(out1);
    remove(out2);
}

/* Given, failing and searched layouts of estimate. */
static void estimate_layouts(void **state) {
    (void)state;
    char out[128];
    sweep_scratch(out, sizeof out, "layouts.jsonl");
    cJSON *lines = run_grid("layouts.json", out);
    assert_int_equal(cJSON_GetArraySize(lines), 9);
    const cJSON *line;
    int searched = 0, failed = 0, nofit = 0;
    cJSON_ArrayForEach(line, lines) {
        const cJSON *scn = get(line, "scenario"), *par = get(scn, "parallel"), *res = get(line, "result");
        const cJSON *tp = get(par, "tp"), *err = get(line, "error");
        if (cJSON_IsNumber(tp) && tp->valuedouble == 6) {
            assert_non_null(err);
            assert_int_equal((int)get(line, "exit_code")->valuedouble, 2);
            assert_non_null(strstr(err->valuestring, "6 does not divide heads (160)"));
            failed++;
            continue;
        }
        if (!get(par, "layout")) {
            assert_non_null(res);
            int rc = 0;
            cJSON *want = command_json("estimate", scn, NULL, NULL, &rc);
            assert_int_equal(rc, 0);
            assert_true(cJSON_Compare(res, want, 1));
            cJSON_Delete(want);
            continue;
        }
        /* A searched layout: the numeric degrees are dropped, only the strategy stays. */
        assert_null(tp);
        assert_string_equal(get(par, "layout")->valuestring, "search");
        searched++;
        assert_null(err);
        if (cJSON_IsFalse(get(res, "fits"))) { /* 4 GPUs: nothing fits, a result */
            assert_non_null(strstr(get(res, "note")->valuestring, "no configuration fits"));
            assert_true(get(get(res, "layout_search"), "candidates_evaluated")->valuedouble > 0);
            assert_true(get(get(res, "layout_search"), "candidates_feasible")->valuedouble == 0);
            nofit++;
            continue;
        }
        cJSON *copy = cJSON_Duplicate(scn, 1);
        cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(copy, "parallel"), "layout");
        int rc = 0;
        cJSON *best = command_json("search", copy, "--top", "1", &rc);
        assert_int_equal(rc, 0);
        const cJSON *r0 = cJSON_GetArrayItem(get(best, "results"), 0);
        /* estimate of the searched layout = the search's rank 0, to the last bit */
        assert_true(get(res, "throughput_samples_per_s")->valuedouble ==
                    get(r0, "throughput_samples_per_s")->valuedouble);
        assert_true(cJSON_Compare(get(res, "breakdown_s"), get(r0, "breakdown_s"), 1));
        assert_true(get(get(res, "layout_search"), "candidates_evaluated")->valuedouble ==
                    get(best, "candidates_evaluated")->valuedouble);
        cJSON_Delete(best);
        cJSON_Delete(copy);
    }
    assert_int_equal(failed, 2);
    assert_int_equal(searched, 4);
    assert_true(nofit > 0);
    cJSON_Delete(lines);
    remove(out);
}

/* A grid may vary the training fields: every line is estimate's own result for its scenario, and the
 * six points differ. */
static void training_grid(void **state) {
    (void)state;
    char out[128];
    sweep_scratch(out, sizeof out, "training.jsonl");
    cJSON *lines = run_grid("training.json", out);
    assert_int_equal(cJSON_GetArraySize(lines), 6);
    double prev = -1.0;
    const cJSON *line;
    cJSON_ArrayForEach(line, lines) {
        const cJSON *scn = get(line, "scenario"), *res = get(line, "result");
        assert_non_null(get(scn, "training"));
        int rc = 0;
        cJSON *want = command_json("estimate", scn, NULL, NULL, &rc);
        assert_int_equal(rc, 0);
        assert_true(cJSON_Compare(res, want, 1));
        const double t = get(res, "iteration_time_s")->valuedouble;
        assert_true(t != prev);
        prev = t;
        cJSON_Delete(want);
    }
    cJSON_Delete(lines);
    remove(out);
}

/* The --json summary counts what the file holds. */
static void summary_json(void **state) {
    (void)state;
    char out[128];
    sweep_scratch(out, sizeof out, "summary.jsonl");
    remove(out);
    cli_run_t r = cli_run("sweep", "@sweep/layouts.json", "--out", out, "--json", NULL);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    cJSON *s = cJSON_Parse(r.out);
    assert_non_null(s);
    assert_int_equal((int)get(s, "points")->valuedouble, 9);
    assert_int_equal((int)get(s, "written")->valuedouble, 9);
    /* the two bad degrees are errors; the searched layout where nothing fits is a result, and so is
     * the given layout that does not fit (estimate's "fits": false) */
    assert_int_equal((int)get(s, "errors")->valuedouble, 2);
    assert_int_equal((int)get(s, "results")->valuedouble, 7);
    assert_int_equal((int)get(s, "results_nothing_fits")->valuedouble, 2);
    assert_int_equal((int)get(s, "ranks")->valuedouble, 1);
    assert_string_equal(get(s, "command")->valuestring, "estimate");
    cJSON_Delete(s);
    cli_run_free(&r);
    /* --force starts over; --resume on a complete file adds nothing. */
    r = cli_run("sweep", "@sweep/layouts.json", "--out", out, "--force", "--json", NULL);
    assert_int_equal(r.rc, 0);
    cli_run_free(&r);
    r = cli_run("sweep", "@sweep/layouts.json", "--out", out, "--resume", "--json", NULL);
    assert_int_equal(r.rc, 0);
    s = cJSON_Parse(r.out);
    assert_int_equal((int)get(s, "already_done")->valuedouble, 9);
    assert_int_equal((int)get(s, "written")->valuedouble, 0);
    cJSON_Delete(s);
    cli_run_free(&r);
    size_t lines = 0, ids = 0;
    sweep_count_ids(out, &lines, &ids);
    assert_int_equal(lines, 9);
    assert_int_equal(ids, 9);
    remove(out);
}

/* help and the command list. */
static void help(void **state) {
    (void)state;
    cli_run_t r = cli_run("sweep", "--help", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "--resume"));
    assert_non_null(strstr(r.out, "--shard I/N"));
    cli_run_free(&r);
    r = cli_run("help", "sweep", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "usage: stepsim sweep"));
    cli_run_free(&r);
}

/* stepsim help names every command sweep runs; the text summary counts the points where nothing fits
 * as results, as the lines do. */
static void help_and_text_summary(void **state) {
    (void)state;
    cli_run_t r = cli_run("help", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "sweep       run estimate, search or run over a grid"));
    cli_run_free(&r);
    r = cli_run("sweep", "--help", NULL);
    assert_non_null(strstr(r.out, "Run a command (estimate, search, run) over a grid"));
    assert_non_null(strstr(r.out, "\"fits\": false"));
    cli_run_free(&r);
    char out[128];
    sweep_scratch(out, sizeof out, "text.jsonl");
    remove(out);
    r = cli_run("sweep", "@sweep/small_search.json", "--out", out, NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "wrote 10 lines (10 results, 5 of them where nothing fits; 0 errors)"));
    cli_run_free(&r);
    remove(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(search_lines),  cmocka_unit_test(estimate_layouts),
        cmocka_unit_test(training_grid), cmocka_unit_test(summary_json),
        cmocka_unit_test(help),          cmocka_unit_test(help_and_text_summary),
    };
    return cmocka_run_group_tests_name("stepsim.sweep_lines", tests, NULL, NULL);
}
