/*
 * The engine seam (engine/) against a fake Docker engine on a unix
 * socket: the one exec state machine (create, start, stream, exit code)
 * and the one container inspection, through the real Docker backend.  An
 * engine that refuses, hangs up early or answers nonsense gives a clean
 * error, never a crash or a leak (the suite also runs under ASan).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "docker.h"
#include "engine.h"
#include "fakesock.h"
#include "tmptree.h"

#define CID "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"
#define ARCHIVE "PUT /v1.41/containers/" CID "/archive?path="

/* --- the fake engine --- */

enum { OK, REFUSE, HANG_UP, NONSENSE, MISSING };

static struct {
	int create, start, inspect, container; /* how each is answered */
	long exit_code;
	int requests;
	int libpod; /* /_ping says Podman's service answers */
	char body[65536]; /* of the last container create */
	char order[256]; /* starts and archives put, in order */
} fake;

struct conn {
	struct bufferevent *bev;
	int raw; /* hijacked: what comes is the command's input */
	struct evbuffer *input;
};

static struct event_base *base;
static struct evconnlistener *lis;
static char sock_path[108], host[128];
static struct conn conns[16];

static void
conn_close(struct conn *c)
{
	if (c->bev != NULL)
		bufferevent_free(c->bev);
	if (c->input != NULL)
		evbuffer_free(c->input);
	memset(c, 0, sizeof *c);
}

/* Close once what was written has gone. */
static void
conn_drained(struct bufferevent *bev, void *arg)
{
	(void)bev;
	conn_close(arg);
}

static void
conn_finish(struct conn *c)
{
	bufferevent_setcb(c->bev, NULL, conn_drained, NULL, c);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		conn_close(c);
}

static void
frame(struct evbuffer *out, int stream, const char *p, size_t len)
{
	unsigned char h[8] = {(unsigned char)stream, 0, 0, 0,
	    (unsigned char)(len >> 24), (unsigned char)(len >> 16),
	    (unsigned char)(len >> 8), (unsigned char)len};

	evbuffer_add(out, h, sizeof h);
	evbuffer_add(out, p, len);
}

static void
reply(struct evbuffer *out, int status, const char *body)
{
	evbuffer_add_printf(out,
	    "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n\r\n%s",
	    status, strlen(body), body);
}

/* One request (line and body) of a connection. */
static void
serve(struct conn *c, const char *line, const char *in, int upgrade)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	char body[512];

	fake.requests++;
	if (strncmp(line, "GET /_ping", 10) == 0) {
		evbuffer_add_printf(out,
		    "HTTP/1.1 200 OK\r\nApi-Version: 1.41\r\n%s"
		    "Content-Length: 2\r\n\r\nOK",
		    fake.libpod ? "Libpod-Api-Version: 4.3.1\r\n" : "");
	} else if (strncmp(line, "GET /v1.41/_ping", 16) == 0) {
		reply(out, 200, "{}");
	} else if (strncmp(line, "POST /v1.41/containers/create", 29) == 0) {
		snprintf(fake.body, sizeof fake.body, "%s", in);
		reply(out, 201, "{\"Id\":\"" CID "\"}");
	} else if (strstr(line, "/containers/" CID "/start") != NULL) {
		strcat(fake.order, "start;");
		reply(out, 204, "");
	} else if (strncmp(line, ARCHIVE, strlen(ARCHIVE)) == 0) {
		snprintf(fake.order + strlen(fake.order),
		    sizeof fake.order - strlen(fake.order),
		    "archive:%.*s:%.8s;",
		    (int)strcspn(line + strlen(ARCHIVE), " "),
		    line + strlen(ARCHIVE), in); /* the tar's first name */
		reply(out, 200, "");
	} else if (strncmp(line, "DELETE /v1.41/containers/" CID, 25) == 0) {
		reply(out, 204, "");
	} else if (strstr(line, "/exec HTTP") != NULL) {
		if (fake.create == REFUSE)
			reply(out, 500, "{\"message\":\"no exec for you\"}");
		else
			reply(out, 201, "{\"Id\":\"e1\"}");
	} else if (strstr(line, "/exec/e1/start") != NULL) {
		if (fake.start == HANG_UP) {
			conn_close(c);
			return;
		}
		if (upgrade) {
			/* Output once the input has ended (conn_event). */
			evbuffer_add_printf(out,
			    "HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\n"
			    "Upgrade: tcp\r\n\r\n");
			c->raw = 1;
			return;
		}
		evbuffer_add_printf(out,
		    "HTTP/1.1 200 OK\r\nContent-Type: "
		    "application/vnd.docker.multiplexed-stream\r\n"
		    "Connection: close\r\n\r\n");
		frame(out, 1, "hello\n", 6);
		frame(out, 2, "oops\n", 5);
		frame(out, 1, "bye\n", 4);
		conn_finish(c);
	} else if (strstr(line, "/exec/e1/json") != NULL) {
		if (fake.inspect == NONSENSE)
			reply(out, 200, "{\"ExitCode\": 1,,");
		else {
			snprintf(body, sizeof body,
			    "{\"Running\":false,\"ExitCode\":%ld}",
			    fake.exit_code);
			reply(out, 200, body);
		}
	} else if (strstr(line, "/containers/" CID "/json") != NULL) {
		if (fake.container == MISSING)
			reply(out, 404, "{\"message\":\"No such container\"}");
		else if (fake.container == NONSENSE)
			reply(out, 200, "[1, 2");
		else
			reply(out, 200,
			    "{\"Id\":\"" CID "\",\"State\":{\"Status\":"
			    "\"exited\",\"Running\":false,\"Pid\":0,"
			    "\"ExitCode\":137,\"OOMKilled\":true},"
			    "\"HostConfig\":{\"PidsLimit\":256},"
			    "\"Config\":{\"Labels\":{\"a\":\"b\"}}}");
	} else
		reply(out, 404, "{\"message\":\"page not found\"}");
}

