/* Facts about processes and this boot, from /proc. */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "procinfo.h"

/* A process's start time in clock ticks since boot (field 22 of stat). */
int
proc_start_ticks(pid_t pid, unsigned long long *ticks)
{
	char path[64], buf[1024], *p;
	FILE *f;
	size_t n;
	int field;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: skip past it.
	 * A line cut short is EINVAL, not a process gone (ENOENT). */
	errno = EINVAL;
	if ((p = strrchr(buf, ')')) == NULL)
		return -1;
	for (field = 2; field < 22; field++) {
		if ((p = strchr(p + 1, ' ')) == NULL)
			return -1;
	}
	return sscanf(p + 1, "%llu", ticks) == 1 ? 0 : -1;
}

int
proc_boot_id(char *buf, size_t len)
{
	FILE *f;

	if ((f = fopen("/proc/sys/kernel/random/boot_id", "r")) == NULL)
		return -1;
	if (fgets(buf, (int)len, f) == NULL) {
		fclose(f);
		return -1;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/*
 * Where this process's pids mean something: the boot id and the inode of
 * its pid namespace ("BOOT/pidns:INODE").  A server in a container (or on
 * another host) shares the engine, not the pids: there a pid of another
 * server's names nothing, or another process.
 */
int
proc_pid_home(char *buf, size_t len)
{
	char boot[40];
	struct stat st;
	int n;

	if (proc_boot_id(boot, sizeof boot) == -1 || *boot == '\0' ||
	    stat("/proc/self/ns/pid", &st) == -1)
		return -1;
	n = snprintf(
	    buf, len, "%s/pidns:%llu", boot, (unsigned long long)st.st_ino);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* A process's resident memory in bytes (the second field of statm). */
int
proc_rss(pid_t pid, long long *bytes)
{
	char path[64];
	long long pages;
	long psize;
	FILE *f;
	int ok;

	snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	ok = fscanf(f, "%*s %lld", &pages) == 1;
	fclose(f);
	if (!ok || (psize = sysconf(_SC_PAGESIZE)) <= 0)
		return -1;
	*bytes = pages * psize;
	return 0;
}
