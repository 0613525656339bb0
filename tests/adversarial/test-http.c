/*
 * Adversarial: what an HTTP client, with or without the token, must not
 * achieve (issue 11 items 8, 9, 10, 13, 17): hold memory or connections
 * before authenticating, trickle requests forever, reach an open server
 * by default, smuggle a body past its length, starve other sessions, or
 * pin memory with calls that never answer.  Clients here speak raw HTTP/1.1
 * over sockets, one request per connection (Connection: close), so that every
 * byte sent is the test's.
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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "adv.h"

#define ACCEPT "Accept: application/json, text/event-stream\r\n"
#define CTYPE "Content-Type: application/json\r\n"
#define INIT_BODY                                                              \
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{" \
	"\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"              \
	"\"clientInfo\":{\"name\":\"adv-http\",\"version\":\"1\"}}}"

struct asrv {
	pid_t pid;
	int port;
	char token[80]; /* "" with --no-auth */
	char tokfile[64];
	char errfile[64]; /* its stderr */
	char label[96];
};

static int nservers;

/*
 * A server over HTTP with extra arguments (NULL-ended).  With token set
 * it gets that token in a file; NULL: no auth arguments at all (the
 * extra ones may have --no-auth).
 */
static struct asrv *
asrv_start(const char *token, ...)
{
	const char *args[48], *a;
	char listen[32];
	struct asrv *s;
	long long deadline;
	va_list ap;
	int n = 0, fd;

	signal(SIGPIPE, SIG_IGN);
	s = calloc(1, sizeof *s);
	cr_assert(s != NULL);
	s->port = h_free_port();
	snprintf(listen, sizeof listen, "127.0.0.1:%d", s->port);
	snprintf(s->label, sizeof s->label, H_LABEL_KEY "=advhttp-%d-%d",
	    (int)getpid(), ++nservers);
	snprintf(s->errfile, sizeof s->errfile,
	    "/tmp/mcp-sandboxd-advhttp-err-XXXXXX");
	fd = mkstemp(s->errfile);
	cr_assert(fd >= 0);
	close(fd);
	args[n++] = getenv("MCP_SANDBOXD_BIN");
	args[n++] = "--transport";
	args[n++] = "http";
	args[n++] = "--listen";
	args[n++] = listen;
	args[n++] = "--image";
	args[n++] = H_IMAGE;
	args[n++] = "--label";
	args[n++] = ADV_LABEL;
	args[n++] = "--label";
	args[n++] = s->label;
	args[n++] = "--log-level";
	args[n++] = getenv("ADV_LOG") != NULL ? getenv("ADV_LOG") : "warn";
	if (token != NULL) {
		snprintf(s->token, sizeof s->token, "%s", token);
		snprintf(s->tokfile, sizeof s->tokfile,
		    "/tmp/mcp-sandboxd-advhttp-tok-XXXXXX");
		fd = mkstemp(s->tokfile);
		cr_assert(fd >= 0);
		cr_assert(
		    write(fd, token, strlen(token)) == (ssize_t)strlen(token));
		close(fd);
		args[n++] = "--auth-token-file";
		args[n++] = s->tokfile;
	}
	va_start(ap, token);
	for (a = va_arg(ap, const char *); a != NULL && n < 47;
	     a = va_arg(ap, const char *))
		args[n++] = a;
	va_end(ap);
	args[n] = NULL;
	cr_assert(args[0] != NULL, "MCP_SANDBOXD_BIN is not set");
	s->pid = fork();
	cr_assert(s->pid >= 0);
	if (s->pid == 0) {
		fd = open(s->errfile, O_WRONLY | O_APPEND);
		if (fd >= 0)
			dup2(fd, 2);
		fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
		}
		unsetenv("MCP_SANDBOXD_AUTH_TOKEN");
		execv(args[0], (char *const *)args);
		_exit(127);
	}
	deadline = h_now_ms() + 15000;
	while ((fd = h_dial(s->port)) == -1) {
		cr_assert(h_now_ms() < deadline, "the server did not listen");
		cr_assert(h_pid_alive(s->pid), "the server exited early");
		usleep(20000);
	}
	close(fd);
	usleep(200000); /* that probe no longer counts as a connection */
	return s;
}

/* Its stderr so far (static). */
static const char *
asrv_stderr(struct asrv *s)
{
	static char buf[65536];
	const char *log;
	off_t end;
	ssize_t n;
	int fd;

	buf[0] = '\0';
	if ((fd = open(s->errfile, O_RDONLY)) < 0)
		return buf;
	/* The start (the token is printed there) or the last 64 KiB. */
	log = getenv("ADV_LOG");
	if ((end = lseek(fd, 0, SEEK_END)) > (off_t)sizeof buf - 1 &&
	    log != NULL && *log != '\0')
		lseek(fd, end - (off_t)sizeof buf + 1, SEEK_SET);
	else
		lseek(fd, 0, SEEK_SET);
	n = read(fd, buf, sizeof buf - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	return buf;
}

/* SIGTERM: exit 0 and no container of it left. */
static void
asrv_stop(struct asrv *s)
{
	long long deadline = h_now_ms() + 45000;
	int st = 0, n;
	pid_t r;

	kill(s->pid, SIGTERM);
	while (
	    (r = waitpid(s->pid, &st, WNOHANG)) == 0 && h_now_ms() < deadline)
		usleep(50000);
	if (r == 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, &st, 0);
		cr_expect(0,
		    "the server did not exit after SIGTERM; stderr:\n%s",
		    asrv_stderr(s));
	} else
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		    "server exit status %d; stderr:\n%s", st, asrv_stderr(s));
	n = h_docker_count(s->label);
	cr_expect_eq(n, 0, "%d container(s) labelled %s remain", n, s->label);
	unlink(s->errfile);
	if (s->tokfile[0] != '\0')
		unlink(s->tokfile);
	free(s);
}

/* --- raw HTTP --- */

