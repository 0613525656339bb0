/*
 * One command run in a sandbox, for any tool: sent to the sandbox's
 * worker, its output kept bounded for the result (head and tail), spooled
 * whole to disk, streamed as progress, and its accounting collected.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "base64.h"
#include "clock.h"
#include "config.h"
#include "core.h"
#include "egress.h"
#include "imgsig.h"
#include "mcp.h"
#include "output.h"
#include "proto.h"
#include "run.h"
#include "sandbox.h"
#include "spool.h"
#include "xmalloc.h"

/*
 * Standard input longer than this is streamed rather than sent in the
 * call's frame, where JSON escaping (up to 6 bytes a byte) could take it
 * past PROTO_MAX_PAYLOAD.
 */
#define XRUN_STDIN_INLINE (16 * 1024)

/* Pictures of one code call kept for its result (worker/interp.c's). */
#define XRUN_MAX_IMAGES 8

_Static_assert(PROTO_MAX_EGRESS == 64,
    "XRUN_EGRESS_SCHEMA (run.h) says a result has at most 64 entries");

struct xrun {
	struct call *call;
	char *command;
	char *sandbox_id; /* the sandbox's full id, for resource URIs (a
	                   * capability: another session may read them) */
	struct wproc *worker;
	uint32_t reqid;
	struct output out, err;
	long long out_room; /* o->out_room */
	struct spool *spool;
	int own_spool; /* opened here, else the caller's (o->spool) */
	void (*on_output)(struct xrun *, int, size_t, void *);
	void (*done)(struct xrun *, json_object *, void *);
	void *arg;
	long credit; /* of standard input the worker can take */
	int eof_sent;
	char *stdin_text; /* a large stdin_text, streamed as credit allows */
	size_t stdin_len, stdin_off;
	void (*on_credit)(struct xrun *, void *);
	int (*stdout_sink)(struct xrun *, const char *, size_t, void *);
	struct evbuffer *images; /* PROTO_F_IMAGE bytes, within the cap */
	int images_over; /* more came than the cap allows: all refused */
	/* Bytes of pictures its result may still show inline: one
	 * --max-image-kb for all (the rest are linked). */
	long long image_room;
	LIST_ENTRY(xrun) centry; /* in call->runs, while call is set */
	long long t0_ns; /* clock_ns() at its start */
};

static int
xrun_data(uint16_t flags, const char *p, size_t len, void *arg)
{
	struct xrun *x = arg;
	int stream = (flags & PROTO_F_STDERR) != 0;
	size_t most = (size_t)sup.conf->max_image_kb * 1024 * XRUN_MAX_IMAGES;

	if (flags & PROTO_F_IMAGE) {
		/* Not output: kept for the result, never past the cap. */
		if (x->images == NULL)
			x->images = evbuffer_new();
		if (evbuffer_get_length(x->images) + len > most)
			x->images_over = 1;
		else
			evbuffer_add(x->images, p, len);
		return 0;
	}
	if (!stream && x->stdout_sink != NULL)
		return x->stdout_sink(x, p, len, x->arg);
	output_add(stream ? &x->err : &x->out, p, len);
	spool_write(x->spool, stream, p, len);
	if (x->call != NULL)
		progress_output(x->call, p, len);
	if (x->on_output != NULL)
		x->on_output(x, stream, len, x->arg);
	return 0;
}

static long long
member_int(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v)
	                                             : 0;
}

static void
stats_exec(json_object *r)
{
	stats.execs_run++;
	if (member_int(r, "exit_code") != 0)
		stats.execs_failed++;
	if (member_int(r, "timed_out"))
		stats.execs_timed_out++;
	if (member_int(r, "cancelled"))
		stats.execs_cancelled++;
	stats.bytes_out +=
	    member_int(r, "stdout_bytes") + member_int(r, "stderr_bytes");
	stats_observe(&stats.exec_ms, (double)member_int(r, "duration_ms"));
}

