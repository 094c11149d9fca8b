/* stepsim/test_collapse_full.c - `--collapse auto` gives `--collapse off`'s step time, breakdown
 * and busiest links on five dragonflies of 256-512 GPUs (minimal routing; one also with UGAL), where
 * the approximate collapse is 12-64% below (3-64% over every dragonfly measured, docs/run.md), and on
 * fat-trees where the collapse is exact at microbatch granularity, with 2D SUMMA, and with the embedding,
 * interleaving and Megatron's pipeline all-gather (the link report counts every tensor collective of the
 * collapsed ranks), and on one where it is not (tensor groups across nodes). Slow: every GPU is simulated. */
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

static void test_fat_tree_exact(void **state) {
    (void)state;
    static const char *const A[][20] = {
        {"--model", "GPT-18B", "--gpus", "64", "--tp", "8", "--pp", "2", "--gbs", "64", "--topology",
         "fat-tree", "--granularity", "microbatch", NULL},
        {"--model", "GPT-18B", "--gpus", "64", "--strategy", "2d", "--tp1", "4", "--tp2", "2", "--pp", "2",
         "--gbs", "64", "--topology", "fat-tree", NULL},
        {"--model", "GPT-18B", "--gpus", "64", "--tp", "8", "--pp", "2", "--gbs", "64", "--topology",
         "fat-tree", "--embedding", "on", "--interleave", "2", "--sequence-parallel", "off", NULL},
    };
    for (size_t i = 0; i < sizeof A / sizeof A[0]; i++) {
        char level[32];
        (void)collapse_same_as_off(A[i], level, sizeof level);
        assert_string_equal(level, "tensor ranks");
    }
    /* tensor groups across nodes: not exact, every GPU simulated */
    const char *const c[] = {"--model", "GPT-18B", "--gpus", "64", "--tp",       "4",        "--pp", "2",
                             "--gbs",   "64",      "--nvs",  "2",  "--topology", "fat-tree", NULL};
    char level[32];
    (void)collapse_same_as_off(c, level, sizeof level);
    assert_string_equal(level, "none");
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_fat_tree_exact),
                                       cmocka_unit_test(test_dragonflies)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
