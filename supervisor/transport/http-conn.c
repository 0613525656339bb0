/*
 * HTTP connections from accept() to close(): the gate evhttp cannot be in
 * libevent 2.1, which reads a whole request, body and all, before the
 * server sees any of it, and has no hook between the headers and the body.
 *
 * Every accepted socket gets a plain socket bufferevent of ours
 * (evhttp_set_bevcb) with a callback on its input buffer.  That callback
 * runs as the socket's bytes arrive, before evhttp's read callback: it
 * takes the new bytes out, reads each request's header block itself, and
 * gives evhttp a block only once it is whole, so that before evhttp sees a
 * request:
 *
 * - The Authorization header has been checked.  A request without the
 *   token reaches evhttp with its Content-Length and Transfer-Encoding
 *   taken out and "Connection: close" put in: evhttp hands it over with
 *   no body, http.c answers 401, and whatever body the client sends is
 *   dropped as it comes, never held.  Until the token is seen a header
 *   block may hold HTTP_PREAUTH_MAX bytes, not HTTP_MAX_HEADERS.
 * - Time is counted: the headers must be complete within
 *   --http-header-timeout seconds of the request's first byte, and its
 *   body must then average --http-min-rate bytes/s (after the same grace);
 *   a request slower than that is cut.
 *
 * What evhttp has been given and not yet read is bounded too: while it
 * writes a reply (an SSE stream for as long as the stream lasts) evhttp
 * keeps the socket readable, only to notice a close, and would let a
 * client pipeline requests into its input without end.  Past
 * HTTP_INPUT_MAX unread bytes the socket is no longer read (a read
 * watermark; evhttp sets none of its own), and TCP holds the client back.
 * evhttp leaves a body in its input until the whole of it is there, so
 * while one is passed the mark is raised by its length (a chunk's: at most
 * --max-line, as evhttp takes no larger body).
 *
 * A connection counts against --http-max-connections from accept() to its
 * close; past the limit the new one is told 503 and closed at once.
 *
 * When evhttp lets go of a connection (a reply with "Connection: close",
 * a cut, a refusal), it has shut down the socket's sending side; the
 * socket stays ours for HTTP_LINGER_MS more, reading and dropping, so that
 * a client still sending gets the answer rather than a reset.  At most
 * --http-max-connections sockets linger at once; past that one is closed
 * at once.
 *
 * A body sent with Transfer-Encoding: chunked has no length to pace here:
 * a connection that sent one with the token is passed through unread from
 * then on (every request on it is still checked for the token in http.c).
 */
#include <sys/queue.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

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
#include "sandbox.h"
#include "transport.h"
#include "xmalloc.h"

#define HTTP_PREAUTH_MAX (8 * 1024) /* a header block before the token */
#define HTTP_TICK_MS 500
#define HTTP_LINGER_MS 2000
/* evhttp's unread input: past it the socket is not read (see above). */
#define HTTP_INPUT_MAX (2 * HTTP_MAX_HEADERS)

enum hc_phase {
	HC_SETUP, /* accepted; evhttp sets its connection up; we hold a ref */
	HC_SERVE, /* evhttp's */
	HC_LINGER, /* evhttp let go; we hold a ref, read and drop */
};

enum hc_state {
	HC_HEAD, /* reading a header block (held) */
	HC_BODY, /* passing a body of known length */
	HC_TRUST, /* passing everything (a chunked body came with the token) */
	HC_DROP, /* dropping everything (a refused request's body, a cut) */
};

