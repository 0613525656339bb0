/*
 * The Streamable HTTP transport's insides, shared by http.c (the server:
 * listening, request checks, auth, /metrics) and http-session.c (MCP
 * sessions over HTTP: POST, GET and DELETE of /mcp, SSE streams, event
 * buffering and resumption).
 */
#ifndef HTTP_INT_H
#define HTTP_INT_H

#include <stddef.h>

#include <json-c/json.h>

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
void http_conn_closecb(struct evhttp_connection *,
    void (*)(struct evhttp_connection *, void *), void *);
int http_stdio_sessions(void);

/* http-session.c */
void http_sessions_init(void);
void http_sessions_stop(void);
int http_sessions_open(void);
void http_post(struct evhttp_request *);
void http_get(struct evhttp_request *);
void http_delete(struct evhttp_request *);

#endif
