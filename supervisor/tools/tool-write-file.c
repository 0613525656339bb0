/*
 * write_file: a file into a sandbox.  The content travels as a tar stream
 * to `tar -x` run in the container as the sandbox user, so the kernel
 * enforces the read-only root, permissions and the workdir's size; a file
 * that did not fit is removed, never reported as written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <archive.h>
#include <archive_entry.h>
#include <event2/buffer.h>

#include "base64.h"
#include "config.h"
#include "core.h"
#include "mcp.h"
#include "proto.h"
#include "run.h"
#include "sandbox.h"
#include "tools.h"
#include "xmalloc.h"

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\"},"
    "\"file_name\":{\"type\":\"string\",\"description\":\"a name, or a "
    "relative path below dest_dir (no '..')\"},"
    "\"file_contents\":{\"type\":\"string\"},"
    "\"dest_dir\":{\"type\":\"string\",\"description\":\"directory in "
    "the sandbox (default: the workdir); made if missing\"},"
    "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"],"
    "\"default\":\"utf-8\"}},"
    "\"required\":[\"container_id\",\"file_name\",\"file_contents\"],"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"}},"
    "\"required\":[\"path\",\"bytes\"]}";

struct wfile {
	struct call *call;
	struct xrun *run;
	struct evbuffer *tar; /* the archive still to send */
	char *path;
	char *sandbox, *dir; /* where the upload's directory is */
	char tmp[UPLOAD_TMP_NAME];
	size_t bytes;
};

static la_ssize_t
tar_to_evbuffer(struct archive *a, void *arg, const void *p, size_t n)
{
	(void)a;
	evbuffer_add(arg, p, n);
	return (la_ssize_t)n;
}

/* An archive of one regular file, owned by the sandbox user. */
static struct evbuffer *
tar_one_file(const char *name, const void *data, size_t len, int mode, long uid)
{
	struct archive *a;
	struct archive_entry *e;
	struct evbuffer *b;

	b = evbuffer_new();
	a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	archive_write_set_bytes_in_last_block(a, 1);
	if (archive_write_open(a, b, NULL, tar_to_evbuffer, NULL) != ARCHIVE_OK)
		goto bad;
	e = archive_entry_new();
	archive_entry_set_pathname_utf8(e, name);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, (mode_t)mode);
	archive_entry_set_size(e, (la_int64_t)len);
	archive_entry_set_uid(e, uid);
	archive_entry_set_gid(e, uid);
	archive_entry_set_mtime(e, time(NULL), 0);
	if (archive_write_header(a, e) != ARCHIVE_OK ||
	    (len > 0 && archive_write_data(a, data, len) != (la_ssize_t)len)) {
		archive_entry_free(e);
		goto bad;
	}
	archive_entry_free(e);
	if (archive_write_close(a) != ARCHIVE_OK)
		goto bad;
	archive_write_free(a);
	return b;
bad:
	archive_write_free(a);
	evbuffer_free(b);
	return NULL;
}

static void
wfile_pump(struct xrun *run, void *arg)
{
	struct wfile *w = arg;
	size_t len;
	long credit;

	while ((len = evbuffer_get_length(w->tar)) > 0 &&
	       (credit = xrun_credit(run)) > 0) {
		if ((long)len > credit)
			len = (size_t)credit;
		if (len > PROTO_DATA_CHUNK)
			len = PROTO_DATA_CHUNK;
		xrun_write(run, evbuffer_pullup(w->tar, (ssize_t)len), len,
		    len == evbuffer_get_length(w->tar));
		evbuffer_drain(w->tar, len);
	}
}

static void
wfile_done(struct xrun *run, json_object *r, void *arg)
{
	struct wfile *w = arg;
	json_object *v, *o;
	char *text;

	(void)run;
	if (!json_object_object_get_ex(r, "exit_code", &v) ||
	    json_object_get_int(v) != 0) {
		upload_file_cleanup(w->sandbox, w->dir, w->tmp);
		mcp_call_reply(w->call,
		    tool_error("could not write %s: %s%s", w->path,
		        xrun_failure(r, "failed"),
		        json_object_object_get_ex(r, "error", NULL)
		            ? ""
		            : " (nothing was written; check that the "
		              "directory is writable, e.g. below the workdir or "
		              "/tmp, and that there is space)"));
	} else {
		o = json_object_new_object();
		json_object_object_add(
		    o, "path", json_object_new_string(w->path));
		json_object_object_add(
		    o, "bytes", json_object_new_int64((int64_t)w->bytes));
		xasprintf(&text, "Wrote %zu bytes to %s.", w->bytes, w->path);
		mcp_call_reply(w->call, tool_result(o, text, 0));
		free(text);
	}
	evbuffer_free(w->tar);
	free(w->sandbox);
	free(w->dir);
	free(w->path);
	free(w);
}

