/* stepsim/test_measured_columns.c - the measured-runs columns of today's runs (docs/validation.md,
 * "Columns of Hopper-era runs"): every column read into the row (--json), the defaults of each GPU
 * generation, gbs / mbs / ga and a measured throughput, the per-row "not modelled" list, predictions
 * equal to separate model estimates of the mapped job (1e-9), one-line errors naming file, row,
 * column and value, and the converted NeMo set (tests/data/nemo-h100-b200-fp8-runs.csv). */
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

static const char *str(const cJSON *o, const char *key) {
    const cJSON *s = item(o, key);
    if (!cJSON_IsString(s))
        fail_msg("%s is not a string", key);
    return s->valuestring;
}

static int flag(const cJSON *o, const char *key) {
    const cJSON *b = item(o, key);
    if (!cJSON_IsBool(b))
        fail_msg("%s is not a bool", key);
    return cJSON_IsTrue(b);
}

static void assert_rel(double got, double want, double rel) {
    if (!(fabs(got - want) <= rel * fabs(want)))
        fail_msg("got %.17g, want %.17g (rel %g)", got, want, rel);
}

/* The row's not_modelled list joined with ", ". */
static void not_modelled(const cJSON *row, char *out, size_t n) {
    out[0] = '\0';
    const cJSON *a = item(row, "not_modelled");
    for (int k = 0; k < cJSON_GetArraySize(a); k++)
        snprintf(out + strlen(out), n - strlen(out), "%s%s", k ? ", " : "",
                 cJSON_GetArrayItem(a, k)->valuestring);
}

/* A temporary CSV of a header and lines (NULL-terminated); path receives its name. */
static void write_csv(char *path, const char *header, const char *const *lines) {
    strcpy(path, "/tmp/stepsim-measured-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", header);
    for (int i = 0; lines[i]; i++)
        fprintf(f, "%s\n", lines[i]);
    assert_int_equal(fclose(f), 0);
}

static double predict(const model_job_t *job) {
    static model_estimate_t e;
    model_issue_t is;
    memset(&is, 0, sizeof is);
    if (model_job_check(job, &is) != MODEL_OK)
        fail_msg("job: %s \"%s\" %s", is.field, is.value, is.allowed);
    assert_int_equal(model_estimate(job, &e), MODEL_OK);
    return e.summary.iteration_time_s;
}

/* A 1d job of the small model (hidden 2304, 24 heads, 24 layers, sequence 2048) as validate maps a
 * row: embedding, optimizer step, NVLink counts as estimate derives them. */
static model_job_t small_job(const char *system, int64_t tp, int64_t pp, int64_t dp, int64_t mbs,
                             int64_t gbs) {
    model_job_t j;
    memset(&j, 0, sizeof j);
    j.model = (model_transformer_t){.name = "x",
                                    .seq_len = 2048,
                                    .hidden = 2304,
                                    .heads = 24,
                                    .layers = 24,
                                    .ffn_hidden = 9216,
                                    .vocab = 51200};
    assert_int_equal(model_system_preset(system, &j.system), MODEL_OK);
    j.gpus = tp * pp * dp;
    j.global_batch = gbs;
    j.compat = MODEL_COMPAT_CORRECTED;
    j.par = (model_parallel_t){MODEL_STRATEGY_1D, dp, tp, tp, 1, pp, mbs, 1, 0, 0, 0, 0};
    const int64_t group[4] = {tp, 1, dp, pp};
    int64_t nv[4] = {0, 0, 0, 0};
    model_nvlink_counts(j.gpus, j.system.nvlink_size, group, nv);
    j.par.nv_tp1 = nv[0], j.par.nv_tp2 = nv[1], j.par.nv_dp = nv[2], j.par.nv_pp = nv[3];
    j.training.embedding = 1;
    j.training.optimizer_step = 1;
    j.training.interleave = 1;
    return j;
}

