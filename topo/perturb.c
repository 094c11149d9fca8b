/* perturb.c - slow and failed links: selecting links by name, class or seeded fraction, scaling their
 * bandwidth or failing them, and checking that every GPU pair still has a route afterwards.
 *
 * Bandwidth factors are applied to the link table itself (l_bw), so everything that reads it (the
 * engine's capacities, summaries, GraphML export) sees the slowed links; l_factor keeps each factor
 * for reports. Failed links stay in the graph with their capacity; l_failed marks them, routing skips
 * them (route.c, route_tree.c, dragonfly.c, route_table.c) and nothing is routed over them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "topo_internal.h"

static const char *const CLASS_NAMES[TOPO_LINK_CLASS_COUNT] = {
    "nvlink", "pcie", "network", "access", "leaf-spine", "spine-core", "local", "global"};

const char *topo_link_class_name(topo_link_class_t c) {
    return (unsigned)c < TOPO_LINK_CLASS_COUNT ? CLASS_NAMES[c] : "unknown";
}

int topo_link_class_parse(const char *name, topo_link_class_t *out) {
    for (int c = 0; c < TOPO_LINK_CLASS_COUNT; c++)
        if (strcmp(name, CLASS_NAMES[c]) == 0) {
            *out = (topo_link_class_t)c;
            return TOPO_OK;
        }
    return TOPO_EINVAL;
}

static int is_endpoint(const topo_t *t, int32_t v) {
    return t->v_kind[v] == TOPO_VERTEX_GPU || t->v_kind[v] == TOPO_VERTEX_NIC;
}

static int switch_tiers(const topo_t *t, int64_t l, int lo, int hi) {
    const int32_t a = t->l_from[l], b = t->l_to[l];
    if (t->v_kind[a] != TOPO_VERTEX_SWITCH || t->v_kind[b] != TOPO_VERTEX_SWITCH)
        return 0;
    const int32_t ta = t->v_tier[a], tb = t->v_tier[b];
    return (ta == lo && tb == hi) || (ta == hi && tb == lo);
}

int topo_link_in_class(const topo_t *t, int64_t l, topo_link_class_t c) {
    if (l < 0 || l >= t->n_links)
        return 0;
    const int kind = t->l_kind[l];
    const int dfly = t->kind == TOPO_KIND_DRAGONFLY;
    const int tree =
        t->kind == TOPO_KIND_FAT_TREE || t->kind == TOPO_KIND_RAIL_OPTIMIZED || t->kind == TOPO_KIND_IDEAL;
    switch (c) {
    case TOPO_CLASS_NVLINK:
        return kind == TOPO_LINK_NVLINK;
    case TOPO_CLASS_PCIE:
        return kind == TOPO_LINK_PCIE;
    case TOPO_CLASS_NETWORK:
        return kind == TOPO_LINK_NETWORK;
    case TOPO_CLASS_ACCESS:
        /* an endpoint and a switch: a direct torus's GPU-to-GPU links are not access links */
        return kind == TOPO_LINK_NETWORK && is_endpoint(t, t->l_from[l]) != is_endpoint(t, t->l_to[l]);
    case TOPO_CLASS_LEAF_SPINE:
        return tree && kind == TOPO_LINK_NETWORK && switch_tiers(t, l, 1, 2);
    case TOPO_CLASS_SPINE_CORE:
        return tree && kind == TOPO_LINK_NETWORK && switch_tiers(t, l, 2, 3);
    case TOPO_CLASS_LOCAL:
    case TOPO_CLASS_GLOBAL:
        if (!dfly || kind != TOPO_LINK_NETWORK || !switch_tiers(t, l, 1, 1))
            return 0;
        return (t->v_group[t->l_from[l]] == t->v_group[t->l_to[l]]) == (c == TOPO_CLASS_LOCAL);
    }
    return 0;
}

/* ---- selection ---------------------------------------------------------------------------------- */

/* src without spaces into dst (size bytes); 0 if it did not fit. */
static int squeeze(const char *src, size_t len, char *dst, size_t size) {
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == ' ' || src[i] == '\t')
            continue;
        if (k + 1 >= size)
            return 0;
        dst[k++] = src[i];
    }
    dst[k] = '\0';
    return 1;
}

