/*
 * Integration: the agent in each sandbox (worker/agent.c, agent/agent.c).
 * Commands go through it and say so; its command's own usage comes back;
 * with --agent off, or while it is lost, commands take the engine's exec
 * and the result says why.  The hostile cases mount another program in
 * its place (--agent-file): one that writes garbage, one that floods past
 * its credit, one that acknowledges input it never got, one that never
 * answers, one of another version, one killed by sandbox code.  The
 * server must survive each, and every command must still run.
 */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "agentwire.h"
#include "harness.h"

#define STR(x) #x
#define XSTR(x) STR(x)
#define AGENT_VERSION_STR XSTR(AGENT_VERSION)

/* What every hostile agent (Python, in the test image) starts with. */
static const char agent_prelude[] =
    "#!/usr/bin/python3\n"
    "import os, socket, struct, sys, time\n"
    "def send(t, i, p=b'', f=0):\n"
    "    os.write(1, struct.pack('>HHII', t, f, len(p), i) + p)\n"
    "def hello(v=" AGENT_VERSION_STR ", f=0):\n"
    "    send(64, 0, struct.pack('>IIII', v, os.getpid(), os.getuid(),"
    " os.getgid()), f)\n"
    "def channel(token):\n"
    "    c = socket.socket(socket.AF_UNIX)\n"
    "    c.connect('/.mcp-sandboxd-channel/sock')\n"
    "    c.sendall(struct.pack('>HHII', 73, 0, len(token), 0) + token)\n"
    "    return c\n"
    "def passed(c, i, fd):\n"
    "    socket.send_fds(c, [struct.pack('>HHII', 74, 0, 0, i)], [fd])\n"
    "def exact(n):\n"
    "    b = b''\n"
    "    while len(b) < n:\n"
    "        c = os.read(0, n - len(b))\n"
    "        if not c:\n"
    "            sys.exit(0)\n"
    "        b += c\n"
    "    return b\n"
    "def msg():\n"
    "    t, f, n, i = struct.unpack('>HHII', exact(12))\n"
    "    return t, f, i, exact(n)\n";

static char agent_path[64];

/* The stand-in's file, gone even when a test asserted out of its body. */
static void
agent_file_gone(void)
{
	if (agent_path[0] != '\0')
		unlink(agent_path);
	agent_path[0] = '\0';
}

TestSuite(agent, .fini = agent_file_gone);

/* A server whose sandboxes mount this program as their agent. */
static struct h_server *
start_with_agent(const char *body)
{
	FILE *f;
	int fd;

	snprintf(agent_path, sizeof agent_path, "/tmp/mcp-agent-test-XXXXXX");
	fd = mkstemp(agent_path);
	cr_assert(fd != -1);
	f = fdopen(fd, "w");
	cr_assert(f != NULL);
	fputs(agent_prelude, f);
	fputs(body, f);
	fclose(f);
	chmod(agent_path, 0755);
	return h_start("--agent", "on", "--agent-file", agent_path, NULL);
}

static void
finish(struct h_server *s, char *cid)
{
	h_stop(s, cid);
	free(cid);
	h_finish(s);
	agent_file_gone();
}

/* An exec that must succeed; its first result (the caller puts r). */
static json_object *
exec_first(
    struct h_server *s, const char *cid, const char *cmd, json_object **rp)
{
	json_object *r;

	r = h_exec(s, cid, cmd, 30);
	cr_assert(!h_is_error(r), "%s: %s", cmd, h_text(r));
	*rp = r;
	return h_first(r);
}

/* Execs until one goes through the agent (it restarts); 1 if one did. */
static int
agent_comes_back(struct h_server *s, const char *cid, int ms)
{
	long long end = h_now_ms() + ms;
	json_object *r, *f;
	int ok = 0;

	while (!ok && h_now_ms() < end) {
		f = exec_first(s, cid, "echo back", &r);
		cr_expect_str_eq(h_str(f, "stdout"), "back\n");
		ok = h_bool(f, "agent");
		json_object_put(r);
		if (!ok)
			usleep(200 * 1000);
	}
	return ok;
}

