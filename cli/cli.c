/*
 * mcp-sandboxd ls | top | logs ID [-f] | stop ID: the operator's view of
 * the servers running as this user, through their control sockets
 * (PID.sock in the control directory, common/ctldir.c).  A socket whose
 * server is gone (the connection refused) is removed here.  Everything
 * a server answers is parsed as JSON with a bounded line.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"
#include "ctldir.h"
#include "privdir.h"
#include "termtext.h"
#include "xmalloc.h"

#define CLI_MAX_SERVERS 64
#define CLI_MAX_LINE (64 << 20) /* bytes of one answer (a whole log) */
#define CLI_TIMEOUT_MS 30000 /* an answer (ls asks the engine) */

static const char *const commands[] = {"ls", "top", "logs", "stop", NULL};

int
cli_is_command(const char *s)
{
	int i;

	for (i = 0; commands[i] != NULL; i++)
		if (strcmp(s, commands[i]) == 0)
			return 1;
	return 0;
}

static void
cli_usage(FILE *f)
{
	fprintf(f,
	    "usage: mcp-sandboxd ls [--json] [--server PID]\n"
	    "       mcp-sandboxd top [--json] [--server PID]\n"
	    "       mcp-sandboxd logs ID [-f] [--json] [--server PID]\n"
	    "       mcp-sandboxd stop ID [--json] [--server PID]\n"
	    "(options before or after ID)\n"
	    "\n"
	    "The servers running as this user, through their control sockets\n"
	    "(--control-dir DIR or %s; default\n"
	    "${XDG_RUNTIME_DIR:-/tmp}/mcp-sandboxd-control-UID).  ID: a "
	    "sandbox's\n"
	    "full id, a unique prefix of 12 or more, or its name.\n",
	    CTLDIR_ENV);
}

static void
conn_close(struct cli_conn *c)
{
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = 0;
}

