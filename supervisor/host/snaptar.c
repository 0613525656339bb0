/* Snapshot archives on the host (snaptar.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "errbuf.h"
#include "hosttar.h"
#include "snaptar.h"
#include "xmalloc.h"

#define SNAP_CHUNK (64 * 1024)
#define SNAP_SYNC_EVERY (8 * 1024 * 1024) /* writeback started each */
#define SNAP_LINK_MAX 4096 /* bytes of a symlink's target */

/* The roots, copied, NULL-terminated. */
static char **
roots_copy(const char *const *roots)
{
	char **v;
	size_t n;

	for (n = 0; roots[n] != NULL; n++)
		;
	v = xcalloc(n + 1, sizeof *v);
	while (n-- > 0)
		v[n] = xstrdup(roots[n]);
	return v;
}

static void
roots_free(char **v)
{
	char **p;

	for (p = v; p != NULL && *p != NULL; p++)
		free(*p);
	free(v);
}

/* A clean name that is a root or below one (a root itself is "app"). */
static char *
name_below(char **roots, const char *raw, const char **reason)
{
	char *name, **r;
	size_t n;
	int depth = 0;
	const char *p;

	if ((name = tar_name_clean(raw, reason)) == NULL)
		return NULL;
	for (p = name; (p = strchr(p, '/')) != NULL; p++)
		depth++;
	if (depth >= TAR_MAX_DEPTH) {
		*reason = "too deep";
		free(name);
		return NULL;
	}
	for (r = roots; *r != NULL; r++) {
		n = strlen(*r);
		if (strncmp(name, *r, n) == 0 &&
		    (name[n] == '\0' || name[n] == '/'))
			return name;
	}
	*reason = "outside the snapshot's mounts";
	free(name);
	return NULL;
}

static int
is_root(char **roots, const char *name)
{
	char **r;

	for (r = roots; *r != NULL; r++)
		if (strcmp(name, *r) == 0)
			return 1;
	return 0;
}

/*
 * The entry as it is kept, made anew from what may be kept of e; NULL
 * and why when it is left out ("": a mount itself, which is not kept).
 */
static struct archive_entry *
entry_kept(char **roots, struct archive_entry *e, uint32_t uid,
    const char **reason, int *fatal)
{
	struct archive_entry *k;
	const char *raw, *link;
	char *name, *target = NULL;
	int type = archive_entry_filetype(e);

	*fatal = 0;
	if ((raw = archive_entry_pathname(e)) == NULL)
		raw = "";
	if ((name = name_below(roots, raw, reason)) == NULL)
		return NULL;
	/* A mount itself is the sandbox's, made with it: not kept. */
	if (is_root(roots, name)) {
		*reason = "";
		free(name);
		return NULL;
	}
	if ((link = archive_entry_hardlink(e)) != NULL) {
		if ((target = name_below(roots, link, reason)) == NULL ||
		    is_root(roots, target)) {
			if (target != NULL)
				*reason = "hardlink to a mount";
			free(target);
			free(name);
			return NULL;
		}
	} else if (type == AE_IFLNK) {
		link = archive_entry_symlink(e);
		if (link == NULL || *link == '\0' ||
		    strlen(link) > SNAP_LINK_MAX) {
			*reason = "symlink target";
			free(name);
			return NULL;
		}
	} else if (type != AE_IFREG && type != AE_IFDIR) {
		*reason = type == AE_IFIFO    ? "fifo"
		          : type == AE_IFSOCK ? "socket"
		          : type == AE_IFCHR || type == AE_IFBLK
		              ? "device"
		              : "unsupported";
		free(name);
		return NULL;
	}
	if (type == AE_IFREG && archive_entry_size_is_set(e) &&
	    archive_entry_size(e) < 0) {
		*reason = "size";
		*fatal = 1;
		free(name);
		return NULL;
	}
	k = archive_entry_new();
	archive_entry_set_pathname(k, name);
	/* A hardlink is a file's second name, whatever its header said. */
	archive_entry_set_filetype(
	    k, target != NULL ? AE_IFREG : (unsigned int)type);
	archive_entry_set_perm(k, archive_entry_perm(e) & 0777);
	archive_entry_set_uid(k, uid);
	archive_entry_set_gid(k, uid);
	archive_entry_set_mtime(
	    k, archive_entry_mtime(e), archive_entry_mtime_nsec(e));
	if (target != NULL) {
		archive_entry_set_hardlink(k, target);
		archive_entry_set_size(k, 0);
	} else if (type == AE_IFLNK)
		archive_entry_set_symlink(k, link);
	else if (type == AE_IFREG)
		archive_entry_set_size(k, archive_entry_size(e));
	else
		archive_entry_set_size(k, 0);
	free(name);
	free(target);
	return k;
}

