/*
 * The supervisor's side of the workers: start one per sandbox (fork, then
 * exec of this same binary in worker mode with the socketpair on fd 3),
 * route calls to it and its output back, reap it and say how it died.
 */
#include <sys/prctl.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "config.h"
#include "core.h"
#include "log.h"
#include "mcp.h"
#include "proto.h"
#include "random.h"
#include "sandbox.h"
#include "spool.h"
#include "xmalloc.h"

#define WPROC_HELLO_TIMEOUT 10
#define WPROC_MAX_RESTARTS 5
#define WPROC_CRASHED                                                          \
	"sandbox worker crashed; processes in the call were killed; "          \
	"output may be incomplete; the sandbox is still there, try again"

struct wcall {
	uint32_t reqid;
	wcall_data_cb data_cb;
	wcall_done_cb done_cb;
	wcall_credit_cb credit_cb;
	char token[33]; /* marks an exec's processes in the container */
	void *arg;
	struct wproc *wp;
	int gated; /* made while the worker's gate was shut (wproc_gate) */
	struct event *refuse; /* answers a call that could not be sent */
	char *refusal;
	TAILQ_ENTRY(wcall) entry;
};

/* A frame of a gated call, held until the gate opens. */
struct wframe {
	uint16_t type, flags;
	uint32_t stream, reqid;
	char *data;
	size_t len;
	TAILQ_ENTRY(wframe) entry;
};

struct wproc {
	pid_t pid;
	struct proto_chan *chan; /* NULL once the channel is gone */
	struct sandbox *sb; /* NULL once the sandbox is gone */
	int ready, exited;
	int told; /* sent PROTO_SHUTDOWN */
	char *loss; /* why its calls end as it goes (its sandbox was lost) */
	int loss_oom; /* ... out of memory: they say oom_killed */
	const char *bad; /* why its last frame was refused, if not a crash */
	void (*ready_cb)(struct sandbox *, const char *);
	struct sandbox *ready_sb; /* referenced while ready_cb waits */
	struct event *hello_timer;
	TAILQ_HEAD(, wcall) calls;
	int gate; /* shut: new calls wait (wproc_gate) */
	TAILQ_HEAD(, wframe) held; /* their frames, in order */
	LIST_ENTRY(wproc) entry;
};

static LIST_HEAD(, wproc) wprocs = LIST_HEAD_INITIALIZER(wprocs);
static uint32_t next_reqid = 1;

static void
wcall_free(struct wcall *wc)
{
	if (wc->refuse != NULL)
		event_free(wc->refuse);
	free(wc->refusal);
	free(wc);
}

static void
wproc_noop(json_object *res, void *arg)
{
	(void)res;
	(void)arg;
}

/* A new worker adopts the container; it first kills what the calls of
 * the dead one left running. */
static void
wproc_respawn_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sandbox *sb = arg;
	json_object *killop;

	(void)fd;
	(void)what;
	if (sb->state != SB_READY || sb->worker != NULL || sb->lost ||
	    sup.shutting_down)
		return;
	/* Its engine is being checked after the crash: its answer first
	 * (a lost engine's sandbox gets no new worker, engines.c). */
	if (engines_checking(sb->engine)) {
		struct timeval soon = {0, 200000};

		evtimer_add(sb->respawn, &soon);
		return;
	}
	if (wproc_spawn(sb, NULL) == -1) {
		log_warn("%s: %.12s: no new worker", __func__, sb->id);
		sandbox_destroy(sb, NULL, NULL);
		return;
	}
	log_info("%s: new worker for %.12s", __func__, sb->id);
	stats.workers_restarted++;
	if (sb->respawn_tokens != NULL &&
	    json_object_array_length(sb->respawn_tokens) > 0) {
		killop = json_object_new_object();
		json_object_object_add(
		    killop, "op", json_object_new_string(PROTO_OP_KILL));
		json_object_object_add(
		    killop, "tokens", json_object_get(sb->respawn_tokens));
		wproc_call(sb->worker, killop, NULL, wproc_noop, NULL);
		json_object_put(killop);
	}
	json_object_put(sb->respawn_tokens);
	sb->respawn_tokens = NULL;
	/* Before anything of the layers above reaches the new worker. */
	egresslist_respawned(sb);
	sandbox_event(sb, SANDBOX_RESPAWNED);
}

