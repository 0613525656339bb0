/*
 * The warm pool (--warm-pool) against the real engine: filled at start,
 * taken by a sandbox_initialize that fits (from_pool), refilled, drained
 * by more creates than it holds, the limits, name and environment of the
 * request applied to a pool container, removed at exit and reaped after
 * a kill -9 of its server.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

#define POOL_LABEL "io.mcp-sandboxd.pool=1"

/* Containers of this server that were made for its pool. */
static int
pool_containers(const char *label)
{
	char cmd[512], *out, *p;
	int n = 0, st;

	snprintf(cmd, sizeof cmd,
	    "docker ps -aq --filter 'label=%s' --filter 'label=" POOL_LABEL "'",
	    label);
	out = h_run(cmd, &st);
	cr_assert_eq(st, 0, "%s failed", cmd);
	for (p = out; *p != '\0'; p++)
		if (*p == '\n')
			n++;
	free(out);
	return n;
}

static long long
pool_stat(struct h_server *s, const char *what)
{
	json_object *r;
	char path[64];
	long long v;

	r = h_call_tool(s, "get_sandbox_status", "{}");
	snprintf(path, sizeof path, "structuredContent.stats.pool.%s", what);
	cr_assert(h_get(r, path) != NULL, "no %s in the stats: %.1000s", path,
	    json_object_to_json_string(r));
	v = h_int(r, path);
	json_object_put(r);
	return v;
}

/* Wait until the pool holds n ready containers. */
static void
pool_wait(struct h_server *s, long long n)
{
	long long deadline = h_now_ms() + 90000;

	while (pool_stat(s, "size") < n) {
		cr_assert(h_now_ms() < deadline,
		    "the pool did not fill to %lld in 90 s", n);
		usleep(200000);
	}
}

/* sandbox_initialize; its structuredContent (the caller frees r). */
static json_object *
pool_create(struct h_server *s, const char *args, json_object **r)
{
	const char *id;

	*r = h_call_tool_t(s, "sandbox_initialize", args, 120000);
	cr_assert(!h_is_error(*r), "sandbox_initialize failed: %s", h_text(*r));
	id = h_str(*r, "structuredContent.container_id");
	cr_assert(id != NULL);
	if (s->nids < H_MAX_IDS)
		s->ids[s->nids++] = strdup(id);
	return h_get(*r, "structuredContent");
}

Test(pool, filled_taken_refilled, .timeout = 240)
{
	struct h_server *s = h_start("--warm-pool", "2", NULL);
	json_object *r, *sc;
	char *out;

	json_object_put(h_initialize(s));
	pool_wait(s, 2);
	cr_expect_eq(pool_containers(s->label), 2);
	cr_expect_eq(pool_stat(s, "target"), 2);

	sc = pool_create(s, "{}", &r);
	cr_expect(h_bool(sc, "from_pool"), "the create did not take the pool's "
	                                   "container");
	out = h_exec_ok(s, h_str(sc, "container_id"), "id -u; echo ok");
	cr_expect(h_contains(out, "ok"), "%s", out);
	free(out);
	json_object_put(r);

	/* Refilled: two ready again, three made for the pool in all. */
	pool_wait(s, 2);
	cr_expect_eq(pool_containers(s->label), 3);
	cr_expect_eq(pool_stat(s, "taken"), 1);
	cr_expect_geq(pool_stat(s, "created"), 3);
	/* The pool is removed at exit with the sandbox (h_finish checks). */
	h_finish(s);
}