/* The engine's exec took the command, and the result says why. */
static void
expect_fallback(json_object *f, const char *why)
{
	cr_expect(!h_bool(f, "agent"), "ran through the agent");
	cr_expect(h_str(f, "agent_note") != NULL, "no agent_note");
	if (why != NULL && h_str(f, "agent_note") != NULL)
		cr_expect(h_contains(h_str(f, "agent_note"), why),
		    "agent_note: %s", h_str(f, "agent_note"));
}

Test(agent, commands_go_through_it, .timeout = 120)
{
	struct h_server *s;
	json_object *r, *f;
	char *cid;

	s = h_start("--agent", "on", NULL);
	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	cr_assert(agent_comes_back(s, cid, 10000), "the agent never took one");

	f = exec_first(s, cid, "echo out; echo err >&2; exit 0", &r);
	cr_expect(h_bool(f, "agent"));
	cr_expect(h_get(f, "agent_note") == NULL);
	cr_expect_str_eq(h_str(f, "stdout"), "out\n");
	cr_expect_str_eq(h_str(f, "stderr"), "err\n");
	cr_expect(h_get(f, "command_cpu_ms") != NULL);
	cr_expect_gt(h_int(f, "command_max_rss_bytes"), 0);
	json_object_put(r);

	/* The command's own usage, not the sandbox's. */
	f = exec_first(s, cid,
	    "python3 -c 'x = bytearray(96 << 20); sum(range(3000000))'", &r);
	cr_expect(h_bool(f, "agent"));
	cr_expect_gt(h_int(f, "command_max_rss_bytes"), 96LL << 20,
	    "max rss %lld", h_int(f, "command_max_rss_bytes"));
	cr_expect_gt(h_num(f, "command_cpu_ms"), 20.0, "cpu %f",
	    h_num(f, "command_cpu_ms"));
	json_object_put(r);

	/* A signal, as the engine's exec reports it. */
	r = h_exec(s, cid, "kill -TERM $$", 30);
	f = h_first(r);
	cr_expect(h_bool(f, "agent"));
	cr_expect_eq(h_int(f, "exit_code"), 143, "%s", h_text(r));
	cr_expect_eq(h_int(f, "signal"), 15);
	json_object_put(r);
	finish(s, cid);
}

/* "UID:GID PID" of the sandbox's agent, or NULL if it has none. */
static char *
agent_of(struct h_server *s, const char *cid)
{
	char *out;

	out = h_exec_ok(s, cid,
	    "ps -eo uid=,gid=,pid=,args= | "
	    "awk '$4 == \"/.mcp-sandboxd-agent\" { print $1 \":\" $2, $3 }'");
	if (*out == '\0') {
		free(out);
		return NULL;
	}
	out[strcspn(out, "\n")] = '\0';
	return out;
}

/*
 * snapshot.sh then restore.sh through the engine's exec, as user, with
 * MCP_SANDBOXD_AGENT_PID=envpid, beside a writer in the background: the
 * snapshot stops the writer, not the agent (pid); the restore kills the
 * writer, not the agent.
 */
