/* Adversarial suite helpers: see adv.h. */
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "adv.h"

#define ADV_MAX_SERVERS 8

static struct {
	struct h_server *s;
	int serves_on; /* HTTP beside stdio: stdin's end does not end it */
} servers[ADV_MAX_SERVERS];
static char tmpdir[64];

const char *
adv_tmpdir(void)
{
	char path[96];
	FILE *f;

	if (tmpdir[0] == '\0') {
		snprintf(tmpdir, sizeof tmpdir, "/tmp/mcp-adv-%d-XXXXXX",
		    (int)getpid());
		cr_assert(
		    mkdtemp(tmpdir) != NULL, "mkdtemp: %s", strerror(errno));
		/* Whose it is, for the final check's report if it stays. */
		snprintf(path, sizeof path, "%s/.test", tmpdir);
		if ((f = fopen(path, "w")) != NULL) {
			fprintf(f, "%s/%s\n", criterion_current_test->category,
			    criterion_current_test->name);
			fclose(f);
		}
	}
	return tmpdir;
}

struct h_server *
adv_start(const char *first, ...)
{
	const char *args[48];
	const char *a;
	struct h_server *s;
	char *saved;
	va_list ap;
	int n = 0, i;

	args[n++] = "--label";
	args[n++] = ADV_LABEL;
	va_start(ap, first);
	for (a = first; a != NULL && n < 47; a = va_arg(ap, const char *))
		args[n++] = a;
	va_end(ap);
	/* ADV_LOG=info|debug: the server's log on stderr, for debugging. */
	if (getenv("ADV_LOG") != NULL && n < 46) {
		args[n++] = "--log-level";
		args[n++] = getenv("ADV_LOG");
	}
	args[n] = NULL;
	/* TMPDIR for the server only: anything else the test starts (the
	 * engine, through scripts/dockerd-start) must not inherit it. */
	saved = getenv("TMPDIR");
	saved = saved != NULL ? strdup(saved) : NULL;
	setenv("TMPDIR", adv_tmpdir(), 1);
	/* The server's private runtime directory (spools, temporary trees)
	 * too, so that what is left there can be checked. */
	setenv("MCP_SANDBOXD_RUNTIME_DIR", adv_tmpdir(), 1);
	s = h_startv(args);
	unsetenv("MCP_SANDBOXD_RUNTIME_DIR");
	if (saved != NULL) {
		setenv("TMPDIR", saved, 1);
		free(saved);
	} else
		unsetenv("TMPDIR");
	for (i = 0; i < ADV_MAX_SERVERS && servers[i].s != NULL; i++)
		;
	if (i < ADV_MAX_SERVERS) {
		servers[i].s = s;
		servers[i].serves_on = 0;
		for (n = 0; args[n] != NULL && args[n + 1] != NULL; n++)
			if (strcmp(args[n], "--transport") == 0 &&
			    strcmp(args[n + 1], "stdio") != 0)
				servers[i].serves_on = 1;
	}
	json_object_put(h_initialize(s));
	return s;
}

/* Spool directories (mcp-sandboxd-*) in the test's TMPDIR. */
static int
spools_left(char *names, size_t size)
{
	struct dirent *e;
	DIR *d;
	int n = 0;

	names[0] = '\0';
	if (tmpdir[0] == '\0' || (d = opendir(tmpdir)) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "mcp-sandboxd-", 13) != 0)
			continue;
		n++;
		if (strlen(names) + strlen(e->d_name) + 2 < size) {
			strcat(names, e->d_name);
			strcat(names, " ");
		}
	}
	closedir(d);
	return n;
}

void
adv_finish(struct h_server *s)
{
	pid_t w[64];
	char names[512], cmd[256], *out;
	int nw, left, i, others = 0;

	nw = adv_workers(s, w, 64);
	for (i = 0; i < ADV_MAX_SERVERS; i++) {
		if (servers[i].s == s) {
			servers[i].s = NULL;
			/* It serves HTTP on after stdin's end: a signal. */
			if (servers[i].serves_on)
				kill(s->pid, SIGTERM);
		} else if (servers[i].s != NULL)
			others++;
	}
	h_finish(s); /* exit 0, no labelled container left */
	left = adv_wait_pids_gone(w, nw, 5000);
	cr_expect_eq(left, 0, "%d worker(s) outlived the server", left);
	if (others == 0 && tmpdir[0] != '\0') {
		/* Every server of this test is gone: nothing may be left. */
		cr_expect_eq(spools_left(names, sizeof names), 0,
		    "spool directories left in %s: %s", tmpdir, names);
		snprintf(cmd, sizeof cmd, "rm -rf '%s' 2>&1; ls -lAR '%s' 2>&1",
		    tmpdir, tmpdir);
		out = h_run(cmd, NULL);
		cr_expect(access(tmpdir, F_OK) == -1,
		    "%s could not be removed: %s", tmpdir, out);
		free(out);
		tmpdir[0] = '\0';
	}
}

void
adv_forget(struct h_server *s)
{
	int i;

	for (i = 0; i < ADV_MAX_SERVERS; i++)
		if (servers[i].s == s)
			servers[i].s = NULL;
	h_free(s);
}

