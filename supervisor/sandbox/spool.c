/*
 * Exec output spools: <private dir>/<sandbox id>/<exec id>.{stdout,stderr},
 * the private dir (0700) of this instance in the server's runtime dir.
 * Writes are synchronous: local files take them at once, and a quota per
 * sandbox bounds them (past it the spool is marked incomplete).  The quota
 * counts what the disk holds: whole blocks of the file system, a stream's
 * last block as full; a ring's dropped bytes are whole blocks (a hole
 * punched at an unaligned range would keep its edge blocks).
 */
#include <sys/queue.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "core.h"
#include "log.h"
#include "mcp.h"
#include "privdir.h"
#include "sandbox.h"
#include "spool.h"
#include "xmalloc.h"

static char *spool_base; /* the private directory of every instance */
static char *spool_root; /* private (0700) directory of this instance */
static char *spool_listeners; /* in it: the ports listened on */

/*
 * A sandbox's spools.  The sandbox holds one reference and each open spool
 * one: an exec whose sandbox went away may still be given output by its
 * worker, which then goes nowhere (the tree is gone) but touches no freed
 * memory.
 */
struct spool_dir {
	LIST_ENTRY(spool_dir) entry; /* spool_dirs, while its sandbox is */
	char *path;
	long long used, quota; /* bytes of whole blocks */
	long long block; /* the file system's block size */
	LIST_HEAD(, spool) rings; /* its open rings (spool_make_room) */
	unsigned int next_id;
	int refs;
	int gone; /* spool_dir_free() ran: the tree is removed */
};

struct spool {
	struct spool_dir *dir;
	unsigned int id;
	int fd[2]; /* stdout, stderr */
	int complete; /* nothing was dropped for the quota */
	/* A ring (a background process's): past the quota its oldest
	 * blocks may be dropped (a hole punched) to make room for the new,
	 * its own or another spool's of the sandbox. */
	int ring;
	LIST_ENTRY(spool) ring_entry;
	long long written[2], dropped[2]; /* bytes, of each stream */
	/* dropped is a multiple of the block size, at most written. */
};

/* The spools of every sandbox there is (for /metrics). */
static LIST_HEAD(, spool_dir) spool_dirs = LIST_HEAD_INITIALIZER(spool_dirs);

static const char *const stream_names[] = {"stdout", "stderr"};

static void rm_tree(const char *);

/*
 * Make the private directory of this instance, in the runtime directory
 * (--runtime-dir; else $XDG_RUNTIME_DIR/mcp-sandboxd, else
 * /run/mcp-sandboxd; else a new private directory in TMPDIR or /tmp).
 */
int
spool_init(const char *instance, const char *boot, unsigned long long start)
{
	const char *tmp = getenv("TMPDIR"), *xdg = getenv("XDG_RUNTIME_DIR");
	char err[512], *base = NULL, *path, *p;
	FILE *f;

	if (sup.conf != NULL && sup.conf->runtime_dir != NULL) {
		if (privdir_check(sup.conf->runtime_dir, 1, err, sizeof err) ==
		    -1) {
			log_warnx("--runtime-dir: %s", err);
			return -1;
		}
		base = xstrdup(sup.conf->runtime_dir);
	}
	if (base == NULL && xdg != NULL && *xdg == '/') {
		xasprintf(&base, "%s/mcp-sandboxd", xdg);
		if (privdir_check(base, 1, err, sizeof err) == -1) {
			log_info("runtime directory: %s", err);
			free(base);
			base = NULL;
		}
	}
	if (base == NULL) {
		base = xstrdup("/run/mcp-sandboxd");
		if (privdir_check(base, 1, err, sizeof err) == -1) {
			log_debug("runtime directory: %s", err);
			free(base);
			base = NULL;
		}
	}
	if (tmp == NULL || *tmp != '/')
		tmp = "/tmp";
	/* Else mkdtemp's own: 0700, made by us, a name nobody had. */
	xasprintf(&path, "%s/mcp-sandboxd-%.8s-XXXXXX",
	    base != NULL ? base : tmp, instance);
	if (mkdtemp(path) == NULL) {
		free(path);
		free(base);
		return -1;
	}
	spool_base = base != NULL ? base : xstrdup(tmp);
	spool_root = path;
	/* The ports this server listens on (common/listenreg.h). */
	xasprintf(&spool_listeners, "%s/listeners", path);
	if (mkdir(spool_listeners, 0700) == -1) {
		log_warn("%s: mkdir %s", __func__, spool_listeners);
		free(spool_listeners);
		spool_listeners = NULL;
	}
	/* Who owns it, for a later instance's reaper (see spool_reap). */
	xasprintf(&p, "%s/owner", path);
	if ((f = fopen(p, "wx")) != NULL) {
		fprintf(f, "%s %d %llu\n", boot, (int)getpid(), start);
		fclose(f);
	}
	free(p);
	return 0;
}

