/* cli.c - dispatch of every stepsim command: the command name, help, then options.c's one parser and
 * the command with its parsed options. Scenario options are applied after the scenario file, so
 * options always win over the file.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "options.h"
#include "outfile.h"
#include "scenario.h"

#ifndef STEPSIM_VERSION
#define STEPSIM_VERSION "unknown"
#endif

#define MAX_TOP_K 1000000

/* ---- help ------------------------------------------------------------------------------------ */

/* "estimate, search, ..., help": every command, for the "allowed" part of a message. */
static const char *command_list(char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < CLI_CMD_COUNT && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s, ", cli_command_name((cli_cmd_t)i));
    if (used < n)
        snprintf(buf + used, n - used, "help");
    return buf;
}

static void print_usage(FILE *out) {
    fprintf(out,
            "stepsim %s - performance model and simulator of distributed transformer training\n\n"
            "usage: stepsim <command> [SCENARIO.json] [--option value ...]\n"
            "       stepsim help [COMMAND] | stepsim --version\n\ncommands:\n",
            STEPSIM_VERSION);
    for (int i = 0; i < CLI_CMD_COUNT; i++)
        fprintf(out, "  %-11s %s\n", cli_command_name((cli_cmd_t)i), cli_command_summary((cli_cmd_t)i));
    fprintf(out, "  %-11s %s\n", "help", "print help: stepsim help [COMMAND]");
    fprintf(out, "\nRun `stepsim <command> --help` for its options. Exit codes: 0 ok, 1 runtime failure,\n"
                 "2 bad usage or invalid input, 3 valid input with no result.\n");
}

/* The command names and "help", for did-you-mean. */
static size_t command_names(const char **names) {
    size_t n = 0;
    for (int i = 0; i < CLI_CMD_COUNT; i++)
        names[n++] = cli_command_name((cli_cmd_t)i);
    names[n++] = "help";
    return n;
}

static int help_command(int argc, char **argv, FILE *out, cli_diag_t *d) {
    if (argc < 3 || strcmp(argv[2], "help") == 0) {
        print_usage(out);
        return CLI_OK;
    }
    cli_cmd_t cmd;
    if (cli_command_find(argv[2], &cmd) == CLI_OK) {
        cli_help(out, cmd);
        return CLI_OK;
    }
    const char *names[CLI_CMD_COUNT + 1];
    const char *s = cli_suggest(argv[2], names, command_names(names));
    char list[160];
    return cli_fail(d, CLI_EUSAGE, "help: unknown command \"%.60s\"%s%s%s; allowed: %s", argv[2],
                    s ? " (did you mean \"" : "", s ? s : "", s ? "\"?)" : "",
                    command_list(list, sizeof list));
}

/* ---- estimate and search ----------------------------------------------------------------------- */

static int parse_top(const char *value, int *top, cli_diag_t *d) {
    char *end = NULL;
    long v = strtol(value, &end, 10);
    if (!value[0] || *end)
        return cli_fail(d, CLI_EUSAGE, "--top: \"%.60s\" is not an integer; allowed: 1..%d", value,
                        MAX_TOP_K);
    if (v < 1 || v > MAX_TOP_K)
        return cli_fail(d, CLI_EUSAGE, "--top: %ld is out of range; allowed: 1..%d", v, MAX_TOP_K);
    *top = (int)v;
    return CLI_OK;
}

static int run_model(const cli_args_t *a, FILE *out, cli_diag_t *d) {
    scenario_t scn;
    memset(&scn, 0, sizeof scn);
    cli_opts_t opts = {cli_has(a, CLI_OPT_JSON), cli_has(a, CLI_OPT_LAYERS), 10};
    int rc = cli_check_placement(a, d); /* the estimate depends on the nv counts only */
    if (!rc && cli_has(a, CLI_OPT_TOP))
        rc = parse_top(a->value[CLI_OPT_TOP], &opts.top_k, d);
    if (!rc)
        rc = cli_apply_scenario(a, &scn, NULL, d);
    if (!rc)
        rc = a->cmd == CLI_CMD_ESTIMATE ? cmd_estimate(&scn, &opts, out, d) : cmd_search(&scn, &opts, out, d);
    scenario_destroy(&scn);
    return rc;
}

