/*
 * HTTP connections, from accept() to the last byte written: what evhttp
 * cannot be told in libevent 2.1 (it reads a whole request, body and all,
 * before the server sees any of it, and has no hook between the headers
 * and the body).
 *
 * Every accepted socket gets a bufferevent of ours (evhttp_set_bevcb): a
 * filter between the socket and evhttp.  Its input side reads each
 * request's header block itself and holds it until the blank line, so
 * that before evhttp sees a request:
 *
 * - The Authorization header has been checked.  A request without the
 *   token reaches evhttp with its Content-Length and Transfer-Encoding
 *   taken out and "Connection: close" put in: evhttp hands it over with
 *   no body, the server answers 401 (http.c), and whatever body the
 *   client sends is never read into memory.  Until the token is seen, a
 *   header block may hold HTTP_PREAUTH_MAX bytes, not HTTP_MAX_HEADERS.
 * - Time is counted: the headers must be complete within
 *   --http-header-timeout seconds of the request's first byte, and its
 *   body must then average --http-min-rate bytes/s (after the same grace);
 *   a request slower than that is cut.
 *
 * A connection counts against --http-max-connections from accept() to
 * its close; past the limit the new one is told 503 and closed at once.
 * When evhttp lets go of a connection, the socket stays ours until what
 * evhttp wrote has gone out (evhttp deems a reply sent once it is in our
 * buffer), and a little longer, reading and dropping, so that a client
 * still sending gets the answer rather than a reset.
 *
 * A body sent with Transfer-Encoding: chunked has no length to count
 * here: a connection that sent one with the token is passed through
 * unfiltered from then on (every request on it still needs the token in
 * http.c).
 */
#include <sys/queue.h>
#include <sys/socket.h>

#include <ctype.h>
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

#include "config.h"
#include "http-int.h"
#include "log.h"
#include "supervisor.h"
#include "xmalloc.h"

#define HTTP_PREAUTH_MAX (8 * 1024) /* a header block before the token */
#define HTTP_TICK_MS 500
#define HTTP_OUT_HIGH (256 * 1024) /* socket buffer before the filter waits */

enum hc_state {
	HC_HEAD, /* reading a header block (held) */
	HC_BODY, /* passing a body of known length */
	HC_TRUST, /* passing everything (a chunked body came with the token) */
	HC_DROP, /* dropping everything (a refused request's body) */
};

struct hconn {
	struct bufferevent *under; /* the socket; ours to free */
	struct bufferevent *bev; /* the filter evhttp reads; NULL once gone */
	struct evhttp_connection *evcon; /* once a request reached http.c */
	void (*closecb)(struct evhttp_connection *, void *);
	void *closearg;
	enum hc_state state;
	struct evbuffer *head; /* the header block so far */
	struct evbuffer *framing; /* its Content-Length/Transfer-Encoding */
	int lines; /* of the block so far */
	int auth_seen, auth_ok, folded, chunked;
	int64_t clen; /* the first Content-Length, or -1 */
	uint64_t body_left, body_got;
	long long t_start, t_body; /* ms: first byte; end of the headers */
	struct event *tick; /* while a request is being read */
	struct event *kick; /* pushes a reply through the filter */
	int refused; /* past --http-max-connections */
	int counted; /* in nconns */
	const char *cut; /* why it is being cut, or NULL */
	int gone; /* evhttp let go of it */
	LIST_ENTRY(hconn) entry;
};

static LIST_HEAD(, hconn) hconns = LIST_HEAD_INITIALIZER(hconns);
static long nconns, refused_total, cut_total, preauth_refused_total;
static int stopping;

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long
http_conns_open(void)
{
	return nconns;
}

void
http_conns_stats(long *refused, long *cut, long *preauth)
{
	*refused = refused_total;
	*cut = cut_total;
	*preauth = preauth_refused_total;
}

/* --- the end of a connection --- */

