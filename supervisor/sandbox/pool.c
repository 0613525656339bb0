/*
 * The warm pool (--warm-pool): containers created and started ahead, each
 * with its worker, exactly as sandbox_initialize makes them with the
 * default limits, workdir and network (sandbox_create_pool()), so that a
 * create that fits takes one (sandbox_create_cb(), pool_take()) instead of
 * waiting for the engine.
 *
 * A pool container is a struct sandbox with pool set, no owner, on this
 * file's list instead of the registry: no session sees it, and none of
 * its calls can name it.  It leaves the list when taken (at once, in the
 * taking call, so that it is never handed out twice) or when it goes
 * (sandbox_destroy(), whatever the cause); either way the pool is
 * refilled from the event loop.  Refills wait behind every client's
 * creation for a start slot (sandbox.c, screate_pool_slot()).  A
 * container that dies in the pool, or whose worker does, is dropped and
 * replaced (pool_lost()); one older than POOL_MAX_AGE is replaced too,
 * so that its keep-alive always outlasts the longest lifetime a client
 * may ask for.
 *
 * Against --max-sandboxes the pool counts with the registry: it fills
 * only into the room the clients' sandboxes leave, and gives a container
 * up whenever a client's new sandbox needs the room (pool_make_room()),
 * so a create never fails because of the pool.  Against a session's
 * quota it does not count (it has no session).
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "config.h"
#include "core.h"
#include "log.h"
#include "sandbox.h"
#include "xmalloc.h"

#define POOL_RETRY_MAX_S 60

struct pool_want {
	char *image;
	long n;
};

static struct sandboxes pool = TAILQ_HEAD_INITIALIZER(pool);
static struct pool_want wants[CONFIG_MAX_LIST];
static int nwants;
static struct event *refill_ev;
static int stopped = 1;
static int failures; /* refills failed in a row: the next one waits */

struct sandboxes *
pool_list(void)
{
	return &pool;
}

/* Containers in the pool, ready or starting. */
int
pool_count(void)
{
	struct sandbox *sb;
	int n = 0;

	TAILQ_FOREACH(sb, &pool, entry)
	n++;
	return n;
}

/*
 * Ready to be handed out: started, its worker there, and its agent taking
 * commands (where sandboxes have one), so that a first command through it
 * waits for nothing.
 */
static int
pool_ready(const struct sandbox *sb, int agent)
{
	return sb->state == SB_READY && !sb->dead && sb->worker != NULL &&
	       sb->id != NULL &&
	       (!agent || sb->agent_ready || agentfile_path() == NULL);
}

static int
pool_count_image(const char *image, int ready_only)
{
	struct sandbox *sb;
	int n = 0;

	TAILQ_FOREACH(sb, &pool, entry)
	{
		if (strcmp(sb->image, image) == 0 &&
		    (!ready_only || pool_ready(sb, 1)))
			n++;
	}
	return n;
}

static void pool_refill_cb(evutil_socket_t, short, void *);

/* Refill from the loop: now, or after a failure's growing delay. */
static void
pool_schedule(void)
{
	struct timeval tv = {0, 0};
	int d;

	if (stopped || sup.shutting_down || refill_ev == NULL ||
	    evtimer_pending(refill_ev, NULL))
		return;
	if (failures > 0) {
		d = failures > 6 ? POOL_RETRY_MAX_S : 1 << (failures - 1);
		tv.tv_sec = d > POOL_RETRY_MAX_S ? POOL_RETRY_MAX_S : d;
	}
	evtimer_add(refill_ev, &tv);
}

/* A pool container is ready, or could not be made. */
static void
pool_made_cb(struct call *c, struct sandbox *sb, const char *err, void *arg)
{
	(void)c;
	(void)arg;
	if (sup.shutting_down)
		return;
	if (sb == NULL) {
		failures++;
		log_warnx("warm pool: a container could not be made: %s", err);
		return;
	}
	failures = 0;
}

static void
pool_refill_cb(evutil_socket_t fd, short what, void *arg)
{
	const struct config *c = sup.conf;
	int i, have;

	(void)fd;
	(void)what;
	(void)arg;
	if (stopped || sup.shutting_down)
		return;
	for (i = 0; i < nwants; i++) {
		have = pool_count_image(wants[i].image, 0);
		while (have < wants[i].n &&
		       sandbox_count() + pool_count() < c->max_sandboxes) {
			if (sandbox_create_pool(
			        wants[i].image, pool_made_cb, NULL) == NULL) {
				/* No uid left: later. */
				failures++;
				return;
			}
			have++;
		}
	}
}