static void
write_file(struct call *c)
{
	const char *name, *dir, *enc, *args[4];
	json_object *content;
	struct xrun_opts o;
	char *line;
	struct sandbox *sb;
	struct wfile *w;
	size_t len;
	void *data;

	if (!tool_arg_type_ok(c, "file_name", json_type_string, NULL) ||
	    (name = tool_arg_string(c, "file_name")) == NULL ||
	    !upload_name_valid(name)) {
		mcp_call_reply(
		    c, tool_error("file_name must be a file name or a "
		                  "relative path without '.' or '..' parts"));
		return;
	}
	if (!tool_arg_type_ok(c, "file_contents", json_type_string, &content) ||
	    content == NULL) {
		mcp_call_reply(
		    c, tool_error("file_contents (a string) is required"));
		return;
	}
	if (!tool_arg_type_ok(c, "encoding", json_type_string, NULL) ||
	    ((enc = tool_arg_string(c, "encoding")) != NULL &&
	        strcmp(enc, "utf-8") != 0 && strcmp(enc, "base64") != 0)) {
		mcp_call_reply(
		    c, tool_error("encoding must be utf-8 or base64"));
		return;
	}
	if (!tool_arg_type_ok(c, "dest_dir", json_type_string, NULL) ||
	    ((dir = tool_arg_string(c, "dest_dir")) != NULL &&
	        (dir[0] != '/' || strlen(dir) > 4096))) {
		mcp_call_reply(
		    c, tool_error("dest_dir must be an absolute path in "
		                  "the sandbox"));
		return;
	}
	if ((sb = sandbox_lookup(c, "container_id")) == NULL)
		return;
	if (dir == NULL)
		dir = sb->workdir;
	if (enc != NULL && strcmp(enc, "base64") == 0) {
		data = base64_decode(json_object_get_string(content),
		    (size_t)json_object_get_string_len(content), &len);
		if (data == NULL) {
			mcp_call_reply(
			    c, tool_error("file_contents is not valid "
			                  "base64"));
			return;
		}
	} else {
		len = (size_t)json_object_get_string_len(content);
		data = xmalloc(len + 1);
		memcpy(data, json_object_get_string(content), len);
	}
	w = xcalloc(1, sizeof *w);
	w->call = c;
	w->bytes = len;
	xasprintf(&w->path, "%s%s%s", dir,
	    dir[strlen(dir) - 1] == '/' ? "" : "/", name);
	w->tar = tar_one_file(name, data, len, 0644, sb->uid);
	free(data);
	if (w->tar == NULL) {
		mcp_call_reply(c, tool_error("cannot pack the file"));
		free(w->path);
		free(w);
		return;
	}
	upload_tmp_name(w->tmp);
	w->sandbox = xstrdup(sb->id);
	w->dir = xstrdup(dir);
	args[0] = dir;
	args[1] = name;
	args[2] = w->tmp;
	args[3] = NULL;
	memset(&o, 0, sizeof o);
	o.command = upload_file_sh;
	o.args = args;
	xasprintf(&line, "write_file %s (%zu bytes)", w->path, w->bytes);
	o.log_as = line;
	o.timeout_ms = sup.conf->exec_timeout * 1000;
	o.stdin_stream = 1;
	o.on_credit = wfile_pump;
	w->run = xrun_start(c, sb, &o, wfile_done, w);
	free(line);
	wfile_pump(w->run, w);
}

const struct tool tool_write_file = {
    .name = "write_file",
    .title = "Write a file into a sandbox",
    .description = "Write text (or base64 binary) to a file in a sandbox, "
                   "in dest_dir (default: the workdir), making the directory "
                   "if needed. Fails cleanly, writing nothing, where the "
                   "sandbox user may not write or space runs out.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 0,
    .destructive = 1,
    .idempotent = 1,
    .open_world = 0,
    .exec = write_file,
};
