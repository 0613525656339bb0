/*
 * A container engine in memory, for tests (fake-engine.c): a backend of
 * engine/engine-int.h that keeps containers and images in lists, answers
 * every operation from the event loop (never inside the call), records
 * every call, and can be told to fail, hold or hang an operation.  What an
 * operation does to the store (a container made, started, removed; an
 * image pulled) happens when it answers, as on a real engine.
 */
#ifndef FAKE_ENGINE_H
#define FAKE_ENGINE_H

#include <stddef.h>

#include <json-c/json.h>

struct engine;
struct event_base;

enum fake_op {
	FAKE_PING,
	FAKE_CREATE,
	FAKE_START,
	FAKE_STOP,
	FAKE_REMOVE,
	FAKE_INSPECT,
	FAKE_STATS,
	FAKE_LIST,
	FAKE_UPDATE_PIDS,
	FAKE_LOGS,
	FAKE_EVENTS,
	FAKE_IMAGE_INSPECT,
	FAKE_IMAGE_PULL,
	FAKE_EXEC_CREATE,
	FAKE_EXEC_START,
	FAKE_EXEC_INSPECT,
	FAKE_UPDATE,
	FAKE_RENAME,
	FAKE_PAUSE,
	FAKE_UNPAUSE,
	FAKE_NOPS
};

/* One call the engine was asked, in order. */
struct fake_call {
	enum fake_op op;
	char *arg; /* the container id, the image, or the list's label */
	char *labels; /* create: the labels asked for, as JSON */
	int cancelled; /* abandoned before it answered */
};

/* A handle (engine_free() frees it and what is still in flight). */
struct engine *fake_engine_new(struct event_base *);

const char *fake_op_name(enum fake_op);
void fake_id_base(struct engine *, unsigned long);

/* The store. */
void fake_image_add(struct engine *, const char *);
int fake_image_has(struct engine *, const char *);
void fake_container_add(
    struct engine *, const char *, const char *, json_object *, long long, int);
int fake_container_has(struct engine *, const char *);
int fake_container_running(struct engine *, const char *);
void fake_container_set_created(struct engine *, const char *, long long);
const char *fake_container_id(struct engine *, size_t);
const char *fake_container_name(struct engine *, const char *);
int fake_container_paused(struct engine *, const char *);
/* Gone behind the server's back, as a docker rm -f would make it. */
void fake_container_drop(struct engine *, const char *);
size_t fake_containers(struct engine *);

/*
 * Scripts: the next n calls of op answer error (and notfound, if set)
 * and change nothing; or are held until released (n < 0: every one, a
 * hang); fake_release() answers those held, from the loop.
 */
void fake_fail(struct engine *, enum fake_op, int, const char *, int);
void fake_hold(struct engine *, enum fake_op, int);
int fake_held(struct engine *, enum fake_op);
void fake_release(struct engine *, enum fake_op);

/* What was asked. */
size_t fake_ncalls(struct engine *);
const struct fake_call *fake_call(struct engine *, size_t);
int fake_count(struct engine *, enum fake_op, const char *);
const char *fake_trace(struct engine *);
int fake_in_flight(struct engine *);

#endif
