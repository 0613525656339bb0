/*
 * An asynchronous Docker Engine API client: libcurl's multi socket
 * interface driven by a libevent loop.  The API version is negotiated with
 * /_ping before the first request; requests made meanwhile wait for it.
 */
#ifndef DOCKER_H
#define DOCKER_H

#include <stddef.h>

#include <json-c/json.h>

struct event_base;
struct docker;
struct docker_req;

struct docker_resp {
	long status; /* HTTP status, 0 if no response came */
	json_object *json; /* parsed body when it was JSON, else NULL */
	const char *body; /* raw body (NUL-terminated), "" for streams */
	size_t len;
	const char *error; /* NULL on 2xx; else what went wrong */
};

/* Called once per request, unless it was cancelled. */
typedef void (*docker_done_cb)(const struct docker_resp *, void *);
/* Stream data: return 0 (taken), 1 (pause: offer it again later), -1. */
typedef int (*docker_data_cb)(const char *, size_t, void *);

struct docker *docker_new(struct event_base *, const char *, const char *);
void docker_free(struct docker *);
const char *docker_api_version(struct docker *);
int docker_libpod(struct docker *);

struct docker_req *docker_call(struct docker *, const char *, const char *,
    json_object *, docker_done_cb, void *);
struct docker_req *docker_call_raw(struct docker *, const char *, const char *,
    const char *, const void *, size_t, docker_done_cb, void *);
struct docker_req *docker_call_capped(struct docker *, const char *,
    const char *, json_object *, size_t, docker_done_cb, void *);
struct docker_req *docker_stream(struct docker *, const char *, const char *,
    json_object *, docker_data_cb, docker_done_cb, void *);
struct docker_req *docker_hijack(struct docker *, const char *, json_object *,
    docker_data_cb, docker_done_cb, void *);
void docker_req_cancel(struct docker_req *);
/* Hijacked streams only: send bytes, learn when they left, send EOF. */
typedef void (*docker_sent_cb)(size_t, void *);
void docker_req_write(struct docker_req *, const void *, size_t);
void docker_req_on_sent(struct docker_req *, docker_sent_cb);
void docker_req_close_write(struct docker_req *);
void docker_req_pause(struct docker_req *, int);

char *docker_escape(const char *);
long docker_global_flags(const char *);

/* docker-spec.c: a container create's body. */
struct engine_spec;
/* Where an engine's create body differs from Docker's. */
struct docker_spec_opts {
	/* The seccomp profile as a file on the engine's host, or NULL: the
	 * profile itself, inline (Docker). */
	const char *seccomp_file;
	/* A tmpfs's owner as its uid= and gid= options (Docker); else the
	 * engine refuses them and the owner is set after the start. */
	int tmpfs_owner;
	/* An nproc ulimit, or 0: none (the engine's own). */
	long long nproc;
};
json_object *docker_spec_json(const struct engine_spec *);
json_object *docker_spec_json_opts(
    const struct engine_spec *, const struct docker_spec_opts *);

#endif
