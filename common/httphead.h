/*
 * HTTP/1.x request heads for the egress proxy and the exposed ports:
 * found in a stream, parsed strictly, checked and rewritten for the hop.
 */
#ifndef HTTPHEAD_H
#define HTTPHEAD_H

#include <stddef.h>

/* The most bytes of a head, its blank line included; past it, refuse. */
#define HTTPHEAD_MAX 16384
/* The most header fields of a head. */
#define HTTPHEAD_MAX_FIELDS 100
/* The longest host of a target: a name of 253 bytes and its dot. */
#define HTTPHEAD_HOST_MAX 254

/* What the proxy answers a CONNECT it carries out. */
#define HTTPHEAD_CONNECT_OK "HTTP/1.1 200 Connection established\r\n\r\n"

struct httphead_field {
	const char *name; /* a token; no ':' */
	const char *value; /* without the spaces around it */
};

/*
 * A parsed head.  Every string points into buf, a copy of the head with
 * NULs at the ends of its parts, so a head needs no freeing and lives as
 * long as its struct (about 18 KiB: not for a small stack).
 */
struct httphead {
	char buf[HTTPHEAD_MAX + 1];
	const char *method;
	const char *target;
	int minor; /* HTTP/1.0 or HTTP/1.1 */
	struct httphead_field fields[HTTPHEAD_MAX_FIELDS];
	size_t nfields;
	long long content_length; /* -1: none */
	int chunked; /* Transfer-Encoding: chunked */
};

/* Where a proxy request goes (httphead_proxy_target()). */
struct httphead_target {
	int connect; /* CONNECT host:port, else an absolute http:// URI */
	char host[HTTPHEAD_HOST_MAX + 1]; /* lowercase, without brackets */
	int ipv6; /* host is an IPv6 address (it had brackets) */
	unsigned int port; /* 1-65535; 80 when an http:// URI has none */
	char path[HTTPHEAD_MAX + 1]; /* origin-form ("/" when empty) */
};

/*
 * The length of the head at the start of buf, its blank line included
 * (lines end in CRLF or a bare LF), or 0 while it is not complete.  The
 * caller refuses a stream that reaches HTTPHEAD_MAX bytes without one.
 */
size_t httphead_end(const char *, size_t);
/*
 * A head of len bytes (httphead_end()'s) into *h: 0, or -1 with why in
 * err.  Only HTTP/1.0 and 1.1; at most HTTPHEAD_MAX_FIELDS fields whose
 * names are tokens; no NUL, bare CR or folded line anywhere; two
 * Content-Length, two Transfer-Encoding, both of them, a Transfer-Encoding
 * other than "chunked" or in HTTP/1.0, or two Host are refused.
 */
int httphead_parse(const char *, size_t, struct httphead *, char *, size_t);
/*
 * The value of h's field named name (in any case), NULL when there is
 * none; the first of them when there are several.
 */
const char *httphead_get(const struct httphead *, const char *);
/*
 * Where a proxy's request goes: CONNECT's "host:port" (the port
 * required) or a GET's "http://host[:port]/path?query"; 0 and *t filled,
 * or -1 with why in err.  An https:// URI (use CONNECT), an origin-form
 * target, userinfo (user@host) and a fragment are refused.
 */
int httphead_proxy_target(
    const struct httphead *, struct httphead_target *, char *, size_t);
/*
 * A new head (malloc, NUL-terminated, its length in *lenp) to send on:
 * the request line with t's origin-form path when t is not NULL (and
 * Host set to t's host and port), else with h's own target; every field
 * kept but the hop-by-hop ones (Connection, Keep-Alive, Proxy-Connection,
 * Proxy-Authorization, TE, Trailer, Upgrade, and those Connection names,
 * never Host, Content-Length or Transfer-Encoding) and those named in
 * drop (a NULL-terminated list, or NULL); then "Connection: close".
 * NULL for a CONNECT, which is not sent on.
 */
char *httphead_rewrite(const struct httphead *, const struct httphead_target *,
    const char *const *, size_t *);
/*
 * h written anew (malloc, NUL-terminated, its length in *lenp), every
 * field kept but those named in drop (a NULL-terminated list), for a hop
 * that is not a proxy's: an Upgrade or a keep-alive goes through.  NULL
 * when h was not parsed.
 */
char *httphead_strip(const struct httphead *, const char *const *, size_t *);
/*
 * Whether h carries exactly one Authorization field, "Bearer TOKEN" (the
 * scheme in any case), with token as its TOKEN: 1 or 0.  Compared in a
 * time that depends on the expected token's length only; an empty
 * expected token matches nothing.
 */
int httphead_bearer_ok(const struct httphead *, const char *);
/* h's every byte zeroed (a head may hold a secret: its token). */
void httphead_wipe(struct httphead *);
/*
 * A whole response (malloc, its length in *lenp) with status (400, 401,
 * 403, 404, 405, 408, 413, 431, 500, 502, 503 or 504) and text, and "\n", as a
 * text/plain body, "Connection: close", "X-Mcp-Sandboxd-Egress: refused"
 * on a 403 and "WWW-Authenticate: Bearer" on a 401.  NULL for another
 * status.
 */
char *httphead_response(int, const char *, size_t *);

#endif
