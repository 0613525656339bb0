/*
 * Adversarial: hostile code inside a sandbox.  Each case asserts the safe
 * outcome, then that the server and the sandbox still answer, and (in
 * adv_finish) that nothing of it is left.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "adv.h"

/* End of a case: the sandbox still works, a fresh one too, then stop. */
static void
done(struct h_server *s, char *cid)
{
	adv_alive(s, cid);
	adv_alive(s, NULL);
	h_stop(s, cid);
	cr_expect(h_wait_container_gone(cid, 10000),
	    "container %.12s left after sandbox_stop", cid);
	free(cid);
	adv_finish(s);
}

/* Zombies in the sandbox, waited for a little (the init reaps). */
static int
zombies(struct h_server *s, const char *cid)
{
	long long deadline = h_now_ms() + 3000;
	char *out;
	int n;

	for (;;) {
		out = h_exec_ok(s, cid, "ps -eo stat= | grep -c '^Z' || true");
		n = atoi(out);
		free(out);
		if (n == 0 || h_now_ms() >= deadline)
			return n;
		usleep(200000);
	}
}

/* Processes of the sandbox whose command line holds what, waited for up
 * to timeout ms to go away. */
static int
procs_gone(struct h_server *s, const char *cid, const char *what, int ms)
{
	long long deadline = h_now_ms() + ms;
	int n;

	while ((n = adv_procs(s, cid, what)) != 0 && h_now_ms() < deadline)
		usleep(500000);
	return n;
}

Test(sandbox, fork_bomb, .timeout = 240)
{
	struct h_server *s;
	json_object *r;
	long long ms;
	char *cid;
	int n = 0, round;

	s = adv_start(NULL);
	cid = h_create(s, "{\"pids\":64}");
	/* The classic: the first shell returns at once, the bomb goes on in
	 * the background of the call's session.  The kill at the end of the
	 * call races the bomb: three rounds. */
	for (round = 1; round <= 3 && n == 0; round++) {
		r = adv_exec(s, cid, "bash -c ':(){ :|:& };:'", NULL, 10, &ms);
		fprintf(stderr,
		    "fork bomb (&), round %d: answered in %lld ms, "
		    "isError %d\n",
		    round, ms, h_is_error(r));
		cr_expect_lt(ms, 25000, "the fork bomb call took %lld ms", ms);
		json_object_put(r);
		/* Contained: the sandbox answers, and the bomb is killed with
		 * the end of its command (README: what a command leaves
		 * running in its session is killed when it ends). */
		adv_alive(s, cid);
		n = procs_gone(s, cid, "bash", 5000);
		cr_expect_eq(n, 0,
		    "round %d: fork bomb processes still run in the sandbox "
		    "5 s after their call ended (%d; -1: ps cannot fork, the "
		    "pids limit is still exhausted)",
		    round, n);
	}
	if (n != 0) {
		/* Left as it is, the bomb holds every pid: stop the sandbox
		 * and go on in a fresh one. */
		h_stop(s, cid);
		free(cid);
		cid = h_create(s, "{\"pids\":64}");
	}

	/* In the foreground: it runs into the timeout, which kills it. */
	r = adv_exec(s, cid, "bash -c 'f(){ f | f; }; f'", NULL, 10, &ms);
	fprintf(stderr, "fork bomb (foreground): answered in %lld ms: %.200s\n",
	    ms, h_text(r));
	cr_expect(h_bool(h_first(r), "timed_out"), "not timed out: %.300s",
	    h_text(r));
	cr_expect_lt(ms, 25000, "the fork bomb call took %lld ms", ms);
	json_object_put(r);
	adv_alive(s, cid);
	n = procs_gone(s, cid, "bash", 5000);
	cr_expect_eq(n, 0,
	    "fork bomb processes still run 5 s after their timeout (%d; "
	    "-1: ps cannot fork)",
	    n);
	done(s, cid);
}

