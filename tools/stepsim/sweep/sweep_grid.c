/* sweep_grid.c - sweep grids: parsing, validation, expansion into points, canonical scenarios and ids.
 *
 * A point's scenario is built from the grid's base "scenario": a vary point sets one value per vary
 * key at its dotted path; a "points" entry replaces the base's top-level keys it names (a whole
 * "parallel" object, say); options that are scenario fields ("compat") are set last, as options win
 * over files on the command line. The layout marker is then normalised (any degree "search", or
 * "parallel": "search", becomes "parallel": {"strategy": S, "layout": "search"}: the numeric degrees
 * of such a point are dropped, the search chooses them) and the keys are sorted at every level.
 * Validation builds and parses every point before anything runs, and reports the most precise place
 * it can: the base, one vary value, one points entry, the options, and only then a whole point.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "checked.h"
#include "options.h"
#include "scenario_internal.h" /* SCN_DEFAULT_MODEL, SCN_DEFAULT_SYSTEM, scn_describe */
#include "sweep.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

uint64_t sweep_fnv1a(uint64_t h, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* ---- small JSON helpers ---------------------------------------------------------------------- */

static int is_string(const cJSON *v, const char *s) {
    return cJSON_IsString(v) && v->valuestring && strcmp(v->valuestring, s) == 0;
}

/* Put a copy of value under key in obj, replacing what was there. */
static int put(cJSON *obj, const char *key, const cJSON *value) {
    cJSON *copy = cJSON_Duplicate(value, 1);
    if (!copy)
        return -1;
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        return cJSON_ReplaceItemInObjectCaseSensitive(obj, key, copy) ? 0 : (cJSON_Delete(copy), -1);
    return cJSON_AddItemToObject(obj, key, copy) ? 0 : (cJSON_Delete(copy), -1);
}

static int by_key(const void *a, const void *b) {
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    return strcmp(x->string, y->string);
}

/* Sort object members by key at every level (arrays keep their order). -1 if out of memory. */
static int canonicalize(cJSON *v) {
    if (!cJSON_IsObject(v) && !cJSON_IsArray(v))
        return 0;
    size_t n = 0;
    for (cJSON *c = v->child; c; c = c->next) {
        if (canonicalize(c) != 0)
            return -1;
        n++;
    }
    if (!cJSON_IsObject(v) || n < 2)
        return 0;
    cJSON **items = alloc_malloc(n * sizeof *items);
    if (!items)
        return -1;
    size_t i = 0;
    while (v->child)
        items[i++] = cJSON_DetachItemViaPointer(v, v->child);
    /* Keys are unique (checked at load), so the order is total and qsort's instability is moot. */
    qsort(items, n, sizeof *items, by_key);
    for (i = 0; i < n; i++)
        cJSON_AddItemToArray(v, items[i]); /* keeps item->string: the member's key */
    free(items);
    return 0;
}

/* The first duplicate key anywhere in v, with its path; 0 if none. */
static int duplicate_key(const cJSON *v, char *path, size_t n) {
    if (!cJSON_IsObject(v) && !cJSON_IsArray(v))
        return 0;
    size_t len = strlen(path);
    int i = 0;
    for (const cJSON *c = v->child; c; c = c->next, i++) {
        if (cJSON_IsObject(v)) {
            for (const cJSON *e = v->child; e != c; e = e->next)
                if (strcmp(e->string, c->string) == 0) {
                    snprintf(path + len, n - len, "%s%.60s", len ? "." : "", c->string);
                    return 1;
                }
            snprintf(path + len, n - len, "%s%.60s", len ? "." : "", c->string);
        } else {
            snprintf(path + len, n - len, "[%d]", i);
        }
        if (duplicate_key(c, path, n))
            return 1;
        path[len] = '\0';
    }
    return 0;
}

/* ---- paths and the layout marker ------------------------------------------------------------- */

/* A dotted path: names of letters, digits, '_' or '-', separated by single dots. */
static int valid_path(const char *p) {
    size_t run = 0;
    if (!*p || strlen(p) > 200)
        return 0;
    for (; *p; p++) {
        if (*p == '.') {
            if (run == 0)
                return 0;
            run = 0;
        } else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                   *p == '_' || *p == '-') {
            run++;
        } else {
            return 0;
        }
    }
    return run > 0;
}

/* Scenario fields that hold objects, so a dotted path may go through them. */
static int object_field(const char *path) {
    static const char *const fields[] = {"model",       "system",   "parallel",
                                         "parallel.nv", "training", "topology"};
    for (size_t i = 0; i < COUNT(fields); i++)
        if (strcmp(path, fields[i]) == 0)
            return 1;
    return 0;
}

