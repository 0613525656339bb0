/*
 * The engine's event stream for this container, followed for the worker's
 * lifetime: an OOM kill of an exec does not set the container's OOMKilled,
 * only an "oom" event says it happened; and a container that dies or is
 * removed behind our back ("die", "destroy") is reported to the supervisor
 * (PROTO_NOTIFY "gone").  When the stream breaks (the engine restarted),
 * it is followed again with a growing delay, and the container is looked
 * at: an engine restart without live-restore leaves it stopped.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "docker.h"
#include "log.h"
#include "proto.h"
#include "worker.h"
#include "xmalloc.h"

#define EVENTS_RETRY_MAX_S 30

static struct {
	struct worker *w;
	struct docker_req *req, *check;
	json_tokener *tok;
	struct event *retry;
	int delay; /* seconds before the next attempt */
	int gone; /* reported already */
} ev;

static void events_follow(void);

static void
events_gone(const char *why)
{
	json_object *o;

	if (ev.gone || ev.w->quitting)
		return;
	ev.gone = 1;
	log_info("container gone: %s", why);
	o = json_object_new_object();
	json_object_object_add(o, "event", json_object_new_string("gone"));
	json_object_object_add(o, "why", json_object_new_string(why));
	worker_send_json(ev.w, PROTO_NOTIFY, 0, o);
	json_object_put(o);
}

static int
events_data_cb(const char *p, size_t len, void *arg)
{
	struct worker *w = arg;
	json_object *e, *action;
	enum json_tokener_error jerr;
	const char *a;
	size_t used;

	ev.delay = 1; /* the stream works */
	while (len > 0) {
		e = json_tokener_parse_ex(ev.tok, p, (int)len);
		jerr = json_tokener_get_error(ev.tok);
		if (jerr == json_tokener_continue)
			return 0;
		used = json_tokener_get_parse_end(ev.tok);
		json_tokener_reset(ev.tok);
		if (e == NULL) {
			log_warnx("%s: bad event from the engine", __func__);
			return -1;
		}
		if (json_object_object_get_ex(e, "Action", &action)) {
			a = json_object_get_string(action);
			if (strcmp(a, "oom") == 0) {
				w->oom_count++;
				log_info("out of memory in the sandbox");
			} else if (strcmp(a, "die") == 0 ||
			           strcmp(a, "destroy") == 0)
				events_gone(strcmp(a, "die") == 0
				                ? "the container stopped"
				                : "the container was removed");
		}
		json_object_put(e);
		/* Skip the newline between events. */
		while (used < len && (p[used] == '\n' || p[used] == '\r'))
			used++;
		p += used;
		len -= used;
	}
	return 0;
}

static void
events_checked_cb(const struct docker_resp *resp, void *arg)
{
	json_object *state, *running;

	(void)arg;
	ev.check = NULL;
	if (resp->status == 404)
		events_gone("the container was removed");
	else if (resp->json != NULL &&
	         json_object_object_get_ex(resp->json, "State", &state) &&
	         json_object_object_get_ex(state, "Running", &running) &&
	         !json_object_get_boolean(running))
		events_gone("the container stopped");
}

static void
events_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	char *path, *esc;

	(void)fd;
	(void)what;
	(void)arg;
	if (ev.w->quitting || ev.gone)
		return;
	events_follow();
	if (ev.check == NULL) {
		esc = docker_escape(ev.w->container);
		xasprintf(&path, "/containers/%s/json", esc);
		ev.check = docker_call(
		    ev.w->docker, "GET", path, NULL, events_checked_cb, NULL);
		free(path);
		free(esc);
	}
}

static void
events_done_cb(const struct docker_resp *resp, void *arg)
{
	struct timeval tv = {0, 0};

	(void)arg;
	ev.req = NULL;
	if (ev.w->quitting || ev.gone)
		return;
	log_warnx("%s: event stream ended (%s); following it again in %d s",
	    __func__, resp->error != NULL ? resp->error : "closed", ev.delay);
	tv.tv_sec = ev.delay;
	evtimer_add(ev.retry, &tv);
	ev.delay = ev.delay * 2 > EVENTS_RETRY_MAX_S ? EVENTS_RETRY_MAX_S
	                                             : ev.delay * 2;
}

static void
events_follow(void)
{
	json_object *filters, *a;
	char *path, *esc;

	json_tokener_reset(ev.tok);
	filters = json_object_new_object();
	a = json_object_new_array();
	json_object_array_add(a, json_object_new_string(ev.w->container));
	json_object_object_add(filters, "container", a);
	a = json_object_new_array();
	json_object_array_add(a, json_object_new_string("oom"));
	json_object_array_add(a, json_object_new_string("die"));
	json_object_array_add(a, json_object_new_string("destroy"));
	json_object_object_add(filters, "event", a);
	esc = docker_escape(
	    json_object_to_json_string_ext(filters, JSON_C_TO_STRING_PLAIN));
	xasprintf(&path, "/events?filters=%s", esc);
	ev.req = docker_stream(ev.w->docker, "GET", path, NULL, events_data_cb,
	    events_done_cb, ev.w);
	free(path);
	free(esc);
	json_object_put(filters);
}

void
events_start(struct worker *w)
{
	memset(&ev, 0, sizeof ev);
	ev.w = w;
	ev.delay = 1;
	ev.tok = json_tokener_new_ex(16);
	ev.retry = evtimer_new(w->base, events_retry_cb, NULL);
	events_follow();
}

void
events_stop(struct worker *w)
{
	(void)w;
	if (ev.req != NULL)
		docker_req_cancel(ev.req);
	if (ev.check != NULL)
		docker_req_cancel(ev.check);
	if (ev.retry != NULL)
		event_free(ev.retry);
	if (ev.tok != NULL)
		json_tokener_free(ev.tok);
	memset(&ev, 0, sizeof ev);
}
