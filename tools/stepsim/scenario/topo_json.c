/* topo_json.c - topology specifications (preset, shortcut, kind, file or object) parsed into typed
 * values (topo_spec_t), and those values to topo_params_t for a job.
 *
 * One table lists every object key with the kinds that take it and where it goes, so that unknown
 * keys, did-you-mean and the allowed lists come from the same place. Values are only type-checked
 * when parsed; their ranges are topo_params_check's, whose issue names the field, so every message
 * carries the JSON path of the offending key.
 */
#include "topo_json.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <igraph.h>

#include "alloc.h"
#include "input_check.h"
#include "readfile.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define KIND(k) (1u << (k))
#define BUILT                                                                                                \
    (KIND(TOPO_KIND_IDEAL) | KIND(TOPO_KIND_FAT_TREE) | KIND(TOPO_KIND_RAIL_OPTIMIZED) |                     \
     KIND(TOPO_KIND_DRAGONFLY) | KIND(TOPO_KIND_TORUS))
#define ANY (BUILT | KIND(TOPO_KIND_GRAPHML))
#define FT KIND(TOPO_KIND_FAT_TREE)
#define RAIL KIND(TOPO_KIND_RAIL_OPTIMIZED)
#define DF KIND(TOPO_KIND_DRAGONFLY)

typedef enum { K_INT, K_NUM, K_SPECIAL } key_type_t;

typedef struct {
    const char *name;
    unsigned kinds;
    key_type_t type;
    size_t offset; /* into topo_params_t (K_INT: int64_t, K_NUM: double) */
} topo_key_t;

#define I(n, k, f)                                                                                           \
    { n, k, K_INT, offsetof(topo_params_t, f) }
#define N(n, k, f)                                                                                           \
    { n, k, K_NUM, offsetof(topo_params_t, f) }
#define S(n, k)                                                                                              \
    { n, k, K_SPECIAL, 0 }

static const topo_key_t KEYS[] = {
    S("kind", ANY),
    S("preset", BUILT),
    S("name", ANY),
    S("node", BUILT),
    S("routing", ANY),
    S("file", KIND(TOPO_KIND_GRAPHML)),
    S("scaleup", BUILT),
    S("pxn", BUILT),
    S("seed", ANY),
    S("network", ANY),
    S("nvlink", BUILT),
    S("pcie", BUILT),
    S("nvlink_generation", BUILT),
    I("gpus", ANY, gpus),
    I("gpus_per_node", BUILT, node.gpus_per_node),
    I("nics_per_node", BUILT, node.nics_per_node),
    N("nvlink_bandwidth_bytes_per_s", BUILT, node.nvlink_bandwidth_bytes_per_s),
    N("nvlink_latency_s", BUILT, node.nvlink_latency_s),
    N("pcie_bandwidth_bytes_per_s", BUILT, node.pcie_bandwidth_bytes_per_s),
    N("pcie_latency_s", BUILT, node.pcie_latency_s),
    N("link_bandwidth_bytes_per_s", BUILT, link_bandwidth_bytes_per_s),
    N("link_latency_s", BUILT, link_latency_s),
    I("switch_radix", BUILT, switch_radix),
    I("tiers", FT, fat_tree.tiers),
    I("k", FT, fat_tree.k),
    I("endpoints_per_leaf", FT, fat_tree.endpoints_per_leaf),
    I("leaves", FT, fat_tree.leaves),
    I("spines", FT, fat_tree.spines),
    I("links_per_leaf_spine", FT, fat_tree.links_per_leaf_spine),
    I("pods", FT, fat_tree.pods),
    I("leaves_per_pod", FT, fat_tree.leaves_per_pod),
    I("spines_per_pod", FT, fat_tree.spines_per_pod),
    I("cores_per_spine", FT, fat_tree.cores_per_spine),
    I("links_per_spine_core", FT, fat_tree.links_per_spine_core),
    I("tiers", RAIL, rail.tiers),
    I("nodes_per_su", RAIL, rail.nodes_per_su),
    I("leaf_up", RAIL, rail.leaf_up),
    I("p", DF, dragonfly.p),
    I("a", DF, dragonfly.a),
    I("h", DF, dragonfly.h),
    I("g", DF, dragonfly.g),
    I("global_links_per_pair", DF, dragonfly.global_links_per_pair),
    S("arrangement", DF),
    N("ugal_threshold", DF, dragonfly.ugal_threshold),
    I("ugal_candidates", DF, dragonfly.ugal_candidates),
    I("chassis_nics", DF, dragonfly.chassis_nics),
    S("dims", KIND(TOPO_KIND_TORUS)),
};

/* topo_spec_t.given has a bit per key */
_Static_assert(COUNT(KEYS) <= 64, "topo_spec_t.given holds 64 keys");

