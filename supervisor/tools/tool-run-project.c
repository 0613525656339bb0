/*
 * run_project: a project from the host (copied in as copy_project does) or
 * already in a sandbox: its language and dependency files are detected
 * (requirements.txt, pyproject.toml, setup.py, package.json, go.mod), the
 * dependencies installed into user-writable places, and the entrypoint
 * (given, or detected) run.  Without a container_id a fresh sandbox does
 * the work and is removed before the answer.
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "config.h"
#include "core.h"
#include "hosttar.h"
#include "mcp.h"
#include "run.h"
#include "sandbox.h"
#include "sbout.h"
#include "tools.h"
#include "xmalloc.h"

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"local_src_dir\":{\"type\":\"string\",\"description\":\"a host "
    "project directory (inside one the operator allowed)\"},"
    "\"container_id\":{\"type\":\"string\",\"description\":\"run in this "
    "sandbox (with local_src_dir: copied into it; else the project is "
    "dest_dir in it)\"},"
    "\"dest_dir\":{\"type\":\"string\",\"description\":\"the project's "
    "directory in the sandbox (default: the workdir and the directory's "
    "name)\"},"
    "\"language\":{\"type\":\"string\",\"enum\":[\"auto\",\"python\","
    "\"javascript\",\"typescript\",\"go\"],\"default\":\"auto\"},"
    "\"entrypoint\":{\"type\":\"string\",\"description\":\"the command "
    "to run in the project's directory (default: detected, e.g. python3 "
    "main.py, npm start, go run .)\"},"
    "\"timeout_seconds\":{\"type\":\"integer\",\"minimum\":1}},"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"language\":{\"type\":\"string\"},"
    "\"project_dir\":{\"type\":\"string\"},"
    "\"dependency_files\":{\"type\":\"array\",\"items\":{\"type\":"
    "\"string\"}},"
    "\"entrypoint\":{\"type\":\"string\"},"
    "\"install_output\":{\"type\":\"string\"},"
    "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
    "\"exit_code\":{\"type\":\"integer\",\"description\":\"the "
    "entrypoint's; -1: it did not run (see error)\"},"
    "\"success\":{\"type\":\"boolean\",\"description\":\"the "
    "entrypoint ran and exited 0, its output not cut at the cap\"},"
    "\"duration_ms\":{\"type\":\"integer\"}," XRUN_USAGE_SCHEMA
        XRUN_EGRESS_SCHEMA "\"timed_out\":{\"type\":\"boolean\"},"
    "\"error\":{\"type\":\"string\"}},"
    "\"required\":[\"language\",\"project_dir\",\"exit_code\"]}";

#define STR_(x) #x
#define STR(x) STR_(x)

/* What the project holds: engine/scripts/probe-project.sh, embedded (a
 * probe; its arguments: dir, marker, SBOUT_PROBE_ENTRIES, SBOUT_PKG_MAX). */
extern const char probe_project_sh[];

/* Bytes of the probe's output kept: every name, and package.json. */
#define PROBE_OUT_MAX ((size_t)SBOUT_PROBE_ENTRIES * 260 + SBOUT_PKG_MAX + 64)
#define PROBE_TIMEOUT_MS 30000

/* Its dependencies: engine/scripts/install-project.sh, embedded. */
extern const char install_project_sh[];

/* Before the entrypoint: engine/scripts/run-prelude.sh, embedded. */
extern const char run_prelude_sh[];

struct rproj {
	struct call *call;
	char *sandbox; /* the sandbox's id, once there is one */
	int fresh; /* made for this call: removed at the end */
	char *host_dir; /* to copy in, or NULL */
	char *dir; /* the project in the sandbox */
	char *language, *entry;
	long long timeout_ms;
	json_object *files;
	json_object *prep, *result;
	struct evbuffer *probe; /* the project probe's output */
	int probe_over;
	char nonce[SBOUT_NONCE_LEN + 1];
	struct xrun *run;
	struct upload *up;
};

static void
rproj_free(struct rproj *p)
{
	json_object_put(p->files);
	json_object_put(p->prep);
	json_object_put(p->result);
	if (p->probe != NULL)
		evbuffer_free(p->probe);
	free(p->sandbox);
	free(p->host_dir);
	free(p->dir);
	free(p->language);
	free(p->entry);
	free(p);
}

