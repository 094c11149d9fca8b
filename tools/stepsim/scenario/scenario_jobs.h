/* scenario_jobs.h - several jobs on one fabric: a scenario's "jobs" array, parsed into
 * typed jobs, each with its own scenario (model, system, layout, batch, GPU count) and allocation
 * policy (docs/cli.md, "Several jobs"; docs/what-if.md).
 *
 * Contract
 * - scn_parse_jobs runs last in scenario_load_json: each job's scenario starts from the file's
 *   top-level scenario (model, system, nvlink_size, compat, training) with no GPU count, batch or
 *   degrees, and the job's keys overlay it; "gpus" and "global_batch" are required. Keys of a job:
 *   name, model, system, nvlink_size, gpus, global_batch, parallel, compat, training, allocation.
 * - allocation: "packed" (default), "spread", "random" or GPU ranges ("0-63,128-191": as many GPUs
 *   as the job has, none twice); the placement on a topology is cmd_jobs.c's (jobs_allocate).
 * - perturbations.seed (scn_perturb_t, default 1) seeds the random allocations.
 * - Errors: CLI_EUSAGE with one line naming the file, the JSON path (jobs[1].allocation) and the
 *   value. Memory: scenario_t.jobs is owned by the scenario; scenario_destroy frees it.
 */
#ifndef STEPSIM_SCENARIO_JOBS_H
#define STEPSIM_SCENARIO_JOBS_H

#include <stdint.h>

#include "scenario_internal.h"

typedef enum scn_alloc {
    SCN_ALLOC_PACKED = 0,
    SCN_ALLOC_SPREAD,
    SCN_ALLOC_RANDOM,
    SCN_ALLOC_GPUS
} scn_alloc_t;

typedef struct scn_job {
    scenario_t scn;  /* the job's own scenario */
    char name[64];   /* "name", else "job0", "job1", ... */
    char where[300]; /* "run.json: jobs[1]" */
    scn_alloc_t alloc;
    char alloc_text[128]; /* as given */
    int32_t *gpus;        /* SCN_ALLOC_GPUS: the listed GPUs, ascending */
    int64_t n_gpus;
} scn_job_t;

typedef struct scn_jobs {
    int32_t n;
    scn_job_t *job;
    char where[300]; /* "run.json: jobs" */
} scn_jobs_t;

/* "jobs" of a scenario file (NULL: none). */
int scn_parse_jobs(scenario_t *scn, const scn_src_t *src, const cJSON *jobs);
void scenario_jobs_free(scenario_t *scn);

#endif
