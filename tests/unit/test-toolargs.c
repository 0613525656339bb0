/*
 * Arguments checked against the tools' own input schemas (toolargs.c):
 * what tools/list declares is what a call may carry, no more, no less.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "mcp.h"
#include "tools.h"

/* The message for args (JSON text) to a tool, or NULL if they pass. */
static char *
check(const char *tool, const char *args)
{
	const struct tool *t = tool_find(tool);
	json_object *a = args != NULL ? json_tokener_parse(args) : NULL;
	char *why;
	int rv;

	cr_assert_not_null(t, "no tool %s", tool);
	cr_assert(args == NULL || a != NULL, "not JSON: %s", args);
	rv = toolargs_check(t, a, &why);
	json_object_put(a);
	cr_assert_eq(rv == -1, why != NULL);
	return why;
}

static void
passes(const char *tool, const char *args)
{
	char *why = check(tool, args);

	cr_expect_null(why, "%s %s refused: %s", tool, args, why);
	free(why);
}

/* Refused, with a message that holds want. */
static void
refused(const char *tool, const char *args, const char *want)
{
	char *why = check(tool, args);

	cr_expect_not_null(why, "%s %s passed", tool, args);
	if (why != NULL)
		cr_expect(strstr(why, want) != NULL,
		    "%s %s: \"%s\" does not say \"%s\"", tool, args, why, want);
	free(why);
}

/* The server's tools, registered as at start. */
TestSuite(toolargs, .init = tools_init);

Test(toolargs, names)
{
	passes("sandbox_stop", "{\"container_id\":\"abc\"}");
	refused("sandbox_stop", "{\"container_id\":\"abc\",\"force\":true}",
	    "unknown argument \"force\"");
	refused("sandbox_stop", "{}", "container_id is required");
	refused("sandbox_stop", "{\"container_id\":null}",
	    "container_id is required");
	refused("sandbox_stop", NULL, "container_id is required");
	passes("sandbox_initialize", NULL);
	passes("sandbox_initialize", "{}");
	/* An unknown name is cut in the message. */
	refused("get_sandbox_status",
	    "{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":1}",
	    "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\" (see");
}

Test(toolargs, types_and_null)
{
	passes("sandbox_exec",
	    "{\"container_id\":\"a\",\"commands\":\"ls\",\"workdir\":null}");
	refused("sandbox_exec", "{\"container_id\":\"a\",\"commands\":5}",
	    "commands must be an array of 1 to 100 items, each a non-empty "
	    "string");
	refused("sandbox_exec", "{\"container_id\":\"a\",\"commands\":\"\"}",
	    "commands must be an array");
	refused("sandbox_exec", "{\"container_id\":\"a\",\"commands\":[]}",
	    "commands must be");
	refused("sandbox_exec", "{\"container_id\":\"a\",\"commands\":[\"\"]}",
	    "commands must be");
	refused("sandbox_exec",
	    "{\"container_id\":\"a\",\"commands\":[\"ls\",1]}",
	    "commands must be");
	passes(
	    "sandbox_exec", "{\"container_id\":\"a\",\"commands\":[\"ls\"]}");
	refused("sandbox_exec", "{\"container_id\":7,\"commands\":\"ls\"}",
	    "container_id must be a string");
	refused("sandbox_exec",
	    "{\"container_id\":\"a\",\"commands\":\"ls\",\"stop_on_error\":1}",
	    "stop_on_error must be true or false");
	refused("sandbox_exec",
	    "{\"container_id\":\"a\",\"commands\":\"ls\",\"env\":{\"A\":1}}",
	    "env must be an object whose values are each a string");
	passes("sandbox_exec",
	    "{\"container_id\":\"a\",\"commands\":\"ls\",\"env\":{\"A\":\"1\"}}");
}

Test(toolargs, numbers)
{
	passes("sandbox_exec",
	    "{\"container_id\":\"a\",\"commands\":\"ls\",\"timeout_seconds\":1}");
	/* 0 is a background process's (the tool refuses it for others). */
	passes("sandbox_exec",
	    "{\"container_id\":\"a\",\"commands\":\"ls\",\"timeout_seconds\":0}");
	refused("sandbox_exec",
	    "{\"container_id\":\"a\",\"commands\":\"ls\",\"timeout_seconds\":-1}",
	    "timeout_seconds must be an integer of at least 0");
	/* 5.0 is a number, not an integer (as it always was). */
	refused("sandbox_exec",
	    "{\"container_id\":\"a\",\"commands\":\"ls\",\"timeout_seconds\":5.0}",
	    "timeout_seconds must be an integer");
	refused("read_file",
	    "{\"container_id\":\"a\",\"file_path\":\"/x\",\"length\":4194305}",
	    "length must be an integer from 0 to 4194304");
	passes("read_file",
	    "{\"container_id\":\"a\",\"file_path\":\"/x\",\"length\":4194304}");
	refused("sandbox_initialize", "{\"cpus\":0}", "cpus must be a number");
	refused("sandbox_initialize", "{\"cpus\":-1.5}", "above 0");
	passes("sandbox_initialize", "{\"cpus\":0.5}");
	passes("sandbox_initialize", "{\"cpus\":2}");
	refused("sandbox_initialize", "{\"memory_mb\":15}", "at least 16");
	refused("sandbox_initialize", "{\"memory_mb\":-9223372036854775808}",
	    "at least 16");
	passes("sandbox_initialize", "{\"memory_mb\":9223372036854775807}");
}

