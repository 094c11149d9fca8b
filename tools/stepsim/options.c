/* options.c - the one option table of every stepsim command, its parser and the generated help.
 *
 * A scenario option is one entry for every command that takes a scenario, so it parses, helps and
 * means the same everywhere; command options are typed slots (cli_opt_t) that the command reads.
 */
#include "options.h"

#include <string.h>

#include "commands.h"
#include "model.h"
#include "output.h"
#include "step.h"
#include "topo.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

#define E CLI_CMD_BIT(CLI_CMD_ESTIMATE)
#define S CLI_CMD_BIT(CLI_CMD_SEARCH)
#define T CLI_CMD_BIT(CLI_CMD_TOPO)
#define C CLI_CMD_BIT(CLI_CMD_COLLECTIVE)
#define R CLI_CMD_BIT(CLI_CMD_RUN)
#define P CLI_CMD_BIT(CLI_CMD_COMPARE)
#define V CLI_CMD_BIT(CLI_CMD_VALIDATE)
#define W CLI_CMD_BIT(CLI_CMD_SWEEP)
#define ALL (E | S | T | C | R | P | V | W)
#define JOB (E | S | R | P | V) /* commands that resolve a training job */
#define LAYOUT (E | R | P | V)  /* ... and take its degrees (search chooses them) */
#define SCN CLI_OPT_SCENARIO

