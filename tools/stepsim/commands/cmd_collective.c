/* cmd_collective.c - `stepsim collective`: nccl-tests for a simulated cluster. One collective (op,
 * algorithm, protocol, GPUs, GPUs per node, groups, placement) over a size or a doubling size sweep on a
 * topology built by topo/, simulated by sim_coll_bench_run on a fresh engine per size; prints time,
 * the closed form, algbw and busbw per size (docs/cli.md), as a table or one JSON object
 * (output/print_collective.c).
 *
 * The topology comes from --topology, else the scenario file's "topology", else "ideal" built from the
 * system (--system or the scenario's): the system only gives link speeds to the ideal topology. Presets
 * and built kinds are sized to the nodes the GPUs need (--gpus / --gpus-per-node), tori and GraphML
 * files are taken whole. With --calibration nccl (the default) the engine runs NCCL's cost model
 * (sim_config_nccl: protocols, launch and step latencies, NCCL's NVLink rate) for the GPU and host the
 * topology's node implies, and the network links run at the fabric's NCCL efficiency (docs/engine.md,
 * "Calibration"); --calibration none gives the bare alpha-beta flow model on nominal links.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <igraph.h>

#include "alloc.h"
#include "commands.h"
#include "print.h"
#include "progress.h"
#include "sim.h"
#include "topo.h"
#include "topo_json.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_SIZES 64
#define MAX_SIZE_BYTES 1125899906842624.0 /* 1 PiB */

/* Everything resolved from the arguments. */
typedef struct coll_req {
    sim_coll_op_t op;
    sim_coll_algo_t algo;
    sim_proto_t proto;
    sim_fidelity_t fidelity;
    int64_t gpus, gpn, groups;
    int strided, calibrated, channels;
    int nvls_off;               /* --nvls off */
    int collnet;                /* --collnet on, or --algo collnet */
    double net_eff, nvlink_eff; /* 0: the default */
    double sizes[MAX_SIZES];
    int n_sizes;
} coll_req_t;

/* ---- parsing ---------------------------------------------------------------------------------- */

static int parse_int(const char *opt, const char *text, int64_t lo, int64_t hi, int64_t *out, cli_diag_t *d) {
    char *end = NULL;
    errno = 0;
    const long long v = strtoll(text, &end, 10);
    if (!text[0] || *end || errno)
        return cli_fail(d, CLI_EUSAGE, "%s: \"%.60s\" is not an integer; allowed: %lld..%lld", opt, text,
                        (long long)lo, (long long)hi);
    if (v < lo || v > hi)
        return cli_fail(d, CLI_EUSAGE, "%s: %lld is out of range; allowed: %lld..%lld", opt, v, (long long)lo,
                        (long long)hi);
    *out = v;
    return CLI_OK;
}

static int parse_fraction(const char *opt, const char *text, double *out, cli_diag_t *d) {
    char *end = NULL;
    errno = 0;
    const double v = strtod(text, &end);
    if (!text[0] || *end || errno || !(v > 0.0 && v <= 1.0))
        return cli_fail(d, CLI_EUSAGE, "%s: \"%.60s\" is not a fraction; allowed: a number in (0, 1]", opt,
                        text);
    *out = v;
    return CLI_OK;
}

/* "65536", "64K", "1M", "8G": bytes, suffixes powers of two. */
static int parse_size(const char *opt, const char *text, double *out, cli_diag_t *d) {
    char *end = NULL;
    errno = 0;
    const unsigned long long v = strtoull(text, &end, 10);
    double mult = 1.0;
    if (end != text && *end && !end[1]) {
        switch (*end) {
        case 'K':
        case 'k':
            mult = 1024.0;
            end++;
            break;
        case 'M':
        case 'm':
            mult = 1024.0 * 1024.0;
            end++;
            break;
        case 'G':
        case 'g':
            mult = 1024.0 * 1024.0 * 1024.0;
            end++;
            break;
        default:
            break;
        }
    }
    if (end == text || *end || errno || text[0] == '-')
        return cli_fail(
            d, CLI_EUSAGE,
            "%s: \"%.60s\" is not a size; allowed: a positive integer of bytes, optionally with a K, "
            "M or G suffix (1K = 1024)",
            opt, text);
    const double bytes = (double)v * mult;
    if (!(bytes >= 1.0) || bytes > MAX_SIZE_BYTES)
        return cli_fail(d, CLI_EUSAGE, "%s: %.60s is out of range; allowed: 1 byte to 1P (2^50 bytes)", opt,
                        text);
    *out = bytes;
    return CLI_OK;
}

