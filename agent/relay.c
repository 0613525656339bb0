/*
 * The agent's connections (agentwire.h): the egress proxy's listening
 * socket on 127.0.0.1 (LISTEN), whose every connection goes to the
 * worker (ACCEPT), and connections the worker asks for to 127.0.0.1
 * (DIAL) for exposed ports.  Both kinds are relayed the same way:
 *
 * - From the socket, the agent reads only while the worker's window
 *   (credit) has room, and at most that much per DATA; the socket's EOF
 *   is a DATA with AGENT_F_EOF.
 * - The worker's DATA is held until the socket takes it, and every
 *   write is answered with ACK; so the agent holds at most
 *   AGENT_CONN_WINDOW bytes of a connection, and a worker that sends
 *   more is broken (the agent quits, as for any bad message).  The
 *   worker's EOF shuts the socket's writing down once all is written.
 * - An error or a reset is a CLOSE to the worker; a CLOSE from it
 *   closes the socket.  A connection whose both ways ended with EOF,
 *   everything written, is gone without one.
 *
 * What arrives for a connection that is gone is late: dropped.
 *
 * On the channel, the worker asks for a connection's socket once it is
 * through (PASS): the agent writes what it holds of the worker's, then
 * sends the socket itself with PASSED and forgets the connection, and
 * the worker relays that socket to the host's directly, with no DATA,
 * ACK or copy here.  A connection that reached an end is kept (PASSED
 * with AGENT_F_KEPT) and goes on as before.
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent-int.h"

#define CONN_CREDIT_CAP ((uint64_t)1 << 40)
#define LISTEN_BACKLOG 128
#define ACCEPTS_PER_ROUND 32 /* a flood of connections waits its turn */

struct conn {
	uint32_t id; /* 0: a free slot */
	int fd;
	uint64_t credit; /* DATA bytes it may still send to the worker */
	uint64_t acks; /* written to the socket, not ACKed yet */
	unsigned char *buf; /* the worker's bytes not written yet, from off */
	size_t off, len, cap;
	uint32_t port; /* DIAL's, for a why */
	int connecting; /* a DIAL not connected yet */
	int rdeof; /* the socket's EOF was sent as DATA EOF */
	int wreof; /* the worker's EOF came */
	int wrshut; /* ... and the socket's writing is shut down */
	int held; /* hung up, nothing to do: not polled until a message */
	int passing; /* PASS came: passed once everything is written */
};

static struct conn conns[AGENT_MAX_CONNS];
static int nconns;
static int lfd = -1; /* the proxy's listening socket */
static uint32_t next_accept = 1; /* the counter of ACCEPT ids */
/* What relay_poll() put in the pollfd array: a slot and its id then. */
static struct {
	int slot; /* -1: the listener */
	uint32_t id;
} refs[RELAY_MAX_FDS];
/* One DATA, read in place behind its header. */
static unsigned char dbuf[AGENT_HDR_LEN + AGENT_DATA_CHUNK];

static struct conn *
conn_find(uint32_t id)
{
	int i;

	for (i = 0; i < AGENT_MAX_CONNS; i++)
		if (conns[i].id != 0 && conns[i].id == id)
			return &conns[i];
	return NULL;
}

/* A free slot for id (its socket fd), set up; NULL when all are taken. */
static struct conn *
conn_new(uint32_t id, int fd)
{
	struct conn *c;
	int i;

	for (i = 0; i < AGENT_MAX_CONNS; i++) {
		c = &conns[i];
		if (c->id != 0)
			continue;
		memset(c, 0, sizeof *c);
		c->id = id;
		c->fd = fd;
		c->credit = AGENT_CONN_WINDOW;
		nconns++;
		return c;
	}
	return NULL;
}

/* Closes the socket and frees the slot, saying nothing. */
static void
conn_free(struct conn *c)
{
	if (c->fd != -1)
		close(c->fd);
	free(c->buf);
	memset(c, 0, sizeof *c);
	c->fd = -1;
	nconns--;
}

/* A CLOSE with why for id. */
static void
send_close(uint32_t id, const char *why)
{
	unsigned char *m;
	size_t len;

	m = agent_close_encode(id, why, &len);
	agent_send_msg(m, len);
}

