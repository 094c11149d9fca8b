/* stepsim/test_alloc_fail.c - allocation failure never lies (the hook of alloc/include/alloc.h).
 *
 * For each command on a small fixture: run it once normally in a forked child (its output, its
 * sweep journal and N, the number of allocations it makes), then for k = 1..N run it again in a
 * forked child whose k-th allocation fails. Every such run must either
 *   - exit 1 with exactly one stderr line, which says "out of memory" (and, for a sweep, leave a
 *     journal whose every line is a whole line of the normal run's journal), or
 *   - exit 0 with stdout, stderr and journal byte-identical to the normal run (an allocation whose
 *     failure the code survives without changing the result),
 * never a signal, never exit 0 with a different output, never another exit code. "wall_time_s"
 * (host seconds) is masked as in stepsim.golden. Allocations inside igraph and the C library are
 * not counted and not failed (alloc.h). The counts per command are printed. Each command is its own
 * ctest entry (stepsim.alloc_fail_CASE), so that ctest -j spreads the about 9,700 runs over the cores. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "cli.h"

#define FIX STEPSIM_FIXTURE_DIR "/"
#define SMALL FIX "golden/small.json"
#define MAX_ARGS 16
#define MAX_SHOWN 8 /* lies printed per command (all are counted) */

typedef struct fail_case {
    const char *name;
    const char *args; /* split at spaces; "@OUT@" is the output file (journal, trace) or directory
                       * (Chakra files: compared as a listing of names and hashes, temporary files
                       * included, so a failed run may leave only whole files of the normal run's) */
} fail_case_t;

static const fail_case_t cases[] = {
    {"estimate", "estimate " SMALL " --json"},
    {"search", "search " SMALL " --top 5 --json"},
    {"topo", "topo " SMALL " --json"},
    {"topo_graphml", "topo --topology " FIX "topo/small.graphml --json"},
    {"collective", "collective " SMALL " --json"},
    {"run", "run " SMALL " --json"},
    {"run_trace", "run " FIX "scenarios/alloc_trace.json --trace @OUT@ --json"},
    {"validate", "validate --measured " FIX "measured/three_rows.csv --json"},
    {"sweep", "sweep " FIX "sweep/alloc_fail.json --out @OUT@ --json"},
    /* @OUT@ a directory: the Chakra files, written on a thread while the next rank is made */
    {"run_export", "run " SMALL " --collapse off --export-et @OUT@ --json"},
};

typedef struct child {
    int exited, code, sig;
    uint64_t allocs; /* allocations the command asked for */
    char *out, *err, *journal;
} child_t;

static char journal_path[256];

static char *slurp(FILE *f) {
    fflush(f);
    long n = ftell(f);
    char *buf = malloc(n > 0 ? (size_t)n + 1 : 1);
    if (!buf)
        abort();
    rewind(f);
    size_t got = n > 0 ? fread(buf, 1, (size_t)n, f) : 0;
    buf[got] = '\0';
    fclose(f);
    return buf;
}

/* A directory's files, one line each in name order: the name and an FNV-1a hash of its bytes (NULL
 * if path is no directory). */
static char *slurp_dir(const char *path) {
    struct dirent **e = NULL;
    const int n = scandir(path, &e, NULL, alphasort);
    if (n < 0)
        return NULL;
    char *out = calloc((size_t)n + 1, 300);
    if (!out)
        abort();
    for (int i = 0; i < n; i++) {
        char file[600];
        snprintf(file, sizeof file, "%s/%s", path, e[i]->d_name);
        FILE *f = e[i]->d_name[0] != '.' || strlen(e[i]->d_name) > 2 ? fopen(file, "rb") : NULL;
        if (f) {
            uint64_t h = 14695981039346656037ULL;
            for (int ch; (ch = fgetc(f)) != EOF;)
                h = (h ^ (uint64_t)ch) * 1099511628211ULL;
            fclose(f);
            snprintf(out + strlen(out), 300, "%.200s %016llx\n", e[i]->d_name, (unsigned long long)h);
        }
        free(e[i]);
    }
    free(e);
    return out;
}

static char *slurp_path(const char *path) {
    char *listing = slurp_dir(path);
    if (listing)
        return listing;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    return slurp(f);
}

