/* cli.c - argument parsing, help text and dispatch for every stepsim command.
 *
 * One table lists every option with the commands that take it, its default and its help line; the
 * parser, the did-you-mean and --help are all driven by it, so they cannot disagree. Options are
 * collected first and applied after the scenario file, so options always win over the file.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "scenario.h"

#ifndef STEPSIM_VERSION
#define STEPSIM_VERSION "unknown"
#endif

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_TOP_K 1000000

enum { CMD_ESTIMATE = 1u, CMD_SEARCH = 2u, CMD_BOTH = 3u };

typedef struct cli_option {
    const char *name;
    const char *arg; /* NULL: a flag */
    unsigned cmds;
    const char *def; /* default, as shown by --help */
    const char *help;
} cli_option_t;

static const cli_option_t OPTIONS[] = {
    {"--model", "NAME|JSON", CMD_BOTH, "gpt3_1T", "model preset or inline JSON object (scenario: model)"},
    {"--system", "NAME|JSON", CMD_BOTH, "A100", "system preset or inline JSON object (scenario: system)"},
    {"--nvs", "N", CMD_BOTH, "8", "GPUs per NVLink domain (scenario: nvlink_size)"},
    {"--gpus", "N", CMD_BOTH, "4096", "total GPUs (scenario: gpus)"},
    {"--gbs", "N", CMD_BOTH, "4096", "global batch, in sequences (scenario: global_batch)"},
    {"--strategy", "S", CMD_ESTIMATE, "1d",
     "1d, 2d (SUMMA) or 2d-seqp (context parallel) (parallel.strategy)"},
    {"--strategy", "S", CMD_SEARCH, "all", "1d, 2d, 2d-seqp or all (parallel.strategy)"},
    {"--dp", "N", CMD_ESTIMATE, "gpus/(tp*pp)", "data-parallel degree (parallel.dp)"},
    {"--tp", "N", CMD_ESTIMATE, "8 (capped, see below)", "tensor-parallel degree; 2d: tp1*tp2 (parallel.tp)"},
    {"--tp1", "N", CMD_ESTIMATE, "tp", "2d/2d-seqp: first tensor group, SUMMA columns (parallel.tp1)"},
    {"--tp2", "N", CMD_ESTIMATE, "1", "2d/2d-seqp: second group, SUMMA rows or sequence (parallel.tp2)"},
    {"--pp", "N", CMD_ESTIMATE, "32 (capped, see below)", "pipeline-parallel degree (parallel.pp)"},
    {"--mbs", "N", CMD_ESTIMATE, "1", "microbatch size, in sequences (parallel.mbs)"},
    {"--nb", "N", CMD_ESTIMATE, "2d: max(tp1,tp2)", "SUMMA panel count, 2d only (parallel.nb)"},
    {"--nv-tp", "N", CMD_ESTIMATE, "derived", "1d: TP members per NVLink domain (parallel.nv.tp)"},
    {"--nv-tp1", "N", CMD_ESTIMATE, "derived", "2d: tp1 members per NVLink domain (parallel.nv.tp1)"},
    {"--nv-tp2", "N", CMD_ESTIMATE, "derived", "2d: tp2 members per NVLink domain (parallel.nv.tp2)"},
    {"--nv-dp", "N", CMD_ESTIMATE, "derived", "DP members per NVLink domain (parallel.nv.dp)"},
    {"--nv-pp", "N", CMD_ESTIMATE, "derived", "PP members per NVLink domain (parallel.nv.pp)"},
    {"--compat", "MODE", CMD_BOTH, "corrected",
     "reference (the published model, quirks included) or corrected"},
    {"--recompute", "R", CMD_BOTH, "none",
     "corrected: activation recomputation none|selective|full (training.*)"},
    {"--sequence-parallel", "on|off", CMD_BOTH, "on", "corrected, 1d: Megatron sequence parallelism"},
    {"--attention", "A", CMD_BOTH, "flash", "corrected: flash, or materialized scores (Megatron 2021)"},
    {"--embedding", "on|off", CMD_BOTH, "off", "corrected: the embedding and output layer, the loss"},
    {"--optimizer-step", "on|off", CMD_BOTH, "off", "corrected: the Adam step of the local parameters"},
    {"--interleave", "V", CMD_ESTIMATE, "1", "corrected: virtual pipeline stages per GPU (pp > 1)"},
    {"--dp-comm", "M", CMD_BOTH, "sharded", "corrected: sharded, allreduce or allreduce-overlap"},
    {"--grad-accumulation", "G", CMD_BOTH, "fused", "corrected: fused, or add (a separate kernel)"},
    {"--topology", "NAME|JSON", CMD_BOTH, "none",
     "accepted and kept for run/compare; unused by this command"},
    {"--top", "K", CMD_SEARCH, "10", "how many of the best configurations to print"},
    {"--layers", NULL, CMD_ESTIMATE, "off", "also print the per-layer table of one block"},
    {"--json", NULL, CMD_BOTH, "off", "print exactly one JSON object on stdout"},
    {"--help", NULL, CMD_BOTH, "", "print this help and exit"},
};

