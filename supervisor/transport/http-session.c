/*
 * MCP sessions over Streamable HTTP: POST, GET and DELETE of /mcp.
 *
 * A POST carries one JSON-RPC message.  Notifications and responses are
 * answered 202.  A request goes to the protocol layer at once; if its
 * response comes back before mcp_handle_line() returns, it is sent as
 * application/json.  Otherwise the reply becomes an SSE stream that
 * carries the request's progress notifications and then its response,
 * and ends.  A GET opens the session's standalone stream (stream 0),
 * which carries every other notification.
 *
 * Every SSE event gets the id "<n>-<stream>": n counts up through the
 * session, so ids are unique across streams, and the stream says where a
 * Last-Event-ID resumes.  Events are kept per session (the newest
 * HTTP_EVENTS_MAX, at most HTTP_EVENTS_BYTES) whether or not a connection
 * was there to take them, so a GET with Last-Event-ID replays what
 * followed on that stream and, if the stream is still running, takes it
 * over.  A client that drops a stream does not cancel its call.
 *
 * Most clients never send DELETE.  A session with no request running and
 * no GET stream open ends after --session-idle seconds, its sandboxes
 * with it (not the detached ones).  When the table is full
 * (--max-sessions), an initialize ends the longest-idle session that has
 * no request running, before any 503.  Ending a session frees its HTTP
 * side at once (nothing names it but the table); the protocol layer's
 * session lives on, closing, until its calls are answered (mcp.c).
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "clock.h"
#include "config.h"
#include "core.h"
#include "http-int.h"
#include "log.h"
#include "mcp.h"
#include "random.h"
#include "sandbox.h"
#include "transport.h"
#include "xmalloc.h"

/* One SSE event kept for resumption. */
struct hevent {
	uint64_t n;
	unsigned int stream;
	char *data; /* the JSON message */
	size_t len;
	TAILQ_ENTRY(hevent) entry;
};

/*
 * A stream: the reply to one POSTed request (num > 0; it lives until the
 * request's response was produced), or the standalone stream of a GET
 * (num 0; it lives while the GET's connection does).
 */
struct hstream {
	struct hsession *hs;
	unsigned int num;
	struct evhttp_request *req; /* the connection carrying it, or NULL */
	json_object *rpc_id; /* the request's id (POST) */
	json_object *token; /* its progressToken (POST), or NULL */
	json_object *held; /* messages while the reply type is undecided */
	TAILQ_ENTRY(hstream) entry;
};

struct hsession {
	char id[2 * HTTP_SID_BYTES + 1];
	struct session *sess;
	struct hstream *get; /* the standalone stream, while a GET is open */
	TAILQ_HEAD(, hstream) streams; /* POST streams still running */
	TAILQ_HEAD(, hevent) events;
	size_t nevents, event_bytes;
	uint64_t last_event; /* the last n given */
	unsigned int last_stream; /* the last stream number given */
	struct event *idle;
	long long last_seen_ns; /* the last request (clock_ns()) */
	TAILQ_ENTRY(hsession) entry;
};

static TAILQ_HEAD(, hsession) hsessions = TAILQ_HEAD_INITIALIZER(hsessions);
static int nhsessions;
static struct event *keepalive_ev;
static long long ended_idle, evicted; /* for /metrics */

/* HTTP sessions open now. */
int
http_sessions_open(void)
{
	return nhsessions;
}

/* --- events --- */

static void
hevent_free(struct hsession *hs, struct hevent *ev)
{
	TAILQ_REMOVE(&hs->events, ev, entry);
	hs->nevents--;
	hs->event_bytes -= ev->len;
	free(ev->data);
	free(ev);
}

static void
hevents_clear(struct hsession *hs)
{
	struct hevent *ev;

	/* Each hevent_free() unlinks the head. */
	while ((ev = TAILQ_FIRST(&hs->events)) != NULL)
		hevent_free(hs, ev); // NOLINT(clang-analyzer-unix.Malloc)
}

