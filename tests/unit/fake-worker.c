/*
 * A stand-in for `mcp-sandboxd --worker ID` (worker/worker.c), for the
 * lifecycle tests: started the same way (fexecve of sup.self_fd with the
 * channel on fd 3), it says PROTO_HELLO {pid, container_id, version}
 * and that its agent is ready (PROTO_NOTIFY agent),
 * answers every PROTO_CALL with a result of exit code 0 ("kill": {}), and
 * exits 0 on PROTO_SHUTDOWN or when the supervisor goes.  No engine: it
 * never touches a container.
 *
 * FAKE_WORKER_MODE makes it misbehave:
 *	crash		exit 1 right after its hello
 *	kill		SIGKILL itself right after its hello
 *	silent		never say hello (the supervisor's hello timeout)
 *	crash-on-call	exit 1 when a call comes
 *	refuse-expose	answer "expose" with an error
 *	refuse-egress	answer "egress" with an error
 *	agent-late	say the agent is up only after it refused the first
 *			"egress" (with an error), taking the next ones
 *	notify-egress	after taking a list, tell of two connections of its
 *			proxy (PROTO_NOTIFY egress): one allowed, one refused
 *	many-egress	give each exec's result 70 egress entries
 * "expose" is answered {port, host_port, address}: the host_port asked
 * for, else 40000 + port, and the bind (logged "expose PORT HOST_PORT");
 * "unexpose" with {}; "egress" with {allow, proxy_port} (logged "egress
 * LIST", its patterns ","-joined, "-" for none), and while it has a
 * list, an exec's result carries egress entries: one allowed, one
 * refused with a control character in its host, one that is no entry.
 * Nothing listens: this is the supervisor's side only.
 * FAKE_WORKER_LOG names a file it appends one line to for each thing it
 * does ("PID start|hello|call OP|shutdown|crash CONTAINER"), so that a
 * test can count the workers of a container and see what they were told.
 */
#include <sys/prctl.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "proto.h"

#define FAKE_WORKER_FD 3
#define FAKE_REFUSAL "fake refusal"

static const char *container = "";
static const char *mode = "";
static struct event_base *base;
static struct proto_chan *chan;
static json_object *allow; /* the egress list it was given, or NULL */
static int egress_refused; /* agent-late: it refused one already */
static int agent_due; /* agent-late: say the agent is up, after a result */

/* One line of what it did, for the test. */
static void
note(const char *what, const char *detail)
{
	const char *path = getenv("FAKE_WORKER_LOG");
	char line[512];
	int fd, n;

	if (path == NULL || *path == '\0')
		return;
	n = snprintf(line, sizeof line, "%d %s%s%s %s\n", (int)getpid(), what,
	    detail != NULL ? " " : "", detail != NULL ? detail : "", container);
	if (n < 0 || (size_t)n >= sizeof line)
		return;
	if ((fd = open(
	         path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600)) == -1)
		return;
	if (write(fd, line, (size_t)n) != n)
		perror("fake-worker: log");
	close(fd);
}

/* The hello, written out before anything else (a crash follows it). */
static int
send_hello(void)
{
	struct evbuffer *out;
	json_object *hello;
	int rv = 0;

	hello = json_object_new_object();
	json_object_object_add(hello, "pid", json_object_new_int(getpid()));
	json_object_object_add(
	    hello, "container_id", json_object_new_string(container));
	json_object_object_add(
	    hello, "version", json_object_new_int(PROTO_VERSION));
	out = evbuffer_new();
	if (proto_write_json(out, PROTO_HELLO, 0, 0, hello) == -1)
		rv = -1;
	json_object_put(hello);
	/* Its (imagined) agent is up at once (agent-late: later). */
	if (strcmp(mode, "agent-late") == 0) {
		while (rv == 0 && evbuffer_get_length(out) > 0)
			if (evbuffer_write(out, FAKE_WORKER_FD) <= 0)
				rv = -1;
		evbuffer_free(out);
		return rv;
	}
	hello = json_object_new_object();
	json_object_object_add(hello, "event", json_object_new_string("agent"));
	json_object_object_add(hello, "ready", json_object_new_boolean(1));
	if (proto_write_json(out, PROTO_NOTIFY, 0, 0, hello) == -1)
		rv = -1;
	while (rv == 0 && evbuffer_get_length(out) > 0)
		if (evbuffer_write(out, FAKE_WORKER_FD) <= 0)
			rv = -1;
	evbuffer_free(out);
	json_object_put(hello);
	return rv;
}

