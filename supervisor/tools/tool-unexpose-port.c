/*
 * sandbox_unexpose_port: a port sandbox_expose_port made reachable from
 * the host is closed there, its open connections with it (run/expose.c).
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
    "sandbox_initialize (or the sandbox's name)\"},"
    "\"port\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":65535,"
    "\"description\":\"the sandbox's port, as given to "
    "sandbox_expose_port\"}},"
    "\"required\":[\"container_id\",\"port\"],"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\"},"
    "\"port\":{\"type\":\"integer\"},"
    "\"unexposed\":{\"type\":\"boolean\"},"
    "\"note\":{\"type\":\"string\",\"description\":\"what the sandbox's "
    "worker said, when it had no listener for the port any more\"}},"
    "\"required\":[\"container_id\",\"port\",\"unexposed\"]}";

static void
unexpose_answer(struct call *c, const char *note)
{
	struct sandbox *sb = c->state;
	json_object *r;
	char *text;
	int port;

	c->state = NULL;
	port =
	    (int)json_object_get_int64(json_object_object_get(c->args, "port"));
	r = json_object_new_object();
	json_object_object_add(
	    r, "container_id", json_object_new_string(sb->id));
	json_object_object_add(r, "port", json_object_new_int(port));
	json_object_object_add(r, "unexposed", json_object_new_boolean(1));
	if (note != NULL)
		json_object_object_add(r, "note", json_object_new_string(note));
	xasprintf(&text, "port %d of sandbox %.12s is no longer exposed", port,
	    sb->id);
	mcp_call_reply(c, tool_result(r, text, 0));
	free(text);
	sandbox_unref(sb);
}

static void
sandbox_unexpose_port(struct call *c)
{
	struct sandbox *sb;
	const char *why;
	json_object *v;

	if ((sb = sandbox_lookup(c, "container_id")) == NULL)
		return;
	if (!tool_arg_type_ok(c, "port", json_type_int, &v) || v == NULL) {
		mcp_call_reply(c, tool_error("port is required: the sandbox's "
		                             "port given to "
		                             "sandbox_expose_port"));
		return;
	}
	c->state = sandbox_ref(sb);
	if (unexpose_port(c, sb, (int)json_object_get_int64(v), unexpose_answer,
	        &why) == -1) {
		c->state = NULL;
		sandbox_unref(sb);
		mcp_call_reply(
		    c, tool_error("port %lld of sandbox %.12s is %s; "
		                  "get_sandbox_status lists its exposed ports",
		           (long long)json_object_get_int64(v), sb->id, why));
	}
}

const struct tool tool_sandbox_unexpose_port = {
    .name = "sandbox_unexpose_port",
    .title = "Unexpose a sandbox port",
    .description = "Stop relaying a port sandbox_expose_port exposed: its "
                   "host port stops listening and its open connections "
                   "are closed. The server in the sandbox keeps running.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 0,
    .destructive = 1,
    .idempotent = 0,
    .open_world = 0,
    .exec = sandbox_unexpose_port,
};
