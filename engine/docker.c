/*
 * Docker Engine API client on curl multi + libevent (the "hiperfifo"
 * pattern): curl tells us which sockets and timeouts to watch, libevent
 * tells curl when they fire.
 */
#include <sys/queue.h>

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "docker.h"
#include "docker-int.h"
#include "log.h"
#include "xmalloc.h"

struct docker_sock {
	struct event *ev;
	struct docker *d;
};

static void docker_start(struct docker_req *);
static void docker_finish(struct docker_req *, CURLcode);

static void
docker_check_info(struct docker *d)
{
	struct docker_req *r;
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(d->multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &r);
		/* A hijacked connection stays with curl: we speak on it. */
		if (r->hijack && msg->data.result == CURLE_OK)
			docker_hijack_connected(r);
		else
			docker_finish(r, msg->data.result);
	}
}

static void
docker_event_cb(evutil_socket_t fd, short what, void *arg)
{
	struct docker *d = arg;
	int action = 0, running;

	if (what & EV_READ)
		action |= CURL_CSELECT_IN;
	if (what & EV_WRITE)
		action |= CURL_CSELECT_OUT;
	curl_multi_socket_action(d->multi, fd, action, &running);
	docker_check_info(d);
}

static void
docker_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct docker *d = arg;
	int running;

	(void)fd;
	(void)what;
	curl_multi_socket_action(d->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	docker_check_info(d);
}

static int
docker_multi_timer(CURLM *multi, long ms, void *arg)
{
	struct docker *d = arg;
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	(void)multi;
	if (ms < 0)
		evtimer_del(d->timer);
	else
		evtimer_add(d->timer, &tv);
	return 0;
}

static int
docker_multi_sock(CURL *easy, curl_socket_t s, int what, void *arg, void *sockp)
{
	struct docker *d = arg;
	struct docker_sock *ds = sockp;
	short kind;

	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (ds != NULL) {
			event_free(ds->ev);
			free(ds);
			curl_multi_assign(d->multi, s, NULL);
		}
		return 0;
	}
	kind = EV_PERSIST | ((what & CURL_POLL_IN) ? EV_READ : 0) |
	       ((what & CURL_POLL_OUT) ? EV_WRITE : 0);
	if (ds == NULL) {
		ds = xcalloc(1, sizeof *ds);
		ds->d = d;
		curl_multi_assign(d->multi, s, ds);
	} else
		event_free(ds->ev);
	ds->ev = event_new(d->base, s, kind, docker_event_cb, d);
	event_add(ds->ev, NULL);
	return 0;
}

/*
 * Parse DOCKER_HOST into a base URL (and a socket path for unix://).  TLS
 * for tcp://: certs is a directory (ca.pem, cert.pem, key.pem), "" for
 * none, NULL for the environment's (DOCKER_TLS_VERIFY, DOCKER_CERT_PATH).
 */
static int
docker_parse_host(struct docker *d, const char *host, const char *certs)
{
	const char *tls = NULL;

	if (strncmp(host, "unix://", 7) == 0 && host[7] == '/') {
		d->unix_path = xstrdup(host + 7);
		d->base_url = xstrdup("http://docker");
		return 0;
	}
	if (strncmp(host, "tcp://", 6) == 0 && host[6] != '\0') {
		if (certs == NULL) {
			tls = getenv("DOCKER_TLS_VERIFY");
			certs = getenv("DOCKER_CERT_PATH");
		}
		if ((tls != NULL && *tls != '\0') ||
		    (certs != NULL && *certs != '\0')) {
			xasprintf(&d->base_url, "https://%s", host + 6);
			if (certs != NULL && *certs != '\0')
				d->cert_path = xstrdup(certs);
		} else
			xasprintf(&d->base_url, "http://%s", host + 6);
		return 0;
	}
	errno = EINVAL;
	return -1;
}

