/* utf8.h - UTF-8 validation (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
 * Contract: utf8_invalid_at returns the offset of the first byte of s[0..len) that does not start a
 * valid sequence, or len if all of s is valid UTF-8. utf8_sanitize copies s into a new string (caller
 * frees) with each invalid byte replaced by U+FFFD; NULL if out of memory. */
#ifndef STEPSIM_UTF8_H
#define STEPSIM_UTF8_H

#include <stddef.h>

size_t utf8_invalid_at(const char *s, size_t len);
char *utf8_sanitize(const char *s);

#endif
