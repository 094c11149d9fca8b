/* fuzz_topology.c - libFuzzer target: a topology object (JSON), as a scenario's "topology" or
 * --topology '{...}' gives it: topo_spec_parse_text (keys, types, names, presets, node presets),
 * topo_spec_params for a DGX-A100 job of 64 GPUs (the checks of every kind), then topo_new and the
 * summary (counts, diameter, bisection, cost proxy).
 *
 * Size: a topology's build costs memory linear in its switches, cables and GPUs, which valid
 * objects may make as large as they like; this harness builds only topologies whose upper bound
 * (below) is at most FUZZ_MAX_ELEMENTS, so that libFuzzer explores shapes rather than sizes (and
 * runs fast: the summary of a topology costs time quadratic in its size). Larger
 * ones are still parsed and checked. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <igraph.h>

#include "fuzz_util.h"
#include "model.h"
#include "scenario.h"
#include "topo.h"
#include "topo_json.h"

#define FUZZ_MAX_ELEMENTS 2000.0

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static double pos(int64_t v) {
    return v > 0 ? (double)v : 0.0;
}

/* An upper bound on the vertices plus cables of the topology p describes. */
static double elements(const topo_params_t *p) {
    double gpn = pos(p->node.gpus_per_node) > 1 ? pos(p->node.gpus_per_node) : 1;
    double gpus = pos(p->gpus);
    double e = 4 * gpus * gpn;
    const topo_fat_tree_params_t *f = &p->fat_tree;
    const topo_dragonfly_params_t *df = &p->dragonfly;
    switch (p->kind) {
    case TOPO_KIND_FAT_TREE:
        e += pos(f->k) * pos(f->k) * pos(f->k) * gpn;
        e += pos(f->leaves) *
             (pos(f->spines) * (pos(f->links_per_leaf_spine) + 1) + pos(f->endpoints_per_leaf) * gpn);
        e += pos(f->pods) * pos(f->leaves_per_pod) *
             (pos(f->spines_per_pod) + pos(f->endpoints_per_leaf) * gpn);
        e += pos(f->pods) * pos(f->spines_per_pod) * pos(f->cores_per_spine) *
             (pos(f->links_per_spine_core) + 1);
        break;
    case TOPO_KIND_DRAGONFLY:
        e += pos(df->g) * pos(df->a) * (pos(df->p) * gpn + pos(df->a) + pos(df->h));
        e += pos(df->g) * pos(df->g) * (pos(df->global_links_per_pair) + 1);
        break;
    case TOPO_KIND_TORUS: {
        double n = 1;
        for (int64_t i = 0; i < p->torus.n_dims && i < TOPO_TORUS_MAX_DIMS; i++)
            n *= pos(p->torus.dims[i]);
        e += n * (2 * (double)p->torus.n_dims + 1) * gpn;
        break;
    }
    case TOPO_KIND_RAIL_OPTIMIZED:
        e += gpus * (pos(p->rail.nodes_per_su) + pos(p->rail.leaf_up) + pos(p->switch_radix) + 1);
        break;
    default:
        break;
    }
    return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static model_system_t sys;
    static int ready;
    if (!ready) {
        if (model_system_preset("DGX-A100", &sys) != MODEL_OK)
            abort();
        igraph_set_error_handler(igraph_error_handler_ignore);
        igraph_set_warning_handler(igraph_warning_handler_ignore);
        ready = 1;
    }
    char *text = malloc(size + 1);
    if (!text)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    topo_spec_t spec;
    cli_diag_t d = {{0}};
    int rc = topo_spec_parse_text(text, "--topology", &spec, &d);
    free(text);
    if (rc == CLI_OK && spec.form != TOPO_SPEC_GRAPHML &&
        !(spec.form == TOPO_SPEC_OBJECT && spec.kind == TOPO_KIND_GRAPHML)) {
        topo_params_t p;
        rc = topo_spec_params(&spec, NULL, &sys, 0, 64, &p, &d);
        if (rc == CLI_OK && elements(&p) <= FUZZ_MAX_ELEMENTS) {
            topo_t *t = NULL;
            topo_issue_t issue;
            char msg[400];
            int status = topo_new(&p, &t, &issue);
            if (status == TOPO_OK) {
                topo_summary_t s;
                status = topo_summary_compute(t, &s, &issue);
            }
            if (status != TOPO_OK)
                topo_issue_format(&issue, msg, sizeof msg);
            topo_free(t);
        }
    }
    if (rc != CLI_OK && (!d.msg[0] || strchr(d.msg, '\n'))) {
        fprintf(stderr, "fuzz: a rejection without one line of message: [%s]\n", d.msg);
        abort();
    }
    return 0;
}
