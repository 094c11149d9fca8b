/* cmd_topo.c - `stepsim topo [SCENARIO.json] [--topology NAME|FILE|JSON] [--gpus N] [--json]
 * [--graphml FILE] [--dot FILE]`: build a topology, print its summary (the fields of docs/cli.md), and
 * export it (output/print_topo.c prints). Exports go through output/outfile.h (a unique temporary file
 * beside the target, renamed into place), so an interrupted run never leaves a truncated file.
 *
 * The topology comes from --topology, else the scenario file's "topology", else "ideal" built from the
 * scenario's system (the analytic model's two-tier abstraction). igraph's error handler is process-wide
 * and aborts by default; this command installs the silent one before building (topo/ converts igraph's
 * codes into messages, so nothing but our one line reaches stderr).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <igraph.h>

#include "commands.h"
#include "outfile.h"
#include "print.h"
#include "topo.h"
#include "topo_json.h"

/* The parsed options this command reads (topology and gpus are scenario options, applied in order). */
typedef struct topo_args {
    const char *scenario, *topology, *gpus, *graphml, *dot, *max_memory;
    int json;
} topo_args_t;

static int resolve(const topo_args_t *a, scenario_t *scn, topo_params_t *p, cli_diag_t *d) {
    /* presets follow --gpus (or the file's "gpus"); the unnamed ideal topology and the shortcuts
     * the scenario's GPU count */
    const int64_t gpus = scn->given[SCN_GPUS] ? scn->value[SCN_GPUS] : 0;
    model_system_t sys;
    scenario_system(scn, &sys);
    double max_memory_gb = 0.0; /* --max-memory: the topology's budget (0: the default) */
    int rc = a->max_memory ? cmd_parse_max_memory(a->max_memory, &max_memory_gb, d) : CLI_OK;
    if (!rc)
        rc = topo_spec_params(&scn->topology, NULL, &sys, gpus, scn->value[SCN_GPUS], p, d);
    p->max_memory_bytes = max_memory_gb * 1e9;
    return rc;
}

/* Write the export through outfile.h: whole or not at all. */
static int write_atomic(const topo_t *t, const char *option, const char *path, int dot, cli_diag_t *d) {
    outfile_t of;
    int rc = outfile_open(&of, option, path, d);
    if (rc)
        return rc;
    topo_issue_t issue;
    char msg[400];
    if ((dot ? topo_dot_write(t, of.f, &issue) : topo_graphml_write(t, of.f, &issue)) != TOPO_OK) {
        outfile_discard(&of);
        return cli_fail(d, CLI_ERUNTIME, "%s %s: %s", option, path,
                        topo_issue_format(&issue, msg, sizeof msg));
    }
    return outfile_commit(&of, d);
}

/* count[k]: the switches of tier k (1..3). */
static void tiers(const topo_t *t, int64_t count[4]) {
    memset(count, 0, 4 * sizeof *count);
    for (int64_t v = 0; v < topo_vertex_count(t); v++) {
        topo_vertex_info_t vi;
        topo_vertex_get(t, v, &vi);
        if (vi.kind == TOPO_VERTEX_SWITCH && vi.tier >= 1 && vi.tier <= 3)
            count[vi.tier]++;
    }
}

/* prefix: where messages about the topology point ("--topology: ", "run.json: topology."). */
static int run(const topo_args_t *a, const topo_params_t *p, const scn_perturb_t *perturb, const char *prefix,
               FILE *out, cli_diag_t *d) {
    topo_t *t = NULL;
    topo_issue_t issue;
    char msg[400];
    igraph_set_error_handler(igraph_error_handler_ignore);
    igraph_set_warning_handler(igraph_warning_handler_ignore);
    int rc = topo_new(p, &t, &issue);
    if (rc)
        return cli_fail(d, topo_json_exit_code(rc), "%s%s", prefix,
                        topo_issue_format(&issue, msg, sizeof msg));
    if ((rc = perturb_links_apply(&perturb->links, perturb->seed, t, d))) {
        topo_free(t);
        return rc;
    }
    topo_result_t r;
    memset(&r, 0, sizeof r);
    r.topo = t;
    tiers(t, r.switches_by_tier);
    rc = topo_summary_compute(t, &r.summary, &issue);
    if (rc)
        rc = cli_fail(d, topo_json_exit_code(rc), "%s%s", prefix, topo_issue_format(&issue, msg, sizeof msg));
    if (!rc && a->graphml)
        rc = write_atomic(t, "--graphml", a->graphml, 0, d);
    if (!rc && a->dot)
        rc = write_atomic(t, "--dot", a->dot, 1, d);
    if (!rc && print_topo(out, &r, a->json) != 0)
        rc = cli_fail(d, CLI_ERUNTIME, "topo: out of memory while printing");
    topo_free(t);
    return rc;
}

int cmd_topo(const cli_args_t *args, FILE *out, FILE *err, cli_diag_t *d) {
    (void)err;
    topo_args_t a;
    memset(&a, 0, sizeof a);
    a.scenario = args->file;
    a.topology = cli_scenario_value(args, "--topology");
    a.gpus = cli_scenario_value(args, "--gpus");
    a.graphml = args->value[CLI_OPT_GRAPHML];
    a.dot = args->value[CLI_OPT_DOT];
    a.max_memory = args->value[CLI_OPT_MAX_MEMORY];
    a.json = cli_has(args, CLI_OPT_JSON);
    scenario_t scn;
    topo_params_t p;
    char prefix[300];
    int rc = cli_apply_scenario(args, &scn, NULL, d);
    if (!rc)
        rc = resolve(&a, &scn, &p, d);
    if (!rc) {
        if (a.topology || scn.topology.form == TOPO_SPEC_NONE)
            snprintf(prefix, sizeof prefix, "%s: ", a.topology ? "--topology" : "topology");
        else
            snprintf(prefix, sizeof prefix, "%s: topology.", a.scenario);
        rc = run(&a, &p, &scn.perturb, prefix, out, d);
    }
    scenario_destroy(&scn);
    return rc;
}
