/*
 * The egress allowlist's patterns and the addresses the proxy refuses.
 * Patterns come from the operator's flags and from clients, hosts from
 * what a sandbox's program asks its proxy for, addresses from the host's
 * resolver: none is trusted, and what is kept is normalized (lowercase,
 * no trailing dot, canonical address text) so that comparing is exact.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "egress.h"
#include "errbuf.h"

/* What an error quotes of its input, at most. */
#define QUOTE_MAX 80

/* The input as printable ASCII for an error message, cut when long. */
static void
quote(char *out, size_t outlen, const char *s, size_t len)
{
	size_t i, o = 0;
	unsigned char c;

	for (i = 0; i < len && i < QUOTE_MAX && o + 5 < outlen; i++) {
		c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			out[o++] = (char)c;
		else
			o +=
			    (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
	}
	if (i < len && o + 4 < outlen) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

/* A port: decimal digits, no leading zero, 1 to 65535; 0 or -1. */
int
egress_port_parse(const char *s, size_t len, unsigned int *port)
{
	unsigned int v = 0;
	size_t i;

	if (len == 0 || len > 5 || s[0] == '0')
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned int)(s[i] - '0');
	}
	if (v > 65535)
		return -1;
	*port = v;
	return 0;
}

static int
is_ldh(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-';
}

/*
 * A name of len bytes (its trailing dot already gone), lowercased into
 * out (EGRESS_NAME_MAX + 1 bytes): NULL, or what is wrong with it.
 * room is the most bytes it may have.
 */
static const char *
name_parse(const char *s, size_t len, size_t room, char *out)
{
	size_t i, label = 0, last = 0;
	struct in_addr a;
	int digits = 1;

	if (len == 0)
		return "empty name";
	if (len > room)
		return "name longer than 253 bytes";
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '.') {
			if (label == 0)
				return "empty label";
			if (s[i - 1] == '-')
				return "label ending in '-'";
			out[i] = '.';
			label = 0;
			last = i + 1;
			digits = 1;
			continue;
		}
		if (c == '*')
			return "'*' is only allowed as the whole first label";
		if (!is_ldh(c))
			return "not a letter, digit, '-' or '.' in a name";
		if (c == '-' && label == 0)
			return "label starting with '-'";
		if (c < '0' || c > '9')
			digits = 0;
		if (++label > 63)
			return "label longer than 63 bytes";
		out[i] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
	}
	if (label == 0)
		return "empty label";
	if (s[len - 1] == '-')
		return "label ending in '-'";
	out[len] = '\0';
	/*
	 * "127.1", "0x7f000001": the resolver would take them for
	 * addresses, so a name may not look like a number at its end.
	 */
	if (digits ||
	    (len - last > 2 && s[last] == '0' &&
	        (s[last + 1] == 'x' || s[last + 1] == 'X')) ||
	    inet_aton(out, &a) != 0)
		return "a name ending in a number that is not an IPv4 address";
	return NULL;
}

/* An IPv6 address of len bytes (no brackets): NULL, or what is wrong. */
static const char *
ipv6_parse(const char *s, size_t len, struct egress_pattern *p)
{
	char tmp[INET6_ADDRSTRLEN + 8];

	if (len == 0)
		return "empty IPv6 address";
	if (len >= sizeof tmp)
		return "not an IPv6 address";
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	if (inet_pton(AF_INET6, tmp, p->addr) != 1)
		return "not an IPv6 address";
	p->kind = EGRESS_IPV6;
	inet_ntop(AF_INET6, p->addr, p->host, sizeof p->host);
	return NULL;
}

/*
 * A host part (no port): a name, an IPv4 address, an IPv6 one (in
 * brackets, or bare when bare6), or when wild "*" and "*.suffix".
 */
