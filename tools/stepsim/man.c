/* man.c - the manual page stepsim(1), generated from the one option table (options.h), so that the
 * page and `stepsim COMMAND --help` cannot disagree. Written with the man(7) macros; `stepsim --man`
 * prints it and the build stores it as stepsim.1 (tools/stepsim/CMakeLists.txt). */
#include <string.h>

#include "options.h"

#ifndef STEPSIM_VERSION
#define STEPSIM_VERSION "unknown"
#endif

/* text with troff's special characters escaped: backslash, and a leading dot or quote. */
static void roff(FILE *out, const char *text) {
    int line_start = 1;
    for (const char *p = text; *p; p++) {
        if (line_start && (*p == '.' || *p == '\''))
            fputs("\\&", out);
        if (*p == '\\')
            fputs("\\e", out);
        else if (*p == '-')
            fputs("\\-", out);
        else
            fputc(*p, out);
        line_start = *p == '\n';
    }
}

/* "estimate, run, compare": the commands of a mask. */
static void commands_of(FILE *out, unsigned mask) {
    int first = 1;
    for (int c = 0; c < CLI_CMD_COUNT; c++)
        if (mask & CLI_CMD_BIT(c)) {
            fprintf(out, "%s%s", first ? "" : ", ", cli_command_name((cli_cmd_t)c));
            first = 0;
        }
}

void cli_man(FILE *out) {
    size_t n = 0;
    const cli_option_t *opt = cli_options(&n);
    fprintf(out, ".TH STEPSIM 1 \"\" \"stepsim %s\" \"User Commands\"\n", STEPSIM_VERSION);
    fputs(".SH NAME\nstepsim \\- performance model and simulator of distributed transformer training\n", out);
    fputs(".SH SYNOPSIS\n", out);
    for (int c = 0; c < CLI_CMD_COUNT; c++) {
        fprintf(out, ".B stepsim %s\n", cli_command_name((cli_cmd_t)c));
        roff(out, cli_command_usage((cli_cmd_t)c));
        fputs("\n.br\n", out);
    }
    fputs(".B stepsim help\n[COMMAND]\n.br\n.B stepsim \\-\\-version\n", out);
    fputs(".SH DESCRIPTION\n"
          "stepsim estimates and simulates one training step of a transformer on a GPU cluster: a\n"
          "closed-form model (estimate, search), a discrete-event simulation of every GPU's compute and\n"
          "communication on a network topology (run, compare, validate), and grids of either (sweep).\n"
          "Every option below is listed with the commands that take it; `stepsim COMMAND \\-\\-help`\n"
          "prints the same entries with the command's reference text.\n",
          out);
    fputs(".SH COMMANDS\n", out);
    for (int c = 0; c < CLI_CMD_COUNT; c++) {
        fprintf(out, ".TP\n.B %s\n", cli_command_name((cli_cmd_t)c));
        roff(out, cli_command_summary((cli_cmd_t)c));
        fputs("\n", out);
    }
    fputs(".TP\n.B help\nprint help: stepsim help [COMMAND]\n", out);
    fputs(".SH OPTIONS\nOptions also take the form \\-\\-option=value. Defaults are in brackets.\n", out);
    for (size_t i = 0; i < n; i++) {
        const cli_option_t *o = &opt[i];
        fputs(o->arg ? ".TP\n.BI \"" : ".TP\n.B ", out);
        roff(out, o->name);
        if (o->arg) {
            fputs(" \" \"", out);
            roff(out, o->arg);
            fputs("\"", out);
        }
        fputs("\n", out);
        roff(out, o->help);
        if (o->def[0]) {
            fputs(" [", out);
            roff(out, o->def);
            fputs("]", out);
        }
        fputs("\n.br\n(", out);
        commands_of(out, o->cmds);
        fputs(")\n", out);
    }
    fputs(".SH EXIT STATUS\n"
          "0 success; 1 runtime failure (I/O, out of memory); 2 bad usage or invalid input (one line on\n"
          "standard error naming the file or option, the field, the value and what is allowed); 3 valid\n"
          "input with no result.\n",
          out);
    fputs(".SH SEE ALSO\n"
          "The guides installed with the program (share/doc/stepsim): README.md, cli.md (every option\n"
          "and output field), run.md, compare.md, sweep.md, validation.md, traces.md, topology.md.\n",
          out);
}