static void
wproc_maybe_free(struct wproc *wp)
{
	if (wp->chan != NULL || !wp->exited)
		return;
	LIST_REMOVE(wp, entry);
	event_free(wp->hello_timer);
	free(wp->loss);
	free(wp);
}

static void
wproc_held_drop(struct wproc *wp)
{
	struct wframe *f;

	while ((f = TAILQ_FIRST(&wp->held)) != NULL) {
		TAILQ_REMOVE(&wp->held, f, entry);
		free(f->data);
		free(f);
	}
	wp->gate = 0;
}

/*
 * Every call in flight ends now with why (its tokens, if asked, added to
 * tokens): a result with that error, oom_killed when the sandbox was
 * lost out of memory.
 */
static void
wproc_fail_calls(struct wproc *wp, const char *why, json_object *tokens)
{
	struct wcall *wc;
	struct proto_result lost;
	json_object *err;

	while ((wc = TAILQ_FIRST(&wp->calls)) != NULL) {
		TAILQ_REMOVE(&wp->calls, wc, entry);
		if (tokens != NULL && wc->token[0] != '\0')
			json_object_array_add(
			    tokens, json_object_new_string(wc->token));
		memset(&lost, 0, sizeof lost);
		lost.error = why;
		if (wp->loss != NULL && wp->loss_oom) {
			lost.oom_killed = 1;
			lost.has |= PROTO_R_OOM;
		}
		err = proto_result_encode(&lost);
		wc->done_cb(err, wc->arg);
		json_object_put(err);
		wcall_free(wc);
	}
}

/* The channel is gone: fail the calls in flight and drop the worker. */
static void
wproc_lost(struct wproc *wp, const char *why)
{
	json_object *tokens;
	struct timeval tv;
	long ms;
	void (*ready_cb)(struct sandbox *, const char *);
	struct sandbox *sb = wp->sb;

	if (wp->chan == NULL)
		return;
	if (wp->loss != NULL)
		why = wp->loss;
	else if (wp->told || sup.shutting_down)
		why = "the sandbox was stopped (or the server is shutting "
		      "down) while the call ran";
	proto_chan_free(wp->chan);
	wp->chan = NULL;
	wproc_held_drop(wp);
	evtimer_del(wp->hello_timer);
	if (sb != NULL && sb->worker == wp) {
		sb->worker = NULL;
		sb->agent_ready = 0; /* a new worker says when its agent is */
	}
	wp->sb = NULL;
	if (!wp->exited && !wp->told)
		kill(wp->pid, SIGKILL);
	tokens = json_object_new_array();
	wproc_fail_calls(wp, why, tokens);
	if ((ready_cb = wp->ready_cb) != NULL) {
		/* Its sandbox may be dead (stopped while starting), but the
		 * reference keeps it for the creation's callback. */
		wp->ready_cb = NULL;
		sb = wp->ready_sb;
		wp->ready_sb = NULL;
		/* Not a call's crash (no sandbox is there yet): its start's
		 * end, whichever of its hello and its end came first. */
		ready_cb(sb, strcmp(why, WPROC_CRASHED) == 0
		                 ? "its worker exited as it started"
		                 : why);
		sandbox_unref(sb);
	} else if (sb != NULL && sb->pool && !sup.shutting_down) {
		/* A pool container is replaced, not given a new worker. */
		pool_lost(sb, why);
	} else if (sb != NULL && sb->state == SB_READY && !sb->lost &&
	           !sup.shutting_down) {
		engines_suspect(sb->engine);
		/*
		 * Adopt the container with a new worker, which first kills
		 * what the interrupted calls left running; a bounded number
		 * of times, then the sandbox is given up.
		 */
		if (sb->restarts++ < WPROC_MAX_RESTARTS) {
			/* At once the first time, then after 200 ms, 400,
			 * 800...: a worker that keeps dying is given time. */
			json_object_put(sb->respawn_tokens);
			sb->respawn_tokens = json_object_get(tokens);
			ms = sb->restarts == 1 ? 0 : 100L << (sb->restarts - 1);
			tv.tv_sec = ms / 1000;
			tv.tv_usec = (ms % 1000) * 1000;
			if (sb->respawn == NULL)
				sb->respawn =
				    evtimer_new(sup.base, wproc_respawn_cb, sb);
			evtimer_add(sb->respawn, &tv);
		} else {
			log_warnx("%s: %.12s: worker keeps dying; removing the "
			          "sandbox",
			    __func__, sb->id);
			if (sb->owner != NULL)
				mcp_log(sb->owner, 3,
				    "sandbox %s failed (its worker kept "
				    "crashing) and was removed",
				    sb->name);
			sandbox_destroy(sb, NULL, NULL);
		}
	}
	json_object_put(tokens);
	wproc_maybe_free(wp);
}

