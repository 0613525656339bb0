/*
 * copy_file_from_sandbox: a file or directory of a sandbox to the host.
 * Either arrives as a tar stream extracted by hosttar.c's extractor
 * (regular files and directories only, never outside the destination,
 * never through a symlink, no execute bit unless allowed, no .git or
 * hostile name), under a byte cap counted on the host, into a private
 * directory moved into place only once all of it arrived: a failed copy
 * writes nothing and replaces nothing. Nothing from the sandbox is
 * trusted, and a stream that stops fails after --transfer-idle-timeout.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "config.h"
#include "core.h"
#include "hosttar.h"
#include "mcp.h"
#include "run.h"
#include "sandbox.h"
#include "tools.h"
#include "xmalloc.h"

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\"},"
    "\"container_src_path\":{\"type\":\"string\",\"description\":\"a "
    "regular file or a directory in the sandbox (a symlink, a device or "
    "a FIFO is refused)\"},"
    "\"local_dest_path\":{\"type\":\"string\",\"description\":\"where on "
    "the host, inside a directory the operator allowed (default: the "
    "first allowed directory and the source's name)\"},"
    "\"overwrite\":{\"type\":\"boolean\",\"default\":false,"
    "\"description\":\"replace existing files (only once the whole copy "
    "arrived: a failed copy leaves them as they were)\"},"
    "\"max_bytes\":{\"type\":\"integer\",\"minimum\":1,\"description\":"
    "\"most bytes to write on the host, the file or the whole tree "
    "(default and ceiling: the operator's --max-copy-out-mb); past it "
    "the call fails and nothing is written\"},"
    "\"preserve_mode\":{\"type\":\"boolean\",\"default\":false,"
    "\"description\":\"keep execute bits (only if the operator allows "
    "it with --allow-exec-bits); otherwise files come out without "
    "them\"}},"
    "\"required\":[\"container_id\",\"container_src_path\"],"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"},"
    "\"files\":{\"type\":\"integer\"},"
    "\"skipped\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"properties\":{\"path\":{\"type\":\"string\"},"
    "\"reason\":{\"type\":\"string\"},\"detail\":{\"type\":\"string\"}}},"
    "\"description\":\"entries not written and why: symlink, fifo, "
    "device, hardlink, denied name (.git, .hg, .svn, --deny-copy-names), "
    "hostile name (a leading '-', control or bidi characters, invalid "
    "UTF-8), exists...\"}},"
    "\"required\":[\"path\",\"bytes\"]}";

/* Out as a tar: engine/scripts/send-tar.sh, embedded. */
extern const char send_tar_sh[];

struct cfrom {
	struct call *call;
	struct xrun *run;
	char *parent, *name, *dest;
	int overwrite, keep_exec;
	char **deny; /* --deny-copy-names, NULL-terminated */
	uint64_t limit; /* bytes written on the host */
	const char *limit_name;
	char mode; /* 'F', 'D', or 0 before the first byte */
	int made; /* D: we made the destination directory */
	struct tar_in *tin; /* the extractor */
	struct evbuffer *held; /* bytes the pipe did not take yet */
	struct event *ev_pipe, *ev_done, *ev_idle;
	int run_done, tin_done;
	json_object *result; /* the exec's, once ended */
	char *error;
};

static void cfrom_finish(struct cfrom *);

static void
cfrom_fail(struct cfrom *f, const char *fmt, const char *detail)
{
	if (f->error == NULL)
		xasprintf(&f->error, fmt, detail);
	if (f->run != NULL && !f->run_done)
		xrun_cancel(f->run);
}

/* Progress: the idle deadline starts again. */
static void
cfrom_progress(struct cfrom *f)
{
	struct timeval tv = {sup.conf->transfer_idle, 0};

	if (f->ev_idle != NULL)
		evtimer_add(f->ev_idle, &tv);
}

static void
cfrom_idle_cb(evutil_socket_t fd, short what, void *arg)
{
	struct cfrom *f = arg;
	char *msg;

	(void)fd;
	(void)what;
	xasprintf(&msg,
	    "no progress for %ld s (--transfer-idle-timeout): the sandbox "
	    "stopped sending, or the host stopped writing",
	    sup.conf->transfer_idle);
	cfrom_fail(f, "%s", msg);
	free(msg);
	if (f->tin != NULL)
		tar_in_abort(f->tin); /* the extractor stops, merging nothing */
}

