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
#include <stdlib.h>
#include <string.h>

#include "docker.h"
#include "log.h"
#include "worker.h"
#include "xmalloc.h"

#define KILLER_PIDS_SPARE 16
/* Of the killer's own output (it prints nothing; the sandbox may). */
#define KILLER_MAX_OUTPUT (64 * 1024)

/*
 * The killer: engine/scripts/kill-tokens.sh, embedded; its arguments are
 * the variable that marks a call's processes, then the calls' tokens.
 */
extern const char kill_tokens_sh[];

enum killer_state { K_CREATE, K_START, K_INSPECT, K_LIMITS, K_RAISE, K_LOWER };

struct killer {
	struct worker *w;
	enum killer_state state;
	json_object *tokens;
	const char *user; /* the killed commands' (lives as the worker) */
	struct docker_req *req;
	long long pids; /* the limit to put back, once raised */
	int raised;
	char *exec_id;
	char *error;
	void (*done)(void *, const char *);
	void *arg;
	LIST_ENTRY(killer) entry;
};

static void killer_step(struct killer *, const struct docker_resp *);

static void
killer_cb(const struct docker_resp *resp, void *arg)
{
	struct killer *k = arg;

	k->req = NULL;
	killer_step(k, resp);
}

static void
killer_free(struct killer *k)
{
	LIST_REMOVE(k, entry);
	if (k->req != NULL)
		docker_req_cancel(k->req);
	json_object_put(k->tokens);
	free(k->exec_id);
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
killer_create(struct killer *k)
{
	json_object *body, *cmd;
	char *path, *esc;
	size_t i;

	k->state = K_CREATE;
	body = json_object_new_object();
	cmd = json_object_new_array();
	json_object_array_add(cmd, json_object_new_string("/bin/sh"));
	json_object_array_add(cmd, json_object_new_string("-c"));
	json_object_array_add(cmd, json_object_new_string(kill_tokens_sh));
	json_object_array_add(cmd, json_object_new_string("mcp-kill"));
	json_object_array_add(cmd, json_object_new_string(EXEC_TOKEN_ENV));
	for (i = 0; i < json_object_array_length(k->tokens); i++)
		json_object_array_add(cmd,
		    json_object_get(json_object_array_get_idx(k->tokens, i)));
	json_object_object_add(body, "Cmd", cmd);
	json_object_object_add(body, "User", json_object_new_string(k->user));
	json_object_object_add(
	    body, "AttachStdout", json_object_new_boolean(1));
	json_object_object_add(
	    body, "AttachStderr", json_object_new_boolean(1));
	esc = docker_escape(k->w->container);
	xasprintf(&path, "/containers/%s/exec", esc);
	k->req = docker_call(k->w->docker, "POST", path, body, killer_cb, k);
	free(path);
	free(esc);
	json_object_put(body);
}

static void
killer_update(struct killer *k, long long pids)
{
	json_object *body;
	char *path, *esc;

	body = json_object_new_object();
	json_object_object_add(body, "PidsLimit", json_object_new_int64(pids));
	esc = docker_escape(k->w->container);
	xasprintf(&path, "/containers/%s/update", esc);
	k->req = docker_call(k->w->docker, "POST", path, body, killer_cb, k);
	free(path);
	free(esc);
	json_object_put(body);
}

/* The killer could not run: raise the pids limit once and try again. */
static void
killer_failed(struct killer *k, const char *why)
{
	char *path, *esc;

	if (k->raised) {
		free(k->error);
		k->error = xstrdup(why);
		k->state = K_LOWER;
		killer_update(k, k->pids);
		return;
	}
	log_info("%s: kill failed (%s); raising the pids limit for it",
	    __func__, why);
	k->raised = 1;
	k->state = K_LIMITS;
	esc = docker_escape(k->w->container);
	xasprintf(&path, "/containers/%s/json", esc);
	k->req = docker_call(k->w->docker, "GET", path, NULL, killer_cb, k);
	free(path);
	free(esc);
}

static void
killer_step(struct killer *k, const struct docker_resp *resp)
{
	json_object *v, *hc, *start;
	char *path;

	switch (k->state) {
	case K_CREATE:
		if (resp->error != NULL || resp->json == NULL ||
		    !json_object_object_get_ex(resp->json, "Id", &v)) {
			killer_finish(
			    k, resp->error ? resp->error : "no exec id");
			return;
		}
		free(k->exec_id);
		k->exec_id = xstrdup(json_object_get_string(v));
		k->state = K_START;
		xasprintf(&path, "/exec/%s/start", k->exec_id);
		start = json_object_new_object();
		json_object_object_add(
		    start, "Detach", json_object_new_boolean(0));
		json_object_object_add(
		    start, "Tty", json_object_new_boolean(0));
		/* Its output is not read, and the sandbox can write into
		 * it: only a little is kept, the rest is dropped. */
		k->req = docker_call_capped(k->w->docker, "POST", path, start,
		    KILLER_MAX_OUTPUT, killer_cb, k);
		json_object_put(start);
		free(path);
		return;
	case K_START:
		if (resp->error != NULL) {
			killer_failed(k, resp->error);
			return;
		}
		k->state = K_INSPECT;
		xasprintf(&path, "/exec/%s/json", k->exec_id);
		k->req =
		    docker_call(k->w->docker, "GET", path, NULL, killer_cb, k);
		free(path);
		return;
	case K_INSPECT:
		if (resp->json != NULL &&
		    json_object_object_get_ex(resp->json, "ExitCode", &v) &&
		    json_object_get_int(v) == 0) {
			if (k->raised) {
				k->state = K_LOWER;
				killer_update(k, k->pids);
			} else
				killer_finish(k, NULL);
			return;
		}
		killer_failed(k, "the killer could not start");
		return;
	case K_LIMITS:
		if (resp->json == NULL ||
		    !json_object_object_get_ex(resp->json, "HostConfig", &hc) ||
		    !json_object_object_get_ex(hc, "PidsLimit", &v) ||
		    json_object_get_int64(v) <= 0) {
			killer_finish(k, "cannot read the pids limit");
			return;
		}
		k->pids = json_object_get_int64(v);
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
	for (i = 0; i < n; i++)
		json_object_array_add(
		    k->tokens, json_object_new_string(tokens[i]));
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
