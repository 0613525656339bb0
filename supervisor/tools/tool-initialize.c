/* sandbox_initialize: a new hardened sandbox from any image. */
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
    "\"image\":{\"type\":\"string\",\"description\":\"Docker image; "
    "default: the server's configured image\"},"
    "\"name\":{\"type\":\"string\",\"pattern\":"
    "\"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$\",\"description\":\"a unique "
    "name to use instead of the container_id\"},"
    "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":"
    "\"string\"},\"description\":\"environment of every command\"},"
    "\"workdir\":{\"type\":\"string\",\"description\":\"absolute "
    "writable working directory (default /app)\"},"
    "\"network\":{\"type\":\"string\",\"description\":\"none (default); "
    "others only if the operator allows\"},"
    "\"memory_mb\":{\"type\":\"integer\",\"minimum\":16},"
    "\"cpus\":{\"type\":\"number\",\"exclusiveMinimum\":0},"
    "\"pids\":{\"type\":\"integer\",\"minimum\":8},"
    "\"ttl_seconds\":{\"type\":\"integer\",\"minimum\":1,\"description\":"
    "\"lifetime; the sandbox is removed after it\"},"
    "\"detach\":{\"type\":\"boolean\",\"default\":false,\"description\":"
    "\"outlive the client session (up to ttl_seconds and the idle "
    "limit); any other session that names the full container_id takes "
    "it over, also while this one is open\"},"
    "\"egress\":{\"type\":\"array\",\"maxItems\":32,\"items\":{"
    "\"type\":\"string\",\"minLength\":1,\"maxLength\":262},"
    "\"description\":\"hosts the sandbox may reach through its HTTP(S) "
    "proxy, the container itself keeping network none: patterns such as "
    "\\\"pypi.org\\\", \\\"*.pythonhosted.org:443\\\" (names under it, "
    "port 443) or \\\"[::1]:8080\\\", each within what the operator "
    "allows (--egress-allow; none: egress is off on the server); "
    "commands get HTTP_PROXY and HTTPS_PROXY, a refused connection gets "
    "a 403 from the proxy; sandbox_set_egress changes it\"},"
    "\"snapshot\":{\"type\":\"string\",\"description\":\"a "
    "snapshot_id of this session (sandbox_snapshot): the new sandbox is "
    "a fork of it, with its files, image, workdir, env and limits "
    "(arguments given here win, but image and workdir must be the "
    "snapshot's)\"},"
    "\"runtime\":{\"type\":\"string\",\"pattern\":"
    "\"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$\",\"description\":\"the OCI "
    "runtime the sandbox runs under, e.g. runsc (gVisor): only the "
    "server's own (--runtime) or one the operator allows "
    "(--allow-runtime); default: the server's, or for a fork the "
    "snapshot's\"},"
    "\"idempotency_key\":{\"type\":\"string\",\"minLength\":1,"
    "\"maxLength\":128,\"description\":\"a retry with the same key in "
    "the same session gets the same sandbox (also while the first "
    "create still runs) instead of a second one; the same key with "
    "other arguments is refused; free again once that sandbox is "
    "stopped\"},"
    "\"engine\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":256,"
    "\"description\":\"the URL of the engine to place it on (one of "
    "get_sandbox_status's stats.engines), only where the operator allows "
    "it (--allow-engine-choice); default: the engine with the most free "
    "capacity\"}},"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"container_id\":{\"type\":\"string\"},\"name\":{\"type\":\"string\"},"
    "\"image\":{\"type\":\"string\"},\"workdir\":{\"type\":\"string\"},"
    "\"limits\":{\"type\":\"object\",\"properties\":{"
    "\"memory_mb\":{\"type\":\"integer\"},\"cpus\":{\"type\":\"number\"},"
    "\"pids\":{\"type\":\"integer\"},\"workdir_mb\":{\"type\":\"integer\"},"
    "\"tmp_mb\":{\"type\":\"integer\"},\"nofile\":{\"type\":\"integer\"},"
    "\"fsize_mb\":{\"type\":\"integer\"}}},"
    "\"expires_at\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"from_pool\":{\"type\":\"boolean\",\"description\":\"made from "
    "a container of the server's warm pool (--warm-pool)\"},"
    "\"runtime\":{\"type\":\"string\",\"description\":\"the OCI "
    "runtime it runs under (runsc: gVisor); default: the engine's "
    "default runtime, none was named\"},"
    "\"egress\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
    "\"description\":\"its egress allowlist as the server keeps it "
    "(lowercase, canonical; absent: no egress)\"},"
    "\"snapshot_id\":{\"type\":\"string\",\"description\":\"the "
    "snapshot it was forked from\"},"
    "\"restored_files\":{\"type\":\"integer\",\"description\":"
    "\"files, directories and links the fork got from it\"},"
    "\"engine\":{\"type\":\"string\",\"description\":\"the URL of "
    "the engine it is on (when the server has several, --engine)\"}},"
    "\"required\":[\"container_id\",\"name\",\"image\",\"workdir\","
    "\"limits\",\"expires_at\"]}";

