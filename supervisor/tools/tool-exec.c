/*
 * sandbox_exec: run commands one after another in a sandbox, each as the
 * sandbox user in its own process group, stdout and stderr kept apart.
 * The timeout covers the whole call and kills the processes inside the
 * container; the output cap covers the whole call too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "clock.h"
#include "config.h"
#include "core.h"
#include "log.h"
#include "mcp.h"
#include "proto.h"
#include "run.h"
#include "sandbox.h"
#include "tools.h"
#include "xmalloc.h"

#define EXEC_MAX_COMMANDS 100
#define EXEC_MAX_COMMAND_LEN (64 * 1024)
/* stdin over 16 KiB is streamed to the command (run/xrun.c), not sent in
 * the call's frame, whatever its escaping. */
#define EXEC_MAX_STDIN (512 * 1024)

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\",\"description\":\"from "
    "sandbox_initialize (or the sandbox's name)\"},"
    "\"commands\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
    "\"minLength\":1},\"minItems\":1,\"maxItems\":100,"
    "\"description\":\"shell commands, run in order (a single string is "
    "taken as one command)\"},"
    "\"timeout_seconds\":{\"type\":\"integer\",\"minimum\":0,"
    "\"description\":\"for the whole call; the processes are killed "
    "(background: for the process; 0: up to the server's "
    "--max-background-seconds, where it allows that)\"},"
    "\"background\":{\"type\":\"boolean\",\"default\":false,"
    "\"description\":\"start one command and answer at once with its "
    "process_id (see process_list, process_output, process_signal, "
    "process_wait)\"},"
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
    "\"success\":{\"type\":\"boolean\",\"description\":\"every "
    "command ran and exited 0, none timed out or had its output cut (a "
    "command that ran is a result, isError false, whatever its exit)\"},"
    "\"results\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"properties\":{\"command\":{\"type\":\"string\"},"
    "\"exit_code\":{\"type\":\"integer\",\"description\":\"-1: it "
    "did not run, or did not end by itself (see error)\"},"
    "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
    "\"duration_ms\":{\"type\":\"integer\"},"
    "\"timed_out\":{\"type\":\"boolean\"},"
    "\"oom_killed\":{\"type\":\"boolean\"},"
    "\"truncated\":{\"type\":\"boolean\"},"
    "\"cancelled\":{\"type\":\"boolean\"},"
    "\"signal\":{\"type\":\"integer\"},"
    "\"stdout_bytes\":{\"type\":\"integer\"},"
    "\"stderr_bytes\":{\"type\":\"integer\"}," XRUN_USAGE_SCHEMA
        XRUN_EGRESS_SCHEMA "\"exec_id\":{\"type\":\"integer\"},"
    "\"stdout_uri\":{\"type\":\"string\"},"
    "\"stderr_uri\":{\"type\":\"string\"},"
    "\"spool_incomplete\":{\"type\":\"boolean\"},"
    "\"error\":{\"type\":\"string\"}},"
    "\"required\":[\"command\",\"exit_code\",\"stdout\",\"stderr\","
    "\"duration_ms\",\"timed_out\",\"oom_killed\",\"truncated\"]}},"
    "\"process_id\":{\"type\":\"integer\",\"description\":\"background: "
    "the process started\"},"
    "\"process\":{\"type\":\"object\",\"description\":\"background: its "
    "state, as process_list gives it\"}},"
    "\"required\":[\"container_id\",\"success\",\"results\"]}";

