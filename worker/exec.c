/*
 * Exec sessions: one command run in the container as the sandbox user,
 * its output demultiplexed and forwarded as PROTO_DATA under the stream's
 * credit, its standard input (if any) sent over a hijacked connection,
 * its exit code read back.  Timeouts, output caps and cancellation kill
 * the command's processes inside the container.  The run itself goes
 * through the sandbox's agent when it can take it (agent.c: one message
 * each way, its kill at once), else it is the engine's, create to exit
 * code (engine_exec_new(); killed by killer.c).
 */
#include <sys/queue.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "agentwire.h"
#include "clock.h"
#include "config.h"
#include "engine.h"
#include "log.h"
#include "proto.h"
#include "worker.h"
#include "xmalloc.h"

#define EXEC_KILL_GRACE_MS 2000
#define EXEC_OOM_WAIT_MS 300

/*
 * The shell a command runs in: engine/scripts/exec-wrapper.sh, embedded.
 * What the command leaves running in its session is killed when it ends.
 */
extern const char exec_wrapper_sh[];

/* Set for probes, after the call's variables (PROBE_USER). */
static const char *const probe_env[] = {
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME=/", "LD_PRELOAD=", "LD_LIBRARY_PATH=", "LD_AUDIT=", "ENV=",
    "BASH_ENV=", "PYTHONPATH=", "PYTHONSTARTUP=", "NODE_OPTIONS=", NULL};

enum exec_state { X_CREATE, X_RUN, X_INSPECT, X_DONE };

/* A failed run's container looked at again, when it still runs. */
#define EXEC_LOOKS 4
#define EXEC_LOOK_AGAIN_MS 250

struct wexec {
	struct worker *w;
	uint32_t reqid;
	enum exec_state state;
	char token[40];
	char tag[2][32]; /* in the activity log: stdout, stderr */
	struct wrun run; /* the agent's or the engine's, until it is done */
	int usage; /* the command's own, from the agent */
	double cpu_ms;
	long long max_rss;
	struct killer *killer; /* the killer in flight, if any */
	long credit;
	long long out_bytes, err_bytes, cap;
	int timed_out, truncated, cancelled, killing, kill_tries;
	int log_stdout; /* else only its size goes to the activity log */
	int probe; /* runs as PROBE_USER */
	long exit_code;
	unsigned long oom_before;
	long long start_ms; /* clock_ms() */
	uint64_t egress_seq; /* proxy_seq() at the start */
	struct acct *acct; /* from the command's start */
	struct event *timer; /* timeout, then kill grace, then OOM wait */
	struct event *kick; /* runs the killer outside curl callbacks */
	struct event *look; /* a failed run: its container looked at */
	struct engine_req *alive; /* ... that look in flight */
	int looked;
	char *error;
	int stdin_stream; /* standard input streamed by the supervisor */
	int stdin_eof;
	LIST_ENTRY(wexec) entry;
};

static void exec_finish(struct wexec *);

/*
 * Whether it may still be killed: it runs, or the agent has it (which
 * may kill it before it said it started).
 */
static int
exec_killable(const struct wexec *x)
{
	return x->state == X_RUN || (x->run.ac != NULL && x->state == X_CREATE);
}

static struct wexec *
exec_find(struct worker *w, uint32_t reqid)
{
	struct wexec *x;

	LIST_FOREACH(x, &w->execs, entry)
	if (x->reqid == reqid)
		return x;
	return NULL;
}

static void
exec_free(struct wexec *x)
{
	LIST_REMOVE(x, entry);
	wrun_cancel(&x->run);
	if (x->killer != NULL)
		killer_cancel(x->killer);
	event_free(x->timer);
	event_free(x->kick);
	if (x->look != NULL)
		event_free(x->look);
	engine_req_cancel(x->alive);
	acct_end(x->acct, NULL);
	free(x->error);
	free(x);
}

