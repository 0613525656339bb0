/*
 * The log's JSON lines (--log-format json): one object a line whatever
 * bytes a message holds, with the request being handled, and none once
 * it is cleared.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "log.h"
#include "utf8.h"

/* What the calls in fn wrote on stderr, as text. */
static char *
captured(void (*fn)(void))
{
	char path[] = "/tmp/mcp-log-test-XXXXXX", *buf;
	int fd, saved;
	FILE *f;
	long n;

	fd = mkstemp(path);
	cr_assert(fd >= 0);
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fd);
	f = fopen(path, "r");
	cr_assert(f != NULL);
	buf = calloc(1, 65536);
	n = (long)fread(buf, 1, 65535, f);
	fclose(f);
	unlink(path);
	cr_assert(n > 0);
	return buf;
}

static void
log_bad_bytes(void)
{
	log_setformat("json");
	log_setname("worker[3f2a9c]");
	log_request_set(json_object_new_string("req-\xff-1"), 7);
	log_warnx("name \"%s\" refused", "a\xc3\x28\xff\"\n\tb");
	log_request_clear();
	log_info("after the request");
}

Test(log, json_lines_valid_whatever_the_bytes)
{
	char *text = captured(log_bad_bytes), *nl;
	json_object *o, *r;

	nl = strchr(text, '\n');
	cr_assert(nl != NULL);
	*nl = '\0';
	cr_assert(utf8_valid(text, strlen(text)), "not UTF-8: %s", text);
	o = json_tokener_parse(text);
	cr_assert(o != NULL, "not JSON: %s", text);
	cr_expect_str_eq(
	    json_object_get_string(json_object_object_get(o, "process")),
	    "worker[3f2a9c]");
	cr_expect_str_eq(
	    json_object_get_string(json_object_object_get(o, "level")), "warn");
	cr_expect(
	    strstr(json_object_get_string(json_object_object_get(o, "message")),
	        "refused") != NULL);
	r = json_object_object_get(o, "request");
	cr_assert(r != NULL, "no request: %s", text);
	cr_expect_eq(
	    json_object_get_int(json_object_object_get(r, "session")), 7);
	json_object_put(o);
	/* The next line, after the request: none named. */
	o = json_tokener_parse(nl + 1);
	cr_assert(o != NULL, "not JSON: %s", nl + 1);
	cr_expect(json_object_object_get(o, "request") == NULL);
	json_object_put(o);
	free(text);
}

Test(log, unknown_format_refused)
{
	cr_expect_eq(log_setformat("xml"), -1);
	cr_expect_eq(log_setformat("text"), 0);
}

static void
log_control_sequences(void)
{
	log_setformat("text");
	log_setname("worker[3f2a9c]");
	log_warnx("sandbox said \"%s\"",
	    "\x1b]0;title\x07\x1b]52;c;Y2xpcA==\x1b\\\x1b[1A\x1b[2K"
	    "\r$ rm -rf /\xc2\x9b"
	    "31m\n");
}

/*
 * Text lines: what a sandbox or a client said shows its control
 * characters escaped (common/termtext.c), one record a line: no title,
 * clipboard, cursor or erase reaches the terminal that shows the log.
 */
Test(log, text_lines_hold_no_control_sequence)
{
	char *text = captured(log_control_sequences), *p;

	p = strstr(text, "worker[3f2a9c] warn: sandbox said ");
	cr_assert(p != NULL, "%s", text);
	cr_expect(
	    strstr(p,
	        "\"\\x1b]0;title\\x07\\x1b]52;c;Y2xpcA==\\x1b\\"
	        "\\x1b[1A\\x1b[2K\\x0d$ rm -rf /\\u009b31m\\x0a\"\n") != NULL,
	    "%s", text);
	for (p = text; *p != '\0'; p++)
		cr_expect((unsigned char)*p >= 0x20 || *p == '\n',
		    "control character 0x%02x in %s", (unsigned char)*p, text);
	cr_expect(strchr(text, '\n') == text + strlen(text) - 1,
	    "more than one line: %s", text);
	free(text);
}
