/* topo.h - cluster topologies as graphs: building them (every kind and preset), link capacities and
 * latencies, route lookup, summaries (counts, diameter, bisection, cost proxy), GraphML and DOT
 * export, GraphML import.
 *
 * Contract
 * - Owns: the cluster graph of one topology (an opaque topo_t) built with igraph as a directed
 *   multigraph: every full-duplex cable is two arcs ("links"), one per direction, each with its own
 *   bandwidth_bytes_per_s and latency_s and a link technology (topo_tech_t: NVLink-4, InfiniBand
 *   NDR, ...) whose efficiency sim/'s NCCL calibration uses; parallel cables stay parallel (never
 *   simplified). Link id
 *   2c is cable c in its forward direction and 2c+1 the reverse, for every built kind (GraphML
 *   imports keep the file's arc order). Vertices are GPUs, NVSwitches (one crossbar vertex per node
 *   or NVLink domain), NICs where they matter (fewer NICs than GPUs, or a PCIe link given) and
 *   network switches, each with a kind, a node, a tier and a group. GPU i is global rank i, in
 *   node-major order, and for every built kind also vertex i.
 * - Knows nothing of the engine, the model, JSON or the command line: the tools layer fills
 *   topo_params_t (from a preset and/or a JSON object) and prints. Nothing here prints or exits.
 * - Units are in every name: bytes per second (decimal) per direction, seconds, hops in links.
 * - Memory: topo_new allocates the topology, topo_free releases it (NULL is fine). Every other
 *   output is caller-owned: structs, buffers and FILE streams. topo_params_t.graphml_path is
 *   borrowed, read only during topo_new.
 * - Errors: fallible functions return TOPO_OK (0) or a negative topo_status_t and fill an optional
 *   topo_issue_t naming the parameter, its value and what is allowed ("k: 7 must be even"). The tools
 *   layer maps TOPO_EINVAL, TOPO_EFORMAT, TOPO_EUNREACHABLE and TOPO_ETOOBIG to exit code 2 and the
 *   others to 1. igraph errors are converted to TOPO_EIGRAPH at this boundary.
 * - igraph is process-wide state: topo/ never installs igraph's error handler (the default one
 *   aborts). The program (tools/ main, each test) installs a non-aborting one once, e.g.
 *   igraph_set_error_handler(igraph_error_handler_printignore), before the first topo call. GraphML
 *   and DOT functions install igraph's C attribute table for the duration of the call and restore
 *   the previous table before returning; do not change the attribute table while a topo_t exists.
 *   igraph is not thread-safe in Debian's build, so neither is topo_new; route lookups are pure
 *   reads and may run concurrently on one topo_t.
 * - Hot path: topo_route and topo_route_paths never allocate and never call igraph; they cost
 *   O(path length) (UGAL: O(candidates x path length); ecmp-spread: O(paths x path length)); a
 *   flow whose preferred path crosses a failed link (topo_links_change) costs O(paths x path length)
 *   on a tree and O(groups x parallel cables^2 x path length) at worst on a dragonfly.
 */
#ifndef STEPSIM_TOPO_H
#define STEPSIM_TOPO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum topo_status {
    TOPO_OK = 0,
    TOPO_EINVAL = -1,       /* a parameter is invalid: the issue names it */
    TOPO_ENOMEM = -2,       /* allocation failed */
    TOPO_EIO = -3,          /* a file could not be opened, read or written */
    TOPO_EFORMAT = -4,      /* a GraphML file lacks an attribute or holds a bad value */
    TOPO_EUNREACHABLE = -5, /* a GPU pair has no route: the issue names the first one */
    TOPO_ERANGE = -6,       /* an id out of range, or a caller buffer too small */
    TOPO_EIGRAPH = -7,      /* igraph reported an error (its code is in the issue) */
    TOPO_ETOOBIG = -8       /* more vertices or links than 32-bit ids hold, or a table over its cap */
} topo_status_t;

/* What went wrong, for one line of output: "<field>: <value> <rule>". */
typedef struct topo_issue {
    char field[48]; /* parameter name as in the topology object: "k", "dims", "file", "gpus" */
    char value[64]; /* the offending value as text */
    char rule[192]; /* what is allowed or what failed: "must be even" */
} topo_issue_t;

