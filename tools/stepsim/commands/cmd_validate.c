/* cmd_validate.c - `stepsim validate --measured FILE.csv`: predict measured training runs and report
 * the error of each prediction and of the whole set (the result: validate.h; output/print_validate.c
 * prints it).
 *
 * Each row of the CSV (columns: docs/cli.md, "validate --measured input"; docs/validation.md) becomes
 * one job of the corrected analytic model with the training options the run used (recomputation,
 * sequence parallelism, the embedding and output layer, the optimizer step, interleaving,
 * Megatron's data-parallel all-reduce, the attention kernel). Settings a row leaves empty are filled
 * by one documented rule for every row (--unrecorded), never per row. The published reference
 * model's prediction of the same layout is reported beside it.
 *
 * Where predictions come from is a predictor_t: this version has the analytic model only and says
 * so ("analytic"). The discrete-event simulation adds a second predictor (`--sim`) with the same
 * signature; the rows, the rule and the report stay as they are.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "checked.h"
#include "commands.h"
#include "csv.h"
#include "input_check.h"
#include "readfile.h"
#include "print.h"
#include "progress.h"
#include "validate.h"
#include "simpoint.h"
#include "topo_json.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- prediction sources -------------------------------------------------------------------- */

/* A prediction source: fills *out (the iteration time and its breakdown) for a checked job.
 * Returns CLI_OK or an exit code with diag filled. */
typedef struct predictor {
    const char *name;     /* "analytic" */
    const char *describe; /* one line for the text header */
    int (*predict)(const model_job_t *job, model_summary_t *out, cli_diag_t *diag);
} predictor_t;

static int predict_analytic(const model_job_t *job, model_summary_t *out, cli_diag_t *diag) {
    model_estimate_t *e = alloc_malloc(sizeof *e);
    if (!e)
        return cli_fail(diag, CLI_ERUNTIME, "validate: out of memory");
    int rc = model_estimate(job, e);
    if (rc == MODEL_OK)
        *out = e->summary;
    free(e);
    return rc == MODEL_OK ? CLI_OK : cli_fail(diag, CLI_EUSAGE, "validate: the model rejected a checked job");
}

static const predictor_t ANALYTIC = {"analytic", "the closed-form model of model/, compat corrected",
                                     predict_analytic};

/* ---- options ------------------------------------------------------------------------------- */

typedef enum unrecorded_rule { RULE_SEARCH = 0, RULE_FIXED = 1 } unrecorded_rule_t;

typedef struct validate_args {
    const char *measured;
    const char *rule_text;
    unrecorded_rule_t rule;
    int json;
    int sim;                  /* --sim: also predict through the simulation */
    const char *sim_topology; /* --sim-topology: auto (default), or a topology for every row */
    const char *flop_eff_text;
    double flop_eff; /* --flop-efficiency: replaces every row's system value (0: the preset's) */
    int calibrate;   /* --calibrate: fit the flop efficiency per system */
    int quiet;       /* --quiet: no progress on stderr */
} validate_args_t;

/* The measured mode's options from the parsed command line; the scenario's are the waterfall's. */
static int from_args(const cli_args_t *p, validate_args_t *a, cli_diag_t *d) {
    static const cli_opt_t WATERFALL_ONLY[] = {CLI_OPT_PLOT, CLI_OPT_PLACEMENT, CLI_OPT_COLLAPSE,
                                               CLI_OPT_MAX_MEMORY};
    memset(a, 0, sizeof *a);
    const char *const *v = p->value;
    a->measured = v[CLI_OPT_MEASURED];
    a->rule_text = v[CLI_OPT_UNRECORDED] ? v[CLI_OPT_UNRECORDED] : "fixed";
    a->sim = cli_has(p, CLI_OPT_SIM);
    a->quiet = cli_has(p, CLI_OPT_QUIET);
    a->sim_topology = v[CLI_OPT_SIM_TOPOLOGY];
    a->flop_eff_text = v[CLI_OPT_FLOP_EFFICIENCY];
    a->calibrate = cli_has(p, CLI_OPT_CALIBRATE);
    a->json = cli_has(p, CLI_OPT_JSON);
    const char *other = p->n_scenario ? p->scenario_opt[0]->name : NULL;
    for (size_t k = 0; !other && k < COUNT(WATERFALL_ONLY); k++)
        if (v[WATERFALL_ONLY[k]]) {
            size_t n;
            const cli_option_t *t = cli_options(&n);
            for (size_t i = 0; i < n && !other; i++)
                if (t[i].target == WATERFALL_ONLY[k])
                    other = t[i].name;
        }
    if (a->measured && (other || p->file))
        return cli_fail(d, CLI_EUSAGE,
                        "%.60s: not an option of validate --measured (the runs come from %.60s); allowed: "
                        "see `stepsim validate --help`",
                        other ? other : p->file, a->measured);
    if (strcmp(a->rule_text, "search") == 0)
        a->rule = RULE_SEARCH;
    else if (strcmp(a->rule_text, "fixed") == 0)
        a->rule = RULE_FIXED;
    else
        return cli_fail(d, CLI_EUSAGE, "--unrecorded: \"%.60s\" is not a rule; allowed: search, fixed",
                        a->rule_text);
    if (a->flop_eff_text) {
        char *end = NULL;
        errno = 0;
        a->flop_eff = strtod(a->flop_eff_text, &end);
        if (!a->flop_eff_text[0] || *end || errno || !(a->flop_eff > 0.0 && a->flop_eff <= 1.0))
            return cli_fail(d, CLI_EUSAGE,
                            "--flop-efficiency: \"%.60s\" is not a number in (0, 1]; allowed: e.g. 0.75",
                            a->flop_eff_text);
    }
    if (a->sim_topology && !a->sim)
        return cli_fail(d, CLI_EUSAGE,
                        "--sim-topology: given without --sim; allowed: --sim --sim-topology T");
    if (!a->measured)
        return cli_fail(
            d, CLI_EUSAGE,
            "validate: --measured FILE.csv is required with --unrecorded, --sim, --flop-efficiency and "
            "--calibrate; allowed: --measured "
            "FILE.csv (without these options validate prints the waterfall of the scenario)");
    return CLI_OK;
}

/* ---- reading the rows ---------------------------------------------------------------------- */

/* Where a cell is: "FILE: row 3 (GPT-7.5B): column tp". */
typedef struct reader {
    const char *file;
    const csv_table_t *t;
    size_t r;
    const char *name;
    cli_diag_t *d;
    double flop_eff; /* > 0: replaces the system preset's FLOP efficiency */
} reader_t;

