/*
 * sandbox_exec: run commands one after another in a sandbox, each as the
 * sandbox user in its own process group, stdout and stderr kept apart.
 * The timeout covers the whole call and kills the processes inside the
 * container; the output cap covers the whole call too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include "config.h"
#include "log.h"
#include "proto.h"
#include "supervisor.h"
#include "utf8.h"
#include "xmalloc.h"

#define EXEC_MAX_COMMANDS 100
#define EXEC_MAX_COMMAND_LEN (64 * 1024)
/* stdin rides in the call's frame, under PROTO_MAX_PAYLOAD. */
#define EXEC_MAX_STDIN (512 * 1024)

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\",\"description\":\"from "
    "sandbox_initialize (or the sandbox's name)\"},"
    "\"commands\":{\"description\":\"shell commands, run in order\","
    "\"anyOf\":[{\"type\":\"string\",\"minLength\":1},{\"type\":\"array\","
    "\"items\":{\"type\":\"string\",\"minLength\":1},\"minItems\":1,"
    "\"maxItems\":100}]},"
    "\"timeout_seconds\":{\"type\":\"integer\",\"minimum\":1,"
    "\"description\":\"for the whole call; the processes are killed\"},"
    "\"workdir\":{\"type\":\"string\"},"
    "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":"
    "\"string\"}},"
    "\"stdin\":{\"type\":\"string\",\"description\":\"text given "
    "to the first command's standard input (up to 512 KiB)\"},"
    "\"stop_on_error\":{\"type\":\"boolean\",\"default\":true}},"
    "\"required\":[\"container_id\",\"commands\"],"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\"},"
    "\"success\":{\"type\":\"boolean\"},"
    "\"results\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"properties\":{\"command\":{\"type\":\"string\"},"
    "\"exit_code\":{\"type\":\"integer\"},"
    "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
    "\"duration_ms\":{\"type\":\"integer\"},"
    "\"timed_out\":{\"type\":\"boolean\"},"
    "\"oom_killed\":{\"type\":\"boolean\"},"
    "\"truncated\":{\"type\":\"boolean\"},"
    "\"error\":{\"type\":\"string\"}},"
    "\"required\":[\"command\",\"exit_code\",\"stdout\",\"stderr\","
    "\"duration_ms\",\"timed_out\",\"oom_killed\",\"truncated\"]}}},"
    "\"required\":[\"container_id\",\"success\",\"results\"]}";

struct xcall {
	struct call *call;
	char *sandbox; /* container id: the sandbox may go meanwhile */
	json_object *commands; /* array of strings, owned */
	size_t next;
	json_object *results;
	struct evbuffer *out, *err;
	struct wproc *worker;
	uint32_t reqid;
	int stop_on_error, failed, timed_out;
	long long cap_left;
	struct timespec deadline;
	json_object *env; /* borrowed from the call's arguments */
	const char *workdir;
	const char *stdin_text;
};

static long long
ms_until(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (long long)(t->tv_sec - now.tv_sec) * 1000 +
	       (t->tv_nsec - now.tv_nsec) / 1000000;
}

static json_object *
buf_string(struct evbuffer *b)
{
	json_object *s;
	size_t len = evbuffer_get_length(b), outlen;
	char *clean;

	clean =
	    utf8_sanitize((const char *)evbuffer_pullup(b, -1), len, &outlen);
	s = json_object_new_string_len(clean, (int)outlen);
	free(clean);
	evbuffer_drain(b, len);
	return s;
}

