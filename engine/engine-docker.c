/*
 * The Docker backend: each operation of engine.h as a Docker Engine API
 * request (docker.c, docker-hijack.c), and its answer turned into what
 * engine.h promises.  Every endpoint path of the server is spelt here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "demux.h"
#include "docker.h"
#include "engine-int.h"
#include "log.h"
#include "podman.h"
#include "xmalloc.h"

/* Of a helper's output that nobody reads (the sandbox can write to it). */
#define ED_DISCARD_KEEP (64 * 1024)
#define ED_PULL_TAIL 2048
#define ED_MALFORMED "malformed answer from the Docker engine"

/* What an answer is parsed into. */
enum ed_kind {
	ED_PLAIN,
	ED_CREATE,
	ED_INSPECT,
	ED_LIST,
	ED_STATS,
	ED_IMAGE,
	ED_PULL,
	ED_EXEC_INSPECT,
	ED_STREAM, /* logs, exec output */
	ED_EVENTS,
	ED_START /* then the tmpfs owners Podman could not set at create */
};

/* Per request: what its stream or its answer needs. */
struct ed_state {
	struct demux demux;
	int held; /* output refused while paused: the stream is paused */
	json_tokener *tok; /* events */
	char tail[ED_PULL_TAIL]; /* the end of a pull's answer */
	size_t tail_len;
	struct engine_container *list;
	json_object *volumes;
	char *why;
	/* A create: its path, Docker's body and Podman's (NULL: cannot be
	 * made; why says why), until the engine is known; the tmpfs owners
	 * to keep once the id is; a start: the id and the next owner. */
	char *path;
	json_object *body, *pbody;
	struct podman_owners *owners;
	char *cid;
	int next;
};

static struct docker *
ed(struct engine_req *req)
{
	return req->eng->state;
}

static struct ed_state *
ed_state(struct engine_req *req, int kind)
{
	struct ed_state *st;

	st = xcalloc(1, sizeof *st);
	demux_init(&st->demux);
	req->state = st;
	req->kind = kind;
	return st;
}

static void
ed_state_free(struct ed_state *st)
{
	if (st == NULL)
		return;
	if (st->tok != NULL)
		json_tokener_free(st->tok);
	free(st->list);
	json_object_put(st->volumes);
	free(st->why);
	free(st->path);
	json_object_put(st->body);
	json_object_put(st->pbody);
	podman_owners_free(st->owners);
	free(st->cid);
	free(st);
}

static const char *
ed_str(json_object *o, const char *key)
{
	json_object *v;

	if (o != NULL && json_object_object_get_ex(o, key, &v) &&
	    json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return NULL;
}

/* One container inspection's answer: 0, or -1 if it is not one. */
static int
ed_parse_container(json_object *o, struct engine_container *c)
{
	json_object *state, *hc = NULL, *cfg, *v;

	memset(c, 0, sizeof *c);
	c->exit_code = -1;
	if (o == NULL || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "State", &state) ||
	    !json_object_is_type(state, json_type_object))
		return -1;
	c->id = ed_str(o, "Id");
	c->status = ed_str(state, "Status");
	c->running = json_object_object_get_ex(state, "Running", &v) &&
	             json_object_get_boolean(v);
	if (json_object_object_get_ex(state, "Pid", &v))
		c->pid = json_object_get_int64(v);
	if (json_object_object_get_ex(state, "ExitCode", &v) &&
	    json_object_is_type(v, json_type_int) && !c->running)
		c->exit_code = (long)json_object_get_int64(v);
	c->oom_killed = json_object_object_get_ex(state, "OOMKilled", &v) &&
	                json_object_get_boolean(v);
	if (json_object_object_get_ex(o, "HostConfig", &hc) &&
	    json_object_object_get_ex(hc, "PidsLimit", &v))
		c->pids_limit = json_object_get_int64(v);
	if (hc != NULL && json_object_object_get_ex(hc, "Memory", &v))
		c->memory_limit = json_object_get_int64(v);
	if (hc != NULL && json_object_object_get_ex(hc, "NanoCpus", &v))
		c->nano_cpus = json_object_get_int64(v);
	c->paused = json_object_object_get_ex(state, "Paused", &v) &&
	            json_object_get_boolean(v);
	if (json_object_object_get_ex(o, "Config", &cfg) &&
	    json_object_object_get_ex(cfg, "Labels", &v) &&
	    json_object_is_type(v, json_type_object))
		c->labels = v;
	if (json_object_object_get_ex(o, "Mounts", &v) &&
	    json_object_is_type(v, json_type_array))
		c->mounts = v;
	return 0;
}