static int64_t select_name(const topo_t *t, const char *name, uint8_t *mask) {
    char fwd[160], rev[160], buf[160];
    const char *both = strstr(name, "<->");
    const char *arrow = both ? both : strstr(name, "->");
    if (!arrow || arrow == name)
        return 0;
    const size_t head = (size_t)(arrow - name), skip = both ? 3 : 2;
    char a[64], b[64];
    if (!squeeze(name, head, a, sizeof a) || !squeeze(arrow + skip, strlen(arrow + skip), b, sizeof b) ||
        !a[0] || !b[0])
        return 0;
    snprintf(fwd, sizeof fwd, "%s->%s", a, b);
    snprintf(rev, sizeof rev, "%s->%s", b, a);
    int64_t hits = 0;
    for (int64_t l = 0; l < t->n_links; l++) {
        topo_link_name(t, l, buf, sizeof buf);
        if (strcmp(buf, fwd) == 0 || (both && strcmp(buf, rev) == 0)) {
            mask[l] = 1;
            hits++;
        }
    }
    return hits;
}

static int select_names(const topo_t *t, const char *names, uint8_t *mask, topo_issue_t *issue) {
    const char *p = names;
    int any = 0;
    while (*p) {
        const char *end = strchr(p, ';');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        char one[160];
        if (len >= sizeof one)
            return topo_i_set_issue(issue, "links", "", "a link name is longer than %d characters",
                                    (int)sizeof one - 1);
        memcpy(one, p, len);
        one[len] = '\0';
        char squeezed[160];
        squeeze(one, len, squeezed, sizeof squeezed);
        if (squeezed[0]) {
            any = 1;
            if (select_name(t, one, mask) == 0) {
                /* trim the name as given for the message */
                size_t s = 0, e = len;
                while (s < e && (one[s] == ' ' || one[s] == '\t'))
                    s++;
                while (e > s && (one[e - 1] == ' ' || one[e - 1] == '\t'))
                    e--;
                one[e] = '\0';
                return topo_i_set_issue(issue, "links", one + s, "names no link of this topology");
            }
        }
        p = end ? end + 1 : p + len;
    }
    if (!any)
        return topo_i_set_issue(issue, "links", names,
                                "names no link; allowed: FROM->TO names separated by ';'");
    return TOPO_OK;
}

static int64_t class_links(const topo_t *t, topo_link_class_t c, uint8_t *mask) {
    int64_t hits = 0;
    for (int64_t l = 0; l < t->n_links; l++)
        if (topo_link_in_class(t, l, c)) {
            if (mask)
                mask[l] = 1;
            hits++;
        }
    return hits;
}

static int no_class(const topo_t *t, topo_link_class_t c, topo_issue_t *issue) {
    char have[200] = "";
    size_t k = 0;
    for (int i = 0; i < TOPO_LINK_CLASS_COUNT; i++)
        if (class_links(t, (topo_link_class_t)i, NULL) > 0)
            k += (size_t)snprintf(have + k, k < sizeof have ? sizeof have - k : 0, "%s%s", k ? ", " : "",
                                  CLASS_NAMES[i]);
    return topo_i_set_issue(issue, "class", topo_link_class_name(c),
                            "selects no link of this topology (%s); allowed: %s", topo_kind_name(t->kind),
                            have[0] ? have : "none");
}

typedef struct ranked {
    uint64_t hash;
    int64_t cable;
} ranked_t;

static int by_hash(const void *a, const void *b) {
    const ranked_t *x = a, *y = b;
    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    return x->cable < y->cable ? -1 : x->cable > y->cable;
}

#define FRACTION_SALT 0x6c696e6b73ull /* "links": keeps these draws apart from routing's hashes */

