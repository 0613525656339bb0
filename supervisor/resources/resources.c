/*
 * MCP resources: each sandbox's activity log (containers://{id}/logs,
 * subscribable), the full outputs of its execs
 * (sandbox://{id}/exec/{n}/stdout and .../stderr, read in pages with
 * ?offset=&length=), its files (sandbox://{id}/files/{path}, read in
 * the sandbox by the run layer), and the server's statistics
 * (sandbox://stats).
 * Modules outside the server proper (the conformance fixtures) may add
 * resources of their own URI prefix with resources_register(); the real
 * server registers none.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "base64.h"
#include "core.h"
#include "imgsig.h"
#include "log.h"
#include "mcp.h"
#include "proto.h"
#include "resources.h"
#include "run.h"
#include "sandbox.h"
#include "spool.h"
#include "utf8.h"
#include "xmalloc.h"

#define RESOURCE_NOT_FOUND (-32002)
#define PAGE_DEFAULT (64 * 1024)
#define PAGE_MAX (1024 * 1024)
#define PROVIDERS_MAX 8

static const struct resource_provider *providers[PROVIDERS_MAX];
static int nproviders;

/* Add a provider (not copied; it must outlive the server); -1 if full. */
int
resources_register(const struct resource_provider *p)
{
	if (nproviders == PROVIDERS_MAX) {
		errno = ENOSPC;
		return -1;
	}
	providers[nproviders++] = p;
	return 0;
}

/* The registered provider whose prefix the URI has, or NULL. */
static const struct resource_provider *
provider_of(const char *uri)
{
	int i;

	for (i = 0; i < nproviders; i++)
		if (strncmp(uri, providers[i]->prefix,
		        strlen(providers[i]->prefix)) == 0)
			return providers[i];
	return NULL;
}

static json_object *
resource_template(
    const char *uri, const char *name, const char *desc, const char *mime)
{
	json_object *t;

	t = json_object_new_object();
	json_object_object_add(t, "uriTemplate", json_object_new_string(uri));
	json_object_object_add(t, "name", json_object_new_string(name));
	json_object_object_add(t, "description", json_object_new_string(desc));
	json_object_object_add(t, "mimeType", json_object_new_string(mime));
	return t;
}

static json_object *
resources_templates(struct session *sess, json_object *id, json_object *params,
    int *code, const char **why)
{
	json_object *r, *a;
	int i;

	(void)id;
	(void)params;
	(void)code;
	(void)why;
	a = json_object_new_array();
	json_object_array_add(a,
	    resource_template("containers://{id}/logs", "sandbox activity log",
	        "The sandbox's own output and every "
	        "command run in it with its output and exit, timestamped; the "
	        "oldest lines go first past the cap. Subscribable.",
	        "text/plain"));
	json_object_array_add(
	    a, resource_template("sandbox://{id}/exec/{exec_id}/stdout",
	           "full standard output of an exec",
	           "Read in pages: "
	           "?offset=N&length=M (default 65536, at most 1048576).",
	           "text/plain"));
	json_object_array_add(
	    a, resource_template("sandbox://{id}/files/{path}",
	           "a file of a sandbox",
	           "Its absolute path, percent-encoded; read as read_file "
	           "reads, in pages: ?offset=N&length=M (default and most "
	           "4194304). A picture is a blob of its type; other binary "
	           "data application/octet-stream.",
	           "application/octet-stream"));
	json_object_array_add(
	    a, resource_template("sandbox://{id}/exec/{exec_id}/stderr",
	           "full standard error of an exec",
	           "Read in pages: "
	           "?offset=N&length=M (default 65536, at most 1048576).",
	           "text/plain"));
	for (i = 0; i < nproviders; i++)
		if (providers[i]->templates != NULL)
			providers[i]->templates(sess, a);
	r = json_object_new_object();
	json_object_object_add(r, "resourceTemplates", a);
	return r;
}