static const cli_option_t OPTIONS[] = {
    /* the scenario: one entry each, the same meaning in every command that takes it */
    {"--model", "NAME|JSON", JOB, "gpt3_1T",
     "model preset, Hugging Face config.json (a path ending in .json) or inline JSON object (scenario: "
     "model)",
     SCN},
    {"--system", "NAME|JSON", JOB | C, "A100", "system preset or inline JSON object (scenario: system)", SCN},
    {"--nvs", "N", JOB, "8", "GPUs per NVLink domain (scenario: nvlink_size)", SCN},
    {"--gpus", "N", JOB | T, "4096; topo: the topology's size",
     "total GPUs (scenario: gpus); topo: the GPUs to place, sizing the presets; compare: a comma list "
     "A,B,C compares the GPU counts",
     SCN},
    {"--gbs", "N", JOB, "4096", "global batch, in sequences (scenario: global_batch)", SCN},
    {"--strategy", "S", JOB, "1d; search: all",
     "1d, 2d (SUMMA) or 2d-seqp (context parallel); search also all (parallel.strategy)", SCN},
    {"--dp", "N", LAYOUT, "gpus/(tp*pp)", "data-parallel degree (parallel.dp)", SCN},
    {"--tp", "N", LAYOUT, "8 (capped, see below)", "tensor-parallel degree; 2d: tp1*tp2 (parallel.tp)", SCN},
    {"--tp1", "N", LAYOUT, "tp", "2d/2d-seqp: first tensor group, SUMMA columns (parallel.tp1)", SCN},
    {"--tp2", "N", LAYOUT, "1", "2d/2d-seqp: second group, SUMMA rows or sequence (parallel.tp2)", SCN},
    {"--ep", "N", LAYOUT, "1",
     "mixture of experts: expert-parallel degree, dividing the experts and dp (parallel.ep); search: "
     "every such degree",
     SCN},
    {"--etp", "N", LAYOUT, "1",
     "mixture of experts: expert tensor parallelism, each routed expert split over etp GPUs, etp x ep "
     "dividing tp x dp (parallel.etp)",
     SCN},
    {"--pp", "N", LAYOUT, "32 (capped, see below)", "pipeline-parallel degree (parallel.pp)", SCN},
    {"--mbs", "N", LAYOUT, "1", "microbatch size, in sequences (parallel.mbs)", SCN},
    {"--nb", "N", LAYOUT, "2d: max(tp1,tp2)", "SUMMA panel count, 2d only (parallel.nb)", SCN},
    {"--nv-tp", "N", LAYOUT, "derived", "1d: TP members per NVLink domain (parallel.nv.tp)", SCN},
    {"--nv-tp1", "N", LAYOUT, "derived", "2d: tp1 members per NVLink domain (parallel.nv.tp1)", SCN},
    {"--nv-tp2", "N", LAYOUT, "derived", "2d: tp2 members per NVLink domain (parallel.nv.tp2)", SCN},
    {"--nv-dp", "N", LAYOUT, "derived", "DP members per NVLink domain (parallel.nv.dp)", SCN},
    {"--nv-pp", "N", LAYOUT, "derived", "PP members per NVLink domain (parallel.nv.pp)", SCN},
    {"--compat", "MODE", JOB, "corrected", "reference (the published model, quirks included) or corrected",
     SCN},
    {"--recompute", "R", JOB, "none", "corrected: activation recomputation none|selective|full (training.*)",
     SCN},
    {"--sequence-parallel", "on|off", JOB, "on", "corrected, 1d: Megatron sequence parallelism", SCN},
    {"--attention", "A", JOB, "flash", "corrected: flash, or materialized scores (Megatron 2021)", SCN},
    {"--embedding", "on|off", JOB, "off", "corrected: the embedding and output layer, the loss", SCN},
    {"--optimizer-step", "on|off", JOB, "off; simulations: on",
     "corrected: the Adam step of the local parameters, in the estimate and in the simulated step; "
     "not given, run, compare and validate simulate it and their estimate includes it",
     SCN},
    {"--interleave", "V", LAYOUT, "1",
     "corrected: virtual pipeline stages per GPU (pp > 1): the interleaved estimate, and the simulated "
     "step runs interleaved 1F1B with V stages (the one way to the interleaved schedule)",
     SCN},
    {"--dp-comm", "M", JOB, "sharded",
     "corrected: sharded, allreduce, allreduce-overlap, sharded-overlap, or fsdp (fully sharded: ZeRO-3, "
     "Megatron-FSDP)",
     SCN},
    {"--grad-accumulation", "G", JOB, "fused", "corrected: fused, or add (a separate kernel)", SCN},
    {"--precision", "P", JOB, "bf16",
     "corrected: bf16, or fp8 (Transformer Engine: the block's GEMMs at the system's FP8 peak, cast "
     "kernels, FP8 weight copies; needs a system with an FP8 peak)",
     SCN},
    {"--tp-comm-overlap", "on|off", JOB, "off",
     "corrected, 1d/2d-seqp: tensor-parallel all-gathers and reduce-scatters in chunks under the GEMMs "
     "(Megatron-Core/Transformer Engine --tp-comm-overlap)",
     SCN},
    {"--fp8-param-gather", "on|off", JOB, "off",
     "corrected, precision fp8, dp comm sharded or sharded-overlap: the FP8 layers' GEMM weights stored in "
     "FP8 (one byte, no BF16 copy) and all-gathered in FP8 by the distributed optimizer (Megatron-Core "
     "--fp8-param-gather)",
     SCN},
    {"--pp-comm-overlap", "on|off", JOB, "off",
     "corrected, interleaved schedule: pipeline sends and receives under the compute (Megatron-Core "
     "overlap_p2p_comm); without interleaving no change (batched send/receive pairs)",
     SCN},
    {"--pipeline-schedule", "S", JOB, "1f1b",
     "corrected: 1f1b, or zb-h1 (zero bubble, Qi et al. arXiv 2401.10241: the backward split into input "
     "and weight gradients, the bubble (pp - 1)(F + B - W)) in the estimate; the simulated step runs it too; "
     "zb-v (the same paper's V: two chunks per GPU, bubble (pp - 1)(max(F, B) + B - W) / 2 at 1F1B's "
     "memory); "
     "dualpipe (DeepSeek-V3, arXiv 2412.19437: a stage and its mirror's copy per GPU, microbatches from both "
     "ends, bubble (pp/2 - 1)(F&B + B - 3W), pp + 1 microbatches); search: all tries each where valid",
     SCN},
    {"--cp-comm", "M", JOB, "allgather",
     "corrected, 2d-seqp: K and V all-gathered before the attention, or ring (Megatron-Core: passed "
     "around the context-parallel ranks under it)",
     SCN},
    {"--topology", "NAME|FILE|JSON", JOB | T | C, "the scenario's, else ideal",
     "network (scenario: topology): a preset; a shortcut sized to the job (fat-tree, fat-tree-2:1, "
     "rail, dragonfly, dragonfly-ugal); a kind with its defaults (ideal, rail-optimized, torus); a "
     "GraphML or JSON file; or an inline object. estimate and search keep it and do not use it",
     SCN},
    /* perturbations (scenario: perturbations; run and compare simulate them, docs/what-if.md) */
    {"--slow-links", "SEL:FACTOR", R | P | T | C, "none",
     "multiply the bandwidth of the links SEL chooses by FACTOR in (0, 1]: link names as run and topo "
     "print them (leaf3->spine1; a<->b both directions; several separated by ';'), class:NAME (nvlink, "
     "pcie, network, access, leaf-spine, spine-core, local, global) or fraction:F[:CLASS] (a seeded "
     "fraction F of the class's cables, network by default); repeatable (scenario: perturbations.links)",
     SCN},
    {"--fail-links", "SEL", R | P | T | C, "none",
     "fail the links SEL chooses (as --slow-links); routes avoid them, and a job they cut in two is "
     "exit 3 (scenario: perturbations.links)",
     SCN},
    {"--slow-gpus", "RANGES:FACTOR", R | P, "none",
     "every compute operation of these GPUs takes FACTOR times its time, e.g. 0-7,64:1.25 (repeatable; "
     "appends to perturbations.gpus)",
     SCN},
    {"--slow-nodes", "RANGES:FACTOR", R | P, "none",
     "the same for whole nodes (NVLink domains of nvlink_size GPUs), e.g. 3:2", SCN},
    {"--slow-fraction", "F:FACTOR", R | P, "none",
     "the same for round(F x GPUs) GPUs chosen by the seed, e.g. 0.01:1.1", SCN},
    {"--jitter", "DIST:CV", R | P, "none",
     "per-operation compute jitter, lognormal or normal with mean 1 and coefficient of variation CV, e.g. "
     "lognormal:0.05 (perturbations.jitter)",
     SCN},
    {"--seed", "N", R | P | T | C, "1",
     "seed of every random choice of the perturbations (perturbations.seed)", SCN},
    {"--baseline", "on|off", R | P, "on with perturbations or jobs",
     "also simulate the scenario without its perturbations (with jobs: each job alone on its GPUs) and "
     "print the what-if's cost",
     CLI_OPT_BASELINE},
    {"--entry-costs", "auto|on|off", R, "auto",
     "the cost of each perturbation entry alone (one more simulation per entry); auto: when there are "
     "several entries and the what-if run has at most 5 million operations",
     CLI_OPT_ENTRY_COSTS},
    {"--placement", "ORDER", LAYOUT, "tp,cp,pp,dp",
     "rank order onto GPUs, innermost first (nv counts honoured); the simulated step follows it, the "
     "analytic estimate depends only on the nv counts and does not change",
     CLI_OPT_PLACEMENT},
    /* estimate, search */
    {"--layers", NULL, E | R, "off",
     "also print the per-layer table of one block (run: one block as simulated, beside the model's)",
     CLI_OPT_LAYERS},
    {"--top", "K", S, "10", "how many of the best configurations to print", CLI_OPT_TOP},
    /* run */
    {"--comm", "MODE", R, "network", "network (flows on the topology) or analytic (the model's times)",
     CLI_OPT_COMM},
    {"--schedule", "S", R, "1f1b; with --interleave V: interleaved:V; with --pipeline-schedule S: S",
     "1f1b or gpipe (interleaved: --interleave V; zero-bubble: --pipeline-schedule zb-h1|zb-v|dualpipe; "
     "each makes the estimate beside the simulation the same schedule)",
     CLI_OPT_SCHEDULE},
    {"--p2p", "MODE", R, "blocking", "blocking (a sender waits for its send) or async", CLI_OPT_P2P},
    {"--expert-skew", "S", R, "0",
     "mixture of experts: route each MoE block's tokens of each microbatch to the experts by a Zipf law of "
     "exponent S (0..8) over a permutation drawn from --seed, the block and the microbatch; 0: uniform "
     "(docs/run.md)",
     CLI_OPT_EXPERT_SKEW},
    {"--collapse", "MODE", R | P | V, "auto",
     "auto (identical ranks simulated once where that is provably exact, else every GPU), off (every "
     "GPU), or approx (one tensor rank even where not exact: approximate, flagged in every output; "
     "docs/run.md)",
     CLI_OPT_COLLAPSE},
    {"--granularity", "G", R, "auto", "auto, layer (an operation per run of layers) or microbatch",
     CLI_OPT_GRANULARITY},
    {"--fidelity", "F", R | C, "fast",
     "collectives as one coflow per phase or ring (fast) or every step's flows (step)", CLI_OPT_FIDELITY},
    {"--calibration", "C", R | C, "nccl", "nccl (NCCL's protocols, latencies, link efficiencies) or none",
     CLI_OPT_CALIBRATION},
    {"--links", "K", R, "5", "how many of the busiest links to report (0..64)", CLI_OPT_LINKS},
    {"--max-memory", "GB", T | C | R | P | V, "half the physical memory",
     "memory budget: a topology or a step whose estimate (topology: per vertex, link and routing entry; "
     "step: 0.2 GB and 64 bytes per operation) is larger is refused before it is built (exit 2)",
     CLI_OPT_MAX_MEMORY},
    {"--trace", "FILE", R, "none", "write a Chrome trace (Perfetto, speedscope) of the simulated GPUs",
     CLI_OPT_TRACE},
    {"--trace-ranks", "LIST", R, "all",
     "GPUs to trace, e.g. 0-7,64 (with --trace; not given and the whole trace above 100 MB: one tensor "
     "group per pipeline stage)",
     CLI_OPT_TRACE_RANKS},
    {"--workload", "DIR|PREFIX", R, "none",
     "simulate a Chakra execution trace per rank (DIR holding NAME.0.et .. NAME.N-1.et, or PREFIX with "
     "PREFIX.r.et) instead of the scenario's model: rank r on GPU r of the topology (docs/workloads.md)",
     CLI_OPT_WORKLOAD},
    {"--compute", "trace|model", R, "trace",
     "with --workload: compute nodes take the trace's duration, or (model) the roofline of the system's GPU "
     "from their FLOPs and bytes",
     CLI_OPT_COMPUTE},
    {"--export-et", "DIR", R, "none",
     "also write the simulated step as Chakra execution traces, DIR/stepsim.r.et per rank (needs every GPU "
     "simulated: --collapse off; docs/workloads.md)",
     CLI_OPT_EXPORT_ET},
    /* compare, validate (waterfall) */
    {"--topologies", "LIST", P, "ideal,fat-tree,fat-tree-2:1,rail,dragonfly,dragonfly-ugal",
     "comma-separated presets, kinds, files, shortcuts or {...} objects", CLI_OPT_TOPOLOGIES},
    {"--csv", "FILE", P, "none", "also write the table as CSV", CLI_OPT_CSV},
    {"--plot", "FILE", P | V, "none",
     "PNG or SVG by extension, drawn with gnuplot: compare's step-time bars, slowdown against the best "
     "topology (and scaling efficiency), validate's waterfall",
     CLI_OPT_PLOT},
    /* topo */
    {"--graphml", "FILE", T, "none", "also write the graph as GraphML (loads back with --topology FILE)",
     CLI_OPT_GRAPHML},
    {"--dot", "FILE", T, "none", "also write the graph as Graphviz DOT", CLI_OPT_DOT},
    /* collective */
    {"--op", "OP", C, "allreduce",
     "allreduce, allgather, reducescatter, broadcast, reduce, sendrecv or alltoall", CLI_OPT_OP},
    {"--algo", "ALGO", C, "auto",
     "ring, tree, hierarchical, halving-doubling, chain, direct, nvls (NVLink SHARP, H100 and later), "
     "collnet (InfiniBand SHARP, allreduce across nodes), or auto (as NCCL's tuner)",
     CLI_OPT_ALGO},
    {"--proto", "PROTO", C, "auto", "NCCL protocol: simple, ll, ll128, or auto", CLI_OPT_PROTO},
    {"--gpus", "N", C, "every GPU of the topology", "GPUs of all groups together", CLI_OPT_GROUP_GPUS},
    {"--gpus-per-node", "K", C, "the topology's node size", "use the first K GPUs of every node",
     CLI_OPT_GPUS_PER_NODE},
    {"--size", "BYTES", C, "", "one size: bytes, or with a K, M or G suffix (x 1024, 1024^2, 1024^3)",
     CLI_OPT_SIZE},
    {"--sizes", "MIN:MAX", C, "1M:1G", "sizes MIN, 2 MIN, 4 MIN, ... up to MAX", CLI_OPT_SIZES},
    {"--groups", "G", C, "1", "G equal, disjoint groups run the collective at once", CLI_OPT_GROUPS},
    {"--placement", "P", C, "contiguous", "contiguous, or strided (group g holds GPUs g, g+G, ...)",
     CLI_OPT_GROUP_PLACEMENT},
    {"--channels", "N|auto", C, "auto", "rings per ring phase (NCCL channels), 1..64", CLI_OPT_CHANNELS},
    {"--net-efficiency", "X", C, "by network technology: Slingshot 0.70, InfiniBand 0.94",
     "usable fraction of every network link (with --calibration nccl)", CLI_OPT_NET_EFFICIENCY},
    {"--nvlink-efficiency", "X", C, "0.67 (A100), 0.824 (H100 and later)",
     "usable fraction of every NVLink link (with --calibration nccl)", CLI_OPT_NVLINK_EFFICIENCY},
    {"--nvls", "on|off", C, "on where the hardware has it (NVLink-4 and later)",
     "NVLink SHARP for auto (NCCL_NVLS_ENABLE): off leaves auto to ring and tree", CLI_OPT_NVLS},
    {"--collnet", "on|off", C, "off (as NCCL: it needs its SHARP plugin and NCCL_COLLNET_ENABLE=1)",
     "InfiniBand SHARP for auto: allreduce across nodes may run collnet (InfiniBand networks only)",
     CLI_OPT_COLLNET},
    /* validate --measured */
    {"--measured", "FILE.csv", V, "none: the waterfall", "measured runs, one per row (below)",
     CLI_OPT_MEASURED},
    {"--unrecorded", "RULE", V, "fixed",
     "--measured: how empty mbs and interleave cells are filled: fixed or search", CLI_OPT_UNRECORDED},
    {"--sim", NULL, V, "off", "--measured: also predict every run through the simulation", CLI_OPT_SIM},
    {"--sim-topology", "T", V, "auto", "--measured --sim: the network, auto or a topology for every row",
     CLI_OPT_SIM_TOPOLOGY},
    {"--flop-efficiency", "X", V, "the preset's",
     "--measured: FLOP efficiency of every run's GPU, 0 < X <= 1", CLI_OPT_FLOP_EFFICIENCY},
    {"--calibrate", NULL, V, "off", "--measured: fit the FLOP efficiency of each system to its runs",
     CLI_OPT_CALIBRATE},
    /* sweep */
    {"--out", "FILE.jsonl", W, "required", "the results file; each line is appended whole and synced",
     CLI_OPT_OUT},
    {"--resume", NULL, W, "off", "keep the lines already in FILE, cut a torn last line, run the rest",
     CLI_OPT_RESUME},
    {"--force", NULL, W, "off: exit 2", "start over when FILE exists and is not empty", CLI_OPT_FORCE},
    {"--shard", "I/N", W, "0/1", "run only the points whose number is I modulo N (0 <= I < N)",
     CLI_OPT_SHARD},
    {"--progress", NULL, W, "terminal", "progress and ETA on stderr even when it is not a terminal",
     CLI_OPT_PROGRESS},
    {"--quiet", NULL, C | R | P | V | W, "off",
     "no progress on stderr (by default shown on a terminal once the work has taken 2 s)", CLI_OPT_QUIET},
    /* every command */
    {"--json", NULL, ALL, "off", "print exactly one JSON object on stdout", CLI_OPT_JSON},
    {"--help", NULL, ALL, "", "print this help and exit", CLI_OPT_HELP},
};

