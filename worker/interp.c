/*
 * Stateful code sessions: one long-lived interpreter per language in the
 * container (Python; JavaScript and TypeScript on Node), started on first
 * use through an exec whose standard input stays open over a hijacked
 * connection.  Each call sends "<length>\n<code>"; the interpreter runs it
 * in the same namespace as the calls before and ends its output on each
 * stream with a marker carrying a per-session nonce, which the worker
 * strips (stdout's marker also carries the call's status as JSON).  So a
 * call costs no new docker exec, and variables, imports and functions
 * stay.  A timeout, a cancellation or an output over the cap kills the
 * interpreter (and with it the session's state, which the result says).
 *
 * Pictures the code made (matplotlib figures, a picture as the last
 * value) come on stdout before the marker as marker lines of their own,
 * "IMG" and JSON after the nonce.  The driver runs as sandbox code, so
 * each is held to the cap, its base64 must be canonical, its bytes must
 * begin with a PNG or JPEG header that checks (imgsig.c), and at most
 * INTERP_MAX_IMAGES of a call are taken; what passes goes to the
 * supervisor as PROTO_F_IMAGE data, and the result lists them all.  A
 * picture with a file (one of the output folder, or an over-cap figure
 * the driver saved there) names it, for a resource link (interp_path()).
 */
#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "clock.h"
#include "config.h"
#include "base64.h"
#include "engine.h"
#include "imgsig.h"
#include "log.h"
#include "proto.h"
#include "random.h"
#include "utf8.h"
#include "worker.h"
#include "xmalloc.h"

#define MARK "\x1eMCPEND:"

/*
 * An error (a traceback) is kept to this many characters in a result, its
 * head and its tail; the whole of a longer one goes to stderr, which is
 * streamed under credit and spooled.  So the marker line that carries it
 * stays far below INTERP_MAX_STATUS (at most 12 bytes per character once
 * JSON-escaped), which bounds what is held while looking for its end.
 */
#define INTERP_ERROR_MAX_S "32768"
#define INTERP_MAX_STATUS (512 * 1024)
#define INTERP_KILL_GRACE_MS 2000 /* after a kill through the agent */
#define INTERP_MAX_IMAGES 8 /* pictures a call may give; more are counted */
#define INTERP_IMAGE_HEAD 8192 /* of a picture over the cap, at most */
#define INTERP_WHERE_MAX 64
#define INTERP_PATH_MAX 4096

/*
 * The session drivers, engine/scripts/session.{py,js}, embedded: argv is
 * the nonce (then, for node, the language), INTERP_ERROR_MAX_S and the
 * bytes of the largest picture sent whole.
 */
extern const char session_py[], session_js[];

struct icall {
	uint32_t reqid;
	json_object *code;
	long long timeout_ms, cap;
	long long start_ms; /* clock_ms() */
	uint64_t egress_seq; /* proxy_seq() at the start */
	struct acct *acct; /* from the call's start */
	TAILQ_ENTRY(icall) entry;
};

struct interp {
	struct worker *w;
	char lang[16];
	char token[40];
	char nonce[33];
	struct wrun run; /* the interpreter's, until it ends (run.c) */
	int running; /* it was created; calls can be sent */
	struct evbuffer *hold[2]; /* stdout, stderr not yet passed on */
	int ended[2]; /* the current call's marker seen */
	json_object *status; /* from stdout's marker */
	json_object *images; /* the current call's, for its result */
	long long image_cap; /* bytes of one picture (--max-image-kb) */
	size_t line_max; /* of a marker line: a status, or a picture */
	struct icall *cur;
	TAILQ_HEAD(, icall) queue;
	long credit;
	int dying, timed_out, cancelled, truncated;
	int oneshot; /* a session for one call only (session: false) */
	int exit; /* the interpreter's exit code, once known (else -1) */
	long long out_bytes, err_bytes;
	/* Output written outside any call (after a call's marker, between
	 * calls): dropped, counted, said in the next result and the log. */
	long long stray[2];
	const char *broke; /* why the session was ended, if not above */
	struct killer *killer;
	struct event *timer, *kick;
	LIST_ENTRY(interp) entry;
};

