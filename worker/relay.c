/*
 * Connections relayed through the sandbox's agent (agentwire.h's DIAL,
 * ACCEPT, DATA, ACK, CLOSE): a host socket on one end, a socket in the
 * sandbox on the other, with no network given to the container.
 *
 * Exposed ports: the supervisor asks for one ("expose"); the worker
 * listens on the host (loopback unless the operator says otherwise) and
 * DIALs 127.0.0.1:port in the sandbox for each connection it accepts.
 *
 * With a token (--expose-auth on), a connection is DIALed only once its
 * first request's head (at most HTTPHEAD_MAX bytes, within
 * RELAY_HEAD_SECONDS of its accept: a deadline, which no byte sent
 * restarts) carries "Authorization: Bearer TOKEN"; the field is taken out
 * and the head written anew before anything goes on.  Else it gets a 400,
 * 401 or 431 and is closed, and nothing reaches the sandbox.  At most
 * RELAY_MAX_HEADS connections wait in that state, so that those without
 * the token cannot take every connection of the sandbox; a new one takes
 * the place of the one that has waited longest, so that they cannot keep
 * a client with the token out either.  Only that first request goes on,
 * with "Connection: close" (the hop-by-hop fields taken out, as a proxy
 * does), its body by its Content-Length (a chunked one is refused): what
 * the client sends after it is dropped and the sandbox's end is shut, so
 * that a kept-alive connection cannot carry the token of a later request
 * to the sandbox; a client opens a new connection for each (as curl
 * does on its own).  An Upgrade (a WebSocket) goes on as it is and is a
 * tunnel from then on.
 *
 * Each direction of a connection is under a window: the agent may send
 * AGENT_CONN_WINDOW bytes more than the worker has written to the host
 * socket and acknowledged, and the worker sends the agent no more than
 * its own window allows, reading the host socket only while it may.  So a
 * connection holds at most two windows in the worker, whatever either
 * end does, and there are at most RELAY_MAX_CONNS of them.  An agent
 * that sends past its window, or a DATA for a connection it was never
 * given, broke the protocol and is stopped (agent.c).
 *
 * Once a connection is through (an exposed port's OPENED, the proxy's
 * answer sent) and the agent has its channel, the worker asks for the
 * sandbox's socket itself (PASS), with a join's pipes made for it first
 * (else it stays DATA).  What came before PASSED still comes as DATA; the
 * host's bytes wait meanwhile.  Then the two sockets are joined in the
 * kernel (join.c): no DATA, no ACK, no copy in the agent or here, each
 * way at most a pipe held.  The socket the agent passes is checked: a
 * TCP stream socket, not a listener, or the agent broke the protocol.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "agentwire.h"
#include "config.h"
#include "httphead.h"
#include "join.h"
#include "listenreg.h"
#include "listenrest.h"
#include "log.h"
#include "proto.h"
#include "relay-int.h"
#include "worker.h"
#include "xmalloc.h"

#define RELAY_MAX_EXPOSED 64 /* the supervisor's own bound is lower */
#define RELAY_ACK_MIN (32 * 1024) /* or once the host socket is drained */
#define RELAY_MAX_HEADS 16 /* connections waiting for their token check */
#define RELAY_HEAD_SECONDS 10 /* to send the first request's head */

struct expose {
	struct relay *r;
	struct evconnlistener *lev;
	struct listenrest *rest; /* out of descriptors: it rests */
	int port; /* in the sandbox */
	int host_port;
	char address[INET6_ADDRSTRLEN];
	char *auth; /* the bearer token a first request must carry, or NULL */
	unsigned long conns; /* accepted, in all */
	LIST_ENTRY(expose) entry;
};

struct relay *relay;

static struct rconn *
rconn_find(uint32_t id)
{
	struct rconn *c;

	LIST_FOREACH(c, &relay->conns, entry)
	if (c->id == id)
		return c;
	return NULL;
}

/* A connection's bytes so far: from the sandbox (in), into it (out). */
void
rconn_counts(const struct rconn *c, long long *in, long long *out)
{
	*in = c->bytes_in;
	*out = c->bytes_out;
	if (c->sfd != -1) {
		*in += join_bytes(c->join, 1);
		*out += join_bytes(c->join, 0);
	}
}

