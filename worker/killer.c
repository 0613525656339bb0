/*
 * The killer: Docker has no call that kills an exec, and closing its
 * stream leaves the process running.  Every command carries a token in its
 * environment (inherited by everything it starts) and runs in its own
 * session (Docker makes the exec process a session leader, so its pid is
 * its process group).  To kill commands, a second exec, run as the same
 * user, finds each process carrying one of their tokens in /proc and kills
 * it and its group.  It needs nothing of the host, so it works against a
 * remote engine too.
 *
 * When the sandbox has no process left to spare (a fork bomb met the pids
 * limit), the killer itself cannot start; then the limit is raised for the
 * moment of the kill and put back.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "log.h"
#include "worker.h"
#include "xmalloc.h"

#define KILLER_PIDS_SPARE 16
#define KILLER_MAX_TOKENS 64

/*
 * The killer: engine/scripts/kill-tokens.sh, embedded; its arguments are
 * the variable that marks a call's processes, then the calls' tokens.
 */
extern const char kill_tokens_sh[];

enum killer_state { K_RUN, K_LIMITS, K_RAISE, K_LOWER };

struct killer {
	struct worker *w;
	enum killer_state state;
	json_object *tokens;
	const char *user; /* the killed commands' (lives as the worker) */
	struct engine_exec *ex; /* the killer's run */
	struct engine_req *req; /* or the limit's inspection or update */
	long long pids; /* the limit to put back, once raised */
	const char *sig; /* signal mode: "TERM", "INT", "HUP"; NULL: kill */
	int raised;
	char *error;
	void (*done)(void *, const char *);
	void *arg;
	LIST_ENTRY(killer) entry;
};

static void killer_step(struct killer *, const struct engine_resp *);
static void killer_failed(struct killer *, const char *);

static void
killer_cb(const struct engine_resp *resp, void *arg)
{
	struct killer *k = arg;

	k->req = NULL;
	killer_step(k, resp);
}

static void
killer_free(struct killer *k)
{
	LIST_REMOVE(k, entry);
	engine_exec_cancel(k->ex);
	engine_req_cancel(k->req);
	json_object_put(k->tokens);
	free(k->error);
	free(k);
}

static void
killer_finish(struct killer *k, const char *err)
{
	if (k->done != NULL)
		k->done(k->arg, err);
	killer_free(k);
}

static void
killer_update(struct killer *k, long long pids)
{
	k->req = engine_container_update_pids(
	    k->w->engine, k->w->container, pids, killer_cb, k);
}

/* Its output is not read (the sandbox can write into it): discarded. */
static int
killer_ended(const char *err, void *arg)
{
	(void)arg;
	return err == NULL;
}

static void
killer_exec_done(const struct engine_exec_result *res, void *arg)
{
	struct killer *k = arg;

	k->ex = NULL;
	switch (res->phase) {
	case ENGINE_EXEC_CREATE:
		killer_finish(k, res->error);
		return;
	case ENGINE_EXEC_STREAM:
		killer_failed(k, res->error);
		return;
	case ENGINE_EXEC_INSPECT:
		/* (-1: no exit code recorded yet, taken as done, as ever.) */
		if (res->error == NULL && res->exit_code <= 0) {
			if (k->raised) {
				k->state = K_LOWER;
				killer_update(k, k->pids);
			} else
				killer_finish(k, NULL);
			return;
		}
		killer_failed(k, "the killer could not start");
		return;
	}
}

static const struct engine_exec_cbs killer_cbs = {
    .ended = killer_ended,
    .done = killer_exec_done,
};

static void
killer_create(struct killer *k)
{
	struct engine_exec_spec spec;
	const char *argv[KILLER_MAX_TOKENS + 7];
	size_t i, n = 0;

	k->state = K_RUN;
	argv[n++] = "/bin/sh";
	argv[n++] = "-c";
	argv[n++] = kill_tokens_sh;
	argv[n++] = "mcp-kill";
	argv[n++] = EXEC_TOKEN_ENV;
	if (k->sig != NULL)
		argv[n++] = k->sig;
	for (i = 0; i < json_object_array_length(k->tokens); i++)
		argv[n++] = json_object_get_string(
		    json_object_array_get_idx(k->tokens, i));
	argv[n] = NULL;
	memset(&spec, 0, sizeof spec);
	spec.argv = argv;
	spec.user = k->user;
	k->ex = engine_exec_new(
	    k->w->engine, k->w->container, &spec, &killer_cbs, k);
}

