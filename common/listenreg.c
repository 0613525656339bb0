/* The ports this server listens on, as files (see listenreg.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "listenreg.h"

static int
entry_name(char *buf, size_t len, const char *dir, int port)
{
	int n = snprintf(buf, len, "%s/%d-%d", dir, port, (int)getpid());

	return n > 0 && (size_t)n < len ? 0 : -1;
}

int
listenreg_add(const char *dir, int port)
{
	char path[4096];
	int fd;

	if (dir == NULL)
		return 0;
	if (entry_name(path, sizeof path, dir, port) == -1) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1)
		return -1;
	close(fd);
	return 0;
}

void
listenreg_del(const char *dir, int port)
{
	char path[4096];

	if (dir != NULL && entry_name(path, sizeof path, dir, port) == 0)
		unlink(path);
}

int
listenreg_has(const char *dir, int port)
{
	struct dirent *e;
	char prefix[16];
	size_t n;
	DIR *d;
	int found = 0;

	if (dir == NULL)
		return 0;
	if ((d = opendir(dir)) == NULL)
		return 1;
	n = (size_t)snprintf(prefix, sizeof prefix, "%d-", port);
	while (!found && (e = readdir(d)) != NULL)
		found = strncmp(e->d_name, prefix, n) == 0;
	closedir(d);
	return found;
}
