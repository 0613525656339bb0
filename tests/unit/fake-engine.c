/*
 * A container engine in memory, for tests (fake-engine.h): the ops table
 * of engine/engine-int.h over lists of containers and images.  Each call
 * becomes a pending answer that the event loop delivers (an active event),
 * so a caller never hears back from inside its own call, as with Docker.
 * The answers say what engine-docker.c says for the same case: notfound
 * with an error for a missing container or image, unchanged with an
 * error for a container already stopped or started, a conflict for a
 * name in use.  Streams (logs, events) stay open until cancelled.
 */
#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "engine-int.h"
#include "fake-engine.h"
#include "log.h"
#include "xmalloc.h"

struct fake_container {
	char *id, *name, *image;
	json_object *labels; /* owned */
	long long created;
	int running;
	int paused;
	TAILQ_ENTRY(fake_container) entry;
};

struct fake_image {
	char *name;
	TAILQ_ENTRY(fake_image) entry;
};

/* What the next calls of an operation get instead of an answer. */
struct fake_script {
	int fail; /* this many answer error */
	char *error;
	int notfound;
	int hold; /* this many are held (< 0: all) */
};

struct fake;

/* A call waiting for its answer. */
struct fake_req {
	struct fake *f;
	struct engine_req *req;
	enum fake_op op;
	size_t call; /* its place in f->calls */
	char *arg;
	char *name, *image; /* create */
	json_object *labels; /* create, owned */
	char *error; /* scripted */
	int notfound;
	int held; /* waits for fake_release() */
	struct event *ev;
	TAILQ_ENTRY(fake_req) entry;
};

struct fake {
	struct event_base *base;
	TAILQ_HEAD(, fake_container) containers;
	TAILQ_HEAD(, fake_image) images;
	TAILQ_HEAD(, fake_req) reqs;
	struct fake_script scripts[FAKE_NOPS];
	struct fake_call *calls;
	size_t ncalls, calls_cap;
	unsigned long next_id;
	char *trace;
};

static const char *const op_names[FAKE_NOPS] = {
    [FAKE_PING] = "ping",
    [FAKE_CREATE] = "container_create",
    [FAKE_START] = "container_start",
    [FAKE_STOP] = "container_stop",
    [FAKE_REMOVE] = "container_remove",
    [FAKE_INSPECT] = "container_inspect",
    [FAKE_STATS] = "container_stats",
    [FAKE_LIST] = "container_list",
    [FAKE_UPDATE_PIDS] = "container_update_pids",
    [FAKE_LOGS] = "container_logs",
    [FAKE_EVENTS] = "container_events",
    [FAKE_IMAGE_INSPECT] = "image_inspect",
    [FAKE_IMAGE_PULL] = "image_pull",
    [FAKE_EXEC_CREATE] = "exec_create",
    [FAKE_EXEC_START] = "exec_start",
    [FAKE_EXEC_INSPECT] = "exec_inspect",
    [FAKE_UPDATE] = "container_update",
    [FAKE_RENAME] = "container_rename",
    [FAKE_PAUSE] = "container_pause",
    [FAKE_UNPAUSE] = "container_unpause",
};

static const struct engine_ops fake_ops;

const char *
fake_op_name(enum fake_op op)
{
	return op < FAKE_NOPS ? op_names[op] : "?";
}

static struct fake *
fake_of(struct engine *eng)
{
	if (eng->ops != &fake_ops)
		fatalx("%s: not a fake engine", __func__);
	return eng->state;
}

static struct fake_container *
find_container(struct fake *f, const char *id)
{
	struct fake_container *c;

	TAILQ_FOREACH(c, &f->containers, entry)
	{
		if (strcmp(c->id, id) == 0)
			return c;
	}
	return NULL;
}

static struct fake_image *
find_image(struct fake *f, const char *name)
{
	struct fake_image *i;

	TAILQ_FOREACH(i, &f->images, entry)
	{
		if (strcmp(i->name, name) == 0)
			return i;
	}
	return NULL;
}

/* A container in the store (labels copied; NULL: none). */
static struct fake_container *
store_add(struct fake *f, const char *id, const char *image,
    json_object *labels, long long created, int running)
{
	struct fake_container *c;

	c = xcalloc(1, sizeof *c);
	c->id = xstrdup(id);
	c->image = xstrdup(image != NULL ? image : "");
	if (labels != NULL)
		c->labels = json_tokener_parse(json_object_to_json_string_ext(
		    labels, JSON_C_TO_STRING_PLAIN));
	c->created = created;
	c->running = running;
	TAILQ_INSERT_TAIL(&f->containers, c, entry);
	return c;
}

