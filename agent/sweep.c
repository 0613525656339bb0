/*
 * Killing what a command left (KILL, SWEEP, the agent's end).  A process
 * is found in /proc by its process group or session, or by the token in
 * its environment, and stopped at once: a stopped process cannot fork,
 * so that a fork bomb cannot outrun the sweep.  The passes go on until
 * one finds nothing new; then everything found is killed, but for what
 * left the group as it was stopped (still_swept()).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent-int.h"

/* PID_MAX_LIMIT of 64-bit Linux: no pid is above it. */
#define SWEEP_PID_LIMIT (1 << 22)
#define SWEEP_PASSES 100
#define SWEEP_VAR_MAX (sizeof AGENT_TOKEN_VAR + AGENT_TOKEN_MAX + 1)

struct sweep {
	pid_t self;
	const pid_t *groups;
	size_t ngroups;
	char vars[AGENT_MAX_TOKENS][SWEEP_VAR_MAX]; /* "VAR=token" */
	size_t varlen[AGENT_MAX_TOKENS];
	size_t nvars;
	unsigned char *stopped; /* a bit per pid; NULL: signal at once */
	int sig; /* ... with this signal */
	int killed;
};

static int
in_groups(const struct sweep *s, long id)
{
	size_t i;

	for (i = 0; i < s->ngroups; i++)
		if (s->groups[i] > 1 && s->groups[i] == id)
			return 1;
	return 0;
}

/* The state, process group and session of pid (-1: it is gone). */
static int
proc_stat(pid_t pid, char *state, long *pgrp, long *sess)
{
	char path[32], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* The name, in parentheses, may hold anything: the last ')'. */
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 1, " %c %*d %ld %ld", state, pgrp, sess) != 3)
		return -1;
	return 0;
}

/*
 * Whether pid is of a group or session swept (-1: it is gone or a
 * zombie, nothing to kill).
 */
static int
by_group(const struct sweep *s, pid_t pid)
{
	long pgrp, sess;
	char state;

	if (proc_stat(pid, &state, &pgrp, &sess) == -1 || state == 'Z' ||
	    state == 'X')
		return -1;
	return in_groups(s, pgrp) || in_groups(s, sess);
}

/*
 * The pids of /proc, one at a time: 0 at the end.  (A pid above 1, not
 * above the limit, not this process.)
 */
static pid_t
next_pid(DIR *d, pid_t self)
{
	struct dirent *e;
	char *end;
	long v;

	while ((e = readdir(d)) != NULL) {
		errno = 0;
		v = strtol(e->d_name, &end, 10);
		if (errno != 0 || *end != '\0' || v <= 1 ||
		    v >= SWEEP_PID_LIMIT || v == self)
			continue;
		return (pid_t)v;
	}
	return 0;
}

static int
seen(const struct sweep *s, pid_t pid)
{
	return s->stopped != NULL &&
	       (s->stopped[pid / 8] & (1U << (pid % 8))) != 0;
}

/* Whether pid's environment holds one of the entries s->vars exactly. */
static int
by_token(const struct sweep *s, pid_t pid)
{
	static unsigned char buf[65536];
	size_t at[AGENT_MAX_TOKENS], i;
	char path[32];
	ssize_t n, k;
	int fd, found = 0;

	if (s->nvars == 0)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	/* at[i]: how much of vars[i] the entry matched so far, or SIZE_MAX. */
	for (i = 0; i < s->nvars; i++)
		at[i] = 0;
	while (!found && (n = read(fd, buf, sizeof buf)) > 0) {
		for (k = 0; k < n && !found; k++) {
			for (i = 0; i < s->nvars; i++) {
				if (buf[k] == '\0') {
					found = at[i] == s->varlen[i];
					at[i] = 0;
					if (found)
						break;
				} else if (at[i] < s->varlen[i] &&
				           buf[k] ==
				               (unsigned char)s->vars[i][at[i]])
					at[i]++;
				else
					at[i] = SIZE_MAX;
			}
		}
	}
	for (i = 0; i < s->nvars && !found; i++)
		found = at[i] == s->varlen[i];
	close(fd);
	return found;
}