struct hconn {
	struct bufferevent *bev;
	struct evhttp_connection *evcon; /* in HC_SERVE */
	struct evbuffer_cb_entry *incb; /* on the input, in HC_SERVE */
	enum hc_phase phase;
	enum hc_state state;
	int passing; /* inside hconn_input(): its own changes */
	struct evbuffer *stage; /* new bytes not yet given to evhttp */
	struct evbuffer *head; /* the header block so far */
	struct evbuffer *framing; /* its Content-Length, Transfer-Encoding and
	                             Connection headers */
	int lines; /* of the block so far */
	int may_body; /* its method has a body for evhttp (not HEAD, TRACE) */
	int auth_seen, auth_ok, folded, chunked;
	int64_t clen; /* the first Content-Length, or -1 */
	uint64_t body_left, body_got;
	long long t_start, t_body; /* ms: first byte; end of the headers */
	long long t_linger; /* ms: when lingering ends */
	struct event *tick; /* setup, deadlines, the end of lingering */
	int refused; /* past --http-max-connections */
	int counted; /* in nconns: accepted, not refused, not let go of */
	int lingering; /* in nlinger */
	const char *cut; /* why it is being cut, or NULL */
	void (*closecb)(struct evhttp_connection *, void *);
	void *closearg;
	LIST_ENTRY(hconn) entry;
};

static LIST_HEAD(, hconn) hconns = LIST_HEAD_INITIALIZER(hconns);
static long nconns, nlinger, refused_total, cut_total, preauth_refused_total;

/* Connections served: from accept() until evhttp lets go of them. */
long
http_conn_count(void)
{
	return nconns;
}

/*
 * The gate's counters for /metrics: connections refused, cut, and refused
 * before a token.
 */
void
http_conn_stats(long *refused, long *cut, long *preauth)
{
	*refused = refused_total;
	*cut = cut_total;
	*preauth = preauth_refused_total;
}

/* --- the end of a connection --- */

/* Free c, and the socket with it unless evhttp has it. */
static void
hconn_free(struct hconn *c)
{
	if (c->phase != HC_SERVE) {
		if (c->incb != NULL)
			evbuffer_remove_cb_entry(
			    bufferevent_get_input(c->bev), c->incb);
		bufferevent_free(c->bev); /* our reference: the last */
	}
	LIST_REMOVE(c, entry);
	if (c->counted)
		nconns--;
	if (c->lingering)
		nlinger--;
	event_free(c->tick);
	evbuffer_free(c->stage);
	evbuffer_free(c->head);
	evbuffer_free(c->framing);
	free(c);
}

static void
hconn_tick_in(struct hconn *c, long long ms)
{
	struct timeval tv;

	if (ms < 0)
		ms = 0;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(c->tick, &tv);
}

/*
 * evhttp is freeing its connection (it shuts the socket's sending side
 * down after this): keep the socket a moment, from the loop.
 */
static void
hconn_closed(struct evhttp_connection *evcon, void *arg)
{
	struct hconn *c = arg;

	if (c->closecb != NULL)
		c->closecb(evcon, c->closearg);
	c->closecb = NULL;
	c->evcon = NULL;
	evbuffer_remove_cb_entry(bufferevent_get_input(c->bev), c->incb);
	c->incb = NULL;
	bufferevent_incref(c->bev);
	c->phase = HC_LINGER;
	if (c->counted)
		nconns--; /* a slot for another while this one lingers */
	c->counted = 0;
	c->t_linger = 0;
	event_active(c->tick, EV_TIMEOUT, 1);
}

static void
hconn_linger_read(struct bufferevent *bev, void *arg)
{
	struct evbuffer *in = bufferevent_get_input(bev);

	(void)arg;
	evbuffer_drain(in, evbuffer_get_length(in));
}

static void
hconn_linger_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	hconn_free(arg); /* EOF, an error or the read timeout */
}

/* The socket is ours: drop what comes until EOF or HTTP_LINGER_MS. */
static void
hconn_linger(struct hconn *c)
{
	struct timeval tv = {HTTP_LINGER_MS / 1000, 0};

	/* Lingering sockets are not counted as served: they are bounded
	 * apart, so that a flood of refusals cannot hold descriptors. */
	if (c->t_linger != 0 || bufferevent_getfd(c->bev) == -1 ||
	    nlinger >= sup.conf->http_max_connections) {
		hconn_free(c);
		return;
	}
	c->lingering = 1;
	nlinger++;
	c->t_linger = clock_ms() + HTTP_LINGER_MS;
	bufferevent_setcb(
	    c->bev, hconn_linger_read, NULL, hconn_linger_event, c);
	bufferevent_set_timeouts(c->bev, &tv, NULL);
	bufferevent_disable(c->bev, EV_WRITE);
	bufferevent_enable(c->bev, EV_READ);
	hconn_tick_in(c, HTTP_LINGER_MS);
}

