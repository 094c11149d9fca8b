/* check.c - parameter validation and the shapes (sizes) it derives: every rule names the parameter,
 * its value and what is allowed, e.g. "k: 7 must be even". Shapes are shared with the builders so
 * that what validation accepts is exactly what gets built.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "checked.h"
#include "topo_internal.h"

static void vset(topo_issue_t *issue, const char *field, const char *value, const char *fmt, va_list ap) {
    if (!issue)
        return;
    snprintf(issue->field, sizeof issue->field, "%s", field);
    snprintf(issue->value, sizeof issue->value, "%s", value ? value : "");
    vsnprintf(issue->rule, sizeof issue->rule, fmt, ap);
}

int topo_i_set_issue(topo_issue_t *issue, const char *field, const char *value, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vset(issue, field, value, fmt, ap);
    va_end(ap);
    return TOPO_EINVAL;
}

int topo_i_issue_fallback(topo_issue_t *issue, const char *name, int rc) {
    if (rc && issue && !issue->rule[0])
        topo_i_set_issue(issue, "topology", name, "%s", topo_status_name(rc));
    return rc;
}

int topo_i_set_issuef(topo_issue_t *issue, const char *field, int64_t value, const char *fmt, ...) {
    char v[32];
    snprintf(v, sizeof v, "%lld", (long long)value);
    va_list ap;
    va_start(ap, fmt);
    vset(issue, field, v, fmt, ap);
    va_end(ap);
    return TOPO_EINVAL;
}

/* Products and sums of sizes (>= 0) saturate at INT64_MAX (checked_mul_sat_i64, checked_add_sat_i64):
 * a count that large is refused by the limit checks that follow. */

static int need_pos(topo_issue_t *issue, const char *field, int64_t v) {
    return v >= 1 ? TOPO_OK : topo_i_set_issuef(issue, field, v, "must be >= 1");
}

static int need_rate(topo_issue_t *issue, const char *field, double v, int positive) {
    char s[32];
    snprintf(s, sizeof s, "%g", v);
    if (!isfinite(v) || v < 0 || (positive && v == 0))
        return topo_i_set_issue(issue, field, s,
                                positive ? "must be a finite number > 0" : "must be finite and >= 0");
    return TOPO_OK;
}

/* A link latency: finite, >= 0 and at most TOPO_MAX_LATENCY_S. */
static int need_latency(topo_issue_t *issue, const char *field, double v) {
    char s[32];
    snprintf(s, sizeof s, "%g", v);
    if (!(v >= 0))
        return need_rate(issue, field, v, 0);
    if (!(v <= TOPO_MAX_LATENCY_S))
        return topo_i_set_issue(issue, field, s, "must be in [0, %g] s (a latency above 1 s is not a link)",
                                TOPO_MAX_LATENCY_S);
    return TOPO_OK;
}

/* A technology parameter: TOPO_TECH_AUTO or a technology of the link kind it is for. */
static int need_tech(topo_issue_t *issue, const char *field, topo_tech_t tech, topo_link_kind_t kind) {
    if (tech == TOPO_TECH_AUTO)
        return TOPO_OK;
    const topo_tech_info_t *i = topo_tech_info(tech);
    if (!i)
        return topo_i_set_issuef(issue, field, (int64_t)tech, "is not a link technology");
    if (i->link_kind != (int)kind)
        return topo_i_set_issue(issue, field, i->name, "is a %s technology; allowed: a %s technology",
                                topo_link_kind_name((topo_link_kind_t)i->link_kind),
                                topo_link_kind_name(kind));
    return TOPO_OK;
}

static int64_t largest_divisor_upto(int64_t n, int64_t lim) {
    for (int64_t d = lim < n ? lim : n; d >= 1; d--)
        if (n % d == 0)
            return d;
    return 0;
}

/* ---- common ------------------------------------------------------------------------------------ */