/* Set value at a dotted path of root. A preset name met on the way becomes {"base": name} (so
 * "system.hbm_capacity" can change a preset), and "parallel": "search" becomes {"layout": "search"}. */
static int set_path(cJSON *root, const char *path, const cJSON *value, const char *where, cli_diag_t *d) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    cJSON *obj = root;
    char *comp = buf;
    for (char *dot; (dot = strchr(comp, '.')) != NULL; comp = dot + 1) {
        *dot = '\0';
        cJSON *child = cJSON_GetObjectItemCaseSensitive(obj, comp);
        int top = obj == root;
        cJSON *repl = NULL;
        if (!child && !object_field(buf)) {
            return cli_fail(
                d, CLI_EUSAGE,
                "%s: %s is not an object of a scenario; allowed: dotted paths into model, system, "
                "parallel, parallel.nv, training or topology",
                where, buf);
        } else if (!child && top && (strcmp(comp, "model") == 0 || strcmp(comp, "system") == 0)) {
            /* The built-in default, as a base to change. */
            repl = cJSON_CreateObject();
            if (repl && !cJSON_AddStringToObject(repl, "base",
                                                 comp[0] == 'm' ? SCN_DEFAULT_MODEL : SCN_DEFAULT_SYSTEM))
                cJSON_Delete(repl), repl = NULL;
        } else if (!child) {
            repl = cJSON_CreateObject();
        } else if (cJSON_IsString(child) && top &&
                   (strcmp(comp, "model") == 0 || strcmp(comp, "system") == 0)) {
            repl = cJSON_CreateObject();
            if (repl && !cJSON_AddStringToObject(repl, "base", child->valuestring))
                cJSON_Delete(repl), repl = NULL;
        } else if (top && strcmp(comp, "parallel") == 0 && is_string(child, "search")) {
            repl = cJSON_CreateObject();
            if (repl && !cJSON_AddStringToObject(repl, "layout", "search"))
                cJSON_Delete(repl), repl = NULL;
        } else if (!cJSON_IsObject(child)) {
            char what[96];
            scn_describe(child, what, sizeof what);
            return cli_fail(d, CLI_EUSAGE,
                            "%s: %s is %s, not an object; allowed: a dotted path of scenario fields "
                            "(e.g. parallel.strategy, system.hbm_capacity)",
                            where, buf, what);
        } else {
            obj = child;
            *dot = '.';
            continue;
        }
        if (!repl || put(obj, comp, repl) != 0) {
            cJSON_Delete(repl);
            return cli_fail(d, CLI_ERUNTIME, "out of memory");
        }
        cJSON_Delete(repl);
        obj = cJSON_GetObjectItemCaseSensitive(obj, comp);
        *dot = '.';
    }
    return put(obj, comp, value) == 0 ? CLI_OK : cli_fail(d, CLI_ERUNTIME, "out of memory");
}

static int is_search_degree(const cJSON *c) {
    return strcmp(c->string, "strategy") != 0 && strcmp(c->string, "layout") != 0 && is_string(c, "search");
}

/* "search" anywhere among the degrees (or "parallel": "search") -> {"strategy"?, "layout": "search"}. */
static int normalize_layout(cJSON *scn, const char *where, cli_diag_t *d) {
    cJSON *par = cJSON_GetObjectItemCaseSensitive(scn, "parallel");
    int searched = 0;
    if (is_string(par, "search")) {
        cJSON *obj = cJSON_CreateObject();
        int ok = obj && cJSON_AddStringToObject(obj, "layout", "search") && put(scn, "parallel", obj) == 0;
        cJSON_Delete(obj);
        return ok ? CLI_OK : cli_fail(d, CLI_ERUNTIME, "out of memory");
    }
    if (!cJSON_IsObject(par))
        return CLI_OK; /* absent, or wrong: the scenario parser says so */
    const cJSON *layout = cJSON_GetObjectItemCaseSensitive(par, "layout");
    if (layout && !is_string(layout, "search")) {
        char what[96];
        scn_describe(layout, what, sizeof what);
        return cli_fail(d, CLI_EUSAGE,
                        "%s: parallel.layout: %s; allowed: \"search\" (the best layout of the analytic "
                        "model's search)",
                        where, what);
    }
    searched = layout != NULL;
    for (const cJSON *c = par->child; c && !searched; c = c->next)
        searched = is_search_degree(c);
    const cJSON *nv = cJSON_GetObjectItemCaseSensitive(par, "nv");
    for (const cJSON *c = cJSON_IsObject(nv) ? nv->child : NULL; c && !searched; c = c->next)
        searched = is_string(c, "search");
    if (!searched)
        return CLI_OK;
    for (cJSON *c = par->child, *next; c; c = next) {
        next = c->next;
        if (strcmp(c->string, "strategy") != 0)
            cJSON_Delete(cJSON_DetachItemViaPointer(par, c));
    }
    return cJSON_AddStringToObject(par, "layout", "search") ? CLI_OK
                                                            : cli_fail(d, CLI_ERUNTIME, "out of memory");
}

