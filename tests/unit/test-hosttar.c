/* Unit tests of host tar streams (supervisor/host/hosttar.c). */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <criterion/criterion.h>
#include <event2/buffer.h>

#include "hosttar.h"
#include "tmptree.h"

#define BIG_SIZE (20 * 1024 * 1024)
#define UNICODE_NAME                                                           \
	"w\xc3\xafth space/\xc3\xbcn\xc3\xaf \xe6\x97\xa5\xe6\x9c\xac.txt"

static struct hostpolicy hp;
static char err[1024];

static void
mkfile_len(const char *rel, const void *data, size_t len, mode_t mode)
{
	int fd;

	fd = open(tt_at(rel), O_WRONLY | O_CREAT | O_TRUNC, mode);
	cr_assert_neq(fd, -1, "%s: %s", rel, strerror(errno));
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
}

static void
mkfile(const char *rel, const char *content)
{
	mkfile_len(rel, content, strlen(content), 0644);
}

static void
mkdir_at(const char *rel)
{
	cr_assert_eq(
	    mkdir(tt_at(rel), 0755), 0, "%s: %s", rel, strerror(errno));
}

static int
exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* The file's content, malloc'd, its length in *len. */
static char *
slurp(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	int fd;

	fd = open(path, O_RDONLY | O_NOFOLLOW);
	cr_assert_neq(fd, -1, "%s: %s", path, strerror(errno));
	cr_assert_eq(fstat(fd, &st), 0);
	buf = malloc(st.st_size + 1);
	cr_assert_not_null(buf);
	cr_assert_eq(read(fd, buf, st.st_size), st.st_size);
	buf[st.st_size] = '\0';
	close(fd);
	*len = st.st_size;
	return buf;
}

/* Byte n of the 20 MB file: not periodic on any small block size. */
static unsigned char
big_byte(size_t n)
{
	return (unsigned char)((n * 2654435761u) >> 13 ^ n >> 20);
}

static void
mkbig(const char *rel)
{
	static unsigned char chunk[65536];
	size_t off, i;
	int fd;

	fd = open(tt_at(rel), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_neq(fd, -1);
	for (off = 0; off < BIG_SIZE; off += sizeof chunk) {
		for (i = 0; i < sizeof chunk; i++)
			chunk[i] = big_byte(off + i);
		cr_assert_eq(
		    write(fd, chunk, sizeof chunk), (ssize_t)sizeof chunk);
	}
	close(fd);
}

static void
setup(void)
{
	char *dirs[1];

	signal(SIGPIPE, SIG_IGN);
	umask(022);
	tt_make("test-hosttar");
	mkdir_at("src");
	mkdir_at("dest");
	mkdir_at("outside");
	dirs[0] = (char *)tt_at("src");
	cr_assert_eq(
	    hostpolicy_init(&hp, dirs, 1, tt_at("src"), err, sizeof err), 0,
	    "%s", err);
	err[0] = '\0';
}

static void
teardown(void)
{
	hostpolicy_free(&hp);
	tt_remove();
}

TestSuite(tar_out, .init = setup, .fini = teardown, .timeout = 120);
TestSuite(tar_in, .init = setup, .fini = teardown, .timeout = 120);

/*
 * The whole stream of a tar_out, pumped want bytes at a time; checks the
 * buffer never holds much more than want. Returns the pump's last result.
 */
static int
produce(struct tar_out *t, size_t want, char **data, size_t *len)
{
	struct evbuffer *eb = evbuffer_new();
	size_t cap = 1 << 20, n, most = 0;
	int r;

	*data = malloc(cap);
	*len = 0;
	do {
		r = tar_out_pump(t, eb, want);
		n = evbuffer_get_length(eb);
		if (n > most)
			most = n;
		while (*len + n > cap)
			*data = realloc(*data, cap *= 2);
		evbuffer_remove(eb, *data + *len, n);
		*len += n;
	} while (r == 1);
	evbuffer_free(eb);
	cr_assert_leq(most, want + 128 * 1024,
	    "the buffer held %zu bytes for want %zu", most, want);
	return r;
}

/* One entry read back from an archive. */
struct got {
	char name[PATH_MAX];
	int type;
	mode_t perm;
	int64_t size;
	time_t mtime;
	int64_t uid, gid;
	char uname[32], gname[32];
	char *data; /* regular files up to 1 MB; bigger ones are checked */
};

/* Reads an archive from memory; bigfile is compared with big_byte(). */
static struct got *
read_back(const char *data, size_t len, int *count)
{
	struct archive *a;
	struct archive_entry *e;
	struct got *g = NULL;
	locale_t loc, old;
	const void *buf;
	size_t n, i;
	la_int64_t off;
	int r, cap = 0;

	loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	old = uselocale(loc);
	*count = 0;
	a = archive_read_new();
	archive_read_support_format_tar(a);
	cr_assert_eq(archive_read_open_memory(a, data, len), ARCHIVE_OK);
	while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		struct got *x;

		if (*count == cap) {
			cap = cap == 0 ? 64 : cap * 2;
			g = realloc(g, cap * sizeof *g);
			cr_assert_not_null(g);
		}
		x = &g[(*count)++];
		memset(x, 0, sizeof *x);
		snprintf(
		    x->name, sizeof x->name, "%s", archive_entry_pathname(e));
		x->type = archive_entry_filetype(e);
		x->perm = archive_entry_perm(e);
		x->size = archive_entry_size(e);
		x->mtime = archive_entry_mtime(e);
		x->uid = archive_entry_uid(e);
		x->gid = archive_entry_gid(e);
		snprintf(x->uname, sizeof x->uname, "%s",
		    archive_entry_uname(e) ? archive_entry_uname(e) : "");
		snprintf(x->gname, sizeof x->gname, "%s",
		    archive_entry_gname(e) ? archive_entry_gname(e) : "");
		if (x->type != AE_IFREG)
			continue;
		if (x->size > 1024 * 1024) {
			int64_t seen = 0;

			while (archive_read_data_block(a, &buf, &n, &off) ==
			       ARCHIVE_OK) {
				for (i = 0; i < n; i++)
					cr_assert_eq(
					    ((const unsigned char *)buf)[i],
					    big_byte(off + i), "byte %zu",
					    (size_t)off + i);
				seen += n;
			}
			cr_assert_eq(seen, x->size);
			continue;
		}
		x->data = malloc(x->size + 1);
		cr_assert_eq(archive_read_data(a, x->data, x->size), x->size);
		x->data[x->size] = '\0';
	}
	cr_assert_eq(r, ARCHIVE_EOF, "%s", archive_error_string(a));
	archive_read_free(a);
	uselocale(old);
	freelocale(loc);
	return g;
}

