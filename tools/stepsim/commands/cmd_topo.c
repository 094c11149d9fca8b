/* cmd_topo.c - `stepsim topo [SCENARIO.json] [--topology NAME|FILE|JSON] [--gpus N] [--json]
 * [--graphml FILE] [--dot FILE]`: build a topology, print its summary (interfaces.md fields), and
 * export it. Exports are written to a temporary file beside the target and renamed into place, so an
 * interrupted run never leaves a truncated file.
 *
 * The topology comes from --topology, else the scenario file's "topology", else "ideal" built from the
 * scenario's system (the analytic model's two-tier abstraction). igraph's error handler is process-wide
 * and aborts by default; this command installs the silent one before building (topo/ converts igraph's
 * codes into messages, so nothing but our one line reaches stderr).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <igraph.h>

#include "commands.h"
#include "output.h"
#include "topo.h"
#include "topo_json.h"

/* The parsed options this command reads (topology and gpus are scenario options, applied in order). */
typedef struct topo_args {
    const char *scenario, *topology, *gpus, *graphml, *dot;
    int json;
} topo_args_t;

static int resolve(const topo_args_t *a, scenario_t *scn, topo_params_t *p, cli_diag_t *d) {
    /* presets follow --gpus (or the file's "gpus"); the unnamed ideal topology and the shortcuts
     * the scenario's GPU count */
    const int64_t gpus = scn->given[SCN_GPUS] ? scn->value[SCN_GPUS] : 0;
    model_system_t sys;
    (void)a;
    scenario_system(scn, &sys);
    return topo_spec_params(&scn->topology, NULL, &sys, gpus, scn->value[SCN_GPUS], p, d);
}

/* Write to "<path>.XXXXXX" in the same directory, then rename over path. */
static int write_atomic(const topo_t *t, const char *option, const char *path, int dot, cli_diag_t *d) {
    size_t n = strlen(path);
    char *tmp = malloc(n + 8);
    if (!tmp)
        return cli_fail(d, CLI_ERUNTIME, "%s %s: out of memory", option, path);
    snprintf(tmp, n + 8, "%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd >= 0) { /* mkstemp makes the file 0600: give it the mode a plain fopen would */
        mode_t mask = umask(0);
        umask(mask);
        fchmod(fd, 0666 & ~mask);
    }
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        free(tmp);
        return cli_fail(d, CLI_ERUNTIME, "%s %s: cannot create: %s", option, path, strerror(e));
    }
    topo_issue_t issue;
    char msg[400];
    int rc = dot ? topo_dot_write(t, f, &issue) : topo_graphml_write(t, f, &issue);
    int closed = fclose(f);
    if (rc == TOPO_OK && closed == 0 && rename(tmp, path) == 0) {
        free(tmp);
        return CLI_OK;
    }
    int e = errno;
    unlink(tmp);
    free(tmp);
    if (rc != TOPO_OK)
        return cli_fail(d, CLI_ERUNTIME, "%s %s: %s", option, path,
                        topo_issue_format(&issue, msg, sizeof msg));
    return cli_fail(d, CLI_ERUNTIME, "%s %s: cannot write: %s", option, path, strerror(e));
}

static void tiers(const topo_t *t, int64_t count[4]) {
    memset(count, 0, 4 * sizeof *count);
    for (int64_t v = 0; v < topo_vertex_count(t); v++) {
        topo_vertex_info_t vi;
        topo_vertex_get(t, v, &vi);
        if (vi.kind == TOPO_VERTEX_SWITCH && vi.tier >= 1 && vi.tier <= 3)
            count[vi.tier]++;
    }
}

static int print_json(FILE *out, const topo_t *t, const topo_summary_t *s) {
    json_writer_t w;
    int64_t tier[4];
    tiers(t, tier);
    json_start(&w, out);
    json_string(&w, "name", s->name);
    json_string(&w, "kind", s->kind);
    json_int(&w, "gpus", s->gpus);
    json_int(&w, "nodes", s->nodes);
    json_int(&w, "switches", s->switches);
    json_int(&w, "links", s->links);
    json_int(&w, "diameter_hops", s->diameter_hops);
    json_number(&w, "bisection_bandwidth_bytes_per_s", s->bisection_bandwidth_bytes_per_s);
    json_number(&w, "injection_bandwidth_bytes_per_s", s->injection_bandwidth_bytes_per_s);
    json_string(&w, "routing", topo_routing_name(topo_routing(t)));
    json_open_array(&w, "switches_by_tier");
    for (int k = 1; k <= 3; k++)
        if (tier[k] || k == 1)
            json_int(&w, NULL, tier[k]);
    json_close_array(&w);
    json_int(&w, "nvswitches", s->nvswitches);
    json_int(&w, "nics", s->nics);
    json_int(&w, "nvlink_links", s->nvlink_links);
    json_int(&w, "pcie_links", s->pcie_links);
    json_bool(&w, "diameter_exhaustive", s->diameter_exhaustive);
    if (s->bisection_closed_form_bytes_per_s > 0)
        json_number(&w, "bisection_closed_form_bytes_per_s", s->bisection_closed_form_bytes_per_s);
    json_open_object(&w, "cost");
    json_int(&w, "switches", s->switches);
    json_int(&w, "cables", s->cables);
    json_int(&w, "optical_cables", s->optical_cables);
    json_int(&w, "optical_transceivers", s->optical_transceivers);
    json_close_object(&w);
    json_open_array(&w, "technologies");
    for (int i = 0; i < s->n_techs; i++) {
        const topo_tech_use_t *u = &s->techs[i];
        json_open_object(&w, NULL);
        json_string(&w, "name", topo_tech_name(u->tech));
        json_int(&w, "links", u->links);
        json_number(&w, "bandwidth_bytes_per_s", u->bandwidth_bytes_per_s);
        json_number(&w, "latency_s", u->latency_s);
        json_number(&w, "efficiency", topo_tech_info(u->tech)->efficiency);
        json_close_object(&w);
    }
    json_close_array(&w);
    return json_finish(&w);
}

