/*
 * Adversarial: copy_file_from_sandbox of paths the sandbox controls.
 * Whatever the sandbox puts there (links to /proc and /dev, a FIFO, a file
 * swapped or growing while read, a tree over the cap, execute bits, .git,
 * hostile names, a tar that stops), the host gets at most the cap, nothing
 * partial, no execute bit and no hostile name; the call ends in seconds
 * with an error that says why.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "adv.h"

#define MiB (1024 * 1024)

static char g_dir[64]; /* the allowed host directory of the test */

static const char *
allowed(void)
{
	if (g_dir[0] == '\0') {
		snprintf(g_dir, sizeof g_dir, "/tmp/mcp-copyout-%d-XXXXXX",
		    (int)getpid());
		cr_assert(
		    mkdtemp(g_dir) != NULL, "mkdtemp: %s", strerror(errno));
	}
	return g_dir;
}

static void
cleanup(void)
{
	if (g_dir[0] != '\0')
		h_rm_rf(g_dir);
	g_dir[0] = '\0';
}

/* A path in the allowed directory (static buffer, one at a time). */
static const char *
host(const char *name)
{
	static char buf[256];

	snprintf(buf, sizeof buf, "%s/%s", allowed(), name);
	return buf;
}

/* Sizes of the regular files and number of entries below the dir. */
static long long g_bytes;
static int g_entries;

static int
tally(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)flag;
	if (ftw->level == 0)
		return 0;
	g_entries++;
	if (S_ISREG(st->st_mode))
		g_bytes += st->st_size;
	return 0;
}

static long long
host_bytes(int *entries)
{
	g_bytes = 0;
	g_entries = 0;
	nftw(allowed(), tally, 16, FTW_PHYS);
	if (entries != NULL)
		*entries = g_entries;
	return g_bytes;
}

/* copy_file_from_sandbox with extra arguments (JSON text or NULL). */
static json_object *
copy(struct h_server *s, const char *cid, const char *src, const char *dest,
    const char *extra, long long *ms)
{
	json_object *a;
	long long t0 = h_now_ms();
	json_object *r;

	a = extra != NULL ? h_parse(extra) : json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(
	    a, "container_src_path", json_object_new_string(src));
	if (dest != NULL)
		json_object_object_add(
		    a, "local_dest_path", json_object_new_string(dest));
	r = h_call_tool_obj(s, "copy_file_from_sandbox", a, 120000);
	if (ms != NULL)
		*ms = h_now_ms() - t0;
	fprintf(stderr, "copy %s: isError %d, %lld ms: %.300s\n", src,
	    h_is_error(r), h_now_ms() - t0, h_text(r));
	return r;
}

/* A copy that must fail with why in its text; nothing new on the host. */
static void
expect_fails(struct h_server *s, const char *cid, const char *src,
    const char *extra, const char *why)
{
	json_object *r;
	int before, after;

	host_bytes(&before);
	r = copy(s, cid, src, host("out"), extra, NULL);
	cr_expect(h_is_error(r), "copy of %s succeeded: %s", src,
	    json_object_to_json_string(r));
	cr_expect(h_contains(h_text(r), why), "copy of %s: \"%s\" not in: %s",
	    src, why, h_text(r));
	host_bytes(&after);
	cr_expect_eq(after, before, "copy of %s left %d new host entries", src,
	    after - before);
	json_object_put(r);
}

/* The listed skip of path (in "skipped"), or NULL. */
static json_object *
skipped(json_object *r, const char *path)
{
	json_object *list = h_get(r, "structuredContent.skipped"), *o;
	size_t i;

	for (i = 0; list != NULL && i < json_object_array_length(list); i++) {
		o = json_object_array_get_idx(list, i);
		if (h_str(o, "path") != NULL &&
		    strcmp(h_str(o, "path"), path) == 0)
			return o;
	}
	return NULL;
}

static void
end(struct h_server *s, char *cid)
{
	adv_alive(s, cid);
	h_stop(s, cid);
	free(cid);
	adv_finish(s);
}

