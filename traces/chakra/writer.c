/* writer.c - a step_workload_t as Chakra execution traces, one file per rank, with the attributes
 * Chakra's feeder and ASTRA-sim's workload layer read (docs/workloads.md). Every file is written to
 * a temporary file beside its destination; all are renamed into place once all are complete. */
#include <dirent.h>
#include <errno.h>
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
    if (w->n_groups > 0) {
        const size_t n = (size_t)w->n_groups;
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

static int write_all(const char *dir, const char *name, const step_workload_t *w, char *err, size_t err_size);

int trace_chakra_write(const char *dir, const char *name, const step_workload_t *w, char *err,
                       size_t err_size) {
    const int rc = write_all(dir, name, w, err, err_size);
    if (rc != TRACE_OK && err_size > 0)
        chakra_one_line(err, err_size); /* a name or path may hold a newline */
    return rc;
}

static int write_all(const char *dir, const char *name, const step_workload_t *w, char *err,
                     size_t err_size) {
    writer_t wr = {.err = err, .err_size = err_size};
    if (!name || !name[0] || strchr(name, '/')) {
        snprintf(err, err_size, "name: \"%s\": not a file name (non-empty, without '/')", name ? name : "");
        return TRACE_EINVAL;
    }
    if (!dir || !dir[0]) {
        snprintf(err, err_size, "directory: \"\": empty");
        return TRACE_EINVAL;
    }
    int rc = trace_chakra_check(w, err, err_size);
    if (rc != TRACE_OK)
        return rc;
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (mkdir(dir, 0755) != 0)
            return io_fail(&wr, dir, "create the directory");
    } else if (!S_ISDIR(st.st_mode)) {
        snprintf(err, err_size, "%s: not a directory", dir);
        return TRACE_EINVAL;
    }
    const int32_t n_files = w->n_ranks + (w->n_groups > 0 ? 1 : 0);
    out_file_t *files = alloc_calloc((size_t)n_files, sizeof *files);
    if (!files) {
        snprintf(err, err_size, "out of memory");
        return TRACE_ENOMEM;
    }
    const size_t bl = strlen(name) + 32;
    char *base = alloc_malloc(bl);
    if (!base) {
        snprintf(err, err_size, "out of memory");
        rc = TRACE_ENOMEM;
    }
    for (int32_t i = 0; rc == TRACE_OK && i < n_files; i++) {
        if (i < w->n_ranks)
            snprintf(base, bl, "%s.%d.et", name, i);
        else
            snprintf(base, bl, "%s.comm_group.json", name);
        rc = open_tmp(&wr, dir, base, &files[i]);
        if (rc == TRACE_OK)
            rc = i < w->n_ranks ? write_rank(&wr, w, i, files[i].f, files[i].dst)
                                : write_groups_json(&wr, w, files[i].f, files[i].dst);
        if (rc == TRACE_OK)
            rc = close_tmp(&wr, &files[i]);
    }
    for (int32_t i = 0; rc == TRACE_OK && i < n_files; i++)
        if (rename(files[i].tmp, files[i].dst) != 0)
            rc = io_fail(&wr, files[i].dst, "rename into place");
        else
            files[i].tmp[0] = '\0';
    if (rc == TRACE_OK) {
        remove_stale(dir, name, w->n_ranks);
        if (w->n_groups == 0) { /* an earlier export's groups would no longer match */
            snprintf(base, bl, "%s.comm_group.json", name);
            char *p = alloc_malloc(strlen(dir) + bl + 2);
            if (p) {
                sprintf(p, "%s/%s", dir, base);
                (void)remove(p);
                free(p);
            }
        }
    }
    for (int32_t i = 0; i < n_files; i++) {
        if (files[i].f)
            fclose(files[i].f);
        if (files[i].tmp && files[i].tmp[0])
            (void)remove(files[i].tmp);
        free(files[i].tmp);
        free(files[i].dst);
    }
    free(files);
    free(base);
    free(wr.buf);
    return rc;
}
