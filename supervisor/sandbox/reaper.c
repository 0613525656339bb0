/*
 * Ownership labels and the reaper: every container names the instance,
 * pid, boot and process start time of the supervisor that made it, so a
 * later instance can tell a dead owner from a live one and remove what a
 * dead one left behind.  Containers without our labels are never touched.
 */
#include <sys/queue.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "engine.h"
#include "log.h"
#include "mcp.h"
#include "procinfo.h"
#include "sandbox.h"
#include "spool.h"
#include "xmalloc.h"

/*
 * A sandbox whose owner cannot be judged (another host, boot or pid
 * namespace) is never reaped as an orphan; only once this long past the
 * expiry its labels give, which is after its live owner would have
 * removed it and after its keep-alive ended it.
 */
#define REAPER_FOREIGN_GRACE 3600
/* Our own containers missing from the registry go after this. */
#define REAPER_OWN_GRACE 60

/*
 * Removals under way, each the argument of its engine call: kept here so
 * that those still in flight at exit (engine_free() cancels them without
 * their callbacks) are freed by reaper_free().
 */
struct reaping {
	TAILQ_ENTRY(reaping) entry;
	struct engine *eng;
	char id[]; /* the container's */
};
static TAILQ_HEAD(, reaping) reapings = TAILQ_HEAD_INITIALIZER(reapings);

void
reaper_labels(json_object *labels, time_t expires)
{
	char buf[32];

	json_object_object_add(
	    labels, INSTANCE_LABEL, json_object_new_string(sup.instance));
	snprintf(buf, sizeof buf, "%d", (int)getpid());
	json_object_object_add(labels, PID_LABEL, json_object_new_string(buf));
	json_object_object_add(
	    labels, BOOT_LABEL, json_object_new_string(sup.boot_id));
	snprintf(buf, sizeof buf, "%llu", sup.start_ticks);
	json_object_object_add(
	    labels, START_LABEL, json_object_new_string(buf));
	snprintf(buf, sizeof buf, "%lld", (long long)expires);
	json_object_object_add(
	    labels, EXPIRES_LABEL, json_object_new_string(buf));
}

static const char *
label(json_object *labels, const char *key)
{
	json_object *v;

	if (labels != NULL && json_object_object_get_ex(labels, key, &v))
		return json_object_get_string(v);
	return "";
}

/*
 * Is the owner (where its pid means it, pid, process start time) a live
 * supervisor?  1 yes, 0 no, -1 cannot tell: another machine, boot or pid
 * namespace (a server in a container, or one on the host seen from a
 * container), or a server that could not read where it is ("unknown").
 * What cannot be told is never judged dead.
 */
int
reaper_owner_alive(const char *boot, const char *pid, const char *start)
{
	unsigned long long ticks;
	long p;
	char *end;

	if (strcmp(boot, sup.boot_id) != 0 || strcmp(boot, "unknown") == 0)
		return -1;
	p = strtol(pid, &end, 10);
	if (*pid == '\0' || *end != '\0' || p <= 0)
		return 0;
	if (kill((pid_t)p, 0) == -1 && errno == ESRCH)
		return 0;
	/* Gone since kill() looked, or unreadable now (out of descriptors,
	 * say): only a process that is gone is dead; in doubt, nothing of
	 * its is reaped. */
	if (proc_start_ticks((pid_t)p, &ticks) == -1)
		return errno == ENOENT || errno == ESRCH ? 0 : 1;
	return strtoull(start, NULL, 10) == ticks;
}

/* Is the owner of these labels a live supervisor on this machine? */
static int
labels_owner_alive(json_object *labels)
{
	return reaper_owner_alive(label(labels, BOOT_LABEL),
	    label(labels, PID_LABEL), label(labels, START_LABEL));
}

static void
reaper_removed_cb(const struct engine_resp *resp, void *arg)
{
	struct reaping *r = arg;

	if (resp->error != NULL && !resp->notfound)
		log_warnx("reaper: remove %.12s: %s", r->id, resp->error);
	else {
		log_info("reaper: removed orphan sandbox %.12s from %s", r->id,
		    engines_url(r->eng));
		engines_count_reaped(r->eng);
	}
	TAILQ_REMOVE(&reapings, r, entry);
	free(r);
}

/* At exit, after engine_free(): the removals that never answered. */
void
reaper_free(void)
{
	struct reaping *r;

	while ((r = TAILQ_FIRST(&reapings)) != NULL) {
		TAILQ_REMOVE(&reapings, r, entry);
		free(r);
	}
}

