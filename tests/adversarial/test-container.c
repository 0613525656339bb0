/*
 * Adversarial: what the container itself gives a sandbox (issue 11, items
 * 6, 11, 14, 15 and 16): storage an image declares, images and networks
 * a client names, the syscall surface, the uid, and a lifetime that holds
 * without a supervisor.
 */
#include <sys/socket.h>
#include <sys/types.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "adv.h"

/* --- helpers --- */

/* Whether the container runs (0: stopped or gone). */
static int
container_running(const char *cid)
{
	char cmd[160], *out;
	int st, running;

	snprintf(cmd, sizeof cmd,
	    "docker inspect -f '{{.State.Running}}' %s 2>/dev/null", cid);
	out = h_run(cmd, &st);
	running = st == 0 && strncmp(out, "true", 4) == 0;
	free(out);
	return running;
}

/* execute_code in a sandbox (its session persists); the result. */
static json_object *
run_code(struct h_server *s, const char *cid, const char *code)
{
	json_object *a;

	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(a, "code", json_object_new_string(code));
	json_object_object_add(a, "language", json_object_new_string("python"));
	json_object_object_add(
	    a, "dependencies", json_object_new_string("none"));
	return h_call_tool_obj(s, "execute_code", a, 60000);
}

/* --- item 6: VOLUMEs of an image --- */

static char volume_image[96];

static void
volume_image_remove(void)
{
	char cmd[160];

	if (volume_image[0] == '\0')
		return;
	snprintf(
	    cmd, sizeof cmd, "docker rmi -f %s >/dev/null 2>&1", volume_image);
	free(h_run(cmd, NULL));
	volume_image[0] = '\0';
}

/*
 * An image of the test image plus two VOLUMEs, built here (no registry).
 * Its own to this process (a LABEL naming it first): the suite runs in
 * both builds' lanes at once, identical builds share their layers, and a
 * build's passing container was once left behind while the others built
 * and removed theirs (run 26's final check).
 */
static void
volume_image_build(void)
{
	char cmd[640], *out;
	int st;

	snprintf(volume_image, sizeof volume_image,
	    "mcp-sandboxd-test/volume:adv-%d", (int)getpid());
	snprintf(cmd, sizeof cmd,
	    "printf 'FROM %s\\nLABEL %s.build=%d\\n"
	    "VOLUME [\"/data\", \"/var/cache/vol/\"]\\n' | "
	    "DOCKER_BUILDKIT=0 docker build -q --force-rm --label %s -t %s - "
	    "2>&1",
	    H_IMAGE, ADV_LABEL_KEY, (int)getpid(), ADV_LABEL, volume_image);
	out = h_run(cmd, &st);
	cr_assert_eq(st, 0, "docker build failed: %s", out);
	free(out);
}

Test(container, image_volumes_become_capped_tmpfs, .timeout = 180,
    .fini = volume_image_remove)
{
	struct h_server *s;
	json_object *in, *r, *mounts;
	char args[256], *cid, *out;
	int volumes = 0;
	size_t i;

	volume_image_build();
	s = adv_start("--volume-mb", "4", NULL);
	snprintf(args, sizeof args, "{\"image\":\"%s\"}", volume_image);
	cid = h_create(s, args);
	/*
	 * A volume the engine made for the container is one of its mounts.
	 * (Not the host's count of volumes: the other lane's tests build
	 * VOLUME images too, and the legacy builder's passing containers
	 * make and remove volumes meanwhile.  scripts/test checks that the
	 * run leaves none.)
	 */
	in = h_docker_inspect(cid);
	mounts = h_get(in, "Mounts");
	for (i = 0; mounts != NULL && i < json_object_array_length(mounts); i++)
		if (h_contains(
		        h_str(json_object_array_get_idx(mounts, i), "Type"),
		        "volume"))
			volumes++;
	fprintf(stderr, "volumes of the sandbox: %d; mounts %s; tmpfs %s\n",
	    volumes, json_object_to_json_string(mounts),
	    json_object_to_json_string(h_get(in, "HostConfig.Tmpfs")));
	cr_expect_eq(volumes, 0,
	    "the image's VOLUMEs made %d anonymous volume(s) on the host: %s",
	    volumes, json_object_to_json_string(mounts));
	cr_expect(h_contains(h_str(in, "HostConfig.Tmpfs./data"), "size=4m"),
	    "/data: %s", h_str(in, "HostConfig.Tmpfs./data"));
	cr_expect(
	    h_contains(h_str(in, "HostConfig.Tmpfs./var/cache/vol"), "noexec"),
	    "/var/cache/vol: %s", h_str(in, "HostConfig.Tmpfs./var/cache/vol"));
	json_object_put(in);

	/* Writable by the sandbox, and capped. */
	out = h_exec_ok(s, cid, "echo hi > /data/x && cat /data/x");
	cr_expect_str_eq(out, "hi\n");
	free(out);
	r = h_exec(s, cid,
	    "dd if=/dev/zero of=/data/big bs=1M count=8 2>&1; "
	    "du -m /data/big | cut -f1",
	    60);
	fprintf(stderr, "8 MiB into a 4 MiB volume: %s",
	    h_str(h_first(r), "stdout"));
	cr_expect(h_contains(h_str(h_first(r), "stdout"), "No space left"),
	    "8 MiB fit into the volume: %s", h_str(h_first(r), "stdout"));
	json_object_put(r);
	h_stop(s, cid);
	cr_expect(h_wait_container_gone(cid, 15000));
	free(cid);
	adv_finish(s);
}

