/* stepsim/test_measured_moe.c - mixture-of-experts rows of `validate --measured` (docs/validation.md,
 * "Mixture-of-experts runs"): the expert columns read into the job; NVIDIA's published MoE runs
 * (tests/data/nemo-moe-runs.csv) each predicted finite, in memory and equal to a separate estimate of
 * the job built here by hand (1e-9), with exactly the settings the model refuses named per row; the
 * printed table against tests/golden/validate_measured_moe.txt (STEPSIM_UPDATE_GOLDEN=1 rewrites it);
 * every bad expert value one line naming file, row, column and value (exit 2); --sim on a MoE row. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include <stdlib.h>
#include <unistd.h>

#include "model.h"
#include "test_cli_run.h"

#define MOE_SET STEPSIM_DATA_DIR "/nemo-moe-runs.csv"
#define GOLDEN_TEXT "tests/golden/validate_measured_moe.txt"

static cJSON *parse_one(const cli_run_t *r) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(r->out, &end, 1);
    if (!root)
        fail_msg("stdout is not one JSON object: %.300s (stderr %.300s)", r->out, r->err);
    return root;
}

static const cJSON *item(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v)
        fail_msg("missing %s", key);
    return v;
}

static double num(const cJSON *o, const char *key) {
    const cJSON *n = item(o, key);
    if (!cJSON_IsNumber(n))
        fail_msg("%s is not a number", key);
    return n->valuedouble;
}

static void assert_rel(double got, double want, double rel) {
    if (!(fabs(got - want) <= rel * fabs(want)))
        fail_msg("got %.17g, want %.17g (rel %g)", got, want, rel);
}

static void not_modelled(const cJSON *row, char *out, size_t n) {
    out[0] = '\0';
    const cJSON *a = item(row, "not_modelled");
    for (int k = 0; k < cJSON_GetArraySize(a); k++)
        snprintf(out + strlen(out), n - strlen(out), "%s%s", k ? ", " : "",
                 cJSON_GetArrayItem(a, k)->valuestring);
}

static void write_csv(char *path, const char *header, const char *const *lines) {
    strcpy(path, "/tmp/stepsim-moe-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", header);
    for (int i = 0; lines[i]; i++)
        fprintf(f, "%s\n", lines[i]);
    assert_int_equal(fclose(f), 0);
}

/* One published run as validate must map it, written out here field by field: the architecture and
 * experts of its family, the layout (tp 1, pp 1, dp = gpus, ep), the Blackwell-era defaults of
 * NeMo's recipes (sequence parallel, flash attention, fused accumulation, the distributed optimizer
 * with both overlaps, fp8). */
typedef struct published {
    const char *name, *system;
    int64_t hidden, heads, kv, layers, ffn, vocab, experts, topk, shared, fe, seq, gpus, ep, gbs, mbs;
} published_t;

static const published_t RUNS[] = {
    {"Mixtral-8x7B-b200-4k-64-nemo2502", "DGX-B200", 4096, 32, 8, 32, 14336, 32000, 8, 2, 0, 14336, 4096, 64,
     8, 256, 2},
    {"Mixtral-8x7B-gb200-4k-64-nemo2504", "GB200-NVL72", 4096, 32, 8, 32, 14336, 32000, 8, 2, 0, 14336, 4096,
     64, 8, 256, 2},
    {"LLAMA4-Scout-LLM-gb200-8k-64-nemo2507", "GB200-NVL72", 5120, 40, 8, 48, 16384, 202048, 16, 1, 1, 8192,
     8192, 64, 16, 1024, 1},
};

/* The job of run p, and the "not modelled" list the model's refusals give: each setting the model
 * refuses with experts is dropped in validate's order (fp8, then the bucketed overlap). */
