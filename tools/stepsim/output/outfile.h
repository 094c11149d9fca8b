/* outfile.h - every output file of stepsim (--trace, --graphml, --dot, --csv, --plot) is written whole
 * or not at all.
 *
 * Contract
 * - A file is written to a unique temporary file beside its destination ("DIR/.NAME.XXXXXX", made
 *   by mkstemp, so two runs writing the same path never share one, and on the same file system, so
 *   the rename is atomic), synced, and renamed over the destination on success; on any failure the
 *   temporary file is removed and the destination is untouched.
 * - Signals: outfile_install_signal_handlers (called once by the executable, not by cli_main) makes
 *   SIGINT, SIGTERM and SIGHUP remove every live temporary file, then die of the same signal
 *   (a signal the process ignores stays ignored). The handler only calls unlink(), sigaction() and
 *   raise() (async-signal-safe) and reads a fixed table.
 * - The one mutable global of the command line: that table of live temporary paths
 *   (OUTFILE_MAX_LIVE slots of OUTFILE_PATH_MAX bytes), filled before the first byte is written and
 *   cleared after the rename or removal; a signal handler can reach nothing else. Not thread-safe:
 *   output files are written by the main thread only.
 * - Errors (one line in d, naming the option and the destination): a temporary file that cannot be
 *   created (missing or unwritable directory, path too long, every slot in use) is CLI_EUSAGE (exit
 *   2), and so is a destination that is a directory; a failed write, sync or rename is CLI_ERUNTIME
 *   (exit 1).
 */
#ifndef STEPSIM_OUTFILE_H
#define STEPSIM_OUTFILE_H

#include <stdio.h>

#include "scenario.h"

enum { OUTFILE_MAX_LIVE = 8, OUTFILE_PATH_MAX = 4096 };

typedef struct outfile {
    const char *option; /* "--trace": borrowed, for messages */
    const char *path;   /* the destination: borrowed */
    int slot;           /* in the table; -1 when not live */
    FILE *f;            /* open for writing (outfile_open), or NULL (outfile_reserve) */
} outfile_t;

/* Create the temporary file for path and open it for writing (of->f). */
int outfile_open(outfile_t *of, const char *option, const char *path, cli_diag_t *d);

/* Create the temporary file for path, empty and closed, for a writer that opens it by name
 * (outfile_tmp_path): the trace writer, gnuplot. */
int outfile_reserve(outfile_t *of, const char *option, const char *path, cli_diag_t *d);

/* The temporary file's path (valid while of is live). */
const char *outfile_tmp_path(const outfile_t *of);

/* Flush and sync the temporary file (closing of->f if open), rename it over the destination and
 * forget it. On failure the temporary file is removed. */
int outfile_commit(outfile_t *of, cli_diag_t *d);

/* Close and remove the temporary file; the destination is untouched. Accepts a non-live of. */
void outfile_discard(outfile_t *of);

/* Install the SIGINT/SIGTERM/SIGHUP handler that removes live temporary files. */
void outfile_install_signal_handlers(void);

#endif
