/* stepsim/test_jobs.c - `stepsim run` on scenarios with "jobs" (several jobs on one fabric):
 * - two identical jobs on the disjoint halves of a non-blocking fat-tree each take exactly the time
 *   of the job alone on its GPUs, and meet on no link; one job through the jobs path equals the
 *   plain `run` of the same job with every GPU simulated;
 * - two data-parallel jobs interleaved on a 4:1 tapered fat-tree: their only network traffic is one
 *   ring all-reduce each, which crosses every leaf's single uplink once per job, so max-min gives each
 *   half the uplink and the all-reduce takes exactly twice its alone time (the hand computation
 *   below); the slowdown follows;
 * - byte-identical output twice; a random allocation depends on the seed only;
 * - bad allocations exit 2 with one line naming the job, the field and the value;
 * - the trace groups each job's processes;
 * - compare gives, per topology, each job's time and slowdown: run's on that topology. */
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

#define NUM cli_json_num

static cJSON *run_json(const char *fixture, const char *extra) {
    const char *argv[] = {"run", fixture, "--json", extra};
    return cli_run_json(argv, extra ? 4 : 3);
}

static const cJSON *job(const cJSON *doc, int i) {
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(doc, "jobs");
    assert_true(cJSON_IsArray(jobs));
    return cJSON_GetArrayItem(jobs, i);
}

static void assert_rel(double got, double want, double tol) {
    if (!(fabs(got - want) <= tol * fabs(want)))
        fail_msg("%.12g, expected %.12g (relative tolerance %g)", got, want, tol);
}

static void test_halves(void **state) {
    (void)state;
    cJSON *d = run_json("@jobs/halves.json", NULL);
    for (int i = 0; i < 2; i++) {
        const cJSON *j = job(d, i);
        assert_rel(NUM(j, "step_time_s"), NUM(j, "alone_step_time_s"), 1e-9);
        assert_rel(NUM(j, "slowdown"), 1.0, 1e-9);
        assert_string_equal(cli_json_str(j, "topology_gpus"), i ? "32-63" : "0-31");
    }
    assert_rel(NUM(job(d, 0), "step_time_s"), NUM(job(d, 1), "step_time_s"), 1e-12);
    assert_int_equal((int)NUM(cJSON_GetObjectItemCaseSensitive(d, "links_met"), "count"), 0);
    /* one job through the jobs path is the plain run of that job, every GPU simulated */
    cJSON *one = run_json("@jobs/single.json", NULL);
    cJSON *plain = run_json("@jobs/single_plain.json", "--collapse=off");
    assert_rel(NUM(job(one, 0), "step_time_s"), NUM(plain, "step_time_s"), 1e-12);
    assert_rel(NUM(job(one, 0), "step_time_s"), NUM(job(d, 0), "step_time_s"), 1e-12);
    cJSON_Delete(plain);
    cJSON_Delete(one);
    cJSON_Delete(d);
}

/* The model's weights of one GPU (GB): the data-parallel all-reduce's buffer (dp_comm allreduce). */
static double weights_gb(void) {
    const char *argv[] = {"estimate",
                          "--model",
                          "{\"seq_len\": 1024, \"hidden\": 1024, \"heads\": 16, \"layers\": 4, "
                          "\"ffn_hidden\": 4096, \"vocab\": 50257}",
                          "--nvs",
                          "1",
                          "--gpus",
                          "8",
                          "--gbs",
                          "16",
                          "--tp",
                          "1",
                          "--pp",
                          "1",
                          "--dp",
                          "8",
                          "--json"};
    cJSON *e = cli_run_json(argv, (int)(sizeof argv / sizeof *argv));
    const double w = NUM(cJSON_GetObjectItemCaseSensitive(e, "memory_gb_parts"), "weights");
    cJSON_Delete(e);
    return w;
}

