/*
 * The engines sandboxes are placed on: one per --engine (or the one of
 * --docker-host without any), each health-checked with /_ping every
 * --engine-ping-interval seconds, up or down, drained or not, with its
 * ceilings (max-sandboxes, max-memory-mb) and counters.
 *
 * Placement (engines_place()): among the engines that are up, not
 * drained, and under both of their ceilings with the new sandbox added,
 * the one with the largest free share wins: the smaller of (1 - its
 * sandboxes / max-sandboxes) and (1 - its memory placed / max-memory-mb),
 * a ceiling it does not have counting as entirely free; ties go to the
 * engine with fewer sandboxes, then to the one named first.  A client may
 * name an engine instead (--allow-engine-choice).
 *
 * Loss: with --engine given, an engine whose ping fails is down: each
 * ready sandbox on it is lost (its worker ended without a respawn, every
 * call on it refused with when and where; sandbox.c), its pool
 * containers go, and nothing new is placed on it.  When it answers again
 * it takes new sandboxes, and the reaper removes what this instance lost
 * on it and what dead instances left there.  Without --engine the one
 * engine is pinged for its figures only: as before, creation talks to it
 * whatever its state and reports the engine's own error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "config.h"
#include "core.h"
#include "engine.h"
#include "enginespec.h"
#include "log.h"
#include "sandbox.h"
#include "spool.h"
#include "xmalloc.h"

enum engines_state { ES_UNKNOWN, ES_UP, ES_DOWN };

struct engrec {
	struct engine *eng; /* owned */
	char *url;
	char *tls; /* NULL: the environment's (the default engine), "": none */
	long max_sandboxes, max_memory_mb; /* 0: none */
	enum engines_state state;
	int draining;
	time_t last_ok, down_since;
	struct engine_req *ping; /* in flight */
	int borrowed; /* engines_add(): the caller frees the handle */
	struct event *timer;
	long long placed, lost, downs, ping_failures, reaped;
};

static struct engrec *recs;
static int nrecs;
static int multi; /* --engine given: loss and health count */

static struct engrec *
engines_rec(const struct engine *eng)
{
	int i;

	for (i = 0; i < nrecs; i++)
		if (recs[i].eng == eng)
			return &recs[i];
	return NULL;
}

/*
 * The engines of the configuration, opened; sup.engine is the first (the
 * warm pool's and the reaper's of old, and the default).  -1 if one
 * cannot be opened (its text was checked at parse time).
 */
int
engines_open(void)
{
	const struct config *c = sup.conf;
	struct enginespec es;
	struct engrec *r;
	char why[512];
	int i;

	if (c->engines.n == 0) {
		recs = xcalloc(1, sizeof *recs);
		nrecs = 1;
		r = &recs[0];
		r->url = xstrdup(c->docker_host);
		if ((r->eng = engine_new(sup.base, c->docker_host)) == NULL)
			return -1;
		r->draining = config_list_has(&c->drain, r->url);
		sup.engine = r->eng;
		return 0;
	}
	multi = 1;
	recs = xcalloc((size_t)c->engines.n, sizeof *recs);
	for (i = 0; i < c->engines.n; i++) {
		if (enginespec_parse(c->engines.v[i], &es, why, sizeof why) ==
		    -1) {
			log_warnx("--engine %s: %s", c->engines.v[i], why);
			return -1;
		}
		r = &recs[nrecs];
		r->url = xstrdup(es.url);
		r->tls = xstrdup(es.tls);
		r->max_sandboxes = es.max_sandboxes;
		r->max_memory_mb = es.max_memory_mb;
		r->draining = config_list_has(&c->drain, es.url);
		nrecs++;
		if ((r->eng = engine_new_tls(sup.base, es.url, es.tls)) ==
		    NULL) {
			log_warnx("--engine %s: cannot open", es.url);
			return -1;
		}
	}
	sup.engine = recs[0].eng;
	return 0;
}

