/*
 * Adversarial: lifecycle races.  Every end of life (the HTTP session's
 * DELETE, stdin EOF, SIGTERM, sandbox_stop of the same sandbox, the
 * worker killed) lands while every kind of operation is in flight
 * (create, exec, transfer, code call, install, stop), at several delays
 * after the operations were sent.  Each case asserts: the server never
 * crashes, every call in flight gets an answer (or its session is gone),
 * and no container is left.  The operations of one case run together, so
 * that the matrix stays within minutes.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <curl/curl.h>

#include "adv.h"

#define TOKEN "lifecycle-test-token-0123456789abcdef"

static const int delays_ms[] = {0, 5, 50, 200};
#define NDELAYS ((int)(sizeof delays_ms / sizeof delays_ms[0]))

enum op { OP_CREATE, OP_EXEC, OP_TRANSFER, OP_CODE, OP_INSTALL, OP_STOP, NOPS };
static const char *const op_names[NOPS] = {
    "create", "exec", "transfer", "code", "install", "stop"};

/* A big file for write_file: its transfer takes a moment. */
static char *
big_contents(void)
{
	static char *b;
	size_t n = 2 * 1024 * 1024;

	if (b == NULL) {
		b = malloc(n + 1);
		cr_assert(b != NULL);
		memset(b, 'x', n);
		b[n] = '\0';
	}
	return b;
}

/* The tool and arguments of an operation on sandbox cid. */
static json_object *
op_args(enum op op, const char *cid, const char *name, const char **tool)
{
	json_object *a = json_object_new_object(), *p;

	switch (op) {
	case OP_CREATE:
		*tool = "sandbox_initialize";
		json_object_object_add(a, "name", json_object_new_string(name));
		return a;
	case OP_EXEC:
		*tool = "sandbox_exec";
		json_object_object_add(a, "commands",
		    json_object_new_string("sleep 2; echo done"));
		break;
	case OP_TRANSFER:
		*tool = "write_file";
		json_object_object_add(
		    a, "file_name", json_object_new_string("big.txt"));
		json_object_object_add(
		    a, "file_contents", json_object_new_string(big_contents()));
		break;
	case OP_CODE:
		*tool = "execute_code";
		json_object_object_add(
		    a, "language", json_object_new_string("python"));
		json_object_object_add(a, "code",
		    json_object_new_string(
		        "import time\ntime.sleep(2)\nprint(1)"));
		break;
	case OP_INSTALL:
		*tool = "install_package";
		p = json_object_new_array();
		json_object_array_add(p, json_object_new_string("six"));
		json_object_object_add(a, "packages", p);
		break;
	default:
		*tool = "sandbox_stop";
		break;
	}
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	return a;
}

/* Send every operation on cid; their request ids in ids[]. */
static void
send_ops(struct h_server *s, const char *cid, const char *name, long *ids)
{
	const char *tool;
	json_object *a;
	int op;

	for (op = 0; op < NOPS; op++) {
		a = op_args((enum op)op, cid, name, &tool);
		ids[op] = h_send_tool(s, tool, a);
	}
}

/* No answer may say "(null)" (a NULL name or id was formatted), and
 * none may refuse the arguments: the operation really was in flight. */
static void
check_no_null(json_object *resp)
{
	const char *t = json_object_to_json_string(resp);

	cr_expect(!h_contains(t, "(null)"), "an answer says (null): %.300s", t);
	cr_expect(!h_contains(t, "unknown argument") &&
	              !h_contains(t, "is required") &&
	              !h_contains(t, "must be"),
	    "the test sent bad arguments: %.300s", t);
}

/* Wait for the answer of each id; how many came. */
static int
wait_answers(struct h_server *s, const long *ids, int n, int timeout_ms,
    const char *what)
{
	json_object *r;
	int i, got = 0;

	for (i = 0; i < n; i++) {
		r = h_wait_id(s, ids[i], timeout_ms);
		if (r == NULL) {
			fprintf(
			    stderr, "%s: no answer to %s\n", what, op_names[i]);
			continue;
		}
		check_no_null(r);
		got++;
		json_object_put(r);
	}
	return got;
}

