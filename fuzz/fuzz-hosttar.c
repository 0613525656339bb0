/*
 * Fuzz the host-side tar extractor (supervisor/host/hosttar.c) with archives
 * as a sandbox could send them (copy_file_from_sandbox, copy_project
 * back): the extraction ends with a result or an error, never a crash,
 * and writes only regular files and directories, only under its
 * destination.  Input: an archive (or anything else).
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "hosttar.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static char base[64], dest[128];

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	chmod(path, 0700);
	return remove(path) == -1 && errno != ENOENT ? -1 : 0;
}

static void
cleanup(void)
{
	if (base[0] != '\0')
		nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Only regular files and directories under dest. */
static int
check_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)path;
	(void)f;
	fuzz_check(flag != FTW_SL && flag != FTW_SLN,
	    "hosttar: a symbolic link written");
	fuzz_check(S_ISREG(st->st_mode) || S_ISDIR(st->st_mode),
	    "hosttar: neither a file nor a directory written");
	fuzz_check((st->st_mode & (S_ISUID | S_ISGID)) == 0,
	    "hosttar: a setuid or setgid bit written");
	return 0;
}

/* Nothing but dest (and its leftovers, removed) in base. */
static void
check_base(void)
{
	struct dirent *e;
	DIR *d;

	d = opendir(base);
	fuzz_check(d != NULL, "hosttar: base directory gone");
	while ((e = readdir(d)) != NULL)
		fuzz_check(strcmp(e->d_name, ".") == 0 ||
		               strcmp(e->d_name, "..") == 0 ||
		               strcmp(e->d_name, "dest") == 0,
		    "hosttar: wrote outside its destination");
	closedir(d);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tar_limits lim = {1024 * 1024, 200};
	struct tar_in *t;
	struct pollfd pfd;
	json_object *sum = NULL;
	char err[256];
	size_t off = 0;
	ssize_t n;
	int rc;

	if (base[0] == '\0') {
		snprintf(base, sizeof base, "%s/fuzz-hosttar.XXXXXX",
		    getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
		fuzz_check(mkdtemp(base) != NULL, "mkdtemp");
		snprintf(dest, sizeof dest, "%s/dest", base);
		atexit(cleanup);
	}
	fuzz_check(mkdir(dest, 0700) == 0, "mkdir dest");
	t = tar_in_new(dest, &lim, size > 0 && data[0] & 1, err, sizeof err);
	fuzz_check(t != NULL, "tar_in_new");
	while (off < size) {
		n = write(tar_in_fd(t), data + off, size - off);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == -1 && errno == EAGAIN) {
			pfd.fd = tar_in_fd(t);
			pfd.events = POLLOUT;
			poll(&pfd, 1, 100);
			continue;
		}
		break; /* EPIPE: the extraction ended (an error) */
	}
	tar_in_close_input(t);
	pfd.fd = tar_in_done_fd(t);
	pfd.events = POLLIN;
	/* A hang is libFuzzer's -timeout to report. */
	while (poll(&pfd, 1, -1) == -1 && errno == EINTR)
		;
	rc = tar_in_result(t, &sum);
	fuzz_check(rc == 0 || (rc == -1 && tar_in_error(t) != NULL &&
	                          tar_in_error(t)[0] != '\0'),
	    "hosttar: a failure without a message");
	json_object_put(sum);
	tar_in_free(t);
	check_base();
	nftw(dest, check_one, 16, FTW_PHYS);
	nftw(dest, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