/* At exit: every handle (what is in flight is dropped). */
void
engines_close(void)
{
	int i;

	for (i = 0; i < nrecs; i++) {
		if (recs[i].timer != NULL)
			event_free(recs[i].timer);
		if (recs[i].ping != NULL)
			engine_req_cancel(recs[i].ping);
		if (!recs[i].borrowed)
			engine_free(recs[i].eng);
		free(recs[i].url);
		free(recs[i].tls);
	}
	free(recs);
	recs = NULL;
	nrecs = 0;
	multi = 0;
	sup.engine = NULL;
}

/*
 * An engine whose handle the caller made and frees (tests that stand in
 * for engines), as an --engine with these ceilings (0: none).
 */
void
engines_add(
    struct engine *eng, const char *url, long max_sandboxes, long max_memory_mb)
{
	struct engrec *r;

	recs = xrealloc(recs, ((size_t)nrecs + 1) * sizeof *recs);
	r = &recs[nrecs++];
	memset(r, 0, sizeof *r);
	r->eng = eng;
	r->url = xstrdup(url);
	r->tls = xstrdup("");
	r->max_sandboxes = max_sandboxes;
	r->max_memory_mb = max_memory_mb;
	r->borrowed = 1;
	multi = 1;
	if (sup.engine == NULL)
		sup.engine = eng;
}

int
engines_multi(void)
{
	return multi;
}

int
engines_n(void)
{
	return nrecs;
}

struct engine *
engines_nth(int i)
{
	return i >= 0 && i < nrecs ? recs[i].eng : NULL;
}

/* The URL an engine was named by (the operator's, not a host path). */
const char *
engines_url(const struct engine *eng)
{
	const struct engrec *r = engines_rec(eng);

	if (r != NULL)
		return r->url;
	return sup.conf != NULL && sup.conf->docker_host != NULL
	           ? sup.conf->docker_host
	           : "";
}

/* Its TLS directory for a worker: NULL the environment's, "" none. */
const char *
engines_tls(const struct engine *eng)
{
	const struct engrec *r = engines_rec(eng);

	return r != NULL ? r->tls : NULL;
}

/* Whether sandboxes on it are lost (down, with --engine). */
int
engines_is_down(const struct engine *eng)
{
	const struct engrec *r = engines_rec(eng);

	return multi && r != NULL && r->state == ES_DOWN;
}

/* When it stopped answering (engines_is_down()). */
time_t
engines_down_since(const struct engine *eng)
{
	const struct engrec *r = engines_rec(eng);

	return r != NULL ? r->down_since : 0;
}

/* Whether a health check of it is in flight. */
int
engines_checking(const struct engine *eng)
{
	const struct engrec *r = engines_rec(eng);

	return multi && r != NULL && r->ping != NULL;
}

/* A pool container on it may be handed out: up (or unknown) and not
 * drained. */
int
engines_usable(const struct engine *eng)
{
	const struct engrec *r = engines_rec(eng);

	if (r == NULL)
		return 1;
	return !r->draining && !(multi && r->state == ES_DOWN);
}

/* Sandboxes (ready or starting, not lost) and their memory on it. */
static void
engines_load(const struct engrec *r, long *n, long long *mb)
{
	struct sandboxes *lists[2] = {&sandboxes, pool_list()};
	struct sandbox *sb;
	int i;

	*n = 0;
	*mb = 0;
	for (i = 0; i < 2; i++)
		TAILQ_FOREACH(sb, lists[i], entry)
		{
			if (sb->engine != r->eng || sb->lost || sb->dead)
				continue;
			(*n)++;
			*mb += sb->lim.memory_mb;
		}
}

