/*
 * process_wait: wait for a background process to end, up to a timeout;
 * its final state, or the current one when the timeout passed.
 */
#include <stdio.h>
#include <stdlib.h>

#include "mcp.h"
#include "run.h"
#include "sandbox.h"
#include "tools.h"
#include "xmalloc.h"

#define WAIT_DEFAULT 30
#define WAIT_MAX 300

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\"},"
    "\"process_id\":{\"type\":\"integer\",\"minimum\":1},"
    "\"timeout_seconds\":{\"type\":\"integer\",\"minimum\":0,"
    "\"maximum\":300,\"default\":30,\"description\":\"how long to wait "
    "(the process runs on after it)\"}},"
    "\"required\":[\"container_id\",\"process_id\"],"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\"},"
    "\"exited\":{\"type\":\"boolean\",\"description\":\"false: the "
    "timeout passed first, it still runs\"},"
    "\"process\":" TOOL_PROCESS_SCHEMA "},"
    "\"required\":[\"container_id\",\"exited\",\"process\"]}";

static void
wait_answer(struct call *c, struct bgproc *bp, const struct bg_ask *ask)
{
	json_object *r, *v;
	char *text;
	int exited;

	(void)ask;
	if (bp == NULL) {
		mcp_call_reply(c, tool_error("the sandbox was stopped while "
		                             "the call waited; its background "
		                             "processes were killed"));
		return;
	}
	exited = !bgproc_is_running(bp);
	r = json_object_new_object();
	json_object_object_add(r, "container_id",
	    json_object_new_string(tool_arg_string(c, "container_id")));
	json_object_object_add(r, "exited", json_object_new_boolean(exited));
	json_object_object_add(r, "process", bgproc_json(bp));
	json_object_object_get_ex(
	    json_object_object_get(r, "process"), "exit_code", &v);
	if (exited)
		xasprintf(&text, "process %u exited, exit code %s",
		    bgproc_id(bp), v != NULL ? json_object_get_string(v) : "?");
	else
		xasprintf(&text, "process %u still runs", bgproc_id(bp));
	mcp_call_reply(c, tool_result(r, text, 0));
	free(text);
}

static void
process_wait(struct call *c)
{
	struct sandbox *sb;
	struct bgproc *bp;
	struct bg_ask ask = {0};
	json_object *v;

	if ((bp = tool_process_find(c, &sb)) == NULL)
		return;
	if (!tool_arg_type_ok(c, "timeout_seconds", json_type_int, &v) ||
	    (v != NULL && (json_object_get_int64(v) < 0 ||
	                      json_object_get_int64(v) > WAIT_MAX))) {
		mcp_call_reply(c, tool_error("timeout_seconds must be an "
		                             "integer from 0 to %d",
		                      WAIT_MAX));
		return;
	}
	bgproc_wait(bp, c, &ask,
	    (v != NULL ? json_object_get_int64(v) : WAIT_DEFAULT) * 1000,
	    wait_answer);
}

const struct tool tool_process_wait = {
    .name = "process_wait",
    .title = "Wait for a background process",
    .description = "Wait up to timeout_seconds (30 by default) for a "
                   "background process to end: its final state (exit "
                   "code, signal), or the current one when the timeout "
                   "passes first.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 1,
    .destructive = 0,
    .idempotent = 1,
    .open_world = 0,
    .exec = process_wait,
};