/*
 * Remove the private directories of instances that died without cleaning
 * up (killed); ours, and those of live or unknown owners, stay.
 */
void
spool_reap(void)
{
	char boot[64], pid[32], start[32], *dir, *owner;
	struct dirent *de;
	struct stat st;
	FILE *f;
	DIR *d;
	int n;

	if (spool_base == NULL || (d = opendir(spool_base)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "mcp-sandboxd-", 13) != 0)
			continue;
		xasprintf(&dir, "%s/%s", spool_base, de->d_name);
		xasprintf(&owner, "%s/owner", dir);
		n = 0;
		/* Only directories of ours: in a shared TMPDIR another
		 * user's are not for us to judge. */
		if ((spool_root == NULL || strcmp(dir, spool_root) != 0) &&
		    lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
		    st.st_uid == geteuid() && (f = fopen(owner, "r")) != NULL) {
			n = fscanf(f, "%63s %31s %31s", boot, pid, start);
			fclose(f);
		}
		if (n == 3 && reaper_owner_alive(boot, pid, start) == 0) {
			log_info(
			    "reaper: removed the spools of a dead instance "
			    "(%s)",
			    dir);
			rm_tree(dir);
		}
		free(owner);
		free(dir);
	}
	closedir(d);
}

static void
rm_tree(const char *path)
{
	struct dirent *de;
	DIR *d;
	char *p;

	if ((d = opendir(path)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") == 0 ||
			    strcmp(de->d_name, "..") == 0)
				continue;
			xasprintf(&p, "%s/%s", path, de->d_name);
			if (de->d_type == DT_DIR)
				rm_tree(p);
			else if (unlink(p) == -1)
				log_warn("%s: unlink %s", __func__, p);
			free(p);
		}
		closedir(d);
	}
	if (rmdir(path) == -1 && errno != ENOENT)
		log_warn("%s: rmdir %s", __func__, path);
}

/* Where this instance's listened ports are (listenreg.h), or NULL. */
const char *
spool_listeners_path(void)
{
	return spool_listeners;
}

/* The private directory of this instance, or NULL before spool_init(). */
const char *
spool_root_path(void)
{
	return spool_root;
}

/* Remove the private directory and everything in it. */
void
spool_cleanup(void)
{
	if (spool_root == NULL)
		return;
	rm_tree(spool_root);
	free(spool_root);
	spool_root = NULL;
	free(spool_listeners);
	spool_listeners = NULL;
	free(spool_base);
	spool_base = NULL;
}

/* The block size of the file system that holds path (4096 if unknown). */
static long long
spool_block_size(const char *path)
{
	struct stat st;

	if (stat(path, &st) == -1 || st.st_blksize < 512 ||
	    st.st_blksize > 1024 * 1024 ||
	    (st.st_blksize & (st.st_blksize - 1)) != 0)
		return 4096;
	return st.st_blksize;
}

