/*
 * Text for a terminal.  What a sandbox prints, and what clients name
 * things, reaches the operator's terminal through the CLI (logs, ls, top)
 * and the server's own log lines; a terminal obeys the control sequences
 * in it (set the window title, write the clipboard with OSC 52, move the
 * cursor and erase a line, so as to forge one).  Here every control
 * character is written as an escape instead, which no terminal obeys:
 * C0 but tab (and newline when TERMTEXT_LINES) and DEL as \xNN, the C1
 * controls (U+0080-U+009F, which some terminals take as ESC sequences) and
 * the bidirectional overrides (which reorder what a line shows) as \uNNNN,
 * and every byte that is not UTF-8 as \xNN.  Backslashes stay as they are:
 * text can spell an escape, never be one.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "termtext.h"

/*
 * The code point of the UTF-8 sequence at s (at most n bytes), and its
 * length in *len; -1 when the bytes there are no well-formed sequence
 * (RFC 3629: no overlong form, no surrogate, nothing above U+10FFFF).
 */
static long
utf8_next(const unsigned char *s, size_t n, size_t *len)
{
	static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
	uint32_t cp;
	size_t k, i;

	if (s[0] < 0x80) {
		*len = 1;
		return s[0];
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		k = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		k = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		k = 4;
	else
		return -1;
	if (n < k)
		return -1;
	cp = s[0] & (0x7f >> k);
	for (i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*len = k;
	return (long)cp;
}

/* Whether code point cp is shown escaped. */
static int
escaped(long cp, int flags)
{
	if (cp == '\t' || (cp == '\n' && (flags & TERMTEXT_LINES)))
		return 0;
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||
	       (cp >= 0x200e && cp <= 0x200f) ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/*
 * s (n bytes) made inert, into out (outlen bytes, NUL-terminated; an
 * escape that does not fit whole is left out, and so is all after it):
 * the length written.
 */
size_t
termtext(const char *s, size_t n, int flags, char *out, size_t outlen)
{
	const unsigned char *p = (const unsigned char *)s;
	char esc[8];
	size_t i = 0, o = 0, len, elen;
	long cp;

	if (outlen == 0)
		return 0;
	while (i < n) {
		if ((cp = utf8_next(p + i, n - i, &len)) == -1) {
			elen =
			    (size_t)snprintf(esc, sizeof esc, "\\x%02x", p[i]);
			len = 1;
		} else if (escaped(cp, flags))
			elen = (size_t)snprintf(esc, sizeof esc,
			    cp < 0x80 ? "\\x%02lx" : "\\u%04lx", cp);
		else {
			memcpy(esc, p + i, len);
			elen = len;
		}
		if (o + elen >= outlen)
			break;
		memcpy(out + o, esc, elen);
		o += elen;
		i += len;
	}
	out[o] = '\0';
	return o;
}

/* s (n bytes) made inert, written to f. */
void
termtext_fputs(const char *s, size_t n, int flags, FILE *f)
{
	char buf[4096 + 8];
	size_t chunk, k;

	/* At most 4 bytes of output for each byte in: a chunk fits. */
	while (n > 0) {
		chunk = n > 1000 ? 1000 : n;
		/* Never cut a sequence in two: back up to its first byte. */
		for (k = 0; k < 3 && chunk < n &&
		            ((unsigned char)s[chunk] & 0xc0) == 0x80;
		     k++)
			chunk--;
		termtext(s, chunk, flags, buf, sizeof buf);
		fputs(buf, f);
		s += chunk;
		n -= chunk;
	}
}
