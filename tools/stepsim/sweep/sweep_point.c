/* sweep_point.c - the commands a sweep can run, one point at a time, and the output line of a point.
 *
 * COMMANDS is the whole dispatch: a point of a grid whose "command" is X runs COMMANDS[X].run on the
 * resolved scenario, in-process, through the same code as `stepsim X --json`, so a sweep result is
 * byte for byte the command's JSON object. Adding a command is one line (its run function, its
 * non-scenario options). A searched layout ("parallel.layout": "search") is resolved here: the
 * search picks the rank-0 layout and estimate evaluates it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "print.h"
#include "sweep.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the layout marker ----------------------------------------------------------------------- */

cJSON *sweep_loadable_scenario(const cJSON *scenario, int *searched) {
    cJSON *copy = cJSON_Duplicate(scenario, 1);
    *searched = 0;
    if (!copy)
        return NULL;
    cJSON *par = cJSON_GetObjectItemCaseSensitive(copy, "parallel");
    if (cJSON_IsObject(par) && cJSON_GetObjectItemCaseSensitive(par, "layout")) {
        *searched = 1;
        cJSON_DeleteItemFromObjectCaseSensitive(par, "layout");
        if (!par->child)
            cJSON_DeleteItemFromObjectCaseSensitive(copy, "parallel");
    }
    return copy;
}

/* ---- options --------------------------------------------------------------------------------- */

