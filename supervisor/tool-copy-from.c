/*
 * copy_file_from_sandbox: a file or directory of a sandbox to the host.
 * A file arrives as its bytes and is written without following a symlink
 * at the destination and without replacing anything unless asked; a
 * directory arrives as a tar stream extracted by hosttar.c's secure
 * extractor (regular files and directories only, never outside the
 * destination).  Nothing from the sandbox is trusted.
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
#include "hosttar.h"
#include "supervisor.h"
#include "xmalloc.h"

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\"},"
    "\"container_src_path\":{\"type\":\"string\",\"description\":\"a "
    "file or directory in the sandbox\"},"
    "\"local_dest_path\":{\"type\":\"string\",\"description\":\"where on "
    "the host, inside a directory the operator allowed (default: the "
    "first allowed directory and the source's name)\"},"
    "\"overwrite\":{\"type\":\"boolean\",\"default\":false}},"
    "\"required\":[\"container_id\",\"container_src_path\"],"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"},"
    "\"files\":{\"type\":\"integer\"},"
    "\"skipped\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}}},"
    "\"required\":[\"path\",\"bytes\"]}";

/* $1: "F" and the bytes of a file, or "D" and a tar of a directory. */
static const char sender[] =
    "if [ -d \"$1\" ]; then h=; tar --help 2>&1 | grep -q hard-deref &&"
    " h=--hard-dereference; printf D && exec tar -cf - $h -C \"$1\" .;"
    " elif [ -f \"$1\" ]; then printf F && exec cat -- \"$1\";"
    " elif [ -e \"$1\" ]; then echo \"$1 is not a regular file or "
    "directory\" >&2; else echo \"no such file or directory: $1\" >&2; "
    "fi; exit 3";