/* The look at the container of a failed run: a death is told first. */
static void
exec_alive_cb(const struct engine_resp *resp, void *arg)
{
	struct wexec *x = arg;
	struct timeval tv = {0, EXEC_LOOK_AGAIN_MS * 1000};

	x->alive = NULL;
	/* Still running, but the run ended as a runtime that lost its
	 * sandbox ends it (runsc: exit 128, or a broken stream), before the
	 * engine marked the container: a few looks more, bounded. */
	if (resp->error == NULL && resp->container != NULL &&
	    resp->container->running &&
	    (x->error != NULL || x->exit_code == 128) &&
	    ++x->looked <= EXEC_LOOKS) {
		evtimer_add(x->look, &tv);
		return;
	}
	events_seen(resp);
	exec_finish(x);
}

static void
exec_look_cb(evutil_socket_t fd, short what, void *arg)
{
	struct wexec *x = arg;

	(void)fd;
	(void)what;
	x->alive = engine_container_inspect(
	    x->w->engine, x->w->container, exec_alive_cb, x);
}

/*
 * A run that failed under gVisor may have failed with its whole container
 * (a gVisor sandbox that dies ends its execs with an error of its own,
 * before the engine's "die" event): one look at the container first (from the
 * loop, bounded as every plain engine call is), so that the supervisor hears of
 * a death before this result and answers the call with it.
 */
static void
exec_end(struct wexec *x)
{
	/* Only a gVisor sandbox dies whole this way: under another runtime
	 * a failed run is told at once (a look would only delay it). */
	if (!engine_runtime_gvisor(x->w->conf->runtime) || x->looked ||
	    x->cancelled || x->timed_out || x->killing) {
		exec_finish(x);
		return;
	}
	x->looked = 1;
	x->state = X_INSPECT;
	evtimer_del(x->timer);
	x->look = evtimer_new(x->w->base, exec_look_cb, x);
	event_active(x->look, 0, 0);
}

static void
exec_fail(struct wexec *x, const char *what, const char *err)
{
	free(x->error);
	xasprintf(&x->error, "%s: %s", what, err);
	exec_finish(x);
}

/* The killer ran (or failed); the stream should end by itself now. */
static void
exec_killed(void *arg, const char *err)
{
	struct wexec *x = arg;
	struct timeval tv = {
	    EXEC_KILL_GRACE_MS / 1000, (EXEC_KILL_GRACE_MS % 1000) * 1000};

	x->killer = NULL;
	if (err != NULL)
		log_warnx("%s: kill of %s: %s", __func__, x->token, err);
	if (exec_killable(x))
		evtimer_add(x->timer, &tv);
}

static void
exec_kick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct wexec *x = arg;
	const char *tok = x->token;

	(void)fd;
	(void)what;
	if (x->killer != NULL || !exec_killable(x))
		return;
	if (wrun_kill(&x->run)) {
		exec_killed(x, NULL);
		return;
	}
	x->killer = killer_run_as(x->w, x->probe ? PROBE_USER : x->w->exec_user,
	    &tok, 1, exec_killed, x);
}

/* Kill the command's processes inside the container (once). */
static void
exec_kill(struct wexec *x)
{
	if (x->killing)
		return;
	x->killing = 1;
	evtimer_del(x->timer);
	event_active(x->kick, 0, 0);
}

/* Timer: the timeout, or the grace after a kill, or the OOM wait. */
static void
exec_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct wexec *x = arg;

	(void)fd;
	(void)what;
	if (x->state == X_INSPECT) {
		exec_finish(x);
		return;
	}
	if (!exec_killable(x))
		return;
	if (!x->killing) {
		x->timed_out = 1;
		exec_kill(x);
		return;
	}
	/* Killed but the stream stays open: the command may have started
	 * after the killer looked, so try again before giving up on it. */
	if (++x->kill_tries < 3) {
		event_active(x->kick, 0, 0);
		return;
	}
	log_warnx("%s: %s: stream still open after kill", __func__, x->token);
	wrun_close(&x->run);
}