/* Why r cannot take a sandbox of mb MiB now, or NULL. */
static const char *
engines_refusal(const struct engrec *r, long mb)
{
	long n;
	long long used;

	if (r->draining)
		return "draining";
	/* One not checked yet may take it: its own error says if not. */
	if (multi && r->state == ES_DOWN)
		return "down";
	engines_load(r, &n, &used);
	if (r->max_sandboxes > 0 && n + 1 > r->max_sandboxes)
		return "at its max-sandboxes";
	if (r->max_memory_mb > 0 && used + mb > r->max_memory_mb)
		return "at its max-memory-mb";
	return NULL;
}

/* Its free share (the smaller over its ceilings; none: 1). */
static double
engines_free_share(const struct engrec *r)
{
	long n;
	long long used;
	double f = 1, g;

	engines_load(r, &n, &used);
	if (r->max_sandboxes > 0) {
		g = 1 - (double)n / (double)r->max_sandboxes;
		if (g < f)
			f = g;
	}
	if (r->max_memory_mb > 0) {
		g = 1 - (double)used / (double)r->max_memory_mb;
		if (g < f)
			f = g;
	}
	return f;
}

/*
 * The engine for a new sandbox of mb MiB: the one named (want, an
 * --engine URL), else by the rule above; NULL with why when none may
 * take it.  Without --engine: always the one engine.
 */
struct engine *
engines_place(const char *want, long mb, char *why, size_t len)
{
	struct engrec *r, *best = NULL;
	struct evbuffer *b;
	const char *no;
	long n, bn = 0;
	long long used;
	double f, bf = 0;
	int i;

	if (nrecs == 0)
		return sup.engine; /* (unit tests: no engines opened) */
	if (want != NULL) {
		for (i = 0; i < nrecs; i++)
			if (strcmp(recs[i].url, want) == 0)
				break;
		if (i == nrecs) {
			snprintf(why, len,
			    "no engine \"%.200s\" on this server (engines: "
			    "get_sandbox_status's stats.engines)",
			    want);
			return NULL;
		}
		if ((no = engines_refusal(&recs[i], mb)) != NULL) {
			snprintf(why, len,
			    "engine %s cannot take a sandbox now: it is %s",
			    recs[i].url, no);
			return NULL;
		}
		recs[i].placed++;
		return recs[i].eng;
	}
	if (!multi) {
		recs[0].placed++;
		return recs[0].eng;
	}
	for (i = 0; i < nrecs; i++) {
		r = &recs[i];
		if (engines_refusal(r, mb) != NULL)
			continue;
		f = engines_free_share(r);
		engines_load(r, &n, &used);
		if (best == NULL || f > bf || (f == bf && n < bn)) {
			best = r;
			bf = f;
			bn = n;
		}
	}
	if (best != NULL) {
		best->placed++;
		return best->eng;
	}
	b = evbuffer_new();
	for (i = 0; i < nrecs; i++)
		evbuffer_add_printf(b, "%s%s is %s", i > 0 ? ", " : "",
		    recs[i].url, engines_refusal(&recs[i], mb));
	evbuffer_add(b, "", 1);
	snprintf(why, len, "no engine can take a sandbox now (%s)",
	    (const char *)evbuffer_pullup(b, -1));
	evbuffer_free(b);
	return NULL;
}

/* A sandbox on it was lost (counted once, by sandbox.c). */
void
engines_count_lost(const struct engine *eng)
{
	struct engrec *r = engines_rec(eng);

	if (r != NULL)
		r->lost++;
}

/* The reaper removed an orphan from it. */
void
engines_count_reaped(const struct engine *eng)
{
	struct engrec *r = engines_rec(eng);

	if (r != NULL)
		r->reaped++;
}

static void engines_ping(struct engrec *);

