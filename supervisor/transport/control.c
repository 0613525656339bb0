/*
 * The control socket: every running server, over stdio or HTTP, listens
 * on a private unix socket, as tmux's server does, for the operator's
 * commands (mcp-sandboxd ls, top, logs, stop: cli/).  One socket per
 * server, PID.sock in the control directory (common/ctldir.c), mode 0600
 * in a directory of ours that is 0700; a peer of another user (but root)
 * is refused by its credentials.
 *
 * The protocol: one JSON object a line each way.  A request is
 * {"cmd": "ls" | "top" | "find" | "logs" | "stop", "id": ..., "follow":
 * bool}; each gets one answer {"ok": true, ...} or {"ok": false, "error":
 * text, "code": "unknown" | "ambiguous" | ...}; a followed log then sends
 * {"text": ...} lines as the log grows and {"end": why} when the sandbox
 * goes.  A request longer than CONTROL_MAX_REQUEST or not a JSON object
 * drops its client.  The server never waits for a client: its output is
 * capped (CONTROL_OUT_MAX) and must be read within CONTROL_WRITE_TIMEOUT,
 * or the client is dropped.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "clock.h"
#include "config.h"
#include "core.h"
#include "ctldir.h"
#include "engine.h"
#include "listenrest.h"
#include "log.h"
#include "mcp.h"
#include "privdir.h"
#include "procinfo.h"
#include "proto.h"
#include "sandbox.h"
#include "transport.h"
#include "utf8.h"
#include "version.h"
#include "xmalloc.h"

#define CONTROL_MAX_CLIENTS 16
#define CONTROL_MAX_REQUEST 4096 /* bytes of one request line */
#define CONTROL_MAX_DEPTH 4 /* JSON nesting of a request */
#define CONTROL_OUT_MAX (8 << 20) /* bytes queued for one client */
#define CONTROL_WRITE_TIMEOUT 10 /* seconds output may wait unread */
#define CONTROL_IDLE_TIMEOUT 5 /* seconds a client may wait to ask */

struct cclient {
	struct bufferevent *bev;
	int refs; /* the list's, and each request in flight's */
	int dead; /* dropped: out of the list, its socket closed */
	int closing; /* close once its output is written */
	int asked; /* it sent a request once */
	/* logs -f: the sandbox followed (a reference), the bytes of its
	 * log sent so far (dropped + kept, as the worker counts them), a
	 * read in flight, news that came meanwhile. */
	struct sandbox *follow;
	long long seen;
	int reading, again;
	LIST_ENTRY(cclient) entry;
};

static LIST_HEAD(, cclient) cclients = LIST_HEAD_INITIALIZER(cclients);
static int nclients;
static struct evconnlistener *listener;
static struct listenrest *listener_rest; /* out of descriptors */
static char sock_path[PATH_MAX];
static void (*prev_logs_updated)(struct sandbox *);

static void client_drop(struct cclient *);
static void logs_read(struct cclient *, int);

static void
client_free(void *arg)
{
	free(arg);
}

static void
client_unref(struct cclient *c)
{
	if (--c->refs == 0)
		defer_free(client_free, c);
}

/* One answer line; a client that lets its output pile up is dropped. */
static void
client_send(struct cclient *c, json_object *o)
{
	struct evbuffer *out;
	const char *s;

	if (c->dead) {
		json_object_put(o);
		return;
	}
	out = bufferevent_get_output(c->bev);
	if (evbuffer_get_length(out) > CONTROL_OUT_MAX) {
		json_object_put(o);
		log_warnx("control: a client does not read its answers; "
		          "dropped");
		client_drop(c);
		return;
	}
	s = json_object_to_json_string_ext(
	    o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	evbuffer_add(out, s, strlen(s));
	evbuffer_add(out, "\n", 1);
	json_object_put(o);
}

static json_object *answer_error(const char *code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static json_object *
answer_error(const char *code, const char *fmt, ...)
{
	json_object *o;
	va_list ap;
	char msg[512];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(0));
	json_object_object_add(o, "code", json_object_new_string(code));
	json_object_object_add(o, "error", json_object_new_string(msg));
	return o;
}

static json_object *
answer_ok(void)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "ok", json_object_new_boolean(1));
	return o;
}

