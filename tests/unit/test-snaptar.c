/* Unit tests of snapshot archives (supervisor/host/snaptar.c). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <criterion/criterion.h>
#include <event2/buffer.h>

#include "snaptar.h"

static const char *const roots[] = {"app", "tmp", NULL};
static char path[64];

static void
setup(void)
{
	int fd;

	snprintf(path, sizeof path, "/tmp/test-snaptar.XXXXXX");
	cr_assert((fd = mkstemp(path)) != -1);
	close(fd);
}

static void
teardown(void)
{
	unlink(path);
}

TestSuite(snaptar, .init = setup, .fini = teardown);

/* A tar in memory: entries "name" (file "content"), "name/" (dir),
 * "name>target" (symlink), "name=target" (hardlink), "name|" (fifo). */
static struct evbuffer *
make_tar(const char *const *spec, int mode)
{
	struct archive_entry *e;
	struct archive *a;
	struct evbuffer *b = evbuffer_new();
	char *buf = malloc(1 << 22), name[256];
	const char *s, *sep;
	size_t used = 0;

	a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	archive_write_open_memory(a, buf, 1 << 22, &used);
	for (; *spec != NULL; spec += 2) {
		s = spec[0];
		e = archive_entry_new();
		archive_entry_set_perm(e, (mode_t)mode);
		if ((sep = strpbrk(s, ">=|")) != NULL) {
			snprintf(name, sizeof name, "%.*s", (int)(sep - s), s);
			archive_entry_set_pathname(e, name);
			if (*sep == '>') {
				archive_entry_set_filetype(e, AE_IFLNK);
				archive_entry_set_symlink(e, sep + 1);
			} else if (*sep == '=') {
				archive_entry_set_filetype(e, AE_IFREG);
				archive_entry_set_hardlink(e, sep + 1);
			} else
				archive_entry_set_filetype(e, AE_IFIFO);
			archive_write_header(a, e);
		} else if (s[strlen(s) - 1] == '/') {
			archive_entry_set_pathname(e, s);
			archive_entry_set_filetype(e, AE_IFDIR);
			archive_write_header(a, e);
		} else {
			archive_entry_set_pathname(e, s);
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_size(e, (la_int64_t)strlen(spec[1]));
			archive_write_header(a, e);
			archive_write_data(a, spec[1], strlen(spec[1]));
		}
		archive_entry_free(e);
	}
	archive_write_close(a);
	archive_write_free(a);
	evbuffer_add(b, buf, used);
	free(buf);
	return b;
}

/* The copier over a stream into path: its result. */
static int
copy(struct evbuffer *in, const struct snap_limits *lim, uint64_t *files,
    uint64_t *bytes, uint64_t *skipped, char *why, size_t len)
{
	struct snap_in *t;
	struct pollfd p;
	char err[256];
	ssize_t n;
	int fd, rc;

	fd = open(path, O_WRONLY | O_TRUNC);
	cr_assert(fd != -1);
	t = snap_in_start(fd, lim, roots, err, sizeof err);
	cr_assert(t != NULL, "%s", err);
	while (evbuffer_get_length(in) > 0) {
		n = write(snap_in_fd(t), evbuffer_pullup(in, -1),
		    evbuffer_get_length(in));
		if (n > 0)
			evbuffer_drain(in, (size_t)n);
		else if (n == -1 && errno == EAGAIN) {
			p.fd = snap_in_fd(t);
			p.events = POLLOUT;
			poll(&p, 1, 100);
		} else
			break;
	}
	snap_in_close_input(t);
	rc = snap_in_result(t, files, bytes, skipped);
	snprintf(why, len, "%s", rc == -1 ? snap_in_error(t) : "");
	snap_in_free(t);
	close(fd);
	evbuffer_free(in);
	return rc;
}

