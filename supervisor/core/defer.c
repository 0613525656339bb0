/*
 * Frees handed to the event loop, after the callbacks running now; and
 * the heap's free pages given back after a large answer (defer_trim).
 */
#include <sys/queue.h>

#include <malloc.h>
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
static struct event *ev_trim;

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
	if (ev_trim != NULL)
		event_free(ev_trim);
	ev_trim = NULL;
}

static void
trim_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	malloc_trim(0);
}

/*
 * A large answer went (a tool result of hundreds of KiB, built of many
 * small pieces): a second later, the free pages inside the heap go back
 * to the system.  glibc gives back only a free top of its heap, so what
 * a burst of large results took stayed resident (10 MB after 16 of
 * them); one trim a second at most.
 */
void
defer_trim(void)
{
	struct timeval tv = {1, 0};

	if (ev_trim == NULL &&
	    (ev_trim = evtimer_new(sup.base, trim_cb, NULL)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	if (!evtimer_pending(ev_trim, NULL))
		evtimer_add(ev_trim, &tv);
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