static int check_node(const topo_params_t *p, topo_issue_t *issue) {
    const topo_node_params_t *n = &p->node;
    int rc;
    if ((rc = need_pos(issue, "gpus_per_node", n->gpus_per_node)) ||
        (rc = need_pos(issue, "nics_per_node", n->nics_per_node)))
        return rc;
    if (n->gpus_per_node % n->nics_per_node != 0)
        return topo_i_set_issuef(issue, "nics_per_node", n->nics_per_node, "must divide gpus_per_node (%lld)",
                                 (long long)n->gpus_per_node);
    if (n->gpus_per_node > 4096)
        return topo_i_set_issuef(issue, "gpus_per_node", n->gpus_per_node, "must be <= 4096");
    if ((unsigned)n->scaleup > TOPO_SCALEUP_MESH)
        return topo_i_set_issuef(issue, "scaleup", n->scaleup, "must be switch or mesh");
    if ((rc = need_rate(issue, "nvlink_bandwidth_bytes_per_s", n->nvlink_bandwidth_bytes_per_s,
                        n->gpus_per_node > 1)) ||
        (rc = need_latency(issue, "nvlink_latency_s", n->nvlink_latency_s)) ||
        (rc = need_rate(issue, "pcie_bandwidth_bytes_per_s", n->pcie_bandwidth_bytes_per_s, 0)) ||
        (rc = need_latency(issue, "pcie_latency_s", n->pcie_latency_s)))
        return rc;
    if ((rc = need_tech(issue, "nvlink", n->nvlink_tech, TOPO_LINK_NVLINK)) ||
        (rc = need_tech(issue, "pcie", n->pcie_tech, TOPO_LINK_PCIE)))
        return rc;
    if (n->nics_per_node < n->gpus_per_node && n->pcie_bandwidth_bytes_per_s <= 0)
        return topo_i_set_issue(issue, "pcie_bandwidth_bytes_per_s", "0",
                                "must be > 0 when nics_per_node (%lld) < gpus_per_node (%lld): GPUs reach "
                                "their shared NIC over PCIe",
                                (long long)n->nics_per_node, (long long)n->gpus_per_node);
    return TOPO_OK;
}

static const char *routing_choices(topo_kind_t k) {
    switch (k) {
    case TOPO_KIND_IDEAL:
    case TOPO_KIND_FAT_TREE:
    case TOPO_KIND_RAIL_OPTIMIZED:
        return "dmodk, ecmp-hash or ecmp-spread";
    case TOPO_KIND_DRAGONFLY:
        return "minimal, valiant or ugal";
    case TOPO_KIND_TORUS:
        return "dor";
    case TOPO_KIND_GRAPHML:
        return "shortest";
    }
    return "";
}

static int routing_ok(topo_kind_t k, topo_routing_t r) {
    if (r == TOPO_ROUTING_DEFAULT)
        return 1;
    switch (k) {
    case TOPO_KIND_IDEAL:
    case TOPO_KIND_FAT_TREE:
    case TOPO_KIND_RAIL_OPTIMIZED:
        return r == TOPO_ROUTING_DMODK || r == TOPO_ROUTING_ECMP_HASH || r == TOPO_ROUTING_ECMP_SPREAD;
    case TOPO_KIND_DRAGONFLY:
        return r == TOPO_ROUTING_MINIMAL || r == TOPO_ROUTING_VALIANT || r == TOPO_ROUTING_UGAL;
    case TOPO_KIND_TORUS:
        return r == TOPO_ROUTING_DOR;
    case TOPO_KIND_GRAPHML:
        return r == TOPO_ROUTING_SHORTEST;
    }
    return 0;
}