static int bad_cell(const reader_t *rd, const char *col, const char *text, const char *allowed) {
    return cli_fail(rd->d, CLI_EUSAGE, "%s: row %zu (%.40s): column %s: \"%.40s\"%s%s", rd->file, rd->r,
                    rd->name[0] ? rd->name : "unnamed", col, text, allowed[0] == ';' ? "" : " ", allowed);
}

static int column(const reader_t *rd, const char *col, int required, int *idx) {
    *idx = csv_column(rd->t, col);
    if (*idx < 0 && required)
        return cli_fail(
            rd->d, CLI_EUSAGE,
            "%s: header: column %s is missing; allowed: a header with name, hidden, heads, layers, "
            "seq_len, vocab, gpus, tp, pp, dp, system and measured_iteration_s or "
            "measured_tokens_per_s_per_gpu (see `stepsim validate --help`)",
            rd->file, col);
    return CLI_OK;
}

/* The cell text of column col ("" when the column is absent or the cell empty). */
static const char *text_of(const reader_t *rd, const char *col) {
    return csv_cell(rd->t, rd->r, csv_column(rd->t, col));
}

/* A positive integer; an empty optional cell gives def (and *given = 0). */
static int int_cell(const reader_t *rd, const char *col, int required, int64_t def, int64_t *out,
                    int *given) {
    int idx;
    int rc = column(rd, col, required, &idx);
    if (rc)
        return rc;
    const char *s = csv_cell(rd->t, rd->r, idx);
    if (given)
        *given = s[0] != '\0';
    if (!s[0]) {
        if (required)
            return bad_cell(rd, col, s, "is empty; allowed: a positive integer");
        *out = def;
        return CLI_OK;
    }
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno || v < 1)
        return bad_cell(rd, col, s, "is not a positive integer; allowed: 1, 2, 3, ...");
    *out = (int64_t)v;
    return CLI_OK;
}

/* A positive number; an empty cell of a present column gives 0 (and *given = 0) unless required. */
static int num_cell(const reader_t *rd, const char *col, int required, const char *allowed, double *out,
                    int *given) {
    int idx;
    int rc = column(rd, col, required, &idx);
    if (rc)
        return rc;
    const char *s = csv_cell(rd->t, rd->r, idx);
    *given = s[0] != '\0';
    *out = 0.0;
    if (!s[0] && !required)
        return CLI_OK;
    char *end = NULL;
    errno = 0;
    double v = s[0] ? strtod(s, &end) : 0.0;
    if (!s[0] || *end || errno || !(v > 0.0) || !isfinite(v))
        return bad_cell(rd, col, s, allowed);
    *out = v;
    return CLI_OK;
}

/* NVLink counts: model_nvlink_counts, as scenario_resolve derives them. */
static void nvlink_counts(model_job_t *job) {
    model_parallel_t *p = &job->par;
    const int64_t group[4] = {p->tp1, p->tp2, p->dp, p->pp};
    int64_t nv[4] = {0, 0, 0, 0};
    model_nvlink_counts(job->gpus, job->system.nvlink_size, group, nv);
    p->nv_tp1 = nv[0], p->nv_tp2 = nv[1], p->nv_dp = nv[2], p->nv_pp = nv[3];
}

static int enum_cell(const reader_t *rd, const char *col, int required, const char *const *names, int n,
                     int *out, int *given) {
    int idx;
    int rc = column(rd, col, required, &idx);
    if (rc)
        return rc;
    const char *s = csv_cell(rd->t, rd->r, idx);
    *given = s[0] != '\0';
    if (!s[0] && !required)
        return CLI_OK;
    for (int i = 0; i < n; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return CLI_OK;
        }
    }
    char allowed[96] = "; allowed:";
    for (int i = 0; i < n; i++)
        snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s %s", i ? "," : "",
                 names[i]);
    return bad_cell(rd, col, s, allowed);
}

static int system_cell(const reader_t *rd, run_row_t *row) {
    int idx;
    int rc = column(rd, "system", 1, &idx);
    if (rc)
        return rc;
    const char *s = csv_cell(rd->t, rd->r, idx);
    if (model_system_preset(s, &row->job.system) == MODEL_OK) {
        snprintf(row->system, sizeof row->system, "%s", s);
        if (rd->flop_eff > 0.0)
            row->job.system.flop_efficiency = rd->flop_eff;
        return CLI_OK;
    }
    const char *names[32];
    size_t n = 0;
    char list[200] = "";
    for (size_t i = 0; model_system_preset_name(i) && n < COUNT(names); i++) {
        names[n++] = model_system_preset_name(i);
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[n - 1]);
    }
    const char *sg = cli_suggest(s, names, n);
    char allowed[320];
    snprintf(allowed, sizeof allowed, "is not a system preset%s%s%s; allowed: %s",
             sg ? " (did you mean " : "", sg ? sg : "", sg ? "?)" : "", list);
    return bad_cell(rd, "system", s, allowed);
}

/* The model's complaint about a row, with the column it comes from where there is one. */
static int model_issue(const reader_t *rd, const model_issue_t *is) {
    static const struct {
        const char *field, *col;
    } map[] = {{"parallel.tp", "tp"},
               {"parallel.tp1", "tp"},
               {"parallel.tp2", "cp"},
               {"parallel.pp", "pp"},
               {"parallel.dp", "dp"},
               {"parallel.mbs", "mbs"},
               {"model.heads", "heads"},
               {"model.hidden", "hidden"},
               {"model.layers", "layers"},
               {"model.seq_len", "seq_len"},
               {"model.ffn_hidden", "ffn_hidden"},
               {"model.vocab", "vocab"},
               {"global_batch", "gbs"},
               {"training.interleave", "interleave"},
               {"training.sequence_parallel", "sequence_parallel"}};
    const char *col = is->field;
    for (size_t i = 0; i < COUNT(map); i++)
        if (strcmp(is->field, map[i].field) == 0)
            col = map[i].col;
    int predicate = strncmp(is->allowed, "must ", 5) == 0 || strncmp(is->allowed, "does ", 5) == 0 ||
                    strncmp(is->allowed, "needs ", 6) == 0;
    char allowed[200];
    snprintf(allowed, sizeof allowed, "%s%s", predicate ? "" : "; allowed: ", is->allowed);
    return bad_cell(rd, col, is->value, allowed);
}

