/* topo_internal.h - the topo_t layout and the helpers shared by topo/'s files (and white-box tests).
 *
 * Invariants: vertex and link ids fit in int32_t; cable c is links 2c (forward) and 2c+1 (reverse)
 * for every built kind; GPU i is vertex i for every built kind. Per-kind routing structures are
 * filled once by the builder and only read afterwards.
 */
#ifndef STEPSIM_TOPO_INTERNAL_H
#define STEPSIM_TOPO_INTERNAL_H

#include <igraph.h>

#include "topo.h"

#define TOPO_MAX_GPUS (INT64_C(1) << 24) /* 16,777,216 */
/* The longest link latency accepted (s): the simulator's bound (SIM_LINK_LATENCY_MAX_S), so that a
 * route's latency sum stays far below the picosecond clock's limit. A latency above 1 s is not a link. */
#define TOPO_MAX_LATENCY_S 1.0
#define TOPO_MAX_CABLES (INT64_C(1) << 29) /* links (2 per cable) stay below INT32_MAX */
#define TOPO_MAX_ROUTE                                                                                       \
    1040 /* longest route of any topology, in links (a ring of                                               \
           2,048 nodes, with its NVLink and NIC hops) */

/* ---- shapes: sizes derived from parameters, shared by validation and building ------------------ */

/* A generalized fat tree (Ohring et al.'s XGFT): level 0 holds endpoint slots, levels 1..h switches.
 * A level-l vertex is labelled by m-digits c_h..c_{l+1} and w-digits b_l..b_1; its parents replace
 * c_{l+1} by any b_{l+1} in [0, w_{l+1}), with p_{l+1} parallel cables to each. */
typedef struct topo_xgft_shape {
    int h;
    int64_t m[4], w[4], p[4]; /* index 1..h; w[1] = p[1] = 1 */
} topo_xgft_shape_t;

/* Rail-optimized sizing on top of an XGFT shape: slot of (node, nic) = (nic * su_slots + su) *
 * nodes_per_su + node_in_su. */
typedef struct topo_rail_shape {
    topo_xgft_shape_t x;
    int64_t rails, n_su, su_slots, nodes_per_su;
} topo_rail_shape_t;

int topo_i_tree_shape(const topo_params_t *p, topo_xgft_shape_t *x, topo_issue_t *issue);
int topo_i_rail_shape(const topo_params_t *p, topo_rail_shape_t *r, topo_issue_t *issue);
int64_t topo_i_dragonfly_links_per_pair(const topo_dragonfly_params_t *d);
/* TOPO_OK if need_bytes fits p->max_memory_bytes (0: the default budget), else TOPO_ETOOBIG with the
 * estimate, the counts and the budget in the issue. */
int topo_i_memory_check(const topo_params_t *p, const char *name, double need_bytes, int64_t vertices,
                        int64_t links, topo_issue_t *issue);

/* ---- per-kind routing structures --------------------------------------------------------------- */

typedef struct topo_xgft {
    topo_xgft_shape_t s;
    int64_t M[4];            /* M[l] = m_1 ... m_l (M[0] = 1): slots under one level-l block */
    int64_t W[4];            /* W[l] = w_1 ... w_l */
    int64_t D[4];            /* D[l] = (w_1 p_1) ... (w_l p_l): dmodk divisors */
    int64_t n_items[4];      /* level l: slots / M[l] * W[l] items (switches, or slots at level 0) */
    int32_t *up_cable[4];    /* level 0..h-1: first up cable of each item, -1 if absent; an item's up
                                cables are ordered by (parent digit, copy) */
    int32_t *item_vertex[4]; /* level 0..h: vertex of each item, -1 if absent */
    int64_t *endpoint_slot;  /* endpoint -> slot */
    int64_t n_endpoints;
} topo_xgft_t;

typedef struct topo_dfly {
    int64_t p, a, h, g, n; /* n: parallel global cables per group pair */
    topo_arrangement_t arrangement;
    int32_t router_vertex0; /* router R = group * a + r is vertex router_vertex0 + R */
    int32_t ep_cable0;      /* endpoint e's cable to router topo_i_dfly_router(d, e) */
    int64_t chassis_m;      /* NICs per node when chassis_nics, else 1 (see topo_i_dfly_router) */
    int32_t local_cable0;   /* group i, routers r1 < r2: local_cable0 + i*a(a-1)/2 + pair(r1, r2) */
    int32_t *gl_link;       /* [(i*(g-1) + t)*n + c]: the link leaving group i on slot t, copy c */
    int32_t *gl_src;        /* ... the router (in group i) that owns it */
    int32_t *gl_dst;        /* ... the router it lands on in the target group */
    double ugal_threshold;
    int64_t ugal_candidates;
} topo_dfly_t;