/* Normalise scn and check that it parses as a scenario; messages start with where. */
static int check_scenario(cJSON *scn, const char *where, cli_diag_t *d) {
    int rc = normalize_layout(scn, where, d), searched;
    if (rc)
        return rc;
    cJSON *loadable = sweep_loadable_scenario(scn, &searched);
    if (!loadable)
        return cli_fail(d, CLI_ERUNTIME, "out of memory");
    scenario_t s;
    memset(&s, 0, sizeof s);
    rc = scenario_init(&s, d);
    if (!rc)
        rc = scenario_load_json(&s, loadable, where, d);
    if (!rc && s.jobs)
        rc = cli_fail(d, CLI_EUSAGE, "%s: jobs: a sweep simulates one job per point; allowed: `stepsim run`",
                      where);
    if (!rc && scenario_has_perturbations(&s)) /* not silently dropped */
        rc = cli_fail(
            d, CLI_EUSAGE,
            "%s: perturbations: a sweep does not simulate them; allowed: run or compare, or a scenario "
            "without perturbations",
            where);
    scenario_destroy(&s);
    cJSON_Delete(loadable);
    return rc;
}

/* ---- points ---------------------------------------------------------------------------------- */

static cJSON *base_copy(const sweep_grid_t *g) {
    return g->base ? cJSON_Duplicate(g->base, 1) : cJSON_CreateObject();
}

/* Merge a "points" entry: its top-level keys replace the base's. */
static int merge_entry(cJSON *scn, const cJSON *entry) {
    for (const cJSON *c = entry->child; c; c = c->next)
        if (put(scn, c->string, c) != 0)
            return -1;
    return 0;
}

static int apply_options(const sweep_grid_t *g, cJSON *scn, const char *where, cli_diag_t *d) {
    int rc = CLI_OK;
    for (const cJSON *c = g->scenario_options ? g->scenario_options->child : NULL; c && !rc; c = c->next)
        rc = set_path(scn, c->string, c, where, d);
    return rc;
}

/* "point 17 (system="A100", gpus=512)" or "points[2]". */
static void point_name(const sweep_grid_t *g, size_t index, char *buf, size_t n) {
    if (index >= g->n_vary) {
        snprintf(buf, n, "%s: points[%zu]", g->path, index - g->n_vary);
        return;
    }
    size_t used = (size_t)snprintf(buf, n, "%s: point %zu (", g->path, index);
    size_t k = index;
    size_t digit[64];
    for (size_t a = g->n_axes; a-- > 0;) {
        digit[a] = k % g->axes[a].n;
        k /= g->axes[a].n;
    }
    for (size_t a = 0; a < g->n_axes && used < n; a++) {
        char *v = cJSON_PrintUnformatted(cJSON_GetArrayItem(g->axes[a].values, (int)digit[a]));
        used +=
            (size_t)snprintf(buf + used, n - used, "%s%s=%.40s", a ? ", " : "", g->axes[a].path, v ? v : "?");
        cJSON_free(v);
    }
    if (used < n)
        snprintf(buf + used, n - used, ")");
}

/* Build point index into *out (normalised, canonical). */
static int build_point(const sweep_grid_t *g, size_t index, cJSON **out, cli_diag_t *d) {
    char where[400];
    int rc = CLI_OK;
    cJSON *scn = base_copy(g);
    *out = NULL;
    if (!scn)
        return cli_fail(d, CLI_ERUNTIME, "out of memory");
    point_name(g, index, where, sizeof where);
    if (index < g->n_vary) {
        size_t k = index;
        size_t digit[64];
        for (size_t a = g->n_axes; a-- > 0;) {
            digit[a] = k % g->axes[a].n;
            k /= g->axes[a].n;
        }
        for (size_t a = 0; a < g->n_axes && !rc; a++)
            rc = set_path(scn, g->axes[a].path, cJSON_GetArrayItem(g->axes[a].values, (int)digit[a]), where,
                          d);
    } else if (merge_entry(scn, cJSON_GetArrayItem(g->points, (int)(index - g->n_vary))) != 0) {
        rc = cli_fail(d, CLI_ERUNTIME, "out of memory");
    }
    if (!rc)
        rc = apply_options(g, scn, where, d);
    if (!rc)
        rc = normalize_layout(scn, where, d);
    if (!rc && canonicalize(scn) != 0)
        rc = cli_fail(d, CLI_ERUNTIME, "out of memory");
    if (rc) {
        cJSON_Delete(scn);
        return rc;
    }
    *out = scn;
    return CLI_OK;
}

