/*
 * The egress proxy: the sandbox has no network, yet its commands reach
 * the hosts of its allowlist (proto.h's "egress") through the worker.
 *
 * The agent listens on the sandbox's 127.0.0.1 (PROTO_EGRESS_PORT, else
 * a free port) once the list is not empty, and commands get HTTP_PROXY
 * and its kin pointing there.  Each connection is ACCEPTed to the worker,
 * which reads its first request's head (HTTPHEAD_MAX bytes at most,
 * within PROXY_HEAD_SECONDS): a CONNECT host:port or an absolute
 * http:// URI.  The host and port must match the list (egress_match());
 * the name is resolved here, on the host, and an address of the host
 * itself (an interface's, now: a service bound to the wildcard address
 * answers there; checked again once connected) or one that is loopback,
 * private, link-local, for documentation and so on is refused
 * (px_addr_refused(), egress_addr_refused()) unless the operator allows
 * it exactly (--egress-allow-address).  Then the worker connects and relays,
 * with the relay's windows (relay.c): a CONNECT is answered 200 and becomes a
 * tunnel; a plain request goes on with its head written anew for the
 * origin (httphead_rewrite(), "Connection: close").  A refusal is an
 * HTTP answer inside the sandbox (403 with the reason, or 400, 408, 431,
 * 502, 504), never a silent drop.
 *
 * Each connection leaves a record (host, port, verdict, bytes): results
 * of the calls that ran while it opened list them (proxy_result()), the
 * activity log has a line and the supervisor a PROTO_NOTIFY when it
 * ends.
 */
#include <sys/queue.h>
#include <sys/socket.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

#include "agentwire.h"
#include "config.h"
#include "egress.h"
#include "httphead.h"
#include "listenreg.h"
#include "log.h"
#include "proto.h"
#include "relay-int.h"
#include "worker.h"
#include "xmalloc.h"

#define PROXY_HEAD_SECONDS 10 /* to send the first request's head */
#define PROXY_CONNECT_SECONDS 30 /* to resolve and connect */
#define PROXY_MAX_PATTERNS 64 /* the supervisor's own bound is lower */
#define PROXY_RECORDS 256 /* connections remembered for results */
#define PROXY_LISTEN_WAIT 10 /* s an egress call waits for the listener */

/* One connection, as results and the activity log tell it. */
struct pxrec {
	uint64_t seq; /* 0: unused */
	char host[HTTPHEAD_HOST_MAX + 1]; /* "" before a head named one */
	unsigned int port;
	int allowed;
	char reason[EGRESS_REASON_MAX + HTTPHEAD_HOST_MAX + 64];
	long long bytes_out, bytes_in; /* to the host, from it */
};

enum px_state {
	PX_HEAD, /* reading the first request's head */
	PX_RESOLVING,
	PX_CONNECTING,
	PX_REFUSED, /* the answer is on its way; closed once ACKed */
};

struct pxconn {
	enum px_state state;
	struct evbuffer *in; /* the sandbox's bytes, until through */
	struct event *timer;
	struct evdns_getaddrinfo_request *dns;
	struct httphead_target t;
	char *send; /* the head written anew for the origin, or NULL */
	size_t sendlen;
	struct pxrec rec; /* kept in recs once it ends */
};

static struct {
	struct worker *w;
	struct evdns_base *dns;
	struct egress_pattern pat[PROXY_MAX_PATTERNS];
	size_t npat;
	struct egress_addr addrs[CONFIG_MAX_LIST];
	size_t naddrs;
	int on; /* the list was set, and is not empty */
	int asked; /* LISTEN sent, LISTENING not yet come */
	uint32_t port; /* listened on in the sandbox; 0: not (yet) */
	struct pxrec recs[PROXY_RECORDS]; /* of those ended, by seq */
	uint64_t seq; /* of the last connection */
	/* The answer to the last egress call, held until the proxy listens
	 * (or cannot, or PROXY_LISTEN_WAIT passed): the sandbox's first
	 * command must find it there. */
	json_object *held;
	uint32_t held_req;
	struct event *held_timer;
} px;