static const char *const RECOMPUTE[] = {"none", "selective", "full"};
static const char *const ATTENTION[] = {"flash", "materialized"};
static const char *const DP_COMM[] = {"sharded", "allreduce", "allreduce-overlap", "sharded-overlap"};
static const char *const GRAD_ACCUM[] = {"fused", "add"};

/* The software of a run that does not say, by GPU generation. Megatron-LM's releases of the A100 era
 * (2020-2022) computed attention with materialised scores and a fused softmax kernel, and added each
 * microbatch's weight gradients to the accumulated ones with a separate kernel (its main_grad hook;
 * the fused weight-gradient accumulation came later); on Hopper and later GPUs Megatron runs
 * attention through Transformer Engine's fused (flash) kernels and accumulates in the GEMM. */
static int a100_era(const model_system_t *sys) {
    return strstr(sys->name, "A100") != NULL;
}

/* The defaults of the software generation of a run's GPU (docs/validation.md, "GPU generation"):
 * Megatron-LM of the A100 era (fp16, no sequence parallelism, a plain data-parallel all-reduce after
 * the backward, no overlap) or NeMo / Megatron-Core's recipes on Hopper and later (bf16, sequence
 * parallelism, the distributed optimizer with overlapped gradient reduce-scatter and parameter
 * all-gather, tensor-parallel communication overlap). */
static void generation_defaults(int a100, run_settings_t *s, int *sequence_parallel) {
    s->precision = a100 ? RUN_PRECISION_FP16 : RUN_PRECISION_BF16;
    *sequence_parallel = !a100;
    s->distributed_optimizer = s->overlap_grad_reduce = s->overlap_param_gather = !a100;
    s->tp_comm_overlap = !a100;
    /* FP8 runs gather FP8 parameters: NeMo's bf16_with_fp8_mixed sets fp8_param_gather
     * (nemo/collections/llm/recipes/precision/mixed_precision.py), Megatron-LM's FP8 example passes
     * --fp8-param-gather (examples/llama/train_llama3_8b_h100_fp8.sh); it acts with precision fp8 only */
    s->fp8_param_gather = !a100;
}

static const char *const BITS[] = {"0", "1"};
static const char *const PRECISIONS[] = {"fp16", "bf16", "fp8"};
static const char *const FFN_ACTS[] = {"gelu", "swiglu", "relu2"};
static const char *const NORMS[] = {"layernorm", "rmsnorm"};
static const char *const POSITIONS[] = {"learned", "rotary"};

/* An optional 0/1 column: *out keeps its default when the cell is empty; *given says whether it was. */
static int bit_cell(const reader_t *rd, const char *col, int *out, int *given) {
    int v = 0, g = 0;
    int rc = enum_cell(rd, col, 0, BITS, 2, &v, &g);
    if (!rc && g)
        *out = v;
    if (given)
        *given = g;
    return rc;
}

/* An optional enumerated column into an enum field (kept at its default when empty). */
#define ENUM_INTO(rd, col, names, field)                                                                     \
    do {                                                                                                     \
        int v_ = 0, g_ = 0;                                                                                  \
        if ((rc = enum_cell(rd, col, 0, names, (int)COUNT(names), &v_, &g_)) != CLI_OK)                      \
            return rc;                                                                                       \
        if (g_)                                                                                              \
            (field) = v_;                                                                                    \
    } while (0)

static void note(run_row_t *row, const char *what) {
    if (row->n_not_modelled < RUN_MAX_NOT_MODELLED)
        snprintf(row->not_modelled[row->n_not_modelled++], sizeof row->not_modelled[0], "%s", what);
}

/* The row's architecture columns into the model (the enums of validate.h follow model.h's). */
static void arch_into_model(const run_settings_t *s, model_transformer_t *m) {
    m->kv_heads = s->kv_heads == m->heads ? 0 : s->kv_heads;
    m->ffn_act = (model_ffn_act_t)s->ffn_act;
    m->norm = (model_norm_t)s->norm;
    m->position = (model_position_t)s->position;
    m->untied_embeddings = s->untied_embeddings;
}

/* What the model does not honour yet: each such value of the row, named once. The prediction is
 * made without it (no FSDP; a tensor-parallel overlap the layout cannot run). The
 * architecture columns (kv_heads, ffn_act, norm, position, untied_embeddings) are the model's
 * (model_transformer_t, arch_into_model). A layer count that
 * pp does not divide (Megatron-Core runs uneven first and last stages, e.g. 126 layers on 8) is
 * predicted with the next multiple of pp and noted the same way (read_row). */
static void not_modelled(run_row_t *row) {
    const run_settings_t *s = &row->set;
    if (s->fsdp)
        note(row, "fsdp");
    if (s->tp_comm_overlap && row->job.par.tp1 > 1 && !row->job.training.tp_comm_overlap)
        note(row, "tp_comm_overlap");
    if (s->distributed_optimizer && !s->overlap_grad_reduce)
        note(row, "overlap_grad_reduce 0");
    if (s->distributed_optimizer && !s->overlap_param_gather)
        note(row, "overlap_param_gather 0");
}

/* The data-parallel communication: the dp_comm column, or the distributed optimizer and its overlaps
 * (one or the other). The distributed optimizer is modelled as `sharded`: reduce-scatter of the
 * gradients and all-gather of the parameters, ZeRO-1 states, overlapped with compute. */
static int dp_comm_of(const reader_t *rd, run_row_t *row) {
    run_settings_t *s = &row->set;
    int e = 0, g_opt = 0, g_grad = 0, g_param = 0;
    int rc = enum_cell(rd, "dp_comm", 0, DP_COMM, 4, &e, &row->dp_comm_recorded);
    if (!rc)
        rc = bit_cell(rd, "distributed_optimizer", &s->distributed_optimizer, &g_opt);
    if (!rc)
        rc = bit_cell(rd, "overlap_grad_reduce", &s->overlap_grad_reduce, &g_grad);
    if (!rc)
        rc = bit_cell(rd, "overlap_param_gather", &s->overlap_param_gather, &g_param);
    if (rc)
        return rc;
    if (row->dp_comm_recorded && (g_opt || g_grad || g_param))
        return bad_cell(rd, "dp_comm", text_of(rd, "dp_comm"),
                        "is given with distributed_optimizer / overlap_grad_reduce / overlap_param_gather; "
                        "allowed: one or the other");
    if (row->dp_comm_recorded) {
        row->job.training.dp_comm = (model_dp_comm_t)e;
        s->distributed_optimizer = s->overlap_param_gather =
            e == MODEL_DP_SHARDED || e == MODEL_DP_SHARDED_OVERLAP;
        s->overlap_grad_reduce = e != MODEL_DP_ALLREDUCE;
        return CLI_OK;
    }
    if (s->overlap_param_gather && !s->distributed_optimizer)
        return bad_cell(rd, "overlap_param_gather", "1",
                        "needs distributed_optimizer 1 (only the distributed optimizer gathers parameters)");
    /* the distributed optimizer with both overlaps is Megatron-Core's bucketed one (sharded-overlap) */
    row->job.training.dp_comm =
        !s->distributed_optimizer ? (s->overlap_grad_reduce ? MODEL_DP_ALLREDUCE_OVERLAP : MODEL_DP_ALLREDUCE)
        : s->overlap_grad_reduce && s->overlap_param_gather ? MODEL_DP_SHARDED_OVERLAP
                                                            : MODEL_DP_SHARDED;
    return CLI_OK;
}

