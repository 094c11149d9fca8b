/* writer.c - a step_workload_t as Chakra execution traces, one file per rank, with the attributes
 * Chakra's feeder and ASTRA-sim's workload layer read (docs/workloads.md). Every file is written to
 * a temporary file beside its destination; all are renamed into place once all are complete. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "chakra_internal.h"
#include "et_def.pb-c.h"

typedef struct out_file {
    char *tmp, *dst;
    FILE *f;
} out_file_t;

typedef struct writer {
    char *err;
    size_t err_size;
    uint8_t *buf;
    size_t cap;
    int groups_complete; /* mark every file (CHAKRA_ATTR_GROUPS_COMPLETE) */
} writer_t;

static int io_fail(writer_t *wr, const char *path, const char *what) {
    snprintf(wr->err, wr->err_size, "%s: cannot %s: %s", path, what, strerror(errno));
    return TRACE_EIO;
}

/* Append one length-delimited message (varint length, then the message). */
static int put_msg(writer_t *wr, FILE *f, const char *path, const ProtobufCMessage *m) {
    const size_t n = protobuf_c_message_get_packed_size(m);
    if (n > UINT32_MAX) {
        snprintf(wr->err, wr->err_size, "%s: record: %zu bytes: over 2^32-1 bytes", path, n);
        return TRACE_EINVAL;
    }
    if (n + 10 > wr->cap) {
        size_t c = wr->cap ? wr->cap : 4096;
        while (c < n + 10)
            c *= 2;
        uint8_t *b = alloc_realloc(wr->buf, c);
        if (!b) {
            snprintf(wr->err, wr->err_size, "out of memory");
            return TRACE_ENOMEM;
        }
        wr->buf = b;
        wr->cap = c;
    }
    size_t k = 0;
    uint64_t v = n;
    do {
        wr->buf[k++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        v >>= 7;
    } while (v);
    protobuf_c_message_pack(m, wr->buf + k);
    if (fwrite(wr->buf, 1, k + n, f) != k + n)
        return io_fail(wr, path, "write");
    return TRACE_OK;
}

static void attr_init(ChakraProtoMsg__AttributeProto *a, const char *name) {
    chakra_proto_msg__attribute_proto__init(a);
    a->name = (char *)name;
}

/* Chakra's CollectiveCommType of each step_wl_coll_t. */
static const int64_t coll_type[5] = {
    CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE, CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER,
    CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER,
    CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL, CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BROADCAST};

static int write_rank(writer_t *wr, const step_workload_t *w, int32_t r, FILE *f, const char *path) {
    /* GlobalMetadata: Chakra's version (as ASTRA-sim's generators write it) and the groups */
    ChakraProtoMsg__GlobalMetadata meta;
    chakra_proto_msg__global_metadata__init(&meta);
    meta.version = (char *)"0.0.4";
    ChakraProtoMsg__AttributeProto *ga = NULL, **gp = NULL;
    ChakraProtoMsg__Int32List *gl = NULL;
    char(*gnames)[32] = NULL;
    char(*gdocs)[sizeof w->groups[0].name + 1] = NULL;
    int rc = TRACE_OK;
    if (w->n_groups > 0 || wr->groups_complete) {
        const size_t n = (size_t)w->n_groups + (wr->groups_complete ? 1 : 0);
        ga = alloc_calloc(n, sizeof *ga);
        gp = alloc_calloc(n, sizeof *gp);
        gl = alloc_calloc(n, sizeof *gl);
        gnames = alloc_calloc(n, sizeof *gnames);
        gdocs = alloc_calloc(n, sizeof *gdocs);
        if (!ga || !gp || !gl || !gnames || !gdocs) {
            snprintf(wr->err, wr->err_size, "out of memory");
            rc = TRACE_ENOMEM;
            goto done;
        }
        for (int32_t g = 0; g < w->n_groups; g++) {
            snprintf(gnames[g], sizeof gnames[g], CHAKRA_ATTR_PG_RANKS "%d", g + 1);
            attr_init(&ga[g], gnames[g]);
            memcpy(gdocs[g], w->groups[g].name, sizeof w->groups[g].name);
            ga[g].doc_string = gdocs[g];
            chakra_proto_msg__int32_list__init(&gl[g]);
            gl[g].n_values = (size_t)w->groups[g].n_ranks;
            gl[g].values = w->group_ranks + w->groups[g].ranks_offset;
            ga[g].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_LIST;
            ga[g].int32_list = &gl[g];
            gp[g] = &ga[g];
        }
        if (wr->groups_complete) { /* after the definitions it vouches for */
            attr_init(&ga[n - 1], CHAKRA_ATTR_GROUPS_COMPLETE);
            ga[n - 1].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
            ga[n - 1].bool_val = 1;
            gp[n - 1] = &ga[n - 1];
        }
        meta.n_attr = n;
        meta.attr = gp;
    }
    if ((rc = put_msg(wr, f, path, &meta.base)) != TRACE_OK)
        goto done;

    for (int64_t i = w->rank_nodes_offset[r]; i < w->rank_nodes_offset[r + 1]; i++) {
        const step_wl_node_t *nd = &w->nodes[i];
        ChakraProtoMsg__Node m;
        chakra_proto_msg__node__init(&m);
        ChakraProtoMsg__AttributeProto at[8], *ap[8];
        size_t na = 0;
        char pg[16];
        m.id = nd->id;
        m.name = (char *)step_workload_name(w, nd->name);
        m.n_data_deps = (size_t)nd->n_deps;
        m.data_deps = nd->n_deps > 0 ? w->deps + nd->deps_offset : NULL;
        if (nd->start_hint_s >= 0)
            m.start_time_micros = (uint64_t)llround(nd->start_hint_s * 1e6);
        attr_init(&at[na], "is_cpu_op");
        at[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
        at[na++].bool_val = 0;
        if (nd->kind == STEP_WL_COMPUTE) {
            m.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE;
            if (nd->duration_s >= 0) {
                m.duration_micros = (uint64_t)llround(nd->duration_s * 1e6);
                attr_init(&at[na], CHAKRA_ATTR_DURATION_S);
                at[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL;
                at[na++].double_val = nd->duration_s;
            }
            if (nd->flops > 0) { /* the feeder reads num_ops as int64_val */
                attr_init(&at[na], "num_ops");
                at[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
                at[na++].int64_val = llround(nd->flops);
            }
            /* tensor_size as uint64_val, always: Chakra's feeder leaves its tensor_size member
             * uninitialised when the attribute is absent */
            attr_init(&at[na], "tensor_size");
            at[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL;
            at[na++].uint64_val = (uint64_t)llround(nd->mem_bytes);
        } else {
            if (nd->kind == STEP_WL_COLL) {
                m.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE;
                attr_init(&at[na], "comm_type");
                at[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
                at[na++].int64_val = coll_type[nd->coll];
                if (nd->group >= 0) { /* ASTRA-sim's pg_name is a decimal group id, "0" = all */
                    snprintf(pg, sizeof pg, "%d", nd->group + 1);
                    attr_init(&at[na], "pg_name");
                    at[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
                    at[na++].string_val = pg;
                }
            } else {
                const int send = nd->kind == STEP_WL_SEND;
                m.type = send ? CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE
                              : CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE;
                attr_init(&at[na], "comm_src");
                at[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
                at[na++].int32_val = send ? r : nd->peer;
                attr_init(&at[na], "comm_dst");
                at[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
                at[na++].int32_val = send ? nd->peer : r;
                attr_init(&at[na], "comm_tag");
                at[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
                at[na++].int32_val = (int32_t)nd->tag;
            }
            attr_init(&at[na], "comm_size");
            at[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
            at[na++].int64_val = llround(nd->comm_bytes);
        }
        for (size_t k = 0; k < na; k++)
            ap[k] = &at[k];
        m.n_attr = na;
        m.attr = ap;
        if ((rc = put_msg(wr, f, path, &m.base)) != TRACE_OK)
            goto done;
    }
done:
    free(ga);
    free(gp);
    free(gl);
    free(gnames);
    free(gdocs);
    return rc;
}

/* A unique temporary file beside dst: dst's directory, ".NAME.XXXXXX". */
static int open_tmp(writer_t *wr, const char *dir, const char *base, out_file_t *of) {
    const size_t dl = strlen(dir), bl = strlen(base);
    of->dst = alloc_malloc(dl + bl + 2);
    of->tmp = alloc_malloc(dl + bl + 10);
    if (!of->dst || !of->tmp) {
        if (of->tmp)
            of->tmp[0] = '\0'; /* nothing to remove */
        snprintf(wr->err, wr->err_size, "out of memory");
        return TRACE_ENOMEM;
    }
    snprintf(of->dst, dl + bl + 2, "%s/%s", dir, base);
    snprintf(of->tmp, dl + bl + 10, "%s/.%s.XXXXXX", dir, base);
    const int fd = mkstemp(of->tmp);
    if (fd < 0) {
        const int rc = io_fail(wr, of->dst, "create a temporary file beside");
        of->tmp[0] = '\0';
        return rc;
    }
    (void)fchmod(fd, 0644);
    if (!(of->f = fdopen(fd, "wb"))) {
        close(fd);
        return io_fail(wr, of->tmp, "open");
    }
    return TRACE_OK;
}

static int close_tmp(writer_t *wr, out_file_t *of) {
    FILE *f = of->f;
    of->f = NULL;
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
        const int rc = io_fail(wr, of->dst, "write");
        fclose(f);
        return rc;
    }
    if (fclose(f) != 0)
        return io_fail(wr, of->dst, "write");
    return TRACE_OK;
}

static int write_groups_json(writer_t *wr, const step_workload_t *w, FILE *f, const char *path) {
    fputs("{", f);
    for (int32_t g = 0; g < w->n_groups; g++) {
        fprintf(f, "%s\n  \"%d\": [", g ? "," : "", g + 1);
        for (int32_t i = 0; i < w->groups[g].n_ranks; i++)
            fprintf(f, "%s%d", i ? ", " : "", w->group_ranks[w->groups[g].ranks_offset + i]);
        fputs("]", f);
    }
    fputs("\n}\n", f);
    return ferror(f) ? io_fail(wr, path, "write") : TRACE_OK;
}

/* Remove DIR/NAME.r.et for r >= n_ranks (a larger workload written there before). */
static void remove_stale(const char *dir, const char *name, int32_t n_ranks) {
    DIR *d = opendir(dir);
    if (!d)
        return;
    const size_t nl = strlen(name);
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)) != NULL) {
        const char *s = e->d_name;
        const size_t sl = strlen(s);
        if (sl < nl + 5 || strncmp(s, name, nl) != 0 || s[nl] != '.' || strcmp(s + sl - 3, ".et") != 0)
            continue;
        int64_t r = 0;
        size_t i = nl + 1;
        for (; i < sl - 3 && s[i] >= '0' && s[i] <= '9' && r < INT32_MAX; i++)
            r = r * 10 + (s[i] - '0');
        if (i != sl - 3 || r < n_ranks)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, s);
        (void)remove(path);
    }
    closedir(d);
}

struct trace_chakra_writer {
    writer_t wr;
    char *dir, *name;
    int32_t n_ranks, next; /* ranks expected, the next one */
    int failed;
    out_file_t *files;      /* [n_ranks + 1]: the ranks', then the groups' */
    step_workload_t groups; /* rank 0's groups (n_ranks, n_groups, groups, group_ranks only) */
};

static int w_fail(char *err, size_t err_size, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int w_fail(char *err, size_t err_size, int rc, const char *fmt, ...) {
    if (err && err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_size, fmt, ap);
        va_end(ap);
        chakra_one_line(err, err_size);
    }
    return rc;
}

static void writer_free(trace_chakra_writer_t *x) {
    for (int32_t i = 0; x->files && i <= x->n_ranks; i++) {
        if (x->files[i].f)
            fclose(x->files[i].f);
        if (x->files[i].tmp && x->files[i].tmp[0])
            (void)remove(x->files[i].tmp);
        free(x->files[i].tmp);
        free(x->files[i].dst);
    }
    free(x->files);
    free(x->dir);
    free(x->name);
    free(x->wr.buf);
    free(x->groups.groups);
    free(x->groups.group_ranks);
    free(x);
}

void trace_chakra_writer_abort(trace_chakra_writer_t *x) {
    if (x)
        writer_free(x);
}

int trace_chakra_writer_open(const char *dir, const char *name, int32_t n_ranks, int groups_complete,
                             trace_chakra_writer_t **out, char *err, size_t err_size) {
    *out = NULL;
    if (!name || !name[0] || strchr(name, '/'))
        return w_fail(err, err_size, TRACE_EINVAL, "name: \"%s\": not a file name (non-empty, without '/')",
                      name ? name : "");
    if (!dir || !dir[0])
        return w_fail(err, err_size, TRACE_EINVAL, "directory: \"\": empty");
    if (n_ranks < 1)
        return w_fail(err, err_size, TRACE_EINVAL, "workload: n_ranks: %d: no ranks", n_ranks);
    trace_chakra_writer_t *x = alloc_calloc(1, sizeof *x);
    if (!x)
        return w_fail(err, err_size, TRACE_ENOMEM, "out of memory");
    x->n_ranks = n_ranks;
    x->wr.groups_complete = groups_complete != 0;
    x->dir = alloc_malloc(strlen(dir) + 1);
    x->name = alloc_malloc(strlen(name) + 1);
    x->files = alloc_calloc((size_t)n_ranks + 1, sizeof *x->files);
    if (!x->dir || !x->name || !x->files) {
        writer_free(x);
        return w_fail(err, err_size, TRACE_ENOMEM, "out of memory");
    }
    strcpy(x->dir, dir);
    strcpy(x->name, name);
    *out = x;
    return TRACE_OK;
}

/* file i's destination base name into buf: NAME.i.et, or NAME.comm_group.json for i = n_ranks */
static void file_base(const trace_chakra_writer_t *x, int32_t i, char *buf, size_t size) {
    if (i < x->n_ranks)
        snprintf(buf, size, "%s.%d.et", x->name, i);
    else
        snprintf(buf, size, "%s.comm_group.json", x->name);
}

static int writer_rank(trace_chakra_writer_t *x, const step_workload_t *w, int32_t r, char *err,
                       size_t err_size) {
    if (x->failed)
        return w_fail(err, err_size, TRACE_EINVAL, "writer: an earlier rank failed");
    if (r != x->next)
        return w_fail(err, err_size, TRACE_EINVAL, "writer: rank %d; expected rank %d (ranks in order)", r,
                      x->next);
    if (!w || w->n_ranks != x->n_ranks)
        return w_fail(err, err_size, TRACE_EINVAL, "workload: n_ranks: %d; expected %d", w ? w->n_ranks : 0,
                      x->n_ranks);
    int rc;
    if (r == 0) { /* the groups, checked once and kept: every file lists them, the json too */
        if ((rc = chakra_check_shape(w, err, err_size)) != TRACE_OK)
            return rc;
        const int32_t ng = w->n_groups;
        int64_t nm = 0;
        for (int32_t g = 0; g < ng; g++)
            if (w->groups[g].ranks_offset + w->groups[g].n_ranks > nm)
                nm = w->groups[g].ranks_offset + w->groups[g].n_ranks;
        x->groups.n_ranks = w->n_ranks;
        x->groups.n_groups = ng;
        x->groups.groups = alloc_malloc((size_t)(ng ? ng : 1) * sizeof *x->groups.groups);
        x->groups.group_ranks = alloc_malloc((size_t)(nm ? nm : 1) * sizeof *x->groups.group_ranks);
        if (!x->groups.groups || !x->groups.group_ranks)
            return w_fail(err, err_size, TRACE_ENOMEM, "out of memory");
        if (ng)
            memcpy(x->groups.groups, w->groups, (size_t)ng * sizeof *w->groups);
        if (nm)
            memcpy(x->groups.group_ranks, w->group_ranks, (size_t)nm * sizeof *w->group_ranks);
    } else {
        int same = w->n_groups == x->groups.n_groups;
        for (int32_t g = 0; same && g < w->n_groups; g++) {
            const step_wl_group_t *a = &w->groups[g], *b = &x->groups.groups[g];
            same = a->n_ranks == b->n_ranks && strncmp(a->name, b->name, sizeof a->name) == 0 &&
                   memcmp(w->group_ranks + a->ranks_offset, x->groups.group_ranks + b->ranks_offset,
                          (size_t)a->n_ranks * sizeof *w->group_ranks) == 0;
        }
        if (!same)
            return w_fail(err, err_size, TRACE_EINVAL, "rank %d: groups: not the groups of rank 0", r);
    }
    if ((rc = chakra_check_rank(w, r, err, err_size)) != TRACE_OK)
        return rc;
    x->wr.err = err;
    x->wr.err_size = err_size;
    struct stat st;
    if (r == 0 && stat(x->dir, &st) != 0) { /* the directory, once the first file is ready to go */
        if (mkdir(x->dir, 0755) != 0)
            return io_fail(&x->wr, x->dir, "create the directory");
    } else if (r == 0 && !S_ISDIR(st.st_mode)) {
        return w_fail(err, err_size, TRACE_EINVAL, "%s: not a directory", x->dir);
    }
    char base[300];
    file_base(x, r, base, sizeof base);
    rc = open_tmp(&x->wr, x->dir, base, &x->files[r]);
    if (rc == TRACE_OK)
        rc = write_rank(&x->wr, w, r, x->files[r].f, x->files[r].dst);
    if (rc == TRACE_OK)
        rc = close_tmp(&x->wr, &x->files[r]);
    if (rc == TRACE_OK)
        x->next++;
    return rc;
}

int trace_chakra_writer_rank(trace_chakra_writer_t *x, const step_workload_t *w, int32_t r, char *err,
                             size_t err_size) {
    const int rc = writer_rank(x, w, r, err, err_size);
    if (rc != TRACE_OK) {
        x->failed = 1;
        if (err_size > 0)
            chakra_one_line(err, err_size);
    }
    return rc;
}

int trace_chakra_writer_close(trace_chakra_writer_t *x, char *err, size_t err_size) {
    int rc = TRACE_OK;
    x->wr.err = err;
    x->wr.err_size = err_size;
    char base[300];
    if (x->failed || x->next != x->n_ranks)
        rc = w_fail(err, err_size, TRACE_EINVAL, "writer: %d of %d ranks written", x->next, x->n_ranks);
    if (rc == TRACE_OK && x->groups.n_groups > 0) {
        file_base(x, x->n_ranks, base, sizeof base);
        rc = open_tmp(&x->wr, x->dir, base, &x->files[x->n_ranks]);
        if (rc == TRACE_OK)
            rc = write_groups_json(&x->wr, &x->groups, x->files[x->n_ranks].f, x->files[x->n_ranks].dst);
        if (rc == TRACE_OK)
            rc = close_tmp(&x->wr, &x->files[x->n_ranks]);
    }
    for (int32_t i = 0; rc == TRACE_OK && i <= x->n_ranks; i++)
        if (x->files[i].tmp && x->files[i].tmp[0]) {
            if (rename(x->files[i].tmp, x->files[i].dst) != 0)
                rc = io_fail(&x->wr, x->files[i].dst, "rename into place");
            else
                x->files[i].tmp[0] = '\0';
        }
    if (rc == TRACE_OK) {
        remove_stale(x->dir, x->name, x->n_ranks);
        if (x->groups.n_groups == 0) { /* an earlier export's groups would no longer match */
            file_base(x, x->n_ranks, base, sizeof base);
            char *p = alloc_malloc(strlen(x->dir) + strlen(base) + 2);
            if (p) {
                sprintf(p, "%s/%s", x->dir, base);
                (void)remove(p);
                free(p);
            }
        }
    }
    if (rc != TRACE_OK && err_size > 0)
        chakra_one_line(err, err_size);
    writer_free(x);
    return rc;
}

int trace_chakra_write(const char *dir, const char *name, const step_workload_t *w, char *err,
                       size_t err_size) {
    trace_chakra_writer_t *x = NULL;
    int rc = trace_chakra_writer_open(dir, name, w && w->n_ranks > 0 ? w->n_ranks : 1, 0, &x, err, err_size);
    if (rc == TRACE_OK)
        rc = trace_chakra_check(w, err, err_size);
    if (rc == TRACE_OK) { /* marked exactly when every group is used and no collective is of every rank */
        uint8_t *used = alloc_calloc((size_t)w->n_groups + 1, 1);
        if (!used)
            rc = w_fail(err, err_size, TRACE_ENOMEM, "out of memory");
        int complete = used != NULL;
        for (int64_t i = 0; used && i < w->rank_nodes_offset[w->n_ranks]; i++)
            if (w->nodes[i].kind == STEP_WL_COLL) {
                if (w->nodes[i].group < 0)
                    complete = 0;
                else
                    used[w->nodes[i].group] = 1;
            }
        for (int32_t g = 0; used && g < w->n_groups; g++)
            complete &= used[g];
        free(used);
        x->wr.groups_complete = complete;
    }
    for (int32_t r = 0; rc == TRACE_OK && r < w->n_ranks; r++)
        rc = trace_chakra_writer_rank(x, w, r, err, err_size);
    if (rc == TRACE_OK)
        return trace_chakra_writer_close(x, err, err_size);
    trace_chakra_writer_abort(x);
    return rc;
}