/* Send a whole request (hdrs: extra header lines, each ending CRLF). */
static void
send_req(struct asrv *s, int fd, const char *method, const char *path,
    const char *auth, const char *hdrs, const char *body, size_t blen)
{
	char head[8192];
	int n;

	n = snprintf(head, sizeof head,
	    "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s%s%s%s"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n",
	    method, path, s->port, auth != NULL ? "Authorization: Bearer " : "",
	    auth != NULL ? auth : "", auth != NULL ? "\r\n" : "",
	    hdrs != NULL ? hdrs : "", blen);
	cr_assert(n > 0 && (size_t)n < sizeof head);
	cr_assert(write(fd, head, (size_t)n) == n);
	if (blen > 0)
		cr_assert(write(fd, body, blen) == (ssize_t)blen);
}

/*
 * Read what comes within ms (to EOF, or until until appears); the status
 * of the reply, 0 for none.  buf gets the text (NUL-terminated).
 */
static int
read_reply(int fd, char *buf, size_t cap, int ms, const char *until)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	long long deadline = h_now_ms() + ms;
	size_t have = 0;
	ssize_t n;
	int status = 0, left;

	buf[0] = '\0';
	while (have < cap - 1 && (left = (int)(deadline - h_now_ms())) > 0) {
		if (poll(&pfd, 1, left) != 1)
			break;
		if ((n = read(fd, buf + have, cap - 1 - have)) <= 0)
			break;
		have += (size_t)n;
		buf[have] = '\0';
		if (until != NULL && strstr(buf, until) != NULL)
			break;
	}
	sscanf(buf, "HTTP/1.%*d %d", &status);
	return status;
}

/* One request, its whole reply in a static buffer; the status. */
static int
rpc(struct asrv *s, const char *sid, const char *body, char **reply)
{
	static char buf[1 << 20];
	char hdrs[256];
	int fd, st;

	snprintf(hdrs, sizeof hdrs, ACCEPT CTYPE "%s%s%s",
	    sid != NULL ? "Mcp-Session-Id: " : "", sid != NULL ? sid : "",
	    sid != NULL ? "\r\n" : "");
	fd = h_dial(s->port);
	cr_assert(fd >= 0);
	send_req(s, fd, "POST", "/mcp", s->token[0] ? s->token : NULL, hdrs,
	    body, strlen(body));
	st = read_reply(fd, buf, sizeof buf, 120000, NULL);
	close(fd);
	if (reply != NULL)
		*reply = buf;
	return st;
}

/* initialize + initialized: the session id (malloc'd). */
static char *
session(struct asrv *s)
{
	char *r, *p, *sid;
	size_t n;

	cr_assert_eq(rpc(s, NULL, INIT_BODY, &r), 200, "%s", r);
	p = strcasestr(r, "\r\nMcp-Session-Id: ");
	cr_assert(p != NULL, "%s", r);
	p += 18;
	n = strcspn(p, "\r\n");
	sid = strndup(p, n);
	cr_assert_eq(rpc(s, sid,
	                 "{\"jsonrpc\":\"2.0\",\"method\":"
	                 "\"notifications/initialized\"}",
	                 NULL),
	    202);
	return sid;
}

/* A tools/call sent, not waited for: the connection. */
static int
call_start(struct asrv *s, const char *sid, long id, const char *tool,
    const char *args, const char *pad)
{
	char hdrs[256], *body;
	int fd, n;

	n = asprintf(&body,
	    "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"%s\",\"arguments\":%s%s%s%s}}",
	    id, tool, args, pad != NULL ? ",\"_meta\":{\"pad\":\"" : "",
	    pad != NULL ? pad : "", pad != NULL ? "\"}" : "");
	cr_assert(n > 0);
	snprintf(hdrs, sizeof hdrs, ACCEPT CTYPE "Mcp-Session-Id: %s\r\n", sid);
	fd = h_dial(s->port);
	cr_assert(fd >= 0);
	send_req(s, fd, "POST", "/mcp", s->token[0] ? s->token : NULL, hdrs,
	    body, (size_t)n);
	free(body);
	return fd;
}

static char *
sandbox(struct asrv *s, const char *sid)
{
	char *r, *p;

	cr_assert_eq(rpc(s, sid,
	                 "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/"
	                 "call\",\"params\":{\"name\":\"sandbox_initialize\","
	                 "\"arguments\":{}}}",
	                 &r),
	    200);
	p = strstr(r, "\"container_id\":\"");
	cr_assert(p != NULL, "sandbox_initialize: %s", r);
	return strndup(p + 16, 64);
}

static long
metric(struct asrv *s, const char *name)
{
	char buf[65536], line[128], *p;
	int fd;

	fd = h_dial(s->port);
	cr_assert(fd >= 0);
	send_req(s, fd, "GET", "/metrics", s->token[0] ? s->token : NULL, NULL,
	    NULL, 0);
	cr_assert_eq(read_reply(fd, buf, sizeof buf, 10000, NULL), 200);
	close(fd);
	snprintf(line, sizeof line, "\n%s ", name);
	p = strstr(buf, line);
	cr_assert(p != NULL, "no %s in %s", name, buf);
	return strtol(p + strlen(line), NULL, 10);
}

/* --- item 9: before the token --- */

/*
 * A client with a wrong token announces a 16 MiB body: the 401 comes
 * before a byte of the body is sent, and none of it is ever held.
 */
Test(http_adv, preauth_body_never_read, .timeout = 120)
{
	static char big[1 << 20];
	char buf[4096], hdrs[256];
	struct asrv *s;
	long rss0, rss1;
	long long t0;
	size_t sent = 0;
	ssize_t n;
	int fd, i, st;

	s = asrv_start("the-right-token", NULL);
	rss0 = h_status_kb(s->pid, "VmRSS");
	memset(big, 'x', sizeof big);
	for (i = 0; i < 4; i++) {
		fd = h_dial(s->port);
		cr_assert(fd >= 0);
		snprintf(hdrs, sizeof hdrs,
		    "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s" ACCEPT
		        CTYPE "Content-Length: 16777216\r\n\r\n",
		    s->port,
		    i % 2 == 0 ? "Authorization: Bearer wrong-token\r\n" : "");
		cr_assert(
		    write(fd, hdrs, strlen(hdrs)) == (ssize_t)strlen(hdrs));
		t0 = h_now_ms();
		st = read_reply(fd, buf, sizeof buf, 5000, "\r\n\r\n");
		cr_expect_eq(st, 401,
		    "no 401 before the body was sent (%lld ms): %s",
		    h_now_ms() - t0, buf);
		/* Now the body: the server drops it (or has closed). */
		while (sent < (size_t)(i + 1) * 16 * sizeof big) {
			n = send(fd, big, sizeof big, MSG_NOSIGNAL);
			if (n <= 0)
				break;
			sent += (size_t)n;
		}
		close(fd);
	}
	rss1 = h_status_kb(s->pid, "VmRSS");
	cr_expect_lt(rss1 - rss0, 8 * 1024,
	    "RSS grew from %ld to %ld KiB while bodies were refused", rss0,
	    rss1);
	cr_expect_geq(metric(s, "mcp_sandboxd_http_preauth_refused_total"), 4);
	cr_log_info("preauth: 4 x 16 MiB announced, %zu bytes pushed, RSS %ld "
	            "-> %ld KiB",
	    sent, rss0, rss1);
	asrv_stop(s);
}