static int parse_sizes(const char *text, coll_req_t *r, cli_diag_t *d) {
    const char *colon = strchr(text, ':');
    if (!colon)
        return cli_fail(d, CLI_EUSAGE, "--sizes: \"%.60s\" is not MIN:MAX; allowed: e.g. --sizes 1M:1G",
                        text);
    char lo_text[64];
    snprintf(lo_text, sizeof lo_text, "%.*s", (int)((size_t)(colon - text) < 63 ? colon - text : 63), text);
    double lo, hi;
    int rc = parse_size("--sizes", lo_text, &lo, d);
    if (!rc)
        rc = parse_size("--sizes", colon + 1, &hi, d);
    if (rc)
        return rc;
    if (lo > hi)
        return cli_fail(d, CLI_EUSAGE, "--sizes: MIN %s is larger than MAX %s; allowed: MIN <= MAX", lo_text,
                        colon + 1);
    r->n_sizes = 0;
    for (double s = lo; s <= hi; s *= 2.0) {
        if (r->n_sizes == MAX_SIZES)
            return cli_fail(d, CLI_EUSAGE,
                            "--sizes: %.60s gives more than %d sizes; allowed: MAX / MIN < 2^%d", text,
                            MAX_SIZES, MAX_SIZES);
        r->sizes[r->n_sizes++] = s;
    }
    return CLI_OK;
}

static int parse_choice(const char *opt, const char *text, const char *const *names, int n, int *out,
                        const char *allowed, cli_diag_t *d) {
    for (int i = 0; i < n; i++)
        if (strcmp(text, names[i]) == 0) {
            *out = i;
            return CLI_OK;
        }
    const char *sg = cli_suggest(text, names, (size_t)n);
    return cli_fail(d, CLI_EUSAGE, "%s: \"%.60s\" is not allowed%s%s%s; allowed: %s", opt, text,
                    sg ? " (did you mean \"" : "", sg ? sg : "", sg ? "\"?)" : "", allowed);
}

/* Which algorithms apply to which op (the engine checks the group's shape). */
static const char *algo_mismatch(sim_coll_op_t op, sim_coll_algo_t algo) {
    const int ring_op = op <= SIM_COLL_REDUCESCATTER,
              chain_op = op == SIM_COLL_BROADCAST || op == SIM_COLL_REDUCE;
    switch (algo) {
    case SIM_ALGO_TREE:
    case SIM_ALGO_COLLNET:
        return op == SIM_COLL_ALLREDUCE ? NULL : "applies to allreduce only";
    case SIM_ALGO_HIERARCHICAL:
        return ring_op || op == SIM_COLL_ALLTOALL
                   ? NULL
                   : "applies to allreduce, allgather, reducescatter and alltoall";
    case SIM_ALGO_HALVING_DOUBLING:
    case SIM_ALGO_NVLS:
        return ring_op ? NULL : "applies to allreduce, allgather and reducescatter";
    case SIM_ALGO_RING:
        return ring_op || chain_op || op == SIM_COLL_SENDRECV ? NULL : "does not apply";
    case SIM_ALGO_CHAIN:
        return chain_op ? NULL : "applies to broadcast and reduce";
    case SIM_ALGO_DIRECT:
        return op == SIM_COLL_SENDRECV || op == SIM_COLL_ALLTOALL ? NULL : "applies to sendrecv and alltoall";
    default:
        return NULL;
    }
}

