/*
 * Fuzz the parsers of what the server's commands in a sandbox print
 * (supervisor/run/sbout.c): sandbox code can write anything into that output,
 * so every parser must answer, never crash, and what it accepts must
 * hold its contract.  Input: a selector byte (which parser, and for
 * read_file the offset and the length), then the output.  The marker of
 * every frame is NONCE.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "fuzz.h"
#include "sbout.h"
#include "utf8.h"

#define NONCE "0123456789abcdef"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
fuzz_manager(const char *p, size_t n)
{
	const char *m = sbout_manager(p, n);

	fuzz_check(m == NULL || strcmp(m, "pip") == 0 ||
	               strcmp(m, "npm") == 0 || strcmp(m, "go") == 0,
	    "sbout_manager: not a manager");
	if (m != NULL)
		fuzz_check(
		    n == strlen(m) + 1, "sbout_manager: more than a name");
}

/* The first line names the packages (space-separated), the rest is out. */
static void
fuzz_missing(const char *p, size_t n)
{
	json_object *pk, *in, *pr;
	const char *nl = memchr(p, '\n', n), *s, *e;
	size_t k;

	pk = json_object_new_array();
	if (nl != NULL) {
		for (s = p; s < nl; s = e + 1) {
			for (e = s; e < nl && *e != ' '; e++)
				;
			if (e > s)
				json_object_array_add(
				    pk, json_object_new_string_len(
				            s, (int)(e - s)));
		}
		k = (size_t)(nl + 1 - p);
		p += k;
		n -= k;
	}
	in = json_object_new_array();
	pr = json_object_new_array();
	sbout_missing(p, n, pk, in, pr);
	fuzz_check(
	    json_object_array_length(in) + json_object_array_length(pr) ==
	        json_object_array_length(pk),
	    "sbout_missing: a package lost or doubled");
	json_object_put(pk);
	json_object_put(in);
	json_object_put(pr);
}

static void
fuzz_listing(const char *p, size_t n, int cut)
{
	json_object *l, *e, *v;
	char err[256];
	size_t i;
	int trunc;
	const char *s;

	if ((l = sbout_listing(
	         p, n, NONCE, cut, 50, &trunc, err, sizeof err)) == NULL) {
		fuzz_check(err[0] != '\0', "sbout_listing: no message");
		return;
	}
	fuzz_check(
	    json_object_array_length(l) <= 50, "sbout_listing: over max");
	for (i = 0; i < json_object_array_length(l); i++) {
		e = json_object_array_get_idx(l, i);
		fuzz_check(json_object_object_get_ex(e, "name", &v) &&
		               json_object_get_string_len(v) > 0,
		    "sbout_listing: no name");
		s = json_object_get_string(v);
		fuzz_check(utf8_valid(s, (size_t)json_object_get_string_len(v)),
		    "sbout_listing: name not UTF-8");
		fuzz_check(s[0] != '/', "sbout_listing: absolute name");
		fuzz_check(json_object_object_get_ex(e, "size", &v) &&
		               json_object_get_int64(v) >= 0,
		    "sbout_listing: bad size");
		fuzz_check(json_object_object_get_ex(e, "type", &v),
		    "sbout_listing: no type");
		s = json_object_get_string(v);
		fuzz_check(
		    strcmp(s, "file") == 0 || strcmp(s, "directory") == 0 ||
		        strcmp(s, "symlink") == 0 || strcmp(s, "other") == 0,
		    "sbout_listing: bad type");
	}
	json_object_put(l);
}

static void
fuzz_read(const char *p, size_t n, unsigned sel)
{
	struct sbout_read rd;
	long long off = sel & 3 ? (long long)(sel & 3) * 3 : 0;
	long long len = sel & 4 ? 5 : 4194304;
	char err[256];

	if (sbout_read(p, n, NONCE, off, len, &rd, err, sizeof err) == -1) {
		fuzz_check(err[0] != '\0', "sbout_read: no message");
		return;
	}
	fuzz_check(rd.data_off <= n && rd.data_len <= n - rd.data_off,
	    "sbout_read: data outside the buffer");
	fuzz_check((long long)rd.data_len <= len, "sbout_read: over length");
	fuzz_check(rd.size >= 0, "sbout_read: negative size");
}

static void
fuzz_project(const char *p, size_t n, unsigned sel)
{
	static const char *const langs[] = {
	    NULL, "auto", "python", "javascript", "typescript", "go", "perl"};
	struct sbout_project pr;
	char err[256];

	if (sbout_project(p, n, NONCE, langs[sel % 7],
	        sel & 8 ? "make run" : NULL, &pr, err, sizeof err) == -1) {
		fuzz_check(err[0] != '\0', "sbout_project: no message");
		fuzz_check(pr.entry == NULL && pr.files == NULL,
		    "sbout_project: leaves state on failure");
		return;
	}
	fuzz_check(pr.language != NULL && pr.entry != NULL && pr.files != NULL,
	    "sbout_project: incomplete answer");
	fuzz_check(strcmp(pr.language, "python") == 0 ||
	               strcmp(pr.language, "javascript") == 0 ||
	               strcmp(pr.language, "typescript") == 0 ||
	               strcmp(pr.language, "go") == 0,
	    "sbout_project: unknown language");
	/* A detected entrypoint is one of the fixed commands: no names of
	 * the sandbox's choosing beyond the known file names. */
	if (!(sel & 8))
		fuzz_check(
		    strspn(pr.entry, "abcdefghijklmnopqrstuvwxyz_3. -") ==
		        strlen(pr.entry),
		    "sbout_project: odd entrypoint");
	sbout_project_clear(&pr);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data + 1;
	unsigned sel;
	size_t n;

	if (size < 1)
		return 0;
	sel = data[0];
	n = size - 1;
	switch (sel % 5) {
	case 0:
		fuzz_manager(p, n);
		break;
	case 1:
		fuzz_missing(p, n);
		break;
	case 2:
		fuzz_listing(p, n, (sel >> 3) & 1);
		break;
	case 3:
		fuzz_read(p, n, sel >> 3);
		break;
	default:
		fuzz_project(p, n, sel >> 3);
		break;
	}
	return 0;
}
