/* A container's cgroup, as this host's kernel shows it. */
#ifndef CGROUP_H
#define CGROUP_H

#include <sys/types.h>

struct cgroup {
	int version; /* 1 or 2; 0 when not found */
	char mem[4096]; /* v1: the memory controller's directory; v2: the */
	char cpu[4096]; /* v1: cpuacct's; v2: both are the unified one */
};

/*
 * Finds the cgroup whose membership file (/proc/PID/cgroup) is given, in
 * the mounts of mountinfo; prefix goes before every mount point (a test's
 * fake tree; "" here).  The path must name the container id, so that a
 * reused pid or another host's engine is not taken for the container.
 */
int cgroup_find(struct cgroup *, const char *membership, const char *mountinfo,
    const char *prefix, const char *id);

/* CPU time used by the group, in nanoseconds. */
int cgroup_cpu_ns(const struct cgroup *, unsigned long long *);
/* The memory high-water mark of the group (v1, or v2's shared one). */
int cgroup_mem_peak(const struct cgroup *, unsigned long long *);
/* v1: resets the mark to the present usage (needs write access). */
int cgroup_mem_peak_reset(const struct cgroup *);
/* v2: a memory.peak of one's own, reset (Linux 6.12+); -1 without. */
int cgroup_mem_peak_open(const struct cgroup *);
int cgroup_mem_peak_read(int, unsigned long long *);

/* OOM kills in the group so far (oom_kill of v1's memory.oom_control, of
 * v2's memory.events). */
int cgroup_oom_kills(const struct cgroup *, unsigned long long *);
/*
 * A descriptor that becomes readable when the group may have had an OOM
 * kill: v1 an eventfd on memory.oom_control (which needs write access to
 * cgroup.event_control; it is also signalled once when the group is
 * removed, and before the kill, as the OOM begins), v2 inotify on
 * memory.events (after the kill).  -1 where neither can be had.
 * cgroup_oom_drain() reads what it holds.
 */
int cgroup_oom_watch(const struct cgroup *);
void cgroup_oom_drain(int);

#endif