Test(sandbox, memory_bomb_in_exec, .timeout = 180)
{
	struct h_server *s;
	json_object *r;
	long long ms;
	char *cid;

	s = adv_start(NULL);
	cid = h_create(s, "{\"memory_mb\":64}");
	r = adv_exec(s, cid,
	    "python3 -c 'x = bytearray(256 * 1024 * 1024); print(len(x))'",
	    NULL, 60, &ms);
	cr_expect(adv_failed(r), "256 MB in 64 MB worked: %.500s", h_text(r));
	cr_expect(h_bool(h_first(r), "oom_killed"), "oom_killed false: %.500s",
	    h_text(r));
	cr_expect_neq(h_int(h_first(r), "exit_code"), 0);
	cr_expect(!h_bool(h_first(r), "timed_out"));
	fprintf(stderr, "memory bomb: %lld ms\n", ms);
	json_object_put(r);
	done(s, cid);
}

/* A daemon (out of the call's session) that grows until the OOM killer
 * takes it: the next call still works, the container still runs. */
Test(sandbox, memory_hog_background, .timeout = 180)
{
	struct h_server *s;
	json_object *r, *in;
	long long ms;
	char *cid;

	s = adv_start(NULL);
	cid = h_create(s, "{\"memory_mb\":96}");
	r = adv_exec(s, cid,
	    "setsid python3 -c 'import time\nb = []\nwhile True:\n"
	    "    b.append(b\"x\" * (8 << 20)); time.sleep(0.05)\n' "
	    ">/dev/null 2>&1 </dev/null & echo started",
	    NULL, 30, &ms);
	cr_expect(!h_is_error(r), "starting the hog failed: %.500s", h_text(r));
	cr_expect_lt(ms, 10000, "starting a daemon took %lld ms", ms);
	json_object_put(r);
	sleep(6); /* 96 MB at 160 MB/s */
	in = h_docker_inspect(cid);
	cr_expect(h_bool(in, "State.Running"),
	    "the container died of a hog in an exec: %s",
	    json_object_to_json_string(h_get(in, "State")));
	json_object_put(in);
	/* Only the lines that matter: a result shows a long output's head
	 * and tail, and the hog must not hide in its middle. */
	r = adv_exec(s, cid,
	    "echo alive; ps -eo args | grep '[p]ython3' || :", NULL, 30, &ms);
	cr_expect(
	    !h_is_error(r), "the call after the hog failed: %.500s", h_text(r));
	cr_expect(h_contains(adv_out(r), "alive"));
	cr_expect(!h_contains(adv_out(r), "python3"),
	    "the hog still runs after 6 s over its limit: %s", adv_out(r));
	json_object_put(r);
	r = h_call_tool(s, "get_sandbox_status", NULL);
	cr_expect(!h_is_error(r));
	cr_expect_str_eq(
	    h_str(r, "structuredContent.sandboxes.0.state"), "running");
	json_object_put(r);
	done(s, cid);
}

Test(sandbox, disk_fill_workdir, .timeout = 180)
{
	struct h_server *s;
	json_object *r;
	char *cid, *out;

	s = adv_start("--workdir-mb", "32", NULL);
	cid = h_create(s, NULL);
	r = adv_exec(
	    s, cid, "head -c 64000000 /dev/zero > /app/fill", NULL, 60, NULL);
	cr_expect(adv_failed(r));
	cr_expect_neq(h_int(h_first(r), "exit_code"), 0);
	cr_expect(h_contains(adv_err(r), "No space left on device"),
	    "no ENOSPC: %.500s", h_text(r));
	json_object_put(r);
	/* Full: calls still work, and the space comes back. */
	adv_alive(s, cid);
	out = h_exec_ok(s, cid, "df -k /app | tail -1");
	fprintf(stderr, "workdir full: %s", out);
	free(out);
	out =
	    h_exec_ok(s, cid, "rm /app/fill && echo ok > /app/f && cat /app/f");
	cr_expect_str_eq(out, "ok\n");
	free(out);
	done(s, cid);
}