static const struct {
    const char *name;
    unsigned id; /* 0: parses its own arguments (OWN_ARGS) or is help */
    const char *summary;
} COMMANDS[] = {
    {"estimate", CMD_ESTIMATE, "closed-form iteration time, throughput and memory of one configuration"},
    {"search", CMD_SEARCH, "enumerate every parallel layout and print the top K by throughput"},
    {"topo", 0, "build a cluster topology: size, diameter, bisection, cost; GraphML/DOT export"},
    {"collective", 0, "simulate one collective on a topology, like nccl-tests: time, algbw, busbw"},
    {"run", 0, "simulate one training step event by event: step time, breakdown, memory, links, trace"},
    {"compare", 0, "simulate one workload on several topologies: step time, slowdown, links, cost"},
    {"validate", 0, "the analytic-to-simulated waterfall, or measured runs (--measured FILE.csv)"},
    {"sweep", 0, "run estimate or search over a grid of scenarios, one JSON line per point"},
    {"help", 0, "print help: stepsim help [COMMAND]"},
};

/* Commands that parse their own arguments and report progress on err (commands.h); one line each. */
static const struct {
    const char *name;
    int (*run)(int argc, char **argv, FILE *out, FILE *err, cli_diag_t *d);
    void (*help)(FILE *out);
} OWN_ARGS[] = {
    {"sweep", cmd_sweep, cmd_sweep_help},
    {"topo", cmd_topo, cmd_topo_help},
    {"validate", cmd_validate, cmd_validate_help},
    {"run", cmd_run, cmd_run_help},
    {"collective", cmd_collective, cmd_collective_help},
    {"compare", cmd_compare, cmd_compare_help},
};

/* ---- help ------------------------------------------------------------------------------------ */

/* "estimate, search, ..., help": every command, for the "allowed" part of a message. */
static const char *command_list(char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < COUNT(COMMANDS) && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", COMMANDS[i].name);
    return buf;
}

static void print_usage(FILE *out) {
    fprintf(out,
            "stepsim %s - performance model and simulator of distributed transformer training\n\n"
            "usage: stepsim <command> [SCENARIO.json] [--option value ...]\n"
            "       stepsim help [COMMAND] | stepsim --version\n\ncommands:\n",
            STEPSIM_VERSION);
    for (size_t i = 0; i < COUNT(COMMANDS); i++)
        fprintf(out, "  %-11s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(out, "\nRun `stepsim <command> --help` for its options. Exit codes: 0 ok, 1 runtime failure,\n"
                 "2 bad usage or invalid input, 3 valid input with no result.\n");
}

static void print_presets(FILE *out) {
    fprintf(out, "\nsystem presets (--system, scenario \"system\"):\n");
    for (size_t i = 0; model_system_preset_name(i); i++) {
        const char *n = model_system_preset_name(i);
        const char *s = model_system_preset_summary(n);
        fprintf(out, "  %-14s %s\n", n, s ? s : "");
    }
    fprintf(out, "\nmodel presets (--model, scenario \"model\"):\n");
    for (size_t i = 0; model_transformer_preset_name(i); i++) {
        const char *n = model_transformer_preset_name(i);
        const char *s = model_transformer_preset_summary(n);
        fprintf(out, "  %-14s %s\n", n, s ? s : "");
    }
}

