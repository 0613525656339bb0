/* get_sandbox_status: state, limits and usage of one or all sandboxes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include "config.h"
#include "core.h"
#include "engine.h"
#include "mcp.h"
#include "run.h"
#include "sandbox.h"
#include "tools.h"
#include "xmalloc.h"

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\",\"description\":\"one "
    "sandbox; without it, all of them\"}},"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"sandboxes\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"properties\":{\"container_id\":{\"type\":\"string\"},"
    "\"name\":{\"type\":\"string\"},\"state\":{\"type\":\"string\","
    "\"description\":\"the engine's word (running, exited...), "
    "starting, stopping, or lost: its engine stopped answering\"},"
    "\"engine\":{\"type\":\"string\",\"description\":\"the URL of "
    "the engine it is on\"},"
    "\"lost\":{\"type\":\"string\",\"description\":\"why it is "
    "lost, when its state is lost\"},"
    "\"paused\":{\"type\":\"boolean\",\"description\":\"its container "
    "is paused (idle past --pause-after); the next call resumes it\"},"
    "\"from_pool\":{\"type\":\"boolean\"},"
    "\"runtime\":{\"type\":\"string\",\"description\":\"its OCI "
    "runtime (runsc: gVisor; default: the engine's default)\"},"
    "\"image\":{\"type\":\"string\"},\"workdir\":{\"type\":\"string\"},"
    "\"created\":{\"type\":\"string\"},\"expires_at\":{\"type\":\"string\"},"
    "\"limits\":{\"type\":\"object\"},"
    "\"usage\":{\"type\":\"object\",\"properties\":{"
    "\"memory_bytes\":{\"type\":\"integer\"},"
    "\"pids\":{\"type\":\"integer\"}}},"
    "\"exec_count\":{\"type\":\"integer\"},"
    "\"idle_expires_at\":{\"type\":\"string\"},"
    "\"removal_in_seconds\":{\"type\":\"integer\",\"description\":"
    "\"when the sandbox will be removed (lifetime or idle limit)\"},"
    "\"worker_pid\":{\"type\":\"integer\"},"
    "\"exposed_ports\":{\"type\":\"array\",\"description\":\"its ports "
    "exposed on the host (sandbox_expose_port)\",\"items\":{\"type\":"
    "\"object\",\"properties\":{\"port\":{\"type\":\"integer\"},"
    "\"url\":{\"type\":\"string\"},\"host_port\":{\"type\":"
    "\"integer\"}},\"required\":[\"port\",\"url\",\"host_port\"]}},"
    "\"egress\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
    "\"description\":\"the hosts it may reach through its egress proxy "
    "(sandbox_initialize's egress, sandbox_set_egress); empty: egress "
    "off\"}},"
    "\"required\":[\"container_id\",\"name\",\"state\",\"image\","
    "\"created\",\"expires_at\",\"limits\",\"exec_count\"]}},"
    "\"stats\":{\"type\":\"object\",\"description\":\"the server's "
    "statistics, as sandbox://stats\"}},"
    "\"required\":[\"sandboxes\"]}";

struct status {
	struct call *call;
	json_object *list;
	int pending;
};

struct entry {
	struct status *st;
	json_object *obj; /* borrowed from st->list */
};