cJSON *sweep_grid_point(const sweep_grid_t *g, size_t index) {
    cli_diag_t d;
    cJSON *scn = NULL;
    build_point(g, index, &scn, &d);
    return scn;
}

/* ---- parsing the grid ------------------------------------------------------------------------ */

static const char *const GRID_KEYS[] = {"command", "scenario", "vary",       "points",
                                        "options", "name",     "description"};

static int parse_command(sweep_grid_t *g, cli_diag_t *d) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(g->doc, "command");
    char list[128], what[96];
    sweep_command_list(list, sizeof list);
    if (!v)
        return cli_fail(d, CLI_EUSAGE, "%s: command: missing; allowed: %s", g->path, list);
    scn_describe(v, what, sizeof what);
    if (!cJSON_IsString(v))
        return cli_fail(d, CLI_EUSAGE, "%s: command: %s is not a string; allowed: %s", g->path, what, list);
    g->cmd = sweep_command_find(v->valuestring);
    if (g->cmd && !g->cmd->run)
        return cli_fail(d, CLI_EUSAGE, "%s: command: \"%s\" is not available in sweeps yet (%s); allowed: %s",
                        g->path, g->cmd->name, g->cmd->why, list);
    if (!g->cmd) {
        static const char *const names[] = {"estimate", "search", "run"};
        const char *s = cli_suggest(v->valuestring, names, COUNT(names));
        return cli_fail(d, CLI_EUSAGE, "%s: command: \"%.60s\" is not a command%s%s%s; allowed: %s", g->path,
                        v->valuestring, s ? " (did you mean \"" : "", s ? s : "", s ? "\"?)" : "", list);
    }
    return CLI_OK;
}

/* vary: {path: [values...]} in file order; the product's size. */
static int parse_vary(sweep_grid_t *g, cli_diag_t *d) {
    const cJSON *vary = cJSON_GetObjectItemCaseSensitive(g->doc, "vary");
    char what[96];
    g->n_vary = 1; /* no vary: the product of no axes is the base scenario itself */
    if (!vary)
        return CLI_OK;
    scn_describe(vary, what, sizeof what);
    if (!cJSON_IsObject(vary) || !vary->child)
        return cli_fail(d, CLI_EUSAGE,
                        "%s: vary: %s%s; allowed: an object {\"dotted.path\": [values, ...], ...}", g->path,
                        what, cJSON_IsObject(vary) ? " with no keys" : "");
    size_t n = (size_t)cJSON_GetArraySize(vary);
    if (n > 64)
        return cli_fail(d, CLI_EUSAGE, "%s: vary: %zu keys; allowed: at most 64", g->path, n);
    g->axes = alloc_calloc(n, sizeof *g->axes);
    if (!g->axes)
        return cli_fail(d, CLI_ERUNTIME, "out of memory");
    for (const cJSON *c = vary->child; c; c = c->next) {
        sweep_axis_t *a = &g->axes[g->n_axes];
        a->path = c->string;
        if (!valid_path(c->string))
            return cli_fail(d, CLI_EUSAGE,
                            "%s: vary[\"%.60s\"]: not a dotted path; allowed: scenario field names joined by "
                            "single dots, e.g. \"parallel.strategy\"",
                            g->path, c->string);
        for (size_t b = 0; b < g->n_axes; b++) {
            const char *p = g->axes[b].path, *q = c->string;
            size_t lp = strlen(p), lq = strlen(q), m = lp < lq ? lp : lq;
            if (strncmp(p, q, m) == 0 && (lp == lq || (lp < lq ? q[m] : p[m]) == '.'))
                return cli_fail(d, CLI_EUSAGE, "%s: vary[\"%.60s\"]: overlaps vary[\"%.60s\"]; allowed: %s",
                                g->path, q, p, "keys that name different scenario fields");
        }
        scn_describe(c, what, sizeof what);
        if (!cJSON_IsArray(c))
            return cli_fail(d, CLI_EUSAGE,
                            "%s: vary[\"%.60s\"]: %s is not a list; allowed: a non-empty array", g->path,
                            c->string, what);
        a->values = c;
        a->n = (size_t)cJSON_GetArraySize(c);
        if (a->n == 0)
            return cli_fail(d, CLI_EUSAGE,
                            "%s: vary[\"%.60s\"]: [] is an empty list; allowed: a non-empty array", g->path,
                            c->string);
        if (g->n_vary > SWEEP_MAX_POINTS / a->n)
            return cli_fail(d, CLI_EUSAGE, "%s: vary: more than %d points; allowed: at most %d", g->path,
                            SWEEP_MAX_POINTS, SWEEP_MAX_POINTS);
        g->n_vary *= a->n;
        g->n_axes++;
    }
    return CLI_OK;
}

