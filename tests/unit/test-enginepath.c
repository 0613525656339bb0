/*
 * Unit tests of how a server that is a container finds the engine's paths
 * of its own files: its id from a line of /proc/self/mountinfo as Docker
 * and Podman write them (common/procinfo.c), and a path through its
 * mounts as the engine's inspection lists them
 * (supervisor/sandbox/enginepath.c).  The whole, a server in its image
 * binding the agent from a volume, runs for real in the image stage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "enginepath.h"
#include "procinfo.h"

#define ID "3f2a9c1b7d5e40c1a8f6b2d9e0c4a7b1f3e5d2c6a9b8c7d0e1f2a3b4c5d6e7f8"

static int
container_of(const char *line, char *id)
{
	return proc_mountinfo_container(line, id, 65);
}

Test(procinfo, a_containers_own_files_name_it)
{
	char id[65];

	/* Docker, /var/lib/docker on the root filesystem. */
	cr_assert_eq(container_of("1203 1190 8:1 /var/lib/docker/containers/" ID
	                          "/hostname /etc/hostname rw,relatime - ext4 "
	                          "/dev/sda1 rw\n",
	                 id),
	    0);
	cr_assert_str_eq(id, ID);
	/* Docker, its own filesystem; resolv.conf. */
	memset(id, 0, sizeof id);
	cr_assert_eq(container_of("50 40 253:1 /containers/" ID
	                          "/resolv.conf /etc/resolv.conf rw - xfs "
	                          "/dev/vdb rw\n",
	                 id),
	    0);
	cr_assert_str_eq(id, ID);
	/* Podman. */
	memset(id, 0, sizeof id);
	cr_assert_eq(
	    container_of(
	        "700 690 0:45 /containers/storage/overlay-containers/" ID
	        "/userdata/hostname /etc/hostname rw - tmpfs tmpfs rw\n",
	        id),
	    0);
	cr_assert_str_eq(id, ID);
}

Test(procinfo, other_mounts_name_no_container)
{
	char id[65];

	/* The host: layers have 64 hex digits too, not at /etc/hostname. */
	cr_assert_eq(
	    container_of("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n", id), -1);
	cr_assert_eq(container_of("300 29 0:50 / /var/lib/docker/overlay2/" ID
	                          "/merged rw - overlay overlay rw\n",
	                 id),
	    -1);
	/* At /etc/hostname but no id, a short one, upper case, no slash. */
	cr_assert_eq(container_of("5 4 8:1 /srv/hostname /etc/hostname rw - "
	                          "ext4 /dev/sda1 rw\n",
	                 id),
	    -1);
	cr_assert_eq(container_of("5 4 8:1 /containers/3f2a9c/hostname "
	                          "/etc/hostname rw - ext4 /dev/sda1 rw\n",
	                 id),
	    -1);
	cr_assert_eq(container_of("5 4 8:1 /containers/3F2A9C1B7D5E40C1A8F6B2D9"
	                          "E0C4A7B1F3E5D2C6A9B8C7D0E1F2A3B4C5D6E7F8/"
	                          "hostname /etc/hostname rw - ext4 /dev/sda1 "
	                          "rw\n",
	                 id),
	    -1);
	cr_assert_eq(container_of("5 4 8:1 /mycontainers/" ID
	                          "/hostname /etc/hostname rw - ext4 /dev/sda1 "
	                          "rw\n",
	                 id),
	    -1);
	cr_assert_eq(
	    container_of("5 4 8:1 /containers/" ID " /etc/hostname", id), -1);
	/* Lines cut short. */
	cr_assert_eq(container_of("", id), -1);
	cr_assert_eq(container_of("5 4 8:1", id), -1);
	cr_assert_eq(
	    container_of("5 4 8:1 /containers/" ID "/hostname", id), -1);
	/* No room for the id. */
	cr_assert_eq(proc_mountinfo_container("1 1 8:1 /containers/" ID
	                                      "/hostname /etc/hostname rw\n",
	                 id, 64),
	    -1);
}