/* Feed the extractor what it will take; give back credit for it. */
static void
cfrom_feed(struct cfrom *f)
{
	size_t len;
	ssize_t n;

	while ((len = evbuffer_get_length(f->held)) > 0) {
		if (f->error != NULL || f->tin_done)
			n = -1; /* dropped: nothing more is extracted */
		else
			n = write(tar_in_fd(f->tin),
			    evbuffer_pullup(f->held, (ssize_t)len), len);
		if (n == -1 && errno == EAGAIN && f->error == NULL &&
		    !f->tin_done) {
			event_add(f->ev_pipe, NULL);
			return;
		}
		if (n <= 0)
			n = (ssize_t)len; /* the extractor stopped */
		else
			cfrom_progress(f);
		evbuffer_drain(f->held, (size_t)n);
		if (!f->run_done)
			xrun_took(f->run, (size_t)n);
	}
	if (f->run_done || f->error != NULL) {
		/* A run that failed (its tar said an error, it was killed)
		 * may have sent a whole archive all the same: nothing of it
		 * is merged. */
		if (f->error != NULL)
			tar_in_abort(f->tin);
		else
			tar_in_close_input(f->tin);
		/* All of it is in: what is left is the host's own work. */
		if (f->ev_idle != NULL)
			evtimer_del(f->ev_idle);
	}
}

static void
cfrom_pipe_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	cfrom_feed(arg);
}

static void
cfrom_tin_cb(evutil_socket_t fd, short what, void *arg)
{
	struct cfrom *f = arg;

	(void)fd;
	(void)what;
	f->tin_done = 1;
	/* An error of the extractor (a limit, a bad archive) ends the run. */
	if (tar_in_result(f->tin, NULL) == -1)
		cfrom_fail(f, "%s", tar_in_error(f->tin));
	cfrom_feed(f);
	cfrom_finish(f);
}

/* The deny list of the operator, NULL-terminated, or NULL. */
static char **
deny_names(void)
{
	const struct config_list *l = &sup.conf->deny_copy_names;
	char **v;
	int i;

	if (l->n == 0)
		return NULL;
	v = xcalloc((size_t)l->n + 1, sizeof *v);
	for (i = 0; i < l->n; i++)
		v[i] = xstrdup(l->v[i]);
	return v;
}

/* Starts the extractor for the first byte's mode. */
static int
cfrom_start(struct cfrom *f)
{
	struct tar_in_opts o;
	struct tar_limits lim;
	struct stat st;
	uint64_t project;
	char err[512];

	memset(&o, 0, sizeof o);
	o.overwrite = f->overwrite;
	o.keep_exec = f->keep_exec;
	o.deny = (const char *const *)f->deny;
	o.limit_name = f->limit_name;
	lim.max_bytes = f->limit;
	lim.max_files = 0;
	if (f->mode == 'F') {
		if (!f->overwrite && lstat(f->dest, &st) == 0) {
			cfrom_fail(
			    f, "%s", "it exists (set overwrite to replace it)");
			return -1;
		}
		o.single = f->name;
		f->tin = tar_in_start(f->parent, &lim, &o, err, sizeof err);
	} else {
		if (mkdir(f->dest, 0755) == 0)
			f->made = 1;
		else if (errno != EEXIST) {
			cfrom_fail(f, "cannot make it: %s", strerror(errno));
			return -1;
		}
		project = (uint64_t)sup.conf->project_mb * 1024 * 1024;
		if (project < lim.max_bytes) {
			lim.max_bytes = project;
			o.limit_name = "--max-project-mb";
		}
		lim.max_files = (uint64_t)sup.conf->project_files;
		f->tin = tar_in_start(f->dest, &lim, &o, err, sizeof err);
	}
	if (f->tin == NULL) {
		cfrom_fail(f, "%s", err);
		return -1;
	}
	f->held = evbuffer_new();
	f->ev_pipe =
	    event_new(sup.base, tar_in_fd(f->tin), EV_WRITE, cfrom_pipe_cb, f);
	f->ev_done = event_new(
	    sup.base, tar_in_done_fd(f->tin), EV_READ, cfrom_tin_cb, f);
	event_add(f->ev_done, NULL);
	return 0;
}