Test(copyout, links_fifos_and_devices_are_never_read, .timeout = 240,
    .fini = cleanup)
{
	struct h_server *s;
	json_object *r;
	char *cid;
	long id;
	int i, ok = 0, failed = 0;
	long long bytes;
	struct stat st;

	s = adv_start("--allow-dir", allowed(), NULL);
	cid = h_create(s, NULL);
	free(h_exec_ok(s, cid,
	    "cd /app && ln -s /proc/self/pagemap pm && ln -s /dev/zero zero "
	    "&& mkfifo ff && mkdir d && ln -s /dev/zero d/zero && "
	    "ln -s /proc/self/pagemap d/pm && mkfifo d/ff && echo ok > d/ok"));

	expect_fails(s, cid, "/app/pm", "{\"max_bytes\":1048576}",
	    "not a regular file (a symlink)");
	expect_fails(s, cid, "/app/zero", "{\"max_bytes\":1048576}",
	    "not a regular file (a symlink)");
	expect_fails(s, cid, "/app/ff", "{\"max_bytes\":1048576}",
	    "not a regular file (a fifo)");
	/* Named directly, the files of /proc and /dev: bounded. */
	expect_fails(s, cid, "/dev/zero", "{\"max_bytes\":1048576}",
	    "not a regular file (a device)");
	r = copy(s, cid, "/proc/self/pagemap", host("pagemap"),
	    "{\"max_bytes\":1048576}", NULL);
	cr_expect(h_is_error(r) || (stat(host("pagemap"), &st) == 0 &&
	                               st.st_size <= 1048576),
	    "pagemap: %s", h_text(r));
	json_object_put(r);
	unlink(host("pagemap"));

	/* In a tree: listed, not read. */
	r = copy(s, cid, "/app/d", host("d"), "{\"max_bytes\":1048576}", NULL);
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect(
	    skipped(r, "zero") != NULL &&
	        strcmp(h_str(skipped(r, "zero"), "reason"), "symlink") == 0,
	    "d/zero: %s", json_object_to_json_string(r));
	cr_expect(skipped(r, "pm") != NULL, "d/pm not listed");
	cr_expect(skipped(r, "ff") != NULL &&
	              strcmp(h_str(skipped(r, "ff"), "reason"), "fifo") == 0,
	    "d/ff not listed as a fifo");
	json_object_put(r);
	cr_expect_eq(host_bytes(NULL), 3, "only d/ok (3 bytes) on the host");
	h_rm_rf(host("d"));

	/* /dev/zero swapped in and out while the copies run. */
	id = h_send_exec(s, cid,
	    "cd /app && echo small > f0 && timeout 20 sh -c 'while :; do "
	    "ln -s /dev/zero s1 2>/dev/null; mv -f s1 swap; cp f0 s2; "
	    "mv -f s2 swap; done'; exit 0");
	usleep(500000);
	for (i = 0; i < 20; i++) {
		r = copy(s, cid, "/app/swap", host("swap"),
		    "{\"max_bytes\":65536,\"overwrite\":true}", NULL);
		if (h_is_error(r))
			failed++;
		else
			ok++;
		bytes = host_bytes(NULL);
		cr_expect_leq(bytes, 65536, "%lld bytes on the host", bytes);
		json_object_put(r);
	}
	fprintf(stderr, "swapped /dev/zero: %d copied (6 bytes), %d refused\n",
	    ok, failed);
	cr_expect_leq(host_bytes(NULL), 6, "only the small file, if any");
	json_object_put(h_tool_result(h_wait_id(s, id, 60000)));
	end(s, cid);
}