/* Read --warm-pool and fill the pool (after the reaper's first run). */
void
pool_start(void)
{
	const struct config *c = sup.conf;
	const char *image;
	size_t len;
	long n;
	int i, j;

	for (i = 0; i < c->warm_pool.n; i++) {
		if (config_warm_pool(c->warm_pool.v[i], &image, &len, &n) == -1)
			continue; /* (refused at startup already) */
		for (j = 0; j < nwants; j++)
			if (image == NULL
			        ? strcmp(wants[j].image, c->default_image) == 0
			        : strlen(wants[j].image) == len &&
			              strncmp(wants[j].image, image, len) == 0)
				break;
		if (j == nwants) {
			wants[nwants].image = image == NULL
			                          ? xstrdup(c->default_image)
			                          : xstrndup(image, len);
			nwants++;
		}
		wants[j].n = n; /* the last one given wins */
	}
	for (i = 0; i < nwants; i++)
		log_info("warm pool: %ld container(s) of %s", wants[i].n,
		    wants[i].image);
	if (nwants == 0)
		return;
	stopped = 0;
	if (refill_ev == NULL)
		refill_ev = evtimer_new(sup.base, pool_refill_cb, NULL);
	pool_schedule();
}

/* No more refills (shutdown; sandbox_destroy_all() removes the pool). */
void
pool_stop(void)
{
	stopped = 1;
	if (refill_ev != NULL)
		evtimer_del(refill_ev);
}

void
pool_free(void)
{
	int i;

	pool_stop();
	if (refill_ev != NULL)
		event_free(refill_ev);
	refill_ev = NULL;
	for (i = 0; i < nwants; i++)
		free(wants[i].image);
	nwants = 0;
	failures = 0;
}

/* Whether two OCI runtimes are the same (NULL: the engine's default). */
static int
pool_same_runtime(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

/*
 * A ready pool container for a create of this image, workdir, network
 * and OCI runtime that must live ttl seconds, out of the pool (its
 * caller owns the pool's reference now), or NULL if none fits.
 */

struct sandbox *
pool_take(const char *image, const char *workdir, const char *network,
    const char *runtime, long ttl)
{
	struct sandbox *sb;
	time_t now = time(NULL);
	int agent;

	if (stopped || strcmp(workdir, POOL_WORKDIR) != 0 ||
	    strcmp(network, "none") != 0)
		return NULL;
	/* One whose agent is up first, else one that is only started. */
	for (agent = 1; agent >= 0; agent--) {
		TAILQ_FOREACH(sb, &pool, entry)
		{
			if (!pool_ready(sb, agent) ||
			    !engines_usable(sb->engine) ||
			    strcmp(sb->image, image) != 0 ||
			    !pool_same_runtime(sb->runtime, runtime) ||
			    sb->created + sup.conf->max_ttl + POOL_MAX_AGE <=
			        now + ttl)
				continue;
			TAILQ_REMOVE(&pool, sb, entry);
			sb->pool = 0;
			pool_schedule();
			return sb;
		}
	}
	return NULL;
}

/* A sandbox left the pool or the registry: room for a refill. */
void
pool_removed(struct sandbox *sb)
{
	(void)sb;
	pool_schedule();
}

/* A pool container (or its worker) died: it goes, another comes. */
void
pool_lost(struct sandbox *sb, const char *why)
{
	log_warnx("warm pool: container %.12s lost: %s",
	    sb->id != NULL ? sb->id : "(starting)", why);
	stats.pool_failed++;
	sandbox_destroy(sb, NULL, NULL);
}

/* Past --max-sandboxes with the pool: the pool gives containers up. */
void
pool_make_room(void)
{
	struct sandbox *sb;

	while (sandbox_count() + pool_count() > sup.conf->max_sandboxes &&
	       (sb = TAILQ_LAST(&pool, sandboxes)) != NULL) {
		log_info("warm pool: giving a container up for a client's "
		         "sandbox (--max-sandboxes)");
		sandbox_destroy(sb, NULL, NULL);
	}
}

/* A pool container by full id (the reaper's question), or NULL. */
struct sandbox *
pool_find(const char *id)
{
	struct sandbox *sb;

	TAILQ_FOREACH(sb, &pool, entry)
	{
		if (sb->id != NULL && strcmp(sb->id, id) == 0)
			return sb;
	}
	return NULL;
}

/* The pool in the statistics: what it holds and what it did. */
json_object *
pool_stats_json(void)
{
	json_object *o;
	long target = 0;
	int i, ready = 0;

	for (i = 0; i < nwants; i++) {
		target += wants[i].n;
		ready += pool_count_image(wants[i].image, 1);
	}
	o = json_object_new_object();
	json_object_object_add(o, "target", json_object_new_int64(target));
	json_object_object_add(o, "size", json_object_new_int64(ready));
	json_object_object_add(
	    o, "starting", json_object_new_int64(pool_count() - ready));
	json_object_object_add(
	    o, "created", json_object_new_int64(stats.pool_created));
	json_object_object_add(
	    o, "taken", json_object_new_int64(stats.pool_taken));
	json_object_object_add(
	    o, "failed", json_object_new_int64(stats.pool_failed));
	return o;
}
