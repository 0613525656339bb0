/*
 * The relay's connections, shared by its two users: the exposed ports
 * (relay.c: the worker DIALs into the sandbox) and the egress proxy
 * (proxy.c: the agent ACCEPTs in the sandbox, the worker connects out).
 * Not for the rest of the worker, which sees worker.h's relay_*() and
 * proxy_*() only.
 */
#ifndef RELAY_INT_H
#define RELAY_INT_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>

#include <event2/util.h>
#include <json-c/json.h>

#define RELAY_MAX_CONNS 64 /* of a sandbox, open at once, both kinds */
#define RELAY_MAX_WRITE (256 * 1024) /* a write to a socket, at most */

struct bufferevent;
struct evbuffer_cb_entry;
struct expose;
struct join;
struct pxconn;
struct worker;

struct rconn {
	struct relay *r;
	struct expose *ex; /* its exposed port (NULL once unexposed) */
	struct pxconn *px; /* or the proxy's, NULL for an exposed port */
	uint32_t id;
	struct bufferevent *bev; /* the host's socket */
	int sfd; /* the sandbox's, once the agent passed it, or -1 */
	struct join *join; /* its pipes, made for PASS; joining sfd and bev's */
	struct evbuffer_cb_entry *drain; /* on its output */
	long long credit; /* DATA the agent still takes */
	long long window; /* DATA the agent may still send */
	long long unacked; /* written to the host socket, not yet ACKed */
	long long noack; /* of its output, bytes that are not the agent's */
	long long bytes_in, bytes_out; /* from the sandbox, into it */
	int opened; /* the agent's end is connected (the proxy: both) */
	int head; /* reading the first request's head for the token */
	struct event *deadline; /* ... until then, at the latest */
	long long left; /* bytes of its first request still to go on: no
	                 * more goes then (-1: not counted, all go on) */
	int refused; /* a refusal is being written: closed once it is */
	int eof_host; /* the host socket's end was read: EOF sent */
	int eof_agent; /* the agent's EOF came: shut down once written */
	int shut; /* the host socket's writing is shut down */
	int passing; /* PASS sent, PASSED not come yet */
	LIST_ENTRY(rconn) entry;
};

struct relay {
	struct worker *w;
	LIST_HEAD(, expose) exposed;
	LIST_HEAD(, rconn) conns;
	size_t nconns;
	size_t nheads; /* of conns, with head set */
	uint32_t next_id;
};

extern struct relay *relay;

struct rconn *rconn_new(struct expose *, evutil_socket_t, uint32_t);
void rconn_free(struct rconn *, const char *);
void rconn_pump(struct rconn *);
void rconn_ack(struct rconn *, int);
void rconn_counts(const struct rconn *, long long *, long long *);
void rconn_pass(struct rconn *);
void relay_send_close(uint32_t, const char *);
void rconn_written(struct rconn *);
int rconn_send_data(struct rconn *, const void *, size_t, int);
void relay_answer(struct worker *, uint32_t, json_object *);
void relay_error(struct worker *, uint32_t, const char *, ...)
    __attribute__((format(printf, 3, 4)));

/* proxy.c, called by relay.c for its connections. */
void proxy_accept(uint32_t);
int proxy_data(struct rconn *, const unsigned char *, size_t, int);
int proxy_acked(struct rconn *);
int proxy_event(struct rconn *, short);
void proxy_conn_end(struct rconn *);
int proxy_listening(const unsigned char *, size_t, char *, size_t);

#endif
