/*
 * Integration: the file tools (write_file, read_file, list_files,
 * copy_file, copy_project, copy_file_from_sandbox) against a real engine.
 *
 * Every test makes a fresh mkdtemp base directory holding "allowed" (the
 * server's only --allow-dir) and "outside" (a directory next to it that
 * nothing may reach), starts its own server, and removes the base at the
 * end.  The .fini hook removes the base, any container of the test's
 * label and any image the test built, also when an assertion stopped
 * the test early (the assertion itself has already failed the test).
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

#define MIB (1024L * 1024L)
#define BIG_TIMEOUT_MS 600000
#define RSS_LIMIT_KB (64L * 1024L)

/* --- per-test state, for the .fini cleanup --- */

static char g_base[256]; /* mkdtemp base: allowed/ and outside/ */
static char g_allowed[300];
static char g_outside[300];
static char g_label[96]; /* the server's --label, for leftovers */
static char g_image[128]; /* an image this test built */
static int g_counter;

static void
files_fini(void)
{
	char cmd[512], *out;

	if (g_label[0] != '\0') {
		snprintf(cmd, sizeof cmd,
		    "docker ps -aq --filter 'label=%s' | xargs -r docker rm "
		    "-f >/dev/null 2>&1",
		    g_label);
		out = h_run(cmd, NULL);
		free(out);
	}
	if (g_image[0] != '\0') {
		snprintf(cmd, sizeof cmd, "docker rmi -f '%s' >/dev/null 2>&1",
		    g_image);
		out = h_run(cmd, NULL);
		free(out);
		g_image[0] = '\0';
	}
	h_rm_rf(g_base);
	g_base[0] = '\0';
}

/* Makes base/allowed and base/outside (with outside/secret.txt). */
static void
make_dirs(void)
{
	FILE *f;
	char p[400];

	snprintf(g_base, sizeof g_base, "/tmp/mcp-sandboxd-files-XXXXXX");
	cr_assert(mkdtemp(g_base) != NULL, "mkdtemp: %s", strerror(errno));
	snprintf(g_allowed, sizeof g_allowed, "%s/allowed", g_base);
	snprintf(g_outside, sizeof g_outside, "%s/outside", g_base);
	cr_assert(mkdir(g_allowed, 0755) == 0);
	cr_assert(mkdir(g_outside, 0755) == 0);
	snprintf(p, sizeof p, "%s/secret.txt", g_outside);
	f = fopen(p, "w");
	cr_assert(f != NULL);
	fputs("SECRET-OUTSIDE\n", f);
	fclose(f);
}

/* A server allowed only g_allowed, then the extra arguments. */
static struct h_server *
start(const char *first, ...)
{
	const char *args[32];
	struct h_server *s;
	const char *a;
	va_list ap;
	int n = 0;

	args[n++] = "--allow-dir";
	args[n++] = g_allowed;
	va_start(ap, first);
	for (a = first; a != NULL && n < 31; a = va_arg(ap, const char *))
		args[n++] = a;
	va_end(ap);
	args[n] = NULL;
	s = h_startv(args);
	snprintf(g_label, sizeof g_label, "%s", s->label);
	json_object_put(h_initialize(s));
	return s;
}

static void
finish(struct h_server *s, char *cid)
{
	h_stop(s, cid);
	free(cid);
	h_finish(s);
	h_rm_rf(g_base);
	g_base[0] = '\0';
}

/* --- host files --- */

static char *
hpath(const char *dir, const char *name)
{
	char *p;

	cr_assert(asprintf(&p, "%s/%s", dir, name) > 0);
	return p;
}

static void
write_host(const char *path, const void *data, size_t len)
{
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert(fd != -1, "open %s: %s", path, strerror(errno));
	cr_assert(write(fd, data, len) == (ssize_t)len);
	close(fd);
}

/* The whole file, NUL-terminated; *len its size; NULL if missing. */
static char *
read_host(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	ssize_t n;
	size_t off = 0;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return NULL;
	cr_assert(fstat(fd, &st) == 0);
	buf = malloc((size_t)st.st_size + 1);
	cr_assert(buf != NULL);
	while (off < (size_t)st.st_size &&
	       (n = read(fd, buf + off, (size_t)st.st_size - off)) > 0)
		off += (size_t)n;
	close(fd);
	buf[off] = '\0';
	if (len != NULL)
		*len = off;
	return buf;
}

static int
host_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void
mkdirs(const char *path)
{
	char *p = strdup(path), *s;

	cr_assert(p != NULL);
	for (s = p + 1; *s != '\0'; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	mkdir(p, 0755);
	free(p);
}

/* A shell-quoted copy of s ('...'). */
static char *
shq(const char *s)
{
	size_t n = 3;
	const char *p;
	char *out, *o;

	for (p = s; *p != '\0'; p++)
		n += *p == '\'' ? 4 : 1;
	out = o = malloc(n);
	cr_assert(out != NULL);
	*o++ = '\'';
	for (p = s; *p != '\0'; p++) {
		if (*p == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else
			*o++ = *p;
	}
	*o++ = '\'';
	*o = '\0';
	return out;
}

/* Runs a host command that must succeed; its output. */
static char *
run_ok(const char *fmt, ...)
{
	char *cmd, *out;
	va_list ap;
	int st;

	va_start(ap, fmt);
	cr_assert(vasprintf(&cmd, fmt, ap) > 0);
	va_end(ap);
	out = h_run(cmd, &st);
	cr_assert_eq(st, 0, "host command failed (%d): %s\n%s", st, cmd, out);
	free(cmd);
	return out;
}

/* The first word of sha256sum's output for a host file. */
static char *
host_sha256(const char *path)
{
	char *q = shq(path), *out;

	out = run_ok("sha256sum < %s", q);
	free(q);
	out[strcspn(out, " \n")] = '\0';
	return out;
}

/* A checksum of a whole tree's file names and contents, and of its dirs. */
static const char tree_sum_cmd[] =
    "cd %s && { find . -type f -print0 | LC_ALL=C sort -z | "
    "xargs -0 -r sha256sum; find . -type d | LC_ALL=C sort; } | sha256sum";

static char *
host_tree_sum(const char *dir)
{
	char *q = shq(dir), *out;

	out = run_ok(tree_sum_cmd, q);
	free(q);
	out[strcspn(out, " \n")] = '\0';
	return out;
}

/* Every entry below dir is a regular file or a directory with one link. */
static int walk_bad;
static char walk_first_bad[512];

static int
walk_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)flag;
	(void)ftw;
	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode)) {
		if (walk_bad++ == 0)
			snprintf(walk_first_bad, sizeof walk_first_bad,
			    "%s (mode %o)", p, (unsigned)st->st_mode);
	} else if (S_ISREG(st->st_mode) && st->st_nlink != 1) {
		if (walk_bad++ == 0)
			snprintf(walk_first_bad, sizeof walk_first_bad,
			    "%s (%lu links)", p, (unsigned long)st->st_nlink);
	}
	return 0;
}

static void
expect_only_files_and_dirs(const char *dir)
{
	walk_bad = 0;
	walk_first_bad[0] = '\0';
	cr_assert(nftw(dir, walk_one, 32, FTW_PHYS) == 0, "nftw %s", dir);
	cr_expect_eq(walk_bad, 0,
	    "%d entries below %s are neither a regular file (one link) nor "
	    "a directory, e.g. %s",
	    walk_bad, dir, walk_first_bad);
}

/* The names in a directory, sorted, one a line (for "nothing new here"). */
static char *
listing(const char *dir)
{
	char *q = shq(dir), *out;

	out = run_ok("ls -A1 %s | LC_ALL=C sort", q);
	free(q);
	return out;
}

/* Pseudo-random bytes (xorshift64*), reproducible from the seed. */
static void
fill_random(unsigned char *buf, size_t len, uint64_t *state)
{
	uint64_t x = *state, v;
	size_t i;

	for (i = 0; i < len; i += 8) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		v = x * 0x2545F4914F6CDD1DULL;
		memcpy(buf + i, &v, len - i < 8 ? len - i : 8);
	}
	*state = x;
}

static void
write_random(const char *path, size_t len, uint64_t seed)
{
	unsigned char *buf;
	size_t chunk;
	int fd;

	buf = malloc(MIB);
	cr_assert(buf != NULL);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert(fd != -1, "open %s: %s", path, strerror(errno));
	while (len > 0) {
		chunk = len < (size_t)MIB ? len : (size_t)MIB;
		fill_random(buf, chunk, &seed);
		cr_assert(write(fd, buf, chunk) == (ssize_t)chunk);
		len -= chunk;
	}
	close(fd);
	free(buf);
}

/* --- base64, independent of the server's --- */

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *
b64_encode(const unsigned char *p, size_t len)
{
	char *out = malloc(4 * ((len + 2) / 3) + 1), *o = out;
	size_t i;
	uint32_t v;

	cr_assert(out != NULL);
	for (i = 0; i + 2 < len; i += 3) {
		v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		*o++ = b64[v >> 18];
		*o++ = b64[(v >> 12) & 63];
		*o++ = b64[(v >> 6) & 63];
		*o++ = b64[v & 63];
	}
	if (len - i == 1) {
		v = (uint32_t)p[i] << 16;
		*o++ = b64[v >> 18];
		*o++ = b64[(v >> 12) & 63];
		*o++ = '=';
		*o++ = '=';
	} else if (len - i == 2) {
		v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
		*o++ = b64[v >> 18];
		*o++ = b64[(v >> 12) & 63];
		*o++ = b64[(v >> 6) & 63];
		*o++ = '=';
	}
	*o = '\0';
	return out;
}

/* Decodes (whitespace ignored); NULL if not base64. */
static unsigned char *
b64_decode(const char *s, size_t *len)
{
	unsigned char *out = malloc(strlen(s) / 4 * 3 + 3);
	uint32_t v = 0;
	int bits = 0;
	const char *c;
	size_t n = 0;

	cr_assert(out != NULL);
	for (; *s != '\0'; s++) {
		if (*s == '=' || *s == '\n' || *s == '\r' || *s == ' ')
			continue;
		if ((c = strchr(b64, *s)) == NULL) {
			free(out);
			return NULL;
		}
		v = v << 6 | (uint32_t)(c - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (unsigned char)(v >> bits);
		}
	}
	*len = n;
	return out;
}

/* --- tool calls --- */