static int check_common(const topo_params_t *p, topo_issue_t *issue) {
    int rc;
    if ((unsigned)p->kind >= TOPO_KIND_COUNT)
        return topo_i_set_issuef(issue, "kind", p->kind,
                                 "must be one of ideal, fat-tree, rail-optimized, "
                                 "dragonfly, torus, graphml");
    if (p->gpus < 0)
        return topo_i_set_issuef(issue, "gpus", p->gpus, "must be >= 0 (0: the topology's full size)");
    if (p->gpus > TOPO_MAX_GPUS)
        return topo_i_set_issuef(issue, "gpus", p->gpus, "must be <= %lld", (long long)TOPO_MAX_GPUS);
    if ((rc = need_tech(issue, "network", p->network, TOPO_LINK_NETWORK)))
        return rc;
    if (p->kind == TOPO_KIND_GRAPHML)
        return TOPO_OK; /* everything else comes from the file */
    if ((rc = check_node(p, issue)))
        return rc;
    if (p->gpus % p->node.gpus_per_node != 0)
        return topo_i_set_issuef(issue, "gpus", p->gpus, "must be a multiple of gpus_per_node (%lld)",
                                 (long long)p->node.gpus_per_node);
    if ((rc = need_rate(issue, "link_bandwidth_bytes_per_s", p->link_bandwidth_bytes_per_s, 1)) ||
        (rc = need_latency(issue, "link_latency_s", p->link_latency_s)))
        return rc;
    if ((unsigned)p->routing >= TOPO_ROUTING_COUNT || !routing_ok(p->kind, p->routing))
        return topo_i_set_issue(issue, "routing", topo_routing_name(p->routing),
                                "is not available on %s (use %s)", topo_kind_name(p->kind),
                                routing_choices(p->kind));
    if (p->pxn != 0 && p->pxn != 1)
        return topo_i_set_issuef(issue, "pxn", p->pxn, "must be 0 or 1");
    if (p->switch_radix < 0)
        return topo_i_set_issuef(issue, "switch_radix", p->switch_radix, "must be >= 0 (0: unchecked)");
    return TOPO_OK;
}

/* GPUs asked for against the nodes the structure holds (slots endpoints, M per node). */
static int check_capacity(const topo_params_t *p, int64_t slots, topo_issue_t *issue) {
    int64_t nodes_cap = slots / p->node.nics_per_node;
    if (nodes_cap < 1)
        return topo_i_set_issuef(issue, "nics_per_node", p->node.nics_per_node,
                                 "is more than the %lld endpoints the topology has", (long long)slots);
    int64_t cap = checked_mul_sat_i64(nodes_cap, p->node.gpus_per_node);
    if (cap > TOPO_MAX_GPUS && p->gpus == 0)
        return topo_i_set_issuef(issue, "gpus", cap, "(the full topology) exceeds %lld; give gpus",
                                 (long long)TOPO_MAX_GPUS);
    if (p->gpus > cap)
        return topo_i_set_issuef(issue, "gpus", p->gpus, "exceeds the %lld GPUs the topology holds",
                                 (long long)cap);
    return TOPO_OK;
}

/* ---- trees ------------------------------------------------------------------------------------- */

static int tree_general(const topo_fat_tree_params_t *f, topo_xgft_shape_t *x, topo_issue_t *issue) {
    int rc;
    if ((rc = need_pos(issue, "endpoints_per_leaf", f->endpoints_per_leaf)))
        return rc;
    x->m[1] = f->endpoints_per_leaf;
    if (f->tiers == 2) {
        if ((rc = need_pos(issue, "leaves", f->leaves)) || (rc = need_pos(issue, "spines", f->spines)) ||
            (rc = need_pos(issue, "links_per_leaf_spine", f->links_per_leaf_spine)))
            return rc;
        x->m[2] = f->leaves, x->w[2] = f->spines, x->p[2] = f->links_per_leaf_spine;
        return TOPO_OK;
    }
    if ((rc = need_pos(issue, "leaves_per_pod", f->leaves_per_pod)) ||
        (rc = need_pos(issue, "pods", f->pods)) ||
        (rc = need_pos(issue, "spines_per_pod", f->spines_per_pod)) ||
        (rc = need_pos(issue, "cores_per_spine", f->cores_per_spine)) ||
        (rc = need_pos(issue, "links_per_leaf_spine", f->links_per_leaf_spine)) ||
        (rc = need_pos(issue, "links_per_spine_core", f->links_per_spine_core)))
        return rc;
    x->m[2] = f->leaves_per_pod, x->w[2] = f->spines_per_pod, x->p[2] = f->links_per_leaf_spine;
    x->m[3] = f->pods, x->w[3] = f->cores_per_spine, x->p[3] = f->links_per_spine_core;
    return TOPO_OK;
}

