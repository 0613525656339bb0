/*
 * The agent in each sandbox (agentwire.h).  A worker starts it once, as
 * the sandbox user, through one long-lived exec: the worker's messages
 * arrive on standard input (RUN, INPUT, CREDIT, KILL, SWEEP; LISTEN,
 * DIAL, PASS, and DATA, ACK, CLOSE of connections), the agent's leave on
 * standard output (HELLO, STARTED, OUT, SENT, EXIT, SWEPT; LISTENING,
 * ACCEPT, OPENED, PASSED, DATA, ACK, CLOSE).  Commands are this file's (with
 * spawn.c and sweep.c); connections, the egress proxy's listener and
 * the ports the worker dials, are relay.c's.  One thread, one poll()
 * loop over both; SIGCHLD through a signalfd; the agent is the
 * subreaper of everything it starts, so that it reaps the orphans too.
 * Every buffer is capped: a command that floods, closes its descriptors
 * or never exits, or a connection whose peer never reads, costs the
 * agent no more memory.
 *
 * Connections take the connections' channel (agentwire.h), a unix socket
 * of the worker's bound into the sandbox, when the worker offers one
 * (AGENT_CHANNEL_ENV): their bytes then pass the engine by.
 *
 * A worker that goes away (EOF) or sends what the protocol does not
 * allow is gone: every command is killed, every connection closed, and
 * the agent exits.
 */
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent-int.h"

#define MAX_CMDS 128
#define LINGER_MS 200 /* for the pipes' EOF once a command is reaped */
#define CREDIT_CAP ((uint64_t)1 << 40)
#define READ_CHUNK (64 * 1024) /* of the worker's stream */

struct cmd {
	uint64_t credit; /* output bytes it may still send */
	unsigned char *ibuf; /* input not written yet, from ioff */
	size_t ioff, ilen, icap;
	struct rusage ru;
	/*
	 * Once reaped: how long more to wait for its pipes' EOF (something
	 * it left may hold them).  The clock stops while output waits in a
	 * pipe for credit: that output is not lost.
	 */
	int64_t linger;
	int64_t tick; /* when linger was last counted down */
	uint32_t id; /* 0: a free slot */
	pid_t pid; /* also its process group and session */
	int in; /* its standard input; -1 closed, or never a pipe */
	int out[2]; /* standard output and error; -1 at EOF */
	int held[2]; /* the writers are gone, bytes wait for credit */
	int ieof; /* close in once ibuf is written */
	int reaped;
	int status;
	char token[AGENT_TOKEN_MAX + 1]; /* "" without one */
};

static struct cmd cmds[MAX_CMDS];
static int sigfd = -1;
static int chfd = -1; /* the connections' channel, when it is up */
/* What goes on the channel, written once a round. */
static unsigned char chout[2 * (AGENT_HDR_LEN + AGENT_DATA_CHUNK)];
static size_t chlen;
/* One OUT, read in place behind its header. */
static unsigned char obuf[AGENT_HDR_LEN + AGENT_DATA_CHUNK];

static void quit(int) __attribute__((noreturn));

void
agent_warn(const char *fmt, ...)
{
	va_list ap;

	fputs("mcp-sandboxd-agent: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * A blocking write of all of p to the worker (on fd: standard output, or
 * the channel); the agent ends if it is gone.
 */
static void
send_all_fd(int fd, const void *p, size_t len)
{
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};
	const unsigned char *b = p;
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, b, len)) > 0) {
			b += n;
			len -= (size_t)n;
		} else if (n == -1 && errno == EAGAIN)
			(void)poll(&pfd, 1, -1);
		else if (n == -1 && errno != EINTR) {
			agent_warn("write: %s", strerror(errno));
			quit(1);
		}
	}
}

static void
send_all(const void *p, size_t len)
{
	send_all_fd(1, p, len);
}

/*
 * Sends a message made by the codec (NULL: out of memory) and frees it.
 * (Never send_msg(encode(..., &len), len): the order in which arguments
 * are evaluated is not defined.)
 */
