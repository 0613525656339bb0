/*
 * install_package: packages into a sandbox with pip, npm or go, into the
 * sandbox user's home so that it works under the default hardening (no
 * root, read-only system directories).  Names are checked first: no shell,
 * no options smuggled in; a path installs a local artifact copied in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "core.h"
#include "mcp.h"
#include "run.h"
#include "sandbox.h"
#include "sbout.h"
#include "tools.h"
#include "xmalloc.h"

#define INSTALL_MAX 100

static const char input_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\"},"
    "\"packages\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
    "\"minItems\":1,\"maxItems\":100,\"description\":\"names (with "
    "versions, e.g. requests==2.31.0), or absolute paths in the sandbox "
    "of local artifacts (a wheel, an sdist, an npm tarball)\"},"
    "\"manager\":{\"type\":\"string\",\"enum\":[\"pip\",\"npm\",\"go\","
    "\"apt\"],\"description\":\"default: pip if the image has Python, "
    "else npm, else go\"}},"
    "\"required\":[\"container_id\",\"packages\"],"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"manager\":{\"type\":\"string\"},"
    "\"installed\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"already_present\":{\"type\":\"array\",\"items\":{\"type\":"
    "\"string\"}}," XRUN_EGRESS_SCHEMA "\"output\":{\"type\":\"string\"}},"
    "\"required\":[\"manager\",\"installed\",\"output\"]}";

/* Which manager: engine/scripts/probe-manager.sh, embedded (a probe). */
extern const char probe_manager_sh[];

struct inst {
	struct call *call;
	char *manager;
	json_object *packages;
};

static void
inst_free(struct inst *in)
{
	json_object_put(in->packages);
	free(in->manager);
	free(in);
}

/* For a model: what changed, then what the manager printed (to free). */
static char *
inst_text(json_object *o, const char *out)
{
	json_object *in, *pr;
	char *t;

	json_object_object_get_ex(o, "installed", &in);
	json_object_object_get_ex(o, "already_present", &pr);
	xasprintf(&t, "installed: %s\nalready present: %s\n%s",
	    json_object_to_json_string_ext(in, JSON_C_TO_STRING_PLAIN),
	    json_object_to_json_string_ext(pr, JSON_C_TO_STRING_PLAIN), out);
	return t;
}

static void
inst_done(struct xrun *run, json_object *r, void *arg)
{
	struct inst *in = arg;
	json_object *v, *o;
	char refused[512], *text;
	const char *out;

	(void)run;
	o = json_object_new_object();
	json_object_object_add(
	    o, "manager", json_object_new_string(in->manager));
	sbout_install_report(o, "output", r, in->packages);
	json_object_object_get_ex(o, "output", &v);
	out = json_object_get_string(v);
	if (!json_object_object_get_ex(r, "exit_code", &v) ||
	    json_object_get_int(v) != 0) {
		/* A host its egress list does not allow is the likely cause. */
		xrun_egress_refused(r, refused, sizeof refused);
		mcp_call_reply(in->call,
		    tool_error("%s install failed: %s%s%s%s\n%s", in->manager,
		        xrun_failure(r, ""),
		        *refused != '\0' ? "\n(the sandbox's egress proxy "
		                           "refused: "
		                         : "",
		        refused,
		        *refused != '\0' ? "; sandbox_set_egress can allow "
		                           "hosts within the operator's "
		                           "--egress-allow)"
		                         : "",
		        out));
		json_object_put(o);
		goto out;
	}
	if (json_object_object_get_ex(r, "egress", &v))
		json_object_object_add(o, "egress", json_object_get(v));
	if (json_object_object_get_ex(r, "egress_cut", &v))
		json_object_object_add(o, "egress_cut", json_object_get(v));
	text = inst_text(o, out);
	mcp_call_reply(in->call, tool_result(o, text, 0));
	free(text);
out:
	inst_free(in);
}

/* Install with in->manager, once every name is valid for it. */
static void
inst_run(struct inst *in, struct sandbox *sb)
{
	const char **args, *pkg;
	struct xrun_opts o;
	char *line;
	size_t i, n = json_object_array_length(in->packages);

	for (i = 0; i < n; i++) {
		pkg = json_object_get_string(
		    json_object_array_get_idx(in->packages, i));
		if (!code_package_valid(in->manager, pkg)) {
			mcp_call_reply(in->call,
			    tool_error("\"%.80s\" is not a valid %s package "
			               "name (the image's manager is %s; name "
			               "one with manager)",
			        pkg, in->manager, in->manager));
			inst_free(in);
			return;
		}
	}
	args = xcalloc(n + 1, sizeof *args);
	for (i = 0; i < n; i++)
		args[i] = json_object_get_string(
		    json_object_array_get_idx(in->packages, i));
	memset(&o, 0, sizeof o);
	o.command = code_installer(in->manager);
	o.args = args;
	xasprintf(&line, "install_package %s: %s", in->manager,
	    json_object_to_json_string_ext(
	        in->packages, JSON_C_TO_STRING_PLAIN));
	o.log_as = line;
	o.timeout_ms = sup.conf->max_exec_timeout * 1000;
	o.output_cap = sup.conf->output_cap;
	xrun_start(in->call, sb, &o, inst_done, in);
	free(line);
	free(args);
}

