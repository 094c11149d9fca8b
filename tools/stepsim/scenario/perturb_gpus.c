/* perturb_gpus.c - stragglers: perturbations.gpus (slow GPUs, nodes or a seeded fraction), the
 * per-operation jitter, their options, and the step's factors for a job (perturb.h).
 *
 * Ranges use the one GPU range parser of the command line (trace_ranks_parse: "0-7,64"), the same
 * as --trace-ranks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "perturb.h"
#include "scenario_internal.h"
#include "trace.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const DISTS[] = {"lognormal", "normal"};

/* A range list's syntax (no upper bound yet: the job is not known). */
static int check_ranges(const char *where, const char *text, cli_diag_t *d) {
    trace_ranks_t r;
    char err[200];
    memset(&r, 0, sizeof r);
    if (!strcmp(text, "all") || !text[0])
        return cli_fail(d, CLI_EUSAGE, "%s: \"%.60s\"; allowed: GPU or node ranges such as 0-7,64", where,
                        text);
    const int rc = trace_ranks_parse(text, 0, &r, err, sizeof err);
    trace_ranks_destroy(&r);
    if (rc)
        return cli_fail(d, rc == TRACE_ENOMEM ? CLI_ERUNTIME : CLI_EUSAGE, "%s: %s", where, err);
    return CLI_OK;
}

static int add_entry(scenario_t *scn, const scn_slow_t *e, cli_diag_t *d) {
    scn_perturb_t *p = &scn->perturb;
    if (p->n_slow >= SCN_PERTURB_MAX_GPUS)
        return cli_fail(d, CLI_EUSAGE, "%s: more than %d gpus entries; allowed: at most %d", e->where,
                        SCN_PERTURB_MAX_GPUS, SCN_PERTURB_MAX_GPUS);
    p->slow[p->n_slow] = *e;
    p->slow[p->n_slow].index = p->n_slow;
    p->n_slow++;
    return CLI_OK;
}

/* ---- the scenario file ---------------------------------------------------------------------------- */

static int parse_entry(scenario_t *scn, const scn_src_t *src, const cJSON *v, int i) {
    static const char *const KEYS[] = {"gpus", "nodes", "fraction", "slowdown"};
    scn_slow_t e;
    memset(&e, 0, sizeof e);
    char path[64], p2[96], what[96];
    snprintf(path, sizeof path, "perturbations.gpus[%d]", i);
    snprintf(e.where, sizeof e.where, "%s%s", src->prefix, path);
    if (!cJSON_IsObject(v)) {
        scn_describe(v, what, sizeof what);
        return cli_fail(src->diag, CLI_EUSAGE,
                        "%s: %s is not an object; allowed: {\"gpus\": \"0-7,64\" | \"nodes\": \"3\" | "
                        "\"fraction\": 0.01, \"slowdown\": 1.25}",
                        e.where, what);
    }
    int rc = scn_check_keys(src, v, path, KEYS, COUNT(KEYS));
    if (rc)
        return rc;
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(v, "gpus"),
                *n = cJSON_GetObjectItemCaseSensitive(v, "nodes"),
                *f = cJSON_GetObjectItemCaseSensitive(v, "fraction"),
                *s = cJSON_GetObjectItemCaseSensitive(v, "slowdown");
    if ((g != NULL) + (n != NULL) + (f != NULL) != 1)
        return cli_fail(src->diag, CLI_EUSAGE, "%s: %s; allowed: exactly one of gpus, nodes, fraction",
                        e.where,
                        ((g != NULL) + (n != NULL) + (f != NULL)) ? "several of gpus, nodes, fraction"
                                                                  : "no GPUs chosen");
    if (!s)
        return cli_fail(src->diag, CLI_EUSAGE,
                        "%s: missing key \"slowdown\"; allowed: a factor > 0 (1.25: 25%% slower)", e.where);
    snprintf(p2, sizeof p2, "%s.slowdown", path);
    if ((rc = scn_json_pos(src, s, p2, 1e6, &e.slowdown)))
        return rc;
    if (f) {
        e.kind = SCN_SLOW_FRACTION;
        snprintf(p2, sizeof p2, "%s.fraction", path);
        return (rc = scn_json_pos(src, f, p2, 1.0, &e.fraction)) ? rc : add_entry(scn, &e, src->diag);
    }
    e.kind = g ? SCN_SLOW_GPUS : SCN_SLOW_NODES;
    const char *text = NULL;
    snprintf(p2, sizeof p2, "%s.%s", path, g ? "gpus" : "nodes");
    if ((rc = scn_json_string(src, g ? g : n, p2, "ranges such as \"0-7,64\"", &text)))
        return rc;
    if (strlen(text) >= sizeof e.ranges)
        return cli_fail(src->diag, CLI_EUSAGE,
                        "%s%s: \"%.40s...\" is too long; allowed: up to %zu characters", src->prefix, p2,
                        text, sizeof e.ranges - 1);
    snprintf(e.ranges, sizeof e.ranges, "%s", text);
    char where[200];
    snprintf(where, sizeof where, "%s%s", src->prefix, p2);
    if ((rc = check_ranges(where, text, src->diag)))
        return rc;
    return add_entry(scn, &e, src->diag);
}