static void
xcall_text_append(struct evbuffer *t, json_object *r)
{
	json_object *v;

	json_object_object_get_ex(r, "command", &v);
	evbuffer_add_printf(t, "$ %s\n", json_object_get_string(v));
	json_object_object_get_ex(r, "exit_code", &v);
	evbuffer_add_printf(t, "exit code %d", json_object_get_int(v));
	if (json_object_object_get_ex(r, "timed_out", &v) &&
	    json_object_get_boolean(v))
		evbuffer_add_printf(t, ", timed out (processes killed)");
	if (json_object_object_get_ex(r, "oom_killed", &v) &&
	    json_object_get_boolean(v))
		evbuffer_add_printf(t, ", killed: out of memory");
	if (json_object_object_get_ex(r, "truncated", &v) &&
	    json_object_get_boolean(v))
		evbuffer_add_printf(t, ", output cut at the cap (command "
		                       "killed)");
	if (json_object_object_get_ex(r, "error", &v))
		evbuffer_add_printf(
		    t, ", error: %s", json_object_get_string(v));
	evbuffer_add_printf(t, "\n");
	json_object_object_get_ex(r, "stdout", &v);
	if (json_object_get_string_len(v) > 0)
		evbuffer_add_printf(
		    t, "stdout:\n%s\n", json_object_get_string(v));
	json_object_object_get_ex(r, "stderr", &v);
	if (json_object_get_string_len(v) > 0)
		evbuffer_add_printf(
		    t, "stderr:\n%s\n", json_object_get_string(v));
}

static void
xcall_finish(struct xcall *x)
{
	struct evbuffer *t;
	json_object *r;
	size_t i, n;
	char *text;

	n = json_object_array_length(x->results);
	t = evbuffer_new();
	for (i = 0; i < n; i++)
		xcall_text_append(t, json_object_array_get_idx(x->results, i));
	if (x->next < json_object_array_length(x->commands))
		evbuffer_add_printf(t, "(%zu later command(s) not run)\n",
		    json_object_array_length(x->commands) - x->next);
	evbuffer_add(t, "", 1);
	text = (char *)evbuffer_pullup(t, -1);
	r = json_object_new_object();
	json_object_object_add(
	    r, "container_id", json_object_new_string(x->sandbox));
	json_object_object_add(
	    r, "success", json_object_new_boolean(!x->failed));
	json_object_object_add(r, "results", x->results);
	call_reply(x->call, tool_result(r, text, x->failed));
	evbuffer_free(t);
	evbuffer_free(x->out);
	evbuffer_free(x->err);
	json_object_put(x->commands);
	free(x->sandbox);
	free(x);
}

static void
xcall_cancel(struct call *c)
{
	struct xcall *x = c->state;

	if (x->worker != NULL && x->reqid != 0)
		wproc_cancel(x->worker, x->reqid);
}

static void xcall_next(struct xcall *);

static int
xcall_data(uint16_t flags, const char *p, size_t len, void *arg)
{
	struct xcall *x = arg;

	evbuffer_add(flags & PROTO_F_STDERR ? x->err : x->out, p, len);
	progress_output(x->call, p, len);
	return 0;
}

static void
xcall_done(json_object *res, void *arg)
{
	struct xcall *x = arg;
	json_object *r, *v;
	int bad = 0;

	x->worker = NULL;
	x->reqid = 0;
	r = json_object_new_object();
	json_object_object_add(r, "command",
	    json_object_get(
	        json_object_array_get_idx(x->commands, x->next - 1)));
	v = NULL;
	json_object_object_get_ex(res, "exit_code", &v);
	json_object_object_add(r, "exit_code",
	    json_object_new_int64(v != NULL ? json_object_get_int64(v) : -1));
	if (v == NULL || json_object_get_int64(v) != 0)
		bad = 1;
	json_object_object_add(r, "stdout", buf_string(x->out));
	json_object_object_add(r, "stderr", buf_string(x->err));
	json_object_object_get_ex(res, "duration_ms", &v);
	json_object_object_add(r, "duration_ms",
	    json_object_new_int64(v ? json_object_get_int64(v) : 0));
	json_object_object_get_ex(res, "timed_out", &v);
	json_object_object_add(r, "timed_out",
	    json_object_new_boolean(v && json_object_get_boolean(v)));
	if (v != NULL && json_object_get_boolean(v))
		x->timed_out = 1;
	json_object_object_get_ex(res, "oom_killed", &v);
	json_object_object_add(r, "oom_killed",
	    json_object_new_boolean(v && json_object_get_boolean(v)));
	json_object_object_get_ex(res, "truncated", &v);
	json_object_object_add(r, "truncated",
	    json_object_new_boolean(v && json_object_get_boolean(v)));
	if (v != NULL && json_object_get_boolean(v))
		x->cap_left = 0;
	json_object_object_get_ex(res, "stdout_bytes", &v);
	x->cap_left -= v ? json_object_get_int64(v) : 0;
	json_object_object_get_ex(res, "stderr_bytes", &v);
	x->cap_left -= v ? json_object_get_int64(v) : 0;
	if (json_object_object_get_ex(res, "error", &v)) {
		json_object_object_add(r, "error", json_object_get(v));
		x->stop_on_error = 1; /* the sandbox is in trouble: stop */
	}
	json_object_array_add(x->results, r);
	if (bad)
		x->failed = 1;
	if ((bad && x->stop_on_error) || x->timed_out || x->cap_left <= 0 ||
	    x->call->cancelled) {
		xcall_finish(x);
		return;
	}
	xcall_next(x);
}

