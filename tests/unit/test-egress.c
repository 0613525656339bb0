/* The egress allowlist: patterns, matching, the operator's ceiling, addresses.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "egress.h"

static struct egress_pattern
pat(const char *s)
{
	struct egress_pattern p;
	char err[256];

	cr_assert_eq(egress_pattern_parse(s, strlen(s), &p, err, sizeof err), 0,
	    "%s: %s", s, err);
	return p;
}

/* s is refused, with an error that contains want. */
static void
refused(const char *s, size_t len, const char *want)
{
	struct egress_pattern p;
	char err[256] = "";

	cr_expect_eq(egress_pattern_parse(s, len, &p, err, sizeof err), -1,
	    "%s taken", s);
	cr_expect(
	    strstr(err, want) != NULL, "%s: \"%s\" lacks \"%s\"", s, err, want);
}

#define REFUSED(s, want) refused(s, strlen(s), want)

static void
expect_pat(
    const char *s, enum egress_kind k, const char *host, unsigned int port)
{
	struct egress_pattern p = pat(s);

	cr_expect_eq(p.kind, k, "%s: kind %d", s, p.kind);
	cr_expect_str_eq(p.host, host, "%s", s);
	cr_expect_eq(p.port, port, "%s: port %u", s, p.port);
}

Test(egress, parses_names_suffixes_any_and_ports)
{
	expect_pat("example.org", EGRESS_NAME, "example.org", 0);
	expect_pat("example.org:443", EGRESS_NAME, "example.org", 443);
	expect_pat("*.example.org", EGRESS_SUFFIX, "example.org", 0);
	expect_pat("*.example.org:8080", EGRESS_SUFFIX, "example.org", 8080);
	expect_pat("*", EGRESS_ANY, "*", 0);
	expect_pat("*:443", EGRESS_ANY, "*", 443);
	expect_pat("localhost", EGRESS_NAME, "localhost", 0);
	expect_pat("a-b.c-d.e", EGRESS_NAME, "a-b.c-d.e", 0);
	expect_pat(
	    "xn--bcher-kva.example", EGRESS_NAME, "xn--bcher-kva.example", 0);
	expect_pat("1.example.org", EGRESS_NAME, "1.example.org", 0);
	expect_pat("x:1", EGRESS_NAME, "x", 1);
	expect_pat("x:65535", EGRESS_NAME, "x", 65535);
}

Test(egress, lowercases_and_drops_a_trailing_dot)
{
	expect_pat("ExAmPle.ORG", EGRESS_NAME, "example.org", 0);
	expect_pat("example.org.", EGRESS_NAME, "example.org", 0);
	expect_pat("Example.Org.:443", EGRESS_NAME, "example.org", 443);
	expect_pat("*.EXAMPLE.org.", EGRESS_SUFFIX, "example.org", 0);
	REFUSED("example.org..", "empty label");
	REFUSED(".", "empty name");
}

Test(egress, parses_addresses)
{
	struct egress_pattern p;

	expect_pat("192.0.2.1", EGRESS_IPV4, "192.0.2.1", 0);
	expect_pat("192.0.2.1:80", EGRESS_IPV4, "192.0.2.1", 80);
	expect_pat("[::1]", EGRESS_IPV6, "::1", 0);
	expect_pat("[::1]:443", EGRESS_IPV6, "::1", 443);
	expect_pat("[2001:DB8:0:0::1]", EGRESS_IPV6, "2001:db8::1", 0);
	expect_pat("[::ffff:1.2.3.4]", EGRESS_IPV6, "::ffff:1.2.3.4", 0);
	p = pat("10.1.2.3");
	cr_expect_eq(memcmp(p.addr, "\x0a\x01\x02\x03", 4), 0);
	p = pat("[::1]");
	cr_expect_eq(p.addr[15], 1);
}

