/*
 * Two sockets joined in the kernel (worker/join.c), on this host: TCP
 * pairs on loopback, a join between their server ends, and the test's
 * own ends driven without blocking between turns of the loop.
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "join.h"

#define BIG (6 * 1024 * 1024)

/* As the worker does: a splice(2) to a reset socket raises it. */
static void
no_sigpipe(void)
{
	signal(SIGPIPE, SIG_IGN);
}

TestSuite(join, .init = no_sigpipe);

/* A connected TCP pair on loopback: out[0] the client, out[1] the server
 * end, both nonblocking. */
static void
tcp_pair(int out[2])
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof sa;
	int l;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(l != -1);
	cr_assert(bind(l, (struct sockaddr *)&sa, sizeof sa) == 0);
	cr_assert(listen(l, 1) == 0);
	cr_assert(getsockname(l, (struct sockaddr *)&sa, &sl) == 0);
	out[0] = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(connect(out[0], (struct sockaddr *)&sa, sizeof sa) == 0);
	out[1] = accept(l, NULL, NULL);
	cr_assert(out[1] != -1);
	close(l);
	cr_assert(fcntl(out[0], F_SETFL, O_NONBLOCK) == 0);
	cr_assert(fcntl(out[1], F_SETFL, O_NONBLOCK) == 0);
}

struct ended {
	int done;
	char why[256];
};

static void
ended_cb(void *arg, const char *why)
{
	struct ended *e = arg;

	e->done++;
	snprintf(e->why, sizeof e->why, "%s", why != NULL ? why : "");
}

/* One direction the test drives: send out on one end, read on the other. */
struct flow {
	int tx, rx;
	const unsigned char *data;
	size_t len, sent, got;
	unsigned char *back;
	int shut, eof;
};

static void
flow_step(struct flow *f)
{
	ssize_t n;

	if (f->sent < f->len) {
		n = send(f->tx, f->data + f->sent, f->len - f->sent, 0);
		if (n > 0)
			f->sent += (size_t)n;
	}
	if (f->sent == f->len && !f->shut) {
		f->shut = 1;
		shutdown(f->tx, SHUT_WR);
	}
	while (!f->eof) {
		n = recv(f->rx, f->back + f->got, f->len + 1 - f->got, 0);
		if (n == 0)
			f->eof = 1;
		if (n <= 0)
			break;
		f->got += (size_t)n;
		cr_assert(f->got <= f->len, "more bytes than were sent");
	}
}

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static unsigned char *
random_bytes(size_t n, unsigned seed)
{
	unsigned char *p = malloc(n);
	size_t i;

	cr_assert(p != NULL);
	srand(seed);
	for (i = 0; i < n; i++)
		p[i] = (unsigned char)rand();
	return p;
}

/* Two pairs, their server ends joined: the test drives a[0] and b[0]. */
struct rig {
	struct event_base *base;
	int a[2], b[2];
	struct join *j;
	struct ended e;
};

static void
rig_start(struct rig *r, struct evbuffer *held[2], const int eof[2])
{
	int fds[2];

	memset(r, 0, sizeof *r);
	r->base = event_base_new();
	cr_assert_not_null(r->base);
	tcp_pair(r->a);
	tcp_pair(r->b);
	r->j = join_new();
	cr_assert_not_null(r->j);
	fds[0] = r->a[1];
	fds[1] = r->b[1];
	join_start(r->j, r->base, fds, held, eof, ended_cb, &r->e);
}

