/*
 * A hijacked stream (engine/docker-hijack.c) against a fake engine on a
 * unix socket: the engine answers /_ping, then 101 to the exec start and
 * streams; the stream is cancelled, or ends, while both of its socket's
 * events are registered.  libevent must not be asked to change the events
 * of a socket curl has closed already (an epoll error, and the wrong
 * socket if its number were reused): nothing is logged.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "docker.h"
#include "fakesock.h"

static struct event_base *base;
static struct evconnlistener *lis;
static char sock_path[108], host[128];
static int warnings, got_data, done;
static struct bufferevent *peer; /* the connection of the stream */
static struct bufferevent *conns[8]; /* every connection, freed at the end */

static void
on_log(int severity, const char *msg)
{
	if (severity >= EVENT_LOG_WARN) {
		fprintf(stderr, "libevent: %s\n", msg);
		warnings++;
	}
}

/* The engine's side: a request at a time, answered by its first line. */
static void
engine_read(struct bufferevent *bev, void *arg)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr end;
	char line[256];
	size_t n;

	(void)arg;
	end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	if (end.pos < 0)
		return;
	n = evbuffer_get_length(in) < sizeof line - 1 ? evbuffer_get_length(in)
	                                              : sizeof line - 1;
	evbuffer_copyout(in, line, n);
	line[n] = '\0';
	evbuffer_drain(in, evbuffer_get_length(in));
	if (strncmp(line, "GET /_ping", 10) == 0) {
		evbuffer_add_printf(bufferevent_get_output(bev),
		    "HTTP/1.1 200 OK\r\nApi-Version: 1.41\r\n"
		    "Content-Length: 2\r\n\r\nOK");
		return;
	}
	/* The exec start: upgraded, then a frame of stdout. */
	evbuffer_add_printf(bufferevent_get_output(bev),
	    "HTTP/1.1 101 UPGRADED\r\nContent-Type: "
	    "application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\n"
	    "Upgrade: tcp\r\n\r\n");
	evbuffer_add(bufferevent_get_output(bev), "\1\0\0\0\0\0\0\3hi\n", 11);
	peer = bev;
}

static void
engine_event(struct bufferevent *bev, short what, void *arg)
{
	size_t i;

	(void)what;
	(void)arg;
	if (bev == peer)
		peer = NULL;
	for (i = 0; i < sizeof conns / sizeof conns[0]; i++)
		if (conns[i] == bev)
			conns[i] = NULL;
	bufferevent_free(bev);
}

static void
engine_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int len, void *arg)
{
	struct bufferevent *bev;

	(void)l;
	(void)sa;
	(void)len;
	(void)arg;
	size_t i;

	bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	for (i = 0; i < sizeof conns / sizeof conns[0]; i++)
		if (conns[i] == NULL) {
			conns[i] = bev;
			break;
		}
	bufferevent_setcb(bev, engine_read, NULL, engine_event, NULL);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static int
on_data(const char *p, size_t len, void *arg)
{
	(void)p;
	(void)arg;
	got_data += (int)len;
	return 0;
}

static void
on_done(const struct docker_resp *r, void *arg)
{
	(void)arg;
	if (r->error != NULL)
		fprintf(stderr, "the request failed: %s\n", r->error);
	done++;
}

static void
setup(void)
{
	warnings = got_data = done = 0;
	peer = NULL;
	memset(conns, 0, sizeof conns);
	event_set_log_callback(on_log);
	curl_global_init(CURL_GLOBAL_ALL);
	cr_assert_not_null(base = event_base_new());
	lis = fakesock_listen(base, "mcp-hijack", engine_accept, sock_path,
	    sizeof sock_path, host, sizeof host);
}

static void
teardown(void)
{
	size_t i;

	for (i = 0; i < sizeof conns / sizeof conns[0]; i++)
		if (conns[i] != NULL)
			bufferevent_free(conns[i]);
	evconnlistener_free(lis);
	event_base_free(base);
	unlink(sock_path);
	curl_global_cleanup();
	event_set_log_callback(NULL);
}

/* Run the loop in 10 ms turns until *what reaches want (5 s at most). */
static void
spin_until(int *what, int want)
{
	struct timeval tv = {0, 10000};
	int i;

	for (i = 0; i < 500 && *what < want; i++) {
		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
}

static void
spin(int turns)
{
	int never = 0;

	while (turns-- > 0)
		spin_until(&never, 1);
}

TestSuite(hijack, .init = setup, .fini = teardown);

/*
 * A stream started, its first output in, and input pending, so that both
 * events of its socket are armed.
 */
static struct docker_req *
stream_running(struct docker *d)
{
	struct docker_req *r;

	cr_assert_not_null(d);
	r = docker_hijack(d, "/exec/x/start", NULL, on_data, on_done, NULL);
	cr_assert_not_null(r);
	/* Its first frame, as the engine sends it (8-byte header and 3). */
	spin_until(&got_data, 11);
	cr_assert_eq(got_data, 11, "the stream's first output never came");
	docker_req_write(r, "input", 5);
	return r;
}

Test(hijack, cancelled_mid_stream)
{
	struct docker *d = docker_new(base, host, NULL);
	struct docker_req *r = stream_running(d);

	spin(1);
	docker_req_cancel(r);
	spin(2);
	cr_expect_eq(done, 0, "a cancelled request was answered");
	docker_free(d);
	cr_expect_eq(warnings, 0, "libevent warned %d time(s)", warnings);
}

Test(hijack, engine_ends_the_stream)
{
	struct docker *d = docker_new(base, host, NULL);

	(void)stream_running(d);
	cr_assert_not_null(peer);
	engine_event(peer, BEV_EVENT_EOF, NULL); /* the engine hangs up */
	spin_until(&done, 1);
	cr_expect_eq(done, 1, "the stream's end was not reported");
	docker_free(d);
	cr_expect_eq(warnings, 0, "libevent warned %d time(s)", warnings);
}
