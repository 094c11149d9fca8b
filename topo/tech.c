/* tech.c - the table of link technologies: per-direction bandwidth, latency and the fraction NCCL
 * uses of each (docs/topology.md, "Link technologies", gives the sources). */
#include <string.h>

#include "topo_internal.h"

/* The efficiencies are NCCL's calibration (docs/engine.md, "Calibration"). Network: InfiniBand
 * reaches 46-48 of 50 GB/s per NDR NIC and ~24 of 25 per HDR NIC (NVIDIA maintainers, nccl-tests
 * #290, #252); Slingshot is the value measured on Perlmutter at 2-4 GPUs per node (33.5 of 50 and
 * 70.5 of 100 GB/s of bus bandwidth). NVLink-3 (A100): measured NCCL bus bandwidth of about 200 of
 * 300 GB/s per GPU on an 8 x A100 NVLink node (nccl-tests #149), rather than NCCL's modelled 20 of
 * 25 GB/s per link; NVLink-4 and later: NCCL's model of one link (src/graph/topo.h), 20.6 of 25 GB/s,
 * which matches the ~370 of 450 GB/s NVIDIA's maintainers quote for rings (nccl-tests #212). PCIe:
 * NCCL's model of a x16 link (src/graph/topo.cc: 24 GB/s for Gen4, 48 for Gen5) over the line rate;
 * not calibrated against measurements. XDR and RoCE: InfiniBand's value, not calibrated. */
#define NVLINK4_EFFICIENCY (20.6 / 25.0)

static const topo_tech_info_t TECHS[TOPO_TECH_COUNT] = {
    [TOPO_TECH_NVLINK3] = {"nvlink3", TOPO_LINK_NVLINK, 300e9, 0.25e-6, 0.67, 80,
                           "NVLink-3 (A100): 300 GB/s per GPU per direction; NCCL reaches ~200 GB/s"},
    [TOPO_TECH_NVLINK4] = {"nvlink4", TOPO_LINK_NVLINK, 450e9, 0.25e-6, NVLINK4_EFFICIENCY, 90,
                           "NVLink-4 (H100): 450 GB/s per GPU per direction"},
    [TOPO_TECH_NVLINK5] = {"nvlink5", TOPO_LINK_NVLINK, 900e9, 0.25e-6, NVLINK4_EFFICIENCY, 100,
                           "NVLink-5 (B200, GB200): 900 GB/s per GPU per direction"},
    [TOPO_TECH_PCIE4] = {"pcie4", TOPO_LINK_PCIE, 32e9, 0.25e-6, 0.75, 0,
                         "PCIe Gen4 x16: 32 GB/s per direction; NCCL models 24 GB/s"},
    [TOPO_TECH_PCIE5] = {"pcie5", TOPO_LINK_PCIE, 64e9, 0.25e-6, 0.75, 0,
                         "PCIe Gen5 x16: 64 GB/s per direction; NCCL models 48 GB/s"},
    [TOPO_TECH_IB_HDR] = {"ib-hdr", TOPO_LINK_NETWORK, 25e9, 0.15e-6, 0.94, 0,
                          "InfiniBand HDR: 200 Gb/s per port"},
    [TOPO_TECH_IB_NDR] = {"ib-ndr", TOPO_LINK_NETWORK, 50e9, 0.15e-6, 0.94, 0,
                          "InfiniBand NDR: 400 Gb/s per port"},
    [TOPO_TECH_IB_XDR] = {"ib-xdr", TOPO_LINK_NETWORK, 100e9, 0.15e-6, 0.94, 0,
                          "InfiniBand XDR: 800 Gb/s per port (efficiency not calibrated: NDR's)"},
    [TOPO_TECH_ROCE_400G] = {"roce-400g", TOPO_LINK_NETWORK, 50e9, 0.15e-6, 0.94, 0,
                             "RoCE v2 on 400 Gb/s Ethernet (efficiency not calibrated: InfiniBand's)"},
    [TOPO_TECH_SLINGSHOT11] = {"slingshot11", TOPO_LINK_NETWORK, 25e9, 0.35e-6, 0.70, 0,
                               "HPE Slingshot-11: 200 Gb/s per port; NCCL reaches ~70 %"},
};

const topo_tech_info_t *topo_tech_info(topo_tech_t tech) {
    return tech > TOPO_TECH_AUTO && (unsigned)tech < TOPO_TECH_COUNT ? &TECHS[tech] : NULL;
}

const char *topo_tech_name(topo_tech_t tech) {
    const topo_tech_info_t *i = topo_tech_info(tech);
    return i ? i->name : tech == TOPO_TECH_AUTO ? "auto" : "unknown";
}

int topo_tech_parse(const char *name, topo_tech_t *out) {
    for (int i = TOPO_TECH_AUTO + 1; name && i < TOPO_TECH_COUNT; i++)
        if (strcmp(TECHS[i].name, name) == 0) {
            *out = (topo_tech_t)i;
            return TOPO_OK;
        }
    return TOPO_EINVAL;
}

topo_tech_t topo_tech_for_rate(int link_kind, double bandwidth_bytes_per_s) {
    switch (link_kind) {
    case TOPO_LINK_NVLINK:
        return bandwidth_bytes_per_s >= 900e9   ? TOPO_TECH_NVLINK5
               : bandwidth_bytes_per_s >= 450e9 ? TOPO_TECH_NVLINK4
                                                : TOPO_TECH_NVLINK3;
    case TOPO_LINK_PCIE:
        return bandwidth_bytes_per_s > 32e9 ? TOPO_TECH_PCIE5 : TOPO_TECH_PCIE4;
    default:
        return bandwidth_bytes_per_s >= 100e9  ? TOPO_TECH_IB_XDR
               : bandwidth_bytes_per_s >= 50e9 ? TOPO_TECH_IB_NDR
                                               : TOPO_TECH_IB_HDR;
    }
}

static int set_tech(topo_tech_t tech, int kind, topo_tech_t *slot, double *bandwidth_bytes_per_s,
                    double *latency_s) {
    const topo_tech_info_t *i = topo_tech_info(tech);
    if (!i || i->link_kind != kind)
        return TOPO_EINVAL;
    *slot = tech;
    *bandwidth_bytes_per_s = i->bandwidth_bytes_per_s;
    *latency_s = i->latency_s;
    return TOPO_OK;
}

int topo_params_set_network(topo_params_t *p, topo_tech_t tech) {
    return set_tech(tech, TOPO_LINK_NETWORK, &p->network, &p->link_bandwidth_bytes_per_s, &p->link_latency_s);
}
int topo_node_set_nvlink(topo_node_params_t *n, topo_tech_t tech) {
    return set_tech(tech, TOPO_LINK_NVLINK, &n->nvlink_tech, &n->nvlink_bandwidth_bytes_per_s,
                    &n->nvlink_latency_s);
}
int topo_node_set_pcie(topo_node_params_t *n, topo_tech_t tech) {
    return set_tech(tech, TOPO_LINK_PCIE, &n->pcie_tech, &n->pcie_bandwidth_bytes_per_s, &n->pcie_latency_s);
}
