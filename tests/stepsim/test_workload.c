/* stepsim/test_workload.c - `stepsim run --workload` and `--export-et` (Chakra execution traces, in
 * process through cli_main): ASTRA-sim's own all-reduce microbenchmark ETs (1 GiB, 64 ranks) on a
 * switch of matching bandwidth and latency give the ring's closed form and what `stepsim collective`
 * gives; a step exported and imported again gives the same step time and the same Chrome trace
 * timeline (every slice, arrow and link counter; the arguments a trace does not carry and the
 * memory counters aside); --compute model prices compute nodes by the roofline; bad input is one
 * line and exit 2; a write that fails (a file size limit) while the next rank is being made is
 * reported as one line, exit 1, and leaves no file. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "step.h"
#include "test_cli_run.h"
#include "trace_chakra.h"

#define ASTRA STEPSIM_DATA_DIR "/chakra/astra-sim/all_reduce/64npus_1024MB"
/* a one-switch network of 50 GB/s links of 0.25 us each way, one GPU per node (ASTRA-sim's
 * analytical Switch of the same bandwidth and latency) */
#define SWITCH                                                                                               \
    "{\"kind\":\"ideal\",\"gpus_per_node\":1,\"nics_per_node\":1,\"link_bandwidth_bytes_per_s\":50e9,"       \
    "\"link_latency_s\":0.25e-6}"
#define SWITCH64                                                                                             \
    "{\"kind\":\"ideal\",\"gpus\":64,\"gpus_per_node\":1,\"nics_per_node\":1,"                               \
    "\"link_bandwidth_bytes_per_s\":50e9,\"link_latency_s\":0.25e-6}"

static double json_number(const char *text, const char *path) {
    cJSON *doc = cJSON_Parse(text);
    if (!doc)
        fail_msg("not JSON: %.200s", text);
    cJSON *x = doc;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = strtok(buf, "."); p && x; p = strtok(NULL, "."))
        x = cJSON_IsArray(x) ? cJSON_GetArrayItem(x, atoi(p)) : cJSON_GetObjectItemCaseSensitive(x, p);
    if (!cJSON_IsNumber(x))
        fail_msg("no number at %s", path);
    const double v = x->valuedouble;
    cJSON_Delete(doc);
    return v;
}

static void test_astra_allreduce(void **state) {
    (void)state;
    cli_run_t r = cli_run("run", "--workload", ASTRA, "--nvs", "1", "--topology", SWITCH, "--calibration",
                          "none", "--quiet", "--json", NULL);
    if (r.rc)
        fail_msg("%s", r.err);
    const double t = json_number(r.out, "step_time_s");
    assert_int_equal((int)json_number(r.out, "workload.ranks"), 64);
    cli_run_free(&r);
    /* the ring: 2 (n - 1) steps of S / n bytes, each crossing two links */
    const double S = 1024.0 * 1024 * 1024, ring = 2.0 * 63 * (S / 64 / 50e9 + 2 * 0.25e-6);
    assert_true(fabs(t - ring) <= 1e-3 * ring);
    assert_true(fabs(t - ring) <= 1e-9 * ring); /* and in fact exactly, without NCCL's calibration */
    r = cli_run("collective", "--op", "allreduce", "--size", "1G", "--topology", SWITCH64, "--calibration",
                "none", "--json", NULL);
    if (r.rc)
        fail_msg("%s", r.err);
    assert_true(fabs(t - json_number(r.out, "results.0.time_s")) <= 1e-9 * t);
    cli_run_free(&r);
    /* NCCL's calibration on the scenario's ideal network (8 GPUs per NVLink domain): as `stepsim
     * collective` with the step's one channel */
    r = cli_run("run", "--workload", ASTRA, "--quiet", "--json", NULL);
    if (r.rc)
        fail_msg("%s", r.err);
    const double tn = json_number(r.out, "step_time_s");
    cli_run_free(&r);
    r = cli_run("collective", "--op", "allreduce", "--size", "1G", "--gpus", "64", "--channels", "1",
                "--json", NULL);
    if (r.rc)
        fail_msg("%s", r.err);
    assert_true(fabs(tn - json_number(r.out, "results.0.time_s")) <= 1e-9 * tn);
    cli_run_free(&r);
}

