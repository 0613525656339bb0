/*
 * The in-sandbox agent (agent/): the real static binary of this build
 * (MCP_SANDBOXD_AGENT, set by meson), run on this host as a child with
 * pipes and driven through the codec (proto/agentwire.c).  No Docker.
 *
 * Every command a test runs carries a token of the test's own
 * (agt-PID-NAME); a test ends by checking that no live process carries
 * one, and the suite's fini kills whatever does, and the agent, even
 * after a failed assertion.
 */
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "agentwire.h"

#define PYTHON "/usr/bin/python3"

struct ag {
	pid_t pid;
	int to; /* the agent's standard input */
	int from; /* its standard output */
	struct agent_reader rd;
	unsigned char buf[65536];
	size_t off, len;
	int eof;
	struct agent_hello hello;
};

struct msg {
	struct agent_hdr h;
	unsigned char *p; /* h.len bytes and a NUL */
};

/* What came for one command. */
struct res {
	int started;
	uint32_t pid;
	char *out, *err;
	size_t nout, nerr;
	uint64_t sent;
	size_t maxchunk;
	int exited;
	struct agent_exit exit;
	int64_t started_ms, exit_ms;
};

/* The agent's own environment. */
static char *agent_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "KEEP=kept",
    "HOME=/home/agt", "MCP_SANDBOXD_EXEC=agt-stale-agent", NULL};

static struct ag *live;
static char tokens[16][AGENT_TOKEN_MAX + 1];
static int ntokens;

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* A token of this test (agt-PID-name), cleaned up after it. */
static const char *
tok(const char *name)
{
	char t[sizeof tokens[0]];
	int i;

	snprintf(t, sizeof t, "agt-%d-%s", (int)getpid(), name);
	for (i = 0; i < ntokens; i++)
		if (strcmp(tokens[i], t) == 0)
			return tokens[i];
	cr_assert_lt(ntokens, 16);
	memcpy(tokens[ntokens], t, sizeof t);
	return tokens[ntokens++];
}

/*
 * How many live processes carry MCP_SANDBOXD_EXEC=token exactly; each is
 * sent sig too unless it is 0.
 */
static int
token_procs(const char *token, int sig)
{
	char want[64], path[64], stat[512], *p, *env, *e;
	size_t cap = 1 << 20, len;
	struct dirent *de;
	ssize_t n;
	DIR *d;
	int fd, count = 0;
	pid_t pid;

	snprintf(want, sizeof want, "MCP_SANDBOXD_EXEC=%s", token);
	env = malloc(cap + 1);
	cr_assert_not_null(env);
	d = opendir("/proc");
	cr_assert_not_null(d);
	while ((de = readdir(d)) != NULL) {
		pid = (pid_t)atoi(de->d_name);
		if (pid <= 1 || pid == getpid())
			continue;
		snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
		if ((fd = open(path, O_RDONLY)) == -1)
			continue;
		n = read(fd, stat, sizeof stat - 1);
		close(fd);
		if (n <= 0)
			continue;
		stat[n] = '\0';
		if ((p = strrchr(stat, ')')) == NULL || p[1] == '\0' ||
		    p[2] == 'Z' || p[2] == 'X')
			continue;
		snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
		if ((fd = open(path, O_RDONLY)) == -1)
			continue;
		len = 0;
		while (len < cap && (n = read(fd, env + len, cap - len)) > 0)
			len += (size_t)n;
		close(fd);
		env[len] = '\0';
		for (e = env; e < env + len; e += strlen(e) + 1) {
			if (strcmp(e, want) == 0) {
				count++;
				if (sig != 0)
					kill(pid, sig);
				break;
			}
		}
	}
	closedir(d);
	free(env);
	return count;
}

/* Waits (up to ms) until no live process carries token; how many do. */
static int
token_wait_none(const char *token, int ms)
{
	int64_t end = now_ms() + ms;
	int n;

	while ((n = token_procs(token, 0)) > 0 && now_ms() < end)
		sleep_ms(20);
	return n;
}

/*
 * Waits (up to 5 s) until n live processes carry token; how many do.  (A
 * command is STARTED once its first program runs: a shell that execs
 * another, or forks one, has more to do, and a process in its exec may
 * not show its environment for a moment.)
 */
static int
token_wait_count(const char *token, int n)
{
	int64_t end = now_ms() + 5000;
	int k;

	while ((k = token_procs(token, 0)) != n && now_ms() < end)
		sleep_ms(20);
	return k;
}

/* Reaps whatever children of the test are gone (orphans given to it). */
static void
reap_all(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static void
teardown(void)
{
	int i, round;

	if (live != NULL && live->pid > 0) {
		kill(live->pid, SIGKILL);
		waitpid(live->pid, NULL, 0);
		live->pid = 0;
	}
	for (round = 0; round < 50; round++) {
		int left = 0;

		for (i = 0; i < ntokens; i++)
			left += token_procs(tokens[i], SIGKILL);
		if (left == 0)
			break;
		sleep_ms(20);
	}
	reap_all();
}

TestSuite(agent, .fini = teardown, .timeout = 120);

/* The next message (1), or none in timeout ms (0), or the agent's EOF (-1). */
static int
ag_next(struct ag *a, struct msg *m, int timeout)
{
	struct pollfd pfd = {.fd = a->from, .events = POLLIN};
	int64_t end = now_ms() + timeout, left;
	size_t t;
	ssize_t n;
	int done;

	for (;;) {
		while (a->off < a->len) {
			t = agent_reader_take(
			    &a->rd, a->buf + a->off, a->len - a->off, &done);
			cr_assert_neq(
			    t, (size_t)-1, "the agent sent a bad header");
			a->off += t;
			if (done) {
				m->h = a->rd.hdr;
				m->p = malloc((size_t)m->h.len + 1);
				cr_assert_not_null(m->p);
				memcpy(m->p, a->rd.buf, (size_t)m->h.len + 1);
				return 1;
			}
		}
		if (a->eof)
			return -1;
		if ((left = end - now_ms()) <= 0)
			return 0;
		if (poll(&pfd, 1, (int)left) == 0)
			return 0;
		n = read(a->from, a->buf, sizeof a->buf);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			a->eof = 1;
			return -1;
		}
		a->off = 0;
		a->len = (size_t)n;
	}
}

/* Writes a message made by the codec to the agent and frees it. */
static int
ag_send(struct ag *a, unsigned char *m, const size_t *lenp)
{
	size_t len = *lenp, off = 0;
	ssize_t n;

	cr_assert_not_null(m);
	while (off < len) {
		n = write(a->to, m + off, len - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(m);
			return -1;
		}
		off += (size_t)n;
	}
	free(m);
	return 0;
}

static void
ag_send_raw(struct ag *a, const void *p, size_t len)
{
	unsigned char *m = malloc(len);
	size_t n = len;

	cr_assert_not_null(m);
	memcpy(m, p, len);
	(void)ag_send(a, m, &n);
}

static void
ag_start(struct ag *a)
{
	const char *path = getenv("MCP_SANDBOXD_AGENT");
	char *argv[] = {"mcp-sandboxd-agent", NULL};
	int in[2], out[2];
	struct msg m;

	cr_assert_not_null(
	    path, "MCP_SANDBOXD_AGENT is not set (meson test sets it)");
	signal(SIGPIPE, SIG_IGN);
	memset(a, 0, sizeof *a);
	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	/* Room for what the agent sends while a test is writing to it. */
	(void)fcntl(out[0], F_SETPIPE_SZ, 1 << 20);
	a->pid = fork();
	cr_assert_geq(a->pid, 0);
	if (a->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execve(path, argv, agent_env);
		_exit(127);
	}
	live = a;
	close(in[0]);
	close(out[1]);
	a->to = in[1];
	a->from = out[0];
	agent_reader_init(&a->rd);
	cr_assert_eq(ag_next(a, &m, 5000), 1, "no HELLO");
	cr_assert_eq(m.h.type, AGENT_HELLO);
	cr_assert_eq(m.h.id, 0);
	cr_assert_eq(agent_hello_decode(m.p, m.h.len, &a->hello), 0);
	free(m.p);
}

/* Waits up to ms for the agent to exit; its wait status, or -1. */
static int
ag_wait(struct ag *a, int ms)
{
	int64_t end = now_ms() + ms;
	int status;
	pid_t r;

	while ((r = waitpid(a->pid, &status, WNOHANG)) == 0 && now_ms() < end)
		sleep_ms(10);
	if (r != a->pid)
		return -1;
	a->pid = 0;
	return status;
}

/* EOF on the agent's standard input: it must exit, with 0. */
static void
ag_stop(struct ag *a)
{
	int status;

	close(a->to);
	a->to = -1;
	status = ag_wait(a, 5000);
	cr_assert_neq(status, -1, "the agent did not exit at EOF");
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "the agent's status at EOF: %#x", status);
	close(a->from);
	agent_reader_clear(&a->rd);
	live = NULL;
	reap_all();
}

/* No process with one of the test's tokens is left. */
static void
expect_no_leftovers(void)
{
	int i;

	for (i = 0; i < ntokens; i++)
		cr_expect_eq(token_wait_none(tokens[i], 3000), 0,
		    "processes with %s are left", tokens[i]);
}

static void
ag_run(struct ag *a, uint32_t id, const char *const *argv,
    const char *const *env, const char *workdir, const char *token,
    int has_stdin)
{
	struct agent_run r = {.argv = (char **)argv,
	    .env = (char **)env,
	    .workdir = (char *)workdir,
	    .token = (char *)token,
	    .has_stdin = has_stdin};
	unsigned char *m;
	size_t len;

	m = agent_run_encode(id, &r, &len);
	cr_assert_not_null(m);
	cr_assert_eq(ag_send(a, m, &len), 0);
}

static void
ag_sh(struct ag *a, uint32_t id, const char *script, const char *token,
    int has_stdin)
{
	const char *argv[] = {"/bin/sh", "-c", script, NULL};

	ag_run(a, id, argv, NULL, NULL, token, has_stdin);
}

