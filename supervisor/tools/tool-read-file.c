/*
 * read_file: a file of a sandbox, or a slice of it (offset, length), as
 * text or base64.  Read by the sandbox user inside the container.  A
 * picture (PNG, JPEG, GIF or WebP by its first bytes, whatever its name)
 * read whole is also given as an image block, within --max-image-kb.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "base64.h"
#include "config.h"
#include "core.h"
#include "imgsig.h"
#include "mcp.h"
#include "run.h"
#include "sandbox.h"
#include "sbout.h"
#include "tools.h"
#include "utf8.h"
#include "xmalloc.h"

#define READ_MAX (4 * 1024 * 1024)

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\"},"
    "\"file_path\":{\"type\":\"string\",\"description\":\"absolute, or "
    "relative to the workdir\"},"
    "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"default\":0},"
    "\"length\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":4194304,"
    "\"description\":\"bytes to read (default and most: 4 MiB)\"},"
    "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"],"
    "\"default\":\"utf-8\"}},"
    "\"required\":[\"container_id\",\"file_path\"],"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"},"
    "\"encoding\":{\"type\":\"string\"},"
    "\"offset\":{\"type\":\"integer\"},\"bytes\":{\"type\":\"integer\"},"
    "\"size\":{\"type\":\"integer\"},\"truncated\":{\"type\":\"boolean\"},"
    "\"image\":{\"type\":\"object\",\"description\":\"the file is a "
    "picture (by its first bytes): its type and size, and whether it is "
    "in the content as an image (it is when read whole and within the "
    "server's image cap)\",\"properties\":{"
    "\"mime_type\":{\"type\":\"string\"},"
    "\"width\":{\"type\":\"integer\"},"
    "\"height\":{\"type\":\"integer\"},"
    "\"bytes\":{\"type\":\"integer\"},"
    "\"shown\":{\"type\":\"boolean\"},"
    "\"note\":{\"type\":\"string\"}}}},"
    "\"required\":[\"path\",\"content\",\"size\",\"truncated\"]}";

/* The reading: engine/scripts/read-file.sh, embedded. */
extern const char read_file_sh[];

struct rfile {
	struct call *call;
	struct evbuffer *buf;
	char *path;
	long long offset, length;
	char nonce[SBOUT_NONCE_LEN + 1];
	int base64, over;
};

static int
rfile_sink(struct xrun *run, const char *p, size_t len, void *arg)
{
	struct rfile *r = arg;

	(void)run;
	/* The reader stops at length; room for the size lines. */
	if (evbuffer_get_length(r->buf) + len <= (size_t)r->length + 128)
		evbuffer_add(r->buf, p, len);
	else
		r->over = 1;
	return 0;
}

/*
 * A picture read from its start: its facts in o's "image", and the image
 * block when it was read whole and fits the cap (else NULL, and why in
 * the facts' note, which *note borrows).
 */
static json_object *
rfile_image(json_object *o, const struct imgsig *sig, const char *data,
    size_t len, long long size, const char **note)
{
	long long cap = sup.conf->max_image_kb * 1024;
	json_object *im, *b;
	char *enc;
	size_t n;

	im = json_object_new_object();
	json_object_object_add(
	    im, "mime_type", json_object_new_string(sig->mime));
	json_object_object_add(im, "width", json_object_new_int64(sig->width));
	json_object_object_add(
	    im, "height", json_object_new_int64(sig->height));
	json_object_object_add(im, "bytes", json_object_new_int64(size));
	*note = NULL;
	if (size > cap)
		*note = "not shown as an image: larger than the server's image "
		        "cap (--max-image-kb)";
	else if ((long long)len < size)
		*note = "not shown as an image: only part of it was read";
	json_object_object_add(
	    im, "shown", json_object_new_boolean(*note == NULL));
	if (*note != NULL)
		json_object_object_add(
		    im, "note", json_object_new_string(*note));
	json_object_object_add(o, "image", im);
	if (*note != NULL)
		return NULL;
	b = json_object_new_object();
	json_object_object_add(b, "type", json_object_new_string("image"));
	enc = base64_encode(data, len, &n);
	json_object_object_add(
	    b, "data", json_object_new_string_len(enc, (int)n));
	free(enc);
	json_object_object_add(
	    b, "mimeType", json_object_new_string(sig->mime));
	return b;
}