struct cfrom {
	struct call *call;
	struct xrun *run;
	char *parent, *name, *dest;
	int overwrite;
	char mode; /* 'F', 'D', or 0 before the first byte */
	int fd; /* F: the file being written */
	int made; /* F: we created it (remove on failure) */
	long long bytes;
	struct tar_in *tin; /* D: the extractor */
	struct evbuffer *held; /* D: bytes the pipe did not take yet */
	struct event *ev_pipe, *ev_done;
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

/* Feed the extractor what it will take; give back credit for it. */
static void
cfrom_feed(struct cfrom *f)
{
	size_t len;
	ssize_t n;

	while ((len = evbuffer_get_length(f->held)) > 0) {
		n = write(tar_in_fd(f->tin),
		    evbuffer_pullup(f->held, (ssize_t)len), len);
		if (n == -1 && errno == EAGAIN) {
			event_add(f->ev_pipe, NULL);
			return;
		}
		if (n <= 0) {
			/* The extractor stopped (an error of its own). */
			evbuffer_drain(f->held, len);
			break;
		}
		evbuffer_drain(f->held, (size_t)n);
		if (!f->run_done)
			xrun_took(f->run, (size_t)n);
	}
	if (f->run_done && f->tin != NULL)
		tar_in_close_input(f->tin);
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
	cfrom_finish(f);
}

static int
cfrom_start_dir(struct cfrom *f)
{
	struct tar_limits lim;
	char err[512];

	if (mkdir(f->dest, 0755) == -1 && errno != EEXIST) {
		cfrom_fail(f, "cannot make %s", f->dest);
		return -1;
	}
	lim.max_bytes = (uint64_t)sup.conf->project_mb * 1024 * 1024;
	lim.max_files = (uint64_t)sup.conf->project_files;
	if ((f->tin = tar_in_new(
	         f->dest, &lim, f->overwrite, err, sizeof err)) == NULL) {
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
	char err[512];
	ssize_t n;

	(void)run;
	if (f->error != NULL)
		return 0;
	if (f->mode == 0 && len > 0) {
		f->mode = *p++;
		len--;
		if (f->mode == 'F') {
			f->fd = hostpath_open_new(
			    f->parent, f->name, f->overwrite, err, sizeof err);
			if (f->fd == -1) {
				cfrom_fail(f, "%s", err);
				return 0;
			}
			f->made = 1;
		} else if (f->mode != 'D' || cfrom_start_dir(f) == -1) {
			cfrom_fail(f, "%s",
			    "unexpected answer from the "
			    "sandbox");
			return 0;
		}
	}
	f->bytes += (long long)len;
	if (f->mode == 'F') {
		while (len > 0) {
			if ((n = write(f->fd, p, len)) == -1) {
				if (errno == EINTR)
					continue;
				cfrom_fail(f, "writing on the host failed: %s",
				    strerror(errno));
				return 0;
			}
			p += n;
			len -= (size_t)n;
		}
		return 0;
	}
	/* D: through the pipe; credit comes back as the pipe takes it. */
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
	char *text;

	if (!f->run_done || !f->tin_done)
		return;
	if (f->tin != NULL && tar_in_result(f->tin, &sum) == -1)
		cfrom_fail(f, "%s", tar_in_error(f->tin));
	if (f->fd > 0) {
		close(f->fd);
		f->fd = -1;
		if (f->error != NULL && f->made)
			unlink(f->dest);
	}
	if (f->error != NULL)
		call_reply(f->call, tool_error("copy from the sandbox to %s "
		                               "failed: %s",
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
		            : f->bytes));
		if (sum != NULL) {
			json_object_object_get_ex(sum, "files", &v);
			json_object_object_add(o, "files", json_object_get(v));
			json_object_object_get_ex(sum, "skipped", &v);
			json_object_object_add(
			    o, "skipped", json_object_get(v));
		}
		xasprintf(&text, "Copied to %s (%s).", f->dest,
		    f->mode == 'D' ? "a directory; entries other than regular "
		                     "files and directories were skipped"
		                   : "a file");
		call_reply(f->call, tool_result(o, text, 0));
		free(text);
	}
	json_object_put(sum);
	json_object_put(f->result);
	if (f->ev_pipe != NULL)
		event_free(f->ev_pipe);
	if (f->ev_done != NULL)
		event_free(f->ev_done);
	if (f->tin != NULL)
		tar_in_free(f->tin);
	if (f->held != NULL)
		evbuffer_free(f->held);
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
	json_object *ow;
	struct xrun_opts o;
	char *line;
	struct sandbox *sb;
	struct cfrom *f;

	if (!tool_args_known(c, "container_id", "container_src_path",
	        "local_dest_path", "overwrite", NULL))
		return;
	if (!arg_type_ok(c, "container_src_path", json_type_string, NULL) ||
	    (src = arg_string(c, "container_src_path")) == NULL ||
	    *src == '\0' ||
	    !arg_type_ok(c, "local_dest_path", json_type_string, NULL) ||
	    !arg_type_ok(c, "overwrite", json_type_boolean, &ow)) {
		call_reply(
		    c, tool_error(
		           "container_src_path is required; "
		           "local_dest_path is a string, overwrite a boolean"));
		return;
	}
	if (hostpolicy_empty(&sup.hosts)) {
		call_reply(c,
		    tool_error(
		        "no host directory is allowed: start "
		        "the server with --allow-dir DIR (or MCP_SANDBOXD_ALLOW_DIRS)"));
		return;
	}
	if ((dest = arg_string(c, "local_dest_path")) == NULL) {
		tmp = xstrdup(src);
		xasprintf(&resolved, "%s/%s", sup.hosts.dirs[0], basename(tmp));
		free(tmp);
	} else
		resolved = xstrdup(dest);
	tmp = hostpath_resolve(
	    &sup.hosts, resolved, HOSTPATH_CREATE, err, sizeof err);
	free(resolved);
	if (tmp == NULL) {
		call_reply(c, tool_error("%s", err));
		return;
	}
	if ((sb = sandbox_lookup(c, "container_id")) == NULL) {
		free(tmp);
		return;
	}
	f = xcalloc(1, sizeof *f);
	f->call = c;
	f->fd = -1;
	f->dest = tmp;
	f->overwrite = ow != NULL && json_object_get_boolean(ow);
	slash = strrchr(f->dest, '/');
	f->parent = slash == f->dest
	                ? xstrdup("/")
	                : xstrndup(f->dest, (size_t)(slash - f->dest));
	f->name = xstrdup(slash + 1);
	args[0] = src;
	args[1] = NULL;
	memset(&o, 0, sizeof o);
	o.command = sender;
	o.args = args;
	xasprintf(&line, "copy_file_from_sandbox %s", src);
	o.log_as = line;
	o.timeout_ms = sup.conf->max_exec_timeout * 1000;
	o.stdout_sink = cfrom_sink;
	f->run = xrun_start(c, sb, &o, cfrom_run_done, f);
	free(line);
}

const struct tool tool_copy_file_from_sandbox = {
    .name = "copy_file_from_sandbox",
    .title = "Copy a file or directory out of a sandbox",
    .description = "Copy a file (or a directory tree) from a sandbox to "
                   "the host, inside a directory the operator allowed. Never "
                   "follows a symlink at the destination, never replaces an "
                   "existing file unless overwrite is true; from a directory "
                   "only regular files and directories are taken.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 0,
    .destructive = 1,
    .idempotent = 0,
    .open_world = 0,
    .exec = copy_from,
};
