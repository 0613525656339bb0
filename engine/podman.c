/*
 * What Podman's Docker-compatible API (its `podman system service`) needs
 * of a create that Docker does not, for the Docker backend to use once
 * /_ping named a Libpod API (docker_libpod()):
 *
 * - the seccomp profile as a file on its host: Podman opens whatever
 *   follows "seccomp=" as a path ("opening seccomp profile failed"), so
 *   the profile is written once into the server's private directory
 *   (engine_set_dir()), which the service, on this host, reads;
 * - no uid= or gid= in a tmpfs's options ("unknown mount option"): the
 *   workdir's owner is set after the start instead, by an archive of one
 *   directory entry, "./", of that owner, put at its path: the engine
 *   sets the mount's root as the entry says.  Not an exec as root (the
 *   container has no capability: chown fails), not Podman's "U" (it gives
 *   the mount to the container's user, the keep-alive's), not mode 1777
 *   (the sandbox user could not chmod its own workdir, nor a restore set
 *   its mode);
 * - an explicit nproc ulimit: Podman otherwise asks the runtime for
 *   1048576, which only a runtime with CAP_SYS_RESOURCE may raise a limit
 *   to ("error setting rlimit type 6"), so the sandbox gets no more than
 *   the service itself has: the lower of this host's pid_max and the
 *   server's own hard limit (it and the service were started alike),
 *   which never binds before the pids limit does.
 */
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "engine.h"
#include "log.h"
#include "podman.h"
#include "xmalloc.h"

extern const char seccomp_profile[]; /* engine/seccomp.json */

#define PODMAN_PID_MAX "/proc/sys/kernel/pid_max"

/* The nproc limit from pid_max and a hard limit (<= 0: unknown). */
long long
podman_nproc(long long pid_max, long long hard)
{
	if (pid_max <= 0)
		return hard > 0 ? hard : 0;
	if (hard <= 0 || hard > pid_max)
		return pid_max;
	return hard;
}

/* The nproc limit for sandboxes on Podman on this host. */
long long
podman_nproc_here(void)
{
	struct rlimit rl;
	long long pid_max = 0, hard = 0;
	FILE *f;

	if ((f = fopen(PODMAN_PID_MAX, "re")) != NULL) {
		if (fscanf(f, "%lld", &pid_max) != 1)
			pid_max = 0;
		fclose(f);
	}
	if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_max != RLIM_INFINITY)
		hard = (long long)rl.rlim_max;
	return podman_nproc(pid_max, hard);
}

/*
 * The project's seccomp profile as a file in dir (written, 0444, unless it
 * is there): its path (malloc), or NULL (errno set).
 */
char *
podman_seccomp_file(const char *dir)
{
	struct stat st;
	char *path, *tmp;
	size_t len, off = 0;
	ssize_t n;
	int fd;

	if (dir == NULL) {
		errno = ENOENT;
		return NULL;
	}
	xasprintf(&path, "%s/seccomp.json", dir);
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
		return path;
	xasprintf(&tmp, "%s.new", path);
	(void)unlink(tmp);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444)) ==
	    -1)
		goto fail;
	len = strlen(seccomp_profile);
	while (off < len) {
		if ((n = write(fd, seccomp_profile + off, len - off)) == -1) {
			if (errno == EINTR)
				continue;
			close(fd);
			goto fail;
		}
		off += (size_t)n;
	}
	if (close(fd) == -1 || rename(tmp, path) == -1)
		goto fail;
	free(tmp);
	return path;
fail:
	log_warn("%s: %s", __func__, tmp);
	(void)unlink(tmp);
	free(tmp);
	free(path);
	return NULL;
}

/*
 * An archive of one entry, the directory "./" owned by uid (and group
 * uid) with mode: put at a mount's path, it makes the engine give the
 * mount's root that owner.  0 with *buf (malloc) and *len, or -1.
 */
