/* checked.h - the one checked arithmetic of every layer: products and sums of integers that come
 * from input, and doubles turned into integers, without undefined behaviour.
 *
 * Contract: checked_mul_i64 / checked_add_i64 store a op b in *out and return 0, or return 1 (and
 * leave *out undefined) when the exact result does not fit in int64_t. The _sat forms return the
 * exact result or, when it does not fit, INT64_MAX (INT64_MIN for a negative one): callers use them
 * on positive sizes, where a saturated value is never a valid count and the check that follows
 * reports it. checked_double_to_i64 converts x only after checking that it is finite and inside
 * [-2^63, 2^63): 0 and *out = (int64_t)x (truncated toward zero), or 1 and *out untouched.
 * Header only (an INTERFACE target, stepsim_checked), so the leaf layers (model, topo) use it too. */
#ifndef STEPSIM_CHECKED_H
#define STEPSIM_CHECKED_H

#include <stdint.h>

static inline int checked_mul_i64(int64_t a, int64_t b, int64_t *out) {
    return __builtin_mul_overflow(a, b, out) ? 1 : 0;
}

static inline int checked_add_i64(int64_t a, int64_t b, int64_t *out) {
    return __builtin_add_overflow(a, b, out) ? 1 : 0;
}

static inline int64_t checked_mul_sat_i64(int64_t a, int64_t b) {
    int64_t r;
    if (!__builtin_mul_overflow(a, b, &r))
        return r;
    return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
}

static inline int64_t checked_add_sat_i64(int64_t a, int64_t b) {
    int64_t r;
    if (!__builtin_add_overflow(a, b, &r))
        return r;
    return a < 0 ? INT64_MIN : INT64_MAX;
}

static inline int checked_double_to_i64(double x, int64_t *out) {
    if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0))
        return 1;
    *out = (int64_t)x;
    return 0;
}

#endif
