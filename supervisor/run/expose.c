/*
 * Ports of a sandbox exposed on the host (sandbox_expose_port): the
 * sandbox's worker listens on a port of --expose-bind and relays each
 * connection through the sandbox's agent to the sandbox's own loopback
 * port (proto.h's "expose" and "unexpose").  Here is what the supervisor
 * keeps of them: each sandbox's list (sb->exposes), at most
 * --max-exposed-ports, and the calls to its worker.
 *
 * A worker that crashes takes its listeners with it: the new one opens
 * them again on the same host ports (so that URLs given out stay valid)
 * once its agent is ready, and a port it cannot open again is dropped
 * and logged.  A sandbox destroyed takes its worker, and so its ports,
 * with it: only the list is freed.
 */
#include <sys/queue.h>
#include <sys/socket.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "config.h"
#include "core.h"
#include "log.h"
#include "mcp.h"
#include "proto.h"
#include "run.h"
#include "sandbox.h"
#include "xmalloc.h"

/* Seconds a new worker's agent has to come up before the ports the old
 * worker had are given up. */
#define EXPOSE_REOPEN_WAIT 60

enum xport_state {
	XP_OPENING, /* the first expose call is out */
	XP_OPEN, /* the worker listens */
	XP_STALE, /* its worker was replaced: to open again */
	XP_REOPENING, /* ... the expose call for it is out */
	XP_CLOSING /* the unexpose call is out */
};

struct xcall;

struct xport {
	struct exposed info;
	enum xport_state state;
	struct xcall *xc; /* the call out for it, or NULL */
	TAILQ_ENTRY(xport) entry;
};

struct exposes {
	TAILQ_HEAD(, xport) list;
	struct event *reopen_deadline; /* stale ones given up then */
};

/* A call waiting for a port to open. */
struct xwaiter {
	struct call *call;
	expose_cb cb;
};

/* A call to the worker (expose or unexpose) and who waits for it. */
struct xcall {
	struct sandbox *sb; /* referenced */
	int port;
	int unexpose;
	struct xwaiter *waiters; /* expose: the calls to answer */
	size_t nwaiters;
	struct call *call; /* unexpose: the call to answer, or NULL */
	unexpose_cb ucb;
};

static struct exposes *
exposes_of(struct sandbox *sb)
{
	if (sb->exposes == NULL) {
		sb->exposes = xcalloc(1, sizeof *sb->exposes);
		TAILQ_INIT(&sb->exposes->list);
	}
	return sb->exposes;
}

static struct xport *
xport_find(struct sandbox *sb, int port)
{
	struct xport *xp;

	if (sb->exposes == NULL)
		return NULL;
	TAILQ_FOREACH(xp, &sb->exposes->list, entry)
	if (xp->info.port == port)
		return xp;
	return NULL;
}

/* Its state, keeping the count of ports listening now. */
static void
xport_set(struct xport *xp, enum xport_state st)
{
	if (xp->state == XP_OPEN && st != XP_OPEN)
		stats.ports_exposed_now--;
	else if (xp->state != XP_OPEN && st == XP_OPEN)
		stats.ports_exposed_now++;
	xp->state = st;
}

static void
xport_remove(struct sandbox *sb, struct xport *xp)
{
	xport_set(xp, XP_CLOSING);
	TAILQ_REMOVE(&sb->exposes->list, xp, entry);
	sb->exposed--;
	free(xp);
}

/*
 * The URL of an exposed port: its address, bracketed when IPv6, or
 * loopback's for a wildcard one (from elsewhere, the host's name).
 */
static void
exposed_url(struct exposed *e)
{
	const char *host = e->address;

	if (strcmp(host, "0.0.0.0") == 0)
		host = "127.0.0.1";
	else if (strcmp(host, "::") == 0)
		host = "::1";
	snprintf(e->url, sizeof e->url,
	    strchr(host, ':') != NULL ? "http://[%s]:%d/" : "http://%s:%d/",
	    host, e->host_port);
}

/* What a worker's expose result says, checked; -1 if it is no good. */
static int
exposed_parse(json_object *res, struct exposed *e)
{
	unsigned char buf[sizeof(struct in6_addr)];
	json_object *v;
	const char *a;
	int64_t hp;

	if (!json_object_object_get_ex(res, "host_port", &v) ||
	    !json_object_is_type(v, json_type_int))
		return -1;
	hp = json_object_get_int64(v);
	if (hp < 1 || hp > 65535)
		return -1;
	a = sup.conf->expose_bind;
	if (json_object_object_get_ex(res, "address", &v) &&
	    json_object_is_type(v, json_type_string))
		a = json_object_get_string(v);
	if (strlen(a) >= sizeof e->address ||
	    (inet_pton(AF_INET, a, buf) != 1 &&
	        inet_pton(AF_INET6, a, buf) != 1))
		return -1;
	e->host_port = (int)hp;
	snprintf(e->address, sizeof e->address, "%s", a);
	exposed_url(e);
	return 0;
}

