/* stepsim/test_collapse_dragonfly.c - `--collapse auto` gives `--collapse off`'s step time, breakdown
 * and busiest links on five dragonflies of 256-512 GPUs (minimal routing; one also with UGAL), where
 * the approximate collapse is 12-64% below (docs/run.md). Slow: every GPU is simulated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "collapse_check.h"

typedef struct layout {
    const char *model, *gpus, *pp, *topology;
} layout_t;

static void test_dragonflies(void **state) {
    (void)state;
    static const layout_t L[] = {
        {"gpt3", "256", "4", "dragonfly"},    {"gpt3", "512", "8", "dragonfly"},
        {"GPT-18B", "256", "1", "dragonfly"}, {"GPT-39B", "512", "2", "dragonfly"},
        {"GPT-18B", "512", "2", "dragonfly"}, {"GPT-18B", "256", "1", "dragonfly-ugal"},
    };
    for (size_t i = 0; i < sizeof L / sizeof L[0]; i++) {
        const char *const a[] = {"--model", L[i].model, "--gpus",  L[i].gpus,    "--tp",        "8", "--pp",
                                 L[i].pp,   "--gbs",    L[i].gpus, "--topology", L[i].topology, NULL};
        char level[32];
        (void)collapse_same_as_off(a, level, sizeof level);
        print_message("%s on %s GPUs (pp %s), %s: collapsed %s\n", L[i].model, L[i].gpus, L[i].pp,
                      L[i].topology, level);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_dragonflies)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