static json_object *
resources_list(struct session *sess, json_object *id, json_object *params,
    int *code, const char **why)
{
	struct sandbox *sb;
	json_object *r, *a, *o;
	char *s;
	int i;

	(void)id;
	(void)params;
	(void)code;
	(void)why;
	a = json_object_new_array();
	o = json_object_new_object();
	json_object_object_add(
	    o, "uri", json_object_new_string("sandbox://stats"));
	json_object_object_add(o, "name", json_object_new_string("stats"));
	json_object_object_add(
	    o, "description", json_object_new_string("server statistics"));
	json_object_object_add(
	    o, "mimeType", json_object_new_string("application/json"));
	json_object_array_add(a, o);
	TAILQ_FOREACH(sb, &sandboxes, entry)
	{
		if (sb->owner != sess || sb->state != SB_READY)
			continue;
		o = json_object_new_object();
		xasprintf(&s, "containers://%s/logs", sb->id);
		json_object_object_add(o, "uri", json_object_new_string(s));
		free(s);
		xasprintf(&s, "logs of %s", sb->name);
		json_object_object_add(o, "name", json_object_new_string(s));
		free(s);
		json_object_object_add(
		    o, "mimeType", json_object_new_string("text/plain"));
		json_object_array_add(a, o);
	}
	for (i = 0; i < nproviders; i++)
		if (providers[i]->list != NULL)
			providers[i]->list(sess, a);
	r = json_object_new_object();
	json_object_object_add(r, "resources", a);
	return r;
}

/*
 * One item of a read result: text of mime (text/plain if NULL) when the
 * bytes are UTF-8 and blob is 0, else a blob of mime (or
 * application/octet-stream).
 */
static json_object *
resource_item(const char *uri, const char *mime, const char *p, size_t len,
    int blob, json_object *meta)
{
	json_object *r, *a, *c;
	size_t n;
	char *b;

	c = json_object_new_object();
	json_object_object_add(c, "uri", json_object_new_string(uri));
	if (!blob && utf8_valid(p, len)) {
		json_object_object_add(c, "mimeType",
		    json_object_new_string(mime != NULL ? mime : "text/plain"));
		json_object_object_add(
		    c, "text", json_object_new_string_len(p, (int)len));
	} else {
		json_object_object_add(c, "mimeType",
		    json_object_new_string(blob && mime != NULL
		                               ? mime
		                               : "application/octet-stream"));
		b = base64_encode(p, len, &n);
		json_object_object_add(
		    c, "blob", json_object_new_string_len(b, (int)n));
		free(b);
	}
	if (meta != NULL)
		json_object_object_add(c, "_meta", meta);
	a = json_object_new_array();
	json_object_array_add(a, c);
	r = json_object_new_object();
	json_object_object_add(r, "contents", a);
	return r;
}

static json_object *
resource_contents(const char *uri, const char *mime, const char *p, size_t len,
    json_object *meta)
{
	return resource_item(uri, mime, p, len, 0, meta);
}

/* A page's place in the whole, for a read result's _meta. */
static json_object *
page_meta(long long offset, long long got, long long size)
{
	json_object *meta;

	meta = json_object_new_object();
	json_object_object_add(meta, "offset", json_object_new_int64(offset));
	json_object_object_add(meta, "length", json_object_new_int64(got));
	json_object_object_add(meta, "size", json_object_new_int64(size));
	if (offset + got < size)
		json_object_object_add(
		    meta, "next_offset", json_object_new_int64(offset + got));
	return meta;
}

/* Parse "?offset=N&length=M" (either, both, none); length <= max. */
static int
page_args(const char *q, long long *offset, long long *length, long long def,
    long long max)
{
	char *dup, *p, *tok, *end;
	long long v;

	*offset = 0;
	*length = def;
	if (q == NULL || *q == '\0')
		return 0;
	if (*q++ != '?')
		return -1;
	dup = xstrdup(q);
	for (p = dup; (tok = strsep(&p, "&")) != NULL;) {
		if (strncmp(tok, "offset=", 7) == 0)
			v = strtoll(tok + 7, &end, 10), tok += 7;
		else if (strncmp(tok, "length=", 7) == 0)
			v = strtoll(tok + 7, &end, 10), tok += 7;
		else {
			free(dup);
			return -1;
		}
		if (*tok == '\0' || *end != '\0' || v < 0) {
			free(dup);
			return -1;
		}
		if (tok[-7] == 'o')
			*offset = v;
		else
			*length = v > max ? max : v;
	}
	free(dup);
	return 0;
}