Test(pool, drained_by_more_creates, .timeout = 300)
{
	struct h_server *s = h_start("--warm-pool", "1", NULL);
	json_object *r[4], *sc;
	int i, pooled = 0;
	long ids[4];

	json_object_put(h_initialize(s));
	pool_wait(s, 1);
	/* Four at once: one takes the pool's, the others are made. */
	for (i = 0; i < 4; i++)
		ids[i] = h_send_tool(
		    s, "sandbox_initialize", json_object_new_object());
	for (i = 0; i < 4; i++) {
		r[i] = h_tool_result(h_wait_id(s, ids[i], 120000));
		cr_assert(
		    !h_is_error(r[i]), "create %d failed: %s", i, h_text(r[i]));
		sc = h_get(r[i], "structuredContent");
		if (s->nids < H_MAX_IDS)
			s->ids[s->nids++] = strdup(h_str(sc, "container_id"));
		pooled += h_bool(sc, "from_pool");
	}
	cr_expect_eq(pooled, 1, "%d creates took a pool container", pooled);
	for (i = 0; i < 4; i++)
		json_object_put(r[i]);
	cr_expect_eq(pool_stat(s, "taken"), 1);
	h_finish(s);
}

Test(pool, request_applied_to_pool_container, .timeout = 240)
{
	struct h_server *s = h_start("--warm-pool", "1", NULL);
	json_object *r, *sc, *ins, *res;
	const char *cid, *name;
	char *out;

	json_object_put(h_initialize(s));
	pool_wait(s, 1);
	sc = pool_create(s,
	    "{\"name\":\"web\",\"memory_mb\":256,\"cpus\":0.5,\"pids\":64,"
	    "\"env\":{\"POOL_FOO\":\"bar baz\"}}",
	    &r);
	cr_assert(h_bool(sc, "from_pool"));
	cid = h_str(sc, "container_id");
	cr_expect_str_eq(h_str(sc, "name"), "web");
	ins = h_docker_inspect(cid);
	cr_assert(ins != NULL);
	cr_expect_eq(h_int(ins, "HostConfig.Memory"), 256LL * 1024 * 1024);
	cr_expect_eq(h_int(ins, "HostConfig.MemorySwap"), 256LL * 1024 * 1024);
	cr_expect_eq(h_int(ins, "HostConfig.NanoCpus"), 500000000LL);
	cr_expect_eq(h_int(ins, "HostConfig.PidsLimit"), 64);
	name = h_str(ins, "Name");
	cr_expect(name != NULL && strlen(name) > 4 &&
	              strcmp(name + strlen(name) - 4, "-web") == 0,
	    "container name %s", name != NULL ? name : "(none)");
	json_object_put(ins);

	/* The name works as a container_id; the env reaches commands. */
	out = h_exec_ok(s, "web", "printf '%s' \"$POOL_FOO\"");
	cr_expect_str_eq(out, "bar baz");
	free(out);
	res = h_call_tool(s, "execute_code",
	    "{\"container_id\":\"web\",\"code\":\"import os; "
	    "print(os.environ.get('POOL_FOO'))\",\"dependencies\":\"none\"}");
	cr_expect(!h_is_error(res), "%s", h_text(res));
	cr_expect(h_contains(h_str(res, "structuredContent.stdout"), "bar baz"),
	    "code did not see the env: %s", json_object_to_json_string(res));
	json_object_put(res);
	/* A command's own env wins over the sandbox's. */
	res = h_call_tool(s, "sandbox_exec",
	    "{\"container_id\":\"web\",\"commands\":\"echo $POOL_FOO\","
	    "\"env\":{\"POOL_FOO\":\"mine\"}}");
	cr_expect(h_contains(h_str(h_first(res), "stdout"), "mine"));
	json_object_put(res);
	json_object_put(r);
	h_finish(s);
}

Test(pool, workdir_not_fitting_is_made, .timeout = 240)
{
	struct h_server *s = h_start("--warm-pool", "1", NULL);
	json_object *r, *sc;

	json_object_put(h_initialize(s));
	pool_wait(s, 1);
	sc = pool_create(s, "{\"workdir\":\"/work\"}", &r);
	cr_expect(!h_bool(sc, "from_pool"));
	json_object_put(r);
	cr_expect_eq(pool_stat(s, "taken"), 0);
	h_finish(s);
}

