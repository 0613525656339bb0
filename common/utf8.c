/* UTF-8 repair: program output is bytes, JSON strings are UTF-8. */
#include <stdint.h>
#include <string.h>

#include "utf8.h"
#include "xmalloc.h"

/* Length of a valid sequence at p (at most n bytes), or 0. */
static size_t
utf8_seq(const unsigned char *p, size_t n)
{
	uint32_t cp;
	size_t len, i;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/*
 * A copy of buf with each invalid byte replaced by U+FFFD; NUL-terminated,
 * its length in *outlen.
 */
char *
utf8_sanitize(const char *buf, size_t len, size_t *outlen)
{
	const unsigned char *p = (const unsigned char *)buf;
	char *out, *o;
	size_t i = 0, n;

	o = out = xmalloc(len * 3 + 1);
	while (i < len) {
		if ((n = utf8_seq(p + i, len - i)) == 0) {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(o, p + i, n);
		o += n;
		i += n;
	}
	*o = '\0';
	*outlen = (size_t)(o - out);
	return out;
}

/* Is the buffer valid UTF-8 (no overlongs, surrogates or > U+10FFFF)? */
int
utf8_valid(const char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)buf;
	size_t i = 0, n;

	while (i < len) {
		if ((n = utf8_seq(p + i, len - i)) == 0)
			return 0;
		i += n;
	}
	return 1;
}
