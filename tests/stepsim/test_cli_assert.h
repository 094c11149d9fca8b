/* test_cli_assert.h - cmocka checks over test_cli_run.h's in-process runs, shared by the command
 * tests: a bad invocation gives one stderr line with the expected fragments and an empty stdout; a
 * good one gives one JSON object. Include after <cmocka.h>, cJSON and "test_cli_run.h". */
#ifndef STEPSIM_TEST_CLI_ASSERT_H
#define STEPSIM_TEST_CLI_ASSERT_H

/* argv (n arguments) exits with rc, prints nothing on stdout and one stderr line holding every
 * non-NULL fragment of frags[0..n_frags). name labels the case in failure messages. */
static inline void cli_expect_error(const char *name, const char *const *argv, int n, int rc,
                                    const char *const *frags, int n_frags) {
    cli_run_t r = cli_run_argv(n, argv);
    if (r.rc != rc || r.out[0] || cli_run_lines(r.err) != 1)
        fprintf(stderr, "case %s: rc %d, stdout \"%s\", stderr \"%s\"\n", name, r.rc, r.out, r.err);
    assert_int_equal(r.rc, rc);
    assert_string_equal(r.out, "");
    assert_int_equal(cli_run_lines(r.err), 1);
    for (int k = 0; k < n_frags && frags[k]; k++) {
        if (!strstr(r.err, frags[k]))
            fprintf(stderr, "case %s: \"%s\" not in \"%s\"\n", name, frags[k], r.err);
        assert_non_null(strstr(r.err, frags[k]));
    }
    cli_run_free(&r);
}

/* argv succeeds with an empty stderr and one JSON document on stdout (caller deletes it). */
static inline cJSON *cli_run_json(const char *const *argv, int n) {
    cli_run_t r = cli_run_argv(n, argv);
    if (r.rc != 0)
        fprintf(stderr, "stderr: %s\n", r.err);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    cJSON *doc = cJSON_Parse(r.out);
    assert_non_null(doc);
    cli_run_free(&r);
    return doc;
}

/* The number / string member key of o, asserting its type. */
static inline double cli_json_num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static inline const char *cli_json_str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    assert_true(cJSON_IsString(v));
    return v->valuestring;
}

#endif