static void
reaper_list_cb(const struct engine_resp *resp, void *arg)
{
	struct engine *eng = arg;
	const struct engine_container *c;
	struct reaping *r;
	struct sandbox *sb;
	const char *inst;
	long long expires;
	size_t i;
	int alive;

	if (resp->error != NULL) {
		log_warnx("reaper: cannot list containers: %s", resp->error);
		return;
	}
	for (i = 0; i < resp->nlist; i++) {
		c = &resp->list[i];
		if (c->labels == NULL)
			continue;
		inst = label(c->labels, INSTANCE_LABEL);
		if (*inst == '\0')
			continue;
		if (strcmp(inst, sup.instance) == 0) {
			/*
			 * Ours but not in the registry: its removal failed
			 * (the engine was away).  A young one may be a
			 * creation whose answer is still on its way.
			 */
			/* A sandbox lost with its engine is reaped once it
			 * answers again, as is one whose container was made
			 * before the engine went away (no answer is on its
			 * way any more). */
			sb = sandbox_find(NULL, c->id);
			if (sb != NULL && sb->lost)
				;
			else if (sb != NULL || pool_find(c->id) != NULL ||
			         c->created <= 0 ||
			         (c->created + REAPER_OWN_GRACE >
			                 (long long)time(NULL) &&
			             c->created >=
			                 (long long)engines_down_since(eng)))
				continue;
		} else {
			alive = labels_owner_alive(c->labels);
			expires =
			    strtoll(label(c->labels, EXPIRES_LABEL), NULL, 10);
			if (alive == 1 ||
			    (alive == -1 && (expires <= 0 ||
			                        expires + REAPER_FOREIGN_GRACE >
			                            (long long)time(NULL))))
				continue;
		}
		r = xmalloc(sizeof *r + strlen(c->id) + 1);
		strcpy(r->id, c->id);
		r->eng = eng;
		TAILQ_INSERT_TAIL(&reapings, r, entry);
		engine_container_remove(eng, r->id, reaper_removed_cb, r);
	}
}

/* Find containers of dead instances by label and remove them, on each
 * engine that is not known to be down. */
void
reaper_run(void)
{
	int i;

	for (i = 0; i < engines_n(); i++)
		if (!engines_is_down(engines_nth(i)))
			reaper_run_engine(engines_nth(i));
	if (engines_n() == 0) /* (unit tests: no engines opened) */
		reaper_run_engine(sup.engine);
	spool_reap();
}

/* The same on one engine (one that answers again: engines.c). */
void
reaper_run_engine(struct engine *eng)
{
	engine_container_list(eng, INSTANCE_LABEL, reaper_list_cb, eng);
}

struct sweep {
	int pending;
	void (*done)(void);
};

struct sweep_list {
	struct sweep *sw;
	struct engine *eng;
};

static void
sweep_one_cb(const struct engine_resp *resp, void *arg)
{
	struct sweep *sw = arg;

	if (resp->error != NULL && !resp->notfound)
		log_warnx("shutdown: remove: %s", resp->error);
	if (--sw->pending == 0) {
		sw->done();
		free(sw);
	}
}

static void
sweep_list_cb(const struct engine_resp *resp, void *arg)
{
	struct sweep_list *sl = arg;
	struct sweep *sw = sl->sw;
	struct engine *eng = sl->eng;
	struct engine_resp none;
	size_t i;

	free(sl);
	for (i = 0; resp->error == NULL && i < resp->nlist; i++) {
		log_info("shutdown: removing %.12s, left from a failed "
		         "removal",
		    resp->list[i].id);
		sw->pending++;
		engine_container_remove(
		    eng, resp->list[i].id, sweep_one_cb, sw);
	}
	engine_resp_init(&none);
	sweep_one_cb(&none, sw);
}

/*
 * At exit, after the registry's sandboxes: every container still labelled
 * with this instance (one whose removal failed while the engine was away)
 * goes too; done() then.
 */
void
reaper_sweep_own(void (*done)(void))
{
	struct sweep *sw;
	struct sweep_list *sl;
	struct engine *eng;
	struct engine_resp none;
	char *filter;
	int i, n = engines_n() > 0 ? engines_n() : 1;

	sw = xcalloc(1, sizeof *sw);
	sw->pending = 1;
	sw->done = done;
	xasprintf(&filter, INSTANCE_LABEL "=%s", sup.instance);
	/* Every engine that answers (one that is down cannot be asked). */
	for (i = 0; i < n; i++) {
		eng = engines_n() > 0 ? engines_nth(i) : sup.engine;
		if (engines_is_down(eng))
			continue;
		sl = xcalloc(1, sizeof *sl);
		sl->sw = sw;
		sl->eng = eng;
		sw->pending++;
		engine_container_list(eng, filter, sweep_list_cb, sl);
	}
	free(filter);
	engine_resp_init(&none);
	sweep_one_cb(&none, sw);
}