static void
container_free(struct fake_container *c)
{
	free(c->id);
	free(c->name);
	free(c->image);
	json_object_put(c->labels);
	free(c);
}

static void
req_free(struct fake_req *fr)
{
	if (fr->ev != NULL)
		event_free(fr->ev);
	free(fr->arg);
	free(fr->name);
	free(fr->image);
	json_object_put(fr->labels);
	free(fr->error);
	free(fr);
}

/* Whether a container carries label ("key" or "key=value"). */
static int
has_label(const struct fake_container *c, const char *label)
{
	const char *eq = strchr(label, '=');
	json_object *v;
	char *key;
	int ok;

	if (c->labels == NULL)
		return 0;
	key =
	    eq != NULL ? xstrndup(label, (size_t)(eq - label)) : xstrdup(label);
	ok = json_object_object_get_ex(c->labels, key, &v) &&
	     (eq == NULL || strcmp(json_object_get_string(v), eq + 1) == 0);
	free(key);
	return ok;
}

static void
answer_missing(struct engine_resp *resp, char *buf, size_t len,
    const char *what, const char *id)
{
	snprintf(buf, len, "No such %s: %s", what, id);
	resp->error = buf;
	resp->notfound = 1;
}

/* The answer of a create: a new container, unless the name is taken. */
static void
answer_create(struct fake_req *fr, struct engine_resp *resp, char *buf,
    size_t len, char *id, size_t idlen)
{
	struct fake *f = fr->f;
	struct fake_container *c;

	if (fr->name != NULL) {
		TAILQ_FOREACH(c, &f->containers, entry)
		{
			if (c->name != NULL && strcmp(c->name, fr->name) == 0) {
				snprintf(buf, len,
				    "Conflict. The container name \"/%s\" is "
				    "already in use",
				    fr->name);
				resp->error = buf;
				return;
			}
		}
	}
	if (find_image(f, fr->image) == NULL) {
		answer_missing(resp, buf, len, "image", fr->image);
		return;
	}
	/* 64 hex digits, unique in the first 12 (a spool's name). */
	snprintf(id, idlen, "%012lx%052x", 0xfa4e00000000UL + ++f->next_id, 0);
	c = store_add(f, id, fr->image, fr->labels, (long long)time(NULL), 0);
	if (fr->name != NULL)
		c->name = xstrdup(fr->name);
	resp->id = id;
}

/* The answer of a rename: a conflict if another container has the name. */
static void
answer_rename(struct fake_req *fr, struct fake_container *c,
    struct engine_resp *resp, char *buf, size_t len)
{
	struct fake_container *o;

	TAILQ_FOREACH(o, &fr->f->containers, entry)
	{
		if (o != c && o->name != NULL &&
		    strcmp(o->name, fr->name) == 0) {
			snprintf(buf, len,
			    "Conflict. The container name \"/%s\" is "
			    "already in use",
			    fr->name);
			resp->error = buf;
			return;
		}
	}
	free(c->name);
	c->name = xstrdup(fr->name);
}

