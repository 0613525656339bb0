/*
 * The sandbox lifecycle without Docker: the real supervisor layers
 * (sandbox.c, wproc.c, reaper.c, the MCP sessions and calls) on an event
 * loop, with the in-memory engine (fake-engine.c) as sup.engine and the
 * fake worker (fake-worker.c) as the executable workers are started from.
 * What is asserted is what the engine was asked, what the call was
 * answered, which workers ran and what is left; never how long it took
 * (the loop runs until a condition holds, with a generous deadline).
 */
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <json-c/json.h>

#include "clock.h"
#include "config.h"
#include "core.h"
#include "engine.h"
#include "fake-engine.h"
#include "log.h"
#include "mcp.h"
#include "procinfo.h"
#include "proto.h"
#include "random.h"
#include "run.h"
#include "sandbox.h"
#include "spool.h"
#include "supervisor.h"

#ifndef FAKE_WORKER_PATH
#error "FAKE_WORKER_PATH: the fake worker's executable (tests/meson.build)"
#endif

#define IMAGE "python:3.12-slim"
#define WAIT_NS (30LL * 1000 * 1000 * 1000)
/* wproc.c's WPROC_MAX_RESTARTS: new workers before a sandbox is given up */
#define MAX_RESTARTS 5

/* A client session and every message the server sent it. */
struct client {
	struct session *sess;
	json_object *msgs;
	int closed;
};

static struct config conf;
static struct engine *eng; /* sup.engine: the fake */
static struct client clients[4];
static int nclients, next_call_id = 1;
static struct event *ev_chld, *ev_tick;
static char rundir[PATH_MAX], worker_log[PATH_MAX + 16];

/* --- the loop --- */

static void
chld_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	(void)arg;
	wproc_reap();
}

static void
tick_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

/* One turn of the loop, unless the deadline passed (0). */
static int
loop_once(long long deadline)
{
	if (clock_ns() > deadline)
		return 0;
	wproc_reap(); /* as SIGCHLD does, should a signal be missed */
	event_base_loop(sup.base, EVLOOP_ONCE);
	return 1;
}

#define WAIT_FOR(cond)                                                         \
	do {                                                                   \
		long long dl_ = clock_ns() + WAIT_NS;                          \
		while (!(cond))                                                \
			cr_assert(loop_once(dl_), "timed out waiting for %s",  \
			    #cond);                                            \
	} while (0)

/* --- the worker log (FAKE_WORKER_LOG) --- */

/* Lines "PID what CONTAINER" for this container (NULL: any). */
static int
worker_log_count(const char *what, const char *cid)
{
	char line[512], *rest, *end;
	size_t n = strlen(what);
	FILE *f;
	int count = 0;

	if ((f = fopen(worker_log, "r")) == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		strtol(line, &end, 10);
		if (*end != ' ')
			continue;
		rest = end + 1;
		if (strncmp(rest, what, n) != 0 || rest[n] != ' ')
			continue;
		if (cid == NULL || strcmp(rest + n + 1, cid) == 0)
			count++;
	}
	fclose(f);
	return count;
}

/* --- sessions and calls --- */

static void
client_send(struct session *sess, json_object *msg)
{
	struct client *cl = sess->transport;

	json_object_array_add(cl->msgs, msg);
}

static struct client *
client_new(void)
{
	struct client *cl;

	cr_assert_lt(nclients, 4);
	cl = &clients[nclients++];
	cl->msgs = json_object_new_array();
	cl->sess = mcp_session_new(client_send, cl);
	return cl;
}

static void
client_close(struct client *cl)
{
	if (cl->closed)
		return;
	cl->closed = 1;
	mcp_session_close(cl->sess);
}

/* A sandbox_initialize call's creation; returns the call's id. */
static int
create_named(struct client *cl, const char *image, const char *name)
{
	struct limits lim = {conf.memory_mb, conf.cpus, conf.pids};
	json_object *id;
	struct call *c;
	int n = next_call_id++;

	id = json_object_new_int(n);
	c = mcp_call_new(cl->sess, id, "sandbox_initialize");
	json_object_put(id);
	sandbox_create(
	    c, image, name, NULL, "/workspace", "none", &lim, conf.ttl);
	return n;
}

static int
create(struct client *cl, const char *image)
{
	return create_named(cl, image, NULL);
}

/* The result answering call id, or NULL while there is none. */
static json_object *
reply(struct client *cl, int id)
{
	json_object *m, *v, *r;
	size_t i;

	for (i = 0; i < json_object_array_length(cl->msgs); i++) {
		m = json_object_array_get_idx(cl->msgs, i);
		if (json_object_object_get_ex(m, "id", &v) &&
		    json_object_get_int(v) == id &&
		    json_object_object_get_ex(m, "result", &r))
			return r;
	}
	return NULL;
}

static json_object *
wait_reply(struct client *cl, int id)
{
	WAIT_FOR(reply(cl, id) != NULL);
	return reply(cl, id);
}

static int
is_error(json_object *r)
{
	json_object *v;

	return json_object_object_get_ex(r, "isError", &v) &&
	       json_object_get_boolean(v);
}

static const char *
text_of(json_object *r)
{
	json_object *content, *t;

	if (json_object_object_get_ex(r, "content", &content) &&
	    json_object_object_get_ex(
	        json_object_array_get_idx(content, 0), "text", &t))
		return json_object_get_string(t);
	return "";
}

static const char *
container_of(json_object *r)
{
	json_object *s, *v;

	if (json_object_object_get_ex(r, "structuredContent", &s) &&
	    json_object_object_get_ex(s, "container_id", &v))
		return json_object_get_string(v);
	return NULL;
}

/* A creation that succeeds: its container's id. */
static const char *
create_ok(struct client *cl, const char *name)
{
	json_object *r;
	const char *cid;

	r = wait_reply(cl, create_named(cl, IMAGE, name));
	cr_assert(!is_error(r), "creation failed: %s", text_of(r));
	cid = container_of(r);
	cr_assert_not_null(cid);
	WAIT_FOR(worker_log_count("hello", cid) >= 1);
	return cid;
}

/* The container id of the nth call of op. */
static const char *
call_arg(enum fake_op op, int nth)
{
	const struct fake_call *fc;
	size_t i;

	for (i = 0; (fc = fake_call(eng, i)) != NULL; i++)
		if (fc->op == op && nth-- == 0)
			return fc->arg;
	return NULL;
}

/* Nothing of any sandbox left: registry, workers, containers, calls. */
static void
wait_nothing_left(void)
{
	WAIT_FOR(sandbox_count() == 0 && wproc_count() == 0 &&
	         fake_containers(eng) == 0 && fake_in_flight(eng) == 0);
}

/* --- set-up and tear-down --- */

/* The options of the server under test, with one more (or none). */
static void
parse_config(const char *opt, const char *val)
{
	char *argv[16];
	int argc = 0;

	config_free(&conf);
	memset(&conf, 0, sizeof conf);
	argv[argc++] = "test-lifecycle";
	argv[argc++] = "--runtime-dir";
	argv[argc++] = rundir;
	argv[argc++] = "--log-level";
	argv[argc++] = "error";
	argv[argc++] = "--idle-ttl";
	argv[argc++] = "0";
	if (opt != NULL) {
		argv[argc++] = (char *)opt;
		argv[argc++] = (char *)val;
	}
	argv[argc] = NULL;
	cr_assert_eq(config_parse(&conf, argc, argv, stderr), 0);
	sup.conf = &conf;
}

static void
setup(void)
{
	const char *tmp = getenv("TMPDIR");
	struct timeval tick = {0, 50 * 1000};

	snprintf(rundir, sizeof rundir, "%s/lifecycle-XXXXXX",
	    tmp != NULL && *tmp == '/' ? tmp : "/tmp");
	cr_assert_not_null(mkdtemp(rundir));
	snprintf(worker_log, sizeof worker_log, "%s/workers", rundir);
	setenv("FAKE_WORKER_LOG", worker_log, 1);
	unsetenv("FAKE_WORKER_MODE");
	log_init("test-lifecycle", LOG_ERROR);
	parse_config(NULL, NULL);
	cr_assert_not_null(sup.base = event_base_new());
	sup.engine = eng = fake_engine_new(sup.base);
	fake_image_add(eng, IMAGE);
	random_hex(sup.instance, 16);
	cr_assert_eq(proc_pid_home(sup.boot_id, sizeof sup.boot_id), 0);
	cr_assert_eq(proc_start_ticks(getpid(), &sup.start_ticks), 0);
	sup.self_fd = open(FAKE_WORKER_PATH, O_RDONLY | O_CLOEXEC);
	cr_assert_neq(
	    sup.self_fd, -1, "%s: %s", FAKE_WORKER_PATH, strerror(errno));
	signal(SIGPIPE, SIG_IGN);
	stats_init();
	layers_init();
	cr_assert_eq(spool_init(sup.instance, sup.boot_id, sup.start_ticks), 0);
	ev_chld = evsignal_new(sup.base, SIGCHLD, chld_cb, NULL);
	evsignal_add(ev_chld, NULL);
	/* EVLOOP_ONCE returns at least this often, for the deadline. */
	ev_tick = event_new(sup.base, -1, EV_PERSIST, tick_cb, NULL);
	evtimer_add(ev_tick, &tick);
}

/* (After the suite's setup.) */
static void
short_ttl(void)
{
	parse_config("--ttl", "1");
}

static void
short_pull(void)
{
	parse_config("--pull-timeout", "1");
}

static int destroyed_all;

static void
all_destroyed(void)
{
	destroyed_all = 1;
}

/*
 * Whatever a test left (it failed, or keeps a sandbox to the end) goes as
 * at shutdown; then every worker is reaped and every allocation freed.
 */
static void
teardown(void)
{
	long long dl = clock_ns() + WAIT_NS;
	int i;

	for (i = 0; i < nclients; i++)
		client_close(&clients[i]);
	sandbox_destroy_all(all_destroyed);
	while ((!destroyed_all || wproc_count() > 0) && loop_once(dl))
		;
	wproc_kill_all();
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	wproc_reap();
	defer_flush();
	engine_free(sup.engine);
	reaper_free();
	pool_free();
	spool_cleanup();
	for (i = 0; i < nclients; i++)
		json_object_put(clients[i].msgs);
	event_free(ev_chld);
	event_free(ev_tick);
	event_base_free(sup.base);
	close(sup.self_fd);
	config_free(&conf);
	unlink(worker_log);
	if (rmdir(rundir) == -1)
		fprintf(stderr, "test-lifecycle: rmdir %s: %s\n", rundir,
		    strerror(errno));
}

TestSuite(lifecycle, .init = setup, .fini = teardown, .timeout = 90);

/* --- creation --- */

Test(lifecycle, create_answers_with_the_container_its_worker_said_hello)
{
	struct client *cl = client_new();
	const struct fake_call *fc;
	struct sandbox *sb;
	json_object *labels, *v;
	const char *cid;
	char pid[32];

	cid = create_ok(cl, "box");
	cr_assert_eq(fake_containers(eng), 1);
	cr_assert_str_eq(fake_container_id(eng, 0), cid);
	cr_assert(fake_container_running(eng, cid));
	cr_assert_str_eq(
	    fake_trace(eng), "image_inspect container_create container_start");
	cr_assert_str_eq(fake_call(eng, 0)->arg, IMAGE);
	cr_assert_str_eq(fake_call(eng, 1)->arg, IMAGE);
	cr_assert_str_eq(fake_call(eng, 2)->arg, cid);

	/* The labels a later instance's reaper judges it by. */
	fc = fake_call(eng, 1);
	cr_assert_not_null(fc->labels);
	labels = json_tokener_parse(fc->labels);
	cr_assert(json_object_object_get_ex(labels, INSTANCE_LABEL, &v));
	cr_assert_str_eq(json_object_get_string(v), sup.instance);
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	cr_assert(json_object_object_get_ex(labels, PID_LABEL, &v));
	cr_assert_str_eq(json_object_get_string(v), pid);
	cr_assert(json_object_object_get_ex(labels, BOOT_LABEL, &v));
	cr_assert_str_eq(json_object_get_string(v), sup.boot_id);
	cr_assert(json_object_object_get_ex(labels, EXPIRES_LABEL, &v));
	cr_assert(json_object_object_get_ex(labels, NAME_LABEL, &v));
	cr_assert_str_eq(json_object_get_string(v), "box");
	json_object_put(labels);

	cr_assert_eq(sandbox_count(), 1);
	cr_assert_not_null(sb = sandbox_find(NULL, cid));
	cr_assert_eq(sb->state, SB_READY);
	cr_assert_not_null(sb->worker);
	cr_assert_eq(wproc_count(), 1);
	cr_assert_eq(worker_log_count("start", cid), 1);
	cr_assert_eq(worker_log_count("hello", cid), 1);
	cr_assert_eq(stats.sandboxes_created, 1);

	client_close(cl);
	wait_nothing_left();
	cr_assert_eq(fake_count(eng, FAKE_STOP, cid), 1);
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, cid), 1);
	cr_assert_eq(worker_log_count("shutdown", cid), 1);
}

