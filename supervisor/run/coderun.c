/*
 * Running code for execute_code, create_run_close and run_project: the
 * dependencies the code needs are found (deps.c) and those not already
 * there installed into user-writable places (so that it works under the
 * default hardening), then the code runs: Python, JavaScript and
 * TypeScript in the sandbox's long-lived session of the language (state
 * persists between calls), Go and bash as a fresh process each time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "core.h"
#include "deps.h"
#include "log.h"
#include "mcp.h"
#include "run.h"
#include "sandbox.h"
#include "sbout.h"
#include "xmalloc.h"

/*
 * What is missing of "$@", installed with the language's manager into the
 * sandbox user's home; the first line of output lists what was missing
 * (engine/scripts/install-{pip,npm,go}.sh, embedded).
 */
extern const char install_pip_sh[], install_npm_sh[], install_go_sh[];

/* Code on stdin, for the languages without a session
 * (engine/scripts/run-{shell,go}.sh, embedded). */
extern const char run_shell_sh[], run_go_sh[];

/* The package manager of a language ("pip", "npm", "go"), or NULL. */
const char *
code_manager(const char *language)
{
	if (strcmp(language, "python") == 0)
		return "pip";
	if (strcmp(language, "javascript") == 0 ||
	    strcmp(language, "typescript") == 0)
		return "npm";
	if (strcmp(language, "go") == 0)
		return "go";
	return NULL;
}

int
code_language_valid(const char *l)
{
	return strcmp(l, "python") == 0 || strcmp(l, "javascript") == 0 ||
	       strcmp(l, "typescript") == 0 || strcmp(l, "go") == 0 ||
	       strcmp(l, "bash") == 0;
}

/*
 * The flag that sets the image of fresh sandboxes for a language, and
 * what it holds (NULL: bash, which any image with a shell serves).
 */
const char *
code_image_flag(const char *language, const char **image)
{
	const struct config *c = sup.conf;

	*image = NULL;
	if (strcmp(language, "python") == 0)
		*image = c->python_image;
	else if (strcmp(language, "javascript") == 0 ||
	         strcmp(language, "typescript") == 0)
		*image = c->node_image;
	else if (strcmp(language, "go") == 0)
		*image = c->go_image;
	else
		return NULL;
	return *image == c->python_image ? "python-image"
	       : *image == c->node_image ? "node-image"
	                                 : "go-image";
}

/*
 * The image a fresh sandbox for a language starts from: the language's
 * own image when the operator gave one (--python-image, --node-image,
 * --go-image), else the operator's --image when that was given, else the
 * language's built-in default.  So one configured image serves every
 * language unless a language is given one of its own.
 */
const char *
code_image(const char *language)
{
	const struct config *c = sup.conf;
	const char *flag, *img;

	if ((flag = code_image_flag(language, &img)) == NULL)
		return c->default_image;
	if (config_given(c, flag) || !config_given(c, "image"))
		return img;
	return c->default_image;
}

/* A package name or a path in the sandbox (to a local artifact). */
int
code_package_valid(const char *manager, const char *p)
{
	size_t n = strlen(p);

	if (p[0] == '/' && strcmp(manager, "apt") != 0)
		return n < 1024 && strstr(p, "/../") == NULL &&
		       strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS"
		                 "TUVWXYZ0123456789._+-/@") == n;
	return deps_valid_name(manager, p);
}

/* The command that installs packages with a manager, or NULL. */
const char *
code_installer(const char *manager)
{
	if (strcmp(manager, "pip") == 0)
		return install_pip_sh;
	if (strcmp(manager, "npm") == 0)
		return install_npm_sh;
	if (strcmp(manager, "go") == 0)
		return install_go_sh;
	return NULL;
}

struct coderun {
	struct call *call;
	char *sandbox;
	char *language;
	char *code;
	int session;
	long long deadline_ms;
	json_object *packages; /* to install (strings) */
	json_object *install; /* the install step's result */
	struct xrun *run;
	void (*done)(json_object *, void *);
	void *arg;
	struct coderun **slot; /* the caller's handle, cleared at the end */
};

/* The program that runs a language's code in the sandbox. */
static const char *
code_interpreter(const char *language)
{
	if (strcmp(language, "python") == 0)
		return "python3";
	if (strcmp(language, "go") == 0)
		return "go";
	if (strcmp(language, "bash") == 0)
		return NULL; /* sh stands in for it */
	return "node";
}

/*
 * Whether a run failed because the image lacks the interpreter: the
 * engine could not start it (a session's exec: 126 or 127 with the
 * runtime's "executable file not found"), or the shell did not find it
 * (Go: 127, "go: not found").
 */