/* One pass over /proc: how many processes it stopped that were new. */
static int
sweep_pass(struct sweep *s)
{
	DIR *d;
	pid_t pid;
	int found = 0, g;

	if ((d = opendir("/proc")) == NULL)
		return 0;
	while ((pid = next_pid(d, s->self)) != 0) {
		if (seen(s, pid))
			continue;
		if ((g = by_group(s, pid)) == -1 || (!g && !by_token(s, pid)))
			continue;
		if (s->stopped == NULL) {
			if (kill(pid, s->sig) == 0)
				s->killed++;
			continue;
		}
		kill(pid, SIGSTOP);
		s->stopped[pid / 8] |= 1U << (pid % 8);
		found++;
	}
	closedir(d);
	return found;
}

/*
 * Whether a process a pass stopped is still the sweep's (-1: it is gone).
 * One that left the group and the session as it was stopped (a daemon
 * starting as its command ends, caught in setsid()) and has no token
 * swept is not: it is continued, as if the pass had come a moment later.
 * (A stopped process cannot leave; one caught before its setsid() took
 * is still in the group, and is killed.)
 */
static int
still_swept(const struct sweep *s, pid_t pid)
{
	int g;

	if ((g = by_group(s, pid)) == -1)
		return -1;
	return g || by_token(s, pid);
}

int
sweep_kill(const pid_t *groups, size_t ngroups, const char *const *tokens,
    size_t ntokens)
{
	struct sweep s;
	size_t i;
	int pass, n;
	pid_t pid;

	memset(&s, 0, sizeof s);
	s.self = getpid();
	s.groups = groups;
	s.ngroups = ngroups;
	s.sig = SIGKILL;
	for (i = 0; i < ntokens && s.nvars < AGENT_MAX_TOKENS; i++) {
		n = snprintf(s.vars[s.nvars], SWEEP_VAR_MAX, "%s=%s",
		    AGENT_TOKEN_VAR, tokens[i]);
		if (n > 0 && (size_t)n < SWEEP_VAR_MAX)
			s.varlen[s.nvars++] = (size_t)n;
	}
	/*
	 * 512 KiB, zero pages until a pid's byte is set.  Without it, one
	 * pass kills what it finds at once.  Each process is stopped by its
	 * pid, never by its group: the sweep knows whom it stopped, and so
	 * stops nothing that it then neither kills nor continues.
	 */
	s.stopped = calloc(SWEEP_PID_LIMIT / 8, 1);
	for (pass = 0; pass < SWEEP_PASSES; pass++)
		if (sweep_pass(&s) == 0)
			break;
	if (s.stopped != NULL) {
		for (pid = 0; pid < SWEEP_PID_LIMIT; pid++) {
			if (pid % 8 == 0 && s.stopped[pid / 8] == 0) {
				pid += 7;
				continue;
			}
			if (!seen(&s, pid))
				continue;
			if ((n = still_swept(&s, pid)) == 1) {
				if (kill(pid, SIGKILL) == 0)
					s.killed++;
			} else if (n == 0)
				kill(pid, SIGCONT);
		}
	}
	/* Never kill(-1) or our own group (0): a group is above 1. */
	for (i = 0; i < ngroups; i++)
		if (groups[i] > 1)
			kill(-groups[i], SIGKILL);
	free(s.stopped);
	return s.killed;
}

int
sweep_signal(pid_t group, const char *const *tokens, size_t ntokens, int sig)
{
	struct sweep s;
	size_t i;
	int n;

	memset(&s, 0, sizeof s);
	s.self = getpid();
	s.groups = &group;
	s.ngroups = 1;
	s.sig = sig;
	for (i = 0; i < ntokens && s.nvars < AGENT_MAX_TOKENS; i++) {
		n = snprintf(s.vars[s.nvars], SWEEP_VAR_MAX, "%s=%s",
		    AGENT_TOKEN_VAR, tokens[i]);
		if (n > 0 && (size_t)n < SWEEP_VAR_MAX)
			s.varlen[s.nvars++] = (size_t)n;
	}
	/* One pass: each process of the group (or session) or with a
	 * token gets it once (in_groups() never takes 1 or 0). */
	(void)sweep_pass(&s);
	return s.killed;
}