static LIST_HEAD(, interp) interps = LIST_HEAD_INITIALIZER(interps);

static void interp_next(struct interp *);
static void interp_die(struct interp *, const char *);

/* Only a call's output waits for credit; the rest is dropped. */
static void
interp_flow(struct interp *ip)
{
	wrun_pause(&ip->run, ip->cur != NULL && ip->credit <= 0);
}

/* Output of the session that no call takes: dropped and counted. */
static void
interp_stray(struct interp *ip, int s, size_t len)
{
	ip->stray[s] += (long long)len;
}

/*
 * Say what was dropped since the last report: in the result r (when
 * given) and in the activity log.
 */
static void
interp_stray_report(struct interp *ip, struct proto_result *r)
{
	if (ip->stray[0] == 0 && ip->stray[1] == 0)
		return;
	logs_addf("code",
	    "%lld bytes of stdout and %lld of stderr written by the %s "
	    "session outside a call were dropped",
	    ip->stray[0], ip->stray[1], ip->lang);
	if (r != NULL) {
		r->dropped_stdout_bytes = ip->stray[0];
		r->dropped_stderr_bytes = ip->stray[1];
		r->has |= PROTO_R_DROPPED;
	}
	ip->stray[0] = ip->stray[1] = 0;
}

/* Answer the current call and go on with the next one. */
static void
interp_answer(struct interp *ip, int lost, const char *why)
{
	struct icall *c = ip->cur;
	struct proto_result r;
	json_object *o, *v;
	int ok = 0;

	if (c == NULL)
		return;
	ip->cur = NULL;
	evtimer_del(ip->timer);
	if (ip->oneshot && wrun_active(&ip->run)) {
		/* End of input: the interpreter exits by itself. */
		ip->dying = 1;
		wrun_close_write(&ip->run);
	}
	memset(&r, 0, sizeof r);
	r.has = PROTO_R_CODE;
	if (ip->status != NULL &&
	    json_object_object_get_ex(ip->status, "ok", &v))
		ok = json_object_get_boolean(v);
	if (ip->status != NULL &&
	    json_object_object_get_ex(ip->status, "exit", &v))
		r.exit_code = json_object_get_int(v);
	else if (lost && ip->exit > 0)
		r.exit_code =
		    ip->exit; /* process.exit(4), os._exit(3), a kill */
	else
		r.exit_code = !ok;
	if (ip->status != NULL &&
	    json_object_object_get_ex(ip->status, "error", &v))
		r.error = json_object_get_string(v);
	else if (lost)
		r.error = why;
	r.session_lost = lost;
	r.timed_out = ip->timed_out;
	r.cancelled = ip->cancelled;
	r.truncated = ip->truncated;
	r.duration_ms = clock_ms() - c->start_ms;
	r.stdout_bytes = ip->out_bytes;
	r.stderr_bytes = ip->err_bytes;
	r.images = ip->images;
	interp_stray_report(ip, &r);
	acct_end(c->acct, &r);
	if ((r.egress = proxy_result(c->egress_seq, &r.egress_cut)) != NULL &&
	    r.egress_cut)
		r.has |= PROTO_R_EGRESS_CUT;
	o = proto_result_encode(&r);
	json_object_put(r.egress);
	worker_send_json(ip->w, PROTO_RESULT, c->reqid, o);
	json_object_put(o);
	json_object_put(ip->status);
	ip->status = NULL;
	json_object_put(ip->images);
	ip->images = NULL;
	json_object_put(c->code);
	free(c);
	interp_flow(ip);
}