static void
exec_output(int stream, const char *p, size_t len, void *arg)
{
	struct wexec *x = arg;
	long long room;
	uint16_t flag;

	room = x->cap - (x->out_bytes + x->err_bytes);
	if (x->cap > 0 && (long long)len > room) {
		/* What is dropped never reaches the supervisor, whose
		 * credit the agent runs on: give it back at once, or the
		 * agent stops reading the killed command's pipes and never
		 * sees them end (nor says its exit). */
		if (x->run.agent)
			wrun_credit(&x->run,
			    (long)(len - (room > 0 ? (size_t)room : 0)));
		len = room > 0 ? (size_t)room : 0;
		if (!x->truncated) {
			x->truncated = 1;
			exec_kill(x);
		}
	}
	if (len == 0)
		return;
	flag = stream == ENGINE_STDOUT ? PROTO_F_STDOUT : PROTO_F_STDERR;
	if (stream == ENGINE_STDERR || x->log_stdout)
		logs_add(x->tag[stream == ENGINE_STDERR], p, len);
	if (stream == ENGINE_STDOUT)
		x->out_bytes += (long long)len;
	else
		x->err_bytes += (long long)len;
	x->credit -= (long)len;
	while (len > 0) {
		size_t n = len > PROTO_DATA_CHUNK ? PROTO_DATA_CHUNK : len;

		worker_send(x->w, PROTO_DATA, flag, x->reqid, x->reqid, p, n);
		p += n;
		len -= n;
	}
	/* Out of credit: no more until the supervisor takes some. */
	if (x->credit <= 0 && !x->run.agent)
		wrun_pause(&x->run, 1);
}

/* The stream ended: a killed command's stream may end in an error. */
static int
exec_ended(const char *err, void *arg)
{
	struct wexec *x = arg;

	x->state = X_INSPECT;
	evtimer_del(x->timer);
	return err == NULL || x->killing;
}

static void
exec_done(const struct engine_exec_result *res, void *arg)
{
	struct wexec *x = arg;
	struct timeval tv = {0, EXEC_OOM_WAIT_MS * 1000};

	wrun_ended(&x->run);
	if (res->usage) {
		x->usage = 1;
		x->cpu_ms = res->cpu_ms;
		x->max_rss = res->max_rss_bytes;
	}
	if (res->error != NULL) {
		free(x->error);
		xasprintf(&x->error, "%s: %s",
		    res->phase == ENGINE_EXEC_CREATE
		        ? "cannot start the command"
		    : res->phase == ENGINE_EXEC_STREAM
		        ? "exec stream failed"
		        : "cannot read the exit code",
		    res->error);
		exec_end(x);
		return;
	}
	if (res->phase == ENGINE_EXEC_INSPECT)
		x->exit_code = res->exit_code;
	/* An OOM kill shows as SIGKILL; its event may trail the exit. */
	if (x->exit_code == 137 && x->w->oom_count == x->oom_before) {
		x->state = X_INSPECT;
		evtimer_add(x->timer, &tv);
		return;
	}
	if (x->exit_code != 0) {
		exec_end(x);
		return;
	}
	exec_finish(x);
}

/* Input left for the engine: the supervisor may send that much more. */
static void
exec_stdin_sent(size_t n, void *arg)
{
	struct wexec *x = arg;
	json_object *c;

	if (!x->stdin_stream)
		return;
	c = json_object_new_object();
	json_object_object_add(c, "bytes", json_object_new_int64((int64_t)n));
	proto_chan_send_json(x->w->chan, PROTO_CREDIT, x->reqid, x->reqid, c);
	json_object_put(c);
}

/* The exec exists: it runs now, unless it was cancelled meanwhile. */
static void
exec_started(void *arg)
{
	struct wexec *x = arg;

	if (x->cancelled) {
		exec_finish(x);
		return;
	}
	x->state = X_RUN;
	acct_started(x->acct);
	if (x->killing)
		event_active(x->kick, 0, 0);
}

static const struct engine_exec_cbs exec_cbs = {
    .started = exec_started,
    .output = exec_output,
    .sent = exec_stdin_sent,
    .ended = exec_ended,
    .done = exec_done,
};