/* A listing: the entries that have an id. */
static void
ed_parse_list(json_object *a, struct ed_state *st, struct engine_resp *resp)
{
	struct engine_container *c;
	json_object *o, *v;
	size_t i, n;

	n = json_object_array_length(a);
	st->list = xcalloc(n + 1, sizeof *st->list);
	for (i = 0; i < n; i++) {
		o = json_object_array_get_idx(a, i);
		c = &st->list[resp->nlist];
		memset(c, 0, sizeof *c);
		c->exit_code = -1;
		if ((c->id = ed_str(o, "Id")) == NULL)
			continue;
		c->status = ed_str(o, "State");
		c->running =
		    c->status != NULL && strcmp(c->status, "running") == 0;
		if (json_object_object_get_ex(o, "Labels", &v) &&
		    json_object_is_type(v, json_type_object))
			c->labels = v;
		if (json_object_object_get_ex(o, "Created", &v) &&
		    json_object_is_type(v, json_type_int))
			c->created = json_object_get_int64(v);
		resp->nlist++;
	}
	resp->list = st->list;
}

/*
 * The engine's own reason a pull failed, from the end of its answer: the
 * last JSON line's "error" (a stream that began), else its "message" (a
 * refusal at once).  A copy, or NULL.
 */
static char *
ed_pull_reason(const char *tail)
{
	json_object *o, *v;
	const char *line, *end;
	char *why = NULL, *buf;

	end = tail + strlen(tail);
	while (why == NULL && end > tail) {
		while (end > tail && (end[-1] == '\n' || end[-1] == '\r'))
			end--;
		for (line = end; line > tail && line[-1] != '\n'; line--)
			;
		if (line == end)
			break;
		buf = xstrndup(line, (size_t)(end - line));
		if ((o = json_tokener_parse(buf)) != NULL &&
		    json_object_is_type(o, json_type_object) &&
		    ((json_object_object_get_ex(o, "error", &v) &&
		         json_object_is_type(v, json_type_string)) ||
		        (json_object_object_get_ex(o, "message", &v) &&
		            json_object_is_type(v, json_type_string))))
			why = xstrdup(json_object_get_string(v));
		json_object_put(o);
		free(buf);
		end = line;
	}
	return why;
}