/* Output of the current call (nothing between calls is passed on). */
static void
interp_pass(struct interp *ip, int s, const char *p, size_t len)
{
	long long room;

	if (ip->cur == NULL || len == 0)
		return;
	if (ip->cur->cap > 0) {
		room = ip->cur->cap - ip->out_bytes - ip->err_bytes;
		if ((long long)len > room) {
			len = room > 0 ? (size_t)room : 0;
			if (!ip->truncated) {
				ip->truncated = 1;
				interp_die(ip, "output over the cap");
			}
		}
	}
	if (s == 0)
		ip->out_bytes += (long long)len;
	else
		ip->err_bytes += (long long)len;
	ip->credit -= (long)len;
	logs_add(s ? "code stderr" : "code", p, len);
	while (len > 0) {
		size_t n = len > PROTO_DATA_CHUNK ? PROTO_DATA_CHUNK : len;

		worker_send(ip->w, PROTO_DATA,
		    s ? PROTO_F_STDERR : PROTO_F_STDOUT, ip->cur->reqid,
		    ip->cur->reqid, p, n);
		p += n;
		len -= n;
	}
	interp_flow(ip);
}

/* Where a picture came from, as the driver said, if it is plain text. */
static json_object *
interp_where(json_object *o)
{
	json_object *v;
	const char *w;
	size_t i, n;

	if (!json_object_object_get_ex(o, "where", &v) ||
	    !json_object_is_type(v, json_type_string))
		return json_object_new_string("picture");
	w = json_object_get_string(v);
	n = (size_t)json_object_get_string_len(v);
	for (i = 0; i < n; i++)
		if (w[i] < 0x20 || w[i] > 0x7e)
			break;
	if (n == 0 || i < n || n > INTERP_WHERE_MAX)
		return json_object_new_string("picture");
	return json_object_new_string_len(w, (int)n);
}

/*
 * The file of a picture record (o's "path"), when it has a sane one: an
 * absolute path of at most INTERP_PATH_MAX bytes of UTF-8, no control
 * characters.  It only names a file of the sandbox for a resource link,
 * which reads it as read_file would; nothing on the host opens it.
 */
static void
interp_path(json_object *im, json_object *o)
{
	json_object *v;
	const char *p;
	size_t i, n;

	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "path", &v) ||
	    !json_object_is_type(v, json_type_string))
		return;
	p = json_object_get_string(v);
	n = (size_t)json_object_get_string_len(v);
	if (n < 2 || n > INTERP_PATH_MAX || p[0] != '/' || !utf8_valid(p, n))
		return;
	for (i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return;
	json_object_object_add(
	    im, "path", json_object_new_string_len(p, (int)n));
}

/* The checked facts of a picture's header into im; -1 if they fail. */
static int
interp_image_facts(json_object *im, const void *p, size_t len)
{
	struct imgsig sig;

	if (imgsig_probe(p, len, &sig) == -1 ||
	    (sig.kind != IMGSIG_PNG && sig.kind != IMGSIG_JPEG))
		return -1;
	json_object_object_add(
	    im, "mime_type", json_object_new_string(sig.mime));
	json_object_object_add(im, "width", json_object_new_int64(sig.width));
	json_object_object_add(im, "height", json_object_new_int64(sig.height));
	return 0;
}

/*
 * One picture line of the current call (after "IMG"): its bytes to the
 * supervisor when they check, and an entry in the call's images either
 * way.  Nothing here is trusted: the JSON is depth-capped, the base64
 * must be canonical, the decoded size is the one counted (a declared
 * size is only reported, and only above the cap).
 */