/* Keep an event, dropping the oldest beyond the bounds (never itself). */
static struct hevent *
event_keep(struct hsession *hs, unsigned int stream, const char *s, size_t len)
{
	struct hevent *ev, *old;

	ev = xcalloc(1, sizeof *ev);
	ev->n = ++hs->last_event;
	ev->stream = stream;
	ev->data = xmalloc(len + 1);
	memcpy(ev->data, s, len);
	ev->data[len] = '\0';
	ev->len = len;
	TAILQ_INSERT_TAIL(&hs->events, ev, entry);
	hs->nevents++;
	hs->event_bytes += len;
	while ((hs->nevents > HTTP_EVENTS_MAX ||
	           hs->event_bytes > HTTP_EVENTS_BYTES) &&
	       (old = TAILQ_FIRST(&hs->events)) != ev)
		hevent_free(hs, old); // NOLINT(clang-analyzer-unix.Malloc)
	return ev;
}

/* --- SSE --- */

static void
sse_write_event(struct evhttp_request *req, const struct hevent *ev)
{
	struct evbuffer *b;

	b = evbuffer_new();
	evbuffer_add_printf(
	    b, "id: %" PRIu64 "-%u\nevent: message\ndata: ", ev->n, ev->stream);
	evbuffer_add(b, ev->data, ev->len);
	evbuffer_add(b, "\n\n", 2);
	evhttp_send_reply_chunk(req, b);
	evbuffer_free(b);
}

static void sse_closed(struct evhttp_connection *, void *);

/*
 * Start an SSE reply on req for stream st (NULL: a replay that ends at
 * once).  A fresh stream of a 2025-11-25 session begins with a priming
 * event (an id, no data) and retry:, a resumed one with retry: alone (a
 * new id would skip what is about to be replayed).
 */
static void
sse_start(struct hsession *hs, struct hstream *st, struct evhttp_request *req,
    unsigned int num, int fresh)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	struct evhttp_connection *evcon;
	struct timeval tv = {sup.conf->http_timeout, 0};
	struct evbuffer *b;

	evhttp_add_header(out, "Content-Type", "text/event-stream");
	evhttp_add_header(out, "Cache-Control", "no-cache");
	evhttp_add_header(out, "X-Accel-Buffering", "no");
	http_count(200);
	evhttp_send_reply_start(req, 200, "OK");
	if (st != NULL) {
		st->req = req;
		evcon = evhttp_request_get_connection(req);
		http_conn_closecb(evcon, sse_closed, st);
		/* A stream may be quiet for long; a client that stops
		 * reading is still dropped by the write timeout. */
		bufferevent_set_timeouts(
		    evhttp_connection_get_bufferevent(evcon), NULL, &tv);
	}
	if (strcmp(hs->sess->version, "2025-11-25") != 0)
		return;
	b = evbuffer_new();
	if (fresh)
		evbuffer_add_printf(
		    b, "id: %" PRIu64 "-%u\n", ++hs->last_event, num);
	evbuffer_add_printf(b, "retry: %d\n", HTTP_SSE_RETRY_MS);
	if (fresh)
		evbuffer_add_printf(b, "data:\n");
	evbuffer_add(b, "\n", 1);
	evhttp_send_reply_chunk(req, b);
	evbuffer_free(b);
}

/* End a stream's connection (the stream itself stays). */
static void
sse_end(struct hstream *st)
{
	struct evhttp_request *req = st->req;
	struct evhttp_connection *evcon;

	if (req == NULL)
		return;
	st->req = NULL;
	if ((evcon = evhttp_request_get_connection(req)) != NULL) {
		http_conn_closecb(evcon, NULL, NULL);
		evhttp_connection_set_timeout(
		    evcon, (int)sup.conf->http_timeout);
	}
	evhttp_send_reply_end(req);
}

static void
stream_free(struct hstream *st)
{
	sse_end(st);
	json_object_put(st->rpc_id);
	json_object_put(st->token);
	json_object_put(st->held);
	free(st);
}