Test(pool, reaped_after_kill, .timeout = 240)
{
	struct h_server *a, *b;
	char *lbl;
	long long deadline;

	a = h_start("--warm-pool", "2", NULL);
	json_object_put(h_initialize(a));
	pool_wait(a, 2);
	lbl = strdup(a->label);
	cr_assert_eq(pool_containers(lbl), 2);
	kill(a->pid, SIGKILL);
	cr_assert_eq(h_wait_exit(a, 10000), 128 + SIGKILL);
	b = h_start(NULL);
	json_object_put(h_initialize(b));
	deadline = h_now_ms() + 30000;
	while (pool_containers(lbl) > 0 && h_now_ms() < deadline)
		usleep(200000);
	cr_expect_eq(pool_containers(lbl), 0,
	    "the killed server's pool containers were not reaped");
	h_finish(b);
	h_free(a);
	free(lbl);
}

/* --- idempotency_key --- */

Test(idempotency, same_key_same_sandbox, .timeout = 240)
{
	struct h_server *s = h_start(NULL);
	json_object *r1, *r2, *r3, *sc;
	char *first;
	long a, b;

	json_object_put(h_initialize(s));
	/* Twice at once: the second waits for the first's answer. */
	a = h_send_tool(s, "sandbox_initialize",
	    h_parse("{\"idempotency_key\":\"k-1\",\"name\":\"one\"}"));
	b = h_send_tool(s, "sandbox_initialize",
	    h_parse("{\"idempotency_key\":\"k-1\",\"name\":\"one\"}"));
	r1 = h_tool_result(h_wait_id(s, a, 120000));
	r2 = h_tool_result(h_wait_id(s, b, 120000));
	cr_assert(!h_is_error(r1), "%s", h_text(r1));
	cr_assert(!h_is_error(r2), "%s", h_text(r2));
	first = strdup(h_str(r1, "structuredContent.container_id"));
	s->ids[s->nids++] = strdup(first);
	cr_expect_str_eq(h_str(r2, "structuredContent.container_id"), first);
	cr_expect_eq(h_docker_count(s->label), 1);
	/* Later, once it is ready: the same again. */
	sc = pool_create(
	    s, "{\"idempotency_key\":\"k-1\",\"name\":\"one\"}", &r3);
	cr_expect_str_eq(h_str(sc, "container_id"), first);
	json_object_put(r3);
	cr_expect_eq(h_docker_count(s->label), 1);
	/* The same key with other arguments: refused, nothing made. */
	r3 = h_call_tool_t(s, "sandbox_initialize",
	    "{\"idempotency_key\":\"k-1\",\"name\":\"two\"}", 60000);
	cr_expect(h_is_error(r3), "%s", h_text(r3));
	cr_expect(h_contains(h_text(r3), "other arguments"), "%s", h_text(r3));
	json_object_put(r3);
	cr_expect_eq(h_docker_count(s->label), 1);
	/* Another key: another sandbox. */
	sc = pool_create(s, "{\"idempotency_key\":\"k-2\"}", &r3);
	cr_expect_str_neq(h_str(sc, "container_id"), first);
	json_object_put(r3);
	cr_expect_eq(h_docker_count(s->label), 2);
	/* Stopped: the key makes a new one. */
	h_stop(s, first);
	sc = pool_create(s, "{\"idempotency_key\":\"k-1\"}", &r3);
	cr_expect_str_neq(h_str(sc, "container_id"), first);
	json_object_put(r3);
	json_object_put(r1);
	json_object_put(r2);
	free(first);
	h_finish(s);
}

Test(idempotency, key_too_long_refused, .timeout = 60)
{
	struct h_server *s = h_start(NULL);
	json_object *r;
	char args[400];

	json_object_put(h_initialize(s));
	snprintf(args, sizeof args, "{\"idempotency_key\":\"%0129d\"}", 0);
	r = h_call_tool(s, "sandbox_initialize", args);
	cr_expect(h_is_error(r), "a 129-character key was taken");
	json_object_put(r);
	cr_expect_eq(h_docker_count(s->label), 0);
	h_finish(s);
}

/* --- --pause-after --- */