static void
interp_image(struct interp *ip, const char *line, size_t len)
{
	struct json_tokener *tok;
	json_object *o, *im, *v, *h;
	unsigned char *data = NULL;
	size_t n = 0, off, k;
	const char *err = NULL;

	if (ip->images == NULL)
		ip->images = json_object_new_array();
	if (json_object_array_length(ip->images) >= INTERP_MAX_IMAGES)
		return;
	tok = json_tokener_new_ex(3);
	o = json_tokener_parse_ex(tok, line, (int)len);
	json_tokener_free(tok);
	im = json_object_new_object();
	json_object_object_add(im, "where", interp_where(o));
	interp_path(im, o);
	if (!json_object_is_type(o, json_type_object))
		err = "not a picture record";
	else if (json_object_object_get_ex(o, "data", &v)) {
		if (!json_object_is_type(v, json_type_string) ||
		    (data = base64_decode(json_object_get_string(v),
		         (size_t)json_object_get_string_len(v), &n)) == NULL)
			err = "its data is not base64";
		else if ((long long)n > ip->image_cap)
			err = "over the cap, yet sent whole";
		else if (interp_image_facts(im, data, n) == -1)
			err = "not a PNG or JPEG whose header checks";
	} else if (json_object_object_get_ex(o, "bytes", &v) &&
	           json_object_is_type(v, json_type_int) &&
	           json_object_get_int64(v) > ip->image_cap &&
	           json_object_get_int64(v) < (1LL << 40)) {
		/* Over the cap: only its size (as said) and its header. */
		json_object_object_add(im, "bytes",
		    json_object_new_int64(json_object_get_int64(v)));
		json_object_object_add(
		    im, "over_cap", json_object_new_boolean(1));
		if (json_object_object_get_ex(o, "head", &h) &&
		    json_object_is_type(h, json_type_string) &&
		    json_object_get_string_len(h) <=
		        INTERP_IMAGE_HEAD * 4 / 3 + 4 &&
		    (data = base64_decode(json_object_get_string(h),
		         (size_t)json_object_get_string_len(h), &n)) != NULL)
			interp_image_facts(im, data, n);
		free(data);
		data = NULL;
	} else
		err = "not a picture record";
	json_object_put(o);
	if (err != NULL) {
		json_object_object_add(
		    im, "error", json_object_new_string(err));
		logs_addf("code", "a picture of the %s session refused: %s",
		    ip->lang, err);
	} else if (data != NULL) {
		json_object_object_add(
		    im, "bytes", json_object_new_int64((int64_t)n));
		for (off = 0; off < n; off += k) {
			k = n - off > PROTO_DATA_CHUNK ? PROTO_DATA_CHUNK
			                               : n - off;
			worker_send(ip->w, PROTO_DATA, PROTO_F_IMAGE,
			    ip->cur->reqid, ip->cur->reqid, data + off, k);
		}
		/* The supervisor gives it back as for any data. */
		ip->credit -= (long)n;
	}
	free(data);
	json_object_array_add(ip->images, im);
}

/*
 * Find the end marker in a stream; pass on what comes before it.  What
 * comes on a stream after its marker, or while no call runs, belongs to
 * no call: it is dropped and counted, never held.
 */