Test(copyout, growing_file_and_trees_over_the_cap, .timeout = 300,
    .fini = cleanup)
{
	struct h_server *s;
	json_object *r;
	char *cid, *out;
	long long bytes, ms;
	long id;
	int entries, i;

	s = adv_start("--allow-dir", allowed(), "--max-copy-out-mb", "4", NULL);
	cid = h_create(s, NULL);

	/* A file that grows while it is read (a writer in the background). */
	id = h_send_exec(s, cid,
	    "cd /app && timeout 25 sh -c 'while :; do head -c 1048576 "
	    "/dev/zero >> grow; sleep 0.05; done'; exit 0");
	do {
		usleep(300000);
		out = h_exec_ok(s, cid,
		    "stat -c %s /app/grow 2>/dev/null || "
		    "echo 0");
		bytes = atoll(out);
		free(out);
	} while (bytes < 3 * MiB);
	/* max_bytes below what it holds: refused by max_bytes. */
	r = copy(
	    s, cid, "/app/grow", host("grow"), "{\"max_bytes\":1048576}", &ms);
	cr_expect(h_is_error(r) && h_contains(h_text(r), "max_bytes"),
	    "growing file, max_bytes 1 MiB: %s", h_text(r));
	json_object_put(r);
	cr_expect_eq(host_bytes(&entries), 0);
	cr_expect_eq(entries, 0, "a partial file was left");
	/* No max_bytes: the operator's cap (4 MiB) as it grows past it;
	 * until then a copy (of the size tar found) may succeed. */
	for (i = 0;; i++) {
		cr_assert_lt(i, 100, "the file never grew past the cap");
		r = copy(s, cid, "/app/grow", host("grow"),
		    "{\"overwrite\":true}", &ms);
		bytes = host_bytes(&entries);
		cr_expect_leq(bytes, 4 * MiB, "%lld bytes on the host", bytes);
		cr_expect_leq(entries, 1, "a temporary file was left");
		if (h_is_error(r) &&
		    h_contains(h_text(r), "--max-copy-out-mb")) {
			json_object_put(r);
			break;
		}
		json_object_put(r);
		usleep(200000);
	}
	json_object_put(h_tool_result(h_wait_id(s, id, 60000)));
	unlink(host("grow"));

	/* A tree: 3 files of 1 MiB. */
	free(h_exec_ok(s, cid,
	    "mkdir -p /app/t/sub && for i in 1 2 3; do head -c 1048576 "
	    "/dev/urandom > /app/t/sub/f$i; done; rm -f /app/grow"));
	expect_fails(s, cid, "/app/t", "{\"max_bytes\":2097152}",
	    "archive larger than 2097152 bytes (max_bytes)");
	cr_expect_neq(access(host("out"), F_OK), 0, "the tree's root stayed");
	/* Within the cap: all of it. */
	r = copy(s, cid, "/app/t", host("t"), "{\"max_bytes\":4194304}", NULL);
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect_eq(h_int(r, "structuredContent.bytes"), 3 * MiB);
	json_object_put(r);
	cr_expect_eq(host_bytes(NULL), 3 * MiB);
	h_rm_rf(host("t"));
	/* The operator's cap. */
	free(h_exec_ok(s, cid,
	    "head -c 2097152 /dev/urandom > /app/t/sub/f4 && "
	    "head -c 5000000 /dev/urandom > /app/big"));
	expect_fails(s, cid, "/app/t", NULL, "(--max-copy-out-mb)");
	expect_fails(s, cid, "/app/big", NULL, "(--max-copy-out-mb)");
	/* max_bytes is at most the operator's cap. */
	expect_fails(s, cid, "/app/big", "{\"max_bytes\":5000000}",
	    "--max-copy-out-mb=4");
	cr_expect_eq(host_bytes(&entries), 0);
	cr_expect_eq(entries, 0);
	end(s, cid);
}