/*
 * Its timeouts: output unread for CONTROL_WRITE_TIMEOUT, and unless it
 * follows a log, no request for CONTROL_IDLE_TIMEOUT (while a request is
 * answered, reading is off, and so is that timeout).
 */
static void
client_timeouts(struct cclient *c, int idle)
{
	struct timeval rtv = {CONTROL_IDLE_TIMEOUT, 0};
	struct timeval wtv = {CONTROL_WRITE_TIMEOUT, 0};

	bufferevent_set_timeouts(c->bev, idle ? &rtv : NULL, &wtv);
}

/* Back to reading the next request (after an answer sent later). */
static void
client_ready(struct cclient *c)
{
	if (!c->dead)
		bufferevent_enable(c->bev, EV_READ);
}

/*
 * A sandbox as the tools name one: its full id, a unique prefix of 12
 * or more, or its name; any session's (the operator sees them all).
 * NULL with *why set when none or several match.
 */
static struct sandbox *
control_resolve(const char *key, const char **why)
{
	struct sandbox *sb, *found = NULL;
	size_t len = strlen(key);
	int n = 0;

	*why = "unknown";
	TAILQ_FOREACH(sb, &sandboxes, entry)
	{
		if (sb->id != NULL && strcmp(sb->id, key) == 0)
			return sb;
	}
	TAILQ_FOREACH(sb, &sandboxes, entry)
	{
		if ((sb->name != NULL && strcmp(sb->name, key) == 0) ||
		    (len >= 12 && sb->id != NULL &&
		        strncmp(sb->id, key, len) == 0)) {
			found = sb;
			n++;
		}
	}
	if (n > 1) {
		*why = "ambiguous";
		return NULL;
	}
	return found;
}

static json_object *
resolve_error(const char *key, const char *why)
{
	if (strcmp(why, "ambiguous") == 0)
		return answer_error(why,
		    "\"%.80s\" names more than one sandbox: give more of "
		    "its id",
		    key);
	return answer_error(why,
	    "no sandbox \"%.80s\" (a full id, a unique prefix of 12 or "
	    "more, or a name)",
	    key);
}

static const char *
state_name(const struct sandbox *sb)
{
	if (sb->lost)
		return "lost";
	if (sb->state == SB_STARTING)
		return "starting";
	if (sb->state == SB_STOPPING)
		return "stopping";
	if (sb->worker == NULL)
		return "respawning";
	return sb->paused ? "paused" : "running";
}

/* This server: pid, version, transport, uptime, its socket. */
static json_object *
server_json(void)
{
	json_object *o;

	o = json_object_new_object();
	json_object_object_add(o, "pid", json_object_new_int64(getpid()));
	json_object_object_add(
	    o, "version", json_object_new_string(MCP_SANDBOXD_VERSION));
	json_object_object_add(
	    o, "instance", json_object_new_string(sup.instance));
	json_object_object_add(
	    o, "transport", json_object_new_string(sup.conf->transport));
	if (strcmp(sup.conf->transport, "stdio") != 0)
		json_object_object_add(
		    o, "listen", json_object_new_string(sup.conf->listen));
	json_object_object_add(o, "uptime_seconds",
	    json_object_new_int64((clock_ms() - stats.started_ms) / 1000));
	json_object_object_add(
	    o, "sandboxes", json_object_new_int64(sandbox_count()));
	json_object_object_add(o, "socket", json_object_new_string(sock_path));
	return o;
}

/* ls: each sandbox, with its container's memory from the engine. */
struct lsreq {
	struct cclient *c;
	json_object *answer;
	int pending;
};

struct lsent {
	struct lsreq *ls;
	json_object *obj;
};

static void
ls_done(struct lsreq *ls)
{
	if (--ls->pending > 0)
		return;
	client_send(ls->c, ls->answer);
	client_ready(ls->c);
	client_unref(ls->c);
	free(ls);
}