/* Where messages point: whole-value messages use `where`, key messages `prefix` + key. */
typedef struct {
    const char *where;
    char prefix[320];
    cli_diag_t *d;
    char *check_prefix; /* where topo_params_check's issue points: the innermost file's prefix */
} ctx_t;

static const char *const SHORTCUTS[] = {"fat-tree", "fat-tree-2:1", "rail", "dragonfly", "dragonfly-ugal"};

static int key_index(const char *name, topo_kind_t kind) {
    for (size_t i = 0; i < COUNT(KEYS); i++)
        if (strcmp(KEYS[i].name, name) == 0 && (KEYS[i].kinds & KIND(kind)))
            return (int)i;
    return -1;
}

static int unknown_key(const ctx_t *c, const char *key, topo_kind_t kind) {
    const char *names[COUNT(KEYS)];
    char allowed[700] = "";
    size_t n = 0, used = 0;
    for (size_t i = 0; i < COUNT(KEYS); i++) {
        if (!(KEYS[i].kinds & KIND(kind)))
            continue;
        names[n++] = KEYS[i].name;
        used += (size_t)snprintf(allowed + used, used < sizeof allowed ? sizeof allowed - used : 0, "%s%s",
                                 used ? ", " : "", KEYS[i].name);
    }
    const char *s = cli_suggest(key, names, n);
    return cli_fail(c->d, CLI_EUSAGE, "%s%.60s: unknown key for %s%s%s%s; allowed: %s", c->prefix, key,
                    topo_kind_name(kind), s ? " (did you mean \"" : "", s ? s : "", s ? "\"?)" : "", allowed);
}

static void describe(const cJSON *v, char *buf, size_t size) {
    if (cJSON_IsString(v))
        snprintf(buf, size, "\"%.60s\" (a string)", v->valuestring);
    else if (cJSON_IsNumber(v))
        snprintf(buf, size, "%.17g", v->valuedouble);
    else if (cJSON_IsBool(v))
        snprintf(buf, size, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsArray(v))
        snprintf(buf, size, "an array");
    else if (cJSON_IsObject(v))
        snprintf(buf, size, "an object");
    else
        snprintf(buf, size, "null");
}

static int get_int(const ctx_t *c, const char *key, const cJSON *v, int64_t *out) {
    char what[96];
    describe(v, what, sizeof what);
    if (!cJSON_IsNumber(v))
        return cli_fail(c->d, CLI_EUSAGE, "%s%s: %s is not a number; allowed: an integer", c->prefix, key,
                        what);
    double x = v->valuedouble;
    if (!isfinite(x) || x != floor(x) || fabs(x) > 9e15)
        return cli_fail(c->d, CLI_EUSAGE, "%s%s: %s is not an integer; allowed: an integer", c->prefix, key,
                        what);
    *out = (int64_t)x;
    return CLI_OK;
}

static int get_num(const ctx_t *c, const char *key, const cJSON *v, double *out) {
    char what[96];
    describe(v, what, sizeof what);
    if (!cJSON_IsNumber(v))
        return cli_fail(c->d, CLI_EUSAGE, "%s%s: %s is not a number", c->prefix, key, what);
    *out = v->valuedouble;
    return CLI_OK;
}

static int get_str(const ctx_t *c, const char *key, const cJSON *v, const char **out) {
    char what[96];
    describe(v, what, sizeof what);
    if (!cJSON_IsString(v))
        return cli_fail(c->d, CLI_EUSAGE, "%s%s: %s is not a string", c->prefix, key, what);
    *out = v->valuestring;
    return CLI_OK;
}

static int set_dims(const ctx_t *c, const cJSON *v, topo_params_t *p) {
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 || cJSON_GetArraySize(v) > TOPO_TORUS_MAX_DIMS) {
        char what[96];
        describe(v, what, sizeof what);
        return cli_fail(c->d, CLI_EUSAGE, "%sdims: %s; allowed: an array of 1 to %d integers >= 2", c->prefix,
                        cJSON_IsArray(v) ? "wrong length" : what, TOPO_TORUS_MAX_DIMS);
    }
    p->torus.n_dims = cJSON_GetArraySize(v);
    int i = 0, rc;
    const cJSON *x;
    cJSON_ArrayForEach(x, v) {
        char key[24];
        snprintf(key, sizeof key, "dims[%d]", i);
        if ((rc = get_int(c, key, x, &p->torus.dims[i++])))
            return rc;
    }
    return CLI_OK;
}

#define NAMED(parse, name, out) ((parse)(name, out) == TOPO_OK)

/* "network", "nvlink" or "pcie": a technology of that link kind (topo_tech_parse). "network" also takes
 * the first round's family names: "infiniband" (InfiniBand at the links' rate) and "slingshot"
 * (Slingshot-11), which keep the links' bandwidth and latency. */