/* stdin EOF and SIGTERM: the server stops with operations in flight. */
static void
server_end_during_ops(int sigterm)
{
	struct h_server *s;
	long ids[NOPS];
	char *cid, name[32];
	int d, got, rc;

	for (d = 0; d < NDELAYS; d++) {
		s = adv_start(NULL);
		cid = h_create(s, NULL);
		snprintf(name, sizeof name, "lc-end-%d", d);
		send_ops(s, cid, name, ids);
		usleep((useconds_t)delays_ms[d] * 1000);
		if (sigterm)
			kill(s->pid, SIGTERM);
		else {
			close(s->to_fd);
			s->to_fd = -1;
		}
		/* Each call is answered before the server goes. */
		got = wait_answers(
		    s, ids, NOPS, 60000, sigterm ? "SIGTERM" : "stdin EOF");
		rc = h_wait_exit(s, 60000);
		fprintf(stderr,
		    "%s %d ms after the operations: %d/%d answered, exit %d\n",
		    sigterm ? "SIGTERM" : "stdin EOF", delays_ms[d], got, NOPS,
		    rc);
		cr_expect_eq(got, NOPS, "%d ms: %d of %d calls answered",
		    delays_ms[d], got, NOPS);
		cr_expect_eq(rc, 0, "%d ms: exit status %d", delays_ms[d], rc);
		free(cid);
		adv_finish(s); /* no container, spool or worker left */
	}
}

Test(lifecycle, stdin_eof_during_every_operation, .timeout = 600)
{
	server_end_during_ops(0);
}

Test(lifecycle, sigterm_during_every_operation, .timeout = 600)
{
	server_end_during_ops(1);
}

/* sandbox_stop of the sandbox every operation uses, and of one that is
 * still starting (by name: "still starting", never "(null)"). */
Test(lifecycle, stop_during_every_operation, .timeout = 600)
{
	struct h_server *s;
	json_object *a, *r;
	long ids[NOPS], stop, stop2;
	char *cid, name[32];
	int d, got;

	s = adv_start(NULL);
	for (d = 0; d < NDELAYS; d++) {
		cid = h_create(s, NULL);
		snprintf(name, sizeof name, "lc-stop-%d", d);
		send_ops(s, cid, name, ids);
		usleep((useconds_t)delays_ms[d] * 1000);
		a = json_object_new_object();
		json_object_object_add(
		    a, "container_id", json_object_new_string(cid));
		stop = h_send_tool(s, "sandbox_stop", a);
		a = json_object_new_object();
		json_object_object_add(
		    a, "container_id", json_object_new_string(name));
		stop2 = h_send_tool(s, "sandbox_stop", a);
		got = wait_answers(s, ids, NOPS, 60000, "sandbox_stop");
		r = h_wait_id(s, stop, 60000);
		cr_expect(r != NULL, "the stop was not answered");
		if (r != NULL)
			check_no_null(r);
		json_object_put(r);
		r = h_wait_id(s, stop2, 60000);
		cr_expect(r != NULL, "the stop by name was not answered");
		if (r != NULL)
			check_no_null(r);
		json_object_put(r);
		fprintf(stderr, "sandbox_stop %d ms after: %d/%d answered\n",
		    delays_ms[d], got, NOPS);
		cr_expect_eq(got, NOPS);
		cr_expect(h_wait_container_gone(cid, 30000),
		    "container %.12s left after sandbox_stop", cid);
		free(cid);
		adv_alive(s, NULL);
	}
	adv_finish(s);
}

/* The worker of the sandbox in use is killed (and a starting one's). */
Test(lifecycle, worker_killed_during_every_operation, .timeout = 600)
{
	struct h_server *s;
	pid_t w[64];
	long ids[NOPS];
	char *cid, name[32];
	int d, got, n, i, killed;

	s = adv_start(NULL);
	for (d = 0; d < NDELAYS; d++) {
		cid = h_create(s, NULL);
		snprintf(name, sizeof name, "lc-kill-%d", d);
		send_ops(s, cid, name, ids);
		usleep((useconds_t)delays_ms[d] * 1000);
		/* Every worker: the sandbox's, the starting one's. */
		n = adv_workers(s, w, 64);
		for (i = killed = 0; i < n; i++)
			killed += kill(w[i], SIGKILL) == 0;
		got = wait_answers(s, ids, NOPS, 60000, "worker killed");
		fprintf(stderr,
		    "%d worker(s) killed %d ms after: %d/%d answered\n", killed,
		    delays_ms[d], got, NOPS);
		cr_expect_eq(got, NOPS);
		cr_expect(h_pid_alive(s->pid), "the server died");
		free(cid);
		adv_alive(s, NULL);
	}
	adv_finish(s);
}

/* --- over HTTP: DELETE of the session --- */

struct hop {
	const char *url, *sid;
	char *body;
	long status;
	int done;
	pthread_t t;
};

