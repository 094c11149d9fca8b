/* csv.h - a small reader for the comma-separated tables stepsim consumes (reference results,
 * measured runs): one header row, fields looked up by column name; double quotes group commas and
 * "" inside quotes is a quote (RFC 4180, without line breaks inside fields).
 * Contract: csv_load reads the whole file; csv_free releases it (NULL-safe). Fields are
 * NUL-terminated strings owned by the table; a missing or empty cell reads as "". */
#ifndef STEPSIM_CSV_H
#define STEPSIM_CSV_H

#include <stddef.h>

typedef struct csv_table {
    char *text;     /* the file's bytes, cut into fields in place */
    char ***rows;   /* rows[r][c], r = 0 is the header */
    size_t *widths; /* number of fields in each row */
    size_t n_rows;  /* including the header */
} csv_table_t;

/* Load path. Return 0, or -1 with errno set: I/O errors, ENOMEM, EINVAL (no header, or a line with
 * unbalanced quotes), EFBIG (more than READFILE_CSV_LIMIT_BYTES, readfile.h). */
int csv_load(const char *path, csv_table_t *t);
void csv_free(csv_table_t *t);
/* Split one line in place into at most max_fields fields (a trailing \r or \n is dropped), with
 * the quoting rules above; fields[i] point into line. Return the count, or -1 for unbalanced quotes
 * or more than max_fields fields. */
int csv_split_line(char *line, char **fields, int max_fields);
/* Column index of name in the header, or -1. */
int csv_column(const csv_table_t *t, const char *name);
/* Cell of data row r (1-based: row 1 is the first data row) in column c; "" if absent. */
const char *csv_cell(const csv_table_t *t, size_t r, int c);

#endif
