/*
 * Adversarial: the egress proxy never reaches the host it runs on.
 *
 * A service of the host bound to the wildcard address answers on every
 * address of the host, loopback or not.  With every host allowed ("*"),
 * a sandbox asks for it through each address of each interface and
 * through a name that resolves to one: every request is refused with its
 * reason ("an address of this host", or for loopback "a loopback
 * address"), and the service never sees a connection.  An address the
 * operator allows exactly (--egress-allow-address) is reached.
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "adv.h"

/* A host service on the wildcard address (IPv6, and IPv4 through it):
 * answers 200 to whoever connects, and counts them. */
struct service {
	int fd, port, stop;
	int accepted;
	pthread_t thread;
};

static void *
serve(void *arg)
{
	static const char answer[] =
	    "HTTP/1.0 200 OK\r\nContent-Length: 13\r\n\r\nhost service\n";
	struct service *sv = arg;
	char buf[4096];
	int c;

	while (!sv->stop) {
		if ((c = accept(sv->fd, NULL, NULL)) == -1)
			continue;
		__atomic_add_fetch(&sv->accepted, 1, __ATOMIC_SEQ_CST);
		if (read(c, buf, sizeof buf) > 0 &&
		    write(c, answer, sizeof answer - 1) < 0)
			(void)0;
		close(c);
	}
	return NULL;
}