/* Answer a call, from the loop: the store changes, the caller hears. */
static void
answer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fake_req *fr = arg;
	struct fake *f = fr->f;
	struct engine_req *req = fr->req;
	struct engine_resp resp;
	struct engine_container ci, *list = NULL;
	struct engine_stats stats;
	struct engine_image image;
	struct fake_container *c = NULL;
	json_object *volumes = NULL;
	char buf[256], id[72];
	size_t n;

	(void)fd;
	(void)what;
	TAILQ_REMOVE(&f->reqs, fr, entry);
	engine_resp_init(&resp);
	if (fr->error != NULL) {
		resp.error = fr->error;
		resp.notfound = fr->notfound;
		goto out;
	}
	switch (fr->op) {
	case FAKE_START:
	case FAKE_STOP:
	case FAKE_REMOVE:
	case FAKE_INSPECT:
	case FAKE_STATS:
	case FAKE_UPDATE_PIDS:
	case FAKE_EXEC_CREATE:
	case FAKE_UPDATE:
	case FAKE_RENAME:
	case FAKE_PAUSE:
	case FAKE_UNPAUSE:
		if ((c = find_container(f, fr->arg)) == NULL) {
			answer_missing(
			    &resp, buf, sizeof buf, "container", fr->arg);
			goto out;
		}
		break;
	default:
		break;
	}
	switch (fr->op) {
	case FAKE_CREATE:
		answer_create(fr, &resp, buf, sizeof buf, id, sizeof id);
		break;
	case FAKE_START:
		if (c->running) {
			resp.unchanged = 1;
			resp.error = "Docker engine answered HTTP 304";
		}
		c->running = 1;
		break;
	case FAKE_STOP:
		if (!c->running) {
			resp.unchanged = 1;
			resp.error = "Docker engine answered HTTP 304";
		}
		c->running = 0;
		break;
	case FAKE_REMOVE:
		TAILQ_REMOVE(&f->containers, c, entry);
		container_free(c);
		break;
	case FAKE_INSPECT:
		memset(&ci, 0, sizeof ci);
		ci.id = c->id;
		ci.status = c->running ? "running" : "exited";
		ci.running = c->running;
		ci.pid = c->running ? 4242 : 0;
		ci.paused = c->paused;
		ci.exit_code = c->running ? -1 : 0;
		ci.created = c->created;
		ci.labels = c->labels;
		resp.container = &ci;
		break;
	case FAKE_STATS:
		memset(&stats, 0, sizeof stats);
		stats.have_memory = stats.have_pids = 1;
		stats.memory_bytes = 1024 * 1024;
		stats.pids = c->running ? 1 : 0;
		resp.stats = &stats;
		break;
	case FAKE_LIST:
		n = 0;
		TAILQ_FOREACH(c, &f->containers, entry)
		n++;
		list = xcalloc(n + 1, sizeof *list);
		TAILQ_FOREACH(c, &f->containers, entry)
		{
			if (!has_label(c, fr->arg))
				continue;
			list[resp.nlist].id = c->id;
			list[resp.nlist].status =
			    c->running ? "running" : "exited";
			list[resp.nlist].running = c->running;
			list[resp.nlist].exit_code = -1;
			list[resp.nlist].created = c->created;
			list[resp.nlist].labels = c->labels;
			resp.nlist++;
		}
		resp.list = list;
		break;
	case FAKE_IMAGE_INSPECT:
		if (find_image(f, fr->arg) == NULL) {
			answer_missing(
			    &resp, buf, sizeof buf, "image", fr->arg);
			break;
		}
		volumes = json_object_new_array();
		image.volumes = volumes;
		resp.image = &image;
		break;
	case FAKE_IMAGE_PULL:
		if (find_image(f, fr->arg) == NULL)
			fake_image_add(req->eng, fr->arg);
		break;
	case FAKE_EXEC_CREATE:
		snprintf(id, sizeof id, "fakeexec%lu", ++f->next_id);
		resp.id = id;
		break;
	case FAKE_EXEC_INSPECT:
		resp.exit_code = 0;
		break;
	case FAKE_RENAME:
		answer_rename(fr, c, &resp, buf, sizeof buf);
		break;
	case FAKE_PAUSE:
	case FAKE_UNPAUSE:
		if (!c->running) {
			snprintf(buf, sizeof buf, "Container %s is not running",
			    c->id);
			resp.error = buf;
		} else
			c->paused = fr->op == FAKE_PAUSE;
		break;
	default: /* ping, a stream's end, an exec's start */
		break;
	}
out:
	/* Off the list: a call from the callback does not find it. */
	req->impl = NULL;
	engine_req_finish(req, &resp);
	req_free(fr);
	free(list);
	json_object_put(volumes);
}

/* A call: recorded, scripted, and answered from the loop. */
static struct fake_req *
fake_begin(struct engine_req *req, enum fake_op op, const char *arg)
{
	struct fake *f = req->eng->state;
	struct fake_script *s = &f->scripts[op];
	struct fake_call *call;
	struct fake_req *fr;

	if (f->ncalls == f->calls_cap) {
		f->calls_cap = f->calls_cap == 0 ? 16 : f->calls_cap * 2;
		f->calls = xrealloc(f->calls, f->calls_cap * sizeof *call);
	}
	call = &f->calls[f->ncalls];
	memset(call, 0, sizeof *call);
	call->op = op;
	call->arg = arg != NULL ? xstrdup(arg) : NULL;

	fr = xcalloc(1, sizeof *fr);
	fr->f = f;
	fr->req = req;
	fr->op = op;
	fr->call = f->ncalls++;
	fr->arg = arg != NULL ? xstrdup(arg) : NULL;
	if (s->fail > 0) {
		s->fail--;
		fr->error = xstrdup(s->error);
		fr->notfound = s->notfound;
	}
	if (s->hold != 0) {
		if (s->hold > 0)
			s->hold--;
		fr->held = 1;
	}
	/* A stream stays open (held) until it is cancelled or released. */
	if ((op == FAKE_LOGS || op == FAKE_EVENTS) && fr->error == NULL)
		fr->held = 1;
	if ((fr->ev = event_new(f->base, -1, 0, answer_cb, fr)) == NULL)
		fatalx("%s: event_new", __func__);
	TAILQ_INSERT_TAIL(&f->reqs, fr, entry);
	req->impl = fr;
	if (!fr->held)
		event_active(fr->ev, EV_TIMEOUT, 0);
	return fr;
}