const cli_option_t *cli_options(size_t *n) {
    *n = COUNT(OPTIONS);
    return OPTIONS;
}

/* ---- commands ------------------------------------------------------------------------------------ */

static void tail_job(FILE *out);
static void tail_topo(FILE *out);
static void tail_collective(FILE *out);
static void tail_run(FILE *out);
static void tail_compare(FILE *out);
static void tail_validate(FILE *out);
static void tail_sweep(FILE *out);

static const struct {
    const char *name, *summary, *usage, *positional, *about;
    void (*tail)(FILE *out);
} COMMANDS[CLI_CMD_COUNT] = {
    {"estimate", "closed-form iteration time, throughput and memory of one configuration",
     "[SCENARIO.json] [--option value ...]", "scenario file",
     "Evaluate one parallel configuration with the closed-form model: iteration time,\n"
     "throughput, memory per GPU and the time breakdown. A configuration that does not fit\n"
     "in memory is still evaluated (fits: false, exit 0).\n",
     tail_job},
    {"search", "enumerate every parallel layout and print the top K by throughput",
     "[SCENARIO.json] [--option value ...]", "scenario file",
     "Enumerate the reference's search space (dp, tp or tp1 x tp2, pp, mbs, nb, and the\n"
     "NVLink assignment) for the GPU count, keep the configurations that fit in memory and\n"
     "print the best K by throughput. Degrees are not options here: search chooses them;\n"
     "parallel degrees in a scenario file are ignored, parallel.strategy restricts the\n"
     "search. Exit 3 when nothing fits.\n",
     tail_job},
    {"topo", "build a cluster topology: size, diameter, bisection, cost; GraphML/DOT export",
     "[SCENARIO.json] [--option value ...]", "scenario file",
     "Build a cluster topology and print its size, diameter, bisection and injection bandwidth\n"
     "and cost proxy; optionally export it as GraphML or DOT.\n",
     tail_topo},
    {"collective", "simulate one collective on a topology, like nccl-tests: time, algbw, busbw",
     "[SCENARIO.json] [--option value ...]", "scenario file",
     "Simulate one collective the way nccl-tests measures a real one: G groups of GPUs run it\n"
     "at once on a topology; print time, closed form, algbw and busbw per size (busbw = algbw\n"
     "x 2(n-1)/n for allreduce, x (n-1)/n for allgather, reducescatter and alltoall, n the group\n"
     "size).\n",
     tail_collective},
    {"run", "simulate one training step event by event: step time, breakdown, memory, links, trace",
     "[SCENARIO.json] [--option value ...]", "scenario file",
     "Simulate one training step event by event: every GPU's compute, its tensor-, context-, pipeline-\n"
     "and data-parallel communication on the topology (or at the analytic model's times with\n"
     "--comm analytic), in the chosen pipeline schedule. Prints the step time beside the closed-form\n"
     "estimate, the critical GPU's time breakdown (compute, exposed tensor-parallel, pipeline and\n"
     "data-parallel communication, bubble and idle: they add up to the step time), peak memory per\n"
     "GPU against the model, and the busiest links. Identical ranks are simulated once where that is\n"
     "exact (docs/run.md). Without options: the built-in default scenario on the ideal topology.\n",
     tail_run},
    {"compare", "simulate one workload on several topologies: step time, slowdown, links, cost",
     "[SCENARIO.json] [--topologies A,B,C] [--gpus A,B,C] [--option value ...]", "scenario file",
     "Simulate one training step of the scenario's workload on each topology and print a table:\n"
     "step time, slowdown against ideal (always included, first), the critical GPU's exposed\n"
     "communication per kind, the busiest link's utilisation, the topology's cost proxy\n"
     "(switches + cables + optical transceivers, each counted 1) and throughput per 1000 cost units.\n"
     "--gpus with a comma is the scaling view: step time and throughput against the GPU count per\n"
     "topology, with the analytic model beside it (global batch fixed: strong scaling; dp follows\n"
     "unless given).\n",
     tail_compare},
    {"validate", "the analytic-to-simulated waterfall, or measured runs (--measured FILE.csv)",
     "[SCENARIO.json] [--option value ...] | --measured FILE.csv [--option value ...]", "scenario file",
     "Without --measured: explain the gap between the closed form and the simulation as a waterfall:\n"
     "the analytic estimate; the simulation with analytic communication (the change is scheduling:\n"
     "overlap, bubbles, the schedule); with network communication on ideal (collective algorithms);\n"
     "on the chosen topology (--topology or the scenario's; routing and contention; the compare\n"
     "shortcuts fat-tree, fat-tree-2:1, rail, dragonfly, dragonfly-ugal work here too). Each step's\n"
     "change in seconds and percent of the analytic estimate, and the breakdown parts it moved;\n"
     "the changes add up exactly to the simulated step time.\n\n"
     "With --measured FILE.csv: predict every measured training run of FILE.csv with the analytic\n"
     "model (the prediction source is printed: analytic) and print, per run, the predicted and\n"
     "measured iteration time and the signed error, then the mean and the maximum absolute error;\n"
     "the published reference model's prediction of the same layout is shown beside it. The\n"
     "options marked --measured need it; the scenario options, --placement and --plot are the\n"
     "waterfall's.\n",
     tail_validate},
    {"sweep", "run estimate, search or run over a grid of scenarios, one JSON line per point",
     "GRID.json --out FILE.jsonl [--resume | --force] [--shard I/N] [--progress] [--json]", "grid file", NULL,
     tail_sweep},
};

