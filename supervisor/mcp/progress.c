/*
 * Progress notifications for long calls that carry _meta.progressToken:
 * the newest output lines, at most one notification per PROGRESS_MIN_MS,
 * a heartbeat while nothing happens (clients that reset their timeout on
 * progress never time out on a quiet build), and none after the response.
 */
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "clock.h"
#include "core.h"
#include "mcp.h"
#include "utf8.h"
#include "xmalloc.h"

#define PROGRESS_MIN_MS 100
#define PROGRESS_HEARTBEAT_S 5
#define PROGRESS_TAIL 1024 /* bytes of newest output in a message */

struct progress {
	struct call *call;
	json_object *token;
	struct evbuffer *tail; /* output not yet announced (its end) */
	long long last_ms; /* when the last notification went */
	double value;
	struct event *timer;
};

static void
progress_send(struct progress *p)
{
	json_object *n, *params;
	size_t len, outlen;
	char *msg;
	struct timeval tv = {PROGRESS_HEARTBEAT_S, 0};

	n = json_object_new_object();
	json_object_object_add(n, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(
	    n, "method", json_object_new_string("notifications/progress"));
	params = json_object_new_object();
	json_object_object_add(
	    params, "progressToken", json_object_get(p->token));
	json_object_object_add(
	    params, "progress", json_object_new_double(++p->value));
	if ((len = evbuffer_get_length(p->tail)) > 0) {
		msg = utf8_sanitize(
		    (const char *)evbuffer_pullup(p->tail, -1), len, &outlen);
		json_object_object_add(params, "message",
		    json_object_new_string_len(msg, (int)outlen));
		free(msg);
		evbuffer_drain(p->tail, len);
	}
	json_object_object_add(n, "params", params);
	mcp_send(p->call->sess, n);
	p->last_ms = clock_ms();
	evtimer_add(p->timer, &tv);
}

static void
progress_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	progress_send(arg);
}

/* Start progress for a call if the client asked for it. */
void
progress_start(struct call *c, json_object *params)
{
	struct progress *p;
	json_object *meta, *token;
	struct timeval tv = {PROGRESS_HEARTBEAT_S, 0};

	if (!json_object_object_get_ex(params, "_meta", &meta) ||
	    !json_object_is_type(meta, json_type_object) ||
	    !json_object_object_get_ex(meta, "progressToken", &token) ||
	    !(json_object_is_type(token, json_type_string) ||
	        json_object_is_type(token, json_type_int)))
		return;
	p = xcalloc(1, sizeof *p);
	p->call = c;
	p->token = json_object_get(token);
	p->tail = evbuffer_new();
	p->timer = evtimer_new(sup.base, progress_timer_cb, p);
	evtimer_add(p->timer, &tv);
	c->progress = p;
}

/* New output of the call: announce its newest lines, rate-limited. */
void
progress_output(struct call *c, const char *data, size_t len)
{
	struct progress *p = c->progress;
	struct timeval tv;
	long long wait;
	size_t have;

	if (p == NULL || len == 0)
		return;
	if (len > PROGRESS_TAIL) {
		data += len - PROGRESS_TAIL;
		len = PROGRESS_TAIL;
	}
	evbuffer_add(p->tail, data, len);
	if ((have = evbuffer_get_length(p->tail)) > PROGRESS_TAIL)
		evbuffer_drain(p->tail, have - PROGRESS_TAIL);
	wait = p->last_ms + PROGRESS_MIN_MS - clock_ms();
	if (wait <= 0) {
		progress_send(p);
		return;
	}
	tv.tv_sec = 0;
	tv.tv_usec = (suseconds_t)wait * 1000;
	evtimer_add(p->timer, &tv);
}

/* The call is answered: nothing more may follow. */
void
progress_end(struct call *c)
{
	struct progress *p = c->progress;

	if (p == NULL)
		return;
	c->progress = NULL;
	event_free(p->timer);
	evbuffer_free(p->tail);
	json_object_put(p->token);
	free(p);
}

/*
 * A notifications/progress with values the tool knows itself (total 0:
 * none), at once and outside the rate limit; 0 if the client asked for
 * no progress.  Used by nothing in the server proper: the conformance
 * fixtures.
 */
int
progress_report(
    struct call *c, double progress, double total, const char *message)
{
	struct progress *p = c->progress;
	json_object *n, *params;

	if (p == NULL)
		return 0;
	n = json_object_new_object();
	json_object_object_add(n, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(
	    n, "method", json_object_new_string("notifications/progress"));
	params = json_object_new_object();
	json_object_object_add(
	    params, "progressToken", json_object_get(p->token));
	json_object_object_add(
	    params, "progress", json_object_new_double(progress));
	if (total > 0)
		json_object_object_add(
		    params, "total", json_object_new_double(total));
	if (message != NULL)
		json_object_object_add(
		    params, "message", json_object_new_string(message));
	json_object_object_add(n, "params", params);
	mcp_send(c->sess, n);
	p->value = progress;
	return 1;
}