static int parse_points(sweep_grid_t *g, cli_diag_t *d) {
    const cJSON *pts = cJSON_GetObjectItemCaseSensitive(g->doc, "points");
    char what[96];
    if (!pts) {
        g->n_points = g->n_vary;
        return CLI_OK;
    }
    scn_describe(pts, what, sizeof what);
    if (!cJSON_IsArray(pts))
        return cli_fail(d, CLI_EUSAGE, "%s: points: %s is not a list; allowed: an array of scenario objects",
                        g->path, what);
    g->points = pts;
    if (!cJSON_GetObjectItemCaseSensitive(g->doc, "vary"))
        g->n_vary = 0; /* points alone: no base point */
    size_t i = 0;
    for (const cJSON *c = pts->child; c; c = c->next, i++) {
        scn_describe(c, what, sizeof what);
        if (!cJSON_IsObject(c))
            return cli_fail(d, CLI_EUSAGE, "%s: points[%zu]: %s is not an object; allowed: a scenario object",
                            g->path, i, what);
    }
    if (g->n_vary + i > SWEEP_MAX_POINTS)
        return cli_fail(d, CLI_EUSAGE, "%s: points: more than %d points in all; allowed: at most %d", g->path,
                        SWEEP_MAX_POINTS, SWEEP_MAX_POINTS);
    g->n_points = g->n_vary + i;
    if (g->n_points == 0)
        return cli_fail(d, CLI_EUSAGE,
                        "%s: points: [] is an empty list and there is no vary; allowed: at "
                        "least one point",
                        g->path);
    return CLI_OK;
}

/* The scenario field an option name sets ("nvs" -> nvlink_size), or -1. */
static int option_field(const char *name) {
    char opt[72];
    snprintf(opt, sizeof opt, "--%.64s", name);
    for (int f = 0; f < SCN_FIELD_COUNT; f++)
        if (strcmp(scenario_field_option((scenario_field_t)f), opt) == 0)
            return f;
    return -1;
}

/* The option table's entry of "--name" for the grid's command, or NULL. */
static const cli_option_t *table_option(const sweep_grid_t *g, const char *name) {
    char opt[72];
    cli_cmd_t cmd;
    snprintf(opt, sizeof opt, "--%.64s", name);
    return cli_command_find(g->cmd->name, &cmd) == CLI_OK ? cli_option_find(opt, cmd) : NULL;
}

/* "top, model, system, ..." : the options of the command in a grid (its grid options, then the
 * table's scenario options of the command). */
static void option_list(const sweep_grid_t *g, char *buf, size_t n, const char **names, size_t *count) {
    size_t used = 0, k = 0, nt = 0;
    cli_cmd_t cmd = CLI_CMD_ESTIMATE;
    (void)cli_command_find(g->cmd->name, &cmd);
    buf[0] = '\0';
    for (const sweep_option_t *o = g->cmd->options; o->name; o++) {
        used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "%s%s", used ? ", " : "", o->name);
        names[k++] = o->name;
    }
    const cli_option_t *t = cli_options(&nt);
    for (size_t i = 0; i < nt && k < SWEEP_MAX_OPTION_NAMES; i++) {
        if (t[i].target != CLI_OPT_SCENARIO || !(t[i].cmds & CLI_CMD_BIT(cmd)))
            continue;
        const char *name = t[i].name + 2;
        used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "%s%s", used ? ", " : "", name);
        names[k++] = name;
    }
    *count = k;
}

