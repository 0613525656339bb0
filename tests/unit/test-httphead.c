/* Request heads: found in pieces, parsed strictly, rewritten for the hop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "httphead.h"

static struct httphead h;
static char err[256];

/* s (NUL-terminated) parsed into h, as httphead_end() cut it. */
static int
parse(const char *s)
{
	size_t len = strlen(s), end = httphead_end(s, len);

	err[0] = '\0';
	return httphead_parse(s, end != 0 ? end : len, &h, err, sizeof err);
}

static void
refused(const char *s, const char *want)
{
	cr_expect_eq(parse(s), -1, "taken: %s", s);
	cr_expect(strstr(err, want) != NULL, "\"%s\" lacks \"%s\" (for %s)",
	    err, want, s);
}

Test(httphead_end, finds_the_blank_line)
{
	const char *a = "GET / HTTP/1.1\r\nHost: x\r\n\r\nbody";
	const char *b = "GET / HTTP/1.1\nHost: x\n\nbody";
	const char *c = "GET / HTTP/1.1\r\nHost: x\n\r\nbody";
	const char *d = "GET / HTTP/1.1\nHost: x\r\n\nbody";

	cr_expect_eq(httphead_end(a, strlen(a)), strlen(a) - 4);
	cr_expect_eq(httphead_end(b, strlen(b)), strlen(b) - 4);
	cr_expect_eq(httphead_end(c, strlen(c)), strlen(c) - 4);
	cr_expect_eq(httphead_end(d, strlen(d)), strlen(d) - 4);
	cr_expect_eq(httphead_end("GET / HTTP/1.1\r\n\r\n", 18), 18);
	cr_expect_eq(httphead_end("", 0), 0);
	cr_expect_eq(httphead_end("\r\n", 2), 2);
	cr_expect_eq(httphead_end("\n", 1), 1);
	cr_expect_eq(httphead_end("\r", 1), 0);
	cr_expect_eq(httphead_end("GET / HTTP/1.1\r\n\r", 17), 0);
	cr_expect_eq(httphead_end("GET / HTTP/1.1\r\r\n\r\r\n", 20), 0);
	cr_expect_eq(httphead_end("a\r\nb\r\n", 6), 0);
}

/* Every cut of a head before its last byte is incomplete, after it whole. */
static void
expect_split(const char *s, size_t whole)
{
	size_t len = strlen(s), n;
	char *c;

	for (n = 0; n <= len; n++) {
		c = malloc(n + 1);
		memcpy(c, s, n);
		cr_expect_eq(
		    httphead_end(c, n), n < whole ? 0 : whole, "cut at %zu", n);
		free(c);
	}
}

Test(httphead_end, is_found_at_every_split)
{
	expect_split("GET http://a.org/ HTTP/1.1\r\nHost: a.org\r\nX: y\r\n\r\n"
	             "POST / HTTP/1.1\r\n\r\n",
	    49);
	expect_split("CONNECT a.org:443 HTTP/1.0\n\nxyz", 28);
	expect_split("GET / HTTP/1.1\r\nA: \r\n\r\n", 23);
}

Test(httphead_end, sees_through_nul_bytes)
{
	const char s[] = "GET / HTTP/1.1\r\nX: a\0b\r\n\r\n";

	cr_expect_eq(httphead_end(s, sizeof s - 1), sizeof s - 1);
	cr_expect_eq(httphead_parse(s, sizeof s - 1, &h, err, sizeof err), -1);
	cr_expect(strstr(err, "NUL") != NULL, "%s", err);
}

