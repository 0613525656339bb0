/*
 * Integration: the Streamable HTTP transport (--transport http), driven
 * with libcurl: sessions, the header checks, auth, limits, SSE with
 * progress, and resumption of a dropped stream.
 */
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <curl/curl.h>

#include "harness.h"

#define ACCEPT_BOTH "Accept: application/json, text/event-stream"
#define CT_JSON "Content-Type: application/json"
#define INIT_PARAMS                                                            \
	"{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"             \
	"\"clientInfo\":{\"name\":\"http-test\",\"version\":\"1\"}}"

struct srv {
	struct h_server *h;
	int port;
	char url[64]; /* http://127.0.0.1:<port>/mcp */
	char metrics[64];
	char token[64]; /* sent as a bearer token when set */
	char token_file[64]; /* made by srv_startv(), removed at the end */
	long next_id;
};

struct resp {
	long status;
	char *body;
	size_t len;
	char *headers;
	size_t hlen;
	long long ms; /* how long it took */
	/* SSE: stop after this many "notifications/progress" (0: never). */
	int stop_after_progress;
};

/* --- the server --- */

/* Do the extra arguments (or the environment) set up auth? */
static int
srv_auth_given(const char *const *extra)
{
	const char *v = getenv("MCP_SANDBOXD_AUTH_TOKEN");

	if (v != NULL && *v != '\0')
		return 1;
	for (; extra != NULL && *extra != NULL; extra++)
		if (strcmp(*extra, "--auth-token-file") == 0 ||
		    strcmp(*extra, "--no-auth") == 0)
			return 1;
	return 0;
}

/* Start a server on a free port with extra arguments (NULL-ended). */
static struct srv *
srv_startv(const char *const *extra)
{
	const char *args[40];
	char listen[32];
	struct srv *s;
	long long deadline;
	int n = 0, fd;

	s = calloc(1, sizeof *s);
	cr_assert(s != NULL);
	s->port = h_free_port();
	s->next_id = 100;
	snprintf(listen, sizeof listen, "127.0.0.1:%d", s->port);
	snprintf(s->url, sizeof s->url, "http://127.0.0.1:%d/mcp", s->port);
	snprintf(s->metrics, sizeof s->metrics, "http://127.0.0.1:%d/metrics",
	    s->port);
	args[n++] = "--transport";
	args[n++] = "http";
	args[n++] = "--listen";
	args[n++] = listen;
	/* Every server needs a token now: the tests give one in a file
	 * unless they set up auth themselves. */
	if (!srv_auth_given(extra)) {
		snprintf(s->token, sizeof s->token, "test-token-%d-%d",
		    (int)getpid(), s->port);
		snprintf(s->token_file, sizeof s->token_file,
		    "/tmp/mcp-sandboxd-test-token-XXXXXX");
		fd = mkstemp(s->token_file);
		cr_assert(fd >= 0);
		cr_assert(write(fd, s->token, strlen(s->token)) ==
		          (ssize_t)strlen(s->token));
		close(fd);
		args[n++] = "--auth-token-file";
		args[n++] = s->token_file;
	}
	while (extra != NULL && *extra != NULL && n < 39)
		args[n++] = *extra++;
	args[n] = NULL;
	s->h = h_startv(args);
	deadline = h_now_ms() + 10000;
	while ((fd = h_dial(s->port)) == -1) {
		cr_assert(h_now_ms() < deadline,
		    "the server did not listen on port %d", s->port);
		cr_assert(h_pid_alive(s->h->pid), "the server exited early");
		usleep(20000);
	}
	close(fd);
	return s;
}

static struct srv *
srv_start(const char *first, ...)
{
	const char *args[32];
	const char *a;
	va_list ap;
	int n = 0;

	va_start(ap, first);
	for (a = first; a != NULL && n < 31; a = va_arg(ap, const char *))
		args[n++] = a;
	va_end(ap);
	args[n] = NULL;
	return srv_startv(args);
}

/* SIGTERM: the server removes its sandboxes and exits 0; none remain. */
static void
srv_finish(struct srv *s)
{
	int rc, n, i;

	kill(s->h->pid, SIGTERM);
	rc = h_wait_exit(s->h, 45000);
	cr_expect_eq(rc, 0, "server exit status %d, expected 0", rc);
	n = h_docker_count(s->h->label);
	cr_expect_eq(
	    n, 0, "%d container(s) labelled %s remain", n, s->h->label);
	for (i = 0; i < s->h->nids; i++)
		cr_expect(!h_container_exists(s->h->ids[i]),
		    "container %.12s remains", s->h->ids[i]);
	h_free(s->h);
	if (s->token_file[0] != '\0')
		unlink(s->token_file);
	free(s);
	cr_assert_eq(rc, 0);
}

/* --- HTTP with libcurl --- */

static size_t
body_cb(char *p, size_t size, size_t n, void *arg)
{
	struct resp *r = arg;
	const char *q;
	int k = 0;

	r->body = realloc(r->body, r->len + size * n + 1);
	cr_assert(r->body != NULL);
	memcpy(r->body + r->len, p, size * n);
	r->len += size * n;
	r->body[r->len] = '\0';
	if (r->stop_after_progress > 0) {
		for (q = r->body; (q = strstr(q, "notifications/progress"));
		     q++)
			k++;
		/* Drop the connection once that much has come, as a
		 * network failure would. */
		if (k >= r->stop_after_progress && strstr(r->body, "\n\n") &&
		    r->len >= 2 && memcmp(r->body + r->len - 2, "\n\n", 2) == 0)
			return 0;
	}
	return size * n;
}

static size_t
header_cb(char *p, size_t size, size_t n, void *arg)
{
	struct resp *r = arg;

	r->headers = realloc(r->headers, r->hlen + size * n + 1);
	cr_assert(r->headers != NULL);
	memcpy(r->headers + r->hlen, p, size * n);
	r->hlen += size * n;
	r->headers[r->hlen] = '\0';
	return size * n;
}

static void
resp_free(struct resp *r)
{
	if (r == NULL)
		return;
	free(r->body);
	free(r->headers);
	free(r);
}

/* A header of the response (the last of that name), or NULL; static. */
static const char *
resp_header(struct resp *r, const char *name)
{
	static char val[512];
	const char *p, *line;
	size_t nlen = strlen(name), n;
	int found = 0;

	for (line = r->headers; line != NULL && *line != '\0';
	     line = (p = strchr(line, '\n')) ? p + 1 : NULL) {
		if (strncasecmp(line, name, nlen) != 0 || line[nlen] != ':')
			continue;
		p = line + nlen + 1;
		while (*p == ' ')
			p++;
		n = strcspn(p, "\r\n");
		if (n >= sizeof val)
			n = sizeof val - 1;
		memcpy(val, p, n);
		val[n] = '\0';
		found = 1;
	}
	return found ? val : NULL;
}

/*
 * One request.  hdrs is a NULL-terminated list of "Name: value"; the
 * server's token goes as Authorization unless a header names one.
 */
static struct resp *
http_full(struct srv *s, const char *method, const char *url,
    const char *const *hdrs, const char *body, size_t blen, int timeout_ms,
    int stop_after_progress)
{
	struct curl_slist *list = NULL;
	struct resp *r;
	char auth[128];
	int has_auth = 0;
	long long t0;
	CURLcode rc;
	CURL *c;

	r = calloc(1, sizeof *r);
	cr_assert(r != NULL);
	r->stop_after_progress = stop_after_progress;
	c = curl_easy_init();
	cr_assert(c != NULL);
	for (; hdrs != NULL && *hdrs != NULL; hdrs++) {
		if (strncasecmp(*hdrs, "Authorization:", 14) == 0)
			has_auth = 1;
		list = curl_slist_append(list, *hdrs);
	}
	if (!has_auth && s->token[0] != '\0') {
		snprintf(
		    auth, sizeof auth, "Authorization: Bearer %s", s->token);
		list = curl_slist_append(list, auth);
	}
	list = curl_slist_append(list, "Expect:");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_cb);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (body != NULL) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(
		    c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
	}
	t0 = h_now_ms();
	rc = curl_easy_perform(c);
	r->ms = h_now_ms() - t0;
	cr_assert(rc == CURLE_OK ||
	              (stop_after_progress > 0 && rc == CURLE_WRITE_ERROR),
	    "%s %s: %s", method, url, curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_cleanup(c);
	curl_slist_free_all(list);
	return r;
}

static struct resp *
http_do(struct srv *s, const char *method, const char *const *hdrs,
    const char *body)
{
	return http_full(s, method, s->url, hdrs, body,
	    body != NULL ? strlen(body) : 0, 60000, 0);
}

/* POST a JSON-RPC message with the usual headers and a session. */
static struct resp *
post(struct srv *s, const char *sid, const char *body)
{
	char sh[160];
	const char *hdrs[] = {ACCEPT_BOTH, CT_JSON, sid ? sh : NULL, NULL};

	snprintf(sh, sizeof sh, "Mcp-Session-Id: %s", sid ? sid : "");
	return http_do(s, "POST", hdrs, body);
}

/* --- SSE --- */

struct sse_event {
	char id[64];
	int has_id;
	int has_retry;
	json_object *msg; /* data parsed, or NULL when empty */
};

/* The events of an SSE body; returns their count. */
static int
sse_parse(const char *body, struct sse_event *ev, int max)
{
	const char *p = body, *end, *line, *nl;
	char data[1 << 16];
	size_t dlen;
	int n = 0;

	while (*p != '\0' && n < max) {
		if ((end = strstr(p, "\n\n")) == NULL)
			break;
		memset(&ev[n], 0, sizeof ev[n]);
		dlen = 0;
		data[0] = '\0';
		for (line = p; line < end; line = nl + 1) {
			nl = memchr(line, '\n', (size_t)(end - line));
			if (nl == NULL)
				nl = end;
			if (strncmp(line, "id: ", 4) == 0) {
				snprintf(ev[n].id, sizeof ev[n].id, "%.*s",
				    (int)(nl - line - 4), line + 4);
				ev[n].has_id = 1;
			} else if (strncmp(line, "retry:", 6) == 0)
				ev[n].has_retry = 1;
			else if (strncmp(line, "data:", 5) == 0) {
				const char *d = line + 5;

				if (*d == ' ')
					d++;
				if ((size_t)(nl - d) + dlen < sizeof data - 1) {
					memcpy(
					    data + dlen, d, (size_t)(nl - d));
					dlen += (size_t)(nl - d);
					data[dlen] = '\0';
				}
			}
		}
		if (dlen > 0) {
			ev[n].msg = json_tokener_parse(data);
			cr_assert(
			    ev[n].msg != NULL, "SSE data not JSON: %s", data);
		}
		if (ev[n].has_id || ev[n].has_retry || ev[n].msg != NULL)
			n++;
		p = end + 2;
	}
	return n;
}

static void
sse_free(struct sse_event *ev, int n)
{
	int i;

	for (i = 0; i < n; i++)
		json_object_put(ev[i].msg);
}

