/*
 * The stdio transport: one JSON-RPC message per line on stdin, one per
 * line on stdout and nothing else there.  A line longer than the cap is
 * dropped whole (answered with a parse error) without being buffered.
 * Pipes and sockets are watched by libevent; a regular file (epoll cannot
 * watch one) is read a chunk per loop turn and written synchronously.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "config.h"
#include "core.h"
#include "log.h"
#include "mcp.h"
#include "sandbox.h"
#include "transport.h"
#include "xmalloc.h"

#define STDIO_FILE_CHUNK (64 * 1024)

static struct bufferevent *in_bev, *out_bev;
static struct evbuffer *in_file; /* input read from a regular file */
static struct event *in_file_ev;
static int out_is_file;
static int discarding; /* inside a line that was too long */
static struct session *stdio_sess;
static void (*stdio_quit)(void); /* the client went away: all ends */

static void
stdio_too_long(void)
{
	log_warnx("stdin: message over %ld bytes dropped", sup.conf->max_line);
	mcp_send(
	    stdio_sess, rpc_error(NULL, RPC_PARSE_ERROR, "message too large"));
}

/* Take every complete line off the buffer. */
static void
stdio_lines(struct evbuffer *in)
{
	struct evbuffer_ptr eol;
	size_t len;
	char *line;

	/* While shutting down too: a call sent just before the signal is
	 * answered (mcp.c refuses new work then), not left without one. */
	while (stdio_sess != NULL) {
		eol = evbuffer_search_eol(in, NULL, NULL, EVBUFFER_EOL_LF);
		if (eol.pos == -1) {
			len = evbuffer_get_length(in);
			if (len > (size_t)sup.conf->max_line) {
				if (!discarding)
					stdio_too_long();
				discarding = 1;
				evbuffer_drain(in, len);
			}
			return;
		}
		len = (size_t)eol.pos;
		if (discarding || len > (size_t)sup.conf->max_line) {
			if (!discarding)
				stdio_too_long();
			evbuffer_drain(in, len + 1);
			discarding = 0;
			continue;
		}
		line = xmalloc(len + 1);
		evbuffer_remove(in, line, len);
		evbuffer_drain(in, 1);
		line[len] = '\0';
		if (len > 0 && line[len - 1] == '\r')
			line[--len] = '\0';
		if (len > 0)
			mcp_handle_line(stdio_sess, line, len);
		free(line);
	}
}

/*
 * The stdio client went away.  With --transport both only its session
 * ends (its calls cancelled, its sandboxes removed): the HTTP side serves
 * on until a signal.  Alone, the server shuts down.
 */
static void
stdio_gone(const char *what)
{
	struct session *sess = stdio_sess;

	if (strcmp(sup.conf->transport, "both") != 0) {
		log_info("%s; shutting down", what);
		stdio_quit();
		return;
	}
	if (sess == NULL)
		return;
	log_info("%s; the stdio session ends, HTTP goes on", what);
	stdio_sess = NULL;
	mcp_session_close(sess);
}

static void
stdio_eof(void)
{
	stdio_gone("stdin closed");
}

static void
stdio_read_cb(struct bufferevent *bev, void *arg)
{
	(void)arg;
	stdio_lines(bufferevent_get_input(bev));
}

static void
stdio_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)arg;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		bufferevent_disable(in_bev, EV_READ);
		stdio_eof();
	}
}

/* A regular file on stdin: a chunk per loop turn, then EOF. */
static void
stdio_file_cb(evutil_socket_t fd, short what, void *arg)
{
	int n;

	(void)what;
	(void)arg;
	if (sup.shutting_down || stdio_sess == NULL)
		return;
	n = evbuffer_read(in_file, fd, STDIO_FILE_CHUNK);
	if (n > 0) {
		stdio_lines(in_file);
		event_active(in_file_ev, EV_READ, 0);
		return;
	}
	if (n == -1 && errno == EINTR) {
		event_active(in_file_ev, EV_READ, 0);
		return;
	}
	stdio_eof();
}