static const char *
host_part(
    const char *s, size_t len, int wild, int bare6, struct egress_pattern *p)
{
	char tmp[INET_ADDRSTRLEN + 1];

	if (len == 0)
		return "empty host";
	if (s[0] == '[') {
		if (len < 2 || s[len - 1] != ']')
			return "'[' without its ']'";
		return ipv6_parse(s + 1, len - 2, p);
	}
	if (memchr(s, ':', len) != NULL) {
		if (bare6)
			return ipv6_parse(s, len, p);
		return "an IPv6 address needs brackets ([::1])";
	}
	if (wild && len == 1 && s[0] == '*') {
		p->kind = EGRESS_ANY;
		strcpy(p->host, "*");
		return NULL;
	}
	if (wild && len >= 2 && s[0] == '*' && s[1] == '.') {
		s += 2;
		len -= 2;
		if (len > 0 && s[len - 1] == '.')
			len--;
		if (len == 0)
			return "empty name after *.";
		p->kind = EGRESS_SUFFIX;
		return name_parse(s, len, EGRESS_NAME_MAX - 2, p->host);
	}
	if (len < sizeof tmp) {
		memcpy(tmp, s, len);
		tmp[len] = '\0';
		if (inet_pton(AF_INET, tmp, p->addr) == 1) {
			p->kind = EGRESS_IPV4;
			inet_ntop(AF_INET, p->addr, p->host, sizeof p->host);
			return NULL;
		}
	}
	if (s[len - 1] == '.')
		len--;
	p->kind = EGRESS_NAME;
	return name_parse(s, len, EGRESS_NAME_MAX, p->host);
}

static int
parse(const char *s, size_t len, int wild, struct egress_pattern *p, char *err,
    size_t errlen)
{
	char q[QUOTE_MAX * 4 + 8];
	const char *why, *colon, *close;
	size_t hostlen = len;

	memset(p, 0, sizeof *p);
	quote(q, sizeof q, s, len);
	if (len == 0) {
		errbuf_set(err, errlen, "\"\": empty host");
		return -1;
	}
	if (memchr(s, '\0', len) != NULL) {
		errbuf_set(err, errlen, "\"%s\": a NUL byte", q);
		return -1;
	}
	if (wild) {
		/* The port: after the "]" of an address, else at a ":". */
		colon = NULL;
		if (s[0] == '[') {
			close = memchr(s, ']', len);
			if (close != NULL && close + 1 < s + len) {
				if (close[1] != ':') {
					errbuf_set(err, errlen,
					    "\"%s\": not a ':' after ']'", q);
					return -1;
				}
				colon = close + 1;
			}
		} else {
			colon = memchr(s, ':', len);
			if (colon != NULL &&
			    memchr(colon + 1, ':',
			        len - (size_t)(colon + 1 - s)) != NULL) {
				errbuf_set(err, errlen,
				    "\"%s\": an IPv6 address needs brackets "
				    "([::1])",
				    q);
				return -1;
			}
		}
		if (colon != NULL) {
			hostlen = (size_t)(colon - s);
			if (egress_port_parse(
			        colon + 1, len - hostlen - 1, &p->port) == -1) {
				errbuf_set(err, errlen,
				    "\"%s\": the port is not a number from 1 "
				    "to 65535",
				    q);
				return -1;
			}
		}
	}
	if ((why = host_part(s, hostlen, wild, !wild, p)) != NULL) {
		errbuf_set(err, errlen, "\"%s\": %s", q, why);
		return -1;
	}
	return 0;
}

int
egress_pattern_parse(const char *s, size_t len, struct egress_pattern *p,
    char *err, size_t errlen)
{
	return parse(s, len, 1, p, err, errlen);
}

int
egress_host_parse(const char *s, size_t len, struct egress_pattern *p,
    char *err, size_t errlen)
{
	return parse(s, len, 0, p, err, errlen);
}

/* Whether name is strictly under suffix ("a.b.example.org", "example.org"). */
static int
name_under(const char *name, const char *suffix)
{
	size_t nl = strlen(name), sl = strlen(suffix);

	return nl > sl + 1 && name[nl - sl - 1] == '.' &&
	       memcmp(name + nl - sl, suffix, sl) == 0;
}

static int
same_addr(const struct egress_pattern *a, const struct egress_pattern *b)
{
	return a->kind == b->kind &&
	       memcmp(a->addr, b->addr, a->kind == EGRESS_IPV4 ? 4 : 16) == 0;
}

/* Whether the pattern allows the host (a name or an address). */
static int
host_allowed(const struct egress_pattern *p, const struct egress_pattern *h)
{
	switch (p->kind) {
	case EGRESS_ANY:
		return 1;
	case EGRESS_NAME:
		return h->kind == EGRESS_NAME && strcmp(p->host, h->host) == 0;
	case EGRESS_SUFFIX:
		return h->kind == EGRESS_NAME && name_under(h->host, p->host);
	case EGRESS_IPV4:
	case EGRESS_IPV6:
		return same_addr(p, h);
	}
	return 0;
}