/* Arguments: container_id (if not NULL), then key, json_object pairs. */
static json_object *
args(const char *cid, ...)
{
	json_object *o = json_object_new_object(), *v;
	const char *k;
	va_list ap;

	if (cid != NULL)
		json_object_object_add(
		    o, "container_id", json_object_new_string(cid));
	va_start(ap, cid);
	while ((k = va_arg(ap, const char *)) != NULL) {
		v = va_arg(ap, json_object *);
		json_object_object_add(o, k, v);
	}
	va_end(ap);
	return o;
}

static json_object *
js(const char *s)
{
	return json_object_new_string(s);
}

static json_object *
jsn(const char *s, size_t len)
{
	return json_object_new_string_len(s, (int)len);
}

static json_object *
jb(int b)
{
	return json_object_new_boolean(b);
}

/*
 * tools/call; a server that died instead of answering is reported as
 * such, with the request and its exit status (139: SIGSEGV).
 */
static json_object *
call_t(struct h_server *s, const char *tool, json_object *a, int timeout_ms)
{
	json_object *m;
	char *shown;
	long id;
	int rc;

	shown = strdup(json_object_to_json_string_ext(
	    a, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	cr_assert(shown != NULL);
	id = h_send_tool(s, tool, a);
	m = h_wait_id(s, id, timeout_ms);
	if (m == NULL) {
		if (s->from_fd < 0) {
			rc = h_wait_exit(s, 5000);
			cr_assert_fail(
			    "the server exited (status %d%s) instead of "
			    "answering tools/call %s %.300s",
			    rc, rc == 139 ? ", SIGSEGV" : "", tool, shown);
		}
		cr_assert_fail("no answer in %d ms to tools/call %s %.300s",
		    timeout_ms, tool, shown);
	}
	free(shown);
	return h_tool_result(m);
}

static json_object *
call(struct h_server *s, const char *tool, json_object *a)
{
	return call_t(s, tool, a, 120000);
}

static const char *
sc_str(json_object *r, const char *key)
{
	char path[128];

	snprintf(path, sizeof path, "structuredContent.%s", key);
	return h_str(r, path);
}

static long long
sc_int(json_object *r, const char *key)
{
	char path[128];

	snprintf(path, sizeof path, "structuredContent.%s", key);
	return h_int(r, path);
}

/* A call that must succeed; the result. */
static json_object *
call_ok(struct h_server *s, const char *tool, json_object *a)
{
	json_object *r;

	r = call(s, tool, a);
	cr_assert(!h_is_error(r), "%s failed: %s", tool, h_text(r));
	cr_assert(h_get(r, "structuredContent") != NULL,
	    "%s: no structuredContent: %.2000s", tool,
	    json_object_to_json_string(r));
	return r;
}

/* A call that must be refused with isError and a message. */
static void
expect_refused(
    struct h_server *s, const char *tool, json_object *a, const char *what)
{
	char *shown;
	json_object *r;

	shown =
	    strdup(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN));
	r = call(s, tool, a);
	cr_expect(h_is_error(r), "%s (%s) with %s was not refused: %.1500s",
	    tool, what, shown, json_object_to_json_string(r));
	cr_expect(
	    strlen(h_text(r)) > 0, "%s: an error without a message", tool);
	json_object_put(r);
	free(shown);
}

/* read_file of a whole (small) file: its bytes through base64. */
static unsigned char *
sandbox_read(struct h_server *s, const char *cid, const char *path, size_t *len)
{
	json_object *r;
	unsigned char *data;
	const char *c;

	r = call_ok(s, "read_file",
	    args(cid, "file_path", js(path), "encoding", js("base64"), NULL));
	cr_assert(!h_bool(r, "structuredContent.truncated"));
	c = sc_str(r, "content");
	cr_assert(c != NULL);
	data = b64_decode(c, len);
	cr_assert(data != NULL, "read_file gave bad base64: %.200s", c);
	cr_expect_eq(sc_int(r, "size"), (long long)*len,
	    "read_file size %lld, content %zu bytes", sc_int(r, "size"), *len);
	json_object_put(r);
	return data;
}

/* The size list_files reports for a name in a directory, -1 if absent. */
static long long
listed_size(struct h_server *s, const char *cid, const char *dir,
    const char *name, const char **type)
{
	json_object *r, *e, *entries;
	long long size = -1;
	size_t i;

	r = call_ok(s, "list_files", args(cid, "path", js(dir), NULL));
	entries = h_get(r, "structuredContent.entries");
	cr_assert(
	    entries != NULL && json_object_is_type(entries, json_type_array));
	for (i = 0; i < json_object_array_length(entries); i++) {
		e = json_object_array_get_idx(entries, i);
		if (h_str(e, "name") != NULL &&
		    strcmp(h_str(e, "name"), name) == 0) {
			size = h_int(e, "size");
			cr_expect(h_str(e, "mode") != NULL);
			if (type != NULL) {
				static char t[32];

				snprintf(t, sizeof t, "%s", h_str(e, "type"));
				*type = t;
			}
		}
	}
	json_object_put(r);
	return size;
}

/* How many entries list_files gives for a directory (recursive). */
static size_t
count_entries(
    struct h_server *s, const char *cid, const char *dir, char **names)
{
	json_object *r, *entries;
	size_t n, i, len = 0;
	char *out = NULL;

	r = call_ok(s, "list_files",
	    args(cid, "path", js(dir), "recursive", jb(1), NULL));
	entries = h_get(r, "structuredContent.entries");
	cr_assert(entries != NULL);
	n = json_object_array_length(entries);
	if (names != NULL) {
		out = calloc(1, 1);
		for (i = 0; i < n; i++) {
			const char *nm = h_str(
			    json_object_array_get_idx(entries, i), "name");

			out = realloc(out, len + strlen(nm ? nm : "") + 2);
			len += (size_t)sprintf(out + len, "%s ", nm ? nm : "");
		}
		*names = out;
	}
	json_object_put(r);
	return n;
}

/* Is there an entry in skipped whose path is name or ends in /name? */
static int
skipped_has(json_object *r, const char *name, const char *reason)
{
	json_object *list = h_get(r, "structuredContent.skipped"), *e;
	const char *p, *why;
	size_t i, pl, nl = strlen(name);

	for (i = 0; list != NULL && i < json_object_array_length(list); i++) {
		e = json_object_array_get_idx(list, i);
		p = h_str(e, "path");
		why = h_str(e, "reason");
		if (p == NULL)
			continue;
		pl = strlen(p);
		if (!(strcmp(p, name) == 0 ||
		        (pl > nl && strcmp(p + pl - nl, name) == 0 &&
		            p[pl - nl - 1] == '/')))
			continue;
		if (reason == NULL || (why != NULL && strcmp(why, reason) == 0))
			return 1;
	}
	return 0;
}

/* sandbox_exec of one command that must succeed: stdout. */
static char *
sb_sh(struct h_server *s, const char *cid, const char *fmt, ...)
{
	char *cmd, *out;
	va_list ap;

	va_start(ap, fmt);
	cr_assert(vasprintf(&cmd, fmt, ap) > 0);
	va_end(ap);
	out = h_exec_ok(s, cid, cmd);
	free(cmd);
	return out;
}

static char *
sb_sha256(struct h_server *s, const char *cid, const char *path)
{
	char *q = shq(path), *out;

	out = sb_sh(s, cid, "sha256sum < %s", q);
	free(q);
	out[strcspn(out, " \n")] = '\0';
	return out;
}

static char *
sb_tree_sum(struct h_server *s, const char *cid, const char *dir)
{
	char *q = shq(dir), *out;

	out = sb_sh(s, cid, tree_sum_cmd, q);
	free(q);
	out[strcspn(out, " \n")] = '\0';
	return out;
}

/* --- round trips --- */

/* write_file, then read_file and copy_file_from_sandbox: same bytes. */
static void
round_trip_write(struct h_server *s, const char *cid, const char *name,
    const unsigned char *data, size_t len, int binary)
{
	json_object *r, *a;
	unsigned char *back;
	char *content, *sbpath, *host, *hostdata;
	size_t blen;

	content = binary ? b64_encode(data, len) : NULL;
	a = args(cid, "file_name", js(name), "file_contents",
	    binary ? js(content) : jsn((const char *)data, len), NULL);
	if (binary)
		json_object_object_add(a, "encoding", js("base64"));
	r = call_ok(s, "write_file", a);
	cr_assert(asprintf(&sbpath, "/app/%s", name) > 0);
	cr_expect_str_eq(sc_str(r, "path"), sbpath);
	cr_expect_eq(sc_int(r, "bytes"), (long long)len, "write_file bytes");
	json_object_put(r);
	free(content);

	/* read_file, base64 (byte-exact whatever the content). */
	back = sandbox_read(s, cid, name, &blen);
	cr_expect_eq(blen, len, "read_file of %s: %zu bytes, wrote %zu", name,
	    blen, len);
	cr_expect(blen == len && memcmp(back, data, len) == 0,
	    "read_file of %s: content differs", name);
	free(back);

	/* read_file as text for text. */
	if (!binary) {
		r = call_ok(
		    s, "read_file", args(cid, "file_path", js(sbpath), NULL));
		cr_expect_eq(json_object_get_string_len(
		                 h_get(r, "structuredContent.content")),
		    (int)len);
		cr_expect(sc_str(r, "content") != NULL &&
		              memcmp(sc_str(r, "content"), data, len) == 0,
		    "read_file utf-8 of %s differs", name);
		cr_expect_eq(sc_int(r, "size"), (long long)len);
		json_object_put(r);
	}

	/* copy_file_from_sandbox to the host. */
	host = hpath(g_allowed, "from-write.out");
	unlink(host);
	r = call_ok(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js(sbpath), "local_dest_path",
	        js(host), NULL));
	cr_expect_eq(sc_int(r, "bytes"), (long long)len);
	json_object_put(r);
	hostdata = read_host(host, &blen);
	cr_assert(hostdata != NULL, "%s was not written", host);
	cr_expect(blen == len && memcmp(hostdata, data, len) == 0,
	    "copy_file_from_sandbox of %s: %zu bytes, content %s", sbpath, blen,
	    blen == len ? "differs" : "-");
	free(hostdata);
	unlink(host);
	free(host);
	free(sbpath);
}

