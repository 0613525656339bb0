/*
 * The agent's connections' channel (proto/agentwire.h): a unix socket in
 * a directory of the host that the sandbox has bound read-only at
 * AGENT_CHANNEL_DIR (the supervisor makes it, --worker-channel names it).
 * The connections' messages (relay.c's, proxy.c's) go this way both ways
 * instead of the agent's exec stream, which the engine copies through
 * its attach stream: that stream is the cap of a relayed connection's
 * bytes, this socket is not.
 *
 * Each start of the agent gets a new token (channel_listen()); the first
 * connection whose first message is CHANNEL with that token is the
 * channel, and the socket is unlinked and its listener closed then, so
 * nothing else connects.  Sandbox code runs as the agent's user and may
 * connect too: at most CHANNEL_MAX_PENDING connections wait for their
 * token, each CHANNEL_TOKEN_SECONDS at most.  What comes on the channel
 * is the agent's, as hostile as its stream (agent.c checks it the same
 * way, relay.c its connections).
 *
 * The channel is read with recvmsg(), for the sockets the agent passes
 * (PASSED): each descriptor that comes is queued, in order, and taken
 * by the PASSED whose bytes it came with (channel_take_fd()); the kernel
 * never gives one before the bytes that were sent with it.  At most
 * CHANNEL_MAX_FDS wait; more are closed, and those of a connection that
 * never showed the token are closed with it.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "agentwire.h"
#include "listenrest.h"
#include "log.h"
#include "random.h"
#include "worker.h"
#include "xmalloc.h"

#define CHANNEL_MAX_PENDING 4
#define CHANNEL_MAX_FDS 8 /* passed, not taken yet */
#define CHANNEL_FDS_A_READ 4
#define CHANNEL_READS_A_ROUND 8 /* then the loop's other events */
#define CHANNEL_TOKEN_SECONDS 5
/* Read ahead of the messages taken: one whole DATA and more. */
#define CHANNEL_READ_MAX (256 * 1024)

struct chconn {
	struct channel *ch;
	struct bufferevent *bev; /* written through; read by rev */
	struct event *rev;
	struct agent_reader rd;
	int fds[CHANNEL_MAX_FDS]; /* passed, in the order they came */
	size_t nfds;
	LIST_ENTRY(chconn) entry;
};

struct channel {
	struct worker *w;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct evconnlistener *lev;
	struct listenrest *rest; /* out of descriptors: it rests */
	char token[AGENT_TOKEN_MAX + 1]; /* "" while not listening */
	LIST_HEAD(, chconn) pending;
	size_t npending;
	struct chconn *up; /* the channel, once its token came */
};

/* The oldest descriptor the agent passed, or -1 when none came. */
int
channel_take_fd(struct channel *ch)
{
	struct chconn *cc;
	int fd;

	if (ch == NULL || (cc = ch->up) == NULL || cc->nfds == 0)
		return -1;
	fd = cc->fds[0];
	memmove(cc->fds, cc->fds + 1, (cc->nfds - 1) * sizeof cc->fds[0]);
	cc->nfds--;
	return fd;
}

static void
chconn_free(struct chconn *cc)
{
	struct channel *ch = cc->ch;

	while (cc->nfds > 0) /* passed, never taken */
		(void)close(cc->fds[--cc->nfds]);
	if (cc == ch->up)
		ch->up = NULL;
	else {
		LIST_REMOVE(cc, entry);
		ch->npending--;
	}
	event_free(cc->rev);
	bufferevent_free(cc->bev);
	agent_reader_clear(&cc->rd);
	free(cc);
}

static void
channel_unlisten(struct channel *ch)
{
	if (ch->lev != NULL) {
		listenrest_free(ch->rest);
		ch->rest = NULL;
		evconnlistener_free(ch->lev);
		ch->lev = NULL;
		(void)unlink(ch->path);
	}
	explicit_bzero(ch->token, sizeof ch->token);
	ch->token[0] = '\0';
}

/* The agent is gone: its channel, and whatever waits, closed. */
void
channel_close(struct channel *ch)
{
	struct chconn *cc;

	if (ch == NULL)
		return;
	channel_unlisten(ch);
	if (ch->up != NULL)
		chconn_free(ch->up);
	/* Each free unlinks the head. */
	// NOLINTBEGIN(clang-analyzer-unix.Malloc)
	while ((cc = LIST_FIRST(&ch->pending)) != NULL)
		chconn_free(cc);
	// NOLINTEND(clang-analyzer-unix.Malloc)
}