static void
send_msg(unsigned char *m, size_t len)
{
	if (m == NULL) {
		agent_warn("a message: %s", strerror(errno));
		quit(1);
	}
	send_all(m, len);
	free(m);
}

/*
 * Connections' messages (relay.c's): on the channel when it is up, one
 * write for all of a round's (agent_flush(), before each poll()).
 */
void
agent_send(const void *p, size_t len)
{
	if (chfd == -1) {
		send_all(p, len);
		return;
	}
	if (chlen + len > sizeof chout)
		agent_flush();
	if (len > sizeof chout) {
		send_all_fd(chfd, p, len);
		return;
	}
	memcpy(chout + chlen, p, len);
	chlen += len;
}

void
agent_flush(void)
{
	if (chlen > 0)
		send_all_fd(chfd, chout, chlen);
	chlen = 0;
}

/*
 * The message m (freed) on the channel with fd riding along (one
 * sendmsg: the worker finds the descriptor with the bytes that end in
 * it), after everything agent_send() holds; -1 without a channel.
 */
int
agent_send_fd(unsigned char *m, size_t len, int fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct pollfd pfd = {.fd = chfd, .events = POLLOUT};
	struct iovec iov = {.iov_base = m, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov,
	    .msg_iovlen = 1,
	    .msg_control = u.buf,
	    .msg_controllen = sizeof u.buf};
	struct cmsghdr *cm;
	ssize_t n;

	if (m == NULL) {
		agent_warn("a message: %s", strerror(errno));
		quit(1);
	}
	if (chfd == -1) {
		free(m);
		return -1;
	}
	agent_flush();
	memset(&u, 0, sizeof u);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof fd);
	while ((n = sendmsg(chfd, &mh, MSG_NOSIGNAL)) == -1) {
		if (errno == EAGAIN)
			(void)poll(&pfd, 1, -1);
		else if (errno != EINTR) {
			agent_warn("sendmsg: %s", strerror(errno));
			quit(1);
		}
	}
	/* The descriptor went with the first byte; the rest, if any, as
	 * any other bytes. */
	if ((size_t)n < len)
		send_all_fd(chfd, m + n, len - (size_t)n);
	free(m);
	return 0;
}

void
agent_send_msg(unsigned char *m, size_t len)
{
	if (m == NULL) {
		agent_warn("a message: %s", strerror(errno));
		quit(1);
	}
	agent_send(m, len);
	free(m);
}

static void
send_u32(uint16_t type, uint32_t id, uint32_t v)
{
	size_t len;
	unsigned char *m = agent_msg_u32(type, id, v, &len);

	send_msg(m, len);
}

/* An EXIT for a command that never ran. */
static void __attribute__((format(printf, 2, 3)))
send_refusal(uint32_t id, const char *fmt, ...)
{
	struct agent_exit e;
	unsigned char *m;
	va_list ap;
	size_t len;

	memset(&e, 0, sizeof e);
	e.exit_code = -1;
	va_start(ap, fmt);
	vsnprintf(e.error, sizeof e.error, fmt, ap);
	va_end(ap);
	m = agent_exit_encode(id, &e, &len);
	send_msg(m, len);
}

static struct cmd *
cmd_find(uint32_t id)
{
	int i;

	for (i = 0; i < MAX_CMDS; i++)
		if (cmds[i].id != 0 && cmds[i].id == id)
			return &cmds[i];
	return NULL;
}

static int
cmd_pipes_open(const struct cmd *c)
{
	return c->out[0] != -1 || c->out[1] != -1;
}

static void
cmd_close_in(struct cmd *c)
{
	if (c->in != -1)
		close(c->in);
	c->in = -1;
	free(c->ibuf);
	c->ibuf = NULL;
	c->ioff = c->ilen = c->icap = 0;
}

