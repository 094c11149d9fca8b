/* scenario_jobs.c - a scenario's "jobs" (scenario_jobs.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "scenario_jobs.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const JOB_KEYS[] = {"name",         "model",    "system", "nvlink_size", "gpus",
                                       "global_batch", "parallel", "compat", "training",    "allocation"};

void scenario_jobs_free(scenario_t *scn) {
    scn_jobs_t *j = scn->jobs;
    if (!j)
        return;
    for (int32_t i = 0; i < j->n; i++)
        free(j->job[i].gpus);
    free(j->job);
    free(j);
    scn->jobs = NULL;
}

static int cmp_i32(const void *a, const void *b) {
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* "0-63,128-191" into job->gpus (ascending); count must match. */
static int parse_ranges(scn_job_t *job, const char *text, int64_t want, cli_diag_t *d) {
    const char *p = text;
    int64_t n = 0, cap = 0;
    int32_t *g = NULL;
    int rc = CLI_OK;
    while (!rc) {
        while (*p == ' ')
            p++;
        char *end = NULL;
        const long a = isdigit((unsigned char)*p) ? strtol(p, &end, 10) : -1;
        long b = a;
        if (a >= 0) {
            p = end;
            while (*p == ' ')
                p++;
            if (*p == '-') {
                p++;
                while (*p == ' ')
                    p++;
                b = isdigit((unsigned char)*p) ? strtol(p, &end, 10) : -1;
                if (b >= 0)
                    p = end;
            }
            while (*p == ' ')
                p++;
        }
        if (a < 0 || b < 0 || a > INT32_MAX - 1 || b > INT32_MAX - 1 || (*p && *p != ',')) {
            static const char *const POLICIES[] = {"packed", "spread", "random"};
            const char *hint = cli_suggest(text, POLICIES, COUNT(POLICIES));
            rc = cli_fail(d, CLI_EUSAGE,
                          "%s.allocation: \"%.60s\" is not a policy or GPU ranges%s%s%s; allowed: packed, "
                          "spread, random, or GPU ranges such as 0-63,128-191",
                          job->where, text, hint ? " (did you mean \"" : "", hint ? hint : "",
                          hint ? "\"?)" : "");
            break;
        }
        if (b < a) {
            rc = cli_fail(d, CLI_EUSAGE,
                          "%s.allocation: \"%.60s\": range %ld-%ld is descending; allowed: A-B with A <= B",
                          job->where, text, a, b);
            break;
        }
        if (n + (b - a + 1) > want) {
            rc = cli_fail(
                d, CLI_EUSAGE,
                "%s.allocation: \"%.60s\" lists more GPUs than the job's %lld; allowed: exactly %lld",
                job->where, text, (long long)want, (long long)want);
            break;
        }
        if (n + (b - a + 1) > cap) {
            cap = n + (b - a + 1);
            int32_t *ng = alloc_realloc(g, (size_t)cap * sizeof *g);
            if (!ng) {
                rc = cli_fail(d, CLI_ERUNTIME, "%s.allocation: out of memory", job->where);
                break;
            }
            g = ng;
        }
        for (long x = a; x <= b; x++)
            g[n++] = (int32_t)x;
        if (!*p)
            break;
        p++;
    }
    if (!rc && n != want)
        rc = cli_fail(d, CLI_EUSAGE,
                      "%s.allocation: \"%.60s\" lists %lld GPUs but gpus is %lld; allowed: exactly %lld",
                      job->where, text, (long long)n, (long long)want, (long long)want);
    if (!rc) {
        qsort(g, (size_t)n, sizeof *g, cmp_i32);
        for (int64_t i = 1; i < n && !rc; i++)
            if (g[i] == g[i - 1])
                rc = cli_fail(d, CLI_EUSAGE,
                              "%s.allocation: \"%.60s\" lists GPU %d twice; allowed: every GPU once",
                              job->where, text, (int)g[i]);
    }
    if (rc) {
        free(g);
        return rc;
    }
    job->gpus = g;
    job->n_gpus = n;
    return CLI_OK;
}

/* The job's scenario: the file's top level without GPU count, batch or degrees. */
static void job_base(const scenario_t *top, scenario_t *out) {
    *out = *top;
    out->jobs = NULL;
    static const scenario_field_t RESET[] = {SCN_GPUS,  SCN_GBS,    SCN_STRATEGY, SCN_DP,    SCN_TP,
                                             SCN_TP1,   SCN_TP2,    SCN_PP,       SCN_MBS,   SCN_NB,
                                             SCN_NV_TP, SCN_NV_TP1, SCN_NV_TP2,   SCN_NV_DP, SCN_NV_PP};
    for (size_t i = 0; i < COUNT(RESET); i++) {
        out->value[RESET[i]] = 0;
        out->given[RESET[i]] = 0;
        out->origin[RESET[i]] = SCN_FROM_DEFAULT;
    }
    out->strategy = MODEL_STRATEGY_1D;
}