Test(httphead, parses_a_request)
{
	cr_assert_eq(parse("GET http://a.org/x?y=1 HTTP/1.1\r\nHost: a.org\r\n"
	                   "User-Agent:  curl/8 \t\r\nAccept:*/*\r\nEmpty:\r\n"
	                   "\r\n"),
	    0, "%s", err);
	cr_expect_str_eq(h.method, "GET");
	cr_expect_str_eq(h.target, "http://a.org/x?y=1");
	cr_expect_eq(h.minor, 1);
	cr_assert_eq(h.nfields, 4);
	cr_expect_str_eq(h.fields[0].name, "Host");
	cr_expect_str_eq(h.fields[0].value, "a.org");
	cr_expect_str_eq(h.fields[1].value, "curl/8");
	cr_expect_str_eq(h.fields[2].name, "Accept");
	cr_expect_str_eq(h.fields[2].value, "*/*");
	cr_expect_str_eq(h.fields[3].value, "");
	cr_expect_eq(h.content_length, -1);
	cr_expect_eq(h.chunked, 0);
	cr_expect_str_eq(httphead_get(&h, "user-agent"), "curl/8");
	cr_expect_null(httphead_get(&h, "Cookie"));
}

Test(httphead, parses_bare_lf_and_http_1_0)
{
	cr_assert_eq(
	    parse("CONNECT a.org:443 HTTP/1.0\nX-A: b\n\n"), 0, "%s", err);
	cr_expect_eq(h.minor, 0);
	cr_expect_str_eq(h.method, "CONNECT");
	cr_expect_str_eq(h.fields[0].value, "b");
}

Test(httphead, takes_obs_text_in_values)
{
	cr_assert_eq(parse("GET / HTTP/1.1\r\nX: caf\xc3\xa9\tok\r\n\r\n"), 0,
	    "%s", err);
	cr_expect_str_eq(h.fields[0].value, "caf\xc3\xa9\tok");
}

Test(httphead, refuses_bad_request_lines)
{
	refused("\r\n", "empty request line");
	refused("\n", "empty request line");
	refused("GET /\r\n\r\n", "not a request line");
	refused("GET\r\n\r\n", "not a request line");
	refused("GET  / HTTP/1.1\r\n\r\n", "empty request target");
	refused("GET / HTTP/1.1 \r\n\r\n", "not HTTP/1.0");
	refused("GET /  HTTP/1.1\r\n\r\n", "not HTTP/1.0");
	refused("GET / HTTP/2.0\r\n\r\n", "not HTTP/1.0 or HTTP/1.1");
	refused("GET / HTTP/1.2\r\n\r\n", "not HTTP/1.0 or HTTP/1.1");
	refused("GET / http/1.1\r\n\r\n", "not HTTP/1.0 or HTTP/1.1");
	refused("GET / HTTP/0.9\r\n\r\n", "not HTTP/1.0 or HTTP/1.1");
	refused("GET / HTTP/1.10\r\n\r\n", "not HTTP/1.0 or HTTP/1.1");
	refused("G(T / HTTP/1.1\r\n\r\n", "method is not a token");
	refused(" GET / HTTP/1.1\r\n\r\n", "method is not a token");
	refused("GET /a\tb HTTP/1.1\r\n\r\n", "request target");
	refused("GET /caf\xc3\xa9 HTTP/1.1\r\n\r\n", "request target");
	refused("GET /\x7f HTTP/1.1\r\n\r\n", "request target");
}

Test(httphead, refuses_bad_fields)
{
	refused("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", "obs-fold");
	refused("GET / HTTP/1.1\r\n\tfolded\r\n\r\n", "obs-fold");
	refused("GET / HTTP/1.1\r\nNoColon\r\n\r\n", "without ':'");
	refused("GET / HTTP/1.1\r\nHost : a\r\n\r\n", "not a token");
	refused("GET / HTTP/1.1\r\n: a\r\n\r\n", "not a token");
	refused("GET / HTTP/1.1\r\nA(b: c\r\n\r\n", "not a token");
	refused("GET / HTTP/1.1\r\nX: a\x01b\r\n\r\n", "control byte");
	refused("GET / HTTP/1.1\r\nX: a\x7f\r\n\r\n", "control byte");
	refused("GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", "bare CR");
	refused("GET / HTTP/1.1\rX: a\r\n\r\n", "bare CR");
	refused("GET / HTTP/1.1\r\nX: a\r\r\n\r\n", "bare CR");
}

