/* Facts about processes and this boot, from /proc. */
#include <sys/stat.h>

#include <ctype.h>
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

/*
 * The id of the container whose mounts one line of /proc/self/mountinfo
 * shows, or -1: the engine binds its files /etc/hostname, /etc/hosts and
 * /etc/resolv.conf from a directory of the container's own, named by its
 * 64 hex digits (Docker: .../containers/ID/hostname, Podman:
 * .../overlay-containers/ID/userdata/hostname).  A host's own mounts
 * have no such line: /etc/hostname is not a mount point there.
 */
int
proc_mountinfo_container(const char *line, char *id, size_t len)
{
	static const char *files[] = {
	    "/etc/hostname", "/etc/hosts", "/etc/resolv.conf"};
	const char *root, *mnt, *p;
	size_t rootlen, mntlen, i, n;
	int field;

	/* ID PARENT MAJ:MIN ROOT MOUNTPOINT ...: fields 4 and 5. */
	p = line;
	for (field = 1; field < 4; field++) {
		if ((p = strchr(p, ' ')) == NULL)
			return -1;
		p++;
	}
	root = p;
	if ((p = strchr(root, ' ')) == NULL)
		return -1;
	rootlen = (size_t)(p - root);
	mnt = p + 1;
	mntlen = strcspn(mnt, " \n");
	for (i = 0; i < sizeof files / sizeof files[0]; i++)
		if (mntlen == strlen(files[i]) &&
		    strncmp(mnt, files[i], mntlen) == 0)
			break;
	if (i == sizeof files / sizeof files[0] || len < 65)
		return -1;
	for (p = root; (p = memmem(p, (size_t)(root + rootlen - p),
	                    "containers/", 11)) != NULL;
	     p += 11) {
		if (p == root || (p[-1] != '/' && p[-1] != '-') ||
		    (size_t)(root + rootlen - p) < 11 + 64 + 1)
			continue;
		for (n = 0; n < 64; n++)
			if (!isxdigit((unsigned char)p[11 + n]) ||
			    isupper((unsigned char)p[11 + n]))
				break;
		if (n == 64 && p[11 + 64] == '/') {
			memcpy(id, p + 11, 64);
			id[64] = '\0';
			return 0;
		}
	}
	return -1;
}

/* The container this process runs in (its id, 64 hex digits), or -1: not
 * one, or not one this can tell (proc_mountinfo_container()). */
int
proc_self_container(char *id, size_t len)
{
	char line[4096];
	FILE *f;
	int rv = -1;

	if ((f = fopen("/proc/self/mountinfo", "re")) == NULL)
		return -1;
	while (rv == -1 && fgets(line, sizeof line, f) != NULL)
		rv = proc_mountinfo_container(line, id, len);
	fclose(f);
	return rv;
}