static int tree_ports(const topo_params_t *p, const topo_xgft_shape_t *x, topo_issue_t *issue) {
    static const char *const NAMES[4] = {"", "leaf", "spine", "core"};
    if (p->switch_radix <= 0)
        return TOPO_OK;
    for (int l = 1; l <= x->h; l++) {
        int64_t ports = checked_mul_sat_i64(x->m[l], x->p[l]);
        if (l < x->h)
            ports = checked_add_sat_i64(ports, checked_mul_sat_i64(x->w[l + 1], x->p[l + 1]));
        if (ports > p->switch_radix)
            return topo_i_set_issuef(issue, "switch_radix", p->switch_radix,
                                     "is below the %lld ports a %s needs", (long long)ports, NAMES[l]);
    }
    return TOPO_OK;
}

int topo_i_tree_shape(const topo_params_t *p, topo_xgft_shape_t *x, topo_issue_t *issue) {
    memset(x, 0, sizeof *x);
    for (int l = 0; l < 4; l++)
        x->w[l] = x->p[l] = 1;
    int rc;
    if (p->kind == TOPO_KIND_IDEAL) {
        if ((rc = need_pos(issue, "gpus", p->gpus)))
            return rc;
        x->h = 1;
        x->m[1] = checked_mul_sat_i64(p->gpus / p->node.gpus_per_node, p->node.nics_per_node);
        return TOPO_OK;
    }
    const topo_fat_tree_params_t *f = &p->fat_tree;
    if (f->tiers != 2 && f->tiers != 3)
        return topo_i_set_issuef(issue, "tiers", f->tiers, "must be 2 or 3");
    x->h = (int)f->tiers;
    if (f->k != 0) {
        if (f->k < 2)
            return topo_i_set_issuef(issue, "k", f->k, "must be >= 2 (or 0 for the general form)");
        if (f->k % 2 != 0)
            return topo_i_set_issuef(issue, "k", f->k, "must be even");
        if (f->k > 1024)
            return topo_i_set_issuef(issue, "k", f->k, "must be <= 1024");
        int64_t k = f->k;
        x->m[1] = k / 2;
        x->m[2] = f->tiers == 3 ? k / 2 : k;
        x->w[2] = k / 2;
        x->m[3] = k;
        x->w[3] = k / 2;
    } else if ((rc = tree_general(f, x, issue))) {
        return rc;
    }
    return tree_ports(p, x, issue);
}

/* ---- rail-optimized ---------------------------------------------------------------------------- */

/* 2-tier: the fewest spines S >= leaves * up / radix that divide up, each leaf with up/S cables to
 * every spine (DGX H100 RA Table 4: 4, 8, 16, 16 spines for 1-4 SUs). */
static int rail_two_tier(topo_rail_shape_t *r, int64_t up, int64_t radix) {
    int64_t leaves = checked_mul_sat_i64(r->rails, r->n_su);
    int64_t need = checked_add_sat_i64(checked_mul_sat_i64(leaves, up), radix - 1) / radix;
    for (int64_t s = need < 1 ? 1 : need; s <= up; s++) {
        if (up % s == 0 && checked_mul_sat_i64(leaves, up / s) <= radix) {
            r->su_slots = r->n_su;
            r->x.h = 2;
            r->x.m[2] = leaves, r->x.w[2] = s, r->x.p[2] = up / s;
            return 1;
        }
    }
    return 0;
}

