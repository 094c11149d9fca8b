/* fuzz_journal.c - libFuzzer target: a sweep journal handed to `stepsim sweep GRID --out FILE
 * --resume` (reading the existing lines, their ids, a torn last line, then running the points the
 * file lacks). The grid is fixed: two quick estimate points. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char grid[] = "{\"command\": \"estimate\", \"scenario\": {\"model\": \"gpt3_1T\"},\n"
                           " \"vary\": {\"parallel.tp\": [4, 8]}}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int grid_written;
    const char *grid_path = fuzz_path("grid.json");
    const char *out_path = fuzz_path("journal.jsonl");
    if (!grid_written) {
        fuzz_write(grid_path, (const uint8_t *)grid, sizeof grid - 1);
        grid_written = 1;
    }
    fuzz_write(out_path, data, size);
    char *argv[] = {"stepsim", "sweep", (char *)grid_path, "--out", (char *)out_path, "--resume",
                    "--quiet", "--json", NULL};
    fuzz_cli(argv);
    return 0;
}