static void
ag_u32(struct ag *a, uint16_t type, uint32_t id, uint32_t v)
{
	size_t len;
	unsigned char *m = agent_msg_u32(type, id, v, &len);

	cr_assert_eq(ag_send(a, m, &len), 0);
}

static void
ag_kill(struct ag *a, uint32_t id)
{
	size_t len;
	unsigned char *m = agent_msg_new(AGENT_KILL, 0, id, NULL, 0, &len);

	cr_assert_eq(ag_send(a, m, &len), 0);
}

/* A KILL with a signal's number (process_signal's TERM, INT, HUP). */
static void
ag_signal(struct ag *a, uint32_t id, uint32_t sig)
{
	unsigned char num[4] = {(unsigned char)(sig >> 24),
	    (unsigned char)(sig >> 16), (unsigned char)(sig >> 8),
	    (unsigned char)sig};
	size_t len;
	unsigned char *m = agent_msg_new(AGENT_KILL, 0, id, num, 4, &len);

	cr_assert_eq(ag_send(a, m, &len), 0);
}

static void
ag_input(struct ag *a, uint32_t id, const void *p, size_t n, int eof)
{
	size_t len, k;
	unsigned char *m;

	do {
		k = n < AGENT_DATA_CHUNK ? n : AGENT_DATA_CHUNK;
		m = agent_msg_new(AGENT_INPUT, eof && k == n ? AGENT_F_EOF : 0,
		    id, p, k, &len);
		cr_assert_eq(ag_send(a, m, &len), 0);
		p = (const char *)p + k;
		n -= k;
	} while (n > 0);
}

static void
append(char **buf, size_t *n, const void *p, size_t len)
{
	cr_assert_leq(*n + len, (size_t)16 << 20);
	*buf = realloc(*buf, *n + len + 1);
	cr_assert_not_null(*buf);
	memcpy(*buf + *n, p, len);
	*n += len;
	(*buf)[*n] = '\0';
}

/*
 * Takes one message into r if it is for id (1), else ignores it (0).
 * With credit, every OUT's bytes are given back at once.
 */
static int
res_take(
    struct ag *a, struct res *r, uint32_t id, const struct msg *m, int credit)
{
	uint32_t v;

	if (m->h.id != id)
		return 0;
	cr_assert(!r->exited, "a message for %u after its EXIT", id);
	switch (m->h.type) {
	case AGENT_STARTED:
		cr_assert(!r->started, "two STARTED");
		cr_assert_eq(agent_u32_decode(m->p, m->h.len, &r->pid), 0);
		r->started = 1;
		r->started_ms = now_ms();
		break;
	case AGENT_OUT:
		cr_assert(r->started, "OUT before STARTED");
		if (m->h.len > r->maxchunk)
			r->maxchunk = m->h.len;
		if (m->h.flags == AGENT_F_STDOUT)
			append(&r->out, &r->nout, m->p, m->h.len);
		else
			append(&r->err, &r->nerr, m->p, m->h.len);
		if (credit)
			ag_u32(a, AGENT_CREDIT, id, m->h.len);
		break;
	case AGENT_SENT:
		cr_assert_eq(agent_u32_decode(m->p, m->h.len, &v), 0);
		r->sent += v;
		break;
	case AGENT_EXIT:
		cr_assert_eq(agent_exit_decode(m->p, m->h.len, &r->exit), 0);
		r->exited = 1;
		r->exit_ms = now_ms();
		break;
	default:
		cr_assert_fail("message type %u for a command", m->h.type);
	}
	return 1;
}

/* Everything for id until its EXIT (1), or timeout ms passed (0). */
static int
collect(struct ag *a, uint32_t id, struct res *r, int timeout, int credit)
{
	int64_t end = now_ms() + timeout;
	struct msg m;
	int got;

	while (!r->exited) {
		got = ag_next(a, &m, (int)(end - now_ms()));
		cr_assert_neq(got, -1, "the agent's output ended");
		if (got == 0)
			return 0;
		res_take(a, r, id, &m, credit);
		free(m.p);
	}
	return 1;
}

/* Messages until id's STARTED (or its EXIT: a refusal). */
static void
wait_started(struct ag *a, uint32_t id, struct res *r)
{
	int64_t end = now_ms() + 10000;
	struct msg m;

	while (!r->started && !r->exited) {
		cr_assert_eq(ag_next(a, &m, (int)(end - now_ms())), 1,
		    "no STARTED for %u", id);
		res_take(a, r, id, &m, 1);
		free(m.p);
	}
	cr_assert(r->started, "%u did not start: %s", id, r->exit.error);
}

static void
res_free(struct res *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof *r);
}

/* Runs script to its end, giving output credit back. */
static void
sh_result(struct ag *a, uint32_t id, const char *script, struct res *r)
{
	memset(r, 0, sizeof *r);
	ag_sh(a, id, script, tok("sh"), 0);
	cr_assert(collect(a, id, r, 20000, 1), "no EXIT for %u", id);
}

Test(agent, says_hello_first)
{
	struct ag a;

	ag_start(&a);
	cr_expect_eq(a.hello.version, AGENT_VERSION);
	cr_expect_eq(a.hello.pid, (uint32_t)a.pid);
	cr_expect_eq(a.hello.uid, (uint32_t)getuid());
	cr_expect_eq(a.hello.gid, (uint32_t)getgid());
	ag_stop(&a);
}