static void
ls_stats_cb(const struct engine_resp *resp, void *arg)
{
	struct lsent *en = arg;

	const struct engine_stats *st = resp->stats;

	if (st != NULL && st->have_memory)
		json_object_object_add(en->obj, "memory_bytes",
		    json_object_new_int64(st->memory_bytes));
	if (st != NULL && st->have_pids)
		json_object_object_add(
		    en->obj, "pids", json_object_new_int64(st->pids));
	/* Cumulative: a client makes rates of two looks (top). */
	if (st != NULL && st->have_cpu)
		json_object_object_add(
		    en->obj, "cpu_ns", json_object_new_int64(st->cpu_ns));
	ls_done(en->ls);
	json_object_put(en->obj);
	free(en);
}

static void
cmd_ls(struct cclient *c)
{
	struct lsreq *ls;
	struct lsent *en;
	struct sandbox *sb;
	json_object *list, *o;
	time_t now = time(NULL);

	ls = xcalloc(1, sizeof *ls);
	ls->c = c;
	c->refs++;
	ls->pending = 1;
	ls->answer = answer_ok();
	json_object_object_add(ls->answer, "server", server_json());
	list = json_object_new_array();
	json_object_object_add(ls->answer, "sandboxes", list);
	TAILQ_FOREACH(sb, &sandboxes, entry)
	{
		o = json_object_new_object();
		json_object_object_add(o, "id",
		    sb->id != NULL ? json_object_new_string(sb->id) : NULL);
		json_object_object_add(
		    o, "name", json_object_new_string(sb->name));
		json_object_object_add(
		    o, "image", json_object_new_string(sb->image));
		json_object_object_add(
		    o, "state", json_object_new_string(state_name(sb)));
		json_object_object_add(o, "engine",
		    json_object_new_string(engines_url(sb->engine)));
		json_object_object_add(o, "runtime",
		    json_object_new_string(sandbox_runtime_name(sb)));
		json_object_object_add(
		    o, "created", json_object_new_int64((int64_t)sb->created));
		json_object_object_add(o, "age_seconds",
		    json_object_new_int64((int64_t)(now - sb->created)));
		json_object_object_add(
		    o, "execs", json_object_new_int64(sb->exec_count));
		json_object_object_add(o, "memory_limit_mb",
		    json_object_new_int64(sb->lim.memory_mb));
		json_object_object_add(o, "session",
		    sb->owner != NULL ? json_object_new_int64(sb->owner->id)
		                      : NULL);
		json_object_object_add(
		    o, "detached", json_object_new_boolean(sb->detach));
		json_object_object_add(o, "idle_seconds",
		    json_object_new_int64((int64_t)(now - sb->last_used)));
		json_object_object_add(
		    o, "pids_limit", json_object_new_int64(sb->lim.pids));
		if (sb->worker != NULL)
			json_object_object_add(o, "worker_pid",
			    json_object_new_int(wproc_pid(sb->worker)));
		json_object_array_add(list, o);
		/* A lost sandbox's engine does not answer: not asked. */
		if (sb->id == NULL || sb->state != SB_READY || sb->paused ||
		    sb->lost)
			continue;
		en = xcalloc(1, sizeof *en);
		en->ls = ls;
		en->obj = json_object_get(o);
		ls->pending++;
		engine_container_stats(sb->engine, sb->id, ls_stats_cb, en);
	}
	ls_done(ls);
}

/* Percentile q of a histogram, interpolated in its bucket (as
 * Prometheus's histogram_quantile); NULL when it is empty. */
static json_object *
percentile(const struct histogram *h, double q)
{
	static const double bounds[STATS_BUCKETS] = {
	    10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000};
	double rank, lo = 0, below = 0;
	int i;

	if (h->total == 0)
		return NULL;
	rank = q * (double)h->total;
	for (i = 0; i < STATS_BUCKETS; i++) {
		if ((double)h->count[i] >= rank) {
			if ((double)h->count[i] == below)
				return json_object_new_double(bounds[i]);
			return json_object_new_double(
			    lo + (bounds[i] - lo) * (rank - below) /
			             ((double)h->count[i] - below));
		}
		lo = bounds[i];
		below = (double)h->count[i];
	}
	return json_object_new_double(bounds[STATS_BUCKETS - 1]);
}

static json_object *
latency_json(const struct histogram *h)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "count", json_object_new_int64(h->total));
	json_object_object_add(o, "p50_ms", percentile(h, 0.5));
	json_object_object_add(o, "p90_ms", percentile(h, 0.9));
	json_object_object_add(o, "p99_ms", percentile(h, 0.99));
	return o;
}