/* copy_file of a host file, then copy_file_from_sandbox: same bytes. */
static void
round_trip_copy(struct h_server *s, const char *cid, const char *hostname,
    const char *sbpath, const char *backname, const unsigned char *data,
    size_t len)
{
	json_object *r;
	char *src, *back, *got;
	const char *type = NULL;
	size_t blen;

	src = hpath(g_allowed, hostname);
	back = hpath(g_allowed, backname);
	write_host(src, data, len);
	r = call_ok(s, "copy_file",
	    args(
	        cid, "local_src_file", js(src), "dest_path", js(sbpath), NULL));
	cr_expect_str_eq(sc_str(r, "path"), sbpath);
	cr_expect_eq(sc_int(r, "bytes"), (long long)len, "copy_file bytes");
	json_object_put(r);

	/* list_files sees it with its size. */
	{
		char *dir = strdup(sbpath), *slash = strrchr(dir, '/');

		*slash = '\0';
		cr_expect_eq(listed_size(s, cid, dir, slash + 1, &type),
		    (long long)len, "list_files size of %s", sbpath);
		cr_expect(type != NULL && strcmp(type, "file") == 0);
		free(dir);
	}

	r = call_ok(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js(sbpath), "local_dest_path",
	        js(back), NULL));
	cr_expect_str_eq(sc_str(r, "path"), back);
	cr_expect_eq(sc_int(r, "bytes"), (long long)len);
	json_object_put(r);
	got = read_host(back, &blen);
	cr_assert(got != NULL, "%s was not written", back);
	cr_expect_eq(blen, len, "%s: %zu bytes, expected %zu", back, blen, len);
	cr_expect(blen == len && memcmp(got, data, len) == 0,
	    "%s: content differs from %s", back, src);
	free(got);
	free(src);
	free(back);
}

Test(files, round_trip_text, .timeout = 180, .fini = files_fini)
{
	static const char text[] =
	    "line one\nline \"two\" with\ttab and \\backslash\r\n"
	    "unicode: \xc3\xa9\xc3\xa0\xc3\xbc \xe6\x96\x87\xe5\xad\x97 "
	    "\xf0\x9f\x98\x80 \xe2\x98\x83\n{\"json\": [1,2]}\n$HOME `x` 'q'\n"
	    "no newline at the end";
	struct h_server *s;
	json_object *r;
	char *cid;

	make_dirs();
	s = start(NULL);
	cid = h_create(s, NULL);
	round_trip_write(
	    s, cid, "text.txt", (const unsigned char *)text, strlen(text), 0);
	round_trip_write(s, cid, "sub/dir/nested.txt",
	    (const unsigned char *)text, strlen(text), 0);
	round_trip_copy(s, cid, "host-text.txt", "/app/copied/text.txt",
	    "host-text.back", (const unsigned char *)text, strlen(text));

	/* read_file with offset and length: the slice, and truncated. */
	r = call_ok(s, "read_file",
	    args(cid, "file_path", js("text.txt"), "offset",
	        json_object_new_int(5), "length", json_object_new_int(3),
	        NULL));
	cr_expect_str_eq(sc_str(r, "content"), "one");
	cr_expect_eq(sc_int(r, "size"), (long long)strlen(text));
	cr_expect(h_bool(r, "structuredContent.truncated"));
	json_object_put(r);
	finish(s, cid);
}

/*
 * A transfer's tar stream is data: the activity log says how much went
 * out, not what (a copied file's bytes are not in it).
 */
Test(files, transfer_data_not_in_activity_log, .timeout = 180,
    .fini = files_fini)
{
	static const char marker[] = "secret-marker-7f3e9a\n";
	struct h_server *s;
	json_object *r, *m;
	char params[256], *cid, *host;
	const char *log;

	make_dirs();
	s = start(NULL);
	cid = h_create(s, NULL);
	json_object_put(call_ok(s, "write_file",
	    args(cid, "file_name", js("m.txt"), "file_contents", js(marker),
	        NULL)));
	host = hpath(g_allowed, "m.back");
	r = call_ok(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/m.txt"), "local_dest_path",
	        js(host), NULL));
	cr_expect_eq(sc_int(r, "bytes"), (long long)strlen(marker));
	json_object_put(r);

	snprintf(
	    params, sizeof params, "{\"uri\":\"containers://%s/logs\"}", cid);
	m = h_request(s, "resources/read", params, 30000);
	log = h_str(m, "result.contents.0.text");
	cr_assert_not_null(log, "%s", json_object_to_json_string(m));
	cr_expect(
	    h_contains(log, "bytes of standard output (data, not logged)"),
	    "%s", log);
	cr_expect(!h_contains(log, "secret-marker-7f3e9a"),
	    "the copied file is in the activity log:\n%s", log);
	json_object_put(m);
	unlink(host);
	free(host);
	finish(s, cid);
}

Test(files, round_trip_binary, .timeout = 180, .fini = files_fini)
{
	unsigned char data[256 * 16 + 7];
	struct h_server *s;
	uint64_t seed = 42;
	size_t i;
	char *cid;

	make_dirs();
	for (i = 0; i < 256 * 16; i++)
		data[i] = (unsigned char)(i % 256); /* every byte value */
	fill_random(data + 256 * 16, 7, &seed);
	s = start(NULL);
	cid = h_create(s, NULL);
	/* Every length modulo 3 for the base64 padding. */
	round_trip_write(s, cid, "bytes.bin", data, 256, 1);
	round_trip_write(s, cid, "bytes2.bin", data, 257, 1);
	round_trip_write(s, cid, "bytes3.bin", data, 258, 1);
	round_trip_write(s, cid, "all.bin", data, sizeof data, 1);
	round_trip_copy(s, cid, "host.bin", "/app/host.bin", "host.back", data,
	    sizeof data);
	round_trip_copy(s, cid, "nul.bin", "/tmp/nul.bin", "nul.back",
	    (const unsigned char *)"\0\0\0\xff\0", 5);
	finish(s, cid);
}

Test(files, round_trip_empty, .timeout = 180, .fini = files_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid;

	make_dirs();
	s = start(NULL);
	cid = h_create(s, NULL);
	round_trip_write(s, cid, "empty.txt", (const unsigned char *)"", 0, 0);
	round_trip_write(s, cid, "empty.bin", (const unsigned char *)"", 0, 1);
	cr_expect_eq(listed_size(s, cid, "/app", "empty.txt", NULL), 0);
	round_trip_copy(s, cid, "empty-host", "/app/empty-copied",
	    "empty-host.back", (const unsigned char *)"", 0);
	r = call_ok(
	    s, "read_file", args(cid, "file_path", js("empty.txt"), NULL));
	cr_expect_str_eq(sc_str(r, "content"), "");
	cr_expect_eq(sc_int(r, "size"), 0);
	cr_expect(!h_bool(r, "structuredContent.truncated"));
	json_object_put(r);
	finish(s, cid);
}

/*
 * Names with spaces and non-ASCII characters, in every tool.  write_file
 * comes last: see the report of issue 3 (a non-ASCII file_name crashed
 * the server).
 */
Test(files, round_trip_unicode_names, .timeout = 240, .fini = files_fini)
{
	static const char data[] = "caf\xc3\xa9 \xe2\x98\x83 content\n";
	static const char wname[] =
	    "dir with space/\xc3\xbcn\xc3\xaf\x63\xc3\xb8\x64\xc3\xa9 "
	    "\xe6\x96\x87\xe4\xbb\xb6 \xe2\x98\x83.txt";
	struct h_server *s;
	json_object *r;
	char *cid, *proj, *p, *sum1, *sum2, *back;
	const char *type = NULL;

	make_dirs();
	s = start(NULL);
	cid = h_create(s, NULL);

	/* copy_file in and out, spaces and unicode on both sides. */
	round_trip_copy(s, cid, "h\xc3\xb4st f\xc3\xafle \xe5\x90\x8d.txt",
	    "/app/d\xc3\xabst dir/\xc3\xb1\x61me with space.txt",
	    "\xc3\xb6ut f\xc3\xafle \xe2\x98\x83.txt",
	    (const unsigned char *)data, strlen(data));

	/* A name made in the sandbox: list_files, read_file. */
	free(sb_sh(s, cid, "printf x > '/app/made \xc3\xa9\xe2\x98\x83.txt'"));
	cr_expect_eq(
	    listed_size(s, cid, "/app", "made \xc3\xa9\xe2\x98\x83.txt", &type),
	    1, "list_files does not show a unicode name made in the sandbox");
	r = call_ok(s, "read_file",
	    args(cid, "file_path", js("made \xc3\xa9\xe2\x98\x83.txt"), NULL));
	cr_expect_str_eq(sc_str(r, "content"), "x");
	json_object_put(r);

	/* copy_project of a unicode tree, and back out. */
	proj = hpath(g_allowed, "pr\xc3\xb8ject dir");
	p = hpath(proj, "s\xc3\xbc\x62 \xe6\x96\x87");
	mkdirs(p);
	free(p);
	p = hpath(proj, "s\xc3\xbc\x62 \xe6\x96\x87/f\xc3\xafle one.txt");
	write_host(p, data, strlen(data));
	free(p);
	p = hpath(proj, "top \xe2\x98\x83.txt");
	write_host(p, "top\n", 4);
	free(p);
	r = call_ok(s, "copy_project",
	    args(cid, "local_src_dir", js(proj), "dest_dir",
	        js("/app/pr\xc3\xb8ject copy"), NULL));
	cr_expect_str_eq(sc_str(r, "dest_dir"), "/app/pr\xc3\xb8ject copy");
	cr_expect_eq(sc_int(r, "skipped_count"), 0);
	json_object_put(r);
	sum1 = host_tree_sum(proj);
	sum2 = sb_tree_sum(s, cid, "/app/pr\xc3\xb8ject copy");
	cr_expect_str_eq(sum1, sum2, "copy_project of a unicode tree differs");
	free(sum2);
	back = hpath(g_allowed, "back \xc3\xa9");
	r = call_ok(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/pr\xc3\xb8ject copy"),
	        "local_dest_path", js(back), NULL));
	json_object_put(r);
	sum2 = host_tree_sum(back);
	cr_expect_str_eq(sum1, sum2, "a unicode tree copied back differs");
	free(sum1);
	free(sum2);
	free(back);
	free(proj);

	/* write_file with a non-ASCII name and a space. */
	round_trip_write(
	    s, cid, wname, (const unsigned char *)data, strlen(data), 0);
	finish(s, cid);
}

/* --- a 100 MB file, with the memory of supervisor and worker watched --- */

struct sampler {
	pid_t pid[2];
	long peak[2]; /* VmRSS kB */
	long samples;
	volatile int stop;
	pthread_t th;
};