static int set_tech(const ctx_t *c, const char *key, const char *s, topo_spec_t *spec) {
    const topo_link_kind_t kind = key[0] == 'n' && key[1] == 'e' ? TOPO_LINK_NETWORK
                                  : strcmp(key, "nvlink") == 0   ? TOPO_LINK_NVLINK
                                                                 : TOPO_LINK_PCIE;
    const char *what = kind == TOPO_LINK_NETWORK ? "network" : kind == TOPO_LINK_NVLINK ? "NVLink" : "PCIe";
    topo_tech_t tech = TOPO_TECH_AUTO;
    if (kind == TOPO_LINK_NETWORK && (strcmp(s, "infiniband") == 0 || strcmp(s, "slingshot") == 0)) {
        spec->keys.network = s[0] == 'i' ? TOPO_TECH_AUTO : TOPO_TECH_SLINGSHOT11;
        spec->network_family = 1;
        return CLI_OK;
    }
    const topo_tech_info_t *info = topo_tech_parse(s, &tech) == TOPO_OK ? topo_tech_info(tech) : NULL;
    if (info && info->link_kind == (int)kind) {
        if (kind == TOPO_LINK_NETWORK)
            spec->keys.network = tech;
        else if (kind == TOPO_LINK_NVLINK)
            spec->keys.node.nvlink_tech = tech;
        else
            spec->keys.node.pcie_tech = tech;
        return CLI_OK;
    }
    const char *names[TOPO_TECH_COUNT + 2];
    char allowed[200] = "";
    size_t n = 0, used = 0;
    for (int i = 1; i < TOPO_TECH_COUNT; i++) {
        const topo_tech_info_t *ti = topo_tech_info((topo_tech_t)i);
        if (ti->link_kind != (int)kind)
            continue;
        names[n++] = ti->name;
        used += (size_t)snprintf(allowed + used, used < sizeof allowed ? sizeof allowed - used : 0, "%s%s",
                                 used ? ", " : "", ti->name);
    }
    if (kind == TOPO_LINK_NETWORK) {
        names[n++] = "infiniband";
        names[n++] = "slingshot";
    }
    const char *sg = info ? NULL : cli_suggest(s, names, n);
    char is[80] = "";
    if (info)
        snprintf(is, sizeof is, " (it is a%s %s technology)", info->link_kind == TOPO_LINK_NETWORK ? "" : "n",
                 info->link_kind == TOPO_LINK_NETWORK  ? "network"
                 : info->link_kind == TOPO_LINK_NVLINK ? "NVLink"
                                                       : "PCIe");
    return cli_fail(c->d, CLI_EUSAGE, "%s%s: \"%.60s\" is not a%s %s technology%s%s%s%s; allowed: %s%s",
                    c->prefix, key, s,
                    kind == TOPO_LINK_NETWORK  ? ""
                    : kind == TOPO_LINK_NVLINK ? "n"
                                               : "",
                    what, is, sg ? " (did you mean \"" : "", sg ? sg : "", sg ? "\"?)" : "", allowed,
                    kind == TOPO_LINK_NETWORK ? ", or infiniband, slingshot (the family at the links' rate)"
                                              : "");
}

/* A key that is not a plain number: into spec->keys (or spec->file). */
static int set_special(const ctx_t *c, const char *key, const cJSON *v, topo_spec_t *spec) {
    topo_params_t *p = &spec->keys;
    const char *s = "";
    int64_t x = 0;
    int rc;
    if (strcmp(key, "dims") == 0)
        return set_dims(c, v, p);
    if (strcmp(key, "network") == 0 || strcmp(key, "nvlink") == 0 || strcmp(key, "pcie") == 0)
        return (rc = get_str(c, key, v, &s)) ? rc : set_tech(c, key, s, spec);
    if (strcmp(key, "nvlink_generation") == 0) {
        if ((rc = get_int(c, key, v, &x)))
            return rc;
        if (x != 0 && (x < 3 || x > 5))
            return cli_fail(
                c->d, CLI_EUSAGE,
                "%snvlink_generation: %lld is not an NVLink generation; allowed: 3 (A100), 4 (H100), "
                "5 (B200), 0 (from nvlink_bandwidth_bytes_per_s)",
                c->prefix, (long long)x);
        p->node.nvlink_tech = x ? (topo_tech_t)(TOPO_TECH_NVLINK3 + (x - 3)) : TOPO_TECH_AUTO;
        return CLI_OK;
    }
    if (strcmp(key, "pxn") == 0 || strcmp(key, "seed") == 0) {
        if ((rc = get_int(c, key, v, &x)))
            return rc;
        if (key[0] == 'p')
            p->pxn = (int)(x < 0 || x > 1 ? 2 : x); /* topo_params_check names a bad value */
        else if (x < 0)
            return cli_fail(c->d, CLI_EUSAGE, "%sseed: %lld is negative; allowed: an integer >= 0", c->prefix,
                            (long long)x);
        else
            p->seed = (uint64_t)x;
        return CLI_OK;
    }
    if ((rc = get_str(c, key, v, &s)))
        return rc;
    if (strcmp(key, "name") == 0) {
        snprintf(p->name, sizeof p->name, "%s", s);
    } else if (strcmp(key, "file") == 0) {
        snprintf(spec->file, sizeof spec->file, "%s", s);
    } else if (strcmp(key, "routing") == 0 && !NAMED(topo_routing_parse, s, &p->routing)) {
        return cli_fail(
            c->d, CLI_EUSAGE,
            "%srouting: \"%.60s\" is not a routing; allowed: dmodk, ecmp-hash, ecmp-spread (trees), "
            "minimal, valiant, ugal (dragonfly), dor (torus), shortest (graphml)",
            c->prefix, s);
    } else if (strcmp(key, "arrangement") == 0 &&
               !NAMED(topo_arrangement_parse, s, &p->dragonfly.arrangement)) {
        return cli_fail(
            c->d, CLI_EUSAGE,
            "%sarrangement: \"%.60s\" is not an arrangement; allowed: absolute, relative, circulant",
            c->prefix, s);
    } else if (strcmp(key, "scaleup") == 0 && !NAMED(topo_scaleup_parse, s, &p->node.scaleup)) {
        return cli_fail(c->d, CLI_EUSAGE,
                        "%sscaleup: \"%.60s\" is not a scale-up kind; allowed: switch, mesh", c->prefix, s);
    }
    return CLI_OK;
}