Test(copyout, no_exec_bits_and_no_version_control, .timeout = 240,
    .fini = cleanup)
{
	struct h_server *s;
	json_object *r;
	struct stat st;
	char *cid;
	int entries;

	s = adv_start("--allow-dir", allowed(), "--deny-copy-names", ".envrc",
	    "--deny-copy-names", "node_modules,.vscode", NULL);
	cid = h_create(s, NULL);
	free(h_exec_ok(s, cid,
	    "mkdir -p /app/r/.git/hooks /app/r/sub/.hg /app/r/node_modules/x "
	    "&& cd /app/r && printf '#!/bin/sh\\necho pwned\\n' > "
	    ".git/hooks/pre-commit && chmod 755 .git/hooks/pre-commit && "
	    "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' > "
	    ".git/config && echo x > sub/.hg/hgrc && echo x > .envrc && "
	    "echo x > node_modules/x/y && printf '#!/bin/sh\\n' > run.sh && "
	    "chmod 4755 run.sh && echo data > data.txt && "
	    "cp run.sh /app/tool && chmod 755 /app/tool"));
	r = copy(s, cid, "/app/r", host("r"), NULL, NULL);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	cr_expect(
	    skipped(r, ".git") != NULL &&
	        strcmp(h_str(skipped(r, ".git"), "reason"), "denied name") == 0,
	    ".git not listed: %s", json_object_to_json_string(r));
	cr_expect(skipped(r, "sub/.hg") != NULL, "sub/.hg not listed");
	cr_expect(skipped(r, ".envrc") != NULL, ".envrc not listed");
	cr_expect(skipped(r, "node_modules") != NULL, "node_modules");
	json_object_put(r);
	cr_expect_neq(lstat(host("r/.git"), &st), 0, ".git reached the host");
	cr_expect_neq(lstat(host("r/sub/.hg"), &st), 0);
	cr_expect_neq(lstat(host("r/.envrc"), &st), 0);
	cr_expect_eq(lstat(host("r/run.sh"), &st), 0);
	cr_expect_eq(
	    st.st_mode & 07777, 0644, "run.sh is %o", st.st_mode & 07777);
	host_bytes(&entries);
	cr_expect_eq(entries, 4, "r, r/sub, r/run.sh, r/data.txt");

	/* One file: 0755 comes out 0644. */
	r = copy(s, cid, "/app/tool", host("tool"), NULL, NULL);
	cr_expect(!h_is_error(r), "%s", h_text(r));
	json_object_put(r);
	cr_expect_eq(lstat(host("tool"), &st), 0);
	cr_expect_eq(st.st_mode & 0111, 0, "tool is %o", st.st_mode & 07777);
	/* preserve_mode needs the operator's --allow-exec-bits. */
	r = copy(s, cid, "/app/tool", host("tool2"), "{\"preserve_mode\":true}",
	    NULL);
	cr_expect(h_is_error(r) && h_contains(h_text(r), "--allow-exec-bits"),
	    "%s", h_text(r));
	json_object_put(r);
	cr_expect_neq(access(host("tool2"), F_OK), 0);
	end(s, cid);

	/* With it: kept when asked, never set-id. */
	s = adv_start("--allow-dir", allowed(), "--allow-exec-bits", NULL);
	cid = h_create(s, NULL);
	free(h_exec_ok(s, cid,
	    "printf '#!/bin/sh\\n' > /app/tool && chmod 4755 /app/tool"));
	r = copy(s, cid, "/app/tool", host("tool3"), "{\"preserve_mode\":true}",
	    NULL);
	cr_expect(!h_is_error(r), "%s", h_text(r));
	json_object_put(r);
	cr_expect_eq(lstat(host("tool3"), &st), 0);
	cr_expect_eq(
	    st.st_mode & 07777, 0755, "tool3 is %o", st.st_mode & 07777);
	end(s, cid);
}

