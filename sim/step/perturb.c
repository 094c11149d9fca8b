/* perturb.c - the step's perturbations: per-GPU compute slowdown factors and per-operation jitter
 * (step.h, "Per-kernel jitter"; docs/run.md, "Perturbations").
 *
 * Every draw is a pure function of (seed, GPU, operation key): splitmix64 chained over the parts, so
 * the jitter of an operation does not depend on the order in which stages, GPUs or operations are
 * built, nor on how many other draws were made. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "step_internal.h"

uint64_t step_splitmix64(uint64_t x) {
    uint64_t z = x + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t mix(uint64_t h, uint64_t v) {
    return step_splitmix64(h ^ step_splitmix64(v));
}

uint64_t step_jitter_key(int32_t pass, int32_t chunk, int32_t microbatch, int32_t index) {
    uint64_t h = mix(0x6a09e667f3bcc908ULL, (uint64_t)(uint32_t)pass);
    h = mix(h, (uint64_t)(uint32_t)chunk);
    h = mix(h, (uint64_t)(uint32_t)microbatch);
    return mix(h, (uint64_t)(uint32_t)index);
}

const char *step_jitter_name(step_jitter_dist_t d) {
    switch (d) {
    case STEP_JITTER_LOGNORMAL:
        return "lognormal";
    case STEP_JITTER_NORMAL:
        return "normal";
    default:
        return "none";
    }
}

int step_jitter_parse(const char *text, step_jitter_dist_t *out) {
    static const step_jitter_dist_t ALL[] = {STEP_JITTER_NONE, STEP_JITTER_LOGNORMAL, STEP_JITTER_NORMAL};
    for (size_t i = 0; text && i < sizeof ALL / sizeof ALL[0]; i++)
        if (strcmp(text, step_jitter_name(ALL[i])) == 0) {
            *out = ALL[i];
            return SIM_OK;
        }
    return SIM_EINVAL;
}

/* A uniform in (0, 1) from 53 bits. */
static double unit(uint64_t x) {
    return ((double)(x >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* The draw-th standard normal of key h (Box-Muller, the cosine branch). */
static double normal(uint64_t h, uint32_t draw) {
    const uint64_t a = mix(h, 2u * (uint64_t)draw), b = mix(h, 2u * (uint64_t)draw + 1u);
    const double u1 = unit(a), u2 = unit(b);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

double step_jitter_factor(const step_jitter_t *j, int32_t gpu, uint64_t key) {
    if (!j || j->dist == STEP_JITTER_NONE || !(j->cv > 0.0))
        return 1.0;
    const uint64_t h = mix(mix(j->seed, (uint64_t)(uint32_t)gpu), key);
    if (j->dist == STEP_JITTER_LOGNORMAL) {
        const double s2 = log1p(j->cv * j->cv);
        return exp(-0.5 * s2 + sqrt(s2) * normal(h, 0));
    }
    for (uint32_t d = 0; d < 64; d++) {
        const double x = 1.0 + j->cv * normal(h, d);
        if (x > 0.01)
            return x;
    }
    return 1.0;
}

int step_perturb_init(step_t *s) {
    const step_config_t *c = &s->cfg;
    s->slow = NULL;
    s->perturbed = 0;
    if (c->jitter.dist != STEP_JITTER_NONE && c->jitter.dist != STEP_JITTER_LOGNORMAL &&
        c->jitter.dist != STEP_JITTER_NORMAL)
        return step_fail(s, SIM_EINVAL, "jitter: distribution %d; allowed: none, lognormal, normal",
                         (int)c->jitter.dist);
    if (!(c->jitter.cv >= 0.0 && c->jitter.cv <= 10.0))
        return step_fail(s, SIM_EINVAL, "jitter: cv %g; allowed: 0..10", c->jitter.cv);
    s->jitter_on = c->jitter.dist != STEP_JITTER_NONE && c->jitter.cv > 0.0;
    int any = 0;
    for (int32_t g = 0; c->compute_slowdown && g < s->gpus; g++) {
        const double f = c->compute_slowdown[g];
        if (!(f > 0.0 && isfinite(f)))
            return step_fail(s, SIM_EINVAL, "compute_slowdown: GPU %d: %g; allowed: a factor > 0", g, f);
        any |= f != 1.0;
    }
    if (any) {
        s->slow = alloc_malloc((size_t)s->gpus * sizeof *s->slow);
        if (!s->slow)
            return step_fail(s, SIM_ENOMEM, "step: out of memory");
        memcpy(s->slow, c->compute_slowdown, (size_t)s->gpus * sizeof *s->slow);
    }
    s->cfg.compute_slowdown = NULL; /* the caller's array need not outlive step_new */
    s->perturbed = any || s->jitter_on;
    return SIM_OK;
}

double step_perturb_s(const step_t *s, int32_t gpu, uint64_t key, double dur_s) {
    if (!s->perturbed)
        return dur_s;
    double d = s->slow ? dur_s * s->slow[gpu] : dur_s;
    if (s->jitter_on)
        d *= step_jitter_factor(&s->cfg.jitter, gpu, key);
    return d;
}
