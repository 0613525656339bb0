/*
 * Integration: running code.  execute_code's stateful sessions (Python,
 * JavaScript, TypeScript) and their independence between sandboxes;
 * timeouts and cancellation (raw notifications/cancelled) kill the session
 * and nothing else; every language's streams and exit codes; exceptions;
 * installation without a network of a wheel and an npm tarball built on
 * the host and copied in, through install_package and through
 * dependencies; dependency detection; hostile package names;
 * create_run_close (its sandbox never outlives the call); run_project of
 * host projects.
 *
 * The server gets the local test images for every language and, where
 * host files are involved, one --allow-dir: a mkdtemp base directory
 * holding the artifacts and projects, removed by the .fini hook with any
 * container of the test's label.
 */
#include <sys/stat.h>

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

#define PY_IMAGE "mcp-sandboxd-test/python:bookworm"
#define NODE_IMAGE "mcp-sandboxd-test/node:bookworm"
#define GO_IMAGE "mcp-sandboxd-test/go:bookworm"

#define PY_PKG "mcpsbxdemo"
#define WHEEL PY_PKG "-1.0-py3-none-any.whl"
#define JS_PKG "mcpsbx-demo-js"
#define TARBALL JS_PKG "-1.0.0.tgz"

/*
 * A wheel written by hand: a zip with the module and its .dist-info
 * (METADATA, WHEEL, top_level.txt, RECORD with sha256 digests).  `pip
 * wheel` cannot build one offline on a host without the wheel package, and
 * a hand-made wheel is the same everywhere.  argv: out dir, name, version.
 */
static const char make_wheel_py[] =
    "import base64, hashlib, os, sys, zipfile\n"
    "out, name, ver = sys.argv[1], sys.argv[2], sys.argv[3]\n"
    "di = f'{name}-{ver}.dist-info'\n"
    "files = {\n"
    "    f'{name}/__init__.py': 'def greet(n):\\n    return \"hello \" "
    "+ n\\n',\n"
    "    f'{di}/METADATA': f'Metadata-Version: 2.1\\nName: {name}\\n"
    "Version: {ver}\\n',\n"
    "    f'{di}/WHEEL': 'Wheel-Version: 1.0\\nGenerator: "
    "mcp-sandboxd-tests\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n',\n"
    "    f'{di}/top_level.txt': name + '\\n',\n"
    "}\n"
    "record = []\n"
    "for p, text in files.items():\n"
    "    data = text.encode()\n"
    "    d = base64.urlsafe_b64encode(hashlib.sha256(data).digest())"
    ".rstrip(b'=').decode()\n"
    "    record.append(f'{p},sha256={d},{len(data)}')\n"
    "record.append(f'{di}/RECORD,,')\n"
    "files[f'{di}/RECORD'] = '\\n'.join(record) + '\\n'\n"
    "path = os.path.join(out, f'{name}-{ver}-py3-none-any.whl')\n"
    "with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:\n"
    "    for p, text in files.items():\n"
    "        z.writestr(p, text)\n";

/* --- per-test state, for the .fini cleanup --- */

static char g_base[256]; /* mkdtemp base directory, the --allow-dir */
static char g_label[96]; /* the server's --label */

static void
code_fini(void)
{
	char cmd[512], *out;

	if (g_label[0] != '\0') {
		snprintf(cmd, sizeof cmd,
		    "docker ps -aq --filter 'label=%s' | xargs -r docker rm "
		    "-f >/dev/null 2>&1",
		    g_label);
		out = h_run(cmd, NULL);
		free(out);
	}
	h_rm_rf(g_base);
	g_base[0] = '\0';
}

/* --- host files --- */

static void
write_host(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "w");
	cr_assert(f != NULL, "fopen %s: %s", path, strerror(errno));
	fputs(text, f);
	cr_assert(fclose(f) == 0);
}

static void
mkdirs(const char *dir)
{
	char cmd[600], *out;
	int st;

	snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
	out = h_run(cmd, &st);
	free(out);
	cr_assert_eq(st, 0, "%s", cmd);
}

/* The mkdtemp base directory. */
static void
make_base(void)
{
	snprintf(g_base, sizeof g_base, "/tmp/mcp-sandboxd-code-XXXXXX");
	cr_assert(mkdtemp(g_base) != NULL, "mkdtemp: %s", strerror(errno));
}

/*
 * base/art/WHEEL and base/art/TARBALL, built on the host without a
 * network: the wheel by hand (python3), the tarball with `npm pack
 * --offline` (or, without npm, tar: the same layout, package/...).
 */
static void
build_artifacts(void)
{
	char art[300], js[300], pkg[320], cmd[1400], *out;
	int st;

	snprintf(art, sizeof art, "%s/art", g_base);
	snprintf(js, sizeof js, "%s/js", g_base);
	snprintf(pkg, sizeof pkg, "%s/package", js);
	mkdirs(art);
	mkdirs(pkg);
	write_host(g_base, "mkwheel.py", make_wheel_py);
	snprintf(cmd, sizeof cmd,
	    "python3 '%s/mkwheel.py' '%s' " PY_PKG " 1.0 2>&1", g_base, art);
	out = h_run(cmd, &st);
	cr_assert_eq(st, 0, "building the wheel: %s", out);
	free(out);

	write_host(pkg, "package.json",
	    "{\"name\":\"" JS_PKG "\",\"version\":\"1.0.0\","
	    "\"main\":\"index.js\",\"license\":\"MIT\"}\n");
	write_host(pkg, "index.js", "exports.greet = (n) => \"hi \" + n;\n");
	snprintf(cmd, sizeof cmd,
	    "cd '%s' && npm_config_update_notifier=false npm pack --offline "
	    "--silent --pack-destination '%s' >/dev/null 2>&1 || "
	    "tar -czf '%s/" TARBALL "' -C '%s' package 2>&1",
	    pkg, art, art, js);
	out = h_run(cmd, &st);
	cr_assert_eq(st, 0, "building the npm tarball: %s", out);
	free(out);
	snprintf(cmd, sizeof cmd, "ls '%s'", art);
	out = h_run(cmd, &st);
	cr_assert(h_contains(out, WHEEL) && h_contains(out, TARBALL),
	    "artifacts: %s", out);
	free(out);
}

/* --- the server --- */