Test(egress, refuses_bad_ports)
{
	REFUSED("x:0", "port");
	REFUSED("x:65536", "port");
	REFUSED("x:99999", "port");
	REFUSED("x:", "port");
	REFUSED("x:-1", "port");
	REFUSED("x:+80", "port");
	REFUSED("x:080", "port");
	REFUSED("x:8o", "port");
	REFUSED("x:123456", "port");
	REFUSED("[::1]:", "port");
	REFUSED("[::1]:0", "port");
	REFUSED("[::1]443", "not a ':' after ']'");
	REFUSED("*:0", "port");
}

Test(egress, refuses_bad_wildcards)
{
	REFUSED("*.", "\"*.\": empty name after *.");
	REFUSED("*..", "empty name after *.");
	REFUSED("*.*.x", "'*' is only allowed as the whole first label");
	REFUSED("a.*.x", "'*'");
	REFUSED("*x.org", "'*'");
	REFUSED("x*.org", "'*'");
	REFUSED("**", "'*'");
	REFUSED("*.", "empty name");
	REFUSED("*.1.2.3.4", "number");
	REFUSED("*.[::1]", "brackets");
	REFUSED("*.[x]", "not a letter");
}

Test(egress, refuses_bad_names)
{
	char label[70], name[300];

	REFUSED("", "empty");
	REFUSED("a..b", "empty label");
	REFUSED(".a", "empty label");
	REFUSED("-a.b", "starting with '-'");
	REFUSED("a-.b", "ending in '-'");
	REFUSED("a.b-", "ending in '-'");
	REFUSED("a_b.org", "not a letter");
	REFUSED("a b.org", "not a letter");
	REFUSED("caf\xc3\xa9.org", "not a letter");
	REFUSED("a/b", "not a letter");
	REFUSED("user@host", "not a letter");
	REFUSED("a.b:1:2", "brackets");
	REFUSED("::1", "brackets");
	REFUSED("[::1", "']'");
	REFUSED("[1.2.3.4]", "not an IPv6 address");
	REFUSED("[fe80::1%eth0]", "not an IPv6 address");
	REFUSED("[]", "empty IPv6");
	REFUSED("[x]", "not an IPv6 address");
	/* Names that a resolver would take for addresses. */
	REFUSED("1.2.3", "number");
	REFUSED("127.1", "number");
	REFUSED("1.2.3.4.", "number");
	REFUSED("1.2.3.256", "number");
	REFUSED("0x7f000001", "number");
	REFUSED("0x7f.1", "number");
	REFUSED("1.0x7f", "number");
	REFUSED("example.123", "number");
	REFUSED("2130706433", "number");
	/* Labels of 63 bytes are taken, of 64 refused. */
	memset(label, 'a', 63);
	label[63] = '\0';
	snprintf(name, sizeof name, "%s.org", label);
	expect_pat(name, EGRESS_NAME, name, 0);
	label[63] = 'a';
	label[64] = '\0';
	snprintf(name, sizeof name, "%s.org", label);
	REFUSED(name, "longer than 63");
}

Test(egress, caps_names_at_253_bytes)
{
	char name[300];
	size_t i;

	/* 63 + 1 + 63 + 1 + 63 + 1 + 61 = 253 */
	memset(name, 'a', sizeof name);
	for (i = 63; i < 253; i += 64)
		name[i] = '.';
	name[253] = '\0';
	expect_pat(name, EGRESS_NAME, name, 0);
	name[253] = '.';
	name[254] = '\0';
	cr_expect_eq(pat(name).kind, EGRESS_NAME, "253 and a trailing dot");
	name[253] = 'a';
	REFUSED(name, "longer than 253");
	/* A suffix leaves room for at least "x.". */
	name[0] = '*';
	name[1] = '.';
	name[253] = '\0';
	expect_pat(name, EGRESS_SUFFIX, name + 2, 0);
	name[2] = 'a';
	name[3] = 'a';
	name[253] = 'a';
	name[254] = '\0';
	REFUSED(name, "longer than 253");
}