static struct pxrec *
pxrec_of(struct rconn *c)
{
	return &c->px->rec;
}

/* The record's bytes, as far as they came. */
static void
pxrec_sync(struct rconn *c)
{
	struct pxrec *r = pxrec_of(c);

	rconn_counts(c, &r->bytes_out, &r->bytes_in);
}

static void
pxconn_clear(struct rconn *c)
{
	struct pxconn *p = c->px;
	struct evdns_getaddrinfo_request *req;

	if ((req = p->dns) != NULL) {
		p->dns = NULL;
		evdns_getaddrinfo_cancel(req); /* its callback sees CANCEL */
	}
	if (p->timer != NULL) {
		event_free(p->timer);
		p->timer = NULL;
	}
	if (p->in != NULL) {
		evbuffer_free(p->in);
		p->in = NULL;
	}
	free(p->send);
	p->send = NULL;
}

/* The connection is gone (rconn_free()): its line, its notice. */
void
proxy_conn_end(struct rconn *c)
{
	struct pxrec *r;
	json_object *o;

	pxrec_sync(c);
	r = pxrec_of(c);
	px.recs[r->seq % PROXY_RECORDS] = *r;
	logs_addf("egress", "%s:%u: %s%s%s (%lld bytes out, %lld in%s)",
	    r->host[0] != '\0' ? r->host : "(no host)", r->port,
	    r->allowed ? "allowed" : "refused",
	    r->reason[0] != '\0' ? ": " : "", r->reason, r->bytes_out,
	    r->bytes_in, c->sfd != -1 ? ", its socket passed" : "");
	o = json_object_new_object();
	json_object_object_add(o, "event", json_object_new_string("egress"));
	json_object_object_add(o, "host", json_object_new_string(r->host));
	json_object_object_add(o, "port", json_object_new_int((int)r->port));
	json_object_object_add(
	    o, "allowed", json_object_new_boolean(r->allowed));
	if (r->reason[0] != '\0')
		json_object_object_add(
		    o, "reason", json_object_new_string(r->reason));
	json_object_object_add(
	    o, "bytes_out", json_object_new_int64(r->bytes_out));
	json_object_object_add(
	    o, "bytes_in", json_object_new_int64(r->bytes_in));
	if (px.w->chan != NULL)
		worker_send_json(px.w, PROTO_NOTIFY, 0, o);
	json_object_put(o);
	pxconn_clear(c);
	free(c->px);
	c->px = NULL;
}

/*
 * Answers the sandbox with status and why, and closes once the agent
 * has written it (proxy_acked()); nothing went to any host.
 */
static void px_refuse(struct rconn *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void
px_refuse(struct rconn *c, int status, const char *fmt, ...)
{
	struct pxconn *p = c->px;
	struct pxrec *r;
	char text[sizeof r->reason];
	va_list ap;
	size_t len = 0;
	char *resp;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	r = pxrec_of(c);
	r->allowed = 0;
	/* The sandbox is told who speaks; a result knows. */
	snprintf(r->reason, sizeof r->reason, "%s",
	    strncmp(text, "egress: ", 8) == 0 ? text + 8 : text);
	pxconn_clear(c);
	p->state = PX_REFUSED;
	resp = httphead_response(status, text, &len);
	if (resp == NULL || rconn_send_data(c, resp, len, 1) == -1) {
		free(resp);
		rconn_free(c, "refused");
		return;
	}
	free(resp);
}

static void
px_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct rconn *c = arg;

	(void)fd;
	(void)what;
	if (c->px->state == PX_HEAD)
		px_refuse(c, 408, "egress: no request head within %d seconds",
		    PROXY_HEAD_SECONDS);
	else
		px_refuse(c, 504,
		    "egress: %s:%u did not answer within %d "
		    "seconds",
		    c->px->t.host, c->px->t.port, PROXY_CONNECT_SECONDS);
}