/* 0 connected; 1 stale (removed); -1 not usable (why on stderr). */
static int
conn_open(struct cli_conn *c, const char *path, pid_t pid)
{
	struct sockaddr_un sun;

	memset(c, 0, sizeof *c);
	c->fd = -1;
	c->pid = pid;
	/* c->path is larger than sun_path: what fits here fits there. */
	if (strlen(path) >= sizeof sun.sun_path)
		return -1;
	snprintf(c->path, sizeof c->path, "%s", path);
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if ((c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (connect(c->fd, (struct sockaddr *)&sun, sizeof sun) == -1) {
		if (errno == ECONNREFUSED) {
			/* Its server is gone: nobody listens on it. */
			unlink(path);
			conn_close(c);
			return 1;
		}
		fprintf(
		    stderr, "mcp-sandboxd: %s: %s\n", path, strerror(errno));
		conn_close(c);
		return -1;
	}
	return 0;
}

static int
conn_send(struct cli_conn *c, json_object *req)
{
	const char *s = json_object_to_json_string_ext(
	    req, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t len = strlen(s), off = 0;
	ssize_t n;

	while (off < len) {
		n = send(c->fd, s + off, len - off, MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return send(c->fd, "\n", 1, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/*
 * The next answer line as JSON; NULL on timeout (-1: none), EOF, a line
 * over CLI_MAX_LINE or one that is not a JSON object.
 */
json_object *
cli_read(struct cli_conn *c, int timeout_ms)
{
	long long deadline = clock_ms() + timeout_ms;
	struct pollfd pfd;
	json_object *o;
	char *nl;
	size_t n;
	ssize_t r;
	int wait;

	for (;;) {
		if (c->len > 0 && (nl = memchr(c->buf, '\n', c->len)) != NULL) {
			n = (size_t)(nl - c->buf);
			*nl = '\0';
			o = json_tokener_parse(c->buf);
			memmove(c->buf, nl + 1, c->len - n - 1);
			c->len -= n + 1;
			if (o != NULL &&
			    !json_object_is_type(o, json_type_object)) {
				json_object_put(o);
				o = NULL;
			}
			return o;
		}
		if (c->len >= CLI_MAX_LINE)
			return NULL;
		if (c->cap - c->len < 65536) {
			c->cap = c->cap == 0 ? 65536 : c->cap * 2;
			c->buf = xrealloc(c->buf, c->cap);
		}
		wait = timeout_ms < 0 ? -1 : (int)(deadline - clock_ms());
		if (timeout_ms >= 0 && wait <= 0)
			return NULL;
		pfd.fd = c->fd;
		pfd.events = POLLIN;
		r = poll(&pfd, 1, wait);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			return NULL;
		r = read(c->fd, c->buf + c->len, c->cap - c->len - 1);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			return NULL;
		c->len += (size_t)r;
	}
}

/* Send {"cmd": cmd, "id": id} and read its answer (NULL: none). */
json_object *
cli_request(struct cli_conn *c, const char *cmd, const char *id, int follow)
{
	json_object *req;
	int rv;

	req = json_object_new_object();
	json_object_object_add(req, "cmd", json_object_new_string(cmd));
	if (id != NULL)
		json_object_object_add(req, "id", json_object_new_string(id));
	if (follow)
		json_object_object_add(
		    req, "follow", json_object_new_boolean(1));
	rv = conn_send(c, req);
	json_object_put(req);
	if (rv == -1)
		return NULL;
	return cli_read(c, CLI_TIMEOUT_MS);
}

static int
answer_ok(json_object *a)
{
	return a != NULL &&
	       json_object_get_boolean(json_object_object_get(a, "ok"));
}

/*
 * s as a terminal may show it (termtext.h: what sandboxes and clients
 * named things holds no control sequence that reaches the terminal), in
 * one of a few static buffers: good until that many more calls.
 */
static const char *
shown(const char *s)
{
	static char buf[4][512];
	static int next;
	char *b = buf[next++ % 4];

	termtext(s, strlen(s), 0, b, sizeof buf[0]);
	return b;
}

static const char *
answer_error(json_object *a)
{
	const char *s;

	if (a == NULL)
		return "no answer (the server went away?)";
	s = json_object_get_string(json_object_object_get(a, "error"));
	return s != NULL ? shown(s) : "a malformed answer";
}

struct servers {
	struct cli_conn c[CLI_MAX_SERVERS];
	int n;
};

static int
pid_cmp(const void *a, const void *b)
{
	const struct cli_conn *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/*
 * The servers of one control directory (only pid when it is not 0) added
 * to s; a service's directory (service) may be another user's for root
 * (privdir_check_readable()).  0, or -1 with why in err (errno ENOENT:
 * there is no such directory).
 */
static int
servers_scan(struct servers *s, const char *dir, pid_t pid, int service,
    char *err, size_t errlen)
{
	char path[PATH_MAX], *end;
	struct dirent *de;
	DIR *d;
	long p;

	if ((service ? privdir_check_readable(dir, err, errlen)
	             : privdir_check(dir, 0, err, errlen)) == -1)
		return -1;
	if ((d = opendir(dir)) == NULL) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL && s->n < CLI_MAX_SERVERS) {
		errno = 0;
		p = strtol(de->d_name, &end, 10);
		if (errno != 0 || end == de->d_name ||
		    strcmp(end, ".sock") != 0 || p <= 0 || p > INT_MAX)
			continue;
		if (pid != 0 && p != pid)
			continue;
		if (ctldir_socket(dir, p, path, sizeof path) == -1)
			continue;
		if (conn_open(&s->c[s->n], path, (pid_t)p) == 0)
			s->n++;
	}
	closedir(d);
	return 0;
}

/*
 * Connect to every running server (only pid when it is not 0): 0 and at
 * least one; 1 when none runs (said, unless quiet); -1 said why.  Without
 * a directory given, the system
 * service's (CTLDIR_SERVICE) is looked at too, when it is there and this
 * user may use it (its own, or root).
 */
static int
servers_open(struct servers *s, const char *given, pid_t pid, int quiet)
{
	char dir[PATH_MAX], err[PATH_MAX + 128], serr[PATH_MAX + 128];
	int rc, src = -1;

	s->n = 0;
	if (ctldir_path(given, dir, sizeof dir) == -1) {
		fprintf(stderr, "mcp-sandboxd: the control directory's path is "
		                "too long\n");
		return -1;
	}
	rc = servers_scan(s, dir, pid, 0, err, sizeof err);
	if (rc == -1 && errno != ENOENT) {
		fprintf(stderr, "mcp-sandboxd: %s\n", err);
		return -1;
	}
	if ((given == NULL || *given == '\0') &&
	    strcmp(dir, CTLDIR_SERVICE) != 0)
		src =
		    servers_scan(s, CTLDIR_SERVICE, pid, 1, serr, sizeof serr);
	if (rc == -1 && src == -1) {
		if (!quiet)
			fprintf(stderr,
			    "mcp-sandboxd: no server running (no control "
			    "directory %s)\n",
			    dir);
		return 1;
	}
	qsort(s->c, (size_t)s->n, sizeof s->c[0], pid_cmp);
	if (s->n == 0) {
		if (quiet)
			;
		else if (pid != 0)
			fprintf(stderr,
			    "mcp-sandboxd: no server with pid %d running (see "
			    "mcp-sandboxd ls)\n",
			    (int)pid);
		else
			fprintf(stderr, "mcp-sandboxd: no server running\n");
		return 1;
	}
	return 0;
}

static void
servers_close(struct servers *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		conn_close(&s->c[i]);
	s->n = 0;
}

static void
print_json(json_object *o)
{
	printf("%s\n",
	    json_object_to_json_string_ext(
	        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

void
cli_duration(long long s, char *buf, size_t len)
{
	if (s < 120)
		snprintf(buf, len, "%llds", s);
	else if (s < 7200)
		snprintf(buf, len, "%lldm", s / 60);
	else if (s < 172800)
		snprintf(buf, len, "%lldh%02lldm", s / 3600, s / 60 % 60);
	else
		snprintf(buf, len, "%lldd", s / 86400);
}

/* Who has a sandbox: its session's number, or "detached" when none has
 * (its session ended; a session that names its full id takes it). */
void
cli_session(json_object *sb, char *buf, size_t len)
{
	json_object *v = json_object_object_get(sb, "session");
	int detach =
	    json_object_get_boolean(json_object_object_get(sb, "detached"));

	if (v == NULL)
		snprintf(buf, len, "%s", detach ? "detached" : "-");
	else
		snprintf(buf, len, "%lld%s",
		    (long long)json_object_get_int64(v),
		    detach ? " (detach)" : "");
}

static const char *
str(json_object *o, const char *key)
{
	const char *s = json_object_get_string(json_object_object_get(o, key));

	return s != NULL ? s : "-";
}

static long long
num(json_object *o, const char *key)
{
	return json_object_get_int64(json_object_object_get(o, key));
}

/* ls: each server, then its sandboxes. */
static int
cmd_ls(struct servers *s, int json)
{
	json_object *all, *a, *srv, *list, *sb, *m;
	char up[32], age[32], mem[48], cpu[32], sess[32];
	size_t i, k;
	int rv = 0, j;

	all = json_object_new_array();
	for (j = 0; j < s->n; j++) {
		a = cli_request(&s->c[j], "ls", NULL, 0);
		if (!answer_ok(a)) {
			fprintf(stderr, "mcp-sandboxd: server %d: %s\n",
			    (int)s->c[j].pid, answer_error(a));
			json_object_put(a);
			rv = 1;
			continue;
		}
		srv = json_object_get(json_object_object_get(a, "server"));
		json_object_object_add(srv, "sandboxes",
		    json_object_get(json_object_object_get(a, "sandboxes")));
		json_object_array_add(all, srv);
		json_object_put(a);
	}
	if (json) {
		a = json_object_new_object();
		json_object_object_add(a, "servers", all);
		print_json(a);
		json_object_put(a);
		return rv;
	}
	printf("%-8s %-10s %-22s %-8s %s\n", "PID", "TRANSPORT", "LISTEN",
	    "UPTIME", "SANDBOXES");
	for (i = 0; i < json_object_array_length(all); i++) {
		srv = json_object_array_get_idx(all, i);
		list = json_object_object_get(srv, "sandboxes");
		cli_duration(num(srv, "uptime_seconds"), up, sizeof up);
		printf("%-8lld %-10s %-22s %-8s %zu\n", num(srv, "pid"),
		    shown(str(srv, "transport")), shown(str(srv, "listen")), up,
		    json_object_array_length(list));
		if (json_object_array_length(list) == 0)
			continue;
		printf("  %-12s %-20s %-34s %-10s %-6s %-6s %-8s %-18s %s\n",
		    "ID", "NAME", "IMAGE", "STATE", "AGE", "EXECS", "CPU",
		    "MEMORY", "SESSION");
		for (k = 0; k < json_object_array_length(list); k++) {
			sb = json_object_array_get_idx(list, k);
			cli_duration(num(sb, "age_seconds"), age, sizeof age);
			if ((m = json_object_object_get(sb, "memory_bytes")) !=
			    NULL)
				snprintf(mem, sizeof mem, "%.1f/%lldMiB",
				    (double)json_object_get_int64(m) /
				        (1 << 20),
				    num(sb, "memory_limit_mb"));
			else
				snprintf(mem, sizeof mem, "-/%lldMiB",
				    num(sb, "memory_limit_mb"));
			/* CPU time so far, as ps(1) shows it. */
			if ((m = json_object_object_get(sb, "cpu_ns")) != NULL)
				snprintf(cpu, sizeof cpu, "%.1fs",
				    (double)json_object_get_int64(m) / 1e9);
			else
				snprintf(cpu, sizeof cpu, "-");
			cli_session(sb, sess, sizeof sess);
			printf("  %-12.12s %-20.20s %-34.34s %-10s %-6s %-6lld "
			       "%-8s %-18s %s\n",
			    shown(str(sb, "id")), shown(str(sb, "name")),
			    shown(str(sb, "image")), shown(str(sb, "state")),
			    age, num(sb, "execs"), cpu, mem, sess);
		}
	}
	json_object_put(all);
	return rv;
}

/*
 * The server that has sandbox key: its index, with the full id in
 * full; -1 said why (unknown everywhere, or several match).
 */
static int
find_sandbox(struct servers *s, const char *key, char *full, size_t len)
{
	json_object *a;
	const char *code;
	int j, found = -1, n = 0;

	for (j = 0; j < s->n; j++) {
		a = cli_request(&s->c[j], "find", key, 0);
		if (answer_ok(a)) {
			found = j;
			n++;
			snprintf(full, len, "%s", str(a, "id"));
		} else if (a != NULL &&
		           (code = json_object_get_string(
		                json_object_object_get(a, "code"))) != NULL &&
		           strcmp(code, "ambiguous") == 0) {
			fprintf(stderr, "mcp-sandboxd: server %d: %s\n",
			    (int)s->c[j].pid, answer_error(a));
			json_object_put(a);
			return -1;
		} else if (a == NULL)
			fprintf(stderr,
			    "mcp-sandboxd: server %d did not answer\n",
			    (int)s->c[j].pid);
		json_object_put(a);
	}
	if (n == 0) {
		fprintf(stderr,
		    "mcp-sandboxd: no sandbox \"%s\" on %s (a full id, a "
		    "unique prefix of 12 or more, or a name; see mcp-sandboxd "
		    "ls)\n",
		    key,
		    s->n == 1 ? "the running server" : "any running server");
		return -1;
	}
	if (n > 1) {
		fprintf(stderr,
		    "mcp-sandboxd: \"%s\" names sandboxes of several servers: "
		    "pick one with --server PID\n",
		    key);
		return -1;
	}
	return found;
}

static int
cmd_logs(struct servers *s, const char *key, int follow, int json)
{
	struct cli_conn *c;
	json_object *a, *v;
	char full[128];
	const char *t;
	int j;

	if ((j = find_sandbox(s, key, full, sizeof full)) == -1)
		return 1;
	c = &s->c[j];
	a = cli_request(c, "logs", full, follow);
	if (!answer_ok(a)) {
		fprintf(stderr, "mcp-sandboxd: %s\n", answer_error(a));
		json_object_put(a);
		return 1;
	}
	for (;;) {
		if (json)
			print_json(a);
		else if ((v = json_object_object_get(a, "text")) != NULL &&
		         (t = json_object_get_string(v)) != NULL)
			termtext_fputs(t, (size_t)json_object_get_string_len(v),
			    TERMTEXT_LINES, stdout);
		fflush(stdout);
		if (json_object_object_get_ex(a, "end", &v)) {
			if (!json && json_object_get_string(v) != NULL)
				fprintf(stderr, "mcp-sandboxd: %s\n",
				    shown(json_object_get_string(v)));
			json_object_put(a);
			return 0;
		}
		json_object_put(a);
		if (!follow)
			return 0;
		if ((a = cli_read(c, -1)) == NULL) {
			fprintf(stderr, "mcp-sandboxd: server %d went away\n",
			    (int)c->pid);
			return 1;
		}
	}
}

static int
cmd_stop(struct servers *s, const char *key, int json)
{
	json_object *a;
	char full[128];
	int j, rv;

	if ((j = find_sandbox(s, key, full, sizeof full)) == -1)
		return 1;
	a = cli_request(&s->c[j], "stop", full, 0);
	rv = answer_ok(a) ? 0 : 1;
	if (json && a != NULL)
		print_json(a);
	else if (rv == 0)
		printf("sandbox %.12s stopped and removed\n", full);
	if (rv != 0 && !json)
		fprintf(stderr, "mcp-sandboxd: %s\n", answer_error(a));
	json_object_put(a);
	return rv;
}

/* argv[0] is the command. */
int
cli_main(int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"server", required_argument, NULL, 's'},
	    {"follow", no_argument, NULL, 'f'},
	    {"control-dir", required_argument, NULL, 'd'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *cmd = argv[0], *dir = getenv(CTLDIR_ENV), *key = NULL;
	struct servers *s;
	int ch, json = 0, follow = 0, rv, nargs;
	long pid = 0;
	char *end;

	/* Options go before or after the operand (logs ID -f), as docker's;
	 * "--" ends them. */
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "fh", lopts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			json = 1;
			break;
		case 'f':
			follow = 1;
			break;
		case 'd':
			dir = optarg;
			break;
		case 's':
			errno = 0;
			pid = strtol(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' ||
			    pid <= 0 || pid > INT_MAX) {
				fprintf(stderr,
				    "mcp-sandboxd: --server: a pid, not "
				    "\"%s\"\n",
				    optarg);
				return 2;
			}
			break;
		case 'h':
			cli_usage(stdout);
			return 0;
		default:
			fprintf(stderr, "mcp-sandboxd %s: unknown option %s\n",
			    cmd, argv[optind - 1]);
			cli_usage(stderr);
			return 2;
		}
	}
	nargs = strcmp(cmd, "logs") == 0 || strcmp(cmd, "stop") == 0;
	if (argc - optind != nargs) {
		if (nargs)
			fprintf(stderr,
			    "mcp-sandboxd %s: %s one sandbox ID (or name)\n",
			    cmd, argc - optind < nargs ? "give" : "give only");
		else
			fprintf(stderr,
			    "mcp-sandboxd %s: takes no operand, got \"%s\"\n",
			    cmd, argv[optind]);
		cli_usage(stderr);
		return 2;
	}
	if (follow && strcmp(cmd, "logs") != 0) {
		fprintf(stderr, "mcp-sandboxd %s: -f is for logs only\n", cmd);
		cli_usage(stderr);
		return 2;
	}
	if (nargs)
		key = argv[optind];
	s = xcalloc(1, sizeof *s);
	/* ls --json with no server: an empty list, as docker ps says none. */
	rv = servers_open(s, dir, (pid_t)pid, json && strcmp(cmd, "ls") == 0);
	if (rv != 0) {
		free(s);
		if (rv == 1 && json && strcmp(cmd, "ls") == 0) {
			printf("{\"servers\":[]}\n");
			return 0;
		}
		return 1;
	}
	if (strcmp(cmd, "ls") == 0)
		rv = cmd_ls(s, json);
	else if (strcmp(cmd, "logs") == 0)
		rv = cmd_logs(s, key, follow, json);
	else if (strcmp(cmd, "stop") == 0)
		rv = cmd_stop(s, key, json);
	else if (s->n > 1) {
		fprintf(stderr,
		    "mcp-sandboxd: %d servers are running: pick one with "
		    "--server PID (see mcp-sandboxd ls)\n",
		    s->n);
		rv = 1;
	} else
		rv = cli_top(&s->c[0], json);
	servers_close(s);
	free(s);
	return rv;
}
