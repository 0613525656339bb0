/*
 * Unit tests of the cgroup lookup and counters (worker/cgroup.c) on fake
 * trees: the membership and mount tables of cgroup v1 (the engine's
 * cgroupfs driver), v2 (the systemd driver) and hybrid hosts, as the
 * kernel writes them.  This host's own (v1) case also runs for real in
 * the integration tests.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <poll.h>
#include <signal.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cgroup.h"
#include "tmptree.h"

#define ID "3f2a9c1b7d5e40c1a8f6b2d9e0c4a7b1f3e5d2c6a9b8c7d0e1f2a3b4c5d6e7f8"
#define OTHER "aa2a9c1b7d5e40c1a8f6b2d9e0c4a7b1f3e5d2c6a9b8c7d0e1f2a3b4c5d6e7f8"

/* Writes root/rel, making its directories. */
static void
put(const char *rel, const char *content)
{
	char path[2 * PATH_MAX], *p;
	FILE *f;

	snprintf(path, sizeof path, "%s", tt_at(rel));
	for (p = path + strlen(tt_root) + 1; (p = strchr(p, '/')) != NULL;
	     p++) {
		*p = '\0';
		cr_assert(mkdir(path, 0755) == 0 || errno == EEXIST, "%s: %s",
		    path, strerror(errno));
		*p = '/';
	}
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(content, f);
	fclose(f);
}

