/* graphml.c - GraphML and DOT export, GraphML import, through igraph's readers and writers.
 *
 * igraph keeps attributes only while an attribute table is installed, and the table is process-wide.
 * Each function here installs igraph's C attribute table, builds or reads a temporary attributed
 * graph, copies what it needs, destroys the graph and restores the previous table before returning,
 * so the attribute table never outlives one call and topo_t's own graph carries no attributes.
 *
 * Attributes (docs/topology.md): vertex kind (string, required: gpu, nvswitch, nic, switch), node,
 * tier, group, rack, rank (numbers, optional); edge bandwidth_bytes_per_s and latency_s (numbers,
 * required), kind (string: nvlink, pcie, network), technology (string: a link technology of the
 * edge's kind, topo_tech_parse; absent or empty: the parameters' for its kind) and cable (number) optional;
 * graph name and source_kind. Export writes a directed graph with every attribute, so it loads back
 * identically.
 */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "topo_internal.h"

static const char *const VKIND[] = {"gpu", "nvswitch", "nic", "switch"};
static const char *const LKIND[] = {"nvlink", "pcie", "network"};

/* ---- export ------------------------------------------------------------------------------------ */

static igraph_error_t set_num_v(igraph_t *g, const char *name, const int32_t *src, int64_t n) {
    igraph_vector_t v;
    IGRAPH_CHECK(igraph_vector_init(&v, n));
    for (int64_t i = 0; i < n; i++)
        VECTOR(v)[i] = src[i];
    igraph_error_t e = SETVANV(g, name, &v);
    igraph_vector_destroy(&v);
    return e;
}

static igraph_error_t set_num_e(igraph_t *g, const char *name, const double *src, const int32_t *isrc,
                                int64_t n) {
    igraph_vector_t v;
    IGRAPH_CHECK(igraph_vector_init(&v, n));
    for (int64_t i = 0; i < n; i++)
        VECTOR(v)[i] = src ? src[i] : isrc[i];
    igraph_error_t e = SETEANV(g, name, &v);
    igraph_vector_destroy(&v);
    return e;
}

static igraph_error_t set_str(igraph_t *g, int vertex, const char *name, const uint8_t *kinds, int64_t n,
                              const char *const *names) {
    igraph_strvector_t sv;
    IGRAPH_CHECK(igraph_strvector_init(&sv, n));
    igraph_error_t e = IGRAPH_SUCCESS;
    for (int64_t i = 0; i < n && e == IGRAPH_SUCCESS; i++)
        e = igraph_strvector_set(&sv, i, names[kinds[i]]);
    if (e == IGRAPH_SUCCESS)
        e = vertex ? SETVASV(g, name, &sv) : SETEASV(g, name, &sv);
    igraph_strvector_destroy(&sv);
    return e;
}

static igraph_error_t set_attributes(const topo_t *t, igraph_t *g) {
    int64_t V = t->n_vertices, L = t->n_links;
    const char *tech[TOPO_TECH_COUNT];
    for (int i = 0; i < TOPO_TECH_COUNT; i++)
        tech[i] = topo_tech_name((topo_tech_t)i);
    igraph_error_t e;
    if ((e = SETGAS(g, "name", t->name)) || (e = SETGAS(g, "source_kind", t->source_kind)) ||
        (e = set_str(g, 1, "kind", t->v_kind, V, VKIND)) || (e = set_num_v(g, "node", t->v_node, V)) ||
        (e = set_num_v(g, "tier", t->v_tier, V)) || (e = set_num_v(g, "group", t->v_group, V)) ||
        (e = set_num_v(g, "rack", t->v_rack, V)) || (e = set_num_v(g, "rank", t->v_rank, V)) ||
        (e = set_str(g, 0, "kind", t->l_kind, L, LKIND)) ||
        (e = set_str(g, 0, "technology", t->l_tech, L, tech)) ||
        (e = set_num_e(g, "bandwidth_bytes_per_s", t->l_bw, NULL, L)) ||
        (e = set_num_e(g, "latency_s", t->l_lat, NULL, L)) ||
        (e = set_num_e(g, "cable", NULL, t->l_cable, L)))
        return e;
    return IGRAPH_SUCCESS;
}

/* A new graph with t's links, created while the attribute table is installed (igraph_copy of t's
 * attribute-less graph would hand the table a graph without an attribute record). */
