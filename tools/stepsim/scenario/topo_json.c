/* topo_json.c - topology specifications (preset, kind, file or object) to topo_params_t.
 *
 * One table lists every object key with the kinds that take it and where it goes, so that unknown
 * keys, did-you-mean and the allowed lists come from the same place. Values are only type-checked
 * here; their ranges are topo_params_check's, whose issue names the field, so every message carries
 * the JSON path of the offending key.
 */
#include "topo_json.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

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

/* Where messages point: whole-value messages use `where`, key messages `prefix` + key. */
typedef struct {
    const char *where;
    char prefix[320];
    cli_diag_t *d;
    int64_t gpus;       /* > 0: size presets by it (the --gpus option wins over a "gpus" key) */
    char *check_prefix; /* where topo_params_check's issue points: the innermost file's prefix */
} ctx_t;

static const topo_key_t *find_key(const char *name, topo_kind_t kind) {
    for (size_t i = 0; i < COUNT(KEYS); i++)
        if (strcmp(KEYS[i].name, name) == 0 && (KEYS[i].kinds & KIND(kind)))
            return &KEYS[i];
    return NULL;
}

static int unknown_key(const ctx_t *c, const char *key, topo_kind_t kind) {
    const char *names[COUNT(KEYS)];
    char allowed[640] = "";
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

static int set_special(const ctx_t *c, const char *key, const cJSON *v, topo_params_t *p, char *store,
                       size_t size) {
    const char *s = "";
    int64_t x = 0;
    int rc;
    if (strcmp(key, "dims") == 0)
        return set_dims(c, v, p);
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
        snprintf(store, size, "%s", s);
        p->graphml_path = store;
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

/* The kind's defaults; "ideal" from the analytic model's system when there is one. */
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

static int node_preset(const ctx_t *c, const cJSON *v, topo_params_t *p) {
    const char *s = "";
    int rc = get_str(c, "node", v, &s);
    if (rc || topo_node_preset(s, &p->node) == TOPO_OK)
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

static int base_of_object(const ctx_t *c, const cJSON *obj, const model_system_t *sys, topo_params_t *p) {
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    const cJSON *pv = cJSON_GetObjectItemCaseSensitive(obj, "preset");
    const char *s = "";
    int rc;
    if (pv) {
        const cJSON *gv = cJSON_GetObjectItemCaseSensitive(obj, "gpus");
        int64_t gpus = c->gpus;
        if ((rc = get_str(c, "preset", pv, &s)) || (!gpus && gv && (rc = get_int(c, "gpus", gv, &gpus))))
            return rc;
        if (topo_params_preset(s, gpus > 0 ? gpus : 0, p) != TOPO_OK)
            return cli_fail(c->d, CLI_EUSAGE,
                            "%spreset: \"%.60s\" is not a topology preset; allowed: %s, %s, %s, %s, %s",
                            c->prefix, s, topo_preset_name(0), topo_preset_name(1), topo_preset_name(2),
                            topo_preset_name(3), topo_preset_name(4));
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
    if (pv && kind != p->kind)
        return cli_fail(c->d, CLI_EUSAGE, "%skind: \"%s\" differs from preset %s's kind %s", c->prefix, s,
                        p->name, topo_kind_name(p->kind));
    if (!pv)
        kind_defaults(kind, sys, p);
    return CLI_OK;
}

/* The general fat-tree form is meant when its keys are given without "k". */
static void fat_tree_form(const cJSON *obj, topo_params_t *p) {
    static const char *const GENERAL[] = {"endpoints_per_leaf", "leaves",        "spines", "pods",
                                          "leaves_per_pod",     "spines_per_pod"};
    if (p->kind != TOPO_KIND_FAT_TREE || cJSON_GetObjectItemCaseSensitive(obj, "k"))
        return;
    for (size_t i = 0; i < COUNT(GENERAL); i++)
        if (cJSON_GetObjectItemCaseSensitive(obj, GENERAL[i]))
            p->fat_tree.k = 0;
}

static int from_object(const ctx_t *c, const cJSON *obj, const model_system_t *sys, topo_params_t *p,
                       char *store, size_t size) {
    int rc = base_of_object(c, obj, sys, p);
    const cJSON *v;
    if (!rc && (v = cJSON_GetObjectItemCaseSensitive(obj, "node")) && find_key("node", p->kind))
        rc = node_preset(c, v, p);
    if (rc)
        return rc;
    fat_tree_form(obj, p);
    cJSON_ArrayForEach(v, obj) {
        const topo_key_t *k = find_key(v->string, p->kind);
        if (!k)
            return unknown_key(c, v->string, p->kind);
        if (strcmp(k->name, "kind") == 0 || strcmp(k->name, "preset") == 0 || strcmp(k->name, "node") == 0)
            continue;
        if (k->type == K_INT)
            rc = get_int(c, k->name, v, (int64_t *)((char *)p + k->offset));
        else if (k->type == K_NUM)
            rc = get_num(c, k->name, v, (double *)((char *)p + k->offset));
        else
            rc = set_special(c, k->name, v, p, store, size);
        if (rc)
            return rc;
    }
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
    const char *names[32];
    size_t n = 0;
    for (size_t i = 0; topo_preset_name(i) && n < COUNT(names); i++)
        names[n++] = topo_preset_name(i);
    for (int k = 0; k < TOPO_KIND_COUNT; k++)
        names[n++] = topo_kind_name((topo_kind_t)k);
    const char *sg = cli_suggest(s, names, n);
    return cli_fail(
        c->d, CLI_EUSAGE,
        "%s: \"%.80s\" is not a topology preset, kind or file%s%s%s; allowed: a preset (%s, %s, %s, %s, "
        "%s), a kind (ideal, fat-tree, rail-optimized, dragonfly, torus), a GraphML or JSON file, or "
        "an object",
        c->where, s, sg ? " (did you mean \"" : "", sg ? sg : "", sg ? "\"?)" : "", topo_preset_name(0),
        topo_preset_name(1), topo_preset_name(2), topo_preset_name(3), topo_preset_name(4));
}

static int fill(const ctx_t *c, const cJSON *spec, const model_system_t *sys, topo_params_t *p, char *store,
                size_t size);

/* A name: preset, kind, or file (GraphML, or JSON holding a topology object). */
static int from_name(const ctx_t *c, const char *s, const model_system_t *sys, topo_params_t *p, char *store,
                     size_t size) {
    topo_kind_t kind;
    if (topo_params_preset(s, c->gpus, p) == TOPO_OK)
        return CLI_OK;
    if (topo_kind_parse(s, &kind) == TOPO_OK && kind != TOPO_KIND_GRAPHML) {
        kind_defaults(kind, sys, p);
        return CLI_OK;
    }
    FILE *f = fopen(s, "r");
    if (!f)
        return unknown_name(c, s);
    int gml = looks_like_graphml(s, f);
    fclose(f);
    if (gml) {
        topo_params_init(p, TOPO_KIND_GRAPHML);
        snprintf(store, size, "%s", s);
        p->graphml_path = store;
        return CLI_OK;
    }
    cJSON *root = NULL;
    int rc = scenario_json_read(s, "topology", &root, c->d);
    if (rc)
        return rc;
    ctx_t fc = {s, "", c->d, c->gpus, c->check_prefix};
    snprintf(fc.prefix, sizeof fc.prefix, "%s: ", s);
    snprintf(c->check_prefix, sizeof fc.prefix, "%s", fc.prefix);
    rc = cJSON_IsObject(root)
             ? fill(&fc, root, sys, p, store, size)
             : cli_fail(c->d, CLI_EUSAGE, "%s: not a JSON object; allowed: a topology object", s);
    cJSON_Delete(root);
    return rc;
}

static int fill(const ctx_t *c, const cJSON *spec, const model_system_t *sys, topo_params_t *p, char *store,
                size_t size) {
    if (cJSON_IsString(spec))
        return from_name(c, spec->valuestring, sys, p, store, size);
    if (cJSON_IsObject(spec))
        return from_object(c, spec, sys, p, store, size);
    char what[96];
    describe(spec, what, sizeof what);
    return cli_fail(c->d, CLI_EUSAGE, "%s: %s; allowed: a topology preset, kind, file or object", c->where,
                    what);
}

/* Issue fields that are node keys or top-level keys all sit directly in the topology object. */
static int check(const ctx_t *c, const topo_params_t *p) {
    topo_issue_t issue;
    if (topo_params_check(p, &issue) == TOPO_OK)
        return CLI_OK;
    char msg[400];
    return cli_fail(c->d, CLI_EUSAGE, "%s%s", c->check_prefix, topo_issue_format(&issue, msg, sizeof msg));
}

int topo_json_params(const cJSON *spec, const char *where, const model_system_t *sys, int64_t gpus,
                     topo_params_t *p, char *store, size_t store_size, cli_diag_t *d) {
    char check_prefix[320];
    ctx_t c = {where, "", d, gpus, check_prefix};
    /* a JSON path continues with '.', an option or file with ": " */
    int path = strchr(where, ':') != NULL;
    snprintf(c.prefix, sizeof c.prefix, "%s%s", where, path ? "." : ": ");
    snprintf(check_prefix, sizeof check_prefix, "%s", c.prefix);
    int rc = fill(&c, spec, sys, p, store, store_size);
    if (rc)
        return rc;
    if (gpus > 0)
        p->gpus = gpus;
    return check(&c, p);
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