/* Format an issue as "field: value rule" into buf (always NUL-terminated). Returns buf. */
char *topo_issue_format(const topo_issue_t *issue, char *buf, size_t size);
/* Message for a status code ("invalid parameter", ...), static storage. */
const char *topo_status_name(int status);

/* ---- parameters -------------------------------------------------------------------------------- */

typedef enum topo_kind {
    TOPO_KIND_IDEAL = 0,          /* NVLink domains on one non-blocking switch (the analytic model) */
    TOPO_KIND_FAT_TREE = 1,       /* k-ary 3-tier, or general 2-/3-tier folded Clos */
    TOPO_KIND_RAIL_OPTIMIZED = 2, /* DGX SuperPOD: one leaf per rail per scalable unit */
    TOPO_KIND_DRAGONFLY = 3,      /* p, a, h, g with a global-link arrangement */
    TOPO_KIND_TORUS = 4,          /* k-ary n-cube with wrap-around links */
    TOPO_KIND_GRAPHML = 5         /* a user's own graph from a GraphML file */
} topo_kind_t;
#define TOPO_KIND_COUNT 6

typedef enum topo_routing {
    TOPO_ROUTING_DEFAULT = 0, /* the topology's own (params.routing, else the kind's default) */
    TOPO_ROUTING_DMODK,       /* trees: up-port chosen by destination modulo (deterministic) */
    TOPO_ROUTING_ECMP_HASH,   /* trees: up-ports chosen by a seeded hash of the flow */
    TOPO_ROUTING_ECMP_SPREAD, /* trees: all equal-cost paths, equal weights (topo_route_paths) */
    TOPO_ROUTING_MINIMAL,     /* dragonfly: local-global-local */
    TOPO_ROUTING_VALIANT,     /* dragonfly: minimal to a hashed intermediate group, then minimal */
    TOPO_ROUTING_UGAL,        /* dragonfly: minimal or one of K Valiant paths by current link load */
    TOPO_ROUTING_DOR,         /* torus: dimension order, shortest direction per dimension */
    TOPO_ROUTING_SHORTEST     /* graphml: a fixed shortest path (fewest links) per pair */
} topo_routing_t;
#define TOPO_ROUTING_COUNT 9

typedef enum topo_scaleup {
    TOPO_SCALEUP_SWITCH = 0, /* one NVSwitch crossbar vertex per node, one cable per GPU */
    TOPO_SCALEUP_MESH = 1    /* a direct cable between every GPU pair of the node */
} topo_scaleup_t;

typedef enum topo_arrangement {
    TOPO_ARRANGEMENT_ABSOLUTE = 0, /* group i's port slot t goes to group t (t < i) or t+1 */
    TOPO_ARRANGEMENT_RELATIVE = 1, /* slot t goes to group (i + t + 1) mod g */
    TOPO_ARRANGEMENT_CIRCULANT = 2 /* slots go to offsets +1, -1, +2, -2, ... (mod g) */
} topo_arrangement_t;

/* A link technology: what a link is made of, with its defaults (docs/topology.md, "Link
 * technologies"). Every link of a built topology has one; NCCL's calibration in sim/ takes each link's
 * usable fraction from it. TOPO_TECH_AUTO in parameters means "from the rate" (topo_tech_for_rate). */
typedef enum topo_tech {
    TOPO_TECH_AUTO = 0,
    TOPO_TECH_NVLINK3,    /* NVLink-3 (A100) */
    TOPO_TECH_NVLINK4,    /* NVLink-4 (H100) */
    TOPO_TECH_NVLINK5,    /* NVLink-5 (B200, GB200) */
    TOPO_TECH_PCIE4,      /* PCIe Gen4 x16 */
    TOPO_TECH_PCIE5,      /* PCIe Gen5 x16 */
    TOPO_TECH_IB_HDR,     /* InfiniBand HDR, 200 Gb/s */
    TOPO_TECH_IB_NDR,     /* InfiniBand NDR, 400 Gb/s */
    TOPO_TECH_IB_XDR,     /* InfiniBand XDR, 800 Gb/s */
    TOPO_TECH_ROCE_400G,  /* RoCE v2 over 400 Gb/s Ethernet */
    TOPO_TECH_SLINGSHOT11 /* HPE Slingshot-11, 200 Gb/s */
} topo_tech_t;
#define TOPO_TECH_COUNT 11