/* The command's last message; its slot is free again. */
static void
cmd_end(struct cmd *c)
{
	struct agent_exit e;
	unsigned char *m;
	size_t len;
	int k;

	memset(&e, 0, sizeof e);
	if (WIFEXITED(c->status))
		e.exit_code = WEXITSTATUS(c->status);
	else if (WIFSIGNALED(c->status)) {
		e.signal = WTERMSIG(c->status);
		e.exit_code = 128 + e.signal;
	} else
		e.exit_code = -1;
	e.user_us = (uint64_t)c->ru.ru_utime.tv_sec * 1000000 +
	            (uint64_t)c->ru.ru_utime.tv_usec;
	e.sys_us = (uint64_t)c->ru.ru_stime.tv_sec * 1000000 +
	           (uint64_t)c->ru.ru_stime.tv_usec;
	e.maxrss_kb = (uint64_t)c->ru.ru_maxrss;
	m = agent_exit_encode(c->id, &e, &len);
	send_msg(m, len);
	cmd_close_in(c);
	for (k = 0; k < 2; k++)
		if (c->out[k] != -1)
			close(c->out[k]);
	memset(c, 0, sizeof *c);
}

/* Whether a pipe holds bytes not read yet. */
static int
pipe_pending(int fd)
{
	int n;

	return fd != -1 && ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}

/* Whether output waits for credit: the linger's clock stops then. */
static int
cmd_waiting(const struct cmd *c)
{
	return c->credit == 0 &&
	       (pipe_pending(c->out[0]) || pipe_pending(c->out[1]));
}

/* Counts the linger down for the time since the last count. */
static void
cmd_tick(struct cmd *c, int64_t now)
{
	if (c->reaped && !cmd_waiting(c))
		c->linger -= now - c->tick;
	c->tick = now;
}

/*
 * Without credit, a pipe is polled for its hang-up only: EOF when it is
 * empty, else its bytes wait for credit (and it is not polled again
 * until then).
 */
static int
cmd_hangup(struct cmd *c, int k)
{
	if (pipe_pending(c->out[k])) {
		c->held[k] = 1;
		return 0;
	}
	close(c->out[k]);
	c->out[k] = -1;
	return -1;
}

/*
 * Reads what the credit allows of output pipe k and sends it: 1 when it
 * sent bytes, 0 when there was nothing to read, -1 at EOF (the pipe is
 * closed then).
 */
static int
cmd_read(struct cmd *c, int k)
{
	struct agent_hdr h = {.type = AGENT_OUT,
	    .flags = k == 0 ? AGENT_F_STDOUT : AGENT_F_STDERR,
	    .id = c->id};
	size_t want = AGENT_DATA_CHUNK;
	ssize_t n;

	if (c->out[k] == -1 || c->credit == 0)
		return 0;
	if (c->credit < want)
		want = (size_t)c->credit;
	n = read(c->out[k], obuf + AGENT_HDR_LEN, want);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		close(c->out[k]);
		c->out[k] = -1;
		return -1;
	}
	h.len = (uint32_t)n;
	agent_hdr_encode(&h, obuf);
	send_all(obuf, AGENT_HDR_LEN + (size_t)n);
	c->credit -= (uint64_t)n;
	return 1;
}

/*
 * The linger is over: what the pipes hold now within the credit is
 * sent, then they are closed and the command ends.
 */
static void
cmd_expire(struct cmd *c)
{
	int k;

	for (k = 0; k < 2; k++) {
		while (cmd_read(c, k) == 1)
			;
		if (c->out[k] != -1) {
			close(c->out[k]);
			c->out[k] = -1;
		}
	}
	cmd_end(c);
}

/* Writes what the command's standard input takes, answering SENT. */
static void
cmd_write(struct cmd *c)
{
	ssize_t n = write(c->in, c->ibuf + c->ioff, c->ilen);

	if (n > 0) {
		c->ioff += (size_t)n;
		c->ilen -= (size_t)n;
		send_u32(AGENT_SENT, c->id, (uint32_t)n);
		if (c->ilen == 0) {
			c->ioff = 0;
			if (c->ieof)
				cmd_close_in(c);
		}
		return;
	}
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	/*
	 * EPIPE: it closed its standard input.  What it did not take is
	 * acknowledged all the same, so that the worker's credit flows.
	 */
	send_u32(AGENT_SENT, c->id, (uint32_t)c->ilen);
	cmd_close_in(c);
}

