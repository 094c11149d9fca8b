/* trace_plan.c - what `stepsim run --trace` writes, decided before the step runs: the GPUs traced
 * (--trace-ranks with collapsed ranks mapped to the simulated GPU that represents them, or, without
 * --trace-ranks on a job whose whole trace would be too large, one tensor group per pipeline
 * stage), the size estimate and its warning on stderr, the note on compute slices that hold folded
 * tensor-parallel communication, and link names as the topology spells them (docs/traces.md, "Size"
 * and "--trace-ranks").
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "commands.h"
#include "step.h"
#include "topo.h"
#include "trace.h"

void cmd_trace_link_name(const topo_t *t, int32_t link, char *buf, size_t size) {
    char raw[160];
    if (size == 0)
        return;
    topo_link_name(t, link, raw, sizeof raw);
    size_t n = 0;
    for (const char *p = raw; *p && n + 4 < size; p++) {
        if (p[0] == '-' && p[1] == '>') {
            memcpy(buf + n, " -> ", 4);
            n += 4;
            p++;
            continue;
        }
        if (*p >= '0' && *p <= '9' && p > raw && !(p[-1] >= '0' && p[-1] <= '9') && p[-1] != '>')
            buf[n++] = ' ';
        buf[n++] = *p;
    }
    buf[n] = '\0';
}

/* Ranks [0..n) with on[g] set as "0-7,64" into a new string. */
static char *ranks_text(const uint8_t *on, int64_t n) {
    size_t cap = 64, len = 0;
    char *s = alloc_malloc(cap);
    if (!s)
        return NULL;
    s[0] = '\0';
    for (int64_t g = 0; g < n; g++) {
        if (!on[g])
            continue;
        int64_t h = g;
        while (h + 1 < n && on[h + 1])
            h++;
        if (len + 48 > cap) {
            char *t = alloc_realloc(s, cap *= 2);
            if (!t) {
                free(s);
                return NULL;
            }
            s = t;
        }
        if (h == g)
            len += (size_t)snprintf(s + len, cap - len, "%s%" PRId64, len ? "," : "", g);
        else
            len += (size_t)snprintf(s + len, cap - len, "%s%" PRId64 "-%" PRId64, len ? "," : "", g, h);
        g = h;
    }
    return s;
}

static double estimate_bytes(const double *bytes, const uint8_t *on, int64_t n) {
    double b = 0.0;
    for (int64_t g = 0; g < n; g++)
        if (on[g])
            b += bytes[g];
    return b;
}

/* One tensor group (every tensor and context rank of data-parallel replica 0) of each pipeline
 * stage, or of the first and last stage only (first_last_only). */
static void tensor_groups(const model_job_t *job, const step_config_t *cfg, int first_last_only,
                          uint8_t *on) {
    const model_parallel_t *par = &job->par;
    memset(on, 0, (size_t)job->gpus);
    for (int64_t p = 0; p < par->pp; p++) {
        if (first_last_only && p != 0 && p != par->pp - 1)
            continue;
        for (int64_t c = 0; c < (par->tp2 > 0 ? par->tp2 : 1); c++)
            for (int64_t t = 0; t < (par->tp1 > 0 ? par->tp1 : 1); t++) {
                int64_t x[STEP_DIM_COUNT] = {0};
                x[STEP_DIM_TP] = t;
                x[STEP_DIM_CP] = c;
                x[STEP_DIM_PP] = p;
                const int64_t g = step_placement_gpu(&cfg->placement, par, x);
                if (g >= 0 && g < job->gpus)
                    on[g] = 1;
            }
    }
}

/* The simulated GPU that represents a collapsed one: the simulated GPU of the same stage, replica
 * and context rank, else of the same stage and replica, else of the same stage. -1 if none. */
static int64_t representative(const model_job_t *job, const step_config_t *cfg, const int64_t *ops,
                              int64_t g) {
    const model_parallel_t *par = &job->par;
    int64_t x[STEP_DIM_COUNT];
    step_placement_coords(&cfg->placement, par, g, x);
    const int64_t tp1 = par->tp1 > 0 ? par->tp1 : 1, tp2 = par->tp2 > 0 ? par->tp2 : 1;
    for (int level = 0; level < 3; level++)
        for (int64_t d = 0; d < (level >= 2 ? par->dp : 1); d++)
            for (int64_t c = 0; c < (level >= 1 ? tp2 : 1); c++)
                for (int64_t t = 0; t < tp1; t++) {
                    int64_t y[STEP_DIM_COUNT];
                    memcpy(y, x, sizeof y);
                    y[STEP_DIM_TP] = t;
                    if (level >= 1)
                        y[STEP_DIM_CP] = c;
                    if (level >= 2)
                        y[STEP_DIM_DP] = d;
                    const int64_t r = step_placement_gpu(&cfg->placement, par, y);
                    if (r >= 0 && r < job->gpus && ops[r] > 0)
                        return r;
                }
    return -1;
}

