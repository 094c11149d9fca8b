/* stepsim/test_golden.c - every command's --json output on small fixture scenarios, byte for byte
 * against tests/golden/<case>.json (and a sweep's journal against tests/golden/<case>.jsonl).
 * Runs cli_main in-process from the source root, so the paths the outputs echo ("file", "grid")
 * read as they do on the command line: tests/fixtures/...
 *
 * Host-dependent values are masked before comparing, in the output and in the stored file alike:
 *   - "wall_time_s" (run, sweep: host seconds spent; the only field that reads the host clock) has
 *     its value replaced by the token "@WALL@";
 *   - the journal's path (a temporary file here; the sweep summary's "out") by the token @OUT@.
 * Everything else, every digit included, must match.
 *
 * Regenerate: STEPSIM_UPDATE_GOLDEN=1 ctest -R stepsim.golden (or run the test binary with it set)
 * rewrites the files that differ, names each one on stdout, and passes; review with git diff
 * tests/golden. tests/README.md has the details. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_cli_run.h"

#define GOLDEN_DIR "tests/golden/"
#define SMALL "tests/fixtures/golden/small.json"
#define THREE_ROWS "tests/fixtures/measured/three_rows.csv"

/* One case: its golden file's name and the command line, split at spaces. The argument "@OUT@"
 * is a temporary file; a case that has one also compares that file (the sweep's journal). */
typedef struct golden_case {
    const char *name;
    const char *args;
} golden_case_t;

/* Adding a case is one line here (then STEPSIM_UPDATE_GOLDEN=1 to write its file). */
static const golden_case_t cases[] = {
    {"estimate", "estimate " SMALL " --json"},
    {"estimate_layers", "estimate " SMALL " --layers --json"},
    {"search", "search " SMALL " --top 5 --json"},
    {"topo", "topo " SMALL " --json"},
    {"topo_dragonfly", "topo --topology tests/fixtures/topo/dragonfly.json --json"},
    {"collective", "collective " SMALL " --json"},
    {"run", "run " SMALL " --json"},
    {"run_analytic", "run " SMALL " --comm analytic --json"},
    {"compare", "compare " SMALL " --json"},
    {"compare_scaling", "compare " SMALL " --gpus 8,16 --topologies ideal,fat-tree --json"},
    {"validate", "validate " SMALL " --json"},
    {"validate_measured", "validate --measured " THREE_ROWS " --json"},
    {"validate_measured_sim", "validate --measured " THREE_ROWS " --sim --json"},
    {"validate_measured_moe", "validate --measured tests/data/nemo-moe-runs.csv --json"},
    {"sweep", "sweep tests/fixtures/golden/sweep.json --out @OUT@ --json"},
    {"sweep_search", "sweep tests/fixtures/sweep/small_search.json --out @OUT@ --json"},
};

static int update_mode(void) {
    const char *u = getenv("STEPSIM_UPDATE_GOLDEN");
    return u && *u && strcmp(u, "0") != 0;
}

/* Replace the value after every "KEY": (up to the next ',', '}' or newline) by "TOKEN". */
static char *mask_key(char *s, const char *key, const char *token) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    size_t plen = strlen(pat), tlen = strlen(token);
    size_t cap = strlen(s) + 1, n = 0;
    for (const char *p = s; (p = strstr(p, pat)); p += plen)
        n++;
    char *out = malloc(cap + n * (tlen + 2));
    if (!out)
        abort();
    char *o = out;
    const char *p = s;
    for (const char *hit; (hit = strstr(p, pat));) {
        const char *v = hit + plen;
        while (*v == ' ' || *v == '\t')
            v++;
        const char *end = v;
        if (*end == '"') { /* a string: to its closing quote */
            for (end++; *end && *end != '"'; end++)
                if (*end == '\\' && end[1])
                    end++;
            if (*end)
                end++;
        } else {
            while (*end && *end != ',' && *end != '}' && *end != '\n')
                end++;
        }
        memcpy(o, p, (size_t)(v - p));
        o += v - p;
        *o++ = '"';
        memcpy(o, token, tlen);
        o += tlen;
        *o++ = '"';
        p = end;
    }
    strcpy(o, p);
    free(s);
    return out;
}

/* Replace every occurrence of the string what by token. */
static char *mask_string(char *s, const char *what, const char *token) {
    size_t wlen = strlen(what), tlen = strlen(token), n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += wlen)
        n++;
    char *out = malloc(strlen(s) + 1 + n * tlen);
    if (!out)
        abort();
    char *o = out;
    const char *p = s;
    for (const char *hit; (hit = strstr(p, what)); p = hit + wlen) {
        memcpy(o, p, (size_t)(hit - p));
        o += hit - p;
        memcpy(o, token, tlen);
        o += tlen;
    }
    strcpy(o, p);
    free(s);
    return out;
}

