/* stepsim/test_fuzz_cases.c - every input the fuzz targets (tests/fuzz) found to crash, leak or trip a
 * sanitizer, kept in tests/fixtures/fuzz/TARGET/ and run here through the command the target drives,
 * with the outcome each must have: its exit code, one stderr line naming the culprit on failure, and
 * what the command leaves behind. Under the sanitizer build (tools/run-tests.sh) these are the fuzz
 * reports themselves; in Release they check the behaviour. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>

#include "sweep_test_util.h"
#include "test_cli_run.h"

#define FUZZ_DIR STEPSIM_FIXTURE_DIR "/fuzz"

/* The fixture's bytes copied to a scratch file (so the command may change it); returns the path. */
static const char *scratch_copy(const char *fixture, const char *name, char *buf, size_t n) {
    size_t len = 0;
    char *text = sweep_read_file(fixture, &len);
    assert_non_null(text);
    sweep_scratch(buf, n, name);
    sweep_write_file(buf, text, len);
    free(text);
    return buf;
}

static void expect_one_line(const cli_run_t *r, int rc, const char *culprit) {
    if (r->rc != rc)
        fail_msg("exit %d, expected %d; stderr: %s", r->rc, rc, r->err);
    if (rc == 0)
        return;
    assert_int_equal(cli_run_lines(r->err), 1);
    if (culprit && !strstr(r->err, culprit))
        fail_msg("stderr does not name %s: %s", culprit, r->err);
}

/* A journal holding only a torn line (no '\n'): --resume cuts it and runs both points (the empty id
 * list was handed to qsort as NULL, undefined behaviour). */
static void test_journal_torn_line_only(void **state) {
    (void)state;
    char out[256];
    scratch_copy(FUZZ_DIR "/journal/torn_line_only.jsonl", "torn.jsonl", out, sizeof out);
    cli_run_t r = cli_run("sweep", FUZZ_DIR "/grid.json", "--out", out, "--resume", "--quiet", NULL);
    expect_one_line(&r, 0, NULL);
    assert_int_equal(cli_run_lines(r.err), 1); /* the warning, and nothing else */
    assert_non_null(strstr(r.err, "cut a torn last line (1395 bytes); its point runs again"));
    size_t len = 0;
    char *text = sweep_read_file(out, &len);
    assert_non_null(text);
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    assert_int_equal(lines, 2);
    assert_int_equal(text[len - 1], '\n');
    assert_ptr_equal(strstr(text, "{\"id\":\"1ff5026384c98f5a\""), text); /* the cut point ran first */
    free(text);
    cli_run_free(&r);
    remove(out);
}

/* A grid option far outside int64_t ("top": 4e126) is refused, naming it; it was cast to int64_t before
 * its range was checked (undefined behaviour). */
static void test_grid_option_out_of_range(void **state) {
    (void)state;
    char out[256];
    sweep_scratch(out, sizeof out, "top.jsonl");
    cli_run_t r = cli_run("sweep", FUZZ_DIR "/grid/top_out_of_range.json", "--out", out, NULL);
    expect_one_line(
        &r, 2, "top_out_of_range.json: options.top: 3.9999999999999997e+126; allowed: an integer 1..1000000");
    assert_int_equal(access(out, F_OK), -1); /* no output file */
    cli_run_free(&r);
}

/* A Chakra ET whose metadata names a process group "pg_ranks:\n" with a rank beyond the workload: the
 * error line printed the name's newline (two lines on stderr); control characters now print as '?'. */
static void test_chakra_newline_in_name(void **state) {
    (void)state;
    cli_run_t r = cli_run("run", "--workload", FUZZ_DIR "/chakra/newline_in_name", NULL);
    expect_one_line(&r, 2, "newline_in_name.0.et: metadata: pg_ranks:?: 1: not a rank (0..0)");
    cli_run_free(&r);
}

/* Two ranks whose files hold only a GlobalMetadata record: the whole read offset a NULL node array
 * by zero (UBSan, in the fifth chakra run; traces.chakra_errors reads empty ranks around a full one).
 * Read one rank at a time and run: no node, a step of 0 s. */
static void test_chakra_meta_only(void **state) {
    (void)state;
    cli_run_t r = cli_run("run", "--workload", FUZZ_DIR "/chakra/meta_only", "--json", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "\"ranks\":\t2"));
    assert_non_null(strstr(r.out, "\"nodes\":\t0"));
    assert_non_null(strstr(r.out, "\"step_time_s\":\t0,"));
    cli_run_free(&r);
}

/* A measured run with a sequence of 2 x 10^12 tokens: the GEMM's tile count overflowed int64_t
 * (UBSan, in the measured target); the counts are now taken in doubles. The prediction is absurd but
 * honest: finite, positive, and no faster than the GPU's peak (312 TFLOP/s BF16 on the A100, 989.4
 * on the H100; the H100's GEMM time goes through the tiles and waves, the A100's through the flat
 * rule). */
static void test_measured_huge_seq_len(void **state) {
    (void)state;
    cli_run_t r = cli_run("validate", "--measured", FUZZ_DIR "/measured/huge_seq_len.csv", "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *doc = cJSON_Parse(r.out);
    assert_non_null(doc);
    const cJSON *rows = cJSON_GetObjectItem(doc, "rows");
    assert_int_equal(cJSON_GetArraySize(rows), 2);
    const double peak[2] = {312.0, 989.4};
    for (int i = 0; i < 2; i++) {
        const cJSON *row = cJSON_GetArrayItem(rows, i);
        const double t = cJSON_GetNumberValue(cJSON_GetObjectItem(row, "predicted_s"));
        const double tf = cJSON_GetNumberValue(cJSON_GetObjectItem(row, "model_tflops_per_gpu"));
        assert_true(isfinite(t) && t > 1e15);
        assert_true(tf > 0.0 && tf <= peak[i]);
    }
    cJSON_Delete(doc);
    cli_run_free(&r);
}

/* A row of 88,888,888,848 layers: the distributed optimizer's bucket walk ran for minutes (a
 * libFuzzer timeout in the measured target). The model now refuses more than MODEL_MAX_LAYERS. */
static void test_measured_too_many_layers(void **state) {
    (void)state;
    cli_run_t r = cli_run("validate", "--measured", FUZZ_DIR "/measured/layers_88e9.csv", NULL);
    expect_one_line(&r, 2, "row 2 (huge-seq-h100): column layers: \"88888888848\" must be at most 100000");
    assert_string_equal(r.out, "");
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_journal_torn_line_only), cmocka_unit_test(test_grid_option_out_of_range),
        cmocka_unit_test(test_chakra_newline_in_name), cmocka_unit_test(test_chakra_meta_only),
        cmocka_unit_test(test_measured_huge_seq_len),  cmocka_unit_test(test_measured_too_many_layers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
