/*
 * The stdio transport: one JSON-RPC message per line on stdin, one per
 * line on stdout and nothing else there.  A line longer than the cap is
 * dropped whole (answered with a parse error) without being buffered.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "config.h"
#include "log.h"
#include "supervisor.h"
#include "xmalloc.h"

static struct bufferevent *in_bev, *out_bev;
static int discarding; /* inside a line that was too long */

static void
stdio_read_cb(struct bufferevent *bev, void *arg)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr eol;
	size_t len;
	char *line;

	(void)arg;
	while (!sup.shutting_down) {
		eol = evbuffer_search_eol(in, NULL, NULL, EVBUFFER_EOL_LF);
		if (eol.pos == -1) {
			len = evbuffer_get_length(in);
			if (len > (size_t)sup.conf->max_line) {
				if (!discarding) {
					log_warnx("stdin: message over %ld "
					          "bytes dropped",
					    sup.conf->max_line);
					mcp_send(
					    rpc_error(NULL, RPC_PARSE_ERROR,
					        "message too "
					        "large"));
				}
				discarding = 1;
				evbuffer_drain(in, len);
			}
			return;
		}
		len = (size_t)eol.pos;
		if (discarding) {
			evbuffer_drain(in, len + 1);
			discarding = 0;
			continue;
		}
		if (len > (size_t)sup.conf->max_line) {
			evbuffer_drain(in, len + 1);
			log_warnx("stdin: message over %ld bytes dropped",
			    sup.conf->max_line);
			mcp_send(rpc_error(
			    NULL, RPC_PARSE_ERROR, "message too large"));
			continue;
		}
		line = xmalloc(len + 1);
		evbuffer_remove(in, line, len);
		evbuffer_drain(in, 1);
		line[len] = '\0';
		if (len > 0 && line[len - 1] == '\r')
			line[--len] = '\0';
		if (len > 0)
			mcp_handle_line(line, len);
		free(line);
	}
}

static void
stdio_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)arg;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		log_info("stdin closed; shutting down");
		bufferevent_disable(in_bev, EV_READ);
		supervisor_quit();
	}
}

static void
stdio_out_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)arg;
	if (what & BEV_EVENT_ERROR) {
		log_warnx("stdout closed; shutting down");
		bufferevent_disable(out_bev, EV_WRITE);
		supervisor_quit();
	}
}

int
stdio_start(void)
{
	if (evutil_make_socket_nonblocking(0) == -1 ||
	    evutil_make_socket_nonblocking(1) == -1)
		return -1;
	in_bev = bufferevent_socket_new(sup.base, 0, 0);
	out_bev = bufferevent_socket_new(sup.base, 1, 0);
	if (in_bev == NULL || out_bev == NULL)
		return -1;
	bufferevent_setcb(in_bev, stdio_read_cb, NULL, stdio_event_cb, NULL);
	bufferevent_setcb(out_bev, NULL, NULL, stdio_out_event_cb, NULL);
	bufferevent_enable(in_bev, EV_READ);
	bufferevent_enable(out_bev, EV_WRITE);
	return 0;
}

/* Queue one message and its newline. */
void
stdio_write(const char *s, size_t len)
{
	struct evbuffer *out;

	if (out_bev == NULL)
		return;
	out = bufferevent_get_output(out_bev);
	evbuffer_add(out, s, len);
	evbuffer_add(out, "\n", 1);
}

/* Push out what is queued (blocking: we are about to exit). */
void
stdio_stop(void)
{
	struct evbuffer *out;

	if (out_bev == NULL)
		return;
	out = bufferevent_get_output(out_bev);
	fcntl(1, F_SETFL, fcntl(1, F_GETFL) & ~O_NONBLOCK);
	while (evbuffer_get_length(out) > 0)
		if (evbuffer_write(out, 1) <= 0)
			break;
	bufferevent_free(in_bev);
	bufferevent_free(out_bev);
	in_bev = out_bev = NULL;
}