/* The spools of one sandbox, at most quota bytes. */
struct spool_dir *
spool_dir_new(const char *sandbox_id, long long quota)
{
	struct spool_dir *sd;

	if (spool_root == NULL)
		return NULL;
	sd = xcalloc(1, sizeof *sd);
	xasprintf(&sd->path, "%s/%.12s", spool_root, sandbox_id);
	if (mkdir(sd->path, 0700) == -1) {
		log_warn("%s: mkdir %s", __func__, sd->path);
		free(sd->path);
		free(sd);
		return NULL;
	}
	sd->quota = quota;
	sd->block = spool_block_size(sd->path);
	LIST_INIT(&sd->rings);
	sd->next_id = 1;
	sd->refs = 1;
	LIST_INSERT_HEAD(&spool_dirs, sd, entry);
	return sd;
}

static void
spool_dir_unref(struct spool_dir *sd)
{
	if (--sd->refs > 0)
		return;
	free(sd->path);
	free(sd);
}

/* The sandbox is gone: its spools' tree goes now, the rest with them. */
void
spool_dir_free(struct spool_dir *sd)
{
	if (sd == NULL)
		return;
	rm_tree(sd->path);
	sd->gone = 1;
	LIST_REMOVE(sd, entry);
	spool_dir_unref(sd);
}

/*
 * What the spools of every sandbox hold on the disk and may hold at most
 * (each sandbox's quota, --spool-mb), in bytes; the fullest one's share
 * of its quota (0 to 1).
 */
void
spool_totals(long long *used, long long *quota, double *fullest)
{
	struct spool_dir *sd;
	double f;

	*used = *quota = 0;
	*fullest = 0;
	LIST_FOREACH(sd, &spool_dirs, entry)
	{
		*used += sd->used;
		*quota += sd->quota;
		f = sd->quota > 0 ? (double)sd->used / (double)sd->quota : 0;
		if (f > *fullest)
			*fullest = f;
	}
}

