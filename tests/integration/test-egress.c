/*
 * Integration: egress by allowlist (sandbox_initialize's egress,
 * sandbox_set_egress; the worker's proxy, worker/proxy.c, through the
 * sandbox's agent).  The sandbox keeps network mode none; the hosts it
 * reaches are egress-host.py's servers on the host's 127.0.0.1, which
 * --egress-allow-address 127.0.0.1 lets the proxy connect to.  Commands
 * clear NO_PROXY (the proxy's own says localhost goes direct) so that
 * "localhost" goes through the proxy, resolved on the host.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

#define HELLO "egress reached the host\n0123456789\n"

/* egress-host.py, running. */
struct host {
	pid_t pid;
	int in; /* its standard input: closed, it exits */
	int http, https;
	char dir[64];
};

static const char *
fixture_dir(void)
{
	static char dir[PATH_MAX];
	const char *env = getenv("MCP_SANDBOXD_TESTS");

	if (env != NULL)
		snprintf(dir, sizeof dir, "%s/integration", env);
	else {
		/* Run by hand from the build directory. */
		char file[PATH_MAX];

		snprintf(file, sizeof file, "%s", __FILE__);
		snprintf(dir, sizeof dir, "%s", dirname(file));
	}
	return dir;
}

static void
host_start(struct host *h)
{
	char script[PATH_MAX + 32], line[128];
	int in[2], out[2];
	FILE *f;

	snprintf(h->dir, sizeof h->dir, "/tmp/mcp-egress-test-XXXXXX");
	cr_assert_not_null(mkdtemp(h->dir));
	snprintf(script, sizeof script, "%s/egress-host.py", fixture_dir());
	cr_assert_eq(pipe(in), 0);
	cr_assert_eq(pipe(out), 0);
	h->pid = fork();
	cr_assert_neq(h->pid, -1);
	if (h->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execlp("python3", "python3", script, h->dir, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	h->in = in[1];
	f = fdopen(out[0], "r");
	cr_assert_not_null(f);
	cr_assert_not_null(
	    fgets(line, sizeof line, f), "%s did not start", script);
	fclose(f);
	cr_assert_eq(sscanf(line, "http %d https %d", &h->http, &h->https), 2,
	    "egress-host.py said \"%s\"", line);
}

static void
host_stop(struct host *h)
{
	int st;

	close(h->in);
	kill(h->pid, SIGTERM);
	waitpid(h->pid, &st, 0);
	h_rm_rf(h->dir);
}

/* A tool call with printf-made arguments. */
static json_object *
call(struct h_server *s, const char *tool, const char *fmt, ...)
{
	char args[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	return h_call_tool_t(s, tool, args, 180000);
}

/* A command with NO_PROXY cleared, so that localhost is proxied too. */
static json_object *
run(struct h_server *s, const char *cid, const char *cmd)
{
	json_object *args = json_object_new_object(), *env;

	env = json_object_new_object();
	json_object_object_add(env, "NO_PROXY", json_object_new_string(""));
	json_object_object_add(env, "no_proxy", json_object_new_string(""));
	json_object_object_add(args, "commands", json_object_new_string(cmd));
	json_object_object_add(args, "env", env);
	json_object_object_add(
	    args, "timeout_seconds", json_object_new_int(120));
	return h_exec_obj(s, cid, args, 180000);
}

/* The result's egress entry for host:port with that verdict, or NULL. */
static json_object *
entry(json_object *r, const char *host, int port, int allowed)
{
	json_object *list = h_get(h_first(r), "egress"), *e;
	size_t i;

	if (list == NULL)
		return NULL;
	for (i = 0; i < json_object_array_length(list); i++) {
		e = json_object_array_get_idx(list, i);
		if (strcmp(h_str(e, "host"), host) == 0 &&
		    h_int(e, "port") == port && h_bool(e, "allowed") == allowed)
			return e;
	}
	return NULL;
}

static const char *
out_of(json_object *r)
{
	return h_str(h_first(r), "stdout");
}

/* Python in the sandbox fetching url: the body, or "HTTP 403: ..." */
#define FETCH                                                                  \
	"python3 - <<'EOF'\n"                                                  \
	"import ssl, sys, urllib.request, urllib.error\n"                      \
	"ctx = ssl.create_default_context()\n"                                 \
	"ctx.check_hostname = False\n"                                         \
	"ctx.verify_mode = ssl.CERT_NONE\n"                                    \
	"try:\n"                                                               \
	"    r = urllib.request.urlopen('%s', context=ctx, timeout=60)\n"      \
	"    sys.stdout.write(r.read().decode())\n"                            \
	"except urllib.error.HTTPError as e:\n"                                \
	"    print('HTTP %%d: %%s' %% (e.code, e.read().decode().strip()))\n"  \
	"    print('header:', e.headers.get('X-Mcp-Sandboxd-Egress'))\n"       \
	"EOF"

static json_object *
fetch(struct h_server *s, const char *cid, const char *url)
{
	char cmd[2048];

	snprintf(cmd, sizeof cmd, FETCH, url);
	return run(s, cid, cmd);
}

static struct h_server *
server(void)
{
	struct h_server *s;

	s = h_start("--agent", "on", "--egress-allow", "localhost",
	    "--egress-allow", "127.0.0.1", "--egress-allow", "127.0.0.2",
	    "--egress-allow-address", "127.0.0.1", NULL);
	json_object_put(h_initialize(s));
	return s;
}

/* A sandbox of s whose list is localhost:port. */
static char *
create_allowed(struct h_server *s, int port)
{
	char args[128];

	snprintf(args, sizeof args, "{\"egress\":[\"localhost:%d\"]}", port);
	return h_create(s, args);
}

/* hello.txt through the proxy: its body, and an allowed entry. */
static void
expect_hello(struct h_server *s, const char *cid, int port)
{
	json_object *r;
	char url[128];

	snprintf(url, sizeof url, "http://localhost:%d/hello.txt", port);
	r = fetch(s, cid, url);
	cr_expect_str_eq(out_of(r), HELLO);
	cr_expect_not_null(entry(r, "localhost", port, 1), "%s",
	    json_object_to_json_string(h_first(r)));
	json_object_put(r);
}

/* The sandbox stopped, the server and the host's servers too. */
static void
finish(struct h_server *s, char *cid, struct host *h)
{
	h_stop(s, cid);
	free(cid);
	h_finish(s);
	host_stop(h);
}

/* The call must be a tool error whose text says what. */
static void
expect_tool_error(json_object *r, const char *what, const char *says)
{
	cr_assert(h_is_error(r), "%s: not an error: %.1000s", what,
	    json_object_to_json_string(r));
	cr_expect(h_contains(h_text(r), says), "%s: \"%s\" does not say \"%s\"",
	    what, h_text(r), says);
	json_object_put(r);
}

/* With no --egress-allow, or with the agent off, egress is refused. */
Test(egress, refused_unless_the_operator_allows_it, .timeout = 300)
{
	struct h_server *s;
	char *cid;

	s = h_start("--agent", "on", NULL);
	json_object_put(h_initialize(s));
	expect_tool_error(
	    call(s, "sandbox_initialize", "{\"egress\":[\"example.org\"]}"),
	    "egress on a server that allows none", "egress is off");
	cid = h_create(s, NULL);
	expect_tool_error(
	    call(s, "sandbox_set_egress",
	        "{\"container_id\":\"%s\",\"egress\":[\"example.org\"]}", cid),
	    "set_egress on a server that allows none", "egress is off");
	h_stop(s, cid);
	free(cid);
	h_finish(s);

	s = h_start("--agent", "off", "--egress-allow", "example.org", NULL);
	json_object_put(h_initialize(s));
	expect_tool_error(
	    call(s, "sandbox_initialize", "{\"egress\":[\"example.org\"]}"),
	    "egress with --agent off", "agent");
	h_finish(s);

	s = h_start(
	    "--agent", "on", "--egress-allow", "*.example.org:443", NULL);
	json_object_put(h_initialize(s));
	expect_tool_error(
	    call(s, "sandbox_initialize", "{\"egress\":[\"example.org\"]}"),
	    "a host the operator does not allow", "example.org");
	expect_tool_error(call(s, "sandbox_initialize",
	                      "{\"egress\":[\"a.example.org:80\"]}"),
	    "a port the operator does not allow", "a.example.org:80");
	expect_tool_error(
	    call(s, "sandbox_initialize", "{\"egress\":[\"bad host!\"]}"),
	    "a pattern that is not one", "bad host!");
	h_finish(s);
}

/*
 * The whole way: the variables commands get; a plain GET through the
 * proxy to an allowed host with its bytes counted in the result; a
 * CONNECT tunnel (HTTPS) to another port; refusals by name and by
 * address as 403s with the reason inside the sandbox and in the result;
 * the list changed on the live sandbox, egress off and on again.
 */
Test(egress, allowlist_end_to_end, .timeout = 600)
{
	struct h_server *s;
	struct host h;
	json_object *r, *e;
	char args[512], url[128], cmd[512], path[128], sum[80], *cid, *out;
	FILE *f;

	host_start(&h);
	s = server();
	snprintf(args, sizeof args,
	    "{\"egress\":[\"localhost:%d\",\"localhost:%d\","
	    "\"127.0.0.2:%d\"]}",
	    h.http, h.https, h.http);
	cid = h_create(s, args);

	/* What commands see. */
	out = h_exec_ok(s, cid, "env | grep -i -E '^(https?|no)_proxy=|^npm_'");
	cr_expect(
	    h_contains(out, "HTTP_PROXY=http://127.0.0.1:3128"), "%s", out);
	cr_expect(
	    h_contains(out, "HTTPS_PROXY=http://127.0.0.1:3128"), "%s", out);
	cr_expect(
	    h_contains(out, "http_proxy=http://127.0.0.1:3128"), "%s", out);
	cr_expect(
	    h_contains(out, "https_proxy=http://127.0.0.1:3128"), "%s", out);
	cr_expect(h_contains(out, "npm_config_proxy=http://127.0.0.1:3128"),
	    "%s", out);
	cr_expect(
	    h_contains(out, "NO_PROXY=localhost,127.0.0.1,::1"), "%s", out);
	free(out);

	/* A plain GET, its bytes counted. */
	snprintf(url, sizeof url, "http://localhost:%d/hello.txt", h.http);
	r = fetch(s, cid, url);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	cr_expect_str_eq(out_of(r), HELLO);
	e = entry(r, "localhost", h.http, 1);
	cr_assert_not_null(
	    e, "no egress entry: %s", json_object_to_json_string(h_first(r)));
	cr_expect_eq(h_int(e, "connections"), 1);
	cr_expect_gt(h_int(e, "bytes_in"), (long long)strlen(HELLO));
	cr_expect_gt(h_int(e, "bytes_out"), 20);
	json_object_put(r);

	/* 20 MiB through the windows, each byte as it was. */
	snprintf(cmd, sizeof cmd,
	    "python3 -c 'import hashlib, urllib.request; u = "
	    "\"http://localhost:%d/big.bin\"; print(hashlib.sha256("
	    "urllib.request.urlopen(u).read()).hexdigest())'",
	    h.http);
	r = run(s, cid, cmd);
	snprintf(path, sizeof path, "%s/big.sha256", h.dir);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(sum, sizeof sum, f));
	fclose(f);
	cr_expect_str_eq(out_of(r), sum);
	e = entry(r, "localhost", h.http, 1);
	cr_assert_not_null(e);
	cr_expect_gt(h_int(e, "bytes_in"), 20 << 20);
	json_object_put(r);

	/* HTTPS: a CONNECT tunnel, the TLS end to end. */
	snprintf(url, sizeof url, "https://localhost:%d/hello.txt", h.https);
	r = fetch(s, cid, url);
	cr_expect_str_eq(out_of(r), HELLO);
	e = entry(r, "localhost", h.https, 1);
	cr_assert_not_null(
	    e, "no egress entry: %s", json_object_to_json_string(h_first(r)));
	cr_expect_gt(h_int(e, "bytes_in"), (long long)strlen(HELLO));
	json_object_put(r);

	/* Not on the list: 403 inside, said in the result. */
	snprintf(url, sizeof url, "http://127.0.0.1:%d/hello.txt", h.http);
	r = fetch(s, cid, url);
	cr_expect(h_contains(out_of(r), "HTTP 403"), "%s", out_of(r));
	cr_expect(
	    h_contains(out_of(r), "not on this sandbox's egress allowlist"),
	    "%s", out_of(r));
	cr_expect(h_contains(out_of(r), "header: refused"), "%s", out_of(r));
	e = entry(r, "127.0.0.1", h.http, 0);
	cr_assert_not_null(
	    e, "no refused entry: %s", json_object_to_json_string(h_first(r)));
	cr_expect(h_contains(h_str(e, "reason"), "allowlist"), "%s",
	    h_str(e, "reason"));
	json_object_put(r);

	/* On the list, but a loopback address the operator did not allow. */
	snprintf(url, sizeof url, "http://127.0.0.2:%d/hello.txt", h.http);
	r = fetch(s, cid, url);
	cr_expect(h_contains(out_of(r), "HTTP 403"), "%s", out_of(r));
	cr_expect(h_contains(out_of(r), "loopback"), "%s", out_of(r));
	e = entry(r, "127.0.0.2", h.http, 0);
	cr_assert_not_null(
	    e, "no refused entry: %s", json_object_to_json_string(h_first(r)));
	cr_expect(h_contains(h_str(e, "reason"), "loopback"), "%s",
	    h_str(e, "reason"));
	json_object_put(r);

	/* Off on the live sandbox: refused, and the variables are gone. */
	r = call(s, "sandbox_set_egress",
	    "{\"container_id\":\"%s\",\"egress\":[]}", cid);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	cr_expect_eq(
	    json_object_array_length(h_get(r, "structuredContent.egress")), 0);
	json_object_put(r);
	out = h_exec_ok(s, cid, "env | grep -i -c _proxy= || true");
	cr_expect_str_eq(out, "0\n");
	free(out);
	snprintf(url, sizeof url, "http://localhost:%d/hello.txt", h.http);
	r = run(s, cid,
	    "python3 -c 'import socket; s = socket.create_connection("
	    "(\"127.0.0.1\", 3128)); s.sendall(b\"GET http://localhost/ "
	    "HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n\"); "
	    "print(s.recv(4096).decode())'");
	cr_expect(h_contains(out_of(r), "403"), "%s", out_of(r));
	cr_expect(h_contains(out_of(r), "egress is off"), "%s", out_of(r));
	json_object_put(r);

	/* And on again. */
	r = call(s, "sandbox_set_egress",
	    "{\"container_id\":\"%s\",\"egress\":[\"localhost:%d\"]}", cid,
	    h.http);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	snprintf(args, sizeof args, "localhost:%d", h.http);
	cr_expect_str_eq(h_str(r, "structuredContent.egress.0"), args);
	json_object_put(r);
	r = fetch(s, cid, url);
	cr_expect_str_eq(out_of(r), HELLO);
	json_object_put(r);

	finish(s, cid, &h);
}

/* The proxy's bounds, as the sandbox sees them. */
Test(egress, bad_requests_are_answered, .timeout = 300)
{
	struct h_server *s;
	struct host h;
	json_object *r;
	char *cid;

	host_start(&h);
	s = server();
	cid = create_allowed(s, h.http);
	r = run(s, cid,
	    "python3 - <<'EOF'\n"
	    "import socket\n"
	    "def ask(data, wait=None):\n"
	    "    s = socket.create_connection(('127.0.0.1', 3128))\n"
	    "    s.settimeout(30)\n"
	    "    if data: s.sendall(data)\n"
	    "    got = b''\n"
	    "    try:\n"
	    "        while True:\n"
	    "            b = s.recv(65536)\n"
	    "            if not b: break\n"
	    "            got += b\n"
	    "    except (ConnectionResetError, socket.timeout):\n"
	    "        pass\n"
	    "    return got.decode(errors='replace').split('\\r\\n')[0]\n"
	    "print('garbage', ask(b'hello there\\r\\n\\r\\n'))\n"
	    "print('long', ask(b'GET http://localhost/ HTTP/1.1\\r\\nX: ' + "
	    "b'a' * 20000))\n"
	    "print('origin', ask(b'GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'))\n"
	    "print('https-uri', ask(b'GET https://localhost/ HTTP/1.1\\r\\n"
	    "Host: localhost\\r\\n\\r\\n'))\n"
	    "print('silent', ask(b''))\n"
	    "EOF");
	cr_assert(!h_is_error(r), "%s", h_text(r));
	cr_expect(
	    h_contains(out_of(r), "garbage HTTP/1.1 400"), "%s", out_of(r));
	cr_expect(h_contains(out_of(r), "long HTTP/1.1 431"), "%s", out_of(r));
	cr_expect(
	    h_contains(out_of(r), "origin HTTP/1.1 400"), "%s", out_of(r));
	cr_expect(
	    h_contains(out_of(r), "https-uri HTTP/1.1 400"), "%s", out_of(r));
	cr_expect(
	    h_contains(out_of(r), "silent HTTP/1.1 408"), "%s", out_of(r));
	json_object_put(r);

	/* More hosts in one call than a result lists: cut, and said so.
	 * Refused by the list, so nothing is resolved or dialed. */
	r = run(s, cid,
	    "python3 - <<'EOF'\n"
	    "import socket\n"
	    "for i in range(1, 71):\n"
	    "    s = socket.create_connection(('127.0.0.1', 3128))\n"
	    "    s.sendall(b'GET http://203.0.113.%d/ HTTP/1.1\\r\\nHost: "
	    "x\\r\\n\\r\\n' % i)\n"
	    "    assert b' 403 ' in s.recv(4096)\n"
	    "    s.close()\n"
	    "print('done')\n"
	    "EOF");
	cr_expect_str_eq(
	    out_of(r), "done\n", "%s", json_object_to_json_string(h_first(r)));
	cr_expect_eq(json_object_array_length(h_get(h_first(r), "egress")), 64);
	cr_expect(h_bool(h_first(r), "egress_cut"));
	json_object_put(r);

	/* A flood of connections that say nothing: the proxy holds at most
	 * its bound of them, the rest are closed at once; then, those gone,
	 * it serves again. */
	r = run(s, cid,
	    "python3 - <<'EOF'\n"
	    "import socket, time\n"
	    "socks = []\n"
	    "for i in range(150):\n"
	    "    try:\n"
	    "        socks.append(socket.create_connection(('127.0.0.1', "
	    "3128)))\n"
	    "    except OSError:\n"
	    "        pass\n"
	    "time.sleep(2)\n"
	    "held = 0\n"
	    "for s in socks:\n"
	    "    s.setblocking(False)\n"
	    "    try:\n"
	    "        held += s.recv(1) != b''\n"
	    "    except BlockingIOError:\n"
	    "        held += 1\n"
	    "    except OSError:\n"
	    "        pass\n"
	    "    s.close()\n"
	    "print('held', held)\n"
	    "EOF");
	cr_assert(h_contains(out_of(r), "held "), "%s",
	    json_object_to_json_string(h_first(r)));
	cr_expect_leq(atoi(out_of(r) + 5), 64, "%s", out_of(r));
	cr_expect_geq(atoi(out_of(r) + 5), 1, "%s", out_of(r));
	json_object_put(r);
	expect_hello(s, cid, h.http);
	finish(s, cid, &h);
}

/* cmd through the proxy prints want, and reached localhost:port. */
static void
expect_output(struct h_server *s, const char *cid, const char *cmd,
    const char *want, int port)
{
	json_object *r = run(s, cid, cmd);

	cr_expect_str_eq(
	    out_of(r), want, "%s", json_object_to_json_string(h_first(r)));
	cr_expect_not_null(entry(r, "localhost", port, 1), "%s",
	    json_object_to_json_string(h_first(r)));
	json_object_put(r);
}

/* pip and npm install from local package servers through the proxy. */
Test(egress, package_managers_install_through_it, .timeout = 600)
{
	struct h_server *s;
	struct host h;
	json_object *r;
	char cmd[512], *cid;

	host_start(&h);
	s = server();
	cid = create_allowed(s, h.http);
	snprintf(cmd, sizeof cmd,
	    "PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --user "
	    "--no-input --disable-pip-version-check --index-url "
	    "http://localhost:%d/simple/ demo-egress >/dev/null && "
	    "python3 -c 'import demo_egress; print(demo_egress.VALUE)'",
	    h.http);
	expect_output(s, cid, cmd, "from the local index\n", h.http);
	h_stop(s, cid);
	free(cid);

	cid = h_create(s, "{\"image\":\"mcp-sandboxd-test/node:bookworm\","
	                  "\"egress\":[]}");
	r = call(s, "sandbox_set_egress",
	    "{\"container_id\":\"%s\",\"egress\":[\"localhost:%d\"]}", cid,
	    h.http);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	json_object_put(r);
	snprintf(cmd, sizeof cmd,
	    "cd $HOME && npm install --no-audit --no-fund "
	    "--no-update-notifier --registry http://localhost:%d/ "
	    "demo-egress >/dev/null && node -e "
	    "'console.log(require(\"demo-egress\"))'",
	    h.http);
	expect_output(s, cid, cmd, "from the local registry\n", h.http);
	finish(s, cid, &h);
}

/* The peak VmRSS of a process while a call runs. */
struct sampler {
	pid_t pid;
	long peak; /* kB */
	volatile int stop;
	pthread_t th;
};

static void *
sampler_main(void *arg)
{
	struct sampler *sm = arg;
	long v;

	while (!sm->stop) {
		if ((v = h_status_kb(sm->pid, "VmRSS")) > sm->peak)
			sm->peak = v;
		usleep(20000);
	}
	return NULL;
}

/*
 * A slow reader in the sandbox and a server that sends as fast as it
 * can: the worker holds no more than the windows, not the 20 MiB.  And
 * a CONNECT to a port the list does not name is refused, as is a name
 * that resolves to an address the operator did not allow.
 */
Test(egress, slow_reader_and_refused_connects, .timeout = 600)
{
	struct h_server *s;
	struct sampler sm;
	struct host h;
	json_object *r;
	char cmd[1024], url[128], *cid;
	long before;

	host_start(&h);
	s = server();
	cid = create_allowed(s, h.http);
	r = call(s, "get_sandbox_status", "{\"container_id\":\"%s\"}", cid);
	memset(&sm, 0, sizeof sm);
	sm.pid = (pid_t)h_int(r, "structuredContent.sandboxes.0.worker_pid");
	json_object_put(r);
	cr_assert(
	    sm.pid > 1 && h_pid_alive(sm.pid), "worker_pid %d", (int)sm.pid);
	before = h_status_kb(sm.pid, "VmRSS");
	cr_assert(pthread_create(&sm.th, NULL, sampler_main, &sm) == 0);
	snprintf(cmd, sizeof cmd,
	    "python3 - <<'EOF'\n"
	    "import time, urllib.request\n"
	    "r = urllib.request.urlopen('http://localhost:%d/big.bin')\n"
	    "n = 0\n"
	    "while True:\n"
	    "    b = r.read(65536)\n"
	    "    if not b: break\n"
	    "    n += len(b)\n"
	    "    time.sleep(0.01)\n"
	    "print(n)\n"
	    "EOF",
	    h.http);
	r = run(s, cid, cmd);
	sm.stop = 1;
	pthread_join(sm.th, NULL);
	cr_expect_str_eq(out_of(r), "20971520\n", "%s",
	    json_object_to_json_string(h_first(r)));
	json_object_put(r);
	fprintf(stderr,
	    "egress/slow: worker VmRSS %ld kB before, %ld kB at most\n", before,
	    sm.peak);
	cr_expect_lt(sm.peak - before, 10 * 1024,
	    "the worker grew by %ld kB for a slow reader", sm.peak - before);

	/* CONNECT to a port not on the list. */
	r = run(s, cid,
	    "python3 -c 'import socket; s = socket.create_connection("
	    "(\"127.0.0.1\", 3128)); s.sendall(b\"CONNECT localhost:1 "
	    "HTTP/1.1\\r\\nHost: localhost:1\\r\\n\\r\\n\"); "
	    "print(s.recv(4096).decode())'");
	cr_expect(h_contains(out_of(r), "HTTP/1.1 403"), "%s", out_of(r));
	cr_expect(
	    h_contains(out_of(r), "localhost:1 is not on"), "%s", out_of(r));
	cr_expect_not_null(entry(r, "localhost", 1, 0), "%s",
	    json_object_to_json_string(h_first(r)));
	json_object_put(r);
	h_stop(s, cid);
	free(cid);
	h_finish(s);

	/* Without --egress-allow-address, localhost resolves to what the
	 * proxy refuses. */
	s = h_start("--agent", "on", "--egress-allow", "localhost", NULL);
	json_object_put(h_initialize(s));
	cid = create_allowed(s, h.http);
	snprintf(url, sizeof url, "http://localhost:%d/hello.txt", h.http);
	r = fetch(s, cid, url);
	cr_expect(h_contains(out_of(r), "HTTP 403"), "%s", out_of(r));
	cr_expect(h_contains(out_of(r), "loopback"), "%s", out_of(r));
	cr_expect_not_null(entry(r, "localhost", h.http, 0), "%s",
	    json_object_to_json_string(h_first(r)));
	json_object_put(r);
	finish(s, cid, &h);
}

/* The ch-* directories under dir's instance directories. */
static int
channel_dirs(const char *dir)
{
	char cmd[512], *out;
	int st, n;

	snprintf(cmd, sizeof cmd,
	    "find '%s' -mindepth 2 -maxdepth 2 -name 'ch-*' | wc -l", dir);
	out = h_run(cmd, &st);
	n = atoi(out);
	free(out);
	return n;
}

/*
 * The connections take the agent's channel, a unix socket in a host
 * directory bound read-only into the sandbox (worker/channel.c): the
 * socket is gone from there once the agent took it, nothing can be
 * written there, and the directory is removed with the sandbox.  Sandbox
 * code that kills the agent gets a new one, with a channel of its own,
 * and egress works again.
 */
Test(egress, connections_take_the_agents_channel, .timeout = 300)
{
	struct h_server *s;
	struct host h;
	json_object *r;
	char rt[64], url[128], line[64], *cid, *out;
	int i, agent = 0;

	host_start(&h);
	snprintf(rt, sizeof rt, "/tmp/mcp-egress-rt-XXXXXX");
	cr_assert_not_null(mkdtemp(rt));
	s = h_start("--agent", "on", "--egress-allow", "localhost",
	    "--egress-allow-address", "127.0.0.1", "--runtime-dir", rt, NULL);
	json_object_put(h_initialize(s));
	cid = create_allowed(s, h.http);
	cr_expect_eq(channel_dirs(rt), 1);
	out = h_exec_ok(s, cid,
	    "ls -A /.mcp-sandboxd-channel; echo listed; "
	    "touch /.mcp-sandboxd-channel/x 2>/dev/null || echo read-only");
	cr_expect_str_eq(out, "listed\nread-only\n");
	free(out);
	snprintf(url, sizeof url, "http://localhost:%d/hello.txt", h.http);
	r = fetch(s, cid, url);
	cr_expect_str_eq(out_of(r), HELLO);
	cr_expect(h_bool(h_first(r), "agent"));
	json_object_put(r);
	/* Through: the agent passed its socket, the worker relays it. */
	snprintf(line, sizeof line, "localhost:%d: allowed (", h.http);
	cr_expect(h_log_has(s, cid, line, 5000));
	cr_expect(h_log_has(s, cid, " in, its socket passed)", 5000),
	    "the connection was never passed");

	/* Killed from inside: back, with a new channel. */
	r = h_exec(s, cid, "pkill -KILL -f mcp-sandboxd-agent; sleep 0.2", 30);
	json_object_put(r);
	for (i = 0; i < 100 && !agent; i++) {
		r = h_exec(s, cid, "true", 30);
		agent = h_bool(h_first(r), "agent");
		json_object_put(r);
		if (!agent)
			usleep(100000);
	}
	cr_assert(agent, "the agent did not come back");
	r = fetch(s, cid, url);
	cr_expect_str_eq(out_of(r), HELLO);
	cr_expect_not_null(entry(r, "localhost", h.http, 1));
	json_object_put(r);

	h_stop(s, cid);
	free(cid);
	cr_expect_eq(channel_dirs(rt), 0,
	    "a channel's directory outlived "
	    "its sandbox");
	h_finish(s);
	h_rm_rf(rt);
	host_stop(&h);
}

/*
 * Where no socket can be made (a runtime directory too deep for a unix
 * socket's path), the connections take the agent's stream: slower, the
 * same to the sandbox.
 */
Test(egress, without_a_channel_the_stream_carries_them, .timeout = 300)
{
	struct h_server *s;
	struct host h;
	char base[64], rt[192], line[64], *cid;

	host_start(&h);
	snprintf(base, sizeof base, "/tmp/mcp-egress-rt-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
	snprintf(rt, sizeof rt,
	    "%s/a-directory-deep-enough-that-no-unix-socket-path-fits-under-"
	    "it-at-all",
	    base);
	cr_assert_eq(mkdir(rt, 0700), 0, "%s", rt);
	s = h_start("--agent", "on", "--egress-allow", "localhost",
	    "--egress-allow-address", "127.0.0.1", "--runtime-dir", rt, NULL);
	json_object_put(h_initialize(s));
	cid = create_allowed(s, h.http);
	expect_hello(s, cid, h.http);
	snprintf(line, sizeof line, "localhost:%d: allowed (", h.http);
	cr_expect(h_log_has(s, cid, line, 5000));
	cr_expect_not(h_log_has(s, cid, "its socket passed", 0),
	    "a socket passed without a channel");
	finish(s, cid, &h);
	h_rm_rf(base);
}
