/* stepsim/test_sweep_shard.c - --shard I/N shares partition the grid exactly: disjoint, and together the
 * lines of a whole run; shard I holds the points whose number is I modulo N. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sweep_test_util.h"
#include "test_cli_run.h"

static void run(const char *out, const char *shard) {
    remove(out);
    cli_run_t r = shard ? cli_run("sweep", "@sweep/small_search.json", "--out", out, "--shard", shard, NULL)
                        : cli_run("sweep", "@sweep/small_search.json", "--out", out, NULL);
    if (r.rc != 0)
        fail_msg("shard %s: rc %d: %s", shard ? shard : "-", r.rc, r.err);
    cli_run_free(&r);
}

static void shares_partition(void **state) {
    (void)state;
    char whole[128], joined[128];
    sweep_scratch(whole, sizeof whole, "whole.jsonl");
    sweep_scratch(joined, sizeof joined, "joined.jsonl");
    run(whole, NULL);
    char *all = sweep_read_file(whole, NULL);
    for (int n = 1; n <= 4; n++) {
        char *cat = calloc(1, 1);
        size_t cat_len = 0, total = 0;
        for (int i = 0; i < n; i++) {
            char out[128], shard[16], name[32];
            snprintf(name, sizeof name, "shard%d-%d.jsonl", i, n);
            snprintf(shard, sizeof shard, "%d/%d", i, n);
            sweep_scratch(out, sizeof out, name);
            run(out, shard);
            size_t len = 0;
            char *text = sweep_read_file(out, &len);
            /* In a serial run the lines come in point order: shard i's k-th line is whole line i + k*n. */
            size_t lines = 0;
            for (size_t c = 0; c < len; c++)
                lines += text[c] == '\n';
            total += lines;
            char *bigger = realloc(cat, cat_len + len + 1);
            assert_non_null(bigger);
            cat = bigger;
            memcpy(cat + cat_len, text, len + 1);
            cat_len += len;
            const char *w = all;
            for (int k = 0; *w; k++) {
                const char *nl = strchr(w, '\n');
                if (k % n == i) {
                    size_t l = (size_t)(nl - w) + 1;
                    if (strncmp(text, w, l) != 0)
                        fail_msg("shard %s: line for point %d differs", shard, k);
                    memmove(text, text + l, strlen(text + l) + 1);
                }
                w = nl + 1;
            }
            assert_string_equal(text, ""); /* nothing else in the shard */
            free(text);
            remove(out);
        }
        assert_int_equal(total, 10);
        sweep_write_file(joined, cat, cat_len);
        assert_true(sweep_same_line_sets(whole, joined));
        size_t lines = 0, ids = 0;
        sweep_count_ids(joined, &lines, &ids);
        assert_int_equal(ids, lines); /* disjoint */
        free(cat);
    }
    free(all);
    remove(whole);
    remove(joined);
}

/* Shards of an empty share (more shards than points) are fine: no lines, exit 0. */
static void more_shards_than_points(void **state) {
    (void)state;
    char out[128];
    sweep_scratch(out, sizeof out, "empty-shard.jsonl");
    run(out, "11/12");
    size_t len = 99;
    char *text = sweep_read_file(out, &len);
    assert_int_equal(len, 0);
    free(text);
    remove(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shares_partition),
        cmocka_unit_test(more_shards_than_points),
    };
    return cmocka_run_group_tests_name("stepsim.sweep_shard", tests, NULL, NULL);
}