Test(httphead, needs_the_blank_line_and_nothing_after)
{
	const char *s = "GET / HTTP/1.1\r\nHost: a\r\n\r\nmore";

	cr_expect_eq(httphead_parse(s, 20, &h, err, sizeof err), -1);
	cr_expect(strstr(err, "blank line") != NULL, "%s", err);
	cr_expect_eq(httphead_parse(s, strlen(s), &h, err, sizeof err), -1);
	cr_expect(strstr(err, "past the request head") != NULL, "%s", err);
	cr_expect_eq(httphead_parse(s, strlen(s) - 4, &h, err, sizeof err), 0);
	cr_expect_eq(httphead_parse(s, 0, &h, err, sizeof err), -1);
}

Test(httphead, caps_the_head)
{
	char *s = malloc(HTTPHEAD_MAX + 64);
	size_t n;

	n = (size_t)sprintf(s, "GET / HTTP/1.1\r\nX: ");
	memset(s + n, 'a', HTTPHEAD_MAX - n - 4);
	memcpy(s + HTTPHEAD_MAX - 4, "\r\n\r\n", 4);
	cr_expect_eq(
	    httphead_parse(s, HTTPHEAD_MAX, &h, err, sizeof err), 0, "%s", err);
	cr_expect_eq(strlen(h.fields[0].value), HTTPHEAD_MAX - n - 4);
	memset(s + n, 'a', HTTPHEAD_MAX - n - 3);
	memcpy(s + HTTPHEAD_MAX - 3, "\r\n\r\n", 4);
	cr_expect_eq(httphead_end(s, HTTPHEAD_MAX + 1), HTTPHEAD_MAX + 1);
	cr_expect_eq(
	    httphead_parse(s, HTTPHEAD_MAX + 1, &h, err, sizeof err), -1);
	cr_expect(strstr(err, "over 16384") != NULL, "%s", err);
	free(s);
}

/* A head with n fields "X-i: i". */
static char *
with_fields(int n)
{
	char *s = malloc(64 + (size_t)n * 16), *p = s;
	int i;

	cr_assert_not_null(s);
	p += sprintf(p, "GET / HTTP/1.1\r\n");
	for (i = 0; i < n; i++)
		p += sprintf(p, "X-%d: %d\r\n", i, i);
	sprintf(p, "\r\n");
	return s;
}

Test(httphead, takes_100_fields_not_101)
{
	char *s = with_fields(100);

	cr_expect_eq(parse(s), 0, "%s", err);
	cr_expect_eq(h.nfields, 100);
	cr_expect_str_eq(h.fields[99].value, "99");
	free(s);
	s = with_fields(101);
	refused(s, "more than 100 header fields");
	free(s);
}

Test(httphead, reads_the_framing)
{
	cr_assert_eq(parse("POST / HTTP/1.1\r\nContent-Length: 42\r\n\r\n"), 0,
	    "%s", err);
	cr_expect_eq(h.content_length, 42);
	cr_assert_eq(parse("POST / HTTP/1.1\r\ncontent-length: 0\r\n\r\n"), 0);
	cr_expect_eq(h.content_length, 0);
	cr_assert_eq(
	    parse("POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n"), 0);
	cr_expect_eq(h.chunked, 1);
	cr_expect_eq(h.content_length, -1);
}