Test(copyout, hostile_names_are_skipped_and_listed, .timeout = 240,
    .fini = cleanup)
{
	static const char *const bad[] = {"-rf", "new\nline", "esc\033[2J",
	    "rtl\xe2\x80\xaetxt.exe", "iso\xe2\x81\xa6x", "bad\xff"};
	struct h_server *s;
	json_object *r, *list, *o;
	char *cid;
	size_t i;
	int entries, hostile = 0;

	s = adv_start("--allow-dir", allowed(), NULL);
	cid = h_create(s, NULL);
	free(h_exec_ok(s, cid,
	    "mkdir -p /app/h && python3 -c \"import os\n"
	    "for n in [b'-rf', b'new\\\\nline', b'esc\\\\x1b[2J', "
	    "b'rtl\\\\xe2\\\\x80\\\\xaetxt.exe', b'iso\\\\xe2\\\\x81\\\\xa6x', "
	    "b'bad\\\\xff']:\n"
	    "    open(b'/app/h/' + n, 'w').write('x')\n"
	    "os.mkdir(b'/app/h/-d')\n"
	    "open(b'/app/h/-d/inner', 'w').write('x')\n"
	    "open(b'/app/h/fine.txt', 'w').write('fine')\n\" && ls /app/h | "
	    "wc -l"));
	r = copy(s, cid, "/app/h", host("h"), NULL, NULL);
	cr_assert(!h_is_error(r), "%s", h_text(r));
	list = h_get(r, "structuredContent.skipped");
	for (i = 0; list != NULL && i < json_object_array_length(list); i++) {
		o = json_object_array_get_idx(list, i);
		if (strcmp(h_str(o, "reason"), "hostile name") == 0) {
			hostile++;
			cr_expect(h_str(o, "detail") != NULL, "no why");
		}
	}
	cr_expect_eq(hostile, (int)(sizeof bad / sizeof bad[0]) + 1,
	    "hostile names listed: %s", json_object_to_json_string(list));
	cr_expect(skipped(r, "-rf") != NULL);
	cr_expect(skipped(r, "-d") != NULL);
	json_object_put(r);
	host_bytes(&entries);
	cr_expect_eq(entries, 2, "only h and h/fine.txt on the host");
	cr_expect_eq(access(host("h/fine.txt"), F_OK), 0);
	end(s, cid);
}

Test(copyout, failed_overwrite_keeps_the_original, .timeout = 240,
    .fini = cleanup)
{
	static const char orig[] = "the original, byte for byte\n";
	struct h_server *s;
	json_object *r;
	char *cid;
	int entries, fd;

	fd = open(host("keep.txt"), O_WRONLY | O_CREAT | O_EXCL, 0644);
	cr_assert(fd != -1 &&
	          write(fd, orig, sizeof orig - 1) == (ssize_t)sizeof orig - 1);
	close(fd);
	cr_assert_eq(mkdir(host("tree"), 0755), 0);
	fd = open(host("tree/a.txt"), O_WRONLY | O_CREAT | O_EXCL, 0644);
	cr_assert(fd != -1 &&
	          write(fd, orig, sizeof orig - 1) == (ssize_t)sizeof orig - 1);
	close(fd);

	s = adv_start("--allow-dir", allowed(), NULL);
	cid = h_create(s, NULL);
	free(h_exec_ok(s, cid,
	    "head -c 3000000 /dev/urandom > /app/big && mkdir /app/tree && "
	    "echo new > /app/tree/a.txt && cp /app/big /app/tree/z.bin"));
	r = copy(s, cid, "/app/big", host("keep.txt"),
	    "{\"overwrite\":true,\"max_bytes\":1048576}", NULL);
	cr_expect(h_is_error(r) && h_contains(h_text(r), "max_bytes"), "%s",
	    h_text(r));
	json_object_put(r);
	r = copy(s, cid, "/app/tree", host("tree"),
	    "{\"overwrite\":true,\"max_bytes\":1048576}", NULL);
	cr_expect(h_is_error(r) && h_contains(h_text(r), "max_bytes"), "%s",
	    h_text(r));
	json_object_put(r);
	host_bytes(&entries);
	cr_expect_eq(entries, 3, "keep.txt, tree, tree/a.txt: no temporary");
	cr_expect_eq(host_bytes(NULL), 2 * (long long)(sizeof orig - 1));
	fd = open(host("keep.txt"), O_RDONLY);
	{
		char buf[128] = {0};

		cr_expect(
		    read(fd, buf, sizeof buf) == (ssize_t)sizeof orig - 1 &&
		        strcmp(buf, orig) == 0,
		    "keep.txt changed: %s", buf);
		close(fd);
		fd = open(host("tree/a.txt"), O_RDONLY);
		memset(buf, 0, sizeof buf);
		cr_expect(
		    read(fd, buf, sizeof buf) == (ssize_t)sizeof orig - 1 &&
		        strcmp(buf, orig) == 0,
		    "tree/a.txt changed: %s", buf);
		close(fd);
	}
	end(s, cid);
}