/* Result for the supervisor; frees the exec. */
static void
exec_finish(struct wexec *x)
{
	struct proto_result r;
	json_object *o;

	x->state = X_DONE;
	memset(&r, 0, sizeof r);
	r.has = PROTO_R_EXEC;
	r.exit_code = x->error ? -1 : x->exit_code;
	r.signal = !x->error && x->exit_code > 128 && x->exit_code < 128 + 65
	               ? x->exit_code - 128
	               : 0;
	r.timed_out = x->timed_out;
	r.truncated = x->truncated;
	r.cancelled = x->cancelled;
	r.oom_killed = x->w->oom_count != x->oom_before && x->exit_code == 137;
	r.duration_ms = clock_ms() - x->start_ms;
	r.stdout_bytes = x->out_bytes;
	r.stderr_bytes = x->err_bytes;
	if (x->usage) {
		r.has |= PROTO_R_USAGE;
		r.command_cpu_ms = x->cpu_ms;
		r.command_max_rss_bytes = x->max_rss;
	}
	if (x->w->conf->agent) {
		r.has |= PROTO_R_AGENT;
		r.agent = x->run.agent;
		r.agent_note =
		    x->run.agent || x->run.note[0] == '\0' ? NULL : x->run.note;
	}
	acct_end(x->acct, &r);
	x->acct = NULL;
	r.error = x->error;
	if (!x->probe &&
	    (r.egress = proxy_result(x->egress_seq, &r.egress_cut)) != NULL &&
	    r.egress_cut)
		r.has |= PROTO_R_EGRESS_CUT;
	o = proto_result_encode(&r);
	json_object_put(r.egress);
	worker_send_json(x->w, PROTO_RESULT, x->reqid, o);
	json_object_put(o);
	if (x->tag[0][0] != '\0' && !x->log_stdout)
		logs_addf(x->tag[0],
		    "%lld bytes of standard output (data, "
		    "not logged)",
		    x->out_bytes);
	if (x->tag[0][0] != '\0')
		logs_addf(x->tag[0], "exit %ld%s%s%s%s", x->exit_code,
		    x->timed_out ? ", timed out" : "",
		    x->cancelled ? ", cancelled" : "",
		    x->truncated ? ", output over the cap" : "",
		    x->error != NULL ? ", failed to run" : "");
	exec_free(x);
}

