/* stepsim/test_nvls.c - NVLink SHARP through `stepsim collective` (docs/what-if.md, "In-network
 * reductions"): the acceptance on one DGX H100 node (NVLS allreduce bus bandwidth at 4 GiB within 10%
 * of the ~480 GB/s NVIDIA's NCCL maintainers quote for 8 x H100, nccl-tests issue #212, and faster
 * than the ring's ~370), the fit over group sizes against NCCL issue #1455 (NVLS 370 GB/s at 4 GPUs
 * up to 480 at 8), auto's choice (NVLS for allreduce, the ring for allgather, nothing new with --nvls
 * off or on A100), a B200 node, InfiniBand SHARP (collnet: off unless asked, as NCCL; on with
 * --collnet on or --algo collnet, InfiniBand only), and the refusals: exit 2 and one line naming the
 * option, the value and why. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "test_cli_run.h"
#include "test_cli_assert.h"

/* One size on `gpus` GPUs of one node of `preset`: the result row. */
typedef struct row {
    double busbw_gb_s, time_s, closed_form_s;
    char algo[32];
} row_t;

static row_t run_row(const char *preset, const char *gpus, const char *op, const char *algo, const char *size,
                     const char *extra) {
    const char *argv[16] = {"collective", "--topology", preset, "--gpus", gpus, "--op",
                            op,           "--algo",     algo,   "--size", size, "--json"};
    int n = 12;
    if (extra && strncmp(extra, "collnet-", 8) == 0) {
        argv[n++] = "--collnet";
        argv[n++] = extra + 8;
    } else if (extra) {
        argv[n++] = "--nvls";
        argv[n++] = extra;
    }
    cJSON *doc = cli_run_json(argv, n);
    const cJSON *res = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "results"), 0);
    assert_non_null(res);
    row_t r = {cli_json_num(res, "busbw_bytes_per_s") / 1e9, cli_json_num(res, "time_s"),
               cli_json_num(res, "closed_form_s"), ""};
    snprintf(r.algo, sizeof r.algo, "%s", cli_json_str(res, "algo"));
    cJSON_Delete(doc);
    return r;
}

#define H100 "dgx-h100-superpod"

static void test_h100_acceptance(void **state) {
    (void)state;
    const row_t nvls = run_row(H100, "8", "allreduce", "nvls", "4G", NULL);
    const row_t ring = run_row(H100, "8", "allreduce", "ring", "4G", NULL);
    const row_t dflt = run_row(H100, "8", "allreduce", "auto", "4G", NULL);
    print_message("8 x H100, allreduce 4 GiB: nvls %.1f GB/s, ring %.1f GB/s, auto %s\n", nvls.busbw_gb_s,
                  ring.busbw_gb_s, dflt.algo);
    assert_true(fabs(nvls.busbw_gb_s / 480.0 - 1.0) <= 0.10);
    assert_true(fabs(ring.busbw_gb_s / 370.0 - 1.0) <= 0.10);
    assert_true(nvls.busbw_gb_s > ring.busbw_gb_s);
    assert_string_equal(nvls.algo, "nvls");
    assert_string_equal(dflt.algo, "nvls");
    assert_true(dflt.time_s == nvls.time_s);
    assert_true(fabs(nvls.time_s / nvls.closed_form_s - 1.0) < 1e-9);
    /* --nvls off: auto as before NVLS */
    assert_string_equal(run_row(H100, "8", "allreduce", "auto", "4G", "off").algo, "ring");
    /* allgather: NVLS moves M into every GPU against the ring's (n - 1) / n M: the ring stays */
    assert_string_equal(run_row(H100, "8", "allgather", "auto", "4G", NULL).algo, "ring");
    assert_true(run_row(H100, "8", "allgather", "nvls", "4G", NULL).busbw_gb_s <
                run_row(H100, "8", "allgather", "ring", "4G", NULL).busbw_gb_s);
}

/* NCCL issue #1455 (8 x H100, 2-4 GB): NVLS ~370 GB/s up to 4 GPUs, ~420 / 440 / 460 / 480 at 5 to 8;
 * the switch's (n + 1) / n per link against the ring's 2 (n - 1) / n gives 2 (n - 1) / (n + 1) of the
 * link: 378, 420, 450, 473, 490. */
static void test_h100_group_sizes(void **state) {
    (void)state;
    static const char *const gpus[] = {"4", "5", "6", "7", "8"};
    static const double measured[] = {370, 420, 440, 460, 480};
    for (int i = 0; i < 5; i++) {
        const row_t r = run_row(H100, gpus[i], "allreduce", "nvls", "4G", NULL);
        print_message("%s GPUs: %.1f GB/s (reported %.0f)\n", gpus[i], r.busbw_gb_s, measured[i]);
        assert_true(fabs(r.busbw_gb_s / measured[i] - 1.0) <= 0.05);
    }
}