static int select_fraction(const topo_t *t, topo_link_class_t c, double f, uint64_t seed, int absent_ok,
                           uint8_t *mask, topo_issue_t *issue) {
    int64_t max_cable = -1;
    for (int64_t l = 0; l < t->n_links; l++)
        if (t->l_cable[l] > max_cable)
            max_cable = t->l_cable[l];
    uint8_t *in = alloc_calloc((size_t)(max_cable + 2), 1);
    ranked_t *r = alloc_malloc((size_t)(max_cable + 2) * sizeof *r);
    if (!in || !r) {
        free(in);
        free(r);
        return TOPO_ENOMEM;
    }
    int64_t n = 0;
    for (int64_t l = 0; l < t->n_links; l++)
        if (topo_link_in_class(t, l, c) && !in[t->l_cable[l]]) {
            in[t->l_cable[l]] = 1;
            r[n].cable = t->l_cable[l];
            r[n].hash = topo_i_hash(seed, (uint64_t)t->l_cable[l], FRACTION_SALT, 0);
            n++;
        }
    int rc = TOPO_OK;
    if (n == 0) {
        rc = absent_ok ? TOPO_OK : no_class(t, c, issue);
    } else {
        qsort(r, (size_t)n, sizeof *r, by_hash);
        int64_t take = (int64_t)ceil(f * (double)n - 1e-9);
        if (take < 1)
            take = 1;
        memset(in, 0, (size_t)(max_cable + 2));
        for (int64_t i = 0; i < take && i < n; i++)
            in[r[i].cable] = 1;
        for (int64_t l = 0; l < t->n_links; l++)
            if (in[t->l_cable[l]] && topo_link_in_class(t, l, c))
                mask[l] = 1;
    }
    free(in);
    free(r);
    return rc;
}

/* ---- applying ----------------------------------------------------------------------------------- */

static int check_change(const topo_link_change_t *c, topo_issue_t *issue) {
    char v[64];
    if (!c->fail && !(c->bandwidth_factor > 0.0 && c->bandwidth_factor <= 1.0)) {
        snprintf(v, sizeof v, "%g", c->bandwidth_factor);
        return topo_i_set_issue(issue, "bandwidth", v,
                                "is out of range; allowed: a factor in (0, 1] (0: fail the link instead)");
    }
    if (!c->names && c->fraction != 0.0 && !(c->fraction > 0.0 && c->fraction <= 1.0)) {
        snprintf(v, sizeof v, "%g", c->fraction);
        return topo_i_set_issue(issue, "fraction", v, "is out of range; allowed: 0 < fraction <= 1");
    }
    if ((unsigned)c->link_class >= TOPO_LINK_CLASS_COUNT)
        return topo_i_set_issuef(issue, "class", (int64_t)c->link_class, "is not a link class");
    return TOPO_OK;
}

static int select_change(const topo_t *t, const topo_link_change_t *c, uint64_t seed, uint8_t *mask,
                         topo_issue_t *issue) {
    if (c->names)
        return select_names(t, c->names, mask, issue);
    const topo_link_class_t cls = c->has_class ? c->link_class : TOPO_CLASS_NETWORK;
    if (c->fraction > 0.0)
        return select_fraction(t, cls, c->fraction, seed, c->absent_ok, mask, issue);
    return class_links(t, cls, mask) > 0 || c->absent_ok ? TOPO_OK : no_class(t, cls, issue);
}

/* ---- the reachability check ---------------------------------------------------------------------- */

static int unreachable_pair(const topo_t *t, int64_t a, int64_t b, topo_issue_t *issue) {
    if (issue) {
        snprintf(issue->field, sizeof issue->field, "links");
        snprintf(issue->value, sizeof issue->value, "failed");
        snprintf(issue->rule, sizeof issue->rule, "leave GPU %lld without a route to GPU %lld%s",
                 (long long)a, (long long)b,
                 t->kind == TOPO_KIND_TORUS ? " (dimension-order routing does not detour)" : "");
    }
    return TOPO_EUNREACHABLE;
}

/* The route a -> b: TOPO_OK, TOPO_EUNREACHABLE (issue filled) or another error. */
static int pair(const topo_t *t, int64_t a, int64_t b, topo_issue_t *issue) {
    if (a == b)
        return TOPO_OK;
    topo_link_id_t buf[TOPO_MAX_ROUTE];
    const topo_flow_t f = {.src_gpu = a,
                           .dst_gpu = b,
                           .key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b,
                           .routing = TOPO_ROUTING_DEFAULT,
                           .link_load = NULL};
    const int n = topo_route(t, &f, buf, TOPO_MAX_ROUTE);
    if (n == TOPO_EUNREACHABLE)
        return unreachable_pair(t, a, b, issue);
    return n < 0 ? n : TOPO_OK;
}