struct docker *
docker_new(struct event_base *base, const char *host, const char *tls)
{
	struct docker *d;

	d = xcalloc(1, sizeof *d);
	if (docker_parse_host(d, host, tls) == -1) {
		free(d);
		return NULL;
	}
	d->base = base;
	TAILQ_INIT(&d->waiting);
	TAILQ_INIT(&d->running);
	if ((d->multi = curl_multi_init()) == NULL)
		fatalx("%s: curl_multi_init", __func__);
	d->timer = evtimer_new(base, docker_timer_cb, d);
	curl_multi_setopt(d->multi, CURLMOPT_SOCKETFUNCTION, docker_multi_sock);
	curl_multi_setopt(d->multi, CURLMOPT_SOCKETDATA, d);
	curl_multi_setopt(d->multi, CURLMOPT_TIMERFUNCTION, docker_multi_timer);
	curl_multi_setopt(d->multi, CURLMOPT_TIMERDATA, d);
	return d;
}

void
docker_req_free(struct docker_req *r)
{
	if (r->hj != NULL)
		docker_hijack_free(r);
	if (r->easy != NULL)
		curl_easy_cleanup(r->easy);
	curl_slist_free_all(r->hdrs);
	free(r->method);
	free(r->path);
	free(r->reqbody);
	free(r->ctype);
	free(r->body);
	free(r);
}

void
docker_free(struct docker *d)
{
	struct docker_req *r;

	/* Each cancel unlinks the head (the analyzer cannot see it). */
	while ((r = TAILQ_FIRST(&d->running)) != NULL)
		docker_req_cancel(r); // NOLINT(clang-analyzer-unix.Malloc)
	while ((r = TAILQ_FIRST(&d->waiting)) != NULL)
		docker_req_cancel(r); // NOLINT(clang-analyzer-unix.Malloc)
	curl_multi_cleanup(d->multi);
	event_free(d->timer);
	free(d->base_url);
	free(d->unix_path);
	free(d->cert_path);
	free(d);
}

const char *
docker_api_version(struct docker *d)
{
	return d->vstate == V_KNOWN ? d->version : NULL;
}

/*
 * Whether the engine is Podman's service (its /_ping names a Libpod API
 * version): 1 or 0 once the version is known (docker_api_version()),
 * else -1.
 */
int
docker_libpod(struct docker *d)
{
	return d->vstate == V_KNOWN ? d->libpod : -1;
}

static size_t
docker_write_cb(char *ptr, size_t size, size_t n, void *arg)
{
	struct docker_req *r = arg;
	size_t len = size * n;

	if (r->data_cb != NULL) {
		switch (r->data_cb(ptr, len, r->arg)) {
		case 0:
			return len;
		case 1:
			return CURL_WRITEFUNC_PAUSE;
		default:
			return 0; /* aborts the transfer */
		}
	}
	if (r->keep > 0 && r->len + len > r->keep) {
		/* The rest is not wanted (output of a helper in a sandbox):
		 * dropped, never held. */
		len = r->len < r->keep ? r->keep - r->len : 0;
		if (len == 0)
			return size * n;
	}
	if (r->overflow || r->len + len > DOCKER_MAX_BODY) {
		r->overflow = 1;
		return len;
	}
	if (r->len + len + 1 > r->cap) {
		r->cap = (r->len + len + 1) * 2;
		r->body = xrealloc(r->body, r->cap);
	}
	memcpy(r->body + r->len, ptr, len);
	r->len += len;
	r->body[r->len] = '\0';
	return size * n;
}

static struct docker_req *
docker_req_new(struct docker *d, const char *method, const char *path,
    json_object *body, docker_data_cb data_cb, docker_done_cb done_cb,
    void *arg)
{
	struct docker_req *r;

	r = xcalloc(1, sizeof *r);
	r->d = d;
	r->method = xstrdup(method);
	r->path = xstrdup(path);
	if (body != NULL)
		r->reqbody = xstrdup(json_object_to_json_string_ext(
		    body, JSON_C_TO_STRING_PLAIN));
	r->data_cb = data_cb;
	r->done_cb = done_cb;
	r->arg = arg;
	return r;
}

/* Learn the API version from /_ping: the lower of the engine's and ours. */
static void
docker_ping_finish(
    struct docker *d, struct docker_req *r, const struct docker_resp *resp)
{
	struct docker_reqs q;
	struct docker_req *w;
	struct curl_header *h;
	struct docker_resp fail;
	unsigned int major, minor;