static struct wcall *
wproc_find_call(struct wproc *wp, uint32_t reqid)
{
	struct wcall *wc;

	TAILQ_FOREACH(wc, &wp->calls, entry)
	if (wc->reqid == reqid)
		return wc;
	return NULL;
}

/*
 * A frame of call reqid to the worker, held in order while that call is
 * gated; -1 when it cannot be sent.
 */
static int
wproc_out(struct wproc *wp, uint16_t type, uint16_t flags, uint32_t stream,
    uint32_t reqid, const void *p, size_t len)
{
	struct wcall *wc;
	struct wframe *f;

	if (wp->chan == NULL)
		return -1;
	if (wp->gate && (wc = wproc_find_call(wp, reqid)) != NULL &&
	    wc->gated) {
		f = xcalloc(1, sizeof *f);
		f->type = type;
		f->flags = flags;
		f->stream = stream;
		f->reqid = reqid;
		f->data = len > 0 ? xmalloc(len) : NULL;
		if (len > 0)
			memcpy(f->data, p, len);
		f->len = len;
		TAILQ_INSERT_TAIL(&wp->held, f, entry);
		return 0;
	}
	return proto_chan_send(wp->chan, type, flags, stream, reqid, p, len);
}

static int
wproc_out_json(struct wproc *wp, uint16_t type, uint32_t stream, uint32_t reqid,
    json_object *obj)
{
	const char *s;
	size_t len;

	s = json_object_to_json_string_length(
	    obj, JSON_C_TO_STRING_PLAIN, &len);
	return wproc_out(wp, type, 0, stream, reqid, s, len);
}

/*
 * A worker's hello speaks this supervisor's protocol version, or says why
 * not.  Workers are started from this process's own executable (see
 * wproc_spawn), so only a broken build differs; never trusted all the same.
 */
static const char *
wproc_hello_check(struct wproc *wp, struct proto_frame *f)
{
	long long version;

	if (proto_hello_version(f, &version) == 0)
		return NULL;
	log_warnx("%s: worker %d speaks protocol version %lld, this "
	          "supervisor %d; dropping it",
	    __func__, (int)wp->pid, version, PROTO_VERSION);
	return "the sandbox's worker speaks another protocol version than "
	       "the server (a mismatched mcp-sandboxd build); the worker was "
	       "stopped";
}

/* The worker says whether its agent takes commands now. */
static void
wproc_agent_notify(struct sandbox *sb, json_object *obj)
{
	json_object *v;
	int was = sb->agent_ready;

	sb->agent_ready = json_object_object_get_ex(obj, "ready", &v) &&
	                  json_object_get_boolean(v);
	if (sb->agent_ready && !was) {
		egresslist_agent_ready(sb);
		sandbox_event(sb, SANDBOX_AGENT_READY);
	}
}

/* What a worker tells of its own accord (PROTO_NOTIFY). */
static void
wproc_notify(struct wproc *wp, json_object *obj)
{
	json_object *v;
	const char *ev;

	if (!json_object_object_get_ex(obj, "event", &v) ||
	    !json_object_is_type(v, json_type_string))
		return;
	ev = json_object_get_string(v);
	/* Counted even when its sandbox went (its last connections). */
	if (strcmp(ev, "egress") == 0) {
		egresslist_notify(wp->sb, obj);
		return;
	}
	if (strcmp(ev, "port_refused") == 0) {
		stats.ports_refused++;
		return;
	}
	if (wp->sb == NULL)
		return;
	if (strcmp(ev, "gone") == 0) {
		/* The calls in flight end with it (sandbox_gone()). */
		wp->loss_oom =
		    json_object_object_get_ex(obj, "oom_killed", &v) &&
		    json_object_is_type(v, json_type_boolean) &&
		    json_object_get_boolean(v);
		sandbox_gone(
		    wp->sb, json_object_object_get_ex(obj, "why", &v) &&
		                    json_object_is_type(v, json_type_string)
		                ? json_object_get_string(v)
		                : "the container went away");
	} else if (strcmp(ev, "agent") == 0)
		wproc_agent_notify(wp->sb, obj);
	else if (sandbox_logs_updated != NULL)
		sandbox_logs_updated(wp->sb); /* "logs", and news of others */
}

