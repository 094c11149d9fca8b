/* perturb_links.c - slow and failed links in a scenario: the "perturbations.links" array, the
 * --slow-links and --fail-links options, and applying them to the job's topology (topo_links_change).
 *
 * An entry of the array is {"links": "leaf3->spine1; leaf0->spine2" | "class": NAME | "fraction": F
 * (with an optional "class" it is drawn from), and "bandwidth": factor in (0, 1] | "fail": true}. The
 * options take SEL:FACTOR (--slow-links) and SEL (--fail-links), SEL being class:NAME, fraction:F
 * (fraction:F:CLASS) or link names separated by ';' (docs/cli.md). Entries apply in order: the file's,
 * then the options' in command-line order.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "perturb_links.h"
#include "scenario_internal.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const ENTRY_KEYS[] = {"links", "class", "fraction", "bandwidth", "fail"};

static void class_list(char *buf, size_t size) {
    size_t k = 0;
    buf[0] = '\0';
    for (int c = 0; c < TOPO_LINK_CLASS_COUNT && k < size; c++)
        k += (size_t)snprintf(buf + k, size - k, "%s%s", c ? ", " : "",
                              topo_link_class_name((topo_link_class_t)c));
}

/* A class name, with a did-you-mean; where and what name the place ("run.json: ...class", "--fail-links"). */
static int parse_class(const char *name, const char *where, cli_diag_t *d, topo_link_class_t *out) {
    if (topo_link_class_parse(name, out) == TOPO_OK)
        return CLI_OK;
    const char *cands[TOPO_LINK_CLASS_COUNT];
    for (int c = 0; c < TOPO_LINK_CLASS_COUNT; c++)
        cands[c] = topo_link_class_name((topo_link_class_t)c);
    char hint[96], list[200];
    scn_hint(hint, sizeof hint, name, cands, TOPO_LINK_CLASS_COUNT);
    class_list(list, sizeof list);
    return cli_fail(d, CLI_EUSAGE, "%s: \"%.60s\" is not a link class%s; allowed: %s", where, name, hint,
                    list);
}

static int add_entry(scn_links_t *links, const char *where, cli_diag_t *d, scn_link_entry_t **out) {
    if (links->n >= SCN_LINKS_MAX)
        return cli_fail(d, CLI_EUSAGE, "%s: more than %d link perturbations; allowed: at most %d", where,
                        SCN_LINKS_MAX, SCN_LINKS_MAX);
    scn_link_entry_t *e = &links->e[links->n];
    memset(e, 0, sizeof *e);
    snprintf(e->where, sizeof e->where, "%s", where);
    e->bandwidth_factor = 1.0;
    *out = e;
    return CLI_OK;
}

/* ---- the scenario file -------------------------------------------------------------------------- */

