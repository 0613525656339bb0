/*
 * The channel between the supervisor and a worker, the same on both
 * sides: frames (frame.c) over a socket of the socketpair, read on the
 * event loop and handed to the owner one by one, written at once.
 *
 * The owner hears of each frame (frame_cb: -1 when it refuses one, which
 * ends the channel as a bad frame does) and, once, of the end (lost_cb:
 * PROTO_CHAN_BAD for a frame that did not parse or was refused,
 * PROTO_CHAN_CLOSED for the peer's end or an error).  Either callback may
 * free the channel: while frames are being handed over, proto_chan_free()
 * only marks it, and it goes when the reading stops.
 */
#include <stdlib.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "proto.h"
#include "xmalloc.h"

struct proto_chan {
	struct bufferevent *bev;
	proto_frame_cb frame_cb;
	proto_lost_cb lost_cb;
	void *arg;
	int reading; /* handing frames over */
	int freed; /* proto_chan_free() while reading */
	int lost; /* lost_cb was called */
};

static void
chan_destroy(struct proto_chan *ch)
{
	bufferevent_free(ch->bev);
	free(ch);
}

static void
chan_lost(struct proto_chan *ch, enum proto_chan_end why)
{
	if (ch->lost || ch->freed)
		return;
	ch->lost = 1;
	bufferevent_disable(ch->bev, EV_READ);
	ch->lost_cb(why, ch->arg);
}

static void
chan_read_cb(struct bufferevent *bev, void *arg)
{
	struct proto_chan *ch = arg;
	struct proto_frame f;
	int rv;

	ch->reading = 1;
	while (!ch->freed && !ch->lost &&
	       (rv = proto_read(bufferevent_get_input(bev), &f)) != 0) {
		if (rv == -1) {
			chan_lost(ch, PROTO_CHAN_BAD);
			break;
		}
		rv = ch->frame_cb(&f, ch->arg);
		proto_frame_free(&f);
		if (rv == -1)
			chan_lost(ch, PROTO_CHAN_BAD);
	}
	ch->reading = 0;
	if (ch->freed)
		chan_destroy(ch);
}

static void
chan_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct proto_chan *ch = arg;

	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		chan_lost(ch, PROTO_CHAN_CLOSED);
}

/* A channel on fd (made non-blocking; closed with the channel). */
struct proto_chan *
proto_chan_new(struct event_base *base, int fd, proto_frame_cb frame_cb,
    proto_lost_cb lost_cb, void *arg)
{
	struct proto_chan *ch;

	if (evutil_make_socket_nonblocking(fd) == -1)
		return NULL;
	ch = xcalloc(1, sizeof *ch);
	if ((ch->bev = bufferevent_socket_new(
	         base, fd, BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		free(ch);
		return NULL;
	}
	ch->frame_cb = frame_cb;
	ch->lost_cb = lost_cb;
	ch->arg = arg;
	bufferevent_setcb(ch->bev, chan_read_cb, NULL, chan_event_cb, ch);
	bufferevent_enable(ch->bev, EV_READ | EV_WRITE);
	return ch;
}

/* The end of the channel, now or when the frame being handed over is. */
void
proto_chan_free(struct proto_chan *ch)
{
	if (ch == NULL || ch->freed)
		return;
	ch->freed = 1;
	if (!ch->reading)
		chan_destroy(ch);
	else
		bufferevent_disable(ch->bev, EV_READ | EV_WRITE);
}

/* Hold frames out in the channel's buffer (hold 0: send them on). */
void
proto_chan_hold(struct proto_chan *ch, int hold)
{
	if (ch == NULL || ch->freed)
		return;
	if (hold)
		bufferevent_disable(ch->bev, EV_WRITE);
	else
		bufferevent_enable(ch->bev, EV_WRITE);
}

/* A frame out; -1 with errno (EMSGSIZE: over PROTO_MAX_PAYLOAD). */
int
proto_chan_send(struct proto_chan *ch, uint16_t type, uint16_t flags,
    uint32_t stream, uint32_t reqid, const void *data, size_t len)
{
	struct proto_hdr h = {
	    .type = type, .flags = flags, .stream = stream, .reqid = reqid};

	return proto_write(bufferevent_get_output(ch->bev), &h, data, len);
}

/* A JSON frame out; -1 with errno (EMSGSIZE: over PROTO_MAX_PAYLOAD). */
int
proto_chan_send_json(struct proto_chan *ch, uint16_t type, uint32_t stream,
    uint32_t reqid, json_object *obj)
{
	return proto_write_json(
	    bufferevent_get_output(ch->bev), type, stream, reqid, obj);
}