/* Whether the channel came (its token was right). */
int
channel_up(const struct channel *ch)
{
	return ch != NULL && ch->up != NULL;
}

/* A message made by the codec, on the channel and freed; -1 if it is not
 * up. */
int
channel_send(struct channel *ch, unsigned char *msg, size_t len)
{
	if (!channel_up(ch)) {
		free(msg);
		return -1;
	}
	bufferevent_write(ch->up->bev, msg, len);
	free(msg);
	return 0;
}

/* Whether the first message is the CHANNEL of this start's token. */
static int
channel_token_ok(
    struct channel *ch, const struct agent_hdr *h, const unsigned char *p)
{
	size_t n = strlen(ch->token), i;
	unsigned char d = 0;

	if (h->type != AGENT_CHANNEL || h->id != 0 || h->len != n || n == 0)
		return 0;
	for (i = 0; i < n; i++)
		d |= (unsigned char)(p[i] ^ (unsigned char)ch->token[i]);
	return d == 0;
}

/* The token came: this is the channel, and nothing else may connect. */
static void
channel_open(struct channel *ch, struct chconn *cc)
{
	struct chconn *o;

	LIST_REMOVE(cc, entry);
	ch->npending--;
	ch->up = cc;
	channel_unlisten(ch);
	// NOLINTBEGIN(clang-analyzer-unix.Malloc)
	while ((o = LIST_FIRST(&ch->pending)) != NULL)
		chconn_free(o);
	// NOLINTEND(clang-analyzer-unix.Malloc)
	event_add(cc->rev, NULL); /* no timeout now */
	log_debug("agent: its connections take the channel");
	agent_channel_up(ch->w);
}

/*
 * Takes n bytes read from cc: its messages, or its token first.  -1 if
 * cc is gone (or the agent: nothing of cc after).
 */
static int
chconn_take(struct chconn *cc, const unsigned char *buf, size_t n)
{
	struct channel *ch = cc->ch;
	size_t off, t;
	int done;

	for (off = 0; off < n; off += t) {
		t = agent_reader_take(&cc->rd, buf + off, n - off, &done);
		if (t == (size_t)-1) {
			if (cc != ch->up) {
				log_warnx("agent: a connection to the "
				          "channel without its token");
				chconn_free(cc);
				return -1;
			}
			agent_channel_lost(
			    ch->w, "a bad message header on the channel");
			return -1;
		}
		if (!done)
			continue;
		if (cc != ch->up) {
			if (!channel_token_ok(ch, &cc->rd.hdr, cc->rd.buf)) {
				log_warnx("agent: a connection to the "
				          "channel without its token");
				chconn_free(cc);
				return -1;
			}
			channel_open(ch, cc);
			continue;
		}
		if (agent_channel_message(ch->w, &cc->rd.hdr, cc->rd.buf) == -1)
			return -1;
	}
	return 0;
}

/* The descriptors that came with a read: queued, before its bytes are
 * taken, for a PASSED among them (the token may come in the same read:
 * a connection's queue is the channel's once it is), else closed. */
static void
chconn_fds(struct chconn *cc, struct msghdr *mh)
{
	struct cmsghdr *cm;
	size_t i, n;
	int fd;

	for (cm = CMSG_FIRSTHDR(mh); cm != NULL; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET ||
		    cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len < CMSG_LEN(0))
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
			if (cc->nfds < CHANNEL_MAX_FDS)
				cc->fds[cc->nfds++] = fd;
			else
				(void)close(fd);
		}
	}
}

static void
chconn_read_cb(evutil_socket_t fd, short what, void *arg)
{
	static unsigned char buf[CHANNEL_READ_MAX];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(CHANNEL_FDS_A_READ * sizeof(int))];
	} u;
	struct chconn *cc = arg;
	struct channel *ch = cc->ch;
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
	struct msghdr mh;
	ssize_t n;
	int i;

	if (what & EV_TIMEOUT) {
		if (cc != ch->up)
			chconn_free(cc);
		return;
	}
	for (i = 0; i < CHANNEL_READS_A_ROUND; i++) {
		memset(&mh, 0, sizeof mh);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = u.b;
		mh.msg_controllen = sizeof u.b;
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			if (cc != ch->up)
				chconn_free(cc);
			else
				agent_channel_lost(
				    ch->w, n == 0 ? "the channel closed"
				                  : "the channel broke");
			return;
		}
		chconn_fds(cc, &mh);
		if (chconn_take(cc, buf, (size_t)n) == -1)
			return;
	}
}

