/*
 * A private directory of this user (privdir.h).
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "privdir.h"

/*
 * Whether dir is a private directory of owner (any owner when anyone is
 * set), made (0700) first when make is set and it is missing: 0, or -1
 * with why in err (errno EPERM when it exists but is not private).
 */
static int
privdir_of(const char *dir, int make, int anyone, char *err, size_t errlen)
{
	struct stat st;

	if (make && mkdir(dir, 0700) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if (lstat(dir, &st) == -1) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode) || (st.st_uid != geteuid() && !anyone) ||
	    (st.st_mode & 077) != 0) {
		snprintf(err, errlen,
		    "%s is not a private directory of this user (a directory "
		    "of uid %d, mode 0700 or stricter, not a symlink)",
		    dir, (int)geteuid());
		errno = EPERM;
		return -1;
	}
	return 0;
}

/* A private directory of this user (made first when make is set). */
int
privdir_check(const char *dir, int make, char *err, size_t errlen)
{
	return privdir_of(dir, make, 0, err, errlen);
}

/*
 * One this user may read: its own, or for root a private directory of
 * any user (a service's, whose sockets root may use anyway).  Never made.
 */
int
privdir_check_readable(const char *dir, char *err, size_t errlen)
{
	return privdir_of(dir, 0, geteuid() == 0, err, errlen);
}