/* A CLOSE with why (printf) to the worker, then the connection is gone. */
static void __attribute__((format(printf, 2, 3)))
conn_fail(struct conn *c, const char *fmt, ...)
{
	char why[AGENT_MAX_ERROR + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	send_close(c->id, why);
	conn_free(c);
}

/* What the socket took, ACKed now (else before the next poll()). */
static void
conn_ack(struct conn *c)
{
	unsigned char *m;
	size_t len;

	if (c->acks == 0)
		return;
	m = agent_msg_u32(AGENT_ACK, c->id, (uint32_t)c->acks, &len);
	agent_send_msg(m, len);
	c->acks = 0;
}

/* Frees c if both ways ended with EOF (all written and ACKed); -1 if it
 * did. */
static int
conn_done(struct conn *c)
{
	if (!c->rdeof || !c->wrshut)
		return 0;
	conn_ack(c);
	conn_free(c);
	return -1;
}

/* The worker's EOF, once everything is written: -1 if c is gone. */
static int
conn_shut(struct conn *c)
{
	if (!c->wreof || c->wrshut || c->len > 0 || c->connecting)
		return 0;
	if (shutdown(c->fd, SHUT_WR) == -1) {
		conn_fail(c, "shutdown: %s", strerror(errno));
		return -1;
	}
	c->wrshut = 1;
	return conn_done(c);
}

/* The pending error of the socket (SO_ERROR), or 0. */
static int
sock_error(int fd)
{
	socklen_t sl = sizeof(int);
	int err = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) == -1)
		return errno;
	return err;
}

/*
 * Reads what the credit allows and sends it as DATA, or the socket's EOF
 * as an empty DATA with AGENT_F_EOF: -1 if c is gone.
 */
static int
conn_read(struct conn *c)
{
	struct agent_hdr h = {.type = AGENT_DATA, .id = c->id};
	size_t want = AGENT_DATA_CHUNK;
	ssize_t n;

	if (c->credit < want)
		want = (size_t)c->credit;
	n = read(c->fd, dbuf + AGENT_HDR_LEN, want);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n == -1) {
		conn_fail(c, "read: %s", strerror(errno));
		return -1;
	}
	if (n == 0) {
		h.flags = AGENT_F_EOF;
		c->rdeof = 1;
	}
	h.len = (uint32_t)n;
	agent_hdr_encode(&h, dbuf);
	agent_send(dbuf, AGENT_HDR_LEN + (size_t)n);
	c->credit -= (uint64_t)n;
	return c->rdeof ? conn_done(c) : 0;
}

/*
 * A PASS, once what the worker sent is written: the socket goes to the
 * worker with PASSED and the connection is forgotten here (-1); or, at
 * an end or without a channel, PASSED with AGENT_F_KEPT and it goes on.
 */
static int
conn_pass(struct conn *c)
{
	unsigned char *m;
	size_t len;

	if (c->len > 0)
		return 0;
	c->passing = 0;
	conn_ack(c);
	if (!c->rdeof && !c->wreof && !c->connecting) {
		m = agent_msg_new(AGENT_PASSED, 0, c->id, NULL, 0, &len);
		if (agent_send_fd(m, len, c->fd) == 0) {
			conn_free(c);
			return -1;
		}
	}
	m = agent_msg_new(AGENT_PASSED, AGENT_F_KEPT, c->id, NULL, 0, &len);
	agent_send_msg(m, len);
	return 0;
}

/* Writes what the socket takes of the worker's bytes, answering ACK. */
static int
conn_write(struct conn *c)
{
	ssize_t n;

	n = write(c->fd, c->buf + c->off, c->len);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		conn_fail(
		    c, "write: %s", n == 0 ? "no progress" : strerror(errno));
		return -1;
	}
	c->off += (size_t)n;
	c->len -= (size_t)n;
	if (c->len == 0) {
		/* Held only while there is something to hold. */
		free(c->buf);
		c->buf = NULL;
		c->off = c->cap = 0;
	}
	c->acks += (uint64_t)n; /* ACKed before the next poll() */
	if (c->passing)
		return conn_pass(c);
	return conn_shut(c);
}

/* Holds n bytes of the worker's (the window has room for them). */
static int
conn_hold(struct conn *c, const unsigned char *p, size_t n)
{
	unsigned char *nb;
	size_t cap;

	if (c->off > 0 && c->off + c->len + n > c->cap) {
		memmove(c->buf, c->buf + c->off, c->len);
		c->off = 0;
	}
	if (c->len + n > c->cap) {
		cap = c->cap < 65536 ? 65536 : c->cap * 2;
		if (cap < c->len + n)
			cap = c->len + n;
		if (cap > AGENT_CONN_WINDOW)
			cap = AGENT_CONN_WINDOW;
		if ((nb = realloc(c->buf, cap)) == NULL)
			return -1;
		c->buf = nb;
		c->cap = cap;
	}
	memcpy(c->buf + c->off + c->len, p, n);
	c->len += n;
	return 0;
}

/* A DIAL that was in progress: connected, or refused. */
static void
conn_connected(struct conn *c)
{
	unsigned char *m;
	size_t len;
	int err;

	if ((err = sock_error(c->fd)) != 0) {
		conn_fail(
		    c, "connect 127.0.0.1:%u: %s", c->port, strerror(err));
		return;
	}
	c->connecting = 0;
	m = agent_msg_new(AGENT_OPENED, 0, c->id, NULL, 0, &len);
	agent_send_msg(m, len);
	(void)conn_shut(c);
}