static void *
sampler_main(void *arg)
{
	struct sampler *sm = arg;
	long v;
	int i;

	while (!sm->stop) {
		for (i = 0; i < 2; i++)
			if ((v = h_status_kb(sm->pid[i], "VmRSS")) >
			    sm->peak[i])
				sm->peak[i] = v;
		sm->samples++;
		usleep(50000);
	}
	return NULL;
}

static void
sampler_start(struct sampler *sm, pid_t sup, pid_t worker)
{
	memset(sm, 0, sizeof *sm);
	sm->pid[0] = sup;
	sm->pid[1] = worker;
	sm->peak[0] = sm->peak[1] = -1;
	cr_assert(pthread_create(&sm->th, NULL, sampler_main, sm) == 0);
}

static void
sampler_stop(struct sampler *sm)
{
	sm->stop = 1;
	pthread_join(sm->th, NULL);
}

Test(files, large_file_100mb_bounded_memory, .timeout = 600, .fini = files_fini)
{
	const size_t size = 100 * MIB;
	struct sampler in, out;
	struct h_server *s;
	json_object *r, *a;
	long long t0, t_in, t_out;
	char *cid, *src, *dst, *hsum, *ssum, *osum;
	pid_t worker;

	make_dirs();
	src = hpath(g_allowed, "big.bin");
	dst = hpath(g_allowed, "big.back");
	write_random(src, size, 0x5eed5eedULL);
	hsum = host_sha256(src);

	s = start("--workdir-mb", "300", NULL);
	cid = h_create(s, NULL);
	r = call_ok(s, "get_sandbox_status", args(cid, NULL));
	worker = (pid_t)h_int(r, "structuredContent.sandboxes.0.worker_pid");
	json_object_put(r);
	cr_assert(
	    worker > 1 && h_pid_alive(worker), "worker_pid %d", (int)worker);
	fprintf(stderr,
	    "files/large: before: supervisor VmRSS %ld kB, worker VmRSS %ld "
	    "kB\n",
	    h_status_kb(s->pid, "VmRSS"), h_status_kb(worker, "VmRSS"));

	/* In. */
	sampler_start(&in, s->pid, worker);
	t0 = h_now_ms();
	a = args(cid, "local_src_file", js(src), "dest_path",
	    js("/app/big.bin"), NULL);
	r = call_t(s, "copy_file", a, BIG_TIMEOUT_MS);
	t_in = h_now_ms() - t0;
	sampler_stop(&in);
	cr_assert(!h_is_error(r), "copy_file of 100 MB failed: %s", h_text(r));
	cr_expect_eq(sc_int(r, "bytes"), (long long)size);
	json_object_put(r);
	ssum = sb_sha256(s, cid, "/app/big.bin");
	cr_expect_str_eq(ssum, hsum, "sha256 in the sandbox differs");

	/* Out. */
	sampler_start(&out, s->pid, worker);
	t0 = h_now_ms();
	a = args(cid, "container_src_path", js("/app/big.bin"),
	    "local_dest_path", js(dst), NULL);
	r = call_t(s, "copy_file_from_sandbox", a, BIG_TIMEOUT_MS);
	t_out = h_now_ms() - t0;
	sampler_stop(&out);
	cr_assert(!h_is_error(r), "copy_file_from_sandbox of 100 MB failed: %s",
	    h_text(r));
	cr_expect_eq(sc_int(r, "bytes"), (long long)size);
	json_object_put(r);
	osum = host_sha256(dst);
	cr_expect_str_eq(osum, hsum, "sha256 of the copy back differs");

	fprintf(stderr,
	    "files/large: copy_file 100 MiB in %lld ms (%.1f MiB/s), peak "
	    "VmRSS supervisor %ld kB, worker %ld kB (%ld samples)\n",
	    t_in, t_in > 0 ? 100000.0 / (double)t_in : 0.0, in.peak[0],
	    in.peak[1], in.samples);
	fprintf(stderr,
	    "files/large: copy_file_from_sandbox 100 MiB in %lld ms (%.1f "
	    "MiB/s), peak VmRSS supervisor %ld kB, worker %ld kB (%ld "
	    "samples)\n",
	    t_out, t_out > 0 ? 100000.0 / (double)t_out : 0.0, out.peak[0],
	    out.peak[1], out.samples);
	fprintf(stderr,
	    "files/large: VmHWM (whole life) supervisor %ld kB, worker %ld "
	    "kB\n",
	    h_status_kb(s->pid, "VmHWM"), h_status_kb(worker, "VmHWM"));

	cr_expect_gt(in.samples, 0);
	cr_expect_gt(in.peak[0], 0, "no VmRSS read for the supervisor");
	cr_expect_gt(in.peak[1], 0, "no VmRSS read for the worker");
	cr_expect_lt(in.peak[0], RSS_LIMIT_KB,
	    "supervisor VmRSS reached %ld kB during copy_file", in.peak[0]);
	cr_expect_lt(in.peak[1], RSS_LIMIT_KB,
	    "worker VmRSS reached %ld kB during copy_file", in.peak[1]);
	cr_expect_lt(out.peak[0], RSS_LIMIT_KB,
	    "supervisor VmRSS reached %ld kB during copy_file_from_sandbox",
	    out.peak[0]);
	cr_expect_lt(out.peak[1], RSS_LIMIT_KB,
	    "worker VmRSS reached %ld kB during copy_file_from_sandbox",
	    out.peak[1]);
	cr_expect(h_pid_alive(worker), "the worker changed during the test");

	free(hsum);
	free(ssum);
	free(osum);
	free(src);
	free(dst);
	finish(s, cid);
}

/* --- a deep and wide tree through copy_project --- */

