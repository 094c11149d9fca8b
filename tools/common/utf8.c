/* utf8.c - UTF-8 validation and repair (see utf8.h). */
#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "alloc.h"

/* Length of the valid sequence at s (at most n bytes available), or 0 if it is not one. */
static size_t seq_len(const unsigned char *s, size_t n) {
    const unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

size_t utf8_invalid_at(const char *s, size_t len) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        const size_t k = seq_len(u + i, len - i);
        if (!k)
            return i;
        i += k;
    }
    return len;
}

char *utf8_sanitize(const char *s) {
    const size_t len = strlen(s);
    char *out = alloc_malloc(3 * len + 1); /* each byte becomes at most the 3 bytes of U+FFFD */
    if (!out)
        return NULL;
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, o = 0;
    while (i < len) {
        const size_t k = seq_len(u + i, len - i);
        if (k) {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    out[o] = '\0';
    return out;
}
