/* readfile.h - read a whole input file, but never more than a stated limit.
 * Contract: readfile_bounded reads path into a NUL-terminated buffer (caller frees) if it holds at
 * most limit_bytes bytes. A larger file is refused without reading it (a regular file, by its size)
 * or after limit_bytes + 1 bytes (a pipe or device that never ends, such as /dev/zero). The limits
 * of each kind of input file are the constants below (docs/cli.md, "Input files"). */
#ifndef STEPSIM_READFILE_H
#define STEPSIM_READFILE_H

#include <stddef.h>

#define READFILE_JSON_LIMIT_BYTES ((size_t)16 << 20)     /* scenario, topology, grid, model config */
#define READFILE_CSV_LIMIT_BYTES ((size_t)64 << 20)      /* measured runs */
#define READFILE_GRAPHML_LIMIT_BYTES ((size_t)256 << 20) /* GraphML topologies */
#define READFILE_JOURNAL_LIMIT_BYTES ((size_t)1 << 30)   /* sweep output read back by --resume */

enum { READFILE_OK = 0, READFILE_ERRNO = -1, READFILE_TOO_LARGE = 1 };

/* READFILE_OK with *out (and *len if not NULL); READFILE_ERRNO with errno set (ENOENT, EISDIR,
 * ENOMEM, EIO, ...); READFILE_TOO_LARGE with *size_bytes the file's size, or -1 when only "more
 * than limit_bytes" is known. */
int readfile_bounded(const char *path, size_t limit_bytes, char **out, size_t *len, long long *size_bytes);
/* Without reading it into memory: READFILE_OK if path holds at most limit_bytes bytes, else as above
 * (a non-regular file is read and counted up to limit_bytes + 1 bytes). */
int readfile_check_size(const char *path, size_t limit_bytes, long long *size_bytes);
/* "16 MiB" for limit_bytes into buf. */
const char *readfile_limit_text(size_t limit_bytes, char *buf, size_t size);

#endif
