/*
 * Per-run accounting: the CPU time and the peak memory of the sandbox
 * while a run (an exec, a code call) lasts.  They come from the
 * container's cgroup, the counters behind the engine's stats endpoint;
 * the endpoint itself samples them once a second, too coarse for a run,
 * so the worker reads them where it can see the cgroup (the engine on
 * this host).  Elsewhere a result simply has no such fields.
 *
 * Peak memory is a high-water mark.  Cgroup v1 keeps one per group: the
 * worker resets it whenever a run starts or ends, after folding the mark
 * reached so far into every run in progress, so that each run gets the
 * highest mark of the intervals it spans, however runs overlap.  Cgroup
 * v2 (Linux 6.12 and later) gives each open memory.peak a mark of its
 * own.  Where a mark cannot be reset, a run reports the peak only when
 * the mark rose while it ran (then it is exact), else leaves it out.
 *
 * The cgroup is looked up when the first run needs it, not when the worker
 * starts: the worker starts while its container does, and a container not
 * yet running has no process to find the group from.  Until the engine
 * shows a running container the lookup is retried, with a growing delay
 * and a bounded number of tries; a group this host cannot see (an engine
 * elsewhere) is given up at once, for the worker's life.
 */
#include <sys/queue.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <event2/event.h>

#include "cgroup.h"
#include "engine.h"
#include "log.h"
#include "proto.h"
#include "worker.h"
#include "xmalloc.h"

/*
 * Where /proc is: "" here; a unit test builds this file with
 * -DACCT_PROC_ROOT=<the root of a fake tree>.
 */
#ifdef ACCT_PROC_ROOT
extern char ACCT_PROC_ROOT[];
#else
#define ACCT_PROC_ROOT ""
#endif

/*
 * Inspections of the container before accounting is given up: about ten
 * seconds of a container that does not run (a unit test shortens them).
 */
#define ACCT_MAX_TRIES 10
#ifndef ACCT_RETRY_MS
#define ACCT_RETRY_MS 50 /* the first delay, doubled up to the next */
#define ACCT_RETRY_MAX_MS 2000
#endif

enum acct_state {
	ACCT_UNKNOWN, /* not looked up yet: the first run will */
	ACCT_LOOKING, /* an inspection in flight or a retry pending */
	ACCT_READY,
	ACCT_NONE /* impossible here, for good */
};

struct acct {
	int listed; /* among the runs in progress */
	int measuring; /* the counters were read when it started */
	int folded; /* v1: its peak is the marks folded into it */
	int fd; /* v2: a memory.peak of its own, or -1 */
	unsigned long long cpu0, mark0, peak;
	LIST_ENTRY(acct) entry;
};

static struct {
	struct worker *w;
	struct engine_req *req;
	struct event *retry;
	int tries; /* inspections so far */
	enum acct_state state;
	int resets; /* v1: the mark can be reset */
	struct cgroup cg;
	LIST_HEAD(, acct) runs;
} ac = {.state = ACCT_NONE};

/* v1: every run in progress takes the mark so far; the mark starts over. */
static void
acct_fold(void)
{
	struct acct *a;
	unsigned long long m;

	if (!ac.resets)
		return;
	if (cgroup_mem_peak(&ac.cg, &m) == -1 ||
	    cgroup_mem_peak_reset(&ac.cg) == -1) {
		/* From now on only a rise of the mark says something. */
		log_debug("%s: cannot reset the memory mark", __func__);
		ac.resets = 0;
		LIST_FOREACH(a, &ac.runs, entry)
		{
			a->folded = 0;
			a->mark0 = ULLONG_MAX;
			cgroup_mem_peak(&ac.cg, &a->mark0);
		}
		return;
	}
	LIST_FOREACH(a, &ac.runs, entry)
	if (a->folded && m > a->peak)
		a->peak = m;
}

/* Reads a run's starting counters. */
static void
acct_measure(struct acct *a)
{
	if (cgroup_cpu_ns(&ac.cg, &a->cpu0) == -1)
		return;
	a->measuring = 1;
	a->mark0 = ULLONG_MAX;
	if (ac.cg.version == 2 && (a->fd = cgroup_mem_peak_open(&ac.cg)) != -1)
		return;
	if (ac.resets) {
		acct_fold(); /* before it counts as running */
		a->folded = ac.resets;
		a->peak = 0;
	}
	if (!a->folded)
		cgroup_mem_peak(&ac.cg, &a->mark0);
}

static void acct_lookup(void);

/* The container does not run yet: look again soon, a bounded number of
 * times. */
static void
acct_later(const char *why)
{
	struct timeval tv;
	long ms = ACCT_RETRY_MS;
	int i;

	if (ac.tries >= ACCT_MAX_TRIES) {
		ac.state = ACCT_NONE;
		log_info("%s: no accounting for this sandbox: %s after %d "
		         "looks",
		    __func__, why, ac.tries);
		return;
	}
	for (i = 1; i < ac.tries && ms < ACCT_RETRY_MAX_MS; i++)
		ms *= 2;
	if (ms > ACCT_RETRY_MAX_MS)
		ms = ACCT_RETRY_MAX_MS;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	log_debug("%s: %s; looking again in %ld ms", __func__, why, ms);
	evtimer_add(ac.retry, &tv);
}

static void
acct_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	acct_lookup();
}

