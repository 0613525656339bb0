/*
 * The Streamable HTTP transport's insides, shared by http.c (the server:
 * listening, request checks, auth, /metrics), http-conn.c (connections
 * from accept to close: the gate before the token, counts, deadlines) and
 * http-session.c (MCP sessions over HTTP: POST, GET and DELETE of /mcp,
 * SSE streams, event buffering and resumption).
 */
#ifndef HTTP_INT_H
#define HTTP_INT_H

#include <stddef.h>

#include <json-c/json.h>

struct bufferevent;
struct evbuffer;
struct event_base;
struct evhttp_connection;
struct evhttp_request;

#define HTTP_SID_BYTES 32 /* random bytes of a session id (hex: twice) */
#define HTTP_SSE_RETRY_MS 1000 /* retry: told to 2025-11-25 clients */
#define HTTP_KEEPALIVE_S 15 /* an SSE comment on quiet streams */
#define HTTP_EVENTS_MAX 1000 /* events kept per session for resumption */
#define HTTP_EVENTS_BYTES (4 * 1024 * 1024)

/* JSON-RPC error codes of transport problems (as the official SDKs). */
#define HTTP_RPC_BAD_REQUEST (-32000)
#define HTTP_RPC_NO_SESSION (-32001)

/* http.c */
int http_ct_equal(const char *, size_t, const char *, size_t);
void http_reply(
    struct evhttp_request *, int, const char *, const char *, size_t);
void http_reply_json(struct evhttp_request *, int, json_object *);
void http_reply_error(
    struct evhttp_request *, int, json_object *, int, const char *);
void http_count(int);
int http_stdio_sessions(void);
int http_auth_required(void);
int http_auth_value_ok(const char *);

/* http-conn.c */
#define HTTP_MAX_HEADERS (64 * 1024)
/* Put on a request whose body length was ambiguous (answered 400). */
#define HTTP_AMBIGUOUS_HEADER "X-Mcp-Sandboxd-Ambiguous-Length"
struct bufferevent *http_conn_new(struct event_base *, void *);
void http_conn_closecb(struct evhttp_connection *,
    void (*)(struct evhttp_connection *, void *), void *);
long http_conn_count(void);
void http_conn_stats(long *, long *, long *);
void http_conn_stop(void);

/* http-session.c */
void http_sessions_init(void);
void http_sessions_stop(void);
int http_sessions_open(void);
void http_sessions_metrics(struct evbuffer *);
void http_post(struct evhttp_request *);
void http_get(struct evhttp_request *);
void http_delete(struct evhttp_request *);

#endif
