/* Host paths: the operator's allowed directories and safe opens. */
#ifndef HOSTPATH_H
#define HOSTPATH_H

#include <stddef.h>

/* hostpath_resolve modes. */
#define HOSTPATH_EXISTING 0 /* the path must exist */
#define HOSTPATH_CREATE 1 /* the parent must exist, the name need not */

/*
 * The directories a client may read from or write to on the host. Every
 * string is canonical (realpath: absolute, no symlink, no trailing '/')
 * and owned by the policy. ndirs == 0 allows nothing.
 */
struct hostpolicy {
	char **dirs;
	int ndirs;
	char *cwd; /* relative paths are resolved against it */
};

int hostpolicy_init(
    struct hostpolicy *, char *const *, int, const char *, char *, size_t);
void hostpolicy_free(struct hostpolicy *);
int hostpolicy_empty(const struct hostpolicy *);

/*
 * Returns a canonical path inside the policy, to free(), or NULL with a
 * message for the user in err. For HOSTPATH_CREATE the result is the
 * canonical parent, '/', and the final name (never a symlink, "." or "..").
 */
char *hostpath_resolve(
    const struct hostpolicy *, const char *, int, char *, size_t);

/*
 * Opens name in dir for writing (0644, O_CLOEXEC) without following a
 * symlink at either; an existing file is refused unless overwrite, and
 * only a regular file is ever truncated. Returns the fd or -1.
 */
int hostpath_open_new(const char *, const char *, int, char *, size_t);

#endif
