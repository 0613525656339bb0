/*
 * The sandbox registry and container lifecycle: create (pulling a missing
 * image), start, hand to a new worker; stop and remove with volumes.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "config.h"
#include "docker.h"
#include "log.h"
#include "spool.h"
#include "supervisor.h"
#include "xmalloc.h"

#define SANDBOX_KEEPALIVE_USER "65533:65533"
#define SANDBOX_EXEC_UID "65534"
#define SANDBOX_STOP_GRACE 10

struct sandboxes sandboxes = TAILQ_HEAD_INITIALIZER(sandboxes);

/*
 * A session's sandbox by full id, unique id prefix (12 or more) or name
 * (sess NULL: any session's, by full id only).
 */
struct sandbox *
sandbox_find(struct session *sess, const char *key)
{
	struct sandbox *sb, *found = NULL;
	size_t len = strlen(key);

	TAILQ_FOREACH(sb, &sandboxes, entry)
	{
		if (sb->id != NULL && strcmp(sb->id, key) == 0 &&
		    (sess == NULL || sb->owner == sess))
			return sb;
		if (sess != NULL && sb->owner == sess &&
		    strcmp(sb->name, key) == 0)
			return sb;
	}
	if (len < 12 || sess == NULL)
		return NULL;
	TAILQ_FOREACH(sb, &sandboxes, entry)
	{
		if (sb->owner == sess && sb->id != NULL &&
		    strncmp(sb->id, key, len) == 0) {
			if (found != NULL)
				return NULL;
			found = sb;
		}
	}
	return found;
}

/*
 * The sandbox a call names in argument key, ready for use; otherwise the
 * call is answered with an error and NULL is returned.
 */
struct sandbox *
sandbox_lookup(struct call *c, const char *key)
{
	struct sandbox *sb;
	const char *id;

	if (!arg_type_ok(c, key, json_type_string, NULL) ||
	    (id = arg_string(c, key)) == NULL || *id == '\0') {
		call_reply(c,
		    tool_error(
		        "%s is required: the container_id "
		        "returned by sandbox_initialize (or the sandbox's name)",
		        key));
		return NULL;
	}
	if ((sb = sandbox_find(c->sess, id)) == NULL) {
		call_reply(c,
		    tool_error(
		        "no sandbox \"%.80s\": it may have "
		        "been stopped or expired; create one with "
		        "sandbox_initialize, or list them with get_sandbox_status",
		        id));
		return NULL;
	}
	if (sb->state != SB_READY) {
		call_reply(c, tool_error("sandbox %.12s is %s; try again "
		                         "later",
		                  sb->id,
		                  sb->state == SB_STARTING ? "still starting"
		                                           : "being removed"));
		return NULL;
	}
	if (sb->worker == NULL) {
		call_reply(
		    c, tool_error("sandbox %.12s is getting a new worker "
		                  "after a crash; try again in a moment",
		           sb->id));
		return NULL;
	}
	sandbox_touch(sb);
	return sb;
}

int
sandbox_count(void)
{
	struct sandbox *sb;
	int n = 0;

	TAILQ_FOREACH(sb, &sandboxes, entry)
	n++;
	return n;
}

static void
sandbox_free(struct sandbox *sb)
{
	TAILQ_REMOVE(&sandboxes, sb, entry);
	if (sb->worker != NULL)
		wproc_shutdown(sb->worker);
	if (sb->expiry != NULL)
		event_free(sb->expiry);
	spool_dir_free(sb->spool);
	if (sb->respawn != NULL)
		event_free(sb->respawn);
	json_object_put(sb->respawn_tokens);
	free(sb->id);
	free(sb->name);
	free(sb->image);
	free(sb->workdir);
	free(sb);
}

/* --- removal --- */

struct sdestroy {
	struct sandbox *sb;
	char *id;
	void (*done)(void *, const char *);
	void *arg;
};

static int destroys_in_flight;
static void destroy_all_check(void);
static void screate_abort_queued(void);