/* What poll() said of a connection's socket. */
static void
conn_ready(struct conn *c, short revents)
{
	int err, tried = 0;

	if (c->connecting) {
		conn_connected(c);
		return;
	}
	if (!c->rdeof && !c->passing && c->credit > 0 &&
	    (revents & (POLLIN | POLLHUP | POLLERR))) {
		tried = 1;
		if (conn_read(c) == -1)
			return;
	}
	if (c->len > 0 && (revents & (POLLOUT | POLLHUP | POLLERR))) {
		tried = 1;
		if (conn_write(c) == -1)
			return;
	}
	if (revents & POLLERR) {
		err = sock_error(c->fd);
		conn_fail(c, "%s", strerror(err != 0 ? err : EIO));
		return;
	}
	/*
	 * Hung up with nothing to do now (its bytes wait for credit, or
	 * nothing is left to write): not polled again until the worker
	 * sends an ACK or DATA for it.
	 */
	if ((revents & POLLHUP) && !tried)
		c->held = 1;
}

/* Accepts what waits on the listener; one past AGENT_MAX_CONNS is closed. */
static void
listener_ready(void)
{
	struct sockaddr_in sin;
	socklen_t sl;
	unsigned char *m;
	uint32_t id;
	size_t len;
	int i, fd;

	for (i = 0; i < ACCEPTS_PER_ROUND; i++) {
		memset(&sin, 0, sizeof sin);
		sl = sizeof sin;
		fd = accept4(lfd, (struct sockaddr *)&sin, &sl,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				agent_warn("accept: %s", strerror(errno));
			return;
		}
		if (nconns >= AGENT_MAX_CONNS) {
			close(fd);
			continue;
		}
		/* The next id of the agent's that is not in use. */
		do {
			id = AGENT_CONN_AGENT | next_accept;
			next_accept = (next_accept + 1) & ~AGENT_CONN_AGENT;
			if (next_accept == 0)
				next_accept = 1;
		} while (conn_find(id) != NULL);
		(void)conn_new(id, fd);
		m = agent_msg_u32(AGENT_ACCEPT, id,
		    sin.sin_family == AF_INET ? ntohs(sin.sin_port) : 0, &len);
		agent_send_msg(m, len);
	}
}

/* LISTEN: the port asked for, else any; answered with LISTENING. */
static int
msg_listen(uint32_t id, const unsigned char *p, size_t plen)
{
	struct sockaddr_in sin;
	char why[AGENT_MAX_ERROR + 1] = "";
	socklen_t sl = sizeof sin;
	unsigned char *m;
	uint32_t port;
	size_t len;
	int one = 1, fd;

	if (id != 0 || agent_u32_decode(p, plen, &port) == -1 || port > 65535)
		return -1;
	/* The one before goes first: the same port may be asked again. */
	if (lfd != -1)
		close(lfd);
	lfd = -1;
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		snprintf(why, sizeof why, "socket: %s", strerror(errno));
		goto out;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&sin, sizeof sin) == -1) {
		/* Taken (or not this user's): any free one. */
		sin.sin_port = 0;
		if (port == 0 ||
		    bind(fd, (struct sockaddr *)&sin, sizeof sin) == -1) {
			snprintf(why, sizeof why, "bind 127.0.0.1:%u: %s",
			    (unsigned int)ntohs(sin.sin_port), strerror(errno));
			goto out;
		}
	}
	if (listen(fd, LISTEN_BACKLOG) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl) == -1) {
		snprintf(why, sizeof why, "listen: %s", strerror(errno));
		goto out;
	}
	lfd = fd;
	fd = -1;
out:
	if (fd != -1)
		close(fd);
	port = lfd != -1 ? ntohs(sin.sin_port) : 0;
	m = agent_listening_encode(port, why, &len);
	agent_send_msg(m, len);
	return 0;
}

/* DIAL: a connection to 127.0.0.1:port, OPENED once it connects. */
static int
msg_dial(uint32_t id, const unsigned char *p, size_t plen)
{
	char why[AGENT_MAX_ERROR + 1];
	struct sockaddr_in sin;
	struct conn *c;
	unsigned char *m;
	uint32_t port;
	size_t len;
	int fd;

	if (id == 0 || (id & AGENT_CONN_AGENT) ||
	    agent_u32_decode(p, plen, &port) == -1 || port < 1 ||
	    port > 65535 || conn_find(id) != NULL)
		return -1;
	if (nconns >= AGENT_MAX_CONNS) {
		send_close(id, "too many connections");
		return 0;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		snprintf(why, sizeof why, "socket: %s", strerror(errno));
		send_close(id, why);
		return 0;
	}
	if ((c = conn_new(id, fd)) == NULL) {
		close(fd);
		send_close(id, "too many connections");
		return 0;
	}
	c->port = port;
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)port);
	if (connect(fd, (struct sockaddr *)&sin, sizeof sin) == 0) {
		m = agent_msg_new(AGENT_OPENED, 0, id, NULL, 0, &len);
		agent_send_msg(m, len);
	} else if (errno == EINPROGRESS || errno == EINTR)
		c->connecting = 1;
	else
		conn_fail(c, "connect 127.0.0.1:%u: %s", port, strerror(errno));
	return 0;
}