/* The killer could not run: raise the pids limit once and try again. */
static void
killer_failed(struct killer *k, const char *why)
{
	if (k->raised) {
		free(k->error);
		k->error = xstrdup(why);
		k->state = K_LOWER;
		killer_update(k, k->pids);
		return;
	}
	if (!engine_supports(k->w->engine, ENGINE_UPDATE)) {
		killer_finish(k, why);
		return;
	}
	log_info("%s: kill failed (%s); raising the pids limit for it",
	    __func__, why);
	k->raised = 1;
	k->state = K_LIMITS;
	k->req = engine_container_inspect(
	    k->w->engine, k->w->container, killer_cb, k);
}

static void
killer_step(struct killer *k, const struct engine_resp *resp)
{
	switch (k->state) {
	case K_RUN:
		return;
	case K_LIMITS:
		if (resp->container == NULL ||
		    resp->container->pids_limit <= 0) {
			killer_finish(k, "cannot read the pids limit");
			return;
		}
		k->pids = resp->container->pids_limit;
		k->state = K_RAISE;
		killer_update(k, k->pids + KILLER_PIDS_SPARE);
		return;
	case K_RAISE:
		if (resp->error != NULL) {
			killer_finish(k, resp->error);
			return;
		}
		killer_create(k);
		return;
	case K_LOWER:
		if (resp->error != NULL)
			log_warnx("%s: pids limit not restored: %s", __func__,
			    resp->error);
		killer_finish(k, k->error);
		return;
	}
}

/* Kill every process carrying one of the tokens; done(arg, error). */
struct killer *
killer_run(struct worker *w, const char *const *tokens, size_t n,
    void (*done)(void *, const char *), void *arg)
{
	return killer_run_as(w, w->exec_user, tokens, n, done, arg);
}

/* The same, for commands that ran as user (a static string). */
struct killer *
killer_run_as(struct worker *w, const char *user, const char *const *tokens,
    size_t n, void (*done)(void *, const char *), void *arg)
{
	struct killer *k;
	size_t i;

	k = xcalloc(1, sizeof *k);
	k->w = w;
	k->user = user;
	k->done = done;
	k->arg = arg;
	k->tokens = json_object_new_array();
	for (i = 0; i < n && i < KILLER_MAX_TOKENS; i++)
		json_object_array_add(
		    k->tokens, json_object_new_string(tokens[i]));
	LIST_INSERT_HEAD(&w->killers, k, entry);
	killer_create(k);
	return k;
}

/*
 * Send a signal other than SIGKILL, once, to every process carrying the
 * token and to its group (kill-tokens.sh's signal mode); nobody waits
 * for it.  NULL for a signal it does not send.
 */
struct killer *
killer_signal(struct worker *w, const char *user, const char *token, int sig)
{
	struct killer *k;
	const char *name;

	switch (sig) {
	case SIGHUP:
		name = "-HUP";
		break;
	case SIGINT:
		name = "-INT";
		break;
	case SIGTERM:
		name = "-TERM";
		break;
	default:
		return NULL;
	}
	k = xcalloc(1, sizeof *k);
	k->w = w;
	k->user = user;
	k->sig = name;
	k->tokens = json_object_new_array();
	json_object_array_add(k->tokens, json_object_new_string(token));
	LIST_INSERT_HEAD(&w->killers, k, entry);
	killer_create(k);
	return k;
}

/* Forget a killer in flight: done is not called. */
void
killer_cancel(struct killer *k)
{
	killer_free(k);
}

/* The worker is going away. */
void
killer_abort_all(struct worker *w)
{
	struct killer *k;

	/* Each killer_free() unlinks the head. */
	while ((k = LIST_FIRST(&w->killers)) != NULL)
		killer_free(k); // NOLINT(clang-analyzer-unix.Malloc)
}

/* A valid token: hex, as the supervisor makes them. */
int
killer_token_valid(const char *t)
{
	size_t n = strlen(t);

	return n > 0 && n <= 64 && strspn(t, "0123456789abcdef") == n;
}
