/*
 * Adversarial: sandbox code writes into the output of the server's own
 * commands.  An injector daemon in the sandbox stops every new process of
 * the exec user (SIGSTOP), writes junk into its standard output and error
 * through /proc/PID/fd/1 and 2 (a fake JSON answer, NUL bytes, a fake tar
 * header, a fake manager name, fake listing and probe lines), and resumes
 * it.  Then every tool is used: each answers correctly or with a clear
 * error, the server stays up, and nothing is written on the host outside
 * the destination asked for.  Also: wrappers on the sandbox user's PATH
 * that print junk in place of pip, python3, node and npm.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "adv.h"

/*
 * Whether a string's whole value holds needle.  What the injector writes
 * holds NUL bytes; when it lands in a call's output (the process is its
 * own, so its writes are that call's), a C string would end there.
 */
static int
has_bytes(json_object *str, const char *needle)
{
	const char *p;

	if (str == NULL || !json_object_is_type(str, json_type_string))
		return 0;
	p = json_object_get_string(str);
	return memmem(p, (size_t)json_object_get_string_len(str), needle,
	           strlen(needle)) != NULL;
}

/*
 * $1: the uid to target (the exec user's, as `id -u` answers it).  Polls
 * /proc; a process that cannot be opened yet (runc's init is not
 * dumpable until it runs the command) is tried again while it lives.
 */
static const char injector[] =
    "import os, signal, sys, time\n"
    "uid = int(sys.argv[1]); me = os.getpid()\n"
    "hdr = bytearray(512); hdr[0:13] = b'../inj-escape'\n"
    "hdr[100:107] = b'0000644'; hdr[124:135] = b'00000000004'\n"
    "hdr[156:157] = b'0'; hdr[257:263] = b'ustar\\x00'\n"
    "hdr[148:156] = b'        '\n"
    "hdr[148:155] = ('%06o\\x00' % sum(hdr)).encode()\n"
    /* Each starts with what every old parser took: a manager line, a
     * NUL (the end of the text the old parsers searched), a record of a
     * listing. */
    "head = b'manager: evil\\n\\x00f 1 644 1.0 forged-entry\\x00'\n"
    "junk = [head + b'{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"manager\":\"evil\"}}\\n',\n"
    "  head + b'\\x00\\x00language: cobol\\nfiles:\\n\\x00',\n"
    "  head + bytes(hdr) + b'pwnd' + bytes(508),\n"
    "  head + b'evil\\n', head + b'99999999 999\\n\\x00\\x00',\n"
    "  head + b'd forged\\x00f main.py\\x00']\n"
    "seen = {}; n = 0; last = 0\n"
    "while True:\n"
    "  for p in os.listdir('/proc'):\n"
    "    if not p.isdigit(): continue\n"
    "    pid = int(p)\n"
    "    if pid == me or seen.get(pid, 0) < 0 or seen.get(pid, 0) > 50: continue\n"
    "    try:\n"
    "      if os.stat('/proc/' + p).st_uid != uid:\n"
    "        seen[pid] = -1; continue\n"
    "      os.kill(pid, signal.SIGSTOP)\n"
    "    except OSError:\n"
    "      seen[pid] = -1; continue\n"
    /* runc's init cannot be opened until it runs the command: let it
     * run a step at a time until it can, so that the junk comes first. */
    "    fds = []\n"
    "    for i in range(400):\n"
    /* Each of the two it can open (one may be a socket, which /proc
     * cannot open), and none held past the write. */
    "      for f in (1, 2):\n"
    "        try: fds.append(os.open('/proc/%s/fd/%d' % (p, f), os.O_WRONLY | os.O_NONBLOCK))\n"
    "        except OSError: pass\n"
    "      if fds: break\n"
    "      try:\n"
    "        os.kill(pid, signal.SIGCONT); time.sleep(0.0001); os.kill(pid, signal.SIGSTOP)\n"
    "      except OSError: break\n"
    "    seen[pid] = -1\n"
    "    if not fds:\n"
    "      try: os.kill(pid, signal.SIGCONT)\n"
    "      except OSError: pass\n"
    "      continue\n"
    "    try:\n"
    "      for f in fds:\n"
    "        try: os.write(f, junk[n % len(junk)])\n"
    "        except OSError: pass\n"
    "      os.kill(pid, signal.SIGCONT)\n"
    "      n += 1\n"
    "    except OSError: pass\n"
    "    for f in fds: os.close(f)\n"
    "  if n != last:\n"
    "    last = n\n"
    "    with open('/tmp/inj.count.new', 'w') as c: c.write(str(n))\n"
    "    os.rename('/tmp/inj.count.new', '/tmp/inj.count')\n"
    "  time.sleep(0.0005)\n";

