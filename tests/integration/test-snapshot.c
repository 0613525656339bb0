/*
 * Integration: snapshots (sandbox_snapshot, sandbox_restore,
 * snapshot_list, snapshot_delete, sandbox_initialize snapshot;
 * supervisor/run/snapshot.c, supervisor/host/snaptar.c, the worker's gate
 * in wproc.c).  The end-to-end tests through the official SDK are in
 * tests/interop/test/23-snapshot.test.mjs; these hold what needs the host:
 * a point in time while a process writes, calls that wait, a sandbox whose
 * tar lies, the caps, expiry, and the state directory's files.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

static char g_state[64];

static void
state_init(void)
{
	snprintf(g_state, sizeof g_state, "/tmp/mcp-snap-test-XXXXXX");
	cr_assert(mkdtemp(g_state) != NULL);
}

static void
state_fini(void)
{
	if (g_state[0] != '\0')
		h_rm_rf(g_state);
	g_state[0] = '\0';
}

TestSuite(snapshot, .init = state_init, .fini = state_fini);

static json_object *
call(struct h_server *s, const char *tool, const char *fmt, ...)
{
	char args[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	return h_call_tool_t(s, tool, args, 120000);
}

static struct h_server *
start(const char *first, ...)
{
	const char *argv[24];
	struct h_server *s;
	va_list ap;
	int n = 0;

	argv[n++] = "--state-dir";
	argv[n++] = g_state;
	va_start(ap, first);
	for (const char *a = first; a != NULL && n < 22;
	     a = va_arg(ap, const char *))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	s = h_startv(argv);
	json_object_put(h_initialize(s));
	return s;
}

/* A snapshot that must succeed: its id (caller frees). */
static char *
snap(struct h_server *s, const char *cid, json_object **out)
{
	json_object *r;
	char *id;

	r = call(s, "sandbox_snapshot", "{\"container_id\":\"%s\"}", cid);
	cr_assert(!h_is_error(r), "sandbox_snapshot: %s", h_text(r));
	id = strdup(h_str(r, "structuredContent.snapshot_id"));
	cr_assert(id != NULL);
	if (out != NULL)
		*out = r;
	else
		json_object_put(r);
	return id;
}

/* A fork of a snapshot (with env, JSON, or NULL): its container_id. */
static char *
fork_of(struct h_server *s, const char *id, const char *env)
{
	json_object *r;
	char args[512], *cid;

	snprintf(args, sizeof args, "{\"snapshot\":\"%s\"%s%s}", id,
	    env != NULL ? ",\"env\":" : "", env != NULL ? env : "");
	r = h_call_tool_t(s, "sandbox_initialize", args, 120000);
	cr_assert(!h_is_error(r), "fork: %s", h_text(r));
	cr_expect_str_eq(h_str(r, "structuredContent.snapshot_id"), id);
	cid = strdup(h_str(r, "structuredContent.container_id"));
	json_object_put(r);
	return cid;
}

/* The stdout of a command that must succeed (caller frees). */
static char *
sh(struct h_server *s, const char *cid, const char *cmd)
{
	return h_exec_ok(s, cid, cmd);
}

/* A background process writing file all along. */
static void
writer(struct h_server *s, const char *cid, const char *file)
{
	json_object *a, *r;
	char cmd[128];

	snprintf(cmd, sizeof cmd, "while :; do echo line >> %s; done", file);
	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(a, "commands", json_object_new_string(cmd));
	json_object_object_add(a, "background", json_object_new_boolean(1));
	r = h_call_tool_obj(s, "sandbox_exec", a, 30000);
	cr_assert(!h_is_error(r), "background: %s", h_text(r));
	json_object_put(r);
}

/* Sends a call about cid without waiting: its request id.  key and value
 * (a string) may be NULL. */
static long
send_about(struct h_server *s, const char *tool, const char *cid,
    const char *key, const char *value)
{
	json_object *a;

	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	if (key != NULL)
		json_object_object_add(a, key, json_object_new_string(value));
	return h_send_tool(s, tool, a);
}