/* The architecture columns beyond the reference's (kv_heads, ffn_act, norm, position,
 * untied_embeddings) and the precision. */
static int arch_of(const reader_t *rd, run_row_t *row) {
    run_settings_t *s = &row->set;
    const int64_t heads = row->job.model.heads;
    int rc = int_cell(rd, "kv_heads", 0, heads, &s->kv_heads, NULL);
    if (rc)
        return rc;
    if (heads % s->kv_heads != 0) {
        char allowed[96];
        snprintf(allowed, sizeof allowed, "does not divide heads (%" PRId64 ")", heads);
        return bad_cell(rd, "kv_heads", text_of(rd, "kv_heads"), allowed);
    }
    ENUM_INTO(rd, "ffn_act", FFN_ACTS, s->ffn_act);
    ENUM_INTO(rd, "norm", NORMS, s->norm);
    ENUM_INTO(rd, "position", POSITIONS, s->position);
    ENUM_INTO(rd, "precision", PRECISIONS, s->precision);
    return bit_cell(rd, "untied_embeddings", &s->untied_embeddings, NULL);
}

/* gbs, mbs and ga (gbs = dp x mbs x ga): any two give the third; all three must agree. An empty gbs
 * is dp x mbs x ga with an empty mbs 1 and an empty ga pp (the fewest microbatches that fill the
 * pipeline), under both --unrecorded rules; such a row's measured figure must be a throughput. */
static int batch_of(const reader_t *rd, run_row_t *row, int64_t dp) {
    model_job_t *job = &row->job;
    int ga_given = 0;
    int rc = int_cell(rd, "gbs", 0, 0, &job->global_batch, &row->gbs_recorded);
    if (!rc)
        rc = int_cell(rd, "mbs", 0, 1, &job->par.mbs, &row->mbs_recorded);
    if (!rc)
        rc = int_cell(rd, "ga", 0, 0, &row->set.ga, &ga_given);
    if (rc)
        return rc;
    if (!row->gbs_recorded) {
        if (!ga_given)
            row->set.ga = job->par.pp;
        if (checked_mul_i64(dp, job->par.mbs, &job->global_batch) ||
            checked_mul_i64(job->global_batch, row->set.ga, &job->global_batch))
            return bad_cell(
                rd, "gbs", "",
                "is empty and dp x mbs x ga passes 2^63 - 1; allowed: a gbs, or smaller dp, mbs, ga");
        return CLI_OK;
    }
    if (!ga_given) {
        const int64_t per_ga = checked_mul_sat_i64(dp, job->par.mbs); /* INT64_MAX never divides gbs */
        row->set.ga = job->global_batch % per_ga ? 0 : job->global_batch / per_ga;
        return CLI_OK;
    }
    if (!row->mbs_recorded && job->global_batch % checked_mul_sat_i64(dp, row->set.ga) == 0) {
        job->par.mbs = job->global_batch / checked_mul_sat_i64(dp, row->set.ga);
        row->mbs_recorded = 1;
    }
    if (checked_mul_sat_i64(checked_mul_sat_i64(dp, job->par.mbs), row->set.ga) != job->global_batch) {
        char allowed[160];
        snprintf(allowed, sizeof allowed,
                 "is not gbs / (dp x mbs) (%" PRId64 " / (%" PRId64 " x %" PRId64 ")); allowed: a ga with "
                 "gbs = dp x mbs x ga",
                 job->global_batch, dp, job->par.mbs);
        return bad_cell(rd, "ga", text_of(rd, "ga"), allowed);
    }
    return CLI_OK;
}

/* The measured figure: measured_iteration_s, or measured_tokens_per_s_per_gpu turned into seconds
 * per iteration, gbs x seq_len / (tokens/s per GPU x gpus). Exactly one of the two. */
static int measured_of(const reader_t *rd, run_row_t *row) {
    int it_given = 0, tok_given = 0;
    double tokens = 0.0;
    int rc = num_cell(rd, "measured_tokens_per_s_per_gpu", 0,
                      "is not a positive number; allowed: tokens per second per GPU, e.g. 12036", &tokens,
                      &tok_given);
    if (!rc)
        rc = num_cell(rd, "measured_iteration_s",
                      !tok_given && csv_column(rd->t, "measured_tokens_per_s_per_gpu") < 0,
                      "is not a positive number; allowed: seconds, e.g. 3.528", &row->measured_s, &it_given);
    if (rc)
        return rc;
    if (it_given && tok_given)
        return bad_cell(rd, "measured_iteration_s", text_of(rd, "measured_iteration_s"),
                        "is given with measured_tokens_per_s_per_gpu; allowed: one of the two");
    if (!it_given && !tok_given)
        return bad_cell(rd, "measured_iteration_s", "",
                        "is empty; allowed: seconds, or a measured_tokens_per_s_per_gpu");
    if (it_given && !row->gbs_recorded)
        return bad_cell(rd, "gbs", "",
                        "is empty; allowed: a positive integer (an empty gbs needs a measured throughput, "
                        "measured_tokens_per_s_per_gpu)");
    row->set.measured_tokens_per_s_per_gpu = tokens;
    if (tok_given)
        row->measured_s =
            (double)row->job.global_batch * (double)row->job.model.seq_len / (tokens * (double)row->job.gpus);
    return CLI_OK;
}