Test(agent, echo_hi_on_stdout)
{
	const char *argv[] = {"/bin/echo", "hi", NULL};
	struct res r = {0};
	struct ag a;

	ag_start(&a);
	ag_run(&a, 1, argv, NULL, NULL, tok("echo"), 0);
	cr_assert(collect(&a, 1, &r, 10000, 0));
	cr_expect(r.started);
	cr_expect_gt(r.pid, 1);
	cr_assert_eq(r.nout, 3);
	cr_expect_str_eq(r.out, "hi\n");
	cr_expect_eq(r.nerr, 0);
	cr_expect_eq(r.exit.exit_code, 0);
	cr_expect_eq(r.exit.signal, 0);
	cr_expect_str_eq(r.exit.error, "");
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, stderr_and_exit_code)
{
	struct res r;
	struct ag a;

	ag_start(&a);
	sh_result(&a, 1, "echo out; echo oops >&2; exit 3", &r);
	cr_expect_str_eq(r.out, "out\n");
	cr_expect_str_eq(r.err, "oops\n");
	cr_expect_eq(r.exit.exit_code, 3);
	cr_expect_eq(r.exit.signal, 0);
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, killed_by_a_signal_reports_128_plus_n)
{
	struct res r;
	struct ag a;

	ag_start(&a);
	sh_result(&a, 1, "kill -USR1 $$", &r);
	cr_expect_eq(r.exit.signal, SIGUSR1);
	cr_expect_eq(r.exit.exit_code, 128 + SIGUSR1);
	res_free(&r);
	sh_result(&a, 2, "kill -TERM $$", &r);
	cr_expect_eq(r.exit.signal, SIGTERM);
	cr_expect_eq(r.exit.exit_code, 128 + SIGTERM);
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, stdin_from_input_then_eof)
{
	const char *argv[] = {"cat", NULL};
	struct res r = {0};
	struct ag a;

	ag_start(&a);
	ag_run(&a, 1, argv, NULL, NULL, tok("cat"), 1);
	ag_input(&a, 1, "hello ", 6, 0);
	ag_input(&a, 1, "world", 5, 1);
	cr_assert(collect(&a, 1, &r, 10000, 1));
	cr_expect_str_eq(r.out, "hello world");
	cr_expect_eq(r.sent, 11);
	cr_expect_eq(r.exit.exit_code, 0);
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, stdin_a_large_input_through_cat)
{
	const char *argv[] = {"cat", NULL};
	size_t n = 200 * 1024, i;
	char *in = malloc(n);
	struct res r = {0};
	struct ag a;

	cr_assert_not_null(in);
	for (i = 0; i < n; i++)
		in[i] = (char)('a' + i % 23);
	ag_start(&a);
	ag_run(&a, 1, argv, NULL, NULL, tok("cat"), 1);
	ag_input(&a, 1, in, n, 1);
	cr_assert(collect(&a, 1, &r, 20000, 1));
	cr_assert_eq(r.nout, n);
	cr_expect_arr_eq(r.out, in, n);
	cr_expect_eq(r.sent, n);
	cr_expect_leq(r.maxchunk, AGENT_DATA_CHUNK);
	cr_expect_eq(r.exit.exit_code, 0);
	res_free(&r);
	free(in);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, stdin_closed_by_the_command_is_still_acknowledged)
{
	size_t n = 100 * 1024;
	char *in = calloc(1, n);
	struct res r = {0};
	struct ag a;

	cr_assert_not_null(in);
	ag_start(&a);
	ag_sh(&a, 1, "exec 0<&-; sleep 1; echo done", tok("closed"), 1);
	wait_started(&a, 1, &r);
	sleep_ms(300);
	ag_input(&a, 1, in, n, 0);
	cr_assert(collect(&a, 1, &r, 10000, 1));
	cr_expect_eq(r.sent, n, "SENT for %llu of %zu bytes",
	    (unsigned long long)r.sent, n);
	cr_expect_str_eq(r.out, "done\n");
	cr_expect_eq(r.exit.exit_code, 0);
	res_free(&r);
	free(in);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, stdin_never_read_does_not_hold_the_command)
{
	size_t n = 300 * 1024;
	char *in = calloc(1, n);
	struct res r = {0};
	struct ag a;

	cr_assert_not_null(in);
	ag_start(&a);
	ag_sh(&a, 1, "sleep 0.3", tok("noread"), 1);
	ag_input(&a, 1, in, n, 1);
	cr_assert(collect(&a, 1, &r, 10000, 1));
	cr_expect_eq(r.exit.exit_code, 0);
	cr_expect_leq(r.sent, n);
	res_free(&r);
	free(in);
	/* The agent goes on. */
	sh_result(&a, 2, "echo next", &r);
	cr_expect_str_eq(r.out, "next\n");
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, stdin_is_dev_null_without_the_field)
{
	struct res r;
	struct ag a;

	ag_start(&a);
	sh_result(&a, 1, "readlink /proc/self/fd/0; cat; echo end", &r);
	cr_expect_str_eq(r.out, "/dev/null\nend\n");
	cr_expect_eq(r.exit.exit_code, 0);
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, only_the_pipes_are_open_in_a_command)
{
	struct res r;
	struct ag a;

	ag_start(&a);
	/* ls's own descriptor of the directory is the one above 2. */
	sh_result(&a, 1, "ls /proc/self/fd | wc -l", &r);
	cr_expect_str_eq(r.out, "4\n");
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, environment_replaced_added_and_inherited)
{
	const char *argv[] = {"/bin/sh", "-c",
	    "echo \"$KEEP|$HOME|$NEW|$MCP_SANDBOXD_EXEC|$PATH\"", NULL};
	const char *env[] = {"HOME=/nowhere", "NEW=a=b", NULL};
	char want[256];
	const char *t = tok("env");
	struct res r = {0};
	struct ag a;

	ag_start(&a);
	ag_run(&a, 1, argv, env, NULL, t, 0);
	cr_assert(collect(&a, 1, &r, 10000, 1));
	snprintf(want, sizeof want, "kept|/nowhere|a=b|%s|%s\n", t,
	    agent_env[0] + 5);
	cr_expect_str_eq(r.out, want);
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, without_a_token_the_agents_own_is_not_passed_on)
{
	const char *argv[] = {
	    "/bin/sh", "-c", "echo \"${MCP_SANDBOXD_EXEC-unset}\"", NULL};
	const char *env[] = {"MCP_SANDBOXD_EXEC=given", NULL};
	const char *t = tok("tok");
	struct res r = {0};
	struct ag a;

	ag_start(&a);
	ag_run(&a, 1, argv, NULL, NULL, NULL, 0);
	cr_assert(collect(&a, 1, &r, 10000, 1));
	cr_expect_str_eq(r.out, "unset\n");
	res_free(&r);
	/* A worker's own ENV of it is kept; a TOKEN wins over it. */
	ag_run(&a, 2, argv, env, NULL, NULL, 0);
	cr_assert(collect(&a, 2, &r, 10000, 1));
	cr_expect_str_eq(r.out, "given\n");
	res_free(&r);
	ag_run(&a, 3, argv, env, NULL, t, 0);
	cr_assert(collect(&a, 3, &r, 10000, 1));
	cr_expect_eq(strncmp(r.out, t, strlen(t)), 0, "%s", r.out);
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, workdir)
{
	const char *argv[] = {"pwd", NULL};
	struct res r = {0};
	struct ag a;

	ag_start(&a);
	ag_run(&a, 1, argv, NULL, "/tmp", tok("pwd"), 0);
	cr_assert(collect(&a, 1, &r, 10000, 1));
	cr_expect_str_eq(r.out, "/tmp\n");
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

/* A RUN that must be refused: EXIT -1 with error, and no STARTED. */
static void
expect_refused(struct ag *a, uint32_t id, const char *error)
{
	struct res r = {0};

	cr_assert(collect(a, id, &r, 10000, 1));
	cr_expect(!r.started, "STARTED for a command that never ran");
	cr_expect_eq(r.exit.exit_code, -1);
	cr_expect_eq(r.exit.signal, 0);
	cr_expect_str_eq(r.exit.error, error);
	res_free(&r);
}

Test(agent, chdir_failure_is_an_exit_with_an_error)
{
	const char *argv[] = {"pwd", NULL};
	struct ag a;

	ag_start(&a);
	ag_run(&a, 1, argv, NULL, "/nope", tok("chdir"), 0);
	expect_refused(&a, 1, "chdir /nope: No such file or directory");
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, exec_failure_is_an_exit_with_an_error)
{
	const char *nope[] = {"/bin/nope", NULL};
	const char *bare[] = {"no-such-command-agt", NULL};
	const char *sh[] = {"sh", "-c", "true", NULL};
	const char *echo[] = {"echo", "found", NULL};
	const char *nopath[] = {"PATH=/nonexistent", NULL};
	const char *path[] = {"PATH=/nonexistent:/bin:/usr/bin", NULL};
	const char *t = tok("exec");
	struct res r = {0};
	struct ag a;

	ag_start(&a);
	ag_run(&a, 1, nope, NULL, NULL, t, 0);
	expect_refused(&a, 1, "exec /bin/nope: No such file or directory");
	ag_run(&a, 2, bare, NULL, NULL, t, 0);
	expect_refused(
	    &a, 2, "exec no-such-command-agt: No such file or directory");
	/* The search is in the PATH of the command's environment. */
	ag_run(&a, 3, sh, nopath, NULL, t, 0);
	expect_refused(&a, 3, "exec sh: No such file or directory");
	ag_run(&a, 4, echo, path, NULL, t, 0);
	cr_assert(collect(&a, 4, &r, 10000, 1));
	cr_expect_str_eq(r.out, "found\n");
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, credit_stops_output_until_credit_arrives)
{
	size_t total = 1024 * 1024, got = 0;
	struct res r = {0};
	struct msg m;
	struct ag a;

	ag_start(&a);
	ag_sh(&a, 1, "head -c 1048576 /dev/zero", tok("credit"), 0);
	while (got < AGENT_INITIAL_CREDIT) {
		cr_assert_eq(ag_next(&a, &m, 10000), 1);
		res_take(&a, &r, 1, &m, 0);
		free(m.p);
		got = r.nout;
	}
	cr_expect_eq(got, AGENT_INITIAL_CREDIT);
	cr_expect_leq(r.maxchunk, AGENT_DATA_CHUNK);
	/* Not a byte more, and no EXIT: the command waits on its pipe. */
	cr_expect_eq(ag_next(&a, &m, 400), 0, "a message past the credit");
	cr_assert(!r.exited);
	ag_u32(&a, AGENT_CREDIT, 1, (uint32_t)(total - AGENT_INITIAL_CREDIT));
	cr_assert(collect(&a, 1, &r, 20000, 0));
	cr_expect_eq(r.nout, total);
	cr_expect_eq(r.exit.exit_code, 0);
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, output_within_credit_is_sent_before_exit)
{
	struct res r = {0};
	struct ag a;

	ag_start(&a);
	/* Gone at once, its output still in the pipe. */
	ag_sh(&a, 1, "head -c 200000 /dev/zero; head -c 50000 /dev/zero >&2",
	    tok("drain"), 0);
	cr_assert(collect(&a, 1, &r, 10000, 0));
	cr_expect_eq(r.nout, 200000);
	cr_expect_eq(r.nerr, 50000);
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, kill_with_a_signal_is_sent_once_and_can_be_caught)
{
	struct res r = {0};
	struct ag a;
	int i;

	ag_start(&a);
	ag_sh(&a, 1,
	    "trap 'echo got TERM' TERM; echo ready; "
	    "while :; do sleep 0.1; done",
	    tok("trap"), 0);
	wait_started(&a, 1, &r);
	cr_assert_not(collect(&a, 1, &r, 500, 1));
	ag_signal(&a, 1, SIGTERM);
	/* Caught: it runs on, and said so once. */
	for (i = 0; i < 20 && (r.out == NULL || strstr(r.out, "TERM") == NULL);
	     i++)
		cr_assert_not(collect(&a, 1, &r, 500, 1));
	cr_assert_not(collect(&a, 1, &r, 500, 1));
	cr_expect_str_eq(r.out, "ready\ngot TERM\n");
	ag_kill(&a, 1);
	cr_assert(collect(&a, 1, &r, 5000, 1));
	cr_expect_eq(r.exit.signal, SIGKILL);
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, kill_a_sleep)
{
	struct res r = {0};
	int64_t t0;
	struct ag a;

	ag_start(&a);
	ag_sh(&a, 1, "exec sleep 1000", tok("sleep"), 0);
	wait_started(&a, 1, &r);
	t0 = now_ms();
	ag_kill(&a, 1);
	cr_assert(collect(&a, 1, &r, 5000, 1));
	cr_expect_lt(now_ms() - t0, 2000);
	cr_expect_eq(r.exit.signal, SIGKILL);
	cr_expect_eq(r.exit.exit_code, 128 + SIGKILL);
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

/* The session of pid (field 6 of /proc/PID/stat), or -1. */
static long
session_of(pid_t pid)
{
	char path[64], buf[512], *p;
	long sess;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY)) == -1)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 1, " %*c %*d %*d %ld", &sess) != 1)
		return -1;
	return sess;
}

