/*
 * The worker's end of the agent in its sandbox (agent/agent.c): one
 * long-lived exec of AGENT_PATH, as the sandbox user, whose standard input
 * and output carry proto/agentwire.h.  A command through the agent costs
 * one message each way instead of an exec's three engine calls.
 *
 * The agent runs beside sandbox code, as the same user, so what it says is
 * hostile input: every message is bounded by the codec, checked against
 * what the worker asked (a known command, output within its credit, one
 * EXIT), and the first thing that does not fit ends the agent.  Then its
 * commands fail with a clear error, new commands take the engine's own
 * exec (worker/exec.c falls back when agent_cmd_new() says no), and the
 * agent is started again after a backoff.  A broken agent that will not
 * exit is killed by its token, as a command is (killer.c).
 *
 * Connections' messages take the agent's channel instead of its stream
 * when it has one (channel.c): its HELLO says so, and it is ready only
 * once the channel's token has come too.
 */
#include <sys/queue.h>

#include <stdarg.h>
#include <stdio.h>
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

#define AGENT_HELLO_MS 5000 /* from its start to its HELLO */
#define AGENT_BACKOFF_MIN_MS 100
#define AGENT_BACKOFF_MAX_MS 30000
#define AGENT_STABLE_MS 60000 /* up this long: the backoff starts over */
#define AGENT_MAX_CMDS 128 /* the agent's own bound */
/* Agents lost while a killer of an earlier one runs: killed next.  With
 * the backoff (doubling from 100 ms) a killer of even 30 s sees about 9. */
#define AGENT_PENDING_KILLS 16
#define AGENT_MAX_RSS_KB (1ULL << 40) /* a PiB */
#define AGENT_MAX_CPU_US (1ULL << 52) /* 142 years */
/* A caller's input not yet given back: the supervisor's window (exec.c). */
#define AGENT_INPUT_WINDOW PROTO_INITIAL_CREDIT

enum agent_state { A_OFF, A_STARTING, A_READY, A_WAIT };

struct agent_cmd {
	struct agent *a;
	uint32_t id;
	const struct engine_exec_cbs *cbs;
	void *arg;
	long long credit; /* output the agent may still send */
	int started, busy;
	int dead; /* no callback any more (ended, or cancelled: then kept
	             until its EXIT, so that what it still sends is expected) */
	int orphan; /* cancelled from one of its callbacks */
	int window, paused; /* agent_cmd_pause() */
	/*
	 * Input: held, sent to the agent and not answered by SENT (at most
	 * AGENT_INPUT_CAP); unacked, written by the caller and not yet
	 * given back by its sent callback (agent_cmd_ack()).
	 */
	long long held, unacked;
	TAILQ_ENTRY(agent_cmd) entry;
};
TAILQ_HEAD(agent_cmds, agent_cmd);

struct agent {
	struct worker *w;
	enum agent_state state;
	struct engine_exec *ex;
	struct agent_reader rd;
	struct channel *ch; /* the connections' channel, or NULL */
	int hello_wait; /* a HELLO came that waits for the channel */
	uint32_t hello_pid;
	struct agent_cmds cmds;
	size_t ncmds;
	uint32_t next_id;
	struct event *timer; /* the HELLO's deadline, or the restart */
	long long started_ms;
	long backoff_ms;
	unsigned long restarts;
	long long stderr_bytes;
	char token[40]; /* in its environment: the killer finds it */
	char why[160]; /* why it is not in use now */
	struct killer *killer;
	char pending[AGENT_PENDING_KILLS][40]; /* tokens the next one kills */
	size_t npending;
};

static void agent_lost(struct agent *, const char *);
static void agent_spawn(struct agent *);
static void agent_killed(void *, const char *);

