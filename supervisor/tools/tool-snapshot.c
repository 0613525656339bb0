/*
 * sandbox_snapshot: a sandbox's writable state (its workdir, /tmp and its
 * image's VOLUMEs) kept on the host, with what it was created with
 * (run/snapshot.c).
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
    "\"name\":{\"type\":\"string\",\"maxLength\":128,\"description\":"
    "\"a label for snapshot_list\"}},"
    "\"required\":[\"container_id\"],\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{" TOOL_SNAPSHOT_PROPS ","
    "\"skipped\":{\"type\":\"integer\",\"description\":\"entries left "
    "out: sockets, FIFOs, devices\"},"
    "\"duration_ms\":{\"type\":\"integer\"}},"
    "\"required\":[\"snapshot_id\",\"bytes\",\"files\",\"duration_ms\"]}";

static void
taken(struct call *c, json_object *meta, const char *error, void *arg)
{
	json_object *o, *v;
	char *text;

	(void)arg;
	if (error != NULL) {
		mcp_call_reply(c, tool_error("snapshot failed: %s (nothing "
		                             "was kept)",
		                      error));
		return;
	}
	o = snapshot_json(meta);
	json_object_object_get_ex(meta, "skipped", &v);
	json_object_object_add(o, "skipped", json_object_get(v));
	json_object_object_get_ex(meta, "duration_ms", &v);
	json_object_object_add(o, "duration_ms", json_object_get(v));
	xasprintf(&text,
	    "Snapshot %s of sandbox %.12s: %lld files and directories, %lld "
	    "bytes, in %lld ms. Roll back with sandbox_restore, or fork it "
	    "with sandbox_initialize {\"snapshot\": \"%s\"}.",
	    snapshot_meta_str(meta, "snapshot_id"),
	    snapshot_meta_str(meta, "source"),
	    (long long)json_object_get_int64(
	        json_object_object_get(o, "files")),
	    (long long)json_object_get_int64(
	        json_object_object_get(o, "bytes")),
	    (long long)json_object_get_int64(v),
	    snapshot_meta_str(meta, "snapshot_id"));
	mcp_call_reply(c, tool_result(o, text, 0));
	free(text);
}

static void
sandbox_snapshot(struct call *c)
{
	struct sandbox *sb;
	const char *name;
	char err[512];

	if (!tool_arg_type_ok(c, "name", json_type_string, NULL)) {
		mcp_call_reply(c, tool_error("name must be a string"));
		return;
	}
	name = tool_arg_string(c, "name");
	if ((sb = sandbox_lookup(c, "container_id")) == NULL)
		return;
	if (snapshot_take(c, sb, name, taken, NULL, err, sizeof err) == -1)
		mcp_call_reply(c, tool_error("snapshot failed: %s", err));
}

const struct tool tool_sandbox_snapshot = {
    .name = "sandbox_snapshot",
    .title = "Snapshot a sandbox",
    .description =
        "Keep a sandbox's writable state on the host: its workdir (with "
        "installed packages), /tmp and its image's VOLUMEs, with the image, "
        "limits and env it was created with. The snapshot is one point in "
        "time: the sandbox's processes are stopped while it is taken and "
        "continued after, and commands sent meanwhile wait. Roll back with "
        "sandbox_restore; fork with sandbox_initialize {\"snapshot\": ID}. "
        "Snapshots belong to this session (over stdio: to the user running "
        "the server, and they outlive a restart), are capped "
        "(--snapshot-max-mb each, --snapshot-mb together) and expire "
        "(--snapshot-ttl).",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 0,
    .destructive = 0,
    .idempotent = 0,
    .open_world = 0,
    .task_support = 1,
    .exec = sandbox_snapshot,
};