/* The connection of a stream went away (the client, or a timeout). */
static void
sse_closed(struct evhttp_connection *evcon, void *arg)
{
	struct hstream *st = arg;
	struct evhttp_request *req = st->req;
	struct hsession *hs = st->hs;

	(void)evcon;
	st->req = NULL;
	/* evhttp let go of a request that was still being answered: it
	 * is ours to free. */
	if (req != NULL && evhttp_request_get_connection(req) == NULL)
		evhttp_send_reply_end(req);
	log_debug(
	    "session %.8s: stream %u lost its connection", hs->id, st->num);
	if (st == hs->get) {
		hs->get = NULL;
		stream_free(st);
	}
}

/* Replay the kept events of a stream after event n. */
static void
sse_replay(struct hsession *hs, struct evhttp_request *req, unsigned int num,
    uint64_t n)
{
	struct hevent *ev;

	TAILQ_FOREACH(ev, &hs->events, entry)
	if (ev->stream == num && ev->n > n)
		sse_write_event(req, ev);
}

static void
sse_comment(struct evhttp_request *req)
{
	struct evbuffer *b;

	b = evbuffer_new();
	evbuffer_add(b, ": keepalive\n\n", 13);
	evhttp_send_reply_chunk(req, b);
	evbuffer_free(b);
}

/* Comments keep proxies and clients from timing out quiet streams. */
static void
keepalive_cb(evutil_socket_t fd, short what, void *arg)
{
	struct hsession *hs;
	struct hstream *st;

	(void)fd;
	(void)what;
	(void)arg;
	TAILQ_FOREACH(hs, &hsessions, entry)
	{
		if (hs->get != NULL && hs->get->req != NULL)
			sse_comment(hs->get->req);
		TAILQ_FOREACH(st, &hs->streams, entry)
		if (st->req != NULL)
			sse_comment(st->req);
	}
}

/* --- routing of the protocol layer's messages --- */

static int
is_response(json_object *msg)
{
	return !json_object_object_get_ex(msg, "method", NULL) &&
	       json_object_object_get_ex(msg, "id", NULL);
}

/* The POST stream a message belongs to, or NULL for the standalone one. */
static struct hstream *
route(struct hsession *hs, json_object *msg)
{
	json_object *m, *p, *v;
	struct hstream *st;

	if (!json_object_object_get_ex(msg, "method", &m)) {
		if (!json_object_object_get_ex(msg, "id", &v) || v == NULL)
			return NULL;
		TAILQ_FOREACH(st, &hs->streams, entry)
		if (json_object_equal(st->rpc_id, v))
			return st;
		return NULL;
	}
	if (strcmp(json_object_get_string(m), "notifications/progress") != 0 ||
	    !json_object_object_get_ex(msg, "params", &p) ||
	    !json_object_object_get_ex(p, "progressToken", &v) || v == NULL)
		return NULL;
	TAILQ_FOREACH(st, &hs->streams, entry)
	if (st->token != NULL && json_object_equal(st->token, v))
		return st;
	return NULL;
}

/*
 * Put a message (taken) on a stream; a response ends a POST stream (and
 * frees it): then 1.
 */