Test(agent, kill_reaches_a_daemon_that_left_the_group)
{
	const char *t = tok("daemon");
	struct res r = {0};
	int64_t end;
	pid_t daemon;
	struct msg m;
	struct ag a;

	ag_start(&a);
	ag_sh(&a, 1, "setsid sleep 1000 & echo $!; exec sleep 1000", t, 0);
	end = now_ms() + 10000;
	while (r.nout == 0 || strchr(r.out, '\n') == NULL) {
		cr_assert_eq(ag_next(&a, &m, (int)(end - now_ms())), 1);
		res_take(&a, &r, 1, &m, 1);
		free(m.p);
	}
	daemon = (pid_t)atoi(r.out);
	cr_assert_gt(daemon, 1);
	/* Wait until it is in a session of its own. */
	while (session_of(daemon) != daemon && now_ms() < end)
		sleep_ms(10);
	cr_assert_eq(session_of(daemon), daemon);
	cr_assert_neq(daemon, (pid_t)r.pid);
	cr_assert_eq(token_wait_count(t, 2), 2);
	ag_kill(&a, 1);
	cr_assert(collect(&a, 1, &r, 5000, 1));
	cr_expect_eq(r.exit.signal, SIGKILL);
	cr_expect_eq(token_wait_none(t, 2000), 0, "the daemon lives");
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

/*
 * A KILL read with its RUN, in one write (a call cancelled as it starts):
 * the command is killed, not left to run on, killed for the worker only.
 */
Test(agent, a_kill_right_behind_its_run_kills_the_command)
{
	const char *argv[] = {"/bin/sh", "-c", "exec sleep 1000", NULL};
	const char *t = tok("quick");
	struct agent_run run = {.argv = (char **)argv, .token = (char *)t};
	unsigned char *rm, *km, *both;
	struct res r = {0};
	size_t rlen, klen;
	uint32_t id;
	struct ag a;

	ag_start(&a);
	for (id = 1; id <= 20; id++) {
		rm = agent_run_encode(id, &run, &rlen);
		km = agent_msg_new(AGENT_KILL, 0, id, NULL, 0, &klen);
		cr_assert(rm != NULL && km != NULL);
		both = malloc(rlen + klen);
		cr_assert_not_null(both);
		memcpy(both, rm, rlen);
		memcpy(both + rlen, km, klen);
		rlen += klen;
		free(rm);
		free(km);
		cr_assert_eq(ag_send(&a, both, &rlen), 0);
		cr_assert(collect(&a, id, &r, 5000, 1),
		    "command %u runs on after its KILL", id);
		cr_expect_eq(r.exit.signal, SIGKILL, "command %u", id);
		res_free(&r);
	}
	cr_expect_eq(token_procs(t, 0), 0);
	ag_stop(&a);
	expect_no_leftovers();
}

/* The state of pid (field 3 of /proc/PID/stat), or 0. */
static char
state_of(pid_t pid)
{
	char path[32], buf[512], *p, state;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY)) == -1)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 1, " %c", &state) != 1)
		return 0;
	return state;
}

/*
 * A process of no command, a session of its own, that stops itself again
 * and again while commands end (each end sweeps the command's group): no
 * sweep continues it, only the one who stops it here does.  (A sweep that
 * continued every session leader stopped while it ran woke such a
 * process, on a host: criterion's own, as it forked a test.)  Each wake
 * is one byte on a pipe; a second process here continues it when it is
 * stopped and counts how often.
 */
Test(agent, a_sweep_continues_only_what_it_stopped)
{
	struct res r;
	struct ag a;
	int wake[2], count[2], conts = 0, woken = 0, i;
	pid_t stopper, waker;
	int64_t end;
	char c;

	cr_assert(pipe(wake) == 0 && pipe(count) == 0);
	if ((stopper = fork()) == 0) {
		close(wake[0]);
		setsid();
		for (;;) {
			raise(SIGSTOP);
			if (write(wake[1], "w", 1) != 1)
				_exit(1);
		}
	}
	cr_assert_gt(stopper, 0);
	close(wake[1]);
	if ((waker = fork()) == 0) {
		end = now_ms() + 2000;
		while (now_ms() < end)
			if (state_of(stopper) == 'T' &&
			    kill(stopper, SIGCONT) == 0)
				conts++;
		_exit(write(count[1], &conts, sizeof conts) == sizeof conts
		          ? 0
		          : 1);
	}
	cr_assert_gt(waker, 0);
	close(count[1]);
	ag_start(&a);
	end = now_ms() + 2000;
	for (i = 1; now_ms() < end; i++) {
		sh_result(&a, (uint32_t)i, "true", &r);
		res_free(&r);
	}
	cr_assert_eq(read(count[0], &conts, sizeof conts), sizeof conts);
	waitpid(waker, NULL, 0);
	/* It stops once more after the last wake: then all its bytes are in. */
	while (state_of(stopper) != 'T')
		sleep_ms(1);
	fcntl(wake[0], F_SETFL, O_NONBLOCK);
	while (read(wake[0], &c, 1) == 1)
		woken++;
	kill(stopper, SIGKILL);
	waitpid(stopper, NULL, 0);
	close(wake[0]);
	close(count[0]);
	cr_expect_gt(i, 20, "only %d commands ran", i - 1);
	cr_expect_gt(conts, 20, "continued only %d times", conts);
	cr_expect_eq(woken, conts,
	    "woken %d times, continued %d times here: a sweep continued it",
	    woken, conts);
	ag_stop(&a);
	expect_no_leftovers();
}

/*
 * A tree of forks 10 deep (2047 processes at most, so that this machine
 * is safe), half of each level leaving the group with setsid, still
 * growing when KILL comes.
 */
Test(agent, kill_stops_a_fork_bomb)
{
	static const char bomb[] =
	    "n=$1; if [ \"$n\" -gt 0 ]; then "
	    "setsid /bin/sh -c \"$0\" \"$0\" $((n-1)) & "
	    "/bin/sh -c \"$0\" \"$0\" $((n-1)) & fi; exec sleep 1000";
	const char *argv[] = {"/bin/sh", "-c", bomb, bomb, "10", NULL};
	const char *t = tok("bomb");
	struct res r = {0};
	int before;
	struct ag a;

	ag_start(&a);
	ag_run(&a, 1, argv, NULL, NULL, t, 0);
	wait_started(&a, 1, &r);
	sleep_ms(150);
	before = token_procs(t, 0);
	cr_expect_gt(before, 10, "the bomb did not grow (%d)", before);
	ag_kill(&a, 1);
	cr_assert(collect(&a, 1, &r, 15000, 1));
	cr_expect_eq(r.exit.signal, SIGKILL);
	cr_expect_eq(token_wait_none(t, 3000), 0, "the bomb lives");
	sleep_ms(300);
	cr_expect_eq(token_procs(t, 0), 0, "the bomb grew again");
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

/*
 * A command that leaves a daemon (a session of its own) holding its
 * stdout: EXIT all the same.
 */
static void
run_leaving_one(struct ag *a, uint32_t id, const char *t)
{
	struct res r = {0};

	/* (Given the time to leave the session before the shell ends.) */
	ag_sh(a, id, "setsid sleep 1000 & sleep 0.3; echo up", t, 0);
	cr_assert(collect(a, id, &r, 10000, 1));
	cr_expect_str_eq(r.out, "up\n");
	cr_expect_eq(r.exit.exit_code, 0);
	cr_expect_lt(r.exit_ms - r.started_ms, 1000,
	    "EXIT %lld ms after STARTED",
	    (long long)(r.exit_ms - r.started_ms));
	res_free(&r);
}

static uint32_t
ag_sweep(struct ag *a, uint32_t id, const char *const *toks, size_t n)
{
	unsigned char *msg;
	struct msg m;
	size_t len;
	uint32_t v;

	msg = agent_sweep_encode(id, toks, n, &len);
	cr_assert_eq(ag_send(a, msg, &len), 0);
	cr_assert_eq(ag_next(a, &m, 10000), 1);
	cr_assert_eq(m.h.type, AGENT_SWEPT);
	cr_assert_eq(m.h.id, id);
	cr_assert_eq(agent_u32_decode(m.p, m.h.len, &v), 0);
	free(m.p);
	return v;
}

Test(agent, a_background_holder_of_stdout_gets_exit_within_a_second)
{
	const char *t = tok("holder");
	struct ag a;

	ag_start(&a);
	run_leaving_one(&a, 1, t);
	cr_expect_eq(token_wait_count(t, 1), 1);
	cr_expect_eq(ag_sweep(&a, 2, &t, 1), 1);
	ag_stop(&a);
	expect_no_leftovers();
}

/* What a command leaves in its own session dies with it. */
Test(agent, background_jobs_die_with_the_command)
{
	const char *t = tok("jobs");
	struct res r = {0};
	struct ag a;

	ag_start(&a);
	ag_sh(&a, 1, "sleep 1000 & sleep 1001 & echo up", t, 0);
	cr_assert(collect(&a, 1, &r, 10000, 1));
	cr_expect_str_eq(r.out, "up\n");
	cr_expect_eq(r.exit.exit_code, 0);
	cr_expect_eq(
	    token_wait_none(t, 2000), 0, "a background job outlived it");
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, sweep_by_token)
{
	const char *ta = tok("sweep-a"), *tb = tok("sweep-b");
	const char *tc = tok("sweep-c"), *unused = tok("sweep-unused");
	const char *toks[] = {ta, tb, unused};
	struct res r = {0};
	struct ag a;

	ag_start(&a);
	run_leaving_one(&a, 1, ta);
	run_leaving_one(&a, 2, tb);
	ag_sh(&a, 3, "exec sleep 1000", tc, 0);
	wait_started(&a, 3, &r);
	cr_expect_eq(ag_sweep(&a, 10, toks, 3), 2);
	cr_expect_eq(token_wait_none(ta, 2000), 0);
	cr_expect_eq(token_wait_none(tb, 2000), 0);
	/* The others' token is not its. */
	cr_expect_eq(token_procs(tc, 0), 1);
	cr_expect_eq(ag_sweep(&a, 11, &unused, 1), 0);
	/* A sweep is not a KILL: the command is killed, and ends as usual. */
	cr_expect_eq(ag_sweep(&a, 12, &tc, 1), 1);
	cr_assert(collect(&a, 3, &r, 5000, 1));
	cr_expect_eq(r.exit.signal, SIGKILL);
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, rusage_cpu_time)
{
	const char *argv[] = {PYTHON, "-c",
	    "import time\nt = time.process_time()\n"
	    "while time.process_time() - t < 0.4:\n"
	    "    sum(range(100000))\n",
	    NULL};
	struct res r = {0};
	struct ag a;

	if (access(PYTHON, X_OK) != 0)
		cr_skip_test("no " PYTHON);
	ag_start(&a);
	ag_run(&a, 1, argv, NULL, NULL, tok("cpu"), 0);
	cr_assert(collect(&a, 1, &r, 20000, 1));
	cr_expect_eq(r.exit.exit_code, 0, "%s", r.err ? r.err : "");
	cr_expect_gt(r.exit.user_us, 200000, "user_us %llu",
	    (unsigned long long)r.exit.user_us);
	cr_expect_gt(r.exit.user_us + r.exit.sys_us, 390000);
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, rusage_maxrss)
{
	const char *argv[] = {PYTHON, "-c", "b = b'x' * (64 << 20)", NULL};
	struct res r = {0};
	struct ag a;

	if (access(PYTHON, X_OK) != 0)
		cr_skip_test("no " PYTHON);
	ag_start(&a);
	ag_run(&a, 1, argv, NULL, NULL, tok("rss"), 0);
	cr_assert(collect(&a, 1, &r, 20000, 1));
	cr_expect_eq(r.exit.exit_code, 0, "%s", r.err ? r.err : "");
	cr_expect_gt(r.exit.maxrss_kb, 60000, "maxrss_kb %llu",
	    (unsigned long long)r.exit.maxrss_kb);
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, eof_kills_the_commands_and_the_agent_exits)
{
	const char *t = tok("eof");
	struct res r1 = {0}, r2 = {0};
	struct ag a;

	ag_start(&a);
	ag_sh(&a, 1, "setsid sleep 1000 & exec sleep 1000", t, 0);
	ag_sh(&a, 2, "exec sleep 1000", t, 1);
	wait_started(&a, 1, &r1);
	wait_started(&a, 2, &r2);
	cr_expect_eq(token_wait_count(t, 3), 3);
	ag_stop(&a); /* exits with 0 */
	cr_expect_eq(token_wait_none(t, 2000), 0);
	res_free(&r1);
	res_free(&r2);
	expect_no_leftovers();
}

/* The agent exits (1, no signal) after what it was sent. */
static void
expect_dropped(struct ag *a, const char *what)
{
	int status = ag_wait(a, 5000);

	cr_assert_neq(status, -1, "%s: the agent goes on", what);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 1,
	    "%s: status %#x", what, status);
	close(a->to);
	close(a->from);
	agent_reader_clear(&a->rd);
	live = NULL;
	reap_all();
}

