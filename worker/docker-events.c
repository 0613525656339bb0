/*
 * The engine's event stream for this container, followed for the worker's
 * lifetime: an OOM kill of an exec does not set the container's OOMKilled,
 * only an "oom" event says it happened.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "docker.h"
#include "log.h"
#include "worker.h"
#include "xmalloc.h"

static struct docker_req *events_req;
static json_tokener *events_tok;

static int
events_data_cb(const char *p, size_t len, void *arg)
{
	struct worker *w = arg;
	json_object *ev, *action;
	enum json_tokener_error jerr;
	size_t used;

	while (len > 0) {
		ev = json_tokener_parse_ex(events_tok, p, (int)len);
		jerr = json_tokener_get_error(events_tok);
		if (jerr == json_tokener_continue)
			return 0;
		used = json_tokener_get_parse_end(events_tok);
		json_tokener_reset(events_tok);
		if (ev == NULL) {
			log_warnx("%s: bad event from the engine", __func__);
			return -1;
		}
		if (json_object_object_get_ex(ev, "Action", &action) &&
		    strcmp(json_object_get_string(action), "oom") == 0) {
			w->oom_count++;
			log_info("out of memory in the sandbox");
		}
		json_object_put(ev);
		/* Skip the newline between events. */
		while (used < len && (p[used] == '\n' || p[used] == '\r'))
			used++;
		p += used;
		len -= used;
	}
	return 0;
}

static void
events_done_cb(const struct docker_resp *resp, void *arg)
{
	(void)arg;
	events_req = NULL;
	if (resp->error != NULL)
		log_warnx("%s: event stream ended: %s", __func__, resp->error);
}

void
events_start(struct worker *w)
{
	json_object *filters, *a;
	char *path, *esc;

	events_tok = json_tokener_new_ex(16);
	filters = json_object_new_object();
	a = json_object_new_array();
	json_object_array_add(a, json_object_new_string(w->container));
	json_object_object_add(filters, "container", a);
	a = json_object_new_array();
	json_object_array_add(a, json_object_new_string("oom"));
	json_object_object_add(filters, "event", a);
	esc = docker_escape(
	    json_object_to_json_string_ext(filters, JSON_C_TO_STRING_PLAIN));
	xasprintf(&path, "/events?filters=%s", esc);
	events_req = docker_stream(
	    w->docker, "GET", path, NULL, events_data_cb, events_done_cb, w);
	free(path);
	free(esc);
	json_object_put(filters);
}

void
events_stop(struct worker *w)
{
	(void)w;
	if (events_req != NULL)
		docker_req_cancel(events_req);
	events_req = NULL;
	if (events_tok != NULL)
		json_tokener_free(events_tok);
	events_tok = NULL;
}
