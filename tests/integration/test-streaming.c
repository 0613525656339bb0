/*
 * Integration: live output over raw JSON-RPC on stdio.  Progress
 * notifications (token echoed, increasing, rate-limited, heartbeat, none
 * after the response), notifications/cancelled (no response ever, the
 * processes gone, the connection still answering), paged exec output
 * resources and their edge cases, resource errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

#define URI_MAX 256

/* A server, initialized, with one sandbox. */
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

/* Send a sandbox_exec tools/call of one command with _meta.progressToken
 * (JSON text, or NULL for none); its id. */
static long
send_exec(struct h_server *s, const char *cid, const char *cmd,
    const char *token, int timeout_s)
{
	json_object *p, *args, *meta;

	args = json_object_new_object();
	json_object_object_add(
	    args, "container_id", json_object_new_string(cid));
	json_object_object_add(args, "commands", json_object_new_string(cmd));
	if (timeout_s > 0)
		json_object_object_add(
		    args, "timeout_seconds", json_object_new_int(timeout_s));
	p = json_object_new_object();
	json_object_object_add(
	    p, "name", json_object_new_string("sandbox_exec"));
	json_object_object_add(p, "arguments", args);
	if (token != NULL) {
		meta = json_object_new_object();
		json_object_object_add(meta, "progressToken", h_parse(token));
		json_object_object_add(p, "_meta", meta);
	}
	return h_send_request_obj(s, "tools/call", p);
}

static int
is_progress(json_object *m)
{
	const char *method = h_str(m, "method");

	return method != NULL && strcmp(method, "notifications/progress") == 0;
}

/*
 * Read messages until the response with this id comes (returned) or the
 * time is up (NULL).  Progress notifications whose token equals tok (any
 * token if tok is NULL) go to progress as their params with "at_ms" (ms
 * since start) added; other responses are queued and other
 * notifications kept, as the harness does.
 */
static json_object *
collect(struct h_server *s, long id, json_object *tok, json_object *progress,
    long long start, int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms, left;
	json_object *m, *mid, *params;

	for (;;) {
		left = deadline - h_now_ms();
		if (left <= 0)
			return NULL;
		if ((m = h_read_message(s, (int)left)) == NULL)
			return NULL;
		if (is_progress(m)) {
			params = h_get(m, "params");
			if (params != NULL &&
			    (tok == NULL ||
			        json_object_equal(
			            h_get(params, "progressToken"), tok))) {
				json_object_get(params);
				json_object_object_add(params, "at_ms",
				    json_object_new_int64(h_now_ms() - start));
				json_object_array_add(progress, params);
				json_object_put(m);
				continue;
			}
		}
		if (json_object_object_get_ex(m, "method", NULL)) {
			json_object_array_add(s->notes, m);
			continue;
		}
		if (id >= 0 && json_object_object_get_ex(m, "id", &mid) &&
		    json_object_is_type(mid, json_type_int) &&
		    json_object_get_int64(mid) == id)
			return m;
		json_object_array_add(s->queue, m);
	}
}

/* Progress values strictly increase and every notification echoes the
 * token with its JSON type. */
static void
check_progress(json_object *progress, json_object *tok)
{
	size_t i, n = json_object_array_length(progress);
	double prev = -1e300, v;
	json_object *p, *pv;

	for (i = 0; i < n; i++) {
		p = json_object_array_get_idx(progress, i);
		cr_expect(json_object_equal(h_get(p, "progressToken"), tok),
		    "token not echoed: %s", json_object_to_json_string(p));
		cr_expect(json_object_get_type(h_get(p, "progressToken")) ==
		              json_object_get_type(tok),
		    "token type changed: %s", json_object_to_json_string(p));
		pv = h_get(p, "progress");
		cr_assert(pv != NULL &&
		              (json_object_is_type(pv, json_type_int) ||
		                  json_object_is_type(pv, json_type_double)),
		    "progress is not a number: %s",
		    json_object_to_json_string(p));
		v = json_object_get_double(pv);
		cr_expect_gt(v, prev, "progress not increasing: %s",
		    json_object_to_json_string(progress));
		prev = v;
	}
}

/* All the progress messages, joined. */
static char *
messages(json_object *progress)
{
	size_t i, n = json_object_array_length(progress), len = 0;
	const char *m;
	char *all;

	all = calloc(1, 1);
	cr_assert(all != NULL);
	for (i = 0; i < n; i++) {
		m = h_str(json_object_array_get_idx(progress, i), "message");
		if (m == NULL)
			continue;
		all = realloc(all, len + strlen(m) + 2);
		cr_assert(all != NULL);
		memcpy(all + len, m, strlen(m));
		len += strlen(m);
		all[len++] = '\n';
		all[len] = '\0';
	}
	return all;
}

