/*
 * Internals of the Docker client shared by docker.c (plain requests) and
 * docker-hijack.c (exec sessions with a hijacked connection).
 */
#ifndef DOCKER_INT_H
#define DOCKER_INT_H

#include <sys/queue.h>

#include <curl/curl.h>

#include "docker.h"

struct evbuffer;

#define DOCKER_MAX_BODY (16 * 1024 * 1024)
#define DOCKER_MAX_API_MINOR 43
#define DOCKER_CONNECT_TIMEOUT_MS 5000L
#define DOCKER_CALL_TIMEOUT_MS 30000L

enum docker_vstate { V_UNKNOWN, V_PINGING, V_KNOWN };

struct docker_req {
	struct docker *d;
	CURL *easy;
	struct curl_slist *hdrs;
	char *method, *path, *reqbody;
	size_t reqlen; /* of a raw body (docker_call_raw), else 0 */
	char *ctype; /* a raw body's Content-Type, or NULL: JSON */
	char *body;
	size_t len, cap;
	size_t keep; /* 0, or keep this much of the body and drop the rest */
	int overflow;
	int started;
	int hijack; /* connect only; we speak on the socket */
	struct docker_hijack *hj;
	docker_data_cb data_cb;
	docker_done_cb done_cb;
	void *arg;
	char errbuf[CURL_ERROR_SIZE];
	TAILQ_ENTRY(docker_req) entry;
};
TAILQ_HEAD(docker_reqs, docker_req);

struct docker {
	struct event_base *base;
	CURLM *multi;
	struct event *timer;
	char *base_url; /* http://docker or https://host:port */
	char *unix_path; /* unix socket, or NULL */
	char *cert_path; /* DOCKER_CERT_PATH for tcp with TLS */
	enum docker_vstate vstate;
	char version[16];
	int libpod; /* /_ping named a Libpod API: Podman's service */
	struct docker_reqs waiting;
	struct docker_reqs running;
	struct docker_req *ping;
};

void docker_req_free(struct docker_req *);
void docker_hijack_init(struct docker_req *);
void docker_hijack_connected(struct docker_req *);
void docker_hijack_unwatch(struct docker_req *);
void docker_hijack_free(struct docker_req *);
void docker_hijack_pause(struct docker_req *, int);

#endif
