/* Integration: MCP tasks (2025-11-25) over stdio, raw JSON-RPC. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

/* A request with params as JSON text; the whole answer. */
static json_object *
rq(struct h_server *s, const char *method, const char *params)
{
	return h_request(s, method, params, H_TIMEOUT_MS);
}

/* The code of an error answer, 0 for a result. */
static long long
err_code(json_object *m)
{
	return h_get(m, "error") != NULL ? h_int(m, "error.code") : 0;
}

/* A task-augmented tools/call (args JSON text, task JSON text): the
 * answer. */
static json_object *
call_as_task(
    struct h_server *s, const char *tool, const char *args, const char *task)
{
	char *p;
	json_object *m;

	if (asprintf(&p, "{\"name\":\"%s\",\"arguments\":%s,\"task\":%s}", tool,
	        args, task) == -1)
		abort();
	m = rq(s, "tools/call", p);
	free(p);
	return m;
}

/* The taskId of a CreateTaskResult (copied). */
static char *
created_id(json_object *m)
{
	const char *id = h_str(m, "result.task.taskId");

	cr_assert(
	    id != NULL, "no task: %.1000s", json_object_to_json_string(m));
	return strdup(id);
}

/* A request naming a task ({"taskId": id}). */
static json_object *
on_task(struct h_server *s, const char *method, const char *id)
{
	char p[256];

	snprintf(p, sizeof p, "{\"taskId\":\"%s\"}", id);
	return rq(s, method, p);
}

/* The status tasks/get gives. */
static char *
status_of(struct h_server *s, const char *id)
{
	json_object *m = on_task(s, "tasks/get", id);
	const char *st = h_str(m, "result.status");
	char *r = strdup(st != NULL ? st : "(none)");

	json_object_put(m);
	return r;
}

/* A task that fails at once: sandbox_exec without its arguments. */
static char *
failed_task(struct h_server *s)
{
	json_object *m;
	char *id;

	m = call_as_task(s, "sandbox_exec", "{}", "{}");
	id = created_id(m);
	json_object_put(m);
	return id;
}

static int
sandbox_runs(struct h_server *s, const char *cid, const char *what)
{
	char *out;
	int found;

	out = h_exec_ok(s, cid, "ps -eo args");
	found = h_contains(out, what);
	free(out);
	return found;
}

Test(tasks, capability_only_from_2025_11_25, .timeout = 60)
{
	struct h_server *s;
	json_object *init, *m, *t;
	size_t i;

	s = h_start(NULL);
	init = h_initialize(s);
	cr_expect(h_get(init, "capabilities.tasks.requests.tools.call") != NULL,
	    "%s", json_object_to_json_string(init));
	cr_expect(h_get(init, "capabilities.tasks.list") != NULL);
	cr_expect(h_get(init, "capabilities.tasks.cancel") != NULL);
	json_object_put(init);
	m = rq(s, "tools/list", NULL);
	for (i = 0; (t = h_get(m, "result.tools")) != NULL &&
	            i < json_object_array_length(t);
	     i++) {
		json_object *tool = json_object_array_get_idx(t, i);
		const char *name = h_str(tool, "name");
		const char *ts = h_str(tool, "execution.taskSupport");
		int long_one = strcmp(name, "sandbox_exec") == 0 ||
		               strcmp(name, "execute_code") == 0 ||
		               strcmp(name, "run_project") == 0 ||
		               strcmp(name, "install_package") == 0 ||
		               strcmp(name, "create_run_close") == 0 ||
		               strcmp(name, "sandbox_snapshot") == 0 ||
		               strcmp(name, "sandbox_restore") == 0 ||
		               strncmp(name, "copy_", 5) == 0;

		if (long_one)
			cr_expect(ts != NULL && strcmp(ts, "optional") == 0,
			    "%s: taskSupport %s", name, ts);
		else
			cr_expect(h_get(tool, "execution") == NULL, "%s", name);
	}
	json_object_put(m);
	h_finish(s);

	/* 2025-06-18: no capability, no execution, params.task ignored. */
	s = h_start(NULL);
	m = rq(s, "initialize",
	    "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
	    "\"clientInfo\":{\"name\":\"old\",\"version\":\"1\"}}");
	cr_expect_str_eq(h_str(m, "result.protocolVersion"), "2025-06-18");
	cr_expect(h_get(m, "result.capabilities.tools") != NULL);
	cr_expect(h_get(m, "result.capabilities.tasks") == NULL, "%s",
	    json_object_to_json_string(m));
	json_object_put(m);
	h_send_notification(s, "notifications/initialized", NULL);
	m = rq(s, "tools/list", NULL);
	cr_expect(!h_contains(json_object_to_json_string(m), "taskSupport"));
	json_object_put(m);
	m = call_as_task(s, "sandbox_exec", "{}", "{\"ttl\":1000}");
	cr_expect(h_get(m, "result.task") == NULL);
	cr_expect(h_bool(m, "result.isError"), "an ordinary tool result: %s",
	    json_object_to_json_string(m));
	json_object_put(m);
	m = rq(s, "tasks/list", NULL);
	cr_expect_eq(err_code(m), -32601);
	json_object_put(m);
	h_finish(s);
}

