/*
 * process_list: the background processes of a sandbox (sandbox_exec
 * background: true), with their state, exit code, start, CPU time when
 * known and output sizes.  Also the lookup every process_* tool shares.
 */
#include <stdio.h>
#include <stdlib.h>

#include "mcp.h"
#include "run.h"
#include "sandbox.h"
#include "tools.h"
#include "xmalloc.h"

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\",\"description\":\"from "
    "sandbox_initialize (or the sandbox's name)\"}},"
    "\"required\":[\"container_id\"],\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\"},"
    "\"processes\":{\"type\":\"array\",\"items\":" TOOL_PROCESS_SCHEMA "}},"
    "\"required\":[\"container_id\",\"processes\"]}";

/*
 * The sandbox and the background process a call names (container_id,
 * process_id), or NULL once the call was answered with why not.
 */
struct bgproc *
tool_process_find(struct call *c, struct sandbox **sbp)
{
	struct sandbox *sb;
	struct bgproc *bp;
	json_object *v;

	if ((sb = sandbox_lookup(c, "container_id")) == NULL)
		return NULL;
	if (!tool_arg_type_ok(c, "process_id", json_type_int, &v) ||
	    v == NULL || json_object_get_int64(v) < 1) {
		mcp_call_reply(c, tool_error("process_id is required: the "
		                             "integer sandbox_exec "
		                             "(background: true) gave"));
		return NULL;
	}
	if ((bp = bgproc_find(sb, json_object_get_int64(v))) == NULL) {
		mcp_call_reply(c,
		    tool_error("no background process %lld in sandbox %.12s; "
		               "process_list shows them",
		        (long long)json_object_get_int64(v), sb->id));
		return NULL;
	}
	*sbp = sb;
	return bp;
}

static void
process_list(struct call *c)
{
	struct sandbox *sb;
	json_object *r, *a;
	char *text;

	if ((sb = sandbox_lookup(c, "container_id")) == NULL)
		return;
	a = bgproc_list(sb);
	r = json_object_new_object();
	json_object_object_add(
	    r, "container_id", json_object_new_string(sb->id));
	xasprintf(&text, "%zu background process(es), %d running: %s",
	    json_object_array_length(a), bgproc_running(sb),
	    json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN));
	json_object_object_add(r, "processes", a);
	mcp_call_reply(c, tool_result(r, text, 0));
	free(text);
}

const struct tool tool_process_list = {
    .name = "process_list",
    .title = "List a sandbox's background processes",
    .description = "Every process sandbox_exec started with background: "
                   "true in a sandbox: state (running, exited), exit code, "
                   "start time, CPU time when known, output sizes and "
                   "resource URIs.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 1,
    .destructive = 0,
    .idempotent = 1,
    .open_world = 0,
    .exec = process_list,
};
