/* perturb.c - the "perturbations" object of a scenario: its keys dispatched to each part's parser
 * (perturb_gpus.c: gpus and jitter; perturb_links.c: links), the seed, the perturbation options, and the
 * scenario without its perturbations (the baseline of a what-if). perturb.h has the contract. */
#include "perturb.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario_internal.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int parse_seed(scenario_t *scn, const scn_src_t *src, const cJSON *v) {
    int64_t seed = 0;
    const int rc = scn_json_int(src, v, "perturbations.seed", 0, &seed);
    if (!rc) {
        scn->perturb.seed = (uint64_t)seed;
        scn->perturb.seed_given = 1;
    }
    return rc;
}

/* The one dispatch of the object's keys: each part parses its own. */
int scn_parse_perturbations(scenario_t *scn, const scn_src_t *src, const cJSON *obj) {
    static const char *const KEYS[] = {"seed", "gpus", "jitter", "links"};
    if (!cJSON_IsObject(obj)) {
        char what[96];
        scn_describe(obj, what, sizeof what);
        return cli_fail(src->diag, CLI_EUSAGE,
                        "%sperturbations: %s is not an object; allowed: {seed, gpus, jitter, links}",
                        src->prefix, what);
    }
    int rc = scn_check_keys(src, obj, "perturbations", KEYS, COUNT(KEYS));
    const cJSON *v;
    if (!rc && (v = cJSON_GetObjectItemCaseSensitive(obj, "seed")))
        rc = parse_seed(scn, src, v);
    if (!rc && (v = cJSON_GetObjectItemCaseSensitive(obj, "gpus")))
        rc = scn_parse_perturb_gpus(scn, src, v);
    if (!rc && (v = cJSON_GetObjectItemCaseSensitive(obj, "jitter")))
        rc = scn_parse_perturb_jitter(scn, src, v);
    if (!rc && (v = cJSON_GetObjectItemCaseSensitive(obj, "links")))
        rc = scn_links_parse_json(&scn->perturb.links, src, v, "perturbations.links");
    return rc;
}

int scn_perturb_is_option(const char *option) {
    static const char *const OPTS[] = {"--slow-gpus", "--slow-nodes", "--slow-fraction", "--jitter",
                                       "--seed",      "--slow-links", "--fail-links"};
    for (size_t i = 0; i < COUNT(OPTS); i++)
        if (strcmp(option, OPTS[i]) == 0)
            return 1;
    return 0;
}

int scn_perturb_set_option(scenario_t *scn, const char *option, const char *value, cli_diag_t *d) {
    if (strcmp(option, "--slow-links") == 0 || strcmp(option, "--fail-links") == 0)
        return scn_links_option(&scn->perturb.links, option, value, d);
    if (strcmp(option, "--seed") != 0)
        return scn_perturb_gpus_option(scn, option, value, d);
    char *end = NULL;
    const unsigned long long s = strtoull(value, &end, 10);
    if (!value[0] || *end || value[0] == '-')
        return cli_fail(d, CLI_EUSAGE, "--seed: \"%.60s\" is not a seed; allowed: an integer 0..2^64-1",
                        value);
    scn->perturb.seed = (uint64_t)s;
    scn->perturb.seed_given = 1;
    return CLI_OK;
}

int scenario_has_perturbations(const scenario_t *scn) {
    return scenario_perturbation_entries(scn) > 0;
}

void scenario_clear_perturbations(scenario_t *scn) {
    const uint64_t seed = scn->perturb.seed;
    const int seed_given = scn->perturb.seed_given;
    memset(&scn->perturb, 0, sizeof scn->perturb);
    scn->perturb.seed = seed;
    scn->perturb.seed_given = seed_given;
}

static int jitter_on(const scn_perturb_t *p) {
    return p->jitter.given && p->jitter.dist != STEP_JITTER_NONE && p->jitter.cv > 0;
}

int scn_perturb_entries(const scn_perturb_t *p) {
    return p->n_slow + p->links.n + jitter_on(p);
}

int scenario_perturbation_entries(const scenario_t *scn) {
    return scn_perturb_entries(&scn->perturb);
}

void scenario_keep_perturbation(scenario_t *scn, int k) {
    scn_perturb_t *p = &scn->perturb;
    if (k < p->n_slow) {
        const scn_slow_t keep = p->slow[k];
        p->slow[0] = keep;
        p->n_slow = 1;
        p->links.n = 0;
        memset(&p->jitter, 0, sizeof p->jitter);
    } else if (k < p->n_slow + p->links.n) {
        const scn_link_entry_t keep = p->links.e[k - p->n_slow];
        p->links.e[0] = keep;
        p->links.n = 1;
        p->n_slow = 0;
        memset(&p->jitter, 0, sizeof p->jitter);
    } else {
        p->n_slow = 0;
        p->links.n = 0;
    }
}

void scenario_perturbation_label(const scenario_t *scn, int k, char *buf, size_t size) {
    scn_perturb_label(&scn->perturb, k, buf, size);
}

void scn_perturb_describe(const scn_perturb_t *p, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < scn_perturb_entries(p) && used + 1 < size; k++) {
        char one[240];
        scn_perturb_label(p, k, one, sizeof one);
        const int w = snprintf(buf + used, size - used, "%s%s", k ? "; " : "", one);
        if (w < 0 || (size_t)w >= size - used) { /* cut: end with "..." */
            if (size > 4)
                snprintf(buf + size - 4, 4, "...");
            return;
        }
        used += (size_t)w;
    }
}

void scn_perturb_label(const scn_perturb_t *p, int k, char *buf, size_t size) {
    if (k < p->n_slow) {
        const scn_slow_t *e = &p->slow[k];
        if (e->kind == SCN_SLOW_FRACTION)
            snprintf(buf, size, "fraction %g x%g", e->fraction, e->slowdown);
        else
            snprintf(buf, size, "%s %s x%g", e->kind == SCN_SLOW_NODES ? "nodes" : "gpus", e->ranges,
                     e->slowdown);
    } else if (k < p->n_slow + p->links.n) {
        const scn_link_entry_t *e = &p->links.e[k - p->n_slow];
        char sel[200], change[32];
        if (e->names[0])
            snprintf(sel, sizeof sel, "%.190s", e->names);
        else if (e->fraction > 0)
            snprintf(sel, sizeof sel, "fraction:%g:%s", e->fraction,
                     e->has_class ? topo_link_class_name(e->link_class) : "network");
        else
            snprintf(sel, sizeof sel, "class:%s", topo_link_class_name(e->link_class));
        if (e->fail)
            snprintf(change, sizeof change, "failed");
        else
            snprintf(change, sizeof change, "x%g", e->bandwidth_factor);
        snprintf(buf, size, "links %s %s", sel, change);
    } else {
        snprintf(buf, size, "jitter %s cv %g", step_jitter_name(p->jitter.dist), p->jitter.cv);
    }
}