static int command_option(sweep_grid_t *g, const sweep_option_t *o, const cJSON *v, cli_diag_t *d) {
    char what[96];
    scn_describe(v, what, sizeof what);
    if (o->kind == SWEEP_OPT_BOOL) {
        if (!cJSON_IsBool(v))
            return cli_fail(d, CLI_EUSAGE, "%s: options.%s: %s is not a boolean; allowed: true, false",
                            g->path, o->name, what);
        return cJSON_AddBoolToObject(g->options, o->name, cJSON_IsTrue(v))
                   ? CLI_OK
                   : cli_fail(d, CLI_ERUNTIME, "out of memory");
    }
    if (o->kind == SWEEP_OPT_TEXT) {
        if (!cJSON_IsString(v))
            return cli_fail(d, CLI_EUSAGE, "%s: options.%s: %s is not a string; allowed: the value of --%s",
                            g->path, o->name, what, o->name);
        return cJSON_AddStringToObject(g->options, o->name, v->valuestring)
                   ? CLI_OK
                   : cli_fail(d, CLI_ERUNTIME, "out of memory");
    }
    int64_t iv = 0; /* the cast only after the range check (checked_double_to_i64) */
    if (!cJSON_IsNumber(v) || checked_double_to_i64(v->valuedouble, &iv) || v->valuedouble != (double)iv ||
        v->valuedouble < (double)o->min || v->valuedouble > (double)o->max)
        return cli_fail(d, CLI_EUSAGE, "%s: options.%s: %s; allowed: an integer %" PRId64 "..%" PRId64,
                        g->path, o->name, what, o->min, o->max);
    return cJSON_AddNumberToObject(g->options, o->name, v->valuedouble)
               ? CLI_OK
               : cli_fail(d, CLI_ERUNTIME, "out of memory");
}

static int scenario_option(sweep_grid_t *g, const cJSON *c, cli_diag_t *d) {
    int f = option_field(c->string);
    const char *path = scenario_field_path((scenario_field_t)f);
    for (size_t a = 0; a < g->n_axes; a++) {
        size_t lp = strlen(path), la = strlen(g->axes[a].path), m = lp < la ? lp : la;
        if (strncmp(path, g->axes[a].path, m) == 0 &&
            (lp == la || (lp < la ? g->axes[a].path[m] : path[m]) == '.'))
            return cli_fail(d, CLI_EUSAGE,
                            "%s: options.%s: also varied by vary[\"%s\"]; allowed: one of the two", g->path,
                            c->string, g->axes[a].path);
    }
    return put(g->scenario_options, path, c) == 0 ? CLI_OK : cli_fail(d, CLI_ERUNTIME, "out of memory");
}

static int parse_options(sweep_grid_t *g, cli_diag_t *d) {
    const cJSON *opts = cJSON_GetObjectItemCaseSensitive(g->doc, "options");
    char list[600], what[96];
    const char *names[SWEEP_MAX_OPTION_NAMES];
    size_t n_names = 0;
    g->options = cJSON_CreateObject();
    g->scenario_options = cJSON_CreateObject();
    if (!g->options || !g->scenario_options)
        return cli_fail(d, CLI_ERUNTIME, "out of memory");
    option_list(g, list, sizeof list, names, &n_names);
    if (opts && !cJSON_IsObject(opts)) {
        scn_describe(opts, what, sizeof what);
        return cli_fail(d, CLI_EUSAGE,
                        "%s: options: %s is not an object; allowed: {\"option\": value} with "
                        "options %s",
                        g->path, what, list);
    }
    for (const cJSON *c = opts ? opts->child : NULL; c; c = c->next) {
        const sweep_option_t *o = g->cmd->options;
        while (o->name && strcmp(o->name, c->string) != 0)
            o++;
        const cli_option_t *t = table_option(g, c->string);
        char opt[72];
        snprintf(opt, sizeof opt, "--%.64s", c->string);
        int f = option_field(c->string);
        int rc;
        if (o->name)
            continue; /* below, in table order */
        if (t && t->target == CLI_OPT_SCENARIO)
            rc = scenario_option(g, c, d);
        else if (t)
            rc = cli_fail(d, CLI_EUSAGE,
                          "%s: options.%s: not an option in a grid (every line is JSON, the journal is the "
                          "only output); allowed: %s",
                          g->path, c->string, list);
        else if (cli_option_find(opt, CLI_CMD_ESTIMATE) || cli_option_find(opt, CLI_CMD_RUN) ||
                 cli_option_find(opt, CLI_CMD_SEARCH) || f >= 0)
            rc = cli_fail(d, CLI_EUSAGE, "%s: options.%s: not an option of %s%s; allowed: %s", g->path,
                          c->string, g->cmd->name,
                          f >= 0 && !g->cmd->takes_degrees ? " (it chooses the degrees itself)" : "", list);
        else {
            const char *s = cli_suggest(c->string, names, n_names);
            rc = cli_fail(d, CLI_EUSAGE, "%s: options.%.60s: unknown option of %s%s%s%s; allowed: %s",
                          g->path, c->string, g->cmd->name, s ? " (did you mean \"" : "", s ? s : "",
                          s ? "\"?)" : "", list);
        }
        if (rc)
            return rc;
    }
    /* The command's own options, defaults included, so that the id does not depend on spelling. */
    for (const sweep_option_t *o = g->cmd->options; o->name; o++) {
        const cJSON *v = opts ? cJSON_GetObjectItemCaseSensitive(opts, o->name) : NULL;
        if (!v && o->kind == SWEEP_OPT_TEXT && !o->text_def)
            continue; /* no default: only when given */
        cJSON *def = v                           ? NULL
                     : o->kind == SWEEP_OPT_BOOL ? cJSON_CreateBool((int)o->def)
                     : o->kind == SWEEP_OPT_TEXT ? cJSON_CreateString(o->text_def)
                                                 : cJSON_CreateNumber((double)o->def);
        int rc = v || def ? command_option(g, o, v ? v : def, d) : cli_fail(d, CLI_ERUNTIME, "out of memory");
        cJSON_Delete(def);
        if (rc)
            return rc;
    }
    if (g->cmd->check) {
        cli_diag_t cd;
        const int rc = g->cmd->check(g->options, &cd);
        if (rc)
            return cli_fail(d, rc, "%s: options: %s", g->path, cd.msg);
    }
    return canonicalize(g->options) == 0 ? CLI_OK : cli_fail(d, CLI_ERUNTIME, "out of memory");
}