/* The kind's defaults; "ideal" from the analytic model's system when there is one: GPUs per node =
 * nvlink_size, its NVLink and InfiniBand bandwidths, half its per-hop latencies per link. */
static void kind_defaults(topo_kind_t kind, const model_system_t *sys, topo_params_t *p) {
    topo_params_init(p, kind);
    if (kind != TOPO_KIND_IDEAL || !sys)
        return;
    int64_t g = sys->nvlink_size > 0 ? sys->nvlink_size : 1;
    p->node.gpus_per_node = p->node.nics_per_node = g;
    p->node.nvlink_bandwidth_bytes_per_s = sys->nvlink_gb_per_s * 1e9;
    p->node.nvlink_latency_s = sys->nvlink_latency_s / 2;
    p->link_bandwidth_bytes_per_s =
        sys->ib_gb_per_s * 1e9 * (double)(sys->nic_factor > 0 ? sys->nic_factor : 1);
    p->link_latency_s = sys->ib_latency_s / 2;
}

static int node_preset(const ctx_t *c, const cJSON *v, topo_spec_t *spec) {
    const char *s = "";
    topo_node_params_t node;
    int rc = get_str(c, "node", v, &s);
    if (!rc && topo_node_preset(s, &node) == TOPO_OK) {
        snprintf(spec->node, sizeof spec->node, "%s", s);
        return CLI_OK;
    }
    if (rc)
        return rc;
    char allowed[320] = "";
    const char *names[16];
    size_t n = 0, used = 0;
    for (; topo_node_preset_name(n) && n < COUNT(names); n++) {
        names[n] = topo_node_preset_name(n);
        used += (size_t)snprintf(allowed + used, used < sizeof allowed ? sizeof allowed - used : 0, "%s%s",
                                 n ? ", " : "", names[n]);
    }
    const char *sg = cli_suggest(s, names, n);
    return cli_fail(c->d, CLI_EUSAGE, "%snode: \"%.60s\" is not a node preset%s%s%s; allowed: %s", c->prefix,
                    s, sg ? " (did you mean \"" : "", sg ? sg : "", sg ? "\"?)" : "", allowed);
}

/* "preset" and/or "kind": spec->preset and spec->kind. */
static int base_of_object(const ctx_t *c, const cJSON *obj, topo_spec_t *spec) {
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    const cJSON *pv = cJSON_GetObjectItemCaseSensitive(obj, "preset");
    const char *s = "";
    int rc;
    topo_params_t preset;
    if (pv) {
        if ((rc = get_str(c, "preset", pv, &s)))
            return rc;
        if (topo_params_preset(s, 0, &preset) != TOPO_OK)
            return cli_fail(c->d, CLI_EUSAGE,
                            "%spreset: \"%.60s\" is not a topology preset; allowed: %s, %s, %s, %s, %s",
                            c->prefix, s, topo_preset_name(0), topo_preset_name(1), topo_preset_name(2),
                            topo_preset_name(3), topo_preset_name(4));
        snprintf(spec->preset, sizeof spec->preset, "%s", s);
        spec->kind = preset.kind;
    }
    if (!kv && !pv)
        return cli_fail(
            c->d, CLI_EUSAGE,
            "%s: missing key \"kind\"; allowed: ideal, fat-tree, rail-optimized, dragonfly, torus, "
            "graphml (or \"preset\": NAME)",
            c->where);
    if (!kv)
        return CLI_OK;
    topo_kind_t kind;
    if ((rc = get_str(c, "kind", kv, &s)))
        return rc;
    if (topo_kind_parse(s, &kind) != TOPO_OK)
        return cli_fail(c->d, CLI_EUSAGE,
                        "%skind: \"%.60s\" is not a topology kind; allowed: ideal, fat-tree, rail-optimized, "
                        "dragonfly, torus, graphml",
                        c->prefix, s);
    if (pv && kind != spec->kind)
        return cli_fail(c->d, CLI_EUSAGE, "%skind: \"%s\" differs from preset %s's kind %s", c->prefix, s,
                        spec->preset, topo_kind_name(spec->kind));
    spec->kind = kind;
    return CLI_OK;
}