/* ---- dispatch -------------------------------------------------------------------------------- */

static int run_command(cli_cmd_t cmd, int argc, char **argv, FILE *out, FILE *err, cli_diag_t *d) {
    if (cli_wants_help(2, argc, argv)) {
        cli_help(out, cmd);
        return CLI_OK;
    }
    cli_args_t *a = malloc(sizeof *a);
    if (!a)
        return cli_fail(d, CLI_ERUNTIME, "out of memory");
    int rc = cli_parse(cmd, 2, argc, argv, a, d);
    if (!rc) {
        switch (cmd) {
        case CLI_CMD_ESTIMATE:
        case CLI_CMD_SEARCH:
            rc = run_model(a, out, d);
            break;
        case CLI_CMD_TOPO:
            rc = cmd_topo(a, out, err, d);
            break;
        case CLI_CMD_COLLECTIVE:
            rc = cmd_collective(a, out, err, d);
            break;
        case CLI_CMD_RUN:
            rc = cmd_run(a, out, err, d);
            break;
        case CLI_CMD_COMPARE:
            rc = cmd_compare(a, out, err, d);
            break;
        case CLI_CMD_VALIDATE:
            rc = cmd_validate(a, out, err, d);
            break;
        default:
            rc = cmd_sweep(a, out, err, d);
            break;
        }
    }
    free(a);
    return rc;
}

static int dispatch(int argc, char **argv, FILE *out, FILE *err, cli_diag_t *d) {
    char list[160];
    if (argc < 2)
        return cli_fail(d, CLI_EUSAGE, "missing command; allowed: %s, --version (see `stepsim help`)",
                        command_list(list, sizeof list));
    const char *c = argv[1];
    if (strcmp(c, "--version") == 0 || strcmp(c, "version") == 0) {
        fprintf(out, "stepsim %s\n", STEPSIM_VERSION);
        return CLI_OK;
    }
    if (strcmp(c, "--man") == 0) { /* the manual page, for the build (not in the help) */
        cli_man(out);
        return CLI_OK;
    }
    if (strcmp(c, "help") == 0 || strcmp(c, "--help") == 0 || strcmp(c, "-h") == 0)
        return help_command(argc, argv, out, d);
    cli_cmd_t cmd;
    if (cli_command_find(c, &cmd) == CLI_OK)
        return run_command(cmd, argc, argv, out, err, d);
    const char *names[CLI_CMD_COUNT + 2];
    size_t n = command_names(names);
    names[n++] = "--version";
    const char *s = cli_suggest(c, names, n);
    return cli_fail(d, CLI_EUSAGE, "%.60s: unknown command%s%s%s; allowed: %s, --version", c,
                    s ? " (did you mean \"" : "", s ? s : "", s ? "\"?)" : "",
                    command_list(list, sizeof list));
}

void cli_install_signal_handlers(void) {
    outfile_install_signal_handlers();
}

int cli_main(int argc, char **argv, FILE *out, FILE *err) {
    cli_diag_t d;
    d.msg[0] = '\0';
    int rc = dispatch(argc, argv, out, err, &d);
    if (fflush(out) != 0 || ferror(out)) {
        if (rc == CLI_OK || rc == CLI_ENORESULT)
            rc = cli_fail(&d, CLI_ERUNTIME, "stdout: write error");
    }
    if (rc != CLI_OK && d.msg[0]) {
        const char *cmd = argc >= 2 && argv[1][0] != '-' ? argv[1] : NULL;
        /* The command name prefixes the line, unless the message is about the command itself. */
        if (cmd && strncmp(d.msg, cmd, strlen(cmd)) != 0 && strlen(cmd) < 32)
            fprintf(err, "stepsim %s: %s\n", cmd, d.msg);
        else
            fprintf(err, "stepsim: %s\n", d.msg);
        fflush(err);
    }
    return rc;
}