static void
px_arm(struct rconn *c, int seconds)
{
	struct timeval tv = {seconds, 0};

	evtimer_add(c->px->timer, &tv);
}

/* An ACCEPT: the sandbox opened a connection to the proxy. */
void
proxy_accept(uint32_t id)
{
	struct rconn *c;
	struct pxconn *p;

	if (relay->nconns >= RELAY_MAX_CONNS) {
		logs_addf("egress", "a connection refused: too many "
		                    "connections");
		relay_send_close(id, "too many connections");
		return;
	}
	if ((c = rconn_new(NULL, -1, id)) == NULL) {
		relay_send_close(id, "out of memory");
		return;
	}
	p = xcalloc(1, sizeof *p);
	c->px = p;
	p->state = PX_HEAD;
	p->in = evbuffer_new();
	p->timer = evtimer_new(px.w->base, px_timeout, c);
	if (p->in == NULL || p->timer == NULL) {
		rconn_free(c, "out of memory");
		return;
	}
	p->rec.seq = ++px.seq;
	px_arm(c, PROXY_HEAD_SECONDS);
}

/* The host's end connected: the head (or a 200) and the bytes after. */
static void
px_through(struct rconn *c)
{
	struct pxconn *p = c->px;
	struct bufferevent *bev = c->bev;
	const char *ok = HTTPHEAD_CONNECT_OK;

	if (p->t.connect) {
		if (rconn_send_data(c, ok, strlen(ok), 0) == -1) {
			rconn_free(c, "no room for the answer");
			return;
		}
	} else {
		c->noack += (long long)p->sendlen;
		bufferevent_write(bev, p->send, p->sendlen);
	}
	/* What came after the head is the agent's: ACKed once written. */
	bufferevent_write_buffer(bev, p->in);
	pxconn_clear(c);
	c->opened = 1;
	bufferevent_set_timeouts(bev, NULL, NULL);
	logs_addf("egress", "%s:%u: connected", p->t.host, p->t.port);
	rconn_pass(c);
	rconn_pump(c);
	if (c->eof_agent)
		rconn_written(c);
}

/* Whether sa is an address of an interface of this host now (-1: the
 * interfaces cannot be read). */
static int
px_host_address(const struct sockaddr *sa)
{
	struct ifaddrs *ifa, *i;
	int found = 0;

	if (getifaddrs(&ifa) == -1)
		return -1;
	for (i = ifa; i != NULL && !found; i = i->ifa_next)
		found =
		    i->ifa_addr != NULL && egress_addr_same(i->ifa_addr, sa);
	freeifaddrs(ifa);
	return found;
}

/*
 * Why the proxy may not connect to sa, port (into why), or NULL: a port
 * of this host that this server listens on never (its HTTP port, any
 * sandbox's exposed port: listenreg.h); an address the operator allows
 * exactly may be; else one of this host (its interfaces come and go:
 * read each time) never is, nor one egress_addr_refused() refuses.
 */
static const char *
px_addr_refused(
    const struct sockaddr *sa, unsigned int port, char *why, size_t len)
{
	char text[INET6_ADDRSTRLEN] = "?";
	const void *b;
	int loopback, host;

	/* Loopback is this host whatever the interfaces say; and it is
	 * refused as what it is (egress_addr_refused()'s reason). */
	loopback = egress_addr_loopback(sa);
	host = loopback ? 0 : px_host_address(sa);
	if ((loopback || host != 0) &&
	    listenreg_has(px.w->conf->worker_listeners, (int)port)) {
		snprintf(why, len,
		    "port %u of this host is a listener of this server", port);
		return why;
	}
	if (egress_addr_match(sa, px.addrs, px.naddrs) >= 0)
		return NULL;
	switch (host) {
	case 0:
		return egress_addr_refused(sa, px.addrs, px.naddrs, why, len);
	case 1:
		b = sa->sa_family == AF_INET
		        ? (const void *)&(
		              (const struct sockaddr_in *)(const void *)sa)
		              ->sin_addr
		        : (const void *)&(
		              (const struct sockaddr_in6 *)(const void *)sa)
		              ->sin6_addr;
		inet_ntop(sa->sa_family, b, text, sizeof text);
		snprintf(why, len, "%s is an address of this host", text);
		return why;
	default:
		snprintf(why, len, "the host's addresses cannot be read");
		return why;
	}
}