/* --- the copier --- */

struct snap_in {
	int out_fd;
	struct snap_limits lim;
	char *limit_name;
	char **roots;
	struct tar_pipe p; /* the stream in, the thread's end out */
	atomic_int cancel;
	struct archive *r, *w;
	char *buf;
	int rc;
	int over; /* it went past lim.max_bytes */
	char error[512];
	uint64_t written; /* archive bytes */
	uint64_t synced; /* ... whose writeback was started */
	uint64_t entries, bytes, skipped;
};

static void in_fail(struct snap_in *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

static void
in_fail(struct snap_in *t, const char *fmt, ...)
{
	va_list ap;

	if (t->rc == -1)
		return;
	t->rc = -1;
	va_start(ap, fmt);
	vsnprintf(t->error, sizeof t->error, fmt, ap);
	va_end(ap);
}

/* libarchive's output: the file, counted against the cap. */
static la_ssize_t
in_write(struct archive *a, void *arg, const void *buf, size_t len)
{
	struct snap_in *t = arg;
	const char *p = buf;
	size_t left = len;
	ssize_t n;

	if (t->lim.max_bytes != 0 && len > t->lim.max_bytes - t->written) {
		t->over = 1;
		in_fail(t, "the snapshot is larger than %llu bytes (%s)",
		    (unsigned long long)t->lim.max_bytes, t->limit_name);
		archive_set_error(a, EFBIG, "%s", t->error);
		return -1;
	}
	while (left > 0) {
		if ((n = write(t->out_fd, p, left)) == -1) {
			if (errno == EINTR)
				continue;
			in_fail(t, "cannot write the snapshot: %s",
			    strerror(errno));
			archive_set_error(a, errno, "%s", t->error);
			return -1;
		}
		p += n;
		left -= (size_t)n;
	}
	t->written += len;
	/* The disk's work overlaps the stream's, so the fsync at the end
	 * waits for little. */
	if (t->written - t->synced >= SNAP_SYNC_EVERY) {
		sync_file_range(t->out_fd, (off64_t)t->synced,
		    (off64_t)(t->written - t->synced), SYNC_FILE_RANGE_WRITE);
		t->synced = t->written;
	}
	return (la_ssize_t)len;
}

/* One entry: kept (header and data) or skipped. */
static void
in_entry(struct snap_in *t, struct archive_entry *e)
{
	struct archive_entry *k;
	const char *reason = NULL;
	la_ssize_t n;
	int fatal;

	if (t->lim.max_files != 0 && t->entries + 1 > t->lim.max_files) {
		in_fail(t, "more than %llu files and directories (the limit)",
		    (unsigned long long)t->lim.max_files);
		return;
	}
	if ((k = entry_kept(t->roots, e, 65534, &reason, &fatal)) == NULL) {
		if (fatal)
			in_fail(t, "invalid entry: %s", reason);
		if (*reason != '\0')
			t->skipped++;
		return;
	}
	t->entries++;
	if (archive_write_header(t->w, k) < ARCHIVE_WARN) {
		in_fail(t, "%s", archive_error_string(t->w));
		archive_entry_free(k);
		return;
	}
	if (archive_entry_filetype(k) == AE_IFREG &&
	    archive_entry_hardlink(k) == NULL) {
		while ((n = archive_read_data(t->r, t->buf, SNAP_CHUNK)) > 0) {
			if (archive_write_data(t->w, t->buf, (size_t)n) != n) {
				in_fail(t, "%s", archive_error_string(t->w));
				break;
			}
			t->bytes += (uint64_t)n;
		}
		if (n < 0)
			in_fail(t, "archive truncated or invalid: %s",
			    archive_error_string(t->r));
	}
	archive_entry_free(k);
	if (t->rc == 0 && archive_write_finish_entry(t->w) < ARCHIVE_WARN)
		in_fail(t, "%s", archive_error_string(t->w));
}

static void *
in_main(void *arg)
{
	struct snap_in *t = arg;
	struct archive_entry *e;
	char buf[8192];
	int r;

	if (archive_read_open_fd(t->r, t->p.in[0], 10240) != ARCHIVE_OK ||
	    archive_write_open2(t->w, t, NULL, in_write, NULL, NULL) !=
	        ARCHIVE_OK)
		in_fail(t, "cannot start the snapshot's archive");
	while (t->rc == 0 && !atomic_load(&t->cancel)) {
		r = archive_read_next_header(t->r, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			in_fail(t, "archive truncated or invalid: %s",
			    archive_error_string(t->r));
			break;
		}
		in_entry(t, e);
	}
	if (atomic_load(&t->cancel))
		in_fail(t, "the snapshot was cancelled");
	if (archive_write_close(t->w) != ARCHIVE_OK)
		in_fail(t, "%s", archive_error_string(t->w));
	/* Whole on the disk before the caller names it a snapshot. */
	if (t->rc == 0 && fsync(t->out_fd) == -1)
		in_fail(t, "cannot write the snapshot: %s", strerror(errno));
	/* What follows the trailer (padding, up to 1 MiB) is read, so that
	 * the sender is not stopped by a full pipe. */
	for (r = 0; r < 128 && read(t->p.in[0], buf, sizeof buf) > 0; r++)
		;
	archive_read_close(t->r);
	tar_pipe_ended(&t->p);
	return NULL;
}

struct snap_in *
snap_in_start(int out_fd, const struct snap_limits *lim,
    const char *const *roots, char *err, size_t errlen)
{
	struct snap_in *t;

	t = xcalloc(1, sizeof *t);
	tar_pipe_init(&t->p);
	t->out_fd = out_fd;
	t->lim = *lim;
	t->limit_name =
	    xstrdup(lim->limit_name != NULL ? lim->limit_name : "the limit");
	t->roots = roots_copy(roots);
	t->buf = xmalloc(SNAP_CHUNK);
	t->r = archive_read_new();
	t->w = archive_write_new();
	if (t->r == NULL || t->w == NULL ||
	    archive_read_support_format_tar(t->r) != ARCHIVE_OK ||
	    archive_write_set_format_pax_restricted(t->w) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(t->w, 1) != ARCHIVE_OK) {
		errbuf_set(err, errlen, "cannot start the snapshot's archive");
		goto fail;
	}
	if (tar_pipe_start(&t->p, in_main, t, err, errlen) == -1)
		goto fail;
	return t;
fail:
	snap_in_free(t);
	return NULL;
}

int
snap_in_fd(struct snap_in *t)
{
	return t->p.in[1];
}

void
snap_in_close_input(struct snap_in *t)
{
	tar_pipe_close_input(&t->p);
}

int
snap_in_done_fd(struct snap_in *t)
{
	return t->p.done[0];
}

int
snap_in_result(
    struct snap_in *t, uint64_t *files, uint64_t *bytes, uint64_t *skipped)
{
	tar_pipe_join(&t->p);
	*files = t->entries;
	*bytes = t->written;
	*skipped = t->skipped;
	return t->rc;
}

const char *
snap_in_error(struct snap_in *t)
{
	return t->rc == -1 ? t->error : NULL;
}

/* Whether it failed for its size (the caller's limits), once joined. */
int
snap_in_over(struct snap_in *t)
{
	return t->rc == -1 && t->over;
}

void
snap_in_free(struct snap_in *t)
{
	if (t == NULL)
		return;
	if (t->p.running) {
		atomic_store(&t->cancel, 1);
		tar_pipe_close_input(&t->p);
		tar_pipe_join(&t->p);
	}
	tar_pipe_free(&t->p);
	if (t->r != NULL)
		archive_read_free(t->r);
	if (t->w != NULL)
		archive_write_free(t->w);
	roots_free(t->roots);
	free(t->limit_name);
	free(t->buf);
	free(t);
}

/* --- the producer --- */

struct snap_out {
	struct archive *r, *w;
	struct evbuffer *out; /* during a pump */
	struct snap_limits lim;
	char **roots;
	uint32_t uid;
	int fd;
	int in_data; /* the current entry's data is being copied */
	int state; /* 1 more, 0 done, -1 error */
	char error[512];
	char *buf;
	uint64_t files, bytes;
};

static void out_fail(struct snap_out *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

static void
out_fail(struct snap_out *t, const char *fmt, ...)
{
	va_list ap;

	if (t->state == -1)
		return;
	t->state = -1;
	va_start(ap, fmt);
	vsnprintf(t->error, sizeof t->error, fmt, ap);
	va_end(ap);
}

struct snap_out *
snap_out_new(const char *path, const struct snap_limits *lim,
    const char *const *roots, uint32_t uid, char *err, size_t errlen)
{
	struct snap_out *t;

	t = xcalloc(1, sizeof *t);
	t->lim = *lim;
	t->roots = roots_copy(roots);
	t->uid = uid;
	t->state = 1;
	t->buf = xmalloc(SNAP_CHUNK);
	if ((t->fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		errbuf_set(err, errlen, "cannot open the snapshot: %s",
		    strerror(errno));
		snap_out_free(t);
		return NULL;
	}
	t->r = archive_read_new();
	t->w = archive_write_new();
	if (t->r == NULL || t->w == NULL ||
	    archive_read_support_format_tar(t->r) != ARCHIVE_OK ||
	    archive_read_open_fd(t->r, t->fd, 65536) != ARCHIVE_OK ||
	    archive_write_set_format_pax_restricted(t->w) != ARCHIVE_OK ||
	    archive_write_open2(t->w, &t->out, NULL, tar_write_evbuffer, NULL,
	        NULL) != ARCHIVE_OK) {
		errbuf_set(err, errlen, "the snapshot is damaged: %s",
		    t->r != NULL ? archive_error_string(t->r) : "no memory");
		snap_out_free(t);
		return NULL;
	}
	return t;
}

/* The next entry's header, or the end. */
static void
out_next(struct snap_out *t)
{
	struct archive_entry *e, *k;
	const char *reason = NULL;
	int r, fatal;

	r = archive_read_next_header(t->r, &e);
	if (r == ARCHIVE_EOF) {
		if (archive_write_close(t->w) != ARCHIVE_OK)
			out_fail(t, "%s", archive_error_string(t->w));
		else
			t->state = 0;
		return;
	}
	if (r < ARCHIVE_WARN) {
		out_fail(t, "the snapshot is damaged: %s",
		    archive_error_string(t->r));
		return;
	}
	/* Made by the copier: an entry it would leave out is damage. */
	if ((k = entry_kept(t->roots, e, t->uid, &reason, &fatal)) == NULL) {
		out_fail(t, "the snapshot is damaged: an entry (%s)", reason);
		return;
	}
	if (++t->files > t->lim.max_files && t->lim.max_files != 0) {
		archive_entry_free(k);
		out_fail(t, "the snapshot holds more than %llu entries",
		    (unsigned long long)t->lim.max_files);
		return;
	}
	if (archive_write_header(t->w, k) < ARCHIVE_WARN)
		out_fail(t, "%s", archive_error_string(t->w));
	else
		t->in_data = archive_entry_filetype(k) == AE_IFREG &&
		             archive_entry_hardlink(k) == NULL;
	archive_entry_free(k);
}

static void
out_data(struct snap_out *t)
{
	la_ssize_t n;

	if ((n = archive_read_data(t->r, t->buf, SNAP_CHUNK)) < 0) {
		out_fail(t, "the snapshot is damaged: %s",
		    archive_error_string(t->r));
		return;
	}
	if (n == 0) {
		t->in_data = 0;
		if (archive_write_finish_entry(t->w) < ARCHIVE_WARN)
			out_fail(t, "%s", archive_error_string(t->w));
		return;
	}
	t->bytes += (uint64_t)n;
	if (t->lim.max_bytes != 0 && t->bytes > t->lim.max_bytes) {
		out_fail(t, "the snapshot holds more than %llu bytes",
		    (unsigned long long)t->lim.max_bytes);
		return;
	}
	if (archive_write_data(t->w, t->buf, (size_t)n) != n)
		out_fail(t, "%s", archive_error_string(t->w));
}

int
snap_out_pump(struct snap_out *t, struct evbuffer *out, size_t want)
{
	size_t start = evbuffer_get_length(out);

	t->out = out;
	while (t->state == 1 && evbuffer_get_length(out) - start < want) {
		if (t->in_data)
			out_data(t);
		else
			out_next(t);
	}
	t->out = NULL;
	return t->state;
}

const char *
snap_out_error(struct snap_out *t)
{
	return t->state == -1 ? t->error : NULL;
}

uint64_t
snap_out_files(struct snap_out *t)
{
	return t->files;
}

uint64_t
snap_out_bytes(struct snap_out *t)
{
	return t->bytes;
}

void
snap_out_free(struct snap_out *t)
{
	if (t == NULL)
		return;
	if (t->w != NULL)
		archive_write_free(t->w);
	if (t->r != NULL)
		archive_read_free(t->r);
	if (t->fd != -1)
		close(t->fd);
	roots_free(t->roots);
	free(t->buf);
	free(t);
}