static void
engines_ping_cb(const struct engine_resp *resp, void *arg)
{
	struct engrec *r = arg;
	char when[32];
	struct tm tm;

	r->ping = NULL;
	if (resp->error == NULL) {
		if (r->state == ES_DOWN)
			log_info("engine %s answers again; it takes new "
			         "sandboxes and its orphans are removed",
			    r->url);
		if (r->state != ES_UP && r->downs > 0)
			reaper_run_engine(r->eng);
		r->state = ES_UP;
		r->last_ok = time(NULL);
		return;
	}
	r->ping_failures++;
	if (r->state == ES_DOWN)
		return;
	r->state = ES_DOWN;
	r->down_since = time(NULL);
	r->downs++;
	gmtime_r(&r->down_since, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	/* Alone (no --engine), its own errors say it to each call. */
	if (multi)
		log_warnx("engine %s stopped answering at %s: %s", r->url, when,
		    resp->error);
	else
		log_info("engine %s stopped answering at %s: %s", r->url, when,
		    resp->error);
	if (multi)
		sandbox_engine_lost(r->eng);
}

static void
engines_ping(struct engrec *r)
{
	if (r->ping != NULL || sup.shutting_down)
		return;
	r->ping = engine_ping(r->eng, engines_ping_cb, r);
}

static void
engines_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	engines_ping(arg);
}

/* Health checks start: each engine now, then on the schedule. */
void
engines_start(void)
{
	struct timeval tv = {sup.conf->engine_ping_interval, 0};
	int i;

	for (i = 0; i < nrecs; i++) {
		/* Where a backend may put files its runtime reads by path. */
		engine_set_dir(recs[i].eng, spool_root_path());
		recs[i].timer = event_new(
		    sup.base, -1, EV_PERSIST, engines_timer_cb, &recs[i]);
		evtimer_add(recs[i].timer, &tv);
		engines_ping(&recs[i]);
	}
}

/* Something on it failed (a worker died): check it now. */
void
engines_suspect(const struct engine *eng)
{
	struct engrec *r = engines_rec(eng);

	if (multi && r != NULL)
		engines_ping(r);
}

/*
 * Drain an engine by its URL (on 1) or take it back (0): for --drain and
 * a control command.  -1 if no engine has that URL.
 */
int
engines_drain(const char *url, int on)
{
	struct sandbox *sb, *next;
	int i;

	for (i = 0; i < nrecs; i++)
		if (strcmp(recs[i].url, url) == 0) {
			if (recs[i].draining != on)
				log_info("engine %s %s", url,
				    on ? "drained: no new sandbox goes there"
				       : "takes new sandboxes again");
			recs[i].draining = on;
			/* Its pool containers would never be handed out:
			 * they go, and the pool refills elsewhere. */
			for (sb = on ? TAILQ_FIRST(pool_list()) : NULL;
			     sb != NULL; sb = next) {
				next = TAILQ_NEXT(sb, entry);
				if (sb->engine == recs[i].eng)
					sandbox_destroy(sb, NULL, NULL);
			}
			return 0;
		}
	return -1;
}

static const char *
engines_state_word(const struct engrec *r)
{
	if (r->state == ES_DOWN)
		return "down";
	if (r->draining)
		return "draining";
	return r->state == ES_UP ? "up" : "unknown";
}

static void
iso(json_object *o, const char *key, time_t t)
{
	struct tm tm;
	char buf[32];

	if (t == 0) {
		json_object_object_add(o, key, NULL);
		return;
	}
	gmtime_r(&t, &tm);
	strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_object_object_add(o, key, json_object_new_string(buf));
}

/*
 * Each engine's figures, an array (sandbox://stats, get_sandbox_status,
 * the control socket's ls and top): url, state (up, down, draining,
 * unknown before its first answer), sandboxes and memory placed on it,
 * its ceilings (null: none), its last good ping and when it went down,
 * and its counters.
 */
