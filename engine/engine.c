/*
 * The engine handle and the calls on it: each operation becomes a request
 * that the handle's backend serves (struct engine_ops).
 */
#include <stdlib.h>
#include <string.h>

#include "engine-int.h"
#include "log.h"
#include "xmalloc.h"

/* The backends, tried in order for a host. */
static const struct engine_ops *const backends[] = {&engine_docker_ops};
#define NBACKENDS (sizeof backends / sizeof backends[0])

/* A handle on a backend's state (backends and tests that stand in). */
struct engine *
engine_new_ops(struct event_base *base, const struct engine_ops *ops,
    void *state, int supports)
{
	struct engine *eng;

	eng = xcalloc(1, sizeof *eng);
	eng->ops = ops;
	eng->state = state;
	eng->supports = supports;
	eng->base = base;
	TAILQ_INIT(&eng->reqs);
	TAILQ_INIT(&eng->execs);
	return eng;
}

/*
 * The engine at host (DOCKER_HOST's syntax), or NULL (errno set); its
 * TLS, for a tcp:// host, from the environment as the Docker CLI reads
 * it (DOCKER_TLS_VERIFY, DOCKER_CERT_PATH).
 */
struct engine *
engine_new(struct event_base *base, const char *host)
{
	return engine_new_tls(base, host, NULL);
}

/*
 * The engine at host with TLS settings of its own, never the process's
 * environment: tls is a directory holding ca.pem, cert.pem and key.pem
 * (as DOCKER_CERT_PATH), "" for none, or NULL to read the environment.
 * Several engines of one process each keep their own.
 */
struct engine *
engine_new_tls(struct event_base *base, const char *host, const char *tls)
{
	void *state;
	size_t i;
	int supports;

	for (i = 0; i < NBACKENDS; i++) {
		supports = 0;
		if ((state = backends[i]->open(base, host, tls, &supports)) !=
		    NULL)
			return engine_new_ops(
			    base, backends[i], state, supports);
	}
	return NULL;
}

/* Frees the handle; what is still in flight is dropped, uncalled. */
void
engine_free(struct engine *eng)
{
	struct engine_req *req;

	if (eng == NULL)
		return;
	engine_exec_free_all(eng);
	/* Each cancel unlinks the head. */
	while ((req = TAILQ_FIRST(&eng->reqs)) != NULL)
		engine_req_cancel(req); // NOLINT(clang-analyzer-unix.Malloc)
	if (eng->ops->close != NULL)
		eng->ops->close(eng->state);
	free(eng->dir);
	free(eng);
}

int
engine_supports(const struct engine *eng, int what)
{
	int bits = eng->supports;

	if (eng->ops->supports != NULL)
		bits = eng->ops->supports(eng->state, bits);
	return (bits & what) == what;
}

/*
 * A private directory of this host (the server's, mode 0700) where the
 * backend may put files that its runtime reads by path (Podman's seccomp
 * profile); NULL: none.  Copied.
 */
void
engine_set_dir(struct engine *eng, const char *dir)
{
	free(eng->dir);
	eng->dir = dir != NULL ? xstrdup(dir) : NULL;
}

const char *
engine_name(const struct engine *eng)
{
	return eng->ops->name;
}

/* The API version in use, once the engine was asked; else NULL. */
const char *
engine_api_version(const struct engine *eng)
{
	return eng->ops->api_version != NULL ? eng->ops->api_version(eng->state)
	                                     : NULL;
}

/* Process-wide set-up for an engine at host (before engine_new()). */
int
engine_global_init(const char *host)
{
	size_t i;

	for (i = 0; i < NBACKENDS; i++)
		if (backends[i]->global_init != NULL &&
		    backends[i]->global_init(host) == -1)
			return -1;
	return 0;
}

void
engine_global_cleanup(void)
{
	size_t i;

	for (i = 0; i < NBACKENDS; i++)
		if (backends[i]->global_cleanup != NULL)
			backends[i]->global_cleanup();
}

void
engine_resp_init(struct engine_resp *resp)
{
	memset(resp, 0, sizeof *resp);
	resp->exit_code = -1;
}

struct engine_req *
engine_req_new(struct engine *eng, engine_done_cb done, void *arg)
{
	struct engine_req *req;

	req = xcalloc(1, sizeof *req);
	req->eng = eng;
	req->done = done;
	req->arg = arg;
	TAILQ_INSERT_TAIL(&eng->reqs, req, entry);
	return req;
}

/* A backend's answer: the one callback, then the request is freed. */
void
engine_req_finish(struct engine_req *req, const struct engine_resp *resp)
{
	TAILQ_REMOVE(&req->eng->reqs, req, entry);
	if (req->done != NULL)
		req->done(resp, req->arg);
	free(req);
}

void
engine_req_cancel(struct engine_req *req)
{
	if (req == NULL)
		return;
	TAILQ_REMOVE(&req->eng->reqs, req, entry);
	req->eng->ops->cancel(req);
	free(req);
}

struct engine_req *
engine_ping(struct engine *eng, engine_done_cb done, void *arg)
{
	struct engine_req *req = engine_req_new(eng, done, arg);

	eng->ops->ping(req);
	return req;
}