/* The producer over path: the names and contents it gives, one a line. */
static char *
read_back(uint64_t files, uint64_t bytes, int *rc, char *why, size_t len)
{
	struct snap_limits lim = {bytes, files, NULL};
	struct archive_entry *e;
	struct evbuffer *b = evbuffer_new();
	struct snap_out *o;
	struct archive *a;
	char *out = calloc(1, 65536), data[256], err[256];
	size_t used = 0;
	ssize_t n;

	if ((o = snap_out_new(path, &lim, roots, 1234, err, sizeof err)) ==
	    NULL) {
		*rc = -1;
		snprintf(why, len, "%s", err);
		evbuffer_free(b);
		return out;
	}
	while ((*rc = snap_out_pump(o, b, 4096)) == 1)
		;
	snprintf(why, len, "%s", *rc == -1 ? snap_out_error(o) : "");
	snap_out_free(o);
	a = archive_read_new();
	archive_read_support_format_tar(a);
	if (*rc == 0 && archive_read_open_memory(a, evbuffer_pullup(b, -1),
	                    evbuffer_get_length(b)) == ARCHIVE_OK)
		while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
			used += (size_t)snprintf(out + used, 65536 - used,
			    "%s %o %d", archive_entry_pathname(e),
			    (unsigned)archive_entry_perm(e),
			    (int)archive_entry_uid(e));
			if (archive_entry_symlink(e) != NULL)
				used +=
				    (size_t)snprintf(out + used, 65536 - used,
				        " >%s", archive_entry_symlink(e));
			if (archive_entry_hardlink(e) != NULL)
				used +=
				    (size_t)snprintf(out + used, 65536 - used,
				        " =%s", archive_entry_hardlink(e));
			n = archive_read_data(a, data, sizeof data - 1);
			if (n > 0) {
				data[n] = '\0';
				used += (size_t)snprintf(
				    out + used, 65536 - used, " %s", data);
			}
			used +=
			    (size_t)snprintf(out + used, 65536 - used, "\n");
		}
	archive_read_free(a);
	evbuffer_free(b);
	return out;
}

Test(snaptar, round_trip_keeps_what_may_be_kept)
{
	static const char *const spec[] = {"app/", "", "app/d/", "", "app/d/f",
	    "hello", "tmp/x", "t", "app/sl>/etc/passwd", "", "app/hl=app/d/f",
	    "", "app/../up", "x", "/abs", "x", "etc/p", "x", "app/fifo|", "",
	    "app/hr=app", "", "apple/f", "x", NULL};
	struct snap_limits lim = {1 << 20, 100, "cap"};
	uint64_t files, bytes, skipped;
	char why[512], *out;
	int rc;

	rc = copy(make_tar(spec, 06755), &lim, &files, &bytes, &skipped, why,
	    sizeof why);
	cr_assert_eq(rc, 0, "%s", why);
	cr_expect_eq(files, 5, "app/d, app/d/f, tmp/x, app/sl, app/hl");
	cr_expect_eq(skipped, 6, "up, abs, etc/p, fifo, hr, apple (%llu)",
	    (unsigned long long)skipped);
	out = read_back(files, bytes, &rc, why, sizeof why);
	cr_assert_eq(rc, 0, "%s", why);
	cr_expect_str_eq(out, "app/d/ 755 1234\n"
	                      "app/d/f 755 1234 hello\n"
	                      "tmp/x 755 1234 t\n"
	                      "app/sl 755 1234 >/etc/passwd\n"
	                      "app/hl 755 1234 =app/d/f\n");
	free(out);
}

Test(snaptar, caps_hold)
{
	static const char *spec[8];
	struct snap_limits lim = {8192, 100, "--the-cap"};
	uint64_t files, bytes, skipped;
	char why[512], big[20000];

	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	spec[0] = "app/big";
	spec[1] = big;
	spec[2] = NULL;
	cr_expect_eq(copy(make_tar(spec, 0644), &lim, &files, &bytes, &skipped,
	                 why, sizeof why),
	    -1);
	cr_expect(strstr(why, "--the-cap") != NULL, "%s", why);

	lim.max_bytes = 1 << 20;
	lim.max_files = 2;
	spec[0] = "app/a";
	spec[1] = "1";
	spec[2] = "app/b";
	spec[3] = "2";
	spec[4] = "app/c";
	spec[5] = "3";
	spec[6] = NULL;
	cr_expect_eq(copy(make_tar(spec, 0644), &lim, &files, &bytes, &skipped,
	                 why, sizeof why),
	    -1);
	cr_expect(strstr(why, "more than 2") != NULL, "%s", why);
}

/* A snapshot whose file changed on the disk is refused on the way back. */
Test(snaptar, damaged_archive_refused)
{
	static const char *const spec[] = {"app/a", "12345", NULL};
	struct snap_limits lim = {1 << 20, 100, "cap"};
	uint64_t files, bytes, skipped;
	char why[512], *out;
	int rc, fd;

	cr_assert_eq(copy(make_tar(spec, 0644), &lim, &files, &bytes, &skipped,
	                 why, sizeof why),
	    0, "%s", why);
	/* Cut in the middle of its header. */
	fd = open(path, O_WRONLY);
	cr_assert_eq(ftruncate(fd, 300), 0);
	close(fd);
	out = read_back(files, bytes, &rc, why, sizeof why);
	cr_expect_eq(rc, -1, "a cut archive was read back");
	cr_expect(strstr(why, "damaged") != NULL, "%s", why);
	free(out);
}