/*
 * Connected: where it landed is checked again (an interface may have
 * come meanwhile; and one reached through a route to this host has the
 * same address at both ends).  0 when it may go on; else refused, the
 * host's end shut, -1.
 */
static int
px_landed(struct rconn *c)
{
	struct sockaddr_storage peer, self;
	socklen_t plen = sizeof peer, slen = sizeof self;
	char why[EGRESS_REASON_MAX];
	const char *no;
	int fd = bufferevent_getfd(c->bev);

	memset(&peer, 0, sizeof peer);
	memset(&self, 0, sizeof self);
	if (getpeername(fd, (struct sockaddr *)&peer, &plen) == -1 ||
	    getsockname(fd, (struct sockaddr *)&self, &slen) == -1)
		no = "where the connection landed cannot be read";
	else if ((no = px_addr_refused((struct sockaddr *)&peer, c->px->t.port,
	              why, sizeof why)) == NULL &&
	         egress_addr_match(
	             (struct sockaddr *)&peer, px.addrs, px.naddrs) < 0 &&
	         egress_addr_same(
	             (struct sockaddr *)&peer, (struct sockaddr *)&self))
		no = "it landed on this host";
	if (no == NULL)
		return 0;
	bufferevent_disable(c->bev, EV_READ | EV_WRITE);
	shutdown(fd, SHUT_RDWR);
	px_refuse(c, 403, "egress: %s:%u is refused: %s", c->px->t.host,
	    c->px->t.port, no);
	return -1;
}

/* The host socket's events before it is through: 1 if handled here. */
int
proxy_event(struct rconn *c, short what)
{
	struct pxconn *p = c->px;

	if (c->opened)
		return 0;
	if (p->state == PX_CONNECTING && (what & BEV_EVENT_CONNECTED)) {
		if (px_landed(c) == 0)
			px_through(c);
		return 1;
	}
	if (p->state == PX_CONNECTING &&
	    (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF))) {
		px_refuse(c, 502, "egress: cannot connect to %s:%u: %s",
		    p->t.host, p->t.port,
		    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
		return 1;
	}
	return 1;
}

