/*
 * execute_code: run code in a sandbox, Python, JavaScript, TypeScript, Go
 * or bash, installing what it imports.  With a container_id and session
 * (the default) the state persists between calls, as in a notebook;
 * without a container_id the code runs in a fresh sandbox that is removed
 * before the answer (as create_run_close).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "config.h"
#include "core.h"
#include "mcp.h"
#include "run.h"
#include "sandbox.h"
#include "tools.h"
#include "xmalloc.h"

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"code\":{\"type\":\"string\",\"minLength\":1},"
    "\"language\":{\"type\":\"string\",\"enum\":[\"python\","
    "\"javascript\",\"typescript\",\"go\",\"bash\"],\"default\":\"python\"},"
    "\"container_id\":{\"type\":\"string\",\"description\":\"run in this "
    "sandbox; without it a fresh sandbox is made and removed\"},"
    "\"session\":{\"type\":\"boolean\",\"default\":true,\"description\":"
    "\"keep state (variables, imports, functions) between calls in the "
    "same sandbox: Python, JavaScript and TypeScript\"},"
    "\"dependencies\":" TOOL_DEPENDENCIES_SCHEMA ","
    "\"timeout_seconds\":{\"type\":\"integer\",\"minimum\":1}},"
    "\"required\":[\"code\"],\"additionalProperties\":false}";

const char tool_execute_code_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"language\":{\"type\":\"string\"},"
    "\"container_id\":{\"type\":\"string\"},"
    "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
    "\"exit_code\":{\"type\":\"integer\",\"description\":\"-1: the "
    "code did not run (see error)\"},"
    "\"success\":{\"type\":\"boolean\",\"description\":\"exit code 0, "
    "no exception, output not cut at the cap\"},"
    "\"duration_ms\":{\"type\":\"integer\"}," XRUN_USAGE_SCHEMA
        XRUN_EGRESS_SCHEMA
    "\"packages\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
    "\"description\":\"the dependencies the code needs: those found in "
    "its imports, or those given\"},"
    "\"installed\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
    "\"description\":\"those of packages this call installed\"},"
    "\"already_present\":{\"type\":\"array\",\"items\":{\"type\":"
    "\"string\"},\"description\":\"those of packages the sandbox already "
    "had\"},"
    "\"install_output\":{\"type\":\"string\",\"description\":\"what "
    "the package manager printed, when it ran\"},"
    "\"error\":{\"type\":\"string\",\"description\":\"the exception and "
    "its traceback, or why the code could not run\"},"
    "\"session_lost\":{\"type\":\"boolean\",\"description\":\"the "
    "session was killed: its state is gone\"},"
    "\"timed_out\":{\"type\":\"boolean\"},"
    "\"cancelled\":{\"type\":\"boolean\"},"
    "\"truncated\":{\"type\":\"boolean\"},"
    "\"dropped_stdout_bytes\":{\"type\":\"integer\",\"description\":"
    "\"output the session wrote outside any call (a thread or a timer "
    "still printing after its call returned) since the last result: not "
    "kept, only counted\"},"
    "\"dropped_stderr_bytes\":{\"type\":\"integer\"},"
    "\"images\":{\"type\":\"array\",\"description\":\"pictures the "
    "code made (Python: matplotlib figures shown or still open at the "
    "end, a PIL image or figure as the last value; JavaScript: a PNG or "
    "JPEG Buffer as the last value; both: PNG and JPEG files the call "
    "wrote in $MCP_OUTPUT_DIR), in order; those shown are image "
    "blocks of the content, in the same order, and those over the cap "
    "resource links\",\"items\":{"
    "\"type\":\"object\",\"properties\":{"
    "\"where\":{\"type\":\"string\",\"description\":\"figure N, "
    "last value, file NAME\"},"
    "\"path\":{\"type\":\"string\",\"description\":\"the "
    "picture's file in the sandbox (one of the output folder, or one an "
    "over-cap figure was saved to)\"},"
    "\"uri\":{\"type\":\"string\",\"description\":\"that file "
    "as a resource (sandbox://{id}/files/{path})\"},"
    "\"mime_type\":{\"type\":\"string\"},"
    "\"bytes\":{\"type\":\"integer\"},"
    "\"width\":{\"type\":\"integer\"},"
    "\"height\":{\"type\":\"integer\"},"
    "\"shown\":{\"type\":\"boolean\",\"description\":\"it is an "
    "image block of the content\"},"
    "\"over_cap\":{\"type\":\"boolean\",\"description\":\"larger "
    "than the server's --max-image-kb: not shown, but linked as its "
    "resource when it has a file (bytes as the sandbox said)\"},"
    "\"over_pixels\":{\"type\":\"boolean\",\"description\":\"more "
    "pixels than the server's --max-image-pixels: not shown, but linked "
    "as its resource when it has a file\"},"
    "\"over_room\":{\"type\":\"boolean\",\"description\":\"the "
    "pictures before it took the result's room (--max-image-kb in all): "
    "not shown, but linked as its resource when it has a file\"},"
    "\"error\":{\"type\":\"string\",\"description\":\"why it was "
    "refused\"}}}}},"
    "\"required\":[\"language\",\"stdout\",\"stderr\",\"exit_code\"]}";

static long long
member_int64(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v)
	                                             : 0;
}

/*
 * The pictures of a result: each one's bytes (the run layer's "data")
 * become an image block of blocks, and leave the structured list, which
 * says for each whether it was shown; a line for each in t.
 */