static igraph_error_t create_graph(const topo_t *t, igraph_t *g) {
    igraph_vector_int_t edges;
    IGRAPH_CHECK(igraph_vector_int_init(&edges, 2 * t->n_links));
    for (int64_t l = 0; l < t->n_links; l++) {
        VECTOR(edges)[2 * l] = t->l_from[l];
        VECTOR(edges)[2 * l + 1] = t->l_to[l];
    }
    igraph_error_t e = igraph_create(g, &edges, t->n_vertices, IGRAPH_DIRECTED);
    igraph_vector_int_destroy(&edges);
    return e;
}

/* format 0: GraphML, 1: DOT */
static int write_graph(const topo_t *t, FILE *out, int format, topo_issue_t *issue) {
    const igraph_attribute_table_t *old = igraph_set_attribute_table(&igraph_cattribute_table);
    igraph_t g;
    igraph_error_t e = create_graph(t, &g);
    if (e == IGRAPH_SUCCESS) {
        e = set_attributes(t, &g);
        if (e == IGRAPH_SUCCESS)
            e = format == 0 ? igraph_write_graph_graphml(&g, out, 1) : igraph_write_graph_dot(&g, out);
        igraph_destroy(&g);
    }
    igraph_set_attribute_table(old);
    if (e != IGRAPH_SUCCESS)
        return topo_i_from_igraph_error(e, issue, format == 0 ? "writing GraphML" : "writing DOT");
    if (fflush(out) != 0 || ferror(out)) {
        topo_i_set_issue(issue, format == 0 ? "graphml" : "dot", t->name, "could not be written: %s",
                         strerror(errno));
        return TOPO_EIO;
    }
    return TOPO_OK;
}

int topo_graphml_write(const topo_t *t, FILE *out, topo_issue_t *issue) {
    if (issue)
        memset(issue, 0, sizeof *issue);
    return topo_i_issue_fallback(issue, t->name, write_graph(t, out, 0, issue));
}

int topo_dot_write(const topo_t *t, FILE *out, topo_issue_t *issue) {
    if (issue)
        memset(issue, 0, sizeof *issue);
    return topo_i_issue_fallback(issue, t->name, write_graph(t, out, 1, issue));
}

/* ---- import ------------------------------------------------------------------------------------ */

typedef struct gml {
    igraph_t g;
    const char *path;
    int64_t V, E;
    igraph_strvector_t gnames, vnames, enames;
    igraph_vector_int_t gtypes, vtypes, etypes;
    topo_issue_t *issue;
} gml_t;