/* sandbox://{id}/exec/{n}/{stdout,stderr}[?offset=&length=] */
static json_object *
read_exec(struct session *sess, const char *uri, int *code, const char **why)
{
	char idbuf[80], stream[8], *q;
	unsigned int n;
	long long offset, length, size;
	struct sandbox *sb;
	json_object *meta, *r;
	ssize_t got;
	char *buf;
	int s, used = 0;

	if (sscanf(uri, "sandbox://%79[^/]/exec/%u/%7[a-z]%n", idbuf, &n,
	        stream, &used) != 3 ||
	    (strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0)) {
		*code = RESOURCE_NOT_FOUND;
		*why = "resource not found";
		return NULL;
	}
	q = (char *)uri + used;
	if (page_args(q, &offset, &length, PAGE_DEFAULT, PAGE_MAX) == -1) {
		*code = RPC_INVALID_PARAMS;
		*why = "page with ?offset=N&length=M (non-negative integers)";
		return NULL;
	}
	if ((sb = sandbox_claim(sess, idbuf)) == NULL) {
		*code = RESOURCE_NOT_FOUND;
		*why = "no such sandbox (stopped or expired?)";
		return NULL;
	}
	s = strcmp(stream, "stderr") == 0;
	buf = xmalloc((size_t)length + 1);
	got = spool_read(sb->spool, n, s, offset, buf, (size_t)length, &size);
	if (got == -1) {
		free(buf);
		*code = RESOURCE_NOT_FOUND;
		*why = errno == ENOENT ? "no such exec output" : "unreadable";
		return NULL;
	}
	meta = page_meta(offset, got, size);
	r = resource_contents(uri, NULL, buf, (size_t)got, meta);
	free(buf);
	return r;
}

struct fileres {
	struct call *call;
	char *uri;
};

static void
file_done(const struct fileread *f, void *arg)
{
	struct fileres *fr = arg;
	struct imgsig sig;
	char *msg;
	int picture;

	if (f->error != NULL) {
		xasprintf(&msg, "cannot read %s: %s", f->path, f->error);
		mcp_call_fail(fr->call, RESOURCE_NOT_FOUND, msg);
		free(msg);
	} else {
		picture =
		    f->offset == 0 && imgsig_probe(f->data, f->len, &sig) == 0;
		mcp_call_reply(fr->call,
		    resource_item(fr->uri, picture ? sig.mime : NULL, f->data,
		        f->len, picture,
		        page_meta(f->offset, (long long)f->len, f->size)));
	}
	free(fr->uri);
	free(fr);
}

/*
 * sandbox://{id}/files/{path}[?offset=&length=]: a file of the sandbox,
 * read in it as read_file reads (by default the first FILEREAD_MAX
 * bytes); a picture is a blob of its type.
 */
static json_object *
read_file_res(struct session *sess, json_object *id, const char *uri, int *code,
    const char **why)
{
	char idbuf[80], *path;
	const char *q;
	long long offset, length;
	struct sandbox *sb;
	struct fileres *fr;

	if (fileread_uri_parse(uri, idbuf, sizeof idbuf, &path, &q) == -1) {
		*code = RESOURCE_NOT_FOUND;
		*why = "resource not found (a file is "
		       "sandbox://{id}/files/{absolute path, percent-encoded})";
		return NULL;
	}
	if (page_args(q, &offset, &length, FILEREAD_MAX, FILEREAD_MAX) == -1) {
		free(path);
		*code = RPC_INVALID_PARAMS;
		*why = "page with ?offset=N&length=M (non-negative integers)";
		return NULL;
	}
	if ((sb = sandbox_claim(sess, idbuf)) == NULL ||
	    sb->state != SB_READY || sb->worker == NULL) {
		free(path);
		*code = RESOURCE_NOT_FOUND;
		*why = sb == NULL ? "no such sandbox (stopped or expired?)"
		                  : "the sandbox is not ready (starting, being "
		                    "removed, or getting a new worker); try "
		                    "again later";
		return NULL;
	}
	sandbox_touch(sb);
	if (sb->paused)
		sandbox_resume(sb);
	fr = xcalloc(1, sizeof *fr);
	fr->call = mcp_call_new(sess, id, "resources/read");
	fr->uri = xstrdup(uri);
	fileread_start(fr->call, sb, path, offset, length, file_done, fr);
	free(path);
	*code = 0;
	return NULL;
}

struct logread {
	struct call *call;
	struct evbuffer *text;
	char *uri;
};

static int
logs_data(uint16_t flags, const char *p, size_t len, void *arg)
{
	struct logread *lr = arg;

	(void)flags;
	evbuffer_add(lr->text, p, len);
	return 0;
}