static int resolve_request(const cli_args_t *a, coll_req_t *r, cli_diag_t *d) {
    static const char *const ops[] = {"allreduce", "allgather", "reducescatter", "broadcast",
                                      "reduce",    "sendrecv",  "alltoall"};
    static const char *const algos[] = {"auto",  "ring",   "tree", "hierarchical", "halving-doubling",
                                        "chain", "direct", "nvls", "collnet"};
    static const char *const protos[] = {"auto", "simple", "ll", "ll128"};
    static const char *const placements[] = {"contiguous", "strided"};
    static const char *const fidelities[] = {"step", "fast"};
    static const char *const calibrations[] = {"none", "nccl"};
    memset(r, 0, sizeof *r);
    r->op = SIM_COLL_ALLREDUCE;
    r->fidelity = SIM_FIDELITY_FAST;
    r->groups = 1;
    r->calibrated = 1;
    r->channels = SIM_CHANNELS_AUTO;
    int v = 0, rc = CLI_OK;
    const char *const *val = a->value;
    if (!rc && val[CLI_OPT_OP] &&
        !(rc = parse_choice("--op", val[CLI_OPT_OP], ops, (int)COUNT(ops), &v,
                            "allreduce, allgather, reducescatter, broadcast, reduce, sendrecv, alltoall", d)))
        r->op = (sim_coll_op_t)v;
    if (!rc && val[CLI_OPT_ALGO] &&
        !(rc = parse_choice("--algo", val[CLI_OPT_ALGO], algos, (int)COUNT(algos), &v,
                            "ring, tree, hierarchical, halving-doubling, chain, direct, nvls, collnet, auto",
                            d)))
        r->algo = (sim_coll_algo_t)v;
    if (!rc && val[CLI_OPT_PROTO] &&
        !(rc = parse_choice("--proto", val[CLI_OPT_PROTO], protos, (int)COUNT(protos), &v,
                            "simple, ll, ll128, auto", d)))
        r->proto = (sim_proto_t)v;
    if (!rc && val[CLI_OPT_GROUP_PLACEMENT] &&
        !(rc = parse_choice("--placement", val[CLI_OPT_GROUP_PLACEMENT], placements, 2, &v,
                            "contiguous, strided", d)))
        r->strided = v;
    if (!rc && val[CLI_OPT_FIDELITY] &&
        !(rc = parse_choice("--fidelity", val[CLI_OPT_FIDELITY], fidelities, 2, &v, "step, fast", d)))
        r->fidelity = v ? SIM_FIDELITY_FAST : SIM_FIDELITY_STEP;
    if (!rc && val[CLI_OPT_CALIBRATION] &&
        !(rc = parse_choice("--calibration", val[CLI_OPT_CALIBRATION], calibrations, 2, &v, "nccl, none", d)))
        r->calibrated = v;
    if (!rc && val[CLI_OPT_NVLS] &&
        !(rc = parse_choice("--nvls", val[CLI_OPT_NVLS], (const char *const[]){"on", "off"}, 2, &v, "on, off",
                            d)))
        r->nvls_off = v;
    if (!rc && val[CLI_OPT_COLLNET] &&
        !(rc = parse_choice("--collnet", val[CLI_OPT_COLLNET], (const char *const[]){"off", "on"}, 2, &v,
                            "on, off", d)))
        r->collnet = v;
    if (!rc && val[CLI_OPT_COLLNET] && !r->collnet && r->algo == SIM_ALGO_COLLNET)
        rc = cli_fail(d, CLI_EUSAGE,
                      "--algo: collnet with --collnet off; allowed: --collnet on, or another --algo");
    r->collnet |= r->algo == SIM_ALGO_COLLNET;
    if (!rc && r->nvls_off && r->algo == SIM_ALGO_NVLS)
        rc = cli_fail(d, CLI_EUSAGE, "--algo: nvls with --nvls off; allowed: --nvls on, or another --algo");
    if (!rc && val[CLI_OPT_GROUP_GPUS])
        rc = parse_int("--gpus", val[CLI_OPT_GROUP_GPUS], 1, INT32_MAX, &r->gpus, d);
    if (!rc && val[CLI_OPT_GPUS_PER_NODE])
        rc = parse_int("--gpus-per-node", val[CLI_OPT_GPUS_PER_NODE], 1, 1 << 20, &r->gpn, d);
    if (!rc && val[CLI_OPT_GROUPS])
        rc = parse_int("--groups", val[CLI_OPT_GROUPS], 1, INT32_MAX, &r->groups, d);
    if (!rc && val[CLI_OPT_CHANNELS] && strcmp(val[CLI_OPT_CHANNELS], "auto") != 0) {
        int64_t k;
        if (!(rc = parse_int("--channels", val[CLI_OPT_CHANNELS], 1, 64, &k, d)))
            r->channels = (int)k;
    }
    if (!rc && val[CLI_OPT_NET_EFFICIENCY])
        rc = parse_fraction("--net-efficiency", val[CLI_OPT_NET_EFFICIENCY], &r->net_eff, d);
    if (!rc && val[CLI_OPT_NVLINK_EFFICIENCY])
        rc = parse_fraction("--nvlink-efficiency", val[CLI_OPT_NVLINK_EFFICIENCY], &r->nvlink_eff, d);
    if (!rc && val[CLI_OPT_SIZE] && val[CLI_OPT_SIZES])
        rc = cli_fail(d, CLI_EUSAGE, "--size: given with --sizes %.60s; allowed: one of --size, --sizes",
                      val[CLI_OPT_SIZES]);
    if (!rc && val[CLI_OPT_SIZE]) {
        r->n_sizes = 1;
        rc = parse_size("--size", val[CLI_OPT_SIZE], &r->sizes[0], d);
    } else if (!rc) {
        rc = parse_sizes(val[CLI_OPT_SIZES] ? val[CLI_OPT_SIZES] : "1M:1G", r, d);
    }
    if (rc)
        return rc;
    const char *why = algo_mismatch(r->op, r->algo);
    if (why)
        return cli_fail(d, CLI_EUSAGE, "--algo: %s %s (--op %s); allowed: auto or an algorithm of the op",
                        sim_coll_algo_name(r->algo), why, sim_coll_op_name(r->op));
    return CLI_OK;
}

