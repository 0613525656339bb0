/*
 * Exec sessions with standard input: Docker's exec start answers a request
 * carrying "Connection: Upgrade" / "Upgrade: tcp" with 101 and then uses
 * the connection raw, output one way (multiplexed) and input the other.
 * libcurl cannot switch a transfer to a raw stream, so it only connects
 * (CURLOPT_CONNECT_ONLY, which also does TLS for tcp:// engines), and this
 * file speaks the one request and the raw stream with curl_easy_send() and
 * curl_easy_recv() on libevent events of the connection's socket.
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "docker-int.h"
#include "log.h"
#include "xmalloc.h"

#define HIJACK_MAX_HEADER (16 * 1024)
#define HIJACK_MAX_ERROR (64 * 1024)
#define HIJACK_READ_CHUNK (32 * 1024)

struct docker_hijack {
	curl_socket_t fd;
	struct event *ev_read, *ev_write;
	struct evbuffer *out; /* request, then standard input */
	size_t request_left; /* bytes of the request still in out */
	int close_write, write_closed;
	struct evbuffer *head; /* response header, until complete */
	int head_done;
	long status;
	struct evbuffer *held; /* output refused while paused */
	int paused;
	struct evbuffer *errbody; /* the body of a refusal */
	docker_sent_cb sent_cb;
	char error[256];
};

void
docker_hijack_init(struct docker_req *r)
{
	struct docker_hijack *hj;

	hj = xcalloc(1, sizeof *hj);
	hj->fd = CURL_SOCKET_BAD;
	hj->out = evbuffer_new();
	hj->head = evbuffer_new();
	hj->held = evbuffer_new();
	hj->errbody = evbuffer_new();
	r->hj = hj;
}

/*
 * Stop watching the stream's socket.  Before curl closes it (removing the
 * handle does): an event deleted after its descriptor was closed is an
 * epoll error, and on a descriptor reused meanwhile it would be another's.
 */
void
docker_hijack_unwatch(struct docker_req *r)
{
	struct docker_hijack *hj = r->hj;

	if (hj->ev_read != NULL)
		event_free(hj->ev_read);
	if (hj->ev_write != NULL)
		event_free(hj->ev_write);
	hj->ev_read = hj->ev_write = NULL;
}

void
docker_hijack_free(struct docker_req *r)
{
	struct docker_hijack *hj = r->hj;

	docker_hijack_unwatch(r);
	evbuffer_free(hj->out);
	evbuffer_free(hj->head);
	evbuffer_free(hj->held);
	evbuffer_free(hj->errbody);
	free(hj);
	r->hj = NULL;
}

/* The stream ended (EOF, error or refusal): one done_cb, then free. */
static void
hijack_finish(struct docker_req *r)
{
	struct docker_hijack *hj = r->hj;
	struct docker *d = r->d;
	struct docker_resp resp;
	json_object *msg;
	char *err = NULL;

	memset(&resp, 0, sizeof resp);
	resp.status = hj->status;
	evbuffer_add(hj->errbody, "", 1);
	resp.body = (const char *)evbuffer_pullup(hj->errbody, -1);
	resp.len = evbuffer_get_length(hj->errbody) - 1;
	if (hj->error[0] != '\0')
		err = xstrdup(hj->error);
	else if (hj->status != 101 && hj->status != 200) {
		if ((resp.json = json_tokener_parse(resp.body)) != NULL &&
		    json_object_object_get_ex(resp.json, "message", &msg))
			err = xstrdup(json_object_get_string(msg));
		else
			xasprintf(&err, "Docker engine answered HTTP %ld",
			    hj->status);
	}
	resp.error = err;
	r->done_cb(&resp, r->arg);
	json_object_put(resp.json);
	free(err);
	TAILQ_REMOVE(&d->running, r, entry);
	docker_hijack_unwatch(r);
	curl_multi_remove_handle(d->multi, r->easy);
	docker_req_free(r);
}

static void
hijack_fail(struct docker_req *r, const char *what, CURLcode code)
{
	snprintf(r->hj->error, sizeof r->hj->error, "Docker stream %s (%s)",
	    what, curl_easy_strerror(code));
	hijack_finish(r);
}

