/*
 * HTTP/1.x request heads, read strictly: the bytes come from programs in
 * sandboxes (through the egress proxy) and from anyone who reaches an
 * exposed port, and what is let through goes to a server that may read
 * the same bytes another way.  So whatever two parsers could disagree on
 * (bare CR, folded lines, two lengths, a length and chunks) is refused
 * rather than repaired, and the head sent on is written anew.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "egress.h"
#include "errbuf.h"
#include "httphead.h"
#include "xmalloc.h"

size_t
httphead_end(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len, *nl;

	/* An empty first line ends a head too; the parser refuses it. */
	if (len >= 1 && buf[0] == '\n')
		return 1;
	if (len >= 2 && buf[0] == '\r' && buf[1] == '\n')
		return 2;
	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		if (nl + 1 < end && nl[1] == '\n')
			return (size_t)(nl + 2 - buf);
		if (nl + 2 < end && nl[1] == '\r' && nl[2] == '\n')
			return (size_t)(nl + 3 - buf);
		p = nl + 1;
	}
	return 0;
}

/* A tchar of RFC 9110: what a method and a field name are made of. */
static int
is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int
is_token(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s != '\0'; s++)
		if (!is_tchar((unsigned char)*s))
			return 0;
	return 1;
}

/* The request line, NUL-terminated in place: NULL, or what is wrong. */
static const char *
request_line(char *line, struct httphead *h)
{
	char *sp1, *sp2, *p;

	if (*line == '\0')
		return "empty request line";
	if ((sp1 = strchr(line, ' ')) == NULL ||
	    (sp2 = strchr(sp1 + 1, ' ')) == NULL)
		return "not a request line (METHOD TARGET HTTP/1.x)";
	*sp1 = *sp2 = '\0';
	h->method = line;
	h->target = sp1 + 1;
	if (!is_token(h->method))
		return "the method is not a token";
	if (*h->target == '\0')
		return "empty request target";
	for (p = sp1 + 1; *p != '\0'; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			return "a space, control or non-ASCII byte in the "
			       "request target";
	if (strcmp(sp2 + 1, "HTTP/1.1") == 0)
		h->minor = 1;
	else if (strcmp(sp2 + 1, "HTTP/1.0") == 0)
		h->minor = 0;
	else
		return "not HTTP/1.0 or HTTP/1.1";
	return NULL;
}

/* One field line, NUL-terminated in place: NULL, or what is wrong. */
static const char *
field_line(char *line, struct httphead *h)
{
	char *colon, *v, *e;

	if (*line == ' ' || *line == '\t')
		return "a folded header line (obs-fold)";
	if ((colon = strchr(line, ':')) == NULL)
		return "a header line without ':'";
	*colon = '\0';
	if (!is_token(line))
		return "a header name that is not a token";
	for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
		;
	e = v + strlen(v);
	while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*e = '\0';
	for (e = v; *e != '\0'; e++)
		if (((unsigned char)*e < 0x20 && *e != '\t') ||
		    (unsigned char)*e == 0x7f)
			return "a control byte in a header value";
	if (h->nfields == HTTPHEAD_MAX_FIELDS)
		return "more than 100 header fields";
	h->fields[h->nfields].name = line;
	h->fields[h->nfields].value = v;
	h->nfields++;
	return NULL;
}

/* The framing fields: NULL, or why the body's length is in doubt. */
static const char *
framing(struct httphead *h)
{
	int ncl = 0, nte = 0, nhost = 0;
	const char *v;
	size_t i;

	for (i = 0; i < h->nfields; i++) {
		v = h->fields[i].value;
		if (strcasecmp(h->fields[i].name, "Host") == 0)
			nhost++;
		else if (strcasecmp(h->fields[i].name, "Content-Length") == 0) {
			if (++ncl > 1)
				return "two Content-Length fields";
			if (*v == '\0' || strlen(v) > 18 ||
			    strspn(v, "0123456789") != strlen(v))
				return "a Content-Length that is not a number";
			h->content_length = strtoll(v, NULL, 10);
		} else if (strcasecmp(h->fields[i].name, "Transfer-Encoding") ==
		           0) {
			if (++nte > 1)
				return "two Transfer-Encoding fields";
			if (strcasecmp(v, "chunked") != 0)
				return "a Transfer-Encoding other than chunked";
			h->chunked = 1;
		}
	}
	if (nhost > 1)
		return "two Host fields";
	if (ncl > 0 && nte > 0)
		return "both Content-Length and Transfer-Encoding";
	if (nte > 0 && h->minor == 0)
		return "Transfer-Encoding in HTTP/1.0";
	return NULL;
}

int
httphead_parse(
    const char *head, size_t len, struct httphead *h, char *err, size_t errlen)
{
	char *p, *end, *nl, *e;
	const char *why;
	int first = 1;

	h->method = h->target = NULL;
	h->minor = 0;
	h->nfields = 0;
	h->content_length = -1;
	h->chunked = 0;
	h->buf[0] = '\0';
	if (len > HTTPHEAD_MAX) {
		errbuf_set(
		    err, errlen, "a request head over %d bytes", HTTPHEAD_MAX);
		return -1;
	}
	if (memchr(head, '\0', len) != NULL) {
		errbuf_set(err, errlen, "a NUL byte in the request head");
		return -1;
	}
	memcpy(h->buf, head, len);
	h->buf[len] = '\0';
	p = h->buf;
	end = h->buf + len;
	for (;;) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL) {
			why = "a request head without its blank line";
			goto bad;
		}
		e = nl > p && nl[-1] == '\r' ? nl - 1 : nl;
		*e = '\0';
		if (memchr(p, '\r', (size_t)(e - p)) != NULL) {
			why = "a bare CR in the request head";
			goto bad;
		}
		if (first) {
			if ((why = request_line(p, h)) != NULL)
				goto bad;
			first = 0;
		} else if (*p == '\0')
			break;
		else if ((why = field_line(p, h)) != NULL)
			goto bad;
		p = nl + 1;
	}
	if (nl + 1 != end) {
		why = "bytes past the request head's blank line";
		goto bad;
	}
	if ((why = framing(h)) != NULL)
		goto bad;
	return 0;

