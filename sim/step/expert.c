/* expert.c - the load skew of a mixture of experts: which share of a MoE block's tokens each expert
 * receives in one microbatch, and what that makes of each expert-parallel rank's work
 * (step_expert_shares; docs/run.md, "Experts in the step"). */
#include <math.h>
#include <stdlib.h>

#include "step_internal.h"

typedef struct ranked {
    uint64_t key;
    int32_t expert;
} ranked_t;

static int by_key(const void *a, const void *b) {
    const ranked_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->expert > y->expert) - (x->expert < y->expert);
}

static uint64_t mix(uint64_t h, uint64_t v) {
    return step_splitmix64(h ^ step_splitmix64(v));
}

double step_expert_shares(int64_t experts, int64_t ep, double skew, uint64_t seed, int64_t block,
                          int64_t microbatch, double *shares, double *factors) {
    if (experts < 1 || experts > STEP_EXPERT_MAX || ep < 1 || experts % ep)
        return 1.0;
    ranked_t r[STEP_EXPERT_MAX];
    double w[STEP_EXPERT_MAX], share[STEP_EXPERT_MAX];
    /* the Zipf weights by rank, summed from the smallest (the same sum whatever the permutation) */
    double h = 0.0;
    for (int64_t k = experts - 1; k >= 0; k--) {
        w[k] = pow((double)(k + 1), -skew);
        h += w[k];
    }
    const uint64_t base = mix(mix(mix(0x243f6a8885a308d3ULL, seed), (uint64_t)block), (uint64_t)microbatch);
    for (int64_t i = 0; i < experts; i++)
        r[i] = (ranked_t){mix(base, (uint64_t)i), (int32_t)i};
    qsort(r, (size_t)experts, sizeof *r, by_key);
    for (int64_t k = 0; k < experts; k++)
        share[r[k].expert] = w[k] / h;
    if (shares)
        for (int64_t i = 0; i < experts; i++)
            shares[i] = share[i];
    const int64_t per = experts / ep;
    double fmax = 0.0;
    for (int64_t g = 0; g < ep; g++) {
        double sum = 0.0;
        for (int64_t i = g * per; i < (g + 1) * per; i++)
            sum += share[i];
        const double f = (double)ep * sum;
        if (factors)
            factors[g] = f;
        fmax = f > fmax ? f : fmax;
    }
    return fmax;
}