/* Send what the credit allows of a large stdin_text. */
static void
xrun_pump_stdin(struct xrun *x)
{
	size_t n;

	while (xrun_credit(x) > 0 && x->stdin_off < x->stdin_len) {
		n = x->stdin_len - x->stdin_off;
		if (n > PROTO_DATA_CHUNK)
			n = PROTO_DATA_CHUNK;
		if ((long)n > xrun_credit(x))
			n = (size_t)xrun_credit(x);
		xrun_write(x, x->stdin_text + x->stdin_off, n,
		    x->stdin_off + n == x->stdin_len);
		x->stdin_off += n;
	}
}

static void
xrun_credit_cb(long bytes, void *arg)
{
	struct xrun *x = arg;

	x->credit += bytes;
	if (x->stdin_text != NULL)
		xrun_pump_stdin(x);
	else if (x->on_credit != NULL && !x->eof_sent)
		x->on_credit(x, x->arg);
}

/*
 * One picture the worker listed: its known members, the resource URI of
 * its file when it is one, and its bytes (taken from the front of
 * x->images) as "data" in base64 when they are there and their header
 * says what the worker said.
 */
static json_object *
xrun_image(struct xrun *x, json_object *in)
{
	static const char *const keys[] = {"where", "mime_type", "bytes",
	    "width", "height", "over_cap", "path", "error"};
	json_object *o, *v;
	struct imgsig sig;
	long long n;
	size_t i, elen;
	unsigned char *p;
	char *enc;

	o = json_object_new_object();
	for (i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (json_object_object_get_ex(in, keys[i], &v) &&
		    !json_object_is_type(v, json_type_object) &&
		    !json_object_is_type(v, json_type_array))
			json_object_object_add(o, keys[i], json_object_get(v));
	if (json_object_object_get_ex(o, "path", &v)) {
		/* A file in the sandbox (the worker checked its form). */
		enc = fileread_uri(x->sandbox_id, json_object_get_string(v));
		json_object_object_add(o, "uri", json_object_new_string(enc));
		free(enc);
	}
	if (json_object_object_get_ex(o, "over_cap", NULL) ||
	    json_object_object_get_ex(o, "error", NULL))
		return o;
	n = json_object_object_get_ex(o, "bytes", &v) ? json_object_get_int64(v)
	                                              : -1;
	if (x->images_over || x->images == NULL || n <= 0 ||
	    n > sup.conf->max_image_kb * 1024 ||
	    (size_t)n > evbuffer_get_length(x->images)) {
		json_object_object_add(o, "error",
		    json_object_new_string("its bytes did not arrive whole"));
		return o;
	}
	p = evbuffer_pullup(x->images, (ssize_t)n);
	if (imgsig_probe(p, (size_t)n, &sig) == -1 ||
	    !json_object_object_get_ex(o, "mime_type", &v) ||
	    strcmp(json_object_get_string(v), sig.mime) != 0) {
		json_object_object_add(o, "error",
		    json_object_new_string("its bytes are not what was said"));
		evbuffer_drain(x->images, (size_t)n);
		return o;
	}
	json_object_object_add(o, "width", json_object_new_int64(sig.width));
	json_object_object_add(o, "height", json_object_new_int64(sig.height));
	if ((long long)sig.width * sig.height > sup.conf->max_image_pixels) {
		/* Few bytes may declare a picture no client can draw. */
		json_object_object_add(
		    o, "over_pixels", json_object_new_boolean(1));
		stats.pictures_over_pixels++;
	} else if (n > x->image_room) {
		/* The result's room for pictures is taken: linked. */
		json_object_object_add(
		    o, "over_room", json_object_new_boolean(1));
	} else {
		x->image_room -= n;
		enc = base64_encode(p, (size_t)n, &elen);
		json_object_object_add(
		    o, "data", json_object_new_string_len(enc, (int)elen));
		free(enc);
	}
	evbuffer_drain(x->images, (size_t)n);
	return o;
}

/* A code call's pictures, in order, for its result. */
static json_object *
xrun_images(struct xrun *x, json_object *list)
{
	json_object *a, *e;
	size_t i;

	a = json_object_new_array();
	for (i = 0; i < json_object_array_length(list) && i < XRUN_MAX_IMAGES;
	     i++) {
		e = json_object_array_get_idx(list, i);
		if (json_object_is_type(e, json_type_object))
			json_object_array_add(a, xrun_image(x, e));
	}
	return a;
}

/* An integer member of a worker's object: 0 when absent or negative,
 * at most hi. */
static long long
xrun_count(json_object *o, const char *key, long long hi)
{
	json_object *v;
	long long n;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_int))
		return 0;
	n = (long long)json_object_get_int64(v);
	return n < 0 ? 0 : n > hi ? hi : n;
}

