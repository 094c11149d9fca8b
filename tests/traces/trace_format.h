/* trace_format.h - a structural validator of the Trace Event Format (the JSON object form), for the
 * tests of stepsim's traces. The rules are the format document's ("Trace Event Format", Google,
 * https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU) plus how the two
 * viewers the docs recommend read it:
 * - the file is an object with a "traceEvents" array; "displayTimeUnit", if present, is "ms" or "ns";
 * - every event is an object with a one-letter "ph" of a known phase; pid and tid are integers;
 *   every event but "M" has a finite "ts" >= 0 and every event a string "name" (the format lets
 *   "E" go without, but speedscope ignores an "E" whose name is not its "B"'s: checked);
 * - "X": "dur" >= 0; "B"/"E": balanced per thread (each E closes the last open B of its thread, in
 *   file order, which is time order on each thread in stepsim's traces), each pair one slice;
 * - "C": "args" is an object of numbers; "M": a known metadata name with args.name (a string) or
 *   args.sort_index (an integer);
 * - flows: "s", "t", "f" carry "id" and a string "cat"; every "s" has exactly one "f" of equal cat,
 *   name and id, and the reverse; an "f" binds to its enclosing slice only with "bp":"e" (else to the
 *   next slice), so a flow that must bind to the slice it sits in has bp "e"; each flow event binds
 *   to a slice ("X", or "B" with its "E") of equal cat, pid, tid and ts, the rule of Chrome DevTools (its
 * FlowsHandler), which is also inside the slice, the Trace Event Format's enclosing-slice rule (Perfetto);
 * - with strict set: on every thread no two slices overlap with times read as doubles (each ends,
 *   at ts + dur for "X" or its "E" event's ts, at or before the next begins), i.e. no nesting.
 * tf_check returns the number of problems (0: valid) and writes the first into msg. */
#ifndef STEPSIM_TEST_TRACE_FORMAT_H
#define STEPSIM_TEST_TRACE_FORMAT_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

typedef struct tf_stats {
    int64_t events, complete, counters, metadata, flow_starts, flow_ends, begins, ends;
    int64_t threads;  /* threads with slices */
    int64_t slices;   /* "X" events and "B"/"E" pairs */
    int64_t overlaps; /* strict: slices of one thread that overlap in doubles */
    int64_t unbound;  /* flow events that bind to no slice of equal cat, pid, tid and ts */
} tf_stats_t;

typedef struct tf_slice {
    int64_t pid, tid;
    double ts, end;
    const cJSON *ev;
} tf_slice_t;

static int tf_problem(int *n, char *msg, size_t size, const char *fmt, const char *a, double x) {
    if ((*n)++ == 0 && msg)
        snprintf(msg, size, fmt, a, x);
    return 0;
}

static int tf_is_int(const cJSON *v) {
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble == floor(v->valuedouble);
}