/* With the language images; allow: --allow-dir g_base. */
static struct h_server *
start(int allow)
{
	const char *args[16];
	struct h_server *s;
	int n = 0;

	args[n++] = "--python-image";
	args[n++] = PY_IMAGE;
	args[n++] = "--node-image";
	args[n++] = NODE_IMAGE;
	args[n++] = "--go-image";
	args[n++] = GO_IMAGE;
	args[n++] = "--max-exec-timeout";
	args[n++] = "300";
	if (allow) {
		args[n++] = "--allow-dir";
		args[n++] = g_base;
	}
	args[n] = NULL;
	s = h_startv(args);
	snprintf(g_label, sizeof g_label, "%s", s->label);
	json_object_put(h_initialize(s));
	return s;
}

static char *
create(struct h_server *s, const char *image)
{
	char args[256];

	snprintf(args, sizeof args, "{\"image\":\"%s\"}", image);
	return h_create(s, args);
}

/* structuredContent.<key> as a string; "" when missing. */
static const char *
sc(json_object *r, const char *key)
{
	char path[128];
	const char *v;

	snprintf(path, sizeof path, "structuredContent.%s", key);
	v = h_str(r, path);
	return v != NULL ? v : "";
}

static long long
sci(json_object *r, const char *key)
{
	char path[128];

	snprintf(path, sizeof path, "structuredContent.%s", key);
	return h_int(r, path);
}

static int
scb(json_object *r, const char *key)
{
	char path[128];
	json_object *v;

	snprintf(path, sizeof path, "structuredContent.%s", key);
	v = h_get(r, path);
	return v != NULL && json_object_is_type(v, json_type_boolean) &&
	       json_object_get_boolean(v);
}

/* The arguments of execute_code; cid, language, deps (JSON) may be NULL. */
static json_object *
code_args(const char *cid, const char *lang, const char *src, const char *deps,
    int timeout_s)
{
	json_object *a = json_object_new_object();

	json_object_object_add(a, "code", json_object_new_string(src));
	if (lang != NULL)
		json_object_object_add(
		    a, "language", json_object_new_string(lang));
	if (cid != NULL)
		json_object_object_add(
		    a, "container_id", json_object_new_string(cid));
	if (deps != NULL)
		json_object_object_add(a, "dependencies", h_parse(deps));
	if (timeout_s > 0)
		json_object_object_add(
		    a, "timeout_seconds", json_object_new_int(timeout_s));
	return a;
}

static json_object *
code(struct h_server *s, const char *cid, const char *lang, const char *src,
    const char *deps, int timeout_s)
{
	return h_call_tool_obj(s, "execute_code",
	    code_args(cid, lang, src, deps, timeout_s),
	    (timeout_s > 0 ? timeout_s : 60) * 1000 + 60000);
}

/* execute_code that must succeed. */
static json_object *
code_ok(struct h_server *s, const char *cid, const char *lang, const char *src,
    const char *deps)
{
	json_object *r = code(s, cid, lang, src, deps, 120);

	cr_assert(!h_is_error(r) && sci(r, "exit_code") == 0,
	    "execute_code failed: %s\n%s", src, json_object_to_json_string(r));
	return r;
}

/* execute_code's stdout is exactly want. */
static void
code_expect(struct h_server *s, const char *cid, const char *lang,
    const char *src, const char *want)
{
	json_object *r = code_ok(s, cid, lang, src, NULL);

	cr_expect_str_eq(sc(r, "stdout"), want, "%s", src);
	json_object_put(r);
}

/* Is a process with exactly these args (ps -eo args) in the sandbox? */
static int
sandbox_runs(struct h_server *s, const char *cid, const char *args)
{
	char *out, *line, *save = NULL;
	size_t n;
	int found = 0;

	out = h_exec_ok(s, cid, "ps -eo args");
	for (line = strtok_r(out, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		n = strlen(line);
		while (n > 0 && line[n - 1] == ' ')
			line[--n] = '\0';
		if (strcmp(line, args) == 0)
			found = 1;
	}
	free(out);
	return found;
}

/* How many processes whose args start with prefix. */
static int
sandbox_count_prefix(struct h_server *s, const char *cid, const char *prefix)
{
	char *out, *line, *save = NULL;
	int n = 0;

	out = h_exec_ok(s, cid, "ps -eo args");
	for (line = strtok_r(out, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, prefix, strlen(prefix)) == 0)
			n++;
	free(out);
	return n;
}

/* Wait for a file to exist in the sandbox. */
static int
sandbox_wait_file(
    struct h_server *s, const char *cid, const char *path, int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms;
	char cmd[300];
	json_object *r;
	int ok;

	snprintf(cmd, sizeof cmd, "test -e '%s'", path);
	for (;;) {
		r = h_exec(s, cid, cmd, 10);
		ok = h_int(h_first(r), "exit_code") == 0;
		json_object_put(r);
		if (ok)
			return 1;
		if (h_now_ms() >= deadline)
			return 0;
		usleep(100000);
	}
}

/* `sleep N` in a sandbox_exec call left running; its request id. */
static long
background_sleep(struct h_server *s, const char *cid, int secs)
{
	json_object *a;
	char cmd[32];
	long id;
	int i;

	snprintf(cmd, sizeof cmd, "sleep %d", secs);
	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(a, "commands", json_object_new_string(cmd));
	json_object_object_add(a, "timeout_seconds", json_object_new_int(240));
	id = h_send_tool(s, "sandbox_exec", a);
	for (i = 0; i < 50 && !sandbox_runs(s, cid, cmd); i++)
		usleep(100000);
	cr_assert(sandbox_runs(s, cid, cmd), "%s is not running", cmd);
	return id;
}

static void
cancel(struct h_server *s, long id)
{
	char params[96];

	snprintf(params, sizeof params,
	    "{\"requestId\":%ld,\"reason\":\"test cancel\"}", id);
	h_send_notification(s, "notifications/cancelled", params);
}

static int
count_settles(struct h_server *s, int want, int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms;
	int n;

	while ((n = h_docker_count(s->label)) != want && h_now_ms() < deadline)
		usleep(200000);
	return n;
}

static void
copy_in(struct h_server *s, const char *cid, const char *name)
{
	json_object *a, *r;
	char src[400], dst[200];

	snprintf(src, sizeof src, "%s/art/%s", g_base, name);
	snprintf(dst, sizeof dst, "/app/%s", name);
	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(
	    a, "local_src_file", json_object_new_string(src));
	json_object_object_add(a, "dest_path", json_object_new_string(dst));
	r = h_call_tool_obj(s, "copy_file", a, 60000);
	cr_assert(!h_is_error(r), "copy_file %s: %s", name, h_text(r));
	json_object_put(r);
}

static json_object *
install(struct h_server *s, const char *cid, const char *packages,
    const char *manager)
{
	json_object *a;

	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(a, "packages", h_parse(packages));
	if (manager != NULL)
		json_object_object_add(
		    a, "manager", json_object_new_string(manager));
	return h_call_tool_obj(s, "install_package", a, 180000);
}

static void
stop_all(struct h_server *s, char **ids, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		h_stop(s, ids[i]);
		free(ids[i]);
	}
}