/* top: the figures of this moment (the client makes rates of them). */
static void
cmd_top(struct cclient *c)
{
	json_object *o, *s;
	struct sandbox *sb;
	long long rss, workers = 0;

	o = answer_ok();
	json_object_object_add(o, "server", server_json());
	json_object_object_add(o, "time_ms", json_object_new_int64(clock_ms()));
	s = json_object_new_object();
	json_object_object_add(
	    s, "live", json_object_new_int64(sandbox_count()));
	json_object_object_add(
	    s, "created", json_object_new_int64(stats.sandboxes_created));
	json_object_object_add(
	    s, "removed", json_object_new_int64(stats.sandboxes_removed));
	json_object_object_add(o, "sandboxes", s);
	s = json_object_new_object();
	json_object_object_add(
	    s, "alive", json_object_new_int64(wproc_count()));
	json_object_object_add(
	    s, "restarted", json_object_new_int64(stats.workers_restarted));
	json_object_object_add(o, "workers", s);
	s = json_object_new_object();
	json_object_object_add(
	    s, "run", json_object_new_int64(stats.execs_run));
	json_object_object_add(
	    s, "failed", json_object_new_int64(stats.execs_failed));
	json_object_object_add(
	    s, "timed_out", json_object_new_int64(stats.execs_timed_out));
	json_object_object_add(o, "execs", s);
	s = json_object_new_object();
	json_object_object_add(s, "create", latency_json(&stats.create_ms));
	json_object_object_add(s, "exec", latency_json(&stats.exec_ms));
	json_object_object_add(o, "latency", s);
	s = json_object_new_object();
	json_object_object_add(s, "supervisor_rss_bytes",
	    proc_rss(getpid(), &rss) == 0 ? json_object_new_int64(rss) : NULL);
	TAILQ_FOREACH(sb, &sandboxes, entry)
	{
		if (sb->worker != NULL &&
		    proc_rss(wproc_pid(sb->worker), &rss) == 0)
			workers += rss;
	}
	json_object_object_add(
	    s, "workers_rss_bytes", json_object_new_int64(workers));
	json_object_object_add(o, "memory", s);
	json_object_object_add(o, "engines", engines_json());
	json_object_object_add(o, "pool", pool_stats_json());
	json_object_object_add(
	    o, "engine_errors", json_object_new_int64(stats.engine_errors));
	client_send(c, o);
}

static void
cmd_find(struct cclient *c, const char *key)
{
	struct sandbox *sb;
	const char *why;
	json_object *o;

	if ((sb = control_resolve(key, &why)) == NULL) {
		client_send(c, resolve_error(key, why));
		return;
	}
	o = answer_ok();
	json_object_object_add(
	    o, "id", sb->id != NULL ? json_object_new_string(sb->id) : NULL);
	json_object_object_add(o, "name", json_object_new_string(sb->name));
	client_send(c, o);
}

/* stop: as sandbox_stop does (10 s grace, then kill, removed). */
struct stopreq {
	struct cclient *c;
	char *id;
};

static void
stop_done(void *arg, const char *err)
{
	struct stopreq *st = arg;
	json_object *o;

	if (err != NULL)
		o = answer_error("failed",
		    "sandbox %.12s was stopped but removing it failed: %s",
		    st->id, err);
	else {
		o = answer_ok();
		json_object_object_add(o, "id", json_object_new_string(st->id));
		json_object_object_add(
		    o, "removed", json_object_new_boolean(1));
		log_info(
		    "control: sandbox %.12s stopped by the operator", st->id);
	}
	client_send(st->c, o);
	client_ready(st->c);
	client_unref(st->c);
	free(st->id);
	free(st);
}

static int
cmd_stop(struct cclient *c, const char *key)
{
	struct stopreq *st;
	struct sandbox *sb;
	const char *why;

	if ((sb = control_resolve(key, &why)) == NULL) {
		client_send(c, resolve_error(key, why));
		return 0;
	}
	if (sb->state != SB_READY || sb->id == NULL) {
		client_send(c,
		    answer_error("busy", "sandbox %.63s is %s; try again later",
		        sb->id != NULL ? sb->id : sb->name, state_name(sb)));
		return 0;
	}
	st = xcalloc(1, sizeof *st);
	st->c = c;
	c->refs++;
	st->id = xstrdup(sb->id);
	sandbox_destroy(sb, stop_done, st);
	return 1;
}