int
egress_match(const struct egress_pattern *list, size_t n, const char *host,
    unsigned int port)
{
	struct egress_pattern h;
	size_t i;

	if (port < 1 || port > 65535 ||
	    egress_host_parse(host, strlen(host), &h, NULL, 0) == -1)
		return -1;
	for (i = 0; i < n; i++)
		if ((list[i].port == 0 || list[i].port == port) &&
		    host_allowed(&list[i], &h))
			return (int)i;
	return -1;
}

int
egress_covers(const struct egress_pattern *op, const struct egress_pattern *cl)
{
	if (op->port != 0 && op->port != cl->port)
		return 0;
	switch (op->kind) {
	case EGRESS_ANY:
		return 1;
	case EGRESS_NAME:
		return cl->kind == EGRESS_NAME &&
		       strcmp(op->host, cl->host) == 0;
	case EGRESS_SUFFIX:
		if (cl->kind == EGRESS_NAME)
			return name_under(cl->host, op->host);
		if (cl->kind == EGRESS_SUFFIX)
			return strcmp(cl->host, op->host) == 0 ||
			       name_under(cl->host, op->host);
		return 0;
	case EGRESS_IPV4:
	case EGRESS_IPV6:
		return same_addr(op, cl);
	}
	return 0;
}

void
egress_pattern_format(const struct egress_pattern *p, char *buf, size_t len)
{
	char port[16] = "";

	if (p->port != 0)
		snprintf(port, sizeof port, ":%u", p->port);
	switch (p->kind) {
	case EGRESS_SUFFIX:
		snprintf(buf, len, "*.%s%s", p->host, port);
		break;
	case EGRESS_IPV6:
		snprintf(buf, len, "[%s]%s", p->host, port);
		break;
	default:
		snprintf(buf, len, "%s%s", p->host, port);
		break;
	}
}

int
egress_addr_parse(
    const char *s, struct egress_addr *a, char *err, size_t errlen)
{
	char tmp[INET6_ADDRSTRLEN + 8], q[QUOTE_MAX * 4 + 8];
	size_t len = strlen(s);

	memset(a, 0, sizeof *a);
	if (len >= 2 && s[0] == '[' && s[len - 1] == ']' &&
	    len - 2 < sizeof tmp) {
		memcpy(tmp, s + 1, len - 2);
		tmp[len - 2] = '\0';
		if (inet_pton(AF_INET6, tmp, a->addr) == 1) {
			a->family = AF_INET6;
			return 0;
		}
	} else if (inet_pton(AF_INET, s, a->addr) == 1) {
		a->family = AF_INET;
		return 0;
	} else if (inet_pton(AF_INET6, s, a->addr) == 1) {
		a->family = AF_INET6;
		return 0;
	}
	quote(q, sizeof q, s, len);
	errbuf_set(err, errlen, "\"%s\": not an IPv4 or IPv6 address", q);
	return -1;
}

/* sa's family and address bytes: 0, or -1 for another family. */
static int
sa_bytes(const struct sockaddr *sa, int *family, const unsigned char **b)
{
	if (sa->sa_family == AF_INET) {
		*family = AF_INET;
		*b = (const unsigned char *)&(
		    (const struct sockaddr_in *)(const void *)sa)
		         ->sin_addr;
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		*family = AF_INET6;
		*b = ((const struct sockaddr_in6 *)(const void *)sa)
		         ->sin6_addr.s6_addr;
		return 0;
	}
	return -1;
}

int
egress_addr_match(
    const struct sockaddr *sa, const struct egress_addr *list, size_t n)
{
	const unsigned char *b;
	int family;
	size_t i;

	if (sa_bytes(sa, &family, &b) == -1)
		return -1;
	for (i = 0; i < n; i++)
		if (list[i].family == family &&
		    memcmp(list[i].addr, b, family == AF_INET ? 4 : 16) == 0)
			return (int)i;
	return -1;
}

