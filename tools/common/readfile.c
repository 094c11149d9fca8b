/* readfile.c - bounded whole-file reads (see readfile.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "readfile.h"
#include "alloc.h"

/* Open path for reading: a directory is EISDIR; a regular file's size into *reg_size (else -1). */
static FILE *open_input(const char *path, long long *reg_size) {
    FILE *f = fopen(path, "rb");
    struct stat st;
    *reg_size = -1;
    if (!f)
        return NULL;
    if (fstat(fileno(f), &st) != 0) {
        const int e = errno;
        fclose(f);
        errno = e;
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        fclose(f);
        errno = EISDIR;
        return NULL;
    }
    if (S_ISREG(st.st_mode))
        *reg_size = (long long)st.st_size;
    return f;
}

int readfile_bounded(const char *path, size_t limit_bytes, char **out, size_t *len, long long *size_bytes) {
    long long reg = -1;
    *out = NULL;
    *size_bytes = -1;
    FILE *f = open_input(path, &reg);
    if (!f)
        return READFILE_ERRNO;
    if (reg > (long long)limit_bytes) {
        fclose(f);
        *size_bytes = reg;
        return READFILE_TOO_LARGE;
    }
    /* A regular file: its size plus one byte to see that it did not grow; else grow to the limit. */
    size_t cap = reg >= 0 ? (size_t)reg + 2 : 65536, n = 0;
    char *buf = alloc_malloc(cap);
    int rc = READFILE_OK;
    while (buf) {
        n += fread(buf + n, 1, cap - 1 - n, f);
        if (n > limit_bytes) {
            rc = READFILE_TOO_LARGE;
            break;
        }
        if (n < cap - 1)
            break; /* end of file or error */
        size_t want = cap * 2 > limit_bytes + 2 ? limit_bytes + 2 : cap * 2;
        char *bigger = alloc_realloc(buf, want);
        if (!bigger)
            free(buf);
        buf = bigger;
        cap = want;
    }
    const int bad = ferror(f);
    fclose(f);
    if (!buf) {
        errno = ENOMEM;
        return READFILE_ERRNO;
    }
    if (rc == READFILE_OK && bad) {
        free(buf);
        errno = EIO;
        return READFILE_ERRNO;
    }
    if (rc != READFILE_OK) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return READFILE_OK;
}

int readfile_check_size(const char *path, size_t limit_bytes, long long *size_bytes) {
    long long reg = -1;
    *size_bytes = -1;
    FILE *f = open_input(path, &reg);
    if (!f)
        return READFILE_ERRNO;
    int rc = READFILE_OK;
    if (reg >= 0) {
        if (reg > (long long)limit_bytes) {
            *size_bytes = reg;
            rc = READFILE_TOO_LARGE;
        }
    } else {
        char chunk[65536];
        size_t n = 0, got;
        while (n <= limit_bytes && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
            n += got;
        if (n > limit_bytes)
            rc = READFILE_TOO_LARGE;
    }
    fclose(f);
    return rc;
}

const char *readfile_limit_text(size_t limit_bytes, char *buf, size_t size) {
    if (limit_bytes >= ((size_t)1 << 30) && limit_bytes % ((size_t)1 << 30) == 0)
        snprintf(buf, size, "%zu GiB", limit_bytes >> 30);
    else if (limit_bytes >= ((size_t)1 << 20) && limit_bytes % ((size_t)1 << 20) == 0)
        snprintf(buf, size, "%zu MiB", limit_bytes >> 20);
    else
        snprintf(buf, size, "%zu bytes", limit_bytes);
    return buf;
}