static void expose_done(json_object *, void *);
static void unexpose_done(json_object *, void *);

/* Send an expose call for xp (host_port 0: any free port). */
static struct xcall *
expose_send(struct sandbox *sb, struct xport *xp, int host_port)
{
	struct xcall *xc;
	json_object *op;

	xc = xcalloc(1, sizeof *xc);
	xc->sb = sandbox_ref(sb);
	xc->port = xp->info.port;
	xp->xc = xc;
	op = json_object_new_object();
	json_object_object_add(
	    op, "op", json_object_new_string(PROTO_OP_EXPOSE));
	json_object_object_add(op, "port", json_object_new_int(xc->port));
	json_object_object_add(
	    op, "bind", json_object_new_string(sup.conf->expose_bind));
	if (xp->info.auth && sup.http_token != NULL)
		json_object_object_add(
		    op, "auth", json_object_new_string(sup.http_token));
	if (host_port > 0)
		json_object_object_add(
		    op, "host_port", json_object_new_int(host_port));
	wproc_call(sb->worker, op, NULL, expose_done, xc);
	json_object_put(op);
	return xc;
}

/* Send an unexpose call (c NULL: one of our own, not waited for). */
static struct xcall *
unexpose_send(struct sandbox *sb, int port, struct call *c, unexpose_cb cb)
{
	struct xcall *xc;
	json_object *op;

	xc = xcalloc(1, sizeof *xc);
	xc->sb = sandbox_ref(sb);
	xc->port = port;
	xc->unexpose = 1;
	xc->call = c;
	xc->ucb = cb;
	op = json_object_new_object();
	json_object_object_add(
	    op, "op", json_object_new_string(PROTO_OP_UNEXPOSE));
	json_object_object_add(op, "port", json_object_new_int(port));
	wproc_call(sb->worker, op, NULL, unexpose_done, xc);
	json_object_put(op);
	return xc;
}

static void
xcall_free(struct xcall *xc)
{
	sandbox_unref(xc->sb);
	free(xc->waiters);
	free(xc);
}

static void
xcall_answer(struct xcall *xc, const struct exposed *e, const char *err)
{
	size_t i;

	for (i = 0; i < xc->nwaiters; i++)
		xc->waiters[i].cb(xc->waiters[i].call, e, err);
}

/* The worker's answer to an expose call (or the error of a lost one). */
static void
expose_done(json_object *res, void *arg)
{
	struct xcall *xc = arg;
	struct sandbox *sb = xc->sb;
	struct xport *xp = NULL;
	struct exposed e;
	json_object *v;
	char why[512];
	int reopen;

	if (!sb->dead && (xp = xport_find(sb, xc->port)) != NULL &&
	    xp->xc != xc)
		xp = NULL;
	if (xp == NULL) {
		/* The sandbox went, with its worker and the port. */
		xcall_answer(xc, NULL,
		    "the sandbox was removed while its port was being "
		    "exposed");
		xcall_free(xc);
		return;
	}
	xp->xc = NULL;
	reopen = xp->state == XP_REOPENING;
	if (json_object_object_get_ex(res, "error", &v)) {
		/* A worker lost meanwhile: its successor opens it again. */
		if (reopen && sb->worker == NULL) {
			xport_set(xp, XP_STALE);
			xcall_answer(xc, &xp->info, NULL);
			xcall_free(xc);
			return;
		}
		snprintf(why, sizeof why, "%s", json_object_get_string(v));
		if (reopen) {
			log_warnx("%s: %.12s: port %d (host port %d) could "
			          "not be exposed again after a worker "
			          "restart, dropped: %s",
			    __func__, sb->id, xp->info.port, xp->info.host_port,
			    why);
			if (sb->owner != NULL)
				mcp_log(sb->owner, 4,
				    "sandbox %s: exposed port %d (%s) was "
				    "dropped: its worker restarted and could "
				    "not listen on it again (%s)",
				    sb->name, xp->info.port, xp->info.url, why);
		}
		xport_remove(sb, xp);
		xcall_answer(xc, NULL, why);
		xcall_free(xc);
		return;
	}
	e = xp->info;
	if (exposed_parse(res, &e) == -1) {
		log_warnx("%s: %.12s: the worker's answer for port %d has no "
		          "good host_port or address",
		    __func__, sb->id, xp->info.port);
		if (sb->worker != NULL)
			unexpose_send(sb, xp->info.port, NULL, NULL);
		xport_remove(sb, xp);
		xcall_answer(
		    xc, NULL, "the sandbox's worker gave no usable host port");
		xcall_free(xc);
		return;
	}
	if (reopen && e.host_port != xp->info.host_port)
		log_warnx("%s: %.12s: port %d is on host port %d now, not %d "
		          "(its URL changed)",
		    __func__, sb->id, xp->info.port, e.host_port,
		    xp->info.host_port);
	xp->info = e;
	if (!reopen) {
		stats.ports_exposed++;
		log_info("%s: %.12s: port %d exposed at %s", __func__, sb->id,
		    e.port, e.url);
	}
	xport_set(xp, XP_OPEN);
	xcall_answer(xc, &xp->info, NULL);
	xcall_free(xc);
}