/* It no longer waits for its first request's head. */
static void
rconn_head_over(struct rconn *c)
{
	c->head = 0;
	relay->nheads--;
	if (c->deadline != NULL) {
		event_free(c->deadline);
		c->deadline = NULL;
	}
}

/* An exposed port refused or dropped a connection: the supervisor
 * counts it (/metrics), whatever the reason (the log says which). */
static void
relay_count_refusal(void)
{
	json_object *o;

	if (relay->w->chan == NULL)
		return;
	o = json_object_new_object();
	json_object_object_add(
	    o, "event", json_object_new_string("port_refused"));
	worker_send_json(relay->w, PROTO_NOTIFY, 0, o);
	json_object_put(o);
}

/* The head did not come whole within RELAY_HEAD_SECONDS. */
static void
rconn_head_late(evutil_socket_t fd, short what, void *arg)
{
	struct rconn *c = arg;

	(void)fd;
	(void)what;
	logs_addf("port",
	    "%d: a connection closed: no whole request head within %d s",
	    c->ex->port, RELAY_HEAD_SECONDS);
	relay_count_refusal();
	rconn_free(c, NULL);
}

/* Tells the agent that its connection id is closed, and why. */
void
relay_send_close(uint32_t id, const char *why)
{
	unsigned char *m;
	size_t len = 0;

	m = agent_close_encode(id, why, &len);
	(void)agent_send_msg(relay->w, m, len);
}

/*
 * The connection is gone on this end: its host socket closed; the agent
 * is told unless it said so itself (why is NULL then).
 */
void
rconn_free(struct rconn *c, const char *why)
{
	/* (A passed one the agent let go of when it passed it.) */
	if (why != NULL && c->sfd == -1)
		relay_send_close(c->id, why);
	if (c->px != NULL)
		proxy_conn_end(c);
	else {
		long long in, out;

		rconn_counts(c, &in, &out);
		logs_addf("port",
		    "%d: a connection closed (%lld bytes in, %lld out%s)%s%s",
		    c->ex != NULL ? c->ex->port : 0, out, in,
		    c->sfd != -1 ? ", its socket passed" : "",
		    why != NULL && *why != '\0' ? ": " : "",
		    why != NULL ? why : "");
	}
	LIST_REMOVE(c, entry);
	relay->nconns--;
	if (c->head)
		rconn_head_over(c);
	if (c->drain != NULL)
		evbuffer_remove_cb_entry(
		    bufferevent_get_output(c->bev), c->drain);
	join_free(c->join);
	if (c->sfd != -1)
		(void)close(c->sfd);
	bufferevent_free(c->bev);
	free(c);
}

/* Both ends are done and everything is written: gone without a CLOSE. */
static int
rconn_done(struct rconn *c)
{
	if (!c->eof_host || !c->shut)
		return 0;
	rconn_free(c, NULL);
	return 1;
}

/* ACK what the host socket took, in batches. */
void
rconn_ack(struct rconn *c, int all)
{
	unsigned char *m;
	size_t len = 0;

	if (c->unacked == 0 || (!all && c->unacked < RELAY_ACK_MIN))
		return;
	m = agent_msg_u32(AGENT_ACK, c->id, (uint32_t)c->unacked, &len);
	if (agent_send_msg(relay->w, m, len) == 0)
		c->window += c->unacked;
	c->unacked = 0;
}

/* Sends the host socket's bytes as the agent's window allows. */
void
rconn_pump(struct rconn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	unsigned char buf[AGENT_DATA_CHUNK];
	unsigned char *m;
	size_t n, len = 0;

	if (!c->opened || c->passing || c->sfd != -1)
		return;
	if (c->left == 0 && evbuffer_get_length(in) > 0) {
		/* More than its first request: never the sandbox's, which
		 * is told there is nothing more. */
		if (c->eof_host == 0) {
			logs_addf("port",
			    "%d: a connection's bytes after its first request "
			    "dropped (--expose-auth on: one request a "
			    "connection)",
			    c->ex != NULL ? c->ex->port : 0);
			c->eof_host = 1;
		}
		evbuffer_drain(in, evbuffer_get_length(in));
	}
	while (c->credit > 0 && (n = evbuffer_get_length(in)) > 0) {
		if (n > sizeof buf)
			n = sizeof buf;
		if ((long long)n > c->credit)
			n = (size_t)c->credit;
		if (c->left >= 0 && (long long)n > c->left)
			n = (size_t)c->left;
		if (n == 0)
			break;
		n = (size_t)evbuffer_remove(in, buf, n);
		if (c->left >= 0)
			c->left -= (long long)n;
		m = agent_msg_new(AGENT_DATA, 0, c->id, buf, n, &len);
		if (agent_send_msg(relay->w, m, len) == -1)
			return;
		c->credit -= (long long)n;
		c->bytes_out += (long long)n;
	}
	if (c->credit > 0)
		bufferevent_enable(c->bev, EV_READ);
	else
		bufferevent_disable(c->bev, EV_READ);
	if (c->eof_host == 1 && evbuffer_get_length(in) == 0) {
		c->eof_host = 2; /* sent */
		m = agent_msg_new(
		    AGENT_DATA, AGENT_F_EOF, c->id, NULL, 0, &len);
		(void)agent_send_msg(relay->w, m, len);
	}
}

