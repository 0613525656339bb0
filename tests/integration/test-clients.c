/*
 * What a new user meets (issue "Real clients, real operators"): Docker
 * errors that name the endpoint and the reason, the configured image used
 * for code, a missing interpreter named as such, an activity log of what
 * was asked (not of our helper scripts), resources/list that follows the
 * sandboxes with notifications, and accounting from the first exec of a
 * sandbox on.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

/* The error text of a sandbox_initialize that must fail. */
static char *
init_error(struct h_server *s, const char *args)
{
	json_object *r;
	char *t;

	r = h_call_tool_t(s, "sandbox_initialize", args, 60000);
	cr_assert(h_is_error(r), "sandbox_initialize should fail: %.1000s",
	    json_object_to_json_string(r));
	t = strdup(h_text(r));
	cr_assert_not_null(t);
	json_object_put(r);
	return t;
}

Test(clients, missing_engine_socket_is_named)
{
	struct h_server *s;
	char *t;

	s = h_start("--docker-host", "unix:///nonexistent", NULL);
	json_object_put(h_initialize(s));
	t = init_error(s, "{}");
	cr_expect(h_contains(t, "connect /nonexistent: no such file or "
	                        "directory"),
	    "%s", t);
	cr_expect(!h_contains(t, "port 80"), "%s", t);
	free(t);
	cr_expect_eq(h_close(s, 10000), 0);
	h_free(s);
}

/* The log says it too (the server's stderr). */
Test(clients, missing_engine_socket_is_logged)
{
	const char *bin = getenv("MCP_SANDBOXD_BIN");
	char cmd[2048], *out;
	int st;

	cr_assert_not_null(bin);
	snprintf(cmd, sizeof cmd,
	    "{ echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
	    "\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":"
	    "{},\"clientInfo\":{\"name\":\"t\",\"version\":\"0\"}}}';"
	    " echo '{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"sandbox_initialize\",\"arguments\":{}}}';"
	    " sleep 2; } | %s --docker-host unix:///nonexistent --log-level "
	    "warn 2>&1 >/dev/null",
	    bin);
	out = h_run(cmd, &st);
	cr_assert_not_null(out);
	cr_expect(h_contains(out, "connect /nonexistent: no such file or "
	                          "directory"),
	    "log: %s", out);
	free(out);
}

Test(clients, refused_engine_socket_is_named)
{
	struct sockaddr_un sun;
	struct h_server *s;
	char dir[] = "/tmp/clients-sock-XXXXXX", host[256], *t;
	int fd;

	cr_assert_not_null(mkdtemp(dir));
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s/d.sock", dir);
	/* Bound, never listening: the engine's socket of an engine that
	 * is down. */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert(fd >= 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sun, sizeof sun), 0);
	snprintf(host, sizeof host, "unix://%s", sun.sun_path);
	s = h_start("--docker-host", host, NULL);
	json_object_put(h_initialize(s));
	t = init_error(s, "{}");
	cr_expect(h_contains(t, "connect ") && h_contains(t, sun.sun_path) &&
	              h_contains(t, ": connection refused"),
	    "%s", t);
	free(t);
	cr_expect_eq(h_close(s, 10000), 0);
	h_free(s);
	close(fd);
	unlink(sun.sun_path);
	rmdir(dir);
}

/*
 * A socket the server may not open (mode 000, the server not root): the
 * system's "permission denied", not "not reachable ... port 80".  The
 * server runs as uid 65534 through setpriv.
 */