Test(lifecycle, missing_image_is_pulled_before_the_create)
{
	struct client *cl = client_new();
	json_object *r;

	r = wait_reply(cl, create(cl, "busybox:1"));
	cr_assert(!is_error(r), "%s", text_of(r));
	cr_assert_str_eq(fake_trace(eng),
	    "image_inspect image_pull image_inspect container_create "
	    "container_start");
	cr_assert_str_eq(fake_call(eng, 1)->arg, "busybox:1");
	cr_assert(fake_image_has(eng, "busybox:1"));
	cr_assert_eq(sandbox_count(), 1);
	client_close(cl);
	wait_nothing_left();
}

Test(lifecycle, failed_pull_answers_an_error_and_leaves_nothing)
{
	struct client *cl = client_new();
	json_object *r;

	fake_fail(eng, FAKE_IMAGE_PULL, 1, "pull access denied for busybox", 0);
	r = wait_reply(cl, create(cl, "busybox:1"));
	cr_assert(is_error(r));
	cr_assert(strstr(text_of(r), "could not be pulled") != NULL, "%s",
	    text_of(r));
	cr_assert(strstr(text_of(r), "pull access denied") != NULL);
	cr_assert_str_eq(fake_trace(eng), "image_inspect image_pull");
	wait_nothing_left();
	cr_assert_eq(worker_log_count("start", NULL), 0);
	cr_assert_eq(stats.sandboxes_failed, 1);
	client_close(cl);
}

Test(lifecycle, hanging_pull_fails_at_the_pull_timeout, .init = short_pull)
{
	struct client *cl = client_new();
	const struct fake_call *fc;
	json_object *r;

	fake_hold(eng, FAKE_IMAGE_PULL, -1);
	r = wait_reply(cl, create(cl, "busybox:1"));
	cr_assert(is_error(r));
	cr_assert(
	    strstr(text_of(r), "--pull-timeout") != NULL, "%s", text_of(r));
	fc = fake_call(eng, 1);
	cr_assert_eq(fc->op, FAKE_IMAGE_PULL);
	cr_assert(fc->cancelled, "the pull was left in flight");
	wait_nothing_left();
	client_close(cl);
}

Test(lifecycle, failed_create_answers_an_error_and_leaves_nothing)
{
	struct client *cl = client_new();
	json_object *r;

	fake_fail(eng, FAKE_CREATE, 1, "no space left on device", 0);
	r = wait_reply(cl, create(cl, IMAGE));
	cr_assert(is_error(r));
	cr_assert(strstr(text_of(r), "cannot create a sandbox") != NULL, "%s",
	    text_of(r));
	cr_assert(strstr(text_of(r), "no space left on device") != NULL);
	cr_assert_str_eq(fake_trace(eng), "image_inspect container_create");
	wait_nothing_left();
	cr_assert_eq(worker_log_count("start", NULL), 0);
	client_close(cl);
}

Test(lifecycle, failed_start_removes_the_container_and_its_worker)
{
	struct client *cl = client_new();
	const char *cid;
	json_object *r;

	fake_fail(eng, FAKE_START, 1, "OCI runtime create failed", 0);
	r = wait_reply(cl, create(cl, IMAGE));
	cr_assert(is_error(r));
	cr_assert(
	    strstr(text_of(r), "could not start") != NULL, "%s", text_of(r));
	wait_nothing_left();
	cr_assert_not_null(cid = call_arg(FAKE_START, 0));
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, cid), 1);
	/* Its worker was started, then told to finish. */
	cr_assert_eq(worker_log_count("hello", cid), 1);
	cr_assert_eq(worker_log_count("shutdown", cid), 1);
	client_close(cl);
}

Test(lifecycle, silent_worker_fails_the_creation_at_the_hello_timeout)
{
	struct client *cl = client_new();
	const char *cid;
	json_object *r;

	setenv("FAKE_WORKER_MODE", "silent", 1);
	r = wait_reply(cl, create(cl, IMAGE));
	cr_assert(is_error(r));
	cr_assert(strstr(text_of(r), "did not start in time") != NULL, "%s",
	    text_of(r));
	wait_nothing_left();
	cr_assert_not_null(cid = call_arg(FAKE_START, 0));
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, cid), 1);
	cr_assert_eq(worker_log_count("start", cid), 1);
	cr_assert_eq(worker_log_count("hello", cid), 0);
	client_close(cl);
}