static const char *
slurp(const char *rel)
{
	static char buf[256];
	FILE *f;
	size_t n;

	f = fopen(tt_at(rel), "r");
	cr_assert_not_null(f, "%s", rel);
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static void
mkroot(void)
{
	tt_make("unit-cgroup");
}

TestSuite(cgroup, .init = mkroot, .fini = tt_remove);

/* A cgroup v1 host: memory and cpu,cpuacct mounted apart. */
static const char v1_mounts[] =
    "25 1 0:22 / /sys rw,nosuid - sysfs sysfs rw\n"
    "30 25 0:26 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755\n"
    "31 30 0:27 / /sys/fs/cgroup/unified rw shared:10 - cgroup2 cgroup2 "
    "rw,nsdelegate\n"
    "35 30 0:31 / /sys/fs/cgroup/cpu,cpuacct rw shared:15 - cgroup cgroup "
    "rw,cpu,cpuacct\n"
    "36 30 0:32 / /sys/fs/cgroup/memory rw shared:16 - cgroup cgroup "
    "rw,memory\n"
    "37 30 0:33 / /sys/fs/cgroup/pids rw shared:17 - cgroup cgroup rw,pids\n";

static const char v1_membership[] = "12:pids:/docker/" ID "\n"
                                    "4:memory:/docker/" ID "\n"
                                    "3:cpu,cpuacct:/docker/" ID "\n"
                                    "1:name=systemd:/docker/" ID "\n"
                                    "0::/system.slice/containerd.service\n";

static void
v1_tree(void)
{
	put("proc/mountinfo", v1_mounts);
	put("proc/cgroup", v1_membership);
	put("sys/fs/cgroup/memory/docker/" ID "/memory.max_usage_in_bytes",
	    "73400320\n");
	put("sys/fs/cgroup/cpu,cpuacct/docker/" ID "/cpuacct.usage",
	    "1234567890\n");
}

Test(cgroup, v1_found_and_read)
{
	struct cgroup cg;
	unsigned long long v;

	v1_tree();
	cr_assert_eq(cgroup_find(&cg, tt_at("proc/cgroup"),
	                 tt_at("proc/mountinfo"), tt_root, ID),
	    0);
	cr_expect_eq(cg.version, 1);
	cr_expect_str_eq(cg.mem, tt_at("sys/fs/cgroup/memory/docker/" ID));
	cr_expect_str_eq(cg.cpu, tt_at("sys/fs/cgroup/cpu,cpuacct/docker/" ID));
	cr_assert_eq(cgroup_cpu_ns(&cg, &v), 0);
	cr_expect_eq(v, 1234567890ULL);
	cr_assert_eq(cgroup_mem_peak(&cg, &v), 0);
	cr_expect_eq(v, 73400320ULL);
	/* The reset is a write of 0, which the kernel takes as "now". */
	put("sys/fs/cgroup/memory/docker/" ID "/memory.max_usage_in_bytes",
	    "9\n");
	cr_assert_eq(cgroup_mem_peak_reset(&cg), 0);
	cr_expect_str_eq(slurp("sys/fs/cgroup/memory/docker/" ID
	                       "/memory.max_usage_in_bytes"),
	    "0\n");
	/* v1 has no per-reader mark. */
	cr_expect_eq(cgroup_mem_peak_open(&cg), -1);
}

/* A reused pid is another container's (or no container's): refused. */
Test(cgroup, other_container_refused)
{
	struct cgroup cg;

	v1_tree();
	cr_expect_eq(cgroup_find(&cg, tt_at("proc/cgroup"),
	                 tt_at("proc/mountinfo"), tt_root, OTHER),
	    -1);
	cr_expect_eq(cg.version, 0);
}

/* Mounted but empty (the engine is on another host): refused. */
Test(cgroup, files_missing_refused)
{
	struct cgroup cg;

	put("proc/mountinfo", v1_mounts);
	put("proc/cgroup", v1_membership);
	cr_expect_eq(cgroup_find(&cg, tt_at("proc/cgroup"),
	                 tt_at("proc/mountinfo"), tt_root, ID),
	    -1);
	cr_expect_eq(cgroup_find(&cg, tt_at("proc/nonesuch"),
	                 tt_at("proc/mountinfo"), tt_root, ID),
	    -1);
}

/* Counters that are not numbers are not taken for numbers. */
Test(cgroup, bad_counters_refused)
{
	struct cgroup cg;
	unsigned long long v = 7;

	v1_tree();
	cr_assert_eq(cgroup_find(&cg, tt_at("proc/cgroup"),
	                 tt_at("proc/mountinfo"), tt_root, ID),
	    0);
	put("sys/fs/cgroup/cpu,cpuacct/docker/" ID "/cpuacct.usage", "12x\n");
	put("sys/fs/cgroup/memory/docker/" ID "/memory.max_usage_in_bytes", "");
	cr_expect_eq(cgroup_cpu_ns(&cg, &v), -1);
	cr_expect_eq(cgroup_mem_peak(&cg, &v), -1);
}

/* A hierarchy mounted from a sub-group shows paths below it only. */
Test(cgroup, v1_bind_of_a_subtree)
{
	struct cgroup cg;

	put("proc/mountinfo",
	    "35 30 0:31 /docker /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup "
	    "rw,cpu,cpuacct\n"
	    "36 30 0:32 /docker /sys/fs/cgroup/memory rw - cgroup cgroup "
	    "rw,memory\n");
	put("proc/cgroup", v1_membership);
	put("sys/fs/cgroup/memory/" ID "/memory.max_usage_in_bytes", "1\n");
	put("sys/fs/cgroup/cpu,cpuacct/" ID "/cpuacct.usage", "2\n");
	cr_assert_eq(cgroup_find(&cg, tt_at("proc/cgroup"),
	                 tt_at("proc/mountinfo"), tt_root, ID),
	    0);
	cr_expect_str_eq(cg.mem, tt_at("sys/fs/cgroup/memory/" ID));
}

/* A cgroup v2 host with the systemd driver; an escaped mount point. */
Test(cgroup, v2_found_and_read)
{
	struct cgroup cg;
	unsigned long long v;
	char rel[512];

	put("proc/mountinfo",
	    "25 1 0:22 / /sys rw,nosuid - sysfs sysfs rw\n"
	    "30 25 0:26 / /sys/fs/cg\\040root rw,nosuid shared:4 - cgroup2 "
	    "cgroup2 rw,nsdelegate,memory_recursiveprot\n");
	put("proc/cgroup", "0::/system.slice/docker-" ID ".scope\n");
	snprintf(rel, sizeof rel,
	    "sys/fs/cg root/system.slice/docker-%s.scope/cpu.stat", ID);
	put(rel, "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n");
	snprintf(rel, sizeof rel,
	    "sys/fs/cg root/system.slice/docker-%s.scope/memory.current", ID);
	put(rel, "4096\n");
	snprintf(rel, sizeof rel,
	    "sys/fs/cg root/system.slice/docker-%s.scope/memory.peak", ID);
	put(rel, "8192\n");

	cr_assert_eq(cgroup_find(&cg, tt_at("proc/cgroup"),
	                 tt_at("proc/mountinfo"), tt_root, ID),
	    0);
	cr_expect_eq(cg.version, 2);
	cr_expect_str_eq(
	    cg.mem, tt_at("sys/fs/cg root/system.slice/docker-" ID ".scope"));
	cr_assert_eq(cgroup_cpu_ns(&cg, &v), 0);
	cr_expect_eq(v, 2500000ULL);
	cr_assert_eq(cgroup_mem_peak(&cg, &v), 0);
	cr_expect_eq(v, 8192ULL);
	/* v2 has no group-wide reset. */
	cr_expect_eq(cgroup_mem_peak_reset(&cg), -1);
}

/* cpu.stat with usage_usec on a later line. */
Test(cgroup, v2_usage_not_first)
{
	struct cgroup cg;
	unsigned long long v;

	put("proc/mountinfo",
	    "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
	put("proc/cgroup", "0::/docker/" ID "\n");
	put("sys/fs/cgroup/docker/" ID "/cpu.stat",
	    "nr_periods 0\nusage_usec 7\n");
	put("sys/fs/cgroup/docker/" ID "/memory.current", "1\n");
	cr_assert_eq(cgroup_find(&cg, tt_at("proc/cgroup"),
	                 tt_at("proc/mountinfo"), tt_root, ID),
	    0);
	cr_assert_eq(cgroup_cpu_ns(&cg, &v), 0);
	cr_expect_eq(v, 7000ULL);
}

/*
 * A hybrid host whose container is only in the unified hierarchy's
 * controller-less group (no memory there): not usable, refused.
 */
Test(cgroup, hybrid_without_controllers_refused)
{
	struct cgroup cg;

	put("proc/mountinfo", v1_mounts);
	put("proc/cgroup", "0::/docker/" ID "\n");
	put("sys/fs/cgroup/unified/docker/" ID "/cgroup.procs", "1\n");
	cr_expect_eq(cgroup_find(&cg, tt_at("proc/cgroup"),
	                 tt_at("proc/mountinfo"), tt_root, ID),
	    -1);
}

/* The OOM kill counter: v1's memory.oom_control, v2's memory.events. */
Test(cgroup, oom_kills_read_from_either_version)
{
	struct cgroup cg = {.version = 1};
	unsigned long long v;

	snprintf(cg.mem, sizeof cg.mem, "%s", tt_at("v1"));
	put("v1/memory.oom_control",
	    "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
	cr_assert_eq(cgroup_oom_kills(&cg, &v), 0);
	cr_expect_eq(v, 3ULL);
	/* A key that only begins with it is another key. */
	put("v1/memory.oom_control", "oom_kill_disable 4\nunder_oom 0\n");
	cr_expect_eq(cgroup_oom_kills(&cg, &v), -1);
	put("v1/memory.oom_control", "oom_kill -1\n");
	cr_expect_eq(cgroup_oom_kills(&cg, &v), -1);

	cg.version = 2;
	snprintf(cg.mem, sizeof cg.mem, "%s", tt_at("v2"));
	put("v2/memory.events", "low 0\nhigh 0\nmax 9\noom 2\noom_kill 1\n"
	                        "oom_group_kill 0\n");
	cr_assert_eq(cgroup_oom_kills(&cg, &v), 0);
	cr_expect_eq(v, 1ULL);
	cg.version = 0;
	cr_expect_eq(cgroup_oom_kills(&cg, &v), -1);
}

/* v2's watch is inotify on memory.events: a change wakes it. */
Test(cgroup, v2_oom_watch_wakes_on_a_change)
{
	struct cgroup cg = {.version = 2};
	struct pollfd pfd;
	int fd;

	snprintf(cg.mem, sizeof cg.mem, "%s", tt_at("v2"));
	put("v2/memory.events", "oom 0\noom_kill 0\n");
	fd = cgroup_oom_watch(&cg);
	cr_assert_neq(fd, -1, "%s", strerror(errno));
	pfd = (struct pollfd){.fd = fd, .events = POLLIN};
	cr_expect_eq(poll(&pfd, 1, 0), 0, "woken before any change");
	put("v2/memory.events", "oom 1\noom_kill 1\n");
	cr_expect_eq(poll(&pfd, 1, 5000), 1, "not woken by the change");
	cgroup_oom_drain(fd);
	cr_expect_eq(poll(&pfd, 1, 0), 0, "still readable once drained");
	close(fd);
	cg.version = 0;
	cr_expect_eq(cgroup_oom_watch(&cg), -1);
}

/* The real group of the test below, removed however the test ended. */
static char real_group[4096];

static void
real_group_remove(void)
{
	char path[4200];
	FILE *f;
	int pid;

	if (real_group[0] != '\0') {
		snprintf(path, sizeof path, "%s/cgroup.procs", real_group);
		if ((f = fopen(path, "r")) != NULL) {
			while (fscanf(f, "%d", &pid) == 1) {
				kill(pid, SIGKILL);
				waitpid(pid, NULL, 0);
			}
			fclose(f);
		}
		rmdir(real_group);
	}
	tt_remove();
}

/*
 * This host's kernel, for real: a memory group of its own with a 16 MiB
 * limit, a child that touches 64 MiB in it.  The watch wakes, the counter
 * says one kill (v1 wakes before the kill, so the counter is read once
 * the child is reaped), and the group's removal wakes a v1 watch again
 * with the counter no longer readable: what the worker takes for "gone".
 */
Test(cgroup, a_real_oom_kill_is_heard, .fini = real_group_remove)
{
	struct cgroup cg;
	struct pollfd pfd;
	unsigned long long v;
	char path[4200];
	pid_t pid;
	int fd, status;
	FILE *f;
	char *m;

	memset(&cg, 0, sizeof cg);
	if (access("/sys/fs/cgroup/memory/cgroup.procs", W_OK) == 0) {
		cg.version = 1;
		snprintf(cg.mem, sizeof cg.mem,
		    "/sys/fs/cgroup/memory/unit-cgroup-%d", (int)getpid());
	} else {
		cg.version = 2;
		snprintf(cg.mem, sizeof cg.mem, "/sys/fs/cgroup/unit-cgroup-%d",
		    (int)getpid());
	}
	snprintf(real_group, sizeof real_group, "%s", cg.mem);
	cr_assert_eq(mkdir(cg.mem, 0755), 0,
	    "%s: %s (this test needs a memory cgroup of its own: run it as "
	    "root)",
	    cg.mem, strerror(errno));
	snprintf(path, sizeof path, "%s/%s", cg.mem,
	    cg.version == 1 ? "memory.limit_in_bytes" : "memory.max");
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fprintf(f, "%d", 16 << 20);
	cr_assert_eq(fclose(f), 0, "%s: %s", path, strerror(errno));
	if (cg.version == 1) {
		/* Without swap accounting off, the kill could wait on swap. */
		snprintf(path, sizeof path, "%s/memory.swappiness", cg.mem);
		if ((f = fopen(path, "w")) != NULL) {
			fputs("0", f);
			fclose(f);
		}
	}
	cr_assert_eq(cgroup_oom_kills(&cg, &v), 0);
	cr_expect_eq(v, 0ULL);
	fd = cgroup_oom_watch(&cg);
	cr_assert_neq(fd, -1, "%s", strerror(errno));

	if ((pid = fork()) == 0) {
		snprintf(path, sizeof path, "%s/cgroup.procs", cg.mem);
		if ((f = fopen(path, "w")) == NULL)
			_exit(2);
		fprintf(f, "%d", (int)getpid());
		if (fclose(f) != 0)
			_exit(2);
		/* Every page touched (volatile: a store never read back
		 * would be optimised away, and the memory with it). */
		if ((m = malloc(64 << 20)) == NULL)
			_exit(3);
		for (size_t i = 0; i < 64 << 20; i += 4096)
			((volatile char *)m)[i] = 1;
		_exit(0);
	}
	cr_assert_gt(pid, 0);
	pfd = (struct pollfd){.fd = fd, .events = POLLIN};
	cr_expect_eq(poll(&pfd, 1, 10000), 1, "the watch did not wake");
	cgroup_oom_drain(fd);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	    "the child was not killed (status %#x)", status);
	cr_assert_eq(cgroup_oom_kills(&cg, &v), 0);
	cr_expect_eq(v, 1ULL);

	cr_assert_eq(rmdir(cg.mem), 0, "%s: %s", cg.mem, strerror(errno));
	real_group[0] = '\0';
	cr_expect_eq(cgroup_oom_kills(&cg, &v), -1);
	if (cg.version == 1)
		cr_expect_eq(poll(&pfd, 1, 10000), 1,
		    "v1: the removal did not wake the watch");
	close(fd);
}

/*
 * A server that is itself a container does not see the sandbox's process
 * (its own pid namespace): the group is found by the container's id where
 * the engine puts it, in the host's tree mounted into the server's
 * container (-v /sys/fs/cgroup:/sys/fs/cgroup).
 */
Test(cgroup, found_by_id_where_its_process_is_not_seen)
{
	struct cgroup cg;

	v1_tree();
	cr_assert_eq(cgroup_find(&cg, tt_at("proc/nonesuch"),
	                 tt_at("proc/mountinfo"), tt_root, ID),
	    0);
	cr_expect_eq(cg.version, 1);
	cr_expect_str_eq(cg.mem, tt_at("sys/fs/cgroup/memory/docker/" ID));
	/* A pid that is another process here: its groups are not taken. */
	put("proc/cgroup", "4:memory:/user.slice\n3:cpu,cpuacct:/user.slice\n");
	cr_assert_eq(cgroup_find(&cg, tt_at("proc/cgroup"),
	                 tt_at("proc/mountinfo"), tt_root, ID),
	    0);
	cr_expect_str_eq(cg.cpu, tt_at("sys/fs/cgroup/cpu,cpuacct/docker/" ID));
	/* Only a full id is looked for by its place. */
	cr_expect_eq(cgroup_find(&cg, tt_at("proc/nonesuch"),
	                 tt_at("proc/mountinfo"), tt_root, "3f2a9c1b7d5e"),
	    -1);
}

Test(cgroup, found_by_id_under_systemd_on_v2)
{
	struct cgroup cg;

	put("proc/mountinfo", "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 "
	                      "cgroup2 rw,nsdelegate\n");
	put("sys/fs/cgroup/system.slice/docker-" ID ".scope/cpu.stat",
	    "usage_usec 5\n");
	put("sys/fs/cgroup/system.slice/docker-" ID ".scope/memory.current",
	    "4096\n");
	cr_assert_eq(cgroup_find(&cg, tt_at("proc/nonesuch"),
	                 tt_at("proc/mountinfo"), tt_root, ID),
	    0);
	cr_expect_eq(cg.version, 2);
	cr_expect_str_eq(
	    cg.mem, tt_at("sys/fs/cgroup/system.slice/docker-" ID ".scope"));
}

/* Docker's own mount in a container shows only that container's group:
 * the sandbox's is not there to find. */
Test(cgroup, a_containers_own_view_has_no_other_group)
{
	struct cgroup cg;

	put("proc/mountinfo",
	    "218 217 0:31 /docker/" OTHER " /sys/fs/cgroup/cpu,cpuacct ro - "
	    "cgroup cgroup rw,cpu,cpuacct\n"
	    "219 217 0:32 /docker/" OTHER " /sys/fs/cgroup/memory ro - cgroup "
	    "cgroup rw,memory\n");
	put("sys/fs/cgroup/memory/memory.max_usage_in_bytes", "1\n");
	put("sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", "1\n");
	cr_expect_eq(cgroup_find(&cg, tt_at("proc/nonesuch"),
	                 tt_at("proc/mountinfo"), tt_root, ID),
	    -1);
}
