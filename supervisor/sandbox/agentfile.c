/*
 * The agent's binary on the host, for every sandbox to bind read-only at
 * AGENT_PATH (proto/agentwire.h): the one built into the server
 * (agent_binary, from agent/ with musl, static, so that it runs in any
 * x86-64 image, with or without a shell or a C library), or the file of
 * --agent-file.  It is written once into this instance's private
 * directory (spool.c, 0700; removed with it), mode 0555: the engine reads
 * it there, nobody else can, and a sandbox sees it read-only.
 *
 * Why a bind of one file: it costs no request per sandbox (the engine
 * mounts it as it creates the container), it needs no volume to fill or
 * reap, it leaves the read-only root and the noexec tmpfs mounts as they
 * are, and the sandbox user can neither change nor replace it.  It needs
 * the engine on this host; where the private directory is on a noexec
 * filesystem (which the bind would carry into the sandbox), the agent is
 * left out and every command is a Docker exec.
 */
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentwire.h"
#include "config.h"
#include "core.h"
#include "log.h"
#include "sandbox.h"
#include "spool.h"
#include "xmalloc.h"

#define AGENTFILE_MAX (8 * 1024 * 1024) /* of an --agent-file */

extern const unsigned char agent_binary[];
extern const size_t agent_binary_len;

static char *agentfile; /* its path, once written */
static int agentfile_failed;

static int
write_all(int fd, const unsigned char *p, size_t len)
{
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The --agent-file's bytes (malloc), at most AGENTFILE_MAX. */
static unsigned char *
read_file(const char *path, size_t *lenp)
{
	unsigned char *buf;
	struct stat st;
	size_t len = 0;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return NULL;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > AGENTFILE_MAX) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	buf = xmalloc((size_t)st.st_size + 1);
	while (len < (size_t)st.st_size &&
	       (n = read(fd, buf + len, (size_t)st.st_size - len)) > 0)
		len += (size_t)n;
	close(fd);
	*lenp = len;
	return buf;
}

static int
agentfile_write(const char *path)
{
	const struct config *c = sup.conf;
	const unsigned char *p = agent_binary;
	unsigned char *copy = NULL;
	struct statvfs vfs;
	size_t len = agent_binary_len;
	char *tmp;
	int fd, rv = -1;

	if (c->agent_file != NULL) {
		if ((copy = read_file(c->agent_file, &len)) == NULL) {
			log_warn("--agent-file %s", c->agent_file);
			return -1;
		}
		p = copy;
	}
	xasprintf(&tmp, "%s.new", path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0555)) ==
	    -1)
		log_warn("agent: %s", tmp);
	else if (fstatvfs(fd, &vfs) == 0 && (vfs.f_flag & ST_NOEXEC))
		log_warnx("agent: %s is on a noexec filesystem (see "
		          "--runtime-dir); every command is a Docker exec",
		    tmp);
	else if (write_all(fd, p, len) == -1 || fchmod(fd, 0555) == -1)
		log_warn("agent: %s", tmp);
	else if (close(fd) == 0) {
		fd = -1;
		if (rename(tmp, path) == 0)
			rv = 0;
		else
			log_warn("agent: %s", path);
	}
	if (fd != -1)
		close(fd);
	if (rv == -1)
		unlink(tmp);
	free(tmp);
	free(copy);
	return rv;
}

/* The host path of the agent for sandboxes to bind, or NULL: none. */
const char *
agentfile_path(void)
{
	const char *root;
	char *path;

	if (!sup.conf->agent || agentfile_failed)
		return NULL;
	if (agentfile != NULL)
		return agentfile;
	if ((root = spool_root_path()) == NULL)
		return NULL;
	xasprintf(&path, "%s/agent", root);
	if (agentfile_write(path) == -1) {
		free(path);
		agentfile_failed = 1;
		return NULL;
	}
	agentfile = path;
	log_debug("agent: %s", agentfile);
	return agentfile;
}

/* The private directory goes (spool_cleanup()): forget the path. */
void
agentfile_forget(void)
{
	free(agentfile);
	agentfile = NULL;
}