static void
rproj_reply(void *arg, const char *err)
{
	struct rproj *p = arg;
	json_object *o, *v;
	struct evbuffer *t;
	int bad;

	(void)err;
	if (p->result == NULL) {
		rproj_free(p);
		return;
	}
	o = json_object_new_object();
	json_object_object_add(o, "language",
	    json_object_new_string(p->language ? p->language : "unknown"));
	json_object_object_add(
	    o, "project_dir", json_object_new_string(p->dir ? p->dir : ""));
	json_object_object_add(o, "dependency_files",
	    p->files ? json_object_get(p->files) : json_object_new_array());
	if (p->entry != NULL)
		json_object_object_add(
		    o, "entrypoint", json_object_new_string(p->entry));
	if (p->prep != NULL && json_object_object_get_ex(p->prep, "stdout", &v))
		json_object_object_add(o, "install_output", json_object_get(v));
	json_object_object_foreach(p->result, key, val)
	{
		if (strcmp(key, "command") != 0)
			json_object_object_add(o, key, json_object_get(val));
	}
	if (!p->fresh && p->sandbox != NULL)
		json_object_object_add(
		    o, "container_id", json_object_new_string(p->sandbox));
	/* The entrypoint ran: a result, whatever its exit code. */
	bad = !xrun_ran(o);
	json_object_object_add(
	    o, "success", json_object_new_boolean(xrun_succeeded(o)));
	t = evbuffer_new();
	evbuffer_add_printf(t, "project %s (%s), entrypoint %s\n",
	    p->dir ? p->dir : "?", p->language ? p->language : "?",
	    p->entry ? p->entry : "?");
	if (json_object_object_get_ex(o, "error", &v))
		evbuffer_add_printf(
		    t, "error: %s\n", json_object_get_string(v));
	if (json_object_object_get_ex(o, "stdout", &v) &&
	    json_object_get_string_len(v) > 0)
		evbuffer_add_printf(
		    t, "stdout:\n%s\n", json_object_get_string(v));
	if (json_object_object_get_ex(o, "stderr", &v) &&
	    json_object_get_string_len(v) > 0)
		evbuffer_add_printf(
		    t, "stderr:\n%s\n", json_object_get_string(v));
	if (json_object_object_get_ex(o, "exit_code", &v))
		evbuffer_add_printf(
		    t, "exit code %d\n", json_object_get_int(v));
	evbuffer_add(t, "", 1);
	mcp_call_reply(
	    p->call, tool_result(o, (char *)evbuffer_pullup(t, -1), bad));
	evbuffer_free(t);
	rproj_free(p);
}

/* A host project's language from its files, for a fresh sandbox's image. */
static const char *
host_language(const char *dir)
{
	static const struct {
		const char *file, *lang;
	} marks[] = {{"go.mod", "go"}, {"tsconfig.json", "typescript"},
	    {"package.json", "javascript"}, {"requirements.txt", "python"},
	    {"pyproject.toml", "python"}, {"setup.py", "python"}};
	char path[4096];
	size_t i;

	for (i = 0; i < sizeof marks / sizeof marks[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, marks[i].file);
		if (access(path, F_OK) == 0)
			return marks[i].lang;
	}
	return NULL;
}

/* The end, one way or another: remove a fresh sandbox first. */
static void
rproj_end(struct rproj *p, json_object *result, const char *error)
{
	struct sandbox *sb;

	p->run = NULL;
	if (result != NULL)
		p->result = json_object_get(result);
	else {
		p->result = json_object_new_object();
		json_object_object_add(
		    p->result, "exit_code", json_object_new_int(-1));
		json_object_object_add(
		    p->result, "error", json_object_new_string(error));
	}
	if (p->fresh && p->sandbox != NULL &&
	    (sb = sandbox_find(NULL, p->sandbox)) != NULL)
		sandbox_destroy(sb, rproj_reply, p);
	else
		rproj_reply(p, NULL);
}

static void
rproj_ran(struct xrun *run, json_object *r, void *arg)
{
	(void)run;
	rproj_end(arg, r, NULL);
}

static void
rproj_prepared(struct xrun *run, json_object *r, void *arg)
{
	struct rproj *p = arg;
	json_object *v;
	struct xrun_opts o;
	struct sandbox *sb;
	char *cmd;
	int rc = -1;

	(void)run;
	p->run = NULL;
	p->prep = json_object_get(r);
	if (json_object_object_get_ex(r, "exit_code", &v))
		rc = json_object_get_int(v);
	if (rc != 0 || p->call->cancelled) {
		rproj_end(p, NULL,
		    rc == 4 ? "installing the dependencies failed (see "
		              "install_output)"
		            : xrun_failure(r, "could not prepare the project"));
		return;
	}
	if ((sb = sandbox_find(NULL, p->sandbox)) == NULL) {
		rproj_end(p, NULL, "the sandbox went away");
		return;
	}
	if (strncmp(p->entry, "mcp-ts ", 7) == 0)
		xasprintf(&cmd, "%s mcp_ts %s", run_prelude_sh, p->entry + 7);
	else
		xasprintf(&cmd, "%s %s", run_prelude_sh, p->entry);
	memset(&o, 0, sizeof o);
	o.command = cmd;
	o.workdir = p->dir;
	o.timeout_ms = p->timeout_ms;
	o.output_cap = sup.conf->output_cap;
	p->run = xrun_start(p->call, sb, &o, rproj_ran, p);
	free(cmd);
}