static void print_scenario_help(FILE *out) {
    fprintf(
        out,
        "\nscenario file (all keys optional; options override them):\n"
        "  {\"name\": \"..\", \"description\": \"..\", \"model\": PRESET | {seq_len, hidden, heads, layers,\n"
        "   ffn_hidden (4*hidden), vocab, base: PRESET}, \"system\": PRESET | {base: PRESET,\n"
        "   matrix_flops_fp16, vector_flops_fp16, vector_flops_fp32, hbm_bandwidth, hbm_capacity,\n"
        "   nvlink_bandwidth, nvlink_eff, nvlink_latency, ib_bandwidth, ib_eff, ib_latency,\n"
        "   nvlink_size, nic_factor, element_size (GB, 2e-9), mask_element_size (GB, 1e-9),\n"
        "   flop_efficiency (0.8), kernel_overhead (s, 20e-6)}, \"nvlink_size\": N, \"gpus\": N,\n"
        "   \"global_batch\": N, \"parallel\": {strategy, dp, tp, tp1, tp2, pp, mbs, nb,\n"
        "   nv: {tp, tp1, tp2, dp, pp}}, \"compat\": \"reference\"|\"corrected\", \"training\":\n"
        "   {recompute, sequence_parallel (bool), attention, embedding (bool), optimizer_step (bool),\n"
        "   interleave, dp_comm, grad_accumulation} (corrected only), \"topology\": ..}\n"
        "  Units: TFLOP/s, GB/s, GB, seconds (seed-model.md section 2).\n");
}