static int
code_interpreter_missing(const char *language, json_object *r)
{
	const char *prog = code_interpreter(language), *out = "", *err = "";
	json_object *v;
	char needle[32];
	int code;

	if (prog == NULL || !json_object_object_get_ex(r, "exit_code", &v))
		return 0;
	code = json_object_get_int(v);
	if (code != 126 && code != 127)
		return 0;
	if (json_object_object_get_ex(r, "stdout", &v))
		out = json_object_get_string(v);
	if (json_object_object_get_ex(r, "stderr", &v))
		err = json_object_get_string(v);
	snprintf(
	    needle, sizeof needle, "\"%s\": executable file not found", prog);
	if (strstr(out, needle) != NULL || strstr(err, needle) != NULL)
		return 1;
	snprintf(needle, sizeof needle, "%s: not found", prog);
	return strcmp(language, "go") == 0 && strstr(err, needle) != NULL;
}

/* Says which image lacks the interpreter and which flag sets one. */
static void
code_interpreter_error(struct coderun *cr, json_object *o)
{
	static const struct {
		const char *flag, *env;
	} vars[] = {
	    {"python-image", "MCP_SANDBOXD_PYTHON_IMAGE"},
	    {"node-image", "MCP_SANDBOXD_NODE_IMAGE"},
	    {"go-image", "MCP_SANDBOXD_GO_IMAGE"},
	};
	const char *flag, *img, *env = "";
	struct sandbox *sb;
	char *msg;
	size_t i;

	flag = code_image_flag(cr->language, &img);
	for (i = 0; i < sizeof vars / sizeof vars[0]; i++)
		if (strcmp(vars[i].flag, flag) == 0)
			env = vars[i].env;
	sb = sandbox_find(NULL, cr->sandbox);
	xasprintf(&msg,
	    "the %s interpreter (%s) is not in the image \"%s\": run %s "
	    "code in a sandbox made from an image that has %s "
	    "(sandbox_initialize's or create_run_close's image). Fresh "
	    "sandboxes for %s use \"%s\", set with --%s (%s), else with "
	    "--image.",
	    cr->language, code_interpreter(cr->language),
	    sb != NULL ? sb->image : "?", cr->language,
	    code_interpreter(cr->language), cr->language,
	    code_image(cr->language), flag, env);
	json_object_object_add(o, "error", json_object_new_string(msg));
	/* The code did not run (the shell's 127 is not its exit code). */
	json_object_object_add(o, "exit_code", json_object_new_int(-1));
	/* No session ever ran: none was lost. */
	if (json_object_object_get_ex(o, "session_lost", NULL))
		json_object_object_add(
		    o, "session_lost", json_object_new_boolean(0));
	log_info("%.12s: %s", cr->sandbox, msg);
	free(msg);
}

static void
coderun_finish(struct coderun *cr, json_object *r)
{
	json_object *o;

	o = json_object_new_object();
	json_object_object_add(
	    o, "language", json_object_new_string(cr->language));
	json_object_object_add(
	    o, "container_id", json_object_new_string(cr->sandbox));
	json_object_object_add(o, "packages", json_object_get(cr->packages));
	if (cr->install != NULL)
		sbout_install_report(
		    o, "install_output", cr->install, cr->packages);
	else {
		json_object_object_add(o, "installed", json_object_new_array());
		json_object_object_add(
		    o, "already_present", json_object_new_array());
	}
	if (r != NULL) {
		json_object_object_foreach(r, key, val)
		{
			if (strcmp(key, "command") != 0)
				json_object_object_add(
				    o, key, json_object_get(val));
		}
	}
	/* The output schema's members, whatever happened. */
	if (!json_object_object_get_ex(o, "stdout", NULL))
		json_object_object_add(o, "stdout", json_object_new_string(""));
	if (!json_object_object_get_ex(o, "stderr", NULL))
		json_object_object_add(o, "stderr", json_object_new_string(""));
	if (!json_object_object_get_ex(o, "exit_code", NULL))
		json_object_object_add(o, "exit_code", json_object_new_int(-1));
	if (r != NULL && code_interpreter_missing(cr->language, r))
		code_interpreter_error(cr, o);
	if (cr->slot != NULL)
		*cr->slot = NULL;
	cr->done(o, cr->arg);
	json_object_put(o);
	json_object_put(cr->packages);
	json_object_put(cr->install);
	free(cr->sandbox);
	free(cr->language);
	free(cr->code);
	free(cr);
}

static void
coderun_ran(struct xrun *run, json_object *r, void *arg)
{
	struct coderun *cr = arg;

	(void)run;
	cr->run = NULL;
	coderun_finish(cr, r);
}