static void
rfile_done(struct xrun *run, json_object *res, void *arg)
{
	struct rfile *r = arg;
	struct sbout_read rd;
	struct imgsig sig;
	json_object *v, *o, *img = NULL, *tr, *items;
	long long size;
	size_t len, n;
	const char *all, *data, *note = NULL;
	char err[256], *text, *t2;
	int picture;

	(void)run;
	if (!json_object_object_get_ex(res, "exit_code", &v) ||
	    json_object_get_int(v) != 0) {
		mcp_call_reply(
		    r->call, tool_error("cannot read %s: %s", r->path,
		                 xrun_failure(res, "failed")));
		goto out;
	}
	if (r->over) {
		mcp_call_reply(r->call,
		    tool_error("cannot read %s: the reader wrote more than "
		               "asked for (something in the sandbox wrote into "
		               "its output); nothing read",
		        r->path));
		goto out;
	}
	all = (const char *)evbuffer_pullup(r->buf, -1);
	if (sbout_read(all, evbuffer_get_length(r->buf), r->nonce, r->offset,
	        r->length, &rd, err, sizeof err) == -1) {
		mcp_call_reply(
		    r->call, tool_error("cannot read %s: %s", r->path, err));
		goto out;
	}
	size = rd.size;
	data = all + rd.data_off;
	len = rd.data_len;
	picture = r->offset == 0 && imgsig_probe(data, len, &sig) == 0;
	if (!r->base64 && !utf8_valid(data, len) && picture)
		r->base64 = 1; /* a picture's bytes are not text: base64 */
	if (!r->base64 && !utf8_valid(data, len)) {
		mcp_call_reply(
		    r->call, tool_error("%s is not UTF-8 text; read it "
		                        "with encoding \"base64\"",
		                 r->path));
		goto out;
	}
	o = json_object_new_object();
	json_object_object_add(o, "path", json_object_new_string(r->path));
	if (r->base64) {
		text = base64_encode(data, len, &n);
		json_object_object_add(
		    o, "content", json_object_new_string_len(text, (int)n));
		free(text);
	} else
		json_object_object_add(
		    o, "content", json_object_new_string_len(data, (int)len));
	json_object_object_add(o, "encoding",
	    json_object_new_string(r->base64 ? "base64" : "utf-8"));
	json_object_object_add(o, "offset", json_object_new_int64(r->offset));
	json_object_object_add(o, "bytes", json_object_new_int64((int64_t)len));
	json_object_object_add(o, "size", json_object_new_int64(size));
	json_object_object_add(o, "truncated",
	    json_object_new_boolean(r->offset + (long long)len < size));
	if (picture)
		img = rfile_image(o, &sig, data, len, size, &note);
	if (r->base64)
		xasprintf(&text,
		    "%s: %zu bytes (base64) of %lld from offset "
		    "%lld.",
		    r->path, len, size, r->offset);
	else
		xasprintf(&text,
		    "%s (%zu of %lld bytes from offset %lld):\n%.*s", r->path,
		    len, size, r->offset, (int)len, data);
	if (picture) {
		xasprintf(&t2, "%s\n%s, %ux%u%s%s", text, sig.mime, sig.width,
		    sig.height, note != NULL ? ": " : "",
		    note != NULL ? note : "");
		free(text);
		text = t2;
	}
	tr = tool_result(o, text, 0);
	if (img != NULL) {
		items = json_object_new_array();
		json_object_array_add(items, img);
		tool_result_add_content(tr, items);
		json_object_put(items);
	}
	mcp_call_reply(r->call, tr);
	free(text);
out:
	evbuffer_free(r->buf);
	free(r->path);
	free(r);
}

static void
read_file(struct call *c)
{
	const char *path, *enc, *args[5];
	json_object *v;
	struct xrun_opts o;
	char *line;
	struct sandbox *sb;
	struct rfile *r;
	char off[32], len[32];

	if (!tool_arg_type_ok(c, "file_path", json_type_string, NULL) ||
	    (path = tool_arg_string(c, "file_path")) == NULL || *path == '\0' ||
	    strlen(path) > 4096) {
		mcp_call_reply(
		    c, tool_error("file_path (a path in the sandbox) is "
		                  "required"));
		return;
	}
	if (!tool_arg_type_ok(c, "encoding", json_type_string, NULL) ||
	    ((enc = tool_arg_string(c, "encoding")) != NULL &&
	        strcmp(enc, "utf-8") != 0 && strcmp(enc, "base64") != 0)) {
		mcp_call_reply(
		    c, tool_error("encoding must be utf-8 or base64"));
		return;
	}
	r = xcalloc(1, sizeof *r);
	r->length = READ_MAX;
	if (!tool_arg_type_ok(c, "offset", json_type_int, &v) ||
	    (v != NULL && (r->offset = json_object_get_int64(v)) < 0) ||
	    !tool_arg_type_ok(c, "length", json_type_int, &v) ||
	    (v != NULL && ((r->length = json_object_get_int64(v)) < 0 ||
	                      r->length > READ_MAX))) {
		free(r);
		mcp_call_reply(
		    c, tool_error("offset must be a non-negative integer "
		                  "and length one from 0 to %d",
		           READ_MAX));
		return;
	}
	if ((sb = sandbox_lookup(c, "container_id")) == NULL) {
		free(r);
		return;
	}
	r->call = c;
	r->base64 = enc != NULL && strcmp(enc, "base64") == 0;
	r->buf = evbuffer_new();
	if (path[0] == '/')
		r->path = xstrdup(path);
	else
		xasprintf(&r->path, "%s/%s", sb->workdir, path);
	snprintf(off, sizeof off, "%lld", r->offset);
	snprintf(len, sizeof len, "%lld", r->length);
	args[0] = r->path;
	args[1] = off;
	args[2] = len;
	sbout_nonce(r->nonce, sizeof r->nonce);
	args[3] = r->nonce;
	args[4] = NULL;
	memset(&o, 0, sizeof o);
	o.command = read_file_sh;
	o.args = args;
	xasprintf(&line, "read_file %s", r->path);
	o.log_as = line;
	o.timeout_ms = sup.conf->exec_timeout * 1000;
	o.stdout_sink = rfile_sink;
	xrun_start(c, sb, &o, rfile_done, r);
	free(line);
}

const struct tool tool_read_file = {
    .name = "read_file",
    .title = "Read a file from a sandbox",
    .description = "Read a file of a sandbox (or length bytes from "
                   "offset) as text, or as base64 for binary content. "
                   "Reports the file's size and whether the content was cut.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 1,
    .destructive = 0,
    .idempotent = 1,
    .open_world = 0,
    .exec = read_file,
};