Test(agent, garbage_makes_the_agent_exit_and_kill_its_commands)
{
	const char *t = tok("garbage");
	unsigned char junk[256];
	struct res r = {0};
	struct ag a;
	size_t i;

	srand(4242);
	for (i = 0; i < sizeof junk; i++)
		junk[i] = (unsigned char)rand();
	junk[0] = 0xff; /* no type of the protocol's */
	ag_start(&a);
	ag_sh(&a, 1, "exec sleep 1000", t, 0);
	wait_started(&a, 1, &r);
	ag_send_raw(&a, junk, sizeof junk);
	expect_dropped(&a, "random bytes");
	cr_expect_eq(token_wait_none(t, 2000), 0);
	res_free(&r);
	expect_no_leftovers();
}

Test(agent, bad_messages_make_the_agent_exit)
{
	unsigned char m[64], f[32];
	struct agent_hdr h;
	struct ag a;
	size_t n;

#define HDR(ty, fl, ln, ident)                                                 \
	do {                                                                   \
		h = (struct agent_hdr){                                        \
		    .type = (ty), .flags = (fl), .len = (ln), .id = (ident)};  \
		agent_hdr_encode(&h, m);                                       \
	} while (0)
#define CASE(what, len)                                                        \
	do {                                                                   \
		ag_start(&a);                                                  \
		ag_send_raw(&a, m, (len));                                     \
		expect_dropped(&a, what);                                      \
	} while (0)
	HDR(99, 0, 0, 1);
	CASE("an unknown type", AGENT_HDR_LEN);
	HDR(AGENT_HELLO, 0, 16, 0);
	memset(m + AGENT_HDR_LEN, 0, 16);
	CASE("a HELLO from the worker", AGENT_HDR_LEN + 16);
	HDR(AGENT_INPUT, AGENT_F_STDOUT, 0, 1);
	CASE("INPUT with OUT's flag", AGENT_HDR_LEN);
	HDR(AGENT_CREDIT, 0, 3, 1);
	CASE("a CREDIT of 3 bytes", AGENT_HDR_LEN + 3);
	HDR(AGENT_KILL, 0, 1, 1);
	CASE("a KILL with a payload", AGENT_HDR_LEN + 1);
	/* ARG "a\0b" */
	n = 0;
	f[n++] = 0;
	f[n++] = AGENT_FIELD_ARG;
	f[n++] = 0;
	f[n++] = 0;
	f[n++] = 0;
	f[n++] = 3;
	memcpy(f + n, "a\0b", 3);
	n += 3;
	HDR(AGENT_RUN, 0, (uint32_t)n, 1);
	memcpy(m + AGENT_HDR_LEN, f, n);
	CASE("a RUN with a NUL in an argument", AGENT_HDR_LEN + n);
	f[7] = 'b';
	HDR(AGENT_RUN, 0, (uint32_t)n, 0);
	memcpy(m + AGENT_HDR_LEN, f, n);
	CASE("a RUN of id 0", AGENT_HDR_LEN + n);
	f[1] = AGENT_FIELD_TOKEN;
	f[5] = 0;
	HDR(AGENT_SWEEP, 0, 6, 1);
	memcpy(m + AGENT_HDR_LEN, f, 6);
	CASE("a SWEEP of an empty token", AGENT_HDR_LEN + 6);
#undef CASE
#undef HDR
}

Test(agent, at_most_128_commands)
{
	const char *t = tok("many");
	struct res r = {0};
	struct msg m;
	uint32_t id;
	int started = 0;
	struct ag a;

	ag_start(&a);
	for (id = 1; id <= 128; id++)
		ag_sh(&a, id, "exec sleep 1000", t, 0);
	while (started < 128) {
		cr_assert_eq(ag_next(&a, &m, 20000), 1, "%d started", started);
		cr_assert_eq(m.h.type, AGENT_STARTED, "type %u for %u",
		    m.h.type, m.h.id);
		started++;
		free(m.p);
	}
	ag_sh(&a, 129, "exec sleep 1000", t, 0);
	expect_refused(&a, 129, "too many commands");
	ag_sh(&a, 5, "exec sleep 1000", t, 0);
	expect_refused(&a, 5, "command 5 is running already");
	cr_expect_eq(token_wait_count(t, 128), 128);
	/* One ends: there is room for one more. */
	ag_kill(&a, 7);
	cr_assert(collect(&a, 7, &r, 5000, 1));
	cr_expect_eq(r.exit.signal, SIGKILL);
	res_free(&r);
	ag_sh(&a, 129, "exec sleep 1000", t, 0);
	wait_started(&a, 129, &r);
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, a_duplicate_id_is_refused_and_the_first_goes_on)
{
	const char *t = tok("dup");
	struct res r = {0};
	struct ag a;

	ag_start(&a);
	ag_sh(&a, 1, "exec sleep 1000", t, 0);
	wait_started(&a, 1, &r);
	res_free(&r);
	ag_sh(&a, 1, "echo second", t, 0);
	expect_refused(&a, 1, "command 1 is running already");
	cr_expect_eq(token_wait_count(t, 1), 1);
	ag_kill(&a, 1);
	r.started = 1; /* the first one's */
	cr_assert(collect(&a, 1, &r, 5000, 1));
	cr_expect_eq(r.exit.signal, SIGKILL);
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

Test(agent, late_messages_for_ended_commands_are_ignored)
{
	const char *t = tok("late");
	struct res r;
	struct msg m;
	struct ag a;

	ag_start(&a);
	sh_result(&a, 1, "echo one", &r);
	res_free(&r);
	ag_input(&a, 1, "x", 1, 1);
	ag_u32(&a, AGENT_CREDIT, 1, 100);
	ag_kill(&a, 1);
	ag_input(&a, 999, "x", 1, 0);
	ag_u32(&a, AGENT_CREDIT, 999, 100);
	ag_kill(&a, 999);
	cr_expect_eq(ag_next(&a, &m, 300), 0, "an answer to a late message");
	memset(&r, 0, sizeof r);
	ag_sh(&a, 2, "echo two", t, 0);
	cr_assert(collect(&a, 2, &r, 10000, 1));
	cr_expect_str_eq(r.out, "two\n");
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
}

/*
 * Connections (relay.c): the test is the worker on the pipes, and a
 * real TCP client of the agent's listener, or the server it dials, on
 * 127.0.0.1.
 */

/* How many descriptors the test has open. */
static int
fd_count(void)
{
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	cr_assert_not_null(d);
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* The next message, which must be a type for id; freed by the caller. */
static void
ag_expect(struct ag *a, struct msg *m, uint16_t type, uint32_t id)
{
	cr_assert_eq(
	    ag_next(a, m, 10000), 1, "no message (type %u for %u)", type, id);
	cr_assert_eq(m->h.type, type, "type %u for %u, not %u for %u",
	    m->h.type, m->h.id, type, id);
	cr_assert_eq(m->h.id, id, "type %u for %u, not %u", type, m->h.id, id);
}

/* LISTEN: the port listened on (nonzero), and no why. */
static uint32_t
ag_listen(struct ag *a, uint32_t port)
{
	char why[AGENT_MAX_ERROR + 1];
	struct msg m;
	uint32_t got;

	ag_u32(a, AGENT_LISTEN, 0, port);
	ag_expect(a, &m, AGENT_LISTENING, 0);
	cr_assert_eq(agent_listening_decode(m.p, m.h.len, &got, why), 0);
	cr_assert_neq(got, 0, "LISTENING 0: %s", why);
	free(m.p);
	return got;
}

static void
ag_data(struct ag *a, uint32_t conn, const void *p, size_t n, int eof)
{
	size_t len, k;
	unsigned char *m;

	do {
		k = n < AGENT_DATA_CHUNK ? n : AGENT_DATA_CHUNK;
		m = agent_msg_new(AGENT_DATA, eof && k == n ? AGENT_F_EOF : 0,
		    conn, p, k, &len);
		cr_assert_eq(ag_send(a, m, &len), 0);
		p = (const char *)p + k;
		n -= k;
	} while (n > 0);
}

static void
ag_close(struct ag *a, uint32_t conn, const char *why)
{
	size_t len;
	unsigned char *m = agent_close_encode(conn, why, &len);

	cr_assert_eq(ag_send(a, m, &len), 0);
}

static struct sockaddr_in
loopback(uint32_t port)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)port);
	return sin;
}

static uint32_t
local_port(int fd)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof sin;

	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sin, &sl), 0);
	return ntohs(sin.sin_port);
}