typedef struct topo_tech_info {
    const char *name;             /* as in topology objects and GraphML: "nvlink4", "ib-ndr" */
    int link_kind;                /* the topo_link_kind_t it serves: NVLink, PCIe or network */
    double bandwidth_bytes_per_s; /* per direction (NVLink: per GPU, all its links together) */
    double latency_s;             /* per link */
    double efficiency;            /* usable fraction under NCCL (sim/'s calibration), (0, 1] */
    int nccl_sm;                  /* NVLink: the GPU generation NCCL tunes for (80, 90, 100); else 0 */
    const char *summary;
} topo_tech_info_t;

/* The table entry of a technology; NULL for TOPO_TECH_AUTO or out of range. */
const topo_tech_info_t *topo_tech_info(topo_tech_t tech);
const char *topo_tech_name(topo_tech_t tech); /* "auto" for TOPO_TECH_AUTO */
/* A technology by name; TOPO_EINVAL if unknown ("auto" is not a name). */
int topo_tech_parse(const char *name, topo_tech_t *out);
/* The technology of a link kind at a rate: NVLink-5 at 900e9 B/s per GPU and above, 4 at 450e9 and
 * above, else 3; PCIe Gen5 above 32e9, else Gen4; network InfiniBand XDR at 100e9 and above, NDR at
 * 50e9 and above, else HDR. */
topo_tech_t topo_tech_for_rate(int link_kind, double bandwidth_bytes_per_s);

/* A node: the GPUs of one NVLink domain and its NICs. */
typedef struct topo_node_params {
    char name[32];                       /* preset name, or "custom" */
    int64_t gpus_per_node;               /* GPUs per node (NVLink domain); 1: no NVLink vertex */
    int64_t nics_per_node;               /* network endpoints per node; must divide gpus_per_node */
    topo_scaleup_t scaleup;              /* switch or mesh */
    double nvlink_bandwidth_bytes_per_s; /* per GPU per direction; mesh: split evenly over peers */
    double nvlink_latency_s;             /* per NVLink link */
    double pcie_bandwidth_bytes_per_s;   /* GPU<->NIC link; 0: the NIC is part of its GPU when
                                            there is one NIC per GPU (no NIC vertex) */
    double pcie_latency_s;
    /* The node's link technologies (node presets set them; TOPO_TECH_AUTO: from the rates): */
    topo_tech_t nvlink_tech; /* NVLink links (key "nvlink"; "nvlink_generation" 3, 4, 5) */
    topo_tech_t pcie_tech;   /* GPU<->NIC links (key "pcie") */
    int amd_host;            /* 1: AMD host CPUs (DGX A100, Perlmutter, Frontier) */
    int nic_on_cpu;          /* 1: the NICs hang off the CPU, not a PCIe switch with the GPUs */
} topo_node_params_t;

/* Fat-tree as a generalized fat tree. tiers 3 with k > 0: the k-ary tree of Al-Fares et al. (k pods
 * of k/2 leaves and k/2 spines, (k/2)^2 cores); tiers 2 with k > 0: the largest non-blocking
 * 2-tier tree (k leaves, k/2 spines, k/2 endpoints per leaf). k == 0: the general form below. */
typedef struct topo_fat_tree_params {
    int64_t tiers; /* 2 or 3 */
    int64_t k;     /* even, >= 2; 0: general form */
    int64_t endpoints_per_leaf;
    /* 2-tier: every leaf has links_per_leaf_spine cables to every spine. */
    int64_t leaves, spines;
    int64_t links_per_leaf_spine;
    /* 3-tier: pods of leaves_per_pod leaves and spines_per_pod spines (complete bipartite inside a
     * pod); spine j of every pod has links_per_spine_core cables to each of the cores_per_spine
     * cores of core plane j (cores = spines_per_pod x cores_per_spine). */
    int64_t pods, leaves_per_pod, spines_per_pod, cores_per_spine, links_per_spine_core;
} topo_fat_tree_params_t;

/* DGX SuperPOD rail-optimized fabric. NIC r of every node of scalable unit s goes to leaf (s, r).
 * Sizes (tiers, spines, cores) follow from gpus, nodes_per_su, leaf_up and switch_radix: see
 * docs/topology.md. */
typedef struct topo_rail_params {
    int64_t nodes_per_su; /* node slots per scalable unit (leaf down-ports) */
    int64_t leaf_up;      /* leaf up-ports; 0: nodes_per_su (non-blocking) */
    int64_t tiers;        /* 0: automatic (2 if the leaves fit on spines of switch_radix, else 3) */
} topo_rail_params_t;

