/* writer.c - the streaming Chrome Trace Event writer behind trace.h.
 *
 * Events are printed one per line as the engine reports them: an operation's slice ("B" and "E")
 * when it ends (its start time kept in an array indexed by operation id), a point-to-point flow
 * arrow ("s"/"f") when the second member of its sendrecv ends, process and thread names ("M") the
 * first time a GPU stream appears, counters ("C") once the clock has moved past their timestamp
 * (so that several samples of one counter at one instant become one). Every timestamp is printed
 * from integers, so the bytes depend only on the sequence of callbacks.
 *
 * Known limits: events are in end order, not start order (both viewers sort them); link names are
 * computed once per traced link and kept; the file is only valid JSON after trace_writer_close. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "alloc.h"
#include "trace.h"

#define LINK_NAME_MAX 128

typedef struct link_state {
    double last, pending;
    int64_t name_off; /* into names; -1 until the first sample is written */
    uint8_t has_last, is_pending;
} link_state_t;

/* A counter name given to trace_writer_counter, with its per-GPU state. */
typedef struct gpu_counter {
    char *name;
    double *last;      /* [n_gpus] */
    uint8_t *has_last; /* [n_gpus] */
    int32_t *pend;     /* [n_gpus]: index into pend_gc, -1 if none */
} gpu_counter_t;

typedef struct pending_gc {
    int32_t gpu, counter;
    double value;
} pending_gc_t;

/* The first member of a sendrecv to end, waiting for the other. */
typedef struct pair_state {
    sim_time_ps_t start_ps, end_ps;
    int32_t gpu, stream;
    int8_t state; /* 0: none ended; 1: one ended and written; 2: one ended, not written; 3: done */
    int8_t kind;  /* SIM_OP_SEND or SIM_OP_RECV */
} pair_state_t;

struct trace_writer {
    FILE *f;
    char *path;
    int32_t n_gpus, gpn, streams, n_nodes;
    int exact_ps;
    trace_op_args_fn op_args;
    trace_link_name_fn link_name;
    void *ctx;
    char *scenario;                     /* verbatim JSON object text, or NULL */
    char *compute_note;                 /* appended to compute threads' names, or NULL */
    char *ranks_text;                   /* normalised, for the metadata */
    uint8_t *gpu_on;                    /* [n_gpus]: passes the rank filter */
    uint8_t *thread_named, *node_named; /* node_named: per process (pid - 1) */
    int32_t n_groups, *group;           /* process groups: per GPU its group, -1; NULL: none */
    void (*group_name)(void *ctx, int32_t group, char *buf, size_t buf_size);
    int links_named;
    /* Link counters: every link (links_all) or those with link_on[id] set. */
    int links_all;
    int32_t n_links_sel;
    uint8_t *link_on;
    int64_t link_on_n;
    link_state_t *ls;
    int64_t ls_cap;
    char *names;
    int64_t names_len, names_cap;
    int32_t *pend_links;
    int64_t n_pend_links, cap_pend_links;
    /* Per-GPU counters. */
    gpu_counter_t *gc;
    int64_t n_gc, cap_gc;
    pending_gc_t *pend_gc;
    int64_t n_pend_gc, cap_pend_gc;
    sim_time_ps_t pend_t;
    /* Operations and point-to-point pairs. */
    sim_time_ps_t *op_start;
    int64_t op_cap;
    pair_state_t *pairs;
    int64_t pair_cap;
    int first_event;
    char *line; /* the event being formatted: one fwrite per event, no stdio call per field */
    int64_t line_len, line_cap;
    trace_writer_stats_t stats;
    int status;
    char errmsg[512];
};

const char *trace_status_name(int status) {
    switch (status) {
    case TRACE_OK:
        return "ok";
    case TRACE_EINVAL:
        return "invalid argument";
    case TRACE_ENOMEM:
        return "out of memory";
    case TRACE_EIO:
        return "I/O error";
    default:
        return "unknown error";
    }
}

/* Remember the first failure; later events are dropped. */
static void fail(trace_writer_t *w, int status, const char *fmt, ...) {
    if (w->status)
        return;
    w->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->errmsg, sizeof w->errmsg, fmt, ap);
    va_end(ap);
}

/* ---- printing ----------------------------------------------------------------------------------- */

/* Make room for n more bytes in the line buffer (geometric growth: allocation only while the longest
 * event grows). On failure the writer fails and the bytes go nowhere. */
static int lb_room(trace_writer_t *w, int64_t n) {
    if (w->line_len + n <= w->line_cap)
        return 0;
    if (alloc_grow((void **)&w->line, &w->line_cap, w->line_len + n, 1)) {
        fail(w, TRACE_ENOMEM, "out of memory formatting an event");
        return -1;
    }
    return 0;
}

static void lb_mem(trace_writer_t *w, const char *s, size_t n) {
    if (lb_room(w, (int64_t)n))
        return;
    memcpy(w->line + w->line_len, s, n);
    w->line_len += (int64_t)n;
}

static void lb_cstr(trace_writer_t *w, const char *s) {
    lb_mem(w, s, strlen(s));
}

static void lb_char(trace_writer_t *w, char c) {
    if (lb_room(w, 1))
        return;
    w->line[w->line_len++] = c;
}