/* Tell the supervisor whether commands go through the agent now. */
static void
agent_notify(struct agent *a, int ready)
{
	json_object *o;

	o = json_object_new_object();
	json_object_object_add(o, "event", json_object_new_string("agent"));
	json_object_object_add(o, "ready", json_object_new_boolean(ready));
	if (a->w->chan != NULL)
		worker_send_json(a->w, PROTO_NOTIFY, 0, o);
	json_object_put(o);
}

static struct agent_cmd *
agent_cmd_find(struct agent *a, uint32_t id)
{
	struct agent_cmd *c;

	TAILQ_FOREACH(c, &a->cmds, entry)
	if (c->id == id)
		return c;
	return NULL;
}

static void
agent_cmd_free(struct agent_cmd *c)
{
	TAILQ_REMOVE(&c->a->cmds, c, entry);
	c->a->ncmds--;
	free(c);
}

static void
agent_send(struct agent *a, unsigned char *msg, size_t len)
{
	if (msg == NULL)
		return;
	if (a->ex != NULL)
		engine_exec_write(a->ex, msg, len);
	free(msg);
}

/* A message made by the codec (NULL: it did not fit), sent and freed;
 * -1 if the agent is not up to take it.  A connection's goes on the
 * channel when there is one. */
int
agent_send_msg(struct worker *w, unsigned char *msg, size_t len)
{
	struct agent *a = w->agent;
	struct agent_hdr h;

	if (msg == NULL || a == NULL || a->state != A_READY) {
		free(msg);
		return -1;
	}
	if (channel_up(a->ch) && agent_hdr_decode(msg, &h) == 0 &&
	    agent_type_conn(h.type))
		return channel_send(a->ch, msg, len);
	agent_send(a, msg, len);
	return 0;
}

static void
agent_send_u32(struct agent *a, uint16_t type, uint32_t id, uint32_t v)
{
	unsigned char *msg;
	size_t len = 0;

	msg = agent_msg_u32(type, id, v, &len);
	agent_send(a, msg, len);
}

/*
 * A command cancelled while it runs: killed, and kept until its EXIT so
 * that what it still sends is expected (with room for all of it).
 */
static void
agent_cmd_orphan(struct agent_cmd *c)
{
	c->credit += AGENT_MAX_PAYLOAD;
	agent_send_u32(c->a, AGENT_CREDIT, c->id, AGENT_MAX_PAYLOAD);
	agent_cmd_kill(c);
}

/* A command that is only paused and resumed: its credit kept full. */
static void
agent_cmd_refill(struct agent_cmd *c)
{
	long long want = AGENT_INITIAL_CREDIT - c->credit;

	if (!c->window || c->paused || c->dead ||
	    want < AGENT_INITIAL_CREDIT / 2)
		return;
	c->credit += want;
	agent_send_u32(c->a, AGENT_CREDIT, c->id, (uint32_t)want);
}

/* Back from a command's callback: a cancel made there takes effect. */
static void
agent_cmd_unbusy(struct agent_cmd *c)
{
	if (--c->busy == 0 && c->orphan) {
		c->orphan = 0;
		agent_cmd_orphan(c);
	}
}

/*
 * Give the caller back what it wrote, as its sent callback, as soon as the
 * agent has room for it: the caller writes at most AGENT_INPUT_WINDOW
 * bytes it has not been given back (exec.c: the supervisor's credit, one
 * to one), so what may still come on top of what the agent holds stays
 * within AGENT_INPUT_CAP.  Input then flows without a round trip through
 * the engine per window.
 */
static void
agent_cmd_ack(struct agent_cmd *c)
{
	long long room, n;

	room = AGENT_INPUT_CAP - AGENT_INPUT_WINDOW - c->held + c->unacked;
	n = c->unacked < room ? c->unacked : room;
	if (n <= 0)
		return;
	c->unacked -= n;
	if (!c->dead && c->cbs->sent != NULL) {
		c->busy++;
		c->cbs->sent((size_t)n, c->arg);
		agent_cmd_unbusy(c);
	}
}