static void print_command_help(FILE *out, unsigned cmd) {
    const char *name = cmd == CMD_ESTIMATE ? "estimate" : "search";
    fprintf(out, "usage: stepsim %s [SCENARIO.json] [--option value ...]\n\n", name);
    if (cmd == CMD_ESTIMATE)
        fprintf(out,
                "Evaluate one parallel configuration with the closed-form model: iteration time,\n"
                "throughput, memory per GPU and the time breakdown. A configuration that does not fit\n"
                "in memory is still evaluated (fits: false, exit 0).\n\noptions (default in brackets):\n");
    else
        fprintf(out, "Enumerate the reference's search space (dp, tp or tp1 x tp2, pp, mbs, nb, and the\n"
                     "NVLink assignment) for the GPU count, keep the configurations that fit in memory and\n"
                     "print the best K by throughput. Degrees are not options here: search chooses them;\n"
                     "parallel degrees in a scenario file are ignored, parallel.strategy restricts the\n"
                     "search. Exit 3 when nothing fits.\n\noptions (default in brackets):\n");
    for (size_t i = 0; i < COUNT(OPTIONS); i++) {
        const cli_option_t *o = &OPTIONS[i];
        if (!(o->cmds & cmd))
            continue;
        char left[48];
        snprintf(left, sizeof left, "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        fprintf(out, "  %-21s %s", left, o->help);
        fprintf(out, o->def[0] ? " [%s]\n" : "\n", o->def);
    }
    fprintf(out, "  Options also take the form --option=value.\n\n%s", scenario_defaults_help());
    print_scenario_help(out);
    print_presets(out);
}

/* ---- option lookup --------------------------------------------------------------------------- */

static const cli_option_t *find_option(const char *name, unsigned cmd) {
    for (size_t i = 0; i < COUNT(OPTIONS); i++)
        if ((OPTIONS[i].cmds & cmd) && strcmp(OPTIONS[i].name, name) == 0)
            return &OPTIONS[i];
    return NULL;
}

static int unknown_option(const char *name, unsigned cmd, const char *cmd_name, cli_diag_t *d) {
    const char *names[COUNT(OPTIONS)];
    size_t n = 0;
    for (size_t i = 0; i < COUNT(OPTIONS); i++)
        if (OPTIONS[i].cmds & cmd)
            names[n++] = OPTIONS[i].name;
    if (find_option(name, CMD_BOTH))
        return cli_fail(d, CLI_EUSAGE, "%s: not an option of %s%s; allowed: see `stepsim %s --help`", name,
                        cmd_name, cmd == CMD_SEARCH ? " (search chooses the degrees itself)" : "", cmd_name);
    const char *s = cli_suggest(name, names, n);
    if (s)
        return cli_fail(d, CLI_EUSAGE,
                        "%s: unknown option (did you mean %s?); allowed: see `stepsim %s --help`", name, s,
                        cmd_name);
    return cli_fail(d, CLI_EUSAGE, "%s: unknown option; allowed: see `stepsim %s --help`", name, cmd_name);
}

/* ---- parsing --------------------------------------------------------------------------------- */

typedef struct parsed_option {
    const cli_option_t *opt;
    const char *value; /* NULL for flags */
} parsed_option_t;

typedef struct parsed_args {
    const char *file;
    parsed_option_t *opts; /* argc entries */
    int n_opts;
    int help;
} parsed_args_t;

/* One "--name[=value]" argument at argv[*i]; consumes the value argument when needed. */
static int parse_one(int argc, char **argv, int *i, unsigned cmd, const char *cmd_name, parsed_args_t *pa,
                     cli_diag_t *d) {
    char name[64];
    const char *arg = argv[*i];
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), arg);
    const cli_option_t *o = find_option(name, cmd);
    if (!o)
        return unknown_option(name, cmd, cmd_name, d);
    const char *value = NULL;
    if (o->arg && eq)
        value = eq + 1;
    else if (o->arg && *i + 1 < argc && strncmp(argv[*i + 1], "--", 2) != 0)
        value = argv[++*i];
    else if (o->arg)
        return cli_fail(d, CLI_EUSAGE, "%s: missing value; allowed: %s %s", name, name, o->arg);
    else if (eq)
        return cli_fail(d, CLI_EUSAGE, "%s: takes no value (got \"%.60s\"); allowed: %s alone", name, eq + 1,
                        name);
    pa->opts[pa->n_opts].opt = o;
    pa->opts[pa->n_opts].value = value;
    pa->n_opts++;
    return CLI_OK;
}

static int parse_args(int argc, char **argv, unsigned cmd, const char *cmd_name, parsed_args_t *pa,
                      cli_diag_t *d) {
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int rc = CLI_OK;
        if (strncmp(a, "--", 2) == 0 && a[2])
            rc = parse_one(argc, argv, &i, cmd, cmd_name, pa, d);
        else if (a[0] == '-' && a[1])
            rc = unknown_option(a, cmd, cmd_name, d);
        else if (pa->file)
            rc = cli_fail(d, CLI_EUSAGE,
                          "%s: unexpected argument (the scenario file is %s); allowed: one scenario file", a,
                          pa->file);
        else
            pa->file = a;
        if (rc)
            return rc;
    }
    return CLI_OK;
}

static int wants_help(int argc, char **argv) {
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return 1;
    return 0;
}

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

/* Apply the collected options: flags to opts, the rest to the scenario (in command-line order). */
static int apply_options(const parsed_args_t *pa, scenario_t *scn, cli_opts_t *opts, cli_diag_t *d) {
    for (int i = 0; i < pa->n_opts; i++) {
        const parsed_option_t *p = &pa->opts[i];
        const char *n = p->opt->name;
        int rc = CLI_OK;
        if (strcmp(n, "--json") == 0)
            opts->json = 1;
        else if (strcmp(n, "--layers") == 0)
            opts->layers = 1;
        else if (strcmp(n, "--top") == 0)
            rc = parse_top(p->value, &opts->top_k, d);
        else
            rc = scenario_set_option(scn, n, p->value, d);
        if (rc)
            return rc;
    }
    return CLI_OK;
}

/* ---- dispatch -------------------------------------------------------------------------------- */

