/* Integration: what a sandbox may not do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

static struct h_server *
setup(char **cid, const char *create_args, const char *const *extra)
{
	struct h_server *s;

	s = h_startv(extra);
	json_object_put(h_initialize(s));
	*cid = h_create(s, create_args);
	return s;
}

static void
teardown(struct h_server *s, char *cid)
{
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

/* Run a command that must fail; its result (stdout+stderr in text). */
static void
expect_fails(struct h_server *s, const char *cid, const char *cmd)
{
	json_object *r;

	r = h_exec(s, cid, cmd, 30);
	cr_expect_neq(h_int(h_first(r), "exit_code"), 0,
	    "this worked in the sandbox: %s", cmd);
	json_object_put(r);
}

/* A uid of the sandbox: unprivileged, nonzero, not the keep-alive's
 * (65533), and its group the same, with no other; the workdir its own. */
static long
sandbox_uid(struct h_server *s, const char *cid)
{
	char *out, want[32];
	long uid;

	out = h_exec_ok(s, cid, "id -u");
	uid = atol(out);
	free(out);
	cr_expect(uid > 0 && uid != 65533, "the sandbox runs as uid %ld", uid);
	snprintf(want, sizeof want, "%ld\n", uid);
	out = h_exec_ok(s, cid, "id -g");
	cr_expect_str_eq(out, want);
	free(out);
	out = h_exec_ok(s, cid, "id -G");
	cr_expect_str_eq(out, want, "supplementary groups: %s", out);
	free(out);
	out = h_exec_ok(s, cid, "stat -c %u /app");
	cr_expect_str_eq(out, want, "the workdir is owned by %s", out);
	free(out);
	return uid;
}

Test(hardening, unprivileged_user, .timeout = 90)
{
	struct h_server *s;
	char *cid, *cid2;
	long uid, uid2;

	s = setup(&cid, NULL, NULL);
	cid2 = h_create(s, NULL);
	uid = sandbox_uid(s, cid);
	uid2 = sandbox_uid(s, cid2);
	/* Each sandbox its own uid: per-user kernel limits are not shared. */
	cr_expect_neq(uid, uid2, "two sandboxes share uid %ld", uid);
	h_stop(s, cid2);
	free(cid2);
	teardown(s, cid);
}

Test(hardening, read_only_root, .timeout = 90)
{
	struct h_server *s;
	char *cid, *out;

	s = setup(&cid, NULL, NULL);
	expect_fails(s, cid, "touch /x");
	expect_fails(s, cid, "touch /usr/x");
	expect_fails(s, cid, "touch /etc/x");
	expect_fails(s, cid, "mkdir /var/x");
	out = h_exec_ok(s, cid,
	    "echo hi > /app/f && cat /app/f && echo yo > /tmp/f && cat /tmp/f");
	cr_expect_str_eq(out, "hi\nyo\n");
	free(out);
	teardown(s, cid);
}

Test(hardening, tmp_noexec, .timeout = 90)
{
	struct h_server *s;
	json_object *r;
	char *cid, *out;

	s = setup(&cid, NULL, NULL);
	r = h_exec(s, cid,
	    "printf '#!/bin/sh\\necho ran\\n' > /tmp/s.sh && "
	    "chmod +x /tmp/s.sh && /tmp/s.sh",
	    30);
	cr_expect_neq(h_int(h_first(r), "exit_code"), 0,
	    "a script ran from /tmp: %s", h_text(r));
	cr_expect(!h_contains(h_str(h_first(r), "stdout"), "ran"));
	json_object_put(r);
	/* The workdir allows it: that is where code goes. */
	out = h_exec_ok(s, cid,
	    "printf '#!/bin/sh\\necho ran\\n' > /app/s.sh && "
	    "chmod +x /app/s.sh && /app/s.sh");
	cr_expect_str_eq(out, "ran\n");
	free(out);
	teardown(s, cid);
}

Test(hardening, no_network, .timeout = 90)
{
	struct h_server *s;
	json_object *r;
	char *cid, *out, *p, *line;
	int ifaces = 0, lo = 0;

	s = setup(&cid, NULL, NULL);
	r = h_exec(s, cid,
	    "python3 -c \"import socket; "
	    "socket.create_connection(('127.0.0.1', 9), 2)\"",
	    30);
	cr_expect_neq(
	    h_int(h_first(r), "exit_code"), 0, "connected to 127.0.0.1:9");
	json_object_put(r);
	r = h_exec(s, cid,
	    "python3 -c \"import socket; "
	    "socket.create_connection(('1.1.1.1', 53), 2)\"",
	    30);
	cr_expect_neq(
	    h_int(h_first(r), "exit_code"), 0, "connected to 1.1.1.1:53");
	json_object_put(r);

	out = h_exec_ok(s, cid, "cat /proc/net/dev");
	/* Two header lines, then one line per interface. */
	p = out;
	for (line = strsep(&p, "\n"); line != NULL; line = strsep(&p, "\n")) {
		if (strchr(line, ':') == NULL)
			continue;
		while (*line == ' ')
			line++;
		ifaces++;
		if (strncmp(line, "lo:", 3) == 0)
			lo++;
	}
	cr_expect_eq(ifaces, 1, "%d interfaces", ifaces);
	cr_expect_eq(lo, 1, "no lo");
	free(out);
	teardown(s, cid);
}