static void
iso_time(time_t t, char *buf, size_t len)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void
status_done(struct status *st)
{
	struct evbuffer *t;
	json_object *r, *e, *v, *u;
	char list[1024];
	size_t i, j, n;

	if (--st->pending > 0)
		return;
	t = evbuffer_new();
	n = json_object_array_length(st->list);
	if (n == 0)
		evbuffer_add_printf(t, "No sandboxes.");
	for (i = 0; i < n; i++) {
		e = json_object_array_get_idx(st->list, i);
		json_object_object_get_ex(e, "container_id", &v);
		evbuffer_add_printf(t, "%.12s", json_object_get_string(v));
		json_object_object_get_ex(e, "name", &v);
		evbuffer_add_printf(t, " (%s)", json_object_get_string(v));
		json_object_object_get_ex(e, "state", &v);
		evbuffer_add_printf(t, ": %s", json_object_get_string(v));
		json_object_object_get_ex(e, "engine", &v);
		evbuffer_add_printf(t, " on %s", json_object_get_string(v));
		if (json_object_object_get_ex(e, "lost", &v))
			evbuffer_add_printf(
			    t, " (%s)", json_object_get_string(v));
		json_object_object_get_ex(e, "image", &v);
		evbuffer_add_printf(t, ", image %s", json_object_get_string(v));
		json_object_object_get_ex(e, "runtime", &v);
		evbuffer_add_printf(
		    t, ", runtime %s", json_object_get_string(v));
		if (json_object_object_get_ex(e, "usage", &u) &&
		    json_object_object_get_ex(u, "memory_bytes", &v))
			evbuffer_add_printf(t, ", memory %lld KiB",
			    (long long)json_object_get_int64(v) / 1024);
		json_object_object_get_ex(e, "exec_count", &v);
		evbuffer_add_printf(
		    t, ", %lld exec(s)", (long long)json_object_get_int64(v));
		json_object_object_get_ex(e, "expires_at", &v);
		evbuffer_add_printf(
		    t, ", expires %s", json_object_get_string(v));
		json_object_object_get_ex(e, "removal_in_seconds", &v);
		evbuffer_add_printf(t, " (removed in %lld s unless used)",
		    (long long)json_object_get_int64(v));
		if (json_object_object_get_ex(e, "exposed_ports", &u))
			for (j = 0; j < json_object_array_length(u); j++) {
				v = json_object_array_get_idx(u, j);
				evbuffer_add_printf(t, "%s port %lld at %s",
				    j == 0 ? "; exposed:" : ",",
				    (long long)json_object_get_int64(
				        json_object_object_get(v, "port")),
				    json_object_get_string(
				        json_object_object_get(v, "url")));
			}
		if (json_object_object_get_ex(e, "egress", &u) &&
		    json_object_array_length(u) > 0) {
			egresslist_text(u, list, sizeof list);
			evbuffer_add_printf(t, "; egress to %s", list);
		}
		evbuffer_add(t, "\n", 1);
	}
	evbuffer_add(t, "", 1);
	r = json_object_new_object();
	json_object_object_add(r, "sandboxes", st->list);
	json_object_object_add(r, "stats", stats_json());
	mcp_call_reply(
	    st->call, tool_result(r, (char *)evbuffer_pullup(t, -1), 0));
	evbuffer_free(t);
	free(st);
}

static void
status_inspect_cb(const struct engine_resp *resp, void *arg)
{
	struct entry *en = arg;

	if (resp->notfound)
		json_object_object_add(
		    en->obj, "state", json_object_new_string("gone"));
	else if (resp->container != NULL && resp->container->status != NULL)
		json_object_object_add(en->obj, "state",
		    json_object_new_string(resp->container->status));
	status_done(en->st);
	free(en);
}

static void
status_stats_cb(const struct engine_resp *resp, void *arg)
{
	struct entry *en = arg;
	const struct engine_stats *st = resp->stats;
	json_object *usage;

	if (st != NULL) {
		usage = json_object_new_object();
		if (st->have_memory)
			json_object_object_add(usage, "memory_bytes",
			    json_object_new_int64(st->memory_bytes));
		if (st->have_pids)
			json_object_object_add(
			    usage, "pids", json_object_new_int64(st->pids));
		json_object_object_add(en->obj, "usage", usage);
	}
	status_done(en->st);
	free(en);
}

