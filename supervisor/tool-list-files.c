/* list_files: the entries of a directory of a sandbox, or its tree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "config.h"
#include "supervisor.h"
#include "utf8.h"
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

/* $1 directory, $2 "1" for the whole tree.  NUL-separated records. */
static const char lister[] =
    "if [ ! -d \"$1\" ]; then if [ -e \"$1\" ]; then echo \"$1 is not a "
    "directory\" >&2; else echo \"no such directory: $1\" >&2; fi; exit 3;"
    " fi; if [ \"$2\" = 1 ]; then d=; else d='-maxdepth 1'; fi;"
    "find \"$1\" -mindepth 1 $d -printf '%y %s %m %T@ %P\\0'";

struct lfiles {
	struct call *call;
	struct evbuffer *buf;
	char *path;
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

static const char *
type_name(char t)
{
	switch (t) {
	case 'f':
		return "file";
	case 'd':
		return "directory";
	case 'l':
		return "symlink";
	}
	return "other";
}

static void
lfiles_done(struct xrun *run, json_object *res, void *arg)
{
	struct lfiles *l = arg;
	struct evbuffer *t;
	json_object *v, *o, *list, *e;
	char type, mode[16], *rec, *name, *clean;
	long long size;
	double mtime;
	size_t len, n, clen, count = 0;
	int used;

	(void)run;
	if (!json_object_object_get_ex(res, "exit_code", &v) ||
	    json_object_get_int(v) != 0) {
		call_reply(l->call, tool_error("cannot list %s: %s", l->path,
		                        xrun_failure(res, "failed")));
		goto out;
	}
	len = evbuffer_get_length(l->buf);
	evbuffer_add(l->buf, "", 1);
	rec = (char *)evbuffer_pullup(l->buf, -1);
	list = json_object_new_array();
	t = evbuffer_new();
	evbuffer_add_printf(t, "%s:\n", l->path);
	while (len > 0 && count < LIST_MAX_ENTRIES) {
		n = strnlen(rec, len);
		if (sscanf(rec, "%c %lld %15s %lf %n", &type, &size, mode,
		        &mtime, &used) == 4) {
			name = rec + used;
			clean = utf8_sanitize(name, strlen(name), &clen);
			e = json_object_new_object();
			json_object_object_add(e, "name",
			    json_object_new_string_len(clean, (int)clen));
			json_object_object_add(
			    e, "type", json_object_new_string(type_name(type)));
			json_object_object_add(
			    e, "size", json_object_new_int64(size));
			json_object_object_add(
			    e, "mode", json_object_new_string(mode));
			json_object_object_add(
			    e, "mtime", json_object_new_double(mtime));
			json_object_array_add(list, e);
			evbuffer_add_printf(t, "%-9s %10lld %4s %s\n",
			    type_name(type), size, mode, clean);
			free(clean);
			count++;
		}
		rec += n + 1;
		len -= n < len ? n + 1 : len;
	}
	if (len > 0)
		l->over = 1;
	o = json_object_new_object();
	json_object_object_add(o, "path", json_object_new_string(l->path));
	json_object_object_add(o, "entries", list);
	json_object_object_add(
	    o, "truncated", json_object_new_boolean(l->over));
	if (l->over)
		evbuffer_add_printf(t, "(list cut at %zu entries)\n", count);
	evbuffer_add(t, "", 1);
	call_reply(l->call, tool_result(o, (char *)evbuffer_pullup(t, -1), 0));
	evbuffer_free(t);
out:
	evbuffer_free(l->buf);
	free(l->path);
	free(l);
}

static void
list_files(struct call *c)
{
	const char *path, *args[3];
	json_object *rec;
	struct xrun_opts o;
	char *line;
	struct sandbox *sb;
	struct lfiles *l;

	if (!tool_args_known(c, "container_id", "path", "recursive", NULL))
		return;
	if (!arg_type_ok(c, "path", json_type_string, NULL) ||
	    !arg_type_ok(c, "recursive", json_type_boolean, &rec)) {
		call_reply(c, tool_error("path must be a string and recursive "
		                         "a boolean"));
		return;
	}
	if ((sb = sandbox_lookup(c, "container_id")) == NULL)
		return;
	l = xcalloc(1, sizeof *l);
	l->call = c;
	l->buf = evbuffer_new();
	path = arg_string(c, "path");
	if (path == NULL || *path == '\0')
		l->path = xstrdup(sb->workdir);
	else if (path[0] == '/')
		l->path = xstrdup(path);
	else
		xasprintf(&l->path, "%s/%s", sb->workdir, path);
	args[0] = l->path;
	args[1] = rec != NULL && json_object_get_boolean(rec) ? "1" : "0";
	args[2] = NULL;
	memset(&o, 0, sizeof o);
	o.command = lister;
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