static void
logs_done(json_object *res, void *arg)
{
	struct logread *lr = arg;
	json_object *v;
	size_t len, outlen;
	char *clean;

	if (json_object_object_get_ex(res, "error", &v))
		evbuffer_add_printf(lr->text,
		    "\n[the log could not be read "
		    "whole: %s]\n",
		    json_object_get_string(v));
	len = evbuffer_get_length(lr->text);
	clean = utf8_sanitize(
	    (const char *)evbuffer_pullup(lr->text, -1), len, &outlen);
	mcp_call_reply(
	    lr->call, resource_contents(lr->uri, NULL, clean, outlen, NULL));
	free(clean);
	evbuffer_free(lr->text);
	free(lr->uri);
	free(lr);
}

/* containers://{id}/logs, from the sandbox's worker. */
static json_object *
read_logs(struct session *sess, json_object *id, const char *uri, int *code,
    const char **why)
{
	char idbuf[80], rest[8] = "";
	struct sandbox *sb;
	struct logread *lr;
	json_object *op;

	if (sscanf(uri, "containers://%79[^/]/logs%7s", idbuf, rest) < 1 ||
	    rest[0] != '\0' ||
	    strncmp(uri + strlen(uri) - 5, "/logs", 5) != 0) {
		*code = RESOURCE_NOT_FOUND;
		*why = "resource not found";
		return NULL;
	}
	if ((sb = sandbox_claim(sess, idbuf)) == NULL || sb->worker == NULL) {
		*code = RESOURCE_NOT_FOUND;
		*why = "no such sandbox (stopped or expired?)";
		return NULL;
	}
	lr = xcalloc(1, sizeof *lr);
	lr->call = mcp_call_new(sess, id, "resources/read");
	lr->text = evbuffer_new();
	lr->uri = xstrdup(uri);
	op = json_object_new_object();
	json_object_object_add(op, "op", json_object_new_string(PROTO_OP_LOGS));
	wproc_call(sb->worker, op, logs_data, logs_done, lr);
	json_object_put(op);
	*code = 0;
	return NULL;
}