/* logs: the activity log from the sandbox's worker, as the
 * containers://{id}/logs resource has it; with follow, what it adds. */
struct logreq {
	struct cclient *c;
	struct sandbox *sb;
	struct evbuffer *text;
	int first; /* the answer to the request, not news */
	int follow;
};

static int
logs_data(uint16_t flags, const char *p, size_t len, void *arg)
{
	struct logreq *lr = arg;

	(void)flags;
	evbuffer_add(lr->text, p, len);
	return 0;
}

static void
logs_done(json_object *res, void *arg)
{
	struct logreq *lr = arg;
	struct cclient *c = lr->c;
	long long bytes, dropped;
	size_t len, skip = 0, outlen;
	json_object *o, *v;
	char *clean;

	bytes = json_object_get_int64(json_object_object_get(res, "bytes"));
	dropped = json_object_get_int64(json_object_object_get(res, "dropped"));
	len = evbuffer_get_length(lr->text);
	if (json_object_object_get_ex(res, "error", &v)) {
		if (lr->first)
			client_send(c, answer_error("failed",
			                   "the log could not be read: %s",
			                   json_object_get_string(v)));
		goto out;
	}
	/*
	 * News: skip what was sent.  The data is the worker's note of
	 * dropped bytes (when any), then the ring's bytes, which hold the
	 * log from offset dropped; a log shorter than what was seen is a
	 * new worker's, sent whole.
	 */
	if (!lr->first && bytes >= 0 && (size_t)bytes <= len &&
	    dropped + bytes >= c->seen) {
		skip = len - (size_t)bytes;
		if (c->seen > dropped)
			skip += (size_t)(c->seen - dropped);
	}
	c->seen = dropped + bytes;
	evbuffer_drain(lr->text, skip);
	len -= skip;
	clean = utf8_sanitize(
	    (const char *)evbuffer_pullup(lr->text, -1), len, &outlen);
	if (lr->first) {
		o = answer_ok();
		json_object_object_add(
		    o, "id", json_object_new_string(lr->sb->id));
	} else
		o = json_object_new_object();
	json_object_object_add(
	    o, "text", json_object_new_string_len(clean, (int)outlen));
	free(clean);
	if (lr->first || outlen > 0)
		client_send(c, o);
	else
		json_object_put(o);
out:
	c->reading = 0;
	if (lr->first && !lr->follow) {
		client_ready(c);
	} else if (lr->first && lr->follow && !c->dead && lr->sb->dead) {
		/* Removed while its log was read: nothing more will come. */
		o = json_object_new_object();
		json_object_object_add(o, "end",
		    json_object_new_string("the sandbox was removed"));
		client_send(c, o);
		if (!c->dead)
			c->closing = 1;
	} else if (lr->first && lr->follow && !c->dead) {
		/* Followed: any further byte from the client ends it, and
		 * it may wait for news as long as it likes. */
		c->follow = sandbox_ref(lr->sb);
		client_timeouts(c, 0);
		client_ready(c);
	}
	if (c->again && !c->dead && c->follow != NULL) {
		c->again = 0;
		logs_read(c, 0);
	}
	sandbox_unref(lr->sb);
	evbuffer_free(lr->text);
	client_unref(c);
	free(lr);
}

static void
logs_read_sb(struct cclient *c, struct sandbox *sb, int first, int follow)
{
	struct logreq *lr;
	json_object *op;

	lr = xcalloc(1, sizeof *lr);
	lr->c = c;
	c->refs++;
	lr->sb = sandbox_ref(sb);
	lr->text = evbuffer_new();
	lr->first = first;
	lr->follow = follow;
	c->reading = 1;
	op = json_object_new_object();
	json_object_object_add(op, "op", json_object_new_string(PROTO_OP_LOGS));
	wproc_call(sb->worker, op, logs_data, logs_done, lr);
	json_object_put(op);
}