/*
 * Bytes of the worker's own to the agent (the proxy's answer), the EOF
 * after them when eof: 0, or -1 when its window has no room for them.
 */
int
rconn_send_data(struct rconn *c, const void *p, size_t n, int eof)
{
	unsigned char *m;
	size_t len = 0;

	if ((long long)n > c->credit || n > AGENT_DATA_CHUNK)
		return -1;
	m = agent_msg_new(AGENT_DATA, eof ? AGENT_F_EOF : 0, c->id, p, n, &len);
	if (agent_send_msg(relay->w, m, len) == -1)
		return -1;
	c->credit -= (long long)n;
	c->bytes_out += (long long)n;
	if (eof)
		c->eof_host = 2;
	return 0;
}

static void rconn_head(struct rconn *);

static void
rconn_read_cb(struct bufferevent *bev, void *arg)
{
	struct rconn *c = arg;

	(void)bev;
	if (c->head)
		rconn_head(c);
	else
		rconn_pump(c);
}

/* The host socket took bytes: ACK them; at the agent's EOF, shut down. */
void
rconn_written(struct rconn *c)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);

	if (c->refused) {
		if (evbuffer_get_length(out) == 0)
			rconn_free(c, NULL);
		return;
	}
	rconn_ack(c, 1);
	if (c->eof_agent && !c->shut && evbuffer_get_length(out) == 0) {
		c->shut = 1;
		shutdown(bufferevent_getfd(c->bev), SHUT_WR);
		(void)rconn_done(c);
	}
}

static void
rconn_write_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	rconn_written(arg);
}

static void
rconn_drained(
    struct evbuffer *b, const struct evbuffer_cb_info *info, void *arg)
{
	struct rconn *c = arg;
	long long n = (long long)info->n_deleted, skip;

	(void)b;
	/* What the worker wrote itself (a head written anew) goes first
	 * and is not the agent's to be ACKed. */
	skip = n < c->noack ? n : c->noack;
	c->noack -= skip;
	n -= skip;
	if (n == 0)
		return;
	c->unacked += n;
	rconn_ack(c, 0);
}

static void
rconn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct rconn *c = arg;
	char why[128];

	(void)bev;
	if (c->px != NULL && proxy_event(c, what))
		return;
	if (c->head || c->refused) {
		/* Gone, or silent too long, before its head was through:
		 * nothing of it reached the sandbox. */
		if (what &
		    (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
			rconn_free(c, NULL);
		return;
	}
	if (what & BEV_EVENT_EOF) {
		if (c->eof_host == 0)
			c->eof_host = 1;
		bufferevent_disable(c->bev, EV_READ);
		rconn_pump(c);
		if (c->eof_host == 2)
			(void)rconn_done(c);
		return;
	}
	if (what & BEV_EVENT_ERROR) {
		snprintf(why, sizeof why, "the host's end: %s",
		    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
		rconn_free(c, why);
	}
}

/* Whether a passed socket is what it must be: a TCP stream, connected
 * or being connected, not a listener; made nonblocking. */
static int
rconn_fd_ok(int fd)
{
	socklen_t sl;
	struct stat st;
	int v;

	if (fstat(fd, &st) == -1 || !S_ISSOCK(st.st_mode))
		return 0;
	sl = sizeof v;
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &sl) == -1 ||
	    (v != AF_INET && v != AF_INET6))
		return 0;
	sl = sizeof v;
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &sl) == -1 ||
	    v != SOCK_STREAM)
		return 0;
	sl = sizeof v;
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &sl) == -1 || v != 0)
		return 0;
	return evutil_make_socket_nonblocking(fd) == 0;
}