typedef struct topo_dragonfly_params {
    int64_t p, a, h, g;            /* endpoints per router, routers per group, global ports per
                                      router, groups */
    int64_t global_links_per_pair; /* parallel global cables per group pair; 0: floor(a*h/(g-1)) */
    topo_arrangement_t arrangement;
    double ugal_threshold;   /* UGAL takes the minimal path if cost_min <= cost_valiant + threshold */
    int64_t ugal_candidates; /* Valiant candidates UGAL compares with the minimal path */
    /* 1: a chassis of nics_per_node routers serves p nodes, NIC k of each on router k of the chassis
     * (HPE Cray EX: every compute blade meets every switch blade of its chassis); 0: a node's NICs
     * take consecutive ports of one router. Requires a to be a multiple of nics_per_node. */
    int64_t chassis_nics;
} topo_dragonfly_params_t;

#define TOPO_TORUS_MAX_DIMS 6
typedef struct topo_torus_params {
    int64_t n_dims;
    int64_t dims[TOPO_TORUS_MAX_DIMS]; /* each >= 2; dims[0] varies slowest in node order */
} topo_torus_params_t;

typedef struct topo_params {
    char name[64];
    topo_kind_t kind;
    int64_t gpus;                      /* GPUs to place; 0: the topology's full size (ideal: required) */
    topo_node_params_t node;           /* node preset or custom; gpus_per_node is node.gpus_per_node */
    double link_bandwidth_bytes_per_s; /* every network link, per direction */
    double link_latency_s;             /* every network link */
    topo_tech_t network;               /* the network links' technology (key "network") */
    topo_routing_t routing;            /* DEFAULT: dmodk, minimal, dor or shortest by kind */
    int pxn;              /* 1: a flow between nodes whose NICs differ first crosses NVLink to the
                             GPU on the destination's NIC index (NCCL's PXN) */
    uint64_t seed;        /* for ecmp-hash, valiant and ugal hashing */
    int64_t switch_radix; /* ports per network switch; 0: unchecked (fat-tree), 64 (rail) */
    topo_fat_tree_params_t fat_tree;
    topo_rail_params_t rail;
    topo_dragonfly_params_t dragonfly;
    topo_torus_params_t torus;
    const char *graphml_path; /* graphml: the file (borrowed) */
    double max_memory_bytes;  /* topo_new refuses a topology whose estimate (topo_memory_estimate) is
                                 larger, TOPO_ETOOBIG; 0: topo_memory_budget_bytes() */
} topo_params_t;

/* Defaults for a kind (documented per kind in docs/topology.md). */
void topo_params_init(topo_params_t *p, topo_kind_t kind);
/* A named topology preset ("dgx-h100-superpod", "perlmutter", ...). gpus > 0 sizes it, 0 keeps the
 * preset's size. TOPO_EINVAL if unknown. */
int topo_params_preset(const char *name, int64_t gpus, topo_params_t *out);
/* A node preset ("dgx-a100", "dgx-h100", "dgx-b200", "nvl72", ...). TOPO_EINVAL if unknown. */
int topo_node_preset(const char *name, topo_node_params_t *out);
/* Preset names for help text: index 0..count-1, NULL past the end; one-line summaries. */
const char *topo_preset_name(size_t index);
const char *topo_preset_summary(const char *name);
const char *topo_node_preset_name(size_t index);
const char *topo_node_preset_summary(const char *name);

/* Names as in topology objects ("fat-tree", "ecmp-hash", "circulant", "mesh"); parse returns
 * TOPO_EINVAL for an unknown name. */
const char *topo_kind_name(topo_kind_t kind);
int topo_kind_parse(const char *name, topo_kind_t *out);
const char *topo_routing_name(topo_routing_t routing);
int topo_routing_parse(const char *name, topo_routing_t *out);
const char *topo_arrangement_name(topo_arrangement_t a);
int topo_arrangement_parse(const char *name, topo_arrangement_t *out);
const char *topo_scaleup_name(topo_scaleup_t s);
int topo_scaleup_parse(const char *name, topo_scaleup_t *out);
/* Set a technology and the bandwidth and latency it defaults to: of the network links, of the
 * node's NVLink links, of its PCIe links. TOPO_EINVAL if tech serves another link kind. */
