/*
 * One run of a command in a container, on any engine: create the exec,
 * start it and stream its output (and its input, if it has one) until the
 * stream ends, then read its exit code.  The three steps are the
 * backend's (exec_create, exec_start, exec_inspect); the order, the input
 * that comes before the stream, the flow of output and the end belong
 * here, once for every caller (worker/exec.c, killer.c, interp.c).
 *
 * A caller may cancel, write or pause from within any callback: callbacks
 * run with the exec marked busy, and an exec cancelled while busy is
 * freed from the event loop afterwards.
 */
#include <sys/queue.h>

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "engine-int.h"
#include "log.h"
#include "xmalloc.h"

enum ex_state { EX_CREATE, EX_RUN, EX_INSPECT, EX_DONE };

struct engine_exec {
	struct engine *eng;
	enum ex_state state;
	struct engine_exec_cbs cbs;
	void *arg;
	int input; /* standard input attached */
	char *id; /* the engine's */
	struct engine_req *req; /* the step in flight, if any */
	struct evbuffer *early; /* input before the stream started */
	int close_write; /* ... then its end */
	int paused; /* the caller takes no output for now */
	int resume, closing; /* for defer_cb */
	const char *failed; /* refused before it was made */
	int busy; /* in a callback of the caller */
	int dead; /* cancelled */
	struct event *defer;
	TAILQ_ENTRY(engine_exec) entry;
};

static void ex_stream_done(const struct engine_resp *, void *);

static void
ex_free(struct engine_exec *x)
{
	TAILQ_REMOVE(&x->eng->execs, x, entry);
	if (x->req != NULL)
		engine_req_cancel(x->req);
	if (x->early != NULL)
		evbuffer_free(x->early);
	event_free(x->defer);
	free(x->id);
	free(x);
}

/* Back from the caller: 1 if it cancelled (then freed from the loop). */
static int
ex_unbusy(struct engine_exec *x)
{
	if (--x->busy == 0 && x->dead && x->state != EX_DONE)
		event_active(x->defer, 0, 0);
	return x->dead;
}

/* The end: the caller learns it, then the exec goes. */
static void
ex_done(struct engine_exec *x, long code, const char *err,
    enum engine_exec_phase phase)
{
	struct engine_exec_result res;

	x->state = EX_DONE;
	if (!x->dead) {
		memset(&res, 0, sizeof res);
		res.exit_code = code;
		res.error = err;
		res.phase = phase;
		x->busy++;
		x->cbs.done(&res, x->arg);
		x->busy--;
	}
	ex_free(x);
}

static void
ex_inspected(const struct engine_resp *resp, void *arg)
{
	struct engine_exec *x = arg;

	x->req = NULL;
	ex_done(x, resp->exit_code, resp->error, ENGINE_EXEC_INSPECT);
}

/* The stream is over (err, or NULL): the exit code, if the caller asks. */
static void
ex_ended(struct engine_exec *x, const char *err)
{
	int inspect;

	if (x->cbs.ended != NULL) {
		x->busy++;
		inspect = x->cbs.ended(err, x->arg);
		if (ex_unbusy(x))
			return;
	} else
		inspect = err == NULL;
	if (!inspect) {
		ex_done(x, -1, err, ENGINE_EXEC_STREAM);
		return;
	}
	x->state = EX_INSPECT;
	x->req = engine_req_new(x->eng, ex_inspected, x);
	x->eng->ops->exec_inspect(x->req, x->id);
}

static void
ex_stream_done(const struct engine_resp *resp, void *arg)
{
	struct engine_exec *x = arg;

	x->req = NULL;
	if (x->dead)
		return;
	ex_ended(x, resp->error);
}

static void
ex_output(int stream, const char *p, size_t len, void *arg)
{
	struct engine_exec *x = arg;

	if (x->dead || x->cbs.output == NULL)
		return;
	x->busy++;
	x->cbs.output(stream, p, len, x->arg);
	ex_unbusy(x);
}

static void
ex_sent(size_t n, void *arg)
{
	struct engine_exec *x = arg;

	if (x->dead || x->cbs.sent == NULL)
		return;
	x->busy++;
	x->cbs.sent(n, x->arg);
	ex_unbusy(x);
}

static void
ex_created(const struct engine_resp *resp, void *arg)
{
	struct engine_exec *x = arg;
	struct engine_req *req;
	size_t len;

	x->req = NULL;
	if (resp->error != NULL || resp->id == NULL) {
		ex_done(x, -1, resp->error != NULL ? resp->error : "no exec id",
		    ENGINE_EXEC_CREATE);
		return;
	}
	x->id = xstrdup(resp->id);
	x->state = EX_RUN;
	if (x->cbs.started != NULL) {
		x->busy++;
		x->cbs.started(x->arg);
		if (ex_unbusy(x))
			return;
	}
	req = engine_req_new(x->eng, ex_stream_done, x);
	if (x->cbs.output != NULL)
		req->output = ex_output;
	req->sent = ex_sent;
	req->paused = x->paused;
	x->req = req;
	x->eng->ops->exec_start(req, x->id, x->input);
	if (x->early != NULL) {
		if ((len = evbuffer_get_length(x->early)) > 0)
			x->eng->ops->write(
			    req, evbuffer_pullup(x->early, -1), len);
		evbuffer_free(x->early);
		x->early = NULL;
	}
	if (x->close_write)
		x->eng->ops->close_write(req);
}

