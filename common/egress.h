/*
 * The egress allowlist: which hosts and ports a sandbox may reach
 * through the worker's proxy, and which addresses it may never reach.
 */
#ifndef EGRESS_H
#define EGRESS_H

#include <sys/socket.h>

#include <stddef.h>

/* The longest host name, without its trailing dot (RFC 1035). */
#define EGRESS_NAME_MAX 253
/* The room egress_pattern_format() needs at most ("*." NAME ":65535"). */
#define EGRESS_PATTERN_TEXT_MAX (EGRESS_NAME_MAX + 9)
/* The room a reason of egress_addr_refused() needs at most. */
#define EGRESS_REASON_MAX 128

enum egress_kind {
	EGRESS_ANY, /* "*": any host */
	EGRESS_NAME, /* "example.org" */
	EGRESS_SUFFIX, /* "*.example.org": names under it, not itself */
	EGRESS_IPV4, /* "192.0.2.1" */
	EGRESS_IPV6, /* "[2001:db8::1]" */
};

/*
 * One pattern, or one host as a client names it.  host is lowercase,
 * without a trailing dot or brackets: the name, the suffix after "*."
 * or the address in its canonical text; "*" for EGRESS_ANY.
 */
struct egress_pattern {
	enum egress_kind kind;
	char host[EGRESS_NAME_MAX + 1];
	unsigned char addr[16]; /* EGRESS_IPV4: 4 bytes, EGRESS_IPV6: 16 */
	unsigned int port; /* 0: any port */
};

/* An exact address the operator allows (--egress-allow-address). */
struct egress_addr {
	int family; /* AF_INET or AF_INET6 */
	unsigned char addr[16];
};

/*
 * A pattern of len bytes ("host", "*.suffix" or "*", with ":port" of 1 to
 * 65535 or not; an IPv6 address in brackets): 0 and *p filled, or -1 with
 * why in err.  A name is of LDH labels of 1 to 63 bytes, at most 253 in
 * all; a NUL, a "*" past the first label and a name ending in a number
 * that is not an IPv4 address are refused.
 */
int egress_pattern_parse(
    const char *, size_t, struct egress_pattern *, char *, size_t);
/*
 * A host as a client names it (no "*", no port; an IPv6 address with or
 * without brackets), into *p with port 0: 0, or -1 with why in err.
 */
int egress_host_parse(
    const char *, size_t, struct egress_pattern *, char *, size_t);
/*
 * The first of n patterns that allows host (as egress_host_parse() takes
 * it, NUL-terminated) on port: its index, or -1 when none does or host is
 * not a host.  A name pattern never matches an address, nor the reverse.
 */
int egress_match(
    const struct egress_pattern *, size_t, const char *, unsigned int);
/*
 * Whether the operator's pattern (the first) allows everything that the
 * client's (the second) does: 1 or 0.
 */
int egress_covers(const struct egress_pattern *, const struct egress_pattern *);
/*
 * A pattern as text into buf of len bytes, as egress_pattern_parse()
 * takes it back ("[::1]:443"); EGRESS_PATTERN_TEXT_MAX is enough.
 */
void egress_pattern_format(const struct egress_pattern *, char *, size_t);

/* An exact address ("127.0.0.1", "::1" or "[::1]"): 0, or -1 with why. */
int egress_addr_parse(const char *, struct egress_addr *, char *, size_t);
/* Whether two socket addresses are one address (ports aside; an IPv4
 * address and the IPv6 address that maps it are one). */
int egress_addr_same(const struct sockaddr *, const struct sockaddr *);
/* Whether sa is this host whatever its interfaces: loopback (127.0.0.0/8,
 * ::1) or unspecified (0.0.0.0, ::), IPv4 ones mapped or not. */
int egress_addr_loopback(const struct sockaddr *);
/* The index of the first of n addresses that is exactly sa's, or -1. */
int egress_addr_match(
    const struct sockaddr *, const struct egress_addr *, size_t);
/*
 * Why the proxy may not connect to sa ("127.0.0.1 is a loopback
 * address", written into buf of len bytes, EGRESS_REASON_MAX is enough),
 * or NULL when it may: an address that is loopback, private, link-local,
 * multicast, reserved, for documentation or otherwise not on the
 * Internet is refused, and an IPv6 address that embeds an IPv4 one
 * (mapped, compatible, NAT64, 6to4) is judged by that one; one of the n
 * allowed addresses never is.
 */
const char *egress_addr_refused(const struct sockaddr *,
    const struct egress_addr *, size_t, char *, size_t);

/* A port: decimal digits, no leading zero, 1 to 65535.  0 and *port, or
 * -1.  (The HTTP head parser's ports are read the same way.) */
int egress_port_parse(const char *, size_t, unsigned int *);

#endif