static unsigned long long
event_n(const char *id)
{
	return strtoull(id, NULL, 10);
}

static int
is_progress(json_object *m)
{
	const char *method = h_str(m, "method");

	return method != NULL && strcmp(method, "notifications/progress") == 0;
}

/* The response with this id out of a JSON or SSE reply (taken), or NULL. */
static json_object *
reply_message(struct resp *r, long id)
{
	struct sse_event ev[256];
	json_object *m = NULL, *v;
	const char *ct = resp_header(r, "Content-Type");
	int n, i;

	cr_assert(ct != NULL, "no Content-Type (status %ld)", r->status);
	if (strncmp(ct, "application/json", 16) == 0)
		return h_parse(r->body);
	cr_assert(
	    strncmp(ct, "text/event-stream", 17) == 0, "Content-Type %s", ct);
	n = sse_parse(r->body, ev, 256);
	for (i = 0; i < n; i++) {
		v = ev[i].msg != NULL ? h_get(ev[i].msg, "id") : NULL;
		if (v != NULL && h_str(ev[i].msg, "method") == NULL &&
		    json_object_get_int64(v) == id)
			m = json_object_get(ev[i].msg);
	}
	sse_free(ev, n);
	return m;
}

/* --- MCP over HTTP --- */

/* initialize (this version) + notifications/initialized; the session id
 * (malloc'd). */
static char *
mcp_init_version(struct srv *s, const char *version)
{
	struct resp *r;
	const char *sid;
	char *id, body[512], want[64];
	size_t i;

	snprintf(body, sizeof body,
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
	    "\"params\":{\"protocolVersion\":\"%s\",\"capabilities\":{},"
	    "\"clientInfo\":{\"name\":\"http-test\",\"version\":\"1\"}}}",
	    version);
	snprintf(want, sizeof want, "\"protocolVersion\":\"%s\"", version);
	r = post(s, NULL, body);
	cr_assert_eq(r->status, 200, "initialize: %ld %s", r->status, r->body);
	sid = resp_header(r, "Mcp-Session-Id");
	cr_assert(sid != NULL, "no Mcp-Session-Id in %s", r->headers);
	cr_assert_geq(strlen(sid), 32, "short session id %s", sid);
	for (i = 0; sid[i] != '\0'; i++)
		cr_assert(sid[i] > 0x20 && sid[i] < 0x7f,
		    "session id not visible ASCII");
	id = strdup(sid);
	cr_assert(h_contains(r->body, want), "%s", r->body);
	resp_free(r);
	r = post(s, id,
	    "{\"jsonrpc\":\"2.0\",\"method\":"
	    "\"notifications/initialized\"}");
	cr_assert_eq(r->status, 202);
	cr_assert_eq(r->len, 0);
	resp_free(r);
	return id;
}

static char *
mcp_init(struct srv *s)
{
	return mcp_init_version(s, "2025-11-25");
}

/* A request; its response message (the test fails without one). */
static json_object *
mcp_call(
    struct srv *s, const char *sid, const char *method, json_object *params)
{
	json_object *req, *m;
	struct resp *r;
	long id = s->next_id++;