int cmd_trace_plan(const step_t *step, const model_job_t *job, const step_config_t *cfg, const char *text,
                   FILE *warn, cmd_trace_plan_t *plan, cli_diag_t *d) {
    memset(plan, 0, sizeof *plan);
    char err[300];
    const int64_t n = job->gpus;
    const sim_engine_t *e = step_engine(step);
    int64_t *ops = alloc_calloc((size_t)n, sizeof *ops);
    double *bytes = alloc_calloc((size_t)n, sizeof *bytes);
    uint8_t *on = alloc_calloc((size_t)n, 1), *mapped = alloc_calloc((size_t)n, 1),
            *alt = alloc_calloc((size_t)n, 1);
    char *alt_text = NULL, *mapped_text = NULL, *rep_text = NULL;
    int rc = CLI_OK;
    if (!ops || !bytes || !on || !mapped || !alt) {
        rc = cli_fail(d, CLI_ERUNTIME, "--trace: out of memory");
        goto done;
    }
    /* ops[g]: GPU g's operations; bytes[g]: its estimated share of the trace. */
    const int32_t n_ops = sim_op_count(e);
    for (int32_t i = 0; i < n_ops; i++) {
        const int32_t g = sim_op_gpu(e, i);
        if (g < 0 || g >= n)
            continue;
        ops[g]++;
        bytes[g] += CMD_TRACE_SLICE_BYTES;
        step_op_t m;
        if (step_op(step, i, &m) != SIM_OK)
            continue;
        if (m.kind == STEP_OP_COMPUTE || m.kind == STEP_OP_OPTIMIZER)
            bytes[g] += CMD_TRACE_COMPUTE_EXTRA_BYTES;
        else if (m.kind == STEP_OP_PP)
            bytes[g] += CMD_TRACE_P2P_EXTRA_BYTES;
        if (m.kind == STEP_OP_COMPUTE && m.tp_comm_s > 0)
            plan->folds_tp = 1;
    }
    trace_ranks_t given;
    memset(&given, 0, sizeof given);
    if ((rc = trace_ranks_parse(text ? text : "all", (int32_t)n, &given, err, sizeof err))) {
        rc = cli_fail(d, rc == TRACE_ENOMEM ? CLI_ERUNTIME : CLI_EUSAGE, "--trace-ranks: %s", err);
        goto done;
    }
    /* Collapsed ranks in the list: traced as the GPU that represents them, said once. */
    int any_mapped = 0;
    for (int64_t g = 0; g < n; g++) {
        if (!trace_ranks_contains(&given, (int32_t)g))
            continue;
        if (ops[g] > 0 || given.all) {
            on[g] = 1;
            continue;
        }
        const int64_t r = representative(job, cfg, ops, g);
        if (r < 0) {
            on[g] = 1; /* nothing represents it (an idle GPU): it stays, and shows nothing */
            continue;
        }
        mapped[g] = 1;
        alt[r] = 1;
        any_mapped = 1;
    }
    trace_ranks_destroy(&given);
    if (any_mapped) {
        for (int64_t g = 0; g < n; g++)
            on[g] |= alt[g];
        mapped_text = ranks_text(mapped, n);
        rep_text = ranks_text(alt, n);
        if (!mapped_text || !rep_text) {
            rc = cli_fail(d, CLI_ERUNTIME, "--trace: out of memory");
            goto done;
        }
        if (warn)
            fprintf(warn,
                    "stepsim run: --trace-ranks: GPUs %s are collapsed (not simulated); each is traced as "
                    "the simulated GPU of its stage that represents it: %s\n",
                    mapped_text, rep_text);
    }
    plan->estimate_bytes = estimate_bytes(bytes, on, n);
    if (plan->estimate_bytes > CMD_TRACE_WARN_BYTES) {
        tensor_groups(job, cfg, 0, alt);
        double alt_bytes = estimate_bytes(bytes, alt, n);
        const char *which = "one tensor group per pipeline stage";
        if (alt_bytes > CMD_TRACE_WARN_BYTES && job->par.pp > 2) {
            tensor_groups(job, cfg, 1, alt);
            alt_bytes = estimate_bytes(bytes, alt, n);
            which = "one tensor group of the first and of the last pipeline stage";
        }
        if (!(alt_text = ranks_text(alt, n))) {
            rc = cli_fail(d, CLI_ERUNTIME, "--trace: out of memory");
            goto done;
        }
        if (!text && alt_bytes < plan->estimate_bytes) {
            if (warn)
                fprintf(
                    warn,
                    "stepsim run: --trace: the whole job would make about %.0f MB (more than %.0f MB), so "
                    "the trace holds %s: --trace-ranks %s (about %.0f MB); --trace-ranks all traces every "
                    "GPU\n",
                    plan->estimate_bytes / 1e6, CMD_TRACE_WARN_BYTES / 1e6, which, alt_text, alt_bytes / 1e6);
            memcpy(on, alt, (size_t)n);
            plan->estimate_bytes = alt_bytes;
            plan->reduced = 1;
        } else if (warn) {
            fprintf(warn, "stepsim run: --trace: about %.0f MB (more than %.0f MB)",
                    plan->estimate_bytes / 1e6, CMD_TRACE_WARN_BYTES / 1e6);
            if (alt_bytes < plan->estimate_bytes)
                fprintf(warn, "; --trace-ranks %s would make about %.0f MB", alt_text, alt_bytes / 1e6);
            fputc('\n', warn);
        }
    }
    int all = 1;
    for (int64_t g = 0; g < n && all; g++)
        all = on[g];
    char *final_text = all ? NULL : ranks_text(on, n);
    if (!all && !final_text) {
        rc = cli_fail(d, CLI_ERUNTIME, "--trace: out of memory");
        goto done;
    }
    rc = trace_ranks_parse(all ? "all" : final_text, (int32_t)n, &plan->ranks, err, sizeof err);
    free(final_text);
    if (rc)
        rc = cli_fail(d, rc == TRACE_ENOMEM ? CLI_ERUNTIME : CLI_EUSAGE, "--trace-ranks: %s", err);
done:
    free(ops);
    free(bytes);
    free(on);
    free(mapped);
    free(alt);
    free(alt_text);
    free(mapped_text);
    free(rep_text);
    return rc;
}