	d->ping = NULL;
	TAILQ_INIT(&q);
	TAILQ_CONCAT(&q, &d->waiting, entry);
	if (resp->error == NULL) {
		if (curl_easy_header(r->easy, "Api-Version", 0, CURLH_HEADER,
		        -1, &h) == CURLHE_OK &&
		    sscanf(h->value, "%u.%u", &major, &minor) == 2 &&
		    major == 1) {
			if (minor > DOCKER_MAX_API_MINOR)
				minor = DOCKER_MAX_API_MINOR;
		} else
			minor = 24;
		snprintf(d->version, sizeof d->version, "v1.%u", minor);
		d->libpod = curl_easy_header(r->easy, "Libpod-Api-Version", 0,
		                CURLH_HEADER, -1, &h) == CURLHE_OK;
		d->vstate = V_KNOWN;
		log_debug("%s: Docker API %s%s", __func__, d->version,
		    d->libpod ? " (Podman)" : "");
		while ((w = TAILQ_FIRST(&q)) != NULL) {
			TAILQ_REMOVE(&q, w, entry);
			docker_start(w);
		}
		return;
	}
	d->vstate = V_UNKNOWN;
	fail = *resp;
	fail.status = 0;
	fail.json = NULL;
	fail.body = "";
	fail.len = 0;
	while ((w = TAILQ_FIRST(&q)) != NULL) {
		TAILQ_REMOVE(&q, w, entry);
		w->done_cb(&fail, w->arg);
		docker_req_free(w);
	}
}

/*
 * Why a request got no answer, naming the endpoint and the system's
 * reason as the engine's own client does: "Docker engine not reachable:
 * connect /var/run/docker.sock: no such file or directory".
 */
static char *
docker_conn_error(struct docker_req *r, CURLcode code)
{
	const char *where, *why;
	char oserr[128], *err, *p;
	long os = 0;

	where = r->d->unix_path;
	if (where == NULL && (where = strstr(r->d->base_url, "://")) != NULL)
		where += 3;
	if (where == NULL)
		where = r->d->base_url;
	if (curl_easy_getinfo(r->easy, CURLINFO_OS_ERRNO, &os) != CURLE_OK)
		os = 0;
	if (os > 0) {
		/* GNU strerror_r may return a static string instead. */
		why = strerror_r((int)os, oserr, sizeof oserr);
		snprintf(oserr, sizeof oserr, "%s", why);
		if (oserr[0] >= 'A' && oserr[0] <= 'Z' &&
		    (oserr[1] < 'A' || oserr[1] > 'Z'))
			oserr[0] = (char)(oserr[0] - 'A' + 'a');
		why = oserr;
	} else
		why =
		    r->errbuf[0] != '\0' ? r->errbuf : curl_easy_strerror(code);
	if (code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST)
		xasprintf(&err, "Docker engine not reachable: connect %s: %s",
		    where, why);
	else if (code == CURLE_OPERATION_TIMEDOUT)
		xasprintf(
		    &err, "Docker engine not reachable: %s: %s", where, why);
	else
		xasprintf(&err, "Docker request to %s failed: %s", where, why);
	/* One line: curl's buffer may end in a newline. */
	if ((p = strchr(err, '\n')) != NULL)
		*p = '\0';
	return err;
}

static void
docker_finish(struct docker_req *r, CURLcode code)
{
	struct docker *d = r->d;
	struct docker_resp resp;
	json_object *msg;
	char *err = NULL;
	const char *ct = NULL;

	TAILQ_REMOVE(&d->running, r, entry);
	curl_multi_remove_handle(d->multi, r->easy);
	memset(&resp, 0, sizeof resp);
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &resp.status);
	curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ct);
	resp.body = r->body != NULL ? r->body : "";
	resp.len = r->len;
	/* Podman's service answers some JSON (a container's stats) with no
	 * type at all. */
	if (r->len > 0 && !r->overflow &&
	    (ct == NULL || strncmp(ct, "application/json", 16) == 0))
		resp.json = json_tokener_parse(r->body);
	if (code != CURLE_OK) {
		err = docker_conn_error(r, code);
		resp.status = 0;
	} else if (resp.status >= 300) {
		if (resp.json != NULL &&
		    json_object_object_get_ex(resp.json, "message", &msg))
			err = xstrdup(json_object_get_string(msg));
		else
			xasprintf(&err, "Docker engine answered HTTP %ld",
			    resp.status);
	} else if (r->overflow) {
		xasprintf(&err, "Docker response larger than %d bytes",
		    DOCKER_MAX_BODY);
	}
	resp.error = err;
	if (r == d->ping)
		docker_ping_finish(d, r, &resp);
	else
		r->done_cb(&resp, r->arg);
	json_object_put(resp.json);
	free(err);
	docker_req_free(r);
}

