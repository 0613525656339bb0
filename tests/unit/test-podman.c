/*
 * What a create needs on Podman's compatible API (engine/podman.c and
 * docker-spec.c's options): the seccomp profile as a file, no tmpfs owner
 * in the options (an archive sets it after the start), an nproc ulimit
 * that raises nothing.
 */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <criterion/criterion.h>

#include "docker.h"
#include "engine.h"
#include "podman.h"
#include "tmptree.h"

extern const char seccomp_profile[];

static const char *const cmd[] = {"sleep", "60", NULL};

static void
spec_init(struct engine_spec *spec)
{
	memset(spec, 0, sizeof *spec);
	spec->image = "img";
	spec->cmd = cmd;
	spec->user = "65533:65533";
	spec->workdir = "/app";
	spec->network = "none";
	spec->nofile = 1024;
	spec->fsize_bytes = 1 << 20;
	spec->tmpfs[0] = (struct engine_tmpfs){"/tmp", 64, 0, -1, 01777};
	spec->tmpfs[1] = (struct engine_tmpfs){"/app", 128, 1, 4321, 0755};
	spec->ntmpfs = 2;
}

/* HostConfig's member of the body, as a string. */
static const char *
host(json_object *body, const char *key)
{
	json_object *h, *v;

	cr_assert(json_object_object_get_ex(body, "HostConfig", &h));
	if (!json_object_object_get_ex(h, key, &v))
		return "";
	return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
}

Test(podman, docker_body_is_as_before)
{
	struct engine_spec spec;
	json_object *o;

	spec_init(&spec);
	o = docker_spec_json(&spec);
	cr_expect(strstr(host(o, "Tmpfs"), "uid=4321,gid=4321") != NULL);
	cr_expect(strstr(host(o, "SecurityOpt"), "defaultAction") != NULL);
	cr_expect(strstr(host(o, "Ulimits"), "nproc") == NULL);
	json_object_put(o);
}

Test(podman, body_names_the_profile_file_and_no_tmpfs_owner)
{
	struct docker_spec_opts opts = {"/run/x/seccomp.json", 0, 32768};
	struct engine_spec spec;
	json_object *o;

	spec_init(&spec);
	o = docker_spec_json_opts(&spec, &opts);
	cr_expect(strstr(host(o, "SecurityOpt"),
	              "\"seccomp=\\/run\\/x\\/seccomp.json\"") != NULL,
	    "%s", host(o, "SecurityOpt"));
	cr_expect(strstr(host(o, "SecurityOpt"), "no-new-privileges") != NULL);
	cr_expect(
	    strstr(host(o, "Tmpfs"), "uid=") == NULL, "%s", host(o, "Tmpfs"));
	cr_expect(strstr(host(o, "Tmpfs"), "mode=0755") != NULL);
	cr_expect(
	    strstr(host(o, "Ulimits"),
	        "{\"Name\":\"nproc\",\"Soft\":32768,\"Hard\":32768}") != NULL,
	    "%s", host(o, "Ulimits"));
	json_object_put(o);
}

Test(podman, nproc_is_the_lower_of_pid_max_and_the_hard_limit)
{
	cr_expect_eq(podman_nproc(32768, 96369), 32768);
	cr_expect_eq(podman_nproc(4194304, 62181), 62181);
	cr_expect_eq(podman_nproc(32768, 0), 32768); /* unlimited */
	cr_expect_eq(podman_nproc(0, 1000), 1000);
	cr_expect_eq(podman_nproc(0, 0), 0);
	cr_expect_gt(podman_nproc_here(), 0);
}

Test(podman, profile_is_written_once_read_only)
{
	struct stat st;
	char *path, *again, buf[64];
	FILE *f;

	cr_expect_null(podman_seccomp_file(NULL));
	tt_make("podman");
	path = podman_seccomp_file(tt_root);
	cr_assert_not_null(path);
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0444);
	cr_expect_eq((size_t)st.st_size, strlen(seccomp_profile));
	cr_assert_not_null(f = fopen(path, "r"));
	cr_assert_not_null(fgets(buf, sizeof buf, f));
	fclose(f);
	cr_expect_eq(strncmp(buf, seccomp_profile, strlen(buf)), 0);
	again = podman_seccomp_file(tt_root);
	cr_expect_str_eq(again, path);
	free(again);
	free(path);
	tt_remove();
}

Test(podman, owner_archive_is_one_directory_of_that_owner)
{
	struct archive *a;
	struct archive_entry *e;
	size_t len;
	void *buf;
	int n = 0;

	cr_assert_eq(podman_owner_tar(4321, 0755, &buf, &len), 0);
	cr_expect_eq(len % 512, 0);
	a = archive_read_new();
	archive_read_support_format_tar(a);
	cr_assert_eq(archive_read_open_memory(a, buf, len), ARCHIVE_OK);
	while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
		n++;
		cr_expect_str_eq(archive_entry_pathname(e), "./");
		cr_expect_eq(archive_entry_filetype(e), AE_IFDIR);
		cr_expect_eq(archive_entry_uid(e), 4321);
		cr_expect_eq(archive_entry_gid(e), 4321);
		cr_expect_eq(archive_entry_perm(e), 0755);
	}
	cr_expect_eq(n, 1);
	archive_read_free(a);
	free(buf);
}

Test(podman, owners_are_kept_by_id_until_the_container_goes)
{
	struct engine_spec spec;
	struct podman_owners *o;
	const struct podman_owners *got;
	const char *path;
	size_t len;
	void *buf;
	int key1, key2;

	spec_init(&spec);
	spec.tmpfs[1].uid = -1;
	cr_expect_null(podman_owners_new(&spec)); /* no owner: nothing */
	spec.tmpfs[1].uid = 4321;
	cr_assert_not_null(o = podman_owners_new(&spec));
	cr_expect_eq(podman_owners_count(o), 1);
	podman_owners_keep(o, &key1, "c1");
	cr_assert_not_null(got = podman_owners_find("c1"));
	cr_assert_eq(podman_owners_tar(got, 0, &path, &buf, &len), 0);
	cr_expect_str_eq(path, "/app");
	free(buf);
	podman_owners_keep(podman_owners_new(&spec), &key2, "c2");
	podman_owners_drop("c1");
	cr_expect_null(podman_owners_find("c1"));
	cr_expect_not_null(podman_owners_find("c2"));
	podman_owners_drop_key(&key1);
	cr_expect_not_null(podman_owners_find("c2"));
	podman_owners_drop_key(&key2);
	cr_expect_null(podman_owners_find("c2"));
	cr_expect_eq(podman_owners_count(NULL), 0);
}