int cli_command_find(const char *name, cli_cmd_t *cmd) {
    for (int i = 0; i < CLI_CMD_COUNT; i++)
        if (strcmp(COMMANDS[i].name, name) == 0) {
            *cmd = (cli_cmd_t)i;
            return CLI_OK;
        }
    return -1;
}

const char *cli_command_name(cli_cmd_t cmd) {
    return COMMANDS[cmd].name;
}

const char *cli_command_summary(cli_cmd_t cmd) {
    return COMMANDS[cmd].summary;
}

const char *cli_command_usage(cli_cmd_t cmd) {
    return COMMANDS[cmd].usage;
}

/* ---- help ---------------------------------------------------------------------------------------- */

#define HELP_LEFT 24   /* the width of "--name ARG" */
#define HELP_WIDTH 100 /* the longest line */

/* "  --name ARG   help text [default]", the text wrapped at word boundaries to HELP_WIDTH. */
static void help_line(FILE *out, const cli_option_t *o) {
    char left[64], text[600];
    snprintf(left, sizeof left, "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    snprintf(text, sizeof text, o->def[0] ? "%s [%s]" : "%s", o->help, o->def);
    int col;
    if (strlen(left) > HELP_LEFT) {
        fprintf(out, "  %s\n%*s", left, HELP_LEFT + 3, "");
        col = HELP_LEFT + 3;
    } else {
        col = fprintf(out, "  %-*s ", HELP_LEFT, left);
    }
    const int indent = col;
    for (const char *w = text; *w;) {
        size_t n = strcspn(w, " ");
        if (col > indent && col + 1 + (int)n > HELP_WIDTH) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', out);
            col++;
        }
        col += fprintf(out, "%.*s", (int)n, w);
        w += n;
        while (*w == ' ')
            w++;
    }
    fputc('\n', out);
}