static int read_row(const reader_t *rd, run_row_t *row) {
    int64_t tp = 0, pp = 0, dp = 0, cp = 1, gpus = 0, v = 1;
    int given = 0, e = 0;
    model_job_t *job = &row->job;
    model_transformer_t *m = &job->model;
    memset(row, 0, sizeof *row);
    snprintf(row->name, sizeof row->name, "%s", rd->name);
    int rc = system_cell(rd, row);
    if (!rc)
        rc = int_cell(rd, "hidden", 1, 0, &m->hidden, NULL);
    if (!rc)
        rc = int_cell(rd, "heads", 1, 0, &m->heads, NULL);
    if (!rc)
        rc = int_cell(rd, "layers", 1, 0, &m->layers, NULL);
    if (!rc)
        rc = int_cell(rd, "seq_len", 1, 0, &m->seq_len, NULL);
    if (!rc)
        rc = int_cell(rd, "vocab", 1, 0, &m->vocab, NULL);
    if (!rc)
        rc = int_cell(rd, "ffn_hidden", 0, checked_mul_sat_i64(4, m->hidden), &m->ffn_hidden, NULL);
    if (!rc)
        rc = int_cell(rd, "gpus", 1, 0, &gpus, NULL);
    if (!rc)
        rc = int_cell(rd, "tp", 1, 0, &tp, NULL);
    if (!rc)
        rc = int_cell(rd, "pp", 1, 0, &pp, NULL);
    if (!rc)
        rc = int_cell(rd, "dp", 1, 0, &dp, NULL);
    if (!rc)
        rc = int_cell(rd, "cp", 0, 1, &cp, NULL);
    if (!rc)
        rc = int_cell(rd, "ep", 0, 1, &row->set.ep, NULL);
    if (!rc && row->set.ep != 1)
        return bad_cell(rd, "ep", text_of(rd, "ep"),
                        "must be 1 (dense models; mixture of experts is not in the measured-runs schema)");
    job->par.pp = pp;
    if (!rc)
        rc = batch_of(rd, row, dp);
    if (!rc)
        rc = int_cell(rd, "interleave", 0, 1, &v, &row->interleave_recorded);
    if (!rc)
        rc = enum_cell(rd, "recompute", 0, RECOMPUTE, 3, &e, &given);
    if (rc)
        return rc;
    job->training.recompute = given ? (model_recompute_t)e : MODEL_RECOMPUTE_NONE;
    const int a100 = a100_era(&job->system);
    int sp = 0;
    generation_defaults(a100, &row->set, &sp);
    if ((rc = enum_cell(rd, "sequence_parallel", 0, BITS, 2, &e, &given)))
        return rc;
    if (given)
        sp = e;
    job->training.attention = a100 ? MODEL_ATTENTION_MATERIALIZED : MODEL_ATTENTION_FLASH;
    if ((rc = enum_cell(rd, "attention", 0, ATTENTION, 2, &e, &row->attention_recorded)))
        return rc;
    if (row->attention_recorded)
        job->training.attention = (model_attention_t)e;
    if ((rc = dp_comm_of(rd, row)))
        return rc;
    job->training.grad_accumulation = a100 ? MODEL_GRAD_ACCUM_ADD : MODEL_GRAD_ACCUM_FUSED;
    if ((rc = enum_cell(rd, "grad_accumulation", 0, GRAD_ACCUM, 2, &e, &row->grad_accum_recorded)))
        return rc;
    if (row->grad_accum_recorded)
        job->training.grad_accumulation = (model_grad_accum_t)e;
    if (!rc)
        rc = arch_of(rd, row);
    if (!rc)
        rc = bit_cell(rd, "fsdp", &row->set.fsdp, NULL);
    if (!rc)
        rc = bit_cell(rd, "tp_comm_overlap", &row->set.tp_comm_overlap, NULL);
    int fp8_gather_given = 0;
    if (!rc)
        rc = bit_cell(rd, "fp8_param_gather", &row->set.fp8_param_gather, &fp8_gather_given);
    if (rc)
        return rc;
    if (fp8_gather_given && row->set.fp8_param_gather &&
        (row->set.precision != RUN_PRECISION_FP8 || !row->set.distributed_optimizer))
        return bad_cell(rd, "fp8_param_gather", "1",
                        "needs precision fp8 and the distributed optimizer (it all-gathers FP8 parameters); "
                        "allowed: 0");

    int64_t product;
    const int wraps = checked_mul_i64(tp, pp, &product) || checked_mul_i64(product, dp, &product) ||
                      checked_mul_i64(product, cp, &product);
    if (wraps || product != gpus) {
        char msg[160], prod[32];
        snprintf(prod, sizeof prod, wraps ? "more than 2^63" : "%lld", (long long)product);
        snprintf(msg, sizeof msg, "is not tp x pp x dp x cp (%lld x %lld x %lld x %lld = %s); allowed: %s",
                 (long long)tp, (long long)pp, (long long)dp, (long long)cp, prod,
                 wraps ? "a product of at most 2^63 - 1" : prod);
        char text[32];
        snprintf(text, sizeof text, "%lld", (long long)gpus);
        return bad_cell(rd, "gpus", text, msg);
    }
    if (cp > 1 && sp == 0)
        return bad_cell(rd, "sequence_parallel", "0",
                        "with cp > 1 is not modeled; allowed: 1 (context parallelism runs as 2d-seqp, whose "
                        "tensor group is sequence parallel)");
    job->gpus = gpus;
    if ((rc = measured_of(rd, row)))
        return rc;
    job->compat = MODEL_COMPAT_CORRECTED;
    job->par.strategy = cp > 1 ? MODEL_STRATEGY_2D_SEQP : MODEL_STRATEGY_1D;
    job->par.dp = dp;
    job->par.tp = tp * cp; /* tp x cp divides the checked product above */
    job->par.tp1 = tp;
    job->par.tp2 = cp;
    job->par.pp = pp;
    job->par.nb = 1;
    job->training.sequence_parallel = sp ? MODEL_SEQPAR_ON : MODEL_SEQPAR_OFF;
    job->training.embedding = 1;
    job->training.optimizer_step = 1;
    job->training.interleave = v;
    row->cp = cp;
    arch_into_model(&row->set, m);
    /* FP8 (Transformer Engine) at the system's FP8 peak; FP16 and BF16 run at the same peak */
    job->training.precision =
        row->set.precision == RUN_PRECISION_FP8 ? MODEL_PRECISION_FP8 : MODEL_PRECISION_BF16;
    /* Megatron-Core's overlaps as the row (or its generation's recipe) sets them: tensor-parallel
     * communication in chunks under the GEMMs, and context parallelism as its ring of K and V under
     * the attention (the only way Megatron-Core runs cp) */
    job->training.tp_comm_overlap =
        row->set.tp_comm_overlap && tp > 1 && sp && job->training.recompute != MODEL_RECOMPUTE_FULL;
    if (cp > 1)
        job->training.cp_comm = MODEL_CP_RING;
    /* the distributed optimizer's parameter all-gather in FP8 (fp8_param_gather) */
    job->training.fp8_param_gather =
        row->set.fp8_param_gather && job->training.precision == MODEL_PRECISION_FP8 &&
        (job->training.dp_comm == MODEL_DP_SHARDED || job->training.dp_comm == MODEL_DP_SHARDED_OVERLAP);
    /* Megatron-LM overlaps the interleaved schedule's sends and receives with compute unless told
     * not to (--no-overlap-p2p-communication; NeMo's recipes keep it on) */
    job->training.pp_comm_overlap = !a100 && v > 1;
    nvlink_counts(job);
    not_modelled(row);
    if (m->layers % pp != 0) { /* Megatron's uneven first and last stages: not modelled */
        char what[32];
        const int64_t even = checked_mul_sat_i64(checked_add_sat_i64(m->layers, pp - 1) / pp, pp);
        snprintf(what, sizeof what, "layers %" PRId64 " as %" PRId64, m->layers, even);
        note(row, what);
        m->layers = even;
    }
    model_issue_t is;
    memset(&is, 0, sizeof is);
    if (model_job_check(job, &is) != MODEL_OK)
        return model_issue(rd, &is);
    return CLI_OK;
}