int topo_params_set_network(topo_params_t *p, topo_tech_t tech);
int topo_node_set_nvlink(topo_node_params_t *node, topo_tech_t tech);
int topo_node_set_pcie(topo_node_params_t *node, topo_tech_t tech);

/* Check parameters without building: TOPO_OK or TOPO_EINVAL with the first bad parameter in *issue
 * (may be NULL). Sizes that need the file (graphml) are checked by topo_new. */
int topo_params_check(const topo_params_t *p, topo_issue_t *issue);

/* ---- memory budget ----------------------------------------------------------------------------- */

/* What topo_new allocates at its peak, per element, read off the code (docs/topology.md, "Memory
 * budget"): the vertex arrays (kind 1 byte, node, tier, group, rack, rank, index 4 bytes each) and the
 * link arrays (from, to, cable 4, kind, tech 1, bandwidth, latency, efficiency 8) at the capacity they
 * grow to (doubling); per vertex the adjacency offsets and their fill copy (8), igraph's two
 * per-vertex index vectors (16) and the reachability check (9); per link its adjacency entry (4) and
 * igraph's edge list (16), graph (from, to and two orderings: 32) and sort buffers (16); then the
 * kind's routing structures (exact, per kind). */
#define TOPO_MEMORY_VERTEX_ARRAY_BYTES 25.0
#define TOPO_MEMORY_LINK_ARRAY_BYTES 38.0
#define TOPO_MEMORY_BYTES_PER_VERTEX 33.0
#define TOPO_MEMORY_BYTES_PER_LINK 68.0
#define TOPO_MEMORY_BASE_BYTES 0.0

typedef struct topo_memory {
    int64_t vertices, cables, links; /* as topo_new will build them */
    double table_bytes;              /* the kind's routing structures */
    double bytes;                    /* everything topo_new holds at its peak */
} topo_memory_t;

/* Estimate topo_new's memory from the parameters, allocating nothing: TOPO_OK, or the error of
 * topo_params_check. GraphML: all zero (the counts are in the file; topo_new checks them after
 * reading it, before its own arrays and next-hop table, 4 bytes per GPU and vertex). */
int topo_memory_estimate(const topo_params_t *p, topo_memory_t *out, topo_issue_t *issue);
/* The bytes of a topology of these counts with routing structures of table_bytes. */
double topo_memory_bytes_for(int64_t vertices, int64_t links, double table_bytes);
/* The default budget: half the physical memory (8e9 if the system does not say), or half the
 * process' address-space limit (RLIMIT_AS, `ulimit -v`) when that is smaller. */
double topo_memory_budget_bytes(void);

/* ---- the topology ------------------------------------------------------------------------------ */

typedef struct topo topo_t;

/* Build the topology and its routing tables. On success *out owns a new topology (topo_free).
 * Before allocating it checks topo_memory_estimate against p->max_memory_bytes: TOPO_ETOOBIG with
 * the estimate and the budget in the issue ("topology: NAME needs about X GB ..."). Errors:
 * TOPO_EINVAL (parameters), TOPO_EIO/TOPO_EFORMAT (GraphML file), TOPO_EUNREACHABLE (a GPU
 * pair without a route: issue names it), TOPO_ETOOBIG, TOPO_ENOMEM, TOPO_EIGRAPH; *out is NULL then.
 * Complexity: linear in vertices and links for built kinds; graphml: O(GPUs x (V + E)). */
int topo_new(const topo_params_t *p, topo_t **out, topo_issue_t *issue);
void topo_free(topo_t *t);

typedef enum topo_vertex_kind {
    TOPO_VERTEX_GPU = 0,
    TOPO_VERTEX_NVSWITCH = 1,
    TOPO_VERTEX_NIC = 2,
    TOPO_VERTEX_SWITCH = 3
} topo_vertex_kind_t;

typedef enum topo_link_kind {
    TOPO_LINK_NVLINK = 0,
    TOPO_LINK_PCIE = 1,
    TOPO_LINK_NETWORK = 2
} topo_link_kind_t;

typedef struct topo_vertex_info {
    topo_vertex_kind_t kind;
    int64_t node;  /* GPUs, NVSwitches, NICs: their node; switches: -1 */
    int64_t tier;  /* switches: 1 leaf/router, 2 spine, 3 core; others 0 */
    int64_t group; /* pod (trees), group (dragonfly), core plane (cores); -1 if none */
    int64_t rack;  /* racks decide which cables are optical (cost proxy) */
    int64_t rank;  /* GPUs: global rank; others -1 */
    int64_t index; /* number within its kind and tier: switch 3 of tier 2 is "spine3"; NICs count
                      endpoints, NVSwitches nodes; GraphML imports: the vertex id */
} topo_vertex_info_t;