static void
xcall_next(struct xcall *x)
{
	struct sandbox *sb;
	json_object *op;
	long long left;

	if (x->next >= json_object_array_length(x->commands)) {
		xcall_finish(x);
		return;
	}
	sb = sandbox_find(NULL, x->sandbox);
	if (sb == NULL || sb->state != SB_READY || sb->worker == NULL) {
		x->failed = 1;
		if (json_object_array_length(x->results) == 0) {
			call_reply(x->call,
			    tool_error(
			        "sandbox %.12s went away "
			        "(stopped or expired) before the commands ran",
			        x->sandbox));
			evbuffer_free(x->out);
			evbuffer_free(x->err);
			json_object_put(x->results);
			json_object_put(x->commands);
			free(x->sandbox);
			free(x);
			return;
		}
		xcall_finish(x);
		return;
	}
	left = ms_until(&x->deadline);
	op = json_object_new_object();
	json_object_object_add(op, "op", json_object_new_string(PROTO_OP_EXEC));
	json_object_object_add(op, "command",
	    json_object_get(json_object_array_get_idx(x->commands, x->next)));
	json_object_object_add(op, "workdir",
	    json_object_new_string(
	        x->workdir != NULL ? x->workdir : sb->workdir));
	if (x->env != NULL)
		json_object_object_add(op, "env", json_object_get(x->env));
	if (x->stdin_text != NULL && x->next == 0)
		json_object_object_add(
		    op, "stdin", json_object_new_string(x->stdin_text));
	json_object_object_add(
	    op, "timeout_ms", json_object_new_int64(left > 1 ? left : 1));
	json_object_object_add(
	    op, "output_cap", json_object_new_int64(x->cap_left));
	x->next++;
	sb->exec_count++;
	x->worker = sb->worker;
	x->reqid = wproc_call(sb->worker, op, xcall_data, xcall_done, x);
	json_object_put(op);
}

