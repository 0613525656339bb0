/*
 * The control socket and the operator's commands against the real
 * engine: the socket private (0600 in a 0700 directory of ours, a
 * directory that is not refused, a peer of another uid refused), hostile
 * requests dropping their client while the server lives on, a stale
 * socket removed by the command that finds it; ls, logs and stop as an
 * operator uses them; --log-format json lines that parse and carry the
 * request id.
 */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <linux/capability.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

/* The command exits with status and says what it prints. */
static void
cli_says(const char *dir, const char *args, int want, const char *says)
{
	char *out;
	int status;

	out = h_cli(dir, args, &status);
	cr_expect_eq(status, want, "%s: %s", args, out);
	cr_expect(h_contains(out, says), "%s: %s", args, out);
	free(out);
}

/* A fresh control directory (mkdtemp: 0700, ours). */
static void
ctl_dir(char *dir, size_t len)
{
	snprintf(dir, len, "/tmp/mcp-ctl-test-XXXXXX");
	cr_assert(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
}

static void
ctl_sock(const char *dir, pid_t pid, char *path, size_t len)
{
	snprintf(path, len, "%s/%d.sock", dir, (int)pid);
}

/* The server's socket appears (it listens before it is ready). */
static void
ctl_wait_socket(const char *path)
{
	long long deadline = h_now_ms() + 20000;
	struct stat st;

	while (lstat(path, &st) == -1) {
		cr_assert(h_now_ms() < deadline, "no control socket %s", path);
		usleep(20000);
	}
}

/* A server with its own control directory, once its socket is there. */
static struct h_server *
ctl_server(char *dir, size_t dirlen, char *path, size_t pathlen)
{
	struct h_server *s;

	ctl_dir(dir, dirlen);
	s = h_start("--control-dir", dir, NULL);
	json_object_put(h_initialize(s));
	ctl_sock(dir, s->pid, path, pathlen);
	ctl_wait_socket(path);
	return s;
}

/* A connection to the socket at path (flags: SOCK_NONBLOCK for -1 at
 * once when its listen queue is full), or -1. */
static int
ctl_connect_flags(const char *path, int flags)
{
	struct sockaddr_un sun;
	int fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
	cr_assert(fd >= 0);
	if (connect(fd, (struct sockaddr *)&sun, sizeof sun) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static int
ctl_connect(const char *path)
{
	return ctl_connect_flags(path, 0);
}

/* Whether the server closed fd within ms (reads and drops its bytes). */
static int
ctl_closed(int fd, int ms)
{
	long long deadline = h_now_ms() + ms;
	struct pollfd pfd = {fd, POLLIN, 0};
	char buf[4096];
	ssize_t n;

	while (h_now_ms() < deadline) {
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		n = read(fd, buf, sizeof buf);
		if (n == 0 || (n == -1 && errno == ECONNRESET))
			return 1;
	}
	return 0;
}

/* One request line, one answer line, parsed. */
static json_object *
ctl_ask(int fd, const char *req)
{
	char buf[65536];
	size_t len = 0;
	ssize_t n;
	struct pollfd pfd = {fd, POLLIN, 0};

	cr_assert(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
	while (len < sizeof buf - 1 && memchr(buf, '\n', len) == NULL) {
		cr_assert(poll(&pfd, 1, 10000) == 1, "no answer to %s", req);
		n = read(fd, buf + len, sizeof buf - 1 - len);
		cr_assert(n > 0, "the server closed the connection on %s", req);
		len += (size_t)n;
	}
	buf[len] = '\0';
	return h_parse(buf);
}

/* Whether an answer with "ok": true comes on fd within 2 s. */
static int
ctl_answers_ok(int fd)
{
	struct pollfd pfd = {fd, POLLIN, 0};
	char buf[65536];
	json_object *a;
	size_t len = 0;
	ssize_t n;
	int ok;

	while (len < sizeof buf - 1 && memchr(buf, '\n', len) == NULL) {
		if (poll(&pfd, 1, 2000) != 1 ||
		    (n = read(fd, buf + len, sizeof buf - 1 - len)) <= 0)
			return 0;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if ((a = json_tokener_parse(buf)) == NULL)
		return 0;
	ok = json_object_get_boolean(json_object_object_get(a, "ok"));
	json_object_put(a);
	return ok;
}

Test(control, socket_private_and_removed_at_exit, .timeout = 120)
{
	char dir[64], path[128];
	struct h_server *s;
	struct stat st;

	s = ctl_server(dir, sizeof dir, path, sizeof path);
	cr_assert(lstat(path, &st) == 0 && S_ISSOCK(st.st_mode));
	cr_expect_eq(
	    st.st_mode & 0777, 0600, "socket mode %o", st.st_mode & 0777);
	cr_expect_eq(st.st_uid, geteuid());
	cr_assert(stat(dir, &st) == 0);
	cr_expect_eq(st.st_mode & 0777, 0700);
	h_finish(s);
	cr_expect(lstat(path, &st) == -1 && errno == ENOENT,
	    "the socket outlived its server");
	cr_assert(rmdir(dir) == 0, "rmdir %s: %s", dir, strerror(errno));
}

Test(control, default_dir_made_private, .timeout = 120)
{
	char dir[64], xdg[96], path[192];
	struct h_server *s;
	struct stat st;

	/* ${XDG_RUNTIME_DIR}/mcp-sandboxd-control-UID, made 0700. */
	ctl_dir(dir, sizeof dir);
	setenv("XDG_RUNTIME_DIR", dir, 1);
	unsetenv("MCP_SANDBOXD_CONTROL_DIR");
	s = h_start(NULL);
	json_object_put(h_initialize(s));
	snprintf(
	    xdg, sizeof xdg, "%s/mcp-sandboxd-control-%d", dir, (int)geteuid());
	ctl_sock(xdg, s->pid, path, sizeof path);
	ctl_wait_socket(path);
	cr_assert(lstat(xdg, &st) == 0 && S_ISDIR(st.st_mode));
	cr_expect_eq(st.st_mode & 0777, 0700);
	h_finish(s);
	cr_assert(rmdir(xdg) == 0);
	h_rm_rf(dir); /* the runtime directory's spools are there too */
}

Test(control, unsafe_dir_refused, .timeout = 120)
{
	char dir[64], link[96], path[128], *out;
	struct h_server *s;
	struct stat st;
	int status;

	/* Open to others: the server runs on without a socket. */
	ctl_dir(dir, sizeof dir);
	cr_assert(chmod(dir, 0755) == 0);
	s = h_start("--control-dir", dir, NULL);
	json_object_put(h_initialize(s));
	ctl_sock(dir, s->pid, path, sizeof path);
	cr_expect(lstat(path, &st) == -1, "a socket in a 0755 directory");
	out = h_cli(dir, "ls", &status);
	cr_expect_eq(status, 1);
	cr_expect(h_contains(out, "not a private directory"), "%s", out);
	free(out);
	h_finish(s);

	/* A symlink to a private directory: refused too. */
	cr_assert(chmod(dir, 0700) == 0);
	snprintf(link, sizeof link, "%s-link", dir);
	cr_assert(symlink(dir, link) == 0);
	s = h_start("--control-dir", link, NULL);
	json_object_put(h_initialize(s));
	ctl_sock(dir, s->pid, path, sizeof path);
	cr_expect(lstat(path, &st) == -1, "a socket through a symlink");
	h_finish(s);
	cr_assert(unlink(link) == 0);
	cr_assert(rmdir(dir) == 0);
}

/* In a child: become uid 65534 but keep CAP_DAC_OVERRIDE, so that only
 * the server's own check of the peer stands in the way. */
static int
connect_as_nobody(const char *path)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	int fd;

	if (prctl(PR_SET_KEEPCAPS, 1) == -1 || setgid(65534) == -1 ||
	    setuid(65534) == -1)
		return 2;
	memset(data, 0, sizeof data);
	data[0].effective = data[0].permitted = 1u << CAP_DAC_OVERRIDE;
	if (syscall(SYS_capset, &hdr, data) == -1)
		return 3;
	if ((fd = ctl_connect(path)) == -1)
		return 4;
	if (write(fd, "{\"cmd\":\"top\"}\n", 14) != 14 && errno != EPIPE &&
	    errno != ECONNRESET)
		return 5;
	return ctl_closed(fd, 10000) ? 0 : 6;
}

Test(control, peer_of_another_uid_refused, .timeout = 120)
{
	char dir[64], path[128];
	struct h_server *s;
	json_object *a;
	pid_t child;
	int st, fd;

	s = ctl_server(dir, sizeof dir, path, sizeof path);
	child = fork();
	cr_assert(child != -1);
	if (child == 0)
		_exit(connect_as_nobody(path));
	cr_assert(waitpid(child, &st, 0) == child);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "the child of uid 65534: status %d (6: it was answered)",
	    WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	/* Our own uid is answered. */
	fd = ctl_connect(path);
	cr_assert(fd >= 0);
	a = ctl_ask(fd, "{\"cmd\":\"top\"}\n");
	cr_expect(h_bool(a, "ok"));
	cr_expect_eq(h_int(a, "server.pid"), s->pid);
	json_object_put(a);
	close(fd);
	h_finish(s);
	cr_assert(rmdir(dir) == 0);
}

Test(control, hostile_requests_drop_the_client, .timeout = 120)
{
	char dir[64], path[128], big[8192];
	struct h_server *s;
	json_object *a;
	int fd;

	s = ctl_server(dir, sizeof dir, path, sizeof path);

	/* A line with no end past the cap. */
	fd = ctl_connect(path);
	memset(big, 'x', sizeof big);
	cr_assert(write(fd, big, sizeof big) == (ssize_t)sizeof big);
	cr_expect(ctl_closed(fd, 10000), "an oversize request kept its client");
	close(fd);
	/* Not JSON; JSON but not an object; nested past the cap. */
	fd = ctl_connect(path);
	cr_assert(write(fd, "hello\n", 6) == 6);
	cr_expect(ctl_closed(fd, 10000), "garbage kept its client");
	close(fd);
	fd = ctl_connect(path);
	cr_assert(write(fd, "[1,2]\n", 6) == 6);
	cr_expect(ctl_closed(fd, 10000), "an array kept its client");
	close(fd);
	fd = ctl_connect(path);
	cr_assert(
	    write(fd, "{\"cmd\":{\"a\":{\"b\":{\"c\":{}}}}}\n", 29) == 29);
	cr_expect(ctl_closed(fd, 10000), "deep nesting kept its client");
	close(fd);
	/* An unknown command is answered, the client kept. */
	fd = ctl_connect(path);
	a = ctl_ask(fd, "{\"cmd\":\"reboot\"}\n");
	cr_expect(!h_bool(a, "ok"));
	cr_expect(h_contains(h_str(a, "error"), "unknown command"));
	json_object_put(a);
	a = ctl_ask(fd, "{\"cmd\":\"top\"}\n");
	cr_expect(h_bool(a, "ok"));
	json_object_put(a);
	close(fd);
	/* The server lives on, for MCP and for control. */
	a = h_request(s, "ping", NULL, 10000);
	cr_expect(h_get(a, "result") != NULL);
	json_object_put(a);
	h_finish(s);
	cr_assert(rmdir(dir) == 0);
}

Test(control, stale_socket_removed, .timeout = 120)
{
	char dir[64], path[128], stale[96], *out;
	struct sockaddr_un sun;
	struct h_server *s;
	json_object *j;
	struct stat st;
	int fd, status;

	ctl_dir(dir, sizeof dir);
	/* A socket nobody listens on any more (a server killed -9). */
	snprintf(stale, sizeof stale, "%s/2147483000.sock", dir);
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s", stale);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert(bind(fd, (struct sockaddr *)&sun, sizeof sun) == 0);
	close(fd);
	out = h_cli(dir, "ls", &status);
	cr_expect_eq(status, 1);
	cr_expect(h_contains(out, "no server running"), "%s", out);
	free(out);
	cr_expect(lstat(stale, &st) == -1, "the stale socket stayed");
	/* As JSON, none running is an empty list, as docker ps has it. */
	out = h_cli(dir, "ls --json", &status);
	cr_expect_eq(status, 0, "%s", out);
	cr_expect_str_eq(out, "{\"servers\":[]}\n");
	free(out);

	cr_assert(bind(fd = socket(AF_UNIX, SOCK_STREAM, 0),
	              (struct sockaddr *)&sun, sizeof sun) == 0);
	close(fd);
	s = h_start("--control-dir", dir, NULL);
	json_object_put(h_initialize(s));
	ctl_sock(dir, s->pid, path, sizeof path);
	ctl_wait_socket(path);
	out = h_cli(dir, "ls --json", &status);
	cr_expect_eq(status, 0, "%s", out);
	j = h_parse(out);
	cr_expect_eq(
	    json_object_array_length(h_get(j, "servers")), 1, "%s", out);
	cr_expect_eq(h_int(j, "servers.0.pid"), s->pid);
	cr_expect(lstat(stale, &st) == -1, "the stale socket stayed");
	json_object_put(j);
	free(out);
	h_finish(s);
	cr_assert(rmdir(dir) == 0);
}

Test(control, ls_logs_stop, .timeout = 240)
{
	char dir[64], args[256], *cid, *out;
	struct h_server *s;
	json_object *j;
	int status;

	ctl_dir(dir, sizeof dir);
	s = h_start("--control-dir", dir, NULL);
	json_object_put(h_initialize(s));
	cid = h_create(s, "{\"name\":\"ctl-box\"}");
	free(h_exec_ok(s, cid, "echo control-marker-$((6*7))"));

	out = h_cli(dir, "ls --json", &status);
	cr_assert_eq(status, 0, "%s", out);
	j = h_parse(out);
	cr_expect_eq(h_int(j, "servers.0.pid"), s->pid);
	cr_expect_str_eq(h_str(j, "servers.0.transport"), "stdio");
	cr_expect_str_eq(h_str(j, "servers.0.sandboxes.0.id"), cid);
	cr_expect_str_eq(h_str(j, "servers.0.sandboxes.0.name"), "ctl-box");
	cr_expect_str_eq(h_str(j, "servers.0.sandboxes.0.state"), "running");
	cr_expect_eq(h_int(j, "servers.0.sandboxes.0.execs"), 1);
	cr_expect(h_int(j, "servers.0.sandboxes.0.memory_bytes") > 0);
	/* What top's table and ls's columns are made of. */
	cr_expect(h_int(j, "servers.0.sandboxes.0.cpu_ns") > 0, "%s", out);
	cr_expect(h_int(j, "servers.0.sandboxes.0.pids") >= 1, "%s", out);
	cr_expect_eq(h_int(j, "servers.0.sandboxes.0.pids_limit"), 128);
	cr_expect(h_int(j, "servers.0.sandboxes.0.session") > 0, "%s", out);
	cr_expect(!h_bool(j, "servers.0.sandboxes.0.detached"));
	cr_expect_not_null(h_get(j, "servers.0.sandboxes.0.idle_seconds"));
	json_object_put(j);
	free(out);
	out = h_cli(dir, "ls", &status);
	cr_expect_eq(status, 0);
	cr_expect(h_contains(out, "ctl-box"), "%s", out);
	cr_expect(
	    h_contains(out, " CPU ") && h_contains(out, " SESSION"), "%s", out);
	free(out);
	/* top without a terminal: two looks, each sandbox with its rates. */
	out = h_cli(dir, "top --json", &status);
	cr_expect_eq(status, 0, "%s", out);
	j = h_parse(out);
	cr_expect_str_eq(h_str(j, "sandbox_list.0.id"), cid);
	cr_expect_not_null(h_get(j, "sandbox_list.0.cpu_percent"), "%s", out);
	cr_expect_not_null(
	    h_get(j, "sandbox_list.0.execs_per_second"), "%s", out);
	json_object_put(j);
	free(out);
	out = h_cli(dir, "top", &status);
	cr_expect_eq(status, 0, "%s", out);
	cr_expect(
	    h_contains(out, "sandboxes by CPU%") && h_contains(out, "ctl-box"),
	    "%s", out);
	free(out);

	/* logs by name: the exec's command and output. */
	out = h_cli(dir, "logs ctl-box", &status);
	cr_expect_eq(status, 0, "%s", out);
	cr_expect(h_contains(out, "$ echo control-marker-$((6*7))"), "%s", out);
	cr_expect(h_contains(out, "control-marker-42"), "%s", out);
	free(out);

	/* Clear errors: unknown, too short a prefix, a missing or an extra
	 * operand. */
	cli_says(dir, "logs no-such-box", 1, "no sandbox \"no-such-box\"");
	snprintf(args, sizeof args, "stop %.8s", cid);
	cli_says(dir, args, 1, "");
	cr_expect(h_container_exists(cid), "a prefix of 8 stopped it");
	cli_says(dir, "logs", 2, "give one sandbox ID");
	cli_says(dir, "ls ctl-box", 2, "takes no operand");

	/* stop by a prefix of 12, its option after the ID (as docker
	 * takes them): gone from the engine. */
	snprintf(args, sizeof args, "stop %.12s --json", cid);
	out = h_cli(dir, args, &status);
	cr_expect_eq(status, 0, "%s", out);
	j = h_parse(out);
	cr_expect(h_bool(j, "removed"));
	cr_expect_str_eq(h_str(j, "id"), cid);
	json_object_put(j);
	free(out);
	cr_expect(h_wait_container_gone(cid, 30000), "the container stayed");
	out = h_cli(dir, "ls --json", &status);
	j = h_parse(out);
	cr_expect_eq(json_object_array_length(h_get(j, "servers.0.sandboxes")),
	    0, "%s", out);
	json_object_put(j);
	free(out);
	free(cid);
	h_finish(s);
	cr_assert(rmdir(dir) == 0);
}

Test(control, log_format_json_with_request_ids, .timeout = 240)
{
	char logf[] = "/tmp/mcp-ctl-log-XXXXXX", *text, *line, *save, cmd[64];
	struct h_server *s;
	json_object *o;
	const char *proc;
	int fd, saved, lines = 0, with_id = 0, workers = 0;
	char *cid;

	fd = mkstemp(logf);
	cr_assert(fd >= 0);
	/* The server's stderr (and its workers') into the file. */
	saved = dup(2);
	cr_assert(dup2(fd, 2) == 2);
	s = h_start("--log-format", "json", "--log-level", "debug", "--control",
	    "off", NULL);
	dup2(saved, 2);
	close(saved);
	close(fd);
	json_object_put(h_initialize(s));
	cid = h_create(s, "{\"name\":\"json-log\"}");
	free(h_exec_ok(s, cid, "echo hi"));
	h_stop(s, cid);
	free(cid);
	h_finish(s);

	snprintf(cmd, sizeof cmd, "cat %s", logf);
	text = h_run(cmd, NULL);
	unlink(logf);
	for (line = strtok_r(text, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		lines++;
		o = json_tokener_parse(line);
		cr_assert(o != NULL && json_object_is_type(o, json_type_object),
		    "not a JSON object: %s", line);
		cr_expect(h_str(o, "time") != NULL &&
		              h_str(o, "level") != NULL &&
		              h_str(o, "message") != NULL,
		    "%s", line);
		proc = h_str(o, "process");
		cr_expect(proc != NULL, "%s", line);
		if (proc != NULL && strncmp(proc, "worker[", 7) == 0)
			workers++;
		/* The exec's call: the request's JSON-RPC id is a number. */
		if (h_get(o, "request.id") != NULL &&
		    h_get(o, "request.session") != NULL &&
		    h_contains(h_str(o, "message"), "tools/call sandbox_exec"))
			with_id++;
		json_object_put(o);
	}
	free(text);
	cr_expect(lines > 0);
	cr_expect(workers > 0, "no line of a worker");
	cr_expect(with_id > 0, "no line carries a request id");
}

Test(control, client_that_does_not_read_dropped, .timeout = 180)
{
	char dir[64], path[128], req[128], *cid;
	struct h_server *s;
	long long t0;
	json_object *a;
	int fd;

	s = ctl_server(dir, sizeof dir, path, sizeof path);
	/* A log of about 900 KB: more than the socket's buffers hold. */
	cid = h_create(s, "{\"name\":\"big-log\"}");
	free(h_exec_ok(s, cid, "head -c 900000 /dev/zero | tr '\\0' x; echo"));
	fd = ctl_connect(path);
	cr_assert(fd >= 0);
	snprintf(req, sizeof req, "{\"cmd\":\"logs\",\"id\":\"big-log\"}\n");
	cr_assert(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
	/* Never read: the server answers everyone else meanwhile. */
	t0 = h_now_ms();
	while (h_now_ms() - t0 < 12000) {
		a = h_request(s, "ping", NULL, 2000);
		cr_assert(h_get(a, "result") != NULL);
		json_object_put(a);
		usleep(500000);
	}
	/* Dropped: what the kernel held, then the end. */
	cr_expect(ctl_closed(fd, 10000), "a client that never read is kept");
	close(fd);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
	cr_assert(rmdir(dir) == 0);
}

Test(control, clients_capped, .timeout = 120)
{
	char dir[64], path[128];
	struct h_server *s;
	json_object *a;
	int fds[16], fd, i;

	s = ctl_server(dir, sizeof dir, path, sizeof path);
	for (i = 0; i < 16; i++) {
		fds[i] = ctl_connect(path);
		cr_assert(fds[i] >= 0);
		a = ctl_ask(fds[i], "{\"cmd\":\"top\"}\n");
		cr_assert(h_bool(a, "ok"));
		json_object_put(a);
	}
	/* The 17th is closed at once; one more once a place is free. */
	fd = ctl_connect(path);
	cr_assert(fd >= 0);
	cr_expect(ctl_closed(fd, 5000), "a 17th client was kept");
	close(fd);
	close(fds[0]);
	usleep(200000);
	fds[0] = ctl_connect(path);
	a = ctl_ask(fds[0], "{\"cmd\":\"top\"}\n");
	cr_expect(h_bool(a, "ok"));
	json_object_put(a);
	for (i = 0; i < 16; i++)
		close(fds[i]);
	h_finish(s);
	cr_assert(rmdir(dir) == 0);
}

Test(control, two_servers_ambiguous_name, .timeout = 240)
{
	char dir[64], path[128], args[128], *c1, *c2, *out;
	struct h_server *s1, *s2;
	json_object *j;
	int status;

	ctl_dir(dir, sizeof dir);
	s1 = h_start("--control-dir", dir, NULL);
	s2 = h_start("--control-dir", dir, NULL);
	json_object_put(h_initialize(s1));
	json_object_put(h_initialize(s2));
	ctl_sock(dir, s1->pid, path, sizeof path);
	ctl_wait_socket(path);
	ctl_sock(dir, s2->pid, path, sizeof path);
	ctl_wait_socket(path);
	c1 = h_create(s1, "{\"name\":\"same-name\"}");
	c2 = h_create(s2, "{\"name\":\"same-name\"}");

	out = h_cli(dir, "ls --json", &status);
	cr_expect_eq(status, 0, "%s", out);
	j = h_parse(out);
	cr_expect_eq(json_object_array_length(h_get(j, "servers")), 2);
	json_object_put(j);
	free(out);
	/* A name on two servers: refused, then picked with --server. */
	out = h_cli(dir, "stop same-name", &status);
	cr_expect_eq(status, 1);
	cr_expect(h_contains(out, "several servers"), "%s", out);
	free(out);
	cr_expect(h_container_exists(c1) && h_container_exists(c2));
	out = h_cli(dir, "top", &status);
	cr_expect_eq(status, 1);
	cr_expect(h_contains(out, "--server PID"), "%s", out);
	free(out);
	snprintf(args, sizeof args, "stop --server %d same-name", (int)s2->pid);
	out = h_cli(dir, args, &status);
	cr_expect_eq(status, 0, "%s", out);
	free(out);
	cr_expect(h_wait_container_gone(c2, 30000));
	cr_expect(h_container_exists(c1));
	/* Now one server has it: no --server needed. */
	out = h_cli(dir, "logs same-name", &status);
	cr_expect_eq(status, 0, "%s", out);
	free(out);
	free(c1);
	free(c2);
	h_finish(s2);
	h_finish(s1);
	cr_assert(rmdir(dir) == 0);
}

/*
 * Out of descriptors, a control client waiting in the queue must not
 * make the server spin on its readable socket (it rests, as the HTTP
 * listener does), and it is answered once descriptors are free.  Every
 * server that starts connects to the others' sockets (the stale-socket
 * sweep), so this happens whenever one starts while another is full.
 */
Test(control, out_of_descriptors_rests, .timeout = 60)
{
	char dir[64], path[128];
	struct rlimit low, old;
	struct h_server *s;
	long long cpu, deadline;
	int fds[64], i, n = 0, fd, answered;

	s = ctl_server(dir, sizeof dir, path, sizeof path);
	cr_assert(prlimit(s->pid, RLIMIT_NOFILE, NULL, &old) == 0);
	low.rlim_cur = 24;
	low.rlim_max = old.rlim_max;
	cr_assert(prlimit(s->pid, RLIMIT_NOFILE, &low, NULL) == 0, "%s",
	    strerror(errno));
	/* More than it can take: the first ones use its last descriptors,
	 * the rest wait in the listen queue (16). */
	for (i = 0; i < 40; i++)
		if ((fds[n] = ctl_connect_flags(path, SOCK_NONBLOCK)) >= 0)
			n++;
	cr_assert_geq(n, 17, "only %d connections", n);
	usleep(500000);
	cpu = h_cpu_ms(s->pid);
	sleep(2);
	cpu = h_cpu_ms(s->pid) - cpu;
	cr_expect_lt(cpu, 500, "the server used %lld ms of CPU in 2 s", cpu);
	for (i = 0; i < n; i++)
		close(fds[i]);
	cr_assert(prlimit(s->pid, RLIMIT_NOFILE, &old, NULL) == 0, "%s",
	    strerror(errno));
	/* Served again (the queued connections it takes first are gone,
	 * and may hold the clients' cap a moment). */
	deadline = h_now_ms() + 5000;
	do {
		fd = ctl_connect(path);
		cr_assert(fd >= 0);
		answered = write(fd, "{\"cmd\":\"top\"}\n", 14) == 14 &&
		           ctl_answers_ok(fd);
		close(fd);
	} while (!answered && h_now_ms() < deadline && usleep(100000) == 0);
	cr_expect(answered, "no answer once descriptors were free");
	h_finish(s);
	cr_assert(rmdir(dir) == 0, "rmdir %s: %s", dir, strerror(errno));
}