/* The trace's lines without memory counters and without the slices' arguments (a workload carries
 * no pass, microbatch, stage or layer), and without the last line (the metadata: the scenario). */
static char **trace_lines(const char *path, int *n) {
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int cap = 1024;
    char **v = malloc((size_t)cap * sizeof *v);
    char *line = NULL;
    size_t size = 0;
    *n = 0;
    while (getline(&line, &size, f) > 0) {
        if (strstr(line, "\"ph\":\"C\"") && strstr(line, "memory_gb"))
            continue;
        char *args = strstr(line, ",\"args\":");
        if (strstr(line, "\"ph\":\"B\"") && args)
            *args = '\0';
        if (*n == cap)
            v = realloc(v, (size_t)(cap *= 2) * sizeof *v);
        v[(*n)++] = strdup(line);
    }
    free(line);
    fclose(f);
    return v;
}

static void free_lines(char **v, int n) {
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void test_roundtrip(void **state) {
    (void)state;
    char dir[] = "/tmp/stepsim_wl_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char et[300], ta[300], tb[300];
    snprintf(et, sizeof et, "%s/et", dir);
    snprintf(ta, sizeof ta, "%s/a.json", dir);
    snprintf(tb, sizeof tb, "%s/b.json", dir);
    /* gpt3_1T (the default model) on 16 GPUs, every GPU simulated */
    cli_run_t r = cli_run("run", "--gpus", "16", "--tp", "4", "--pp", "2", "--dp", "2", "--gbs", "4",
                          "--collapse", "off", "--export-et", et, "--trace", ta, "--quiet", "--json", NULL);
    if (r.rc)
        fail_msg("%s", r.err);
    const double t = json_number(r.out, "step_time_s");
    const double ops = json_number(r.out, "simulation.operations");
    assert_int_equal((int)json_number(r.out, "export_et.ranks"), 16);
    assert_true(json_number(r.out, "export_et.nodes") == ops);
    cli_run_free(&r);
    r = cli_run("run", "--workload", et, "--trace", tb, "--quiet", "--json", NULL);
    if (r.rc)
        fail_msg("%s", r.err);
    assert_true(fabs(json_number(r.out, "step_time_s") - t) <= 1e-9 * t);
    assert_true(json_number(r.out, "simulation.operations") == ops);
    cli_run_free(&r);
    int na, nb;
    char **a = trace_lines(ta, &na), **b = trace_lines(tb, &nb);
    assert_int_equal(na, nb);
    for (int i = 0; i + 1 < na; i++)
        if (strcmp(a[i], b[i]) != 0)
            fail_msg("trace line %d: %.200s against %.200s", i, a[i], b[i]);
    free_lines(a, na);
    free_lines(b, nb);
    /* a collapsed step is not exported */
    r = cli_run("run", "--gpus", "16", "--tp", "4", "--pp", "2", "--dp", "2", "--gbs", "4", "--export-et", et,
                NULL);
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "--export-et: needs every GPU simulated"));
    assert_int_equal(cli_run_lines(r.err), 1);
    cli_run_free(&r);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* --compute model: a node with FLOPs and bytes and no duration, written as a Chakra trace. */
