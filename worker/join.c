/*
 * Two sockets joined: way 0 takes fd[0]'s bytes to fd[1], way 1 fd[1]'s
 * to fd[0].  Each way has a pipe that splice(2) fills from its socket and
 * empties into the other, so that the bytes never come up into this
 * process: a way holds at most its pipe (JOIN_PIPE asked of the kernel),
 * and its socket is read only while the pipe has room.  What was read
 * before the join (held) goes out first, by write.  A way whose socket
 * ended shuts the other's writing once all of it is out; when both ways
 * have, the join is done.  An error either way ends it.
 *
 * The pipes are made before a join is asked for (join_new()), so that a
 * caller without the descriptors can go on relaying another way.  The
 * sockets stay the caller's: join_free() closes the pipes only.  A
 * splice(2) to a reset socket raises SIGPIPE, which the worker ignores.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "join.h"
#include "log.h"
#include "xmalloc.h"

#define JOIN_PIPE (256 * 1024)
#define JOIN_ROUNDS 16 /* of reads and writes a way, then the loop's turn */

struct join_way {
	struct join *j;
	int from, to;
	int pipe[2];
	size_t cap; /* the pipe's, as the kernel gave it */
	size_t inpipe;
	int full; /* a read found nothing with bytes in the pipe: maybe full */
	struct evbuffer *held; /* read before the join, goes first */
	struct event *rev, *wev;
	int reading, writing; /* rev, wev added */
	int eof, shut; /* from ended; to's writing shut */
	long long bytes; /* read from its socket (held not counted) */
};

struct join {
	struct join_way way[2];
	join_cb *cb;
	void *arg;
	int over; /* cb called: nothing more happens */
};

struct join *
join_new(void)
{
	struct join *j = xcalloc(1, sizeof *j);
	int i, sz;

	for (i = 0; i < 2; i++) {
		j->way[i].pipe[0] = j->way[i].pipe[1] = -1;
		j->way[i].from = j->way[i].to = -1;
	}
	for (i = 0; i < 2; i++) {
		struct join_way *w = &j->way[i];

		if (pipe2(w->pipe, O_NONBLOCK | O_CLOEXEC) == -1) {
			w->pipe[0] = w->pipe[1] = -1;
			join_free(j);
			return NULL;
		}
		if ((sz = fcntl(w->pipe[1], F_SETPIPE_SZ, JOIN_PIPE)) == -1)
			sz = fcntl(w->pipe[1], F_GETPIPE_SZ);
		w->cap = sz > 0 ? (size_t)sz : 4096;
		w->j = j;
	}
	return j;
}

void
join_free(struct join *j)
{
	int i, k;

	if (j == NULL)
		return;
	for (i = 0; i < 2; i++) {
		struct join_way *w = &j->way[i];

		if (w->rev != NULL)
			event_free(w->rev);
		if (w->wev != NULL)
			event_free(w->wev);
		if (w->held != NULL)
			evbuffer_free(w->held);
		for (k = 0; k < 2; k++)
			if (w->pipe[k] != -1)
				(void)close(w->pipe[k]);
	}
	free(j);
}

/* The bytes a way read from its socket (what was held is not counted). */
long long
join_bytes(const struct join *j, int way)
{
	return j->way[way].bytes;
}

static int
join_again(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

/* Moves what can be moved; -1 (errno set) on an error of either socket. */
static int
join_way_move(struct join_way *w)
{
	ssize_t n;
	int round, moved;

	for (round = 0; round < JOIN_ROUNDS; round++) {
		moved = 0;
		while (evbuffer_get_length(w->held) > 0) {
			if (evbuffer_write(w->held, w->to) == -1) {
				if (join_again())
					return 0;
				return -1;
			}
		}
		if (w->inpipe > 0) {
			n = splice(w->pipe[0], NULL, w->to, NULL, w->inpipe,
			    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n == -1 && !join_again())
				return -1;
			if (n > 0) {
				w->inpipe -= (size_t)n;
				w->full = 0;
				moved = 1;
			}
		}
		if (!w->eof && !w->full && w->inpipe < w->cap) {
			n = splice(w->from, NULL, w->pipe[1], NULL,
			    w->cap - w->inpipe,
			    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				w->inpipe += (size_t)n;
				w->bytes += n;
				moved = 1;
			} else if (n == 0)
				w->eof = moved = 1;
			else if (!join_again())
				return -1;
			else if (w->inpipe > 0)
				w->full = 1;
		}
		if (w->eof && w->inpipe == 0 && !w->shut) {
			w->shut = 1;
			(void)shutdown(w->to, SHUT_WR);
		}
		if (!moved)
			break;
	}
	return 0;
}

/* An event added or deleted as wanted, only if that changes it. */
static void
join_event_want(struct event *ev, int *on, int want)
{
	if (want == *on)
		return;
	if (want)
		(void)event_add(ev, NULL);
	else
		(void)event_del(ev);
	*on = want;
}

/* A way's events as it now needs them. */
static void
join_way_wait(struct join_way *w)
{
	int held = evbuffer_get_length(w->held) > 0;

	join_event_want(w->rev, &w->reading,
	    !held && !w->eof && !w->full && w->inpipe < w->cap);
	join_event_want(w->wev, &w->writing, held || w->inpipe > 0);
}

/* Over: no event of it again, and the caller told, once. */
static void
join_end(struct join *j, const char *why)
{
	int i;

	j->over = 1;
	for (i = 0; i < 2; i++) {
		(void)event_del(j->way[i].rev);
		(void)event_del(j->way[i].wev);
	}
	j->cb(j->arg, why);
}

/* One way's turn; the join may be gone after it (its callback ran). */
static void
join_way_run(struct join_way *w)
{
	struct join *j = w->j;

	if (j->over)
		return;
	if (join_way_move(w) == -1)
		join_end(j, strerror(errno));
	else if (j->way[0].shut && j->way[1].shut)
		join_end(j, NULL);
	else
		join_way_wait(w);
}

static void
join_event_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	join_way_run(arg);
}

/*
 * From now on fd[0] and fd[1] are relayed here, each way beginning with
 * held[i] (taken, left empty), ended already if eof[i].  cb says when it
 * is over; the join is the caller's to free then, and not before.
 */
void
join_start(struct join *j, struct event_base *base, const int fd[2],
    struct evbuffer *held[2], const int eof[2], join_cb *cb, void *arg)
{
	int i;

	j->cb = cb;
	j->arg = arg;
	for (i = 0; i < 2; i++) {
		struct join_way *w = &j->way[i];

		w->from = fd[i];
		w->to = fd[1 - i];
		w->eof = eof[i] != 0;
		w->held = evbuffer_new();
		w->rev = event_new(
		    base, w->from, EV_READ | EV_PERSIST, join_event_cb, w);
		w->wev = event_new(
		    base, w->to, EV_WRITE | EV_PERSIST, join_event_cb, w);
		if (w->held == NULL || w->rev == NULL || w->wev == NULL)
			fatalx("%s: out of memory", __func__);
		if (held[i] != NULL)
			evbuffer_add_buffer(w->held, held[i]);
	}
	/* Each way's first turn from the loop, not from here, so that the
	 * caller is out of its own code before its callback can run. */
	for (i = 0; i < 2; i++)
		event_active(j->way[i].wev, EV_WRITE, 0);
}