int scn_parse_perturb_gpus(scenario_t *scn, const scn_src_t *src, const cJSON *v) {
    if (!cJSON_IsArray(v)) {
        char what[96];
        scn_describe(v, what, sizeof what);
        return cli_fail(src->diag, CLI_EUSAGE,
                        "%sperturbations.gpus: %s is not an array; allowed: [ {\"gpus\": "
                        "\"0-7\", \"slowdown\": 1.25}, ... ]",
                        src->prefix, what);
    }
    scn->perturb.n_slow = 0; /* the file's list replaces an earlier one */
    int i = 0, rc = CLI_OK;
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        if ((rc = parse_entry(scn, src, e, i++)))
            break;
    }
    return rc;
}

static int bad_dist(cli_diag_t *d, const char *where, const char *name) {
    char hint[96];
    scn_hint(hint, sizeof hint, name, DISTS, COUNT(DISTS));
    return cli_fail(d, CLI_EUSAGE, "%s: \"%.60s\" is not a distribution%s; allowed: lognormal, normal", where,
                    name, hint);
}

static int set_dist(scn_jitter_t *j, const char *where, const char *name, cli_diag_t *d) {
    if (step_jitter_parse(name, &j->dist) != 0 || j->dist == STEP_JITTER_NONE)
        return bad_dist(d, where, name);
    return CLI_OK;
}

int scn_parse_perturb_jitter(scenario_t *scn, const scn_src_t *src, const cJSON *v) {
    static const char *const KEYS[] = {"distribution", "cv"};
    scn_jitter_t j;
    memset(&j, 0, sizeof j);
    snprintf(j.where, sizeof j.where, "%sperturbations.jitter", src->prefix);
    if (!cJSON_IsObject(v)) {
        char what[96];
        scn_describe(v, what, sizeof what);
        return cli_fail(src->diag, CLI_EUSAGE,
                        "%s: %s is not an object; allowed: {\"distribution\": \"lognormal\", \"cv\": 0.05}",
                        j.where, what);
    }
    int rc = scn_check_keys(src, v, "perturbations.jitter", KEYS, COUNT(KEYS));
    const cJSON *dist = cJSON_GetObjectItemCaseSensitive(v, "distribution"),
                *cv = cJSON_GetObjectItemCaseSensitive(v, "cv");
    const char *name = "lognormal";
    char where[200];
    snprintf(where, sizeof where, "%s.distribution", j.where);
    if (!rc && dist)
        rc = scn_json_string(src, dist, "perturbations.jitter.distribution", "lognormal, normal", &name);
    if (!rc)
        rc = set_dist(&j, where, name, src->diag);
    if (!rc && !cv)
        rc = cli_fail(src->diag, CLI_EUSAGE,
                      "%s: missing key \"cv\"; allowed: a coefficient of variation 0..10", j.where);
    if (!rc) {
        char what[96];
        scn_describe(cv, what, sizeof what);
        if (!cJSON_IsNumber(cv) || !(cv->valuedouble >= 0.0 && cv->valuedouble <= 10.0))
            rc = cli_fail(src->diag, CLI_EUSAGE, "%s.cv: %s; allowed: a number 0..10", j.where, what);
        else
            j.cv = cv->valuedouble;
    }
    if (!rc) {
        j.given = 1;
        scn->perturb.jitter = j;
    }
    return rc;
}

/* ---- options ------------------------------------------------------------------------------------------- */

