/* Unit tests of UTF-8 repair (common/utf8.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "utf8.h"

#define FFFD "\xef\xbf\xbd"

/*
 * Sanitize len bytes of in, copied to a buffer of exactly that size so
 * that any read past the end shows under AddressSanitizer.
 */
static char *
sanitize(const char *in, size_t len, size_t *outlen)
{
	char *copy, *out;

	copy = malloc(len == 0 ? 1 : len);
	cr_assert_not_null(copy);
	memcpy(copy, in, len);
	*outlen = (size_t)-1;
	out = utf8_sanitize(copy, len, outlen);
	free(copy);
	cr_assert_not_null(out);
	cr_assert_neq(*outlen, (size_t)-1, "outlen not set");
	cr_assert_eq(out[*outlen], '\0', "output not NUL-terminated");
	return out;
}

/* sanitize(in) must be exactly want (both with explicit lengths). */
static void
expect_sanitized(const char *in, size_t inlen, const char *want, size_t wantlen,
    const char *what)
{
	size_t outlen;
	char *out;

	out = sanitize(in, inlen, &outlen);
	cr_expect_eq(outlen, wantlen, "%s: %zu bytes out, want %zu", what,
	    outlen, wantlen);
	if (outlen == wantlen)
		cr_expect(
		    memcmp(out, want, wantlen) == 0, "%s: wrong bytes", what);
	free(out);
}

#define EXPECT(in, want, what)                                                 \
	expect_sanitized(in, sizeof in - 1, want, sizeof want - 1, what)
#define UNCHANGED(in, what) EXPECT(in, in, what)

/* Independent strict validator (RFC 3629, Table 3-7 of Unicode). */
static int
valid_utf8(const unsigned char *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = p[i];
		unsigned char lo = 0x80, hi = 0xbf;
		size_t k, len;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			len = 2;
		else if (c >= 0xe0 && c <= 0xef)
			len = 3;
		else if (c >= 0xf0 && c <= 0xf4)
			len = 4;
		else
			return 0;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
		else if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
		if (i + len > n)
			return 0;
		if (p[i + 1] < lo || p[i + 1] > hi)
			return 0;
		for (k = 2; k < len; k++)
			if (p[i + k] < 0x80 || p[i + k] > 0xbf)
				return 0;
		i += len;
	}
	return 1;
}

Test(utf8, ascii_is_unchanged)
{
	UNCHANGED("hello, world\n\t~\x7f", "ascii");
	UNCHANGED("", "empty");
}

Test(utf8, empty_input_gives_empty_string)
{
	size_t outlen;
	char *out = sanitize("", 0, &outlen);

	cr_assert_eq(outlen, 0);
	cr_assert_str_eq(out, "");
	free(out);
}

Test(utf8, valid_multibyte_sequences_are_unchanged)
{
	UNCHANGED("caf\xc3\xa9", "2-byte e-acute");
	UNCHANGED("\xe2\x82\xac", "3-byte euro sign");
	UNCHANGED("\xf0\x9f\x98\x80", "4-byte emoji");
	UNCHANGED("\xc2\x80", "U+0080, smallest 2-byte");
	UNCHANGED("\xdf\xbf", "U+07FF, largest 2-byte");
	UNCHANGED("\xe0\xa0\x80", "U+0800, smallest 3-byte");
	UNCHANGED("\xed\x9f\xbf", "U+D7FF, just below the surrogates");
	UNCHANGED("\xee\x80\x80", "U+E000, just above the surrogates");
	UNCHANGED("\xef\xbf\xbd", "U+FFFD itself");
	UNCHANGED("\xef\xbf\xbf", "U+FFFF, largest 3-byte");
	UNCHANGED("\xf0\x90\x80\x80", "U+10000, smallest 4-byte");
	UNCHANGED("\xf4\x8f\xbf\xbf", "U+10FFFF, largest code point");
	UNCHANGED("a\xc3\xa9z\xe2\x82\xac\xf0\x9f\x98\x80!", "mixed");
}