Test(clients, forbidden_engine_socket_is_named)
{
	struct sockaddr_un sun;
	const char *bin = getenv("MCP_SANDBOXD_BIN");
	char dir[] = "/tmp/clients-sock-XXXXXX", cmd[4096], *out;
	int fd, st;

	cr_assert_not_null(bin);
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chmod(dir, 0755), 0);
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s/d.sock", dir);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert(fd >= 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sun, sizeof sun), 0);
	cr_assert_eq(chmod(sun.sun_path, 0), 0);
	/*
	 * The server runs as nobody: from a copy in this 0755 directory, and
	 * in it, since the build directory (the binary's, and the test's
	 * working directory) may be one that other users cannot reach.
	 */
	snprintf(cmd, sizeof cmd, "cp '%s' %s/mcp-sandboxd 2>&1", bin, dir);
	out = h_run(cmd, &st);
	cr_assert_eq(st, 0, "%s", out);
	free(out);
	snprintf(cmd, sizeof cmd,
	    "cd %s && { echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
	    "\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":"
	    "{},\"clientInfo\":{\"name\":\"t\",\"version\":\"0\"}}}';"
	    " echo '{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"sandbox_initialize\",\"arguments\":{}}}';"
	    " sleep 2; } | setpriv --reuid 65534 --regid 65534 --clear-groups "
	    "./mcp-sandboxd --docker-host unix://%s --log-level warn 2>&1",
	    dir, sun.sun_path);
	out = h_run(cmd, &st);
	cr_assert_not_null(out);
	cr_expect(h_contains(out, "\"id\":2") && h_contains(out, "connect ") &&
	              h_contains(out, sun.sun_path) &&
	              h_contains(out, ": permission denied"),
	    "%s", out);
	cr_expect(!h_contains(out, "port 80"), "%s", out);
	free(out);
	close(fd);
	unlink(sun.sun_path);
	snprintf(cmd, sizeof cmd, "%s/mcp-sandboxd", dir);
	unlink(cmd);
	rmdir(dir);
}

/* The engine's own reason, not "HTTP 500" nor a piece of JSON. */
Test(clients, failed_pull_gives_engine_reason)
{
	struct h_server *s;
	const char *why;
	char *t;

	s = h_start(NULL);
	json_object_put(h_initialize(s));
	t = init_error(
	    s, "{\"image\":\"mcp-sandboxd-test/no-such-image:nope\"}");
	why = strstr(t, "could not be pulled: ");
	cr_assert_not_null(why, "%s", t);
	why += strlen("could not be pulled: ");
	cr_expect(strlen(why) > 10, "%s", t);
	cr_expect(!h_contains(why, "answered HTTP"), "%s", t);
	cr_expect(!h_contains(why, "\"error\""), "%s", t);
	free(t);
	h_finish(s);
}

/* execute_code's structuredContent, or the test fails. */
static json_object *
code(struct h_server *s, const char *args)
{
	json_object *r;

	r = h_call_tool_t(s, "execute_code", args, 120000);
	cr_assert_not_null(r);
	return r;
}

/*
 * --image alone serves every language's fresh sandboxes (the harness
 * gives the local python test image, nothing per language): no pull of
 * python:3.12-slim-bookworm.
 */
Test(clients, configured_image_serves_fresh_code)
{
	struct h_server *s;
	json_object *r;

	s = h_start(NULL);
	json_object_put(h_initialize(s));
	r = code(s, "{\"code\":\"print(6 * 7)\"}");
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect(h_contains(h_str(r, "structuredContent.stdout"), "42"));
	json_object_put(r);
	r = h_call_tool_t(s, "create_run_close",
	    "{\"code\":\"echo $((6 * 7))\",\"language\":\"bash\"}", 120000);
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect(h_contains(h_str(r, "structuredContent.stdout"), "42"));
	json_object_put(r);
	/* The python image has no node: said, with the flag to use. */
	r = code(
	    s, "{\"code\":\"console.log(1)\",\"language\":\"javascript\"}");
	cr_expect(h_is_error(r));
	cr_expect_eq(h_int(r, "structuredContent.exit_code"), -1,
	    "the code did not run: %s", h_text(r));
	cr_expect(h_contains(h_text(r), "interpreter (node) is not in the "
	                                "image \"" H_IMAGE "\""),
	    "%s", h_text(r));
	cr_expect(h_contains(h_text(r), "--node-image"), "%s", h_text(r));
	json_object_put(r);
	h_finish(s);
}

