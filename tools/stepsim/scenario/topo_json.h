/* topo_json.h - a scenario's "topology" (or --topology, or an entry of compare's --topologies)
 * parsed into typed values (topo_spec_t, scenario.h), and those values turned into topo_params_t for
 * a job. The one meaning of every topology name in every command.
 *
 * Contract
 * - topo_spec_parse takes a cJSON string or object. A string names a topology preset
 *   ("dgx-h100-superpod"), a shortcut sized to the job (fat-tree, fat-tree-2:1, rail, dragonfly,
 *   dragonfly-ugal: nodes of the system's NVLink domain with one NIC per GPU at its InfiniBand
 *   bandwidth, docs/topology.md), a kind with its defaults ("ideal", "rail-optimized", "torus"), or a
 *   file: GraphML (".graphml", ".xml", or content starting with '<'; its path is kept and topo_new
 *   reads it) or JSON holding a topology object (read and parsed now). An object has "kind" or
 *   "preset" (a preset whose fields the other keys override) and the keys of docs/topology.md.
 *   Names, keys and types are checked here; nothing is read later.
 * - topo_spec_params fills the parameters for a job: sys gives the ideal kind and the shortcuts their
 *   nodes and links (GPUs per node = nvlink_size, NVLink and InfiniBand bandwidths with nic_factor,
 *   per-link latencies of half the model's per-hop latencies); gpus > 0 sizes presets and overrides
 *   the topology's size; job_gpus sizes the shortcuts and the unnamed ideal topology when gpus is 0.
 *   An ideal topology whose domains do not divide its GPUs gets domains of gcd(gpus, nvlink_size).
 *   topo_params_check runs here, so a CLI_OK result only fails later on GraphML file contents.
 * - Errors: CLI_EUSAGE with one line naming where (the option or file and JSON path), the value and
 *   what is allowed: "--topology: k: 7 must be even", "run.json: topology.k: 7.5 is not an integer".
 *   where (topo_spec_params, may be NULL: the spec's own) is the prefix of a parameter's message.
 * - Memory: p->graphml_path points into s; keep s alive while p is used.
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
int topo_spec_parse(const cJSON *json, const char *where, topo_spec_t *out, cli_diag_t *d);
/* The same from an option's text: a name, or an object when it starts with '{' (CLI_EUSAGE
 * "WHERE: invalid JSON; ..." when it does not parse). */
int topo_spec_parse_text(const char *text, const char *where, topo_spec_t *out, cli_diag_t *d);
/* The spec of a scenario without a topology: the ideal topology of the system ("topology"). */
void topo_spec_none(topo_spec_t *out);
int topo_spec_params(const topo_spec_t *s, const char *where, const model_system_t *sys, int64_t gpus,
                     int64_t job_gpus, topo_params_t *p, cli_diag_t *d);

/* The exit code for a topo status: 2 for bad input (parameters, GraphML contents, unreachable
 * pairs, sizes, a GraphML file that cannot be read), 1 for runtime failures. */
int topo_json_exit_code(int topo_status);

#endif