/* The general fat-tree form is meant when its keys are given without "k". */
static int general_fat_tree(const cJSON *obj, topo_kind_t kind) {
    static const char *const GENERAL[] = {"endpoints_per_leaf", "leaves",        "spines", "pods",
                                          "leaves_per_pod",     "spines_per_pod"};
    if (kind != TOPO_KIND_FAT_TREE || cJSON_GetObjectItemCaseSensitive(obj, "k"))
        return 0;
    for (size_t i = 0; i < COUNT(GENERAL); i++)
        if (cJSON_GetObjectItemCaseSensitive(obj, GENERAL[i]))
            return 1;
    return 0;
}

static int from_object(const ctx_t *c, const cJSON *obj, topo_spec_t *spec) {
    spec->form = TOPO_SPEC_OBJECT;
    int rc = base_of_object(c, obj, spec);
    const cJSON *v;
    if (!rc && (v = cJSON_GetObjectItemCaseSensitive(obj, "node")) && key_index("node", spec->kind) >= 0)
        rc = node_preset(c, v, spec);
    if (rc)
        return rc;
    spec->general_fat_tree = general_fat_tree(obj, spec->kind);
    cJSON_ArrayForEach(v, obj) {
        const int i = key_index(v->string, spec->kind);
        if (i < 0)
            return unknown_key(c, v->string, spec->kind);
        const topo_key_t *k = &KEYS[i];
        if (strcmp(k->name, "kind") == 0 || strcmp(k->name, "preset") == 0 || strcmp(k->name, "node") == 0)
            continue;
        if (k->type == K_INT)
            rc = get_int(c, k->name, v, (int64_t *)((char *)&spec->keys + k->offset));
        else if (k->type == K_NUM)
            rc = get_num(c, k->name, v, (double *)((char *)&spec->keys + k->offset));
        else
            rc = set_special(c, k->name, v, spec);
        if (rc)
            return rc;
        spec->given |= (uint64_t)1 << i;
    }
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(obj, "name");
    const cJSON *kd = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(obj, "preset");
    if (!spec->is_name)
        snprintf(spec->label, sizeof spec->label, "%s",
                 cJSON_IsString(nm)   ? nm->valuestring
                 : cJSON_IsString(kd) ? kd->valuestring
                 : cJSON_IsString(pr) ? pr->valuestring
                                      : "object");
    return CLI_OK;
}

static int looks_like_graphml(const char *path, FILE *f) {
    size_t n = strlen(path);
    if ((n > 8 && strcmp(path + n - 8, ".graphml") == 0) || (n > 4 && strcmp(path + n - 4, ".xml") == 0))
        return 1;
    int ch;
    while ((ch = fgetc(f)) != EOF && isspace(ch))
        ;
    return ch == '<';
}

static int unknown_name(const ctx_t *c, const char *s) {
    const char *names[40];
    size_t n = 0;
    for (size_t i = 0; topo_preset_name(i) && n < 16; i++)
        names[n++] = topo_preset_name(i);
    for (size_t i = 0; i < COUNT(SHORTCUTS); i++)
        names[n++] = SHORTCUTS[i];
    for (int k = 0; k < TOPO_KIND_COUNT; k++)
        names[n++] = topo_kind_name((topo_kind_t)k);
    const char *sg = cli_suggest(s, names, n);
    return cli_fail(
        c->d, CLI_EUSAGE,
        "%s: \"%.80s\" is not a topology preset, kind or file%s%s%s; allowed: a preset (%s, %s, %s, %s, "
        "%s), a shortcut sized to the job (fat-tree, fat-tree-2:1, rail, dragonfly, dragonfly-ugal), a "
        "kind (ideal, rail-optimized, torus), a GraphML or JSON file, or an object",
        c->where, s, sg ? " (did you mean \"" : "", sg ? sg : "", sg ? "\"?)" : "", topo_preset_name(0),
        topo_preset_name(1), topo_preset_name(2), topo_preset_name(3), topo_preset_name(4));
}

static int fill(const ctx_t *c, const cJSON *spec, topo_spec_t *out);

