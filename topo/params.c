/* params.c - topology parameters: defaults per kind, node and topology presets, names, and the
 * validation that names the first bad parameter with its value and what is allowed.
 *
 * Figures marked (approx.) are estimates, not published figures, and are meant to be calibrated;
 * docs/topology.md lists every default and where the others come from.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "topo_internal.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- names ------------------------------------------------------------------------------------- */

static const char *const KIND_NAMES[TOPO_KIND_COUNT] = {"ideal",     "fat-tree", "rail-optimized",
                                                        "dragonfly", "torus",    "graphml"};
static const char *const ROUTING_NAMES[TOPO_ROUTING_COUNT] = {
    "default", "dmodk", "ecmp-hash", "ecmp-spread", "minimal", "valiant", "ugal", "dor", "shortest"};
static const char *const ARRANGEMENT_NAMES[] = {"absolute", "relative", "circulant"};
static const char *const SCALEUP_NAMES[] = {"switch", "mesh"};

static int parse_name(const char *const *names, size_t n, const char *name, int *out) {
    for (size_t i = 0; name && i < n; i++) {
        if (strcmp(names[i], name) == 0) {
            *out = (int)i;
            return TOPO_OK;
        }
    }
    return TOPO_EINVAL;
}

const char *topo_kind_name(topo_kind_t kind) {
    return (unsigned)kind < TOPO_KIND_COUNT ? KIND_NAMES[kind] : "unknown";
}
int topo_kind_parse(const char *name, topo_kind_t *out) {
    int v = 0;
    int rc = parse_name(KIND_NAMES, COUNT(KIND_NAMES), name, &v);
    if (rc == TOPO_OK)
        *out = (topo_kind_t)v;
    return rc;
}
const char *topo_routing_name(topo_routing_t r) {
    return (unsigned)r < TOPO_ROUTING_COUNT ? ROUTING_NAMES[r] : "unknown";
}
int topo_routing_parse(const char *name, topo_routing_t *out) {
    int v = 0;
    int rc = parse_name(ROUTING_NAMES, COUNT(ROUTING_NAMES), name, &v);
    if (rc == TOPO_OK)
        *out = (topo_routing_t)v;
    return rc;
}
const char *topo_arrangement_name(topo_arrangement_t a) {
    return (unsigned)a < COUNT(ARRANGEMENT_NAMES) ? ARRANGEMENT_NAMES[a] : "unknown";
}
int topo_arrangement_parse(const char *name, topo_arrangement_t *out) {
    int v = 0;
    int rc = parse_name(ARRANGEMENT_NAMES, COUNT(ARRANGEMENT_NAMES), name, &v);
    if (rc == TOPO_OK)
        *out = (topo_arrangement_t)v;
    return rc;
}
const char *topo_scaleup_name(topo_scaleup_t s) {
    return (unsigned)s < COUNT(SCALEUP_NAMES) ? SCALEUP_NAMES[s] : "unknown";
}
int topo_scaleup_parse(const char *name, topo_scaleup_t *out) {
    int v = 0;
    int rc = parse_name(SCALEUP_NAMES, COUNT(SCALEUP_NAMES), name, &v);
    if (rc == TOPO_OK)
        *out = (topo_scaleup_t)v;
    return rc;
}

const char *topo_status_name(int status) {
    switch (status) {
    case TOPO_OK:
        return "ok";
    case TOPO_EINVAL:
        return "invalid parameter";
    case TOPO_ENOMEM:
        return "out of memory";
    case TOPO_EIO:
        return "I/O error";
    case TOPO_EFORMAT:
        return "bad GraphML";
    case TOPO_EUNREACHABLE:
        return "unreachable GPU pair";
    case TOPO_ERANGE:
        return "out of range";
    case TOPO_EIGRAPH:
        return "igraph error";
    case TOPO_ETOOBIG:
        return "too big";
    default:
        return "unknown error";
    }
}

char *topo_issue_format(const topo_issue_t *issue, char *buf, size_t size) {
    if (size == 0)
        return buf;
    if (!issue) {
        buf[0] = '\0';
        return buf;
    }
    if (issue->value[0])
        snprintf(buf, size, "%s: %s %s", issue->field, issue->value, issue->rule);
    else
        snprintf(buf, size, "%s: %s", issue->field, issue->rule);
    return buf;
}

/* ---- node presets ------------------------------------------------------------------------------ */

typedef struct {
    topo_node_params_t node;
    const char *summary;
} node_preset_t;