static int
rproj_probe_sink(struct xrun *run, const char *b, size_t len, void *arg)
{
	struct rproj *p = arg;

	(void)run;
	if (evbuffer_get_length(p->probe) + len > PROBE_OUT_MAX)
		p->probe_over = 1;
	else
		evbuffer_add(p->probe, b, len);
	return 0;
}

/* The probe listed the project: decide, then install as the user. */
static void
rproj_probed(struct xrun *run, json_object *r, void *arg)
{
	struct rproj *p = arg;
	struct sbout_project det;
	const char *args[3];
	struct xrun_opts o;
	struct sandbox *sb;
	json_object *v;
	char err[256], *line;

	(void)run;
	p->run = NULL;
	if (!json_object_object_get_ex(r, "exit_code", &v) ||
	    json_object_get_int(v) != 0 || p->call->cancelled) {
		rproj_end(
		    p, NULL, xrun_failure(r, "could not look at the project"));
		return;
	}
	if (p->probe_over) {
		rproj_end(p, NULL, "the project probe wrote more than it can");
		return;
	}
	if (sbout_project((const char *)evbuffer_pullup(p->probe, -1),
	        evbuffer_get_length(p->probe), p->nonce, p->language, p->entry,
	        &det, err, sizeof err) == -1) {
		rproj_end(p, NULL, err);
		return;
	}
	free(p->language);
	p->language = xstrdup(det.language);
	free(p->entry);
	p->entry = det.entry;
	det.entry = NULL;
	json_object_put(p->files);
	p->files = json_object_get(det.files);
	sbout_project_clear(&det);
	if ((sb = sandbox_find(NULL, p->sandbox)) == NULL) {
		rproj_end(p, NULL, "the sandbox went away");
		return;
	}
	args[0] = p->dir;
	args[1] = p->language;
	args[2] = NULL;
	memset(&o, 0, sizeof o);
	o.command = install_project_sh;
	o.args = args;
	xasprintf(&line, "run_project %s: installing its dependencies (%s)",
	    args[0], args[1]);
	o.log_as = line;
	o.timeout_ms = p->timeout_ms;
	o.output_cap = sup.conf->output_cap;
	p->run = xrun_start(p->call, sb, &o, rproj_prepared, p);
	free(line);
}

static void
rproj_prepare(struct rproj *p)
{
	const char *args[5];
	struct xrun_opts o;
	char *line;
	struct sandbox *sb;

	if ((sb = sandbox_find(NULL, p->sandbox)) == NULL) {
		rproj_end(p, NULL, "the sandbox went away");
		return;
	}
	sbout_nonce(p->nonce, sizeof p->nonce);
	p->probe = evbuffer_new();
	args[0] = p->dir;
	args[1] = p->nonce;
	args[2] = STR(SBOUT_PROBE_ENTRIES);
	args[3] = STR(SBOUT_PKG_MAX);
	args[4] = NULL;
	memset(&o, 0, sizeof o);
	o.command = probe_project_sh;
	o.args = args;
	xasprintf(&line, "run_project %s: looking at the project", args[0]);
	o.log_as = line;
	o.log_quiet = 1;
	o.probe = 1;
	o.timeout_ms =
	    p->timeout_ms < PROBE_TIMEOUT_MS ? p->timeout_ms : PROBE_TIMEOUT_MS;
	o.stdout_sink = rproj_probe_sink;
	p->run = xrun_start(p->call, sb, &o, rproj_probed, p);
	free(line);
}

static void
rproj_copied(struct upload *u, const char *err, void *arg)
{
	struct rproj *p = arg;

	upload_free(u);
	p->up = NULL;
	if (err != NULL) {
		rproj_end(p, NULL, err);
		return;
	}
	rproj_prepare(p);
}

/* The sandbox is there: copy the project in, or go straight on. */
static void
rproj_in(struct rproj *p, struct sandbox *sb)
{
	char err[512], *where = NULL;

	if (p->host_dir == NULL) {
		rproj_prepare(p);
		return;
	}
	p->up = upload_host(p->call, sb, p->host_dir, p->dir, NULL, 0,
	    rproj_copied, p, &where, err, sizeof err);
	free(where);
	if (p->up == NULL)
		rproj_end(p, NULL, err);
}

static void
rproj_created(struct call *c, struct sandbox *sb, const char *err, void *arg)
{
	struct rproj *p = arg;

	(void)c;
	if (sb == NULL) {
		rproj_end(p, NULL, err);
		return;
	}
	p->sandbox = xstrdup(sb->id);
	if (p->dir == NULL)
		xasprintf(&p->dir, "%s/%s", sb->workdir, basename(p->host_dir));
	rproj_in(p, sb);
}

