/*
 * Inside engine/: what a backend implements (struct engine_ops) and the
 * handle and requests every backend shares.  Included by backends and by
 * tests that stand in for one.
 */
#ifndef ENGINE_INT_H
#define ENGINE_INT_H

#include <sys/queue.h>

#include "engine.h"

/*
 * An operation in flight.  The generic layer allocates it and frees it
 * after the backend's engine_req_finish() (or a cancel); the backend
 * keeps its own request in impl and its per-request state in state.
 */
struct engine_req {
	struct engine *eng;
	void *impl;
	void *state;
	int kind; /* the backend's: what the answer is parsed into */
	int paused; /* a stream's reader wants no more output for now */
	engine_done_cb done;
	engine_output_cb output;
	void (*event)(const char *, void *);
	void (*sent)(size_t, void *);
	void *arg;
	TAILQ_ENTRY(engine_req) entry;
};

struct engine_ops {
	const char *name;
	/* The backend's state for a host it serves, else NULL; the TLS
	 * directory as engine_new_tls() takes it. */
	void *(*open)(struct event_base *, const char *, const char *, int *);
	void (*close)(void *);
	int (*global_init)(const char *);
	void (*global_cleanup)(void);
	const char *(*api_version)(void *);
	/* What the backend has learnt since open() (the runtime behind an
	 * API, once it answered): the bits given, changed; may be NULL. */
	int (*supports)(void *, int);

	void (*ping)(struct engine_req *);
	void (*container_create)(
	    struct engine_req *, const struct engine_spec *);
	void (*container_start)(struct engine_req *, const char *);
	void (*container_stop)(struct engine_req *, const char *, int);
	void (*container_remove)(struct engine_req *, const char *);
	void (*container_inspect)(struct engine_req *, const char *);
	void (*container_stats)(struct engine_req *, const char *);
	void (*container_list)(struct engine_req *, const char *);
	void (*container_update_pids)(
	    struct engine_req *, const char *, long long);
	void (*container_update)(
	    struct engine_req *, const char *, const struct engine_limits *);
	void (*container_rename)(
	    struct engine_req *, const char *, const char *);
	void (*container_pause)(struct engine_req *, const char *, int);
	void (*container_logs)(struct engine_req *, const char *);
	void (*container_events)(
	    struct engine_req *, const char *, const char *const *);
	void (*image_inspect)(struct engine_req *, const char *);
	void (*image_pull)(struct engine_req *, const char *);

	/* The three steps of an exec (engine-exec.c drives them). */
	void (*exec_create)(
	    struct engine_req *, const char *, const struct engine_exec_spec *);
	void (*exec_start)(struct engine_req *, const char *, int);
	void (*exec_inspect)(struct engine_req *, const char *);

	/* A request in flight: abandon it (no callback); a stream's input
	 * and flow (pause 0 may deliver output at once). */
	void (*cancel)(struct engine_req *);
	void (*write)(struct engine_req *, const void *, size_t);
	void (*close_write)(struct engine_req *);
	void (*pause)(struct engine_req *, int);
};

struct engine {
	const struct engine_ops *ops;
	void *state; /* the backend's */
	int supports; /* ENGINE_*; a backend may learn more as it goes */
	char *dir; /* a private directory of this host, or NULL */
	struct event_base *base;
	TAILQ_HEAD(, engine_req) reqs; /* in flight */
	TAILQ_HEAD(, engine_exec) execs; /* engine-exec.c: those alive */
};

extern const struct engine_ops engine_docker_ops;

struct engine *engine_new_ops(
    struct event_base *, const struct engine_ops *, void *, int);
struct engine_req *engine_req_new(struct engine *, engine_done_cb, void *);
void engine_req_finish(struct engine_req *, const struct engine_resp *);

/* engine-exec.c */
void engine_exec_free_all(struct engine *);

#endif
