/*
 * Uploads: a tar stream made on the host (hosttar.c) written, as the
 * worker's credit allows, into `tar -x` run in the sandbox as the sandbox
 * user.  Memory stays bounded whatever the size: the archive is made a
 * slice at a time, only as fast as the sandbox takes it.  What an upload
 * that failed had newly made is removed, so nothing half-written is left
 * looking like a success.
 */

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "config.h"
#include "core.h"
#include "hosttar.h"
#include "log.h"
#include "mcp.h"
#include "proto.h"
#include "random.h"
#include "run.h"
#include "sandbox.h"
#include "snaptar.h"
#include "xmalloc.h"

/* A tree in: engine/scripts/untar.sh, embedded. */
extern const char untar_sh[];
/* A snapshot back: engine/scripts/restore.sh, embedded. */
extern const char restore_sh[];

/* A random name for a one-file upload's directory, ".mcp-upload.<hex>". */
void
upload_tmp_name(char buf[UPLOAD_TMP_NAME])
{
	static const char prefix[] = ".mcp-upload.";

	memcpy(buf, prefix, sizeof prefix - 1);
	random_hex(buf + sizeof prefix - 1, 8);
}

static void
upload_cleaned(struct xrun *run, json_object *r, void *arg)
{
	(void)run;
	(void)r;
	(void)arg;
}

/*
 * A one-file upload failed (or was killed): remove the directory it
 * unpacked into, tmp in dir, if the sandbox is still there.  Belongs to
 * no call, so that a cancelled call's cleanup still runs.
 */
void
upload_file_cleanup(const char *sandbox, const char *dir, const char *tmp)
{
	struct xrun_opts o;
	struct sandbox *sb;
	const char *args[2];
	char *path;

	if ((sb = sandbox_find(NULL, sandbox)) == NULL ||
	    sb->state != SB_READY || sb->worker == NULL)
		return;
	xasprintf(&path, "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", tmp);
	args[0] = path;
	args[1] = NULL;
	memset(&o, 0, sizeof o);
	o.command = "rm -rf -- \"$1\"";
	o.args = args;
	o.timeout_ms = 30000;
	xrun_start(NULL, sb, &o, upload_cleaned, NULL);
	free(path);
}

struct upload {
	struct tar_out *tar; /* a host tree, or */
	struct snap_out *snap; /* a snapshot */
	json_object *result; /* the run's, once it ended */
	struct evbuffer *stage; /* made, not yet sent */
	struct xrun *run;
	int made; /* the archive is complete */
	char *error; /* the host side failed */
	char *sandbox, *dir; /* one file: where its directory is */
	char tmp[UPLOAD_TMP_NAME];
	void (*done)(struct upload *, const char *, void *);
	void *arg;
};

static void
upload_pump(struct xrun *run, void *arg)
{
	struct upload *u = arg;
	size_t len;
	long credit;
	int rv;

	while ((credit = xrun_credit(run)) > 0 && u->error == NULL) {
		if (evbuffer_get_length(u->stage) == 0 && !u->made) {
			rv = u->tar != NULL ? tar_out_pump(u->tar, u->stage,
			                          PROTO_INITIAL_CREDIT)
			                    : snap_out_pump(u->snap, u->stage,
			                          PROTO_INITIAL_CREDIT);
			if (rv == -1) {
				u->error = xstrdup(
				    u->tar != NULL ? tar_out_error(u->tar)
				                   : snap_out_error(u->snap));
				xrun_cancel(run);
				return;
			}
			u->made = rv == 0;
		}
		len = evbuffer_get_length(u->stage);
		if ((long)len > credit)
			len = (size_t)credit;
		if (len > PROTO_DATA_CHUNK)
			len = PROTO_DATA_CHUNK;
		if (len == 0 && !u->made)
			continue;
		xrun_write(run, evbuffer_pullup(u->stage, (ssize_t)len), len,
		    u->made && len == evbuffer_get_length(u->stage));
		evbuffer_drain(u->stage, len);
		if (u->made && evbuffer_get_length(u->stage) == 0)
			return;
	}
}

static void
upload_done(struct xrun *run, json_object *r, void *arg)
{
	struct upload *u = arg;
	json_object *v;
	char *msg = NULL;

	(void)run;
	u->result = json_object_get(r);
	if (u->error != NULL)
		xasprintf(&msg, "%s (nothing was copied)", u->error);
	else if (u->snap != NULL &&
	         (!json_object_object_get_ex(r, "exit_code", &v) ||
	             json_object_get_int(v) != 0))
		msg =
		    xstrdup(xrun_failure(r, "the sandbox could not unpack it"));
	else if (!json_object_object_get_ex(r, "exit_code", &v) ||
	         json_object_get_int(v) != 0) {
		xasprintf(&msg, "%s%s", xrun_failure(r, "failed"),
		    json_object_object_get_ex(r, "error", NULL)
		        ? ""
		        : " (nothing was copied; check that the destination is "
		          "writable by the sandbox user, e.g. below the workdir, "
		          "and that there is space)");
	}
	if (msg != NULL && u->tmp[0] != '\0')
		upload_file_cleanup(u->sandbox, u->dir, u->tmp);
	u->done(u, msg, u->arg);
	free(msg);
}

static struct upload *
upload_new(void (*done)(struct upload *, const char *, void *), void *arg)
{
	struct upload *u;

	u = xcalloc(1, sizeof *u);
	u->stage = evbuffer_new();
	u->done = done;
	u->arg = arg;
	return u;
}

