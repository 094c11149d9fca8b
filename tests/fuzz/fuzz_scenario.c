/* fuzz_scenario.c - libFuzzer target: a scenario JSON file, as `stepsim estimate FILE --json` reads
 * it (the reader, the keys and types, presets, training, perturbations, jobs, an inline topology
 * object, scenario resolution and the closed-form estimate and its printer). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_path("scenario.json");
    fuzz_write(path, data, size);
    char *argv[] = {"stepsim", "estimate", (char *)path, "--json", NULL};
    fuzz_cli(argv);
    return 0;
}
