/* fuzz_graphml.c - libFuzzer target: a GraphML topology file, as `stepsim topo --topology FILE.graphml
 * --json` reads it (igraph's GraphML reader, the attribute checks, the routing table, the summary
 * and its printer). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_path("topology.graphml");
    fuzz_write(path, data, size);
    char *argv[] = {"stepsim", "topo", "--topology", (char *)path, "--json", NULL};
    fuzz_cli(argv);
    return 0;
}
