/* Frees handed to the event loop, after the callbacks running now. */
#include <sys/queue.h>

#include <stdlib.h>

#include <event2/event.h>

#include "core.h"
#include "log.h"
#include "xmalloc.h"

/* Frees handed to the event loop (core.h, "Lifetimes"). */
struct deferred {
	void (*fn)(void *);
	void *arg;
	TAILQ_ENTRY(deferred) entry;
};
static TAILQ_HEAD(, deferred) deferreds = TAILQ_HEAD_INITIALIZER(deferreds);
static struct event *ev_deferred;

/* Run every deferred free, those they defer in turn included. */
static void
defer_run(void)
{
	struct deferred *d;

	while ((d = TAILQ_FIRST(&deferreds)) != NULL) {
		TAILQ_REMOVE(&deferreds, d, entry);
		d->fn(d->arg);
		free(d);
	}
}

static void
deferred_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	defer_run();
}

/* At exit, out of the event loop: what is left, then the event. */
void
defer_flush(void)
{
	defer_run();
	if (ev_deferred != NULL)
		event_free(ev_deferred);
	ev_deferred = NULL;
}

/* fn(arg) from the event loop, after the callbacks running now. */
void
defer_free(void (*fn)(void *), void *arg)
{
	struct deferred *d;

	d = xcalloc(1, sizeof *d);
	d->fn = fn;
	d->arg = arg;
	TAILQ_INSERT_TAIL(&deferreds, d, entry);
	if (ev_deferred == NULL && (ev_deferred = event_new(sup.base, -1, 0,
	                                deferred_cb, NULL)) == NULL)
		fatalx("%s: event_new", __func__);
	event_active(ev_deferred, EV_TIMEOUT, 0);
}