Test(egress, refuses_an_embedded_nul)
{
	refused("a\0b.org", 7, "NUL");
	refused("a.org\0", 6, "NUL");
	refused("\0", 1, "NUL");
}

Test(egress, quotes_the_input_printably)
{
	struct egress_pattern p;
	char err[512], s[200];

	cr_assert_eq(
	    egress_pattern_parse("a\nb\"", 4, &p, err, sizeof err), -1);
	cr_expect_str_eq(
	    err, "\"a\\x0ab\\x22\": not a letter, digit, '-' or '.' in a name");
	memset(s, 'a', sizeof s);
	s[100] = '_';
	cr_assert_eq(
	    egress_pattern_parse(s, sizeof s, &p, err, sizeof err), -1);
	cr_expect(strstr(err, "...\":") != NULL, "%s", err);
	/* A NULL error buffer is fine. */
	cr_expect_eq(egress_pattern_parse("*.", 2, &p, NULL, 0), -1);
}

Test(egress, formats_patterns_back)
{
	const char *in[] = {"example.org", "example.org:443", "*.example.org",
	    "*.example.org:1", "*", "*:8080", "192.0.2.1:80", "[::1]:443",
	    "[2001:db8::1]"};
	char text[EGRESS_PATTERN_TEXT_MAX];
	struct egress_pattern p, q;
	size_t i;

	for (i = 0; i < sizeof in / sizeof in[0]; i++) {
		p = pat(in[i]);
		egress_pattern_format(&p, text, sizeof text);
		cr_expect_str_eq(text, in[i]);
		q = pat(text);
		cr_expect_eq(memcmp(&p, &q, sizeof p), 0, "%s", in[i]);
	}
	p = pat("EXAMPLE.org.");
	egress_pattern_format(&p, text, sizeof text);
	cr_expect_str_eq(text, "example.org");
}

Test(egress, parses_hosts_as_clients_name_them)
{
	struct egress_pattern p;
	char err[256];

	cr_assert_eq(egress_host_parse("::1", 3, &p, err, sizeof err), 0);
	cr_expect_eq(p.kind, EGRESS_IPV6);
	cr_assert_eq(egress_host_parse("[::1]", 5, &p, err, sizeof err), 0);
	cr_expect_eq(p.kind, EGRESS_IPV6);
	cr_assert_eq(
	    egress_host_parse("Example.ORG.", 12, &p, err, sizeof err), 0);
	cr_expect_str_eq(p.host, "example.org");
	cr_expect_eq(egress_host_parse("*", 1, &p, err, sizeof err), -1);
	cr_expect_eq(egress_host_parse("*.a.org", 7, &p, err, sizeof err), -1);
	cr_expect_eq(
	    egress_host_parse("a.org:443", 9, &p, err, sizeof err), -1);
	cr_expect_eq(egress_host_parse("", 0, &p, err, sizeof err), -1);
}

Test(egress, matches_names_exactly_and_suffixes_strictly)
{
	struct egress_pattern l[] = {pat("example.org"), pat("*.example.net")};

	cr_expect_eq(egress_match(l, 2, "example.org", 80), 0);
	cr_expect_eq(egress_match(l, 2, "EXAMPLE.org.", 443), 0);
	cr_expect_eq(egress_match(l, 2, "a.example.org", 80), -1);
	cr_expect_eq(egress_match(l, 2, "xexample.org", 80), -1);
	cr_expect_eq(egress_match(l, 2, "example.org.evil", 80), -1);
	cr_expect_eq(egress_match(l, 2, "a.example.net", 80), 1);
	cr_expect_eq(egress_match(l, 2, "a.b.example.net", 80), 1);
	cr_expect_eq(egress_match(l, 2, "A.Example.NET", 80), 1);
	cr_expect_eq(egress_match(l, 2, "example.net", 80), -1);
	cr_expect_eq(egress_match(l, 2, "aexample.net", 80), -1);
	cr_expect_eq(egress_match(l, 2, ".example.net", 80), -1);
	cr_expect_eq(egress_match(l, 2, "a..example.net", 80), -1);
	cr_expect_eq(egress_match(l, 0, "example.org", 80), -1);
}