static void
scripts_beside(struct h_server *s, const char *cid, const char *user,
    const char *pid, const char *envpid)
{
	const char *tests = getenv("MCP_SANDBOXD_TESTS");
	json_object *a, *r;
	char *out, *now, cmd[1024];
	int status;

	cr_assert_not_null(tests);
	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(a, "commands",
	    json_object_new_string("while :; do echo line >> /tmp/grow; done"));
	json_object_object_add(a, "background", json_object_new_boolean(1));
	r = h_call_tool_obj(s, "sandbox_exec", a, 30000);
	cr_assert(!h_is_error(r), "background: %s", h_text(r));
	json_object_put(r);
	free(h_exec_ok(s, cid,
	    "rm -f /tmp/grow; while [ ! -s /tmp/grow ]; do sleep 0.05; done"));

	snprintf(cmd, sizeof cmd,
	    "docker exec -u %s -e PATH=/app/bin:/usr/bin:/bin "
	    "-e MCP_SANDBOXD_AGENT_PID=%s %s sh -c "
	    "\"$(cat '%s/../engine/scripts/snapshot.sh')\" sh /tmp "
	    ">/dev/null 2>&1",
	    user, envpid, cid, tests);
	free(h_run(cmd, &status));
	cr_expect_eq(status, 0, "snapshot.sh (%s): exit %d", envpid, status);
	out = h_exec_ok(s, cid,
	    "awk '$3 == \"/.mcp-sandboxd-agent\" { print \"agent\", $1 } "
	    "/echo line >>/ { print \"writer\", $1 }' /tmp/states");
	cr_expect(h_contains(out, "writer T"), "the writer ran on (%s): %s",
	    envpid, out);
	cr_expect(!h_contains(out, "agent T") && h_contains(out, "agent "),
	    "the agent is stopped (%s): %s", envpid, out);
	free(out);

	snprintf(cmd, sizeof cmd,
	    "docker exec -i -u %s -e PATH=/app/bin:/usr/bin:/bin "
	    "-e MCP_SANDBOXD_AGENT_PID=%s %s sh -c "
	    "\"$(cat '%s/../engine/scripts/restore.sh')\" sh /tmp "
	    "</dev/null 2>&1",
	    user, envpid, cid, tests);
	out = h_run(cmd, &status);
	cr_expect(
	    h_contains(out, "killed "), "restore.sh (%s): %s", envpid, out);
	free(out);
	now = agent_of(s, cid);
	cr_expect(now != NULL && strcmp(strchr(now, ' ') + 1, pid) == 0,
	    "the agent was %s, is %s (%s)", pid, now != NULL ? now : "gone",
	    envpid);
	free(now);
	out = h_exec_ok(s, cid, "ps -eo args= | grep -c '[e]cho line >>' || :");
	cr_expect_str_eq(out, "0\n", "the writer lives (%s): %s", envpid, out);
	free(out);
}

/*
 * The scripts that stop or kill every process of the sandbox user leave
 * the agent alone when the engine's exec runs them, not the agent (as it
 * does a command that comes before the agent is up): a stopped agent
 * answered nothing, not even the command that continues what a cancelled
 * snapshot stopped (snapshot/cancelled_snapshot_continues_processes
 * failed so, 1 run in 40 with 5 at once), and a killed one lost every
 * command it ran.  The worker gives every command the agent's pid, which
 * no variable of the sandbox's replaces; while the agent starts it has
 * none to give (0), and the scripts know the agent by its name and its
 * parent (none in the sandbox).  Here the scripts run through the
 * engine's exec beside the agent, as the same user, with that variable
 * and with 0, and the snapshot's tar writes down who is stopped once the
 * writer is (a process stops when it next runs, not as its SIGSTOP is
 * sent).
 */
Test(agent, snapshot_and_restore_scripts_leave_it_alone, .timeout = 120)
{
	struct h_server *s;
	char *cid, *agent, *pid, *out;

	s = h_start("--agent", "on", NULL);
	json_object_put(h_initialize(s));
	cid = h_create(s, "{\"env\":{\"MCP_SANDBOXD_AGENT_PID\":\"1\"}}");
	cr_assert(agent_comes_back(s, cid, 10000), "the agent never took one");
	cr_assert((agent = agent_of(s, cid)) != NULL, "no agent");
	pid = strchr(agent, ' ') + 1;
	pid[-1] = '\0';
	out = h_exec_ok(s, cid, "echo $MCP_SANDBOXD_AGENT_PID");
	cr_expect(strncmp(out, pid, strlen(pid)) == 0 &&
	              strcmp(out + strlen(pid), "\n") == 0,
	    "MCP_SANDBOXD_AGENT_PID is %s, the agent is %s", out, pid);
	free(out);
	free(h_exec_ok(s, cid,
	    "mkdir -p /app/bin && printf '#!/bin/sh\\n"
	    "[ \"$1\" = --help ] && exit 0\\ni=0\\n"
	    "while [ $i -lt 100 ] && ! ps -eo stat=,args= | "
	    "grep -q \"^T.*[e]cho line >>\"; do sleep 0.1; i=$((i+1)); done\\n"
	    "ps -eo stat=,pid=,args= > /tmp/states\\n' > /app/bin/tar "
	    "&& chmod +x /app/bin/tar"));
	scripts_beside(s, cid, agent, pid, pid);
	scripts_beside(s, cid, agent, pid, "0");
	free(agent);
	finish(s, cid);
}