/* What must not run under a backend's callback: resume, close, reap. */
static void
ex_defer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct engine_exec *x = arg;

	(void)fd;
	(void)what;
	if (x->dead) {
		if (x->busy == 0)
			ex_free(x);
		return;
	}
	if (x->failed != NULL) {
		ex_done(x, -1, x->failed, ENGINE_EXEC_CREATE);
		return;
	}
	if (x->closing && x->state == EX_RUN && x->req != NULL) {
		x->closing = 0;
		engine_req_cancel(x->req);
		x->req = NULL;
		ex_ended(x, NULL);
		return;
	}
	if (x->resume && !x->paused && x->state == EX_RUN && x->req != NULL) {
		x->resume = 0;
		x->eng->ops->pause(x->req, 0);
	}
}

/*
 * Run spec in container id; cbs are called with arg.  The exec is the
 * caller's until done() returns or it is cancelled.
 */
struct engine_exec *
engine_exec_new(struct engine *eng, const char *id,
    const struct engine_exec_spec *spec, const struct engine_exec_cbs *cbs,
    void *arg)
{
	struct engine_exec *x;

	x = xcalloc(1, sizeof *x);
	x->eng = eng;
	x->cbs = *cbs;
	x->arg = arg;
	x->input = spec->stdin;
	if (x->input)
		x->early = evbuffer_new();
	if ((x->defer = event_new(eng->base, -1, 0, ex_defer_cb, x)) == NULL)
		fatalx("%s: event_new", __func__);
	TAILQ_INSERT_TAIL(&eng->execs, x, entry);
	x->state = EX_CREATE;
	if (x->input && !engine_supports(eng, ENGINE_EXEC_STDIN)) {
		x->failed = "this engine cannot send a command its input";
		event_active(x->defer, 0, 0);
		return x;
	}
	x->req = engine_req_new(eng, ex_created, x);
	eng->ops->exec_create(x->req, id, spec);
	return x;
}

/* Input for the command (an exec made with stdin), in order. */
void
engine_exec_write(struct engine_exec *x, const void *p, size_t len)
{
	if (x->dead || !x->input || x->close_write || len == 0)
		return;
	/* Until the stream starts (started() included), it waits. */
	if (x->early != NULL)
		evbuffer_add(x->early, p, len);
	else if (x->state == EX_RUN && x->req != NULL)
		x->eng->ops->write(x->req, p, len);
}

/* The end of its input, once what was written has left. */
void
engine_exec_close_write(struct engine_exec *x)
{
	if (x->dead || !x->input || x->close_write)
		return;
	x->close_write = 1;
	if (x->early == NULL && x->state == EX_RUN && x->req != NULL)
		x->eng->ops->close_write(x->req);
}

/*
 * Take no more output for now (a chunk may still come), or take it again
 * (from the loop, so never under the caller's own callback).
 */
void
engine_exec_pause(struct engine_exec *x, int pause)
{
	if (x->dead || x->paused == !!pause)
		return;
	x->paused = !!pause;
	if (x->state != EX_RUN || x->req == NULL)
		return;
	if (pause) {
		x->eng->ops->pause(x->req, 1);
		x->resume = 0;
	} else {
		x->resume = 1;
		event_active(x->defer, 0, 0);
	}
}

/*
 * Stop reading its output (its processes hold the stream open): the
 * stream is taken as ended, and the exit code is read as it is now.
 */
void
engine_exec_close(struct engine_exec *x)
{
	if (x->dead || x->state != EX_RUN)
		return;
	x->closing = 1;
	event_active(x->defer, 0, 0);
}

/* Abandon the exec: no callback of it is called any more. */
void
engine_exec_cancel(struct engine_exec *x)
{
	if (x == NULL || x->dead)
		return;
	x->dead = 1;
	if (x->busy > 0) {
		/* Freed once back from the caller (ex_unbusy, ex_done). */
		return;
	}
	ex_free(x);
}

/* The engine goes: every exec with it, uncalled. */
void
engine_exec_free_all(struct engine *eng)
{
	struct engine_exec *x;

	while ((x = TAILQ_FIRST(&eng->execs)) != NULL)
		ex_free(x); // NOLINT(clang-analyzer-unix.Malloc)
}