/* Whether the kind's network route between endpoints se and de avoids every failed link. */
static int network_ok(const topo_t *t, int64_t se, int64_t de) {
    topo_link_id_t buf[TOPO_MAX_ROUTE];
    int n = 0, rc;
    const topo_flow_t f = {.key = ((uint64_t)se << 32) | (uint64_t)de, .routing = t->routing};
    if (t->dfly)
        rc = topo_i_route_dragonfly(t, se, de, &f, t->routing, buf, &n, TOPO_MAX_ROUTE);
    else if (t->torus)
        rc = topo_i_route_torus(t, se, de, buf, &n, TOPO_MAX_ROUTE);
    else
        rc = topo_i_route_xgft(t, se, de,
                               t->routing == TOPO_ROUTING_ECMP_SPREAD ? TOPO_ROUTING_ECMP_HASH : t->routing,
                               f.key, buf, &n, TOPO_MAX_ROUTE);
    return rc == TOPO_OK && !topo_i_path_failed(t, buf, n);
}

/* Endpoints whose network routes start (end) alike: a tree's leaf, a dragonfly's router, a torus node. */
static int64_t endpoint_class(const topo_t *t, int64_t e) {
    if (t->xgft)
        return t->xgft->endpoint_slot[e] / t->xgft->s.m[1];
    if (t->dfly)
        return topo_i_dfly_router(t->dfly, e);
    return e / t->nodes.M;
}

static int64_t endpoint_gpu(const topo_t *t, int64_t e) {
    const topo_nodes_t *nd = &t->nodes;
    return e / nd->M * nd->G + e % nd->M * (nd->G / nd->M);
}

/* Middle parts between classes cx and cy failed at their representatives: find a GPU pair whose route
 * uses them and fails (there may be none: no pair of GPUs uses that pair of classes). */
static int confirm(const topo_t *t, int64_t cx, int64_t cy, topo_issue_t *issue) {
    for (int64_t x = 0; x < t->n_endpoints; x++) {
        if (endpoint_class(t, x) != cx)
            continue;
        for (int64_t y = 0; y < t->n_endpoints; y++) {
            if (endpoint_class(t, y) != cy || x / t->nodes.M == y / t->nodes.M)
                continue;
            const int rc = pair(t, endpoint_gpu(t, x), endpoint_gpu(t, y), issue);
            if (rc)
                return rc;
        }
    }
    return TOPO_OK;
}

/* Every ordered GPU pair has a route. GraphML: every pair. Built kinds, where a route between nodes is
 * the source's node-local hops (to its NIC, or with PXN to the proxy GPU's NIC), the kind's network
 * route between two endpoints, and the destination's NIC hop: (1) every pair inside each node; (2)
 * every GPU to a GPU of the next node on each NIC index, and from a GPU of the next node to every GPU,
 * which covers every GPU's node-local hops and every endpoint's own links; (3) the network route between
 * representatives of every pair of endpoint classes (same NIC index under PXN), whose middle part
 * depends on the classes only; a failure there is confirmed on a GPU pair that uses it. */
