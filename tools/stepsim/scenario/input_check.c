/* input_check.c - size limits, duplicate JSON keys and UTF-8 of input files (see input_check.h).
 * cJSON keeps every member of an object, duplicates included, and the loaders read the first: a
 * second value for a key would be ignored without a word, so it is refused here, once for the whole
 * document, with its JSON path. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "csv.h"
#include "input_check.h"
#include "readfile.h"
#include "utf8.h"

int input_fail_too_large(const char *path, const char *kind, long long size_bytes, size_t limit_bytes,
                         cli_diag_t *d) {
    char lim[32];
    readfile_limit_text(limit_bytes, lim, sizeof lim);
    if (size_bytes >= 0)
        return cli_fail(d, CLI_EUSAGE, "%s: %s file too large (%lld bytes); allowed: at most %s (%zu bytes)",
                        path, kind, size_bytes, lim, limit_bytes);
    return cli_fail(d, CLI_EUSAGE, "%s: %s file too large (more than %zu bytes); allowed: at most %s", path,
                    kind, limit_bytes, lim);
}

static int fail_errno(const char *path, const char *kind, int e, cli_diag_t *d) {
    if (e == ENOMEM)
        return cli_fail(d, CLI_ERUNTIME, "%s: out of memory", path);
    if (e == EIO)
        return cli_fail(d, CLI_ERUNTIME, "%s: read error", path);
    return cli_fail(d, CLI_EUSAGE, "%s: cannot open %s file: %s; allowed: a readable %s file", path, kind,
                    strerror(e), strcmp(kind, "GraphML") == 0 ? "GraphML" : "JSON");
}

int input_read_file(const char *path, const char *kind, size_t limit_bytes, char **out, size_t *len,
                    cli_diag_t *d) {
    long long size = -1;
    const int rc = readfile_bounded(path, limit_bytes, out, len, &size);
    if (rc == READFILE_TOO_LARGE)
        return input_fail_too_large(path, kind, size, limit_bytes, d);
    if (rc != READFILE_OK)
        return fail_errno(path, kind, errno, d);
    return CLI_OK;
}

int input_check_size(const char *path, const char *kind, size_t limit_bytes, cli_diag_t *d) {
    long long size = -1;
    const int rc = readfile_check_size(path, limit_bytes, &size);
    if (rc == READFILE_TOO_LARGE)
        return input_fail_too_large(path, kind, size, limit_bytes, d);
    if (rc != READFILE_OK && errno == ENOMEM)
        return fail_errno(path, kind, errno, d);
    return CLI_OK; /* a file that cannot be opened: the reader that opens it says so */
}

/* ---- duplicate keys and UTF-8 ---------------------------------------------------------------- */

typedef struct {
    const char *file;
    cli_diag_t *d;
} check_t;

typedef struct {
    const char *key;
    size_t index;
} member_t;

static int by_key_then_index(const void *a, const void *b) {
    const member_t *x = a, *y = b;
    const int c = strcmp(x->key, y->key);
    if (c)
        return c;
    return (x->index > y->index) - (x->index < y->index);
}

/* path + '.' + key (or [i]) into out; a path longer than out is cut (it only names the place). */
static void child_path(const char *path, const char *key, long index, char *out, size_t size) {
    if (key)
        snprintf(out, size, "%s%s%s", path, path[0] ? "." : "", key);
    else
        snprintf(out, size, "%s[%ld]", path, index);
}

static int bad_utf8(const check_t *c, const char *path, const char *what, const char *s) {
    const size_t n = strlen(s), at = utf8_invalid_at(s, n);
    if (at == n)
        return CLI_OK;
    return cli_fail(c->d, CLI_EUSAGE,
                    "%s: %s: invalid UTF-8 in %s (byte 0x%02x at offset %zu); allowed: UTF-8 text", c->file,
                    path[0] ? path : "top level", what, (unsigned)(unsigned char)s[at], at);
}

/* Keys of obj are UTF-8; a duplicate is named by its first repeat in document order. */
static int check_object(const check_t *c, const cJSON *obj, const char *path) {
    size_t n = 0;
    for (const cJSON *m = obj->child; m; m = m->next) {
        int rc = bad_utf8(c, path, "a key", m->string ? m->string : "");
        if (rc)
            return rc;
        n++;
    }
    if (n < 2)
        return CLI_OK;
    member_t *ms = alloc_malloc(n * sizeof *ms);
    if (!ms)
        return cli_fail(c->d, CLI_ERUNTIME, "%s: out of memory", c->file);
    size_t i = 0;
    for (const cJSON *m = obj->child; m; m = m->next, i++)
        ms[i] = (member_t){m->string ? m->string : "", i};
    qsort(ms, n, sizeof *ms, by_key_then_index);
    size_t dup = n;
    const char *key = NULL;
    for (i = 1; i < n; i++)
        if (strcmp(ms[i].key, ms[i - 1].key) == 0 && ms[i].index < dup) {
            dup = ms[i].index;
            key = ms[i].key;
        }
    int rc = CLI_OK;
    if (key) {
        char where[256];
        child_path(path, key, 0, where, sizeof where);
        rc = cli_fail(c->d, CLI_EUSAGE, "%s: %s: duplicate key \"%s\"; allowed: each key once in an object",
                      c->file, where, key);
    }
    free(ms);
    return rc;
}

static int check_value(const check_t *c, const cJSON *v, const char *path) {
    if (cJSON_IsString(v))
        return bad_utf8(c, path, "the string", v->valuestring ? v->valuestring : "");
    int rc = CLI_OK;
    if (cJSON_IsObject(v))
        rc = check_object(c, v, path);
    long i = 0;
    for (const cJSON *m = v->child; m && !rc && (cJSON_IsObject(v) || cJSON_IsArray(v)); m = m->next, i++) {
        char sub[256];
        child_path(path, cJSON_IsObject(v) ? m->string : NULL, i, sub, sizeof sub);
        rc = check_value(c, m, sub);
    }
    return rc;
}

int input_check_json(const cJSON *root, const char *path, cli_diag_t *d) {
    const check_t c = {path, d};
    return check_value(&c, root, "");
}

int input_check_csv(const csv_table_t *t, const char *path, cli_diag_t *d) {
    for (size_t r = 0; r < t->n_rows; r++)
        for (size_t c = 0; c < t->widths[r]; c++) {
            const char *s = t->rows[r][c];
            const size_t n = strlen(s), at = utf8_invalid_at(s, n);
            if (at == n)
                continue;
            char where[64];
            if (r == 0)
                snprintf(where, sizeof where, "header, column %zu", c + 1);
            else
                snprintf(where, sizeof where, "row %zu, column %s", r,
                         c < t->widths[0] ? t->rows[0][c] : "(beyond the header)");
            return cli_fail(d, CLI_EUSAGE,
                            "%s: %s: invalid UTF-8 (byte 0x%02x at offset %zu); allowed: UTF-8 text", path,
                            where, (unsigned)(unsigned char)s[at], at);
        }
    return CLI_OK;
}