static void
px_resolved(int result, struct evutil_addrinfo *res, void *arg)
{
	struct rconn *c = arg;
	struct pxconn *p;
	struct evutil_addrinfo *ai, *pick = NULL;
	char why[EGRESS_REASON_MAX] = "", first[EGRESS_REASON_MAX] = "";
	int pass;

	if (result == EVUTIL_EAI_CANCEL) {
		/* Freed meanwhile (pxconn_clear()): c is not to be used. */
		if (res != NULL)
			evutil_freeaddrinfo(res);
		return;
	}
	p = c->px;
	p->dns = NULL;
	if (result != 0 || res == NULL) {
		px_refuse(c, 502, "egress: cannot resolve %s: %s", p->t.host,
		    evutil_gai_strerror(result));
		if (res != NULL)
			evutil_freeaddrinfo(res);
		return;
	}
	/* The first address that may be reached, IPv4 first. */
	for (pass = 0; pass < 2 && pick == NULL; pass++)
		for (ai = res; ai != NULL && pick == NULL; ai = ai->ai_next) {
			if (ai->ai_family != (pass == 0 ? AF_INET : AF_INET6))
				continue;
			if (px_addr_refused(ai->ai_addr, p->t.port, why,
			        sizeof why) == NULL)
				pick = ai;
			else if (first[0] == '\0')
				snprintf(first, sizeof first, "%s", why);
		}
	if (pick == NULL) {
		px_refuse(c, 403, "egress: %s is refused: %s", p->t.host,
		    first[0] != '\0' ? first : "no address of it is usable");
		evutil_freeaddrinfo(res);
		return;
	}
	if (pick->ai_family == AF_INET)
		((struct sockaddr_in *)pick->ai_addr)->sin_port =
		    htons((uint16_t)p->t.port);
	else
		((struct sockaddr_in6 *)pick->ai_addr)->sin6_port =
		    htons((uint16_t)p->t.port);
	p->state = PX_CONNECTING;
	if (bufferevent_socket_connect(
	        c->bev, pick->ai_addr, (int)pick->ai_addrlen) == -1) {
		evutil_freeaddrinfo(res);
		px_refuse(c, 502, "egress: cannot connect to %s:%u", p->t.host,
		    p->t.port);
		return;
	}
	evutil_freeaddrinfo(res);
}

/* The head is whole: where it goes, whether it may, and off it goes. */
static void
px_head(struct rconn *c, size_t end)
{
	struct pxconn *p = c->px;
	struct evutil_addrinfo hints;
	struct evdns_getaddrinfo_request *req;
	struct httphead *h;
	struct pxrec *r;
	char err[160];
	const char *data;

	data = (const char *)evbuffer_pullup(p->in, (ev_ssize_t)end);
	h = xmalloc(sizeof *h);
	if (data == NULL ||
	    httphead_parse(data, end, h, err, sizeof err) == -1 ||
	    httphead_proxy_target(h, &p->t, err, sizeof err) == -1) {
		free(h);
		px_refuse(c, 400, "egress: %s", data == NULL ? "no head" : err);
		return;
	}
	r = pxrec_of(c);
	snprintf(r->host, sizeof r->host, "%s", p->t.host);
	r->port = p->t.port;
	if (!p->t.connect) {
		p->send = httphead_rewrite(h, &p->t, NULL, &p->sendlen);
		if (p->send == NULL) {
			free(h);
			px_refuse(c, 400, "egress: the request cannot go on");
			return;
		}
	}
	free(h);
	/* The head is read: the agent may send as much again. */
	evbuffer_drain(p->in, end);
	c->unacked += (long long)end;
	rconn_ack(c, 1);
	if (!px.on) {
		px_refuse(c, 403,
		    "egress: this sandbox's egress is off "
		    "(sandbox_set_egress turns it on)");
		return;
	}
	if (egress_match(px.pat, px.npat, p->t.host, p->t.port) == -1) {
		px_refuse(c, 403,
		    "egress: %s%s%s:%u is not on this sandbox's egress "
		    "allowlist",
		    p->t.ipv6 ? "[" : "", p->t.host, p->t.ipv6 ? "]" : "",
		    p->t.port);
		return;
	}
	r->allowed = 1;
	if (px.dns == NULL &&
	    (px.dns = evdns_base_new(
	         px.w->base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
	                         EVDNS_BASE_DISABLE_WHEN_INACTIVE)) == NULL) {
		px_refuse(c, 502, "egress: no resolver on the host");
		return;
	}
	p->state = PX_RESOLVING;
	evtimer_del(p->timer);
	px_arm(c, PROXY_CONNECT_SECONDS);
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_protocol = IPPROTO_TCP;
	/* Answered at once (an address, /etc/hosts): c may be gone after. */
	req =
	    evdns_getaddrinfo(px.dns, p->t.host, NULL, &hints, px_resolved, c);
	if (req != NULL)
		p->dns = req;
}

/*
 * DATA of the agent before the connection is through (the window was
 * checked and counted by relay.c): 0, or -1 when it broke the protocol.
 */
