/*
 * The worker process: started by the supervisor (fork+exec of the same
 * binary with --worker CONTAINER and the socketpair on fd 3), it serves
 * one container's calls on its own libevent loop until told to stop or
 * until the supervisor goes away.
 */

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "config.h"
#include "engine.h"
#include "log.h"
#include "proto.h"
#include "worker.h"
#include "xmalloc.h"

#define WORKER_FD 3
/* A string member of a result cut to fit a frame keeps this much; at most
 * 6 bytes a byte once escaped, well within PROTO_MAX_PAYLOAD. */
#define WORKER_RESULT_STRING_MAX (64 * 1024)

int
worker_send(struct worker *w, uint16_t type, uint16_t flags, uint32_t stream,
    uint32_t reqid, const void *data, size_t len)
{
	return proto_chan_send(w->chan, type, flags, stream, reqid, data, len);
}

/*
 * A result too large for one frame, made to fit: each long string member
 * keeps its head (cut at a UTF-8 boundary) and says how much was cut;
 * other large members are dropped.  The caller frees it.
 */
static json_object *
worker_result_cut(json_object *obj, size_t size)
{
	json_object *r;
	const char *p;
	size_t len, n;
	char *note;

	r = json_object_new_object();
	json_object_object_foreach(obj, key, val)
	{
		if (json_object_is_type(val, json_type_string) &&
		    (len = (size_t)json_object_get_string_len(val)) >
		        WORKER_RESULT_STRING_MAX) {
			p = json_object_get_string(val);
			n = WORKER_RESULT_STRING_MAX;
			while (n > 0 && ((unsigned char)p[n] & 0xc0) == 0x80)
				n--;
			xasprintf(&note,
			    "%.*s\n[... %zu bytes cut: the result was %zu "
			    "bytes, over the %d bytes a result may take]",
			    (int)n, p, len - n, size, PROTO_MAX_PAYLOAD);
			json_object_object_add(
			    r, key, json_object_new_string(note));
			free(note);
		} else if (strlen(json_object_to_json_string_ext(
		               val, JSON_C_TO_STRING_PLAIN)) <=
		           WORKER_RESULT_STRING_MAX)
			json_object_object_add(r, key, json_object_get(val));
	}
	json_object_object_add(r, "result_cut", json_object_new_boolean(1));
	return r;
}

/*
 * Send a JSON message.  A result always goes out, so that its call is
 * answered: one over PROTO_MAX_PAYLOAD is cut to fit (and says so).
 */
int
worker_send_json(
    struct worker *w, uint16_t type, uint32_t reqid, json_object *obj)
{
	struct proto_result dropped;
	json_object *cut;
	size_t size;
	int rv;

	if (proto_chan_send_json(w->chan, type, reqid, reqid, obj) == 0)
		return 0;
	if (errno != EMSGSIZE || type != PROTO_RESULT) {
		log_warn("%s: message type %u of call %u", __func__,
		    (unsigned)type, (unsigned)reqid);
		return -1;
	}
	json_object_to_json_string_length(obj, JSON_C_TO_STRING_PLAIN, &size);
	log_warnx("%s: the result of call %u is %zu bytes; cut to fit",
	    __func__, (unsigned)reqid, size);
	cut = worker_result_cut(obj, size);
	rv = proto_chan_send_json(w->chan, type, reqid, reqid, cut);
	json_object_put(cut);
	if (rv == -1) {
		memset(&dropped, 0, sizeof dropped);
		dropped.has = PROTO_R_EXIT_CODE;
		dropped.exit_code = -1;
		dropped.error =
		    "the result was too large for the worker channel "
		    "and was dropped";
		cut = proto_result_encode(&dropped);
		rv = proto_chan_send_json(w->chan, type, reqid, reqid, cut);
		json_object_put(cut);
	}
	return rv;
}

static void
worker_quit(struct worker *w)
{
	if (w->quitting)
		return;
	w->quitting = 1;
	exec_abort_all(w);
	interp_abort_all();
	relay_stop(w);
	proxy_stop(w);
	agent_stop(w);
	killer_abort_all(w);
	logs_stop();
	events_stop(w);
	acct_stop();
	event_base_loopexit(w->base, NULL);
}