Test(agent, timeout_kills_at_once, .timeout = 120)
{
	struct h_server *s;
	json_object *r, *f;
	long long t0, took;
	char *cid, *out;

	s = h_start("--agent", "on", NULL);
	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	cr_assert(agent_comes_back(s, cid, 10000));
	t0 = h_now_ms();
	r = h_exec(s, cid,
	    "setsid sleep 1001 >/dev/null 2>&1 & echo started; sleep 1000", 1);
	took = h_now_ms() - t0;
	f = h_first(r);
	cr_expect(h_bool(f, "agent"));
	cr_expect(h_bool(f, "timed_out"), "%s", h_text(r));
	cr_expect_str_eq(h_str(f, "stdout"), "started\n");
	cr_expect_lt(took, 4000, "answered after %lld ms", took);
	json_object_put(r);
	out = h_exec_ok(s, cid, "ps -eo args");
	cr_expect(!h_contains(out, "sleep 100"), "left running:\n%s", out);
	free(out);
	finish(s, cid);
}

Test(agent, off, .timeout = 120)
{
	struct h_server *s;
	json_object *r, *f;
	char *cid, *out;

	s = h_start("--agent", "off", NULL);
	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	f = exec_first(s, cid, "echo hi", &r);
	cr_expect_str_eq(h_str(f, "stdout"), "hi\n");
	cr_expect(h_get(f, "agent") == NULL);
	cr_expect(h_get(f, "command_cpu_ms") == NULL);
	json_object_put(r);
	/* Nothing mounted, nothing running. */
	out = h_exec_ok(s, cid,
	    "test -e /.mcp-sandboxd-agent && echo M$((1 + 1)); "
	    "for p in /proc/[0-9]*; do "
	    "  c=$(tr -d '\\0' < $p/cmdline 2>/dev/null); "
	    "  [ \"$c\" = /.mcp-sandboxd-agent ] && echo R$((2 + 2)); "
	    "done; true");
	cr_expect(!h_contains(out, "M2"), "mounted: %s", out);
	cr_expect(!h_contains(out, "R4"), "an agent runs: %s", out);
	free(out);
	finish(s, cid);
}

/* The agent as the sandbox sees it: read-only, not writable, not
 * readable through /proc by sandbox code. */
Test(agent, cannot_be_changed_or_hijacked, .timeout = 120)
{
	struct h_server *s;
	json_object *r, *f;
	char *cid, *out;

	s = h_start("--agent", "on", NULL);
	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	cr_assert(agent_comes_back(s, cid, 10000));
	out = h_exec_ok(s, cid,
	    "echo x > /.mcp-sandboxd-agent 2>/dev/null && echo WROTE; "
	    "rm -f /.mcp-sandboxd-agent 2>/dev/null && echo REMOVED; "
	    "grep ' /.mcp-sandboxd-agent ' /proc/mounts | grep -q ' ro,' && "
	    "echo RO; "
	    "for p in /proc/[0-9]*; do "
	    "  c=$(tr -d '\\0' < $p/cmdline 2>/dev/null); "
	    "  [ \"$c\" = /.mcp-sandboxd-agent ] || continue; "
	    "  echo junk > $p/fd/1 2>/dev/null && echo INJECTED; "
	    "  ls $p/fd >/dev/null 2>&1 && echo FDS; "
	    "done; echo done");
	cr_expect(!h_contains(out, "WROTE"), "%s", out);
	cr_expect(!h_contains(out, "REMOVED"), "%s", out);
	cr_expect(h_contains(out, "RO"), "%s", out);
	cr_expect(!h_contains(out, "INJECTED"), "%s", out);
	cr_expect(!h_contains(out, "FDS"), "%s", out);
	free(out);
	f = exec_first(s, cid, "echo still", &r);
	cr_expect(h_bool(f, "agent"));
	json_object_put(r);
	/* A command's own streams cannot be opened again through /proc
	 * (sockets), so other processes cannot write into its output. */
	f = exec_first(s, cid,
	    "if echo junk > /proc/$$/fd/1 2>/dev/null; then echo OPENED; "
	    "else echo REFUSED; fi",
	    &r);
	cr_expect(h_bool(f, "agent"));
	cr_expect_str_eq(h_str(f, "stdout"), "REFUSED\n");
	json_object_put(r);
	finish(s, cid);
}