/* Docker answered: what engine.h says of it, to the caller. */
static void
ed_done(const struct docker_resp *dr, void *arg)
{
	struct engine_req *req = arg;
	struct ed_state *st = req->state;
	struct engine_resp resp;
	struct engine_container c;
	struct engine_stats stats;
	struct engine_image image;
	json_object *o, *cfg, *vols, *v;

	req->impl = NULL;
	engine_resp_init(&resp);
	resp.error = dr->error;
	resp.notfound = dr->status == 404;
	resp.unchanged = dr->status == 304;
	switch (req->kind) {
	case ED_CREATE:
		if (dr->error == NULL)
			resp.id = ed_str(dr->json, "Id");
		/* Podman: the owners its tmpfs mounts could not be given. */
		if (resp.id != NULL && st->owners != NULL &&
		    docker_libpod(ed(req)) == 1) {
			podman_owners_keep(st->owners, ed(req), resp.id);
			st->owners = NULL;
		}
		break;
	case ED_INSPECT:
		if (dr->error == NULL) {
			if (ed_parse_container(dr->json, &c) == 0)
				resp.container = &c;
			else
				resp.error = ED_MALFORMED;
		}
		break;
	case ED_LIST:
		if (dr->error == NULL) {
			if (dr->json != NULL &&
			    json_object_is_type(dr->json, json_type_array))
				ed_parse_list(dr->json, st, &resp);
			else
				resp.error = ED_MALFORMED;
		}
		break;
	case ED_STATS:
		if (dr->json != NULL &&
		    json_object_is_type(dr->json, json_type_object)) {
			memset(&stats, 0, sizeof stats);
			if (json_object_object_get_ex(
			        dr->json, "memory_stats", &o) &&
			    json_object_object_get_ex(o, "usage", &v)) {
				stats.have_memory = 1;
				stats.memory_bytes = json_object_get_int64(v);
			}
			if (json_object_object_get_ex(
			        dr->json, "pids_stats", &o) &&
			    json_object_object_get_ex(o, "current", &v)) {
				stats.have_pids = 1;
				stats.pids = json_object_get_int64(v);
			}
			if (json_object_object_get_ex(
			        dr->json, "cpu_stats", &o) &&
			    json_object_object_get_ex(o, "cpu_usage", &o) &&
			    json_object_object_get_ex(o, "total_usage", &v) &&
			    json_object_is_type(v, json_type_int)) {
				stats.have_cpu = 1;
				stats.cpu_ns = json_object_get_int64(v);
			}
			resp.stats = &stats;
		}
		break;
	case ED_IMAGE:
		if (dr->error != NULL)
			break;
		if (dr->json == NULL ||
		    !json_object_is_type(dr->json, json_type_object)) {
			resp.error = "no image details";
			break;
		}
		st->volumes = json_object_new_array();
		if (json_object_object_get_ex(dr->json, "Config", &cfg) &&
		    json_object_object_get_ex(cfg, "Volumes", &vols) &&
		    json_object_is_type(vols, json_type_object)) {
			json_object_object_foreach(vols, k, val)
			{
				(void)val;
				json_object_array_add(
				    st->volumes, json_object_new_string(k));
			}
		}
		image.volumes = st->volumes;
		resp.image = &image;
		break;
	case ED_PULL:
		/* A refused pull answers 500 with the reason as the body; a
		 * pull that failed later answers 200 with the reason in the
		 * stream. */
		if (dr->error != NULL ||
		    strstr(st->tail, "\"error\"") != NULL) {
			st->why = ed_pull_reason(st->tail);
			resp.error = st->why != NULL ? st->why
			             : dr->error != NULL
			                 ? dr->error
			                 : "the engine gave no reason";
		}
		break;
	case ED_EXEC_INSPECT:
		if (dr->error != NULL)
			break;
		if (dr->json == NULL ||
		    !json_object_is_type(dr->json, json_type_object))
			resp.error = ED_MALFORMED;
		else if (json_object_object_get_ex(dr->json, "ExitCode", &v) &&
		         json_object_is_type(v, json_type_int))
			resp.exit_code = (long)json_object_get_int64(v);
		break;
	}
	req->state = NULL;
	engine_req_finish(req, &resp);
	ed_state_free(st);
}

static void
ed_call(struct engine_req *req, int kind, const char *method, const char *path,
    json_object *body)
{
	ed_state(req, kind);
	req->impl = docker_call(ed(req), method, path, body, ed_done, req);
}

static int
ed_out(int stream, const char *p, size_t len, void *arg)
{
	struct engine_req *req = arg;

	if (stream == DEMUX_STDIN || req->output == NULL)
		return 0;
	req->output(stream == DEMUX_STDERR ? ENGINE_STDERR : ENGINE_STDOUT, p,
	    len, req->arg);
	return 0;
}

/* Multiplexed output; a chunk that comes while paused pauses the stream. */
static int
ed_stream_data(const char *p, size_t len, void *arg)
{
	struct engine_req *req = arg;
	struct ed_state *st = req->state;

	if (req->paused) {
		st->held = 1;
		return 1;
	}
	if (demux_feed(&st->demux, p, len, ed_out, req) == -1) {
		log_warnx("%s: bad stream from the engine", __func__);
		return -1;
	}
	return 0;
}

