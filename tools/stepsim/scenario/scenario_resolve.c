/* scenario_resolve.c - derive the degrees a scenario leaves out, then check the job.
 *
 * Order of checks, so that the most useful message wins: strategy-specific fields, then the model's
 * rules (model_job_check on a job whose GPU count is the product of the degrees, so that a bad tp is
 * reported as bad even when the product is also wrong: exit 2), then dp*tp*pp == gpus (exit 3),
 * then model_job_check on the real job. The derivation rules are printed by --help
 * (scenario_defaults_help), keep the two in step.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "checked.h"
#include "scenario_internal.h"

/* Largest d <= cap dividing n, and a and b when they are > 0; at least 1. */
static int64_t largest_divisor(int64_t n, int64_t cap, int64_t a, int64_t b) {
    for (int64_t d = cap < n ? cap : n; d > 1; d--)
        if (n % d == 0 && (a <= 0 || a % d == 0) && (b <= 0 || b % d == 0))
            return d;
    return 1;
}

/* Products of positive degrees saturate at INT64_MAX (checked_mul_sat_i64): a product that large
 * never equals a GPU count, so the product check reports it instead of the arithmetic wrapping. */

/* Set a field that the user did not give. */
static void derive(scenario_t *s, scenario_field_t f, int64_t v, scenario_origin_t o) {
    if (s->given[f])
        return;
    s->value[f] = v;
    s->origin[f] = o;
}

/* Where a value came from, for the start of a message: "run.json: parallel.tp", "--tp",
 * "parallel.dp (derived; set it with --dp)". path overrides the field's own path (model.heads). */
static const char *where(const scenario_t *s, scenario_field_t f, const char *path, char *buf, size_t n) {
    const char *p = path ? path : scenario_field_path(f);
    switch (s->origin[f]) {
    case SCN_FROM_FILE:
        snprintf(buf, n, "%s: %s", s->file, p);
        break;
    case SCN_FROM_OPTION:
        if (path && strcmp(path, scenario_field_path(f)) != 0)
            snprintf(buf, n, "%s: %s", scenario_field_option(f), p);
        else
            snprintf(buf, n, "%s", scenario_field_option(f));
        break;
    case SCN_FROM_DERIVED:
        snprintf(buf, n, "%s (derived; set it with %s)", p, scenario_field_option(f));
        break;
    default:
        snprintf(buf, n, "%s (default; set it with %s)", p, scenario_field_option(f));
        break;
    }
    return buf;
}

/* A field that the strategy does not use must be absent or 1. */
static int unused_field(const scenario_t *s, scenario_field_t f, const char *used_by, cli_diag_t *d) {
    char w[320];
    if (!s->given[f] || s->value[f] == 1)
        return CLI_OK;
    return cli_fail(d, CLI_EUSAGE,
                    "%s: %lld is only used by strategy %s; allowed: 1 or absent with strategy %s",
                    where(s, f, NULL, w, sizeof w), (long long)s->value[f], used_by,
                    model_strategy_name((model_strategy_t)s->strategy));
}

/* For 1d, tp1 is another name of tp (and nv.tp1 of nv.tp). */
static int alias_field(scenario_t *s, scenario_field_t alias, scenario_field_t f, cli_diag_t *d) {
    char w[320];
    if (!s->given[alias])
        return CLI_OK;
    if (s->given[f] && s->value[f] != s->value[alias])
        return cli_fail(d, CLI_EUSAGE, "%s: %lld differs from %s (%lld); allowed: with strategy 1d, %s is %s",
                        where(s, alias, NULL, w, sizeof w), (long long)s->value[alias],
                        scenario_field_path(f), (long long)s->value[f], scenario_field_path(alias),
                        scenario_field_path(f));
    s->value[f] = s->value[alias];
    s->given[f] = 1;
    s->origin[f] = s->origin[alias];
    return CLI_OK;
}