/* name, GPUs, NICs, scale-up, NVLink B/s per GPU, NVLink latency, PCIe B/s, PCIe latency, NVLink
 * and PCIe technologies (their bandwidths and latencies are the table's unless the node's differ),
 * AMD host, NICs on the CPU */
static const node_preset_t NODE_PRESETS[] = {
    {{"single", 1, 1, TOPO_SCALEUP_SWITCH, 0, 0, 0, 0, TOPO_TECH_AUTO, TOPO_TECH_AUTO, 0, 0},
     "one GPU that is its own network endpoint"},
    {{"dgx-a100", 8, 8, TOPO_SCALEUP_SWITCH, 300e9, 0.25e-6, 0, 0, TOPO_TECH_NVLINK3, TOPO_TECH_PCIE4, 1, 0},
     "DGX A100: 8 GPUs on NVSwitch (NVLink-3, 300 GB/s per GPU per direction), 8 HDR NICs"},
    {{"dgx-h100", 8, 8, TOPO_SCALEUP_SWITCH, 450e9, 0.25e-6, 0, 0, TOPO_TECH_NVLINK4, TOPO_TECH_PCIE5, 0, 0},
     "DGX H100: 8 GPUs on NVSwitch (NVLink-4, 450 GB/s per GPU per direction), 8 NDR NICs"},
    {{"dgx-b200", 8, 8, TOPO_SCALEUP_SWITCH, 900e9, 0.25e-6, 0, 0, TOPO_TECH_NVLINK5, TOPO_TECH_PCIE5, 0, 0},
     "DGX B200: 8 GPUs on NVSwitch (NVLink-5, 900 GB/s per GPU per direction), 8 NICs"},
    {{"nvl72", 72, 72, TOPO_SCALEUP_SWITCH, 900e9, 0.25e-6, 0, 0, TOPO_TECH_NVLINK5, TOPO_TECH_PCIE5, 0, 0},
     "GB200 NVL72: one 72-GPU NVLink domain (900 GB/s per GPU per direction), a NIC per GPU (approx.)"},
    {{"perlmutter-gpu", 4, 4, TOPO_SCALEUP_MESH, 300e9, 0.25e-6, 0, 0, TOPO_TECH_NVLINK3, TOPO_TECH_PCIE4, 1,
      1},
     "Perlmutter GPU node: 4 A100 in an NVLink-3 mesh (100 GB/s per pair), 4 Slingshot NICs"},
    {{"frontier-node", 8, 4, TOPO_SCALEUP_MESH, 350e9, 0.25e-6, 50e9, 0.25e-6, TOPO_TECH_NVLINK3,
      TOPO_TECH_PCIE4, 1, 1},
     "Frontier node: 8 MI250X GCDs in an Infinity Fabric mesh (50 GB/s per pair, approx.; modelled as "
     "NVLink-3), 4 NICs on PCIe Gen4 ESM (50 GB/s)"},
};

int topo_node_preset(const char *name, topo_node_params_t *out) {
    for (size_t i = 0; name && i < COUNT(NODE_PRESETS); i++) {
        if (strcmp(NODE_PRESETS[i].node.name, name) == 0) {
            *out = NODE_PRESETS[i].node;
            return TOPO_OK;
        }
    }
    return TOPO_EINVAL;
}
const char *topo_node_preset_name(size_t index) {
    return index < COUNT(NODE_PRESETS) ? NODE_PRESETS[index].node.name : NULL;
}
const char *topo_node_preset_summary(const char *name) {
    for (size_t i = 0; name && i < COUNT(NODE_PRESETS); i++)
        if (strcmp(NODE_PRESETS[i].node.name, name) == 0)
            return NODE_PRESETS[i].summary;
    return NULL;
}

/* ---- defaults ---------------------------------------------------------------------------------- */