Test(egress, matches_ports)
{
	struct egress_pattern l[] = {
	    pat("a.org:443"), pat("*.b.org:8080"), pat("c.org")};

	cr_expect_eq(egress_match(l, 3, "a.org", 443), 0);
	cr_expect_eq(egress_match(l, 3, "a.org", 80), -1);
	cr_expect_eq(egress_match(l, 3, "x.b.org", 8080), 1);
	cr_expect_eq(egress_match(l, 3, "x.b.org", 443), -1);
	cr_expect_eq(egress_match(l, 3, "c.org", 1), 2);
	cr_expect_eq(egress_match(l, 3, "c.org", 65535), 2);
	cr_expect_eq(egress_match(l, 3, "c.org", 0), -1);
	cr_expect_eq(egress_match(l, 3, "c.org", 65536), -1);
}

Test(egress, matches_the_first_entry_that_allows)
{
	struct egress_pattern l[] = {pat("a.org:1"), pat("*.org"), pat("*")};

	cr_expect_eq(egress_match(l, 3, "a.org", 1), 0);
	cr_expect_eq(egress_match(l, 3, "a.org", 2), 1);
	cr_expect_eq(egress_match(l, 3, "a.com", 2), 2);
}

Test(egress, matches_any_host_but_not_junk)
{
	struct egress_pattern l[] = {pat("*")};

	cr_expect_eq(egress_match(l, 1, "anything.example", 1), 0);
	cr_expect_eq(egress_match(l, 1, "192.0.2.1", 1), 0);
	cr_expect_eq(egress_match(l, 1, "::1", 1), 0);
	cr_expect_eq(egress_match(l, 1, "", 1), -1);
	cr_expect_eq(egress_match(l, 1, "a b", 1), -1);
	cr_expect_eq(egress_match(l, 1, "127.1", 1), -1);
	cr_expect_eq(egress_match(l, 1, "*", 1), -1);
}

Test(egress, matches_addresses_by_value_never_by_name)
{
	struct egress_pattern l[] = {
	    pat("192.0.2.1"), pat("[2001:db8::1]:443")};

	cr_expect_eq(egress_match(l, 2, "192.0.2.1", 80), 0);
	cr_expect_eq(egress_match(l, 2, "192.0.2.2", 80), -1);
	cr_expect_eq(egress_match(l, 2, "2001:db8::1", 443), 1);
	cr_expect_eq(egress_match(l, 2, "[2001:DB8:0::1]", 443), 1);
	cr_expect_eq(egress_match(l, 2, "2001:db8::1", 80), -1);
	/* The same IPv4 address mapped into IPv6 is another host. */
	cr_expect_eq(egress_match(l, 2, "::ffff:192.0.2.1", 80), -1);
}

Test(egress, suffix_patterns_never_match_addresses)
{
	struct egress_pattern p;
	char err[256];

	/* "*.2.1" cannot be written; "*.org" does not match an address. */
	cr_expect_eq(egress_pattern_parse("*.2.1", 5, &p, err, sizeof err), -1);
	p = pat("*.org");
	cr_expect_eq(egress_match(&p, 1, "1.2.3.4", 80), -1);
}

static int
covers(const char *op, const char *cl)
{
	struct egress_pattern a = pat(op), b = pat(cl);

	return egress_covers(&a, &b);
}

Test(egress, covers_names)
{
	cr_expect(covers("example.org", "example.org"));
	cr_expect(covers("example.org", "EXAMPLE.org."));
	cr_expect(covers("example.org", "example.org:1"));
	cr_expect(!covers("example.org", "a.example.org"));
	cr_expect(!covers("example.org", "*.example.org"));
	cr_expect(!covers("example.org", "*"));
	cr_expect(!covers("example.org", "example.com"));
}