/* --- item 6: pulls --- */

/* A registry on loopback that accepts connections and never answers. */
struct mute {
	int fd;
	int port;
	volatile int stop;
	pthread_t thread;
};

static void *
mute_main(void *arg)
{
	struct mute *m = arg;
	int held[64], n = 0, c;
	struct pollfd p;

	while (!m->stop) {
		p.fd = m->fd;
		p.events = POLLIN;
		if (poll(&p, 1, 200) <= 0)
			continue;
		if ((c = accept(m->fd, NULL, NULL)) == -1)
			continue;
		if (n < 64)
			held[n++] = c; /* held open, never answered */
		else
			close(c);
	}
	while (n > 0)
		close(held[--n]);
	return NULL;
}

static void
mute_start(struct mute *m)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof sin;

	memset(m, 0, sizeof *m);
	m->fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(m->fd, 0);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(m->fd, (struct sockaddr *)&sin, sizeof sin), 0);
	cr_assert_eq(listen(m->fd, 64), 0);
	cr_assert_eq(getsockname(m->fd, (struct sockaddr *)&sin, &len), 0);
	m->port = ntohs(sin.sin_port);
	cr_assert_eq(pthread_create(&m->thread, NULL, mute_main, m), 0);
}

static void
mute_stop(struct mute *m)
{
	m->stop = 1;
	pthread_join(m->thread, NULL);
	close(m->fd);
}

Test(container, stalled_pull_is_bounded_and_holds_no_start_slot, .timeout = 180)
{
	struct h_server *s;
	struct mute m;
	json_object *a, *r, *resp;
	char image[96], *cid;
	long long t0, ms_other, ms_pull;
	long id;

	mute_start(&m);
	snprintf(image, sizeof image, "127.0.0.1:%d/adv/stalled:%d", m.port,
	    (int)getpid());
	/* One start slot: a pull that held it would block every other. */
	s = adv_start(
	    "--pull-timeout", "5", "--max-concurrent-starts", "1", NULL);
	a = json_object_new_object();
	json_object_object_add(a, "image", json_object_new_string(image));
	t0 = h_now_ms();
	id = h_send_tool(s, "sandbox_initialize", a);
	usleep(300000);
	/* Meanwhile another sandbox starts. */
	cid = h_create(s, NULL);
	ms_other = h_now_ms() - t0;
	resp = h_wait_id(s, id, 60000);
	ms_pull = h_now_ms() - t0;
	cr_assert(resp != NULL, "no answer to the stalled pull in 60 s");
	r = h_tool_result(resp);
	fprintf(stderr,
	    "stalled pull: other sandbox ready after %lld ms; the pull failed "
	    "after %lld ms: %.300s\n",
	    ms_other, ms_pull, h_text(r));
	cr_expect(h_is_error(r));
	cr_expect(h_contains(h_text(r), "--pull-timeout"), "%s", h_text(r));
	cr_expect_lt(ms_pull, 5000 + 10000, "the pull took %lld ms", ms_pull);
	cr_expect_lt(ms_other, ms_pull,
	    "the other sandbox waited for the stalled pull (%lld ms)",
	    ms_other);
	json_object_put(r);
	adv_alive(s, cid);
	h_stop(s, cid);
	free(cid);
	adv_finish(s);
	mute_stop(&m);
}

/* --- item 6: --allow-image --- */

