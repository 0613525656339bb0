/*
 * Reading a file of a sandbox, or a slice of it, through
 * engine/scripts/read-file.sh run as the sandbox user: for read_file and
 * for the resource sandbox://{id}/files/{path}, whose URIs are made and
 * parsed here too.  What the reader prints is checked by sbout_read()
 * (sandbox code can write into it), and what it prints past the asked
 * length is refused, never buffered.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "config.h"
#include "core.h"
#include "mcp.h"
#include "run.h"
#include "sandbox.h"
#include "sbout.h"
#include "xmalloc.h"

/* The reading: engine/scripts/read-file.sh, embedded. */
extern const char read_file_sh[];

struct fread {
	struct evbuffer *buf;
	char *path;
	long long offset, length;
	char nonce[SBOUT_NONCE_LEN + 1];
	int over;
	fileread_cb done;
	void *arg;
};

static int
fread_sink(struct xrun *run, const char *p, size_t len, void *arg)
{
	struct fread *r = arg;

	(void)run;
	/* The reader stops at length; room for the size lines. */
	if (evbuffer_get_length(r->buf) + len <= (size_t)r->length + 128)
		evbuffer_add(r->buf, p, len);
	else
		r->over = 1;
	return 0;
}

static void
fread_done(struct xrun *run, json_object *res, void *arg)
{
	struct fread *r = arg;
	struct fileread f;
	struct sbout_read rd;
	json_object *v;
	const char *all;
	char err[256];

	(void)run;
	memset(&f, 0, sizeof f);
	f.path = r->path;
	f.offset = r->offset;
	if (!json_object_object_get_ex(res, "exit_code", &v) ||
	    json_object_get_int(v) != 0)
		f.error = xrun_failure(res, "failed");
	else if (r->over)
		f.error = "the reader wrote more than asked for (something in "
		          "the sandbox wrote into its output); nothing read";
	else {
		all = (const char *)evbuffer_pullup(r->buf, -1);
		if (sbout_read(all, evbuffer_get_length(r->buf), r->nonce,
		        r->offset, r->length, &rd, err, sizeof err) == -1)
			f.error = err;
		else {
			f.size = rd.size;
			f.data = all + rd.data_off;
			f.len = rd.data_len;
		}
	}
	r->done(&f, r->arg);
	evbuffer_free(r->buf);
	free(r->path);
	free(r);
}

/*
 * Read length bytes (at most FILEREAD_MAX) from offset of path in sb (a
 * relative path is the workdir's) for call c; done gets what was read,
 * or why not, once the reader ended.
 */
void
fileread_start(struct call *c, struct sandbox *sb, const char *path,
    long long offset, long long length, fileread_cb done, void *arg)
{
	struct fread *r;
	struct xrun_opts o;
	const char *args[5];
	char off[32], len[32], *line;

	r = xcalloc(1, sizeof *r);
	r->buf = evbuffer_new();
	r->offset = offset;
	r->length = length > FILEREAD_MAX ? FILEREAD_MAX : length;
	r->done = done;
	r->arg = arg;
	if (path[0] == '/')
		r->path = xstrdup(path);
	else
		xasprintf(&r->path, "%s/%s", sb->workdir, path);
	snprintf(off, sizeof off, "%lld", r->offset);
	snprintf(len, sizeof len, "%lld", r->length);
	sbout_nonce(r->nonce, sizeof r->nonce);
	args[0] = r->path;
	args[1] = off;
	args[2] = len;
	args[3] = r->nonce;
	args[4] = NULL;
	memset(&o, 0, sizeof o);
	o.command = read_file_sh;
	o.args = args;
	xasprintf(&line, "read_file %s", r->path);
	o.log_as = line;
	o.timeout_ms = sup.conf->exec_timeout * 1000;
	o.stdout_sink = fread_sink;
	xrun_start(c, sb, &o, fread_done, r);
	free(line);
}

/* Bytes a path keeps as they are in a URI; the rest are %XX. */
static int
uri_plain(unsigned char ch)
{
	return isalnum(ch) || strchr("-._~/", ch) != NULL;
}

/*
 * The resource URI of an absolute path of sandbox id:
 * "sandbox://ID/files/PATH", the path percent-encoded (its leading slash
 * is the one after "files").
 */
char *
fileread_uri(const char *id, const char *path)
{
	static const char hex[] = "0123456789ABCDEF";
	struct evbuffer *b;
	const unsigned char *p;
	char *s;
	size_t n;

	b = evbuffer_new();
	evbuffer_add_printf(b, "sandbox://%s/files", id);
	for (p = (const unsigned char *)path; *p != '\0'; p++) {
		if (uri_plain(*p))
			evbuffer_add(b, p, 1);
		else
			evbuffer_add_printf(
			    b, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
	}
	n = evbuffer_get_length(b);
	s = xmalloc(n + 1);
	evbuffer_remove(b, s, n);
	s[n] = '\0';
	evbuffer_free(b);
	return s;
}

static int
hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/*
 * Take "sandbox://ID/files/PATH[?QUERY]" apart: the id into id (of
 * idlen bytes), the decoded absolute path (the caller frees it) into
 * *path, and *query at the '?' (or at the end).  -1 when it is not such
 * a URI: an id too long, no path, a bad escape, an escaped NUL, a path
 * over 4096 bytes.
 */
int
fileread_uri_parse(
    const char *uri, char *id, size_t idlen, char **path, const char **query)
{
	const char *p, *slash, *end;
	char *out;
	size_t n = 0;
	int hi, lo;

	if (strncmp(uri, "sandbox://", 10) != 0)
		return -1;
	p = uri + 10;
	if ((slash = strchr(p, '/')) == NULL || slash == p ||
	    (size_t)(slash - p) >= idlen || strncmp(slash, "/files/", 7) != 0)
		return -1;
	memcpy(id, p, (size_t)(slash - p));
	id[slash - p] = '\0';
	p = slash + 6; /* the path's own slash */
	end = p + strcspn(p, "?");
	if (end - p < 2 || end - p > 3 * 4096)
		return -1;
	out = xmalloc((size_t)(end - p) + 1);
	for (; p < end; p++) {
		if (*p != '%') {
			out[n++] = *p;
			continue;
		}
		if (end - p < 3 || (hi = hexval(p[1])) == -1 ||
		    (lo = hexval(p[2])) == -1 || (hi == 0 && lo == 0)) {
			free(out);
			return -1;
		}
		out[n++] = (char)(hi << 4 | lo);
		p += 2;
	}
	out[n] = '\0';
	if (n > 4096) {
		free(out);
		return -1;
	}
	*path = out;
	*query = end;
	return 0;
}