static void
sandbox_removed_cb(const struct docker_resp *resp, void *arg)
{
	struct sdestroy *d = arg;
	char *err = NULL;

	if (resp->error != NULL && resp->status != 404) {
		err = sanitize_docker_error(resp->error);
		log_warnx("remove %.12s: %s", d->id, resp->error);
	} else {
		log_info("sandbox %.12s removed", d->id);
		stats.sandboxes_removed++;
	}
	destroys_in_flight--;
	if (d->done != NULL)
		d->done(d->arg, err);
	free(err);
	free(d->id);
	free(d);
	destroy_all_check();
}

static void
sandbox_stopped_cb(const struct docker_resp *resp, void *arg)
{
	struct sdestroy *d = arg;
	char *path;

	if (resp->error != NULL && resp->status != 304 && resp->status != 404)
		log_warnx("stop %.12s: %s", d->id, resp->error);
	xasprintf(&path, "/containers/%s?v=1&force=1", d->id);
	docker_call(sup.docker, "DELETE", path, NULL, sandbox_removed_cb, d);
	free(path);
}

/*
 * Stop (grace, then kill) and remove a sandbox's container with its
 * volumes; the sandbox leaves the registry at once.  done(arg, error).
 */
void
sandbox_destroy(
    struct sandbox *sb, void (*done)(void *, const char *), void *arg)
{
	struct sdestroy *d;
	char *path;

	d = xcalloc(1, sizeof *d);
	destroys_in_flight++;
	d->id = xstrdup(sb->id);
	d->done = done;
	d->arg = arg;
	sb->state = SB_STOPPING;
	sandbox_free(sb);
	if (sup.shutting_down) {
		/* No grace at exit: remove at once. */
		sandbox_stopped_cb(&(struct docker_resp){.status = 204}, d);
		return;
	}
	xasprintf(&path, "/containers/%s/stop?t=%d", d->id, SANDBOX_STOP_GRACE);
	docker_call(sup.docker, "POST", path, NULL, sandbox_stopped_cb, d);
	free(path);
}

struct sowned {
	int pending;
	void (*done)(void *);
	void *arg;
};

static int destroy_pending;
static void (*destroy_all_done)(void);

/* Shutting down: done once no sandbox is left, starting or going. */
static void
destroy_all_check(void)
{
	void (*done)(void) = destroy_all_done;

	if (done != NULL && destroy_pending == 0 && destroys_in_flight == 0 &&
	    TAILQ_EMPTY(&sandboxes)) {
		destroy_all_done = NULL;
		done();
	}
}

static void
sandbox_destroy_all_cb(void *arg, const char *err)
{
	(void)arg;
	(void)err;
	--destroy_pending;
	destroy_all_check();
}

static void
sandbox_owned_cb(void *arg, const char *err)
{
	struct sowned *o = arg;

	(void)err;
	if (--o->pending > 0)
		return;
	o->done(o->arg);
	free(o);
}

/* Remove every sandbox of a session; done(arg) once all are gone. */
void
sandbox_destroy_owned(struct session *sess, void (*done)(void *), void *arg)
{
	struct sandbox *sb, *next;
	struct sowned *o;

	o = xcalloc(1, sizeof *o);
	o->done = done;
	o->arg = arg;
	o->pending = 1;
	for (sb = TAILQ_FIRST(&sandboxes); sb != NULL; sb = next) {
		next = TAILQ_NEXT(sb, entry);
		if (sb->owner != sess || sb->id == NULL)
			continue;
		o->pending++;
		sandbox_destroy(sb, sandbox_owned_cb, o);
	}
	sandbox_owned_cb(o, NULL);
}

/* Remove every sandbox; done() once all are gone. */
void
sandbox_destroy_all(void (*done)(void))
{
	struct sandbox *sb, *next;

	destroy_all_done = done;
	destroy_pending = 1;
	for (sb = TAILQ_FIRST(&sandboxes); sb != NULL; sb = next) {
		next = TAILQ_NEXT(sb, entry);
		/* One still starting goes once its container exists (the
		 * creation sees sup.shutting_down). */
		if (sb->id == NULL || sb->state == SB_STARTING)
			continue;
		destroy_pending++;
		sandbox_destroy(sb, sandbox_destroy_all_cb, NULL);
	}
	screate_abort_queued();
	sandbox_destroy_all_cb(NULL, NULL);
}