Test(files, copy_project_deep_wide, .timeout = 600, .fini = files_fini)
{
	enum { DEPTH = 20, WIDE_DIRS = 50, PER_DIR = 101 };
	struct h_server *s;
	json_object *r, *a;
	char *cid, *tree, *p, *sum1, *sum2, *back, *cnt;
	char rel[1024], content[256];
	long long bytes = 0, t0;
	int i, j, nfiles = 0;
	size_t len;

	make_dirs();
	tree = hpath(g_allowed, "tree");
	/* 20 levels deep, a file at each. */
	snprintf(rel, sizeof rel, "%s", tree);
	for (i = 1; i <= DEPTH; i++) {
		len = strlen(rel);
		snprintf(rel + len, sizeof rel - len, "/level-%02d", i);
		mkdirs(rel);
		p = hpath(rel, "file.txt");
		snprintf(content, sizeof content, "depth %d\n", i);
		write_host(p, content, strlen(content));
		bytes += (long long)strlen(content);
		nfiles++;
		free(p);
	}
	/* 50 directories of 101 files: 5,050 files. */
	for (i = 0; i < WIDE_DIRS; i++) {
		snprintf(rel, sizeof rel, "%s/wide/dir-%02d", tree, i);
		mkdirs(rel);
		for (j = 0; j < PER_DIR; j++) {
			snprintf(rel, sizeof rel,
			    "%s/wide/dir-%02d/file-%04d.txt", tree, i, j);
			len = (size_t)snprintf(content, sizeof content,
			    "dir %d file %d %.*s\n", i, j, (i * 7 + j) % 100,
			    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
			write_host(rel, content, len);
			bytes += (long long)len;
			nfiles++;
		}
	}
	cr_assert_geq(nfiles, 5000);
	sum1 = host_tree_sum(tree);

	s = start(NULL);
	cid = h_create(s, NULL);
	t0 = h_now_ms();
	a = args(cid, "local_src_dir", js(tree), NULL);
	r = call_t(s, "copy_project", a, BIG_TIMEOUT_MS);
	cr_assert(!h_is_error(r), "copy_project failed: %s", h_text(r));
	fprintf(stderr,
	    "files/tree: copy_project of %d files (%lld bytes) in %lld ms\n",
	    nfiles, bytes, h_now_ms() - t0);
	cr_expect_str_eq(sc_str(r, "dest_dir"), "/app/tree");
	cr_expect_geq(sc_int(r, "files"), nfiles,
	    "copy_project reports %lld entries for %d files",
	    sc_int(r, "files"), nfiles);
	cr_expect_eq(sc_int(r, "bytes"), bytes);
	cr_expect_eq(sc_int(r, "skipped_count"), 0);
	json_object_put(r);

	cnt = sb_sh(s, cid, "find /app/tree -type f | wc -l");
	cr_expect_eq(atoi(cnt), nfiles, "%s files in the sandbox, expected %d",
	    cnt, nfiles);
	free(cnt);
	cnt = sb_sh(s, cid,
	    "test -f /app/tree/level-01/level-02/level-03/level-04/level-05/"
	    "level-06/level-07/level-08/level-09/level-10/level-11/level-12/"
	    "level-13/level-14/level-15/level-16/level-17/level-18/level-19/"
	    "level-20/file.txt && cat /app/tree/level-01/level-02/level-03/"
	    "level-04/level-05/level-06/level-07/level-08/level-09/level-10/"
	    "level-11/level-12/level-13/level-14/level-15/level-16/level-17/"
	    "level-18/level-19/level-20/file.txt");
	cr_expect_str_eq(cnt, "depth 20\n");
	free(cnt);
	sum2 = sb_tree_sum(s, cid, "/app/tree");
	cr_expect_str_eq(sum1, sum2,
	    "the tree in the sandbox differs from the host's (checksum of "
	    "names and contents)");
	free(sum2);

	/* And the whole tree back out. */
	back = hpath(g_allowed, "tree-back");
	t0 = h_now_ms();
	a = args(cid, "container_src_path", js("/app/tree"), "local_dest_path",
	    js(back), NULL);
	r = call_t(s, "copy_file_from_sandbox", a, BIG_TIMEOUT_MS);
	cr_assert(!h_is_error(r), "copy_file_from_sandbox of the tree: %s",
	    h_text(r));
	fprintf(stderr,
	    "files/tree: copy_file_from_sandbox of the tree in %lld "
	    "ms\n",
	    h_now_ms() - t0);
	cr_expect_eq(sc_int(r, "bytes"), bytes);
	json_object_put(r);
	sum2 = host_tree_sum(back);
	cr_expect_str_eq(sum1, sum2, "the tree copied back differs");
	expect_only_files_and_dirs(back);
	free(sum1);
	free(sum2);
	free(back);
	free(tree);
	finish(s, cid);
}

/* --- adversarial paths --- */

Test(files, adversarial_paths, .timeout = 240, .fini = files_fini)
{
	static const char *const bad_names[] = {"../x", "../../etc/x", "/abs",
	    "/etc/passwd", "a/../b", "..", ".", "./x", "a/./b", "a//b", "x/",
	    "", NULL};
	struct h_server *s;
	json_object *r;
	char *cid, *src, *p, *before_base, *before_out, *after, *rel_out;
	int i;

	make_dirs();
	src = hpath(g_allowed, "src.txt");
	write_host(src, "src\n", 4);
	p = hpath(g_allowed, "proj");
	mkdirs(p);
	free(p);
	p = hpath(g_allowed, "proj/f.txt");
	write_host(p, "f\n", 2);
	free(p);
	/* A host symlink inside the allowed directory that leads out. */
	p = hpath(g_allowed, "to-outside");
	cr_assert(symlink(g_outside, p) == 0);
	free(p);
	before_base = listing(g_base);
	before_out = listing(g_outside);

	s = start(NULL);
	cid = h_create(s, NULL);
	free(sb_sh(s, cid, "echo in-sandbox > /app/inside.txt"));

	/* write_file: file_name never leaves dest_dir. */
	for (i = 0; bad_names[i] != NULL; i++)
		expect_refused(s, "write_file",
		    args(cid, "file_name", js(bad_names[i]), "file_contents",
		        js("evil"), NULL),
		    "file_name");
	/* dest_dir must be absolute. */
	expect_refused(s, "write_file",
	    args(cid, "file_name", js("x"), "dest_dir", js("relative/dir"),
	        "file_contents", js("evil"), NULL),
	    "relative dest_dir");
	expect_refused(s, "write_file",
	    args(cid, "file_name", js("x"), "dest_dir", js("../tmp"),
	        "file_contents", js("evil"), NULL),
	    "relative dest_dir with ..");
	/* An absolute dest_dir outside the writable places: refused. */
	expect_refused(s, "write_file",
	    args(cid, "file_name", js("x"), "dest_dir", js("/etc"),
	        "file_contents", js("evil"), NULL),
	    "dest_dir /etc (read-only root)");
	expect_refused(s, "write_file",
	    args(cid, "file_name", js("x"), "dest_dir", js("/app/../etc"),
	        "file_contents", js("evil"), NULL),
	    "dest_dir /app/../etc (read-only root)");
	/* .. inside the container is harmless where the sandbox may write. */
	r = call(s, "write_file",
	    args(cid, "file_name", js("dotdot.txt"), "dest_dir",
	        js("/app/../tmp"), "file_contents", js("ok"), NULL));
	if (!h_is_error(r)) {
		p = sb_sh(s, cid, "cat /tmp/dotdot.txt");
		cr_expect_str_eq(p, "ok");
		free(p);
	}
	json_object_put(r);

	/* read_file, list_files: .. stays in the container. */
	r = call(s, "read_file",
	    args(cid, "file_path", js("../etc/hostname"), NULL));
	cr_expect(!h_is_error(r) || strlen(h_text(r)) > 0);
	json_object_put(r);
	expect_refused(s, "read_file",
	    args(cid, "file_path", js("../../../nonexistent-file"), NULL),
	    "missing file");
	r = call(s, "list_files", args(cid, "path", js("/app/../app"), NULL));
	cr_expect(!h_is_error(r), "%s", h_text(r));
	json_object_put(r);

	/* copy_file: local_src_file outside the allowed directory. */
	expect_refused(s, "copy_file",
	    args(cid, "local_src_file", js("/etc/passwd"), NULL),
	    "absolute outside");
	p = hpath(g_outside, "secret.txt");
	expect_refused(s, "copy_file", args(cid, "local_src_file", js(p), NULL),
	    "sibling outside");
	free(p);
	p = hpath(g_allowed, "../outside/secret.txt");
	expect_refused(s, "copy_file", args(cid, "local_src_file", js(p), NULL),
	    "../ out of the allowed directory");
	free(p);
	p = hpath(g_allowed, "to-outside/secret.txt");
	expect_refused(s, "copy_file", args(cid, "local_src_file", js(p), NULL),
	    "through a symlink out of the allowed directory");
	free(p);
	cr_assert(asprintf(&rel_out, "../../../../../../../../..%s/secret.txt",
	              g_outside) > 0);
	expect_refused(s, "copy_file",
	    args(cid, "local_src_file", js(rel_out), NULL),
	    "relative ../ path outside");
	expect_refused(s, "copy_file",
	    args(cid, "local_src_file", js(g_allowed), NULL), "a directory");
	/* dest_path with .. in the sandbox: harmless, or refused. */
	r = call(s, "copy_file",
	    args(cid, "local_src_file", js(src), "dest_path",
	        js("../../tmp/dd.txt"), NULL));
	if (!h_is_error(r)) {
		p = sb_sh(s, cid, "cat /tmp/dd.txt");
		cr_expect_str_eq(p, "src\n");
		free(p);
	}
	json_object_put(r);
	expect_refused(s, "copy_file",
	    args(cid, "local_src_file", js(src), "dest_path", js("/app/.."),
	        NULL),
	    "dest_path without a file name");
	expect_refused(s, "copy_file",
	    args(cid, "local_src_file", js(src), "dest_path", js("/etc/x"),
	        NULL),
	    "dest_path in the read-only root");

	/* copy_project: local_src_dir outside. */
	p = hpath(g_allowed, "..");
	expect_refused(s, "copy_project",
	    args(cid, "local_src_dir", js(p), NULL),
	    "the allowed directory's parent");
	free(p);
	expect_refused(s, "copy_project",
	    args(cid, "local_src_dir", js(g_outside), NULL), "a sibling");
	expect_refused(s, "copy_project",
	    args(cid, "local_src_dir", js("/etc"), NULL), "/etc");
	p = hpath(g_allowed, "to-outside");
	expect_refused(s, "copy_project",
	    args(cid, "local_src_dir", js(p), NULL),
	    "a symlink to a directory outside");
	free(p);
	p = hpath(g_allowed, "proj");
	expect_refused(s, "copy_project",
	    args(
	        cid, "local_src_dir", js(p), "dest_dir", js("/etc/proj"), NULL),
	    "dest_dir in the read-only root");
	expect_refused(s, "copy_project",
	    args(cid, "local_src_dir", js(p), "exclude", h_parse("[\"../x\"]"),
	        NULL),
	    "exclude with a /");
	free(p);

	/* copy_file_from_sandbox: local_dest_path out of the allowed dir. */
	p = hpath(g_allowed, "../evil");
	expect_refused(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/inside.txt"),
	        "local_dest_path", js(p), NULL),
	    "local_dest_path ../");
	free(p);
	p = hpath(g_allowed, "../outside/evil");
	expect_refused(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/inside.txt"),
	        "local_dest_path", js(p), NULL),
	    "local_dest_path ../outside");
	free(p);
	p = hpath(g_outside, "evil");
	expect_refused(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/inside.txt"),
	        "local_dest_path", js(p), NULL),
	    "local_dest_path absolute outside");
	free(p);
	p = hpath(g_allowed, "to-outside/evil");
	expect_refused(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/inside.txt"),
	        "local_dest_path", js(p), NULL),
	    "local_dest_path through a host symlink out");
	free(p);
	expect_refused(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/inside.txt"),
	        "local_dest_path", js("/etc/mcp-sandboxd-evil"), NULL),
	    "local_dest_path in /etc");
	cr_assert(
	    asprintf(&p, "../../../../../../../../..%s/evil", g_outside) > 0);
	expect_refused(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/inside.txt"),
	        "local_dest_path", js(p), NULL),
	    "local_dest_path relative ../");
	free(p);
	p = hpath(g_allowed, "..");
	expect_refused(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app"), "local_dest_path",
	        js(p), NULL),
	    "local_dest_path the allowed dir's parent");
	free(p);
	/* container_src_path with ..: read inside the container, lands in
	 * the allowed directory. */
	p = hpath(g_allowed, "hostname-copy");
	r = call(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/../etc/hostname"),
	        "local_dest_path", js(p), NULL));
	if (!h_is_error(r))
		cr_expect_str_eq(sc_str(r, "path"), p);
	json_object_put(r);
	free(p);
	r = call(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("../app/inside.txt"), NULL));
	if (!h_is_error(r)) {
		p = hpath(g_allowed, "inside.txt");
		cr_expect_str_eq(sc_str(r, "path"), p,
		    "the default destination is not in the allowed dir");
		free(p);
	}
	json_object_put(r);
	expect_refused(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/../nonexistent"), NULL),
	    "a missing source");

	/* Nothing new outside the allowed directory. */
	after = listing(g_base);
	cr_expect_str_eq(after, before_base, "the base directory changed");
	free(after);
	after = listing(g_outside);
	cr_expect_str_eq(after, before_out, "the outside directory changed");
	free(after);
	p = read_host("/etc/mcp-sandboxd-evil", NULL);
	cr_expect(p == NULL, "/etc/mcp-sandboxd-evil was written");
	free(p);
	expect_only_files_and_dirs(g_outside);

	free(before_base);
	free(before_out);
	free(rel_out);
	free(src);
	finish(s, cid);
}

/* A symlink made by sandbox code to /etc, then written through. */
Test(files, sandbox_symlink_to_etc, .timeout = 180, .fini = files_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid, *src, *proj, *p, *out;

	make_dirs();
	src = hpath(g_allowed, "x.txt");
	write_host(src, "evil\n", 5);
	proj = hpath(g_allowed, "p");
	mkdirs(proj);
	p = hpath(proj, "inner.txt");
	write_host(p, "evil\n", 5);
	free(p);

	s = start(NULL);
	cid = h_create(s, NULL);
	free(sb_sh(s, cid,
	    "ln -s /etc /app/etc && ln -s / /app/root && "
	    "ln -s /etc/passwd /app/passwd"));

	expect_refused(s, "write_file",
	    args(cid, "file_name", js("x"), "dest_dir", js("/app/etc"),
	        "file_contents", js("evil"), NULL),
	    "dest_dir through a symlink to /etc");
	expect_refused(s, "write_file",
	    args(cid, "file_name", js("etc/x"), "file_contents", js("evil"),
	        NULL),
	    "file_name through a symlink to /etc");
	expect_refused(s, "write_file",
	    args(cid, "file_name", js("root/etc/x"), "file_contents",
	        js("evil"), NULL),
	    "file_name through a symlink to /");
	expect_refused(s, "copy_file",
	    args(cid, "local_src_file", js(src), "dest_path", js("/app/etc/x"),
	        NULL),
	    "dest_path through a symlink to /etc");
	expect_refused(s, "copy_project",
	    args(cid, "local_src_dir", js(proj), "dest_dir", js("/app/etc/p"),
	        NULL),
	    "dest_dir through a symlink to /etc");
	expect_refused(s, "copy_project",
	    args(cid, "local_src_dir", js(proj), "dest_dir",
	        js("/app/root/usr/p"), NULL),
	    "dest_dir through a symlink to /");

	/* A symlink to a file: write_file replaces the link (tar unlinks
	 * first) or fails; /etc/passwd is never changed. */
	r = call(s, "write_file",
	    args(cid, "file_name", js("passwd"), "file_contents", js("evil\n"),
	        NULL));
	json_object_put(r);

	/* Nothing reached /etc or /usr, and the links are as made. */
	out = sb_sh(s, cid,
	    "ls -d /etc/x /etc/p /usr/p 2>/dev/null; grep -c '^root:' "
	    "/etc/passwd; readlink /app/etc");
	cr_expect_str_eq(out, "1\n/etc\n",
	    "something was written through the symlink: %s", out);
	free(out);
	free(src);
	free(proj);
	finish(s, cid);
}