/* A connected client of 127.0.0.1:port (rcvbuf: its SO_RCVBUF, or 0). */
static int
tcp_connect(uint32_t port, int rcvbuf)
{
	struct sockaddr_in sin = loopback(port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	if (rcvbuf > 0)
		cr_assert_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
		                 sizeof rcvbuf),
		    0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof sin), 0,
	    "connect 127.0.0.1:%u: %s", port, strerror(errno));
	return fd;
}

/* A listening socket on 127.0.0.1, any port (*port). */
static int
tcp_listener(uint32_t *port)
{
	struct sockaddr_in sin = loopback(0);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sin, sizeof sin), 0);
	cr_assert_eq(listen(fd, 16), 0);
	*port = local_port(fd);
	return fd;
}

/* A port of 127.0.0.1 that nothing listens on (as far as one can tell). */
static uint32_t
closed_port(void)
{
	uint32_t port;
	int fd = tcp_listener(&port);

	close(fd);
	return port;
}

static int
tcp_accept(int lfd)
{
	struct pollfd pfd = {.fd = lfd, .events = POLLIN};
	int fd;

	cr_assert_eq(poll(&pfd, 1, 10000), 1, "no connection to accept");
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	cr_assert_geq(fd, 0);
	return fd;
}

/* A read of fd within ms: its bytes, 0 at EOF, -1 (errno) on error. */
static ssize_t
read_within(int fd, void *buf, size_t n, int ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	if (poll(&pfd, 1, ms) != 1) {
		errno = ETIMEDOUT;
		return -1;
	}
	return read(fd, buf, n);
}

/* Exactly n bytes from fd. */
static void
read_exact(int fd, void *buf, size_t n)
{
	size_t got = 0;
	ssize_t k;

	while (got < n) {
		k = read_within(fd, (char *)buf + got, n - got, 10000);
		cr_assert_gt(k, 0, "%zu of %zu bytes, then %s", got, n,
		    k == 0 ? "EOF" : strerror(errno));
		got += (size_t)k;
	}
}

static void
write_all(int fd, const void *p, size_t n)
{
	ssize_t k;

	while (n > 0) {
		k = write(fd, p, n);
		cr_assert_gt(k, 0, "write: %s", strerror(errno));
		p = (const char *)p + k;
		n -= (size_t)k;
	}
}

/* Whether the peer closed fd: EOF, or a reset, within ms. */
static int
closed_within(int fd, int ms)
{
	char c;
	ssize_t k = read_within(fd, &c, 1, ms);

	return k == 0 || (k == -1 && errno == ECONNRESET);
}

/* A client of the agent's proxy port, and its ACCEPT: the conn's id. */
static uint32_t
ag_accept(struct ag *a, uint32_t port, int *client, int rcvbuf)
{
	struct msg m;
	uint32_t id, peer;

	*client = tcp_connect(port, rcvbuf);
	cr_assert_eq(ag_next(a, &m, 10000), 1, "no ACCEPT");
	cr_assert_eq(m.h.type, AGENT_ACCEPT, "type %u", m.h.type);
	id = m.h.id;
	cr_assert(id & AGENT_CONN_AGENT, "ACCEPT of id %#x", id);
	cr_assert_eq(agent_u32_decode(m.p, m.h.len, &peer), 0);
	cr_expect_eq(peer, local_port(*client));
	free(m.p);
	return id;
}

/* DATA for conn until n bytes came into buf, each ACKed at once if ack. */
static void
recv_data(struct ag *a, uint32_t conn, char *buf, size_t n, int ack)
{
	size_t got = 0;
	struct msg m;

	while (got < n) {
		ag_expect(a, &m, AGENT_DATA, conn);
		cr_assert_eq(m.h.flags, 0, "DATA EOF after %zu of %zu bytes",
		    got + m.h.len, n);
		cr_assert_leq(got + m.h.len, n, "more DATA than sent");
		memcpy(buf + got, m.p, m.h.len);
		got += m.h.len;
		if (ack)
			ag_u32(a, AGENT_ACK, conn, m.h.len);
		free(m.p);
	}
}

/* The next message is conn's DATA EOF (empty). */
static void
recv_eof(struct ag *a, uint32_t conn)
{
	struct msg m;

	ag_expect(a, &m, AGENT_DATA, conn);
	cr_expect_eq(m.h.flags, AGENT_F_EOF, "DATA, not its EOF");
	cr_expect_eq(m.h.len, 0, "a DATA EOF with bytes");
	free(m.p);
}

/* ACKs for conn until n bytes in all. */
static void
recv_acks(struct ag *a, uint32_t conn, size_t n)
{
	size_t got = 0;
	struct msg m;
	uint32_t v;

	while (got < n) {
		ag_expect(a, &m, AGENT_ACK, conn);
		cr_assert_eq(agent_u32_decode(m.p, m.h.len, &v), 0);
		got += v;
		free(m.p);
	}
	cr_assert_eq(got, n, "ACKs for %zu of %zu bytes", got, n);
}

/* No message at all within ms. */
static void
expect_quiet(struct ag *a, int ms, const char *what)
{
	struct msg m;
	int got = ag_next(a, &m, ms);

	if (got == 1)
		free(m.p);
	cr_expect_eq(got, 0, "%s: type %u for %u", what,
	    got == 1 ? m.h.type : 0, got == 1 ? m.h.id : 0);
}

/* The agent still answers (a LISTEN of port). */
static void
expect_alive(struct ag *a, uint32_t port)
{
	cr_expect_eq(ag_listen(a, port), port);
}

Test(agent, listen_answers_with_a_port_and_a_taken_one_gives_another)
{
	uint32_t p0, p1, taken, free_port;
	int fds = fd_count(), hold;
	struct ag a;

	ag_start(&a);
	p0 = ag_listen(&a, 0);
	cr_expect_gt(p0, 0);
	/* A port taken already: any free one. */
	hold = tcp_listener(&taken);
	p1 = ag_listen(&a, taken);
	cr_expect_neq(p1, taken);
	close(hold);
	/* A free one: that one. */
	free_port = closed_port();
	cr_expect_eq(ag_listen(&a, free_port), free_port);
	ag_stop(&a);
	cr_expect_eq(fd_count(), fds, "descriptors left");
}

Test(agent, a_second_listen_replaces_the_first_and_connections_stay)
{
	uint32_t p0, p1, id;
	struct sockaddr_in sin;
	int fds = fd_count(), c, probe;
	char buf[16];
	struct ag a;

	ag_start(&a);
	p0 = ag_listen(&a, 0);
	id = ag_accept(&a, p0, &c, 0);
	p1 = ag_listen(&a, 0);
	/* The first port is no longer listened on. */
	sin = loopback(p0);
	probe = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(probe, 0);
	cr_expect_eq(connect(probe, (struct sockaddr *)&sin, sizeof sin), -1);
	cr_expect_eq(errno, ECONNREFUSED);
	close(probe);
	/* Its connection goes on. */
	write_all(c, "still", 5);
	recv_data(&a, id, buf, 5, 1);
	cr_expect_arr_eq(buf, "still", 5);
	ag_data(&a, id, "here", 4, 0);
	read_exact(c, buf, 4);
	cr_expect_arr_eq(buf, "here", 4);
	recv_acks(&a, id, 4);
	close(c);
	recv_eof(&a, id);
	ag_close(&a, id, NULL);
	/* The new one takes connections. */
	cr_expect_neq(ag_accept(&a, p1, &c, 0), id);
	close(c);
	ag_stop(&a);
	cr_expect_eq(fd_count(), fds, "descriptors left");
}

Test(agent, an_accepted_connection_relays_bytes_both_ways)
{
	static const char big[] = "0123456789abcdefghijklmnopqrstuvwxyz";
	static char buf[AGENT_CONN_WINDOW + 1000];
	size_t n = sizeof buf, i;
	char *out = malloc(n);
	int fds = fd_count(), c;
	uint32_t port, id;
	struct ag a;

	cr_assert_not_null(out);
	for (i = 0; i < n; i++)
		out[i] = big[i % (sizeof big - 1)];
	ag_start(&a);
	port = ag_listen(&a, 0);
	id = ag_accept(&a, port, &c, 0);
	write_all(c, "hello", 5);
	recv_data(&a, id, buf, 5, 1);
	cr_expect_arr_eq(buf, "hello", 5);
	ag_data(&a, id, "world", 5, 0);
	read_exact(c, buf, 5);
	cr_expect_arr_eq(buf, "world", 5);
	recv_acks(&a, id, 5);
	/* More than a chunk and a window's worth, the worker's way. */
	ag_data(&a, id, out, AGENT_CONN_WINDOW, 0);
	read_exact(c, buf, AGENT_CONN_WINDOW);
	cr_expect_arr_eq(buf, out, AGENT_CONN_WINDOW);
	recv_acks(&a, id, AGENT_CONN_WINDOW);
	/* And the client's. */
	write_all(c, out, n);
	recv_data(&a, id, buf, n, 1);
	cr_expect_arr_eq(buf, out, n);
	close(c);
	free(out);
	ag_stop(&a);
	cr_expect_eq(fd_count(), fds, "descriptors left");
}