static int entry_json(scn_links_t *links, const scn_src_t *src, const cJSON *v, const char *path) {
    char where[160], p[200], what[96];
    snprintf(where, sizeof where, "%s%s", src->prefix, path);
    if (!cJSON_IsObject(v)) {
        scn_describe(v, what, sizeof what);
        return cli_fail(src->diag, CLI_EUSAGE,
                        "%s: %s is not an object; allowed: {links | class | fraction, bandwidth | fail}",
                        where, what);
    }
    int rc = scn_check_keys(src, v, path, ENTRY_KEYS, COUNT(ENTRY_KEYS));
    if (rc)
        return rc;
    scn_link_entry_t *e = NULL;
    if ((rc = add_entry(links, where, src->diag, &e)))
        return rc;
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(v, "links");
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(v, "class");
    const cJSON *frac = cJSON_GetObjectItemCaseSensitive(v, "fraction");
    const cJSON *bw = cJSON_GetObjectItemCaseSensitive(v, "bandwidth");
    const cJSON *fail = cJSON_GetObjectItemCaseSensitive(v, "fail");
    if (names) {
        const char *s;
        snprintf(p, sizeof p, "%s.links", path);
        if ((rc = scn_json_string(src, names, p, "link names such as \"leaf3->spine1\", separated by ';'",
                                  &s)))
            return rc;
        if (cls || frac)
            return cli_fail(src->diag, CLI_EUSAGE,
                            "%s%s: given with %s; allowed: one selector, links or class (with or without "
                            "fraction)",
                            src->prefix, p, cls ? "class" : "fraction");
        if (!s[0] || strlen(s) >= sizeof e->names)
            return cli_fail(src->diag, CLI_EUSAGE, "%s%s: \"%.60s\" %s; allowed: 1..%d characters",
                            src->prefix, p, s, s[0] ? "is too long" : "is empty", (int)sizeof e->names - 1);
        snprintf(e->names, sizeof e->names, "%s", s);
    }
    if (cls) {
        const char *s;
        snprintf(p, sizeof p, "%s.class", path);
        char cw[260];
        snprintf(cw, sizeof cw, "%s%s", src->prefix, p);
        if ((rc = scn_json_string(src, cls, p, "a link class", &s)) ||
            (rc = parse_class(s, cw, src->diag, &e->link_class)))
            return rc;
        e->has_class = 1;
    }
    if (frac) {
        snprintf(p, sizeof p, "%s.fraction", path);
        if ((rc = scn_json_pos(src, frac, p, 1.0, &e->fraction)))
            return rc;
    }
    if (!names && !cls && !frac)
        return cli_fail(src->diag, CLI_EUSAGE, "%s: no links chosen; allowed: links, class or fraction",
                        where);
    if (fail && !cJSON_IsBool(fail)) {
        scn_describe(fail, what, sizeof what);
        return cli_fail(src->diag, CLI_EUSAGE, "%s.fail: %s is not a boolean; allowed: true, false", where,
                        what);
    }
    e->fail = fail && cJSON_IsTrue(fail);
    if (e->fail && bw)
        return cli_fail(src->diag, CLI_EUSAGE,
                        "%s.bandwidth: given with fail: true; allowed: bandwidth (a factor) or fail: true",
                        where);
    if (bw) {
        snprintf(p, sizeof p, "%s.bandwidth", path);
        if ((rc = scn_json_pos(src, bw, p, 1.0, &e->bandwidth_factor)))
            return rc;
    } else if (!e->fail) {
        return cli_fail(
            src->diag, CLI_EUSAGE,
            "%s: neither bandwidth nor fail: true; allowed: \"bandwidth\": a factor in (0, 1], or "
            "\"fail\": true",
            where);
    }
    links->n++;
    return CLI_OK;
}

int scn_links_parse_json(scn_links_t *links, const scn_src_t *src, const cJSON *v, const char *path) {
    if (!cJSON_IsArray(v)) {
        char what[96];
        scn_describe(v, what, sizeof what);
        return cli_fail(src->diag, CLI_EUSAGE,
                        "%s%s: %s is not an array; allowed: [{links | class | fraction, "
                        "bandwidth | fail}, ...]",
                        src->prefix, path, what);
    }
    int i = 0, rc = CLI_OK;
    const cJSON *it;
    cJSON_ArrayForEach(it, v) {
        char p[96];
        snprintf(p, sizeof p, "%s[%d]", path, i++);
        if ((rc = entry_json(links, src, it, p)))
            return rc;
    }
    return rc;
}

/* ---- the options -------------------------------------------------------------------------------- */

static int parse_unit(const char *text, double *out) {
    char *end;
    const double x = strtod(text, &end);
    if (end == text || *end || !isfinite(x) || x <= 0.0 || x > 1.0)
        return -1;
    *out = x;
    return 0;
}

/* SEL: class:NAME, fraction:F[:CLASS], or names. */
static int parse_selector(const char *option, const char *sel, scn_link_entry_t *e, cli_diag_t *d) {
    char buf[600];
    if (strncmp(sel, "class:", 6) == 0) {
        e->has_class = 1;
        return parse_class(sel + 6, option, d, &e->link_class);
    }
    if (strncmp(sel, "fraction:", 9) == 0) {
        snprintf(buf, sizeof buf, "%s", sel + 9);
        char *cls = strchr(buf, ':');
        if (cls)
            *cls++ = '\0';
        if (parse_unit(buf, &e->fraction))
            return cli_fail(d, CLI_EUSAGE,
                            "%s: fraction \"%.60s\" is not a number in (0, 1]; allowed: "
                            "fraction:F or fraction:F:CLASS with 0 < F <= 1",
                            option, buf);
        if (cls) {
            e->has_class = 1;
            return parse_class(cls, option, d, &e->link_class);
        }
        return CLI_OK;
    }
    if (!sel[0] || strlen(sel) >= sizeof e->names)
        return cli_fail(d, CLI_EUSAGE,
                        "%s: \"%.60s\" %s; allowed: link names FROM->TO separated by ';', "
                        "class:NAME or fraction:F[:CLASS]",
                        option, sel, sel[0] ? "is too long" : "chooses no link");
    memcpy(e->names, sel, strlen(sel) + 1);
    return CLI_OK;
}

