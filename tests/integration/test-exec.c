/* Integration: sandbox_exec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

/* A server, initialized, with one sandbox. */
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

/* ps in the sandbox: does any process's command line contain what? */
static int
sandbox_runs(struct h_server *s, const char *cid, const char *what)
{
	char *out;
	int found;

	out = h_exec_ok(s, cid, "ps -eo args");
	found = h_contains(out, what);
	if (found)
		fprintf(stderr, "ps in the sandbox:\n%s", out);
	free(out);
	return found;
}

Test(exec, stdout_stderr_apart, .timeout = 90)
{
	struct h_server *s;
	json_object *r, *f;
	char *cid;

	s = setup(&cid, NULL, NULL);
	r = h_exec(s, cid, "echo out; echo err >&2; printf more", 30);
	f = h_first(r);
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect(h_bool(r, "structuredContent.success"));
	cr_expect_eq(h_int(f, "exit_code"), 0);
	cr_expect_str_eq(h_str(f, "stdout"), "out\nmore");
	cr_expect_str_eq(h_str(f, "stderr"), "err\n");
	cr_expect(!h_bool(f, "timed_out"));
	cr_expect(!h_bool(f, "oom_killed"));
	cr_expect(!h_bool(f, "truncated"));
	cr_expect_geq(h_int(f, "duration_ms"), 0);
	cr_expect_str_eq(
	    h_str(f, "command"), "echo out; echo err >&2; printf more");
	json_object_put(r);
	teardown(s, cid);
}

Test(exec, exit_codes, .timeout = 90)
{
	struct h_server *s;
	json_object *r, *f;
	char *cid;

	s = setup(&cid, NULL, NULL);
	r = h_exec(s, cid, "exit 3", 30);
	f = h_first(r);
	cr_expect_eq(h_int(f, "exit_code"), 3);
	/* A command that ran is a result (success says how it went). */
	cr_expect(
	    !h_is_error(r), "a failing command is a tool error: %s", h_text(r));
	cr_expect(!h_bool(r, "structuredContent.success"));
	json_object_put(r);

	r = h_exec(s, cid, "does-not-exist-anywhere", 30);
	f = h_first(r);
	cr_expect_eq(h_int(f, "exit_code"), 127);
	cr_expect(h_contains(h_str(f, "stderr"), "not found"));
	json_object_put(r);

	r = h_exec(s, cid, "true", 30);
	cr_expect(!h_is_error(r));
	cr_expect_eq(h_int(h_first(r), "exit_code"), 0);
	cr_expect(h_bool(r, "structuredContent.success"));
	json_object_put(r);
	teardown(s, cid);
}

Test(exec, stop_on_error, .timeout = 90)
{
	struct h_server *s;
	json_object *r, *a, *res;
	char *cid;

	s = setup(&cid, NULL, NULL);
	/* Default: stop at the first failure. */
	a = json_object_new_object();
	json_object_object_add(
	    a, "commands", h_parse("[\"echo 1\",\"false\",\"echo 3\"]"));
	r = h_exec_obj(s, cid, a, 60000);
	res = h_get(r, "structuredContent.results");
	cr_assert(res != NULL);
	cr_expect_eq(json_object_array_length(res), 2);
	cr_expect_str_eq(h_str(r, "structuredContent.results.0.stdout"), "1\n");
	cr_expect_eq(h_int(r, "structuredContent.results.1.exit_code"), 1);
	cr_expect(!h_is_error(r));
	cr_expect(!h_bool(r, "structuredContent.success"));
	json_object_put(r);

	/* stop_on_error false: all run, the call still failed. */
	a = json_object_new_object();
	json_object_object_add(
	    a, "commands", h_parse("[\"echo 1\",\"false\",\"echo 3\"]"));
	json_object_object_add(a, "stop_on_error", json_object_new_boolean(0));
	r = h_exec_obj(s, cid, a, 60000);
	res = h_get(r, "structuredContent.results");
	cr_assert(res != NULL);
	cr_expect_eq(json_object_array_length(res), 3);
	cr_expect_str_eq(h_str(r, "structuredContent.results.2.stdout"), "3\n");
	cr_expect(!h_is_error(r));
	cr_expect(!h_bool(r, "structuredContent.success"));
	json_object_put(r);

	/* All good: success. */
	a = json_object_new_object();
	json_object_object_add(
	    a, "commands", h_parse("[\"echo 1\",\"echo 2\"]"));
	r = h_exec_obj(s, cid, a, 60000);
	cr_expect(!h_is_error(r));
	cr_expect_eq(
	    json_object_array_length(h_get(r, "structuredContent.results")), 2);
	json_object_put(r);
	teardown(s, cid);
}