/*
 * Expose the sandbox's port; cb(c, exposed, NULL) once it listens (at
 * once if it did already: exposed->existing), or cb(c, NULL, why).
 */
void
expose_port(struct call *c, struct sandbox *sb, int port, expose_cb cb)
{
	struct exposes *l;
	struct xport *xp;
	struct xcall *xc;
	struct exposed e;

	if (!sup.conf->agent) {
		cb(c, NULL,
		    "exposing a port needs the sandbox's agent, which relays "
		    "its connections, and this server runs with --agent off "
		    "(start it with --agent on)");
		return;
	}
	if ((xp = xport_find(sb, port)) != NULL) {
		switch (xp->state) {
		case XP_OPEN:
		case XP_STALE:
			e = xp->info;
			e.existing = 1;
			cb(c, &e, NULL);
			return;
		case XP_OPENING:
		case XP_REOPENING:
			xc = xp->xc;
			xc->waiters = xrealloc(xc->waiters,
			    (xc->nwaiters + 1) * sizeof *xc->waiters);
			xc->waiters[xc->nwaiters++] = (struct xwaiter){c, cb};
			return;
		case XP_CLOSING:
			cb(c, NULL,
			    "the port is being unexposed right now; try again "
			    "in a moment");
			return;
		}
	}
	if (sb->exposed >= sup.conf->max_exposed_ports) {
		cb(c, NULL,
		    "this sandbox has as many ports exposed as it may "
		    "(--max-exposed-ports); unexpose one with "
		    "sandbox_unexpose_port first");
		return;
	}
	l = exposes_of(sb);
	xp = xcalloc(1, sizeof *xp);
	xp->info.port = port;
	xp->info.auth = sup.conf->expose_auth;
	xp->state = XP_OPENING;
	TAILQ_INSERT_TAIL(&l->list, xp, entry);
	sb->exposed++;
	xc = expose_send(sb, xp, 0);
	xc->waiters = xcalloc(1, sizeof *xc->waiters);
	xc->waiters[xc->nwaiters++] = (struct xwaiter){c, cb};
}

/* The worker's answer to an unexpose call. */
static void
unexpose_done(json_object *res, void *arg)
{
	struct xcall *xc = arg;
	struct sandbox *sb = xc->sb;
	struct xport *xp;
	json_object *v;
	const char *note = NULL;

	/* Listening or not, the port is no longer the sandbox's: a worker
	 * that does not know it (or is gone) has no listener for it. */
	if (json_object_object_get_ex(res, "error", &v)) {
		note = json_object_get_string(v);
		if (sb->worker != NULL)
			log_warnx("%s: %.12s: port %d: %s", __func__,
			    sb->id != NULL ? sb->id : "", xc->port, note);
	}
	if (!sb->dead && (xp = xport_find(sb, xc->port)) != NULL &&
	    xp->xc == xc)
		xport_remove(sb, xp);
	if (xc->ucb != NULL)
		xc->ucb(xc->call, note);
	xcall_free(xc);
}

/*
 * Unexpose the sandbox's port; cb(c, NULL) once its listener is closed,
 * cb(c, note) with what the worker said if it knew none; -1 (and cb not
 * called) if the port is not exposed, with why in *why.
 */