static void
docker_start(struct docker_req *r)
{
	struct docker *d = r->d;
	char *url, *ct;

	r->easy = curl_easy_init();
	if (r->easy == NULL)
		fatalx("%s: curl_easy_init", __func__);
	if (r == d->ping || r->hijack)
		xasprintf(
		    &url, "%s%s", d->base_url, r == d->ping ? r->path : "/");
	else
		xasprintf(&url, "%s/%s%s", d->base_url, d->version, r->path);
	curl_easy_setopt(r->easy, CURLOPT_URL, url);
	free(url);
	if (d->unix_path != NULL)
		curl_easy_setopt(
		    r->easy, CURLOPT_UNIX_SOCKET_PATH, d->unix_path);
	if (d->cert_path != NULL) {
		char *p;

		xasprintf(&p, "%s/cert.pem", d->cert_path);
		curl_easy_setopt(r->easy, CURLOPT_SSLCERT, p);
		free(p);
		xasprintf(&p, "%s/key.pem", d->cert_path);
		curl_easy_setopt(r->easy, CURLOPT_SSLKEY, p);
		free(p);
		xasprintf(&p, "%s/ca.pem", d->cert_path);
		curl_easy_setopt(r->easy, CURLOPT_CAINFO, p);
		free(p);
	}
	curl_easy_setopt(r->easy, CURLOPT_CUSTOMREQUEST, r->method);
	if (strcmp(r->method, "GET") == 0)
		curl_easy_setopt(r->easy, CURLOPT_HTTPGET, 1L);
	else if (strcmp(r->method, "HEAD") == 0)
		curl_easy_setopt(r->easy, CURLOPT_NOBODY, 1L);
	if (r->reqbody != NULL && r->ctype != NULL) {
		xasprintf(&ct, "Content-Type: %s", r->ctype);
		r->hdrs = curl_slist_append(r->hdrs, ct);
		free(ct);
		curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)r->reqlen);
		curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->reqbody);
	} else if (r->reqbody != NULL) {
		r->hdrs = curl_slist_append(
		    r->hdrs, "Content-Type: application/json");
		curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->reqbody);
	} else if (strcmp(r->method, "POST") == 0)
		curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE, 0L);
	r->hdrs = curl_slist_append(r->hdrs, "Expect:");
	curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->hdrs);
	curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, docker_write_cb);
	curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
	curl_easy_setopt(r->easy, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(
	    r->easy, CURLOPT_CONNECTTIMEOUT_MS, DOCKER_CONNECT_TIMEOUT_MS);
	if (r->data_cb == NULL)
		curl_easy_setopt(
		    r->easy, CURLOPT_TIMEOUT_MS, DOCKER_CALL_TIMEOUT_MS);
	if (r->hijack)
		curl_easy_setopt(r->easy, CURLOPT_CONNECT_ONLY, 1L);
	r->started = 1;
	TAILQ_INSERT_TAIL(&d->running, r, entry);
	if (curl_multi_add_handle(d->multi, r->easy) != CURLM_OK)
		fatalx("%s: curl_multi_add_handle", __func__);
}

static struct docker_req *
docker_submit(struct docker_req *r)
{
	struct docker *d = r->d;

	if (d->vstate == V_KNOWN) {
		docker_start(r);
		return r;
	}
	TAILQ_INSERT_TAIL(&d->waiting, r, entry);
	if (d->vstate == V_UNKNOWN) {
		d->vstate = V_PINGING;
		d->ping =
		    docker_req_new(d, "GET", "/_ping", NULL, NULL, NULL, NULL);
		docker_start(d->ping);
	}
	return r;
}

