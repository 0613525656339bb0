/* Integration test harness: see harness.h. */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

static int h_counter;

long long
h_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
h_contains(const char *hay, const char *needle)
{
	return hay != NULL && needle != NULL && strstr(hay, needle) != NULL;
}

static const char *
h_bin(void)
{
	const char *bin = getenv("MCP_SANDBOXD_BIN");

	cr_assert(bin != NULL && *bin != '\0',
	    "MCP_SANDBOXD_BIN must name the mcp-sandboxd binary");
	return bin;
}

/* --- the server process --- */

struct h_server *
h_startv(const char *const *extra)
{
	return h_startw(NULL, extra);
}

/* The same, the server's command line after the words of wrap (a
 * program that runs it: unshare(1), say); s->pid is then wrap's. */
struct h_server *
h_startw(const char *const *wrap, const char *const *extra)
{
	struct h_server *s;
	const char *argv[80];
	int in[2], out[2], n = 0, i;
	pid_t pid, parent = getpid();

	signal(SIGPIPE, SIG_IGN);
	s = calloc(1, sizeof *s);
	cr_assert(s != NULL);
	snprintf(s->label, sizeof s->label, "%s=%d-%d", H_LABEL_KEY,
	    (int)getpid(), ++h_counter);
	s->next_id = 1;
	s->queue = json_object_new_array();
	s->notes = json_object_new_array();
	for (i = 0; wrap != NULL && wrap[i] != NULL && n < 16; i++)
		argv[n++] = wrap[i];
	argv[n++] = h_bin();
	argv[n++] = "--image";
	argv[n++] = H_IMAGE;
	argv[n++] = "--log-level";
	/* More of the server's log for a case that fails now and then. */
	argv[n++] = getenv("MCP_SANDBOXD_TEST_LOG_LEVEL") != NULL
	                ? getenv("MCP_SANDBOXD_TEST_LOG_LEVEL")
	                : "warn";
	argv[n++] = "--label";
	argv[n++] = s->label;
	for (i = 0; extra != NULL && extra[i] != NULL && n < 79; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;

	cr_assert(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0);
	pid = fork();
	cr_assert(pid != -1, "fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		closefrom(3); /* nothing of criterion's */
		signal(SIGPIPE, SIG_DFL);
		/* A test that dies (a failed assertion) takes its server
		 * along, which removes its sandboxes. */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1 ||
		    getppid() != parent)
			_exit(126);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	s->pid = pid;
	s->to_fd = in[1];
	s->from_fd = out[0];
	return s;
}

struct h_server *
h_start(const char *first, ...)
{
	const char *args[48];
	const char *a;
	va_list ap;
	int n = 0;

	va_start(ap, first);
	for (a = first; a != NULL && n < 47; a = va_arg(ap, const char *))
		args[n++] = a;
	va_end(ap);
	args[n] = NULL;
	return h_startv(args);
}

void
h_free(struct h_server *s)
{
	int i;

	if (s == NULL)
		return;
	if (s->to_fd >= 0)
		close(s->to_fd);
	if (s->from_fd >= 0)
		close(s->from_fd);
	for (i = 0; i < s->nids; i++)
		free(s->ids[i]);
	json_object_put(s->queue);
	json_object_put(s->notes);
	free(s->buf);
	free(s);
}

static int
h_status_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

int
h_wait_exit(struct h_server *s, int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms;
	pid_t r;

	while (!s->reaped) {
		r = waitpid(s->pid, &s->status, WNOHANG);
		if (r == s->pid) {
			s->reaped = 1;
			break;
		}
		if (r == -1 && errno != EINTR) {
			s->reaped = 1;
			s->status = -1;
			return -1;
		}
		if (h_now_ms() >= deadline) {
			fprintf(stderr,
			    "harness: server %d did not exit in "
			    "%d ms; killing it\n",
			    (int)s->pid, timeout_ms);
			kill(s->pid, SIGKILL);
			waitpid(s->pid, &s->status, 0);
			s->reaped = 1;
			return -1;
		}
		usleep(20000);
	}
	return h_status_code(s->status);
}

int
h_close(struct h_server *s, int timeout_ms)
{
	if (s->to_fd >= 0) {
		close(s->to_fd);
		s->to_fd = -1;
	}
	return h_wait_exit(s, timeout_ms);
}

void
h_finish(struct h_server *s)
{
	int rc, i, n;

	rc = h_close(s, 45000);
	cr_expect_eq(rc, 0, "server exit status %d, expected 0", rc);
	n = h_docker_count(s->label);
	cr_expect_eq(n, 0, "%d container(s) labelled %s remain", n, s->label);
	for (i = 0; i < s->nids; i++)
		cr_expect(!h_container_exists(s->ids[i]),
		    "container %.12s remains after the server exited",
		    s->ids[i]);
	h_free(s);
	cr_assert_eq(rc, 0);
}

/* --- messages --- */

void
h_send_line(struct h_server *s, const char *line)
{
	size_t len = strlen(line), off = 0;
	ssize_t n;

	cr_assert(s->to_fd >= 0, "stdin of the server is closed");
	while (off <= len) {
		if (off == len)
			n = write(s->to_fd, "\n", 1);
		else
			n = write(s->to_fd, line + off, len - off);
		if (n == -1 && errno == EINTR)
			continue;
		cr_assert(n > 0, "write to the server: %s", strerror(errno));
		off += (size_t)n;
	}
}

static void
h_send_obj(struct h_server *s, json_object *msg)
{
	h_send_line(
	    s, json_object_to_json_string_ext(msg,
	           JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(msg);
}

json_object *
h_parse(const char *text)
{
	json_object *o;

	o = json_tokener_parse(text);
	cr_assert(o != NULL, "bad JSON in a test: %s", text);
	return o;
}

long
h_send_request_obj(struct h_server *s, const char *method, json_object *params)
{
	json_object *m;
	long id = s->next_id++;

	m = json_object_new_object();
	json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(m, "id", json_object_new_int64(id));
	json_object_object_add(m, "method", json_object_new_string(method));
	if (params != NULL)
		json_object_object_add(m, "params", params);
	h_send_obj(s, m);
	return id;
}

long
h_send_request(struct h_server *s, const char *method, const char *params)
{
	return h_send_request_obj(
	    s, method, params != NULL ? h_parse(params) : NULL);
}

void
h_send_notification(struct h_server *s, const char *method, const char *params)
{
	json_object *m;

	m = json_object_new_object();
	json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(m, "method", json_object_new_string(method));
	if (params != NULL)
		json_object_object_add(m, "params", h_parse(params));
	h_send_obj(s, m);
}

/* One whole line out of the buffer, or NULL. */
static char *
h_take_line(struct h_server *s)
{
	char *nl, *line;
	size_t n;

	if (s->len == 0 || (nl = memchr(s->buf, '\n', s->len)) == NULL)
		return NULL;
	n = (size_t)(nl - s->buf);
	line = malloc(n + 1);
	cr_assert(line != NULL);
	memcpy(line, s->buf, n);
	line[n] = '\0';
	memmove(s->buf, nl + 1, s->len - n - 1);
	s->len -= n + 1;
	return line;
}

json_object *
h_read_message(struct h_server *s, int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms, left;
	struct pollfd pfd;
	json_object *o;
	char *line;
	ssize_t n;
	int r;

	for (;;) {
		if ((line = h_take_line(s)) != NULL) {
			o = json_tokener_parse(line);
			cr_assert(o != NULL,
			    "the server wrote a line that is not JSON: %.300s",
			    line);
			free(line);
			return o;
		}
		if (s->from_fd < 0)
			return NULL;
		left = deadline - h_now_ms();
		if (left <= 0)
			return NULL;
		pfd.fd = s->from_fd;
		pfd.events = POLLIN;
		r = poll(&pfd, 1, (int)left);
		if (r == -1 && errno == EINTR)
			continue;
		cr_assert(r >= 0, "poll: %s", strerror(errno));
		if (r == 0)
			return NULL;
		if (s->cap - s->len < 65536) {
			s->cap = s->cap * 2 + 65536;
			s->buf = realloc(s->buf, s->cap);
			cr_assert(s->buf != NULL);
		}
		n = read(s->from_fd, s->buf + s->len, s->cap - s->len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (s->len > 0)
				fprintf(stderr,
				    "harness: %zu bytes without a "
				    "newline at EOF\n",
				    s->len);
			close(s->from_fd);
			s->from_fd = -1;
			return NULL;
		}
		s->len += (size_t)n;
	}
}

static int
h_is_response(json_object *m)
{
	return json_object_object_get_ex(m, "id", NULL) &&
	       !json_object_object_get_ex(m, "method", NULL);
}

/* The next response, queued first; notifications are collected. */
json_object *
h_next_response(struct h_server *s, int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms, left;
	json_object *m;

	if (json_object_array_length(s->queue) > 0) {
		m = json_object_get(json_object_array_get_idx(s->queue, 0));
		json_object_array_del_idx(s->queue, 0, 1);
		return m;
	}
	for (;;) {
		left = deadline - h_now_ms();
		if ((m = h_read_message(s, left > 0 ? (int)left : 0)) == NULL)
			return NULL;
		if (h_is_response(m))
			return m;
		/* A notification or a request from the server: keep it. */
		json_object_array_add(s->notes, m);
	}
}

json_object *
h_wait_id_json(struct h_server *s, json_object *id, int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms, left;
	json_object *m, *mid;
	size_t i;

	for (i = 0; i < json_object_array_length(s->queue); i++) {
		m = json_object_array_get_idx(s->queue, i);
		json_object_object_get_ex(m, "id", &mid);
		if (json_object_equal(mid, id)) {
			json_object_get(m);
			json_object_array_del_idx(s->queue, i, 1);
			return m;
		}
	}
	for (;;) {
		left = deadline - h_now_ms();
		if ((m = h_read_message(s, left > 0 ? (int)left : 0)) == NULL)
			return NULL;
		if (!h_is_response(m)) {
			json_object_array_add(s->notes, m);
			continue;
		}
		json_object_object_get_ex(m, "id", &mid);
		if (json_object_equal(mid, id))
			return m;
		json_object_array_add(s->queue, m);
	}
}

json_object *
h_wait_id(struct h_server *s, long id, int timeout_ms)
{
	json_object *jid, *m;

	jid = json_object_new_int64(id);
	m = h_wait_id_json(s, jid, timeout_ms);
	json_object_put(jid);
	return m;
}

json_object *
h_request(
    struct h_server *s, const char *method, const char *params, int timeout_ms)
{
	json_object *m;
	long id;

	id = h_send_request(s, method, params);
	m = h_wait_id(s, id, timeout_ms);
	cr_assert(m != NULL, "no answer to %s (id %ld) in %d ms", method, id,
	    timeout_ms);
	return m;
}

/* resources/read of uri; the whole response. */
json_object *
h_read_uri(struct h_server *s, const char *uri)
{
	json_object *p;
	long id;

	p = json_object_new_object();
	json_object_object_add(p, "uri", json_object_new_string(uri));
	id = h_send_request_obj(s, "resources/read", p);
	p = h_wait_id(s, id, 30000);
	cr_assert_not_null(p, "no answer to resources/read %s", uri);
	return p;
}

/* The whole text of a paged resource (an exec's output), read page by
 * page to its end. */
char *
h_read_whole(struct h_server *s, const char *uri)
{
	json_object *m, *next;
	char page[512], *out = strdup("");
	const char *text;
	long long off = 0;
	size_t len = 0, n;

	for (;;) {
		snprintf(page, sizeof page, "%s?offset=%lld&length=1048576",
		    uri, off);
		m = h_read_uri(s, page);
		text = h_str(m, "result.contents.0.text");
		cr_assert_not_null(
		    text, "%s: %s", page, json_object_to_json_string(m));
		n = strlen(text);
		out = realloc(out, len + n + 1);
		cr_assert_not_null(out);
		memcpy(out + len, text, n + 1);
		len += n;
		next = h_get(m, "result.contents.0._meta.next_offset");
		off = next != NULL ? json_object_get_int64(next) : -1;
		json_object_put(m);
		if (off < 0)
			return out;
	}
}

/* Whether the sandbox's activity log (containers://CID/logs) has needle,
 * within ms (its lines come from the worker on their own). */
int
h_log_has(struct h_server *s, const char *cid, const char *needle, int ms)
{
	long long end = h_now_ms() + ms;
	json_object *m;
	char uri[256];
	int found;

	snprintf(uri, sizeof uri, "containers://%s/logs", cid);
	for (;;) {
		m = h_read_uri(s, uri);
		found = h_contains(h_str(m, "result.contents.0.text"), needle);
		json_object_put(m);
		if (found || h_now_ms() >= end)
			return found;
		usleep(200 * 1000);
	}
}

json_object *
h_initialize(struct h_server *s)
{
	json_object *m, *r;

	m = h_request(s, "initialize",
	    "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
	    "\"clientInfo\":{\"name\":\"integration\",\"version\":\"1\"}}",
	    H_TIMEOUT_MS);
	cr_assert(json_object_object_get_ex(m, "result", &r),
	    "initialize failed: %s", json_object_to_json_string(m));
	json_object_get(r);
	json_object_put(m);
	h_send_notification(s, "notifications/initialized", NULL);
	return r;
}

json_object *
h_tool_result(json_object *m)
{
	json_object *r;

	cr_assert(json_object_object_get_ex(m, "result", &r) &&
	              json_object_is_type(r, json_type_object),
	    "tools/call answered without a result: %.2000s",
	    json_object_to_json_string(m));
	json_object_get(r);
	json_object_put(m);
	return r;
}

long
h_send_tool(struct h_server *s, const char *name, json_object *args)
{
	json_object *p;

	p = json_object_new_object();
	json_object_object_add(p, "name", json_object_new_string(name));
	json_object_object_add(
	    p, "arguments", args != NULL ? args : json_object_new_object());
	return h_send_request_obj(s, "tools/call", p);
}

json_object *
h_call_tool_obj(
    struct h_server *s, const char *name, json_object *args, int timeout_ms)
{
	json_object *m;
	long id;

	id = h_send_tool(s, name, args);
	m = h_wait_id(s, id, timeout_ms);
	cr_assert(
	    m != NULL, "no answer to tools/call %s in %d ms", name, timeout_ms);
	return h_tool_result(m);
}

json_object *
h_call_tool_t(
    struct h_server *s, const char *name, const char *args, int timeout_ms)
{
	return h_call_tool_obj(
	    s, name, args != NULL ? h_parse(args) : NULL, timeout_ms);
}

json_object *
h_call_tool(struct h_server *s, const char *name, const char *args)
{
	return h_call_tool_t(s, name, args, H_TIMEOUT_MS);
}

/* --- JSON --- */

json_object *
h_get(json_object *o, const char *path)
{
	char key[128];
	const char *p = path, *dot;
	size_t n;
	char *end;
	long idx;

	while (o != NULL && *p != '\0') {
		dot = strchr(p, '.');
		n = dot != NULL ? (size_t)(dot - p) : strlen(p);
		if (n >= sizeof key)
			return NULL;
		memcpy(key, p, n);
		key[n] = '\0';
		if (json_object_is_type(o, json_type_array)) {
			idx = strtol(key, &end, 10);
			if (*end != '\0' || idx < 0 ||
			    (size_t)idx >= json_object_array_length(o))
				return NULL;
			o = json_object_array_get_idx(o, (size_t)idx);
		} else if (!json_object_is_type(o, json_type_object) ||
		           !json_object_object_get_ex(o, key, &o))
			return NULL;
		p += n;
		if (*p == '.')
			p++;
	}
	return o;
}

const char *
h_str(json_object *o, const char *path)
{
	json_object *v = h_get(o, path);

	return v != NULL && json_object_is_type(v, json_type_string)
	           ? json_object_get_string(v)
	           : NULL;
}

long long
h_int(json_object *o, const char *path)
{
	json_object *v = h_get(o, path);

	cr_assert(v != NULL && json_object_is_type(v, json_type_int),
	    "%s is not an integer in %.2000s", path,
	    json_object_to_json_string(o));
	return json_object_get_int64(v);
}

double
h_num(json_object *o, const char *path)
{
	json_object *v = h_get(o, path);

	cr_assert(v != NULL && (json_object_is_type(v, json_type_double) ||
	                           json_object_is_type(v, json_type_int)),
	    "%s is not a number in %.2000s", path,
	    json_object_to_json_string(o));
	return json_object_get_double(v);
}

int
h_bool(json_object *o, const char *path)
{
	json_object *v = h_get(o, path);

	cr_assert(v != NULL && json_object_is_type(v, json_type_boolean),
	    "%s is not a boolean in %.2000s", path,
	    json_object_to_json_string(o));
	return json_object_get_boolean(v);
}

int
h_is_error(json_object *result)
{
	json_object *v = h_get(result, "isError");

	return v != NULL && json_object_get_boolean(v);
}

const char *
h_text(json_object *result)
{
	const char *t = h_str(result, "content.0.text");

	return t != NULL ? t : "";
}

/* --- sandboxes --- */

char *
h_create(struct h_server *s, const char *args)
{
	json_object *r;
	const char *id;
	char *cid;

	r = h_call_tool_t(
	    s, "sandbox_initialize", args != NULL ? args : "{}", 120000);
	cr_assert(!h_is_error(r), "sandbox_initialize failed: %s", h_text(r));
	id = h_str(r, "structuredContent.container_id");
	cr_assert(id != NULL && strlen(id) >= 12,
	    "sandbox_initialize gave no container_id: %.2000s",
	    json_object_to_json_string(r));
	cid = strdup(id);
	cr_assert(cid != NULL);
	if (s->nids < H_MAX_IDS)
		s->ids[s->nids++] = strdup(cid);
	json_object_put(r);
	return cid;
}

void
h_stop(struct h_server *s, const char *cid)
{
	json_object *r, *args;

	args = json_object_new_object();
	json_object_object_add(
	    args, "container_id", json_object_new_string(cid));
	r = h_call_tool_obj(s, "sandbox_stop", args, 60000);
	cr_assert(!h_is_error(r), "sandbox_stop failed: %s", h_text(r));
	cr_assert(h_bool(r, "structuredContent.removed"));
	json_object_put(r);
}

long
h_send_exec(struct h_server *s, const char *cid, const char *cmd)
{
	json_object *a;

	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(a, "commands", json_object_new_string(cmd));
	return h_send_tool(s, "sandbox_exec", a);
}

json_object *
h_exec_obj(
    struct h_server *s, const char *cid, json_object *args, int timeout_ms)
{
	if (args == NULL)
		args = json_object_new_object();
	json_object_object_add(
	    args, "container_id", json_object_new_string(cid));
	return h_call_tool_obj(s, "sandbox_exec", args, timeout_ms);
}

/* One command; timeout_s 0 leaves the server's default. */
json_object *
h_exec(struct h_server *s, const char *cid, const char *cmd, int timeout_s)
{
	json_object *args;

	args = json_object_new_object();
	json_object_object_add(args, "commands", json_object_new_string(cmd));
	if (timeout_s > 0)
		json_object_object_add(
		    args, "timeout_seconds", json_object_new_int(timeout_s));
	return h_exec_obj(
	    s, cid, args, (timeout_s > 0 ? timeout_s * 1000 : 60000) + 30000);
}

json_object *
h_first(json_object *result)
{
	json_object *r = h_get(result, "structuredContent.results.0");

	cr_assert(r != NULL, "no results[0] in %.2000s",
	    json_object_to_json_string(result));
	return r;
}

/* Run a command that must succeed; its stdout. */
char *
h_exec_ok(struct h_server *s, const char *cid, const char *cmd)
{
	json_object *r, *f;
	char *out;

	r = h_exec(s, cid, cmd, 30);
	f = h_first(r);
	cr_assert(!h_is_error(r) && h_int(f, "exit_code") == 0,
	    "command failed: %s\n%s", cmd, h_text(r));
	/* A result shows the head and tail of a long output (--inline-output):
	 * the whole is its resource. */
	if (h_str(f, "stdout_uri") != NULL)
		out = h_read_whole(s, h_str(f, "stdout_uri"));
	else
		out = strdup(
		    h_str(f, "stdout") != NULL ? h_str(f, "stdout") : "");
	json_object_put(r);
	return out;
}

/* --- Docker and processes --- */

char *
h_run(const char *cmd, int *status)
{
	FILE *f;
	char *out = NULL;
	size_t len = 0, cap = 0, n;
	int st;

	f = popen(cmd, "r");
	cr_assert(f != NULL, "popen %s: %s", cmd, strerror(errno));
	for (;;) {
		if (cap - len < 4096) {
			cap = cap * 2 + 4096;
			out = realloc(out, cap);
			cr_assert(out != NULL);
		}
		n = fread(out + len, 1, cap - len - 1, f);
		if (n == 0)
			break;
		len += n;
	}
	out[len] = '\0';
	st = pclose(f);
	if (status != NULL)
		*status = st == -1 ? -1 : h_status_code(st);
	return out;
}

char *
h_cli(const char *dir, const char *args, int *status)
{
	char cmd[1024];

	snprintf(cmd, sizeof cmd, "MCP_SANDBOXD_CONTROL_DIR=%s %s %s 2>&1", dir,
	    h_bin(), args);
	return h_run(cmd, status);
}

static int
h_shell_safe(const char *s)
{
	for (; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) && strchr("=-_.:/", *s) == NULL)
			return 0;
	return 1;
}

int
h_docker_count(const char *label)
{
	char cmd[512], *out, *p;
	int n = 0, st;

	cr_assert(h_shell_safe(label));
	snprintf(cmd, sizeof cmd, "docker ps -aq --filter 'label=%s'", label);
	out = h_run(cmd, &st);
	cr_assert_eq(st, 0, "%s failed", cmd);
	for (p = out; *p != '\0'; p++)
		if (*p == '\n')
			n++;
	free(out);
	return n;
}

/*
 * Where a pid means that process: this boot and the pid namespace of
 * pid, as the server labels its containers with ("BOOT/pidns:INODE").
 */
void
h_pid_home(pid_t pid, char *buf, size_t len)
{
	char path[64], *boot;
	struct stat st;
	int rc;

	snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)pid);
	cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
	boot = h_run("cat /proc/sys/kernel/random/boot_id", &rc);
	cr_assert_eq(rc, 0);
	boot[strcspn(boot, "\n")] = '\0';
	snprintf(
	    buf, len, "%s/pidns:%llu", boot, (unsigned long long)st.st_ino);
	free(boot);
}