static void
code_images(json_object *r, json_object *blocks, struct evbuffer *t)
{
	json_object *list, *im, *v, *b, *m;
	char over[128];
	size_t i;

	if (!json_object_object_get_ex(r, "images", &list) ||
	    !json_object_is_type(list, json_type_array))
		return;
	for (i = 0; i < json_object_array_length(list); i++) {
		im = json_object_array_get_idx(list, i);
		evbuffer_add_printf(t, "image %zu (%s):", i + 1,
		    json_object_object_get_ex(im, "where", &v)
		        ? json_object_get_string(v)
		        : "?");
		if (json_object_object_get_ex(im, "mime_type", &v))
			evbuffer_add_printf(t, " %s %lldx%lld,",
			    json_object_get_string(v),
			    member_int64(im, "width"),
			    member_int64(im, "height"));
		if (json_object_object_get_ex(im, "bytes", &v))
			evbuffer_add_printf(
			    t, " %lld bytes", member_int64(im, "bytes"));
		over[0] = '\0';
		if (json_object_object_get_ex(im, "over_cap", NULL))
			snprintf(over, sizeof over,
			    "over the image cap of %ld KiB",
			    sup.conf->max_image_kb);
		else if (json_object_object_get_ex(im, "over_pixels", NULL))
			snprintf(over, sizeof over,
			    "over the image cap of %ld pixels "
			    "(--max-image-pixels)",
			    sup.conf->max_image_pixels);
		else if (json_object_object_get_ex(im, "over_room", NULL))
			snprintf(over, sizeof over,
			    "past the result's room for pictures (%ld KiB in "
			    "all, --max-image-kb)",
			    sup.conf->max_image_kb);
		if (json_object_object_get_ex(im, "error", &v))
			evbuffer_add_printf(
			    t, " refused: %s", json_object_get_string(v));
		else if (over[0] != '\0' &&
		         json_object_object_get_ex(im, "uri", &v)) {
			evbuffer_add_printf(t,
			    ", %s: not shown; it is the "
			    "resource %s",
			    over, json_object_get_string(v));
			json_object_array_add(blocks,
			    tool_resource_link(json_object_get_string(v),
			        json_object_object_get_ex(im, "where", &m)
			            ? json_object_get_string(m)
			            : "picture",
			        json_object_object_get_ex(im, "mime_type", &m)
			            ? json_object_get_string(m)
			            : "application/octet-stream",
			        member_int64(im, "bytes")));
		} else if (over[0] != '\0')
			evbuffer_add_printf(t, ", %s: not shown (%s)", over,
			    json_object_object_get_ex(im, "over_cap", NULL)
			        ? "it could not be kept in the output folder"
			        : "it has no file to link");
		evbuffer_add_printf(t, "\n");
		if (!json_object_object_get_ex(im, "data", &v)) {
			json_object_object_add(
			    im, "shown", json_object_new_boolean(0));
			continue;
		}
		b = json_object_new_object();
		json_object_object_add(
		    b, "type", json_object_new_string("image"));
		json_object_object_add(b, "data", json_object_get(v));
		json_object_object_get_ex(im, "mime_type", &v);
		json_object_object_add(b, "mimeType", json_object_get(v));
		json_object_array_add(blocks, b);
		json_object_object_del(im, "data");
		json_object_object_add(im, "shown", json_object_new_boolean(1));
	}
}