/* PROTO_CALL "exec": create the exec, then stream it. */
void
exec_start(struct worker *w, uint32_t reqid, json_object *call)
{
	struct wexec *x;
	struct engine_exec_spec spec;
	struct proto_run run;
	const char *why, **argv, **aargv;
	struct timeval tv;
	char **env;
	size_t i, n = 0, nargs = 0, nenv = 0;
	int dup;

	x = xcalloc(1, sizeof *x);
	x->w = w;
	x->reqid = reqid;
	x->credit = PROTO_INITIAL_CREDIT;
	x->exit_code = -1;
	x->oom_before = w->oom_count;
	x->start_ms = clock_ms();
	x->egress_seq = proxy_seq();
	memset(&spec, 0, sizeof spec);
	x->timer = evtimer_new(w->base, exec_timer_cb, x);
	x->kick = event_new(w->base, -1, 0, exec_kick_cb, x);
	dup = exec_find(w, reqid) != NULL;
	LIST_INSERT_HEAD(&w->execs, x, entry);
	if (proto_run_decode(call, &run, w->conf->output_cap, &why) == -1 ||
	    run.kind != PROTO_RUN_EXEC) {
		snprintf(x->token, sizeof x->token, "%08x%08x%08x",
		    (unsigned)getpid(), reqid, (unsigned)random());
		exec_fail(x, "bad call", why != NULL ? why : "not an exec");
		return;
	}
	if (run.token != NULL && killer_token_valid(run.token))
		snprintf(x->token, sizeof x->token, "%s", run.token);
	else
		snprintf(x->token, sizeof x->token, "%08x%08x%08x",
		    (unsigned)getpid(), reqid, (unsigned)random());
	if (dup) {
		proto_run_clear(&run);
		exec_fail(x, "bad call", "duplicate request id");
		return;
	}
	snprintf(x->tag[0], sizeof x->tag[0], "exec %.8s", x->token);
	snprintf(x->tag[1], sizeof x->tag[1], "exec %.8s stderr", x->token);
	/* Our own helper scripts are logged as what the client asked. */
	if (run.log_as != NULL)
		logs_addf(x->tag[0], "%s", run.log_as);
	else
		logs_addf(x->tag[0], "$ %s", run.command);
	x->cap = run.output_cap;
	x->log_stdout = run.log_stdout;
	x->stdin_stream = run.stdin_stream;
	x->probe = run.probe;

	while (run.args != NULL && run.args[nargs] != NULL)
		nargs++;
	/* The engine's: the command in the wrapper shell, "/bin/sh -c
	 * WRAPPER /bin/sh COMMAND ARGS..."; the agent's, which cleans up
	 * the session itself: "/bin/sh -c COMMAND [/bin/sh ARGS...]" (so
	 * that ps shows the command last, as it does for the engine's). */
	argv = xcalloc(nargs + 6, sizeof *argv);
	aargv = xcalloc(nargs + 5, sizeof *aargv);
	argv[n++] = "/bin/sh";
	argv[n++] = "-c";
	argv[n++] = exec_wrapper_sh;
	argv[n++] = "/bin/sh";
	argv[n++] = run.command;
	aargv[0] = "/bin/sh";
	aargv[1] = "-c";
	aargv[2] = run.command;
	aargv[3] = nargs > 0 ? "/bin/sh" : NULL;
	for (i = 0; i < nargs; i++) {
		argv[n++] = run.args[i];
		aargv[4 + i] = run.args[i];
	}
	spec.argv = argv;
	spec.user = x->probe ? PROBE_USER : w->exec_user;
	spec.workdir = run.workdir;
	if (x->stdin_stream)
		run.stdin_text = NULL;
	spec.stdin = run.stdin_text != NULL || x->stdin_stream;
	env = xcalloc(
	    (run.env != NULL ? (size_t)json_object_object_length(run.env) : 0) +
	        sizeof probe_env / sizeof probe_env[0] + PROXY_ENV_MAX + 2,
	    sizeof *env);
	/* The way out, when the sandbox has egress (the call's own
	 * variables of those names win). */
	if (!x->probe)
		proxy_env(env, &nenv, run.env);
	if (run.env != NULL) {
		json_object_object_foreach(run.env, key, val)
		{
			xasprintf(&env[nenv++], "%s=%s", key,
			    json_object_get_string(val));
		}
	}
	/*
	 * A probe finds its tools in the system's directories only, and
	 * loads nothing the sandbox's environment names (the sandbox user
	 * can write its home, which a client's PATH may name).
	 */
	for (i = 0; x->probe && probe_env[i] != NULL; i++)
		env[nenv++] = xstrdup(probe_env[i]);
	/* Last, so that no variable of the call can replace them. */
	xasprintf(&env[nenv++], "%s=%s", EXEC_TOKEN_ENV, x->token);
	xasprintf(&env[nenv++], "%s=%u", AGENT_PID_ENV, agent_pid(w));
	spec.env = (const char *const *)env;

	x->state = X_CREATE;
	/*
	 * Its CPU is counted from before it starts: the agent runs a
	 * command before its STARTED reaches us, and what it used by then
	 * is the run's (its memory peak from then: acct_started()).
	 */
	x->acct = acct_begin();
	wrun_start(w, &x->run, &spec, aargv, x->token, &exec_cbs, x);
	if (run.stdin_text != NULL) {
		wrun_write(&x->run, run.stdin_text, run.stdin_len);
		wrun_close_write(&x->run);
	}
	for (i = 0; i < nenv; i++)
		free(env[i]);
	free(env);
	free(argv);
	free(aargv);
	if (run.timeout_ms > 0) {
		tv.tv_sec = run.timeout_ms / 1000;
		tv.tv_usec = (run.timeout_ms % 1000) * 1000;
		evtimer_add(x->timer, &tv);
	}
	proto_run_clear(&run);
}