int
unexpose_port(struct call *c, struct sandbox *sb, int port, unexpose_cb cb,
    const char **why)
{
	struct xport *xp;

	if ((xp = xport_find(sb, port)) == NULL) {
		*why = "not exposed";
		return -1;
	}
	switch (xp->state) {
	case XP_OPENING:
	case XP_REOPENING:
		*why = "being exposed right now; try again once "
		       "sandbox_expose_port has answered";
		return -1;
	case XP_CLOSING:
		*why = "being unexposed already";
		return -1;
	case XP_STALE:
		/* The new worker never listened on it. */
		xport_remove(sb, xp);
		cb(c, NULL);
		return 0;
	case XP_OPEN:
		break;
	}
	xport_set(xp, XP_CLOSING);
	xp->xc = unexpose_send(sb, port, c, cb);
	return 0;
}

/* The sandbox's exposed ports, for get_sandbox_status. */
json_object *
expose_list(struct sandbox *sb)
{
	json_object *a, *o;
	struct xport *xp;

	a = json_object_new_array();
	if (sb->exposes == NULL)
		return a;
	TAILQ_FOREACH(xp, &sb->exposes->list, entry)
	{
		if (xp->info.host_port == 0)
			continue; /* not listening yet */
		o = json_object_new_object();
		json_object_object_add(
		    o, "port", json_object_new_int(xp->info.port));
		json_object_object_add(
		    o, "url", json_object_new_string(xp->info.url));
		json_object_object_add(
		    o, "host_port", json_object_new_int(xp->info.host_port));
		json_object_array_add(a, o);
	}
	return a;
}

/* The new worker's agent never came: what it was to open is given up. */
static void
reopen_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sandbox *sb = arg;
	struct xport *xp, *next;

	(void)fd;
	(void)what;
	for (xp = TAILQ_FIRST(&sb->exposes->list); xp != NULL; xp = next) {
		next = TAILQ_NEXT(xp, entry);
		if (xp->state != XP_STALE)
			continue;
		log_warnx("%s: %.12s: port %d (host port %d) dropped: the "
		          "new worker's agent did not come up in %d s",
		    __func__, sb->id, xp->info.port, xp->info.host_port,
		    EXPOSE_REOPEN_WAIT);
		if (sb->owner != NULL)
			mcp_log(sb->owner, 4,
			    "sandbox %s: exposed port %d (%s) was dropped: "
			    "its worker restarted and its agent did not come "
			    "back",
			    sb->name, xp->info.port, xp->info.url);
		xport_remove(sb, xp);
	}
}

/* Open again, on the same host ports, what the old worker had. */
static void
expose_reopen(struct sandbox *sb)
{
	struct xport *xp;

	if (sb->worker == NULL)
		return;
	TAILQ_FOREACH(xp, &sb->exposes->list, entry)
	if (xp->state == XP_STALE) {
		xport_set(xp, XP_REOPENING);
		expose_send(sb, xp, xp->info.host_port);
	}
}

static void
expose_sandbox_event(struct sandbox *sb, enum sandbox_event ev)
{
	struct exposes *l = sb->exposes;
	struct timeval tv = {EXPOSE_REOPEN_WAIT, 0};
	struct xport *xp;

	if (l == NULL)
		return;
	switch (ev) {
	case SANDBOX_DESTROYED:
		/* The calls out answer their waiters when the worker goes. */
		/* Each xport_remove() unlinks the head. */
		// NOLINTBEGIN(clang-analyzer-unix.Malloc)
		while ((xp = TAILQ_FIRST(&l->list)) != NULL)
			xport_remove(sb, xp);
		// NOLINTEND(clang-analyzer-unix.Malloc)
		if (l->reopen_deadline != NULL)
			event_free(l->reopen_deadline);
		free(l);
		sb->exposes = NULL;
		break;
	case SANDBOX_RESPAWNED:
		/* The lost worker's calls were answered: none is out. */
		TAILQ_FOREACH(xp, &l->list, entry)
		if (xp->state == XP_OPEN)
			xport_set(xp, XP_STALE);
		if (TAILQ_EMPTY(&l->list))
			break;
		if (l->reopen_deadline == NULL)
			l->reopen_deadline =
			    evtimer_new(sup.base, reopen_deadline_cb, sb);
		evtimer_add(l->reopen_deadline, &tv);
		if (sb->agent_ready)
			expose_reopen(sb);
		break;
	case SANDBOX_AGENT_READY:
		expose_reopen(sb);
		break;
	}
}

void
expose_init(void)
{
	sandbox_listen(expose_sandbox_event);
}
