/*
 * A client's egress list against the operator's --egress-allow
 * (supervisor/sandbox/egresslist.c's egresslist_check()): what it keeps,
 * and the tool errors it gives.  No Docker, no worker.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "config.h"
#include "sandbox.h"

static struct config conf;

/* The server's options: NULL-terminated flags after the program's name. */
static void
configure(const char *const *flags)
{
	char *argv[16];
	int argc = 0;

	config_free(&conf);
	argv[argc++] = "mcp-sandboxd";
	while (*flags != NULL && argc < 15)
		argv[argc++] = (char *)*flags++;
	argv[argc] = NULL;
	cr_assert_eq(config_parse(&conf, argc, argv, stderr), 0);
}
#define CONFIGURE(...) configure((const char *const[]){__VA_ARGS__, NULL})

static void
teardown(void)
{
	config_free(&conf);
}

TestSuite(egresslist, .fini = teardown);

/* The canonical list for the client's JSON, which must be good. */
static json_object *
check_ok(const char *client)
{
	json_object *in, *out;
	char *why;

	cr_assert_not_null(in = json_tokener_parse(client), "%s", client);
	out = egresslist_check(&conf, in, &why);
	cr_assert_not_null(out, "%s refused: %s", client, why);
	cr_assert_null(why);
	json_object_put(in);
	return out;
}

static void
expect_list(const char *client, const char *want)
{
	json_object *out = check_ok(client);

	cr_expect_str_eq(
	    json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN), want,
	    "for %s", client);
	json_object_put(out);
}

/* The client's JSON is refused, with a message holding each of words. */
static void
expect_refused(const char *client, const char *const *words)
{
	json_object *in, *out;
	char *why = NULL;

	cr_assert_not_null(in = json_tokener_parse(client), "%s", client);
	out = egresslist_check(&conf, in, &why);
	cr_assert_null(out, "%s accepted", client);
	cr_assert_not_null(why);
	for (; *words != NULL; words++)
		cr_expect_not_null(strstr(why, *words),
		    "for %s: \"%s\" does not say \"%s\"", client, why, *words);
	free(why);
	json_object_put(in);
}
#define REFUSED(client, ...)                                                   \
	expect_refused(client, (const char *const[]){__VA_ARGS__, NULL})

static void
pypi(void)
{
	CONFIGURE("--egress-allow", "Example.org,*.pypi.org:443",
	    "--egress-allow", "[::1]:8080");
}

Test(egresslist, covered_entries_are_kept_canonical_in_order, .init = pypi)
{
	expect_list(
	    "[\"files.pypi.org:443\",\"Example.ORG.\",\"*.pypi.org:443\","
	    "\"*.a.pypi.org:443\",\"[0:0::1]:8080\"]",
	    "[\"files.pypi.org:443\",\"example.org\",\"*.pypi.org:443\","
	    "\"*.a.pypi.org:443\",\"[::1]:8080\"]");
}

Test(egresslist, the_same_pattern_is_kept_once, .init = pypi)
{
	expect_list("[\"example.org\",\"EXAMPLE.org.\",\"example.org\"]",
	    "[\"example.org\"]");
}

/* An empty list turns egress off, whatever the operator allows. */
Test(egresslist, empty_list_is_always_good)
{
	CONFIGURE("--agent", "off");
	expect_list("[]", "[]");
	pypi();
	expect_list("[]", "[]");
}

Test(egresslist, uncovered_entry_names_itself_and_the_operators, .init = pypi)
{
	REFUSED("[\"example.org\",\"evil.org\"]", "egress[1]", "\"evil.org\"",
	    "not allowed", "example.org, *.pypi.org:443, [::1]:8080",
	    "--egress-allow");
	/* Another port, any port, the suffix itself, a wider suffix. */
	REFUSED("[\"files.pypi.org:80\"]", "egress[0]", "files.pypi.org:80");
	REFUSED("[\"files.pypi.org\"]", "\"files.pypi.org\"");
	REFUSED("[\"pypi.org:443\"]", "\"pypi.org:443\"");
	REFUSED("[\"*.org:443\"]", "\"*.org:443\"");
	REFUSED("[\"*.example.org\"]", "\"*.example.org\"");
	REFUSED("[\"sub.example.org\"]", "\"sub.example.org\"");
	REFUSED("[\"[::1]\"]", "\"[::1]\"");
	REFUSED("[\"127.0.0.1:8080\"]", "\"127.0.0.1:8080\"");
	REFUSED("[\"*\"]", "egress[0] \"*\"");
}

/* The operator's "*" covers any pattern; a port of its own, that port. */
Test(egresslist, operator_any_covers_everything)
{
	CONFIGURE("--egress-allow", "*");
	expect_list("[\"*\",\"*.x.org:1\",\"[::1]\",\"192.0.2.1:65535\"]",
	    "[\"*\",\"*.x.org:1\",\"[::1]\",\"192.0.2.1:65535\"]");
	CONFIGURE("--egress-allow", "*:443");
	expect_list("[\"a.org:443\",\"*:443\"]", "[\"a.org:443\",\"*:443\"]");
	REFUSED("[\"a.org\"]", "\"a.org\"", "*:443");
	REFUSED("[\"*\"]", "\"*\"");
}