/* Progress notifications (any token) that come in the next ms. */
static int
progress_within(struct h_server *s, int ms)
{
	json_object *p;
	int n;

	p = json_object_new_array();
	cr_assert_null(collect(s, -1, NULL, p, h_now_ms(), ms));
	n = (int)json_object_array_length(p);
	if (n > 0)
		fprintf(stderr, "late progress: %s\n",
		    json_object_to_json_string(p));
	json_object_put(p);
	return n;
}

Test(streaming, progress_tokens_echoed, .timeout = 120)
{
	struct h_server *s;
	json_object *stok, *itok, *sp, *ip, *r, *m;
	long sid, iid;
	char *cid, *all;
	long long t0;
	int have_s = 0, have_i = 0;

	s = setup(&cid, NULL);
	stok = h_parse("\"tok-\\u00e9-1\"");
	itok = h_parse("4242");
	sp = json_object_new_array();
	ip = json_object_new_array();

	/* Two calls at once in the same sandbox, each with its token. */
	t0 = h_now_ms();
	sid =
	    send_exec(s, cid, "for i in 1 2 3; do echo alpha$i; sleep 1; done",
	        "\"tok-\\u00e9-1\"", 30);
	iid = send_exec(s, cid, "for i in 1 2 3; do echo beta$i; sleep 1; done",
	    "4242", 30);
	while (!have_s || !have_i) {
		json_object *any = json_object_new_array();
		json_object *mid;
		size_t i;

		m = collect(s, -1, NULL, any, t0, 100);
		cr_assert_null(m);
		for (i = 0; i < json_object_array_length(any); i++) {
			json_object *p = json_object_array_get_idx(any, i);

			if (json_object_equal(h_get(p, "progressToken"), stok))
				json_object_array_add(sp, json_object_get(p));
			else if (json_object_equal(
			             h_get(p, "progressToken"), itok))
				json_object_array_add(ip, json_object_get(p));
			else
				cr_expect_fail("progress with a token of no "
				               "call: %s",
				    json_object_to_json_string(p));
		}
		json_object_put(any);
		while (json_object_array_length(s->queue) > 0) {
			m = json_object_get(
			    json_object_array_get_idx(s->queue, 0));
			json_object_array_del_idx(s->queue, 0, 1);
			json_object_object_get_ex(m, "id", &mid);
			r = h_tool_result(json_object_get(m));
			if (json_object_get_int64(mid) == sid) {
				cr_expect_str_eq(h_str(h_first(r), "stdout"),
				    "alpha1\nalpha2\nalpha3\n");
				have_s = 1;
			} else if (json_object_get_int64(mid) == iid) {
				cr_expect_str_eq(h_str(h_first(r), "stdout"),
				    "beta1\nbeta2\nbeta3\n");
				have_i = 1;
			}
			json_object_put(r);
			json_object_put(m);
		}
		cr_assert_lt(h_now_ms() - t0, 30000, "no answers in 30 s");
	}
	/* Each call saw its own output, before its response, at least
	 * twice, with increasing progress. */
	cr_expect_geq(json_object_array_length(sp), 2, "progress: %s",
	    json_object_to_json_string(sp));
	cr_expect_geq(json_object_array_length(ip), 2, "progress: %s",
	    json_object_to_json_string(ip));
	check_progress(sp, stok);
	check_progress(ip, itok);
	all = messages(sp);
	cr_expect(h_contains(all, "alpha1") && h_contains(all, "alpha2"),
	    "messages: %s", all);
	cr_expect(!h_contains(all, "beta"), "another call's output: %s", all);
	free(all);
	all = messages(ip);
	cr_expect(h_contains(all, "beta1") && h_contains(all, "beta2"),
	    "messages: %s", all);
	cr_expect(!h_contains(all, "alpha"), "another call's output: %s", all);
	free(all);
	cr_expect_lt(h_int(json_object_array_get_idx(sp, 0), "at_ms"), 2000,
	    "the first progress came late: %s", json_object_to_json_string(sp));

	/* Nothing after the responses. */
	cr_expect_eq(progress_within(s, 1500), 0);

	json_object_put(sp);
	json_object_put(ip);
	json_object_put(stok);
	json_object_put(itok);
	teardown(s, cid);
}

Test(streaming, no_token_no_progress, .timeout = 90)
{
	struct h_server *s;
	json_object *p, *m;
	char *cid;
	long id;

	s = setup(&cid, NULL);
	p = json_object_new_array();
	id = send_exec(s, cid, "echo a; sleep 1; echo b", NULL, 30);
	m = collect(s, id, NULL, p, h_now_ms(), 30000);
	cr_assert_not_null(m);
	json_object_put(h_tool_result(m));
	cr_expect_eq(json_object_array_length(p), 0,
	    "progress without a token: %s", json_object_to_json_string(p));
	json_object_put(p);
	teardown(s, cid);
}