int
h_container_exists(const char *id)
{
	char cmd[256], *out;
	int st;

	cr_assert(h_shell_safe(id));
	snprintf(cmd, sizeof cmd,
	    "docker inspect --format '{{.Id}}' '%s' 2>/dev/null", id);
	out = h_run(cmd, &st);
	free(out);
	return st == 0;
}

/*
 * The engine's own wait (POST /containers/ID/wait?condition=removed)
 * answers when the container is removed, or at once when it is gone
 * already; the engine is asked once more after it, so that a wait cut
 * short by its deadline (or an engine without that wait) still tells.
 */
int
h_wait_container_gone(const char *id, int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms, asked;
	char cmd[512];

	cr_assert(h_shell_safe(id));
	while (h_container_exists(id)) {
		if ((asked = h_now_ms()) >= deadline)
			return 0;
		snprintf(cmd, sizeof cmd,
		    "curl -s -o /dev/null --max-time %.3f --unix-socket "
		    "/var/run/docker.sock -X POST "
		    "'http://engine/containers/%s/wait?condition=removed'",
		    (double)(deadline - asked) / 1000.0 + 0.001, id);
		free(h_run(cmd, NULL));
		/* An answer at once while it still exists: not a wait. */
		if (h_now_ms() - asked < 100)
			usleep(100000);
	}
	return 1;
}

