/*
 * Fuzz UTF-8 validation and repair (common/utf8.c), against a validator
 * written here from RFC 3629's grammar: utf8_valid() must agree with it,
 * utf8_sanitize() must return valid UTF-8, leave valid input unchanged
 * and replace each bad byte with exactly one U+FFFD.  And the text made
 * inert for a terminal (common/termtext.c), which decodes UTF-8 too: its
 * output is UTF-8 with no control character but tab (and newline when
 * asked), within its buffer, and input with no byte to escape stays as it
 * is.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "termtext.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int
tail(uint8_t c)
{
	return c >= 0x80 && c <= 0xbf;
}

/* RFC 3629 section 4: the length of the sequence at p, or 0. */
static size_t
rfc3629_seq(const uint8_t *p, size_t n)
{
	uint8_t c = p[0];

	if (c <= 0x7f)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return n >= 2 && tail(p[1]) ? 2 : 0;
	if (n < 3 || !tail(p[2]))
		return 0;
	if (c == 0xe0)
		return p[1] >= 0xa0 && p[1] <= 0xbf ? 3 : 0;
	if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef)
		return tail(p[1]) ? 3 : 0;
	if (c == 0xed)
		return p[1] >= 0x80 && p[1] <= 0x9f ? 3 : 0;
	if (n < 4 || !tail(p[3]))
		return 0;
	if (c == 0xf0)
		return p[1] >= 0x90 && p[1] <= 0xbf ? 4 : 0;
	if (c >= 0xf1 && c <= 0xf3)
		return tail(p[1]) ? 4 : 0;
	if (c == 0xf4)
		return p[1] >= 0x80 && p[1] <= 0x8f ? 4 : 0;
	return 0;
}

static void
check_termtext(const uint8_t *data, size_t size, size_t bad, int flags)
{
	char small[17], *out;
	size_t cap = size * 6 + 1, n, i, plain = 1;

	out = malloc(cap);
	fuzz_check(out != NULL, "malloc");
	n = termtext((const char *)data, size, flags, out, cap);
	fuzz_check(n < cap && out[n] == '\0' && strlen(out) == n,
	    "termtext: length or NUL");
	fuzz_check(utf8_valid(out, n), "termtext: output is not UTF-8");
	for (i = 0; i < n; i++) {
		uint8_t c = (uint8_t)out[i];

		fuzz_check(c >= 0x20 || c == '\t' ||
		               (c == '\n' && (flags & TERMTEXT_LINES)),
		    "termtext: a control character went through");
		fuzz_check(c != 0x7f, "termtext: DEL went through");
		fuzz_check(
		    !(c == 0xc2 && i + 1 < n && (uint8_t)out[i + 1] >= 0x80 &&
		        (uint8_t)out[i + 1] <= 0x9f),
		    "termtext: a C1 control went through");
	}
	for (i = 0; i < size; i++)
		if (data[i] < 0x20 || data[i] >= 0x7f)
			plain = 0;
	if (plain && bad == 0)
		fuzz_check(n == size && memcmp(out, data, size) == 0,
		    "termtext: plain text changed");
	/* A small buffer: cut, never overrun (ASan), always terminated. */
	n = termtext((const char *)data, size, flags, small, sizeof small);
	fuzz_check(n < sizeof small && small[n] == '\0', "termtext: cut");
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t i = 0, n, bad = 0, outlen;
	char *out;
	int valid;

	while (i < size) {
		if ((n = rfc3629_seq(data + i, size - i)) == 0) {
			bad++;
			i++;
		} else
			i += n;
	}
	valid = utf8_valid((const char *)data, size);
	fuzz_check(valid == (bad == 0), "utf8_valid disagrees with RFC 3629");

	out = utf8_sanitize((const char *)data, size, &outlen);
	fuzz_check(out[outlen] == '\0', "sanitized not NUL-terminated");
	fuzz_check(utf8_valid(out, outlen), "sanitized output is not UTF-8");
	fuzz_check(outlen == size + 2 * bad, "not one U+FFFD per bad byte");
	if (bad == 0)
		fuzz_check(memcmp(out, data, size) == 0, "valid input changed");
	free(out);
	check_termtext(data, size, bad, 0);
	check_termtext(data, size, bad, TERMTEXT_LINES);
	return 0;
}