void cli_help(FILE *out, cli_cmd_t cmd) {
    char usage[512];
    snprintf(usage, sizeof usage, "usage: stepsim %s %s", COMMANDS[cmd].name, COMMANDS[cmd].usage);
    output_wrapped(out, 8, usage);
    fputc('\n', out);
    if (COMMANDS[cmd].about)
        fputs(COMMANDS[cmd].about, out);
    else
        cmd_sweep_about(out);
    fprintf(out, "\noptions (default in brackets):\n");
    for (size_t i = 0; i < COUNT(OPTIONS); i++)
        if (OPTIONS[i].cmds & CLI_CMD_BIT(cmd))
            help_line(out, &OPTIONS[i]);
    fprintf(out, "  Options also take the form --option=value.\n");
    COMMANDS[cmd].tail(out);
}

/* "  NAME           summary", wrapped to 100 columns under the summary. */
static void preset_line(FILE *out, int name_width, const char *name, const char *summary) {
    char line[512];
    snprintf(line, sizeof line, "  %-*s %s", name_width, name, summary ? summary : "");
    output_wrapped(out, name_width + 3, line);
}

static void print_presets(FILE *out) {
    fprintf(out, "\nsystem presets (--system, scenario \"system\"):\n");
    for (size_t i = 0; model_system_preset_name(i); i++) {
        const char *n = model_system_preset_name(i);
        preset_line(out, 14, n, model_system_preset_summary(n));
    }
    fprintf(out, "\nmodel presets (--model, scenario \"model\"):\n");
    for (size_t i = 0; model_transformer_preset_name(i); i++) {
        const char *n = model_transformer_preset_name(i);
        preset_line(out, 14, n, model_transformer_preset_summary(n));
    }
}

