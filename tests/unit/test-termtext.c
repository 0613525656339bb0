/* Unit tests of text made inert for a terminal (common/termtext.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "termtext.h"

/* in (len bytes, copied to a buffer of exactly that size, so that a read
 * past its end shows under AddressSanitizer) made inert. */
static void
expect(const char *in, size_t len, int flags, const char *want)
{
	char out[1024], *copy;
	size_t n;

	copy = malloc(len == 0 ? 1 : len);
	cr_assert_not_null(copy);
	memcpy(copy, in, len);
	n = termtext(copy, len, flags, out, sizeof out);
	free(copy);
	cr_expect_eq(n, strlen(out));
	cr_expect_str_eq(out, want);
}

#define EXPECT(in, flags, want) expect(in, sizeof in - 1, flags, want)

Test(termtext, plain_text_and_utf8_stay)
{
	EXPECT("hello, world\t42", 0, "hello, world\t42");
	EXPECT("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 0,
	    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	EXPECT("C:\\x1b is text", 0, "C:\\x1b is text");
	EXPECT("", 0, "");
}

Test(termtext, what_terminals_obey_is_escaped)
{
	/* OSC 0 (the title), OSC 52 (the clipboard), CSI, erase line. */
	EXPECT("\x1b]0;pwned\x07", 0, "\\x1b]0;pwned\\x07");
	EXPECT("\x1b]52;c;cm0gLXJmIC8=\x1b\\", 0,
	    "\\x1b]52;c;cm0gLXJmIC8=\\x1b\\");
	EXPECT("a\x1b[2K\r$ ls", 0, "a\\x1b[2K\\x0d$ ls");
	EXPECT("\x08\x7f\x00z", 0, "\\x08\\x7f\\x00z");
	/* C1: CSI and OSC as one code point each. */
	EXPECT("\xc2\x9b"
	       "31m\xc2\x9d",
	    0, "\\u009b31m\\u009d");
	/* The bidirectional overrides and isolates. */
	EXPECT("a\xe2\x80\xae"
	       "b\xe2\x81\xa6"
	       "c\xe2\x80\x8f",
	    0, "a\\u202eb\\u2066c\\u200f");
}

Test(termtext, newlines_only_when_lines)
{
	EXPECT("one\ntwo\n", TERMTEXT_LINES, "one\ntwo\n");
	EXPECT("one\ntwo\n", 0, "one\\x0atwo\\x0a");
	EXPECT("one\r\n", TERMTEXT_LINES, "one\\x0d\n");
}

Test(termtext, bytes_that_are_not_utf8_are_escaped)
{
	EXPECT("\xff\xfe", 0, "\\xff\\xfe");
	/* Overlong, surrogate, above U+10FFFF, cut short. */
	EXPECT("\xc0\x9b", 0, "\\xc0\\x9b");
	EXPECT("\xe0\x80\x9b", 0, "\\xe0\\x80\\x9b");
	EXPECT("\xed\xa0\x80", 0, "\\xed\\xa0\\x80");
	EXPECT("\xf4\x90\x80\x80", 0, "\\xf4\\x90\\x80\\x80");
	EXPECT("ab\xe2\x82", 0, "ab\\xe2\\x82");
}

Test(termtext, output_is_cut_at_a_whole_escape)
{
	char out[8];

	cr_expect_eq(termtext("ab\x1b"
	                      "cd",
	                 5, 0, out, sizeof out),
	    7);
	cr_expect_str_eq(out, "ab\\x1bc");
	cr_expect_eq(termtext("abcdef\x1b", 7, 0, out, sizeof out), 6);
	cr_expect_str_eq(out, "abcdef");
	cr_expect_eq(termtext("x", 1, 0, out, 1), 0);
	cr_expect_str_eq(out, "");
}

/* Long text through termtext_fputs: chunks never cut a sequence. */
Test(termtext, fputs_keeps_sequences_whole_across_chunks)
{
	char in[5000], *got = NULL, want[5000 * 4];
	size_t i, glen = 0, n = 0;
	FILE *f;

	for (i = 0; i + 3 <= sizeof in; i += 3)
		memcpy(in + i, i % 2 == 0 ? "\xe2\x82\xac" : "\x1b[m", 3);
	n = i;
	f = open_memstream(&got, &glen);
	cr_assert_not_null(f);
	termtext_fputs(in, n, 0, f);
	fclose(f);
	cr_assert_lt(termtext(in, n, 0, want, sizeof want), sizeof want - 1);
	cr_expect_str_eq(got, want);
	cr_expect_null(memchr(got, 0x1b, glen));
	free(got);
}