/* INPUT: held (up to AGENT_INPUT_CAP; more is a broken worker's, dropped). */
static void
cmd_input(struct cmd *c, unsigned int flags, const unsigned char *p, size_t n)
{
	unsigned char *nb;
	size_t cap;

	if (c->in == -1 || c->ieof) {
		/* Nowhere to go: taken all the same. */
		if (n > 0)
			send_u32(AGENT_SENT, c->id, (uint32_t)n);
		return;
	}
	if (n > AGENT_INPUT_CAP - c->ilen)
		n = AGENT_INPUT_CAP - c->ilen;
	if (n > 0 && c->ioff + c->ilen + n > c->icap) {
		if (c->ioff > 0) {
			memmove(c->ibuf, c->ibuf + c->ioff, c->ilen);
			c->ioff = 0;
		}
		if (c->ilen + n > c->icap) {
			cap = c->icap < 65536 ? 65536 : c->icap * 2;
			if (cap < c->ilen + n)
				cap = c->ilen + n;
			if (cap > AGENT_INPUT_CAP)
				cap = AGENT_INPUT_CAP;
			if ((nb = realloc(c->ibuf, cap)) == NULL)
				n = 0;
			else {
				c->ibuf = nb;
				c->icap = cap;
			}
		}
	}
	if (n > 0) {
		memcpy(c->ibuf + c->ioff + c->ilen, p, n);
		c->ilen += n;
	}
	if (flags & AGENT_F_EOF) {
		c->ieof = 1;
		if (c->ilen == 0)
			cmd_close_in(c);
	}
}

static void
cmd_credit(struct cmd *c, uint32_t n, int64_t now)
{
	cmd_tick(c, now);
	c->credit += n;
	if (c->credit > CREDIT_CAP)
		c->credit = CREDIT_CAP;
	c->held[0] = c->held[1] = 0;
}

/* KILL: its group and everything carrying its token. */
static void
cmd_kill(struct cmd *c)
{
	const char *tok = c->token;

	(void)sweep_kill(&c->pid, 1, &tok, c->token[0] != '\0' ? 1 : 0);
}

/* A KILL with a signal: sent once to the group and the token's. */
static void
cmd_signal(struct cmd *c, int sig)
{
	const char *tok = c->token;

	(void)sweep_signal(c->pid, &tok, c->token[0] != '\0' ? 1 : 0, sig);
}

/* Kills every command, as KILL does, all in one sweep. */
static void
kill_all(void)
{
	const char *toks[MAX_CMDS];
	pid_t groups[MAX_CMDS];
	size_t ng = 0, nt = 0;
	int i;

	for (i = 0; i < MAX_CMDS; i++) {
		if (cmds[i].id == 0)
			continue;
		groups[ng++] = cmds[i].pid;
		if (cmds[i].token[0] != '\0')
			toks[nt++] = cmds[i].token;
	}
	if (ng == 0)
		return;
	/* sweep_kill takes at most AGENT_MAX_TOKENS tokens at a time. */
	do {
		size_t t = nt < AGENT_MAX_TOKENS ? nt : AGENT_MAX_TOKENS;

		(void)sweep_kill(groups, ng, toks + nt - t, t);
		nt -= t;
	} while (nt > 0);
}

static void
quit(int code)
{
	kill_all();
	relay_close_all();
	exit(code);
}