/* ---- the unrecorded-settings rule ------------------------------------------------------------ */

/* The fastest (mbs, interleave) that fits, over the settings the row leaves open: every mbs that
 * divides gbs/dp and every interleave that divides the layers per stage and that model_job_check
 * accepts (Megatron's conditions). Ties keep the smaller mbs, then the smaller interleave. */
static int choose_unrecorded(run_row_t *row, cli_diag_t *d) {
    model_job_t best = row->job, any = row->job, cand = row->job;
    double best_thr = -1.0, any_thr = -1.0;
    const int64_t per_replica = row->job.global_batch / row->job.par.dp;
    const int64_t per_stage = row->job.model.layers / row->job.par.pp;
    for (int64_t mbs = 1; mbs <= per_replica; mbs++) {
        if (row->mbs_recorded ? mbs != row->job.par.mbs : per_replica % mbs != 0)
            continue;
        for (int64_t v = 1; v <= per_stage; v++) {
            if (row->interleave_recorded ? v != row->job.training.interleave : per_stage % v != 0)
                continue;
            cand.par.mbs = mbs;
            cand.training.interleave = v;
            if (model_job_check(&cand, NULL) != MODEL_OK)
                continue;
            model_summary_t s;
            memset(&s, 0, sizeof s);
            int rc = ANALYTIC.predict(&cand, &s, d);
            if (rc)
                return rc;
            if (s.fits && s.throughput_samples_per_s > best_thr) {
                best_thr = s.throughput_samples_per_s;
                best = cand;
            }
            if (s.throughput_samples_per_s > any_thr) {
                any_thr = s.throughput_samples_per_s;
                any = cand;
            }
        }
    }
    row->job = best_thr > 0.0 ? best : any;
    return CLI_OK;
}

/* ---- report ---------------------------------------------------------------------------------- */

static void stats_of(const run_row_t *rows, size_t n, summary_stats_t *st) {
    memset(st, 0, sizeof *st);
    for (size_t i = 0; i < n; i++) {
        st->mean_abs += fabs(rows[i].error_pct) / (double)n;
        st->ref_mean_abs += fabs(rows[i].ref_error_pct) / (double)n;
        st->max_abs = fmax(st->max_abs, fabs(rows[i].error_pct));
        st->ref_max_abs = fmax(st->ref_max_abs, fabs(rows[i].ref_error_pct));
    }
}

/* ---- the command ------------------------------------------------------------------------------ */

static int load_rows(const validate_args_t *a, const csv_table_t *t, run_row_t *rows, cli_diag_t *d) {
    for (size_t r = 1; r < t->n_rows; r++) {
        reader_t rd = {a->measured, t, r, "", d, a->flop_eff};
        rd.name = text_of(&rd, "name");
        int idx;
        int rc = column(&rd, "name", 1, &idx);
        if (!rc)
            rc = read_row(&rd, &rows[r - 1]);
        if (!rc && a->rule == RULE_SEARCH && (!rows[r - 1].mbs_recorded || !rows[r - 1].interleave_recorded))
            rc = choose_unrecorded(&rows[r - 1], d);
        if (rc)
            return rc;
        const model_job_t *j = &rows[r - 1].job;
        rows[r - 1].set.ga = j->global_batch / checked_mul_sat_i64(j->par.dp, j->par.mbs); /* as predicted */
    }
    return CLI_OK;
}

static int predict_rows(const predictor_t *pr, run_row_t *rows, size_t n, cli_diag_t *d) {
    for (size_t i = 0; i < n; i++) {
        run_row_t *r = &rows[i];
        int rc = pr->predict(&r->job, &r->pred, d);
        model_job_t ref = r->job;
        ref.compat = MODEL_COMPAT_REFERENCE;
        /* the published model knows GPT's block only: it predicts the run as that */
        ref.model.kv_heads = 0;
        ref.model.ffn_act = MODEL_FFN_GELU;
        ref.model.norm = MODEL_NORM_LAYERNORM;
        ref.model.position = MODEL_POSITION_LEARNED;
        ref.model.untied_embeddings = 0;
        ref.training.precision = MODEL_PRECISION_BF16;
        if (!rc)
            rc = ANALYTIC.predict(&ref, &r->ref, d);
        char what[128];
        snprintf(what, sizeof what, "%s: row %zu (%.40s): predicted iteration time", pr->name, i + 1,
                 r->name);
        if (!rc)
            rc = cmd_require_finite(r->pred.iteration_time_s, what, &r->job, d);
        if (!rc)
            rc = cmd_require_finite(r->ref.iteration_time_s, what, &r->job, d);
        if (rc)
            return rc;
        r->error_pct = 100.0 * (r->pred.iteration_time_s - r->measured_s) / r->measured_s;
        r->ref_error_pct = 100.0 * (r->ref.iteration_time_s - r->measured_s) / r->measured_s;
    }
    return CLI_OK;
}