/* 3-tier: each rail's SUs form pods of at most radix/2 leaves; spines keep radix/2 down and as many
 * up; spine j of every pod reaches core plane j (B200 RA: 128/128/64 at 16 SUs, 512/512/256 at 64). */
static int rail_three_tier(topo_rail_shape_t *r, int64_t up, int64_t radix) {
    int64_t half = radix / 2;
    int64_t per_rail = (r->n_su + half - 1) / half;
    int64_t m2 = (r->n_su + per_rail - 1) / per_rail;
    int64_t p2 = largest_divisor_upto(up, half / m2);
    if (p2 < 1)
        return 0;
    int64_t pods = checked_mul_sat_i64(r->rails, per_rail), spine_up = checked_mul_sat_i64(m2, p2);
    int64_t p3 = largest_divisor_upto(spine_up, radix / pods);
    if (p3 < 1)
        return 0;
    r->su_slots = checked_mul_sat_i64(per_rail, m2);
    r->x.h = 3;
    r->x.m[2] = m2, r->x.w[2] = up / p2, r->x.p[2] = p2;
    r->x.m[3] = pods, r->x.w[3] = spine_up / p3, r->x.p[3] = p3;
    return 1;
}

int topo_i_rail_shape(const topo_params_t *p, topo_rail_shape_t *r, topo_issue_t *issue) {
    const topo_rail_params_t *rp = &p->rail;
    int rc;
    memset(r, 0, sizeof *r);
    for (int l = 0; l < 4; l++)
        r->x.w[l] = r->x.p[l] = 1;
    if ((rc = need_pos(issue, "gpus", p->gpus)) || (rc = need_pos(issue, "nodes_per_su", rp->nodes_per_su)))
        return rc;
    if (rp->leaf_up < 0)
        return topo_i_set_issuef(issue, "leaf_up", rp->leaf_up, "must be >= 0 (0: nodes_per_su)");
    if (rp->tiers != 0 && rp->tiers != 2 && rp->tiers != 3)
        return topo_i_set_issuef(issue, "tiers", rp->tiers, "must be 2, 3 or 0 (automatic)");
    int64_t radix = p->switch_radix > 0 ? p->switch_radix : 64;
    int64_t up = rp->leaf_up > 0 ? rp->leaf_up : rp->nodes_per_su;
    if (rp->nodes_per_su + up > radix)
        return topo_i_set_issuef(issue, "nodes_per_su", rp->nodes_per_su,
                                 "plus leaf_up (%lld) exceeds switch_radix (%lld)", (long long)up,
                                 (long long)radix);
    int64_t nodes = p->gpus / p->node.gpus_per_node;
    r->rails = p->node.nics_per_node;
    r->nodes_per_su = rp->nodes_per_su;
    r->n_su = (nodes + rp->nodes_per_su - 1) / rp->nodes_per_su;
    r->x.m[1] = rp->nodes_per_su;
    if (rp->tiers != 3 && rail_two_tier(r, up, radix))
        return TOPO_OK;
    if (rp->tiers == 2)
        return topo_i_set_issuef(issue, "tiers", 2, "cannot hold %lld leaves on radix-%lld spines",
                                 (long long)checked_mul_sat_i64(r->rails, r->n_su), (long long)radix);
    if (rail_three_tier(r, up, radix))
        return TOPO_OK;
    return topo_i_set_issuef(issue, "gpus", p->gpus,
                             "needs more than 3 tiers of radix-%lld switches; raise switch_radix",
                             (long long)radix);
}

/* ---- dragonfly, torus, graphml ----------------------------------------------------------------- */

int64_t topo_i_dragonfly_links_per_pair(const topo_dragonfly_params_t *d) {
    if (d->g <= 1)
        return 0;
    return d->global_links_per_pair > 0 ? d->global_links_per_pair
                                        : checked_mul_sat_i64(d->a, d->h) / (d->g - 1);
}