/* RUN: a refusal is an EXIT (the command never ran). */
static int
msg_run(uint32_t id, const unsigned char *p, size_t len)
{
	char err[AGENT_MAX_ERROR + 1];
	struct spawn_child ch;
	struct agent_run r;
	struct cmd *c = NULL;
	int i;

	if (id == 0 || agent_run_decode(p, len, &r) == -1)
		return -1;
	for (i = 0; i < MAX_CMDS && c == NULL; i++)
		if (cmds[i].id == 0)
			c = &cmds[i];
	if (cmd_find(id) != NULL)
		send_refusal(id, "command %u is running already", id);
	else if (c == NULL)
		send_refusal(id, "too many commands");
	else if (spawn_start(&r, &ch, err, sizeof err) == -1)
		send_refusal(id, "%s", err);
	else {
		memset(c, 0, sizeof *c);
		c->id = id;
		c->pid = ch.pid;
		if (r.token != NULL)
			snprintf(c->token, sizeof c->token, "%s", r.token);
		c->in = ch.in;
		c->out[0] = ch.out;
		c->out[1] = ch.err;
		c->credit = AGENT_INITIAL_CREDIT;
		send_u32(AGENT_STARTED, id, (uint32_t)ch.pid);
	}
	agent_run_free(&r);
	return 0;
}

/* SWEEP: answered with how many it killed. */
static int
msg_sweep(uint32_t id, const unsigned char *p, size_t len)
{
	char *tokens[AGENT_MAX_TOKENS], *buf;
	int n;

	if ((buf = malloc(len + AGENT_MAX_TOKENS)) == NULL)
		return -1;
	if ((n = agent_sweep_decode(p, len, tokens, AGENT_MAX_TOKENS, buf)) ==
	    -1) {
		free(buf);
		return -1;
	}
	n = sweep_kill(NULL, 0, (const char *const *)tokens, (size_t)n);
	free(buf);
	send_u32(AGENT_SWEPT, id, (uint32_t)n);
	return 0;
}

/* One message of the worker; -1 if the protocol does not allow it. */
static int
dispatch(const struct agent_hdr *h, const unsigned char *p)
{
	struct cmd *c = h->id != 0 ? cmd_find(h->id) : NULL;
	uint32_t v;

	/* A message for a command that ended is late, not wrong. */
	switch (h->type) {
	case AGENT_RUN:
		return msg_run(h->id, p, h->len);
	case AGENT_INPUT:
		if (c != NULL)
			cmd_input(c, h->flags, p, h->len);
		return 0;
	case AGENT_CREDIT:
		if (agent_u32_decode(p, h->len, &v) == -1)
			return -1;
		if (c != NULL)
			cmd_credit(c, v, now_ms());
		return 0;
	case AGENT_KILL:
		v = SIGKILL;
		if (h->len != 0 &&
		    (agent_u32_decode(p, h->len, &v) == -1 || v < 1 || v > 64))
			return -1;
		if (c != NULL && v == SIGKILL)
			cmd_kill(c);
		else if (c != NULL)
			cmd_signal(c, (int)v);
		return 0;
	case AGENT_SWEEP:
		return msg_sweep(h->id, p, h->len);
	case AGENT_LISTEN:
	case AGENT_DIAL:
	case AGENT_PASS:
	case AGENT_DATA:
	case AGENT_ACK:
	case AGENT_CLOSE:
		return relay_dispatch(h, p);
	}
	return -1;
}

/*
 * Reads the worker's stream (fd 0) or the channel; the agent ends at
 * either's EOF or a bad message.  Only connections' messages come on
 * the channel.
 */
static void
read_worker(int fd, struct agent_reader *rd)
{
	static unsigned char buf[READ_CHUNK];
	ssize_t n = read(fd, buf, sizeof buf);
	size_t off, t;
	int done;

	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n == 0)
		quit(0);
	if (n == -1) {
		agent_warn("read: %s", strerror(errno));
		quit(1);
	}
	for (off = 0; off < (size_t)n; off += t) {
		t = agent_reader_take(rd, buf + off, (size_t)n - off, &done);
		if (t == (size_t)-1) {
			agent_warn("a bad message header from the worker");
			quit(1);
		}
		if (done && ((fd == chfd && !agent_type_conn(rd->hdr.type)) ||
		                dispatch(&rd->hdr, rd->buf) == -1)) {
			agent_warn("a bad message from the worker (type %u)",
			    (unsigned int)rd->hdr.type);
			quit(1);
		}
	}
}

