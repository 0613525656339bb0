/* Base64 (RFC 4648) for binary content in JSON. */
#ifndef BASE64_H
#define BASE64_H

#include <stddef.h>

char *base64_encode(const void *, size_t, size_t *);
void *base64_decode(const char *, size_t, size_t *);

#endif