Test(exec, env_and_workdir, .timeout = 90)
{
	struct h_server *s;
	json_object *r, *a, *f;
	char *cid, *out;

	s = setup(&cid, NULL, NULL);
	out = h_exec_ok(s, cid, "pwd");
	cr_expect_str_eq(out, "/app\n");
	free(out);

	a = json_object_new_object();
	json_object_object_add(
	    a, "commands", json_object_new_string("echo \"$FOO|$BAR\"; pwd"));
	json_object_object_add(
	    a, "env", h_parse("{\"FOO\":\"bar baz\",\"BAR\":\"x'y\\\"z\"}"));
	json_object_object_add(a, "workdir", json_object_new_string("/tmp"));
	r = h_exec_obj(s, cid, a, 60000);
	f = h_first(r);
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect_str_eq(h_str(f, "stdout"), "bar baz|x'y\"z\n/tmp\n");
	json_object_put(r);

	/* Not kept for later calls. */
	out = h_exec_ok(s, cid, "echo \"[$FOO]\"; pwd");
	cr_expect_str_eq(out, "[]\n/app\n");
	free(out);

	/* Bad env names are refused. */
	a = json_object_new_object();
	json_object_object_add(a, "commands", json_object_new_string("true"));
	json_object_object_add(a, "env", h_parse("{\"A-B\":\"1\"}"));
	r = h_exec_obj(s, cid, a, 60000);
	cr_expect(h_is_error(r));
	json_object_put(r);
	teardown(s, cid);
}

Test(exec, sandbox_env, .timeout = 90)
{
	struct h_server *s;
	json_object *r, *a;
	char *cid, *out;

	s = setup(
	    &cid, "{\"env\":{\"GREETING\":\"hi there\",\"X\":\"1\"}}", NULL);
	out = h_exec_ok(s, cid, "echo \"$GREETING/$X/$HOME\"");
	cr_expect_str_eq(out, "hi there/1//app\n");
	free(out);

	/* A call's env adds to the sandbox's and wins over it. */
	a = json_object_new_object();
	json_object_object_add(
	    a, "commands", json_object_new_string("echo \"$GREETING/$X/$Y\""));
	json_object_object_add(a, "env", h_parse("{\"X\":\"2\",\"Y\":\"3\"}"));
	r = h_exec_obj(s, cid, a, 60000);
	cr_expect_str_eq(h_str(h_first(r), "stdout"), "hi there/2/3\n");
	json_object_put(r);
	teardown(s, cid);
}

Test(exec, timeout_kills, .timeout = 90)
{
	struct h_server *s;
	json_object *r, *f;
	long long t0, took;
	char *cid;

	s = setup(&cid, NULL, NULL);
	t0 = h_now_ms();
	r = h_exec(s, cid, "echo started; sleep 1000", 2);
	took = h_now_ms() - t0;
	f = h_first(r);
	cr_expect(h_bool(f, "timed_out"), "not timed out: %s", h_text(r));
	cr_expect(!h_is_error(r), "a timeout is a tool error: %s", h_text(r));
	cr_expect(!h_bool(r, "structuredContent.success"));
	cr_expect_neq(h_int(f, "exit_code"), 0);
	cr_expect_str_eq(h_str(f, "stdout"), "started\n");
	cr_expect_geq(took, 1900, "answered after %lld ms", took);
	cr_expect_lt(took, 8000, "answered after %lld ms", took);
	json_object_put(r);
	cr_expect(!sandbox_runs(s, cid, "sleep 1000"),
	    "sleep 1000 survived the timeout");
	teardown(s, cid);
}

