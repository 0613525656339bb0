/*
 * The Streamable HTTP transport's server: libevent's evhttp on --listen,
 * one endpoint /mcp (handled by http-session.c) and /metrics.  Every
 * request passes the same gate first: the Host and Origin allowlists
 * (DNS rebinding), the bearer token when one is configured, then the
 * MCP-Protocol-Version, Accept and Content-Type of /mcp.
 *
 * Limits: every connection passes http-conn.c's gate first (the token
 * checked before a body is read, connections counted from accept, header
 * deadline and body minimum rate).  Bodies over --max-line get 413 from
 * evhttp before they are read, and a connection silent for --http-timeout
 * seconds is closed; the loop never waits on one client.  When accept()
 * fails for want of descriptors the listener rests a moment instead of
 * spinning on a socket that stays readable.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <netinet/in.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

#include "config.h"
#include "core.h"
#include "http-int.h"
#include "listenreg.h"
#include "listenrest.h"
#include "log.h"
#include "mcp.h"
#include "random.h"
#include "sandbox.h"
#include "spool.h"
#include "transport.h"
#include "xmalloc.h"

#define HTTP_TOKEN_MAX 4096
#define HTTP_MAX_LIST 64
#define HTTP_AUTH_PEERS 64 /* peers whose failed logins are counted */
#define HTTP_AUTH_LOG_SECONDS 10
#define HTTP_AUTH_LOG_LINES 20 /* lines per window, all peers together */
#define HTTP_GEN_TOKEN_BYTES 32

static struct evhttp *httpd;
static struct evconnlistener *listener;
static struct listenrest *accept_rest; /* out of descriptors */
static char *token; /* the bearer token, or NULL: no auth */
static size_t token_len;
static int token_generated; /* made at start: printed once */
static char *origins[HTTP_MAX_LIST], *hosts[HTTP_MAX_LIST];
static int norigins, nhosts;
static long long replies[6]; /* by status class: 1xx at 1 ... 5xx at 5 */

static const char *const versions[] = {
    "2025-11-25", "2025-06-18", "2025-03-26"};

/*
 * Equal, in time that depends only on the lengths: every byte of b is
 * looked at whatever a holds, and the lengths are compared without an
 * early exit.
 */
int
http_ct_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	volatile unsigned char d;
	size_t i;

	d = (unsigned char)((alen ^ blen) != 0);
	for (i = 0; i < blen; i++)
		d |= (unsigned char)(b[i] ^ (i < alen ? a[i] : 0));
	return d == 0;
}

/* Count a reply by its class (1xx to 5xx) for /metrics. */
void
http_count(int code)
{
	if (code >= 100 && code < 600)
		replies[code / 100]++;
}

static const char *
http_reason(int code)
{
	switch (code) {
	case 200:
		return "OK";
	case 202:
		return "Accepted";
	case 204:
		return "No Content";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 406:
		return "Not Acceptable";
	case 409:
		return "Conflict";
	case 415:
		return "Unsupported Media Type";
	case 500:
		return "Internal Server Error";
	case 503:
		return "Service Unavailable";
	}
	return "Error";
}

/* A whole reply; ctype NULL for none (an empty body). */
void
http_reply(struct evhttp_request *req, int code, const char *ctype,
    const char *body, size_t len)
{
	struct evbuffer *b = NULL;

	if (ctype != NULL)
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Content-Type", ctype);
	if (len > 0) {
		b = evbuffer_new();
		evbuffer_add(b, body, len);
	}
	http_count(code);
	evhttp_send_reply(req, code, http_reason(code), b);
	if (b != NULL)
		evbuffer_free(b);
}

