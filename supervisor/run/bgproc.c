/*
 * Background processes (sandbox_exec background: true): a command that
 * runs on after its call answered, a run (xrun.c) with no call.  Its
 * output goes to a spool of its own that drops its oldest bytes past the
 * sandbox's quota (a ring), and to the activity log as any exec's; the
 * process_* tools read its state and output, send it signals and wait
 * for it.  Each sandbox keeps its processes in sb->bg; they end with the
 * sandbox (its worker goes, which ends their runs).
 *
 * Lifetimes: a process whose sandbox is destroyed leaves the sandbox's
 * list at once (its waiters are answered then); one still running is
 * freed when its run's result comes, which the worker's loss guarantees.
 * A waiter (a process_output or process_wait call that waits) is on its
 * process's list and answered exactly once: on news, at its timeout,
 * when its call is cancelled, or when the sandbox goes.
 */
#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "clock.h"
#include "config.h"
#include "core.h"
#include "mcp.h"
#include "run.h"
#include "sandbox.h"
#include "spool.h"
#include "utf8.h"
#include "xmalloc.h"

/* Ended processes kept per sandbox for process_list; older ones go. */
#define BG_MAX_RECORDS 64
/* resources/updated for a growing output, at most this often. */
#define BG_NOTIFY_MS 200

struct bgwait {
	struct call *call;
	struct bgproc *bp;
	struct bg_ask ask;
	bg_answer_cb answer;
	struct event *timer;
	TAILQ_ENTRY(bgwait) entry;
};

struct bgproc {
	unsigned int id; /* its spool's: process_id and exec_id */
	struct sandbox *sb; /* NULL once the sandbox is gone */
	char *command;
	char sandbox_id[65]; /* the sandbox's full id, for resource URIs */
	time_t started;
	long long start_ms, end_ms; /* clock_ms() */
	struct xrun *run; /* NULL once it ended */
	struct spool *spool; /* owned */
	long long produced[2]; /* bytes of stdout, stderr */
	json_object *final; /* what its result said, once it ended */
	struct event *notify; /* coalesces resources/updated */
	TAILQ_HEAD(, bgwait) waiters;
	TAILQ_ENTRY(bgproc) entry;
};

struct bgprocs {
	TAILQ_HEAD(, bgproc) list; /* oldest first */
	int n;
};

static void bgwait_answer(struct bgwait *, struct bgproc *);
static int bgproc_news(const struct bgproc *, const struct bg_ask *);

static struct bgprocs *
bg_list(struct sandbox *sb)
{
	if (sb->bg == NULL) {
		sb->bg = xcalloc(1, sizeof *sb->bg);
		TAILQ_INIT(&sb->bg->list);
	}
	return sb->bg;
}

static void
bgproc_free(struct bgproc *bp)
{
	event_free(bp->notify);
	spool_close(bp->spool);
	json_object_put(bp->final);
	free(bp->command);
	free(bp);
}

/* Answer every waiter: news for them (bp), or the sandbox went (NULL). */
static void
bgproc_wake(struct bgproc *bp, int output_only, struct bgproc *what)
{
	struct bgwait *w, *next;

	for (w = TAILQ_FIRST(&bp->waiters); w != NULL; w = next) {
		next = TAILQ_NEXT(w, entry);
		if (output_only &&
		    (!w->ask.output || !bgproc_news(bp, &w->ask)))
			continue;
		bgwait_answer(w, what);
	}
}

static void
bgproc_notify_cb(evutil_socket_t fd, short what, void *arg)
{
	struct bgproc *bp = arg;

	(void)fd;
	(void)what;
	if (bp->sb != NULL && sandbox_output_updated != NULL)
		sandbox_output_updated(bp->sb, bp->id);
}

static void
bgproc_notify(struct bgproc *bp)
{
	struct timeval tv = {0, BG_NOTIFY_MS * 1000};

	if (!evtimer_pending(bp->notify, NULL))
		evtimer_add(bp->notify, &tv);
}

