/* cmd_finite.c - results that are not finite are errors (see commands.h, cmd_require_finite).
 * A time or rate comes out infinite or NaN when a system rate is so small (or a size so large) that
 * a division overflows the double range; printed, it would read "null" in JSON and "inf" in text.
 * The line names the value and the likely cause: the system rate furthest below the A100 preset's
 * (the unit the scenario gives it in), or the model's sizes when no rate stands out. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "commands.h"

static const struct {
    const char *key; /* the scenario's system key */
    size_t offset;
    const char *unit;
} RATES[] = {
    {"matrix_flops_fp16", offsetof(model_system_t, matrix_tflop_per_s), "TFLOP/s"},
    {"vector_flops_fp16", offsetof(model_system_t, vector_tflop_per_s), "TFLOP/s"},
    {"hbm_bandwidth", offsetof(model_system_t, hbm_gb_per_s), "GB/s"},
    {"nvlink_bandwidth", offsetof(model_system_t, nvlink_gb_per_s), "GB/s"},
    {"ib_bandwidth", offsetof(model_system_t, ib_gb_per_s), "GB/s"},
    {"flop_efficiency", offsetof(model_system_t, flop_efficiency), ""},
    {"nvlink_eff", offsetof(model_system_t, nvlink_eff), ""},
    {"ib_eff", offsetof(model_system_t, ib_eff), ""},
};

static double field(const model_system_t *s, size_t offset) {
    return *(const double *)(const void *)((const char *)s + offset);
}

/* The likely cause of a result that is not finite, into buf. */
static void cause(const model_job_t *job, char *buf, size_t n) {
    model_system_t ref;
    int best = -1;
    double best_ratio = 1e-6; /* a rate a million times below A100's stands out */
    if (job && model_system_preset("A100", &ref) == MODEL_OK)
        for (int i = 0; i < (int)(sizeof RATES / sizeof RATES[0]); i++) {
            const double ratio = field(&job->system, RATES[i].offset) / field(&ref, RATES[i].offset);
            if (!(ratio >= best_ratio)) {
                best_ratio = ratio;
                best = i;
            }
        }
    if (best >= 0)
        snprintf(buf, n, "system.%s %g%s%s", RATES[best].key, field(&job->system, RATES[best].offset),
                 RATES[best].unit[0] ? " " : "", RATES[best].unit);
    else if (job)
        snprintf(buf, n, "model hidden %lld, layers %lld, seq_len %lld, global_batch %lld",
                 (long long)job->model.hidden, (long long)job->model.layers, (long long)job->model.seq_len,
                 (long long)job->global_batch);
    else
        snprintf(buf, n, "a rate too small or a size too large");
}

int cmd_require_finite(double v, const char *what, const model_job_t *job, cli_diag_t *d) {
    if (isfinite(v))
        return CLI_OK;
    char why[160];
    cause(job, why, sizeof why);
    return cli_fail(d, CLI_ERUNTIME, "%s is not finite (%s); allowed: rates and sizes whose times are finite",
                    what, why);
}

int cmd_require_simulable(const model_estimate_t *e, const model_job_t *job, cli_diag_t *d) {
    const double t = e->summary.iteration_time_s;
    if (t <= SIM_OP_MAX_S)
        return CLI_OK;
    char why[160];
    cause(job, why, sizeof why);
    return cli_fail(
        d, CLI_EUSAGE,
        "closed form: iteration time %g s is past the simulator's clock (%s); allowed: a step of at "
        "most %g s",
        t, why, SIM_OP_MAX_S);
}

int cmd_require_finite_estimate(const model_estimate_t *e, const model_job_t *job, const char *where,
                                cli_diag_t *d) {
    const model_summary_t *s = &e->summary;
    const struct {
        const char *name;
        double v;
    } parts[] = {
        {"iteration time", s->iteration_time_s},
        {"throughput", s->throughput_samples_per_s},
        {"compute time", s->compute_s},
        {"memory time", s->memory_s},
        {"tp_comm time", s->tp_comm_s},
        {"pp_comm time", s->pp_comm_s},
        {"dp_comm time", s->dp_comm_s},
        {"bubble time", s->bubble_s},
        {"memory", s->memory_gb},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (!isfinite(parts[i].v)) {
            char what[160];
            snprintf(what, sizeof what, "%s%s%s", where ? where : "", where && where[0] ? ": " : "",
                     parts[i].name);
            return cmd_require_finite(parts[i].v, what, job, d);
        }
    return CLI_OK;
}