/* The joined sockets are done with, both ways or by an error. */
static void
rconn_joined(void *arg, const char *why)
{
	rconn_free(arg, why);
}

/*
 * The agent passed the sandbox's end (fd): from now on the two sockets
 * are joined (join.c), and the agent is out of it.  The host's bytes that
 * waited go first, into the sandbox; the host's output still holds what
 * came as DATA, which goes on out.
 */
static void
rconn_spliced(struct rconn *c, int fd)
{
	struct evbuffer *held[2];
	int fds[2], eof[2];

	c->passing = 0;
	c->sfd = fd;
	/* Nothing more to ACK; the host's bufferevent only holds its
	 * socket from now on. */
	evbuffer_remove_cb_entry(bufferevent_get_output(c->bev), c->drain);
	c->drain = NULL;
	bufferevent_disable(c->bev, EV_READ | EV_WRITE);
	held[0] = bufferevent_get_input(c->bev);
	held[1] = bufferevent_get_output(c->bev);
	/* Counted as sent now, as DATA is; the join counts what it reads. */
	c->bytes_out += (long long)evbuffer_get_length(held[0]);
	fds[0] = bufferevent_getfd(c->bev);
	fds[1] = fd;
	eof[0] = c->eof_host != 0;
	eof[1] = c->eof_agent;
	join_start(c->join, relay->w->base, fds, held, eof, rconn_joined, c);
}

/* The connection is through: its socket asked of the agent, when it
 * has a channel to pass it on and neither end has ended. */
void
rconn_pass(struct rconn *c)
{
	unsigned char *m;
	size_t len = 0;

	if (c->passing || c->sfd != -1 || !c->opened || c->eof_host ||
	    c->eof_agent || c->refused || c->left >= 0 ||
	    agent_channel(relay->w) == NULL)
		return;
	/* Without descriptors for the pipes, relayed as DATA still. */
	if (c->join == NULL && (c->join = join_new()) == NULL)
		return;
	m = agent_msg_new(AGENT_PASS, 0, c->id, NULL, 0, &len);
	if (agent_send_msg(relay->w, m, len) == 0)
		c->passing = 1;
}

/* PASSED: the socket that came with it spliced, or (KEPT) the relay
 * goes on as DATA; -1 if the agent broke the protocol. */
static int
rconn_passed(struct rconn *c, unsigned int flags, char *why, size_t whylen)
{
	struct channel *ch = agent_channel(relay->w);
	int fd;

	if (flags & AGENT_F_KEPT) {
		if (c != NULL) {
			c->passing = 0;
			join_free(c->join);
			c->join = NULL;
			rconn_pump(c);
			if (c->eof_agent)
				rconn_written(c);
		}
		return 0;
	}
	if ((fd = channel_take_fd(ch)) == -1) {
		/* Lost on the way (this process's descriptors ran out). */
		if (ch == NULL) {
			snprintf(why, whylen, "PASSED without a channel");
			return -1;
		}
		log_warnx("agent: a passed connection came without its socket");
		if (c != NULL)
			rconn_free(c, "its socket did not come");
		return 0;
	}
	if (!rconn_fd_ok(fd)) {
		(void)close(fd);
		snprintf(why, whylen,
		    "a passed descriptor that is not a "
		    "connection's socket");
		return -1;
	}
	if (c == NULL) { /* closed here meanwhile */
		(void)close(fd);
		return 0;
	}
	rconn_spliced(c, fd);
	return 0;
}

