/*
 * A sandbox's container as Docker creates it: what the caller asks (image,
 * keep-alive, user, environment, labels, limits, tmpfs mounts) and the
 * hardening every sandbox gets whatever it asks (SPEC.md section 6): no
 * capabilities, no new privileges, the project's own seccomp profile, a
 * read-only root, an init, a private IPC namespace, a capped log.  The
 * only host file it may see is one bound read-only (the agent's binary).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docker.h"
#include "engine.h"
#include "xmalloc.h"

extern const char seccomp_profile[]; /* engine/seccomp.json */

static void
add_ulimit(json_object *a, const char *name, long long v)
{
	json_object *u;

	u = json_object_new_object();
	json_object_object_add(u, "Name", json_object_new_string(name));
	json_object_object_add(u, "Soft", json_object_new_int64(v));
	json_object_object_add(u, "Hard", json_object_new_int64(v));
	json_object_array_add(a, u);
}

static json_object *
strings(const char *const *v)
{
	json_object *a;
	size_t i;

	a = json_object_new_array();
	for (i = 0; v != NULL && v[i] != NULL; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	return a;
}

/* The body of POST /containers/create for spec; the caller puts it. */
json_object *
docker_spec_json(const struct engine_spec *spec)
{
	static const struct docker_spec_opts docker = {NULL, 1, 0};

	return docker_spec_json_opts(spec, &docker);
}

/*
 * The same for an engine that differs (Podman's compatible API: see
 * struct docker_spec_opts and engine/podman.c).
 */
json_object *
docker_spec_json_opts(
    const struct engine_spec *spec, const struct docker_spec_opts *opts)
{
	const struct engine_tmpfs *m;
	json_object *o, *h, *a, *t, *lc;
	char *s, uid[64];
	int i;

	o = json_object_new_object();
	json_object_object_add(o, "Image", json_object_new_string(spec->image));
	json_object_object_add(o, "Entrypoint", strings(spec->cmd));
	json_object_object_add(o, "User", json_object_new_string(spec->user));
	json_object_object_add(
	    o, "WorkingDir", json_object_new_string(spec->workdir));
	json_object_object_add(o, "Env",
	    spec->env != NULL ? json_object_get(spec->env)
	                      : json_object_new_array());
	json_object_object_add(o, "Labels",
	    spec->labels != NULL ? json_object_get(spec->labels)
	                         : json_object_new_object());
	if (strcmp(spec->network, "none") == 0)
		json_object_object_add(
		    o, "NetworkDisabled", json_object_new_boolean(1));

	h = json_object_new_object();
	json_object_object_add(
	    h, "NetworkMode", json_object_new_string(spec->network));
	if (spec->runtime != NULL)
		json_object_object_add(
		    h, "Runtime", json_object_new_string(spec->runtime));
	a = json_object_new_array();
	json_object_array_add(a, json_object_new_string("ALL"));
	json_object_object_add(h, "CapDrop", a);
	a = json_object_new_array();
	json_object_array_add(a, json_object_new_string("no-new-privileges"));
	/* The project's own profile, whatever the engine's default is. */
	xasprintf(&s, "seccomp=%s",
	    opts->seccomp_file != NULL ? opts->seccomp_file : seccomp_profile);
	json_object_array_add(a, json_object_new_string(s));
	free(s);
	json_object_object_add(h, "SecurityOpt", a);
	json_object_object_add(h, "ReadonlyRootfs", json_object_new_boolean(1));
	json_object_object_add(h, "Privileged", json_object_new_boolean(0));
	json_object_object_add(h, "Init", json_object_new_boolean(1));
	json_object_object_add(h, "IpcMode", json_object_new_string("private"));
	t = json_object_new_object();
	for (i = 0; i < spec->ntmpfs; i++) {
		m = &spec->tmpfs[i];
		uid[0] = '\0';
		if (m->uid >= 0 && opts->tmpfs_owner)
			snprintf(uid, sizeof uid, ",uid=%ld,gid=%ld", m->uid,
			    m->uid);
		xasprintf(&s, "rw,nosuid,nodev,%s,size=%ldm%s,mode=%04o",
		    m->exec ? "exec" : "noexec", m->size_mb, uid,
		    (unsigned int)m->mode);
		json_object_object_add(t, m->path, json_object_new_string(s));
		free(s);
	}
	json_object_object_add(h, "Tmpfs", t);
	if (spec->nbinds > 0) {
		a = json_object_new_array();
		for (i = 0; i < spec->nbinds; i++) {
			t = json_object_new_object();
			json_object_object_add(
			    t, "Type", json_object_new_string("bind"));
			json_object_object_add(t, "Source",
			    json_object_new_string(spec->binds[i].source));
			json_object_object_add(t, "Target",
			    json_object_new_string(spec->binds[i].target));
			json_object_object_add(
			    t, "ReadOnly", json_object_new_boolean(1));
			json_object_array_add(a, t);
		}
		json_object_object_add(h, "Mounts", a);
	}
	json_object_object_add(
	    h, "Memory", json_object_new_int64(spec->memory_bytes));
	json_object_object_add(
	    h, "MemorySwap", json_object_new_int64(spec->memory_bytes));
	json_object_object_add(h, "NanoCpus",
	    json_object_new_int64((long long)(spec->cpus * 1e9)));
	json_object_object_add(
	    h, "PidsLimit", json_object_new_int64(spec->pids));
	a = json_object_new_array();
	add_ulimit(a, "nofile", spec->nofile);
	add_ulimit(a, "fsize", spec->fsize_bytes);
	if (opts->nproc > 0)
		add_ulimit(a, "nproc", opts->nproc);
	json_object_object_add(h, "Ulimits", a);
	lc = json_object_new_object();
	json_object_object_add(lc, "Type", json_object_new_string("json-file"));
	t = json_object_new_object();
	json_object_object_add(t, "max-size", json_object_new_string("1m"));
	json_object_object_add(t, "max-file", json_object_new_string("1"));
	json_object_object_add(lc, "Config", t);
	json_object_object_add(h, "LogConfig", lc);
	json_object_object_add(o, "HostConfig", h);
	return o;
}