/* The answer to "expose": as the worker's relay would give it. */
static json_object *
answer_expose(json_object *call)
{
	json_object *res, *v;
	char detail[64];
	int port = 0, host_port = 0;

	res = json_object_new_object();
	if (strcmp(mode, "refuse-expose") == 0) {
		json_object_object_add(res, "error",
		    json_object_new_string("cannot listen (refuse-expose)"));
		return res;
	}
	if (json_object_object_get_ex(call, "port", &v))
		port = json_object_get_int(v);
	if (json_object_object_get_ex(call, "host_port", &v))
		host_port = json_object_get_int(v);
	if (host_port == 0)
		host_port = 40000 + port;
	snprintf(detail, sizeof detail, "%d %d", port, host_port);
	note("expose", detail);
	json_object_object_add(res, "port", json_object_new_int(port));
	json_object_object_add(
	    res, "host_port", json_object_new_int(host_port));
	json_object_object_add(res, "address",
	    json_object_new_string(json_object_object_get_ex(call, "bind", &v)
	                               ? json_object_get_string(v)
	                               : "127.0.0.1"));
	return res;
}

static void
send_notify(json_object *o)
{
	proto_chan_send_json(chan, PROTO_NOTIFY, 0, 0, o);
	json_object_put(o);
}

/* A connection of its (imagined) proxy ended. */
static void
notify_egress(const char *host, int allowed, long long out, long long in)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "event", json_object_new_string("egress"));
	json_object_object_add(o, "host", json_object_new_string(host));
	json_object_object_add(o, "port", json_object_new_int(443));
	json_object_object_add(o, "allowed", json_object_new_boolean(allowed));
	if (!allowed)
		json_object_object_add(o, "reason",
		    json_object_new_string("not in the sandbox's list"));
	json_object_object_add(o, "bytes_out", json_object_new_int64(out));
	json_object_object_add(o, "bytes_in", json_object_new_int64(in));
	send_notify(o);
}

/* The answer to "egress": the list taken, as the worker's proxy would. */
static json_object *
answer_egress(json_object *call)
{
	json_object *res, *v;
	char detail[1024] = "";
	size_t i, len = 0;

	res = json_object_new_object();
	if (strcmp(mode, "refuse-egress") == 0 ||
	    (strcmp(mode, "agent-late") == 0 && !egress_refused)) {
		note("call-refused", "egress");
		json_object_object_add(res, "error",
		    json_object_new_string(
		        "the agent is not up (" FAKE_REFUSAL ")"));
		if (!egress_refused && strcmp(mode, "agent-late") == 0)
			egress_refused = agent_due = 1;
		return res;
	}
	if (!json_object_object_get_ex(call, "allow", &v) ||
	    !json_object_is_type(v, json_type_array)) {
		json_object_object_add(
		    res, "error", json_object_new_string("no allow array"));
		return res;
	}
	for (i = 0; i < json_object_array_length(v) && len < sizeof detail; i++)
		len += (size_t)snprintf(detail + len, sizeof detail - len,
		    "%s%s", i ? "," : "",
		    json_object_get_string(json_object_array_get_idx(v, i)));
	note("egress", len > 0 ? detail : "-");
	json_object_put(allow);
	allow = json_object_array_length(v) > 0 ? json_object_get(v) : NULL;
	json_object_object_add(res, "allow", json_object_get(v));
	json_object_object_add(res, "proxy_port",
	    json_object_new_int(allow != NULL ? PROTO_EGRESS_PORT : 0));
	return res;
}

/* An exec's egress entries while it has a list (many-egress: 70). */
static json_object *
egress_entries(void)
{
	json_object *a, *o;
	char host[32];
	int i;

	a = json_object_new_array();
	if (strcmp(mode, "many-egress") == 0) {
		for (i = 0; i < 70; i++) {
			snprintf(host, sizeof host, "h%d.example.org", i);
			o = json_object_new_object();
			json_object_object_add(
			    o, "host", json_object_new_string(host));
			json_object_object_add(
			    o, "port", json_object_new_int(443));
			json_object_object_add(
			    o, "allowed", json_object_new_boolean(1));
			json_object_array_add(a, o);
		}
		return a;
	}
	o = json_object_new_object();
	json_object_object_add(
	    o, "host", json_object_new_string("example.org"));
	json_object_object_add(o, "port", json_object_new_int(443));
	json_object_object_add(o, "allowed", json_object_new_boolean(1));
	json_object_object_add(o, "connections", json_object_new_int(2));
	json_object_object_add(o, "bytes_out", json_object_new_int(100));
	json_object_object_add(o, "bytes_in", json_object_new_int(5000));
	json_object_object_add(o, "extra", json_object_new_string("dropped"));
	json_object_array_add(a, o);
	o = json_object_new_object();
	json_object_object_add(
	    o, "host", json_object_new_string("evil\n.example"));
	json_object_object_add(o, "port", json_object_new_int(80));
	json_object_object_add(o, "allowed", json_object_new_boolean(0));
	json_object_object_add(
	    o, "reason", json_object_new_string("not in the sandbox's list"));
	json_object_object_add(o, "connections", json_object_new_int(-3));
	json_object_array_add(a, o);
	json_object_array_add(a, json_object_new_string("no entry"));
	return a;
}