/* Decimal digits of v, zero-padded to at least min_digits. */
static void lb_u64(trace_writer_t *w, uint64_t v, int min_digits) {
    char buf[24];
    int n = 0;
    do {
        buf[sizeof buf - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0 || n < min_digits);
    lb_mem(w, buf + sizeof buf - n, (size_t)n);
}

static void lb_i64(trace_writer_t *w, int64_t v) {
    if (v < 0) {
        lb_char(w, '-');
        lb_u64(w, (uint64_t)0 - (uint64_t)v, 1);
    } else {
        lb_u64(w, (uint64_t)v, 1);
    }
}

/* s as a JSON string: the two escapes JSON requires, the short forms of common control characters,
 * \u00XX for the others; bytes >= 0x80 pass through (UTF-8). */
static void lb_escaped(trace_writer_t *w, const char *s) {
    const unsigned char *run = (const unsigned char *)s, *p = run;
    for (; *p; p++) {
        if (*p >= 0x20 && *p != '"' && *p != '\\')
            continue;
        lb_mem(w, (const char *)run, (size_t)(p - run));
        run = p + 1;
        char esc[8];
        switch (*p) {
        case '"':
            lb_cstr(w, "\\\"");
            break;
        case '\\':
            lb_cstr(w, "\\\\");
            break;
        case '\n':
            lb_cstr(w, "\\n");
            break;
        case '\r':
            lb_cstr(w, "\\r");
            break;
        case '\t':
            lb_cstr(w, "\\t");
            break;
        case '\b':
            lb_cstr(w, "\\b");
            break;
        case '\f':
            lb_cstr(w, "\\f");
            break;
        default:
            snprintf(esc, sizeof esc, "\\u%04x", (unsigned)*p);
            lb_cstr(w, esc);
        }
    }
    lb_mem(w, (const char *)run, (size_t)(p - run));
}

static void lb_str(trace_writer_t *w, const char *s) {
    lb_char(w, '"');
    lb_escaped(w, s);
    lb_char(w, '"');
}

/* %.*g (glibc prints the exact decimal expansion, so the text is deterministic); null if not finite. */
static void lb_double(trace_writer_t *w, double v, int digits) {
    if (!isfinite(v)) {
        lb_cstr(w, "null");
        return;
    }
    /* Whole numbers below 10^digits print as their digits either way (FLOPs and bytes usually are):
     * skip printf's slow exact float formatting, same text. */
    if (digits >= 15 && fabs(v) < 1e15 && v == floor(v)) {
        lb_i64(w, (int64_t)v);
        return;
    }
    if (lb_room(w, 40))
        return;
    w->line_len += snprintf(w->line + w->line_len, 40, "%.*g", digits, v);
}

/* Time in the trace's integer unit: nanoseconds (rounded down) or picoseconds. */
static int64_t units(const trace_writer_t *w, sim_time_ps_t ps) {
    if (w->exact_ps)
        return ps;
    return ps >= 0 ? ps / 1000 : -((-ps + 999) / 1000);
}

/* u units as microseconds: "12.345" (ns) or "12.345678" (ps). */
static void lb_units(trace_writer_t *w, int64_t u) {
    const uint64_t per_us = w->exact_ps ? 1000000u : 1000u;
    uint64_t a = (uint64_t)u;
    if (u < 0) {
        lb_char(w, '-');
        a = (uint64_t)0 - (uint64_t)u;
    }
    lb_u64(w, a / per_us, 1);
    lb_char(w, '.');
    lb_u64(w, a % per_us, w->exact_ps ? 6 : 3);
}

/* Start an event: the separator from the previous one, then the caller appends the object. */
static int begin_event(trace_writer_t *w) {
    if (w->status)
        return -1;
    w->line_len = 0;
    lb_cstr(w, w->first_event ? "\n" : ",\n");
    w->first_event = 0;
    return 0;
}

/* Write the formatted event. */
static void end_event(trace_writer_t *w) {
    if (w->status)
        return;
    if (fwrite(w->line, 1, (size_t)w->line_len, w->f) != (size_t)w->line_len || ferror(w->f))
        fail(w, TRACE_EIO, "%s: write failed: %s", w->path, strerror(errno));
    w->line_len = 0;
}

/* The process of a GPU: its node's, or with groups its group's and node's. */
static int32_t pid_of_gpu(const trace_writer_t *w, int32_t gpu) {
    const int32_t node = gpu / w->gpn, k = w->group ? w->group[gpu] : -1;
    return (k + 1) * w->n_nodes + node + 1;
}

static int32_t tid_of(const trace_writer_t *w, int32_t gpu, int32_t stream) {
    return gpu * w->streams + stream + 1;
}

static void put_meta(trace_writer_t *w, int32_t pid, int32_t tid, const char *what, const char *name,
                     int32_t sort_index) {
    if (begin_event(w))
        return;
    lb_cstr(w, "{\"ph\":\"M\",\"pid\":");
    lb_i64(w, pid);
    lb_cstr(w, ",\"tid\":");
    lb_i64(w, tid);
    lb_cstr(w, ",\"name\":");
    lb_str(w, what);
    if (name) {
        lb_cstr(w, ",\"args\":{\"name\":");
        lb_str(w, name);
    } else {
        lb_cstr(w, ",\"args\":{\"sort_index\":");
        lb_i64(w, sort_index);
    }
    lb_cstr(w, "}}");
    end_event(w);
    w->stats.metadata_events++;
}

/* Name the node's process and the GPU stream's thread the first time they appear. */
static void ensure_thread(trace_writer_t *w, int32_t gpu, int32_t stream) {
    const int64_t idx = (int64_t)gpu * w->streams + stream;
    if (w->thread_named[idx])
        return;
    w->thread_named[idx] = 1;
    const int32_t node = gpu / w->gpn, pid = pid_of_gpu(w, gpu), tid = tid_of(w, gpu, stream);
    char buf[160];
    if (!w->node_named[pid - 1]) {
        w->node_named[pid - 1] = 1;
        char group[48] = "";
        if (w->group && w->group[gpu] >= 0 && w->group_name)
            w->group_name(w->ctx, w->group[gpu], group, sizeof group);
        snprintf(buf, sizeof buf, "%s%snode %d", group, group[0] ? " / " : "", (int)node);
        /* Every event carries a tid of its own process: Perfetto keys threads by tid alone. */
        put_meta(w, pid, tid, "process_name", buf, 0);
        put_meta(w, pid, tid, "process_sort_index", NULL, pid);
    }
    if (stream == 0 && w->compute_note)
        snprintf(buf, sizeof buf, "gpu %d compute (%s)", (int)gpu, w->compute_note);
    else if (stream == 0)
        snprintf(buf, sizeof buf, "gpu %d compute", (int)gpu);
    else
        snprintf(buf, sizeof buf, "gpu %d comm %d", (int)gpu, (int)stream);
    put_meta(w, pid, tid, "thread_name", buf, 0);
    put_meta(w, pid, tid, "thread_sort_index", NULL, tid);
}

static int32_t links_pid(const trace_writer_t *w) {
    return (w->n_groups + 1) * w->n_nodes + 1;
}

static int32_t links_tid(const trace_writer_t *w) {
    return w->n_gpus * w->streams + 1;
}

/* ---- counters ----------------------------------------------------------------------------------- */

static const char *link_name(trace_writer_t *w, int32_t link) {
    link_state_t *st = &w->ls[link];
    if (st->name_off < 0) {
        char buf[LINK_NAME_MAX];
        buf[0] = '\0';
        if (w->link_name)
            w->link_name(w->ctx, link, buf, sizeof buf);
        buf[sizeof buf - 1] = '\0';
        if (!buf[0])
            snprintf(buf, sizeof buf, "link %d", (int)link);
        const int64_t len = (int64_t)strlen(buf) + 1;
        if (alloc_grow((void **)&w->names, &w->names_cap, w->names_len + len, 1)) {
            fail(w, TRACE_ENOMEM, "out of memory for link names");
            return "link";
        }
        memcpy(w->names + w->names_len, buf, (size_t)len);
        st->name_off = w->names_len;
        w->names_len += len;
    }
    return w->names + st->name_off;
}

/* The start of a counter event: {"ph":"C","ts":..,"pid":..,"tid":..,"name": */
static void counter_head(trace_writer_t *w, int32_t pid, int32_t tid) {
    lb_cstr(w, "{\"ph\":\"C\",\"ts\":");
    lb_units(w, units(w, w->pend_t));
    lb_cstr(w, ",\"pid\":");
    lb_i64(w, pid);
    lb_cstr(w, ",\"tid\":");
    lb_i64(w, tid);
    lb_cstr(w, ",\"name\":");
}

static void put_link_sample(trace_writer_t *w, int32_t link, double value) {
    if (!w->links_named) {
        w->links_named = 1;
        put_meta(w, links_pid(w), links_tid(w), "process_name", "links", 0);
        put_meta(w, links_pid(w), links_tid(w), "process_sort_index", NULL, 0);
    }
    const char *name = link_name(w, link);
    if (begin_event(w))
        return;
    counter_head(w, links_pid(w), links_tid(w));
    lb_str(w, name);
    lb_cstr(w, ",\"args\":{\"utilization\":");
    lb_double(w, value, 9);
    lb_cstr(w, "}}");
    end_event(w);
    w->stats.counter_events++;
}

static void put_gpu_sample(trace_writer_t *w, int32_t gpu, const char *name, double value) {
    ensure_thread(w, gpu, 0);
    if (begin_event(w))
        return;
    counter_head(w, pid_of_gpu(w, gpu), tid_of(w, gpu, 0));
    lb_cstr(w, "\"gpu ");
    lb_i64(w, gpu);
    lb_char(w, ' ');
    lb_escaped(w, name);
    lb_cstr(w, "\",\"args\":{\"value\":");
    lb_double(w, value, 9);
    lb_cstr(w, "}}");
    end_event(w);
    w->stats.counter_events++;
}

/* Write the samples pending at pend_t: links in the order they were first reported at that time,
 * then per-GPU counters likewise. A sample equal to the last written value of its counter is
 * dropped. */
static void flush_counters(trace_writer_t *w) {
    for (int64_t i = 0; i < w->n_pend_links; i++) {
        const int32_t l = w->pend_links[i];
        link_state_t *st = &w->ls[l];
        st->is_pending = 0;
        if (w->status)
            continue;
        if (st->has_last && st->last == st->pending)
            continue;
        put_link_sample(w, l, st->pending);
        st->last = st->pending;
        st->has_last = 1;
    }
    w->n_pend_links = 0;
    for (int64_t i = 0; i < w->n_pend_gc; i++) {
        const pending_gc_t *p = &w->pend_gc[i];
        gpu_counter_t *c = &w->gc[p->counter];
        c->pend[p->gpu] = -1;
        if (w->status)
            continue;
        if (c->has_last[p->gpu] && c->last[p->gpu] == p->value)
            continue;
        put_gpu_sample(w, p->gpu, c->name, p->value);
        c->last[p->gpu] = p->value;
        c->has_last[p->gpu] = 1;
    }
    w->n_pend_gc = 0;
}

/* Flush pending samples once the clock has moved away from their timestamp. */
static void advance(trace_writer_t *w, sim_time_ps_t t) {
    if ((w->n_pend_links > 0 || w->n_pend_gc > 0) && t != w->pend_t)
        flush_counters(w);
    w->pend_t = t;
}

static void on_counter(void *ctx, sim_time_ps_t t, const sim_counter_t *c) {
    trace_writer_t *w = ctx;
    if (w->status || c->kind != SIM_COUNTER_LINK_UTILIZATION || c->link < 0)
        return;
    if (!w->links_all && (c->link >= w->link_on_n || !w->link_on[c->link]))
        return;
    advance(w, t);
    if (c->link >= w->ls_cap) {
        const int64_t old = w->ls_cap;
        if (alloc_grow((void **)&w->ls, &w->ls_cap, (int64_t)c->link + 1, sizeof *w->ls)) {
            fail(w, TRACE_ENOMEM, "out of memory for link counters");
            return;
        }
        for (int64_t i = old; i < w->ls_cap; i++)
            w->ls[i] = (link_state_t){.name_off = -1};
    }
    link_state_t *st = &w->ls[c->link];
    if (!st->is_pending) {
        if (alloc_grow((void **)&w->pend_links, &w->cap_pend_links, w->n_pend_links + 1,
                       sizeof *w->pend_links)) {
            fail(w, TRACE_ENOMEM, "out of memory for link counters");
            return;
        }
        w->pend_links[w->n_pend_links++] = c->link;
        st->is_pending = 1;
    }
    st->pending = c->value;
}

int trace_writer_counter(trace_writer_t *w, sim_time_ps_t t_ps, int32_t gpu, const char *name, double value) {
    if (!w)
        return TRACE_EINVAL;
    if (w->status)
        return w->status;
    if (gpu < 0 || gpu >= w->n_gpus || !name || !name[0] || t_ps < 0 || !isfinite(value))
        return TRACE_EINVAL;
    if (!w->gpu_on[gpu])
        return TRACE_OK;
    int64_t k = 0;
    while (k < w->n_gc && strcmp(w->gc[k].name, name) != 0)
        k++;
    if (k == w->n_gc) {
        if (alloc_grow((void **)&w->gc, &w->cap_gc, w->n_gc + 1, sizeof *w->gc))
            goto oom;
        gpu_counter_t *c = &w->gc[w->n_gc];
        memset(c, 0, sizeof *c);
        c->name = alloc_malloc(strlen(name) + 1);
        c->last = alloc_malloc((size_t)w->n_gpus * sizeof *c->last);
        c->has_last = alloc_calloc((size_t)w->n_gpus, 1);
        c->pend = alloc_malloc((size_t)w->n_gpus * sizeof *c->pend);
        if (!c->name || !c->last || !c->has_last || !c->pend) {
            free(c->name);
            free(c->last);
            free(c->has_last);
            free(c->pend);
            goto oom;
        }
        strcpy(c->name, name);
        for (int32_t g = 0; g < w->n_gpus; g++)
            c->pend[g] = -1;
        w->n_gc++;
    }
    advance(w, t_ps);
    gpu_counter_t *c = &w->gc[k];
    if (c->pend[gpu] >= 0) {
        w->pend_gc[c->pend[gpu]].value = value;
        return w->status;
    }
    if (alloc_grow((void **)&w->pend_gc, &w->cap_pend_gc, w->n_pend_gc + 1, sizeof *w->pend_gc))
        goto oom;
    c->pend[gpu] = (int32_t)w->n_pend_gc;
    w->pend_gc[w->n_pend_gc++] = (pending_gc_t){.gpu = gpu, .counter = (int32_t)k, .value = value};
    return w->status;
oom:
    fail(w, TRACE_ENOMEM, "out of memory for counter \"%.60s\"", name);
    return TRACE_ENOMEM;
}

/* ---- operations --------------------------------------------------------------------------------- */

/* 1 if the operation is on a traced GPU; a GPU or stream the options do not know is a failure. */
static int traced(trace_writer_t *w, const sim_op_info_t *op) {
    if (op->gpu < 0 || op->gpu >= w->n_gpus || op->stream < 0 || op->stream >= w->streams) {
        fail(w, TRACE_EINVAL,
             "operation %d on gpu %d stream %d is outside the trace options (%d GPUs, %d streams)",
             (int)op->op, (int)op->gpu, (int)op->stream, (int)w->n_gpus, (int)w->streams);
        return 0;
    }
    return w->gpu_on[op->gpu];
}

static void on_op_start(void *ctx, sim_time_ps_t t, const sim_op_info_t *op) {
    trace_writer_t *w = ctx;
    if (w->status)
        return;
    advance(w, t);
    if (!traced(w, op) || op->op < 0)
        return;
    if (op->op >= w->op_cap) {
        const int64_t old = w->op_cap;
        if (alloc_grow((void **)&w->op_start, &w->op_cap, (int64_t)op->op + 1, sizeof *w->op_start)) {
            fail(w, TRACE_ENOMEM, "out of memory for %d operation start times", (int)op->op + 1);
            return;
        }
        for (int64_t i = old; i < w->op_cap; i++)
            w->op_start[i] = -1;
    }
    w->op_start[op->op] = t;
}

static const char *kind_name(sim_op_kind_t k) {
    switch (k) {
    case SIM_OP_COMPUTE:
        return "compute";
    case SIM_OP_COLLECTIVE:
        return "collective";
    case SIM_OP_SEND:
        return "send";
    case SIM_OP_RECV:
        return "recv";
    default:
        return "op";
    }
}

/* The slice's "cat": a send and a receive share "p2p" with their flow events, because Chrome
 * DevTools binds a flow event to the slice of equal cat, pid, tid and ts (args.side tells them
 * apart). */
static const char *cat_name(sim_op_kind_t k) {
    return k == SIM_OP_SEND || k == SIM_OP_RECV ? "p2p" : kind_name(k);
}

/* ,"args":{...} of an operation; only the fields present. */
static void put_args(trace_writer_t *w, const trace_op_args_t *a, const char *side, sim_coll_id_t coll) {
    char sep = '{';
    lb_cstr(w, ",\"args\":");
#define ARG_KEY(k) (lb_char(w, sep), sep = ',', lb_cstr(w, "\"" k "\":"))
    if (a->layer) {
        ARG_KEY("layer");
        lb_str(w, a->layer);
    }
    if (a->pass) {
        ARG_KEY("pass");
        lb_str(w, a->pass);
    }
    if (a->microbatch >= 0) {
        ARG_KEY("microbatch");
        lb_i64(w, a->microbatch);
    }
    if (a->stage >= 0) {
        ARG_KEY("stage");
        lb_i64(w, a->stage);
    }
    if (a->flops >= 0) {
        ARG_KEY("flops");
        lb_double(w, a->flops, 15);
    }
    if (a->bytes >= 0) {
        ARG_KEY("bytes");
        lb_double(w, a->bytes, 15);
    }
    if (a->tp_comm_s > 0) {
        ARG_KEY("tp_comm_us");
        lb_units(w, units(w, (sim_time_ps_t)llround(a->tp_comm_s * 1e12)));
    }
    if (side) {
        ARG_KEY("side");
        lb_str(w, side);
    }
    if (a->collective) {
        ARG_KEY("collective");
        lb_str(w, a->collective);
    }
    if (a->group) {
        ARG_KEY("group");
        lb_str(w, a->group);
    }
    if (coll >= 0) {
        ARG_KEY("coll_id");
        lb_i64(w, coll);
    }
#undef ARG_KEY
    if (sep == '{')
        lb_char(w, '{');
    lb_char(w, '}');
}

static void put_flow(trace_writer_t *w, char ph, int64_t ts, int32_t gpu, int32_t stream, const char *name,
                     int64_t id) {
    if (begin_event(w))
        return;
    lb_cstr(w, ph == 's' ? "{\"ph\":\"s\",\"ts\":" : "{\"ph\":\"f\",\"bp\":\"e\",\"ts\":");
    lb_units(w, ts);
    lb_cstr(w, ",\"pid\":");
    lb_i64(w, pid_of_gpu(w, gpu));
    lb_cstr(w, ",\"tid\":");
    lb_i64(w, tid_of(w, gpu, stream));
    lb_cstr(w, ",\"name\":");
    lb_str(w, name);
    lb_cstr(w, ",\"cat\":\"p2p\",\"id\":");
    lb_i64(w, id);
    lb_char(w, '}');
    end_event(w);
}

/* Pair the two members of a sendrecv; when both ended and were written, draw the arrow from the
 * send's slice to the receive's. Each flow event sits at the start ("ts") of its slice, on its
 * thread, with the slice's cat ("p2p"): the Trace Event Format binds an "s" event to the slice that
 * encloses it and an "f" event with "bp":"e" likewise (Perfetto does so), and Chrome DevTools binds a
 * flow event only to the slice of equal cat, pid, tid and ts. Both flow events follow both slices in
 * the file, so a reader that keeps the file's order for equal timestamps sees the slice open first. */
static void pair_member(trace_writer_t *w, sim_time_ps_t t, const sim_op_info_t *op, sim_time_ps_t start,
                        int written) {
    if (op->coll < 0)
        return;
    if (op->coll >= w->pair_cap) {
        const int64_t old = w->pair_cap;
        if (alloc_grow((void **)&w->pairs, &w->pair_cap, (int64_t)op->coll + 1, sizeof *w->pairs)) {
            fail(w, TRACE_ENOMEM, "out of memory for point-to-point pairs");
            return;
        }
        memset(w->pairs + old, 0, (size_t)(w->pair_cap - old) * sizeof *w->pairs);
    }
    pair_state_t *p = &w->pairs[op->coll];
    if (p->state == 0) {
        *p = (pair_state_t){.start_ps = start,
                            .end_ps = t,
                            .gpu = op->gpu,
                            .stream = op->stream,
                            .state = (int8_t)(written ? 1 : 2),
                            .kind = (int8_t)op->kind};
        return;
    }
    if (p->state != 1 || !written || p->kind == (int8_t)op->kind) {
        p->state = 3;
        return;
    }
    p->state = 3;
    const int first_is_send = p->kind == SIM_OP_SEND;
    const int32_t sg = first_is_send ? p->gpu : op->gpu, ss = first_is_send ? p->stream : op->stream;
    const int32_t rg = first_is_send ? op->gpu : p->gpu, rs = first_is_send ? op->stream : p->stream;
    const int64_t send_ts = units(w, first_is_send ? p->start_ps : start);
    const int64_t recv_ts = units(w, first_is_send ? start : p->start_ps);
    const char *name = op->name ? op->name : "p2p";
    /* arrows are numbered in the order they are written, not by the engine's collective ids, so one
     * run gives one trace whatever order its operations were added in (a step and its import) */
    put_flow(w, 's', send_ts, sg, ss, name, w->stats.flow_arrows);
    put_flow(w, 'f', recv_ts, rg, rs, name, w->stats.flow_arrows);
    w->stats.flow_arrows++;
}

static void on_op_end(void *ctx, sim_time_ps_t t, const sim_op_info_t *op) {
    trace_writer_t *w = ctx;
    if (w->status)
        return;
    advance(w, t);
    if (!traced(w, op) || op->op < 0)
        return;
    sim_time_ps_t start = op->op < w->op_cap ? w->op_start[op->op] : -1;
    if (start < 0 || start > t)
        start = t; /* not seen starting (observer attached late) */
    trace_op_args_t a = {.microbatch = -1, .stage = -1, .flops = -1.0, .bytes = -1.0, .tp_comm_s = 0.0};
    int written = 1;
    if (w->op_args && w->op_args(w->ctx, op, &a) != 0) {
        written = 0;
        w->stats.dropped_ops++;
    }
    if (written) {
        ensure_thread(w, op->gpu, op->stream);
        if (begin_event(w))
            return;
        /* A begin and an end event, not one complete event: the boundary between two back-to-back
         * slices is then one number printed twice, which every reader parses to the same value, where
         * a reader adding ts + dur in doubles can land past the next slice's ts and nest it. */
        const int64_t u0 = units(w, start), u1 = units(w, t);
        /* An empty slice is one complete event of "dur" 0 (exact in any reader): speedscope orders a
         * "B" and an "E" of one timestamp by their names and args, and may end it before it begins. */
        const int empty = u1 == u0;
        lb_cstr(w, empty ? "{\"ph\":\"X\",\"ts\":" : "{\"ph\":\"B\",\"ts\":");
        lb_units(w, u0);
        if (empty)
            lb_cstr(w, ",\"dur\":0");
        lb_cstr(w, ",\"pid\":");
        lb_i64(w, pid_of_gpu(w, op->gpu));
        lb_cstr(w, ",\"tid\":");
        lb_i64(w, tid_of(w, op->gpu, op->stream));
        lb_cstr(w, ",\"name\":");
        lb_str(w, a.name ? a.name : op->name ? op->name : kind_name(op->kind));
        lb_cstr(w, ",\"cat\":\"");
        /* a mixture of experts' all-to-alls are a cat of their own, "ep" (the group's name) */
        lb_cstr(w, a.group && strcmp(a.group, "ep") == 0 ? "ep" : cat_name(op->kind));
        lb_char(w, '"');
        const int p2p = op->kind == SIM_OP_SEND || op->kind == SIM_OP_RECV;
        const int has_args = a.layer || a.pass || a.microbatch >= 0 || a.stage >= 0 || a.flops >= 0 ||
                             a.bytes >= 0 || a.tp_comm_s > 0 || a.collective || a.group || p2p ||
                             op->coll >= 0;
        if (has_args)
            put_args(w, &a, p2p ? kind_name(op->kind) : NULL, op->kind == SIM_OP_COMPUTE ? -1 : op->coll);
        lb_char(w, '}');
        end_event(w);
        if (!empty) {
            if (begin_event(w))
                return;
            /* The end carries the name too: speedscope ignores an "E" whose name differs from its "B"'s. */
            lb_cstr(w, "{\"ph\":\"E\",\"ts\":");
            lb_units(w, u1);
            lb_cstr(w, ",\"pid\":");
            lb_i64(w, pid_of_gpu(w, op->gpu));
            lb_cstr(w, ",\"tid\":");
            lb_i64(w, tid_of(w, op->gpu, op->stream));
            lb_cstr(w, ",\"name\":");
            lb_str(w, a.name ? a.name : op->name ? op->name : kind_name(op->kind));
            lb_char(w, '}');
            end_event(w);
        }
        w->stats.complete_events++;
    }
    if (op->kind == SIM_OP_SEND || op->kind == SIM_OP_RECV)
        pair_member(w, t, op, start, written);
}

void trace_writer_observer(trace_writer_t *w, sim_observer_t *out) {
    memset(out, 0, sizeof *out);
    out->ctx = w;
    out->op_start = on_op_start;
    out->op_end = on_op_end;
    out->counter = on_counter;
}

void trace_writer_stats(const trace_writer_t *w, trace_writer_stats_t *out) {
    if (w)
        *out = w->stats;
    else
        memset(out, 0, sizeof *out);
}

/* ---- open and close ----------------------------------------------------------------------------- */

static void writer_free(trace_writer_t *w) {
    if (!w)
        return;
    free(w->path);
    free(w->scenario);
    free(w->compute_note);
    free(w->ranks_text);
    free(w->gpu_on);
    free(w->thread_named);
    free(w->node_named);
    free(w->group);
    free(w->link_on);
    free(w->ls);
    free(w->names);
    free(w->pend_links);
    for (int64_t i = 0; i < w->n_gc; i++) {
        free(w->gc[i].name);
        free(w->gc[i].last);
        free(w->gc[i].has_last);
        free(w->gc[i].pend);
    }
    free(w->gc);
    free(w->pend_gc);
    free(w->op_start);
    free(w->pairs);
    free(w->line);
    free(w);
}

/* "0-7,64" or "all", for the metadata. */
static char *ranks_text(const trace_ranks_t *r) {
    if (!r || r->all)
        return alloc_strdup("all");
    const size_t cap = (size_t)r->n_ranges * 24 + 1;
    char *s = alloc_malloc(cap);
    if (!s)
        return NULL;
    size_t n = 0;
    s[0] = '\0';
    for (int32_t i = 0; i < r->n_ranges; i++) {
        const trace_rank_range_t *x = &r->ranges[i];
        if (x->first == x->last)
            n += (size_t)snprintf(s + n, cap - n, "%s%d", i ? "," : "", (int)x->first);
        else
            n += (size_t)snprintf(s + n, cap - n, "%s%d-%d", i ? "," : "", (int)x->first, (int)x->last);
    }
    return s;
}

#define SET_ERR(...) (err ? (void)snprintf(err, err_size, __VA_ARGS__) : (void)0)

static int check_options(const char *path, const trace_options_t *o, char *err, size_t err_size) {
    if (!path || !path[0]) {
        SET_ERR("path: empty");
        return TRACE_EINVAL;
    }
    if (!o) {
        SET_ERR("options: NULL");
        return TRACE_EINVAL;
    }
    if (o->n_gpus <= 0) {
        SET_ERR("n_gpus: %d is not a positive GPU count", (int)o->n_gpus);
        return TRACE_EINVAL;
    }
    if (o->gpus_per_node < 0) {
        SET_ERR("gpus_per_node: %d is negative", (int)o->gpus_per_node);
        return TRACE_EINVAL;
    }
    if (o->streams_per_gpu < 0 || o->streams_per_gpu > 1024) {
        SET_ERR("streams_per_gpu: %d is not in 0..1024", (int)o->streams_per_gpu);
        return TRACE_EINVAL;
    }
    const int64_t streams = o->streams_per_gpu ? o->streams_per_gpu : 3;
    if ((int64_t)o->n_gpus * streams + 2 > INT32_MAX) {
        SET_ERR("n_gpus: %d GPUs x %d streams exceed the trace's thread ids", (int)o->n_gpus, (int)streams);
        return TRACE_EINVAL;
    }
    if (o->ranks && !o->ranks->all)
        for (int32_t i = 0; i < o->ranks->n_ranges; i++)
            if (o->ranks->ranges[i].first < 0 || o->ranks->ranges[i].last >= o->n_gpus ||
                o->ranks->ranges[i].first > o->ranks->ranges[i].last) {
                SET_ERR("ranks: %d-%d is not within GPUs 0..%d", (int)o->ranks->ranges[i].first,
                        (int)o->ranks->ranges[i].last, (int)o->n_gpus - 1);
                return TRACE_EINVAL;
            }
    if (o->n_links < TRACE_LINKS_ALL) {
        SET_ERR("n_links: %d is neither a count nor TRACE_LINKS_ALL", (int)o->n_links);
        return TRACE_EINVAL;
    }
    if (o->n_links > 0 && !o->links) {
        SET_ERR("links: NULL with n_links %d", (int)o->n_links);
        return TRACE_EINVAL;
    }
    for (int32_t i = 0; i < o->n_links; i++)
        if (o->links[i] < 0) {
            SET_ERR("links[%d]: %d is not a link id", (int)i, (int)o->links[i]);
            return TRACE_EINVAL;
        }
    if (o->scenario_json) {
        const char *end = NULL;
        const uint64_t failed = alloc_failures();
        cJSON *j = cJSON_ParseWithOpts(o->scenario_json, &end, 1);
        const int ok = j && cJSON_IsObject(j);
        cJSON_Delete(j);
        if (!j && alloc_failures() != failed) {
            SET_ERR("out of memory checking scenario_json");
            return TRACE_ENOMEM;
        }
        if (!ok) {
            const char *at = end ? end : cJSON_GetErrorPtr();
            if (j)
                SET_ERR("scenario_json: not a JSON object");
            else
                SET_ERR("scenario_json: invalid JSON near \"%.20s\"", at ? at : "");
            return TRACE_EINVAL;
        }
    }
    return TRACE_OK;
}

int trace_writer_open(const char *path, const trace_options_t *o, trace_writer_t **out, char *err,
                      size_t err_size) {
    if (err && err_size)
        err[0] = '\0';
    if (!out) {
        SET_ERR("out: NULL");
        return TRACE_EINVAL;
    }
    *out = NULL;
    int rc = check_options(path, o, err, err_size);
    if (rc)
        return rc;
    trace_writer_t *w = alloc_calloc(1, sizeof *w);
    if (!w)
        goto oom;
    w->n_gpus = o->n_gpus;
    w->gpn = o->gpus_per_node ? o->gpus_per_node : 1;
    w->streams = o->streams_per_gpu ? o->streams_per_gpu : 3;
    w->n_nodes = (int32_t)(((int64_t)w->n_gpus + w->gpn - 1) / w->gpn);
    w->exact_ps = o->exact_ps ? 1 : 0;
    w->op_args = o->op_args;
    w->link_name = o->link_name;
    w->ctx = o->ctx;
    w->first_event = 1;
    w->links_all = o->n_links == TRACE_LINKS_ALL;
    w->n_links_sel = o->n_links;
    w->path = alloc_strdup(path);
    w->ranks_text = ranks_text(o->ranks);
    w->gpu_on = alloc_malloc((size_t)w->n_gpus);
    w->thread_named = alloc_calloc((size_t)w->n_gpus * (size_t)w->streams, 1);
    w->n_groups = o->n_groups > 0 && o->gpu_group ? o->n_groups : 0;
    w->group_name = o->group_name;
    w->node_named = alloc_calloc((size_t)w->n_nodes * (size_t)(w->n_groups + 1), 1);
    if (w->n_groups > 0 && (w->group = alloc_malloc((size_t)w->n_gpus * sizeof *w->group)) != NULL)
        for (int32_t g = 0; g < w->n_gpus; g++) {
            const int32_t k = o->gpu_group(o->ctx, g);
            w->group[g] = k >= 0 && k < w->n_groups ? k : -1;
        }
    if (!w->path || !w->ranks_text || !w->gpu_on || !w->thread_named || !w->node_named ||
        (w->n_groups > 0 && !w->group))
        goto oom;
    for (int32_t g = 0; g < w->n_gpus; g++)
        w->gpu_on[g] = (uint8_t)(!o->ranks || trace_ranks_contains(o->ranks, g));
    if (o->scenario_json && !(w->scenario = alloc_strdup(o->scenario_json)))
        goto oom;
    if (o->compute_note && o->compute_note[0] && !(w->compute_note = strndup(o->compute_note, 100)))
        goto oom;
    if (o->n_links > 0) {
        int32_t max = 0;
        for (int32_t i = 0; i < o->n_links; i++)
            if (o->links[i] > max)
                max = o->links[i];
        w->link_on_n = (int64_t)max + 1;
        if (!(w->link_on = alloc_calloc((size_t)w->link_on_n, 1)))
            goto oom;
        for (int32_t i = 0; i < o->n_links; i++)
            w->link_on[o->links[i]] = 1;
    }
    w->f = fopen(w->path, "w");
    if (!w->f) {
        SET_ERR("%s: cannot create: %s", w->path, strerror(errno));
        writer_free(w);
        return TRACE_EIO;
    }
    setvbuf(w->f, NULL, _IOFBF, 1 << 20);
    /* displayTimeUnit first: some Perfetto versions only look for it at the start of the file. */
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", w->f);
    if (ferror(w->f)) {
        SET_ERR("%s: write failed: %s", w->path, strerror(errno));
        trace_writer_abort(w);
        return TRACE_EIO;
    }
    *out = w;
    return TRACE_OK;
oom:
    SET_ERR("out of memory opening trace %s", path);
    writer_free(w);
    return TRACE_ENOMEM;
}

static void put_metadata(trace_writer_t *w) {
    FILE *f = w->f;
    fputs("\n],\n\"metadata\":{\"generator\":\"stepsim\"", f);
    fprintf(f, ",\"gpus\":%d,\"gpus_per_node\":%d,\"nodes\":%d,\"streams_per_gpu\":%d", (int)w->n_gpus,
            (int)w->gpn, (int)w->n_nodes, (int)w->streams);
    fprintf(f, ",\"trace_ranks\":\"%s\"", w->ranks_text); /* digits, ',', '-' or "all" */
    fprintf(f, ",\"time_resolution\":\"%s\"", w->exact_ps ? "ps" : "ns");
    if (w->links_all)
        fputs(",\"link_counters\":\"all\"", f);
    else
        fprintf(f, ",\"link_counters\":%d", (int)w->n_links_sel);
    fprintf(f,
            ",\"events\":{\"complete\":%lld,\"flow_arrows\":%lld,\"counters\":%lld,\"metadata\":%lld,"
            "\"dropped_ops\":%lld}",
            (long long)w->stats.complete_events, (long long)w->stats.flow_arrows,
            (long long)w->stats.counter_events, (long long)w->stats.metadata_events,
            (long long)w->stats.dropped_ops);
    if (w->scenario) {
        fputs(",\"scenario\":", f);
        fputs(w->scenario, f);
    }
    fputs("}}\n", f);
}

int trace_writer_close(trace_writer_t *w, char *err, size_t err_size) {
    if (err && err_size)
        err[0] = '\0';
    if (!w)
        return TRACE_OK;
    if (!w->status) {
        flush_counters(w);
        if (!w->status) {
            put_metadata(w);
            if (fflush(w->f) != 0 || ferror(w->f))
                fail(w, TRACE_EIO, "%s: write failed: %s", w->path, strerror(errno));
            else if (fsync(fileno(w->f)) != 0)
                fail(w, TRACE_EIO, "%s: sync failed: %s", w->path, strerror(errno));
        }
    }
    const int closed = fclose(w->f);
    w->f = NULL;
    if (!w->status && closed != 0)
        fail(w, TRACE_EIO, "%s: close failed: %s", w->path, strerror(errno));
    const int rc = w->status;
    if (rc) {
        remove(w->path);
        SET_ERR("%s", w->errmsg);
    }
    writer_free(w);
    return rc;
}

void trace_writer_abort(trace_writer_t *w) {
    if (!w)
        return;
    if (w->f)
        fclose(w->f);
    remove(w->path);
    writer_free(w);
}