Test(agent, never_more_data_than_the_window)
{
	size_t total = 1024 * 1024, pushed = 0, got = 0, maxchunk = 0, i;
	char *out = malloc(total), *in = malloc(total);
	int fds = fd_count(), c, r;
	uint32_t port, id;
	struct msg m;
	ssize_t k;
	struct ag a;

	cr_assert(out != NULL && in != NULL);
	for (i = 0; i < total; i++)
		out[i] = (char)(i * 7 + i / 4096);
	ag_start(&a);
	port = ag_listen(&a, 0);
	id = ag_accept(&a, port, &c, 0);
	cr_assert_eq(fcntl(c, F_SETFL, O_NONBLOCK), 0);
	/* The client writes what it can; the worker ACKs nothing yet. */
	for (;;) {
		if (pushed < total &&
		    (k = write(c, out + pushed, total - pushed)) > 0)
			pushed += (size_t)k;
		if ((r = ag_next(&a, &m, got < AGENT_CONN_WINDOW ? 50 : 500)) ==
		    0) {
			if (got >= AGENT_CONN_WINDOW)
				break;
			continue;
		}
		cr_assert_eq(r, 1);
		cr_assert_eq(m.h.type, AGENT_DATA, "type %u", m.h.type);
		cr_assert_eq(m.h.id, id);
		cr_assert_eq(m.h.flags, 0);
		cr_assert_leq(got + m.h.len, total);
		memcpy(in + got, m.p, m.h.len);
		got += m.h.len;
		if (m.h.len > maxchunk)
			maxchunk = m.h.len;
		free(m.p);
	}
	cr_expect_eq(got, AGENT_CONN_WINDOW, "%zu bytes without an ACK", got);
	cr_expect_leq(maxchunk, AGENT_DATA_CHUNK);
	/* An ACK of 100000: exactly that much more. */
	ag_u32(&a, AGENT_ACK, id, 100000);
	while (got < AGENT_CONN_WINDOW + 100000) {
		if (pushed < total &&
		    (k = write(c, out + pushed, total - pushed)) > 0)
			pushed += (size_t)k;
		if ((r = ag_next(&a, &m, 50)) == 0)
			continue;
		cr_assert_eq(r, 1);
		cr_assert_eq(m.h.type, AGENT_DATA);
		cr_assert_leq(got + m.h.len, AGENT_CONN_WINDOW + 100000,
		    "DATA past the ACK");
		memcpy(in + got, m.p, m.h.len);
		got += m.h.len;
		free(m.p);
	}
	expect_quiet(&a, 400, "DATA past the ACK");
	/* The rest, ACKed as it comes (and what came, now). */
	ag_u32(&a, AGENT_ACK, id, AGENT_CONN_WINDOW);
	while (got < total) {
		if (pushed < total &&
		    (k = write(c, out + pushed, total - pushed)) > 0)
			pushed += (size_t)k;
		if ((r = ag_next(&a, &m, 50)) == 0)
			continue;
		cr_assert_eq(r, 1);
		cr_assert_eq(m.h.type, AGENT_DATA);
		cr_assert_leq(got + m.h.len, total);
		memcpy(in + got, m.p, m.h.len);
		got += m.h.len;
		ag_u32(&a, AGENT_ACK, id, m.h.len);
		free(m.p);
	}
	cr_expect_arr_eq(in, out, total);
	close(c);
	free(in);
	free(out);
	ag_stop(&a);
	cr_expect_eq(fd_count(), fds, "descriptors left");
}

Test(agent, eof_each_way_half_closes_and_the_connection_ends_quietly)
{
	int fds = fd_count(), c;
	uint32_t port, id;
	char buf[64];
	struct ag a;

	ag_start(&a);
	port = ag_listen(&a, 0);
	/* The client's end first. */
	id = ag_accept(&a, port, &c, 0);
	write_all(c, "ask", 3);
	cr_assert_eq(shutdown(c, SHUT_WR), 0);
	recv_data(&a, id, buf, 3, 1);
	recv_eof(&a, id);
	cr_expect_arr_eq(buf, "ask", 3);
	/* The other way still flows. */
	ag_data(&a, id, "answer", 6, 0);
	read_exact(c, buf, 6);
	cr_expect_arr_eq(buf, "answer", 6);
	recv_acks(&a, id, 6);
	ag_data(&a, id, "!", 1, 1);
	read_exact(c, buf, 1);
	recv_acks(&a, id, 1);
	cr_expect(closed_within(c, 5000), "the client got no EOF");
	/* Both ways ended: gone without a CLOSE. */
	expect_quiet(&a, 300, "after both EOFs");
	close(c);
	expect_quiet(&a, 200, "after the client closed");
	/* The worker's end first. */
	id = ag_accept(&a, port, &c, 0);
	ag_data(&a, id, "", 0, 1);
	cr_expect(closed_within(c, 5000), "the client got no EOF");
	write_all(c, "late words", 10);
	recv_data(&a, id, buf, 10, 1);
	cr_expect_arr_eq(buf, "late words", 10);
	cr_assert_eq(shutdown(c, SHUT_WR), 0);
	recv_eof(&a, id);
	expect_quiet(&a, 300, "after both EOFs");
	close(c);
	/* What comes for it now is late. */
	ag_data(&a, id, "x", 1, 0);
	ag_u32(&a, AGENT_ACK, id, 10);
	ag_close(&a, id, "bye");
	expect_quiet(&a, 300, "an answer to a late message");
	expect_alive(&a, port);
	ag_stop(&a);
	cr_expect_eq(fd_count(), fds, "descriptors left");
}

Test(agent, close_from_the_worker_closes_the_client)
{
	int fds = fd_count(), c;
	uint32_t port, id;
	struct ag a;

	ag_start(&a);
	port = ag_listen(&a, 0);
	id = ag_accept(&a, port, &c, 0);
	ag_close(&a, id, "proxy refused");
	cr_expect(closed_within(c, 5000), "the client is still connected");
	close(c);
	expect_quiet(&a, 300, "an answer to CLOSE");
	/* With bytes held for it, too. */
	id = ag_accept(&a, port, &c, 0);
	write_all(c, "unread", 6);
	recv_data(&a, id, (char[8]){0}, 6, 0);
	ag_close(&a, id, "");
	cr_expect(closed_within(c, 5000), "the client is still connected");
	close(c);
	expect_quiet(&a, 300, "an answer to CLOSE");
	ag_stop(&a);
	cr_expect_eq(fd_count(), fds, "descriptors left");
}

Test(agent, a_client_reset_is_a_close)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	char why[AGENT_MAX_ERROR + 1];
	int fds = fd_count(), c;
	uint32_t port, id;
	struct msg m;
	struct ag a;

	ag_start(&a);
	port = ag_listen(&a, 0);
	id = ag_accept(&a, port, &c, 0);
	/* Bytes for it, held, then a reset. */
	ag_data(&a, id, "pending", 7, 0);
	recv_acks(&a, id, 7);
	cr_assert_eq(setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
	close(c);
	ag_expect(&a, &m, AGENT_CLOSE, id);
	cr_assert_eq(agent_close_decode(m.p, m.h.len, why), 0);
	cr_expect_neq(why[0], '\0', "a CLOSE without why");
	cr_expect(strstr(why, "reset") != NULL, "why: %s", why);
	free(m.p);
	/* Gone: what comes for it is late. */
	ag_data(&a, id, "x", 1, 0);
	expect_quiet(&a, 300, "an answer to a late DATA");
	expect_alive(&a, port);
	ag_stop(&a);
	cr_expect_eq(fd_count(), fds, "descriptors left");
}

Test(agent, dial_opens_a_connection_and_relays_it)
{
	int fds = fd_count(), l, s;
	uint32_t port;
	char buf[64];
	struct msg m;
	struct ag a;

	ag_start(&a);
	l = tcp_listener(&port);
	ag_u32(&a, AGENT_DIAL, 5, port);
	ag_expect(&a, &m, AGENT_OPENED, 5);
	cr_expect_eq(m.h.len, 0);
	free(m.p);
	s = tcp_accept(l);
	write_all(s, "banner", 6);
	recv_data(&a, 5, buf, 6, 1);
	cr_expect_arr_eq(buf, "banner", 6);
	ag_data(&a, 5, "request", 7, 1);
	read_exact(s, buf, 7);
	cr_expect_arr_eq(buf, "request", 7);
	recv_acks(&a, 5, 7);
	cr_expect(closed_within(s, 5000), "no EOF at the server");
	cr_assert_eq(shutdown(s, SHUT_WR), 0);
	recv_eof(&a, 5);
	expect_quiet(&a, 300, "after both EOFs");
	close(s);
	/* Gone: its id may be dialled again; a CLOSE ends it. */
	ag_u32(&a, AGENT_DIAL, 5, port);
	ag_expect(&a, &m, AGENT_OPENED, 5);
	free(m.p);
	s = tcp_accept(l);
	ag_close(&a, 5, NULL);
	cr_expect(closed_within(s, 5000), "the server is still connected");
	close(s);
	close(l);
	expect_quiet(&a, 300, "an answer to CLOSE");
	ag_stop(&a);
	cr_expect_eq(fd_count(), fds, "descriptors left");
}

Test(agent, dial_to_a_closed_port_is_a_close_naming_it)
{
	char why[AGENT_MAX_ERROR + 1], want[128];
	int fds = fd_count();
	uint32_t port = closed_port();
	struct msg m;
	struct ag a;

	ag_start(&a);
	ag_u32(&a, AGENT_DIAL, 9, port);
	ag_expect(&a, &m, AGENT_CLOSE, 9);
	cr_assert_eq(agent_close_decode(m.p, m.h.len, why), 0);
	free(m.p);
	snprintf(want, sizeof want, "connect 127.0.0.1:%u: Connection refused",
	    port);
	cr_expect_str_eq(why, want);
	/* Gone: the same id again, and late messages for it. */
	ag_data(&a, 9, "x", 1, 0);
	ag_u32(&a, AGENT_ACK, 9, 1);
	ag_u32(&a, AGENT_DIAL, 9, port);
	ag_expect(&a, &m, AGENT_CLOSE, 9);
	free(m.p);
	ag_stop(&a);
	cr_expect_eq(fd_count(), fds, "descriptors left");
}

