/*
 * sandbox_set_egress: the hosts a sandbox may reach through its egress
 * proxy, in place of those before (sandbox/egresslist.c: checked against
 * the operator's --egress-allow, then given to the sandbox's worker); an
 * empty list turns egress off.  The sandbox keeps network "none".
 */
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "core.h"
#include "mcp.h"
#include "sandbox.h"
#include "tools.h"
#include "xmalloc.h"

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\",\"description\":\"from "
    "sandbox_initialize (or the sandbox's name)\"},"
    "\"egress\":{\"type\":\"array\",\"maxItems\":32,\"items\":{"
    "\"type\":\"string\",\"minLength\":1,\"maxLength\":262},"
    "\"description\":\"the whole new list (it replaces the one before; "
    "[]: egress off): patterns such as \\\"pypi.org\\\", "
    "\\\"*.pythonhosted.org:443\\\" (names under it, port 443) or "
    "\\\"[::1]:8080\\\", each within what the operator allows "
    "(--egress-allow)\"}},"
    "\"required\":[\"container_id\",\"egress\"],"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\"},"
    "\"egress\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
    "\"description\":\"the sandbox's list now, as the server keeps it "
    "(lowercase, canonical); empty: egress off\"},"
    "\"proxy_port\":{\"type\":\"integer\",\"description\":\"the port "
    "of the proxy in the sandbox (127.0.0.1), which HTTP_PROXY and "
    "HTTPS_PROXY of its commands name; 0 with egress off (a listener "
    "left from before answers every request 403) or while it is not "
    "listening yet (the sandbox's agent not up)\"}},"
    "\"required\":[\"container_id\",\"egress\",\"proxy_port\"]}";

/* What the worker answered: the list it holds, and its proxy's port. */
static void
set_egress_done(
    struct sandbox *sb, json_object *res, const char *err, void *arg)
{
	struct call *c = arg;
	json_object *r, *allow, *v;
	char text[1536], list[1024];
	long long port = 0;
	size_t i;

	if (sb->dead) {
		mcp_call_reply(c, tool_error("sandbox %.12s was removed while "
		                             "its egress list was being set",
		                      sb->id != NULL ? sb->id : sb->name));
		return;
	}
	if (err != NULL) {
		egresslist_printable(err, text, sizeof text);
		mcp_call_reply(
		    c, tool_error("the egress list of sandbox %.12s was not "
		                  "changed: %s",
		           sb->id, text));
		return;
	}
	/* The worker's list, when it is one of strings; else the one it
	 * was sent, which is what the sandbox keeps. */
	allow = NULL;
	if (json_object_object_get_ex(res, "allow", &v) &&
	    json_object_is_type(v, json_type_array)) {
		allow = v;
		for (i = 0; i < json_object_array_length(v); i++)
			if (!json_object_is_type(
			        json_object_array_get_idx(v, i),
			        json_type_string))
				allow = NULL;
	}
	if (allow != NULL)
		allow = json_object_get(allow);
	else if (sb->egress != NULL)
		allow = json_object_get(sb->egress);
	else
		allow = json_object_new_array();
	if (json_object_object_get_ex(res, "proxy_port", &v) &&
	    json_object_is_type(v, json_type_int))
		port = (long long)json_object_get_int64(v);
	if (port < 0 || port > 65535)
		port = 0;
	r = json_object_new_object();
	json_object_object_add(
	    r, "container_id", json_object_new_string(sb->id));
	json_object_object_add(r, "egress", allow);
	json_object_object_add(r, "proxy_port", json_object_new_int64(port));
	if (json_object_array_length(allow) == 0)
		snprintf(text, sizeof text,
		    "egress of sandbox %.12s is off: nothing in it reaches "
		    "out",
		    sb->id);
	else {
		egresslist_text(allow, list, sizeof list);
		if (port > 0)
			snprintf(text, sizeof text,
			    "sandbox %.12s may reach %s through its proxy "
			    "(127.0.0.1:%lld, in HTTP_PROXY and HTTPS_PROXY of "
			    "its commands); other connections are refused "
			    "(403)",
			    sb->id, list, port);
		else
			snprintf(text, sizeof text,
			    "sandbox %.12s may reach %s through its proxy once "
			    "the proxy listens (its agent is not up yet); "
			    "other connections are refused (403)",
			    sb->id, list);
	}
	mcp_call_reply(c, tool_result(r, text, 0));
}

static void
sandbox_set_egress(struct call *c)
{
	struct sandbox *sb;
	json_object *v, *list;
	char *why;

	if ((sb = sandbox_lookup(c, "container_id")) == NULL)
		return;
	if (!json_object_object_get_ex(c->args, "egress", &v) || v == NULL) {
		mcp_call_reply(c,
		    tool_error("egress is required: the sandbox's whole new "
		               "list of host patterns ([] turns egress off)"));
		return;
	}
	if ((list = egresslist_check(sup.conf, v, &why)) == NULL) {
		mcp_call_reply(c, tool_error("%s", why));
		free(why);
		return;
	}
	egresslist_send(sb, list, set_egress_done, c);
	json_object_put(list);
}

const struct tool tool_sandbox_set_egress = {
    .name = "sandbox_set_egress",
    .title = "Set a sandbox's egress allowlist",
    .description =
        "Replace the list of hosts a sandbox may reach through its HTTP(S) "
        "proxy (e.g. [\"pypi.org\", \"*.pythonhosted.org:443\"] for pip; "
        "[] turns egress off). The sandbox keeps no network of its own: "
        "its commands get HTTP_PROXY and HTTPS_PROXY, the proxy lets "
        "through what the list allows and answers anything else with 403. "
        "Each entry must be within what the server's operator allows "
        "(--egress-allow). Connections opened afterwards are held to the "
        "new list (open ones stay); each command's result lists the "
        "connections it made (egress). "
        "Needs the sandbox's agent (the server's --agent on, its default).",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 0,
    .destructive = 0,
    .idempotent = 1,
    .open_world = 0,
    .exec = sandbox_set_egress,
};