/* One frame from a worker; -1 drops it. */
static int
wproc_dispatch(struct wproc *wp, struct proto_frame *f)
{
	void (*ready_cb)(struct sandbox *, const char *);
	struct wcall *wc;
	json_object *obj, *credit;

	switch (f->hdr.type) {
	case PROTO_HELLO:
		if (wp->ready)
			return -1;
		if ((wp->bad = wproc_hello_check(wp, f)) != NULL)
			return -1;
		wp->ready = 1;
		evtimer_del(wp->hello_timer);
		log_debug("%s: worker %d ready", __func__, (int)wp->pid);
		if ((ready_cb = wp->ready_cb) != NULL) {
			struct sandbox *sb = wp->ready_sb;

			wp->ready_cb = NULL;
			wp->ready_sb = NULL;
			ready_cb(sb, NULL);
			sandbox_unref(sb);
		}
		return 0;
	case PROTO_DATA:
		if ((wc = wproc_find_call(wp, f->hdr.reqid)) == NULL)
			return 0; /* a call we gave up on */
		/* Output taken at once gets its credit back at once. */
		if (wc->data_cb == NULL ||
		    wc->data_cb(f->hdr.flags, (const char *)f->data, f->hdr.len,
		        wc->arg) == 0)
			wproc_credit(wp, f->hdr.reqid, f->hdr.len);
		return 0;
	case PROTO_CREDIT:
		if ((obj = proto_frame_json(f)) == NULL)
			return -1;
		if ((wc = wproc_find_call(wp, f->hdr.reqid)) != NULL &&
		    wc->credit_cb != NULL &&
		    json_object_object_get_ex(obj, "bytes", &credit))
			wc->credit_cb(json_object_get_int64(credit), wc->arg);
		json_object_put(obj);
		return 0;
	case PROTO_NOTIFY:
		if ((obj = proto_frame_json(f)) == NULL)
			return -1;
		wproc_notify(wp, obj);
		json_object_put(obj);
		return 0;
	case PROTO_RESULT:
		if ((obj = proto_frame_json(f)) == NULL)
			return -1;
		if ((wc = wproc_find_call(wp, f->hdr.reqid)) != NULL) {
			TAILQ_REMOVE(&wp->calls, wc, entry);
			wc->done_cb(obj, wc->arg);
			wcall_free(wc);
		}
		json_object_put(obj);
		return 0;
	}
	log_warnx("%s: worker %d sent message type %u", __func__, (int)wp->pid,
	    f->hdr.type);
	return -1;
}

/* A frame from the worker (proto_chan's frame_cb). */
static int
wproc_frame(struct proto_frame *f, void *arg)
{
	return wproc_dispatch(arg, f);
}

/* The channel ended: a bad frame, or the worker's end. */
static void
wproc_chan_lost(enum proto_chan_end why, void *arg)
{
	struct wproc *wp = arg;

	if (why == PROTO_CHAN_BAD)
		log_warnx("%s: worker %d sent a bad frame; dropping it",
		    __func__, (int)wp->pid);
	wproc_lost(wp, wp->bad != NULL ? wp->bad : WPROC_CRASHED);
}

static void
wproc_hello_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct wproc *wp = arg;

	(void)fd;
	(void)what;
	log_warnx("%s: worker %d did not start", __func__, (int)wp->pid);
	wproc_lost(wp, "sandbox worker did not start in time");
}

/*
 * Start the worker of a sandbox; ready_cb(sb, NULL) once it said hello,
 * or ready_cb(sb, why) if it never does.
 */
int
wproc_spawn(
    struct sandbox *sb, void (*ready_cb)(struct sandbox *, const char *))
{
	const struct config *c = sup.conf;
	struct wproc *wp;
	struct timeval tv = {WPROC_HELLO_TIMEOUT, 0};
	char cap[32], logkb[32], uid[32], imgkb[32];
	/* The options a worker reads, the egress lists' values each after
	 * its flag (config.c takes at most CONFIG_MAX_LIST of each). */
	char *argv[28 + 4 * CONFIG_MAX_LIST] = {"mcp-sandboxd", "--worker",
	    sb->id, "--docker-host", (char *)engines_url(sb->engine),
	    "--log-level", c->log_level, "--output-cap", cap, "--log-buffer-kb",
	    logkb, "--worker-uid", uid, "--agent", c->agent ? "on" : "off",
	    "--max-image-kb", imgkb, "--log-format", c->log_format};
	int sv[2], null, ch, exe, argc, i;
	pid_t pid, self = getpid();