static void test_compute_model(void **state) {
    (void)state;
    char dir[] = "/tmp/stepsim_wlm_XXXXXX";
    assert_non_null(mkdtemp(dir));
    step_wl_node_t nodes[2];
    memset(nodes, 0, sizeof nodes);
    for (int r = 0; r < 2; r++) {
        nodes[r].id = 1;
        nodes[r].kind = STEP_WL_COMPUTE;
        nodes[r].name = 1; /* "gemm" in the name table below */
        nodes[r].duration_s = -1.0;
        nodes[r].flops = r ? 2e15 : 1e15;
        nodes[r].mem_bytes = 1e9;
        nodes[r].peer = -1;
        nodes[r].group = -1;
        nodes[r].start_hint_s = -1;
    }
    int64_t off[3] = {0, 1, 2};
    int64_t name_offset[2] = {0, 1};
    char name_chars[] = "\0gemm";
    step_workload_t w = {.n_ranks = 2,
                         .rank_nodes_offset = off,
                         .nodes = nodes,
                         .n_names = 2,
                         .name_offset = name_offset,
                         .name_chars = name_chars};
    char err[300];
    if (trace_chakra_write(dir, "gemm", &w, err, sizeof err) != TRACE_OK)
        fail_msg("%s", err);
    cli_run_t r = cli_run("run", "--workload", dir, "--compute", "model", "--quiet", "--json", NULL);
    if (r.rc)
        fail_msg("%s", r.err);
    model_system_t sys;
    assert_int_equal(model_system_preset("A100", &sys), MODEL_OK);
    const double want = sys.kernel_overhead_s + 2e15 / (sys.flop_efficiency * sys.matrix_tflop_per_s * 1e12);
    assert_true(fabs(json_number(r.out, "step_time_s") - want) <= 1e-9 * want);
    cli_run_free(&r);
    /* --compute trace: the nodes have no duration */
    r = cli_run("run", "--workload", dir, "--quiet", NULL);
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err, "node 1: duration_s unknown"));
    assert_int_equal(cli_run_lines(r.err), 1);
    cli_run_free(&r);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void expect_usage(const char *part, const char *first, ...) {
    const char *args[CLI_RUN_MAX_ARGS];
    int n = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && n < CLI_RUN_MAX_ARGS; a = va_arg(ap, const char *))
        args[n++] = a;
    va_end(ap);
    cli_run_t r = cli_run_argv(n, args);
    assert_int_equal(r.rc, 2);
    if (!strstr(r.err, part))
        fail_msg("\"%s\" lacks \"%s\"", r.err, part);
    assert_int_equal(cli_run_lines(r.err), 1);
    assert_string_equal(r.out, "");
    cli_run_free(&r);
}

static void test_errors(void **state) {
    (void)state;
    expect_usage("--compute: given without --workload", "run", "--compute", "model", NULL);
    expect_usage("--compute: \"roofline\" is not allowed", "run", "--workload", ASTRA, "--compute",
                 "roofline", NULL);
    expect_usage("--workload /nonexistent/et", "run", "--workload", "/nonexistent/et", NULL);
    expect_usage("--layers: not with --workload", "run", "--workload", ASTRA, "--layers", NULL);
    /* more ranks than the topology has GPUs */
    expect_usage("gpus: 64 exceeds the 8 GPUs the topology holds", "run", "--workload", ASTRA, "--nvs", "1",
                 "--topology", "{\"kind\":\"fat-tree\",\"tiers\":2,\"k\":4}", NULL);
    /* a truncated trace names its file */
    char dir[] = "/tmp/stepsim_wle_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[300];
    snprintf(path, sizeof path, "%s/bad.0.et", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("\x7f\x01", f);
    fclose(f);
    expect_usage("bad.0.et", "run", "--workload", dir, NULL);
    unlink(path);
    rmdir(dir);
}

/* The export writes rank r on a thread while it makes rank r + 1: a write that fails there (here a
 * 16 KiB file size limit, each rank's file being about 200 KiB) is the error reported, exit 1 in one
 * line naming the file, and nothing is left in the directory (the temporary files removed). Run in a
 * forked child, which alone carries the limit. */
static void test_export_write_fails(void **state) {
    (void)state;
    char dir[] = "/tmp/stepsim_wlf_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char et[300];
    snprintf(et, sizeof et, "%s/et", dir);
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        const struct rlimit lim = {16384, 16384};
        if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
            _exit(3);
        cli_run_t r = cli_run("run", "--gpus", "16", "--tp", "4", "--pp", "2", "--dp", "2", "--gbs", "4",
                              "--collapse", "off", "--export-et", et, "--quiet", NULL);
        const int ok = r.rc == 1 && cli_run_lines(r.err) == 1 && strstr(r.err, "--export-et ") &&
                       strstr(r.err, "stepsim.0.et") && strstr(r.err, "File too large");
        if (!ok)
            fprintf(stderr, "exit %d, stderr: %s\n", r.rc, r.err);
        cli_run_free(&r);
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        ;
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    DIR *d = opendir(et);
    int left = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        left += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d)
        closedir(d);
    assert_int_equal(left, 0);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_astra_allreduce),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_export_write_fails),
        cmocka_unit_test(test_compute_model),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