Test(sandbox, disk_fill_tmp, .timeout = 180)
{
	struct h_server *s;
	json_object *r;
	long long ms;
	char *cid, *out;

	s = adv_start("--tmp-mb", "16", NULL);
	cid = h_create(s, NULL);
	r = adv_exec(
	    s, cid, "head -c 40000000 /dev/zero > /tmp/fill", NULL, 60, NULL);
	cr_expect(adv_failed(r));
	cr_expect(h_contains(adv_err(r), "No space left on device"),
	    "no ENOSPC: %.500s", h_text(r));
	json_object_put(r);
	/* /tmp full (where the pid files of execs go): calls still work and
	 * a timeout still kills. */
	adv_alive(s, cid);
	r = adv_exec(s, cid, "sleep 555", NULL, 2, &ms);
	cr_expect(h_bool(h_first(r), "timed_out"), "not timed out: %.500s",
	    h_text(r));
	cr_expect_lt(ms, 10000, "the timeout took %lld ms", ms);
	json_object_put(r);
	cr_expect_eq(adv_procs(s, cid, "sleep 555"), 0,
	    "sleep 555 survived its timeout while /tmp was full");
	out =
	    h_exec_ok(s, cid, "rm /tmp/fill && echo ok > /tmp/f && cat /tmp/f");
	cr_expect_str_eq(out, "ok\n");
	free(out);
	done(s, cid);
}

Test(sandbox, file_size_limit, .timeout = 180)
{
	struct h_server *s;
	json_object *r;
	char *cid, *out;

	s = adv_start("--fsize-mb", "5", NULL);
	cid = h_create(s, NULL);
	r = adv_exec(
	    s, cid, "head -c 10000000 /dev/zero > /app/big", NULL, 60, NULL);
	cr_expect(adv_failed(r));
	cr_expect_neq(h_int(h_first(r), "exit_code"), 0);
	cr_expect(h_contains(adv_err(r), "File size limit exceeded"),
	    "no \"File size limit exceeded\": %.500s", h_text(r));
	json_object_put(r);
	out = h_exec_ok(s, cid, "stat -c %s /app/big");
	cr_expect_eq(atoll(out), 5LL << 20, "/app/big is %s bytes", out);
	free(out);
	done(s, cid);
}

Test(sandbox, output_flood, .timeout = 180)
{
	struct h_server *s;
	json_object *r, *f;
	long long ms;
	char *cid;

	s = adv_start("--output-cap", "1000000", NULL);
	cid = h_create(s, NULL);
	r = adv_exec(s, cid, "yes", NULL, 60, &ms);
	f = h_first(r);
	cr_expect(adv_failed(r), "a capped flood is a success");
	cr_expect(h_bool(f, "truncated"), "not truncated: %.300s", h_text(r));
	cr_expect(!h_bool(f, "timed_out"), "timed out instead of capped");
	cr_expect_leq(h_int(f, "stdout_bytes"), 1000000 + 65536,
	    "%lld bytes taken past a cap of 1000000", h_int(f, "stdout_bytes"));
	cr_expect_lt(ms, 15000, "the capped call took %lld ms", ms);
	fprintf(stderr, "output flood: capped in %lld ms\n", ms);
	json_object_put(r);
	cr_expect_eq(adv_procs(s, cid, "yes"), 0, "yes survived the cap");
	done(s, cid);
}