static void
chconn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct chconn *cc = arg;
	struct channel *ch = cc->ch;

	(void)bev;
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)))
		return;
	if (cc != ch->up) {
		chconn_free(cc);
		return;
	}
	agent_channel_lost(ch->w, (what & BEV_EVENT_EOF) ? "the channel closed"
	                                                 : "the channel broke");
}

static void
channel_accept(struct evconnlistener *lev, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct channel *ch = arg;
	struct timeval tv = {CHANNEL_TOKEN_SECONDS, 0};
	struct chconn *cc;

	(void)lev;
	(void)sa;
	(void)salen;
	if (ch->npending >= CHANNEL_MAX_PENDING) {
		evutil_closesocket(fd);
		return;
	}
	cc = xcalloc(1, sizeof *cc);
	cc->ch = ch;
	agent_reader_init(&cc->rd);
	cc->bev = bufferevent_socket_new(
	    ch->w->base, fd, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (cc->bev == NULL) {
		evutil_closesocket(fd);
		agent_reader_clear(&cc->rd);
		free(cc);
		return;
	}
	cc->rev = event_new(
	    ch->w->base, fd, EV_READ | EV_PERSIST, chconn_read_cb, cc);
	if (cc->rev == NULL) {
		bufferevent_free(cc->bev);
		agent_reader_clear(&cc->rd);
		free(cc);
		return;
	}
	LIST_INSERT_HEAD(&ch->pending, cc, entry);
	ch->npending++;
	bufferevent_set_max_single_write(cc->bev, CHANNEL_READ_MAX);
	bufferevent_setcb(cc->bev, NULL, NULL, chconn_event_cb, cc);
	bufferevent_disable(cc->bev, EV_READ);
	bufferevent_enable(cc->bev, EV_WRITE);
	event_add(cc->rev, &tv);
}

/*
 * Listens anew for the agent about to start: the token its environment
 * gets, or NULL when there is no channel (then everything takes the
 * agent's stream).
 */
const char *
channel_listen(struct channel *ch)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};

	if (ch == NULL)
		return NULL;
	channel_close(ch);
	memcpy(sun.sun_path, ch->path, sizeof sun.sun_path);
	(void)unlink(ch->path);
	ch->lev = evconnlistener_new_bind(ch->w->base, channel_accept, ch,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, CHANNEL_MAX_PENDING,
	    (struct sockaddr *)&sun, (int)sizeof sun);
	if (ch->lev == NULL) {
		log_warnx("agent: cannot listen on %s: %s", ch->path,
		    strerror(errno));
		return NULL;
	}
	ch->rest = listenrest_new(ch->lev, "agent channel");
	/* The sandbox user connects: its uid is not the worker's. */
	if (chmod(ch->path, 0666) == -1) {
		log_warnx("agent: chmod %s: %s", ch->path, strerror(errno));
		channel_unlisten(ch);
		return NULL;
	}
	random_hex(ch->token, 16);
	return ch->token;
}

/* The channel of the directory dir (NULL: none; then NULL). */
struct channel *
channel_new(struct worker *w, const char *dir)
{
	struct channel *ch;
	int n;

	if (dir == NULL || *dir == '\0')
		return NULL;
	ch = xcalloc(1, sizeof *ch);
	ch->w = w;
	LIST_INIT(&ch->pending);
	n = snprintf(
	    ch->path, sizeof ch->path, "%s/%s", dir, AGENT_CHANNEL_SOCK);
	if (n < 0 || (size_t)n >= sizeof ch->path) {
		log_warnx("agent: the channel's path %s/%s is too long", dir,
		    AGENT_CHANNEL_SOCK);
		free(ch);
		return NULL;
	}
	return ch;
}

void
channel_free(struct channel *ch)
{
	if (ch == NULL)
		return;
	channel_close(ch);
	free(ch);
}