/* A JSON reply; takes msg. */
void
http_reply_json(struct evhttp_request *req, int code, json_object *msg)
{
	const char *s;
	size_t len;

	s = json_object_to_json_string_length(
	    msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	http_reply(req, code, "application/json", s, len);
	json_object_put(msg);
}

/* An HTTP error with a JSON-RPC error body (id borrowed, may be NULL). */
void
http_reply_error(struct evhttp_request *req, int code, json_object *id,
    int rpc_code, const char *why)
{
	http_reply_json(req, code, rpc_error(id, rpc_code, why));
}

/* --- allowlists --- */

static char *
trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

/*
 * Split "host[:port]" (host may be a bracketed IPv6 address) in place;
 * NULL if it is not that shape.
 */
static char *
hostport_split(char *s, char **port)
{
	char *p, *c;

	*port = NULL;
	if (*s == '[') {
		if ((p = strchr(s, ']')) == NULL)
			return NULL;
		for (c = s + 1; c < p; c++)
			if (!isxdigit((unsigned char)*c) && *c != ':' &&
			    *c != '.')
				return NULL;
		p++;
	} else {
		for (p = s; *p != '\0' && *p != ':'; p++)
			if (!isalnum((unsigned char)*p) && *p != '.' &&
			    *p != '-' && *p != '_')
				return NULL;
	}
	if (p == s)
		return NULL;
	if (*p == ':') {
		*p++ = '\0';
		if (*p == '\0' || strlen(p) > 5)
			return NULL;
		for (c = p; *c != '\0'; c++)
			if (!isdigit((unsigned char)*c))
				return NULL;
		*port = p;
	} else if (*p != '\0')
		return NULL;
	return s;
}

/* "host[:port]" against entries "host" (any port), "host:port" or "*". */
static int
host_allowed(const char *value, char *const *list, int n, const char *scheme)
{
	char buf[300], entry[300], *h, *port, *eh, *eport, *rest;
	size_t slen = scheme != NULL ? strlen(scheme) : 0;
	int i;

	if (strlen(value) >= sizeof buf)
		return 0;
	snprintf(buf, sizeof buf, "%s", value);
	if ((h = hostport_split(buf, &port)) == NULL)
		return 0;
	for (i = 0; i < n; i++) {
		if (strcmp(list[i], "*") == 0)
			return 1;
		if (strlen(list[i]) >= sizeof entry)
			continue;
		snprintf(entry, sizeof entry, "%s", list[i]);
		rest = entry;
		if (scheme != NULL) {
			if (strncasecmp(entry, scheme, slen) != 0 ||
			    strncmp(entry + slen, "://", 3) != 0)
				continue;
			rest = entry + slen + 3;
		}
		if ((eh = hostport_split(rest, &eport)) == NULL)
			continue;
		if (strcasecmp(h, eh) == 0 &&
		    (eport == NULL ||
		        (port != NULL && strcmp(port, eport) == 0)))
			return 1;
	}
	return 0;
}

/* Origin is "scheme://host[:port]" and nothing more. */
static int
origin_allowed(const char *origin)
{
	char scheme[16];
	const char *p;
	size_t n;
	int i;

	for (i = 0; i < norigins; i++)
		if (strcmp(origins[i], "*") == 0)
			return 1;
	if ((p = strstr(origin, "://")) == NULL ||
	    (n = (size_t)(p - origin)) == 0 || n >= sizeof scheme)
		return 0;
	memcpy(scheme, origin, n);
	scheme[n] = '\0';
	return host_allowed(p + 3, origins, norigins, scheme);
}

static void
list_add(char **list, int *n, const char *s)
{
	if (*n < HTTP_MAX_LIST)
		list[(*n)++] = xstrdup(s);
}

/* A comma list, or the defaults. */
static void
list_parse(char **list, int *n, const char *text, const char *const *defs)
{
	char *dup, *p, *tok;

	if (text == NULL) {
		for (; *defs != NULL; defs++)
			list_add(list, n, *defs);
		return;
	}
	dup = xstrdup(text);
	for (p = dup; (tok = strsep(&p, ",")) != NULL;)
		if (*(tok = trim(tok)) != '\0')
			list_add(list, n, tok);
	free(dup);
}

/* --- the gate --- */

static int
version_ok(struct evhttp_request *req)
{
	const char *v;
	size_t i;

	v = evhttp_find_header(
	    evhttp_request_get_input_headers(req), "MCP-Protocol-Version");
	if (v == NULL)
		return 1; /* 2025-03-26 clients send none */
	for (i = 0; i < sizeof versions / sizeof versions[0]; i++)
		if (strcmp(v, versions[i]) == 0)
			return 1;
	return 0;
}

/* Does the Accept header allow this type ("a/b")?  q=0 refuses. */
static int
accepts(struct evhttp_request *req, const char *type)
{
	size_t n, major = strcspn(type, "/");
	char buf[256], *rest, *range, *param;
	const char *v, *p;
	int refused;

	v = evhttp_find_header(evhttp_request_get_input_headers(req), "Accept");
	if (v == NULL)
		return 0; /* MCP clients must name both types */
	for (p = v; *p != '\0'; p += *p == ',' ? 1 : 0) {
		n = strcspn(p, ",");
		if (n >= sizeof buf) {
			p += n;
			continue;
		}
		memcpy(buf, p, n);
		buf[n] = '\0';
		p += n;
		rest = buf;
		range = trim(strsep(&rest, ";"));
		refused = 0;
		while ((param = strsep(&rest, ";")) != NULL) {
			param = trim(param);
			if ((param[0] == 'q' || param[0] == 'Q') &&
			    param[1] == '=' && strtod(param + 2, NULL) <= 0)
				refused = 1;
		}
		if (refused)
			continue;
		if (strcmp(range, "*/*") == 0 || strcasecmp(range, type) == 0 ||
		    (strlen(range) == major + 2 &&
		        strncasecmp(range, type, major) == 0 &&
		        strcmp(range + major, "/*") == 0))
			return 1;
	}
	return 0;
}

static int
content_type_json(struct evhttp_request *req)
{
	const char *v;
	size_t n;

	v = evhttp_find_header(
	    evhttp_request_get_input_headers(req), "Content-Type");
	if (v == NULL)
		return 0;
	n = strcspn(v, ";");
	while (n > 0 && isspace((unsigned char)v[n - 1]))
		n--;
	return n == 16 && strncasecmp(v, "application/json", 16) == 0;
}

/*
 * Is the body's length unambiguous (RFC 9112 6.3)?  Two Content-Length
 * headers that disagree, or one with Transfer-Encoding, are how requests
 * are smuggled past a proxy that reads them otherwise; both are refused
 * (and the connection closed).  evhttp itself reads the first
 * Content-Length, or the chunks.
 */
static int
framing_ok(struct evhttp_request *req)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	const struct evkeyval *h;
	const char *cl = NULL;
	int te = 0;

	TAILQ_FOREACH(h, in, next)
	{
		if (strcasecmp(h->key, HTTP_AMBIGUOUS_HEADER) == 0)
			return 0; /* http-conn.c saw both lengths */
		if (strcasecmp(h->key, "Transfer-Encoding") == 0)
			te = 1;
		else if (strcasecmp(h->key, "Content-Length") == 0) {
			if (cl != NULL && strcmp(cl, h->value) != 0)
				return 0;
			cl = h->value;
		}
	}
	return !(te && cl != NULL);
}

