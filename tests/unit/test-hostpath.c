/* Unit tests of the host path policy (supervisor/host/hostpath.c). */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "hostpath.h"
#include "tmptree.h"

static struct hostpolicy hp;
static char err[1024];

static void
mkfile(const char *rel, const char *content)
{
	FILE *f;

	f = fopen(tt_at(rel), "w");
	cr_assert_not_null(f, "%s: %s", tt_at(rel), strerror(errno));
	fputs(content, f);
	fclose(f);
}

static void
mkdir_at(const char *rel)
{
	cr_assert_eq(
	    mkdir(tt_at(rel), 0755), 0, "%s: %s", rel, strerror(errno));
}

static char *
slurp(const char *rel)
{
	static char buf[4096];
	ssize_t n;
	int fd;

	fd = open(tt_at(rel), O_RDONLY);
	cr_assert_neq(fd, -1, "%s: %s", rel, strerror(errno));
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	cr_assert_geq(n, 0);
	buf[n] = '\0';
	return buf;
}

/* A tree: root/a (allowed) with f.txt and sub/, root/ab and root/b. */
static void
setup(void)
{
	tt_make("test-hostpath");
	mkdir_at("a");
	mkdir_at("a/sub");
	mkdir_at("ab");
	mkdir_at("b");
	mkfile("a/f.txt", "inside\n");
	mkfile("a/sub/g.txt", "inside too\n");
	mkfile("ab/f.txt", "next door\n");
	mkfile("b/secret", "outside\n");
	memset(&hp, 0, sizeof hp);
	err[0] = '\0';
}

static void
teardown(void)
{
	hostpolicy_free(&hp);
	tt_remove();
}

TestSuite(hostpath, .init = setup, .fini = teardown);

/* A policy allowing root/a only, cwd root/a. */
static void
allow_a(void)
{
	char *dirs[] = {(char *)tt_at("a")};

	cr_assert_eq(hostpolicy_init(&hp, dirs, 1, tt_at("a"), err, sizeof err),
	    0, "%s", err);
}

static char *
resolve(const char *path, int mode)
{
	err[0] = '\0';
	return hostpath_resolve(&hp, path, mode, err, sizeof err);
}

Test(hostpath, allows_a_file_inside)
{
	char *p;

	allow_a();
	p = resolve(tt_at("a/sub/g.txt"), HOSTPATH_EXISTING);
	cr_assert_not_null(p, "%s", err);
	cr_assert_str_eq(p, tt_at("a/sub/g.txt"));
	free(p);
	p = resolve(tt_at("a"), HOSTPATH_EXISTING);
	cr_assert_not_null(p, "%s", err);
	cr_assert_str_eq(p, tt_at("a"));
	free(p);
}

Test(hostpath, refuses_outside_and_says_what_to_do)
{
	allow_a();
	cr_assert_null(resolve(tt_at("b/secret"), HOSTPATH_EXISTING));
	cr_assert_not_null(
	    strstr(err, "is outside the allowed directories ("), "%s", err);
	cr_assert_not_null(strstr(err, tt_at("a")), "%s", err);
	cr_assert_not_null(strstr(err, "--allow-dir"), "%s", err);
	cr_assert_null(resolve("/etc/passwd", HOSTPATH_EXISTING));
	cr_assert_null(resolve("/", HOSTPATH_EXISTING));
}

Test(hostpath, refuses_a_sibling_sharing_the_prefix)
{
	allow_a();
	cr_assert_null(resolve(tt_at("ab/f.txt"), HOSTPATH_EXISTING));
	cr_assert_not_null(strstr(err, "outside"), "%s", err);
	cr_assert_null(resolve(tt_at("ab"), HOSTPATH_EXISTING));
	cr_assert_null(resolve(tt_at("ab/new"), HOSTPATH_CREATE));
}

Test(hostpath, refuses_dotdot_escape)
{
	char *p;

	allow_a();
	cr_assert_null(resolve(tt_at("a/../b/secret"), HOSTPATH_EXISTING));
	cr_assert_null(resolve("../b/secret", HOSTPATH_EXISTING));
	cr_assert_null(resolve("sub/../../b/new", HOSTPATH_CREATE));
	cr_assert_null(resolve("..", HOSTPATH_EXISTING));
	p = resolve("sub/../f.txt", HOSTPATH_EXISTING);
	cr_assert_not_null(p, "%s", err);
	cr_assert_str_eq(p, tt_at("a/f.txt"));
	free(p);
}

Test(hostpath, resolves_relative_paths_against_cwd)
{
	char *p;

	allow_a();
	p = resolve("f.txt", HOSTPATH_EXISTING);
	cr_assert_not_null(p, "%s", err);
	cr_assert_str_eq(p, tt_at("a/f.txt"));
	free(p);
	p = resolve("./sub/new.txt", HOSTPATH_CREATE);
	cr_assert_not_null(p, "%s", err);
	cr_assert_str_eq(p, tt_at("a/sub/new.txt"));
	free(p);
}