static int check_dragonfly(const topo_params_t *p, topo_issue_t *issue) {
    const topo_dragonfly_params_t *d = &p->dragonfly;
    int rc;
    if ((rc = need_pos(issue, "p", d->p)) || (rc = need_pos(issue, "a", d->a)) ||
        (rc = need_pos(issue, "h", d->h)) || (rc = need_pos(issue, "g", d->g)) ||
        (rc = need_pos(issue, "ugal_candidates", d->ugal_candidates)))
        return rc;
    if (d->a > 4096 || d->g > 65536)
        return topo_i_set_issuef(issue, d->a > 4096 ? "a" : "g", d->a > 4096 ? d->a : d->g, "must be <= %s",
                                 d->a > 4096 ? "4096" : "65536");
    if (d->global_links_per_pair < 0)
        return topo_i_set_issuef(issue, "global_links_per_pair", d->global_links_per_pair,
                                 "must be >= 0 (0: as many as the global ports allow)");
    if (d->chassis_nics != 0 && d->chassis_nics != 1)
        return topo_i_set_issuef(issue, "chassis_nics", d->chassis_nics, "must be 0 or 1");
    if (d->chassis_nics && d->a % p->node.nics_per_node != 0)
        return topo_i_set_issuef(issue, "chassis_nics", d->chassis_nics,
                                 "needs a (%lld) to be a multiple of nics_per_node (%lld)", (long long)d->a,
                                 (long long)p->node.nics_per_node);
    if ((unsigned)d->arrangement > TOPO_ARRANGEMENT_CIRCULANT)
        return topo_i_set_issuef(issue, "arrangement", d->arrangement,
                                 "must be absolute, relative or circulant");
    if (!isfinite(d->ugal_threshold))
        return topo_i_set_issue(issue, "ugal_threshold", "nan", "must be finite");
    int64_t ports = checked_mul_sat_i64(d->a, d->h);
    if (d->g > 1 && d->global_links_per_pair == 0 && ports < d->g - 1)
        return topo_i_set_issuef(
            issue, "g", d->g, "cannot be wired: a*h = %lld global ports per group reach at most %lld groups",
            (long long)ports, (long long)(ports + 1));
    if (d->g > 1 && checked_mul_sat_i64(d->global_links_per_pair, d->g - 1) > ports)
        return topo_i_set_issuef(
            issue, "global_links_per_pair", d->global_links_per_pair,
            "needs (g-1)*%lld = %lld global ports per group; a*h = %lld", (long long)d->global_links_per_pair,
            (long long)checked_mul_sat_i64(d->global_links_per_pair, d->g - 1), (long long)ports);
    if (p->switch_radix > 0 && d->p + d->a - 1 + d->h > p->switch_radix)
        return topo_i_set_issuef(issue, "switch_radix", p->switch_radix,
                                 "is below the p+a-1+h = %lld router ports",
                                 (long long)(d->p + d->a - 1 + d->h));
    int64_t cables = checked_mul_sat_i64(checked_mul_sat_i64(d->g, d->a), d->a + d->p + d->h);
    if (cables > TOPO_MAX_CABLES)
        return topo_i_set_issuef(issue, "g", d->g, "gives about %lld cables; at most %lld", (long long)cables,
                                 (long long)TOPO_MAX_CABLES);
    return check_capacity(p, checked_mul_sat_i64(checked_mul_sat_i64(d->g, d->a), d->p), issue);
}