static void
status_add(struct status *st, struct sandbox *sb)
{
	struct entry *en;
	json_object *o;
	time_t deadline;
	int idle;
	char when[32], why[512];

	o = json_object_new_object();
	json_object_object_add(
	    o, "container_id", json_object_new_string(sb->id));
	json_object_object_add(o, "name", json_object_new_string(sb->name));
	json_object_object_add(o, "state",
	    json_object_new_string(sb->lost                   ? "lost"
	                           : sb->state == SB_READY    ? "unknown"
	                           : sb->state == SB_STARTING ? "starting"
	                                                      : "stopping"));
	json_object_object_add(
	    o, "engine", json_object_new_string(engines_url(sb->engine)));
	if (sb->lost) {
		sandbox_lost_text(sb, why, sizeof why);
		json_object_object_add(o, "lost", json_object_new_string(why));
	}
	json_object_object_add(o, "image", json_object_new_string(sb->image));
	json_object_object_add(
	    o, "workdir", json_object_new_string(sb->workdir));
	iso_time(sb->created, when, sizeof when);
	json_object_object_add(o, "created", json_object_new_string(when));
	iso_time(sb->expires, when, sizeof when);
	json_object_object_add(o, "expires_at", json_object_new_string(when));
	if (sup.conf->idle_ttl > 0) {
		iso_time(sb->last_used + sup.conf->idle_ttl, when, sizeof when);
		json_object_object_add(
		    o, "idle_expires_at", json_object_new_string(when));
	}
	/* The model should know before the sandbox goes. */
	deadline = sandbox_deadline(sb, &idle);
	json_object_object_add(o, "removal_in_seconds",
	    json_object_new_int64((int64_t)(deadline - time(NULL))));
	json_object_object_add(o, "limits", sandbox_limits_json(sb));
	json_object_object_add(
	    o, "exec_count", json_object_new_int64(sb->exec_count));
	json_object_object_add(
	    o, "paused", json_object_new_boolean(sb->paused));
	json_object_object_add(
	    o, "from_pool", json_object_new_boolean(sb->from_pool));
	json_object_object_add(
	    o, "runtime", json_object_new_string(sandbox_runtime_name(sb)));
	if (sb->worker != NULL)
		json_object_object_add(o, "worker_pid",
		    json_object_new_int(wproc_pid(sb->worker)));
	json_object_object_add(o, "exposed_ports", expose_list(sb));
	json_object_object_add(o, "egress",
	    sb->egress != NULL ? json_object_get(sb->egress)
	                       : json_object_new_array());
	json_object_array_add(st->list, o);
	/* A lost one's engine is not asked (it does not answer). */
	if (sb->id == NULL || sb->state != SB_READY || sb->lost)
		return;

	en = xcalloc(1, sizeof *en);
	en->st = st;
	en->obj = o;
	st->pending++;
	engine_container_inspect(sb->engine, sb->id, status_inspect_cb, en);
	en = xcalloc(1, sizeof *en);
	en->st = st;
	en->obj = o;
	st->pending++;
	engine_container_stats(sb->engine, sb->id, status_stats_cb, en);
}

static void
get_sandbox_status(struct call *c)
{
	struct status *st;
	struct sandbox *sb;

	st = xcalloc(1, sizeof *st);
	st->call = c;
	st->list = json_object_new_array();
	st->pending = 1;
	if (json_object_object_get_ex(c->args, "container_id", NULL)) {
		/* A lost sandbox has a status (lost), not the error every
		 * other call on it gets. */
		if (tool_arg_type_ok(
		        c, "container_id", json_type_string, NULL) &&
		    tool_arg_string(c, "container_id") != NULL &&
		    (sb = sandbox_find(c->sess,
		         tool_arg_string(c, "container_id"))) != NULL &&
		    sb->lost)
			status_add(st, sb);
		else if ((sb = sandbox_lookup(c, "container_id")) == NULL) {
			json_object_put(st->list);
			free(st);
			return;
		} else
			status_add(st, sb);
	} else
		TAILQ_FOREACH(sb, &sandboxes, entry)
	if (sb->id != NULL && sb->owner == c->sess)
		status_add(st, sb);
	status_done(st);
}

const struct tool tool_get_sandbox_status = {
    .name = "get_sandbox_status",
    .title = "Sandbox status",
    .description = "State, image, creation and expiry times, limits, "
                   "memory and process usage, exec count, worker pid, "
                   "exposed ports and egress allowlist of one sandbox, or "
                   "of all of this client's sandboxes.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 1,
    .destructive = 0,
    .idempotent = 1,
    .open_world = 0,
    .exec = get_sandbox_status,
};
