/*
 * Adversarial: the Docker engine restarted under a running server.  This
 * executable runs alone (meson: is_parallel false, after the others):
 * every container of the host dies with the engine.
 *
 * The engine is stopped with SIGTERM and started again the way
 * scripts/dockerd-start does (dockerd --bridge=none --iptables=false); the
 * .fini starts it again whatever happened.
 */
#include <sys/types.h>

#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "adv.h"

#define OUTAGE_BOUND_MS 15000

static void
dockerd_start(void)
{
	const char *src = getenv("MCP_SANDBOXD_SRCDIR");
	char cmd[512], *out;
	int st;

	/* A clean environment: dockerd keeps TMPDIR for its runtime files. */
	snprintf(cmd, sizeof cmd, "env -u TMPDIR %s/scripts/dockerd-start 2>&1",
	    src != NULL ? src : ".");
	out = h_run(cmd, &st);
	fprintf(stderr, "%s", out);
	free(out);
	cr_assert_eq(st, 0, "scripts/dockerd-start failed");
}

static void
engine_fini(void)
{
	dockerd_start();
}

static int
docker_answers(void)
{
	char *out;
	int st;

	out = h_run("timeout 10 docker info >/dev/null 2>&1", &st);
	free(out);
	return st == 0;
}

static pid_t
dockerd_pid(void)
{
	char *out;
	pid_t pid;

	out = h_run("pgrep -x dockerd", NULL);
	pid = (pid_t)atoi(out);
	cr_assert(pid > 0 && strchr(out, '\n') == out + strcspn(out, "\n"),
	    "one dockerd expected: %s", out);
	free(out);
	return pid;
}

static int
says_engine(const char *text)
{
	return strcasestr(text, "docker") != NULL ||
	       strcasestr(text, "engine") != NULL;
}

/* A tool call during the outage: answered within the bound, an error
 * that names the engine (or, when gone_ok, says the sandbox is gone: the
 * server saw it die as the engine stopped). */
static void
outage_call(
    struct h_server *s, const char *tool, json_object *args, int gone_ok)
{
	json_object *m, *r;
	long long t0 = h_now_ms(), ms;
	long id;

	id = h_send_tool(s, tool, args);
	m = h_wait_id(s, id, OUTAGE_BOUND_MS + 30000);
	ms = h_now_ms() - t0;
	cr_assert(m != NULL, "%s: no answer during the outage", tool);
	r = h_tool_result(m);
	fprintf(stderr, "outage: %s answered in %lld ms: %.200s\n", tool, ms,
	    h_text(r));
	cr_expect_lt(
	    ms, OUTAGE_BOUND_MS, "%s took %lld ms during the outage", tool, ms);
	cr_expect(h_is_error(r), "%s worked without an engine: %.300s", tool,
	    h_text(r));
	cr_expect(says_engine(h_text(r)) ||
	              (gone_ok && h_contains(h_text(r), "no sandbox")),
	    "%s: the error does not name the engine%s: %.300s", tool,
	    gone_ok ? " nor says the sandbox is gone" : "", h_text(r));
	json_object_put(r);
}

static json_object *
cid_args(const char *cid, const char *k, const char *v)
{
	json_object *a = json_object_new_object();

	json_object_object_add(a, "container_id", json_object_new_string(cid));
	if (k != NULL)
		json_object_object_add(a, k, json_object_new_string(v));
	return a;
}

