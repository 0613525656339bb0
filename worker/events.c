/*
 * The engine's event stream for this container, followed for the worker's
 * lifetime: an OOM kill of an exec does not set the container's OOMKilled,
 * only an "oom" event says it happened; and a container that dies or is
 * removed behind our back ("die", "destroy") is reported to the supervisor
 * (PROTO_NOTIFY "gone").  When the stream breaks (the engine restarted),
 * it is followed again with a growing delay, and the container is looked
 * at: an engine restart without live-restore leaves it stopped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "engine.h"
#include "log.h"
#include "proto.h"
#include "worker.h"
#include "xmalloc.h"

#define EVENTS_RETRY_MAX_S 30

static struct {
	struct worker *w;
	struct engine_req *req, *check;
	struct event *retry;
	struct event *died; /* a "die" heard: the look at it, from the loop */
	int delay; /* seconds before the next attempt */
	int gone; /* reported already */
} ev;

static void events_follow(void);

static void
events_gone_oom(const char *why, int oom)
{
	json_object *o;

	if (ev.gone || ev.w->quitting)
		return;
	ev.gone = 1;
	log_info("container gone: %s", why);
	o = json_object_new_object();
	json_object_object_add(o, "event", json_object_new_string("gone"));
	json_object_object_add(o, "why", json_object_new_string(why));
	if (oom)
		json_object_object_add(
		    o, "oom_killed", json_object_new_boolean(1));
	worker_send_json(ev.w, PROTO_NOTIFY, 0, o);
	json_object_put(o);
}

static void
events_gone(const char *why)
{
	events_gone_oom(why, 0);
}

/*
 * The container as an inspection found it: if it is gone or stopped, the
 * supervisor hears so (once), with how it ended.  Also for exec.c, which
 * looks at it when a run fails.
 */
void
events_seen(const struct engine_resp *resp)
{
	const struct engine_container *c = resp->container;
	char why[128];
	int oom;

	if (ev.w == NULL || resp->error != NULL)
		return;
	if (resp->notfound)
		events_gone("the container was removed");
	else if (c != NULL && !c->running && c->exit_code >= 0) {
		/* The engine may miss the OOM kill that ended it (oom.c). */
		oom = c->oom_killed || oom_ended(c->exit_code);
		snprintf(why, sizeof why,
		    "the container stopped (exit code %ld%s)", c->exit_code,
		    oom ? ", out of memory" : "");
		events_gone_oom(why, oom);
	} else if (c != NULL && !c->running)
		events_gone("the container stopped");
}

/* A container that died, looked at: how it ended goes with the news. */
static void
events_died_cb(const struct engine_resp *resp, void *arg)
{
	(void)arg;
	ev.check = NULL;
	if (resp->error != NULL || resp->container == NULL)
		events_gone("the container stopped");
	else
		events_seen(resp);
}

/* Not from inside the event stream's callback: the engine's client
 * takes no new request there. */
static void
events_died_look_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	if (ev.w->quitting || ev.gone)
		return;
	engine_req_cancel(ev.check);
	ev.check = engine_container_inspect(
	    ev.w->engine, ev.w->container, events_died_cb, NULL);
}

static void
events_event_cb(const char *a, void *arg)
{
	struct worker *w = arg;
	struct timeval now = {0, 0};

	ev.delay = 1; /* the stream works */
	if (strcmp(a, "oom") == 0)
		oom_seen(w, 1, "the engine's events");
	else if (strcmp(a, "die") == 0 && !ev.gone)
		/* One look at it (bounded as every plain engine call is)
		 * before the supervisor hears. */
		evtimer_add(ev.died, &now);
	else if (strcmp(a, "destroy") == 0)
		events_gone("the container was removed");
}

static void
events_checked_cb(const struct engine_resp *resp, void *arg)
{
	(void)arg;
	ev.check = NULL;
	if (resp->notfound)
		events_gone("the container was removed");
	else if (resp->container != NULL && !resp->container->running)
		events_gone("the container stopped");
}

static void
events_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	if (ev.w->quitting || ev.gone)
		return;
	events_follow();
	if (ev.check == NULL)
		ev.check = engine_container_inspect(
		    ev.w->engine, ev.w->container, events_checked_cb, NULL);
}

static void
events_done_cb(const struct engine_resp *resp, void *arg)
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
	static const char *const actions[] = {"oom", "die", "destroy", NULL};

	ev.req = engine_container_events(ev.w->engine, ev.w->container, actions,
	    events_event_cb, events_done_cb, ev.w);
}

void
events_start(struct worker *w)
{
	memset(&ev, 0, sizeof ev);
	ev.w = w;
	ev.delay = 1;
	ev.retry = evtimer_new(w->base, events_retry_cb, NULL);
	ev.died = evtimer_new(w->base, events_died_look_cb, NULL);
	events_follow();
}

void
events_stop(struct worker *w)
{
	(void)w;
	engine_req_cancel(ev.req);
	engine_req_cancel(ev.check);
	if (ev.retry != NULL)
		event_free(ev.retry);
	if (ev.died != NULL)
		event_free(ev.died);
	memset(&ev, 0, sizeof ev);
}