static int strategy_fields(scenario_t *s, cli_diag_t *d) {
    char w[320];
    int rc = CLI_OK;
    if (s->strategy == SCN_STRATEGY_ALL)
        return cli_fail(d, CLI_EUSAGE, "%s: all is only valid for search; allowed: 1d, 2d, 2d-seqp",
                        where(s, SCN_STRATEGY, NULL, w, sizeof w));
    if (s->strategy == MODEL_STRATEGY_1D) {
        if (!(rc = unused_field(s, SCN_TP2, "2d or 2d-seqp", d)) &&
            !(rc = unused_field(s, SCN_NV_TP2, "2d or 2d-seqp", d)) &&
            !(rc = unused_field(s, SCN_NB, "2d", d)) && !(rc = alias_field(s, SCN_TP1, SCN_TP, d)))
            rc = alias_field(s, SCN_NV_TP1, SCN_NV_TP, d);
        return rc;
    }
    if (s->given[SCN_NV_TP])
        return cli_fail(d, CLI_EUSAGE,
                        "%s: %lld is only used by strategy 1d; allowed: nv.tp1 and nv.tp2 with strategy %s",
                        where(s, SCN_NV_TP, NULL, w, sizeof w), (long long)s->value[SCN_NV_TP],
                        model_strategy_name((model_strategy_t)s->strategy));
    if (s->strategy == MODEL_STRATEGY_2D_SEQP)
        rc = unused_field(s, SCN_NB, "2d", d);
    return rc;
}

/* 2d: complete tp1/tp2 from tp when one or both are missing. */
static int tensor_2d(scenario_t *s, cli_diag_t *d) {
    int64_t *v = s->value;
    int g1 = s->given[SCN_TP1], g2 = s->given[SCN_TP2], gt = s->given[SCN_TP];
    char w[320];
    if (!g1 && !g2) {
        if (gt) {
            derive(s, SCN_TP1, v[SCN_TP], SCN_FROM_DERIVED);
            derive(s, SCN_TP2, 1, SCN_FROM_DERIVED);
        }
        return CLI_OK;
    }
    scenario_field_t known = g1 ? SCN_TP1 : SCN_TP2, other = g1 ? SCN_TP2 : SCN_TP1;
    if (!(g1 && g2))
        derive(s, other, gt && v[SCN_TP] % v[known] == 0 ? v[SCN_TP] / v[known] : 1, SCN_FROM_DERIVED);
    const int64_t t = checked_mul_sat_i64(v[SCN_TP1], v[SCN_TP2]);
    if (gt && v[SCN_TP] != t)
        return cli_fail(d, CLI_EUSAGE, "%s: %lld is not tp1 x tp2 (%lld x %lld); allowed: %lld or absent",
                        where(s, SCN_TP, NULL, w, sizeof w), (long long)v[SCN_TP], (long long)v[SCN_TP1],
                        (long long)v[SCN_TP2], (long long)t);
    v[SCN_TP] = t;
    return CLI_OK;
}

/* The tensor degree T = tp (1d) or tp1*tp2, derived when nothing gives it. */
static int tensor_degree(scenario_t *s, cli_diag_t *d) {
    int64_t *v = s->value, gpus = v[SCN_GPUS];
    int rc = s->strategy == MODEL_STRATEGY_1D ? CLI_OK : tensor_2d(s, d);
    if (rc)
        return rc;
    /* in 1d, tp2 is not a degree (strategy_fields allows only 1): it gives no tensor degree */
    if (s->given[SCN_TP] || s->given[SCN_TP1] || (s->strategy != MODEL_STRATEGY_1D && s->given[SCN_TP2])) {
        if (s->strategy == MODEL_STRATEGY_1D)
            v[SCN_TP1] = v[SCN_TP], v[SCN_TP2] = 1;
        return CLI_OK;
    }
    int64_t T;
    int64_t rest = checked_mul_sat_i64(s->given[SCN_DP] ? v[SCN_DP] : 1, s->given[SCN_PP] ? v[SCN_PP] : 1);
    if (s->given[SCN_DP] && s->given[SCN_PP] && gpus % rest == 0)
        T = gpus / rest;
    else
        T = largest_divisor(gpus % rest == 0 ? gpus / rest : gpus, SCN_DEFAULT_TP_CAP,
                            model_kv_heads(&s->model), s->model.hidden); /* kv_heads divides heads */
    scenario_origin_t o = s->given[SCN_DP] && s->given[SCN_PP] ? SCN_FROM_DERIVED : SCN_FROM_DEFAULT;
    derive(s, SCN_TP, T, o);
    derive(s, SCN_TP1, T, o);
    derive(s, SCN_TP2, 1, o);
    return CLI_OK;
}