/* --- expiry --- */

Test(lifecycle, lifetime_end_removes_the_container, .init = short_ttl)
{
	struct client *cl = client_new();
	const char *cid;

	cid = create_ok(cl, NULL);
	cr_assert_eq(sandbox_count(), 1);
	WAIT_FOR(sandbox_count() == 0);
	wait_nothing_left();
	cr_assert_eq(fake_count(eng, FAKE_STOP, cid), 1);
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, cid), 1);
	cr_assert_eq(worker_log_count("shutdown", cid), 1);
	cr_assert_eq(stats.sandboxes_removed, 1);
	client_close(cl);
}

/* --- workers that die --- */

static void
kill_done(json_object *res, void *arg)
{
	(void)res;
	(*(int *)arg)++;
}

Test(lifecycle, crashed_worker_is_replaced_for_the_same_container)
{
	struct client *cl = client_new();
	struct sandbox *sb;
	json_object *op;
	const char *cid;
	pid_t first;
	int done = 0;

	cid = create_ok(cl, NULL);
	sb = sandbox_find(NULL, cid);
	first = wproc_pid(sb->worker);
	kill(first, SIGKILL);
	WAIT_FOR(worker_log_count("hello", cid) == 2 && wproc_count() == 1 &&
	         (sb = sandbox_find(NULL, cid)) != NULL && sb->worker != NULL);
	cr_assert_neq(wproc_pid(sb->worker), first);
	cr_assert_eq(sb->restarts, 1);
	cr_assert_eq(stats.workers_restarted, 1);
	cr_assert_eq(sb->state, SB_READY);
	/* The container was left alone, and the new worker serves. */
	cr_assert_eq(fake_count(eng, FAKE_STOP, NULL), 0);
	cr_assert(fake_container_running(eng, cid));
	op = json_tokener_parse("{\"op\":\"kill\",\"tokens\":[]}");
	wproc_call(sb->worker, op, NULL, kill_done, &done);
	json_object_put(op);
	WAIT_FOR(done == 1);
	cr_assert_eq(worker_log_count("call kill", cid), 1);
	client_close(cl);
	wait_nothing_left();
}

static void
exec_done(json_object *res, void *arg)
{
	struct proto_result *r = arg;
	static char error[256];

	proto_result_decode(res, r);
	snprintf(error, sizeof error, "%s", r->error != NULL ? r->error : "");
	r->error = error;
	r->result_cut = 1; /* (here: answered) */
	/* The next worker behaves: it is spawned after this returns. */
	unsetenv("FAKE_WORKER_MODE");
}

Test(lifecycle, call_in_flight_when_its_worker_dies_fails_and_is_killed)
{
	struct client *cl = client_new();
	struct proto_result res;
	struct proto_run run;
	struct sandbox *sb;
	json_object *op;
	const char *cid;

	cid = create_ok(cl, NULL);
	sb = sandbox_find(NULL, cid);
	/* Only workers started from now on die on a call: this one did
	 * not read the variable. */
	setenv("FAKE_WORKER_MODE", "crash-on-call", 1);
	kill(wproc_pid(sb->worker), SIGKILL);
	WAIT_FOR(worker_log_count("hello", cid) == 2 && wproc_count() == 1 &&
	         (sb = sandbox_find(NULL, cid)) != NULL && sb->worker != NULL);

	memset(&run, 0, sizeof run);
	run.kind = PROTO_RUN_EXEC;
	run.command = "sleep 100";
	run.log_stdout = 1;
	op = proto_run_encode(&run);
	memset(&res, 0, sizeof res);
	wproc_call(sb->worker, op, NULL, exec_done, &res);
	json_object_put(op);
	WAIT_FOR(res.result_cut == 1);
	cr_assert(strstr(res.error, "crashed") != NULL, "%s", res.error);
	/* The third worker is told to kill what the call left running. */
	WAIT_FOR(worker_log_count("call kill", cid) == 1);
	cr_assert_eq(worker_log_count("hello", cid), 3);
	cr_assert_eq(sandbox_count(), 1);
	client_close(cl);
	wait_nothing_left();
}

Test(lifecycle, worker_that_keeps_crashing_gives_the_sandbox_up)
{
	struct client *cl = client_new();
	struct sandbox *sb;
	const char *cid;

	cid = create_ok(cl, NULL);
	sb = sandbox_find(NULL, cid);
	setenv("FAKE_WORKER_MODE", "crash", 1);
	kill(wproc_pid(sb->worker), SIGKILL);
	WAIT_FOR(sandbox_count() == 0);
	wait_nothing_left();
	/* The first worker, then a new one each time, up to the limit. */
	cr_assert_eq(worker_log_count("start", cid), 1 + MAX_RESTARTS);
	cr_assert_eq(worker_log_count("hello", cid), 1 + MAX_RESTARTS);
	cr_assert_eq(stats.workers_restarted, MAX_RESTARTS);
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, cid), 1);
	client_close(cl);
}

Test(lifecycle, worker_dying_before_the_container_started_fails_creation)
{
	struct client *cl = client_new();
	const char *cid;
	json_object *r;
	int id;

	/* The worker says hello and dies while the start is held. */
	fake_hold(eng, FAKE_START, 1);
	setenv("FAKE_WORKER_MODE", "kill", 1);
	id = create(cl, IMAGE);
	WAIT_FOR(fake_held(eng, FAKE_START) == 1 &&
	         worker_log_count("crash", NULL) == 1 && wproc_count() == 0);
	unsetenv("FAKE_WORKER_MODE");
	fake_release(eng, FAKE_START);
	r = wait_reply(cl, id);
	cr_assert(is_error(r), "ready without a worker: %s", text_of(r));
	cr_assert(
	    strstr(text_of(r), "worker exited") != NULL, "%s", text_of(r));
	wait_nothing_left();
	cr_assert_not_null(cid = call_arg(FAKE_START, 0));
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, cid), 1);
	client_close(cl);
}

/* --- ends --- */

Test(lifecycle, session_close_removes_its_sandboxes_only)
{
	struct client *a = client_new(), *b = client_new();
	char a1[72], a2[72], b1[72];

	snprintf(a1, sizeof a1, "%s", create_ok(a, "one"));
	snprintf(a2, sizeof a2, "%s", create_ok(a, "two"));
	snprintf(b1, sizeof b1, "%s", create_ok(b, "one"));
	cr_assert_eq(sandbox_count(), 3);
	client_close(a);
	WAIT_FOR(fake_count(eng, FAKE_REMOVE, NULL) == 2 &&
	         fake_in_flight(eng) == 0 && wproc_count() == 1);
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, a1), 1);
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, a2), 1);
	cr_assert_eq(sandbox_count(), 1);
	cr_assert_not_null(sandbox_find(NULL, b1));
	cr_assert(fake_container_running(eng, b1));
	cr_assert_eq(fake_containers(eng), 1);
	client_close(b);
	wait_nothing_left();
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, b1), 1);
}

static void
destroyed(void *arg, const char *err)
{
	(void)err;
	(*(int *)arg)++;
}

Test(lifecycle, stopped_while_creating_removes_the_container_once_made)
{
	struct client *cl = client_new();
	const char *cid;
	json_object *r;
	int id, done = 0;

	fake_hold(eng, FAKE_CREATE, 1);
	id = create(cl, IMAGE);
	WAIT_FOR(fake_held(eng, FAKE_CREATE) == 1);
	cr_assert_eq(sandbox_count(), 1);
	/* As sandbox_stop does, while the engine makes the container. */
	sandbox_destroy(TAILQ_FIRST(&sandboxes), destroyed, &done);
	cr_assert_eq(sandbox_count(), 0);
	cr_assert_eq(done, 0, "removed before the container was known");
	fake_release(eng, FAKE_CREATE);
	r = wait_reply(cl, id);
	cr_assert(is_error(r));
	cr_assert(strstr(text_of(r), "removed while it started") != NULL, "%s",
	    text_of(r));
	WAIT_FOR(done == 1);
	wait_nothing_left();
	cr_assert_not_null(cid = call_arg(FAKE_REMOVE, 0));
	cr_assert_eq(fake_count(eng, FAKE_START, NULL), 0);
	cr_assert_eq(worker_log_count("start", NULL), 0);
	client_close(cl);
}

Test(lifecycle, stopped_while_starting_removes_container_and_worker)
{
	struct client *cl = client_new();
	const char *cid;
	json_object *r;
	int id, done = 0;

	fake_hold(eng, FAKE_START, 1);
	id = create(cl, IMAGE);
	WAIT_FOR(fake_held(eng, FAKE_START) == 1 &&
	         worker_log_count("hello", NULL) == 1);
	cr_assert_not_null(cid = call_arg(FAKE_START, 0));
	sandbox_destroy(TAILQ_FIRST(&sandboxes), destroyed, &done);
	cr_assert_eq(sandbox_count(), 0);
	fake_release(eng, FAKE_START);
	r = wait_reply(cl, id);
	cr_assert(is_error(r));
	WAIT_FOR(done == 1);
	wait_nothing_left();
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, cid), 1);
	cr_assert_eq(worker_log_count("shutdown", cid), 1);
	client_close(cl);
}

