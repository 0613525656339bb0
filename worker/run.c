/*
 * A command's run in the sandbox, whichever runs it: the sandbox's agent
 * when it can take it (agent.c), else the engine's exec.  Both take the
 * same spec and call the same engine_exec_cbs; exec.c (one command) and
 * interp.c (a code session's interpreter) run everything through here.
 *
 * Output flow: the engine's exec is paused and resumed; the agent's is
 * credit.  wrun_credit() passes a caller's exact credit on to the agent
 * (exec.c's, one to one with the supervisor's); wrun_pause() is for a
 * caller that only pauses (interp.c), and keeps the agent's credit full
 * while not paused.
 */
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "worker.h"

/*
 * Start it; r->note says why the agent did not take it (or is "").  The
 * agent runs agent_argv instead of spec's, when given (the agent cleans
 * up a command's session itself, which the engine's exec needs a shell
 * for).  The callbacks are never called from within this call.
 */
void
wrun_start(struct worker *w, struct wrun *r,
    const struct engine_exec_spec *spec, const char *const *agent_argv,
    const char *token, const struct engine_exec_cbs *cbs, void *arg)
{
	struct engine_exec_spec aspec = *spec;
	const char *why;

	memset(r, 0, sizeof *r);
	if (agent_argv != NULL)
		aspec.argv = agent_argv;
	why = agent_unusable(w, spec->user);
	if (why == NULL &&
	    (r->ac = agent_cmd_new(w, &aspec, token, cbs, arg)) != NULL) {
		r->agent = 1;
		return;
	}
	snprintf(r->note, sizeof r->note, "%s",
	    why != NULL ? why : "the command does not fit the agent's message");
	r->ex = engine_exec_new(w->engine, w->container, spec, cbs, arg);
}

/* Whether it still runs (its done callback has not come). */
int
wrun_active(const struct wrun *r)
{
	return r->ex != NULL || r->ac != NULL;
}

/* From its done callback: it is over. */
void
wrun_ended(struct wrun *r)
{
	r->ex = NULL;
	r->ac = NULL;
}

void
wrun_write(struct wrun *r, const void *p, size_t len)
{
	if (r->ac != NULL)
		agent_cmd_write(r->ac, p, len);
	else if (r->ex != NULL)
		engine_exec_write(r->ex, p, len);
}

void
wrun_close_write(struct wrun *r)
{
	if (r->ac != NULL)
		agent_cmd_close_write(r->ac);
	else if (r->ex != NULL)
		engine_exec_close_write(r->ex);
}

/* Pause or resume its output. */
void
wrun_pause(struct wrun *r, int on)
{
	if (r->ac != NULL)
		agent_cmd_pause(r->ac, on);
	else if (r->ex != NULL)
		engine_exec_pause(r->ex, on);
}

/*
 * The caller took bytes of output: on the agent, that much more credit;
 * the engine's exec is resumed by the caller (wrun_pause()).
 */
void
wrun_credit(struct wrun *r, long bytes)
{
	if (r->ac != NULL)
		agent_cmd_credit(r->ac, bytes);
}

/*
 * Kill it: the agent kills its processes at once (1: done, its EXIT
 * follows); the engine's exec needs the killer (0: the caller runs it).
 */
int
wrun_kill(struct wrun *r)
{
	if (r->ac == NULL)
		return 0;
	agent_cmd_kill(r->ac);
	return 1;
}

/*
 * Send it a signal other than SIGKILL: the agent signals its group and
 * its token's processes at once (1); the engine's exec needs the
 * killer in its signal mode (0: the caller runs it).
 */
int
wrun_signal(struct wrun *r, int sig)
{
	if (r->ac == NULL)
		return 0;
	agent_cmd_signal(r->ac, sig);
	return 1;
}

/* It was killed and still runs: end it now. */
void
wrun_close(struct wrun *r)
{
	if (r->ac != NULL)
		agent_cmd_stuck(r->ac);
	else if (r->ex != NULL)
		engine_exec_close(r->ex);
}

/* Forget it: no callback any more (the agent kills what still runs). */
void
wrun_cancel(struct wrun *r)
{
	engine_exec_cancel(r->ex);
	agent_cmd_cancel(r->ac);
	wrun_ended(r);
}