static void print_topology_presets(FILE *out, const char *heading) {
    fprintf(out, "\n%s:\n", heading);
    for (size_t i = 0; topo_preset_name(i); i++)
        preset_line(out, 18, topo_preset_name(i), topo_preset_summary(topo_preset_name(i)));
}

static void tail_job(FILE *out) {
    fprintf(out, "\n%s", scenario_defaults_help());
    fprintf(
        out,
        "\nscenario file (all keys optional; options override them):\n"
        "  {\"name\": \"..\", \"description\": \"..\", \"model\": PRESET | CONFIG.json | {seq_len, hidden,\n"
        "   heads, layers, ffn_hidden (4*hidden), vocab, kv_heads (heads), ffn_act (gelu|swiglu|relu2),\n"
        "   norm (layernorm|rmsnorm), position (learned|rotary), tied_embeddings (true),\n"
        "   base: PRESET|CONFIG.json}, \"system\": PRESET | {base: PRESET,\n"
        "   matrix_flops_fp16, vector_flops_fp16, vector_flops_fp32, hbm_bandwidth, hbm_capacity,\n"
        "   nvlink_bandwidth, nvlink_eff, nvlink_latency, ib_bandwidth, ib_eff, ib_latency,\n"
        "   nvlink_size, nic_factor, element_size (GB, 2e-9), mask_element_size (GB, 1e-9),\n"
        "   flop_efficiency (0.8), kernel_overhead (s, 20e-6), fp8_matrix_flops (0: none),\n"
        "   sm_count (0: GEMMs by the flat rule)},\n"
        "   \"nvlink_size\": N, \"gpus\": N,\n"
        "   \"global_batch\": N, \"parallel\": {strategy, dp, tp, tp1, tp2, pp, mbs, nb,\n"
        "   nv: {tp, tp1, tp2, dp, pp}}, \"compat\": \"reference\"|\"corrected\", \"training\":\n"
        "   {recompute, sequence_parallel (bool), attention, embedding (bool), optimizer_step (bool),\n"
        "   interleave, dp_comm, grad_accumulation, precision, tp_comm_overlap (bool), cp_comm} (corrected\n"
        "   only), \"topology\": ..}\n"
        "  Units: TFLOP/s, GB/s, GB, seconds.\n");
    print_presets(out);
}

static void tail_topo(FILE *out) {
    print_topology_presets(out, "topology presets");
    fprintf(out, "\nnode presets (\"node\" in a topology object):\n");
    for (size_t i = 0; topo_node_preset_name(i); i++)
        preset_line(out, 18, topo_node_preset_name(i), topo_node_preset_summary(topo_node_preset_name(i)));
    fprintf(out,
            "\nkinds: ideal, fat-tree, rail-optimized, dragonfly, torus, graphml; every key and default is\n"
            "in docs/topology.md, e.g. --topology '{\"kind\": \"fat-tree\", \"tiers\": 3, \"k\": 8}'.\n");
}

static void tail_collective(FILE *out) {
    print_topology_presets(out, "topology presets (sized to the nodes the GPUs need)");
    fprintf(out,
            "\nUnits: sizes in bytes (nccl-tests' size: the whole buffer), times in microseconds in the\n"
            "table and seconds in JSON, bandwidths in GB/s (1e9) in the table and bytes/s in JSON.\n"
            "Calibration and the measured accuracy: docs/engine.md.\n");
}

static void tail_run(FILE *out) {
    fprintf(out, "\n%s", scenario_defaults_help());
    fprintf(out, "\nTopologies: `stepsim topo --help` lists the presets and kinds.\n");
}