/* Remove the output of a run: a file, or a directory and the files in it. */
static void remove_out(const char *path) {
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));) {
        char file[600];
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlink(file);
    }
    if (d) {
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* Replace the value after every "KEY": (up to the next ',', '}' or newline) by "@". */
static char *mask_key(char *s, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const size_t plen = strlen(pat);
    char *o = s;
    const char *p = s;
    for (const char *hit; (hit = strstr(p, pat));) {
        const char *end = hit + plen;
        while (*end && *end != ',' && *end != '}' && *end != '\n')
            end++;
        memmove(o, p, (size_t)(hit + plen - p));
        o += hit + plen - p;
        *o++ = '@';
        p = end;
    }
    memmove(o, p, strlen(p) + 1);
    return s;
}

/* Run the case in a forked child whose k-th allocation fails (k = 0: none). */
static child_t run_child(const fail_case_t *c, uint64_t k) {
    child_t r = {0};
    remove_out(journal_path);
    FILE *out = tmpfile(), *err = tmpfile();
    int pfd[2];
    if (!out || !err || pipe(pfd) != 0)
        abort();
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0)
        abort();
    if (pid == 0) {
        char buf[512], *argv[MAX_ARGS + 2];
        int argc = 0;
        argv[argc++] = (char *)"stepsim";
        snprintf(buf, sizeof buf, "%s", c->args);
        for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && argc <= MAX_ARGS;
             t = strtok_r(NULL, " ", &save))
            argv[argc++] = strcmp(t, "@OUT@") == 0 ? journal_path : t;
        argv[argc] = NULL;
        close(pfd[0]);
        const uint64_t base = alloc_count();
        alloc_fail_at(k);
        const int rc = cli_main(argc, argv, out, err);
        const uint64_t n = alloc_count() - base;
        fflush(out);
        fflush(err);
        if (write(pfd[1], &n, sizeof n) != (ssize_t)sizeof n)
            _exit(99);
        _exit(rc);
    }
    close(pfd[1]);
    if (read(pfd[0], &r.allocs, sizeof r.allocs) != (ssize_t)sizeof r.allocs)
        r.allocs = 0;
    close(pfd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        ;
    r.exited = WIFEXITED(st);
    r.code = r.exited ? WEXITSTATUS(st) : -1;
    r.sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    r.out = mask_key(slurp(out), "wall_time_s");
    r.err = slurp(err);
    r.journal = slurp_path(journal_path);
    if (r.journal)
        mask_key(r.journal, "wall_time_s");
    return r;
}

static void child_free(child_t *r) {
    free(r->out);
    free(r->err);
    free(r->journal);
}