static int
cfrom_sink(struct xrun *run, const char *p, size_t len, void *arg)
{
	struct cfrom *f = arg;

	(void)run;
	if (f->error != NULL)
		return 0;
	if (f->mode == 0 && len > 0) {
		f->mode = *p++;
		len--;
		if (f->mode != 'F' && f->mode != 'D') {
			cfrom_fail(f, "%s",
			    "unexpected answer from the "
			    "sandbox");
			return 0;
		}
		cfrom_progress(f);
		if (cfrom_start(f) == -1)
			return 0;
	}
	/* Through the pipe; credit comes back as the pipe takes it. */
	evbuffer_add(f->held, p, len);
	cfrom_feed(f);
	return 1;
}

static void
cfrom_run_done(struct xrun *run, json_object *r, void *arg)
{
	struct cfrom *f = arg;
	json_object *v;

	(void)run;
	f->run_done = 1;
	f->result = json_object_get(r);
	if (f->error == NULL &&
	    (!json_object_object_get_ex(r, "exit_code", &v) ||
	        json_object_get_int(v) != 0)) {
		cfrom_fail(
		    f, "%s", xrun_failure(r, "the sandbox could not send it"));
	}
	if (f->tin != NULL)
		cfrom_feed(f); /* and then the end of the input */
	else
		f->tin_done = 1;
	cfrom_finish(f);
}

static void
cfrom_finish(struct cfrom *f)
{
	json_object *o, *sum = NULL, *v;
	char *text, **d;
	size_t nskipped = 0;

	if (!f->run_done || !f->tin_done)
		return;
	if (f->tin != NULL && tar_in_result(f->tin, &sum) == -1)
		cfrom_fail(f, "%s", tar_in_error(f->tin));
	if (f->error != NULL && f->made)
		rmdir(f->dest); /* empty: nothing was merged into it */
	if (f->error != NULL)
		mcp_call_reply(
		    f->call, tool_error("copy from the sandbox to %s "
		                        "failed: %s (nothing was written)",
		                 f->dest, f->error));
	else {
		o = json_object_new_object();
		json_object_object_add(
		    o, "path", json_object_new_string(f->dest));
		json_object_object_add(o, "bytes",
		    json_object_new_int64(
		        sum != NULL &&
		                json_object_object_get_ex(sum, "bytes", &v)
		            ? json_object_get_int64(v)
		            : 0));
		if (sum != NULL && f->mode == 'D') {
			json_object_object_get_ex(sum, "files", &v);
			json_object_object_add(o, "files", json_object_get(v));
			json_object_object_get_ex(sum, "skipped", &v);
			nskipped = json_object_array_length(v);
			json_object_object_add(
			    o, "skipped", json_object_get(v));
		}
		if (f->mode == 'D' && nskipped > 0)
			xasprintf(&text,
			    "Copied to %s (a directory); %zu entries were "
			    "skipped (see skipped: links, special files, "
			    "version control metadata, hostile names, existing "
			    "files).",
			    f->dest, nskipped);
		else
			xasprintf(&text, "Copied to %s (%s).", f->dest,
			    f->mode == 'D' ? "a directory" : "a file");
		mcp_call_reply(f->call, tool_result(o, text, 0));
		free(text);
	}
	json_object_put(sum);
	json_object_put(f->result);
	if (f->ev_pipe != NULL)
		event_free(f->ev_pipe);
	if (f->ev_done != NULL)
		event_free(f->ev_done);
	if (f->ev_idle != NULL)
		event_free(f->ev_idle);
	if (f->tin != NULL)
		tar_in_free(f->tin);
	if (f->held != NULL)
		evbuffer_free(f->held);
	for (d = f->deny; d != NULL && *d != NULL; d++)
		free(*d);
	free(f->deny);
	free(f->parent);
	free(f->name);
	free(f->dest);
	free(f->error);
	free(f);
}