/* A language's own image wins over --image for that language. */
Test(clients, language_image_wins_for_its_language)
{
	struct h_server *s;
	json_object *r;

	s = h_start("--image", "mcp-sandboxd-test/node:bookworm",
	    "--python-image", H_IMAGE, NULL);
	json_object_put(h_initialize(s));
	r = code(s, "{\"code\":\"console.log(6 * 7)\",\"language\":"
	            "\"javascript\"}");
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect(h_contains(h_str(r, "structuredContent.stdout"), "42"));
	json_object_put(r);
	r = code(s, "{\"code\":\"import sys; print(sys.version_info[0])\"}");
	cr_expect(!h_is_error(r), "%s", h_text(r));
	json_object_put(r);
	h_finish(s);
}

/* In a sandbox of one's own: the interpreter is missing, not a session
 * that died. */
Test(clients, missing_interpreter_is_named)
{
	struct h_server *s;
	json_object *r, *a;
	char *cid;

	s = h_start(NULL);
	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(
	    a, "language", json_object_new_string("typescript"));
	json_object_object_add(
	    a, "code", json_object_new_string("let x: number = 1"));
	r = h_call_tool_obj(s, "execute_code", a, 60000);
	cr_expect(h_is_error(r));
	cr_expect(h_contains(h_text(r), "typescript interpreter (node) is not "
	                                "in the image \"" H_IMAGE "\""),
	    "%s", h_text(r));
	cr_expect(h_contains(h_text(r), "--node-image"), "%s", h_text(r));
	cr_expect(
	    !h_contains(h_text(r), "session was killed"), "%s", h_text(r));
	cr_expect(!h_bool(r, "structuredContent.session_lost"));
	json_object_put(r);
	/* The sandbox is fine: its Python session works. */
	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(a, "code", json_object_new_string("print(1)"));
	r = h_call_tool_obj(s, "execute_code", a, 60000);
	cr_expect(!h_is_error(r), "%s", h_text(r));
	json_object_put(r);
	free(cid);
	h_finish(s);
}

static char *
logs_of(struct h_server *s, const char *cid)
{
	char params[256], *t;
	json_object *m;

	snprintf(
	    params, sizeof params, "{\"uri\":\"containers://%s/logs\"}", cid);
	m = h_request(s, "resources/read", params, 10000);
	cr_assert_not_null(m);
	t = strdup(h_str(m, "result.contents.0.text"));
	cr_assert_not_null(t);
	json_object_put(m);
	return t;
}

/* The file tools show in the log as what was asked, never as scripts. */
Test(clients, activity_log_shows_tools_not_scripts)
{
	struct h_server *s;
	json_object *r;
	char *cid, args[512], *log;

	s = h_start(NULL);
	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	snprintf(args, sizeof args,
	    "{\"container_id\":\"%s\",\"file_name\":\"a.txt\","
	    "\"file_contents\":\"hello\"}",
	    cid);
	r = h_call_tool(s, "write_file", args);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	json_object_put(r);
	snprintf(args, sizeof args,
	    "{\"container_id\":\"%s\",\"file_path\":\"a.txt\"}", cid);
	r = h_call_tool(s, "read_file", args);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	json_object_put(r);
	snprintf(args, sizeof args, "{\"container_id\":\"%s\"}", cid);
	r = h_call_tool(s, "list_files", args);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	json_object_put(r);
	free(h_exec_ok(s, cid, "echo from-the-user"));

	log = logs_of(s, cid);
	cr_expect(
	    h_contains(log, "write_file /app/a.txt (5 bytes)"), "%s", log);
	cr_expect(h_contains(log, "read_file /app/a.txt"), "%s", log);
	cr_expect(h_contains(log, "list_files /app"), "%s", log);
	cr_expect(h_contains(log, "$ echo from-the-user"), "%s", log);
	/* One command line: the user's. */
	cr_expect(strstr(strstr(log, "$ ") + 2, "$ ") == NULL, "%s", log);
	cr_expect(!h_contains(log, "mktemp"), "%s", log);
	cr_expect(!h_contains(log, "maxdepth"), "%s", log);
	free(log);
	free(cid);
	h_finish(s);
}