static size_t
discard_cb(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

static size_t
keep_cb(char *p, size_t size, size_t n, void *arg)
{
	char **out = arg;
	size_t old = *out != NULL ? strlen(*out) : 0;

	*out = realloc(*out, old + size * n + 1);
	memcpy(*out + old, p, size * n);
	(*out)[old + size * n] = '\0';
	return size * n;
}

/* One HTTP request; the status (0: the connection failed), *resp the
 * body, *sid_out the Mcp-Session-Id when asked. */
static long
http_req(const char *url, const char *method, const char *sid, const char *body,
    char **resp, int timeout_ms)
{
	struct curl_slist *h = NULL;
	char sh[160];
	long status = 0;
	CURL *c;

	c = curl_easy_init();
	cr_assert(c != NULL);
	h = curl_slist_append(h, "Authorization: Bearer " TOKEN);
	h = curl_slist_append(h, "Content-Type: application/json");
	h = curl_slist_append(h, "Accept: application/json, text/event-stream");
	h = curl_slist_append(h, "Expect:");
	if (sid != NULL) {
		snprintf(sh, sizeof sh, "Mcp-Session-Id: %s", sid);
		h = curl_slist_append(h, sh);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(
	    c, CURLOPT_WRITEFUNCTION, resp != NULL ? keep_cb : discard_cb);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
	if (body != NULL)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	return status;
}

static void *
hop_run(void *arg)
{
	struct hop *o = arg;

	o->status = http_req(o->url, "POST", o->sid, o->body, NULL, 90000);
	o->done = 1;
	return NULL;
}

/* A new HTTP session (initialize and initialized); its id. */
static char *
http_session(const char *url)
{
	struct curl_slist *h = NULL;
	char *sid = NULL, hdrs[4096] = "", *p;
	long status = 0;
	CURL *c;

	c = curl_easy_init();
	h = curl_slist_append(h, "Authorization: Bearer " TOKEN);
	h = curl_slist_append(h, "Content-Type: application/json");
	h = curl_slist_append(h, "Accept: application/json, text/event-stream");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_cb);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS,
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
	    "\"params\":{\"protocolVersion\":\"2025-06-18\","
	    "\"capabilities\":{},\"clientInfo\":{\"name\":\"lc\","
	    "\"version\":\"1\"}}}");
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, keep_cb);
	p = NULL;
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &p);
	cr_assert(curl_easy_perform(c) == CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	cr_assert_eq(status, 200);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	snprintf(hdrs, sizeof hdrs, "%s", p != NULL ? p : "");
	free(p);
	p = strcasestr(hdrs, "mcp-session-id:");
	cr_assert(p != NULL, "no session id: %s", hdrs);
	p += strlen("mcp-session-id:");
	while (*p == ' ')
		p++;
	sid = strndup(p, strcspn(p, "\r\n"));
	http_req(url, "POST", sid,
	    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
	    NULL, 10000);
	return sid;
}

/* A tools/call body (JSON text, malloc'd). */
static char *
call_body(int id, const char *tool, json_object *args)
{
	json_object *m = json_object_new_object(), *p;
	char *s;

	json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(m, "id", json_object_new_int(id));
	json_object_object_add(
	    m, "method", json_object_new_string("tools/call"));
	p = json_object_new_object();
	json_object_object_add(p, "name", json_object_new_string(tool));
	json_object_object_add(p, "arguments", args);
	json_object_object_add(m, "params", p);
	s = strdup(json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN));
	json_object_put(m);
	return s;
}

/* A sandbox in the session: its container_id. */
static char *
http_create(const char *url, const char *sid)
{
	char *body, *resp = NULL, *p, *cid;

	body = call_body(2, "sandbox_initialize", json_object_new_object());
	cr_assert_eq(http_req(url, "POST", sid, body, &resp, 120000), 200);
	free(body);
	p = resp != NULL ? strstr(resp, "\"container_id\":\"") : NULL;
	cr_assert(p != NULL, "no container_id: %s", resp ? resp : "");
	p += strlen("\"container_id\":\"");
	cid = strndup(p, strcspn(p, "\""));
	free(resp);
	return cid;
}