/* execute_code in a sandbox, dependencies none; the tool result. */
json_object *
adv_code(struct h_server *s, const char *cid, const char *lang, const char *src,
    int timeout_s, long long *ms)
{
	json_object *a, *r;
	long long t0 = h_now_ms();

	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(a, "language", json_object_new_string(lang));
	json_object_object_add(a, "code", json_object_new_string(src));
	json_object_object_add(
	    a, "dependencies", json_object_new_string("none"));
	json_object_object_add(
	    a, "timeout_seconds", json_object_new_int(timeout_s));
	r = h_call_tool_obj(s, "execute_code", a, timeout_s * 1000 + 30000);
	if (ms != NULL)
		*ms = h_now_ms() - t0;
	return r;
}

long long
adv_background(
    struct h_server *s, const char *cid, const char *cmd, int timeout_s)
{
	json_object *a, *r;
	long long id;

	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(a, "background", json_object_new_boolean(1));
	json_object_object_add(
	    a, "timeout_seconds", json_object_new_int(timeout_s));
	json_object_object_add(a, "commands", json_object_new_string(cmd));
	r = h_call_tool_obj(s, "sandbox_exec", a, H_TIMEOUT_MS);
	cr_assert(!h_is_error(r), "%s: %s", cmd, h_text(r));
	id = h_int(r, "structuredContent.process_id");
	json_object_put(r);
	return id;
}

long long
adv_stat(struct h_server *s, const char *path)
{
	json_object *m, *st;
	long long v;

	m = h_read_uri(s, "sandbox://stats");
	st = h_parse(h_str(m, "result.contents.0.text"));
	cr_assert(h_get(st, path) != NULL, "no %s in sandbox://stats: %.500s",
	    path, json_object_to_json_string(st));
	v = h_int(st, path);
	json_object_put(st);
	json_object_put(m);
	return v;
}

long long
adv_ping(struct h_server *s, int timeout_ms)
{
	long long t0 = h_now_ms();
	json_object *m;

	m = h_request(s, "ping", NULL, timeout_ms);
	cr_assert(h_get(m, "result") != NULL, "ping answered %s",
	    json_object_to_json_string(m));
	json_object_put(m);
	return h_now_ms() - t0;
}

void
adv_alive(struct h_server *s, const char *cid)
{
	json_object *r;
	char *c = NULL;

	adv_ping(s, 10000);
	if (cid == NULL)
		cid = c = h_create(s, NULL);
	r = h_exec(s, cid, "echo alive", 30);
	cr_assert(!h_is_error(r) && h_int(h_first(r), "exit_code") == 0,
	    "the sandbox does not answer: %.1000s", h_text(r));
	cr_assert_str_eq(h_str(h_first(r), "stdout"), "alive\n");
	json_object_put(r);
	if (c != NULL) {
		h_stop(s, c);
		free(c);
	}
}

int
adv_procs(struct h_server *s, const char *cid, const char *what)
{
	json_object *r;
	char *out, *p, *line;
	int n = 0;

	r = h_exec(s, cid, "ps -eo pid,stat,args", 30);
	if (h_is_error(r) || h_int(h_first(r), "exit_code") != 0) {
		fprintf(
		    stderr, "ps in the sandbox failed: %.300s\n", h_text(r));
		json_object_put(r);
		return -1;
	}
	/* The whole list: a result shows only the head and tail of a long
	 * one, and a process in the middle must be counted too. */
	if (h_str(h_first(r), "stdout_uri") != NULL)
		out = h_read_whole(s, h_str(h_first(r), "stdout_uri"));
	else
		out = strdup(adv_out(r));
	json_object_put(r);
	cr_assert(out != NULL);
	for (p = out, line = strsep(&p, "\n"); line != NULL;
	     line = strsep(&p, "\n")) {
		if (!h_contains(line, what) || h_contains(line, "ps -eo"))
			continue;
		fprintf(stderr, "in the sandbox: %s\n", line);
		n++;
	}
	free(out);
	return n;
}

json_object *
adv_exec(struct h_server *s, const char *cid, const char *cmd,
    const char *extra, int timeout_s, long long *ms)
{
	json_object *args, *r;
	long long t0;

	args = extra != NULL ? h_parse(extra) : json_object_new_object();
	json_object_object_add(args, "commands", json_object_new_string(cmd));
	if (timeout_s > 0)
		json_object_object_add(
		    args, "timeout_seconds", json_object_new_int(timeout_s));
	t0 = h_now_ms();
	r = h_exec_obj(
	    s, cid, args, (timeout_s > 0 ? timeout_s * 1000 : 60000) + 30000);
	if (ms != NULL)
		*ms = h_now_ms() - t0;
	return r;
}

int
adv_failed(json_object *r)
{
	return h_is_error(r) || !h_bool(r, "structuredContent.success");
}

const char *
adv_out(json_object *r)
{
	const char *v = h_str(r, "structuredContent.results.0.stdout");

	return v != NULL ? v : "";
}

const char *
adv_err(json_object *r)
{
	const char *v = h_str(r, "structuredContent.results.0.stderr");

	return v != NULL ? v : "";
}

int
adv_workers(struct h_server *s, pid_t *out, int max)
{
	int n = h_children(s->pid, out, max, NULL);

	return n < max ? n : max;
}

int
adv_wait_pids_gone(const pid_t *pids, int n, int timeout_ms)
{
	long long deadline = h_now_ms() + timeout_ms;
	int alive, i;

	for (;;) {
		alive = 0;
		for (i = 0; i < n; i++)
			alive += h_pid_alive(pids[i]);
		if (alive == 0 || h_now_ms() >= deadline)
			return alive;
		usleep(100000);
	}
}