/* Host: a symlink out, a FIFO, a socket (and a device if we may). */
Test(files, host_special_files_skipped, .timeout = 180, .fini = files_fini)
{
	struct sockaddr_un sa;
	struct h_server *s;
	json_object *r;
	char *cid, *proj, *p, *out;
	int sock, have_dev;

	make_dirs();
	proj = hpath(g_allowed, "proj");
	mkdirs(proj);
	p = hpath(proj, "sub");
	mkdirs(p);
	free(p);
	p = hpath(proj, "regular.txt");
	write_host(p, "regular\n", 8);
	free(p);
	p = hpath(proj, "sub/inner.txt");
	write_host(p, "inner\n", 6);
	free(p);
	/* A symlink to a file outside the allowed directory. */
	out = hpath(g_outside, "secret.txt");
	p = hpath(proj, "link-out");
	cr_assert(symlink(out, p) == 0);
	free(p);
	free(out);
	p = hpath(proj, "sub/dir-out");
	cr_assert(symlink(g_outside, p) == 0);
	free(p);
	p = hpath(proj, "link-in");
	cr_assert(symlink("regular.txt", p) == 0);
	free(p);
	p = hpath(proj, "fifo");
	cr_assert(mkfifo(p, 0644) == 0);
	free(p);
	p = hpath(proj, "sock");
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	cr_assert(strlen(p) < sizeof sa.sun_path);
	strcpy(sa.sun_path, p);
	sock = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert(
	    sock != -1 && bind(sock, (struct sockaddr *)&sa, sizeof sa) == 0);
	free(p);
	p = hpath(proj, "null-dev");
	have_dev = mknod(p, S_IFCHR | 0644, makedev(1, 3)) == 0;
	if (!have_dev)
		cr_log_warn(
		    "mknod: %s; the device case is not run", strerror(errno));
	free(p);

	s = start(NULL);
	cid = h_create(s, NULL);
	r = call_ok(
	    s, "copy_project", args(cid, "local_src_dir", js(proj), NULL));
	cr_expect(skipped_has(r, "link-out", "symlink"),
	    "link-out not listed as a skipped symlink: %s",
	    json_object_to_json_string(h_get(r, "structuredContent.skipped")));
	cr_expect(skipped_has(r, "dir-out", "symlink"),
	    "sub/dir-out not listed as a skipped symlink");
	cr_expect(skipped_has(r, "link-in", "symlink"),
	    "link-in not listed as a skipped symlink");
	cr_expect(skipped_has(r, "fifo", "fifo"), "fifo not listed");
	cr_expect(skipped_has(r, "sock", "socket"), "socket not listed");
	if (have_dev)
		cr_expect(
		    skipped_has(r, "null-dev", "device"), "device not listed");
	cr_expect_eq(sc_int(r, "skipped_count"), have_dev ? 6 : 5);
	cr_expect_eq(sc_int(r, "bytes"), 8 + 6);
	json_object_put(r);

	out = sb_sh(s, cid,
	    "cd /app/proj && find . -printf '%%y %%p\\n' | "
	    "LC_ALL=C sort; grep -rl SECRET /app || true");
	cr_expect_str_eq(out,
	    "d .\nd ./sub\nf ./regular.txt\nf ./sub/inner.txt\n",
	    "the sandbox holds other than the regular files: %s", out);
	free(out);

	/* copy_file refuses each of them, without hanging on the FIFO. */
	p = hpath(proj, "link-out");
	expect_refused(s, "copy_file", args(cid, "local_src_file", js(p), NULL),
	    "a symlink to a file outside");
	free(p);
	p = hpath(proj, "sub/dir-out/secret.txt");
	expect_refused(s, "copy_file", args(cid, "local_src_file", js(p), NULL),
	    "a file through a symlinked directory outside");
	free(p);
	p = hpath(proj, "fifo");
	expect_refused(
	    s, "copy_file", args(cid, "local_src_file", js(p), NULL), "a FIFO");
	free(p);
	p = hpath(proj, "sock");
	expect_refused(s, "copy_file", args(cid, "local_src_file", js(p), NULL),
	    "a socket");
	free(p);
	if (have_dev) {
		p = hpath(proj, "null-dev");
		expect_refused(s, "copy_file",
		    args(cid, "local_src_file", js(p), NULL), "a device");
		free(p);
	}
	out = sb_sh(s, cid, "grep -rl SECRET /app /tmp || true");
	cr_expect_str_eq(
	    out, "", "outside content reached the sandbox: %s", out);
	free(out);
	close(sock);
	free(proj);
	finish(s, cid);
}

/* Sandbox: a symlink to /etc/passwd, a hardlink, a FIFO, copied out. */
Test(
    files, sandbox_special_files_copied_out, .timeout = 180, .fini = files_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid, *dest, *p, *before_base, *after;
	size_t len;

	make_dirs();
	before_base = listing(g_base);
	s = start(NULL);
	cid = h_create(s, NULL);
	free(sb_sh(s, cid,
	    "mkdir -p /app/s/sub && printf 'a\\n' > /app/s/a.txt && "
	    "printf 'b\\n' > /app/s/sub/b.txt && ln /app/s/a.txt /app/s/hard && "
	    "ln -s /etc/passwd /app/s/pw && ln -s /etc /app/s/etc && "
	    "ln -s ../.. /app/s/sub/up && ln -s /app/s/a.txt /app/s/abs && "
	    "mkfifo /app/s/ff"));
	dest = hpath(g_allowed, "out");
	r = call_ok(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/s"), "local_dest_path",
	        js(dest), NULL));
	cr_expect(skipped_has(r, "pw", "symlink"),
	    "pw not listed as a skipped symlink: %s",
	    json_object_to_json_string(h_get(r, "structuredContent.skipped")));
	cr_expect(skipped_has(r, "etc", "symlink"), "etc not listed");
	cr_expect(skipped_has(r, "up", "symlink"), "sub/up not listed");
	cr_expect(skipped_has(r, "abs", "symlink"), "abs not listed");
	cr_expect(skipped_has(r, "ff", "fifo"), "ff not listed as a fifo");
	json_object_put(r);

	expect_only_files_and_dirs(dest);
	p = hpath(dest, "a.txt");
	after = read_host(p, &len);
	cr_expect(after != NULL && strcmp(after, "a\n") == 0);
	free(after);
	free(p);
	p = hpath(dest, "sub/b.txt");
	after = read_host(p, &len);
	cr_expect(after != NULL && strcmp(after, "b\n") == 0);
	free(after);
	free(p);
	/* The hardlink: a copy of the content, or left out. */
	p = hpath(dest, "hard");
	after = read_host(p, &len);
	cr_expect(after == NULL || strcmp(after, "a\n") == 0);
	free(after);
	free(p);
	p = hpath(dest, "pw");
	cr_expect(!host_exists(p), "the symlink pw arrived on the host");
	free(p);
	p = hpath(dest, "etc");
	cr_expect(!host_exists(p), "the symlink etc arrived on the host");
	free(p);
	p = hpath(dest, "ff");
	cr_expect(!host_exists(p), "the FIFO arrived on the host");
	free(p);

	/* A FIFO as the source: refused, not hung on. */
	p = hpath(g_allowed, "ff");
	expect_refused(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/s/ff"), "local_dest_path",
	        js(p), NULL),
	    "a FIFO");
	cr_expect(!host_exists(p));
	free(p);

	after = listing(g_base);
	cr_expect_str_eq(after, before_base, "the base directory changed");
	free(after);
	free(before_base);
	free(dest);
	finish(s, cid);
}

/* --- an image whose tar sends a malicious archive --- */

static const char evil_py[] =
    "import io, sys, tarfile\n"
    "out, etcname, outside = sys.argv[1], sys.argv[2], sys.argv[3]\n"
    "def add(t, name, typ=tarfile.REGTYPE, data=b'', link='', maj=0, "
    "mn=0):\n"
    "    ti = tarfile.TarInfo(name)\n"
    "    ti.type = typ\n"
    "    ti.linkname = link\n"
    "    ti.size = len(data) if typ == tarfile.REGTYPE else 0\n"
    "    ti.mode = 0o4755\n"
    "    ti.uid = 0\n"
    "    ti.devmajor, ti.devminor = maj, mn\n"
    "    t.addfile(ti, io.BytesIO(data) if typ == tarfile.REGTYPE else "
    "None)\n"
    "with tarfile.open(out, 'w', format=tarfile.GNU_FORMAT) as t:\n"
    "    add(t, './good.txt', data=b'good\\n')\n"
    "    add(t, '../evil', data=b'evil\\n')\n"
    "    add(t, '../../evil', data=b'evil\\n')\n"
    "    add(t, 'sub/../../evil2', data=b'evil\\n')\n"
    "    add(t, '/abs/evil', data=b'evil\\n')\n"
    "    add(t, outside + '/abs-evil', data=b'evil\\n')\n"
    "    add(t, 'link', tarfile.SYMTYPE, link='/etc')\n"
    "    add(t, 'link/' + etcname, data=b'evil\\n')\n"
    "    add(t, 'olink', tarfile.SYMTYPE, link=outside)\n"
    "    add(t, 'olink/passwd', data=b'evil\\n')\n"
    "    add(t, 'rlink', tarfile.SYMTYPE, link='../..')\n"
    "    add(t, 'rlink/evil3', data=b'evil\\n')\n"
    "    add(t, 'hl', tarfile.LNKTYPE, link='good.txt')\n"
    "    add(t, 'hl-etc', tarfile.LNKTYPE, link='/etc/passwd')\n"
    "    add(t, 'hl-out', tarfile.LNKTYPE, link=outside + '/secret.txt')\n"
    "    add(t, 'dev', tarfile.CHRTYPE, maj=1, mn=3)\n"
    "    add(t, 'blk', tarfile.BLKTYPE, maj=7, mn=0)\n"
    "    add(t, 'fifo', tarfile.FIFOTYPE)\n"
    "    add(t, 'good2.txt', data=b'good2\\n')\n";