Test(egresslist, bad_pattern_is_named, .init = pypi)
{
	REFUSED("[\"example.org\",\"exa mple.org\"]", "egress[1]",
	    "\"exa mple.org\"", "example.org");
	REFUSED("[\"a.*.pypi.org:443\"]", "egress[0]", "\"a.*.pypi.org:443\"");
	REFUSED("[\"files.pypi.org:99999\"]", "egress[0]", "port");
	REFUSED("[\"files.pypi.org:0\"]", "port");
	REFUSED("[\"::1\"]", "egress[0]", "brackets");
	REFUSED("[\"\"]", "egress[0]", "empty");
	REFUSED("[\"example.1\"]", "\"example.1\"");
	REFUSED("[\"exa\\u0000mple.org\"]", "egress[0]", "NUL");
}

Test(egresslist, entries_must_be_strings, .init = pypi)
{
	REFUSED("[\"example.org\",1]", "egress[1] is not a string");
	REFUSED("[null]", "egress[0] is not a string");
	REFUSED("[[\"example.org\"]]", "egress[0] is not a string");
	REFUSED("[{\"host\":\"example.org\"}]", "egress[0] is not a string");
	REFUSED("[true]", "egress[0] is not a string");
}

Test(egresslist, list_must_be_an_array, .init = pypi)
{
	char *why;

	REFUSED("\"example.org\"", "egress must be an array");
	REFUSED("{\"example.org\":true}", "egress must be an array");
	cr_assert_null(egresslist_check(&conf, NULL, &why));
	cr_expect_not_null(strstr(why, "egress must be an array"), "%s", why);
	free(why);
}

/* EGRESSLIST_MAX entries are taken, one more is not. */
Test(egresslist, at_most_max_entries)
{
	json_object *in, *out;
	char host[32], *why;
	int i;

	CONFIGURE("--egress-allow", "*.example.org");
	in = json_object_new_array();
	for (i = 0; i < EGRESSLIST_MAX; i++) {
		snprintf(host, sizeof host, "h%d.example.org", i);
		json_object_array_add(in, json_object_new_string(host));
	}
	out = egresslist_check(&conf, in, &why);
	cr_assert_not_null(out, "%s", why);
	cr_assert_eq(json_object_array_length(out), EGRESSLIST_MAX);
	json_object_put(out);
	json_object_array_add(in, json_object_new_string("one.example.org"));
	out = egresslist_check(&conf, in, &why);
	cr_assert_null(out);
	cr_expect_not_null(strstr(why, "33 entries"), "%s", why);
	cr_expect_not_null(strstr(why, "32"), "%s", why);
	free(why);
	/* Counted as given, before the same ones are folded. */
	json_object_put(in);
	in = json_object_new_array();
	for (i = 0; i <= EGRESSLIST_MAX; i++)
		json_object_array_add(
		    in, json_object_new_string("same.example.org"));
	cr_assert_null(egresslist_check(&conf, in, &why));
	free(why);
	json_object_put(in);
}

Test(egresslist, operator_allowing_nothing_turns_egress_off)
{
	CONFIGURE("--log-level", "error");
	REFUSED("[\"example.org\"]",
	    "egress is off on this server (the operator's --egress-allow "
	    "allows no host)");
	REFUSED("[1]", "egress is off on this server");
}

Test(egresslist, agent_off_refuses_egress)
{
	CONFIGURE("--egress-allow", "example.org", "--agent", "off");
	REFUSED("[\"example.org\"]",
	    "egress needs the in-sandbox agent (--agent on)");
}

/* What messages and results take of a worker's or a program's text. */
Test(egresslist, printable_cuts_and_replaces)
{
	char buf[8];

	egresslist_printable("a\nb\x1b[31mcdefgh", buf, sizeof buf);
	cr_expect_str_eq(buf, "a?b?[31");
	egresslist_printable("\xc3\xa9t\xc3\xa9", buf, sizeof buf);
	cr_expect_str_eq(buf, "??t??");
	egresslist_printable(NULL, buf, sizeof buf);
	cr_expect_str_eq(buf, "");
}

Test(egresslist, text_joins_and_cuts)
{
	json_object *l = json_tokener_parse("[\"a.org\",\"*.b.org:443\"]");
	char buf[64], small[8];

	egresslist_text(l, buf, sizeof buf);
	cr_expect_str_eq(buf, "a.org, *.b.org:443");
	egresslist_text(l, small, sizeof small);
	cr_expect_str_eq(small, "a.org, ");
	egresslist_text(NULL, buf, sizeof buf);
	cr_expect_str_eq(buf, "");
	json_object_put(l);
}
