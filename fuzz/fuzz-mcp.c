/*
 * Fuzz the MCP request path (supervisor/mcp/mcp.c): each line of the input
 * goes to mcp_handle_line() of one session, as the stdio transport would
 * hand it over, and every message the server sends is serialized.
 *
 * No Docker engine is involved: there are no sandboxes, so the tools that
 * need one answer "no sandbox" at once; those that would make one
 * (sandbox_initialize, create_run_close, execute_code without a
 * container_id) are held back by --max-sandboxes 0, and the tools that
 * read or write host files by an empty host policy.
 * sup.engine stays NULL so that a path which would talk to the engine
 * after all crashes here instead of passing unnoticed, and each input
 * must leave no call in flight and no sandbox behind.
 *
 * The server proper registers no prompt, which leaves prompts/get and
 * completion/complete unknown; one harness prompt with a required
 * argument and a completer makes their argument checks reachable.
 *
 * With FUZZ_STRICT set, every message sent must also be one the server
 * itself would accept as input: strict JSON in valid UTF-8.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "config.h"
#include "core.h"
#include "fuzz.h"
#include "log.h"
#include "mcp.h"
#include "sandbox.h"

int LLVMFuzzerInitialize(int *, char ***);
int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct config conf;
static int strict;

static json_object *
fuzz_prompt_get(struct session *sess, json_object *args, const char **why)
{
	json_object *r;

	(void)sess;
	(void)args;
	(void)why;
	r = json_object_new_object();
	json_object_object_add(r, "messages", json_object_new_array());
	return r;
}

/* Every candidate that starts with the value typed so far. */
static json_object *
fuzz_prompt_complete(const char *arg, const char *value)
{
	static const char *const words[] = {"alice", "alan", "bob"};
	json_object *a;
	size_t i;

	if (strcmp(arg, "who") != 0)
		return NULL;
	a = json_object_new_array();
	for (i = 0; i < sizeof words / sizeof words[0]; i++)
		if (strncmp(words[i], value, strlen(value)) == 0)
			json_object_array_add(
			    a, json_object_new_string(words[i]));
	return a;
}

static const struct prompt fuzz_prompt = {
    .name = "fuzz_prompt",
    .description = "the fuzz harness's prompt",
    .arguments = "[{\"name\":\"who\",\"required\":true},"
                 "{\"name\":\"why\"}]",
    .get = fuzz_prompt_get,
    .complete = fuzz_prompt_complete,
};

/* The session's transport: serialize the message, then drop it. */
static void
fuzz_send(struct session *sess, json_object *msg)
{
	json_object *again;
	const char *s;
	size_t len;
	int err;

	(void)sess;
	s = json_object_to_json_string_length(
	    msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	fuzz_check(s != NULL && len > 0, "message does not serialize");
	if (strict) {
		again = rpc_parse(s, len, 1000, &err);
		if (err != 0)
			fprintf(stderr, "fuzz-mcp: sent %.300s\n", s);
		fuzz_check(
		    err == 0, "sent a message that is not strict UTF-8 JSON");
		json_object_put(again);
	}
	json_object_put(msg);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char arg0[] = "fuzz-mcp";
	static char *args[] = {arg0, NULL};

	(void)argc;
	(void)argv;
	strict = fuzz_env_strict();
	log_init("fuzz-mcp", LOG_ERROR);
	/* Progress timers are made on its loop, never run. */
	fuzz_supervisor(&conf, 1, args);
	if (prompts_register(&fuzz_prompt) == -1)
		fatalx("prompts_register");
	/* sup.hosts stays zeroed: no host directory is allowed. */
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct session *sess;
	const uint8_t *p = data, *end = data + size, *nl;
	char *line;
	size_t len;

	sess = mcp_session_new(fuzz_send, NULL);
	while (p < end) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		len = (size_t)(nl - p);
		if (len > 0 && p[len - 1] == '\r')
			len--;
		if (len > 0) {
			/* Exactly len bytes, no NUL: overreads show. */
			line = malloc(len);
			fuzz_check(line != NULL, "malloc");
			memcpy(line, p, len);
			mcp_handle_line(sess, line, len);
			free(line);
		}
		fuzz_check(
		    TAILQ_EMPTY(&sess->calls), "a call is still in flight");
		fuzz_check(sandbox_count() == 0, "a sandbox was made");
		p = nl + 1;
	}
	mcp_session_close(sess); /* frees it: no call, no sandbox */
	return 0;
}