static void
bgproc_output_cb(struct xrun *x, int stream, size_t len, void *arg)
{
	struct bgproc *bp = arg;

	(void)x;
	bp->produced[stream != 0] += (long long)len;
	bgproc_wake(bp, 1, bp);
	bgproc_notify(bp);
}

/* The run's result: it ended (or its sandbox's worker went). */
static void
bgproc_done(struct xrun *x, json_object *r, void *arg)
{
	static const char *const keep[] = {"exit_code", "signal", "timed_out",
	    "truncated", "cancelled", "oom_killed", "cpu_time_ms",
	    "memory_peak_bytes", "command_cpu_ms", "command_max_rss_bytes",
	    "agent", "agent_note", "egress", "egress_cut", "error", NULL};
	struct bgproc *bp = arg;
	json_object *v;
	int i;

	(void)x;
	bp->run = NULL;
	bp->end_ms = clock_ms();
	bp->final = json_object_new_object();
	for (i = 0; keep[i] != NULL; i++)
		if (json_object_object_get_ex(r, keep[i], &v))
			json_object_object_add(
			    bp->final, keep[i], json_object_get(v));
	if (bp->sb == NULL) {
		bgproc_free(bp);
		return;
	}
	bgproc_wake(bp, 0, bp);
	if (sandbox_output_updated != NULL)
		sandbox_output_updated(bp->sb, bp->id);
}

/* The sandbox is being destroyed: its processes leave with it. */
static void
bgproc_sandbox_event(struct sandbox *sb, enum sandbox_event ev)
{
	struct bgprocs *l = sb->bg;
	struct bgproc *bp;

	if (ev != SANDBOX_DESTROYED || l == NULL)
		return;
	while ((bp = TAILQ_FIRST(&l->list)) != NULL) {
		TAILQ_REMOVE(&l->list, bp, entry);
		bgproc_wake(bp, 0, NULL);
		bp->sb = NULL;
		evtimer_del(bp->notify);
		/* A running one is freed by its result (the worker goes). */
		if (bp->run == NULL)
			bgproc_free(bp);
	}
	free(l);
	sb->bg = NULL;
}

void
bgproc_init(void)
{
	sandbox_listen(bgproc_sandbox_event);
}

/* How many of the sandbox's background processes run. */
int
bgproc_running(struct sandbox *sb)
{
	struct bgproc *bp;
	int n = 0;

	if (sb->bg == NULL)
		return 0;
	TAILQ_FOREACH(bp, &sb->bg->list, entry)
	if (bp->run != NULL)
		n++;
	return n;
}

/*
 * Start a command in the background (o: as for xrun_start(), but for the
 * spool and on_output, which are its own).  NULL with why in err.
 */
struct bgproc *
bgproc_start(
    struct sandbox *sb, const struct xrun_opts *o, char *err, size_t errlen)
{
	struct bgprocs *l = bg_list(sb);
	struct xrun_opts bo = *o;
	struct bgproc *bp, *old;
	char *log_as;

	if (bgproc_running(sb) >= sup.conf->max_background) {
		snprintf(err, errlen,
		    "%d background processes already run in this sandbox, "
		    "the most the server allows (--max-background); wait for "
		    "one (process_wait) or end one (process_signal) first",
		    bgproc_running(sb));
		return NULL;
	}
	bp = xcalloc(1, sizeof *bp);
	if ((bp->spool = spool_open(sb->spool)) == NULL) {
		free(bp);
		snprintf(err, errlen,
		    "the server cannot keep this sandbox's output (no spool "
		    "directory); background processes need one");
		return NULL;
	}
	spool_set_ring(bp->spool);
	/* Room for one more record: the oldest that ended goes. */
	if (l->n >= BG_MAX_RECORDS) {
		TAILQ_FOREACH(old, &l->list, entry)
		if (old->run == NULL)
			break;
		if (old != NULL) {
			TAILQ_REMOVE(&l->list, old, entry);
			l->n--;
			bgproc_free(old);
		}
	}
	bp->id = spool_id(bp->spool);
	bp->sb = sb;
	bp->command = xstrdup(o->command);
	snprintf(bp->sandbox_id, sizeof bp->sandbox_id, "%s", sb->id);
	bp->started = time(NULL);
	bp->start_ms = clock_ms();
	bp->notify = evtimer_new(sup.base, bgproc_notify_cb, bp);
	TAILQ_INIT(&bp->waiters);
	TAILQ_INSERT_TAIL(&l->list, bp, entry);
	l->n++;
	xasprintf(
	    &log_as, "$ %s &  (background process %u)", o->command, bp->id);
	bo.log_as = log_as;
	bo.spool = bp->spool;
	bo.on_output = bgproc_output_cb;
	bp->run = xrun_start(NULL, sb, &bo, bgproc_done, bp);
	free(log_as);
	return bp;
}

