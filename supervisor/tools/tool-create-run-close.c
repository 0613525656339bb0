/*
 * create_run_close: a fresh sandbox for one piece of code, removed before
 * the answer goes out, whatever happens (error, timeout, cancellation).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    "\"image\":{\"type\":\"string\",\"description\":\"default: the "
    "configured image of the language\"},"
    "\"dependencies\":" TOOL_DEPENDENCIES_SCHEMA ","
    "\"timeout_seconds\":{\"type\":\"integer\",\"minimum\":1}},"
    "\"required\":[\"code\"],\"additionalProperties\":false}";

struct crc {
	struct call *call;
	struct call *inner; /* the sandbox_initialize part */
	char *code, *language, *sandbox;
	json_object *packages;
	long long timeout_ms;
	int own_image; /* the client named it */
	struct coderun *run;
	json_object *result;
};

static void
crc_free(struct crc *x)
{
	json_object_put(x->packages);
	json_object_put(x->result);
	free(x->code);
	free(x->language);
	free(x->sandbox);
	free(x);
}

static void
crc_removed(void *arg, const char *err)
{
	struct crc *x = arg;

	(void)err;
	mcp_call_reply(x->call, tool_execute_code_result(x->result, 1));
	crc_free(x);
}

static void
crc_ran(json_object *r, void *arg)
{
	struct crc *x = arg;
	struct sandbox *sb;

	x->run = NULL;
	x->result = json_object_get(r);
	/* The sandbox goes before the answer. */
	if ((sb = sandbox_find(NULL, x->sandbox)) != NULL)
		sandbox_destroy(sb, crc_removed, x);
	else
		crc_removed(x, NULL);
}

static void
crc_cancel(struct call *c)
{
	struct crc *x = c->state;

	if (x->run != NULL)
		coderun_cancel(x->run);
}

/* The sandbox is ready (or not): run the code in it. */
static void
crc_created(struct call *c, struct sandbox *sb, const char *err, void *arg)
{
	struct crc *x = arg;

	(void)c;
	if (sb == NULL) {
		const char *flag = NULL, *img;

		/* Name the flag that chose the image, if one did. */
		if (!x->own_image &&
		    ((flag = code_image_flag(x->language, &img)) == NULL ||
		        (!config_given(sup.conf, flag) &&
		            config_given(sup.conf, "image"))))
			flag = "image";
		if (flag != NULL)
			mcp_call_reply(x->call,
			    tool_error("cannot make a sandbox for the %s code "
			               "(its image is set with --%s): %s",
			        x->language, flag, err));
		else
			mcp_call_reply(x->call,
			    tool_error(
			        "cannot make a sandbox for the code: %s", err));
		crc_free(x);
		return;
	}
	x->sandbox = xstrdup(sb->id);
	if (x->call->cancelled) {
		x->result = json_object_new_object();
		crc_ran(x->result, x);
		return;
	}
	coderun_start(x->call, sb, x->language, x->code, 0, x->packages,
	    x->timeout_ms, crc_ran, x, &x->run);
}

/* Shared with execute_code without a container_id. */
void
tool_create_run_close_start(struct call *c, const char *code,
    const char *language, json_object *packages, long long timeout_ms,
    const char *image)
{
	const struct config *conf = sup.conf;
	struct limits lim = {conf->memory_mb, conf->cpus, conf->pids};
	struct crc *x;

	if (sandbox_count() >= conf->max_sandboxes) {
		mcp_call_reply(
		    c, tool_error("too many sandboxes (the limit is %ld): "
		                  "stop one with sandbox_stop first",
		           conf->max_sandboxes));
		return;
	}
	x = xcalloc(1, sizeof *x);
	x->call = c;
	x->code = xstrdup(code);
	x->language = xstrdup(language);
	x->packages = json_object_get(packages);
	x->timeout_ms = timeout_ms;
	x->own_image = image != NULL;
	c->state = x;
	c->cancel = crc_cancel;
	sandbox_create_cb(c, image != NULL ? image : code_image(language), NULL,
	    NULL, "/app", "none", &lim, conf->max_ttl, crc_created, x);
}

static void
create_run_close(struct call *c)
{
	const char *code, *language, *image;
	json_object *packages;
	long long timeout_ms;

	if (!tool_arg_type_ok(c, "image", json_type_string, NULL)) {
		mcp_call_reply(c, tool_error("image must be a string"));
		return;
	}
	if (!tool_execute_code_args(
	        c, &code, &language, &packages, &timeout_ms))
		return;
	image = tool_arg_string(c, "image");
	tool_create_run_close_start(
	    c, code, language, packages, timeout_ms, image);
	json_object_put(packages);
}

const struct tool tool_create_run_close = {
    .name = "create_run_close",
    .title = "Run code in a throwaway sandbox",
    .description = "Make a fresh sandbox, install what the code needs, "
                   "run it, and remove the sandbox before answering, even on "
                   "error, timeout or cancellation.",
    .input_schema = input_schema,
    .output_schema = tool_execute_code_schema,
    .read_only = 0,
    .destructive = 0,
    .idempotent = 0,
    .open_world = 0,
    .task_support = 1,
    .exec = create_run_close,
};