void topo_params_init(topo_params_t *p, topo_kind_t kind) {
    memset(p, 0, sizeof *p);
    p->kind = kind;
    snprintf(p->name, sizeof p->name, "%s", topo_kind_name(kind));
    topo_node_preset("single", &p->node);
    topo_params_set_network(p, TOPO_TECH_IB_NDR); /* 400 Gb/s */
    p->seed = 1;
    p->dragonfly.ugal_candidates = 4;
    switch (kind) {
    case TOPO_KIND_IDEAL:
        /* the analytic model's default system (A100, NVLink domain 8) */
        p->gpus = 4096;
        topo_node_preset("dgx-a100", &p->node);
        snprintf(p->node.name, sizeof p->node.name, "custom");
        p->node.nvlink_tech = TOPO_TECH_AUTO; /* from the system's NVLink rate; a host of no make */
        p->node.amd_host = 0;
        p->node.nvlink_latency_s = 2.5e-6;
        p->network = TOPO_TECH_AUTO; /* from the system's InfiniBand rate */
        p->link_bandwidth_bytes_per_s = 25e9;
        p->link_latency_s = 5e-6;
        break;
    case TOPO_KIND_FAT_TREE:
        p->fat_tree = (topo_fat_tree_params_t){3, 8, 4, 8, 4, 1, 8, 4, 4, 4, 1};
        break;
    case TOPO_KIND_RAIL_OPTIMIZED:
        p->gpus = 1016;
        topo_node_preset("dgx-h100", &p->node);
        p->rail = (topo_rail_params_t){32, 0, 0};
        p->switch_radix = 64;
        break;
    case TOPO_KIND_DRAGONFLY:
        p->dragonfly.p = 4;
        p->dragonfly.a = 8;
        p->dragonfly.h = 4;
        p->dragonfly.g = 33;
        topo_params_set_network(p, TOPO_TECH_SLINGSHOT11); /* 200 Gb/s */
        break;
    case TOPO_KIND_TORUS:
        p->torus.n_dims = 3;
        p->torus.dims[0] = p->torus.dims[1] = p->torus.dims[2] = 4;
        p->link_latency_s = 0.5e-6;
        break;
    case TOPO_KIND_GRAPHML:
        break;
    }
}

/* ---- topology presets -------------------------------------------------------------------------- */

typedef struct {
    const char *name, *summary;
} topo_preset_t;

static const topo_preset_t PRESETS[] = {
    {"dgx-a100-superpod", "DGX A100 SuperPOD: SUs of 20 nodes, 8 HDR rails, radix-40 switches (1120 GPUs)"},
    {"dgx-h100-superpod", "DGX H100 SuperPOD: SUs of 32 node slots, 8 NDR rails, radix 64 (1016 GPUs)"},
    {"dgx-b200-superpod", "DGX B200 SuperPOD: SUs of 32 nodes, 8 NDR rails, radix 64 (4096 GPUs)"},
    {"perlmutter", "Perlmutter GPU partition: Slingshot dragonfly, 14 groups of 128 4-GPU nodes"},
    {"frontier", "Frontier: Slingshot dragonfly, 74 groups of 128 nodes (8 GCDs, 4 NICs each)"},
    {"gb200-nvl72-superpod",
     "GB200 NVL72: racks of 72 NVLink GPUs, a 400 Gb/s NDR NIC per GPU, radix-64 fat-tree (576 GPUs)"},
    {"gb300-nvl72-superpod",
     "GB300 NVL72: racks of 72 NVLink GPUs, an 800 Gb/s XDR NIC per GPU, radix-144 fat-tree (576 GPUs)"},
};

const char *topo_preset_name(size_t index) {
    return index < COUNT(PRESETS) ? PRESETS[index].name : NULL;
}
const char *topo_preset_summary(const char *name) {
    for (size_t i = 0; name && i < COUNT(PRESETS); i++)
        if (strcmp(PRESETS[i].name, name) == 0)
            return PRESETS[i].summary;
    return NULL;
}

static void rail_preset(topo_params_t *p, const char *node, int64_t nodes_per_su, int64_t radix,
                        topo_tech_t network, int64_t gpus) {
    topo_params_init(p, TOPO_KIND_RAIL_OPTIMIZED);
    topo_node_preset(node, &p->node);
    p->rail.nodes_per_su = nodes_per_su;
    p->switch_radix = radix;
    topo_params_set_network(p, network);
    p->gpus = gpus;
}

/* Slingshot: 32 Rosetta switches per group, 16 endpoint ports, 16 global ports in use; groups sized
 * to hold the GPUs (128 nodes of 4 NICs per group). */
static void slingshot_preset(topo_params_t *p, const char *node, int64_t gpus, int64_t per_pair) {
    topo_params_init(p, TOPO_KIND_DRAGONFLY);
    topo_node_preset(node, &p->node);
    p->dragonfly.p = 16;
    p->dragonfly.a = 32;
    p->dragonfly.h = 16;
    int64_t per_group = 16 * 32 / p->node.nics_per_node * p->node.gpus_per_node;
    p->dragonfly.g = (gpus + per_group - 1) / per_group;
    int64_t ports = 16 * 32;
    if (p->dragonfly.g > 1 && per_pair * (p->dragonfly.g - 1) > ports)
        per_pair = ports / (p->dragonfly.g - 1);
    p->dragonfly.global_links_per_pair = per_pair;
    /* Each compute blade meets the chassis's switch blades directly (no backplane), so a node's NICs
     * land on different switches: NIC k of every node of a chassis on switch k. */
    p->dragonfly.chassis_nics = 1;
    p->routing = TOPO_ROUTING_UGAL;
    p->gpus = gpus;
}

