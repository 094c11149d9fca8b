/* csv.c - whole-file CSV reader with RFC 4180 quoting (see csv.h). Records end in \n or \r\n outside
 * quotes; blank lines are skipped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "readfile.h"

static char *slurp(const char *path) {
    char *buf = NULL;
    long long size = -1;
    const int rc = readfile_bounded(path, READFILE_CSV_LIMIT_BYTES, &buf, NULL, &size);
    if (rc == READFILE_TOO_LARGE)
        errno = EFBIG;
    return rc == READFILE_OK ? buf : NULL;
}

/* Cut one record (NUL-terminated, its line end removed) into at most max_fields fields in place:
 * a double quote opens or closes quoting anywhere in a field, "" inside quotes is a quote, and a
 * comma or line break inside quotes is part of the field. Return the count, or -1 for unbalanced
 * quotes or more than max_fields fields. */
static int split_fields(char *src, char **fields, int max_fields) {
    int count = 0;
    char *dst = src;
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

int csv_split_line(char *line, char **fields, int max_fields) {
    line[strcspn(line, "\r\n")] = '\0';
    return split_fields(line, fields, max_fields);
}

/* The record at *pos: its end found (a line break outside quotes, or the end of the text), cut
 * there, and its fields split into *out (allocated). *pos moves past it and *line past its line
 * breaks. Return the field count, 0 for a blank line, or -1 with errno ENOMEM or EINVAL (a quote
 * left open: it runs to the end of the file). */
static int record(char **pos, size_t *line, char ***out) {
    char *start = *pos, *p = start;
    size_t n = 1;
    int quoted = 0;
    for (; *p && (quoted || *p != '\n'); p++) {
        if (*p == '"')
            quoted = !quoted;
        else if (*p == ',' && !quoted)
            n++;
        else if (*p == '\n')
            (*line)++;
    }
    if (quoted) {
        errno = EINVAL;
        return -1;
    }
    *pos = *p ? p + 1 : p;
    if (*p)
        (*line)++;
    *p = '\0';
    if (p > start && p[-1] == '\r')
        p[-1] = '\0';
    if (!*start)
        return 0;
    char **f = malloc(n * sizeof *f);
    if (!f) {
        errno = ENOMEM;
        return -1;
    }
    const int got = split_fields(start, f, (int)n);
    if (got < 0) { /* cannot happen: the scan above counted the quotes and the commas */
        free(f);
        errno = EINVAL;
        return -1;
    }
    *out = f;
    return got;
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
    size_t line = 1;
    for (char *pos = t->text; *pos;) {
        const size_t first = line;
        const int got = record(&pos, &line, &t->rows[t->n_rows]);
        if (got < 0) {
            const int err = errno;
            csv_free(t);
            t->error_line = err == EINVAL ? first : 0;
            errno = err;
            return -1;
        }
        if (got > 0)
            t->widths[t->n_rows++] = (size_t)got;
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
