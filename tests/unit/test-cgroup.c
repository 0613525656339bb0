/*
 * Unit tests of the cgroup lookup and counters (worker/cgroup.c) on fake
 * trees: the membership and mount tables of cgroup v1 (the engine's
 * cgroupfs driver), v2 (the systemd driver) and hybrid hosts, as the
 * kernel writes them.  This host's own (v1) case also runs for real in
 * the integration tests.
 */
#include <sys/stat.h>

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