/* pp and dp: one missing is derived from the others; pp defaults to a capped divisor. Sets *no_dp
 * when dp cannot be derived (the product check reports it). */
static void pipeline_and_data(scenario_t *s, int *no_dp) {
    int64_t *v = s->value, gpus = v[SCN_GPUS], T = v[SCN_TP];
    if (!s->given[SCN_PP]) {
        if (s->given[SCN_DP] && gpus % checked_mul_sat_i64(v[SCN_DP], T) == 0)
            derive(s, SCN_PP, gpus / checked_mul_sat_i64(v[SCN_DP], T), SCN_FROM_DERIVED);
        else
            derive(s, SCN_PP,
                   largest_divisor(gpus % T == 0 ? gpus / T : gpus, SCN_DEFAULT_PP_CAP, s->model.layers, 0),
                   SCN_FROM_DEFAULT);
    }
    *no_dp = 0;
    if (!s->given[SCN_DP]) {
        *no_dp = gpus % checked_mul_sat_i64(T, v[SCN_PP]) != 0;
        derive(s, SCN_DP, *no_dp ? 1 : gpus / checked_mul_sat_i64(T, v[SCN_PP]), SCN_FROM_DERIVED);
    }
    derive(s, SCN_MBS, 1, SCN_FROM_DEFAULT);
    int64_t nb = v[SCN_TP1] > v[SCN_TP2] ? v[SCN_TP1] : v[SCN_TP2];
    derive(s, SCN_NB, s->strategy == MODEL_STRATEGY_2D ? nb : 1, SCN_FROM_DEFAULT);
}

/* nv counts: whole groups when the job fits in one domain, else fill the domain innermost-first. */
static void nvlink_counts(scenario_t *s) {
    int64_t *v = s->value;
    int one_d = s->strategy == MODEL_STRATEGY_1D;
    scenario_field_t nv[4] = {one_d ? SCN_NV_TP : SCN_NV_TP1, SCN_NV_TP2, SCN_NV_DP, SCN_NV_PP};
    int64_t group[4] = {v[SCN_TP1], v[SCN_TP2], v[SCN_DP], v[SCN_PP]};
    if (one_d)
        group[0] = v[SCN_TP], group[1] = 1;
    int64_t c[4];
    for (int i = 0; i < 4; i++)
        c[i] = s->given[nv[i]] && v[nv[i]] > 0 ? v[nv[i]] : 0;
    model_nvlink_counts(v[SCN_GPUS], v[SCN_NVS], group, c);
    for (int i = 0; i < 4; i++)
        if (!s->given[nv[i]])
            derive(s, nv[i], c[i], SCN_FROM_DERIVED);
    if (one_d)
        v[SCN_NV_TP1] = v[SCN_NV_TP], v[SCN_NV_TP2] = 1, s->origin[SCN_NV_TP1] = s->origin[SCN_NV_TP];
}