Test(lifecycle, session_end_while_creating_removes_what_was_made)
{
	struct client *cl = client_new();
	const char *cid;

	fake_hold(eng, FAKE_CREATE, 1);
	create(cl, IMAGE);
	WAIT_FOR(fake_held(eng, FAKE_CREATE) == 1);
	client_close(cl);
	cr_assert_eq(sandbox_count(), 0);
	fake_release(eng, FAKE_CREATE);
	wait_nothing_left();
	cr_assert_not_null(cid = call_arg(FAKE_REMOVE, 0));
	cr_assert_eq(fake_count(eng, FAKE_START, NULL), 0);
	/* The call was cancelled with its session: nothing was sent. */
	cr_assert_null(reply(cl, 1));
}

/* --- the reaper --- */

static json_object *
owner_labels(const char *instance, const char *pid, const char *boot,
    unsigned long long start, long long expires)
{
	json_object *l = json_object_new_object();
	char buf[32];

	json_object_object_add(
	    l, INSTANCE_LABEL, json_object_new_string(instance));
	json_object_object_add(l, PID_LABEL, json_object_new_string(pid));
	json_object_object_add(l, BOOT_LABEL, json_object_new_string(boot));
	snprintf(buf, sizeof buf, "%llu", start);
	json_object_object_add(l, START_LABEL, json_object_new_string(buf));
	snprintf(buf, sizeof buf, "%lld", expires);
	json_object_object_add(l, EXPIRES_LABEL, json_object_new_string(buf));
	return l;
}

static void
add(const char *id, json_object *labels, long long created)
{
	fake_container_add(eng, id, IMAGE, labels, created, 1);
	json_object_put(labels);
}

/* A reaper run, to its end (the listing and every removal answered). */
static void
reap(void)
{
	int lists = fake_count(eng, FAKE_LIST, NULL);

	reaper_run();
	WAIT_FOR(fake_count(eng, FAKE_LIST, NULL) == lists + 1 &&
	         fake_in_flight(eng) == 0);
}

Test(lifecycle, reaper_removes_dead_and_expired_owners_and_keeps_live_ones)
{
	struct client *cl = client_new();
	long long now = (long long)time(NULL);
	char self[32], dead[32], boot[40], other_ns[64];
	const char *mine;
	pid_t child;

	/* A pid that is no process's any more. */
	if ((child = fork()) == 0)
		_exit(0);
	cr_assert_neq(child, -1);
	cr_assert_eq(waitpid(child, NULL, 0), child);
	snprintf(dead, sizeof dead, "%d", (int)child);
	snprintf(self, sizeof self, "%d", (int)getpid());
	/* This boot, another pid namespace (a server in a container):
	 * its pid is no pid of ours, whatever it is. */
	cr_assert_eq(proc_boot_id(boot, sizeof boot), 0);
	cr_assert(strncmp(sup.boot_id, boot, strlen(boot)) == 0 &&
	              strstr(sup.boot_id, "/pidns:") != NULL,
	    "%s", sup.boot_id);
	snprintf(other_ns, sizeof other_ns, "%s/pidns:1", boot);

	mine = create_ok(cl, NULL);
	/* Old, but in the registry: it is never a leftover. */
	fake_container_set_created(eng, mine, now - 3600);

	add("dead-pid", owner_labels("other", dead, sup.boot_id, 1, now + 3600),
	    now);
	add("reused-pid",
	    owner_labels(
	        "other", self, sup.boot_id, sup.start_ticks + 1, now + 3600),
	    now);
	add("live",
	    owner_labels(
	        "live", self, sup.boot_id, sup.start_ticks, now + 3600),
	    now);
	add("other-boot-expired",
	    owner_labels("other", "1", "another-boot", 1, now - 2 * 3600), now);
	add("other-boot-fresh",
	    owner_labels("other", "1", "another-boot", 1, now + 3600), now);
	add("other-pidns-dead-pid",
	    owner_labels("other", dead, other_ns, 1, now + 3600), now);
	add("other-pidns-our-pid",
	    owner_labels("other", self, other_ns, 1, now + 3600), now);
	add("other-pidns-expired",
	    owner_labels("other", dead, other_ns, 1, now - 2 * 3600), now);
	add("other-pidns-no-expiry",
	    owner_labels("other", dead, other_ns, 1, 0), now);
	add("unknown-place",
	    owner_labels("other", dead, "unknown", 1, now + 3600), now);
	add("own-old",
	    owner_labels(
	        sup.instance, self, sup.boot_id, sup.start_ticks, now + 3600),
	    now - 3600);
	add("own-young",
	    owner_labels(
	        sup.instance, self, sup.boot_id, sup.start_ticks, now + 3600),
	    now);
	add("unlabelled", NULL, now - 3600);

	reap();
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, "dead-pid"), 1);
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, "reused-pid"), 1);
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, "other-boot-expired"), 1);
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, "own-old"), 1);
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, "other-pidns-expired"), 1);
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, NULL), 5);
	cr_assert(!fake_container_has(eng, "dead-pid"));
	cr_assert(fake_container_has(eng, "live"));
	cr_assert(fake_container_has(eng, "other-boot-fresh"));
	cr_assert(fake_container_has(eng, "other-pidns-dead-pid"));
	cr_assert(fake_container_has(eng, "other-pidns-our-pid"));
	cr_assert(fake_container_has(eng, "other-pidns-no-expiry"));
	cr_assert(fake_container_has(eng, "unknown-place"));
	cr_assert(fake_container_has(eng, "own-young"));
	cr_assert(fake_container_has(eng, "unlabelled"));
	cr_assert(fake_container_running(eng, mine));
	cr_assert_eq(sandbox_count(), 1);
	client_close(cl);
	WAIT_FOR(sandbox_count() == 0 && wproc_count() == 0 &&
	         fake_in_flight(eng) == 0);
	cr_assert_eq(fake_containers(eng), 8);
}

/* A server that cannot tell where it is judges no owner by its pid. */
Test(lifecycle, an_unknown_place_judges_no_owner)
{
	char saved[sizeof sup.boot_id], self[32], ticks[32];

	snprintf(self, sizeof self, "%d", (int)getpid());
	snprintf(ticks, sizeof ticks, "%llu", sup.start_ticks);
	cr_assert_eq(reaper_owner_alive(sup.boot_id, self, ticks), 1);
	cr_assert_eq(reaper_owner_alive(sup.boot_id, "999999999", "1"), 0);
	memcpy(saved, sup.boot_id, sizeof saved);
	snprintf(sup.boot_id, sizeof sup.boot_id, "unknown");
	cr_expect_eq(reaper_owner_alive("unknown", self, ticks), -1);
	cr_expect_eq(reaper_owner_alive("unknown", "999999999", "1"), -1);
	memcpy(sup.boot_id, saved, sizeof saved);
}

Test(lifecycle, failed_removal_is_left_to_a_later_reaper_run)
{
	struct client *cl = client_new();
	char cid[72];

	snprintf(cid, sizeof cid, "%s", create_ok(cl, NULL));
	fake_fail(
	    eng, FAKE_REMOVE, 1, "removal of container is in progress", 0);
	client_close(cl);
	WAIT_FOR(sandbox_count() == 0 && wproc_count() == 0 &&
	         fake_in_flight(eng) == 0);
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, cid), 1);
	cr_assert(fake_container_has(eng, cid));
	/* Young: it may be a creation still on its way; left alone. */
	reap();
	cr_assert(fake_container_has(eng, cid));
	fake_container_set_created(eng, cid, (long long)time(NULL) - 3600);
	reap();
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, cid), 2);
	cr_assert(!fake_container_has(eng, cid));
}

/* --- the warm pool --- */

static void
warm_pool_one(void)
{
	parse_config("--warm-pool", IMAGE "=1");
}

/* A create that fits the pool (its workdir): the call's id. */
static int
create_fitting(struct client *cl)
{
	struct limits lim = {conf.memory_mb, conf.cpus, conf.pids};
	json_object *id;
	struct call *c;
	int n = next_call_id++;

	id = json_object_new_int(n);
	c = mcp_call_new(cl->sess, id, "sandbox_initialize");
	json_object_put(id);
	sandbox_create(c, IMAGE, NULL, NULL, "/app", "none", &lim, conf.ttl);
	return n;
}

