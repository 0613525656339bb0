/* Base64: round trips, and only canonical input decodes. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "base64.h"

Test(base64, round_trips_every_length_and_byte)
{
	unsigned char in[300], *back;
	size_t n, len, blen;
	char *enc;

	for (n = 0; n < sizeof in; n++)
		in[n] = (unsigned char)(n * 37 + 11);
	for (n = 0; n <= sizeof in; n++) {
		enc = base64_encode(in, n, &len);
		cr_assert_eq(len, (n + 2) / 3 * 4);
		back = base64_decode(enc, len, &blen);
		cr_assert_not_null(back, "length %zu", n);
		cr_assert_eq(blen, n);
		cr_assert(memcmp(back, in, n) == 0);
		free(back);
		free(enc);
	}
}

Test(base64, known_vectors)
{
	static const char *const vec[][2] = {{"", ""}, {"f", "Zg=="},
	    {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="},
	    {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
	size_t i, len;
	char *enc;

	for (i = 0; i < sizeof vec / sizeof vec[0]; i++) {
		enc = base64_encode(vec[i][0], strlen(vec[i][0]), &len);
		cr_expect_str_eq(enc, vec[i][1]);
		free(enc);
	}
}

Test(base64, rejects_what_is_not_canonical)
{
	static const char *const bad[] = {"AB==", "AAB=", "Zg",
	    "Zg=", "Z===", "Zm9v\n", "Zm 9", "Zm9v====", "=Zm9", "Zm=v", "Zm9*",
	    "\xc3\xa9xx"};
	size_t i, len;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_expect_null(base64_decode(bad[i], strlen(bad[i]), &len),
		    "accepted \"%s\"", bad[i]);
}
