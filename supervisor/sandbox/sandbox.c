/*
 * The sandbox registry and container lifecycle: create (pulling a missing
 * image), start, hand to a new worker; stop and remove with volumes.
 *
 * Lifetime of a sandbox (the rule of supervisor.h, "Lifetimes"): the
 * registry holds one reference, its creation one while it runs, a worker
 * that has not said hello yet one.  sandbox_destroy() is the one end of
 * life, whatever caused it (sandbox_stop, the session's end, expiry, a
 * crash, shutdown, even while the sandbox is still starting): it marks the
 * sandbox dead, takes it out of the registry, tells its worker to finish,
 * starts the container's removal (or, while the container id is not known
 * yet, leaves that to the creation, which sees the dead flag at each of
 * its steps) and drops the registry's reference.  The memory goes with
 * the last reference, from the event loop (defer_free()), never under a
 * callback that may still name the sandbox.
 */
#include <sys/random.h>
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "agentwire.h"
#include "clock.h"
#include "config.h"
#include "core.h"
#include "engine.h"
#include "enginepath.h"
#include "log.h"
#include "mcp.h"
#include "random.h"
#include "sandbox.h"
#include "spool.h"
#include "xmalloc.h"

#define SANDBOX_KEEPALIVE_USER "65533:65533"
#define SANDBOX_STOP_GRACE 10
/*
 * The keep-alive ends this long after the sandbox's lifetime, so that a
 * container outlives no dead supervisor by more; a live one removes it
 * at its lifetime first.
 */
#define SANDBOX_KEEPALIVE_GRACE 5
#define SANDBOX_MAX_VOLUMES 32 /* VOLUMEs of an image made into tmpfs */

struct sandboxes sandboxes = TAILQ_HEAD_INITIALIZER(sandboxes);
void (*sandbox_logs_updated)(struct sandbox *);
void (*sandbox_output_updated)(struct sandbox *, unsigned int);
static sandbox_listener listeners[4];

/* Hear of sandbox_event()s (the layers above, at start). */
void
sandbox_listen(sandbox_listener l)
{
	size_t i;

	for (i = 0; i < sizeof listeners / sizeof listeners[0]; i++)
		if (listeners[i] == NULL) {
			listeners[i] = l;
			return;
		}
	fatalx("%s: too many listeners", __func__);
}

/* Tell every listener, in the order they came. */
void
sandbox_event(struct sandbox *sb, enum sandbox_event ev)
{
	size_t i;

	for (i = 0;
	     i < sizeof listeners / sizeof listeners[0] && listeners[i] != NULL;
	     i++)
		listeners[i](sb, ev);
}

static struct sandbox *sandbox_adopt(struct session *, const char *);
static int sandbox_elsewhere(struct session *, const char *, char *, size_t);
static const char *sandbox_lost_why(const struct session *, const char *);

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

/* A session's live sandbox made with this idempotency_key, or NULL. */
struct sandbox *
sandbox_find_key(struct session *sess, const char *key)
{
	struct sandbox *sb;

	TAILQ_FOREACH(sb, &sandboxes, entry)
	{
		if (sb->owner == sess && sb->idem_key != NULL &&
		    sb->state != SB_STOPPING && strcmp(sb->idem_key, key) == 0)
			return sb;
	}
	return NULL;
}

/*
 * The sandbox a call names in argument key, ready for use; otherwise the
 * call is answered with an error and NULL is returned.
 */
struct sandbox *
sandbox_lookup(struct call *c, const char *key)
{
	struct sandbox *sb;
	const char *id, *lost_why;
	char text[512];

	if (!tool_arg_type_ok(c, key, json_type_string, NULL) ||
	    (id = tool_arg_string(c, key)) == NULL || *id == '\0') {
		mcp_call_reply(c,
		    tool_error(
		        "%s is required: the container_id "
		        "returned by sandbox_initialize (or the sandbox's name)",
		        key));
		return NULL;
	}
	if ((sb = sandbox_claim(c->sess, id)) == NULL) {
		if ((lost_why = sandbox_lost_why(c->sess, id)) != NULL) {
			mcp_call_reply(c,
			    tool_error("%s; every process and file in it is "
			               "gone, so there is no sandbox \"%.80s\" "
			               "any more: create a new one with "
			               "sandbox_initialize",
			        lost_why, id));
			return NULL;
		}
		if (sandbox_elsewhere(c->sess, id, text, sizeof text)) {
			mcp_call_reply(c, tool_error("%s", text));
			return NULL;
		}
		mcp_call_reply(c,
		    tool_error(
		        "no sandbox \"%.80s\": it may have "
		        "been stopped or expired; create one with "
		        "sandbox_initialize, or list them with get_sandbox_status",
		        id));
		return NULL;
	}
	if (sb->lost) {
		sandbox_lost_text(sb, text, sizeof text);
		mcp_call_reply(c, tool_error("%s", text));
		return NULL;
	}
	if (sb->state != SB_READY) {
		/* A sandbox still starting has a name but no id yet. */
		mcp_call_reply(
		    c, tool_error("sandbox %.63s is %s; try again "
		                  "later",
		           sb->id != NULL ? sb->id : sb->name,
		           sb->state == SB_STARTING ? "still starting"
		                                    : "being removed"));
		return NULL;
	}
	if (sb->worker == NULL) {
		mcp_call_reply(
		    c, tool_error("sandbox %.12s is getting a new worker "
		                  "after a crash; try again in a moment",
		           sb->id));
		return NULL;
	}
	sandbox_touch(sb);
	/* Paused while idle: thawed before anything of this call runs. */
	if (sb->paused)
		sandbox_resume(sb);
	return sb;
}

/* The sandbox whose container id is exactly id (a full id), or NULL. */
static struct sandbox *
sandbox_of_id(const char *id)
{
	struct sandbox *sb;

	TAILQ_FOREACH(sb, &sandboxes, entry)
	{
		if (sb->id != NULL && strcmp(sb->id, id) == 0)
			return sb;
	}
	return NULL;
}

/*
 * A detached sandbox named by its full container id (the id is the
 * capability): the session that names it takes it over, whether its
 * session ended (owner NULL) or is still open, as a one-shot client's
 * (the Inspector's CLI never ends its HTTP session).  The last session to
 * name it has it (its notifications, get_sandbox_status); its calls in
 * flight run on.
 */
static struct sandbox *
sandbox_adopt(struct session *sess, const char *id)
{
	struct sandbox *sb = sandbox_of_id(id);

	if (sb == NULL || (sb->owner != NULL && !sb->detach) ||
	    sb->owner == sess || sb->state != SB_READY)
		return NULL;
	if (sb->owner != NULL)
		log_info("sandbox %.12s (detached) taken over by session %u "
		         "from session %u",
		    sb->id, sess->id, sb->owner->id);
	else
		log_info("sandbox %.12s (detached) adopted by session %u",
		    sb->id, sess->id);
	sb->owner = sess;
	return sb;
}

struct sandbox *
sandbox_claim(struct session *sess, const char *key)
{
	struct sandbox *sb;

	if ((sb = sandbox_find(sess, key)) == NULL && sess != NULL)
		sb = sandbox_adopt(sess, key);
	return sb;
}

/*
 * Why a sandbox this session names is not its own, when the name is a
 * full container id (a capability: a prefix or a name says nothing of
 * other sessions): into buf, or 0 when there is nothing to tell.
 */