static int
paused_in_status(struct h_server *s)
{
	json_object *r = h_call_tool(s, "get_sandbox_status", "{}");
	int p = h_bool(r, "structuredContent.sandboxes.0.paused");

	json_object_put(r);
	return p;
}

Test(pause, idle_paused_exec_resumes, .timeout = 120)
{
	struct h_server *s = h_start("--pause-after", "1", NULL);
	json_object *ins, *r;
	long long deadline;
	char *cid, *out;
	int i;

	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	deadline = h_now_ms() + 20000;
	while (!paused_in_status(s) && h_now_ms() < deadline)
		usleep(200000);
	cr_assert(paused_in_status(s), "not paused after 20 s idle");
	usleep(300000);
	ins = h_docker_inspect(cid);
	cr_expect(h_bool(ins, "State.Paused"), "the engine says not paused");
	json_object_put(ins);
	/* The next exec resumes it and runs. */
	for (i = 0; i < 2; i++) {
		out = h_exec_ok(s, cid, "echo resumed");
		cr_expect(h_contains(out, "resumed"), "%s", out);
		free(out);
	}
	ins = h_docker_inspect(cid);
	cr_expect(!h_bool(ins, "State.Paused"));
	json_object_put(ins);
	r = h_call_tool(s, "get_sandbox_status", "{}");
	cr_expect_geq(h_int(r, "structuredContent.stats.pause.paused"), 1);
	cr_expect_geq(h_int(r, "structuredContent.stats.pause.resumed"), 1);
	json_object_put(r);
	/* Paused again, then removed at exit while paused. */
	deadline = h_now_ms() + 20000;
	while (!paused_in_status(s) && h_now_ms() < deadline)
		usleep(200000);
	cr_expect(paused_in_status(s));
	free(cid);
	h_finish(s);
}

/* The worker of the only sandbox, from the listing (which resumes none);
 * 0 while it has none ready. */
static long
listed_worker(struct h_server *s)
{
	json_object *r = h_call_tool(s, "get_sandbox_status", "{}");
	json_object *v = h_get(r, "structuredContent.sandboxes.0.worker_pid");
	long pid = json_object_is_type(v, json_type_int)
	               ? (long)json_object_get_int64(v)
	               : 0; /* none yet: a worker not ready */

	json_object_put(r);
	return pid;
}

/*
 * A worker killed while its sandbox is paused: the new one waits for the
 * thaw as the old one did, and the next exec resumes the sandbox and runs.
 */
Test(pause, worker_respawned_while_paused, .timeout = 120)
{
	struct h_server *s = h_start("--pause-after", "1", NULL);
	long long deadline;
	long old, now = 0;
	char *cid, *out;

	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	deadline = h_now_ms() + 20000;
	while (!paused_in_status(s) && h_now_ms() < deadline)
		usleep(200000);
	cr_assert(paused_in_status(s), "not paused after 20 s idle");
	old = listed_worker(s);
	cr_assert_gt(old, 1, "worker_pid %ld", old);
	cr_assert_eq(kill((pid_t)old, SIGKILL), 0);
	deadline = h_now_ms() + 30000;
	while (h_now_ms() < deadline) {
		now = listed_worker(s);
		if (now > 1 && now != old)
			break;
		usleep(200000);
	}
	cr_assert(
	    now > 1 && now != old, "no new worker (%ld, was %ld)", now, old);
	cr_expect(paused_in_status(s), "the respawn resumed the sandbox");
	out = h_exec_ok(s, cid, "echo resumed");
	cr_expect(h_contains(out, "resumed"), "%s", out);
	free(out);
	free(cid);
	h_finish(s);
}

Test(pause, paused_sandbox_expires, .timeout = 120)
{
	struct h_server *s = h_start("--pause-after", "1", NULL);
	char *cid;

	json_object_put(h_initialize(s));
	cid = h_create(s, "{\"ttl_seconds\":5}");
	cr_expect(h_wait_container_gone(cid, 30000),
	    "a paused sandbox outlived its ttl_seconds");
	free(cid);
	h_finish(s);
}
