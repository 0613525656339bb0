/*
 * MCP over JSON-RPC: the lifecycle (initialize, initialized, ping),
 * logging, tools, and cancellation.  Transport-neutral: lines come in
 * through mcp_handle_line(), messages leave through mcp_send().
 *
 * The server's own requests to the client (mcp_call_request(), for
 * sampling and elicitation during a tools/call) and the messages tied to
 * a call (mcp_call_log()) are used by nothing in the server proper, only
 * by the conformance fixtures (-Dfixtures=true).
 *
 * Lifetimes (core/core.h): a session ends with mcp_session_close(), which
 * marks it closing (nothing more is sent), cancels its calls and has the
 * layers above end what it owns (its sandboxes: the session_close hook);
 * then it is gone, and freed from the event loop once its last call was
 * answered.  A call ends with mcp_call_reply(): it leaves its session's
 * list at once, and its memory goes from the event loop.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "core.h"
#include "log.h"
#include "mcp.h"
#include "random.h"
#include "version.h"
#include "xmalloc.h"

/* A request of the server to the client, awaiting its answer. */
struct sreq {
	struct call *call; /* the tools/call it serves */
	json_object *id;
	sreq_done done;
	TAILQ_ENTRY(sreq) entry;
};

static TAILQ_HEAD(, session) sessions = TAILQ_HEAD_INITIALIZER(sessions);
static unsigned int next_session_id = 1;
static long ncalls; /* calls in flight, every session (--max-calls) */
static struct mcp_hooks hooks;

/* What the layers above do when sessions and calls end (mcp.h). */
void
mcp_hooks_set(const struct mcp_hooks *h)
{
	hooks = *h;
}

/* syslog severities, as MCP names them; notifications at or above. */
static const char *const mcp_levels[] = {"emergency", "alert", "critical",
    "error", "warning", "notice", "info", "debug"};

/* A new client session; send(sess, msg) delivers its messages. */
struct session *
mcp_session_new(void (*send)(struct session *, json_object *), void *transport)
{
	struct session *sess;

	sess = xcalloc(1, sizeof *sess);
	sess->id = next_session_id++;
	memcpy(sess->principal, "session-", 8);
	random_hex(sess->principal + 8, 16);
	sess->send = send;
	sess->transport = transport;
	sess->log_level = 5; /* notice */
	sess->rev = REV_LATEST;
	sess->subs = json_object_new_object();
	TAILQ_INIT(&sess->calls);
	TAILQ_INIT(&sess->sreqs);
	TAILQ_INIT(&sess->tasks);
	TAILQ_INSERT_TAIL(&sessions, sess, entry);
	return sess;
}

static void
session_free(void *arg)
{
	struct session *sess = arg;

	json_object_put(sess->subs);
	json_object_put(sess->client_caps);
	free(sess);
}

/* Gone, and no call names it any more: out of the list, freed later. */
static void
session_maybe_free(struct session *sess)
{
	if (!sess->gone || !TAILQ_EMPTY(&sess->calls) || sess->freeing)
		return;
	sess->freeing = 1;
	TAILQ_REMOVE(&sessions, sess, entry);
	defer_free(session_free, sess);
}

static void
session_sandboxes_gone(void *arg)
{
	struct session *sess = arg;

	/* Freed with its last call, if some still wait for a worker. */
	sess->gone = 1;
	session_maybe_free(sess);
}

/*
 * Cancel a call (no answer goes out): the tool's own hook, then the
 * commands it runs in sandboxes are killed, whatever the tool.
 */
void
mcp_call_cancel(struct call *c)
{
	if (c->cancelled)
		return;
	c->cancelled = 1;
	progress_end(c);
	if (c->cancel != NULL)
		c->cancel(c);
	if (!c->answered && hooks.call_cancel != NULL)
		hooks.call_cancel(c);
}

/*
 * The client went away: its calls are cancelled (no answers go out) and
 * its sandboxes removed; then the session is freed.
 */
void
mcp_session_close(struct session *sess)
{
	struct call *c, *next;

	if (sess->closing)
		return;
	sess->closing = 1;
	/* Its tasks go first, their calls cancelled with them. */
	tasks_session_close(sess);
	/* A cancel may answer its call (which leaves the list). */
	for (c = TAILQ_FIRST(&sess->calls); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		mcp_call_cancel(c);
	}
	if (hooks.session_close != NULL)
		hooks.session_close(sess, session_sandboxes_gone, sess);
	else
		session_sandboxes_gone(sess);
}

