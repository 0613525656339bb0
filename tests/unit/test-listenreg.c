/* Unit tests of the ports this server listens on (common/listenreg.c). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "listenreg.h"

static char dir[64];

static void
setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/listenreg-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void
teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

Test(listenreg, added_until_removed, .init = setup, .fini = teardown)
{
	cr_expect_eq(listenreg_has(dir, 8080), 0);
	cr_assert_eq(listenreg_add(dir, 8080), 0);
	cr_expect_eq(listenreg_has(dir, 8080), 1);
	/* A port is not a prefix of another. */
	cr_expect_eq(listenreg_has(dir, 80), 0);
	cr_expect_eq(listenreg_has(dir, 808), 0);
	listenreg_del(dir, 8080);
	cr_expect_eq(listenreg_has(dir, 8080), 0);
}

Test(listenreg, another_process_port_counts, .init = setup, .fini = teardown)
{
	char path[128];
	int fd;

	/* Another process of the server listens on 9000 (its file). */
	snprintf(path, sizeof path, "%s/9000-%d", dir, (int)getpid() + 1);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_expect_eq(listenreg_has(dir, 9000), 1);
	/* Ours goes, theirs stays. */
	cr_assert_eq(listenreg_add(dir, 9000), 0);
	listenreg_del(dir, 9000);
	cr_expect_eq(listenreg_has(dir, 9000), 1);
}

Test(listenreg, unreadable_means_listened, .init = setup, .fini = teardown)
{
	char gone[96];

	snprintf(gone, sizeof gone, "%s/nowhere", dir);
	cr_expect_eq(listenreg_has(gone, 8080), 1);
	cr_expect_eq(listenreg_has(NULL, 8080), 0);
	cr_expect_eq(listenreg_add(NULL, 8080), 0);
}