static void
interp_scan(struct interp *ip, int s)
{
	struct evbuffer *b = ip->hold[s];
	struct evbuffer_ptr at, nl;
	char mark[64], *line;
	size_t mlen, len;

	mlen = (size_t)snprintf(mark, sizeof mark, MARK "%s", ip->nonce);
	for (;;) {
		len = evbuffer_get_length(b);
		if (ip->cur == NULL || ip->ended[s] || ip->broke != NULL) {
			interp_stray(ip, s, len);
			evbuffer_drain(b, len);
			return;
		}
		at = evbuffer_search(b, mark, mlen, NULL);
		if (at.pos == -1) {
			/* Keep what may be the start of a marker. */
			if (len > mlen) {
				interp_pass(ip, s,
				    (const char *)evbuffer_pullup(
				        b, (ssize_t)(len - mlen)),
				    len - mlen);
				evbuffer_drain(b, len - mlen);
			}
			return;
		}
		nl = evbuffer_search(b, "\n", 1, &at);
		if (nl.pos == -1) {
			/* The marker's line is not complete; held, but only
			 * so far: the driver keeps it well below this. */
			if (len - (size_t)at.pos > ip->line_max) {
				log_warnx("%s: %s session: a marker "
				          "line over %zu bytes",
				    __func__, ip->lang, ip->line_max);
				interp_stray(ip, s, len);
				evbuffer_drain(b, len);
				ip->broke =
				    "the session wrote an end marker "
				    "(or picture) line longer than a "
				    "status or a picture within the cap "
				    "(not the interpreter's own): it was "
				    "killed and its state is gone";
				interp_die(
				    ip, "end marker line over the limit");
			}
			return;
		}
		interp_pass(ip, s,
		    (const char *)evbuffer_pullup(b, (ssize_t)at.pos),
		    (size_t)at.pos);
		evbuffer_drain(b, (size_t)at.pos + mlen);
		len = (size_t)(nl.pos - at.pos) - mlen;
		line = xmalloc(len + 1);
		evbuffer_remove(b, line, len);
		line[len] = '\0';
		evbuffer_drain(b, 1);
		if (strncmp(line, "IMG", 3) == 0) {
			/* A picture, on stdout only; the call goes on. */
			if (s == 0)
				interp_image(ip, line + 3, len - 3);
			free(line);
			continue;
		}
		if (s == 0) {
			json_object_put(ip->status);
			ip->status = json_tokener_parse(line);
		}
		free(line);
		ip->ended[s] = 1;
		if (ip->ended[0] && ip->ended[1]) {
			interp_answer(ip, 0, NULL);
			interp_next(ip);
		}
	}
}

static void
interp_out(int stream, const char *p, size_t len, void *arg)
{
	struct interp *ip = arg;
	int s = stream == ENGINE_STDERR;

	if (ip->cur == NULL || ip->ended[s] || ip->broke != NULL) {
		interp_stray(ip, s, len);
		return;
	}
	evbuffer_add(ip->hold[s], p, len);
	interp_scan(ip, s);
}

static void
interp_free(struct interp *ip)
{
	struct icall *c;

	LIST_REMOVE(ip, entry);
	if ((c = ip->cur) != NULL) {
		acct_end(c->acct, NULL);
		json_object_put(c->code);
		free(c);
	}
	while ((c = TAILQ_FIRST(&ip->queue)) != NULL) {
		TAILQ_REMOVE(&ip->queue, c, entry);
		json_object_put(c->code);
		free(c);
	}
	wrun_cancel(&ip->run);
	if (ip->killer != NULL)
		killer_cancel(ip->killer);
	evbuffer_free(ip->hold[0]);
	evbuffer_free(ip->hold[1]);
	event_free(ip->timer);
	event_free(ip->kick);
	json_object_put(ip->status);
	json_object_put(ip->images);
	free(ip);
}

/* The session is over: answer what it had, then free it. */
static void
interp_ended(struct interp *ip, const char *err)
{
	struct icall *c;
	json_object *r;

	interp_answer(ip, 1,
	    ip->timed_out
	        ? "timed out: the session was killed and its state is gone"
	    : ip->cancelled
	        ? "cancelled: the session was killed and its state is gone"
	    : ip->truncated
	        ? "output over the cap: the session was killed and its state "
	          "is gone"
	    : ip->broke != NULL ? ip->broke
	    : err != NULL       ? err
	                        : "the interpreter exited; its state is gone");
	/* Calls that waited: the next one starts a new session. */
	while ((c = TAILQ_FIRST(&ip->queue)) != NULL) {
		TAILQ_REMOVE(&ip->queue, c, entry);
		r = json_object_new_object();
		json_object_object_add(r, "error",
		    json_object_new_string(
		        "the session ended before this call ran; call again"));
		json_object_object_add(
		    r, "session_lost", json_object_new_boolean(1));
		worker_send_json(ip->w, PROTO_RESULT, c->reqid, r);
		json_object_put(r);
		json_object_put(c->code);
		free(c);
	}
	interp_stray_report(ip, NULL);
	interp_free(ip);
}