Test(egress, covers_suffixes)
{
	cr_expect(covers("*.example.org", "a.example.org"));
	cr_expect(covers("*.example.org", "a.b.example.org"));
	cr_expect(covers("*.example.org", "*.example.org"));
	cr_expect(covers("*.example.org", "*.a.example.org"));
	cr_expect(covers("*.example.org", "*.a.example.org:443"));
	cr_expect(!covers("*.example.org", "example.org"));
	cr_expect(!covers("*.example.org", "*.org"));
	cr_expect(!covers("*.example.org", "*"));
	cr_expect(!covers("*.example.org", "xexample.org"));
	cr_expect(!covers("*.example.org", "*.xexample.org"));
	cr_expect(!covers("*.example.org", "192.0.2.1"));
	cr_expect(!covers("*.example.org", "[::1]"));
}

Test(egress, covers_ports)
{
	cr_expect(covers("a.org", "a.org:443"));
	cr_expect(covers("a.org:443", "a.org:443"));
	cr_expect(!covers("a.org:443", "a.org"));
	cr_expect(!covers("a.org:443", "a.org:80"));
	cr_expect(covers("*.a.org:443", "b.a.org:443"));
	cr_expect(!covers("*.a.org:443", "b.a.org"));
	cr_expect(covers("*:443", "anything.org:443"));
	cr_expect(!covers("*:443", "anything.org"));
	cr_expect(!covers("*:443", "*"));
}

Test(egress, any_covers_everything)
{
	cr_expect(covers("*", "*"));
	cr_expect(covers("*", "*:1"));
	cr_expect(covers("*", "a.org"));
	cr_expect(covers("*", "*.a.org"));
	cr_expect(covers("*", "192.0.2.1:80"));
	cr_expect(covers("*", "[::1]"));
	cr_expect(!covers("a.org", "*"));
	cr_expect(!covers("*.org", "*"));
}

Test(egress, covers_addresses)
{
	cr_expect(covers("192.0.2.1", "192.0.2.1"));
	cr_expect(covers("192.0.2.1", "192.0.2.1:80"));
	cr_expect(!covers("192.0.2.1", "192.0.2.2"));
	cr_expect(!covers("192.0.2.1", "[::ffff:192.0.2.1]"));
	cr_expect(covers("[2001:db8::1]", "[2001:db8:0::1]:443"));
	cr_expect(!covers("[2001:db8::1]", "[2001:db8::2]"));
	cr_expect(!covers("192.0.2.1", "a.org"));
}

/* The reason sa is refused (a static buffer), or NULL. */
static const char *
why(const char *addr, const struct egress_addr *allow, size_t n)
{
	static char buf[EGRESS_REASON_MAX];
	struct sockaddr_in6 s6;
	struct sockaddr_in s4;

	memset(&s4, 0, sizeof s4);
	memset(&s6, 0, sizeof s6);
	if (inet_pton(AF_INET, addr, &s4.sin_addr) == 1) {
		s4.sin_family = AF_INET;
		return egress_addr_refused(
		    (struct sockaddr *)&s4, allow, n, buf, sizeof buf);
	}
	cr_assert_eq(inet_pton(AF_INET6, addr, &s6.sin6_addr), 1, "%s", addr);
	s6.sin6_family = AF_INET6;
	return egress_addr_refused(
	    (struct sockaddr *)&s6, allow, n, buf, sizeof buf);
}

static void
expect_refused(const char *addr, const char *reason)
{
	const char *r = why(addr, NULL, 0);

	cr_expect(r != NULL, "%s allowed", addr);
	if (r != NULL)
		cr_expect_str_eq(r, reason);
}

static void
expect_allowed(const char *addr)
{
	const char *r = why(addr, NULL, 0);

	cr_expect(r == NULL, "%s refused: %s", addr, r);
}