static void
conn_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr end;
	char *head, *cl, *nl, *body;
	size_t hlen, blen;
	int upgrade;

	while (c->bev != NULL && !c->raw) {
		end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
		if (end.pos < 0)
			return;
		hlen = (size_t)end.pos + 4;
		head = malloc(hlen + 1);
		evbuffer_copyout(in, head, hlen);
		head[hlen] = '\0';
		blen = 0;
		if ((cl = strcasestr(head, "\r\nContent-Length:")) != NULL)
			blen = strtoul(cl + 17, NULL, 10);
		if (evbuffer_get_length(in) < hlen + blen) {
			free(head);
			return;
		}
		evbuffer_drain(in, hlen);
		body = calloc(1, blen + 1);
		evbuffer_remove(in, body, blen);
		upgrade = strcasestr(head, "\r\nUpgrade: tcp") != NULL;
		if ((nl = strstr(head, "\r\n")) != NULL)
			*nl = '\0';
		serve(c, head, body, upgrade);
		free(body);
		free(head);
	}
	if (c->bev != NULL && c->raw)
		evbuffer_add_buffer(c->input, in);
}

/* The client hung up, or (hijacked) ended its input: echo it, close. */
static void
conn_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *out = bufferevent_get_output(bev);
	size_t len;

	if (c->raw && (what & BEV_EVENT_EOF)) {
		evbuffer_add_buffer(c->input, bufferevent_get_input(bev));
		len = evbuffer_get_length(c->input);
		frame(out, 1, (const char *)evbuffer_pullup(c->input, -1), len);
		c->raw = 0;
		conn_finish(c);
		return;
	}
	conn_close(c);
}