static int
ed_pull_data(const char *p, size_t len, void *arg)
{
	struct engine_req *req = arg;
	struct ed_state *st = req->state;
	size_t keep = sizeof st->tail - 1;

	if (len >= keep) {
		memcpy(st->tail, p + len - keep, keep);
		st->tail_len = keep;
	} else {
		if (st->tail_len + len > keep) {
			memmove(st->tail,
			    st->tail + (st->tail_len + len - keep), keep - len);
			st->tail_len = keep - len;
		}
		memcpy(st->tail + st->tail_len, p, len);
		st->tail_len += len;
	}
	st->tail[st->tail_len] = '\0';
	return 0;
}

/* Events, one JSON object after another (a newline between them). */
static int
ed_events_data(const char *p, size_t len, void *arg)
{
	struct engine_req *req = arg;
	struct ed_state *st = req->state;
	json_object *e, *action;
	enum json_tokener_error jerr;
	size_t used;

	while (len > 0) {
		e = json_tokener_parse_ex(st->tok, p, (int)len);
		jerr = json_tokener_get_error(st->tok);
		if (jerr == json_tokener_continue)
			return 0;
		used = json_tokener_get_parse_end(st->tok);
		json_tokener_reset(st->tok);
		if (e == NULL) {
			log_warnx("%s: bad event from the engine", __func__);
			return -1;
		}
		if (json_object_object_get_ex(e, "Action", &action) &&
		    req->event != NULL)
			req->event(json_object_get_string(action), req->arg);
		json_object_put(e);
		while (used < len && (p[used] == '\n' || p[used] == '\r'))
			used++;
		p += used;
		len -= used;
	}
	return 0;
}

static void
ed_sent(size_t n, void *arg)
{
	struct engine_req *req = arg;

	if (req->sent != NULL)
		req->sent(n, req->arg);
}

/* The engine is on this host: a socket, or TCP to a loopback address. */
static int
ed_local(const char *host)
{
	static const char *const loop[] = {
	    "tcp://127.", "tcp://localhost:", "tcp://[::1]:", NULL};
	size_t i;

	if (strncmp(host, "unix://", 7) == 0)
		return 1;
	for (i = 0; loop[i] != NULL; i++)
		if (strncmp(host, loop[i], strlen(loop[i])) == 0)
			return 1;
	return 0;
}

static void *
ed_open(
    struct event_base *base, const char *host, const char *tls, int *supports)
{
	struct docker *d;

	if ((d = docker_new(base, host, tls)) == NULL)
		return NULL;
	*supports = ENGINE_EXEC_STDIN | ENGINE_UPDATE;
	if (ed_local(host))
		*supports |= ENGINE_CGROUPS;
	return d;
}

/*
 * Once /_ping said the engine is Podman's service: ENGINE_LIBPOD, and no
 * ENGINE_UPDATE (its compatible API has no /containers/{id}/update: 404
 * "Not Found" from 4.3).
 */
static int
ed_supports(void *state, int bits)
{
	if (docker_libpod(state) == 1) {
		bits |= ENGINE_LIBPOD;
		bits &= ~ENGINE_UPDATE;
	}
	return bits;
}

static void
ed_close(void *state)
{
	podman_owners_drop_key(state);
	docker_free(state);
}

static int
ed_global_init(const char *host)
{
	return curl_global_init(docker_global_flags(host)) == 0 ? 0 : -1;
}

static void
ed_global_cleanup(void)
{
	curl_global_cleanup();
}

static const char *
ed_api_version(void *state)
{
	return docker_api_version(state);
}

static void
ed_ping(struct engine_req *req)
{
	ed_call(req, ED_PLAIN, "GET", "/_ping", NULL);
}

/* "/containers/<id><rest>", the id escaped. */
static char *
ed_cpath(const char *id, const char *rest)
{
	char *esc, *path;

	esc = docker_escape(id);
	xasprintf(&path, "/containers/%s%s", esc, rest);
	free(esc);
	return path;
}