static int
from_pool(json_object *r)
{
	json_object *s, *v;

	return json_object_object_get_ex(r, "structuredContent", &s) &&
	       json_object_object_get_ex(s, "from_pool", &v) &&
	       json_object_get_boolean(v);
}

static int
pool_ready(void)
{
	json_object *o = pool_stats_json();
	int n = (int)json_object_get_int64(json_object_object_get(o, "size"));

	json_object_put(o);
	return n;
}

Test(lifecycle, pool_container_is_never_handed_out_twice, .init = warm_pool_one)
{
	struct client *a, *b;
	json_object *ra, *rb;
	const char *pooled;
	int ia, ib, ic;

	pool_start();
	WAIT_FOR(pool_ready() == 1);
	pooled = fake_container_id(eng, 0);
	a = client_new();
	b = client_new();
	/* Three creates in one turn of the loop, two sessions: one takes
	 * it, the others make their own. */
	ia = create_fitting(a);
	ib = create_fitting(b);
	ic = create_fitting(a);
	ra = wait_reply(a, ia);
	rb = wait_reply(b, ib);
	cr_assert(!is_error(ra), "%s", text_of(ra));
	cr_assert(!is_error(rb), "%s", text_of(rb));
	cr_assert(!is_error(wait_reply(a, ic)));
	cr_assert(from_pool(ra));
	cr_assert(!from_pool(rb));
	cr_assert(!from_pool(wait_reply(a, ic)));
	cr_assert_str_eq(container_of(ra), pooled);
	cr_assert_str_neq(container_of(rb), pooled);
	cr_assert_str_neq(container_of(wait_reply(a, ic)), pooled);
	cr_assert_eq(stats.pool_taken, 1);
	/* Its container is taken over by one sandbox only, and refilled. */
	cr_assert_eq(sandbox_count(), 3);
	WAIT_FOR(pool_ready() == 1);
	cr_assert_eq(pool_count(), 1);
	client_close(a);
	client_close(b);
}

Test(lifecycle, pool_container_dying_while_handed_out_is_replaced,
    .init = warm_pool_one)
{
	struct client *cl;
	json_object *r;
	const char *pooled;
	char *gone;
	int id;

	pool_start();
	WAIT_FOR(pool_ready() == 1);
	gone = strdup(fake_container_id(eng, 0));
	cl = client_new();
	/* The take's inspection waits; meanwhile the container goes. */
	fake_hold(eng, FAKE_INSPECT, 1);
	id = create_fitting(cl);
	WAIT_FOR(fake_held(eng, FAKE_INSPECT) == 1);
	cr_assert_eq(pool_count(), 0, "taken, it is out of the pool at once");
	fake_container_drop(eng, gone);
	fake_release(eng, FAKE_INSPECT);
	r = wait_reply(cl, id);
	cr_assert(!is_error(r), "%s", text_of(r));
	cr_assert(!from_pool(r));
	pooled = container_of(r);
	cr_assert_str_neq(pooled, gone);
	cr_assert(fake_container_running(eng, pooled));
	cr_assert_eq(stats.pool_taken, 0);
	cr_assert_geq(stats.pool_failed, 1);
	cr_assert_eq(sandbox_count(), 1);
	free(gone);
	client_close(cl);
}

/* --- exposed ports (run/expose.c), against the fake worker's answers --- */

/* What the last expose_port() answered (its call is NULL here). */
static struct {
	int done;
	struct exposed e;
	char error[256];
} xp;

static void
exposed_cb(struct call *c, const struct exposed *e, const char *err)
{
	(void)c;
	xp.done++;
	memset(&xp.e, 0, sizeof xp.e);
	if (e != NULL)
		xp.e = *e;
	snprintf(xp.error, sizeof xp.error, "%s", err != NULL ? err : "");
}

static int
exposed_count(struct sandbox *sb)
{
	json_object *l = expose_list(sb);
	int n = (int)json_object_array_length(l);

	json_object_put(l);
	return n;
}

/* Its URL from the worker's answer; the same one asked again. */
Test(lifecycle, exposed_port_answers_with_its_url_and_is_idempotent)
{
	struct client *cl = client_new();
	struct sandbox *sb;
	const char *cid;

	cid = create_ok(cl, NULL);
	sb = sandbox_find(NULL, cid);
	memset(&xp, 0, sizeof xp);
	expose_port(NULL, sb, 8000, exposed_cb);
	WAIT_FOR(xp.done == 1);
	cr_assert_str_eq(xp.error, "");
	cr_assert_eq(xp.e.port, 8000);
	cr_assert_eq(xp.e.host_port, 48000);
	cr_assert_str_eq(xp.e.address, "127.0.0.1");
	cr_assert_str_eq(xp.e.url, "http://127.0.0.1:48000/");
	cr_assert_not(xp.e.existing);
	cr_assert_eq(stats.ports_exposed_now, 1);
	/* Asked again: answered at once, no call to the worker. */
	expose_port(NULL, sb, 8000, exposed_cb);
	cr_assert_eq(xp.done, 2);
	cr_assert(xp.e.existing);
	cr_assert_str_eq(xp.e.url, "http://127.0.0.1:48000/");
	cr_assert_eq(worker_log_count("call expose", cid), 1);
	cr_assert_eq(exposed_count(sb), 1);
	client_close(cl);
	wait_nothing_left();
	cr_assert_eq(stats.ports_exposed_now, 0);
}

/* --max-exposed-ports counts what is exposed or being exposed. */
Test(lifecycle, exposed_ports_are_bounded_per_sandbox)
{
	struct client *cl = client_new();
	struct sandbox *sb;
	const char *cid;
	int i;

	cid = create_ok(cl, NULL);
	sb = sandbox_find(NULL, cid);
	memset(&xp, 0, sizeof xp);
	for (i = 0; i < conf.max_exposed_ports; i++)
		expose_port(NULL, sb, 9000 + i, exposed_cb);
	WAIT_FOR(xp.done == conf.max_exposed_ports);
	expose_port(NULL, sb, 8000, exposed_cb);
	cr_assert_eq(xp.done, conf.max_exposed_ports + 1);
	cr_assert(
	    strstr(xp.error, "--max-exposed-ports") != NULL, "%s", xp.error);
	cr_assert_eq(exposed_count(sb), conf.max_exposed_ports);
	client_close(cl);
	wait_nothing_left();
}

/* A new worker after a crash listens again on the same host port. */
Test(lifecycle, exposed_port_is_opened_again_on_its_host_port_after_a_respawn)
{
	struct client *cl = client_new();
	struct sandbox *sb;
	json_object *l;
	const char *cid;

	cid = create_ok(cl, NULL);
	sb = sandbox_find(NULL, cid);
	memset(&xp, 0, sizeof xp);
	/* The first worker gives 48000; the second must be asked for it. */
	expose_port(NULL, sb, 8000, exposed_cb);
	WAIT_FOR(xp.done == 1);
	cr_assert_eq(xp.e.host_port, 48000);
	kill(wproc_pid(sb->worker), SIGKILL);
	WAIT_FOR(worker_log_count("hello", cid) == 2 &&
	         worker_log_count("expose 8000 48000", cid) == 2);
	WAIT_FOR(stats.ports_exposed_now == 1);
	l = expose_list(sb);
	cr_assert_eq(json_object_array_length(l), 1);
	cr_assert_str_eq(json_object_get_string(json_object_object_get(
	                     json_object_array_get_idx(l, 0), "url")),
	    "http://127.0.0.1:48000/");
	json_object_put(l);
	cr_assert_eq(stats.ports_exposed, 1, "a re-expose is not a new one");
	client_close(cl);
	wait_nothing_left();
}

/* ... and one it cannot open again is dropped. */
Test(lifecycle, exposed_port_the_new_worker_cannot_open_is_dropped)
{
	struct client *cl = client_new();
	struct sandbox *sb;
	const char *cid;

	cid = create_ok(cl, NULL);
	sb = sandbox_find(NULL, cid);
	memset(&xp, 0, sizeof xp);
	expose_port(NULL, sb, 8000, exposed_cb);
	WAIT_FOR(xp.done == 1);
	setenv("FAKE_WORKER_MODE", "refuse-expose", 1);
	kill(wproc_pid(sb->worker), SIGKILL);
	WAIT_FOR(worker_log_count("call expose", cid) == 2 && sb->exposed == 0);
	unsetenv("FAKE_WORKER_MODE");
	cr_assert_eq(exposed_count(sb), 0);
	cr_assert_eq(stats.ports_exposed_now, 0);
	client_close(cl);
	wait_nothing_left();
}

static int *unexposed_done;

static void
unexposed_cb(struct call *c, const char *note)
{
	(void)c;
	(void)note;
	(*unexposed_done)++;
}