static void
logs_read(struct cclient *c, int first)
{
	if (c->follow->dead || c->follow->worker == NULL)
		return; /* a new worker's news comes later */
	logs_read_sb(c, c->follow, first, 1);
}

static int
cmd_logs(struct cclient *c, const char *key, int follow)
{
	struct sandbox *sb;
	const char *why;

	if ((sb = control_resolve(key, &why)) == NULL) {
		client_send(c, resolve_error(key, why));
		return 0;
	}
	if (sb->id == NULL || sb->worker == NULL) {
		client_send(c,
		    answer_error("busy", "sandbox %.63s is %s; try again later",
		        sb->id != NULL ? sb->id : sb->name, state_name(sb)));
		return 0;
	}
	logs_read_sb(c, sb, 1, follow);
	return 1;
}

/* A sandbox's log grew: its followers read the news (and the
 * resources layer, which set the hook first, hears of it too). */
static void
control_logs_updated(struct sandbox *sb)
{
	struct cclient *c;

	if (prev_logs_updated != NULL)
		prev_logs_updated(sb);
	LIST_FOREACH(c, &cclients, entry)
	{
		if (c->follow != sb || c->dead)
			continue;
		if (c->reading)
			c->again = 1;
		else
			logs_read(c, 0);
	}
}

/* A followed sandbox went: its followers are told, then closed. */
static void
control_sandbox_event(struct sandbox *sb, enum sandbox_event ev)
{
	struct cclient *c;
	json_object *o;

	if (ev != SANDBOX_DESTROYED)
		return;
	LIST_FOREACH(c, &cclients, entry)
	{
		if (c->follow != sb || c->dead)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "end",
		    json_object_new_string("the sandbox was removed"));
		client_send(c, o);
		if (c->dead)
			continue;
		c->closing = 1;
		bufferevent_disable(c->bev, EV_READ);
	}
}

/* One request: 1 when its answer comes later (reading paused), else 0. */
static int
control_request(struct cclient *c, json_object *req)
{
	const char *cmd, *id = NULL;
	json_object *v;
	int follow = 0;

	cmd = json_object_get_string(json_object_object_get(req, "cmd"));
	if (json_object_object_get_ex(req, "id", &v) &&
	    json_object_is_type(v, json_type_string))
		id = json_object_get_string(v);
	if (json_object_object_get_ex(req, "follow", &v))
		follow = json_object_get_boolean(v);
	if (strcmp(cmd, "ls") == 0) {
		cmd_ls(c);
		return 1;
	}
	if (strcmp(cmd, "top") == 0) {
		cmd_top(c);
		return 0;
	}
	if (strcmp(cmd, "find") != 0 && strcmp(cmd, "logs") != 0 &&
	    strcmp(cmd, "stop") != 0) {
		client_send(c, answer_error("bad-request",
		                   "unknown command \"%.40s\" (ls, top, find, "
		                   "logs, stop)",
		                   cmd));
		return 0;
	}
	if (id == NULL || *id == '\0') {
		client_send(
		    c, answer_error("bad-request",
		           "%s needs \"id\": a sandbox's id or name", cmd));
		return 0;
	}
	if (strcmp(cmd, "find") == 0) {
		cmd_find(c, id);
		return 0;
	}
	if (strcmp(cmd, "stop") == 0)
		return cmd_stop(c, id);
	return cmd_logs(c, id, follow);
}

static void
control_read_cb(struct bufferevent *bev, void *arg)
{
	struct cclient *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	json_tokener *tok;
	json_object *req;
	size_t len;
	char *line;

	while (!c->dead && !c->closing) {
		if (c->follow != NULL || c->reading) {
			/* Following a log: the client says nothing more. */
			if (evbuffer_get_length(in) > 0)
				client_drop(c);
			return;
		}
		line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF);
		if (line == NULL) {
			if (evbuffer_get_length(in) > CONTROL_MAX_REQUEST) {
				log_warnx("control: a request over %d bytes; "
				          "client dropped",
				    CONTROL_MAX_REQUEST);
				client_drop(c);
			}
			return;
		}
		req = NULL;
		if (len <= CONTROL_MAX_REQUEST &&
		    (tok = json_tokener_new_ex(CONTROL_MAX_DEPTH)) != NULL) {
			req = json_tokener_parse_ex(tok, line, (int)len);
			if (json_tokener_get_error(tok) !=
			        json_tokener_success ||
			    json_tokener_get_parse_end(tok) != len) {
				json_object_put(req);
				req = NULL;
			}
			json_tokener_free(tok);
		}
		free(line);
		if (req == NULL ||
		    !json_object_is_type(req, json_type_object) ||
		    !json_object_is_type(
		        json_object_object_get(req, "cmd"), json_type_string)) {
			json_object_put(req);
			log_warnx(
			    "control: a request that is not a JSON object "
			    "with \"cmd\"; client dropped");
			client_drop(c);
			return;
		}
		c->asked = 1;
		if (control_request(c, req)) {
			/* One at a time: the next waits for this answer. */
			bufferevent_disable(bev, EV_READ);
			json_object_put(req);
			return;
		}
		json_object_put(req);
	}
}