static void
answer(uint32_t reqid, const char *op, json_object *call)
{
	struct proto_result r;
	json_object *res;
	int notify = 0;

	if (strcmp(op, PROTO_OP_EXPOSE) == 0)
		res = answer_expose(call);
	else if (strcmp(op, PROTO_OP_EGRESS) == 0) {
		res = answer_egress(call);
		notify = allow != NULL && strcmp(mode, "notify-egress") == 0 &&
		         !json_object_object_get_ex(res, "error", NULL);
	} else if (strcmp(op, PROTO_OP_KILL) == 0 ||
	           strcmp(op, PROTO_OP_UNEXPOSE) == 0)
		res = json_object_new_object();
	else {
		memset(&r, 0, sizeof r);
		r.has = strcmp(op, PROTO_OP_CODE) == 0 ? PROTO_R_CODE
		                                       : PROTO_R_EXEC;
		r.exit_code = 0;
		if (allow != NULL && strcmp(op, PROTO_OP_EXEC) == 0) {
			r.egress = egress_entries();
			if (strcmp(mode, "many-egress") == 0) {
				r.has |= PROTO_R_EGRESS_CUT;
				r.egress_cut = 0; /* (it says so itself) */
			}
		}
		res = proto_result_encode(&r);
		json_object_put(r.egress);
	}
	proto_chan_send_json(chan, PROTO_RESULT, reqid, reqid, res);
	json_object_put(res);
	if (notify) {
		notify_egress("example.org", 1, 1200, 34000);
		notify_egress("evil.example", 0, 0, 0);
	}
	if (agent_due) {
		agent_due = 0;
		res = json_object_new_object();
		json_object_object_add(
		    res, "event", json_object_new_string("agent"));
		json_object_object_add(
		    res, "ready", json_object_new_boolean(1));
		send_notify(res);
	}
}

static int
frame_cb(struct proto_frame *f, void *arg)
{
	json_object *obj, *v;

	(void)arg;
	switch (f->hdr.type) {
	case PROTO_SHUTDOWN:
		note("shutdown", NULL);
		event_base_loopexit(base, NULL);
		return 0;
	case PROTO_CALL:
		if ((obj = proto_frame_json(f)) == NULL ||
		    !json_object_object_get_ex(obj, "op", &v)) {
			json_object_put(obj);
			return -1;
		}
		note("call", json_object_get_string(v));
		if (strcmp(mode, "crash-on-call") == 0) {
			note("crash", NULL);
			_exit(1);
		}
		answer(f->hdr.reqid, json_object_get_string(v), obj);
		json_object_put(obj);
		return 0;
	case PROTO_DATA:
	case PROTO_CANCEL:
	case PROTO_CREDIT:
		return 0;
	}
	return -1;
}

static void
lost_cb(enum proto_chan_end why, void *arg)
{
	(void)why;
	(void)arg;
	event_base_loopexit(base, NULL);
}

int
main(int argc, char **argv)
{
	const char *m;
	int i;

	/* As the real worker: die with the supervisor. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	for (i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--worker") == 0)
			container = argv[i + 1];
	if (*container == '\0') {
		fprintf(stderr, "fake-worker: no --worker CONTAINER\n");
		return 2;
	}
	if ((m = getenv("FAKE_WORKER_MODE")) != NULL)
		mode = m;
	note("start", NULL);
	if (strcmp(mode, "silent") != 0) {
		if (send_hello() == -1)
			return 1;
		note("hello", NULL);
	}
	if (strcmp(mode, "crash") == 0) {
		note("crash", NULL);
		_exit(1);
	}
	if (strcmp(mode, "kill") == 0) {
		note("crash", NULL);
		raise(SIGKILL);
	}
	if ((base = event_base_new()) == NULL)
		return 1;
	if ((chan = proto_chan_new(
	         base, FAKE_WORKER_FD, frame_cb, lost_cb, NULL)) == NULL)
		return 1;
	event_base_dispatch(base);
	proto_chan_free(chan);
	event_base_free(base);
	json_object_put(allow);
	return 0;
}
