/* fuzz_measured.c - libFuzzer target: a measured-runs CSV file, as `stepsim validate --measured
 * FILE.csv --json` reads it (the CSV reader, every column's checks, the jobs built from the rows, their
 * predictions, the per-system calibration and the printer). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_path("measured.csv");
    fuzz_write(path, data, size);
    char *argv[] = {"stepsim", "validate", "--measured", (char *)path, "--json", NULL};
    fuzz_cli(argv);
    return 0;
}