static void
acct_inspected_cb(const struct engine_resp *resp, void *arg)
{
	const struct engine_container *c = resp->container;
	struct acct *a;
	char path[PATH_MAX + 64], mounts[PATH_MAX + 64];

	(void)arg;
	ac.req = NULL;
	if (c == NULL || c->pid <= 0) {
		/* Not running yet (or the engine did not answer). */
		acct_later(resp->error != NULL
		               ? resp->error
		               : "the container has no process");
		return;
	}
	snprintf(
	    path, sizeof path, "%s/proc/%lld/cgroup", ACCT_PROC_ROOT, c->pid);
	snprintf(
	    mounts, sizeof mounts, "%s/proc/self/mountinfo", ACCT_PROC_ROOT);
	if (cgroup_find(
	        &ac.cg, path, mounts, ACCT_PROC_ROOT, ac.w->container) == -1) {
		ac.state = ACCT_NONE;
		log_debug("%s: the container's cgroup is not visible here "
		          "(an engine on another host?)",
		    __func__);
		return;
	}
	ac.state = ACCT_READY;
	ac.resets = ac.cg.version == 1 && cgroup_mem_peak_reset(&ac.cg) == 0;
	log_debug("%s: cgroup v%d at %s%s", __func__, ac.cg.version, ac.cg.mem,
	    ac.resets ? ", resettable" : "");
	oom_watch(ac.w, &ac.cg);
	LIST_FOREACH(a, &ac.runs, entry)
	if (!a->measuring)
		acct_measure(a);
}

/* Asks the engine for the container's process. */
static void
acct_lookup(void)
{
	ac.state = ACCT_LOOKING;
	ac.tries++;
	ac.req = engine_container_inspect(
	    ac.w->engine, ac.w->container, acct_inspected_cb, NULL);
}

/* Accounting for a worker's container; the cgroup is found on first use. */
void
acct_start(struct worker *w)
{
	ac.w = w;
	ac.tries = 0;
	LIST_INIT(&ac.runs);
	/* A remote engine's cgroups are on its own host. */
	if (!engine_supports(w->engine, ENGINE_CGROUPS)) {
		ac.state = ACCT_NONE;
		log_debug("%s: no accounting: the engine is not on this host",
		    __func__);
		return;
	}
	ac.state = ACCT_UNKNOWN;
	if ((ac.retry = evtimer_new(w->base, acct_retry_cb, NULL)) == NULL)
		fatalx("%s: evtimer_new", __func__);
}

/* The worker is going away; runs stay their owners' to end. */
void
acct_stop(void)
{
	engine_req_cancel(ac.req);
	ac.req = NULL;
	if (ac.retry != NULL)
		event_free(ac.retry);
	ac.retry = NULL;
	ac.state = ACCT_NONE;
	oom_unwatch();
}

/*
 * The container runs (its agent said so): look the cgroup up now, not
 * at the first run, which the agent would run before the lookup ends.
 */
void
acct_prepare(void)
{
	if (ac.state == ACCT_UNKNOWN)
		acct_lookup();
}

/* Whether runs started now are measured (or never will be here). */
int
acct_settled(void)
{
	return ac.state == ACCT_READY || ac.state == ACCT_NONE;
}

/* A run starts now. */
struct acct *
acct_begin(void)
{
	struct acct *a;

	a = xcalloc(1, sizeof *a);
	a->fd = -1;
	if (ac.state != ACCT_NONE) {
		if (ac.state == ACCT_READY)
			acct_measure(a);
		LIST_INSERT_HEAD(&ac.runs, a, entry);
		a->listed = 1;
		/* Measured once the lookup this starts is done. */
		if (ac.state == ACCT_UNKNOWN)
			acct_lookup();
	}
	return a;
}

/*
 * The run has started: its memory peak is counted from now, as it was
 * before its CPU was counted from acct_begin() (so that what a command
 * uses before its STARTED arrives is its own).  A runtime that keeps
 * what an earlier run freed (gVisor's sentry does, for a while) would
 * otherwise give this run that run's peak.
 */
void
acct_started(struct acct *a)
{
	if (a == NULL || !a->measuring || a->fd == -1)
		return;
	close(a->fd);
	a->fd = cgroup_mem_peak_open(&ac.cg);
}

/* A run ended: what it used goes into r (if any); a is freed. */
void
acct_end(struct acct *a, struct proto_result *r)
{
	unsigned long long cpu, us, m;
	int have = 0;

	if (a == NULL)
		return;
	if (a->measuring && r != NULL) {
		if (cgroup_cpu_ns(&ac.cg, &cpu) == 0 && cpu >= a->cpu0) {
			cpu -= a->cpu0;
			/* In milliseconds, to the microsecond. */
			us = cpu / 1000;
			r->cpu_time_ms = (double)us / 1000.0;
			r->has |= PROTO_R_CPU;
		}
		if (a->fd != -1)
			have = cgroup_mem_peak_read(a->fd, &m) == 0;
		else if (a->folded) {
			acct_fold();
			m = a->peak;
			have = a->folded && m > 0;
		} else
			have = cgroup_mem_peak(&ac.cg, &m) == 0 && m > a->mark0;
		if (have) {
			r->memory_peak_bytes = (long long)m;
			r->has |= PROTO_R_MEMORY;
		}
	}
	if (a->listed)
		LIST_REMOVE(a, entry);
	if (a->fd != -1)
		close(a->fd);
	free(a);
}