/* --- authentication --- */

/* Is a token needed (none with --no-auth)? */
int
http_auth_required(void)
{
	return token != NULL;
}

/*
 * An Authorization value "Bearer <token>", the scheme in any case, the
 * token compared in constant time.  http-conn.c asks it of a request's
 * header block before evhttp reads its body; auth_check() once it is read.
 */
int
http_auth_value_ok(const char *v)
{
	size_t len;

	if (token == NULL)
		return 1;
	if (v == NULL || strncasecmp(v, "Bearer ", 7) != 0)
		return 0;
	v += 7;
	while (*v == ' ')
		v++;
	len = strlen(v);
	while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t'))
		len--;
	return http_ct_equal(v, len, token, token_len);
}

enum auth_result { AUTH_OK, AUTH_MISSING, AUTH_NOT_BEARER, AUTH_WRONG };

/* "Bearer <token>", the scheme in any case, compared in constant time. */
static enum auth_result
auth_check(struct evhttp_request *req)
{
	const char *v;

	if (token == NULL)
		return AUTH_OK;
	v = evhttp_find_header(
	    evhttp_request_get_input_headers(req), "Authorization");
	if (v == NULL)
		return AUTH_MISSING;
	if (strncasecmp(v, "Bearer ", 7) != 0)
		return AUTH_NOT_BEARER;
	return http_auth_value_ok(v) ? AUTH_OK : AUTH_WRONG;
}

/*
 * Where the operator configured the token, for the messages that tell a
 * client what to send.  No quote or backslash: it goes into a quoted
 * string of WWW-Authenticate (RFC 6750 error_description).
 */
static const char *
auth_token_source(void)
{
	if (token_generated)
		return "the token the server printed on its standard error "
		       "at start (or give one with --auth-token-file)";
	return sup.conf->auth_token_file != NULL
	           ? "the token configured with --auth-token-file"
	           : "the token configured in MCP_SANDBOXD_AUTH_TOKEN";
}

/*
 * Failed authentications, logged with the peer's address (never what it
 * sent) at most once per peer per HTTP_AUTH_LOG_SECONDS; the line counts
 * the failures since the peer's last line.  A small table: when it is
 * full the peer logged longest ago gives its place.  Peers that change
 * address (a whole IPv6 prefix) cannot flood the log either: past
 * HTTP_AUTH_LOG_LINES lines in a window the rest are only counted, and
 * the count is logged when the next window opens.
 */
struct auth_peer {
	char addr[64];
	time_t logged; /* when its last line was written */
	long failures; /* since then, not yet in a line */
};
static struct auth_peer auth_peers[HTTP_AUTH_PEERS];
static time_t auth_window; /* start of the current window */
static int auth_window_lines;
static long auth_window_unlogged;