int
proxy_data(struct rconn *c, const unsigned char *data, size_t len, int eof)
{
	struct pxconn *p = c->px;
	const char *buf;
	size_t n, end;

	if (eof)
		c->eof_agent = 1;
	if (p->state == PX_REFUSED) {
		/* The sandbox's rest, after the answer: dropped, ACKed. */
		c->unacked += (long long)len;
		rconn_ack(c, 1);
		if (eof)
			rconn_free(c, "");
		return 0;
	}
	if (len > 0)
		evbuffer_add(p->in, data, len);
	if (p->state != PX_HEAD)
		return 0;
	n = evbuffer_get_length(p->in);
	buf = (const char *)evbuffer_pullup(
	    p->in, (ev_ssize_t)(n < HTTPHEAD_MAX ? n : HTTPHEAD_MAX));
	end = buf != NULL
	          ? httphead_end(buf, n < HTTPHEAD_MAX ? n : HTTPHEAD_MAX)
	          : 0;
	if (end > 0)
		px_head(c, end);
	else if (n >= HTTPHEAD_MAX)
		px_refuse(c, 431, "egress: the request head is over %d bytes",
		    HTTPHEAD_MAX);
	else if (eof)
		px_refuse(c, 400,
		    "egress: the connection ended before its "
		    "request head did");
	return 0;
}

/* An ACK before it is through: 1 if handled (and maybe freed) here. */
int
proxy_acked(struct rconn *c)
{
	if (c->opened)
		return 0;
	/* The answer to a refusal is written in the sandbox: done. */
	if (c->px->state == PX_REFUSED && c->credit == AGENT_CONN_WINDOW)
		rconn_free(c, "");
	return 1;
}

/*
 * The held answer goes, with the port listened on now (0: none, or egress
 * off: a listener left from before answers every request 403 then).
 */
static void
px_answer_held(void)
{
	json_object *res = px.held;

	if (res == NULL)
		return;
	px.held = NULL;
	if (px.held_timer != NULL)
		evtimer_del(px.held_timer);
	json_object_object_add(
	    res, "proxy_port", json_object_new_int(px.on ? (int)px.port : 0));
	relay_answer(px.w, px.held_req, res);
}

static void
px_held_timeout(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	logs_addf("egress",
	    "the proxy did not listen in the sandbox within %d s",
	    PROXY_LISTEN_WAIT);
	px_answer_held();
}

static void
px_listen(void)
{
	unsigned char *m;
	size_t len = 0;

	if (!px.on || px.port != 0 || px.asked || !agent_ready(px.w))
		return;
	m = agent_msg_u32(AGENT_LISTEN, 0, PROTO_EGRESS_PORT, &len);
	if (agent_send_msg(px.w, m, len) == 0)
		px.asked = 1;
}

/* LISTENING: 0, or -1 when it was never asked for. */
int
proxy_listening(const unsigned char *p, size_t len, char *why, size_t whylen)
{
	char text[AGENT_MAX_ERROR + 1];
	uint32_t port;

	if (!px.asked || agent_listening_decode(p, len, &port, text) == -1) {
		snprintf(why, whylen, "a listener never asked for");
		return -1;
	}
	px.asked = 0;
	px.port = port;
	if (port == 0)
		logs_addf("egress",
		    "the proxy cannot listen in the sandbox: %s", text);
	else
		logs_addf("egress",
		    "the proxy listens on 127.0.0.1:%u in the "
		    "sandbox",
		    (unsigned)port);
	px_answer_held();
	return 0;
}

void
proxy_agent_ready(struct worker *w)
{
	(void)w;
	px_listen();
}

void
proxy_agent_lost(struct worker *w)
{
	(void)w;
	px.asked = 0;
	px.port = 0;
	px_answer_held();
}