/* Sandbox code kills the agent: that command's result is lost, clearly;
 * the next ones run (on the engine's exec until it is back). */
Test(agent, killed_by_sandbox_code, .timeout = 120)
{
	struct h_server *s;
	json_object *r, *f;
	char *cid;
	int i;

	s = h_start("--agent", "on", NULL);
	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	for (i = 0; i < 3; i++) {
		cr_assert(agent_comes_back(s, cid, 10000));
		r = h_exec(s, cid,
		    "for p in /proc/[0-9]*; do "
		    "  c=$(tr -d '\\0' < $p/cmdline 2>/dev/null); "
		    "  [ \"$c\" = /.mcp-sandboxd-agent ] && kill -9 ${p#/proc/}; "
		    "done; sleep 5",
		    30);
		f = h_first(r);
		cr_expect(h_contains(h_str(f, "error"), "agent was lost"), "%s",
		    h_text(r));
		json_object_put(r);
		/* Right away: the engine's exec, or the agent already back. */
		f = exec_first(s, cid, "echo next", &r);
		cr_expect_str_eq(h_str(f, "stdout"), "next\n");
		if (!h_bool(f, "agent"))
			expect_fallback(f, "agent");
		json_object_put(r);
	}
	cr_expect(agent_comes_back(s, cid, 10000), "the agent stayed away");
	finish(s, cid);
}

/* Garbage in place of its protocol. */
Test(agent, hostile_garbage, .timeout = 120)
{
	struct h_server *s;
	json_object *r, *f;
	long long deadline;
	char *cid;
	int i, left;

	s = start_with_agent("os.write(1, os.urandom(1 << 16))\n"
	                     "time.sleep(600)\n");
	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	for (i = 0; i < 4; i++) {
		f = exec_first(s, cid, "echo fine", &r);
		cr_expect_str_eq(h_str(f, "stdout"), "fine\n");
		expect_fallback(f, "agent");
		json_object_put(r);
		usleep(300 * 1000);
	}
	/* What the worker killed goes: no hostile agent lingers.  The one
	 * running now, and at most one being killed: not one per restart
	 * (there were four or more); on a loaded machine a kill takes a
	 * while, so the count is waited for (15 s at most). */
	deadline = h_now_ms() + 15000;
	do {
		f = exec_first(s, cid,
		    "n=0; for p in /proc/[0-9]*; do "
		    "  c=$(tr -d '\\0' < $p/cmdline 2>/dev/null); "
		    "  case $c in *mcp-sandboxd-agent*) n=$((n+1));; esac; "
		    "done; echo $n",
		    &r);
		left = atoi(h_str(f, "stdout"));
		json_object_put(r);
		if (left > 2)
			usleep(500 * 1000);
	} while (left > 2 && h_now_ms() < deadline);
	cr_expect_leq(left, 2, "hostile agents left: %d", left);
	finish(s, cid);
}

/* Output far past the credit it was given: it is stopped; the command
 * fails clearly, the server's memory stays bounded. */