Test(exec, timeout_kills_background, .timeout = 90)
{
	struct h_server *s;
	json_object *r;
	char *cid;

	s = setup(&cid, NULL, NULL);
	r = h_exec(s, cid,
	    "sleep 1000 & (sleep 1001 >/dev/null 2>&1 &); "
	    "setsid sleep 1002 >/dev/null 2>&1 & sleep 999",
	    2);
	cr_expect(
	    h_bool(h_first(r), "timed_out"), "not timed out: %s", h_text(r));
	json_object_put(r);
	cr_expect(!sandbox_runs(s, cid, "sleep 1000"),
	    "background sleep 1000 survived the timeout");
	cr_expect(!sandbox_runs(s, cid, "sleep 1001"),
	    "double-forked sleep 1001 survived the timeout");
	cr_expect(!sandbox_runs(s, cid, "sleep 1002"),
	    "setsid sleep 1002 survived the timeout");
	cr_expect(!sandbox_runs(s, cid, "sleep 999"),
	    "sleep 999 survived the timeout");
	teardown(s, cid);
}

/*
 * Daemons that a command starts as it ends race the sweep of its session:
 * one caught leaving is not left stopped (it runs on, or it is gone).
 */
Test(exec, daemons_started_last_are_not_left_stopped, .timeout = 90)
{
	struct h_server *s;
	char *cid, *out;
	int round;

	s = setup(&cid, NULL, NULL);
	for (round = 0; round < 5; round++) {
		free(h_exec_ok(s, cid,
		    "for i in 1 2 3 4 5 6 7 8 9 10; do"
		    " setsid sleep 1000 >/dev/null 2>&1 & done"));
		out =
		    h_exec_ok(s, cid, "ps -eo stat=,args= | grep '^T' || true");
		cr_expect_str_eq(out, "", "stopped for good:\n%s", out);
		free(out);
	}
	teardown(s, cid);
}

Test(exec, output_cap, .timeout = 90)
{
	static const char *const extra[] = {"--output-cap", "100000", NULL};
	struct h_server *s;
	json_object *r, *f;
	long long t0, took;
	const char *out;
	char *cid;

	s = setup(&cid, NULL, extra);
	t0 = h_now_ms();
	r = h_exec(s, cid, "yes", 60);
	took = h_now_ms() - t0;
	f = h_first(r);
	out = h_str(f, "stdout");
	cr_assert(out != NULL);
	cr_expect(h_bool(f, "truncated"), "not truncated: %.300s", h_text(r));
	cr_expect(!h_bool(f, "timed_out"));
	/* Killed at the cap, its end seen: not a lost agent nor a stream
	 * given up (the agent runs on the credit of what was passed on,
	 * so what was dropped must be given back). */
	cr_expect_null(h_get(f, "error"), "%s", h_str(f, "error"));
	cr_expect(!h_is_error(r));
	cr_expect_leq(strlen(out), 100000, "stdout is %zu bytes", strlen(out));
	cr_expect_gt(strlen(out), 1000, "stdout is %zu bytes", strlen(out));
	cr_expect_eq(strncmp(out, "y\ny\ny\n", 6), 0);
	cr_expect_lt(took, 10000, "the capped call took %lld ms", took);
	json_object_put(r);
	cr_expect(!sandbox_runs(s, cid, "yes"), "yes survived the cap");

	/* The cap is per call: the next call has all of it again. */
	r = h_exec(s, cid, "head -c 60000 /dev/zero | tr '\\0' b", 30);
	f = h_first(r);
	cr_expect(!h_bool(f, "truncated"));
	cr_expect_eq(h_int(f, "stdout_bytes"), 60000);
	/* The result shows its head and tail (--inline-output); the whole
	 * is its resource. */
	cr_expect_not_null(h_str(f, "stdout_uri"), "%s", h_text(r));
	out = h_read_whole(s, h_str(f, "stdout_uri"));
	cr_expect_eq(strlen(out), 60000);
	free((char *)out);
	json_object_put(r);
	teardown(s, cid);
}

Test(exec, big_output_exact, .timeout = 120)
{
	static const char *const extra[] = {
	    "--output-cap", "20000000", "--inline-output", "12000000", NULL};
	struct h_server *s;
	json_object *r, *f, *v;
	const char *out;
	char *cid;
	size_t i, n, bad = 0;

	s = setup(&cid, NULL, extra);
	r = h_exec(s, cid,
	    "head -c 5000000 /dev/zero | tr '\\0' a; "
	    "echo -n end >&2",
	    60);
	f = h_first(r);
	cr_expect(!h_is_error(r));
	cr_expect(!h_bool(f, "truncated"));
	v = h_get(f, "stdout");
	cr_assert(v != NULL);
	out = json_object_get_string(v);
	n = (size_t)json_object_get_string_len(v);
	cr_expect_eq(n, 5000000, "stdout is %zu bytes", n);
	for (i = 0; i < n; i++)
		if (out[i] != 'a')
			bad++;
	cr_expect_eq(bad, 0, "%zu bytes are not 'a'", bad);
	cr_expect_str_eq(h_str(f, "stderr"), "end");
	json_object_put(r);
	teardown(s, cid);
}