static void tail_compare(FILE *out) {
    fprintf(out,
            "\nShortcuts, sized to the job's GPUs with nodes of the system's NVLink domain and one NIC per\n"
            "GPU at the system's InfiniBand bandwidth: fat-tree (2-tier, non-blocking), fat-tree-2:1 (half\n"
            "the spines: 2:1 at the leaves), rail (rail-optimized), dragonfly (balanced a = 2p = 2h,\n"
            "minimal routing), dragonfly-ugal (the same with UGAL). Presets (dgx-h100-superpod, ...) are\n"
            "sized by --gpus. docs/compare.md has the details.\n");
    fprintf(out, "\n%s", scenario_defaults_help());
    fprintf(out, "Exit codes: 0 ok; 1 runtime failure (gnuplot missing with --plot); 2 bad usage.\n");
}

static void tail_validate(FILE *out) {
    fprintf(
        out,
        "\n--measured columns (header names; extra columns are ignored; rows are numbered from 1 after the\n"
        "header):\n"
        "  required  name, hidden, heads, layers, seq_len, vocab, gpus, tp, pp, dp, system (a preset),\n"
        "            and one of measured_iteration_s or measured_tokens_per_s_per_gpu (turned into\n"
        "            gbs x seq_len / (tokens/s per GPU x gpus)); tp x pp x dp x cp must equal gpus\n"
        "  optional  ffn_hidden (4 x hidden), cp (1; > 1 is context parallelism: strategy 2d-seqp),\n"
        "            gbs, mbs, ga (gbs = dp x mbs x ga; any two give the third; an empty gbs is\n"
        "            dp x mbs x ga with mbs 1 and ga = pp unless given, and needs a measured\n"
        "            throughput), mbs and interleave (virtual stages per GPU): empty cells follow\n"
        "            --unrecorded, recompute (none|selective|full; empty: none),\n"
        "            kv_heads (heads), ffn_act (gelu|swiglu|relu2), norm (layernorm|rmsnorm),\n"
        "            position (learned|rotary), untied_embeddings (0|1), fsdp (0|1), precision\n"
        "            (fp16|bf16|fp8), sequence_parallel (0|1), tp_comm_overlap (0|1),\n"
        "            dp_comm (allreduce|allreduce-overlap|sharded) or distributed_optimizer,\n"
        "            overlap_grad_reduce, overlap_param_gather (0|1; the distributed optimizer is\n"
        "            dp_comm sharded), attention (flash|materialized), grad_accumulation (add|fused)\n"
        "  experts   experts (empty: a dense model), topk (required with experts), shared_experts (0),\n"
        "            expert_ffn_hidden (ffn_hidden), moe_first_dense (0), capacity_factor (empty:\n"
        "            dropless), ep and etp (1); with experts, fp8, the distributed optimizer's buckets\n"
        "            and tp_comm_overlap are predicted without them while the model refuses them\n"
        "  by the GPU generation when empty: A100 systems (Megatron-LM 2020-2022): precision fp16,\n"
        "            sequence_parallel 0, materialized attention, add, a plain all-reduce, no\n"
        "            overlap; newer GPUs (NeMo / Megatron-Core recipes): bf16, sequence_parallel 1,\n"
        "            flash, fused, distributed optimizer with both overlaps, tp_comm_overlap 1\n"
        "  Values the model does not honour yet (fsdp interleaved or with experts, a distributed\n"
        "  optimizer without one of its overlaps, ...) are listed per run under \"not modelled\"\n"
        "  and the run is predicted without them.\n"
        "\nEvery run also gets the embedding and output layer, the optimizer step, and NVLink\n"
        "domains of the system preset filled innermost-first (tp, cp, dp, pp).\n"
        "Unrecorded mbs / interleave: the rule fixed takes mbs 1 and interleave 1 (the defaults of\n"
        "the measured-runs schema); the rule search tries every mbs dividing gbs/dp and every\n"
        "interleave dividing layers/pp that Megatron accepts, with the run's own degrees, and\n"
        "keeps the fastest that fits in memory (the fastest overall if none fits).\n"
        "--sim predicts every run through the simulation too; --sim-topology auto takes the\n"
        "system preset's own network.\n"
        "--calibrate fits the FLOP efficiency of each system preset to its runs (least squares of the\n"
        "percentage errors over 0.40..1.00 in steps of 0.005, analytic model, the other settings kept)\n"
        "and prints its errors with leave-one-out errors beside them (each run predicted with the\n"
        "efficiency fitted to the others); apply a fit with --flop-efficiency X.\n"
        "Constants and reasons: docs/validation.md.\n"
        "Exit codes: 0 ok; 2 bad usage or a bad file (one line naming the file, row and column).\n");
    fprintf(out, "\n%s", scenario_defaults_help());
    char list[512] = "system presets:";
    for (size_t i = 0, used = strlen(list); model_system_preset_name(i) && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, " %s", model_system_preset_name(i));
    fputc('\n', out);
    output_wrapped(out, 2, list);
}

static void tail_sweep(FILE *out) {
    cmd_sweep_tail(out);
}

/* ---- parsing ------------------------------------------------------------------------------------- */

const cli_option_t *cli_option_find(const char *name, cli_cmd_t cmd) {
    for (size_t i = 0; i < COUNT(OPTIONS); i++)
        if ((OPTIONS[i].cmds & CLI_CMD_BIT(cmd)) && strcmp(OPTIONS[i].name, name) == 0)
            return &OPTIONS[i];
    return NULL;
}

static int exists(const char *name) {
    for (size_t i = 0; i < COUNT(OPTIONS); i++)
        if (strcmp(OPTIONS[i].name, name) == 0)
            return 1;
    return 0;
}