struct rconn *
rconn_new(struct expose *ex, evutil_socket_t fd, uint32_t id)
{
	struct rconn *c;

	c = xcalloc(1, sizeof *c);
	c->r = relay;
	c->ex = ex;
	c->id = id;
	while (c->id == 0 || rconn_find(c->id) != NULL)
		c->id = relay->next_id++ & ~AGENT_CONN_AGENT;
	c->sfd = -1;
	c->left = -1;
	c->credit = AGENT_CONN_WINDOW;
	c->window = AGENT_CONN_WINDOW;
	c->bev = bufferevent_socket_new(relay->w->base, fd,
	    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (c->bev == NULL) {
		if (fd != -1)
			evutil_closesocket(fd);
		free(c);
		return NULL;
	}
	/* The host's bytes wait in the kernel while the agent's window is
	 * shut: at most one chunk is read ahead of it.  A chunk a read, not
	 * libevent's 16 KiB. */
	bufferevent_setwatermark(c->bev, EV_READ, 0, AGENT_DATA_CHUNK);
	bufferevent_set_max_single_read(c->bev, AGENT_DATA_CHUNK);
	bufferevent_set_max_single_write(c->bev, RELAY_MAX_WRITE);
	bufferevent_setcb(
	    c->bev, rconn_read_cb, rconn_write_cb, rconn_event_cb, c);
	c->drain =
	    evbuffer_add_cb(bufferevent_get_output(c->bev), rconn_drained, c);
	bufferevent_disable(c->bev, EV_READ);
	bufferevent_enable(c->bev, EV_WRITE);
	LIST_INSERT_HEAD(&relay->conns, c, entry);
	relay->nconns++;
	return c;
}

static void
rconn_dial(struct rconn *c)
{
	unsigned char *m;
	size_t len = 0;

	m = agent_msg_u32(AGENT_DIAL, c->id, (uint32_t)c->ex->port, &len);
	if (agent_send_msg(relay->w, m, len) == -1)
		rconn_free(c, NULL);
}

/* Answers status and closes once written; nothing went to the sandbox. */
static void
rconn_refuse(struct rconn *c, int status, const char *text)
{
	char *r;
	size_t len = 0;

	logs_addf("port", "%d: a connection refused (%d): %s", c->ex->port,
	    status, text);
	relay_count_refusal();
	rconn_head_over(c);
	c->refused = 1;
	bufferevent_disable(c->bev, EV_READ);
	r = httphead_response(status, text, &len);
	bufferevent_write(c->bev, r, len);
	free(r);
}

/*
 * The first request's head, as far as it came: once whole, checked for
 * the token, which is taken out; then DIALed with the head written anew
 * in front of whatever followed it.
 */
static void
rconn_head(struct rconn *c)
{
	static const char *const drop[] = {"Authorization", NULL};
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct httphead *h;
	char err[128], *head;
	size_t n, end, hlen = 0;
	long long body;
	int upgrade, chunked;
	const char *p;

	n = evbuffer_get_length(in);
	if ((p = (const char *)evbuffer_pullup(in, -1)) == NULL && n > 0)
		return;
	if ((end = httphead_end(p, n)) == 0) {
		if (n >= HTTPHEAD_MAX)
			rconn_refuse(c, 431, "the request head is too long");
		return;
	}
	h = xmalloc(sizeof *h);
	if (httphead_parse(p, end, h, err, sizeof err) == -1) {
		rconn_refuse(c, 400, err);
		free(h);
		return;
	}
	if (!httphead_bearer_ok(h, c->ex->auth)) {
		rconn_refuse(c, 401,
		    "this port wants the server's bearer token "
		    "(Authorization: Bearer TOKEN)");
		free(h);
		return;
	}
	/* An Upgrade goes on as it is (a tunnel then); any other request
	 * alone, with "Connection: close" (a CONNECT: none). */
	upgrade = httphead_get(h, "Upgrade") != NULL;
	chunked = h->chunked;
	body = h->content_length > 0 ? h->content_length : 0;
	head = upgrade   ? httphead_strip(h, drop, &hlen)
	       : chunked ? NULL
	                 : httphead_rewrite(h, NULL, drop, &hlen);
	httphead_wipe(h);
	free(h);
	if (head == NULL) {
		if (chunked)
			rconn_refuse(c, 400,
			    "a chunked request body: this port (--expose-auth "
			    "on) takes one with a Content-Length");
		else
			rconn_refuse(
			    c, 405, "CONNECT is not for an exposed port");
		return;
	}
	if (!upgrade)
		c->left = (long long)hlen + body;
	evbuffer_drain(in, end);
	evbuffer_prepend(in, head, hlen);
	free(head);
	rconn_head_over(c);
	bufferevent_set_timeouts(c->bev, NULL, NULL);
	bufferevent_setwatermark(c->bev, EV_READ, 0, AGENT_DATA_CHUNK);
	bufferevent_disable(c->bev, EV_READ);
	logs_addf("port", "%d: a connection with the token", c->ex->port);
	rconn_dial(c);
}

static void
expose_accept(struct evconnlistener *lev, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct expose *ex = arg;
	struct rconn *c, *oldest;
	const char *why;

	(void)lev;
	(void)sa;
	(void)salen;
	if (ex->auth != NULL && relay->nheads >= RELAY_MAX_HEADS &&
	    agent_unusable(relay->w, relay->w->exec_user) == NULL) {
		/* The one that has waited longest goes (newest first). */
		oldest = NULL;
		LIST_FOREACH(c, &relay->conns, entry)
		if (c->head)
			oldest = c;
		if (oldest != NULL) {
			logs_addf("port",
			    "%d: a connection closed: %d wait for their token, "
			    "and it had waited longest",
			    oldest->ex->port, RELAY_MAX_HEADS);
			relay_count_refusal();
			rconn_free(oldest, NULL);
		}
	}
	if ((why = agent_unusable(relay->w, relay->w->exec_user)) == NULL) {
		if (relay->nconns >= RELAY_MAX_CONNS)
			why = "too many connections";
		else if (ex->auth != NULL && relay->nheads >= RELAY_MAX_HEADS)
			why = "too many connections waiting for their token";
	}
	if (why != NULL) {
		logs_addf(
		    "port", "%d: a connection refused: %s", ex->port, why);
		relay_count_refusal();
		evutil_closesocket(fd);
		return;
	}
	if ((c = rconn_new(ex, fd, 0)) == NULL)
		return;
	ex->conns++;
	if (ex->auth != NULL) {
		struct timeval tv = {RELAY_HEAD_SECONDS, 0};

		/* Read (the head at most) before anything is DIALed, until
		 * the deadline; a refusal is written within as long. */
		c->head = 1;
		relay->nheads++;
		if ((c->deadline = evtimer_new(
		         relay->w->base, rconn_head_late, c)) == NULL) {
			rconn_free(c, NULL);
			return;
		}
		evtimer_add(c->deadline, &tv);
		bufferevent_setwatermark(c->bev, EV_READ, 0, HTTPHEAD_MAX);
		bufferevent_set_timeouts(c->bev, NULL, &tv);
		bufferevent_enable(c->bev, EV_READ);
		return;
	}
	rconn_dial(c);
}

/* A message of the agent about a connection; -1: it broke the protocol. */
int
relay_message(struct worker *w, const struct agent_hdr *h,
    const unsigned char *p, char *why, size_t whylen)
{
	char text[AGENT_MAX_ERROR + 1];
	struct rconn *c;
	uint32_t v;

	(void)w;
	if (h->type == AGENT_LISTENING && relay != NULL && h->id == 0)
		return proxy_listening(p, h->len, why, whylen);
	if (relay == NULL || h->id == 0) {
		snprintf(why, whylen, "message %u for connection 0", h->type);
		return -1;
	}
	if (h->type == AGENT_ACCEPT || h->type == AGENT_LISTENING) {
		if (h->type == AGENT_LISTENING || !(h->id & AGENT_CONN_AGENT) ||
		    rconn_find(h->id) != NULL) {
			snprintf(why, whylen, "a %s never asked for",
			    h->type == AGENT_ACCEPT ? "connection"
			                            : "listener");
			return -1;
		}
		proxy_accept(h->id);
		return 0;
	}
	if ((c = rconn_find(h->id)) == NULL) {
		/* Late (closed here meanwhile), unless it cannot be. */
		if (h->type == AGENT_OPENED && (h->id & AGENT_CONN_AGENT)) {
			snprintf(why, whylen, "OPENED of a connection it made");
			return -1;
		}
		/* Its socket, if it came, is closed. */
		if (h->type == AGENT_PASSED)
			return rconn_passed(NULL, h->flags, why, whylen);
		return 0;
	}
	if (c->sfd != -1 || (h->type == AGENT_PASSED && !c->passing)) {
		snprintf(why, whylen, "a message %u for connection %u%s",
		    h->type, (unsigned)h->id,
		    c->sfd != -1 ? ", which it passed" : " never passed");
		return -1;
	}
	switch (h->type) {
	case AGENT_PASSED:
		return rconn_passed(c, h->flags, why, whylen);
	case AGENT_OPENED:
		if (c->opened || c->px != NULL)
			break;
		c->opened = 1;
		logs_addf("port", "%d: a connection opened", c->ex->port);
		rconn_pass(c);
		rconn_pump(c);
		return 0;
	case AGENT_DATA:
		if (c->eof_agent || (long long)h->len > c->window ||
		    (!c->opened && c->px == NULL))
			break;
		c->window -= h->len;
		c->bytes_in += h->len;
		if (!c->opened) /* the proxy's, before it is through */
			return proxy_data(c, p, h->len, h->flags & AGENT_F_EOF);
		if (h->len > 0)
			bufferevent_write(c->bev, p, h->len);
		if (h->flags & AGENT_F_EOF) {
			c->eof_agent = 1;
			rconn_write_cb(c->bev, c);
		}
		return 0;
	case AGENT_ACK:
		if (agent_u32_decode(p, h->len, &v) == -1)
			break;
		if (c->credit + v > AGENT_CONN_WINDOW)
			break; /* more than was sent */
		c->credit += v;
		if (c->px == NULL || !proxy_acked(c))
			rconn_pump(c);
		return 0;
	case AGENT_CLOSE:
		if (agent_close_decode(p, h->len, text) == -1)
			break;
		rconn_free(c, NULL);
		return 0;
	}
	snprintf(why, whylen, "a bad message %u for connection %u", h->type,
	    (unsigned)h->id);
	return -1;
}

/* The agent is gone: every connection through it is closed. */
void
relay_agent_lost(struct worker *w)
{
	struct rconn *c;

	if (relay == NULL)
		return;
	// NOLINTBEGIN(clang-analyzer-unix.Malloc)
	while ((c = LIST_FIRST(&relay->conns)) != NULL)
		rconn_free(c, NULL);
	// NOLINTEND(clang-analyzer-unix.Malloc)
	proxy_agent_lost(w);
}

static struct expose *
expose_find(int port)
{
	struct expose *ex;

	LIST_FOREACH(ex, &relay->exposed, entry)
	if (ex->port == port)
		return ex;
	return NULL;
}

static void
expose_free(struct expose *ex)
{
	struct rconn *c, *next;

	for (c = LIST_FIRST(&relay->conns); c != NULL; c = next) {
		next = LIST_NEXT(c, entry);
		if (c->ex == ex)
			rconn_free(c, "the port is no longer exposed");
	}
	LIST_REMOVE(ex, entry);
	listenreg_del(relay->w->conf->worker_listeners, ex->host_port);
	listenrest_free(ex->rest);
	evconnlistener_free(ex->lev);
	if (ex->auth != NULL)
		explicit_bzero(ex->auth, strlen(ex->auth));
	free(ex->auth);
	free(ex);
}

void
relay_answer(struct worker *w, uint32_t reqid, json_object *res)
{
	worker_send_json(w, PROTO_RESULT, reqid, res);
	json_object_put(res);
}

void
relay_error(struct worker *w, uint32_t reqid, const char *fmt, ...)
{
	json_object *res;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	res = json_object_new_object();
	json_object_object_add(res, "error", json_object_new_string(msg));
	relay_answer(w, reqid, res);
}

static int
int_member(json_object *o, const char *name, int lo, int hi, int *v)
{
	json_object *m;
	int64_t n;

	if (!json_object_object_get_ex(o, name, &m))
		return 0;
	if (!json_object_is_type(m, json_type_int))
		return -1;
	n = json_object_get_int64(m);
	if (n < lo || n > hi)
		return -1;
	*v = (int)n;
	return 1;
}

static const char *
str_member(json_object *o, const char *name)
{
	json_object *m;

	if (!json_object_object_get_ex(o, name, &m) ||
	    !json_object_is_type(m, json_type_string))
		return NULL;
	return json_object_get_string(m);
}

/* Listens on bind:host_port (0: a free one); the port, or -1 and errno. */
static struct evconnlistener *
expose_listen(struct expose *ex, const char *bind, int host_port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	struct evconnlistener *lev;
	socklen_t sl;

	memset(&ss, 0, sizeof ss);
	if (inet_pton(AF_INET, bind, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)host_port);
		sl = sizeof *sin;
	} else if (inet_pton(AF_INET6, bind, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)host_port);
		sl = sizeof *sin6;
	} else {
		errno = EINVAL;
		return NULL;
	}
	lev = evconnlistener_new_bind(relay->w->base, expose_accept, ex,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE,
	    16, (struct sockaddr *)&ss, (int)sl);
	if (lev == NULL)
		return NULL;
	sl = sizeof ss;
	if (getsockname(evconnlistener_get_fd(lev), (struct sockaddr *)&ss,
	        &sl) == -1) {
		evconnlistener_free(lev);
		return NULL;
	}
	ex->host_port =
	    ntohs(ss.ss_family == AF_INET ? sin->sin_port : sin6->sin6_port);
	/* No sandbox's egress reaches it (listenreg.h). */
	if (listenreg_add(relay->w->conf->worker_listeners, ex->host_port) ==
	    -1) {
		evconnlistener_free(lev);
		return NULL;
	}
	return lev;
}

