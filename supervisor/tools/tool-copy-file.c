/* copy_file: one host file into a sandbox, streamed through tar. */
#include <sys/stat.h>

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    "\"local_src_file\":{\"type\":\"string\",\"description\":\"a file on "
    "the host, inside a directory the operator allowed\"},"
    "\"dest_path\":{\"type\":\"string\",\"description\":\"where in the "
    "sandbox (default: the workdir and the file's name)\"}},"
    "\"required\":[\"container_id\",\"local_src_file\"],"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"}},"
    "\"required\":[\"path\",\"bytes\"]}";

struct cfile {
	struct call *call;
	char *path;
};

static void
cfile_done(struct upload *u, const char *err, void *arg)
{
	struct cfile *f = arg;
	json_object *o;
	char *text;
	uint64_t bytes = tar_out_bytes(upload_tar(u));

	if (err != NULL)
		mcp_call_reply(
		    f->call, tool_error("copy to %s failed: %s", f->path, err));
	else {
		o = json_object_new_object();
		json_object_object_add(
		    o, "path", json_object_new_string(f->path));
		json_object_object_add(
		    o, "bytes", json_object_new_int64((int64_t)bytes));
		xasprintf(&text, "Copied %llu bytes to %s.",
		    (unsigned long long)bytes, f->path);
		mcp_call_reply(f->call, tool_result(o, text, 0));
		free(text);
	}
	upload_free(u);
	free(f->path);
	free(f);
}

static void
copy_file(struct call *c)
{
	const char *src;
	char err[512], *path;
	struct sandbox *sb;
	struct cfile *f;
	struct stat st;

	if (!tool_arg_type_ok(c, "local_src_file", json_type_string, NULL) ||
	    (src = tool_arg_string(c, "local_src_file")) == NULL ||
	    *src == '\0' ||
	    !tool_arg_type_ok(c, "dest_path", json_type_string, NULL)) {
		mcp_call_reply(
		    c, tool_error("local_src_file (a host path) is "
		                  "required; dest_path must be a string"));
		return;
	}
	if ((path = hostpath_resolve(&sup.hosts, src, HOSTPATH_EXISTING, err,
	         sizeof err)) == NULL) {
		mcp_call_reply(c, tool_error("%s", err));
		return;
	}
	if (stat(path, &st) == -1 || !S_ISREG(st.st_mode)) {
		mcp_call_reply(c, tool_error("%s is not a regular file (copy "
		                             "directories with copy_project)",
		                      src));
		free(path);
		return;
	}
	if ((sb = sandbox_lookup(c, "container_id")) == NULL) {
		free(path);
		return;
	}
	f = xcalloc(1, sizeof *f);
	f->call = c;
	if (upload_host(c, sb, path, tool_arg_string(c, "dest_path"), NULL, 1,
	        cfile_done, f, &f->path, err, sizeof err) == NULL) {
		mcp_call_reply(c, tool_error("%s", err));
		free(f);
	}
	free(path);
}

const struct tool tool_copy_file = {
    .name = "copy_file",
    .title = "Copy a host file into a sandbox",
    .description = "Copy one file from the host (inside a directory the "
                   "operator allowed) into a sandbox, streamed, any size "
                   "up to the sandbox's space.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 0,
    .destructive = 1,
    .idempotent = 1,
    .open_world = 0,
    .task_support = 1,
    .exec = copy_file,
};