/* A call on "/containers/<id><rest>" (body, if any, is borrowed). */
static void
ed_ccall(struct engine_req *req, int kind, const char *method, const char *id,
    const char *rest, json_object *body)
{
	char *path = ed_cpath(id, rest);

	ed_call(req, kind, method, path, body);
	free(path);
}

/* The create, once the engine is known: Docker's body or Podman's. */
static void
ed_create_send(struct engine_req *req)
{
	struct ed_state *st = req->state;
	struct engine_resp resp;
	json_object *body = st->body;

	if (docker_libpod(ed(req)) == 1) {
		if ((body = st->pbody) == NULL) {
			engine_resp_init(&resp);
			resp.error = st->why;
			req->state = NULL;
			engine_req_finish(req, &resp);
			ed_state_free(st);
			return;
		}
	}
	req->impl = docker_call(ed(req), "POST", st->path, body, ed_done, req);
}

/* The engine answered /_ping (or did not: the create fails as it would). */
static void
ed_create_pinged(const struct docker_resp *dr, void *arg)
{
	struct engine_req *req = arg;

	req->impl = NULL;
	if (dr->error != NULL) {
		ed_done(dr, arg);
		return;
	}
	ed_create_send(req);
}

/*
 * Podman's body for spec (ed_state: why, if it cannot be made): the
 * profile as a file, no tmpfs owner (set after the start), an nproc
 * ulimit (engine/podman.c).
 */
static void
ed_create_podman(struct engine_req *req, const struct engine_spec *spec)
{
	struct ed_state *st = req->state;
	struct docker_spec_opts opts = {NULL, 0, 0};
	char *file;

	/* The file is this host's: a remote service cannot open it. */
	if (!engine_supports(req->eng, ENGINE_CGROUPS)) {
		st->why = xstrdup(
		    "Podman's compatible API takes the seccomp profile only as "
		    "a file on its own host, and this engine is not on the "
		    "server's host: run the server beside Podman (its unix "
		    "socket), or use a Docker engine");
		return;
	}
	if ((file = podman_seccomp_file(req->eng->dir)) == NULL) {
		xasprintf(&st->why,
		    "cannot give Podman the seccomp profile: it takes a file, "
		    "and none could be written in the server's private "
		    "directory (%s)",
		    req->eng->dir != NULL ? strerror(errno) : "none");
		return;
	}
	opts.seccomp_file = file;
	opts.nproc = podman_nproc_here();
	st->pbody = docker_spec_json_opts(spec, &opts);
	st->owners = podman_owners_new(spec);
	free(file);
}

static void
ed_container_create(struct engine_req *req, const struct engine_spec *spec)
{
	struct ed_state *st;
	char *esc;
	int libpod = docker_libpod(ed(req));

	st = ed_state(req, ED_CREATE);
	if (spec->name != NULL) {
		esc = docker_escape(spec->name);
		xasprintf(&st->path, "/containers/create?name=%s", esc);
		free(esc);
	} else
		st->path = xstrdup("/containers/create");
	if (libpod != 1)
		st->body = docker_spec_json(spec);
	if (libpod != 0)
		ed_create_podman(req, spec);
	/* Which body is right is known once the engine was asked. */
	if (libpod == -1)
		req->impl = docker_call(
		    ed(req), "GET", "/_ping", NULL, ed_create_pinged, req);
	else
		ed_create_send(req);
}

/*
 * The start answered, or the last owner's archive: put the next owner's
 * (Podman's tmpfs mounts, podman.c), or answer.
 */
