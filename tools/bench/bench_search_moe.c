/* bench_search_moe.c - times the layout search of a mixture of experts: Mixtral 8x7B (the preset) on
 * 64 H100 GPUs (NVLink domains of 8), global batch 256 sequences, corrected model, every strategy
 * asked for (the MoE block is placed in 1d layouts, so 1d is searched) with the expert-parallel
 * degree as a dimension. Prints the median wall time of REPEATS runs (5 by default), the
 * candidates evaluated and the best layout with its memory per GPU. Usage: bench_search_moe [REPEATS] */
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
    const int repeats = argc > 1 ? atoi(argv[1]) : 5;
    if (repeats < 1 || repeats > 1000) {
        fprintf(stderr, "bench_search_moe: REPEATS: '%s' must be an integer in 1..1000\n", argv[1]);
        return 2;
    }
    model_job_t job = {0};
    if (model_transformer_preset("Mixtral-8x7B", &job.model) || model_system_preset("H100", &job.system))
        return 1;
    job.system.nvlink_size = model_system_preset_domain("H100");
    job.gpus = 64;
    job.global_batch = 256;
    job.compat = MODEL_COMPAT_CORRECTED;
    double *times = alloc_malloc((size_t)repeats * sizeof *times);
    if (!times)
        return 1;
    model_search_result_t res = {0};
    const unsigned all = (1u << MODEL_STRATEGY_COUNT) - 1u;
    for (int r = 0; r < repeats; r++) {
        model_search_result_destroy(&res);
        const double t0 = now_s();
        if (model_search_run(&job, all, 10, &res) != MODEL_OK) {
            free(times);
            return 1;
        }
        times[r] = now_s() - t0;
    }
    printf("# layout search, Mixtral-8x7B, H100, NVLink domain %lld, 64 GPUs, gbs 256, corrected\n",
           (long long)job.system.nvlink_size);
    printf("repeats %d  median_time_s %.6f  candidates %lld  feasible %lld\n", repeats,
           stats_median(times, (size_t)repeats), (long long)res.candidates_evaluated,
           (long long)res.candidates_feasible);
    if (res.n_results > 0) {
        const model_summary_t *b = &res.results[0];
        printf("best: %s dp %lld tp %lld pp %lld ep %lld mbs %lld  %.4f samples/s  memory %.3f GB of %.4g\n",
               model_strategy_name(b->par.strategy), (long long)b->par.dp, (long long)b->par.tp,
               (long long)b->par.pp, (long long)b->experts_par.ep, (long long)b->par.mbs,
               b->throughput_samples_per_s, b->memory_gb, job.system.hbm_capacity_gb);
    }
    model_search_result_destroy(&res);
    /* the pipeline schedule as a dimension too (stepsim search --pipeline-schedule all) */
    const unsigned pipelines = (1u << MODEL_PIPELINE_1F1B) | (1u << MODEL_PIPELINE_ZB_H1) |
                               (1u << MODEL_PIPELINE_ZB_V) | (1u << MODEL_PIPELINE_DUALPIPE);
    for (int r = 0; r < repeats; r++) {
        model_search_result_destroy(&res);
        const double t0 = now_s();
        if (model_search_run_pipelines(&job, all, pipelines, 10, &res) != MODEL_OK) {
            free(times);
            return 1;
        }
        times[r] = now_s() - t0;
    }
    printf("all pipeline schedules: median_time_s %.6f  candidates %lld  feasible %lld\n",
           stats_median(times, (size_t)repeats), (long long)res.candidates_evaluated,
           (long long)res.candidates_feasible);
    if (res.n_results > 0) {
        const model_summary_t *b = &res.results[0];
        printf(
            "best: %s dp %lld tp %lld pp %lld ep %lld mbs %lld %s  %.4f samples/s  memory %.3f GB of %.4g\n",
            model_strategy_name(b->par.strategy), (long long)b->par.dp, (long long)b->par.tp,
            (long long)b->par.pp, (long long)b->experts_par.ep, (long long)b->par.mbs,
            model_pipeline_name(b->pipeline), b->throughput_samples_per_s, b->memory_gb,
            job.system.hbm_capacity_gb);
    }
    model_search_result_destroy(&res);
    free(times);
    return 0;
}