/* Whether the command line has --measured or an option only it takes (else the command is the
 * waterfall of cmd_compare.c). */
static int has_measured(const cli_args_t *p) {
    static const cli_opt_t MEASURED_ONLY[] = {
        CLI_OPT_MEASURED,     CLI_OPT_UNRECORDED,      CLI_OPT_SIM,
        CLI_OPT_SIM_TOPOLOGY, CLI_OPT_FLOP_EFFICIENCY, CLI_OPT_CALIBRATE};
    for (size_t k = 0; k < COUNT(MEASURED_ONLY); k++)
        if (cli_has(p, MEASURED_ONLY[k]))
            return 1;
    return 0;
}

/* ---- --sim: predictions through the simulation -------------------------------------------------- */

/* The topology of --sim for a row: the DGX SuperPOD preset of a DGX system, else ideal. */
static const char *sim_topology_of(const validate_args_t *a, const run_row_t *r) {
    if (a->sim_topology && strcmp(a->sim_topology, "auto") != 0)
        return a->sim_topology;
    if (strcmp(r->system, "DGX-A100") == 0)
        return "dgx-a100-superpod";
    if (strcmp(r->system, "DGX-H100") == 0)
        return "dgx-h100-superpod";
    return "ideal";
}

/* The simulation runs each row's job as it is, with one exception: it has the embedding and output
 * layer in 1d only. A 2d or 2d-seqp row with them is simulated without them (job'), and the analytic
 * model's cost of the difference, analytic(job) - analytic(job'), is added to the simulated step and
 * reported per row ("added"; 0 for every other row). */
static int sim_job(const run_row_t *r, model_job_t *job, double *added_s, cli_diag_t *d) {
    *job = r->job;
    *added_s = 0.0;
    if (job->par.strategy == MODEL_STRATEGY_1D || !job->training.embedding)
        return CLI_OK;
    job->training.embedding = 0;
    model_summary_t plain;
    memset(&plain, 0, sizeof plain);
    int rc = ANALYTIC.predict(job, &plain, d);
    if (!rc)
        *added_s = r->pred.iteration_time_s - plain.iteration_time_s;
    return rc;
}

/* The topologies --sim may take, parsed before anything is read or computed (topo_json.h):
 * --sim-topology's, or auto's presets and ideal. */
typedef struct sim_specs {
    int fixed; /* 1: --sim-topology names one for every row */
    topo_spec_t chosen, a100, h100, ideal;
} sim_specs_t;

static int sim_specs_parse(const validate_args_t *a, sim_specs_t *s, cli_diag_t *d) {
    s->fixed = a->sim_topology && strcmp(a->sim_topology, "auto") != 0;
    if (s->fixed)
        return topo_spec_parse_text(a->sim_topology, "--sim-topology", &s->chosen, d);
    int rc = topo_spec_parse_text("dgx-a100-superpod", "--sim-topology", &s->a100, d);
    if (!rc)
        rc = topo_spec_parse_text("dgx-h100-superpod", "--sim-topology", &s->h100, d);
    if (!rc)
        rc = topo_spec_parse_text("ideal", "--sim-topology", &s->ideal, d);
    return rc;
}

static const topo_spec_t *sim_spec_of(const sim_specs_t *s, const char *name) {
    return s->fixed                                 ? &s->chosen
           : strcmp(name, "dgx-a100-superpod") == 0 ? &s->a100
           : strcmp(name, "dgx-h100-superpod") == 0 ? &s->h100
                                                    : &s->ideal;
}

static int sim_rows_shown(const validate_args_t *a, const sim_specs_t *specs, run_row_t *rows, size_t n,
                          FILE *err, cli_progress_t *progress, cli_diag_t *d) {
    for (size_t i = 0; i < n; i++) {
        run_row_t *r = &rows[i];
        model_job_t job;
        int rc = sim_job(r, &job, &r->sim_unmodeled_s, d);
        if (rc)
            return rc;
        snprintf(r->sim_topology, sizeof r->sim_topology, "%s", sim_topology_of(a, r));
        simpoint_t p0, p1;
        cli_diag_t pd;
        pd.msg[0] = '\0';
        char what[160];
        snprintf(what, sizeof what, "%.80s, analytic communication", r->name);
        cli_progress_stage(progress, 2 * (int64_t)i, 2 * (int64_t)n, what);
        rc = simpoint_run(&job, NULL, NULL, NULL, "--sim", 0, progress, &p0, &pd);
        snprintf(what, sizeof what, "%.80s on %.60s", r->name, r->sim_topology);
        cli_progress_stage(progress, 2 * (int64_t)i + 1, 2 * (int64_t)n, what);
        if (!rc)
            rc = simpoint_run(&job, NULL, sim_spec_of(specs, r->sim_topology), NULL, "--sim-topology", 0,
                              progress, &p1, &pd);
        if (rc == CLI_ERUNTIME && strstr(pd.msg, "out of memory"))
            return cli_fail(d, CLI_ERUNTIME, "%s: %s", r->name, pd.msg);
        if (rc) {
            snprintf(r->sim_error, sizeof r->sim_error, "%.199s", pd.msg);
            cli_progress_clear(progress);
            if (err)
                fprintf(err, "stepsim validate: %s: not simulated: %s\n", r->name, pd.msg);
            continue;
        }
        r->sim_wall_s = p0.wall_s + p1.wall_s;
        r->sim_analytic_s = p0.step_time_s + r->sim_unmodeled_s;
        r->sim_network_s = p1.step_time_s + r->sim_unmodeled_s;
        r->sim_analytic_error_pct = 100.0 * (r->sim_analytic_s - r->measured_s) / r->measured_s;
        r->sim_network_error_pct = 100.0 * (r->sim_network_s - r->measured_s) / r->measured_s;
    }
    return CLI_OK;
}

static int sim_rows(const validate_args_t *a, const sim_specs_t *specs, run_row_t *rows, size_t n, FILE *err,
                    cli_diag_t *d) {
    cli_progress_t progress;
    cli_progress_init(&progress, err, "validate", a->quiet, 0);
    int rc = sim_rows_shown(a, specs, rows, n, err, &progress, d);
    cli_progress_end(&progress);
    return rc;
}

