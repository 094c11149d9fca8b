/* topo_json.h - a scenario's "topology" (or --topology) turned into topo_params_t.
 *
 * Contract
 * - The specification is a cJSON string or object. A string names a topology preset
 *   ("dgx-h100-superpod"), a kind with its defaults ("fat-tree"), or a file: GraphML (".graphml",
 *   ".xml", or content starting with '<') or JSON holding a topology object. An object has "kind" or
 *   "preset" (a preset whose fields the other keys override) and the keys of docs/topology.md.
 * - sys (may be NULL) fills the "ideal" kind from the analytic model's system: GPUs per node =
 *   nvlink_size, NVLink and IB bandwidths (IB times nic_factor), and per-link latencies of half the
 *   model's per-hop latencies (a hop crosses two links). gpus > 0 overrides the topology's size.
 * - Errors: CLI_EUSAGE with one line naming where (the option or file and JSON path), the value and
 *   what is allowed: "--topology: k: 7 must be even", "run.json: topology.k: 7.5 is not an integer".
 *   topo_params_check runs here, so a CLI_OK result only fails later on GraphML file contents.
 * - Memory: graphml paths are copied into store (store_size bytes) and p->graphml_path points there.
 */
#ifndef STEPSIM_TOPO_JSON_H
#define STEPSIM_TOPO_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "model.h"
#include "scenario.h"
#include "topo.h"

/* where: message prefix without the trailing ": " ("--topology", "run.json: topology"). */
int topo_json_params(const cJSON *spec, const char *where, const model_system_t *sys, int64_t gpus,
                     topo_params_t *p, char *store, size_t store_size, cli_diag_t *d);

/* The exit code for a topo status: 2 for bad input (parameters, GraphML contents, unreachable
 * pairs, sizes, a GraphML file that cannot be read), 1 for runtime failures. */
int topo_json_exit_code(int topo_status);

#endif
