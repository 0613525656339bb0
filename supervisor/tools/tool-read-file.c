/*
 * read_file: a file of a sandbox, or a slice of it (offset, length), as
 * text or base64.  Read by the sandbox user inside the container.  A
 * picture (PNG, JPEG, GIF or WebP by its first bytes, whatever its name)
 * read whole is also given as an image block, within --max-image-kb;
 * a larger one as a link to its resource (sandbox://{id}/files/{path}).
 * The reading itself is the run layer's (fileread.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "config.h"
#include "core.h"
#include "imgsig.h"
#include "mcp.h"
#include "run.h"
#include "sandbox.h"
#include "tools.h"
#include "utf8.h"
#include "xmalloc.h"

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

struct rfile {
	struct call *call;
	char *sandbox_id; /* the sandbox's full id, for the file's URI */
	int base64;
};

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
	else if ((long long)sig->width * sig->height >
	         sup.conf->max_image_pixels) {
		*note = "not shown as an image: more pixels than the server's "
		        "image cap (--max-image-pixels)";
		stats.pictures_over_pixels++;
	} else if ((long long)len < size)
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
rfile_done(const struct fileread *f, void *arg)
{
	struct rfile *r = arg;
	struct imgsig sig;
	json_object *o, *img = NULL, *tr, *items, *link;
	size_t len, n;
	const char *data, *note = NULL;
	char *text, *t2, *uri = NULL;
	int picture;

	if (f->error != NULL) {
		mcp_call_reply(r->call,
		    tool_error("cannot read %s: %s", f->path, f->error));
		goto out;
	}
	data = f->data;
	len = f->len;
	picture = f->offset == 0 && imgsig_probe(data, len, &sig) == 0;
	if (!r->base64 && !utf8_valid(data, len) && picture)
		r->base64 = 1; /* a picture's bytes are not text: base64 */
	if (!r->base64 && !utf8_valid(data, len)) {
		mcp_call_reply(
		    r->call, tool_error("%s is not UTF-8 text; read it "
		                        "with encoding \"base64\"",
		                 f->path));
		goto out;
	}
	o = json_object_new_object();
	json_object_object_add(o, "path", json_object_new_string(f->path));
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
	json_object_object_add(o, "offset", json_object_new_int64(f->offset));
	json_object_object_add(o, "bytes", json_object_new_int64((int64_t)len));
	json_object_object_add(o, "size", json_object_new_int64(f->size));
	json_object_object_add(o, "truncated",
	    json_object_new_boolean(f->offset + (long long)len < f->size));
	if (picture) {
		img = rfile_image(o, &sig, data, len, f->size, &note);
		if (img == NULL)
			uri = fileread_uri(r->sandbox_id, f->path);
	}
	if (r->base64)
		xasprintf(&text,
		    "%s: %zu bytes (base64) of %lld from offset "
		    "%lld.",
		    f->path, len, f->size, f->offset);
	else
		xasprintf(&text,
		    "%s (%zu of %lld bytes from offset %lld):\n%.*s", f->path,
		    len, f->size, f->offset, (int)len, data);
	if (picture) {
		xasprintf(&t2, "%s\n%s, %ux%u%s%s%s%s", text, sig.mime,
		    sig.width, sig.height, note != NULL ? ": " : "",
		    note != NULL ? note : "",
		    uri != NULL ? "; the whole picture is the resource " : "",
		    uri != NULL ? uri : "");
		free(text);
		text = t2;
	}
	tr = tool_result(o, text, 0);
	items = json_object_new_array();
	if (img != NULL)
		json_object_array_add(items, img);
	if (uri != NULL) {
		link = tool_resource_link(uri, f->path, sig.mime, f->size);
		json_object_array_add(items, link);
		json_object_object_add(json_object_object_get(o, "image"),
		    "uri", json_object_new_string(uri));
	}
	tool_result_add_content(tr, items);
	json_object_put(items);
	mcp_call_reply(r->call, tr);
	free(text);
	free(uri);
out:
	free(r->sandbox_id);
	free(r);
}

static void
read_file(struct call *c)
{
	const char *path, *enc;
	json_object *v;
	struct sandbox *sb;
	struct rfile *r;
	long long offset = 0, length = FILEREAD_MAX;

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
	if (!tool_arg_type_ok(c, "offset", json_type_int, &v) ||
	    (v != NULL && (offset = json_object_get_int64(v)) < 0) ||
	    !tool_arg_type_ok(c, "length", json_type_int, &v) ||
	    (v != NULL && ((length = json_object_get_int64(v)) < 0 ||
	                      length > FILEREAD_MAX))) {
		mcp_call_reply(
		    c, tool_error("offset must be a non-negative integer "
		                  "and length one from 0 to %d",
		           FILEREAD_MAX));
		return;
	}
	if ((sb = sandbox_lookup(c, "container_id")) == NULL)
		return;
	r = xcalloc(1, sizeof *r);
	r->call = c;
	r->sandbox_id = xstrdup(sb->id);
	r->base64 = enc != NULL && strcmp(enc, "base64") == 0;
	fileread_start(c, sb, path, offset, length, rfile_done, r);
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