Test(utf8, every_lone_high_byte_becomes_replacement_character)
{
	unsigned int b;

	for (b = 0x80; b <= 0xff; b++) {
		char in[1] = {(char)b};
		char in3[3] = {'a', (char)b, 'z'};
		char what[32];

		snprintf(what, sizeof what, "lone byte 0x%02x", b);
		expect_sanitized(in, 1, FFFD, 3, what);
		snprintf(what, sizeof what, "a, 0x%02x, z", b);
		expect_sanitized(in3, 3, "a" FFFD "z", 5, what);
	}
}

Test(utf8, overlong_encodings_are_replaced)
{
	EXPECT("\xc0\x80", FFFD FFFD, "overlong NUL C0 80");
	EXPECT("\xc1\xbf", FFFD FFFD, "overlong U+007F C1 BF");
	EXPECT("\xc0\xaf", FFFD FFFD, "overlong '/' C0 AF");
	EXPECT("\xe0\x80\x80", FFFD FFFD FFFD, "overlong NUL E0 80 80");
	EXPECT("\xe0\x80\xaf", FFFD FFFD FFFD, "overlong '/' E0 80 AF");
	EXPECT("\xe0\x9f\xbf", FFFD FFFD FFFD, "overlong U+07FF E0 9F BF");
	EXPECT("\xf0\x80\x80\x80", FFFD FFFD FFFD FFFD, "overlong F0 80 80 80");
	EXPECT("\xf0\x8f\xbf\xbf", FFFD FFFD FFFD FFFD,
	    "overlong U+FFFF F0 8F BF BF");
}

Test(utf8, surrogates_are_replaced)
{
	EXPECT("\xed\xa0\x80", FFFD FFFD FFFD, "U+D800");
	EXPECT("\xed\xbf\xbf", FFFD FFFD FFFD, "U+DFFF");
	EXPECT("\xed\xa0\xbd\xed\xb8\x80", FFFD FFFD FFFD FFFD FFFD FFFD,
	    "CESU-8 surrogate pair");
}