static void
auth_log_failure(struct evhttp_request *req, enum auth_result why)
{
	static const char *const reasons[] = {
	    [AUTH_MISSING] = "no Authorization header",
	    [AUTH_NOT_BEARER] = "not a Bearer token",
	    [AUTH_WRONG] = "wrong bearer token",
	};
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct auth_peer *p = NULL, *oldest = &auth_peers[0];
	char *addr = NULL;
	ev_uint16_t port;
	time_t now = time(NULL);
	size_t i;

	if (evcon != NULL)
		evhttp_connection_get_peer(evcon, &addr, &port);
	for (i = 0; i < HTTP_AUTH_PEERS; i++) {
		if (strcmp(auth_peers[i].addr,
		        addr != NULL ? addr : "(unknown)") == 0) {
			p = &auth_peers[i];
			break;
		}
		if (auth_peers[i].logged < oldest->logged)
			oldest = &auth_peers[i];
	}
	if (p == NULL) {
		p = oldest;
		memset(p, 0, sizeof *p);
		snprintf(p->addr, sizeof p->addr, "%s",
		    addr != NULL ? addr : "(unknown)");
	}
	p->failures++;
	if (p->logged != 0 && now - p->logged < HTTP_AUTH_LOG_SECONDS)
		return;
	if (now - auth_window >= HTTP_AUTH_LOG_SECONDS) {
		if (auth_window_unlogged > 0)
			log_warnx("HTTP authentication: %ld failure line(s) "
			          "held back (over %d lines in %d s; each "
			          "peer's next line counts them)",
			    auth_window_unlogged, HTTP_AUTH_LOG_LINES,
			    HTTP_AUTH_LOG_SECONDS);
		auth_window = now;
		auth_window_lines = 0;
		auth_window_unlogged = 0;
	}
	if (auth_window_lines >= HTTP_AUTH_LOG_LINES) {
		auth_window_unlogged++;
		return;
	}
	auth_window_lines++;
	log_warnx("HTTP authentication failed from %s: %s (%ld failure%s "
	          "from it since its last report; at most one line per "
	          "%d s)",
	    p->addr, reasons[why], p->failures, p->failures == 1 ? "" : "s",
	    HTTP_AUTH_LOG_SECONDS);
	p->logged = now;
	p->failures = 0;
}

/*
 * 401 in the words of RFC 6750 and the MCP authorization specification:
 * a Bearer challenge with an error and a description of what to send.
 * No resource_metadata: this server is no OAuth resource server, and its
 * discovery paths answer 404 (http_not_found), so a client that looks
 * for an authorization server finds none instead of starting a sign-in.
 */
static void
auth_refuse(struct evhttp_request *req, enum auth_result why)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	char desc[256], hdr[400], msg[400];

	auth_log_failure(req, why);
	snprintf(desc, sizeof desc,
	    "%s; send Authorization: Bearer <token> with %s (this server "
	    "does not do OAuth)",
	    why == AUTH_WRONG        ? "the bearer token sent does not match "
	                               "this server's"
	    : why == AUTH_NOT_BEARER ? "the Authorization header is not a "
	                               "Bearer token"
	                             : "no bearer token was sent",
	    auth_token_source());
	snprintf(hdr, sizeof hdr,
	    "Bearer realm=\"mcp-sandboxd\", error=\"%s\", "
	    "error_description=\"%s\"",
	    why == AUTH_WRONG ? "invalid_token" : "invalid_request", desc);
	snprintf(msg, sizeof msg, "Unauthorized: %s", desc);
	evhttp_add_header(out, "Connection", "close");
	evhttp_add_header(out, "WWW-Authenticate", hdr);
	http_reply_error(req, 401, NULL, HTTP_RPC_BAD_REQUEST, msg);
}

/*
 * Every path but /mcp and /metrics answers 404 before the token is
 * checked: above all the OAuth ones, the discovery documents (RFC 9728
 * protected resource metadata, RFC 8414 authorization server metadata,
 * OpenID configuration, with the /mcp suffix or inside /mcp/) and the
 * endpoints clients assume without them (/register, /authorize,
 * /token).  This server has none of them, and a 401 there would send a
 * client into an OAuth sign-in that waits for a browser forever; a 404
 * ends its discovery, and the description names what to send instead.
 * The message avoids the word "Unauthorized", which some clients take
 * as a reason to start a sign-in.  Its meaning is not in the path: a
 * client that shows it may redact what its configuration holds (Claude
 * Code replaces the URL's path, and each word of a header's value, with
 * "[redacted]"), so the words around them say it.
 */