typedef struct topo_torus {
    int64_t n_dims, dims[TOPO_TORUS_MAX_DIMS], stride[TOPO_TORUS_MAX_DIMS];
    int64_t n_nodes;
    int direct;             /* the GPUs are the torus routers */
    int32_t router_vertex0; /* torus node x is vertex router_vertex0 + x */
    int32_t ep_cable0;      /* not direct: endpoint e's cable to its router */
    int32_t *arc;           /* [x * 2n + 2d + dir]: link from x along dimension d, dir 0: +, 1: - */
} topo_torus_t;

typedef struct topo_table {
    int32_t *next; /* [dst_gpu * V + v]: link leaving v on the chosen shortest path to dst; -1 */
} topo_table_t;

/* The node-local part of built kinds. */
typedef struct topo_nodes {
    int64_t G, M; /* GPUs and NICs per node */
    topo_scaleup_t scaleup;
    int has_nvs;  /* G > 1 and scale-up switch */
    int has_mesh; /* G > 1 and mesh */
    int has_nic;  /* NIC vertices exist */
    int32_t nvs_vertex0, nic_vertex0;
    int32_t nvl_cable0;  /* switch: GPU i's cable to its NVSwitch; mesh: node n's pair (i<j) cable
                            is nvl_cable0 + n*G(G-1)/2 + pair(i, j), forward i -> j */
    int32_t pcie_cable0; /* GPU i's cable to its NIC, forward GPU -> NIC */
} topo_nodes_t;

struct topo {
    char name[64];
    char source_kind[32]; /* the kind the graph was built as (kept through GraphML) */
    topo_kind_t kind;
    topo_tech_t kind_tech[3]; /* by topo_link_kind_t: the parameters' technologies, resolved */
    topo_node_params_t node;  /* its nvlink_tech and pcie_tech resolved */
    topo_routing_t routing;
    int pxn;
    uint64_t seed;
    int64_t n_gpus, n_nodes, n_vertices, n_links, n_cables, n_endpoints;
    int max_route_links;

    /* vertices */
    uint8_t *v_kind;
    int32_t *v_node, *v_tier, *v_group, *v_rack, *v_rank, *v_index;
    int32_t *gpu_vertex;
    int64_t v_cap;
    /* links (arcs) */
    int32_t *l_from, *l_to, *l_cable;
    uint8_t *l_kind, *l_tech;
    double *l_bw, *l_lat, *l_eff; /* l_eff: the technology's efficiency */
    int64_t l_cap;
    /* perturbed links (perturb.c): NULL until topo_links_change; l_bw is already scaled */
    double *l_factor;  /* bandwidth factor of each link, 1 unless slowed */
    uint8_t *l_failed; /* 1: the link carries nothing and routes avoid it */
    int64_t n_failed;
    /* out-adjacency: links of v are adj_link[adj_off[v] .. adj_off[v+1]) in id order */
    int32_t *adj_off, *adj_link;

    topo_nodes_t nodes;
    topo_xgft_t *xgft;
    topo_dfly_t *dfly;
    topo_torus_t *torus;
    topo_table_t *table;
    const char *tier_names[4]; /* switch names by tier, for topo_link_name */

    /* for summaries, set by the builder */
    int64_t *diam_sources; /* representative GPUs for the diameter of large graphs */
    int64_t n_diam_sources;
    double closed_bisection_bytes_per_s; /* 0: no closed form */

    topo_build_stats_t stats;
    igraph_t graph;
    int has_graph;
};

/* ---- building (build.c; issues in check.c)
 * ------------------------------------------------------------------------ */