int scn_links_option(scn_links_t *links, const char *option, const char *value, cli_diag_t *d) {
    scn_link_entry_t *e = NULL;
    int rc = add_entry(links, option, d, &e);
    if (rc)
        return rc;
    char sel[600];
    snprintf(sel, sizeof sel, "%s", value);
    if (strcmp(option, "--slow-links") == 0) {
        char *colon = strrchr(sel, ':');
        if (!colon || parse_unit(colon + 1, &e->bandwidth_factor))
            return cli_fail(d, CLI_EUSAGE,
                            "--slow-links: \"%.80s\" has no factor in (0, 1] after its last ':'; allowed: "
                            "SEL:FACTOR, e.g. \"leaf3->spine1:0.5\" or class:global:0.25",
                            value);
        *colon = '\0';
    } else {
        e->fail = 1;
    }
    if ((rc = parse_selector(option, sel, e, d)))
        return rc;
    links->n++;
    return CLI_OK;
}

/* ---- applying ----------------------------------------------------------------------------------- */

/* The link name closest to an unknown one (spaces dropped), for a did-you-mean; "" if none. */
static void suggest_link(const topo_t *t, const char *given, char *out, size_t size) {
    out[0] = '\0';
    char word[160];
    size_t k = 0;
    for (const char *p = given; *p && k + 1 < sizeof word; p++)
        if (*p != ' ' && *p != '\t')
            word[k++] = *p;
    word[k] = '\0';
    const int64_t n = topo_link_count(t);
    char(*names)[48] = alloc_malloc((size_t)(n > 0 ? n : 1) * sizeof *names);
    const char **cands = alloc_malloc((size_t)(n > 0 ? n : 1) * sizeof *cands);
    if (names && cands) {
        for (int64_t l = 0; l < n; l++) {
            topo_link_name(t, l, names[l], sizeof names[l]);
            cands[l] = names[l];
        }
        const char *s = cli_suggest(word, cands, (size_t)n);
        if (s)
            snprintf(out, size, " (did you mean \"%s\"?)", s);
    }
    free(names);
    free(cands);
}

int perturb_links_apply(const scn_links_t *links, uint64_t seed, topo_t *t, cli_diag_t *d) {
    if (!links || links->n == 0)
        return CLI_OK;
    topo_link_change_t ch[SCN_LINKS_MAX];
    int last_fail = -1;
    for (int i = 0; i < links->n; i++) {
        const scn_link_entry_t *e = &links->e[i];
        ch[i] = (topo_link_change_t){.names = e->names[0] ? e->names : NULL,
                                     .has_class = e->has_class,
                                     .link_class = e->link_class,
                                     .fraction = e->fraction,
                                     .bandwidth_factor = e->bandwidth_factor,
                                     .fail = e->fail,
                                     .absent_ok = e->absent_ok && !e->names[0]};
        if (e->fail)
            last_fail = i;
    }
    int bad = -1;
    topo_issue_t issue;
    memset(&issue, 0, sizeof issue);
    const int rc = topo_links_change(t, ch, links->n, seed, &bad, &issue);
    if (rc == TOPO_OK)
        return CLI_OK;
    if (rc == TOPO_EUNREACHABLE)
        return cli_fail(d, CLI_ENORESULT, "%s: the failed links %s",
                        links->e[last_fail >= 0 ? last_fail : 0].where, issue.rule);
    if (rc == TOPO_EINVAL && bad >= 0) {
        const scn_link_entry_t *e = &links->e[bad];
        char hint[120] = "";
        if (strcmp(issue.field, "links") == 0)
            suggest_link(t, issue.value, hint, sizeof hint);
        char field[64] = "";
        if (e->where[0] != '-') /* a file's entry: name the key; an option is its own field */
            snprintf(field, sizeof field, ".%s", issue.field);
        if (strcmp(issue.field, "links") == 0)
            return cli_fail(d, CLI_EUSAGE,
                            "%s%s: \"%s\" %s%s; allowed: link names FROM->TO (FROM<->TO: both directions) as "
                            "run's busiest links and topo print them, separated by ';'",
                            e->where, field, issue.value, issue.rule, hint);
        return cli_fail(d, CLI_EUSAGE, "%s%s: %s %s", e->where, field, issue.value, issue.rule);
    }
    char msg[400];
    return cli_fail(d, rc == TOPO_ENOMEM ? CLI_ERUNTIME : CLI_EUSAGE, "%s: %s",
                    links->e[bad >= 0 ? bad : 0].where, topo_issue_format(&issue, msg, sizeof msg));
}