/*
 * One entry of a run's egress ({host, port, allowed, reason,
 * connections, bytes_out, bytes_in}) as XRUN_EGRESS_SCHEMA says, from
 * what the worker sent; NULL if it is no such entry.
 */
static json_object *
xrun_egress_entry(json_object *e)
{
	char host[EGRESS_NAME_MAX + 3], reason[EGRESS_REASON_MAX];
	json_object *o, *h, *a, *v;
	static const char *const counts[] = {
	    "connections", "bytes_out", "bytes_in", NULL};
	int i;

	if (!json_object_is_type(e, json_type_object) ||
	    !json_object_object_get_ex(e, "host", &h) ||
	    !json_object_is_type(h, json_type_string) ||
	    !json_object_object_get_ex(e, "allowed", &a) ||
	    !json_object_is_type(a, json_type_boolean))
		return NULL;
	egresslist_printable(json_object_get_string(h), host, sizeof host);
	o = json_object_new_object();
	json_object_object_add(o, "host", json_object_new_string(host));
	json_object_object_add(
	    o, "port", json_object_new_int64(xrun_count(e, "port", 65535)));
	json_object_object_add(
	    o, "allowed", json_object_new_boolean(json_object_get_boolean(a)));
	if (json_object_object_get_ex(e, "reason", &v) &&
	    json_object_is_type(v, json_type_string)) {
		egresslist_printable(
		    json_object_get_string(v), reason, sizeof reason);
		json_object_object_add(
		    o, "reason", json_object_new_string(reason));
	}
	for (i = 0; counts[i] != NULL; i++)
		if (json_object_object_get_ex(e, counts[i], NULL))
			json_object_object_add(o, counts[i],
			    json_object_new_int64(
			        xrun_count(e, counts[i], INT64_MAX)));
	return o;
}

/* The proxy's connections during the run, for its result (at most
 * PROTO_MAX_EGRESS, then egress_cut). */
static void
xrun_egress(json_object *r, const struct proto_result *pr)
{
	json_object *a, *o;
	size_t i, n;
	int cut = pr->egress_cut;

	a = json_object_new_array();
	n = pr->egress != NULL ? json_object_array_length(pr->egress) : 0;
	for (i = 0; i < n; i++) {
		if (json_object_array_length(a) == PROTO_MAX_EGRESS) {
			cut = 1;
			break;
		}
		if ((o = xrun_egress_entry(
		         json_object_array_get_idx(pr->egress, i))) != NULL)
			json_object_array_add(a, o);
	}
	json_object_object_add(r, "egress", a);
	if (cut || (pr->has & PROTO_R_EGRESS_CUT))
		json_object_object_add(
		    r, "egress_cut", json_object_new_boolean(cut));
}

/*
 * How much of each stream's kept output its result shows (keep): what
 * fits its room in its call's result (its own share, or all the call has
 * left), stderr up to half of it, stdout the rest, stderr then what
 * stdout left; the room is the call's no more.  No call: all of it.
 */
static void
xrun_fit(struct xrun *x, size_t keep[2])
{
	long long room;
	size_t r;

	if (x->call == NULL) {
		keep[0] = keep[1] = SIZE_MAX;
		return;
	}
	room = x->call->out_room;
	if (x->out_room > 0 && x->out_room < room)
		room = x->out_room;
	r = room > 0 ? (size_t)room : 0;
	keep[1] = output_fit(&x->err, r / 2);
	keep[0] = output_fit(&x->out, r - output_escaped(&x->err, keep[1]));
	keep[1] = output_fit(&x->err, r - output_escaped(&x->out, keep[0]));
	x->call->out_room -= (long long)(output_escaped(&x->out, keep[0]) +
	                                 output_escaped(&x->err, keep[1]));
}

