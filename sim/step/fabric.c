/* fabric.c - several jobs' steps on one engine (step.h, "several jobs on one fabric"): the shared
 * engine, each job built onto it by step.c's code with its GPUs mapped onto the network, one run,
 * link bytes per job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "step_internal.h"

struct step_fabric {
    sim_engine_t *e;
    int32_t n_jobs;
    step_t **steps;
    int32_t *job_of_gpu; /* [network GPUs] */
    int32_t n_gpus;
    sim_observer_t user_obs;
    int has_user_obs, ran;
    char err[300];
};

static step_t *step_of(const step_fabric_t *f, int32_t gpu) {
    const int32_t j = gpu >= 0 && gpu < f->n_gpus ? f->job_of_gpu[gpu] : -1;
    return j >= 0 ? f->steps[j] : NULL;
}

static void obs_op_start(void *ctx, sim_time_ps_t t, const sim_op_info_t *op) {
    const step_fabric_t *f = ctx;
    if (f->user_obs.op_start)
        f->user_obs.op_start(f->user_obs.ctx, t, op);
}

static void obs_op_end(void *ctx, sim_time_ps_t t, const sim_op_info_t *op) {
    const step_fabric_t *f = ctx;
    step_t *s = step_of(f, op->gpu);
    if (s)
        step_op_ended(s, t, op);
    if (f->user_obs.op_end)
        f->user_obs.op_end(f->user_obs.ctx, t, op);
}

static void obs_flow_start(void *ctx, sim_time_ps_t t, const sim_flow_info_t *fl) {
    const step_fabric_t *f = ctx;
    f->user_obs.flow_start(f->user_obs.ctx, t, fl);
}

static void obs_flow_end(void *ctx, sim_time_ps_t t, const sim_flow_info_t *fl) {
    const step_fabric_t *f = ctx;
    f->user_obs.flow_end(f->user_obs.ctx, t, fl);
}

static void obs_counter(void *ctx, sim_time_ps_t t, const sim_counter_t *c) {
    const step_fabric_t *f = ctx;
    f->user_obs.counter(f->user_obs.ctx, t, c);
}

static int fail(step_fabric_t *f, char *err, size_t err_size, int rc, const char *msg) {
    if (err && err_size)
        snprintf(err, err_size, "%s", msg);
    step_fabric_free(f);
    return rc;
}

int step_fabric_new(const step_fabric_job_t *jobs, int32_t n_jobs, const sim_config_t *engine,
                    const sim_network_desc_t *net, step_fabric_t **out, char *err, size_t err_size) {
    *out = NULL;
    if (err && err_size)
        err[0] = '\0';
    char msg[300];
    step_fabric_t *f = alloc_calloc(1, sizeof *f);
    if (!f)
        return fail(NULL, err, err_size, SIM_ENOMEM, "fabric: out of memory");
    if (!net || n_jobs < 1) {
        snprintf(msg, sizeof msg, "fabric: %s", !net ? "a network is required" : "no job");
        return fail(f, err, err_size, SIM_EINVAL, msg);
    }
    f->n_gpus = net->n_gpus;
    f->job_of_gpu = alloc_malloc((size_t)(f->n_gpus > 0 ? f->n_gpus : 1) * sizeof *f->job_of_gpu);
    f->steps = alloc_calloc((size_t)n_jobs, sizeof *f->steps);
    if (!f->job_of_gpu || !f->steps)
        return fail(f, err, err_size, SIM_ENOMEM, "fabric: out of memory");
    for (int32_t g = 0; g < f->n_gpus; g++)
        f->job_of_gpu[g] = -1;
    for (int32_t j = 0; j < n_jobs; j++)
        for (int64_t r = 0; r < jobs[j].job->gpus; r++) {
            const int32_t g = jobs[j].gpus[r];
            if (g < 0 || g >= f->n_gpus || f->job_of_gpu[g] >= 0) {
                if (g < 0 || g >= f->n_gpus)
                    snprintf(msg, sizeof msg, "job %d: GPU %d of the network; allowed: 0..%d", (int)j, (int)g,
                             (int)f->n_gpus - 1);
                else
                    snprintf(msg, sizeof msg,
                             "job %d: GPU %d is job %d's already; allowed: a GPU of no other job", (int)j,
                             (int)g, (int)f->job_of_gpu[g]);
                return fail(f, err, err_size, SIM_EINVAL, msg);
            }
            f->job_of_gpu[g] = j;
        }
    sim_config_t ec = *engine;
    ec.comm_streams = STEP_COMM_STREAMS;
    ec.comm_mode = SIM_COMM_NETWORK;
    ec.has_system = 1; /* read in analytic mode only, which a fabric does not run */
    ec.system = jobs[0].job->system;
    ec.compat = jobs[0].job->compat;
    char eerr[256];
    int rc = sim_engine_new(&ec, net, &f->e, eerr, sizeof eerr);
    if (rc) {
        snprintf(msg, sizeof msg, "engine: %s", eerr);
        return fail(f, err, err_size, rc, msg);
    }
    if ((rc = sim_engine_set_link_classes(f->e, n_jobs, f->job_of_gpu)) != SIM_OK)
        return fail(f, err, err_size, rc, sim_engine_last_error(f->e));
    for (int32_t j = 0; j < n_jobs; j++) {
        char jerr[300] = "";
        rc = step_new_shared(jobs[j].job, &jobs[j].step, net, f->e, jobs[j].gpus, &f->steps[j], jerr,
                             sizeof jerr);
        f->n_jobs = j + 1;
        if (rc) {
            snprintf(msg, sizeof msg, "job %d: %.280s", (int)j, jerr[0] ? jerr : sim_status_name(rc));
            return fail(f, err, err_size, rc, msg);
        }
    }
    *out = f;
    return SIM_OK;
}