/* ---- topology ----------------------------------------------------------------------------------- */

typedef struct coll_topo {
    topo_params_t p;
    char where[300], prefix[320];
    topo_t *t;
    int64_t nodes, node_gpus;
} coll_topo_t;

/* Parameters for `gpus` GPUs (0: the topology's own size). */
static int topo_params_for(const cli_args_t *a, scenario_t *scn, int64_t gpus, coll_topo_t *ct,
                           cli_diag_t *d) {
    snprintf(ct->where, sizeof ct->where, "%s", scn->topology.where);
    if (cli_scenario_value(a, "--topology") || scn->topology.form == TOPO_SPEC_NONE)
        snprintf(ct->prefix, sizeof ct->prefix, "%s: ", ct->where);
    else
        snprintf(ct->prefix, sizeof ct->prefix, "%s: topology.", a->file);
    model_system_t sys;
    scenario_system(scn, &sys);
    double max_memory_gb = 0.0; /* --max-memory: the topology's budget (0: the default) */
    int rc = a->value[CLI_OPT_MAX_MEMORY]
                 ? cmd_parse_max_memory(a->value[CLI_OPT_MAX_MEMORY], &max_memory_gb, d)
                 : CLI_OK;
    if (!rc)
        rc = topo_spec_params(&scn->topology, NULL, &sys, gpus, scn->value[SCN_GPUS], &ct->p, d);
    ct->p.max_memory_bytes = max_memory_gb * 1e9;
    return rc;
}

/* Build the topology the request needs: first its own size, to learn the node; then, for kinds that
 * can be sized, just the nodes the GPUs take. Fills r->gpus and r->gpn when they were not given. */
