/* csv.c - whole-file CSV reader with RFC 4180 quoting (see csv.h). Lines end in \n or \r\n; blank lines
 * are skipped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "csv.h"

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0, got;
    char chunk[65536];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + got + 1 > cap) {
            cap = (len + got + 1) * 2;
            char *nb = alloc_realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            buf = nb;
        }
        memcpy(buf + len, chunk, got);
        len += got;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    if (!buf && !(buf = alloc_calloc(1, 1)))
        return NULL;
    buf[len] = '\0';
    return buf;
}

int csv_split_line(char *line, char **fields, int max_fields) {
    int count = 0;
    char *src = line, *dst = line;
    line[strcspn(line, "\r\n")] = '\0';
    for (;;) {
        if (count == max_fields)
            return -1;
        fields[count++] = dst;
        int quoted = 0;
        while (*src != '\0' && (quoted || *src != ',')) {
            if (*src == '"' && quoted && src[1] == '"') {
                *dst++ = '"';
                src += 2;
            } else if (*src == '"') {
                quoted = !quoted;
                src++;
            } else {
                *dst++ = *src++;
            }
        }
        if (quoted)
            return -1;
        const int more = *src == ',';
        *dst++ = '\0';
        if (!more)
            return count;
        src++;
    }
}

/* Split one line into fields (allocated: commas bound the count); return the count, or 0 with errno
 * ENOMEM or EINVAL (unbalanced quotes). */
static size_t split(char *line, char ***out) {
    size_t n = 1;
    for (char *p = line; *p; p++)
        n += *p == ',';
    char **f = alloc_malloc(n * sizeof *f);
    if (!f) {
        errno = ENOMEM;
        return 0;
    }
    const int got = csv_split_line(line, f, (int)n);
    if (got < 0) {
        free(f);
        errno = EINVAL;
        return 0;
    }
    *out = f;
    return (size_t)got;
}

int csv_load(const char *path, csv_table_t *t) {
    memset(t, 0, sizeof *t);
    if (!(t->text = slurp(path)))
        return -1;
    size_t cap = 1;
    for (char *p = t->text; *p; p++)
        cap += *p == '\n';
    t->rows = alloc_calloc(cap, sizeof *t->rows);
    t->widths = alloc_calloc(cap, sizeof *t->widths);
    if (!t->rows || !t->widths) {
        csv_free(t);
        errno = ENOMEM;
        return -1;
    }
    for (char *line = t->text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        size_t len = strlen(line);
        if (len > 0 && line[len - 1] == '\r')
            line[--len] = '\0';
        if (len == 0)
            continue;
        t->widths[t->n_rows] = split(line, &t->rows[t->n_rows]);
        if (t->widths[t->n_rows] == 0) {
            const int err = errno;
            csv_free(t);
            errno = err;
            return -1;
        }
        t->n_rows++;
    }
    if (t->n_rows == 0) {
        csv_free(t);
        errno = EINVAL;
        return -1;
    }
    return 0;
}

void csv_free(csv_table_t *t) {
    if (!t)
        return;
    for (size_t r = 0; t->rows && r < t->n_rows; r++)
        free(t->rows[r]);
    free(t->rows);
    free(t->widths);
    free(t->text);
    memset(t, 0, sizeof *t);
}

int csv_column(const csv_table_t *t, const char *name) {
    for (size_t c = 0; t->n_rows > 0 && c < t->widths[0]; c++)
        if (strcmp(t->rows[0][c], name) == 0)
            return (int)c;
    return -1;
}

const char *csv_cell(const csv_table_t *t, size_t r, int c) {
    if (r >= t->n_rows || c < 0 || (size_t)c >= t->widths[r])
        return "";
    return t->rows[r][c];
}