/* Entries of the state directory's snapshots/ (names, one per line). */
static char *
state_entries(void)
{
	char path[128], *out;
	struct dirent *de;
	size_t len = 0;
	DIR *d;

	snprintf(path, sizeof path, "%s/snapshots", g_state);
	out = calloc(1, 4096);
	cr_assert(out != NULL);
	if ((d = opendir(path)) == NULL)
		return out;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		len +=
		    (size_t)snprintf(out + len, 4096 - len, "%s\n", de->d_name);
		if (len >= 4000)
			break;
	}
	closedir(d);
	return out;
}

/*
 * A process appending to a file all along: the snapshot is one point in
 * time (tar fails on a file that grows while it is read), the process is
 * continued after, and a command sent while the snapshot is taken runs
 * only after it (a fork of the snapshot does not have what it wrote).
 */
Test(snapshot, point_in_time_and_calls_wait, .timeout = 300)
{
	struct h_server *s;
	json_object *r;
	char *cid, *id, *fork, *out, *before, *after;
	long rid, eid;

	s = start(NULL);
	cid = h_create(s, NULL);
	free(sh(s, cid,
	    "head -c 20000000 /dev/zero > /app/ballast && "
	    "i=0; while [ $i -lt 200 ]; do mkdir -p /app/many/$i && "
	    "echo $i > /app/many/$i/f; i=$((i+1)); done"));
	writer(s, cid, "/app/grow");
	usleep(300000);

	/* The snapshot, and at once a command behind it. */
	rid = send_about(s, "sandbox_snapshot", cid, NULL, NULL);
	eid = send_about(
	    s, "sandbox_exec", cid, "commands", "echo late > /app/late");
	/* One at a time. */
	r = call(s, "sandbox_snapshot", "{\"container_id\":\"%s\"}", cid);
	cr_expect(h_is_error(r) && h_contains(h_text(r), "being taken"),
	    "a second snapshot at once: %s", h_text(r));
	json_object_put(r);
	r = h_tool_result(h_wait_id(s, rid, 120000));
	cr_assert(
	    !h_is_error(r), "snapshot while a process writes: %s", h_text(r));
	cr_expect_geq(h_int(r, "structuredContent.files"), 400);
	cr_expect_geq(h_int(r, "structuredContent.bytes"), 20000000);
	id = strdup(h_str(r, "structuredContent.snapshot_id"));
	json_object_put(r);
	r = h_tool_result(h_wait_id(s, eid, 60000));
	cr_expect(!h_is_error(r), "the command behind it: %s", h_text(r));
	json_object_put(r);

	/* The writer goes on (continued, not left stopped). */
	before = sh(s, cid, "wc -c < /app/grow");
	usleep(300000);
	after = sh(s, cid, "wc -c < /app/grow");
	cr_expect(atol(after) > atol(before),
	    "the writer was left stopped: %s then %s", before, after);
	free(before);
	free(after);
	out = sh(s, cid, "cat /app/late");
	cr_expect_str_eq(out, "late\n");
	free(out);

	/* A command sent while a restore runs comes after it: its file
	 * stays. */
	rid = send_about(s, "sandbox_restore", cid, "snapshot_id", id);
	eid = send_about(
	    s, "sandbox_exec", cid, "commands", "echo after > /app/after");
	r = h_tool_result(h_wait_id(s, rid, 120000));
	cr_expect(!h_is_error(r), "restore: %s", h_text(r));
	cr_expect_geq(h_int(r, "structuredContent.processes_killed"), 1,
	    "the writer was not killed: %s", json_object_to_json_string(r));
	json_object_put(r);
	r = h_tool_result(h_wait_id(s, eid, 60000));
	cr_expect(!h_is_error(r), "the command behind it: %s", h_text(r));
	json_object_put(r);
	out = sh(s, cid,
	    "cat /app/after; test -e /app/late || echo no-late; "
	    "a=$(wc -c < /app/grow); sleep 0.3; b=$(wc -c < /app/grow); "
	    "[ $a = $b ] && echo still");
	cr_expect_str_eq(
	    out, "after\nno-late\nstill\n", "after the restore: %s", out);
	free(out);

	fork = fork_of(s, id, NULL);
	out = sh(s, fork,
	    "test -e /app/late && echo late; wc -c < /app/ballast; "
	    "cat /app/many/199/f; test -s /app/grow && echo grow");
	cr_expect_str_eq(out, "20000000\n199\ngrow\n",
	    "the fork has what the snapshot held, and not what came "
	    "after: %s",
	    out);
	free(out);
	h_stop(s, fork);
	free(fork);
	free(id);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

/*
 * The sandbox's tar is its own (here a PATH it controls): entries with
 * "..", absolute names, names outside its mounts, devices and links to
 * outside are left out, nothing reaches the host beyond the archive, and
 * a fork gets only what was kept.
 */
Test(snapshot, hostile_tar, .timeout = 300)
{
	static const char fake[] =
	    "mkdir -p /app/bin && cat > /app/bin/tar <<'EOF'\n"
	    "#!/usr/bin/python3\n"
	    "import io, sys, tarfile\n"
	    "if '--help' in sys.argv: sys.exit(0)\n"
	    "if '-x' in ' '.join(sys.argv) or '-xpf' in sys.argv:\n"
	    "    import os; os.execv('/bin/tar', ['tar'] + sys.argv[1:])\n"
	    "t = tarfile.open(fileobj=sys.stdout.buffer, mode='w|',"
	    " format=tarfile.GNU_FORMAT)\n"
	    "def f(name, data=b'x', **kw):\n"
	    "    i = tarfile.TarInfo(name); i.size = len(data)\n"
	    "    for k, v in kw.items(): setattr(i, k, v)\n"
	    "    t.addfile(i, io.BytesIO(data) if i.isreg() else None)\n"
	    "f('app/ok', b'kept\\n')\n"
	    "f('app/../../escape')\n"
	    "f('/abs')\n"
	    "f('etc/passwd')\n"
	    "f('../up')\n"
	    "f('app/dev', type=tarfile.CHRTYPE, devmajor=1, devminor=3)\n"
	    "f('app/fifo', type=tarfile.FIFOTYPE)\n"
	    "f('app/hard', type=tarfile.LNKTYPE, linkname='/etc/shadow')\n"
	    "f('app/suid', b'#!/bin/sh\\n', mode=0o6755)\n"
	    "f('app/link', type=tarfile.SYMTYPE, linkname='/etc/passwd')\n"
	    "t.close()\n"
	    "EOF\n"
	    "chmod +x /app/bin/tar";
	struct h_server *s;
	json_object *r;
	char *cid, *id, *fork, *out, *ents, args[256];

	s = start(NULL);
	cid = h_create(s, "{\"env\":{\"PATH\":\"/app/bin:/usr/bin:/bin\"}}");
	free(sh(s, cid, fake));
	id = snap(s, cid, &r);
	cr_expect_eq(h_int(r, "structuredContent.files"), 3,
	    "app/ok, app/suid and app/link are kept: %s",
	    json_object_to_json_string(r));
	cr_expect_eq(h_int(r, "structuredContent.skipped"), 7, "%s",
	    json_object_to_json_string(r));
	json_object_put(r);
	ents = state_entries();
	cr_expect(strncmp(ents, "snap-", 5) == 0 && strlen(ents) == 18,
	    "the state directory holds more than the snapshot: %s", ents);
	free(ents);
	snprintf(args, sizeof args, "%s/escape", g_state);
	cr_expect(access(args, F_OK) == -1, "escape reached the host");
	cr_expect(access("/tmp/escape", F_OK) == -1);

	fork = fork_of(s, id, "{\"PATH\":\"/usr/bin:/bin\"}");
	out = sh(s, fork,
	    "cat /app/ok; stat -c '%a' /app/suid; readlink /app/link; "
	    "ls /app | tr '\\n' ' '");
	cr_expect_str_eq(out, "kept\n755\n/etc/passwd\nlink ok suid ",
	    "only what was kept, without the set-id bits: %s", out);
	free(out);
	h_stop(s, fork);
	free(fork);

	/* A tar that is not one. */
	free(sh(s, cid,
	    "printf '#!/bin/sh\\n[ \"$1\" = --help ] && exit 0\\n"
	    "head -c 100000 /dev/urandom\\n' > /app/bin/tar"));
	r = call(s, "sandbox_snapshot", "{\"container_id\":\"%s\"}", cid);
	cr_expect(h_is_error(r) && h_contains(h_text(r), "nothing was kept"),
	    "garbage: %s", h_text(r));
	json_object_put(r);
	ents = state_entries();
	cr_expect(!h_contains(ents, ".new-"), "a take left %s", ents);
	free(ents);
	free(id);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

/* Each snapshot's cap and the total, hit; nothing is left of either. */
Test(snapshot, caps, .timeout = 300)
{
	struct h_server *s;
	json_object *r;
	char *cid, *id, *ents;

	s = start("--snapshot-max-mb", "1", "--snapshot-mb", "2", NULL);
	cid = h_create(s, NULL);
	free(sh(s, cid, "head -c 3000000 /dev/urandom > /app/big"));
	r = call(s, "sandbox_snapshot", "{\"container_id\":\"%s\"}", cid);
	cr_expect(h_is_error(r) && h_contains(h_text(r), "--snapshot-max-mb"),
	    "over one snapshot's cap: %s", h_text(r));
	json_object_put(r);
	ents = state_entries();
	cr_expect_str_eq(ents, "", "left: %s", ents);
	free(ents);

	/* Two of 700 KB fit in 2 MiB; the third does not. */
	free(sh(s, cid, "rm /app/big; head -c 700000 /dev/urandom > /app/big"));
	id = snap(s, cid, NULL);
	free(id);
	id = snap(s, cid, NULL);
	free(id);
	r = call(s, "sandbox_snapshot", "{\"container_id\":\"%s\"}", cid);
	cr_expect(h_is_error(r) && h_contains(h_text(r), "--snapshot-mb"),
	    "over the total: %s", h_text(r));
	json_object_put(r);
	r = call(s, "snapshot_list", "{}");
	cr_expect_eq(
	    json_object_array_length(h_get(r, "structuredContent.snapshots")),
	    2);
	json_object_put(r);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

/* Bad ids, another image, expiry, a state directory that is not private. */
Test(snapshot, refusals_and_expiry, .timeout = 300)
{
	struct h_server *s;
	json_object *r;
	json_object *meta;
	char *cid, *other, *id, path[256], *ents;

	s = start("--node-image", "mcp-sandboxd-test/node:bookworm", NULL);
	cid = h_create(s, NULL);
	id = snap(s, cid, NULL);
	r = call(s, "sandbox_restore",
	    "{\"container_id\":\"%s\",\"snapshot_id\":\"../../etc\"}", cid);
	cr_expect(h_is_error(r) && h_contains(h_text(r), "no snapshot"), "%s",
	    h_text(r));
	json_object_put(r);
	other = h_create(s, "{\"image\":\"mcp-sandboxd-test/node:bookworm\"}");
	r = call(s, "sandbox_restore",
	    "{\"container_id\":\"%s\",\"snapshot_id\":\"%s\"}", other, id);
	cr_expect(
	    h_is_error(r) && h_contains(h_text(r), "fork"), "%s", h_text(r));
	json_object_put(r);
	r = call(s, "sandbox_initialize",
	    "{\"snapshot\":\"%s\",\"image\":\"mcp-sandboxd-test/node:"
	    "bookworm\"}",
	    id);
	cr_expect(h_is_error(r) && h_contains(h_text(r), "leave image out"),
	    "%s", h_text(r));
	json_object_put(r);
	r = call(s, "sandbox_initialize",
	    "{\"snapshot\":\"%s\",\"idempotency_key\":\"k\"}", id);
	cr_expect(h_is_error(r) && h_contains(h_text(r), "idempotency_key"),
	    "%s", h_text(r));
	json_object_put(r);
	h_stop(s, other);
	free(other);

	/* Expired (its time moved back): not listed, not usable, removed. */
	snprintf(path, sizeof path, "%s/snapshots/%s/meta.json", g_state, id);
	cr_assert((meta = json_object_from_file(path)) != NULL);
	cr_assert(json_object_object_get_ex(meta, "expires", NULL));
	json_object_object_add(meta, "expires", json_object_new_int64(1));
	cr_assert(json_object_to_file(path, meta) == 0);
	json_object_put(meta);
	r = call(s, "snapshot_list", "{}");
	cr_expect_eq(
	    json_object_array_length(h_get(r, "structuredContent.snapshots")),
	    0, "%s", json_object_to_json_string(r));
	json_object_put(r);
	ents = state_entries();
	cr_expect_str_eq(ents, "", "an expired snapshot stays: %s", ents);
	free(ents);
	r = call(s, "snapshot_delete", "{\"snapshot_id\":\"%s\"}", id);
	cr_expect(h_is_error(r), "%s", h_text(r));
	json_object_put(r);
	free(id);
	h_stop(s, cid);
	free(cid);
	h_finish(s);

	/* A state directory others may enter. */
	cr_assert(chmod(g_state, 0755) == 0);
	s = start(NULL);
	cid = h_create(s, NULL);
	r = call(s, "sandbox_snapshot", "{\"container_id\":\"%s\"}", cid);
	cr_expect(
	    h_is_error(r) && h_contains(h_text(r), "private"), "%s", h_text(r));
	json_object_put(r);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

/*
 * A snapshot cancelled while its tar runs (here a tar that sleeps): the
 * processes it stopped are continued, nothing is kept, and the calls that
 * waited run.
 */
Test(snapshot, cancelled_snapshot_continues_processes, .timeout = 180)
{
	struct h_server *s;
	json_object *r;
	char *cid, *out, *ents, params[128];
	long rid, eid;

	s = start(NULL);
	cid = h_create(s, "{\"env\":{\"PATH\":\"/app/bin:/usr/bin:/bin\"}}");
	free(sh(s, cid,
	    "mkdir -p /app/bin && printf '#!/bin/sh\\n"
	    "[ \"$1\" = --help ] && exit 0\\nexec sleep 60\\n' > /app/bin/tar "
	    "&& chmod +x /app/bin/tar"));
	writer(s, cid, "/tmp/grow");

	rid = send_about(s, "sandbox_snapshot", cid, NULL, NULL);
	eid = send_about(s, "sandbox_exec", cid, "commands", "echo waited");
	sleep(2); /* the writer is stopped, the tar sleeps */
	snprintf(params, sizeof params,
	    "{\"requestId\":%ld,\"reason\":\"test cancel\"}", rid);
	h_send_notification(s, "notifications/cancelled", params);
	r = h_tool_result(h_wait_id(s, eid, 60000));
	cr_expect(!h_is_error(r), "the command that waited: %s", h_text(r));
	json_object_put(r);
	out = sh(s, cid,
	    "a=$(wc -c < /tmp/grow); sleep 0.3; b=$(wc -c < /tmp/grow); "
	    "[ $a != $b ] && echo runs; ps -eo stat= | grep -c '^T' || :");
	cr_expect_str_eq(out, "runs\n0\n",
	    "the writer is left stopped after a cancelled snapshot: %s", out);
	free(out);
	ents = state_entries();
	cr_expect_str_eq(ents, "", "a cancelled snapshot left %s", ents);
	free(ents);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}
