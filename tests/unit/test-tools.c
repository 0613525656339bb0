/* The tool table: every schema is one whole JSON object, as MCP wants. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "mcp.h"
#include "sandbox.h"
#include "tools.h"

static json_object *
parse_whole(const char *text)
{
	json_tokener *tok = json_tokener_new();
	json_object *o;

	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, text, (int)strlen(text));
	cr_assert_eq(json_tokener_get_error(tok), json_tokener_success,
	    "not JSON: %s", text);
	cr_assert_eq(json_tokener_get_parse_end(tok), strlen(text),
	    "bytes after the schema's end: %s",
	    text + json_tokener_get_parse_end(tok));
	json_tokener_free(tok);
	return o;
}

static void
check_schema(const char *tool, const char *which, const char *text)
{
	json_object *o, *v;

	cr_assert_not_null(text, "%s has no %s", tool, which);
	o = parse_whole(text);
	cr_assert(json_object_is_type(o, json_type_object));
	cr_assert(
	    json_object_object_get_ex(o, "type", &v), "%s.%s", tool, which);
	cr_expect_str_eq(
	    json_object_get_string(v), "object", "%s.%s", tool, which);
	cr_assert(json_object_object_get_ex(o, "properties", &v),
	    "%s.%s has no properties", tool, which);
	/* Every required member is a declared property. */
	if (json_object_object_get_ex(o, "required", &v)) {
		json_object *props;
		size_t i;

		json_object_object_get_ex(o, "properties", &props);
		for (i = 0; i < json_object_array_length(v); i++)
			cr_expect(json_object_object_get_ex(props,
			              json_object_get_string(
			                  json_object_array_get_idx(v, i)),
			              NULL),
			    "%s.%s requires an undeclared member", tool, which);
	}
	json_object_put(o);
}

/* The server's tools, registered as at start. */
TestSuite(tools, .init = tools_init);

Test(tools, every_schema_is_one_whole_object)
{
	size_t i;

	for (i = 0; tool_nth(i) != NULL; i++) {
		check_schema(tool_nth(i)->name, "inputSchema",
		    tool_nth(i)->input_schema);
		check_schema(tool_nth(i)->name, "outputSchema",
		    tool_nth(i)->output_schema);
		cr_expect(
		    tool_nth(i)->title != NULL && *tool_nth(i)->title != '\0');
		cr_expect(tool_nth(i)->description != NULL &&
		          strlen(tool_nth(i)->description) > 20);
	}
	cr_expect_eq(i, 25, "%zu tools", i);
}

Test(tools, names_are_unique_and_found)
{
	size_t i, j;

	for (i = 0; tool_nth(i) != NULL; i++) {
		cr_expect_eq(tool_find(tool_nth(i)->name), tool_nth(i));
		for (j = i + 1; tool_nth(j) != NULL; j++)
			cr_expect_str_neq(tool_nth(i)->name, tool_nth(j)->name);
	}
	cr_expect_null(tool_find("no_such_tool"));
}

/* A path near the end: the old code wrote "<host path>" past the copy. */
Test(tools, sanitize_docker_error_cuts_short_paths_in_bounds)
{
	static const char *const cases[][2] = {
	    {"error: /run/x", "error: <host path>"},
	    {"/run/", "<host path>"},
	    {"mount /home/a failed", "mount <host path>"},
	    {"x /var/lib/docker/volumes/v y\nsecond line /home/z",
	        "x <host path>"},
	    {"a /home/b then /run/c", "a <host path>"},
	    {"no path here\n/run/later", "no path here"},
	    {"plain", "plain"},
	};
	size_t i;
	char *s;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		s = sandbox_error_text(cases[i][0]);
		cr_expect_str_eq(s, cases[i][1], "for \"%s\"", cases[i][0]);
		free(s);
	}
	s = sandbox_error_text(NULL);
	cr_expect_str_eq(s, "unknown Docker error");
	free(s);
}
