/*
 * A container's cgroup, found from its init process: /proc/PID/cgroup
 * says which group it is in, /proc/self/mountinfo where this process sees
 * each hierarchy mounted; where that process is not this one's to see (a
 * server in a container), by where engines put a group of that id.  Both cgroup
 * versions: v1 keeps memory and CPU in two hierarchies (memory, cpuacct), v2 in
 * one.  The counters read here are those the engine's stats endpoint reports
 * (memory_stats.max_usage, cpu_stats.cpu_usage.total_usage).
 */
#include <sys/eventfd.h>
#include <sys/inotify.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"

enum { CG_MEM, CG_CPU, CG_UNIFIED, CG_N };

struct cg_where {
	char path[CG_N][4096]; /* the group's path in each hierarchy */
	char dir[CG_N][4096]; /* ... and where it is in this mount table */
};

/* Whether a comma-separated list holds the word. */
static int
list_has(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, word, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return 1;
		if ((p = strchr(p, ',')) != NULL)
			p++;
	}
	return 0;
}

/* The membership lines: "HIERARCHY:CONTROLLERS:PATH". */
static int
cg_read_membership(struct cg_where *wh, const char *file)
{
	char line[8192], *ctl, *path;
	FILE *f;

	if ((f = fopen(file, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if ((ctl = strchr(line, ':')) == NULL ||
		    (path = strchr(ctl + 1, ':')) == NULL)
			continue;
		*ctl++ = '\0';
		*path++ = '\0';
		if (strcmp(line, "0") == 0 && *ctl == '\0')
			snprintf(wh->path[CG_UNIFIED], sizeof wh->path[0], "%s",
			    path);
		if (list_has(ctl, "memory"))
			snprintf(
			    wh->path[CG_MEM], sizeof wh->path[0], "%s", path);
		if (list_has(ctl, "cpuacct"))
			snprintf(
			    wh->path[CG_CPU], sizeof wh->path[0], "%s", path);
	}
	fclose(f);
	return 0;
}

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void
unescape(char *s)
{
	char *d = s;

	for (; *s != '\0'; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
			              (s[3] - '0'));
			s += 3;
		} else
			*d++ = *s;
	}
	*d = '\0';
}

/* Where a group of a hierarchy mounted at point (its root there) lies. */
static void
cg_place(struct cg_where *wh, int k, const char *prefix, const char *root,
    const char *point)
{
	const char *path = wh->path[k];
	size_t n = strlen(root);

	if (path[0] == '\0' || wh->dir[k][0] != '\0')
		return;
	if (strcmp(root, "/") != 0) {
		/* A bind of part of the hierarchy shows only that part. */
		if (strncmp(path, root, n) != 0 ||
		    (path[n] != '/' && path[n] != '\0'))
			return;
		path += n;
	}
	if ((size_t)snprintf(wh->dir[k], sizeof wh->dir[0], "%s%s%s", prefix,
	        point, path) >= sizeof wh->dir[0])
		wh->dir[k][0] = '\0';
}

/*
 * Mount lines: "ID PARENT MAJ:MIN ROOT POINT OPTIONS [TAGS...] - TYPE
 * SOURCE SUPEROPTIONS".
 */
