/*
 * The killer: Docker has no call that kills an exec, and closing its
 * stream leaves the process running.  Every command carries a token in its
 * environment (inherited by everything it starts) and runs in its own
 * session (Docker makes the exec process a session leader, so its pid is
 * its process group).  To kill commands, a second exec, run as the same
 * user, finds each process carrying one of their tokens in /proc and kills
 * it and its group.  It needs nothing of the host, so it works against a
 * remote engine too.
 */
#include <stdlib.h>
#include <string.h>

#include "docker.h"
#include "log.h"
#include "worker.h"
#include "xmalloc.h"

/* Tokens are hex, so they may stand unquoted. */
static const char killer_script[] =
    "pat=; for t; do pat=\"$pat -e " EXEC_TOKEN_ENV "=$t\"; done;"
    "for p in /proc/[0-9]*; do"
    " tr '\\0' '\\n' <$p/environ 2>/dev/null | grep -qx $pat &&"
    " { kill -9 -${p#/proc/}; kill -9 ${p#/proc/}; } 2>/dev/null;"
    " done; exit 0";

struct killer {
	struct worker *w;
	struct docker_req *req;
	void (*done)(void *, const char *);
	void *arg;
};

static void
killer_ran(const struct docker_resp *resp, void *arg)
{
	struct killer *k = arg;

	k->req = NULL;
	k->done(k->arg, resp->error);
	free(k);
}

static void
killer_created(const struct docker_resp *resp, void *arg)
{
	struct killer *k = arg;
	json_object *id, *start;
	char *path;

	k->req = NULL;
	if (resp->error != NULL || resp->json == NULL ||
	    !json_object_object_get_ex(resp->json, "Id", &id)) {
		k->done(k->arg, resp->error ? resp->error : "no exec id");
		free(k);
		return;
	}
	xasprintf(&path, "/exec/%s/start", json_object_get_string(id));
	start = json_object_new_object();
	json_object_object_add(start, "Detach", json_object_new_boolean(0));
	json_object_object_add(start, "Tty", json_object_new_boolean(0));
	k->req = docker_call(k->w->docker, "POST", path, start, killer_ran, k);
	json_object_put(start);
	free(path);
}

/* Kill every process carrying one of the tokens; done(arg, error). */
struct killer *
killer_run(struct worker *w, const char *const *tokens, size_t n,
    void (*done)(void *, const char *), void *arg)
{
	struct killer *k;
	json_object *body, *cmd;
	char *path, *esc;
	size_t i;

	k = xcalloc(1, sizeof *k);
	k->w = w;
	k->done = done;
	k->arg = arg;
	body = json_object_new_object();
	cmd = json_object_new_array();
	json_object_array_add(cmd, json_object_new_string("/bin/sh"));
	json_object_array_add(cmd, json_object_new_string("-c"));
	json_object_array_add(cmd, json_object_new_string(killer_script));
	json_object_array_add(cmd, json_object_new_string("mcp-kill"));
	for (i = 0; i < n; i++)
		json_object_array_add(cmd, json_object_new_string(tokens[i]));
	json_object_object_add(body, "Cmd", cmd);
	json_object_object_add(body, "User", json_object_new_string(EXEC_USER));
	json_object_object_add(
	    body, "AttachStdout", json_object_new_boolean(1));
	json_object_object_add(
	    body, "AttachStderr", json_object_new_boolean(1));
	esc = docker_escape(w->container);
	xasprintf(&path, "/containers/%s/exec", esc);
	k->req = docker_call(w->docker, "POST", path, body, killer_created, k);
	free(path);
	free(esc);
	json_object_put(body);
	return k;
}

/* Forget a killer in flight: done is not called. */
void
killer_cancel(struct killer *k)
{
	if (k->req != NULL)
		docker_req_cancel(k->req);
	free(k);
}

/* A valid token: hex, as the supervisor makes them. */
int
killer_token_valid(const char *t)
{
	size_t n = strlen(t);

	return n > 0 && n <= 64 && strspn(t, "0123456789abcdef") == n;
}
