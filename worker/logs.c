/*
 * The sandbox's activity log: the container's own output (followed for
 * the worker's lifetime) and every exec's command,
 * output and exit, one timestamped line each, in a ring of a fixed size
 * (the oldest lines go first, and the text says how much went).  The
 * supervisor reads it (op "logs") and learns of news (PROTO_NOTIFY,
 * coalesced) for subscribers of containers://{id}/logs.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "engine.h"
#include "log.h"
#include "proto.h"
#include "worker.h"
#include "xmalloc.h"

#define LOGS_NOTIFY_MS 250

static struct {
	char *buf;
	size_t cap, start, len; /* ring: len bytes from start */
	long long dropped; /* bytes that went for space */
	int partial; /* the last line has no newline yet */
	int dirty; /* news since the last notification */
	struct event *timer;
	struct engine_req *req;
} logs;

static void
ring_put(const char *p, size_t n)
{
	size_t end, k;

	if (n >= logs.cap) {
		logs.dropped += (long long)(logs.len + n - logs.cap);
		p += n - logs.cap;
		n = logs.cap;
		logs.start = logs.len = 0;
	}
	if (logs.len + n > logs.cap) {
		k = logs.len + n - logs.cap;
		logs.start = (logs.start + k) % logs.cap;
		logs.len -= k;
		logs.dropped += (long long)k;
	}
	while (n > 0) {
		end = (logs.start + logs.len) % logs.cap;
		k = logs.cap - end < n ? logs.cap - end : n;
		memcpy(logs.buf + end, p, k);
		logs.len += k;
		p += k;
		n -= k;
	}
}

static void
logs_notify_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	json_object *o;

	(void)fd;
	(void)what;
	if (!logs.dirty)
		return;
	logs.dirty = 0;
	o = json_object_new_object();
	json_object_object_add(o, "event", json_object_new_string("logs"));
	worker_send_json(w, PROTO_NOTIFY, 0, o);
	json_object_put(o);
}

static void
logs_touch(void)
{
	struct timeval tv = {0, LOGS_NOTIFY_MS * 1000};

	if (!logs.dirty && logs.timer != NULL)
		evtimer_add(logs.timer, &tv);
	logs.dirty = 1;
}

/* Text, split into lines each with a timestamp and the source's tag. */
void
logs_add(const char *tag, const char *p, size_t len)
{
	struct timespec now;
	struct tm tm;
	char pre[96];
	const char *nl;
	size_t n;
	int m;

	if (logs.buf == NULL || len == 0)
		return;
	while (len > 0) {
		if (!logs.partial) {
			clock_gettime(CLOCK_REALTIME, &now);
			gmtime_r(&now.tv_sec, &tm);
			m = (int)strftime(
			    pre, sizeof pre, "%Y-%m-%dT%H:%M:%S", &tm);
			m += snprintf(pre + m, sizeof pre - (size_t)m,
			    ".%03ldZ %s| ", now.tv_nsec / 1000000, tag);
			ring_put(pre, (size_t)m);
		}
		nl = memchr(p, '\n', len);
		n = nl != NULL ? (size_t)(nl - p) + 1 : len;
		ring_put(p, n);
		logs.partial = nl == NULL;
		p += n;
		len -= n;
	}
	logs_touch();
}

void
logs_addf(const char *tag, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof buf - 2)
		n = sizeof buf - 2;
	buf[n++] = '\n';
	if (logs.partial)
		logs_add(tag, "\n", 1);
	logs_add(tag, buf, (size_t)n);
}

static void
logs_container_out(int stream, const char *p, size_t len, void *arg)
{
	(void)arg;
	logs_add(
	    stream == ENGINE_STDERR ? "container stderr" : "container stdout",
	    p, len);
}

static void
logs_done_cb(const struct engine_resp *resp, void *arg)
{
	(void)arg;
	logs.req = NULL;
	if (resp->error != NULL)
		log_warnx(
		    "%s: container log stream: %s", __func__, resp->error);
}

/* Keep the ring and follow the container's own log stream. */
void
logs_start(struct worker *w, size_t cap)
{
	logs.cap = cap;
	logs.buf = xmalloc(cap);
	logs.timer = evtimer_new(w->base, logs_notify_cb, w);
	logs.req = engine_container_logs(
	    w->engine, w->container, logs_container_out, logs_done_cb, w);
}

void
logs_stop(void)
{
	engine_req_cancel(logs.req);
	if (logs.timer != NULL)
		event_free(logs.timer);
	free(logs.buf);
	memset(&logs, 0, sizeof logs);
}

/* PROTO_CALL "logs": the ring as PROTO_DATA, then {bytes, dropped}. */
void
logs_read(struct worker *w, uint32_t reqid)
{
	json_object *r;
	size_t first, n, off;

	if (logs.dropped > 0) {
		char note[128];
		int m = snprintf(note, sizeof note,
		    "[... %lld bytes of older activity dropped (the log "
		    "keeps the last %zu bytes) ...]\n",
		    logs.dropped, logs.cap);

		worker_send(w, PROTO_DATA, PROTO_F_STDOUT, reqid, reqid, note,
		    (size_t)m);
	}
	first =
	    logs.cap - logs.start < logs.len ? logs.cap - logs.start : logs.len;
	for (off = 0; off < logs.len; off += n) {
		n = off < first ? first - off : logs.len - off;
		if (n > PROTO_DATA_CHUNK)
			n = PROTO_DATA_CHUNK;
		worker_send(w, PROTO_DATA, PROTO_F_STDOUT, reqid, reqid,
		    off < first ? logs.buf + logs.start + off
		                : logs.buf + (off - first),
		    n);
	}
	r = json_object_new_object();
	json_object_object_add(
	    r, "bytes", json_object_new_int64((int64_t)logs.len));
	json_object_object_add(
	    r, "dropped", json_object_new_int64(logs.dropped));
	worker_send_json(w, PROTO_RESULT, reqid, r);
	json_object_put(r);
}