static void
engine_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int len, void *arg)
{
	struct conn *c = NULL;
	size_t i;

	(void)l;
	(void)sa;
	(void)len;
	(void)arg;
	for (i = 0; i < sizeof conns / sizeof conns[0]; i++)
		if (conns[i].bev == NULL) {
			c = &conns[i];
			break;
		}
	cr_assert_not_null(c, "too many connections");
	c->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->input = evbuffer_new();
	bufferevent_setcb(c->bev, conn_read, NULL, conn_event, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

/* --- the client side --- */

struct run {
	struct engine_exec *x;
	char out[256], err[256];
	size_t sent;
	int started, done, cancel_on_output, write_on_start;
	long exit_code;
	char error[256], *errp; /* errp: error, or NULL */
	enum engine_exec_phase phase;
};

static void
run_started(void *arg)
{
	struct run *r = arg;

	r->started++;
	if (r->write_on_start)
		engine_exec_write(r->x, "from started ", 13);
}

static void
run_output(int stream, const char *p, size_t len, void *arg)
{
	struct run *r = arg;
	char *b = stream == ENGINE_STDERR ? r->err : r->out;

	cr_assert(stream == ENGINE_STDOUT || stream == ENGINE_STDERR);
	strncat(b, p,
	    len < sizeof r->out - strlen(b) - 1
	        ? len
	        : sizeof r->out - strlen(b) - 1);
	if (r->cancel_on_output) {
		engine_exec_cancel(r->x);
		r->x = NULL;
		r->done = -1; /* no done() may follow */
	}
}

static void
run_sent(size_t n, void *arg)
{
	((struct run *)arg)->sent += n;
}

static void
run_done(const struct engine_exec_result *res, void *arg)
{
	struct run *r = arg;

	cr_assert_eq(r->done, 0, "done() after a cancel, or twice");
	r->done = 1;
	r->x = NULL;
	r->exit_code = res->exit_code;
	r->phase = res->phase;
	if (res->error != NULL) {
		snprintf(r->error, sizeof r->error, "%s", res->error);
		r->errp = r->error;
	}
}

static const struct engine_exec_cbs run_cbs = {
    .started = run_started,
    .output = run_output,
    .sent = run_sent,
    .done = run_done,
};

static struct engine *eng;

static void
setup(void)
{
	memset(&fake, 0, sizeof fake);
	memset(conns, 0, sizeof conns);
	cr_assert_eq(engine_global_init("unix:///x"), 0);
	cr_assert_not_null(base = event_base_new());
	lis = fakesock_listen(base, "mcp-engine", engine_accept, sock_path,
	    sizeof sock_path, host, sizeof host);
	cr_assert_not_null(eng = engine_new(base, host));
}

static void
teardown(void)
{
	size_t i;

	engine_free(eng);
	for (i = 0; i < sizeof conns / sizeof conns[0]; i++)
		conn_close(&conns[i]);
	evconnlistener_free(lis);
	event_base_free(base);
	unlink(sock_path);
	engine_global_cleanup();
}

/* Run the loop in 10 ms turns until *what is set (5 s at most). */
static void
spin_until(int *what)
{
	struct timeval tv = {0, 10000};
	int i;

	for (i = 0; i < 500 && *what == 0; i++) {
		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
}

static void
spin(int turns)
{
	struct timeval tv = {0, 10000};

	while (turns-- > 0) {
		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
}

static struct engine_exec *
start(struct run *r, int input)
{
	static const char *const argv[] = {"/bin/sh", "-c", "true", NULL};
	static const char *const env[] = {"A=1", NULL};
	struct engine_exec_spec spec;

	memset(&spec, 0, sizeof spec);
	spec.argv = argv;
	spec.user = "1000:1000";
	spec.env = env;
	spec.stdin = input;
	r->x = engine_exec_new(eng, CID, &spec, &run_cbs, r);
	cr_assert_not_null(r->x);
	return r->x;
}

TestSuite(engine, .init = setup, .fini = teardown);

Test(engine, exec_reports_exit_code_and_demuxed_output)
{
	struct run r;

	memset(&r, 0, sizeof r);
	fake.exit_code = 3;
	start(&r, 0);
	spin_until(&r.done);
	cr_assert_eq(r.done, 1, "the exec never ended");
	cr_expect_null(r.errp, "error: %s", r.error);
	cr_expect_eq(r.phase, ENGINE_EXEC_INSPECT);
	cr_expect_eq(r.exit_code, 3);
	cr_expect_eq(r.started, 1);
	cr_expect_str_eq(r.out, "hello\nbye\n");
	cr_expect_str_eq(r.err, "oops\n");
}

Test(engine, exec_sends_its_input_before_and_after_the_stream_starts)
{
	struct run r;

	memset(&r, 0, sizeof r);
	r.write_on_start = 1;
	start(&r, 1);
	engine_exec_write(r.x, "early ", 6); /* before the exec exists */
	spin_until(&r.started);
	cr_assert_eq(r.started, 1);
	engine_exec_write(r.x, "late", 4);
	engine_exec_close_write(r.x);
	spin_until(&r.done);
	cr_assert_eq(r.done, 1, "the exec never ended");
	cr_expect_null(r.errp, "error: %s", r.error);
	cr_expect_eq(r.exit_code, 0);
	cr_expect_str_eq(
	    r.out, "early from started late", "the engine got \"%s\"", r.out);
	cr_expect_eq(r.sent, 23, "%zu bytes said sent", r.sent);
}

Test(engine, exec_refused_is_a_create_error)
{
	struct run r;

	memset(&r, 0, sizeof r);
	fake.create = REFUSE;
	start(&r, 0);
	spin_until(&r.done);
	cr_assert_eq(r.done, 1);
	cr_expect_eq(r.phase, ENGINE_EXEC_CREATE);
	cr_expect_str_eq(r.error, "no exec for you");
	cr_expect_eq(r.exit_code, -1);
	cr_expect_eq(r.started, 0);
}

Test(engine, engine_hanging_up_is_a_stream_error)
{
	struct run r;

	memset(&r, 0, sizeof r);
	fake.start = HANG_UP;
	start(&r, 0);
	spin_until(&r.done);
	cr_assert_eq(r.done, 1);
	cr_expect_eq(r.phase, ENGINE_EXEC_STREAM);
	cr_expect_not_null(r.errp);
	cr_expect_eq(r.exit_code, -1);
}

Test(engine, engine_hanging_up_on_a_hijack_is_a_stream_error)
{
	struct run r;

	memset(&r, 0, sizeof r);
	fake.start = HANG_UP;
	start(&r, 1);
	engine_exec_write(r.x, "x", 1);
	spin_until(&r.done);
	cr_assert_eq(r.done, 1);
	cr_expect_eq(r.phase, ENGINE_EXEC_STREAM);
	cr_expect_not_null(r.errp);
}

Test(engine, malformed_exec_inspection_is_an_error)
{
	struct run r;

	memset(&r, 0, sizeof r);
	fake.inspect = NONSENSE;
	start(&r, 0);
	spin_until(&r.done);
	cr_assert_eq(r.done, 1);
	cr_expect_eq(r.phase, ENGINE_EXEC_INSPECT);
	cr_expect_not_null(r.errp);
	cr_expect_eq(r.exit_code, -1);
	cr_expect_str_eq(r.out, "hello\nbye\n");
}

Test(engine, exec_cancelled_from_its_output_is_quiet)
{
	struct run r;

	memset(&r, 0, sizeof r);
	r.cancel_on_output = 1;
	start(&r, 0);
	spin_until(&r.done);
	spin(5);
	cr_expect_eq(r.done, -1);
	cr_expect_str_eq(r.out, "hello\n", "output after the cancel");
}

Test(engine, exec_in_flight_goes_with_the_engine)
{
	struct run r;

	memset(&r, 0, sizeof r);
	start(&r, 1);
	spin_until(&r.started);
	cr_assert_eq(r.started, 1);
	engine_free(eng); /* the stream still open: no callback, no leak */
	eng = NULL;
	cr_expect_eq(r.done, 0);
}

struct seen {
	int done, notfound, has;
	char error[256], *err;
	struct engine_container c;
	char status[32], label[32];
};

static void
inspected(const struct engine_resp *resp, void *arg)
{
	struct seen *s = arg;
	json_object *v;

	s->done = 1;
	s->notfound = resp->notfound;
	if (resp->error != NULL) {
		snprintf(s->error, sizeof s->error, "%s", resp->error);
		s->err = s->error;
	}
	if ((s->has = resp->container != NULL)) {
		s->c = *resp->container;
		snprintf(s->status, sizeof s->status, "%s",
		    s->c.status != NULL ? s->c.status : "");
		if (s->c.labels != NULL &&
		    json_object_object_get_ex(s->c.labels, "a", &v))
			snprintf(s->label, sizeof s->label, "%s",
			    json_object_get_string(v));
	}
}

Test(engine, container_inspection_is_parsed_once)
{
	struct seen s = {0};

	engine_container_inspect(eng, CID, inspected, &s);
	spin_until(&s.done);
	cr_assert_eq(s.done, 1);
	cr_assert_null(s.err, "error: %s", s.error);
	cr_assert(s.has);
	cr_expect_eq(s.c.running, 0);
	cr_expect_str_eq(s.status, "exited");
	cr_expect_eq(s.c.exit_code, 137);
	cr_expect(s.c.oom_killed);
	cr_expect_eq(s.c.pids_limit, 256);
	cr_expect_str_eq(s.label, "b");
}

Test(engine, missing_container_is_notfound)
{
	struct seen s = {0};

	fake.container = MISSING;
	engine_container_inspect(eng, CID, inspected, &s);
	spin_until(&s.done);
	cr_assert_eq(s.done, 1);
	cr_expect(s.notfound);
	cr_expect_str_eq(s.error, "No such container");
	cr_expect(!s.has);
}

Test(engine, malformed_container_inspection_is_an_error)
{
	struct seen s = {0};

	fake.container = NONSENSE;
	engine_container_inspect(eng, CID, inspected, &s);
	spin_until(&s.done);
	cr_assert_eq(s.done, 1);
	cr_expect_not_null(s.err);
	cr_expect(!s.has);
	cr_expect(!s.notfound);
}

Test(engine, no_engine_is_a_clean_error)
{
	struct seen s = {0};

	engine_free(eng);
	unlink(sock_path);
	cr_assert_not_null(eng = engine_new(base, host));
	engine_container_inspect(eng, CID, inspected, &s);
	spin_until(&s.done);
	cr_assert_eq(s.done, 1);
	cr_expect_not_null(s.err);
	cr_expect(strstr(s.error, "not reachable") != NULL, "%s", s.error);
}

Test(engine, local_engine_says_it_has_cgroups)
{
	cr_expect(engine_supports(eng, ENGINE_CGROUPS | ENGINE_EXEC_STDIN));
	cr_expect_str_eq(engine_name(eng), "docker");
	cr_expect_null(engine_new(base, "ftp://nowhere"));
}

/* The create body names an OCI runtime only when the spec has one. */
static const char *
spec_runtime(const char *runtime)
{
	static const char *const cmd[] = {"sleep", "60", NULL};
	static char got[64];
	struct engine_spec spec;
	json_object *o, *h, *v;

	memset(&spec, 0, sizeof spec);
	spec.image = "img";
	spec.cmd = cmd;
	spec.user = "1:1";
	spec.workdir = "/app";
	spec.network = "none";
	spec.runtime = runtime;
	o = docker_spec_json(&spec);
	cr_assert(json_object_object_get_ex(o, "HostConfig", &h));
	got[0] = '\0';
	if (json_object_object_get_ex(h, "Runtime", &v))
		snprintf(got, sizeof got, "%s", json_object_get_string(v));
	json_object_put(o);
	return got;
}

Test(engine, spec_names_the_runtime_only_when_given)
{
	cr_assert_str_eq(spec_runtime(NULL), "");
	cr_assert_str_eq(spec_runtime("runsc"), "runsc");
}

Test(engine, gvisor_pids_limit_makes_room_for_its_own_tasks)
{
	cr_assert(engine_runtime_gvisor("runsc"));
	cr_assert(engine_runtime_gvisor("runsc-kvm"));
	cr_assert_not(engine_runtime_gvisor("runscx"));
	cr_assert_not(engine_runtime_gvisor(NULL));
	cr_assert_eq(engine_runtime_pids(NULL, 128), 128);
	cr_assert_eq(engine_runtime_pids("runc", 128), 128);
	/* Every process inside may have its stub's threads, and more. */
	cr_assert_geq(engine_runtime_pids("runsc", 128), 128 * 16);
	cr_assert_eq(engine_runtime_pids("runsc", 0), 0);
}

/* --- Podman's compatible API, as /_ping tells it --- */

static void
answered(const struct engine_resp *resp, void *arg)
{
	struct seen *s = arg;

	s->done = 1;
	if (resp->error != NULL) {
		snprintf(s->error, sizeof s->error, "%s", resp->error);
		s->err = s->error;
	}
	if (resp->id != NULL)
		snprintf(s->status, sizeof s->status, "%.12s", resp->id);
}

/* Create (answer in s) a container whose workdir /app is uid 4321's. */
static void
create_owned(struct seen *s)
{
	static const char *const cmd[] = {"sleep", "60", NULL};
	struct engine_spec spec;

	memset(&spec, 0, sizeof spec);
	spec.image = "img";
	spec.cmd = cmd;
	spec.user = "65533:65533";
	spec.workdir = "/app";
	spec.network = "none";
	spec.tmpfs[0] = (struct engine_tmpfs){"/tmp", 64, 0, -1, 01777};
	spec.tmpfs[1] = (struct engine_tmpfs){"/app", 128, 1, 4321, 0755};
	spec.ntmpfs = 2;
	memset(s, 0, sizeof *s);
	engine_container_create(eng, &spec, answered, s);
	spin_until(&s->done);
	cr_assert_eq(s->done, 1);
	cr_assert_null(s->err, "create: %s", s->error);
	cr_assert_str_eq(s->status, "c0ffee00c0ff");
}

static void
start_it(void)
{
	struct seen s = {0};

	engine_container_start(eng, CID, answered, &s);
	spin_until(&s.done);
	cr_assert_eq(s.done, 1);
	cr_assert_null(s.err, "start: %s", s.error);
}

Test(engine, podman_gets_a_profile_file_and_the_owner_after_the_start)
{
	struct seen s = {0};
	char want[2 * PATH_MAX + 32], *w;
	const char *p;

	fake.libpod = 1;
	tt_make("engine-podman");
	engine_set_dir(eng, tt_root);
	/* Docker's bits until the engine said what it is. */
	cr_expect(engine_supports(eng, ENGINE_UPDATE));
	cr_expect(!engine_supports(eng, ENGINE_LIBPOD));
	create_owned(&s);
	cr_expect(engine_supports(eng, ENGINE_LIBPOD));
	cr_expect(!engine_supports(eng, ENGINE_UPDATE));
	/* The profile's path, its slashes escaped as json-c does. */
	w = want + snprintf(want, sizeof want, "seccomp=");
	for (p = tt_at("seccomp.json"); *p != '\0'; p++) {
		if (*p == '/')
			*w++ = '\\';
		*w++ = *p;
	}
	*w = '\0';
	cr_expect(strstr(fake.body, want) != NULL, "%s in %.300s", want,
	    strstr(fake.body, "SecurityOpt"));
	cr_expect(strstr(fake.body, "uid=") == NULL, "%s", fake.body);
	cr_expect(strstr(fake.body, "\"nproc\"") != NULL);
	cr_expect(strstr(fake.body, "defaultAction") == NULL);
	cr_expect(access(tt_at("seccomp.json"), R_OK) == 0);
	start_it();
	cr_expect_str_eq(fake.order, "start;archive:%2Fapp:./;");
	/* Again, as a restart would: the tmpfs is new, so is its owner. */
	start_it();
	cr_expect_str_eq(
	    fake.order, "start;archive:%2Fapp:./;start;archive:%2Fapp:./;");
	memset(&s, 0, sizeof s);
	engine_container_remove(eng, CID, answered, &s);
	spin_until(&s.done);
	fake.order[0] = '\0';
	start_it();
	cr_expect_str_eq(fake.order, "start;"); /* removed: forgotten */
	tt_remove();
}

Test(engine, docker_gets_the_profile_inline_and_the_owner_at_create)
{
	struct seen s = {0};

	create_owned(&s);
	cr_expect(!engine_supports(eng, ENGINE_LIBPOD));
	cr_expect(engine_supports(eng, ENGINE_UPDATE));
	cr_expect(strstr(fake.body, "uid=4321,gid=4321") != NULL);
	cr_expect(strstr(fake.body, "defaultAction") != NULL);
	cr_expect(strstr(fake.body, "\"nproc\"") == NULL);
	start_it();
	cr_expect_str_eq(fake.order, "start;");
}
