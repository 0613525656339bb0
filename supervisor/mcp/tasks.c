/*
 * MCP tasks (protocol revision 2025-11-25): a tools/call that carries
 * params.task is answered at once with a CreateTaskResult, runs as an
 * ordinary call, and its result waits in the task for tasks/result.
 * tasks/get, tasks/list and tasks/cancel see and end the tasks of the
 * asking session only; notifications/tasks/status tells each change.
 *
 * A task lives in its session's list from its creation until its ttl
 * (from creation, at most --task-ttl-max; still running then, its call is
 * cancelled), until its session closes, or until it makes room for a new
 * one (the oldest finished task whose result was fetched, when the
 * session holds --max-tasks-per-session).  Results are kept as their
 * JSON text, counted: past --max-task-results-mb in all, or a quarter of
 * it in one session, the oldest result goes (fetched ones first) and its
 * task says so to tasks/result.  Its end takes it off the list,
 * answers the tasks/result requests still waiting, detaches its call
 * (which is cancelled if still running) and hands its memory to
 * defer_free() (core/core.h): nothing reaches a task but through its
 * session's list and its call, both cut here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "config.h"
#include "core.h"
#include "log.h"
#include "mcp.h"
#include "random.h"
#include "xmalloc.h"

#define TASK_TTL_MIN_MS 1000 /* a shorter ttl is raised to it */
#define TASK_POLL_MS 500 /* pollInterval suggested to clients */
#define TASKS_PAGE 20 /* tasks per tasks/list page */
#define TASK_WAITERS_MAX 8 /* tasks/result requests waiting on one task */
#define RELATED_TASK "io.modelcontextprotocol/related-task"

enum task_status { TASK_WORKING, TASK_COMPLETED, TASK_FAILED, TASK_CANCELLED };

static const char *const status_names[] = {
    [TASK_WORKING] = "working",
    [TASK_COMPLETED] = "completed",
    [TASK_FAILED] = "failed",
    [TASK_CANCELLED] = "cancelled",
};

/* A tasks/result request waiting for its task to end. */
struct waiter {
	json_object *id; /* the request's id, owned */
	TAILQ_ENTRY(waiter) entry;
};

struct task {
	struct session *sess;
	struct call *call; /* while it runs, else NULL */
	char id[33];
	unsigned long long seq; /* its place in the session: the cursor */
	enum task_status status;
	const char *message; /* statusMessage, static; NULL: none */
	char created[32], updated[32]; /* ISO 8601, UTC */
	long long ttl_ms;
	char *result; /* the tools/call result once it ended, as JSON */
	size_t result_len;
	int result_dropped; /* for --max-task-results-mb */
	int fetched; /* tasks/result delivered it */
	int creating; /* its tools/call not yet answered: no notification */
	struct event *expiry;
	TAILQ_HEAD(, waiter) waiters;
	int nwaiters;
	TAILQ_ENTRY(task) entry;
	TAILQ_ENTRY(task) kept; /* in results, while it holds one */
};

/* Tasks that hold a result, all sessions, in the order they ended. */
static TAILQ_HEAD(, task) results = TAILQ_HEAD_INITIALIZER(results);
static long long results_bytes;

static int
terminal(const struct task *t)
{
	return t->status != TASK_WORKING;
}