static void fill_job(const scenario_t *s, model_job_t *job) {
    const int64_t *v = s->value;
    memset(job, 0, sizeof *job);
    job->model = s->model;
    scenario_system(s, &job->system);
    job->gpus = v[SCN_GPUS];
    job->global_batch = v[SCN_GBS];
    job->compat = s->compat;
    job->training = s->training;
    model_parallel_t *p = &job->par;
    p->strategy = s->strategy == SCN_STRATEGY_ALL ? MODEL_STRATEGY_1D : (model_strategy_t)s->strategy;
    p->dp = v[SCN_DP], p->tp = v[SCN_TP], p->tp1 = v[SCN_TP1], p->tp2 = v[SCN_TP2], p->pp = v[SCN_PP];
    p->mbs = v[SCN_MBS], p->nb = v[SCN_NB];
    p->nv_tp1 = v[SCN_NV_TP1], p->nv_tp2 = v[SCN_NV_TP2], p->nv_dp = v[SCN_NV_DP], p->nv_pp = v[SCN_NV_PP];
    job->experts_par.ep = v[SCN_EP];
    job->experts_par.etp = v[SCN_ETP];
}

/* Which scenario field a model_issue_t field names (-1: none). Accepts "parallel.nv_tp1" spellings. */
static int issue_field(const scenario_t *s, const char *field) {
    char norm[64];
    snprintf(norm, sizeof norm, "%s", field);
    char *nv = strstr(norm, "nv_");
    if (nv)
        nv[2] = '.';
    int one_d = s->strategy == MODEL_STRATEGY_1D;
    if (one_d && strcmp(norm, "parallel.tp1") == 0)
        return SCN_TP;
    if (one_d && strcmp(norm, "parallel.nv.tp1") == 0)
        return SCN_NV_TP;
    if (strcmp(norm, "system.nvlink_size") == 0)
        return SCN_NVS;
    int f = scn_field_by_path(norm);
    if (f >= 0)
        return f;
    if (strncmp(norm, "model", 5) == 0)
        return SCN_MODEL;
    if (strncmp(norm, "system", 6) == 0)
        return SCN_SYSTEM;
    return -1;
}

/* The common divisors of a and b (b <= 0: of a alone), at most 16 of them, as "1, 2, 4, ...". */
static void divisor_list(char *buf, size_t n, int64_t a, int64_t b) {
    size_t used = 0;
    int shown = 0;
    buf[0] = '\0';
    for (int64_t d = 1; d <= a && used < n; d++) {
        if (a % d != 0 || (b > 0 && b % d != 0))
            continue;
        if (shown == 16) {
            snprintf(buf + used, n - used, ", ...");
            return;
        }
        used += (size_t)snprintf(buf + used, n - used, "%s%lld", shown ? ", " : "", (long long)d);
        shown++;
    }
}

/* "; allowed: 1, 2, 4, ..." for a divisibility rule on field f, or "" when none applies. */
static void allowed_values(const scenario_t *s, int f, char *buf, size_t n) {
    const int64_t *v = s->value;
    int64_t a = 0, b = 0;
    int one_d = s->strategy == MODEL_STRATEGY_1D;
    switch (f) {
    case SCN_TP:
    case SCN_TP1:
        a = model_kv_heads(&s->model), b = s->model.hidden; /* kv_heads divides heads */
        break;
    case SCN_TP2:
        a = s->model.hidden;
        break;
    case SCN_PP:
        a = s->model.layers;
        break;
    case SCN_DP:
        a = v[SCN_GBS];
        break;
    case SCN_MBS:
        a = v[SCN_DP] > 0 ? v[SCN_GBS] / v[SCN_DP] : 0;
        break;
    case SCN_NV_TP:
    case SCN_NV_TP1:
        a = one_d ? v[SCN_TP] : v[SCN_TP1];
        break;
    case SCN_NV_TP2:
        a = v[SCN_TP2];
        break;
    case SCN_NV_DP:
        a = v[SCN_DP];
        break;
    case SCN_NV_PP:
        a = v[SCN_PP];
        break;
    default:
        break;
    }
    buf[0] = '\0';
    if (a > 0 && a < 100000000) {
        char list[160];
        divisor_list(list, sizeof list, a, b);
        snprintf(buf, n, "; allowed: %s", list);
    }
}