int
egress_addr_same(const struct sockaddr *a, const struct sockaddr *b)
{
	static const unsigned char mapped[12] = {
	    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	const unsigned char *x, *y;
	int fx, fy;

	if (sa_bytes(a, &fx, &x) == -1 || sa_bytes(b, &fy, &y) == -1)
		return 0;
	/* An IPv4 address and the IPv6 one that maps it are one. */
	if (fx == AF_INET6 && memcmp(x, mapped, 12) == 0) {
		fx = AF_INET;
		x += 12;
	}
	if (fy == AF_INET6 && memcmp(y, mapped, 12) == 0) {
		fy = AF_INET;
		y += 12;
	}
	return fx == fy && memcmp(x, y, fx == AF_INET ? 4 : 16) == 0;
}

static const unsigned char zero12[12];

int
egress_addr_loopback(const struct sockaddr *sa)
{
	static const unsigned char mapped[12] = {
	    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	const unsigned char *b;
	int family;

	if (sa_bytes(sa, &family, &b) == -1)
		return 0;
	if (family == AF_INET6 && memcmp(b, mapped, 12) == 0) {
		family = AF_INET;
		b += 12;
	}
	if (family == AF_INET)
		return b[0] == 127 || (b[0] | b[1] | b[2] | b[3]) == 0;
	return memcmp(b, zero12, 12) == 0 && b[12] == 0 && b[13] == 0 &&
	       b[14] == 0 && b[15] <= 1;
}

/* What an IPv4 address is when the proxy may not reach it, or NULL. */
static const char *
v4_what(const unsigned char *b)
{
	static const struct {
		uint32_t net;
		int bits;
		const char *what;
	} refused[] = {
	    {0xffffffff, 32, "the broadcast address"},
	    {0x00000000, 8, "a \"this network\" address"},
	    {0x0a000000, 8, "a private address"},
	    {0x64400000, 10, "a shared (carrier-grade NAT) address"},
	    {0x7f000000, 8, "a loopback address"},
	    {0xa9fe0000, 16, "a link-local address"},
	    {0xac100000, 12, "a private address"},
	    {0xc0000000, 24, "an IETF protocol assignment address"},
	    {0xc0000200, 24, "a documentation address"},
	    {0xc6336400, 24, "a documentation address"},
	    {0xcb007100, 24, "a documentation address"},
	    {0xc0a80000, 16, "a private address"},
	    {0xc6120000, 15, "a benchmarking address"},
	    {0xe0000000, 4, "a multicast address"},
	    {0xf0000000, 4, "a reserved address"},
	};
	uint32_t a, mask;
	size_t i;

	a = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 |
	    b[3];
	for (i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		mask = refused[i].bits == 32
		           ? 0xffffffffU
		           : ~(0xffffffffU >> refused[i].bits);
		if ((a & mask) == refused[i].net)
			return refused[i].what;
	}
	return NULL;
}

/* Where an IPv6 address embeds an IPv4 one, or NULL. */
static const unsigned char *
v6_embedded(const unsigned char *b)
{
	static const unsigned char mapped[12] = {
	    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b};

	if (memcmp(b, mapped, 12) == 0 || memcmp(b, zero12, 12) == 0 ||
	    memcmp(b, nat64, 12) == 0)
		return b + 12;
	if (b[0] == 0x20 && b[1] == 0x02) /* 6to4, 2002::/16 */
		return b + 2;
	return NULL;
}

const char *
egress_addr_refused(const struct sockaddr *sa, const struct egress_addr *allow,
    size_t nallow, char *buf, size_t len)
{
	char text[INET6_ADDRSTRLEN], v4[INET_ADDRSTRLEN];
	const unsigned char *b, *e;
	const char *what;
	int family;

	if (sa_bytes(sa, &family, &b) == -1) {
		snprintf(buf, len,
		    "an address of family %d is not an Internet "
		    "address",
		    sa->sa_family);
		return buf;
	}
	if (egress_addr_match(sa, allow, nallow) >= 0)
		return NULL;
	inet_ntop(family, b, text, sizeof text);
	if (family == AF_INET) {
		if ((what = v4_what(b)) == NULL)
			return NULL;
		snprintf(buf, len, "%s is %s", text, what);
		return buf;
	}
	what = NULL;
	if (memcmp(b, zero12, 12) == 0 && b[12] == 0 && b[13] == 0 &&
	    b[14] == 0 && b[15] <= 1)
		what = b[15] == 0 ? "the unspecified address"
		                  : "a loopback address";
	else if ((e = v6_embedded(b)) != NULL) {
		if ((what = v4_what(e)) == NULL)
			return NULL;
		inet_ntop(AF_INET, e, v4, sizeof v4);
		snprintf(buf, len, "%s embeds %s, %s", text, v4, what);
		return buf;
	} else if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
		what = "a link-local address";
	else if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)
		what = "a site-local address";
	else if ((b[0] & 0xfe) == 0xfc)
		what = "a unique local (private) address";
	else if (b[0] == 0xff)
		what = "a multicast address";
	else if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8)
		what = "a documentation address";
	if (what == NULL)
		return NULL;
	snprintf(buf, len, "%s is %s", text, what);
	return buf;
}