int topo_i_set_issue(topo_issue_t *issue, const char *field, const char *value, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* A failure that filled no issue (a bare TOPO_ENOMEM from deep inside) names the topology and the
 * status ("topology: fat-tree out of memory"); returns rc. The issue must have been cleared. */
int topo_i_issue_fallback(topo_issue_t *issue, const char *name, int rc);
int topo_i_set_issuef(topo_issue_t *issue, const char *field, int64_t value, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Append a vertex; returns its id or -1 when out of memory or ids. */
int64_t topo_i_vertex(topo_t *t, topo_vertex_kind_t kind, int64_t node, int64_t tier, int64_t group,
                      int64_t rack, int64_t index);
/* Append a cable u -> v as links 2c (u->v) and 2c+1 (v->u); returns c or -1. */
int64_t topo_i_cable(topo_t *t, int64_t u, int64_t v, topo_link_kind_t kind, double bw, double lat);
/* Links take the technology of their kind (kind_tech); a GraphML import may set another after. */
/* Append one directed link (graphml import); returns its id or -1. */
int64_t topo_i_link(topo_t *t, int64_t u, int64_t v, int64_t cable, topo_link_kind_t kind, double bw,
                    double lat);
/* GPU vertices 0..gpus-1, NVSwitches, NICs and their cables; endpoint e's vertex follows. */
int topo_i_build_nodes(topo_t *t, const topo_params_t *p);
int64_t topo_i_endpoint_vertex(const topo_t *t, int64_t endpoint);
/* After the kind's builder: adjacency, igraph graph, reachability of every GPU pair. */
int topo_i_finish(topo_t *t, topo_issue_t *issue);
int topo_i_from_igraph_error(igraph_error_t e, topo_issue_t *issue, const char *what);

int topo_i_build_tree(topo_t *t, const topo_params_t *p, topo_issue_t *issue); /* ideal, fat-tree, rail */
int topo_i_build_dragonfly(topo_t *t, const topo_params_t *p, topo_issue_t *issue);
int topo_i_build_torus(topo_t *t, const topo_params_t *p, topo_issue_t *issue);
int topo_i_build_graphml(topo_t *t, const topo_params_t *p, topo_issue_t *issue);
void topo_i_free_kind(topo_t *t);

/* ---- routing ------------------------------------------------------------------------------------ */

uint64_t topo_i_hash(uint64_t seed, uint64_t a, uint64_t b, uint64_t c);
/* Network part between two endpoints (src != dst), appending to links[*n] (cap TOPO_MAX_ROUTE). */
int topo_i_route_xgft(const topo_t *t, int64_t se, int64_t de, topo_routing_t r, uint64_t key,
                      topo_link_id_t *links, int *n, int cap);
int64_t topo_i_xgft_path_count(const topo_t *t, int64_t se, int64_t de);
/* The k-th equal-cost path (0 <= k < topo_i_xgft_path_count). */
int topo_i_route_xgft_nth(const topo_t *t, int64_t se, int64_t de, int64_t k, topo_link_id_t *links, int *n,
                          int cap);
/* The router of endpoint e (node e / m, NIC e % m with m = chassis_m): router (node / p) * m + NIC;
 * with m = 1 that is e / p. */
int64_t topo_i_dfly_router(const topo_dfly_t *d, int64_t e);
int topo_i_route_dragonfly(const topo_t *t, int64_t se, int64_t de, const topo_flow_t *f, topo_routing_t r,
                           topo_link_id_t *links, int *n, int cap);
int topo_i_route_torus(const topo_t *t, int64_t se, int64_t de, topo_link_id_t *links, int *n, int cap);
/* 1 if a link of links[0..n) has failed (always 0 on an unperturbed topology). */
static inline int topo_i_path_failed(const topo_t *t, const topo_link_id_t *links, int n) {
    for (int i = 0; t->l_failed && i < n; i++)
        if (t->l_failed[links[i]])
            return 1;
    return 0;
}
int topo_i_route_table(const topo_t *t, int64_t src_gpu, int64_t dst_gpu, topo_link_id_t *links, int *n,
                       int cap);
int topo_i_build_table(topo_t *t, topo_issue_t *issue);

/* In-adjacency: links into v are in[off[v] .. off[v+1]) in id order; the caller frees both. */
int topo_i_in_csr(const topo_t *t, int32_t **off, int32_t **in);
/* BFS hop distances from vertex s over out-links into dist (V entries, -1 unreachable). queue has V
 * entries of scratch. */
void topo_i_bfs(const topo_t *t, int64_t s, int32_t *dist, int32_t *queue);

#endif