Test(exec, concurrent_sandboxes, .timeout = 120)
{
	struct h_server *s;
	json_object *a, *m, *r;
	char *c1, *c2;
	long id1, id2;

	s = h_start(NULL);
	json_object_put(h_initialize(s));
	c1 = h_create(s, NULL);
	c2 = h_create(s, NULL);

	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(c1));
	json_object_object_add(
	    a, "commands", json_object_new_string("sleep 3; echo a"));
	id1 = h_send_tool(s, "sandbox_exec", a);
	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(c2));
	json_object_object_add(a, "commands", json_object_new_string("echo b"));
	id2 = h_send_tool(s, "sandbox_exec", a);

	m = h_next_response(s, 30000);
	cr_assert(m != NULL);
	cr_expect_eq(
	    h_int(m, "id"), id2, "the slow call in sandbox 1 answered first");
	r = h_tool_result(m);
	cr_expect_str_eq(h_str(r, "structuredContent.results.0.stdout"), "b\n");
	json_object_put(r);

	m = h_next_response(s, 30000);
	cr_assert(m != NULL);
	cr_expect_eq(h_int(m, "id"), id1);
	r = h_tool_result(m);
	cr_expect_str_eq(h_str(r, "structuredContent.results.0.stdout"), "a\n");
	json_object_put(r);

	h_stop(s, c1);
	h_stop(s, c2);
	free(c1);
	free(c2);
	h_finish(s);
}

Test(exec, concurrent_same_sandbox, .timeout = 120)
{
	struct h_server *s;
	json_object *m, *r;
	char *cid;
	long id1, id2;

	s = setup(&cid, NULL, NULL);
	id1 = h_send_exec(s, cid, "sleep 3; echo slow");
	id2 = h_send_exec(s, cid, "echo fast");

	m = h_wait_id(s, id2, 30000);
	cr_assert(m != NULL);
	r = h_tool_result(m);
	cr_expect_str_eq(
	    h_str(r, "structuredContent.results.0.stdout"), "fast\n");
	json_object_put(r);
	m = h_wait_id(s, id1, 30000);
	cr_assert(m != NULL);
	r = h_tool_result(m);
	cr_expect_str_eq(
	    h_str(r, "structuredContent.results.0.stdout"), "slow\n");
	json_object_put(r);
	teardown(s, cid);
}

Test(exec, ping_during_exec, .timeout = 90)
{
	struct h_server *s;
	json_object *m;
	long id1, id2;
	long long t0;
	char *cid;

	s = setup(&cid, NULL, NULL);
	id1 = h_send_exec(s, cid, "sleep 4");
	usleep(300000);
	t0 = h_now_ms();
	id2 = h_send_request(s, "ping", NULL);
	m = h_next_response(s, 10000);
	cr_assert(m != NULL);
	cr_expect_eq(h_int(m, "id"), id2, "ping not answered before the exec");
	cr_expect_lt(
	    h_now_ms() - t0, 1500, "ping took %lld ms", h_now_ms() - t0);
	json_object_put(m);
	m = h_wait_id(s, id1, 30000);
	cr_assert(m != NULL);
	json_object_put(h_tool_result(m));
	teardown(s, cid);
}

/* One command's result (results[0]); the caller puts it. */
static json_object *
exec_result(struct h_server *s, const char *cid, const char *cmd)
{
	json_object *r, *f;

	r = h_exec(s, cid, cmd, 60);
	f = h_first(r);
	cr_assert(!h_is_error(r) && h_int(f, "exit_code") == 0, "%s: %s", cmd,
	    h_text(r));
	json_object_get(f);
	json_object_put(r);
	return f;
}

/* dd reads a block of the given size into a buffer it has to touch. */
#define TOUCH_64M "dd if=/dev/zero of=/dev/null bs=64M count=1"
#define BUSY_300MS                                                             \
	"python3 -c 'import time\nwhile time.process_time() < 0.3: pass'"