Test(hostpath, refuses_a_symlink_inside_pointing_outside)
{
	allow_a();
	cr_assert_eq(symlink(tt_at("b"), tt_at("a/escape")), 0);
	cr_assert_eq(symlink(tt_at("b/secret"), tt_at("a/secret")), 0);
	cr_assert_null(resolve(tt_at("a/escape/secret"), HOSTPATH_EXISTING));
	cr_assert_not_null(strstr(err, "outside"), "%s", err);
	cr_assert_null(resolve(tt_at("a/escape"), HOSTPATH_EXISTING));
	cr_assert_null(resolve("secret", HOSTPATH_EXISTING));
	cr_assert_null(resolve("escape/new", HOSTPATH_CREATE));
}

Test(hostpath, follows_a_symlink_that_stays_inside)
{
	char *p;

	allow_a();
	cr_assert_eq(symlink("sub", tt_at("a/alias")), 0);
	p = resolve("alias/g.txt", HOSTPATH_EXISTING);
	cr_assert_not_null(p, "%s", err);
	cr_assert_str_eq(p, tt_at("a/sub/g.txt"));
	free(p);
}

Test(hostpath, create_accepts_a_new_name)
{
	char *p;

	allow_a();
	p = resolve(tt_at("a/new.txt"), HOSTPATH_CREATE);
	cr_assert_not_null(p, "%s", err);
	cr_assert_str_eq(p, tt_at("a/new.txt"));
	free(p);
	/* An existing regular file is a valid destination too. */
	p = resolve(tt_at("a/f.txt"), HOSTPATH_CREATE);
	cr_assert_not_null(p, "%s", err);
	free(p);
}

Test(hostpath, create_refuses_a_symlink_as_final_component)
{
	allow_a();
	cr_assert_eq(symlink(tt_at("b/secret"), tt_at("a/link")), 0);
	cr_assert_null(resolve(tt_at("a/link"), HOSTPATH_CREATE));
	cr_assert_not_null(strstr(err, "symbolic link"), "%s", err);
	/* Dangling or pointing inside: still refused. */
	cr_assert_eq(symlink("nowhere", tt_at("a/dangling")), 0);
	cr_assert_null(resolve("dangling", HOSTPATH_CREATE));
	cr_assert_eq(symlink("f.txt", tt_at("a/tofile")), 0);
	cr_assert_null(resolve("tofile", HOSTPATH_CREATE));
}

Test(hostpath, create_refuses_dot_names_and_missing_parents)
{
	allow_a();
	cr_assert_null(resolve(tt_at("a/sub/."), HOSTPATH_CREATE));
	cr_assert_null(resolve(tt_at("a/sub/.."), HOSTPATH_CREATE));
	cr_assert_null(resolve(tt_at("a/sub/"), HOSTPATH_CREATE));
	cr_assert_not_null(strstr(err, "file name"), "%s", err);
	cr_assert_null(resolve(tt_at("a/nodir/new.txt"), HOSTPATH_CREATE));
	cr_assert_not_null(strstr(err, "does not exist"), "%s", err);
	cr_assert_null(resolve("", HOSTPATH_CREATE));
}

Test(hostpath, does_not_reveal_whether_an_outside_path_exists)
{
	allow_a();
	cr_assert_null(resolve(tt_at("b/missing"), HOSTPATH_EXISTING));
	cr_assert_not_null(strstr(err, "outside"), "%s", err);
	cr_assert_null(resolve(tt_at("b/nodir/x"), HOSTPATH_CREATE));
	cr_assert_not_null(strstr(err, "outside"), "%s", err);
	cr_assert_null(resolve(tt_at("a/missing"), HOSTPATH_EXISTING));
	cr_assert_not_null(strstr(err, "does not exist"), "%s", err);
}

Test(hostpath, empty_policy_tells_how_to_allow)
{
	cr_assert_eq(hostpolicy_init(&hp, NULL, 0, "/", err, sizeof err), 0);
	cr_assert(hostpolicy_empty(&hp));
	cr_assert_null(resolve(tt_at("a/f.txt"), HOSTPATH_EXISTING));
	cr_assert_str_eq(err,
	    "no host directory is allowed: start the server with --allow-dir "
	    "DIR (or MCP_SANDBOXD_ALLOW_DIRS)");
}

Test(hostpath, defaults_to_cwd)
{
	char *p;

	cr_assert_eq(
	    hostpolicy_init(&hp, NULL, 0, tt_at("a/sub/.."), err, sizeof err),
	    0, "%s", err);
	cr_assert_not(hostpolicy_empty(&hp));
	cr_assert_eq(hp.ndirs, 1);
	cr_assert_str_eq(hp.dirs[0], tt_at("a"));
	p = resolve("f.txt", HOSTPATH_EXISTING);
	cr_assert_not_null(p, "%s", err);
	free(p);
	cr_assert_null(resolve(tt_at("b/secret"), HOSTPATH_EXISTING));
}

Test(hostpath, root_as_cwd_allows_nothing)
{
	cr_assert_eq(hostpolicy_init(&hp, NULL, 0, "/", err, sizeof err), 0);
	cr_assert(hostpolicy_empty(&hp));
}