static void
hconn_free(struct hconn *c)
{
	LIST_REMOVE(c, entry);
	if (c->counted)
		nconns--;
	if (c->tick != NULL)
		event_free(c->tick);
	if (c->kick != NULL)
		event_free(c->kick);
	evbuffer_free(c->head);
	evbuffer_free(c->framing);
	free(c);
}

/* evhttp freed the filter, and with it the socket: the end. */
static void
hconn_filter_gone(void *arg)
{
	hconn_free(arg);
}

/*
 * Cut a connection evhttp still has, as a read timeout would; from the
 * loop (tick), never inside the filter that found the reason.
 */
static void
hconn_cut(struct hconn *c, const char *why)
{
	if (c->cut != NULL)
		return;
	c->cut = why;
	c->state = HC_DROP;
	event_active(c->tick, EV_TIMEOUT, 1);
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
	evutil_socket_t fd = bufferevent_getfd(c->under);

	c->refused = 0;
	c->state = HC_DROP;
	http_count(503);
	if (fd != -1)
		(void)send(
		    fd, msg, sizeof msg - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	bufferevent_trigger_event(c->bev, BEV_EVENT_READING | BEV_EVENT_EOF, 0);
}

/* --- deadlines --- */

static void
hconn_tick(evutil_socket_t fd, short what, void *arg)
{
	struct hconn *c = arg;
	long long grace = sup.conf->http_header_timeout * 1000, now = now_ms();
	long long t;

	(void)fd;
	(void)what;
	if (c->gone) {
		evtimer_del(c->tick);
		return;
	}
	if (c->refused) {
		hconn_refuse(c);
		return;
	}
	if (c->cut != NULL) {
		cut_total++;
		if (cut_total < 10 || cut_total % 100 == 0)
			log_info("http: connection cut: %s (%ld so far)",
			    c->cut, cut_total);
		evtimer_del(c->tick);
		/* evhttp frees the connection (and c, through the filter). */
		bufferevent_trigger_event(
		    c->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, 0);
		return;
	}
	if (c->state == HC_HEAD && c->t_start != 0 &&
	    now - c->t_start > grace) {
		hconn_cut(c, "headers not complete within "
		             "--http-header-timeout");
		return;
	}
	if (c->state == HC_BODY && (t = now - c->t_body) > grace &&
	    c->body_got < (uint64_t)((t - grace) / 1000) *
	                      (uint64_t)sup.conf->http_min_rate) {
		hconn_cut(c, "body slower than --http-min-rate");
		return;
	}
}

static void
hconn_tick_start(struct hconn *c)
{
	struct timeval tv = {0, HTTP_TICK_MS * 1000};

	if (!evtimer_pending(c->tick, NULL))
		evtimer_add(c->tick, &tv);
}

/* The request's bytes are all in: no deadline until the next one. */
static void
hconn_request_read(struct hconn *c)
{
	c->state = HC_HEAD;
	c->t_start = c->t_body = 0;
	c->body_got = c->body_left = 0;
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

/* One line of the block (without its end of line), line[len] is NUL. */
static void
head_line(struct hconn *c, const char *line, size_t len)
{
	const char *v;
	char *end;
	long long n;

	if (c->lines++ == 0) {
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
		if (c->chunked)
			c->state = HC_TRUST;
		else if (c->clen > 0) {
			c->state = HC_BODY;
			c->body_left = (uint64_t)c->clen;
			c->t_body = now_ms();
		} else
			hconn_request_read(c);
	} else if (c->chunked || c->clen > 0) {
		/* http.c answers 401; the body is never read. */
		preauth_refused_total++;
		evbuffer_drain(c->framing, evbuffer_get_length(c->framing));
		evbuffer_add_printf(c->head, "Connection: close\r\n\r\n");
		evbuffer_add_buffer(dst, c->head);
		c->state = HC_DROP;
		evtimer_del(c->tick);
	} else {
		evbuffer_add_buffer(c->head, c->framing);
		evbuffer_add(c->head, "\r\n", 2);
		evbuffer_add_buffer(dst, c->head);
		hconn_request_read(c);
	}
	c->lines = 0;
	c->auth_seen = c->auth_ok = c->folded = c->chunked = 0;
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
		if (c->t_start == 0) {
			c->t_start = now_ms();
			hconn_tick_start(c);
		}
		held = evbuffer_get_length(c->head) +
		       evbuffer_get_length(c->framing);
		cap = c->auth_ok || !http_auth_required() ? HTTP_MAX_HEADERS
		                                          : HTTP_PREAUTH_MAX;
		eol =
		    evbuffer_search_eol(src, NULL, &eol_len, EVBUFFER_EOL_CRLF);
		if (eol.pos < 0) {
			if (held + evbuffer_get_length(src) > cap)
				return -1;
			return 0; /* more to come */
		}
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

static void hconn_closed(struct evhttp_connection *, void *);

/* The input filter: the socket's bytes on their way to evhttp. */
static enum bufferevent_filter_result
hconn_input(struct evbuffer *src, struct evbuffer *dst, ev_ssize_t limit,
    enum bufferevent_flush_mode mode, void *arg)
{
	struct hconn *c = arg;
	size_t before = evbuffer_get_length(src), n;
	void *evcon = NULL;

	(void)limit;
	(void)mode;
	/* evhttp has set its callbacks by now: its argument is the
	 * connection, whose end we want to see even if no request of it
	 * reaches http.c (a 413, a 400 of evhttp's own). */
	if (c->evcon == NULL && !c->gone) {
		bufferevent_getcb(c->bev, NULL, NULL, NULL, &evcon);
		if (evcon != NULL) {
			c->evcon = evcon;
			evhttp_connection_set_closecb(
			    c->evcon, hconn_closed, c);
		}
	}
	while (evbuffer_get_length(src) > 0) {
		switch (c->state) {
		case HC_HEAD:
			if (head_read(c, src, dst) == -1) {
				hconn_cut(c, "header block too large (8 KiB "
				             "before the token)");
				continue; /* dropped from now on */
			}
			if (c->state == HC_HEAD)
				goto out; /* a partial line: wait */
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
out:
	return evbuffer_get_length(src) < before ? BEV_OK : BEV_NEED_MORE;
}

/* --- accept --- */

/*
 * A filter moves what evhttp writes to the socket only while its
 * EV_WRITE is enabled, and evhttp enables it after writing a reply, not
 * before; enabling does not move what waits.  So whatever evhttp adds is
 * pushed from the loop, once evhttp is done adding.
 */
static void
hconn_out_added(
    struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
	struct hconn *c = arg;

	(void)buf;
	if (info->n_added > 0 && !c->gone && !stopping)
		event_active(c->kick, EV_TIMEOUT, 1);
}

static void
hconn_kick(evutil_socket_t fd, short what, void *arg)
{
	struct hconn *c = arg;

	(void)fd;
	(void)what;
	if (c->gone || !(bufferevent_get_enabled(c->bev) & EV_WRITE))
		return;
	/*
	 * Moving what waits tells evhttp it went out.  If it moved already
	 * (the filter was enabled when it came), evhttp may have been told
	 * before it set what to do next (the end of a reply, for one):
	 * then it is told again, now.
	 */
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) > 0)
		bufferevent_flush(c->bev, EV_WRITE, BEV_NORMAL);
	else
		bufferevent_trigger(c->bev, EV_WRITE, 0);
}

/* evhttp_set_bevcb(): a new connection, and our filter on it. */
struct bufferevent *
http_conn_new(struct event_base *base, void *arg)
{
	struct timeval now = {0, 0};
	struct hconn *c;

	(void)arg;
	c = xcalloc(1, sizeof *c);
	c->clen = -1;
	c->head = evbuffer_new();
	c->framing = evbuffer_new();
	c->tick = event_new(base, -1, EV_PERSIST, hconn_tick, c);
	c->kick = event_new(base, -1, 0, hconn_kick, c);
	c->under = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (c->head == NULL || c->framing == NULL || c->tick == NULL ||
	    c->kick == NULL || c->under == NULL)
		fatalx("%s: out of memory", __func__);
	/* A client that stops reading holds at most this much of ours
	 * before the write timeout can see it stalled. */
	bufferevent_setwatermark(c->under, EV_WRITE, 0, HTTP_OUT_HIGH);
	now.tv_sec = sup.conf->http_timeout;
	bufferevent_set_timeouts(c->under, NULL, &now);
	/* The filter owns the socket from here (and closes it). */
	c->bev = bufferevent_filter_new(c->under, hconn_input, NULL,
	    BEV_OPT_CLOSE_ON_FREE, hconn_filter_gone, c);
	if (c->bev == NULL || evbuffer_add_cb(bufferevent_get_output(c->bev),
	                          hconn_out_added, c) == NULL)
		fatalx("%s: bufferevent_filter_new", __func__);
	LIST_INSERT_HEAD(&hconns, c, entry);
	if (nconns >= sup.conf->http_max_connections) {
		refused_total++;
		c->refused = 1;
		/* Once evhttp has set the connection up. */
		event_active(c->tick, EV_TIMEOUT, 1);
	} else {
		c->counted = 1;
		nconns++;
	}
	return c->bev;
}

/* --- what http.c and http-session.c ask --- */

static struct hconn *
hconn_of(struct evhttp_connection *evcon)
{
	struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
	struct hconn *c;

	LIST_FOREACH(c, &hconns, entry)
	if (c->bev == bev)
		return c;
	return NULL;
}

/*
 * evhttp is about to free the connection: what it deems sent may still
 * be in the socket's buffer under the filter, and would be lost, so it
 * goes out now (a client that does not read loses it).
 */
static void
hconn_closed(struct evhttp_connection *evcon, void *arg)
{
	struct hconn *c = arg;
	evutil_socket_t fd = bufferevent_getfd(c->under);
	struct evbuffer *out = bufferevent_get_output(c->under);

	c->gone = 1;
	/* A socket bufferevent keeps its output's front frozen but while
	 * it writes itself. */
	evbuffer_unfreeze(out, 1);
	while (fd != -1 && evbuffer_get_length(out) > 0 &&
	       evbuffer_write(out, fd) > 0)
		;
	evbuffer_freeze(out, 1);
	if (c->closecb != NULL)
		c->closecb(evcon, c->closearg);
	c->closecb = NULL;
	c->evcon = NULL;
}

/* A request reached http.c: remember its connection. */
void
http_conn_seen(struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct hconn *c;

	if (evcon == NULL || (c = hconn_of(evcon)) == NULL || c->evcon == evcon)
		return;
	c->evcon = evcon;
	evhttp_connection_set_closecb(evcon, hconn_closed, c);
}

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
	if (c->evcon == evcon && evcon != NULL) {
		c->closecb = cb;
		c->closearg = arg;
		return;
	}
}

/*
 * The server stops (before evhttp_free()): no event of ours may be
 * active when the filters are finalized, which event_base_free() does
 * while it walks the active queues.
 */
void
http_conns_stop(void)
{
	struct hconn *c;

	stopping = 1;
	LIST_FOREACH(c, &hconns, entry)
	{
		c->gone = 1;
		event_del(c->tick);
		event_del(c->kick);
	}
}

/*
 * After evhttp_free(): the filters it freed are finalized by the loop,
 * and finalizing one frees its socket's bufferevent, finalized in turn.
 * Let that happen now rather than inside event_base_free(), which walks
 * its queues while the finalizers add to them.
 */
void
http_conns_drain(void)
{
	int i;

	for (i = 0; i < 16; i++)
		event_base_loop(sup.base, EVLOOP_NONBLOCK | EVLOOP_ONCE);
}