Test(container, images_outside_allow_image_are_refused, .timeout = 180)
{
	struct h_server *s;
	json_object *r;
	char *cid;

	s = adv_start("--allow-image", "mcp-sandboxd-test/python:*",
	    "--allow-image", "adv-other:1", "--python-image",
	    "adv-forbidden/python:3", NULL);
	/* sandbox_initialize */
	r = h_call_tool(s, "sandbox_initialize", "{\"image\":\"busybox\"}");
	fprintf(stderr, "sandbox_initialize busybox: %s\n", h_text(r));
	cr_expect(h_is_error(r));
	cr_expect(h_contains(h_text(r), "--allow-image"), "%s", h_text(r));
	json_object_put(r);
	r = h_call_tool(
	    s, "sandbox_initialize", "{\"image\":\"mcp-sandboxd-test/py\"}");
	cr_expect(h_is_error(r) && h_contains(h_text(r), "--allow-image"), "%s",
	    h_text(r));
	json_object_put(r);
	/* create_run_close */
	r = h_call_tool(s, "create_run_close",
	    "{\"code\":\"print(1)\",\"image\":\"debian:12\","
	    "\"dependencies\":\"none\"}");
	cr_expect(h_is_error(r) && h_contains(h_text(r), "--allow-image"),
	    "create_run_close: %s", h_text(r));
	json_object_put(r);
	/* execute_code in a fresh sandbox of the (forbidden) Python image */
	r = h_call_tool(s, "execute_code",
	    "{\"code\":\"print(1)\",\"dependencies\":\"none\"}");
	cr_expect(h_is_error(r) && h_contains(h_text(r), "--allow-image"),
	    "execute_code: %s", h_text(r));
	json_object_put(r);
	/* An allowed one starts. */
	cid = h_create(s, NULL);
	adv_alive(s, cid);
	h_stop(s, cid);
	free(cid);
	adv_finish(s);
}

/* --- item 11: networks --- */

Test(container, networks_only_those_named, .timeout = 120)
{
	struct h_server *s;
	json_object *r;
	char *cid;

	s = adv_start("--allow-network", "mcp-adv-nonexistent", NULL);
	r = h_call_tool(s, "sandbox_initialize", "{\"network\":\"bridge\"}");
	fprintf(stderr, "network bridge: %s\n", h_text(r));
	cr_expect(h_is_error(r) && h_contains(h_text(r), "--allow-network"),
	    "%s", h_text(r));
	json_object_put(r);
	r = h_call_tool(s, "sandbox_initialize", "{\"network\":\"host\"}");
	cr_expect(
	    h_is_error(r) && h_contains(h_text(r), "never"), "%s", h_text(r));
	json_object_put(r);
	/* The named one passes the policy (the engine then has no such
	 * network here). */
	r = h_call_tool_t(s, "sandbox_initialize",
	    "{\"network\":\"mcp-adv-nonexistent\"}", 60000);
	fprintf(stderr, "network mcp-adv-nonexistent: %s\n", h_text(r));
	cr_expect(h_is_error(r) && !h_contains(h_text(r), "--allow-network"),
	    "%s", h_text(r));
	json_object_put(r);
	cid = h_create(s, "{\"network\":\"none\"}");
	h_stop(s, cid);
	free(cid);
	adv_finish(s);
}

/* --- item 14: syscalls --- */

Test(container, io_uring_is_refused, .timeout = 120)
{
	struct h_server *s;
	char *cid, *out;

	s = adv_start(NULL);
	cid = h_create(s, NULL);
	out = h_exec_ok(s, cid,
	    "python3 -c 'import ctypes\n"
	    "libc = ctypes.CDLL(None, use_errno=True)\n"
	    "p = ctypes.create_string_buffer(120)\n"
	    "r = libc.syscall(425, 8, p)\n"
	    "print(r, ctypes.get_errno())'");
	fprintf(stderr, "io_uring_setup: %s", out);
	/* -1 with EPERM (1) or ENOSYS (38); a descriptor means it worked. */
	cr_expect(strcmp(out, "-1 1\n") == 0 || strcmp(out, "-1 38\n") == 0,
	    "io_uring_setup in a sandbox gave %s", out);
	free(out);
	/* Ordinary programs still run: threads, processes, files. */
	out = h_exec_ok(s, cid,
	    "python3 -c 'import threading, subprocess, tempfile\n"
	    "t = threading.Thread(target=print, args=(\"thread\",))\n"
	    "t.start(); t.join()\n"
	    "print(subprocess.run([\"echo\", \"child\"], capture_output=True)"
	    ".stdout.decode().strip())\n"
	    "f = tempfile.NamedTemporaryFile(dir=\".\"); f.write(b\"x\"); "
	    "print(\"file\")' && ls / >/dev/null && echo ok");
	cr_expect_str_eq(out, "thread\nchild\nfile\nok\n");
	free(out);
	h_stop(s, cid);
	free(cid);
	adv_finish(s);
}

/* --- item 15: one uid per sandbox --- */