static void sim_stats_of(const run_row_t *rows, size_t n, sim_stats_t *st) {
    memset(st, 0, sizeof *st);
    for (size_t i = 0; i < n; i++)
        st->simulated += rows[i].sim_error[0] == '\0';
    for (size_t i = 0; i < n && st->simulated; i++) {
        if (rows[i].sim_error[0])
            continue;
        const double e[3] = {rows[i].error_pct, rows[i].sim_analytic_error_pct,
                             rows[i].sim_network_error_pct};
        for (int k = 0; k < 3; k++) {
            st->mean_abs[k] += fabs(e[k]) / (double)st->simulated;
            st->max_abs[k] = fmax(st->max_abs[k], fabs(e[k]));
        }
    }
}

/* ---- --calibrate: the FLOP efficiency fitted per system ------------------------------------------ */

/* One fit over the rows of rows[first]'s system and precision (marking them done) into *c: FP8 runs fit
 * the FP8 GEMM efficiency, the others the FLOP efficiency (model_calibrate_fit). */
static int calibrate_system(const run_row_t *rows, size_t n, size_t first, char *done, validate_calib_t *c,
                            cli_diag_t *d) {
    model_job_t *jobs = alloc_malloc(n * sizeof *jobs);
    double *measured = alloc_malloc(n * sizeof *measured);
    c->names = alloc_malloc(n * sizeof *c->names);
    c->system = rows[first].job.system.name;
    size_t m = 0;
    int rc = jobs && measured && c->names ? CLI_OK : cli_fail(d, CLI_ERUNTIME, "validate: out of memory");
    for (size_t i = first; i < n && !rc; i++) {
        if (done[i] || strcmp(rows[i].system, rows[first].system) != 0 ||
            rows[i].job.training.precision != rows[first].job.training.precision)
            continue;
        done[i] = 1;
        jobs[m] = rows[i].job;
        measured[m] = rows[i].measured_s;
        c->names[m++] = rows[i].name;
    }
    if (!rc) {
        const int mrc = model_calibrate_fit(jobs, measured, m, &c->fit);
        if (mrc == MODEL_ENOMEM)
            rc = cli_fail(d, CLI_ERUNTIME, "validate: out of memory");
        else if (mrc)
            rc = cli_fail(d, CLI_EUSAGE, "validate: --calibrate: the model rejected a checked job");
        else
            c->fitted = 1;
    }
    free(jobs);
    free(measured);
    return rc;
}

/* Every system's fit, in the order of each system's first row. */
static int calibrate_rows(const run_row_t *rows, size_t n, validate_result_t *r, cli_diag_t *d) {
    char *done = alloc_calloc(n, 1);
    r->calib = alloc_calloc(n, sizeof *r->calib);
    if (!done || !r->calib) {
        free(done);
        return cli_fail(d, CLI_ERUNTIME, "validate: out of memory");
    }
    int rc = CLI_OK;
    for (size_t i = 0; i < n && !rc; i++)
        if (!done[i])
            rc = calibrate_system(rows, n, i, done, &r->calib[r->n_calib++], d);
    free(done);
    return rc;
}

static void validate_result_destroy(validate_result_t *r) {
    for (size_t i = 0; i < r->n_calib; i++) {
        if (r->calib[i].fitted)
            model_calibrate_destroy(&r->calib[i].fit);
        free(r->calib[i].names);
    }
    free(r->calib);
}

int cmd_validate(const cli_args_t *p, FILE *out, FILE *err, cli_diag_t *d) {
    if (!has_measured(p))
        return cmd_waterfall(p, out, err, d);
    validate_args_t a;
    int rc = from_args(p, &a, d);
    if (rc)
        return rc;
    sim_specs_t *specs = a.sim ? alloc_malloc(sizeof *specs) : NULL;
    if (a.sim && !specs)
        return cli_fail(d, CLI_ERUNTIME, "validate: out of memory");
    if (a.sim && (rc = sim_specs_parse(&a, specs, d)) != CLI_OK) {
        free(specs);
        return rc;
    }
    csv_table_t t;
    if (csv_load(a.measured, &t) != 0) {
        const int e = errno;
        free(specs);
        errno = e;
        if (errno == ENOMEM)
            return cli_fail(d, CLI_ERUNTIME, "%s: out of memory", a.measured);
        if (errno == EFBIG) {
            struct stat st;
            const int reg = stat(a.measured, &st) == 0 && S_ISREG(st.st_mode);
            return input_fail_too_large(a.measured, "measured-runs CSV", reg ? (long long)st.st_size : -1,
                                        READFILE_CSV_LIMIT_BYTES, d);
        }
        if (errno == EINVAL && t.error_line > 0)
            return cli_fail(d, CLI_EUSAGE,
                            "%s: line %zu: a quoted field is never closed; allowed: RFC 4180 quoting (a "
                            "field in double quotes, \"\" for a quote inside it)",
                            a.measured, t.error_line);
        return cli_fail(d, CLI_EUSAGE, "%s: cannot read: %s; allowed: a CSV file with a header row",
                        a.measured, errno == EINVAL ? "empty file" : strerror(errno));
    }
    const size_t n = t.n_rows - 1;
    run_row_t *rows = n ? alloc_calloc(n, sizeof *rows) : NULL;
    rc = input_check_csv(&t, a.measured, d);
    if (!rc && n == 0)
        rc = cli_fail(d, CLI_EUSAGE, "%s: no data rows after the header; allowed: one measured run per row",
                      a.measured);
    else if (!rc && !rows)
        rc = cli_fail(d, CLI_ERUNTIME, "validate: out of memory");
    if (!rc)
        rc = load_rows(&a, &t, rows, d);
    if (!rc)
        rc = predict_rows(&ANALYTIC, rows, n, d);
    if (!rc && a.sim)
        rc = sim_rows(&a, specs, rows, n, err, d);
    free(specs);
    validate_result_t res;
    memset(&res, 0, sizeof res);
    res.file = a.measured;
    res.source = ANALYTIC.name;
    res.source_describe = ANALYTIC.describe;
    res.unrecorded_search = a.rule == RULE_SEARCH;
    res.rows = rows;
    res.n = n;
    res.sim = a.sim;
    res.calibrate = a.calibrate;
    if (!rc) {
        stats_of(rows, n, &res.stats);
        if (a.sim)
            sim_stats_of(rows, n, &res.sim_stats);
        if (a.calibrate)
            rc = calibrate_rows(rows, n, &res, d);
    }
    if (!rc && print_validate(out, &res, a.json) != 0)
        rc = cli_fail(d, CLI_ERUNTIME, "validate: out of memory while printing");
    validate_result_destroy(&res);
    free(rows);
    csv_free(&t);
    return rc;
}
