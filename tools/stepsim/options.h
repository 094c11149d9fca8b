/* options.h - the one option table of every stepsim command, its parser and the help made from it.
 *
 * Contract
 * - cli_options() lists every option of every command once: its name, argument metavar (NULL: a
 *   flag), the commands that take it (a mask of CLI_CMD_BIT), the default as help shows it, the help
 *   line, and what it sets: a scenario field (applied with scenario_set_option, in command-line
 *   order, after the scenario file) or one typed command option (cli_opt_t). An option name has one
 *   entry per meaning; two entries share a name only for different commands (collective's --gpus
 *   and --placement count and place its groups, not the training job's).
 * - cli_parse() reads argv[2..] of one command: `--name value`, `--name=value`, flags, and one
 *   positional argument (the scenario file; sweep's grid). Errors are one line, exit 2: unknown
 *   options with a did-you-mean, options of other commands ("not an option of X"), missing values,
 *   values given to flags, a second positional argument. --help / -h anywhere asks for the help.
 * - cli_help() prints a command's help in the one style: usage line, description, the table's
 *   entries of the command ("options (default in brackets):"), then the command's reference text.
 * - cli_apply_scenario() loads the defaults, the file and the scenario options into a scenario.
 */
#ifndef STEPSIM_OPTIONS_H
#define STEPSIM_OPTIONS_H

#include <stdio.h>

#include "scenario.h"

typedef enum cli_cmd {
    CLI_CMD_ESTIMATE,
    CLI_CMD_SEARCH,
    CLI_CMD_TOPO,
    CLI_CMD_COLLECTIVE,
    CLI_CMD_RUN,
    CLI_CMD_COMPARE,
    CLI_CMD_VALIDATE,
    CLI_CMD_SWEEP,
    CLI_CMD_COUNT
} cli_cmd_t;

#define CLI_CMD_BIT(c) (1u << (c))

/* Typed command options (not scenario fields). */
typedef enum cli_opt {
    CLI_OPT_SCENARIO = -1, /* a scenario field: scenario_set_option */
    CLI_OPT_JSON = 0,
    CLI_OPT_HELP,
    CLI_OPT_LAYERS,
    CLI_OPT_TOP,
    CLI_OPT_PLACEMENT,
    CLI_OPT_COMM,
    CLI_OPT_SCHEDULE,
    CLI_OPT_P2P,
    CLI_OPT_COLLAPSE,
    CLI_OPT_GRANULARITY,
    CLI_OPT_FIDELITY,
    CLI_OPT_CALIBRATION,
    CLI_OPT_LINKS,
    CLI_OPT_MAX_MEMORY,
    CLI_OPT_TRACE,
    CLI_OPT_TRACE_RANKS,
    CLI_OPT_TOPOLOGIES,
    CLI_OPT_CSV,
    CLI_OPT_PLOT,
    CLI_OPT_GRAPHML,
    CLI_OPT_DOT,
    CLI_OPT_OP,
    CLI_OPT_ALGO,
    CLI_OPT_PROTO,
    CLI_OPT_GROUP_GPUS,
    CLI_OPT_GPUS_PER_NODE,
    CLI_OPT_SIZE,
    CLI_OPT_SIZES,
    CLI_OPT_GROUPS,
    CLI_OPT_GROUP_PLACEMENT,
    CLI_OPT_CHANNELS,
    CLI_OPT_NET_EFFICIENCY,
    CLI_OPT_NVLINK_EFFICIENCY,
    CLI_OPT_NVLS,
    CLI_OPT_COLLNET,
    CLI_OPT_MEASURED,
    CLI_OPT_UNRECORDED,
    CLI_OPT_SIM,
    CLI_OPT_SIM_TOPOLOGY,
    CLI_OPT_FLOP_EFFICIENCY,
    CLI_OPT_CALIBRATE,
    CLI_OPT_OUT,
    CLI_OPT_RESUME,
    CLI_OPT_FORCE,
    CLI_OPT_SHARD,
    CLI_OPT_PROGRESS,
    CLI_OPT_QUIET,
    CLI_OPT_BASELINE,
    CLI_OPT_ENTRY_COSTS,
    CLI_OPT_EXPERT_SKEW,
    CLI_OPT_WORKLOAD,
    CLI_OPT_COMPUTE,
    CLI_OPT_EXPORT_ET,
    CLI_OPT_COUNT
} cli_opt_t;

typedef struct cli_option {
    const char *name; /* "--tp" */
    const char *arg;  /* metavar; NULL: a flag */
    unsigned cmds;    /* CLI_CMD_BIT mask */
    const char *def;  /* the default as help shows it ("" for none) */
    const char *help;
    cli_opt_t target; /* CLI_OPT_SCENARIO or the typed option it sets */
} cli_option_t;

/* The table and its length. */
const cli_option_t *cli_options(size_t *n);

/* The entry of name for cmd, or NULL. */
const cli_option_t *cli_option_find(const char *name, cli_cmd_t cmd);

/* A command by name: CLI_OK and *cmd, or -1. */
int cli_command_find(const char *name, cli_cmd_t *cmd);
const char *cli_command_name(cli_cmd_t cmd);
const char *cli_command_summary(cli_cmd_t cmd);
const char *cli_command_usage(cli_cmd_t cmd); /* the usage line's arguments */

/* The manual page stepsim(1), troff (man macros), generated from the table: every command and every
 * option with its metavar, default, help and the commands that take it. `stepsim --man` prints it;
 * the build writes stepsim.1 with it and `cmake --install` installs that (man.c). */
void cli_man(FILE *out);

#define CLI_MAX_SCENARIO_OPTIONS 128

/* One parsed command line. Pointers point into argv (or into the table). */
typedef struct cli_args {
    cli_cmd_t cmd;
    const char *file;                 /* the positional argument, NULL if none */
    const char *value[CLI_OPT_COUNT]; /* typed options: their text ("" for a given flag), NULL if absent */
    int n_scenario;                   /* scenario options, in command-line order */
    const cli_option_t *scenario_opt[CLI_MAX_SCENARIO_OPTIONS];
    const char *scenario_value[CLI_MAX_SCENARIO_OPTIONS];
} cli_args_t;

/* Parse argv[first..argc-1] for cmd. CLI_OK, or CLI_EUSAGE with one line in d. */
int cli_parse(cli_cmd_t cmd, int first, int argc, char **argv, cli_args_t *a, cli_diag_t *d);

/* 1 if argv[first..] asks for help (--help or -h). */
int cli_wants_help(int first, int argc, char **argv);

/* The command's help, generated from the table. */
void cli_help(FILE *out, cli_cmd_t cmd);

/* 1 if the typed option was given. */
static inline int cli_has(const cli_args_t *a, cli_opt_t o) {
    return a->value[o] != NULL;
}

/* Defaults, then a->file (as a scenario file), then the scenario options in order; skip (may be
 * NULL) names one scenario option to leave out (compare's comma list of --gpus). scn is zeroed
 * first; the caller calls scenario_destroy. */
int cli_apply_scenario(const cli_args_t *a, scenario_t *scn, const char *skip, cli_diag_t *d);

/* The value of the last scenario option name ("--topology") given, or NULL. */
const char *cli_scenario_value(const cli_args_t *a, const char *name);

/* --placement ORDER, checked: CLI_OK (also when absent) or the one refusal line of every command. */
int cli_check_placement(const cli_args_t *a, cli_diag_t *d);
/* The same for one value (NULL: absent), e.g. a sweep grid's "placement". */
int cli_placement_check(const char *value, cli_diag_t *d);

#endif