static int build_topology(const cli_args_t *a, scenario_t *scn, coll_req_t *r, coll_topo_t *ct,
                          cli_diag_t *d) {
    int rc = topo_params_for(a, scn, 0, ct, d);
    if (rc)
        return rc;
    const topo_kind_t kind = ct->p.kind;
    const int sized = kind != TOPO_KIND_TORUS && kind != TOPO_KIND_GRAPHML;
    int64_t g = ct->p.node.gpus_per_node > 0 ? ct->p.node.gpus_per_node : 1;
    if (kind != TOPO_KIND_GRAPHML && r->gpn > g)
        return cli_fail(d, CLI_EUSAGE,
                        "--gpus-per-node: %lld exceeds the topology's %lld GPUs per node; allowed: 1..%lld",
                        (long long)r->gpn, (long long)g, (long long)g);
    if (sized && r->gpus > 0) {
        const int64_t k = r->gpn > 0 ? r->gpn : r->gpus < g ? r->gpus : g;
        if (r->gpus % k)
            return cli_fail(
                d, CLI_EUSAGE,
                "--gpus: %lld is not a multiple of %lld GPUs per node; allowed: a multiple of %lld",
                (long long)r->gpus, (long long)k, (long long)k);
        if ((rc = topo_params_for(a, scn, r->gpus / k * g, ct, d)))
            return rc;
    }
    topo_issue_t issue;
    char msg[400];
    igraph_set_error_handler(igraph_error_handler_ignore);
    igraph_set_warning_handler(igraph_warning_handler_ignore);
    rc = topo_new(&ct->p, &ct->t, &issue);
    if (rc)
        return cli_fail(d, topo_json_exit_code(rc), "%s%s", ct->prefix,
                        topo_issue_format(&issue, msg, sizeof msg));
    if ((rc = perturb_links_apply(&scn->perturb.links, scn->perturb.seed, ct->t, d)))
        return rc;
    ct->nodes = topo_node_count(ct->t);
    const int64_t n = topo_gpu_count(ct->t);
    /* NVLink domains as the engine sees them (sim_topo_network): nodes when GPUs are node-major. */
    sim_network_desc_t net;
    if (sim_topo_network(ct->t, &net) != SIM_OK)
        return cli_fail(d, CLI_EUSAGE, "%stoo many GPUs or links for the engine (2^31)", ct->prefix);
    ct->node_gpus = net.gpus_per_domain;
    if (r->gpn > ct->node_gpus)
        return cli_fail(d, CLI_EUSAGE,
                        "--gpus-per-node: %lld exceeds the topology's %lld GPUs per node; allowed: 1..%lld",
                        (long long)r->gpn, (long long)ct->node_gpus, (long long)ct->node_gpus);
    if (r->gpn == 0) /* a node's GPUs, or all of them when fewer */
        r->gpn = r->gpus > 0 && r->gpus < ct->node_gpus ? r->gpus : ct->node_gpus;
    const int64_t domains = n / ct->node_gpus;
    if (r->gpus == 0)
        r->gpus = domains * r->gpn;
    if (r->gpus % r->gpn)
        return cli_fail(d, CLI_EUSAGE,
                        "--gpus: %lld is not a multiple of %lld GPUs per node; allowed: a multiple of %lld",
                        (long long)r->gpus, (long long)r->gpn, (long long)r->gpn);
    if (r->gpus / r->gpn > domains)
        return cli_fail(d, CLI_EUSAGE, "--gpus: %lld at %lld per node need %lld nodes; the topology has %lld",
                        (long long)r->gpus, (long long)r->gpn, (long long)(r->gpus / r->gpn),
                        (long long)domains);
    return CLI_OK;
}

/* ---- engine configuration ------------------------------------------------------------------------ */

/* NCCL's calibration from the topology's link technologies (sim_config_nccl_topology), then the
 * options' efficiencies (per kind: every link of the kind). */
static void engine_config(const coll_req_t *r, const topo_t *t, sim_config_t *cfg) {
    sim_config_default(cfg);
    cfg->fidelity = r->fidelity;
    if (r->calibrated) {
        sim_config_nccl_topology(cfg, t);
        cfg->nvls = r->nvls_off ? 0 : cfg->nvls;
        cfg->collnet = r->collnet;
        /* an efficiency given for a kind holds for every link of the kind */
        if (r->net_eff > 0 || r->nvlink_eff > 0)
            cfg->use_link_tech_efficiency = 0;
        if (r->net_eff > 0)
            cfg->link_kind_efficiency[SIM_LINK_NETWORK] = r->net_eff;
        if (r->nvlink_eff > 0)
            cfg->link_kind_efficiency[SIM_LINK_NVLINK] = r->nvlink_eff;
    } else {
        cfg->nvls = !r->nvls_off && sim_topo_nvls(t); /* the hardware's; the bare model's constants */
        cfg->collnet = r->collnet;
        if (r->net_eff > 0)
            cfg->link_kind_efficiency[SIM_LINK_NETWORK] = r->net_eff;
        if (r->nvlink_eff > 0)
            cfg->link_kind_efficiency[SIM_LINK_NVLINK] = r->nvlink_eff;
    }
}

