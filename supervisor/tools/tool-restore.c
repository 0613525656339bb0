/*
 * sandbox_restore: a sandbox rolled back in place to one of the session's
 * snapshots (run/snapshot.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"
#include "run.h"
#include "sandbox.h"
#include "tools.h"
#include "xmalloc.h"

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\",\"description\":\"from "
    "sandbox_initialize (or the sandbox's name)\"},"
    "\"snapshot_id\":{\"type\":\"string\",\"description\":\"from "
    "sandbox_snapshot or snapshot_list\"}},"
    "\"required\":[\"container_id\",\"snapshot_id\"],"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{" TOOL_SNAPSHOT_PROPS ","
    "\"processes_killed\":{\"type\":\"integer\",\"description\":"
    "\"processes of the sandbox's user that were killed\"},"
    "\"sessions_restarted\":{\"type\":\"boolean\",\"description\":"
    "\"code sessions were ended: the next execute_code starts a new "
    "one\"},"
    "\"duration_ms\":{\"type\":\"integer\"}},"
    "\"required\":[\"snapshot_id\",\"processes_killed\","
    "\"sessions_restarted\"]}";

static void
restored(struct call *c, json_object *res, const char *error, void *arg)
{
	char *text;

	(void)arg;
	if (error != NULL) {
		mcp_call_reply(c, tool_error("restore failed: %s", error));
		return;
	}
	json_object_object_add(
	    res, "sessions_restarted", json_object_new_boolean(1));
	xasprintf(&text,
	    "Sandbox rolled back to snapshot %s: its processes were killed "
	    "(%lld), its workdir, /tmp and volumes hold the snapshot's files, "
	    "and code sessions start anew (the next execute_code runs in a "
	    "new one).",
	    snapshot_meta_str(res, "snapshot_id"),
	    (long long)json_object_get_int64(
	        json_object_object_get(res, "processes_killed")));
	mcp_call_reply(c, tool_result(json_object_get(res), text, 0));
	free(text);
}

static void
sandbox_restore(struct call *c)
{
	struct sandbox *sb;
	json_object *meta;
	const char *id, *image, *workdir;
	char err[512];

	if (!tool_arg_type_ok(c, "snapshot_id", json_type_string, NULL) ||
	    (id = tool_arg_string(c, "snapshot_id")) == NULL) {
		mcp_call_reply(
		    c, tool_error("snapshot_id is required: from "
		                  "sandbox_snapshot or snapshot_list"));
		return;
	}
	if ((sb = sandbox_lookup(c, "container_id")) == NULL)
		return;
	if ((meta = snapshot_get(c->sess, id, err, sizeof err)) == NULL) {
		mcp_call_reply(c, tool_error("%s", err));
		return;
	}
	image = snapshot_meta_str(meta, "image");
	workdir = snapshot_meta_str(meta, "workdir");
	if (image == NULL || strcmp(image, sb->image) != 0 || workdir == NULL ||
	    strcmp(workdir, sb->workdir) != 0) {
		mcp_call_reply(c,
		    tool_error("snapshot %s is of a sandbox of image %s with "
		               "workdir %s; sandbox %.12s has image %s and "
		               "workdir %s: fork the snapshot instead "
		               "(sandbox_initialize with snapshot)",
		        id, image != NULL ? image : "?",
		        workdir != NULL ? workdir : "?", sb->id, sb->image,
		        sb->workdir));
		json_object_put(meta);
		return;
	}
	if (snapshot_restore(c, sb, meta, restored, NULL, err, sizeof err) ==
	    -1)
		mcp_call_reply(c, tool_error("restore failed: %s", err));
}

const struct tool tool_sandbox_restore = {
    .name = "sandbox_restore",
    .title = "Roll a sandbox back to a snapshot",
    .description =
        "Roll a sandbox back in place to one of this session's snapshots "
        "(of the same image and workdir): every process of the sandbox is "
        "killed (background processes and code sessions too: the next "
        "execute_code starts a new session), its workdir, /tmp and "
        "volumes are emptied and filled with the snapshot's files. Its "
        "limits, env and exposed ports stay as they are.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 0,
    .destructive = 1,
    .idempotent = 1,
    .open_world = 0,
    .task_support = 1,
    .exec = sandbox_restore,
};
