/* stepsim/test_results_finite.c - a result that is not finite is an error, and no time saturates or
 * wraps the picosecond clock.
 *
 * A system rate so small that a time overflows the double range (vector_flops_fp16 1e-310 TFLOP/s)
 * used to print "iteration_time_s": null in JSON and exit 0; every command that computes a time now
 * exits 1 with one line naming the value and the system field behind it. A link so slow that a
 * flow would end past the clock's end (about 107 days) used to end at INT64_MAX - 1 ps; now the
 * collective exits 2 saying so. A huge link latency used to wrap the route sum and make the
 * collective faster than with 1 us links; it is refused (test_cli_errors), and at the bound (1 s)
 * the collective is slower than with the default latency, never faster.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_cli_run.h"

#define TINY_VECTOR "{\"base\": \"A100\", \"vector_flops_fp16\": 1e-310}"
#define TINY_MATRIX "{\"base\": \"A100\", \"matrix_flops_fp16\": 1e-307}"

typedef struct finite_case {
    const char *name;
    const char *args[12]; /* NULL-terminated */
    int rc;
    const char *frag[3];
} finite_case_t;

static const finite_case_t CASES[] = {
    {"estimate_tiny_vector",
     {"estimate", "--model", "gpt3", "--gpus", "64", "--system", TINY_VECTOR, "--json"},
     1,
     {"iteration time is not finite", "system.vector_flops_fp16 1e-310 TFLOP/s"}},
    {"estimate_tiny_matrix_text",
     {"estimate", "--model", "gpt3", "--gpus", "64", "--system", TINY_MATRIX},
     1,
     {"is not finite", "system.matrix_flops_fp16 1e-307 TFLOP/s"}},
    {"estimate_tiny_hbm",
     {"estimate", "--model", "gpt3", "--gpus", "64", "--system",
      "{\"base\": \"A100\", \"hbm_bandwidth\": 1e-310}", "--json"},
     1,
     {"is not finite", "system.hbm_bandwidth 1e-310 GB/s"}},
    {"estimate_tiny_nvlink",
     {"estimate", "--model", "gpt3", "--gpus", "64", "--system",
      "{\"base\": \"A100\", \"nvlink_bandwidth\": 1e-310}", "--json"},
     1,
     {"is not finite", "system.nvlink_bandwidth 1e-310 GB/s"}},
    {"search_tiny_vector",
     {"search", "--model", "gpt3", "--gpus", "64", "--system", TINY_VECTOR, "--json"},
     1,
     {"search: iteration time of layout 0 is not finite", "system.vector_flops_fp16 1e-310"}},
    {"run_tiny_vector",
     {"run", "--model", "gpt3", "--gpus", "64", "--system", TINY_VECTOR, "--json"},
     1,
     {"closed form: iteration time is not finite", "system.vector_flops_fp16 1e-310"}},
    {"compare_tiny_vector",
     {"compare", "--model", "gpt3", "--gpus", "64", "--system", TINY_VECTOR, "--json"},
     1,
     {"closed form: iteration time is not finite", "system.vector_flops_fp16 1e-310"}},
    {"validate_waterfall_tiny_vector",
     {"validate", "--model", "gpt3", "--gpus", "64", "--system", TINY_VECTOR, "--json"},
     1,
     {"analytic estimate: iteration time is not finite", "system.vector_flops_fp16 1e-310"}},
    {"collective_clock_end",
     {"collective", "--gpus", "8", "--topology",
      "{\"kind\": \"fat-tree\", \"k\": 4, \"link_bandwidth_bytes_per_s\": 1e-300}", "--json"},
     2,
     {"clock's end", "9.223e+06 s"}},
    /* a finite closed-form step past the clock: refused before simulating, with the bound and the cause
     * (it used to fail inside the engine on one operation's duration) */
    {"run_step_past_clock",
     {"run", "--model", "gpt3", "--gpus", "64", "--system",
      "{\"base\": \"A100\", \"matrix_flops_fp16\": 1e-6}"},
     2,
     {"s is past the simulator's clock (system.matrix_flops_fp16 1e-06 TFLOP/s)",
      "system.matrix_flops_fp16 1e-06 TFLOP/s", "allowed: a step of at most 9e+06 s"}},
    {"compare_step_past_clock",
     {"compare", "--model", "gpt3", "--gpus", "64", "--system",
      "{\"base\": \"A100\", \"hbm_bandwidth\": 1e-9}"},
     2,
     {"past the simulator's clock", "system.hbm_bandwidth 1e-09 GB/s", "at most 9e+06 s"}},
    {"validate_step_past_clock",
     {"validate", "--model", "gpt3", "--gpus", "64", "--system",
      "{\"base\": \"A100\", \"matrix_flops_fp16\": 1e-6}"},
     2,
     {"past the simulator's clock", "system.matrix_flops_fp16 1e-06 TFLOP/s"}},
    /* 2^31 chunks of 512 KiB: the step count used to be cut to int32, and 1 PiB took 50 us */
    {"collective_chunks_past_int32",
     {"collective", "--gpus", "8", "--op", "broadcast", "--algo", "chain", "--size", "1048576G", "--topology",
      "fat-tree"},
     2,
     {"size_bytes 1.1259e+15 in chunks of 524288 bytes makes more than 2147483647 steps"}},
};