/* A command's end: its callbacks learn it, then it goes (unless busy). */
static void
agent_cmd_end(struct agent_cmd *c, long code, const char *err,
    enum engine_exec_phase phase, const struct agent_exit *ae)
{
	struct engine_exec_result res;

	if (!c->dead) {
		memset(&res, 0, sizeof res);
		res.exit_code = code;
		res.error = err;
		res.phase = phase;
		if (ae != NULL) {
			res.usage = 1;
			res.cpu_ms =
			    (double)(ae->user_us + ae->sys_us) / 1000.0;
			res.max_rss_bytes = (long long)ae->maxrss_kb * 1024;
		}
		c->busy++;
		if (phase != ENGINE_EXEC_CREATE && c->cbs->ended != NULL)
			c->cbs->ended(err, c->arg);
		c->dead = 1;
		c->cbs->done(&res, c->arg);
		c->busy--;
	}
	agent_cmd_free(c);
}

/* The agent broke its protocol: it is done for. */
static void agent_bad(struct agent *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void
agent_bad(struct agent *a, const char *fmt, ...)
{
	char why[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	log_warnx("agent: %s; stopping it", why);
	agent_lost(a, why);
}

/*
 * Kill what is left of the agent of token (NULL: none new): its token
 * waits with any others for the killer, which runs one at a time and
 * takes every token that waited.
 */
static void
agent_kill(struct agent *a, const char *token)
{
	const char *toks[AGENT_PENDING_KILLS];
	size_t i;

	if (a->w->quitting || a->w->engine == NULL)
		return;
	if (token != NULL && a->npending < AGENT_PENDING_KILLS)
		snprintf(a->pending[a->npending++], sizeof a->pending[0], "%s",
		    token);
	else if (token != NULL)
		log_warnx("agent: %zu agents wait for their killer; one more "
		          "is left running",
		    a->npending);
	if (a->killer != NULL || a->npending == 0)
		return;
	for (i = 0; i < a->npending; i++)
		toks[i] = a->pending[i];
	a->killer = killer_run(a->w, toks, a->npending, agent_killed, a);
	a->npending = 0;
}

static void
agent_killed(void *arg, const char *err)
{
	struct agent *a = arg;

	a->killer = NULL;
	if (err != NULL)
		log_warnx("agent: kill: %s", err);
	agent_kill(a, NULL);
}

/* Up: commands (and connections) go through it from now on. */
static void
agent_ready_now(struct agent *a)
{
	evtimer_del(a->timer);
	a->hello_wait = 0;
	a->state = A_READY;
	a->why[0] = '\0';
	acct_prepare();
	agent_notify(a, 1);
	proxy_agent_ready(a->w);
	log_debug("agent: ready, pid %u (in the sandbox)%s",
	    (unsigned)a->hello_pid,
	    channel_up(a->ch) ? ", connections on its channel" : "");
}

static int
agent_hello(
    struct agent *a, const struct agent_hdr *hdr, const unsigned char *p)
{
	struct agent_hello h;

	if (a->state != A_STARTING || a->hello_wait ||
	    agent_hello_decode(p, hdr->len, &h) == -1) {
		agent_bad(a, "a bad or second HELLO");
		return -1;
	}
	if (h.version != AGENT_VERSION) {
		agent_bad(a, "it speaks version %u, not %d",
		    (unsigned)h.version, AGENT_VERSION);
		return -1;
	}
	if ((long)h.uid != a->w->conf->worker_uid) {
		agent_bad(
		    a, "it runs as uid %u, not the sandbox's", (unsigned)h.uid);
		return -1;
	}
	a->hello_pid = h.pid;
	if (!(hdr->flags & AGENT_F_CHANNEL)) {
		/* It did not come: nobody else may take its place. */
		channel_close(a->ch);
		agent_ready_now(a);
		return 0;
	}
	if (a->ch == NULL) {
		agent_bad(a, "it says it has a channel it was never given");
		return -1;
	}
	if (channel_up(a->ch))
		agent_ready_now(a);
	else
		a->hello_wait = 1; /* its token is on its way */
	return 0;
}

/* The channel's token came (channel.c). */
void
agent_channel_up(struct worker *w)
{
	struct agent *a = w->agent;

	if (a != NULL && a->state == A_STARTING && a->hello_wait)
		agent_ready_now(a);
}

/* The channel broke, or said what it may not (channel.c). */
void
agent_channel_lost(struct worker *w, const char *why)
{
	if (w->agent != NULL)
		agent_bad(w->agent, "%s", why);
}

/* A message on the channel: a connection's; -1 once the agent is lost. */
int
agent_channel_message(
    struct worker *w, const struct agent_hdr *h, const unsigned char *p)
{
	struct agent *a = w->agent;
	char why[128];

	if (a == NULL)
		return -1;
	if (a->state != A_READY || !agent_type_conn(h->type)) {
		agent_bad(a, "message %u on the channel%s", h->type,
		    a->state != A_READY ? " before its HELLO" : "");
		return -1;
	}
	if (relay_message(w, h, p, why, sizeof why) == -1) {
		agent_bad(a, "%s", why);
		return -1;
	}
	return 0;
}

/* One whole message from the agent; -1 once the agent is lost. */
static int
agent_message(
    struct agent *a, const struct agent_hdr *h, const unsigned char *p)
{
	struct agent_cmd *c;
	struct agent_exit ae;
	char why[128];
	uint32_t v;
	int stream;

	if (h->type == AGENT_HELLO)
		return agent_hello(a, h, p);
	if (a->state != A_READY) {
		agent_bad(a, "message %u before its HELLO", h->type);
		return -1;
	}
	switch (h->type) {
	case AGENT_DATA:
	case AGENT_ACK:
	case AGENT_CLOSE:
	case AGENT_OPENED:
	case AGENT_ACCEPT:
	case AGENT_LISTENING:
		if (relay_message(a->w, h, p, why, sizeof why) == -1) {
			agent_bad(a, "%s", why);
			return -1;
		}
		return 0;
	}
	if ((c = agent_cmd_find(a, h->id)) == NULL) {
		agent_bad(a, "message %u for command %u, which is not running",
		    h->type, (unsigned)h->id);
		return -1;
	}
	switch (h->type) {
	case AGENT_STARTED:
		if (c->started || agent_u32_decode(p, h->len, &v) == -1)
			break;
		c->started = 1;
		if (!c->dead && c->cbs->started != NULL) {
			c->busy++;
			c->cbs->started(c->arg);
			agent_cmd_unbusy(c);
		}
		return 0;
	case AGENT_OUT:
		if (!c->started || (long long)h->len > c->credit)
			break;
		c->credit -= h->len;
		stream =
		    h->flags & AGENT_F_STDERR ? ENGINE_STDERR : ENGINE_STDOUT;
		if (!c->dead && c->cbs->output != NULL && h->len > 0) {
			c->busy++;
			c->cbs->output(stream, (const char *)p, h->len, c->arg);
			agent_cmd_unbusy(c);
		}
		agent_cmd_refill(c);
		return 0;
	case AGENT_SENT:
		if (!c->started || agent_u32_decode(p, h->len, &v) == -1 ||
		    v > c->held)
			break;
		c->held -= v;
		agent_cmd_ack(c);
		return 0;
	case AGENT_EXIT:
		/* Usage a machine can have: else it is made up. */
		if (agent_exit_decode(p, h->len, &ae) == -1 ||
		    ae.maxrss_kb > AGENT_MAX_RSS_KB ||
		    ae.user_us > AGENT_MAX_CPU_US ||
		    ae.sys_us > AGENT_MAX_CPU_US)
			break;
		if (ae.error[0] != '\0')
			agent_cmd_end(
			    c, -1, ae.error, ENGINE_EXEC_CREATE, NULL);
		else if (!c->started)
			break;
		else
			agent_cmd_end(c, ae.exit_code < 0 ? -1 : ae.exit_code,
			    NULL, ENGINE_EXEC_INSPECT, &ae);
		return 0;
	case AGENT_SWEPT:
		/* A sweep's answer (agent_sweep()). */
		if (agent_u32_decode(p, h->len, &v) == -1)
			break;
		agent_cmd_end(c, v, NULL, ENGINE_EXEC_INSPECT, NULL);
		return 0;
	}
	agent_bad(
	    a, "a bad message %u for command %u", h->type, (unsigned)h->id);
	return -1;
}

/*
 * Bytes of the agent's standard output, as they come (any split): each
 * whole message is checked and acted on; the first bad one ends the
 * agent, and what follows it is not read.
 */
void
agent_input(struct worker *w, const char *p, size_t len)
{
	struct agent *a = w->agent;
	size_t n;
	int done;

	while (len > 0 && a != NULL &&
	       (a->state == A_STARTING || a->state == A_READY)) {
		n = agent_reader_take(&a->rd, p, len, &done);
		if (n == (size_t)-1) {
			agent_bad(a, "a malformed message");
			return;
		}
		p += n;
		len -= n;
		if (done && agent_message(a, &a->rd.hdr, a->rd.buf) == -1)
			return;
	}
}

/* The agent's exec output: its protocol on stdout, its noise on stderr. */
static void
agent_output(int stream, const char *p, size_t len, void *arg)
{
	struct agent *a = arg;

	if (stream == ENGINE_STDERR) {
		/* The sandbox can write there: counted, never kept. */
		a->stderr_bytes += (long long)len;
		return;
	}
	agent_input(a->w, p, len);
}

static void
agent_exec_done(const struct engine_exec_result *res, void *arg)
{
	struct agent *a = arg;
	char why[128];

	a->ex = NULL;
	if (res->error != NULL)
		snprintf(why, sizeof why, "it %s: %s",
		    res->phase == ENGINE_EXEC_CREATE ? "could not start"
		                                     : "lost its stream",
		    res->error);
	else
		snprintf(why, sizeof why, "it exited (%ld)", res->exit_code);
	agent_lost(a, why);
}

static int
agent_exec_ended(const char *err, void *arg)
{
	(void)arg;
	return err == NULL;
}

static const struct engine_exec_cbs agent_exec_cbs = {
    .output = agent_output,
    .ended = agent_exec_ended,
    .done = agent_exec_done,
};

static void
agent_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;

	(void)fd;
	(void)what;
	if (a->state == A_STARTING && a->hello_wait)
		agent_bad(a, "its channel's token did not come within %d ms",
		    AGENT_HELLO_MS);
	else if (a->state == A_STARTING)
		agent_bad(a, "no HELLO within %d ms", AGENT_HELLO_MS);
	else if (a->state == A_WAIT)
		agent_spawn(a);
}

static void
agent_spawn(struct agent *a)
{
	struct engine_exec_spec spec;
	const char *argv[] = {AGENT_PATH, NULL};
	const char *env[3] = {NULL, NULL, NULL};
	struct timeval tv = {AGENT_HELLO_MS / 1000, 0};
	const char *chtok;
	char *tok, *chenv = NULL;

	snprintf(a->token, sizeof a->token, "%08x%08x%08x", (unsigned)getpid(),
	    (unsigned)a->restarts, (unsigned)random());
	xasprintf(&tok, "%s=%s", EXEC_TOKEN_ENV, a->token);
	env[0] = tok;
	if ((chtok = channel_listen(a->ch)) != NULL) {
		xasprintf(&chenv, "%s=%s", AGENT_CHANNEL_ENV, chtok);
		env[1] = chenv;
	}
	a->hello_wait = 0;
	memset(&spec, 0, sizeof spec);
	spec.argv = argv;
	spec.user = a->w->exec_user;
	spec.env = env;
	spec.stdin = 1;
	agent_reader_clear(&a->rd);
	agent_reader_init(&a->rd);
	a->state = A_STARTING;
	a->started_ms = clock_ms();
	snprintf(a->why, sizeof a->why, "the agent is starting");
	/* Without an engine (a harness), its bytes come from agent_input(). */
	if (a->w->engine != NULL)
		a->ex = engine_exec_new(
		    a->w->engine, a->w->container, &spec, &agent_exec_cbs, a);
	free(tok);
	if (chenv != NULL)
		explicit_bzero(chenv, strlen(chenv));
	free(chenv);
	evtimer_add(a->timer, &tv);
}

/*
 * The agent is gone or no good: its commands fail, what is left of it is
 * killed, and it starts again after a backoff.
 */
static void
agent_lost(struct agent *a, const char *why)
{
	struct agent_cmd *c;
	struct timeval tv;
	char err[256];
	const char *tok = a->token;

	if (a->state == A_OFF || a->state == A_WAIT)
		return;
	engine_exec_cancel(a->ex);
	a->ex = NULL;
	/* Whatever is left of it (a broken agent may not exit by itself). */
	agent_kill(a, tok);
	evtimer_del(a->timer);
	if (a->state == A_READY)
		agent_notify(a, 0);
	a->state = A_WAIT;
	a->hello_wait = 0;
	channel_close(a->ch);
	relay_agent_lost(a->w);
	a->restarts++;
	snprintf(a->why, sizeof a->why, "the agent is restarting: %s", why);
	snprintf(err, sizeof err,
	    "the sandbox's agent was lost mid-command (%s)", why);
	/* Each agent_cmd_end() unlinks the head. */
	// NOLINTBEGIN(clang-analyzer-unix.Malloc)
	while ((c = TAILQ_FIRST(&a->cmds)) != NULL)
		agent_cmd_end(c, -1, err, ENGINE_EXEC_STREAM, NULL);
	// NOLINTEND(clang-analyzer-unix.Malloc)
	if (a->w->quitting)
		return;
	if (a->started_ms > 0 && clock_ms() - a->started_ms > AGENT_STABLE_MS)
		a->backoff_ms = AGENT_BACKOFF_MIN_MS;
	tv.tv_sec = a->backoff_ms / 1000;
	tv.tv_usec = (a->backoff_ms % 1000) * 1000;
	evtimer_add(a->timer, &tv);
	a->backoff_ms *= 2;
	if (a->backoff_ms > AGENT_BACKOFF_MAX_MS)
		a->backoff_ms = AGENT_BACKOFF_MAX_MS;
	log_info("agent: lost (%s); commands take the engine's exec until it "
	         "is back",
	    why);
}

void
agent_start(struct worker *w)
{
	struct agent *a;

	a = xcalloc(1, sizeof *a);
	a->w = w;
	a->state = A_OFF;
	TAILQ_INIT(&a->cmds);
	agent_reader_init(&a->rd);
	a->timer = evtimer_new(w->base, agent_timer_cb, a);
	a->backoff_ms = AGENT_BACKOFF_MIN_MS;
	a->next_id = 1;
	w->agent = a;
	if (w->conf->agent)
		a->ch = channel_new(w, w->conf->worker_channel);
	if (!w->conf->agent) {
		snprintf(
		    a->why, sizeof a->why, "the agent is off (--agent off)");
		return;
	}
	agent_spawn(a);
}

void
agent_stop(struct worker *w)
{
	struct agent *a = w->agent;
	struct agent_cmd *c;

	if (a == NULL)
		return;
	w->agent = NULL;
	/* Each agent_cmd_free() unlinks the head. */
	// NOLINTBEGIN(clang-analyzer-unix.Malloc)
	while ((c = TAILQ_FIRST(&a->cmds)) != NULL) {
		c->dead = 1;
		agent_cmd_free(c);
	}
	// NOLINTEND(clang-analyzer-unix.Malloc)
	engine_exec_cancel(a->ex);
	if (a->killer != NULL)
		killer_cancel(a->killer);
	event_free(a->timer);
	agent_reader_clear(&a->rd);
	channel_free(a->ch);
	free(a);
}

/* Whether the agent is up (it may still be too busy for a command). */
int
agent_ready(struct worker *w)
{
	return w->agent != NULL && w->agent->state == A_READY;
}

/* The agent's pid in the sandbox, once it said hello (else 0). */
unsigned int
agent_pid(struct worker *w)
{
	struct agent *a = w->agent;

	return a != NULL && (a->state == A_READY || a->hello_wait)
	           ? (unsigned int)a->hello_pid
	           : 0;
}

/* The connections' channel of the agent, if it is ready and has one. */
struct channel *
agent_channel(struct worker *w)
{
	struct agent *a = w->agent;

	if (a == NULL || a->state != A_READY || !channel_up(a->ch))
		return NULL;
	return a->ch;
}

/* Why a command as user cannot go through the agent now, or NULL. */
const char *
agent_unusable(struct worker *w, const char *user)
{
	struct agent *a = w->agent;

	if (a == NULL)
		return "the agent is off";
	if (strcmp(user, w->exec_user) != 0)
		return "it runs as another user than the agent";
	if (a->state != A_READY)
		return a->why;
	/* A run it takes must be measured as one the engine's exec runs. */
	if (!acct_settled())
		return "the agent waits for the sandbox's cgroup to be found";
	if (a->ncmds >= AGENT_MAX_CMDS)
		return "the agent runs as many commands as it may";
	return NULL;
}

static struct agent_cmd *
agent_cmd_add(struct agent *a, const struct engine_exec_cbs *cbs, void *arg)
{
	struct agent_cmd *c;

	c = xcalloc(1, sizeof *c);
	c->a = a;
	c->cbs = cbs;
	c->arg = arg;
	c->credit = AGENT_INITIAL_CREDIT;
	do
		c->id = a->next_id++;
	while (c->id == 0 || agent_cmd_find(a, c->id) != NULL);
	TAILQ_INSERT_TAIL(&a->cmds, c, entry);
	a->ncmds++;
	return c;
}

/*
 * Run a command through the agent, with an engine exec's callbacks (its
 * done result carries the command's own usage).  NULL if the agent cannot
 * take it now (agent_unusable()): the caller uses the engine's exec.
 */
struct agent_cmd *
agent_cmd_new(struct worker *w, const struct engine_exec_spec *spec,
    const char *token, const struct engine_exec_cbs *cbs, void *arg)
{
	struct agent *a = w->agent;
	struct agent_run run;
	struct agent_cmd *c;
	unsigned char *msg;
	size_t len = 0;

	if (agent_unusable(w, spec->user) != NULL)
		return NULL;
	memset(&run, 0, sizeof run);
	run.argv = (char **)spec->argv;
	run.env = (char **)spec->env;
	run.workdir = (char *)spec->workdir;
	run.token = (char *)token;
	run.has_stdin = spec->stdin;
	c = agent_cmd_add(a, cbs, arg);
	if ((msg = agent_run_encode(c->id, &run, &len)) == NULL) {
		/* Too large, or a NUL byte: the engine's exec says which. */
		agent_cmd_free(c);
		return NULL;
	}
	agent_send(a, msg, len);
	return c;
}

void
agent_cmd_write(struct agent_cmd *c, const void *p, size_t len)
{
	const unsigned char *b = p;
	unsigned char *msg;
	size_t n, mlen = 0;

	while (len > 0) {
		n = len > AGENT_DATA_CHUNK ? AGENT_DATA_CHUNK : len;
		msg = agent_msg_new(AGENT_INPUT, 0, c->id, b, n, &mlen);
		agent_send(c->a, msg, mlen);
		c->held += (long long)n;
		c->unacked += (long long)n;
		b += n;
		len -= n;
	}
	agent_cmd_ack(c);
}

void
agent_cmd_close_write(struct agent_cmd *c)
{
	unsigned char *msg;
	size_t mlen = 0;

	msg = agent_msg_new(AGENT_INPUT, AGENT_F_EOF, c->id, NULL, 0, &mlen);
	agent_send(c->a, msg, mlen);
}

/* The caller took bytes of output: the agent may send that many more. */
void
agent_cmd_credit(struct agent_cmd *c, long bytes)
{
	if (bytes <= 0 || bytes > UINT32_MAX)
		return;
	c->credit += bytes;
	agent_send_u32(c->a, AGENT_CREDIT, c->id, (uint32_t)bytes);
}

/*
 * Pause or resume its output, as an engine's exec is (for a caller that
 * does not count credit): while not paused, it never runs out.
 */
void
agent_cmd_pause(struct agent_cmd *c, int on)
{
	c->window = 1;
	c->paused = on;
	agent_cmd_refill(c);
}

/* Kill the command's processes; its EXIT follows. */
void
agent_cmd_kill(struct agent_cmd *c)
{
	unsigned char *msg;
	size_t mlen = 0;

	msg = agent_msg_new(AGENT_KILL, 0, c->id, NULL, 0, &mlen);
	agent_send(c->a, msg, mlen);
}

/*
 * Send a signal to the command's group and token (a KILL with the
 * signal's number: the agent sends it once, without stopping them).
 */
void
agent_cmd_signal(struct agent_cmd *c, int sig)
{
	unsigned char *msg, num[4];
	size_t mlen = 0;

	num[0] = (unsigned char)((unsigned int)sig >> 24);
	num[1] = (unsigned char)((unsigned int)sig >> 16);
	num[2] = (unsigned char)((unsigned int)sig >> 8);
	num[3] = (unsigned char)sig;
	msg = agent_msg_new(AGENT_KILL, 0, c->id, num, sizeof num, &mlen);
	agent_send(c->a, msg, mlen);
}

/*
 * The agent answers a killed command at once, or it is no good: a command
 * that stays after its kill ends the agent.
 */
void
agent_cmd_stuck(struct agent_cmd *c)
{
	agent_bad(c->a, "command %u outlived its kill", (unsigned)c->id);
}

/* Forget the command: no callback any more; it is killed if it runs. */
void
agent_cmd_cancel(struct agent_cmd *c)
{
	if (c == NULL || c->dead)
		return;
	c->dead = 1;
	if (c->busy > 0)
		c->orphan = 1; /* agent_cmd_unbusy() */
	else
		agent_cmd_orphan(c);
}

struct agent_sweep {
	void (*done)(void *, const char *);
	void *arg;
};

static void
agent_swept(const struct engine_exec_result *res, void *arg)
{
	struct agent_sweep *s = arg;

	s->done(s->arg, res->error);
	free(s);
}

static const struct engine_exec_cbs agent_sweep_cbs = {
    .done = agent_swept,
};

/*
 * Kill what carries these tokens, through the agent: 0 and done(arg,
 * error) later, or -1 if the agent cannot (the caller uses the killer).
 */
int
agent_sweep(struct worker *w, const char *const *tokens, size_t n,
    void (*done)(void *, const char *), void *arg)
{
	struct agent *a = w->agent;
	struct agent_sweep *s;
	struct agent_cmd *c;
	unsigned char *msg;
	size_t len = 0;

	if (agent_unusable(w, w->exec_user) != NULL || n == 0)
		return -1;
	s = xcalloc(1, sizeof *s);
	s->done = done;
	s->arg = arg;
	c = agent_cmd_add(a, &agent_sweep_cbs, s);
	c->started = 1;
	if ((msg = agent_sweep_encode(c->id, tokens, n, &len)) == NULL) {
		agent_cmd_free(c);
		free(s);
		return -1;
	}
	agent_send(a, msg, len);
	return 0;
}