static int parse_job(scenario_t *top, const scn_src_t *src, const cJSON *obj, int32_t i, scn_job_t *job) {
    cli_diag_t *d = src->diag;
    char path[32];
    snprintf(path, sizeof path, "jobs[%d]", (int)i);
    snprintf(job->where, sizeof job->where, "%s%s", src->prefix, path);
    /* src->prefix ends in ": "; where is "FILE: jobs[i]" */
    if (!cJSON_IsObject(obj)) {
        char what[96];
        scn_describe(obj, what, sizeof what);
        return cli_fail(d, CLI_EUSAGE,
                        "%s: %s; allowed: an object with gpus, global_batch, model, parallel, ...",
                        job->where, what);
    }
    int rc = scn_check_keys(src, obj, path, JOB_KEYS, COUNT(JOB_KEYS));
    if (rc)
        return rc;
    static const char *const REQUIRED[] = {"gpus", "global_batch"};
    for (size_t k = 0; k < COUNT(REQUIRED); k++)
        if (!cJSON_GetObjectItemCaseSensitive(obj, REQUIRED[k]))
            return cli_fail(d, CLI_EUSAGE,
                            "%s: %s is missing; allowed: every job gives gpus and global_batch", job->where,
                            REQUIRED[k]);
    const cJSON *alloc = cJSON_GetObjectItemCaseSensitive(obj, "allocation");
    const char *text = "packed";
    if (alloc && !cJSON_IsString(alloc)) {
        char what[96];
        scn_describe(alloc, what, sizeof what);
        return cli_fail(d, CLI_EUSAGE,
                        "%s.allocation: %s is not a string; allowed: packed, spread, random, or GPU ranges "
                        "such as \"0-63,128-191\"",
                        job->where, what);
    }
    if (alloc)
        text = alloc->valuestring;
    cJSON *copy = cJSON_Duplicate(obj, 1);
    if (!copy)
        return cli_fail(d, CLI_ERUNTIME, "%s: out of memory", job->where);
    cJSON_DeleteItemFromObjectCaseSensitive(copy, "allocation");
    job_base(top, &job->scn);
    rc = scenario_load_json(&job->scn, copy, job->where, d);
    cJSON_Delete(copy);
    if (rc)
        return rc;
    snprintf(job->scn.file, sizeof job->scn.file, "%s", top->file);
    if (cJSON_GetObjectItemCaseSensitive(obj, "name"))
        snprintf(job->name, sizeof job->name, "%s", job->scn.name);
    else
        snprintf(job->name, sizeof job->name, "job%d", (int)i);
    if (!job->name[0])
        return cli_fail(d, CLI_EUSAGE, "%s.name: \"\" is empty; allowed: a name", job->where);
    snprintf(job->alloc_text, sizeof job->alloc_text, "%s", text);
    if (strcmp(text, "packed") == 0)
        job->alloc = SCN_ALLOC_PACKED;
    else if (strcmp(text, "spread") == 0)
        job->alloc = SCN_ALLOC_SPREAD;
    else if (strcmp(text, "random") == 0)
        job->alloc = SCN_ALLOC_RANDOM;
    else {
        job->alloc = SCN_ALLOC_GPUS;
        rc = parse_ranges(job, text, job->scn.value[SCN_GPUS], d);
    }
    return rc;
}

int scn_parse_jobs(scenario_t *scn, const scn_src_t *src, const cJSON *jobs) {
    if (!jobs)
        return CLI_OK;
    if (!cJSON_IsArray(jobs) || cJSON_GetArraySize(jobs) < 1) {
        char what[96];
        scn_describe(jobs, what, sizeof what);
        return cli_fail(src->diag, CLI_EUSAGE, "%sjobs: %s; allowed: an array of one or more job objects",
                        src->prefix, what);
    }
    scenario_jobs_free(scn);
    scn_jobs_t *j = alloc_calloc(1, sizeof *j);
    const int n = cJSON_GetArraySize(jobs);
    if (j)
        j->job = alloc_calloc((size_t)n, sizeof *j->job);
    if (!j || !j->job) {
        free(j);
        return cli_fail(src->diag, CLI_ERUNTIME, "%sjobs: out of memory", src->prefix);
    }
    scn->jobs = j;
    snprintf(j->where, sizeof j->where, "%sjobs", src->prefix);
    int rc = CLI_OK;
    for (int i = 0; i < n && !rc; i++) {
        rc = parse_job(scn, src, cJSON_GetArrayItem(jobs, i), i, &j->job[i]);
        j->n = i + 1;
        for (int k = 0; k < i && !rc; k++)
            if (strcmp(j->job[k].name, j->job[i].name) == 0)
                rc = cli_fail(src->diag, CLI_EUSAGE,
                              "%s.name: \"%.60s\" is jobs[%d]'s name too; allowed: a name of its own",
                              j->job[i].where, j->job[i].name, k);
    }
    if (rc)
        scenario_jobs_free(scn);
    return rc;
}