static void
xrun_done(json_object *res, void *arg)
{
	struct xrun *x = arg;
	struct proto_result pr, members;
	json_object *r;
	char *uri[2] = {NULL, NULL};
	size_t keep[2];
	int i;

	proto_result_decode(res, &pr);
	xrun_fit(x, keep);
	/* No word from the worker on how it ran (its sandbox was lost, or
	 * its worker): what a result always has, as the supervisor saw it. */
	if (!(pr.has & PROTO_R_DURATION)) {
		pr.duration_ms = (clock_ns() - x->t0_ns) / 1000000;
		pr.truncated = output_cut(&x->out, SIZE_MAX) ||
		               output_cut(&x->err, SIZE_MAX);
		pr.has |= PROTO_R_DURATION | PROTO_R_TIMED_OUT |
		          PROTO_R_CANCELLED | PROTO_R_OOM | PROTO_R_TRUNCATED;
	}
	r = json_object_new_object();
	json_object_object_add(
	    r, "command", json_object_new_string(x->command));
	json_object_object_add(
	    r, "exit_code", json_object_new_int64(pr.exit_code));
	if (x->spool != NULL) {
		for (i = 0; i < 2; i++)
			if (output_cut(i ? &x->err : &x->out, keep[i]))
				xasprintf(&uri[i], "sandbox://%s/exec/%u/%s",
				    x->sandbox_id, spool_id(x->spool),
				    i ? "stderr" : "stdout");
		json_object_object_add(
		    r, "exec_id", json_object_new_int64(spool_id(x->spool)));
	}
	json_object_object_add(
	    r, "stdout", output_json(&x->out, keep[0], uri[0]));
	json_object_object_add(
	    r, "stderr", output_json(&x->err, keep[1], uri[1]));
	/* What the worker said of the run, its error last. */
	members = pr;
	members.has &= ~PROTO_R_EXIT_CODE;
	members.error = NULL;
	members.images = NULL;
	members.egress = NULL; /* checked, below */
	members.has &= ~PROTO_R_EGRESS_CUT;
	proto_result_add(&members, r);
	for (i = 0; i < 2; i++) {
		if (uri[i] == NULL)
			continue;
		json_object_object_add(r, i ? "stderr_uri" : "stdout_uri",
		    json_object_new_string(uri[i]));
		if (!spool_complete(x->spool))
			json_object_object_add(
			    r, "spool_incomplete", json_object_new_boolean(1));
		free(uri[i]);
	}
	if (pr.images != NULL)
		json_object_object_add(r, "images", xrun_images(x, pr.images));
	if (pr.egress != NULL || (pr.has & PROTO_R_EGRESS_CUT))
		xrun_egress(r, &pr);
	if (pr.error != NULL)
		json_object_object_add(
		    r, "error", json_object_new_string(pr.error));
	x->worker = NULL;
	if (x->call != NULL) {
		LIST_REMOVE(x, centry);
		x->call = NULL;
	}
	stats_exec(r);
	x->done(x, r, x->arg);
	json_object_put(r);
	output_free(&x->out);
	output_free(&x->err);
	if (x->own_spool)
		spool_close(x->spool);
	if (x->images != NULL)
		evbuffer_free(x->images);
	free(x->stdin_text);
	free(x->command);
	free(x->sandbox_id);
	free(x);
}

/*
 * Run a command; done(x, result, arg) gets the result object (borrowed)
 * once it ended, whatever happened.
 */
/*
 * Every command's environment: the sandbox's own (the env {} it was
 * created with, which a pool container did not have in its container)
 * with the call's on top.  *made is what the caller frees, or NULL.
 */