/* The model's complaint as one line; "parallel" (degrees vs gpus) is exit 3, the rest exit 2. */
static int report_issue(const scenario_t *s, const model_issue_t *is, cli_diag_t *d) {
    char w[320];
    int f = issue_field(s, is->field);
    int code = strcmp(is->field, "parallel") == 0 ? CLI_ENORESULT : CLI_EUSAGE;
    if (f < 0)
        snprintf(w, sizeof w, "%s%s%s", s->file, s->file[0] ? ": " : "", is->field);
    else
        where(s, (scenario_field_t)f, f == SCN_MODEL || f == SCN_SYSTEM ? is->field : NULL, w, sizeof w);
    /* The model phrases rules as predicates ("does not divide heads (160)", "must be ..."). */
    int predicate = strncmp(is->allowed, "must ", 5) == 0 || strncmp(is->allowed, "does ", 5) == 0;
    char values[200] = "";
    if (strstr(is->allowed, "divide"))
        allowed_values(s, f, values, sizeof values);
    return cli_fail(d, code, "%s: %s%s %s%s", w, is->value, predicate ? "" : ";", is->allowed, values);
}

/* "run.json: parallel" or "parallel" for the product messages. */
static int product_mismatch(const scenario_t *s, int no_dp, cli_diag_t *d) {
    const int64_t *v = s->value;
    char tp[96];
    if (s->strategy == MODEL_STRATEGY_1D)
        snprintf(tp, sizeof tp, "tp (%lld)", (long long)v[SCN_TP]);
    else
        snprintf(tp, sizeof tp, "tp1 x tp2 (%lld x %lld)", (long long)v[SCN_TP1], (long long)v[SCN_TP2]);
    const char *file = s->file[0] ? s->file : "";
    const char *sep = s->file[0] ? ": " : "";
    if (no_dp)
        return cli_fail(
            d, CLI_ENORESULT,
            "%s%sparallel.dp: cannot be derived: %s x pp (%lld) = %lld does not divide gpus (%lld); "
            "allowed: degrees with dp x tp x pp = gpus (or try `stepsim search`)",
            file, sep, tp, (long long)v[SCN_PP], (long long)checked_mul_sat_i64(v[SCN_TP], v[SCN_PP]),
            (long long)v[SCN_GPUS]);
    const int64_t product = checked_mul_sat_i64(checked_mul_sat_i64(v[SCN_DP], v[SCN_TP]), v[SCN_PP]);
    if (product == INT64_MAX)
        return cli_fail(
            d, CLI_ENORESULT,
            "%s%sparallel: dp (%lld) x %s x pp (%lld) overflows 64 bits, so it cannot equal gpus (%lld); "
            "allowed: degrees with dp x tp x pp = gpus",
            file, sep, (long long)v[SCN_DP], tp, (long long)v[SCN_PP], (long long)v[SCN_GPUS]);
    return cli_fail(
        d, CLI_ENORESULT,
        "%s%sparallel: dp (%lld) x %s x pp (%lld) = %lld does not equal gpus (%lld); allowed: degrees "
        "with dp x tp x pp = gpus",
        file, sep, (long long)v[SCN_DP], tp, (long long)v[SCN_PP], (long long)product,
        (long long)v[SCN_GPUS]);
}