	req = json_object_new_object();
	json_object_object_add(req, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(req, "id", json_object_new_int64(id));
	json_object_object_add(req, "method", json_object_new_string(method));
	if (params != NULL)
		json_object_object_add(req, "params", params);
	r = post(s, sid, json_object_to_json_string(req));
	json_object_put(req);
	cr_assert_eq(r->status, 200, "%s: %ld %s", method, r->status, r->body);
	m = reply_message(r, id);
	cr_assert(m != NULL, "%s: no response in %s", method, r->body);
	resp_free(r);
	return m;
}

static json_object *
tool_args(const char *name, const char *args)
{
	json_object *p;

	p = json_object_new_object();
	json_object_object_add(p, "name", json_object_new_string(name));
	json_object_object_add(p, "arguments", h_parse(args));
	return p;
}

static json_object *
mcp_tool(struct srv *s, const char *sid, const char *name, const char *args)
{
	return h_tool_result(
	    mcp_call(s, sid, "tools/call", tool_args(name, args)));
}

static char *
mcp_create(struct srv *s, const char *sid)
{
	json_object *r;
	char *cid;

	r = mcp_tool(s, sid, "sandbox_initialize", "{}");
	cr_assert(!h_is_error(r), "sandbox_initialize: %s", h_text(r));
	cid = strdup(h_str(r, "structuredContent.container_id"));
	if (s->h->nids < H_MAX_IDS)
		s->h->ids[s->h->nids++] = strdup(cid);
	json_object_put(r);
	return cid;
}

static long
status_of(struct srv *s, const char *method, const char *const *hdrs,
    const char *body)
{
	struct resp *r;
	long st;

	r = http_do(s, method, hdrs, body);
	st = r->status;
	resp_free(r);
	return st;
}

/* Open a GET stream in the background; driven by get_pump(). */
struct bg_get {
	CURLM *multi;
	CURL *c;
	struct curl_slist *list;
	struct resp *r;
	int running;
};

static struct bg_get *
get_open(struct srv *s, const char *sid, const char *last_event)
{
	struct bg_get *g;
	char sh[160], lh[128];

	g = calloc(1, sizeof *g);
	cr_assert(g != NULL);
	snprintf(sh, sizeof sh, "Mcp-Session-Id: %s", sid);
	g->list = curl_slist_append(g->list, "Accept: text/event-stream");
	g->list = curl_slist_append(g->list, sh);
	if (s->token[0] != '\0') {
		snprintf(lh, sizeof lh, "Authorization: Bearer %s", s->token);
		g->list = curl_slist_append(g->list, lh);
	}
	if (last_event != NULL) {
		snprintf(lh, sizeof lh, "Last-Event-ID: %s", last_event);
		g->list = curl_slist_append(g->list, lh);
	}
	g->multi = curl_multi_init();
	g->c = curl_easy_init();
	g->r = calloc(1, sizeof *g->r);
	curl_easy_setopt(g->c, CURLOPT_URL, s->url);
	curl_easy_setopt(g->c, CURLOPT_HTTPHEADER, g->list);
	curl_easy_setopt(g->c, CURLOPT_WRITEFUNCTION, body_cb);
	curl_easy_setopt(g->c, CURLOPT_WRITEDATA, g->r);
	curl_multi_add_handle(g->multi, g->c);
	g->running = 1;
	return g;
}

static void
get_pump(struct bg_get *g, int ms)
{
	long long t0 = h_now_ms();

	while (g->running && h_now_ms() - t0 < ms) {
		curl_multi_perform(g->multi, &g->running);
		curl_multi_wait(g->multi, NULL, 0, 20, NULL);
	}
}

/* Drop the connection. */
static void
get_close(struct bg_get *g)
{
	curl_multi_remove_handle(g->multi, g->c);
	curl_easy_cleanup(g->c);
	curl_multi_cleanup(g->multi);
	curl_slist_free_all(g->list);
	resp_free(g->r);
	free(g);
}

/* The events of a GET stream that are resources/updated, newest id. */
static int
updates_in(
    const char *body, char *last, size_t lastlen, unsigned long long after)
{
	struct sse_event ev[256];
	const char *method;
	int n, i, k = 0;

	n = sse_parse(body != NULL ? body : "", ev, 256);
	for (i = 0; i < n; i++) {
		if (ev[i].msg == NULL)
			continue;
		method = h_str(ev[i].msg, "method");
		cr_expect(ev[i].has_id);
		cr_expect(
		    strlen(ev[i].id) > 2 &&
		        strcmp(ev[i].id + strlen(ev[i].id) - 2, "-0") == 0,
		    "a standalone event in stream %s", ev[i].id);
		cr_expect_gt(event_n(ev[i].id), after,
		    "event %s replayed again", ev[i].id);
		if (method != NULL &&
		    strcmp(method, "notifications/resources/updated") == 0) {
			k++;
			snprintf(last, lastlen, "%.60s", ev[i].id);
		}
	}
	sse_free(ev, n);
	return k;
}

#define PING "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}"

/* --- tests --- */

Test(http, session_lifecycle, .timeout = 60)
{
	struct srv *s;
	struct resp *r;
	json_object *m;
	char *sid;
	char sh[160];

	s = srv_start(NULL);
	sid = mcp_init(s);
	m = mcp_call(s, sid, "ping", NULL);
	cr_expect(h_get(m, "result") != NULL);
	json_object_put(m);
	m = mcp_call(s, sid, "tools/list", NULL);
	cr_expect(h_get(m, "result.tools.0.name") != NULL);
	json_object_put(m);

	snprintf(sh, sizeof sh, "Mcp-Session-Id: %s", sid);
	r = http_do(s, "DELETE", (const char *[]){sh, NULL}, NULL);
	cr_expect_eq(r->status, 200);
	resp_free(r);
	r = post(s, sid, PING);
	cr_expect_eq(r->status, 404, "ping after DELETE: %ld", r->status);
	cr_expect(h_contains(r->body, "-32001"));
	resp_free(r);
	cr_expect_eq(
	    status_of(s, "DELETE", (const char *[]){sh, NULL}, NULL), 404);
	free(sid);
	srv_finish(s);
}

Test(http, session_required, .timeout = 60)
{
	struct srv *s;
	struct resp *r;
	char *sid;

	s = srv_start(NULL);
	r = post(s, NULL, PING);
	cr_expect_eq(r->status, 400, "no session: %ld", r->status);
	cr_expect(h_contains(r->body, "Mcp-Session-Id"));
	resp_free(r);
	r = post(s, "0123456789abcdef0123456789abcdef", PING);
	cr_expect_eq(r->status, 404, "unknown session: %ld", r->status);
	resp_free(r);
	cr_expect_eq(
	    status_of(s, "GET",
	        (const char *[]){"Accept: text/event-stream", NULL}, NULL),
	    400);
	sid = mcp_init(s);
	/* initialize with a session id is refused; the session is fine */
	r = post(s, sid,
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
	    "\"params\":" INIT_PARAMS "}");
	cr_expect_eq(r->status, 400);
	resp_free(r);
	json_object_put(mcp_call(s, sid, "ping", NULL));
	free(sid);
	srv_finish(s);
}

Test(http, delete_removes_sandboxes, .timeout = 120)
{
	struct srv *s;
	char *sid, *cid, sh[160];

	s = srv_start(NULL);
	sid = mcp_init(s);
	cid = mcp_create(s, sid);
	cr_assert(h_container_exists(cid));
	snprintf(sh, sizeof sh, "Mcp-Session-Id: %s", sid);
	cr_expect_eq(
	    status_of(s, "DELETE", (const char *[]){sh, NULL}, NULL), 200);
	cr_expect(h_wait_container_gone(cid, 30000),
	    "the sandbox of a deleted session remains");
	free(cid);
	free(sid);
	srv_finish(s);
}

Test(http, protocol_version, .timeout = 60)
{
	struct srv *s;
	char *sid, sh[160];
	const char *v[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
	char vh[64];
	int i;

	s = srv_start(NULL);
	sid = mcp_init(s);
	snprintf(sh, sizeof sh, "Mcp-Session-Id: %s", sid);
	cr_expect_eq(status_of(s, "POST",
	                 (const char *[]){ACCEPT_BOTH, CT_JSON, sh,
	                     "MCP-Protocol-Version: 2024-11-05", NULL},
	                 PING),
	    400);
	cr_expect_eq(status_of(s, "POST",
	                 (const char *[]){ACCEPT_BOTH, CT_JSON, sh,
	                     "MCP-Protocol-Version: banana", NULL},
	                 PING),
	    400);
	for (i = 0; i < 3; i++) {
		snprintf(vh, sizeof vh, "MCP-Protocol-Version: %s", v[i]);
		cr_expect_eq(
		    status_of(s, "POST",
		        (const char *[]){ACCEPT_BOTH, CT_JSON, sh, vh, NULL},
		        PING),
		    200, "version %s", v[i]);
	}
	/* absent: taken as 2025-03-26 */
	cr_expect_eq(
	    status_of(s, "POST",
	        (const char *[]){ACCEPT_BOTH, CT_JSON, sh, NULL}, PING),
	    200);
	free(sid);
	srv_finish(s);
}

Test(http, accept_checked, .timeout = 60)
{
	struct srv *s;
	char *sid, sh[160];

	s = srv_start(NULL);
	sid = mcp_init(s);
	snprintf(sh, sizeof sh, "Mcp-Session-Id: %s", sid);
	cr_expect_eq(
	    status_of(s, "POST",
	        (const char *[]){"Accept: application/json", CT_JSON, sh, NULL},
	        PING),
	    406);
	cr_expect_eq(status_of(s, "POST",
	                 (const char *[]){
	                     "Accept: text/event-stream", CT_JSON, sh, NULL},
	                 PING),
	    406);
	cr_expect_eq(status_of(s, "POST",
	                 (const char *[]){"Accept: application/json, "
	                                  "text/event-stream;q=0",
	                     CT_JSON, sh, NULL},
	                 PING),
	    406);
	cr_expect_eq(
	    status_of(s, "POST",
	        (const char *[]){"Accept: */*", CT_JSON, sh, NULL}, PING),
	    200);
	cr_expect_eq(
	    status_of(s, "GET",
	        (const char *[]){"Accept: application/json", sh, NULL}, NULL),
	    406);
	cr_expect_eq(status_of(s, "POST",
	                 (const char *[]){
	                     ACCEPT_BOTH, "Content-Type: text/plain", sh, NULL},
	                 PING),
	    415);
	free(sid);
	srv_finish(s);
}

Test(http, origin_and_host_checked, .timeout = 60)
{
	struct srv *s;
	char *sid, sh[160], host[64], origin[64];

	s = srv_start(NULL);
	sid = mcp_init(s);
	snprintf(sh, sizeof sh, "Mcp-Session-Id: %s", sid);
	cr_expect_eq(status_of(s, "POST",
	                 (const char *[]){ACCEPT_BOTH, CT_JSON, sh,
	                     "Origin: http://evil.example", NULL},
	                 PING),
	    403);
	cr_expect_eq(status_of(s, "POST",
	                 (const char *[]){ACCEPT_BOTH, CT_JSON, sh,
	                     "Origin: https://localhost", NULL},
	                 PING),
	    403);
	cr_expect_eq(status_of(s, "POST",
	                 (const char *[]){
	                     ACCEPT_BOTH, CT_JSON, sh, "Origin: null", NULL},
	                 PING),
	    403);
	/* Another port of localhost is another origin: refused by default
	 * (any local program's page may live there); the server's own
	 * origin passes. */
	cr_expect_eq(status_of(s, "POST",
	                 (const char *[]){ACCEPT_BOTH, CT_JSON, sh,
	                     "Origin: http://localhost:5173", NULL},
	                 PING),
	    403);
	snprintf(origin, sizeof origin, "Origin: http://localhost:%d", s->port);
	cr_expect_eq(
	    status_of(s, "POST",
	        (const char *[]){ACCEPT_BOTH, CT_JSON, sh, origin, NULL}, PING),
	    200);
	/* DNS rebinding: a page of evil.example resolved to 127.0.0.1 */
	snprintf(host, sizeof host, "Host: evil.example:%d", s->port);
	cr_expect_eq(
	    status_of(s, "POST",
	        (const char *[]){ACCEPT_BOTH, CT_JSON, sh, host, NULL}, PING),
	    403);
	cr_expect_eq(
	    status_of(s, "GET",
	        (const char *[]){"Accept: text/event-stream", sh, host, NULL},
	        NULL),
	    403);
	snprintf(host, sizeof host, "Host: localhost:%d", s->port);
	cr_expect_eq(
	    status_of(s, "POST",
	        (const char *[]){ACCEPT_BOTH, CT_JSON, sh, host, NULL}, PING),
	    200);
	free(sid);
	srv_finish(s);
}

static void
check_auth(struct srv *s)
{
	struct resp *r;
	const char *www;
	char *sid;

	r = http_do(s, "POST",
	    (const char *[]){
	        ACCEPT_BOTH, CT_JSON, "Authorization: Bearer ", NULL},
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
	    "\"params\":" INIT_PARAMS "}");
	cr_expect_eq(r->status, 401);
	resp_free(r);
	r = http_do(s, "POST",
	    (const char *[]){
	        ACCEPT_BOTH, CT_JSON, "Authorization: Basic eDp5", NULL},
	    PING);
	cr_expect_eq(r->status, 401);
	www = resp_header(r, "WWW-Authenticate");
	cr_expect(www != NULL && strncmp(www, "Bearer realm=", 13) == 0,
	    "WWW-Authenticate: %s", www ? www : "(none)");
	resp_free(r);
	r = http_do(s, "POST",
	    (const char *[]){ACCEPT_BOTH, CT_JSON,
	        "Authorization: Bearer the-right-token-but-longer", NULL},
	    PING);
	cr_expect_eq(r->status, 401);
	resp_free(r);
	r = http_do(s, "POST",
	    (const char *[]){ACCEPT_BOTH, CT_JSON,
	        "Authorization: Bearer the-right-tokeN", NULL},
	    PING);
	cr_expect_eq(r->status, 401);
	resp_free(r);
	/* no Authorization at all */
	r = http_full(s, "GET", s->metrics,
	    (const char *[]){"Authorization:", NULL}, NULL, 0, 10000, 0);
	cr_expect_eq(
	    r->status, 401, "/metrics without the token: %ld", r->status);
	cr_expect(resp_header(r, "WWW-Authenticate") != NULL);
	resp_free(r);

	/* The right token (sent by http_full) works everywhere. */
	sid = mcp_init(s);
	json_object_put(mcp_call(s, sid, "ping", NULL));
	r = http_full(s, "GET", s->metrics, NULL, NULL, 0, 10000, 0);
	cr_expect_eq(r->status, 200);
	resp_free(r);
	free(sid);
}

Test(http, auth_token_file, .timeout = 60)
{
	char path[] = "/tmp/mcp-sandboxd-token-XXXXXX";
	struct srv *s;
	int fd;

	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert(write(fd, "the-right-token\n", 16) == 16);
	close(fd);
	s = srv_start("--auth-token-file", path, NULL);
	snprintf(s->token, sizeof s->token, "the-right-token");
	check_auth(s);
	srv_finish(s);
	unlink(path);
}

Test(http, auth_token_env, .timeout = 60)
{
	struct srv *s;

	setenv("MCP_SANDBOXD_AUTH_TOKEN", "the-right-token", 1);
	s = srv_start(NULL);
	unsetenv("MCP_SANDBOXD_AUTH_TOKEN");
	snprintf(s->token, sizeof s->token, "the-right-token");
	check_auth(s);
	srv_finish(s);
}

/* Does /proc/PID/environ hold this text?  -1 if it cannot be read. */
static int
environ_has(pid_t pid, const char *text)
{
	char path[64], buf[65536];
	size_t n, i, tlen = strlen(text);
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	for (i = 0; i + tlen <= n; i++)
		if (memcmp(buf + i, text, tlen) == 0)
			return 1;
	return 0;
}

/*
 * unsetenv() alone leaves the token's bytes where the kernel put them at
 * exec, and /proc/PID/environ (readable by the same user, and by root
 * tools that collect it) shows them: the server overwrites them.
 */
Test(http, token_not_in_environ, .timeout = 120)
{
	const char *tok = "environ-secret-token-4d1f09";
	struct srv *s;
	pid_t kids[16];
	char *sid, *cid;
	int n, i;

	setenv("MCP_SANDBOXD_AUTH_TOKEN", tok, 1);
	s = srv_start(NULL);
	unsetenv("MCP_SANDBOXD_AUTH_TOKEN");
	snprintf(s->token, sizeof s->token, "%s", tok);
	sid = mcp_init(s); /* the token works: it was read */
	cid = mcp_create(s, sid); /* a worker, a child of the server */
	cr_expect_eq(environ_has(s->h->pid, tok), 0,
	    "the token is in /proc/%d/environ", (int)s->h->pid);
	n = h_children(s->h->pid, kids, 16, NULL);
	cr_expect_geq(n, 1, "no worker");
	for (i = 0; i < n; i++)
		cr_expect_eq(environ_has(kids[i], tok), 0,
		    "the token is in the environ of worker %d", (int)kids[i]);
	free(cid);
	free(sid);
	srv_finish(s);
}

Test(http, refuses_wildcard_without_token, .timeout = 60)
{
	char cmd[512], *out;
	int st;

	snprintf(cmd, sizeof cmd,
	    "MCP_SANDBOXD_AUTH_TOKEN= %s --transport http --listen "
	    "0.0.0.0:%d --image " H_IMAGE " </dev/null 2>&1",
	    getenv("MCP_SANDBOXD_BIN"), h_free_port());
	out = h_run(cmd, &st);
	cr_expect_neq(st, 0, "listening on 0.0.0.0 without a token");
	cr_expect(h_contains(out, "without an auth token"), "said: %s", out);
	free(out);
}

Test(http, metrics, .timeout = 120)
{
	struct srv *s;
	struct resp *r;
	char *sid, *cid;

	s = srv_start("--spool-mb", "64", "--snapshot-mb", "100", NULL);
	sid = mcp_init(s);
	cid = mcp_create(s, sid);
	r = http_full(s, "GET", s->metrics, NULL, NULL, 0, 10000, 0);
	cr_expect_eq(r->status, 200);
	cr_expect(h_contains(resp_header(r, "Content-Type"), "text/plain"));
	cr_expect(h_contains(resp_header(r, "Content-Type"), "version=0.0.4"));
	cr_expect(h_contains(
	    r->body, "mcp_sandboxd_sessions_open{transport=\"http\"} 1\n"));
	cr_expect(h_contains(r->body, "mcp_sandboxd_sandboxes_live 1\n"), "%s",
	    r->body);
	cr_expect(h_contains(r->body, "mcp_sandboxd_workers_alive 1\n"));
	cr_expect(h_contains(r->body, "mcp_sandboxd_uptime_seconds "));
	cr_expect(h_contains(
	    r->body, "mcp_sandboxd_http_requests_total{code=\"2xx\"} "));
	cr_expect(
	    h_contains(r->body, "# TYPE mcp_sandboxd_sessions_open gauge"));
	/* What the operator's alerts watch (deploy/prometheus/): one
	 * sandbox's spool quota (--spool-mb 64), its use, the snapshot
	 * store's cap (--snapshot-mb 100) and use (the state directory may
	 * be shared), no pool, nothing lost. */
	cr_expect(
	    h_contains(r->body, "mcp_sandboxd_spool_quota_bytes 67108864\n"),
	    "%s", r->body);
	cr_expect(h_contains(r->body, "mcp_sandboxd_spool_bytes "));
	cr_expect(h_contains(r->body, "mcp_sandboxd_spool_fullest_ratio 0"));
	cr_expect(h_contains(r->body, "mcp_sandboxd_snapshot_bytes "));
	cr_expect(h_contains(
	              r->body, "mcp_sandboxd_snapshot_limit_bytes 104857600\n"),
	    "%s", r->body);
	cr_expect(h_contains(r->body, "mcp_sandboxd_pool_target 0\n"));
	cr_expect(h_contains(r->body, "mcp_sandboxd_sandboxes_lost_total 0\n"));
	resp_free(r);
	free(cid);
	free(sid);
	srv_finish(s);
}

/* /metrics until it holds want, or 90 s; the last body (caller frees). */
static struct resp *
metrics_until(struct srv *s, const char *want)
{
	long long deadline = h_now_ms() + 90000;
	struct resp *r;

	for (;;) {
		r = http_full(s, "GET", s->metrics, NULL, NULL, 0, 10000, 0);
		cr_assert_eq(r->status, 200);
		if (h_contains(r->body, want) || h_now_ms() > deadline)
			return r;
		resp_free(r);
		usleep(200 * 1000);
	}
}

/* The warm pool in /metrics: filled, taken by a create, refilled. */
Test(http, metrics_pool, .timeout = 240)
{
	struct srv *s;
	struct resp *r;
	char *sid, *cid;

	s = srv_start("--warm-pool", "1", NULL);
	sid = mcp_init(s);
	r = metrics_until(s, "mcp_sandboxd_pool_size 1\n");
	cr_expect(
	    h_contains(r->body, "mcp_sandboxd_pool_size 1\n"), "%s", r->body);
	cr_expect(h_contains(r->body, "mcp_sandboxd_pool_created_total 1\n"),
	    "%s", r->body);
	cr_expect(h_contains(r->body, "mcp_sandboxd_pool_taken_total 0\n"),
	    "%s", r->body);
	cr_expect(h_contains(r->body, "# TYPE mcp_sandboxd_pool_size gauge"));
	cr_expect(
	    h_contains(r->body, "mcp_sandboxd_pool_target 1\n"), "%s", r->body);
	resp_free(r);
	cid = mcp_create(s, sid);
	r = metrics_until(s, "mcp_sandboxd_pool_created_total 2\n");
	cr_expect(h_contains(r->body, "mcp_sandboxd_pool_taken_total 1\n"),
	    "%s", r->body);
	cr_expect(h_contains(r->body, "mcp_sandboxd_pool_created_total 2\n"),
	    "%s", r->body);
	cr_expect(h_contains(r->body, "mcp_sandboxd_sandboxes_live 1\n"), "%s",
	    r->body);
	resp_free(r);
	free(cid);
	free(sid);
	srv_finish(s);
}

Test(http, big_body_and_cap, .timeout = 60)
{
	struct srv *s;
	struct resp *r;
	char *sid, *body, sh[160];
	const size_t mb = 1000 * 1000;
	const char *head = "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\","
	                   "\"params\":{\"_meta\":{\"pad\":\"";
	size_t hl = strlen(head);

	s = srv_start("--max-line", "2000000", NULL);
	sid = mcp_init(s);
	snprintf(sh, sizeof sh, "Mcp-Session-Id: %s", sid);
	body = malloc(3 * mb);
	cr_assert(body != NULL);
	memcpy(body, head, hl);
	memset(body + hl, 'x', mb);
	strcpy(body + hl + mb, "\"}}}");
	r = http_full(s, "POST", s->url,
	    (const char *[]){ACCEPT_BOTH, CT_JSON, sh, NULL}, body,
	    strlen(body), 30000, 0);
	cr_expect_eq(r->status, 200, "1 MB request: %ld", r->status);
	cr_expect(h_contains(r->body, "\"result\":{}"));
	resp_free(r);

	memset(body + hl, 'x', 2500000);
	strcpy(body + hl + 2500000, "\"}}}");
	r = http_full(s, "POST", s->url,
	    (const char *[]){ACCEPT_BOTH, CT_JSON, sh, NULL}, body,
	    strlen(body), 30000, 0);
	cr_expect_eq(r->status, 413, "2.5 MB request: %ld", r->status);
	resp_free(r);
	free(body);
	/* and the server is still fine */
	json_object_put(mcp_call(s, sid, "ping", NULL));
	free(sid);
	srv_finish(s);
}

Test(http, slowloris_does_not_block, .timeout = 90)
{
	const char *slow = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n";
	struct srv *s;
	struct resp *r;
	char *sid, sh[160];
	long long ms;
	int fd, i;

	s = srv_start(NULL);
	sid = mcp_init(s);
	snprintf(sh, sizeof sh, "Mcp-Session-Id: %s", sid);
	fd = h_dial(s->port);
	cr_assert(fd >= 0);
	for (i = 0; slow[i] != '\0' && i < 8; i++) {
		cr_assert(write(fd, slow + i, 1) == 1);
		/* Another client meanwhile is answered at once. */
		r = http_do(s, "POST",
		    (const char *[]){ACCEPT_BOTH, CT_JSON, sh, NULL}, PING);
		cr_expect_eq(r->status, 200);
		cr_expect_lt(r->ms, 500,
		    "ping took %lld ms next to a slow "
		    "client",
		    r->ms);
		ms = r->ms < 1000 ? r->ms : 999;
		resp_free(r);
		usleep((useconds_t)(1000 - ms) * 1000);
	}
	close(fd);
	free(sid);
	srv_finish(s);
}

/*
 * GET path on a kept-alive connection; the status, the answer in buf.
 * 0 when the connection closed without an answer.
 */
static int
raw_get_host(int fd, const char *path, const char *host, char *buf, size_t len)
{
	char req[256], *end, *cl;
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	size_t have = 0, want = 0;
	ssize_t n;
	int status = 0;

	n = snprintf(
	    req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, host);
	cr_assert(write(fd, req, (size_t)n) == n);
	for (;;) {
		cr_assert(
		    poll(&pfd, 1, 10000) == 1, "no answer to GET %s", path);
		if ((n = read(fd, buf + have, len - 1 - have)) <= 0)
			break;
		have += (size_t)n;
		buf[have] = '\0';
		if ((end = strstr(buf, "\r\n\r\n")) == NULL)
			continue;
		if (want == 0) {
			cl = strcasestr(buf, "Content-Length:");
			cr_assert(cl != NULL && cl < end, "%s", buf);
			want = (size_t)(end + 4 - buf) +
			       strtoul(cl + 15, NULL, 10);
		}
		if (have >= want)
			break;
	}
	buf[have] = '\0';
	sscanf(buf, "HTTP/1.%*d %d", &status);
	return status;
}

static int
raw_get(int fd, const char *path, char *buf, size_t len)
{
	return raw_get_host(fd, path, "127.0.0.1", buf, len);
}

Test(http, connection_cap, .timeout = 60)
{
	static char buf[65536];
	struct srv *s;
	long long deadline;
	int a, b, c, d, st;

	s = srv_start("--http-max-connections", "2", "--no-auth", NULL);
	/* A refused client is closed: it keeps no slot. */
	a = h_dial(s->port);
	cr_assert(a >= 0);
	cr_expect_eq(
	    raw_get_host(a, "/metrics", "evil.example", buf, sizeof buf), 403,
	    "%s", buf);
	cr_expect_eq(read(a, buf, 1), 0, "the refused connection stays open");
	close(a);

	a = h_dial(s->port);
	b = h_dial(s->port);
	cr_assert(a >= 0 && b >= 0);
	cr_assert_eq(raw_get(a, "/metrics", buf, sizeof buf), 200);
	cr_assert_eq(raw_get(b, "/metrics", buf, sizeof buf), 200);

	/* A third is told why, and closed. */
	c = h_dial(s->port);
	cr_assert(c >= 0);
	cr_expect_eq(raw_get(c, "/metrics", buf, sizeof buf), 503, "%s", buf);
	cr_expect(h_contains(buf, "too many connections"), "%s", buf);
	cr_expect(h_contains(buf, "Retry-After: 1"), "%s", buf);
	cr_expect_eq(read(c, buf, 1), 0, "the refused connection stays open");
	close(c);

	/* The two served carry on. */
	cr_expect_eq(raw_get(a, "/metrics", buf, sizeof buf), 200);
	cr_expect(
	    h_contains(buf, "\nmcp_sandboxd_http_connections 2\n"), "%s", buf);
	cr_expect(h_contains(
	              buf, "\nmcp_sandboxd_http_connections_refused_total 1\n"),
	    "%s", buf);

	/* One goes: there is room again. */
	close(b);
	deadline = h_now_ms() + 5000;
	for (;;) {
		d = h_dial(s->port);
		cr_assert(d >= 0);
		st = raw_get(d, "/metrics", buf, sizeof buf);
		if (st == 200 || h_now_ms() > deadline)
			break;
		close(d);
		usleep(50000);
	}
	cr_expect_eq(st, 200, "no room after a connection closed: %s", buf);
	close(d);
	close(a);
	srv_finish(s);
}

/*
 * Out of descriptors, accept() fails while the connection waits in the
 * queue: the server must rest, not spin on the readable socket, and
 * serve again once descriptors are free.
 */
Test(http, out_of_descriptors_rests, .timeout = 60)
{
	struct rlimit low, old;
	struct srv *s;
	struct resp *r;
	long long cpu;
	int fds[80], i, n = 0;

	s = srv_start(NULL);
	/* The soft limit only: raising a hard one back needs privilege. */
	cr_assert(prlimit(s->h->pid, RLIMIT_NOFILE, NULL, &old) == 0);
	low.rlim_cur = 40;
	low.rlim_max = old.rlim_max;
	cr_assert(prlimit(s->h->pid, RLIMIT_NOFILE, &low, NULL) == 0, "%s",
	    strerror(errno));
	for (i = 0; i < 80; i++)
		if ((fds[n] = h_dial(s->port)) >= 0)
			n++;
	cr_assert_geq(n, 45, "only %d connections", n);
	usleep(500000);
	cpu = h_cpu_ms(s->h->pid);
	sleep(2);
	cpu = h_cpu_ms(s->h->pid) - cpu;
	cr_expect_lt(cpu, 500, "the server used %lld ms of CPU in 2 s", cpu);
	for (i = 0; i < n; i++)
		close(fds[i]);
	cr_assert(prlimit(s->h->pid, RLIMIT_NOFILE, &old, NULL) == 0, "%s",
	    strerror(errno));

	r = http_full(s, "GET", s->metrics, NULL, NULL, 0, 10000, 0);
	cr_expect_eq(r->status, 200);
	cr_expect(
	    !h_contains(r->body, "accept_rests_total 0\n"), "%s", r->body);
	resp_free(r);
	srv_finish(s);
}

Test(http, idle_connection_closed, .timeout = 60)
{
	struct srv *s;
	char c;
	long long t0;
	ssize_t n;
	int fd;

	s = srv_start("--http-timeout", "2", NULL);
	fd = h_dial(s->port);
	cr_assert(fd >= 0);
	cr_assert(write(fd, "GET /mcp HTTP/1.1\r\n", 19) == 19);
	t0 = h_now_ms();
	n = read(fd, &c, 1); /* EOF when the server gives up */
	cr_expect_leq(n, 0);
	cr_expect_lt(h_now_ms() - t0, 10000, "a silent client was kept");
	close(fd);
	srv_finish(s);
}

Test(http, notifications_and_responses_202, .timeout = 60)
{
	struct srv *s;
	struct resp *r;
	char *sid;

	s = srv_start(NULL);
	sid = mcp_init(s);
	r = post(s, sid,
	    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
	    "\"params\":{\"requestId\":12345}}");
	cr_expect_eq(r->status, 202);
	cr_expect_eq(r->len, 0);
	resp_free(r);
	r = post(s, sid, "{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"result\":{}}");
	cr_expect_eq(r->status, 202);
	resp_free(r);
	r = post(s, sid,
	    "{\"jsonrpc\":\"2.0\",\"id\":\"s2\",\"error\":"
	    "{\"code\":-1,\"message\":\"no\"}}");
	cr_expect_eq(r->status, 202);
	resp_free(r);
	r = post(s, sid, "{\"jsonrpc\":\"2.0\",");
	cr_expect_eq(r->status, 400);
	cr_expect(h_contains(r->body, "-32700"));
	resp_free(r);
	r = post(
	    s, sid, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
	cr_expect_eq(r->status, 400);
	cr_expect(h_contains(r->body, "-32600"));
	resp_free(r);
	free(sid);
	srv_finish(s);
}

/* tools/call of an exec with a progressToken, as raw HTTP. */
static struct resp *
post_exec_progress(struct srv *s, const char *sid, const char *cid,
    const char *cmd, long id, int stop_after)
{
	char sh[160], *body;
	json_object *req, *p, *meta, *args;
	struct resp *r;

	snprintf(sh, sizeof sh, "Mcp-Session-Id: %s", sid);
	args = json_object_new_object();
	json_object_object_add(
	    args, "container_id", json_object_new_string(cid));
	json_object_object_add(args, "commands", json_object_new_string(cmd));
	p = tool_args("sandbox_exec", "{}");
	json_object_object_add(p, "arguments", args);
	meta = json_object_new_object();
	json_object_object_add(
	    meta, "progressToken", json_object_new_string("tok-1"));
	json_object_object_add(p, "_meta", meta);
	req = json_object_new_object();
	json_object_object_add(req, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(req, "id", json_object_new_int64(id));
	json_object_object_add(
	    req, "method", json_object_new_string("tools/call"));
	json_object_object_add(req, "params", p);
	body = strdup(json_object_to_json_string(req));
	json_object_put(req);
	r = http_full(s, "POST", s->url,
	    (const char *[]){ACCEPT_BOTH, CT_JSON, sh, NULL}, body,
	    strlen(body), 60000, stop_after);
	free(body);
	return r;
}

Test(http, sse_progress_then_response, .timeout = 120)
{
	struct sse_event ev[64];
	struct srv *s;
	struct resp *r;
	char *sid, *cid;
	unsigned long long last = 0;
	int n, i, progress = 0, responses = 0;

	s = srv_start(NULL);
	sid = mcp_init(s);
	cid = mcp_create(s, sid);
	r = post_exec_progress(
	    s, sid, cid, "for i in 1 2 3; do echo $i; sleep 1; done", 41, 0);
	cr_assert_eq(r->status, 200);
	cr_expect_str_eq(resp_header(r, "Content-Type"), "text/event-stream");
	n = sse_parse(r->body, ev, 64);
	cr_assert_geq(n, 3, "events: %s", r->body);
	/* 2025-11-25: a priming event (id, no data) with retry first */
	cr_expect(ev[0].has_id && ev[0].msg == NULL && ev[0].has_retry,
	    "no priming event: %s", r->body);
	for (i = 0; i < n; i++) {
		cr_expect(ev[i].has_id, "event %d has no id", i);
		cr_expect_gt(event_n(ev[i].id), last, "ids not increasing");
		last = event_n(ev[i].id);
		if (ev[i].msg == NULL)
			continue;
		if (is_progress(ev[i].msg)) {
			cr_expect_eq(
			    responses, 0, "progress after the response");
			cr_expect_str_eq(
			    h_str(ev[i].msg, "params.progressToken"), "tok-1");
			progress++;
		} else {
			cr_expect_eq(h_int(ev[i].msg, "id"), 41);
			cr_expect(
			    h_contains(json_object_to_json_string(ev[i].msg),
			        "1\\n2\\n3"));
			responses++;
		}
	}
	cr_expect_geq(progress, 2, "progress notifications: %d", progress);
	cr_expect_eq(responses, 1);
	cr_expect(ev[n - 1].msg != NULL && !is_progress(ev[n - 1].msg),
	    "the response is not last");
	sse_free(ev, n);
	resp_free(r);
	free(cid);
	free(sid);
	srv_finish(s);
}

Test(http, resumption_after_drop, .timeout = 120)
{
	struct sse_event ev[64], ev2[64];
	struct srv *s;
	struct resp *r, *g;
	char *sid, *cid, sh[160], lh[128];
	char last[64] = "";
	int n, n2, i, saw_response = 0, progress_after = 0;

	s = srv_start(NULL);
	sid = mcp_init(s);
	cid = mcp_create(s, sid);
	/* Drop the stream after the first progress notification. */
	r = post_exec_progress(s, sid, cid,
	    "for i in 1 2 3 4; do echo line$i; sleep 1; done", 42, 1);
	n = sse_parse(r->body, ev, 64);
	for (i = 0; i < n; i++) {
		if (ev[i].has_id)
			memcpy(last, ev[i].id, sizeof last);
		cr_expect(ev[i].msg == NULL || is_progress(ev[i].msg),
		    "the response came before the drop");
	}
	cr_assert(last[0] != '\0', "no event id before the drop: %s", r->body);
	sse_free(ev, n);
	resp_free(r);

	/* Let the call run on meanwhile; then resume. */
	sleep(2);
	snprintf(sh, sizeof sh, "Mcp-Session-Id: %s", sid);
	snprintf(lh, sizeof lh, "Last-Event-ID: %s", last);
	g = http_full(s, "GET", s->url,
	    (const char *[]){"Accept: text/event-stream", sh, lh, NULL}, NULL,
	    0, 60000, 0);
	cr_assert_eq(g->status, 200, "resume: %ld %s", g->status, g->body);
	n2 = sse_parse(g->body, ev2, 64);
	for (i = 0; i < n2; i++) {
		if (ev2[i].msg == NULL)
			continue;
		cr_expect(ev2[i].has_id);
		cr_expect_gt(event_n(ev2[i].id), event_n(last),
		    "replayed an event the client had");
		if (is_progress(ev2[i].msg))
			progress_after++;
		else {
			cr_expect_eq(h_int(ev2[i].msg, "id"), 42);
			cr_expect(
			    h_contains(json_object_to_json_string(ev2[i].msg),
			        "line1\\nline2\\nline3\\nline4"));
			saw_response = 1;
		}
	}
	cr_expect(
	    saw_response, "no response on the resumed stream: %s", g->body);
	cr_expect_geq(
	    progress_after, 1, "the missed progress was not replayed");
	sse_free(ev2, n2);
	resp_free(g);

	/* An id from nowhere is refused. */
	cr_expect_eq(status_of(s, "GET",
	                 (const char *[]){"Accept: text/event-stream", sh,
	                     "Last-Event-ID: 999999-77", NULL},
	                 NULL),
	    400);
	free(cid);
	free(sid);
	srv_finish(s);
}

Test(http, sse_outlives_http_timeout, .timeout = 120)
{
	struct srv *s;
	json_object *r;
	char *sid, *cid;
	char args[256];

	s = srv_start("--http-timeout", "2", NULL);
	sid = mcp_init(s);
	cid = mcp_create(s, sid);
	snprintf(args, sizeof args,
	    "{\"container_id\":\"%s\",\"commands\":\"sleep 5; echo late\"}",
	    cid);
	r = mcp_tool(s, sid, "sandbox_exec", args);
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect(
	    h_contains(h_str(r, "structuredContent.results.0.stdout"), "late"));
	json_object_put(r);
	free(cid);
	free(sid);
	srv_finish(s);
}

Test(http, isolation_between_sessions, .timeout = 120)
{
	struct srv *s;
	json_object *r;
	char *a, *b, *cid, args[256];

	s = srv_start(NULL);
	a = mcp_init(s);
	b = mcp_init(s);
	cr_expect_str_neq(a, b);
	cid = mcp_create(s, a);
	snprintf(args, sizeof args, "{\"container_id\":\"%s\"}", cid);
	/* Another's, and said so (the full id is no secret to b now). */
	r = mcp_tool(s, b, "get_sandbox_status", args);
	cr_expect(h_is_error(r) &&
	              h_contains(h_text(r), "belongs to another open client "
	                                    "session"),
	    "%s", h_text(r));
	json_object_put(r);
	r = mcp_tool(s, b, "get_sandbox_status", "{}");
	cr_expect_eq(
	    json_object_array_length(h_get(r, "structuredContent.sandboxes")),
	    0);
	json_object_put(r);
	r = mcp_tool(s, b, "sandbox_stop", args);
	cr_expect(h_is_error(r));
	json_object_put(r);
	cr_expect(h_container_exists(cid));
	r = mcp_tool(s, a, "get_sandbox_status", args);
	cr_expect(!h_is_error(r), "%s", h_text(r));
	json_object_put(r);
	free(cid);
	free(a);
	free(b);
	srv_finish(s);
}

/* A token file (0600) holding tok; its path (malloc'd). */
static char *
token_file(const char *tok)
{
	char *path = strdup("/tmp/mcp-sandboxd-token-XXXXXX");
	int fd;

	cr_assert(path != NULL);
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert(write(fd, tok, strlen(tok)) == (ssize_t)strlen(tok));
	close(fd);
	return path;
}

/* A server with a token given explicitly (whatever the default). */
static struct srv *
srv_start_token(const char *first, ...)
{
	const char *args[32];
	const char *a;
	struct srv *s;
	char *tf;
	va_list ap;
	int n = 0;

	tf = token_file("lifecycle-token-0123456789");
	args[n++] = "--auth-token-file";
	args[n++] = tf;
	va_start(ap, first);
	for (a = first; a != NULL && n < 31; a = va_arg(ap, const char *))
		args[n++] = a;
	va_end(ap);
	args[n] = NULL;
	s = srv_startv(args);
	snprintf(s->token, sizeof s->token, "lifecycle-token-0123456789");
	unlink(tf);
	free(tf);
	return s;
}

/* The value of a metric line "name value", or -1. */
static long long
metric(struct srv *s, const char *name)
{
	struct resp *r;
	const char *p;
	char want[128];
	long long v = -1;

	r = http_full(s, "GET", s->metrics, NULL, NULL, 0, 10000, 0);
	snprintf(want, sizeof want, "\n%s ", name);
	if (r->body != NULL && (p = strstr(r->body, want)) != NULL)
		v = strtoll(p + strlen(want), NULL, 10);
	resp_free(r);
	return v;
}

/* A POST left running on a raw connection (not read); the socket. */
static int
post_hanging(struct srv *s, const char *sid, const char *body)
{
	char req[2048];
	int fd, n;

	fd = h_dial(s->port);
	cr_assert(fd >= 0);
	n = snprintf(req, sizeof req,
	    "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
	    "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
	    "Accept: application/json, text/event-stream\r\n"
	    "Mcp-Session-Id: %s\r\nContent-Length: %zu\r\n\r\n%s",
	    s->port, s->token, sid, strlen(body), body);
	cr_assert(write(fd, req, (size_t)n) == n);
	return fd;
}

/*
 * The table is full: the longest-idle session without a running request
 * is ended to make room (counted, logged); only when every session runs
 * a request does initialize get 503.
 */
Test(http, max_sessions_evicts_longest_idle, .timeout = 120)
{
	struct srv *s;
	struct resp *r;
	char *a, *b, *c, *ca, *cc, body[512];
	int fa, fc;

	s = srv_start_token("--max-sessions", "2", NULL);
	a = mcp_init(s);
	b = mcp_init(s);
	usleep(100000);
	r = post(s, a, PING); /* a was seen last: b is the longest idle */
	cr_expect_eq(r->status, 200);
	resp_free(r);
	c = mcp_init(s); /* room made */
	r = post(s, b, PING);
	cr_expect_eq(r->status, 404, "the evicted session: %ld", r->status);
	resp_free(r);
	r = post(s, a, PING);
	cr_expect_eq(r->status, 200, "the other session: %ld", r->status);
	resp_free(r);
	cr_expect_eq(metric(s, "mcp_sandboxd_sessions_evicted_total"), 1);
	/* Both sessions run a request: no room, 503. */
	ca = mcp_create(s, a);
	cc = mcp_create(s, c);
	snprintf(body, sizeof body,
	    "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"sandbox_exec\",\"arguments\":{"
	    "\"container_id\":\"%s\",\"commands\":\"sleep 6\"}}}",
	    ca);
	fa = post_hanging(s, a, body);
	snprintf(body, sizeof body,
	    "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"sandbox_exec\",\"arguments\":{"
	    "\"container_id\":\"%s\",\"commands\":\"sleep 6\"}}}",
	    cc);
	fc = post_hanging(s, c, body);
	usleep(500000);
	r = post(s, NULL,
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
	    "\"params\":" INIT_PARAMS "}");
	cr_expect_eq(r->status, 503, "every session busy: %ld", r->status);
	resp_free(r);
	cr_expect_eq(metric(s, "mcp_sandboxd_sessions_evicted_total"), 1);
	close(fa);
	close(fc);
	free(ca);
	free(cc);
	free(a);
	free(b);
	free(c);
	srv_finish(s);
}

/*
 * A session idle past --session-idle ends (counted) with its sandboxes,
 * except a detached one, which a later session takes over by its id.
 */
Test(http, idle_session_ends_detached_sandbox_stays, .timeout = 180)
{
	struct srv *s;
	struct resp *r;
	json_object *t;
	char *a, *b, *cid, *dcid, args[256];

	s = srv_start_token("--session-idle", "2", NULL);
	a = mcp_init(s);
	cid = mcp_create(s, a);
	t = mcp_tool(s, a, "sandbox_initialize", "{\"detach\":true}");
	cr_assert(!h_is_error(t), "%s", h_text(t));
	dcid = strdup(h_str(t, "structuredContent.container_id"));
	json_object_put(t);
	t = mcp_tool(s, a, "sandbox_initialize", "{\"detach\":\"yes\"}");
	cr_expect(h_is_error(t), "detach must be a boolean");
	json_object_put(t);
	sleep(4);
	r = post(s, a, PING);
	cr_expect_eq(
	    r->status, 404, "idle session still there: %ld", r->status);
	resp_free(r);
	cr_expect(h_wait_container_gone(cid, 30000),
	    "the sandbox of an idle session remains");
	cr_expect(h_container_exists(dcid), "the detached sandbox went");
	cr_expect_geq(metric(s, "mcp_sandboxd_sessions_ended_idle_total"), 1);
	b = mcp_init(s);
	snprintf(args, sizeof args,
	    "{\"container_id\":\"%s\",\"commands\":\"echo adopted\"}", dcid);
	t = mcp_tool(s, b, "sandbox_exec", args);
	cr_expect(!h_is_error(t), "%s", h_text(t));
	cr_expect(h_contains(json_object_to_json_string(t), "adopted"));
	json_object_put(t);
	/* By full id only: a prefix does not take over another's. */
	free(cid);
	free(dcid);
	free(a);
	free(b);
	srv_finish(s);
}

/* A tool call of session sid on sandbox id; the result. */
static json_object *
exec_in(struct srv *s, const char *sid, const char *id, const char *cmd)
{
	char args[512];

	snprintf(args, sizeof args,
	    "{\"container_id\":\"%s\",\"commands\":[\"%s\"]}", id, cmd);
	return mcp_tool(s, sid, "sandbox_exec", args);
}

/*
 * A one-shot client never ends its HTTP session (the Inspector's CLI): a
 * detached sandbox is taken over by any other open session that names
 * its full id, in a call or a resource URI (the last to name it has it);
 * a sandbox made without detach stays its creator's, and another
 * session that names its full id hears that it is another session's (a
 * prefix or a name says nothing of other sessions).
 */
Test(http, detached_sandbox_taken_over_by_an_open_session, .timeout = 120)
{
	struct srv *s;
	json_object *t, *m, *p;
	char *a, *b, *c, *plain, *det, uri[160], prefix[16];

	s = srv_start_token(NULL);
	a = mcp_init(s);
	b = mcp_init(s);
	c = mcp_init(s);
	plain = mcp_create(s, a);
	t = mcp_tool(s, a, "sandbox_initialize", "{\"detach\":true}");
	cr_assert(!h_is_error(t), "%s", h_text(t));
	det = strdup(h_str(t, "structuredContent.container_id"));
	json_object_put(t);
	t = exec_in(s, a, det, "echo first > /tmp/mark");
	cr_expect(!h_is_error(t), "%s", h_text(t));
	json_object_put(t);

	/* Session a is still open: b takes the detached one over. */
	t = exec_in(s, b, det, "cat /tmp/mark");
	cr_expect(!h_is_error(t), "%s", h_text(t));
	cr_expect_str_eq(
	    h_str(t, "structuredContent.results.0.stdout"), "first\n");
	json_object_put(t);
	/* b has it: a's get_sandbox_status no longer lists it, b's does. */
	t = mcp_tool(s, a, "get_sandbox_status", "{}");
	cr_expect(
	    !h_contains(json_object_to_json_string(t), det), "%s", h_text(t));
	json_object_put(t);
	t = mcp_tool(s, b, "get_sandbox_status", "{}");
	cr_expect(
	    h_contains(json_object_to_json_string(t), det), "%s", h_text(t));
	json_object_put(t);
	/* A resource URI with the full id takes it over as well. */
	snprintf(uri, sizeof uri, "containers://%s/logs", det);
	p = json_object_new_object();
	json_object_object_add(p, "uri", json_object_new_string(uri));
	m = mcp_call(s, c, "resources/read", p);
	cr_expect_not_null(
	    h_get(m, "result.contents"), "%s", json_object_to_json_string(m));
	json_object_put(m);
	t = mcp_tool(s, c, "get_sandbox_status", "{}");
	cr_expect(
	    h_contains(json_object_to_json_string(t), det), "%s", h_text(t));
	json_object_put(t);
	/* The last to name it has it: a takes it back the same way. */
	t = exec_in(s, a, det, "cat /tmp/mark");
	cr_expect(!h_is_error(t), "%s", h_text(t));
	json_object_put(t);

	/* Not detached: its creator's only, and said so by full id. */
	t = exec_in(s, b, plain, "true");
	cr_expect(h_is_error(t) &&
	              h_contains(h_text(t), "belongs to another open client "
	                                    "session"),
	    "%s", h_text(t));
	json_object_put(t);
	snprintf(prefix, sizeof prefix, "%.12s", plain);
	t = exec_in(s, b, prefix, "true");
	cr_expect(h_is_error(t) && h_contains(h_text(t), "no sandbox") &&
	              !h_contains(h_text(t), "another"),
	    "%s", h_text(t));
	json_object_put(t);
	t = exec_in(s, a, plain, "echo still mine");
	cr_expect(!h_is_error(t), "%s", h_text(t));
	json_object_put(t);
	free(det);
	free(plain);
	free(a);
	free(b);
	free(c);
	srv_finish(s);
}

/* --transport both with stdin at /dev/null: HTTP serves on until a
 * signal; the stdio session alone ended. */
Test(http, both_with_stdin_devnull_keeps_http, .timeout = 60)
{
	struct srv srv, *s = &srv;
	struct h_server h;
	char listen[32], *tf, *sid;
	const char *bin = getenv("MCP_SANDBOXD_BIN");
	long long deadline;
	struct resp *r;
	int fd, rc;

	cr_assert(bin != NULL);
	memset(&srv, 0, sizeof srv);
	memset(&h, 0, sizeof h);
	srv.h = &h;
	srv.port = h_free_port();
	srv.next_id = 100;
	snprintf(listen, sizeof listen, "127.0.0.1:%d", srv.port);
	snprintf(srv.url, sizeof srv.url, "http://127.0.0.1:%d/mcp", srv.port);
	snprintf(srv.metrics, sizeof srv.metrics, "http://127.0.0.1:%d/metrics",
	    srv.port);
	snprintf(srv.token, sizeof srv.token, "both-token-0123456789");
	tf = token_file(srv.token);
	if ((h.pid = fork()) == 0) {
		fd = open("/dev/null", O_RDWR);
		dup2(fd, 0);
		dup2(fd, 1);
		execl(bin, bin, "--transport", "both", "--listen", listen,
		    "--auth-token-file", tf, "--image", H_IMAGE, "--log-level",
		    "warn", (char *)NULL);
		_exit(127);
	}
	cr_assert(h.pid > 0);
	deadline = h_now_ms() + 10000;
	while ((fd = h_dial(srv.port)) == -1) {
		cr_assert(h_now_ms() < deadline, "no listener");
		usleep(20000);
	}
	close(fd);
	sleep(1); /* stdin's EOF came long ago */
	cr_expect(h_pid_alive(h.pid), "the server exited at stdin's end");
	sid = mcp_init(s);
	r = post(s, sid, PING);
	cr_expect_eq(r->status, 200, "HTTP after stdin's end: %ld", r->status);
	resp_free(r);
	cr_expect_eq(
	    metric(s, "mcp_sandboxd_sessions_open{transport=\"stdio\"}"), 0);
	kill(h.pid, SIGTERM);
	rc = h_wait_exit(&h, 30000);
	cr_expect_eq(rc, 0, "exit status %d", rc);
	unlink(tf);
	free(tf);
	free(sid);
}

Test(http, idle_session_expires, .timeout = 120)
{
	struct srv *s;
	struct resp *r;
	char *sid, *cid;

	s = srv_start_token("--session-idle", "3", NULL);
	sid = mcp_init(s);
	cid = mcp_create(s, sid);
	sleep(5);
	r = post(s, sid, PING);
	cr_expect_eq(
	    r->status, 404, "idle session still there: %ld", r->status);
	resp_free(r);
	cr_expect(h_wait_container_gone(cid, 30000),
	    "the sandbox of an expired session remains");
	free(cid);
	free(sid);
	srv_finish(s);
}

Test(http, one_get_stream, .timeout = 60)
{
	struct srv *s;
	struct bg_get *g;
	char *sid, sh[160];

	s = srv_start(NULL);
	sid = mcp_init(s);
	snprintf(sh, sizeof sh, "Mcp-Session-Id: %s", sid);
	g = get_open(s, sid, NULL);
	get_pump(g, 500);
	cr_expect(g->running);
	cr_expect(h_contains(g->r->body, "retry:"), "no priming on GET: %s",
	    g->r->body ? g->r->body : "");
	cr_expect_eq(
	    status_of(s, "GET",
	        (const char *[]){"Accept: text/event-stream", sh, NULL}, NULL),
	    409);
	get_close(g);
	free(sid);
	srv_finish(s);
}

Test(http, no_priming_before_2025_11_25, .timeout = 120)
{
	struct sse_event ev[16];
	struct srv *s;
	struct resp *r;
	char *sid;
	int n;

	s = srv_start(NULL);
	sid = mcp_init_version(s, "2025-06-18");
	r = post(s, sid,
	    "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"sandbox_initialize\",\"arguments\":{}}}");
	cr_assert_eq(r->status, 200);
	cr_assert_str_eq(resp_header(r, "Content-Type"), "text/event-stream");
	n = sse_parse(r->body, ev, 16);
	cr_assert_geq(n, 1);
	cr_expect(ev[0].msg != NULL && !ev[0].has_retry,
	    "a 2025-06-18 stream began with a priming event: %s", r->body);
	cr_expect(ev[0].has_id, "events have ids for every version");
	sse_free(ev, n);
	resp_free(r);
	free(sid);
	srv_finish(s);
}

Test(http, cors_preflight_for_allowed_origins, .timeout = 60)
{
	struct srv *s;
	struct resp *r;

	setenv("MCP_SANDBOXD_AUTH_TOKEN", "cors-token", 1);
	s = srv_start("--allowed-origins", "http://localhost:6274", NULL);
	unsetenv("MCP_SANDBOXD_AUTH_TOKEN");
	/* a preflight carries no credentials */
	r = http_do(s, "OPTIONS",
	    (const char *[]){"Origin: http://localhost:6274",
	        "Access-Control-Request-Method: POST",
	        "Access-Control-Request-Headers: authorization, "
	        "mcp-session-id",
	        NULL},
	    NULL);
	cr_expect_eq(r->status, 204);
	cr_expect_str_eq(resp_header(r, "Access-Control-Allow-Origin"),
	    "http://localhost:6274");
	cr_expect(h_contains(
	    resp_header(r, "Access-Control-Allow-Headers"), "Mcp-Session-Id"));
	resp_free(r);
	r = http_do(s, "OPTIONS",
	    (const char *[]){"Origin: http://evil.example",
	        "Access-Control-Request-Method: POST", NULL},
	    NULL);
	cr_expect_eq(r->status, 403);
	cr_expect(resp_header(r, "Access-Control-Allow-Origin") == NULL);
	resp_free(r);
	/* another port of localhost is another origin, not listed */
	r = http_do(s, "OPTIONS",
	    (const char *[]){"Origin: http://localhost:5173",
	        "Access-Control-Request-Method: POST", NULL},
	    NULL);
	cr_expect_eq(r->status, 403);
	cr_expect(resp_header(r, "Access-Control-Allow-Origin") == NULL);
	resp_free(r);
	/* the real request still needs the token */
	r = http_do(s, "POST",
	    (const char *[]){
	        ACCEPT_BOTH, CT_JSON, "Origin: http://localhost:6274", NULL},
	    PING);
	cr_expect_eq(r->status, 401);
	cr_expect(h_contains(
	    resp_header(r, "Access-Control-Expose-Headers"), "Mcp-Session-Id"));
	resp_free(r);
	srv_finish(s);
}

Test(http, cancel_ends_the_stream, .timeout = 120)
{
	struct srv *s;
	struct resp *r, *body;
	char *sid, *cid, sh[160], req[512], auth[128];
	struct curl_slist *list = NULL;
	CURLM *multi;
	CURL *c;
	long long t0;
	int running = 1;

	s = srv_start(NULL);
	sid = mcp_init(s);
	cid = mcp_create(s, sid);
	snprintf(sh, sizeof sh, "Mcp-Session-Id: %s", sid);
	snprintf(req, sizeof req,
	    "{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"sandbox_exec\",\"arguments\":{"
	    "\"container_id\":\"%s\",\"commands\":\"sleep 60\"}}}",
	    cid);
	multi = curl_multi_init();
	c = curl_easy_init();
	list = curl_slist_append(list, ACCEPT_BOTH);
	list = curl_slist_append(list, CT_JSON);
	list = curl_slist_append(list, sh);
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", s->token);
	list = curl_slist_append(list, auth);
	curl_easy_setopt(c, CURLOPT_URL, s->url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, req);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_cb);
	body = calloc(1, sizeof *body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
	curl_multi_add_handle(multi, c);
	t0 = h_now_ms();
	while (running && (body->len == 0 || !h_contains(body->body, "\n\n")) &&
	       h_now_ms() - t0 < 10000) {
		curl_multi_perform(multi, &running);
		curl_multi_wait(multi, NULL, 0, 20, NULL);
	}
	cr_assert(running, "the stream ended before the cancel: %s",
	    body->body ? body->body : "");
	r = post(s, sid,
	    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
	    "\"params\":{\"requestId\":77}}");
	cr_expect_eq(r->status, 202);
	resp_free(r);
	t0 = h_now_ms();
	while (running && h_now_ms() - t0 < 10000) {
		curl_multi_perform(multi, &running);
		curl_multi_wait(multi, NULL, 0, 20, NULL);
	}
	cr_expect(!running, "the stream of a cancelled call stays open");
	cr_expect(!h_contains(body->body, "\"id\":77"),
	    "a cancelled call was answered: %s", body->body);
	curl_multi_remove_handle(multi, c);
	curl_easy_cleanup(c);
	curl_multi_cleanup(multi);
	curl_slist_free_all(list);
	resp_free(body);
	json_object_put(mcp_call(s, sid, "ping", NULL));
	free(cid);
	free(sid);
	srv_finish(s);
}

Test(http, get_stream_resumption, .timeout = 120)
{
	struct srv *s;
	struct bg_get *g;
	json_object *p, *r;
	char *sid, *cid, uri[128], last[64] = "", args[256];
	int k;

	s = srv_start(NULL);
	sid = mcp_init(s);
	cid = mcp_create(s, sid);
	snprintf(uri, sizeof uri, "containers://%s/logs", cid);
	p = json_object_new_object();
	json_object_object_add(p, "uri", json_object_new_string(uri));
	json_object_put(mcp_call(s, sid, "resources/subscribe", p));
	snprintf(args, sizeof args,
	    "{\"container_id\":\"%s\",\"commands\":\"echo first\"}", cid);

	/* The standalone stream carries the resource updates. */
	g = get_open(s, sid, NULL);
	get_pump(g, 300);
	r = mcp_tool(s, sid, "sandbox_exec", args);
	json_object_put(r);
	get_pump(g, 1500);
	k = updates_in(g->r->body, last, sizeof last, 0);
	cr_assert_geq(k, 1, "no resources/updated on the GET stream: %s",
	    g->r->body ? g->r->body : "");
	get_close(g); /* dropped */

	/* Missed while no GET was open: replayed on resumption. */
	snprintf(args, sizeof args,
	    "{\"container_id\":\"%s\",\"commands\":\"echo second\"}", cid);
	r = mcp_tool(s, sid, "sandbox_exec", args);
	json_object_put(r);
	usleep(500000);
	{
		char prev[64];

		memcpy(prev, last, sizeof prev);
		g = get_open(s, sid, prev);
		get_pump(g, 1500);
		cr_expect(g->running, "a resumed GET stream ended");
		k = updates_in(g->r->body, last, sizeof last, event_n(prev));
		cr_expect_geq(k, 1, "nothing replayed after %s: %s", prev,
		    g->r->body ? g->r->body : "");
		get_close(g);
	}
	free(cid);
	free(sid);
	srv_finish(s);
}

/* Lines of the file holding needle. */
static int
count_lines_with(const char *path, const char *needle)
{
	char line[1024];
	FILE *f;
	int n = 0;

	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (strstr(line, needle) != NULL)
			n++;
	fclose(f);
	return n;
}

/*
 * A server whose token is "the-right-token", in the file made at
 * tokpath, and whose stderr (its log) goes to the file made at logpath
 * (both mkstemp templates).
 */
static struct srv *
srv_start_logged(char *tokpath, char *logpath)
{
	struct srv *s;
	int fd, logfd, saved;

	fd = mkstemp(tokpath);
	cr_assert(fd >= 0);
	cr_assert(write(fd, "the-right-token\n", 16) == 16);
	close(fd);
	logfd = mkstemp(logpath);
	cr_assert(logfd >= 0);
	fflush(stderr);
	saved = dup(2);
	cr_assert(saved >= 0 && dup2(logfd, 2) == 2);
	s = srv_start("--auth-token-file", tokpath, NULL);
	dup2(saved, 2);
	close(saved);
	close(logfd);
	return s;
}

/*
 * The server does no OAuth, and says so the way the MCP authorization
 * specification lets a client understand: its discovery paths (and the
 * OAuth endpoints clients assume without them) answer 404 without a token,
 * and a 401 carries a Bearer challenge whose error_description names the
 * token to send.  Failed logins are logged, at most one line per peer per
 * 10 s, with a count and never with what was sent.
 */
Test(http, auth_challenge_and_no_oauth, .timeout = 90)
{
	static const char *const oauth_paths[] = {
	    "/.well-known/oauth-protected-resource",
	    "/.well-known/oauth-protected-resource/mcp",
	    "/.well-known/oauth-authorization-server",
	    "/.well-known/oauth-authorization-server/mcp",
	    "/.well-known/openid-configuration",
	    "/.well-known/openid-configuration/mcp",
	    "/mcp/.well-known/openid-configuration", "/register", "/authorize",
	    "/token", NULL};
	char path[] = "/tmp/mcp-sandboxd-token-XXXXXX";
	char logpath[] = "/tmp/mcp-sandboxd-log-XXXXXX";
	char url[128];
	const char *www;
	struct resp *r;
	struct srv *s;
	int i;

	s = srv_start_logged(path, logpath);
	snprintf(s->token, sizeof s->token, "the-right-token");

	for (i = 0; oauth_paths[i] != NULL; i++) {
		snprintf(url, sizeof url, "http://127.0.0.1:%d%s", s->port,
		    oauth_paths[i]);
		r = http_full(s, i < 7 ? "GET" : "POST", url,
		    (const char *[]){"Authorization:", NULL}, "{}", 2, 10000,
		    0);
		cr_expect_eq(r->status, 404, "%s without a token: %ld",
		    oauth_paths[i], r->status);
		cr_expect(resp_header(r, "WWW-Authenticate") == NULL);
		cr_expect(
		    r->body != NULL &&
		        strstr(r->body, "does not do OAuth") != NULL &&
		        strstr(r->body, "--auth-token-file") != NULL &&
		        strstr(r->body, "Unauthorized") == NULL &&
		        strstr(r->body, "no MCP endpoint at this path") != NULL,
		    "%s said: %s", oauth_paths[i], r->body ? r->body : "");
		resp_free(r);
	}

	/* A token that is a word: a client that redacts the words of its
	 * configured header (Claude Code) still shows what went wrong. */
	r = http_do(s, "POST",
	    (const char *[]){
	        ACCEPT_BOTH, CT_JSON, "Authorization: Bearer wrong", NULL},
	    PING);
	cr_expect_eq(r->status, 401);
	cr_expect(r->body != NULL && strstr(r->body, "wrong") == NULL &&
	              strstr(r->body, "does not match this server's") != NULL,
	    "body: %s", r->body ? r->body : "");
	resp_free(r);
	r = http_do(s, "POST",
	    (const char *[]){ACCEPT_BOTH, CT_JSON,
	        "Authorization: Bearer not-the-token", NULL},
	    PING);
	cr_expect_eq(r->status, 401);
	www = resp_header(r, "WWW-Authenticate");
	cr_expect(www != NULL &&
	              strncmp(www,
	                  "Bearer realm=\"mcp-sandboxd\", "
	                  "error=\"invalid_token\", "
	                  "error_description=\"",
	                  64) == 0 &&
	              strstr(www, "send Authorization: Bearer <token> with "
	                          "the token configured with "
	                          "--auth-token-file") != NULL,
	    "WWW-Authenticate: %s", www ? www : "(none)");
	cr_expect(r->body != NULL &&
	              strstr(r->body, "send Authorization: Bearer <token> "
	                              "with the token configured with "
	                              "--auth-token-file") != NULL,
	    "body: %s", r->body ? r->body : "");
	resp_free(r);

	r = http_full(s, "POST", s->url,
	    (const char *[]){ACCEPT_BOTH, CT_JSON, "Authorization:", NULL},
	    PING, strlen(PING), 10000, 0);
	cr_expect_eq(r->status, 401);
	www = resp_header(r, "WWW-Authenticate");
	cr_expect(www != NULL && strstr(www, "error=\"invalid_request\"") &&
	              strstr(www, "no bearer token was sent"),
	    "WWW-Authenticate: %s", www ? www : "(none)");
	resp_free(r);

	/* 3 failures so far, 17 more: one log line in the first 10 s. */
	for (i = 0; i < 17; i++)
		cr_expect_eq(
		    status_of(s, "POST",
		        (const char *[]){ACCEPT_BOTH, CT_JSON,
		            "Authorization: Bearer not-the-token", NULL},
		        PING),
		    401);
	cr_expect_eq(count_lines_with(logpath, "authentication failed from "
	                                       "127.0.0.1"),
	    1, "one line for the first failures");
	sleep(11);
	cr_expect_eq(status_of(s, "POST",
	                 (const char *[]){ACCEPT_BOTH, CT_JSON,
	                     "Authorization: Bearer not-the-token", NULL},
	                 PING),
	    401);
	cr_expect_eq(count_lines_with(logpath, "authentication failed from "
	                                       "127.0.0.1"),
	    2, "a second line after 10 s");
	cr_expect_eq(count_lines_with(logpath, "(20 failures from it"), 1,
	    "the second line counts the 20 failures since the first");
	cr_expect_eq(count_lines_with(logpath, "not-the-token"), 0,
	    "the token a client sent is never logged");
	cr_expect_eq(count_lines_with(logpath, "the-right-token"), 0);
	srv_finish(s);
	unlink(path);
	unlink(logpath);
}

/*
 * --print-config, run as a user would: the claude entry carries the
 * options given and the directory it ran in, absolute; the claude-http
 * entry the URL of --listen and the token of --auth-token-file; a
 * transport or token that cannot make an entry is refused.
 */
Test(http, print_config_entries, .timeout = 60)
{
	char dir[] = "/tmp/mcp-sandboxd-pc-XXXXXX", tok[64],
	     cmd[PATH_MAX + 512];
	char *out;
	json_object *o;
	int st, fd;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(cmd, sizeof cmd,
	    "cd %s && env -u MCP_SANDBOXD_AGENT %s --image img:1 --pids 64 "
	    "--print-config claude 2>/dev/null",
	    dir, getenv("MCP_SANDBOXD_BIN"));
	out = h_run(cmd, &st);
	cr_expect_eq(st, 0, "%s", out);
	o = h_parse(out);
	cr_assert_not_null(o, "not JSON: %s", out);
	cr_expect_str_eq(h_str(o, "mcpServers.mcp-sandboxd.args.0"), "--image");
	cr_expect_str_eq(h_str(o, "mcpServers.mcp-sandboxd.args.1"), "img:1");
	cr_expect_str_eq(h_str(o, "mcpServers.mcp-sandboxd.args.2"), "--pids");
	cr_expect_str_eq(h_str(o, "mcpServers.mcp-sandboxd.args.3"), "64");
	cr_expect_str_eq(
	    h_str(o, "mcpServers.mcp-sandboxd.args.4"), "--allow-dir");
	cr_expect_str_eq(h_str(o, "mcpServers.mcp-sandboxd.args.5"), dir);
	json_object_put(o);
	free(out);

	snprintf(tok, sizeof tok, "%s/token", dir);
	fd = open(tok, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert(fd >= 0);
	cr_assert(write(fd, "tok-123\n", 8) == 8);
	close(fd);
	snprintf(cmd, sizeof cmd,
	    "%s --transport http --listen 127.0.0.1:9123 --auth-token-file "
	    "%s --print-config claude-http 2>/dev/null",
	    getenv("MCP_SANDBOXD_BIN"), tok);
	out = h_run(cmd, &st);
	cr_expect_eq(st, 0, "%s", out);
	o = h_parse(out);
	cr_assert_not_null(o, "not JSON: %s", out);
	cr_expect_str_eq(h_str(o, "mcpServers.mcp-sandboxd.command"), "npx");
	cr_expect_str_eq(h_str(o, "mcpServers.mcp-sandboxd.args.1"),
	    "http://127.0.0.1:9123/mcp");
	cr_expect_str_eq(h_str(o, "mcpServers.mcp-sandboxd.args.3"),
	    "Authorization:${AUTH_HEADER}");
	cr_expect_str_eq(h_str(o, "mcpServers.mcp-sandboxd.env.AUTH_HEADER"),
	    "Bearer tok-123");
	json_object_put(o);
	free(out);

	snprintf(cmd, sizeof cmd,
	    "MCP_SANDBOXD_AUTH_TOKEN= %s --print-config claude-http 2>&1",
	    getenv("MCP_SANDBOXD_BIN"));
	out = h_run(cmd, &st);
	cr_expect_neq(st, 0);
	cr_expect(h_contains(out, "--auth-token-file"), "said: %s", out);
	free(out);
	snprintf(cmd, sizeof cmd,
	    "%s --transport http --print-config claude 2>&1",
	    getenv("MCP_SANDBOXD_BIN"));
	out = h_run(cmd, &st);
	cr_expect_neq(st, 0);
	cr_expect(h_contains(out, "claude-http"), "said: %s", out);
	free(out);
	unlink(tok);
	rmdir(dir);
}

/*
 * Peers that change address (here 30 loopback addresses) cannot flood the
 * log with failed logins: at most 20 lines in 10 s, the rest counted.
 */
Test(http, auth_failures_log_is_bounded_across_peers, .timeout = 90)
{
	char path[] = "/tmp/mcp-sandboxd-token-XXXXXX";
	char logpath[] = "/tmp/mcp-sandboxd-log-XXXXXX";
	char cmd[1024], *out;
	struct srv *s;
	int st;

	s = srv_start_logged(path, logpath);

	snprintf(cmd, sizeof cmd,
	    "n=0; for i in $(seq 2 31); do "
	    "c=$(curl -s -o /dev/null -w '%%{http_code}' --interface 127.0.0.$i "
	    "-X POST -H 'Authorization: Bearer no' http://127.0.0.1:%d/mcp); "
	    "[ \"$c\" = 401 ] && n=$((n+1)); done; echo $n",
	    s->port);
	out = h_run(cmd, &st);
	cr_expect_eq(atoi(out), 30, "401s from 30 addresses: %s", out);
	free(out);
	cr_expect_eq(count_lines_with(logpath, "authentication failed from "
	                                       "127.0.0."),
	    20, "20 lines at most in 10 s, all peers together");
	sleep(11);
	snprintf(cmd, sizeof cmd,
	    "curl -s -o /dev/null --interface 127.0.0.40 -X POST "
	    "http://127.0.0.1:%d/mcp",
	    s->port);
	free(h_run(cmd, &st));
	cr_expect_eq(count_lines_with(logpath, "10 failure line(s) held back"),
	    1, "the lines held back are counted");
	cr_expect_eq(count_lines_with(logpath, "authentication failed from "
	                                       "127.0.0.40"),
	    1);
	srv_finish(s);
	unlink(path);
	unlink(logpath);
}