static json_object *
xrun_env(const struct sandbox *sb, json_object *call_env, json_object **made)
{
	json_object *e;

	*made = NULL;
	if (sb->env == NULL || json_object_object_length(sb->env) == 0)
		return call_env;
	if (call_env == NULL)
		return sb->env;
	e = json_object_new_object();
	json_object_object_foreach(sb->env, k, v)
	    json_object_object_add(e, k, json_object_get(v));
	json_object_object_foreach(call_env, k2, v2)
	    json_object_object_add(e, k2, json_object_get(v2));
	*made = e;
	return e;
}

struct xrun *
xrun_start(struct call *c, struct sandbox *sb, const struct xrun_opts *o,
    void (*done)(struct xrun *, json_object *, void *), void *arg)
{
	struct proto_run run;
	struct xrun *x;
	json_object *op, *env = NULL;

	x = xcalloc(1, sizeof *x);
	x->call = c;
	x->command = xstrdup(o->command);
	x->sandbox_id = xstrdup(sb->id);
	x->done = done;
	x->arg = arg;
	x->credit = PROTO_INITIAL_CREDIT;
	x->t0_ns = clock_ns();
	x->on_credit = o->on_credit;
	x->stdout_sink = o->stdout_sink;
	output_init(&x->out, (size_t)sup.conf->inline_output);
	output_init(&x->err, (size_t)sup.conf->inline_output);
	x->out_room = o->out_room;
	x->image_room = sup.conf->max_image_kb * 1024LL;
	x->on_output = o->on_output;
	if ((x->spool = o->spool) == NULL) {
		x->spool = spool_open(sb->spool);
		x->own_spool = 1;
	}

	memset(&run, 0, sizeof run);
	run.kind = o->language != NULL ? PROTO_RUN_CODE : PROTO_RUN_EXEC;
	run.command = o->command;
	run.language = o->language;
	run.session = o->session;
	run.args = o->args;
	if (o->stdin_text != NULL && !o->stdin_stream &&
	    strlen(o->stdin_text) > XRUN_STDIN_INLINE) {
		x->stdin_len = strlen(o->stdin_text);
		x->stdin_text = xstrdup(o->stdin_text);
	}
	run.stdin_stream = o->stdin_stream || x->stdin_text != NULL;
	run.log_as = o->log_as;
	/* Output that goes to a sink, or of our own script, is data, not
	 * text for the log. */
	run.log_stdout = o->stdout_sink == NULL && !o->log_quiet;
	run.probe = o->probe;
	run.workdir = o->workdir != NULL ? o->workdir : sb->workdir;
	/* The sandbox's env {} (sandbox_initialize's) under the call's. */
	run.env = xrun_env(sb, o->env, &env);
	if (o->stdin_text != NULL && x->stdin_text == NULL) {
		run.stdin_text = o->stdin_text;
		stats.bytes_in += (long long)strlen(o->stdin_text);
	}
	run.timeout_ms = o->timeout_ms > 1 ? o->timeout_ms : 1;
	run.output_cap = o->output_cap;
	op = proto_run_encode(&run);
	json_object_put(env);
	sb->exec_count++;
	x->worker = sb->worker;
	if (c != NULL)
		LIST_INSERT_HEAD(&c->runs, x, centry);
	x->reqid = wproc_call(sb->worker, op, xrun_data, xrun_done, x);
	if (o->stdin_stream || x->stdin_text != NULL)
		wproc_on_credit(x->worker, x->reqid, xrun_credit_cb);
	json_object_put(op);
	if (x->stdin_text != NULL)
		xrun_pump_stdin(x);
	/* A step that starts after its call was cancelled ends at once. */
	if (c != NULL && c->cancelled)
		xrun_cancel(x);
	return x;
}

/* Bytes of standard input that may be written now. */
long
xrun_credit(struct xrun *x)
{
	return x->worker != NULL && !x->eof_sent ? x->credit : 0;
}

/* Standard input (eof: nothing follows); keep within xrun_credit(). */
void
xrun_write(struct xrun *x, const void *p, size_t len, int eof)
{
	if (x->worker == NULL || x->eof_sent)
		return;
	x->credit -= (long)len;
	x->eof_sent = eof;
	stats.bytes_in += (long long)len;
	wproc_send(x->worker, x->reqid, p, len, eof);
}