static int
http_not_found(struct evhttp_request *req, const char *path)
{
	char msg[300];

	if (path != NULL &&
	    (strcmp(path, "/mcp") == 0 || strcmp(path, "/metrics") == 0))
		return 0;
	if (token != NULL)
		snprintf(msg, sizeof msg,
		    "Not Found: no MCP endpoint at this path (MCP is at "
		    "/mcp), and this server does not do OAuth; send "
		    "Authorization: Bearer <token> with %s",
		    auth_token_source());
	else
		snprintf(msg, sizeof msg,
		    "Not Found: no MCP endpoint at this path (MCP is at "
		    "/mcp; this server does not do OAuth and asks for no "
		    "token)");
	http_reply_error(req, 404, NULL, HTTP_RPC_BAD_REQUEST, msg);
	return 1;
}

/* --- /metrics --- */

/* Whether the stdio client, served beside HTTP, is still there. */
int
http_stdio_sessions(void)
{
	return strcmp(sup.conf->transport, "http") != 0 && stdio_open();
}

/*
 * The Prometheus text of /metrics: the supervisor's statistics and this
 * transport's own.  More stats go here.
 */
static void
http_metrics(struct evbuffer *b)
{
	static const char *const classes[] = {
	    NULL, "1xx", "2xx", "3xx", "4xx", "5xx"};
	long refused, cut, preauth;
	int i;

	http_conn_stats(&refused, &cut, &preauth);
	stats_prometheus(b);
	evbuffer_add_printf(b,
	    "# HELP mcp_sandboxd_sessions_open Client sessions open.\n"
	    "# TYPE mcp_sandboxd_sessions_open gauge\n"
	    "mcp_sandboxd_sessions_open{transport=\"http\"} %d\n"
	    "mcp_sandboxd_sessions_open{transport=\"stdio\"} %d\n",
	    http_sessions_open(), http_stdio_sessions());
	http_sessions_metrics(b);
	evbuffer_add_printf(b,
	    "# HELP mcp_sandboxd_http_requests_total HTTP requests answered, "
	    "by status class.\n"
	    "# TYPE mcp_sandboxd_http_requests_total counter\n");
	for (i = 1; i <= 5; i++)
		evbuffer_add_printf(b,
		    "mcp_sandboxd_http_requests_total{code=\"%s\"} %lld\n",
		    classes[i], replies[i]);
	evbuffer_add_printf(b,
	    "# HELP mcp_sandboxd_http_connections HTTP connections served "
	    "(from accept, whether or not they sent a request).\n"
	    "# TYPE mcp_sandboxd_http_connections gauge\n"
	    "mcp_sandboxd_http_connections %ld\n"
	    "# HELP mcp_sandboxd_http_connections_refused_total Connections "
	    "refused past --http-max-connections.\n"
	    "# TYPE mcp_sandboxd_http_connections_refused_total counter\n"
	    "mcp_sandboxd_http_connections_refused_total %ld\n"
	    "# HELP mcp_sandboxd_http_connections_cut_total Connections cut "
	    "for a request too slow (--http-header-timeout, --http-min-rate) "
	    "or a header block too large.\n"
	    "# TYPE mcp_sandboxd_http_connections_cut_total counter\n"
	    "mcp_sandboxd_http_connections_cut_total %ld\n"
	    "# HELP mcp_sandboxd_http_preauth_refused_total Requests without "
	    "the token refused before their body was read.\n"
	    "# TYPE mcp_sandboxd_http_preauth_refused_total counter\n"
	    "mcp_sandboxd_http_preauth_refused_total %ld\n"
	    "# HELP mcp_sandboxd_http_accept_rests_total Times accept() failed "
	    "(out of descriptors) and the listener rested.\n"
	    "# TYPE mcp_sandboxd_http_accept_rests_total counter\n"
	    "mcp_sandboxd_http_accept_rests_total %lld\n",
	    http_conn_count(), refused, cut, preauth,
	    listenrest_count(accept_rest));
}

