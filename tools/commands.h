/* commands.h - the commands behind cli_main: each resolves a scenario, runs the model and prints.
 *
 * Contract: the scenario is loaded (defaults, file, options) by cli.c; a command resolves it, writes
 * its result to out and returns an exit code (scenario.h CLI_*), filling diag with one line on
 * failure. Commands never print to stderr themselves, except warnings through the caller's err.
 */
#ifndef STEPSIM_COMMANDS_H
#define STEPSIM_COMMANDS_H

#include <stdio.h>

#include "scenario.h"

/* Flags that are not scenario fields. */
typedef struct cli_opts {
    int json;   /* --json */
    int layers; /* --layers (estimate) */
    int top_k;  /* --top K (search), default 10 */
} cli_opts_t;

int cmd_estimate(scenario_t *scn, const cli_opts_t *opts, FILE *out, cli_diag_t *diag);
int cmd_search(scenario_t *scn, const cli_opts_t *opts, FILE *out, cli_diag_t *diag);

#endif
