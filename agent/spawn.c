/*
 * Starting a command (RUN): its environment, its streams, fork and exec.
 * The child tells the agent why it could not run through a close-on-exec
 * pipe, so that a successful exec closes it empty.
 */
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent-int.h"

extern char **environ;

/* What the child reports on the error pipe before it gives up. */
struct spawn_err {
	int what;
	int err;
};
/*
 * A one-way stream, [0] to read and [1] to write, as a pipe is: a socket
 * pair, each end shut for the other way.
 */
static int
stream_pair(int p[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) == -1)
		return -1;
	shutdown(p[0], SHUT_WR);
	shutdown(p[1], SHUT_RD);
	return 0;
}

#define SPAWN_STDIN 1
#define SPAWN_CHDIR 2
#define SPAWN_EXEC 3

/* The search path when the environment has none (musl's execvp's). */
#define SPAWN_PATH "/usr/local/bin:/bin:/usr/bin"

/* Whether "NAME=value" (or a bare "NAME") a and b name one variable. */
static int
name_eq(const char *a, const char *b)
{
	while (*a != '\0' && *a != '=' && *a == *b) {
		a++;
		b++;
	}
	return (*a == '\0' || *a == '=') && (*b == '\0' || *b == '=');
}

/*
 * The agent's environment, each of add replacing a same-named variable
 * or added (of two in add, the later), and tokvar last if not NULL; a
 * token the agent itself was started with is never passed on.  The
 * array is new (malloc), its strings are those of environ, add, tokvar.
 */
static char **
env_merge(char *const *add, char *tokvar)
{
	size_t nbase = 0, nadd = 0, n = 0, i, j;
	char **env;

	while (environ != NULL && environ[nbase] != NULL)
		nbase++;
	while (add[nadd] != NULL)
		nadd++;
	if ((env = calloc(nbase + nadd + 2, sizeof *env)) == NULL)
		return NULL;
	for (i = 0; i < nbase; i++) {
		if (name_eq(environ[i], AGENT_TOKEN_VAR))
			continue;
		for (j = 0; j < nadd && !name_eq(environ[i], add[j]); j++)
			;
		if (j == nadd)
			env[n++] = environ[i];
	}
	for (i = 0; i < nadd; i++) {
		if (tokvar != NULL && name_eq(add[i], tokvar))
			continue;
		for (j = i + 1; j < nadd && !name_eq(add[i], add[j]); j++)
			;
		if (j == nadd)
			env[n++] = add[i];
	}
	if (tokvar != NULL)
		env[n++] = tokvar;
	env[n] = NULL;
	return env;
}

static const char *
env_get(char *const *env, const char *name)
{
	size_t len = strlen(name);

	for (; *env != NULL; env++)
		if (strncmp(*env, name, len) == 0 && (*env)[len] == '=')
			return *env + len + 1;
	return NULL;
}

/*
 * execve, searching the PATH of env when file has no '/', as execvp
 * does: an EACCES is remembered while the search goes on.  Returns only
 * on failure.
 */
static void
exec_path(const char *file, char *const argv[], char *const env[])
{
	const char *path, *p, *z;
	char buf[PATH_MAX];
	size_t flen = strlen(file), k;
	int eacces = 0;

	if (flen == 0) {
		errno = ENOENT;
		return;
	}
	if (strchr(file, '/') != NULL) {
		execve(file, argv, env);
		return;
	}
	if (flen > NAME_MAX) {
		errno = ENAMETOOLONG;
		return;
	}
	if ((path = env_get(env, "PATH")) == NULL)
		path = SPAWN_PATH;
	for (p = path;; p = z + 1) {
		z = strchrnul(p, ':');
		k = (size_t)(z - p);
		if (k + 1 + flen + 1 <= sizeof buf) {
			/* An empty entry is the working directory. */
			memcpy(buf, p, k);
			buf[k] = '/';
			memcpy(buf + k + (k > 0), file, flen + 1);
			execve(buf, argv, env);
			switch (errno) {
			case EACCES:
				eacces = 1;
				break;
			case ENOENT:
			case ENOTDIR:
				break;
			default:
				return;
			}
		}
		if (*z == '\0')
			break;
	}
	errno = eacces ? EACCES : ENOENT;
}

/* Closes every descriptor from 3 up but keep. */
static void
close_others(int keep)
{
	struct dirent *e;
	DIR *d;
	long max;
	int n;

#ifdef SYS_close_range
	if ((keep == 3 || syscall(SYS_close_range, 3U, (unsigned int)keep - 1,
	                      0U) == 0) &&
	    syscall(SYS_close_range, (unsigned int)keep + 1, ~0U, 0U) == 0)
		return;
#endif
	if ((d = opendir("/proc/self/fd")) != NULL) {
		while ((e = readdir(d)) != NULL) {
			n = atoi(e->d_name);
			if (n >= 3 && n != keep && n != dirfd(d))
				close(n);
		}
		closedir(d);
		return;
	}
	max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 65536)
		max = 65536;
	for (n = 3; n < max; n++)
		if (n != keep)
			close(n);
}