static void
http_metrics_reply(struct evhttp_request *req)
{
	struct evbuffer *b;

	b = evbuffer_new();
	http_metrics(b);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	http_count(200);
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

/* --- connections --- */

/* --- requests --- */

/*
 * CORS for pages of an allowed Origin (browser clients): the headers a
 * page may read, and the answer to a preflight, which carries no
 * credentials and so comes before the token check.  1 if answered.
 */
static int
http_cors(
    struct evhttp_request *req, const char *origin, enum evhttp_cmd_type cmd)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);

	evhttp_add_header(out, "Access-Control-Allow-Origin", origin);
	evhttp_add_header(out, "Vary", "Origin");
	evhttp_add_header(out, "Access-Control-Expose-Headers",
	    "Mcp-Session-Id, WWW-Authenticate");
	if (cmd != EVHTTP_REQ_OPTIONS ||
	    evhttp_find_header(evhttp_request_get_input_headers(req),
	        "Access-Control-Request-Method") == NULL)
		return 0;
	evhttp_add_header(
	    out, "Access-Control-Allow-Methods", "GET, POST, DELETE");
	evhttp_add_header(out, "Access-Control-Allow-Headers",
	    "Authorization, Content-Type, Accept, Mcp-Session-Id, "
	    "MCP-Protocol-Version, Last-Event-ID");
	evhttp_add_header(out, "Access-Control-Max-Age", "600");
	http_reply(req, 204, NULL, NULL, 0);
	return 1;
}

static void
http_cb(struct evhttp_request *req, void *arg)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	const struct evhttp_uri *uri;
	const char *path, *v;
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	enum auth_result why;

	(void)arg;
	if (sup.shutting_down) {
		http_reply_error(req, 503, NULL, HTTP_RPC_BAD_REQUEST,
		    "the server is shutting down");
		return;
	}
	if (!framing_ok(req)) {
		evhttp_add_header(out, "Connection", "close");
		http_reply_error(req, 400, NULL, HTTP_RPC_BAD_REQUEST,
		    "Bad Request: the body's length is ambiguous (Content-Length "
		    "headers that differ, or Content-Length with "
		    "Transfer-Encoding)");
		return;
	}
	if ((v = evhttp_find_header(in, "Host")) == NULL ||
	    !host_allowed(v, hosts, nhosts, NULL)) {
		/* Refused clients do not keep a connection slot. */
		evhttp_add_header(out, "Connection", "close");
		http_reply_error(req, 403, NULL, HTTP_RPC_BAD_REQUEST,
		    "Forbidden: Host not allowed (see --allowed-hosts)");
		return;
	}
	if ((v = evhttp_find_header(in, "Origin")) != NULL) {
		if (!origin_allowed(v)) {
			evhttp_add_header(out, "Connection", "close");
			http_reply_error(req, 403, NULL, HTTP_RPC_BAD_REQUEST,
			    "Forbidden: Origin not allowed (see "
			    "--allowed-origins)");
			return;
		}
		if (http_cors(req, v, cmd))
			return;
	}
	uri = evhttp_request_get_evhttp_uri(req);
	path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
	if (http_not_found(req, path))
		return;
	if ((why = auth_check(req)) != AUTH_OK) {
		auth_refuse(req, why);
		return;
	}
	if (path != NULL && strcmp(path, "/metrics") == 0) {
		if (cmd == EVHTTP_REQ_GET || cmd == EVHTTP_REQ_HEAD) {
			http_metrics_reply(req);
			return;
		}
		evhttp_add_header(out, "Allow", "GET, HEAD");
		http_reply(req, 405, NULL, NULL, 0);
		return;
	}
	if (!version_ok(req)) {
		http_reply_error(req, 400, NULL, HTTP_RPC_BAD_REQUEST,
		    "Bad Request: unsupported MCP-Protocol-Version (supported: "
		    "2025-11-25, 2025-06-18, 2025-03-26)");
		return;
	}
	switch (cmd) {
	case EVHTTP_REQ_POST:
		if (!accepts(req, "application/json") ||
		    !accepts(req, "text/event-stream")) {
			http_reply_error(req, 406, NULL, HTTP_RPC_BAD_REQUEST,
			    "Not Acceptable: Accept must allow both "
			    "application/json and text/event-stream");
			return;
		}
		if (!content_type_json(req)) {
			http_reply_error(req, 415, NULL, HTTP_RPC_BAD_REQUEST,
			    "Unsupported Media Type: Content-Type must be "
			    "application/json");
			return;
		}
		http_post(req);
		return;
	case EVHTTP_REQ_GET:
		if (!accepts(req, "text/event-stream")) {
			http_reply_error(req, 406, NULL, HTTP_RPC_BAD_REQUEST,
			    "Not Acceptable: Accept must allow "
			    "text/event-stream");
			return;
		}
		http_get(req);
		return;
	case EVHTTP_REQ_DELETE:
		http_delete(req);
		return;
	default:
		evhttp_add_header(out, "Allow", "GET, POST, DELETE");
		http_reply_error(
		    req, 405, NULL, HTTP_RPC_BAD_REQUEST, "Method Not Allowed");
		return;
	}
}

/* --- start and stop --- */

/*
 * No token was configured and --no-auth was not asked for: make one
 * (printed once at listen, as Jupyter does), so that no other user or
 * web page on this host reaches the server.
 */
