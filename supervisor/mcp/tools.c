/* The tool table, tools/list, and what every tool result looks like. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "config.h"
#include "core.h"
#include "log.h"
#include "mcp.h"
#include "utf8.h"
#include "xmalloc.h"

/*
 * The tools, in tools/list's order: the server's (tools/table.c), then
 * those of a module that is not part of the server proper (the
 * conformance fixtures, -Dfixtures=true).
 */
#define TOOLS_MAX 64
static const struct tool *tools[TOOLS_MAX];
static size_t ntools;

/* Add a tool (not copied; it must outlive the server); -1 when full. */
int
tools_register(const struct tool *t)
{
	if (ntools == TOOLS_MAX || tool_find(t->name) != NULL) {
		errno = ntools == TOOLS_MAX ? ENOSPC : EEXIST;
		return -1;
	}
	tools[ntools++] = t;
	return 0;
}

/* The i-th tool of tools/list; NULL past the last. */
const struct tool *
tool_nth(size_t i)
{
	return i < ntools ? tools[i] : NULL;
}

const struct tool *
tool_find(const char *name)
{
	const struct tool *t;
	size_t i;

	for (i = 0; (t = tool_nth(i)) != NULL; i++)
		if (strcmp(t->name, name) == 0)
			return t;
	return NULL;
}

static json_object *
tool_describe(const struct tool *t)
{
	json_object *o, *a;

	o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(t->name));
	json_object_object_add(o, "title", json_object_new_string(t->title));
	json_object_object_add(
	    o, "description", json_object_new_string(t->description));
	json_object_object_add(
	    o, "inputSchema", json_tokener_parse(t->input_schema));
	if (t->output_schema != NULL) /* every tool of the server has one */
		json_object_object_add(
		    o, "outputSchema", json_tokener_parse(t->output_schema));
	a = json_object_new_object();
	json_object_object_add(a, "title", json_object_new_string(t->title));
	json_object_object_add(
	    a, "readOnlyHint", json_object_new_boolean(t->read_only));
	json_object_object_add(
	    a, "destructiveHint", json_object_new_boolean(t->destructive));
	json_object_object_add(
	    a, "idempotentHint", json_object_new_boolean(t->idempotent));
	json_object_object_add(
	    a, "openWorldHint", json_object_new_boolean(t->open_world));
	json_object_object_add(o, "annotations", a);
	if (t->task_support) { /* forbidden, when absent */
		a = json_object_new_object();
		json_object_object_add(
		    a, "taskSupport", json_object_new_string("optional"));
		json_object_object_add(o, "execution", a);
	}
	return o;
}

/*
 * One page of tools/list.  The cursor is the decimal index of the first
 * tool of the page; NULL with *code set for a cursor we did not give.
 */
json_object *
tools_list(const char *cursor, int page, int *code)
{
	json_object *r, *list;
	size_t n, start = 0, i;
	char *end, next[32];
	long l;

	for (n = 0; tool_nth(n) != NULL; n++)
		;
	if (cursor != NULL) {
		l = strtol(cursor, &end, 10);
		if (*cursor == '\0' || *end != '\0' || l <= 0 ||
		    (size_t)l >= n) {
			*code = RPC_INVALID_PARAMS;
			return NULL;
		}
		start = (size_t)l;
	}
	r = json_object_new_object();
	list = json_object_new_array();
	for (i = start; i < n && i < start + (size_t)page; i++)
		json_object_array_add(list, tool_describe(tool_nth(i)));
	json_object_object_add(r, "tools", list);
	if (i < n) {
		snprintf(next, sizeof next, "%zu", i);
		json_object_object_add(
		    r, "nextCursor", json_object_new_string(next));
	}
	return r;
}

/*
 * A tool result: structured content (owned) and a text rendering of it
 * for clients that read only text.
 */
