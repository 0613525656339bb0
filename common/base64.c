/*
 * Base64 (RFC 4648, with padding).  None of the project's libraries
 * exposes one, so it is here, small and tested.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "xmalloc.h"

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Encode; NUL-terminated, its length in *outlen. */
char *
base64_encode(const void *data, size_t len, size_t *outlen)
{
	const unsigned char *p = data;
	char *out, *o;
	uint32_t v;
	size_t i;

	o = out = xmalloc((len + 2) / 3 * 4 + 1);
	for (i = 0; i + 2 < len; i += 3) {
		v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		*o++ = b64[v >> 18];
		*o++ = b64[(v >> 12) & 63];
		*o++ = b64[(v >> 6) & 63];
		*o++ = b64[v & 63];
	}
	if (i < len) {
		v = (uint32_t)p[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)p[i + 1] << 8;
		*o++ = b64[v >> 18];
		*o++ = b64[(v >> 12) & 63];
		*o++ = i + 1 < len ? b64[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	*outlen = (size_t)(o - out);
	return out;
}

static int
b64_value(int c)
{
	const char *p;

	if (c == '\0' || (p = strchr(b64, c)) == NULL)
		return -1;
	return (int)(p - b64);
}

/*
 * Decode; NULL on anything but canonical base64 (whitespace is not
 * allowed).  The result is NUL-terminated for convenience.
 */
void *
base64_decode(const char *s, size_t len, size_t *outlen)
{
	unsigned char *out, *o;
	int v[4], j;
	size_t i, pad = 0;

	if (len % 4 != 0)
		return NULL;
	if (len > 0 && s[len - 1] == '=')
		pad++;
	if (len > 1 && s[len - 2] == '=')
		pad++;
	o = out = xmalloc(len / 4 * 3 + 1);
	for (i = 0; i < len; i += 4) {
		for (j = 0; j < 4; j++) {
			if (i + (size_t)j >= len - pad) {
				v[j] = 0;
				continue;
			}
			if ((v[j] = b64_value((unsigned char)s[i + j])) == -1) {
				free(out);
				return NULL;
			}
		}
		*o++ = (unsigned char)(v[0] << 2 | v[1] >> 4);
		*o++ = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
		*o++ = (unsigned char)((v[2] & 3) << 6 | v[3]);
	}
	/* Canonical only: the bits the padding leaves over are zero. */
	if ((pad == 1 && (v[2] & 3) != 0) || (pad == 2 && (v[1] & 15) != 0)) {
		free(out);
		return NULL;
	}
	*outlen = (size_t)(o - out) - pad;
	out[*outlen] = '\0';
	return out;
}
