/*
 * process_output: new output of a background process from given offsets,
 * a bounded page of each stream; with wait_seconds, waits for output or
 * the end when there is none yet.
 */
#include <stdio.h>
#include <stdlib.h>

#include "mcp.h"
#include "run.h"
#include "sandbox.h"
#include "tools.h"
#include "xmalloc.h"

#define OUTPUT_DEFAULT_BYTES (64 * 1024)
#define OUTPUT_MAX_BYTES (1024 * 1024)
#define OUTPUT_MAX_WAIT 300

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\"},"
    "\"process_id\":{\"type\":\"integer\",\"minimum\":1},"
    "\"stdout_offset\":{\"type\":\"integer\",\"minimum\":0,\"default\":0,"
    "\"description\":\"where to read stdout from (the last answer's "
    "stdout_next_offset)\"},"
    "\"stderr_offset\":{\"type\":\"integer\",\"minimum\":0,\"default\":0},"
    "\"max_bytes\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1048576,"
    "\"default\":65536,\"description\":\"of each stream in this answer\"},"
    "\"wait_seconds\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":300,"
    "\"default\":0,\"description\":\"with nothing new yet, wait this long "
    "for output or the end\"}},"
    "\"required\":[\"container_id\",\"process_id\"],"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\"},"
    "\"process\":" TOOL_PROCESS_SCHEMA ","
    "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
    "\"stdout_offset\":{\"type\":\"integer\"},"
    "\"stderr_offset\":{\"type\":\"integer\"},"
    "\"stdout_next_offset\":{\"type\":\"integer\"},"
    "\"stderr_next_offset\":{\"type\":\"integer\"},"
    "\"stdout_remaining\":{\"type\":\"integer\",\"description\":\"bytes "
    "after this page, already there\"},"
    "\"stderr_remaining\":{\"type\":\"integer\"},"
    "\"stdout_skipped\":{\"type\":\"integer\",\"description\":\"bytes "
    "from the offset asked that were dropped for the spool's cap\"},"
    "\"stderr_skipped\":{\"type\":\"integer\"},"
    "\"state\":{\"type\":\"string\"}},"
    "\"required\":[\"container_id\",\"process\",\"stdout\",\"stderr\","
    "\"stdout_next_offset\",\"stderr_next_offset\",\"state\"]}";

static void
output_answer(struct call *c, struct bgproc *bp, const struct bg_ask *ask)
{
	static const char *const move[] = {"stdout", "stderr", "stdout_offset",
	    "stderr_offset", "stdout_next_offset", "stderr_next_offset",
	    "stdout_remaining", "stderr_remaining", "stdout_skipped",
	    "stderr_skipped", NULL};
	json_object *o, *r, *v;
	char *text;
	int i;

	if (bp == NULL) {
		mcp_call_reply(c, tool_error("the sandbox was stopped while "
		                             "the call waited; its background "
		                             "processes were killed"));
		return;
	}
	o = bgproc_output(bp, ask);
	r = json_object_new_object();
	json_object_object_add(r, "container_id",
	    json_object_new_string(tool_arg_string(c, "container_id")));
	for (i = 0; move[i] != NULL; i++)
		if (json_object_object_get_ex(o, move[i], &v)) {
			json_object_object_add(r, move[i], json_object_get(v));
			json_object_object_del(o, move[i]);
		}
	json_object_object_get_ex(o, "state", &v);
	json_object_object_add(r, "state", json_object_get(v));
	json_object_object_add(r, "process", o);
	json_object_object_get_ex(r, "stdout", &v);
	xasprintf(&text, "process %u is %s; stdout:\n%s", bgproc_id(bp),
	    bgproc_is_running(bp) ? "running" : "exited",
	    json_object_get_string(v));
	mcp_call_reply(c, tool_result(r, text, 0));
	free(text);
}

static int
int_arg(struct call *c, const char *key, long long def, long long lo,
    long long hi, long long *out)
{
	json_object *v;

	if (!tool_arg_type_ok(c, key, json_type_int, &v) ||
	    (v != NULL && (json_object_get_int64(v) < lo ||
	                      json_object_get_int64(v) > hi))) {
		mcp_call_reply(
		    c, tool_error("%s must be an integer from %lld to %lld",
		           key, lo, hi));
		return -1;
	}
	*out = v != NULL ? json_object_get_int64(v) : def;
	return 0;
}

static void
process_output(struct call *c)
{
	struct sandbox *sb;
	struct bgproc *bp;
	struct bg_ask ask;
	long long wait;

	if ((bp = tool_process_find(c, &sb)) == NULL)
		return;
	ask.output = 1;
	if (int_arg(c, "stdout_offset", 0, 0, 1LL << 50, &ask.off[0]) == -1 ||
	    int_arg(c, "stderr_offset", 0, 0, 1LL << 50, &ask.off[1]) == -1 ||
	    int_arg(c, "max_bytes", OUTPUT_DEFAULT_BYTES, 1, OUTPUT_MAX_BYTES,
	        &ask.max) == -1 ||
	    int_arg(c, "wait_seconds", 0, 0, OUTPUT_MAX_WAIT, &wait) == -1)
		return;
	bgproc_wait(bp, c, &ask, wait * 1000, output_answer);
}

const struct tool tool_process_output = {
    .name = "process_output",
    .title = "Read a background process's output",
    .description = "New output of a background process, from the offsets "
                   "given (0 at first, then the last answer's "
                   "stdout_next_offset and stderr_next_offset), at most "
                   "max_bytes of each stream; *_remaining says how much "
                   "more is already there. wait_seconds waits for output "
                   "or the end when there is nothing new yet.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 1,
    .destructive = 0,
    .idempotent = 1,
    .open_world = 0,
    .exec = process_output,
};