static const char *tf_str(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int tf_cmp_slice(const void *a, const void *b) {
    const tf_slice_t *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return 0;
}

/* Same thread and timestamp and cat: the slice a flow event binds to. */
static const tf_slice_t *tf_find_slice(const tf_slice_t *s, int64_t n, int64_t pid, int64_t tid, double ts,
                                       const char *cat) {
    int64_t lo = 0, hi = n;
    const tf_slice_t key = {pid, tid, ts, 0.0, NULL};
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (tf_cmp_slice(&s[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (int64_t i = lo; i < n && s[i].pid == pid && s[i].tid == tid && s[i].ts == ts; i++) {
        const char *c = tf_str(s[i].ev, "cat");
        if (c && cat && strcmp(c, cat) == 0)
            return &s[i];
    }
    return NULL;
}

static int tf_cmp_flow(const void *a, const void *b) {
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    int c = strcmp(tf_str(x, "cat"), tf_str(y, "cat"));
    if (!c)
        c = strcmp(tf_str(x, "name"), tf_str(y, "name"));
    if (!c) {
        const double i = cJSON_GetObjectItemCaseSensitive(x, "id")->valuedouble,
                     j = cJSON_GetObjectItemCaseSensitive(y, "id")->valuedouble;
        c = i < j ? -1 : i > j;
    }
    return c;
}

static int tf_check(const cJSON *root, int strict, tf_stats_t *st, char *msg, size_t size) {
    int n = 0;
    memset(st, 0, sizeof *st);
    if (msg && size)
        msg[0] = '\0';
    const cJSON *evs = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    if (!cJSON_IsObject(root) || !cJSON_IsArray(evs)) {
        tf_problem(&n, msg, size, "%s%g", "not an object with a traceEvents array", 0);
        return n;
    }
    const char *dtu = tf_str(root, "displayTimeUnit");
    if (cJSON_GetObjectItemCaseSensitive(root, "displayTimeUnit") &&
        (!dtu || (strcmp(dtu, "ms") && strcmp(dtu, "ns"))))
        tf_problem(&n, msg, size, "displayTimeUnit %s%g", dtu ? dtu : "?", 0);
    const int64_t total = cJSON_GetArraySize(evs);
    tf_slice_t *x = malloc((size_t)(total + 1) * sizeof *x);
    const cJSON **sf = malloc((size_t)(total + 1) * sizeof *sf),
                **ff = malloc((size_t)(total + 1) * sizeof *ff);
    /* open B events per thread: a simple stack over (pid, tid) pairs, searched linearly */
    tf_slice_t *open = malloc((size_t)(total + 1) * sizeof *open);
    int64_t nx = 0, ns = 0, nf = 0, nopen = 0;
    if (!x || !sf || !ff || !open)
        abort();
    const cJSON *e;
    cJSON_ArrayForEach(e, evs) {
        st->events++;
        const char *ph = tf_str(e, "ph");
        if (!cJSON_IsObject(e) || !ph || strlen(ph) != 1 || !strchr("XBEiICMsftbenOND", ph[0])) {
            tf_problem(&n, msg, size, "event %s%g: no known ph", "", (double)st->events);
            continue;
        }
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(e, "pid"),
                    *tid = cJSON_GetObjectItemCaseSensitive(e, "tid");
        if (!tf_is_int(pid) || !tf_is_int(tid))
            tf_problem(&n, msg, size, "event %s %g: pid or tid not an integer", ph, (double)st->events);
        const char *name = tf_str(e, "name");
        if (!name)
            tf_problem(&n, msg, size, "event %s %g: no name", ph, (double)st->events);
        const cJSON *ts = cJSON_GetObjectItemCaseSensitive(e, "ts");
        const int timed = ph[0] != 'M';
        if (timed && (!cJSON_IsNumber(ts) || !isfinite(ts->valuedouble) || ts->valuedouble < 0)) {
            tf_problem(&n, msg, size, "event %s %g: ts missing or negative", ph, (double)st->events);
            continue;
        }
        const int64_t p = tf_is_int(pid) ? (int64_t)pid->valuedouble : -1,
                      t = tf_is_int(tid) ? (int64_t)tid->valuedouble : -1;
        switch (ph[0]) {
        case 'X': {
            const cJSON *dur = cJSON_GetObjectItemCaseSensitive(e, "dur");
            if (!cJSON_IsNumber(dur) || !(dur->valuedouble >= 0))
                tf_problem(&n, msg, size, "X %s at %g: dur missing or negative", name ? name : "",
                           ts->valuedouble);
            else
                x[nx++] = (tf_slice_t){p, t, ts->valuedouble, ts->valuedouble + dur->valuedouble, e};
            st->complete++;
            break;
        }
        case 'B':
            open[nopen++] = (tf_slice_t){p, t, ts->valuedouble, 0.0, e};
            st->begins++;
            break;
        case 'E': {
            int64_t k = nopen - 1;
            while (k >= 0 && !(open[k].pid == p && open[k].tid == t))
                k--;
            if (k >= 0 && (!name || !tf_str(open[k].ev, "name") || strcmp(name, tf_str(open[k].ev, "name"))))
                tf_problem(&n, msg, size, "E %s at %g: not the name of the B it closes", name ? name : "",
                           ts->valuedouble);
            if (k < 0 || open[k].ts > ts->valuedouble) {
                tf_problem(&n, msg, size, "E %s at %g: no open B on its thread before it", "",
                           ts->valuedouble);
            } else {
                x[nx++] = (tf_slice_t){p, t, open[k].ts, ts->valuedouble, open[k].ev};
                memmove(&open[k], &open[k + 1], (size_t)(nopen - k - 1) * sizeof *open);
                nopen--;
            }
            st->ends++;
            break;
        }
        case 'C': {
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args"), *a;
            if (!cJSON_IsObject(args) || !args->child)
                tf_problem(&n, msg, size, "C %s at %g: no args", name ? name : "", ts->valuedouble);
            else
                cJSON_ArrayForEach(a, args) if (!cJSON_IsNumber(a)) tf_problem(
                    &n, msg, size, "C %s at %g: a value is not a number", name ? name : "", ts->valuedouble);
            st->counters++;
            break;
        }
        case 'M': {
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
            const int named = name && (!strcmp(name, "process_name") || !strcmp(name, "thread_name"));
            const int sorted =
                name && (!strcmp(name, "process_sort_index") || !strcmp(name, "thread_sort_index"));
            if (!named && !sorted && !(name && !strcmp(name, "process_labels")))
                tf_problem(&n, msg, size, "M %s%g: unknown metadata name", name ? name : "", 0);
            else if (named && !tf_str(args, "name"))
                tf_problem(&n, msg, size, "M %s%g: no args.name", name, 0);
            else if (sorted && !tf_is_int(cJSON_GetObjectItemCaseSensitive(args, "sort_index")))
                tf_problem(&n, msg, size, "M %s%g: no integer args.sort_index", name, 0);
            st->metadata++;
            break;
        }
        case 's':
        case 't':
        case 'f': {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
            if (!tf_is_int(id) || !tf_str(e, "cat") || !name) {
                tf_problem(&n, msg, size, "flow %s at %g: no integer id, cat or name", ph, ts->valuedouble);
                break;
            }
            if (ph[0] == 's')
                sf[ns++] = e, st->flow_starts++;
            if (ph[0] == 'f') {
                const char *bp = tf_str(e, "bp");
                if (!bp || strcmp(bp, "e"))
                    tf_problem(&n, msg, size, "f %s at %g: not bp \"e\" (would bind to the next slice)", name,
                               ts->valuedouble);
                ff[nf++] = e, st->flow_ends++;
            }
            break;
        }
        default:
            break;
        }
    }
    if (nopen > 0)
        tf_problem(&n, msg, size, "B %s%g: never ended",
                   tf_str(open[0].ev, "name") ? tf_str(open[0].ev, "name") : "", open[0].ts);
    /* slices per thread, by start */
    st->slices = nx;
    qsort(x, (size_t)nx, sizeof *x, tf_cmp_slice);
    for (int64_t i = 0; i < nx; i++) {
        const int first = i == 0 || x[i - 1].pid != x[i].pid || x[i - 1].tid != x[i].tid;
        st->threads += first;
        if (strict && !first && x[i - 1].end > x[i].ts) {
            st->overlaps++;
            tf_problem(&n, msg, size, "slice %s at %.6f: starts before the previous slice of its thread ends",
                       tf_str(x[i].ev, "name"), x[i].ts);
        }
    }
    /* flows: paired by (cat, name, id), each bound to a slice */
    qsort(sf, (size_t)ns, sizeof *sf, tf_cmp_flow);
    qsort(ff, (size_t)nf, sizeof *ff, tf_cmp_flow);
    int64_t i = 0, j = 0;
    while (i < ns || j < nf) {
        const int c = i < ns && j < nf ? tf_cmp_flow(&sf[i], &ff[j]) : i < ns ? -1 : 1;
        const int dup = (c <= 0 && i + 1 < ns && !tf_cmp_flow(&sf[i], &sf[i + 1])) ||
                        (c >= 0 && j + 1 < nf && !tf_cmp_flow(&ff[j], &ff[j + 1]));
        if (c || dup)
            tf_problem(&n, msg, size, "flow %s id %g: not one s and one f",
                       tf_str(c <= 0 ? sf[i] : ff[j], "name"),
                       cJSON_GetObjectItemCaseSensitive(c <= 0 ? sf[i] : ff[j], "id")->valuedouble);
        i += c <= 0;
        j += c >= 0;
    }
    for (int k = 0; k < 2; k++) {
        const cJSON **v = k ? ff : sf;
        const int64_t m = k ? nf : ns;
        for (int64_t q = 0; q < m; q++) {
            const double ts = cJSON_GetObjectItemCaseSensitive(v[q], "ts")->valuedouble;
            const tf_slice_t *b = tf_find_slice(
                x, nx, (int64_t)cJSON_GetObjectItemCaseSensitive(v[q], "pid")->valuedouble,
                (int64_t)cJSON_GetObjectItemCaseSensitive(v[q], "tid")->valuedouble, ts, tf_str(v[q], "cat"));
            if (!b) {
                st->unbound++;
                tf_problem(&n, msg, size, "flow %s at %.6f: no slice of equal cat, pid, tid and ts",
                           tf_str(v[q], "name"), ts);
            }
        }
    }
    free(x);
    free(sf);
    free(ff);
    free(open);
    return n;
}

#endif