/* A request whose whole body is handed to done_cb. */
struct docker_req *
docker_call(struct docker *d, const char *method, const char *path,
    json_object *body, docker_done_cb done_cb, void *arg)
{
	return docker_submit(
	    docker_req_new(d, method, path, body, NULL, done_cb, arg));
}

/*
 * A request with a body of another type than JSON (len bytes of type
 * ctype, copied), whose answer is handed to done_cb.
 */
struct docker_req *
docker_call_raw(struct docker *d, const char *method, const char *path,
    const char *ctype, const void *body, size_t len, docker_done_cb done_cb,
    void *arg)
{
	struct docker_req *r;

	r = docker_req_new(d, method, path, NULL, NULL, done_cb, arg);
	r->ctype = xstrdup(ctype);
	r->reqbody = xmalloc(len + 1);
	memcpy(r->reqbody, body, len);
	r->reqbody[len] = '\0';
	r->reqlen = len;
	return docker_submit(r);
}

/*
 * A request whose body is handed to done_cb, but only its first keep
 * bytes: the rest is dropped as it arrives (for bodies that another party
 * can make as large as it likes, such as the output of a command in a
 * sandbox).
 */
struct docker_req *
docker_call_capped(struct docker *d, const char *method, const char *path,
    json_object *body, size_t keep, docker_done_cb done_cb, void *arg)
{
	struct docker_req *r;

	r = docker_req_new(d, method, path, body, NULL, done_cb, arg);
	r->keep = keep;
	return docker_submit(r);
}

/* A request whose body is handed to data_cb as it arrives. */
struct docker_req *
docker_stream(struct docker *d, const char *method, const char *path,
    json_object *body, docker_data_cb data_cb, docker_done_cb done_cb,
    void *arg)
{
	return docker_submit(
	    docker_req_new(d, method, path, body, data_cb, done_cb, arg));
}

/* A stream on a hijacked connection: data both ways (docker_req_write). */
struct docker_req *
docker_hijack(struct docker *d, const char *path, json_object *body,
    docker_data_cb data_cb, docker_done_cb done_cb, void *arg)
{
	struct docker_req *r;

	r = docker_req_new(d, "POST", path, body, data_cb, done_cb, arg);
	r->hijack = 1;
	docker_hijack_init(r);
	return docker_submit(r);
}

/* Abandon a request: no callback will be called.  Not from its callbacks. */
void
docker_req_cancel(struct docker_req *r)
{
	struct docker *d = r->d;

	if (r->started) {
		TAILQ_REMOVE(&d->running, r, entry);
		if (r->hj != NULL)
			docker_hijack_unwatch(r);
		curl_multi_remove_handle(d->multi, r->easy);
	} else
		TAILQ_REMOVE(&d->waiting, r, entry);
	docker_req_free(r);
}

/* Pause or resume a stream (resuming may deliver data at once). */
void
docker_req_pause(struct docker_req *r, int pause)
{
	if (r->hijack) {
		docker_hijack_pause(r, pause);
		return;
	}
	if (r->easy != NULL)
		curl_easy_pause(
		    r->easy, pause ? CURLPAUSE_RECV : CURLPAUSE_CONT);
}

/* URL-escape a path or query component; the caller frees the result. */
char *
docker_escape(const char *s)
{
	char *e, *ret;

	if ((e = curl_easy_escape(NULL, s, 0)) == NULL)
		fatalx("%s: curl_easy_escape", __func__);
	ret = xstrdup(e);
	curl_free(e);
	return ret;
}

/*
 * curl_global_init() flags for an engine: TLS libraries are initialised
 * (and their memory paid for) only for a tcp:// engine.
 */
long
docker_global_flags(const char *host)
{
	return strncmp(host, "unix://", 7) == 0 ? CURL_GLOBAL_NOTHING
	                                        : CURL_GLOBAL_DEFAULT;
}