static json_object *
args_obj(const char *cid, ...)
{
	json_object *a = json_object_new_object();
	const char *k, *v;
	va_list ap;

	if (cid != NULL)
		json_object_object_add(
		    a, "container_id", json_object_new_string(cid));
	va_start(ap, cid);
	while ((k = va_arg(ap, const char *)) != NULL) {
		v = va_arg(ap, const char *);
		json_object_object_add(a, k, json_object_new_string(v));
	}
	va_end(ap);
	return a;
}

static json_object *
call(struct h_server *s, const char *tool, json_object *a)
{
	return h_call_tool_obj(s, tool, a, 180000);
}

/* An error must say something (not empty, not a bare crash text). */
static void
expect_clear(json_object *r, const char *what)
{
	const char *t = h_text(r);

	cr_expect(t != NULL && strlen(t) > 10, "%s: an error without a message",
	    what);
	fprintf(stderr, "inject: %s: isError: %.200s\n", what, t ? t : "");
}

/*
 * What the test itself asks of the sandbox goes through `docker exec` as
 * the container's own user (the keep-alive's), whom the injector, aiming
 * at the exec user, leaves alone.
 */
static char *
docker_sh(const char *cid, const char *script)
{
	char *cmd, *out;

	cr_assert(asprintf(&cmd, "docker exec %s sh -c '%s' 2>/dev/null", cid,
	              script) > 0);
	out = h_run(cmd, NULL);
	free(cmd);
	return out;
}

/* An exec's whole stdout holds needle (the junk's NUL bytes included:
 * a C string of it ends early). */
static int
out_has(json_object *r, const char *needle)
{
	json_object *v = h_get(r, "structuredContent.results.0.stdout");

	return v != NULL && memmem(json_object_get_string(v),
	                        (size_t)json_object_get_string_len(v), needle,
	                        strlen(needle)) != NULL;
}

/* Injections so far (the daemon's count). */
static long
injections(const char *cid)
{
	char *out = docker_sh(cid, "cat /tmp/inj.count");
	long n = *out != '\0' ? strtol(out, NULL, 10) : 0;

	free(out);
	return n;
}

/* The injector still runs. */
static int
injector_runs(const char *cid)
{
	char *out = docker_sh(cid, "ps -eo args");
	int yes = strstr(out, "python3 /app/inj.py") != NULL;

	free(out);
	return yes;
}

/* Start the injector as the exec user, out of the call's session. */
static void
start_injector(struct h_server *s, const char *cid)
{
	char *uid, *cmd;
	json_object *r;

	r = call(s, "write_file",
	    args_obj(
	        cid, "file_name", "inj.py", "file_contents", injector, NULL));
	cr_assert(!h_is_error(r), "write_file of the injector: %s", h_text(r));
	json_object_put(r);
	uid = h_exec_ok(s, cid, "id -u");
	cr_assert(asprintf(&cmd,
	              "env -i PATH=/usr/local/bin:/usr/bin:/bin setsid python3 "
	              "/app/inj.py %d "
	              "</dev/null >/dev/null 2>&1 & sleep 1; echo started",
	              atoi(uid)) > 0);
	free(h_exec_ok(s, cid, cmd));
	free(cmd);
	free(uid);
}

/* Names in dir other than those allowed (NULL-terminated). */
static int
extra_files(const char *dir, const char *const *allowed)
{
	struct dirent *e;
	int n = 0, i, ok;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		for (i = 0, ok = 0; allowed[i] != NULL; i++)
			ok |= strcmp(e->d_name, allowed[i]) == 0;
		if (!ok) {
			fprintf(stderr, "inject: unexpected host file %s/%s\n",
			    dir, e->d_name);
			n++;
		}
	}
	closedir(d);
	return n;
}

