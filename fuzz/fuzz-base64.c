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
#include "fuzz.h"

int LLVMFuzzerInitialize(int *, char ***);
int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int strict;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{

	(void)argc;
	(void)argv;
	strict = fuzz_env_strict();
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
		fuzz_check(declen <= size / 4 * 3, "decoded too long");
		fuzz_check(dec[declen] == '\0', "decoded not NUL-terminated");
		if (strict) {
			reenc = base64_encode(dec, declen, &reenclen);
			fuzz_check(
			    reenclen == size && memcmp(reenc, data, size) == 0,
			    "accepted non-canonical base64");
			free(reenc);
		}
		free(dec);
	}

	/* Arbitrary bytes: the round trip is the identity. */
	enc = base64_encode(data, size, &enclen);
	fuzz_check(enclen == (size + 2) / 3 * 4, "encoded length");
	fuzz_check(strlen(enc) == enclen, "encoded not NUL-terminated");
	dec = base64_decode(enc, enclen, &declen);
	fuzz_check(dec != NULL, "own encoding rejected");
	fuzz_check(declen == size && memcmp(dec, data, size) == 0,
	    "round trip changed the bytes");
	free(dec);
	free(enc);
	return 0;
}