Test(copyout, stalled_tar_fails_within_seconds, .timeout = 240, .fini = cleanup)
{
	struct h_server *s;
	json_object *r;
	char *cid;
	long long ms;
	long id;
	int entries;

	s = adv_start(
	    "--allow-dir", allowed(), "--transfer-idle-timeout", "3", NULL);
	cid = h_create(s, NULL);
	free(h_exec_ok(s, cid,
	    "mkdir -p /app/t && head -c 30000000 /dev/urandom > /app/t/a && "
	    "cp /app/t/a /app/t/b"));
	/* Stops every tar as soon as it appears, for 20 s. */
	id = h_send_exec(s, cid,
	    "timeout 20 sh -c 'while :; do for p in /proc/[0-9]*; do "
	    "[ \"$(cat $p/comm 2>/dev/null)\" = tar ] && "
	    "kill -STOP ${p#/proc/} 2>/dev/null; done; done'; exit 0");
	usleep(500000);
	r = copy(s, cid, "/app/t", host("t"), NULL, &ms);
	cr_expect(
	    h_is_error(r) && h_contains(h_text(r), "--transfer-idle-timeout"),
	    "%s", h_text(r));
	cr_expect_lt(ms, 15000, "the stalled copy took %lld ms", ms);
	fprintf(stderr, "stalled tar (directory): failed after %lld ms\n", ms);
	json_object_put(r);
	r = copy(s, cid, "/app/t/a", host("a"), NULL, &ms);
	cr_expect(
	    h_is_error(r) && h_contains(h_text(r), "--transfer-idle-timeout"),
	    "%s", h_text(r));
	cr_expect_lt(ms, 15000, "the stalled copy took %lld ms", ms);
	fprintf(stderr, "stalled tar (file): failed after %lld ms\n", ms);
	json_object_put(r);
	host_bytes(&entries);
	cr_expect_eq(entries, 0, "a partial file or tree was left");
	json_object_put(h_tool_result(h_wait_id(s, id, 60000)));
	free(h_exec_ok(s, cid, "pkill -KILL -x tar; true"));
	end(s, cid);
}

/* The spool directory: private (0700, ours), wherever it is. */
static int
spool_mode(const char *base, unsigned *mode, unsigned *uid)
{
	char cmd[512], *out;
	int n;

	snprintf(cmd, sizeof cmd,
	    "stat -c '%%a %%u' '%s'/mcp-sandboxd-* 2>/dev/null | head -1",
	    base);
	out = h_run(cmd, NULL);
	n = sscanf(out, "%o %u", mode, uid);
	free(out);
	return n == 2;
}

