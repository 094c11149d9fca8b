/* ranks.c - the --trace-ranks parser: "0-7,64" -> sorted, merged, disjoint ranges of GPU ranks.
 *
 * Strict on purpose: an item is N or A-B (decimal digits, A <= B), items are separated by commas
 * with optional spaces around them, and the first bad item is quoted in the error so that the user
 * sees exactly which part to fix. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "trace.h"

static int is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int is_digit(char c) {
    return c >= '0' && c <= '9';
}

/* Parse the digits in [s, e) into *out. Return 0, -1 if there are none or a non-digit, -2 if the
 * value exceeds INT32_MAX. */
static int parse_rank(const char *s, const char *e, int32_t *out) {
    if (s == e)
        return -1;
    int64_t v = 0;
    for (const char *p = s; p < e; p++) {
        if (!is_digit(*p))
            return -1;
        v = v * 10 + (*p - '0');
        if (v > INT32_MAX)
            return -2;
    }
    *out = (int32_t)v;
    return 0;
}

static int cmp_range(const void *a, const void *b) {
    const trace_rank_range_t *x = a, *y = b;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return x->last < y->last ? -1 : x->last > y->last;
}

#define EXPECTED "expected N or A-B, e.g. 0-7,64"

int trace_ranks_parse(const char *text, int32_t n_gpus, trace_ranks_t *out, char *err, size_t err_size) {
    char dummy[1];
    if (!err || err_size == 0) {
        err = dummy;
        err_size = sizeof dummy;
    }
    err[0] = '\0';
    if (!out) {
        snprintf(err, err_size, "no output given");
        return TRACE_EINVAL;
    }
    memset(out, 0, sizeof *out);
    if (!text) {
        snprintf(err, err_size, "no GPU ranks given; " EXPECTED);
        return TRACE_EINVAL;
    }
    const char *b = text, *e = text + strlen(text);
    while (b < e && is_space(*b))
        b++;
    while (e > b && is_space(e[-1]))
        e--;
    if (b == e) {
        snprintf(err, err_size, "empty list of GPU ranks; " EXPECTED);
        return TRACE_EINVAL;
    }
    if (e - b == 3 && memcmp(b, "all", 3) == 0) {
        out->all = 1;
        return TRACE_OK;
    }
    int32_t cap = 1;
    for (const char *p = b; p < e; p++)
        cap += *p == ',';
    trace_rank_range_t *r = alloc_malloc((size_t)cap * sizeof *r);
    if (!r) {
        snprintf(err, err_size, "out of memory");
        return TRACE_ENOMEM;
    }
    int32_t n = 0, item = 0;
    const char *s = b;
    for (;;) {
        const char *c = s;
        while (c < e && *c != ',')
            c++;
        item++;
        /* The item is [is, ie), trimmed. */
        const char *is = s, *ie = c;
        while (is < ie && is_space(*is))
            is++;
        while (ie > is && is_space(ie[-1]))
            ie--;
        const int len = (int)(ie - is);
        if (len == 0) {
            snprintf(err, err_size, "item %d of \"%.60s\" is empty; " EXPECTED, (int)item, text);
            goto fail;
        }
        const char *dash = memchr(is, '-', (size_t)len);
        int32_t first = 0, last = 0;
        int rc = parse_rank(is, dash ? dash : ie, &first);
        if (!rc)
            rc = dash ? parse_rank(dash + 1, ie, &last) : (last = first, 0);
        if (rc == -2) {
            snprintf(err, err_size, "\"%.*s\": GPU rank too large (at most %d)", len > 40 ? 40 : len, is,
                     (int)INT32_MAX);
            goto fail;
        }
        if (rc) {
            snprintf(err, err_size, "\"%.*s\": not a GPU rank or range (" EXPECTED ")", len > 40 ? 40 : len,
                     is);
            goto fail;
        }
        if (first > last) {
            snprintf(err, err_size, "\"%.*s\": range is descending (%d > %d)", len, is, (int)first,
                     (int)last);
            goto fail;
        }
        if (n_gpus > 0 && last >= n_gpus) {
            snprintf(err, err_size, "\"%.*s\": GPU %d is beyond the last GPU (%d)", len, is, (int)last,
                     (int)(n_gpus - 1));
            goto fail;
        }
        r[n].first = first;
        r[n].last = last;
        n++;
        if (c == e)
            break;
        s = c + 1;
    }
    qsort(r, (size_t)n, sizeof *r, cmp_range);
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        /* Merge overlapping and adjacent ranges (last + 1 computed in 64 bits: last may be INT32_MAX). */
        if (m > 0 && (int64_t)r[i].first <= (int64_t)r[m - 1].last + 1) {
            if (r[i].last > r[m - 1].last)
                r[m - 1].last = r[i].last;
        } else {
            r[m++] = r[i];
        }
    }
    out->ranges = r;
    out->n_ranges = m;
    return TRACE_OK;
fail:
    free(r);
    return TRACE_EINVAL;
}

int trace_ranks_contains(const trace_ranks_t *r, int32_t gpu) {
    if (!r)
        return 0;
    if (r->all)
        return gpu >= 0;
    int32_t lo = 0, hi = r->n_ranges;
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (r->ranges[mid].last < gpu)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->n_ranges && r->ranges[lo].first <= gpu;
}

void trace_ranks_destroy(trace_ranks_t *r) {
    if (!r)
        return;
    free(r->ranges);
    memset(r, 0, sizeof *r);
}