	for (argc = 0; argv[argc] != NULL; argc++)
		continue;
	/* Its own engine's TLS, never the environment's (engines.c). */
	if (engines_tls(sb->engine) != NULL) {
		argv[argc++] = "--worker-tls";
		argv[argc++] = (char *)engines_tls(sb->engine);
	}
	/* Its runtime: what a failed run may mean differs (worker/exec.c). */
	if (sb->runtime != NULL) {
		argv[argc++] = "--runtime";
		argv[argc++] = sb->runtime;
	}
	if (sb->chandir != NULL) {
		argv[argc++] = "--worker-channel";
		argv[argc++] = sb->chandir;
	}
	/* The ports this server listens on: its exposed ports go there,
	 * and its egress proxy reaches none (listenreg.h). */
	if (spool_listeners_path() != NULL) {
		argv[argc++] = "--worker-listeners";
		argv[argc++] = (char *)spool_listeners_path();
	}
	for (i = 0; i < c->egress_allow.n && i < CONFIG_MAX_LIST; i++) {
		argv[argc++] = "--egress-allow";
		argv[argc++] = c->egress_allow.v[i];
	}
	for (i = 0; i < c->egress_allow_addresses.n && i < CONFIG_MAX_LIST;
	     i++) {
		argv[argc++] = "--egress-allow-address";
		argv[argc++] = c->egress_allow_addresses.v[i];
	}
	argv[argc] = NULL;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
		return -1;
	snprintf(cap, sizeof cap, "%ld", c->output_cap);
	snprintf(logkb, sizeof logkb, "%ld", c->log_buffer_kb);
	snprintf(imgkb, sizeof imgkb, "%ld", c->max_image_kb);
	snprintf(uid, sizeof uid, "%ld", sb->uid);
	switch ((pid = fork())) {
	case -1:
		close(sv[0]);
		close(sv[1]);
		return -1;
	case 0:
		/*
		 * fd 3 is the channel, fd 4 this executable (closed by the
		 * exec it serves); stdin and stdout are the client's.  Both
		 * are moved above 4 first, so that neither lands on the
		 * other's place.
		 */
		if ((ch = fcntl(sv[1], F_DUPFD, 5)) == -1 ||
		    (exe = fcntl(sup.self_fd, F_DUPFD, 5)) == -1 ||
		    dup2(ch, 3) == -1 || dup2(exe, 4) == -1 ||
		    fcntl(4, F_SETFD, FD_CLOEXEC) == -1)
			_exit(127);
		if ((null = open("/dev/null", O_RDWR)) != -1) {
			dup2(null, 0);
			dup2(null, 1);
		}
		closefrom(5);
		signal(SIGPIPE, SIG_DFL);
		/*
		 * It dies with this process, even one that is killed (kept
		 * across the exec); if this one is gone already, it is not
		 * started.  Not "is its parent init": this server may be
		 * pid 1 itself (in a container).
		 */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != self)
			_exit(127);
		fexecve(4, argv, environ);
		_exit(127);
	}
	close(sv[1]);
	wp = xcalloc(1, sizeof *wp);
	wp->pid = pid;
	wp->sb = sb;
	wp->ready_cb = ready_cb;
	if (ready_cb != NULL)
		wp->ready_sb = sandbox_ref(sb);
	TAILQ_INIT(&wp->calls);
	TAILQ_INIT(&wp->held);
	if ((wp->chan = proto_chan_new(
	         sup.base, sv[0], wproc_frame, wproc_chan_lost, wp)) == NULL)
		fatal("%s: the worker's channel", __func__);
	wp->hello_timer = evtimer_new(sup.base, wproc_hello_timeout, wp);
	evtimer_add(wp->hello_timer, &tv);
	LIST_INSERT_HEAD(&wprocs, wp, entry);
	sb->worker = wp;
	/* A worker respawned while its container is paused waits, as the
	 * one before it did, until a call thaws the container (pause.c). */
	if (sb->paused)
		wproc_hold(wp, 1);
	log_debug("%s: worker %d for %.12s", __func__, (int)pid, sb->id);
	return 0;
}

