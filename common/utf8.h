/* UTF-8 repair for bytes that must travel in JSON strings. */
#ifndef UTF8_H
#define UTF8_H

#include <stddef.h>

char *utf8_sanitize(const char *, size_t, size_t *);
int utf8_valid(const char *, size_t);

#endif