Test(hardening, pids_limit, .timeout = 120)
{
	struct h_server *s;
	json_object *r, *f;
	const char *o, *e;
	char *cid;

	s = setup(&cid, "{\"pids\":64}", NULL);
	r = h_exec(s, cid, "for i in $(seq 1 500); do sleep 30 & done", 10);
	f = h_first(r);
	o = h_str(f, "stdout");
	e = h_str(f, "stderr");
	cr_expect(h_contains(e, "Resource temporarily unavailable") ||
	              h_contains(e, "fork") || h_contains(o, "fork"),
	    "no fork failure with pids 64: %.500s", h_text(r));
	json_object_put(r);
	/* The sandbox still answers. */
	r = h_exec(s, cid, "echo alive", 20);
	f = h_first(r);
	cr_expect_eq(h_int(f, "exit_code"), 0,
	    "the sandbox does not answer after a fork bomb: %.500s", h_text(r));
	cr_expect_str_eq(h_str(f, "stdout"), "alive\n");
	json_object_put(r);
	/* And nothing of the loop is left behind. */
	r = h_exec(s, cid, "ps -eo args | grep -c '^sleep 30' || true", 20);
	cr_expect_str_eq(h_str(h_first(r), "stdout"), "0\n",
	    "sleep 30 processes left: %.500s", h_text(r));
	json_object_put(r);
	teardown(s, cid);
}

Test(hardening, no_capabilities, .timeout = 90)
{
	struct h_server *s;
	char *cid, *out;

	s = setup(&cid, NULL, NULL);
	out = h_exec_ok(s, cid,
	    "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)' "
	    "/proc/self/status");
	cr_expect(h_contains(out, "CapEff:\t0000000000000000"), "%s", out);
	cr_expect(h_contains(out, "CapPrm:\t0000000000000000"), "%s", out);
	cr_expect(h_contains(out, "CapBnd:\t0000000000000000"), "%s", out);
	cr_expect(h_contains(out, "NoNewPrivs:\t1"), "%s", out);
	free(out);
	teardown(s, cid);
}