Test(sandbox, cpu_loop_and_sleep_timeout, .timeout = 180)
{
	struct h_server *s;
	json_object *r;
	long long ms;
	char *cid;

	s = adv_start(NULL);
	cid = h_create(s, NULL);
	r = adv_exec(s, cid, "busy=1; while :; do :; done", NULL, 3, &ms);
	cr_expect(h_bool(h_first(r), "timed_out"), "not timed out: %.300s",
	    h_text(r));
	cr_expect(adv_failed(r));
	cr_expect(
	    ms >= 2900 && ms < 10000, "the busy loop's call took %lld ms", ms);
	fprintf(stderr, "busy loop: %lld ms for a 3 s timeout\n", ms);
	json_object_put(r);
	cr_expect_eq(adv_procs(s, cid, "busy=1"), 0, "the busy loop survived");
	r = adv_exec(s, cid, "python3 -c 'while True: pass'", NULL, 3, &ms);
	cr_expect(h_bool(h_first(r), "timed_out"));
	cr_expect_lt(ms, 10000, "took %lld ms", ms);
	json_object_put(r);
	cr_expect_eq(adv_procs(s, cid, "while True"), 0,
	    "the Python busy loop survived");
	r = adv_exec(s, cid, "sleep 777", NULL, 3, &ms);
	cr_expect(h_bool(h_first(r), "timed_out"));
	cr_expect(ms >= 2900 && ms < 10000, "sleep's call took %lld ms", ms);
	json_object_put(r);
	cr_expect_eq(adv_procs(s, cid, "sleep 777"), 0, "sleep 777 survived");
	done(s, cid);
}

Test(sandbox, background_child_holds_stdout, .timeout = 180)
{
	struct h_server *s;
	json_object *r;
	long long ms;
	char *cid;

	s = adv_start(NULL);
	cid = h_create(s, NULL);
	r = adv_exec(s, cid, "sleep 31 & echo started", NULL, 60, &ms);
	cr_expect(!h_is_error(r), "%.300s", h_text(r));
	cr_expect_str_eq(adv_out(r), "started\n");
	cr_expect_lt(ms, 10000, "'sleep 31 &' held the call %lld ms", ms);
	fprintf(stderr, "sleep 31 &: %lld ms\n", ms);
	json_object_put(r);
	cr_expect_eq(adv_procs(s, cid, "sleep 31"), 0,
	    "the background child outlived its command");

	r = adv_exec(s, cid, "(sleep 32 >&1 &); echo started", NULL, 60, &ms);
	cr_expect(!h_is_error(r), "%.300s", h_text(r));
	cr_expect_str_eq(adv_out(r), "started\n");
	cr_expect_lt(ms, 10000, "'(sleep 32 >&1 &)' held the call %lld ms", ms);
	fprintf(stderr, "(sleep 32 >&1 &): %lld ms\n", ms);
	json_object_put(r);
	cr_expect_eq(adv_procs(s, cid, "sleep 32"), 0,
	    "the double-forked child outlived its command");
	done(s, cid);
}

/* README: "daemons that left the session die with a timeout, a
 * cancellation or the sandbox". */
Test(sandbox, setsid_daemon, .timeout = 180)
{
	struct h_server *s;
	json_object *r;
	long long ms;
	char *cid;
	int n;

	s = adv_start(NULL);
	cid = h_create(s, NULL);
	r = adv_exec(s, cid, "setsid sleep 300 & echo started", NULL, 60, &ms);
	cr_expect(!h_is_error(r), "%.300s", h_text(r));
	cr_expect_lt(
	    ms, 10000, "a daemon holding stdout held the call %lld ms", ms);
	fprintf(stderr, "setsid sleep 300 &: %lld ms\n", ms);
	json_object_put(r);
	adv_alive(s, cid);
	n = adv_procs(s, cid, "sleep 300");
	fprintf(stderr, "setsid daemon after its call: %s\n",
	    n > 0 ? "still running (documented)" : "killed");

	/* A timeout kills the daemons its call made. */
	r = adv_exec(s, cid, "setsid sleep 301 & sleep 100", NULL, 2, &ms);
	cr_expect(h_bool(h_first(r), "timed_out"), "%.300s", h_text(r));
	cr_expect_lt(ms, 10000, "took %lld ms", ms);
	json_object_put(r);
	cr_expect_eq(adv_procs(s, cid, "sleep 301"), 0,
	    "a setsid child survived the timeout of its call");
	cr_expect_eq(adv_procs(s, cid, "sleep 100"), 0);
	/* At sandbox_stop nothing is left: done() checks the container. */
	done(s, cid);
}