static int
sandbox_elsewhere(struct session *sess, const char *id, char *buf, size_t len)
{
	struct sandbox *sb = sandbox_of_id(id);

	if (sb == NULL || sb->owner == NULL || sb->owner == sess)
		return 0;
	snprintf(buf, len,
	    "sandbox %.12s belongs to another open client session; a sandbox "
	    "is its creator's only, unless it was made with detach: true "
	    "(then a session that names its full container_id takes it "
	    "over)",
	    sb->id);
	return 1;
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

/* A reference for a party that may be called back with the sandbox. */
struct sandbox *
sandbox_ref(struct sandbox *sb)
{
	sb->refs++;
	return sb;
}

static void
sandbox_free(void *arg)
{
	struct sandbox *sb = arg;

	free(sb->id);
	free(sb->name);
	free(sb->image);
	free(sb->workdir);
	free(sb->chandir);
	free(sb->runtime);
	json_object_put(sb->env);
	json_object_put(sb->volumes);
	free(sb->idem_key);
	json_object_put(sb->idem_args);
	json_object_put(sb->egress);
	free(sb);
}

/* Drop a reference; the last one frees the sandbox from the event loop. */
void
sandbox_unref(struct sandbox *sb)
{
	if (--sb->refs > 0)
		return;
	if (!sb->dead)
		fatalx("%s: a live sandbox lost its last reference", __func__);
	defer_free(sandbox_free, sb);
}

static void sandbox_channel_remove(struct sandbox *);

/* Out of the registry: nothing finds it, nothing of it runs on. */
static void
sandbox_unregister(struct sandbox *sb)
{
	TAILQ_REMOVE(sb->pool ? pool_list() : &sandboxes, sb, entry);
	sandbox_pause_stop(sb);
	/* Its logs resource leaves the owner's resources/list (if it was
	 * ever there: it was ready once, so it has a spool). */
	if (sb->spool != NULL)
		mcp_notify(sb->owner, "notifications/resources/list_changed");
	if (sb->worker != NULL)
		wproc_shutdown(sb->worker);
	if (sb->expiry != NULL)
		event_free(sb->expiry);
	sb->expiry = NULL;
	spool_dir_free(sb->spool);
	sb->spool = NULL;
	sandbox_channel_remove(sb);
	if (sb->respawn != NULL)
		event_free(sb->respawn);
	sb->respawn = NULL;
	json_object_put(sb->respawn_tokens);
	sb->respawn_tokens = NULL;
	pool_removed(sb);
}

/* --- removal --- */

struct sdestroy {
	struct sandbox *sb;
	struct engine *engine; /* the sandbox's */
	char *id;
	void (*done)(void *, const char *);
	void *arg;
};

static int destroys_in_flight;
static void destroy_all_check(void);
static void screate_abort_queued(void);
static void screate_error(struct screate *, const char *);

/* A removal is over (the container is gone, or never was). */
static void
sdestroy_done(struct sdestroy *d, const char *err)
{
	destroys_in_flight--;
	if (d->done != NULL)
		d->done(d->arg, err);
	free(d->id);
	free(d);
	destroy_all_check();
}

static void
sandbox_removed_cb(const struct engine_resp *resp, void *arg)
{
	struct sdestroy *d = arg;
	char *err = NULL;

	if (resp->error != NULL && !resp->notfound) {
		err = sandbox_error_text(resp->error);
		log_warnx("remove %.12s: %s", d->id, resp->error);
	} else {
		log_info("sandbox %.12s removed", d->id);
		stats.sandboxes_removed++;
	}
	sdestroy_done(d, err);
	free(err);
}

static void
sandbox_stopped_cb(const struct engine_resp *resp, void *arg)
{
	struct sdestroy *d = arg;

	if (resp->error != NULL && !resp->unchanged && !resp->notfound)
		log_warnx("stop %.12s: %s", d->id, resp->error);
	engine_container_remove(d->engine, d->id, sandbox_removed_cb, d);
}

/* A lost sandbox's removal: nothing to ask of its engine now. */
static void
sandbox_lost_done(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	sdestroy_done(arg, NULL);
}

/* Stop (grace, then kill; none at exit) and remove the container. */
static void
sandbox_remove_container(struct sdestroy *d)
{
	struct engine_resp none;

	if (sup.shutting_down) {
		/* No grace at exit: remove at once. */
		engine_resp_init(&none);
		sandbox_stopped_cb(&none, d);
		return;
	}
	engine_container_stop(
	    d->engine, d->id, SANDBOX_STOP_GRACE, sandbox_stopped_cb, d);
}

/*
 * The end of a sandbox's life, whatever its state: it leaves the
 * registry at once; its container is stopped (grace, then kill) and
 * removed with its volumes, then done(arg, error).  A sandbox still being
 * created is removed as soon as its creation knows the container (the
 * call that creates it fails).  Never calls done() before returning,
 * except for a sandbox that is already dead (done(arg, NULL) at once).
 */
void
sandbox_destroy(
    struct sandbox *sb, void (*done)(void *, const char *), void *arg)
{
	struct sdestroy *d;
	struct timeval now = {0, 0};

	if (sb->dead) {
		if (done != NULL)
			done(arg, NULL);
		return;
	}
	sb->dead = 1;
	sb->state = SB_STOPPING;
	sandbox_event(sb, SANDBOX_DESTROYED);
	sandbox_unregister(sb);
	d = xcalloc(1, sizeof *d);
	destroys_in_flight++;
	d->engine = sb->engine;
	d->done = done;
	d->arg = arg;
	if (sb->id != NULL && sb->lost) {
		/* Its engine does not answer: the reaper removes the
		 * container when it does (engines.c). */
		d->id = xstrdup(sb->id);
		event_base_once(
		    sup.base, -1, EV_TIMEOUT, sandbox_lost_done, d, &now);
	} else if (sb->id != NULL) {
		d->id = xstrdup(sb->id);
		sandbox_remove_container(d);
	} else
		sb->removal = d; /* the creation finishes it */
	sandbox_unref(sb);
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
	    TAILQ_EMPTY(&sandboxes) && TAILQ_EMPTY(pool_list())) {
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
		/* (The registry holds no dead one; said for the analyzer.) */
		if (sb->owner != sess || sb->dead)
			continue;
		if (sb->detach && sb->state == SB_READY) {
			/* It outlives the session, up to its lifetime. */
			sb->owner = NULL;
			log_info("sandbox %.12s (detached) outlives its "
			         "session",
			    sb->id);
			continue;
		}
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
	pool_stop();
	for (sb = TAILQ_FIRST(&sandboxes); sb != NULL; sb = next) {
		next = TAILQ_NEXT(sb, entry);
		destroy_pending++;
		sandbox_destroy(sb, sandbox_destroy_all_cb, NULL);
	}
	while ((sb = TAILQ_FIRST(pool_list())) != NULL) {
		destroy_pending++;
		sandbox_destroy(sb, sandbox_destroy_all_cb, NULL);
	}
	screate_abort_queued();
	sandbox_destroy_all_cb(NULL, NULL);
}

static int screate_egress_sent(const struct screate *);

/*
 * Sandboxes lost lately (their container died behind our back: a crash
 * of its runtime, such as a gVisor sandbox ended whole), so that a call
 * that names one learns what happened instead of "no sandbox".  A ring:
 * the oldest is forgotten first.
 */
#define SANDBOX_LOST_MAX 32
static struct sandbox_lost {
	unsigned int sess; /* its owner's session id; 0: detached */
	char *id, *name, *why;
} lost[SANDBOX_LOST_MAX];
static unsigned int lost_next;

static void
sandbox_lost_add(const struct sandbox *sb, const char *why)
{
	struct sandbox_lost *l = &lost[lost_next++ % SANDBOX_LOST_MAX];

	free(l->id);
	free(l->name);
	free(l->why);
	l->sess = sb->owner != NULL ? sb->owner->id : 0;
	l->id = xstrdup(sb->id);
	l->name = xstrdup(sb->name);
	l->why = xstrdup(why);
}

/* Why a sandbox a session names was lost, or NULL: by full id, by a
 * unique prefix (12 or more) or by name, as sandbox_find(). */
static const char *
sandbox_lost_why(const struct session *sess, const char *key)
{
	const struct sandbox_lost *l;
	size_t len = strlen(key), i;

	for (i = 0; i < SANDBOX_LOST_MAX; i++) {
		l = &lost[(lost_next - 1 - i) % SANDBOX_LOST_MAX];
		if (l->id == NULL)
			continue;
		if (strcmp(l->id, key) == 0 ||
		    (l->sess == sess->id &&
		        (strcmp(l->name, key) == 0 ||
		            (len >= 12 && strncmp(l->id, key, len) == 0))))
			return l->why;
	}
	return NULL;
}

void
sandbox_lost_free(void)
{
	size_t i;

	for (i = 0; i < SANDBOX_LOST_MAX; i++) {
		free(lost[i].id);
		free(lost[i].name);
		free(lost[i].why);
	}
	memset(lost, 0, sizeof lost);
}

/*
 * The container died behind our back: say so, and clean up after it.
 * The calls in flight on it end at once with why it was lost (not a
 * hang: under gVisor a dead sandbox's exec streams never end), and a
 * later call naming it is told the same.
 */
void
sandbox_gone(struct sandbox *sb, const char *why)
{
	char *msg;

	if (sb->pool) {
		pool_lost(sb, why);
		return;
	}
	/* A pool container being handed out: the creation makes another;
	 * one whose worker is being given its egress list fails. */
	if (sb->state == SB_STARTING && sb->create != NULL &&
	    (sb->from_pool || screate_egress_sent(sb->create)))
		screate_error(sb->create, why);
	if (sb->state != SB_READY)
		return;
	log_warnx("sandbox %.12s: %s", sb->id, why);
	xasprintf(&msg, "sandbox lost: %.12s (%s) died: %s%s%s", sb->id,
	    sb->name, why, sb->runtime != NULL ? ", under runtime " : "",
	    sb->runtime != NULL ? sb->runtime : "");
	sandbox_lost_add(sb, msg);
	free(msg);
	xasprintf(&msg,
	    "sandbox lost: %.12s (%s) died: %s%s%s; every process and file "
	    "in it is gone: create a new one with sandbox_initialize",
	    sb->id, sb->name, why,
	    sb->runtime != NULL ? ", under runtime " : "",
	    sb->runtime != NULL ? sb->runtime : "");
	if (sb->owner != NULL)
		mcp_log(sb->owner, 3, "%s", msg);
	if (sb->worker != NULL)
		wproc_set_loss(sb->worker, msg);
	free(msg);
	stats.sandboxes_failed++;
	stats.sandboxes_lost++;
	sandbox_destroy(sb, NULL, NULL);
}

/* What every call on a lost sandbox is told. */
void
sandbox_lost_text(const struct sandbox *sb, char *buf, size_t len)
{
	struct tm tm;
	char when[32];

	gmtime_r(&sb->lost_at, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(buf, len,
	    "sandbox %.12s was on engine %s, which stopped answering at %s; "
	    "its state is lost; start a new sandbox (sandbox_initialize)",
	    sb->id != NULL ? sb->id : sb->name, engines_url(sb->engine), when);
}

/*
 * An engine stopped answering (engines.c): each ready sandbox on it is
 * lost for good (its worker ends, its calls in flight are answered with
 * why, no new worker comes), its pool containers go; creations on it
 * fail by themselves on the engine's errors.
 */
void
sandbox_engine_lost(struct engine *eng)
{
	struct sandbox *sb, *next;
	char why[512];

	TAILQ_FOREACH(sb, &sandboxes, entry)
	{
		if (sb->engine != eng || sb->lost || sb->state != SB_READY)
			continue;
		sb->lost = 1;
		sb->lost_at = engines_down_since(eng);
		engines_count_lost(eng);
		stats.sandboxes_failed++;
		stats.sandboxes_lost++;
		sandbox_lost_text(sb, why, sizeof why);
		log_warnx("%s", why);
		if (sb->owner != NULL)
			mcp_log(sb->owner, 3, "%s", why);
		sandbox_pause_stop(sb);
		if (sb->respawn != NULL)
			evtimer_del(sb->respawn);
		if (sb->worker != NULL)
			wproc_lose(sb->worker, why);
	}
	for (sb = TAILQ_FIRST(pool_list()); sb != NULL; sb = next) {
		next = TAILQ_NEXT(sb, entry);
		if (sb->engine == eng && sb->state == SB_READY)
			pool_lost(sb, "its engine stopped answering");
	}
}

/* When the sandbox goes: its lifetime's end or its idle limit's. */
time_t
sandbox_deadline(const struct sandbox *sb, int *idle)
{
	time_t d = sb->expires;

	*idle = 0;
	if (sb->pool) /* replaced at its age, never idle */
		return d;
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
	if (sb->owner != NULL)
		mcp_log(sb->owner, 5, "sandbox %s %s and was removed", sb->name,
		    idle ? "was idle for its idle limit"
		         : "reached its lifetime");
	sandbox_destroy(sb, NULL, NULL);
}

/* A call uses the sandbox: its idle limit starts again. */
void
sandbox_touch(struct sandbox *sb)
{
	sb->last_used = time(NULL);
	sandbox_pause_arm(sb);
}

/* --- creation --- */

struct screate {
	struct call *call;
	struct sandbox *sb;
	struct engine_spec spec; /* its container; what it points to: */
	char *cname, *network, *lifetime;
	char *binds[2]; /* the engine's paths of the agent and channel */
	const char *cmd[3];
	json_object *env, *labels, *volumes;
	int pulled;
	int pending; /* of the container start and the worker */
	int queued, admitted;
	int pool; /* a container for the warm pool: no call */
	int taking; /* a pool container handed to the call */
	int egress_sent; /* its worker was given sb->egress */
	char *retry_name; /* the name asked for, when taking failed */
	/* Retries with the same idempotency_key: answered as the call is. */
	struct call **waiters;
	int nwaiters;
	/* Instead of answering the call: the caller's continuation. */
	void (*cb)(struct call *, struct sandbox *, const char *, void *);
	void *cbarg;
	TAILQ_ENTRY(screate) qentry;
	long long t0_ns; /* clock_ns() at the start */
	char *error;
	/* Until admitted: the image's inspection or pull in flight. */
	struct engine_req *req;
	struct event *pull_timer;
	int preparing;
	TAILQ_ENTRY(screate) pentry;
};

/* Whether its worker is being given the sandbox's egress list. */
static int
screate_egress_sent(const struct screate *s)
{
	return s->egress_sent;
}

/* Creations still making sure of their image (no start slot yet). */
static TAILQ_HEAD(, screate) preparing = TAILQ_HEAD_INITIALIZER(preparing);

static void screate_leave(struct screate *);
static void screate_retry(struct screate *);
static void screate_retry_go(void *, const char *);

static void
screate_unprepare(struct screate *s)
{
	engine_req_cancel(s->req);
	s->req = NULL;
	if (s->pull_timer != NULL) {
		event_free(s->pull_timer);
		s->pull_timer = NULL;
	}
	if (s->preparing) {
		TAILQ_REMOVE(&preparing, s, pentry);
		s->preparing = 0;
	}
}

static void
screate_free(struct screate *s)
{
	screate_unprepare(s);
	screate_leave(s);
	if (s->sb->create == s)
		s->sb->create = NULL;
	sandbox_unref(s->sb);
	json_object_put(s->env);
	json_object_put(s->labels);
	json_object_put(s->volumes);
	free(s->cname);
	free(s->retry_name);
	free(s->waiters);
	free(s->network);
	free(s->binds[0]);
	free(s->binds[1]);
	free(s->lifetime);
	free(s->error);
	free(s);
}

/*
 * The creation failed (or its sandbox was destroyed meanwhile): the call
 * learns why, and whatever was made of the sandbox goes.
 */
static void
screate_fail(struct screate *s, const char *fmt, const char *detail)
{
	struct sandbox *sb = s->sb;
	struct sdestroy *d;
	char *msg = sandbox_error_text(detail);
	int i;

	if (s->pool)
		stats.pool_failed++;
	else
		stats.sandboxes_failed++;
	log_warnx("sandbox for image %s failed: %s", s->sb->image, msg);
	if (s->cb != NULL) {
		char *full;

		xasprintf(&full, fmt, sb->image, msg);
		s->cb(s->call, NULL, full, s->cbarg);
		free(full);
	} else
		mcp_call_reply(s->call, tool_error(fmt, sb->image, msg));
	for (i = 0; i < s->nwaiters; i++)
		mcp_call_reply(s->waiters[i], tool_error(fmt, sb->image, msg));
	s->nwaiters = 0;
	free(msg);
	sandbox_destroy(sb, NULL, NULL);
	if ((d = sb->removal) != NULL) {
		/* Destroyed before its container was known: now it is. */
		sb->removal = NULL;
		if (sb->id != NULL) {
			d->id = xstrdup(sb->id);
			sandbox_remove_container(d);
		} else
			sdestroy_done(d, NULL);
	}
	screate_free(s);
	destroy_all_check();
}

/* Why a creation must stop here, or NULL. */
static const char *
screate_stopped(struct screate *s)
{
	if (sup.shutting_down)
		return "the server is shutting down";
	if (s->sb->dead)
		return "the sandbox was removed while it started (sandbox_stop, "
		       "or its session ended)";
	if (s->call != NULL && s->call->cancelled)
		return "cancelled";
	return NULL;
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

/* sandbox_initialize's answer for a ready sandbox. */
json_object *
sandbox_result(const struct sandbox *sb)
{
	json_object *r, *res;
	char *text, when[32], allow[1024];
	struct tm tm;

	gmtime_r(&sb->expires, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	r = json_object_new_object();
	json_object_object_add(
	    r, "container_id", json_object_new_string(sb->id));
	json_object_object_add(r, "name", json_object_new_string(sb->name));
	json_object_object_add(r, "image", json_object_new_string(sb->image));
	json_object_object_add(
	    r, "workdir", json_object_new_string(sb->workdir));
	json_object_object_add(r, "limits", sandbox_limits_json(sb));
	json_object_object_add(r, "expires_at", json_object_new_string(when));
	json_object_object_add(
	    r, "from_pool", json_object_new_boolean(sb->from_pool));
	json_object_object_add(
	    r, "runtime", json_object_new_string(sandbox_runtime_name(sb)));
	if (engines_multi())
		json_object_object_add(r, "engine",
		    json_object_new_string(engines_url(sb->engine)));
	if (sb->egress != NULL) {
		json_object_object_add(
		    r, "egress", json_object_get(sb->egress));
		egresslist_text(sb->egress, allow, sizeof allow);
	}
	xasprintf(&text,
	    "Sandbox ready: container_id %s (name %s), image %s, "
	    "workdir %s, runtime %s, expires %s.%s%s%s Run commands with "
	    "sandbox_exec.",
	    sb->id, sb->name, sb->image, sb->workdir, sandbox_runtime_name(sb),
	    when,
	    sb->egress != NULL ? " Egress through its proxy (HTTP_PROXY, "
	                         "HTTPS_PROXY) to: "
	                       : "",
	    sb->egress != NULL ? allow : "", sb->egress != NULL ? "." : "");
	res = tool_result(r, text, 0);
	free(text);
	return res;
}

/*
 * A retry of the creation of sb (the same idempotency_key): c gets the
 * same answer, now if it is ready, else when its creation ends.  0, or
 * -1 if sb is going (c is not answered).
 */
int
sandbox_join(struct sandbox *sb, struct call *c)
{
	struct screate *s = sb->create;

	if (sb->dead || sb->state == SB_STOPPING)
		return -1;
	if (sb->state == SB_READY) {
		mcp_call_reply(c, sandbox_result(sb));
		return 0;
	}
	if (s == NULL || s->cb != NULL)
		return -1;
	s->waiters = xrealloc(
	    s->waiters, (size_t)(s->nwaiters + 1) * sizeof(struct call *));
	s->waiters[s->nwaiters++] = c;
	return 0;
}

static void screate_egress_cb(
    struct sandbox *, json_object *, const char *, void *);

/* The container started and its worker said hello (both, any order);
 * then its worker took its egress list, if it has one. */
static void
screate_ready(struct screate *s)
{
	struct sandbox *sb = s->sb;
	struct timeval tv;
	int idle, i;

	if (--s->pending > 0)
		return;
	sb->create = NULL;
	if (s->error == NULL && screate_stopped(s) != NULL)
		s->error = xstrdup(screate_stopped(s));
	/* Its worker said hello, then died before the container started:
	 * a new one comes only for a ready sandbox (wproc.c), so none would. */
	if (s->error == NULL && sb->worker == NULL)
		s->error = xstrdup("its worker exited as it started");
	if (s->error != NULL && s->taking && screate_stopped(s) == NULL) {
		screate_retry(s);
		return;
	}
	if (s->error != NULL) {
		screate_fail(s, "sandbox for image \"%s\" could not start: %s",
		    s->error);
		return;
	}
	/*
	 * Its egress list (egresslist.c), given to its worker before the
	 * call is answered: the first command already has its proxy.  It is
	 * still starting meanwhile, so no other call reaches it, and a retry
	 * with its idempotency_key waits with this one.
	 */
	if (!s->pool && sb->egress != NULL && !s->egress_sent) {
		s->egress_sent = 1;
		s->pending = 1;
		sb->create = s;
		egresslist_send(sb, sb->egress, screate_egress_cb, s);
		return;
	}
	sb->state = SB_READY;
	sandbox_touch(sb);
	if (sb->expiry == NULL)
		sb->expiry = evtimer_new(sup.base, sandbox_expire_cb, sb);
	tv.tv_sec = sandbox_deadline(sb, &idle) - time(NULL);
	tv.tv_usec = 0;
	if (tv.tv_sec < 1)
		tv.tv_sec = 1;
	evtimer_add(sb->expiry, &tv);
	if (s->pool) {
		/* Ready in the pool; the rest is done when it is taken. */
		stats.pool_created++;
		log_info(
		    "pool container %.12s ready, image %s", sb->id, sb->image);
		s->cb(NULL, sb, NULL, s->cbarg);
		screate_free(s);
		return;
	}
	/* Its logs resource joins the owner's resources/list. */
	mcp_notify(sb->owner, "notifications/resources/list_changed");
	stats.sandboxes_created++;
	if (sb->from_pool)
		stats.pool_taken++;
	stats_observe(&stats.create_ms, (double)(clock_ns() - s->t0_ns) / 1e6);
	sb->spool = spool_dir_new(sb->id, sup.conf->spool_mb * 1024 * 1024);
	sandbox_pause_arm(sb); /* (touched before it was ready) */
	log_info(
	    "sandbox %.12s (%s) ready, image %s", sb->id, sb->name, sb->image);
	if (s->cb != NULL)
		s->cb(s->call, sb, NULL, s->cbarg);
	else
		mcp_call_reply(s->call, sandbox_result(sb));
	for (i = 0; i < s->nwaiters; i++)
		mcp_call_reply(s->waiters[i], sandbox_result(sb));
	s->nwaiters = 0;
	screate_free(s);
}

static void
screate_error(struct screate *s, const char *err)
{
	if (s->error == NULL && err != NULL)
		s->error = xstrdup(err);
}

/* The worker's answer to the sandbox's egress list. */
static void
screate_egress_cb(
    struct sandbox *sb, json_object *res, const char *err, void *arg)
{
	struct screate *s = arg;

	(void)sb;
	(void)res;
	if (err != NULL && s->error == NULL)
		xasprintf(&s->error,
		    "its worker did not take the egress list (%s)", err);
	screate_ready(s);
}

static void
screate_started_cb(const struct engine_resp *resp, void *arg)
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
static void screate_admit(struct screate *);
static int screate_pool_slot(void);

static void screate_inspect(struct screate *);
static void sandbox_spec(struct screate *, json_object *, const char *);
static long sandbox_uid_alloc(char *, size_t);

static void
screate_pulled_cb(const struct engine_resp *resp, void *arg)
{
	struct screate *s = arg;
	const char *stop;

	s->req = NULL;
	if (s->pull_timer != NULL) {
		event_free(s->pull_timer);
		s->pull_timer = NULL;
	}
	if ((stop = screate_stopped(s)) != NULL) {
		screate_fail(s, "sandbox for image \"%s\": %s", stop);
		return;
	}
	/* The engine's or the registry's reason, if it failed. */
	if (resp->error != NULL) {
		screate_fail(s,
		    "image \"%s\" is not available locally and "
		    "could not be pulled: %s",
		    resp->error);
		return;
	}
	log_info("pulled image %s", s->sb->image);
	screate_inspect(s);
}

/* A pull that does not end in --pull-timeout fails (and is dropped). */
static void
screate_pull_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct screate *s = arg;
	char why[128];

	(void)fd;
	(void)what;
	log_warnx("pulling image %s: no end after %ld s; giving up",
	    s->sb->image, sup.conf->pull_timeout);
	snprintf(why, sizeof why,
	    "the pull did not finish within %ld s (the server's "
	    "--pull-timeout)",
	    sup.conf->pull_timeout);
	screate_fail(s,
	    "image \"%s\" is not available locally and could not be "
	    "pulled: %s",
	    why);
}

static void
screate_pull(struct screate *s)
{
	struct timeval tv;

	s->pulled = 1;
	log_info("pulling image %s", s->sb->image);
	if (s->call != NULL)
		mcp_log(s->call->sess, 6, "pulling image %s", s->sb->image);
	s->req = engine_image_pull(
	    s->sb->engine, s->sb->image, screate_pulled_cb, s);
	s->pull_timer = evtimer_new(sup.base, screate_pull_timeout_cb, s);
	tv.tv_sec = sup.conf->pull_timeout;
	tv.tv_usec = 0;
	evtimer_add(s->pull_timer, &tv);
}

static void
screate_created_cb(const struct engine_resp *resp, void *arg)
{
	struct screate *s = arg;
	const char *why;
	char *fmt;

	if (resp->error != NULL && s->sb->runtime != NULL &&
	    strcasestr(resp->error, "runtime") != NULL) {
		/* The operator allows it, the engine does not know it.  (The
		 * name is checked: no '%' in it.) */
		xasprintf(&fmt,
		    "cannot create a sandbox from image \"%%s\" under runtime "
		    "\"%s\": %%s (the engine does not know that runtime: the "
		    "operator allows it but must register it with the engine, "
		    "as daemon.json's runtimes; ask for another runtime "
		    "meanwhile)",
		    s->sb->runtime);
		screate_fail(s, fmt, resp->error);
		free(fmt);
		return;
	}
	if (resp->error != NULL || resp->id == NULL) {
		screate_fail(s, "cannot create a sandbox from image \"%s\": %s",
		    resp->error != NULL ? resp->error : "no container id");
		return;
	}
	s->sb->id = xstrdup(resp->id);
	if (*s->sb->name == '\0') {
		free(s->sb->name);
		s->sb->name = xstrndup(s->sb->id, 12);
	}
	if ((why = screate_stopped(s)) != NULL) {
		/* Made as it was given up: removed at once. */
		screate_fail(s, "sandbox for image \"%s\": %s", why);
		return;
	}
	/* The worker starts while the container does. */
	s->sb->create = s;
	s->pending = 2;
	if (wproc_spawn(s->sb, screate_worker_cb) == -1) {
		screate_error(s, "cannot start a worker process");
		s->pending--;
	}
	engine_container_start(s->sb->engine, s->sb->id, screate_started_cb, s);
}

static TAILQ_HEAD(, screate) start_queue = TAILQ_HEAD_INITIALIZER(start_queue);
/* The warm pool's creations wait here, behind every client's. */
static TAILQ_HEAD(, screate) pool_queue = TAILQ_HEAD_INITIALIZER(pool_queue);
static int starting;
static unsigned int last_served; /* the session admitted last */

static void
screate_create(struct screate *s)
{
	const char *why;

	if ((why = screate_stopped(s)) != NULL) {
		screate_fail(s, "sandbox for image \"%s\": %s", why);
		return;
	}
	engine_container_create(s->sb->engine, &s->spec, screate_created_cb, s);
}

/*
 * At most --max-concurrent-starts creations talk to the engine at once;
 * a burst waits its turn here instead of overloading the engine.
 */
static void
screate_admit(struct screate *s)
{
	if (s->pool && !screate_pool_slot()) {
		TAILQ_INSERT_TAIL(&pool_queue, s, qentry);
		s->queued = 1;
		return;
	}
	if (!s->pool && starting >= sup.conf->max_starts) {
		TAILQ_INSERT_TAIL(&start_queue, s, qentry);
		s->queued = 1;
		return;
	}
	starting++;
	s->admitted = 1;
	if (!s->pool)
		last_served = s->call->sess->id;
	screate_create(s);
}

/*
 * Whether a pool creation may take a start slot now: only when no
 * client's creation waits for one, and (with two slots or more) one is
 * left free, so that a client's creation that comes meanwhile never
 * waits for the pool.
 */
static int
screate_pool_slot(void)
{
	long cap = sup.conf->max_starts > 1 ? sup.conf->max_starts - 1 : 1;

	return starting < cap && TAILQ_EMPTY(&start_queue);
}

/*
 * A declared VOLUME path, made clean as the engine makes it (no trailing
 * '/'), or NULL if it is not one a tmpfs may cover.
 */
static char *
volume_path(const char *p)
{
	static const char *const banned[] = {"/proc", "/sys", "/dev", "/etc",
	    "/usr", "/bin", "/sbin", "/lib", "/lib64", NULL};
	size_t n = strlen(p), i, b;
	char *v;

	while (n > 1 && p[n - 1] == '/')
		n--;
	if (p[0] != '/' || n < 2 || n > 255)
		return NULL;
	v = xstrndup(p, n);
	for (i = 0; v[i] != '\0'; i++)
		if (v[i] == ',' || v[i] == ':' || iscntrl((unsigned char)v[i]))
			goto bad;
	if (strstr(v, "//") != NULL || strstr(v, "/./") != NULL ||
	    strstr(v, "/../") != NULL ||
	    (n >= 2 && strcmp(v + n - 2, "/.") == 0) ||
	    (n >= 3 && strcmp(v + n - 3, "/..") == 0))
		goto bad;
	for (i = 0; banned[i] != NULL; i++) {
		b = strlen(banned[i]);
		if (strncmp(v, banned[i], b) == 0 &&
		    (v[b] == '\0' || v[b] == '/'))
			goto bad;
	}
	return v;
bad:
	free(v);
	return NULL;
}

/* A tmpfs of the container (the last of a path wins, as in the engine). */
static void
spec_tmpfs(struct engine_spec *spec, const char *path, long size_mb, int exec,
    long uid, int mode)
{
	struct engine_tmpfs *t;

	if (spec->ntmpfs >= ENGINE_MAX_TMPFS)
		fatalx("%s: too many tmpfs mounts", __func__);
	t = &spec->tmpfs[spec->ntmpfs++];
	t->path = path;
	t->size_mb = size_mb;
	t->exec = exec;
	t->uid = uid;
	t->mode = mode;
}

static int
spec_has_tmpfs(const struct engine_spec *spec, const char *path)
{
	int i;

	for (i = 0; i < spec->ntmpfs; i++)
		if (strcmp(spec->tmpfs[i].path, path) == 0)
			return 1;
	return 0;
}

/*
 * Each VOLUME the image declares becomes a capped tmpfs (--volume-mb), so
 * that the engine makes no anonymous volume on the host's disk, outside
 * every cap.  -1 with *why when the image cannot be used.
 */
static int
screate_volumes(
    struct screate *s, const struct engine_image *image, char *why, size_t len)
{
	const char *k;
	char *path;
	size_t i, n;

	n = image->volumes != NULL ? json_object_array_length(image->volumes)
	                           : 0;
	for (i = 0; i < n; i++) {
		k = json_object_get_string(
		    json_object_array_get_idx(image->volumes, i));
		if (i + 1 > SANDBOX_MAX_VOLUMES) {
			snprintf(why, len, "it declares more than %d VOLUMEs",
			    SANDBOX_MAX_VOLUMES);
			return -1;
		}
		if ((path = volume_path(k)) == NULL) {
			snprintf(why, len,
			    "it declares VOLUME \"%.100s\", which cannot "
			    "be given a capped tmpfs",
			    k);
			return -1;
		}
		/* Already a tmpfs (the workdir, /tmp): nothing to add. */
		if (!spec_has_tmpfs(&s->spec, path)) {
			json_object_array_add(
			    s->volumes, json_object_new_string(path));
			spec_tmpfs(&s->spec,
			    json_object_get_string(
			        json_object_array_get_idx(s->volumes,
			            json_object_array_length(s->volumes) - 1)),
			    sup.conf->volume_mb, 0, -1, 01777);
			log_debug("image %s: VOLUME %s as a tmpfs of %ld MiB",
			    s->sb->image, path, sup.conf->volume_mb);
		}
		free(path);
	}
	return 0;
}

static void
screate_inspected_cb(const struct engine_resp *resp, void *arg)
{
	struct screate *s = arg;
	const char *stop;
	char why[256];

	s->req = NULL;
	if ((stop = screate_stopped(s)) != NULL) {
		screate_fail(s, "sandbox for image \"%s\": %s", stop);
		return;
	}
	if (resp->notfound && !s->pulled) {
		screate_pull(s);
		return;
	}
	if (resp->error != NULL || resp->image == NULL) {
		screate_fail(s, "cannot use image \"%s\": %s",
		    resp->error != NULL ? resp->error : "no image details");
		return;
	}
	if (screate_volumes(s, resp->image, why, sizeof why) == -1) {
		screate_fail(s, "cannot use image \"%s\": %s", why);
		return;
	}
	/* The image is here: only now does the creation take a start slot,
	 * so that a slow pull holds none that others need. */
	screate_unprepare(s);
	screate_admit(s);
}

/* Is the image here (pull it if not), and what does it declare? */
static void
screate_inspect(struct screate *s)
{
	s->req = engine_image_inspect(
	    s->sb->engine, s->sb->image, screate_inspected_cb, s);
}

/* The server stops: creations still waiting their turn fail. */
static void
screate_abort_queued(void)
{
	struct screate *s;

	while ((s = TAILQ_FIRST(&preparing)) != NULL)
		screate_fail(s, "sandbox for image \"%s\": %s",
		    "the server is shutting down");

	while ((s = TAILQ_FIRST(&start_queue)) != NULL)
		screate_fail(s, "sandbox for image \"%s\": %s",
		    "the server is shutting down");
	while ((s = TAILQ_FIRST(&pool_queue)) != NULL)
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
		/* The creating call's session: the sandbox's owner, which a
		 * detach or a session's end may change, is not asked. */
		id = q->call->sess->id;
		if (first == NULL || id < first->call->sess->id)
			first = q;
		if (id > last_served &&
		    (after == NULL || id < after->call->sess->id))
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
		if (s->pool)
			TAILQ_REMOVE(&pool_queue, s, qentry);
		else
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
	} else if ((next = TAILQ_FIRST(&pool_queue)) != NULL &&
	           screate_pool_slot()) {
		TAILQ_REMOVE(&pool_queue, next, qentry);
		next->queued = 0;
		screate_admit(next);
	}
}

/*
 * The agent's channel (worker/channel.c): a directory of the instance's
 * private one, bound read-only into the sandbox, where its worker puts
 * the socket.  0, or -1 (logged) and the agent goes without.
 */
static int
sandbox_channel_dir(struct sandbox *sb)
{
	char hex[17];

	if (sb->chandir != NULL)
		return 0;
	if (spool_root_path() == NULL)
		return -1;
	random_hex(hex, 8);
	xasprintf(&sb->chandir, "%s/ch-%s", spool_root_path(), hex);
	if (mkdir(sb->chandir, 0755) == -1 || chmod(sb->chandir, 0755) == -1) {
		log_warnx("the agent's channel: mkdir %s: %s", sb->chandir,
		    strerror(errno));
		free(sb->chandir);
		sb->chandir = NULL;
		return -1;
	}
	return 0;
}

static void
sandbox_channel_remove(struct sandbox *sb)
{
	char *sock;

	if (sb->chandir == NULL)
		return;
	xasprintf(&sock, "%s/%s", sb->chandir, AGENT_CHANNEL_SOCK);
	(void)unlink(sock);
	free(sock);
	if (rmdir(sb->chandir) == -1 && errno != ENOENT)
		log_warnx("rmdir %s: %s", sb->chandir, strerror(errno));
	free(sb->chandir);
	sb->chandir = NULL;
}

/*
 * The container: what this sandbox is (image, keep-alive, user, workdir,
 * environment, labels, limits, tmpfs mounts); the engine adds SPEC.md
 * section 6's hardening, always (engine/docker-spec.c).
 */
static void
sandbox_spec(struct screate *s, json_object *env, const char *network)
{
	const struct config *c = sup.conf;
	struct engine_spec *spec = &s->spec;
	struct sandbox *sb = s->sb;
	const char *agent;
	char *v, *k, *eq;
	int has_home = 0, i;

	memset(spec, 0, sizeof *spec);
	for (i = 0; i < 2; i++) {
		free(s->binds[i]);
		s->binds[i] = NULL;
	}
	spec->image = sb->image;
	/* The keep-alive, as a user the sandbox user cannot signal ... */
	s->cmd[0] = "sleep";
	/* ... that ends by itself at the sandbox's lifetime (and the
	 * container with it, under the init), even if no supervisor is
	 * left to remove it. */
	xasprintf(&s->lifetime, "%lld",
	    (long long)(sb->expires - sb->created) + SANDBOX_KEEPALIVE_GRACE);
	s->cmd[1] = s->lifetime;
	s->cmd[2] = NULL;
	spec->cmd = s->cmd;
	spec->user = SANDBOX_KEEPALIVE_USER;
	spec->workdir = sb->workdir;
	s->env = json_object_new_array();
	if (env != NULL) {
		json_object_object_foreach(env, key, val)
		{
			xasprintf(
			    &v, "%s=%s", key, json_object_get_string(val));
			json_object_array_add(
			    s->env, json_object_new_string(v));
			free(v);
			if (strcmp(key, "HOME") == 0)
				has_home = 1;
		}
	}
	if (!has_home) {
		xasprintf(&v, "HOME=%s", sb->workdir);
		json_object_array_add(s->env, json_object_new_string(v));
		free(v);
	}
	spec->env = s->env;
	s->labels = json_object_new_object();
	for (i = 0; i < c->nlabels; i++) {
		eq = strchr(c->labels[i], '=');
		k = xstrndup(c->labels[i], (size_t)(eq - c->labels[i]));
		json_object_object_add(
		    s->labels, k, json_object_new_string(eq + 1));
		free(k);
	}
	reaper_labels(s->labels, sb->expires);
	if (*sb->name != '\0')
		json_object_object_add(
		    s->labels, NAME_LABEL, json_object_new_string(sb->name));
	spec->labels = s->labels;
	s->network = xstrdup(network);
	spec->network = s->network;
	spec->runtime = sb->runtime;
	spec->memory_bytes = sb->lim.memory_mb * 1024 * 1024;
	spec->cpus = sb->lim.cpus;
	/* Processes inside; the engine's count may be the runtime's. */
	spec->pids = engine_runtime_pids(sb->runtime, sb->lim.pids);
	spec->nofile = c->nofile;
	spec->fsize_bytes = c->fsize_mb * 1024 * 1024;
	spec_tmpfs(spec, "/tmp", c->tmp_mb, 0, -1, 01777);
	spec_tmpfs(spec, sb->workdir, c->workdir_mb, 1, sb->uid, 0755);
	/* The engine binds them from its host's paths for ours. */
	if ((agent = agentfile_path()) != NULL &&
	    (s->binds[0] = enginepath_of(agent)) != NULL) {
		spec->binds[0].source = s->binds[0];
		spec->binds[0].target = AGENT_PATH;
		spec->nbinds = 1;
		if (sandbox_channel_dir(sb) == 0 &&
		    (s->binds[1] = enginepath_of(sb->chandir)) != NULL) {
			spec->binds[1].source = s->binds[1];
			spec->binds[1].target = AGENT_CHANNEL_DIR;
			spec->nbinds = 2;
		}
	}
	s->volumes = json_object_new_array();
	json_object_put(sb->volumes);
	sb->volumes = json_object_get(s->volumes);
}

/*
 * Whether sandboxes may use this image (--allow-image; default any); the
 * reference must also be one the engine's API can take in a path.
 */
static int
sandbox_image_allowed(const char *image, char *why, size_t len)
{
	const struct config_list *l = &sup.conf->allow_images;
	const char *p, *slash;
	char *tagged;
	int ok;

	for (p = image; *p != '\0'; p++)
		if (!isalnum((unsigned char)*p) && strchr("._-:/@", *p) == NULL)
			break;
	if (*image == '\0' || *p != '\0' || strlen(image) > 255 ||
	    *image == '/' || *image == '-' || strstr(image, "..") != NULL) {
		snprintf(why, len,
		    "image \"%.100s\" is not an image reference such as "
		    "python:3.12-slim-bookworm",
		    image);
		return 0;
	}
	if (l->n == 0 || config_list_match(l, image))
		return 1;
	/* "python" is "python:latest" to the engine, so to the patterns. */
	slash = strrchr(image, '/');
	ok = 0;
	if (strchr(image, '@') == NULL &&
	    strchr(slash != NULL ? slash : image, ':') == NULL) {
		xasprintf(&tagged, "%s:latest", image);
		ok = config_list_match(l, tagged);
		free(tagged);
	}
	if (!ok)
		snprintf(why, len,
		    "image \"%.100s\" is not allowed on this server: the "
		    "operator allows only images matching --allow-image "
		    "(%d pattern%s, e.g. \"%.60s\")",
		    image, l->n, l->n == 1 ? "" : "s", l->v[0]);
	return ok;
}

/*
 * A uid of its own for a new sandbox, from --uid-range, so that per-user
 * kernel limits (inotify instances, ...) are not shared between
 * sandboxes.  Handed out round the range from a random start (another
 * instance on the same host starts elsewhere), never one a sandbox of
 * this server still has; -1 with *why if every one is taken.
 */
static long
sandbox_uid_alloc(char *why, size_t len)
{
	static long next;
	const struct config *c = sup.conf;
	long span = c->uid_last - c->uid_first + 1, i, uid;
	unsigned int r = 0;
	struct sandbox *sb;

	if (next < c->uid_first || next > c->uid_last) {
		if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
			r = (unsigned int)getpid();
		next = c->uid_first + (long)(r % (unsigned long)span);
	}
	for (i = 0; i < span; i++) {
		uid = next;
		next = next == c->uid_last ? c->uid_first : next + 1;
		TAILQ_FOREACH(sb, &sandboxes, entry)
		{
			if (sb->uid == uid)
				break;
		}
		if (sb == NULL) {
			TAILQ_FOREACH(sb, pool_list(), entry)
			{
				if (sb->uid == uid)
					break;
			}
		}
		if (sb == NULL)
			return uid;
	}
	snprintf(why, len,
	    "no free sandbox user: all %ld uids of --uid-range are in use",
	    span);
	return -1;
}

/*
 * Create a sandbox for a call that has validated its arguments; the call
 * is answered when the sandbox is ready or could not be made.
 */
struct sandbox *
sandbox_create(struct call *c, const char *image, const char *name,
    json_object *env, const char *workdir, const char *network,
    const struct limits *lim, long ttl)
{
	return sandbox_create_cb(
	    c, image, name, env, workdir, network, lim, ttl, NULL, NULL);
}

/*
 * As sandbox_create(), but cb(call, sandbox, NULL, arg) gets the ready
 * sandbox (or cb(call, NULL, why, arg)) instead of the call an answer.
 * Returns the sandbox, starting (valid until the caller returns to the
 * event loop), or NULL when it is refused at once (the call is answered).
 */
/* A new sandbox, starting, in no list yet (the caller's reference). */
static struct sandbox *
sandbox_alloc(const char *image, const char *name, const char *workdir,
    const struct limits *lim, long uid)
{
	struct sandbox *sb;

	sb = xcalloc(1, sizeof *sb);
	sb->uid = uid;
	sb->name = xstrdup(name != NULL ? name : "");
	sb->image = xstrdup(image);
	sb->workdir = xstrdup(workdir);
	sb->engine = sup.engine;
	sb->lim = *lim;
	sb->created = time(NULL);
	sb->state = SB_STARTING;
	sb->refs = 1; /* the registry's (or the pool's) */
	return sb;
}

static struct screate *
screate_new(struct sandbox *sb, struct call *c,
    void (*cb)(struct call *, struct sandbox *, const char *, void *),
    void *cbarg, long long t0_ns)
{
	struct screate *s;

	s = xcalloc(1, sizeof *s);
	s->call = c;
	s->sb = sandbox_ref(sb);
	s->cb = cb;
	s->cbarg = cbarg;
	s->t0_ns = t0_ns;
	sb->create = s;
	return s;
}

/* The container of a client's sandbox, made from its image. */
static void
screate_begin(
    struct screate *s, json_object *env, const char *network, const char *name)
{
	sandbox_spec(s, env, network);
	if (name != NULL) {
		xasprintf(&s->cname, "mcp-sandboxd-%.8s-%u-%s", sup.instance,
		    s->call->sess->id, name);
		s->spec.name = s->cname;
	}
	TAILQ_INSERT_TAIL(&preparing, s, pentry);
	s->preparing = 1;
	screate_inspect(s);
}

/*
 * A container for the warm pool (pool.c): made as a client's sandbox of
 * the image with the default limits, workdir and network, labelled as
 * the pool's; cb(NULL, sb, NULL, arg) once it is ready, cb(NULL, NULL,
 * why, arg) if it fails (and it is gone).  Its keep-alive lasts the
 * longest lifetime a client may ask for after the longest wait in the
 * pool.  NULL when no uid is free.
 */
struct sandbox *
sandbox_create_pool(const char *image,
    void (*cb)(struct call *, struct sandbox *, const char *, void *),
    void *cbarg)
{
	const struct config *c = sup.conf;
	struct limits lim = {c->memory_mb, c->cpus, c->pids};
	struct sandbox *sb;
	struct screate *s;
	struct engine *eng;
	char why[512];
	long uid;

	if ((eng = engines_place(NULL, lim.memory_mb, why, sizeof why)) ==
	        NULL ||
	    (uid = sandbox_uid_alloc(why, sizeof why)) == -1)
		return NULL;
	sb = sandbox_alloc(image, NULL, POOL_WORKDIR, &lim, uid);
	sb->engine = eng;
	sb->pool = 1;
	/* The server's runtime: only a create of that one takes it. */
	sb->runtime = c->runtime != NULL ? xstrdup(c->runtime) : NULL;
	TAILQ_INSERT_TAIL(pool_list(), sb, entry);
	s = screate_new(sb, NULL, cb, cbarg, clock_ns());
	s->pool = 1;
	sb->expires = sb->created + c->max_ttl + POOL_MAX_AGE;
	sandbox_spec(s, NULL, "none");
	json_object_object_add(
	    s->labels, POOL_LABEL, json_object_new_string("1"));
	sb->expires = sb->created + POOL_MAX_AGE;
	TAILQ_INSERT_TAIL(&preparing, s, pentry);
	s->preparing = 1;
	screate_inspect(s);
	return sb;
}

/* One of the steps of handing a pool container out answered. */
static void
screate_took_cb(const struct engine_resp *resp, void *arg)
{
	struct screate *s = arg;

	if (resp->error != NULL)
		screate_error(s, resp->error);
	else if (resp->container != NULL &&
	         (!resp->container->running || resp->container->paused))
		screate_error(s, "the pool container is not running");
	screate_ready(s);
}

/*
 * A pool container becomes the call's sandbox: its limits changed in
 * place, renamed to the name asked for, and checked to be running; the
 * call is answered as for a new one (screate_ready()).  If any of that
 * fails, or it dies meanwhile, screate_retry() makes one the usual way.
 */
static void
sandbox_take(struct sandbox *sb, struct call *c, const char *name,
    const struct limits *lim, long ttl,
    void (*cb)(struct call *, struct sandbox *, const char *, void *),
    void *cbarg)
{
	const struct config *conf = sup.conf;
	struct engine_limits upd = {0, 0, 0};
	struct screate *s;

	sb->from_pool = 1;
	sb->owner = c->sess;
	sb->lim = *lim;
	sb->expires = time(NULL) + ttl;
	free(sb->name);
	sb->name = name != NULL ? xstrdup(name) : xstrndup(sb->id, 12);
	sb->state = SB_STARTING;
	if (sb->expiry != NULL)
		evtimer_del(
		    sb->expiry); /* the pool's; its own comes when ready */
	TAILQ_INSERT_TAIL(&sandboxes, sb, entry);
	s = screate_new(sb, c, cb, cbarg, clock_ns());
	s->taking = 1;
	sb->create = s;
	log_info("sandbox %.12s taken from the pool by session %u", sb->id,
	    c->sess->id);
	s->pending = 1;
	engine_container_inspect(sb->engine, sb->id, screate_took_cb, s);
	if (lim->memory_mb != conf->memory_mb)
		upd.memory_bytes = lim->memory_mb * 1024 * 1024;
	if (lim->cpus != conf->cpus)
		upd.cpus = lim->cpus;
	if (lim->pids != conf->pids)
		upd.pids = engine_runtime_pids(sb->runtime, lim->pids);
	if (upd.memory_bytes > 0 || upd.cpus > 0 || upd.pids > 0) {
		s->pending++;
		engine_container_update(
		    sb->engine, sb->id, &upd, screate_took_cb, s);
	}
	if (name != NULL) {
		xasprintf(&s->cname, "mcp-sandboxd-%.8s-%u-%s", sup.instance,
		    c->sess->id, name);
		s->pending++;
		engine_container_rename(
		    sb->engine, sb->id, s->cname, screate_took_cb, s);
	}
}

/*
 * Handing a pool container out failed (it died, its worker did, the
 * engine refused a step): it goes, and the call gets a container made
 * the usual way, in the same sandbox.
 */
static void
screate_retry(struct screate *s)
{
	struct sandbox *sb = s->sb;
	struct screate *n;
	struct sdestroy *d;
	struct engine_resp none;
	const char *name = NULL;

	log_warnx("pool container %.12s failed as it was handed out (%s); "
	          "creating a sandbox instead",
	    sb->id, s->error);
	stats.pool_failed++;
	if (sb->worker != NULL)
		wproc_shutdown(sb->worker);
	d = xcalloc(1, sizeof *d);
	destroys_in_flight++;
	d->engine = sb->engine;
	d->id = sb->id;
	sb->id = NULL;
	if (sb->expiry != NULL) {
		event_free(sb->expiry);
		sb->expiry = NULL;
	}
	sb->from_pool = 0;
	sb->created = time(NULL);
	if (s->cname != NULL)
		name = sb->name;
	else {
		free(sb->name);
		sb->name = xstrdup("");
	}
	n = screate_new(sb, s->call, s->cb, s->cbarg, s->t0_ns);
	n->retry_name = name != NULL ? xstrdup(name) : NULL;
	n->waiters = s->waiters;
	n->nwaiters = s->nwaiters;
	s->waiters = NULL;
	s->nwaiters = 0;
	sb->create = n;
	/* Removed at once, before the new one may want its name. */
	d->done = screate_retry_go;
	d->arg = n;
	engine_resp_init(&none);
	sandbox_stopped_cb(&none, d);
	screate_free(s);
}

/* The failed pool container is gone: the call's own creation starts. */
static void
screate_retry_go(void *arg, const char *err)
{
	struct screate *n = arg;

	(void)err;
	screate_begin(n, n->sb->env, "none", n->retry_name);
}

/*
 * As sandbox_create(), but cb(call, sandbox, NULL, arg) gets the ready
 * sandbox (or cb(call, NULL, why, arg)) instead of the call an answer.
 * Returns the sandbox, starting (valid until the caller returns to the
 * event loop), or NULL when it is refused at once (the call is answered).
 * A container of the warm pool is taken when one fits (pool_take()).
 */
struct sandbox *
sandbox_create_cb(struct call *c, const char *image, const char *name,
    json_object *env, const char *workdir, const char *network,
    const struct limits *lim, long ttl,
    void (*cb)(struct call *, struct sandbox *, const char *, void *),
    void *cbarg)
{
	return sandbox_create_at(
	    c, image, name, env, workdir, network, NULL, lim, ttl, cb, cbarg);
}

/* The OCI runtime a sandbox reports: its own, or "default" (the
 * engine's default runtime, none named at its creation). */
const char *
sandbox_runtime_name(const struct sandbox *sb)
{
	return sb->runtime != NULL ? sb->runtime : "default";
}

/*
 * As sandbox_create_cb(), where the caller says (NULL: anywhere): on the
 * engine of that URL (else the one engines_place() picks; a named one
 * never takes a pool container), under that OCI runtime (checked by the
 * caller against the operator's ceiling; else the server's --runtime;
 * only a pool container of that runtime is taken).
 */
struct sandbox *
sandbox_create_at(struct call *c, const char *image, const char *name,
    json_object *env, const char *workdir, const char *network,
    const struct sandbox_where *where, const struct limits *lim, long ttl,
    void (*cb)(struct call *, struct sandbox *, const char *, void *),
    void *cbarg)
{
	const struct config *conf = sup.conf;
	struct screate *s;
	struct sandbox *sb;
	struct engine *eng;
	char why[512];
	const char *engine = where != NULL ? where->engine : NULL;
	const char *runtime = where != NULL ? where->runtime : NULL;
	long uid, mine = 0;

	if (runtime == NULL)
		runtime = conf->runtime;
	/* A session's share: one client cannot take every sandbox. */
	TAILQ_FOREACH(sb, &sandboxes, entry)
	if (sb->owner == c->sess && sb->state != SB_STOPPING && !sb->lost)
		mine++;
	if (mine >= conf->max_sandboxes_per_session)
		snprintf(why, sizeof why,
		    "too many sandboxes in this session (%ld, the limit of "
		    "--max-sandboxes-per-session): stop one with sandbox_stop "
		    "first",
		    conf->max_sandboxes_per_session);

	if (mine >= conf->max_sandboxes_per_session ||
	    !sandbox_image_allowed(image, why, sizeof why)) {
		stats.sandboxes_failed++;
		if (cb != NULL)
			cb(c, NULL, why, cbarg);
		else
			mcp_call_reply(c, tool_error("%s", why));
		return NULL;
	}
	/* Limits other than the pool's defaults need an engine that changes
	 * them in place (gVisor's runsc cannot: it has no update); the
	 * keep-alive must outlast the lifetime. */
	if (engine == NULL &&
	    ((engine_supports(sup.engine, ENGINE_UPDATE) &&
	         !engine_runtime_gvisor(runtime)) ||
	        (lim->memory_mb == conf->memory_mb && lim->cpus == conf->cpus &&
	            lim->pids == conf->pids)) &&
	    (sb = pool_take(image, workdir, network, runtime, ttl)) != NULL) {
		sb->env = env != NULL ? json_object_get(env) : NULL;
		sandbox_take(sb, c, name, lim, ttl, cb, cbarg);
		return sb;
	}
	if ((eng = engines_place(engine, lim->memory_mb, why, sizeof why)) ==
	        NULL ||
	    (uid = sandbox_uid_alloc(why, sizeof why)) == -1) {
		stats.sandboxes_failed++;
		if (cb != NULL)
			cb(c, NULL, why, cbarg);
		else
			mcp_call_reply(c, tool_error("%s", why));
		return NULL;
	}
	sb = sandbox_alloc(image, name, workdir, lim, uid);
	sb->runtime = runtime != NULL ? xstrdup(runtime) : NULL;
	sb->engine = eng;
	sb->expires = sb->created + ttl;
	sb->owner = c->sess;
	sb->env = env != NULL ? json_object_get(env) : NULL;
	TAILQ_INSERT_TAIL(&sandboxes, sb, entry);
	/* The pool gives up a container if the server's total needs it. */
	pool_make_room();

	s = screate_new(sb, c, cb, cbarg, clock_ns());
	screate_begin(s, env, network, name);
	return sb;
}

/* Whether p points into a mention of sock (of length n) in s. */
static int
within(const char *s, const char *p, const char *sock, size_t n)
{
	const char *q;

	for (q = s; n > 0 && (q = strstr(q, sock)) != NULL && q <= p; q++)
		if (p < q + n)
			return 1;
	return 0;
}

/*
 * Docker's messages can name host paths (volumes, the daemon's root);
 * keep the first line and cut anything that looks like an absolute path
 * of the host.  The engine's socket (DOCKER_HOST), which the operator
 * named and a connection error must name, is not one of them.
 */
char *
sandbox_error_text(const char *msg)
{
	static const char *const roots[] = {"/var/lib/", "/run/", "/home/"};
	const char *m = msg != NULL ? msg : "unknown Docker error";
	const char *sock = "", *p, *url;
	size_t len, full, i, n;
	char *s;
	int e, mine;

	if (sup.conf != NULL && sup.conf->docker_host != NULL &&
	    strncmp(sup.conf->docker_host, "unix://", 7) == 0)
		sock = sup.conf->docker_host + 7;
	full = len = strcspn(m, "\n");
	for (i = 0; i < sizeof roots / sizeof roots[0]; i++) {
		n = strlen(roots[i]);
		for (p = m; (p = memmem(p, (size_t)(m + full - p), roots[i],
		                 n)) != NULL;
		     p++) {
			/* Any engine's socket may be named, as the
			 * operator named it (--engine); nothing else. */
			mine = within(m, p, sock, strlen(sock));
			for (e = 0; !mine && e < engines_n(); e++) {
				url = engines_url(engines_nth(e));
				mine = strncmp(url, "unix://", 7) == 0 &&
				       within(m, p, url + 7, strlen(url + 7));
			}
			if (!mine) {
				if ((size_t)(p - m) < len)
					len = (size_t)(p - m);
				break;
			}
		}
	}
	/* An engine's TLS directory is a host path too. */
	for (e = 0; e < engines_n(); e++) {
		url = engines_tls(engines_nth(e));
		if (url != NULL && *url != '\0' &&
		    (p = memmem(m, full, url, strlen(url))) != NULL &&
		    (size_t)(p - m) < len)
			len = (size_t)(p - m);
	}
	/* A new string: the cut may be shorter than what replaces it. */
	if (len < full)
		xasprintf(&s, "%.*s<host path>", (int)len, m);
	else
		s = xstrndup(m, len);
	return s;
}