static const char *
param_uri(json_object *params)
{
	json_object *v;

	if (params != NULL && json_object_is_type(params, json_type_object) &&
	    json_object_object_get_ex(params, "uri", &v) &&
	    json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return NULL;
}

static json_object *
resources_read(struct session *sess, json_object *id, json_object *params,
    int *code, const char **why)
{
	const struct resource_provider *p;
	const char *uri;
	json_object *stats;
	const char *s;
	json_object *r;

	if ((uri = param_uri(params)) == NULL) {
		*code = RPC_INVALID_PARAMS;
		*why = "resources/read needs params.uri (a string)";
		return NULL;
	}
	if ((p = provider_of(uri)) != NULL)
		return p->read(sess, uri, code, why);
	if (strcmp(uri, "sandbox://stats") == 0) {
		stats = stats_json();
		s = json_object_to_json_string_ext(
		    stats, JSON_C_TO_STRING_PRETTY);
		r = resource_contents(
		    uri, "application/json", s, strlen(s), NULL);
		json_object_put(stats);
		return r;
	}
	if (strncmp(uri, "sandbox://", 10) == 0 &&
	    strstr(uri + 10, "/files/") != NULL &&
	    strstr(uri + 10, "/files/") == strchr(uri + 10, '/'))
		return read_file_res(sess, id, uri, code, why);
	if (strncmp(uri, "sandbox://", 10) == 0)
		return read_exec(sess, uri, code, why);
	if (strncmp(uri, "containers://", 13) == 0)
		return read_logs(sess, id, uri, code, why);
	*code = RESOURCE_NOT_FOUND;
	*why = "resource not found";
	return NULL;
}

static json_object *
resources_subscribe(struct session *sess, json_object *id, json_object *params,
    int *code, const char **why)
{
	const struct resource_provider *p;
	struct sandbox *sb;
	char idbuf[80], stream[8], *key;
	const char *uri;
	unsigned int n;

	(void)id;
	if ((uri = param_uri(params)) != NULL &&
	    (p = provider_of(uri)) != NULL && p->subscribe != NULL) {
		if (p->subscribe(sess, uri) == -1) {
			*code = RESOURCE_NOT_FOUND;
			*why = "resource not found";
			return NULL;
		}
		json_object_object_add(
		    sess->subs, uri, json_object_new_string(uri));
		return json_object_new_object();
	}
	if (uri != NULL &&
	    sscanf(uri, "sandbox://%79[^/]/exec/%u/%7[a-z]", idbuf, &n,
	        stream) == 3 &&
	    (strcmp(stream, "stdout") == 0 || strcmp(stream, "stderr") == 0)) {
		/* An exec's output (a background process's grows). */
		if ((sb = sandbox_claim(sess, idbuf)) == NULL) {
			*code = RESOURCE_NOT_FOUND;
			*why = "no such sandbox";
			return NULL;
		}
		xasprintf(&key, "sandbox://%s/exec/%u/%s", sb->id, n, stream);
		json_object_object_add(
		    sess->subs, key, json_object_new_string(uri));
		free(key);
		return json_object_new_object();
	}
	if (uri == NULL ||
	    sscanf(uri, "containers://%79[^/]/logs", idbuf) != 1) {
		*code = RPC_INVALID_PARAMS;
		*why =
		    "only containers://{id}/logs and "
		    "sandbox://{id}/exec/{exec_id}/stdout (or stderr) can be "
		    "subscribed to";
		return NULL;
	}
	if ((sb = sandbox_claim(sess, idbuf)) == NULL) {
		*code = RESOURCE_NOT_FOUND;
		*why = "no such sandbox";
		return NULL;
	}
	/* One subscription per sandbox, under its full id; updates name
	 * the URI the client used. */
	xasprintf(&key, "containers://%s/logs", sb->id);
	json_object_object_add(sess->subs, key, json_object_new_string(uri));
	free(key);
	return json_object_new_object();
}

static json_object *
resources_unsubscribe(struct session *sess, json_object *id,
    json_object *params, int *code, const char **why)
{
	struct sandbox *sb;
	char idbuf[80], stream[8], *key;
	const char *uri;
	unsigned int n;

	(void)id;
	if ((uri = param_uri(params)) == NULL) {
		*code = RPC_INVALID_PARAMS;
		*why = "resources/unsubscribe needs params.uri";
		return NULL;
	}
	if (sscanf(uri, "containers://%79[^/]/logs", idbuf) == 1 &&
	    (sb = sandbox_find(sess, idbuf)) != NULL) {
		xasprintf(&key, "containers://%s/logs", sb->id);
		json_object_object_del(sess->subs, key);
		free(key);
	}
	if (sscanf(uri, "sandbox://%79[^/]/exec/%u/%7[a-z]", idbuf, &n,
	        stream) == 3 &&
	    (sb = sandbox_find(sess, idbuf)) != NULL) {
		xasprintf(&key, "sandbox://%s/exec/%u/%s", sb->id, n, stream);
		json_object_object_del(sess->subs, key);
		free(key);
	}
	json_object_object_del(sess->subs, uri);
	return json_object_new_object();
}

static void send_updated(struct session *, json_object *);

/* A sandbox's log has news: tell its session if subscribed to it. */
static void
resources_logs_updated(struct sandbox *sb)
{
	struct session *sess = sb->owner;
	json_object *uri;
	char *key;

	if (sess == NULL)
		return;
	xasprintf(&key, "containers://%s/logs", sb->id);
	if (json_object_object_get_ex(sess->subs, key, &uri))
		send_updated(sess, uri);
	free(key);
}

/* An exec's output grew (a background process's): tell its session. */
static void
resources_output_updated(struct sandbox *sb, unsigned int exec_id)
{
	static const char *const streams[] = {"stdout", "stderr"};
	struct session *sess = sb->owner;
	json_object *uri;
	char *key;
	int i;

	if (sess == NULL)
		return;
	for (i = 0; i < 2; i++) {
		xasprintf(&key, "sandbox://%s/exec/%u/%s", sb->id, exec_id,
		    streams[i]);
		if (json_object_object_get_ex(sess->subs, key, &uri))
			send_updated(sess, uri);
		free(key);
	}
}

/* notifications/resources/updated of the URI the client subscribed to. */
static void
send_updated(struct session *sess, json_object *uri)
{
	json_object *n, *p;

	n = json_object_new_object();
	json_object_object_add(n, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(n, "method",
	    json_object_new_string("notifications/resources/updated"));
	p = json_object_new_object();
	json_object_object_add(p, "uri", json_object_get(uri));
	json_object_object_add(n, "params", p);
	mcp_send(sess, n);
}

static const struct mcp_method_entry methods[] = {
    {"resources/list", resources_list},
    {"resources/templates/list", resources_templates},
    {"resources/read", resources_read},
    {"resources/subscribe", resources_subscribe},
    {"resources/unsubscribe", resources_unsubscribe},
    {NULL, NULL},
};

void
resources_init(void)
{
	if (mcp_methods_register(methods) == -1)
		fatalx("%s: cannot register the methods", __func__);
	sandbox_logs_updated = resources_logs_updated;
	sandbox_output_updated = resources_output_updated;
}
