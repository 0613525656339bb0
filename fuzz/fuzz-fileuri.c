/*
 * Fuzz the file resource's URIs (supervisor/run/fileread.c): any bytes
 * as a URI parse into an id that fits and a path that is absolute, NUL
 * free and within 4096 bytes, or are refused; and any such path made
 * into a URI parses back to itself.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "run.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *uri, *path, *back, *again, id[80];
	const char *q;

	uri = malloc(size + 1);
	memcpy(uri, data, size);
	uri[size] = '\0';
	if (fileread_uri_parse(uri, id, sizeof id, &path, &q) == 0) {
		fuzz_check(strlen(id) > 0 && strlen(id) < sizeof id,
		    "an id that does not fit");
		fuzz_check(
		    path[0] == '/' && strlen(path) >= 2 && strlen(path) <= 4096,
		    "a path that is not absolute or too long");
		fuzz_check(*q == '\0' || *q == '?', "a query not at a '?'");
		fuzz_check(q >= uri && q <= uri + strlen(uri),
		    "a query outside the URI");
		/* Made again, it parses back to the same path. */
		again = fileread_uri("0123456789ab", path);
		fuzz_check(
		    fileread_uri_parse(again, id, sizeof id, &back, &q) == 0,
		    "a made URI refused");
		fuzz_check(strcmp(back, path) == 0 && *q == '\0',
		    "a made URI parses to another path");
		fuzz_check(strcmp(id, "0123456789ab") == 0, "another id");
		free(back);
		free(again);
		free(path);
	}
	free(uri);
	return 0;
}
