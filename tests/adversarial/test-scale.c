/*
 * Adversarial: many sandboxes at once, and processes of the server killed
 * under it (a worker, the supervisor).
 */
#include <sys/types.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "adv.h"

#define N_SANDBOXES 50

Test(scale, fifty_sandboxes_no_crosstalk, .timeout = 900)
{
	struct h_server *s;
	json_object *a, *m, *r;
	long ids[N_SANDBOXES];
	char *cids[N_SANDBOXES], tok[N_SANDBOXES][40], cmd[256], want[128];
	long long t0, ms;
	int i, ok = 0;

	/* One client with 50 at once: past the per-session defaults
	 * (16 sandboxes, 32 calls in flight), as an operator may allow. */
	s = adv_start("--max-sandboxes", "60", "--max-sandboxes-per-session",
	    "60", "--max-calls-per-session", "60", "--max-concurrent-starts",
	    "8", NULL);
	/* 50 sandbox_initialize requests at once. */
	t0 = h_now_ms();
	for (i = 0; i < N_SANDBOXES; i++) {
		a = json_object_new_object();
		snprintf(cmd, sizeof cmd, "adv-%d-%d", (int)getpid(), i);
		json_object_object_add(a, "name", json_object_new_string(cmd));
		ids[i] = h_send_tool(s, "sandbox_initialize", a);
	}
	for (i = 0; i < N_SANDBOXES; i++) {
		m = h_wait_id(s, ids[i], 600000);
		cr_assert(m != NULL, "no answer to sandbox_initialize #%d", i);
		r = h_tool_result(m);
		cids[i] = NULL;
		if (h_is_error(r))
			fprintf(stderr, "create #%d failed: %.300s\n", i,
			    h_text(r));
		else {
			cids[i] =
			    strdup(h_str(r, "structuredContent.container_id"));
			ok++;
		}
		json_object_put(r);
	}
	ms = h_now_ms() - t0;
	fprintf(stderr, "50 sandboxes: %d made in %lld ms\n", ok, ms);
	cr_expect_eq(ok, N_SANDBOXES, "only %d of 50 sandboxes were made", ok);
	cr_expect_eq(h_docker_count(s->label), ok);

	/* One exec in each at once: write a token, read it back. */
	t0 = h_now_ms();
	for (i = 0; i < N_SANDBOXES; i++) {
		ids[i] = -1;
		if (cids[i] == NULL)
			continue;
		snprintf(tok[i], sizeof tok[i], "tok-%d-%08x", i,
		    (unsigned)random());
		snprintf(cmd, sizeof cmd,
		    "echo %s > /app/token; sleep 1; cat /app/token; "
		    "ls /app | wc -l",
		    tok[i]);
		a = json_object_new_object();
		json_object_object_add(
		    a, "container_id", json_object_new_string(cids[i]));
		json_object_object_add(
		    a, "commands", json_object_new_string(cmd));
		ids[i] = h_send_tool(s, "sandbox_exec", a);
	}
	for (i = 0; i < N_SANDBOXES; i++) {
		if (ids[i] == -1)
			continue;
		m = h_wait_id(s, ids[i], 300000);
		cr_assert(m != NULL, "no answer to the exec in sandbox #%d", i);
		r = h_tool_result(m);
		snprintf(want, sizeof want, "%.40s\n1\n", tok[i]);
		cr_expect(!h_is_error(r), "exec #%d: %.300s", i, h_text(r));
		cr_expect_str_eq(
		    adv_out(r), want, "sandbox #%d read %s", i, adv_out(r));
		json_object_put(r);
	}
	fprintf(stderr, "50 execs at once: %lld ms\n", h_now_ms() - t0);
	adv_ping(s, 5000);

	/* Everything stopped, at once. */
	t0 = h_now_ms();
	for (i = 0; i < N_SANDBOXES; i++) {
		ids[i] = -1;
		if (cids[i] == NULL)
			continue;
		a = json_object_new_object();
		json_object_object_add(
		    a, "container_id", json_object_new_string(cids[i]));
		ids[i] = h_send_tool(s, "sandbox_stop", a);
	}
	for (i = 0; i < N_SANDBOXES; i++) {
		if (ids[i] == -1)
			continue;
		m = h_wait_id(s, ids[i], 300000);
		cr_assert(m != NULL, "no answer to sandbox_stop #%d", i);
		r = h_tool_result(m);
		cr_expect(
		    !h_is_error(r) && h_bool(r, "structuredContent.removed"),
		    "stop #%d: %.300s", i, h_text(r));
		json_object_put(r);
		free(cids[i]);
	}
	fprintf(stderr, "50 stops at once: %lld ms\n", h_now_ms() - t0);
	cr_expect_eq(h_docker_count(s->label), 0);
	adv_alive(s, NULL);
	adv_finish(s);
}

/* get_sandbox_status's worker_pid of a sandbox. */
static pid_t
worker_pid(struct h_server *s, const char *cid)
{
	json_object *r, *a;
	pid_t pid;

	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	r = h_call_tool_obj(s, "get_sandbox_status", a, 30000);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	pid = (pid_t)h_int(r, "structuredContent.sandboxes.0.worker_pid");
	json_object_put(r);
	return pid;
}

static long
send_exec(struct h_server *s, const char *cid, const char *cmd, int timeout)
{
	json_object *a;

	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(a, "commands", json_object_new_string(cmd));
	json_object_object_add(
	    a, "timeout_seconds", json_object_new_int(timeout));
	return h_send_tool(s, "sandbox_exec", a);
}

