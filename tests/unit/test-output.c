/*
 * Unit tests of a result's bounded output (supervisor/run/output.c): the
 * head and the tail kept, what a result shows of them (keep), and the
 * room its bytes take once JSON-escaped (output_fit).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "output.h"

/* The text a result shows of o, keeping keep bytes. */
static char *
shown(const struct output *o, size_t keep, const char *uri)
{
	json_object *s = output_json(o, keep, uri);
	char *r = strdup(json_object_get_string(s));

	json_object_put(s);
	return r;
}

Test(output, short_output_is_whole)
{
	struct output o;
	char *t;

	output_init(&o, 64);
	output_add(&o, "hello\n", 6);
	cr_expect(!output_cut(&o, SIZE_MAX));
	cr_expect_eq(output_fit(&o, 1000), 6);
	t = shown(&o, SIZE_MAX, NULL);
	cr_expect_str_eq(t, "hello\n");
	free(t);
	output_free(&o);
}

Test(output, head_and_tail_in_order_across_the_ring)
{
	struct output o;
	char *t;
	int i;

	output_init(&o, 16); /* 8 bytes of head, 8 of tail */
	for (i = 0; i < 26; i++)
		output_add(&o, (char[]){(char)('a' + i)}, 1);
	cr_expect(output_cut(&o, SIZE_MAX));
	t = shown(&o, SIZE_MAX, "sandbox://x/exec/1/stdout");
	cr_expect_str_eq(t, "abcdefgh\n[... 10 bytes elided; the whole output "
	                    "is the resource sandbox://x/exec/1/stdout ...]\n"
	                    "stuvwxyz");
	free(t);
	/* Showing less: the head's first and the tail's last. */
	t = shown(&o, 6, "u");
	cr_expect_str_eq(t, "abc\n[... 20 bytes elided; the whole output is "
	                    "the resource u ...]\nxyz");
	free(t);
	/* All of a short tail, the rest to the head. */
	output_free(&o);
	output_init(&o, 16);
	output_add(&o, "0123456789ab", 12);
	cr_expect(!output_cut(&o, 12));
	cr_expect(output_cut(&o, 11));
	t = shown(&o, 10, "u");
	cr_expect_str_eq(t, "012345\n[... 2 bytes elided; the whole output is "
	                    "the resource u ...]\n89ab");
	free(t);
	output_free(&o);
}

Test(output, fit_counts_escaped_bytes)
{
	struct output o;
	json_object *s;
	char zeros[1000] = {0};
	size_t keep, len;

	output_init(&o, 4096);
	output_add(&o, "plain", 5);
	cr_expect_eq(output_fit(&o, 100), 5);
	output_reset(&o);
	/* A NUL is \u0000 in JSON: six bytes. */
	output_add(&o, zeros, sizeof zeros);
	keep = output_fit(&o, 600);
	cr_expect_leq(output_escaped(&o, keep), 600);
	cr_expect_geq(keep, 80, "kept %zu", keep);
	s = output_json(&o, keep, "u");
	json_object_to_json_string_length(s, JSON_C_TO_STRING_PLAIN, &len);
	/* The marker's 60-odd bytes beside what was fitted. */
	cr_expect_leq(len, 600 + 100, "%zu bytes", len);
	json_object_put(s);
	/* Quotes and newlines: two each. */
	output_reset(&o);
	output_add(&o, "\"\n\"\n", 4);
	cr_expect_eq(output_escaped(&o, SIZE_MAX), 8);
	cr_expect_eq(output_fit(&o, 5), 2);
	output_free(&o);
}
