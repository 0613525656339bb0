/*
 * sandbox_expose_port: a port the sandbox listens on (its loopback) made
 * reachable from the host, at http://127.0.0.1:NNNN/ (--expose-bind),
 * relayed by the sandbox's worker and agent (run/expose.c).  The sandbox
 * keeps its network "none": nothing in it reaches out.
 */
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "core.h"
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
    "\"description\":\"the TCP port a server in the sandbox listens on "
    "(on 127.0.0.1 or every address of the sandbox)\"}},"
    "\"required\":[\"container_id\",\"port\"],"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\"},"
    "\"port\":{\"type\":\"integer\",\"description\":\"in the sandbox\"},"
    "\"url\":{\"type\":\"string\",\"description\":\"where the host "
    "reaches it, http://ADDRESS:HOST_PORT/\"},"
    "\"host_port\":{\"type\":\"integer\"},"
    "\"address\":{\"type\":\"string\",\"description\":\"the host address "
    "it listens on\"},"
    "\"auth\":{\"type\":\"boolean\",\"description\":\"each connection's "
    "first request must send the server's HTTP bearer token "
    "(Authorization: Bearer)\"},"
    "\"already_exposed\":{\"type\":\"boolean\"}},"
    "\"required\":[\"container_id\",\"port\",\"url\",\"host_port\","
    "\"address\",\"auth\"]}";

/* The structured result of an exposed port (shared with nothing). */
static json_object *
exposed_json(struct sandbox *sb, const struct exposed *e)
{
	json_object *r;

	r = json_object_new_object();
	json_object_object_add(
	    r, "container_id", json_object_new_string(sb->id));
	json_object_object_add(r, "port", json_object_new_int(e->port));
	json_object_object_add(r, "url", json_object_new_string(e->url));
	json_object_object_add(
	    r, "host_port", json_object_new_int(e->host_port));
	json_object_object_add(
	    r, "address", json_object_new_string(e->address));
	json_object_object_add(r, "auth", json_object_new_boolean(e->auth));
	json_object_object_add(
	    r, "already_exposed", json_object_new_boolean(e->existing));
	return r;
}

static void
expose_answer(struct call *c, const struct exposed *e, const char *err)
{
	struct sandbox *sb = c->state;
	char *text;

	c->state = NULL;
	/* The agent is named when it is the likely cause: off (said by
	 * expose_port() itself), or not up in this sandbox. */
	if (e == NULL)
		mcp_call_reply(c,
		    tool_error("cannot expose port %lld of the sandbox: %s%s",
		        (long long)json_object_get_int64(
		            json_object_object_get(c->args, "port")),
		        err,
		        sb->agent_ready || !sup.conf->agent
		            ? ""
		            : ". Exposed ports are relayed by the sandbox's "
		              "agent (the server's --agent option, on by "
		              "default), which is not running in this sandbox "
		              "now (it may still be starting: try again in a "
		              "moment)"));
	else {
		xasprintf(&text, "port %d of sandbox %.12s is at %s%s%s",
		    e->port, sb->id, e->url,
		    e->auth ? " (send the server's bearer token: "
		              "Authorization: Bearer <token>)"
		            : "",
		    e->existing ? " (it was exposed already)" : "");
		mcp_call_reply(c, tool_result(exposed_json(sb, e), text, 0));
		free(text);
	}
	sandbox_unref(sb);
}

static void
sandbox_expose_port(struct call *c)
{
	struct sandbox *sb;
	json_object *v;

	if ((sb = sandbox_lookup(c, "container_id")) == NULL)
		return;
	if (!tool_arg_type_ok(c, "port", json_type_int, &v) || v == NULL) {
		mcp_call_reply(c, tool_error("port is required: the port (1 "
		                             "to 65535) a server in the "
		                             "sandbox listens on"));
		return;
	}
	/* Held until the answer (its id names it in the text). */
	c->state = sandbox_ref(sb);
	expose_port(c, sb, (int)json_object_get_int64(v), expose_answer);
}

const struct tool tool_sandbox_expose_port = {
    .name = "sandbox_expose_port",
    .title = "Expose a sandbox port on the host",
    .description =
        "Make a TCP port a server in the sandbox listens on (e.g. python3 "
        "-m http.server 8000, started with sandbox_exec background: true) "
        "reachable from the host: the result's url "
        "(http://127.0.0.1:NNNN/, a free host port) is relayed to the "
        "sandbox's own port 8000. The sandbox keeps no network of its own. "
        "Exposing a port already exposed gives the same url. The port "
        "stays exposed until sandbox_unexpose_port or the sandbox's end; "
        "get_sandbox_status lists them. Needs the sandbox's agent (the "
        "server's --agent on, its default).",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 0,
    .destructive = 0,
    .idempotent = 1,
    .open_world = 0,
    .exec = sandbox_expose_port,
};