static void
control_write_cb(struct bufferevent *bev, void *arg)
{
	struct cclient *c = arg;

	(void)bev;
	if (c->closing)
		client_drop(c);
}

static void
control_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct cclient *c = arg;

	(void)bev;
	if (what & BEV_EVENT_TIMEOUT)
		stats.control_dropped++;
	if ((what & BEV_EVENT_TIMEOUT) && (what & BEV_EVENT_READING))
		log_info("control: a client asked nothing for %d s; dropped",
		    CONTROL_IDLE_TIMEOUT);
	else if (what & BEV_EVENT_TIMEOUT)
		log_warnx("control: a client left its answers unread for "
		          "%d s; dropped",
		    CONTROL_WRITE_TIMEOUT);
	client_drop(c);
}

static void
client_drop(struct cclient *c)
{
	if (c->dead)
		return;
	c->dead = 1;
	LIST_REMOVE(c, entry);
	nclients--;
	bufferevent_free(c->bev);
	c->bev = NULL;
	if (c->follow != NULL) {
		sandbox_unref(c->follow);
		c->follow = NULL;
	}
	client_unref(c);
}

static void
control_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct cclient *c, *idle;
	struct ucred cred;
	socklen_t clen = sizeof cred;

	(void)l;
	(void)sa;
	(void)salen;
	(void)arg;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == -1 ||
	    clen != sizeof cred || (cred.uid != geteuid() && cred.uid != 0)) {
		log_warnx("control: a peer of another user (uid %d) refused",
		    clen == sizeof cred ? (int)cred.uid : -1);
		evutil_closesocket(fd);
		return;
	}
	/* Full: the oldest that never asked anything makes room (clients
	 * that only connect cannot keep the ones that ask out). */
	if (nclients >= CONTROL_MAX_CLIENTS) {
		idle = NULL;
		LIST_FOREACH(c, &cclients, entry)
		if (!c->asked && !c->closing)
			idle = c; /* the list is newest first */
		if (idle == NULL) {
			log_warnx("control: %d clients already; one more "
			          "refused",
			    CONTROL_MAX_CLIENTS);
			stats.control_dropped++;
			evutil_closesocket(fd);
			return;
		}
		log_info("control: %d clients already; one that asked "
		         "nothing dropped for a new one",
		    CONTROL_MAX_CLIENTS);
		stats.control_dropped++;
		client_drop(idle);
	}
	c = xcalloc(1, sizeof *c);
	c->refs = 1;
	c->bev = bufferevent_socket_new(sup.base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL) {
		evutil_closesocket(fd);
		free(c);
		return;
	}
	/* Above the cap plus a line, reading stops (nothing more is
	 * taken than a request may be); the read callback drops it. */
	bufferevent_setwatermark(c->bev, EV_READ, 0, CONTROL_MAX_REQUEST + 2);
	client_timeouts(c, 1);
	bufferevent_setcb(
	    c->bev, control_read_cb, control_write_cb, control_event_cb, c);
	bufferevent_enable(c->bev, EV_READ);
	LIST_INSERT_HEAD(&cclients, c, entry);
	nclients++;
}

/*
 * Sockets of servers gone (killed before they could remove theirs): the
 * ones nobody listens on, as the commands do when they find one.
 */
