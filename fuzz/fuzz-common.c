/* What the libFuzzer harnesses share (fuzz.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

int
fuzz_env_strict(void)
{
	const char *s = getenv("FUZZ_STRICT");

	return s != NULL && *s != '\0' && strcmp(s, "0") != 0;
}

void
fuzz_check(int ok, const char *what)
{
	if (!ok) {
		fprintf(
		    stderr, "%s: %s\n", program_invocation_short_name, what);
		abort();
	}
}