static void
copy_from(struct call *c)
{
	const char *src, *dest, *args[2];
	char err[512], *resolved, *slash, *tmp;
	json_object *ow, *mb, *pm;
	uint64_t cap;
	struct xrun_opts o;
	char *line;
	struct sandbox *sb;
	struct cfrom *f;

	if (!tool_arg_type_ok(
	        c, "container_src_path", json_type_string, NULL) ||
	    (src = tool_arg_string(c, "container_src_path")) == NULL ||
	    *src == '\0' ||
	    !tool_arg_type_ok(c, "local_dest_path", json_type_string, NULL) ||
	    !tool_arg_type_ok(c, "overwrite", json_type_boolean, &ow)) {
		mcp_call_reply(
		    c, tool_error(
		           "container_src_path is required; "
		           "local_dest_path is a string, overwrite a boolean"));
		return;
	}
	cap = (uint64_t)sup.conf->copy_out_mb * 1024 * 1024;
	if (!tool_arg_type_ok(c, "max_bytes", json_type_int, &mb) ||
	    (mb != NULL && (json_object_get_int64(mb) < 1 ||
	                       (uint64_t)json_object_get_int64(mb) > cap))) {
		mcp_call_reply(
		    c, tool_error("max_bytes is an integer from 1 to "
		                  "%llu (the operator's "
		                  "--max-copy-out-mb=%ld)",
		           (unsigned long long)cap, sup.conf->copy_out_mb));
		return;
	}
	if (!tool_arg_type_ok(c, "preserve_mode", json_type_boolean, &pm)) {
		mcp_call_reply(c, tool_error("preserve_mode is a boolean"));
		return;
	}
	if (pm != NULL && json_object_get_boolean(pm) &&
	    !sup.conf->allow_exec_bits) {
		mcp_call_reply(
		    c, tool_error("preserve_mode: the operator does not allow "
		                  "execute bits on copied files (the server "
		                  "runs without --allow-exec-bits)"));
		return;
	}
	if (hostpolicy_empty(&sup.hosts)) {
		mcp_call_reply(c,
		    tool_error(
		        "no host directory is allowed: start "
		        "the server with --allow-dir DIR (or MCP_SANDBOXD_ALLOW_DIRS)"));
		return;
	}
	if ((dest = tool_arg_string(c, "local_dest_path")) == NULL) {
		tmp = xstrdup(src);
		xasprintf(&resolved, "%s/%s", sup.hosts.dirs[0], basename(tmp));
		free(tmp);
	} else
		resolved = xstrdup(dest);
	tmp = hostpath_resolve(
	    &sup.hosts, resolved, HOSTPATH_CREATE, err, sizeof err);
	free(resolved);
	if (tmp == NULL) {
		mcp_call_reply(c, tool_error("%s", err));
		return;
	}
	if ((sb = sandbox_lookup(c, "container_id")) == NULL) {
		free(tmp);
		return;
	}
	f = xcalloc(1, sizeof *f);
	f->call = c;
	f->dest = tmp;
	f->overwrite = ow != NULL && json_object_get_boolean(ow);
	f->keep_exec = pm != NULL && json_object_get_boolean(pm);
	f->limit = mb != NULL ? (uint64_t)json_object_get_int64(mb) : cap;
	f->limit_name = mb != NULL ? "max_bytes" : "--max-copy-out-mb";
	f->deny = deny_names();
	slash = strrchr(f->dest, '/');
	f->parent = slash == f->dest
	                ? xstrdup("/")
	                : xstrndup(f->dest, (size_t)(slash - f->dest));
	f->name = xstrdup(slash + 1);
	args[0] = src;
	args[1] = NULL;
	memset(&o, 0, sizeof o);
	o.command = send_tar_sh;
	o.args = args;
	xasprintf(&line, "copy_file_from_sandbox %s", src);
	o.log_as = line;
	o.timeout_ms = sup.conf->max_exec_timeout * 1000;
	o.stdout_sink = cfrom_sink;
	f->ev_idle = evtimer_new(sup.base, cfrom_idle_cb, f);
	cfrom_progress(f);
	f->run = xrun_start(c, sb, &o, cfrom_run_done, f);
	free(line);
}

const struct tool tool_copy_file_from_sandbox = {
    .name = "copy_file_from_sandbox",
    .title = "Copy a file or directory out of a sandbox",
    .description =
        "Copy a file (or a directory tree) from a sandbox to the host, "
        "inside a directory the operator allowed. Only regular files and "
        "directories are taken, never through a symlink; at most max_bytes "
        "(ceiling --max-copy-out-mb) are written, else the call fails and "
        "nothing is written. Files come out without execute bits unless "
        "preserve_mode (and the operator allows it); .git, .hg, .svn, the "
        "operator's denied names and hostile names (leading '-', control "
        "or bidi characters, invalid UTF-8) are skipped and listed. "
        "Existing files are replaced only with overwrite, and only once "
        "the whole copy arrived.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 0,
    .destructive = 1,
    .idempotent = 0,
    .open_world = 0,
    .task_support = 1,
    .exec = copy_from,
};