/* One frame from the supervisor; -1 drops the peer (and so the worker). */
static int
worker_dispatch(struct worker *w, struct proto_frame *f)
{
	json_object *obj, *v;
	const char *op;

	switch (f->hdr.type) {
	case PROTO_SHUTDOWN:
		worker_quit(w);
		return 0;
	case PROTO_CALL:
		if ((obj = proto_frame_json(f)) == NULL)
			return -1;
		if ((op = proto_run_op(obj)) == NULL) {
			json_object_put(obj);
			return -1;
		}
		if (strcmp(op, PROTO_OP_EXEC) == 0)
			exec_start(w, f->hdr.reqid, obj);
		else if (strcmp(op, PROTO_OP_KILL) == 0)
			exec_kill_tokens(w, f->hdr.reqid, obj);
		else if (strcmp(op, PROTO_OP_LOGS) == 0)
			logs_read(w, f->hdr.reqid);
		else if (strcmp(op, PROTO_OP_CODE) == 0)
			interp_call(w, f->hdr.reqid, obj);
		else if (strcmp(op, PROTO_OP_EXPOSE) == 0)
			relay_expose(w, f->hdr.reqid, obj);
		else if (strcmp(op, PROTO_OP_UNEXPOSE) == 0)
			relay_unexpose(w, f->hdr.reqid, obj);
		else if (strcmp(op, PROTO_OP_EGRESS) == 0)
			proxy_call(w, f->hdr.reqid, obj);
		else {
			json_object_put(obj);
			return -1;
		}
		json_object_put(obj);
		return 0;
	case PROTO_DATA:
		if (!(f->hdr.flags & PROTO_F_STDIN))
			return -1;
		exec_stdin(w, f->hdr.reqid, f->hdr.flags, f->data, f->hdr.len);
		return 0;
	case PROTO_CANCEL:
		if (!interp_cancel(w, f->hdr.reqid))
			exec_cancel(w, f->hdr.reqid);
		return 0;
	case PROTO_SIGNAL:
		if ((obj = proto_frame_json(f)) == NULL)
			return -1;
		if (json_object_object_get_ex(obj, "signal", &v) &&
		    json_object_is_type(v, json_type_int))
			exec_signal(w, f->hdr.reqid, json_object_get_int(v));
		json_object_put(obj);
		return 0;
	case PROTO_CREDIT:
		if ((obj = proto_frame_json(f)) == NULL)
			return -1;
		if (json_object_object_get_ex(obj, "bytes", &v))
			if (!interp_credit(
			        w, f->hdr.stream, json_object_get_int64(v)))
				exec_credit(
				    w, f->hdr.stream, json_object_get_int64(v));
		json_object_put(obj);
		return 0;
	}
	log_warnx("%s: unexpected message type %u", __func__, f->hdr.type);
	return -1;
}

/* A frame from the supervisor (proto_chan's frame_cb). */
static int
worker_frame(struct proto_frame *f, void *arg)
{
	struct worker *w = arg;

	if (w->quitting)
		return 0; /* what comes after a shutdown is not served */
	return worker_dispatch(w, f);
}

/* The channel ended: the supervisor is gone, or sent a bad frame. */
static void
worker_chan_lost(enum proto_chan_end why, void *arg)
{
	if (why == PROTO_CHAN_BAD)
		log_warnx("%s: bad frame from the supervisor", __func__);
	else
		log_debug("%s: supervisor gone", __func__);
	worker_quit(arg);
}

int
worker_main(const struct config *conf)
{
	struct worker w;
	json_object *hello;
	char name[32];

	/* It dies with the supervisor: wproc_spawn() asked that of the
	 * kernel before the exec. */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	snprintf(name, sizeof name, "worker[%.12s]", conf->worker_container);
	log_setname(name);

	memset(&w, 0, sizeof w);
	LIST_INIT(&w.execs);
	LIST_INIT(&w.killers);
	w.conf = conf;
	w.container = conf->worker_container;
	/* Every sandbox has a uid of its own (--uid-range); the supervisor
	 * names it.  A worker started without it cannot know it. */
	if (conf->worker_uid < 1)
		fatalx("no --worker-uid");
	snprintf(w.exec_user, sizeof w.exec_user, "%ld:%ld", conf->worker_uid,
	    conf->worker_uid);
	if (engine_global_init(conf->docker_host) == -1)
		fatalx("engine_global_init");
	if ((w.base = event_base_new()) == NULL)
		fatalx("event_base_new");
	/* --worker-tls: its engine's own TLS (several engines), else the
	 * environment's as the Docker CLI reads it. */
	if ((w.engine = engine_new_tls(
	         w.base, conf->docker_host, conf->worker_tls)) == NULL)
		fatalx("bad DOCKER_HOST: %s", conf->docker_host);
	if ((w.chan = proto_chan_new(w.base, WORKER_FD, worker_frame,
	         worker_chan_lost, &w)) == NULL)
		fatal("fd %d", WORKER_FD);

	hello = json_object_new_object();
	json_object_object_add(hello, "pid", json_object_new_int(getpid()));
	json_object_object_add(
	    hello, "container_id", json_object_new_string(w.container));
	json_object_object_add(
	    hello, "version", json_object_new_int(PROTO_VERSION));
	worker_send_json(&w, PROTO_HELLO, 0, hello);
	json_object_put(hello);
	events_start(&w);
	acct_start(&w);
	logs_start(&w, (size_t)conf->log_buffer_kb * 1024);
	relay_start(&w);
	proxy_start(&w);
	agent_start(&w);

	event_base_dispatch(w.base);

	exec_abort_all(&w);
	relay_stop(&w);
	proxy_stop(&w);
	agent_stop(&w);
	events_stop(&w);
	acct_stop();
	proto_chan_free(w.chan);
	engine_free(w.engine);
	event_base_free(w.base);
	engine_global_cleanup();
	return 0;
}
