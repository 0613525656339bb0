/*
 * Integration: a sandbox's ports exposed on the host (sandbox_expose_port,
 * sandbox_unexpose_port; supervisor/run/expose.c, the worker's relay and
 * the agent).  The argument errors, the agent-off error and the start-up
 * checks need only the supervisor; expose/end_to_end_http needs the
 * worker's relay (worker/relay.c) too.
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

/* A tool call with printf-made arguments. */
static json_object *
call(struct h_server *s, const char *tool, const char *fmt, ...)
{
	char args[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	return h_call_tool_t(s, tool, args, H_TIMEOUT_MS);
}

static struct h_server *
setup(char **cid, const char *agent)
{
	struct h_server *s;

	s = h_start("--agent", agent, NULL);
	json_object_put(h_initialize(s));
	*cid = h_create(s, NULL);
	return s;
}

static void
finish(struct h_server *s, char *cid)
{
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

/* The call must be a tool error whose text says each of the words. */
static void
expect_tool_error(json_object *r, const char *what, ...)
{
	const char *w;
	va_list ap;

	cr_assert(h_is_error(r), "%s: not an error: %.1000s", what,
	    json_object_to_json_string(r));
	va_start(ap, what);
	while ((w = va_arg(ap, const char *)) != NULL)
		cr_expect(h_contains(h_text(r), w),
		    "%s: \"%s\" does not say \"%s\"", what, h_text(r), w);
	va_end(ap);
	json_object_put(r);
}

/* Ports out of range, not integers, missing; sandboxes that are not. */
Test(expose, refuses_bad_arguments, .timeout = 180)
{
	struct h_server *s;
	char *cid;

	s = setup(&cid, "on");
	expect_tool_error(call(s, "sandbox_expose_port",
	                      "{\"container_id\":\"%s\",\"port\":0}", cid),
	    "port 0", "port", NULL);
	expect_tool_error(call(s, "sandbox_expose_port",
	                      "{\"container_id\":\"%s\",\"port\":70000}", cid),
	    "port 70000", "port", NULL);
	expect_tool_error(call(s, "sandbox_expose_port",
	                      "{\"container_id\":\"%s\",\"port\":-1}", cid),
	    "port -1", "port", NULL);
	expect_tool_error(
	    call(s, "sandbox_expose_port",
	        "{\"container_id\":\"%s\",\"port\":\"8000\"}", cid),
	    "port as a string", "port", NULL);
	expect_tool_error(call(s, "sandbox_expose_port",
	                      "{\"container_id\":\"%s\",\"port\":80.5}", cid),
	    "port 80.5", "port", NULL);
	expect_tool_error(
	    call(s, "sandbox_expose_port", "{\"container_id\":\"%s\"}", cid),
	    "no port", "port", NULL);
	expect_tool_error(call(s, "sandbox_expose_port",
	                      "{\"container_id\":\"no-such-sandbox-here\","
	                      "\"port\":8000}"),
	    "unknown container_id", "no sandbox", NULL);
	expect_tool_error(call(s, "sandbox_expose_port", "{\"port\":8000}"),
	    "no container_id", "container_id", NULL);
	expect_tool_error(call(s, "sandbox_unexpose_port",
	                      "{\"container_id\":\"%s\",\"port\":0}", cid),
	    "unexpose port 0", "port", NULL);
	expect_tool_error(call(s, "sandbox_unexpose_port",
	                      "{\"container_id\":\"no-such-sandbox-here\","
	                      "\"port\":8000}"),
	    "unexpose, unknown container_id", "no sandbox", NULL);
	/* Never exposed: nothing asked of the worker. */
	expect_tool_error(call(s, "sandbox_unexpose_port",
	                      "{\"container_id\":\"%s\",\"port\":8000}", cid),
	    "unexpose of a port not exposed", "not exposed", NULL);
	finish(s, cid);
}

/* Without the agent there is nothing to relay connections: said so. */
Test(expose, needs_the_agent, .timeout = 180)
{
	struct h_server *s;
	json_object *r;
	char *cid;

	s = setup(&cid, "off");
	expect_tool_error(call(s, "sandbox_expose_port",
	                      "{\"container_id\":\"%s\",\"port\":8000}", cid),
	    "expose with --agent off", "agent", "--agent", NULL);
	/* Nothing was listed as exposed, and the sandbox still works. */
	r = call(s, "get_sandbox_status", "{\"container_id\":\"%s\"}", cid);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	cr_expect_eq(json_object_array_length(h_get(
	                 r, "structuredContent.sandboxes.0.exposed_ports")),
	    0);
	json_object_put(r);
	free(h_exec_ok(s, cid, "true"));
	finish(s, cid);
}

/* What the server refuses at start (no Docker asked). */
Test(expose, refuses_misconfiguration_at_start)
{
	static const struct {
		const char *args, *says;
	} cases[] = {
	    {"--expose-auth on", "--transport is stdio"},
	    {"--transport http --no-auth --expose-auth on", "--no-auth"},
	    {"--expose-bind 0.0.0.0", "beyond loopback"},
	    {"--transport http --expose-bind 192.0.2.1", "--expose-auth on"},
	    {"--expose-bind localhost", "IPv4 or IPv6"},
	    {"--max-exposed-ports 65", "--max-exposed-ports"},
	};
	char cmd[512], *out;
	size_t i;
	int st;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(cmd, sizeof cmd, "'%s' %s </dev/null 2>&1",
		    getenv("MCP_SANDBOXD_BIN"), cases[i].args);
		out = h_run(cmd, &st);
		cr_expect_eq(st, 2, "%s: exit %d: %s", cases[i].args, st, out);
		cr_expect(h_contains(out, cases[i].says),
		    "%s: \"%s\" does not say \"%s\"", cases[i].args, out,
		    cases[i].says);
		free(out);
	}
}

/* A whole HTTP/1.0 GET of path from a loopback port; the response. */
static char *
http_get(int port, const char *path, size_t *len)
{
	struct pollfd pfd;
	char req[256], *buf;
	size_t cap = 65536;
	ssize_t n;
	int fd;

	*len = 0;
	if ((fd = h_dial(port)) == -1)
		return NULL;
	snprintf(req, sizeof req,
	    "GET %s HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n", path, port);
	cr_assert_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	buf = malloc(cap + 1);
	cr_assert_not_null(buf);
	for (;;) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 10000) != 1)
			break;
		if ((n = read(fd, buf + *len, cap - *len)) <= 0)
			break;
		*len += (size_t)n;
		if (*len == cap)
			break;
	}
	buf[*len] = '\0';
	close(fd);
	return buf;
}

