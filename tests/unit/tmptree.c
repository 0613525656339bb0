/* A temporary directory tree for a unit test (tmptree.h). */
#include <sys/stat.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "tmptree.h"

char tt_root[PATH_MAX];

void
tt_make(const char *name)
{
	char tmpl[PATH_MAX];

	snprintf(tmpl, sizeof tmpl, "/tmp/%s-XXXXXX", name);
	cr_assert_not_null(mkdtemp(tmpl), "mkdtemp %s", tmpl);
	cr_assert_not_null(realpath(tmpl, tt_root));
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void
tt_remove(void)
{
	if (tt_root[0] != '\0')
		nftw(tt_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	tt_root[0] = '\0';
}

const char *
tt_at(const char *rel)
{
	static char bufs[8][2 * PATH_MAX];
	static int n;
	char *b = bufs[n++ % 8];

	snprintf(b, sizeof bufs[0], "%s/%s", tt_root, rel);
	return b;
}