static void
ed_start_owners(const struct docker_resp *dr, void *arg)
{
	struct engine_req *req = arg;
	struct ed_state *st = req->state;
	const struct podman_owners *set;
	struct docker_resp failed;
	const char *mount, *why;
	char *path, *esc;
	size_t len;
	void *tar;

	req->impl = NULL;
	/* Looked up again each time: a removal may have dropped it. */
	set = podman_owners_find(st->cid);
	if (dr->error != NULL && st->next > 0) {
		why = dr->error;
		goto fail;
	}
	if (dr->error != NULL || st->next >= podman_owners_count(set)) {
		ed_done(dr, arg);
		return;
	}
	if (podman_owners_tar(set, st->next, &mount, &tar, &len) == -1) {
		why = "cannot make its archive";
		goto fail;
	}
	st->next++;
	esc = docker_escape(mount);
	xasprintf(&path, "%s/archive?path=%s", st->path, esc);
	req->impl = docker_call_raw(ed(req), "PUT", path, "application/x-tar",
	    tar, len, ed_start_owners, req);
	free(path);
	free(esc);
	free(tar);
	return;
fail:
	failed = *dr;
	xasprintf(&st->why,
	    "the container started, but a mount could not be given to the "
	    "sandbox user: %s",
	    why);
	failed.error = st->why;
	ed_done(&failed, arg);
}

static void
ed_container_start(struct engine_req *req, const char *id)
{
	struct ed_state *st;
	char *path;

	if (podman_owners_find(id) == NULL) {
		ed_ccall(req, ED_PLAIN, "POST", id, "/start", NULL);
		return;
	}
	st = ed_state(req, ED_START);
	st->cid = xstrdup(id);
	st->path = ed_cpath(id, "");
	xasprintf(&path, "%s/start", st->path);
	req->impl =
	    docker_call(ed(req), "POST", path, NULL, ed_start_owners, req);
	free(path);
}

static void
ed_container_stop(struct engine_req *req, const char *id, int grace)
{
	char rest[32];

	snprintf(rest, sizeof rest, "/stop?t=%d", grace);
	ed_ccall(req, ED_PLAIN, "POST", id, rest, NULL);
}

static void
ed_container_remove(struct engine_req *req, const char *id)
{
	podman_owners_drop(id);
	ed_ccall(req, ED_PLAIN, "DELETE", id, "?v=1&force=1", NULL);
}

static void
ed_container_inspect(struct engine_req *req, const char *id)
{
	ed_ccall(req, ED_INSPECT, "GET", id, "/json", NULL);
}

static void
ed_container_stats(struct engine_req *req, const char *id)
{
	ed_ccall(req, ED_STATS, "GET", id, "/stats?stream=false&one-shot=true",
	    NULL);
}