/* A name: preset, shortcut, kind, or file (GraphML, or JSON holding a topology object, read now). */
static int from_name(const ctx_t *c, const char *s, topo_spec_t *spec) {
    topo_kind_t kind;
    topo_params_t p;
    snprintf(spec->word, sizeof spec->word, "%s", s);
    if (topo_params_preset(s, 0, &p) == TOPO_OK) {
        spec->form = TOPO_SPEC_PRESET;
        return CLI_OK;
    }
    for (size_t i = 0; i < COUNT(SHORTCUTS); i++)
        if (strcmp(s, SHORTCUTS[i]) == 0) {
            spec->form = TOPO_SPEC_SHORTCUT;
            spec->shortcut = (int)i;
            return CLI_OK;
        }
    if (topo_kind_parse(s, &kind) == TOPO_OK && kind != TOPO_KIND_GRAPHML) {
        spec->form = TOPO_SPEC_KIND;
        spec->kind = kind;
        return CLI_OK;
    }
    FILE *f = fopen(s, "r");
    if (!f)
        return unknown_name(c, s);
    int gml = looks_like_graphml(s, f);
    fclose(f);
    if (gml) {
        spec->form = TOPO_SPEC_GRAPHML;
        return CLI_OK;
    }
    cJSON *root = NULL;
    int rc = scenario_json_read(s, "topology", &root, c->d);
    if (rc)
        return rc;
    ctx_t fc = {s, "", c->d, c->check_prefix};
    snprintf(fc.prefix, sizeof fc.prefix, "%s: ", s);
    snprintf(c->check_prefix, sizeof fc.prefix, "%s", fc.prefix);
    rc = cJSON_IsObject(root)
             ? fill(&fc, root, spec)
             : cli_fail(c->d, CLI_EUSAGE, "%s: not a JSON object; allowed: a topology object", s);
    cJSON_Delete(root);
    return rc;
}

static int fill(const ctx_t *c, const cJSON *spec, topo_spec_t *out) {
    if (cJSON_IsString(spec))
        return from_name(c, spec->valuestring, out);
    if (cJSON_IsObject(spec))
        return from_object(c, spec, out);
    char what[96];
    describe(spec, what, sizeof what);
    return cli_fail(c->d, CLI_EUSAGE, "%s: %s; allowed: a topology preset, kind, file or object", c->where,
                    what);
}

int topo_spec_params(const topo_spec_t *s, const char *where, const model_system_t *sys, int64_t gpus,
                     int64_t job_gpus, topo_params_t *p, cli_diag_t *d);

/* A GraphML file is loaded once when it is named, so that its contents fail before any work. */
static int load_graphml(const topo_spec_t *spec, cli_diag_t *d) {
    topo_params_t p;
    int rc = topo_spec_params(spec, NULL, NULL, 0, 0, &p, d);
    if (rc)
        return rc;
    if (p.graphml_path && (rc = input_check_size(p.graphml_path, "GraphML", READFILE_GRAPHML_LIMIT_BYTES, d)))
        return rc;
    topo_t *t = NULL;
    topo_issue_t issue;
    char msg[400];
    igraph_set_error_handler(igraph_error_handler_ignore);
    igraph_set_warning_handler(igraph_warning_handler_ignore);
    rc = topo_new(&p, &t, &issue);
    topo_free(t);
    if (rc)
        return cli_fail(d, topo_json_exit_code(rc), "%s: %s", spec->where,
                        topo_issue_format(&issue, msg, sizeof msg));
    return CLI_OK;
}

/* A JSON path continues with '.', an option or file with ": ". */
static void key_prefix(const char *where, char *buf, size_t size) {
    snprintf(buf, size, "%s%s", where, strchr(where, ':') ? "." : ": ");
}

int topo_spec_parse(const cJSON *json, const char *where, topo_spec_t *out, cli_diag_t *d) {
    memset(out, 0, sizeof *out);
    snprintf(out->where, sizeof out->where, "%s", where);
    ctx_t c = {out->where, "", d, out->check_prefix};
    key_prefix(where, c.prefix, sizeof c.prefix);
    snprintf(out->check_prefix, sizeof out->check_prefix, "%s", c.prefix);
    if (cJSON_IsString(json)) {
        out->is_name = 1;
        snprintf(out->label, sizeof out->label, "%s", json->valuestring);
    }
    int rc = fill(&c, json, out);
    if (!rc &&
        (out->form == TOPO_SPEC_GRAPHML || (out->form == TOPO_SPEC_OBJECT && out->kind == TOPO_KIND_GRAPHML)))
        rc = load_graphml(out, d);
    if (rc)
        memset(out, 0, sizeof *out);
    return rc;
}