/* Unexposed: the worker is told, and the list is empty; twice: refused. */
Test(lifecycle, unexposed_port_leaves_the_list)
{
	struct client *cl = client_new();
	struct sandbox *sb;
	const char *cid, *why = NULL;
	int done = 0;

	cid = create_ok(cl, NULL);
	sb = sandbox_find(NULL, cid);
	memset(&xp, 0, sizeof xp);
	cr_assert_eq(unexpose_port(NULL, sb, 8000, NULL, &why), -1);
	cr_assert_str_eq(why, "not exposed");
	expose_port(NULL, sb, 8000, exposed_cb);
	WAIT_FOR(xp.done == 1);
	unexposed_done = &done;
	cr_assert_eq(unexpose_port(NULL, sb, 8000, unexposed_cb, &why), 0);
	WAIT_FOR(done == 1);
	cr_assert_eq(worker_log_count("call unexpose", cid), 1);
	cr_assert_eq(exposed_count(sb), 0);
	cr_assert_eq(sb->exposed, 0);
	cr_assert_eq(stats.ports_exposed_now, 0);
	cr_assert_eq(unexpose_port(NULL, sb, 8000, unexposed_cb, &why), -1);
	client_close(cl);
	wait_nothing_left();
}

/* --- egress allowlists (sandbox/egresslist.c), against the fake worker --- */

#define EGRESS_LIST "[\"a.example.org:443\",\"*.b.example.org:443\"]"
#define EGRESS_LOGGED "egress a.example.org:443,*.b.example.org:443"

/* A sandbox_initialize with an egress list (checked, as the tool does):
 * the call's id. */
static int
create_egress(struct client *cl, const char *workdir, const char *list)
{
	struct limits lim = {conf.memory_mb, conf.cpus, conf.pids};
	struct sandbox *sb;
	json_object *id;
	struct call *c;
	int n = next_call_id++;

	id = json_object_new_int(n);
	c = mcp_call_new(cl->sess, id, "sandbox_initialize");
	json_object_put(id);
	sb = sandbox_create(
	    c, IMAGE, NULL, NULL, workdir, "none", &lim, conf.ttl);
	cr_assert_not_null(sb);
	cr_assert_not_null(sb->egress = json_tokener_parse(list));
	return n;
}

static const char *
structured_json(json_object *r, const char *key)
{
	json_object *s, *v;

	if (!json_object_object_get_ex(r, "structuredContent", &s) ||
	    !json_object_object_get_ex(s, key, &v))
		return NULL;
	return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
}

static int took;
static char took_error[256];

static void
took_cb(struct sandbox *sb, json_object *res, const char *err, void *arg)
{
	(void)sb;
	(void)res;
	(void)arg;
	snprintf(took_error, sizeof took_error, "%s", err != NULL ? err : "");
	took++;
}

Test(lifecycle, egress_list_reaches_the_worker_before_the_create_answers)
{
	struct client *cl = client_new();
	struct sandbox *sb;
	json_object *r;
	const char *cid;

	r = wait_reply(cl, create_egress(cl, "/workspace", EGRESS_LIST));
	cr_assert(!is_error(r), "%s", text_of(r));
	cid = container_of(r);
	/* Taken before the answer: the first command has it. */
	cr_assert_eq(worker_log_count(EGRESS_LOGGED, cid), 1);
	cr_assert_str_eq(structured_json(r, "egress"), EGRESS_LIST);
	cr_assert(
	    strstr(text_of(r), "a.example.org:443") != NULL, "%s", text_of(r));
	sb = sandbox_find(NULL, cid);
	cr_assert_eq(sb->state, SB_READY);
	cr_assert_not_null(sb->egress);
	cr_assert_eq(sb->egress_stale, 0);
	client_close(cl);
	wait_nothing_left();
}

/* A sandbox without a list: no egress call, nothing in its answer. */
Test(lifecycle, no_egress_list_no_egress_call)
{
	struct client *cl = client_new();
	json_object *r;
	const char *cid;

	r = wait_reply(cl, create(cl, IMAGE));
	cr_assert(!is_error(r), "%s", text_of(r));
	cid = container_of(r);
	cr_assert_null(structured_json(r, "egress"));
	cr_assert_eq(worker_log_count("call egress", cid), 0);
	client_close(cl);
	wait_nothing_left();
}

Test(lifecycle, refused_egress_list_fails_the_create_and_leaves_nothing)
{
	struct client *cl = client_new();
	json_object *r;

	setenv("FAKE_WORKER_MODE", "refuse-egress", 1);
	r = wait_reply(cl, create_egress(cl, "/workspace", EGRESS_LIST));
	cr_assert(is_error(r));
	cr_assert(strstr(text_of(r), "egress list") != NULL &&
	              strstr(text_of(r), "fake refusal") != NULL,
	    "%s", text_of(r));
	unsetenv("FAKE_WORKER_MODE");
	wait_nothing_left();
	cr_assert_eq(fake_count(eng, FAKE_REMOVE, NULL), 1);
	cr_assert_eq(stats.sandboxes_failed, 1);
	cr_assert_eq(stats.sandboxes_created, 0);
	client_close(cl);
}

/* Its worker dies on the egress call: the create fails, nothing left. */
Test(lifecycle, worker_dying_on_the_egress_call_fails_the_create)
{
	struct client *cl = client_new();
	json_object *r;
	int id;

	setenv("FAKE_WORKER_MODE", "crash-on-call", 1);
	id = create_egress(cl, "/workspace", EGRESS_LIST);
	WAIT_FOR(worker_log_count("crash", NULL) == 1);
	unsetenv("FAKE_WORKER_MODE");
	r = wait_reply(cl, id);
	cr_assert(is_error(r));
	cr_assert(strstr(text_of(r), "egress list") != NULL, "%s", text_of(r));
	wait_nothing_left();
	cr_assert_eq(stats.sandboxes_failed, 1);
	client_close(cl);
}

Test(lifecycle, egress_list_is_given_again_to_a_new_worker)
{
	struct client *cl = client_new();
	struct sandbox *sb;
	const char *cid;

	cid = container_of(
	    wait_reply(cl, create_egress(cl, "/workspace", EGRESS_LIST)));
	cr_assert_not_null(cid);
	sb = sandbox_find(NULL, cid);
	kill(wproc_pid(sb->worker), SIGKILL);
	WAIT_FOR(worker_log_count("hello", cid) == 2 &&
	         worker_log_count(EGRESS_LOGGED, cid) == 2 &&
	         sb->egress_stale == 0);
	cr_assert_eq(worker_log_count("call egress", cid), 2);
	cr_assert_str_eq(
	    json_object_to_json_string_ext(sb->egress, JSON_C_TO_STRING_PLAIN),
	    EGRESS_LIST);
	client_close(cl);
	wait_nothing_left();
}

/* A new worker that refuses it (its agent not up) is asked again once
 * its agent is. */
Test(
    lifecycle, egress_list_refused_by_a_new_worker_is_sent_when_its_agent_is_up)
{
	struct client *cl = client_new();
	struct sandbox *sb;
	const char *cid;

	cid = container_of(
	    wait_reply(cl, create_egress(cl, "/workspace", EGRESS_LIST)));
	sb = sandbox_find(NULL, cid);
	setenv("FAKE_WORKER_MODE", "agent-late", 1);
	kill(wproc_pid(sb->worker), SIGKILL);
	WAIT_FOR(worker_log_count("call-refused egress", cid) == 1 &&
	         worker_log_count(EGRESS_LOGGED, cid) == 2 &&
	         sb->egress_stale == 0);
	unsetenv("FAKE_WORKER_MODE");
	cr_assert(sb->agent_ready);
	cr_assert_eq(worker_log_count("call egress", cid), 3);
	client_close(cl);
	wait_nothing_left();
}

Test(lifecycle, pool_container_handed_out_with_egress_gets_it,
    .init = warm_pool_one)
{
	struct client *cl;
	json_object *r;
	char *pooled;

	pool_start();
	WAIT_FOR(pool_ready() == 1);
	pooled = strdup(fake_container_id(eng, 0));
	cr_assert_eq(worker_log_count("call egress", pooled), 0);
	cl = client_new();
	r = wait_reply(cl, create_egress(cl, POOL_WORKDIR, EGRESS_LIST));
	cr_assert(!is_error(r), "%s", text_of(r));
	cr_assert(from_pool(r));
	cr_assert_str_eq(container_of(r), pooled);
	cr_assert_eq(worker_log_count(EGRESS_LOGGED, pooled), 1);
	cr_assert_str_eq(structured_json(r, "egress"), EGRESS_LIST);
	free(pooled);
	client_close(cl);
}

/* sandbox_set_egress's part: a new list replaces the old, [] is off, and
 * a new worker then gets none. */