Test(sandbox, zombies_reaped, .timeout = 180)
{
	struct h_server *s;
	json_object *r;
	char *cid;
	int z;

	s = adv_start(NULL);
	cid = h_create(s, NULL);
	/* A parent that never waits, then exits. */
	r = adv_exec(s, cid,
	    "python3 -c 'import os, time\nfor i in range(20):\n"
	    "    if os.fork() == 0: os._exit(0)\ntime.sleep(1)\n'",
	    NULL, 30, NULL);
	cr_expect(!h_is_error(r), "%.300s", h_text(r));
	json_object_put(r);
	z = zombies(s, cid);
	cr_expect_eq(z, 0, "%d zombies after a parent that never waits", z);
	/* The shell's children under an exec'd process that never waits. */
	r = adv_exec(s, cid,
	    "for i in $(seq 20); do sh -c 'exit 0' & done; exec sleep 1", NULL,
	    30, NULL);
	cr_expect(!h_is_error(r), "%.300s", h_text(r));
	json_object_put(r);
	z = zombies(s, cid);
	cr_expect_eq(z, 0, "%d zombies after exec sleep", z);
	/* A daemon that forks and never waits, killed by a timeout. */
	r = adv_exec(s, cid,
	    "setsid python3 -c 'import os, time\nfor i in range(20):\n"
	    "    if os.fork() == 0: os._exit(0)\ntime.sleep(100)\n' & sleep 100",
	    NULL, 2, NULL);
	json_object_put(r);
	z = zombies(s, cid);
	cr_expect_eq(z, 0, "%d zombies after a timeout", z);
	done(s, cid);
}

Test(sandbox, kill_all, .timeout = 180)
{
	struct h_server *s;
	json_object *r, *in;
	long long ms;
	char *cid, keep[64];

	s = adv_start(NULL);
	cid = h_create(s, NULL);
	free(h_exec_ok(s, cid, "setsid sleep 400 >/dev/null 2>&1 &"));
	r = adv_exec(s, cid, "kill -9 -1; echo survived", NULL, 30, &ms);
	fprintf(stderr, "kill -9 -1: %lld ms: %.300s\n", ms, h_text(r));
	cr_expect_lt(ms, 15000, "kill -9 -1 took %lld ms", ms);
	json_object_put(r);
	in = h_docker_inspect(cid);
	cr_expect(
	    h_bool(in, "State.Running"), "the container died of kill -9 -1");
	/* The keep-alive: "sleep <the TTL and a grace>", from the container's
	 * own command line. */
	snprintf(keep, sizeof keep, "%s %s", h_str(in, "Path"),
	    h_str(in, "Args.0") != NULL ? h_str(in, "Args.0") : "");
	json_object_put(in);
	cr_expect_eq(adv_procs(s, cid, "sleep 400"), 0,
	    "kill -9 -1 missed a process of the sandbox user");
	/* The keep-alive survived: not the sandbox user. */
	cr_expect_geq(
	    adv_procs(s, cid, keep), 1, "the keep-alive (%s) was killed", keep);
	done(s, cid);
}