/* Turns of the loop until the join ended, or ms passed. */
static void
rig_wait(struct rig *r, int ms)
{
	long long end = now_ms() + ms;

	while (r->e.done == 0 && now_ms() < end)
		event_base_loop(r->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

static void
rig_free(struct rig *r)
{
	int i;

	join_free(r->j);
	for (i = 0; i < 2; i++) {
		if (r->a[i] != -1)
			close(r->a[i]);
		if (r->b[i] != -1)
			close(r->b[i]);
	}
	event_base_free(r->base);
}

/*
 * Both ways at once, each beginning with bytes read before the join: the
 * very bytes, in order, each way's EOF through, then done without an
 * error; the counts are what the join read.
 */
Test(join, both_ways_held_first_and_eof)
{
	static const char held0[] = "held-before-0:";
	static const char held1[] = "held-before-1:";
	struct evbuffer *held[2];
	struct flow f[2];
	struct rig r;
	int eof[2] = {0, 0};
	unsigned char *d0, *d1;
	long long end;
	size_t h0 = strlen(held0), h1 = strlen(held1);

	d0 = random_bytes(BIG, 1);
	d1 = random_bytes(BIG / 2, 2);
	memcpy(d0, held0, h0);
	memcpy(d1, held1, h1);
	held[0] = evbuffer_new();
	held[1] = evbuffer_new();
	evbuffer_add(held[0], held0, h0);
	evbuffer_add(held[1], held1, h1);
	rig_start(&r, held, eof);
	cr_expect_eq(evbuffer_get_length(held[0]), 0, "held not taken");
	/* a's client sends d0 (its head held already), b's client d1. */
	f[0] = (struct flow){.tx = r.a[0],
	    .rx = r.b[0],
	    .data = d0,
	    .len = BIG,
	    .sent = h0,
	    .back = malloc(BIG + 1)};
	f[1] = (struct flow){.tx = r.b[0],
	    .rx = r.a[0],
	    .data = d1,
	    .len = BIG / 2,
	    .sent = h1,
	    .back = malloc(BIG / 2 + 1)};
	end = now_ms() + 30000;
	while ((!f[0].eof || !f[1].eof || r.e.done == 0) && now_ms() < end) {
		flow_step(&f[0]);
		flow_step(&f[1]);
		event_base_loop(r.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	}
	cr_assert(f[0].eof && f[1].eof, "no EOF: %zu/%zu, %zu/%zu", f[0].got,
	    f[0].len, f[1].got, f[1].len);
	cr_expect_eq(f[0].got, f[0].len);
	cr_expect_eq(f[1].got, f[1].len);
	cr_expect(memcmp(f[0].back, d0, BIG) == 0, "way 0: other bytes");
	cr_expect(memcmp(f[1].back, d1, BIG / 2) == 0, "way 1: other bytes");
	cr_expect_eq(r.e.done, 1);
	cr_expect_str_eq(r.e.why, "");
	cr_expect_eq(join_bytes(r.j, 0), BIG - (long long)h0);
	cr_expect_eq(join_bytes(r.j, 1), BIG / 2 - (long long)h1);
	rig_free(&r);
	evbuffer_free(held[0]);
	evbuffer_free(held[1]);
	free(f[0].back);
	free(f[1].back);
	free(d0);
	free(d1);
}

/* A way that ended before the join: the other end's writing is shut at
 * once, and the other way goes on. */
Test(join, ended_before)
{
	struct evbuffer *held[2] = {NULL, NULL};
	struct rig r;
	int eof[2] = {1, 0};
	char buf[16];
	long long end;
	ssize_t n = -1;

	rig_start(&r, held, eof);
	end = now_ms() + 10000;
	while (now_ms() < end) {
		event_base_loop(r.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		if ((n = recv(r.b[0], buf, sizeof buf, 0)) != -1)
			break;
	}
	cr_expect_eq(n, 0, "b's client saw no EOF");
	cr_expect_eq(r.e.done, 0, "done with one way still open");
	cr_assert(send(r.b[0], "pong", 4, 0) == 4);
	shutdown(r.b[0], SHUT_WR);
	rig_wait(&r, 10000);
	cr_expect_eq(r.e.done, 1);
	cr_expect_eq(recv(r.a[0], buf, sizeof buf, 0), 4);
	cr_expect_eq(join_bytes(r.j, 1), 4);
	rig_free(&r);
}

/* An end reset mid-transfer: the join ends with why, once. */
Test(join, reset_ends_it)
{
	struct evbuffer *held[2] = {NULL, NULL};
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	struct rig r;
	int i, eof[2] = {0, 0};
	long long end;

	rig_start(&r, held, eof);
	cr_assert(send(r.a[0], "x", 1, 0) == 1);
	cr_assert(
	    setsockopt(r.b[0], SOL_SOCKET, SO_LINGER, &lg, sizeof lg) == 0);
	close(r.b[0]); /* an RST */
	r.b[0] = -1;
	end = now_ms() + 10000;
	while (r.e.done == 0 && now_ms() < end) {
		(void)send(r.a[0], "y", 1, MSG_NOSIGNAL);
		event_base_loop(r.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	}
	for (i = 0; i < 100; i++) /* a second end would show */
		event_base_loop(r.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	cr_expect_eq(r.e.done, 1);
	cr_expect_neq(r.e.why[0], '\0', "ended without saying why");
	rig_free(&r);
}

/* A join never started is freed with its pipes. */
Test(join, new_and_free)
{
	int i, before, after;

	before = dup(0);
	close(before);
	for (i = 0; i < 100; i++)
		join_free(join_new());
	after = dup(0);
	close(after);
	cr_expect_eq(before, after, "descriptors leaked");
}