static void
service_start(struct service *sv)
{
	struct sockaddr_in6 a;
	socklen_t len = sizeof a;
	int off = 0, on = 1;

	memset(sv, 0, sizeof *sv);
	sv->fd = socket(AF_INET6, SOCK_STREAM, 0);
	cr_assert_geq(sv->fd, 0);
	setsockopt(sv->fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
	setsockopt(sv->fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
	memset(&a, 0, sizeof a);
	a.sin6_family = AF_INET6;
	a.sin6_addr = in6addr_any;
	cr_assert_eq(bind(sv->fd, (struct sockaddr *)&a, sizeof a), 0);
	cr_assert_eq(listen(sv->fd, 16), 0);
	cr_assert_eq(getsockname(sv->fd, (struct sockaddr *)&a, &len), 0);
	sv->port = ntohs(a.sin6_port);
	cr_assert_eq(pthread_create(&sv->thread, NULL, serve, sv), 0);
}

static void
service_stop(struct service *sv)
{
	sv->stop = 1;
	shutdown(sv->fd, SHUT_RDWR);
	pthread_join(sv->thread, NULL);
	close(sv->fd);
}

/* Python in the sandbox asking for url through the proxy (also for the
 * names NO_PROXY keeps in the sandbox): the status and body, or "HTTP
 * 403: <the proxy's reason>". */
#define FETCH                                                                  \
	"env -u NO_PROXY -u no_proxy python3 - <<'EOF'\n"                      \
	"import sys, urllib.request, urllib.error\n"                           \
	"try:\n"                                                               \
	"    r = urllib.request.urlopen('%s', timeout=60)\n"                   \
	"    sys.stdout.write('%%d: %%s' %% (r.status, r.read().decode()))\n"  \
	"except urllib.error.HTTPError as e:\n"                                \
	"    print('HTTP %%d: %%s' %% (e.code, e.read().decode().strip()))\n"  \
	"EOF"

static char *
fetch(struct h_server *s, const char *cid, const char *url)
{
	char cmd[1024];
	json_object *r;
	char *out;

	snprintf(cmd, sizeof cmd, FETCH, url);
	r = adv_exec(s, cid, cmd, NULL, 90, NULL);
	out = strdup(adv_out(r));
	json_object_put(r);
	return out;
}

/* url is refused by the proxy with a 403 that says why. */
static void
expect_refused(
    struct h_server *s, const char *cid, const char *url, const char *why)
{
	char *out = fetch(s, cid, url);

	cr_expect(h_contains(out, "HTTP 403: "), "%s: %s", url, out);
	cr_expect(h_contains(out, why), "%s: %s (not \"%s\")", url, out, why);
	free(out);
}

/* The URL of the service at an address of the host (text). */
static void
url_of(char *url, size_t len, int family, const char *addr, int port)
{
	if (family == AF_INET6)
		snprintf(url, len, "http://[%s]:%d/", addr, port);
	else
		snprintf(url, len, "http://%s:%d/", addr, port);
}

Test(egress, the_host_itself_is_never_reached, .timeout = 300)
{
	struct service sv;
	struct h_server *s;
	struct ifaddrs *ifa, *i;
	char addr[INET6_ADDRSTRLEN], url[128], want[160], *cid, *out;
	char tried[16][INET6_ADDRSTRLEN];
	const void *b;
	int n = 0, k, family, global = -1;

	service_start(&sv);
	s = adv_start("--agent", "on", "--egress-allow", "*", NULL);
	cid = h_create(s, "{\"egress\":[\"*\"]}");
	cr_assert_eq(getifaddrs(&ifa), 0);
	for (i = ifa; i != NULL && n < 16; i = i->ifa_next) {
		if (i->ifa_addr == NULL || !(i->ifa_flags & IFF_UP))
			continue;
		family = i->ifa_addr->sa_family;
		if (family == AF_INET)
			b = &((struct sockaddr_in *)(void *)i->ifa_addr)
			         ->sin_addr;
		else if (family == AF_INET6) {
			b = &((struct sockaddr_in6 *)(void *)i->ifa_addr)
			         ->sin6_addr;
			/* A link-local address needs a zone: no URL has one. */
			if (IN6_IS_ADDR_LINKLOCAL((const struct in6_addr *)b))
				continue;
		} else
			continue;
		inet_ntop(family, b, addr, sizeof addr);
		for (k = 0; k < n && strcmp(tried[k], addr) != 0; k++)
			;
		if (k < n)
			continue;
		snprintf(tried[n++], sizeof tried[0], "%s", addr);
		if (family == AF_INET && strncmp(addr, "127.", 4) != 0)
			global = n - 1;
		url_of(url, sizeof url, family, addr, sv.port);
		/* Loopback ones are refused as that. */
		snprintf(want, sizeof want, "%s is %s", addr,
		    strcmp(addr, "::1") == 0 || strncmp(addr, "127.", 4) == 0
		        ? "a loopback address"
		        : "an address of this host");
		expect_refused(s, cid, url, want);
	}
	freeifaddrs(ifa);
	cr_assert_geq(n, 2, "the host has %d addresses", n);
	/* A name that resolves to the host. */
	snprintf(url, sizeof url, "http://localhost:%d/", sv.port);
	expect_refused(s, cid, url, "127.0.0.1 is a loopback address");
	cr_expect_eq(__atomic_load_n(&sv.accepted, __ATOMIC_SEQ_CST), 0,
	    "the host's service saw %d connections", sv.accepted);
	h_stop(s, cid);
	free(cid);
	adv_finish(s);

	/* The operator's exact allowance is the way to a host service. */
	if (global >= 0) {
		s = adv_start("--agent", "on", "--egress-allow", "*",
		    "--egress-allow-address", tried[global], NULL);
		cid = h_create(s, "{\"egress\":[\"*\"]}");
		url_of(url, sizeof url, AF_INET, tried[global], sv.port);
		out = fetch(s, cid, url);
		cr_expect_str_eq(out, "200: host service\n", "%s", url);
		free(out);
		h_stop(s, cid);
		free(cid);
		adv_finish(s);
	}
	service_stop(&sv);
}

/*
 * Whatever the operator allows, the proxy never connects to a listener
 * of this server: one tenant's sandbox does not reach another's exposed
 * port, nor the server's own HTTP port, through 127.0.0.1 allowed
 * exactly; a host service there is reached.
 */
Test(egress, own_listeners_are_never_reached, .timeout = 300)
{
	struct service sv;
	struct h_server *s;
	json_object *r;
	char listen[32], args[256], url[128], *a, *b, *out;
	long long host_port;
	int http;

	service_start(&sv);
	http = h_free_port();
	snprintf(listen, sizeof listen, "127.0.0.1:%d", http);
	s = adv_start("--agent", "on", "--transport", "both", "--listen",
	    listen, "--egress-allow", "*", "--egress-allow-address",
	    "127.0.0.1", NULL);
	/* Tenant A serves on a port exposed on the host. */
	a = h_create(s, NULL);
	adv_background(
	    s, a, "exec python3 -m http.server 8000 --bind 127.0.0.1", 240);
	free(h_exec_ok(s, a,
	    "for i in $(seq 100); do python3 -c 'import socket; "
	    "socket.create_connection((\"127.0.0.1\", 8000))' 2>/dev/null "
	    "&& exit 0; sleep 0.1; done; exit 1"));
	snprintf(
	    args, sizeof args, "{\"container_id\":\"%s\",\"port\":8000}", a);
	r = h_call_tool(s, "sandbox_expose_port", args);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	host_port = h_int(r, "structuredContent.host_port");
	json_object_put(r);

	/* Tenant B may go anywhere, 127.0.0.1 included. */
	b = h_create(s, "{\"egress\":[\"*\"]}");
	snprintf(url, sizeof url, "http://127.0.0.1:%d/", sv.port);
	out = fetch(s, b, url);
	cr_expect_str_eq(out, "200: host service\n", "%s", url);
	free(out);
	snprintf(url, sizeof url, "http://127.0.0.1:%lld/", host_port);
	expect_refused(s, b, url, "is a listener of this server");
	snprintf(url, sizeof url, "http://localhost:%d/mcp", http);
	expect_refused(s, b, url, "is a listener of this server");
	h_stop(s, b);
	h_stop(s, a);
	free(a);
	free(b);
	adv_finish(s);
	service_stop(&sv);
}
