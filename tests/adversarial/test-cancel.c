/*
 * Adversarial: notifications/cancelled ends any call promptly, whatever
 * the tool, with the processes it started in the sandbox killed.
 *
 * install_package of a local source tree whose setup.py sleeps (no
 * network), copy_file_from_sandbox of a big file whose reader the sandbox
 * keeps stopped, and copy_file into a tar the sandbox keeps stopped: none
 * of these tools had a cancellation of its own.
 * After the cancel no answer comes for the call, the processes are gone
 * within seconds, no partial file is left on the host, and the sandbox
 * still answers.
 */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "adv.h"

static void
cancel(struct h_server *s, long id)
{
	char params[96];

	snprintf(params, sizeof params,
	    "{\"requestId\":%ld,\"reason\":\"adversarial cancel\"}", id);
	h_send_notification(s, "notifications/cancelled", params);
}

/* Wait until a process whose line holds what runs in the sandbox. */
static int
wait_procs(struct h_server *s, const char *cid, const char *what, int ms)
{
	long long deadline = h_now_ms() + ms;
	int n;

	while ((n = adv_procs(s, cid, what)) <= 0 && h_now_ms() < deadline)
		usleep(300000);
	return n;
}

/* Wait until the copy's reader is stopped (state T) in the sandbox. */
static int
wait_stopped(struct h_server *s, const char *cid, int ms)
{
	long long deadline = h_now_ms() + ms;
	char *out;
	int n;

	for (;;) {
		out = h_exec_ok(s, cid,
		    "ps -eo stat=,args= | grep -c '^T.*tar -cf - -C .* -- big$' || true");
		n = atoi(out);
		free(out);
		if (n > 0 || h_now_ms() >= deadline)
			return n;
		usleep(200000);
	}
}

/* Wait until none is left; the time it took, -1 if some stay. */
static long long
procs_gone(struct h_server *s, const char *cid, const char *what, int ms)
{
	long long t0 = h_now_ms(), deadline = t0 + ms;

	while (adv_procs(s, cid, what) != 0) {
		if (h_now_ms() >= deadline)
			return -1;
		usleep(300000);
	}
	return h_now_ms() - t0;
}

/* The sandbox's working directory (caller frees). */
static char *
workdir(struct h_server *s, const char *cid)
{
	char *out = h_exec_ok(s, cid, "pwd");

	out[strcspn(out, "\n")] = '\0';
	return out;
}

Test(cancel, install_package_of_a_sleeping_setup_py, .timeout = 240)
{
	static const char setup_py[] = "import time\n"
	                               "time.sleep(300)\n"
	                               "from setuptools import setup\n"
	                               "setup(name='slowpkg', version='1.0')\n";
	struct h_server *s;
	json_object *a, *r, *p;
	long long ms;
	char *cid, *wd, path[512];
	long id;

	s = adv_start(NULL);
	cid = h_create(s, NULL);
	wd = workdir(s, cid);
	a = json_object_new_object();
	json_object_object_add(a, "commands",
	    json_object_new_string(
	        "mkdir -p slowpkg && cat > slowpkg/setup.py"));
	json_object_object_add(a, "stdin", json_object_new_string(setup_py));
	r = h_exec_obj(s, cid, a, 60000);
	cr_assert(!h_is_error(r), "%.300s", h_text(r));
	json_object_put(r);

	snprintf(path, sizeof path, "%s/slowpkg", wd);
	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	p = json_object_new_array();
	json_object_array_add(p, json_object_new_string(path));
	json_object_object_add(a, "packages", p);
	json_object_object_add(a, "manager", json_object_new_string("pip"));
	id = h_send_tool(s, "install_package", a);
	cr_assert_gt(
	    wait_procs(s, cid, "egg_info", 60000), 0, "setup.py never ran");

	cancel(s, id);
	ms = procs_gone(s, cid, "pip", 15000);
	fprintf(stderr,
	    "install_package cancelled: its processes gone in "
	    "%lld ms\n",
	    ms);
	cr_expect_geq(
	    ms, 0, "pip and setup.py still run 15 s after the cancellation");
	cr_expect_eq(adv_procs(s, cid, "egg_info"), 0);
	r = h_wait_id(s, id, 2000);
	cr_expect_null(r, "an answer came for the cancelled call: %.300s",
	    r != NULL ? json_object_to_json_string(r) : "");
	json_object_put(r);

	adv_alive(s, cid);
	h_stop(s, cid);
	free(wd);
	free(cid);
	adv_finish(s);
}