static int parse_top(sweep_grid_t *g, cli_diag_t *d) {
    char what[96], path[256] = "";
    if (!cJSON_IsObject(g->doc)) {
        scn_describe(g->doc, what, sizeof what);
        return cli_fail(d, CLI_EUSAGE,
                        "%s: (top level): %s; allowed: a grid object {\"command\", \"scenario\", "
                        "\"vary\", \"points\", \"options\"}",
                        g->path, what);
    }
    if (duplicate_key(g->doc, path, sizeof path))
        return cli_fail(d, CLI_EUSAGE, "%s: %s: duplicate key; allowed: each key once per object", g->path,
                        path);
    for (const cJSON *c = g->doc->child; c; c = c->next) {
        size_t i = 0;
        while (i < COUNT(GRID_KEYS) && strcmp(GRID_KEYS[i], c->string) != 0)
            i++;
        if (i < COUNT(GRID_KEYS))
            continue;
        const char *s = cli_suggest(c->string, GRID_KEYS, COUNT(GRID_KEYS));
        return cli_fail(d, CLI_EUSAGE,
                        "%s: %.60s: unknown key%s%s%s; allowed: command, scenario, vary, points, "
                        "options, name, description",
                        g->path, c->string, s ? " (did you mean \"" : "", s ? s : "", s ? "\"?)" : "");
    }
    static const char *const texts[] = {"name", "description"};
    for (size_t i = 0; i < COUNT(texts); i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(g->doc, texts[i]);
        if (v && !cJSON_IsString(v)) {
            scn_describe(v, what, sizeof what);
            return cli_fail(d, CLI_EUSAGE, "%s: %s: %s is not a string; allowed: a string", g->path, texts[i],
                            what);
        }
    }
    g->base = cJSON_GetObjectItemCaseSensitive(g->doc, "scenario");
    if (g->base && !cJSON_IsObject(g->base)) {
        scn_describe(g->base, what, sizeof what);
        return cli_fail(d, CLI_EUSAGE,
                        "%s: scenario: %s is not an object; allowed: a scenario object (the "
                        "keys of a scenario file)",
                        g->path, what);
    }
    return CLI_OK;
}

/* ---- validation ------------------------------------------------------------------------------ */

/* Each piece alone over the base, so that an error names the vary value or entry that causes it. */
static int check_pieces(const sweep_grid_t *g, cli_diag_t *d) {
    char where[400];
    int rc = CLI_OK;
    cJSON *scn = base_copy(g);
    snprintf(where, sizeof where, "%s: scenario", g->path);
    rc = scn ? check_scenario(scn, where, d) : cli_fail(d, CLI_ERUNTIME, "out of memory");
    cJSON_Delete(scn);
    for (size_t a = 0; a < g->n_axes && !rc; a++) {
        size_t i = 0;
        for (const cJSON *v = g->axes[a].values->child; v && !rc; v = v->next, i++) {
            snprintf(where, sizeof where, "%s: vary[\"%s\"][%zu]", g->path, g->axes[a].path, i);
            scn = base_copy(g);
            rc = scn ? set_path(scn, g->axes[a].path, v, where, d)
                     : cli_fail(d, CLI_ERUNTIME, "out of memory");
            if (!rc)
                rc = check_scenario(scn, where, d);
            cJSON_Delete(scn);
        }
    }
    size_t j = 0;
    for (const cJSON *e = g->points ? g->points->child : NULL; e && !rc; e = e->next, j++) {
        snprintf(where, sizeof where, "%s: points[%zu]", g->path, j);
        scn = base_copy(g);
        rc = scn && merge_entry(scn, e) == 0 ? check_scenario(scn, where, d)
                                             : cli_fail(d, CLI_ERUNTIME, "out of memory");
        cJSON_Delete(scn);
    }
    if (!rc && g->scenario_options->child) {
        snprintf(where, sizeof where, "%s: options", g->path);
        scn = base_copy(g);
        rc = scn ? apply_options(g, scn, where, d) : cli_fail(d, CLI_ERUNTIME, "out of memory");
        if (!rc)
            rc = check_scenario(scn, where, d);
        cJSON_Delete(scn);
    }
    return rc;
}