int
podman_owner_tar(long uid, int mode, void **buf, size_t *len)
{
	struct archive *a;
	struct archive_entry *e;
	size_t cap = 10240, used = 0;
	char *p;
	int rv = -1;

	p = xmalloc(cap);
	if ((a = archive_write_new()) == NULL)
		fatalx("%s: archive_write_new", __func__);
	e = archive_entry_new();
	archive_entry_set_pathname(e, "./");
	archive_entry_set_filetype(e, AE_IFDIR);
	archive_entry_set_perm(e, (mode_t)mode & 07777);
	archive_entry_set_uid(e, uid);
	archive_entry_set_gid(e, uid);
	if (archive_write_set_format_pax_restricted(a) == ARCHIVE_OK &&
	    archive_write_add_filter_none(a) == ARCHIVE_OK &&
	    archive_write_set_bytes_in_last_block(a, 1) == ARCHIVE_OK &&
	    archive_write_open_memory(a, p, cap, &used) == ARCHIVE_OK &&
	    archive_write_header(a, e) == ARCHIVE_OK &&
	    archive_write_close(a) == ARCHIVE_OK)
		rv = 0;
	archive_entry_free(e);
	archive_write_free(a);
	if (rv == -1) {
		free(p);
		return -1;
	}
	*buf = p;
	*len = used;
	return 0;
}

/* The tmpfs mounts of a container whose owner is set after each start. */
struct podman_owners {
	const void *key; /* the engine's (several may serve one process) */
	char *id;
	int n;
	struct {
		char *path;
		long uid;
		int mode;
	} v[ENGINE_MAX_TMPFS];
	TAILQ_ENTRY(podman_owners) entry;
};
static TAILQ_HEAD(, podman_owners) owners = TAILQ_HEAD_INITIALIZER(owners);

/* What of spec's tmpfs mounts has an owner (NULL: none), not yet kept. */
struct podman_owners *
podman_owners_new(const struct engine_spec *spec)
{
	struct podman_owners *o;
	int i;

	o = xcalloc(1, sizeof *o);
	for (i = 0; i < spec->ntmpfs; i++) {
		if (spec->tmpfs[i].uid < 0)
			continue;
		o->v[o->n].path = xstrdup(spec->tmpfs[i].path);
		o->v[o->n].uid = spec->tmpfs[i].uid;
		o->v[o->n].mode = spec->tmpfs[i].mode;
		o->n++;
	}
	if (o->n == 0) {
		free(o);
		return NULL;
	}
	return o;
}

void
podman_owners_free(struct podman_owners *o)
{
	int i;

	if (o == NULL)
		return;
	for (i = 0; i < o->n; i++)
		free(o->v[i].path);
	free(o->id);
	free(o);
}

/* The container id was made: keep o (taken) until the container goes. */
void
podman_owners_keep(struct podman_owners *o, const void *key, const char *id)
{
	podman_owners_drop(id);
	o->key = key;
	o->id = xstrdup(id);
	TAILQ_INSERT_TAIL(&owners, o, entry);
}

/* The owners kept for a container (a full id, as its create answered). */
const struct podman_owners *
podman_owners_find(const char *id)
{
	struct podman_owners *o;

	TAILQ_FOREACH(o, &owners, entry)
	if (strcmp(o->id, id) == 0)
		return o;
	return NULL;
}

int
podman_owners_count(const struct podman_owners *o)
{
	return o != NULL ? o->n : 0;
}

/*
 * The i-th mount's path (borrowed) and the archive that gives it its
 * owner (podman_owner_tar()).
 */
int
podman_owners_tar(const struct podman_owners *o, int i, const char **path,
    void **buf, size_t *len)
{
	*path = o->v[i].path;
	return podman_owner_tar(o->v[i].uid, o->v[i].mode, buf, len);
}

/* The container was removed. */
void
podman_owners_drop(const char *id)
{
	struct podman_owners *o, *next;

	for (o = TAILQ_FIRST(&owners); o != NULL; o = next) {
		next = TAILQ_NEXT(o, entry);
		if (strcmp(o->id, id) == 0) {
			TAILQ_REMOVE(&owners, o, entry);
			podman_owners_free(o);
		}
	}
}

/* An engine handle goes: what it kept goes with it. */
void
podman_owners_drop_key(const void *key)
{
	struct podman_owners *o, *next;

	for (o = TAILQ_FIRST(&owners); o != NULL; o = next) {
		next = TAILQ_NEXT(o, entry);
		if (o->key == key) {
			TAILQ_REMOVE(&owners, o, entry);
			podman_owners_free(o);
		}
	}
}