/*
 * python3 -m http.server on the sandbox's loopback, exposed: a file
 * fetched through the host URL has its bytes; the status lists it;
 * exposing it again gives the same URL; unexposed, its host port refuses.
 * Needs the worker's relay (worker/relay.c).
 */
Test(expose, end_to_end_http, .timeout = 300)
{
	static const char body[] = "exposed through the agent\n0123456789\n";
	struct h_server *s;
	json_object *r;
	char *cid, *out, *url, *resp;
	const char *b;
	long long host_port, id;
	size_t len;
	int i;

	s = setup(&cid, "on");
	free(h_exec_ok(s, cid,
	    "printf 'exposed through the agent\\n0123456789\\n' > "
	    "/app/hello.txt"));
	r = call(s, "sandbox_exec",
	    "{\"container_id\":\"%s\",\"background\":true,"
	    "\"timeout_seconds\":240,\"commands\":\"cd /app && exec python3 "
	    "-m http.server 8000 --bind 127.0.0.1\"}",
	    cid);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	id = h_int(r, "structuredContent.process_id");
	json_object_put(r);
	out = h_exec_ok(s, cid,
	    "for i in $(seq 100); do python3 -c 'import socket; "
	    "socket.create_connection((\"127.0.0.1\", 8000))' 2>/dev/null "
	    "&& echo up && exit 0; sleep 0.1; done; echo down");
	cr_assert(h_contains(out, "up"), "http.server did not start: %s", out);
	free(out);

	r = call(s, "sandbox_expose_port",
	    "{\"container_id\":\"%s\",\"port\":8000}", cid);
	cr_assert(!h_is_error(r), "expose: %s", h_text(r));
	host_port = h_int(r, "structuredContent.host_port");
	cr_assert(host_port > 0 && host_port < 65536);
	cr_expect_eq(h_int(r, "structuredContent.port"), 8000);
	cr_expect_str_eq(h_str(r, "structuredContent.address"), "127.0.0.1");
	cr_expect_not(h_bool(r, "structuredContent.auth"));
	cr_assert(asprintf(&url, "http://127.0.0.1:%lld/", host_port) > 0);
	cr_expect_str_eq(h_str(r, "structuredContent.url"), url);
	json_object_put(r);

	/* Through the host port, the file's very bytes. */
	resp = NULL;
	for (i = 0; i < 20 && resp == NULL; i++)
		if ((resp = http_get((int)host_port, "/hello.txt", &len)) ==
		    NULL)
			usleep(100000);
	cr_assert_not_null(resp, "no connection to host port %lld", host_port);
	cr_expect(strncmp(resp, "HTTP/1.0 200", 12) == 0, "%s", resp);
	b = strstr(resp, "\r\n\r\n");
	cr_assert_not_null(b, "no header end in %s", resp);
	b += 4;
	cr_expect_eq(len - (size_t)(b - resp), strlen(body));
	cr_expect(memcmp(b, body, strlen(body)) == 0, "body \"%s\"", b);
	free(resp);

	/* Again: the same one. */
	r = call(s, "sandbox_expose_port",
	    "{\"container_id\":\"%s\",\"port\":8000}", cid);
	cr_assert(!h_is_error(r), "expose again: %s", h_text(r));
	cr_expect_eq(h_int(r, "structuredContent.host_port"), host_port);
	cr_expect_str_eq(h_str(r, "structuredContent.url"), url);
	json_object_put(r);

	/* Listed by get_sandbox_status, counted in its stats. */
	r = call(s, "get_sandbox_status", "{\"container_id\":\"%s\"}", cid);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	cr_expect_eq(json_object_array_length(h_get(
	                 r, "structuredContent.sandboxes.0.exposed_ports")),
	    1);
	cr_expect_eq(
	    h_int(r, "structuredContent.sandboxes.0.exposed_ports.0.port"),
	    8000);
	cr_expect_str_eq(
	    h_str(r, "structuredContent.sandboxes.0.exposed_ports.0.url"), url);
	cr_expect_eq(h_int(r, "structuredContent.stats.exposed_ports.open"), 1);
	cr_expect_geq(
	    h_int(r, "structuredContent.stats.exposed_ports.exposed"), 1);
	json_object_put(r);

	/* Unexposed: the host port refuses, and a second unexpose fails. */
	r = call(s, "sandbox_unexpose_port",
	    "{\"container_id\":\"%s\",\"port\":8000}", cid);
	cr_assert(!h_is_error(r), "unexpose: %s", h_text(r));
	cr_expect(h_bool(r, "structuredContent.unexposed"));
	json_object_put(r);
	cr_expect_eq(h_dial((int)host_port), -1,
	    "host port %lld still takes connections", host_port);
	/* The connection went through the agent's channel and was handed
	 * over: its socket passed, relayed by the worker on its own. */
	cr_expect(h_log_has(s, cid, "8000: a connection closed (", 5000));
	cr_expect(h_log_has(s, cid, " out, its socket passed)", 5000),
	    "the exposed port's connection was never passed");
	expect_tool_error(call(s, "sandbox_unexpose_port",
	                      "{\"container_id\":\"%s\",\"port\":8000}", cid),
	    "second unexpose", "not exposed", NULL);
	r = call(s, "get_sandbox_status", "{\"container_id\":\"%s\"}", cid);
	cr_expect_eq(json_object_array_length(h_get(
	                 r, "structuredContent.sandboxes.0.exposed_ports")),
	    0);
	json_object_put(r);

	json_object_put(call(s, "process_signal",
	    "{\"container_id\":\"%s\",\"process_id\":%lld,\"signal\":\"KILL\"}",
	    cid, id));
	free(url);
	finish(s, cid);
}