bad:
	errbuf_set(err, errlen, "%s", why);
	return -1;
}

const char *
httphead_get(const struct httphead *h, const char *name)
{
	size_t i;

	for (i = 0; i < h->nfields; i++)
		if (strcasecmp(h->fields[i].name, name) == 0)
			return h->fields[i].value;
	return NULL;
}

/*
 * An authority of len bytes ("host", "host:port", "[v6]:port") into t;
 * needport: the port is required.  NULL, or what is wrong.
 */
static const char *
authority(const char *s, size_t len, int needport, struct httphead_target *t)
{
	struct egress_pattern p;
	const char *colon = NULL, *close;
	size_t hostlen;

	if (len == 0)
		return "empty host";
	if (memchr(s, '@', len) != NULL)
		return "userinfo (user@host) in the target";
	if (s[0] == '[') {
		if ((close = memchr(s, ']', len)) == NULL)
			return "'[' without its ']'";
		if (close + 1 < s + len) {
			if (close[1] != ':')
				return "not a ':' after ']'";
			colon = close + 1;
		}
	} else {
		colon = memchr(s, ':', len);
		if (colon != NULL && memchr(colon + 1, ':',
		                         len - (size_t)(colon + 1 - s)) != NULL)
			return "an IPv6 address needs brackets";
	}
	hostlen = colon != NULL ? (size_t)(colon - s) : len;
	if (colon != NULL) {
		if (egress_port_parse(colon + 1, len - hostlen - 1, &t->port) ==
		    -1)
			return "the port is not a number from 1 to 65535";
	} else if (needport)
		return "no port (CONNECT needs host:port)";
	else
		t->port = 80;
	if (hostlen == 0)
		return "empty host";
	if (s[0] != '[' && memchr(s, ':', hostlen) != NULL)
		return "an IPv6 address needs brackets";
	if (egress_host_parse(s, hostlen, &p, NULL, 0) == -1)
		return "not a host name or address";
	if (s[0] == '[' && p.kind != EGRESS_IPV6)
		return "not an IPv6 address in brackets";
	t->ipv6 = p.kind == EGRESS_IPV6;
	snprintf(t->host, sizeof t->host, "%s", p.host);
	return NULL;
}