Test(utf8, code_points_above_max_are_replaced)
{
	EXPECT("\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD, "U+110000");
	EXPECT("\xf5\x80\x80\x80", FFFD FFFD FFFD FFFD, "F5 lead");
	EXPECT("\xf7\xbf\xbf\xbf", FFFD FFFD FFFD FFFD, "F7 lead");
	EXPECT("\xf8\x88\x80\x80\x80", FFFD FFFD FFFD FFFD FFFD, "5-byte form");
	EXPECT("\xfc\x84\x80\x80\x80\x80", FFFD FFFD FFFD FFFD FFFD FFFD,
	    "6-byte form");
}

Test(utf8, truncated_sequences_at_end_are_replaced)
{
	/* Each byte of an incomplete sequence is replaced on its own. */
	EXPECT("\xc3", FFFD, "2-byte lead alone");
	EXPECT("ab\xe2\x82", "ab" FFFD FFFD, "3-byte sequence missing 1");
	EXPECT("ab\xe2", "ab" FFFD, "3-byte sequence missing 2");
	EXPECT("\xf0\x9f\x98", FFFD FFFD FFFD, "4-byte sequence missing 1");
	EXPECT("\xf0\x9f", FFFD FFFD, "4-byte sequence missing 2");
	EXPECT("\xf0", FFFD, "4-byte lead alone");
}

Test(utf8, truncated_sequence_does_not_swallow_what_follows)
{
	EXPECT("\xe2\x82z", FFFD FFFD "z", "3-byte cut by ASCII");
	EXPECT("\xc3\xc3\xa9", FFFD "\xc3\xa9", "lead then valid pair");
	EXPECT("\xf0\x9f\x98\xe2\x82\xac", FFFD FFFD FFFD "\xe2\x82\xac",
	    "cut 4-byte then euro");
	EXPECT("\xe2\x82\x00x", FFFD FFFD "\x00x", "cut by NUL");
}

Test(utf8, stray_continuation_bytes_are_replaced_one_each)
{
	EXPECT("\x80\x80\x80", FFFD FFFD FFFD, "three continuations");
	EXPECT("\xc3\xa9\xa9", "\xc3\xa9" FFFD, "pair plus extra");
}

Test(utf8, embedded_nul_is_kept)
{
	static const char in[] = "a\0b\0\xc3\xa9\0";
	size_t outlen;
	char *out;

	out = sanitize(in, sizeof in - 1, &outlen);
	cr_assert_eq(outlen, sizeof in - 1);
	cr_assert(memcmp(out, in, sizeof in - 1) == 0);
	cr_assert_eq(out[outlen], '\0');
	free(out);
}

Test(utf8, invalid_byte_next_to_nul_keeps_the_nul)
{
	EXPECT("\0\xff\0", "\0" FFFD "\0", "NUL, FF, NUL");
}

Test(utf8, worst_case_growth_fits)
{
	enum { N = 4096 };
	char *in = malloc(N);
	size_t outlen, i;
	char *out;

	cr_assert_not_null(in);
	memset(in, 0xff, N);
	out = sanitize(in, N, &outlen);
	cr_assert_eq(outlen, (size_t)N * 3);
	for (i = 0; i < N; i++)
		cr_assert(memcmp(out + i * 3, FFFD, 3) == 0);
	free(out);
	free(in);
}

Test(utf8, output_of_random_bytes_is_valid_and_stable)
{
	unsigned int seed = 12345;
	int round;

	for (round = 0; round < 2000; round++) {
		unsigned char in[64];
		size_t len = (size_t)(rand_r(&seed) % (int)sizeof in), i;
		size_t outlen, outlen2;
		char *out, *out2;

		for (i = 0; i < len; i++) {
			/* Favour bytes that start or continue sequences. */
			int r = rand_r(&seed);

			if (r % 3 == 0)
				in[i] = (unsigned char)(r >> 8);
			else if (r % 3 == 1)
				in[i] =
				    (unsigned char)(0x80 | ((r >> 8) & 0x3f));
			else
				in[i] =
				    (unsigned char)(0xc0 | ((r >> 8) & 0x3f));
		}
		out = sanitize((const char *)in, len, &outlen);
		cr_assert(valid_utf8((unsigned char *)out, outlen),
		    "round %d: output is not valid UTF-8", round);
		if (valid_utf8(in, len)) {
			cr_assert_eq(outlen, len);
			cr_assert(memcmp(out, in, len) == 0,
			    "round %d: valid input changed", round);
		}
		out2 = sanitize(out, outlen, &outlen2);
		cr_assert_eq(
		    outlen2, outlen, "round %d: not idempotent", round);
		cr_assert(memcmp(out2, out, outlen) == 0);
		free(out2);
		free(out);
	}
}

Test(utf8, every_two_byte_sequence_agrees_with_a_strict_validator)
{
	unsigned int a, b;

	for (a = 0; a < 256; a++) {
		for (b = 0; b < 256; b++) {
			unsigned char in[2] = {
			    (unsigned char)a, (unsigned char)b};
			size_t outlen;
			char *out;

			out = sanitize((const char *)in, 2, &outlen);
			if (valid_utf8(in, 2))
				cr_assert(
				    outlen == 2 && memcmp(out, in, 2) == 0,
				    "valid %02x %02x changed", a, b);
			else
				cr_assert(outlen > 2,
				    "invalid %02x %02x kept as is", a, b);
			cr_assert(valid_utf8((unsigned char *)out, outlen));
			free(out);
		}
	}
}

Test(utf8, every_three_byte_lead_and_second_byte_agree_with_validator)
{
	unsigned int a, b;

	for (a = 0xe0; a <= 0xf4; a++) {
		for (b = 0x80; b <= 0xbf; b++) {
			unsigned char in[4] = {
			    (unsigned char)a, (unsigned char)b, 0x80, 0x80};
			size_t len = a < 0xf0 ? 3 : 4, outlen;
			char *out;

			out = sanitize((const char *)in, len, &outlen);
			if (valid_utf8(in, len))
				cr_assert(
				    outlen == len && memcmp(out, in, len) == 0,
				    "valid %02x %02x... changed", a, b);
			else
				cr_assert_eq(outlen, len * 3,
				    "invalid %02x %02x...: %zu bytes", a, b,
				    outlen);
			free(out);
		}
	}
}
