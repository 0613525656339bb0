/*
 * Fuzz the snapshot archives (supervisor/host/snaptar.c) with what a
 * sandbox could send as the tar of its mounts: the copier ends with a
 * result or an error, never a crash, never past its caps; what it kept is
 * read back by the producer without an error (its own output is always
 * taken), and holds only clean names below the mounts, files, directories,
 * symlinks and hardlinks, without a set-id or sticky bit.  Input: an
 * archive (or anything else).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <event2/buffer.h>

#include "fuzz.h"
#include "snaptar.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CAP (1024 * 1024)

static const char *const roots[] = {"app", "tmp", "data/v", NULL};
static char path[80];

static void
cleanup(void)
{
	if (path[0] != '\0')
		unlink(path);
}

static int
below_roots(const char *name)
{
	size_t i, n;

	if (name[0] == '/' || strstr(name, "//") != NULL)
		return 0;
	for (const char *p = name; (p = strstr(p, "..")) != NULL; p += 2)
		if ((p == name || p[-1] == '/') &&
		    (p[2] == '\0' || p[2] == '/'))
			return 0;
	for (i = 0; roots[i] != NULL; i++) {
		n = strlen(roots[i]);
		if (strncmp(name, roots[i], n) == 0 && name[n] == '/')
			return 1;
	}
	return 0;
}

/* The producer's stream: every entry as the copier promised. */
static void
check_stream(struct evbuffer *b, uint64_t files)
{
	struct archive_entry *e;
	struct archive *r;
	uint64_t n = 0;
	size_t len = evbuffer_get_length(b);
	int type;

	r = archive_read_new();
	archive_read_support_format_tar(r);
	fuzz_check(archive_read_open_memory(r, evbuffer_pullup(b, -1), len) ==
	                   ARCHIVE_OK ||
	               len == 0,
	    "snaptar: the producer's stream cannot be opened");
	while (len > 0 && archive_read_next_header(r, &e) == ARCHIVE_OK) {
		n++;
		type = archive_entry_filetype(e);
		fuzz_check(below_roots(archive_entry_pathname(e)),
		    "snaptar: a name outside the mounts kept");
		fuzz_check(type == AE_IFREG || type == AE_IFDIR ||
		               type == AE_IFLNK ||
		               archive_entry_hardlink(e) != NULL,
		    "snaptar: a special file kept");
		fuzz_check((archive_entry_perm(e) & 07000) == 0,
		    "snaptar: a set-id or sticky bit kept");
		if (archive_entry_hardlink(e) != NULL)
			fuzz_check(below_roots(archive_entry_hardlink(e)),
			    "snaptar: a hardlink outside the mounts kept");
	}
	archive_read_free(r);
	fuzz_check(n == files, "snaptar: the producer's entries differ");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snap_limits lim = {CAP, 200, "the cap"};
	struct snap_in *t;
	struct snap_out *o;
	struct evbuffer *b;
	struct pollfd pfd;
	struct stat st;
	uint64_t files, bytes, skipped;
	char err[256];
	size_t off = 0;
	ssize_t n;
	int fd, rc;

	if (path[0] == '\0') {
		snprintf(path, sizeof path, "%s/fuzz-snaptar.%d",
		    getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp",
		    (int)getpid());
		atexit(cleanup);
	}
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	fuzz_check(fd != -1, "open");
	t = snap_in_start(fd, &lim, roots, err, sizeof err);
	fuzz_check(t != NULL, "snap_in_start");
	while (off < size) {
		n = write(snap_in_fd(t), data + off, size - off);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == -1 && errno == EAGAIN) {
			pfd.fd = snap_in_fd(t);
			pfd.events = POLLOUT;
			poll(&pfd, 1, 100);
			continue;
		}
		break; /* EPIPE: the copier ended (an error) */
	}
	snap_in_close_input(t);
	pfd.fd = snap_in_done_fd(t);
	pfd.events = POLLIN;
	while (poll(&pfd, 1, -1) == -1 && errno == EINTR)
		;
	rc = snap_in_result(t, &files, &bytes, &skipped);
	fuzz_check(rc == 0 || (rc == -1 && snap_in_error(t) != NULL &&
	                          snap_in_error(t)[0] != '\0'),
	    "snaptar: a failure without a message");
	fuzz_check(files <= 200, "snaptar: over the entry cap");
	fuzz_check(fstat(fd, &st) == 0 && (uint64_t)st.st_size <= CAP &&
	               (rc == -1 || (uint64_t)st.st_size == bytes),
	    "snaptar: over the byte cap, or its count is wrong");
	snap_in_free(t);
	close(fd);
	if (rc == 0) {
		lim.max_bytes = bytes;
		lim.max_files = files;
		o = snap_out_new(path, &lim, roots, 1000, err, sizeof err);
		fuzz_check(o != NULL, "snap_out_new");
		b = evbuffer_new();
		while ((rc = snap_out_pump(o, b, 65536)) == 1)
			;
		fuzz_check(rc == 0, "snaptar: its own archive refused");
		fuzz_check(snap_out_files(o) == files,
		    "snaptar: entries read back differ");
		check_stream(b, files);
		evbuffer_free(b);
		snap_out_free(o);
	}
	return 0;
}