int
httphead_proxy_target(const struct httphead *h, struct httphead_target *t,
    char *err, size_t errlen)
{
	const char *s = h->target, *a, *rest, *why;
	size_t alen;

	memset(t, 0, sizeof *t);
	if (s == NULL) {
		errbuf_set(err, errlen, "no request");
		return -1;
	}
	if (strcmp(h->method, "CONNECT") == 0) {
		t->connect = 1;
		if ((why = authority(s, strlen(s), 1, t)) != NULL)
			goto bad;
		return 0;
	}
	if (strchr(s, '#') != NULL) {
		why = "a fragment (#) in the target";
		goto bad;
	}
	if (strncasecmp(s, "https://", 8) == 0) {
		why = "an https:// URI through the proxy (clients use CONNECT "
		      "for https)";
		goto bad;
	}
	if (strncasecmp(s, "http://", 7) != 0) {
		why = *s == '/' ? "an origin-form target: not a proxy request"
		                : "not an http:// URI";
		goto bad;
	}
	a = s + 7;
	alen = strcspn(a, "/?");
	rest = a + alen;
	if ((why = authority(a, alen, 0, t)) != NULL)
		goto bad;
	snprintf(
	    t->path, sizeof t->path, "%s%s", *rest == '/' ? "" : "/", rest);
	return 0;

bad:
	errbuf_set(err, errlen, "%s", why);
	return -1;
}

/* A growing string for the head sent on. */
struct out {
	char *buf;
	size_t len, size;
};

static void
out_add(struct out *o, const char *s)
{
	size_t n = strlen(s);

	if (o->len + n + 1 > o->size) {
		while (o->len + n + 1 > o->size)
			o->size *= 2;
		o->buf = xrealloc(o->buf, o->size);
	}
	memcpy(o->buf + o->len, s, n + 1);
	o->len += n;
}

/* Whether the comma list v names name (in any case). */
static int
list_names(const char *v, const char *name)
{
	size_t n = strlen(name), l;

	while (*v != '\0') {
		v += strspn(v, " \t,");
		l = strcspn(v, " \t,");
		if (l == n && strncasecmp(v, name, n) == 0)
			return 1;
		v += l;
	}
	return 0;
}

/* Whether the field named name is not sent on (hop: nor hop-by-hop). */
static int
dropped(const struct httphead *h, const char *name, const char *const *drop,
    int hop)
{
	static const char *const hops[] = {"Connection", "Keep-Alive",
	    "Proxy-Connection", "Proxy-Authorization", "TE", "Trailer",
	    "Upgrade", NULL};
	size_t i;

	for (i = 0; drop != NULL && drop[i] != NULL; i++)
		if (strcasecmp(name, drop[i]) == 0)
			return 1;
	if (!hop)
		return 0;
	for (i = 0; hops[i] != NULL; i++)
		if (strcasecmp(name, hops[i]) == 0)
			return 1;
	/* What the body's framing and the target hang on stays. */
	if (strcasecmp(name, "Host") == 0 ||
	    strcasecmp(name, "Content-Length") == 0 ||
	    strcasecmp(name, "Transfer-Encoding") == 0)
		return 0;
	for (i = 0; i < h->nfields; i++)
		if (strcasecmp(h->fields[i].name, "Connection") == 0 &&
		    list_names(h->fields[i].value, name))
			return 1;
	return 0;
}

/*
 * The head written anew: h's request line (t's path and Host if t is
 * not NULL) and its fields but drop's; with hop, none of the hop-by-hop
 * ones either, and "Connection: close".
 */
