/* Integration: background processes (sandbox_exec background: true). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

static struct h_server *
setup(char **cid, const char *const *extra)
{
	struct h_server *s;

	s = h_startv(extra);
	json_object_put(h_initialize(s));
	*cid = h_create(s, NULL);
	return s;
}

static void
teardown(struct h_server *s, char *cid)
{
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

/* A tool call with printf-made arguments. */
static json_object *
call(struct h_server *s, const char *tool, int timeout_ms, const char *fmt, ...)
{
	char args[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	return h_call_tool_t(s, tool, args, timeout_ms);
}

/* Start a command in the background; its process_id. */
static long long
start(struct h_server *s, const char *cid, const char *command)
{
	json_object *args, *r;
	long long id;

	args = json_object_new_object();
	json_object_object_add(
	    args, "container_id", json_object_new_string(cid));
	json_object_object_add(
	    args, "commands", json_object_new_string(command));
	json_object_object_add(args, "background", json_object_new_boolean(1));
	json_object_object_add(
	    args, "timeout_seconds", json_object_new_int(120));
	r = h_call_tool_obj(s, "sandbox_exec", args, H_TIMEOUT_MS);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	id = h_int(r, "structuredContent.process_id");
	cr_assert_gt(id, 0);
	cr_expect_str_eq(
	    h_str(r, "structuredContent.process.state"), "running");
	json_object_put(r);
	return id;
}

static json_object *
wait_for(struct h_server *s, const char *cid, long long id, int secs)
{
	json_object *r;

	r = call(s, "process_wait", (secs + 30) * 1000,
	    "{\"container_id\":\"%s\",\"process_id\":%lld,"
	    "\"timeout_seconds\":%d}",
	    cid, id, secs);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	return r;
}

/* All of stdout, paged by process_output's offsets. */
static char *
all_stdout(
    struct h_server *s, const char *cid, long long id, int max, int *pages)
{
	long long off = 0;
	size_t len = 0;
	char *out = calloc(1, 1);
	json_object *r;
	const char *t;

	*pages = 0;
	for (;;) {
		r = call(s, "process_output", H_TIMEOUT_MS,
		    "{\"container_id\":\"%s\",\"process_id\":%lld,"
		    "\"stdout_offset\":%lld,\"max_bytes\":%d}",
		    cid, id, off, max);
		cr_assert(!h_is_error(r), "%s", h_text(r));
		t = h_str(r, "structuredContent.stdout");
		cr_assert_leq((int)strlen(t), max);
		out = realloc(out, len + strlen(t) + 1);
		memcpy(out + len, t, strlen(t) + 1);
		len += strlen(t);
		cr_assert_eq(h_int(r, "structuredContent.stdout_next_offset"),
		    off + (long long)strlen(t));
		off = h_int(r, "structuredContent.stdout_next_offset");
		(*pages)++;
		if (h_int(r, "structuredContent.stdout_remaining") == 0) {
			json_object_put(r);
			break;
		}
		json_object_put(r);
		cr_assert_lt(*pages, 1000);
	}
	return out;
}

Test(background, outlives_calls_then_term, .timeout = 120)
{
	struct h_server *s;
	json_object *r;
	long long id;
	char *cid, *out;
	int i;

	s = setup(&cid, NULL);
	id = start(s, cid,
	    "i=0; while :; do echo tick $i; i=$((i+1)); "
	    "sleep 0.2; done");
	for (i = 0; i < 5; i++) {
		out = h_exec_ok(s, cid, "echo other");
		cr_expect_str_eq(out, "other\n");
		free(out);
	}
	/* Five calls may take less than its first line: wait for that. */
	r = call(s, "process_output", H_TIMEOUT_MS,
	    "{\"container_id\":\"%s\",\"process_id\":%lld,"
	    "\"wait_seconds\":20}",
	    cid, id);
	cr_expect(h_contains(h_str(r, "structuredContent.stdout"), "tick 0"),
	    "%s", h_text(r));
	json_object_put(r);
	r = call(
	    s, "process_list", H_TIMEOUT_MS, "{\"container_id\":\"%s\"}", cid);
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect_eq(h_int(r, "structuredContent.processes.0.process_id"), id);
	cr_expect_str_eq(
	    h_str(r, "structuredContent.processes.0.state"), "running");
	cr_expect_gt(h_int(r, "structuredContent.processes.0.stdout_bytes"), 0);
	json_object_put(r);
	r = call(s, "process_signal", H_TIMEOUT_MS,
	    "{\"container_id\":\"%s\",\"process_id\":%lld,\"signal\":\"TERM\"}",
	    cid, id);
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect(h_bool(r, "structuredContent.sent"));
	json_object_put(r);
	r = wait_for(s, cid, id, 20);
	cr_expect(h_bool(r, "structuredContent.exited"), "%s", h_text(r));
	cr_expect_str_eq(h_str(r, "structuredContent.process.state"), "exited");
	cr_expect_eq(h_int(r, "structuredContent.process.signal"), 15, "%s",
	    json_object_to_json_string(r));
	json_object_put(r);
	out = h_exec_ok(s, cid, "ps -eo args");
	cr_expect(!h_contains(out, "tick"), "%s", out);
	free(out);
	teardown(s, cid);
}

Test(background, kill_after_trapped_term, .timeout = 120)
{
	struct h_server *s;
	json_object *r;
	long long id;
	char *cid;

	s = setup(&cid, NULL);
	id = start(s, cid,
	    "trap 'echo got TERM' TERM; echo ready; "
	    "while :; do sleep 0.1; done");
	r = call(s, "process_output", H_TIMEOUT_MS,
	    "{\"container_id\":\"%s\",\"process_id\":%lld,\"wait_seconds\":20}",
	    cid, id);
	cr_expect(h_contains(h_str(r, "structuredContent.stdout"), "ready"),
	    "%s", h_text(r));
	json_object_put(r);
	json_object_put(call(s, "process_signal", H_TIMEOUT_MS,
	    "{\"container_id\":\"%s\",\"process_id\":%lld}", cid, id));
	r = wait_for(s, cid, id, 2);
	cr_expect(!h_bool(r, "structuredContent.exited"), "%s", h_text(r));
	json_object_put(r);
	r = call(s, "process_output", H_TIMEOUT_MS,
	    "{\"container_id\":\"%s\",\"process_id\":%lld}", cid, id);
	cr_expect(h_contains(h_str(r, "structuredContent.stdout"), "got TERM"),
	    "%s", h_text(r));
	json_object_put(r);
	json_object_put(call(s, "process_signal", H_TIMEOUT_MS,
	    "{\"container_id\":\"%s\",\"process_id\":%lld,\"signal\":\"KILL\"}",
	    cid, id));
	r = wait_for(s, cid, id, 20);
	cr_expect(h_bool(r, "structuredContent.exited"), "%s", h_text(r));
	cr_expect_eq(h_int(r, "structuredContent.process.signal"), 9, "%s",
	    json_object_to_json_string(r));
	json_object_put(r);
	/* A signal to a process that ended is not sent. */
	r = call(s, "process_signal", H_TIMEOUT_MS,
	    "{\"container_id\":\"%s\",\"process_id\":%lld}", cid, id);
	cr_expect(!h_is_error(r));
	cr_expect(!h_bool(r, "structuredContent.sent"));
	json_object_put(r);
	teardown(s, cid);
}

Test(background, long_poll_returns_on_output, .timeout = 120)
{
	struct h_server *s;
	json_object *r;
	struct timespec a, b;
	long long id;
	double secs;
	char *cid;

	s = setup(&cid, NULL);
	id = start(s, cid, "sleep 2; echo late; sleep 30");
	clock_gettime(CLOCK_MONOTONIC, &a);
	r = call(s, "process_output", 60000,
	    "{\"container_id\":\"%s\",\"process_id\":%lld,\"wait_seconds\":40}",
	    cid, id);
	clock_gettime(CLOCK_MONOTONIC, &b);
	secs = (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect_str_eq(h_str(r, "structuredContent.stdout"), "late\n");
	cr_expect_str_eq(h_str(r, "structuredContent.state"), "running");
	cr_expect_eq(h_int(r, "structuredContent.stdout_next_offset"), 5);
	cr_expect_lt(secs, 15, "long poll took %.1f s", secs);
	json_object_put(r);
	/* With nothing new, the wait runs out and the state is current. */
	r = call(s, "process_output", 60000,
	    "{\"container_id\":\"%s\",\"process_id\":%lld,\"wait_seconds\":1,"
	    "\"stdout_offset\":5}",
	    cid, id);
	cr_expect_str_eq(h_str(r, "structuredContent.stdout"), "");
	cr_expect_eq(h_int(r, "structuredContent.stdout_next_offset"), 5);
	json_object_put(r);
	teardown(s, cid);
}

Test(background, ninth_is_refused, .timeout = 120)
{
	struct h_server *s;
	json_object *r;
	char *cid;
	int i;

	s = setup(&cid, NULL);
	for (i = 0; i < 8; i++)
		(void)start(s, cid, "sleep 100");
	r = call(s, "sandbox_exec", H_TIMEOUT_MS,
	    "{\"container_id\":\"%s\",\"commands\":\"sleep 100\","
	    "\"background\":true}",
	    cid);
	cr_expect(h_is_error(r));
	cr_expect(h_contains(h_text(r), "--max-background"), "%s", h_text(r));
	json_object_put(r);
	/* Foreground commands still run. */
	free(h_exec_ok(s, cid, "true"));
	teardown(s, cid);
}

Test(background, stop_ends_them_and_their_waiters, .timeout = 120)
{
	struct h_server *s;
	json_object *args, *r;
	long long id;
	long rid;
	char *cid;

	s = setup(&cid, NULL);
	id = start(s, cid, "sleep 300");
	args = json_object_new_object();
	json_object_object_add(
	    args, "container_id", json_object_new_string(cid));
	json_object_object_add(args, "process_id", json_object_new_int64(id));
	json_object_object_add(args, "wait_seconds", json_object_new_int(120));
	rid = h_send_tool(s, "process_output", args);
	usleep(300 * 1000);
	h_stop(s, cid);
	r = h_wait_id(s, rid, H_TIMEOUT_MS);
	cr_assert_not_null(r);
	r = h_tool_result(r);
	cr_expect(h_is_error(r));
	cr_expect(h_contains(h_text(r), "stopped"), "%s", h_text(r));
	json_object_put(r);
	r = call(
	    s, "process_list", H_TIMEOUT_MS, "{\"container_id\":\"%s\"}", cid);
	cr_expect(h_is_error(r));
	json_object_put(r);
	free(cid);
	h_finish(s);
}

Test(background, offsets_page_through_output, .timeout = 120)
{
	struct h_server *s;
	json_object *r;
	long long id;
	char *cid, *out;
	int pages;

	s = setup(&cid, NULL);
	id = start(s, cid,
	    "i=0; while [ $i -lt 3000 ]; do "
	    "printf '%0100d\\n' $i; i=$((i+1)); done");
	json_object_put(wait_for(s, cid, id, 60));
	out = all_stdout(s, cid, id, 65536, &pages);
	cr_expect_eq(strlen(out), 3000 * 101);
	cr_expect_geq(pages, 5);
	cr_expect(strncmp(out + 2999 * 101, "0000", 4) == 0);
	free(out);
	r = call(
	    s, "process_list", H_TIMEOUT_MS, "{\"container_id\":\"%s\"}", cid);
	cr_expect_eq(h_int(r, "structuredContent.processes.0.exit_code"), 0);
	cr_expect_eq(
	    h_int(r, "structuredContent.processes.0.stdout_bytes"), 3000 * 101);
	json_object_put(r);
	teardown(s, cid);
}

Test(background, spool_cap_drops_oldest, .timeout = 120)
{
	static const char *const extra[] = {"--spool-mb", "1", NULL};
	struct h_server *s;
	json_object *r;
	long long id;
	char *cid;

	s = setup(&cid, extra);
	id = start(s, cid, "head -c 3000000 /dev/zero | tr '\\0' x; echo end");
	json_object_put(wait_for(s, cid, id, 60));
	r = call(s, "process_output", H_TIMEOUT_MS,
	    "{\"container_id\":\"%s\",\"process_id\":%lld,"
	    "\"max_bytes\":1048576}",
	    cid, id);
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect_gt(h_int(r, "structuredContent.stdout_skipped"), 1900000,
	    "%s", json_object_to_json_string(h_get(r, "structuredContent")));
	cr_expect_gt(h_int(r, "structuredContent.process.stdout_dropped"), 0);
	cr_expect_eq(
	    h_int(r, "structuredContent.process.stdout_bytes"), 3000004);
	cr_expect(h_contains(h_str(r, "structuredContent.stdout"), "xend\n"));
	cr_expect_eq(h_int(r, "structuredContent.stdout_next_offset"), 3000004);
	json_object_put(r);
	teardown(s, cid);
}

Test(background, arguments_are_checked, .timeout = 90)
{
	struct h_server *s;
	json_object *r;
	char *cid;

	s = setup(&cid, NULL);
	r = call(s, "process_output", H_TIMEOUT_MS,
	    "{\"container_id\":\"%s\",\"process_id\":\"one\"}", cid);
	cr_expect(h_is_error(r), "%s", h_text(r));
	json_object_put(r);
	r = call(s, "process_wait", H_TIMEOUT_MS,
	    "{\"container_id\":\"%s\",\"process_id\":999}", cid);
	cr_expect(h_is_error(r));
	cr_expect(h_contains(h_text(r), "no background process 999"), "%s",
	    h_text(r));
	json_object_put(r);
	r = call(s, "process_signal", H_TIMEOUT_MS,
	    "{\"container_id\":\"nope-nope-nope\",\"process_id\":1}");
	cr_expect(h_is_error(r));
	json_object_put(r);
	r = call(s, "process_signal", H_TIMEOUT_MS,
	    "{\"container_id\":\"%s\",\"process_id\":1,\"signal\":\"STOP\"}",
	    cid);
	cr_expect(h_is_error(r));
	json_object_put(r);
	r = call(s, "process_list", H_TIMEOUT_MS, "{}");
	cr_expect(h_is_error(r));
	json_object_put(r);
	/* timeout_seconds: 0 needs --max-background-seconds. */
	r = call(s, "sandbox_exec", H_TIMEOUT_MS,
	    "{\"container_id\":\"%s\",\"commands\":\"sleep 1\","
	    "\"background\":true,\"timeout_seconds\":0}",
	    cid);
	cr_expect(h_is_error(r));
	cr_expect(
	    h_contains(h_text(r), "--max-background-seconds"), "%s", h_text(r));
	json_object_put(r);
	/* ... and is never a foreground command's. */
	r = call(s, "sandbox_exec", H_TIMEOUT_MS,
	    "{\"container_id\":\"%s\",\"commands\":\"true\","
	    "\"timeout_seconds\":0}",
	    cid);
	cr_expect(h_is_error(r));
	cr_expect(
	    h_contains(h_text(r), "0 only with background"), "%s", h_text(r));
	json_object_put(r);
	r = call(s, "sandbox_exec", H_TIMEOUT_MS,
	    "{\"container_id\":\"%s\",\"commands\":[\"true\",\"true\"],"
	    "\"background\":true}",
	    cid);
	cr_expect(h_is_error(r));
	json_object_put(r);
	teardown(s, cid);
}

Test(background, timeout_still_applies, .timeout = 90)
{
	static const char *const extra[] = {
	    "--max-background-seconds", "2", NULL};
	struct h_server *s;
	json_object *r;
	char *cid;
	long long id;

	s = setup(&cid, extra);
	r = call(s, "sandbox_exec", H_TIMEOUT_MS,
	    "{\"container_id\":\"%s\",\"commands\":\"sleep 60\","
	    "\"background\":true,\"timeout_seconds\":0}",
	    cid);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	id = h_int(r, "structuredContent.process_id");
	json_object_put(r);
	r = wait_for(s, cid, id, 30);
	cr_expect(h_bool(r, "structuredContent.exited"));
	cr_expect(h_bool(r, "structuredContent.process.timed_out"), "%s",
	    json_object_to_json_string(r));
	json_object_put(r);
	teardown(s, cid);
}

Test(background, subscribed_output_sends_updated, .timeout = 120)
{
	struct h_server *s;
	json_object *m, *p, *r;
	char *cid, params[256], uri[200];
	size_t i, n = 0;
	long long id;

	s = setup(&cid, NULL);
	id = start(s, cid, "sleep 1; echo a; sleep 1; echo b; sleep 60");
	r = call(
	    s, "process_list", H_TIMEOUT_MS, "{\"container_id\":\"%s\"}", cid);
	snprintf(uri, sizeof uri, "%s",
	    h_str(r, "structuredContent.processes.0.stdout_uri"));
	json_object_put(r);
	snprintf(params, sizeof params, "{\"uri\":\"%s\"}", uri);
	m = h_request(s, "resources/subscribe", params, 5000);
	cr_expect_not_null(
	    h_get(m, "result"), "%s", json_object_to_json_string(m));
	json_object_put(m);
	/* Until both lines are there, then the notes are looked at. */
	r = call(s, "process_output", 60000,
	    "{\"container_id\":\"%s\",\"process_id\":%lld,\"wait_seconds\":30,"
	    "\"stdout_offset\":2}",
	    cid, id);
	cr_expect_str_eq(h_str(r, "structuredContent.stdout"), "b\n");
	json_object_put(r);
	usleep(500000);
	json_object_put(h_request(s, "ping", NULL, 5000));
	for (i = 0; i < json_object_array_length(s->notes); i++) {
		p = json_object_array_get_idx(s->notes, i);
		if (h_str(p, "method") != NULL &&
		    strcmp(h_str(p, "method"),
		        "notifications/resources/updated") == 0 &&
		    strcmp(h_str(p, "params.uri"), uri) == 0)
			n++;
	}
	cr_expect_geq(n, 2, "updated notifications of %s: %zu", uri, n);
	teardown(s, cid);
}