Test(agent, hostile_flood, .timeout = 120)
{
	struct h_server *s;
	json_object *r, *f;
	char *cid;
	long rss;

	s = start_with_agent(
	    "hello()\n"
	    "while True:\n"
	    "    t, fl, i, p = msg()\n"
	    "    if t == 1:\n"
	    "        send(65, i, struct.pack('>I', os.getpid()))\n"
	    "        while True:\n"
	    "            send(66, i, b'A' * 32768, 1)\n");
	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	/* Wait for its HELLO, then hand it a command. */
	sleep(2);
	r = h_exec(s, cid, "echo hi", 30);
	f = h_first(r);
	if (h_bool(f, "agent") || h_str(f, "error") != NULL) {
		cr_expect(h_contains(h_str(f, "error"), "agent was lost"), "%s",
		    h_text(r));
	}
	json_object_put(r);
	f = exec_first(s, cid, "echo after", &r);
	cr_expect_str_eq(h_str(f, "stdout"), "after\n");
	json_object_put(r);
	rss = h_status_kb(s->pid, "VmHWM");
	cr_expect_lt(rss, 64 * 1024, "supervisor peak RSS %ld kB", rss);
	finish(s, cid);
}

/*
 * One that answers SENT for input it never got, as if to draw the
 * supervisor's credit and so a whole upload into the worker's memory: it
 * is lost at that SENT, the command fails at once (not by its timeout),
 * and the next command runs.
 */
Test(agent, hostile_sent, .timeout = 120)
{
	struct h_server *s;
	json_object *r, *f, *a;
	char *cid, *in;

	s = start_with_agent(
	    "hello()\n"
	    "while True:\n"
	    "    t, fl, i, p = msg()\n"
	    "    if t == 1:\n"
	    "        send(65, i, struct.pack('>I', os.getpid()))\n"
	    "        send(67, i, struct.pack('>I', 1 << 30))\n");
	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	sleep(2); /* its HELLO */
	in = malloc(200 * 1024 + 1);
	cr_assert(in != NULL);
	memset(in, 'x', 200 * 1024);
	in[200 * 1024] = '\0';
	a = json_object_new_object();
	json_object_object_add(a, "commands", json_object_new_string("wc -c"));
	json_object_object_add(a, "stdin", json_object_new_string(in));
	json_object_object_add(a, "timeout_seconds", json_object_new_int(60));
	free(in);
	r = h_exec_obj(s, cid, a, 90000);
	f = h_first(r);
	if (h_bool(f, "agent")) {
		cr_expect(!h_bool(f, "timed_out"), "%s", h_text(r));
		cr_expect(h_contains(h_str(f, "error"), "agent was lost"),
		    "%.2000s", h_text(r));
	} else
		cr_expect_str_eq(h_str(f, "stdout"), "204800\n");
	json_object_put(r);
	f = exec_first(s, cid, "echo after", &r);
	cr_expect_str_eq(h_str(f, "stdout"), "after\n");
	json_object_put(r);
	finish(s, cid);
}

/*
 * One that says hello, then never answers: each command it takes still
 * ends, by its timeout and the kill's grace, and the server goes on.  (A
 * new agent is trusted again after its HELLO: it can only ever cost its
 * own sandbox's commands their timeouts.)
 */
Test(agent, hostile_silent, .timeout = 180)
{
	struct h_server *s;
	json_object *r, *f;
	long long t0, took;
	char *cid;
	int i, taken = 0;

	s = start_with_agent("hello()\n"
	                     "while True:\n"
	                     "    msg()\n");
	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	for (i = 0; i < 4 && taken < 2; i++) {
		t0 = h_now_ms();
		r = h_exec(s, cid, "echo maybe", 2);
		took = h_now_ms() - t0;
		f = h_first(r);
		if (h_bool(f, "agent")) {
			taken++;
			cr_expect(h_bool(f, "timed_out"), "%s", h_text(r));
			cr_expect(
			    h_contains(h_str(f, "error"), "agent was lost"),
			    "%s", h_text(r));
			cr_expect_lt(
			    took, 20000, "answered after %lld ms", took);
		} else
			cr_expect_str_eq(h_str(f, "stdout"), "maybe\n");
		json_object_put(r);
		usleep(500 * 1000);
	}
	cr_expect_geq(taken, 1, "the silent agent never took a command");
	json_object_put(h_request(s, "ping", NULL, 5000));
	finish(s, cid);
}

