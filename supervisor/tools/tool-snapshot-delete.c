/* snapshot_delete: one of the session's snapshots removed (run/snapshot.c). */
#include <stdio.h>
#include <stdlib.h>

#include "mcp.h"
#include "run.h"
#include "tools.h"
#include "xmalloc.h"

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"snapshot_id\":{\"type\":\"string\"}},"
    "\"required\":[\"snapshot_id\"],\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"snapshot_id\":{\"type\":\"string\"},"
    "\"deleted\":{\"type\":\"boolean\"}},"
    "\"required\":[\"snapshot_id\",\"deleted\"]}";

static void
snapshot_delete_tool(struct call *c)
{
	json_object *o;
	const char *id;
	char err[512], *text;

	if (!tool_arg_type_ok(c, "snapshot_id", json_type_string, NULL) ||
	    (id = tool_arg_string(c, "snapshot_id")) == NULL) {
		mcp_call_reply(c, tool_error("snapshot_id is required"));
		return;
	}
	if (snapshot_delete(c->sess, id, err, sizeof err) == -1) {
		mcp_call_reply(c, tool_error("%s", err));
		return;
	}
	o = json_object_new_object();
	json_object_object_add(o, "snapshot_id", json_object_new_string(id));
	json_object_object_add(o, "deleted", json_object_new_boolean(1));
	xasprintf(&text, "Snapshot %s deleted.", id);
	mcp_call_reply(c, tool_result(o, text, 0));
	free(text);
}

const struct tool tool_snapshot_delete = {
    .name = "snapshot_delete",
    .title = "Delete a snapshot",
    .description = "Remove one of this session's snapshots from the host.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 0,
    .destructive = 1,
    .idempotent = 0,
    .open_world = 0,
    .exec = snapshot_delete_tool,
};