static void
sandbox_exec(struct call *c)
{
	const struct config *conf = sup.conf;
	struct sandbox *sb;
	struct xcall *x;
	json_object *cmds, *v, *env, *list, *soe;
	const char *bad = "";
	long long timeout = conf->exec_timeout;
	size_t i, n;

	json_object_object_foreach(c->args, key, val)
	{
		(void)val;
		if (strcmp(key, "container_id") != 0 &&
		    strcmp(key, "commands") != 0 &&
		    strcmp(key, "timeout_seconds") != 0 &&
		    strcmp(key, "workdir") != 0 && strcmp(key, "env") != 0 &&
		    strcmp(key, "stdin") != 0 &&
		    strcmp(key, "stop_on_error") != 0) {
			call_reply(
			    c, tool_error("unknown argument \"%.40s\"", key));
			return;
		}
	}
	if (!json_object_object_get_ex(c->args, "commands", &cmds) ||
	    cmds == NULL) {
		call_reply(c, tool_error("commands is required: a shell "
		                         "command, or an array of them"));
		return;
	}
	list = json_object_new_array();
	if (json_object_is_type(cmds, json_type_string))
		json_object_array_add(list, json_object_get(cmds));
	else if (json_object_is_type(cmds, json_type_array)) {
		n = json_object_array_length(cmds);
		for (i = 0; i < n; i++)
			json_object_array_add(
			    list, json_object_get(
			              json_object_array_get_idx(cmds, i)));
	}
	n = json_object_array_length(list);
	for (i = 0; i < n; i++) {
		v = json_object_array_get_idx(list, i);
		if (!json_object_is_type(v, json_type_string) ||
		    json_object_get_string_len(v) == 0 ||
		    json_object_get_string_len(v) > EXEC_MAX_COMMAND_LEN ||
		    strlen(json_object_get_string(v)) !=
		        (size_t)json_object_get_string_len(v))
			break;
	}
	if (n == 0 || i < n || n > EXEC_MAX_COMMANDS) {
		json_object_put(list);
		call_reply(c,
		    tool_error(
		        "commands must be a non-empty string "
		        "or an array of 1 to %d non-empty strings (each under %d "
		        "bytes, no NUL)",
		        EXEC_MAX_COMMANDS, EXEC_MAX_COMMAND_LEN));
		return;
	}
	if (!arg_type_ok(c, "timeout_seconds", json_type_int, &v) ||
	    (v != NULL &&
	        (json_object_get_int64(v) < 1 ||
	            json_object_get_int64(v) > conf->max_exec_timeout))) {
		json_object_put(list);
		call_reply(c, tool_error("timeout_seconds must be an integer "
		                         "from 1 to %ld",
		                  conf->max_exec_timeout));
		return;
	}
	if (v != NULL)
		timeout = json_object_get_int64(v);
	if (!arg_type_ok(c, "workdir", json_type_string, NULL) ||
	    (arg_string(c, "workdir") != NULL &&
	        (arg_string(c, "workdir")[0] != '/' ||
	            strlen(arg_string(c, "workdir")) > 4096))) {
		json_object_put(list);
		call_reply(c, tool_error("workdir must be an absolute path"));
		return;
	}
	if (!arg_type_ok(c, "env", json_type_object, &env) ||
	    (env != NULL && !valid_env(env, &bad))) {
		json_object_put(list);
		call_reply(c,
		    tool_error("env must be an object of strings with "
		               "names of letters, digits and '_' (\"%.40s\")",
		        bad));
		return;
	}
	if (!arg_type_ok(c, "stdin", json_type_string, NULL) ||
	    !arg_type_ok(c, "stop_on_error", json_type_boolean, &soe)) {
		json_object_put(list);
		call_reply(c, tool_error("stdin must be a string and "
		                         "stop_on_error a boolean"));
		return;
	}
	if (!arg_type_ok(c, "stdin", json_type_string, &v) ||
	    (v != NULL && json_object_get_string_len(v) > EXEC_MAX_STDIN)) {
		json_object_put(list);
		call_reply(c, tool_error("stdin is limited to %d bytes; "
		                         "write larger input to a file first",
		                  EXEC_MAX_STDIN));
		return;
	}
	if ((sb = sandbox_lookup(c, "container_id")) == NULL) {
		json_object_put(list);
		return;
	}
	x = xcalloc(1, sizeof *x);
	x->call = c;
	x->sandbox = xstrdup(sb->id);
	x->commands = list;
	x->results = json_object_new_array();
	x->out = evbuffer_new();
	x->err = evbuffer_new();
	x->stop_on_error = soe != NULL ? json_object_get_boolean(soe) : 1;
	x->cap_left = conf->output_cap;
	x->env = env;
	x->workdir = arg_string(c, "workdir");
	x->stdin_text = arg_string(c, "stdin");
	clock_gettime(CLOCK_MONOTONIC, &x->deadline);
	x->deadline.tv_sec += timeout;
	c->state = x;
	c->cancel = xcall_cancel;
	xcall_next(x);
}

const struct tool tool_sandbox_exec = {
    .name = "sandbox_exec",
    .title = "Run commands in a sandbox",
    .description = "Run shell commands in a sandbox, in order, as an "
                   "unprivileged user. Each result has the exit code and "
                   "stdout and stderr kept apart. With stop_on_error (the "
                   "default) a failing command stops the rest. The timeout "
                   "covers the whole call and kills the processes.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 0,
    .destructive = 1,
    .idempotent = 0,
    .open_world = 0,
    .exec = sandbox_exec,
};
