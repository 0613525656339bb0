/* Tar streams on the host: archive a host tree, extract into one. */
#include <sys/random.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
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
#include "utf8.h"
#include "xmalloc.h"

#define TAR_CHUNK (64 * 1024) /* file bytes read per step */
#define TAR_DRAIN_MAX (1024 * 1024) /* bytes accepted after the trailer */
#define TAR_OWNER_NAME "nobody"
#define TAR_GROUP_NAME "nogroup"

/*
 * libarchive 3.6 reads the umask with umask(0) and back, in
 * archive_write_disk_new() and for every header: two extractions doing it
 * at once can leave the process at umask 0. Each extraction thread takes
 * a umask of its own (unshare(CLONE_FS)); where that is refused, these
 * calls take this lock.
 */
static pthread_mutex_t umask_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * A UTF-8 locale for this thread's libarchive name conversions: in the C
 * locale non-ASCII names would be written with hdrcharset=BINARY.
 */
static locale_t
utf8_locale(void)
{
	locale_t loc;

	if ((loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0)) == NULL)
		loc = newlocale(LC_CTYPE_MASK, "C.utf8", (locale_t)0);
	return loc;
}

/* A JSON string of a file name, which may not be UTF-8. */
static json_object *
json_name(const char *name)
{
	json_object *s;
	char *clean;
	size_t len;

	clean = utf8_sanitize(name, strlen(name), &len);
	s = json_object_new_string_len(clean, (int)len);
	free(clean);
	return s;
}

/* Lists path and why it was left out, up to TAR_MAX_LISTED entries. */
static void
report_skip(json_object *list, uint64_t *count, const char *path,
    const char *reason, const char *detail)
{
	json_object *o;

	if ((*count)++ >= TAR_MAX_LISTED)
		return;
	o = json_object_new_object();
	json_object_object_add(o, "path", json_name(path));
	json_object_object_add(o, "reason", json_object_new_string(reason));
	if (detail != NULL)
		json_object_object_add(o, "detail", json_name(detail));
	json_object_array_add(list, o);
}

/*
 * The archive name in normal form ("a/b": no empty, "." or ".." component,
 * no leading or trailing '/'), possibly "", or NULL and why it is refused.
 */
char *
tar_name_clean(const char *raw, const char **reason)
{
	const char *p = raw, *end;
	char *out, *o;
	size_t n;

	if (raw[0] == '/') {
		*reason = "absolute";
		return NULL;
	}
	out = o = xmalloc(strlen(raw) + 1);
	while (*p != '\0') {
		while (*p == '/')
			p++;
		end = strchrnul(p, '/');
		n = end - p;
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			free(out);
			*reason = "dotdot";
			return NULL;
		}
		if (n > 0 && !(n == 1 && p[0] == '.')) {
			if (o != out)
				*o++ = '/';
			memcpy(o, p, n);
			o += n;
		}
		p = end;
	}
	*o = '\0';
	return out;
}

/* The report reason for a file type that is never archived. */
static const char *
type_reason(mode_t mode)
{
	if (S_ISLNK(mode))
		return "symlink";
	if (S_ISFIFO(mode))
		return "fifo";
	if (S_ISSOCK(mode))
		return "socket";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "device";
	return "unsupported";
}

/*
 * Producer. The walk keeps one open directory per level (at most
 * TAR_MAX_DEPTH) and one open file; a pump archives until about want
 * bytes were added, so memory stays bounded whatever the tree.
 */
enum out_state { OUT_WALK, OUT_DATA, OUT_DONE, OUT_ERROR };

struct out_dir {
	DIR *dir;
	char *name; /* in the archive */
};

struct tar_out {
	struct archive *a;
	struct archive_entry *entry;
	locale_t loc;
	struct evbuffer *out; /* during a pump only */

	struct tar_limits lim;
	char **exclude;

	int root_fd; /* until its entry is written */
	struct stat root_st;
	char *root_name;

	struct out_dir stack[TAR_MAX_DEPTH];
	int depth;

	int fd; /* the file being archived */
	char *cur;
	uint64_t remaining;
	char *buf;

	enum out_state state;
	char error[512];

	json_object *skipped;
	uint64_t nskipped;
	uint64_t files;
	uint64_t bytes;
	uint32_t owner; /* uid and gid of every entry */
};

static void out_fail(struct tar_out *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

/* Stops the stream with an error for tar_out_error. */
static void
out_fail(struct tar_out *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->error, sizeof t->error, fmt, ap);
	va_end(ap);
	t->state = OUT_ERROR;
}

/*
 * libarchive's output: into the pump's buffer. Outside a pump only
 * tar_out_free closes the archive, and what it writes (the zeros padding
 * an unfinished entry, 13 ms a GiB, and the trailer) is dropped: failing
 * here or archive_write_fail() would leak the block buffer in libarchive
 * before 3.8 (libarchive issue 1568).
 */
la_ssize_t
tar_write_evbuffer(struct archive *a, void *arg, const void *buf, size_t len)
{
	struct evbuffer *out = *(struct evbuffer **)arg;

	if (out != NULL && evbuffer_add(out, buf, len) == -1) {
		archive_set_error(a, ENOMEM, "out of memory");
		return -1;
	}
	return (la_ssize_t)len;
}

/* Is this base name on the exclude list? */
static int
out_excluded(struct tar_out *t, const char *name)
{
	char **e;

	for (e = t->exclude; e != NULL && *e != NULL; e++) {
		if (strcmp(*e, name) == 0)
			return 1;
	}
	return 0;
}

/*
 * Writes the header of a regular file or directory whose fd is open,
 * after the caps allow it; takes fd and name.
 */