static int
cg_read_mounts(struct cg_where *wh, const char *file, const char *prefix)
{
	char line[8192], *f[6] = {NULL}, *dash, *type, *super, *save;
	FILE *fp;
	int i;

	if ((fp = fopen(file, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof line, fp) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if ((dash = strstr(line, " - ")) == NULL)
			continue;
		*dash = '\0';
		type = strtok_r(dash + 3, " ", &save);
		(void)strtok_r(NULL, " ", &save); /* source */
		super = strtok_r(NULL, " ", &save);
		if (type == NULL || super == NULL)
			continue;
		f[0] = strtok_r(line, " ", &save);
		for (i = 1; i < 6 && f[i - 1] != NULL; i++)
			f[i] = strtok_r(NULL, " ", &save);
		if (f[0] == NULL || f[4] == NULL)
			continue;
		unescape(f[3]);
		unescape(f[4]);
		if (strcmp(type, "cgroup2") == 0)
			cg_place(wh, CG_UNIFIED, prefix, f[3], f[4]);
		else if (strcmp(type, "cgroup") == 0) {
			if (list_has(super, "memory"))
				cg_place(wh, CG_MEM, prefix, f[3], f[4]);
			if (list_has(super, "cpuacct"))
				cg_place(wh, CG_CPU, prefix, f[3], f[4]);
		}
	}
	fclose(fp);
	return 0;
}

/* Whether dir/name can be read. */
static int
has_file(const char *dir, const char *name)
{
	char path[4200];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	return access(path, R_OK) == 0;
}

/* The group of each hierarchy that wh's paths name, if it is the
 * container's (its id in the path) and can be read: 0, or -1. */
static int
cg_take(struct cgroup *cg, const struct cg_where *wh, const char *id)
{
	if (strstr(wh->path[CG_MEM], id) != NULL &&
	    strstr(wh->path[CG_CPU], id) != NULL &&
	    has_file(wh->dir[CG_MEM], "memory.max_usage_in_bytes") &&
	    has_file(wh->dir[CG_CPU], "cpuacct.usage")) {
		cg->version = 1;
		memcpy(cg->mem, wh->dir[CG_MEM], sizeof cg->mem);
		memcpy(cg->cpu, wh->dir[CG_CPU], sizeof cg->cpu);
		return 0;
	} else if (strstr(wh->path[CG_UNIFIED], id) != NULL &&
	           has_file(wh->dir[CG_UNIFIED], "cpu.stat") &&
	           has_file(wh->dir[CG_UNIFIED], "memory.current")) {
		cg->version = 2;
		memcpy(cg->mem, wh->dir[CG_UNIFIED], sizeof cg->mem);
		memcpy(cg->cpu, wh->dir[CG_UNIFIED], sizeof cg->cpu);
		return 0;
	}
	return -1;
}

/*
 * Where engines put a container's group, by its id: Docker's cgroupfs and
 * systemd drivers, then Podman's.  For a worker whose /proc does not show
 * the container's process (the server is itself a container, in a pid
 * namespace of its own), with the engine's host's cgroup tree mounted.
 */
static const char *const cg_guesses[] = {"/docker/%s",
    "/system.slice/docker-%s.scope", "/libpod_parent/libpod-%s",
    "/machine.slice/libpod-%s.scope"};

int
cgroup_find(struct cgroup *cg, const char *membership, const char *mountinfo,
    const char *prefix, const char *id)
{
	struct cg_where *wh;
	size_t i;
	int k, rv = -1;

	memset(cg, 0, sizeof *cg);
	if (id == NULL || strlen(id) < 12)
		return -1;
	if ((wh = calloc(1, sizeof *wh)) == NULL)
		return -1;
	if (cg_read_membership(wh, membership) == 0 &&
	    cg_read_mounts(wh, mountinfo, prefix) == 0 &&
	    cg_take(cg, wh, id) == 0)
		rv = 0;
	for (i = 0; rv == -1 && strlen(id) == 64 &&
	            i < sizeof cg_guesses / sizeof cg_guesses[0];
	     i++) {
		memset(wh, 0, sizeof *wh);
		for (k = 0; k < CG_N; k++)
			snprintf(
			    wh->path[k], sizeof wh->path[k], cg_guesses[i], id);
		if (cg_read_mounts(wh, mountinfo, prefix) == 0 &&
		    cg_take(cg, wh, id) == 0)
			rv = 0;
	}
	free(wh);
	return rv;
}

/* Reads dir/name whole (it is small) into buf. */
static int
read_file(const char *dir, const char *name, char *buf, size_t len)
{
	char path[4200];
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* A decimal counter at the start of s. */
static int
parse_ull(const char *s, unsigned long long *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1; /* strtoull() would take "-1" or " 1" */
	errno = 0;
	*v = strtoull(s, &end, 10);
	if (end == s || errno != 0 || (*end != '\0' && *end != '\n'))
		return -1;
	return 0;
}

/* The counter of a "KEY VALUE" line of a flat keyed file (cpu.stat). */
static int
parse_keyed(char *buf, const char *key, unsigned long long *v)
{
	size_t n = strlen(key);
	char *p;

	for (p = buf; p != NULL && *p != '\0'; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (strncmp(p, key, n) == 0 && p[n] == ' ') {
			p += n + 1;
			p[strcspn(p, "\n")] = '\0';
			return parse_ull(p, v);
		}
	}
	return -1;
}

int
cgroup_cpu_ns(const struct cgroup *cg, unsigned long long *ns)
{
	char buf[2048];
	unsigned long long us;

	if (cg->version == 1) {
		if (read_file(cg->cpu, "cpuacct.usage", buf, sizeof buf) == -1)
			return -1;
		return parse_ull(buf, ns);
	}
	if (cg->version != 2 ||
	    read_file(cg->cpu, "cpu.stat", buf, sizeof buf) == -1 ||
	    parse_keyed(buf, "usage_usec", &us) == -1)
		return -1;
	*ns = us * 1000;
	return 0;
}

/* v1 says it in memory.oom_control, v2 in memory.events. */
static const char *
oom_file(const struct cgroup *cg)
{
	return cg->version == 1 ? "memory.oom_control" : "memory.events";
}

int
cgroup_oom_kills(const struct cgroup *cg, unsigned long long *n)
{
	char buf[1024];

	if (cg->version == 0 ||
	    read_file(cg->mem, oom_file(cg), buf, sizeof buf) == -1)
		return -1;
	return parse_keyed(buf, "oom_kill", n);
}

int
cgroup_oom_watch(const struct cgroup *cg)
{
	char path[4200], line[64];
	int fd, cfd, ctl;

	snprintf(path, sizeof path, "%s/%s", cg->mem, oom_file(cg));
	if (cg->version == 2) {
		if ((fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1)
			return -1;
		if (inotify_add_watch(fd, path, IN_MODIFY) == -1) {
			close(fd);
			return -1;
		}
		return fd;
	}
	if (cg->version != 1 ||
	    (fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1)
		return -1;
	/* "<eventfd> <memory.oom_control>" registers it; the kernel keeps
	 * what it needs of both, so the file need not stay open. */
	cfd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof path, "%s/cgroup.event_control", cg->mem);
	ctl = cfd == -1 ? -1 : open(path, O_WRONLY | O_CLOEXEC);
	snprintf(line, sizeof line, "%d %d", fd, cfd);
	if (ctl == -1 ||
	    write(ctl, line, strlen(line)) != (ssize_t)strlen(line)) {
		if (ctl != -1)
			close(ctl);
		if (cfd != -1)
			close(cfd);
		close(fd);
		return -1;
	}
	close(ctl);
	close(cfd);
	return fd;
}

void
cgroup_oom_drain(int fd)
{
	char buf[4096];

	while (read(fd, buf, sizeof buf) > 0)
		;
}

int
cgroup_mem_peak(const struct cgroup *cg, unsigned long long *bytes)
{
	char buf[64];

	if (cg->version == 0 ||
	    read_file(cg->mem,
	        cg->version == 1 ? "memory.max_usage_in_bytes" : "memory.peak",
	        buf, sizeof buf) == -1)
		return -1;
	return parse_ull(buf, bytes);
}

int
cgroup_mem_peak_reset(const struct cgroup *cg)
{
	char path[4200];
	int fd, rv;

	if (cg->version != 1)
		return -1;
	snprintf(path, sizeof path, "%s/memory.max_usage_in_bytes", cg->mem);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	rv = write(fd, "0", 1) == 1 ? 0 : -1;
	close(fd);
	return rv;
}

int
cgroup_mem_peak_open(const struct cgroup *cg)
{
	char path[4200];
	int fd;

	if (cg->version != 2)
		return -1;
	snprintf(path, sizeof path, "%s/memory.peak", cg->mem);
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) == -1)
		return -1;
	/* Before 6.12 the file cannot be written. */
	if (write(fd, "reset\n", 6) != 6) {
		close(fd);
		return -1;
	}
	return fd;
}

int
cgroup_mem_peak_read(int fd, unsigned long long *bytes)
{
	char buf[64];
	ssize_t n;

	if ((n = pread(fd, buf, sizeof buf - 1, 0)) <= 0)
		return -1;
	buf[n] = '\0';
	return parse_ull(buf, bytes);
}