Test(agent, at_most_128_connections)
{
	int fds = fd_count(), c[AGENT_MAX_CONNS + 2], i, j, extra;
	uint32_t ids[AGENT_MAX_CONNS], port;
	char why[AGENT_MAX_ERROR + 1];
	struct msg m;
	struct ag a;

	ag_start(&a);
	port = ag_listen(&a, 0);
	for (i = 0; i < AGENT_MAX_CONNS; i++) {
		ids[i] = ag_accept(&a, port, &c[i], 0);
		for (j = 0; j < i; j++)
			cr_assert_neq(ids[i], ids[j], "an id given twice");
	}
	/* Past the bound: accepted and closed at once, no ACCEPT. */
	for (extra = AGENT_MAX_CONNS; extra < AGENT_MAX_CONNS + 2; extra++) {
		c[extra] = tcp_connect(port, 0);
		cr_expect(closed_within(c[extra], 5000),
		    "connection %d is open", extra);
		close(c[extra]);
	}
	expect_quiet(&a, 300, "an ACCEPT past the bound");
	/* A DIAL too. */
	ag_u32(&a, AGENT_DIAL, 1, port);
	ag_expect(&a, &m, AGENT_CLOSE, 1);
	cr_assert_eq(agent_close_decode(m.p, m.h.len, why), 0);
	cr_expect_str_eq(why, "too many connections");
	free(m.p);
	/* One ends: there is room for one more, with an id not in use. */
	ag_close(&a, ids[7], "");
	cr_expect(closed_within(c[7], 5000));
	close(c[7]);
	ids[7] = ag_accept(&a, port, &c[7], 0);
	for (j = 0; j < AGENT_MAX_CONNS; j++)
		cr_assert(j == 7 || ids[j] != ids[7], "an id in use given");
	/* They all still work. */
	write_all(c[AGENT_MAX_CONNS - 1], "z", 1);
	recv_data(&a, ids[AGENT_MAX_CONNS - 1], why, 1, 1);
	for (i = 0; i < AGENT_MAX_CONNS; i++)
		close(c[i]);
	ag_stop(&a);
	cr_expect_eq(fd_count(), fds, "descriptors left");
}

/*
 * DATA past the window the agent gave: the client never reads, so that
 * the agent's socket fills and what the worker sends stays held; then
 * one byte past the window.
 */
Test(agent, data_beyond_the_window_makes_the_agent_exit)
{
	size_t sent = 0, acked = 0, k, limit = (size_t)64 << 20;
	static char chunk[AGENT_DATA_CHUNK];
	int fds = fd_count(), c, r;
	uint32_t port, id, v;
	struct msg m;
	struct ag a;

	ag_start(&a);
	port = ag_listen(&a, 0);
	id = ag_accept(&a, port, &c, 4096);
	for (;;) {
		cr_assert_lt(sent, limit, "the agent's socket never filled");
		while (sent - acked < AGENT_CONN_WINDOW) {
			k = AGENT_CONN_WINDOW - (sent - acked);
			if (k > sizeof chunk)
				k = sizeof chunk;
			ag_data(&a, id, chunk, k, 0);
			sent += k;
		}
		if ((r = ag_next(&a, &m, 500)) == 0)
			break; /* full: nothing is written any more */
		cr_assert_eq(r, 1);
		cr_assert_eq(m.h.type, AGENT_ACK, "type %u", m.h.type);
		cr_assert_eq(agent_u32_decode(m.p, m.h.len, &v), 0);
		acked += v;
		free(m.p);
	}
	cr_assert_eq(sent - acked, AGENT_CONN_WINDOW);
	ag_data(&a, id, "x", 1, 0);
	expect_dropped(&a, "DATA past the window");
	close(c);
	cr_expect_eq(fd_count(), fds, "descriptors left");
}

Test(agent, late_connection_messages_are_dropped)
{
	int fds = fd_count();
	uint32_t port;
	struct ag a;

	ag_start(&a);
	port = ag_listen(&a, 0);
	ag_data(&a, 77, "x", 1, 0);
	ag_data(&a, AGENT_CONN_AGENT | 77, "y", 1, 1);
	ag_u32(&a, AGENT_ACK, 78, 100);
	ag_close(&a, 79, "gone");
	ag_close(&a, AGENT_CONN_AGENT | 1, NULL);
	expect_quiet(&a, 300, "an answer to a late message");
	expect_alive(&a, port);
	ag_stop(&a);
	cr_expect_eq(fd_count(), fds, "descriptors left");
}

Test(agent, bad_connection_messages_make_the_agent_exit)
{
	unsigned char m[64];
	struct agent_hdr h;
	uint32_t port;
	struct ag a;
	int l;

#define HDR(ty, fl, ln, ident)                                                 \
	do {                                                                   \
		h = (struct agent_hdr){                                        \
		    .type = (ty), .flags = (fl), .len = (ln), .id = (ident)};  \
		agent_hdr_encode(&h, m);                                       \
	} while (0)
#define U32(v)                                                                 \
	do {                                                                   \
		m[AGENT_HDR_LEN] = (unsigned char)((v) >> 24);                 \
		m[AGENT_HDR_LEN + 1] = (unsigned char)((v) >> 16);             \
		m[AGENT_HDR_LEN + 2] = (unsigned char)((v) >> 8);              \
		m[AGENT_HDR_LEN + 3] = (unsigned char)(v);                     \
	} while (0)
#define CASE(what, len)                                                        \
	do {                                                                   \
		ag_start(&a);                                                  \
		ag_send_raw(&a, m, (len));                                     \
		expect_dropped(&a, what);                                      \
	} while (0)
	HDR(AGENT_DATA, 0, 1, 0);
	m[AGENT_HDR_LEN] = 'x';
	CASE("DATA of id 0", AGENT_HDR_LEN + 1);
	HDR(AGENT_ACK, 0, 4, 0);
	U32(1);
	CASE("ACK of id 0", AGENT_HDR_LEN + 4);
	HDR(AGENT_CLOSE, 0, 0, 0);
	CASE("CLOSE of id 0", AGENT_HDR_LEN);
	HDR(AGENT_ACK, 0, 2, 3);
	CASE("an ACK of 2 bytes", AGENT_HDR_LEN + 2);
	HDR(AGENT_CLOSE, 0, 3, 3);
	memcpy(m + AGENT_HDR_LEN, "a\0b", 3);
	CASE("a CLOSE with a NUL in its why", AGENT_HDR_LEN + 3);
	HDR(AGENT_DIAL, 0, 4, 3);
	U32(0);
	CASE("a DIAL of port 0", AGENT_HDR_LEN + 4);
	U32(65536);
	CASE("a DIAL of port 65536", AGENT_HDR_LEN + 4);
	HDR(AGENT_DIAL, 0, 4, 0);
	U32(80);
	CASE("a DIAL of id 0", AGENT_HDR_LEN + 4);
	HDR(AGENT_DIAL, 0, 4, AGENT_CONN_AGENT | 3);
	U32(80);
	CASE("a DIAL of an agent's id", AGENT_HDR_LEN + 4);
	HDR(AGENT_DIAL, 0, 0, 3);
	CASE("an empty DIAL", AGENT_HDR_LEN);
	HDR(AGENT_LISTEN, 0, 4, 0);
	U32(65536);
	CASE("a LISTEN of port 65536", AGENT_HDR_LEN + 4);
	HDR(AGENT_LISTEN, 0, 4, 1);
	U32(0);
	CASE("a LISTEN of id 1", AGENT_HDR_LEN + 4);
	/* A DIAL of an id in use. */
	l = tcp_listener(&port);
	ag_start(&a);
	ag_u32(&a, AGENT_DIAL, 3, port);
	{
		struct msg r;

		ag_expect(&a, &r, AGENT_OPENED, 3);
		free(r.p);
	}
	ag_u32(&a, AGENT_DIAL, 3, port);
	expect_dropped(&a, "a DIAL of an id in use");
	/* DATA after the worker's EOF. */
	ag_start(&a);
	ag_u32(&a, AGENT_DIAL, 4, port);
	{
		struct msg r;

		ag_expect(&a, &r, AGENT_OPENED, 4);
		free(r.p);
	}
	ag_data(&a, 4, "", 0, 1);
	ag_data(&a, 4, "more", 4, 0);
	expect_dropped(&a, "DATA after EOF");
	close(l);
#undef CASE
#undef U32
#undef HDR
}

/* A command in the sandbox is the proxy's client (as curl would be). */
Test(agent, a_command_connects_to_the_proxy_port)
{
	char script[512], buf[64];
	struct res r = {0};
	uint32_t port, id = 0;
	int fds = fd_count();
	struct msg m;
	struct ag a;

	if (access(PYTHON, X_OK) != 0)
		cr_skip_test("no " PYTHON);
	ag_start(&a);
	port = ag_listen(&a, 0);
	snprintf(script, sizeof script,
	    "import socket\n"
	    "s = socket.create_connection(('127.0.0.1', %u))\n"
	    "s.sendall(b'CONNECT x:443')\n"
	    "s.shutdown(socket.SHUT_WR)\n"
	    "print(s.makefile('rb').read().decode())\n",
	    port);
	{
		const char *argv[] = {PYTHON, "-c", script, NULL};

		ag_run(&a, 1, argv, NULL, NULL, tok("proxy"), 0);
	}
	/* Messages of both kinds, in whatever order. */
	while (!r.exited) {
		cr_assert_eq(ag_next(&a, &m, 20000), 1);
		if (m.h.type == AGENT_ACCEPT)
			id = m.h.id;
		else if (m.h.type == AGENT_DATA && (m.h.flags & AGENT_F_EOF)) {
			cr_assert_eq(m.h.id, id);
			ag_data(&a, id, "200 OK", 6, 1);
		} else if (m.h.type == AGENT_DATA) {
			cr_assert_eq(m.h.id, id);
			cr_assert_lt(m.h.len, sizeof buf);
			memcpy(buf, m.p, m.h.len);
			buf[m.h.len] = '\0';
			cr_expect_str_eq(buf, "CONNECT x:443");
			ag_u32(&a, AGENT_ACK, id, m.h.len);
		} else if (m.h.type != AGENT_ACK)
			res_take(&a, &r, 1, &m, 1);
		free(m.p);
	}
	cr_expect_neq(id, 0, "no ACCEPT");
	cr_expect_eq(r.exit.exit_code, 0, "%s", r.err ? r.err : "");
	cr_expect_str_eq(r.out, "200 OK\n");
	res_free(&r);
	ag_stop(&a);
	expect_no_leftovers();
	cr_expect_eq(fd_count(), fds, "descriptors left");
}