/* --max-exposed-ports bounds a sandbox's ports (needs the worker's relay:
 * the first one must open). */
Test(expose, bounded_per_sandbox, .timeout = 300)
{
	struct h_server *s;
	json_object *r;
	char *cid;

	s = h_start("--agent", "on", "--max-exposed-ports", "1", NULL);
	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	/* Nothing need listen in the sandbox for the port to be exposed. */
	r = call(s, "sandbox_expose_port",
	    "{\"container_id\":\"%s\",\"port\":8001}", cid);
	cr_assert(!h_is_error(r), "expose: %s", h_text(r));
	json_object_put(r);
	expect_tool_error(call(s, "sandbox_expose_port",
	                      "{\"container_id\":\"%s\",\"port\":8002}", cid),
	    "a second port past --max-exposed-ports 1", "--max-exposed-ports",
	    NULL);
	finish(s, cid);
}

/* A raw request to a loopback port; the whole response (malloc). */
static char *
http_raw(int port, const char *req)
{
	struct pollfd pfd;
	size_t cap = 65536, len = 0;
	char *buf;
	ssize_t n;
	int fd;

	if ((fd = h_dial(port)) == -1)
		return NULL;
	cr_assert_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	buf = malloc(cap + 1);
	cr_assert_not_null(buf);
	for (;;) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 10000) != 1 ||
		    (n = read(fd, buf + len, cap - len)) <= 0)
			break;
		len += (size_t)n;
		if (len == cap)
			break;
	}
	buf[len] = '\0';
	close(fd);
	return buf;
}

