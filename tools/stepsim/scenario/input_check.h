/* input_check.h - the checks every input file passes before its keys are read: a size limit per
 * kind of file (tools/common/readfile.h), no duplicate keys in a JSON object, UTF-8 text.
 * Contract: each returns CLI_OK, or an error with one line in d naming the file: CLI_EUSAGE for a
 * file that is too large, missing or unreadable as input, a duplicate key or invalid UTF-8 (with the
 * JSON path), CLI_ERUNTIME for a read error or no memory. */
#ifndef STEPSIM_INPUT_CHECK_H
#define STEPSIM_INPUT_CHECK_H

#include <stddef.h>

#include "scenario.h"

/* Read path (kind names it: "scenario", "grid") into *out (caller frees), at most limit_bytes. */
int input_read_file(const char *path, const char *kind, size_t limit_bytes, char **out, size_t *len,
                    cli_diag_t *d);
/* Refuse path if it holds more than limit_bytes (a file another reader opens, such as GraphML); a
 * file that cannot be opened passes, for that reader to name the error in its own words. */
int input_check_size(const char *path, const char *kind, size_t limit_bytes, cli_diag_t *d);
/* The one line for a file of size_bytes (-1: unknown, more than the limit) above limit_bytes. */
int input_fail_too_large(const char *path, const char *kind, long long size_bytes, size_t limit_bytes,
                         cli_diag_t *d);
/* Every object of root has each key once, and every key and string is UTF-8; path names the file. */
int input_check_json(const cJSON *root, const char *path, cli_diag_t *d);
/* Every cell of a CSV table (tools/common/csv.h) is UTF-8; path names the file, the line names the
 * row (row 1 is the first data row) and the column. */
struct csv_table;
int input_check_csv(const struct csv_table *t, const char *path, cli_diag_t *d);

#endif