static void
token_generate(void)
{
	token = xmalloc(2 * HTTP_GEN_TOKEN_BYTES + 1);
	random_hex(token, HTTP_GEN_TOKEN_BYTES);
	token_generated = 1;
}

/* The token from --auth-token-file or MCP_SANDBOXD_AUTH_TOKEN. */
static void
token_load(void)
{
	const struct config *c = sup.conf;
	char buf[HTTP_TOKEN_MAX + 2];
	struct stat st;
	ssize_t n;
	size_t len = 0, i;
	int fd;

	if (c->auth_token_file != NULL && c->auth_token != NULL)
		fatalx("give the token in --auth-token-file or in "
		       "MCP_SANDBOXD_AUTH_TOKEN, not both");
	if (c->auth_token_file != NULL) {
		if ((fd = open(c->auth_token_file, O_RDONLY | O_CLOEXEC)) == -1)
			fatal("--auth-token-file %s", c->auth_token_file);
		if (fstat(fd, &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)))
			log_warnx("--auth-token-file %s is readable by others "
			          "(chmod 600 it)",
			    c->auth_token_file);
		while (len < sizeof buf - 1 &&
		       (n = read(fd, buf + len, sizeof buf - 1 - len)) != 0) {
			if (n == -1 && errno == EINTR)
				continue;
			if (n == -1)
				fatal(
				    "--auth-token-file %s", c->auth_token_file);
			len += (size_t)n;
		}
		close(fd);
		while (len > 0 && isspace((unsigned char)buf[len - 1]))
			len--;
		if (len > HTTP_TOKEN_MAX)
			fatalx("--auth-token-file: the token is over %d bytes",
			    HTTP_TOKEN_MAX);
		buf[len] = '\0';
		token = xstrdup(buf);
		explicit_bzero(buf, sizeof buf);
	} else if (c->auth_token != NULL)
		token = xstrdup(c->auth_token);
	if (token != NULL && c->no_auth)
		fatalx("--no-auth and a token (--auth-token-file or "
		       "MCP_SANDBOXD_AUTH_TOKEN) contradict each other; give "
		       "one");
	if (token == NULL && !c->no_auth)
		token_generate();
	if (token == NULL)
		return;
	token_len = strlen(token);
	if (token_len == 0)
		fatalx("the auth token is empty");
	for (i = 0; i < token_len; i++)
		if (token[i] <= ' ' || token[i] >= 127)
			fatalx("the auth token must be visible ASCII (it "
			       "travels in an HTTP header)");
}

/* Is every address the name stands for a loopback one? */
static int
is_loopback(const char *host)
{
	struct addrinfo hints, *res, *ai;
	const struct sockaddr_in6 *s6;
	const struct sockaddr_in *s4;
	int ok = 1;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return 0;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET) {
			s4 = (const struct sockaddr_in *)ai->ai_addr;
			if ((ntohl(s4->sin_addr.s_addr) >> 24) != 127)
				ok = 0;
		} else if (ai->ai_family == AF_INET6) {
			s6 = (const struct sockaddr_in6 *)ai->ai_addr;
			if (!IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
				ok = 0;
		} else
			ok = 0;
	}
	freeaddrinfo(res);
	return ok;
}