int scenario_resolve(scenario_t *scn, model_job_t *job, cli_diag_t *diag) {
    int no_dp = 0;
    model_issue_t issue;
    if (scn->pipeline_all)
        return cli_fail(diag, CLI_EUSAGE,
                        "%s: \"all\" tries every schedule in a search only; allowed here: 1f1b, zb-h1, "
                        "zb-v, dualpipe",
                        scn->origin[SCN_PIPELINE] == SCN_FROM_OPTION ? "--pipeline-schedule"
                                                                     : "training.pipeline_schedule");
    int rc = scn_training_for_reference(scn, diag);
    if (!rc)
        rc = strategy_fields(scn, diag);
    if (!rc)
        rc = tensor_degree(scn, diag);
    if (rc)
        return rc;
    pipeline_and_data(scn, &no_dp);
    nvlink_counts(scn);
    fill_job(scn, job);
    /* The model's rules first, with the GPU count the degrees imply. */
    job->gpus = checked_mul_sat_i64(checked_mul_sat_i64(job->par.dp, job->par.tp), job->par.pp);
    memset(&issue, 0, sizeof issue);
    if (model_job_check(job, &issue) != MODEL_OK && strcmp(issue.field, "parallel") != 0)
        return report_issue(scn, &issue, diag);
    job->gpus = scn->value[SCN_GPUS];
    if (no_dp || checked_mul_sat_i64(checked_mul_sat_i64(job->par.dp, job->par.tp), job->par.pp) != job->gpus)
        return product_mismatch(scn, no_dp, diag);
    memset(&issue, 0, sizeof issue);
    if (model_job_check(job, &issue) != MODEL_OK)
        return report_issue(scn, &issue, diag);
    return CLI_OK;
}

int scenario_resolve_search(scenario_t *scn, model_job_t *job, unsigned *mask, cli_diag_t *diag) {
    model_issue_t issue;
    int s = scn->given[SCN_STRATEGY] ? scn->strategy : SCN_STRATEGY_ALL;
    *mask = s == SCN_STRATEGY_ALL ? (1u << MODEL_STRATEGY_COUNT) - 1u : 1u << s;
    int rc = scn_training_for_reference(scn, diag);
    if (rc)
        return rc;
    /* A trivially valid layout (one GPU) of the strategy searched, so that model_job_check judges the
     * model, system and training options only (the context-parallel ring is one of 2d-seqp's). */
    fill_job(scn, job);
    model_parallel_t one = {MODEL_STRATEGY_1D, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    if (s != SCN_STRATEGY_ALL)
        one.strategy = (model_strategy_t)s;
    else if (job->training.cp_comm == MODEL_CP_RING)
        one.strategy = MODEL_STRATEGY_2D_SEQP;
    job->par = one;
    job->gpus = 1;
    memset(&issue, 0, sizeof issue);
    if (model_job_check(job, &issue) != MODEL_OK)
        return report_issue(scn, &issue, diag);
    job->gpus = scn->value[SCN_GPUS];
    return CLI_OK;
}

const char *scenario_defaults_help(void) {
    return "Defaults (the built-in scenario: gpt3_1T on 4096 A100 GPUs, NVLink domains of 8, global batch\n"
           "4096, strategy 1d, compat corrected; a scenario file or an option replaces any of them):\n"
           "  nvlink_size  8, unless given by nvlink_size/--nvs or by a system object's nvlink_size key\n"
           "  tp           if dp and pp are given: gpus/(dp*pp); otherwise the largest divisor of\n"
           "               gpus/(dp*pp) (given ones only) that is <= 8 and divides heads and hidden.\n"
           "               2d/2d-seqp: tp1 = that, tp2 = 1; a given tp with one of tp1/tp2 gives the other\n"
           "  pp           if dp is given: gpus/(dp*tp); otherwise the largest divisor of gpus/tp that is\n"
           "               <= 32 and divides layers\n"
           "  dp           gpus/(tp*pp); if that does not divide: exit 3\n"
           "  mbs          1\n"
           "  nb           2d: max(tp1, tp2); 1d and 2d-seqp: 1\n"
           "  nv counts    if gpus <= nvlink_size, every group gets its full size; otherwise the domain is\n"
           "               filled innermost-first (tp or tp1, tp2, dp, pp), each group taking the largest\n"
           "               divisor of its size that still fits beside the counts already placed\n"
           "  For the built-in scenario this gives dp 16, tp 8, pp 32, mbs 1, nv (tp 8, dp 1, pp 1):\n"
           "  the reference's stored best 1d layout (docs/model-formulas.md, section 11).\n";
}