typedef struct topo_link_info {
    int64_t from, to; /* vertex ids */
    int64_t cable;    /* the full-duplex cable this direction belongs to */
    topo_link_kind_t kind;
    topo_tech_t tech; /* never TOPO_TECH_AUTO */
    double bandwidth_bytes_per_s;
    double latency_s;
} topo_link_info_t;

const char *topo_name(const topo_t *t);
topo_kind_t topo_kind(const topo_t *t);
/* The technology of a kind's links: its first link's (built kinds: every link of the kind has it);
 * a kind without links: the parameters' (network, the node's NVLink and PCIe; TOPO_TECH_AUTO resolved
 * by topo_tech_for_rate), which GraphML links without a technology attribute also take. Each link's
 * own is in topo_link_info_t.tech. topo_node_params(t) carries the NVLink and PCIe ones. */
topo_tech_t topo_kind_tech(const topo_t *t, topo_link_kind_t kind);
const topo_node_params_t *topo_node_params(const topo_t *t);
int64_t topo_gpu_count(const topo_t *t);
int64_t topo_node_count(const topo_t *t);
int64_t topo_vertex_count(const topo_t *t);
int64_t topo_link_count(const topo_t *t);              /* directed links (arcs): valid link ids 0..count-1 */
int64_t topo_gpu_vertex(const topo_t *t, int64_t gpu); /* -1 if out of range */
int64_t topo_gpu_node(const topo_t *t, int64_t gpu);   /* -1 if out of range */
int topo_vertex_get(const topo_t *t, int64_t vertex, topo_vertex_info_t *out); /* TOPO_ERANGE */
int topo_link_get(const topo_t *t, int64_t link, topo_link_info_t *out);       /* TOPO_ERANGE */
/* Per-link arrays of topo_link_count entries, owned by t, for the flow solver. */
const double *topo_link_bandwidths_bytes_per_s(const topo_t *t);
const double *topo_link_latencies_s(const topo_t *t);
/* Each link's usable fraction under NCCL: its technology's efficiency. */
const double *topo_link_efficiencies(const topo_t *t);
/* A readable link name such as "leaf3->spine1" or "gpu12->nvs1" into buf; returns buf. */
char *topo_link_name(const topo_t *t, int64_t link, char *buf, size_t size);
const char *topo_vertex_kind_name(topo_vertex_kind_t k); /* "gpu", "nvswitch", "nic", "switch" */
const char *topo_link_kind_name(topo_link_kind_t k);     /* "nvlink", "pcie", "network" */

/* Where topo_new spent its time, and what the routing structures occupy. */
typedef struct topo_build_stats {
    double build_s;            /* vertices, cables and the kind's routing structures (trees,
                                  dragonflies and tori fill their tables while wiring) */
    double graph_s;            /* adjacency arrays and the igraph graph */
    double check_s;            /* the reachability check of every GPU pair */
    double table_s;            /* graphml: the next-hop table; 0 for built kinds */
    int64_t route_table_bytes; /* memory of the routing structures */
} topo_build_stats_t;
void topo_build_stats_get(const topo_t *t, topo_build_stats_t *out);

/* ---- routing ----------------------------------------------------------------------------------- */

typedef int32_t topo_link_id_t;

/* One flow to route. */
typedef struct topo_flow {
    int64_t src_gpu, dst_gpu;
    uint64_t key;            /* the flow's id: hashed (with the seed) by ecmp-hash, valiant, ugal */
    topo_routing_t routing;  /* TOPO_ROUTING_DEFAULT: the topology's routing */
    const double *link_load; /* UGAL only: per link id, current utilization (used rate divided by
                                capacity, >= 0); NULL: an idle network */
} topo_flow_t;

/* The effective routing of a topology (never TOPO_ROUTING_DEFAULT). */
topo_routing_t topo_routing(const topo_t *t);
/* An upper bound on the links of any route of t, to size buffers. */
int topo_route_max_links(const topo_t *t);

