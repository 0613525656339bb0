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
#include <sys/types.h>
#include <sys/wait.h>

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
	cr_assert_eq(token_procs(t, 0), 2);
	ag_kill(&a, 1);
	cr_assert(collect(&a, 1, &r, 5000, 1));
	cr_expect_eq(r.exit.signal, SIGKILL);
	cr_expect_eq(token_wait_none(t, 2000), 0, "the daemon lives");
	res_free(&r);
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
	cr_expect_eq(token_procs(t, 0), 1);
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
	sleep_ms(100);
	cr_expect_eq(token_procs(t, 0), 3);
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
	cr_expect_eq(token_procs(t, 0), 128);
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
	cr_expect_eq(token_procs(t, 0), 1);
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