json_object *
engines_json(void)
{
	json_object *a, *o;
	struct engrec *r;
	long n;
	long long mb;
	int i;

	a = json_object_new_array();
	for (i = 0; i < nrecs; i++) {
		r = &recs[i];
		engines_load(r, &n, &mb);
		o = json_object_new_object();
		json_object_object_add(
		    o, "url", json_object_new_string(r->url));
		json_object_object_add(
		    o, "state", json_object_new_string(engines_state_word(r)));
		json_object_object_add(o, "tls",
		    json_object_new_boolean(r->tls != NULL && *r->tls != '\0'));
		json_object_object_add(
		    o, "sandboxes", json_object_new_int64(n));
		json_object_object_add(
		    o, "memory_mb_placed", json_object_new_int64(mb));
		json_object_object_add(o, "max_sandboxes",
		    r->max_sandboxes > 0
		        ? json_object_new_int64(r->max_sandboxes)
		        : NULL);
		json_object_object_add(o, "max_memory_mb",
		    r->max_memory_mb > 0
		        ? json_object_new_int64(r->max_memory_mb)
		        : NULL);
		iso(o, "last_ping", r->last_ok);
		iso(o, "down_since", r->state == ES_DOWN ? r->down_since : 0);
		json_object_object_add(
		    o, "placed", json_object_new_int64(r->placed));
		json_object_object_add(
		    o, "lost", json_object_new_int64(r->lost));
		json_object_object_add(
		    o, "downs", json_object_new_int64(r->downs));
		json_object_object_add(o, "ping_failures",
		    json_object_new_int64(r->ping_failures));
		json_object_object_add(
		    o, "reaped", json_object_new_int64(r->reaped));
		json_object_array_add(a, o);
	}
	return a;
}

/* The same for /metrics, one series per engine, labelled by its URL. */
void
engines_prometheus(struct evbuffer *b)
{
	static const struct {
		const char *name, *type, *help;
	} m[] = {
	    {"mcp_sandboxd_engine_up", "gauge",
	        "1 if the engine answered its last health check."},
	    {"mcp_sandboxd_engine_draining", "gauge",
	        "1 if no new sandbox is placed on the engine."},
	    {"mcp_sandboxd_engine_sandboxes", "gauge",
	        "Sandboxes on the engine now."},
	    {"mcp_sandboxd_engine_memory_placed_bytes", "gauge",
	        "Memory limits of the sandboxes on the engine."},
	    {"mcp_sandboxd_engine_placed_total", "counter",
	        "Sandboxes placed on the engine."},
	    {"mcp_sandboxd_engine_lost_total", "counter",
	        "Sandboxes lost with the engine."},
	    {"mcp_sandboxd_engine_downs_total", "counter",
	        "Times the engine stopped answering."},
	    {"mcp_sandboxd_engine_ping_failures_total", "counter",
	        "Failed health checks of the engine."},
	    {"mcp_sandboxd_engine_reaped_total", "counter",
	        "Orphan containers removed from the engine."},
	};
	struct engrec *r;
	long long v = 0, mb;
	long n;
	size_t k;
	int i;
	char *esc;
	const char *p;

	for (k = 0; k < sizeof m / sizeof m[0]; k++) {
		evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n",
		    m[k].name, m[k].help, m[k].name, m[k].type);
		for (i = 0; i < nrecs; i++) {
			r = &recs[i];
			engines_load(r, &n, &mb);
			switch (k) {
			case 0:
				v = r->state == ES_UP;
				break;
			case 1:
				v = r->draining;
				break;
			case 2:
				v = n;
				break;
			case 3:
				v = mb * 1024 * 1024;
				break;
			case 4:
				v = r->placed;
				break;
			case 5:
				v = r->lost;
				break;
			case 6:
				v = r->downs;
				break;
			case 7:
				v = r->ping_failures;
				break;
			default:
				v = r->reaped;
				break;
			}
			/* A label value escapes \ and " (URLs have no
			 * newline: --engine refuses whitespace). */
			esc = xmalloc(2 * strlen(r->url) + 1);
			for (p = r->url, n = 0; *p != '\0'; p++) {
				if (*p == '\\' || *p == '"')
					esc[n++] = '\\';
				esc[n++] = *p;
			}
			esc[n] = '\0';
			evbuffer_add_printf(
			    b, "%s{engine=\"%s\"} %lld\n", m[k].name, esc, v);
			free(esc);
		}
	}
}