static void
write_host(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert(f != NULL, "%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

/* Every tool, once, with the injector at work. */
static void
every_tool(struct h_server *s, const char *cid, const char *host, int round)
{
	static const char content[] = "the real content\n";
	json_object *r, *e;
	char path[1024], proj[512], back[1024], what[64];
	const char *name;
	size_t i;
	int forged;

	snprintf(what, sizeof what, "round %d", round);
	/* sandbox_exec: its output is the command's, junk and all. */
	r = h_exec(s, cid, "echo hello", 0);
	cr_expect(out_has(r, "hello") || h_is_error(r),
	    "%s: sandbox_exec lost its output", what);
	json_object_put(r);

	r = call(s, "write_file",
	    args_obj(
	        cid, "file_name", "real.txt", "file_contents", content, NULL));
	if (h_is_error(r))
		expect_clear(r, "write_file");
	json_object_put(r);

	r = call(
	    s, "read_file", args_obj(cid, "file_path", "/app/real.txt", NULL));
	if (h_is_error(r))
		expect_clear(r, "read_file");
	else
		cr_expect_str_eq(h_str(r, "structuredContent.content"), content,
		    "%s: read_file answered other bytes", what);
	json_object_put(r);

	r = call(s, "list_files", args_obj(cid, "path", "/app", NULL));
	if (h_is_error(r))
		expect_clear(r, "list_files");
	else {
		forged = 0;
		for (i = 0; i < json_object_array_length(
		                    h_get(r, "structuredContent.entries"));
		     i++) {
			e = json_object_array_get_idx(
			    h_get(r, "structuredContent.entries"), i);
			name = h_str(e, "name");
			forged |=
			    name != NULL && strstr(name, "forged") != NULL;
		}
		cr_expect(
		    !forged, "%s: list_files listed a forged entry", what);
	}
	json_object_put(r);

	snprintf(path, sizeof path, "%s/in.txt", host);
	write_host(path, content);
	r = call(s, "copy_file",
	    args_obj(
	        cid, "local_src_file", path, "dest_path", "/app/in.txt", NULL));
	if (h_is_error(r))
		expect_clear(r, "copy_file");
	json_object_put(r);

	snprintf(proj, sizeof proj, "%s/proj", host);
	mkdir(proj, 0755);
	snprintf(path, sizeof path, "%s/main.py", proj);
	write_host(path, "print('project ran')\n");
	r = call(s, "copy_project",
	    args_obj(
	        cid, "local_src_dir", proj, "dest_dir", "/app/proj", NULL));
	if (h_is_error(r))
		expect_clear(r, "copy_project");
	json_object_put(r);

	snprintf(back, sizeof back, "%s/out/back.txt", host);
	unlink(back);
	r = call(s, "copy_file_from_sandbox",
	    args_obj(cid, "container_src_path", "/app/real.txt",
	        "local_dest_path", back, NULL));
	if (h_is_error(r))
		expect_clear(r, "copy_file_from_sandbox");
	json_object_put(r);

	snprintf(back, sizeof back, "%s/out/tree", host);
	h_rm_rf(back);
	r = call(s, "copy_file_from_sandbox",
	    args_obj(cid, "container_src_path", "/app/proj", "local_dest_path",
	        back, NULL));
	if (h_is_error(r))
		expect_clear(r, "copy_file_from_sandbox (directory)");
	json_object_put(r);

	r = call(s, "execute_code",
	    args_obj(cid, "language", "python", "code", "print(6 * 7)", NULL));
	if (h_is_error(r))
		expect_clear(r, "execute_code");
	else
		cr_expect(has_bytes(h_get(r, "structuredContent.stdout"), "42"),
		    "%s: execute_code lost its output", what);
	json_object_put(r);

	/* No network in the sandbox: pip itself is there (nothing to do). */
	for (i = 0; i < 3; i++) {
		e = args_obj(cid, NULL);
		json_object_object_add(
		    e, "packages", json_tokener_parse("[\"pip\"]"));
		r = call(s, "install_package", e);
		if (h_is_error(r))
			expect_clear(r, "install_package");
		else
			cr_expect_str_eq(h_str(r, "structuredContent.manager"),
			    "pip", "%s: install_package took another manager",
			    what);
		json_object_put(r);
	}

	for (i = 0; i < 3; i++) {
		r = call(s, "run_project",
		    args_obj(cid, "dest_dir", "/app/proj", NULL));
		if (h_is_error(r))
			expect_clear(r, "run_project");
		else {
			cr_expect_str_eq(h_str(r, "structuredContent.language"),
			    "python", "%s: run_project took another language",
			    what);
			cr_expect_str_eq(
			    h_str(r, "structuredContent.entrypoint"),
			    "python3 main.py",
			    "%s: run_project took another entrypoint", what);
		}
		json_object_put(r);
	}
}

/*
 * Every tool under the injector.  With --agent off every command is a
 * Docker exec whose output is a pipe, which the injector opens through
 * /proc and writes into: the tools' parsers must hold (and the injector
 * must reach many processes, or the case proves nothing).  Through the
 * agent a command's standard streams are sockets, which /proc cannot open:
 * the injector reaches only the pipes commands make among themselves, and
 * the tools must hold just the same.
 */
static void
every_tool_injected(const char *agent)
{
	static const char *const host_names[] = {"in.txt", "proj", "out", NULL};
	static const char *const out_names[] = {"back.txt", "tree", NULL};
	struct h_server *s;
	char host[256], out[300];
	char *cid;
	long before, after;
	int round, n;

	snprintf(host, sizeof host, "%s/host", adv_tmpdir());
	mkdir(host, 0755);
	snprintf(out, sizeof out, "%s/out", host);
	mkdir(out, 0755);
	/* No image is a language's: install_package runs its probe. */
	s = adv_start("--allow-dir", host, "--python-image", "none/python:x",
	    "--node-image", "none/node:x", "--go-image", "none/go:x", "--agent",
	    agent, NULL);
	cid = h_create(s, NULL);
	start_injector(s, cid);
	before = injections(cid);
	for (round = 1; round <= 3; round++) {
		n = injector_runs(cid);
		cr_expect(n, "round %d: the injector is gone", round);
		if (!n)
			start_injector(s, cid);
		every_tool(s, cid, host, round);
	}
	after = injections(cid);
	fprintf(stderr, "inject: %ld processes injected (%ld at the start)\n",
	    after, before);
	if (strcmp(agent, "off") == 0)
		cr_expect_gt(after, before + 20,
		    "the injector reached few processes (%ld, then %ld)",
		    before, after);
	adv_alive(s, cid);
	cr_expect_eq(extra_files(host, host_names), 0,
	    "host files outside the destinations");
	cr_expect_eq(extra_files(out, out_names), 0,
	    "host files outside the destinations");
	snprintf(out, sizeof out, "%s/inj-escape", adv_tmpdir());
	cr_expect(
	    access(out, F_OK) == -1, "the fake tar entry escaped: %s", out);
	h_stop(s, cid);
	free(cid);
	adv_finish(s);
}

Test(inject, every_tool_under_the_injector, .timeout = 900)
{
	every_tool_injected("off");
}

Test(inject, every_tool_under_the_injector_agent, .timeout = 900)
{
	every_tool_injected("on");
}

/*
 * python3, pip, node and npm on the user's PATH print junk, and the PATH
 * is long (thousands of directories that do not exist before the real
 * ones), so that a shell that looks a command up spends long enough on
 * it for the injector to be first in its output.
 */
Test(inject, forged_tools_on_path, .timeout = 900)
{
	static const char wrapper[] =
	    "#!/bin/sh\nprintf 'manager: evil\\n\\0\\0language: cobol\\n"
	    "{\"fake\":true}\\n'\nexit 0\n";
	static const char *const tools[] = {"python3", "pip", "node", "npm"};
	struct h_server *s;
	json_object *r, *a, *env, *opts;
	char *cid, path[64], *p;
	size_t i, off = 0, cap = 48000;
	int k;

	p = malloc(cap);
	cr_assert(p != NULL);
	off += (size_t)snprintf(p, cap, "/app/bin");
	for (k = 0; off + 16 < cap - 64; k++)
		off += (size_t)snprintf(p + off, cap - off, ":/nx/%d", k);
	snprintf(p + off, cap - off, ":/usr/local/bin:/usr/bin:/bin");
	env = json_object_new_object();
	json_object_object_add(env, "PATH", json_object_new_string(p));
	opts = json_object_new_object();
	json_object_object_add(opts, "env", env);
	free(p);
	s = adv_start("--python-image", "none/python:x", "--node-image",
	    "none/node:x", "--go-image", "none/go:x", NULL);
	cid = h_create(s, json_object_to_json_string(opts));
	json_object_put(opts);
	start_injector(s, cid);
	for (i = 0; i < sizeof tools / sizeof tools[0]; i++) {
		snprintf(path, sizeof path, "bin/%s", tools[i]);
		r = call(s, "write_file",
		    args_obj(cid, "file_name", path, "file_contents", wrapper,
		        NULL));
		if (h_is_error(r))
			expect_clear(r, "write_file (a wrapper)");
		json_object_put(r);
	}
	/* As the exec user: the files are the user's (only the output of
	 * this call is junk). */
	r = h_exec(s, cid,
	    "chmod +x /app/bin/*; mkdir -p /app/p &&"
	    " echo 'print(1)' >/app/p/main.py",
	    0);
	json_object_put(r);
	for (k = 0; k < 3; k++) {
		a = args_obj(cid, NULL);
		json_object_object_add(
		    a, "packages", json_tokener_parse("[\"six\"]"));
		r = call(s, "install_package", a);
		if (h_is_error(r))
			expect_clear(r, "install_package (forged tools)");
		else
			cr_expect_str_eq(
			    h_str(r, "structuredContent.manager"), "pip");
		json_object_put(r);
		r = call(s, "run_project",
		    args_obj(cid, "dest_dir", "/app/p", NULL));
		if (h_is_error(r))
			expect_clear(r, "run_project (forged tools)");
		if (h_is_error(r))
			fprintf(stderr, "inject: %s\n",
			    h_str(r, "structuredContent.error"));
		else
			cr_expect_str_eq(
			    h_str(r, "structuredContent.language"), "python");
		json_object_put(r);
	}
	r = call(s, "execute_code",
	    args_obj(cid, "language", "python", "code", "import six", NULL));
	if (h_is_error(r))
		expect_clear(r, "execute_code (forged tools)");
	json_object_put(r);
	fprintf(stderr, "inject: forged tools: %ld processes injected\n",
	    injections(cid));
	adv_alive(s, cid);
	h_stop(s, cid);
	free(cid);
	adv_finish(s);
}
