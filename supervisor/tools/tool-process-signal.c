/*
 * process_signal: send TERM, INT, HUP or KILL to a background process:
 * its process group and everything carrying its token, inside the
 * sandbox (the agent sends it, or the engine's exec runs the killer).
 */
#include <signal.h>
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
    "\"container_id\":{\"type\":\"string\"},"
    "\"process_id\":{\"type\":\"integer\",\"minimum\":1},"
    "\"signal\":{\"type\":\"string\",\"enum\":[\"TERM\",\"INT\",\"HUP\","
    "\"KILL\"],\"default\":\"TERM\"}},"
    "\"required\":[\"container_id\",\"process_id\"],"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\"},"
    "\"signal\":{\"type\":\"string\"},"
    "\"sent\":{\"type\":\"boolean\",\"description\":\"false: it had "
    "already ended\"},"
    "\"process\":" TOOL_PROCESS_SCHEMA "},"
    "\"required\":[\"container_id\",\"signal\",\"sent\",\"process\"]}";

static void
process_signal(struct call *c)
{
	static const struct {
		const char *name;
		int sig;
	} sigs[] = {{"TERM", SIGTERM}, {"INT", SIGINT}, {"HUP", SIGHUP},
	    {"KILL", SIGKILL}};
	struct sandbox *sb;
	struct bgproc *bp;
	const char *name;
	json_object *r;
	char *text;
	size_t i;
	int sent;

	if ((bp = tool_process_find(c, &sb)) == NULL)
		return;
	if (!tool_arg_type_ok(c, "signal", json_type_string, NULL)) {
		mcp_call_reply(
		    c, tool_error("signal must be TERM, INT, HUP or KILL"));
		return;
	}
	if ((name = tool_arg_string(c, "signal")) == NULL)
		name = "TERM";
	for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		if (strcmp(sigs[i].name, name) == 0)
			break;
	if (i == sizeof sigs / sizeof sigs[0]) {
		mcp_call_reply(
		    c, tool_error("signal must be TERM, INT, HUP or KILL"));
		return;
	}
	sent = bgproc_is_running(bp);
	bgproc_signal(bp, sigs[i].sig);
	r = json_object_new_object();
	json_object_object_add(
	    r, "container_id", json_object_new_string(sb->id));
	json_object_object_add(r, "signal", json_object_new_string(name));
	json_object_object_add(r, "sent", json_object_new_boolean(sent));
	json_object_object_add(r, "process", bgproc_json(bp));
	xasprintf(&text,
	    sent ? "sent SIG%s to process %u; process_wait gives its end"
	         : "process %2$u had already ended (SIG%1$s not sent)",
	    name, bgproc_id(bp));
	mcp_call_reply(c, tool_result(r, text, 0));
	free(text);
}

const struct tool tool_process_signal = {
    .name = "process_signal",
    .title = "Signal a background process",
    .description = "Send TERM (the default), INT, HUP or KILL to a "
                   "background process: its process group and every "
                   "process it started, inside the sandbox. KILL cannot "
                   "be caught; the others can. process_wait gives its "
                   "end.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 0,
    .destructive = 1,
    .idempotent = 0,
    .open_world = 0,
    .exec = process_signal,
};