static char *
head_write(const struct httphead *h, const struct httphead_target *t,
    const char *const *drop, int hop, size_t *lenp)
{
	struct out o;
	char port[16] = "";
	size_t i;

	o.size = 1024;
	o.len = 0;
	o.buf = xmalloc(o.size);
	o.buf[0] = '\0';
	out_add(&o, h->method);
	out_add(&o, " ");
	out_add(&o, t != NULL ? t->path : h->target);
	out_add(&o, h->minor == 1 ? " HTTP/1.1\r\n" : " HTTP/1.0\r\n");
	if (t != NULL) {
		if (t->port != 80)
			snprintf(port, sizeof port, ":%u", t->port);
		out_add(&o, "Host: ");
		out_add(&o, t->ipv6 ? "[" : "");
		out_add(&o, t->host);
		out_add(&o, t->ipv6 ? "]" : "");
		out_add(&o, port);
		out_add(&o, "\r\n");
	}
	for (i = 0; i < h->nfields; i++) {
		if (dropped(h, h->fields[i].name, drop, hop) ||
		    (t != NULL && strcasecmp(h->fields[i].name, "Host") == 0))
			continue;
		out_add(&o, h->fields[i].name);
		out_add(&o, ": ");
		out_add(&o, h->fields[i].value);
		out_add(&o, "\r\n");
	}
	out_add(&o, hop ? "Connection: close\r\n\r\n" : "\r\n");
	if (lenp != NULL)
		*lenp = o.len;
	return o.buf;
}

char *
httphead_rewrite(const struct httphead *h, const struct httphead_target *t,
    const char *const *drop, size_t *lenp)
{
	if (h->method == NULL || strcmp(h->method, "CONNECT") == 0 ||
	    (t != NULL && t->connect))
		return NULL;
	return head_write(h, t, drop, 1, lenp);
}

char *
httphead_strip(const struct httphead *h, const char *const *drop, size_t *lenp)
{
	if (h->method == NULL)
		return NULL;
	return head_write(h, NULL, drop, 0, lenp);
}

int
httphead_bearer_ok(const struct httphead *h, const char *token)
{
	const char *v = NULL;
	size_t i, n, m;
	unsigned int d;
	int count = 0;

	for (i = 0; i < h->nfields; i++)
		if (strcasecmp(h->fields[i].name, "Authorization") == 0) {
			v = h->fields[i].value;
			count++;
		}
	if (count != 1 || token == NULL || strncasecmp(v, "Bearer ", 7) != 0)
		return 0;
	v += 7;
	while (*v == ' ')
		v++;
	n = strlen(token);
	m = strlen(v);
	d = n != m || n == 0;
	for (i = 0; i < n; i++)
		d |=
		    (unsigned char)token[i] ^ (unsigned char)(i < m ? v[i] : 0);
	return d == 0;
}

void
httphead_wipe(struct httphead *h)
{
	explicit_bzero(h, sizeof *h);
}

char *
httphead_response(int status, const char *text, size_t *lenp)
{
	static const struct {
		int status;
		const char *phrase;
	} phrases[] = {
	    {400, "Bad Request"},
	    {401, "Unauthorized"},
	    {403, "Forbidden"},
	    {404, "Not Found"},
	    {405, "Method Not Allowed"},
	    {408, "Request Timeout"},
	    {413, "Content Too Large"},
	    {431, "Request Header Fields Too Large"},
	    {500, "Internal Server Error"},
	    {502, "Bad Gateway"},
	    {503, "Service Unavailable"},
	    {504, "Gateway Timeout"},
	};
	const char *phrase = NULL;
	char *r;
	size_t i;
	int n;

	for (i = 0; i < sizeof phrases / sizeof phrases[0]; i++)
		if (phrases[i].status == status)
			phrase = phrases[i].phrase;
	if (phrase == NULL)
		return NULL;
	if (text == NULL)
		text = phrase;
	n = xasprintf(&r,
	    "HTTP/1.1 %d %s\r\n"
	    "Content-Type: text/plain; charset=utf-8\r\n"
	    "Content-Length: %zu\r\n"
	    "Connection: close\r\n"
	    "%s%s"
	    "\r\n"
	    "%s\n",
	    status, phrase, strlen(text) + 1,
	    status == 403 ? "X-Mcp-Sandboxd-Egress: refused\r\n" : "",
	    status == 401 ? "WWW-Authenticate: Bearer\r\n" : "", text);
	if (lenp != NULL)
		*lenp = (size_t)n;
	return r;
}