Test(egress, refuses_ipv4_ranges)
{
	expect_refused("0.0.0.0", "0.0.0.0 is a \"this network\" address");
	expect_refused(
	    "0.255.255.255", "0.255.255.255 is a \"this network\" address");
	expect_refused("10.0.0.1", "10.0.0.1 is a private address");
	expect_refused("10.255.255.255", "10.255.255.255 is a private address");
	expect_refused(
	    "100.64.0.1", "100.64.0.1 is a shared (carrier-grade NAT) address");
	expect_refused("100.127.255.255",
	    "100.127.255.255 is a shared (carrier-grade NAT) address");
	expect_refused("127.0.0.1", "127.0.0.1 is a loopback address");
	expect_refused("127.255.0.1", "127.255.0.1 is a loopback address");
	expect_refused(
	    "169.254.169.254", "169.254.169.254 is a link-local address");
	expect_refused("172.16.0.1", "172.16.0.1 is a private address");
	expect_refused("172.31.255.255", "172.31.255.255 is a private address");
	expect_refused(
	    "192.0.0.8", "192.0.0.8 is an IETF protocol assignment address");
	expect_refused("192.168.1.1", "192.168.1.1 is a private address");
	expect_refused("198.18.0.1", "198.18.0.1 is a benchmarking address");
	expect_refused(
	    "198.19.255.255", "198.19.255.255 is a benchmarking address");
	expect_refused("224.0.0.1", "224.0.0.1 is a multicast address");
	expect_refused(
	    "239.255.255.250", "239.255.255.250 is a multicast address");
	expect_refused("240.0.0.1", "240.0.0.1 is a reserved address");
	expect_refused(
	    "255.255.255.254", "255.255.255.254 is a reserved address");
	expect_refused(
	    "255.255.255.255", "255.255.255.255 is the broadcast address");
	expect_refused("192.0.2.1", "192.0.2.1 is a documentation address");
	expect_refused(
	    "198.51.100.255", "198.51.100.255 is a documentation address");
	expect_refused("203.0.113.0", "203.0.113.0 is a documentation address");
}

Test(egress, allows_ipv4_next_to_the_ranges)
{
	expect_allowed("1.0.0.0");
	expect_allowed("8.8.8.8");
	expect_allowed("9.255.255.255");
	expect_allowed("11.0.0.0");
	expect_allowed("100.63.255.255");
	expect_allowed("100.128.0.0");
	expect_allowed("126.255.255.255");
	expect_allowed("128.0.0.0");
	expect_allowed("169.253.255.255");
	expect_allowed("169.255.0.0");
	expect_allowed("172.15.255.255");
	expect_allowed("172.32.0.0");
	expect_allowed("191.255.255.255");
	expect_allowed("192.0.1.0");
	expect_allowed("192.0.3.0");
	expect_allowed("198.51.99.255");
	expect_allowed("198.51.101.0");
	expect_allowed("203.0.112.255");
	expect_allowed("203.0.114.0");
	expect_allowed("192.167.255.255");
	expect_allowed("192.169.0.0");
	expect_allowed("198.17.255.255");
	expect_allowed("198.20.0.0");
	expect_allowed("223.255.255.255");
}

Test(egress, refuses_ipv6_ranges)
{
	expect_refused("::", ":: is the unspecified address");
	expect_refused("::1", "::1 is a loopback address");
	expect_refused("fe80::1", "fe80::1 is a link-local address");
	expect_refused("febf:ffff::1", "febf:ffff::1 is a link-local address");
	expect_refused("fec0::1", "fec0::1 is a site-local address");
	expect_refused(
	    "fc00::1", "fc00::1 is a unique local (private) address");
	expect_refused(
	    "fd12:3456::1", "fd12:3456::1 is a unique local (private) address");
	expect_refused("ff02::1", "ff02::1 is a multicast address");
	expect_refused("ff0e::1", "ff0e::1 is a multicast address");
	expect_refused("2001:db8::1", "2001:db8::1 is a documentation address");
	expect_refused("2001:db8:ffff:ffff::1",
	    "2001:db8:ffff:ffff::1 is a documentation address");
	expect_allowed("2001:db7:ffff::1");
	expect_allowed("2001:db9::1");
	expect_allowed("2606:4700::1111");
	expect_allowed("fbff::1");
	expect_allowed("fe7f::1");
	expect_allowed("::2:0:0:1");
}