static void
out_entry(struct tar_out *t, int fd, const struct stat *st, char *name)
{
	struct out_dir *d;
	uint64_t size = S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0;

	if (t->lim.max_files != 0 && t->files + 1 > t->lim.max_files) {
		out_fail(t,
		    "more than %llu files and directories (the limit); "
		    "stopped at %s",
		    (unsigned long long)t->lim.max_files, name);
		goto fail;
	}
	if (t->lim.max_bytes != 0 && t->bytes + size > t->lim.max_bytes) {
		out_fail(t,
		    "project larger than %llu bytes (the limit); stopped at %s",
		    (unsigned long long)t->lim.max_bytes, name);
		goto fail;
	}
	archive_entry_clear(t->entry);
	archive_entry_copy_pathname(t->entry, name);
	archive_entry_set_filetype(
	    t->entry, S_ISDIR(st->st_mode) ? AE_IFDIR : AE_IFREG);
	archive_entry_set_perm(t->entry, st->st_mode & 0777);
	archive_entry_set_size(t->entry, (la_int64_t)size);
	archive_entry_set_mtime(
	    t->entry, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
	archive_entry_set_uid(t->entry, t->owner);
	archive_entry_set_gid(t->entry, t->owner);
	if (t->owner == TAR_OWNER_ID) {
		archive_entry_copy_uname(t->entry, TAR_OWNER_NAME);
		archive_entry_copy_gname(t->entry, TAR_GROUP_NAME);
	}
	/* ARCHIVE_WARN: a name that is not UTF-8 goes in as raw bytes. */
	if (archive_write_header(t->a, t->entry) < ARCHIVE_WARN) {
		out_fail(t, "%s: %s", name, archive_error_string(t->a));
		goto fail;
	}
	t->files++;
	t->bytes += size;

	if (S_ISDIR(st->st_mode)) {
		d = &t->stack[t->depth];
		if ((d->dir = fdopendir(fd)) == NULL) {
			out_fail(t, "%s: %s", name, strerror(errno));
			goto fail;
		}
		d->name = name;
		t->depth++;
		return;
	}
	if (size == 0) {
		close(fd);
		free(name);
		if (archive_write_finish_entry(t->a) < ARCHIVE_WARN)
			out_fail(t, "%s", archive_error_string(t->a));
		return;
	}
	t->fd = fd;
	t->cur = name;
	t->remaining = size;
	t->state = OUT_DATA;
	return;

fail:
	close(fd);
	free(name);
}

/*
 * Archives one directory entry or lists why not. The type is checked
 * with lstat, then again with fstat on the O_NOFOLLOW descriptor since
 * the tree may change in between.
 */
static void
out_child(struct tar_out *t, struct out_dir *d, const char *base, char *name)
{
	struct stat st;
	int dfd = dirfd(d->dir), fd;

	if (out_excluded(t, base)) {
		report_skip(t->skipped, &t->nskipped, name, "excluded", NULL);
		goto skip;
	}
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == -1) {
		if (errno != ENOENT) /* gone since readdir: nothing to say */
			report_skip(t->skipped, &t->nskipped, name,
			    "unreadable", strerror(errno));
		goto skip;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		report_skip(t->skipped, &t->nskipped, name,
		    type_reason(st.st_mode), NULL);
		goto skip;
	}
	if (S_ISDIR(st.st_mode) && t->depth == TAR_MAX_DEPTH) {
		out_fail(t, "%s: more than %d directories deep", name,
		    TAR_MAX_DEPTH);
		goto skip;
	}
	fd = openat(dfd, base,
	    O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY |
	        (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
	if (fd == -1) {
		report_skip(t->skipped, &t->nskipped, name,
		    errno == ELOOP ? "symlink" : "unreadable",
		    errno == ELOOP ? NULL : strerror(errno));
		goto skip;
	}
	if (fstat(fd, &st) == -1 ||
	    (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) ||
	    (S_ISDIR(st.st_mode) && t->depth == TAR_MAX_DEPTH)) {
		report_skip(t->skipped, &t->nskipped, name,
		    S_ISDIR(st.st_mode) ? "unreadable"
		                        : type_reason(st.st_mode),
		    "changed while archiving");
		close(fd);
		goto skip;
	}
	out_entry(t, fd, &st, name);
	return;

skip:
	free(name);
}

/* Writes the next entry of the walk, or the trailer at the end. */
static void
out_next(struct tar_out *t)
{
	struct out_dir *d;
	struct dirent *de;
	char *name;
	int fd;

	if (t->root_fd != -1) {
		fd = t->root_fd;
		t->root_fd = -1;
		out_entry(t, fd, &t->root_st, xstrdup(t->root_name));
		return;
	}
	while (t->depth > 0) {
		d = &t->stack[t->depth - 1];
		errno = 0;
		if ((de = readdir(d->dir)) == NULL) {
			if (errno != 0) {
				out_fail(t, "%s: %s", d->name, strerror(errno));
				return;
			}
			closedir(d->dir);
			free(d->name);
			t->depth--;
			continue;
		}
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		xasprintf(&name, "%s/%s", d->name, de->d_name);
		out_child(t, d, de->d_name, name);
		return;
	}
	if (archive_write_close(t->a) != ARCHIVE_OK) {
		out_fail(t, "%s", archive_error_string(t->a));
		return;
	}
	t->state = OUT_DONE;
}

/* Archives the next chunk of the current file. */
static void
out_data(struct tar_out *t)
{
	size_t want = t->remaining < TAR_CHUNK ? t->remaining : TAR_CHUNK;
	ssize_t n;

	if ((n = read(t->fd, t->buf, want)) == -1) {
		if (errno != EINTR)
			out_fail(t, "%s: %s", t->cur, strerror(errno));
		return;
	}
	if (n == 0) {
		/* Shrunk since fstat: the entry is padded with zeros. */
		report_skip(t->skipped, &t->nskipped, t->cur, "changed",
		    "file shrank while archiving; its end is zeros");
		t->remaining = 0;
	} else if (archive_write_data(t->a, t->buf, n) != n) {
		out_fail(t, "%s: %s", t->cur, archive_error_string(t->a));
		return;
	} else
		t->remaining -= n;
	if (t->remaining > 0)
		return;
	close(t->fd);
	t->fd = -1;
	free(t->cur);
	t->cur = NULL;
	t->state = OUT_WALK;
	if (archive_write_finish_entry(t->a) < ARCHIVE_WARN)
		out_fail(t, "%s", archive_error_string(t->a));
}

/*
 * Starts the archive of host path src (checked against the policy),
 * stored as name (a relative archive path). exclude is a NULL-terminated
 * list of base names skipped anywhere below src, or NULL.
 */
struct tar_out *
tar_out_new(const struct hostpolicy *hp, const char *src, const char *name,
    const struct tar_limits *lim, const char *const *exclude, char *err,
    size_t errlen)
{
	struct tar_out *t;
	const char *reason;
	char *path, *clean;
	size_t n;
	int fd;

	if ((clean = tar_name_clean(name, &reason)) == NULL || *clean == '\0') {
		errbuf_set(err, errlen,
		    "invalid name in the archive \"%s\": it must be a "
		    "relative path without \"..\"",
		    name);
		free(clean);
		return NULL;
	}
	if ((path = hostpath_resolve(
	         hp, src, HOSTPATH_EXISTING, err, errlen)) == NULL) {
		free(clean);
		return NULL;
	}
	fd = open(
	    path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd == -1) {
		errbuf_set(err, errlen, "%s: %s", src, strerror(errno));
		goto fail;
	}

	t = xcalloc(1, sizeof *t);
	t->root_fd = fd;
	t->fd = -1;
	t->owner = TAR_OWNER_ID;
	if (fstat(fd, &t->root_st) == -1 ||
	    (!S_ISREG(t->root_st.st_mode) && !S_ISDIR(t->root_st.st_mode))) {
		errbuf_set(err, errlen,
		    "%s is not a regular file or a directory", src);
		close(fd);
		free(t);
		goto fail;
	}
	free(path);
	t->root_name = clean;
	if (lim != NULL)
		t->lim = *lim;
	for (n = 0; exclude != NULL && exclude[n] != NULL; n++)
		;
	if (n > 0) {
		t->exclude = xcalloc(n + 1, sizeof *t->exclude);
		while (n-- > 0)
			t->exclude[n] = xstrdup(exclude[n]);
	}
	t->buf = xmalloc(TAR_CHUNK);
	t->skipped = json_object_new_array();
	t->loc = utf8_locale();
	t->entry = archive_entry_new();
	t->a = archive_write_new();
	if (t->entry == NULL || t->a == NULL ||
	    archive_write_set_format_pax_restricted(t->a) != ARCHIVE_OK ||
	    archive_write_open2(t->a, &t->out, NULL, tar_write_evbuffer, NULL,
	        NULL) != ARCHIVE_OK) {
		errbuf_set(err, errlen, "cannot start the archive: %s",
		    t->a != NULL ? archive_error_string(t->a) : "no memory");
		tar_out_free(t);
		return NULL;
	}
	return t;

fail:
	free(path);
	free(clean);
	return NULL;
}

int
tar_out_pump(struct tar_out *t, struct evbuffer *out, size_t want)
{
	locale_t old = (locale_t)0;
	size_t start;

	if (t->state == OUT_ERROR)
		return -1;
	if (t->state == OUT_DONE)
		return 0;
	if (t->loc != (locale_t)0)
		old = uselocale(t->loc);
	t->out = out;
	start = evbuffer_get_length(out);
	do {
		if (t->state == OUT_DATA)
			out_data(t);
		else
			out_next(t);
	} while ((t->state == OUT_WALK || t->state == OUT_DATA) &&
	         evbuffer_get_length(out) - start < want);
	t->out = NULL;
	if (t->loc != (locale_t)0)
		uselocale(old);
	if (t->state == OUT_ERROR)
		return -1;
	return t->state == OUT_DONE ? 0 : 1;
}

const char *
tar_out_error(struct tar_out *t)
{
	return t->state == OUT_ERROR ? t->error : NULL;
}

json_object *
tar_out_skipped(struct tar_out *t)
{
	return t->skipped;
}

uint64_t
tar_out_nskipped(struct tar_out *t)
{
	return t->nskipped;
}

uint64_t
tar_out_files(struct tar_out *t)
{
	return t->files;
}

uint64_t
tar_out_bytes(struct tar_out *t)
{
	return t->bytes;
}

void
tar_out_set_owner(struct tar_out *t, uint32_t uid)
{
	t->owner = uid;
}

void
tar_out_free(struct tar_out *t)
{
	char **e;

	if (t == NULL)
		return;
	if (t->a != NULL)
		archive_write_free(t->a); /* see tar_write_evbuffer */
	if (t->entry != NULL)
		archive_entry_free(t->entry);
	while (t->depth > 0) {
		t->depth--;
		closedir(t->stack[t->depth].dir);
		free(t->stack[t->depth].name);
	}
	if (t->root_fd != -1)
		close(t->root_fd);
	if (t->fd != -1)
		close(t->fd);
	free(t->cur);
	free(t->root_name);
	for (e = t->exclude; e != NULL && *e != NULL; e++)
		free(*e);
	free(t->exclude);
	free(t->buf);
	json_object_put(t->skipped);
	if (t->loc != (locale_t)0)
		freelocale(t->loc);
	free(t);
}

/* --- the pipe and thread of a consumer (hosttar.h) --- */

void
tar_pipe_init(struct tar_pipe *p)
{
	p->in[0] = p->in[1] = p->done[0] = p->done[1] = -1;
	p->running = 0;
}

int
tar_pipe_start(struct tar_pipe *p, void *(*main)(void *), void *arg, char *err,
    size_t errlen)
{
	sigset_t all, old;
	int flags, error;

	if (pipe2(p->in, O_CLOEXEC) == -1 ||
	    pipe2(p->done, O_CLOEXEC | O_NONBLOCK) == -1 ||
	    (flags = fcntl(p->in[1], F_GETFL)) == -1 ||
	    fcntl(p->in[1], F_SETFL, flags | O_NONBLOCK) == -1) {
		errbuf_set(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	fcntl(p->in[1], F_SETPIPE_SZ, 1024 * 1024); /* fewer wakeups */
	/* Signals are for the event loop's thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	error = pthread_create(&p->thread, NULL, main, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (error != 0) {
		errbuf_set(
		    err, errlen, "cannot start a thread: %s", strerror(error));
		return -1;
	}
	p->running = 1;
	return 0;
}

void
tar_pipe_close_input(struct tar_pipe *p)
{
	if (p->in[1] != -1) {
		close(p->in[1]);
		p->in[1] = -1;
	}
}

/* The thread's last step: its input closed, its end said. */
void
tar_pipe_ended(struct tar_pipe *p)
{
	close(p->in[0]);
	p->in[0] = -1;
	close(p->done[1]);
	p->done[1] = -1;
}

/* Joins the thread: immediate once done[0] is readable. */
void
tar_pipe_join(struct tar_pipe *p)
{
	if (!p->running)
		return;
	pthread_join(p->thread, NULL);
	p->running = 0;
}

/* Closes what is left (after the join). */
void
tar_pipe_free(struct tar_pipe *p)
{
	int *fds[] = {&p->in[0], &p->in[1], &p->done[0], &p->done[1]};
	size_t i;

	for (i = 0; i < sizeof fds / sizeof fds[0]; i++)
		if (*fds[i] != -1) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}

/*
 * Consumer. The thread owns the reader, the disk writer and the result
 * fields until it closes done[1]; the caller reads them after the join.
 * Names go to libarchive as dest/name: the flags' checks (no "..", no
 * symlink on the way) run on them, and our own checks run first on the
 * archive's name and on the directories below dest.
 */
struct tar_in {
	char *dest; /* canonical */
	int destfd;
	char *tmpname; /* the private directory in dest */
	char *root; /* dest/tmpname: where the archive is extracted */
	int rootfd;
	struct tar_limits lim;
	int overwrite;
	int keep_exec;
	char **deny; /* NULL-terminated, the built-in names first */
	char *limit_name;
	char *single;
	char *skipped_below; /* a listed skip: what is below it is silent */
	locale_t loc;

	int own_umask; /* the thread's fs attributes are its own */
	struct tar_pipe p; /* the archive in, the thread's end out */
	atomic_int cancel;

	struct archive *r;
	struct archive *w;
	char *partial; /* temporary name of the file being written */
	char *partial_name;
	uint64_t serial; /* for temporary names */

	int rc;
	char error[512];
	uint64_t entries, seen; /* caps: everything in the archive */
	uint64_t copied; /* content bytes written, counted as they come */
	uint64_t files, bytes; /* written */
	json_object *written;
	uint64_t nwritten;
	json_object *skipped;
	uint64_t nskipped;
};

static void in_fail(struct tar_in *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

/* Ends the extraction with an error (the first one is kept). */
static void
in_fail(struct tar_in *t, const char *fmt, ...)
{
	va_list ap;

	if (t->rc == -1)
		return;
	t->rc = -1;
	va_start(ap, fmt);
	vsnprintf(t->error, sizeof t->error, fmt, ap);
	va_end(ap);
}

/*
 * Checks the directories on the way to name below dest without following
 * any symlink. Returns NULL to extract, "" to do nothing (an existing
 * directory for a directory entry) or the reason to skip.
 */
static const char *
in_check_path(struct tar_in *t, const char *name, int isdir)
{
	struct stat st;
	const char *reason = NULL;
	char *copy, *comp, *slash;
	int dfd = t->rootfd, next;

	copy = xstrdup(name);
	for (comp = copy;; comp = slash + 1) {
		if ((slash = strchr(comp, '/')) != NULL)
			*slash = '\0';
		if (fstatat(dfd, comp, &st, AT_SYMLINK_NOFOLLOW) == -1) {
			if (errno != ENOENT)
				reason = "unreadable";
			break; /* what is missing will be created */
		}
		if (slash == NULL) {
			/* With overwrite a symlink is replaced, never followed.
			 */
			if (S_ISDIR(st.st_mode) && isdir)
				reason = "";
			else if (!t->overwrite)
				reason = "exists";
			break;
		}
		if (S_ISLNK(st.st_mode)) {
			reason = "symlink in path";
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			reason = "not a directory in path";
			break;
		}
		next = openat(
		    dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next == -1) {
			reason =
			    errno == ELOOP ? "symlink in path" : "unreadable";
			break;
		}
		if (dfd != t->rootfd)
			close(dfd);
		dfd = next;
	}
	if (dfd != t->rootfd)
		close(dfd);
	free(copy);
	return reason;
}

/* Copies the current entry's data to the disk writer. */
static int
in_copy(struct tar_in *t, const char *name)
{
	const void *buf;
	size_t len;
	la_int64_t off;
	int r;

	for (;;) {
		r = archive_read_data_block(t->r, &buf, &len, &off);
		if (r == ARCHIVE_EOF)
			return 0;
		if (r < ARCHIVE_WARN) {
			in_fail(t, "archive truncated or invalid in %s: %s",
			    name, archive_error_string(t->r));
			return -1;
		}
		/* Counted here too: sizes in headers are the sandbox's. */
		if (t->lim.max_bytes != 0 &&
		    len > t->lim.max_bytes - t->copied) {
			in_fail(t,
			    "archive larger than %llu bytes (%s); stopped at "
			    "%s",
			    (unsigned long long)t->lim.max_bytes, t->limit_name,
			    name);
			return -1;
		}
		t->copied += len;
		if (archive_write_data_block(t->w, buf, len, off) <
		    ARCHIVE_WARN) {
			in_fail(t, "%s: %s", name, archive_error_string(t->w));
			return -1;
		}
	}
}

/* Lists a path as written, directories with a trailing '/'. */
static void
in_written(struct tar_in *t, const char *name, int isdir, int64_t size)
{
	char *shown;

	t->files++;
	t->bytes += size;
	if (t->nwritten++ >= TAR_MAX_LISTED)
		return;
	xasprintf(&shown, "%s%s", name, isdir ? "/" : "");
	json_object_array_add(t->written, json_name(shown));
	free(shown);
}

/* Writes the entry's header to disk: 0, 1 refused (listed), -1 fatal. */
static int
in_header(struct tar_in *t, struct archive_entry *e, const char *name,
    const char *path, int isdir)
{
	int r;

	archive_entry_copy_pathname(e, path);
	/* No set-id or sticky bit, no execute bit on a file unless asked;
	 * the owner can always use what it got. */
	archive_entry_set_perm(
	    e, isdir ? (archive_entry_perm(e) & 0777) | 0700
	             : (archive_entry_perm(e) & (t->keep_exec ? 0777 : 0666)) |
	                   0600);
	if (!t->own_umask)
		pthread_mutex_lock(&umask_lock);
	r = archive_write_header(t->w, e);
	if (!t->own_umask)
		pthread_mutex_unlock(&umask_lock);
	if (r == ARCHIVE_FATAL) {
		in_fail(t, "%s: %s", name, archive_error_string(t->w));
		return -1;
	}
	if (r < ARCHIVE_WARN) {
		report_skip(t->skipped, &t->nskipped, name, "refused",
		    archive_error_string(t->w));
		return 1;
	}
	return 0;
}

/* A name nobody uses in path's directory, for the data to arrive under. */
static char *
in_temp(struct tar_in *t, const char *path)
{
	const char *slash = strrchr(path, '/');
	struct stat st;
	char *tmp;

	for (;;) {
		xasprintf(&tmp, "%.*s/.sandboxd-%lx-%llx.part",
		    (int)(slash - path), path, (unsigned long)(uintptr_t)t,
		    (unsigned long long)t->serial++);
		if (lstat(tmp, &st) == -1)
			return tmp;
		free(tmp);
	}
}

/*
 * Moves a complete file from one directory to another, never over
 * anything unless asked (then a symlink at to is replaced, not followed).
 */
static int
in_rename(
    struct tar_in *t, int fromfd, const char *from, int tofd, const char *to)
{
	if (t->overwrite)
		return renameat(fromfd, from, tofd, to);
	if (renameat2(fromfd, from, tofd, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	/* A file system without RENAME_NOREPLACE: link() refuses too. */
	if (linkat(fromfd, from, tofd, to, 0) == -1)
		return -1;
	unlinkat(fromfd, from, 0);
	return 0;
}

/*
 * Extracts a regular file into the private tree under a temporary name,
 * renamed once complete. 0 done or listed as skipped, -1 fatal.
 */
static int
in_file(struct tar_in *t, struct archive_entry *e, const char *name,
    const char *path)
{
	char *tmp;
	int r;

	tmp = in_temp(t, path);
	if ((r = in_header(t, e, name, tmp, 0)) != 0) {
		free(tmp);
		return r == 1 ? 0 : -1;
	}
	t->partial = tmp; /* in_main removes it if we stop */
	t->partial_name = xstrdup(name);
	if (in_copy(t, name) == -1)
		return -1;
	if (archive_write_finish_entry(t->w) < ARCHIVE_WARN) {
		in_fail(t, "%s: %s", name, archive_error_string(t->w));
		return -1;
	}
	/* The private tree: a second entry of this name replaces the
	 * first, as a tar would. */
	if (rename(tmp, path) == -1) {
		in_fail(t, "%s: %s", name, strerror(errno));
		return -1;
	}
	free(t->partial);
	free(t->partial_name);
	t->partial = t->partial_name = NULL;
	return 0;
}

/* Why a name must not reach the host as it is, or NULL. */
static const char *
name_hostile(const char *name, size_t len)
{
	const unsigned char *p = (const unsigned char *)name;
	size_t i;

	if (len > 0 && p[0] == '-')
		return "begins with '-'";
	for (i = 0; i < len; i++) {
		if (p[i] < 0x20 || p[i] == 0x7f)
			return "control character";
		/* U+202A..U+202E, U+2066..U+2069: bidi embeddings, overrides
		 * and isolates (a name that reads other than it is). */
		if (p[i] == 0xe2 && i + 2 < len &&
		    ((p[i + 1] == 0x80 && p[i + 2] >= 0xaa &&
		         p[i + 2] <= 0xae) ||
		        (p[i + 1] == 0x81 && p[i + 2] >= 0xa6 &&
		            p[i + 2] <= 0xa9)))
			return "bidi control character";
	}
	if (!utf8_valid(name, len))
		return "invalid UTF-8";
	return NULL;
}

/*
 * Checks each component of a clean name: a denied or hostile one skips
 * the entry (reason, *detail, and in *upto the length of the name up to
 * that component). NULL: the name is fine.
 */
static const char *
in_name_check(
    struct tar_in *t, const char *name, const char **detail, size_t *upto)
{
	const char *p = name, *end, *why;
	char **d;
	size_t n;

	for (;; p = end + 1) {
		end = strchrnul(p, '/');
		n = (size_t)(end - p);
		*upto = (size_t)(end - name);
		for (d = t->deny; *d != NULL; d++) {
			if (strlen(*d) == n && memcmp(*d, p, n) == 0) {
				*detail = *d;
				return "denied name";
			}
		}
		if ((why = name_hostile(p, n)) != NULL) {
			*detail = why;
			return "hostile name";
		}
		if (*end == '\0')
			return NULL;
	}
}

/* Is name below the last entry listed as skipped for its name? */
static int
in_below_skipped(struct tar_in *t, const char *name)
{
	size_t n;

	if (t->skipped_below == NULL)
		return 0;
	n = strlen(t->skipped_below);
	return strncmp(name, t->skipped_below, n) == 0 && name[n] == '/';
}

/*
 * Why an entry is not extracted (NULL: it is, "": silently), from its
 * type, its name and what is on disk. Sets the clean name, the path and
 * for some reasons a detail.
 */
static const char *
in_classify(struct tar_in *t, struct archive_entry *e, const char *raw,
    char **name, char **path, const char **detail)
{
	const char *reason = NULL, *p;
	int type = archive_entry_filetype(e), depth = 0;
	size_t upto;

	*name = *path = NULL;
	*detail = NULL;
	if (t->single != NULL) {
		/* The host chose the name; only the content comes from here. */
		*name = xstrdup(t->single);
		if (archive_entry_hardlink(e) != NULL || type != AE_IFREG) {
			in_fail(t, "%s is not a regular file (a %s)", t->single,
			    archive_entry_hardlink(e) != NULL
			        ? "hardlink"
			        : type_reason(type));
			return "";
		}
		if (t->entries > 1) {
			in_fail(t, "the sandbox sent more than one file");
			return "";
		}
	} else {
		if ((*name = tar_name_clean(raw, &reason)) == NULL)
			return reason != NULL ? reason : "invalid name";
		if (in_below_skipped(t, *name))
			return "";
		if (archive_entry_hardlink(e) != NULL)
			return "hardlink";
		if (type != AE_IFREG && type != AE_IFDIR)
			return type_reason(type);
		if (**name == '\0')
			return type == AE_IFDIR ? ""
			                        : "invalid name"; /* "./" */
		if ((reason = in_name_check(t, *name, detail, &upto)) != NULL) {
			/* Listed once; what is below it goes silently. */
			free(t->skipped_below);
			t->skipped_below = xstrndup(*name, upto);
			(*name)[upto] = '\0';
			return reason;
		}
		for (p = *name; (p = strchr(p, '/')) != NULL; p++)
			depth++;
		if (depth >= TAR_MAX_DEPTH)
			return "too deep";
	}
	xasprintf(path, "%s/%s", t->root, *name);
	if (strlen(*path) + 64 >= PATH_MAX) /* room for in_temp() */
		return "too long";
	return in_check_path(t, *name, type == AE_IFDIR);
}

/* Extracts or skips one entry; -1 ends the extraction. */
static int
in_entry(struct tar_in *t, struct archive_entry *e)
{
	const char *raw, *reason, *detail;
	char *name, *path;
	la_int64_t size;
	int r;

	if ((raw = archive_entry_pathname(e)) == NULL)
		raw = "";
	size = archive_entry_size_is_set(e) ? archive_entry_size(e) : 0;
	if (size < 0)
		size = 0;

	/* The caps count what the archive holds, extracted or not. */
	if (t->lim.max_files != 0 && ++t->entries > t->lim.max_files) {
		in_fail(t,
		    "more than %llu files and directories (the limit); "
		    "stopped at %s",
		    (unsigned long long)t->lim.max_files,
		    t->single != NULL ? t->single : raw);
		return -1;
	}
	if (t->lim.max_files == 0)
		t->entries++;
	if (t->lim.max_bytes != 0 &&
	    (uint64_t)size > t->lim.max_bytes - t->seen) {
		in_fail(t, "archive larger than %llu bytes (%s); stopped at %s",
		    (unsigned long long)t->lim.max_bytes, t->limit_name,
		    t->single != NULL ? t->single : raw);
		return -1;
	}
	t->seen += size;

	reason = in_classify(t, e, raw, &name, &path, &detail);
	if (t->rc == -1)
		r = -1;
	else if (reason != NULL) {
		if (*reason != '\0')
			report_skip(t->skipped, &t->nskipped,
			    name != NULL ? name : raw, reason, detail);
		r = 0;
	} else if (archive_entry_filetype(e) == AE_IFREG)
		r = in_file(t, e, name, path);
	else if ((r = in_header(t, e, name, path, 1)) == 0) {
		if (archive_write_finish_entry(t->w) < ARCHIVE_WARN) {
			in_fail(t, "%s: %s", name, archive_error_string(t->w));
			r = -1;
		}
	} else if (r == 1)
		r = 0;
	free(name);
	free(path);
	if (r == 0 && archive_read_data_skip(t->r) < ARCHIVE_WARN) {
		in_fail(t, "archive truncated or invalid: %s",
		    archive_error_string(t->r));
		r = -1;
	}
	return r;
}

/* Removes name in dfd and what is below it, following no symlink. */
static void
in_remove(int dfd, const char *name, int depth)
{
	struct dirent *de;
	DIR *d;
	int fd;

	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return;
	if (depth < TAR_MAX_DEPTH + 2 &&
	    (fd = openat(dfd, name,
	         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) != -1) {
		if ((d = fdopendir(fd)) == NULL)
			close(fd);
		else {
			while ((de = readdir(d)) != NULL) {
				if (strcmp(de->d_name, ".") != 0 &&
				    strcmp(de->d_name, "..") != 0)
					in_remove(
					    dirfd(d), de->d_name, depth + 1);
			}
			closedir(d);
		}
	}
	unlinkat(dfd, name, AT_REMOVEDIR);
}

/* A skip found while merging; for a single file, the end. */
static void
in_merge_skip(
    struct tar_in *t, const char *name, const char *reason, const char *detail)
{
	if (t->single != NULL)
		in_fail(t, "%s %s%s%s", name,
		    strcmp(reason, "exists") == 0
		        ? "exists (set overwrite to replace it)"
		        : "cannot be written",
		    detail != NULL ? ": " : "", detail != NULL ? detail : "");
	else
		report_skip(t->skipped, &t->nskipped, name, reason, detail);
}

/*
 * Moves what the private tree holds into the destination: files renamed
 * into place, missing directories made, existing ones merged, nothing
 * followed. What cannot move stays, to be removed with the tree.
 */
static void
in_merge(struct tar_in *t, int sfd, int dfd, const char *prefix)
{
	struct stat ss, ds;
	struct timespec ts[2];
	struct dirent *de;
	char *name;
	int have, made, s2, d2, fd;
	DIR *d;

	if ((fd = dup(sfd)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		in_fail(t, "%s: %s", *prefix ? prefix : ".", strerror(errno));
		return;
	}
	while (t->rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    fstatat(sfd, de->d_name, &ss, AT_SYMLINK_NOFOLLOW) == -1 ||
		    (!S_ISREG(ss.st_mode) && !S_ISDIR(ss.st_mode)))
			continue;
		xasprintf(
		    &name, "%s%s%s", prefix, *prefix ? "/" : "", de->d_name);
		have = fstatat(dfd, de->d_name, &ds, AT_SYMLINK_NOFOLLOW) == 0;
		if (S_ISREG(ss.st_mode)) {
			if (have && S_ISDIR(ds.st_mode))
				in_merge_skip(t, name, "exists", "a directory");
			else if (have && !t->overwrite)
				in_merge_skip(t, name, "exists", NULL);
			else if (in_rename(
			             t, sfd, de->d_name, dfd, de->d_name) == -1)
				in_merge_skip(t, name,
				    errno == EEXIST ? "exists" : "refused",
				    errno == EEXIST ? NULL : strerror(errno));
			else
				in_written(t, name, 0, ss.st_size);
		} else if (have && !S_ISDIR(ds.st_mode))
			in_merge_skip(t, name,
			    S_ISLNK(ds.st_mode) ? "symlink in path"
			                        : "not a directory in path",
			    NULL);
		else {
			made = !have &&
			       mkdirat(dfd, de->d_name, ss.st_mode & 0777) == 0;
			s2 = openat(sfd, de->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			d2 = openat(dfd, de->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (s2 == -1 || d2 == -1)
				in_merge_skip(t, name,
				    errno == ELOOP ? "symlink in path"
				                   : "refused",
				    errno == ELOOP ? NULL : strerror(errno));
			else {
				if (made)
					in_written(t, name, 1, 0);
				in_merge(t, s2, d2, name);
				if (made) {
					ts[0] = ss.st_atim;
					ts[1] = ss.st_mtim;
					futimens(d2, ts);
				}
			}
			if (s2 != -1)
				close(s2);
			if (d2 != -1)
				close(d2);
		}
		free(name);
	}
	closedir(d);
}

/* Reads what follows the trailer (a tar pads its last record). */
static void
in_drain(struct tar_in *t)
{
	char buf[8192];
	size_t total = 0;
	ssize_t n;

	while (total < TAR_DRAIN_MAX) {
		if ((n = read(t->p.in[0], buf, sizeof buf)) == -1 &&
		    errno == EINTR)
			continue;
		if (n <= 0)
			return;
		total += n;
	}
}

/* The extraction thread: reads the pipe to the end or the first error. */
static void *
in_main(void *arg)
{
	struct tar_in *t = arg;
	struct archive_entry *e;
	char *msg;
	int r;

	t->own_umask = unshare(CLONE_FS) == 0;
	if (t->loc != (locale_t)0)
		uselocale(t->loc);
	if (archive_read_open_fd(t->r, t->p.in[0], 10240) != ARCHIVE_OK)
		in_fail(t, "cannot read the archive: %s",
		    archive_error_string(t->r));
	while (t->rc == 0) {
		r = archive_read_next_header(t->r, &e);
		if (r == ARCHIVE_EOF) {
			in_drain(t);
			break;
		}
		if (r < ARCHIVE_WARN) {
			in_fail(t, "archive truncated or invalid: %s",
			    archive_error_string(t->r));
			break;
		}
		if (in_entry(t, e) == -1)
			break;
	}
	if (t->rc == -1 && atomic_load(&t->cancel))
		snprintf(t->error, sizeof t->error, "transfer cancelled");
	/* Closing applies the modes and times of the new directories. */
	if (archive_write_close(t->w) != ARCHIVE_OK && t->rc == 0)
		in_fail(t, "%s", archive_error_string(t->w));
	if (t->partial != NULL) {
		unlink(t->partial);
		report_skip(t->skipped, &t->nskipped, t->partial_name,
		    "incomplete", "removed");
		xasprintf(&msg, "%s; the partial file %s was removed", t->error,
		    t->partial_name);
		snprintf(t->error, sizeof t->error, "%s", msg);
		free(msg);
		free(t->partial);
		free(t->partial_name);
		t->partial = t->partial_name = NULL;
	}
	if (t->rc == 0 && t->single != NULL && t->entries == 0)
		in_fail(t, "the sandbox sent no file");
	/* Given up by its caller (tar_in_abort): a whole archive too. */
	if (t->rc == 0 && atomic_load(&t->cancel))
		in_fail(t, "transfer cancelled");
	/* All or nothing: the tree moves in only after a clean end. */
	if (t->rc == 0)
		in_merge(t, t->rootfd, t->destfd, "");
	in_remove(t->destfd, t->tmpname, 0);
	archive_read_close(t->r);
	if (t->loc != (locale_t)0)
		uselocale(LC_GLOBAL_LOCALE);
	tar_pipe_ended(&t->p); /* a writer still at it gets EPIPE */
	return NULL;
}

/* The private directory in dest the archive is extracted into. */
static int
in_mkroot(struct tar_in *t)
{
	unsigned long long r;
	int i, made = 0;

	for (i = 0; i < 100 && !made; i++) {
		if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
			return -1;
		free(t->tmpname);
		xasprintf(&t->tmpname, ".mcp-sandboxd-%016llx.tmp", r);
		if (mkdirat(t->destfd, t->tmpname, 0700) == 0)
			made = 1;
		else if (errno != EEXIST)
			break;
	}
	if (!made) {
		free(t->tmpname);
		t->tmpname = NULL; /* not ours: never removed */
		return -1;
	}
	if ((t->rootfd = openat(t->destfd, t->tmpname,
	         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1; /* tar_in_free removes it */
	xasprintf(&t->root, "%s%s%s", t->dest,
	    strcmp(t->dest, "/") == 0 ? "" : "/", t->tmpname);
	return 0;
}

/*
 * Starts extracting into dest, an existing host directory the caller
 * checked against the policy.
 */
struct tar_in *
tar_in_new(const char *dest, const struct tar_limits *lim, int overwrite,
    char *err, size_t errlen)
{
	struct tar_in_opts o;

	memset(&o, 0, sizeof o);
	o.overwrite = overwrite;
	return tar_in_start(dest, lim, &o, err, errlen);
}

struct tar_in *
tar_in_start(const char *dest, const struct tar_limits *lim,
    const struct tar_in_opts *opts, char *err, size_t errlen)
{
	static const char *const builtin[] = {".git", ".hg", ".svn"};
	struct tar_in *t;
	int flags, overwrite = opts->overwrite;
	size_t n, i;

	t = xcalloc(1, sizeof *t);
	t->destfd = t->rootfd = -1;
	tar_pipe_init(&t->p);
	if ((t->dest = realpath(dest, NULL)) == NULL ||
	    (t->destfd = open(t->dest,
	         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		errbuf_set(err, errlen, "%s: %s", dest, strerror(errno));
		goto fail;
	}
	if (in_mkroot(t) == -1) {
		errbuf_set(err, errlen,
		    "cannot make a private directory in %s: %s", dest,
		    strerror(errno));
		goto fail;
	}
	if (lim != NULL)
		t->lim = *lim;
	t->keep_exec = opts->keep_exec;
	t->limit_name =
	    xstrdup(opts->limit_name != NULL ? opts->limit_name : "the limit");
	t->single = opts->single != NULL ? xstrdup(opts->single) : NULL;
	for (n = 0; opts->deny != NULL && opts->deny[n] != NULL; n++)
		;
	t->deny = xcalloc(n + 4, sizeof *t->deny);
	for (i = 0; i < 3; i++)
		t->deny[i] = xstrdup(builtin[i]);
	for (i = 0; i < n; i++)
		t->deny[3 + i] = xstrdup(opts->deny[i]);
	t->overwrite = overwrite;

	flags = ARCHIVE_EXTRACT_SECURE_NODOTDOT |
	        ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_TIME;
	if (!overwrite)
		flags |= ARCHIVE_EXTRACT_NO_OVERWRITE;
	t->r = archive_read_new();
	pthread_mutex_lock(&umask_lock);
	t->w = archive_write_disk_new();
	pthread_mutex_unlock(&umask_lock);
	if (t->r == NULL || t->w == NULL ||
	    archive_read_support_format_tar(t->r) != ARCHIVE_OK ||
	    archive_write_disk_set_options(t->w, flags) != ARCHIVE_OK) {
		errbuf_set(err, errlen, "cannot start extracting");
		goto fail;
	}
	t->loc = utf8_locale();
	t->written = json_object_new_array();
	t->skipped = json_object_new_array();
	if (tar_pipe_start(&t->p, in_main, t, err, errlen) == -1)
		goto fail;
	return t;

fail:
	tar_in_free(t);
	return NULL;
}

int
tar_in_fd(struct tar_in *t)
{
	return t->p.in[1];
}

void
tar_in_close_input(struct tar_in *t)
{
	tar_pipe_close_input(&t->p);
}

void
tar_in_abort(struct tar_in *t)
{
	atomic_store(&t->cancel, 1);
	tar_pipe_close_input(&t->p);
}

int
tar_in_done_fd(struct tar_in *t)
{
	return t->p.done[0];
}

int
tar_in_result(struct tar_in *t, json_object **summary)
{
	json_object *o;

	tar_pipe_join(&t->p);
	if (summary != NULL) {
		o = json_object_new_object();
		json_object_object_add(
		    o, "files", json_object_new_int64((int64_t)t->files));
		json_object_object_add(
		    o, "bytes", json_object_new_int64((int64_t)t->bytes));
		json_object_object_add(
		    o, "written", json_object_get(t->written));
		if (t->nwritten > TAR_MAX_LISTED)
			json_object_object_add(o, "written_unlisted",
			    json_object_new_int64(
			        (int64_t)(t->nwritten - TAR_MAX_LISTED)));
		json_object_object_add(
		    o, "skipped", json_object_get(t->skipped));
		if (t->nskipped > TAR_MAX_LISTED)
			json_object_object_add(o, "skipped_unlisted",
			    json_object_new_int64(
			        (int64_t)(t->nskipped - TAR_MAX_LISTED)));
		*summary = o;
	}
	return t->rc;
}

const char *
tar_in_error(struct tar_in *t)
{
	return t->rc == -1 ? t->error : NULL;
}

void
tar_in_free(struct tar_in *t)
{
	char **e;

	if (t == NULL)
		return;
	if (t->p.running) {
		/* End of input mid-archive: the thread stops and cleans up. */
		atomic_store(&t->cancel, 1);
		tar_pipe_close_input(&t->p);
		tar_pipe_join(&t->p);
	}
	tar_pipe_free(&t->p);
	if (t->rootfd != -1)
		close(t->rootfd);
	if (t->tmpname != NULL && !t->p.running && t->destfd != -1)
		in_remove(t->destfd, t->tmpname, 0); /* never started */
	if (t->destfd != -1)
		close(t->destfd);
	for (e = t->deny; e != NULL && *e != NULL; e++)
		free(*e);
	free(t->deny);
	free(t->tmpname);
	free(t->root);
	free(t->limit_name);
	free(t->single);
	free(t->skipped_below);
	if (t->r != NULL)
		archive_read_free(t->r);
	if (t->w != NULL)
		archive_write_free(t->w);
	free(t->partial);
	free(t->partial_name);
	json_object_put(t->written);
	json_object_put(t->skipped);
	if (t->loc != (locale_t)0)
		freelocale(t->loc);
	free(t->dest);
	free(t);
}
