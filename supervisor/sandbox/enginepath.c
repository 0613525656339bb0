/*
 * Where the server's own files are on the engine's host.  Sandboxes bind
 * the agent's binary and their channel's directory from the server's
 * private directory (agentfile.c, sandbox.c), and the engine takes a
 * bind's source as a path of its own host.  On the host, that is the
 * path the server sees.  A server that is itself a container (the image,
 * on Docker Desktop too) sees its own filesystem: its private directory
 * must be on a volume or a bind mount, and the engine's path for it is
 * that mount's source with the rest of the path (the engine keeps a
 * volume's data in a directory of its host, /var/lib/docker/volumes/NAME/
 * _data, which it binds like any other).  The server learns its mounts by
 * inspecting its own container (procinfo.c tells its id) once at start;
 * a path on no mount has no engine path, and a sandbox then runs without
 * the agent (every command a Docker exec), said once in the log.  An
 * engine that does not know the container is not the one it runs on (an
 * engine inside the same container, or on another host): paths are then
 * taken as they are, as before.
 */
#include <sys/time.h>

#include <event2/event.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "engine.h"
#include "enginepath.h"
#include "log.h"
#include "procinfo.h"
#include "xmalloc.h"

#define ENGINEPATH_WAIT 10 /* seconds for the inspection at start */

static enum {
	EP_HOST, /* not a container: paths are the engine's */
	EP_CONTAINER, /* a container whose mounts are known */
	EP_UNKNOWN /* a container whose mounts could not be learnt */
} mode;
static char self[65];
static json_object *mounts; /* the container's, as the engine said */
static struct engine_req *req;
static int said;

/*
 * The engine's path for path, by the mounts (an array of objects with
 * Type, Source and Destination, as an inspection gives them), or NULL:
 * on none.  The mount whose destination is the longest leading part of
 * path, whole components, decides; only binds and volumes have a source
 * on the host.  Returns a string to free.
 */
char *
enginepath_translate(json_object *m, const char *path)
{
	const char *type, *src, *dst, *best_src = NULL, *rest = NULL;
	json_object *o, *v;
	size_t i, n, dlen, best = 0;
	char *out;

	if (m == NULL || !json_object_is_type(m, json_type_array) ||
	    *path != '/' || strstr(path, "/../") != NULL)
		return NULL;
	n = json_object_array_length(m);
	for (i = 0; i < n; i++) {
		o = json_object_array_get_idx(m, i);
		type = src = dst = NULL;
		if (json_object_object_get_ex(o, "Type", &v))
			type = json_object_get_string(v);
		if (json_object_object_get_ex(o, "Source", &v))
			src = json_object_get_string(v);
		if (json_object_object_get_ex(o, "Destination", &v))
			dst = json_object_get_string(v);
		if (type == NULL || src == NULL || dst == NULL ||
		    (strcmp(type, "bind") != 0 &&
		        strcmp(type, "volume") != 0) ||
		    *src != '/' || *dst != '/')
			continue;
		dlen = strlen(dst);
		while (dlen > 1 && dst[dlen - 1] == '/')
			dlen--;
		if (dlen == 1)
			dlen = 0; /* "/": every path */
		if (strncmp(path, dst, dlen) != 0 ||
		    (path[dlen] != '/' && path[dlen] != '\0'))
			continue;
		if (best_src == NULL || dlen > best) {
			best = dlen;
			best_src = src;
			rest = path + dlen;
		}
	}
	if (best_src == NULL)
		return NULL;
	if (strcmp(rest, "/") == 0)
		rest = ""; /* the mount's own directory */
	n = strlen(best_src);
	while (n > 1 && best_src[n - 1] == '/')
		n--;
	if (n == 1 && *rest != '\0')
		n = 0; /* "/" and "/x": "/x" */
	xasprintf(&out, "%.*s%s", (int)n, best_src, rest);
	return out;
}

static void
enginepath_inspect_cb(const struct engine_resp *resp, void *arg)
{
	(void)arg;
	req = NULL;
	if (resp->notfound) {
		/* Not the engine's: the engine shares this filesystem (it
		 * runs in the same container) or is elsewhere; paths as
		 * they are, as on a host. */
		log_info("this server runs in container %.12s, which its "
		         "engine does not know: sandboxes bind the server's "
		         "paths as they are",
		    self);
		mode = EP_HOST;
		return;
	}
	if (resp->error != NULL || resp->container == NULL ||
	    resp->container->mounts == NULL) {
		log_warnx("this server runs in container %.12s, which the "
		          "engine would not show (%s): sandboxes run without "
		          "the agent until it does",
		    self, resp->error != NULL ? resp->error : "no mounts");
		mode = EP_UNKNOWN;
		return;
	}
	json_object_put(mounts);
	mounts = json_object_get(resp->container->mounts);
	mode = EP_CONTAINER;
	log_info("this server runs in container %.12s: sandboxes bind its "
	         "files from the engine's paths of its mounts",
	    self);
}

static void
enginepath_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	*(int *)arg = 1;
}

/*
 * At start, before any sandbox: whether this server is a container, and
 * if so its mounts (the event loop runs until the engine answered, at
 * most ENGINEPATH_WAIT seconds).
 */
void
enginepath_init(void)
{
	struct timeval tv = {ENGINEPATH_WAIT, 0};
	struct event *ev;
	int late = 0;

	if (proc_self_container(self, sizeof self) == -1) {
		mode = EP_HOST;
		return;
	}
	mode = EP_UNKNOWN;
	req = engine_container_inspect(
	    sup.engine, self, enginepath_inspect_cb, NULL);
	ev = evtimer_new(sup.base, enginepath_timeout_cb, &late);
	evtimer_add(ev, &tv);
	while (req != NULL && !late && !sup.shutting_down)
		event_base_loop(sup.base, EVLOOP_ONCE);
	event_free(ev);
	if (req != NULL) {
		engine_req_cancel(req);
		req = NULL;
		log_warnx("this server runs in container %.12s, which the "
		          "engine did not show within %d s: sandboxes run "
		          "without the agent until it does",
		    self, ENGINEPATH_WAIT);
	}
}

/*
 * The engine's path for a path of this server (a string to free), or
 * NULL: it has none, said once.  A container whose mounts are not known
 * yet asks the engine again, for the sandboxes after this one.
 */
char *
enginepath_of(const char *path)
{
	char *out;

	switch (mode) {
	case EP_HOST:
		return xstrdup(path);
	case EP_UNKNOWN:
		if (req == NULL && !sup.shutting_down)
			req = engine_container_inspect(
			    sup.engine, self, enginepath_inspect_cb, NULL);
		return NULL;
	case EP_CONTAINER:
		break;
	}
	if ((out = enginepath_translate(mounts, path)) == NULL && !said) {
		said = 1;
		log_warnx(
		    "this server runs in container %.12s and %s is on "
		    "none of its volumes or bind mounts: the engine "
		    "cannot bind it into sandboxes, which run without the "
		    "agent (every command a Docker exec); mount a volume "
		    "at its --runtime-dir",
		    self, path);
	}
	return out;
}

void
enginepath_free(void)
{
	if (req != NULL)
		engine_req_cancel(req);
	req = NULL;
	json_object_put(mounts);
	mounts = NULL;
}