/* Listen where --listen says; refuse beyond loopback without a token. */
static void
http_listen(void)
{
	static const char *const def_hosts[] = {
	    "localhost", "127.0.0.1", "[::1]", NULL};
	char *addr, *port, *host, *end, name[300];
	struct evhttp_bound_socket *bs;
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof ss;
	long p;

	addr = xstrdup(sup.conf->listen);
	if ((port = strrchr(addr, ':')) == NULL || port == addr)
		fatalx("--listen: expected ADDR:PORT, got \"%s\"",
		    sup.conf->listen);
	*port++ = '\0';
	errno = 0;
	p = strtol(port, &end, 10);
	if (errno != 0 || *port == '\0' || *end != '\0' || p < 0 || p > 65535)
		fatalx("--listen: bad port in \"%s\"", sup.conf->listen);
	host = addr;
	if (*host == '[') {
		host++;
		if ((end = strchr(host, ']')) == NULL || end[1] != '\0')
			fatalx("--listen: bad address in \"%s\"",
			    sup.conf->listen);
		*end = '\0';
	}
	/* Beyond loopback, a token the operator chose (and gives to
	 * clients by other means than this stderr). */
	if (!is_loopback(host) && (token == NULL || token_generated))
		fatalx("refusing to listen on %s beyond loopback without an "
		       "auth token: set --auth-token-file or "
		       "MCP_SANDBOXD_AUTH_TOKEN (or listen on 127.0.0.1)",
		    sup.conf->listen);

	list_parse(hosts, &nhosts, sup.conf->allowed_hosts, def_hosts);
	/* The listen address itself is a name clients use. */
	if (sup.conf->allowed_hosts == NULL && strcmp(host, "0.0.0.0") != 0 &&
	    strcmp(host, "::") != 0) {
		snprintf(
		    name, sizeof name, strchr(host, ':') ? "[%s]" : "%s", host);
		list_add(hosts, &nhosts, name);
	}

	if ((bs = evhttp_bind_socket_with_handle(httpd, host, (uint16_t)p)) ==
	    NULL)
		fatal("cannot listen on %s", sup.conf->listen);
	listener = evhttp_bound_socket_get_listener(bs);
	accept_rest = listenrest_new(listener, "http");
	memset(&ss, 0, sizeof ss);
	if (getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss,
	        &sslen) == 0)
		p = ntohs(ss.ss_family == AF_INET6
		              ? ((struct sockaddr_in6 *)&ss)->sin6_port
		              : ((struct sockaddr_in *)&ss)->sin_port);
	/* No sandbox's egress reaches it (listenreg.h). */
	if (listenreg_add(spool_listeners_path(), (int)p) == -1)
		fatal("the listeners' directory");
	/*
	 * Origins: the operator's list, or by default only this server's
	 * own (a page it served, were there one): never the other ports of
	 * localhost, where any local program's page may live.
	 */
	if (sup.conf->allowed_origins != NULL)
		list_parse(origins, &norigins, sup.conf->allowed_origins, NULL);
	else {
		snprintf(name, sizeof name, "http://localhost:%ld", p);
		list_add(origins, &norigins, name);
		snprintf(name, sizeof name, "http://127.0.0.1:%ld", p);
		list_add(origins, &norigins, name);
		snprintf(name, sizeof name, "http://[::1]:%ld", p);
		list_add(origins, &norigins, name);
	}
	log_info("Streamable HTTP on http://%s%s%s:%ld/mcp%s",
	    strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", p,
	    token != NULL ? " (bearer token required)"
	                  : " (--no-auth: no token required)");
	if (token_generated) {
		/* Once, on stderr only (never the log file or syslog). */
		fprintf(stderr,
		    "mcp-sandboxd: no --auth-token-file was given, so this "
		    "run made a token.  Connect with\n"
		    "    URL:    http://%s%s%s:%ld/mcp\n"
		    "    Header: Authorization: Bearer %s\n"
		    "(give --auth-token-file FILE for a token of your own, "
		    "or --no-auth to serve loopback without one)\n",
		    strchr(host, ':') ? "[" : "", host,
		    strchr(host, ':') ? "]" : "", p, token);
		fflush(stderr);
	}
	free(addr);
}

/* Start the HTTP transport (exits with a message when it cannot). */
int
http_start(void)
{
	token_load();
	/* Exposed ports ask for the same token (--expose-auth on). */
	sup.http_token = token;
	if ((httpd = evhttp_new(sup.base)) == NULL)
		fatalx("evhttp_new");
	evhttp_set_max_body_size(httpd, sup.conf->max_line);
	evhttp_set_max_headers_size(httpd, HTTP_MAX_HEADERS);
	evhttp_set_timeout(httpd, (int)sup.conf->http_timeout);
	evhttp_set_flags(httpd, EVHTTP_SERVER_LINGERING_CLOSE);
	evhttp_set_allowed_methods(
	    httpd, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
	               EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
	               EVHTTP_REQ_PATCH);
	evhttp_set_default_content_type(httpd, NULL);
	evhttp_set_gencb(httpd, http_cb, NULL);
	/* Every connection through http-conn.c's gate. */
	evhttp_set_bevcb(httpd, http_conn_new, NULL);
	http_listen();
	http_sessions_init();
	return 0;
}

/* At exit: end every stream, free everything. */
void
http_stop(void)
{
	int i;

	if (httpd == NULL)
		return;
	http_sessions_stop();
	listenrest_free(accept_rest);
	accept_rest = NULL;
	evhttp_free(httpd); /* closes every connection */
	http_conn_stop();
	httpd = NULL;
	listener = NULL;
	for (i = 0; i < norigins; i++)
		free(origins[i]);
	for (i = 0; i < nhosts; i++)
		free(hosts[i]);
	norigins = nhosts = 0;
	if (token != NULL) {
		explicit_bzero(token, token_len);
		free(token);
		token = NULL;
	}
	sup.http_token = NULL;
}