/* "TEXT:NUMBER" split at the last colon into text and a number (what names the number). */
static int split(const char *opt, const char *value, const char *usage, char *text, size_t n, double *num,
                 cli_diag_t *d) {
    const char *colon = strrchr(value, ':');
    if (!colon || colon == value || !colon[1] || (size_t)(colon - value) >= n)
        return cli_fail(d, CLI_EUSAGE, "%s: \"%.60s\"; allowed: %s", opt, value, usage);
    memcpy(text, value, (size_t)(colon - value));
    text[colon - value] = '\0';
    char *end = NULL;
    *num = strtod(colon + 1, &end);
    if (*end || !isfinite(*num))
        return cli_fail(d, CLI_EUSAGE, "%s: \"%.60s\": %s is not a number; allowed: %s", opt, value,
                        colon + 1, usage);
    return CLI_OK;
}

int scn_perturb_gpus_option(scenario_t *scn, const char *option, const char *value, cli_diag_t *d) {
    char text[128];
    double x = 0.0;
    int rc;
    if (strcmp(option, "--jitter") == 0) {
        scn_jitter_t j;
        memset(&j, 0, sizeof j);
        snprintf(j.where, sizeof j.where, "--jitter");
        if ((rc = split(option, value, "DIST:CV, e.g. lognormal:0.05", text, sizeof text, &x, d)) ||
            (rc = set_dist(&j, "--jitter", text, d)))
            return rc;
        if (!(x >= 0.0 && x <= 10.0))
            return cli_fail(d, CLI_EUSAGE, "--jitter: cv %g; allowed: 0..10", x);
        j.cv = x;
        j.given = 1;
        scn->perturb.jitter = j;
        return CLI_OK;
    }
    scn_slow_t e;
    memset(&e, 0, sizeof e);
    snprintf(e.where, sizeof e.where, "%s", option);
    const int fraction = strcmp(option, "--slow-fraction") == 0;
    const char *usage = fraction ? "F:FACTOR, e.g. 0.01:1.1 (0 < F <= 1, FACTOR > 0)"
                                 : "RANGES:FACTOR, e.g. 0-7,64:1.25 (FACTOR > 0)";
    if ((rc = split(option, value, usage, text, sizeof text, &x, d)))
        return rc;
    if (!(x > 0.0 && x <= 1e6))
        return cli_fail(d, CLI_EUSAGE, "%s: slowdown %g; allowed: a factor > 0 (and <= 1e6)", option, x);
    e.slowdown = x;
    if (fraction) {
        char *end = NULL;
        e.kind = SCN_SLOW_FRACTION;
        e.fraction = strtod(text, &end);
        if (*end || !(e.fraction > 0.0 && e.fraction <= 1.0))
            return cli_fail(d, CLI_EUSAGE, "%s: fraction \"%.60s\"; allowed: a number > 0 and <= 1", option,
                            text);
    } else {
        e.kind = strcmp(option, "--slow-nodes") == 0 ? SCN_SLOW_NODES : SCN_SLOW_GPUS;
        snprintf(e.ranges, sizeof e.ranges, "%s", text);
        if ((rc = check_ranges(option, text, d)))
            return rc;
    }
    return add_entry(scn, &e, d);
}

/* ---- the step's factors ------------------------------------------------------------------------------ */

typedef struct keyed {
    uint64_t key;
    int32_t gpu;
} keyed_t;

static int by_key(const void *a, const void *b) {
    const keyed_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->gpu > y->gpu) - (x->gpu < y->gpu);
}