static int
valid_name(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > 63)
		return 0;
	for (i = 0; i < n; i++) {
		if ((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9'))
			continue;
		if (i > 0 && strchr("_.-", s[i]) != NULL)
			continue;
		return 0;
	}
	return 1;
}

/* An absolute, normal path that is not a system directory, nor the
 * server's own in every sandbox (/.mcp-sandboxd-*: the agent, its
 * channel), which a tmpfs there would cover. */
static int
tool_initialize_workdir_valid(const char *p)
{
	static const char *const banned[] = {"/proc", "/sys", "/dev", "/tmp",
	    "/etc", "/bin", "/sbin", "/usr", "/lib", "/lib64", "/boot", "/run",
	    "/var/run", NULL};
	size_t i, n;

	if (p[0] != '/' || p[1] == '\0' || strlen(p) > 255 ||
	    strstr(p, "//") != NULL || strstr(p, "/./") != NULL ||
	    strstr(p, "/../") != NULL || p[strlen(p) - 1] == '/' ||
	    strchr(p, ',') != NULL || strchr(p, ':') != NULL)
		return 0;
	n = strlen(p);
	if ((n >= 2 && strcmp(p + n - 2, "/.") == 0) ||
	    (n >= 3 && strcmp(p + n - 3, "/..") == 0))
		return 0;
	if (strncmp(p, "/.mcp-sandboxd", 14) == 0)
		return 0;
	for (i = 0; banned[i] != NULL; i++) {
		n = strlen(banned[i]);
		if (strncmp(p, banned[i], n) == 0 &&
		    (p[n] == '\0' || p[n] == '/'))
			return 0;
	}
	return 1;
}

/* Environment: an object of string values with shell-safe names. */
int
tool_initialize_env_valid(json_object *env, const char **bad)
{
	size_t i;

	json_object_object_foreach(env, k, v)
	{
		*bad = k;
		if (!json_object_is_type(v, json_type_string) || *k == '\0' ||
		    (k[0] >= '0' && k[0] <= '9'))
			return 0;
		for (i = 0; k[i] != '\0'; i++)
			if (!((k[i] >= 'a' && k[i] <= 'z') ||
			        (k[i] >= 'A' && k[i] <= 'Z') ||
			        (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
				return 0;
		if (strlen(json_object_get_string(v)) !=
		    (size_t)json_object_get_string_len(v))
			return 0;
	}
	return 1;
}

/*
 * The OCI runtime a create asks for (NULL: the server's --runtime),
 * checked against the operator's ceiling; -1 when refused (answered).
 */
static int
tool_initialize_runtime(struct call *c, json_object *meta, const char **rt)
{
	const struct config *conf = sup.conf;
	char allowed[512];
	size_t off = 0;
	int i;

	*rt = tool_arg_string(c, "runtime");
	/* A fork runs where its snapshot did, unless the call says. */
	if (*rt == NULL && meta != NULL)
		*rt = snapshot_meta_str(meta, "runtime");
	if (*rt == NULL)
		return 0;
	if (!config_runtime_valid(*rt)) {
		mcp_call_reply(c, tool_error("runtime must be a runtime name "
		                             "(1-%d letters, digits, '.', '_' "
		                             "or '-'), such as runsc",
		                      CONFIG_RUNTIME_MAX));
		return -1;
	}
	if (config_runtime_allowed(conf, *rt))
		return 0;
	allowed[0] = '\0';
	if (conf->runtime != NULL)
		off += (size_t)snprintf(
		    allowed, sizeof allowed, "\"%s\"", conf->runtime);
	for (i = 0; i < conf->allow_runtimes.n && off < sizeof allowed; i++)
		off += (size_t)snprintf(allowed + off, sizeof allowed - off,
		    "%s\"%s\"", off > 0 ? ", " : "", conf->allow_runtimes.v[i]);
	if (allowed[0] == '\0')
		mcp_call_reply(
		    c, tool_error(
		           "runtime \"%s\" is not allowed on this server: "
		           "it allows no runtime to be named (leave runtime "
		           "out: sandboxes run under the engine's default; "
		           "the operator allows runtimes with "
		           "--allow-runtime)",
		           *rt));
	else
		mcp_call_reply(c,
		    tool_error("runtime \"%s\" is not allowed on this server: "
		               "allowed: %s (the operator's --runtime and "
		               "--allow-runtime), or leave runtime out for the "
		               "server's default",
		        *rt, allowed));
	return -1;
}

/* A create's arguments without its idempotency_key (a copy). */
static json_object *
request_sans_key(json_object *args)
{
	json_object *o = NULL;

	if (args == NULL || json_object_deep_copy(args, &o, NULL) != 0)
		return json_object_new_object();
	json_object_object_del(o, "idempotency_key");
	return o;
}

/* Whether a retry asks for what its key's first create asked. */
static int
same_request(json_object *first, json_object *args)
{
	json_object *o = request_sans_key(args);
	int same;

	same = json_object_equal(first, o);
	json_object_put(o);
	return same;
}

/* A fork: its sandbox is up, then the snapshot goes into it. */
struct fork {
	json_object *meta;
	char *id;
};

static void
fork_removed(void *arg, const char *err)
{
	(void)arg;
	(void)err;
}

static void
fork_restored(struct call *c, json_object *res, const char *error, void *arg)
{
	struct fork *f = arg;
	struct sandbox *sb;
	json_object *r, *sc, *v;

	sb = sandbox_find(NULL, f->id);
	if (error != NULL || sb == NULL) {
		mcp_call_reply(c, tool_error("the fork of snapshot %s failed: "
		                             "%s (its sandbox was removed)",
		                      snapshot_meta_str(f->meta, "snapshot_id"),
		                      error != NULL ? error : "it is gone"));
		if (sb != NULL)
			sandbox_destroy(sb, fork_removed, NULL);
	} else {
		r = sandbox_result(sb);
		if (json_object_object_get_ex(r, "structuredContent", &sc)) {
			json_object_object_add(sc, "snapshot_id",
			    json_object_new_string(
			        snapshot_meta_str(f->meta, "snapshot_id")));
			json_object_object_get_ex(res, "files", &v);
			json_object_object_add(
			    sc, "restored_files", json_object_get(v));
		}
		mcp_call_reply(c, r);
	}
	json_object_put(f->meta);
	free(f->id);
	free(f);
}

static void
fork_ready(struct call *c, struct sandbox *sb, const char *err, void *arg)
{
	struct fork *f = arg;
	char why[512];

	if (sb == NULL) {
		mcp_call_reply(c, tool_error("%s", err));
		json_object_put(f->meta);
		free(f);
		return;
	}
	f->id = xstrdup(sb->id);
	if (snapshot_restore(c, sb, json_object_get(f->meta), fork_restored, f,
	        why, sizeof why) == -1)
		fork_restored(c, NULL, why, f);
}

/* The snapshot of a fork's arguments, or NULL (answered) if refused. */
static json_object *
fork_snapshot(struct call *c, const char *id)
{
	json_object *meta;
	const char *v, *given;
	char err[512];

	if ((meta = snapshot_get(c->sess, id, err, sizeof err)) == NULL) {
		mcp_call_reply(c, tool_error("%s", err));
		return NULL;
	}
	v = snapshot_meta_str(meta, "image");
	if ((given = tool_arg_string(c, "image")) != NULL && v != NULL &&
	    strcmp(given, v) != 0) {
		mcp_call_reply(
		    c, tool_error("snapshot %s is of image %s: leave "
		                  "image out to fork it",
		           id, v));
		json_object_put(meta);
		return NULL;
	}
	v = snapshot_meta_str(meta, "workdir");
	if ((given = tool_arg_string(c, "workdir")) != NULL && v != NULL &&
	    strcmp(given, v) != 0) {
		mcp_call_reply(
		    c, tool_error("snapshot %s has workdir %s: leave "
		                  "workdir out to fork it",
		           id, v));
		json_object_put(meta);
		return NULL;
	}
	return meta;
}

static void
sandbox_initialize(struct call *c)
{
	const struct config *conf = sup.conf;
	json_object *env, *v, *egress = NULL;
	struct limits lim = {conf->memory_mb, conf->cpus, conf->pids};
	char *why;
	const char *image, *name, *workdir, *network, *runtime, *bad = "";
	struct sandbox *sb;
	const char *key, *snap, *engine;
	struct sandbox_where where;
	json_object *meta = NULL, *ml;
	struct fork *f;
	long ttl = conf->ttl;
	int detach = 0;

	if (!tool_arg_type_ok(c, "image", json_type_string, NULL) ||
	    !tool_arg_type_ok(c, "name", json_type_string, NULL) ||
	    !tool_arg_type_ok(c, "workdir", json_type_string, NULL) ||
	    !tool_arg_type_ok(c, "network", json_type_string, NULL) ||
	    !tool_arg_type_ok(c, "runtime", json_type_string, NULL) ||
	    !tool_arg_type_ok(c, "engine", json_type_string, NULL) ||
	    !tool_arg_type_ok(c, "env", json_type_object, &env)) {
		mcp_call_reply(
		    c, tool_error(
		           "image, name, workdir, network, runtime and engine "
		           "must be strings; env an object of strings"));
		return;
	}
	/* Where a sandbox runs is the operator's to decide, unless they
	 * leave it to the client. */
	if ((engine = tool_arg_string(c, "engine")) != NULL &&
	    !conf->allow_engine_choice) {
		mcp_call_reply(
		    c, tool_error(
		           "engine cannot be chosen on this server: the "
		           "operator places sandboxes (--allow-engine-choice "
		           "is off); call again without engine"));
		return;
	}
	/*
	 * A retry: the same sandbox, made or still being made; the same key
	 * with other arguments is the client's mistake, not a retry.
	 */
	if ((key = tool_arg_string(c, "idempotency_key")) != NULL &&
	    (sb = sandbox_find_key(c->sess, key)) != NULL) {
		if (!same_request(sb->idem_args, c->args)) {
			mcp_call_reply(
			    c, tool_error("idempotency_key \"%s\" was used for "
			                  "a sandbox_initialize with other "
			                  "arguments (sandbox %.12s)",
			           key, sb->id));
			return;
		}
		if (sandbox_join(sb, c) == 0)
			return;
	}
	if (!tool_arg_type_ok(c, "snapshot", json_type_string, NULL)) {
		mcp_call_reply(c, tool_error("snapshot must be a snapshot_id"));
		return;
	}
	/* A fork: the snapshot's image, workdir, env and limits by default. */
	if ((snap = tool_arg_string(c, "snapshot")) != NULL) {
		/* A retry would join a sandbox not yet filled. */
		if (tool_arg_string(c, "idempotency_key") != NULL) {
			mcp_call_reply(
			    c, tool_error("idempotency_key cannot be "
			                  "given with snapshot: a fork "
			                  "is not retried"));
			return;
		}
		if ((meta = fork_snapshot(c, snap)) == NULL)
			return;
		if (env == NULL && json_object_object_get_ex(meta, "env", &v) &&
		    json_object_is_type(v, json_type_object))
			env = v;
		if (json_object_object_get_ex(meta, "limits", &ml)) {
			if (json_object_object_get_ex(ml, "memory_mb", &v))
				lim.memory_mb = (long)json_object_get_int64(v);
			if (json_object_object_get_ex(ml, "cpus", &v))
				lim.cpus = json_object_get_double(v);
			if (json_object_object_get_ex(ml, "pids", &v))
				lim.pids = (long)json_object_get_int64(v);
		}
	}
	if (tool_initialize_runtime(c, meta, &runtime) == -1)
		goto out;
	where.engine = engine;
	where.runtime = runtime;
	image = tool_arg_string(c, "image");
	if (image == NULL && meta != NULL)
		image = snapshot_meta_str(meta, "image");
	if (image == NULL)
		image = conf->default_image;
	if (*image == '\0' || strlen(image) > 255 ||
	    strpbrk(image, " \t\n\r") != NULL) {
		mcp_call_reply(
		    c, tool_error("image must be an image reference "
		                  "such as python:3.12-slim-bookworm"));
		goto out;
	}
	if ((name = tool_arg_string(c, "name")) != NULL) {
		if (!valid_name(name)) {
			mcp_call_reply(c,
			    tool_error(
			        "name must be 1-63 letters, "
			        "digits, '_', '.' or '-', starting with a letter "
			        "or digit"));
			goto out;
		}
		if (sandbox_find(c->sess, name) != NULL) {
			mcp_call_reply(
			    c, tool_error("a sandbox named \"%s\" "
			                  "exists already; pick another name",
			           name));
			goto out;
		}
	}
	if (env != NULL && !tool_initialize_env_valid(env, &bad)) {
		mcp_call_reply(
		    c, tool_error("env \"%.40s\": names are letters, "
		                  "digits and '_', values strings without NUL",
		           bad));
		goto out;
	}
	workdir = tool_arg_string(c, "workdir");
	if (workdir == NULL && meta != NULL)
		workdir = snapshot_meta_str(meta, "workdir");
	if (workdir == NULL)
		workdir = "/app";
	if (!tool_initialize_workdir_valid(workdir)) {
		mcp_call_reply(c,
		    tool_error(
		        "workdir must be an absolute path "
		        "without '.', '..', ',' or ':' outside system directories "
		        "and the server's own (/.mcp-sandboxd*), such as /app"));
		goto out;
	}
	network = tool_arg_string(c, "network");
	if (network == NULL)
		network = "none";
	if (strcmp(network, "none") != 0) {
		if (strcmp(network, "host") == 0 ||
		    strncmp(network, "container:", 10) == 0) {
			mcp_call_reply(
			    c, tool_error("network \"%.40s\" is never "
			                  "allowed: it shares a namespace",
			           network));
			goto out;
		}
		/* Only the networks the operator named, by exact name. */
		if (!config_list_has(&conf->allow_networks, network)) {
			mcp_call_reply(c,
			    tool_error(
			        "network \"%.40s\" is not allowed on this "
			        "server: use \"none\"%s (the operator names the "
			        "networks clients may use with --allow-network)",
			        network,
			        conf->allow_networks.n > 0
			            ? " or one the operator "
			              "allowed"
			            : ""));
			goto out;
		}
	}
	if (!tool_arg_type_ok(c, "memory_mb", json_type_int, &v)) {
		mcp_call_reply(c, tool_error("memory_mb must be an integer"));
		goto out;
	}
	if (v != NULL)
		lim.memory_mb = (long)json_object_get_int64(v);
	if (lim.memory_mb < 16 || lim.memory_mb > conf->max_memory_mb) {
		mcp_call_reply(
		    c, tool_error("memory_mb must be from 16 to %ld (the "
		                  "operator's ceiling)",
		           conf->max_memory_mb));
		goto out;
	}
	if (!tool_arg_type_ok(c, "cpus", json_type_double, &v)) {
		mcp_call_reply(c, tool_error("cpus must be a number"));
		goto out;
	}
	if (v != NULL)
		lim.cpus = json_object_get_double(v);
	if (!(lim.cpus > 0.0099) || lim.cpus > conf->max_cpus) {
		mcp_call_reply(
		    c, tool_error("cpus must be above 0.01 and at most "
		                  "%g (the operator's ceiling)",
		           conf->max_cpus));
		goto out;
	}
	if (!tool_arg_type_ok(c, "pids", json_type_int, &v)) {
		mcp_call_reply(c, tool_error("pids must be an integer"));
		goto out;
	}
	if (v != NULL)
		lim.pids = (long)json_object_get_int64(v);
	if (lim.pids < 8 || lim.pids > conf->max_pids) {
		mcp_call_reply(c, tool_error("pids must be from 8 to %ld (the "
		                             "operator's ceiling)",
		                      conf->max_pids));
		goto out;
	}
	if (!tool_arg_type_ok(c, "ttl_seconds", json_type_int, &v)) {
		mcp_call_reply(c, tool_error("ttl_seconds must be an integer"));
		goto out;
	}
	if (v != NULL)
		ttl = (long)json_object_get_int64(v);
	if (ttl < 1 || ttl > conf->max_ttl) {
		mcp_call_reply(
		    c, tool_error("ttl_seconds must be from 1 to %ld "
		                  "(the operator's ceiling)",
		           conf->max_ttl));
		goto out;
	}
	if (!tool_arg_type_ok(c, "detach", json_type_boolean, &v)) {
		mcp_call_reply(c, tool_error("detach must be a boolean"));
		goto out;
	}
	if (v != NULL)
		detach = json_object_get_boolean(v);
	/* Its egress list, checked against the operator's (egresslist.c);
	 * an empty one is none. */
	if (json_object_object_get_ex(c->args, "egress", &v) && v != NULL) {
		if ((egress = egresslist_check(conf, v, &why)) == NULL) {
			mcp_call_reply(c, tool_error("%s", why));
			free(why);
			goto out;
		}
		if (json_object_array_length(egress) == 0) {
			json_object_put(egress);
			egress = NULL;
		}
	}
	if (sandbox_count() >= conf->max_sandboxes) {
		json_object_put(egress);
		mcp_call_reply(
		    c, tool_error("too many sandboxes (the limit is "
		                  "%ld): stop one with sandbox_stop first",
		           conf->max_sandboxes));
		goto out;
	}
	/* NULL: refused, and already answered. */
	if (meta != NULL) {
		f = xcalloc(1, sizeof *f);
		f->meta = meta;
		meta = NULL;
		sb = sandbox_create_at(c, image, name, env, workdir, network,
		    &where, &lim, ttl, fork_ready, f);
	} else
		sb = sandbox_create_at(c, image, name, env, workdir, network,
		    &where, &lim, ttl, NULL, NULL);
	if (sb == NULL) {
		json_object_put(egress);
		goto out;
	}
	/* Given to its worker before the call is answered (sandbox.c). */
	sb->egress = egress;
	sb->detach = detach;
	if (key != NULL) {
		sb->idem_key = xstrdup(key);
		sb->idem_args = request_sans_key(c->args);
	}
out:
	json_object_put(meta);
}

const struct tool tool_sandbox_initialize = {
    .name = "sandbox_initialize",
    .title = "Create a sandbox",
    .description = "Create and start an isolated sandbox (a Docker "
                   "container) from an image, hardened: unprivileged user, "
                   "no network, read-only root with a writable workdir and "
                   "/tmp, memory, CPU and process limits. Returns the "
                   "container_id that the other tools take. The sandbox "
                   "is removed when the client session ends, unless "
                   "detach is true: then it lives on up to its lifetime "
                   "(ttl_seconds) and idle limit, and a later session "
                   "takes it over by its full container_id. With egress "
                   "(hosts such as \"pypi.org\", within what the operator "
                   "allows), its commands reach those hosts through an "
                   "HTTP(S) proxy in the sandbox, and nothing else.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = 0,
    .destructive = 0,
    .idempotent = 0,
    .open_world = 0,
    .exec = sandbox_initialize,
};
