/* fuzz_journal.c - libFuzzer target: a sweep journal handed to `stepsim sweep GRID --out FILE
 * --resume` (reading the existing lines, their ids, a torn last line, then running the points the
 * file lacks). The grid is fixed: tests/fixtures/fuzz/grid.json, two quick estimate points (the seeds
 * in tests/fuzz/seeds/journal are its journal, whole and cut). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *grid_path = STEPSIM_FIXTURE_DIR "/fuzz/grid.json";
    const char *out_path = fuzz_path("journal.jsonl");
    fuzz_write(out_path, data, size);
    char *argv[] = {"stepsim",  "sweep",   (char *)grid_path, "--out", (char *)out_path,
                    "--resume", "--quiet", "--json",          NULL};
    fuzz_cli(argv);
    return 0;
}