Test(copyout, spool_directory_is_private, .timeout = 240, .fini = cleanup)
{
	struct h_server *s;
	unsigned mode, uid;
	struct stat st;
	char cmd[512], xdg[64], *out, *bin;
	int status;

	s = adv_start(NULL);
	cr_expect(spool_mode(adv_tmpdir(), &mode, &uid),
	    "no spool directory in the runtime directory %s", adv_tmpdir());
	cr_expect_eq(mode, 0700, "spool directory mode %o", mode);
	cr_expect_eq(uid, (unsigned)geteuid());
	adv_finish(s);

	/* $XDG_RUNTIME_DIR/mcp-sandboxd when no runtime directory is set. */
	snprintf(xdg, sizeof xdg, "/tmp/mcp-xdg-%d-XXXXXX", (int)getpid());
	cr_assert(mkdtemp(xdg) != NULL);
	bin = getenv("MCP_SANDBOXD_BIN");
	cr_assert(bin != NULL);
	snprintf(cmd, sizeof cmd,
	    "XDG_RUNTIME_DIR='%s' MCP_SANDBOXD_RUNTIME_DIR= timeout 20 sh -c "
	    "'sleep 3 | \"%s\" --log-level warn & sleep 1; stat -c %%a "
	    "\"$XDG_RUNTIME_DIR\"/mcp-sandboxd "
	    "\"$XDG_RUNTIME_DIR\"/mcp-sandboxd/mcp-sandboxd-*; wait'",
	    xdg, bin);
	out = h_run(cmd, &status);
	cr_expect_str_eq(
	    out, "700\n700\n", "modes under XDG_RUNTIME_DIR: %s", out);
	free(out);
	snprintf(cmd, sizeof cmd, "%s/mcp-sandboxd", xdg);
	cr_expect_eq(stat(cmd, &st), 0);

	/* A runtime directory others may enter is refused. */
	cr_assert_eq(chmod(cmd, 0777), 0);
	snprintf(cmd, sizeof cmd,
	    "XDG_RUNTIME_DIR= timeout 20 \"%s\" --runtime-dir '%s/mcp-sandboxd' "
	    "</dev/null 2>&1",
	    bin, xdg);
	out = h_run(cmd, &status);
	cr_expect_neq(status, 0, "started with a 0777 runtime directory");
	cr_expect(h_contains(out, "not a private directory"), "%s", out);
	free(out);
	h_rm_rf(xdg);
}

/*
 * overwrite: true of a file whose copy stops half-way (the sandbox stops
 * its tar, or cat, until the call times out): the original is untouched.
 */
Test(copyout, stopped_overwrite_keeps_the_original, .timeout = 240,
    .fini = cleanup)
{
	static const char orig[] = "the original, byte for byte\n";
	char buf[128] = {0};
	struct h_server *s;
	json_object *r;
	long long ms;
	char *cid;
	long id;
	int fd, entries;

	fd = open(host("keep.txt"), O_WRONLY | O_CREAT | O_EXCL, 0644);
	cr_assert(fd != -1 &&
	          write(fd, orig, sizeof orig - 1) == (ssize_t)sizeof orig - 1);
	close(fd);
	s = adv_start("--allow-dir", allowed(), "--exec-timeout", "6",
	    "--max-exec-timeout", "6", NULL);
	cid = h_create(s, NULL);
	/* Big enough that the reader is always caught before it ends. */
	r = adv_exec(
	    s, cid, "head -c 100000000 /dev/zero > /app/big", NULL, 0, NULL);
	cr_assert_eq(h_int(h_first(r), "exit_code"), 0, "%s", h_text(r));
	json_object_put(r);
	id = h_send_exec(s, cid,
	    "while :; do pkill -STOP -x tar; pkill -STOP -x cat; done "
	    "2>/dev/null");
	usleep(500000);
	r = copy(
	    s, cid, "/app/big", host("keep.txt"), "{\"overwrite\":true}", &ms);
	cr_expect(h_is_error(r), "%s", h_text(r));
	json_object_put(r);
	fprintf(stderr, "stopped overwrite: failed after %lld ms\n", ms);
	fd = open(host("keep.txt"), O_RDONLY);
	cr_expect(fd != -1 &&
	              read(fd, buf, sizeof buf) == (ssize_t)sizeof orig - 1 &&
	              strcmp(buf, orig) == 0,
	    "keep.txt changed: \"%s\"", buf);
	if (fd != -1)
		close(fd);
	host_bytes(&entries);
	cr_expect_eq(entries, 1, "a temporary file was left");
	json_object_put(h_tool_result(h_wait_id(s, id, 60000)));
	h_stop(s, cid);
	free(cid);
	adv_finish(s);
}