Test(egress, judges_embedded_ipv4_by_itself)
{
	expect_refused("::ffff:127.0.0.1",
	    "::ffff:127.0.0.1 embeds 127.0.0.1, a loopback address");
	expect_refused("::ffff:10.1.2.3",
	    "::ffff:10.1.2.3 embeds 10.1.2.3, a private address");
	expect_refused("::ffff:0.0.0.0",
	    "::ffff:0.0.0.0 embeds 0.0.0.0, a \"this network\" address");
	expect_allowed("::ffff:8.8.8.8");
	/* IPv4-compatible (::a.b.c.d). */
	expect_refused(
	    "::127.0.0.1", "::127.0.0.1 embeds 127.0.0.1, a loopback address");
	expect_refused("::192.168.0.1",
	    "::192.168.0.1 embeds 192.168.0.1, a private address");
	expect_refused("::2", "::2 embeds 0.0.0.2, a \"this network\" address");
	expect_allowed("::8.8.8.8");
	/* NAT64. */
	expect_refused("64:ff9b::7f00:1",
	    "64:ff9b::7f00:1 embeds 127.0.0.1, a loopback address");
	expect_refused("64:ff9b::a9fe:a9fe",
	    "64:ff9b::a9fe:a9fe embeds 169.254.169.254, a link-local address");
	expect_allowed("64:ff9b::808:808");
	expect_allowed("64:ff9b:1::a00:1");
	/* 6to4. */
	expect_refused("2002:7f00:1::1",
	    "2002:7f00:1::1 embeds 127.0.0.1, a loopback address");
	expect_refused("2002:c0a8:101::",
	    "2002:c0a8:101:: embeds 192.168.1.1, a private address");
	expect_allowed("2002:808:808::1");
}

Test(egress, allowed_addresses_override_for_themselves_only)
{
	struct egress_addr a[3];
	char err[256];

	cr_assert_eq(egress_addr_parse("127.0.0.1", &a[0], err, sizeof err), 0);
	cr_assert_eq(egress_addr_parse("::1", &a[1], err, sizeof err), 0);
	cr_assert_eq(egress_addr_parse("[fd00::5]", &a[2], err, sizeof err), 0);
	cr_expect_eq(a[0].family, AF_INET);
	cr_expect_eq(a[1].family, AF_INET6);
	cr_expect(why("127.0.0.1", a, 3) == NULL);
	cr_expect(why("::1", a, 3) == NULL);
	cr_expect(why("fd00::5", a, 3) == NULL);
	cr_expect_str_eq(
	    why("127.0.0.2", a, 3), "127.0.0.2 is a loopback address");
	cr_expect(why("::ffff:127.0.0.1", a, 3) != NULL);
	cr_expect(why("fd00::6", a, 3) != NULL);
	cr_expect(why("10.0.0.1", a, 3) != NULL);
	cr_expect(why("8.8.8.8", a, 3) == NULL);
	cr_expect(why("127.0.0.1", a, 0) != NULL);
}

Test(egress, parses_exact_addresses_strictly)
{
	struct egress_addr a;
	char err[256] = "";

	cr_expect_eq(egress_addr_parse("localhost", &a, err, sizeof err), -1);
	cr_expect_str_eq(err, "\"localhost\": not an IPv4 or IPv6 address");
	cr_expect_eq(egress_addr_parse("127.1", &a, err, sizeof err), -1);
	cr_expect_eq(egress_addr_parse("10.0.0.0/8", &a, err, sizeof err), -1);
	cr_expect_eq(egress_addr_parse("", &a, err, sizeof err), -1);
	cr_expect_eq(egress_addr_parse("[127.0.0.1]", &a, err, sizeof err), -1);
	cr_expect_eq(egress_addr_parse("[::1", &a, err, sizeof err), -1);
	cr_expect_eq(egress_addr_parse("::1%lo", &a, err, sizeof err), -1);
}