static void
control_sweep(const char *dir)
{
	char path[PATH_MAX], *end;
	struct sockaddr_un sun;
	struct dirent *de;
	DIR *d;
	long pid;
	int fd;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		errno = 0;
		pid = strtol(de->d_name, &end, 10);
		if (errno != 0 || end == de->d_name ||
		    strcmp(end, ".sock") != 0 || pid <= 0 ||
		    ctldir_socket(dir, pid, path, sizeof path) == -1)
			continue;
		memset(&sun, 0, sizeof sun);
		sun.sun_family = AF_UNIX;
		memcpy(sun.sun_path, path, strlen(path) + 1);
		if ((fd = socket(AF_UNIX,
		         SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1)
			break;
		if (connect(fd, (struct sockaddr *)&sun, sizeof sun) == -1 &&
		    errno == ECONNREFUSED && unlink(path) == 0)
			log_debug("control: removed %s, a server gone", path);
		close(fd);
	}
	closedir(d);
}

/*
 * Listen on the control socket (--control on): PID.sock in the control
 * directory, made 0700 if need be and refused unless private.  0, or -1
 * (the server runs on without one, said so).  The socket is bound as
 * .PID.new (of the same length), listens, and only then is renamed
 * PID.sock: another server's sweep takes a PID.sock that refuses a
 * connection for a dead server's, and removed ours between its bind and
 * its listen (two servers started at once on a busy machine).
 */
int
control_start(void)
{
	char dir[PATH_MAX], err[PATH_MAX + 128], tmp_path[PATH_MAX];
	struct sockaddr_un sun;
	mode_t old;
	int fd;

	if (!sup.conf->control)
		return 0;
	if (ctldir_path(sup.conf->control_dir, dir, sizeof dir) == -1 ||
	    ctldir_socket(dir, (long)getpid(), sock_path, sizeof sock_path) ==
	        -1) {
		log_warnx("control: the control directory's path is too long "
		          "for a socket; no control socket (--control-dir)");
		return -1;
	}
	if (privdir_check(dir, 1, err, sizeof err) == -1) {
		log_warnx("control: %s; no control socket", err);
		sock_path[0] = '\0';
		return -1;
	}
	control_sweep(dir);
	if (snprintf(tmp_path, sizeof tmp_path, "%s/.%ld.new", dir,
	        (long)getpid()) >= (int)sizeof tmp_path) {
		sock_path[0] = '\0';
		return -1; /* not reached: of sock_path's length */
	}
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, tmp_path, strlen(tmp_path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	         0)) == -1) {
		log_warn("control: socket");
		sock_path[0] = '\0';
		return -1;
	}
	/* Those of our pid are a dead server's: this pid is ours now. */
	unlink(tmp_path);
	unlink(sock_path);
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof sun) == -1) {
		umask(old);
		log_warn("control: bind %s", tmp_path);
		close(fd);
		sock_path[0] = '\0';
		return -1;
	}
	umask(old);
	if (chmod(tmp_path, 0600) == -1 || listen(fd, 16) == -1 ||
	    rename(tmp_path, sock_path) == -1 ||
	    (listener = evconnlistener_new(sup.base, control_accept_cb, NULL,
	         LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd)) ==
	        NULL) {
		log_warn("control: listen %s", sock_path);
		close(fd);
		unlink(tmp_path);
		unlink(sock_path);
		sock_path[0] = '\0';
		return -1;
	}
	/* Out of descriptors, a peer waiting must not make the loop spin. */
	listener_rest = listenrest_new(listener, "control");
	prev_logs_updated = sandbox_logs_updated;
	sandbox_logs_updated = control_logs_updated;
	sandbox_listen(control_sandbox_event);
	log_info("control socket %s", sock_path);
	return 0;
}

/* At exit: every client dropped, the socket removed. */
void
control_stop(void)
{
	while (!LIST_EMPTY(&cclients))
		client_drop(LIST_FIRST(&cclients));
	if (listener != NULL) {
		listenrest_free(listener_rest);
		listener_rest = NULL;
		evconnlistener_free(listener);
		listener = NULL;
	}
	if (sock_path[0] != '\0') {
		unlink(sock_path);
		sock_path[0] = '\0';
	}
	if (sandbox_logs_updated == control_logs_updated)
		sandbox_logs_updated = prev_logs_updated;
}
