/*
 * OOM kills in the sandbox, as the worker learns of them.  The engine
 * says so in its event stream (an "oom" event, events.c), but not always:
 * when the kill ends the container itself (under gVisor the sandbox's
 * kernel is in the container's memory cgroup, so the host's OOM killer
 * ends the whole sandbox) the engine may report the exit and never the
 * OOM.  So the worker also watches the container's memory cgroup, once
 * accounting has found it (accounting.c): the group's own counter
 * (oom_kill) is the truth, its notification says when to read it.  Cgroup
 * v1 notifies as the OOM begins, before the kill, so a notification that
 * finds the counter unchanged reads it again a few times; a counter that
 * can no longer be read is a group removed (its container is gone).
 *
 * One kill may be heard from both; whoever asks compares counts, so a
 * kill counted twice is still one "there was an OOM kill since".
 */
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cgroup.h"
#include "clock.h"
#include "log.h"
#include "worker.h"

#define OOM_RECHECKS 5
#define OOM_RECHECK_MS 20 /* the first; then twice the last */
/* A container killed (SIGKILL, 137) this soon after an OOM kill in it
 * ended out of memory. */
#define OOM_RECENT_MS 5000

static struct {
	struct worker *w;
	struct cgroup cg;
	int fd;
	struct event *ev, *again;
	unsigned long long kills; /* the group's counter when last read */
	int tries;
	long long last_ms; /* the last OOM kill heard, or 0 */
} om = {.fd = -1};

void
oom_seen(struct worker *w, unsigned long n, const char *from)
{
	w->oom_count += n;
	om.last_ms = clock_ms();
	log_info("out of memory in the sandbox (%s)", from);
}

int
oom_ended(long exit_code)
{
	return exit_code == 137 && om.last_ms != 0 &&
	       clock_ms() - om.last_ms < OOM_RECENT_MS;
}

/* The counter, read: a rise is news; none, after v1's early word, is
 * looked at again. */
static void
oom_check(void)
{
	unsigned long long n;
	struct timeval tv = {0, 0};

	if (cgroup_oom_kills(&om.cg, &n) == -1) {
		log_debug("%s: the memory cgroup is gone", __func__);
		oom_unwatch();
		return;
	}
	if (n > om.kills) {
		oom_seen(
		    om.w, (unsigned long)(n - om.kills), "its memory cgroup");
		om.kills = n;
		return;
	}
	if (om.tries < OOM_RECHECKS) {
		tv.tv_usec = (OOM_RECHECK_MS << om.tries) * 1000L;
		om.tries++;
		evtimer_add(om.again, &tv);
	}
}

static void
oom_read_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	(void)arg;
	cgroup_oom_drain(fd);
	om.tries = 0;
	oom_check();
}

static void
oom_again_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	oom_check();
}

/* The container's memory cgroup is known: watch it for the worker's life. */
void
oom_watch(struct worker *w, const struct cgroup *cg)
{
	if (om.fd != -1)
		return;
	om.w = w;
	om.cg = *cg;
	if (cgroup_oom_kills(&om.cg, &om.kills) == -1 ||
	    (om.fd = cgroup_oom_watch(&om.cg)) == -1) {
		log_debug(
		    "%s: OOM kills are heard from the engine only", __func__);
		return;
	}
	om.ev =
	    event_new(w->base, om.fd, EV_READ | EV_PERSIST, oom_read_cb, NULL);
	om.again = evtimer_new(w->base, oom_again_cb, NULL);
	if (om.ev == NULL || om.again == NULL || event_add(om.ev, NULL) == -1)
		fatalx("%s: event_new", __func__);
}

void
oom_unwatch(void)
{
	if (om.ev != NULL)
		event_free(om.ev);
	if (om.again != NULL)
		event_free(om.again);
	om.ev = om.again = NULL;
	if (om.fd != -1)
		close(om.fd);
	om.fd = -1;
}