struct xcall {
	struct call *call;
	char *sandbox; /* container id: the sandbox may go meanwhile */
	json_object *commands; /* array of strings, owned */
	size_t next;
	json_object *results;
	json_object *links; /* resource links of cut outputs */
	struct xrun *run; /* the command running */
	int stop_on_error, timed_out;
	int failed; /* a command failed: success false */
	int broken; /* ... or did not run: isError (xrun_ran()) */
	long long cap_left;
	long long deadline_ms; /* clock_ms() */
	json_object *env; /* borrowed from the call's arguments */
	const char *workdir;
	const char *stdin_text;
};

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
	if (json_object_object_get_ex(r, "cancelled", &v) &&
	    json_object_get_boolean(v))
		evbuffer_add_printf(t, ", cancelled (processes killed)");
	if (json_object_object_get_ex(r, "oom_killed", &v) &&
	    json_object_get_boolean(v))
		evbuffer_add_printf(t, ", killed: out of memory");
	if (json_object_object_get_ex(r, "truncated", &v) &&
	    json_object_get_boolean(v))
		evbuffer_add_printf(t, ", output over the cap (command "
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
xcall_free(struct xcall *x)
{
	json_object_put(x->commands);
	json_object_put(x->results);
	json_object_put(x->links);
	free(x->sandbox);
	free(x);
}

static void
xcall_finish(struct xcall *x)
{
	struct evbuffer *t;
	json_object *r, *res;
	size_t i, n;

	n = json_object_array_length(x->results);
	t = evbuffer_new();
	for (i = 0; i < n; i++)
		xcall_text_append(t, json_object_array_get_idx(x->results, i));
	if (x->next < json_object_array_length(x->commands))
		evbuffer_add_printf(t, "(%zu later command(s) not run)\n",
		    json_object_array_length(x->commands) - x->next);
	evbuffer_add(t, "", 1);
	r = json_object_new_object();
	json_object_object_add(
	    r, "container_id", json_object_new_string(x->sandbox));
	json_object_object_add(
	    r, "success", json_object_new_boolean(!x->failed));
	json_object_object_add(r, "results", json_object_get(x->results));
	res = tool_result(r, (char *)evbuffer_pullup(t, -1), x->broken);
	tool_result_add_content(res, x->links);
	mcp_call_reply(x->call, res);
	evbuffer_free(t);
	xcall_free(x);
}

static void
xcall_cancel(struct call *c)
{
	struct xcall *x = c->state;

	if (x->run != NULL)
		xrun_cancel(x->run);
}

static void xcall_next(struct xcall *);

static void
xcall_done(struct xrun *run, json_object *r, void *arg)
{
	struct xcall *x = arg;
	json_object *v;
	int bad;

	(void)run;
	x->run = NULL;
	json_object_array_add(x->results, json_object_get(r));
	xrun_links(r, x->links);
	bad = !xrun_succeeded(r);
	if (json_object_object_get_ex(r, "timed_out", &v) &&
	    json_object_get_boolean(v))
		x->timed_out = 1;
	/* Output over the cap is a limit hit, whatever the exit code. */
	if (json_object_object_get_ex(r, "truncated", &v) &&
	    json_object_get_boolean(v))
		x->cap_left = 0;
	if (json_object_object_get_ex(r, "stdout_bytes", &v))
		x->cap_left -= json_object_get_int64(v);
	if (json_object_object_get_ex(r, "stderr_bytes", &v))
		x->cap_left -= json_object_get_int64(v);
	if (json_object_object_get_ex(r, "error", &v))
		x->stop_on_error = 1; /* the sandbox is in trouble: stop */
	if (bad)
		x->failed = 1;
	if (!xrun_ran(r))
		x->broken = 1;
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
	struct xrun_opts o;
	struct sandbox *sb;

	if (x->next >= json_object_array_length(x->commands)) {
		xcall_finish(x);
		return;
	}
	sb = sandbox_find(NULL, x->sandbox);
	if (sb == NULL || sb->state != SB_READY || sb->worker == NULL) {
		x->failed = x->broken = 1;
		if (json_object_array_length(x->results) == 0) {
			mcp_call_reply(x->call,
			    tool_error(
			        "sandbox %.12s went away "
			        "(stopped or expired) before the commands ran",
			        x->sandbox));
			xcall_free(x);
			return;
		}
		xcall_finish(x);
		return;
	}
	memset(&o, 0, sizeof o);
	o.command = json_object_get_string(
	    json_object_array_get_idx(x->commands, x->next));
	o.workdir = x->workdir;
	o.env = x->env;
	o.stdin_text = x->next == 0 ? x->stdin_text : NULL;
	o.timeout_ms = x->deadline_ms - clock_ms();
	o.output_cap = x->cap_left;
	/* An even share of what the result can still show, for each
	 * command still to run (one that shows less leaves more). */
	o.out_room =
	    x->call->out_room /
	    (long long)(json_object_array_length(x->commands) - x->next);
	x->next++;
	x->run = xrun_start(x->call, sb, &o, xcall_done, x);
}

/* background: true: start the one command and answer with its id. */
static void
exec_background(struct call *c, struct sandbox *sb, json_object *list,
    json_object *env, long long timeout)
{
	struct xrun_opts o;
	struct bgproc *bp;
	json_object *r;
	char err[512], *text;

	memset(&o, 0, sizeof o);
	o.command = json_object_get_string(json_object_array_get_idx(list, 0));
	o.workdir = tool_arg_string(c, "workdir");
	o.env = env;
	o.stdin_text = tool_arg_string(c, "stdin");
	o.timeout_ms = timeout * 1000;
	o.output_cap = sup.conf->output_cap;
	if ((bp = bgproc_start(sb, &o, err, sizeof err)) == NULL) {
		json_object_put(list);
		mcp_call_reply(c, tool_error("%s", err));
		return;
	}
	json_object_put(list);
	r = json_object_new_object();
	json_object_object_add(
	    r, "container_id", json_object_new_string(sb->id));
	json_object_object_add(r, "success", json_object_new_boolean(1));
	json_object_object_add(r, "results", json_object_new_array());
	json_object_object_add(
	    r, "process_id", json_object_new_int64(bgproc_id(bp)));
	json_object_object_add(r, "process", bgproc_json(bp));
	xasprintf(&text,
	    "started background process %u (timeout %llds); read its output "
	    "with process_output, end it with process_signal",
	    bgproc_id(bp), timeout);
	mcp_call_reply(c, tool_result(r, text, 0));
	free(text);
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
	long ceiling;
	size_t i, n;
	int background;

	if (!json_object_object_get_ex(c->args, "commands", &cmds) ||
	    cmds == NULL) {
		mcp_call_reply(c, tool_error("commands is required: a shell "
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
		mcp_call_reply(c,
		    tool_error(
		        "commands must be a non-empty string "
		        "or an array of 1 to %d non-empty strings (each under %d "
		        "bytes, no NUL)",
		        EXEC_MAX_COMMANDS, EXEC_MAX_COMMAND_LEN));
		return;
	}
	if (!tool_arg_type_ok(c, "background", json_type_boolean, &v)) {
		json_object_put(list);
		mcp_call_reply(c, tool_error("background must be a boolean"));
		return;
	}
	background = v != NULL && json_object_get_boolean(v);
	if (background && n != 1) {
		json_object_put(list);
		mcp_call_reply(
		    c, tool_error("background: true starts one command; give "
		                  "commands as one string (join steps with && "
		                  "or ;)"));
		return;
	}
	/* A background process's ceiling is --max-background-seconds when
	 * the operator set it; 0 asks for all of it. */
	ceiling = background && conf->max_background_seconds > 0
	              ? conf->max_background_seconds
	              : conf->max_exec_timeout;
	if (!tool_arg_type_ok(c, "timeout_seconds", json_type_int, &v) ||
	    (v != NULL && (json_object_get_int64(v) < 0 ||
	                      json_object_get_int64(v) > ceiling))) {
		json_object_put(list);
		mcp_call_reply(
		    c, tool_error("timeout_seconds must be an integer "
		                  "from 1 to %ld",
		           ceiling));
		return;
	}
	if (v != NULL && json_object_get_int64(v) == 0 &&
	    (!background || conf->max_background_seconds == 0)) {
		json_object_put(list);
		mcp_call_reply(c,
		    background
		        ? tool_error("timeout_seconds: 0 (run as long as "
		                     "allowed) needs the server's "
		                     "--max-background-seconds, which is not "
		                     "set; give 1 to %ld seconds",
		              ceiling)
		        : tool_error("timeout_seconds must be an integer "
		                     "from 1 to %ld (0 only with background: "
		                     "true)",
		              ceiling));
		return;
	}
	if (v != NULL)
		timeout = json_object_get_int64(v) == 0
		              ? ceiling
		              : json_object_get_int64(v);
	if (!tool_arg_type_ok(c, "workdir", json_type_string, NULL) ||
	    (tool_arg_string(c, "workdir") != NULL &&
	        (tool_arg_string(c, "workdir")[0] != '/' ||
	            strlen(tool_arg_string(c, "workdir")) > 4096))) {
		json_object_put(list);
		mcp_call_reply(
		    c, tool_error("workdir must be an absolute path"));
		return;
	}
	if (!tool_arg_type_ok(c, "env", json_type_object, &env) ||
	    (env != NULL && !tool_initialize_env_valid(env, &bad))) {
		json_object_put(list);
		mcp_call_reply(c,
		    tool_error("env must be an object of strings with "
		               "names of letters, digits and '_' (\"%.40s\")",
		        bad));
		return;
	}
	if (!tool_arg_type_ok(c, "stdin", json_type_string, NULL) ||
	    !tool_arg_type_ok(c, "stop_on_error", json_type_boolean, &soe)) {
		json_object_put(list);
		mcp_call_reply(c, tool_error("stdin must be a string and "
		                             "stop_on_error a boolean"));
		return;
	}
	if (!tool_arg_type_ok(c, "stdin", json_type_string, &v) ||
	    (v != NULL && json_object_get_string_len(v) > EXEC_MAX_STDIN)) {
		json_object_put(list);
		mcp_call_reply(
		    c, tool_error("stdin is limited to %d bytes; "
		                  "write larger input to a file first",
		           EXEC_MAX_STDIN));
		return;
	}
	if ((sb = sandbox_lookup(c, "container_id")) == NULL) {
		json_object_put(list);
		return;
	}
	if (background) {
		exec_background(c, sb, list, env, timeout);
		return;
	}
	x = xcalloc(1, sizeof *x);
	x->call = c;
	x->sandbox = xstrdup(sb->id);
	x->commands = list;
	x->results = json_object_new_array();
	x->links = json_object_new_array();
	x->stop_on_error = soe != NULL ? json_object_get_boolean(soe) : 1;
	x->cap_left = conf->output_cap;
	x->env = env;
	x->workdir = tool_arg_string(c, "workdir");
	x->stdin_text = tool_arg_string(c, "stdin");
	x->deadline_ms = clock_ms() + (long long)timeout * 1000;
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
                   "covers the whole call and kills the processes. With "
                   "background: true one command starts and the call "
                   "answers at once with its process_id.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 0,
    .destructive = 1,
    .idempotent = 0,
    .open_world = 0,
    .task_support = 1,
    .exec = sandbox_exec,
};