/* Reaps every child that is gone; only commands are reported. */
static void
reap(void)
{
	struct signalfd_siginfo si;
	struct rusage ru;
	struct cmd *c;
	int status, i;
	pid_t pid;

	while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si)
		;
	for (;;) {
		pid = wait4(-1, &status, WNOHANG, &ru);
		if (pid == -1 && errno == EINTR)
			continue;
		if (pid <= 0)
			break;
		for (c = NULL, i = 0; i < MAX_CMDS && c == NULL; i++)
			if (cmds[i].id != 0 && !cmds[i].reaped &&
			    cmds[i].pid == pid)
				c = &cmds[i];
		if (c == NULL)
			continue; /* an orphan */
		c->reaped = 1;
		c->status = status;
		c->ru = ru;
		/*
		 * What it left in its session dies with it (as the engine's
		 * exec has its shell kill it): background jobs, not the
		 * daemons that left the session (those go by token).
		 */
		sweep_kill(&c->pid, 1, NULL, 0);
		c->linger = LINGER_MS;
		c->tick = now_ms();
		if (!cmd_pipes_open(c))
			cmd_end(c);
	}
}

/* Descriptors 0, 1 and 2 open, so that no pipe of a command is one. */
static void
stdio_open(void)
{
	int fd;

	while ((fd = open("/dev/null", O_RDWR)) != -1 && fd <= 2)
		;
	if (fd > 2)
		close(fd);
}

/*
 * The connections' channel, when the worker offers one: connected, and
 * the token sent as its first message.  The variable goes either way,
 * so that no command inherits it.  Without it, connections stay on the
 * worker's stream.
 */
static void
channel_open(void)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	const char *tok = getenv(AGENT_CHANNEL_ENV);
	char token[AGENT_TOKEN_MAX + 1];
	unsigned char *m;
	size_t len;
	int fd;

	if (tok == NULL)
		return;
	snprintf(token, sizeof token, "%s", tok);
	unsetenv(AGENT_CHANNEL_ENV);
	if (*token == '\0' || strlen(tok) > AGENT_TOKEN_MAX) {
		agent_warn("%s: a bad token", AGENT_CHANNEL_ENV);
		return;
	}
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s/%s", AGENT_CHANNEL_DIR,
	    AGENT_CHANNEL_SOCK);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    connect(fd, (struct sockaddr *)&sun, sizeof sun) == -1) {
		agent_warn("the channel %s: %s", sun.sun_path, strerror(errno));
		if (fd != -1)
			close(fd);
		return;
	}
	chfd = fd;
	m = agent_msg_new(AGENT_CHANNEL, 0, 0, token, strlen(token), &len);
	agent_send_msg(m, len);
	explicit_bzero(token, sizeof token);
}