/* "egress": the sandbox's allowlist, in place of the one before. */
void
proxy_call(struct worker *w, uint32_t reqid, json_object *call)
{
	struct egress_pattern pat[PROXY_MAX_PATTERNS];
	json_object *allow, *res, *list;
	char err[128];
	size_t i, n;

	if (!json_object_object_get_ex(call, "allow", &allow) ||
	    !json_object_is_type(allow, json_type_array) ||
	    (n = json_object_array_length(allow)) > PROXY_MAX_PATTERNS) {
		relay_error(w, reqid,
		    "egress: allow must be an array of at "
		    "most %d patterns",
		    PROXY_MAX_PATTERNS);
		return;
	}
	if (n > 0 && !w->conf->agent) {
		relay_error(w, reqid,
		    "egress needs the in-sandbox agent, which "
		    "is off on this server (--agent off)");
		return;
	}
	for (i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(allow, i);

		if (!json_object_is_type(v, json_type_string) ||
		    egress_pattern_parse(json_object_get_string(v),
		        (size_t)json_object_get_string_len(v), &pat[i], err,
		        sizeof err) == -1) {
			relay_error(w, reqid, "egress: entry %zu: %s", i,
			    json_object_is_type(v, json_type_string)
			        ? err
			        : "not a string");
			return;
		}
	}
	memcpy(px.pat, pat, n * sizeof pat[0]);
	px.npat = n;
	px.on = n > 0;
	list = json_object_new_array();
	for (i = 0; i < n; i++) {
		char text[EGRESS_PATTERN_TEXT_MAX];

		egress_pattern_format(&px.pat[i], text, sizeof text);
		json_object_array_add(list, json_object_new_string(text));
	}
	logs_addf("egress", "the allowlist is now %s",
	    n > 0 ? json_object_to_json_string_ext(list, JSON_C_TO_STRING_PLAIN)
	          : "empty: egress off");
	px_listen();
	res = json_object_new_object();
	json_object_object_add(res, "allow", list);
	/* An earlier call still held goes first, as it is. */
	px_answer_held();
	px.held = res;
	px.held_req = reqid;
	if (px.on && px.port == 0) {
		struct timeval tv = {PROXY_LISTEN_WAIT, 0};

		if (px.held_timer == NULL &&
		    (px.held_timer = evtimer_new(
		         w->base, px_held_timeout, NULL)) == NULL)
			fatalx("%s: evtimer_new", __func__);
		evtimer_add(px.held_timer, &tv);
		return;
	}
	px_answer_held();
}

void
proxy_start(struct worker *w)
{
	const struct config_list *l = &w->conf->egress_allow_addresses;
	char err[128];
	int i;

	memset(&px, 0, sizeof px);
	px.w = w;
	for (i = 0; i < l->n && px.naddrs < CONFIG_MAX_LIST; i++) {
		if (egress_addr_parse(
		        l->v[i], &px.addrs[px.naddrs], err, sizeof err) == -1) {
			log_warnx(
			    "--egress-allow-address %s: %s", l->v[i], err);
			continue;
		}
		px.naddrs++;
	}
}

void
proxy_stop(struct worker *w)
{
	(void)w;
	if (px.dns != NULL)
		evdns_base_free(px.dns, 1);
	px.dns = NULL;
	json_object_put(px.held);
	px.held = NULL;
	if (px.held_timer != NULL)
		event_free(px.held_timer);
	px.held_timer = NULL;
}

/*
 * The proxy's variables for a command (at most PROXY_ENV_MAX, malloc'd
 * strings) into env from *n on, while the sandbox has egress; but for
 * those the call's own (an object, or NULL) names.
 */
