/*
 * The control directory, the same for the server and its commands: the
 * one given (--control-dir, MCP_SANDBOXD_CONTROL_DIR), else
 * ${XDG_RUNTIME_DIR:-/tmp}/mcp-sandboxd-control-UID.  It must be this
 * user's own: a directory, not a symlink, of our uid, mode 0700 or
 * stricter; anything else is refused, so that nobody else can plant or
 * read a socket in it.
 */
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctldir.h"

/* The directory's path into buf: 0, or -1 if it does not fit. */
int
ctldir_path(const char *given, char *buf, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (given != NULL && *given != '\0')
		n = snprintf(buf, len, "%s", given);
	else
		n = snprintf(buf, len, "%s/mcp-sandboxd-control-%d",
		    xdg != NULL && *xdg == '/' ? xdg : "/tmp", (int)geteuid());
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* The socket of server pid in dir: 0, or -1 if too long for sun_path. */
int
ctldir_socket(const char *dir, long pid, char *buf, size_t len)
{
	struct sockaddr_un sun;
	int n;

	n = snprintf(buf, len, "%s/%ld.sock", dir, pid);
	if (n < 0 || (size_t)n >= len || (size_t)n >= sizeof sun.sun_path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}