/* --- sessions --- */

Test(code, python_session, .timeout = 180, .fini = code_fini)
{
	struct h_server *s;
	json_object *r;
	char *ids[2];

	s = start(0);
	ids[0] = create(s, PY_IMAGE);
	ids[1] = create(s, PY_IMAGE);
	r = code_ok(s, ids[0], NULL,
	    "import math\ncounter = 41\ndef bump(n):\n    return n + 1\n",
	    NULL);
	cr_expect_str_eq(sc(r, "language"), "python");
	cr_expect(!scb(r, "session_lost"));
	json_object_put(r);
	code_expect(s, ids[0], "python",
	    "counter = bump(counter)\nprint(counter, math.sqrt(16))",
	    "42 4.0\n");
	/* The last expression's value is shown. */
	code_expect(s, ids[0], NULL, "counter * 2", "84\n");

	/* Sandbox B has its own session. */
	r = code(s, ids[1], NULL, "print(counter)", NULL, 60);
	/* Code that ran is a result (success false), not isError. */
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect(!scb(r, "success"));
	cr_expect(h_contains(sc(r, "error"),
	              "NameError: name 'counter' is not defined"),
	    "%s", json_object_to_json_string(r));
	cr_expect(!scb(r, "session_lost"));
	json_object_put(r);
	code_expect(s, ids[1], NULL, "counter = 'B'\nprint(counter)", "B\n");
	code_expect(s, ids[0], NULL, "print(counter)", "42\n");
	stop_all(s, ids, 2);
	h_finish(s);
}

/* A session call reports its own CPU time and peak memory. */
Test(code, session_accounting, .timeout = 180, .fini = code_fini)
{
	struct h_server *s;
	json_object *r;
	char *id;

	s = start(0);
	id = create(s, PY_IMAGE);
	r = code_ok(s, id, "python",
	    "import time\nt0 = time.process_time()\n"
	    "while time.process_time() - t0 < 0.3: pass",
	    NULL);
	cr_expect_geq(h_num(r, "structuredContent.cpu_time_ms"), 300, "%s",
	    json_object_to_json_string(r));
	json_object_put(r);
	r = code_ok(s, id, NULL, "kept = b'x' * (80 << 20)", NULL);
	cr_expect_geq(sci(r, "memory_peak_bytes"), 80 << 20, "%s",
	    json_object_to_json_string(r));
	json_object_put(r);
	/* Held when the run began, so in its peak; freed, out of the next. */
	r = code_ok(s, id, NULL, "del kept", NULL);
	cr_expect_geq(sci(r, "memory_peak_bytes"), 80 << 20);
	json_object_put(r);
	r = code_ok(s, id, NULL, "small = 1", NULL);
	cr_expect_lt(sci(r, "memory_peak_bytes"), 80 << 20, "%s",
	    json_object_to_json_string(r));
	cr_expect_lt(h_num(r, "structuredContent.cpu_time_ms"), 300);
	json_object_put(r);
	stop_all(s, &id, 1);
	h_finish(s);
}

Test(code, js_ts_session, .timeout = 180, .fini = code_fini)
{
	struct h_server *s;
	json_object *r;
	char *ids[2];

	s = start(0);
	ids[0] = create(s, NODE_IMAGE);
	ids[1] = create(s, NODE_IMAGE);
	r = code_ok(s, ids[0], "javascript",
	    "var jsCount = 20; function twice(n) { return n * 2; }", NULL);
	cr_expect_str_eq(sc(r, "language"), "javascript");
	json_object_put(r);
	code_expect(s, ids[0], "javascript",
	    "jsCount = twice(jsCount) + 2; console.log('js', jsCount);",
	    "js 42\n");
	code_expect(s, ids[0], "javascript", "twice(jsCount)", "84\n");

	r = code_ok(s, ids[0], "typescript",
	    "interface Pt { x: number; y: number }\n"
	    "function norm1(p: Pt): number "
	    "{ return Math.abs(p.x) + Math.abs(p.y); }",
	    NULL);
	cr_expect_str_eq(sc(r, "language"), "typescript");
	json_object_put(r);
	code_expect(s, ids[0], "typescript",
	    "const d: number = norm1({ x: -3, y: 4 });\n"
	    "console.log(`ts ${d}`);",
	    "ts 7\n");

	/* Sandbox B: none of it. */
	code_expect(s, ids[1], "javascript",
	    "console.log(typeof jsCount, typeof twice)",
	    "undefined undefined\n");
	code_expect(s, ids[1], "typescript", "console.log(typeof norm1)",
	    "undefined\n");
	stop_all(s, ids, 2);
	h_finish(s);
}

/* --- timeouts and cancellation --- */