Test(lifecycle, new_egress_list_replaces_the_old_and_empty_turns_it_off)
{
	struct client *cl = client_new();
	struct sandbox *sb;
	json_object *l, *op;
	const char *cid;
	int done = 0;

	cid = create_ok(cl, NULL);
	sb = sandbox_find(NULL, cid);
	cr_assert_null(sb->egress);
	l = json_tokener_parse("[\"c.example.org\"]");
	egresslist_send(sb, l, took_cb, NULL);
	cr_assert_null(sb->egress, "kept once the worker took it");
	WAIT_FOR(took == 1);
	cr_assert_str_eq(took_error, "");
	cr_assert_eq(sb->egress, l);
	cr_assert_eq(worker_log_count("egress c.example.org", cid), 1);
	json_object_put(l);
	l = json_object_new_array();
	egresslist_send(sb, l, took_cb, NULL);
	WAIT_FOR(took == 2);
	json_object_put(l);
	cr_assert_null(sb->egress);
	cr_assert_eq(worker_log_count("egress -", cid), 1);
	/* Off: the next worker is told nothing (the kill goes after any). */
	kill(wproc_pid(sb->worker), SIGKILL);
	WAIT_FOR(worker_log_count("hello", cid) == 2 && sb->worker != NULL);
	op = json_tokener_parse("{\"op\":\"kill\",\"tokens\":[]}");
	wproc_call(sb->worker, op, NULL, kill_done, &done);
	json_object_put(op);
	WAIT_FOR(done == 1);
	cr_assert_eq(worker_log_count("call egress", cid), 2);
	client_close(cl);
	wait_nothing_left();
}

/* A list the worker refuses leaves the one before. */
Test(lifecycle, refused_new_egress_list_keeps_the_one_before)
{
	struct client *cl = client_new();
	struct sandbox *sb;
	json_object *l;
	const char *cid;

	cid = container_of(
	    wait_reply(cl, create_egress(cl, "/workspace", EGRESS_LIST)));
	sb = sandbox_find(NULL, cid);
	setenv("FAKE_WORKER_MODE", "refuse-egress", 1);
	kill(wproc_pid(sb->worker), SIGKILL);
	WAIT_FOR(worker_log_count("call-refused egress", cid) == 1);
	unsetenv("FAKE_WORKER_MODE");
	l = json_tokener_parse("[\"c.example.org\"]");
	egresslist_send(sb, l, took_cb, NULL);
	WAIT_FOR(took == 1);
	json_object_put(l);
	cr_assert(strstr(took_error, "fake refusal") != NULL, "%s", took_error);
	cr_assert_str_eq(
	    json_object_to_json_string_ext(sb->egress, JSON_C_TO_STRING_PLAIN),
	    EGRESS_LIST);
	cr_assert_eq(sb->egress_stale, 1);
	client_close(cl);
	wait_nothing_left();
}

/* The proxy's notices: counted by verdict and bytes, for /metrics. */
Test(lifecycle, egress_notices_are_counted_for_the_metrics)
{
	struct client *cl = client_new();
	struct evbuffer *b;
	char *text;

	setenv("FAKE_WORKER_MODE", "notify-egress", 1);
	cr_assert(!is_error(
	    wait_reply(cl, create_egress(cl, "/workspace", EGRESS_LIST))));
	unsetenv("FAKE_WORKER_MODE");
	WAIT_FOR(stats.egress_allowed + stats.egress_refused == 2);
	cr_assert_eq(stats.egress_allowed, 1);
	cr_assert_eq(stats.egress_refused, 1);
	cr_assert_eq(stats.egress_bytes_out, 1200);
	cr_assert_eq(stats.egress_bytes_in, 34000);
	b = evbuffer_new();
	stats_prometheus(b);
	evbuffer_add(b, "", 1);
	text = (char *)evbuffer_pullup(b, -1);
	cr_assert(strstr(text, "# TYPE mcp_sandboxd_egress_connections_total "
	                       "counter\n") != NULL);
	cr_assert(strstr(text, "mcp_sandboxd_egress_connections_total{verdict="
	                       "\"allowed\"} 1\n") != NULL);
	cr_assert(strstr(text, "mcp_sandboxd_egress_connections_total{verdict="
	                       "\"refused\"} 1\n") != NULL);
	cr_assert(strstr(text, "# TYPE mcp_sandboxd_egress_bytes_total "
	                       "counter\n") != NULL);
	cr_assert(strstr(text, "mcp_sandboxd_egress_bytes_total{direction="
	                       "\"out\"} 1200\n") != NULL);
	cr_assert(strstr(text, "mcp_sandboxd_egress_bytes_total{direction="
	                       "\"in\"} 34000\n") != NULL);
	evbuffer_free(b);
	client_close(cl);
	wait_nothing_left();
}

static json_object *ran;

static void
ran_cb(struct xrun *x, json_object *r, void *arg)
{
	(void)x;
	(void)arg;
	ran = json_object_get(r);
}

/* An exec's result as xrun.c makes it, on a sandbox with a list. */
static json_object *
run_true(const char *mode)
{
	struct client *cl = client_new();
	struct xrun_opts o;
	struct sandbox *sb;
	const char *cid;

	if (mode != NULL)
		setenv("FAKE_WORKER_MODE", mode, 1);
	cid = container_of(
	    wait_reply(cl, create_egress(cl, "/workspace", EGRESS_LIST)));
	unsetenv("FAKE_WORKER_MODE");
	cr_assert_not_null(cid);
	sb = sandbox_find(NULL, cid);
	memset(&o, 0, sizeof o);
	o.command = "true";
	o.timeout_ms = 10000;
	ran = NULL;
	xrun_start(NULL, sb, &o, ran_cb, NULL);
	WAIT_FOR(ran != NULL);
	return ran;
}

/* The worker's entries, checked: only the schema's members, of its
 * types, printable, counts not negative; what is no entry left out. */
Test(lifecycle, run_result_carries_its_egress_entries_checked)
{
	json_object *r = run_true(NULL), *a, *e;
	char refused[64];

	cr_assert(json_object_object_get_ex(r, "egress", &a));
	cr_assert_eq(json_object_array_length(a), 2, "%s",
	    json_object_to_json_string(a));
	e = json_object_array_get_idx(a, 0);
	cr_assert_str_eq(
	    json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN),
	    "{\"host\":\"example.org\",\"port\":443,\"allowed\":true,"
	    "\"connections\":2,\"bytes_out\":100,\"bytes_in\":5000}");
	e = json_object_array_get_idx(a, 1);
	cr_assert_str_eq(
	    json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN),
	    "{\"host\":\"evil?.example\",\"port\":80,\"allowed\":false,"
	    "\"reason\":\"not in the sandbox's list\",\"connections\":0}");
	cr_assert(!json_object_object_get_ex(r, "egress_cut", NULL));
	/* What install_package's error names. */
	xrun_egress_refused(r, refused, sizeof refused);
	cr_assert_str_eq(refused, "evil?.example:80");
	json_object_put(r);
}

/* At most PROTO_MAX_EGRESS entries, then egress_cut. */
Test(lifecycle, run_result_egress_is_cut_at_its_bound)
{
	json_object *r = run_true("many-egress"), *a, *v;

	cr_assert(json_object_object_get_ex(r, "egress", &a));
	cr_assert_eq(json_object_array_length(a), PROTO_MAX_EGRESS);
	cr_assert(json_object_object_get_ex(r, "egress_cut", &v));
	cr_assert(json_object_get_boolean(v));
	json_object_put(r);
}

/* --- the egress tools, called as a client calls them --- */

static void
egress_allowed(void)
{
	parse_config("--egress-allow", "*.example.org:443");
}

/* A tools/call of the session (initialized first): the call's id. */
static int
tool_call(struct client *cl, const char *tool, const char *args)
{
	static const char init[] =
	    "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\","
	    "\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":"
	    "{},\"clientInfo\":{\"name\":\"test\",\"version\":\"1\"}}}";
	char *line;
	int n = next_call_id++, len;

	if (!cl->sess->initialized)
		mcp_handle_line(cl->sess, init, strlen(init));
	len = asprintf(&line,
	    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"%s\",\"arguments\":%s}}",
	    n, tool, args);
	cr_assert_gt(len, 0);
	mcp_handle_line(cl->sess, line, (size_t)len);
	free(line);
	return n;
}