static void
engine_cycle(int sig)
{
	struct h_server *s;
	json_object *m, *r, *a, *sbs;
	const char *state, *text;
	char *cid, *cid2 = NULL, *out;
	pid_t dpid;
	long long t0, ms, deadline;
	long inflight;
	size_t i;
	int tries, gone;

	cr_assert(docker_answers(), "no engine to begin with");
	out = h_run("docker ps -q | wc -l", NULL);
	if (atoi(out) > 0)
		cr_log_warn("%d running container(s) of others will die with "
		            "the engine",
		    atoi(out));
	free(out);
	s = adv_start(NULL);
	cid = h_create(s, NULL);
	free(h_exec_ok(s, cid, "echo before"));
	/* A call in flight when the engine goes. */
	inflight = h_send_tool(s, "sandbox_exec",
	    cid_args(cid, "commands", "echo started; sleep 100"));
	usleep(1500000);

	dpid = dockerd_pid();
	out = h_run("tr '\\0' ' ' < /proc/$(pgrep -x dockerd)/cmdline", NULL);
	fprintf(stderr, "stopping %s(pid %d)\n", out, (int)dpid);
	if (!h_contains(out, "--bridge=none") ||
	    !h_contains(out, "--iptables=false"))
		cr_log_warn("dockerd runs as '%s'; it comes back with "
		            "scripts/dockerd-start's flags",
		    out);
	free(out);
	t0 = h_now_ms();
	cr_assert_eq(kill(dpid, sig), 0);

	/* The call in flight ends, with an error, within the bound. */
	m = h_wait_id(s, inflight, OUTAGE_BOUND_MS + 60000);
	ms = h_now_ms() - t0;
	cr_assert(m != NULL, "the exec in flight was never answered");
	r = h_tool_result(m);
	fprintf(stderr, "in-flight exec answered %lld ms after %s: %.300s\n",
	    ms, strsignal(sig), h_text(r));
	cr_expect(
	    h_is_error(r), "the exec in flight succeeded: %.300s", h_text(r));
	cr_expect_lt(ms, OUTAGE_BOUND_MS + 15000,
	    "the exec in flight took %lld ms after the engine stopped", ms);
	json_object_put(r);

	deadline = h_now_ms() + 90000;
	while (h_pid_alive(dpid) && h_now_ms() < deadline)
		usleep(200000);
	cr_assert(!h_pid_alive(dpid), "dockerd did not stop");
	fprintf(stderr, "dockerd stopped after %lld ms\n", h_now_ms() - t0);

	/* During the outage: the server answers, calls fail clearly. */
	ms = adv_ping(s, 5000);
	cr_expect_lt(ms, 2000, "ping took %lld ms during the outage", ms);
	outage_call(s, "sandbox_exec", cid_args(cid, "commands", "echo hi"), 1);
	outage_call(s, "sandbox_initialize", json_object_new_object(), 0);
	outage_call(
	    s, "create_run_close", h_parse("{\"code\":\"print(1)\"}"), 0);
	outage_call(s, "execute_code", h_parse("{\"code\":\"print(1)\"}"), 0);
	a = cid_args(cid, "file_name", "f");
	json_object_object_add(a, "file_contents", json_object_new_string("x"));
	outage_call(s, "write_file", a, 1);
	outage_call(s, "list_files", cid_args(cid, NULL, NULL), 1);
	outage_call(
	    s, "read_file", cid_args(cid, "file_path", "/etc/hostname"), 1);
	t0 = h_now_ms();
	r = h_call_tool_t(s, "get_sandbox_status", "{}", OUTAGE_BOUND_MS);
	fprintf(stderr, "outage: get_sandbox_status in %lld ms: %.200s\n",
	    h_now_ms() - t0, h_text(r));
	json_object_put(r);
	adv_ping(s, 5000);

	/* The engine comes back. */
	t0 = h_now_ms();
	dockerd_start();
	cr_assert(docker_answers());
	fprintf(stderr, "dockerd back in %lld ms\n", h_now_ms() - t0);

	/* New sandboxes work (a few tries while the engine settles). */
	for (tries = 1; tries <= 6; tries++) {
		r = h_call_tool_t(s, "sandbox_initialize", "{}", 120000);
		if (!h_is_error(r)) {
			cid2 =
			    strdup(h_str(r, "structuredContent.container_id"));
			json_object_put(r);
			break;
		}
		fprintf(stderr, "create after the restart, try %d: %.300s\n",
		    tries, h_text(r));
		json_object_put(r);
		sleep(5);
	}
	cr_assert(cid2 != NULL, "no sandbox could be made after the restart");
	cr_expect_eq(tries, 1, "the first create after the restart failed");
	adv_alive(s, cid2);

	/* The old sandbox died with the engine: reported gone. */
	r = adv_exec(s, cid, "echo hi", NULL, 10, &ms);
	text = h_text(r);
	fprintf(stderr, "old sandbox after the restart (%lld ms): %.300s\n", ms,
	    text);
	cr_expect(
	    h_is_error(r), "an exec in the dead sandbox worked: %.300s", text);
	cr_expect(h_contains(text, "no sandbox") || strcasestr(text, "gone") ||
	              strcasestr(text, "exited") || strcasestr(text, "died") ||
	              strcasestr(text, "not running") ||
	              strcasestr(text, "no longer"),
	    "the error does not say the sandbox is gone: %.300s", text);
	json_object_put(r);
	r = h_call_tool(s, "get_sandbox_status", NULL);
	sbs = h_get(r, "structuredContent.sandboxes");
	gone = 1;
	for (i = 0; sbs != NULL && i < json_object_array_length(sbs); i++) {
		json_object *sb = json_object_array_get_idx(sbs, i);
		const char *id = h_str(sb, "container_id");

		state = h_str(sb, "state");
		if (id != NULL && strncmp(id, cid, 12) == 0 && state != NULL &&
		    strcmp(state, "running") == 0)
			gone = 0;
	}
	cr_expect(gone, "get_sandbox_status shows the dead sandbox running: %s",
	    json_object_to_json_string(sbs));
	json_object_put(r);

	/* Stopping it: removed, or unknown already. */
	r = h_call_tool_obj(
	    s, "sandbox_stop", cid_args(cid, NULL, NULL), 60000);
	fprintf(stderr, "stop of the dead sandbox: %.200s\n", h_text(r));
	json_object_put(r);
	h_stop(s, cid2);
	free(cid2);
	adv_ping(s, 5000);
	/* adv_finish: no container of this server left, the old one too. */
	adv_finish(s);
	cr_expect(!h_container_exists(cid),
	    "the dead sandbox's container %.12s "
	    "was never removed",
	    cid);
	free(cid);
}

/* SIGTERM: dockerd stops its containers, then exits. */
Test(engine, dockerd_sigterm_restart, .timeout = 600, .fini = engine_fini)
{
	engine_cycle(SIGTERM);
}

/* SIGKILL: the containers outlive dockerd (their shims stay) until the
 * next dockerd starts; meanwhile the sandbox is still registered and the
 * engine unreachable. */
Test(engine, dockerd_sigkill_restart, .timeout = 600, .fini = engine_fini)
{
	engine_cycle(SIGKILL);
}
