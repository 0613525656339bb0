/*
 * Fuzz the request heads (common/httphead.c).
 *
 * Input: one byte choosing the piece size, then a client's bytes.  The
 * head's end is found the same whether the bytes come whole or in
 * pieces; a head that parses has its fields within bounds and free of
 * line breaks; a proxy target has a host that egress_host_parse() takes
 * and a port in range; a head rewritten for the hop parses again, with
 * no hop-by-hop field, its framing kept and "Connection: close" last.
 * The bearer check and the refusal run on every head that parses.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "egress.h"
#include "fuzz.h"
#include "httphead.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct httphead h, again;
static struct httphead_target t;

/* The rewritten head r parses again, with what the hop must keep. */
static void
check_rewrite(const char *r, size_t len, int proxy)
{
	static const char *const hop[] = {"Keep-Alive", "Proxy-Connection",
	    "Proxy-Authorization", "TE", "Trailer", "Upgrade", NULL};
	size_t i, n;

	fuzz_check(strlen(r) == len, "a rewritten length that is wrong");
	fuzz_check(len >= 23 && strcmp(r + len - 23,
	                            "\r\nConnection: close\r\n\r\n") == 0,
	    "a rewrite not ending in Connection: close");
	fuzz_check(httphead_end(r, len) == len, "a rewrite's end elsewhere");
	/* Room for the Host and Connection fields it adds, and a path. */
	if (len > HTTPHEAD_MAX || h.nfields + 2 > HTTPHEAD_MAX_FIELDS)
		return;
	fuzz_check(httphead_parse(r, len, &again, NULL, 0) == 0,
	    "a rewrite that does not parse");
	fuzz_check(strcmp(again.method, h.method) == 0, "another method");
	fuzz_check(again.minor == h.minor, "another version");
	fuzz_check(again.content_length == h.content_length &&
	               again.chunked == h.chunked,
	    "another framing");
	for (i = 0; hop[i] != NULL; i++)
		fuzz_check(httphead_get(&again, hop[i]) == NULL,
		    "a hop-by-hop field sent on");
	fuzz_check(proxy || httphead_get(&again, "Authorization") == NULL,
	    "a dropped field sent on");
	for (i = n = 0; i < again.nfields; i++)
		if (strcasecmp(again.fields[i].name, "Connection") == 0)
			n++;
	fuzz_check(n == 1, "not one Connection field");
	fuzz_check(strcmp(httphead_get(&again, "Connection"), "close") == 0,
	    "a Connection field that is not close");
	if (proxy) {
		fuzz_check(again.target[0] == '/', "not an origin-form target");
		fuzz_check(httphead_get(&again, "Host") != NULL, "no Host");
	} else
		fuzz_check(
		    strcmp(again.target, h.target) == 0, "another target");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const drop[] = {"Authorization", NULL};
	const char *s = (const char *)data + 1;
	struct egress_pattern p;
	size_t piece, len, end, n, e, rlen;
	char err[256], *r, *c;

	if (size < 1)
		return 0;
	piece = (size_t)data[0] + 1;
	len = size - 1;
	/* Exact-size copies, so that ASan sees a read one past the end. */
	c = malloc(len > 0 ? len : 1);
	memcpy(c, s, len);
	end = httphead_end(c, len);
	fuzz_check(end <= len, "an end past the bytes");
	for (n = 0; n < len; n += piece) {
		e = httphead_end(c, n);
		fuzz_check(n < end || end == 0 ? e == 0 : e == end,
		    "another end in pieces");
	}
	if (end == 0 || end > HTTPHEAD_MAX) {
		free(c);
		return 0;
	}
	if (httphead_parse(c, end, &h, err, sizeof err) == -1) {
		fuzz_check(err[0] != '\0', "refused without a reason");
		r = httphead_response(400, err, &rlen);
		fuzz_check(r != NULL && strlen(r) == rlen, "no response");
		free(r);
		free(c);
		return 0;
	}
	fuzz_check(h.nfields <= HTTPHEAD_MAX_FIELDS, "too many fields");
	for (n = 0; n < h.nfields; n++) {
		fuzz_check(h.fields[n].name[0] != '\0', "an empty name");
		fuzz_check(strpbrk(h.fields[n].name, ": \t\r\n") == NULL,
		    "a name with a separator");
		fuzz_check(strpbrk(h.fields[n].value, "\r\n") == NULL,
		    "a value with a line break");
	}
	fuzz_check(h.minor == 0 || h.minor == 1, "another version");
	fuzz_check(!(h.chunked && h.content_length >= 0), "two framings");
	(void)httphead_bearer_ok(&h, "0123456789abcdef");
	if (httphead_proxy_target(&h, &t, err, sizeof err) == 0) {
		fuzz_check(
		    t.port >= 1 && t.port <= 65535, "a port out of range");
		fuzz_check(
		    egress_host_parse(t.host, strlen(t.host), &p, NULL, 0) == 0,
		    "a target host that is not a host");
		fuzz_check(
		    strcmp(p.host, t.host) == 0, "a host not normalized");
		fuzz_check(t.ipv6 == (p.kind == EGRESS_IPV6), "ipv6 wrong");
		fuzz_check(t.connect || t.path[0] == '/', "a path without '/'");
		r = httphead_rewrite(&h, &t, NULL, &rlen);
		fuzz_check((r == NULL) == (t.connect != 0),
		    "a CONNECT rewritten or a request not");
		if (r != NULL)
			check_rewrite(r, rlen, 1);
		free(r);
	} else {
		r = httphead_response(403, err, &rlen);
		fuzz_check(r != NULL && strstr(r, "\r\nX-Mcp-Sandboxd-Egress: "
		                                  "refused\r\n") != NULL,
		    "a refusal without its field");
		free(r);
	}
	r = httphead_rewrite(&h, NULL, drop, &rlen);
	if (r != NULL)
		check_rewrite(r, rlen, 0);
	else
		fuzz_check(strcmp(h.method, "CONNECT") == 0, "not rewritten");
	free(r);
	free(c);
	return 0;
}
