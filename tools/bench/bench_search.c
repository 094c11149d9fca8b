/* bench_search.c - times the layout search of the analytic model: gpt3_1T on A100 with NVLink
 * domains of 8 at 4096 GPUs, global batch 4096, --compat reference, for each strategy. Prints the
 * median wall time of several repetitions, candidates per second and the speed-up over the
 * reference implementation's measured times on this machine class (docs/model-formulas.md, section 14:
 * 1D about 12.5 s per GPU count, 2D 285 s, 2D-seqp 76 s). Usage: bench_search [REPEATS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "alloc.h"
#include "model.h"
#include "stats.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    const int repeats = argc > 1 ? atoi(argv[1]) : 7;
    if (repeats < 1 || repeats > 1000) {
        fprintf(stderr, "bench_search: REPEATS: '%s' must be an integer in 1..1000\n", argv[1]);
        return 2;
    }
    model_job_t job = {0};
    if (model_transformer_preset("gpt3_1T", &job.model) || model_system_preset("A100", &job.system))
        return 1;
    job.system.nvlink_size = 8;
    job.gpus = 4096;
    job.global_batch = 4096;
    job.compat = MODEL_COMPAT_REFERENCE;
    const double reference_s[MODEL_STRATEGY_COUNT] = {12.5, 285.0, 76.0};
    printf("# layout search, gpt3_1T, A100, NVLink domain 8, 4096 GPUs, gbs 4096, --compat reference\n");
    printf("%-8s %12s %14s %16s %12s %14s\n", "strategy", "candidates", "median_time_s", "candidates_per_s",
           "speedup_x", "best_samples/s");
    double *times = alloc_malloc((size_t)repeats * sizeof *times);
    if (!times)
        return 1;
    for (int st = 0; st < MODEL_STRATEGY_COUNT; st++) {
        model_search_result_t res = {0};
        for (int r = 0; r < repeats; r++) {
            model_search_result_destroy(&res);
            const double t0 = now_s();
            if (model_search_run(&job, 1u << st, 10, &res) != MODEL_OK) {
                free(times);
                return 1;
            }
            times[r] = now_s() - t0;
        }
        const double med_s = stats_median(times, (size_t)repeats);
        printf("%-8s %12lld %14.6f %16.0f %12.0f %14.4f\n", model_strategy_name((model_strategy_t)st),
               (long long)res.candidates_evaluated, med_s, (double)res.candidates_evaluated / med_s,
               reference_s[st] / med_s, res.n_results ? res.results[0].throughput_samples_per_s : 0.0);
        model_search_result_destroy(&res);
    }
    /* the corrected model, 1d, with the pipeline schedule as a dimension (search --pipeline-schedule
     * all) beside 1F1B alone */
    job.compat = MODEL_COMPAT_CORRECTED;
    printf("# corrected, 1d: 1F1B alone, then every pipeline schedule (1f1b, zb-h1, zb-v, dualpipe)\n");
    printf("%-8s %12s %14s %16s %12s %14s\n", "schedule", "candidates", "median_time_s", "candidates_per_s",
           "", "best_samples/s");
    const unsigned masks[2] = {1u << MODEL_PIPELINE_1F1B,
                               (1u << MODEL_PIPELINE_1F1B) | (1u << MODEL_PIPELINE_ZB_H1) |
                                   (1u << MODEL_PIPELINE_ZB_V) | (1u << MODEL_PIPELINE_DUALPIPE)};
    for (int k = 0; k < 2; k++) {
        model_search_result_t res = {0};
        for (int r = 0; r < repeats; r++) {
            model_search_result_destroy(&res);
            const double t0 = now_s();
            if (model_search_run_pipelines(&job, 1u << MODEL_STRATEGY_1D, masks[k], 10, &res) != MODEL_OK) {
                free(times);
                return 1;
            }
            times[r] = now_s() - t0;
        }
        const double med_s = stats_median(times, (size_t)repeats);
        printf("%-8s %12lld %14.6f %16.0f %12s %14.4f%s%s\n", k ? "all" : "1f1b",
               (long long)res.candidates_evaluated, med_s, (double)res.candidates_evaluated / med_s, "",
               res.n_results ? res.results[0].throughput_samples_per_s : 0.0, res.n_results ? "  " : "",
               res.n_results ? model_pipeline_name(res.results[0].pipeline) : "");
        model_search_result_destroy(&res);
    }
    free(times);
    return 0;
}