json_object *
h_docker_inspect(const char *id)
{
	char cmd[256], *out;
	json_object *o;
	int st;

	cr_assert(h_shell_safe(id));
	snprintf(
	    cmd, sizeof cmd, "docker inspect --format '{{json .}}' '%s'", id);
	out = h_run(cmd, &st);
	cr_assert_eq(st, 0, "%s failed", cmd);
	o = json_tokener_parse(out);
	cr_assert(o != NULL, "docker inspect gave no JSON: %.300s", out);
	free(out);
	return o;
}

/* The state letter and parent of a process, from /proc/<pid>/stat. */
static int
h_proc_stat(pid_t pid, char *state, pid_t *ppid)
{
	char path[64], buf[1024], *p;
	FILE *f;
	size_t n;
	int pp;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 1, " %c %d", state, &pp) != 2)
		return -1;
	*ppid = pp;
	return 0;
}

/* CPU time a process has used (user and system), in milliseconds. */
long long
h_cpu_ms(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	cr_assert(f != NULL, "%s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Fields 14 and 15, counted from the state (field 3). */
	cr_assert((p = strrchr(buf, ')')) != NULL);
	cr_assert(sscanf(p + 2,
	              "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
	              &ut, &st) == 2);
	return (long long)(ut + st) * 1000 / sysconf(_SC_CLK_TCK);
}

long
h_status_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t fl = strlen(field);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
			v = strtol(line + fl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static int
h_rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(p);
	else
		unlink(p);
	return 0;
}

void
h_rm_rf(const char *dir)
{
	struct stat st;

	if (dir[0] == '\0' || lstat(dir, &st) == -1)
		return;
	nftw(dir, h_rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

int
h_pid_alive(pid_t pid)
{
	char st;
	pid_t pp;

	if (h_proc_stat(pid, &st, &pp) == -1)
		return 0;
	return st != 'Z' && st != 'X';
}

/* Children of pid (up to max in out); *zombies counts those in state Z. */
int
h_children(pid_t pid, pid_t *out, int max, int *zombies)
{
	DIR *d;
	struct dirent *e;
	char st;
	pid_t p, pp;
	int n = 0;

	if (zombies != NULL)
		*zombies = 0;
	d = opendir("/proc");
	cr_assert(d != NULL);
	while ((e = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		p = (pid_t)atoi(e->d_name);
		if (h_proc_stat(p, &st, &pp) == -1 || pp != pid)
			continue;
		if (out != NULL && n < max)
			out[n] = p;
		n++;
		if (st == 'Z' && zombies != NULL)
			(*zombies)++;
	}
	closedir(d);
	return n;
}

int
h_free_port(void)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof sin;
	int fd, port;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(fd >= 0);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(bind(fd, (struct sockaddr *)&sin, sizeof sin) == 0);
	cr_assert(getsockname(fd, (struct sockaddr *)&sin, &len) == 0);
	port = ntohs(sin.sin_port);
	close(fd);
	return port;
}

int
h_dial(int port)
{
	struct sockaddr_in sin;
	int fd;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert(fd >= 0);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof sin) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}