/* A query's filters=: {"<key>":[values...]}, escaped. */
static char *
ed_filters(const char *key, const char *const *values, const char *key2,
    const char *const *values2)
{
	json_object *f, *a;
	char *esc;
	size_t i;

	f = json_object_new_object();
	a = json_object_new_array();
	for (i = 0; values[i] != NULL; i++)
		json_object_array_add(a, json_object_new_string(values[i]));
	json_object_object_add(f, key, a);
	if (key2 != NULL) {
		a = json_object_new_array();
		for (i = 0; values2[i] != NULL; i++)
			json_object_array_add(
			    a, json_object_new_string(values2[i]));
		json_object_object_add(f, key2, a);
	}
	esc = docker_escape(json_object_to_json_string_ext(
	    f, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(f);
	return esc;
}

static void
ed_container_list(struct engine_req *req, const char *label)
{
	const char *labels[] = {label, NULL};
	char *esc, *path;

	esc = ed_filters("label", labels, NULL, NULL);
	xasprintf(&path, "/containers/json?all=1&filters=%s", esc);
	ed_call(req, ED_LIST, "GET", path, NULL);
	free(path);
	free(esc);
}

static void
ed_container_update_pids(struct engine_req *req, const char *id, long long n)
{
	json_object *body;

	body = json_object_new_object();
	json_object_object_add(body, "PidsLimit", json_object_new_int64(n));
	ed_ccall(req, ED_PLAIN, "POST", id, "/update", body);
	json_object_put(body);
}

static void
ed_container_update(
    struct engine_req *req, const char *id, const struct engine_limits *lim)
{
	json_object *body;

	body = json_object_new_object();
	if (lim->memory_bytes > 0) {
		json_object_object_add(
		    body, "Memory", json_object_new_int64(lim->memory_bytes));
		json_object_object_add(body, "MemorySwap",
		    json_object_new_int64(lim->memory_bytes));
	}
	if (lim->cpus > 0)
		json_object_object_add(body, "NanoCpus",
		    json_object_new_int64((long long)(lim->cpus * 1e9)));
	if (lim->pids > 0)
		json_object_object_add(
		    body, "PidsLimit", json_object_new_int64(lim->pids));
	ed_ccall(req, ED_PLAIN, "POST", id, "/update", body);
	json_object_put(body);
}

static void
ed_container_rename(struct engine_req *req, const char *id, const char *name)
{
	char *esc, *rest;

	esc = docker_escape(name);
	xasprintf(&rest, "/rename?name=%s", esc);
	ed_ccall(req, ED_PLAIN, "POST", id, rest, NULL);
	free(rest);
	free(esc);
}

static void
ed_container_pause(struct engine_req *req, const char *id, int pause)
{
	ed_ccall(
	    req, ED_PLAIN, "POST", id, pause ? "/pause" : "/unpause", NULL);
}

static void
ed_container_logs(struct engine_req *req, const char *id)
{
	char *path = ed_cpath(id, "/logs?follow=1&stdout=1&stderr=1");

	ed_state(req, ED_STREAM);
	req->impl = docker_stream(
	    ed(req), "GET", path, NULL, ed_stream_data, ed_done, req);
	free(path);
}

static void
ed_container_events(
    struct engine_req *req, const char *id, const char *const *actions)
{
	const char *ids[] = {id, NULL};
	struct ed_state *st;
	char *esc, *path;

	st = ed_state(req, ED_EVENTS);
	st->tok = json_tokener_new_ex(16);
	esc = ed_filters("container", ids, "event", actions);
	xasprintf(&path, "/events?filters=%s", esc);
	req->impl = docker_stream(
	    ed(req), "GET", path, NULL, ed_events_data, ed_done, req);
	free(path);
	free(esc);
}

static void
ed_image_inspect(struct engine_req *req, const char *image)
{
	char *path;

	/* The reference as it is (sandbox.c allows only what a path can
	 * carry): a name's '/' is the engine's to read. */
	xasprintf(&path, "/images/%s/json", image);
	ed_call(req, ED_IMAGE, "GET", path, NULL);
	free(path);
}

static void
ed_image_pull(struct engine_req *req, const char *image)
{
	char *path, *img, *tag = NULL, *slash, *colon, *eimg, *etag;

	img = xstrdup(image);
	slash = strrchr(img, '/');
	colon = strrchr(img, ':');
	if (strchr(img, '@') == NULL && colon != NULL &&
	    (slash == NULL || colon > slash)) {
		*colon = '\0';
		tag = colon + 1;
	}
	eimg = docker_escape(img);
	etag = docker_escape(tag != NULL ? tag : "latest");
	if (strchr(image, '@') != NULL)
		xasprintf(&path, "/images/create?fromImage=%s", eimg);
	else
		xasprintf(
		    &path, "/images/create?fromImage=%s&tag=%s", eimg, etag);
	ed_state(req, ED_PULL);
	req->impl = docker_stream(
	    ed(req), "POST", path, NULL, ed_pull_data, ed_done, req);
	free(path);
	free(eimg);
	free(etag);
	free(img);
}

static void
ed_exec_create(
    struct engine_req *req, const char *id, const struct engine_exec_spec *spec)
{
	json_object *body, *a;
	char *path;
	size_t i;

	body = json_object_new_object();
	a = json_object_new_array();
	for (i = 0; spec->argv[i] != NULL; i++)
		json_object_array_add(a, json_object_new_string(spec->argv[i]));
	json_object_object_add(body, "Cmd", a);
	json_object_object_add(
	    body, "User", json_object_new_string(spec->user));
	if (spec->stdin)
		json_object_object_add(
		    body, "AttachStdin", json_object_new_boolean(1));
	json_object_object_add(
	    body, "AttachStdout", json_object_new_boolean(1));
	json_object_object_add(
	    body, "AttachStderr", json_object_new_boolean(1));
	if (spec->workdir != NULL)
		json_object_object_add(
		    body, "WorkingDir", json_object_new_string(spec->workdir));
	if (spec->env != NULL) {
		a = json_object_new_array();
		for (i = 0; spec->env[i] != NULL; i++)
			json_object_array_add(
			    a, json_object_new_string(spec->env[i]));
		json_object_object_add(body, "Env", a);
	}
	path = ed_cpath(id, "/exec");
	ed_call(req, ED_CREATE, "POST", path, body);
	free(path);
	json_object_put(body);
}

/*
 * Start an exec: its output streamed (with input, over a hijacked
 * connection), or, when nobody reads it, a plain call that keeps a little
 * of it and is bounded in time like any call.
 */
static void
ed_exec_start(struct engine_req *req, const char *exec_id, int input)
{
	json_object *body;
	char *esc, *path;

	body = json_object_new_object();
	json_object_object_add(body, "Detach", json_object_new_boolean(0));
	json_object_object_add(body, "Tty", json_object_new_boolean(0));
	esc = docker_escape(exec_id);
	xasprintf(&path, "/exec/%s/start", esc);
	free(esc);
	ed_state(req, ED_STREAM);
	if (input) {
		req->impl = docker_hijack(
		    ed(req), path, body, ed_stream_data, ed_done, req);
		docker_req_on_sent(req->impl, ed_sent);
	} else if (req->output != NULL)
		req->impl = docker_stream(
		    ed(req), "POST", path, body, ed_stream_data, ed_done, req);
	else
		req->impl = docker_call_capped(
		    ed(req), "POST", path, body, ED_DISCARD_KEEP, ed_done, req);
	json_object_put(body);
	free(path);
}

static void
ed_exec_inspect(struct engine_req *req, const char *exec_id)
{
	char *esc, *path;

	esc = docker_escape(exec_id);
	xasprintf(&path, "/exec/%s/json", esc);
	free(esc);
	ed_call(req, ED_EXEC_INSPECT, "GET", path, NULL);
	free(path);
}

static void
ed_cancel(struct engine_req *req)
{
	if (req->impl != NULL)
		docker_req_cancel(req->impl);
	req->impl = NULL;
	ed_state_free(req->state);
	req->state = NULL;
}

static void
ed_write(struct engine_req *req, const void *p, size_t len)
{
	if (req->impl != NULL)
		docker_req_write(req->impl, p, len);
}

static void
ed_close_write(struct engine_req *req)
{
	if (req->impl != NULL)
		docker_req_close_write(req->impl);
}

/* Resuming redelivers what was refused: not from a stream's callback. */
static void
ed_pause(struct engine_req *req, int pause)
{
	struct ed_state *st = req->state;

	req->paused = pause;
	if (!pause && st != NULL && st->held && req->impl != NULL) {
		st->held = 0;
		docker_req_pause(req->impl, 0);
	}
}

const struct engine_ops engine_docker_ops = {
    .name = "docker",
    .open = ed_open,
    .close = ed_close,
    .global_init = ed_global_init,
    .global_cleanup = ed_global_cleanup,
    .api_version = ed_api_version,
    .supports = ed_supports,
    .ping = ed_ping,
    .container_create = ed_container_create,
    .container_start = ed_container_start,
    .container_stop = ed_container_stop,
    .container_remove = ed_container_remove,
    .container_inspect = ed_container_inspect,
    .container_stats = ed_container_stats,
    .container_list = ed_container_list,
    .container_update_pids = ed_container_update_pids,
    .container_update = ed_container_update,
    .container_rename = ed_container_rename,
    .container_pause = ed_container_pause,
    .container_logs = ed_container_logs,
    .container_events = ed_container_events,
    .image_inspect = ed_image_inspect,
    .image_pull = ed_image_pull,
    .exec_create = ed_exec_create,
    .exec_start = ed_exec_start,
    .exec_inspect = ed_exec_inspect,
    .cancel = ed_cancel,
    .write = ed_write,
    .close_write = ed_close_write,
    .pause = ed_pause,
};