Test(files, malicious_tar_from_sandbox, .timeout = 300, .fini = files_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid, *ctx, *p, *q, *out, *dest, *before_base, *before_out, *a;
	char etcname[64], etcpath[128];
	struct stat st;
	int abs_before;

	make_dirs();
	snprintf(etcname, sizeof etcname, "mcp-sandboxd-evil-%d-%d",
	    (int)getpid(), ++g_counter);
	snprintf(etcpath, sizeof etcpath, "/etc/%s", etcname);
	abs_before = host_exists("/abs/evil");
	ctx = hpath(g_base, "image");
	mkdirs(ctx);
	p = hpath(ctx, "evil.py");
	write_host(p, evil_py, strlen(evil_py));
	q = hpath(ctx, "evil.tar");
	free(run_ok("python3 %s %s %s %s", p, q, etcname, g_outside));
	free(p);
	free(q);
	p = hpath(ctx, "tar");
	write_host(p, "#!/bin/sh\ncat /evil.tar\n", 24);
	cr_assert(chmod(p, 0755) == 0);
	free(p);
	p = hpath(ctx, "Dockerfile");
	cr_assert(
	    asprintf(&a,
	        "FROM %s\nCOPY evil.tar /evil.tar\nCOPY tar /usr/bin/tar\n",
	        H_IMAGE) > 0);
	write_host(p, a, strlen(a));
	free(a);
	free(p);
	snprintf(g_image, sizeof g_image, "mcp-sandboxd-test/evil-tar:%d-%d",
	    (int)getpid(), g_counter);
	free(
	    run_ok("docker build -q --label %s=files-evil-tar-%d -t %s %s 2>&1",
	        H_LABEL_KEY, (int)getpid(), g_image, ctx));
	free(ctx);

	before_base = listing(g_base);
	before_out = listing(g_outside);
	s = start(NULL);
	cr_assert(asprintf(&a, "{\"image\":\"%s\"}", g_image) > 0);
	cid = h_create(s, a);
	free(a);
	dest = hpath(g_allowed, "dest");
	r = call(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app"), "local_dest_path",
	        js(dest), NULL));
	fprintf(stderr, "files/malicious: %s\n",
	    json_object_to_json_string_ext(
	        h_get(r, "structuredContent"), JSON_C_TO_STRING_PLAIN));
	cr_expect(!h_is_error(r),
	    "copy_file_from_sandbox of the malicious tar failed instead of "
	    "skipping the bad entries: %s",
	    h_text(r));
	if (!h_is_error(r)) {
		cr_expect(
		    skipped_has(r, "../evil", NULL), "../evil not skipped");
		cr_expect(skipped_has(r, "../../evil", NULL),
		    "../../evil not skipped");
		cr_expect(skipped_has(r, "/abs/evil", NULL) ||
		              skipped_has(r, "abs/evil", NULL),
		    "/abs/evil not skipped");
		cr_expect(
		    skipped_has(r, "link", "symlink"), "link not skipped");
		cr_expect(
		    skipped_has(r, "olink", "symlink"), "olink not skipped");
		cr_expect(skipped_has(r, "hl", "hardlink"), "hl not skipped");
		cr_expect(
		    skipped_has(r, "hl-etc", "hardlink"), "hl-etc not skipped");
		cr_expect(
		    skipped_has(r, "hl-out", "hardlink"), "hl-out not skipped");
		cr_expect(skipped_has(r, "dev", "device"), "dev not skipped");
		cr_expect(skipped_has(r, "blk", "device"), "blk not skipped");
		cr_expect(skipped_has(r, "fifo", "fifo"), "fifo not skipped");
	}
	json_object_put(r);

	/* Nothing outside the destination. */
	cr_expect(!host_exists(etcpath), "%s was written through link -> /etc",
	    etcpath);
	unlink(etcpath);
	if (!abs_before)
		cr_expect(!host_exists("/abs/evil"), "/abs/evil was written");
	p = hpath(g_allowed, "evil");
	cr_expect(!host_exists(p), "../evil landed in the allowed directory");
	free(p);
	p = hpath(g_allowed, "evil2");
	cr_expect(!host_exists(p), "sub/../../evil2 landed outside");
	free(p);
	p = hpath(g_allowed, "evil3");
	cr_expect(!host_exists(p), "rlink/evil3 landed outside");
	free(p);
	out = listing(g_base);
	cr_expect_str_eq(out, before_base, "the base directory changed");
	free(out);
	out = listing(g_outside);
	cr_expect_str_eq(out, before_out,
	    "the outside directory changed (olink/passwd or abs-evil)");
	free(out);
	p = hpath(g_outside, "secret.txt");
	cr_assert(stat(p, &st) == 0);
	cr_expect_eq(
	    st.st_nlink, 1, "a hardlink to outside/secret.txt was made");
	free(p);

	/* In the destination: regular files and directories only. */
	expect_only_files_and_dirs(dest);
	p = hpath(dest, "good.txt");
	out = read_host(p, NULL);
	cr_expect(out != NULL && strcmp(out, "good\n") == 0,
	    "good.txt missing or wrong");
	cr_expect(stat(p, &st) == 0 && (st.st_mode & 07000) == 0,
	    "set-id bits kept: %o", (unsigned)st.st_mode);
	free(out);
	free(p);
	p = hpath(dest, "good2.txt");
	out = read_host(p, NULL);
	cr_expect(out != NULL && strcmp(out, "good2\n") == 0,
	    "good2.txt (after the bad entries) missing or wrong");
	free(out);
	free(p);

	free(dest);
	free(before_base);
	free(before_out);
	finish(s, cid);
	out = run_ok("docker rmi -f %s >/dev/null 2>&1 && echo ok", g_image);
	g_image[0] = '\0';
	free(out);
}

/* --- limits and overwriting --- */

Test(files, upload_larger_than_workspace, .timeout = 300, .fini = files_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid, *big, *mid, *proj, *p, *names, *text;
	size_t n;
	int i;

	make_dirs();
	big = hpath(g_allowed, "big30.bin");
	write_random(big, 30 * MIB, 7);
	mid = hpath(g_allowed, "mid12.bin");
	write_random(mid, 12 * MIB, 8);
	proj = hpath(g_allowed, "proj");
	mkdirs(proj);
	for (i = 0; i < 3; i++) {
		char name[32];

		snprintf(name, sizeof name, "part-%d.bin", i);
		p = hpath(proj, name);
		write_random(p, 8 * MIB, (uint64_t)(100 + i));
		free(p);
	}

	s = start("--workdir-mb", "20", NULL);
	cid = h_create(s, NULL);

	/* One file larger than the workdir. */
	r = call_t(s, "copy_file", args(cid, "local_src_file", js(big), NULL),
	    BIG_TIMEOUT_MS);
	cr_expect(h_is_error(r), "copy_file of 30 MB into a 20 MB workdir: %s",
	    h_text(r));
	fprintf(stderr, "files/workspace: copy_file: %s\n", h_text(r));
	json_object_put(r);
	n = count_entries(s, cid, "/app", &names);
	cr_expect_eq(
	    n, 0, "files left in /app after a failed copy_file: %s", names);
	free(names);

	/* A tree larger than the workdir. */
	r = call_t(s, "copy_project",
	    args(cid, "local_src_dir", js(proj), NULL), BIG_TIMEOUT_MS);
	cr_expect(h_is_error(r),
	    "copy_project of 24 MB into a 20 MB workdir: %s", h_text(r));
	json_object_put(r);
	n = count_entries(s, cid, "/app", &names);
	cr_expect_eq(
	    n, 0, "files left in /app after a failed copy_project: %s", names);
	free(names);

	/* write_file past the space left: nothing half-written. */
	r = call_t(s, "copy_file", args(cid, "local_src_file", js(mid), NULL),
	    BIG_TIMEOUT_MS);
	cr_expect(
	    !h_is_error(r), "copy_file of 12 MB into 20 MB: %s", h_text(r));
	json_object_put(r);
	text = malloc(10 * MIB + 1);
	cr_assert(text != NULL);
	memset(text, 'x', 10 * MIB);
	text[10 * MIB] = '\0';
	r = call_t(s, "write_file",
	    args(cid, "file_name", js("ten.txt"), "file_contents",
	        jsn(text, 10 * MIB), NULL),
	    BIG_TIMEOUT_MS);
	free(text);
	cr_expect(
	    h_is_error(r), "write_file of 10 MB with 8 MB free: %s", h_text(r));
	json_object_put(r);
	n = count_entries(s, cid, "/app", &names);
	cr_expect_eq(n, 1, "/app should hold only mid12.bin: %s", names);
	cr_expect(h_contains(names, "mid12.bin"));
	free(names);
	cr_expect_eq(listed_size(s, cid, "/app", "mid12.bin", NULL), 12 * MIB);

	/* The sandbox still works, and /tmp is a separate space. */
	r = call_ok(s, "write_file",
	    args(cid, "file_name", js("small.txt"), "file_contents", js("ok"),
	        NULL));
	json_object_put(r);

	free(big);
	free(mid);
	free(proj);
	finish(s, cid);
}