static void
rproj_cancel(struct call *c)
{
	struct rproj *p = c->state;

	if (p->run != NULL)
		xrun_cancel(p->run);
	if (p->up != NULL)
		upload_cancel(p->up);
}

static void
run_project(struct call *c)
{
	const struct config *conf = sup.conf;
	struct limits lim = {conf->memory_mb, conf->cpus, conf->pids};
	const char *src, *lang, *entry, *dest;
	char err[512], *host = NULL;
	json_object *v;
	struct sandbox *sb = NULL;
	struct rproj *p;

	if (!tool_arg_type_ok(c, "local_src_dir", json_type_string, NULL) ||
	    !tool_arg_type_ok(c, "dest_dir", json_type_string, NULL) ||
	    !tool_arg_type_ok(c, "language", json_type_string, NULL) ||
	    !tool_arg_type_ok(c, "entrypoint", json_type_string, NULL) ||
	    !tool_arg_type_ok(c, "timeout_seconds", json_type_int, &v) ||
	    (v != NULL &&
	        (json_object_get_int64(v) < 1 ||
	            json_object_get_int64(v) > conf->max_exec_timeout))) {
		mcp_call_reply(c,
		    tool_error(
		        "local_src_dir, dest_dir, language and "
		        "entrypoint are strings; timeout_seconds an integer from 1 "
		        "to %ld",
		        conf->max_exec_timeout));
		return;
	}
	src = tool_arg_string(c, "local_src_dir");
	dest = tool_arg_string(c, "dest_dir");
	lang = tool_arg_string(c, "language");
	entry = tool_arg_string(c, "entrypoint");
	if (lang != NULL && strcmp(lang, "auto") != 0 &&
	    (!code_language_valid(lang) || strcmp(lang, "bash") == 0)) {
		mcp_call_reply(c, tool_error("language must be auto, python, "
		                             "javascript, typescript or go"));
		return;
	}
	if (src == NULL && (dest == NULL || !json_object_object_get_ex(c->args,
	                                        "container_id", NULL))) {
		mcp_call_reply(c,
		    tool_error(
		        "give local_src_dir (a host project), "
		        "or container_id and dest_dir (a project in the sandbox)"));
		return;
	}
	if (src != NULL && (host = hostpath_resolve(&sup.hosts, src,
	                        HOSTPATH_EXISTING, err, sizeof err)) == NULL) {
		mcp_call_reply(c, tool_error("%s", err));
		return;
	}
	if (json_object_object_get_ex(c->args, "container_id", NULL) &&
	    (sb = sandbox_lookup(c, "container_id")) == NULL) {
		free(host);
		return;
	}
	p = xcalloc(1, sizeof *p);
	p->call = c;
	p->host_dir = host;
	p->language = xstrdup(lang != NULL ? lang : "auto");
	p->entry = entry != NULL ? xstrdup(entry) : NULL;
	p->timeout_ms =
	    (v != NULL ? json_object_get_int64(v) : conf->exec_timeout) * 1000;
	c->state = p;
	c->cancel = rproj_cancel;
	if (dest != NULL)
		p->dir = dest[0] == '/' || sb == NULL ? xstrdup(dest) : NULL;
	if (sb != NULL) {
		p->sandbox = xstrdup(sb->id);
		if (p->dir == NULL && dest != NULL)
			xasprintf(&p->dir, "%s/%s", sb->workdir, dest);
		if (p->dir == NULL)
			xasprintf(
			    &p->dir, "%s/%s", sb->workdir, basename(host));
		rproj_in(p, sb);
		return;
	}
	/* A fresh sandbox; its image from the language if it was given. */
	p->fresh = 1;
	if (sandbox_count() >= conf->max_sandboxes) {
		rproj_end(p, NULL, "too many sandboxes: stop one first");
		return;
	}
	lang = strcmp(p->language, "auto") != 0 ? p->language
	       : host != NULL                   ? host_language(host)
	                                        : NULL;
	sandbox_create_cb(c,
	    lang != NULL ? code_image(lang) : conf->default_image, NULL, NULL,
	    "/app", "none", &lim, conf->max_ttl, rproj_created, p);
}

const struct tool tool_run_project = {
    .name = "run_project",
    .title = "Run a project",
    .description = "Copy a host project into a sandbox (or use one "
                   "already there), detect its language and dependency "
                   "files (requirements.txt, pyproject.toml, setup.py, "
                   "package.json, go.mod), install the dependencies, and run "
                   "its entrypoint (given, or detected: main.py, npm start, "
                   "index.js, go run .). Without container_id a fresh "
                   "sandbox is used and removed.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 0,
    .destructive = 1,
    .idempotent = 0,
    .open_world = 0,
    .task_support = 1,
    .exec = run_project,
};