Test(lifecycle, http_delete_during_every_operation, .timeout = 600)
{
	struct h_server *s;
	struct hop ops[NOPS];
	json_object *args;
	const char *tool;
	char listen[64], url[96], tokfile[256], *sid, *cid, name[32];
	long long deadline;
	FILE *f;
	int d, op, port, done, n;

	snprintf(tokfile, sizeof tokfile, "%s/token", adv_tmpdir());
	f = fopen(tokfile, "w");
	cr_assert(f != NULL);
	fprintf(f, "%s\n", TOKEN);
	fclose(f);
	chmod(tokfile, 0600);
	port = h_free_port();
	snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", port);
	s = adv_start("--transport", "both", "--listen", listen,
	    "--auth-token-file", tokfile, NULL);
	/* Wait for the listener. */
	deadline = h_now_ms() + 10000;
	while (http_req(url, "GET", NULL, NULL, NULL, 1000) == 0)
		cr_assert(h_now_ms() < deadline, "no HTTP listener");
	for (d = 0; d < NDELAYS; d++) {
		sid = http_session(url);
		cid = http_create(url, sid);
		snprintf(name, sizeof name, "lc-del-%d", d);
		for (op = 0; op < NOPS; op++) {
			ops[op].url = url;
			ops[op].sid = sid;
			ops[op].done = 0;
			args = op_args((enum op)op, cid, name, &tool);
			ops[op].body = call_body(10 + op, tool, args);
			cr_assert(pthread_create(&ops[op].t, NULL, hop_run,
			              &ops[op]) == 0);
		}
		usleep((useconds_t)delays_ms[d] * 1000);
		cr_expect_eq(http_req(url, "DELETE", sid, NULL, NULL, 30000),
		    200, "DELETE of the session");
		for (op = done = 0; op < NOPS; op++) {
			pthread_join(ops[op].t, NULL);
			/* An answer, or the stream closed with the session
			 * (status 200 and the end of its SSE): never a
			 * hang (the threads would time out). */
			done += ops[op].status != 0;
			free(ops[op].body);
		}
		fprintf(stderr,
		    "DELETE %d ms after: %d/%d requests ended cleanly\n",
		    delays_ms[d], done, NOPS);
		cr_expect_eq(done, NOPS, "a request hung after DELETE");
		cr_expect(h_pid_alive(s->pid), "the server died");
		cr_expect(h_wait_container_gone(cid, 30000),
		    "container %.12s left after DELETE", cid);
		free(cid);
		free(sid);
	}
	/* Nothing of the deleted sessions: only what stdio made could be
	 * left, and it made nothing. */
	deadline = h_now_ms() + 30000;
	while ((n = h_docker_count(s->label)) > 0 && h_now_ms() < deadline)
		usleep(500000);
	cr_expect_eq(n, 0, "%d container(s) left by deleted sessions", n);
	adv_alive(s, NULL);
	/* In "both", stdin's end ends only the stdio session: adv_finish()
	 * sends SIGTERM, and the exit must be 0. */
	adv_finish(s);
}

/* Shutdown under a flood of execs on several sandboxes: every call is
 * answered, and no container with the instance's label is left. */
Test(lifecycle, sigterm_under_exec_flood, .timeout = 600)
{
	static const int at_ms[] = {0, 300, 1500};
	struct h_server *s;
	json_object *a, *r;
	long ids[3 * 25];
	char *cid[3];
	int round, i, k, n, got, rc;

	for (round = 0; round < 3; round++) {
		s = adv_start(NULL);
		for (i = 0; i < 3; i++)
			cid[i] = h_create(s, NULL);
		for (n = k = 0; k < 25; k++)
			for (i = 0; i < 3; i++) {
				a = json_object_new_object();
				json_object_object_add(a, "container_id",
				    json_object_new_string(cid[i]));
				json_object_object_add(a, "commands",
				    json_object_new_string(
				        "sleep 1; echo flood"));
				ids[n++] = h_send_tool(s, "sandbox_exec", a);
			}
		usleep((useconds_t)at_ms[round] * 1000);
		kill(s->pid, SIGTERM);
		for (i = got = 0; i < n; i++)
			if ((r = h_wait_id(s, ids[i], 60000)) != NULL) {
				got++;
				json_object_put(r);
			}
		rc = h_wait_exit(s, 60000);
		fprintf(stderr,
		    "SIGTERM %d ms into %d execs on 3 sandboxes: %d answered, "
		    "exit %d, %d container(s) left\n",
		    at_ms[round], n, got, rc, h_docker_count(s->label));
		cr_expect_eq(got, n);
		for (i = 0; i < 3; i++) {
			cr_expect(!h_container_exists(cid[i]),
			    "container %.12s left after shutdown", cid[i]);
			free(cid[i]);
		}
		adv_finish(s); /* exit 0, no labelled container */
	}
}