/* Create a container (stopped); the answer carries its id. */
struct engine_req *
engine_container_create(struct engine *eng, const struct engine_spec *spec,
    engine_done_cb done, void *arg)
{
	struct engine_req *req = engine_req_new(eng, done, arg);

	eng->ops->container_create(req, spec);
	return req;
}

struct engine_req *
engine_container_start(
    struct engine *eng, const char *id, engine_done_cb done, void *arg)
{
	struct engine_req *req = engine_req_new(eng, done, arg);

	eng->ops->container_start(req, id);
	return req;
}

/* Stop: a signal, then a kill after grace seconds (unchanged if stopped). */
struct engine_req *
engine_container_stop(struct engine *eng, const char *id, int grace,
    engine_done_cb done, void *arg)
{
	struct engine_req *req = engine_req_new(eng, done, arg);

	eng->ops->container_stop(req, id, grace);
	return req;
}

/* Remove, running or not, with its volumes. */
struct engine_req *
engine_container_remove(
    struct engine *eng, const char *id, engine_done_cb done, void *arg)
{
	struct engine_req *req = engine_req_new(eng, done, arg);

	eng->ops->container_remove(req, id);
	return req;
}

/* What a container is now: resp->container (or notfound, or an error). */
struct engine_req *
engine_container_inspect(
    struct engine *eng, const char *id, engine_done_cb done, void *arg)
{
	struct engine_req *req = engine_req_new(eng, done, arg);

	eng->ops->container_inspect(req, id);
	return req;
}

/* A running container's usage, once: resp->stats. */
struct engine_req *
engine_container_stats(
    struct engine *eng, const char *id, engine_done_cb done, void *arg)
{
	struct engine_req *req = engine_req_new(eng, done, arg);

	eng->ops->container_stats(req, id);
	return req;
}

/*
 * Every container, running or not, with a label ("key" or "key=value"):
 * resp->list (id, labels, created).
 */
struct engine_req *
engine_container_list(
    struct engine *eng, const char *label, engine_done_cb done, void *arg)
{
	struct engine_req *req = engine_req_new(eng, done, arg);

	eng->ops->container_list(req, label);
	return req;
}

/* A running container's pids limit, changed. */
struct engine_req *
engine_container_update_pids(struct engine *eng, const char *id, long long pids,
    engine_done_cb done, void *arg)
{
	struct engine_req *req = engine_req_new(eng, done, arg);

	eng->ops->container_update_pids(req, id, pids);
	return req;
}

/* A running container's memory, CPU and pids limits, changed. */
struct engine_req *
engine_container_update(struct engine *eng, const char *id,
    const struct engine_limits *lim, engine_done_cb done, void *arg)
{
	struct engine_req *req = engine_req_new(eng, done, arg);

	eng->ops->container_update(req, id, lim);
	return req;
}

/* A container's name, changed (a conflict if another has it). */
struct engine_req *
engine_container_rename(struct engine *eng, const char *id, const char *name,
    engine_done_cb done, void *arg)
{
	struct engine_req *req = engine_req_new(eng, done, arg);

	eng->ops->container_rename(req, id, name);
	return req;
}

/* Freeze every process of a container (unchanged if it is already). */
struct engine_req *
engine_container_pause(
    struct engine *eng, const char *id, engine_done_cb done, void *arg)
{
	struct engine_req *req = engine_req_new(eng, done, arg);

	eng->ops->container_pause(req, id, 1);
	return req;
}

/* Thaw a paused container. */
struct engine_req *
engine_container_unpause(
    struct engine *eng, const char *id, engine_done_cb done, void *arg)
{
	struct engine_req *req = engine_req_new(eng, done, arg);

	eng->ops->container_pause(req, id, 0);
	return req;
}

/* A container's own output (its main process), followed. */
struct engine_req *
engine_container_logs(struct engine *eng, const char *id,
    engine_output_cb output, engine_done_cb done, void *arg)
{
	struct engine_req *req = engine_req_new(eng, done, arg);

	req->output = output;
	eng->ops->container_logs(req, id);
	return req;
}

/* A container's events of these kinds (NULL-terminated), followed. */
struct engine_req *
engine_container_events(struct engine *eng, const char *id,
    const char *const *actions, void (*event)(const char *, void *),
    engine_done_cb done, void *arg)
{
	struct engine_req *req = engine_req_new(eng, done, arg);

	req->event = event;
	eng->ops->container_events(req, id, actions);
	return req;
}

/* Is the image here (else notfound), and what does it declare? */
struct engine_req *
engine_image_inspect(
    struct engine *eng, const char *image, engine_done_cb done, void *arg)
{
	struct engine_req *req = engine_req_new(eng, done, arg);

	eng->ops->image_inspect(req, image);
	return req;
}

/* Pull an image; the error, if any, is the registry's or the engine's. */
struct engine_req *
engine_image_pull(
    struct engine *eng, const char *image, engine_done_cb done, void *arg)
{
	struct engine_req *req = engine_req_new(eng, done, arg);

	eng->ops->image_pull(req, image);
	return req;
}