static void *
fake_open(
    struct event_base *base, const char *host, const char *tls, int *supports)
{
	(void)base;
	(void)host;
	(void)tls;
	(void)supports;
	return NULL; /* never picked by engine_new() */
}

/* After engine_free() cancelled what was in flight: the store. */
static void
fake_close(void *state)
{
	struct fake *f = state;
	struct fake_container *c;
	struct fake_image *i;
	struct fake_req *fr;
	size_t n;
	int op;

	while ((fr = TAILQ_FIRST(&f->reqs)) != NULL) {
		TAILQ_REMOVE(&f->reqs, fr, entry);
		req_free(fr);
	}
	while ((c = TAILQ_FIRST(&f->containers)) != NULL) {
		TAILQ_REMOVE(&f->containers, c, entry);
		container_free(c);
	}
	while ((i = TAILQ_FIRST(&f->images)) != NULL) {
		TAILQ_REMOVE(&f->images, i, entry);
		free(i->name);
		free(i);
	}
	for (n = 0; n < f->ncalls; n++) {
		free(f->calls[n].arg);
		free(f->calls[n].labels);
	}
	for (op = 0; op < FAKE_NOPS; op++)
		free(f->scripts[op].error);
	free(f->calls);
	free(f->trace);
	free(f);
}

static void
fake_ping(struct engine_req *req)
{
	fake_begin(req, FAKE_PING, NULL);
}

static void
fake_container_create(struct engine_req *req, const struct engine_spec *spec)
{
	struct fake *f = req->eng->state;
	struct fake_req *fr;

	fr = fake_begin(req, FAKE_CREATE, spec->image);
	fr->image = xstrdup(spec->image);
	if (spec->name != NULL)
		fr->name = xstrdup(spec->name);
	/* The spec is the caller's only during the call: a copy. */
	if (spec->labels != NULL) {
		fr->labels = json_tokener_parse(json_object_to_json_string_ext(
		    spec->labels, JSON_C_TO_STRING_PLAIN));
		f->calls[fr->call].labels =
		    xstrdup(json_object_to_json_string_ext(
		        spec->labels, JSON_C_TO_STRING_PLAIN));
	}
}

static void
fake_container_start(struct engine_req *req, const char *id)
{
	fake_begin(req, FAKE_START, id);
}

static void
fake_container_stop(struct engine_req *req, const char *id, int grace)
{
	(void)grace;
	fake_begin(req, FAKE_STOP, id);
}

static void
fake_container_remove(struct engine_req *req, const char *id)
{
	fake_begin(req, FAKE_REMOVE, id);
}

static void
fake_container_inspect(struct engine_req *req, const char *id)
{
	fake_begin(req, FAKE_INSPECT, id);
}

static void
fake_container_stats(struct engine_req *req, const char *id)
{
	fake_begin(req, FAKE_STATS, id);
}

static void
fake_container_list(struct engine_req *req, const char *label)
{
	fake_begin(req, FAKE_LIST, label);
}

static void
fake_container_update_pids(struct engine_req *req, const char *id, long long n)
{
	(void)n;
	fake_begin(req, FAKE_UPDATE_PIDS, id);
}

static void
fake_container_update(
    struct engine_req *req, const char *id, const struct engine_limits *lim)
{
	(void)lim;
	fake_begin(req, FAKE_UPDATE, id);
}

static void
fake_container_rename(struct engine_req *req, const char *id, const char *name)
{
	struct fake_req *fr = fake_begin(req, FAKE_RENAME, id);

	fr->name = xstrdup(name);
}

