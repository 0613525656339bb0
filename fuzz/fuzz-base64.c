/*
 * Fuzz base64 (common/base64.c): decoding arbitrary text must be safe,
 * and encoding then decoding any bytes must give them back.
 *
 * With FUZZ_STRICT set in the environment, also hold base64_decode() to
 * its comment ("NULL on anything but canonical base64"): what it accepts
 * must be what base64_encode() would have written.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"

int LLVMFuzzerInitialize(int *, char ***);
int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int strict;

static void
check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz-base64: %s\n", what);
		abort();
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *s = getenv("FUZZ_STRICT");

	(void)argc;
	(void)argv;
	strict = s != NULL && *s != '\0' && strcmp(s, "0") != 0;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *enc, *reenc;
	unsigned char *dec;
	size_t enclen, declen, reenclen;

	/* Arbitrary text: safe, and a result is NUL-terminated. */
	dec = base64_decode((const char *)data, size, &declen);
	if (dec != NULL) {
		check(declen <= size / 4 * 3, "decoded too long");
		check(dec[declen] == '\0', "decoded not NUL-terminated");
		if (strict) {
			reenc = base64_encode(dec, declen, &reenclen);
			check(
			    reenclen == size && memcmp(reenc, data, size) == 0,
			    "accepted non-canonical base64");
			free(reenc);
		}
		free(dec);
	}

	/* Arbitrary bytes: the round trip is the identity. */
	enc = base64_encode(data, size, &enclen);
	check(enclen == (size + 2) / 3 * 4, "encoded length");
	check(strlen(enc) == enclen, "encoded not NUL-terminated");
	dec = base64_decode(enc, enclen, &declen);
	check(dec != NULL, "own encoding rejected");
	check(declen == size && memcmp(dec, data, size) == 0,
	    "round trip changed the bytes");
	free(dec);
	free(enc);
	return 0;
}
