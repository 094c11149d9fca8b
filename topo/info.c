/* info.c - read-only accessors: sizes, vertex and link descriptions, readable link names. */
#include <stdio.h>

#include "topo_internal.h"

const char *topo_name(const topo_t *t) {
    return t->name;
}
topo_kind_t topo_kind(const topo_t *t) {
    return t->kind;
}
topo_tech_t topo_kind_tech(const topo_t *t, topo_link_kind_t kind) {
    return (unsigned)kind < 3 ? t->kind_tech[kind] : TOPO_TECH_AUTO;
}
const topo_node_params_t *topo_node_params(const topo_t *t) {
    return &t->node;
}
int64_t topo_gpu_count(const topo_t *t) {
    return t->n_gpus;
}
int64_t topo_node_count(const topo_t *t) {
    return t->n_nodes;
}
int64_t topo_vertex_count(const topo_t *t) {
    return t->n_vertices;
}
int64_t topo_link_count(const topo_t *t) {
    return t->n_links;
}
int64_t topo_gpu_vertex(const topo_t *t, int64_t gpu) {
    return gpu >= 0 && gpu < t->n_gpus ? t->gpu_vertex[gpu] : -1;
}
int64_t topo_gpu_node(const topo_t *t, int64_t gpu) {
    return gpu >= 0 && gpu < t->n_gpus ? t->v_node[t->gpu_vertex[gpu]] : -1;
}
const double *topo_link_bandwidths_bytes_per_s(const topo_t *t) {
    return t->l_bw;
}
const double *topo_link_latencies_s(const topo_t *t) {
    return t->l_lat;
}
const double *topo_link_efficiencies(const topo_t *t) {
    return t->l_eff;
}

int topo_vertex_get(const topo_t *t, int64_t v, topo_vertex_info_t *out) {
    if (v < 0 || v >= t->n_vertices)
        return TOPO_ERANGE;
    out->kind = (topo_vertex_kind_t)t->v_kind[v];
    out->node = t->v_node[v];
    out->tier = t->v_tier[v];
    out->group = t->v_group[v];
    out->rack = t->v_rack[v];
    out->rank = t->v_rank[v];
    out->index = t->v_index[v];
    return TOPO_OK;
}

int topo_link_get(const topo_t *t, int64_t l, topo_link_info_t *out) {
    if (l < 0 || l >= t->n_links)
        return TOPO_ERANGE;
    out->from = t->l_from[l];
    out->to = t->l_to[l];
    out->cable = t->l_cable[l];
    out->kind = (topo_link_kind_t)t->l_kind[l];
    out->tech = (topo_tech_t)t->l_tech[l];
    out->bandwidth_bytes_per_s = t->l_bw[l];
    out->latency_s = t->l_lat[l];
    return TOPO_OK;
}

const char *topo_vertex_kind_name(topo_vertex_kind_t k) {
    static const char *const N[] = {"gpu", "nvswitch", "nic", "switch"};
    return (unsigned)k < 4 ? N[k] : "unknown";
}

const char *topo_link_kind_name(topo_link_kind_t k) {
    static const char *const N[] = {"nvlink", "pcie", "network"};
    return (unsigned)k < 3 ? N[k] : "unknown";
}

static void vertex_name(const topo_t *t, int64_t v, char *buf, size_t size) {
    switch (t->v_kind[v]) {
    case TOPO_VERTEX_GPU:
        snprintf(buf, size, "gpu%d", t->v_rank[v]);
        break;
    case TOPO_VERTEX_NVSWITCH:
        snprintf(buf, size, "nvs%d", t->v_node[v]);
        break;
    case TOPO_VERTEX_NIC:
        snprintf(buf, size, "nic%d", t->v_index[v]);
        break;
    default: {
        int tier = t->v_tier[v] >= 0 && t->v_tier[v] < 4 ? t->v_tier[v] : 0;
        snprintf(buf, size, "%s%d", t->tier_names[tier], t->v_index[v]);
    }
    }
}

char *topo_link_name(const topo_t *t, int64_t l, char *buf, size_t size) {
    if (size == 0)
        return buf;
    if (l < 0 || l >= t->n_links) {
        snprintf(buf, size, "link%lld", (long long)l);
        return buf;
    }
    char a[48], b[48];
    vertex_name(t, t->l_from[l], a, sizeof a);
    vertex_name(t, t->l_to[l], b, sizeof b);
    snprintf(buf, size, "%s->%s", a, b);
    return buf;
}