Test(exec, accounting_per_run, .timeout = 120)
{
	struct h_server *s;
	json_object *f;
	char *cid;

	s = setup(&cid, NULL, NULL);
	f = exec_result(s, cid, TOUCH_64M);
	cr_expect_geq(h_int(f, "memory_peak_bytes"), 64 << 20, "%s",
	    json_object_to_json_string(f));
	json_object_put(f);

	/* The next run reports its own peak, not the sandbox's since start. */
	f = exec_result(s, cid, "true");
	cr_expect_gt(h_int(f, "memory_peak_bytes"), 0);
	cr_expect_lt(h_int(f, "memory_peak_bytes"), 32 << 20, "%s",
	    json_object_to_json_string(f));
	cr_expect_lt(h_num(f, "cpu_time_ms"), 300);
	json_object_put(f);

	/* 0.3 s of the process's own CPU time is in the sandbox's. */
	f = exec_result(s, cid, BUSY_300MS);
	cr_expect_geq(
	    h_num(f, "cpu_time_ms"), 300, "%s", json_object_to_json_string(f));
	/* No more than its two cores could give in that time. */
	cr_expect_leq(h_num(f, "cpu_time_ms"),
	    2.0 * (double)h_int(f, "duration_ms") + 50, "%s",
	    json_object_to_json_string(f));
	json_object_put(f);

	/* A sleeping command uses next to none. */
	f = exec_result(s, cid, "sleep 1");
	cr_expect_lt(
	    h_num(f, "cpu_time_ms"), 250, "%s", json_object_to_json_string(f));
	json_object_put(f);
	teardown(s, cid);
}

/* Runs that overlap each get the sandbox's peak while they ran. */
Test(exec, accounting_overlapping_runs, .timeout = 120)
{
	struct h_server *s;
	json_object *m, *r, *f;
	long id;
	char *cid;

	s = setup(&cid, NULL, NULL);
	id = h_send_exec(s, cid, "sleep 3");
	usleep(500000);
	f = exec_result(s, cid, TOUCH_64M);
	cr_expect_geq(h_int(f, "memory_peak_bytes"), 64 << 20);
	json_object_put(f);
	f = exec_result(s, cid, "true"); /* runs within the sleep too */
	cr_expect_lt(h_int(f, "memory_peak_bytes"), 32 << 20, "%s",
	    json_object_to_json_string(f));
	json_object_put(f);

	m = h_wait_id(s, id, 30000);
	cr_assert(m != NULL);
	r = h_tool_result(m);
	cr_expect_geq(h_int(r, "structuredContent.results.0.memory_peak_bytes"),
	    64 << 20, "the sleep spanned the 64 MiB run: %s",
	    json_object_to_json_string(r));
	json_object_put(r);

	f = exec_result(s, cid, "true");
	cr_expect_lt(h_int(f, "memory_peak_bytes"), 32 << 20, "%s",
	    json_object_to_json_string(f));
	json_object_put(f);
	teardown(s, cid);
}

Test(exec, memory_limit_oom, .timeout = 120)
{
	struct h_server *s;
	json_object *r, *f;
	char *cid;

	s = setup(&cid, "{\"memory_mb\":64}", NULL);
	r = h_exec(s, cid,
	    "python3 -c \"x = bytearray(512*1024*1024); print(len(x))\"", 60);
	f = h_first(r);
	/* Killed at the sandbox's limit: a result, not a tool error. */
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect(!h_bool(r, "structuredContent.success"),
	    "a 512 MB allocation worked in 64 MB: %s", h_text(r));
	cr_expect_neq(h_int(f, "exit_code"), 0);
	cr_expect(
	    h_bool(f, "oom_killed"), "oom_killed is false: %s", h_text(r));
	cr_expect(!h_bool(f, "timed_out"));
	/* It was killed at the limit: the run's peak is the limit. */
	cr_expect_geq(h_int(f, "memory_peak_bytes"), 60 << 20, "%s",
	    json_object_to_json_string(f));
	cr_expect_leq(h_int(f, "memory_peak_bytes"), 64 << 20);
	json_object_put(r);
	/* The sandbox lives on. */
	free(h_exec_ok(s, cid, "echo alive"));
	teardown(s, cid);
}
