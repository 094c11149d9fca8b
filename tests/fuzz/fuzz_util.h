/* fuzz_util.h - shared by the libFuzzer targets of tests/fuzz (one target per input surface).
 *
 * Each target hands libFuzzer's bytes to the project's own reader exactly as a user's file reaches
 * it: the bytes are written to a file in a private temporary directory and the command line
 * (cli_main, in-process) or the loader is called on that path. fuzz_cli() also checks the command
 * line's contract on every input and aborts (a crash libFuzzer saves) when it is broken: the exit
 * code is 0, 1, 2 or 3, and a failure prints exactly one non-empty line on stderr.
 */
#ifndef STEPSIM_FUZZ_UTIL_H
#define STEPSIM_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* A file NAME in this process's temporary directory ($TMPDIR or /tmp), made once. */
static inline const char *fuzz_path(const char *name) {
    static char dir[512];
    static char paths[8][600];
    static const char *names[8];
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/stepsim-fuzz.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            perror("fuzz: mkdtemp");
            abort();
        }
    }
    for (int i = 0; i < 8; i++) {
        if (names[i] && strcmp(names[i], name) == 0)
            return paths[i];
        if (!names[i]) {
            names[i] = name;
            snprintf(paths[i], sizeof paths[i], "%s/%s", dir, name);
            return paths[i];
        }
    }
    abort();
}

/* Replace the file at path by exactly data[0..size-1]. */
static inline void fuzz_write(const char *path, const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror("fuzz: write");
        abort();
    }
}

/* Run one stepsim invocation (argv NULL-terminated, argv[0] the program) with stdout discarded and
 * stderr captured; abort if the exit code or the diagnostics break the contract. Returns the code. */
static inline int fuzz_cli(char **argv) {
    static FILE *devnull;
    int argc = 0;
    while (argv[argc])
        argc++;
    if (!devnull && !(devnull = fopen("/dev/null", "w")))
        abort();
    char *err_text = NULL;
    size_t err_len = 0;
    FILE *err = open_memstream(&err_text, &err_len);
    if (!err)
        abort();
    int rc = cli_main(argc, argv, devnull, err);
    fclose(err);
    size_t lines = 0;
    for (size_t i = 0; i < err_len; i++)
        lines += err_text[i] == '\n';
    int bad = rc < 0 || rc > 3;
    if (rc != 0 && (lines != 1 || err_len < 2 || err_text[err_len - 1] != '\n'))
        bad = 1;
    if (bad) {
        fprintf(stderr, "fuzz: contract broken: exit %d with %zu stderr line(s):\n%s\n", rc, lines,
                err_text ? err_text : "");
        abort();
    }
    free(err_text);
    return rc;
}

#endif