/* "51.2 TB/s" or "800 GB/s" */
static const char *rate(double bytes_per_s, char *buf, size_t size) {
    if (bytes_per_s >= 1e12)
        snprintf(buf, size, "%.4g TB/s", bytes_per_s / 1e12);
    else
        snprintf(buf, size, "%.4g GB/s", bytes_per_s / 1e9);
    return buf;
}

static void print_text(FILE *out, const topo_t *t, const topo_summary_t *s) {
    char r1[32], r2[32];
    int64_t tier[4];
    tiers(t, tier);
    fprintf(out, "topology        %s (%s, routing %s)\n", s->name, s->kind,
            topo_routing_name(topo_routing(t)));
    fprintf(out, "gpus            %lld in %lld nodes\n", (long long)s->gpus, (long long)s->nodes);
    fprintf(out, "switches        %lld", (long long)s->switches);
    if (tier[2])
        fprintf(out, " (tier 1: %lld, tier 2: %lld, tier 3: %lld)", (long long)tier[1], (long long)tier[2],
                (long long)tier[3]);
    fprintf(out, "; %lld NVSwitch crossbars, %lld NICs\n", (long long)s->nvswitches, (long long)s->nics);
    fprintf(out, "links           %lld network cables; %lld NVLink, %lld PCIe\n", (long long)s->links,
            (long long)s->nvlink_links, (long long)s->pcie_links);
    fprintf(out, "diameter        %lld links%s\n", (long long)s->diameter_hops,
            s->diameter_exhaustive ? "" : " (from representative GPUs)");
    fprintf(out, "bisection       %s", rate(s->bisection_bandwidth_bytes_per_s, r1, sizeof r1));
    if (s->bisection_closed_form_bytes_per_s > 0)
        fprintf(out, " (closed form %s)", rate(s->bisection_closed_form_bytes_per_s, r2, sizeof r2));
    fprintf(out, "\ninjection       %s\n", rate(s->injection_bandwidth_bytes_per_s, r1, sizeof r1));
    fprintf(out, "cost proxy      %lld switches, %lld cables, %lld optical transceivers\n",
            (long long)s->switches, (long long)s->cables, (long long)s->optical_transceivers);
    for (int i = 0; i < s->n_techs; i++) {
        const topo_tech_use_t *u = &s->techs[i];
        fprintf(out, "%-16s%s: %lld links at %s, %.3g us, efficiency %.3g\n", i ? "" : "technologies",
                topo_tech_name(u->tech), (long long)u->links, rate(u->bandwidth_bytes_per_s, r1, sizeof r1),
                u->latency_s * 1e6, topo_tech_info(u->tech)->efficiency);
    }
    if (s->techs_truncated)
        fprintf(out, "%-16s(more technology, bandwidth and latency pairs not listed)\n", "");
}

/* prefix: where messages about the topology point ("--topology: ", "run.json: topology."). */
static int run(const topo_args_t *a, const topo_params_t *p, const char *prefix, FILE *out, cli_diag_t *d) {
    topo_t *t = NULL;
    topo_issue_t issue;
    char msg[400];
    igraph_set_error_handler(igraph_error_handler_ignore);
    igraph_set_warning_handler(igraph_warning_handler_ignore);
    int rc = topo_new(p, &t, &issue);
    if (rc)
        return cli_fail(d, topo_json_exit_code(rc), "%s%s", prefix,
                        topo_issue_format(&issue, msg, sizeof msg));
    topo_summary_t s;
    rc = topo_summary_compute(t, &s, &issue);
    if (rc)
        rc = cli_fail(d, topo_json_exit_code(rc), "%s%s", prefix, topo_issue_format(&issue, msg, sizeof msg));
    if (!rc && a->graphml)
        rc = write_atomic(t, "--graphml", a->graphml, 0, d);
    if (!rc && a->dot)
        rc = write_atomic(t, "--dot", a->dot, 1, d);
    if (!rc && a->json && print_json(out, t, &s) != 0)
        rc = cli_fail(d, CLI_ERUNTIME, "topo: out of memory while printing");
    if (!rc && !a->json)
        print_text(out, t, &s);
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
        rc = run(&a, &p, prefix, out, d);
    }
    scenario_destroy(&scn);
    return rc;
}