void
proxy_env(char **env, size_t *n, json_object *own)
{
	static const char *const names[] = {"HTTP_PROXY", "HTTPS_PROXY",
	    "http_proxy", "https_proxy", "npm_config_proxy",
	    "npm_config_https_proxy", "NO_PROXY", "no_proxy"};
	unsigned int port = px.port != 0 ? px.port : PROTO_EGRESS_PORT;
	size_t i;

	if (!px.on)
		return;
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (own != NULL &&
		    json_object_object_get_ex(own, names[i], NULL))
			continue;
		if (strcasecmp(names[i], "no_proxy") == 0)
			xasprintf(&env[(*n)++], "%s=localhost,127.0.0.1,::1",
			    names[i]);
		else
			xasprintf(&env[(*n)++], "%s=http://127.0.0.1:%u",
			    names[i], port);
	}
}

/* Where a call's egress starts: records after it are the call's. */
uint64_t
proxy_seq(void)
{
	return px.seq;
}

/* r counted into list's entry of its host, port and verdict: 0, or -1
 * when that would be one entry more than PROTO_MAX_EGRESS. */
static int
px_count(json_object *list, const struct pxrec *r)
{
	json_object *o = NULL, *v;
	size_t i, n = json_object_array_length(list);

	for (i = 0; i < n; i++) {
		o = json_object_array_get_idx(list, i);
		json_object_object_get_ex(o, "host", &v);
		if (strcmp(json_object_get_string(v), r->host) != 0)
			continue;
		json_object_object_get_ex(o, "port", &v);
		if (json_object_get_int(v) != (int)r->port)
			continue;
		json_object_object_get_ex(o, "allowed", &v);
		if (json_object_get_boolean(v) == r->allowed)
			break;
	}
	if (i == n) {
		if (n >= PROTO_MAX_EGRESS)
			return -1;
		o = json_object_new_object();
		json_object_object_add(
		    o, "host", json_object_new_string(r->host));
		json_object_object_add(
		    o, "port", json_object_new_int((int)r->port));
		json_object_object_add(
		    o, "allowed", json_object_new_boolean(r->allowed));
		if (!r->allowed)
			json_object_object_add(
			    o, "reason", json_object_new_string(r->reason));
		json_object_object_add(
		    o, "connections", json_object_new_int(0));
		json_object_object_add(
		    o, "bytes_out", json_object_new_int64(0));
		json_object_object_add(o, "bytes_in", json_object_new_int64(0));
		json_object_array_add(list, o);
	}
	json_object_object_get_ex(o, "connections", &v);
	json_object_set_int(v, json_object_get_int(v) + 1);
	json_object_object_get_ex(o, "bytes_out", &v);
	json_object_set_int64(v, json_object_get_int64(v) + r->bytes_out);
	json_object_object_get_ex(o, "bytes_in", &v);
	json_object_set_int64(v, json_object_get_int64(v) + r->bytes_in);
	return 0;
}

/*
 * The connections after seq, ended or open, one entry per host, port
 * and verdict (an array, or NULL when the sandbox has no egress and none
 * came), at most PROTO_MAX_EGRESS entries; *cut is set when some are not
 * there (more entries, or more ended connections than PROXY_RECORDS).
 */
json_object *
proxy_result(uint64_t seq, int *cut)
{
	json_object *list;
	struct rconn *c;
	struct pxrec *r;
	uint64_t s, found = 0;

	*cut = 0;
	if (!px.on && px.seq == seq)
		return NULL;
	list = json_object_new_array();
	LIST_FOREACH(c, &relay->conns, entry)
	{
		if (c->px == NULL || c->px->rec.seq <= seq)
			continue;
		pxrec_sync(c);
		found++;
		if (px_count(list, &c->px->rec) == -1)
			*cut = 1;
	}
	s = px.seq - seq > PROXY_RECORDS ? px.seq - PROXY_RECORDS : seq;
	for (s++; s <= px.seq; s++) {
		r = &px.recs[s % PROXY_RECORDS];
		if (r->seq != s)
			continue; /* open (counted above), or written over */
		found++;
		if (px_count(list, r) == -1)
			*cut = 1;
	}
	if (found < px.seq - seq)
		*cut = 1;
	return list;
}