static void run_case(void **state) {
    const finite_case_t *c = *state;
    int argc = 0;
    while (argc < 12 && c->args[argc])
        argc++;
    cli_run_t r = cli_run_argv(argc, c->args);
    print_message("case %s: rc %d, stderr: %s", c->name, r.rc, r.err);
    assert_int_equal(r.rc, c->rc);
    assert_string_equal(r.out, "");
    assert_int_equal(cli_run_lines(r.err), 1);
    assert_null(strstr(r.err, "null"));
    for (int i = 0; i < 3 && c->frag[i]; i++)
        if (!strstr(r.err, c->frag[i]))
            fail_msg("case %s: \"%s\" not in: %s", c->name, c->frag[i], r.err);
    cli_run_free(&r);
}

/* The first "time_s" of collective --json. */
static double collective_time_s(const char *latency) {
    char topo[160];
    snprintf(topo, sizeof topo, "{\"kind\": \"fat-tree\", \"k\": 4, \"link_latency_s\": %s}", latency);
    cli_run_t r = cli_run("collective", "--gpus", "8", "--size", "1M", "--topology", topo, "--json", NULL);
    assert_int_equal(r.rc, 0);
    const char *at = strstr(r.out, "\"time_s\":");
    assert_non_null(at);
    const double t = strtod(at + strlen("\"time_s\":"), NULL);
    cli_run_free(&r);
    return t;
}

/* Longer links never make the collective faster; at the bound the 2 (n-1) steps of an 8-GPU ring
 * each pay at least one 1 s link latency, so the time passes 14 s. */
static void latency_monotonic(void **state) {
    (void)state;
    const double t_us = collective_time_s("1e-6"), t_ms = collective_time_s("1e-3"),
                 t_s = collective_time_s("1");
    assert_true(t_us > 0);
    assert_true(t_ms > t_us);
    assert_true(t_s > t_ms);
    assert_true(t_s > 14.0);
}

int main(void) {
    enum { N = sizeof CASES / sizeof CASES[0] };
    struct CMUnitTest tests[N + 1];
    for (int i = 0; i < N; i++) {
        struct CMUnitTest t = {CASES[i].name, run_case, NULL, NULL, (void *)&CASES[i]};
        tests[i] = t;
    }
    tests[N] = (struct CMUnitTest)cmocka_unit_test(latency_monotonic);
    return _cmocka_run_group_tests("stepsim.results_finite", tests, N + 1, NULL, NULL);
}