static int check_routes(const topo_t *t, topo_issue_t *issue) {
    int rc = TOPO_OK;
    if (t->table || t->n_nodes < 2) {
        for (int64_t a = 0; a < t->n_gpus && !rc; a++)
            for (int64_t b = 0; b < t->n_gpus && !rc; b++)
                rc = pair(t, a, b, issue);
        return rc;
    }
    const topo_nodes_t *nd = &t->nodes;
    const int64_t G = nd->G, M = nd->M, nodes = t->n_nodes;
    for (int64_t n = 0; n < nodes && !rc; n++)
        for (int64_t i = 0; i < G && !rc; i++)
            for (int64_t j = 0; j < G && !rc; j++)
                rc = pair(t, n * G + i, n * G + j, issue);
    for (int64_t a = 0; a < t->n_gpus && !rc; a++) {
        const int64_t next = (a / G + 1) % nodes;
        for (int64_t m = 0; m < M && !rc; m++)
            rc = pair(t, a, next * G + m * (G / M), issue);
        if (!rc)
            rc = pair(t, next * G + a % G, a, issue);
    }
    if (rc)
        return rc;
    int64_t classes = 0;
    for (int64_t e = 0; e < t->n_endpoints; e++)
        if (endpoint_class(t, e) + 1 > classes)
            classes = endpoint_class(t, e) + 1;
    const int pxn = t->pxn && G > 1;
    const int64_t per = pxn ? M : 1; /* representatives per class: one per NIC index under PXN */
    int64_t *rep = alloc_malloc((size_t)(classes * per + 1) * sizeof *rep);
    if (!rep)
        return TOPO_ENOMEM;
    for (int64_t i = 0; i < classes * per; i++)
        rep[i] = -1;
    for (int64_t e = 0; e < t->n_endpoints; e++) {
        int64_t *r = &rep[endpoint_class(t, e) * per + (pxn ? e % M : 0)];
        if (*r < 0)
            *r = e;
    }
    for (int64_t cx = 0; cx < classes && !rc; cx++)
        for (int64_t cy = 0; cy < classes && !rc; cy++)
            for (int64_t m = 0; m < per && !rc; m++) {
                const int64_t x = rep[cx * per + m], y = rep[cy * per + m];
                if (x >= 0 && y >= 0 && x != y && !network_ok(t, x, y))
                    rc = confirm(t, cx, cy, issue);
            }
    free(rep);
    return rc;
}

static int links_change(topo_t *t, const topo_link_change_t *changes, int n, uint64_t seed, int *bad,
                        topo_issue_t *issue) {
    if (bad)
        *bad = -1;
    if (n <= 0)
        return TOPO_OK;
    const size_t L = (size_t)(t->n_links > 0 ? t->n_links : 1);
    uint8_t *mask = alloc_malloc(L);
    if (!t->l_factor) {
        t->l_factor = alloc_malloc(L * sizeof *t->l_factor);
        for (int64_t l = 0; t->l_factor && l < t->n_links; l++)
            t->l_factor[l] = 1.0;
    }
    if (!t->l_failed)
        t->l_failed = alloc_calloc(L, 1);
    if (!mask || !t->l_factor || !t->l_failed) {
        free(mask);
        return TOPO_ENOMEM;
    }
    int rc = TOPO_OK;
    for (int i = 0; i < n && rc == TOPO_OK; i++) {
        memset(mask, 0, L);
        rc = check_change(&changes[i], issue);
        if (rc == TOPO_OK)
            rc = select_change(t, &changes[i], seed, mask, issue);
        if (rc) {
            if (bad)
                *bad = i;
            break;
        }
        for (int64_t l = 0; l < t->n_links; l++) {
            if (!mask[l])
                continue;
            if (changes[i].fail) {
                t->n_failed += !t->l_failed[l];
                t->l_failed[l] = 1;
            } else {
                t->l_factor[l] *= changes[i].bandwidth_factor;
                t->l_bw[l] *= changes[i].bandwidth_factor;
            }
        }
    }
    free(mask);
    if (rc || t->n_failed == 0)
        return rc;
    if (t->dfly)
        t->max_route_links = 2 + 2 + 2 + 10; /* a Valiant detour whose local hops detour too */
    if (t->table) {
        free(t->table->next);
        free(t->table);
        t->table = NULL;
        if ((rc = topo_i_build_table(t, issue)))
            return rc;
    }
    return check_routes(t, issue);
}

double topo_link_bandwidth_factor(const topo_t *t, int64_t l) {
    return l >= 0 && l < t->n_links && t->l_factor ? t->l_factor[l] : 1.0;
}

int topo_link_failed(const topo_t *t, int64_t l) {
    return l >= 0 && l < t->n_links && t->l_failed ? t->l_failed[l] : 0;
}

int64_t topo_failed_link_count(const topo_t *t) {
    return t->n_failed;
}

int64_t topo_slowed_link_count(const topo_t *t) {
    int64_t n = 0;
    for (int64_t l = 0; t->l_factor && l < t->n_links; l++)
        n += t->l_factor[l] != 1.0;
    return n;
}

int topo_links_change(topo_t *t, const topo_link_change_t *changes, int n, uint64_t seed, int *bad,
                      topo_issue_t *issue) {
    if (issue)
        memset(issue, 0, sizeof *issue);
    return topo_i_issue_fallback(issue, t->name, links_change(t, changes, n, seed, bad, issue));
}
