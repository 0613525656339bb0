/*
 * Adversarial: hostile clients.  Malformed and oversized messages, wrong
 * argument types for every parameter of every tool, unknown sandboxes.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "adv.h"

/* The next response must be a JSON-RPC error with this code (and, for a
 * parse error, id null). */
static void
expect_error(struct h_server *s, int code, const char *what)
{
	json_object *m, *id;

	m = h_next_response(s, 15000);
	cr_assert(m != NULL, "no answer to %s", what);
	cr_expect(h_get(m, "error.code") != NULL &&
	              json_object_get_int(h_get(m, "error.code")) == code,
	    "%s: expected error %d, got %.500s", what, code,
	    json_object_to_json_string(m));
	if (code == -32700)
		cr_expect(json_object_object_get_ex(m, "id", &id) && id == NULL,
		    "%s: a parse error answered with id %s", what,
		    json_object_to_json_string(id));
	json_object_put(m);
}

Test(protocol, malformed_json, .timeout = 120)
{
	static const char *const lines[] = {
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":",
	    "}{",
	    "nul",
	    "[1,2",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} x",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",}",
	    "{'jsonrpc':'2.0','id':1,'method':'ping'}",
	    "{\"jsonrpc\":\"2.0\",\"id\":01,\"method\":\"ping\"}",
	    "{\"jsonrpc\":\"2.0\",\"id\":NaN,\"method\":\"ping\"}",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pi\\u12\"}",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"/*c*/}",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pi\tng\"}",
	    "\"\\",
	    "{\"a\":1e99999999999999999999}x",
	};
	struct h_server *s;
	size_t i;

	s = adv_start(NULL);
	for (i = 0; i < sizeof lines / sizeof lines[0]; i++) {
		h_send_line(s, lines[i]);
		expect_error(s, -32700, lines[i]);
		adv_ping(s, 5000);
	}
	/* Not JSON-RPC: -32600. */
	h_send_line(s, "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}");
	expect_error(s, -32600, "jsonrpc 1.0");
	h_send_line(s, "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}");
	expect_error(s, -32600, "an object id");
	h_send_line(s, "42");
	expect_error(s, -32600, "a number");
	/* Blank and whitespace-only lines are not answered; a ping still is. */
	h_send_line(s, "");
	h_send_line(s, "   \t");
	adv_ping(s, 5000);
	adv_alive(s, NULL);
	adv_finish(s);
}

Test(protocol, invalid_utf8, .timeout = 120)
{
	static const char *const lines[] = {
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":"
	    "{\"x\":\"\xff\xfe\"}}",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":"
	    "{\"x\":\"\xc0\x80\"}}", /* overlong NUL */
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":"
	    "{\"x\":\"\xed\xa0\x80\"}}", /* a surrogate */
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":"
	    "{\"x\":\"\xe2\x82\"}}", /* truncated */
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":"
	    "{\"x\":\"\xf4\x90\x80\x80\"}}", /* past U+10FFFF */
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pi\x80ng\"}",
	    "\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\xff",
	};
	struct h_server *s;
	json_object *m, *r;
	char line[512], *cid;
	size_t i;

	s = adv_start(NULL);
	for (i = 0; i < sizeof lines / sizeof lines[0]; i++) {
		h_send_line(s, lines[i]);
		expect_error(s, -32700, "invalid UTF-8");
		adv_ping(s, 5000);
	}
	/* Invalid UTF-8 in tool arguments: a parse error as well. */
	cid = h_create(s, NULL);
	snprintf(line, sizeof line,
	    "{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"sandbox_exec\",\"arguments\":"
	    "{\"container_id\":\"%s\",\"commands\":\"echo \xff\xfe\"}}}",
	    cid);
	h_send_line(s, line);
	expect_error(s, -32700, "invalid UTF-8 in a command");
	/* Escaped lone surrogates are valid JSON text: any answer but a
	 * crash, and what comes back is UTF-8 (the harness parses it). */
	snprintf(line, sizeof line,
	    "{\"jsonrpc\":\"2.0\",\"id\":78,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"sandbox_exec\",\"arguments\":"
	    "{\"container_id\":\"%s\",\"commands\":"
	    "\"printf '%%s' '\\ud800\\udfff\\ud800'\"}}}",
	    cid);
	h_send_line(s, line);
	m = h_wait_id(s, 78, 30000);
	cr_assert(m != NULL, "no answer to an exec with lone surrogates");
	fprintf(
	    stderr, "lone surrogates: %.300s\n", json_object_to_json_string(m));
	json_object_put(m);
	/* Output that is not UTF-8 is repaired. */
	r = adv_exec(s, cid, "printf 'a\\377\\376b'", NULL, 30, NULL);
	cr_expect(!h_is_error(r));
	cr_expect_str_eq(adv_out(r),
	    "a\xef\xbf\xbd\xef\xbf\xbd"
	    "b",
	    "not repaired: %s", adv_out(r));
	json_object_put(r);
	adv_alive(s, cid);
	h_stop(s, cid);
	free(cid);
	adv_finish(s);
}