/*
 * A server whose agent is the stand-in body: never trusted, so that a
 * command takes the engine's exec and works, and the server answers.
 */
static void
expect_never_trusted(const char *body)
{
	struct h_server *s;
	json_object *r, *f;
	char *cid;

	s = start_with_agent(body);
	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	sleep(2);
	f = exec_first(s, cid, "echo fine", &r);
	cr_expect_str_eq(h_str(f, "stdout"), "fine\n");
	expect_fallback(f, NULL);
	json_object_put(r);
	json_object_put(h_request(s, "ping", NULL, 5000));
	finish(s, cid);
}

/*
 * The connections' channel, claimed by an agent with the wrong token (it
 * is never up, so neither is the agent), or used for what is not a
 * connection's (the agent is stopped): commands take the engine's exec.
 */
Test(agent, hostile_channel, .timeout = 180)
{
	expect_never_trusted("c = channel(b'not-the-token')\n"
	                     "hello(f=8)\n"
	                     "time.sleep(600)\n");
	expect_never_trusted(
	    "c = channel(os.environ['MCP_SANDBOXD_CHANNEL'].encode())\n"
	    "hello(f=8)\n"
	    "c.sendall(struct.pack('>HHII', 65, 0, 4, 1) + b'\\0\\0\\0\\1')\n"
	    "time.sleep(600)\n");
}

/* Another version, or a HELLO as another user: never used. */
Test(agent, hostile_handshake, .timeout = 120)
{
	expect_never_trusted("hello(1)\n"
	                     "time.sleep(600)\n");
	expect_never_trusted(
	    "send(64, 0, struct.pack('>IIII', " AGENT_VERSION_STR
	    ", os.getpid(), 0, 0))\n"
	    "time.sleep(600)\n");
}

/*
 * A PASSED whose descriptor is not a connection's socket (a pipe, a
 * listener, a unix socket), for a connection never asked for: the agent
 * broke the protocol, the descriptor is closed, and it is stopped, each
 * time it comes back.  (It never answers a command: one that it took in
 * the moment it was trusted is lost; one after it, on the engine's exec,
 * works.)
 */
Test(agent, hostile_passed, .timeout = 300)
{
	static const char *const fds[] = {
	    "fd = os.pipe()[0]\n",
	    "l = socket.socket()\n"
	    "l.bind(('127.0.0.1', 0))\n"
	    "l.listen()\n"
	    "fd = l.fileno()\n",
	    "p = socket.socketpair()\n"
	    "fd = p[0].fileno()\n",
	};
	struct h_server *s;
	json_object *r, *f;
	char body[1024], *cid;
	size_t i;
	int k, ok;

	for (i = 0; i < sizeof fds / sizeof fds[0]; i++) {
		snprintf(body, sizeof body,
		    "c = channel(os.environ['MCP_SANDBOXD_CHANNEL'].encode())\n"
		    "hello(f=8)\n"
		    "time.sleep(0.2)\n" /* the PASSED after the HELLO */
		    "%s"
		    "passed(c, 5, fd)\n"
		    "time.sleep(600)\n",
		    fds[i]);
		s = start_with_agent(body);
		json_object_put(h_initialize(s));
		cid = h_create(s, NULL);
		sleep(2);
		for (ok = 0, k = 0; k < 5 && !ok; k++) {
			r = h_exec(s, cid, "echo fine", 30);
			f = h_first(r);
			if ((ok = h_str(f, "stdout") != NULL &&
			          strcmp(h_str(f, "stdout"), "fine\n") == 0))
				expect_fallback(f, NULL);
			else
				cr_expect(h_contains(h_str(f, "error"),
				              "not a connection's socket"),
				    "%s", h_text(r));
			json_object_put(r);
		}
		cr_expect(ok, "case %zu: no command ran", i);
		json_object_put(h_request(s, "ping", NULL, 5000));
		finish(s, cid);
	}
}