static json_object *
expose_json(const struct expose *ex)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "port", json_object_new_int(ex->port));
	json_object_object_add(
	    o, "host_port", json_object_new_int(ex->host_port));
	json_object_object_add(
	    o, "address", json_object_new_string(ex->address));
	return o;
}

/* "expose": listen on the host for a port of the sandbox (proto.h). */
void
relay_expose(struct worker *w, uint32_t reqid, json_object *call)
{
	const char *bind, *auth;
	struct expose *ex;
	int port = 0, host_port = 0;

	if (int_member(call, "port", 1, 65535, &port) != 1 ||
	    int_member(call, "host_port", 1, 65535, &host_port) == -1) {
		relay_error(w, reqid, "expose: a bad port");
		return;
	}
	if ((bind = str_member(call, "bind")) == NULL)
		bind = "127.0.0.1";
	auth = str_member(call, "auth");
	if (!w->conf->agent) {
		relay_error(w, reqid,
		    "an exposed port is relayed by the sandbox's agent, which "
		    "is off on this server (--agent off)");
		return;
	}
	if ((ex = expose_find(port)) != NULL) {
		relay_answer(w, reqid, expose_json(ex));
		return;
	}
	if (auth != NULL && *auth == '\0') {
		relay_error(w, reqid, "expose: an empty token");
		return;
	}
	ex = xcalloc(1, sizeof *ex);
	ex->r = relay;
	ex->port = port;
	if ((ex->lev = expose_listen(ex, bind, host_port)) == NULL) {
		relay_error(w, reqid, "cannot listen on %s port %d: %s", bind,
		    host_port, strerror(errno));
		free(ex);
		return;
	}
	ex->rest = listenrest_new(ex->lev, "exposed port");
	if (auth != NULL)
		ex->auth = xstrdup(auth);
	snprintf(ex->address, sizeof ex->address, "%s", bind);
	LIST_INSERT_HEAD(&relay->exposed, ex, entry);
	logs_addf(
	    "port", "%d: exposed on %s port %d", port, bind, ex->host_port);
	relay_answer(w, reqid, expose_json(ex));
}