Test(hostpath, home_as_cwd_allows_nothing)
{
	cr_assert_eq(setenv("HOME", tt_at("a"), 1), 0);
	cr_assert_eq(
	    hostpolicy_init(&hp, NULL, 0, tt_at("a"), err, sizeof err), 0);
	cr_assert(hostpolicy_empty(&hp));
	hostpolicy_free(&hp);
	/* Below a home is a project: allowed. */
	cr_assert_eq(
	    hostpolicy_init(&hp, NULL, 0, tt_at("a/sub"), err, sizeof err), 0);
	cr_assert_not(hostpolicy_empty(&hp));
}

Test(hostpath, explicit_dirs_are_canonical_and_deduplicated)
{
	char *dirs[] = {
	    (char *)tt_at("a/sub/.."), (char *)tt_at("a"), (char *)tt_at("b/")};

	cr_assert_eq(
	    hostpolicy_init(&hp, dirs, 3, "/", err, sizeof err), 0, "%s", err);
	cr_assert_eq(hp.ndirs, 2);
	cr_assert_str_eq(hp.dirs[0], tt_at("a"));
	cr_assert_str_eq(hp.dirs[1], tt_at("b"));
}

Test(hostpath, init_refuses_a_missing_dir_or_a_file)
{
	char *missing[] = {(char *)tt_at("nope")};
	char *file[] = {(char *)tt_at("a/f.txt")};

	cr_assert_eq(
	    hostpolicy_init(&hp, missing, 1, "/", err, sizeof err), -1);
	cr_assert_not_null(strstr(err, "nope"), "%s", err);
	cr_assert_eq(hostpolicy_init(&hp, file, 1, "/", err, sizeof err), -1);
	cr_assert_not_null(strstr(err, "not a directory"), "%s", err);
}

Test(hostpath, open_new_creates_a_file)
{
	int fd;

	fd = hostpath_open_new(tt_at("a"), "new.txt", 0, err, sizeof err);
	cr_assert_neq(fd, -1, "%s", err);
	cr_assert_eq(write(fd, "data", 4), 4);
	close(fd);
	cr_assert_str_eq(slurp("a/new.txt"), "data");
}

Test(hostpath, open_new_refuses_an_existing_file_without_overwrite)
{
	cr_assert_eq(
	    hostpath_open_new(tt_at("a"), "f.txt", 0, err, sizeof err), -1);
	cr_assert_not_null(strstr(err, "already exists"), "%s", err);
	cr_assert_str_eq(slurp("a/f.txt"), "inside\n");
}

Test(hostpath, open_new_overwrites_a_regular_file_on_request)
{
	int fd;

	fd = hostpath_open_new(tt_at("a"), "f.txt", 1, err, sizeof err);
	cr_assert_neq(fd, -1, "%s", err);
	cr_assert_eq(write(fd, "new", 3), 3);
	close(fd);
	cr_assert_str_eq(slurp("a/f.txt"), "new");
}

Test(hostpath, open_new_refuses_a_symlink_even_with_overwrite)
{
	cr_assert_eq(symlink(tt_at("b/secret"), tt_at("a/link")), 0);
	cr_assert_eq(symlink(tt_at("b/created"), tt_at("a/dangling")), 0);
	cr_assert_eq(
	    hostpath_open_new(tt_at("a"), "link", 1, err, sizeof err), -1);
	cr_assert_not_null(strstr(err, "symbolic link"), "%s", err);
	cr_assert_eq(
	    hostpath_open_new(tt_at("a"), "link", 0, err, sizeof err), -1);
	cr_assert_eq(
	    hostpath_open_new(tt_at("a"), "dangling", 1, err, sizeof err), -1);
	cr_assert_eq(
	    hostpath_open_new(tt_at("a"), "dangling", 0, err, sizeof err), -1);
	cr_assert_str_eq(slurp("b/secret"), "outside\n");
	cr_assert_eq(access(tt_at("b/created"), F_OK), -1);
}

Test(hostpath, open_new_refuses_a_fifo_or_directory_without_blocking)
{
	cr_assert_eq(mkfifo(tt_at("a/fifo"), 0644), 0);
	cr_assert_eq(
	    hostpath_open_new(tt_at("a"), "fifo", 1, err, sizeof err), -1);
	cr_assert_not_null(strstr(err, "not a regular file"), "%s", err);
	cr_assert_eq(
	    hostpath_open_new(tt_at("a"), "sub", 1, err, sizeof err), -1);
}

Test(hostpath, open_new_refuses_a_symlinked_dir_and_bad_names)
{
	cr_assert_eq(symlink(tt_at("b"), tt_at("a/escape")), 0);
	cr_assert_eq(
	    hostpath_open_new(tt_at("a/escape"), "x", 0, err, sizeof err), -1);
	cr_assert_eq(access(tt_at("b/x"), F_OK), -1);
	cr_assert_eq(
	    hostpath_open_new(tt_at("a"), "../x", 0, err, sizeof err), -1);
	cr_assert_eq(
	    hostpath_open_new(tt_at("a"), "..", 0, err, sizeof err), -1);
	cr_assert_eq(hostpath_open_new(tt_at("a"), "", 0, err, sizeof err), -1);
}
