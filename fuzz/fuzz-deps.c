/*
 * Fuzz the dependency scanners and the package name checks
 * (supervisor/run/deps.c).  Input: a selector byte (the language), then
 * source code.  Contracts: deps_detect() answers an array of distinct
 * strings for every known language, and each name it finds is one the
 * language's manager accepts (deps_valid_name()), since the names go to
 * the manager's command line; deps_valid_name() never accepts a name
 * that starts with '-' or holds a shell character or a space.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "deps.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static const struct {
	const char *language, *manager;
} langs[] = {{"python", "pip"}, {"javascript", "npm"}, {"typescript", "npm"},
    {"go", "go"}, {"bash", NULL}};

static void
check_name_rules(const char *p, size_t n)
{
	static const char *const managers[] = {"pip", "npm", "go", "apt"};
	char *s;
	size_t i;

	s = malloc(n + 1);
	fuzz_check(s != NULL, "out of memory");
	memcpy(s, p, n);
	s[n] = '\0';
	for (i = 0; i < sizeof managers / sizeof managers[0]; i++) {
		if (!deps_valid_name(managers[i], s))
			continue;
		fuzz_check(s[0] != '-' && s[0] != '\0',
		    "deps_valid_name: accepts an option");
		fuzz_check(strpbrk(s, " \t\n;&|`$()\\\"'{}#?") == NULL,
		    "deps_valid_name: accepts shell characters");
	}
	free(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *code = (const char *)data + 1, *name;
	json_object *a, *seen;
	size_t i, n, k;

	if (size < 1)
		return 0;
	k = data[0] % (sizeof langs / sizeof langs[0]);
	n = size - 1;
	a = deps_detect(langs[k].language, code, n);
	fuzz_check(a != NULL && json_object_is_type(a, json_type_array),
	    "deps_detect: no array for a known language");
	seen = json_object_new_object();
	for (i = 0; i < json_object_array_length(a); i++) {
		json_object *v = json_object_array_get_idx(a, i);

		fuzz_check(json_object_is_type(v, json_type_string),
		    "deps_detect: not a string");
		name = json_object_get_string(v);
		fuzz_check(!json_object_object_get_ex(seen, name, NULL),
		    "deps_detect: a name twice");
		json_object_object_add(seen, name, NULL);
		fuzz_check(
		    langs[k].manager != NULL, "deps_detect: names for bash");
		fuzz_check(deps_valid_name(langs[k].manager, name),
		    "deps_detect: a name its manager would refuse");
	}
	json_object_put(seen);
	json_object_put(a);
	if (data[0] >= 0x80)
		check_name_rules(code, n < 300 ? n : 300);
	return 0;
}
