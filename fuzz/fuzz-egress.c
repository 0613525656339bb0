/*
 * Fuzz the egress allowlist (common/egress.c).
 *
 * Input: two bytes of port (big-endian), then up to three parts split at
 * '\n': an operator's pattern, a client's pattern and a host.  What parses
 * is normalized (lowercase, no trailing dot, at most 253 bytes) and its
 * text parses back to itself; every pattern covers itself; a pattern
 * that covers another matches every host the other matches; a host
 * parsed matches itself made into a pattern.  The first 4 and 16 bytes
 * are also judged as addresses: a reason fits EGRESS_REASON_MAX, and an
 * IPv4 address mapped into IPv6 is judged as itself.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* A parsed pattern's invariants, and its text taken back. */
static void
check_parsed(const struct egress_pattern *p, int wild)
{
	char text[EGRESS_PATTERN_TEXT_MAX];
	struct egress_pattern q;
	const char *c;

	fuzz_check(strlen(p->host) <= EGRESS_NAME_MAX, "a host too long");
	fuzz_check(p->port <= 65535, "a port too big");
	fuzz_check(wild || p->port == 0, "a host with a port");
	fuzz_check(wild || (p->kind != EGRESS_ANY && p->kind != EGRESS_SUFFIX),
	    "a host with a wildcard");
	for (c = p->host; *c != '\0'; c++)
		fuzz_check(!(*c >= 'A' && *c <= 'Z'), "an uppercase host");
	if (p->kind == EGRESS_NAME || p->kind == EGRESS_SUFFIX)
		fuzz_check(p->host[0] != '.' &&
		               p->host[strlen(p->host) - 1] != '.' &&
		               strstr(p->host, "..") == NULL,
		    "an empty label kept");
	egress_pattern_format(p, text, sizeof text);
	fuzz_check(egress_pattern_parse(text, strlen(text), &q, NULL, 0) == 0,
	    "a pattern's text refused");
	fuzz_check(q.kind == p->kind && q.port == p->port &&
	               strcmp(q.host, p->host) == 0,
	    "a pattern's text parses to another");
	fuzz_check(egress_covers(p, p), "a pattern that does not cover itself");
}

static void
check_addrs(const uint8_t *data, size_t size)
{
	char b4[EGRESS_REASON_MAX], b6[EGRESS_REASON_MAX];
	struct sockaddr_in s4;
	struct sockaddr_in6 s6;
	const char *r4, *r6;

	memset(&s4, 0, sizeof s4);
	memset(&s6, 0, sizeof s6);
	s4.sin_family = AF_INET;
	s6.sin6_family = AF_INET6;
	if (size >= 16) {
		memcpy(&s6.sin6_addr, data, 16);
		r6 = egress_addr_refused(
		    (struct sockaddr *)&s6, NULL, 0, b6, sizeof b6);
		fuzz_check(r6 == NULL || strlen(r6) + 1 < sizeof b6,
		    "a reason that fills its buffer");
	}
	if (size >= 4) {
		memcpy(&s4.sin_addr, data, 4);
		r4 = egress_addr_refused(
		    (struct sockaddr *)&s4, NULL, 0, b4, sizeof b4);
		memset(&s6.sin6_addr, 0, 16);
		s6.sin6_addr.s6_addr[10] = 0xff;
		s6.sin6_addr.s6_addr[11] = 0xff;
		memcpy(s6.sin6_addr.s6_addr + 12, data, 4);
		r6 = egress_addr_refused(
		    (struct sockaddr *)&s6, NULL, 0, b6, sizeof b6);
		fuzz_check((r4 == NULL) == (r6 == NULL),
		    "a mapped address judged otherwise");
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct egress_pattern op, cl, host, self;
	const char *s = (const char *)data + 2, *part[3];
	size_t len[3], n = 0, rest;
	unsigned int port;
	int okop, okcl, okhost;
	const char *nl;
	char *h;

	check_addrs(data, size);
	if (size < 2)
		return 0;
	port = (unsigned int)data[0] << 8 | data[1];
	rest = size - 2;
	while (n < 3) {
		part[n] = s;
		nl = n < 2 ? memchr(s, '\n', rest) : NULL;
		len[n] = nl != NULL ? (size_t)(nl - s) : rest;
		n++;
		if (nl == NULL)
			break;
		rest -= len[n - 1] + 1;
		s = nl + 1;
	}
	for (; n < 3; n++) {
		part[n] = "";
		len[n] = 0;
	}
	okop = egress_pattern_parse(part[0], len[0], &op, NULL, 0) == 0;
	okcl = egress_pattern_parse(part[1], len[1], &cl, NULL, 0) == 0;
	okhost = egress_host_parse(part[2], len[2], &host, NULL, 0) == 0;
	if (okop)
		check_parsed(&op, 1);
	if (okcl)
		check_parsed(&cl, 1);
	if (okhost)
		check_parsed(&host, 0);

	h = malloc(len[2] + 1);
	memcpy(h, part[2], len[2]);
	h[len[2]] = '\0';
	if (okcl && egress_match(&cl, 1, h, port) == 0) {
		fuzz_check(okhost || memchr(part[2], '\0', len[2]) != NULL,
		    "a host matched that does not parse");
		if (okop && egress_covers(&op, &cl))
			fuzz_check(egress_match(&op, 1, h, port) == 0,
			    "a covered pattern matches what its cover does not");
	}
	if (okhost && port >= 1 && port <= 65535 &&
	    memchr(part[2], '\0', len[2]) == NULL) {
		self = host;
		fuzz_check(egress_match(&self, 1, h, port) == 0,
		    "a host that does not match itself");
		self.port = port;
		fuzz_check(egress_match(&self, 1, h, port) == 0,
		    "a host that does not match itself on its port");
		if (okop && egress_covers(&op, &self))
			fuzz_check(egress_match(&op, 1, h, port) == 0,
			    "a covered host that its cover does not match");
		if (okop && egress_match(&op, 1, h, port) == 0)
			fuzz_check(egress_covers(&op, &self),
			    "a host matched that its pattern does not cover");
	}
	free(h);
	return 0;
}