static void
got_free(struct got *g, int count)
{
	while (count-- > 0)
		free(g[count].data);
	free(g);
}

static struct got *
find(struct got *g, int count, const char *name)
{
	int i;

	for (i = 0; i < count; i++) {
		if (strcmp(g[i].name, name) == 0)
			return &g[i];
	}
	return NULL;
}

/* Is there a {"path": path, "reason": reason} in a report? */
static int
listed(json_object *list, const char *path, const char *reason)
{
	json_object *o, *p, *r;
	size_t i;

	for (i = 0; i < json_object_array_length(list); i++) {
		o = json_object_array_get_idx(list, i);
		if (json_object_object_get_ex(o, "path", &p) &&
		    json_object_object_get_ex(o, "reason", &r) &&
		    strcmp(json_object_get_string(p), path) == 0 &&
		    strcmp(json_object_get_string(r), reason) == 0)
			return 1;
	}
	return 0;
}

/* The source tree of the round trip; returns its number of entries. */
static int
make_tree(void)
{
	unsigned char bytes[1024];
	char rel[PATH_MAX], longname[200];
	int i, n = 1; /* src itself */

	for (i = 0; i < (int)sizeof bytes; i++)
		bytes[i] = i % 256;
	mkfile("src/hello.txt", "hello, world\n"), n++;
	mkfile_len("src/bytes.bin", bytes, sizeof bytes, 0600), n++;
	mkfile("src/empty", ""), n++;
	mkfile_len("src/run.sh", "#!/bin/sh\necho hi\n", 18, 0755), n++;
	mkfile_len("src/readonly.txt", "ro\n", 3, 0444), n++;
	mkdir_at("src/w\xc3\xafth space"), n++;
	mkfile("src/" UNICODE_NAME, "unicode\n"), n++;
	memset(longname, 'L', 150);
	snprintf(longname + 150, 50, ".txt");
	snprintf(rel, sizeof rel, "src/%s", longname);
	mkfile(rel, "long name\n"), n++;
	strcpy(rel, "src");
	for (i = 1; i <= 10; i++) {
		snprintf(
		    rel + strlen(rel), sizeof rel - strlen(rel), "/d%d", i);
		mkdir_at(rel), n++;
	}
	strcat(rel, "/deep.txt");
	mkfile(rel, "ten levels down\n"), n++;
	mkbig("src/big.bin"), n++;
	return n;
}