/* Hand output to the owner; keep it if the owner is paused. */
static int
hijack_deliver(struct docker_req *r, const char *p, size_t len)
{
	struct docker_hijack *hj = r->hj;

	if (hj->status != 101 && hj->status != 200) {
		if (evbuffer_get_length(hj->errbody) + len <= HIJACK_MAX_ERROR)
			evbuffer_add(hj->errbody, p, len);
		return 0;
	}
	switch (r->data_cb(p, len, r->arg)) {
	case 0:
		return 0;
	case 1:
		evbuffer_add(hj->held, p, len);
		hj->paused = 1;
		event_del(hj->ev_read);
		return 0;
	}
	snprintf(hj->error, sizeof hj->error, "Docker stream aborted");
	return -1;
}

/* Parse "HTTP/1.1 101 UPGRADED" and skip the header lines. */
static int
hijack_head(struct docker_req *r)
{
	struct docker_hijack *hj = r->hj;
	struct evbuffer_ptr end;
	char line[64], *rest;
	size_t n, len;

	end = evbuffer_search(hj->head, "\r\n\r\n", 4, NULL);
	if (end.pos == -1) {
		if (evbuffer_get_length(hj->head) > HIJACK_MAX_HEADER) {
			snprintf(hj->error, sizeof hj->error,
			    "Docker response header too large");
			return -1;
		}
		return 0;
	}
	n = evbuffer_copyout(hj->head, line, sizeof line - 1);
	line[n] = '\0';
	if (sscanf(line, "HTTP/1.%*1[01] %ld", &hj->status) != 1) {
		snprintf(hj->error, sizeof hj->error,
		    "Docker answered with no HTTP status");
		return -1;
	}
	evbuffer_drain(hj->head, (size_t)end.pos + 4);
	hj->head_done = 1;
	event_add(hj->ev_write, NULL); /* the input may flow now */
	len = evbuffer_get_length(hj->head);
	if (len > 0) {
		rest = (char *)evbuffer_pullup(hj->head, -1);
		if (hijack_deliver(r, rest, len) == -1)
			return -1;
		evbuffer_drain(hj->head, len);
	}
	return 0;
}

static void
hijack_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct docker_req *r = arg;
	struct docker_hijack *hj = r->hj;
	char buf[HIJACK_READ_CHUNK];
	CURLcode rc;
	size_t n;

	(void)fd;
	(void)what;
	while (!hj->paused) {
		rc = curl_easy_recv(r->easy, buf, sizeof buf, &n);
		if (rc == CURLE_AGAIN)
			return;
		if (rc != CURLE_OK) {
			hijack_fail(r, "read failed", rc);
			return;
		}
		if (n == 0) {
			if (!hj->head_done)
				snprintf(hj->error, sizeof hj->error,
				    "Docker closed the connection before "
				    "answering");
			hijack_finish(r);
			return;
		}
		if (!hj->head_done) {
			evbuffer_add(hj->head, buf, n);
			if (hijack_head(r) == -1) {
				hijack_finish(r);
				return;
			}
		} else if (hijack_deliver(r, buf, n) == -1) {
			hijack_finish(r);
			return;
		}
	}
}

static void
hijack_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct docker_req *r = arg;
	struct docker_hijack *hj = r->hj;
	size_t len, sent, user;
	CURLcode rc;

	(void)what;
	while ((len = evbuffer_get_length(hj->out)) > 0) {
		/*
		 * Nothing but the request until the engine answered: it
		 * drops what it read ahead of the upgrade.
		 */
		if (!hj->head_done) {
			if (hj->request_left == 0) {
				event_del(hj->ev_write);
				return;
			}
			if (len > hj->request_left)
				len = hj->request_left;
		}
		if (len > HIJACK_READ_CHUNK)
			len = HIJACK_READ_CHUNK;
		rc = curl_easy_send(r->easy,
		    evbuffer_pullup(hj->out, (ssize_t)len), len, &sent);
		if (rc == CURLE_AGAIN)
			return;
		if (rc != CURLE_OK) {
			hijack_fail(r, "write failed", rc);
			return;
		}
		evbuffer_drain(hj->out, sent);
		user = sent;
		if (hj->request_left > 0) {
			if (user > hj->request_left)
				user -= hj->request_left, hj->request_left = 0;
			else
				hj->request_left -= user, user = 0;
		}
		if (user > 0 && hj->sent_cb != NULL)
			hj->sent_cb(user, r->arg);
		if (r->hj == NULL)
			return;
	}
	event_del(hj->ev_write);
	if (hj->close_write && !hj->write_closed && hj->head_done) {
		hj->write_closed = 1;
		if (shutdown(fd, SHUT_WR) == -1)
			log_debug(
			    "%s: shutdown: %s", __func__, strerror(errno));
	}
}

