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

#include "config.h"
#include "deps.h"
#include "supervisor.h"
#include "xmalloc.h"

/*
 * Install what is missing of "$@" with the language's manager, into the
 * sandbox user's home (the workdir): pip --user, npm --prefix $HOME.
 * Paths (to local wheels, sdists or npm tarballs copied in) install as
 * they are.  The first line of output lists what was missing.
 */
static const char pip_install[] =
    "set -f; miss=$(python3 -c 'import sys, importlib.metadata as m\n"
    "out = []\n"
    "for p in sys.argv[1:]:\n"
    "    if \"/\" in p:\n"
    "        out.append(p)\n"
    "        continue\n"
    "    try:\n"
    "        m.distribution(p.split(\"[\")[0].split(\"=\")[0].split(\"<\")[0]"
    ".split(\">\")[0].split(\"~\")[0].split(\"!\")[0])\n"
    "    except Exception:\n"
    "        out.append(p)\n"
    "print(\" \".join(out))' \"$@\") || exit 1;"
    /* Only names asked for: sandbox code can write into that output. */
    "m=; for p; do case \" $miss \" in *\" $p \"*) m=\"$m $p\";; esac; done;"
    "miss=${m# }; echo \"missing: $miss\"; [ -z \"$miss\" ] && exit 0;"
    "python3 -m pip --version >/dev/null 2>&1 || { echo 'pip is not in "
    "this image' >&2; exit 1; };"
    "PIP_BREAK_SYSTEM_PACKAGES=1 exec python3 -m pip install --user "
    "--no-input --disable-pip-version-check --no-warn-script-location "
    "--retries 1 --timeout 15 $miss";

static const char npm_install[] =
    "set -f; cd \"$HOME\" || exit 1; miss=;"
    "for p; do case $p in */*.tgz|/*) miss=\"$miss $p\";;"
    " *) node -e 'require.resolve(process.argv[1])' \"$p\" 2>/dev/null ||"
    " miss=\"$miss $p\";; esac; done;"
    "echo \"missing:$miss\"; [ -z \"$miss\" ] && exit 0;"
    "exec npm install --no-audit --no-fund --no-update-notifier "
    "--prefix \"$HOME\" $miss";

static const char go_install[] =
    "export GOTMPDIR=\"$HOME/.cache/gotmp\" GOFLAGS=-mod=mod;"
    "mkdir -p \"$GOTMPDIR\"; echo \"missing: $*\";"
    "for p; do go install \"$p\" || exit 1; done";

/* Code on stdin, for the languages without a session. */
static const char bash_run[] =
    "if command -v bash >/dev/null 2>&1; then exec bash -s; fi; "
    "exec sh -s";

static const char go_run[] =
    "d=\"$HOME/.cache/mcp-go/$$\"; export GOTMPDIR=\"$d\" GOFLAGS=-mod=mod;"
    "mkdir -p \"$d\" && cat >\"$d/main.go\" && cd \"$d\" &&"
    " { go mod init mcpmain >/dev/null 2>&1; go mod tidy >/dev/null 2>&1;"
    " go build -o prog . && ./prog; }; rc=$?; rm -rf \"$d\"; exit $rc";

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

/* The image a fresh sandbox for a language starts from. */
const char *
code_image(const char *language)
{
	const struct config *c = sup.conf;

	if (strcmp(language, "python") == 0)
		return c->python_image;
	if (strcmp(language, "javascript") == 0 ||
	    strcmp(language, "typescript") == 0)
		return c->node_image;
	if (strcmp(language, "go") == 0)
		return c->go_image;
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
		return pip_install;
	if (strcmp(manager, "npm") == 0)
		return npm_install;
	if (strcmp(manager, "go") == 0)
		return go_install;
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

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
coderun_finish(struct coderun *cr, json_object *r)
{
	json_object *o, *v;

	o = json_object_new_object();
	json_object_object_add(
	    o, "language", json_object_new_string(cr->language));
	json_object_object_add(
	    o, "container_id", json_object_new_string(cr->sandbox));
	json_object_object_add(o, "packages", json_object_get(cr->packages));
	if (cr->install != NULL) {
		json_object_object_get_ex(cr->install, "stdout", &v);
		json_object_object_add(o, "install_output", json_object_get(v));
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
	o.timeout_ms = cr->deadline_ms - now_ms();
	o.output_cap = sup.conf->output_cap;
	if (strcmp(cr->language, "go") == 0 ||
	    strcmp(cr->language, "bash") == 0) {
		o.command = strcmp(cr->language, "go") == 0 ? go_run : bash_run;
		o.stdin_text = cr->code;
	} else {
		o.command = cr->code;
		o.language = cr->language;
		o.session = cr->session;
	}
	cr->run = xrun_start(cr->call, sb, &o, coderun_ran, cr);
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
	size_t i, n;

	cr = xcalloc(1, sizeof *cr);
	cr->call = c;
	cr->sandbox = xstrdup(sb->id);
	cr->language = xstrdup(language);
	cr->code = xstrdup(code);
	cr->session = session;
	cr->deadline_ms = now_ms() + timeout_ms;
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
	o.timeout_ms = timeout_ms;
	o.output_cap = sup.conf->output_cap;
	cr->run = xrun_start(c, sb, &o, coderun_installed, cr);
	free(args);
}

void
coderun_cancel(struct coderun *cr)
{
	if (cr->run != NULL)
		xrun_cancel(cr->run);
}