/* Send a message (taken) to a session's client. */
void
mcp_send(struct session *sess, json_object *msg)
{
	if (sess->closing)
		json_object_put(msg);
	else
		sess->send(sess, msg);
}

static json_object *
log_message(int level, const char *text)
{
	json_object *n, *p;

	n = json_object_new_object();
	json_object_object_add(n, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(
	    n, "method", json_object_new_string("notifications/message"));
	p = json_object_new_object();
	json_object_object_add(
	    p, "level", json_object_new_string(mcp_levels[level]));
	json_object_object_add(
	    p, "logger", json_object_new_string("mcp-sandboxd"));
	json_object_object_add(p, "data", json_object_new_string(text));
	json_object_object_add(n, "params", p);
	return n;
}

/*
 * A notifications/message to a session (NULL: every session), if its
 * level asks for it.
 */
void
mcp_log(struct session *only, int level, const char *fmt, ...)
{
	struct session *sess;
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	TAILQ_FOREACH(sess, &sessions, entry)
	{
		if ((only != NULL && sess != only) || !sess->initialized ||
		    level > sess->log_level)
			continue;
		mcp_send(sess, log_message(level, buf));
	}
}

/*
 * A notification without params (notifications/resources/list_changed)
 * to one session if it is still there (only is not dereferenced: it may
 * be gone), once it is initialized.
 */
void
mcp_notify(const struct session *only, const char *method)
{
	struct session *sess;
	json_object *n;

	TAILQ_FOREACH(sess, &sessions, entry)
	{
		if (sess != only || !sess->initialized)
			continue;
		n = json_object_new_object();
		json_object_object_add(
		    n, "jsonrpc", json_object_new_string("2.0"));
		json_object_object_add(
		    n, "method", json_object_new_string(method));
		mcp_send(sess, n);
	}
}

/* A message (taken) that belongs to a call, on its stream if any. */
static void
mcp_send_for(struct call *c, json_object *msg)
{
	struct session *sess = c->sess;

	if (sess->closing)
		json_object_put(msg);
	else if (sess->send_for != NULL)
		sess->send_for(sess, c->id, msg);
	else
		sess->send(sess, msg);
}

/* A notifications/message about a call, if the session's level asks. */
void
mcp_call_log(struct call *c, int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (level > c->sess->log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	mcp_send_for(c, log_message(level, buf));
}

/* Did the client declare this capability at initialize? */
int
mcp_client_has(struct session *sess, const char *cap)
{
	return sess->client_caps != NULL &&
	       json_object_object_get_ex(sess->client_caps, cap, NULL);
}

/*
 * Ask the client something (sampling/createMessage, elicitation/create)
 * for a call; params are taken.  done(c, result, error) runs when the
 * answer comes, and never if the call ends first.
 */
void
mcp_call_request(
    struct call *c, const char *method, json_object *params, sreq_done done)
{
	struct session *sess = c->sess;
	struct sreq *r;
	json_object *msg;

	r = xcalloc(1, sizeof *r);
	r->call = c;
	r->id = json_object_new_int64(++sess->last_sreq);
	r->done = done;
	TAILQ_INSERT_TAIL(&sess->sreqs, r, entry);
	msg = json_object_new_object();
	json_object_object_add(msg, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(msg, "id", json_object_get(r->id));
	json_object_object_add(msg, "method", json_object_new_string(method));
	json_object_object_add(msg, "params", params);
	mcp_send_for(c, msg);
}

static void
sreq_free(struct session *sess, struct sreq *r)
{
	TAILQ_REMOVE(&sess->sreqs, r, entry);
	json_object_put(r->id);
	free(r);
}

/* The client answered one of our requests. */
static void
mcp_response(struct session *sess, json_object *msg, json_object *id)
{
	json_object *result = NULL, *error = NULL;
	struct sreq *r;
	struct call *c;
	sreq_done done;

	TAILQ_FOREACH(r, &sess->sreqs, entry)
	if (id != NULL && json_object_equal(r->id, id))
		break;
	if (r == NULL)
		return; /* not ours, or its call has ended */
	c = r->call;
	done = r->done;
	sreq_free(sess, r);
	json_object_object_get_ex(msg, "result", &result);
	json_object_object_get_ex(msg, "error", &error);
	done(c, result, error);
}

/*
 * End the connection that carries a call's messages, not the call: the
 * client resumes the stream with Last-Event-ID (SSE polling).  Nothing
 * on transports without streams.
 */
void
mcp_call_drop_stream(struct call *c)
{
	if (c->sess->drop_stream != NULL && !c->sess->closing)
		c->sess->drop_stream(c->sess, c->id);
}

static json_object *
mcp_initialize(struct session *sess, json_object *id, json_object *params,
    int *code, const char **why)
{
	json_object *v, *r, *caps, *o, *info;
	const char *want = NULL;

	if (params == NULL || !json_object_is_type(params, json_type_object) ||
	    !json_object_object_get_ex(params, "protocolVersion", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		*code = RPC_INVALID_PARAMS;
		*why = "initialize needs params.protocolVersion (a string)";
		return NULL;
	}
	want = json_object_get_string(v);
	json_object_put(sess->client_caps);
	sess->client_caps = NULL;
	if (json_object_object_get_ex(params, "capabilities", &v) &&
	    json_object_is_type(v, json_type_object))
		sess->client_caps = json_object_get(v);
	/* The client's version if we speak it, else our latest. */
	(void)id;
	if ((sess->rev = rev_of(want)) == -1)
		sess->rev = REV_LATEST;
	snprintf(
	    sess->version, sizeof sess->version, "%s", rev_name(sess->rev));
	sess->initialized = 1;

	r = json_object_new_object();
	json_object_object_add(
	    r, "protocolVersion", json_object_new_string(sess->version));
	caps = json_object_new_object();
	o = json_object_new_object();
	json_object_object_add(o, "listChanged", json_object_new_boolean(0));
	json_object_object_add(caps, "tools", o);
	json_object_object_add(caps, "logging", json_object_new_object());
	/* Tasks on tools/call (tasks.c); rev_fit() drops them before
	 * 2025-11-25. */
	json_object_object_add(caps, "tasks", tasks_capability());
	if (mcp_has_method("resources/list")) { /* resources/ registered */
		o = json_object_new_object();
		json_object_object_add(
		    o, "subscribe", json_object_new_boolean(1));
		/* Each sandbox's log comes and goes with it (resources/). */
		json_object_object_add(
		    o, "listChanged", json_object_new_boolean(1));
		json_object_object_add(caps, "resources", o);
	}
	if (prompts_count() > 0) { /* none in the server proper */
		o = json_object_new_object();
		json_object_object_add(
		    o, "listChanged", json_object_new_boolean(0));
		json_object_object_add(caps, "prompts", o);
	}
	if (prompts_completable())
		json_object_object_add(
		    caps, "completions", json_object_new_object());
	json_object_object_add(r, "capabilities", caps);
	info = json_object_new_object();
	json_object_object_add(
	    info, "name", json_object_new_string("mcp-sandboxd"));
	json_object_object_add(info, "title",
	    json_object_new_string("mcp-sandboxd code sandboxes"));
	json_object_object_add(
	    info, "version", json_object_new_string(MCP_SANDBOXD_VERSION));
	json_object_object_add(r, "serverInfo", info);
	json_object_object_add(r, "instructions",
	    json_object_new_string(
	        "Create a sandbox with sandbox_initialize, run commands in it "
	        "with sandbox_exec (pass its container_id), and remove it with "
	        "sandbox_stop when done. Sandboxes have no network by default "
	        "and code runs as an unprivileged user."));
	return r;
}

static json_object *
mcp_ping(struct session *sess, json_object *id, json_object *params, int *code,
    const char **why)
{
	(void)sess;
	(void)id;
	(void)params;
	(void)code;
	(void)why;
	return json_object_new_object();
}

static json_object *
mcp_set_level(struct session *sess, json_object *id, json_object *params,
    int *code, const char **why)
{
	json_object *v;
	size_t i;

	(void)id;
	if (params != NULL && json_object_is_type(params, json_type_object) &&
	    json_object_object_get_ex(params, "level", &v) &&
	    json_object_is_type(v, json_type_string))
		for (i = 0; i < sizeof mcp_levels / sizeof mcp_levels[0]; i++)
			if (strcmp(json_object_get_string(v), mcp_levels[i]) ==
			    0) {
				sess->log_level = (int)i;
				return json_object_new_object();
			}
	*code = RPC_INVALID_PARAMS;
	*why = "level must be one of debug, info, notice, warning, error, "
	       "critical, alert, emergency";
	return NULL;
}

static json_object *
mcp_tools_list(struct session *sess, json_object *id, json_object *params,
    int *code, const char **why)
{
	json_object *v, *r;
	const char *cursor = NULL;

	(void)sess;
	(void)id;
	if (params != NULL && json_object_is_type(params, json_type_object) &&
	    json_object_object_get_ex(params, "cursor", &v) && v != NULL) {
		if (!json_object_is_type(v, json_type_string)) {
			*code = RPC_INVALID_PARAMS;
			*why = "cursor must be a string";
			return NULL;
		}
		cursor = json_object_get_string(v);
	}
	if ((r = tools_list(cursor, (int)sup.conf->tools_page, code)) == NULL)
		*why = "invalid cursor";
	return r;
}

/*
 * Check a call's caps and arguments (a tool error, which the caller
 * answers), or start it (NULL: answered later through mcp_call_reply(),
 * to its task when it has one).
 */
static json_object *
tools_call_start(struct session *sess, json_object *id, json_object *params,
    const struct tool *t, json_object *args, struct task *task)
{
	struct call *c;
	json_object *r;
	char *msg;

	/*
	 * Each call in flight holds its arguments (up to --max-line bytes)
	 * until it ends: calls are capped per session and in all, and one
	 * past a cap is refused at once with a tool error, before anything
	 * of it is kept.
	 */
	if (sess->ncalls >= sup.conf->max_calls_per_session)
		return tool_error(
		    "too many calls in flight in this session "
		    "(%ld, the limit of --max-calls-per-session): "
		    "wait for one to end, or cancel one",
		    sup.conf->max_calls_per_session);
	if (ncalls >= sup.conf->max_calls)
		return tool_error(
		    "the server has too many calls in flight "
		    "(%ld, the limit of --max-calls): retry later",
		    sup.conf->max_calls);
	/* Names, types and ranges as the tool's input schema says. */
	if (toolargs_check(t, args, &msg) == -1) {
		r = tool_error("%s", msg);
		free(msg);
		return r;
	}
	c = mcp_call_new(sess, id, t->name);
	c->args =
	    args != NULL ? json_object_get(args) : json_object_new_object();
	if ((c->task = task) != NULL)
		tasks_attach(task, c);
	progress_start(c, params);
	if (sup.shutting_down) {
		mcp_call_reply(c, tool_error("the server is shutting down"));
		return NULL;
	}
	log_debug("tools/call %s", t->name); /* with its request's id */
	t->exec(c);
	return NULL;
}

/* Start a tools/call; its result goes out later through mcp_call_reply(). */
static json_object *
mcp_tools_call(struct session *sess, json_object *id, json_object *params,
    int *code, const char **why)
{
	const struct tool *t;
	struct task *task = NULL;
	json_object *name, *args = NULL, *r, *tp = NULL, *created;

	if (params == NULL || !json_object_is_type(params, json_type_object) ||
	    !json_object_object_get_ex(params, "name", &name) ||
	    !json_object_is_type(name, json_type_string)) {
		*code = RPC_INVALID_PARAMS;
		*why = "tools/call needs params.name (a string)";
		return NULL;
	}
	if ((t = tool_find(json_object_get_string(name))) == NULL) {
		*code = RPC_INVALID_PARAMS;
		*why = "unknown tool (see tools/list)";
		return NULL;
	}
	if (json_object_object_get_ex(params, "arguments", &args) &&
	    args != NULL && !json_object_is_type(args, json_type_object)) {
		*code = RPC_INVALID_PARAMS;
		*why = "arguments must be an object";
		return NULL;
	}
	/*
	 * Task-augmented (params.task): answered at once with the task, the
	 * result fetched with tasks/result.  Revisions before tasks ignore
	 * the member, as a server without the capability must.
	 */
	if (sess->rev >= REV_2025_11_25 &&
	    json_object_object_get_ex(params, "task", &tp) && tp != NULL) {
		if (!t->task_support) {
			*code = RPC_METHOD_NOT_FOUND;
			*why = "this tool cannot run as a task (its "
			       "execution.taskSupport is forbidden): call it "
			       "without params.task";
			return NULL;
		}
		if ((task = tasks_new(sess, tp, code, why)) == NULL)
			return NULL;
	}
	if (task == NULL)
		return tools_call_start(sess, id, params, t, args, NULL);
	created = tasks_created(task); /* working, as it begins */
	r = tools_call_start(sess, id, params, t, args, task);
	if (r != NULL) /* refused before it ran: the task has failed */
		tasks_finish(task, r);
	tasks_announced(task);
	return created;
}

/*
 * A request answered later with mcp_call_reply(); name is the tool's, or
 * the method's for another request (resources/read), for the logs and
 * for fitting the answer to the session's revision.
 */
struct call *
mcp_call_new(struct session *sess, json_object *id, const char *name)
{
	struct call *c;

	c = xcalloc(1, sizeof *c);
	c->sess = sess;
	c->id = json_object_get(id);
	c->tool = xstrdup(name);
	LIST_INIT(&c->runs);
	c->out_room = mcp_result_output();
	TAILQ_INSERT_TAIL(&sess->calls, c, entry);
	sess->ncalls++;
	ncalls++;
	return c;
}

static void
call_free_mem(void *arg)
{
	struct call *c = arg;

	json_object_put(c->id);
	json_object_put(c->args);
	free(c->tool);
	free(c);
}

static void
call_free(struct call *c)
{
	struct session *sess = c->sess;
	struct sreq *r, *next;

	progress_end(c);
	/* Answers to its requests that come now are not for anyone. */
	for (r = TAILQ_FIRST(&sess->sreqs); r != NULL; r = next) {
		next = TAILQ_NEXT(r, entry);
		if (r->call == c)
			sreq_free(sess, r);
	}
	if (hooks.call_free != NULL)
		hooks.call_free(c);
	TAILQ_REMOVE(&sess->calls, c, entry);
	sess->ncalls--;
	ncalls--;
	/* Answered: whatever still names it sees cancelled, nothing sent. */
	c->cancelled = 1;
	c->answered = 1;
	defer_free(call_free_mem, c);
	session_maybe_free(sess);
}

/* Answer a tools/call (unless it was cancelled) and free it. */
void
mcp_call_reply(struct call *c, json_object *result)
{
	if (c->answered) { /* a second answer: a bug, not a crash */
		log_warnx("%s: call %s answered twice", __func__, c->tool);
		json_object_put(result);
		return;
	}
	progress_end(c);
	/* Tool names have no slash; methods do.  A large result leaves
	 * free pages in the heap once sent: given back soon. */
	if (strchr(c->tool, '/') == NULL &&
	    tool_result_fit(result) > MCP_RESULT_MAX / 4)
		defer_trim();
	if (c->task != NULL)
		tasks_call_done(c, result);
	else if (!c->cancelled) {
		/* Tool names have no slash; methods do. */
		rev_fit(c->sess,
		    strchr(c->tool, '/') != NULL ? c->tool : "tools/call",
		    result);
		mcp_send(c->sess, rpc_result(c->id, result));
	} else
		json_object_put(result);
	call_free(c);
}

/* Answer a call (not a task's) with a JSON-RPC error instead. */
void
mcp_call_fail(struct call *c, int code, const char *msg)
{
	if (c->answered) {
		log_warnx("%s: call %s answered twice", __func__, c->tool);
		return;
	}
	progress_end(c);
	if (!c->cancelled)
		mcp_send(c->sess, rpc_error(c->id, code, msg));
	call_free(c);
}

static void
mcp_cancelled(struct session *sess, json_object *params)
{
	json_object *rid;
	struct call *c;

	if (params == NULL || !json_object_is_type(params, json_type_object) ||
	    !json_object_object_get_ex(params, "requestId", &rid))
		return;
	/* A task's tools/call was answered: tasks/cancel ends it. */
	if (tasks_cancel_waiter(sess, rid))
		return;
	TAILQ_FOREACH(c, &sess->calls, entry)
	{
		if (json_object_equal(c->id, rid) && !c->cancelled &&
		    c->task == NULL) {
			log_info("call %s cancelled by the client", c->tool);
			mcp_call_cancel(c);
			return;
		}
	}
}

/* Tell running calls the server is going away. */
void
mcp_shutdown_calls(void)
{
	struct session *sess;
	struct call *c, *next;

	TAILQ_FOREACH(sess, &sessions, entry)
	{
		/* A cancel may answer its call (which leaves the list;
		 * its memory stays until the loop runs again). */
		for (c = TAILQ_FIRST(&sess->calls); c != NULL; c = next) {
			next = TAILQ_NEXT(c, entry);
			if (c->cancelled)
				continue;
			if (c->cancel != NULL)
				c->cancel(c);
			if (!c->answered && hooks.call_cancel != NULL)
				hooks.call_cancel(c);
		}
	}
}

static const struct mcp_method_entry methods[] = {
    {"initialize", mcp_initialize},
    {"ping", mcp_ping},
    {"logging/setLevel", mcp_set_level},
    {"tools/list", mcp_tools_list},
    {"tools/call", mcp_tools_call},
    {"tasks/get", tasks_get},
    {"tasks/result", tasks_result},
    {"tasks/list", tasks_list},
    {"tasks/cancel", tasks_cancel},
    {"prompts/list", prompts_list},
    {"prompts/get", prompts_get},
    {"completion/complete", prompts_complete},
    {NULL, NULL},
};

/* Tables of methods added by the layers above (resources/). */
#define METHOD_TABLES_MAX 8
static const struct mcp_method_entry *method_tables[METHOD_TABLES_MAX] = {
    methods};
static size_t nmethod_tables = 1;

/* Add a table of methods (not copied); -1 when full. */
int
mcp_methods_register(const struct mcp_method_entry *t)
{
	if (nmethod_tables == METHOD_TABLES_MAX)
		return -1;
	method_tables[nmethod_tables++] = t;
	return 0;
}

static mcp_method
mcp_method_find(const char *name)
{
	const struct mcp_method_entry *e;
	size_t i;

	for (i = 0; i < nmethod_tables; i++)
		for (e = method_tables[i]; e->name != NULL; e++)
			if (strcmp(e->name, name) == 0)
				return e->fn;
	return NULL;
}

/* Whether a method is served (the built-in ones, or a layer's registered). */
int
mcp_has_method(const char *name)
{
	return mcp_method_find(name) != NULL;
}

/* One message from a session's client. */
void
mcp_handle_line(struct session *sess, const char *line, size_t len)
{
	struct rpc_msg m;
	json_object *obj, *result = NULL;
	const char *why = "method not found";
	int code = RPC_METHOD_NOT_FOUND;
	mcp_method fn;

	if ((obj = rpc_parse(line, len, sup.conf->max_json_depth, &code)) ==
	    NULL) {
		mcp_send(sess,
		    rpc_error(NULL, code,
		        code == RPC_PARSE_ERROR
		            ? RPC_PARSE_WHY
		            : "invalid request: a message is a JSON object"));
		return;
	}
	if ((code = rpc_validate(obj, &m, &why)) != 0) {
		mcp_send(sess, rpc_error(m.id, code, why));
		json_object_put(obj);
		return;
	}
	if (m.kind == RPC_RESPONSE) {
		mcp_response(sess, obj, m.id);
		json_object_put(obj);
		return;
	}
	if (m.kind == RPC_NOTIFICATION) {
		if (strcmp(m.method, "notifications/cancelled") == 0)
			mcp_cancelled(sess, m.params);
		json_object_put(obj);
		return;
	}
	code = RPC_METHOD_NOT_FOUND;
	why = "method not found";
	if ((fn = mcp_method_find(m.method)) != NULL) {
		code = 0;
		/* What is logged while it is handled (a tool's start
		 * included) names this request. */
		log_request_set(json_object_get(m.id), sess->id);
		result = fn(sess, m.id, m.params, &code, &why);
		log_request_clear();
	}
	if (result != NULL) {
		rev_fit(sess, m.method, result);
		mcp_send(sess, rpc_result(m.id, result));
	} else if (code != 0)
		mcp_send(sess, rpc_error(m.id, code, why));
	json_object_put(obj);
}
