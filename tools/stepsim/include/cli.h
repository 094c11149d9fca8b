/* cli.h - the stepsim command line as a library: parse argv, run a command, return the exit code.
 *
 * Contract
 * - cli_main() runs one stepsim invocation (argv[0] is the program name, argv[1] the command). Results
 *   go to out (with --json: exactly one JSON object and nothing else), diagnostics to err (one line
 *   per error). Neither stream is closed. Nothing in tools/ calls exit(); main.c returns this code.
 * - Exit codes (docs/cli.md): 0 success; 1 runtime failure (I/O, out of memory); 2 bad usage or
 *   invalid input (one line on err naming the file or option, the JSON path, the value and what is
 *   allowed); 3 valid input with no result (degrees whose product is not the GPU count, a search
 *   where nothing fits).
 * - Reentrant: no globals (but the table of live temporary output files, output/outfile.h, which a
 *   signal handler reads); two calls in one process are independent.
 * - Output files (--trace, --graphml, --dot, --csv, --plot) are written whole or not at all: a unique
 *   temporary file beside the destination, renamed into place. cli_install_signal_handlers() (the
 *   executable calls it once, before cli_main) makes SIGINT, SIGTERM and SIGHUP remove the temporary
 *   files of the run before the process dies of the signal.
 */
#ifndef STEPSIM_CLI_H
#define STEPSIM_CLI_H

#include <stdio.h>

int cli_main(int argc, char **argv, FILE *out, FILE *err);

void cli_install_signal_handlers(void);

#endif