/* The container died behind our back: say so, and clean up after it. */
void
sandbox_gone(struct sandbox *sb, const char *why)
{
	if (sb->state != SB_READY)
		return;
	log_warnx("sandbox %.12s: %s", sb->id, why);
	mcp_log(sb->owner, 3, "sandbox %s is gone: %s", sb->name, why);
	stats.sandboxes_failed++;
	sandbox_destroy(sb, NULL, NULL);
}

/* When the sandbox goes: its lifetime's end or its idle limit's. */
time_t
sandbox_deadline(const struct sandbox *sb, int *idle)
{
	time_t d = sb->expires;

	*idle = 0;
	if (sup.conf->idle_ttl > 0 && sb->last_used + sup.conf->idle_ttl < d) {
		d = sb->last_used + sup.conf->idle_ttl;
		*idle = 1;
	}
	return d;
}

static void
sandbox_expire_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sandbox *sb = arg;
	struct timeval tv = {0, 0};
	time_t now = time(NULL), d;
	int idle;

	(void)fd;
	(void)what;
	if ((d = sandbox_deadline(sb, &idle)) > now) {
		tv.tv_sec = d - now;
		evtimer_add(sb->expiry, &tv);
		return;
	}
	log_info("sandbox %.12s %s; removing it", sb->id,
	    idle ? "was idle too long" : "reached its lifetime");
	mcp_log(sb->owner, 5, "sandbox %s %s and was removed", sb->name,
	    idle ? "was idle for its idle limit" : "reached its lifetime");
	sandbox_destroy(sb, NULL, NULL);
}

/* A call uses the sandbox: its idle limit starts again. */
void
sandbox_touch(struct sandbox *sb)
{
	sb->last_used = time(NULL);
}

/* --- creation --- */

static double
elapsed_ms(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) * 1000 +
	       (double)(now.tv_nsec - t0->tv_nsec) / 1e6;
}

struct screate {
	struct call *call;
	struct sandbox *sb;
	json_object *config;
	char *path; /* /containers/create?name=... */
	int pulled;
	char pull_tail[512]; /* the end of the pull's progress stream */
	int pending; /* of the container start and the worker */
	int queued, admitted;
	/* Instead of answering the call: the caller's continuation. */
	void (*cb)(struct call *, struct sandbox *, const char *, void *);
	void *cbarg;
	TAILQ_ENTRY(screate) qentry;
	struct timespec t0;
	char *error;
	size_t pull_len;
};

static void screate_leave(struct screate *);

static void
screate_free(struct screate *s)
{
	screate_leave(s);
	json_object_put(s->config);
	free(s->path);
	free(s->error);
	free(s);
}

static void
screate_fail(struct screate *s, const char *fmt, const char *detail)
{
	char *msg = sanitize_docker_error(detail);

	stats.sandboxes_failed++;
	if (s->cb != NULL) {
		char *full;

		xasprintf(&full, fmt, s->sb->image, msg);
		s->cb(s->call, NULL, full, s->cbarg);
		free(full);
	} else
		call_reply(s->call, tool_error(fmt, s->sb->image, msg));
	free(msg);
	if (s->sb->id != NULL) {
		sandbox_destroy(s->sb, NULL, NULL);
	} else {
		TAILQ_REMOVE(&sandboxes, s->sb, entry);
		free(s->sb->name);
		free(s->sb->image);
		free(s->sb->workdir);
		free(s->sb);
	}
	screate_free(s);
	destroy_all_check();
}

json_object *
sandbox_limits_json(const struct sandbox *sb)
{
	json_object *l;
	const struct config *c = sup.conf;

	l = json_object_new_object();
	json_object_object_add(
	    l, "memory_mb", json_object_new_int64(sb->lim.memory_mb));
	json_object_object_add(l, "cpus", json_object_new_double(sb->lim.cpus));
	json_object_object_add(l, "pids", json_object_new_int64(sb->lim.pids));
	json_object_object_add(
	    l, "workdir_mb", json_object_new_int64(c->workdir_mb));
	json_object_object_add(l, "tmp_mb", json_object_new_int64(c->tmp_mb));
	json_object_object_add(l, "nofile", json_object_new_int64(c->nofile));
	json_object_object_add(
	    l, "fsize_mb", json_object_new_int64(c->fsize_mb));
	return l;
}