/* The sandbox's process of that id, or NULL. */
struct bgproc *
bgproc_find(struct sandbox *sb, long long id)
{
	struct bgproc *bp;

	if (sb->bg == NULL)
		return NULL;
	TAILQ_FOREACH(bp, &sb->bg->list, entry)
	if ((long long)bp->id == id)
		return bp;
	return NULL;
}

unsigned int
bgproc_id(const struct bgproc *bp)
{
	return bp->id;
}

int
bgproc_is_running(const struct bgproc *bp)
{
	return bp->run != NULL;
}

/* Send a signal to it (its group and token); nothing if it ended. */
void
bgproc_signal(struct bgproc *bp, int sig)
{
	if (bp->run != NULL)
		xrun_signal(bp->run, sig);
}

/* Its state, as process_list gives it. */
json_object *
bgproc_json(const struct bgproc *bp)
{
	static const char *const names[] = {"stdout", "stderr"};
	json_object *o;
	char when[32], key[32], *uri;
	struct tm tm;
	int i;

	o = json_object_new_object();
	json_object_object_add(o, "process_id", json_object_new_int64(bp->id));
	json_object_object_add(
	    o, "command", json_object_new_string(bp->command));
	json_object_object_add(o, "state",
	    json_object_new_string(bp->run != NULL ? "running" : "exited"));
	gmtime_r(&bp->started, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_object_object_add(o, "started_at", json_object_new_string(when));
	json_object_object_add(o, "duration_ms",
	    json_object_new_int64(
	        (bp->run != NULL ? clock_ms() : bp->end_ms) - bp->start_ms));
	if (bp->final != NULL) {
		json_object_object_foreach(bp->final, k, val)
		    json_object_object_add(o, k, json_object_get(val));
	}
	for (i = 0; i < 2; i++) {
		snprintf(key, sizeof key, "%s_bytes", names[i]);
		json_object_object_add(
		    o, key, json_object_new_int64(bp->produced[i]));
		snprintf(key, sizeof key, "%s_dropped", names[i]);
		json_object_object_add(
		    o, key, json_object_new_int64(spool_dropped(bp->spool, i)));
		snprintf(key, sizeof key, "%s_uri", names[i]);
		xasprintf(&uri, "sandbox://%s/exec/%u/%s", bp->sandbox_id,
		    bp->id, names[i]);
		json_object_object_add(o, key, json_object_new_string(uri));
		free(uri);
	}
	if (!spool_complete(bp->spool))
		json_object_object_add(
		    o, "spool_incomplete", json_object_new_boolean(1));
	return o;
}

/* Every background process of the sandbox, oldest first. */
json_object *
bgproc_list(struct sandbox *sb)
{
	json_object *a = json_object_new_array();
	struct bgproc *bp;

	if (sb->bg != NULL)
		TAILQ_FOREACH(bp, &sb->bg->list, entry)
	json_object_array_add(a, bgproc_json(bp));
	return a;
}

/* Bytes of a page that end on a whole UTF-8 character (more follow). */
static size_t
utf8_whole(const char *p, size_t len)
{
	size_t i, need;
	unsigned char c;

	for (i = len; i > 0 && len - i < 4; i--) {
		c = (unsigned char)p[i - 1];
		if ((c & 0xc0) == 0x80)
			continue;
		need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
		return i - 1 + need > len ? i - 1 : len;
	}
	return len;
}

/*
 * New output since the offsets, at most max bytes of each stream: the
 * text, where the next call starts, how much is left, how much before
 * the offset was dropped for the spool's cap.
 */
json_object *
bgproc_output(const struct bgproc *bp, const struct bg_ask *ask)
{
	static const char *const names[] = {"stdout", "stderr"};
	long long off, size, dropped, got;
	json_object *o;
	char key[32], *buf, *text;
	size_t tlen;
	ssize_t n;
	int i;

	o = bgproc_json(bp);
	buf = xmalloc((size_t)ask->max + 1);
	for (i = 0; i < 2; i++) {
		size = spool_size(bp->spool, i);
		dropped = spool_dropped(bp->spool, i);
		off = ask->off[i] < dropped ? dropped : ask->off[i];
		if (off > size)
			off = size;
		got = 0;
		if (bp->sb != NULL && off < size) {
			n = spool_read(bp->sb->spool, bp->id, i, off, buf,
			    (size_t)(size - off < ask->max ? size - off
			                                   : ask->max),
			    &size);
			got = n > 0 ? n : 0;
			if (got > 0 && (off + got < size || bp->run != NULL))
				got = (long long)utf8_whole(buf, (size_t)got);
		}
		text = utf8_sanitize(buf, (size_t)got, &tlen);
		json_object_object_add(
		    o, names[i], json_object_new_string_len(text, (int)tlen));
		free(text);
		snprintf(key, sizeof key, "%s_offset", names[i]);
		json_object_object_add(o, key, json_object_new_int64(off));
		snprintf(key, sizeof key, "%s_next_offset", names[i]);
		json_object_object_add(
		    o, key, json_object_new_int64(off + got));
		snprintf(key, sizeof key, "%s_remaining", names[i]);
		json_object_object_add(
		    o, key, json_object_new_int64(size - (off + got)));
		snprintf(key, sizeof key, "%s_skipped", names[i]);
		json_object_object_add(o, key,
		    json_object_new_int64(
		        ask->off[i] < dropped ? dropped - ask->off[i] : 0));
	}
	free(buf);
	return o;
}

/* Whether a waiter has its answer now. */
static int
bgproc_news(const struct bgproc *bp, const struct bg_ask *ask)
{
	if (bp->run == NULL)
		return 1;
	return ask->output && (spool_size(bp->spool, 0) > ask->off[0] ||
	                          spool_size(bp->spool, 1) > ask->off[1]);
}

static void
bgwait_answer(struct bgwait *w, struct bgproc *what)
{
	TAILQ_REMOVE(&w->bp->waiters, w, entry);
	event_free(w->timer);
	w->call->state = NULL;
	w->call->cancel = NULL;
	w->answer(w->call, what, &w->ask);
	free(w);
}

static void
bgwait_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct bgwait *w = arg;

	(void)fd;
	(void)what;
	bgwait_answer(w, w->bp);
}

/* The call was cancelled (or the server is going): answer it now. */
static void
bgwait_cancel(struct call *c)
{
	struct bgwait *w = c->state;

	if (w != NULL)
		bgwait_answer(w, w->bp);
}

/*
 * Answer the call with answer(call, bp, ask) when there is news for it
 * (output past ask's offsets, with ask->output; its end), or after ms,
 * or now; answer(call, NULL, ask) if the sandbox goes meanwhile.
 */
void
bgproc_wait(struct bgproc *bp, struct call *c, const struct bg_ask *ask,
    long long ms, bg_answer_cb answer)
{
	struct timeval tv;
	struct bgwait *w;

	if (ms <= 0 || bgproc_news(bp, ask)) {
		answer(c, bp, ask);
		return;
	}
	w = xcalloc(1, sizeof *w);
	w->call = c;
	w->bp = bp;
	w->ask = *ask;
	w->answer = answer;
	w->timer = evtimer_new(sup.base, bgwait_timeout, w);
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(w->timer, &tv);
	TAILQ_INSERT_TAIL(&bp->waiters, w, entry);
	c->state = w;
	c->cancel = bgwait_cancel;
}