/* A label's value: keys hold dots, so not through h_get(). */
static const char *
label(json_object *labels, const char *key)
{
	json_object *v;

	if (labels == NULL || !json_object_object_get_ex(labels, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static json_object *
find_ulimit(json_object *ul, const char *name)
{
	json_object *u;
	size_t i;

	for (i = 0; ul != NULL && i < json_object_array_length(ul); i++) {
		u = json_object_array_get_idx(ul, i);
		if (h_str(u, "Name") != NULL &&
		    strcmp(h_str(u, "Name"), name) == 0)
			return u;
	}
	return NULL;
}

static int
array_has(json_object *a, const char *s)
{
	size_t i;

	for (i = 0; a != NULL && json_object_is_type(a, json_type_array) &&
	            i < json_object_array_length(a);
	     i++)
		if (strcmp(
		        json_object_get_string(json_object_array_get_idx(a, i)),
		        s) == 0)
			return 1;
	return 0;
}

/* The start time of a process in clock ticks: field 22 of its stat. */
static unsigned long long
start_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long t = 0;
	FILE *f;
	size_t n;
	int i;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	cr_assert(f != NULL);
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	cr_assert(p != NULL);
	for (i = 2; i < 22 && p != NULL; i++)
		p = strchr(p + 1, ' ');
	cr_assert(p != NULL && sscanf(p + 1, "%llu", &t) == 1);
	return t;
}

Test(hardening, docker_inspect, .timeout = 90)
{
	static const char *const extra[] = {
	    "--nofile", "512", "--fsize-mb", "10", NULL};
	struct h_server *s;
	json_object *in, *h, *u, *labels;
	char *cid, want[64], home[128], *eq;
	const char *v;
	time_t now;
	long long exp;

	s = setup(
	    &cid, "{\"memory_mb\":96,\"pids\":77,\"ttl_seconds\":600}", extra);
	now = time(NULL);
	in = h_docker_inspect(cid);
	h = h_get(in, "HostConfig");
	cr_assert(h != NULL);
	cr_expect(h_bool(h, "ReadonlyRootfs"));
	cr_expect(array_has(h_get(h, "CapDrop"), "ALL"), "CapDrop %s",
	    json_object_to_json_string(h_get(h, "CapDrop")));
	cr_expect(h_get(h, "CapAdd") == NULL ||
	          json_object_array_length(h_get(h, "CapAdd")) == 0);
	cr_expect_str_eq(h_str(h, "NetworkMode"), "none");
	cr_expect_eq(h_int(h, "Memory"), 96LL * 1024 * 1024);
	cr_expect_eq(h_int(h, "MemorySwap"), h_int(h, "Memory"));
	cr_expect_eq(h_int(h, "PidsLimit"), 77);
	cr_expect(h_bool(h, "Init"));
	cr_expect(!h_bool(h, "Privileged"));
	cr_expect(array_has(h_get(h, "SecurityOpt"), "no-new-privileges"),
	    "SecurityOpt %s",
	    json_object_to_json_string(h_get(h, "SecurityOpt")));
	cr_expect(
	    h_contains(json_object_to_json_string(h_get(h, "SecurityOpt")),
	        "seccomp="),
	    "no seccomp profile of the server's own");
	u = find_ulimit(h_get(h, "Ulimits"), "nofile");
	cr_expect(u != NULL, "no nofile ulimit");
	if (u != NULL) {
		cr_expect_eq(h_int(u, "Soft"), 512);
		cr_expect_eq(h_int(u, "Hard"), 512);
	}
	u = find_ulimit(h_get(h, "Ulimits"), "fsize");
	cr_expect(u != NULL, "no fsize ulimit");
	if (u != NULL) {
		cr_expect_eq(h_int(u, "Soft"), 10LL * 1024 * 1024);
		cr_expect_eq(h_int(u, "Hard"), 10LL * 1024 * 1024);
	}
	cr_expect(h_contains(h_str(h, "Tmpfs./tmp"), "noexec"), "/tmp: %s",
	    h_str(h, "Tmpfs./tmp"));
	cr_expect(h_str(h, "Tmpfs./app") != NULL, "no tmpfs on /app");
	cr_expect(h_str(in, "Config.User") != NULL &&
	              strcmp(h_str(in, "Config.User"), "") != 0 &&
	              strncmp(h_str(in, "Config.User"), "0", 1) != 0 &&
	              strcmp(h_str(in, "Config.User"), "root") != 0,
	    "the container runs as %s", h_str(in, "Config.User"));

	labels = h_get(in, "Config.Labels");
	cr_assert(labels != NULL);
	v = label(labels, "io.mcp-sandboxd.instance");
	cr_expect(
	    v != NULL && strlen(v) == 32 && strspn(v, "0123456789abcdef") == 32,
	    "instance label %s", v);
	snprintf(want, sizeof want, "%d", (int)s->pid);
	cr_expect_str_eq(label(labels, "io.mcp-sandboxd.pid"), want);
	h_pid_home(s->pid, home, sizeof home);
	cr_expect_str_eq(label(labels, "io.mcp-sandboxd.boot"), home);
	snprintf(want, sizeof want, "%llu", start_ticks(s->pid));
	cr_expect_str_eq(label(labels, "io.mcp-sandboxd.start"), want);
	v = label(labels, "io.mcp-sandboxd.expires");
	cr_assert(v != NULL, "no expires label");
	exp = strtoll(v, NULL, 10);
	cr_expect(exp >= (long long)now + 590 && exp <= (long long)now + 610,
	    "expires %lld, now %lld", exp, (long long)now);
	/* The operator's --label. */
	eq = strchr(s->label, '=');
	*eq = '\0';
	v = label(labels, s->label);
	cr_expect(v != NULL && strcmp(v, eq + 1) == 0,
	    "label %s=%s missing; labels are %s", s->label, eq + 1,
	    json_object_to_json_string(labels));
	*eq = '=';
	json_object_put(in);
	teardown(s, cid);
}

Test(hardening, file_size_limit, .timeout = 120)
{
	static const char *const extra[] = {
	    "--fsize-mb", "10", "--workdir-mb", "300", NULL};
	struct h_server *s;
	json_object *r, *f;
	char *cid, *out;

	s = setup(&cid, NULL, extra);
	r = h_exec(s, cid, "head -c 200000000 /dev/zero > /app/big", 60);
	f = h_first(r);
	cr_expect_neq(h_int(f, "exit_code"), 0, "a 200 MB file was written");
	cr_expect(
	    h_int(f, "exit_code") == 128 + 25 ||
	        h_contains(h_str(f, "stderr"), "File size limit exceeded"),
	    "not a file size limit: %s", h_text(r));
	json_object_put(r);
	out = h_exec_ok(s, cid, "stat -c %s /app/big");
	cr_expect_eq(
	    atoll(out), 10LL * 1024 * 1024, "/app/big is %s bytes", out);
	free(out);
	teardown(s, cid);
}