/* DATA of the worker's: written at once as far as the socket takes it
 * (nothing held before it), the rest held, within the window the agent
 * gave; what was written is ACKed. */
static int
msg_data(struct conn *c, unsigned int flags, const unsigned char *p, size_t n)
{
	ssize_t w;

	if (c->wreof || c->passing || n > AGENT_CONN_WINDOW - c->len)
		return -1;
	c->held = 0;
	if (n > 0 && c->len == 0 && !c->connecting &&
	    (w = write(c->fd, p, n)) > 0) {
		p += w;
		n -= (size_t)w;
		c->acks += (uint64_t)w;
	}
	if (n > 0 && conn_hold(c, p, n) == -1) {
		conn_fail(c, "out of memory");
		return 0;
	}
	if (flags & AGENT_F_EOF) {
		c->wreof = 1;
		(void)conn_shut(c);
	}
	return 0;
}

int
relay_dispatch(const struct agent_hdr *h, const unsigned char *p)
{
	char why[AGENT_MAX_ERROR + 1];
	struct conn *c;
	uint32_t v;

	switch (h->type) {
	case AGENT_LISTEN:
		return msg_listen(h->id, p, h->len);
	case AGENT_DIAL:
		return msg_dial(h->id, p, h->len);
	case AGENT_PASS:
		if (h->id == 0)
			return -1;
		if ((c = conn_find(h->id)) != NULL && !c->passing) {
			c->passing = 1;
			c->held = 0;
			(void)conn_pass(c);
		}
		return 0;
	}
	if (h->id == 0)
		return -1;
	c = conn_find(h->id);
	/* A message for a connection that is gone is late, not wrong. */
	switch (h->type) {
	case AGENT_DATA:
		return c != NULL ? msg_data(c, h->flags, p, h->len) : 0;
	case AGENT_ACK:
		if (agent_u32_decode(p, h->len, &v) == -1)
			return -1;
		if (c != NULL) {
			c->credit += v;
			if (c->credit > CONN_CREDIT_CAP)
				c->credit = CONN_CREDIT_CAP;
			c->held = 0;
		}
		return 0;
	case AGENT_CLOSE:
		if (agent_close_decode(p, h->len, why) == -1)
			return -1;
		if (c != NULL)
			conn_free(c);
		return 0;
	}
	return -1;
}

int
relay_poll(struct pollfd *pfd)
{
	struct conn *c;
	short ev;
	int i, n = 0;

	/* What the sockets took since the last time, one ACK each. */
	for (i = 0; i < AGENT_MAX_CONNS; i++)
		if (conns[i].id != 0)
			conn_ack(&conns[i]);

	if (lfd != -1) {
		refs[n].slot = -1;
		refs[n].id = 0;
		pfd[n++] = (struct pollfd){.fd = lfd, .events = POLLIN};
	}
	for (i = 0; i < AGENT_MAX_CONNS; i++) {
		c = &conns[i];
		if (c->id == 0 || c->held)
			continue;
		if (c->connecting)
			ev = POLLOUT;
		else {
			/* No events: its errors and hang-up only. */
			ev = !c->rdeof && !c->passing && c->credit > 0 ? POLLIN
			                                               : 0;
			if (c->len > 0)
				ev |= POLLOUT;
		}
		refs[n].slot = i;
		refs[n].id = c->id;
		pfd[n++] = (struct pollfd){.fd = c->fd, .events = ev};
	}
	return n;
}

void
relay_ready(const struct pollfd *pfd, int n)
{
	struct conn *c;
	int i, listener = 0;

	/* A connection may be gone meanwhile: its id and fd tell. */
	for (i = 0; i < n; i++) {
		if (pfd[i].revents == 0)
			continue;
		if (refs[i].slot == -1) {
			listener = pfd[i].fd == lfd;
			continue;
		}
		c = &conns[refs[i].slot];
		if (c->id == refs[i].id && c->fd == pfd[i].fd)
			conn_ready(c, pfd[i].revents);
	}
	/* Last: a new connection may take a slot freed above. */
	if (listener)
		listener_ready();
}

void
relay_close_all(void)
{
	int i;

	for (i = 0; i < AGENT_MAX_CONNS; i++)
		if (conns[i].id != 0)
			conn_free(&conns[i]);
	if (lfd != -1)
		close(lfd);
	lfd = -1;
}