Test(streaming, progress_rate_limited, .timeout = 120)
{
	struct h_server *s;
	json_object *tok, *p, *m, *r;
	long long t0, took;
	char *cid, *all;
	long id;
	size_t n;

	s = setup(&cid, NULL);
	tok = h_parse("\"rate\"");
	p = json_object_new_array();
	/* 1,000 lines over about a second. */
	t0 = h_now_ms();
	id = send_exec(s, cid,
	    "python3 -u -c 'import time\n"
	    "for i in range(1000):\n"
	    "    print(\"line\", i)\n"
	    "    time.sleep(0.001)\n'",
	    "\"rate\"", 30);
	m = collect(s, id, tok, p, t0, 30000);
	took = h_now_ms() - t0;
	cr_assert_not_null(m, "no answer");
	r = h_tool_result(m);
	cr_expect_eq(h_int(h_first(r), "exit_code"), 0, "%s", h_text(r));
	cr_expect_eq(h_int(h_first(r), "stdout_bytes"), 8890);
	n = json_object_array_length(p);
	fprintf(stderr,
	    "streaming: %zu progress notifications for 1,000 lines in "
	    "%lld ms\n",
	    n, took);
	cr_expect_geq(n, 2, "progress: %s", json_object_to_json_string(p));
	/* At most ~10 a second, plus slack for the first and the last. */
	cr_expect_leq(n, (size_t)(took / 100 + 5),
	    "%zu notifications in %lld ms: not rate-limited", n, took);
	if (took <= 1500)
		cr_expect_leq(n, 15);
	check_progress(p, tok);
	all = messages(p);
	cr_expect(h_contains(all, "line "), "messages: %.500s", all);
	free(all);
	json_object_put(r);
	cr_expect_eq(progress_within(s, 1000), 0);
	json_object_put(p);
	json_object_put(tok);
	teardown(s, cid);
}

Test(streaming, progress_heartbeat, .timeout = 120)
{
	struct h_server *s;
	json_object *tok, *p, *m;
	long long t0;
	char *cid;
	long id;

	s = setup(&cid, NULL);
	tok = h_parse("7");
	p = json_object_new_array();
	/* Silent for 7 s: a heartbeat every 5 s keeps the client's timeout
	 * from running out. */
	t0 = h_now_ms();
	id = send_exec(s, cid, "sleep 7; echo done", "7", 30);
	m = collect(s, id, tok, p, t0, 30000);
	cr_assert_not_null(m, "no answer");
	json_object_put(h_tool_result(m));
	cr_expect_geq(json_object_array_length(p), 1,
	    "no heartbeat during 7 silent seconds");
	if (json_object_array_length(p) >= 1) {
		long long at = h_int(json_object_array_get_idx(p, 0), "at_ms");

		cr_expect(at >= 3000 && at <= 6500,
		    "first heartbeat at %lld ms, expected ~5000", at);
	}
	check_progress(p, tok);
	json_object_put(p);
	json_object_put(tok);
	teardown(s, cid);
}

/* Lines of ps -eo args in the sandbox that end with what (the
 * command's own process, or the shell running a builtin loop). */