/*
 * The interpreter's stream ended: it exited or was killed.  How it exited
 * (process.exit(4), os._exit(3)) is the running call's exit code.
 */
static int
interp_stream_ended(const char *err, void *arg)
{
	struct interp *ip = arg;
	size_t len;
	int s;

	/* What was held back for a marker that never came is output. */
	for (s = 0; s < 2; s++) {
		if ((len = evbuffer_get_length(ip->hold[s])) == 0)
			continue;
		if (ip->cur == NULL || ip->ended[s])
			interp_stray(ip, s, len);
		else
			interp_pass(ip, s,
			    (const char *)evbuffer_pullup(ip->hold[s], -1),
			    len);
		evbuffer_drain(ip->hold[s], len);
	}
	return ip->cur != NULL && err == NULL;
}

static void
interp_done(const struct engine_exec_result *res, void *arg)
{
	struct interp *ip = arg;

	wrun_ended(&ip->run);
	if (res->phase == ENGINE_EXEC_CREATE)
		ip->dying = 1;
	if (res->phase == ENGINE_EXEC_INSPECT) {
		ip->exit = (int)res->exit_code;
		interp_ended(ip, NULL);
	} else
		interp_ended(ip, res->error);
}

static void
interp_killed(void *arg, const char *err)
{
	struct interp *ip = arg;

	ip->killer = NULL;
	if (err != NULL)
		log_warnx("%s: %s", __func__, err);
	/* Make sure the stream ends even if a process holds it open. */
	wrun_close(&ip->run);
}

static void
interp_kick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct interp *ip = arg;
	const char *tok = ip->token;

	struct timeval tv = {
	    INTERP_KILL_GRACE_MS / 1000, (INTERP_KILL_GRACE_MS % 1000) * 1000};

	(void)fd;
	(void)what;
	/* The agent kills at once; its EXIT ends the run, or the grace
	 * does (interp_timer_cb()). */
	if (wrun_kill(&ip->run)) {
		evtimer_add(ip->timer, &tv);
		return;
	}
	if (ip->killer == NULL)
		ip->killer = killer_run(ip->w, &tok, 1, interp_killed, ip);
}

/* Kill the interpreter: its state is lost (said in the result). */
static void
interp_die(struct interp *ip, const char *why)
{
	if (ip->dying)
		return;
	ip->dying = 1;
	log_info("%s session ends: %s", ip->lang, why);
	/* Not from within a curl callback: on the next loop turn. */
	event_active(ip->kick, 0, 0);
}

static void
interp_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct interp *ip = arg;

	(void)fd;
	(void)what;
	if (ip->dying) {
		/* Killed through the agent, and still not ended. */
		wrun_close(&ip->run);
		return;
	}
	ip->timed_out = 1;
	interp_die(ip, "timeout");
}

/* Send the next queued call to the interpreter. */
static void
interp_next(struct interp *ip)
{
	struct icall *c;
	struct timeval tv;
	char hdr[32];
	int n;

	if (ip->cur != NULL || ip->dying || !wrun_active(&ip->run) ||
	    !ip->running || (c = TAILQ_FIRST(&ip->queue)) == NULL)
		return;
	TAILQ_REMOVE(&ip->queue, c, entry);
	ip->cur = c;
	ip->ended[0] = ip->ended[1] = 0;
	ip->out_bytes = ip->err_bytes = 0;
	ip->timed_out = ip->cancelled = ip->truncated = 0;
	ip->credit = PROTO_INITIAL_CREDIT;
	interp_flow(ip);
	c->start_ms = clock_ms();
	c->egress_seq = proxy_seq();
	c->acct = acct_begin();
	n = snprintf(
	    hdr, sizeof hdr, "%d\n", json_object_get_string_len(c->code));
	wrun_write(&ip->run, hdr, (size_t)n);
	wrun_write(&ip->run, json_object_get_string(c->code),
	    (size_t)json_object_get_string_len(c->code));
	logs_addf("code", ">>> %s call (%d bytes)", ip->lang,
	    json_object_get_string_len(c->code));
	if (c->timeout_ms > 0) {
		tv.tv_sec = c->timeout_ms / 1000;
		tv.tv_usec = (c->timeout_ms % 1000) * 1000;
		evtimer_add(ip->timer, &tv);
	}
}