static int unknown_option(const char *name, cli_cmd_t cmd, cli_diag_t *d) {
    const char *names[COUNT(OPTIONS)];
    size_t n = 0;
    const char *c = COMMANDS[cmd].name;
    if (exists(name))
        return cli_fail(d, CLI_EUSAGE, "%s: not an option of %s%s; allowed: see `stepsim %s --help`", name, c,
                        cmd == CLI_CMD_SEARCH ? " (search chooses the degrees itself)" : "", c);
    for (size_t i = 0; i < COUNT(OPTIONS); i++)
        if (OPTIONS[i].cmds & CLI_CMD_BIT(cmd))
            names[n++] = OPTIONS[i].name;
    const char *s = cli_suggest(name, names, n);
    if (s)
        return cli_fail(d, CLI_EUSAGE,
                        "%s: unknown option (did you mean %s?); allowed: see `stepsim %s --help`", name, s,
                        c);
    return cli_fail(d, CLI_EUSAGE, "%s: unknown option; allowed: see `stepsim %s --help`", name, c);
}

int cli_wants_help(int first, int argc, char **argv) {
    for (int i = first; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return 1;
    return 0;
}

/* One "--name[=value]" argument at argv[*i]; consumes the value argument when needed. */
static int parse_one(cli_cmd_t cmd, int argc, char **argv, int *i, cli_args_t *a, cli_diag_t *d) {
    char name[64];
    const char *arg = argv[*i];
    const char *eq = strchr(arg, '=');
    const size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), arg);
    const cli_option_t *o = cli_option_find(name, cmd);
    if (!o)
        return unknown_option(name, cmd, d);
    const char *value = "";
    if (o->arg && eq)
        value = eq + 1;
    else if (o->arg && *i + 1 < argc && strncmp(argv[*i + 1], "--", 2) != 0)
        value = argv[++*i];
    else if (o->arg)
        return cli_fail(d, CLI_EUSAGE, "%s: missing value; allowed: %s %s", name, name, o->arg);
    else if (eq)
        return cli_fail(d, CLI_EUSAGE, "%s: takes no value (got \"%.60s\"); allowed: %s alone", name, eq + 1,
                        name);
    if (o->target != CLI_OPT_SCENARIO) {
        a->value[o->target] = value;
        return CLI_OK;
    }
    if (a->n_scenario >= CLI_MAX_SCENARIO_OPTIONS)
        return cli_fail(d, CLI_EUSAGE, "too many options; allowed: at most %d scenario options",
                        CLI_MAX_SCENARIO_OPTIONS);
    a->scenario_opt[a->n_scenario] = o;
    a->scenario_value[a->n_scenario++] = value;
    return CLI_OK;
}

int cli_parse(cli_cmd_t cmd, int first, int argc, char **argv, cli_args_t *a, cli_diag_t *d) {
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    for (int i = first; i < argc; i++) {
        const char *s = argv[i];
        int rc = CLI_OK;
        if (strcmp(s, "-h") == 0)
            a->value[CLI_OPT_HELP] = "";
        else if (strncmp(s, "--", 2) == 0 && s[2])
            rc = parse_one(cmd, argc, argv, &i, a, d);
        else if (s[0] == '-' && s[1])
            rc = unknown_option(s, cmd, d);
        else if (a->file)
            rc = cli_fail(d, CLI_EUSAGE, "%.60s: unexpected argument (the %s is %.60s); allowed: one %s", s,
                          COMMANDS[cmd].positional, a->file, COMMANDS[cmd].positional);
        else
            a->file = s;
        if (rc)
            return rc;
    }
    return CLI_OK;
}

/* ---- applying ------------------------------------------------------------------------------------ */

int cli_apply_scenario(const cli_args_t *a, scenario_t *scn, const char *skip, cli_diag_t *d) {
    memset(scn, 0, sizeof *scn);
    int rc = scenario_init(scn, d);
    if (!rc && a->file)
        rc = scenario_load_file(scn, a->file, d);
    for (int i = 0; !rc && i < a->n_scenario; i++)
        if (!skip || strcmp(a->scenario_opt[i]->name, skip) != 0)
            rc = scenario_set_option(scn, a->scenario_opt[i]->name, a->scenario_value[i], d);
    if (!rc && scn->jobs && a->cmd != CLI_CMD_RUN && a->cmd != CLI_CMD_COMPARE)
        rc = cli_fail(
            d, CLI_EUSAGE,
            "%s: jobs: only `stepsim run` and `stepsim compare` simulate several jobs on one fabric; "
            "allowed: run, compare",
            a->file);
    return rc;
}

const char *cli_scenario_value(const cli_args_t *a, const char *name) {
    const char *v = NULL;
    for (int i = 0; i < a->n_scenario; i++)
        if (strcmp(a->scenario_opt[i]->name, name) == 0)
            v = a->scenario_value[i];
    return v;
}

int cli_check_placement(const cli_args_t *a, cli_diag_t *d) {
    return cli_placement_check(a->value[CLI_OPT_PLACEMENT], d);
}

int cli_placement_check(const char *v, cli_diag_t *d) {
    step_placement_t p;
    if (v && step_placement_parse(v, &p) != SIM_OK)
        return cli_fail(
            d, CLI_EUSAGE,
            "--placement: \"%.60s\" is not an order of dimensions; allowed: a comma-separated order "
            "of tp, cp, pp, dp (innermost first), e.g. tp,cp,pp,dp",
            v);
    return CLI_OK;
}