static int gml_fail(gml_t *m, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int gml_fail(gml_t *m, const char *fmt, ...) {
    char rule[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rule, sizeof rule, fmt, ap);
    va_end(ap);
    topo_i_set_issue(m->issue, "file", m->path, "%s", rule);
    return TOPO_EFORMAT;
}

/* -1 if absent, else the igraph attribute type */
static int attr_type(const gml_t *m, igraph_attribute_elemtype_t where, const char *name) {
    const igraph_strvector_t *names = where == IGRAPH_ATTRIBUTE_GRAPH    ? &m->gnames
                                      : where == IGRAPH_ATTRIBUTE_VERTEX ? &m->vnames
                                                                         : &m->enames;
    const igraph_vector_int_t *types = where == IGRAPH_ATTRIBUTE_GRAPH    ? &m->gtypes
                                       : where == IGRAPH_ATTRIBUTE_VERTEX ? &m->vtypes
                                                                          : &m->etypes;
    for (igraph_integer_t i = 0; i < igraph_strvector_size(names); i++)
        if (strcmp(igraph_strvector_get(names, i), name) == 0)
            return (int)VECTOR(*types)[i];
    return -1;
}

/* Read a numeric vertex or edge attribute into out (n entries); absent: fill with def. */
static int read_num(gml_t *m, int vertex, const char *name, double def, int required, double *out) {
    int64_t n = vertex ? m->V : m->E;
    int type = attr_type(m, vertex ? IGRAPH_ATTRIBUTE_VERTEX : IGRAPH_ATTRIBUTE_EDGE, name);
    if (type < 0 && required)
        return gml_fail(m, "has no %s attribute '%s' (required)", vertex ? "vertex" : "edge", name);
    if (type >= 0 && type != IGRAPH_ATTRIBUTE_NUMERIC)
        return gml_fail(m, "%s attribute '%s' must be numeric", vertex ? "vertex" : "edge", name);
    if (type < 0) {
        for (int64_t i = 0; i < n; i++)
            out[i] = def;
        return TOPO_OK;
    }
    igraph_vector_t v;
    if (igraph_vector_init(&v, 0))
        return TOPO_ENOMEM;
    igraph_error_t e = vertex ? VANV(&m->g, name, &v) : EANV(&m->g, name, &v);
    for (int64_t i = 0; e == IGRAPH_SUCCESS && i < n; i++)
        out[i] = VECTOR(v)[i];
    igraph_vector_destroy(&v);
    return e == IGRAPH_SUCCESS ? TOPO_OK
                               : topo_i_from_igraph_error(e, m->issue, "reading GraphML attributes");
}

/* Read the string attribute attr mapped through names[0..count) into out; absent: -1 each. Vertices:
 * "kind" (required); edges: "kind" and "technology". */
static int read_kind(gml_t *m, int vertex, const char *attr, const char *const *names, int count,
                     int required, int *out) {
    int64_t n = vertex ? m->V : m->E;
    int type = attr_type(m, vertex ? IGRAPH_ATTRIBUTE_VERTEX : IGRAPH_ATTRIBUTE_EDGE, attr);
    if (type < 0 && required)
        return gml_fail(m, "has no vertex attribute 'kind' (required: gpu, nvswitch, nic or switch)");
    if (type >= 0 && type != IGRAPH_ATTRIBUTE_STRING)
        return gml_fail(m, "%s attribute '%s' must be a string", vertex ? "vertex" : "edge", attr);
    for (int64_t i = 0; i < n; i++)
        out[i] = -1;
    if (type < 0)
        return TOPO_OK;
    igraph_strvector_t sv;
    if (igraph_strvector_init(&sv, 0))
        return TOPO_ENOMEM;
    igraph_error_t e = vertex ? VASV(&m->g, attr, &sv) : EASV(&m->g, attr, &sv);
    int rc =
        e == IGRAPH_SUCCESS ? TOPO_OK : topo_i_from_igraph_error(e, m->issue, "reading GraphML attributes");
    for (int64_t i = 0; rc == TOPO_OK && i < n; i++) {
        const char *s = igraph_strvector_get(&sv, i);
        for (int k = 0; k < count; k++)
            if (names[k] && strcmp(s, names[k]) == 0)
                out[i] = k;
        if (out[i] >= 0 || (!vertex && s[0] == '\0' && strcmp(attr, "technology") == 0))
            continue; /* an edge without a technology: its kind's */
        if (vertex)
            rc = gml_fail(m, "vertex %lld: kind '%s' must be gpu, nvswitch, nic or switch", (long long)i, s);
        else if (strcmp(attr, "kind") == 0)
            rc = gml_fail(m, "edge %lld: kind '%s' must be nvlink, pcie or network", (long long)i, s);
        else {
            char allowed[200] = "";
            size_t used = 0;
            for (int k = 0; k < count; k++)
                if (names[k])
                    used +=
                        (size_t)snprintf(allowed + used, used < sizeof allowed ? sizeof allowed - used : 0,
                                         "%s%s", used ? ", " : "", names[k]);
            rc = gml_fail(m, "edge %lld: technology '%.40s' is not a link technology; allowed: %s",
                          (long long)i, s, allowed);
        }
    }
    igraph_strvector_destroy(&sv);
    return rc;
}

static int is_int(double x, double lo) {
    return isfinite(x) && x == floor(x) && x >= lo && x < 2147483647.0;
}

/* Vertices: kinds, nodes, tiers, groups, racks; ranks into rank[] (-2 where absent). */
static int import_vertices(topo_t *t, gml_t *m, double *rank) {
    int64_t V = m->V;
    int *kind = alloc_malloc((size_t)(V + 1) * sizeof *kind);
    double *a = alloc_malloc((size_t)(4 * V + 1) * sizeof *a);
    int rc = TOPO_ENOMEM;
    if (!kind || !a)
        goto done;
    double *node = a, *tier = a + V, *group = a + 2 * V, *rack = a + 3 * V;
    if ((rc = read_kind(m, 1, "kind", VKIND, 4, 1, kind)) || (rc = read_num(m, 1, "node", -1, 0, node)) ||
        (rc = read_num(m, 1, "tier", -2, 0, tier)) || (rc = read_num(m, 1, "group", -1, 0, group)) ||
        (rc = read_num(m, 1, "rack", -1, 0, rack)) || (rc = read_num(m, 1, "rank", -2, 0, rank)))
        goto done;
    for (int64_t v = 0; v < V && rc == TOPO_OK; v++) {
        double tr = tier[v] == -2 ? (kind[v] == TOPO_VERTEX_SWITCH ? 1 : 0) : tier[v];
        if (!is_int(node[v], -1) || !is_int(tr, 0) || !is_int(group[v], -1) || !is_int(rack[v], -1))
            rc = gml_fail(m, "vertex %lld: node, group and rack must be integers >= -1, tier >= 0",
                          (long long)v);
        else if (topo_i_vertex(t, (topo_vertex_kind_t)kind[v], (int64_t)node[v], (int64_t)tr,
                               (int64_t)group[v], (int64_t)rack[v], v) < 0)
            rc = TOPO_ENOMEM;
        t->n_gpus += kind[v] == TOPO_VERTEX_GPU;
    }
done:
    free(kind);
    free(a);
    return rc;
}

/* ranks: given, or vertex order; GPUs of a node consecutive (node-major); nodes default to ranks */
static int import_ranks(topo_t *t, gml_t *m, const double *rank) {
    int64_t G = t->n_gpus, next = 0;
    int32_t *gv = alloc_malloc((size_t)(G + 1) * sizeof *gv);
    if (!gv)
        return TOPO_ENOMEM;
    for (int64_t g = 0; g < G; g++)
        gv[g] = -1;
    for (int64_t v = 0; v < t->n_vertices; v++) {
        if (t->v_kind[v] != TOPO_VERTEX_GPU)
            continue;
        double r = rank[v] == -2 ? (double)next : rank[v];
        next++;
        if (!is_int(r, 0) || r >= (double)G || gv[(int64_t)r] >= 0) {
            free(gv);
            return gml_fail(m, "GPU vertex %lld: rank must be a distinct integer in [0, %lld)", (long long)v,
                            (long long)G);
        }
        gv[(int64_t)r] = (int32_t)v;
        t->v_rank[v] = (int32_t)r;
    }
    t->gpu_vertex = gv;
    int64_t nodes = 0, last = -1;
    for (int64_t g = 0; g < G; g++) {
        int32_t v = gv[g];
        if (t->v_node[v] < 0)
            t->v_node[v] = (int32_t)g;
        if (t->v_node[v] < last)
            return gml_fail(m, "GPU ranks must be node-major: rank %lld has a smaller node than rank %lld",
                            (long long)g, (long long)g - 1);
        nodes += t->v_node[v] != last;
        last = t->v_node[v];
    }
    t->n_nodes = nodes;
    return TOPO_OK;
}

/* Cables of a directed file: arc k from u to v pairs with the k-th arc from v to u. */
typedef struct {
    int32_t lo, hi, id;
} arc_key_t;

static int cmp_arc(const void *pa, const void *pb) {
    const arc_key_t *a = pa, *b = pb;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    if (a->hi != b->hi)
        return a->hi < b->hi ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static int pair_cables(topo_t *t) {
    int64_t L = t->n_links;
    arc_key_t *k = alloc_malloc((size_t)(L + 1) * sizeof *k);
    int32_t *partner = alloc_malloc((size_t)(L + 1) * sizeof *partner);
    if (!k || !partner) {
        free(k);
        free(partner);
        return TOPO_ENOMEM;
    }
    for (int64_t l = 0; l < L; l++) {
        int32_t u = t->l_from[l], v = t->l_to[l];
        k[l] = (arc_key_t){u < v ? u : v, u < v ? v : u, (int32_t)l};
        partner[l] = -1;
    }
    qsort(k, (size_t)L, sizeof *k, cmp_arc);
    for (int64_t i = 0; i < L;) {
        int64_t j = i;
        while (j < L && k[j].lo == k[i].lo && k[j].hi == k[i].hi)
            j++;
        int64_t fw = i, bw = i; /* k-th arc lo->hi meets k-th arc hi->lo */
        while (k[i].lo != k[i].hi) {
            while (fw < j && t->l_from[k[fw].id] != k[i].lo)
                fw++;
            while (bw < j && t->l_from[k[bw].id] != k[i].hi)
                bw++;
            if (fw >= j || bw >= j)
                break;
            partner[k[fw].id] = k[bw].id, partner[k[bw].id] = k[fw].id;
            fw++, bw++;
        }
        i = j;
    }
    for (int64_t l = 0; l < L; l++)
        t->l_cable[l] = -1;
    int64_t c = 0;
    for (int64_t l = 0; l < L; l++) {
        if (t->l_cable[l] >= 0)
            continue;
        t->l_cable[l] = (int32_t)c;
        if (partner[l] >= 0)
            t->l_cable[partner[l]] = (int32_t)c;
        c++;
    }
    t->n_cables = c;
    free(k);
    free(partner);
    return TOPO_OK;
}

/* Given cable ids: renumber densely in order of first appearance. The ids are sorted with their
 * links, so memory is O(links) whatever the ids' values. */
typedef struct {
    double id;
    int32_t link;
} cable_key_t;

static int cmp_cable(const void *pa, const void *pb) {
    const cable_key_t *a = pa, *b = pb;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return a->link < b->link ? -1 : a->link > b->link;
}

static int dense_cables(topo_t *t, gml_t *m, const double *cable) {
    int64_t L = t->n_links, c = 0;
    for (int64_t l = 0; l < L; l++)
        if (!is_int(cable[l], 0))
            return gml_fail(m, "edge %lld: cable must be an integer >= 0", (long long)l);
    cable_key_t *k = alloc_malloc((size_t)(L + 1) * sizeof *k);
    int32_t *first = alloc_malloc((size_t)(L + 1) * sizeof *first); /* link -> first link of its id */
    if (!k || !first) {
        free(k);
        free(first);
        return TOPO_ENOMEM;
    }
    for (int64_t l = 0; l < L; l++)
        k[l] = (cable_key_t){cable[l], (int32_t)l};
    qsort(k, (size_t)L, sizeof *k, cmp_cable);
    for (int64_t i = 0; i < L; i++)
        first[k[i].link] = i > 0 && k[i].id == k[i - 1].id ? first[k[i - 1].link] : k[i].link;
    for (int64_t l = 0; l < L; l++) /* first[l] <= l: its number is already assigned */
        t->l_cable[l] = first[l] == l ? (int32_t)c++ : t->l_cable[first[l]];
    free(k);
    free(first);
    t->n_cables = c;
    return TOPO_OK;
}

static topo_link_kind_t default_link_kind(const topo_t *t, int64_t u, int64_t v) {
    int ku = t->v_kind[u], kv = t->v_kind[v];
    if (ku == TOPO_VERTEX_GPU && kv == TOPO_VERTEX_GPU && t->v_node[u] == t->v_node[v])
        return TOPO_LINK_NVLINK;
    if ((ku == TOPO_VERTEX_GPU && kv == TOPO_VERTEX_NVSWITCH) ||
        (kv == TOPO_VERTEX_GPU && ku == TOPO_VERTEX_NVSWITCH))
        return TOPO_LINK_NVLINK;
    if ((ku == TOPO_VERTEX_GPU && kv == TOPO_VERTEX_NIC) || (kv == TOPO_VERTEX_GPU && ku == TOPO_VERTEX_NIC))
        return TOPO_LINK_PCIE;
    return TOPO_LINK_NETWORK;
}

static int add_links(topo_t *t, gml_t *m, const double *bw, const double *lat, const int *kind,
                     const int *tech) {
    int directed = igraph_is_directed(&m->g);
    for (int64_t e = 0; e < m->E; e++) {
        int64_t u = IGRAPH_FROM(&m->g, e), v = IGRAPH_TO(&m->g, e);
        if (!isfinite(bw[e]) || bw[e] <= 0 || !isfinite(lat[e]) || lat[e] < 0)
            return gml_fail(m, "edge %lld: bandwidth_bytes_per_s must be > 0 and latency_s >= 0",
                            (long long)e);
        if (lat[e] > TOPO_MAX_LATENCY_S)
            return gml_fail(
                m, "edge %lld: latency_s %g must be in [0, %g] s (a latency above 1 s is not a link)",
                (long long)e, lat[e], TOPO_MAX_LATENCY_S);
        topo_link_kind_t k = kind[e] >= 0 ? (topo_link_kind_t)kind[e] : default_link_kind(t, u, v);
        const topo_tech_info_t *ti = tech[e] >= 0 ? topo_tech_info((topo_tech_t)tech[e]) : NULL;
        if (ti && ti->link_kind != (int)k)
            return gml_fail(m, "edge %lld: technology '%s' is a %s technology, the edge is %s", (long long)e,
                            ti->name, topo_link_kind_name((topo_link_kind_t)ti->link_kind),
                            topo_link_kind_name(k));
        const int64_t first = t->n_links;
        if (topo_i_link(t, u, v, e, k, bw[e], lat[e]) < 0 ||
            (!directed && topo_i_link(t, v, u, e, k, bw[e], lat[e]) < 0))
            return TOPO_ENOMEM;
        for (int64_t l = first; ti && l < t->n_links; l++) {
            t->l_tech[l] = (uint8_t)tech[e];
            t->l_eff[l] = ti->efficiency;
        }
    }
    t->n_cables = directed ? 0 : m->E;
    return TOPO_OK;
}

static int import_edges(topo_t *t, gml_t *m) {
    int64_t E = m->E;
    double *a = alloc_malloc((size_t)(3 * E + 1) * sizeof *a);
    int *kind = alloc_malloc((size_t)(2 * E + 1) * sizeof *kind), *tech = kind ? kind + E : NULL;
    const char *tech_names[TOPO_TECH_COUNT];
    for (int i = 0; i < TOPO_TECH_COUNT; i++)
        tech_names[i] = topo_tech_info((topo_tech_t)i) ? topo_tech_name((topo_tech_t)i) : NULL;
    int rc = TOPO_ENOMEM;
    if (!a || !kind)
        goto done;
    if ((rc = read_num(m, 0, "bandwidth_bytes_per_s", 0, 1, a)) ||
        (rc = read_num(m, 0, "latency_s", 0, 1, a + E)) || (rc = read_num(m, 0, "cable", -1, 0, a + 2 * E)) ||
        (rc = read_kind(m, 0, "kind", LKIND, 3, 0, kind)) ||
        (rc = read_kind(m, 0, "technology", tech_names, TOPO_TECH_COUNT, 0, tech)) ||
        (rc = add_links(t, m, a, a + E, kind, tech)))
        goto done;
    if (igraph_is_directed(&m->g))
        rc = attr_type(m, IGRAPH_ATTRIBUTE_EDGE, "cable") >= 0 ? dense_cables(t, m, a + 2 * E)
                                                               : pair_cables(t);
done:
    free(a);
    free(kind);
    return rc;
}

static void import_names(topo_t *t, gml_t *m, const topo_params_t *p) {
    if (attr_type(m, IGRAPH_ATTRIBUTE_GRAPH, "name") == IGRAPH_ATTRIBUTE_STRING)
        snprintf(t->name, sizeof t->name, "%s", GAS(&m->g, "name"));
    else if (!p->name[0] || strcmp(p->name, "graphml") == 0)
        snprintf(t->name, sizeof t->name, "%s", m->path);
    snprintf(t->source_kind, sizeof t->source_kind, "graphml");
    if (attr_type(m, IGRAPH_ATTRIBUTE_GRAPH, "source_kind") == IGRAPH_ATTRIBUTE_STRING)
        snprintf(t->source_kind, sizeof t->source_kind, "%s", GAS(&m->g, "source_kind"));
}

static int import_graph(topo_t *t, gml_t *m, const topo_params_t *p) {
    m->V = igraph_vcount(&m->g);
    m->E = igraph_ecount(&m->g);
    if (m->V >= INT32_MAX / 2 || m->E >= INT32_MAX / 4)
        return gml_fail(m, "has too many vertices or edges (%lld, %lld)", (long long)m->V, (long long)m->E);
    igraph_error_t e =
        igraph_cattribute_list(&m->g, &m->gnames, &m->gtypes, &m->vnames, &m->vtypes, &m->enames, &m->etypes);
    if (e != IGRAPH_SUCCESS)
        return topo_i_from_igraph_error(e, m->issue, "reading GraphML attributes");
    import_names(t, m, p);
    double *rank = alloc_malloc((size_t)(m->V + 1) * sizeof *rank);
    if (!rank)
        return TOPO_ENOMEM;
    int rc = import_vertices(t, m, rank);
    if (rc == TOPO_OK && t->n_gpus == 0)
        rc = gml_fail(m, "has no GPU vertices (vertex kind gpu)");
    else if (rc == TOPO_OK && p->gpus != 0 && p->gpus != t->n_gpus)
        rc = gml_fail(m, "holds %lld GPUs, not the %lld asked for", (long long)t->n_gpus, (long long)p->gpus);
    if (rc == TOPO_OK) { /* the links and the next-hop table (4 bytes per GPU and vertex) still to come */
        const int64_t links = igraph_is_directed(&m->g) ? m->E : 2 * m->E;
        rc = topo_i_memory_check(p, t->name,
                                 topo_memory_bytes_for(m->V, links, 4.0 * (double)t->n_gpus * (double)m->V),
                                 m->V, links, m->issue);
    }
    if (rc == TOPO_OK)
        rc = import_ranks(t, m, rank);
    free(rank);
    return rc ? rc : import_edges(t, m);
}

/* Destroys what gml_init set up, also when it stopped part-way (m zeroed first: a vector whose
 * storage is NULL was never initialised, and igraph asserts on destroying one). */
static void gml_destroy(gml_t *m, int has_graph) {
    igraph_strvector_t *sv[] = {&m->gnames, &m->vnames, &m->enames};
    igraph_vector_int_t *iv[] = {&m->gtypes, &m->vtypes, &m->etypes};
    for (int i = 0; i < 3; i++) {
        if (sv[i]->stor_begin)
            igraph_strvector_destroy(sv[i]);
        if (iv[i]->stor_begin)
            igraph_vector_int_destroy(iv[i]);
    }
    if (has_graph)
        igraph_destroy(&m->g);
}

static int gml_init(gml_t *m) {
    if (igraph_strvector_init(&m->gnames, 0) || igraph_strvector_init(&m->vnames, 0) ||
        igraph_strvector_init(&m->enames, 0) || igraph_vector_int_init(&m->gtypes, 0) ||
        igraph_vector_int_init(&m->vtypes, 0) || igraph_vector_int_init(&m->etypes, 0))
        return TOPO_ENOMEM;
    return TOPO_OK;
}

int topo_i_build_graphml(topo_t *t, const topo_params_t *p, topo_issue_t *issue) {
    gml_t m;
    memset(&m, 0, sizeof m);
    m.path = p->graphml_path;
    m.issue = issue;
    FILE *f = fopen(p->graphml_path, "r");
    if (!f) {
        topo_i_set_issue(issue, "file", p->graphml_path, "cannot be opened: %s", strerror(errno));
        return TOPO_EIO;
    }
    const igraph_attribute_table_t *old = igraph_set_attribute_table(&igraph_cattribute_table);
    int rc = gml_init(&m), has_graph = 0;
    if (rc == TOPO_OK) {
        igraph_error_t e = igraph_read_graph_graphml(&m.g, f, 0);
        has_graph = e == IGRAPH_SUCCESS;
        if (!has_graph) {
            topo_i_set_issue(issue, "file", p->graphml_path, "is not readable GraphML (igraph: %s)",
                             igraph_strerror(e));
            rc = e == IGRAPH_ENOMEM ? TOPO_ENOMEM : TOPO_EFORMAT;
        }
    }
    fclose(f);
    if (rc == TOPO_OK)
        rc = import_graph(t, &m, p);
    gml_destroy(&m, has_graph); /* while the attribute table that owns its attributes is installed */
    igraph_set_attribute_table(old);
    if (rc == TOPO_OK) {
        int64_t n = t->n_gpus < 64 ? t->n_gpus : 64;
        t->diam_sources = alloc_malloc((size_t)n * sizeof *t->diam_sources);
        if (!t->diam_sources)
            return TOPO_ENOMEM;
        for (int64_t i = 0; i < n; i++)
            t->diam_sources[i] = i;
        t->n_diam_sources = n;
    }
    return rc;
}