/* The mounts of a server's container, as its inspection lists them. */
static json_object *
mounts(void)
{
	return json_tokener_parse(
	    "[{\"Type\":\"bind\",\"Source\":\"/var/run/docker.sock\","
	    "\"Destination\":\"/var/run/docker.sock\"},"
	    "{\"Type\":\"volume\",\"Name\":\"abc\",\"Source\":"
	    "\"/var/lib/docker/volumes/abc/_data\",\"Destination\":"
	    "\"/run/mcp-sandboxd\"},"
	    "{\"Type\":\"bind\",\"Source\":\"/home/u/runtime/\","
	    "\"Destination\":\"/run/mcp-sandboxd/inner/\"},"
	    "{\"Type\":\"tmpfs\",\"Destination\":\"/scratch\"},"
	    "{\"Type\":\"bind\",\"Source\":\"relative\",\"Destination\":"
	    "\"/rel\"},"
	    "{\"Type\":\"bind\",\"Destination\":\"/nosource\"},"
	    "{\"Type\":\"npipe\",\"Source\":\"/p\",\"Destination\":\"/pipe\"}]");
}

static void
expect(json_object *m, const char *path, const char *want)
{
	char *got = enginepath_translate(m, path);

	if (want == NULL)
		cr_expect_null(got, "%s: %s", path, got);
	else {
		cr_assert_not_null(got, "%s", path);
		cr_expect_str_eq(got, want, "%s", path);
	}
	free(got);
}

Test(enginepath, a_path_on_a_mount_is_its_source_and_the_rest)
{
	json_object *m = mounts();

	expect(m, "/run/mcp-sandboxd/0a1b/agent",
	    "/var/lib/docker/volumes/abc/_data/0a1b/agent");
	expect(m, "/run/mcp-sandboxd", "/var/lib/docker/volumes/abc/_data");
	/* The longest destination decides; trailing slashes are one. */
	expect(m, "/run/mcp-sandboxd/inner/c/x", "/home/u/runtime/c/x");
	expect(m, "/run/mcp-sandboxd/inner", "/home/u/runtime");
	expect(m, "/var/run/docker.sock", "/var/run/docker.sock");
	json_object_put(m);
}

Test(enginepath, a_path_on_no_mount_has_none)
{
	json_object *m = mounts();

	/* A component that only begins like a mount's. */
	expect(m, "/run/mcp-sandboxd2/agent", NULL);
	expect(m, "/tmp/x", NULL);
	/* Mounts without a host source: tmpfs, relative, none, npipe. */
	expect(m, "/scratch/a", NULL);
	expect(m, "/rel/a", NULL);
	expect(m, "/nosource/a", NULL);
	expect(m, "/pipe/a", NULL);
	/* Not absolute, or climbing out. */
	expect(m, "run/mcp-sandboxd/a", NULL);
	expect(m, "/run/mcp-sandboxd/../etc/passwd", NULL);
	expect(NULL, "/run/mcp-sandboxd/a", NULL);
	json_object_put(m);
}

Test(enginepath, a_root_mount_takes_every_path)
{
	json_object *m = json_tokener_parse(
	    "[{\"Type\":\"bind\",\"Source\":\"/\",\"Destination\":\"/\"},"
	    "{\"Type\":\"bind\",\"Source\":\"/srv/host\",\"Destination\":"
	    "\"/data\"}]");

	expect(m, "/run/x", "/run/x");
	expect(m, "/data/y", "/srv/host/y");
	json_object_put(m);
	m = json_tokener_parse("[{\"Type\":\"bind\",\"Source\":\"/srv/r\","
	                       "\"Destination\":\"/\"}]");
	expect(m, "/run/x", "/srv/r/run/x");
	expect(m, "/", "/srv/r");
	json_object_put(m);
}