/* The interpreter's exec exists: the first call goes. */
static void
interp_started(void *arg)
{
	struct interp *ip = arg;

	ip->running = 1;
	interp_next(ip);
}

static const struct engine_exec_cbs interp_cbs = {
    .started = interp_started,
    .output = interp_out,
    .ended = interp_stream_ended,
    .done = interp_done,
};

/* A session's interpreter; env (an object of strings, or NULL) is the
 * sandbox's, which every command gets. */
static struct interp *
interp_new(
    struct worker *w, const char *lang, const char *workdir, json_object *venv)
{
	struct interp *ip;
	struct engine_exec_spec spec;
	const char *argv[9], **env;
	char *kv, **kvs, cap[32];
	size_t i,
	    nv = venv != NULL ? (size_t)json_object_object_length(venv) : 0,
	    nkv = nv;
	int n;

	ip = xcalloc(1, sizeof *ip);
	ip->w = w;
	ip->exit = -1;
	snprintf(ip->lang, sizeof ip->lang, "%s", lang);
	random_hex(ip->nonce, sizeof ip->nonce / 2);
	ip->image_cap = w->conf->max_image_kb * 1024;
	/* A picture's line: its base64, its JSON and where it came from. */
	ip->line_max = INTERP_MAX_STATUS + (size_t)ip->image_cap / 3 * 4 + 4;
	snprintf(cap, sizeof cap, "%lld", ip->image_cap);
	snprintf(ip->token, sizeof ip->token, "%.24s", ip->nonce);
	ip->hold[0] = evbuffer_new();
	ip->hold[1] = evbuffer_new();
	ip->timer = evtimer_new(w->base, interp_timer_cb, ip);
	ip->kick = event_new(w->base, -1, 0, interp_kick_cb, ip);
	TAILQ_INIT(&ip->queue);
	LIST_INSERT_HEAD(&interps, ip, entry);

	n = 0;
	if (strcmp(lang, "python") == 0) {
		argv[n++] = "python3";
		argv[n++] = "-u";
		argv[n++] = "-c";
		argv[n++] = session_py;
		argv[n++] = ip->nonce;
	} else {
		argv[n++] = "node";
		argv[n++] = "-e";
		argv[n++] = session_js;
		argv[n++] = ip->nonce;
		argv[n++] = lang;
	}
	argv[n++] = INTERP_ERROR_MAX_S;
	argv[n++] = cap;
	argv[n] = NULL;
	env = xcalloc(nv + PROXY_ENV_MAX + 3, sizeof *env);
	kvs = xcalloc(nv + PROXY_ENV_MAX + 1, sizeof *kvs);
	i = 0;
	if (venv != NULL) {
		json_object_object_foreach(venv, key, val)
		{
			xasprintf(
			    &kvs[i], "%s=%s", key, json_object_get_string(val));
			env[i] = kvs[i];
			i++;
		}
	}
	/* The egress proxy, if the sandbox has egress when it starts. */
	proxy_env(kvs, &nkv, venv);
	for (; i < nkv; i++)
		env[i] = kvs[i];
	xasprintf(&kv, "%s=%s", EXEC_TOKEN_ENV, ip->token);
	env[i++] = kv;
	env[i++] = "PYTHONUNBUFFERED=1";
	env[i] = NULL;
	memset(&spec, 0, sizeof spec);
	spec.argv = argv;
	spec.user = w->exec_user;
	spec.workdir = workdir;
	spec.env = env;
	spec.stdin = 1;
	wrun_start(w, &ip->run, &spec, NULL, ip->token, &interp_cbs, ip);
	/* Its output is paused and resumed (interp_flow()), never counted. */
	wrun_pause(&ip->run, 0);
	free(kv);
	for (i = 0; i < nkv; i++)
		free(kvs[i]);
	free(kvs);
	free(env);
	logs_addf("code", "starting a %s session", lang);
	return ip;
}