static int
stream_emit(struct hsession *hs, struct hstream *st, json_object *msg)
{
	const struct hevent *ev;
	struct evhttp_request *req;
	const char *s;
	size_t len;
	int response = is_response(msg);

	s = json_object_to_json_string_length(
	    msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	if (st == NULL) {
		ev = event_keep(hs, 0, s, len);
		req = hs->get != NULL ? hs->get->req : NULL;
	} else {
		ev = event_keep(hs, st->num, s, len);
		req = st->req;
	}
	if (req != NULL)
		sse_write_event(req, ev);
	json_object_put(msg);
	if (st == NULL || !response)
		return 0;
	TAILQ_REMOVE(&hs->streams, st, entry);
	stream_free(st);
	return 1;
}

/* The session's send(): where the protocol layer's messages go. */
static void
hs_send(struct session *sess, json_object *msg)
{
	struct hsession *hs = sess->transport;
	struct hstream *st;

	if (hs == NULL) { /* the transport has stopped */
		json_object_put(msg);
		return;
	}
	st = route(hs, msg);
	if (st != NULL && st->held != NULL) {
		json_object_array_add(st->held, msg);
		return;
	}
	(void)stream_emit(hs, st, msg);
}

/* The running POST stream of request rid, or NULL. */
static struct hstream *
stream_of(struct hsession *hs, json_object *rid)
{
	struct hstream *st;

	TAILQ_FOREACH(st, &hs->streams, entry)
	if (json_object_equal(st->rpc_id, rid))
		return st;
	return NULL;
}

/*
 * The session's send_for(): a message that belongs to request rid goes
 * on that request's stream while it runs (the spec's messages "related
 * to the originating request"), else where hs_send() puts it.
 */
static void
hs_send_for(struct session *sess, json_object *rid, json_object *msg)
{
	struct hsession *hs = sess->transport;
	struct hstream *st;

	if (hs == NULL || (st = stream_of(hs, rid)) == NULL) {
		hs_send(sess, msg);
		return;
	}
	if (st->held != NULL)
		json_object_array_add(st->held, msg);
	else
		(void)stream_emit(hs, st, msg);
}

/*
 * The session's drop_stream(): end the connection of request rid's
 * stream, not the request; its events are kept for the client's GET
 * with Last-Event-ID.  A stream whose reply type is still undecided
 * (inside mcp_handle_line()) is left alone.
 */
static void
hs_drop_stream(struct session *sess, json_object *rid)
{
	struct hsession *hs = sess->transport;
	struct hstream *st;

	if (hs != NULL && (st = stream_of(hs, rid)) != NULL && st->held == NULL)
		sse_end(st);
}

/* --- sessions --- */

/* Unlinks and frees an HTTP session with its streams and events. */
static void
hsession_free(struct hsession *hs)
{
	struct hstream *st;

	TAILQ_REMOVE(&hsessions, hs, entry);
	nhsessions--;
	if (hs->get != NULL)
		stream_free(hs->get);
	while ((st = TAILQ_FIRST(&hs->streams)) != NULL) {
		TAILQ_REMOVE(&hs->streams, st, entry);
		stream_free(st);
	}
	hevents_clear(hs);
	event_free(hs->idle);
	explicit_bzero(hs->id, sizeof hs->id);
	free(hs);
}

static void
hsession_close(struct hsession *hs, const char *why)
{
	struct session *sess = hs->sess;

	log_info("session %.8s ended (%s)", hs->id, why);
	/* Nothing more goes to the freed transport. */
	if (sess != NULL)
		sess->transport = NULL;
	hsession_free(hs);
	/* Its calls are cancelled (nothing more is sent) and its sandboxes
	 * removed; the protocol layer frees it. */
	if (sess != NULL)
		mcp_session_close(sess);
}

static int
hsession_busy(struct hsession *hs)
{
	/* A task's call runs with no stream of its own. */
	return (hs->get != NULL && hs->get->req != NULL) ||
	       !TAILQ_EMPTY(&hs->streams) || hs->sess->ncalls > 0;
}

static void
hsession_idle_cb(evutil_socket_t fd, short what, void *arg)
{
	struct hsession *hs = arg;
	struct timeval tv = {sup.conf->session_idle, 0};

	(void)fd;
	(void)what;
	if (hsession_busy(hs)) {
		evtimer_add(hs->idle, &tv);
		return;
	}
	ended_idle++;
	hsession_close(hs, "idle: no request and no open stream for "
	                   "--session-idle");
}

static void
hsession_touch(struct hsession *hs)
{
	struct timeval tv = {sup.conf->session_idle, 0};

	hs->last_seen_ns = clock_ns();
	evtimer_add(hs->idle, &tv);
}

/*
 * The table is full: end the session idle longest that runs no request
 * (an open GET stream does not save it), to make room; 0 if one went.
 */
static int
hsession_evict(void)
{
	struct hsession *hs, *oldest = NULL;

	TAILQ_FOREACH(hs, &hsessions, entry)
	{
		if (!TAILQ_EMPTY(&hs->streams) ||
		    (hs->sess != NULL && !TAILQ_EMPTY(&hs->sess->calls)))
			continue;
		if (oldest == NULL || hs->last_seen_ns < oldest->last_seen_ns)
			oldest = hs;
	}
	if (oldest == NULL)
		return -1;
	evicted++;
	log_warnx("session %.8s evicted: --max-sessions (%ld) reached and it "
	          "was the longest idle",
	    oldest->id, sup.conf->max_sessions);
	hsession_close(oldest, "evicted to make room");
	return 0;
}

/* This file's lines of /metrics. */
void
http_sessions_metrics(struct evbuffer *b)
{
	evbuffer_add_printf(b,
	    "# HELP mcp_sandboxd_sessions_ended_idle_total HTTP sessions "
	    "ended for --session-idle.\n"
	    "# TYPE mcp_sandboxd_sessions_ended_idle_total counter\n"
	    "mcp_sandboxd_sessions_ended_idle_total %lld\n"
	    "# HELP mcp_sandboxd_sessions_evicted_total HTTP sessions ended "
	    "to make room for a new one (--max-sessions).\n"
	    "# TYPE mcp_sandboxd_sessions_evicted_total counter\n"
	    "mcp_sandboxd_sessions_evicted_total %lld\n",
	    ended_idle, evicted);
}

static struct hsession *
hsession_new(void)
{
	struct hsession *hs;

	hs = xcalloc(1, sizeof *hs);
	random_hex(hs->id, HTTP_SID_BYTES);
	TAILQ_INIT(&hs->streams);
	TAILQ_INIT(&hs->events);
	hs->idle = evtimer_new(sup.base, hsession_idle_cb, hs);
	hs->sess = mcp_session_new(hs_send, hs);
	hs->sess->send_for = hs_send_for;
	hs->sess->drop_stream = hs_drop_stream;
	TAILQ_INSERT_TAIL(&hsessions, hs, entry);
	nhsessions++;
	hsession_touch(hs);
	return hs;
}

/* The session a request names: every id is compared in full. */
static struct hsession *
hsession_find(const char *sid)
{
	struct hsession *hs, *found = NULL;
	size_t len = strlen(sid);

	TAILQ_FOREACH(hs, &hsessions, entry)
	if (http_ct_equal(sid, len, hs->id, sizeof hs->id - 1))
		found = hs;
	return found;
}

/*
 * The session of a request that needs one: NULL after answering 400 (no
 * Mcp-Session-Id) or 404 (unknown or ended).
 */
static struct hsession *
hsession_of(struct evhttp_request *req)
{
	struct hsession *hs;
	const char *sid;

	sid = evhttp_find_header(
	    evhttp_request_get_input_headers(req), "Mcp-Session-Id");
	if (sid == NULL) {
		http_reply_error(req, 400, NULL, HTTP_RPC_BAD_REQUEST,
		    "Bad Request: Mcp-Session-Id header is required (send "
		    "initialize first)");
		return NULL;
	}
	if ((hs = hsession_find(sid)) == NULL) {
		http_reply_error(req, 404, NULL, HTTP_RPC_NO_SESSION,
		    "Session not found: it ended or never existed; "
		    "initialize a new one");
		return NULL;
	}
	hsession_touch(hs);
	return hs;
}

/* --- POST --- */

/* A cancelled request gets no response: its stream ends now. */
static void
stream_cancelled(struct hsession *hs, json_object *params)
{
	struct hstream *st;
	json_object *rid;

	if (params == NULL ||
	    !json_object_object_get_ex(params, "requestId", &rid) ||
	    rid == NULL)
		return;
	TAILQ_FOREACH(st, &hs->streams, entry)
	if (json_object_equal(st->rpc_id, rid)) {
		TAILQ_REMOVE(&hs->streams, st, entry);
		stream_free(st);
		return;
	}
}

static json_object *
progress_token(json_object *params)
{
	json_object *meta, *t;

	if (params == NULL ||
	    !json_object_object_get_ex(params, "_meta", &meta) ||
	    !json_object_is_type(meta, json_type_object) ||
	    !json_object_object_get_ex(meta, "progressToken", &t) || t == NULL)
		return NULL;
	return json_object_get(t);
}

/*
 * A request: to the protocol layer, then a JSON reply if it answered at
 * once, else an SSE stream.  initialize makes the session first.
 */
static void
post_request(struct hsession *hs, struct evhttp_request *req, const char *text,
    size_t len, const struct rpc_msg *m, int initialize)
{
	struct hstream *st;
	json_object *held, *first;
	size_t i, n;

	TAILQ_FOREACH(st, &hs->streams, entry)
	if (json_object_equal(st->rpc_id, m->id)) {
		http_reply_error(req, 400, m->id, RPC_INVALID_REQUEST,
		    "a request with this id is still running");
		return;
	}
	st = xcalloc(1, sizeof *st);
	st->hs = hs;
	st->num = ++hs->last_stream;
	st->rpc_id = json_object_get(m->id);
	st->token = progress_token(m->params);
	st->held = json_object_new_array();
	TAILQ_INSERT_TAIL(&hs->streams, st, entry);

	mcp_handle_line(hs->sess, text, len);
	/* The call keeps what it needs of the request (its arguments);
	 * the body itself goes now, not with the reply, which an SSE
	 * stream may hold open for as long as the call runs. */
	evbuffer_drain(evhttp_request_get_input_buffer(req), len);

	held = st->held;
	st->held = NULL;
	n = json_object_array_length(held);
	first = n > 0 ? json_object_array_get_idx(held, 0) : NULL;
	if (n == 1 && is_response(first)) {
		TAILQ_REMOVE(&hs->streams, st, entry);
		stream_free(st);
		if (initialize) {
			if (!json_object_object_get_ex(first, "result", NULL)) {
				/* No session came of it. */
				hsession_close(hs, "initialize failed");
			} else
				evhttp_add_header(
				    evhttp_request_get_output_headers(req),
				    "Mcp-Session-Id", hs->id);
		}
		http_reply_json(req, 200, json_object_get(first));
		json_object_put(held);
		return;
	}
	if (initialize) /* answered later: the session id goes now */
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Mcp-Session-Id", hs->id);
	sse_start(hs, st, req, st->num, 1);
	for (i = 0; i < n; i++)
		if (stream_emit(hs, st,
		        json_object_get(json_object_array_get_idx(held, i))))
			break; /* the stream is over (and freed) */
	json_object_put(held);
}

/*
 * POST /mcp: a message of a session (or the initialize that makes one);
 * requests answer on an SSE stream.
 */
void
http_post(struct evhttp_request *req)
{
	struct evbuffer *body = evhttp_request_get_input_buffer(req);
	struct rpc_msg m;
	struct hsession *hs;
	json_object *obj;
	const char *text, *why = NULL, *sid;
	size_t len = evbuffer_get_length(body);
	int code;

	text = len > 0 ? (const char *)evbuffer_pullup(body, -1) : "";
	if ((obj = rpc_parse(text, len, sup.conf->max_json_depth, &code)) ==
	    NULL) {
		http_reply_error(req, 400, NULL,
		    code == RPC_PARSE_ERROR ? RPC_PARSE_ERROR
		                            : RPC_INVALID_REQUEST,
		    code == RPC_PARSE_ERROR
		        ? RPC_PARSE_WHY
		        : "invalid request: a message is a JSON object");
		return;
	}
	if ((code = rpc_validate(obj, &m, &why)) != 0) {
		http_reply_error(req, 400, m.id, code, why);
		json_object_put(obj);
		return;
	}
	sid = evhttp_find_header(
	    evhttp_request_get_input_headers(req), "Mcp-Session-Id");
	if (m.kind == RPC_REQUEST && strcmp(m.method, "initialize") == 0) {
		if (sid != NULL)
			http_reply_error(req, 400, m.id, HTTP_RPC_BAD_REQUEST,
			    "Bad Request: initialize starts a new session; "
			    "send it without Mcp-Session-Id");
		else if (nhsessions >= sup.conf->max_sessions &&
		         hsession_evict() == -1)
			http_reply_error(req, 503, m.id, HTTP_RPC_BAD_REQUEST,
			    "too many sessions, each running a request (see "
			    "--max-sessions); end one with DELETE or retry "
			    "later");
		else if ((hs = hsession_new()) == NULL)
			http_reply_error(req, 500, m.id, RPC_INTERNAL_ERROR,
			    "cannot make a session id");
		else {
			log_info("session %.8s started", hs->id);
			post_request(hs, req, text, len, &m, 1);
		}
		json_object_put(obj);
		return;
	}
	if ((hs = hsession_of(req)) == NULL) {
		json_object_put(obj);
		return;
	}
	if (m.kind == RPC_REQUEST)
		post_request(hs, req, text, len, &m, 0);
	else {
		mcp_handle_line(hs->sess, text, len);
		if (m.kind == RPC_NOTIFICATION &&
		    strcmp(m.method, "notifications/cancelled") == 0)
			stream_cancelled(hs, m.params);
		http_reply(req, 202, NULL, NULL, 0);
	}
	json_object_put(obj);
}

/* --- GET --- */

/* "<n>-<stream>" of a Last-Event-ID this session gave out. */
static int
parse_event_id(struct hsession *hs, const char *s, uint64_t *n, unsigned *num)
{
	unsigned long long a;
	unsigned long b;
	char *end;

	errno = 0;
	a = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '-' || *s == '-')
		return -1;
	s = end + 1;
	b = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || *s == '-' ||
	    a > hs->last_event || b > hs->last_stream)
		return -1;
	*n = a;
	*num = (unsigned)b;
	return 0;
}