static int
sandbox_runs(struct h_server *s, const char *cid, const char *what)
{
	char *out, *line, *save = NULL;
	size_t len, wlen = strlen(what);
	int n = 0;

	out = h_exec_ok(s, cid, "ps -eo args");
	for (line = strtok_r(out, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		while (*line == ' ')
			line++;
		len = strlen(line);
		if (len < wlen || strcmp(line + len - wlen, what) != 0)
			continue;
		/* The wrapping shell of a lone command ends like it. */
		if (strncmp(line, "/bin/sh -c ", 11) == 0 &&
		    strncmp(what, "while", 5) != 0)
			continue;
		{
			fprintf(stderr, "still running: %s\n", line);
			n++;
		}
	}
	free(out);
	return n;
}

/* Wait up to ms for no process matching what; whether they went. */
static int
gone_within(struct h_server *s, const char *cid, const char *what, int ms)
{
	long long deadline = h_now_ms() + ms;

	for (;;) {
		if (sandbox_runs(s, cid, what) == 0)
			return 1;
		if (h_now_ms() >= deadline)
			return 0;
		usleep(100000);
	}
}

Test(streaming, cancel_raw, .timeout = 120)
{
	struct h_server *s;
	json_object *tok, *p, *m, *st;
	char *cid, params[128], *text;
	long id, other;
	long long t0;

	s = setup(&cid, NULL);
	tok = h_parse("\"cx\"");
	p = json_object_new_array();
	t0 = h_now_ms();
	other = send_exec(s, cid, "sleep 3; echo survived", NULL, 30);
	id = send_exec(s, cid, "echo started; sleep 1000 & while :; do :; done",
	    "\"cx\"", 60);
	/* Wait for it to run (its first progress). */
	cr_assert_null(
	    collect(s, id, tok, p, t0, 1500), "the endless call answered");
	cr_assert_geq(json_object_array_length(p), 1, "no progress in 1.5 s");
	cr_assert_eq(sandbox_runs(s, cid, "sleep 1000"), 1);

	snprintf(params, sizeof params,
	    "{\"requestId\":%ld,\"reason\":\"test cancel\"}", id);
	h_send_notification(s, "notifications/cancelled", params);
	t0 = h_now_ms();
	/* The connection goes on: ping answered. */
	m = h_request(s, "ping", NULL, 5000);
	cr_expect_not_null(h_get(m, "result"));
	json_object_put(m);
	cr_expect(gone_within(s, cid, "sleep 1000", 2000),
	    "the cancelled call's processes outlived the cancel by 2 s");
	cr_expect(gone_within(s, cid, "while :; do :; done", 500));
	/* Within 1 s of the cancel the kill is done. */
	cr_expect_lt(h_now_ms() - t0, 2500);

	/* The other call carries on. */
	m = h_wait_id(s, other, 10000);
	cr_assert_not_null(m, "the other call never answered");
	m = h_tool_result(m);
	cr_expect_str_eq(h_str(h_first(m), "stdout"), "survived\n");
	cr_expect(!h_bool(h_first(m), "cancelled"));
	json_object_put(m);

	/* No response for the cancelled id, ever; no progress after a
	 * short grace for what was already on its way. */
	json_object_array_del_idx(p, 0, json_object_array_length(p));
	cr_expect_null(
	    collect(s, id, tok, p, t0, 300), "cancelled call answered");
	json_object_array_del_idx(p, 0, json_object_array_length(p));
	m = collect(s, id, tok, p, t0, 2500);
	cr_expect_null(m, "a response for the cancelled request: %s",
	    json_object_to_json_string(m));
	cr_expect_eq(json_object_array_length(p), 0,
	    "progress after the cancel: %s", json_object_to_json_string(p));

	/* Counted as cancelled. */
	m = h_request(
	    s, "resources/read", "{\"uri\":\"sandbox://stats\"}", 5000);
	text = (char *)h_str(m, "result.contents.0.text");
	cr_assert_not_null(text, "%s", json_object_to_json_string(m));
	st = h_parse(text);
	cr_expect_geq(h_int(st, "execs.cancelled"), 1, "%s", text);
	json_object_put(st);
	json_object_put(m);

	/* The sandbox still works. */
	text = h_exec_ok(s, cid, "echo after");
	cr_expect_str_eq(text, "after\n");
	free(text);
	json_object_put(p);
	json_object_put(tok);
	teardown(s, cid);
}

Test(streaming, cancel_string_id_and_unknown, .timeout = 120)
{
	struct h_server *s;
	json_object *m, *jid;
	char *cid, line[512];

	s = setup(&cid, NULL);
	/* A request with a string id, cancelled by that string. */
	snprintf(line, sizeof line,
	    "{\"jsonrpc\":\"2.0\",\"id\":\"call-x\",\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"sandbox_exec\",\"arguments\":{"
	    "\"container_id\":\"%s\",\"commands\":\"sleep 1001\"}}}",
	    cid);
	h_send_line(s, line);
	usleep(1000000);
	cr_assert_eq(sandbox_runs(s, cid, "sleep 1001"), 1);
	/* Unknown ids and a number that only looks like the string are
	 * ignored. */
	h_send_notification(
	    s, "notifications/cancelled", "{\"requestId\":999}");
	h_send_notification(
	    s, "notifications/cancelled", "{\"requestId\":\"nope\"}");
	h_send_notification(s, "notifications/cancelled", "{}");
	m = h_request(s, "ping", NULL, 5000);
	json_object_put(m);
	cr_expect_eq(sandbox_runs(s, cid, "sleep 1001"), 1,
	    "a cancel for another id killed this call");

	h_send_notification(
	    s, "notifications/cancelled", "{\"requestId\":\"call-x\"}");
	cr_expect(gone_within(s, cid, "sleep 1001", 2000));
	jid = json_object_new_string("call-x");
	m = h_wait_id_json(s, jid, 2000);
	cr_expect_null(m, "a response for the cancelled request: %s",
	    json_object_to_json_string(m));
	json_object_put(jid);
	teardown(s, cid);
}

/* resources/read of uri+query: contents[0] (the response is kept in
 * *resp, to be released). */
static json_object *
read_page(
    struct h_server *s, const char *uri, const char *query, json_object **resp)
{
	char full[URI_MAX + 128];
	json_object *c;

	snprintf(full, sizeof full, "%s%s", uri, query);
	*resp = h_read_uri(s, full);
	c = h_get(*resp, "result.contents.0");
	cr_assert_not_null(
	    c, "read %s: %s", full, json_object_to_json_string(*resp));
	cr_expect_eq(
	    json_object_array_length(h_get(*resp, "result.contents")), 1);
	return c;
}

static int
error_code(struct h_server *s, const char *uri)
{
	json_object *m;
	int code;

	m = h_read_uri(s, uri);
	cr_assert_not_null(h_get(m, "error"), "read %s did not fail: %.500s",
	    uri, json_object_to_json_string(m));
	code = (int)h_int(m, "error.code");
	cr_expect_not_null(h_str(m, "error.message"));
	json_object_put(m);
	return code;
}

static int
has_key(json_object *o, const char *key)
{
	return json_object_object_get_ex(o, key, NULL);
}

Test(streaming, paging_edges, .timeout = 120)
{
	const char *extra[] = {"--inline-output", "1000", NULL};
	struct h_server *s;
	json_object *r, *f, *c, *resp;
	char *cid, uri[URI_MAX], q[URI_MAX + 128], *expect, *text;
	const char *out, *bad[] = {"?offset=abc", "?offset=-1", "?length=x",
	                     "?length=-5", "?offset=", "?offset=1e3", "?foo=1",
	                     "?offset=0x10", "?offset=1&length=2&bogus", NULL};
	long long size;
	int i, st;

	s = setup(&cid, extra);
	r = h_exec(s, cid, "seq 1 300000; echo small >&2", 60);
	f = h_first(r);
	cr_assert_eq(h_int(f, "exit_code"), 0, "%s", h_text(r));
	size = h_int(f, "stdout_bytes");
	cr_assert_eq(size, 1988895);
	cr_expect(strlen(h_str(f, "stdout")) < 1200, "inline %zu bytes",
	    strlen(h_str(f, "stdout")));
	cr_expect_str_eq(h_str(f, "stderr"), "small\n");
	cr_expect_eq(h_get(f, "stderr_uri"), NULL, "stderr was not cut");
	cr_assert_not_null(h_str(f, "stdout_uri"));
	snprintf(uri, sizeof uri, "%s", h_str(f, "stdout_uri"));
	/* The full id: another session may read it (a detached one's). */
	snprintf(q, sizeof q, "sandbox://%s/exec/%lld/stdout", cid,
	    h_int(f, "exec_id"));
	cr_expect_str_eq(uri, q);
	/* A resource_link in content. */
	cr_expect_str_eq(h_str(r, "content.1.type"), "resource_link");
	cr_expect_str_eq(h_str(r, "content.1.uri"), uri);
	json_object_put(r);
	expect = h_run("seq 1 300000", &st);
	cr_assert_eq(st, 0);
	cr_assert_eq((long long)strlen(expect), size);

	/* Default page: 65536 from 0. */
	c = read_page(s, uri, "", &resp);
	cr_expect_str_eq(h_str(c, "uri"), uri);
	cr_expect_str_eq(h_str(c, "mimeType"), "text/plain");
	cr_expect_eq(h_int(c, "_meta.offset"), 0);
	cr_expect_eq(h_int(c, "_meta.length"), 65536);
	cr_expect_eq(h_int(c, "_meta.size"), size);
	cr_expect_eq(h_int(c, "_meta.next_offset"), 65536);
	cr_expect(strncmp(h_str(c, "text"), expect, 65536) == 0 &&
	          strlen(h_str(c, "text")) == 65536);
	json_object_put(resp);

	/* A middle page. */
	c = read_page(s, uri, "?offset=100&length=23", &resp);
	cr_expect_eq(h_int(c, "_meta.offset"), 100);
	cr_expect_eq(h_int(c, "_meta.length"), 23);
	cr_expect_eq(h_int(c, "_meta.next_offset"), 123);
	cr_expect(strlen(h_str(c, "text")) == 23 &&
	          strncmp(h_str(c, "text"), expect + 100, 23) == 0);
	json_object_put(resp);

	/* Order of the parameters does not matter. */
	c = read_page(s, uri, "?length=23&offset=100", &resp);
	cr_expect_eq(h_int(c, "_meta.offset"), 100);
	cr_expect_eq(h_int(c, "_meta.length"), 23);
	json_object_put(resp);

	/* A length above the maximum is held to 1 MiB. */
	c = read_page(s, uri, "?offset=0&length=2000000", &resp);
	cr_expect_eq(h_int(c, "_meta.length"), 1048576);
	cr_expect_eq(h_int(c, "_meta.next_offset"), 1048576);
	cr_expect_eq(strlen(h_str(c, "text")), 1048576);
	json_object_put(resp);

	/* The last page: no next_offset. */
	snprintf(q, sizeof q, "?offset=%lld&length=1048576", size - 10);
	c = read_page(s, uri, q, &resp);
	cr_expect_eq(h_int(c, "_meta.length"), 10);
	cr_expect(!has_key(h_get(c, "_meta"), "next_offset"), "%s",
	    json_object_to_json_string(c));
	cr_expect_str_eq(h_str(c, "text"), expect + size - 10);
	json_object_put(resp);

	/* A page ending exactly at the end: no next_offset. */
	snprintf(q, sizeof q, "?offset=%lld&length=10", size - 10);
	c = read_page(s, uri, q, &resp);
	cr_expect(!has_key(h_get(c, "_meta"), "next_offset"), "%s",
	    json_object_to_json_string(c));
	json_object_put(resp);

	/* Offset at and past the end: empty, no next_offset. */
	for (i = 0; i < 3; i++) {
		if (i == 0)
			snprintf(q, sizeof q, "?offset=%lld", size);
		else if (i == 1)
			snprintf(q, sizeof q, "?offset=%lld000", size);
		else
			snprintf(q, sizeof q,
			    "?offset=9223372036854775807&length=1048576");
		c = read_page(s, uri, q, &resp);
		text = (char *)h_str(c, "text");
		cr_expect(text != NULL && *text == '\0', "%s: %s", q,
		    json_object_to_json_string(c));
		cr_expect_eq(h_int(c, "_meta.length"), 0);
		cr_expect_eq(h_int(c, "_meta.size"), size);
		cr_expect(!has_key(h_get(c, "_meta"), "next_offset"), "%s: %s",
		    q, json_object_to_json_string(c));
		json_object_put(resp);
	}

	/* length 0: empty; if it names a next page, that is where it
	 * is. */
	c = read_page(s, uri, "?offset=10&length=0", &resp);
	text = (char *)h_str(c, "text");
	cr_expect(
	    text != NULL && *text == '\0', "%s", json_object_to_json_string(c));
	cr_expect_eq(h_int(c, "_meta.length"), 0);
	cr_expect_eq(h_int(c, "_meta.offset"), 10);
	if (has_key(h_get(c, "_meta"), "next_offset"))
		cr_expect_eq(h_int(c, "_meta.next_offset"), 10);
	json_object_put(resp);

	/* Bad queries: invalid params. */
	for (i = 0; bad[i] != NULL; i++) {
		snprintf(q, sizeof q, "%s%s", uri, bad[i]);
		cr_expect_eq(error_code(s, q), -32602, "%s", bad[i]);
	}

	/* The uncut stderr is readable too: the whole output of every exec
	 * is kept. */
	snprintf(
	    q, sizeof q, "sandbox://%.12s/exec/%lld/stderr", cid, (long long)1);
	c = read_page(s, q, "", &resp);
	out = h_str(c, "text");
	cr_expect_str_eq(out != NULL ? out : "(none)", "small\n", "%s",
	    json_object_to_json_string(resp));
	json_object_put(resp);

	free(expect);
	teardown(s, cid);
}

Test(streaming, paging_binary_and_utf8, .timeout = 120)
{
	const char *extra[] = {"--inline-output", "1000", NULL};
	struct h_server *s;
	json_object *r, *f, *c, *resp;
	char *cid, uri[URI_MAX];
	const char *b64;

	s = setup(&cid, extra);
	/* 2-byte characters: a page that starts or ends inside one is not
	 * UTF-8, so it comes as a blob with the exact bytes. */
	r = h_exec(s, cid,
	    "python3 -c 'import sys; sys.stdout.write(\"\\u00e9\" * 3000)'",
	    30);
	f = h_first(r);
	cr_assert_eq(h_int(f, "stdout_bytes"), 6000, "%s", h_text(r));
	cr_assert_not_null(h_str(f, "stdout_uri"));
	snprintf(uri, sizeof uri, "%s", h_str(f, "stdout_uri"));
	json_object_put(r);

	c = read_page(s, uri, "?offset=0&length=10", &resp);
	cr_expect_str_eq(
	    h_str(c, "text"), "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
	cr_expect(!has_key(c, "blob"));
	json_object_put(resp);

	c = read_page(s, uri, "?offset=1&length=4", &resp);
	cr_expect(!has_key(c, "text"), "%s", json_object_to_json_string(c));
	b64 = h_str(c, "blob");
	/* a9 c3 a9 c3 */
	cr_expect_str_eq(b64 != NULL ? b64 : "(none)", "qcOpww==");
	cr_expect_eq(h_int(c, "_meta.length"), 4);
	json_object_put(resp);

	c = read_page(s, uri, "?offset=5999&length=5", &resp);
	b64 = h_str(c, "blob");
	cr_expect_str_eq(b64 != NULL ? b64 : "(none)", "qQ==");
	cr_expect_eq(h_int(c, "_meta.length"), 1);
	json_object_put(resp);
	teardown(s, cid);
}

Test(streaming, unknown_resources, .timeout = 120)
{
	const char *extra[] = {"--inline-output", "256", NULL};
	struct h_server *s;
	json_object *r, *m;
	char *cid, uri[URI_MAX], q[URI_MAX + 64];

	s = setup(&cid, extra);
	r = h_exec(s, cid, "seq 1 1000", 30);
	cr_assert_not_null(h_str(h_first(r), "stdout_uri"));
	snprintf(uri, sizeof uri, "%s", h_str(h_first(r), "stdout_uri"));
	json_object_put(r);

	cr_expect_eq(error_code(s, "foo://bar"), -32002);
	cr_expect_eq(error_code(s, "sandbox://nosuch/exec/1/stdout"), -32002);
	cr_expect_eq(error_code(s, "containers://nosuch/logs"), -32002);
	cr_expect_eq(error_code(s, "sandbox://statsx"), -32002);
	snprintf(q, sizeof q, "sandbox://%.12s/exec/999/stdout", cid);
	cr_expect_eq(error_code(s, q), -32002);
	snprintf(q, sizeof q, "sandbox://%.12s/exec/1/stdin", cid);
	cr_expect_eq(error_code(s, q), -32002);
	snprintf(q, sizeof q, "sandbox://%.12s/exec/1", cid);
	cr_expect_eq(error_code(s, q), -32002);

	/* No uri at all: invalid params. */
	m = h_request(s, "resources/read", "{}", 5000);
	cr_expect_eq(h_int(m, "error.code"), -32602, "%s",
	    json_object_to_json_string(m));
	json_object_put(m);

	/* The full id and the name work like the short id. */
	snprintf(q, sizeof q, "sandbox://%s/exec/1/stdout?length=4", cid);
	m = h_read_uri(s, q);
	cr_expect_str_eq(h_str(m, "result.contents.0.text"), "1\n2\n", "%s",
	    json_object_to_json_string(m));
	json_object_put(m);

	/* The spool goes with the sandbox. */
	h_stop(s, cid);
	cr_expect_eq(error_code(s, uri), -32002);
	snprintf(q, sizeof q, "containers://%s/logs", cid);
	cr_expect_eq(error_code(s, q), -32002);
	free(cid);
	h_finish(s);
}

Test(streaming, logs_subscription_raw, .timeout = 120)
{
	struct h_server *s;
	json_object *m, *p;
	char *cid, params[256], *out;
	size_t i, n = 0;
	long id;

	s = setup(&cid, NULL);
	snprintf(
	    params, sizeof params, "{\"uri\":\"containers://%s/logs\"}", cid);
	m = h_request(s, "resources/subscribe", params, 5000);
	cr_expect_not_null(
	    h_get(m, "result"), "%s", json_object_to_json_string(m));
	json_object_put(m);
	id = send_exec(s, cid,
	    "for i in 1 2 3; do echo tick$i; sleep 0.5; done", NULL, 30);
	m = h_wait_id(s, id, 30000);
	cr_assert_not_null(m);
	json_object_put(h_tool_result(m));
	usleep(500000);
	m = h_request(s, "ping", NULL, 5000);
	json_object_put(m);
	for (i = 0; i < json_object_array_length(s->notes); i++) {
		p = json_object_array_get_idx(s->notes, i);
		if (h_str(p, "method") != NULL &&
		    strcmp(h_str(p, "method"),
		        "notifications/resources/updated") == 0) {
			cr_expect(h_contains(h_str(p, "params.uri"), cid), "%s",
			    json_object_to_json_string(p));
			n++;
		}
	}
	cr_expect_geq(n, 2, "updated notifications: %zu", n);

	m = h_request(s, "resources/unsubscribe", params, 5000);
	cr_expect_not_null(h_get(m, "result"));
	json_object_put(m);
	json_object_array_del_idx(
	    s->notes, 0, json_object_array_length(s->notes));
	out = h_exec_ok(s, cid, "echo a; sleep 0.5; echo b");
	free(out);
	usleep(1000000);
	m = h_request(s, "ping", NULL, 5000);
	json_object_put(m);
	for (i = 0; i < json_object_array_length(s->notes); i++) {
		p = json_object_array_get_idx(s->notes, i);
		cr_expect(h_str(p, "method") == NULL ||
		              strcmp(h_str(p, "method"),
		                  "notifications/resources/updated") != 0,
		    "after unsubscribe: %s", json_object_to_json_string(p));
	}
	teardown(s, cid);
}

/* Whether the bytes are UTF-8 (no overlongs, surrogates or > U+10FFFF). */
static int
utf8_ok(const unsigned char *p, size_t n)
{
	size_t i = 0, k, need;
	unsigned int cp;

	while (i < n) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if (p[i] >= 0xc2 && p[i] <= 0xdf)
			need = 1, cp = p[i] & 0x1f;
		else if (p[i] >= 0xe0 && p[i] <= 0xef)
			need = 2, cp = p[i] & 0x0f;
		else if (p[i] >= 0xf0 && p[i] <= 0xf4)
			need = 3, cp = p[i] & 0x07;
		else
			return 0;
		for (k = 1; k <= need; k++) {
			if (i + k >= n || (p[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return 0;
		i += need + 1;
	}
	return 1;
}

Test(streaming, progress_binary_output_is_utf8, .timeout = 120)
{
	struct h_server *s;
	json_object *tok, *p, *m, *r, *logs;
	const char *msg;
	size_t i;
	char *cid, uri[URI_MAX];
	long id;

	s = setup(&cid, NULL);
	tok = h_parse("\"bin\"");
	p = json_object_new_array();
	id = send_exec(s, cid,
	    "head -c 20000 /dev/urandom; sleep 1; head -c 20000 /dev/urandom",
	    "\"bin\"", 30);
	m = collect(s, id, tok, p, h_now_ms(), 30000);
	cr_assert_not_null(m, "no answer");
	r = h_tool_result(m);
	cr_expect_eq(h_int(h_first(r), "stdout_bytes"), 40000);
	msg = h_str(h_first(r), "stdout");
	cr_assert_not_null(msg);
	cr_expect(utf8_ok((const unsigned char *)msg, strlen(msg)),
	    "inline stdout is not UTF-8");
	json_object_put(r);
	cr_expect_geq(json_object_array_length(p), 1);
	for (i = 0; i < json_object_array_length(p); i++) {
		msg = h_str(json_object_array_get_idx(p, i), "message");
		if (msg != NULL)
			cr_expect(
			    utf8_ok((const unsigned char *)msg, strlen(msg)),
			    "progress message %zu is not UTF-8", i);
	}
	check_progress(p, tok);

	/* The activity log of binary output is text, repaired. */
	snprintf(uri, sizeof uri, "containers://%s/logs", cid);
	logs = h_read_uri(s, uri);
	msg = h_str(logs, "result.contents.0.text");
	cr_assert_not_null(
	    msg, "log is not text: %.300s", json_object_to_json_string(logs));
	cr_expect(utf8_ok((const unsigned char *)msg, strlen(msg)));
	cr_expect_str_eq(
	    h_str(logs, "result.contents.0.mimeType"), "text/plain");
	json_object_put(logs);
	json_object_put(p);
	json_object_put(tok);
	teardown(s, cid);
}

Test(streaming, output_cap_spool_matches, .timeout = 120)
{
	const char *extra[] = {
	    "--output-cap", "300000", "--inline-output", "1000", NULL};
	struct h_server *s;
	json_object *r, *f, *c, *resp;
	char *cid, *expect;
	const char *text;
	int st, i;

	s = setup(&cid, extra);
	/* An endless writer: killed at the cap.  A writer that is done
	 * (588,895 bytes) before the kill can land: the cap was passed all
	 * the same, and the result must say so the same way. */
	for (i = 0; i < 2; i++) {
		r = h_exec(s, cid, i == 0 ? "yes" : "seq 1 100000", 30);
		f = h_first(r);
		cr_expect(h_bool(f, "truncated"), "%s", h_text(r));
		/* It ran until the cap: a result, and not a success. */
		cr_expect(!h_is_error(r), "%s", h_text(r));
		cr_expect(!h_bool(r, "structuredContent.success"),
		    "%s passed --output-cap (truncated) but the result is "
		    "a success (exit_code %lld)",
		    h_str(f, "command"), h_int(f, "exit_code"));
		cr_expect_eq(h_int(f, "stdout_bytes"), 300000);
		cr_assert_not_null(h_str(f, "stdout_uri"));
		c = read_page(
		    s, h_str(f, "stdout_uri"), "?length=1048576", &resp);
		cr_expect_eq(h_int(c, "_meta.size"), 300000);
		text = h_str(c, "text");
		cr_assert_not_null(text);
		expect =
		    h_run(i == 0 ? "yes 2>/dev/null | head -c 300000"
		                 : "seq 1 100000 2>/dev/null | head -c 300000",
		        &st);
		cr_expect(strlen(text) == 300000 && strcmp(text, expect) == 0,
		    "the spool is not the first 300000 bytes of the output");
		free(expect);
		json_object_put(resp);
		json_object_put(r);
	}
	teardown(s, cid);
}

Test(streaming, logs_updates_coalesced, .timeout = 120)
{
	struct h_server *s;
	json_object *m, *p;
	char *cid, params[256];
	long long t0, took;
	size_t i, n = 0;
	long id;

	s = setup(&cid, NULL);
	snprintf(
	    params, sizeof params, "{\"uri\":\"containers://%s/logs\"}", cid);
	json_object_put(h_request(s, "resources/subscribe", params, 5000));
	json_object_array_del_idx(
	    s->notes, 0, json_object_array_length(s->notes));
	/* 20 MB of lines as fast as they come. */
	t0 = h_now_ms();
	id = send_exec(s, cid, "seq 1 3000000", NULL, 60);
	m = h_wait_id(s, id, 60000);
	took = h_now_ms() - t0;
	cr_assert_not_null(m);
	json_object_put(h_tool_result(m));
	usleep(500000);
	json_object_put(h_request(s, "ping", NULL, 5000));
	for (i = 0; i < json_object_array_length(s->notes); i++) {
		p = json_object_array_get_idx(s->notes, i);
		if (h_str(p, "method") != NULL &&
		    strcmp(h_str(p, "method"),
		        "notifications/resources/updated") == 0)
			n++;
	}
	fprintf(stderr, "streaming: %zu log updates for 20 MB in %lld ms\n", n,
	    took);
	cr_expect_geq(n, 1);
	cr_expect_leq(
	    n, (size_t)(took / 100 + 5), "%zu updates in %lld ms", n, took);
	teardown(s, cid);
}
