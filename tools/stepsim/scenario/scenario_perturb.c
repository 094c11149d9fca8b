/* scenario_perturb.c - the scenario's "perturbations" object: its keys dispatched, each to its part's
 * parser (the links part in perturb_links.c), and the options that add to it. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "scenario_internal.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const PERTURB_KEYS[] = {"seed", "links"};

static int parse_seed(scenario_t *scn, const scn_src_t *src, const cJSON *v) {
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble != floor(v->valuedouble) || v->valuedouble > 9007199254740992.0) {
        char what[96];
        scn_describe(v, what, sizeof what);
        return cli_fail(src->diag, CLI_EUSAGE,
                        "%sperturbations.seed: %s is not a seed; allowed: an integer 0..2^53", src->prefix,
                        what);
    }
    scn->perturb.seed = (uint64_t)v->valuedouble;
    return CLI_OK;
}

/* The one dispatch of the object's keys. */
int scn_parse_perturbations(scenario_t *scn, const scn_src_t *src, const cJSON *v) {
    if (!cJSON_IsObject(v)) {
        char what[96];
        scn_describe(v, what, sizeof what);
        return cli_fail(src->diag, CLI_EUSAGE, "%sperturbations: %s is not an object; allowed: {%s, %s}",
                        src->prefix, what, PERTURB_KEYS[0], PERTURB_KEYS[1]);
    }
    int rc = scn_check_keys(src, v, "perturbations", PERTURB_KEYS, COUNT(PERTURB_KEYS));
    const cJSON *k;
    if (!rc && (k = cJSON_GetObjectItemCaseSensitive(v, "seed")))
        rc = parse_seed(scn, src, k);
    if (!rc && (k = cJSON_GetObjectItemCaseSensitive(v, "links")))
        rc = scn_links_parse_json(&scn->perturb.links, src, k, "perturbations.links");
    return rc;
}

int scn_perturb_is_option(const char *option) {
    return strcmp(option, "--slow-links") == 0 || strcmp(option, "--fail-links") == 0;
}

int scn_perturb_option(scenario_t *scn, const char *option, const char *value, cli_diag_t *diag) {
    return scn_links_option(&scn->perturb.links, option, value, diag);
}