int topo_spec_parse_text(const char *text, const char *where, topo_spec_t *out, cli_diag_t *d) {
    const uint64_t failed = alloc_failures();
    cJSON *json = text[0] == '{' ? cJSON_Parse(text) : cJSON_CreateString(text);
    if (!json && text[0] == '{' && alloc_failures() == failed)
        return cli_fail(d, CLI_EUSAGE,
                        "%s: invalid JSON; allowed: a topology preset name, a file or a JSON object", where);
    if (!json)
        return cli_fail(d, CLI_ERUNTIME, "%s: out of memory", where);
    int rc = text[0] == '{' ? input_check_json(json, where, d) : CLI_OK;
    if (!rc)
        rc = topo_spec_parse(json, where, out, d);
    cJSON_Delete(json);
    return rc;
}

void topo_spec_none(topo_spec_t *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->where, sizeof out->where, "topology");
    snprintf(out->check_prefix, sizeof out->check_prefix, "topology: ");
    snprintf(out->label, sizeof out->label, "ideal");
}

/* A shortcut sized to gpus GPUs of sys: nodes of the system's NVLink domain (gcd with the job) with
 * one NIC per GPU at the system's InfiniBand bandwidth (docs/compare.md). */
static void shortcut_params(int which, const model_system_t *sys, int64_t gpus, topo_params_t *p) {
    static const topo_kind_t KINDS[] = {TOPO_KIND_FAT_TREE, TOPO_KIND_FAT_TREE, TOPO_KIND_RAIL_OPTIMIZED,
                                        TOPO_KIND_DRAGONFLY, TOPO_KIND_DRAGONFLY};
    const int64_t g = model_gcd(gpus, sys->nvlink_size > 0 ? sys->nvlink_size : 1);
    topo_params_init(p, KINDS[which]);
    snprintf(p->name, sizeof p->name, "%s", SHORTCUTS[which]);
    p->network = TOPO_TECH_AUTO; /* the system's: InfiniBand at its rate */
    p->gpus = gpus;
    p->node.gpus_per_node = p->node.nics_per_node = g;
    p->node.nvlink_bandwidth_bytes_per_s = sys->nvlink_gb_per_s * 1e9;
    p->node.nvlink_latency_s = sys->nvlink_latency_s / 2;
    p->node.nvlink_tech = TOPO_TECH_AUTO; /* the system's: from its NVLink rate */
    p->node.amd_host = p->node.nic_on_cpu = 0;
    p->link_bandwidth_bytes_per_s =
        sys->ib_gb_per_s * 1e9 * (double)(sys->nic_factor > 0 ? sys->nic_factor : 1);
    p->link_latency_s = sys->ib_latency_s / 2;
    const int64_t endpoints = gpus; /* one NIC per GPU */
    if (which <= 1) {
        /* 2-tier: leaves of E endpoints (E <= 32, at least two leaves), E spines (non-blocking) or
         * E/2 (2:1 at the leaves) with one cable from every leaf to every spine */
        const int64_t e =
            model_divisor_upto(endpoints, endpoints >= 4 ? (endpoints / 2 < 32 ? endpoints / 2 : 32) : 1);
        p->fat_tree.tiers = 2;
        p->fat_tree.k = 0;
        p->fat_tree.leaves = endpoints / e;
        p->fat_tree.endpoints_per_leaf = e;
        p->fat_tree.spines = which == 0 || e < 2 ? e : e / 2;
        p->fat_tree.links_per_leaf_spine = 1;
    } else if (which >= 3) {
        /* balanced dragonfly a = 2p = 2h, the smallest p whose full size holds the endpoints */
        int64_t q = 2;
        while (q * 2 * q * (2 * q * q + 1) < endpoints)
            q++;
        const int64_t per_group = q * 2 * q;
        p->dragonfly.p = q;
        p->dragonfly.a = 2 * q;
        p->dragonfly.h = q;
        p->dragonfly.g = (endpoints + per_group - 1) / per_group;
        p->routing = which == 3 ? TOPO_ROUTING_MINIMAL : TOPO_ROUTING_UGAL;
    }
}

static int given(const topo_spec_t *s, const char *key);

/* Copy the given keys of an object over p (the technologies are apply_techs'). */
static void apply_keys(const topo_spec_t *s, topo_params_t *p) {
    for (size_t i = 0; i < COUNT(KEYS); i++) {
        if (!(s->given & ((uint64_t)1 << i)))
            continue;
        const topo_key_t *k = &KEYS[i];
        const char *n = k->name;
        if (k->type == K_INT)
            *(int64_t *)((char *)p + k->offset) = *(const int64_t *)((const char *)&s->keys + k->offset);
        else if (k->type == K_NUM)
            *(double *)((char *)p + k->offset) = *(const double *)((const char *)&s->keys + k->offset);
        else if (strcmp(n, "name") == 0)
            snprintf(p->name, sizeof p->name, "%s", s->keys.name);
        else if (strcmp(n, "file") == 0)
            p->graphml_path = s->file;
        else if (strcmp(n, "routing") == 0)
            p->routing = s->keys.routing;
        else if (strcmp(n, "arrangement") == 0)
            p->dragonfly.arrangement = s->keys.dragonfly.arrangement;
        else if (strcmp(n, "scaleup") == 0)
            p->node.scaleup = s->keys.node.scaleup;
        else if (strcmp(n, "pxn") == 0)
            p->pxn = s->keys.pxn;
        else if (strcmp(n, "seed") == 0)
            p->seed = s->keys.seed;
        else if (strcmp(n, "dims") == 0)
            p->torus = s->keys.torus;
    }
}