static void
inst_detected(struct xrun *run, json_object *r, void *arg)
{
	struct inst *in = arg;
	struct sandbox *sb;
	json_object *v;
	const char *m = NULL;

	(void)run;
	if (json_object_object_get_ex(r, "exit_code", &v) &&
	    json_object_get_int(v) == 0 &&
	    json_object_object_get_ex(r, "stdout", &v) &&
	    json_object_is_type(v, json_type_string))
		m = sbout_manager(json_object_get_string(v),
		    (size_t)json_object_get_string_len(v));
	if (m == NULL) {
		mcp_call_reply(in->call,
		    tool_error("cannot tell the package manager of this "
		               "image (%s): name one with manager",
		        json_object_object_get_ex(r, "exit_code", &v) &&
		                json_object_get_int(v) == 0
		            ? "the probe's answer is not pip, npm or go"
		            : xrun_failure(r, "the probe failed")));
		inst_free(in);
		return;
	}
	in->manager = xstrdup(m);
	if ((sb = sandbox_lookup(in->call, "container_id")) != NULL)
		inst_run(in, sb);
	else
		inst_free(in);
}

/* The manager the sandbox's image is configured for, if it is one. */
static const char *
image_manager(const struct sandbox *sb)
{
	const struct config *c = sup.conf;

	if (c->python_image != NULL && strcmp(sb->image, c->python_image) == 0)
		return "pip";
	if (c->node_image != NULL && strcmp(sb->image, c->node_image) == 0)
		return "npm";
	if (c->go_image != NULL && strcmp(sb->image, c->go_image) == 0)
		return "go";
	return NULL;
}

static void
install_package(struct call *c)
{
	const char *manager;
	json_object *pk, *v;
	struct xrun_opts o;
	struct sandbox *sb;
	struct inst *in;
	size_t i, n;

	if (!tool_arg_type_ok(c, "packages", json_type_array, &pk) ||
	    pk == NULL || (n = json_object_array_length(pk)) == 0 ||
	    n > INSTALL_MAX) {
		mcp_call_reply(
		    c, tool_error("packages must be an array of 1 to %d "
		                  "names",
		           INSTALL_MAX));
		return;
	}
	if (!tool_arg_type_ok(c, "manager", json_type_string, NULL) ||
	    ((manager = tool_arg_string(c, "manager")) != NULL &&
	        strcmp(manager, "pip") != 0 && strcmp(manager, "npm") != 0 &&
	        strcmp(manager, "go") != 0 && strcmp(manager, "apt") != 0)) {
		mcp_call_reply(
		    c, tool_error("manager must be pip, npm, go or apt"));
		return;
	}
	if (manager != NULL && strcmp(manager, "apt") == 0) {
		mcp_call_reply(c,
		    tool_error(
		        "apt installs as root, which this "
		        "server's policy does not allow (code runs as an "
		        "unprivileged user); use pip, npm or go, or an image that "
		        "has the package"));
		return;
	}
	for (i = 0; i < n; i++) {
		v = json_object_array_get_idx(pk, i);
		if (!json_object_is_type(v, json_type_string) ||
		    !code_package_valid(manager != NULL ? manager : "pip",
		        json_object_get_string(v)) ||
		    (manager == NULL &&
		        !code_package_valid("npm", json_object_get_string(v)) &&
		        !code_package_valid(
		            "pip", json_object_get_string(v)))) {
			mcp_call_reply(c,
			    tool_error(
			        "\"%.80s\" is not a valid "
			        "package name (names, versions and absolute paths "
			        "of local artifacts only; no options, URLs or "
			        "shell)",
			        json_object_get_string(v)));
			return;
		}
	}
	if ((sb = sandbox_lookup(c, "container_id")) == NULL)
		return;
	in = xcalloc(1, sizeof *in);
	in->call = c;
	in->packages = json_object_get(pk);
	/* Decided on the host where it can be: asked, or the image's. */
	if (manager != NULL || (manager = image_manager(sb)) != NULL) {
		in->manager = xstrdup(manager);
		inst_run(in, sb);
		return;
	}
	memset(&o, 0, sizeof o);
	o.command = probe_manager_sh;
	o.probe = 1;
	o.workdir = "/";
	o.log_as = "install_package: which package manager the image has";
	o.log_quiet = 1;
	o.timeout_ms = 30000;
	o.output_cap = 4096;
	xrun_start(c, sb, &o, inst_detected, in);
}

const struct tool tool_install_package = {
    .name = "install_package",
    .title = "Install packages in a sandbox",
    .description = "Install packages with pip, npm or go (apt is refused: "
                   "it needs root) into the sandbox user's home, skipping "
                   "those already there. Package names are checked: no "
                   "options, URLs or shell. An absolute path installs a "
                   "local artifact copied into the sandbox.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 0,
    .destructive = 1,
    .idempotent = 1,
    .open_world = 1,
    .task_support = 1,
    .exec = install_package,
};
