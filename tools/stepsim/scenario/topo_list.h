/* topo_list.h - the --topologies list of `stepsim compare` (and the waterfall's "ideal"): each entry a
 * label and a parsed topology (topo_json.h).
 *
 * Contract: topo_item_parse reads one entry, a name or a {...} object (its label: the object's "name",
 * "kind" or "preset", else "object"); messages point at "--topologies: LABEL". topo_list_parse splits
 * "A,B,{..},C" at top-level commas into at most max - 1 entries and puts "ideal" first (added if
 * missing), so items needs room for max. Both return CLI_OK or an exit code with one line in d.
 */
#ifndef STEPSIM_TOPO_LIST_H
#define STEPSIM_TOPO_LIST_H

#include "scenario.h"
#include "topo_json.h"

typedef struct topo_item {
    char label[64];
    topo_spec_t spec; /* parsed when the option is read (topo_json.h: one meaning per name) */
} topo_item_t;

int topo_item_parse(const char *text, topo_item_t *it, cli_diag_t *d);
int topo_list_parse(const char *list, topo_item_t *items, int *n, int max, cli_diag_t *d);

#endif