static int run_loaded(unsigned cmd, const parsed_args_t *pa, FILE *out, cli_diag_t *d) {
    scenario_t scn;
    cli_opts_t opts = {0, 0, 10};
    memset(&scn, 0, sizeof scn);
    int rc = scenario_init(&scn, d);
    if (!rc && pa->file)
        rc = scenario_load_file(&scn, pa->file, d);
    if (!rc)
        rc = apply_options(pa, &scn, &opts, d);
    if (!rc)
        rc = cmd == CMD_ESTIMATE ? cmd_estimate(&scn, &opts, out, d) : cmd_search(&scn, &opts, out, d);
    scenario_destroy(&scn);
    return rc;
}

static int run_command(unsigned cmd, const char *cmd_name, int argc, char **argv, FILE *out, cli_diag_t *d) {
    if (wants_help(argc, argv)) {
        print_command_help(out, cmd);
        return CLI_OK;
    }
    parsed_args_t pa = {NULL, NULL, 0, 0};
    pa.opts = calloc((size_t)argc, sizeof *pa.opts);
    if (!pa.opts)
        return cli_fail(d, CLI_ERUNTIME, "out of memory");
    int rc = parse_args(argc, argv, cmd, cmd_name, &pa, d);
    if (!rc)
        rc = run_loaded(cmd, &pa, out, d);
    free(pa.opts);
    return rc;
}

static int help_command(int argc, char **argv, FILE *out, cli_diag_t *d) {
    if (argc < 3) {
        print_usage(out);
        return CLI_OK;
    }
    for (size_t i = 0; i < COUNT(OWN_ARGS); i++)
        if (strcmp(argv[2], OWN_ARGS[i].name) == 0) {
            OWN_ARGS[i].help(out);
            return CLI_OK;
        }
    for (size_t i = 0; i < COUNT(OWN_ARGS); i++)
        if (strcmp(argv[2], OWN_ARGS[i].name) == 0) {
            OWN_ARGS[i].help(out);
            return CLI_OK;
        }
    for (size_t i = 0; i < COUNT(COMMANDS); i++)
        if (strcmp(argv[2], COMMANDS[i].name) == 0) {
            if (COMMANDS[i].id)
                print_command_help(out, COMMANDS[i].id);
            else
                print_usage(out);
            return CLI_OK;
        }
    const char *names[COUNT(COMMANDS)];
    for (size_t i = 0; i < COUNT(COMMANDS); i++)
        names[i] = COMMANDS[i].name;
    const char *s = cli_suggest(argv[2], names, COUNT(COMMANDS));
    char list[160];
    return cli_fail(d, CLI_EUSAGE, "help: unknown command \"%.60s\"%s%s%s; allowed: %s", argv[2],
                    s ? " (did you mean \"" : "", s ? s : "", s ? "\"?)" : "",
                    command_list(list, sizeof list));
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
    if (strcmp(c, "help") == 0 || strcmp(c, "--help") == 0 || strcmp(c, "-h") == 0)
        return help_command(argc, argv, out, d);
    for (size_t i = 0; i < COUNT(OWN_ARGS); i++)
        if (strcmp(c, OWN_ARGS[i].name) == 0)
            return OWN_ARGS[i].run(argc, argv, out, err, d);
    for (size_t i = 0; i < COUNT(COMMANDS); i++)
        if (COMMANDS[i].id && strcmp(c, COMMANDS[i].name) == 0)
            return run_command(COMMANDS[i].id, c, argc, argv, out, d);
    const char *names[COUNT(COMMANDS) + 1];
    for (size_t i = 0; i < COUNT(COMMANDS); i++)
        names[i] = COMMANDS[i].name;
    names[COUNT(COMMANDS)] = "--version";
    const char *s = cli_suggest(c, names, COUNT(names));
    return cli_fail(d, CLI_EUSAGE, "%.60s: unknown command%s%s%s; allowed: %s, --version", c,
                    s ? " (did you mean \"" : "", s ? s : "", s ? "\"?)" : "",
                    command_list(list, sizeof list));
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