/*
 * A request refused before its body that asked to keep its connection
 * alive (as undici does for every request) still ends it: the rest of what the
 * client sends on it is dropped unread, so a request after it on the same
 * connection would otherwise hang unanswered.
 */
Test(http_adv, preauth_refusal_closes_keepalive, .timeout = 60)
{
	char buf[8192], req[1024];
	struct asrv *s;
	long long t0;
	int fd, n;

	s = asrv_start("the-right-token", NULL);
	fd = h_dial(s->port);
	cr_assert(fd >= 0);
	n = snprintf(req, sizeof req,
	    "POST /register HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: "
	    "keep-alive\r\nAuthorization: Bearer wrong-token\r\n" ACCEPT CTYPE
	    "Content-Length: 2\r\n\r\n{}"
	    "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
	cr_assert(write(fd, req, (size_t)n) == n);
	t0 = h_now_ms();
	/* mcp-remote's OAuth registration: 404 (before the token check). */
	cr_expect_eq(
	    read_reply(fd, buf, sizeof buf, 5000, NULL), 404, "%s", buf);
	cr_expect(h_contains(buf, "Connection: close"), "%s", buf);
	cr_expect_lt(h_now_ms() - t0, 4000, "the connection stayed open");
	close(fd);
	asrv_stop(s);
}

/*
 * A HEAD's body is no body to evhttp: what follows it is the next request,
 * and the gate reads it so too.  A POST without the token hidden there is
 * answered before its body, like any other.
 */
Test(http_adv, preauth_after_head_with_length, .timeout = 60)
{
	static char buf[65536];
	char post[512], req[1024];
	struct asrv *s;
	int fd, n, m;

	s = asrv_start("the-right-token", NULL);
	fd = h_dial(s->port);
	cr_assert(fd >= 0);
	m = snprintf(post, sizeof post,
	    "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" ACCEPT CTYPE
	    "Content-Length: 16777216\r\n\r\n");
	n = snprintf(req, sizeof req,
	    "HEAD /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: "
	    "Bearer the-right-token\r\nContent-Length: %d\r\n\r\n%s",
	    m, post);
	cr_assert(write(fd, req, (size_t)n) == n);
	/* The metrics, then the 401 of the POST, with no body sent. */
	cr_expect_eq(read_reply(fd, buf, sizeof buf, 5000, "Unauthorized: "),
	    200, "%s", buf);
	cr_expect(h_contains(buf, "HTTP/1.1 401 Unauthorized"),
	    "the POST after the HEAD was not refused before its body: %s", buf);
	close(fd);
	asrv_stop(s);
}

/* Before the token, a header block may not grow past a few KiB. */
Test(http_adv, preauth_headers_bounded, .timeout = 60)
{
	char buf[4096], line[1100];
	struct asrv *s;
	int fd, i;
	ssize_t n;

	s = asrv_start("the-right-token", NULL);
	fd = h_dial(s->port);
	cr_assert(fd >= 0);
	n = snprintf(
	    buf, sizeof buf, "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n");
	cr_assert(write(fd, buf, (size_t)n) == n);
	memset(line, 'a', sizeof line);
	memcpy(line, "X-Pad: ", 7);
	line[sizeof line - 2] = '\r';
	line[sizeof line - 1] = '\n';
	for (i = 0; i < 32; i++)
		if (send(fd, line, sizeof line, MSG_NOSIGNAL) <= 0)
			break;
	if (i == 32)
		(void)send(fd, "\r\n", 2, MSG_NOSIGNAL);
	/* 35 KiB of headers without a token: cut, never answered (evhttp
	 * alone would hold up to 64 KiB, then answer 401). */
	cr_expect_eq(read_reply(fd, buf, sizeof buf, 5000, NULL), 0, "%s", buf);
	close(fd);
	cr_expect_geq(metric(s, "mcp_sandboxd_http_connections_cut_total"), 1);
	asrv_stop(s);
}

/* Slowloris: headers at 1 byte/s are cut at --http-header-timeout. */
Test(http_adv, slowloris_headers_cut, .timeout = 60)
{
	const char *req = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
	                  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	struct asrv *s;
	long long t0, took = -1;
	char c;
	int fd, i;

	s = asrv_start("the-right-token", "--http-header-timeout", "2", NULL);
	fd = h_dial(s->port);
	cr_assert(fd >= 0);
	t0 = h_now_ms();
	for (i = 0; req[i] != '\0' && i < 15; i++) {
		if (send(fd, req + i, 1, MSG_NOSIGNAL) != 1 ||
		    (recv(fd, &c, 1, MSG_DONTWAIT) == 0)) {
			took = h_now_ms() - t0;
			break;
		}
		usleep(1000000);
	}
	cr_expect(took >= 0,
	    "a 1 byte/s request was still served after %lld "
	    "ms",
	    h_now_ms() - t0);
	cr_expect_lt(took, 5000, "cut after %lld ms (bound: 2 s + 1 s)", took);
	cr_log_info("slowloris headers cut after %lld ms", took);
	close(fd);
	asrv_stop(s);
}

/* A body at 1 byte/s is cut once its grace is over. */
Test(http_adv, slow_body_cut, .timeout = 60)
{
	char head[512], c;
	struct asrv *s;
	long long t0, took = -1;
	int fd, i, n;

	s = asrv_start("the-right-token", "--http-header-timeout", "2",
	    "--http-min-rate", "1024", NULL);
	fd = h_dial(s->port);
	cr_assert(fd >= 0);
	n = snprintf(head, sizeof head,
	    "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
	    "the-right-token\r\n" ACCEPT CTYPE
	    "Content-Length: 100000\r\n\r\n");
	cr_assert(write(fd, head, (size_t)n) == n);
	t0 = h_now_ms();
	for (i = 0; i < 30; i++) {
		if (send(fd, "{", 1, MSG_NOSIGNAL) != 1 ||
		    recv(fd, &c, 1, MSG_DONTWAIT) == 0) {
			took = h_now_ms() - t0;
			break;
		}
		usleep(1000000);
	}
	cr_expect(took >= 0, "a 1 byte/s body was still read after 30 s");
	cr_expect_lt(
	    took, 6000, "cut after %lld ms (bound: 2 s grace + 1 s)", took);
	cr_log_info("slow body cut after %lld ms", took);
	close(fd);
	asrv_stop(s);
}

/*
 * Requests pipelined behind one that is still being answered (the client
 * sends and never reads, so the answer cannot be written): evhttp would
 * keep reading them into its input.  Without the token the connection
 * ends after its first request; with it the socket is no longer read past
 * a bound.  Either way the server's memory stays flat.
 */
static long
pipeline_flood(struct asrv *s, const char *auth, int secs, int *closed)
{
	static char req[64 * 1024];
	char one[512];
	size_t len = 0, off = 0;
	long long end;
	long sent = 0;
	ssize_t n;
	int fd, m;

	m = snprintf(one, sizeof one,
	    "GET /.well-known/oauth-authorization-server HTTP/1.1\r\n"
	    "Host: 127.0.0.1:%d\r\n%s%s%s\r\n",
	    s->port, auth != NULL ? "Authorization: Bearer " : "",
	    auth != NULL ? auth : "", auth != NULL ? "\r\n" : "");
	while (len + (size_t)m <= sizeof req) {
		memcpy(req + len, one, (size_t)m);
		len += (size_t)m;
	}
	fd = h_dial(s->port);
	cr_assert(fd >= 0);
	cr_assert(fcntl(fd, F_SETFL, O_NONBLOCK) == 0);
	*closed = 0;
	for (end = h_now_ms() + secs * 1000; h_now_ms() < end;) {
		n = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (n > 0) {
			sent += n;
			off = (off + (size_t)n) % len;
		} else if (n == -1 && errno == EAGAIN)
			usleep(10000);
		else {
			*closed = 1;
			break;
		}
	}
	close(fd);
	return sent;
}

Test(http_adv, pipelined_requests_never_pile_up, .timeout = 60)
{
	struct asrv *s;
	long rss0, rss1, rss2, sent0, sent1;
	int closed0, closed1;

	s = asrv_start("the-right-token", NULL);
	rss0 = h_status_kb(s->pid, "VmRSS");
	sent0 = pipeline_flood(s, NULL, 4, &closed0);
	rss1 = h_status_kb(s->pid, "VmRSS");
	sent1 = pipeline_flood(s, s->token, 4, &closed1);
	rss2 = h_status_kb(s->pid, "VmRSS");
	cr_log_info("pipelined: without the token %ld bytes taken (closed %d), "
	            "with it %ld (closed %d); RSS %ld -> %ld -> %ld KiB",
	    sent0, closed0, sent1, closed1, rss0, rss1, rss2);
	cr_expect(closed0, "a connection without the token stayed open to "
	                   "pipelined requests");
	cr_expect_lt(rss1 - rss0, 8 * 1024,
	    "RSS grew from %ld to %ld KiB: requests without the token held",
	    rss0, rss1);
	cr_expect_lt(rss2 - rss1, 8 * 1024,
	    "RSS grew from %ld to %ld KiB: pipelined requests held", rss1,
	    rss2);
	/* The server still answers. */
	cr_expect_geq(metric(s, "mcp_sandboxd_http_connections"), 1);
	asrv_stop(s);
}

/* Descriptors a process holds. */
static int
open_fds(pid_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	if ((d = opendir(path)) == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/*
 * Refused connections linger a moment to deliver their answer, but a
 * flood of them holds no more descriptors than --http-max-connections
 * lingering ones: 60 connections, each refused without the token and
 * still open at the client, past a limit of 4.
 */
Test(http_adv, lingering_is_bounded, .timeout = 60)
{
	enum { FLOOD = 60, MAX = 4 };
	char req[256];
	struct asrv *s;
	int fds[FLOOD], base, peak = 0, n, i, m;

	s = asrv_start("the-right-token", "--http-max-connections", "4", NULL);
	base = open_fds(s->pid);
	m = snprintf(req, sizeof req,
	    "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", s->port);
	for (i = 0; i < FLOOD; i++) {
		fds[i] = h_dial(s->port);
		cr_assert(fds[i] >= 0);
		cr_assert(write(fds[i], req, (size_t)m) == m);
		usleep(5000);
		if ((n = open_fds(s->pid)) > peak)
			peak = n;
	}
	cr_log_info("lingering: %d connections refused, descriptors %d -> "
	            "peak %d",
	    FLOOD, base, peak);
	cr_expect_leq(peak - base, 2 * MAX + 2,
	    "%d descriptors held past the %d before the flood", peak - base,
	    base);
	for (i = 0; i < FLOOD; i++)
		close(fds[i]);
	cr_expect_geq(metric(s, "mcp_sandboxd_http_connections"), 1);
	asrv_stop(s);
}

/* Connections that never send a request count against the limit. */
Test(http_adv, silent_connections_count, .timeout = 60)
{
	char buf[4096];
	struct asrv *s;
	int a, b, c, st;

	s = asrv_start("the-right-token", "--http-max-connections", "2", NULL);
	a = h_dial(s->port);
	b = h_dial(s->port);
	cr_assert(a >= 0 && b >= 0);
	usleep(200000);
	c = h_dial(s->port);
	cr_assert(c >= 0);
	send_req(s, c, "GET", "/metrics", s->token, NULL, NULL, 0);
	st = read_reply(c, buf, sizeof buf, 5000, NULL);
	cr_expect_eq(
	    st, 503, "a third connection next to two silent ones: %s", buf);
	cr_expect(h_contains(buf, "--http-max-connections"), "%s", buf);
	close(c);
	close(a);
	close(b);
	usleep(300000);
	cr_expect_eq(metric(s, "mcp_sandboxd_http_connections"), 1);
	asrv_stop(s);
}

/* --- item 17 part: ambiguous framing --- */

Test(http_adv, ambiguous_content_length_refused, .timeout = 60)
{
	char buf[8192], req[1024];
	struct asrv *s;
	int fd, n;

	s = asrv_start("the-right-token", NULL);
	fd = h_dial(s->port);
	cr_assert(fd >= 0);
	n = snprintf(req, sizeof req,
	    "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
	    "the-right-token\r\n" ACCEPT CTYPE
	    "Content-Length: 4\r\nContent-Length: 40\r\n\r\n{}{}");
	cr_assert(write(fd, req, (size_t)n) == n);
	cr_expect_eq(
	    read_reply(fd, buf, sizeof buf, 5000, NULL), 400, "%s", buf);
	cr_expect(h_contains(buf, "ambiguous"), "%s", buf);
	close(fd);

	fd = h_dial(s->port);
	cr_assert(fd >= 0);
	n = snprintf(req, sizeof req,
	    "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
	    "the-right-token\r\n" ACCEPT CTYPE
	    "Content-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "2\r\n{}\r\n0\r\n\r\n");
	cr_assert(write(fd, req, (size_t)n) == n);
	cr_expect_eq(
	    read_reply(fd, buf, sizeof buf, 5000, NULL), 400, "%s", buf);
	cr_expect(h_contains(buf, "ambiguous"), "%s", buf);
	close(fd);
	/* The same length twice is only redundant. */
	fd = h_dial(s->port);
	cr_assert(fd >= 0);
	n = snprintf(req, sizeof req,
	    "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
	    "the-right-token\r\n" ACCEPT CTYPE
	    "Content-Length: %zu\r\nContent-Length: %zu\r\n\r\n%s",
	    strlen(INIT_BODY), strlen(INIT_BODY), INIT_BODY);
	cr_assert(write(fd, req, (size_t)n) == n);
	cr_expect_eq(
	    read_reply(fd, buf, sizeof buf, 5000, NULL), 200, "%s", buf);
	close(fd);
	asrv_stop(s);
}

/* --- item 10: no open loopback by default --- */

Test(http_adv, default_token_made_and_printed, .timeout = 60)
{
	char buf[8192], tok[80], hdrs[128];
	const char *err, *p;
	struct asrv *s;
	long long deadline;
	int fd;

	s = asrv_start(NULL, NULL);
	deadline = h_now_ms() + 5000;
	while ((p = strstr(err = asrv_stderr(s), "Authorization: Bearer ")) ==
	           NULL &&
	       h_now_ms() < deadline)
		usleep(20000);
	cr_assert(p != NULL, "no token printed: %s", err);
	p += 22;
	snprintf(tok, sizeof tok, "%.*s", (int)strcspn(p, " \r\n"), p);
	cr_expect_eq(strlen(tok), 64, "token \"%s\"", tok);
	snprintf(hdrs, sizeof hdrs, "http://127.0.0.1:%d/mcp", s->port);
	cr_expect(h_contains(err, hdrs), "no URL printed: %s", err);

	/* Without it: 401, for /mcp and /metrics. */
	cr_expect_eq(rpc(s, NULL, INIT_BODY, NULL), 401);
	fd = h_dial(s->port);
	send_req(s, fd, "GET", "/metrics", NULL, NULL, NULL, 0);
	cr_expect_eq(read_reply(fd, buf, sizeof buf, 5000, NULL), 401);
	close(fd);
	/* With it: served. */
	snprintf(s->token, sizeof s->token, "%s", tok);
	cr_expect_eq(rpc(s, NULL, INIT_BODY, NULL), 200);
	asrv_stop(s);
}

Test(http_adv, no_auth_explicit, .timeout = 60)
{
	struct asrv *s;
	char *r;

	s = asrv_start(NULL, "--no-auth", NULL);
	cr_expect_eq(rpc(s, NULL, INIT_BODY, &r), 200, "%s", r);
	cr_expect(!h_contains(asrv_stderr(s), "Authorization: Bearer"), "%s",
	    asrv_stderr(s));
	asrv_stop(s);
}

Test(http_adv, other_localhost_origin_refused, .timeout = 60)
{
	char buf[8192], hdrs[512];
	struct asrv *s;
	int fd;

	s = asrv_start("the-right-token", NULL);
	/* A page of another local program (a dev server on 5173). */
	fd = h_dial(s->port);
	send_req(s, fd, "OPTIONS", "/mcp", NULL,
	    "Origin: http://localhost:5173\r\n"
	    "Access-Control-Request-Method: POST\r\n",
	    NULL, 0);
	cr_expect_eq(
	    read_reply(fd, buf, sizeof buf, 5000, NULL), 403, "%s", buf);
	cr_expect(!h_contains(buf, "Access-Control-Allow-Origin"), "%s", buf);
	close(fd);
	fd = h_dial(s->port);
	snprintf(hdrs, sizeof hdrs,
	    ACCEPT CTYPE "Origin: http://127.0.0.1:%d\r\n", s->port + 1);
	send_req(s, fd, "POST", "/mcp", s->token, hdrs, INIT_BODY,
	    strlen(INIT_BODY));
	cr_expect_eq(
	    read_reply(fd, buf, sizeof buf, 5000, NULL), 403, "%s", buf);
	cr_expect(!h_contains(buf, "Access-Control-Allow-Origin"), "%s", buf);
	close(fd);
	asrv_stop(s);
}

/* --- items 8 and 13: sessions and calls --- */

/*
 * Calls that never answer (sleep 300, each request padded with 1 MiB):
 * past --max-calls-per-session they are refused at once; the server's
 * RSS stays bounded while they hang; cancelled, they free their slots.
 */
Test(http_adv, hung_calls_capped_and_freed, .timeout = 600)
{
	enum { FLOOD = 60, CAP = 8 };
	static char pad[1 << 20];
	char buf[8192], args[160], note[256];
	struct asrv *s;
	char *sid, *cid;
	int fds[FLOOD], i, refused = 0, pending = 0, st;
	long rss0, rss1, rss2;
	long long t0, freed_ms;

	s = asrv_start("the-right-token", "--max-calls-per-session", "8",
	    "--max-calls", "100", NULL);
	sid = session(s);
	cid = sandbox(s, sid);
	memset(pad, 'p', sizeof pad - 1);
	pad[sizeof pad - 1] = '\0';
	snprintf(args, sizeof args,
	    "{\"container_id\":\"%s\",\"commands\":\"sleep 300\"}", cid);
	rss0 = h_status_kb(s->pid, "VmRSS");
	for (i = 0; i < FLOOD; i++)
		fds[i] =
		    call_start(s, sid, 1000 + i, "sandbox_exec", args, pad);
	for (i = 0; i < FLOOD; i++) {
		st = read_reply(fds[i], buf, sizeof buf, 90000, "\r\n\r\n");
		cr_assert_eq(st, 200, "%s", buf);
		if (h_contains(buf, "text/event-stream"))
			pending++;
		else {
			/* The whole refusal, if the first read was short. */
			if (!h_contains(buf, "--max-calls-per-session"))
				read_reply(fds[i], buf, sizeof buf, 5000, NULL);
			cr_expect(h_contains(buf, "--max-calls-per-session"),
			    "%s", buf);
			refused++;
			close(fds[i]);
			fds[i] = -1;
		}
	}
	rss1 = h_status_kb(s->pid, "VmRSS");
	cr_expect_eq(pending, CAP, "%d calls in flight (cap %d)", pending, CAP);
	cr_expect_eq(refused, FLOOD - CAP);
	/* 60 requests of 1 MiB went through (parsed twice, then freed):
	 * malloc keeps some of that; what is held is 8 calls' arguments. */
	if (getenv("ASAN_OPTIONS") == NULL)
		cr_expect_lt(rss1 - rss0, 96 * 1024,
		    "RSS grew %ld KiB with %d hung calls of 1 MiB", rss1 - rss0,
		    pending);
	/* Cancel them all; their slots come back. */
	for (i = 0; i < FLOOD; i++) {
		if (fds[i] < 0)
			continue;
		snprintf(note, sizeof note,
		    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
		    "cancelled\",\"params\":{\"requestId\":%d}}",
		    1000 + i);
		cr_expect_eq(rpc(s, sid, note, NULL), 202);
		close(fds[i]);
	}
	/* Again: as many may run as before (one at a time until the cap,
	 * as the cancelled ones give their slots back), then the rest of
	 * the flood is refused, and the RSS does not climb. */
	pending = 0;
	t0 = h_now_ms();
	for (i = 0; pending < CAP && h_now_ms() - t0 < 60000; i++) {
		fds[0] =
		    call_start(s, sid, 5000 + i, "sandbox_exec", args, pad);
		st = read_reply(fds[0], buf, sizeof buf, 90000, "\r\n\r\n");
		if (st == 200 && h_contains(buf, "text/event-stream"))
			pending++;
		else
			usleep(500000);
		close(fds[0]); /* the call goes on without its stream */
	}
	cr_expect_eq(
	    pending, CAP, "after the cancels, %d could start", pending);
	freed_ms = h_now_ms() - t0;
	for (i = 0; i < FLOOD - CAP; i++) {
		fds[i] =
		    call_start(s, sid, 9000 + i, "sandbox_exec", args, pad);
		st = read_reply(fds[i], buf, sizeof buf, 90000, "\r\n\r\n");
		cr_expect(st == 200 && !h_contains(buf, "text/event-stream"),
		    "past the cap: %s", buf);
		close(fds[i]);
	}
	rss2 = h_status_kb(s->pid, "VmRSS");
	/* The same flood again holds nothing more: what the first held
	 * was freed (and reused).  Not under ASan, whose allocator keeps
	 * what is freed. */
	if (getenv("ASAN_OPTIONS") == NULL)
		cr_expect_lt(rss2 - rss1, 16 * 1024,
		    "RSS %ld -> %ld -> %ld KiB", rss0, rss1, rss2);
	cr_log_info("hung calls: %d in flight of %d sent, RSS %ld -> %ld -> "
	            "%ld KiB; %d slots back within %lld ms of the cancels",
	    CAP, FLOOD, rss0, rss1, rss2, CAP, freed_ms);
	free(cid);
	free(sid);
	asrv_stop(s); /* ends the session: its calls end with it */
}

/* --max-calls holds across sessions; another session is told why. */
Test(http_adv, total_calls_cap, .timeout = 300)
{
	char buf[8192], args[160];
	struct asrv *s;
	char *a, *b, *cid, *r;
	int fds[4], i;

	s = asrv_start("the-right-token", "--max-calls", "3", NULL);
	a = session(s);
	b = session(s);
	cid = sandbox(s, a);
	snprintf(args, sizeof args,
	    "{\"container_id\":\"%s\",\"commands\":\"sleep 300\"}", cid);
	for (i = 0; i < 3; i++) {
		fds[i] = call_start(s, a, 100 + i, "sandbox_exec", args, NULL);
		cr_assert_eq(
		    read_reply(fds[i], buf, sizeof buf, 20000, "\r\n\r\n"),
		    200);
	}
	cr_expect_eq(rpc(s, b,
	                 "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/"
	                 "call\",\"params\":{\"name\":\"get_sandbox_status\","
	                 "\"arguments\":{}}}",
	                 &r),
	    200);
	cr_expect(
	    h_contains(r, "--max-calls") && h_contains(r, "isError"), "%s", r);
	for (i = 0; i < 3; i++)
		close(fds[i]);
	free(cid);
	free(a);
	free(b);
	asrv_stop(s);
}

/* Per-session sandboxes: the third is refused, other sessions unaffected. */
Test(http_adv, sandboxes_per_session, .timeout = 300)
{
	struct asrv *s;
	char *a, *b, *r, *c1, *c2, *c3;

	s = asrv_start(
	    "the-right-token", "--max-sandboxes-per-session", "2", NULL);
	a = session(s);
	b = session(s);
	c1 = sandbox(s, a);
	c2 = sandbox(s, a);
	cr_expect_eq(rpc(s, a,
	                 "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/"
	                 "call\",\"params\":{\"name\":\"sandbox_initialize\","
	                 "\"arguments\":{}}}",
	                 &r),
	    200);
	cr_expect(h_contains(r, "--max-sandboxes-per-session") &&
	              h_contains(r, "isError"),
	    "%s", r);
	c3 = sandbox(s, b); /* another session still may */
	free(c1);
	free(c2);
	free(c3);
	free(a);
	free(b);
	asrv_stop(s);
}

/* Creations whose answers are read (done[i] is their rank, from 1). */
struct fair {
	int n, fds[16], done[16], order;
	size_t got[16];
	char buf[16][1 << 14];
};

/* Read the answers that came within ms; how many are still to come. */
static int
fair_read(struct fair *f, int ms)
{
	long long deadline = h_now_ms() + ms;
	struct pollfd pfd;
	ssize_t n;
	int i, left;

	do {
		left = 0;
		for (i = 0; i < f->n; i++) {
			if (f->done[i])
				continue;
			left++;
			pfd.fd = f->fds[i];
			pfd.events = POLLIN;
			if (poll(&pfd, 1, 5) != 1)
				continue;
			n = read(f->fds[i], f->buf[i] + f->got[i],
			    sizeof f->buf[i] - 1 - f->got[i]);
			if (n > 0) {
				f->got[i] += (size_t)n;
				f->buf[i][f->got[i]] = '\0';
			}
			/* The result (or the end of the connection). */
			if (n > 0 && !h_contains(f->buf[i], "\"result\""))
				continue;
			cr_expect(h_contains(f->buf[i], "container_id"), "%s",
			    f->buf[i]);
			f->done[i] = ++f->order;
			left--;
			close(f->fds[i]);
		}
	} while (left > 0 && h_now_ms() < deadline);
	return left;
}

/*
 * Start slots are shared: a session with many creations queued takes
 * turns with another, whose one creation is not served after all of
 * them.  With one slot, when b's creation comes, one of a's holds it
 * (and one more may take it while b's image is looked at): b's is served
 * within two of those after the ones already done, where first come
 * first served puts it last.
 */
Test(http_adv, start_slots_fair, .timeout = 300)
{
	enum { MANY = 10 };
	static struct fair f;
	struct asrv *s;
	char *a, *b;
	int i, before, left;

	s = asrv_start("the-right-token", "--max-concurrent-starts", "1",
	    "--max-sandboxes-per-session", "16", NULL);
	a = session(s);
	b = session(s);
	memset(&f, 0, sizeof f);
	for (i = 0; i < MANY; i++)
		f.fds[f.n++] =
		    call_start(s, a, 10 + i, "sandbox_initialize", "{}", NULL);
	/* a's creations are in the queue first; count those done. */
	(void)fair_read(&f, 150);
	before = f.order;
	cr_assert_lt(before, MANY - 3,
	    "%d of a's creations were done before b's came", before);
	f.fds[f.n++] = call_start(s, b, 99, "sandbox_initialize", "{}", NULL);
	left = fair_read(&f, 240000);
	cr_expect_eq(left, 0, "%d creations did not finish", left);
	cr_expect(f.done[MANY] >= 1 && f.done[MANY] <= before + 3,
	    "the other session's creation finished %d of %d (%d were done "
	    "before it came)",
	    f.done[MANY], MANY + 1, before);
	cr_log_info("fair starts: session b's creation finished %d of %d, "
	            "%d done before it came",
	    f.done[MANY], MANY + 1, before);
	free(a);
	free(b);
	asrv_stop(s);
}

/* Whether the peer of fd closed it (EOF or reset), without waiting. */
static int
peer_closed(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char b[256];

	return poll(&p, 1, 0) == 1 && read(fd, b, sizeof b) <= 0;
}

/* An exposed port behind a bearer token (--expose-auth on). */
struct authport {
	struct h_server *s;
	char tokfile[64];
	char *cid;
	int port;
};

/*
 * A server with token, a sandbox running cmd in the background (a server
 * on 127.0.0.1:8001), that port exposed.
 */
static void
authport_start(struct authport *ap, const char *token, const char *cmd)
{
	char listen[32], req[1024], *out;
	json_object *r, *a;
	int fd;

	snprintf(ap->tokfile, sizeof ap->tokfile,
	    "/tmp/mcp-sandboxd-adv-token-XXXXXX");
	fd = mkstemp(ap->tokfile);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, token, strlen(token)), (ssize_t)strlen(token));
	close(fd);
	snprintf(listen, sizeof listen, "127.0.0.1:%d", h_free_port());
	ap->s =
	    h_start("--agent", "on", "--transport", "both", "--listen", listen,
	        "--auth-token-file", ap->tokfile, "--expose-auth", "on", NULL);
	json_object_put(h_initialize(ap->s));
	ap->cid = h_create(ap->s, NULL);
	a = json_object_new_object();
	json_object_object_add(
	    a, "container_id", json_object_new_string(ap->cid));
	json_object_object_add(a, "background", json_object_new_boolean(1));
	json_object_object_add(a, "timeout_seconds", json_object_new_int(200));
	json_object_object_add(a, "commands", json_object_new_string(cmd));
	r = h_call_tool_obj(ap->s, "sandbox_exec", a, 30000);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	json_object_put(r);
	out = h_exec_ok(ap->s, ap->cid,
	    "for i in $(seq 100); do grep -q ':1F41 00000000:0000 0A' "
	    "/proc/net/tcp && echo up && exit 0; sleep 0.1; done; echo down");
	cr_assert(h_contains(out, "up"), "no server in the sandbox: %s", out);
	free(out);
	snprintf(req, sizeof req, "{\"container_id\":\"%s\",\"port\":8001}",
	    ap->cid);
	r = h_call_tool(ap->s, "sandbox_expose_port", req);
	cr_assert(!h_is_error(r), "expose: %s", h_text(r));
	ap->port = (int)h_int(r, "structuredContent.host_port");
	json_object_put(r);
}

static void
authport_stop(struct authport *ap)
{
	h_stop(ap->s, ap->cid);
	free(ap->cid);
	/* HTTP serves on after stdin's end (--transport both): a signal. */
	kill(ap->s->pid, SIGTERM);
	cr_expect_eq(h_wait_exit(ap->s, 30000), 0);
	cr_expect_eq(h_docker_count(ap->s->label), 0);
	h_free(ap->s);
	unlink(ap->tokfile);
}

/* What fd's peer sends until it closes or is silent for 10 s. */
static char *
read_all(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap + 1);
	ssize_t k;

	cr_assert_not_null(buf);
	while (n < cap && poll(&p, 1, 10000) == 1 &&
	       (k = read(fd, buf + n, cap - n)) > 0)
		n += (size_t)k;
	buf[n] = '\0';
	return buf;
}

/*
 * Pre-auth lockout of an exposed port (--expose-auth on): 16 connections
 * send one byte of a head every 2 s, never the token.  A byte does not
 * restart the head's time (a deadline of 10 s from the accept, not an
 * idle timeout), and they cannot keep a client with the token out: its
 * connection takes the place of the one that waited longest, and its
 * request is answered at once.  They once held every place for as long
 * as they kept sending.
 */
Test(http, slow_heads_do_not_lock_an_exposed_port, .timeout = 240)
{
	static const char token[] = "slow-heads-token-0123456789";
	int fd, slow[16], closed_at[16], i, t;
	struct authport ap;
	char req[256], *resp;

	authport_start(&ap, token,
	    "cd /tmp && exec python3 -m http.server 8001 --bind 127.0.0.1");
	for (i = 0; i < 16; i++) {
		slow[i] = h_dial(ap.port);
		cr_assert_geq(slow[i], 0);
		closed_at[i] = -1;
		cr_assert_eq(write(slow[i], "G", 1), 1);
	}
	sleep(1);
	/* A client with the token, while all 16 places are taken. */
	fd = h_dial(ap.port);
	cr_assert_geq(fd, 0);
	snprintf(req, sizeof req,
	    "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
	    "Connection: close\r\n\r\n",
	    token);
	cr_assert_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	resp = read_all(fd);
	close(fd);
	cr_expect(strncmp(resp, "HTTP/1.0 200 ", 13) == 0,
	    "the client with the token was not answered: \"%.200s\"", resp);
	free(resp);

	/* The slow ones send a byte every 2 s: all closed by 12 s. */
	for (t = 1; t <= 14; t++) {
		sleep(1);
		for (i = 0; i < 16; i++) {
			if (closed_at[i] != -1)
				continue;
			if (peer_closed(slow[i]))
				closed_at[i] = t + 1;
			else if (t % 2 == 0)
				(void)!write(slow[i], "E", 1);
		}
	}
	for (i = 0; i < 16; i++) {
		cr_expect(closed_at[i] != -1 && closed_at[i] <= 13,
		    "slow connection %d: closed at %d s (-1: never)", i,
		    closed_at[i]);
		close(slow[i]);
	}
	/* Every one that went was counted: sandbox://stats, /metrics. */
	cr_expect_geq(adv_stat(ap.s, "limits.exposed_connections_refused"), 16);
	authport_stop(&ap);
}

/*
 * The bearer token through a kept-alive connection (--expose-auth on): an
 * HTTP/1.1 server in the sandbox that keeps connections open and writes
 * down each request's path and Authorization.  curl with two URLs (one
 * connection, the token in each request) and a raw connection with two
 * requests written at once: the sandbox sees no Authorization, ever; both
 * of curl's requests are answered (it opens a new connection for the
 * second), the raw connection's first.  The token of a connection's second
 * request once reached the sandbox's server.
 */
Test(http, the_token_never_reaches_the_sandbox_on_a_kept_connection,
    .timeout = 240)
{
	static const char token[] = "kept-alive-token-0123456789";
	static const char server[] =
	    "cat > /tmp/keep.py <<'EOF'\n"
	    "import http.server\n"
	    "class H(http.server.BaseHTTPRequestHandler):\n"
	    "    protocol_version = 'HTTP/1.1'\n"
	    "    def do_GET(self):\n"
	    "        with open('/tmp/seen', 'a') as f:\n"
	    "            f.write('%s %s\\n' % (self.path,\n"
	    "                self.headers.get('Authorization')))\n"
	    "        b = ('ok %s\\n' % self.path).encode()\n"
	    "        self.send_response(200)\n"
	    "        self.send_header('Content-Length', str(len(b)))\n"
	    "        self.end_headers(); self.wfile.write(b)\n"
	    "    def log_message(self, *a): pass\n"
	    "http.server.HTTPServer(('127.0.0.1', 8001), H).serve_forever()\n"
	    "EOF\n"
	    "exec python3 /tmp/keep.py";
	char cmd[1024], req[1024], *out, *resp;
	struct authport ap;
	int status, fd;

	authport_start(&ap, token, server);
	snprintf(cmd, sizeof cmd,
	    "curl -s -m 30 -H 'Authorization: Bearer %s' "
	    "http://127.0.0.1:%d/one http://127.0.0.1:%d/two",
	    token, ap.port, ap.port);
	out = h_run(cmd, &status);
	cr_expect_eq(status, 0, "curl: %s", out);
	cr_expect_str_eq(out, "ok /one\nok /two\n");
	free(out);

	fd = h_dial(ap.port);
	cr_assert_geq(fd, 0);
	snprintf(req, sizeof req,
	    "GET /three HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
	    "\r\nGET /four HTTP/1.1\r\nHost: x\r\n"
	    "Authorization: Bearer %s\r\n\r\n",
	    token, token);
	cr_assert_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	resp = read_all(fd);
	close(fd);
	cr_expect(h_contains(resp, "ok /three\n"), "%s", resp);
	free(resp);

	out = h_exec_ok(ap.s, ap.cid, "cat /tmp/seen");
	cr_expect(h_contains(out, "/one None\n") &&
	              h_contains(out, "/two None\n") &&
	              h_contains(out, "/three None\n"),
	    "the sandbox saw: %s", out);
	cr_expect(!h_contains(out, token) && !h_contains(out, "Bearer"),
	    "the token reached the sandbox: %s", out);
	free(out);
	authport_stop(&ap);
}