static model_job_t published_job(const published_t *p, char *notes, size_t n) {
    model_job_t j;
    memset(&j, 0, sizeof j);
    j.model = (model_transformer_t){
        .seq_len = p->seq,
        .hidden = p->hidden,
        .heads = p->heads,
        .layers = p->layers,
        .ffn_hidden = p->ffn,
        .vocab = p->vocab,
        .kv_heads = p->kv,
        .ffn_act = MODEL_FFN_SWIGLU,
        .norm = MODEL_NORM_RMSNORM,
        .position = MODEL_POSITION_ROTARY,
        .untied_embeddings = 1,
        .moe = {
            .experts = p->experts, .topk = p->topk, .shared_experts = p->shared, .expert_ffn_hidden = p->fe}};
    assert_int_equal(model_system_preset(p->system, &j.system), MODEL_OK);
    j.gpus = p->gpus;
    j.global_batch = p->gbs;
    j.compat = MODEL_COMPAT_CORRECTED;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, p->gpus, 1, 1, 1, 1, p->mbs, 1, 0, 0, 0, 0};
    const int64_t group[4] = {1, 1, p->gpus, 1};
    int64_t nv[4] = {0, 0, 0, 0};
    model_nvlink_counts(j.gpus, j.system.nvlink_size, group, nv);
    j.par.nv_tp1 = nv[0], j.par.nv_tp2 = nv[1], j.par.nv_dp = nv[2], j.par.nv_pp = nv[3];
    j.experts_par.ep = p->ep;
    j.experts_par.etp = 1;
    j.training.embedding = 1;
    j.training.optimizer_step = 1;
    j.training.interleave = 1;
    j.training.sequence_parallel = MODEL_SEQPAR_ON;
    j.training.attention = MODEL_ATTENTION_FLASH;
    j.training.grad_accumulation = MODEL_GRAD_ACCUM_FUSED;
    j.training.dp_comm = MODEL_DP_SHARDED_OVERLAP;
    j.training.precision = MODEL_PRECISION_FP8;
    j.training.fp8_param_gather = 1; /* NeMo's FP8 recipes with the distributed optimizer */
    notes[0] = '\0';
    model_issue_t is;
    memset(&is, 0, sizeof is);
    if (model_job_check(&j, &is) != MODEL_OK && strcmp(is.field, "training.precision") == 0) {
        j.training.precision = MODEL_PRECISION_BF16;
        j.training.fp8_param_gather = 0;
        snprintf(notes, n, "fp8 with experts (as bf16)");
    }
    memset(&is, 0, sizeof is);
    if (model_job_check(&j, &is) != MODEL_OK && strcmp(is.field, "training.dp_comm") == 0) {
        j.training.dp_comm = MODEL_DP_SHARDED;
        snprintf(notes + strlen(notes), n - strlen(notes), "%sdp overlap buckets (experts)",
                 notes[0] ? ", " : "");
    }
    return j;
}

/* The published set: three rows, each read as the file says, predicted finite and in memory, equal
 * to a separate estimate of the job above, with exactly the refusals named. */