/* Write all of buf to fd, sampling the server's RSS as it goes. */
static void
write_sampling(struct h_server *s, const char *buf, size_t len, long *max_rss)
{
	struct pollfd pfd;
	size_t off = 0;
	ssize_t n;
	long rss;

	pfd.fd = s->to_fd;
	pfd.events = POLLOUT;
	while (off < len) {
		cr_assert(poll(&pfd, 1, 30000) == 1,
		    "the server stopped reading after %zu bytes", off);
		n = write(s->to_fd, buf + off,
		    len - off < 1048576 ? len - off : 1048576);
		if (n == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		cr_assert(
		    n > 0, "write: %s after %zu bytes", strerror(errno), off);
		off += (size_t)n;
		rss = h_status_kb(s->pid, "VmRSS");
		if (rss > *max_rss)
			*max_rss = rss;
	}
}

Test(protocol, line_of_100mb, .timeout = 300)
{
	struct h_server *s;
	const size_t total = 100UL * 1024 * 1024;
	const char *head = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\","
	                   "\"params\":{\"x\":\"";
	long max_rss = 0, hwm, base;
	long long t0, ms;
	char *chunk;
	size_t sent, n;
	int fl;

	s = adv_start(NULL);
	base = h_status_kb(s->pid, "VmRSS");
	fl = fcntl(s->to_fd, F_GETFL);
	fcntl(s->to_fd, F_SETFL, fl | O_NONBLOCK);
	chunk = malloc(4 << 20);
	cr_assert(chunk != NULL);
	memset(chunk, 'a', 4 << 20);
	t0 = h_now_ms();
	write_sampling(s, head, strlen(head), &max_rss);
	for (sent = strlen(head); sent < total; sent += n) {
		n = total - sent < (4UL << 20) ? total - sent : (4UL << 20);
		write_sampling(s, chunk, n, &max_rss);
	}
	write_sampling(s, "\"}}\n", 4, &max_rss);
	fcntl(s->to_fd, F_SETFL, fl);
	free(chunk);
	ms = h_now_ms() - t0;
	hwm = h_status_kb(s->pid, "VmHWM");
	fprintf(stderr,
	    "100 MB line: sent in %lld ms; server RSS %ld KiB before, "
	    "%ld KiB at most while reading, peak (VmHWM) %ld KiB\n",
	    ms, base, max_rss, hwm);
	expect_error(s, -32700, "a 100 MB line");
	cr_expect_lt(max_rss, 64 * 1024, "RSS %ld KiB while reading", max_rss);
	cr_expect_lt(hwm, 64 * 1024, "peak RSS %ld KiB", hwm);
	ms = adv_ping(s, 5000);
	cr_expect_lt(ms, 2000, "ping after the big line took %lld ms", ms);
	/* The line after it is read whole. */
	h_send_line(s, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}");
	json_object_put(h_wait_id(s, 6, 5000));
	adv_alive(s, NULL);
	adv_finish(s);
}

Test(protocol, deep_nesting, .timeout = 120)
{
	struct h_server *s;
	const size_t depth = 100000;
	char *buf;
	size_t i, n;

	s = adv_start(NULL);
	buf = malloc(depth * 6 + 256);
	cr_assert(buf != NULL);
	/* 100,000 '[' and nothing else. */
	memset(buf, '[', depth);
	buf[depth] = '\0';
	h_send_line(s, buf);
	expect_error(s, -32700, "100000 '['");
	adv_ping(s, 5000);
	/* Balanced. */
	memset(buf, '[', depth);
	memset(buf + depth, ']', depth);
	buf[2 * depth] = '\0';
	h_send_line(s, buf);
	expect_error(s, -32700, "100000 balanced []");
	adv_ping(s, 5000);
	/* Objects, inside a valid request. */
	n = (size_t)sprintf(buf,
	    "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\",\"params\":");
	for (i = 0; i < depth; i++)
		n += (size_t)sprintf(buf + n, "{\"a\":");
	strcpy(buf + n, "1");
	n++;
	for (i = 0; i < depth + 1; i++)
		buf[n++] = '}';
	buf[n] = '\0';
	h_send_line(s, buf);
	expect_error(s, -32700, "100000 nested objects in params");
	adv_ping(s, 5000);
	free(buf);
	adv_alive(s, NULL);
	adv_finish(s);
}

/* --- every parameter of every tool, with a wrong type --- */

/* The tools with their input schemas. */
static json_object *
tools_list(struct h_server *s)
{
	json_object *m, *tools;

	m = h_request(s, "tools/list", NULL, 10000);
	tools = h_get(m, "result.tools");
	cr_assert(tools != NULL && json_object_array_length(tools) > 0,
	    "tools/list: %.500s", json_object_to_json_string(m));
	cr_expect(h_get(m, "result.nextCursor") == NULL,
	    "tools/list is paged; this test reads only the first page");
	json_object_get(tools);
	json_object_put(m);
	return tools;
}

/* A valid value of a property, for the required arguments. */
static json_object *
valid_value(const char *prop, const char *cid)
{
	if (strcmp(prop, "container_id") == 0)
		return json_object_new_string(cid);
	if (strcmp(prop, "commands") == 0)
		return json_object_new_string("true");
	if (strcmp(prop, "file_name") == 0)
		return json_object_new_string("f.txt");
	if (strcmp(prop, "file_contents") == 0)
		return json_object_new_string("x");
	if (strcmp(prop, "file_path") == 0 ||
	    strcmp(prop, "container_src_path") == 0)
		return json_object_new_string("/app/f.txt");
	if (strcmp(prop, "local_src_file") == 0)
		return json_object_new_string("/nonexistent/f.txt");
	if (strcmp(prop, "local_src_dir") == 0)
		return json_object_new_string("/nonexistent");
	if (strcmp(prop, "code") == 0)
		return json_object_new_string("print(1)");
	if (strcmp(prop, "port") == 0)
		return json_object_new_int(8000);
	if (strcmp(prop, "process_id") == 0)
		return json_object_new_int(1);
	if (strcmp(prop, "egress") == 0)
		return json_object_new_array(); /* off: good on any server */
	if (strcmp(prop, "snapshot_id") == 0)
		return json_object_new_string("snap-000000000000");
	if (strcmp(prop, "packages") == 0) {
		json_object *a = json_object_new_array();

		json_object_array_add(a, json_object_new_string("six"));
		return a;
	}
	return NULL;
}

/* The schema's types of a property ("string", "array", ...), from type
 * or anyOf. */
static int
has_type(json_object *schema, const char *type)
{
	json_object *t, *any;
	size_t i;

	if (json_object_object_get_ex(schema, "type", &t)) {
		if (json_object_is_type(t, json_type_string))
			return strcmp(json_object_get_string(t), type) == 0 ||
			       (strcmp(type, "number") == 0 &&
			           strcmp(json_object_get_string(t),
			               "integer") == 0);
		for (i = 0; json_object_is_type(t, json_type_array) &&
		            i < json_object_array_length(t);
		     i++)
			if (strcmp(json_object_get_string(
			               json_object_array_get_idx(t, i)),
			        type) == 0)
				return 1;
	}
	if (json_object_object_get_ex(schema, "anyOf", &any))
		for (i = 0; i < json_object_array_length(any); i++)
			if (has_type(json_object_array_get_idx(any, i), type))
				return 1;
	return 0;
}

/* Whether a single value of the type is taken where the schema wants an
 * array of such (an array of one: supervisor/mcp/toolargs.c). */
static int
lifts(json_object *schema, const char *type)
{
	json_object *items;

	return has_type(schema, "array") &&
	       json_object_object_get_ex(schema, "items", &items) &&
	       has_type(items, type);
}

/* Wrong values for a schema: every JSON type the schema does not allow
 * (null apart, see below), and arrays of the wrong item type. */
static json_object *
wrong_values(json_object *schema)
{
	json_object *out = json_object_new_array(), *items, *a;

	if (!has_type(schema, "string") && !lifts(schema, "string"))
		json_object_array_add(out, json_object_new_string("x"));
	if (!has_type(schema, "integer") && !has_type(schema, "number") &&
	    !lifts(schema, "integer") && !lifts(schema, "number"))
		json_object_array_add(out, json_object_new_int(42));
	if (has_type(schema, "integer") && !has_type(schema, "number"))
		json_object_array_add(out, json_object_new_double(1.5));
	if (!has_type(schema, "boolean") && !lifts(schema, "boolean"))
		json_object_array_add(out, json_object_new_boolean(1));
	if (!has_type(schema, "object") && !lifts(schema, "object")) {
		a = json_object_new_object();
		json_object_object_add(a, "k", json_object_new_string("v"));
		json_object_array_add(out, a);
	}
	if (!has_type(schema, "array")) {
		a = json_object_new_array();
		json_object_array_add(a, json_object_new_string("x"));
		json_object_array_add(out, a);
	} else {
		/* Items of the wrong type. */
		a = json_object_new_array();
		json_object_array_add(a, json_object_new_int(7));
		json_object_array_add(out, a);
	}
	if (has_type(schema, "object") &&
	    json_object_object_get_ex(schema, "additionalProperties", &items) &&
	    has_type(items, "string")) {
		a = json_object_new_object();
		json_object_object_add(a, "K", json_object_new_int(1));
		json_object_array_add(out, a);
	}
	return out;
}

/* A tools/call whose response must be a result with isError (or, only
 * when allow_rpc_error, a -32602 error). */
static void
expect_tool_error(struct h_server *s, const char *tool, json_object *args,
    int allow_rpc_error, const char *what, const char *must_say)
{
	json_object *p, *m, *r;
	const char *text;
	long id;

	p = json_object_new_object();
	json_object_object_add(p, "name", json_object_new_string(tool));
	json_object_object_add(p, "arguments", args);
	id = h_send_request_obj(s, "tools/call", p);
	m = h_wait_id(s, id, 60000);
	cr_assert(m != NULL, "%s: no answer to %s", tool, what);
	if (h_get(m, "error") != NULL) {
		cr_expect(allow_rpc_error && json_object_get_int(h_get(
		                                 m, "error.code")) == -32602,
		    "%s %s: a protocol error instead of an isError result: "
		    "%.300s",
		    tool, what, json_object_to_json_string(m));
		json_object_put(m);
		return;
	}
	r = h_tool_result(m);
	text = h_text(r);
	cr_expect(h_is_error(r), "%s %s: accepted: %.300s", tool, what, text);
	cr_expect(
	    strlen(text) > 0, "%s %s: an error without a message", tool, what);
	if (must_say != NULL)
		cr_expect(h_contains(text, must_say),
		    "%s %s: the error does not say \"%s\": %.300s", tool, what,
		    must_say, text);
	json_object_put(r);
}

static int
is_required(json_object *req, const char *prop)
{
	size_t j;

	for (j = 0; req != NULL && j < json_object_array_length(req); j++)
		if (strcmp(json_object_get_string(
		               json_object_array_get_idx(req, j)),
		        prop) == 0)
			return 1;
	return 0;
}

/* Arguments with every required parameter valid but prop, and the
 * container_id of the test's sandbox where the tool takes one. */
static json_object *
base_args(const char *tool, json_object *req, json_object *props,
    const char *prop, const char *cid)
{
	json_object *args = json_object_new_object(), *v;
	const char *rp;
	size_t j;

	for (j = 0; req != NULL && j < json_object_array_length(req); j++) {
		rp = json_object_get_string(json_object_array_get_idx(req, j));
		if (strcmp(rp, prop) == 0)
			continue;
		v = valid_value(rp, cid);
		cr_assert(v != NULL, "no valid value for %s.%s", tool, rp);
		json_object_object_add(args, rp, v);
	}
	if (strcmp(prop, "container_id") != 0 &&
	    !json_object_object_get_ex(args, "container_id", NULL) &&
	    json_object_object_get_ex(props, "container_id", NULL))
		json_object_object_add(
		    args, "container_id", json_object_new_string(cid));
	return args;
}

/* A null optional parameter: any tool result will do (an error, or the
 * default); a sandbox made is stopped.  1 if it was accepted. */
static int
null_answered(
    struct h_server *s, const char *tool, json_object *args, const char *what)
{
	json_object *p, *m, *r;
	const char *id;
	int ok;

	p = json_object_new_object();
	json_object_object_add(p, "name", json_object_new_string(tool));
	json_object_object_add(p, "arguments", args);
	m = h_wait_id(s, h_send_request_obj(s, "tools/call", p), 60000);
	cr_assert(m != NULL, "%s: no answer to %s", tool, what);
	cr_expect(h_get(m, "result") != NULL, "%s %s: %.300s", tool, what,
	    json_object_to_json_string(m));
	if (h_get(m, "result") == NULL) {
		json_object_put(m);
		return 0;
	}
	r = h_tool_result(m);
	ok = !h_is_error(r);
	if (ok && strcmp(tool, "sandbox_initialize") == 0 &&
	    (id = h_str(r, "structuredContent.container_id")) != NULL)
		h_stop(s, id);
	json_object_put(r);
	return ok;
}

Test(protocol, wrong_types_every_parameter, .timeout = 600)
{
	static const char *const non_objects[] = {
	    "5", "[]", "\"x\"", "true", "[{\"container_id\":\"x\"}]"};
	struct h_server *s;
	json_object *tools, *tool, *schema, *props, *req, *args, *wrong, *v;
	const char *name;
	char *cid, what[256];
	size_t i, k;
	int cases = 0, nulls_accepted = 0, n;

	/* Host paths: only in the test's directory. */
	s = adv_start("--allow-dir", adv_tmpdir(), NULL);
	cid = h_create(s, NULL);
	tools = tools_list(s);
	for (i = 0; i < json_object_array_length(tools); i++) {
		tool = json_object_array_get_idx(tools, i);
		name = h_str(tool, "name");
		schema = h_get(tool, "inputSchema");
		props = h_get(schema, "properties");
		req = h_get(schema, "required");
		json_object_object_foreach(props, prop, pschema)
		{
			wrong = wrong_values(pschema);
			for (k = 0; k < json_object_array_length(wrong); k++) {
				args = base_args(name, req, props, prop, cid);
				v = json_object_array_get_idx(wrong, k);
				json_object_object_add(
				    args, prop, json_object_get(v));
				snprintf(what, sizeof what, "%s=%.100s", prop,
				    json_object_to_json_string(v));
				expect_tool_error(s, name, args, 0, what, NULL);
				cases++;
			}
			json_object_put(wrong);
			/* null: an error for a required parameter; for an
			 * optional one, an error or the default (absent). */
			args = base_args(name, req, props, prop, cid);
			json_object_object_add(args, prop, NULL);
			snprintf(what, sizeof what, "%s=null", prop);
			if (is_required(req, prop))
				expect_tool_error(s, name, args, 0, what, NULL);
			else
				nulls_accepted +=
				    null_answered(s, name, args, what);
			cases++;
		}
		/* Arguments that are not an object. */
		for (k = 0; k < sizeof non_objects / sizeof non_objects[0];
		     k++) {
			snprintf(
			    what, sizeof what, "arguments %s", non_objects[k]);
			expect_tool_error(
			    s, name, h_parse(non_objects[k]), 1, what, NULL);
			cases++;
		}
	}
	fprintf(stderr,
	    "wrong types: %d calls; null taken as absent for %d optional "
	    "parameters\n",
	    cases, nulls_accepted);
	json_object_put(tools);
	/* No sandbox was made by any of them. */
	n = h_docker_count(s->label);
	cr_expect_eq(n, 1, "%d containers after the wrong-type calls", n);
	adv_alive(s, cid);
	h_stop(s, cid);
	free(cid);
	adv_finish(s);
}

Test(protocol, unknown_sandbox_ids, .timeout = 300)
{
	struct h_server *s, *other;
	json_object *tools, *tool, *props, *req, *args, *v;
	const char *name;
	char *cid, *ocid, shortid[8], what[256], hostdir[128], hostfile[160];
	const char *ids[6];
	size_t i, j, k;
	int cases = 0;
	FILE *f;

	snprintf(hostdir, sizeof hostdir, "%s/proj", adv_tmpdir());
	cr_assert(mkdir(hostdir, 0755) == 0);
	snprintf(hostfile, sizeof hostfile, "%s/main.py", hostdir);
	f = fopen(hostfile, "w");
	cr_assert(f != NULL);
	fputs("print('hi')\n", f);
	fclose(f);
	s = adv_start("--allow-dir", adv_tmpdir(), NULL);
	other = adv_start(NULL);
	cid = h_create(s, NULL);
	ocid = h_create(other, NULL);
	snprintf(shortid, sizeof shortid, "%.6s", cid);
	ids[0] =
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	ids[1] = "0123456789ab";
	ids[2] = "no-such-sandbox";
	ids[3] = shortid; /* a prefix under 12 characters */
	ids[4] = ocid; /* another instance's sandbox */
	ids[5] = "";
	tools = tools_list(s);
	for (i = 0; i < json_object_array_length(tools); i++) {
		tool = json_object_array_get_idx(tools, i);
		name = h_str(tool, "name");
		props = h_get(tool, "inputSchema.properties");
		req = h_get(tool, "inputSchema.required");
		if (!json_object_object_get_ex(props, "container_id", NULL))
			continue;
		for (k = 0; k < sizeof ids / sizeof ids[0]; k++) {
			args = json_object_new_object();
			for (j = 0;
			     req != NULL && j < json_object_array_length(req);
			     j++) {
				const char *rp = json_object_get_string(
				    json_object_array_get_idx(req, j));

				if (strcmp(rp, "container_id") == 0)
					continue;
				v = valid_value(rp, cid);
				cr_assert(v != NULL);
				json_object_object_add(args, rp, v);
			}
			/* Host paths that are allowed and exist. */
			if (strcmp(name, "copy_file") == 0)
				json_object_object_add(args, "local_src_file",
				    json_object_new_string(hostfile));
			if (strcmp(name, "copy_project") == 0 ||
			    strcmp(name, "run_project") == 0)
				json_object_object_add(args, "local_src_dir",
				    json_object_new_string(hostdir));
			json_object_object_add(args, "container_id",
			    json_object_new_string(ids[k]));
			snprintf(what, sizeof what, "container_id \"%.20s\"",
			    ids[k]);
			expect_tool_error(s, name, args, 0, what,
			    *ids[k] != '\0' ? "no sandbox" : "container_id");
			cases++;
		}
	}
	fprintf(stderr, "unknown ids: %d calls\n", cases);
	json_object_put(tools);
	cr_expect_eq(h_docker_count(s->label), 1,
	    "calls with unknown sandboxes made containers");
	/* The other instance's sandbox was not touched. */
	adv_alive(other, ocid);
	adv_alive(s, cid);
	h_stop(s, cid);
	h_stop(other, ocid);
	free(cid);
	free(ocid);
	adv_finish(s);
	adv_finish(other);
}

/* A client of the control socket at path (-1 if it cannot connect). */
static int
control_connect(const char *path)
{
	struct sockaddr_un sun;
	int fd;

	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path) {
		close(fd);
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sun, sizeof sun) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Whether the server closed fd within ms. */
static int
control_closed(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char b;

	return poll(&p, 1, ms) == 1 && read(fd, &b, 1) <= 0;
}

/*
 * 40 clients connect to the control socket and ask nothing (the server
 * answers 16 at once): `mcp-sandboxd ls` is answered all the same (one
 * that asked nothing makes room), and each idle one is dropped after a
 * few seconds.  They once left ls with no answer for as long as they
 * stayed.
 */
Test(
    protocol, idle_control_clients_do_not_lock_the_operator_out, .timeout = 120)
{
	char dir[64], path[128], cmd[512], *out;
	struct h_server *s;
	int fds[40], i, status, closed = 0;
	long long t0;

	snprintf(dir, sizeof dir, "/tmp/mcp-ctl-adv-XXXXXX");
	cr_assert(mkdtemp(dir) != NULL);
	s = h_start("--control-dir", dir, NULL);
	json_object_put(h_initialize(s));
	snprintf(path, sizeof path, "%s/%d.sock", dir, (int)s->pid);
	for (i = 0; i < 40; i++) {
		fds[i] = control_connect(path);
		cr_assert_geq(
		    fds[i], 0, "connect %s: %s", path, strerror(errno));
	}
	t0 = h_now_ms();
	snprintf(cmd, sizeof cmd,
	    "MCP_SANDBOXD_CONTROL_DIR=%s timeout 10 %s ls --json 2>&1", dir,
	    getenv("MCP_SANDBOXD_BIN"));
	out = h_run(cmd, &status);
	cr_expect_eq(status, 0, "ls beside 40 idle clients: %s", out);
	cr_expect(h_contains(out, "\"servers\""), "%s", out);
	cr_expect_lt(h_now_ms() - t0, 5000, "ls took %lld ms", h_now_ms() - t0);
	free(out);
	for (i = 0; i < 40; i++) {
		closed += control_closed(fds[i], 8000);
		close(fds[i]);
	}
	cr_expect_eq(closed, 40, "%d of 40 idle clients were dropped", closed);
	/* Counted: the idle ones, and those that made room for ls. */
	cr_expect_geq(adv_stat(s, "limits.control_clients_dropped"), 40);
	h_finish(s);
	cr_assert(rmdir(dir) == 0);
}

/*
 * One message of 2 MiB that is 700,000 empty objects (json-c makes
 * hundreds of bytes of each: the supervisor went to 557 MB and stayed
 * there): refused as a parse error at once, the supervisor stays small
 * and answers; 60,000 values in a message (within the bound) still go.
 */
Test(protocol, a_message_of_many_values_is_refused, .timeout = 120)
{
	struct h_server *s;
	json_object *m;
	char *line;
	size_t n = 2 << 20, i, len;
	long hwm;

	s = h_start(NULL);
	json_object_put(h_initialize(s));
	line = malloc(n + 256);
	cr_assert_not_null(line);
	len = (size_t)sprintf(line,
	    "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":"
	    "{\"name\":\"get_sandbox_status\",\"arguments\":{},\"junk\":[{}");
	for (i = 0; len + 3 < n; i++)
		len += (size_t)sprintf(line + len, ",{}");
	sprintf(line + len, "]}}");
	h_send_line(s, line);
	m = h_next_response(s, 30000);
	cr_expect_eq(h_int(m, "error.code"), -32700, "%.300s",
	    json_object_to_json_string(m));
	cr_expect(h_contains(h_str(m, "error.message"), "65536 values"), "%s",
	    h_str(m, "error.message"));
	json_object_put(m);
	hwm = h_status_kb(s->pid, "VmHWM");
	cr_expect_lt(hwm, 64 * 1024, "the supervisor peaked at %ld KiB", hwm);
	/* 60,000 numbers: within the bound, an ordinary answer. */
	len = (size_t)sprintf(line,
	    "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\",\"params\":"
	    "{\"junk\":[0");
	for (i = 1; i < 60000; i++)
		len += (size_t)sprintf(line + len, ",0");
	sprintf(line + len, "]}}");
	h_send_line(s, line);
	m = h_next_response(s, 30000);
	cr_expect(h_get(m, "result") != NULL, "%.300s",
	    json_object_to_json_string(m));
	json_object_put(m);
	free(line);
	adv_alive(s, NULL);
	h_finish(s);
}
