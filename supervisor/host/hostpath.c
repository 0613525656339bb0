/* Host path policy: what a client may touch on the host, and how. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errbuf.h"
#include "hostpath.h"
#include "xmalloc.h"

/* Is canonical path equal to or below canonical dir, component-wise? */
static int
path_inside(const char *path, const char *dir)
{
	size_t n;

	if (strcmp(dir, "/") == 0)
		return path[0] == '/';
	n = strlen(dir);
	if (strncmp(path, dir, n) != 0)
		return 0;
	return path[n] == '\0' || path[n] == '/';
}

/* Canonical form of a directory that must exist, or NULL. */
static char *
canon_dir(const char *path, char *err, size_t errlen)
{
	struct stat st;
	char *real;

	if ((real = realpath(path, NULL)) == NULL) {
		errbuf_set(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (stat(real, &st) == -1 || !S_ISDIR(st.st_mode)) {
		errbuf_set(err, errlen, "%s: not a directory", path);
		free(real);
		return NULL;
	}
	return real;
}

/* Same directory as name, once both are canonical? */
static int
same_dir(const char *canon, const char *name)
{
	char *real;
	int same;

	if (name == NULL || *name == '\0')
		return 0;
	if (strcmp(canon, name) == 0)
		return 1;
	if ((real = realpath(name, NULL)) == NULL)
		return 0;
	same = strcmp(canon, real) == 0;
	free(real);
	return same;
}

/*
 * Is this canonical directory "/" or somebody's home? Such a cwd says
 * the server was started by a desktop client, not in a project.
 */
static int
is_home_or_root(const char *canon)
{
	struct passwd *pw;
	int found = 0;

	if (strcmp(canon, "/") == 0 || same_dir(canon, getenv("HOME")))
		return 1;
	setpwent();
	while (!found && (pw = getpwent()) != NULL)
		found = same_dir(canon, pw->pw_dir);
	endpwent();
	return found;
}

/* Adds a canonical directory unless an equal one is already there. */
static void
policy_add(struct hostpolicy *hp, char *canon)
{
	int i;

	for (i = 0; i < hp->ndirs; i++) {
		if (strcmp(hp->dirs[i], canon) == 0) {
			free(canon);
			return;
		}
	}
	hp->dirs = xrealloc(hp->dirs, (hp->ndirs + 1) * sizeof *hp->dirs);
	hp->dirs[hp->ndirs++] = canon;
}

/*
 * Canonicalises the allowed directories; with none, cwd is allowed unless
 * it is "/" or a home directory. A NULL cwd means getcwd().
 */
int
hostpolicy_init(struct hostpolicy *hp, char *const *dirs, int ndirs,
    const char *cwd, char *err, size_t errlen)
{
	char *canon, *here = NULL;
	int i;

	memset(hp, 0, sizeof *hp);
	if (cwd == NULL) {
		if ((here = getcwd(NULL, 0)) == NULL) {
			errbuf_set(err, errlen, "current directory: %s",
			    strerror(errno));
			return -1;
		}
		cwd = here;
	}
	hp->cwd = canon_dir(cwd, err, errlen);
	free(here);
	if (hp->cwd == NULL)
		return -1;

	for (i = 0; i < ndirs; i++) {
		if ((canon = canon_dir(dirs[i], err, errlen)) == NULL) {
			hostpolicy_free(hp);
			return -1;
		}
		policy_add(hp, canon);
	}
	if (ndirs == 0 && !is_home_or_root(hp->cwd))
		policy_add(hp, xstrdup(hp->cwd));
	return 0;
}

void
hostpolicy_free(struct hostpolicy *hp)
{
	int i;

	for (i = 0; i < hp->ndirs; i++)
		free(hp->dirs[i]);
	free(hp->dirs);
	free(hp->cwd);
	memset(hp, 0, sizeof *hp);
}

int
hostpolicy_empty(const struct hostpolicy *hp)
{
	return hp->ndirs == 0;
}

/* path made absolute against the policy's cwd. */
static char *
path_absolute(const struct hostpolicy *hp, const char *path)
{
	char *abs;

	if (path[0] == '/')
		return xstrdup(path);
	xasprintf(&abs, "%s/%s", hp->cwd, path);
	return abs;
}

/*
 * Lexical normal form of an absolute path ("." and ".." folded, no
 * symlink resolved): only to word an error without probing the disk.
 */
static char *
path_lexical(const char *abs)
{
	char *out, *o;
	const char *p = abs, *end;
	size_t n;

	out = xmalloc(strlen(abs) + 2);
	o = out;
	while (*p != '\0') {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		end = strchrnul(p, '/');
		n = end - p;
		if (n == 1 && p[0] == '.')
			;
		else if (n == 2 && p[0] == '.' && p[1] == '.') {
			while (o > out && *--o != '/')
				;
		} else {
			*o++ = '/';
			memcpy(o, p, n);
			o += n;
		}
		p = end;
	}
	if (o == out)
		*o++ = '/';
	*o = '\0';
	return out;
}

/* Is canonical path inside one of the policy's directories? */
static int
policy_allows(const struct hostpolicy *hp, const char *canon)
{
	int i;

	for (i = 0; i < hp->ndirs; i++) {
		if (path_inside(canon, hp->dirs[i]))
			return 1;
	}
	return 0;
}

/* The message for a path the policy refuses. */
static void
outside_error(const struct hostpolicy *hp, const char *path, const char *canon,
    char *err, size_t errlen)
{
	char *list = NULL, *tmp;
	int i;

	for (i = 0; i < hp->ndirs; i++) {
		xasprintf(&tmp, "%s%s%s", list == NULL ? "" : list,
		    list == NULL ? "" : ", ", hp->dirs[i]);
		free(list);
		list = tmp;
	}
	if (canon != NULL && strcmp(path, canon) != 0)
		errbuf_set(err, errlen,
		    "%s (%s) is outside the allowed directories (%s); the "
		    "operator can allow more with --allow-dir",
		    path, canon, list);
	else
		errbuf_set(err, errlen,
		    "%s is outside the allowed directories (%s); the operator "
		    "can allow more with --allow-dir",
		    path, list);
	free(list);
}

/*
 * Reports a failed lookup (of the path or, for parent, of its directory)
 * without saying whether a path the policy refuses exists.
 */
static void
lookup_error(const struct hostpolicy *hp, const char *path, const char *abs,
    int error, int parent, char *err, size_t errlen)
{
	char *lex;

	lex = path_lexical(abs);
	if (!policy_allows(hp, lex))
		outside_error(hp, path, NULL, err, errlen);
	else if (error == ENOENT)
		errbuf_set(err, errlen, "%s%s does not exist on the host",
		    parent ? "the directory of " : "", path);
	else
		errbuf_set(err, errlen, "%s: %s", path, strerror(error));
	free(lex);
}

/* Checks an existing path and returns its canonical form. */
static char *
resolve_existing(const struct hostpolicy *hp, const char *path, const char *abs,
    char *err, size_t errlen)
{
	char *canon;

	if ((canon = realpath(abs, NULL)) == NULL) {
		lookup_error(hp, path, abs, errno, 0, err, errlen);
		return NULL;
	}
	if (!policy_allows(hp, canon)) {
		outside_error(hp, path, canon, err, errlen);
		free(canon);
		return NULL;
	}
	return canon;
}

/* Checks a destination: canonical parent plus a plain final name. */
static char *
resolve_create(const struct hostpolicy *hp, const char *path, char *abs,
    char *err, size_t errlen)
{
	struct stat st;
	char *slash, *name, *parent, *canon;
	int error;

	slash = strrchr(abs, '/'); /* abs is absolute: there is one */
	name = slash + 1;
	if (*name == '\0' || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0) {
		errbuf_set(err, errlen,
		    "%s does not end in a file name: give the name to create",
		    path);
		return NULL;
	}
	*slash = '\0';
	parent = realpath(abs[0] == '\0' ? "/" : abs, NULL);
	if (parent == NULL) {
		error = errno;
		*slash = '/';
		lookup_error(hp, path, abs, error, 1, err, errlen);
		return NULL;
	}
	*slash = '/';
	if (!policy_allows(hp, parent)) {
		outside_error(hp, path, NULL, err, errlen);
		free(parent);
		return NULL;
	}
	if (strcmp(parent, "/") == 0)
		xasprintf(&canon, "/%s", name);
	else
		xasprintf(&canon, "%s/%s", parent, name);
	free(parent);
	if (lstat(canon, &st) == 0 && S_ISLNK(st.st_mode)) {
		errbuf_set(err, errlen,
		    "%s is a symbolic link on the host: refusing to write "
		    "through it",
		    path);
		free(canon);
		return NULL;
	}
	return canon;
}

/* Resolves a client's host path under the operator's policy. */
char *
hostpath_resolve(const struct hostpolicy *hp, const char *path, int mode,
    char *err, size_t errlen)
{
	char *abs, *canon;

	if (hostpolicy_empty(hp)) {
		errbuf_set(err, errlen,
		    "no host directory is allowed: start the server with "
		    "--allow-dir DIR (or MCP_SANDBOXD_ALLOW_DIRS)");
		return NULL;
	}
	if (path == NULL || *path == '\0') {
		errbuf_set(err, errlen, "empty host path");
		return NULL;
	}
	if (strlen(path) >= PATH_MAX) {
		errbuf_set(err, errlen, "host path longer than %d bytes",
		    PATH_MAX - 1);
		return NULL;
	}
	abs = path_absolute(hp, path);
	if (mode == HOSTPATH_CREATE)
		canon = resolve_create(hp, path, abs, err, errlen);
	else
		canon = resolve_existing(hp, path, abs, err, errlen);
	free(abs);
	return canon;
}

/*
 * Without overwrite, O_EXCL refuses anything already there (a symlink
 * too). With it, only a regular file is truncated: O_NONBLOCK keeps a
 * FIFO from blocking the open, and fstat on the fd decides.
 */
int
hostpath_open_new(
    const char *dir, const char *name, int overwrite, char *err, size_t errlen)
{
	struct stat st;
	int dfd, fd, flags;

	if (*name == '\0' || strchr(name, '/') != NULL ||
	    strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		errbuf_set(err, errlen, "invalid file name \"%s\"", name);
		return -1;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd == -1) {
		errbuf_set(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if (overwrite && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISREG(st.st_mode)) {
		/* Never open a device or FIFO, even to look at it. */
		errbuf_set(err, errlen,
		    S_ISLNK(st.st_mode)
		        ? "%s/%s is a symbolic link: refusing to write through it"
		        : "%s/%s exists and is not a regular file: refusing to "
		          "overwrite it",
		    dir, name);
		close(dfd);
		return -1;
	}
	flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
	if (!overwrite)
		flags |= O_EXCL;
	fd = openat(dfd, name, flags, 0644);
	close(dfd);
	if (fd == -1) {
		if (errno == EEXIST)
			errbuf_set(err, errlen,
			    "%s/%s already exists on the host; ask for "
			    "overwrite to replace it",
			    dir, name);
		else if (errno == ELOOP)
			errbuf_set(err, errlen,
			    "%s/%s is a symbolic link: refusing to write "
			    "through it",
			    dir, name);
		else
			errbuf_set(err, errlen, "%s/%s: %s", dir, name,
			    strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		errbuf_set(err, errlen,
		    "%s/%s is not a regular file: refusing to overwrite it",
		    dir, name);
		close(fd);
		return -1;
	}
	if ((overwrite && ftruncate(fd, 0) == -1) ||
	    (flags = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == -1) {
		errbuf_set(
		    err, errlen, "%s/%s: %s", dir, name, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}
