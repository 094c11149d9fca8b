/* sweep_test_util.h - helpers of the sweep tests: scratch files, whole files, lines as sorted sets. */
#ifndef STEPSIM_SWEEP_TEST_UTIL_H
#define STEPSIM_SWEEP_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

/* A scratch path in the test's working directory (the build tree), unique per process. */
static inline void sweep_scratch(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "sweep-%ld-%s", (long)getpid(), name);
}

/* The whole file (NUL-terminated, caller frees), or NULL if it does not exist. */
static inline char *sweep_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *bigger = realloc(buf, cap * 2);
        if (!bigger)
            free(buf);
        buf = bigger;
        cap *= 2;
    }
    fclose(f);
    if (!buf)
        abort();
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static inline void sweep_write_file(const char *path, const char *text, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(text, 1, n, f) != n || fclose(f) != 0)
        abort();
}

static int sweep_cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The lines of text (each without its '\n'), sorted; text is modified. Caller frees the array. */
static inline char **sweep_sorted_lines(char *text, size_t *count) {
    size_t n = 0, cap = 64;
    char **v = malloc(cap * sizeof *v);
    for (char *p = text; v && *p;) {
        char *nl = strchr(p, '\n');
        if (!nl)
            break; /* a torn last line is not a line */
        *nl = '\0';
        if (n == cap) {
            char **bigger = realloc(v, 2 * cap * sizeof *v);
            if (!bigger)
                free(v);
            v = bigger;
            cap *= 2;
        }
        if (v)
            v[n++] = p;
        p = nl + 1;
    }
    if (!v)
        abort();
    qsort(v, n, sizeof *v, sweep_cmp_str);
    *count = n;
    return v;
}

/* 1 when the two files hold the same lines, order aside; prints the first difference otherwise. */
static inline int sweep_same_line_sets(const char *path_a, const char *path_b) {
    char *a = sweep_read_file(path_a, NULL), *b = sweep_read_file(path_b, NULL);
    if (!a || !b) {
        fprintf(stderr, "missing %s\n", a ? path_b : path_a);
        free(a);
        free(b);
        return 0;
    }
    size_t na, nb;
    char **la = sweep_sorted_lines(a, &na), **lb = sweep_sorted_lines(b, &nb);
    int same = na == nb;
    for (size_t i = 0; same && i < na; i++)
        if (strcmp(la[i], lb[i]) != 0) {
            fprintf(stderr, "line sets differ:\n  %.200s\n  %.200s\n", la[i], lb[i]);
            same = 0;
        }
    if (na != nb)
        fprintf(stderr, "%s: %zu lines, %s: %zu lines\n", path_a, na, path_b, nb);
    free(la);
    free(lb);
    free(a);
    free(b);
    return same;
}

/* The number of complete lines of a file and of distinct "id" members among them. */
static inline void sweep_count_ids(const char *path, size_t *lines, size_t *distinct) {
    char *text = sweep_read_file(path, NULL);
    if (!text)
        abort();
    size_t n;
    char **v = sweep_sorted_lines(text, &n);
    char **ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids)
        abort();
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_Parse(v[i]);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
        ids[i] = strdup(cJSON_IsString(id) ? id->valuestring : "");
        cJSON_Delete(o);
    }
    qsort(ids, n, sizeof *ids, sweep_cmp_str);
    *lines = n;
    *distinct = 0;
    for (size_t i = 0; i < n; i++)
        *distinct += i == 0 || strcmp(ids[i], ids[i - 1]) != 0;
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    free(v);
    free(text);
}

#endif