Test(files, existing_host_file_overwrite, .timeout = 180, .fini = files_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid, *host, *d, *keep, *newf, *sl, *secret, *got;
	struct stat st;

	make_dirs();
	host = hpath(g_allowed, "exists.txt");
	write_host(host, "original host content\n", 22);
	d = hpath(g_allowed, "d");
	mkdirs(d);
	keep = hpath(d, "keep.txt");
	write_host(keep, "host keep\n", 10);
	newf = hpath(d, "new.txt");
	secret = hpath(g_outside, "secret.txt");
	sl = hpath(g_allowed, "link-to-secret");
	cr_assert(symlink(secret, sl) == 0);

	s = start(NULL);
	cid = h_create(s, NULL);
	free(sb_sh(s, cid,
	    "printf 'from sandbox\\n' > /app/new.txt && mkdir /app/d && "
	    "printf 'sandbox keep\\n' > /app/d/keep.txt && "
	    "printf 'sandbox new\\n' > /app/d/new.txt"));

	/* A file: refused without overwrite, unchanged. */
	expect_refused(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/new.txt"),
	        "local_dest_path", js(host), NULL),
	    "an existing host file");
	expect_refused(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/new.txt"),
	        "local_dest_path", js(host), "overwrite", jb(0), NULL),
	    "an existing host file, overwrite false");
	got = read_host(host, NULL);
	cr_expect_str_eq(got, "original host content\n");
	free(got);
	/* With overwrite: replaced. */
	r = call_ok(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/new.txt"),
	        "local_dest_path", js(host), "overwrite", jb(1), NULL));
	json_object_put(r);
	got = read_host(host, NULL);
	cr_expect_str_eq(got, "from sandbox\n");
	free(got);

	/* A directory: existing files kept and listed, new ones written. */
	r = call_ok(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/d"), "local_dest_path",
	        js(d), NULL));
	cr_expect(skipped_has(r, "keep.txt", "exists"),
	    "keep.txt not listed as existing: %s",
	    json_object_to_json_string(h_get(r, "structuredContent.skipped")));
	json_object_put(r);
	got = read_host(keep, NULL);
	cr_expect_str_eq(got, "host keep\n");
	free(got);
	got = read_host(newf, NULL);
	cr_expect(got != NULL && strcmp(got, "sandbox new\n") == 0);
	free(got);
	r = call_ok(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/d"), "local_dest_path",
	        js(d), "overwrite", jb(1), NULL));
	json_object_put(r);
	got = read_host(keep, NULL);
	cr_expect_str_eq(got, "sandbox keep\n");
	free(got);

	/* A symlink at the destination is never followed. */
	expect_refused(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/new.txt"),
	        "local_dest_path", js(sl), NULL),
	    "a symlink at the destination");
	r = call(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/new.txt"),
	        "local_dest_path", js(sl), "overwrite", jb(1), NULL));
	if (!h_is_error(r)) {
		/* Then the link itself was replaced by a regular file. */
		cr_expect(lstat(sl, &st) == 0 && S_ISREG(st.st_mode),
		    "overwrite of a symlink left no regular file");
	}
	json_object_put(r);
	got = read_host(secret, NULL);
	cr_expect_str_eq(got, "SECRET-OUTSIDE\n",
	    "a file outside was written through a symlink");
	free(got);

	free(host);
	free(d);
	free(keep);
	free(newf);
	free(sl);
	free(secret);
	finish(s, cid);
}

/*
 * A transfer that does not fit, onto a file that exists: the call fails
 * and, as it says ("nothing was written/copied"), the file is as before.
 */
Test(files, upload_over_existing_file_too_large, .timeout = 300,
    .fini = files_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid, *big, *text, *names;
	unsigned char *back;
	size_t len;

	make_dirs();
	big = hpath(g_allowed, "big30.bin");
	write_random(big, 30 * MIB, 9);
	s = start("--workdir-mb", "20", NULL);
	cid = h_create(s, NULL);

	/* copy_file onto an existing file. */
	json_object_put(call_ok(s, "write_file",
	    args(cid, "file_name", js("keep.txt"), "file_contents",
	        js("old content\n"), NULL)));
	r = call_t(s, "copy_file",
	    args(cid, "local_src_file", js(big), "dest_path",
	        js("/app/keep.txt"), NULL),
	    BIG_TIMEOUT_MS);
	cr_expect(
	    h_is_error(r), "copy_file of 30 MB into 20 MB: %s", h_text(r));
	json_object_put(r);
	cr_expect_eq(listed_size(s, cid, "/app", "keep.txt", NULL), 12,
	    "after a failed copy_file (\"nothing was copied\") /app/keep.txt "
	    "is %lld bytes, not the 12 it had",
	    listed_size(s, cid, "/app", "keep.txt", NULL));
	free(sb_sh(s, cid, "rm -f /app/keep.txt"));

	/* write_file onto an existing file. */
	json_object_put(call_ok(s, "write_file",
	    args(cid, "file_name", js("small.txt"), "file_contents", js("ok"),
	        NULL)));
	free(sb_sh(s, cid, "head -c 12000000 /dev/zero > /app/filler"));
	text = malloc(10 * MIB);
	cr_assert(text != NULL);
	memset(text, 'x', 10 * MIB);
	r = call_t(s, "write_file",
	    args(cid, "file_name", js("small.txt"), "file_contents",
	        jsn(text, 10 * MIB), NULL),
	    BIG_TIMEOUT_MS);
	free(text);
	cr_expect(
	    h_is_error(r), "write_file of 10 MB with 8 MB free: %s", h_text(r));
	json_object_put(r);
	count_entries(s, cid, "/app", &names);
	cr_expect(h_contains(names, "small.txt"),
	    "after a failed write_file (\"nothing was written\") the existing "
	    "/app/small.txt is gone; /app holds: %s",
	    names);
	free(names);
	if (listed_size(s, cid, "/app", "small.txt", NULL) >= 0) {
		back = sandbox_read(s, cid, "small.txt", &len);
		cr_expect(len == 2 && memcmp(back, "ok", 2) == 0,
		    "small.txt changed by a failed write_file");
		free(back);
	}
	free(big);
	finish(s, cid);
}

/* Directories where files are expected, and files where directories are. */
Test(files, directory_where_file_expected, .timeout = 180, .fini = files_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid, *src, *out, *hd, *p;

	make_dirs();
	src = hpath(g_allowed, "src.txt");
	write_host(src, "src\n", 4);
	hd = hpath(g_allowed, "hostdir");
	mkdirs(hd);
	s = start(NULL);
	cid = h_create(s, NULL);
	free(sb_sh(s, cid,
	    "mkdir -p /app/empty /app/full/sub && echo 1 > /app/full/sub/f && "
	    "echo f > /app/file"));

	expect_refused(s, "read_file",
	    args(cid, "file_path", js("/app/full"), NULL), "a directory");
	expect_refused(s, "list_files",
	    args(cid, "path", js("/app/file"), NULL), "a file");
	expect_refused(s, "list_files",
	    args(cid, "path", js("/app/missing"), NULL), "a missing directory");
	expect_refused(s, "read_file",
	    args(cid, "file_path", js("/app/missing"), NULL), "a missing file");
	expect_refused(s, "write_file",
	    args(cid, "file_name", js("full"), "file_contents", js("x"), NULL),
	    "onto a directory that holds files");
	expect_refused(s, "copy_file",
	    args(cid, "local_src_file", js(hd), NULL), "a host directory");
	/* Onto an existing empty directory: a file is expected there. */
	r = call(s, "write_file",
	    args(
	        cid, "file_name", js("empty"), "file_contents", js("x"), NULL));
	out = sb_sh(s, cid, "test -d /app/empty && echo dir || echo gone");
	cr_expect(h_is_error(r) && strcmp(out, "dir\n") == 0,
	    "write_file onto the existing directory /app/empty: isError %d, "
	    "the directory is %s",
	    h_is_error(r), out);
	free(out);
	json_object_put(r);
	free(sb_sh(s, cid, "rm -rf /app/empty && mkdir /app/empty"));
	r = call(s, "copy_file",
	    args(cid, "local_src_file", js(src), "dest_path", js("/app/empty"),
	        NULL));
	out = sb_sh(s, cid,
	    "test -d /app/empty && echo dir || echo gone; ls /app/empty");
	cr_expect(h_is_error(r) || strcmp(out, "dir\nsrc.txt\n") == 0,
	    "copy_file onto the existing directory /app/empty replaced it "
	    "(isError %d): %s",
	    h_is_error(r), out);
	free(out);
	json_object_put(r);

	/* The host side: a directory is not a file. */
	r = call(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/full"), "local_dest_path",
	        js(src), NULL));
	cr_expect(h_is_error(r), "a directory onto a host file: %s", h_text(r));
	json_object_put(r);
	out = read_host(src, NULL);
	cr_expect_str_eq(out, "src\n");
	free(out);
	r = call(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/file"), "local_dest_path",
	        js(hd), "overwrite", jb(1), NULL));
	p = hpath(hd, "file");
	cr_expect(host_exists(hd), "the host directory was removed");
	if (!h_is_error(r)) {
		/* Into the directory, like cp: the path says where. */
		out = read_host(sc_str(r, "path"), NULL);
		cr_expect(out != NULL && strcmp(out, "f\n") == 0,
		    "copy_file_from_sandbox reports path %s, which does not "
		    "hold the file",
		    sc_str(r, "path"));
		free(out);
	}
	json_object_put(r);
	free(p);
	free(src);
	free(hd);
	finish(s, cid);
}

/*
 * A copy out whose tar in the sandbox fails (a file it cannot read) still
 * sends a whole archive of the rest: the copy fails and nothing of it is
 * written, neither over an existing file (overwrite: true) nor as a new
 * directory (the red team's finding: "nothing was written" while the
 * tree had been merged).
 */
Test(
    files, a_failed_copy_out_writes_nothing, .timeout = 180, .fini = files_fini)
{
	struct h_server *s;
	json_object *r;
	char *cid, *dest, *file, *fresh, *body;

	make_dirs();
	s = start(NULL);
	cid = h_create(s, NULL);
	free(h_exec_ok(s, cid,
	    "mkdir -p /app/o && echo NEW > /app/o/ok.txt && "
	    "echo x > /app/o/unreadable && chmod 000 /app/o/unreadable"));
	dest = hpath(g_allowed, "got");
	mkdirs(dest);
	file = hpath(dest, "ok.txt");
	write_host(file, "ORIGINAL\n", 9);
	r = h_call_tool_obj(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/o"), "local_dest_path",
	        js(dest), "overwrite", jb(1), NULL),
	    60000);
	cr_expect(h_is_error(r), "%s", json_object_to_json_string(r));
	cr_expect(
	    h_contains(h_text(r), "nothing was written"), "%s", h_text(r));
	json_object_put(r);
	body = read_host(file, NULL);
	cr_expect_str_eq(body, "ORIGINAL\n", "the existing file was written");
	free(body);
	fresh = hpath(g_allowed, "fresh");
	r = h_call_tool_obj(s, "copy_file_from_sandbox",
	    args(cid, "container_src_path", js("/app/o"), "local_dest_path",
	        js(fresh), NULL),
	    60000);
	cr_expect(h_is_error(r), "%s", json_object_to_json_string(r));
	json_object_put(r);
	cr_expect(!host_exists(fresh), "%s was made", fresh);
	free(fresh);
	free(file);
	free(dest);
	finish(s, cid);
}