/* A new exec's spool (both streams); NULL if it cannot be made. */
struct spool *
spool_open(struct spool_dir *sd)
{
	struct spool *sp;
	char *p;
	int i;

	if (sd == NULL || sd->gone)
		return NULL;
	sp = xcalloc(1, sizeof *sp);
	sp->dir = sd;
	sd->refs++;
	sp->id = sd->next_id++;
	sp->complete = 1;
	for (i = 0; i < 2; i++) {
		xasprintf(&p, "%s/%u.%s", sd->path, sp->id, stream_names[i]);
		sp->fd[i] = open(p,
		    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (sp->fd[i] == -1)
			log_warn("%s: %s", __func__, p);
		free(p);
	}
	return sp;
}

unsigned int
spool_id(const struct spool *sp)
{
	return sp->id;
}

/* Bytes of disk a stream holds: its blocks but the dropped ones. */
static long long
spool_held(const struct spool *sp, int stream, long long written)
{
	long long b = sp->dir->block;

	return (written + b - 1) / b * b - sp->dropped[stream];
}

/* Whole blocks of a stream that can be dropped. */
static long long
spool_whole(const struct spool *sp, int stream)
{
	long long b = sp->dir->block;

	return sp->written[stream] / b * b - sp->dropped[stream];
}

/*
 * The quota is full: make room for need bytes by dropping the oldest
 * whole blocks of the rings (background processes' spools, running or
 * ended), the largest first, so that no ring, and no exec's spool, is
 * starved by others that filled the quota before it (their disk is
 * given back; reads there see zeros, see spool_dropped).  -1 when the
 * rings do not hold that much.
 */
static int
spool_make_room(struct spool_dir *sd, long long need)
{
	long long b = sd->block, drop, most;
	struct spool *sp, *victim;
	int i, stream;

	while (need > 0) {
		victim = NULL;
		stream = 0;
		most = 0;
		LIST_FOREACH(sp, &sd->rings, ring_entry)
		for (i = 0; i < 2; i++)
			if (sp->fd[i] != -1 && spool_whole(sp, i) > most) {
				most = spool_whole(sp, i);
				victim = sp;
				stream = i;
			}
		if (victim == NULL)
			return -1;
		drop = (need + b - 1) / b * b;
		if (drop > most)
			drop = most;
		if (fallocate(victim->fd[stream],
		        FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		        victim->dropped[stream], drop) == -1) {
			log_warn("%s: punch a hole", __func__);
			return -1;
		}
		victim->dropped[stream] += drop;
		sd->used -= drop;
		stats.spool_dropped += drop;
		need -= drop;
	}
	return 0;
}

/* Make it a ring: past the quota, its oldest bytes may go. */
void
spool_set_ring(struct spool *sp)
{
	if (sp != NULL && !sp->ring) {
		sp->ring = 1;
		LIST_INSERT_HEAD(&sp->dir->rings, sp, ring_entry);
	}
}

/* Bytes of a stream written (dropped ones included). */
long long
spool_size(const struct spool *sp, int stream)
{
	return sp != NULL ? sp->written[stream] : 0;
}

/* Bytes at the start of a stream dropped for the quota (a ring's). */
long long
spool_dropped(const struct spool *sp, int stream)
{
	return sp != NULL ? sp->dropped[stream] : 0;
}

/*
 * Output of stream 0 (stdout) or 1 (stderr).  What counts is what the
 * file took: a write that fails leaves the stream where its file ends (a
 * reader is never promised bytes that are not there).
 */
void
spool_write(struct spool *sp, int stream, const void *data, size_t len)
{
	const char *p = data;
	long long grow, before;
	ssize_t n;

	if (sp == NULL || sp->fd[stream] == -1 || len == 0 || sp->dir->gone)
		return;
	before = spool_held(sp, stream, sp->written[stream]);
	grow = spool_held(sp, stream, sp->written[stream] + (long long)len) -
	       before;
	if (sp->dir->used + grow > sp->dir->quota &&
	    spool_make_room(sp->dir, sp->dir->used + grow - sp->dir->quota) ==
	        -1) {
		sp->complete = 0;
		stats.spool_refused += (long long)len;
		return;
	}
	before = spool_held(sp, stream, sp->written[stream]);
	while (len > 0) {
		if ((n = write(sp->fd[stream], p, len)) == -1) {
			if (errno == EINTR)
				continue;
			log_warn("%s", __func__);
			sp->complete = 0;
			close(sp->fd[stream]);
			sp->fd[stream] = -1;
			break;
		}
		p += n;
		len -= (size_t)n;
		sp->written[stream] += n;
	}
	sp->dir->used += spool_held(sp, stream, sp->written[stream]) - before;
}

/* Whether the spool holds the whole output (no write to it failed). */
int
spool_complete(const struct spool *sp)
{
	return sp != NULL && sp->complete;
}

void
spool_close(struct spool *sp)
{
	if (sp == NULL)
		return;
	if (sp->ring)
		LIST_REMOVE(sp, ring_entry);
	if (sp->fd[0] != -1)
		close(sp->fd[0]);
	if (sp->fd[1] != -1)
		close(sp->fd[1]);
	spool_dir_unref(sp->dir);
	free(sp);
}

/*
 * Read len bytes at offset of an exec's stream; *size gets the whole
 * size.  -1 with errno ENOENT when there is no such spool.
 */
ssize_t
spool_read(struct spool_dir *sd, unsigned int id, int stream, long long offset,
    void *buf, size_t len, long long *size)
{
	struct stat st;
	ssize_t n;
	char *p;
	int fd;

	if (sd == NULL || stream < 0 || stream > 1) {
		errno = ENOENT;
		return -1;
	}
	xasprintf(&p, "%s/%u.%s", sd->path, id, stream_names[stream]);
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	free(p);
	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == -1) {
		close(fd);
		return -1;
	}
	*size = st.st_size;
	n = offset >= st.st_size ? 0 : pread(fd, buf, len, offset);
	close(fd);
	return n;
}
