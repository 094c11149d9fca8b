/* topo_list.c - compare's --topologies list: entries split at top-level commas, each a name or a JSON
 * object parsed by topo_spec_parse (one meaning per name, as in every command), labelled for the
 * tables. */
#include "alloc.h"
#include "topo_list.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "input_check.h"

int topo_item_parse(const char *text, topo_item_t *it, cli_diag_t *d) {
    const uint64_t failed = alloc_failures();
    cJSON *json = text[0] == '{' ? cJSON_Parse(text) : cJSON_CreateString(text);
    if (!json && alloc_failures() != failed)
        return cli_fail(d, CLI_ERUNTIME, "compare: out of memory");
    if (text[0] == '{' && !cJSON_IsObject(json)) {
        cJSON_Delete(json);
        return cli_fail(
            d, CLI_EUSAGE,
            "--topologies: \"%.60s\" is not a JSON object; allowed: a preset, kind, shortcut, file "
            "or {...}",
            text);
    }
    if (!json)
        return cli_fail(d, CLI_ERUNTIME, "compare: out of memory");
    if (cJSON_IsObject(json)) {
        const int rc = input_check_json(json, "--topologies", d);
        if (rc) {
            cJSON_Delete(json);
            return rc;
        }
    }
    if (cJSON_IsObject(json)) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(json, "name");
        const cJSON *kd = cJSON_GetObjectItemCaseSensitive(json, "kind");
        const cJSON *pr = cJSON_GetObjectItemCaseSensitive(json, "preset");
        snprintf(it->label, sizeof it->label, "%s",
                 cJSON_IsString(nm)   ? nm->valuestring
                 : cJSON_IsString(kd) ? kd->valuestring
                 : cJSON_IsString(pr) ? pr->valuestring
                                      : "object");
    } else {
        snprintf(it->label, sizeof it->label, "%s", text);
    }
    char where[96];
    snprintf(where, sizeof where, "--topologies: %s", it->label);
    const int rc = topo_spec_parse(json, where, &it->spec, d);
    cJSON_Delete(json);
    return rc;
}

int topo_list_parse(const char *list, topo_item_t *items, int *n, int max, cli_diag_t *d) {
    *n = 0;
    int has_ideal = 0;
    const char *p = list;
    while (*p) {
        const char *start = p;
        int depth = 0;
        while (*p && (depth > 0 || *p != ',')) {
            depth += *p == '{' || *p == '[';
            depth -= *p == '}' || *p == ']';
            p++;
        }
        const size_t len = (size_t)(p - start);
        if (*p == ',')
            p++;
        if (len == 0)
            return cli_fail(d, CLI_EUSAGE, "--topologies: \"%.60s\" has an empty entry; allowed: A,B,C",
                            list);
        if (*n >= max - 1)
            return cli_fail(d, CLI_EUSAGE, "--topologies: more than %d topologies; allowed: at most %d",
                            max - 1, max - 1);
        char *text = alloc_malloc(len + 1);
        if (!text)
            return cli_fail(d, CLI_ERUNTIME, "compare: out of memory");
        memcpy(text, start, len);
        text[len] = '\0';
        const int rc = topo_item_parse(text, &items[*n], d);
        has_ideal |= strcmp(text, "ideal") == 0;
        free(text);
        if (rc)
            return rc;
        (*n)++;
    }
    if (*n == 0)
        return cli_fail(d, CLI_EUSAGE,
                        "--topologies: empty; allowed: a comma-separated list, e.g. ideal,fat-tree");
    if (!has_ideal) {
        memmove(items + 1, items, (size_t)*n * sizeof *items);
        (*n)++;
        return topo_item_parse("ideal", &items[0], d);
    }
    for (int i = 1; i < *n; i++)
        if (items[i].spec.is_name && strcmp(items[i].spec.word, "ideal") == 0) {
            const topo_item_t t = items[i];
            memmove(items + 1, items, (size_t)i * sizeof *items);
            items[0] = t;
        }
    return CLI_OK;
}