/* The technologies an object names, before its other keys: each sets its links' bandwidth and latency
 * (which the object's own bandwidth and latency keys then override), but "nvlink_generation" and
 * the network families, which keep the rates. */
static void apply_techs(const topo_spec_t *s, topo_params_t *p) {
    if (given(s, "network") && s->network_family)
        p->network = s->keys.network;
    else if (given(s, "network"))
        topo_params_set_network(p, s->keys.network);
    if (given(s, "nvlink"))
        topo_node_set_nvlink(&p->node, s->keys.node.nvlink_tech);
    else if (given(s, "nvlink_generation"))
        p->node.nvlink_tech = s->keys.node.nvlink_tech;
    if (given(s, "pcie"))
        topo_node_set_pcie(&p->node, s->keys.node.pcie_tech);
}

static int given(const topo_spec_t *s, const char *key) {
    const int i = key_index(key, s->kind);
    return s->form == TOPO_SPEC_OBJECT && i >= 0 && (s->given & ((uint64_t)1 << i));
}

int topo_spec_params(const topo_spec_t *s, const char *where, const model_system_t *sys, int64_t gpus,
                     int64_t job_gpus, topo_params_t *p, cli_diag_t *d) {
    const int64_t size = gpus > 0 ? gpus : job_gpus;
    switch (s->form) {
    case TOPO_SPEC_NONE:
        kind_defaults(TOPO_KIND_IDEAL, sys, p);
        if (size > 0)
            p->gpus = size;
        break;
    case TOPO_SPEC_PRESET:
        topo_params_preset(s->word, gpus, p);
        break;
    case TOPO_SPEC_SHORTCUT:
        shortcut_params(s->shortcut, sys, size, p);
        break;
    case TOPO_SPEC_KIND:
        kind_defaults(s->kind, sys, p);
        break;
    case TOPO_SPEC_GRAPHML:
        topo_params_init(p, TOPO_KIND_GRAPHML);
        p->graphml_path = s->word;
        break;
    case TOPO_SPEC_OBJECT:
        if (s->preset[0]) {
            const int64_t preset_gpus = gpus > 0 ? gpus : given(s, "gpus") ? s->keys.gpus : 0;
            topo_params_preset(s->preset, preset_gpus, p);
        } else {
            kind_defaults(s->kind, sys, p);
        }
        if (s->node[0])
            topo_node_preset(s->node, &p->node);
        if (s->general_fat_tree)
            p->fat_tree.k = 0;
        apply_techs(s, p);
        apply_keys(s, p);
        /* a custom NVLink rate without a technology: the technology follows the rate */
        if (given(s, "nvlink_bandwidth_bytes_per_s") && !given(s, "nvlink_generation") && !given(s, "nvlink"))
            p->node.nvlink_tech = TOPO_TECH_AUTO;
        break;
    }
    if (gpus > 0)
        p->gpus = gpus;
    /* an ideal topology whose domains do not divide the job gets domains of gcd(gpus, nvlink_size) */
    if (p->kind == TOPO_KIND_IDEAL && sys && p->gpus > 0 && !given(s, "gpus_per_node")) {
        const int64_t nvs = sys->nvlink_size > 0 ? sys->nvlink_size : 1, g = model_gcd(p->gpus, nvs);
        if (g != nvs)
            p->node.gpus_per_node = p->node.nics_per_node = g;
    }
    topo_issue_t issue;
    if (topo_params_check(p, &issue) == TOPO_OK)
        return CLI_OK;
    /* the issue points into the innermost file when the object came from one, else at where */
    char msg[400], own[320], prefix[320];
    key_prefix(s->where, own, sizeof own);
    const char *pre = s->check_prefix;
    if (where && strcmp(s->check_prefix, own) == 0) {
        key_prefix(where, prefix, sizeof prefix);
        pre = prefix;
    }
    return cli_fail(d, CLI_EUSAGE, "%s%s", pre, topo_issue_format(&issue, msg, sizeof msg));
}

int topo_json_exit_code(int topo_status) {
    switch (topo_status) {
    case TOPO_OK:
        return CLI_OK;
    case TOPO_ENOMEM:
    case TOPO_EIGRAPH:
        return CLI_ERUNTIME;
    default:
        return CLI_EUSAGE;
    }
}