/* The tool result of a code run (result borrowed). */
json_object *
tool_execute_code_result(json_object *r, int fresh)
{
	struct evbuffer *t;
	json_object *v, *res, *blocks;
	int bad;

	/* Code that ran is a result, its exception and exit code included;
	 * isError is for code that could not run. */
	bad = !xrun_ran(r);
	json_object_object_add(
	    r, "success", json_object_new_boolean(xrun_succeeded(r)));
	if (fresh)
		json_object_object_del(r, "container_id");
	t = evbuffer_new();
	if (json_object_object_get_ex(r, "installed", &v) &&
	    json_object_array_length(v) > 0)
		evbuffer_add_printf(t, "installed: %s\n",
		    json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	if (json_object_object_get_ex(r, "stdout", &v) &&
	    json_object_get_string_len(v) > 0)
		evbuffer_add_printf(
		    t, "stdout:\n%s\n", json_object_get_string(v));
	if (json_object_object_get_ex(r, "stderr", &v) &&
	    json_object_get_string_len(v) > 0)
		evbuffer_add_printf(
		    t, "stderr:\n%s\n", json_object_get_string(v));
	if (json_object_object_get_ex(r, "error", &v))
		evbuffer_add_printf(
		    t, "error:\n%s\n", json_object_get_string(v));
	if (json_object_object_get_ex(r, "session_lost", &v) &&
	    json_object_get_boolean(v))
		evbuffer_add_printf(t,
		    "(the session was killed: variables "
		    "and imports of earlier calls are gone)\n");
	if (json_object_object_get_ex(r, "dropped_stdout_bytes", &v) ||
	    json_object_object_get_ex(r, "dropped_stderr_bytes", &v))
		evbuffer_add_printf(t,
		    "(the session wrote %lld bytes of stdout and %lld of "
		    "stderr that no call could take, after a call's end "
		    "(e.g. from a thread or a timer of an earlier call); "
		    "they were dropped)\n",
		    member_int64(r, "dropped_stdout_bytes"),
		    member_int64(r, "dropped_stderr_bytes"));
	blocks = json_object_new_array();
	code_images(r, blocks, t);
	json_object_object_get_ex(r, "exit_code", &v);
	evbuffer_add_printf(t, "exit code %d\n", json_object_get_int(v));
	evbuffer_add(t, "", 1);
	res = tool_result(
	    json_object_get(r), (char *)evbuffer_pullup(t, -1), bad);
	tool_result_add_content(res, blocks);
	json_object_put(blocks);
	evbuffer_free(t);
	return res;
}

/*
 * The arguments shared by the code tools; NULL (and the call answered)
 * when one is wrong.  *packages is NULL when the code's imports decide.
 */
int
tool_execute_code_args(struct call *c, const char **code, const char **language,
    json_object **packages, long long *timeout_ms)
{
	json_object *v, *d;
	const char *manager;
	size_t i;

	*packages = NULL;
	if (!tool_arg_type_ok(c, "code", json_type_string, NULL) ||
	    (*code = tool_arg_string(c, "code")) == NULL || **code == '\0') {
		mcp_call_reply(
		    c, tool_error("code (a non-empty string) is required"));
		return 0;
	}
	if (!tool_arg_type_ok(c, "language", json_type_string, NULL) ||
	    ((*language = tool_arg_string(c, "language")) != NULL &&
	        !code_language_valid(*language))) {
		mcp_call_reply(
		    c, tool_error("language must be python, javascript, "
		                  "typescript, go or bash"));
		return 0;
	}
	if (*language == NULL)
		*language = "python";
	*timeout_ms = sup.conf->exec_timeout * 1000;
	if (!tool_arg_type_ok(c, "timeout_seconds", json_type_int, &v) ||
	    (v != NULL &&
	        (json_object_get_int64(v) < 1 ||
	            json_object_get_int64(v) > sup.conf->max_exec_timeout))) {
		mcp_call_reply(
		    c, tool_error("timeout_seconds must be an integer "
		                  "from 1 to %ld",
		           sup.conf->max_exec_timeout));
		return 0;
	}
	if (v != NULL)
		*timeout_ms = json_object_get_int64(v) * 1000;
	if (!json_object_object_get_ex(c->args, "dependencies", &d) ||
	    d == NULL)
		return 1;
	/* The older schema's keywords, as a single string (an array of one
	 * by now): no package has these names. */
	if (json_object_is_type(d, json_type_array) &&
	    json_object_array_length(d) == 1 &&
	    json_object_is_type(
	        json_object_array_get_idx(d, 0), json_type_string)) {
		v = json_object_array_get_idx(d, 0);
		if (strcmp(json_object_get_string(v), "auto") == 0)
			return 1;
		if (strcmp(json_object_get_string(v), "none") == 0) {
			*packages = json_object_new_array();
			return 1;
		}
	}
	if (json_object_is_type(d, json_type_array)) {
		manager = code_manager(*language);
		for (i = 0; i < json_object_array_length(d); i++) {
			v = json_object_array_get_idx(d, i);
			if (manager == NULL ||
			    !json_object_is_type(v, json_type_string) ||
			    !code_package_valid(
			        manager, json_object_get_string(v))) {
				mcp_call_reply(c,
				    tool_error("dependencies: \"%.80s\" "
				               "is not a valid %s package name",
				        json_object_get_string(v),
				        manager ? manager : "(no manager)"));
				return 0;
			}
		}
		*packages = json_object_get(d);
		return 1;
	}
	mcp_call_reply(c, tool_error("dependencies must be a list of package "
	                             "names"));
	return 0;
}

struct xcode {
	struct call *call;
	struct coderun *run;
};

static void
xcode_done(json_object *r, void *arg)
{
	struct xcode *x = arg;

	mcp_call_reply(x->call, tool_execute_code_result(r, 0));
	free(x);
}

static void
xcode_cancel(struct call *c)
{
	struct xcode *x = c->state;

	if (x->run != NULL)
		coderun_cancel(x->run);
}

static void
execute_code(struct call *c)
{
	const char *code, *language;
	json_object *packages, *s;
	long long timeout_ms;
	struct sandbox *sb;
	struct xcode *x;

	if (!tool_arg_type_ok(c, "session", json_type_boolean, &s)) {
		mcp_call_reply(c, tool_error("session must be a boolean"));
		return;
	}
	if (!tool_execute_code_args(
	        c, &code, &language, &packages, &timeout_ms))
		return;
	if (!json_object_object_get_ex(c->args, "container_id", NULL)) {
		/* A fresh sandbox for this call alone. */
		tool_create_run_close_start(
		    c, code, language, packages, timeout_ms, NULL);
		json_object_put(packages);
		return;
	}
	if ((sb = sandbox_lookup(c, "container_id")) == NULL) {
		json_object_put(packages);
		return;
	}
	x = xcalloc(1, sizeof *x);
	x->call = c;
	c->state = x;
	c->cancel = xcode_cancel;
	coderun_start(c, sb, language, code,
	    s == NULL || json_object_get_boolean(s), packages, timeout_ms,
	    xcode_done, x, &x->run);
	json_object_put(packages);
}

const struct tool tool_execute_code = {
    .name = "execute_code",
    .title = "Run code",
    .description = "Run Python, JavaScript, TypeScript, Go or bash code. "
                   "In a sandbox (container_id) Python, JavaScript and "
                   "TypeScript keep their state between calls like a "
                   "notebook; without one, a fresh sandbox runs the code and "
                   "is removed. Imports are detected and missing packages "
                   "installed, or give dependencies (a list; [] for none). "
                   "An exception comes back in error with its traceback "
                   "(a result, success false).",
    .input_schema = input_schema,
    .output_schema = tool_execute_code_schema,
    .read_only = 0,
    .destructive = 1,
    .idempotent = 0,
    .open_world = 0,
    .task_support = 1,
    .exec = execute_code,
};