json_object *
tool_result(json_object *structured, const char *text, int is_error)
{
	json_object *r, *content, *t;
	const char *s;
	size_t len;
	char *clean;

	r = json_object_new_object();
	content = json_object_new_array();
	t = json_object_new_object();
	json_object_object_add(t, "type", json_object_new_string("text"));
	s = text != NULL
	        ? text
	        : json_object_to_json_string_ext(structured,
	              JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	/* Messages quote what clients sent, cut at a byte count: repair. */
	clean = utf8_sanitize(s, strlen(s), &len);
	json_object_object_add(
	    t, "text", json_object_new_string_len(clean, (int)len));
	free(clean);
	json_object_array_add(content, t);
	json_object_object_add(r, "content", content);
	if (structured != NULL)
		json_object_object_add(r, "structuredContent", structured);
	json_object_object_add(r, "isError", json_object_new_boolean(is_error));
	return r;
}

struct mcp_limits mcp_limits;

/* The room of a result's outputs, escaped: both streams' --inline-output
 * when the operator raised it past MCP_RESULT_OUTPUT. */
long long
mcp_result_output(void)
{
	long long both = 2 * (long long)sup.conf->inline_output;

	return both > MCP_RESULT_OUTPUT ? both : MCP_RESULT_OUTPUT;
}

/* The most a tool result takes: MCP_RESULT_MAX, or more with the room. */
size_t
mcp_result_max(void)
{
	return (size_t)(2 * mcp_result_output()) +
	       (MCP_RESULT_MAX - 2 * MCP_RESULT_OUTPUT);
}

/* The longest string of o (a result, or part of one), where *len says;
 * never a picture's or a resource's data, which a cut would spoil. */
static json_object *
longest_string(json_object *o, json_object *best, size_t *len)
{
	size_t i, n;

	switch (json_object_get_type(o)) {
	case json_type_string:
		if ((size_t)json_object_get_string_len(o) > *len) {
			*len = (size_t)json_object_get_string_len(o);
			best = o;
		}
		break;
	case json_type_object: {
		json_object_object_foreach(o, k, v)
		{
			if (strcmp(k, "data") != 0 && strcmp(k, "blob") != 0)
				best = longest_string(v, best, len);
		}
		break;
	}
	case json_type_array:
		n = json_object_array_length(o);
		for (i = 0; i < n; i++)
			best = longest_string(
			    json_object_array_get_idx(o, i), best, len);
		break;
	default:
		break;
	}
	return best;
}

/* Bytes of pictures' and resources' data in o (never cut: bounded by
 * --max-image-kb for a result's pictures, xrun.c). */
static size_t
data_bytes(json_object *o, int data)
{
	size_t i, n, sum = 0;

	switch (json_object_get_type(o)) {
	case json_type_string:
		return data ? (size_t)json_object_get_string_len(o) : 0;
	case json_type_object: {
		json_object_object_foreach(o, k, v)
		{
			sum += data_bytes(v, data || strcmp(k, "data") == 0 ||
			                         strcmp(k, "blob") == 0);
		}
		return sum;
	}
	case json_type_array:
		n = json_object_array_length(o);
		for (i = 0; i < n; i++)
			sum +=
			    data_bytes(json_object_array_get_idx(o, i), data);
		return sum;
	default:
		return 0;
	}
}

/* Where to cut a UTF-8 text near at: on a character's first byte. */
static size_t
utf8_back(const char *p, size_t at)
{
	while (at > 0 && ((unsigned char)p[at] & 0xc0) == 0x80)
		at--;
	return at;
}

/*
 * A tool result is at most MCP_RESULT_MAX bytes once serialized, besides
 * its pictures' data (at most --max-image-kb of them inline): past it,
 * the middle of its longest string (an output, a text block; in
 * structuredContent or content alike) goes, with a marker, until it fits.
 * The outputs of commands were fitted before (xrun_fit()), so this cuts
 * what nothing else bounds (commands echoed, messages) or a result whose
 * bytes took more escaped than counted.  Its size, once fitted.
 */
size_t
tool_result_fit(json_object *result)
{
	size_t most, total, len, drop, head, tail;
	struct evbuffer *b;
	json_object *s;
	const char *p;
	int i;

	/* Besides its pictures; less the envelope's room. */
	most = mcp_result_max() - 4096 + data_bytes(result, 0);
	for (i = 0; i < 64; i++) {
		json_object_to_json_string_length(
		    result, JSON_C_TO_STRING_PLAIN, &total);
		if (total <= most)
			return total;
		if (i == 0)
			mcp_limits.results_cut++;
		len = 0;
		if ((s = longest_string(result, NULL, &len)) == NULL ||
		    len < 1024)
			break;
		/* Each byte takes at least one: this much goes at least. */
		drop = total - most + 256;
		if (drop > len - 512)
			drop = len - 512;
		p = json_object_get_string(s);
		head = utf8_back(p, (len - drop) / 2);
		tail = utf8_back(p, len - (len - drop) / 2);
		b = evbuffer_new();
		evbuffer_add(b, p, head);
		evbuffer_add_printf(b,
		    "\n[... %zu bytes cut: a tool result is at most %zu "
		    "bytes ...]\n",
		    tail - head, mcp_result_max());
		evbuffer_add(b, p + tail, len - tail);
		json_object_set_string_len(s,
		    (const char *)evbuffer_pullup(b, -1),
		    (int)evbuffer_get_length(b));
		evbuffer_free(b);
		log_info("a tool result of %zu bytes: %zu bytes of a string "
		         "cut to fit",
		    total, tail - head);
	}
	log_warnx("%s: a tool result of %zu bytes could not be cut to %zu",
	    __func__, total, most);
	return total;
}

/* Append content items (an array; borrowed) to a tool result. */
void
tool_result_add_content(json_object *result, json_object *items)
{
	json_object *content;
	size_t i;

	if (items == NULL ||
	    !json_object_object_get_ex(result, "content", &content))
		return;
	for (i = 0; i < json_object_array_length(items); i++)
		json_object_array_add(content,
		    json_object_get(json_object_array_get_idx(items, i)));
}

/* A resource_link content block; size < 0: not said. */
json_object *
tool_resource_link(
    const char *uri, const char *name, const char *mime, long long size)
{
	json_object *l;

	l = json_object_new_object();
	json_object_object_add(
	    l, "type", json_object_new_string("resource_link"));
	json_object_object_add(l, "uri", json_object_new_string(uri));
	json_object_object_add(l, "name", json_object_new_string(name));
	json_object_object_add(l, "mimeType", json_object_new_string(mime));
	if (size >= 0)
		json_object_object_add(l, "size", json_object_new_int64(size));
	return l;
}

/* A failure the model can act on: isError with a message, no structure. */
json_object *
tool_error(const char *fmt, ...)
{
	char *msg;
	json_object *r;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) == -1)
		fatal("%s", __func__);
	va_end(ap);
	r = tool_result(NULL, msg, 1);
	free(msg);
	return r;
}

/* A string argument, or NULL when absent (type checked by tool_arg_type_ok). */
const char *
tool_arg_string(struct call *c, const char *key)
{
	json_object *v;

	if (json_object_object_get_ex(c->args, key, &v) &&
	    json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return NULL;
}

/*
 * Check an optional argument's type: 1 if absent or of type t (*out set
 * when present), 0 if present with another type.  Integers pass for
 * doubles.
 */
int
tool_arg_type_ok(
    struct call *c, const char *key, json_type t, json_object **out)
{
	json_object *v;

	if (out != NULL)
		*out = NULL;
	if (!json_object_object_get_ex(c->args, key, &v) || v == NULL)
		return 1;
	if (!json_object_is_type(v, t) &&
	    !(t == json_type_double && json_object_is_type(v, json_type_int)))
		return 0;
	if (out != NULL)
		*out = v;
	return 1;
}