static void test_published_set(void **state) {
    (void)state;
    cli_run_t r = cli_run("validate", "--measured", MOE_SET, "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *root = parse_one(&r);
    const cJSON *rows = item(root, "rows");
    assert_int_equal(cJSON_GetArraySize(rows), 3);
    double mean = 0.0, max = 0.0;
    for (int i = 0; i < 3; i++) {
        const published_t *p = &RUNS[i];
        const cJSON *row = cJSON_GetArrayItem(rows, i);
        assert_string_equal(item(row, "name")->valuestring, p->name);
        assert_int_equal((int64_t)num(row, "experts"), p->experts);
        assert_int_equal((int64_t)num(row, "topk"), p->topk);
        assert_int_equal((int64_t)num(row, "shared_experts"), p->shared);
        assert_int_equal((int64_t)num(row, "expert_ffn_hidden"), p->fe);
        assert_int_equal((int64_t)num(row, "moe_first_dense"), 0);
        assert_true(num(row, "capacity_factor") == 0.0);
        assert_int_equal((int64_t)num(row, "ep"), p->ep);
        assert_int_equal((int64_t)num(row, "etp"), 1);
        assert_int_equal((int64_t)num(row, "gbs"), p->gbs);
        assert_int_equal((int64_t)num(row, "mbs"), p->mbs);
        assert_string_equal(item(row, "precision")->valuestring, "fp8");
        const double predicted = num(row, "predicted_s"), memory = num(row, "memory_gb");
        assert_true(isfinite(predicted) && predicted > 0.0);
        assert_true(isfinite(memory) && memory > 0.0);
        assert_true(cJSON_IsTrue(item(row, "fits")));
        model_system_t sys;
        assert_int_equal(model_system_preset(p->system, &sys), MODEL_OK);
        assert_true(memory <= sys.hbm_capacity_gb);
        /* the measured time is the published throughput at the published batch */
        const double tokens = num(row, "measured_tokens_per_s_per_gpu");
        assert_rel(num(row, "measured_s"), (double)p->gbs * (double)p->seq / (tokens * (double)p->gpus),
                   1e-12);
        char notes[128], got[256];
        model_job_t j = published_job(p, notes, sizeof notes);
        not_modelled(row, got, sizeof got);
        assert_string_equal(got, notes);
        model_estimate_t *e = malloc(sizeof *e);
        assert_non_null(e);
        assert_int_equal(model_estimate(&j, e), MODEL_OK);
        assert_rel(predicted, e->summary.iteration_time_s, 1e-9);
        assert_rel(memory, e->summary.memory_gb, 1e-9);
        free(e);
        const double err = 100.0 * (predicted - num(row, "measured_s")) / num(row, "measured_s");
        assert_rel(num(row, "error_pct"), err, 1e-9);
        mean += fabs(err) / 3.0;
        max = fmax(max, fabs(err));
    }
    assert_rel(num(root, "mean_abs_error_pct"), mean, 1e-9);
    assert_rel(num(root, "max_abs_error_pct"), max, 1e-9);
    cJSON_Delete(root);
    cli_run_free(&r);
}

static int update_mode(void) {
    const char *u = getenv("STEPSIM_UPDATE_GOLDEN");
    return u && *u && strcmp(u, "0") != 0;
}

/* The printed table of the published set, byte for byte (run from the source root, as the golden
 * cases are, so that the file name it echoes reads tests/data/...). */
static void test_text_golden(void **state) {
    (void)state;
    assert_int_equal(chdir(STEPSIM_SOURCE_DIR), 0);
    cli_run_t r = cli_run("validate", "--measured", "tests/data/nemo-moe-runs.csv", NULL);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    if (update_mode()) {
        FILE *f = fopen(GOLDEN_TEXT, "w");
        assert_non_null(f);
        fputs(r.out, f);
        assert_int_equal(fclose(f), 0);
        printf("wrote %s\n", GOLDEN_TEXT);
        cli_run_free(&r);
        return;
    }
    FILE *f = fopen(GOLDEN_TEXT, "r");
    if (!f)
        fail_msg("%s is missing; run with STEPSIM_UPDATE_GOLDEN=1", GOLDEN_TEXT);
    static char want[1 << 16];
    const size_t got = fread(want, 1, sizeof want - 1, f);
    want[got] = '\0';
    fclose(f);
    if (strcmp(r.out, want) != 0)
        fail_msg("validate --measured %s differs from %s (STEPSIM_UPDATE_GOLDEN=1 rewrites it):\n%s",
                 "tests/data/nemo-moe-runs.csv", GOLDEN_TEXT, r.out);
    cli_run_free(&r);
}

#define MOE_COLUMNS                                                                                          \
    "name,hidden,heads,kv_heads,layers,seq_len,vocab,ffn_hidden,ffn_act,experts,topk,shared_experts,"        \
    "expert_ffn_hidden,moe_first_dense,capacity_factor,gpus,tp,pp,dp,cp,ep,etp,gbs,mbs,precision,system,"    \
    "measured_iteration_s"

/* Each bad expert value: exit 2, one line naming the file, the row, the column and the value. */
static void test_bad_values(void **state) {
    (void)state;
    static const char *const good =
        "x,1024,16,4,4,1024,32000,2048,swiglu,8,2,,,,,16,1,1,16,1,4,1,64,1,bf16,DGX-H100,1.0";
    static const struct {
        const char *from, *to; /* replace the first "from" of the good row by "to" */
        const char *want[2];
    } cases[] = {
        {",8,2,,", ",8,,,", {"column topk: \"\"", "is empty"}},
        {",8,2,,", ",8,9,,", {"column topk: \"9\"", "in 1..8"}},
        {",8,2,,", ",,2,,", {"column topk: \"2\"", "without experts"}},
        {",8,2,,", ",0,2,,", {"column experts: \"0\"", "positive integer"}},
        {",8,2,,", ",eight,2,,", {"column experts: \"eight\"", "positive integer"}},
        {",8,2,,", ",8,2,-1,", {"column shared_experts: \"-1\"", "non-negative integer"}},
        {",8,2,,,", ",8,2,,0,", {"column expert_ffn_hidden: \"0\"", "positive integer"}},
        {",8,2,,,,", ",8,2,,,4,", {"column moe_first_dense: \"4\"", "in 0..3"}},
        {",8,2,,,,,", ",8,2,,,,0,", {"column capacity_factor: \"0\"", "positive number"}},
        {",4,1,64", ",3,1,64", {"column ep: \"3\"", "a divisor of the experts (8)"}},
        {"16,1,1,16,1,4,", "4,1,1,4,1,8,", {"column ep: \"8\"", "a divisor of dp (4)"}},
        {",4,1,64", ",4,x,64", {"column etp: \"x\"", "positive integer"}},
        {",8,2,,", ",,,,", {"column ep: \"4\"", "needs experts"}},
        {"16,1,1,16,1,4,",
         "16,1,1,8,2,4,",
         {"column cp: \"2\"", "allowed: 1 (cp > 1 runs as strategy 2d-seqp"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char row[256];
        const char *at = strstr(good, cases[i].from);
        if (!at)
            fail_msg("case %zu: \"%s\" is not in the good row", i, cases[i].from);
        snprintf(row, sizeof row, "%.*s%s%s", (int)(at - good), good, cases[i].to,
                 at + strlen(cases[i].from));
        const char *lines[] = {row, NULL};
        char path[64];
        write_csv(path, MOE_COLUMNS, lines);
        cli_run_t r = cli_run("validate", "--measured", path, "--json", NULL);
        if (r.rc != 2)
            fail_msg("case %zu (%s): rc %d, stderr %s", i, row, r.rc, r.err);
        assert_string_equal(r.out, "");
        assert_int_equal(cli_run_lines(r.err), 1);
        char where[128];
        snprintf(where, sizeof where, "%s: row 1 (x): ", path);
        for (int k = 0; k < 2; k++)
            if (!strstr(r.err, k ? cases[i].want[1] : where) || !strstr(r.err, cases[i].want[0]))
                fail_msg("case %zu: stderr lacks \"%s\": %s", i, k ? cases[i].want[1] : where, r.err);
        cli_run_free(&r);
        remove(path);
    }
    /* the good row itself reads, with its experts in the JSON */
    const char *lines[] = {good, NULL};
    char path[64];
    write_csv(path, MOE_COLUMNS, lines);
    cli_run_t r = cli_run("validate", "--measured", path, "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *root = parse_one(&r);
    const cJSON *row = cJSON_GetArrayItem(item(root, "rows"), 0);
    assert_int_equal((int64_t)num(row, "experts"), 8);
    assert_int_equal((int64_t)num(row, "ep"), 4);
    assert_true(isfinite(num(row, "predicted_s")));
    cJSON_Delete(root);
    cli_run_free(&r);
    remove(path);
}

/* A dense row has none of the expert keys in its JSON (dense outputs stay as they were). */
static void test_dense_row_unchanged(void **state) {
    (void)state;
    static const char *const lines[] = {"d,1024,16,4,4,1024,32000,2048,swiglu,,,,,,,16,1,1,16,1,,,64,1,bf16,"
                                        "DGX-H100,1.0",
                                        NULL};
    char path[64];
    write_csv(path, MOE_COLUMNS, lines);
    cli_run_t r = cli_run("validate", "--measured", path, "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *root = parse_one(&r);
    const cJSON *row = cJSON_GetArrayItem(item(root, "rows"), 0);
    assert_null(cJSON_GetObjectItemCaseSensitive(row, "experts"));
    assert_null(cJSON_GetObjectItemCaseSensitive(row, "ep"));
    cJSON_Delete(root);
    cli_run_free(&r);
    r = cli_run("validate", "--measured", path, NULL);
    assert_int_equal(r.rc, 0);
    assert_null(strstr(r.out, "run (experts)"));
    cli_run_free(&r);
    remove(path);
}

/* A MoE row with tp 2 on a DGX H100: the tensor-parallel overlap of the Hopper recipes, the bucketed
 * distributed optimizer and bf16 as given. Each setting the model refuses with experts is dropped and
 * named, and the prediction is a separate estimate of the job so reduced (1e-9). */
static void test_tp_overlap(void **state) {
    (void)state;
    static const char *const lines[] = {
        "t,1024,16,4,4,1024,32000,2048,swiglu,8,2,,,,,16,2,1,8,1,4,1,64,1,bf16,"
        "DGX-H100,1.0",
        NULL};
    char path[64];
    write_csv(path, MOE_COLUMNS, lines);
    cli_run_t r = cli_run("validate", "--measured", path, "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *root = parse_one(&r);
    const cJSON *row = cJSON_GetArrayItem(item(root, "rows"), 0);
    model_job_t j;
    memset(&j, 0, sizeof j);
    j.model = (model_transformer_t){.seq_len = 1024,
                                    .hidden = 1024,
                                    .heads = 16,
                                    .layers = 4,
                                    .ffn_hidden = 2048,
                                    .vocab = 32000,
                                    .kv_heads = 4,
                                    .ffn_act = MODEL_FFN_SWIGLU,
                                    .moe = {.experts = 8, .topk = 2}};
    assert_int_equal(model_system_preset("DGX-H100", &j.system), MODEL_OK);
    j.gpus = 16;
    j.global_batch = 64;
    j.compat = MODEL_COMPAT_CORRECTED;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, 8, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0};
    const int64_t group[4] = {2, 1, 8, 1};
    int64_t nv[4] = {0, 0, 0, 0};
    model_nvlink_counts(j.gpus, j.system.nvlink_size, group, nv);
    j.par.nv_tp1 = nv[0], j.par.nv_tp2 = nv[1], j.par.nv_dp = nv[2], j.par.nv_pp = nv[3];
    j.experts_par.ep = 4;
    j.experts_par.etp = 1;
    j.training.embedding = 1;
    j.training.optimizer_step = 1;
    j.training.interleave = 1;
    j.training.sequence_parallel = MODEL_SEQPAR_ON;
    j.training.dp_comm = MODEL_DP_SHARDED_OVERLAP;
    j.training.tp_comm_overlap = 1;
    char want[128] = "";
    for (int k = 0; k < 3; k++) {
        model_issue_t is;
        memset(&is, 0, sizeof is);
        if (model_job_check(&j, &is) == MODEL_OK)
            break;
        if (strcmp(is.field, "training.dp_comm") == 0) {
            j.training.dp_comm = MODEL_DP_SHARDED;
            snprintf(want + strlen(want), sizeof want - strlen(want), "%sdp overlap buckets (experts)",
                     want[0] ? ", " : "");
        } else if (strcmp(is.field, "training.tp_comm_overlap") == 0) {
            j.training.tp_comm_overlap = 0;
            snprintf(want + strlen(want), sizeof want - strlen(want), "%stp_comm_overlap",
                     want[0] ? ", " : "");
        } else {
            fail_msg("the model refuses %s", is.field);
        }
    }
    char got[256];
    not_modelled(row, got, sizeof got);
    assert_string_equal(got, want);
    model_estimate_t *e = malloc(sizeof *e);
    assert_non_null(e);
    assert_int_equal(model_estimate(&j, e), MODEL_OK);
    assert_rel(num(row, "predicted_s"), e->summary.iteration_time_s, 1e-9);
    free(e);
    cJSON_Delete(root);
    cli_run_free(&r);
    remove(path);
}

/* --sim on a small MoE row: the analytic columns as without --sim; the simulated step either runs
 * the row (finite) or says why it does not, in the row. */
static void test_sim(void **state) {
    (void)state;
    static const char *const lines[] = {
        "m,1024,16,4,2,1024,32000,2048,swiglu,8,2,,,,,8,1,1,8,1,4,1,16,1,bf16,"
        "DGX-H100,0.5",
        NULL};
    char path[64];
    write_csv(path, MOE_COLUMNS, lines);
    cli_run_t a = cli_run("validate", "--measured", path, "--json", NULL);
    cli_run_t s = cli_run("validate", "--measured", path, "--sim", "--json", NULL);
    assert_int_equal(a.rc, 0);
    assert_int_equal(s.rc, 0);
    cJSON *ra = parse_one(&a), *rs = parse_one(&s);
    const cJSON *rowa = cJSON_GetArrayItem(item(ra, "rows"), 0),
                *rows = cJSON_GetArrayItem(item(rs, "rows"), 0);
    assert_true(num(rowa, "predicted_s") == num(rows, "predicted_s"));
    const cJSON *sim = cJSON_GetArrayItem(item(item(rs, "simulation"), "rows"), 0);
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(sim, "error");
    if (err) {
        assert_true(cJSON_IsString(err) && strlen(err->valuestring) > 0);
        assert_non_null(strstr(s.err, "m: not simulated: "));
    } else {
        assert_true(isfinite(num(sim, "sim_network_s")) && num(sim, "sim_network_s") > 0.0);
    }
    cJSON_Delete(ra);
    cJSON_Delete(rs);
    cli_run_free(&a);
    cli_run_free(&s);
    remove(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_published_set),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_dense_row_unchanged),
        cmocka_unit_test(test_tp_overlap),
        cmocka_unit_test(test_sim),
        cmocka_unit_test(test_text_golden), /* last: it changes the working directory */
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