Test(container, inotify_exhaustion_stays_in_its_sandbox, .timeout = 180)
{
	struct h_server *s;
	json_object *r;
	char *a, *b, *ua, *ub, *out;
	long n;

	/* Open files above the per-user inotify limit (128 here), so that
	 * the user limit is what runs out. */
	s = adv_start("--nofile", "4096", NULL);
	a = h_create(s, NULL);
	b = h_create(s, NULL);
	ua = h_exec_ok(s, a, "id -u");
	ub = h_exec_ok(s, b, "id -u");
	fprintf(stderr, "uids: %s and %s", ua, ub);
	cr_expect_str_neq(ua, ub, "two sandboxes share a uid");
	cr_expect(atol(ua) > 0 && atol(ua) != 65533 && atol(ua) != 65534);
	/* Sandbox a takes every inotify instance its user may have, and
	 * keeps them (its Python session lives on). */
	r = run_code(s, a,
	    "import ctypes\n"
	    "libc = ctypes.CDLL(None, use_errno=True)\n"
	    "held = []\n"
	    "while len(held) < 4000:\n"
	    "    fd = libc.inotify_init()\n"
	    "    if fd < 0:\n"
	    "        break\n"
	    "    held.append(fd)\n"
	    "print(len(held), ctypes.get_errno())\n");
	out = (char *)h_str(r, "structuredContent.stdout");
	fprintf(stderr, "sandbox a holds: %s", out != NULL ? out : "(none)");
	cr_assert(out != NULL, "%s", h_text(r));
	n = atol(out);
	cr_expect(n > 0 && n < 4000 && h_contains(out, " 24"),
	    "sandbox a did not run out of inotify instances (EMFILE): %s", out);
	json_object_put(r);
	/* Sandbox b still gets one. */
	out = h_exec_ok(s, b,
	    "python3 -c 'import ctypes\n"
	    "libc = ctypes.CDLL(None, use_errno=True)\n"
	    "print(libc.inotify_init() >= 0, ctypes.get_errno())'");
	fprintf(stderr, "sandbox b: %s", out);
	cr_expect_str_eq(
	    out, "True 0\n", "sandbox b got no inotify instance: %s", out);
	free(out);
	/* Sandbox a is still at its limit (the session held them). */
	r = run_code(s, a, "print(libc.inotify_init() < 0, len(held))\n");
	cr_expect(h_contains(h_str(r, "structuredContent.stdout"), "True"),
	    "%s", h_text(r));
	json_object_put(r);
	free(ua);
	free(ub);
	h_stop(s, a);
	h_stop(s, b);
	free(a);
	free(b);
	adv_finish(s);
}

/* --- item 16: a lifetime without a supervisor --- */

Test(container, ttl_holds_after_the_supervisor_is_killed, .timeout = 180)
{
	struct h_server *s, *b;
	json_object *in;
	const char *keep;
	pid_t w[16];
	char *cid, cmd[160];
	long long t0, ms = -1;
	int nw;

	s = adv_start(NULL);
	t0 = h_now_ms();
	cid = h_create(s, "{\"ttl_seconds\":10}");
	/* The mechanism: the keep-alive itself ends near the TTL (other
	 * servers' reapers may remove the orphan before, which is why the
	 * timing below cannot show it alone). */
	in = h_docker_inspect(cid);
	keep = h_str(in, "Args.0");
	fprintf(stderr, "keep-alive: %s %s\n", h_str(in, "Path"),
	    keep != NULL ? keep : "");
	cr_expect(keep != NULL && atol(keep) >= 10 && atol(keep) <= 20,
	    "the keep-alive does not end near the TTL: %s %s",
	    h_str(in, "Path"), keep != NULL ? keep : "");
	json_object_put(in);
	nw = adv_workers(s, w, 16);
	kill(s->pid, SIGKILL);
	cr_assert_eq(h_wait_exit(s, 10000), 128 + SIGKILL);
	cr_expect_eq(adv_wait_pids_gone(w, nw, 5000), 0);
	adv_forget(s);
	while (h_now_ms() - t0 < 25000) {
		if (!container_running(cid)) {
			ms = h_now_ms() - t0;
			break;
		}
		usleep(500000);
	}
	fprintf(stderr,
	    "sandbox with a 10 s TTL, supervisor killed: ended after %lld ms "
	    "(-1: still running after 25 s)\n",
	    ms);
	cr_expect(ms >= 0, "the container still runs 25 s after its start "
	                   "with a 10 s TTL and no supervisor");
	if (ms >= 0 && ms < 9000)
		cr_log_info("%.12s went after %lld ms: another server's "
		            "reaper removed it",
		    cid, ms);
	/* Clean up: a new instance reaps what the dead one left. */
	b = adv_start(NULL);
	if (!h_wait_container_gone(cid, 15000)) {
		snprintf(
		    cmd, sizeof cmd, "docker rm -f %s >/dev/null 2>&1", cid);
		free(h_run(cmd, NULL));
		cr_expect(0, "the new instance did not remove %.12s", cid);
	}
	adv_finish(b);
	free(cid);
}