Test(httphead, refuses_smuggling_combinations)
{
	refused("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n"
	        "\r\n",
	    "two Content-Length");
	refused("POST / HTTP/1.1\r\nContent-Length: 1\r\ncontent-length: 2\r\n"
	        "\r\n",
	    "two Content-Length");
	refused("POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: "
	        "chunked\r\n\r\n",
	    "both Content-Length and Transfer-Encoding");
	refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
	        "Content-Length: 1\r\n\r\n",
	    "both");
	refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
	        "Transfer-Encoding: chunked\r\n\r\n",
	    "two Transfer-Encoding");
	refused("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	    "other than chunked");
	refused("POST / HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n",
	    "other than chunked");
	refused("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
	    "in HTTP/1.0");
	refused(
	    "POST / HTTP/1.1\r\nContent-Length: 1, 1\r\n\r\n", "not a number");
	refused(
	    "POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n", "not a number");
	refused(
	    "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "not a number");
	refused("POST / HTTP/1.1\r\nContent-Length:\r\n\r\n", "not a number");
	refused(
	    "POST / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", "not a number");
	refused(
	    "POST / HTTP/1.1\r\nContent-Length: 1234567890123456789\r\n\r\n",
	    "not a number");
	refused("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "two Host");
}

/* h (parsed from s) as a proxy's target into *t: the return. */
static int
target(const char *s, struct httphead_target *t)
{
	cr_assert_eq(parse(s), 0, "%s: %s", s, err);
	err[0] = '\0';
	return httphead_proxy_target(&h, t, err, sizeof err);
}

static struct httphead_target t;

static void
expect_target(const char *line, int connect, const char *host,
    unsigned int port, const char *path)
{
	char s[1024];

	snprintf(s, sizeof s, "%s\r\n\r\n", line);
	cr_assert_eq(target(s, &t), 0, "%s: %s", line, err);
	cr_expect_eq(t.connect, connect, "%s", line);
	cr_expect_str_eq(t.host, host, "%s", line);
	cr_expect_eq(t.port, port, "%s", line);
	cr_expect_str_eq(t.path, path, "%s", line);
}

static void
target_refused(const char *line, const char *want)
{
	char s[1024];

	snprintf(s, sizeof s, "%s\r\n\r\n", line);
	cr_expect_eq(target(s, &t), -1, "taken: %s", line);
	cr_expect(strstr(err, want) != NULL, "\"%s\" lacks \"%s\" (for %s)",
	    err, want, line);
}

Test(httphead_target, reads_connect_authorities)
{
	expect_target("CONNECT a.org:443 HTTP/1.1", 1, "a.org", 443, "");
	expect_target("CONNECT A.Example.ORG.:8443 HTTP/1.1", 1,
	    "a.example.org", 8443, "");
	expect_target("CONNECT 192.0.2.1:1 HTTP/1.1", 1, "192.0.2.1", 1, "");
	expect_target("CONNECT [::1]:443 HTTP/1.1", 1, "::1", 443, "");
	cr_expect_eq(t.ipv6, 1);
	expect_target("CONNECT [2001:DB8::1]:65535 HTTP/1.1", 1, "2001:db8::1",
	    65535, "");
}

Test(httphead_target, refuses_bad_connect_authorities)
{
	target_refused("CONNECT a.org HTTP/1.1", "no port");
	target_refused("CONNECT [::1] HTTP/1.1", "no port");
	target_refused("CONNECT a.org: HTTP/1.1", "port");
	target_refused("CONNECT a.org:0 HTTP/1.1", "port");
	target_refused("CONNECT a.org:65536 HTTP/1.1", "port");
	target_refused("CONNECT a.org:443x HTTP/1.1", "port");
	target_refused("CONNECT :443 HTTP/1.1", "empty host");
	target_refused("CONNECT ::1:443 HTTP/1.1", "brackets");
	target_refused("CONNECT [::1:443 HTTP/1.1", "']'");
	target_refused("CONNECT [::1]x443 HTTP/1.1", "':' after ']'");
	target_refused("CONNECT [1.2.3.4]:443 HTTP/1.1", "not a host");
	target_refused("CONNECT [fe80::1%25eth0]:443 HTTP/1.1", "not a host");
	target_refused("CONNECT u:p@a.org:443 HTTP/1.1", "userinfo");
	target_refused("CONNECT a_b.org:443 HTTP/1.1", "not a host");
	target_refused("CONNECT http://a.org/ HTTP/1.1", "");
	target_refused("CONNECT *.a.org:443 HTTP/1.1", "not a host");
	target_refused("CONNECT 127.1:443 HTTP/1.1", "not a host");
}

Test(httphead_target, reads_absolute_uris)
{
	expect_target("GET http://a.org/x/y?q=1&r HTTP/1.1", 0, "a.org", 80,
	    "/x/y?q=1&r");
	expect_target("GET http://a.org HTTP/1.1", 0, "a.org", 80, "/");
	expect_target("GET http://a.org/ HTTP/1.1", 0, "a.org", 80, "/");
	expect_target("GET http://a.org?q HTTP/1.1", 0, "a.org", 80, "/?q");
	expect_target(
	    "POST HTTP://A.ORG:8080/p HTTP/1.0", 0, "a.org", 8080, "/p");
	expect_target("GET http://[::1]:8080/ HTTP/1.1", 0, "::1", 8080, "/");
	expect_target(
	    "GET http://[2001:db8::1]/z HTTP/1.1", 0, "2001:db8::1", 80, "/z");
	expect_target(
	    "OPTIONS http://10.0.0.1:81/ HTTP/1.1", 0, "10.0.0.1", 81, "/");
}

Test(httphead_target, refuses_other_targets)
{
	target_refused("GET https://a.org/ HTTP/1.1", "CONNECT");
	target_refused("GET HTTPS://a.org/ HTTP/1.1", "CONNECT");
	target_refused("GET / HTTP/1.1", "origin-form");
	target_refused("OPTIONS * HTTP/1.1", "not an http:// URI");
	target_refused("GET ftp://a.org/ HTTP/1.1", "not an http:// URI");
	target_refused("GET a.org:80 HTTP/1.1", "not an http:// URI");
	target_refused("GET http:/a.org/ HTTP/1.1", "not an http:// URI");
	target_refused("GET http:// HTTP/1.1", "empty host");
	target_refused("GET http:///x HTTP/1.1", "empty host");
	target_refused("GET http://u@a.org/ HTTP/1.1", "userinfo");
	target_refused("GET http://u:p@a.org/ HTTP/1.1", "userinfo");
	target_refused("GET http://a.org:/ HTTP/1.1", "port");
	target_refused("GET http://a.org:0/ HTTP/1.1", "port");
	target_refused("GET http://a.org:65536/ HTTP/1.1", "port");
	target_refused("GET http://a.org/#frag HTTP/1.1", "fragment");
	target_refused("GET http://a.org#/ HTTP/1.1", "fragment");
	target_refused("GET http://a%2eorg/ HTTP/1.1", "not a host");
	target_refused("GET http://[::1/ HTTP/1.1", "']'");
	target_refused("GET http://::1/ HTTP/1.1", "brackets");
	target_refused("GET http://a.org:80:80/ HTTP/1.1", "brackets");
}

/* The head s rewritten with its proxy target (or none), drop as given. */
static char *
rewrite(const char *s, int proxy, const char *const *drop)
{
	size_t len;
	char *r;

	cr_assert_eq(parse(s), 0, "%s: %s", s, err);
	if (proxy)
		cr_assert_eq(httphead_proxy_target(&h, &t, err, sizeof err), 0,
		    "%s", err);
	r = httphead_rewrite(&h, proxy ? &t : NULL, drop, &len);
	cr_assert_not_null(r);
	cr_expect_eq(strlen(r), len);
	return r;
}

static void
expect_rewrite(
    const char *s, int proxy, const char *const *drop, const char *want)
{
	char *r = rewrite(s, proxy, drop);

	cr_expect_str_eq(r, want);
	/* What is sent on parses again. */
	cr_expect_eq(httphead_end(r, strlen(r)), strlen(r));
	cr_expect_eq(parse(r), 0, "%s", err);
	free(r);
}

Test(httphead_rewrite, writes_origin_form_and_host)
{
	expect_rewrite(
	    "GET http://A.org:8080/x?y HTTP/1.1\r\nHost: evil.org\r\n"
	    "Accept: */*\r\n\r\n",
	    1, NULL,
	    "GET /x?y HTTP/1.1\r\nHost: a.org:8080\r\nAccept: */*\r\n"
	    "Connection: close\r\n\r\n");
	expect_rewrite("GET http://a.org HTTP/1.0\nUser-Agent: x\n\n", 1, NULL,
	    "GET / HTTP/1.0\r\nHost: a.org\r\nUser-Agent: x\r\n"
	    "Connection: close\r\n\r\n");
	expect_rewrite("GET http://[::1]:81/ HTTP/1.1\r\n\r\n", 1, NULL,
	    "GET / HTTP/1.1\r\nHost: [::1]:81\r\nConnection: close\r\n\r\n");
}

Test(httphead_rewrite, drops_hop_by_hop_fields)
{
	expect_rewrite("POST http://a.org/ HTTP/1.1\r\nHost: a.org\r\n"
	               "Connection: keep-alive, X-Secret , x-other\r\n"
	               "Keep-Alive: 5\r\nProxy-Connection: keep-alive\r\n"
	               "Proxy-Authorization: Basic eA==\r\nTE: trailers\r\n"
	               "Trailer: X\r\nUpgrade: websocket\r\nX-Secret: 1\r\n"
	               "X-Other: 2\r\nX-Kept: 3\r\nContent-Length: 3\r\n\r\n",
	    1, NULL,
	    "POST / HTTP/1.1\r\nHost: a.org\r\nX-Kept: 3\r\n"
	    "Content-Length: 3\r\nConnection: close\r\n\r\n");
}

Test(httphead_rewrite, never_drops_the_framing_for_connection)
{
	expect_rewrite("POST http://a.org/ HTTP/1.1\r\nConnection: "
	               "Content-Length, Host, Transfer-Encoding\r\n"
	               "Content-Length: 3\r\n\r\n",
	    1, NULL,
	    "POST / HTTP/1.1\r\nHost: a.org\r\nContent-Length: 3\r\n"
	    "Connection: close\r\n\r\n");
	expect_rewrite(
	    "POST /up HTTP/1.1\r\nHost: h\r\nConnection: "
	    "transfer-encoding,host\r\nTransfer-Encoding: chunked\r\n"
	    "\r\n",
	    0, NULL,
	    "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
	    "Connection: close\r\n\r\n");
}

Test(httphead_rewrite, drops_named_fields_and_keeps_the_target_without_one)
{
	const char *drop[] = {"Authorization", "X-Forwarded-For", NULL};

	expect_rewrite("GET /api?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
	               "authorization: Bearer t\r\nX-Forwarded-For: 1.2.3.4\r\n"
	               "Cookie: c\r\n\r\n",
	    0, drop,
	    "GET /api?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nCookie: c\r\n"
	    "Connection: close\r\n\r\n");
}

Test(httphead_rewrite, refuses_connect)
{
	cr_assert_eq(parse("CONNECT a.org:443 HTTP/1.1\r\n\r\n"), 0);
	cr_assert_eq(httphead_proxy_target(&h, &t, err, sizeof err), 0);
	cr_expect_null(httphead_rewrite(&h, &t, NULL, NULL));
	cr_expect_null(httphead_rewrite(&h, NULL, NULL, NULL));
}

Test(httphead_rewrite, grows_past_its_first_buffer)
{
	char *s = with_fields(99), *r;

	r = rewrite(s, 0, NULL);
	cr_expect(strstr(r, "X-98: 98\r\nConnection: close\r\n\r\n") != NULL);
	cr_expect_eq(parse(r), 0, "%s", err);
	cr_expect_eq(h.nfields, 100);
	free(r);
	free(s);
}

Test(httphead_strip, keeps_upgrades_and_keep_alive_and_drops_only_the_named)
{
	const char *drop[] = {"Authorization", NULL};
	size_t len = 0;
	char *r;

	cr_assert_eq(parse("GET /ws HTTP/1.1\r\nHost: x\r\n"
	                   "Authorization: Bearer t\r\nUpgrade: websocket\r\n"
	                   "Connection: Upgrade\r\nauthorization: Basic u\r\n"
	                   "Sec-WebSocket-Key: k\r\n\r\n"),
	    0, "%s", err);
	r = httphead_strip(&h, drop, &len);
	cr_assert_not_null(r);
	cr_expect_str_eq(r, "GET /ws HTTP/1.1\r\nHost: x\r\n"
	                    "Upgrade: websocket\r\nConnection: Upgrade\r\n"
	                    "Sec-WebSocket-Key: k\r\n\r\n");
	cr_expect_eq(len, strlen(r));
	free(r);

	/* HTTP/1.0, a bare-LF head: written anew with CRLF, nothing lost. */
	cr_assert_eq(parse("POST /p HTTP/1.0\nContent-Length: 3\n\n"), 0);
	r = httphead_strip(&h, NULL, &len);
	cr_expect_str_eq(r, "POST /p HTTP/1.0\r\nContent-Length: 3\r\n\r\n");
	free(r);

	/* A CONNECT is a request like another here. */
	cr_assert_eq(parse("CONNECT a.org:443 HTTP/1.1\r\n\r\n"), 0);
	r = httphead_strip(&h, drop, NULL);
	cr_expect_str_eq(r, "CONNECT a.org:443 HTTP/1.1\r\n\r\n");
	free(r);
}

static int
bearer(const char *fields, const char *token)
{
	char s[1024];

	snprintf(s, sizeof s, "GET / HTTP/1.1\r\n%s\r\n", fields);
	cr_assert_eq(parse(s), 0, "%s: %s", s, err);
	return httphead_bearer_ok(&h, token);
}

Test(httphead, checks_bearer_tokens)
{
	cr_expect(bearer("Authorization: Bearer s3cret\r\n", "s3cret"));
	cr_expect(bearer("authorization: bearer s3cret\r\n", "s3cret"));
	cr_expect(bearer("Authorization: BEARER   s3cret  \r\n", "s3cret"));
	cr_expect(!bearer("Authorization: Bearer s3cre\r\n", "s3cret"));
	cr_expect(!bearer("Authorization: Bearer s3crett\r\n", "s3cret"));
	cr_expect(!bearer("Authorization: Bearer S3CRET\r\n", "s3cret"));
	cr_expect(!bearer("Authorization: Bearer\r\n", "s3cret"));
	cr_expect(!bearer("Authorization: Bearer \r\n", ""));
	cr_expect(!bearer("Authorization: Basic czNjcmV0\r\n", "s3cret"));
	cr_expect(!bearer("Authorization: Bearers3cret\r\n", "s3cret"));
	cr_expect(!bearer("", "s3cret"));
	cr_expect(!bearer("Authorization: Bearer s3cret\r\n"
	                  "Authorization: Bearer s3cret\r\n",
	    "s3cret"));
	cr_expect(!bearer("Authorization: Bearer x\r\n"
	                  "Authorization: Bearer s3cret\r\n",
	    "s3cret"));
	cr_expect(!bearer("Proxy-Authorization: Bearer s3cret\r\n", "s3cret"));
	cr_expect(!bearer("Authorization: Bearer s3cret\r\n", NULL));
}

Test(httphead, writes_refusals)
{
	size_t len;
	char *r;

	r = httphead_response(403, "a.org is not allowed", &len);
	cr_assert_not_null(r);
	cr_expect_str_eq(r, "HTTP/1.1 403 Forbidden\r\n"
	                    "Content-Type: text/plain; charset=utf-8\r\n"
	                    "Content-Length: 21\r\n"
	                    "Connection: close\r\n"
	                    "X-Mcp-Sandboxd-Egress: refused\r\n"
	                    "\r\n"
	                    "a.org is not allowed\n");
	cr_expect_eq(len, strlen(r));
	free(r);
	r = httphead_response(401, "a token is needed", &len);
	cr_expect(strstr(r, "HTTP/1.1 401 Unauthorized\r\n") == r);
	cr_expect(strstr(r, "WWW-Authenticate: Bearer\r\n") != NULL);
	cr_expect(strstr(r, "X-Mcp-Sandboxd-Egress") == NULL);
	free(r);
	r = httphead_response(502, "connect to a.org: refused", &len);
	cr_expect(strstr(r, "HTTP/1.1 502 Bad Gateway\r\n") == r);
	cr_expect(strstr(r, "Content-Length: 26\r\n") != NULL);
	cr_expect(strstr(r, "\r\n\r\nconnect to a.org: refused\n") != NULL);
	free(r);
	r = httphead_response(400, NULL, NULL);
	cr_expect(strstr(r, "\r\n\r\nBad Request\n") != NULL);
	free(r);
	cr_expect_null(httphead_response(200, "x", &len));
	cr_expect_null(httphead_response(999, "x", &len));
	cr_expect_str_eq(
	    HTTPHEAD_CONNECT_OK, "HTTP/1.1 200 Connection established\r\n\r\n");
}
