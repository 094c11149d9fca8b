/* topo_net.c - the bridge from topo/'s link table and route lookup to the engine's network
 * description: the link arrays are topo's own, routes come from topo_route (which never allocates
 * nor calls igraph), and a GPU's NVLink domain is its topo node. */
#include <string.h>

#include "sim.h"
#include "topo.h"

/* ECMP hashing keys on the (src, dst) pair, so a pair always takes the same path: the engine looks
 * routes up once per collective pair and keeps them. */
static int route_cb(void *ctx, int32_t src, int32_t dst, int32_t *links, int32_t cap) {
    const topo_flow_t f = {.src_gpu = src,
                           .dst_gpu = dst,
                           .key = ((uint64_t)(uint32_t)src << 32) | (uint32_t)dst,
                           .routing = TOPO_ROUTING_DEFAULT,
                           .link_load = NULL};
    const int len = topo_route((const topo_t *)ctx, &f, links, cap);
    return len > 0 ? len : -1;
}

/* UGAL: the same flow key (so the same minimal path and Valiant candidates), compared against the
 * engine's link loads each time a flow starts. With every load 0 it gives route_cb's route. */
static int route_load_cb(void *ctx, int32_t src, int32_t dst, const double *load, int32_t *links,
                         int32_t cap) {
    const topo_flow_t f = {.src_gpu = src,
                           .dst_gpu = dst,
                           .key = ((uint64_t)(uint32_t)src << 32) | (uint32_t)dst,
                           .routing = TOPO_ROUTING_DEFAULT,
                           .link_load = load};
    const int len = topo_route((const topo_t *)ctx, &f, links, cap);
    return len > 0 ? len : -1;
}

static int kind_cb(void *ctx, int32_t link) {
    topo_link_info_t li;
    if (topo_link_get((const topo_t *)ctx, link, &li) != TOPO_OK)
        return SIM_LINK_NETWORK;
    return li.kind == TOPO_LINK_NVLINK ? SIM_LINK_NVLINK
           : li.kind == TOPO_LINK_PCIE ? SIM_LINK_PCIE
                                       : SIM_LINK_NETWORK;
}

/* GPUs per node when GPU i sits on node i / g for every i (topo's node-major order); else 1. */
static int32_t domain_size(const topo_t *t, int64_t n) {
    const int64_t node0 = topo_gpu_node(t, 0);
    int64_t g = 1;
    while (g < n && topo_gpu_node(t, g) == node0)
        g++;
    for (int64_t i = 0; i < n; i++)
        if (topo_gpu_node(t, i) != topo_gpu_node(t, 0) + i / g)
            return 1;
    return (int32_t)g;
}

int sim_topo_network(const struct topo *t, sim_network_desc_t *d) {
    memset(d, 0, sizeof *d);
    const int64_t n = topo_gpu_count(t), links = topo_link_count(t);
    if (n < 1 || n > INT32_MAX || links < 0 || links > INT32_MAX)
        return SIM_EINVAL;
    d->n_gpus = (int32_t)n;
    d->n_links = (int32_t)links;
    d->capacity_bytes_per_s = topo_link_bandwidths_bytes_per_s(t);
    d->latency_s = topo_link_latencies_s(t);
    d->route = route_cb;
    d->route_ctx = (void *)(uintptr_t)t;
    d->gpus_per_domain = domain_size(t, n);
    d->link_kind = kind_cb;
    d->link_tech_efficiency = topo_link_efficiencies(t);
    d->route_load = topo_routing(t) == TOPO_ROUTING_UGAL ? route_load_cb : NULL;
    return SIM_OK;
}

/* Everything comes from the link technologies (topo_tech_info): the GPU generation NCCL tunes for
 * from the NVLink technology, each link's usable fraction from its own technology (a fabric of mixed
 * technologies gets each link's), and per kind the technology the topology gives that kind. The host
 * (AMD or not, NICs on the CPU) is the node's. */
void sim_config_nccl_topology(sim_config_t *cfg, const struct topo *t) {
    const topo_node_params_t *node = topo_node_params(t);
    sim_nccl_platform_t pl;
    pl.sm = topo_tech_info(topo_kind_tech(t, TOPO_LINK_NVLINK))->nccl_sm;
    pl.amd_host = node->amd_host;
    pl.ll128_network = !node->nic_on_cpu;
    sim_config_nccl(cfg, &pl);
    cfg->link_kind_efficiency[SIM_LINK_NETWORK] =
        topo_tech_info(topo_kind_tech(t, TOPO_LINK_NETWORK))->efficiency;
    cfg->link_kind_efficiency[SIM_LINK_NVLINK] =
        topo_tech_info(topo_kind_tech(t, TOPO_LINK_NVLINK))->efficiency;
    cfg->link_kind_efficiency[SIM_LINK_PCIE] = topo_tech_info(topo_kind_tech(t, TOPO_LINK_PCIE))->efficiency;
    cfg->use_link_tech_efficiency = 1;
    cfg->nvls = sim_topo_nvls(t);
}

/* NCCL runs NVLS on sm90 and later (src/graph/search.cc: no NVLS graph below compute capability 9.0
 * or without an NVSwitch); the NVLink technology gives the generation, the engine checks the switch. */
int sim_topo_sharp(const struct topo *t) {
    const topo_tech_t net = topo_kind_tech(t, TOPO_LINK_NETWORK);
    return net == TOPO_TECH_IB_HDR || net == TOPO_TECH_IB_NDR || net == TOPO_TECH_IB_XDR;
}

int sim_topo_nvls(const struct topo *t) {
    return topo_tech_info(topo_kind_tech(t, TOPO_LINK_NVLINK))->nccl_sm >= 90;
}