Test(cancel, copy_file_from_sandbox_of_a_stalled_big_file, .timeout = 240)
{
	struct h_server *s;
	json_object *a, *r;
	struct stat st;
	long long ms;
	char *cid, *wd, src[512], dest[512], dir[400];
	long id;

	snprintf(dir, sizeof dir, "%s/host", adv_tmpdir());
	cr_assert(mkdir(dir, 0700) == 0 || access(dir, F_OK) == 0);
	s = adv_start("--allow-dir", dir, NULL);
	cid = h_create(s, NULL);
	wd = workdir(s, cid);
	json_object_put(h_exec(s, cid, "head -c 100M /dev/zero > big", 60));
	/* A process of the sandbox stops the reader as soon as it runs
	 * (the same user may): the copy stalls for good. */
	json_object_put(h_exec(s, cid,
	    "setsid sh -c 'while :; do pkill -STOP -f \"^ta[r] -cf - -C .* -- big$\"; "
	    "sleep 0.02; done' </dev/null >/dev/null 2>&1 & sleep 1",
	    30));

	snprintf(src, sizeof src, "%s/big", wd);
	snprintf(dest, sizeof dest, "%s/big", dir);
	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(
	    a, "container_src_path", json_object_new_string(src));
	json_object_object_add(
	    a, "local_dest_path", json_object_new_string(dest));
	id = h_send_tool(s, "copy_file_from_sandbox", a);
	cr_assert_gt(wait_stopped(s, cid, 30000), 0,
	    "the copy's reader was never seen stopped");
	r = h_wait_id(s, id, 0);
	cr_assert_null(r, "the copy ended before it was stopped: %.300s",
	    r != NULL ? json_object_to_json_string(r) : "");

	cancel(s, id);
	ms = procs_gone(s, cid, "tar -cf - -C", 15000);
	fprintf(stderr,
	    "copy_file_from_sandbox cancelled: its reader gone in %lld ms\n",
	    ms);
	cr_expect_geq(ms, 0, "the reader still runs 15 s after the cancel");
	r = h_wait_id(s, id, 2000);
	cr_expect_null(r, "an answer came for the cancelled call: %.300s",
	    r != NULL ? json_object_to_json_string(r) : "");
	json_object_put(r);
	cr_expect(stat(dest, &st) == -1,
	    "the partial copy (%lld bytes) is left on the host",
	    (long long)st.st_size);

	adv_alive(s, cid);
	h_stop(s, cid);
	unlink(dest);
	rmdir(dir);
	free(wd);
	free(cid);
	adv_finish(s);
}

Test(cancel, copy_file_into_a_stalled_tar, .timeout = 240)
{
	struct h_server *s;
	json_object *a, *r;
	char dir[400], hostfile[512], *cid, *out;
	long long ms, deadline;
	long id;
	FILE *f;
	int n = 0;

	snprintf(dir, sizeof dir, "%s/src", adv_tmpdir());
	cr_assert(mkdir(dir, 0700) == 0 || access(dir, F_OK) == 0);
	snprintf(hostfile, sizeof hostfile, "%s/in.bin", dir);
	cr_assert((f = fopen(hostfile, "w")) != NULL);
	cr_assert(ftruncate(fileno(f), 64L << 20) == 0);
	fclose(f);
	s = adv_start("--allow-dir", dir, NULL);
	cid = h_create(s, NULL);
	/* The sandbox stops the unpacking tar as soon as it runs.  (The
	 * stopper is in a session of its own before its exec ends, or the
	 * end-of-exec sweep would take it.) */
	json_object_put(h_exec(s, cid,
	    "setsid sh -c 'while :; do pkill -STOP -f \"^tar -xf\"; "
	    "sleep 0.02; done' </dev/null >/dev/null 2>&1 & sleep 1",
	    30));

	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(
	    a, "local_src_file", json_object_new_string(hostfile));
	json_object_object_add(a, "dest_path", json_object_new_string("c.bin"));
	id = h_send_tool(s, "copy_file", a);
	for (deadline = h_now_ms() + 30000; n == 0 && h_now_ms() < deadline;) {
		out = h_exec_ok(s, cid,
		    "ps -eo stat=,args= | grep -c '^T.*tar -xf' || true");
		n = atoi(out);
		free(out);
		if (n == 0)
			usleep(200000);
	}
	r = h_wait_id(s, id, 0);
	cr_assert_null(r, "the copy ended before it was stopped: %.300s",
	    r != NULL ? json_object_to_json_string(r) : "");
	cr_assert_gt(n, 0, "the copy's tar was never seen stopped");

	cancel(s, id);
	ms = procs_gone(s, cid, "tar -xf -", 15000);
	fprintf(stderr, "copy_file cancelled: its tar gone in %lld ms\n", ms);
	cr_expect_geq(ms, 0, "the tar still runs 15 s after the cancel");
	r = h_wait_id(s, id, 2000);
	cr_expect_null(r, "an answer came for the cancelled call");
	json_object_put(r);
	out = h_exec_ok(s, cid, "ls -A");
	cr_expect(!h_contains(out, "c.bin") && !h_contains(out, ".mcp-upload"),
	    "the cancelled copy left files: %s", out);
	free(out);

	adv_alive(s, cid);
	h_stop(s, cid);
	unlink(hostfile);
	rmdir(dir);
	free(cid);
	adv_finish(s);
}
