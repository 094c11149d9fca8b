/* fuzz_grid.c - libFuzzer target: a sweep grid file, as `stepsim sweep GRID` loads it before
 * anything runs (sweep_grid_load: the command, its options, "scenario", "vary" and "points", every
 * point's scenario parsed and resolved and its id computed), then the canonical scenario of its
 * first and last point.
 *
 * Size: loading costs one scenario parse per point, and a valid grid may hold up to SWEEP_MAX_POINTS
 * points; this harness loads only grids of at most FUZZ_MAX_POINTS points (counted from the JSON
 * before loading), so that libFuzzer explores shapes rather than sizes. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz_util.h"
#include "scenario.h"
#include "sweep.h"

#define FUZZ_MAX_POINTS 512.0

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The points a grid document would expand to (an over-estimate for broken ones). */
static double points_of(const uint8_t *data, size_t size) {
    cJSON *doc = cJSON_ParseWithLength((const char *)data, size);
    double n = 0;
    if (cJSON_IsObject(doc)) {
        const cJSON *vary = cJSON_GetObjectItemCaseSensitive(doc, "vary");
        const cJSON *points = cJSON_GetObjectItemCaseSensitive(doc, "points");
        if (vary) {
            double product = 1;
            for (const cJSON *axis = vary->child; axis; axis = axis->next)
                product *= (double)cJSON_GetArraySize(axis) + 1;
            n += product;
        }
        n += (double)cJSON_GetArraySize(points);
    }
    cJSON_Delete(doc);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (points_of(data, size) > FUZZ_MAX_POINTS)
        return 0;
    const char *path = fuzz_path("grid.json");
    fuzz_write(path, data, size);
    sweep_grid_t g;
    cli_diag_t d = {{0}};
    memset(&g, 0, sizeof g);
    int rc = sweep_grid_load(&g, path, &d);
    if (rc == CLI_OK && g.n_points > 0) {
        cJSON *first = sweep_grid_point(&g, 0);
        cJSON *last = sweep_grid_point(&g, g.n_points - 1);
        if (!first || !last)
            abort();
        cJSON_Delete(first);
        cJSON_Delete(last);
    }
    sweep_grid_destroy(&g);
    if (rc != CLI_OK && (!d.msg[0] || strchr(d.msg, '\n'))) {
        fprintf(stderr, "fuzz: a rejection without one line of message: [%s]\n", d.msg);
        abort();
    }
    if (rc < 0 || rc > 3)
        abort();
    return 0;
}