/* Now, as ISO 8601 with milliseconds (out holds 32). */
static void
now_iso(char *out)
{
	struct timespec ts;
	struct tm tm;
	char s[24];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	if (strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		s[0] = '\0';
	snprintf(out, 32, "%.19s.%03dZ", s, (int)(ts.tv_nsec / 1000000) % 1000);
}

/* The Task object of the protocol. */
static json_object *
task_json(const struct task *t)
{
	json_object *o;

	o = json_object_new_object();
	json_object_object_add(o, "taskId", json_object_new_string(t->id));
	json_object_object_add(
	    o, "status", json_object_new_string(status_names[t->status]));
	if (t->message != NULL)
		json_object_object_add(
		    o, "statusMessage", json_object_new_string(t->message));
	json_object_object_add(
	    o, "createdAt", json_object_new_string(t->created));
	json_object_object_add(
	    o, "lastUpdatedAt", json_object_new_string(t->updated));
	json_object_object_add(o, "ttl", json_object_new_int64(t->ttl_ms));
	json_object_object_add(
	    o, "pollInterval", json_object_new_int(TASK_POLL_MS));
	return o;
}

/* notifications/tasks/status, once the client knows the task. */
static void
task_notify(const struct task *t)
{
	json_object *n;

	if (t->creating || t->sess->closing)
		return;
	n = json_object_new_object();
	json_object_object_add(n, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(
	    n, "method", json_object_new_string("notifications/tasks/status"));
	json_object_object_add(n, "params", task_json(t));
	mcp_send(t->sess, n);
}

static void
task_set(struct task *t, enum task_status status, const char *message)
{
	t->status = status;
	t->message = message;
	now_iso(t->updated);
	task_notify(t);
}

/* Why an ended task has no result to give. */
static const char *
task_no_result(const struct task *t)
{
	if (t->result_dropped)
		return "the task's result was dropped: the results kept for "
		       "tasks/result are at most --max-task-results-mb, a "
		       "quarter of it per session, and older ones go first "
		       "(fetch results as their tasks end)";
	return "the task was cancelled: it has no result";
}

/* The answer to tasks/result (id borrowed) for a task that has ended. */
static json_object *
task_outcome(struct task *t, json_object *id)
{
	json_tokener *tok;
	json_object *r;

	if (t->result == NULL)
		return rpc_error(id, RPC_INVALID_PARAMS, task_no_result(t));
	tok = json_tokener_new();
	r = json_tokener_parse_ex(tok, t->result, (int)t->result_len);
	json_tokener_free(tok);
	if (r == NULL)
		return rpc_error(id, RPC_INTERNAL_ERROR,
		    "the task's result could not be read back");
	t->fetched = 1;
	return rpc_result(id, r);
}

/* The result goes: its bytes are nobody's any more. */
static void
task_result_drop(struct task *t)
{
	if (t->result == NULL)
		return;
	TAILQ_REMOVE(&results, t, kept);
	results_bytes -= (long long)t->result_len;
	t->sess->task_bytes -= (long long)t->result_len;
	free(t->result);
	t->result = NULL;
	t->result_len = 0;
}

/*
 * Keep the results within --max-task-results-mb in all and a quarter of
 * it for sess: the oldest go, fetched ones first, then the others (whose
 * tasks/result says so), never keep (the one just kept).
 */
static void
tasks_results_trim(struct session *sess, struct task *keep)
{
	long long all = sup.conf->max_task_results_mb * 1024LL * 1024;
	long long mine = all / 4;
	struct task *t, *next;
	int pass;

	for (pass = 0; pass < 2; pass++)
		for (t = TAILQ_FIRST(&results); t != NULL; t = next) {
			next = TAILQ_NEXT(t, kept);
			if (results_bytes <= all && sess->task_bytes <= mine)
				return;
			if (t == keep || (pass == 0 && !t->fetched) ||
			    (results_bytes <= all && t->sess != sess))
				continue;
			log_info("task %s: its result (%zu bytes) dropped for "
			         "--max-task-results-mb%s",
			    t->id, t->result_len,
			    t->fetched ? "" : " before it was fetched");
			t->result_dropped = 1;
			task_result_drop(t);
			mcp_limits.task_results_dropped++;
		}
}

/* Answer every waiting tasks/result: the outcome, or the error why. */
static void
task_answer_waiters(struct task *t, const char *why)
{
	struct waiter *w;

	while ((w = TAILQ_FIRST(&t->waiters)) != NULL) {
		TAILQ_REMOVE(&t->waiters, w, entry);
		t->nwaiters--;
		mcp_send(t->sess,
		    why != NULL ? rpc_error(w->id, RPC_INVALID_PARAMS, why)
		                : task_outcome(t, w->id));
		json_object_put(w->id);
		free(w);
	}
}

static void
task_free_mem(void *arg)
{
	struct task *t = arg;

	event_free(t->expiry);
	free(t);
}

/*
 * End a task: off its session's list, its waiters answered with why, its
 * call (if still running) detached and cancelled; freed from the loop.
 */
static void
task_drop(struct task *t, const char *why)
{
	struct session *sess = t->sess;
	struct call *c;

	TAILQ_REMOVE(&sess->tasks, t, entry);
	sess->ntasks--;
	event_del(t->expiry);
	task_result_drop(t);
	task_answer_waiters(t, why);
	if ((c = t->call) != NULL) {
		t->call = NULL;
		c->task = NULL;
		mcp_call_cancel(c);
	}
	defer_free(task_free_mem, t);
}

static void
task_expiry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct task *t = arg;

	(void)fd;
	(void)what;
	log_info("task %s: its ttl of %lld ms has passed%s", t->id, t->ttl_ms,
	    terminal(t) ? "" : " (still running: cancelled)");
	task_drop(t, "the task's ttl has passed: it and its result are gone");
}

/* This session's task of that id (a string, borrowed), or NULL. */
static struct task *
task_find(
    struct session *sess, json_object *params, int *code, const char **why)
{
	json_object *v;
	struct task *t;
	const char *id;

	*code = RPC_INVALID_PARAMS;
	if (params == NULL || !json_object_is_type(params, json_type_object) ||
	    !json_object_object_get_ex(params, "taskId", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		*why = "params.taskId (a string) is needed";
		return NULL;
	}
	id = json_object_get_string(v);
	if (json_object_get_string_len(v) <= TASK_ID_MAX) {
		TAILQ_FOREACH(t, &sess->tasks, entry)
		{
			if (strcmp(t->id, id) == 0)
				return t;
		}
	}
	*why = "task not found: not a task of this session, or its ttl has "
	       "passed";
	return NULL;
}

/* The tasks capability of the server (initialize). */
json_object *
tasks_capability(void)
{
	json_object *caps, *req, *tools;

	caps = json_object_new_object();
	json_object_object_add(caps, "list", json_object_new_object());
	json_object_object_add(caps, "cancel", json_object_new_object());
	tools = json_object_new_object();
	json_object_object_add(tools, "call", json_object_new_object());
	req = json_object_new_object();
	json_object_object_add(req, "tools", tools);
	json_object_object_add(caps, "requests", req);
	return caps;
}

/* Room for one more task in the session, or -1. */
static int
tasks_room(struct session *sess)
{
	struct task *t;

	if (sess->ntasks < sup.conf->max_tasks_per_session)
		return 0;
	TAILQ_FOREACH(t, &sess->tasks, entry)
	if (terminal(t) && t->fetched) {
		task_drop(t, NULL);
		return 0;
	}
	return -1;
}

/*
 * A new task for a task-augmented tools/call (params.task, borrowed), or
 * NULL with *code and *why.  The ttl asked for is kept between
 * TASK_TTL_MIN_MS and --task-ttl-max.
 */
struct task *
tasks_new(struct session *sess, json_object *task, int *code, const char **why)
{
	json_object *v;
	struct task *t;
	long long max_ms = sup.conf->task_ttl_max * 1000LL, ttl = max_ms;
	double d;
	struct timeval tv;

	*code = RPC_INVALID_PARAMS;
	if (!json_object_is_type(task, json_type_object)) {
		*why = "params.task must be an object ({\"ttl\": ms})";
		return NULL;
	}
	if (json_object_object_get_ex(task, "ttl", &v) && v != NULL) {
		if (!json_object_is_type(v, json_type_int) &&
		    !json_object_is_type(v, json_type_double)) {
			*why =
			    "params.task.ttl must be a number of milliseconds";
			return NULL;
		}
		d = json_object_get_double(v);
		if (!isfinite(d) || d > (double)max_ms)
			ttl = max_ms;
		else if (d < TASK_TTL_MIN_MS)
			ttl = TASK_TTL_MIN_MS;
		else
			ttl = (long long)d;
	}
	if (tasks_room(sess) == -1) {
		*code = RPC_INVALID_REQUEST;
		*why =
		    "too many tasks in this session (the limit of "
		    "--max-tasks-per-session): fetch the results of finished "
		    "ones with tasks/result, cancel some, or wait for their "
		    "ttl to pass";
		return NULL;
	}
	t = xcalloc(1, sizeof *t);
	t->sess = sess;
	random_hex(t->id, 16);
	t->seq = ++sess->last_task_seq;
	t->status = TASK_WORKING;
	t->ttl_ms = ttl;
	t->creating = 1;
	now_iso(t->created);
	memcpy(t->updated, t->created, sizeof t->updated);
	TAILQ_INIT(&t->waiters);
	t->expiry = evtimer_new(sup.base, task_expiry_cb, t);
	tv.tv_sec = ttl / 1000;
	tv.tv_usec = (ttl % 1000) * 1000;
	evtimer_add(t->expiry, &tv);
	TAILQ_INSERT_TAIL(&sess->tasks, t, entry);
	sess->ntasks++;
	return t;
}

/* The task's call, started. */
void
tasks_attach(struct task *t, struct call *c)
{
	t->call = c;
}

/* The CreateTaskResult answering the task's tools/call. */
json_object *
tasks_created(struct task *t)
{
	json_object *r;

	r = json_object_new_object();
	json_object_object_add(r, "task", task_json(t));
	return r;
}

/* Its tools/call was answered: status changes are told from now on. */
void
tasks_announced(struct task *t)
{
	t->creating = 0;
}

/*
 * The task's call (or the checks before it) ended with this tool result
 * (taken): completed, or failed when isError; the waiters get it.
 */
void
tasks_finish(struct task *t, json_object *result)
{
	json_object *meta, *rel, *err;
	const char *s;
	int failed;

	if (terminal(t)) { /* cancelled: the result is no one's */
		json_object_put(result);
		return;
	}
	if (!json_object_object_get_ex(result, "_meta", &meta) ||
	    !json_object_is_type(meta, json_type_object)) {
		meta = json_object_new_object();
		json_object_object_add(result, "_meta", meta);
	}
	rel = json_object_new_object();
	json_object_object_add(rel, "taskId", json_object_new_string(t->id));
	json_object_object_add(meta, RELATED_TASK, rel);
	failed = json_object_object_get_ex(result, "isError", &err) &&
	         json_object_get_boolean(err);
	/* Kept as text: what it holds is what is counted. */
	s = json_object_to_json_string_length(result,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
	    &t->result_len);
	t->result = xmalloc(t->result_len + 1);
	memcpy(t->result, s, t->result_len + 1);
	json_object_put(result);
	TAILQ_INSERT_TAIL(&results, t, kept);
	results_bytes += (long long)t->result_len;
	t->sess->task_bytes += (long long)t->result_len;
	tasks_results_trim(t->sess, t);
	task_set(t, failed ? TASK_FAILED : TASK_COMPLETED,
	    failed ? "the tool reported an error: see tasks/result" : NULL);
	task_answer_waiters(t, NULL);
}

/* A task-augmented call answered (result taken); mcp_call_reply(). */
void
tasks_call_done(struct call *c, json_object *result)
{
	struct task *t = c->task;

	c->task = NULL;
	t->call = NULL;
	if (c->cancelled)
		json_object_put(result);
	else
		tasks_finish(t, result);
}

/* The session closes: its tasks go, their calls cancelled. */
void
tasks_session_close(struct session *sess)
{
	struct task *t;

	while ((t = TAILQ_FIRST(&sess->tasks)) != NULL)
		task_drop(t, "the session has ended");
}

/*
 * notifications/cancelled of a waiting tasks/result (id borrowed): it
 * waits no more, unanswered.  1 if it was one.
 */
int
tasks_cancel_waiter(struct session *sess, json_object *id)
{
	struct task *t;
	struct waiter *w;

	TAILQ_FOREACH(t, &sess->tasks, entry)
	TAILQ_FOREACH(w, &t->waiters, entry)
	if (json_object_equal(w->id, id)) {
		TAILQ_REMOVE(&t->waiters, w, entry);
		t->nwaiters--;
		json_object_put(w->id);
		free(w);
		return 1;
	}
	return 0;
}

/* Sessions of older revisions have no tasks: the methods do not exist. */
static int
tasks_speaks(struct session *sess, int *code, const char **why)
{
	if (sess->rev >= REV_2025_11_25)
		return 1;
	*code = RPC_METHOD_NOT_FOUND;
	*why = "method not found (tasks need protocol revision 2025-11-25)";
	return 0;
}

/* tasks/get: the task's state. */
json_object *
tasks_get(struct session *sess, json_object *id, json_object *params, int *code,
    const char **why)
{
	struct task *t;

	(void)id;
	if (!tasks_speaks(sess, code, why) ||
	    (t = task_find(sess, params, code, why)) == NULL)
		return NULL;
	return task_json(t);
}

/* tasks/result: the tool's result once the task has ended; waits till then. */
json_object *
tasks_result(struct session *sess, json_object *id, json_object *params,
    int *code, const char **why)
{
	struct task *t;
	struct waiter *w;
	json_object *msg, *r, *e, *v;

	if (!tasks_speaks(sess, code, why) ||
	    (t = task_find(sess, params, code, why)) == NULL)
		return NULL;
	if (terminal(t)) {
		/* The result goes as it is; an error as the error. */
		msg = task_outcome(t, id);
		r = NULL;
		if (json_object_object_get_ex(msg, "result", &v))
			r = json_object_get(v);
		else if (json_object_object_get_ex(msg, "error", &e) &&
		         json_object_object_get_ex(e, "code", &v)) {
			*code = json_object_get_int(v);
			*why = t->result == NULL
			           ? task_no_result(t)
			           : "the task's result could not be read back";
		}
		json_object_put(msg);
		return r;
	}
	if (t->nwaiters >= TASK_WAITERS_MAX) {
		*code = RPC_INVALID_REQUEST;
		*why = "too many tasks/result requests wait on this task";
		return NULL;
	}
	w = xcalloc(1, sizeof *w);
	w->id = json_object_get(id);
	TAILQ_INSERT_TAIL(&t->waiters, w, entry);
	t->nwaiters++;
	*code = 0; /* answered when the task ends */
	return NULL;
}

/* tasks/list: this session's tasks, oldest first, TASKS_PAGE a page. */
json_object *
tasks_list(struct session *sess, json_object *id, json_object *params,
    int *code, const char **why)
{
	json_object *v, *r, *list;
	unsigned long long from = 1, n;
	const char *cursor;
	struct task *t;
	char *end, next[32];
	int count = 0;

	(void)id;
	if (!tasks_speaks(sess, code, why))
		return NULL;
	if (params != NULL && json_object_is_type(params, json_type_object) &&
	    json_object_object_get_ex(params, "cursor", &v) && v != NULL) {
		cursor = json_object_is_type(v, json_type_string)
		             ? json_object_get_string(v)
		             : "";
		/* Only a seq this session has given, in decimal. */
		n = strtoull(cursor, &end, 10);
		if (*cursor < '1' || *cursor > '9' || *end != '\0' ||
		    strlen(cursor) > 20 || n > sess->last_task_seq) {
			*code = RPC_INVALID_PARAMS;
			*why = "invalid cursor (give back a nextCursor as it "
			       "came)";
			return NULL;
		}
		from = n;
	}
	r = json_object_new_object();
	list = json_object_new_array();
	TAILQ_FOREACH(t, &sess->tasks, entry)
	{
		if (t->seq < from)
			continue;
		if (count == TASKS_PAGE) {
			snprintf(next, sizeof next, "%llu", t->seq);
			json_object_object_add(
			    r, "nextCursor", json_object_new_string(next));
			break;
		}
		json_object_array_add(list, task_json(t));
		count++;
	}
	json_object_object_add(r, "tasks", list);
	return r;
}

/* tasks/cancel: a running task is cancelled, its commands killed. */
json_object *
tasks_cancel(struct session *sess, json_object *id, json_object *params,
    int *code, const char **why)
{
	struct task *t;
	struct call *c;

	(void)id;
	if (!tasks_speaks(sess, code, why) ||
	    (t = task_find(sess, params, code, why)) == NULL)
		return NULL;
	if (terminal(t)) {
		*code = RPC_INVALID_PARAMS;
		*why = t->status == TASK_CANCELLED
		           ? "cannot cancel the task: it is already cancelled"
		       : t->status == TASK_COMPLETED
		           ? "cannot cancel the task: it has already completed"
		           : "cannot cancel the task: it has already failed";
		return NULL;
	}
	log_info("task %s cancelled by the client", t->id);
	task_set(t, TASK_CANCELLED, "cancelled by the client (tasks/cancel)");
	task_answer_waiters(t, NULL);
	if ((c = t->call) != NULL) {
		t->call = NULL;
		c->task = NULL;
		mcp_call_cancel(c);
	}
	return task_json(t);
}