/* PROTO_CALL "code": run code in the language's session. */
void
interp_call(struct worker *w, uint32_t reqid, json_object *call)
{
	struct interp *ip;
	struct icall *c;
	struct proto_run run;
	struct proto_result bad;
	json_object *r;
	const char *why;
	char *msg;

	if (proto_run_decode(call, &run, 0, &why) == -1 ||
	    run.kind != PROTO_RUN_CODE ||
	    (strcmp(run.language, "python") != 0 &&
	        strcmp(run.language, "javascript") != 0 &&
	        strcmp(run.language, "typescript") != 0)) {
		if (why == NULL || run.kind != PROTO_RUN_CODE)
			why = "code and a session language are needed";
		proto_run_clear(&run);
		memset(&bad, 0, sizeof bad);
		xasprintf(&msg, "bad call: %s", why);
		bad.error = msg;
		r = proto_result_encode(&bad);
		worker_send_json(w, PROTO_RESULT, reqid, r);
		json_object_put(r);
		free(msg);
		return;
	}
	LIST_FOREACH(ip, &interps, entry)
	if (strcmp(ip->lang, run.language) == 0 && !ip->dying && !ip->oneshot)
		break;
	if (ip == NULL || !run.session) {
		ip = interp_new(w, run.language, run.workdir, run.env);
		ip->oneshot = !run.session;
	}
	c = xcalloc(1, sizeof *c);
	c->reqid = reqid;
	c->code = json_object_new_string_len(run.command, (int)run.command_len);
	c->timeout_ms = run.timeout_ms;
	c->cap = run.output_cap;
	proto_run_clear(&run);
	TAILQ_INSERT_TAIL(&ip->queue, c, entry);
	interp_next(ip);
}

/* A cancellation or credit for a code call; 0 if it is not one. */
int
interp_cancel(struct worker *w, uint32_t reqid)
{
	struct interp *ip;
	struct icall *c;
	json_object *r;

	(void)w;
	LIST_FOREACH(ip, &interps, entry)
	{
		if (ip->cur != NULL && ip->cur->reqid == reqid) {
			ip->cancelled = 1;
			interp_die(ip, "cancelled");
			return 1;
		}
		TAILQ_FOREACH(c, &ip->queue, entry)
		if (c->reqid == reqid) {
			TAILQ_REMOVE(&ip->queue, c, entry);
			r = json_object_new_object();
			json_object_object_add(
			    r, "cancelled", json_object_new_boolean(1));
			worker_send_json(w, PROTO_RESULT, reqid, r);
			json_object_put(r);
			json_object_put(c->code);
			free(c);
			return 1;
		}
	}
	return 0;
}

int
interp_credit(struct worker *w, uint32_t reqid, long bytes)
{
	struct interp *ip;

	(void)w;
	LIST_FOREACH(ip, &interps, entry)
	{
		if (ip->cur == NULL || ip->cur->reqid != reqid)
			continue;
		ip->credit += bytes;
		interp_flow(ip);
		return 1;
	}
	return 0;
}

/* The worker is going away. */
void
interp_abort_all(void)
{
	struct interp *ip;

	while ((ip = LIST_FIRST(&interps)) != NULL)
		interp_free(ip); // NOLINT(clang-analyzer-unix.Malloc)
}