/* The fewest d dividing n with count * (n / d) <= radix (n itself if none is smaller). */
static int64_t fewest_dividing(int64_t n, int64_t count, int64_t radix) {
    for (int64_t d = 1; d < n; d++)
        if (n % d == 0 && count * (n / d) <= radix)
            return d;
    return n;
}

/* NVL72 racks: every rack is one 72-GPU NVLink domain (node preset nvl72) and each GPU has its own
 * NIC into a non-blocking fat-tree of radix-port switches, half the ports down and half up, sized
 * to the GPUs: 2 tiers while the leaves fit on one spine's ports, else pods of radix/2 leaves and
 * radix/2 spines under core planes. Leaves and spines use the fewest switches whose ports suffice,
 * each leaf (spine) with equally many cables to every spine (core) it reaches. Beyond radix pods
 * the cores lack ports and the check names switch_radix. */
static void nvl72_preset(topo_params_t *p, int64_t radix, topo_tech_t network, int64_t gpus) {
    topo_params_init(p, TOPO_KIND_FAT_TREE);
    topo_node_preset("nvl72", &p->node);
    topo_params_set_network(p, network);
    p->switch_radix = radix;
    p->gpus = gpus;
    int64_t half = radix / 2, endpoints = gpus / p->node.gpus_per_node * p->node.nics_per_node;
    int64_t leaves = (endpoints + half - 1) / half;
    topo_fat_tree_params_t *f = &p->fat_tree;
    memset(f, 0, sizeof *f);
    f->endpoints_per_leaf = half;
    if (leaves <= radix) {
        f->tiers = 2;
        f->leaves = leaves < 1 ? 1 : leaves;
        f->spines = fewest_dividing(half, f->leaves, radix);
        f->links_per_leaf_spine = half / f->spines;
        return;
    }
    f->tiers = 3;
    f->leaves_per_pod = half;
    f->spines_per_pod = half;
    f->links_per_leaf_spine = 1;
    f->pods = (leaves + half - 1) / half;
    f->cores_per_spine = fewest_dividing(half, f->pods, radix);
    f->links_per_spine_core = half / f->cores_per_spine;
}

int topo_params_preset(const char *name, int64_t gpus, topo_params_t *out) {
    if (!name)
        return TOPO_EINVAL;
    if (gpus < 0)
        gpus = 0;
    if (strcmp(name, "dgx-a100-superpod") == 0)
        rail_preset(out, "dgx-a100", 20, 40, TOPO_TECH_IB_HDR, gpus ? gpus : 1120);
    else if (strcmp(name, "dgx-h100-superpod") == 0)
        rail_preset(out, "dgx-h100", 32, 64, TOPO_TECH_IB_NDR, gpus ? gpus : 1016);
    else if (strcmp(name, "dgx-b200-superpod") == 0)
        rail_preset(out, "dgx-b200", 32, 64, TOPO_TECH_IB_NDR, gpus ? gpus : 4096);
    else if (strcmp(name, "perlmutter") == 0)
        /* 14 GPU cabinets of 128 nodes; global cables per pair unpublished: 22 gives Frontier's
         * taper of about 1.75:1 (approx.) */
        slingshot_preset(out, "perlmutter-gpu", gpus ? gpus : 1792 * 4, 22);
    else if (strcmp(name, "frontier") == 0)
        slingshot_preset(out, "frontier-node", gpus ? gpus : 9408 * 8, 4);
    else if (strcmp(name, "gb200-nvl72-superpod") == 0)
        /* ConnectX-7 at 400 Gb/s on NDR InfiniBand, Quantum-2 switches of 64 ports */
        nvl72_preset(out, 64, TOPO_TECH_IB_NDR, gpus ? gpus : 576);
    else if (strcmp(name, "gb300-nvl72-superpod") == 0)
        /* ConnectX-8 at 800 Gb/s on XDR InfiniBand, Quantum-X800 switches of 144 ports */
        nvl72_preset(out, 144, TOPO_TECH_IB_XDR, gpus ? gpus : 576);
    else
        return TOPO_EINVAL;
    snprintf(out->name, sizeof out->name, "%s", name);
    return TOPO_OK;
}