/*
 * GET /mcp: a session's own SSE stream, or a request's stream resumed with
 * Last-Event-ID.
 */
void
http_get(struct evhttp_request *req)
{
	struct hsession *hs;
	struct hstream *st;
	const char *last;
	unsigned int num;
	uint64_t n;

	if ((hs = hsession_of(req)) == NULL)
		return;
	last = evhttp_find_header(
	    evhttp_request_get_input_headers(req), "Last-Event-ID");
	if (last == NULL) {
		if (hs->get != NULL) {
			http_reply_error(req, 409, NULL, HTTP_RPC_BAD_REQUEST,
			    "Conflict: this session's GET stream is already "
			    "open");
			return;
		}
		st = xcalloc(1, sizeof *st);
		st->hs = hs;
		hs->get = st;
		sse_start(hs, st, req, 0, 1);
		return;
	}
	if (parse_event_id(hs, last, &n, &num) == -1) {
		http_reply_error(req, 400, NULL, HTTP_RPC_BAD_REQUEST,
		    "Bad Request: Last-Event-ID is not an event id of this "
		    "session");
		return;
	}
	if (num == 0) {
		/* The standalone stream, on this connection from now on. */
		if ((st = hs->get) == NULL) {
			st = xcalloc(1, sizeof *st);
			st->hs = hs;
			hs->get = st;
		}
		sse_end(st);
		sse_start(hs, st, req, 0, 0);
		sse_replay(hs, req, 0, n);
		return;
	}
	TAILQ_FOREACH(st, &hs->streams, entry)
	if (st->num == num)
		break;
	if (st != NULL) {
		/* Still running: this connection takes it over. */
		sse_end(st);
		sse_start(hs, st, req, num, 0);
		sse_replay(hs, req, num, n);
		return;
	}
	/* It ended: what is left of it, then the end. */
	sse_start(hs, NULL, req, num, 0);
	sse_replay(hs, req, num, n);
	evhttp_send_reply_end(req);
}

/* --- DELETE --- */

/* DELETE /mcp: the client ends its session. */
void
http_delete(struct evhttp_request *req)
{
	struct hsession *hs;

	if ((hs = hsession_of(req)) == NULL)
		return;
	hsession_close(hs, "DELETE");
	http_reply(req, 200, NULL, NULL, 0);
}

/* --- start and stop --- */

void
http_sessions_init(void)
{
	struct timeval tv = {HTTP_KEEPALIVE_S, 0};

	keepalive_ev = event_new(sup.base, -1, EV_PERSIST, keepalive_cb, NULL);
	evtimer_add(keepalive_ev, &tv);
}

/* At exit: end every stream; the sessions go with the process. */
void
http_sessions_stop(void)
{
	struct hsession *hs;

	/* Each hsession_free() unlinks the head. */
	while ((hs = TAILQ_FIRST(&hsessions)) != NULL) {
		// NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
		hs->sess->transport = NULL;
		hsession_free(hs);
	}
	if (keepalive_ev != NULL)
		event_free(keepalive_ev);
	keepalive_ev = NULL;
}