static void
coderun_go(struct coderun *cr)
{
	struct xrun_opts o;
	struct sandbox *sb;
	json_object *r;
	char *line = NULL;

	if ((sb = sandbox_find(NULL, cr->sandbox)) == NULL ||
	    sb->state != SB_READY || sb->worker == NULL) {
		r = json_object_new_object();
		json_object_object_add(r, "exit_code", json_object_new_int(-1));
		json_object_object_add(r, "error",
		    json_object_new_string("the sandbox went away"));
		coderun_finish(cr, r);
		json_object_put(r);
		return;
	}
	memset(&o, 0, sizeof o);
	o.timeout_ms = cr->deadline_ms - clock_ms();
	o.output_cap = sup.conf->output_cap;
	if (strcmp(cr->language, "go") == 0 ||
	    strcmp(cr->language, "bash") == 0) {
		o.command =
		    strcmp(cr->language, "go") == 0 ? run_go_sh : run_shell_sh;
		o.stdin_text = cr->code;
		xasprintf(&line, "%s: %s code (%zu bytes)", cr->call->tool,
		    cr->language, strlen(cr->code));
		o.log_as = line;
	} else {
		o.command = cr->code;
		o.language = cr->language;
		o.session = cr->session;
	}
	cr->run = xrun_start(cr->call, sb, &o, coderun_ran, cr);
	free(line);
}

static void
coderun_installed(struct xrun *run, json_object *r, void *arg)
{
	struct coderun *cr = arg;
	json_object *v;

	(void)run;
	cr->run = NULL;
	cr->install = json_object_get(r);
	if (!json_object_object_get_ex(r, "exit_code", &v) ||
	    json_object_get_int(v) != 0 || cr->call->cancelled) {
		r = json_object_new_object();
		json_object_object_add(r, "exit_code", json_object_new_int(-1));
		json_object_object_add(r, "error",
		    json_object_new_string(
		        "installing the dependencies failed (see "
		        "install_output); the code did not run"));
		json_object_object_get_ex(cr->install, "stderr", &v);
		json_object_object_add(r, "stderr", json_object_get(v));
		coderun_finish(cr, r);
		json_object_put(r);
		return;
	}
	coderun_go(cr);
}

/*
 * Run code in a sandbox: install its dependencies (packages: an array,
 * or NULL to detect them; an empty array for none), then run it.
 * done(result, arg) gets the result (borrowed); *slot holds the run
 * until then (for coderun_cancel).
 */
void
coderun_start(struct call *c, struct sandbox *sb, const char *language,
    const char *code, int session, json_object *packages, long long timeout_ms,
    void (*done)(json_object *, void *), void *arg, struct coderun **slot)
{
	const char *manager = code_manager(language);
	const char **args;
	struct coderun *cr;
	struct xrun_opts o;
	char *line;
	size_t i, n;

	cr = xcalloc(1, sizeof *cr);
	cr->call = c;
	cr->sandbox = xstrdup(sb->id);
	cr->language = xstrdup(language);
	cr->code = xstrdup(code);
	cr->session = session;
	cr->deadline_ms = clock_ms() + timeout_ms;
	cr->done = done;
	cr->arg = arg;
	/* Set now: the run may end (and clear it) before this returns. */
	cr->slot = slot;
	*slot = cr;
	if (packages != NULL)
		cr->packages = json_object_get(packages);
	else if ((cr->packages = deps_detect(language, code, strlen(code))) ==
	         NULL)
		cr->packages = json_object_new_array();
	n = json_object_array_length(cr->packages);
	if (n == 0 || manager == NULL) {
		coderun_go(cr);
		return;
	}
	args = xcalloc(n + 1, sizeof *args);
	for (i = 0; i < n; i++)
		args[i] = json_object_get_string(
		    json_object_array_get_idx(cr->packages, i));
	memset(&o, 0, sizeof o);
	o.command = code_installer(manager);
	o.args = args;
	xasprintf(&line, "%s: installing %s dependencies: %s", c->tool, manager,
	    json_object_to_json_string_ext(
	        cr->packages, JSON_C_TO_STRING_PLAIN));
	o.log_as = line;
	o.timeout_ms = timeout_ms;
	o.output_cap = sup.conf->output_cap;
	cr->run = xrun_start(c, sb, &o, coderun_installed, cr);
	free(line);
	free(args);
}

/* Kill its current step; its callback still comes, cancelled. */
void
coderun_cancel(struct coderun *cr)
{
	if (cr->run != NULL)
		xrun_cancel(cr->run);
}
