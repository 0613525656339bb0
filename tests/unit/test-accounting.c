/*
 * Unit tests of the worker's accounting (worker/accounting.c) against a
 * fake engine: the container inspection answers as the test says (no
 * process yet, then one), and the process's cgroup is a fake v1 tree
 * (accounting.c is built for this test with ACCT_PROC_ROOT=tt_root).
 * The engine's real race, an exec right after creation, is tested in
 * tests/integration/test-clients.c.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <event2/event.h>

#include "engine.h"
#include "proto.h"
#include "tmptree.h"
#include "worker.h"
#include "xmalloc.h"

#define ID "3f2a9c1b7d5e40c1a8f6b2d9e0c4a7b1f3e5d2c6a9b8c7d0e1f2a3b4c5d6e7f8"
#define PID 4242

/* --- the fake engine: inspections only, on this host --- */

struct engine_req {
	struct event *ev;
	engine_done_cb cb;
	void *arg;
};

static struct event_base *base;
static int inspects; /* inspections asked for */
static int pid_from; /* the inspection from which the container runs */
static int pid_never; /* it never runs */

static void
fake_answer(evutil_socket_t fd, short what, void *arg)
{
	struct engine_req *r = arg;
	struct engine_container c;
	struct engine_resp resp;
	int runs = !pid_never && inspects >= pid_from;

	(void)fd;
	(void)what;
	memset(&c, 0, sizeof c);
	c.id = ID;
	c.running = runs;
	c.pid = runs ? PID : 0;
	c.exit_code = -1;
	engine_resp_init(&resp);
	resp.container = &c;
	r->cb(&resp, r->arg);
	event_free(r->ev);
	free(r);
}

struct engine_req *
engine_container_inspect(
    struct engine *eng, const char *id, engine_done_cb cb, void *arg)
{
	struct engine_req *r;
	struct timeval now = {0, 0};

	(void)eng;
	cr_assert_str_eq(id, ID);
	inspects++;
	r = xcalloc(1, sizeof *r);
	r->cb = cb;
	r->arg = arg;
	r->ev = evtimer_new(base, fake_answer, r);
	evtimer_add(r->ev, &now);
	return r;
}

void
engine_req_cancel(struct engine_req *r)
{
	if (r == NULL)
		return;
	event_free(r->ev);
	free(r);
}

int
engine_supports(const struct engine *eng, int what)
{
	(void)eng;
	return what == ENGINE_CGROUPS;
}

void
engine_resp_init(struct engine_resp *resp)
{
	memset(resp, 0, sizeof *resp);
	resp->exit_code = -1;
}

/* --- the fake host --- */

static void
put(const char *rel, const char *content)
{
	char path[2 * PATH_MAX], *p;
	FILE *f;

	snprintf(path, sizeof path, "%s", tt_at(rel));
	for (p = path + strlen(tt_root) + 1; (p = strchr(p, '/')) != NULL;
	     p++) {
		*p = '\0';
		cr_assert(mkdir(path, 0755) == 0 || errno == EEXIST);
		*p = '/';
	}
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(content, f);
	fclose(f);
}

#define CPU_FILE "sys/fs/cgroup/cpu,cpuacct/docker/" ID "/cpuacct.usage"
#define MEM_FILE "sys/fs/cgroup/memory/docker/" ID "/memory.max_usage_in_bytes"

static void
host_tree(int visible)
{
	put("proc/self/mountinfo",
	    "35 30 0:31 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup "
	    "rw,cpu,cpuacct\n"
	    "36 30 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup "
	    "rw,memory\n");
	if (!visible)
		return; /* the engine is elsewhere: no such process here */
	put("proc/4242/cgroup", "4:memory:/docker/" ID "\n"
	                        "3:cpu,cpuacct:/docker/" ID "\n");
	put(CPU_FILE, "1000000000\n");
	put(MEM_FILE, "1048576\n");
}

static struct worker w;