Test(sandbox, huge_argv_and_env, .timeout = 180)
{
	struct h_server *s;
	json_object *r, *args, *env;
	char *cid, *cmd, *big;
	size_t n;

	s = adv_start(NULL);
	cid = h_create(s, NULL);
	/* A command of 60 KB. */
	n = 60000;
	cmd = malloc(n + 64);
	cr_assert(cmd != NULL);
	strcpy(cmd, "echo ");
	memset(cmd + 5, 'a', n);
	strcpy(cmd + 5 + n, " | wc -c");
	r = adv_exec(s, cid, cmd, NULL, 30, NULL);
	cr_expect(!h_is_error(r), "a 60 KB command failed: %.300s", h_text(r));
	cr_expect_str_eq(adv_out(r), "60001\n");
	json_object_put(r);
	free(cmd);

	/* Past the kernel's 128 KiB per argument: works or a clear error. */
	n = 200000;
	cmd = malloc(n + 64);
	cr_assert(cmd != NULL);
	strcpy(cmd, "echo ");
	memset(cmd + 5, 'a', n);
	strcpy(cmd + 5 + n, " | wc -c");
	r = adv_exec(s, cid, cmd, NULL, 30, NULL);
	fprintf(stderr, "200 KB command: isError %d: %.300s\n", h_is_error(r),
	    h_text(r));
	if (!h_is_error(r))
		cr_expect_str_eq(adv_out(r), "200001\n");
	else
		cr_expect(strlen(h_text(r)) > 0);
	json_object_put(r);
	free(cmd);

	/* An environment value of 100 KB. */
	n = 100 * 1024;
	big = malloc(n + 1);
	cr_assert(big != NULL);
	memset(big, 'b', n);
	big[n] = '\0';
	args = json_object_new_object();
	env = json_object_new_object();
	json_object_object_add(env, "BIG", json_object_new_string(big));
	json_object_object_add(args, "env", env);
	json_object_object_add(args, "commands",
	    json_object_new_string("printf %s \"$BIG\" | wc -c"));
	r = h_exec_obj(s, cid, args, 60000);
	fprintf(stderr, "100 KB env value: isError %d: %.300s\n", h_is_error(r),
	    h_text(r));
	if (!h_is_error(r))
		cr_expect_str_eq(adv_out(r), "102400\n");
	else
		cr_expect(h_contains(h_text(r), "env"),
		    "unclear error for a big env value: %.300s", h_text(r));
	json_object_put(r);
	free(big);
	done(s, cid);
}

Test(sandbox, open_files, .timeout = 180)
{
	struct h_server *s;
	json_object *r;
	char *cid;

	s = adv_start("--nofile", "256", NULL);
	cid = h_create(s, NULL);
	r = adv_exec(s, cid,
	    "python3 -c 'fs = [open(\"/app/f%d\" % i, \"w\") "
	    "for i in range(1000)]; print(len(fs))'",
	    NULL, 30, NULL);
	cr_expect(adv_failed(r), "1000 files opened under nofile 256");
	cr_expect(h_contains(adv_err(r), "Too many open files"),
	    "no EMFILE: %.500s", h_text(r));
	json_object_put(r);
	free(h_exec_ok(s, cid, "rm -f /app/f*"));
	done(s, cid);
}

Test(sandbox, network_refused, .timeout = 180)
{
	static const char *const targets[] = {"127.0.0.1\", 8080",
	    "127.0.0.1\", 22", "1.1.1.1\", 53", "8.8.8.8\", 443",
	    "169.254.169.254\", 80", "10.0.0.1\", 80", "172.17.0.1\", 2375"};
	struct h_server *s;
	json_object *r;
	char *cid, cmd[512];
	long long ms;
	size_t i;

	s = adv_start(NULL);
	cid = h_create(s, NULL);
	for (i = 0; i < sizeof targets / sizeof targets[0]; i++) {
		snprintf(cmd, sizeof cmd,
		    "python3 -c 'import socket; socket.create_connection((\"%s), "
		    "3); print(\"CONNECTED\")'",
		    targets[i]);
		r = adv_exec(s, cid, cmd, NULL, 20, &ms);
		cr_expect(adv_failed(r) && !h_contains(adv_out(r), "CONNECTED"),
		    "connected to %s: %.300s", targets[i], h_text(r));
		cr_expect_lt(
		    ms, 10000, "connect to %s took %lld ms", targets[i], ms);
		json_object_put(r);
	}
	r = adv_exec(s, cid,
	    "python3 -c 'import socket; s = socket.socket(socket.AF_INET, "
	    "socket.SOCK_DGRAM); s.sendto(b\"x\", (\"8.8.8.8\", 53))'",
	    NULL, 20, NULL);
	cr_expect(adv_failed(r), "UDP to 8.8.8.8 was sent: %.300s", h_text(r));
	json_object_put(r);
	r = adv_exec(s, cid,
	    "ls -l /var/run/docker.sock /run/docker.sock 2>&1; "
	    "ls /sys/class/net",
	    NULL, 20, NULL);
	cr_expect(
	    !h_contains(adv_out(r), "srw"), "a Docker socket: %s", adv_out(r));
	cr_expect(
	    h_contains(adv_out(r), "lo\n") && !h_contains(adv_out(r), "eth"),
	    "interfaces: %s", adv_out(r));
	json_object_put(r);
	done(s, cid);
}

