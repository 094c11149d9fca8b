/* collapse_check.h - shared by stepsim.collapse and stepsim.collapse_full: `run --collapse auto`
 * against `run --collapse off` on one job (step time, breakdown, busiest links). */
#ifndef STEPSIM_TEST_COLLAPSE_CHECK_H
#define STEPSIM_TEST_COLLAPSE_CHECK_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "test_cli_run.h"

#define COLLAPSE_MAX_ARGS 24

static cJSON *collapse_run_json(const char *collapse, const char *const *args) {
    const char *argv[COLLAPSE_MAX_ARGS + 8];
    int n = 0;
    argv[n++] = "run";
    for (int i = 0; args[i] && n < COLLAPSE_MAX_ARGS; i++)
        argv[n++] = args[i];
    argv[n++] = "--collapse";
    argv[n++] = collapse;
    argv[n++] = "--links";
    argv[n++] = "64";
    argv[n++] = "--json";
    cli_run_t r = cli_run_argv(n, argv);
    if (r.rc != 0)
        fail_msg("run --collapse %s: exit %d: %s", collapse, r.rc, r.err);
    cJSON *j = cJSON_Parse(r.out);
    if (!j)
        fail_msg("not JSON: %.200s", r.out);
    cli_run_free(&r);
    return j;
}

static double collapse_num(const cJSON *o, const char *key) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(n))
        fail_msg("%s: missing or not a number", key);
    return n->valuedouble;
}

static void collapse_close(const char *what, double a, double b) {
    if (fabs(a - b) > 1e-9 * fabs(b) + 1e-15)
        fail_msg("%s: auto %.15g, off %.15g", what, a, b);
}

static int collapse_cmp_desc(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The busiest links' utilisations, sorted, and how many are NVLink (named "...nvs..."). */
static int collapse_links(const cJSON *j, double *util, int *nvlink) {
    const cJSON *busiest =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "links"), "busiest");
    int n = 0;
    *nvlink = 0;
    const cJSON *e = NULL;
    cJSON_ArrayForEach(e, busiest) {
        util[n++] = collapse_num(e, "utilization");
        *nvlink += strstr(cJSON_GetObjectItemCaseSensitive(e, "link")->valuestring, "nvs") != NULL;
    }
    qsort(util, (size_t)n, sizeof *util, collapse_cmp_desc);
    return n;
}

/* auto equals off on the job args (NULL-terminated): step time and breakdown to 1e-9 relative, the
 * 64 busiest links' utilisations (sorted) and the max utilisation, and as many NVLink links among
 * them. Puts auto's "collapsed" level ("tensor ranks", "none") in level (auto must be exact) and
 * returns how many of the busiest links are NVLink links. */
static int collapse_same_as_off(const char *const *args, char *level, size_t level_size) {
    cJSON *a = collapse_run_json("auto", args), *o = collapse_run_json("off", args);
    const cJSON *c =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(a, "simulation"), "collapse");
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "exact")))
        fail_msg("auto is not exact: %s", cJSON_GetObjectItemCaseSensitive(c, "note")->valuestring);
    if (cJSON_GetObjectItemCaseSensitive(a, "warning"))
        fail_msg("auto printed a warning");
    snprintf(level, level_size, "%s", cJSON_GetObjectItemCaseSensitive(c, "collapsed")->valuestring);
    collapse_close("step time", collapse_num(a, "step_time_s"), collapse_num(o, "step_time_s"));
    static const char *const PARTS[] = {"compute", "exposed_tp_comm", "exposed_pp_comm", "exposed_dp_comm",
                                        "bubble_idle"};
    for (int i = 0; i < 5; i++)
        collapse_close(PARTS[i], collapse_num(cJSON_GetObjectItemCaseSensitive(a, "breakdown_s"), PARTS[i]),
                       collapse_num(cJSON_GetObjectItemCaseSensitive(o, "breakdown_s"), PARTS[i]));
    collapse_close("max link utilization",
                   collapse_num(cJSON_GetObjectItemCaseSensitive(a, "links"), "max_utilization"),
                   collapse_num(cJSON_GetObjectItemCaseSensitive(o, "links"), "max_utilization"));
    double ua[64], uo[64];
    int nva, nvo;
    const int na = collapse_links(a, ua, &nva), no = collapse_links(o, uo, &nvo);
    assert_int_equal(na, no);
    for (int i = 0; i < na; i++)
        collapse_close("link utilization", ua[i], uo[i]);
    assert_int_equal(nva, nvo);
    cJSON_Delete(a);
    cJSON_Delete(o);
    return nva;
}

#endif