Test(tasks, exec_as_task_then_result, .timeout = 120)
{
	struct h_server *s;
	json_object *m, *n, *rel;
	char *cid, *id, *st, args[256];
	long long t0;
	size_t i;
	int told = 0;

	s = h_start(NULL);
	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	snprintf(args, sizeof args,
	    "{\"container_id\":\"%s\",\"commands\":[\"sleep 2; echo done\"]}",
	    cid);
	t0 = h_now_ms();
	m = call_as_task(s, "sandbox_exec", args, "{\"ttl\":60000}");
	cr_expect_lt(h_now_ms() - t0, 1500, "the task comes at once");
	cr_expect_str_eq(h_str(m, "result.task.status"), "working");
	cr_expect_eq(h_int(m, "result.task.ttl"), 60000);
	cr_expect(h_str(m, "result.task.createdAt") != NULL);
	cr_expect(h_str(m, "result.task.lastUpdatedAt") != NULL);
	cr_expect(h_get(m, "result.task.pollInterval") != NULL);
	cr_expect(h_get(m, "result.content") == NULL);
	id = created_id(m);
	json_object_put(m);

	st = status_of(s, id);
	cr_expect_str_eq(st, "working");
	free(st);
	m = on_task(s, "tasks/result", id); /* waits for the end */
	cr_expect_geq(h_now_ms() - t0, 1900, "tasks/result waited");
	cr_expect(
	    !h_bool(m, "result.isError"), "%s", json_object_to_json_string(m));
	cr_expect_str_eq(
	    h_str(m, "result.structuredContent.results.0.stdout"), "done\n");
	rel = NULL;
	if (h_get(m, "result._meta") != NULL)
		json_object_object_get_ex(h_get(m, "result._meta"),
		    "io.modelcontextprotocol/related-task", &rel);
	cr_expect(rel != NULL && h_str(rel, "taskId") != NULL &&
	              strcmp(h_str(rel, "taskId"), id) == 0,
	    "the related-task _meta: %s", json_object_to_json_string(m));
	json_object_put(m);
	st = status_of(s, id);
	cr_expect_str_eq(st, "completed");
	free(st);
	/* Again: the same result, for the ttl. */
	m = on_task(s, "tasks/result", id);
	cr_expect_str_eq(
	    h_str(m, "result.structuredContent.results.0.stdout"), "done\n");
	json_object_put(m);
	for (i = 0; i < json_object_array_length(s->notes); i++) {
		n = json_object_array_get_idx(s->notes, i);
		if (h_str(n, "method") != NULL &&
		    strcmp(h_str(n, "method"), "notifications/tasks/status") ==
		        0 &&
		    strcmp(h_str(n, "params.taskId"), id) == 0 &&
		    strcmp(h_str(n, "params.status"), "completed") == 0)
			told = 1;
	}
	cr_expect(told, "notifications/tasks/status told the completion");
	free(id);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

Test(tasks, errors, .timeout = 60)
{
	struct h_server *s;
	json_object *m;
	char *id, *big, *st;
	size_t i;

	s = h_start(NULL);
	json_object_put(h_initialize(s));
	m = on_task(s, "tasks/get", "0123456789abcdef0123456789abcdef");
	cr_expect_eq(err_code(m), -32602, "unknown task");
	json_object_put(m);
	m = rq(s, "tasks/result", "{\"taskId\":42}");
	cr_expect_eq(err_code(m), -32602, "a taskId that is not a string");
	json_object_put(m);
	m = rq(s, "tasks/cancel", NULL);
	cr_expect_eq(err_code(m), -32602, "no params");
	json_object_put(m);
	big = malloc(100003);
	big[0] = '\0';
	for (i = 0; i < 10000; i++)
		strcat(big, "abcdefghij");
	{
		char *p;

		if (asprintf(&p, "{\"taskId\":\"%s\"}", big) == -1)
			abort();
		m = rq(s, "tasks/get", p);
		free(p);
	}
	cr_expect_eq(err_code(m), -32602, "a huge taskId");
	json_object_put(m);
	free(big);

	/* A tool without task support, asked as a task: -32601. */
	m = call_as_task(s, "sandbox_stop", "{\"container_id\":\"x\"}", "{}");
	cr_expect_eq(err_code(m), -32601, "%s", json_object_to_json_string(m));
	json_object_put(m);
	m = call_as_task(s, "sandbox_exec", "{}", "[]");
	cr_expect_eq(err_code(m), -32602, "task must be an object");
	json_object_put(m);
	m = call_as_task(s, "sandbox_exec", "{}", "{\"ttl\":\"soon\"}");
	cr_expect_eq(err_code(m), -32602, "ttl must be a number");
	json_object_put(m);
	/* ttl out of bounds is brought back between 1 s and the cap. */
	m = call_as_task(s, "sandbox_exec", "{}", "{\"ttl\":1e300}");
	cr_expect_eq(h_int(m, "result.task.ttl"), 3600000LL, "%s",
	    json_object_to_json_string(m));
	json_object_put(m);
	m = call_as_task(s, "sandbox_exec", "{}", "{\"ttl\":-5}");
	cr_expect_eq(h_int(m, "result.task.ttl"), 1000);
	json_object_put(m);

	/* Refused arguments: the task exists and has failed. */
	id = failed_task(s);
	st = status_of(s, id);
	cr_expect_str_eq(st, "failed");
	free(st);
	m = on_task(s, "tasks/result", id);
	cr_expect(
	    h_bool(m, "result.isError"), "%s", json_object_to_json_string(m));
	json_object_put(m);
	m = on_task(s, "tasks/cancel", id);
	cr_expect_eq(err_code(m), -32602, "cancel of a finished task");
	json_object_put(m);
	free(id);

	m = rq(s, "tasks/list", "{\"cursor\":\"abc\"}");
	cr_expect_eq(err_code(m), -32602, "a cursor we never gave");
	json_object_put(m);
	m = rq(s, "tasks/list", "{\"cursor\":\"99999999999999999999999\"}");
	cr_expect_eq(err_code(m), -32602);
	json_object_put(m);
	m = rq(s, "tasks/list", "{\"cursor\":7}");
	cr_expect_eq(err_code(m), -32602);
	json_object_put(m);
	h_finish(s);
}

Test(tasks, cap_per_session, .timeout = 60)
{
	const char *const extra[] = {"--max-tasks-per-session", "2", NULL};
	struct h_server *s;
	json_object *m;
	char *a, *b, *c;

	s = h_startv(extra);
	json_object_put(h_initialize(s));
	a = failed_task(s);
	b = failed_task(s);
	m = call_as_task(s, "sandbox_exec", "{}", "{}");
	cr_expect_eq(err_code(m), -32600, "%s", json_object_to_json_string(m));
	cr_expect(h_contains(
	    h_str(m, "error.message") ? h_str(m, "error.message") : "",
	    "--max-tasks-per-session"));
	json_object_put(m);
	/* A fetched result makes room. */
	json_object_put(on_task(s, "tasks/result", a));
	c = failed_task(s);
	m = on_task(s, "tasks/get", a);
	cr_expect_eq(err_code(m), -32602, "the fetched task made room");
	json_object_put(m);
	m = on_task(s, "tasks/get", b);
	cr_expect_eq(err_code(m), 0, "the unfetched one stays");
	json_object_put(m);
	free(a);
	free(b);
	free(c);
	h_finish(s);
}

Test(tasks, list_paginates, .timeout = 60)
{
	struct h_server *s;
	json_object *m;
	char *ids[25], p[128];
	const char *cur;
	int i;

	s = h_start(NULL);
	json_object_put(h_initialize(s));
	for (i = 0; i < 25; i++)
		ids[i] = failed_task(s);
	m = rq(s, "tasks/list", "{}");
	cr_expect_eq(json_object_array_length(h_get(m, "result.tasks")), 20);
	cr_expect_str_eq(h_str(m, "result.tasks.0.taskId"), ids[0]);
	cur = h_str(m, "result.nextCursor");
	cr_assert(cur != NULL);
	snprintf(p, sizeof p, "{\"cursor\":\"%s\"}", cur);
	json_object_put(m);
	m = rq(s, "tasks/list", p);
	cr_expect_eq(json_object_array_length(h_get(m, "result.tasks")), 5);
	cr_expect_str_eq(h_str(m, "result.tasks.0.taskId"), ids[20]);
	cr_expect_str_eq(h_str(m, "result.tasks.4.taskId"), ids[24]);
	cr_expect(h_get(m, "result.nextCursor") == NULL);
	json_object_put(m);
	for (i = 0; i < 25; i++)
		free(ids[i]);
	h_finish(s);
}

Test(tasks, cancel_kills_the_command, .timeout = 120)
{
	struct h_server *s;
	json_object *m;
	char *cid, *id, args[256], p[128];
	long wid;
	int i;

	s = h_start(NULL);
	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	snprintf(args, sizeof args,
	    "{\"container_id\":\"%s\",\"commands\":[\"sleep 301\"]}", cid);
	m = call_as_task(s, "sandbox_exec", args, "{}");
	id = created_id(m);
	json_object_put(m);
	snprintf(p, sizeof p, "{\"taskId\":\"%s\"}", id);
	wid = h_send_request(s, "tasks/result", p);
	for (i = 0; i < 50 && !sandbox_runs(s, cid, "sleep 301"); i++)
		usleep(100000);
	cr_expect(sandbox_runs(s, cid, "sleep 301"), "the command runs");
	m = on_task(s, "tasks/cancel", id);
	cr_expect_str_eq(h_str(m, "result.status"), "cancelled", "%s",
	    json_object_to_json_string(m));
	json_object_put(m);
	m = h_wait_id(s, wid, 10000);
	cr_assert(m != NULL, "the waiting tasks/result is answered");
	cr_expect_eq(err_code(m), -32602);
	json_object_put(m);
	for (i = 0; i < 100 && sandbox_runs(s, cid, "sleep 301"); i++)
		usleep(100000);
	cr_expect(!sandbox_runs(s, cid, "sleep 301"), "the command was killed");
	m = on_task(s, "tasks/cancel", id);
	cr_expect_eq(err_code(m), -32602, "already cancelled");
	json_object_put(m);
	free(id);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

Test(tasks, ttl_expiry, .timeout = 120)
{
	struct h_server *s;
	json_object *m;
	char *cid, *done, *running, args[256], p[128];
	long wid;
	int i;

	s = h_start(NULL);
	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	m = call_as_task(s, "sandbox_exec", "{}", "{\"ttl\":1500}");
	done = created_id(m);
	json_object_put(m);
	snprintf(args, sizeof args,
	    "{\"container_id\":\"%s\",\"commands\":[\"sleep 302\"]}", cid);
	m = call_as_task(s, "sandbox_exec", args, "{\"ttl\":2500}");
	running = created_id(m);
	json_object_put(m);
	snprintf(p, sizeof p, "{\"taskId\":\"%s\"}", running);
	wid = h_send_request(s, "tasks/result", p);
	m = on_task(s, "tasks/get", done);
	cr_expect_eq(err_code(m), 0);
	json_object_put(m);
	usleep(1800000);
	m = on_task(s, "tasks/get", done);
	cr_expect_eq(err_code(m), -32602, "gone after its ttl");
	json_object_put(m);
	m = h_wait_id(s, wid, 5000);
	cr_assert(m != NULL, "the waiting tasks/result is answered at expiry");
	cr_expect_eq(err_code(m), -32602);
	json_object_put(m);
	m = on_task(s, "tasks/get", running);
	cr_expect_eq(err_code(m), -32602);
	json_object_put(m);
	for (i = 0; i < 100 && sandbox_runs(s, cid, "sleep 302"); i++)
		usleep(100000);
	cr_expect(!sandbox_runs(s, cid, "sleep 302"),
	    "a running task's command is killed at its ttl");
	free(done);
	free(running);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}