Test(toolargs, strings_enums_patterns)
{
	refused("execute_code", "{\"code\":\"\"}", "code must be a non-empty");
	passes("execute_code", "{\"code\":\"print(1)\",\"language\":\"go\"}");
	refused("execute_code", "{\"code\":\"x\",\"language\":\"ruby\"}",
	    "language must be one of \"python\", \"javascript\"");
	/* One package as a string: an array of one. */
	passes("execute_code", "{\"code\":\"x\",\"dependencies\":\"numpy\"}");
	refused("execute_code", "{\"code\":\"x\",\"dependencies\":[1]}",
	    "dependencies must be an array of items, each a string");
	passes("execute_code", "{\"code\":\"x\",\"dependencies\":[\"numpy\"]}");
	passes("sandbox_initialize", "{\"name\":\"web-1.test_a\"}");
	refused("sandbox_initialize", "{\"name\":\"-rf\"}", "name must be");
	refused("sandbox_initialize", "{\"name\":\"a b\"}", "name must be");
	refused(
	    "sandbox_initialize", "{\"name\":\"a\\u0000b\"}", "name must be");
	refused("sandbox_initialize",
	    "{\"name\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
	    "name must be");
	refused("install_package", "{\"container_id\":\"a\",\"packages\":[]}",
	    "packages must be an array of 1 to 100 items, each a string");
}

/* Every tool's schema is one this checker reads: each passes a call of
 * its required arguments as strings only where they are strings. */
Test(toolargs, every_tool_checks_its_unknown_names)
{
	size_t i;
	char *why;
	json_object *a;

	for (i = 0; tool_nth(i) != NULL; i++) {
		a = json_tokener_parse("{\"no_such_argument\":1}");
		cr_expect_eq(toolargs_check(tool_nth(i), a, &why), -1, "%s",
		    tool_nth(i)->name);
		cr_expect(
		    why != NULL && strstr(why, "unknown argument") != NULL,
		    "%s: %s", tool_nth(i)->name, why);
		free(why);
		json_object_put(a);
	}
}

/*
 * Every property of every tool has one plain type: no union at a
 * property's level (LangChain's adapter drops one, the Inspector's form
 * can only offer raw JSON for it), nor a list of types, down to the
 * properties of items and objects.
 */
static void
plain_types(const char *tool, const char *path, json_object *schema)
{
	json_object *v;
	char sub[256];

	cr_expect(!json_object_object_get_ex(schema, "anyOf", NULL) &&
	              !json_object_object_get_ex(schema, "oneOf", NULL) &&
	              !json_object_object_get_ex(schema, "allOf", NULL),
	    "%s: %s is a union", tool, path);
	cr_expect(json_object_object_get_ex(schema, "type", &v) &&
	              json_object_is_type(v, json_type_string),
	    "%s: %s has no single type", tool, path);
	if (json_object_object_get_ex(schema, "items", &v)) {
		snprintf(sub, sizeof sub, "%s[]", path);
		plain_types(tool, sub, v);
	}
	if (json_object_object_get_ex(schema, "properties", &v)) {
		json_object_object_foreach(v, key, prop)
		{
			snprintf(sub, sizeof sub, "%s.%s", path, key);
			plain_types(tool, sub, prop);
		}
	}
	if (json_object_object_get_ex(schema, "additionalProperties", &v) &&
	    json_object_is_type(v, json_type_object)) {
		snprintf(sub, sizeof sub, "%s.*", path);
		plain_types(tool, sub, v);
	}
}

Test(toolargs, every_property_has_one_plain_type)
{
	json_object *schema;
	size_t i;

	for (i = 0; tool_nth(i) != NULL; i++) {
		schema = json_tokener_parse(tool_nth(i)->input_schema);
		cr_assert_not_null(schema, "%s", tool_nth(i)->name);
		plain_types(tool_nth(i)->name, "arguments", schema);
		json_object_put(schema);
	}
}

/* A single value where an array is declared: an array of that one. */
Test(toolargs, a_single_item_is_an_array_of_one)
{
	const struct tool *t = tool_find("sandbox_exec");
	json_object *a;
	char *why;

	a = json_tokener_parse("{\"container_id\":\"a\",\"commands\":\"ls\"}");
	cr_assert_eq(toolargs_check(t, a, &why), 0, "%s", why);
	cr_expect_str_eq(
	    json_object_to_json_string_ext(
	        json_object_object_get(a, "commands"), JSON_C_TO_STRING_PLAIN),
	    "[\"ls\"]");
	json_object_put(a);
	/* The older schema's "auto" of execute_code: an array of one, which
	 * the tool takes as before. */
	a = json_tokener_parse("{\"code\":\"1\",\"dependencies\":\"auto\"}");
	cr_assert_eq(
	    toolargs_check(tool_find("execute_code"), a, &why), 0, "%s", why);
	cr_expect_str_eq(json_object_to_json_string_ext(
	                     json_object_object_get(a, "dependencies"),
	                     JSON_C_TO_STRING_PLAIN),
	    "[\"auto\"]");
	json_object_put(a);
	/* Not what an item may be: refused, not lifted. */
	refused("execute_code", "{\"code\":\"1\",\"dependencies\":7}",
	    "dependencies must be an array");
	refused("sandbox_exec",
	    "{\"container_id\":\"a\",\"commands\":{\"a\":1}}",
	    "commands must be an array");
}
