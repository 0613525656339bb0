/* copy_project: a host directory tree into a sandbox, streamed. */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "core.h"
#include "hosttar.h"
#include "mcp.h"
#include "run.h"
#include "sandbox.h"
#include "tools.h"
#include "xmalloc.h"

#define PROJECT_MAX_EXCLUDES 64

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\"},"
    "\"local_src_dir\":{\"type\":\"string\",\"description\":\"a host "
    "directory inside one the operator allowed\"},"
    "\"dest_dir\":{\"type\":\"string\",\"description\":\"where in the "
    "sandbox (default: the workdir and the directory's name)\"},"
    "\"exclude\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
    "\"description\":\"names to leave out anywhere in the tree, e.g. "
    "[\\\".git\\\", \\\"node_modules\\\"]\"}},"
    "\"required\":[\"container_id\",\"local_src_dir\"],"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"dest_dir\":{\"type\":\"string\"},\"files\":{\"type\":\"integer\"},"
    "\"bytes\":{\"type\":\"integer\"},"
    "\"skipped\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},"
    "\"skipped_count\":{\"type\":\"integer\"}},"
    "\"required\":[\"dest_dir\",\"files\",\"bytes\",\"skipped\"]}";

struct cproj {
	struct call *call;
	char *dest;
};

static void
cproj_done(struct upload *u, const char *err, void *arg)
{
	struct cproj *p = arg;
	struct tar_out *t = upload_tar(u);
	json_object *o;
	char *text;

	if (err != NULL)
		mcp_call_reply(
		    p->call, tool_error("copy to %s failed: %s", p->dest, err));
	else {
		o = json_object_new_object();
		json_object_object_add(
		    o, "dest_dir", json_object_new_string(p->dest));
		json_object_object_add(o, "files",
		    json_object_new_int64((int64_t)tar_out_files(t)));
		json_object_object_add(o, "bytes",
		    json_object_new_int64((int64_t)tar_out_bytes(t)));
		json_object_object_add(
		    o, "skipped", json_object_get(tar_out_skipped(t)));
		json_object_object_add(o, "skipped_count",
		    json_object_new_int64((int64_t)tar_out_nskipped(t)));
		xasprintf(&text,
		    "Copied %llu entries (%llu bytes) to %s; skipped %llu "
		    "(symlinks, special files, excluded: see skipped).",
		    (unsigned long long)tar_out_files(t),
		    (unsigned long long)tar_out_bytes(t), p->dest,
		    (unsigned long long)tar_out_nskipped(t));
		mcp_call_reply(p->call, tool_result(o, text, 0));
		free(text);
	}
	upload_free(u);
	free(p->dest);
	free(p);
}

static void
copy_project(struct call *c)
{
	const char *src, *excl[PROJECT_MAX_EXCLUDES + 1];
	char err[512], *path;
	json_object *ex, *v;
	struct sandbox *sb;
	struct cproj *p;
	size_t i, n = 0;

	if (!tool_arg_type_ok(c, "local_src_dir", json_type_string, NULL) ||
	    (src = tool_arg_string(c, "local_src_dir")) == NULL ||
	    *src == '\0' ||
	    !tool_arg_type_ok(c, "dest_dir", json_type_string, NULL) ||
	    !tool_arg_type_ok(c, "exclude", json_type_array, &ex)) {
		mcp_call_reply(c,
		    tool_error(
		        "local_src_dir (a host directory) is "
		        "required; dest_dir is a string and exclude an array of "
		        "names"));
		return;
	}
	for (i = 0; ex != NULL && i < json_object_array_length(ex); i++) {
		v = json_object_array_get_idx(ex, i);
		if (!json_object_is_type(v, json_type_string) ||
		    strchr(json_object_get_string(v), '/') != NULL ||
		    n == PROJECT_MAX_EXCLUDES) {
			mcp_call_reply(
			    c, tool_error("exclude holds up to %d names "
			                  "(no '/')",
			           PROJECT_MAX_EXCLUDES));
			return;
		}
		excl[n++] = json_object_get_string(v);
	}
	excl[n] = NULL;
	if ((path = hostpath_resolve(&sup.hosts, src, HOSTPATH_EXISTING, err,
	         sizeof err)) == NULL) {
		mcp_call_reply(c, tool_error("%s", err));
		return;
	}
	if ((sb = sandbox_lookup(c, "container_id")) == NULL) {
		free(path);
		return;
	}
	p = xcalloc(1, sizeof *p);
	p->call = c;
	if (upload_host(c, sb, path, tool_arg_string(c, "dest_dir"), excl, 0,
	        cproj_done, p, &p->dest, err, sizeof err) == NULL) {
		mcp_call_reply(c, tool_error("%s", err));
		free(p);
	}
	free(path);
}

const struct tool tool_copy_project = {
    .name = "copy_project",
    .title = "Copy a host directory into a sandbox",
    .description = "Copy a directory tree from the host (inside a "
                   "directory the operator allowed) into a sandbox, "
                   "streamed. Regular files and directories only: symlinks, "
                   "devices, FIFOs and sockets are skipped and listed; "
                   "exclude leaves out names such as .git.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 0,
    .destructive = 1,
    .idempotent = 1,
    .open_world = 0,
    .task_support = 1,
    .exec = copy_project,
};