/* "unexpose": stop listening; its connections are closed. */
void
relay_unexpose(struct worker *w, uint32_t reqid, json_object *call)
{
	struct expose *ex;
	int port = 0;

	if (int_member(call, "port", 1, 65535, &port) != 1) {
		relay_error(w, reqid, "unexpose: a bad port");
		return;
	}
	if ((ex = expose_find(port)) == NULL) {
		relay_error(w, reqid, "port %d is not exposed", port);
		return;
	}
	logs_addf("port", "%d: no longer exposed (port %d closed)", port,
	    ex->host_port);
	expose_free(ex);
	relay_answer(w, reqid, json_object_new_object());
}

void
relay_start(struct worker *w)
{
	relay = xcalloc(1, sizeof *relay);
	relay->w = w;
	relay->next_id = 1;
	LIST_INIT(&relay->exposed);
	LIST_INIT(&relay->conns);
}

void
relay_stop(struct worker *w)
{
	struct expose *ex;
	struct rconn *c;

	(void)w;
	if (relay == NULL)
		return;
	/* Each free unlinks the head. */
	// NOLINTBEGIN(clang-analyzer-unix.Malloc)
	while ((c = LIST_FIRST(&relay->conns)) != NULL)
		rconn_free(c, NULL);
	while ((ex = LIST_FIRST(&relay->exposed)) != NULL)
		expose_free(ex);
	// NOLINTEND(clang-analyzer-unix.Malloc)
	free(relay);
	relay = NULL;
}