static void test_tapered(void **state) {
    (void)state;
    /* Hand computation. Each job is dp 8 (tp 1, pp 1, one GPU per node) with one all-reduce of its
     * gradients, G bytes, after the last backward: a ring over its 8 GPUs in rank order (the bare
     * flow model: --calibration none, links without latency). Alone it moves 2 (n - 1) chunks of
     * G / n through every ring link at the link rate B: AR = 2 (n - 1) / n G / B. Job a is spread
     * over even GPUs, b packed onto the odd ones; the 4 leaves hold 4 GPUs each and have one uplink
     * of B (4:1), so each job's ring crosses every leaf's uplink and downlink exactly once, and the
     * two rings, identical and simultaneous, are the only flows there: max-min gives each B / 2, so
     * the all-reduce takes 2 AR together, and nothing else changes (compute and optimizer step are
     * the same). Slowdown = (T_alone + AR) / T_alone. */
    const double n = 8.0, B = 25e9, G = weights_gb() * 1e9;
    const double ar = 2.0 * (n - 1.0) / n * G / B;
    cJSON *d = run_json("@jobs/tapered.json", "--calibration=none");
    for (int i = 0; i < 2; i++) {
        const cJSON *j = job(d, i);
        const double alone = NUM(j, "alone_step_time_s");
        assert_rel(NUM(cJSON_GetObjectItemCaseSensitive(j, "alone_breakdown_s"), "exposed_dp_comm"), ar,
                   1e-9);
        assert_rel(NUM(cJSON_GetObjectItemCaseSensitive(j, "breakdown_s"), "exposed_dp_comm"), 2.0 * ar,
                   1e-9);
        assert_true(NUM(j, "slowdown") > 1.0);
        assert_rel(NUM(j, "slowdown"), (alone + ar) / alone, 1e-9);
        assert_rel(NUM(j, "cost_s"), ar, 1e-9);
    }
    assert_string_equal(cli_json_str(job(d, 0), "topology_gpus"), "0,2,4,6,8,10,12,14");
    assert_string_equal(cli_json_str(job(d, 1), "topology_gpus"), "1,3,5,7,9,11,13,15");
    /* where they met: every leaf's uplink and downlink, each job carrying 2 (n - 1) chunks of G / n */
    const cJSON *met = cJSON_GetObjectItemCaseSensitive(d, "links_met");
    assert_int_equal((int)NUM(met, "count"), 8);
    const cJSON *busiest = cJSON_GetObjectItemCaseSensitive(met, "busiest");
    assert_int_equal(cJSON_GetArraySize(busiest), 5); /* --links' default */
    const cJSON *l;
    cJSON_ArrayForEach(l, busiest) {
        const char *name = cli_json_str(l, "link");
        assert_true(strstr(name, "leaf") && strstr(name, "spine"));
        const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(l, "bytes_by_job");
        const cJSON *share = cJSON_GetObjectItemCaseSensitive(l, "share_by_job");
        assert_rel(NUM(bytes, "a"), 2.0 * (n - 1.0) / n * G, 1e-9);
        assert_rel(NUM(bytes, "b"), 2.0 * (n - 1.0) / n * G, 1e-9);
        assert_rel(NUM(share, "a"), 0.5, 1e-12);
    }
    cJSON_Delete(d);
}