/* ---- running and printing ------------------------------------------------------------------------ */

static int run_sizes(const coll_req_t *r, const coll_topo_t *ct, const sim_config_t *cfg,
                     collective_row_t *rows, cli_progress_t *progress, cli_diag_t *d) {
    sim_network_desc_t net;
    sim_topo_network(ct->t, &net);
    for (int i = 0; i < r->n_sizes; i++) {
        const sim_coll_bench_t b = {.op = r->op,
                                    .algo = r->algo,
                                    .fidelity = r->fidelity,
                                    .mode = SIM_COMM_NETWORK,
                                    .gpus = (int32_t)r->gpus,
                                    .groups = (int32_t)r->groups,
                                    .gpus_per_node = (int32_t)r->gpn,
                                    .channels = r->channels,
                                    .strided = r->strided,
                                    .size_bytes = r->sizes[i],
                                    .proto = r->proto};
        char err[300];
        snprintf(err, sizeof err, "%.0f bytes", r->sizes[i]);
        cli_progress_stage(progress, i, r->n_sizes, err);
        rows[i].size_bytes = r->sizes[i];
        const int rc = sim_coll_bench_run(cfg, &net, &b, &rows[i].res, err, sizeof err);
        const char *why = strncmp(err, "collective: ", 12) == 0 ? err + 12 : err;
        if (rc == SIM_ENOMEM)
            return cli_fail(d, CLI_ERUNTIME, "out of memory (%s)", why);
        if (rc)
            return cli_fail(d, CLI_EUSAGE, "%s; allowed: another --algo, --gpus, --groups or --placement",
                            why);
        const double v[4] = {rows[i].res.time_s, rows[i].res.closed_form_s, rows[i].res.algbw_bytes_per_s,
                             rows[i].res.busbw_bytes_per_s};
        const char *name[4] = {"time", "closed-form time", "algbw", "busbw"};
        for (int k = 0; k < 4; k++) {
            char what[96];
            snprintf(what, sizeof what, "collective of %.0f bytes: %s", r->sizes[i], name[k]);
            const int frc = cmd_require_finite(v[k], what, NULL, d);
            if (frc)
                return frc;
        }
    }
    return CLI_OK;
}