static int
list_has(struct h_server *s, const char *uri)
{
	json_object *m, *a;
	size_t i;
	int found = 0;

	m = h_request(s, "resources/list", "{}", 10000);
	cr_assert_not_null(m);
	a = h_get(m, "result.resources");
	cr_assert_not_null(a);
	for (i = 0; i < json_object_array_length(a); i++)
		found |= strcmp(h_str(json_object_array_get_idx(a, i), "uri"),
		             uri) == 0;
	json_object_put(m);
	return found;
}

/* notifications/resources/list_changed received (and taken) so far. */
static int
list_changed(struct h_server *s)
{
	json_object *n;
	size_t i;
	int count = 0;
	const char *m;

	/* Read what has come, without waiting for a response. */
	while ((n = h_read_message(s, 300)) != NULL)
		json_object_array_add(s->notes, n);
	for (i = json_object_array_length(s->notes); i-- > 0;) {
		m = h_str(json_object_array_get_idx(s->notes, i), "method");
		if (m != NULL &&
		    strcmp(m, "notifications/resources/list_changed") == 0) {
			count++;
			json_object_array_del_idx(s->notes, i, 1);
		}
	}
	return count;
}

Test(clients, resources_list_follows_sandboxes)
{
	struct h_server *s;
	json_object *init;
	char *cid, uri[128];

	s = h_start(NULL);
	init = h_initialize(s);
	cr_expect(h_bool(init, "capabilities.resources.listChanged"), "%s",
	    json_object_to_json_string(init));
	json_object_put(init);
	cr_expect_eq(list_changed(s), 0);
	cid = h_create(s, NULL);
	snprintf(uri, sizeof uri, "containers://%s/logs", cid);
	cr_expect_eq(list_changed(s), 1, "one list_changed as it came");
	cr_expect(list_has(s, uri));
	cr_expect(list_has(s, "sandbox://stats"));
	h_stop(s, cid);
	cr_expect_eq(list_changed(s), 1, "one list_changed as it went");
	cr_expect(!list_has(s, uri));
	free(cid);
	h_finish(s);
}

/*
 * Accounting from the very first exec, which starts as soon as
 * sandbox_initialize answers (the worker started while the container
 * did).  Several sandboxes start at once, which slows the engine's starts
 * and widens the race; each is exec'd as soon as it is ready.
 */
#define RACERS 6
Test(clients, first_exec_is_accounted)
{
	struct h_server *s;
	json_object *r, *f, *m;
	long ids[RACERS];
	char *cid;
	int i;

	s = h_start("--max-concurrent-starts", "8", NULL);
	json_object_put(h_initialize(s));
	for (i = 0; i < RACERS; i++)
		ids[i] = h_send_tool(s, "sandbox_initialize", NULL);
	for (i = 0; i < RACERS; i++) {
		m = h_wait_id(s, ids[i], 120000);
		cr_assert_not_null(m, "no answer to sandbox_initialize %d", i);
		r = h_tool_result(m);
		cr_assert(!h_is_error(r), "%s", h_text(r));
		cid = strdup(h_str(r, "structuredContent.container_id"));
		cr_assert_not_null(cid);
		json_object_put(r);
		if (s->nids < H_MAX_IDS)
			s->ids[s->nids++] = strdup(cid);
		r = h_exec(s, cid,
		    "i=0; while [ $i -lt 20000 ]; do "
		    "i=$((i+1)); done",
		    0);
		f = h_first(r);
		cr_expect(json_object_object_get_ex(f, "cpu_time_ms", NULL),
		    "sandbox %d: no cpu_time_ms in %s", i,
		    json_object_to_json_string(f));
		cr_expect(
		    json_object_object_get_ex(f, "memory_peak_bytes", NULL),
		    "sandbox %d: no memory_peak_bytes in %s", i,
		    json_object_to_json_string(f));
		json_object_put(r);
		free(cid);
	}
	h_finish(s);
}