static void
fake_container_pause(struct engine_req *req, const char *id, int pause)
{
	fake_begin(req, pause ? FAKE_PAUSE : FAKE_UNPAUSE, id);
}

static void
fake_container_logs(struct engine_req *req, const char *id)
{
	fake_begin(req, FAKE_LOGS, id);
}

static void
fake_container_events(
    struct engine_req *req, const char *id, const char *const *actions)
{
	(void)actions;
	fake_begin(req, FAKE_EVENTS, id);
}

static void
fake_image_inspect(struct engine_req *req, const char *image)
{
	fake_begin(req, FAKE_IMAGE_INSPECT, image);
}

static void
fake_image_pull(struct engine_req *req, const char *image)
{
	fake_begin(req, FAKE_IMAGE_PULL, image);
}

static void
fake_exec_create(
    struct engine_req *req, const char *id, const struct engine_exec_spec *spec)
{
	(void)spec;
	fake_begin(req, FAKE_EXEC_CREATE, id);
}

static void
fake_exec_start(struct engine_req *req, const char *exec_id, int input)
{
	(void)input;
	fake_begin(req, FAKE_EXEC_START, exec_id);
}

static void
fake_exec_inspect(struct engine_req *req, const char *exec_id)
{
	fake_begin(req, FAKE_EXEC_INSPECT, exec_id);
}

/* Abandoned: no answer; the call is marked so. */
static void
fake_cancel(struct engine_req *req)
{
	struct fake_req *fr = req->impl;

	if (fr == NULL)
		return;
	TAILQ_REMOVE(&fr->f->reqs, fr, entry);
	fr->f->calls[fr->call].cancelled = 1;
	req->impl = NULL;
	req_free(fr);
}

static void
fake_write(struct engine_req *req, const void *p, size_t len)
{
	(void)req;
	(void)p;
	(void)len;
}

static void
fake_close_write(struct engine_req *req)
{
	(void)req;
}

static void
fake_pause(struct engine_req *req, int pause)
{
	req->paused = pause;
}

static const struct engine_ops fake_ops = {
    .name = "fake",
    .open = fake_open,
    .close = fake_close,
    .ping = fake_ping,
    .container_create = fake_container_create,
    .container_start = fake_container_start,
    .container_stop = fake_container_stop,
    .container_remove = fake_container_remove,
    .container_inspect = fake_container_inspect,
    .container_stats = fake_container_stats,
    .container_list = fake_container_list,
    .container_update_pids = fake_container_update_pids,
    .container_update = fake_container_update,
    .container_rename = fake_container_rename,
    .container_pause = fake_container_pause,
    .container_logs = fake_container_logs,
    .container_events = fake_container_events,
    .image_inspect = fake_image_inspect,
    .image_pull = fake_image_pull,
    .exec_create = fake_exec_create,
    .exec_start = fake_exec_start,
    .exec_inspect = fake_exec_inspect,
    .cancel = fake_cancel,
    .write = fake_write,
    .close_write = fake_close_write,
    .pause = fake_pause,
};

struct engine *
fake_engine_new(struct event_base *base)
{
	struct fake *f;

	f = xcalloc(1, sizeof *f);
	f->base = base;
	TAILQ_INIT(&f->containers);
	TAILQ_INIT(&f->images);
	TAILQ_INIT(&f->reqs);
	return engine_new_ops(
	    base, &fake_ops, f, ENGINE_EXEC_STDIN | ENGINE_UPDATE);
}

/* Ids from here on (a second fake engine's differ from the first's). */
void
fake_id_base(struct engine *eng, unsigned long base)
{
	((struct fake *)eng->state)->next_id = base;
}

void
fake_image_add(struct engine *eng, const char *name)
{
	struct fake *f = fake_of(eng);
	struct fake_image *i;

	if (find_image(f, name) != NULL)
		return;
	i = xcalloc(1, sizeof *i);
	i->name = xstrdup(name);
	TAILQ_INSERT_TAIL(&f->images, i, entry);
}

int
fake_image_has(struct engine *eng, const char *name)
{
	return find_image(fake_of(eng), name) != NULL;
}

/* A container of someone else (labels copied; NULL: none). */
void
fake_container_add(struct engine *eng, const char *id, const char *image,
    json_object *labels, long long created, int running)
{
	store_add(fake_of(eng), id, image, labels, created, running);
}

int
fake_container_has(struct engine *eng, const char *id)
{
	return find_container(fake_of(eng), id) != NULL;
}