Test(lifecycle, egress_tools_set_and_show_the_list, .init = egress_allowed)
{
	struct client *cl = client_new();
	json_object *r, *s, *v;
	const char *cid;
	char args[256];

	r = wait_reply(
	    cl, tool_call(cl, "sandbox_initialize",
	            "{\"image\":\"" IMAGE "\",\"egress\":["
	            "\"A.Example.org:443\",\"a.example.org.:443\"]}"));
	cr_assert(!is_error(r), "%s", text_of(r));
	cid = container_of(r);
	cr_assert_str_eq(
	    structured_json(r, "egress"), "[\"a.example.org:443\"]");
	cr_assert_eq(worker_log_count("egress a.example.org:443", cid), 1);

	snprintf(args, sizeof args,
	    "{\"container_id\":\"%s\",\"egress\":[\"*.b.example.org:443\"]}",
	    cid);
	r = wait_reply(cl, tool_call(cl, "sandbox_set_egress", args));
	cr_assert(!is_error(r), "%s", text_of(r));
	cr_assert_str_eq(
	    structured_json(r, "egress"), "[\"*.b.example.org:443\"]");
	cr_assert_str_eq(structured_json(r, "proxy_port"), "3128");
	snprintf(args, sizeof args, "\"%s\"", cid);
	cr_assert_str_eq(structured_json(r, "container_id"), args);
	cr_assert(strstr(text_of(r), "*.b.example.org:443") != NULL, "%s",
	    text_of(r));

	snprintf(args, sizeof args, "{\"container_id\":\"%s\"}", cid);
	r = wait_reply(cl, tool_call(cl, "get_sandbox_status", args));
	cr_assert(!is_error(r), "%s", text_of(r));
	cr_assert(json_object_object_get_ex(r, "structuredContent", &s));
	v = json_object_array_get_idx(
	    json_object_object_get(s, "sandboxes"), 0);
	cr_assert_str_eq(
	    json_object_to_json_string_ext(
	        json_object_object_get(v, "egress"), JSON_C_TO_STRING_PLAIN),
	    "[\"*.b.example.org:443\"]");
	cr_assert(strstr(text_of(r), "egress to *.b.example.org:443") != NULL,
	    "%s", text_of(r));

	/* Refused: named, and the list stays. */
	snprintf(args, sizeof args,
	    "{\"container_id\":\"%s\",\"egress\":[\"evil.org\"]}", cid);
	r = wait_reply(cl, tool_call(cl, "sandbox_set_egress", args));
	cr_assert(is_error(r));
	cr_assert(strstr(text_of(r), "\"evil.org\" is not allowed") != NULL &&
	              strstr(text_of(r), "*.example.org:443") != NULL,
	    "%s", text_of(r));
	cr_assert_eq(worker_log_count("call egress", cid), 2);

	/* Off. */
	snprintf(
	    args, sizeof args, "{\"container_id\":\"%s\",\"egress\":[]}", cid);
	r = wait_reply(cl, tool_call(cl, "sandbox_set_egress", args));
	cr_assert(!is_error(r), "%s", text_of(r));
	cr_assert_str_eq(structured_json(r, "egress"), "[]");
	cr_assert_str_eq(structured_json(r, "proxy_port"), "0");
	cr_assert(strstr(text_of(r), "off") != NULL, "%s", text_of(r));
	cr_assert_null(sandbox_find(NULL, cid)->egress);

	/* A create asking for more than the operator allows makes nothing. */
	r = wait_reply(cl, tool_call(cl, "sandbox_initialize",
	                       "{\"image\":\"" IMAGE "\",\"egress\":["
	                       "\"example.org:443\"]}"));
	cr_assert(is_error(r));
	cr_assert(strstr(text_of(r), "egress[0] \"example.org:443\"") != NULL,
	    "%s", text_of(r));
	cr_assert_eq(sandbox_count(), 1);
	client_close(cl);
	wait_nothing_left();
}

/* With no --egress-allow, egress is off on the server. */
Test(lifecycle, egress_tools_say_egress_is_off_without_egress_allow)
{
	struct client *cl = client_new();
	json_object *r;

	r = wait_reply(cl, tool_call(cl, "sandbox_initialize",
	                       "{\"image\":\"" IMAGE "\",\"egress\":["
	                       "\"example.org\"]}"));
	cr_assert(is_error(r));
	cr_assert(strstr(text_of(r), "egress is off on this server (the "
	                             "operator's --egress-allow allows no "
	                             "host)") != NULL,
	    "%s", text_of(r));
	cr_assert_eq(sandbox_count(), 0);
	cr_assert_eq(fake_containers(eng), 0);
	client_close(cl);
}

/* --- several engines (engines.c) --- */

/* Which of the two engines the sandbox was placed on (the fakes' ids
 * are alike: the registry says). */
static int
engine_of(struct engine *a, struct engine *b, const char *cid)
{
	struct sandbox *sb = sandbox_find(NULL, cid);

	cr_assert_not_null(sb);
	return sb->engine == a ? 1 : sb->engine == b ? 2 : 0;
}

/* Everything gone, then the second engine and the records too. */
static void
engines_done(struct engine *b)
{
	client_close(&clients[0]);
	WAIT_FOR(sandbox_count() == 0 && wproc_count() == 0 &&
	         fake_containers(eng) == 0 && fake_containers(b) == 0 &&
	         fake_in_flight(eng) == 0 && fake_in_flight(b) == 0);
	engines_close();
	sup.engine = eng;
	engine_free(b);
}

Test(lifecycle, engines_placement_spreads_by_free_share_under_ceilings)
{
	struct client *cl = client_new();
	struct engine *b = fake_engine_new(sup.base);
	const char *cid;
	json_object *r;
	int i, where[4];

	fake_image_add(b, IMAGE);
	fake_id_base(b, 0x10000);
	engines_add(eng, "unix:///a.sock", 2, 0);
	engines_add(b, "tcp://127.0.0.1:2", 2, 0);
	/* Ties go to the first; then the emptier one. */
	for (i = 0; i < 4; i++) {
		cid = create_ok(cl, NULL);
		where[i] = engine_of(eng, b, cid);
	}
	cr_assert_eq(where[0], 1);
	cr_assert_eq(where[1], 2);
	cr_assert_eq(where[2], 1);
	cr_assert_eq(where[3], 2);
	/* Both at max-sandboxes: refused, each engine saying why. */
	r = wait_reply(cl, create(cl, IMAGE));
	cr_assert(is_error(r));
	cr_assert(
	    strstr(text_of(r), "no engine can take a sandbox now") != NULL &&
	        strstr(text_of(r), "at its max-sandboxes") != NULL,
	    "%s", text_of(r));
	/* A drained engine takes none, even with room. */
	cr_assert_eq(engines_drain("unix:///a.sock", 1), 0);
	cr_assert_eq(engines_drain("unix:///nowhere", 1), -1);
	engines_done(b);
}

Test(lifecycle, engines_lost_engine_makes_its_sandboxes_lost)
{
	struct client *cl = client_new();
	struct engine *b = fake_engine_new(sup.base);
	struct sandbox *sa;
	const char *ca, *cb, *cc;
	json_object *r;
	char args[256];
	long long lost;

	fake_image_add(b, IMAGE);
	fake_id_base(b, 0x10000);
	engines_add(eng, "unix:///a.sock", 0, 0);
	engines_add(b, "tcp://127.0.0.1:2", 0, 0);
	ca = create_ok(cl, NULL);
	cb = create_ok(cl, NULL);
	cr_assert_eq(engine_of(eng, b, ca), 1);
	cr_assert_eq(engine_of(eng, b, cb), 2);
	sa = sandbox_find(NULL, ca);
	/* Its health check fails: down, its sandbox lost, its worker gone
	 * for good. */
	lost = stats.sandboxes_lost;
	fake_fail(eng, FAKE_PING, 100, "connection refused", 0);
	engines_suspect(eng);
	WAIT_FOR(sa->lost && sa->worker == NULL);
	cr_assert_eq(stats.sandboxes_lost, lost + 1);
	snprintf(args, sizeof args,
	    "{\"container_id\":\"%s\",\"commands\":\"true\"}", ca);
	r = wait_reply(cl, tool_call(cl, "sandbox_exec", args));
	cr_assert(is_error(r));
	cr_assert(strstr(text_of(r), "which stopped answering at") != NULL &&
	              strstr(text_of(r), "unix:///a.sock") != NULL,
	    "%s", text_of(r));
	snprintf(args, sizeof args, "{\"container_id\":\"%s\"}", ca);
	r = wait_reply(cl, tool_call(cl, "get_sandbox_status", args));
	cr_assert(!is_error(r), "%s", text_of(r));
	cr_assert(strstr(json_object_to_json_string(r), "\"lost\"") != NULL,
	    "%s", json_object_to_json_string(r));
	/* New sandboxes go to the other; no worker is respawned. */
	cc = create_ok(cl, NULL);
	cr_assert_eq(engine_of(eng, b, cc), 2);
	cr_assert_eq(worker_log_count("start", ca), 1);
	/* It answers again: the lost sandbox's container is reaped. */
	fake_fail(eng, FAKE_PING, 0, "none", 0);
	engines_suspect(eng);
	WAIT_FOR(!fake_container_has(eng, ca));
	engines_done(b);
}
