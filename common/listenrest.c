/*
 * A listener that rests when accept() fails (listenrest.h).  libevent
 * gives the error callback the listener and the accept callback's
 * argument only, so the rests are found by their listener in a list:
 * a process has a few listeners at most.
 */
#include <sys/queue.h>

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "listenrest.h"
#include "log.h"
#include "xmalloc.h"

struct listenrest {
	struct evconnlistener *lev;
	struct event *timer;
	const char *what; /* for the log (static) */
	long long rests;
	LIST_ENTRY(listenrest) entry;
};

static LIST_HEAD(, listenrest) rests = LIST_HEAD_INITIALIZER(rests);

static void
listenrest_resume(evutil_socket_t fd, short what, void *arg)
{
	struct listenrest *lr = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(lr->lev);
}

static void
listenrest_error(struct evconnlistener *lev, void *arg)
{
	struct timeval tv = {0, LISTENREST_MS * 1000};
	struct listenrest *lr;
	int err = EVUTIL_SOCKET_ERROR();

	(void)arg;
	LIST_FOREACH(lr, &rests, entry)
	if (lr->lev == lev)
		break;
	if (lr == NULL)
		return;
	if (lr->rests++ % 100 == 0)
		log_warnx("%s: accept: %s; not accepting for %d ms (%lld "
		          "times so far)",
		    lr->what, evutil_socket_error_to_string(err), LISTENREST_MS,
		    lr->rests);
	evconnlistener_disable(lev);
	evtimer_add(lr->timer, &tv);
}

/* Make lev rest after each failed accept(); what names it in the log. */
struct listenrest *
listenrest_new(struct evconnlistener *lev, const char *what)
{
	struct listenrest *lr;

	lr = xcalloc(1, sizeof *lr);
	lr->lev = lev;
	lr->what = what;
	if ((lr->timer = evtimer_new(
	         evconnlistener_get_base(lev), listenrest_resume, lr)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	evconnlistener_set_error_cb(lev, listenrest_error);
	LIST_INSERT_HEAD(&rests, lr, entry);
	return lr;
}

/* Before its listener is freed. */
void
listenrest_free(struct listenrest *lr)
{
	if (lr == NULL)
		return;
	LIST_REMOVE(lr, entry);
	event_free(lr->timer);
	free(lr);
}

/* How often it rested. */
long long
listenrest_count(const struct listenrest *lr)
{
	return lr != NULL ? lr->rests : 0;
}
