/*
 * The channel both sides speak (proto/chan.c), over a real socketpair on
 * one event loop: frames arrive whole and in order, a bad frame and the
 * peer's end are each reported once, and a channel freed from inside its
 * own callback is freed only once the frame is handed over.
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <event2/event.h>

#include "proto.h"

struct end {
	struct proto_chan *ch;
	int frames, lost, bad, closed;
	uint32_t last_reqid;
	char last[64];
	int free_on_frame; /* free the channel from the frame callback */
	int refuse; /* refuse every frame */
};

static int
on_frame(struct proto_frame *f, void *arg)
{
	struct end *e = arg;

	e->frames++;
	e->last_reqid = f->hdr.reqid;
	snprintf(e->last, sizeof e->last, "%.*s", (int)f->hdr.len,
	    (const char *)f->data);
	if (e->free_on_frame) {
		proto_chan_free(e->ch);
		e->ch = NULL;
	}
	return e->refuse ? -1 : 0;
}

static void
on_lost(enum proto_chan_end why, void *arg)
{
	struct end *e = arg;

	e->lost++;
	if (why == PROTO_CHAN_BAD)
		e->bad++;
	else
		e->closed++;
}

static struct event_base *base;
static int sv[2];
static struct end a, b;

static void
setup_pair(void)
{
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	cr_assert(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	cr_assert_not_null(base = event_base_new());
	cr_assert_not_null(
	    a.ch = proto_chan_new(base, sv[0], on_frame, on_lost, &a));
	cr_assert_not_null(
	    b.ch = proto_chan_new(base, sv[1], on_frame, on_lost, &b));
}

static void
spin(int turns)
{
	while (turns-- > 0)
		event_base_loop(base, EVLOOP_NONBLOCK | EVLOOP_ONCE);
}

static void
teardown_pair(void)
{
	proto_chan_free(a.ch);
	proto_chan_free(b.ch);
	event_base_free(base);
}

TestSuite(chan, .init = setup_pair, .fini = teardown_pair);

Test(chan, frames_both_ways_in_order)
{
	char msg[16];
	int i;

	for (i = 1; i <= 100; i++) {
		snprintf(msg, sizeof msg, "m%d", i);
		cr_assert_eq(proto_chan_send(a.ch, PROTO_DATA, PROTO_F_STDIN,
		                 (uint32_t)i, (uint32_t)i, msg, strlen(msg)),
		    0);
	}
	cr_assert_eq(proto_chan_send(b.ch, PROTO_HELLO, 0, 0, 0, "{}", 2), 0);
	spin(50);
	cr_expect_eq(b.frames, 100);
	cr_expect_eq(b.last_reqid, 100);
	cr_expect_str_eq(b.last, "m100");
	cr_expect_eq(a.frames, 1);
	cr_expect_str_eq(a.last, "{}");
	cr_expect_eq(a.lost + b.lost, 0);
}

Test(chan, oversize_refused_at_send)
{
	static char big[PROTO_MAX_PAYLOAD + 1];

	errno = 0;
	cr_expect_eq(proto_chan_send(a.ch, PROTO_DATA, PROTO_F_STDIN, 1, 1, big,
	                 sizeof big),
	    -1);
	cr_expect_eq(errno, EMSGSIZE);
}

Test(chan, bad_frame_reported_once)
{
	/* A header of an unknown type, straight onto the socket. */
	static const unsigned char junk[PROTO_HDR_LEN] = {0xff, 0xff};

	cr_assert(write(sv[0], junk, sizeof junk) == (ssize_t)sizeof junk);
	cr_assert(write(sv[0], junk, sizeof junk) == (ssize_t)sizeof junk);
	spin(20);
	cr_expect_eq(b.lost, 1);
	cr_expect_eq(b.bad, 1);
	cr_expect_eq(b.frames, 0);
}

Test(chan, refused_frame_ends_the_channel)
{
	b.refuse = 1;
	proto_chan_send(a.ch, PROTO_HELLO, 0, 0, 0, "x", 1);
	proto_chan_send(a.ch, PROTO_HELLO, 0, 0, 0, "y", 1);
	spin(20);
	cr_expect_eq(
	    b.frames, 1, "a frame after a refused one was handed over");
	cr_expect_eq(b.bad, 1);
}

Test(chan, peer_end_reported_once)
{
	proto_chan_free(a.ch);
	a.ch = NULL;
	spin(20);
	cr_expect_eq(b.lost, 1);
	cr_expect_eq(b.closed, 1);
}

Test(chan, freed_from_its_own_callback)
{
	b.free_on_frame = 1;
	proto_chan_send(a.ch, PROTO_HELLO, 0, 0, 0, "1", 1);
	proto_chan_send(a.ch, PROTO_HELLO, 0, 0, 0, "2", 1);
	proto_chan_send(a.ch, PROTO_HELLO, 0, 0, 0, "3", 1);
	spin(20);
	/* The first frame freed it: none after, no report of its end. */
	cr_expect_eq(b.frames, 1);
	cr_expect_eq(b.lost, 0);
	cr_expect_null(b.ch);
}

/* A hello speaks this build's protocol version, or is refused. */
static int
hello(const char *json, long long *version)
{
	struct proto_frame f;

	memset(&f, 0, sizeof f);
	f.hdr.type = PROTO_HELLO;
	f.hdr.len = (uint32_t)strlen(json);
	f.data = (unsigned char *)json;
	return proto_hello_version(&f, version);
}

Test(hello, version_checked)
{
	char ok[64];
	long long v;

	snprintf(ok, sizeof ok, "{\"pid\":7,\"version\":%d}", PROTO_VERSION);
	cr_expect_eq(hello(ok, &v), 0);
	cr_expect_eq(v, PROTO_VERSION);
	cr_expect_eq(hello("{\"pid\":7,\"version\":999}", &v), -1);
	cr_expect_eq(v, 999);
	cr_expect_eq(hello("{\"pid\":7}", &v), -1, "a hello without a version");
	cr_expect_eq(v, -1);
	cr_expect_eq(hello("{\"version\":\"1\"}", &v), -1, "a string version");
	cr_expect_eq(hello("not json", &v), -1);
}