static char *mask(char *s, const char *journal) {
    s = mask_key(s, "wall_time_s", "@WALL@");
    return journal ? mask_string(s, journal, "@OUT@") : s;
}

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + got + 1 > cap) {
            cap = 2 * (len + got + 1);
            buf = realloc(buf, cap);
            if (!buf)
                abort();
        }
        memcpy(buf + len, chunk, got);
        len += got;
    }
    fclose(f);
    if (!buf && !(buf = calloc(1, 1)))
        abort();
    buf[len] = '\0';
    return buf;
}

static void write_all(const char *path, const char *s) {
    FILE *f = fopen(path, "wb");
    if (!f || fputs(s, f) < 0 || fclose(f) != 0)
        fail_msg("cannot write %s", path);
}

/* The first line where got and want differ, both shown; 0 when equal. */
static int first_difference(const char *got, const char *want, char *msg, size_t cap) {
    if (strcmp(got, want) == 0)
        return 0;
    int line = 1;
    const char *g = got, *w = want;
    for (;;) {
        const char *ge = strchr(g, '\n'), *we = strchr(w, '\n');
        size_t gl = ge ? (size_t)(ge - g) : strlen(g), wl = we ? (size_t)(we - w) : strlen(w);
        if (gl != wl || memcmp(g, w, gl) != 0 || !ge != !we) {
            /* from a little before the first differing byte, at most 300 bytes of each */
            size_t col = 0;
            while (col < gl && col < wl && g[col] == w[col])
                col++;
            size_t from = col > 100 ? col - 100 : 0;
            size_t gn = gl - from > 300 ? 300 : gl - from, wn = wl - from > 300 ? 300 : wl - from;
            snprintf(msg, cap, "line %d, byte %zu:\n  got:  %s%.*s\n  want: %s%.*s", line, col + 1,
                     from ? "..." : "", (int)gn, g + from, from ? "..." : "", (int)wn, w + from);
            return line;
        }
        if (!ge)
            break;
        g = ge + 1;
        w = we + 1;
        line++;
    }
    snprintf(msg, cap, "line %d: the files differ", line);
    return line;
}

/* Compare (or in update mode, store) one masked output against tests/golden/NAME.EXT. */
static void check_golden(const char *name, const char *ext, char *got) {
    char path[512];
    snprintf(path, sizeof path, GOLDEN_DIR "%s.%s", name, ext);
    char *want = read_all(path);
    if (want)
        want = mask(want, NULL);
    if (update_mode()) {
        if (!want || strcmp(want, got) != 0) {
            write_all(path, got);
            printf("golden: %s %s\n", want ? "updated" : "created", path);
        }
    } else if (!want) {
        free(got);
        fail_msg("%s is missing; create it with STEPSIM_UPDATE_GOLDEN=1 ctest -R stepsim.golden", path);
    } else {
        char msg[1200];
        if (first_difference(got, want, msg, sizeof msg)) {
            free(got);
            free(want);
            fail_msg("%s differs from the output, %s\n(if the change is intended: STEPSIM_UPDATE_GOLDEN=1 "
                     "ctest -R stepsim.golden, then review git diff tests/golden)",
                     path, msg);
        }
    }
    free(want);
    free(got);
}

static void golden_test(void **state) {
    const golden_case_t *c = *state;
    char journal[256];
    snprintf(journal, sizeof journal, "%s/stepsim_golden_%ld_%s.jsonl",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid(), c->name);
    remove(journal);

    char buf[1024];
    snprintf(buf, sizeof buf, "%s", c->args);
    const char *argv[CLI_RUN_MAX_ARGS] = {0};
    int argc = 0, has_out = 0;
    for (char *tok = strtok(buf, " "); tok && argc < CLI_RUN_MAX_ARGS; tok = strtok(NULL, " ")) {
        if (strcmp(tok, "@OUT@") == 0) {
            argv[argc++] = journal;
            has_out = 1;
        } else {
            argv[argc++] = tok;
        }
    }
    cli_run_t r = cli_run_argv(argc, argv);
    char *lines = has_out ? read_all(journal) : NULL;
    remove(journal);
    if (r.rc != 0 || r.err[0])
        fail_msg("stepsim %s: exit %d, stderr: %.600s", c->args, r.rc, r.err);
    if (has_out && !lines)
        fail_msg("stepsim %s wrote no %s", c->args, journal);
    free(r.err);
    check_golden(c->name, "json", mask(r.out, has_out ? journal : NULL));
    if (has_out)
        check_golden(c->name, "jsonl", mask(lines, journal));
}

int main(void) {
    /* The outputs echo input paths as given: run from the source root, with relative paths. */
    if (chdir(STEPSIM_SOURCE_DIR) != 0) {
        fprintf(stderr, "test_golden: cannot chdir to %s\n", STEPSIM_SOURCE_DIR);
        return 1;
    }
    enum { N = sizeof cases / sizeof cases[0] };
    struct CMUnitTest tests[N];
    for (size_t i = 0; i < N; i++) {
        memset(&tests[i], 0, sizeof tests[i]);
        tests[i].name = cases[i].name;
        tests[i].test_func = golden_test;
        tests[i].initial_state = (void *)&cases[i];
    }
    return _cmocka_run_group_tests("stepsim.golden", tests, N, NULL, NULL);
}