static int same(const char *a, const char *b) {
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Every line of part (all ending in '\n') is a line of whole. */
static int whole_lines_of(const char *part, const char *whole) {
    if (!part)
        return 1;
    for (const char *p = part; *p;) {
        const char *e = strchr(p, '\n');
        if (!e)
            return 0;
        const size_t n = (size_t)(e - p) + 1;
        int found = 0;
        for (const char *w = whole; w && *w && !found;) {
            const char *we = strchr(w, '\n');
            const size_t wn = we ? (size_t)(we - w) + 1 : strlen(w);
            found = wn == n && memcmp(w, p, n) == 0;
            w += wn;
        }
        if (!found)
            return 0;
        p = e + 1;
    }
    return 1;
}

/* NULL if run r with allocation k failed is honest against the normal run, else why not. */
static const char *lie(const child_t *r, const child_t *normal) {
    static char why[400];
    if (r->sig) {
        snprintf(why, sizeof why, "killed by signal %d; stderr: %.200s", r->sig, r->err);
        return why;
    }
    if (r->code == 0) {
        if (!same(r->out, normal->out))
            return "exit 0 with a different stdout";
        if (!same(r->err, normal->err))
            return "exit 0 with a different stderr";
        if (!same(r->journal, normal->journal))
            return "exit 0 with a different journal";
        return NULL;
    }
    const char *nl = strchr(r->err, '\n');
    if (r->code != 1 || !nl || nl[1] != '\0' || !strstr(r->err, "out of memory")) {
        snprintf(why, sizeof why, "exit %d, stderr: %.300s", r->code, r->err);
        return why;
    }
    if (!whole_lines_of(r->journal, normal->journal))
        return "exit 1 leaving a journal line the normal run does not write";
    return NULL;
}

static void check_case(const fail_case_t *c) {
    child_t normal = run_child(c, 0);
    assert_int_equal(normal.code, 0);
    assert_true(normal.allocs > 0);
    uint64_t oom = 0, same_out = 0, lies = 0;
    for (uint64_t k = 1; k <= normal.allocs; k++) {
        child_t r = run_child(c, k);
        const char *why = lie(&r, &normal);
        if (why) {
            if (lies < MAX_SHOWN)
                print_message("%s: allocation %llu of %llu: %s\n", c->name, (unsigned long long)k,
                              (unsigned long long)normal.allocs, why);
            lies++;
        } else if (r.code == 0) {
            same_out++;
        } else {
            oom++;
        }
        child_free(&r);
    }
    print_message("%-10s %6llu allocations: %llu exit 1 out of memory, %llu exit 0 identical, %llu lies\n",
                  c->name, (unsigned long long)normal.allocs, (unsigned long long)oom,
                  (unsigned long long)same_out, (unsigned long long)lies);
    child_free(&normal);
    assert_int_equal(lies, 0);
    assert_true(oom > 0); /* the hook did fail something */
}

static void test_case(void **state) {
    check_case((const fail_case_t *)*state);
}

/* The hook itself: the armed allocation fails once, the others succeed, both are counted. */
static void test_hook(void **state) {
    (void)state;
    const uint64_t calls = alloc_count(), failed = alloc_failures();
    alloc_fail_at(2);
    char *a = alloc_malloc(8), *b = alloc_strdup("x"), *c = alloc_calloc(2, 4);
    void *d = alloc_realloc(NULL, 4);
    assert_non_null(a);
    assert_null(b);
    assert_non_null(c);
    assert_non_null(d);
    assert_int_equal(alloc_count() - calls, 4);
    assert_int_equal(alloc_failures() - failed, 1);
    alloc_fail_at(1);
    alloc_fail_at(0); /* disarmed */
    b = alloc_strdup("y");
    assert_string_equal(b, "y");
    free(a);
    free(b);
    free(c);
    free(d);
}

/* The case list equals the one ctest runs (STEPSIM_ALLOC_FAIL_CASES, space-separated, from
 * tests/CMakeLists.txt, one ctest entry per case): a case added here and not there would never run. */
static void test_cases_registered(void **state) {
    (void)state;
    char reg[512];
    snprintf(reg, sizeof reg, " %s ", STEPSIM_ALLOC_FAIL_CASES);
    size_t listed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char word[64];
        snprintf(word, sizeof word, " %s ", cases[i].name);
        if (!strstr(reg, word))
            print_message("case %s is not registered in tests/CMakeLists.txt\n", cases[i].name);
        listed += strstr(reg, word) != NULL;
    }
    size_t words = 0;
    for (const char *p = reg; *p; p++)
        words += p[0] != ' ' && (p[1] == ' ' || p[1] == '\0');
    assert_int_equal(listed, sizeof cases / sizeof cases[0]);
    assert_int_equal(words, listed);
}

/* Arguments: none, the hook and the case list; CASE, the hook and that command (one ctest entry per
 * command, so that ctest -j spreads them); all, every command; CASE K, the command alone failing its
 * K-th allocation, its exit code, stdout and stderr printed (to see what a lie looks like). */
int main(int argc, char **argv) {
    if (argc == 3) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            if (strcmp(argv[1], cases[i].name) == 0) {
                snprintf(journal_path, sizeof journal_path, "/tmp/stepsim_alloc_show.jsonl");
                child_t r = run_child(&cases[i], strtoull(argv[2], NULL, 10));
                printf("exit %d signal %d\n--- stdout\n%s--- stderr\n%s--- journal\n%s", r.code, r.sig, r.out,
                       r.err, r.journal ? r.journal : "");
                remove_out(journal_path);
                child_free(&r);
                return 0;
            }
        return 1;
    }
    char dir[] = "/tmp/stepsim_alloc_XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    snprintf(journal_path, sizeof journal_path, "%s/journal.jsonl", dir);
    struct CMUnitTest tests[2 + sizeof cases / sizeof cases[0]];
    size_t n = 0;
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_hook);
    if (argc < 2)
        tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_cases_registered);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (argc == 2 && (strcmp(argv[1], "all") == 0 || strcmp(argv[1], cases[i].name) == 0))
            tests[n++] = (struct CMUnitTest){cases[i].name, test_case, NULL, NULL, (void *)&cases[i]};
    if (argc == 2 && n == 1) {
        fprintf(stderr, "test_stepsim_alloc_fail: %s: no such case; allowed: all, %s\n", argv[1],
                STEPSIM_ALLOC_FAIL_CASES);
        rmdir(dir);
        return 2;
    }
    const int rc = _cmocka_run_group_tests("stepsim.alloc_fail", tests, n, NULL, NULL);
    remove_out(journal_path);
    rmdir(dir);
    return rc;
}