static void test_deterministic(void **state) {
    (void)state;
    const char *fixtures[] = {"@jobs/tapered.json", "@jobs/random.json"};
    for (int f = 0; f < 2; f++)
        for (int json = 0; json < 2; json++) {
            cli_run_t a =
                json ? cli_run("run", fixtures[f], "--json", NULL) : cli_run("run", fixtures[f], NULL);
            cli_run_t b =
                json ? cli_run("run", fixtures[f], "--json", NULL) : cli_run("run", fixtures[f], NULL);
            assert_int_equal(a.rc, 0);
            assert_string_equal(a.out, b.out);
            cli_run_free(&a);
            cli_run_free(&b);
        }
    /* the random allocation: the seed decides it, never on the explicit job's GPUs */
    cJSON *s1 = run_json("@jobs/random.json", NULL), *s2 = run_json("@jobs/random_seed2.json", NULL);
    const char *g1 = cli_json_str(job(s1, 1), "topology_gpus"),
               *g2 = cli_json_str(job(s2, 1), "topology_gpus");
    assert_string_not_equal(g1, g2);
    assert_string_equal(cli_json_str(job(s1, 0), "topology_gpus"), "0-3,16-19");
    assert_int_equal((int)NUM(cJSON_GetObjectItemCaseSensitive(s1, "simulation"), "seed"), 1);
    assert_int_equal((int)NUM(cJSON_GetObjectItemCaseSensitive(s2, "simulation"), "seed"), 2);
    cJSON *docs[2] = {s1, s2};
    for (int k = 0; k < 2; k++) { /* eight distinct GPUs of the 32, none of the fixed job's */
        char text[160];
        snprintf(text, sizeof text, "%s", cli_json_str(job(docs[k], 1), "topology_gpus"));
        int seen[32] = {0}, count = 0;
        for (char *tok = strtok(text, ","); tok; tok = strtok(NULL, ",")) {
            int a = 0, b = 0;
            if (sscanf(tok, "%d-%d", &a, &b) != 2)
                b = a = atoi(tok);
            for (int g = a; g <= b; g++) {
                assert_true(g >= 0 && g < 32 && !seen[g]);
                assert_false((g >= 0 && g <= 3) || (g >= 16 && g <= 19));
                seen[g] = 1;
                count++;
            }
        }
        assert_int_equal(count, 8);
    }
    cJSON_Delete(s1);
    cJSON_Delete(s2);
}

static void test_errors(void **state) {
    (void)state;
    struct {
        const char *name;
        const char *argv[4];
        int n;
        const char *frags[4];
    } cases[] = {
        {"overlap", {"run", "@jobs/err_overlap.json"}, 2, {"jobs[1].allocation", "GPU 4", "job a"}},
        {"range", {"run", "@jobs/err_range.json"}, 2, {"jobs[1].allocation", "GPU 16", "beyond"}},
        {"split", {"run", "@jobs/err_split.json"}, 2, {"jobs[0].allocation", "\"4-35\"", "NVLink domain"}},
        {"validate",
         {"validate", "@jobs/tapered.json"},
         2,
         {"jobs", "only `stepsim run` and `stepsim compare`"}},
        {"scenario option", {"run", "@jobs/tapered.json", "--tp", "2"}, 4, {"--tp", "each job"}},
        {"analytic", {"run", "@jobs/tapered.json", "--comm", "analytic"}, 4, {"--comm", "network"}},
        {"baseline", {"run", "@jobs/tapered.json", "--baseline", "maybe"}, 4, {"--baseline", "maybe"}},
        {"nvlink size", {"run", "@jobs/err_nvs.json"}, 2, {"jobs[1].nvlink_size", "8", "allowed: 1"}},
        {"fabric too small", {"run", "@jobs/err_small.json"}, 2, {"gpus: 12", "16"}},
        {"missing batch", {"run", "@jobs/err_missing.json"}, 2, {"jobs[1]", "global_batch is missing"}},
        {"unknown key", {"run", "@jobs/err_key.json"}, 2, {"jobs[0].alloc", "unknown key"}},
        {"policy",
         {"run", "@jobs/err_policy.json"},
         2,
         {"jobs[0].allocation", "\"packd\"", "did you mean \"packed\""}},
        {"stragglers beside jobs",
         {"run", "@jobs/err_slow_gpus.json"},
         2,
         {"err_slow_gpus.json", "perturbations.gpus", "allowed: perturbations.links"}},
        {"no whole nodes",
         {"run", "@jobs/err_full.json"},
         2,
         {"jobs[2].gpus", "56", "48 of the topology's 64"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        cli_expect_error(cases[i].name, cases[i].argv, cases[i].n, 2, cases[i].frags, 3);
}

static void test_baseline_off_and_trace(void **state) {
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "/tmp/stepsim_jobs_trace_%d.json", (int)getpid());
    cli_run_t r = cli_run("run", "@jobs/tapered.json", "--baseline", "off", "--trace", path, "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *d = cJSON_Parse(r.out);
    assert_non_null(d);
    assert_null(cJSON_GetObjectItemCaseSensitive(job(d, 0), "alone_step_time_s"));
    assert_false(cJSON_IsTrue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "simulation"), "baseline")));
    cJSON_Delete(d);
    cli_run_free(&r);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    rewind(f);
    char *text = malloc((size_t)n + 1);
    assert_true(fread(text, 1, (size_t)n, f) == (size_t)n);
    text[n] = '\0';
    fclose(f);
    unlink(path);
    cJSON *t = cJSON_Parse(text);
    assert_non_null(t);
    /* job a (even GPUs) and job b (odd GPUs) each in processes of their own */
    assert_non_null(strstr(text, "\"job a / node 0\""));
    assert_non_null(strstr(text, "\"job b / node 1\""));
    assert_null(strstr(text, "\"job b / node 0\""));
    cJSON_Delete(t);
    free(text);
}