static int64_t option_value(const cJSON *options, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(options, name);
    if (cJSON_IsBool(v))
        return cJSON_IsTrue(v);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

/* Load a point's scenario over the built-in defaults; messages start with "scenario: ". */
static int load_point(scenario_t *scn, const cJSON *scenario, int *searched, cli_diag_t *diag) {
    memset(scn, 0, sizeof *scn);
    int rc = scenario_init(scn, diag);
    if (rc)
        return rc;
    cJSON *loadable = sweep_loadable_scenario(scenario, searched);
    if (!loadable)
        return cli_fail(diag, CLI_ERUNTIME, "out of memory");
    rc = scenario_load_json(scn, loadable, "scenario", diag);
    cJSON_Delete(loadable);
    return rc;
}

/* ---- the commands ---------------------------------------------------------------------------- */

/* A point where nothing fits in memory is a result, not an error: {"fits": false, "note": why,
 * "layout_search": {...}} for a searched layout of estimate and run (no layout to evaluate). */
static int nofit_result(const cli_diag_t *why, int64_t evaluated, int64_t feasible, cJSON **result,
                        cli_diag_t *diag) {
    cJSON *o = cJSON_CreateObject(), *how = cJSON_CreateObject();
    if (!o || !how || !cJSON_AddFalseToObject(o, "fits") || !cJSON_AddStringToObject(o, "note", why->msg) ||
        !cJSON_AddNumberToObject(how, "candidates_evaluated", (double)evaluated) ||
        !cJSON_AddNumberToObject(how, "candidates_feasible", (double)feasible) ||
        !cJSON_AddItemToObject(o, "layout_search", how)) {
        cJSON_Delete(o);
        cJSON_Delete(how);
        return cli_fail(diag, CLI_ERUNTIME, "out of memory");
    }
    *result = o;
    return CLI_OK;
}

/* cmd_search_best's outcome: nothing fits (candidates evaluated, none feasible) is *nofit. */
static int search_best(scenario_t *scn, model_parallel_t *best, int64_t *evaluated, int64_t *feasible,
                       int *nofit, cli_diag_t *diag) {
    const int rc = cmd_search_best(scn, best, evaluated, feasible, diag);
    *nofit = rc == CLI_ENORESULT && *evaluated > 0 && *feasible == 0;
    return *nofit ? CLI_OK : rc;
}

static int point_estimate(const cJSON *scenario, const cJSON *options, cJSON **result, cli_diag_t *diag) {
    scenario_t scn;
    int searched = 0;
    int64_t evaluated = 0, feasible = 0;
    cli_opts_t opts = {1, (int)option_value(options, "layers"), 10};
    *result = NULL;
    int nofit = 0;
    int rc = load_point(&scn, scenario, &searched, diag);
    if (!rc && searched) {
        model_parallel_t best;
        rc = search_best(&scn, &best, &evaluated, &feasible, &nofit, diag);
        if (!rc && nofit) {
            scenario_destroy(&scn);
            return nofit_result(diag, evaluated, feasible, result, diag);
        }
        if (!rc)
            scenario_set_layout(&scn, &best, SCN_FROM_DERIVED);
    }
    if (!rc) {
        estimate_result_t r;
        rc = cmd_estimate_compute(&scn, &r, diag);
        if (!rc) {
            *result = print_estimate_json(&r, opts.layers);
            estimate_result_destroy(&r);
            if (!*result)
                rc = cli_fail(diag, CLI_ERUNTIME, "out of memory while printing the JSON result");
        }
    }
    scenario_destroy(&scn);
    if (!rc && searched) {
        cJSON *how = cJSON_CreateObject();
        if (!how || !cJSON_AddNumberToObject(how, "candidates_evaluated", (double)evaluated) ||
            !cJSON_AddNumberToObject(how, "candidates_feasible", (double)feasible) ||
            !cJSON_AddItemToObject(*result, "layout_search", how)) {
            cJSON_Delete(how);
            cJSON_Delete(*result);
            *result = NULL;
            return cli_fail(diag, CLI_ERUNTIME, "out of memory");
        }
    }
    return rc;
}

static int point_search(const cJSON *scenario, const cJSON *options, cJSON **result, cli_diag_t *diag) {
    scenario_t scn;
    int searched = 0;
    cli_opts_t opts = {1, 0, (int)option_value(options, "top")};
    *result = NULL;
    int rc = load_point(&scn, scenario, &searched, diag);
    if (!rc) {
        search_result_t r;
        rc = cmd_search_compute(&scn, &opts, &r, diag);
        /* nothing fits: a result (the empty list, "fits": false and why); no layout at all: an error */
        const int nofit = rc == CLI_ENORESULT && r.searched && r.res.candidates_evaluated > 0;
        if (!rc || nofit) {
            *result = print_search_json(&r);
            if (*result && nofit &&
                (!cJSON_AddFalseToObject(*result, "fits") ||
                 !cJSON_AddStringToObject(*result, "note", diag->msg)))
                cJSON_Delete(*result), *result = NULL;
            rc = *result ? CLI_OK
                         : cli_fail(diag, CLI_ERUNTIME, "out of memory while printing the JSON result");
        }
        if (r.searched)
            search_result_destroy(&r);
    }
    scenario_destroy(&scn);
    return rc;
}

static const char *option_text(const cJSON *options, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(options, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* run's options in a grid, as its command line gives them; links is kept as text in buf. */
static void run_opts_of(const cJSON *options, run_opts_t *o, char *links, size_t n) {
    memset(o, 0, sizeof *o);
    o->json = o->deterministic = 1;
    o->comm = option_text(options, "comm");
    o->schedule = option_text(options, "schedule");
    o->placement = option_text(options, "placement");
    o->p2p = option_text(options, "p2p");
    o->collapse = option_text(options, "collapse");
    o->granularity = option_text(options, "granularity");
    o->fidelity = option_text(options, "fidelity");
    o->calibration = option_text(options, "calibration");
    snprintf(links, n, "%" PRId64, option_value(options, "links"));
    o->links = links;
}

/* run: the wall time is left out of the result, so lines stay deterministic; --interleave and
 * --optimizer-step are scenario options (cmd_run_scenario_opts), as on the command line. */
static int point_run(const cJSON *scenario, const cJSON *options, cJSON **result, cli_diag_t *diag) {
    scenario_t scn;
    int searched = 0;
    char links[24];
    run_opts_t opts;
    run_opts_of(options, &opts, links, sizeof links);
    *result = NULL;
    int rc = load_point(&scn, scenario, &searched, diag);
    if (!rc)
        cmd_sim_scenario(&scn);
    if (!rc && searched) {
        model_parallel_t best;
        int64_t evaluated = 0, feasible = 0;
        int nofit = 0;
        rc = search_best(&scn, &best, &evaluated, &feasible, &nofit, diag);
        if (!rc && nofit) {
            scenario_destroy(&scn);
            return nofit_result(diag, evaluated, feasible, result, diag);
        }
        if (!rc)
            scenario_set_layout(&scn, &best, SCN_FROM_DERIVED);
    }
    if (!rc) {
        cmd_run_scenario_opts(&scn, &opts);
        run_result_t *r = NULL;
        rc = cmd_run_compute(&scn, &opts, &r, diag);
        if (!rc && !(*result = print_run_json(r, &scn, &opts)))
            rc = cli_fail(diag, CLI_ERUNTIME, "run: out of memory while printing the JSON result");
        run_result_free(r);
    }
    scenario_destroy(&scn);
    return rc;
}

static int check_run(const cJSON *options, cli_diag_t *diag) {
    char links[24];
    run_opts_t opts;
    run_opts_of(options, &opts, links, sizeof links);
    return cmd_run_check(&opts, diag);
}

static int check_estimate(const cJSON *options, cli_diag_t *diag) {
    return cli_placement_check(option_text(options, "placement"), diag); /* the estimate does not use it */
}

static const sweep_option_t RUN_OPTIONS[] = {
    {"comm", SWEEP_OPT_TEXT, 0, 0, 0, "network"},  {"schedule", SWEEP_OPT_TEXT, 0, 0, 0, NULL},
    {"placement", SWEEP_OPT_TEXT, 0, 0, 0, NULL},  {"p2p", SWEEP_OPT_TEXT, 0, 0, 0, "blocking"},
    {"collapse", SWEEP_OPT_TEXT, 0, 0, 0, "auto"}, {"granularity", SWEEP_OPT_TEXT, 0, 0, 0, "auto"},
    {"fidelity", SWEEP_OPT_TEXT, 0, 0, 0, "fast"}, {"calibration", SWEEP_OPT_TEXT, 0, 0, 0, "nccl"},
    {"links", SWEEP_OPT_INT, 5, 0, 64, NULL},      {NULL, SWEEP_OPT_BOOL, 0, 0, 0, NULL}};
static const sweep_option_t ESTIMATE_OPTIONS[] = {{"layers", SWEEP_OPT_BOOL, 0, 0, 1, NULL},
                                                  {"placement", SWEEP_OPT_TEXT, 0, 0, 0, NULL},
                                                  {NULL, SWEEP_OPT_BOOL, 0, 0, 0, NULL}};
static const sweep_option_t SEARCH_OPTIONS[] = {{"top", SWEEP_OPT_INT, 10, 1, 1000000, NULL},
                                                {NULL, SWEEP_OPT_BOOL, 0, 0, 0, NULL}};

/* One line per command. */
static const sweep_command_t COMMANDS[] = {
    {"estimate", point_estimate, ESTIMATE_OPTIONS, 1, NULL, check_estimate},
    {"search", point_search, SEARCH_OPTIONS, 0, NULL, NULL},
    {"run", point_run, RUN_OPTIONS, 1, NULL, check_run},
};

const sweep_option_t *sweep_command_options(const char *name) {
    const sweep_command_t *c = sweep_command_find(name);
    return c ? c->options : NULL;
}

const sweep_command_t *sweep_command_find(const char *name) {
    for (size_t i = 0; i < COUNT(COMMANDS); i++)
        if (strcmp(COMMANDS[i].name, name) == 0)
            return &COMMANDS[i];
    return NULL;
}

void sweep_command_list(char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < COUNT(COMMANDS) && used < n; i++)
        if (COMMANDS[i].run)
            used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? ", " : "", COMMANDS[i].name);
}

/* ---- the output line ------------------------------------------------------------------------- */

int sweep_point_line(const sweep_grid_t *g, size_t index, char **line, size_t *len, int *point_error,
                     cli_diag_t *diag) {
    char id[17];
    cli_diag_t pd;
    cJSON *result = NULL;
    *line = NULL;
    *len = 0;
    *point_error = 0;
    cJSON *scenario = sweep_grid_point(g, index);
    if (!scenario)
        return cli_fail(diag, CLI_ERUNTIME, "out of memory");
    pd.msg[0] = '\0';
    int prc = g->cmd->run(scenario, g->options, &result, &pd);
    snprintf(id, sizeof id, "%016" PRIx64, g->ids[index]);
    cJSON *obj = cJSON_CreateObject();
    int ok = obj && cJSON_AddStringToObject(obj, "id", id) &&
             cJSON_AddStringToObject(obj, "command", g->cmd->name);
    if (ok) {
        cJSON_AddItemToObject(obj, "scenario", scenario);
        scenario = NULL;
        cJSON *opts = cJSON_Duplicate(g->options, 1);
        ok = opts && cJSON_AddItemToObject(obj, "options", opts);
        if (!ok)
            cJSON_Delete(opts);
    }
    if (ok && prc == CLI_OK) {
        if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(result, "fits")))
            *point_error = SWEEP_LINE_NOFIT;
        cJSON_AddItemToObject(obj, "result", result);
        result = NULL;
    } else if (ok) {
        *point_error = SWEEP_LINE_ERROR;
        ok = cJSON_AddStringToObject(obj, "error", pd.msg[0] ? pd.msg : "failed") &&
             cJSON_AddNumberToObject(obj, "exit_code", prc);
    }
    char *text = ok ? cJSON_PrintUnformatted(obj) : NULL;
    cJSON_Delete(obj);
    cJSON_Delete(scenario);
    cJSON_Delete(result);
    if (!text)
        return cli_fail(diag, CLI_ERUNTIME, "out of memory while building the line of point %zu", index);
    size_t n = strlen(text);
    *line = malloc(n + 2);
    if (*line) {
        memcpy(*line, text, n);
        (*line)[n] = '\n';
        (*line)[n + 1] = '\0';
        *len = n + 1;
    }
    cJSON_free(text);
    if (!*line)
        return cli_fail(diag, CLI_ERUNTIME, "out of memory while building the line of point %zu", index);
    return CLI_OK;
}
