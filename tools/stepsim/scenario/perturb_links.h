/* perturb_links.h - a scenario's slow and failed links ("perturbations.links", --slow-links,
 * --fail-links) as typed entries, and applying them to a built topology.
 *
 * Contract
 * - Entries are parsed and checked as far as they can be without a topology (keys, types, class names,
 *   ranges) when the file or option is read; names and classes are matched against the topology by
 *   perturb_links_apply, the one place the commands (run, compare, collective, topo) call after
 *   building the job's topology. Building without calling it gives the unperturbed baseline.
 * - Every entry remembers where it came from ("run.json: perturbations.links[1]", "--fail-links"), so
 *   that an error names the file or option, the field and the value.
 * - Errors: exit 2 (CLI_EUSAGE) with one line for a bad entry (an unknown link name with a
 *   did-you-mean, a class this topology has no link of); exit 3 (CLI_ENORESULT) when the failed links
 *   leave two GPUs without a route (the line names both).
 */
#ifndef STEPSIM_PERTURB_LINKS_H
#define STEPSIM_PERTURB_LINKS_H

#include <stdint.h>

#include "topo.h"

#define SCN_LINKS_MAX 32

typedef struct scn_link_entry {
    char where[160]; /* "run.json: perturbations.links[1]" or "--fail-links" */
    char names[512]; /* by name: "leaf3->spine1; leaf0->spine2"; "" otherwise */
    int has_class;   /* "class" given (alone, or the class a fraction is drawn from) */
    topo_link_class_t link_class;
    double fraction;         /* > 0: a seeded fraction of the class's cables */
    double bandwidth_factor; /* (0, 1]; 1 when failing */
    int fail;
    int absent_ok; /* compare: a class absent from a topology selects nothing there (names stay strict) */
} scn_link_entry_t;

typedef struct scn_links {
    int n;
    scn_link_entry_t e[SCN_LINKS_MAX];
} scn_links_t;

struct cli_diag; /* scenario.h */

/* Apply links' entries, in order, to t (seed: the scenario's perturbations.seed). n == 0 does
 * nothing. CLI_OK, or CLI_EUSAGE / CLI_ENORESULT / CLI_ERUNTIME (memory) with one line in d; after
 * an error t must be freed, not used. */
int perturb_links_apply(const scn_links_t *links, uint64_t seed, topo_t *t, struct cli_diag *d);

#endif
