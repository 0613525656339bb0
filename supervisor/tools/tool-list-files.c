/* list_files: the entries of a directory of a sandbox, or its tree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "config.h"
#include "core.h"
#include "mcp.h"
#include "run.h"
#include "sandbox.h"
#include "sbout.h"
#include "tools.h"
#include "xmalloc.h"

#define LIST_MAX_ENTRIES 10000
#define LIST_MAX_BYTES (4 * 1024 * 1024)

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\"},"
    "\"path\":{\"type\":\"string\",\"description\":\"directory (default: "
    "the workdir)\"},"
    "\"recursive\":{\"type\":\"boolean\",\"default\":false}},"
    "\"required\":[\"container_id\"],\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\"},"
    "\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"properties\":{\"name\":{\"type\":\"string\"},"
    "\"type\":{\"type\":\"string\",\"enum\":[\"file\",\"directory\","
    "\"symlink\",\"other\"]},"
    "\"size\":{\"type\":\"integer\"},\"mode\":{\"type\":\"string\"},"
    "\"mtime\":{\"type\":\"number\"}},"
    "\"required\":[\"name\",\"type\",\"size\",\"mode\",\"mtime\"]}},"
    "\"truncated\":{\"type\":\"boolean\"}},"
    "\"required\":[\"path\",\"entries\",\"truncated\"]}";

/* The listing: engine/scripts/list-files.sh, embedded. */
extern const char list_files_sh[];

struct lfiles {
	struct call *call;
	struct evbuffer *buf;
	char *path;
	char nonce[SBOUT_NONCE_LEN + 1];
	int over;
};

static int
lfiles_sink(struct xrun *run, const char *p, size_t len, void *arg)
{
	struct lfiles *l = arg;

	(void)run;
	if (evbuffer_get_length(l->buf) + len > LIST_MAX_BYTES)
		l->over = 1;
	else
		evbuffer_add(l->buf, p, len);
	return 0;
}

static void
lfiles_done(struct xrun *run, json_object *res, void *arg)
{
	struct lfiles *l = arg;
	struct evbuffer *t;
	json_object *v, *o, *list, *e;
	char err[256];
	size_t i, n;
	int cut;

	(void)run;
	if (!json_object_object_get_ex(res, "exit_code", &v) ||
	    json_object_get_int(v) != 0) {
		mcp_call_reply(
		    l->call, tool_error("cannot list %s: %s", l->path,
		                 xrun_failure(res, "failed")));
		goto out;
	}
	if ((list = sbout_listing((const char *)evbuffer_pullup(l->buf, -1),
	         evbuffer_get_length(l->buf), l->nonce, l->over,
	         LIST_MAX_ENTRIES, &cut, err, sizeof err)) == NULL) {
		mcp_call_reply(
		    l->call, tool_error("cannot list %s: %s", l->path, err));
		goto out;
	}
	t = evbuffer_new();
	evbuffer_add_printf(t, "%s:\n", l->path);
	n = json_object_array_length(list);
	for (i = 0; i < n; i++) {
		e = json_object_array_get_idx(list, i);
		json_object_object_get_ex(e, "type", &v);
		evbuffer_add_printf(t, "%-9s ", json_object_get_string(v));
		json_object_object_get_ex(e, "size", &v);
		evbuffer_add_printf(
		    t, "%10lld ", (long long)json_object_get_int64(v));
		json_object_object_get_ex(e, "mode", &v);
		evbuffer_add_printf(t, "%4s ", json_object_get_string(v));
		json_object_object_get_ex(e, "name", &v);
		evbuffer_add_printf(t, "%s\n", json_object_get_string(v));
	}
	o = json_object_new_object();
	json_object_object_add(o, "path", json_object_new_string(l->path));
	json_object_object_add(o, "entries", list);
	json_object_object_add(o, "truncated", json_object_new_boolean(cut));
	if (cut)
		evbuffer_add_printf(t, "(list cut at %zu entries)\n", n);
	evbuffer_add(t, "", 1);
	mcp_call_reply(
	    l->call, tool_result(o, (char *)evbuffer_pullup(t, -1), 0));
	evbuffer_free(t);
out:
	evbuffer_free(l->buf);
	free(l->path);
	free(l);
}

static void
list_files(struct call *c)
{
	const char *path, *args[4];
	json_object *rec;
	struct xrun_opts o;
	char *line;
	struct sandbox *sb;
	struct lfiles *l;

	if (!tool_arg_type_ok(c, "path", json_type_string, NULL) ||
	    !tool_arg_type_ok(c, "recursive", json_type_boolean, &rec)) {
		mcp_call_reply(
		    c, tool_error("path must be a string and recursive "
		                  "a boolean"));
		return;
	}
	if ((sb = sandbox_lookup(c, "container_id")) == NULL)
		return;
	l = xcalloc(1, sizeof *l);
	l->call = c;
	l->buf = evbuffer_new();
	path = tool_arg_string(c, "path");
	if (path == NULL || *path == '\0')
		l->path = xstrdup(sb->workdir);
	else if (path[0] == '/')
		l->path = xstrdup(path);
	else
		xasprintf(&l->path, "%s/%s", sb->workdir, path);
	args[0] = l->path;
	args[1] = rec != NULL && json_object_get_boolean(rec) ? "1" : "0";
	sbout_nonce(l->nonce, sizeof l->nonce);
	args[2] = l->nonce;
	args[3] = NULL;
	memset(&o, 0, sizeof o);
	o.command = list_files_sh;
	o.args = args;
	xasprintf(&line, "list_files %s%s", l->path,
	    args[1][0] == '1' ? " (recursive)" : "");
	o.log_as = line;
	o.timeout_ms = sup.conf->exec_timeout * 1000;
	o.stdout_sink = lfiles_sink;
	xrun_start(c, sb, &o, lfiles_done, l);
	free(line);
}

const struct tool tool_list_files = {
    .name = "list_files",
    .title = "List files in a sandbox",
    .description = "List a directory of a sandbox (default: the workdir), "
                   "or its whole tree with recursive: name (relative), type, "
                   "size, mode and modification time of each entry.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 1,
    .destructive = 0,
    .idempotent = 1,
    .open_world = 0,
    .exec = list_files,
};