/*
 * --expose-auth on: a port answers 401 to a request without the HTTP
 * transport's token (and the sandbox's server never sees it), 400 to a
 * malformed head, 431 to one too long; with the token the request goes
 * through with its Authorization field taken out and "Connection: close"
 * (one request a connection), nothing else changed.  In the sandbox, a server
 * that answers each request with its head.
 */
Test(expose, bearer_token_guards_the_port, .timeout = 300)
{
	static const char token[] = "expose-token-0123456789abcdef";
	static const char echo[] =
	    "import socket\n"
	    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, "
	    "socket.SO_REUSEADDR, 1)\n"
	    "s.bind(('127.0.0.1', 8001)); s.listen(8)\n"
	    "n = 0\n"
	    "while True:\n"
	    "    c, _ = s.accept(); n += 1; h = b''\n"
	    "    while b'\\r\\n\\r\\n' not in h:\n"
	    "        d = c.recv(65536)\n"
	    "        if not d: break\n"
	    "        h += d\n"
	    "    open('/app/seen', 'ab').write(h)\n"
	    "    body = b'request %d\\n' % n + h\n"
	    "    c.sendall(b'HTTP/1.0 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n'"
	    " % len(body) + body); c.close()\n";
	struct h_server *s;
	json_object *r, *a;
	char tokfile[] = "/tmp/mcp-sandboxd-expose-token-XXXXXX", listen[32];
	char req[20000], *cid, *out, *resp, *cmd;
	long long host_port, id;
	int fd, i;

	fd = mkstemp(tokfile);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, token, strlen(token)), (ssize_t)strlen(token));
	close(fd);
	snprintf(listen, sizeof listen, "127.0.0.1:%d", h_free_port());
	s = h_start("--agent", "on", "--transport", "both", "--listen", listen,
	    "--auth-token-file", tokfile, "--expose-auth", "on", NULL);
	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(
	    a, "file_name", json_object_new_string("echo.py"));
	json_object_object_add(
	    a, "file_contents", json_object_new_string(echo));
	r = h_call_tool_obj(s, "write_file", a, H_TIMEOUT_MS);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	json_object_put(r);
	r = call(s, "sandbox_exec",
	    "{\"container_id\":\"%s\",\"background\":true,"
	    "\"timeout_seconds\":240,\"commands\":\"exec python3 "
	    "/app/echo.py\"}",
	    cid);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	id = h_int(r, "structuredContent.process_id");
	json_object_put(r);
	/* Listening (port 8001 is 1F41), without a connection to it. */
	out = h_exec_ok(s, cid,
	    "for i in $(seq 100); do grep -q ':1F41 00000000:0000 0A' "
	    "/proc/net/tcp && echo up && exit 0; sleep 0.1; done; echo down");
	cr_assert(
	    h_contains(out, "up"), "the echo server did not start: %s", out);
	free(out);

	r = call(s, "sandbox_expose_port",
	    "{\"container_id\":\"%s\",\"port\":8001}", cid);
	cr_assert(!h_is_error(r), "expose: %s", h_text(r));
	cr_expect(h_bool(r, "structuredContent.auth"));
	host_port = h_int(r, "structuredContent.host_port");
	json_object_put(r);

	/* No token, a wrong one, two of them: 401, and no further. */
	const char *bad[] = {
	    "GET /a HTTP/1.1\r\nHost: x\r\n\r\n",
	    "GET /a HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\n\r\n",
	    "GET /a HTTP/1.1\r\nHost: x\r\nAuthorization: Basic Zm9vOmJhcg==\r\n\r\n",
	};
	for (i = 0; i < 3; i++) {
		resp = NULL;
		for (int t = 0; t < 20 && resp == NULL; t++)
			if ((resp = http_raw((int)host_port, bad[i])) == NULL)
				usleep(100000);
		cr_assert_not_null(resp);
		cr_expect(strncmp(resp, "HTTP/1.1 401 ", 13) == 0,
		    "case %d: %s", i, resp);
		cr_expect(
		    h_contains(resp, "WWW-Authenticate: Bearer"), "%s", resp);
		free(resp);
	}
	snprintf(req, sizeof req,
	    "GET /a HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
	    "Authorization: Bearer %s\r\n\r\n",
	    token, token);
	resp = http_raw((int)host_port, req);
	cr_expect(resp != NULL && strncmp(resp, "HTTP/1.1 401 ", 13) == 0,
	    "two tokens: %s", resp);
	free(resp);
	/* A malformed head: 400; a head past 16 KiB: 431. */
	resp = http_raw((int)host_port, "GET /a HTTP/1.1\r\nBad field\r\n\r\n");
	cr_expect(resp != NULL && strncmp(resp, "HTTP/1.1 400 ", 13) == 0,
	    "malformed: %s", resp);
	free(resp);
	snprintf(req, sizeof req, "GET /a HTTP/1.1\r\nX-Pad: %0*d\r\n\r\n",
	    17000, 0);
	resp = http_raw((int)host_port, req);
	cr_expect(resp != NULL && strncmp(resp, "HTTP/1.1 431 ", 13) == 0,
	    "too long: %.100s", resp);
	free(resp);

	/* The token: through, without its Authorization field, and with
	 * "Connection: close" (one request a connection). */
	snprintf(req, sizeof req,
	    "GET /with-token HTTP/1.1\r\nHost: x\r\n"
	    "authorization: bearer %s\r\nX-Keep: kept\r\n\r\n",
	    token);
	resp = http_raw((int)host_port, req);
	cr_assert_not_null(resp);
	cr_expect(strncmp(resp, "HTTP/1.0 200", 12) == 0, "%s", resp);
	cr_expect(h_contains(resp, "request 1\n"
	                           "GET /with-token HTTP/1.1\r\nHost: x\r\n"
	                           "X-Keep: kept\r\nConnection: close\r\n\r\n"),
	    "the sandbox's server saw: %s", resp);
	cr_expect(!h_contains(resp, token), "the token reached the sandbox");
	free(resp);
	/* Nothing of the refused requests reached the sandbox. */
	cr_assert(asprintf(&cmd, "cat /app/seen") > 0);
	out = h_exec_ok(s, cid, cmd);
	cr_expect(!h_contains(out, "GET /a ") && !h_contains(out, token),
	    "the sandbox saw: %s", out);
	free(out);
	free(cmd);

	json_object_put(call(s, "process_signal",
	    "{\"container_id\":\"%s\",\"process_id\":%lld,\"signal\":\"KILL\"}",
	    cid, id));
	h_stop(s, cid);
	free(cid);
	/* HTTP serves on after stdin's end (--transport both): a signal. */
	kill(s->pid, SIGTERM);
	cr_expect_eq(h_wait_exit(s, 30000), 0);
	cr_expect_eq(h_docker_count(s->label), 0);
	h_free(s);
	unlink(tokfile);
}
