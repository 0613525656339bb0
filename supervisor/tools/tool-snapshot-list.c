/* snapshot_list: the session's snapshots (run/snapshot.c). */
#include <stdio.h>
#include <stdlib.h>

#include "mcp.h"
#include "run.h"
#include "tools.h"
#include "xmalloc.h"

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"snapshots\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"properties\":{" TOOL_SNAPSHOT_PROPS "},"
    "\"required\":[\"snapshot_id\",\"bytes\",\"created_at\","
    "\"expires_at\"]}}},"
    "\"required\":[\"snapshots\"]}";

static void
snapshot_list_tool(struct call *c)
{
	json_object *list, *out, *o;
	char err[512], *text;
	size_t i, n;

	if ((list = snapshot_list(c->sess, err, sizeof err)) == NULL) {
		mcp_call_reply(c, tool_error("%s", err));
		return;
	}
	out = json_object_new_array();
	n = json_object_array_length(list);
	for (i = 0; i < n; i++)
		json_object_array_add(
		    out, snapshot_json(json_object_array_get_idx(list, i)));
	json_object_put(list);
	o = json_object_new_object();
	json_object_object_add(o, "snapshots", out);
	xasprintf(&text, "%zu snapshot%s.", n, n == 1 ? "" : "s");
	mcp_call_reply(c, tool_result(o, text, 0));
	free(text);
}

const struct tool tool_snapshot_list = {
    .name = "snapshot_list",
    .title = "List snapshots",
    .description = "The snapshots of this session (over stdio: of the user "
                   "running the server, also those taken before a "
                   "restart), with their size and expiry.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 1,
    .destructive = 0,
    .idempotent = 1,
    .open_world = 0,
    .exec = snapshot_list_tool,
};