/*
 * Past --http-max-connections: told so and closed before evhttp reads a
 * byte.  The answer goes straight to the socket (it is small; a client
 * whose socket buffer is full is not told).
 */
static void
hconn_refuse(struct hconn *c)
{
	static const char msg[] =
	    "HTTP/1.1 503 Service Unavailable\r\n"
	    "Content-Type: application/json\r\n"
	    "Retry-After: 1\r\n"
	    "Connection: close\r\n"
	    "Content-Length: 148\r\n\r\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,"
	    "\"message\":\"Service Unavailable: too many connections (see "
	    "--http-max-connections); retry later\"}}";
	evutil_socket_t fd = bufferevent_getfd(c->bev);

	refused_total++;
	http_count(503);
	c->state = HC_DROP;
	if (fd != -1)
		(void)send(
		    fd, msg, sizeof msg - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	/* evhttp drops it, as at a client's EOF (c lingers on). */
	bufferevent_trigger_event(c->bev, BEV_EVENT_READING | BEV_EVENT_EOF, 0);
}

/* --- setup and deadlines --- */

/*
 * Right after accept, from the loop: evhttp has made its connection
 * (its argument to the bufferevent's callbacks) or given up on it.
 */
static void
hconn_setup(struct hconn *c)
{
	void *evcon = NULL;

	bufferevent_getcb(c->bev, NULL, NULL, NULL, &evcon);
	if (evcon == NULL) {
		hconn_free(c); /* evhttp gave up: ours is the last reference */
		return;
	}
	c->phase = HC_SERVE;
	c->evcon = evcon;
	evhttp_connection_set_closecb(c->evcon, hconn_closed, c);
	bufferevent_decref(c->bev); /* evhttp's from here */
	if (c->refused)
		hconn_refuse(c);
	else if (c->cut != NULL)
		event_active(c->tick, EV_TIMEOUT, 1);
}

static void
hconn_tick(evutil_socket_t fd, short what, void *arg)
{
	struct hconn *c = arg;
	long long grace = sup.conf->http_header_timeout * 1000,
	          now = clock_ms();
	long long t;

	(void)fd;
	(void)what;
	switch (c->phase) {
	case HC_SETUP:
		hconn_setup(c);
		return;
	case HC_LINGER:
		hconn_linger(c);
		return;
	case HC_SERVE:
		break;
	}
	if (c->cut != NULL) {
		cut_total++;
		if (cut_total < 10 || cut_total % 100 == 0)
			log_info("http: connection cut: %s (%ld so far)",
			    c->cut, cut_total);
		/* evhttp drops it, as at a read timeout (c lingers on). */
		bufferevent_trigger_event(
		    c->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, 0);
		return;
	}
	if (c->state == HC_HEAD && c->t_start != 0 &&
	    now - c->t_start > grace) {
		c->cut = "headers not complete within --http-header-timeout";
		event_active(c->tick, EV_TIMEOUT, 1);
		return;
	}
	if (c->state == HC_BODY && (t = now - c->t_body) > grace &&
	    c->body_got < (uint64_t)((t - grace) / 1000) *
	                      (uint64_t)sup.conf->http_min_rate) {
		c->cut = "body slower than --http-min-rate";
		event_active(c->tick, EV_TIMEOUT, 1);
		return;
	}
	if (c->t_start != 0)
		hconn_tick_in(c, HTTP_TICK_MS);
}

/* Cut from the loop (tick), never inside the callback that found why. */
static void
hconn_cut(struct hconn *c, const char *why)
{
	if (c->cut == NULL)
		c->cut = why;
	c->state = HC_DROP;
	event_active(c->tick, EV_TIMEOUT, 1);
}

/* A request's first byte: its clock starts. */
static void
hconn_request_start(struct hconn *c)
{
	c->t_start = clock_ms();
	hconn_tick_in(c, HTTP_TICK_MS);
}

/*
 * What evhttp may hold unread: HTTP_INPUT_MAX past a body of len (no
 * body over --max-line is read: evhttp answers 413).
 */
static void
hconn_input_max(struct hconn *c, uint64_t len)
{
	if (len > (uint64_t)sup.conf->max_line)
		len = (uint64_t)sup.conf->max_line;
	bufferevent_setwatermark(
	    c->bev, EV_READ, 0, (size_t)len + HTTP_INPUT_MAX);
}

/* The request's bytes are all in: no deadline until the next one. */
static void
hconn_request_read(struct hconn *c)
{
	if (c->state == HC_BODY)
		hconn_input_max(c, 0);
	c->state = HC_HEAD;
	c->t_start = c->t_body = 0;
	c->body_got = c->body_left = 0;
	if (c->cut == NULL)
		evtimer_del(c->tick);
}

/* --- the header block --- */

static int
header_is(const char *line, size_t len, const char *name, const char **val)
{
	size_t n = strlen(name);

	if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
		return 0;
	*val = line + n + 1;
	while (**val == ' ' || **val == '\t')
		(*val)++;
	return 1;
}

static int
method_may_have_body(const char *line)
{
	static const char *const methods[] = {"POST ", "PUT ", "PATCH ", "GET ",
	    "DELETE ", "OPTIONS ", "CONNECT "};
	size_t i;

	for (i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if (strncmp(line, methods[i], strlen(methods[i])) == 0)
			return 1;
	return 0;
}

/* One line of the block (without its end of line), line[len] is NUL. */
static void
head_line(struct hconn *c, const char *line, size_t len)
{
	const char *v;
	char *end;
	long long n;

	if (c->lines++ == 0) {
		/* As evhttp 2.1 reads a body: not for HEAD, TRACE or a method
		 * it does not know (the case matters), whatever the headers
		 * say. */
		c->may_body = method_may_have_body(line);
		evbuffer_add(c->head, line, len);
		evbuffer_add(c->head, "\r\n", 2);
		return;
	}
	if (line[0] == ' ' || line[0] == '\t')
		c->folded = 1; /* obsolete folding: never with a token */
	if (header_is(line, len, "Authorization", &v)) {
		/* One, and the right one; a second makes it ambiguous. */
		c->auth_ok = !c->auth_seen && http_auth_value_ok(v);
		c->auth_seen = 1;
	} else if (header_is(line, len, HTTP_AMBIGUOUS_HEADER, &v)) {
		return; /* ours to set, never a client's */
	} else if (header_is(line, len, "Content-Length", &v)) {
		errno = 0;
		n = strtoll(v, &end, 10);
		if (c->clen < 0 && errno == 0 && end != v && n >= 0)
			c->clen = n;
		evbuffer_add(c->framing, line, len);
		evbuffer_add(c->framing, "\r\n", 2);
		return;
	} else if (header_is(line, len, "Transfer-Encoding", &v)) {
		c->chunked = 1;
		evbuffer_add(c->framing, line, len);
		evbuffer_add(c->framing, "\r\n", 2);
		return;
	} else if (header_is(line, len, "Connection", &v)) {
		/* Replaced when the request is refused: evhttp heeds the
		 * first Connection header only. */
		evbuffer_add(c->framing, line, len);
		evbuffer_add(c->framing, "\r\n", 2);
		return;
	}
	evbuffer_add(c->head, line, len);
	evbuffer_add(c->head, "\r\n", 2);
}

/*
 * The blank line: the block goes to evhttp, whole if the request may be
 * served, without its body if not.
 */
static void
head_done(struct hconn *c, struct evbuffer *dst)
{
	int ok = (c->auth_ok && !c->folded) || !http_auth_required();

	if (!c->may_body) {
		/* evhttp reads no body: what follows is the next request. */
		c->chunked = 0;
		c->clen = -1;
	}

	if (c->chunked && c->clen >= 0) {
		/*
		 * Both lengths (RFC 9112 6.3: a smuggling attempt, or a
		 * broken client): evhttp would drop the connection without a
		 * word; the request goes on without its body and marked, and
		 * http.c answers 400.
		 */
		evbuffer_drain(c->framing, evbuffer_get_length(c->framing));
		evbuffer_add_printf(c->head,
		    HTTP_AMBIGUOUS_HEADER ": 1\r\nConnection: close\r\n\r\n");
		evbuffer_add_buffer(dst, c->head);
		c->state = HC_DROP;
		evtimer_del(c->tick);
	} else if (ok) {
		evbuffer_add_buffer(c->head, c->framing);
		evbuffer_add(c->head, "\r\n", 2);
		evbuffer_add_buffer(dst, c->head);
		if (c->chunked) {
			c->state = HC_TRUST; /* no pace from here */
			hconn_input_max(c, (uint64_t)sup.conf->max_line);
			c->t_start = 0;
			evtimer_del(c->tick);
		} else if (c->clen > 0) {
			c->state = HC_BODY;
			c->body_left = (uint64_t)c->clen;
			hconn_input_max(c, c->body_left);
			c->t_body = clock_ms();
		} else
			hconn_request_read(c);
	} else {
		/*
		 * Before the token, one request per connection and never its
		 * body: http.c answers it (401, a 404, a preflight) and the
		 * connection closes; whatever else comes is dropped, never held
		 * (pipelined requests would wait in evhttp's input).
		 */
		if (c->chunked || c->clen > 0)
			preauth_refused_total++;
		evbuffer_drain(c->framing, evbuffer_get_length(c->framing));
		evbuffer_add_printf(c->head, "Connection: close\r\n\r\n");
		evbuffer_add_buffer(dst, c->head);
		c->state = HC_DROP;
		evtimer_del(c->tick);
	}
	c->lines = 0;
	c->may_body = c->auth_seen = c->auth_ok = c->folded = c->chunked = 0;
	c->clen = -1;
}

/* Read header lines from src; -1 when the block is over its bound. */
static int
head_read(struct hconn *c, struct evbuffer *src, struct evbuffer *dst)
{
	struct evbuffer_ptr eol;
	size_t len, eol_len, held, cap;
	char *line;

	while (c->state == HC_HEAD && evbuffer_get_length(src) > 0) {
		if (c->t_start == 0)
			hconn_request_start(c);
		held = evbuffer_get_length(c->head) +
		       evbuffer_get_length(c->framing);
		cap = c->auth_ok || !http_auth_required() ? HTTP_MAX_HEADERS
		                                          : HTTP_PREAUTH_MAX;
		/* The end of line as evhttp finds it (LF, or CRLF). */
		eol =
		    evbuffer_search_eol(src, NULL, &eol_len, EVBUFFER_EOL_CRLF);
		if (eol.pos < 0)
			return held + evbuffer_get_length(src) > cap ? -1 : 0;
		len = (size_t)eol.pos;
		if (held + len > cap)
			return -1;
		line = xmalloc(len + 1);
		evbuffer_remove(src, line, len);
		line[len] = '\0';
		evbuffer_drain(src, eol_len);
		if (len == 0 && c->lines == 0) {
			free(line); /* a CRLF before the request: allowed */
			continue;
		}
		if (len == 0)
			head_done(c, dst);
		else
			head_line(c, line, len);
		explicit_bzero(line, len); /* it may be the token */
		free(line);
	}
	return 0;
}

/* Pass what src holds to dst (evhttp's input) as the state allows. */
static void
hconn_pass(struct hconn *c, struct evbuffer *src, struct evbuffer *dst)
{
	size_t n;

	while (evbuffer_get_length(src) > 0) {
		switch (c->state) {
		case HC_HEAD:
			if (head_read(c, src, dst) == -1) {
				hconn_cut(c, "header block too large (8 KiB "
				             "before the token)");
				break; /* dropped from now on */
			}
			if (c->state == HC_HEAD)
				return; /* a partial line: wait */
			break;
		case HC_BODY:
			n = evbuffer_get_length(src);
			if (n > c->body_left)
				n = (size_t)c->body_left;
			evbuffer_remove_buffer(src, dst, n);
			c->body_left -= n;
			c->body_got += n;
			if (c->body_left == 0)
				hconn_request_read(c);
			break;
		case HC_TRUST:
			evbuffer_add_buffer(dst, src);
			break;
		case HC_DROP:
			evbuffer_drain(src, evbuffer_get_length(src));
			break;
		}
	}
}

/*
 * Bytes came from the socket (the callback runs inside the bufferevent's
 * read, before evhttp's): the new ones, the last n_added of the buffer,
 * are taken out and passed back as the state allows.  What is before them
 * was passed already and is evhttp's.
 */
static void
hconn_input(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg)
{
	struct hconn *c = arg;
	struct evbuffer *old;
	size_t len = evbuffer_get_length(in), n = info->n_added;

	if (c->passing || n == 0)
		return;
	if (n > len)
		n = len;
	/*
	 * A body's bytes, or a trusted connection's, stay where they are:
	 * moved out and back, they would leave each read's chain part
	 * empty, and a big body would hold twice its size.
	 */
	if (c->state == HC_TRUST)
		return;
	if (c->state == HC_BODY && n <= c->body_left) {
		c->body_left -= n;
		c->body_got += n;
		if (c->body_left == 0)
			hconn_request_read(c);
		return;
	}
	c->passing = 1;
	if (n == len)
		evbuffer_add_buffer(c->stage, in);
	else {
		if ((old = evbuffer_new()) == NULL)
			fatalx("%s: out of memory", __func__);
		evbuffer_remove_buffer(in, old, len - n);
		evbuffer_add_buffer(c->stage, in);
		evbuffer_add_buffer(in, old);
		evbuffer_free(old);
	}
	hconn_pass(c, c->stage, in);
	c->passing = 0;
}

/* --- accept --- */

/* evhttp_set_bevcb(): a new connection's bufferevent, and our gate on it. */
struct bufferevent *
http_conn_new(struct event_base *base, void *arg)
{
	struct hconn *c;

	(void)arg;
	c = xcalloc(1, sizeof *c);
	c->clen = -1;
	c->stage = evbuffer_new();
	c->head = evbuffer_new();
	c->framing = evbuffer_new();
	c->tick = evtimer_new(base, hconn_tick, c);
	/* Closed when its last reference goes: evhttp's or ours. */
	c->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (c->stage == NULL || c->head == NULL || c->framing == NULL ||
	    c->tick == NULL || c->bev == NULL)
		fatalx("%s: out of memory", __func__);
	c->incb =
	    evbuffer_add_cb(bufferevent_get_input(c->bev), hconn_input, c);
	if (c->incb == NULL)
		fatalx("%s: evbuffer_add_cb", __func__);
	hconn_input_max(c, 0);
	/* Ours until hconn_setup() sees what evhttp made of it. */
	bufferevent_incref(c->bev);
	c->phase = HC_SETUP;
	LIST_INSERT_HEAD(&hconns, c, entry);
	if (nconns >= sup.conf->http_max_connections)
		c->refused = 1;
	else {
		c->counted = 1;
		nconns++;
	}
	event_active(c->tick, EV_TIMEOUT, 1);
	return c->bev;
}

/* --- what http-session.c asks --- */

/*
 * Who else wants to know when a connection ends (an SSE stream); NULL
 * to stop wanting.
 */
void
http_conn_closecb(struct evhttp_connection *evcon,
    void (*cb)(struct evhttp_connection *, void *), void *arg)
{
	struct hconn *c;

	LIST_FOREACH(c, &hconns, entry)
	if (c->phase == HC_SERVE && c->evcon == evcon) {
		c->closecb = cb;
		c->closearg = arg;
		return;
	}
}

/*
 * The server stops, after evhttp_free(): what evhttp let go of and what
 * it never took goes now, without lingering.
 */
void
http_conn_stop(void)
{
	struct hconn *c, *next;

	/* evhttp_free() told every connection it served (hconn_closed),
	 * and freed them: what is left in HC_SERVE has no socket left. */
	for (c = LIST_FIRST(&hconns); c != NULL; c = next) {
		next = LIST_NEXT(c, entry);
		hconn_free(c);
	}
}