/* PROTO_CANCEL: kill the call's processes; the result says cancelled. */
void
exec_cancel(struct worker *w, uint32_t reqid)
{
	struct wexec *x;

	if ((x = exec_find(w, reqid)) == NULL)
		return;
	x->cancelled = 1;
	if (exec_killable(x))
		exec_kill(x);
}

/*
 * PROTO_SIGNAL: send a signal to the call's processes (a background
 * process's, from process_signal).  SIGKILL is the kill of a timeout,
 * stop then kill by group and token; the others are sent once, to the
 * group and to everything with the token, by the agent or by the killer
 * in its signal mode.  The result is not marked cancelled.
 */
void
exec_signal(struct worker *w, uint32_t reqid, int sig)
{
	struct wexec *x;

	if ((x = exec_find(w, reqid)) == NULL || !exec_killable(x))
		return;
	if (sig == SIGKILL) {
		exec_kill(x);
		return;
	}
	if (sig != SIGHUP && sig != SIGINT && sig != SIGTERM)
		return;
	if (!wrun_signal(&x->run, sig))
		(void)killer_signal(
		    w, x->probe ? PROBE_USER : w->exec_user, x->token, sig);
}

/* PROTO_CREDIT: the supervisor took output; resume a paused stream. */
void
exec_credit(struct worker *w, uint32_t stream, long bytes)
{
	struct wexec *x;

	if ((x = exec_find(w, stream)) == NULL || bytes <= 0)
		return;
	x->credit += bytes;
	if (x->run.agent)
		wrun_credit(&x->run, bytes);
	else if (x->credit > 0)
		wrun_pause(&x->run, 0);
}

/* The worker is going away: drop every exec without a result. */
void
exec_abort_all(struct worker *w)
{
	struct wexec *x;

	/* Each exec_free() unlinks the head. */
	while ((x = LIST_FIRST(&w->execs)) != NULL)
		exec_free(x); // NOLINT(clang-analyzer-unix.Malloc)
}

/* PROTO_DATA with PROTO_F_STDIN: input for a streamed exec. */
void
exec_stdin(
    struct worker *w, uint32_t reqid, uint16_t flags, const void *p, size_t len)
{
	struct wexec *x;

	if ((x = exec_find(w, reqid)) == NULL || !x->stdin_stream ||
	    x->stdin_eof)
		return;
	if (flags & PROTO_F_EOF)
		x->stdin_eof = 1;
	/* Input that comes before the stream waits for it (the engine's). */
	wrun_write(&x->run, p, len);
	if (x->stdin_eof)
		wrun_close_write(&x->run);
}

struct killcall {
	struct worker *w;
	uint32_t reqid;
};

static void
exec_tokens_killed(void *arg, const char *err)
{
	struct killcall *kc = arg;
	json_object *r;

	r = json_object_new_object();
	if (err != NULL)
		json_object_object_add(r, "error", json_object_new_string(err));
	worker_send_json(kc->w, PROTO_RESULT, kc->reqid, r);
	json_object_put(r);
	free(kc);
}

/* PROTO_CALL "kill": kill what carries these tokens (a dead worker's). */
void
exec_kill_tokens(struct worker *w, uint32_t reqid, json_object *call)
{
	const char *toks[64];
	struct killcall *kc;
	json_object *a, *v;
	size_t i, n = 0;

	if (json_object_object_get_ex(call, "tokens", &a) &&
	    json_object_is_type(a, json_type_array))
		for (i = 0; i < json_object_array_length(a) && n < 64; i++) {
			v = json_object_array_get_idx(a, i);
			if (json_object_is_type(v, json_type_string) &&
			    killer_token_valid(json_object_get_string(v)))
				toks[n++] = json_object_get_string(v);
		}
	kc = xcalloc(1, sizeof *kc);
	kc->w = w;
	kc->reqid = reqid;
	if (n == 0) {
		exec_tokens_killed(kc, NULL);
		return;
	}
	if (agent_sweep(w, toks, n, exec_tokens_killed, kc) == 0)
		return;
	killer_run(w, toks, n, exec_tokens_killed, kc);
}