/* A call that could not be sent gets its answer (an error) now. */
static void
wproc_refuse_cb(evutil_socket_t fd, short what, void *arg)
{
	struct wcall *wc = arg;
	struct proto_result refused;
	json_object *err;

	(void)fd;
	(void)what;
	TAILQ_REMOVE(&wc->wp->calls, wc, entry);
	memset(&refused, 0, sizeof refused);
	refused.has = PROTO_R_EXIT_CODE;
	refused.exit_code = -1;
	refused.error = wc->refusal;
	err = proto_result_encode(&refused);
	wc->done_cb(err, wc->arg);
	json_object_put(err);
	wcall_free(wc);
}

/*
 * Send a call; done_cb gets the worker's result (or an error object),
 * exactly once and never from within this function: a call too large for
 * a frame is answered with an error naming the limit on the next turn of
 * the loop.
 */
uint32_t
wproc_call(struct wproc *wp, json_object *call, wcall_data_cb data_cb,
    wcall_done_cb done_cb, void *arg)
{
	struct wcall *wc;
	const char *op;
	size_t size;

	wc = xcalloc(1, sizeof *wc);
	wc->wp = wp;
	if ((wc->reqid = next_reqid++) == 0)
		wc->reqid = next_reqid++;
	wc->data_cb = data_cb;
	wc->done_cb = done_cb;
	wc->arg = arg;
	if ((op = proto_run_op(call)) != NULL &&
	    strcmp(op, PROTO_OP_EXEC) == 0) {
		/* Ours, so that a new worker can kill it if this one dies. */
		random_hex(wc->token, 16);
		proto_run_set_token(call, wc->token);
	}
	wc->gated = wp->gate;
	TAILQ_INSERT_TAIL(&wp->calls, wc, entry);
	json_object_to_json_string_length(call, JSON_C_TO_STRING_PLAIN, &size);
	if (size > PROTO_MAX_PAYLOAD)
		xasprintf(&wc->refusal,
		    "the request is %zu bytes once encoded (code, standard "
		    "input, arguments and environment together), over the "
		    "limit of %d bytes (1 MiB) for one call into a sandbox; "
		    "nothing ran.  Put large inputs in a file first "
		    "(write_file, copy_file)",
		    size, PROTO_MAX_PAYLOAD);
	else if (wproc_out_json(wp, PROTO_CALL, wc->reqid, wc->reqid, call) ==
	         -1)
		xasprintf(&wc->refusal,
		    "cannot send the call to the "
		    "sandbox's worker: %s",
		    strerror(errno));
	if (wc->refusal != NULL) {
		wc->refuse = event_new(sup.base, -1, 0, wproc_refuse_cb, wc);
		event_active(wc->refuse, 0, 0);
	}
	return wc->reqid;
}

/* Return credit for output of a call that the caller has now taken. */
void
wproc_credit(struct wproc *wp, uint32_t reqid, size_t bytes)
{
	json_object *c;

	if (wp->chan == NULL || bytes == 0)
		return;
	c = json_object_new_object();
	json_object_object_add(
	    c, "bytes", json_object_new_int64((int64_t)bytes));
	wproc_out_json(wp, PROTO_CREDIT, reqid, reqid, c);
	json_object_put(c);
}

/* Standard input for a call made with stdin_stream (eof: the last). */
void
wproc_send(struct wproc *wp, uint32_t reqid, const void *p, size_t len, int eof)
{
	uint16_t flags = PROTO_F_STDIN;
	const char *s = p;
	size_t n;

	if (wp->chan == NULL)
		return;
	do {
		n = len > PROTO_DATA_CHUNK ? PROTO_DATA_CHUNK : len;
		if (eof && n == len)
			flags |= PROTO_F_EOF;
		wproc_out(wp, PROTO_DATA, flags, reqid, reqid, s, n);
		s += n;
		len -= n;
	} while (len > 0);
}

/* Learn when the worker passed a call's input on (its credit). */
void
wproc_on_credit(struct wproc *wp, uint32_t reqid, wcall_credit_cb cb)
{
	struct wcall *wc;

	if ((wc = wproc_find_call(wp, reqid)) != NULL)
		wc->credit_cb = cb;
}

/* Ask the worker to kill a call; its result still comes. */
void
wproc_cancel(struct wproc *wp, uint32_t reqid)
{
	wproc_out(wp, PROTO_CANCEL, 0, 0, reqid, NULL, 0);
}