Test(sandbox, privilege_escalation_refused, .timeout = 180)
{
	static const char *const cmds[] = {
	    "python3 -c 'import os; os.setuid(0)'",
	    "python3 -c 'import os; os.setgid(0)'",
	    "unshare -r true",
	    "unshare -U true",
	    "unshare -m true",
	    "if command -v mount; then mount -t tmpfs x /mnt; else "
	    "python3 -c 'import ctypes, os, sys\n"
	    "l = ctypes.CDLL(None, use_errno=True)\n"
	    "r = l.mount(b\"x\", b\"/mnt\", b\"tmpfs\", 0, None)\n"
	    "print(r, os.strerror(ctypes.get_errno()))\n"
	    "sys.exit(0 if r == 0 else 1)'; fi",
	    "python3 -c 'import ctypes, struct, sys\n"
	    "libc = ctypes.CDLL(None, use_errno=True)\n"
	    "attr = ctypes.create_string_buffer(struct.pack(\"IIII\", 2, 4, 4, "
	    "1), 128)\n"
	    "r = libc.syscall(321, 0, attr, 128)\n"
	    "e = ctypes.get_errno()\n"
	    "print(r, e)\n"
	    "sys.exit(0 if r >= 0 else 1)'",
	    "chroot /app true",
	    "python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); "
	    "import sys; sys.exit(0 if l.syscall(165, b\"x\", b\"/mnt\", "
	    "b\"tmpfs\", 0, 0) == 0 else 1)'",
	};
	struct h_server *s;
	json_object *r;
	char *cid;
	size_t i;

	s = adv_start(NULL);
	cid = h_create(s, NULL);
	for (i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		r = adv_exec(s, cid, cmds[i], NULL, 20, NULL);
		/* It ran and was refused: a result whose command failed. */
		cr_expect(!h_bool(r, "structuredContent.success") &&
		              h_int(h_first(r), "exit_code") != 0,
		    "this worked: %s\n%.300s", cmds[i], h_text(r));
		fprintf(stderr, "refused: %.40s: %.120s\n", cmds[i],
		    adv_err(r)[0] != '\0' ? adv_err(r) : adv_out(r));
		json_object_put(r);
	}
	done(s, cid);
}

Test(sandbox, readonly_root_and_noexec_tmp, .timeout = 180)
{
	static const char *const cmds[] = {
	    "touch /usr/bin/x",
	    "echo x >> /etc/passwd",
	    "mkdir /x",
	    "touch /var/tmp/x",
	    "cp /bin/true /tmp/t && chmod +x /tmp/t && /tmp/t",
	    "cp /bin/true /tmp/t && /lib64/ld-linux-x86-64.so.2 /tmp/t",
	    ("printf '#!/bin/sh\\necho ran\\n' > /tmp/s && chmod +x /tmp/s && "
	     "/tmp/s"),
	};
	struct h_server *s;
	json_object *r;
	char *cid;
	size_t i;

	s = adv_start(NULL);
	cid = h_create(s, NULL);
	for (i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		r = adv_exec(s, cid, cmds[i], NULL, 20, NULL);
		cr_expect(adv_failed(r) &&
		              h_int(h_first(r), "exit_code") != 0 &&
		              !h_contains(adv_out(r), "ran"),
		    "this worked: %s\n%.300s", cmds[i], h_text(r));
		json_object_put(r);
	}
	done(s, cid);
}