Test(scale, worker_sigkill_mid_exec, .timeout = 300)
{
	struct h_server *s;
	json_object *m, *r;
	char *a, *b;
	pid_t wa, wb, wa2;
	long ida, idb;
	long long t0, ms;
	int n;

	s = adv_start(NULL);
	a = h_create(s, NULL);
	b = h_create(s, NULL);
	wa = worker_pid(s, a);
	wb = worker_pid(s, b);
	cr_assert(wa > 0 && wb > 0 && wa != wb);
	ida = send_exec(s, a, "echo started; sleep 25; echo finished", 60);
	idb = send_exec(s, b, "sleep 6; echo b-finished", 60);
	sleep(2);
	t0 = h_now_ms();
	cr_assert_eq(kill(wa, SIGKILL), 0);

	/* The call in flight on A: an error result saying so, at once. */
	m = h_wait_id(s, ida, 20000);
	ms = h_now_ms() - t0;
	cr_assert(m != NULL, "no answer to the exec whose worker was killed");
	r = h_tool_result(m);
	fprintf(stderr, "worker killed: the call answered in %lld ms: %.300s\n",
	    ms, h_text(r));
	cr_expect(h_is_error(r), "not an error: %.300s", h_text(r));
	cr_expect(h_contains(h_text(r), "worker crashed"),
	    "the error does not say the worker crashed: %.300s", h_text(r));
	cr_expect_lt(ms, 10000, "answered %lld ms after the kill", ms);
	json_object_put(r);

	/* B's exec carries on. */
	m = h_wait_id(s, idb, 30000);
	cr_assert(m != NULL, "no answer to the exec in the other sandbox");
	r = h_tool_result(m);
	cr_expect(!h_is_error(r), "the other sandbox's exec failed: %.300s",
	    h_text(r));
	cr_expect_str_eq(adv_out(r), "b-finished\n");
	json_object_put(r);
	cr_expect_eq(worker_pid(s, b), wb, "B's worker changed");
	cr_expect(h_pid_alive(wb));

	/* The next call in A works, through a new worker, and the processes
	 * of the interrupted call are gone. */
	adv_alive(s, a);
	wa2 = worker_pid(s, a);
	cr_expect(wa2 > 0 && wa2 != wa, "A's worker is %d (was %d)", (int)wa2,
	    (int)wa);
	n = adv_procs(s, a, "sleep 25");
	cr_expect_eq(n, 0, "the interrupted call's sleep 25 still runs");
	r = h_call_tool(s, "get_sandbox_status", NULL);
	fprintf(stderr, "stats: %.600s\n",
	    json_object_to_json_string(h_get(r, "structuredContent.stats")));
	json_object_put(r);
	adv_alive(s, b);
	h_stop(s, a);
	h_stop(s, b);
	free(a);
	free(b);
	adv_finish(s);
}

/* Processes named mcp-sandboxd run with --worker whose parent is pid. */
static int
workers_of(pid_t pid)
{
	char cmd[256], *out;
	int n = 0;
	char *p;

	snprintf(cmd, sizeof cmd,
	    "pgrep -P %d -f -- '[-]-worker' 2>/dev/null || true", (int)pid);
	out = h_run(cmd, NULL);
	for (p = out; *p != '\0'; p++)
		if (*p == '\n')
			n++;
	free(out);
	return n;
}

Test(scale, supervisor_sigkill_mid_exec, .timeout = 300)
{
	struct h_server *a, *b;
	pid_t w[16];
	char *c1, *c2, cmd[256], *out, label[96];
	long long t0, ms;
	int nw, left, st;

	a = adv_start(NULL);
	c1 = h_create(a, NULL);
	c2 = h_create(a, NULL);
	send_exec(a, c1, "sleep 120", 200);
	send_exec(a, c2, "sleep 121", 200);
	sleep(2);
	nw = adv_workers(a, w, 16);
	cr_assert_geq(nw, 2, "%d workers", nw);
	cr_assert_eq(workers_of(a->pid), nw);
	snprintf(label, sizeof label, "%s", a->label);
	kill(a->pid, SIGKILL);
	cr_assert_eq(h_wait_exit(a, 10000), 128 + SIGKILL);
	t0 = h_now_ms();
	left = adv_wait_pids_gone(w, nw, 5000);
	ms = h_now_ms() - t0;
	cr_expect_eq(left, 0, "%d worker(s) outlived the supervisor", left);
	fprintf(stderr, "supervisor killed: workers gone in %lld ms\n", ms);
	snprintf(cmd, sizeof cmd,
	    "pgrep -f -- '[-]-worker %.12s|[-]-worker %.12s' || true", c1, c2);
	out = h_run(cmd, &st);
	cr_expect_str_eq(out, "", "workers of the dead supervisor: %s", out);
	free(out);
	adv_forget(a);

	/* Its containers are still there (a killed supervisor cleans
	 * nothing) until a new instance reaps them at startup. */
	if (!h_container_exists(c1))
		cr_log_warn("%.12s was reaped before the new instance started "
		            "(another server's reaper)",
		    c1);
	t0 = h_now_ms();
	b = adv_start(NULL);
	cr_expect(h_wait_container_gone(c1, 15000),
	    "the new instance did not remove %.12s", c1);
	cr_expect(h_wait_container_gone(c2, 15000),
	    "the new instance did not remove %.12s", c2);
	ms = h_now_ms() - t0;
	fprintf(stderr, "orphans removed %lld ms after the new start\n", ms);
	cr_expect_eq(h_docker_count(label), 0);
	adv_alive(b, NULL);
	/* adv_finish also checks the dead instance's spool directory (same
	 * TMPDIR) is gone. */
	adv_finish(b);
	free(c1);
	free(c2);
}