/* Route one flow: write its links (ids in travel order) into links[0..cap) and return how many
 * (0 when src == dst), or TOPO_ERANGE (a GPU out of range, or cap too small), TOPO_EINVAL (a routing
 * this kind lacks). ecmp-spread routes like ecmp-hash here; use topo_route_paths for the spread.
 * No allocation, no igraph call. O(path length); UGAL O(candidates x path length). */
int topo_route(const topo_t *t, const topo_flow_t *flow, topo_link_id_t *links, int cap);

/* All paths a flow uses with their weights (summing to 1): ecmp-spread gives every equal-cost path
 * of the tree with equal weights; other routings give their single path with weight 1. Paths are
 * written one after another into links; path_len[i] and weight[i] (weight may be NULL) describe
 * path i. Returns the number of paths, or TOPO_ERANGE if links_cap or paths_cap is too small. */
int topo_route_paths(const topo_t *t, const topo_flow_t *flow, topo_link_id_t *links, int links_cap,
                     int *path_len, double *weight, int paths_cap);
/* How many paths topo_route_paths returns for a flow (for ecmp-spread: the equal-cost path count). */
int64_t topo_route_path_count(const topo_t *t, const topo_flow_t *flow);

/* ---- slow and failed links ---------------------------------------------------------------------- */

/* Link classes, as topo/ labels links (docs/topology.md, "Slow and failed links"). Every class but
 * nvlink and pcie is a set of network links; a class selects both directions of its cables. */
typedef enum topo_link_class {
    TOPO_CLASS_NVLINK = 0, /* GPU <-> NVSwitch, or the GPU pairs of a mesh */
    TOPO_CLASS_PCIE,       /* GPU <-> NIC */
    TOPO_CLASS_NETWORK,    /* every network link */
    TOPO_CLASS_ACCESS,     /* network links between an endpoint (GPU or NIC) and a switch or router */
    TOPO_CLASS_LEAF_SPINE, /* trees: leaf (tier 1) <-> spine (tier 2) */
    TOPO_CLASS_SPINE_CORE, /* trees: spine (tier 2) <-> core (tier 3) */
    TOPO_CLASS_LOCAL,      /* dragonfly: router <-> router of one group */
    TOPO_CLASS_GLOBAL      /* dragonfly: router <-> router of different groups */
} topo_link_class_t;
#define TOPO_LINK_CLASS_COUNT 8

/* "nvlink", "pcie", "network", "access", "leaf-spine", "spine-core", "local", "global". */
const char *topo_link_class_name(topo_link_class_t c);
int topo_link_class_parse(const char *name, topo_link_class_t *out); /* TOPO_EINVAL if unknown */
/* 1 if the link belongs to the class (0 for an id out of range). */
int topo_link_in_class(const topo_t *t, int64_t link, topo_link_class_t c);

/* One change of a set of links. Exactly one selector: names (non-NULL), else fraction > 0 (a seeded
 * fraction of the cables of link_class), else link_class alone.
 * - names: link names as topo_link_name writes them, separated by ';'. Spaces are ignored, so
 *   "leaf 3 -> spine 1" is "leaf3->spine1". "a->b" is one direction (every parallel cable's a->b
 *   link); "a<->b" both directions.
 * - link_class: every link of the class (both directions); with fraction, the class the fraction is
 *   drawn from (TOPO_CLASS_NETWORK when has_class is 0).
 * - fraction in (0, 1]: the ceil(fraction x cables) cables of the class with the smallest
 *   topo_i_hash(seed, cable) (ties: lower cable id), both directions: the same cables whatever the
 *   order of the changes.
 * Then fail = 1 fails the selected links, else their bandwidth is multiplied by bandwidth_factor in
 * (0, 1] (factors of several changes multiply; a failed link stays failed). */
typedef struct topo_link_change {
    const char *names;
    int has_class;
    topo_link_class_t link_class;
    double fraction;
    double bandwidth_factor;
    int fail;
    int absent_ok; /* 1: a class (or fraction of one) the topology has no link of selects nothing
                      instead of being TOPO_EINVAL (compare applies one scenario to several kinds) */
} topo_link_change_t;