/* curl connected: send the request and start the raw stream. */
void
docker_hijack_connected(struct docker_req *r)
{
	struct docker_hijack *hj = r->hj;
	struct evbuffer *req;
	size_t blen = r->reqbody != NULL ? strlen(r->reqbody) : 0;
	curl_socket_t fd;

	if (curl_easy_getinfo(r->easy, CURLINFO_ACTIVESOCKET, &fd) !=
	        CURLE_OK ||
	    fd == CURL_SOCKET_BAD) {
		snprintf(hj->error, sizeof hj->error,
		    "Docker connection lost before the request");
		hijack_finish(r);
		return;
	}
	hj->fd = fd;
	req = evbuffer_new();
	evbuffer_add_printf(req,
	    "POST /%s%s HTTP/1.1\r\n"
	    "Host: docker\r\n"
	    "User-Agent: mcp-sandboxd\r\n"
	    "Content-Type: application/json\r\n"
	    "Content-Length: %zu\r\n"
	    "Connection: Upgrade\r\n"
	    "Upgrade: tcp\r\n"
	    "\r\n",
	    r->d->version, r->path, blen);
	if (blen > 0)
		evbuffer_add(req, r->reqbody, blen);
	hj->request_left = evbuffer_get_length(req);
	evbuffer_prepend_buffer(hj->out, req);
	evbuffer_free(req);
	hj->ev_read =
	    event_new(r->d->base, fd, EV_READ | EV_PERSIST, hijack_read_cb, r);
	hj->ev_write = event_new(
	    r->d->base, fd, EV_WRITE | EV_PERSIST, hijack_write_cb, r);
	event_add(hj->ev_read, NULL);
	event_add(hj->ev_write, NULL);
}

void
docker_hijack_pause(struct docker_req *r, int pause)
{
	struct docker_hijack *hj = r->hj;
	size_t len;

	if (hj == NULL || hj->ev_read == NULL)
		return;
	if (pause) {
		hj->paused = 1;
		event_del(hj->ev_read);
		return;
	}
	if (!hj->paused)
		return;
	hj->paused = 0;
	if ((len = evbuffer_get_length(hj->held)) > 0) {
		struct evbuffer *held = hj->held;

		hj->held = evbuffer_new();
		if (hijack_deliver(r, (const char *)evbuffer_pullup(held, -1),
		        len) == -1) {
			evbuffer_free(held);
			hijack_finish(r);
			return;
		}
		evbuffer_free(held);
		if (hj->paused)
			return;
	}
	event_add(hj->ev_read, NULL);
	event_active(hj->ev_read, EV_READ, 0);
}

void
docker_req_write(struct docker_req *r, const void *p, size_t len)
{
	struct docker_hijack *hj = r->hj;

	if (hj == NULL || hj->close_write || len == 0)
		return;
	evbuffer_add(hj->out, p, len);
	if (hj->ev_write != NULL)
		event_add(hj->ev_write, NULL);
}

void
docker_req_on_sent(struct docker_req *r, docker_sent_cb cb)
{
	if (r->hj != NULL)
		r->hj->sent_cb = cb;
}

/* End of input: half-close once everything queued has left. */
void
docker_req_close_write(struct docker_req *r)
{
	struct docker_hijack *hj = r->hj;

	if (hj == NULL || hj->close_write)
		return;
	hj->close_write = 1;
	if (hj->ev_write != NULL)
		event_add(hj->ev_write, NULL);
}