/* A100: no NVLink SHARP, auto unchanged (ring or tree), explicit nvls refused. */
static void test_a100_and_b200(void **state) {
    (void)state;
    assert_true(strcmp(run_row("dgx-a100-superpod", "8", "allreduce", "auto", "4G", NULL).algo, "nvls") != 0);
    const char *a100[] = {"collective", "--topology", "dgx-a100-superpod", "--gpus", "8", "--algo", "nvls"};
    const char *frags[] = {"--algo: nvls needs NVLink SHARP", "nvlink3", "allowed:"};
    cli_expect_error("a100", a100, 7, 2, frags, 3);
    /* B200: NCCL's Blackwell nvlsEfficiency 0.74 still beats the ring at 8 GPUs */
    const row_t nv = run_row("dgx-b200-superpod", "8", "allreduce", "nvls", "4G", NULL),
                ring = run_row("dgx-b200-superpod", "8", "allreduce", "ring", "4G", NULL);
    assert_true(nv.busbw_gb_s > ring.busbw_gb_s);
    assert_string_equal(run_row("dgx-b200-superpod", "8", "allreduce", "auto", "4G", NULL).algo, "nvls");
    /* across nodes: not a candidate of auto (NCCL needs CollNet for NVLS across nodes) */
    assert_true(strcmp(run_row(H100, "16", "allreduce", "auto", "4G", NULL).algo, "nvls") != 0);
}

/* 8 DGX H100 nodes: CollNet only when asked (NCCL: its SHARP plugin and NCCL_COLLNET_ENABLE=1), and
 * then auto takes it for large allreduces; its time is its closed form on the idle fabric. */
static void test_collnet(void **state) {
    (void)state;
    const row_t dflt = run_row(H100, "64", "allreduce", "auto", "4G", NULL),
                on = run_row(H100, "64", "allreduce", "auto", "4G", "collnet-on"),
                forced = run_row(H100, "64", "allreduce", "collnet", "4G", NULL);
    print_message("64 x H100, allreduce 4 GiB: auto %s %.1f GB/s, --collnet on: %s %.1f GB/s\n", dflt.algo,
                  dflt.busbw_gb_s, on.algo, on.busbw_gb_s);
    assert_true(strcmp(dflt.algo, "collnet") != 0);
    assert_string_equal(on.algo, "collnet");
    assert_string_equal(forced.algo, "collnet");
    assert_true(on.busbw_gb_s > dflt.busbw_gb_s);
    assert_true(fabs(forced.time_s / forced.closed_form_s - 1.0) < 1e-9);
    const char *sling[] = {"collective", "--topology", "perlmutter", "--gpus", "16", "--algo", "collnet"};
    const char *f1[] = {"--algo: collnet needs InfiniBand SHARP", "slingshot11", "allowed:"};
    cli_expect_error("slingshot", sling, 7, 2, f1, 3);
    const char *sling2[] = {"collective", "--topology", "perlmutter", "--gpus", "16", "--collnet", "on"};
    const char *f2[] = {"--collnet: collnet needs InfiniBand SHARP", "slingshot11"};
    cli_expect_error("slingshot_on", sling2, 7, 2, f2, 2);
    const char *one[] = {"collective", "--topology", H100, "--gpus", "8", "--algo", "collnet"};
    const char *f3[] = {"--algo: collnet runs across nodes", "8 GPUs", "allowed:"};
    cli_expect_error("one_node", one, 7, 2, f3, 3);
    const char *off[] = {"collective", "--topology", H100,        "--gpus", "16",
                         "--algo",     "collnet",    "--collnet", "off"};
    const char *f4[] = {"--algo: collnet with --collnet off"};
    cli_expect_error("collnet_off", off, 9, 2, f4, 1);
    const char *ag[] = {"collective", "--topology", H100,     "--gpus", "16",
                        "--op",       "allgather",  "--algo", "collnet"};
    const char *f5[] = {"--algo: collnet applies to allreduce only"};
    cli_expect_error("collnet_ag", ag, 9, 2, f5, 1);
}

static void test_refusals(void **state) {
    (void)state;
    const char *across[] = {"collective", "--topology", H100, "--gpus", "16", "--algo", "nvls"};
    const char *f1[] = {"--algo: nvls runs inside one NVLink domain", "16 GPUs", "allowed:"};
    cli_expect_error("across", across, 7, 2, f1, 3);
    const char *ll[] = {"collective", "--topology", H100, "--gpus", "8", "--algo", "nvls", "--proto", "ll"};
    const char *f2[] = {"--proto: ll with --algo nvls", "allowed: simple or auto"};
    cli_expect_error("ll", ll, 9, 2, f2, 2);
    const char *off[] = {"collective", "--topology", H100, "--gpus", "8", "--algo", "nvls", "--nvls", "off"};
    const char *f3[] = {"--algo: nvls with --nvls off", "allowed:"};
    cli_expect_error("off", off, 9, 2, f3, 2);
    const char *bad[] = {"collective", "--topology", H100, "--nvls", "no"};
    const char *f4[] = {"--nvls: \"no\"", "allowed: on, off"};
    cli_expect_error("bad", bad, 5, 2, f4, 2);
    const char *bcast[] = {"collective", "--topology", H100,     "--gpus", "8",
                           "--op",       "broadcast",  "--algo", "nvls"};
    const char *f5[] = {"--algo: nvls applies to allreduce, allgather and reducescatter"};
    cli_expect_error("broadcast", bcast, 9, 2, f5, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h100_acceptance), cmocka_unit_test(test_h100_group_sizes),
        cmocka_unit_test(test_a100_and_b200),   cmocka_unit_test(test_collnet),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