static void
setup(void)
{
	tt_make("unit-accounting");
	base = event_base_new();
	cr_assert_not_null(base);
	memset(&w, 0, sizeof w);
	w.base = base;
	w.engine = (struct engine *)&w; /* never looked into */
	w.container = ID;
	inspects = 0;
	pid_from = 1;
	pid_never = 0;
}

static void
teardown(void)
{
	acct_stop();
	event_base_free(base);
	tt_remove();
}

TestSuite(accounting, .init = setup, .fini = teardown);

/* Runs the loop until cond() or about ms milliseconds. */
static void
run_until(int (*cond)(void), int ms)
{
	struct timeval tick = {0, 10000};
	int i;

	for (i = 0; i < ms / 10 && !cond(); i++) {
		event_base_loopexit(base, &tick);
		event_base_dispatch(base);
	}
}

static int
never(void)
{
	return 0;
}

static int want_inspects;
static int
enough_inspects(void)
{
	return inspects >= want_inspects;
}

/* Nothing is looked up before a run needs it. */
Test(accounting, lookup_waits_for_the_first_run)
{
	struct acct *a;

	host_tree(1);
	acct_start(&w);
	run_until(enough_inspects, 50);
	cr_expect_eq(inspects, 0);
	a = acct_begin();
	cr_expect_eq(inspects, 1);
	acct_end(a, NULL);
}

/*
 * The race: the first inspection sees the container before it runs (no
 * pid).  The lookup is tried again, and the run that waited is measured.
 */
Test(accounting, first_inspect_without_pid_is_retried)
{
	struct proto_result r;
	struct acct *a;

	host_tree(1);
	pid_from = 2; /* the first answer has Pid 0 */
	acct_start(&w);
	a = acct_begin();
	want_inspects = 2;
	run_until(enough_inspects, 2000);
	cr_assert_eq(inspects, 2, "looked %d times", inspects);
	run_until(never, 30); /* the second answer is handled */
	put(CPU_FILE, "1250000000\n"); /* 250 ms of CPU */
	put(MEM_FILE, "8388608\n");
	memset(&r, 0, sizeof r);
	acct_end(a, &r);
	cr_assert(r.has & PROTO_R_CPU, "no cpu_time_ms");
	cr_expect_float_eq(r.cpu_time_ms, 250.0, 0.001);
	cr_expect(r.has & PROTO_R_MEMORY, "no memory_peak_bytes");
	cr_expect_eq(r.memory_peak_bytes, 8388608);

	/* Found once: later runs look nothing up. */
	a = acct_begin();
	memset(&r, 0, sizeof r);
	acct_end(a, &r);
	cr_expect(r.has & PROTO_R_CPU);
	cr_expect_eq(inspects, 2);
}

/* A container that never runs: a bounded number of looks, then none. */
Test(accounting, retries_are_bounded)
{
	struct acct *a;
	int n;

	host_tree(1);
	pid_never = 1;
	acct_start(&w);
	a = acct_begin();
	want_inspects = 1000;
	run_until(enough_inspects, 3000);
	n = inspects;
	cr_expect(n > 2 && n <= 20, "looked %d times", n);
	acct_end(a, NULL);
	a = acct_begin();
	acct_end(a, NULL);
	run_until(enough_inspects, 100);
	cr_expect_eq(inspects, n, "no more looks once given up");
}

/* An engine elsewhere: its cgroup is not here; given up at once. */
Test(accounting, invisible_cgroup_given_up_at_once)
{
	struct proto_result r;
	struct acct *a;

	host_tree(0);
	acct_start(&w);
	a = acct_begin();
	want_inspects = 2;
	run_until(enough_inspects, 300);
	cr_expect_eq(inspects, 1);
	memset(&r, 0, sizeof r);
	acct_end(a, &r);
	cr_expect_eq(r.has & (PROTO_R_CPU | PROTO_R_MEMORY), 0);
	a = acct_begin();
	acct_end(a, NULL);
	cr_expect_eq(inspects, 1);
}