Test(tar_out, round_trips_a_tree)
{
	struct tar_limits lim = {0, 0};
	struct tar_out *t;
	struct got *g, *x;
	struct stat st;
	char *data, *content, path[2 * PATH_MAX];
	size_t len, clen;
	uint64_t bytes = 0;
	int expect, count, i;

	expect = make_tree();
	t = tar_out_new(&hp, tt_at("src"), "proj", &lim, NULL, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	cr_assert_eq(
	    produce(t, 16 * 1024, &data, &len), 0, "%s", tar_out_error(t));
	cr_assert_eq(len % 512, 0);
	/* UTF-8 names go in as UTF-8, not as raw bytes. */
	cr_assert_null(memmem(data, len, "hdrcharset", 10));

	g = read_back(data, len, &count);
	cr_assert_eq(count, expect);
	cr_assert_eq(tar_out_files(t), (uint64_t)expect);
	cr_assert_eq(json_object_array_length(tar_out_skipped(t)), 0);
	cr_assert_str_eq(g[0].name, "proj/");
	for (i = 0; i < count; i++) {
		x = &g[i];
		cr_assert_eq(strncmp(x->name, "proj", 4), 0, "%s", x->name);
		snprintf(path, sizeof path, "%s/src%s", tt_root, x->name + 4);
		cr_assert_eq(lstat(path, &st), 0, "%s", path);
		cr_assert_eq(x->perm, st.st_mode & 0777, "%s", x->name);
		cr_assert_eq(x->mtime, st.st_mtime, "%s", x->name);
		cr_assert_eq(x->uid, 65534);
		cr_assert_eq(x->gid, 65534);
		cr_assert_str_eq(x->uname, "nobody");
		cr_assert_str_eq(x->gname, "nogroup");
		if (S_ISDIR(st.st_mode)) {
			cr_assert_eq(x->type, AE_IFDIR, "%s", x->name);
			cr_assert_eq(x->name[strlen(x->name) - 1], '/');
			continue;
		}
		cr_assert_eq(x->type, AE_IFREG, "%s", x->name);
		cr_assert_eq(x->size, st.st_size, "%s", x->name);
		bytes += st.st_size;
		if (x->data == NULL)
			continue; /* big.bin, compared while reading */
		content = slurp(path, &clen);
		cr_assert_eq(clen, (size_t)x->size);
		cr_assert_eq(memcmp(content, x->data, clen), 0, "%s", x->name);
		free(content);
	}
	cr_assert_eq(tar_out_bytes(t), bytes);
	cr_assert_not_null(find(g, count, "proj/" UNICODE_NAME));
	cr_assert_not_null(find(g, count, "proj/big.bin"));
	cr_assert_not_null(
	    find(g, count, "proj/d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/deep.txt"));
	x = find(g, count, "proj/bytes.bin");
	cr_assert_not_null(x);
	for (i = 0; i < 1024; i++)
		cr_assert_eq((unsigned char)x->data[i], i % 256);
	cr_assert_eq(find(g, count, "proj/empty")->size, 0);
	got_free(g, count);
	free(data);
	tar_out_free(t);
}

Test(tar_out, archives_a_single_file_under_its_name)
{
	struct tar_out *t;
	struct got *g;
	char *data;
	size_t len;
	int count;

	mkfile("src/one.txt", "just me\n");
	t = tar_out_new(
	    &hp, "one.txt", "renamed.txt", NULL, NULL, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	cr_assert_eq(produce(t, 4096, &data, &len), 0);
	g = read_back(data, len, &count);
	cr_assert_eq(count, 1);
	cr_assert_str_eq(g[0].name, "renamed.txt");
	cr_assert_str_eq(g[0].data, "just me\n");
	got_free(g, count);
	free(data);
	tar_out_free(t);
}

Test(tar_out, skips_and_reports_symlinks_fifos_sockets_devices)
{
	struct sockaddr_un sun;
	struct tar_out *t;
	struct got *g;
	json_object *skipped;
	char *data;
	size_t len;
	int count, s, dev;

	mkfile("src/real.txt", "real\n");
	mkfile("outside/secret", "secret\n");
	cr_assert_eq(symlink("real.txt", tt_at("src/inside-link")), 0);
	cr_assert_eq(
	    symlink(tt_at("outside/secret"), tt_at("src/outside-link")), 0);
	cr_assert_eq(symlink(tt_at("outside"), tt_at("src/dir-link")), 0);
	cr_assert_eq(mkfifo(tt_at("src/fifo"), 0644), 0);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s", tt_at("src/sock"));
	cr_assert_eq(bind(s, (struct sockaddr *)&sun, sizeof sun), 0);
	dev = mknod(tt_at("src/null"), S_IFCHR | 0644, makedev(1, 3)) == 0;

	t = tar_out_new(&hp, tt_at("src"), "p", NULL, NULL, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	cr_assert_eq(produce(t, 4096, &data, &len), 0);
	close(s);
	g = read_back(data, len, &count);
	cr_assert_eq(count, 2, "only p/ and p/real.txt");
	cr_assert_not_null(find(g, count, "p/real.txt"));
	skipped = tar_out_skipped(t);
	cr_assert(listed(skipped, "p/inside-link", "symlink"));
	cr_assert(listed(skipped, "p/outside-link", "symlink"));
	cr_assert(listed(skipped, "p/dir-link", "symlink"));
	cr_assert(listed(skipped, "p/fifo", "fifo"));
	cr_assert(listed(skipped, "p/sock", "socket"));
	if (dev)
		cr_assert(listed(skipped, "p/null", "device"));
	cr_assert_eq(tar_out_nskipped(t), 5u + dev);
	got_free(g, count);
	free(data);
	tar_out_free(t);
}

Test(tar_out, leaves_out_excluded_names_anywhere)
{
	const char *exclude[] = {".git", "node_modules", NULL};
	struct tar_out *t;
	struct got *g;
	char *data;
	size_t len;
	int count;

	mkdir_at("src/.git");
	mkfile("src/.git/config", "[core]\n");
	mkdir_at("src/node_modules");
	mkfile("src/node_modules/x.js", "x\n");
	mkdir_at("src/lib");
	mkdir_at("src/lib/node_modules");
	mkfile("src/lib/node_modules/y.js", "y\n");
	mkfile("src/lib/main.c", "int main;\n");
	mkfile("src/.gitignore", "build\n");

	t = tar_out_new(&hp, tt_at("src"), "p", NULL, exclude, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	cr_assert_eq(produce(t, 4096, &data, &len), 0);
	g = read_back(data, len, &count);
	cr_assert_eq(count, 4, "p/ p/lib/ p/lib/main.c p/.gitignore");
	cr_assert_not_null(find(g, count, "p/lib/main.c"));
	cr_assert_not_null(find(g, count, "p/.gitignore"));
	cr_assert(listed(tar_out_skipped(t), "p/.git", "excluded"));
	cr_assert(listed(tar_out_skipped(t), "p/node_modules", "excluded"));
	cr_assert(listed(tar_out_skipped(t), "p/lib/node_modules", "excluded"));
	got_free(g, count);
	free(data);
	tar_out_free(t);
}

Test(tar_out, stops_before_exceeding_max_files)
{
	struct tar_limits lim = {0, 3};
	struct tar_out *t;
	char *data;
	size_t len;
	int i;

	for (i = 0; i < 5; i++) {
		char rel[32];

		snprintf(rel, sizeof rel, "src/f%d", i);
		mkfile(rel, "x");
	}
	t = tar_out_new(&hp, tt_at("src"), "p", &lim, NULL, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	cr_assert_eq(produce(t, 4096, &data, &len), -1);
	cr_assert_not_null(
	    strstr(tar_out_error(t), "more than 3 files and directories"), "%s",
	    tar_out_error(t));
	cr_assert_eq(tar_out_files(t), 3);
	cr_assert_eq(tar_out_pump(t, NULL, 1), -1, "an error stays");
	free(data);
	tar_out_free(t);
}

Test(tar_out, stops_before_exceeding_max_bytes)
{
	struct tar_limits lim = {1000, 0};
	static char buf[600];
	struct tar_out *t;
	char *data;
	size_t len;

	memset(buf, 'x', sizeof buf);
	mkfile_len("src/a", buf, sizeof buf, 0644);
	mkfile_len("src/b", buf, sizeof buf, 0644);
	t = tar_out_new(&hp, tt_at("src"), "p", &lim, NULL, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	cr_assert_eq(produce(t, 4096, &data, &len), -1);
	cr_assert_not_null(
	    strstr(tar_out_error(t), "project larger than 1000 bytes"), "%s",
	    tar_out_error(t));
	cr_assert_eq(tar_out_bytes(t), 600);
	free(data);
	tar_out_free(t);
}

Test(tar_out, archives_a_wide_tree)
{
	struct tar_out *t;
	struct got *g;
	char *data, rel[64];
	size_t len;
	int count, i;

	for (i = 0; i < 5000; i++) {
		snprintf(rel, sizeof rel, "src/file %04d.txt", i);
		mkfile(rel, rel);
	}
	t = tar_out_new(&hp, tt_at("src"), "wide", NULL, NULL, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	cr_assert_eq(produce(t, 64 * 1024, &data, &len), 0);
	g = read_back(data, len, &count);
	cr_assert_eq(count, 5001);
	cr_assert_str_eq(
	    find(g, count, "wide/file 4321.txt")->data, "src/file 4321.txt");
	cr_assert_eq(tar_out_files(t), 5001);
	got_free(g, count);
	free(data);
	tar_out_free(t);
}

Test(tar_out, refuses_sources_outside_the_policy_and_bad_names)
{
	mkfile("outside/secret", "secret\n");
	mkfile("src/ok", "ok\n");
	cr_assert_eq(symlink(tt_at("outside/secret"), tt_at("src/link")), 0);
	cr_assert_null(tar_out_new(
	    &hp, tt_at("outside/secret"), "s", NULL, NULL, err, sizeof err));
	cr_assert_not_null(strstr(err, "outside the allowed"), "%s", err);
	cr_assert_null(
	    tar_out_new(&hp, "link", "s", NULL, NULL, err, sizeof err));
	cr_assert_null(
	    tar_out_new(&hp, "ok", "../ok", NULL, NULL, err, sizeof err));
	cr_assert_not_null(strstr(err, "invalid name"), "%s", err);
	cr_assert_null(
	    tar_out_new(&hp, "ok", "/ok", NULL, NULL, err, sizeof err));
	cr_assert_null(tar_out_new(&hp, "ok", "", NULL, NULL, err, sizeof err));
}

Test(tar_out, can_be_freed_half_way)
{
	struct evbuffer *eb = evbuffer_new();
	struct tar_out *t;

	mkfile("src/a", "a");
	mkbig("src/big.bin");
	t = tar_out_new(&hp, tt_at("src"), "p", NULL, NULL, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	cr_assert_eq(tar_out_pump(t, eb, 100 * 1024), 1);
	tar_out_free(t);
	evbuffer_free(eb);
}

/* One entry of a test archive. */
struct spec {
	const char *name;
	int type;
	mode_t perm;
	const char *data; /* regular files */
	const char *link; /* symlinks and hardlinks */
	size_t size; /* if data is NULL: that many 'z' bytes */
};

/* An archive of the specs, in memory. */
static char *
build(const struct spec *s, int n, size_t *len)
{
	struct archive *a;
	struct archive_entry *e;
	size_t cap = 64 * 1024 * 1024, size, left, k;
	char *buf = malloc(cap), z[8192];
	int i;

	memset(z, 'z', sizeof z);
	a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	cr_assert_eq(archive_write_open_memory(a, buf, cap, len), ARCHIVE_OK);
	for (i = 0; i < n; i++) {
		e = archive_entry_new();
		archive_entry_copy_pathname(e, s[i].name);
		archive_entry_set_filetype(e, s[i].type);
		archive_entry_set_perm(e, s[i].perm);
		archive_entry_set_mtime(e, 1000000000, 0);
		size = s[i].data != NULL ? strlen(s[i].data) : s[i].size;
		if (s[i].type == AE_IFREG && s[i].link == NULL)
			archive_entry_set_size(e, size);
		if (s[i].type == AE_IFLNK)
			archive_entry_copy_symlink(e, s[i].link);
		if (s[i].type == AE_IFREG && s[i].link != NULL)
			archive_entry_copy_hardlink(e, s[i].link);
		if (s[i].type == AE_IFCHR)
			archive_entry_set_rdev(e, makedev(1, 3));
		cr_assert_geq(archive_write_header(a, e), ARCHIVE_WARN, "%s",
		    archive_error_string(a));
		if (s[i].type == AE_IFREG && s[i].link == NULL) {
			if (s[i].data != NULL)
				archive_write_data(a, s[i].data, size);
			for (left = s[i].data != NULL ? 0 : size; left > 0;
			     left -= k) {
				k = left < sizeof z ? left : sizeof z;
				archive_write_data(a, z, k);
			}
		}
		archive_entry_free(e);
	}
	cr_assert_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	return buf;
}

/*
 * Feeds len bytes (or stops early when keep_open) to the extractor the
 * way an event loop would: poll, write what fits. EPIPE means the
 * extractor stopped.
 */
static void
feed(struct tar_in *t, const char *data, size_t len, int close_input)
{
	struct pollfd pfd;
	size_t off = 0;
	ssize_t n;

	pfd.fd = tar_in_fd(t);
	pfd.events = POLLOUT;
	while (off < len) {
		cr_assert_gt(poll(&pfd, 1, 10000), 0, "the extractor is stuck");
		n = write(
		    pfd.fd, data + off, len - off < 65536 ? len - off : 65536);
		if (n == -1 && errno == EAGAIN)
			continue;
		if (n == -1 && errno == EPIPE)
			break;
		cr_assert_gt(n, 0, "write: %s", strerror(errno));
		off += n;
	}
	if (close_input)
		tar_in_close_input(t);
}

/* Waits on the done fd, then returns the result. */
static int
finish(struct tar_in *t, json_object **summary)
{
	struct pollfd pfd;

	pfd.fd = tar_in_done_fd(t);
	pfd.events = POLLIN;
	cr_assert_eq(poll(&pfd, 1, 20000), 1, "the extractor never ended");
	return tar_in_result(t, summary);
}

/* Extracts an archive of specs into root/dest. */
static int
extract(const struct spec *s, int n, const struct tar_limits *lim,
    int overwrite, json_object **summary)
{
	struct tar_in *t;
	char *data;
	size_t len;
	int r;

	data = build(s, n, &len);
	t = tar_in_new(tt_at("dest"), lim, overwrite, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	feed(t, data, len, 1);
	r = finish(t, summary);
	if (r == -1)
		snprintf(err, sizeof err, "%s", tar_in_error(t));
	free(data);
	tar_in_free(t);
	return r;
}

static int64_t
summary_int(json_object *summary, const char *key)
{
	json_object *v;

	cr_assert(json_object_object_get_ex(summary, key, &v), "%s", key);
	return json_object_get_int64(v);
}

static json_object *
summary_list(json_object *summary, const char *key)
{
	json_object *v;

	cr_assert(json_object_object_get_ex(summary, key, &v), "%s", key);
	return v;
}

static void
assert_file(const char *rel, const char *content, mode_t perm)
{
	struct stat st;
	char *got;
	size_t len;

	cr_assert_eq(lstat(tt_at(rel), &st), 0, "%s missing", rel);
	cr_assert(S_ISREG(st.st_mode), "%s", rel);
	cr_assert_eq(
	    st.st_mode & 07777, perm, "%s: mode %o", rel, st.st_mode & 07777);
	got = slurp(tt_at(rel), &len);
	cr_assert_eq(len, strlen(content), "%s", rel);
	cr_assert_eq(memcmp(got, content, len), 0, "%s", rel);
	free(got);
}

/* Counts what exists below root/path, path itself included. */
static int nfound;

static int
count_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)st;
	(void)flag;
	(void)ftw;
	nfound++;
	return 0;
}

static int
count_tree(const char *rel)
{
	nfound = 0;
	nftw(tt_at(rel), count_one, 16, FTW_PHYS);
	return nfound;
}

Test(tar_in, extracts_files_and_directories_byte_exact)
{
	static char bytes[257];
	struct spec s[] = {
	    {"proj/", AE_IFDIR, 0755, NULL, NULL, 0},
	    {"proj/hello.txt", AE_IFREG, 0644, "hello, world\n", NULL, 0},
	    {"proj/run.sh", AE_IFREG, 0755, "#!/bin/sh\n", NULL, 0},
	    {"proj/empty", AE_IFREG, 0644, "", NULL, 0},
	    {"proj/a/b/c/deep.txt", AE_IFREG, 0600, "deep\n", NULL, 0},
	    {"./proj/" UNICODE_NAME, AE_IFREG, 0644, "unicode\n", NULL, 0},
	    {"proj/bytes.bin", AE_IFREG, 0644, bytes + 1, NULL, 0},
	};
	json_object *sum;
	struct stat st;
	int i;

	for (i = 1; i < 256; i++)
		bytes[i] = (char)i; /* NUL ends the data: 1..255 */
	cr_assert_eq(extract(s, 7, NULL, 0, &sum), 0, "%s", err);
	assert_file("dest/proj/hello.txt", "hello, world\n", 0644);
	/* No execute bit unless keep_exec: see keeps_exec_bits_only_when_asked
	 */
	assert_file("dest/proj/run.sh", "#!/bin/sh\n", 0644);
	assert_file("dest/proj/empty", "", 0644);
	assert_file("dest/proj/a/b/c/deep.txt", "deep\n", 0600);
	assert_file("dest/proj/" UNICODE_NAME, "unicode\n", 0644);
	assert_file("dest/proj/bytes.bin", bytes + 1, 0644);
	cr_assert_eq(stat(tt_at("dest/proj/hello.txt"), &st), 0);
	cr_assert_eq(st.st_mtime, 1000000000, "mtime kept");
	/* 6 files, proj/ and the 4 directories made on the way. */
	cr_assert_eq(summary_int(sum, "files"), 11);
	cr_assert_eq(summary_int(sum, "bytes"), 13 + 10 + 5 + 8 + 255);
	cr_assert_eq(
	    json_object_array_length(summary_list(sum, "written")), 11);
	cr_assert_eq(json_object_array_length(summary_list(sum, "skipped")), 0);
	cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(
	                     summary_list(sum, "written"), 0)),
	    "proj/");
	json_object_put(sum);
}

Test(tar_in, skips_escapes_links_devices_and_fifos)
{
	char abs[2 * PATH_MAX];
	struct spec s[] = {
	    {"ok.txt", AE_IFREG, 0644, "ok\n", NULL, 0},
	    {"../evil", AE_IFREG, 0644, "evil\n", NULL, 0},
	    {"/abs/evil", AE_IFREG, 0644, "evil\n", NULL, 0},
	    {abs, AE_IFREG, 0644, "evil\n", NULL, 0},
	    {"a/../../evil2", AE_IFREG, 0644, "evil\n", NULL, 0},
	    {"link", AE_IFLNK, 0777, NULL, "/etc/passwd", 0},
	    {"hard", AE_IFREG, 0644, NULL, "ok.txt", 0},
	    {"hard2", AE_IFREG, 0644, NULL, "/etc/passwd", 0},
	    {"null", AE_IFCHR, 0666, NULL, NULL, 0},
	    {"fifo", AE_IFIFO, 0644, NULL, NULL, 0},
	    {"link/through", AE_IFREG, 0644, "evil\n", NULL, 0},
	};
	json_object *sum, *skipped;

	snprintf(abs, sizeof abs, "%s/outside/abs-evil", tt_root);
	cr_assert_eq(extract(s, 11, NULL, 0, &sum), 0, "%s", err);
	assert_file("dest/ok.txt", "ok\n", 0644);
	/* The symlink entry was skipped: link/ is a new, real directory. */
	assert_file("dest/link/through", "evil\n", 0644);
	cr_assert_eq(count_tree("dest"), 4, "dest/, ok.txt, link/, through");
	cr_assert_eq(count_tree("outside"), 1, "nothing outside dest");
	cr_assert_not(exists(tt_at("evil")));
	cr_assert_not(exists(tt_at("evil2")));
	cr_assert_not(exists("/abs"));

	skipped = summary_list(sum, "skipped");
	cr_assert(listed(skipped, "../evil", "dotdot"));
	cr_assert(listed(skipped, "/abs/evil", "absolute"));
	cr_assert(listed(skipped, abs, "absolute"));
	cr_assert(listed(skipped, "a/../../evil2", "dotdot"));
	cr_assert(listed(skipped, "link", "symlink"));
	cr_assert(listed(skipped, "hard", "hardlink"));
	cr_assert(listed(skipped, "hard2", "hardlink"));
	cr_assert(listed(skipped, "null", "device"));
	cr_assert(listed(skipped, "fifo", "fifo"));
	cr_assert_eq(json_object_array_length(skipped), 9);
	json_object_put(sum);
}

Test(tar_in, strips_setuid_setgid_and_sticky_bits)
{
	struct spec s[] = {
	    {"suid", AE_IFREG, 04755, "x", NULL, 0},
	    {"sgid", AE_IFREG, 02755, "x", NULL, 0},
	    {"tmp/", AE_IFDIR, 01777, NULL, NULL, 0},
	    {"noperm", AE_IFREG, 0000, "x", NULL, 0},
	};
	struct stat st;

	cr_assert_eq(extract(s, 4, NULL, 0, NULL), 0, "%s", err);
	assert_file("dest/suid", "x", 0644);
	assert_file("dest/sgid", "x", 0644);
	assert_file("dest/noperm", "x", 0600);
	cr_assert_eq(stat(tt_at("dest/tmp"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0755, "mode %o", st.st_mode & 07777);
}

Test(tar_in, keeps_an_existing_file_without_overwrite)
{
	struct spec s[] = {
	    {"keep.txt", AE_IFREG, 0644, "new\n", NULL, 0},
	    {"sub/", AE_IFDIR, 0755, NULL, NULL, 0},
	    {"sub/added.txt", AE_IFREG, 0644, "added\n", NULL, 0},
	};
	json_object *sum;

	mkfile("dest/keep.txt", "original\n");
	mkdir_at("dest/sub");
	mkfile("dest/sub/old.txt", "old\n");
	cr_assert_eq(extract(s, 3, NULL, 0, &sum), 0, "%s", err);
	assert_file("dest/keep.txt", "original\n", 0644);
	assert_file("dest/sub/added.txt", "added\n", 0644);
	assert_file("dest/sub/old.txt", "old\n", 0644);
	cr_assert(listed(summary_list(sum, "skipped"), "keep.txt", "exists"));
	cr_assert_eq(summary_int(sum, "files"), 1, "an existing dir merges");
	json_object_put(sum);

	cr_assert_eq(extract(s, 3, NULL, 1, &sum), 0, "%s", err);
	assert_file("dest/keep.txt", "new\n", 0644);
	cr_assert_eq(json_object_array_length(summary_list(sum, "skipped")), 0);
	json_object_put(sum);
}

Test(tar_in, never_writes_through_an_existing_symlink)
{
	struct spec s[] = {
	    {"dirlink/evil", AE_IFREG, 0644, "evil\n", NULL, 0},
	    {"dirlink/sub/", AE_IFDIR, 0755, NULL, NULL, 0},
	    {"filelink", AE_IFREG, 0644, "evil\n", NULL, 0},
	};
	json_object *sum, *skipped;
	struct stat st;

	cr_assert_eq(symlink(tt_at("outside"), tt_at("dest/dirlink")), 0);
	cr_assert_eq(
	    symlink(tt_at("outside/target"), tt_at("dest/filelink")), 0);
	cr_assert_eq(extract(s, 3, NULL, 0, &sum), 0, "%s", err);
	skipped = summary_list(sum, "skipped");
	/* Extracted privately, then merged: the merge stops at the link. */
	cr_assert(listed(skipped, "dirlink", "symlink in path"));
	cr_assert(listed(skipped, "filelink", "exists"));
	cr_assert_eq(count_tree("outside"), 1);
	json_object_put(sum);

	/* Overwrite replaces the link itself, never its target. */
	cr_assert_eq(extract(s, 3, NULL, 1, &sum), 0, "%s", err);
	cr_assert_eq(count_tree("outside"), 1);
	cr_assert_eq(lstat(tt_at("dest/filelink"), &st), 0);
	cr_assert(S_ISREG(st.st_mode));
	assert_file("dest/filelink", "evil\n", 0644);
	cr_assert(
	    listed(summary_list(sum, "skipped"), "dirlink", "symlink in path"));
	json_object_put(sum);
}

Test(tar_in, stops_before_exceeding_max_bytes)
{
	struct spec s[] = {
	    {"a", AE_IFREG, 0644, NULL, NULL, 600},
	    {"b", AE_IFREG, 0644, NULL, NULL, 600},
	};
	struct tar_limits lim = {1000, 0};
	json_object *sum;

	cr_assert_eq(extract(s, 2, &lim, 0, &sum), -1);
	cr_assert_not_null(
	    strstr(err, "archive larger than 1000 bytes"), "%s", err);
	/* All or nothing: a failed extraction writes nothing. */
	cr_assert_not(exists(tt_at("dest/a")));
	cr_assert_not(exists(tt_at("dest/b")));
	cr_assert_eq(count_tree("dest"), 1, "nothing left in dest");
	cr_assert_eq(summary_int(sum, "bytes"), 0);
	json_object_put(sum);
}

Test(tar_in, stops_before_exceeding_max_files)
{
	struct spec s[] = {
	    {"d/", AE_IFDIR, 0755, NULL, NULL, 0},
	    {"d/a", AE_IFREG, 0644, "a", NULL, 0},
	    {"d/b", AE_IFREG, 0644, "b", NULL, 0},
	};
	struct tar_limits lim = {0, 2};

	cr_assert_eq(extract(s, 3, &lim, 0, NULL), -1);
	cr_assert_not_null(
	    strstr(err, "more than 2 files and directories"), "%s", err);
	cr_assert_not(exists(tt_at("dest/d")));
	cr_assert_eq(count_tree("dest"), 1, "nothing left in dest");
}

Test(tar_in, removes_a_partial_file_from_a_truncated_archive)
{
	struct spec s[] = {
	    {"first.txt", AE_IFREG, 0644, "first\n", NULL, 0},
	    {"big.bin", AE_IFREG, 0644, NULL, NULL, 1024 * 1024},
	};
	struct tar_in *t;
	json_object *sum;
	char *data;
	size_t len;

	data = build(s, 2, &len);
	t = tar_in_new(tt_at("dest"), NULL, 0, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	feed(t, data, len / 2, 1);
	cr_assert_eq(finish(t, &sum), -1);
	cr_assert_not_null(
	    strstr(tar_in_error(t), "truncated"), "%s", tar_in_error(t));
	cr_assert_not_null(
	    strstr(tar_in_error(t), "the partial file big.bin was removed"),
	    "%s", tar_in_error(t));
	cr_assert_not(exists(tt_at("dest/first.txt")), "all or nothing");
	cr_assert_not(exists(tt_at("dest/big.bin")));
	cr_assert_eq(count_tree("dest"), 1, "no temporary file left");
	cr_assert(
	    listed(summary_list(sum, "skipped"), "big.bin", "incomplete"));
	json_object_put(sum);
	free(data);
	tar_in_free(t);
}

Test(tar_in, an_aborted_overwrite_keeps_the_old_file)
{
	struct spec s[] = {
	    {"big.bin", AE_IFREG, 0644, NULL, NULL, 1024 * 1024},
	};
	struct tar_in *t;
	char *data;
	size_t len;

	mkfile("dest/big.bin", "old\n");
	data = build(s, 1, &len);
	t = tar_in_new(tt_at("dest"), NULL, 1, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	feed(t, data, len / 2, 1);
	cr_assert_eq(finish(t, NULL), -1);
	assert_file("dest/big.bin", "old\n", 0644);
	cr_assert_eq(count_tree("dest"), 2, "no temporary file left");
	free(data);
	tar_in_free(t);
}

Test(tar_in, free_mid_transfer_ends_the_thread_and_cleans_up)
{
	struct spec s[] = {
	    {"big.bin", AE_IFREG, 0644, NULL, NULL, 4 * 1024 * 1024},
	};
	struct tar_in *t;
	char *data;
	size_t len;

	data = build(s, 1, &len);
	t = tar_in_new(tt_at("dest"), NULL, 0, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	feed(t, data, len / 2, 0);
	tar_in_free(t); /* input still open, thread mid-file */
	cr_assert_eq(count_tree("dest"), 1, "nothing left in dest");
	free(data);

	/* And right after the start, before any byte. */
	t = tar_in_new(tt_at("dest"), NULL, 0, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	tar_in_free(t);
}

Test(tar_in, rejects_garbage)
{
	static char junk[4096];
	struct tar_in *t;

	memset(junk, 'j', sizeof junk);
	t = tar_in_new(tt_at("dest"), NULL, 0, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	feed(t, junk, sizeof junk, 1);
	cr_assert_eq(finish(t, NULL), -1);
	cr_assert_not_null(tar_in_error(t));
	cr_assert_eq(count_tree("dest"), 1);
	tar_in_free(t);
}

Test(tar_in, refuses_a_missing_destination)
{
	cr_assert_null(tar_in_new(tt_at("nope"), NULL, 0, err, sizeof err));
	cr_assert_not_null(strstr(err, "nope"), "%s", err);
	mkfile("file", "x");
	cr_assert_null(tar_in_new(tt_at("file"), NULL, 0, err, sizeof err));
}

Test(tar_in, lists_at_most_1000_paths)
{
	struct spec *s;
	char(*names)[16];
	json_object *sum;
	int i;

	s = calloc(1200, sizeof *s);
	names = calloc(1200, sizeof *names);
	for (i = 0; i < 1200; i++) {
		snprintf(names[i], sizeof names[i], "f%04d", i);
		s[i].name = names[i];
		s[i].type = AE_IFREG;
		s[i].perm = 0644;
		s[i].data = "x";
	}
	cr_assert_eq(extract(s, 1200, NULL, 0, &sum), 0, "%s", err);
	cr_assert_eq(summary_int(sum, "files"), 1200);
	cr_assert_eq(
	    json_object_array_length(summary_list(sum, "written")), 1000);
	cr_assert_eq(summary_int(sum, "written_unlisted"), 200);
	json_object_put(sum);
	free(s);
	free(names);
}

/* What tar_out makes, tar_in takes back: the two ends agree. */
Test(tar_in, round_trips_with_tar_out)
{
	struct tar_out *o;
	struct tar_in *t;
	json_object *sum;
	char *data;
	size_t len;
	int n;

	n = make_tree();
	o = tar_out_new(&hp, tt_at("src"), "copy", NULL, NULL, err, sizeof err);
	cr_assert_not_null(o, "%s", err);
	cr_assert_eq(produce(o, 256 * 1024, &data, &len), 0);
	tar_out_free(o);
	t = tar_in_new(tt_at("dest"), NULL, 0, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	feed(t, data, len, 1);
	cr_assert_eq(finish(t, &sum), 0, "%s", tar_in_error(t));
	cr_assert_eq(summary_int(sum, "files"), n);
	cr_assert_eq(count_tree("dest/copy"), n);
	assert_file("dest/copy/" UNICODE_NAME, "unicode\n", 0644);
	assert_file("dest/copy/run.sh", "#!/bin/sh\necho hi\n", 0644);
	assert_file("dest/copy/readonly.txt", "ro\n", 0644);
	json_object_put(sum);
	tar_in_free(t);
	free(data);
}

/*
 * libarchive 3.6 reads the umask by setting it to 0 and back for every
 * entry: concurrent extractions must not leave the process at umask 0.
 */
Test(tar_in, concurrent_extractions_keep_the_umask)
{
	enum { N = 4, FILES = 400 };
	struct spec *s;
	char(*names)[16], dest[32], *data;
	struct tar_in *t[N];
	size_t len;
	mode_t m;
	int i;

	s = calloc(FILES, sizeof *s);
	names = calloc(FILES, sizeof *names);
	for (i = 0; i < FILES; i++) {
		snprintf(names[i], sizeof names[i], "d%03d/", i);
		s[i].name = names[i];
		s[i].type = AE_IFDIR;
		s[i].perm = 0755;
	}
	data = build(s, FILES, &len);
	for (i = 0; i < N; i++) {
		snprintf(dest, sizeof dest, "dest/%d", i);
		mkdir_at(dest);
		t[i] = tar_in_new(tt_at(dest), NULL, 0, err, sizeof err);
		cr_assert_not_null(t[i], "%s", err);
	}
	for (i = 0; i < N; i++)
		feed(t[i], data, len, 1);
	for (i = 0; i < N; i++) {
		cr_assert_eq(finish(t[i], NULL), 0, "%s", tar_in_error(t[i]));
		tar_in_free(t[i]);
	}
	m = umask(022);
	cr_assert_eq(m, 022, "umask left at %03o", m);
	free(data);
	free(s);
	free(names);
}

/* extract() with options. */
static int
extract_opts(const struct spec *s, int n, const struct tar_limits *lim,
    const struct tar_in_opts *o, json_object **summary)
{
	struct tar_in *t;
	char *data;
	size_t len;
	int r;

	data = build(s, n, &len);
	t = tar_in_start(tt_at("dest"), lim, o, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	feed(t, data, len, 1);
	r = finish(t, summary);
	if (r == -1)
		snprintf(err, sizeof err, "%s", tar_in_error(t));
	free(data);
	tar_in_free(t);
	return r;
}

Test(tar_in, keeps_exec_bits_only_when_asked)
{
	struct spec s[] = {
	    {"bin/", AE_IFDIR, 0755, NULL, NULL, 0},
	    {"bin/run", AE_IFREG, 0755, "#!/bin/sh\n", NULL, 0},
	    {"bin/suid", AE_IFREG, 04755, "x", NULL, 0},
	};
	struct tar_in_opts o = {0};
	struct stat st;

	cr_assert_eq(extract_opts(s, 3, NULL, &o, NULL), 0, "%s", err);
	assert_file("dest/bin/run", "#!/bin/sh\n", 0644);
	assert_file("dest/bin/suid", "x", 0644);
	cr_assert_eq(stat(tt_at("dest/bin"), &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0755, "directories stay usable");

	o.keep_exec = 1;
	o.overwrite = 1;
	cr_assert_eq(extract_opts(s, 3, NULL, &o, NULL), 0, "%s", err);
	assert_file("dest/bin/run", "#!/bin/sh\n", 0755);
	assert_file("dest/bin/suid", "x", 0755); /* set-id: never */
}

Test(tar_in, skips_version_control_and_denied_names)
{
	struct spec s[] = {
	    {"ok.txt", AE_IFREG, 0644, "ok\n", NULL, 0},
	    {".git/", AE_IFDIR, 0755, NULL, NULL, 0},
	    {".git/config", AE_IFREG, 0644, "[core]\n", NULL, 0},
	    {".git/hooks/pre-commit", AE_IFREG, 0755, "#!/bin/sh\n", NULL, 0},
	    {"sub/.hg/hgrc", AE_IFREG, 0644, "x", NULL, 0},
	    {"sub/.svn", AE_IFREG, 0644, "x", NULL, 0},
	    {"sub/.envrc", AE_IFREG, 0644, "x", NULL, 0},
	    {"sub/kept", AE_IFREG, 0644, "kept\n", NULL, 0},
	};
	const char *deny[] = {".envrc", NULL};
	struct tar_in_opts o = {0};
	json_object *sum, *skipped;

	o.deny = deny;
	cr_assert_eq(extract_opts(s, 8, NULL, &o, &sum), 0, "%s", err);
	assert_file("dest/ok.txt", "ok\n", 0644);
	assert_file("dest/sub/kept", "kept\n", 0644);
	cr_assert_not(exists(tt_at("dest/.git")));
	cr_assert_not(exists(tt_at("dest/sub/.hg")));
	cr_assert_not(exists(tt_at("dest/sub/.svn")));
	cr_assert_not(exists(tt_at("dest/sub/.envrc")));
	skipped = summary_list(sum, "skipped");
	cr_assert(listed(skipped, ".git", "denied name"));
	cr_assert(listed(skipped, "sub/.hg", "denied name"));
	cr_assert(listed(skipped, "sub/.svn", "denied name"));
	cr_assert(listed(skipped, "sub/.envrc", "denied name"));
	/* .git once, not each entry below it. */
	cr_assert_eq(json_object_array_length(skipped), 4, "%s",
	    json_object_to_json_string(skipped));
	cr_assert_eq(count_tree("dest"), 4, "dest, ok.txt, sub, kept");
	json_object_put(sum);
}

Test(tar_in, skips_hostile_names)
{
	struct spec s[] = {
	    {"-rf", AE_IFREG, 0644, "x", NULL, 0},
	    {"sub/--help", AE_IFREG, 0644, "x", NULL, 0},
	    {"new\nline", AE_IFREG, 0644, "x", NULL, 0},
	    {"esc\x1b[31m", AE_IFREG, 0644, "x", NULL, 0},
	    {"rtl\xe2\x80\xaegpj.exe", AE_IFREG, 0644, "x", NULL, 0},
	    {"iso\xe2\x81\xa6x", AE_IFREG, 0644, "x", NULL, 0},
	    {"bad\xff\xfe", AE_IFREG, 0644, "x", NULL, 0},
	    {"ctl\x01/inside", AE_IFREG, 0644, "x", NULL, 0},
	    {"sub/fine-name.txt", AE_IFREG, 0644, "fine\n", NULL, 0},
	    {"caf\xc3\xa9.txt", AE_IFREG, 0644, "utf8\n", NULL, 0},
	};
	json_object *sum, *skipped, *o, *v;
	size_t i;
	int withdetail = 0;

	cr_assert_eq(extract(s, 10, NULL, 0, &sum), 0, "%s", err);
	assert_file("dest/sub/fine-name.txt", "fine\n", 0644);
	assert_file("dest/caf\xc3\xa9.txt", "utf8\n", 0644);
	cr_assert_eq(count_tree("dest"), 4, "dest, sub, two files");
	skipped = summary_list(sum, "skipped");
	cr_assert(listed(skipped, "-rf", "hostile name"));
	cr_assert(listed(skipped, "sub/--help", "hostile name"));
	cr_assert_eq(json_object_array_length(skipped), 8, "%s",
	    json_object_to_json_string(skipped));
	for (i = 0; i < json_object_array_length(skipped); i++) {
		o = json_object_array_get_idx(skipped, i);
		withdetail += json_object_object_get_ex(o, "detail", &v) &&
		              strlen(json_object_get_string(v)) > 0;
	}
	cr_assert_eq(withdetail, 8, "each says why");
	json_object_put(sum);
}

Test(tar_in, one_file_mode_takes_one_regular_file)
{
	struct spec file[] = {
	    {"-whatever\n", AE_IFREG, 0755, "content\n", NULL, 0},
	};
	struct spec link[] = {
	    {"pagemap", AE_IFLNK, 0777, NULL, "/proc/self/pagemap", 0},
	};
	struct spec fifo[] = {{"f", AE_IFIFO, 0644, NULL, NULL, 0}};
	struct spec two[] = {
	    {"a", AE_IFREG, 0644, "a", NULL, 0},
	    {"b", AE_IFREG, 0644, "b", NULL, 0},
	};
	struct tar_in_opts o = {0};

	o.single = "out.txt";
	cr_assert_eq(extract_opts(file, 1, NULL, &o, NULL), 0, "%s", err);
	assert_file("dest/out.txt", "content\n", 0644);
	cr_assert_eq(count_tree("dest"), 2);
	cr_assert_eq(extract_opts(file, 1, NULL, &o, NULL), -1);
	cr_assert_not_null(strstr(err, "exists"), "%s", err);

	o.single = "l";
	cr_assert_eq(extract_opts(link, 1, NULL, &o, NULL), -1);
	cr_assert_not_null(
	    strstr(err, "not a regular file (a symlink)"), "%s", err);
	o.single = "f";
	cr_assert_eq(extract_opts(fifo, 1, NULL, &o, NULL), -1);
	cr_assert_not_null(strstr(err, "(a fifo)"), "%s", err);
	o.single = "two";
	cr_assert_eq(extract_opts(two, 2, NULL, &o, NULL), -1);
	cr_assert_not_null(strstr(err, "more than one"), "%s", err);
	cr_assert_eq(count_tree("dest"), 2, "only out.txt");
}

Test(tar_in, names_the_byte_limit_and_writes_nothing_over_it)
{
	struct spec s[] = {
	    {"small", AE_IFREG, 0644, "x", NULL, 0},
	    {"big", AE_IFREG, 0644, NULL, NULL, 5000},
	};
	struct tar_limits lim = {4096, 0};
	struct tar_in_opts o = {0};

	o.limit_name = "max_bytes";
	cr_assert_eq(extract_opts(s, 2, &lim, &o, NULL), -1);
	cr_assert_not_null(
	    strstr(err, "archive larger than 4096 bytes (max_bytes)"), "%s",
	    err);
	cr_assert_eq(count_tree("dest"), 1, "nothing written");
	o.single = "one";
	cr_assert_eq(extract_opts(s + 1, 1, &lim, &o, NULL), -1);
	cr_assert_not_null(
	    strstr(err, "(max_bytes); stopped at one"), "%s", err);
	cr_assert_eq(count_tree("dest"), 1, "nothing written");
}

Test(tar_in, a_failed_overwrite_of_a_tree_keeps_every_original)
{
	struct spec s[] = {
	    {"a.txt", AE_IFREG, 0644, "new\n", NULL, 0},
	    {"sub/b.txt", AE_IFREG, 0644, "new\n", NULL, 0},
	    {"big.bin", AE_IFREG, 0644, NULL, NULL, 1024 * 1024},
	};
	struct tar_in *t;
	char *data;
	size_t len;

	mkfile("dest/a.txt", "old a\n");
	mkdir_at("dest/sub");
	mkfile("dest/sub/b.txt", "old b\n");
	data = build(s, 3, &len);
	t = tar_in_new(tt_at("dest"), NULL, 1, err, sizeof err);
	cr_assert_not_null(t, "%s", err);
	feed(t, data, len - 600 * 1024, 1);
	cr_assert_eq(finish(t, NULL), -1);
	assert_file("dest/a.txt", "old a\n", 0644);
	assert_file("dest/sub/b.txt", "old b\n", 0644);
	cr_assert_eq(count_tree("dest"), 4, "no temporary file left");
	free(data);
	tar_in_free(t);
}