/* Each job its own system and schedule: the H100 job interleaved, the A100 one 1F1B. */
static void test_mixed(void **state) {
    (void)state;
    cJSON *d = run_json("@jobs/mixed.json", NULL);
    const cJSON *old = job(d, 0), *nu = job(d, 1);
    assert_string_equal(cli_json_str(old, "system"), "A100");
    assert_string_equal(cli_json_str(nu, "system"), "H100");
    assert_string_equal(cli_json_str(old, "schedule"), "1f1b");
    assert_string_equal(cli_json_str(nu, "schedule"), "interleaved");
    assert_int_equal((int)NUM(nu, "virtual_stages"), 2);
    assert_string_equal(cli_json_str(nu, "topology_gpus"), "32-63");
    cJSON_Delete(d);
}

/* compare with jobs: per topology each job's time and slowdown, the same as run on that topology. */
static void test_compare(void **state) {
    (void)state;
    const char *taper = "ideal,{\"name\": \"taper\", \"kind\": \"fat-tree\", \"tiers\": 2, \"leaves\": 4, "
                        "\"endpoints_per_leaf\": 4, \"spines\": 1, \"link_bandwidth_bytes_per_s\": 25e9, "
                        "\"link_latency_s\": 0}";
    const char *argv[] = {"compare", "@jobs/tapered.json", "--topologies", taper, "--json"};
    cJSON *c = cli_run_json(argv, 5);
    cJSON *r = run_json("@jobs/tapered.json", NULL);
    const cJSON *topos = cJSON_GetObjectItemCaseSensitive(c, "topologies");
    assert_int_equal(cJSON_GetArraySize(topos), 2);
    const cJSON *ideal = cJSON_GetArrayItem(topos, 0), *tap = cJSON_GetArrayItem(topos, 1);
    assert_string_equal(cli_json_str(ideal, "label"), "ideal");
    assert_string_equal(cli_json_str(tap, "label"), "taper");
    assert_int_equal((int)NUM(ideal, "links_met"), 0);
    assert_int_equal((int)NUM(tap, "links_met"), 8);
    for (int i = 0; i < 2; i++) {
        const cJSON *ji = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(ideal, "jobs"), i);
        const cJSON *jt = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(tap, "jobs"), i);
        assert_rel(NUM(ji, "slowdown"), 1.0, 1e-9); /* one non-blocking switch: nothing shared */
        assert_rel(NUM(jt, "step_time_s"), NUM(job(r, i), "step_time_s"), 1e-12);
        assert_rel(NUM(jt, "slowdown"), NUM(job(r, i), "slowdown"), 1e-12);
        assert_true(NUM(jt, "slowdown") > 1.0);
    }
    cJSON_Delete(r);
    cJSON_Delete(c);
    const char *csv[] = {"compare", "@jobs/tapered.json", "--csv", "/tmp/never.csv"};
    const char *frags[] = {"--csv", "not with jobs"};
    cli_expect_error("compare csv", csv, 4, 2, frags, 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_halves),
        cmocka_unit_test(test_tapered),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_baseline_off_and_trace),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_mixed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