static void
setup(void)
{
	struct agent_hdr hh;
	struct agent_hello h;
	unsigned char *m;
	sigset_t set;
	size_t len;

	stdio_open();
	signal(SIGPIPE, SIG_IGN);
	signal(SIGCHLD, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1 ||
	    (sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) == -1) {
		agent_warn("signalfd: %s", strerror(errno));
		exit(1);
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1)
		agent_warn("PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
	/*
	 * Not dumpable: sandbox code runs as this user, and could otherwise
	 * open its descriptors through /proc (write into its protocol) or
	 * read its memory.  Commands are dumpable again once they exec.
	 */
	if (prctl(PR_SET_DUMPABLE, 0) == -1)
		agent_warn("PR_SET_DUMPABLE: %s", strerror(errno));
	channel_open();
	h.version = AGENT_VERSION;
	h.pid = (uint32_t)getpid();
	h.uid = (uint32_t)getuid();
	h.gid = (uint32_t)getgid();
	m = agent_hello_encode(&h, &len);
	if (m != NULL && chfd != -1 && agent_hdr_decode(m, &hh) == 0) {
		hh.flags = AGENT_F_CHANNEL;
		agent_hdr_encode(&hh, m);
	}
	send_msg(m, len);
}

int
main(void)
{
	/*
	 * Worker, signals, the channel, then per command two output pipes and
	 * stdin, then the connections' (relay.c's, last).
	 */
	struct pollfd pfd[3 + 3 * MAX_CMDS + RELAY_MAX_FDS];
	struct {
		struct cmd *c;
		uint32_t id;
		int k; /* 0, 1: an output pipe; 2: standard input */
	} ref[3 + 3 * MAX_CMDS];
	struct agent_reader rd, crd;
	struct cmd *c;
	int64_t now;
	int i, k, n, nc, timeout;

	setup();
	agent_reader_init(&rd);
	agent_reader_init(&crd);
	for (;;) {
		now = now_ms();
		timeout = -1;
		n = 0;
		pfd[n++] = (struct pollfd){.fd = 0, .events = POLLIN};
		pfd[n++] = (struct pollfd){.fd = sigfd, .events = POLLIN};
		/* -1 without a channel: poll() passes it by. */
		pfd[n++] = (struct pollfd){.fd = chfd, .events = POLLIN};
		for (i = 0; i < MAX_CMDS; i++) {
			c = &cmds[i];
			if (c->id == 0)
				continue;
			for (k = 0; k < 2; k++) {
				if (c->out[k] == -1 || c->held[k])
					continue;
				ref[n].c = c;
				ref[n].id = c->id;
				ref[n].k = k;
				/* No credit: its hang-up only. */
				pfd[n++] = (struct pollfd){.fd = c->out[k],
				    .events = c->credit > 0 ? POLLIN : 0};
			}
			if (c->in != -1 && c->ilen > 0) {
				ref[n].c = c;
				ref[n].id = c->id;
				ref[n].k = 2;
				pfd[n++] = (struct pollfd){
				    .fd = c->in, .events = POLLOUT};
			}
			if (c->reaped && !cmd_waiting(c)) {
				cmd_tick(c, now);
				if (timeout == -1 || c->linger < timeout)
					timeout =
					    c->linger < 0 ? 0 : (int)c->linger;
			}
		}
		nc = n;
		n += relay_poll(pfd + nc);
		agent_flush();
		if (poll(pfd, (nfds_t)n, timeout) == -1) {
			if (errno == EINTR)
				continue;
			agent_warn("poll: %s", strerror(errno));
			quit(1);
		}
		now = now_ms();
		for (i = 0; i < MAX_CMDS; i++)
			if (cmds[i].id != 0)
				cmd_tick(&cmds[i], now);
		if (pfd[1].revents != 0)
			reap();
		/* A command may have ended meanwhile: its id and fd tell. */
		for (i = 3; i < nc; i++) {
			c = ref[i].c;
			if (pfd[i].revents == 0 || c->id != ref[i].id)
				continue;
			if (ref[i].k < 2 && c->out[ref[i].k] == pfd[i].fd) {
				k = c->credit > 0 ? cmd_read(c, ref[i].k)
				                  : cmd_hangup(c, ref[i].k);
				if (k == -1 && c->reaped && !cmd_pipes_open(c))
					cmd_end(c);
			} else if (ref[i].k == 2 && c->in == pfd[i].fd)
				cmd_write(c);
		}
		for (i = 0; i < MAX_CMDS; i++) {
			c = &cmds[i];
			if (c->id != 0 && c->reaped && c->linger <= 0 &&
			    !cmd_waiting(c))
				cmd_expire(c);
		}
		relay_ready(pfd + nc, n - nc);
		/* Last: a RUN (or DIAL) may take a slot that ended above. */
		if (pfd[0].revents != 0)
			read_worker(0, &rd);
		if (chfd != -1 && pfd[2].revents != 0)
			read_worker(chfd, &crd);
	}
}