Test(egress, matches_exact_addresses)
{
	struct egress_addr a[2];
	struct sockaddr_in s4;
	struct sockaddr_in6 s6;

	egress_addr_parse("192.0.2.7", &a[0], NULL, 0);
	egress_addr_parse("2001:db8::7", &a[1], NULL, 0);
	memset(&s4, 0, sizeof s4);
	s4.sin_family = AF_INET;
	inet_pton(AF_INET, "192.0.2.7", &s4.sin_addr);
	cr_expect_eq(egress_addr_match((struct sockaddr *)&s4, a, 2), 0);
	memset(&s6, 0, sizeof s6);
	s6.sin6_family = AF_INET6;
	inet_pton(AF_INET6, "2001:db8::7", &s6.sin6_addr);
	cr_expect_eq(egress_addr_match((struct sockaddr *)&s6, a, 2), 1);
	inet_pton(AF_INET6, "::ffff:192.0.2.7", &s6.sin6_addr);
	cr_expect_eq(egress_addr_match((struct sockaddr *)&s6, a, 2), -1);
}

Test(egress, refuses_other_families)
{
	struct sockaddr sa;
	char buf[EGRESS_REASON_MAX];

	memset(&sa, 0, sizeof sa);
	sa.sa_family = AF_UNIX;
	cr_expect(egress_addr_refused(&sa, NULL, 0, buf, sizeof buf) != NULL);
	cr_expect(strstr(buf, "not an Internet address") != NULL, "%s", buf);
	cr_expect_eq(egress_addr_match(&sa, NULL, 0), -1);
}

Test(egress, reasons_fit_the_advertised_room)
{
	char buf[EGRESS_REASON_MAX + 64];
	struct sockaddr_in6 s6;

	memset(&s6, 0, sizeof s6);
	s6.sin6_family = AF_INET6;
	inet_pton(
	    AF_INET6, "2002:6440:1:ffff:ffff:ffff:ffff:ffff", &s6.sin6_addr);
	cr_assert(egress_addr_refused((struct sockaddr *)&s6, NULL, 0, buf,
	              sizeof buf) != NULL);
	cr_expect_lt(
	    strlen(buf), EGRESS_REASON_MAX, "%zu: %s", strlen(buf), buf);
}

/* A socket address of addr (IPv4 or IPv6 text), port given. */
static struct sockaddr_storage
sa_of(const char *addr, int port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof ss);
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
	} else {
		cr_assert_eq(inet_pton(AF_INET6, addr, &s6->sin6_addr), 1);
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
	}
	return ss;
}

static int
same(const char *a, int pa, const char *b, int pb)
{
	struct sockaddr_storage x = sa_of(a, pa), y = sa_of(b, pb);

	return egress_addr_same((struct sockaddr *)&x, (struct sockaddr *)&y);
}

/* One address whatever the ports, and an IPv4 one whatever its form. */
Test(egress, same_address_is_by_value)
{
	cr_expect(same("192.0.2.2", 1, "192.0.2.2", 2));
	cr_expect(same("192.0.2.2", 1, "::ffff:192.0.2.2", 80));
	cr_expect(same("::ffff:10.0.0.1", 1, "10.0.0.1", 1));
	cr_expect(same("fd00::2", 1, "fd00::2", 9));
	cr_expect(!same("192.0.2.2", 1, "192.0.2.3", 1));
	cr_expect(!same("::1", 1, "127.0.0.1", 1));
	cr_expect(!same("::192.0.2.2", 1, "192.0.2.2", 1));
	cr_expect(!same("fd00::2", 1, "fd00::3", 1));
}
