/* csv.c - whole-file CSV reader without quoting (see csv.h). Lines end in \n or \r\n; blank lines
 * are skipped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
            char *nb = realloc(buf, cap);
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
    if (!buf && !(buf = calloc(1, 1)))
        return NULL;
    buf[len] = '\0';
    return buf;
}

/* Split one line in place into fields; return the count, fill *out (allocated). */
static size_t split(char *line, char ***out) {
    size_t n = 1;
    for (char *p = line; *p; p++)
        n += *p == ',';
    char **f = malloc(n * sizeof *f);
    if (!f)
        return 0;
    size_t i = 0;
    f[i++] = line;
    for (char *p = line; *p; p++) {
        if (*p == ',') {
            *p = '\0';
            f[i++] = p + 1;
        }
    }
    *out = f;
    return n;
}

int csv_load(const char *path, csv_table_t *t) {
    memset(t, 0, sizeof *t);
    if (!(t->text = slurp(path)))
        return -1;
    size_t cap = 1;
    for (char *p = t->text; *p; p++)
        cap += *p == '\n';
    t->rows = calloc(cap, sizeof *t->rows);
    t->widths = calloc(cap, sizeof *t->widths);
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
            csv_free(t);
            errno = ENOMEM;
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