typedef struct id_index {
    uint64_t id;
    size_t index;
} id_index_t;

static int by_id(const void *a, const void *b) {
    const id_index_t *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int check_duplicates(const sweep_grid_t *g, cli_diag_t *d) {
    id_index_t *v = alloc_malloc(g->n_points * sizeof *v);
    if (!v)
        return cli_fail(d, CLI_ERUNTIME, "out of memory");
    for (size_t i = 0; i < g->n_points; i++)
        v[i].id = g->ids[i], v[i].index = i;
    qsort(v, g->n_points, sizeof *v, by_id);
    int rc = CLI_OK;
    for (size_t i = 1; i < g->n_points && !rc; i++) {
        if (v[i].id != v[i - 1].id)
            continue;
        char a[400], b[400];
        point_name(g, v[i - 1].index, a, sizeof a);
        point_name(g, v[i].index, b, sizeof b);
        rc = cli_fail(d, CLI_EUSAGE,
                      "%s is the same scenario as %s (id %016" PRIx64 "); allowed: distinct points", b,
                      a + strlen(g->path) + 2, v[i].id);
    }
    free(v);
    return rc;
}

/* Build every point, parse it as a scenario and compute its id. */
static int expand(sweep_grid_t *g, cli_diag_t *d) {
    char *opts = cJSON_PrintUnformatted(g->options);
    if (!opts)
        return cli_fail(d, CLI_ERUNTIME, "out of memory");
    uint64_t head = sweep_fnv1a(SWEEP_FNV_OFFSET, g->cmd->name, strlen(g->cmd->name));
    head = sweep_fnv1a(head, "\n", 1);
    g->ids = alloc_malloc(g->n_points * sizeof *g->ids);
    int rc = g->ids ? CLI_OK : cli_fail(d, CLI_ERUNTIME, "out of memory");
    for (size_t i = 0; i < g->n_points && !rc; i++) {
        cJSON *scn = NULL;
        char where[400];
        point_name(g, i, where, sizeof where);
        rc = build_point(g, i, &scn, d);
        if (!rc)
            rc = check_scenario(scn, where, d);
        char *text = rc ? NULL : cJSON_PrintUnformatted(scn);
        if (!rc && !text)
            rc = cli_fail(d, CLI_ERUNTIME, "out of memory");
        if (!rc) {
            uint64_t h = sweep_fnv1a(head, text, strlen(text));
            h = sweep_fnv1a(h, "\n", 1);
            g->ids[i] = sweep_fnv1a(h, opts, strlen(opts));
        }
        cJSON_free(text);
        cJSON_Delete(scn);
    }
    cJSON_free(opts);
    return rc ? rc : check_duplicates(g, d);
}

int sweep_grid_load(sweep_grid_t *g, const char *path, cli_diag_t *d) {
    memset(g, 0, sizeof *g);
    snprintf(g->path, sizeof g->path, "%s", path);
    int rc = scenario_json_read(path, "grid", &g->doc, d);
    if (!rc)
        rc = parse_top(g, d);
    if (!rc)
        rc = parse_command(g, d);
    if (!rc)
        rc = parse_vary(g, d);
    if (!rc)
        rc = parse_points(g, d);
    if (!rc)
        rc = parse_options(g, d);
    if (!rc)
        rc = check_pieces(g, d);
    if (!rc)
        rc = expand(g, d);
    return rc;
}

void sweep_grid_destroy(sweep_grid_t *g) {
    if (!g)
        return;
    cJSON_Delete(g->doc);
    cJSON_Delete(g->options);
    cJSON_Delete(g->scenario_options);
    free(g->axes);
    free(g->ids);
    memset(g, 0, sizeof *g);
}
