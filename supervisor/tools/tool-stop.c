/* sandbox_stop: stop (10 s grace, then kill) and remove with volumes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
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
    "\"removed\":{\"type\":\"boolean\"}},"
    "\"required\":[\"container_id\",\"removed\"]}";

struct stop {
	struct call *call;
	char *id;
};

static void
stopped(void *arg, const char *err)
{
	struct stop *s = arg;
	json_object *r;
	char *text;

	if (err != NULL)
		mcp_call_reply(
		    s->call, tool_error("sandbox %.12s was stopped but "
		                        "removing it failed: %s",
		                 s->id, err));
	else {
		r = json_object_new_object();
		json_object_object_add(
		    r, "container_id", json_object_new_string(s->id));
		json_object_object_add(
		    r, "removed", json_object_new_boolean(1));
		xasprintf(&text,
		    "Sandbox %.12s stopped and removed with its "
		    "volumes.",
		    s->id);
		mcp_call_reply(s->call, tool_result(r, text, 0));
		free(text);
	}
	free(s->id);
	free(s);
}

static void
sandbox_stop(struct call *c)
{
	struct sandbox *sb;
	struct stop *s;
	const char *id;

	/* A lost sandbox may still be stopped: it leaves the registry, its
	 * container goes when its engine answers again (the reaper). */
	if (!tool_arg_type_ok(c, "container_id", json_type_string, NULL) ||
	    (id = tool_arg_string(c, "container_id")) == NULL ||
	    (sb = sandbox_find(c->sess, id)) == NULL || !sb->lost)
		if ((sb = sandbox_lookup(c, "container_id")) == NULL)
			return;
	s = xcalloc(1, sizeof *s);
	s->call = c;
	s->id = xstrdup(sb->id);
	sandbox_destroy(sb, stopped, s);
}

const struct tool tool_sandbox_stop = {
    .name = "sandbox_stop",
    .title = "Stop and remove a sandbox",
    .description = "Stop a sandbox (10 seconds' grace, then kill) and "
                   "remove its container and volumes. Commands still "
                   "running in it are killed.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 0,
    .destructive = 1,
    .idempotent = 0,
    .open_world = 0,
    .exec = sandbox_stop,
};