Test(code, timeout_kills_session_only, .timeout = 180, .fini = code_fini)
{
	struct h_server *s;
	json_object *r;
	long long t0, took;
	char *cid;
	long bg;

	s = start(0);
	/* The node image has python3 and node: a JavaScript session and
	 * a sandbox_exec's sleep run next to the Python session. */
	cid = create(s, NODE_IMAGE);
	json_object_put(code_ok(s, cid, NULL, "doomed = 1", NULL));
	json_object_put(
	    code_ok(s, cid, "javascript", "var survivor = 'js alive';", NULL));
	bg = background_sleep(s, cid, 100);

	t0 = h_now_ms();
	r = code(s, cid, NULL, "import time; time.sleep(30)", NULL, 2);
	took = h_now_ms() - t0;
	cr_expect_lt(took, 10000, "returned after %lld ms", took);
	cr_expect_geq(took, 1900, "returned after %lld ms", took);
	/* Code that ran is a result (success false), not isError. */
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect(!scb(r, "success"));
	cr_expect(scb(r, "timed_out"), "%s", json_object_to_json_string(r));
	cr_expect(scb(r, "session_lost"), "%s", json_object_to_json_string(r));
	cr_expect_neq(sci(r, "exit_code"), 0);
	json_object_put(r);
	cr_expect_eq(sandbox_count_prefix(s, cid, "python3"), 0,
	    "the timed-out interpreter still runs");

	/* The state is gone. */
	r = code(s, cid, NULL, "print(doomed)", NULL, 60);
	/* Code that ran is a result (success false), not isError. */
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect(!scb(r, "success"));
	cr_expect(h_contains(sc(r, "error"),
	              "NameError: name 'doomed' is not defined"),
	    "%s", json_object_to_json_string(r));
	json_object_put(r);
	/* Untouched: the sandbox_exec's sleep and the JavaScript session. */
	cr_expect(sandbox_runs(s, cid, "sleep 100"),
	    "the timeout killed a sandbox_exec's process");
	code_expect(s, cid, "javascript", "survivor", "js alive\n");

	cancel(s, bg);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

Test(code, timeout_keeps_output, .timeout = 120, .fini = code_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid;

	s = start(0);
	cid = create(s, PY_IMAGE);
	r = code(s, cid, NULL,
	    "import sys, time\nprint('before the sleep', flush=True)\n"
	    "print('err before', file=sys.stderr, flush=True)\n"
	    "time.sleep(30)",
	    NULL, 2);
	cr_expect(scb(r, "timed_out"));
	cr_expect_str_eq(sc(r, "stdout"), "before the sleep\n",
	    "stdout written before the timeout is lost: %s",
	    json_object_to_json_string(r));
	cr_expect_str_eq(sc(r, "stderr"), "err before\n",
	    "stderr written before the timeout is lost");
	json_object_put(r);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

Test(code, cancel_kills_session_only, .timeout = 180, .fini = code_fini)
{
	struct h_server *s;
	json_object *r, *m;
	char *cid;
	long bg, id;
	int i, n = -1;

	s = start(0);
	cid = create(s, PY_IMAGE);
	json_object_put(code_ok(s, cid, NULL, "cancelled_state = 5", NULL));
	bg = background_sleep(s, cid, 101);

	id = h_send_tool(s, "execute_code",
	    code_args(cid, NULL,
	        "import time\nopen('/tmp/started-45', 'w').close()\n"
	        "time.sleep(45)",
	        NULL, 120));
	cr_assert(sandbox_wait_file(s, cid, "/tmp/started-45", 10000),
	    "the code never started");
	cancel(s, id);
	/* No response comes. */
	m = h_wait_id(s, id, 3000);
	cr_expect_null(m, "a response to a cancelled call: %s",
	    json_object_to_json_string(m));
	json_object_put(m);
	/* The interpreter is killed. */
	for (i = 0; i < 40; i++) {
		if ((n = sandbox_count_prefix(s, cid, "python3")) == 0)
			break;
		usleep(250000);
	}
	cr_expect_eq(n, 0, "the cancelled interpreter still runs");
	/* Its state is gone; the session works again. */
	r = code(s, cid, NULL, "print(cancelled_state)", NULL, 60);
	/* Code that ran is a result (success false), not isError. */
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect(!scb(r, "success"));
	cr_expect(h_contains(sc(r, "error"),
	              "NameError: name 'cancelled_state' is not defined"),
	    "%s", json_object_to_json_string(r));
	json_object_put(r);
	code_expect(s, cid, NULL, "v = 6\nv * 7", "42\n");
	/* Untouched: the sandbox_exec's sleep. */
	cr_expect(sandbox_runs(s, cid, "sleep 101"),
	    "the cancellation killed a sandbox_exec's process");

	cancel(s, bg);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

/* --- languages --- */

Test(code, languages_streams_and_exit, .timeout = 300, .fini = code_fini)
{
	static const struct {
		const char *lang, *image, *src;
		int exit;
	} progs[] = {
	    {"python", PY_IMAGE,
	        "import sys\nprint('out python')\n"
	        "print('err python', file=sys.stderr)\nsys.exit(3)",
	        3},
	    {"javascript", NODE_IMAGE,
	        "console.log('out javascript'); "
	        "console.error('err javascript'); process.exit(4);",
	        4},
	    {"typescript", NODE_IMAGE,
	        "const word: string = 'typescript';\n"
	        "console.log(`out ${word}`);\nconsole.error(`err ${word}`);\n"
	        "process.exit(5);",
	        5},
	    {"go", GO_IMAGE,
	        "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\n"
	        "func main() {\n\tfmt.Println(\"out go\")\n"
	        "\tfmt.Fprintln(os.Stderr, \"err go\")\n\tos.Exit(6)\n}\n",
	        6},
	    {"bash", PY_IMAGE, "echo 'out bash'; echo 'err bash' >&2; exit 7",
	        7},
	};
	struct h_server *s;
	json_object *r;
	char *cid, want[64];
	size_t i;

	s = start(0);
	for (i = 0; i < sizeof progs / sizeof progs[0]; i++) {
		cid = create(s, progs[i].image);
		r = code(s, cid, progs[i].lang, progs[i].src, NULL, 120);
		cr_expect_str_eq(sc(r, "language"), progs[i].lang);
		cr_expect_neq(sci(r, "exit_code"), 0, "%s: %s", progs[i].lang,
		    json_object_to_json_string(r));
		cr_expect(!h_is_error(r), "%s: isError", progs[i].lang);
		cr_expect(!scb(r, "success"), "%s", progs[i].lang);
		snprintf(want, sizeof want, "out %s\n", progs[i].lang);
		cr_expect_str_eq(sc(r, "stdout"), want, "%s stdout: %s",
		    progs[i].lang, json_object_to_json_string(r));
		snprintf(want, sizeof want, "err %s\n", progs[i].lang);
		cr_expect_str_eq(
		    sc(r, "stderr"), want, "%s stderr", progs[i].lang);
		cr_expect_eq(sci(r, "exit_code"), progs[i].exit,
		    "%s exit code %lld, expected %d", progs[i].lang,
		    sci(r, "exit_code"), progs[i].exit);
		json_object_put(r);
		h_stop(s, cid);
		free(cid);
	}
	h_finish(s);
}

Test(code, exceptions, .timeout = 180, .fini = code_fini)
{
	struct h_server *s;
	json_object *r;
	char *ids[2];

	s = start(0);
	ids[0] = create(s, PY_IMAGE);
	ids[1] = create(s, NODE_IMAGE);
	json_object_put(code_ok(s, ids[0], NULL, "kept = 'still here'", NULL));
	r = code(
	    s, ids[0], NULL, "def f(d):\n    return 1 / d\n\nf(0)", NULL, 60);
	/* Code that ran is a result (success false), not isError. */
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect(!scb(r, "success"));
	cr_expect_neq(sci(r, "exit_code"), 0);
	cr_expect(h_contains(sc(r, "error"), "Traceback (most recent call"));
	cr_expect(
	    h_contains(sc(r, "error"), "ZeroDivisionError: division by zero"),
	    "%s", json_object_to_json_string(r));
	cr_expect(h_contains(sc(r, "error"), "line 2, in f"));
	cr_expect(h_contains(h_text(r), "ZeroDivisionError"));
	cr_expect(!scb(r, "session_lost"));
	json_object_put(r);
	code_expect(s, ids[0], NULL, "print(kept)", "still here\n");

	r = code(s, ids[1], "javascript",
	    "function thrower() { throw new Error('boom from js'); }\n"
	    "thrower();",
	    NULL, 60);
	/* Code that ran is a result (success false), not isError. */
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect(!scb(r, "success"));
	cr_expect_neq(sci(r, "exit_code"), 0);
	cr_expect(h_contains(sc(r, "error"), "Error: boom from js"), "%s",
	    json_object_to_json_string(r));
	cr_expect(h_contains(sc(r, "error"), "at thrower"));
	cr_expect(!scb(r, "session_lost"));
	json_object_put(r);
	stop_all(s, ids, 2);
	h_finish(s);
}

/*
 * Megabytes of output, and an error of megabytes, stay with the call that
 * wrote them: none of it comes after the call's end, in a later call, and
 * the call ends at once.  (Node queues what console.log writes to a full
 * pipe, so the driver must wait for it before it ends the call.)
 */
Test(code, big_output_stays_with_its_call, .timeout = 180, .fini = code_fini)
{
	static const struct {
		const char *image, *lang, *out, *err, *throw_it, *last, *seen;
	} cases[] = {
	    {PY_IMAGE, "python", "for i in range(3000): print('x' * 999)",
	        "import sys\nfor i in range(3000): "
	        "print('x' * 999, file=sys.stderr)",
	        "raise ValueError('x' * 3000000)", "'next'", "'next'\n"},
	    {NODE_IMAGE, "javascript",
	        "for (let i = 0; i < 3000; i++) console.log('x'.repeat(999))",
	        "for (let i = 0; i < 3000; i++) "
	        "console.error('x'.repeat(999))",
	        "throw new Error('x'.repeat(3000000))", "'next'", "next\n"},
	};
	struct h_server *s;
	json_object *r;
	char src[256];
	const char *out, *err;
	size_t i, n;
	char *cid;

	s = start(0);
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		cid = create(s, cases[i].image);
		snprintf(
		    src, sizeof src, "%s\n%s", cases[i].out, cases[i].last);
		r = code_ok(s, cid, cases[i].lang, src, NULL);
		out = sc(r, "stdout");
		n = strlen(out);
		cr_expect_eq(sci(r, "stdout_bytes"),
		    3000 * 1000 + (long long)strlen(cases[i].seen), "%s: %s",
		    cases[i].lang, json_object_to_json_string(r));
		cr_expect(n >= strlen(cases[i].seen) &&
		              strcmp(out + n - strlen(cases[i].seen),
		                  cases[i].seen) == 0,
		    "%s: stdout does not end with the last value",
		    cases[i].lang);
		json_object_put(r);

		snprintf(
		    src, sizeof src, "%s\n%s", cases[i].err, cases[i].last);
		r = code_ok(s, cid, cases[i].lang, src, NULL);
		cr_expect_str_eq(sc(r, "stdout"), cases[i].seen, "%s: %s",
		    cases[i].lang, json_object_to_json_string(r));
		cr_expect_eq(sci(r, "stderr_bytes"), 3000 * 1000, "%s: %s",
		    cases[i].lang, json_object_to_json_string(r));
		cr_expect_null(
		    h_get(r, "structuredContent.dropped_stdout_bytes"),
		    "%s: %s", cases[i].lang, json_object_to_json_string(r));
		json_object_put(r);

		r = code(s, cid, cases[i].lang, cases[i].throw_it, NULL, 60);
		err = sc(r, "error");
		cr_expect(!h_is_error(r), "%s: %s", cases[i].lang, h_text(r));
		cr_expect(!scb(r, "success"), "%s", cases[i].lang);
		cr_expect(!scb(r, "timed_out") && !scb(r, "session_lost"),
		    "%s: %.300s", cases[i].lang, json_object_to_json_string(r));
		cr_expect(strlen(err) < 64 * 1024 &&
		              h_contains(err, "characters cut"),
		    "%s: the cut error: %.300s", cases[i].lang, err);
		cr_expect_gt(sci(r, "stderr_bytes"), 3000000, "%s: %.300s",
		    cases[i].lang, json_object_to_json_string(r));
		json_object_put(r);

		r = code_ok(s, cid, cases[i].lang, cases[i].last, NULL);
		cr_expect_str_eq(sc(r, "stdout"), cases[i].seen, "%s: %s",
		    cases[i].lang, json_object_to_json_string(r));
		cr_expect_str_eq(sc(r, "stderr"), "", "%s: %.300s",
		    cases[i].lang, json_object_to_json_string(r));
		cr_expect_null(
		    h_get(r, "structuredContent.dropped_stdout_bytes"),
		    "%s: %s", cases[i].lang, json_object_to_json_string(r));
		cr_expect_null(
		    h_get(r, "structuredContent.dropped_stderr_bytes"),
		    "%s: %s", cases[i].lang, json_object_to_json_string(r));
		json_object_put(r);
		stop_all(s, &cid, 1);
	}
	h_finish(s);
}

Test(code, python_input_eof, .timeout = 120, .fini = code_fini)
{
	struct h_server *s;
	json_object *r;
	long long t0;
	char *cid;

	s = start(0);
	cid = create(s, PY_IMAGE);
	json_object_put(code_ok(s, cid, NULL, "survives_input = 1", NULL));
	/* The session's stdin carries the calls: the code must not read
	 * them (nor wait for them): input() gets end of file at once. */
	t0 = h_now_ms();
	r = code(s, cid, NULL, "line = input()", NULL, 5);
	cr_expect_lt(h_now_ms() - t0, 3000, "input() blocked: %s",
	    json_object_to_json_string(r));
	/* Code that ran is a result (success false), not isError. */
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect(!scb(r, "success"));
	cr_expect(h_contains(sc(r, "error"), "EOFError"), "%s",
	    json_object_to_json_string(r));
	cr_expect(!scb(r, "session_lost"));
	json_object_put(r);
	code_expect(s, cid, NULL, "print(survives_input)", "1\n");
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

/* --- installation without a network --- */

Test(code, install_package_local, .timeout = 300, .fini = code_fini)
{
	struct h_server *s;
	json_object *r;
	char *ids[2];

	make_base();
	build_artifacts();
	s = start(1);
	ids[0] = create(s, PY_IMAGE);
	ids[1] = create(s, NODE_IMAGE);

	copy_in(s, ids[0], WHEEL);
	r = install(s, ids[0], "[\"/app/" WHEEL "\"]", "pip");
	cr_assert(!h_is_error(r), "%s", h_text(r));
	cr_expect_str_eq(sc(r, "manager"), "pip");
	cr_expect_str_eq(sc(r, "installed.0"), "/app/" WHEEL);
	cr_expect(h_contains(
	    sc(r, "output"), "Successfully installed " PY_PKG "-1.0"));
	/* The installer's own protocol line is not shown. */
	cr_expect(
	    !h_contains(sc(r, "output"), "missing:"), "%s", sc(r, "output"));
	cr_expect(!h_contains(h_text(r), "missing:"), "%s", h_text(r));
	json_object_put(r);
	r = code_ok(s, ids[0], NULL,
	    "import " PY_PKG "\nprint(" PY_PKG ".greet('wheel'))", "\"none\"");
	cr_expect_str_eq(sc(r, "stdout"), "hello wheel\n");
	json_object_put(r);
	r = install(s, ids[0], "[\"" PY_PKG "\"]", "pip");
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect_eq(
	    json_object_array_length(h_get(r, "structuredContent.installed")),
	    0);
	cr_expect_str_eq(sc(r, "already_present.0"), PY_PKG);
	json_object_put(r);

	copy_in(s, ids[1], TARBALL);
	r = install(s, ids[1], "[\"/app/" TARBALL "\"]", "npm");
	cr_assert(!h_is_error(r), "%s", h_text(r));
	cr_expect_str_eq(sc(r, "manager"), "npm");
	cr_expect_str_eq(sc(r, "installed.0"), "/app/" TARBALL);
	cr_expect(h_contains(sc(r, "output"), "added 1 package"), "%s",
	    sc(r, "output"));
	json_object_put(r);
	r = code_ok(s, ids[1], "javascript",
	    "console.log(require('" JS_PKG "').greet('tarball'))", "\"none\"");
	cr_expect_str_eq(sc(r, "stdout"), "hi tarball\n");
	json_object_put(r);
	r = code_ok(s, ids[1], "typescript",
	    "import { greet } from '" JS_PKG "';\n"
	    "const g: string = greet('ts');\nconsole.log(g);",
	    "\"none\"");
	cr_expect_str_eq(sc(r, "stdout"), "hi ts\n");
	json_object_put(r);
	r = install(s, ids[1], "[\"" JS_PKG "\"]", "npm");
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect_str_eq(sc(r, "already_present.0"), JS_PKG);
	json_object_put(r);

	/* dependencies "auto": what is installed is not installed again
	 * (pip would need an index the sandbox cannot reach). */
	r = code_ok(s, ids[0], NULL,
	    "import " PY_PKG "\nprint(" PY_PKG ".greet('auto'))", "\"auto\"");
	cr_expect_str_eq(sc(r, "stdout"), "hello auto\n");
	cr_expect(!h_contains(sc(r, "install_output"), "Successfully"));
	cr_expect(!h_contains(sc(r, "install_output"), "Processing"));
	/* Found in the imports, already there: nothing installed, and
	 * nothing of the installer's protocol shown. */
	cr_expect_str_eq(sc(r, "packages.0"), PY_PKG);
	cr_expect_str_eq(sc(r, "already_present.0"), PY_PKG);
	cr_expect_eq(
	    json_object_array_length(h_get(r, "structuredContent.installed")),
	    0);
	cr_expect_str_eq(sc(r, "install_output"), "");
	json_object_put(r);
	r = code_ok(s, ids[1], "javascript",
	    "console.log(require('" JS_PKG "').greet('auto'))", "\"auto\"");
	cr_expect_str_eq(sc(r, "stdout"), "hi auto\n");
	cr_expect(!h_contains(sc(r, "install_output"), "added"));
	json_object_put(r);
	/* Standard library only: nothing at all. */
	r = code_ok(s, ids[0], NULL,
	    "import os, sys, json\nfrom collections import OrderedDict\n"
	    "import urllib.request as ur\nprint(json.dumps(OrderedDict(a=1)))",
	    "\"auto\"");
	cr_expect_eq(
	    json_object_array_length(h_get(r, "structuredContent.packages")), 0,
	    "%s", json_object_to_json_string(r));
	cr_expect_str_eq(sc(r, "stdout"), "{\"a\": 1}\n");
	json_object_put(r);
	r = code_ok(s, ids[1], "javascript",
	    "const p = require('path'); const u = require('node:util');\n"
	    "console.log(p.basename('/a/b.txt'), typeof u.format)",
	    "\"auto\"");
	cr_expect_eq(
	    json_object_array_length(h_get(r, "structuredContent.packages")), 0,
	    "%s", json_object_to_json_string(r));
	cr_expect_str_eq(sc(r, "stdout"), "b.txt function\n");
	json_object_put(r);
	stop_all(s, ids, 2);
	h_finish(s);
}

Test(code, install_through_dependencies, .timeout = 300, .fini = code_fini)
{
	struct h_server *s;
	json_object *r;
	char *ids[2];

	make_base();
	build_artifacts();
	s = start(1);
	ids[0] = create(s, PY_IMAGE);
	ids[1] = create(s, NODE_IMAGE);
	copy_in(s, ids[0], WHEEL);
	r = code_ok(s, ids[0], NULL,
	    "import " PY_PKG "\nprint(" PY_PKG ".greet('deps'))",
	    "[\"/app/" WHEEL "\"]");
	cr_expect_str_eq(sc(r, "packages.0"), "/app/" WHEEL);
	cr_expect_str_eq(sc(r, "installed.0"), "/app/" WHEEL);
	cr_expect_eq(json_object_array_length(
	                 h_get(r, "structuredContent.already_present")),
	    0);
	cr_expect(h_contains(
	    sc(r, "install_output"), "Successfully installed " PY_PKG "-1.0"));
	cr_expect(!h_contains(sc(r, "install_output"), "missing:"), "%s",
	    sc(r, "install_output"));
	cr_expect_str_eq(sc(r, "stdout"), "hello deps\n");
	json_object_put(r);

	copy_in(s, ids[1], TARBALL);
	r = code_ok(s, ids[1], "javascript",
	    "const demo = require('" JS_PKG "'); "
	    "console.log(demo.greet('deps'));",
	    "[\"/app/" TARBALL "\"]");
	cr_expect_str_eq(sc(r, "packages.0"), "/app/" TARBALL);
	cr_expect(h_contains(sc(r, "install_output"), "added 1 package"));
	cr_expect_str_eq(sc(r, "stdout"), "hi deps\n");
	json_object_put(r);
	stop_all(s, ids, 2);
	h_finish(s);
}

Test(code, install_into_running_session, .timeout = 300, .fini = code_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid;

	make_base();
	build_artifacts();
	s = start(1);
	cid = create(s, PY_IMAGE);
	/* The interpreter starts before the install: the user's
	 * site-packages does not exist yet. */
	json_object_put(code_ok(s, cid, NULL, "marker = 'same session'", NULL));
	copy_in(s, cid, WHEEL);
	r = code(s, cid, NULL,
	    "import " PY_PKG "\nprint(" PY_PKG ".greet('live'), marker)",
	    "[\"/app/" WHEEL "\"]", 120);
	cr_expect(h_contains(
	    sc(r, "install_output"), "Successfully installed " PY_PKG "-1.0"));
	cr_expect(!h_is_error(r),
	    "a package installed while the session runs cannot be "
	    "imported in it: %s",
	    sc(r, "error"));
	cr_expect_str_eq(sc(r, "stdout"), "hello live same session\n");
	json_object_put(r);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

Test(code, install_failure, .timeout = 180, .fini = code_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid;

	s = start(0);
	cid = create(s, PY_IMAGE);
	/* A wheel that is not there: pip fails without the network. */
	r = code(s, cid, NULL, "print('must not run')",
	    "[\"/app/absent-1.0-py3-none-any.whl\"]", 120);
	/* The code could not run: the tool failed. */
	cr_expect(h_is_error(r));
	cr_expect_eq(sci(r, "exit_code"), -1);
	cr_expect(h_contains(sc(r, "error"), "install"), "%s",
	    json_object_to_json_string(r));
	cr_expect(!h_contains(sc(r, "stdout"), "must not run"));
	/* The result still has what the outputSchema requires. */
	cr_expect_not_null(h_get(r, "structuredContent.stdout"),
	    "no stdout in the result (required by the outputSchema): %s",
	    json_object_to_json_string(r));
	cr_expect_not_null(h_get(r, "structuredContent.stderr"));
	cr_expect_not_null(h_get(r, "structuredContent.language"));
	json_object_put(r);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

Test(code, hostile_package_names, .timeout = 180, .fini = code_fini)
{
	static const char *const bad[] = {"; rm -rf /", "--index-url=http://x",
	    "-e git+https://x", "$(id)", "a b", "; touch /app/pwned",
	    "$(touch /app/pwned)", "`touch /app/pwned`"};
	static const char *const managers[] = {"pip", "npm", "go", NULL};
	struct h_server *s;
	json_object *r, *pk, *a;
	char *ids[2], *out;
	size_t i, j;

	s = start(0);
	ids[0] = create(s, PY_IMAGE);
	ids[1] = create(s, NODE_IMAGE);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		for (j = 0; j < sizeof managers / sizeof managers[0]; j++) {
			pk = json_object_new_array();
			json_object_array_add(
			    pk, json_object_new_string(bad[i]));
			a = json_object_new_object();
			json_object_object_add(
			    a, "container_id", json_object_new_string(ids[0]));
			json_object_object_add(a, "packages", pk);
			if (managers[j] != NULL)
				json_object_object_add(a, "manager",
				    json_object_new_string(managers[j]));
			r = h_call_tool_obj(s, "install_package", a, 60000);
			cr_expect(h_is_error(r),
			    "install_package accepted \"%s\" (%s): %s", bad[i],
			    managers[j] ? managers[j] : "no manager",
			    json_object_to_json_string(r));
			cr_expect(h_contains(h_text(r), "not a valid"),
			    "unclear refusal of \"%s\": %s", bad[i], h_text(r));
			json_object_put(r);
		}
		for (j = 0; j < 2; j++) {
			pk = json_object_new_array();
			json_object_array_add(
			    pk, json_object_new_string(bad[i]));
			a = code_args(ids[j], j == 0 ? "python" : "javascript",
			    "1", NULL, 0);
			json_object_object_add(a, "dependencies", pk);
			r = h_call_tool_obj(s, "execute_code", a, 60000);
			cr_expect(h_is_error(r),
			    "dependencies accepted \"%s\": %s", bad[i],
			    json_object_to_json_string(r));
			cr_expect(h_contains(h_text(r), "not a valid"),
			    "unclear refusal of \"%s\": %s", bad[i], h_text(r));
			json_object_put(r);
		}
	}
	/* Nothing of them ran. */
	for (j = 0; j < 2; j++) {
		out = h_exec_ok(s, ids[j], "ls -A /app");
		cr_expect(!h_contains(out, "pwned"), "%s", out);
		free(out);
	}
	/* apt is refused: it needs root. */
	r = install(s, ids[0], "[\"curl\"]", "apt");
	cr_expect(h_is_error(r));
	cr_expect(h_contains(h_text(r), "root"), "%s", h_text(r));
	json_object_put(r);
	stop_all(s, ids, 2);
	h_finish(s);
}

/* --- create_run_close --- */

Test(code, create_run_close, .timeout = 180, .fini = code_fini)
{
	struct h_server *s;
	json_object *r, *a, *m;
	long long t0;
	long id;
	int before;

	s = start(0);
	before = h_docker_count(s->label);
	cr_assert_eq(before, 0);

	a = json_object_new_object();
	json_object_object_add(a, "code",
	    json_object_new_string("import platform\nprint('crc', 6 * 7)"));
	r = h_call_tool_obj(s, "create_run_close", a, 120000);
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect_str_eq(sc(r, "stdout"), "crc 42\n");
	cr_expect_null(h_get(r, "structuredContent.container_id"));
	json_object_put(r);
	cr_expect_eq(h_docker_count(s->label), before,
	    "the sandbox outlived create_run_close");

	/* A failure: the same. */
	a = json_object_new_object();
	json_object_object_add(a, "language", json_object_new_string("bash"));
	json_object_object_add(
	    a, "code", json_object_new_string("echo o; echo e >&2; exit 9"));
	r = h_call_tool_obj(s, "create_run_close", a, 120000);
	/* Code that ran is a result (success false), not isError. */
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect(!scb(r, "success"));
	cr_expect_eq(sci(r, "exit_code"), 9);
	cr_expect_str_eq(sc(r, "stdout"), "o\n");
	cr_expect_str_eq(sc(r, "stderr"), "e\n");
	json_object_put(r);
	cr_expect_eq(h_docker_count(s->label), before);

	/* A timeout. */
	a = json_object_new_object();
	json_object_object_add(
	    a, "code", json_object_new_string("import time; time.sleep(30)"));
	json_object_object_add(a, "timeout_seconds", json_object_new_int(2));
	t0 = h_now_ms();
	r = h_call_tool_obj(s, "create_run_close", a, 60000);
	cr_expect_lt(h_now_ms() - t0, 15000);
	/* Code that ran is a result (success false), not isError. */
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect(!scb(r, "success"));
	cr_expect(scb(r, "timed_out"), "%s", json_object_to_json_string(r));
	json_object_put(r);
	cr_expect_eq(h_docker_count(s->label), before,
	    "the sandbox outlived a timed-out create_run_close");

	/* A cancellation: removed within 15 s. */
	a = json_object_new_object();
	json_object_object_add(
	    a, "code", json_object_new_string("import time; time.sleep(60)"));
	id = h_send_tool(s, "create_run_close", a);
	cr_assert_eq(count_settles(s, before + 1, 30000), before + 1,
	    "create_run_close made no sandbox");
	usleep(1000000);
	cancel(s, id);
	cr_expect_eq(count_settles(s, before, 15000), before,
	    "the sandbox outlived a cancelled create_run_close by 15 s");
	m = h_wait_id(s, id, 1000);
	cr_expect_null(m, "a response to a cancelled call: %s",
	    json_object_to_json_string(m));
	json_object_put(m);
	h_finish(s);
}

/* --- run_project --- */

static json_object *
run_project(struct h_server *s, const char *dir)
{
	json_object *a;
	char src[400];

	snprintf(src, sizeof src, "%s/projects/%s", g_base, dir);
	a = json_object_new_object();
	json_object_object_add(a, "local_src_dir", json_object_new_string(src));
	json_object_object_add(a, "timeout_seconds", json_object_new_int(120));
	return h_call_tool_obj(s, "run_project", a, 240000);
}

Test(code, run_project, .timeout = 300, .fini = code_fini)
{
	struct h_server *s;
	json_object *r;
	char dir[400], cmd[1000], *out;
	int st;

	make_base();
	build_artifacts();
	snprintf(dir, sizeof dir, "%s/projects/pyplain", g_base);
	mkdirs(dir);
	write_host(dir, "main.py",
	    "import sys\nprint('plain project', sum(range(5)))\n"
	    "print('to stderr', file=sys.stderr)\n");
	/* requirements.txt names the wheel by a path relative to it. */
	snprintf(dir, sizeof dir, "%s/projects/pyreq", g_base);
	mkdirs(dir);
	write_host(dir, "main.py",
	    "import " PY_PKG "\nprint(" PY_PKG ".greet('project'))\n");
	write_host(dir, "requirements.txt", "./" WHEEL "\n");
	snprintf(cmd, sizeof cmd, "cp '%s/art/" WHEEL "' '%s'", g_base, dir);
	out = h_run(cmd, &st);
	free(out);
	cr_assert_eq(st, 0);
	snprintf(dir, sizeof dir, "%s/projects/nodeapp", g_base);
	mkdirs(dir);
	write_host(dir, "package.json",
	    "{\"name\":\"nodeapp\",\"version\":\"1.0.0\",\"private\":true,"
	    "\"scripts\":{\"start\":\"node index.js\"}}\n");
	write_host(dir, "index.js",
	    "console.log('node project', [1, 2, 3].map((x) => x * 2)"
	    ".join(','));\n");

	s = start(1);
	r = run_project(s, "pyplain");
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect_str_eq(sc(r, "language"), "python");
	cr_expect_eq(json_object_array_length(
	                 h_get(r, "structuredContent.dependency_files")),
	    0);
	cr_expect_str_eq(sc(r, "entrypoint"), "python3 main.py");
	cr_expect_eq(sci(r, "exit_code"), 0);
	cr_expect_str_eq(sc(r, "stdout"), "plain project 10\n");
	cr_expect_str_eq(sc(r, "stderr"), "to stderr\n");
	json_object_put(r);
	cr_expect_eq(h_docker_count(s->label), 0);

	r = run_project(s, "pyreq");
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect_str_eq(sc(r, "language"), "python");
	cr_expect_str_eq(sc(r, "dependency_files.0"), "requirements.txt");
	cr_expect_null(h_get(r, "structuredContent.dependency_files.1"));
	cr_expect_str_eq(sc(r, "entrypoint"), "python3 main.py");
	cr_expect(h_contains(
	    sc(r, "install_output"), "Successfully installed " PY_PKG "-1.0"));
	cr_expect_str_eq(sc(r, "stdout"), "hello project\n");
	json_object_put(r);

	r = run_project(s, "nodeapp");
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect_str_eq(sc(r, "language"), "javascript");
	cr_expect_str_eq(sc(r, "dependency_files.0"), "package.json");
	cr_expect_null(h_get(r, "structuredContent.dependency_files.1"));
	cr_expect_str_eq(sc(r, "entrypoint"), "npm start");
	cr_expect_eq(sci(r, "exit_code"), 0);
	cr_expect(h_contains(sc(r, "stdout"), "node project 2,4,6"), "%s",
	    sc(r, "stdout"));
	json_object_put(r);
	cr_expect_eq(h_docker_count(s->label), 0);

	/* Outside --allow-dir: refused. */
	r = h_call_tool(s, "run_project", "{\"local_src_dir\":\"/etc\"}");
	cr_expect(h_is_error(r));
	json_object_put(r);
	h_finish(s);
}