static void
stdio_out_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)arg;
	if (what & BEV_EVENT_ERROR) {
		log_warnx("stdout closed");
		bufferevent_disable(out_bev, EV_WRITE);
		if (in_bev != NULL)
			bufferevent_disable(in_bev, EV_READ);
		stdio_gone("stdout closed");
	}
}

/* Write all of it to a regular file (which never blocks for long). */
static void
stdio_write_file(const char *s, size_t len)
{
	ssize_t n;

	while (len > 0) {
		if ((n = write(1, s, len)) == -1) {
			if (errno == EINTR)
				continue;
			log_warn("stdout");
			return;
		}
		s += n;
		len -= (size_t)n;
	}
}

static void
stdio_send(struct session *sess, json_object *msg)
{
	size_t len;
	const char *s;

	(void)sess;
	s = json_object_to_json_string_length(
	    msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	if (out_is_file) {
		stdio_write_file(s, len);
		stdio_write_file("\n", 1);
	} else if (out_bev != NULL) {
		evbuffer_add(bufferevent_get_output(out_bev), s, len);
		evbuffer_add(bufferevent_get_output(out_bev), "\n", 1);
	}
	json_object_put(msg);
}

/*
 * Can epoll watch it?  Pipes, sockets and terminals yes; regular files
 * and /dev/null no: those are read a chunk per loop turn and written at
 * once (neither ever waits long).
 */
static int
is_pollable(int fd)
{
	struct stat st;

	if (fstat(fd, &st) == -1)
		return 1;
	return S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || isatty(fd);
}

/* Is the stdio session still open? */
int
stdio_open(void)
{
	return stdio_sess != NULL;
}

/* Serve the client on stdin and stdout; quit() when it is gone. */
int
stdio_start(void (*quit)(void))
{
	stdio_quit = quit;
	stdio_sess = mcp_session_new(stdio_send, NULL);
	/* The user running the server: its snapshots outlive a restart. */
	snprintf(stdio_sess->principal, sizeof stdio_sess->principal, "user:%u",
	    (unsigned)geteuid());
	if (!is_pollable(0)) {
		in_file = evbuffer_new();
		in_file_ev = event_new(sup.base, 0, 0, stdio_file_cb, NULL);
		event_active(in_file_ev, EV_READ, 0);
	} else {
		if (evutil_make_socket_nonblocking(0) == -1 ||
		    (in_bev = bufferevent_socket_new(sup.base, 0, 0)) == NULL)
			return -1;
		bufferevent_setcb(
		    in_bev, stdio_read_cb, NULL, stdio_event_cb, NULL);
		bufferevent_enable(in_bev, EV_READ);
	}
	if ((out_is_file = !is_pollable(1)))
		return 0;
	if (evutil_make_socket_nonblocking(1) == -1 ||
	    (out_bev = bufferevent_socket_new(sup.base, 1, 0)) == NULL)
		return -1;
	bufferevent_setcb(out_bev, NULL, NULL, stdio_out_event_cb, NULL);
	bufferevent_enable(out_bev, EV_WRITE);
	return 0;
}

/*
 * Push out what is queued (blocking: we are about to exit).  A socket
 * bufferevent keeps its output's start frozen between its own writes
 * (evbuffer_write() refuses a frozen buffer): thawed first, or the end of
 * a long answer would be lost at exit.
 */
void
stdio_stop(void)
{
	struct evbuffer *out;

	if (out_bev != NULL) {
		out = bufferevent_get_output(out_bev);
		fcntl(1, F_SETFL, fcntl(1, F_GETFL) & ~O_NONBLOCK);
		evbuffer_unfreeze(out, 1);
		while (evbuffer_get_length(out) > 0)
			if (evbuffer_write(out, 1) <= 0 && errno != EINTR)
				break;
		bufferevent_free(out_bev);
		out_bev = NULL;
	}
	if (in_bev != NULL)
		bufferevent_free(in_bev);
	in_bev = NULL;
	if (in_file_ev != NULL) {
		event_free(in_file_ev);
		evbuffer_free(in_file);
		in_file_ev = NULL;
	}
}