int cmd_collective(const cli_args_t *a, FILE *out, FILE *err, cli_diag_t *d) {
    coll_req_t r;
    int rc;
    if ((rc = resolve_request(a, &r, d)))
        return rc;
    scenario_t scn;
    memset(&scn, 0, sizeof scn);
    coll_topo_t ct;
    memset(&ct, 0, sizeof ct);
    collective_row_t *rows = NULL;
    rc = cli_apply_scenario(a, &scn, NULL, d);
    if (!rc && !cli_has(a, CLI_OPT_GROUP_GPUS) && scn.given[SCN_GPUS])
        r.gpus = scn.value[SCN_GPUS];
    if (!rc)
        rc = build_topology(a, &scn, &r, &ct, d);
    if (!rc && r.gpus % r.groups)
        rc = cli_fail(d, CLI_EUSAGE, "--groups: %lld does not divide --gpus %lld; allowed: a divisor of %lld",
                      (long long)r.groups, (long long)r.gpus, (long long)r.gpus);
    if (!rc && r.op == SIM_COLL_SENDRECV && r.gpus / r.groups != 2)
        rc = cli_fail(d, CLI_EUSAGE,
                      "--groups: sendrecv runs in groups of 2 GPUs, got %lld of %lld; allowed: --groups %lld",
                      (long long)r.groups, (long long)(r.gpus / r.groups), (long long)(r.gpus / 2));
    if (!rc && r.algo == SIM_ALGO_HALVING_DOUBLING) {
        const int64_t m = r.gpus / r.groups;
        if (m & (m - 1))
            rc = cli_fail(d, CLI_EUSAGE, "--algo: halving-doubling needs a power-of-two group, got %lld GPUs",
                          (long long)m);
    }
    sim_config_t cfg;
    if (!rc && r.algo == SIM_ALGO_NVLS && !sim_topo_nvls(ct.t))
        rc = cli_fail(d, CLI_EUSAGE,
                      "--algo: nvls needs NVLink SHARP (an NVSwitch of NVLink-4 or later: H100, B200); this "
                      "topology's NVLink is %s; allowed: ring, tree, hierarchical, halving-doubling, auto",
                      topo_tech_name(topo_kind_tech(ct.t, TOPO_LINK_NVLINK)));
    if (!rc && r.algo == SIM_ALGO_NVLS && r.gpus / r.groups > r.gpn)
        rc =
            cli_fail(d, CLI_EUSAGE,
                     "--algo: nvls runs inside one NVLink domain, but a group of %lld GPUs spans %lld nodes; "
                     "allowed: --gpus up to %lld per group",
                     (long long)(r.gpus / r.groups), (long long)((r.gpus / r.groups + r.gpn - 1) / r.gpn),
                     (long long)r.gpn);
    if (!rc && r.collnet && !sim_topo_sharp(ct.t))
        rc = cli_fail(
            d, CLI_EUSAGE,
            "%s: collnet needs InfiniBand SHARP in the network's switches; this topology's network is "
            "%s; allowed: an InfiniBand topology (ib-hdr, ib-ndr, ib-xdr), or --collnet off",
            r.algo == SIM_ALGO_COLLNET ? "--algo" : "--collnet",
            topo_tech_name(topo_kind_tech(ct.t, TOPO_LINK_NETWORK)));
    if (!rc && r.algo == SIM_ALGO_COLLNET && r.gpus / r.groups <= r.gpn)
        rc = cli_fail(d, CLI_EUSAGE,
                      "--algo: collnet runs across nodes, but a group of %lld GPUs fits in one node of %lld; "
                      "allowed: groups of more than %lld GPUs",
                      (long long)(r.gpus / r.groups), (long long)r.gpn, (long long)r.gpn);
    if (!rc && (r.algo == SIM_ALGO_NVLS || r.algo == SIM_ALGO_COLLNET) && r.proto != SIM_PROTO_AUTO &&
        r.proto != SIM_PROTO_SIMPLE)
        rc = cli_fail(d, CLI_EUSAGE,
                      "--proto: %s with --algo %s; allowed: simple or auto (it runs Simple only)",
                      sim_proto_name(r.proto), sim_coll_algo_name(r.algo));
    if (!rc) {
        engine_config(&r, ct.t, &cfg);
        rows = alloc_calloc((size_t)r.n_sizes, sizeof *rows);
        if (!rows)
            rc = cli_fail(d, CLI_ERUNTIME, "collective: out of memory");
    }
    if (!rc) {
        cli_progress_t progress;
        cli_progress_init(&progress, err, "collective", cli_has(a, CLI_OPT_QUIET), 0);
        rc = run_sizes(&r, &ct, &cfg, rows, &progress, d);
        cli_progress_end(&progress);
    }
    if (!rc) {
        const collective_result_t res = {r.op,
                                         r.algo,
                                         r.proto,
                                         r.fidelity,
                                         r.gpus,
                                         r.gpn,
                                         r.groups,
                                         r.strided,
                                         r.calibrated,
                                         ct.t,
                                         cfg.link_kind_efficiency[SIM_LINK_NETWORK],
                                         cfg.link_kind_efficiency[SIM_LINK_NVLINK],
                                         rows,
                                         r.n_sizes};
        if (print_collective(out, &res, cli_has(a, CLI_OPT_JSON)) != 0)
            rc = cli_fail(d, CLI_ERUNTIME, "collective: out of memory while printing");
    }
    free(rows);
    topo_free(ct.t);
    scenario_destroy(&scn);
    return rc;
}