static int check_torus(const topo_params_t *p, topo_issue_t *issue) {
    const topo_torus_params_t *tp = &p->torus;
    if (tp->n_dims < 1 || tp->n_dims > TOPO_TORUS_MAX_DIMS)
        return topo_i_set_issuef(issue, "dims", tp->n_dims, "dimensions given; 1 to %d allowed",
                                 TOPO_TORUS_MAX_DIMS);
    int64_t nodes = 1;
    for (int64_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 2) {
            char f[32];
            snprintf(f, sizeof f, "dims[%lld]", (long long)i);
            return topo_i_set_issuef(issue, f, tp->dims[i], "must be >= 2");
        }
        nodes = checked_mul_sat_i64(nodes, tp->dims[i]);
    }
    int64_t hops = 0;
    for (int64_t i = 0; i < tp->n_dims; i++)
        hops += tp->dims[i] > (1 << 20) ? (1 << 19) : tp->dims[i] / 2; /* saturates: no overflow */
    if (hops > TOPO_MAX_ROUTE - 8)
        return topo_i_set_issuef(issue, "dims", hops, "links on the longest route; at most %d allowed",
                                 TOPO_MAX_ROUTE - 8);
    int64_t gpus = checked_mul_sat_i64(nodes, p->node.gpus_per_node);
    if (gpus > TOPO_MAX_GPUS)
        return topo_i_set_issuef(issue, "dims", nodes, "nodes exceed the limit of %lld GPUs",
                                 (long long)TOPO_MAX_GPUS);
    if (p->gpus != 0 && p->gpus != gpus)
        return topo_i_set_issuef(issue, "gpus", p->gpus, "must equal the torus size %lld (or be 0)",
                                 (long long)gpus);
    const int64_t router_ports = checked_add_sat_i64(2 * (int64_t)tp->n_dims, p->node.nics_per_node);
    if (p->switch_radix > 0 && router_ports > p->switch_radix)
        return topo_i_set_issuef(issue, "switch_radix", p->switch_radix, "is below the %lld router ports",
                                 (long long)router_ports);
    return TOPO_OK;
}

static int check_tree(const topo_params_t *p, topo_issue_t *issue) {
    topo_xgft_shape_t x;
    int rc = topo_i_tree_shape(p, &x, issue);
    if (rc)
        return rc;
    int64_t slots = 1;
    for (int l = 1; l <= x.h; l++)
        slots = checked_mul_sat_i64(slots, x.m[l]);
    if (slots > TOPO_MAX_GPUS)
        return topo_i_set_issuef(issue, p->kind == TOPO_KIND_IDEAL ? "gpus" : "endpoints", slots,
                                 "exceed the limit of %lld", (long long)TOPO_MAX_GPUS);
    /* switch-to-switch cables: level-l items (slots / M_l * W_l) times w_{l+1} p_{l+1} up-cables */
    int64_t cables = 0, M = 1, W = 1;
    for (int l = 1; l < x.h; l++) {
        M = checked_mul_sat_i64(M, x.m[l]);
        W = checked_mul_sat_i64(W, x.w[l]);
        cables = checked_mul_sat_i64(checked_mul_sat_i64(slots / M, W),
                                     checked_mul_sat_i64(x.w[l + 1], x.p[l + 1]));
        if (cables > TOPO_MAX_CABLES)
            return topo_i_set_issuef(issue, "endpoints", slots,
                                     "give about %lld cables at tier %d; at most %lld", (long long)cables, l,
                                     (long long)TOPO_MAX_CABLES);
    }
    return check_capacity(p, slots, issue);
}

int topo_params_check(const topo_params_t *p, topo_issue_t *issue) {
    int rc = check_common(p, issue);
    if (rc)
        return rc;
    switch (p->kind) {
    case TOPO_KIND_IDEAL:
    case TOPO_KIND_FAT_TREE:
        return check_tree(p, issue);
    case TOPO_KIND_RAIL_OPTIMIZED: {
        topo_rail_shape_t r;
        return topo_i_rail_shape(p, &r, issue);
    }
    case TOPO_KIND_DRAGONFLY:
        return check_dragonfly(p, issue);
    case TOPO_KIND_TORUS:
        return check_torus(p, issue);
    case TOPO_KIND_GRAPHML:
        if (!p->graphml_path || !p->graphml_path[0])
            return topo_i_set_issue(issue, "file", "(none)", "must name a GraphML file");
        return TOPO_OK;
    }
    return TOPO_EINVAL;
}