/* The container started and its worker said hello (both, any order). */
static void
screate_ready(struct screate *s)
{
	struct sandbox *sb = s->sb;
	json_object *r;
	char *text, when[32];
	struct tm tm;
	struct timeval tv;
	int idle;

	if (--s->pending > 0)
		return;
	sb->create = NULL;
	if (s->error == NULL && sup.shutting_down)
		s->error = xstrdup("the server is shutting down");
	if (s->error != NULL) {
		screate_fail(s, "sandbox for image \"%s\" could not start: %s",
		    s->error);
		return;
	}
	sb->state = SB_READY;
	stats.sandboxes_created++;
	stats_observe(&stats.create_ms, elapsed_ms(&s->t0));
	sb->spool = spool_dir_new(sb->id, sup.conf->spool_mb * 1024 * 1024);
	sandbox_touch(sb);
	tv.tv_sec = sandbox_deadline(sb, &idle) - time(NULL);
	tv.tv_usec = 0;
	if (tv.tv_sec < 1)
		tv.tv_sec = 1;
	sb->expiry = evtimer_new(sup.base, sandbox_expire_cb, sb);
	evtimer_add(sb->expiry, &tv);
	gmtime_r(&sb->expires, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	log_info(
	    "sandbox %.12s (%s) ready, image %s", sb->id, sb->name, sb->image);

	r = json_object_new_object();
	json_object_object_add(
	    r, "container_id", json_object_new_string(sb->id));
	json_object_object_add(r, "name", json_object_new_string(sb->name));
	json_object_object_add(r, "image", json_object_new_string(sb->image));
	json_object_object_add(
	    r, "workdir", json_object_new_string(sb->workdir));
	json_object_object_add(r, "limits", sandbox_limits_json(sb));
	json_object_object_add(r, "expires_at", json_object_new_string(when));
	xasprintf(&text,
	    "Sandbox ready: container_id %s (name %s), image %s, "
	    "workdir %s, expires %s. Run commands with sandbox_exec.",
	    sb->id, sb->name, sb->image, sb->workdir, when);
	if (s->cb != NULL) {
		json_object_put(r);
		s->cb(s->call, sb, NULL, s->cbarg);
	} else if (s->call->cancelled) {
		/* Nobody wants it any more. */
		json_object_put(r);
		call_reply(s->call, tool_error("cancelled"));
		sandbox_destroy(sb, NULL, NULL);
	} else
		call_reply(s->call, tool_result(r, text, 0));
	free(text);
	screate_free(s);
}

static void
screate_error(struct screate *s, const char *err)
{
	if (s->error == NULL && err != NULL)
		s->error = xstrdup(err);
}

static void
screate_started_cb(const struct docker_resp *resp, void *arg)
{
	struct screate *s = arg;

	screate_error(s, resp->error);
	screate_ready(s);
}

static void
screate_worker_cb(struct sandbox *sb, const char *err)
{
	struct screate *s = sb->create;

	screate_error(s, err);
	screate_ready(s);
}

static void screate_create(struct screate *);

static int
screate_pull_data(const char *p, size_t len, void *arg)
{
	struct screate *s = arg;
	size_t keep = sizeof s->pull_tail - 1;

	if (len >= keep) {
		memcpy(s->pull_tail, p + len - keep, keep);
		s->pull_len = keep;
	} else {
		if (s->pull_len + len > keep) {
			memmove(s->pull_tail,
			    s->pull_tail + (s->pull_len + len - keep),
			    keep - len);
			s->pull_len = keep - len;
		}
		memcpy(s->pull_tail + s->pull_len, p, len);
		s->pull_len += len;
	}
	s->pull_tail[s->pull_len] = '\0';
	return 0;
}

static void
screate_pulled_cb(const struct docker_resp *resp, void *arg)
{
	struct screate *s = arg;
	char *e;

	if (sup.shutting_down) {
		screate_fail(s, "sandbox for image \"%s\": %s",
		    "the server is shutting down");
		return;
	}
	if (resp->error != NULL) {
		screate_fail(s,
		    "image \"%s\" is not available locally and "
		    "could not be pulled (is a registry reachable?): %s",
		    resp->error);
		return;
	}
	/* A failed pull still answers 200; the error is in the stream. */
	if ((e = strstr(s->pull_tail, "\"error\"")) != NULL) {
		screate_fail(s,
		    "image \"%s\" is not available locally and "
		    "could not be pulled (is a registry reachable?): %s",
		    e);
		return;
	}
	log_info("pulled image %s", s->sb->image);
	screate_create(s);
}

static void
screate_pull(struct screate *s)
{
	char *path, *img, *tag = NULL, *slash, *colon, *eimg, *etag;

	s->pulled = 1;
	img = xstrdup(s->sb->image);
	slash = strrchr(img, '/');
	colon = strrchr(img, ':');
	if (strchr(img, '@') == NULL && colon != NULL &&
	    (slash == NULL || colon > slash)) {
		*colon = '\0';
		tag = colon + 1;
	}
	eimg = docker_escape(img);
	etag = docker_escape(tag != NULL ? tag : "latest");
	if (strchr(s->sb->image, '@') != NULL)
		xasprintf(&path, "/images/create?fromImage=%s", eimg);
	else
		xasprintf(
		    &path, "/images/create?fromImage=%s&tag=%s", eimg, etag);
	log_info("pulling image %s", s->sb->image);
	mcp_log(s->call->sess, 6, "pulling image %s", s->sb->image);
	docker_stream(sup.docker, "POST", path, NULL, screate_pull_data,
	    screate_pulled_cb, s);
	free(path);
	free(eimg);
	free(etag);
	free(img);
}

static void
screate_created_cb(const struct docker_resp *resp, void *arg)
{
	struct screate *s = arg;
	json_object *id;
	char *path;

	if (resp->status == 404 && !s->pulled) {
		screate_pull(s);
		return;
	}
	if (resp->error != NULL || resp->json == NULL ||
	    !json_object_object_get_ex(resp->json, "Id", &id)) {
		screate_fail(s, "cannot create a sandbox from image \"%s\": %s",
		    resp->error != NULL ? resp->error : "no container id");
		return;
	}
	s->sb->id = xstrdup(json_object_get_string(id));
	if (*s->sb->name == '\0') {
		free(s->sb->name);
		s->sb->name = xstrndup(s->sb->id, 12);
	}
	if (sup.shutting_down) {
		/* Made as the server stops: removed at once. */
		screate_fail(s, "sandbox for image \"%s\": %s",
		    "the server is shutting down");
		return;
	}
	/* The worker starts while the container does. */
	s->sb->create = s;
	s->pending = 2;
	if (wproc_spawn(s->sb, screate_worker_cb) == -1) {
		screate_error(s, "cannot start a worker process");
		s->pending--;
	}
	xasprintf(&path, "/containers/%s/start", s->sb->id);
	docker_call(sup.docker, "POST", path, NULL, screate_started_cb, s);
	free(path);
}

static TAILQ_HEAD(, screate) start_queue = TAILQ_HEAD_INITIALIZER(start_queue);
static int starting;
static unsigned int last_served; /* the session admitted last */

static void
screate_create(struct screate *s)
{
	docker_call(
	    sup.docker, "POST", s->path, s->config, screate_created_cb, s);
}

/*
 * At most --max-concurrent-starts creations talk to the engine at once;
 * a burst waits its turn here instead of overloading the engine.
 */
static void
screate_admit(struct screate *s)
{
	if (starting >= sup.conf->max_starts) {
		TAILQ_INSERT_TAIL(&start_queue, s, qentry);
		s->queued = 1;
		return;
	}
	starting++;
	s->admitted = 1;
	last_served = s->sb->owner->id;
	screate_create(s);
}

/* The server stops: creations still waiting their turn fail. */
static void
screate_abort_queued(void)
{
	struct screate *s;

	while ((s = TAILQ_FIRST(&start_queue)) != NULL)
		screate_fail(s, "sandbox for image \"%s\": %s",
		    "the server is shutting down");
}

/*
 * The next creation to let in, round robin over the sessions that wait:
 * the oldest of the first session (by id) after the one served last, so
 * that a session with fifty queued creations takes turns with the others
 * instead of going first fifty times.
 */
static struct screate *
screate_next(void)
{
	struct screate *q, *after = NULL, *first = NULL;
	unsigned int id;

	TAILQ_FOREACH(q, &start_queue, qentry)
	{
		id = q->sb->owner->id;
		if (first == NULL || id < first->sb->owner->id)
			first = q;
		if (id > last_served &&
		    (after == NULL || id < after->sb->owner->id))
			after = q;
	}
	return after != NULL ? after : first;
}

/* A creation ended (either way): let the next one in. */
static void
screate_leave(struct screate *s)
{
	struct screate *next;

	if (s->queued) {
		TAILQ_REMOVE(&start_queue, s, qentry);
		s->queued = 0;
	}
	if (!s->admitted)
		return;
	s->admitted = 0;
	starting--;
	if ((next = screate_next()) != NULL) {
		TAILQ_REMOVE(&start_queue, next, qentry);
		next->queued = 0;
		screate_admit(next);
	}
}

static void
add_ulimit(json_object *a, const char *name, long long v)
{
	json_object *u;

	u = json_object_new_object();
	json_object_object_add(u, "Name", json_object_new_string(name));
	json_object_object_add(u, "Soft", json_object_new_int64(v));
	json_object_object_add(u, "Hard", json_object_new_int64(v));
	json_object_array_add(a, u);
}

/* The container: SPEC.md section 6's hardening, always. */
static json_object *
sandbox_config(const struct sandbox *sb, json_object *env, const char *network)
{
	const struct config *c = sup.conf;
	json_object *o, *h, *a, *t, *labels, *lc;
	char *s, *k, *eq;
	int has_home = 0, i;

	o = json_object_new_object();
	json_object_object_add(o, "Image", json_object_new_string(sb->image));
	/* The keep-alive, as a user the sandbox user cannot signal. */
	a = json_object_new_array();
	json_object_array_add(a, json_object_new_string("sleep"));
	json_object_array_add(a, json_object_new_string("infinity"));
	json_object_object_add(o, "Entrypoint", a);
	json_object_object_add(
	    o, "User", json_object_new_string(SANDBOX_KEEPALIVE_USER));
	json_object_object_add(
	    o, "WorkingDir", json_object_new_string(sb->workdir));
	a = json_object_new_array();
	if (env != NULL) {
		json_object_object_foreach(env, k, v)
		{
			xasprintf(&s, "%s=%s", k, json_object_get_string(v));
			json_object_array_add(a, json_object_new_string(s));
			free(s);
			if (strcmp(k, "HOME") == 0)
				has_home = 1;
		}
	}
	if (!has_home) {
		xasprintf(&s, "HOME=%s", sb->workdir);
		json_object_array_add(a, json_object_new_string(s));
		free(s);
	}
	json_object_object_add(o, "Env", a);
	labels = json_object_new_object();
	for (i = 0; i < c->nlabels; i++) {
		eq = strchr(c->labels[i], '=');
		k = xstrndup(c->labels[i], (size_t)(eq - c->labels[i]));
		json_object_object_add(
		    labels, k, json_object_new_string(eq + 1));
		free(k);
	}
	reaper_labels(labels, sb->expires);
	if (*sb->name != '\0')
		json_object_object_add(
		    labels, NAME_LABEL, json_object_new_string(sb->name));
	json_object_object_add(o, "Labels", labels);
	if (strcmp(network, "none") == 0)
		json_object_object_add(
		    o, "NetworkDisabled", json_object_new_boolean(1));

	h = json_object_new_object();
	json_object_object_add(
	    h, "NetworkMode", json_object_new_string(network));
	a = json_object_new_array();
	json_object_array_add(a, json_object_new_string("ALL"));
	json_object_object_add(h, "CapDrop", a);
	a = json_object_new_array();
	json_object_array_add(a, json_object_new_string("no-new-privileges"));
	json_object_object_add(h, "SecurityOpt", a);
	json_object_object_add(h, "ReadonlyRootfs", json_object_new_boolean(1));
	json_object_object_add(h, "Privileged", json_object_new_boolean(0));
	json_object_object_add(h, "Init", json_object_new_boolean(1));
	json_object_object_add(h, "IpcMode", json_object_new_string("private"));
	t = json_object_new_object();
	xasprintf(&s, "rw,nosuid,nodev,noexec,size=%ldm,mode=1777", c->tmp_mb);
	json_object_object_add(t, "/tmp", json_object_new_string(s));
	free(s);
	xasprintf(&s, "rw,nosuid,nodev,exec,size=%ldm,uid=%s,gid=%s,mode=0755",
	    c->workdir_mb, SANDBOX_EXEC_UID, SANDBOX_EXEC_UID);
	json_object_object_add(t, sb->workdir, json_object_new_string(s));
	free(s);
	json_object_object_add(h, "Tmpfs", t);
	json_object_object_add(h, "Memory",
	    json_object_new_int64(sb->lim.memory_mb * 1024 * 1024));
	json_object_object_add(h, "MemorySwap",
	    json_object_new_int64(sb->lim.memory_mb * 1024 * 1024));
	json_object_object_add(h, "NanoCpus",
	    json_object_new_int64((long long)(sb->lim.cpus * 1e9)));
	json_object_object_add(
	    h, "PidsLimit", json_object_new_int64(sb->lim.pids));
	a = json_object_new_array();
	add_ulimit(a, "nofile", c->nofile);
	add_ulimit(a, "fsize", c->fsize_mb * 1024 * 1024);
	json_object_object_add(h, "Ulimits", a);
	lc = json_object_new_object();
	json_object_object_add(lc, "Type", json_object_new_string("json-file"));
	t = json_object_new_object();
	json_object_object_add(t, "max-size", json_object_new_string("1m"));
	json_object_object_add(t, "max-file", json_object_new_string("1"));
	json_object_object_add(lc, "Config", t);
	json_object_object_add(h, "LogConfig", lc);
	json_object_object_add(o, "HostConfig", h);
	return o;
}

/*
 * Create a sandbox for a call that has validated its arguments; the call
 * is answered when the sandbox is ready or could not be made.
 */
void
sandbox_create(struct call *c, const char *image, const char *name,
    json_object *env, const char *workdir, const char *network,
    const struct limits *lim, long ttl)
{
	sandbox_create_cb(
	    c, image, name, env, workdir, network, lim, ttl, NULL, NULL);
}

/*
 * As sandbox_create(), but cb(call, sandbox, NULL, arg) gets the ready
 * sandbox (or cb(call, NULL, why, arg)) instead of the call an answer.
 */
void
sandbox_create_cb(struct call *c, const char *image, const char *name,
    json_object *env, const char *workdir, const char *network,
    const struct limits *lim, long ttl,
    void (*cb)(struct call *, struct sandbox *, const char *, void *),
    void *cbarg)
{
	struct screate *s;
	struct sandbox *sb;
	char *ename, *why;
	long mine = 0;

	/* A session's share: one client cannot take every sandbox. */
	TAILQ_FOREACH(sb, &sandboxes, entry)
	if (sb->owner == c->sess && sb->state != SB_STOPPING)
		mine++;
	if (mine >= sup.conf->max_sandboxes_per_session) {
		xasprintf(&why,
		    "too many sandboxes in this session (%ld, the limit of "
		    "--max-sandboxes-per-session): stop one with sandbox_stop "
		    "first",
		    sup.conf->max_sandboxes_per_session);
		if (cb != NULL)
			cb(c, NULL, why, cbarg);
		else
			call_reply(c, tool_error("%s", why));
		free(why);
		return;
	}

	sb = xcalloc(1, sizeof *sb);
	sb->name = xstrdup(name != NULL ? name : "");
	sb->image = xstrdup(image);
	sb->workdir = xstrdup(workdir);
	sb->lim = *lim;
	sb->created = time(NULL);
	sb->expires = sb->created + ttl;
	sb->state = SB_STARTING;
	sb->owner = c->sess;
	TAILQ_INSERT_TAIL(&sandboxes, sb, entry);

	s = xcalloc(1, sizeof *s);
	s->call = c;
	s->sb = sb;
	s->cb = cb;
	s->cbarg = cbarg;
	clock_gettime(CLOCK_MONOTONIC, &s->t0);
	s->config = sandbox_config(sb, env, network);
	if (name != NULL) {
		ename = docker_escape(name);
		xasprintf(&s->path,
		    "/containers/create?name=mcp-sandboxd-%.8s-%u-%s",
		    sup.instance, c->sess->id, ename);
		free(ename);
	} else
		s->path = xstrdup("/containers/create");
	screate_admit(s);
}