/* Multiply the GPUs of entry k by its factor. */
static int apply_entry(const scn_perturb_t *p, int k, int64_t gpus, int64_t per_node, double *f,
                       cli_diag_t *d) {
    const scn_slow_t *e = &p->slow[k];
    if (e->kind == SCN_SLOW_FRACTION) {
        int64_t n = (int64_t)floor(e->fraction * (double)gpus + 0.5);
        n = n < 1 ? 1 : n > gpus ? gpus : n;
        keyed_t *all = alloc_malloc((size_t)gpus * sizeof *all);
        if (!all)
            return cli_fail(d, CLI_ERUNTIME, "%s: out of memory", e->where);
        const uint64_t base =
            step_splitmix64(step_splitmix64(p->seed) ^ step_splitmix64(0x5eed0000u + (uint64_t)e->index));
        for (int64_t g = 0; g < gpus; g++) {
            all[g].gpu = (int32_t)g;
            all[g].key = step_splitmix64(base ^ step_splitmix64((uint64_t)g));
        }
        qsort(all, (size_t)gpus, sizeof *all, by_key);
        for (int64_t i = 0; i < n; i++)
            f[all[i].gpu] *= e->slowdown;
        free(all);
        return CLI_OK;
    }
    const int nodes = e->kind == SCN_SLOW_NODES;
    const int64_t units = nodes ? (gpus + per_node - 1) / per_node : gpus;
    trace_ranks_t r;
    char err[200];
    memset(&r, 0, sizeof r);
    const int opt = e->where[0] == '-'; /* an option names itself, a file entry its field */
    int rc = trace_ranks_parse(e->ranges, 0, &r, err, sizeof err);
    if (rc)
        return cli_fail(d, CLI_EUSAGE, "%s%s: %s", e->where, opt ? "" : nodes ? ".nodes" : ".gpus", err);
    for (int32_t i = 0; i < r.n_ranges && !rc; i++) {
        if (r.ranges[i].last >= units) {
            rc =
                cli_fail(d, CLI_EUSAGE, "%s%s: \"%.60s\": %s %d is beyond the job's last %s (%lld)", e->where,
                         opt     ? ""
                         : nodes ? ".nodes"
                                 : ".gpus",
                         e->ranges, nodes ? "node" : "GPU", r.ranges[i].last, nodes ? "node" : "GPU",
                         (long long)(units - 1));
            break;
        }
        for (int64_t u = r.ranges[i].first; u <= r.ranges[i].last; u++)
            for (int64_t g = nodes ? u * per_node : u; g < (nodes ? (u + 1) * per_node : u + 1) && g < gpus;
                 g++)
                f[g] *= e->slowdown;
    }
    trace_ranks_destroy(&r);
    return rc;
}

int scenario_perturb_step(const scenario_t *scn, const model_job_t *job, step_config_t *cfg, double **factors,
                          cli_diag_t *d) {
    const scn_perturb_t *p = &scn->perturb;
    const uint64_t seed = p->seed_given ? p->seed : 1;
    *factors = NULL;
    cfg->compute_slowdown = NULL;
    memset(&cfg->jitter, 0, sizeof cfg->jitter);
    if (p->jitter.given) {
        cfg->jitter.dist = p->jitter.dist;
        cfg->jitter.cv = p->jitter.cv;
        cfg->jitter.seed = seed;
    }
    if (p->n_slow == 0)
        return CLI_OK;
    const int64_t gpus = job->gpus;
    double *f = alloc_malloc((size_t)gpus * sizeof *f);
    if (!f)
        return cli_fail(d, CLI_ERUNTIME, "perturbations: out of memory");
    for (int64_t g = 0; g < gpus; g++)
        f[g] = 1.0;
    scn_perturb_t ps = *p;
    ps.seed = seed;
    const int64_t per_node = job->system.nvlink_size > 0 ? job->system.nvlink_size : 1;
    for (int k = 0; k < p->n_slow; k++) {
        const int rc = apply_entry(&ps, k, gpus, per_node, f, d);
        if (rc) {
            free(f);
            return rc;
        }
    }
    *factors = f;
    cfg->compute_slowdown = f;
    return CLI_OK;
}

char *scenario_slowed_list(const double *factors, int64_t gpus) {
    size_t cap = 64, len = 0;
    char *s = alloc_malloc(cap);
    if (!s)
        return NULL;
    s[0] = '\0';
    for (int64_t g = 0; factors && g < gpus; g++) {
        if (factors[g] == 1.0)
            continue;
        int64_t h = g;
        while (h + 1 < gpus && factors[h + 1] != 1.0)
            h++;
        char item[48];
        const int n =
            h > g ? snprintf(item, sizeof item, "%s%lld-%lld", len ? "," : "", (long long)g, (long long)h)
                  : snprintf(item, sizeof item, "%s%lld", len ? "," : "", (long long)g);
        if (len + (size_t)n + 1 > cap) {
            cap = 2 * (len + (size_t)n + 1);
            char *t = alloc_realloc(s, cap);
            if (!t) {
                free(s);
                return NULL;
            }
            s = t;
        }
        memcpy(s + len, item, (size_t)n + 1);
        len += (size_t)n;
        g = h;
    }
    return s;
}

int64_t scenario_slowed_gpus(const double *factors, int64_t gpus) {
    int64_t n = 0;
    for (int64_t g = 0; factors && g < gpus; g++)
        n += factors[g] != 1.0;
    return n;
}