void step_fabric_free(step_fabric_t *f) {
    if (!f)
        return;
    for (int32_t j = 0; f->steps && j < f->n_jobs; j++)
        step_free(f->steps[j]);
    sim_engine_free(f->e); /* after the steps: they only borrow it */
    free(f->steps);
    free(f->job_of_gpu);
    free(f);
}

int32_t step_fabric_jobs(const step_fabric_t *f) {
    return f->n_jobs;
}

step_t *step_fabric_step(const step_fabric_t *f, int32_t job) {
    return job >= 0 && job < f->n_jobs ? f->steps[job] : NULL;
}

int32_t step_fabric_job_of_gpu(const step_fabric_t *f, int32_t gpu) {
    return gpu >= 0 && gpu < f->n_gpus ? f->job_of_gpu[gpu] : -1;
}

void step_fabric_set_observer(step_fabric_t *f, const sim_observer_t *obs) {
    if (obs) {
        f->user_obs = *obs;
        f->has_user_obs = 1;
    } else {
        memset(&f->user_obs, 0, sizeof f->user_obs);
        f->has_user_obs = 0;
    }
}

void step_fabric_set_progress(step_fabric_t *f, sim_progress_fn fn, void *ctx) {
    sim_engine_set_progress(f->e, fn, ctx);
}

int step_fabric_run(step_fabric_t *f) {
    if (f->ran) {
        snprintf(f->err, sizeof f->err, "fabric: already run");
        return SIM_ESTATE;
    }
    const sim_observer_t obs = {.ctx = f,
                                .op_start = f->user_obs.op_start ? obs_op_start : NULL,
                                .op_end = obs_op_end,
                                .flow_start = f->user_obs.flow_start ? obs_flow_start : NULL,
                                .flow_end = f->user_obs.flow_end ? obs_flow_end : NULL,
                                .counter = f->user_obs.counter ? obs_counter : NULL};
    sim_engine_set_observer(f->e, &obs);
    for (int32_t j = 0; j < f->n_jobs; j++) { /* the static memory from the start */
        const step_t *s = f->steps[j];
        if (s->mem_fn)
            for (int64_t i = 0; i < (int64_t)s->pp * s->per_stage; i++)
                s->mem_fn(s->mem_ctx, 0, s->stage_gpus[i], s->static_gb);
    }
    const int rc = sim_engine_run(f->e);
    f->ran = 1;
    for (int32_t j = 0; j < f->n_jobs; j++)
        step_mark_ran(f->steps[j]);
    if (rc)
        snprintf(f->err, sizeof f->err, "%s", sim_engine_last_error(f->e));
    return rc;
}

const sim_engine_t *step_fabric_engine(const step_fabric_t *f) {
    return f->e;
}

const char *step_fabric_last_error(const step_fabric_t *f) {
    return f->err;
}

double step_fabric_link_bytes(const step_fabric_t *f, int32_t link, int32_t job) {
    return sim_link_class_bytes(f->e, link, job);
}