static void __attribute__((noreturn)) child_fail(int rep, int what)
{
	struct spawn_err e = {.what = what, .err = errno};

	(void)!write(rep, &e, sizeof e);
	_exit(127);
}

/*
 * The child, between fork and exec: its own session, default signals,
 * its pipes as 0, 1 and 2 and no other descriptor but the error pipe
 * (close-on-exec).
 */
static void __attribute__((noreturn))
child(const struct agent_run *r, char **env, int in, int out, int err, int rep)
{
	sigset_t none;
	int sig;

	for (sig = 1; sig < _NSIG; sig++)
		signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	if (in == -1 && (in = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
		child_fail(rep, SPAWN_STDIN);
	if (dup2(in, 0) == -1 || dup2(out, 1) == -1 || dup2(err, 2) == -1)
		child_fail(rep, SPAWN_EXEC);
	close_others(rep);
	if (r->workdir != NULL && chdir(r->workdir) == -1)
		child_fail(rep, SPAWN_CHDIR);
	exec_path(r->argv[0], r->argv, env);
	child_fail(rep, SPAWN_EXEC);
}

static void
close_pair(int p[2])
{
	if (p[0] != -1)
		close(p[0]);
	if (p[1] != -1)
		close(p[1]);
	p[0] = p[1] = -1;
}

static int
nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl == -1 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int
spawn_start(
    const struct agent_run *r, struct spawn_child *c, char *err, size_t errlen)
{
	char tokvar[sizeof AGENT_TOKEN_VAR + AGENT_TOKEN_MAX + 1];
	int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1};
	int prep[2] = {-1, -1};
	struct spawn_err e;
	char **env;
	ssize_t n;
	pid_t pid;

	if (r->token != NULL)
		snprintf(
		    tokvar, sizeof tokvar, "%s=%s", AGENT_TOKEN_VAR, r->token);
	if ((env = env_merge(r->env, r->token != NULL ? tokvar : NULL)) ==
	    NULL) {
		snprintf(err, errlen, "environment: %s", strerror(errno));
		return -1;
	}
	/*
	 * Close-on-exec, so that no other command inherits them.  Its
	 * standard streams are sockets, not pipes: a pipe can be opened
	 * again through /proc/PID/fd by any process of the sandbox user
	 * (and written into, or read from), a socket cannot (ENXIO), so
	 * sandbox code cannot forge nor steal what a command says or reads.
	 */
	if ((r->has_stdin && stream_pair(pin) == -1) ||
	    stream_pair(pout) == -1 || stream_pair(perr) == -1 ||
	    pipe2(prep, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		goto fail;
	}
	/* The agent's ends only: each end is a file description of its own. */
	if ((pin[1] != -1 && nonblock(pin[1]) == -1) ||
	    nonblock(pout[0]) == -1 || nonblock(perr[0]) == -1) {
		snprintf(err, errlen, "fcntl: %s", strerror(errno));
		goto fail;
	}
	if ((pid = fork()) == -1) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0)
		child(r, env, pin[0], pout[1], perr[1], prep[1]);
	free(env);
	env = NULL;
	close(pout[1]);
	close(perr[1]);
	close(prep[1]);
	pout[1] = perr[1] = prep[1] = -1;
	if (pin[0] != -1) {
		close(pin[0]);
		pin[0] = -1;
	}
	/* Empty at the exec, or the child's one report. */
	do
		n = read(prep[0], &e, sizeof e);
	while (n == -1 && errno == EINTR);
	if (n == (ssize_t)sizeof e) {
		while (waitpid(pid, NULL, 0) == -1 && errno == EINTR)
			;
		switch (e.what) {
		case SPAWN_STDIN:
			snprintf(
			    err, errlen, "open /dev/null: %s", strerror(e.err));
			break;
		case SPAWN_CHDIR:
			snprintf(err, errlen, "chdir %s: %s", r->workdir,
			    strerror(e.err));
			break;
		default:
			snprintf(err, errlen, "exec %s: %s", r->argv[0],
			    strerror(e.err));
			break;
		}
		goto fail;
	}
	close_pair(prep);
	c->pid = pid;
	c->in = pin[1];
	c->out = pout[0];
	c->err = perr[0];
	return 0;
fail:
	free(env);
	close_pair(pin);
	close_pair(pout);
	close_pair(perr);
	close_pair(prep);
	return -1;
}