/* An empty cell follows the GPU generation: Megatron-LM of the A100 era, or the NeMo / Megatron-Core
 * recipes of Hopper and later. */
static void test_defaults_by_generation(void **state) {
    (void)state;
    static const char *const lines[] = {"a100,2304,24,24,2048,51200,16,2,1,8,64,DGX-A100,1.0",
                                        "h100,2304,24,24,2048,51200,16,2,1,8,64,DGX-H100,1.0", NULL};
    char path[64];
    write_csv(path, "name,hidden,heads,layers,seq_len,vocab,gpus,tp,pp,dp,gbs,system,measured_iteration_s",
              lines);
    cli_run_t r = cli_run("validate", "--measured", path, "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *j = parse_one(&r);
    const cJSON *a = cJSON_GetArrayItem(item(j, "rows"), 0), *h = cJSON_GetArrayItem(item(j, "rows"), 1);
    char nm[256];
    assert_string_equal(str(a, "precision"), "fp16");
    assert_string_equal(str(a, "recompute"), "none");
    assert_false(flag(a, "sequence_parallel"));
    assert_false(flag(a, "distributed_optimizer"));
    assert_false(flag(a, "overlap_grad_reduce"));
    assert_false(flag(a, "overlap_param_gather"));
    assert_false(flag(a, "tp_comm_overlap"));
    assert_string_equal(str(a, "dp_comm"), "allreduce");
    assert_string_equal(str(a, "attention"), "materialized");
    assert_string_equal(str(a, "grad_accumulation"), "add");
    assert_int_equal((int)num(a, "kv_heads"), 24);
    assert_string_equal(str(a, "ffn_act"), "gelu");
    assert_int_equal((int)num(a, "ga"), 8);
    not_modelled(a, nm, sizeof nm);
    assert_string_equal(nm, "");
    assert_string_equal(str(h, "precision"), "bf16");
    assert_string_equal(str(h, "recompute"), "none");
    assert_true(flag(h, "sequence_parallel"));
    assert_true(flag(h, "distributed_optimizer"));
    assert_true(flag(h, "overlap_grad_reduce"));
    assert_true(flag(h, "overlap_param_gather"));
    assert_true(flag(h, "tp_comm_overlap"));
    assert_string_equal(str(h, "dp_comm"), "sharded-overlap");
    assert_string_equal(str(h, "attention"), "flash");
    assert_string_equal(str(h, "grad_accumulation"), "fused");
    not_modelled(h, nm, sizeof nm);
    assert_string_equal(nm, ""); /* the tensor-parallel overlap is modelled (1d) */

    model_job_t ja = small_job("DGX-A100", 2, 1, 8, 1, 64);
    ja.training.sequence_parallel = MODEL_SEQPAR_OFF;
    ja.training.attention = MODEL_ATTENTION_MATERIALIZED;
    ja.training.grad_accumulation = MODEL_GRAD_ACCUM_ADD;
    ja.training.dp_comm = MODEL_DP_ALLREDUCE;
    assert_rel(num(a, "predicted_s"), predict(&ja), 1e-9);
    model_job_t jh = small_job("DGX-H100", 2, 1, 8, 1, 64);
    jh.training.dp_comm = MODEL_DP_SHARDED_OVERLAP;
    jh.training.tp_comm_overlap = 1;
    assert_rel(num(h, "predicted_s"), predict(&jh), 1e-9);
    cJSON_Delete(j);
    cli_run_free(&r);
    remove(path);
}

#define ALL_COLUMNS                                                                                          \
    "name,hidden,heads,kv_heads,layers,seq_len,vocab,ffn_hidden,ffn_act,norm,position,untied_embeddings,"    \
    "gpus,tp,pp,"                                                                                            \
    "dp,cp,ep,gbs,mbs,ga,interleave,precision,fsdp,tp_comm_overlap,distributed_optimizer,overlap_grad_"      \
    "reduce,"                                                                                                \
    "overlap_param_gather,system,measured_iteration_s,measured_tokens_per_s_per_gpu"

/* Every new column read and typed; gbs, mbs and ga derive one another; a throughput becomes an
 * iteration time; what the model cannot honour is listed per row. */
static void test_every_column(void **state) {
    (void)state;
    static const char *const lines[] = {
        "all,2304,24,8,24,2048,51200,9216,swiglu,rmsnorm,rotary,1,8,2,2,2,1,1,16,2,4,,fp8,1,1,1,0,0,DGX-H100,"
        "1.5,",
        "ga-mbs,2304,24,,24,2048,51200,,gelu,layernorm,learned,0,8,2,1,4,1,,16,,2,,bf16,0,0,0,1,0,DGX-H100,,"
        "20000",
        "gbs-empty,2304,24,,24,2048,51200,,,,,,8,2,2,2,1,,,,,,,,,,,,DGX-A100,,30000",
        "uneven,2304,24,,30,2048,51200,,,,,,8,1,4,2,1,,8,1,,,,,,,,,DGX-A100,2.0,", NULL};
    char path[64];
    write_csv(path, ALL_COLUMNS, lines);
    cli_run_t r = cli_run("validate", "--measured", path, "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *j = parse_one(&r);
    const cJSON *rows = item(j, "rows");
    char nm[256];

    const cJSON *all = cJSON_GetArrayItem(rows, 0);
    assert_string_equal(str(all, "precision"), "fp8");
    assert_int_equal((int)num(all, "kv_heads"), 8);
    assert_string_equal(str(all, "ffn_act"), "swiglu");
    assert_string_equal(str(all, "norm"), "rmsnorm");
    assert_string_equal(str(all, "position"), "rotary");
    assert_true(flag(all, "untied_embeddings"));
    assert_true(flag(all, "fsdp"));
    assert_true(flag(all, "tp_comm_overlap"));
    assert_true(flag(all, "distributed_optimizer"));
    assert_false(flag(all, "overlap_grad_reduce"));
    assert_false(flag(all, "overlap_param_gather"));
    assert_string_equal(str(all, "dp_comm"), "sharded");
    assert_true(flag(all, "fp8_param_gather")); /* fp8 on Hopper: the recipes' default */
    assert_int_equal((int)num(all, "ga"), 4);
    not_modelled(all, nm, sizeof nm);
    /* the architecture columns are the model's now; what it cannot honour yet is listed */
    assert_string_equal(nm, "fsdp, overlap_grad_reduce 0, overlap_param_gather 0");
    model_job_t j0 = small_job("DGX-H100", 2, 2, 2, 2, 16);
    j0.training.dp_comm = MODEL_DP_SHARDED;
    j0.model.kv_heads = 8;
    j0.model.ffn_act = MODEL_FFN_SWIGLU;
    j0.model.norm = MODEL_NORM_RMSNORM;
    j0.model.position = MODEL_POSITION_ROTARY;
    j0.model.untied_embeddings = 1;
    j0.training.precision = MODEL_PRECISION_FP8;
    j0.training.tp_comm_overlap = 1;
    j0.training.fp8_param_gather = 1;
    assert_rel(num(all, "predicted_s"), predict(&j0), 1e-9);

    /* ga with gbs gives mbs (recorded); no distributed optimizer, overlapped all-reduce; tokens/s */
    const cJSON *gm = cJSON_GetArrayItem(rows, 1);
    assert_int_equal((int)num(gm, "mbs"), 2);
    assert_true(flag(gm, "mbs_recorded"));
    assert_string_equal(str(gm, "dp_comm"), "allreduce-overlap");
    assert_false(flag(gm, "fp8_param_gather")); /* bf16: nothing to gather in FP8 */
    assert_rel(num(gm, "measured_s"), 16.0 * 2048.0 / (20000.0 * 8.0), 1e-15);
    assert_rel(num(gm, "measured_tokens_per_s_per_gpu"), 20000.0, 1e-15);
    not_modelled(gm, nm, sizeof nm);
    assert_string_equal(nm, "");
    model_job_t j1 = small_job("DGX-H100", 2, 1, 4, 2, 16);
    j1.training.dp_comm = MODEL_DP_ALLREDUCE_OVERLAP;
    assert_rel(num(gm, "predicted_s"), predict(&j1), 1e-9);

    /* an empty gbs: dp x mbs x ga with mbs 1 and ga = pp */
    const cJSON *ge = cJSON_GetArrayItem(rows, 2);
    assert_false(flag(ge, "gbs_recorded"));
    assert_int_equal((int)num(ge, "gbs"), 2 * 1 * 2);
    assert_int_equal((int)num(ge, "ga"), 2);
    assert_rel(num(ge, "measured_s"), 4.0 * 2048.0 / (30000.0 * 8.0), 1e-15);

    /* 30 layers on 4 stages: predicted as 32, and said so */
    const cJSON *un = cJSON_GetArrayItem(rows, 3);
    not_modelled(un, nm, sizeof nm);
    assert_string_equal(nm, "layers 30 as 32");
    model_job_t j3 = small_job("DGX-A100", 1, 4, 2, 1, 8);
    j3.model.layers = 32;
    j3.training.attention = MODEL_ATTENTION_MATERIALIZED;
    j3.training.grad_accumulation = MODEL_GRAD_ACCUM_ADD;
    j3.training.sequence_parallel = MODEL_SEQPAR_OFF;
    j3.training.dp_comm = MODEL_DP_ALLREDUCE;
    assert_rel(num(un, "predicted_s"), predict(&j3), 1e-9);
    cJSON_Delete(j);
    cli_run_free(&r);

    r = cli_run("validate", "--measured", path, NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "unrecorded gbs (1 runs): dp x mbs x ga, ga = pp unless given"));
    assert_non_null(strstr(r.out, "not modelled (2 of 4 runs; each is predicted without what is listed):\n"));
    assert_non_null(strstr(r.out, "  uneven         layers 30 as 32\n"));
    cli_run_free(&r);
    remove(path);
}

/* A bad value in any new column: exit 2, one line naming the file, the row, the column and the value. */
static void test_bad_values(void **state) {
    (void)state;
    static const char *const good = "x,2304,24,,24,2048,51200,,,,,,8,2,2,2,1,,16,2,,,,,,,,,DGX-H100,1.5,";
    static const struct {
        const char *from, *to; /* replace the first "from" of the good row by "to" */
        const char *want[2];
    } cases[] = {
        {",,,,,,8,", ",,relu,,,,8,", {"column ffn_act: \"relu\"", "allowed: gelu, swiglu, relu2"}},
        {",,,,,,8,", ",,,rms,,,8,", {"column norm: \"rms\"", "allowed: layernorm, rmsnorm"}},
        {",,,,,,8,", ",,,,rope,,8,", {"column position: \"rope\"", "allowed: learned, rotary"}},
        {",,,,,,8,", ",,,,,2,8,", {"column untied_embeddings: \"2\"", "allowed: 0, 1"}},
        {"24,,24", "24,5,24", {"column kv_heads: \"5\"", "does not divide heads (24)"}},
        {"24,,24", "24,0,24", {"column kv_heads: \"0\"", "positive integer"}},
        {"1,,16,", "1,8,16,", {"column ep: \"8\"", "must be 1"}},
        {"16,2,,", "16,2,3,", {"column ga: \"3\"", "is not gbs / (dp x mbs) (16 / (2 x 2))"}},
        {",,,,,,,,,DGX", ",,,fp4,,,,,,DGX", {"column precision: \"fp4\"", "allowed: fp16, bf16, fp8"}},
        {",,,,,,,,,DGX", ",,,,2,,,,,DGX", {"column fsdp: \"2\"", "allowed: 0, 1"}},
        {",,,,,,,,,DGX", ",,,,,yes,,,,DGX", {"column tp_comm_overlap: \"yes\"", "allowed: 0, 1"}},
        {",,,,,,,,,DGX",
         ",,,,,,0,,1,DGX",
         {"column overlap_param_gather: \"1\"", "needs distributed_optimizer 1"}},
        {",,,,,,,,,DGX-H100,1.5,",
         ",,,,,,1,,,DGX-H100,1.5,,sharded",
         {"column dp_comm: \"sharded\"", "allowed: one or the other"}},
        {"1.5,",
         "1.5,20000",
         {"column measured_iteration_s: \"1.5\"", "given with measured_tokens_per_s_per_gpu"}},
        {"1.5,", ",", {"column measured_iteration_s: \"\"", "is empty"}},
        {"1.5,", ",-4", {"column measured_tokens_per_s_per_gpu: \"-4\"", "positive number"}},
        {",16,2,", ",,2,", {"column gbs: \"\"", "needs a measured throughput"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char row[256];
        const char *at = strstr(good, cases[i].from);
        assert_non_null(at);
        snprintf(row, sizeof row, "%.*s%s%s", (int)(at - good), good, cases[i].to,
                 at + strlen(cases[i].from));
        const char *lines[] = {row, NULL};
        char path[64];
        write_csv(path, ALL_COLUMNS ",dp_comm", lines);
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
}

/* The fp8_param_gather column: empty is 1 for an FP8 run with the distributed optimizer on Hopper,
 * 0 switches it off; each prediction equals a separate estimate with the job's field so set, the
 * all-gather then moving FP8 parameters (half the bytes) and the prediction faster; 1 on a BF16 run
 * is one line, exit 2. */
static void test_fp8_param_gather(void **state) {
    (void)state;
    static const char *const lines[] = {"empty,2304,24,24,2048,51200,16,2,1,8,64,fp8,,DGX-H100,1.0",
                                        "off,2304,24,24,2048,51200,16,2,1,8,64,fp8,0,DGX-H100,1.0",
                                        "on,2304,24,24,2048,51200,16,2,1,8,64,fp8,1,DGX-H100,1.0", NULL};
    static const char *const header =
        "name,hidden,heads,layers,seq_len,vocab,gpus,tp,pp,dp,gbs,precision,fp8_param_gather,system,"
        "measured_iteration_s";
    char path[64];
    write_csv(path, header, lines);
    cli_run_t r = cli_run("validate", "--measured", path, "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *j = parse_one(&r);
    const cJSON *rows = item(j, "rows");
    model_job_t jh = small_job("DGX-H100", 2, 1, 8, 1, 64);
    jh.training.dp_comm = MODEL_DP_SHARDED_OVERLAP;
    jh.training.tp_comm_overlap = 1;
    jh.training.precision = MODEL_PRECISION_FP8;
    const double without = predict(&jh);
    jh.training.fp8_param_gather = 1;
    const double with = predict(&jh);
    assert_true(with < without);
    assert_true(flag(cJSON_GetArrayItem(rows, 0), "fp8_param_gather"));
    assert_false(flag(cJSON_GetArrayItem(rows, 1), "fp8_param_gather"));
    assert_true(flag(cJSON_GetArrayItem(rows, 2), "fp8_param_gather"));
    assert_rel(num(cJSON_GetArrayItem(rows, 0), "predicted_s"), with, 1e-9);
    assert_rel(num(cJSON_GetArrayItem(rows, 1), "predicted_s"), without, 1e-9);
    assert_rel(num(cJSON_GetArrayItem(rows, 2), "predicted_s"), with, 1e-9);
    cJSON_Delete(j);
    cli_run_free(&r);
    remove(path);

    static const char *const bad[] = {"bf16,2304,24,24,2048,51200,16,2,1,8,64,bf16,1,DGX-H100,1.0", NULL};
    write_csv(path, header, bad);
    r = cli_run("validate", "--measured", path, NULL);
    assert_int_equal(r.rc, 2);
    assert_string_equal(r.out, "");
    assert_int_equal(cli_run_lines(r.err), 1);
    assert_non_null(strstr(r.err, "row 1 (bf16): column fp8_param_gather: \"1\""));
    assert_non_null(strstr(r.err, "needs precision fp8"));
    cli_run_free(&r);
    remove(path);
}

/* The converted NeMo / Megatron-Core set: every DGX-H100 row reads, with its measured time from
 * the published throughput and the NeMo defaults; the whole file needs the DGX-B200 preset. */
static void test_nemo_set(void **state) {
    (void)state;
    const char *file = STEPSIM_DATA_DIR "/nemo-h100-b200-fp8-runs.csv";
    FILE *f = fopen(file, "r");
    assert_non_null(f);
    static char text[1 << 16];
    const size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    char path[] = "/tmp/stepsim-nemo-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *h = fdopen(fd, "w");
    int rows = 0, lines = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"), lines++)
        if (lines == 0 || strstr(line, ",DGX-H100,")) {
            fprintf(h, "%s\n", line);
            rows += lines > 0;
        }
    assert_int_equal(fclose(h), 0);
    assert_int_equal(lines, 32);
    assert_int_equal(rows, 25);
    cli_run_t r = cli_run("validate", "--measured", path, "--json", NULL);
    assert_int_equal(r.rc, 0);
    cJSON *j = parse_one(&r);
    assert_int_equal(cJSON_GetArraySize(item(j, "rows")), 25);
    char nm[256];
    for (int i = 0; i < 25; i++) {
        const cJSON *row = cJSON_GetArrayItem(item(j, "rows"), i);
        assert_string_equal(str(row, "precision"), "fp8");
        assert_true(flag(row, "distributed_optimizer"));
        assert_string_equal(str(row, "dp_comm"), "sharded-overlap");
        assert_string_equal(str(row, "recompute"), "none");
        assert_true(flag(row, "sequence_parallel"));
        not_modelled(row, nm, sizeof nm);
        assert_null(strstr(nm, "fp8"));
    }
    const cJSON *l7 = cJSON_GetArrayItem(item(j, "rows"), 4);
    assert_string_equal(str(l7, "name"), "LLAMA2-7B-h100-4k-8-nemo2407");
    assert_rel(num(l7, "measured_s"), 128.0 * 4096.0 / (16847.0 * 8.0), 1e-15);
    not_modelled(l7, nm, sizeof nm);
    assert_string_equal(nm, ""); /* FP8 and the architecture are modelled */
    /* 8K on pp 2, dp 4: the converter's assumed 4M-token batch, mbs unrecorded (1), 128 microbatches */
    const cJSON *ls = cJSON_GetArrayItem(item(j, "rows"), 13);
    assert_string_equal(str(ls, "name"), "LLAMA2-7B-h100-8k-8-nemo2403");
    assert_true(flag(ls, "gbs_recorded"));
    assert_int_equal((int)num(ls, "gbs"), 4194304 / 8192);
    assert_false(flag(ls, "mbs_recorded"));
    assert_int_equal((int)num(ls, "ga"), 4194304 / 8192 / 4);
    const cJSON *big = cJSON_GetArrayItem(item(j, "rows"), 23);
    not_modelled(big, nm, sizeof nm);
    assert_non_null(strstr(nm, "layers 126 as 128"));
    cJSON_Delete(j);
    cli_run_free(&r);
    remove(path);

    r = cli_run("validate", "--measured", file, "--json", NULL);
    assert_int_equal(r.rc, 0); /* the B200 rows too: DGX-B200 is a system preset */
    j = parse_one(&r);
    assert_int_equal(cJSON_GetArraySize(item(j, "rows")), 31);
    cJSON_Delete(j);
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_by_generation),
        cmocka_unit_test(test_every_column),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_fp8_param_gather),
        cmocka_unit_test(test_nemo_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
