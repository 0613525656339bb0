/*
 * Fuzz the picture headers (common/imgsig.c): any bytes are safe to
 * probe, what is taken has a known kind and sides within the limit, and
 * every prefix of the input is probed too (a header cut short must be
 * refused, never read past).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "imgsig.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct imgsig s;
	unsigned char *copy;
	size_t n;

	/* Exact-size copies, so that ASan sees a read one past the end. */
	for (n = size > 64 ? size - 64 : 0; n <= size; n++) {
		copy = malloc(n > 0 ? n : 1);
		memcpy(copy, data, n);
		if (imgsig_probe(copy, n, &s) == 0) {
			fuzz_check(s.kind != IMGSIG_NONE && s.mime != NULL,
			    "taken without a kind");
			fuzz_check(s.width >= 1 && s.height >= 1 &&
			               s.width <= IMGSIG_MAX_SIDE &&
			               s.height <= IMGSIG_MAX_SIDE,
			    "sides out of range");
		} else
			fuzz_check(
			    s.kind == IMGSIG_NONE, "refused with a kind");
		free(copy);
	}
	return 0;
}
