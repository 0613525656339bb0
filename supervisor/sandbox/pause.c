/*
 * Idle sandboxes paused (--pause-after): a ready sandbox that no call has
 * used for that long, with no call of its worker in flight, has its
 * container paused through the engine (every process frozen, memory
 * kept).  The next call that looks it up (sandbox_lookup(): exec, code,
 * files, status by container_id) resumes it: the worker's channel is held
 * from the pause on, so whatever that call sends the worker waits in the
 * supervisor's buffer until the engine has thawed the container, and
 * goes out in order then.  Expiry and removal work on a paused sandbox
 * (the engine stops and removes a paused container).  The engine's "pause" and
 * "unpause" events are none of the worker's (worker/events.c follows only oom,
 * die and destroy), and an inspection of a paused container says it is running.
 */
#include <event2/event.h>

#include "config.h"
#include "core.h"
#include "engine.h"
#include "log.h"
#include "sandbox.h"

static void sandbox_pause_cb(evutil_socket_t, short, void *);

static void
sandbox_thawed_cb(const struct engine_resp *resp, void *arg)
{
	struct sandbox *sb = arg;

	sb->pausing = NULL;
	if (resp->error != NULL && !resp->notfound)
		log_warnx("sandbox %.12s: unpause: %s", sb->id, resp->error);
	else
		stats.resumed++;
	sb->paused = 0;
	if (sb->worker != NULL)
		wproc_hold(sb->worker, 0);
	sandbox_pause_arm(sb);
	sandbox_unref(sb);
}

static void
sandbox_paused_cb(const struct engine_resp *resp, void *arg)
{
	struct sandbox *sb = arg;

	sb->pausing = NULL;
	if (resp->error != NULL) {
		log_warnx("sandbox %.12s: pause: %s", sb->id, resp->error);
		sb->paused = 0;
		if (sb->worker != NULL)
			wproc_hold(sb->worker, 0);
	} else {
		stats.paused++;
		log_info("sandbox %.12s paused (idle)", sb->id);
	}
	/* A call came while it was being paused: thaw it now. */
	if (!sb->dead && sb->paused && sb->last_used > sb->paused_at)
		sandbox_resume(sb);
	sandbox_unref(sb);
}

static void
sandbox_pause_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sandbox *sb = arg;
	long after = sup.conf->pause_after;

	(void)fd;
	(void)what;
	if (sb->dead || sb->paused || sb->state != SB_READY ||
	    sb->worker == NULL)
		return;
	/* A connection to an exposed port comes with no call. */
	if (wproc_busy(sb->worker) || sb->exposed > 0 ||
	    time(NULL) - sb->last_used < after) {
		sandbox_pause_arm(sb);
		return;
	}
	sb->paused = 1;
	sb->paused_at = time(NULL);
	wproc_hold(sb->worker, 1);
	sb->pausing = engine_container_pause(
	    sb->engine, sb->id, sandbox_paused_cb, sandbox_ref(sb));
}

/* A call used the sandbox: its pause comes --pause-after from now. */
void
sandbox_pause_arm(struct sandbox *sb)
{
	struct timeval tv = {sup.conf->pause_after, 0};

	if (sup.conf->pause_after <= 0 || sb->pool || sb->dead ||
	    sb->state != SB_READY)
		return;
	if (sb->pause_timer == NULL)
		sb->pause_timer = evtimer_new(sup.base, sandbox_pause_cb, sb);
	evtimer_add(sb->pause_timer, &tv);
}

/* Thaw a paused sandbox (its held calls go out when it is). */
void
sandbox_resume(struct sandbox *sb)
{
	if (!sb->paused || sb->pausing != NULL || sb->id == NULL)
		return; /* (a pause in flight thaws when it answers) */
	log_info("sandbox %.12s resumed", sb->id);
	sb->pausing = engine_container_unpause(
	    sb->engine, sb->id, sandbox_thawed_cb, sandbox_ref(sb));
}

/* The sandbox goes: no more pauses (the engine stops and removes a
 * paused container as any other). */
void
sandbox_pause_stop(struct sandbox *sb)
{
	if (sb->pause_timer != NULL) {
		event_free(sb->pause_timer);
		sb->pause_timer = NULL;
	}
}