int
fake_container_running(struct engine *eng, const char *id)
{
	struct fake_container *c = find_container(fake_of(eng), id);

	return c != NULL && c->running;
}

void
fake_container_set_created(struct engine *eng, const char *id, long long t)
{
	struct fake_container *c = find_container(fake_of(eng), id);

	if (c != NULL)
		c->created = t;
}

const char *
fake_container_name(struct engine *eng, const char *id)
{
	struct fake_container *c = find_container(fake_of(eng), id);

	return c != NULL ? c->name : NULL;
}

int
fake_container_paused(struct engine *eng, const char *id)
{
	struct fake_container *c = find_container(fake_of(eng), id);

	return c != NULL && c->paused;
}

void
fake_container_drop(struct engine *eng, const char *id)
{
	struct fake *f = fake_of(eng);
	struct fake_container *c = find_container(f, id);

	if (c != NULL) {
		TAILQ_REMOVE(&f->containers, c, entry);
		container_free(c);
	}
}

/* The nth container of the store, or NULL. */
const char *
fake_container_id(struct engine *eng, size_t nth)
{
	struct fake_container *c;

	TAILQ_FOREACH(c, &fake_of(eng)->containers, entry)
	{
		if (nth-- == 0)
			return c->id;
	}
	return NULL;
}

size_t
fake_containers(struct engine *eng)
{
	struct fake_container *c;
	size_t n = 0;

	TAILQ_FOREACH(c, &fake_of(eng)->containers, entry)
	n++;
	return n;
}

/* The next n calls of op fail with error (and notfound, if set). */
void
fake_fail(
    struct engine *eng, enum fake_op op, int n, const char *error, int notfound)
{
	struct fake_script *s = &fake_of(eng)->scripts[op];

	free(s->error);
	s->error = xstrdup(error);
	s->fail = n;
	s->notfound = notfound;
}

/* The next n calls of op wait for fake_release() (n < 0: every one). */
void
fake_hold(struct engine *eng, enum fake_op op, int n)
{
	fake_of(eng)->scripts[op].hold = n;
}

int
fake_held(struct engine *eng, enum fake_op op)
{
	struct fake_req *fr;
	int n = 0;

	TAILQ_FOREACH(fr, &fake_of(eng)->reqs, entry)
	{
		if (fr->op == op && fr->held)
			n++;
	}
	return n;
}

/* Those held answer, from the loop; later calls are not held. */
void
fake_release(struct engine *eng, enum fake_op op)
{
	struct fake *f = fake_of(eng);
	struct fake_req *fr;

	f->scripts[op].hold = 0;
	TAILQ_FOREACH(fr, &f->reqs, entry)
	{
		if (fr->op == op && fr->held) {
			fr->held = 0;
			event_active(fr->ev, EV_TIMEOUT, 0);
		}
	}
}

size_t
fake_ncalls(struct engine *eng)
{
	return fake_of(eng)->ncalls;
}

const struct fake_call *
fake_call(struct engine *eng, size_t nth)
{
	struct fake *f = fake_of(eng);

	return nth < f->ncalls ? &f->calls[nth] : NULL;
}

/* Calls of op (on arg, unless NULL). */
int
fake_count(struct engine *eng, enum fake_op op, const char *arg)
{
	struct fake *f = fake_of(eng);
	size_t i;
	int n = 0;

	for (i = 0; i < f->ncalls; i++)
		if (f->calls[i].op == op &&
		    (arg == NULL || (f->calls[i].arg != NULL &&
		                        strcmp(f->calls[i].arg, arg) == 0)))
			n++;
	return n;
}

/* Every call's operation, in order, a space between (the fake's). */
const char *
fake_trace(struct engine *eng)
{
	struct fake *f = fake_of(eng);
	size_t i, len = 1;

	for (i = 0; i < f->ncalls; i++)
		len += strlen(op_names[f->calls[i].op]) + 1;
	free(f->trace);
	f->trace = xcalloc(1, len);
	for (i = 0; i < f->ncalls; i++) {
		if (i > 0)
			strcat(f->trace, " ");
		strcat(f->trace, op_names[f->calls[i].op]);
	}
	return f->trace;
}

/* Calls not answered yet (held or hanging ones too). */
int
fake_in_flight(struct engine *eng)
{
	struct fake_req *fr;
	int n = 0;

	TAILQ_FOREACH(fr, &fake_of(eng)->reqs, entry)
	n++;
	return n;
}