/* Apply changes[0..n) to a built topology, rebuild what routing needs (GraphML's next-hop table) and
 * check that every ordered GPU pair still has a route. Routes then avoid failed links: trees choose
 * among the equal-cost paths that avoid them (see topo_route), dragonflies take another parallel global
 * cable, a two-hop detour inside a group or a Valiant detour through another group; tori (dimension
 * order) and the node-local hops (NVLink, PCIe) do not reroute. Errors: TOPO_EINVAL with *bad the
 * index of the change and the issue naming the field ("links", "class", "fraction", "bandwidth") and
 * value (a name that matches no link, a class this topology has no link of, a value out of range);
 * TOPO_EUNREACHABLE when some GPU pair has no route left (the issue names the two GPUs); TOPO_ENOMEM.
 * After an error the topology must be freed, not used. Cost: O(links) per change and name, and, when a
 * link failed, one route lookup per ordered GPU pair. */
int topo_links_change(topo_t *t, const topo_link_change_t *changes, int n, uint64_t seed, int *bad,
                      topo_issue_t *issue);
/* The bandwidth factor of a link (1 if unchanged) and whether it failed; 0 / 1 out of range. */
double topo_link_bandwidth_factor(const topo_t *t, int64_t link);
int topo_link_failed(const topo_t *t, int64_t link);
/* Failed links (directed), and links whose bandwidth factor is not 1. */
int64_t topo_failed_link_count(const topo_t *t);
int64_t topo_slowed_link_count(const topo_t *t);

/* ---- summaries --------------------------------------------------------------------------------- */

/* Links of one technology at one bandwidth and latency. */
typedef struct topo_tech_use {
    topo_tech_t tech;
    int64_t links; /* full-duplex cables, each counted once */
    double bandwidth_bytes_per_s, latency_s;
} topo_tech_use_t;
#define TOPO_SUMMARY_TECHS 16

typedef struct topo_summary {
    char name[64];
    const char *kind; /* topo_kind_name */
    int64_t gpus, nodes;
    int64_t switches;        /* network switches */
    int64_t nvswitches;      /* NVSwitch crossbar vertices (one per node with a switch) */
    int64_t nics;            /* NIC vertices */
    int64_t links;           /* full-duplex network cables counted once (endpoint-switch,
                                switch-switch, and GPU-GPU in a direct torus) */
    int64_t nvlink_links;    /* full-duplex NVLink cables */
    int64_t pcie_links;      /* full-duplex GPU-NIC cables */
    int64_t diameter_hops;   /* longest shortest GPU-to-GPU path, in links */
    int diameter_exhaustive; /* 1: from every GPU; 0: from representative GPUs (large graphs) */
    double bisection_bandwidth_bytes_per_s;   /* max-flow from the first to the second half of ranks */
    double bisection_closed_form_bytes_per_s; /* the same cut by formula; 0 if none applies */
    double injection_bandwidth_bytes_per_s;   /* network links leaving GPUs and NICs, summed */
    int64_t cables;                           /* cost proxy: network cables (== links) */
    int64_t optical_cables;                   /* network cables between different racks */
    int64_t optical_transceivers;             /* two per optical cable */
    /* the links by technology, bandwidth and latency, in the order of their first link (built kinds:
     * NVLink, PCIe, network); at most TOPO_SUMMARY_TECHS groups, techs_truncated set if more */
    topo_tech_use_t techs[TOPO_SUMMARY_TECHS];
    int n_techs, techs_truncated;
} topo_summary_t;

/* Counts, technologies, diameter (BFS; exhaustive up to about 3e7 link visits, representatives beyond),
 * bisection (igraph max-flow from a super-source on ranks [0, n/2) to a super-sink on ranks [n - n/2, n)) and
 * the cost proxy. Returns TOPO_OK, TOPO_ENOMEM or TOPO_EIGRAPH. Complexity: BFS sources x (V + E)
 * plus one max-flow. */
int topo_summary_compute(const topo_t *t, topo_summary_t *out, topo_issue_t *issue);

/* ---- export and import ------------------------------------------------------------------------- */

/* Write the graph as GraphML (directed; vertex attributes kind, node, tier, group, rack, rank; edge
 * attributes kind, technology, bandwidth_bytes_per_s, latency_s, cable; graph attributes name, source_kind)
 * or as DOT, to an open stream the caller owns (write to a temporary name and rename). A GraphML file written
 * here loads back (kind graphml) with identical vertices, links and attributes. Returns TOPO_OK, TOPO_EIO,
 * TOPO_ENOMEM or TOPO_EIGRAPH. */
int topo_graphml_write(const topo_t *t, FILE *out, topo_issue_t *issue);
int topo_dot_write(const topo_t *t, FILE *out, topo_issue_t *issue);

#endif
