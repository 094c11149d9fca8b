/* csv.h - a small reader for the comma-separated tables stepsim consumes (reference results,
 * measured runs): one header row, fields looked up by column name; RFC 4180 quoting: double quotes
 * group commas and line breaks (a quoted field may span lines) and "" inside quotes is a quote.
 * Contract: csv_load reads the whole file; csv_free releases it (NULL-safe). Fields are
 * NUL-terminated strings owned by the table; a missing or empty cell reads as "". */
#ifndef STEPSIM_CSV_H
#define STEPSIM_CSV_H

#include <stddef.h>

typedef struct csv_table {
    char *text;        /* the file's bytes, cut into fields in place */
    char ***rows;      /* rows[r][c], r = 0 is the header */
    size_t *widths;    /* number of fields in each row */
    size_t n_rows;     /* including the header */
    size_t error_line; /* after a failed csv_load: the line (from 1) of the record whose quote is
                          never closed, or 0 (EINVAL with 0: no header, an empty file) */
} csv_table_t;

/* Load path. Return 0, or -1 with errno set: I/O errors, ENOMEM, EINVAL (no header, or a quote
 * never closed: t->error_line names the line where its record starts), EFBIG (more than
 * READFILE_CSV_LIMIT_BYTES, readfile.h). */
int csv_load(const char *path, csv_table_t *t);
void csv_free(csv_table_t *t);
/* Split one line in place into at most max_fields fields (the line ends at its first \r or \n, so
 * a field cannot span lines here), with the quoting rules above; fields[i] point into line. Return the count,
 * or -1 for unbalanced quotes or more than max_fields fields. */
int csv_split_line(char *line, char **fields, int max_fields);
/* Column index of name in the header, or -1. */
int csv_column(const csv_table_t *t, const char *name);
/* Cell of data row r (1-based: row 1 is the first data row) in column c; "" if absent. */
const char *csv_cell(const csv_table_t *t, size_t r, int c);

#endif