/* Runs the script o names with the archive on its standard input. */
static void
upload_run(
    struct upload *u, struct call *c, struct sandbox *sb, struct xrun_opts *o)
{
	o->timeout_ms = sup.conf->max_exec_timeout * 1000;
	o->stdin_stream = 1;
	o->on_credit = upload_pump;
	u->run = xrun_start(c, sb, o, upload_done, u);
	upload_pump(u->run, u);
}

/*
 * Upload an archive (taken) into dir of a sandbox; done(u, error, arg)
 * at the end, then upload_free().
 */
struct upload *
upload_start(struct call *c, struct sandbox *sb, struct tar_out *tar,
    const char *dir, const char *name, int one_file,
    void (*done)(struct upload *, const char *, void *), void *arg)
{
	const char *args[4] = {dir, name, NULL, NULL};
	struct xrun_opts o;
	char *line;
	struct upload *u;

	u = upload_new(done, arg);
	if (one_file) {
		upload_tmp_name(u->tmp);
		u->sandbox = xstrdup(sb->id);
		u->dir = xstrdup(dir);
		args[2] = u->tmp;
	}
	u->tar = tar;
	memset(&o, 0, sizeof o);
	o.command = one_file ? upload_file_sh : untar_sh;
	o.args = args;
	/* The host side is not the sandbox's business: its path only. */
	xasprintf(&line, "%s into %s%s%s", c->tool, dir,
	    name != NULL && dir[strlen(dir) - 1] != '/' ? "/" : "",
	    name != NULL ? name : "");
	o.log_as = line;
	upload_run(u, c, sb, &o);
	free(line);
	return u;
}

/*
 * A snapshot (taken) back into the mounts roots (absolute paths) of a
 * sandbox, whose other processes are killed first (restore.sh).
 */
struct upload *
upload_snapshot(struct call *c, struct sandbox *sb, struct snap_out *snap,
    const char *const *roots, const char *log_as,
    void (*done)(struct upload *, const char *, void *), void *arg)
{
	struct xrun_opts o;
	struct upload *u;

	u = upload_new(done, arg);
	u->snap = snap;
	memset(&o, 0, sizeof o);
	o.command = restore_sh;
	o.args = roots;
	o.log_as = log_as;
	upload_run(u, c, sb, &o);
	return u;
}

/* The upload's run's result, once done (NULL before). */
json_object *
upload_result(struct upload *u)
{
	return u->result;
}

/* The host tar an upload streams (its counts for the result). */
struct tar_out *
upload_tar(struct upload *u)
{
	return u->tar;
}

void
upload_cancel(struct upload *u)
{
	xrun_cancel(u->run);
}

void
upload_free(struct upload *u)
{
	tar_out_free(u->tar);
	snap_out_free(u->snap);
	json_object_put(u->result);
	evbuffer_free(u->stage);
	free(u->error);
	free(u->sandbox);
	free(u->dir);
	free(u);
}

/*
 * Upload a host file or tree (host: a canonical path inside the policy)
 * to dest in a sandbox (absolute, or relative to its workdir; NULL: the
 * workdir and the host name).  *where gets the full destination.  NULL
 * with err filled when it cannot start; then nothing was done.
 */
struct upload *
upload_host(struct call *c, struct sandbox *sb, const char *host,
    const char *dest, const char *const *exclude, int one_file,
    void (*done)(struct upload *, const char *, void *), void *arg,
    char **where, char *err, size_t errlen)
{
	struct tar_limits lim = {0, 1};
	struct tar_out *t;
	struct upload *u = NULL;
	char *copy, *dir, *name;

	copy = xstrdup(host);
	dir =
	    upload_path_split(sb, dest != NULL ? dest : basename(copy), &name);
	free(copy);
	if (dir == NULL) {
		snprintf(err, errlen, "the destination must end in a %s name",
		    one_file ? "file" : "directory");
		return NULL;
	}
	if (!one_file) {
		lim.max_bytes = (uint64_t)sup.conf->project_mb * 1024 * 1024;
		lim.max_files = (uint64_t)sup.conf->project_files;
	}
	if ((t = tar_out_new(
	         &sup.hosts, host, name, &lim, exclude, err, errlen)) != NULL) {
		tar_out_set_owner(t, (uint32_t)sb->uid);
		xasprintf(where, "%s%s%s", dir,
		    strcmp(dir, "/") == 0 ? "" : "/", name);
		u = upload_start(c, sb, t, dir, name, one_file, done, arg);
	}
	free(dir);
	free(name);
	return u;
}

/* A relative path of names, none of them "." or ".." or empty. */
int
upload_name_valid(const char *p)
{
	const char *s = p, *slash;
	size_t n;

	if (*p == '\0' || *p == '/' || strlen(p) > 4096)
		return 0;
	for (;;) {
		slash = strchr(s, '/');
		n = slash != NULL ? (size_t)(slash - s) : strlen(s);
		if (n == 0 || (n == 1 && s[0] == '.') ||
		    (n == 2 && s[0] == '.' && s[1] == '.'))
			return 0;
		if (slash == NULL)
			return 1;
		s = slash + 1;
	}
}

/*
 * Split a sandbox path (absolute, or relative to the workdir) into its
 * directory and a valid last name; NULL if it has none.
 */
char *
upload_path_split(const struct sandbox *sb, const char *p, char **name)
{
	char *full, *slash;

	if (p[0] == '/')
		full = xstrdup(p);
	else
		xasprintf(&full, "%s/%s", sb->workdir, p);
	while (strlen(full) > 1 && full[strlen(full) - 1] == '/')
		full[strlen(full) - 1] = '\0';
	slash = strrchr(full, '/');
	if (slash == NULL || !upload_name_valid(slash + 1)) {
		free(full);
		return NULL;
	}
	*name = xstrdup(slash + 1);
	if (slash == full)
		slash[1] = '\0';
	else
		*slash = '\0';
	return full;
}