/* Ask the worker to send a signal to a call's processes. */
void
wproc_signal(struct wproc *wp, uint32_t reqid, int sig)
{
	json_object *o;

	if (wp->chan == NULL)
		return;
	o = json_object_new_object();
	json_object_object_add(o, "signal", json_object_new_int(sig));
	wproc_out_json(wp, PROTO_SIGNAL, 0, reqid, o);
	json_object_put(o);
}

/*
 * Calls (and all else) to the worker wait while held (its container is
 * paused), and go out in order when released.
 */
void
wproc_hold(struct wproc *wp, int hold)
{
	proto_chan_hold(wp->chan, hold);
}

/*
 * The gate: while shut, calls made from now on wait, with everything
 * sent for them (input, credit, a cancellation), and go out in order
 * when it opens; calls made before pass.  So a snapshot's own command
 * runs alone (run/snapshot.c).
 */
void
wproc_gate(struct wproc *wp, int shut)
{
	struct wframe *f;
	struct wcall *wc;

	if (shut) {
		wp->gate = 1;
		return;
	}
	wp->gate = 0;
	TAILQ_FOREACH(wc, &wp->calls, entry)
	wc->gated = 0;
	while ((f = TAILQ_FIRST(&wp->held)) != NULL) {
		TAILQ_REMOVE(&wp->held, f, entry);
		if (wp->chan != NULL)
			proto_chan_send(wp->chan, f->type, f->flags, f->stream,
			    f->reqid, f->data, f->len);
		free(f->data);
		free(f);
	}
}

/* Whether calls of the worker are in flight. */
int
wproc_busy(struct wproc *wp)
{
	return !TAILQ_EMPTY(&wp->calls);
}

/*
 * Its sandbox was lost (before wproc_shutdown()): the calls in flight end
 * now, saying why, whatever the worker still sends of them (a run that
 * failed as its container died: its result comes after the news).
 */
void
wproc_set_loss(struct wproc *wp, const char *why)
{
	free(wp->loss);
	wp->loss = xstrdup(why);
	wproc_fail_calls(wp, wp->loss, NULL);
}

/* The sandbox is going: tell the worker to finish; drop its calls. */
void
wproc_shutdown(struct wproc *wp)
{
	proto_chan_hold(wp->chan, 0);
	if (wp->chan != NULL)
		proto_chan_send(wp->chan, PROTO_SHUTDOWN, 0, 0, 0, NULL, 0);
	wp->told = 1;
	if (wp->sb != NULL && wp->sb->worker == wp)
		wp->sb->worker = NULL;
	wp->sb = NULL;
}

/* Its sandbox was lost with its engine: calls answered why, and the
 * worker goes now, with no new one. */
void
wproc_lose(struct wproc *wp, const char *why)
{
	wproc_set_loss(wp, why);
	wproc_lost(wp, why);
}

pid_t
wproc_pid(struct wproc *wp)
{
	return wp->pid;
}

int
wproc_count(void)
{
	struct wproc *wp;
	int n = 0;

	LIST_FOREACH(wp, &wprocs, entry)
	n++;
	return n;
}

void
wproc_kill_all(void)
{
	struct wproc *wp;

	LIST_FOREACH(wp, &wprocs, entry)
	if (!wp->exited)
		kill(wp->pid, SIGKILL);
}

/* SIGCHLD: reap every child that exited and say how. */
void
wproc_reap(void)
{
	struct wproc *wp;
	pid_t pid;
	int status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		LIST_FOREACH(wp, &wprocs, entry)
		if (wp->pid == pid)
			break;
		if (WIFSIGNALED(status))
			log_warnx("worker %d exited on signal %d", (int)pid,
			    WTERMSIG(status));
		else if (WEXITSTATUS(status) != 0)
			log_warnx("worker %d exited with code %d", (int)pid,
			    WEXITSTATUS(status));
		else
			log_debug("worker %d exited", (int)pid);
		if (wp == NULL)
			continue;
		wp->exited = 1;
		if (wp->chan != NULL && WIFSIGNALED(status)) {
			/* Its owner only (NULL would tell every session). */
			if (wp->sb != NULL && wp->sb->owner != NULL)
				mcp_log(wp->sb->owner, 4,
				    "sandbox worker %d died on signal %d",
				    (int)pid, WTERMSIG(status));
			wproc_lost(wp, WPROC_CRASHED);
		} else
			wproc_maybe_free(wp);
	}
}