/* The stdout sink took bytes it had held: more may come. */
void
xrun_took(struct xrun *x, size_t len)
{
	if (x->worker != NULL)
		wproc_credit(x->worker, x->reqid, len);
}

/* Send a signal to the command's processes (its group, its token). */
void
xrun_signal(struct xrun *x, int sig)
{
	if (x->worker != NULL)
		wproc_signal(x->worker, x->reqid, sig);
}

/* Kill the command's processes; its result still comes (cancelled). */
void
xrun_cancel(struct xrun *x)
{
	if (x->worker != NULL)
		wproc_cancel(x->worker, x->reqid);
}

/*
 * The call was cancelled: kill the processes of every command it runs,
 * whichever tool started them.  Each run's result still comes (with
 * cancelled: true) and ends its tool's work as any failure would.
 */
void
xrun_cancel_call(struct call *c)
{
	struct xrun *x;

	LIST_FOREACH(x, &c->runs, centry)
	xrun_cancel(x);
}

/* The call is being freed: its runs (if any remain) no longer have it. */
void
xrun_forget_call(struct call *c)
{
	struct xrun *x;

	while ((x = LIST_FIRST(&c->runs)) != NULL) {
		LIST_REMOVE(x, centry);
		x->call = NULL;
	}
}

/* Resource links for the spooled outputs a result cut (into content). */
void
xrun_links(json_object *result, json_object *content)
{
	static const char *const keys[] = {"stdout_uri", "stderr_uri"};
	json_object *v;
	int i;

	for (i = 0; i < 2; i++)
		if (json_object_object_get_ex(result, keys[i], &v))
			json_object_array_add(content,
			    tool_resource_link(json_object_get_string(v),
			        i ? "full stderr" : "full stdout", "text/plain",
			        -1));
}

/*
 * Why a run failed, for a message: the exec's own error (the engine, the
 * worker), else what it wrote on stderr, else fallback.
 */
const char *
xrun_failure(json_object *r, const char *fallback)
{
	json_object *v;

	if (json_object_object_get_ex(r, "error", &v))
		return json_object_get_string(v);
	if (json_object_object_get_ex(r, "stderr", &v) &&
	    json_object_get_string_len(v) > 0)
		return json_object_get_string(v);
	return fallback;
}

int
xrun_ran(json_object *r)
{
	json_object *v;

	/* A run that did not end by itself has no exit code (-1). */
	return json_object_object_get_ex(r, "exit_code", &v) &&
	       json_object_get_int64(v) >= 0;
}

/*
 * Whether a run's result is a success (its "success"): exit code 0 and
 * within every limit (output not cut at the cap), no error of the run.
 */
int
xrun_succeeded(json_object *r)
{
	json_object *v;

	return json_object_object_get_ex(r, "exit_code", &v) &&
	       json_object_get_int64(v) == 0 &&
	       !(json_object_object_get_ex(r, "truncated", &v) &&
	           json_object_get_boolean(v)) &&
	       !json_object_object_get_ex(r, "error", NULL);
}

/*
 * The hosts the egress proxy refused during a run (its result's egress),
 * "host:port, ..." into buf, for a message; "" when none was.
 */
void
xrun_egress_refused(json_object *r, char *buf, size_t len)
{
	json_object *a, *e, *v;
	size_t i, o = 0;
	int w;

	if (len == 0)
		return;
	buf[0] = '\0';
	if (!json_object_object_get_ex(r, "egress", &a) ||
	    !json_object_is_type(a, json_type_array))
		return;
	for (i = 0; i < json_object_array_length(a) && o < len; i++) {
		e = json_object_array_get_idx(a, i);
		if (!json_object_object_get_ex(e, "allowed", &v) ||
		    json_object_get_boolean(v))
			continue;
		w = snprintf(buf + o, len - o, "%s%s:%lld", o > 0 ? ", " : "",
		    json_object_get_string(json_object_object_get(e, "host")),
		    (long long)json_object_get_int64(
		        json_object_object_get(e, "port")));
		if (w < 0)
			break;
		o += (size_t)w;
	}
}
