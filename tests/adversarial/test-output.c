/*
 * Adversarial: what a sandbox writes never grows the host's memory, and
 * every call gets exactly one answer.
 *
 * A code session keeps printing after its call returned (a Python thread,
 * a JavaScript timer): the worker drops that output and counts it, so its
 * RSS stays small, the next call answers correctly, and what was dropped
 * is said (in the next result and the activity log).  Inputs and results
 * over the worker channel's frame limit (1 MiB) are answered at once: a
 * 3 MB traceback is cut (the whole is on stderr), 2 MB of code is refused
 * with an error naming the limit, 512 KiB of stdin that JSON-escapes to
 * 3 MiB is streamed, a huge environment is refused.  Background processes
 * that write without end hold no more disk than the spool quota.
 */
#include <sys/stat.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "adv.h"

#define NODE_IMAGE "mcp-sandboxd-test/node:bookworm"
#define RSS_LIMIT_KB (32 * 1024)
#define FLOOD_GROWTH_KB (4 * 1024)

/* The only worker of a server with one sandbox. */
static pid_t
the_worker(struct h_server *s)
{
	pid_t w[8];
	int n = adv_workers(s, w, 8);

	cr_assert_eq(n, 1, "%d workers, want 1", n);
	return w[0];
}

/*
 * Sample the worker's RSS every 200 ms for ms milliseconds (calling mid
 * once, halfway, if given); the largest sample in KiB.
 */
static long
watch_rss(pid_t pid, int ms, void (*mid)(void *), void *arg)
{
	long long end = h_now_ms() + ms, half = h_now_ms() + ms / 2;
	long kb, max = 0;

	while (h_now_ms() < end) {
		kb = h_status_kb(pid, "VmRSS");
		cr_assert_geq(kb, 0, "worker %d is gone", (int)pid);
		if (kb > max)
			max = kb;
		if (mid != NULL && h_now_ms() >= half) {
			mid(arg);
			mid = NULL;
		}
		usleep(200000);
	}
	return max;
}

/* KiB of an ASAN_OPTIONS option, or 0 (not under ASan, or not given). */
static long
asan_option_kb(const char *name, long unit_kb)
{
	const char *o = getenv("ASAN_OPTIONS"), *p;

	if (o == NULL || (p = strstr(o, name)) == NULL)
		return 0;
	return atol(p + strlen(name)) * unit_kb;
}

/*
 * A flood held nowhere: the worker's RSS (base before the flood; kb the
 * largest sample; hwm its peak) grows by no more than its buffers' churn
 * (FLOOD_GROWTH_KB; one second of the flood is 50 MB), and stays under
 * RSS_LIMIT_KB.  Under ASan the worker starts at about twice the normal
 * build's size (27 MB against 14, the sanitizer's runtime and shadow),
 * and the sanitizer's quarantine keeps what was freed resident up to its
 * size (scripts/test sets quarantine_size_mb=4 and 256 KiB a thread):
 * there the growth is asserted, with the quarantine added to it.
 */
static void
expect_held_nowhere(const char *what, long base, long kb, long hwm)
{
	long room = FLOOD_GROWTH_KB;

	fprintf(stderr,
	    "%s: worker RSS %ld KiB before, at most %ld KiB sampled, VmHWM "
	    "%ld KiB\n",
	    what, base, kb, hwm);
	if (getenv("ASAN_OPTIONS") != NULL) {
		room += asan_option_kb("quarantine_size_mb=", 1024) +
		        asan_option_kb("thread_local_quarantine_size_kb=", 1);
	} else {
		cr_expect_lt(
		    kb, RSS_LIMIT_KB, "%s: worker RSS %ld KiB", what, kb);
		cr_expect_lt(hwm, RSS_LIMIT_KB, "%s: worker peak RSS %ld KiB",
		    what, hwm);
	}
	cr_expect_lt(kb - base, room,
	    "%s: the worker grew by %ld KiB (from %ld KiB)", what, kb - base,
	    base);
	cr_expect_lt(hwm - base, room,
	    "%s: the worker's peak is %ld KiB over its start (%ld KiB)", what,
	    hwm - base, base);
}

struct midcall {
	struct h_server *s;
	const char *cid, *lang, *src;
	long long ms;
	int answered;
};

/* A call made while the flood goes on: it answers, in seconds. */
static void
mid_call(void *arg)
{
	struct midcall *m = arg;
	json_object *r;

	r = adv_code(m->s, m->cid, m->lang, m->src, 30, &m->ms);
	m->answered = !h_is_error(r);
	fprintf(stderr, "call during the flood: %lld ms, isError %d: %.200s\n",
	    m->ms, h_is_error(r), h_text(r));
	json_object_put(r);
}

/*
 * The flood is over: its code made FLOOD_OVER when its last write had
 * returned.  Waited for (20 s at most), not assumed after a fixed
 * time: on a busy machine the last writes come late, and what the
 * interpreter writes during the next call is that call's output.
 */
#define FLOOD_OVER "/tmp/flood-over"

static void
flood_over(struct h_server *s, const char *cid)
{
	free(h_exec_ok(s, cid,
	    "i=0; while [ ! -e " FLOOD_OVER " ] && [ $i -lt 200 ]; do "
	    "sleep 0.1; i=$((i + 1)); done; ls " FLOOD_OVER));
}

/* The call after the flood answers exactly, and says what was dropped. */
static long long
next_call_ok(struct h_server *s, const char *cid, const char *lang,
    const char *src, const char *want)
{
	json_object *r;
	long long ms, dropped;

	r = adv_code(s, cid, lang, src, 60, &ms);
	cr_expect(!h_is_error(r), "the next call failed: %.500s", h_text(r));
	cr_expect_str_eq(h_str(r, "structuredContent.stdout"), want,
	    "the next call's stdout: %.500s", h_text(r));
	dropped = h_get(r, "structuredContent.dropped_stdout_bytes") != NULL
	              ? h_int(r, "structuredContent.dropped_stdout_bytes")
	              : 0;
	fprintf(stderr, "next call: %lld ms; %lld bytes dropped: %.300s\n", ms,
	    dropped, h_text(r));
	cr_expect_lt(ms, 20000, "the next call took %lld ms", ms);
	json_object_put(r);
	return dropped;
}

Test(output, python_thread_floods_after_its_call, .timeout = 300)
{
	static const char flood[] =
	    "import sys, threading, time\n"
	    "def flood():\n"
	    "    time.sleep(0.5)\n"
	    "    chunk = 'x' * (1 << 20)\n"
	    "    end = time.time() + 30\n"
	    "    while time.time() < end:\n"
	    "        t = time.time()\n"
	    "        for _ in range(50):\n"
	    "            sys.stdout.write(chunk)\n"
	    "        sys.stdout.flush()\n"
	    "        d = time.time() - t\n"
	    "        if d < 1:\n"
	    "            time.sleep(1 - d)\n"
	    "    open('" FLOOD_OVER "', 'w').close()\n"
	    "threading.Thread(target=flood, daemon=True).start()\n"
	    "print('started')\n";
	struct midcall m = {0};
	struct h_server *s;
	json_object *r;
	long base, kb, hwm;
	long long dropped;
	pid_t w;
	char *cid;

	s = adv_start(NULL);
	cid = h_create(s, NULL);
	w = the_worker(s);
	base = h_status_kb(w, "VmRSS");
	r = adv_code(s, cid, "python", flood, 30, NULL);
	cr_assert(!h_is_error(r), "the flood call: %.500s", h_text(r));
	cr_expect_str_eq(h_str(r, "structuredContent.stdout"), "started\n");
	json_object_put(r);

	m.s = s;
	m.cid = cid;
	m.lang = "python";
	m.src = "print('mid')";
	kb = watch_rss(w, 32000, mid_call, &m);
	hwm = h_status_kb(w, "VmHWM");
	expect_held_nowhere("python flood", base, kb, hwm);
	cr_expect(m.answered, "the call during the flood did not answer");
	cr_expect_lt(
	    m.ms, 20000, "the call during the flood took %lld ms", m.ms);

	flood_over(s, cid);
	dropped = next_call_ok(s, cid, "python", "print(6 * 7)", "42\n");
	cr_expect_gt(dropped, 0, "no dropped output said");
	adv_alive(s, cid);
	h_stop(s, cid);
	free(cid);
	adv_finish(s);
}

Test(output, javascript_timer_floods_after_its_call, .timeout = 240)
{
	static const char flood[] =
	    "const fs = require('fs'), chunk = 'y'.repeat(1 << 20);\n"
	    "const end = Date.now() + 10500;\n"
	    "setTimeout(() => {\n"
	    "  const t = setInterval(() => {\n"
	    "    if (Date.now() > end) {\n"
	    "      clearInterval(t);\n"
	    "      return fs.writeFileSync('" FLOOD_OVER "', '');\n"
	    "    }\n"
	    "    for (let i = 0; i < 5; i++) try { fs.writeSync(1, chunk); } catch (e) {}\n"
	    "  }, 100);\n"
	    "}, 500);\n"
	    "'started'\n";
	struct h_server *s;
	json_object *r;
	const char *err;
	long base, kb, hwm;
	long long dropped, ms;
	pid_t w;
	char *cid;

	s = adv_start("--node-image", NODE_IMAGE, NULL);
	cid = h_create(s, "{\"image\":\"" NODE_IMAGE "\"}");
	w = the_worker(s);
	base = h_status_kb(w, "VmRSS");
	r = adv_code(s, cid, "javascript", flood, 30, NULL);
	cr_assert(!h_is_error(r), "the flood call: %.500s", h_text(r));
	cr_expect_str_eq(h_str(r, "structuredContent.stdout"), "started\n");
	json_object_put(r);

	kb = watch_rss(w, 13000, NULL, NULL);
	hwm = h_status_kb(w, "VmHWM");
	expect_held_nowhere("javascript flood", base, kb, hwm);

	flood_over(s, cid);
	dropped = next_call_ok(s, cid, "javascript", "6 * 7", "42\n");
	cr_expect_gt(dropped, 0, "no dropped output said");

	/* A 3 MB error: answered, cut, the whole of it on stderr. */
	r = adv_code(s, cid, "javascript",
	    "throw new Error('x'.repeat(3000000))", 60, &ms);
	err = h_str(r, "structuredContent.error");
	fprintf(stderr, "3 MB JavaScript error: %lld ms, error %zu bytes\n", ms,
	    err != NULL ? strlen(err) : 0);
	/* Code that raised: a result, not a success. */
	cr_expect(adv_failed(r) && h_get(r, "structuredContent.error") != NULL,
	    "no error: %.300s", h_text(r));
	cr_expect_lt(ms, 20000, "answered in %lld ms", ms);
	cr_expect(err != NULL && strlen(err) < 64 * 1024 &&
	              h_contains(err, "characters cut"),
	    "the cut error: %.300s", err != NULL ? err : "(none)");
	json_object_put(r);
	h_stop(s, cid);
	free(cid);
	adv_finish(s);
}

/* The activity log of a sandbox, as text (caller frees). */
static char *
activity_log(struct h_server *s, const char *cid)
{
	char params[256];
	json_object *m;
	const char *t;
	char *out;

	snprintf(
	    params, sizeof params, "{\"uri\":\"containers://%s/logs\"}", cid);
	m = h_request(s, "resources/read", params, 30000);
	t = h_str(m, "result.contents.0.text");
	out = strdup(t != NULL ? t : "");
	cr_assert(out != NULL);
	json_object_put(m);
	return out;
}

Test(output, output_between_calls_is_counted_not_lost_silently, .timeout = 180)
{
	static const char late[] = "import sys, threading, time\n"
	                           "def late():\n"
	                           "    time.sleep(1)\n"
	                           "    for _ in range(1000):\n"
	                           "        sys.stdout.write('late\\n')\n"
	                           "    sys.stdout.flush()\n"
	                           "    sys.stderr.write('E' * 300)\n"
	                           "    sys.stderr.flush()\n"
	                           "threading.Thread(target=late).start()\n";
	struct h_server *s;
	json_object *r;
	char *cid, *log;

	s = adv_start(NULL);
	cid = h_create(s, NULL);
	r = adv_code(s, cid, "python", late, 30, NULL);
	cr_assert(!h_is_error(r), "%.500s", h_text(r));
	cr_expect_str_eq(h_str(r, "structuredContent.stdout"), "");
	json_object_put(r);
	sleep(3);
	r = adv_code(s, cid, "python", "print('next')", 30, NULL);
	fprintf(stderr, "the call after: %.500s\n", h_text(r));
	cr_expect(!h_is_error(r), "%.500s", h_text(r));
	cr_expect_str_eq(h_str(r, "structuredContent.stdout"), "next\n");
	cr_expect_eq(h_int(r, "structuredContent.dropped_stdout_bytes"), 5000);
	cr_expect_eq(h_int(r, "structuredContent.dropped_stderr_bytes"), 300);
	cr_expect(h_contains(h_text(r), "dropped"),
	    "the text does not say what was dropped: %.500s", h_text(r));
	json_object_put(r);
	log = activity_log(s, cid);
	cr_expect(h_contains(log, "5000 bytes of stdout and 300 of stderr"),
	    "the activity log does not say what was dropped: %.2000s", log);
	free(log);
	/* Said once: the call after that drops nothing. */
	r = adv_code(s, cid, "python", "print('again')", 30, NULL);
	cr_expect_eq(h_get(r, "structuredContent.dropped_stdout_bytes"), NULL,
	    "%.500s", h_text(r));
	json_object_put(r);
	h_stop(s, cid);
	free(cid);
	adv_finish(s);
}

/* A string of n bytes of c (caller frees). */
static char *
filled(size_t n, char c)
{
	char *p = malloc(n + 1);

	cr_assert(p != NULL);
	memset(p, c, n);
	p[n] = '\0';
	return p;
}

Test(output, three_megabyte_traceback_is_cut_and_answered, .timeout = 180)
{
	struct h_server *s;
	json_object *r;
	const char *err;
	long long ms;
	char *cid;

	s = adv_start(NULL);
	cid = h_create(s, NULL);
	json_object_put(adv_code(s, cid, "python", "kept = 7", 30, NULL));
	r = adv_code(
	    s, cid, "python", "raise ValueError('x' * 3000000)", 60, &ms);
	err = h_str(r, "structuredContent.error");
	fprintf(stderr, "3 MB traceback: %lld ms, error %zu bytes, %.300s\n",
	    ms, err != NULL ? strlen(err) : 0, err != NULL ? err : "(none)");
	/* Code that raised: a result, not a success. */
	cr_expect(adv_failed(r) && h_get(r, "structuredContent.error") != NULL,
	    "no error: %.300s", h_text(r));
	cr_expect_lt(ms, 20000, "answered in %lld ms", ms);
	cr_assert(err != NULL, "no error member");
	cr_expect_lt(strlen(err), 64 * 1024, "error of %zu bytes", strlen(err));
	cr_expect(
	    h_contains(err, "ValueError") && h_contains(err, "characters cut"),
	    "the cut error: %.300s", err);
	cr_expect_gt(h_int(r, "structuredContent.stderr_bytes"), 3000000,
	    "the whole traceback is not on stderr");
	cr_expect(!h_bool(r, "structuredContent.session_lost"));
	json_object_put(r);
	/* The session lives on. */
	r = adv_code(s, cid, "python", "print(kept)", 30, NULL);
	cr_expect_str_eq(
	    h_str(r, "structuredContent.stdout"), "7\n", "%.300s", h_text(r));
	json_object_put(r);
	h_stop(s, cid);
	free(cid);
	adv_finish(s);
}

Test(output, oversize_inputs_get_one_answer, .timeout = 240)
{
	struct h_server *s;
	json_object *r, *a, *env;
	long long ms, t0;
	char *cid, *big, *src, *bin;
	size_t n;

	s = adv_start(NULL);
	cid = h_create(s, NULL);

	/* 2 MB of Python code: refused at once, the limit named. */
	big = filled(2 * 1024 * 1024, 'a');
	n = strlen(big) + 64;
	src = malloc(n);
	cr_assert(src != NULL);
	snprintf(src, n, "x = '%s'\nprint(len(x))", big);
	r = adv_code(s, cid, "python", src, 60, &ms);
	fprintf(stderr, "2 MB of Python: %lld ms: %.300s\n", ms, h_text(r));
	cr_expect(h_is_error(r));
	cr_expect(h_contains(h_text(r), "1 MiB"), "%.300s", h_text(r));
	cr_expect_lt(ms, 10000, "answered in %lld ms", ms);
	json_object_put(r);

	/* 2 MB of bash: it goes on standard input, streamed: it runs. */
	snprintf(src, n, ": '%s'\necho ran", big);
	r = adv_code(s, cid, "bash", src, 60, &ms);
	fprintf(stderr, "2 MB of bash: %lld ms: %.200s\n", ms, h_text(r));
	cr_expect(!h_is_error(r), "%.300s", h_text(r));
	cr_expect_str_eq(h_str(r, "structuredContent.stdout"), "ran\n");
	/* bash reads a pipe a byte at a time: seconds, not a hang. */
	cr_expect_lt(ms, 60000, "answered in %lld ms", ms);
	json_object_put(r);
	free(src);

	/* 512 KiB of stdin, bytes 0x01: 3 MiB once JSON-escaped. */
	bin = filled(512 * 1024, '\001');
	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(a, "commands", json_object_new_string("wc -c"));
	json_object_object_add(a, "stdin", json_object_new_string(bin));
	t0 = h_now_ms();
	r = h_exec_obj(s, cid, a, 60000);
	ms = h_now_ms() - t0;
	fprintf(stderr, "512 KiB of escaped stdin: %lld ms: %.200s\n", ms,
	    h_text(r));
	cr_expect(!h_is_error(r), "%.300s", h_text(r));
	cr_expect_str_eq(adv_out(r), "524288\n");
	cr_expect_lt(ms, 20000, "answered in %lld ms", ms);
	json_object_put(r);
	free(bin);

	/* A 2 MB environment: refused, the limit named. */
	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(a, "commands", json_object_new_string("true"));
	env = json_object_new_object();
	json_object_object_add(env, "BIG", json_object_new_string(big));
	json_object_object_add(a, "env", env);
	t0 = h_now_ms();
	r = h_exec_obj(s, cid, a, 60000);
	ms = h_now_ms() - t0;
	fprintf(stderr, "2 MB environment: %lld ms: %.300s\n", ms, h_text(r));
	cr_expect(h_is_error(r) || h_int(h_first(r), "exit_code") != 0,
	    "%.300s", h_text(r));
	cr_expect(h_contains(h_text(r), "1 MiB") ||
	              h_contains(h_text(r), "too large") ||
	              h_contains(h_text(r), "limit"),
	    "%.300s", h_text(r));
	cr_expect_lt(ms, 10000, "answered in %lld ms", ms);
	json_object_put(r);
	free(big);

	adv_alive(s, cid);
	h_stop(s, cid);
	free(cid);
	adv_finish(s);
}

Test(output, forged_end_marker_that_never_ends, .timeout = 180)
{
	/* The nonce is on the interpreter's command line, which the code
	 * can read: a marker line with no end is held only so far. */
	static const char forge[] =
	    "import sys\n"
	    "a = open('/proc/self/cmdline', 'rb').read().split(b'\\0')\n"
	    "n = [x for x in a if len(x) == 32][-1].decode()\n"
	    "sys.stdout.write('\\x1eMCPEND:' + n + 'x' * (8 << 20))\n"
	    "sys.stdout.flush()\n";
	struct h_server *s;
	json_object *r;
	long long ms;
	long base, hwm;
	pid_t w;
	char *cid;

	s = adv_start(NULL);
	cid = h_create(s, NULL);
	w = the_worker(s);
	base = h_status_kb(w, "VmRSS");
	r = adv_code(s, cid, "python", forge, 60, &ms);
	hwm = h_status_kb(w, "VmHWM");
	fprintf(stderr,
	    "forged marker: %lld ms, worker VmHWM %ld KiB: %.300s\n", ms, hwm,
	    h_text(r));
	cr_expect(adv_failed(r), "%.300s", h_text(r));
	cr_expect(h_bool(r, "structuredContent.session_lost"));
	cr_expect(h_contains(h_str(r, "structuredContent.error"), "end marker"),
	    "%.300s", h_text(r));
	cr_expect_lt(ms, 20000, "answered in %lld ms", ms);
	/* The 8 MiB line held nowhere: the worker's peak stays under the
	 * bound (under ASan, its growth: see expect_held_nowhere()). */
	expect_held_nowhere("forged marker", base, hwm, hwm);
	json_object_put(r);
	next_call_ok(s, cid, "python", "print(6 * 7)", "42\n");
	h_stop(s, cid);
	free(cid);
	adv_finish(s);
}

/* No byte of out is one a terminal obeys (but newline and tab). */
static void
expect_inert(const char *what, const char *out)
{
	const unsigned char *p;

	for (p = (const unsigned char *)out; *p != '\0'; p++) {
		cr_expect(*p >= 0x20 || *p == '\n' || *p == '\t',
		    "%s: control character 0x%02x at %zu", what, *p,
		    (size_t)(p - (const unsigned char *)out));
		cr_expect(!(p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f),
		    "%s: C1 control at %zu", what,
		    (size_t)(p - (const unsigned char *)out));
	}
	cr_expect(h_contains(out, "\\x1b]0;pwned\\x07"), "%s: %s", what, out);
	cr_expect(h_contains(out, "\\x1b]52;c;cm0gLXJmIC8=\\x07"), "%s", what);
	cr_expect(
	    h_contains(out, "\\x1b[1A\\x1b[2K\\x0d$ rm -rf /"), "%s", what);
	cr_expect(h_contains(out, "\\u009b31m"), "%s", what);
}

/*
 * A sandbox prints what a terminal obeys: OSC 0 (the window's title),
 * OSC 52 (the operator's clipboard), a cursor movement and an erase of
 * the line (to forge one that looks like a command that ran), and C1's
 * CSI.  `mcp-sandboxd logs` and `logs -f` show them escaped; `--json`
 * gives them exactly.
 */
Test(
    output, escape_sequences_never_reach_the_operators_terminal, .timeout = 180)
{
	/* Its two lines, as the log keeps them (each after its stamp). */
	static const char raw1[] = "| \x1b]0;pwned\x07\x1b]52;c;cm0gLXJmIC8="
	                           "\x07\x1b[1A\x1b[2K\r$ rm -rf /\n";
	static const char raw2[] = "| \xc2\x9b"
	                           "31m\n";
	char dir[64], *cid, *out, *line, *save = NULL;
	struct h_server *s;
	json_object *j;
	int status;
	size_t n;

	snprintf(dir, sizeof dir, "/tmp/mcp-ctl-adv-XXXXXX");
	cr_assert(mkdtemp(dir) != NULL);
	s = h_start("--control-dir", dir, NULL);
	json_object_put(h_initialize(s));
	cid = h_create(s, "{\"name\":\"esc-box\"}");
	free(h_exec_ok(s, cid,
	    "printf '\\033]0;pwned\\007\\033]52;c;cm0gLXJmIC8=\\007"
	    "\\033[1A\\033[2K\\r$ rm -rf /\\n\\302\\23331m\\n'"));

	out = h_cli(dir, "logs esc-box", &status);
	cr_expect_eq(status, 0, "%s", out);
	expect_inert("logs", out);
	free(out);
	out = h_cli(dir, "logs -f esc-box & sleep 3; kill $!", &status);
	expect_inert("logs -f", out);
	free(out);

	/* --json: each line an object whose text holds the bytes exactly. */
	out = h_cli(dir, "logs --json esc-box", &status);
	cr_expect_eq(status, 0, "%s", out);
	n = 0;
	for (line = strtok_r(out, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		j = h_parse(line);
		if (h_str(j, "text") != NULL &&
		    h_contains(h_str(j, "text"), raw1) &&
		    h_contains(h_str(j, "text"), raw2))
			n++;
		json_object_put(j);
	}
	cr_expect_eq(n, 1, "--json does not give the bytes exactly");
	free(out);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
	cr_assert(rmdir(dir) == 0);
}

/* Python that makes the header of a PNG of w x h (and nothing of it). */
#define PNG_HEAD_PY                                                            \
	"import os, struct\n"                                                  \
	"def png(w, h):\n"                                                     \
	"    return (b'\\x89PNG\\r\\n\\x1a\\n' + struct.pack('>I', 13) + "     \
	"b'IHDR' + struct.pack('>II5B', w, h, 8, 2, 0, 0, 0) + b'\\0' * 4 "    \
	"+ struct.pack('>I', 0) + b'IEND\\xaeB\\x60\\x82')\n"

/* The blocks of a tool result of type type. */
static int
blocks_of(json_object *r, const char *type)
{
	json_object *content = h_get(r, "content");
	size_t i;
	int n = 0;

	for (i = 0; content != NULL && i < json_object_array_length(content);
	     i++) {
		const char *t =
		    h_str(json_object_array_get_idx(content, i), "type");

		n += t != NULL && strcmp(t, type) == 0;
	}
	return n;
}

static json_object *
read_picture(struct h_server *s, const char *cid, const char *path)
{
	json_object *a;

	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(a, "file_path", json_object_new_string(path));
	return h_call_tool_obj(s, "read_file", a, 60000);
}

/*
 * Picture bombs: a 45-byte PNG that declares 65535x65535 pixels (16 GiB
 * decoded) is no image block, whether read_file reads it or execute_code
 * leaves it in its output folder: a link to its file, and why.  The cap
 * is on pixels (--max-image-pixels, 4096x4096 by default), not only on
 * bytes; one of 4096x4096 is shown.
 */
Test(output, picture_bombs_are_links_not_images, .timeout = 180)
{
	struct h_server *s;
	json_object *r, *a, *im;
	char *cid;

	s = h_start(NULL);
	json_object_put(h_initialize(s));
	cid = h_create(s, NULL);
	free(h_exec_ok(s, cid,
	    "python3 -c \"" PNG_HEAD_PY
	    "open('/app/bomb.png', 'wb').write(png(65535, 65535))\n"
	    "open('/app/wide.png', 'wb').write(png(65535, 257))\n"
	    "open('/app/cap.png', 'wb').write(png(4096, 4096))\""));

	r = read_picture(s, cid, "/app/bomb.png");
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect_eq(blocks_of(r, "image"), 0, "an image block: %s",
	    json_object_to_json_string(r));
	cr_expect_eq(blocks_of(r, "resource_link"), 1, "%s",
	    json_object_to_json_string(r));
	im = h_get(r, "structuredContent.image");
	cr_expect(!h_bool(im, "shown"));
	cr_expect_eq(h_int(im, "width"), 65535);
	cr_expect(h_contains(h_str(im, "note"), "--max-image-pixels"), "%s",
	    json_object_to_json_string(im));
	json_object_put(r);
	r = read_picture(s, cid, "/app/wide.png");
	cr_expect_eq(blocks_of(r, "image"), 0, "65535x257 shown");
	json_object_put(r);
	/* A GIF of a 1x1 screen and a 65535x65535 frame (29 bytes). */
	free(h_exec_ok(s, cid,
	    "python3 -c \"open('/app/bomb.gif', 'wb').write(b'GIF89a"
	    "\\x01\\x00\\x01\\x00\\x00\\x00\\x00,\\x00\\x00\\x00\\x00"
	    "\\xff\\xff\\xff\\xff\\x00\\x02\\x02L\\x01\\x00;')\""));
	r = read_picture(s, cid, "/app/bomb.gif");
	cr_expect_eq(blocks_of(r, "image"), 0, "a GIF bomb shown: %s",
	    json_object_to_json_string(r));
	cr_expect_eq(h_int(r, "structuredContent.image.width"), 65535, "%s",
	    json_object_to_json_string(r));
	json_object_put(r);
	r = read_picture(s, cid, "/app/cap.png");
	cr_expect_eq(
	    blocks_of(r, "image"), 1, "4096x4096 not shown: %s", h_text(r));
	json_object_put(r);

	a = json_object_new_object();
	json_object_object_add(a, "container_id", json_object_new_string(cid));
	json_object_object_add(a, "language", json_object_new_string("python"));
	json_object_object_add(
	    a, "dependencies", json_object_new_string("none"));
	json_object_object_add(a, "code",
	    json_object_new_string(PNG_HEAD_PY
	        "open(os.environ['MCP_OUTPUT_DIR'] + '/bomb.png', 'wb')"
	        ".write(png(65535, 65535))\n"));
	r = h_call_tool_obj(s, "execute_code", a, 120000);
	cr_expect(!h_is_error(r), "%s", h_text(r));
	cr_expect_eq(blocks_of(r, "image"), 0, "an image block: %s", h_text(r));
	cr_expect_eq(blocks_of(r, "resource_link"), 1, "%s",
	    json_object_to_json_string(r));
	im = h_get(r, "structuredContent.images.0");
	cr_expect(
	    h_bool(im, "over_pixels"), "%s", json_object_to_json_string(r));
	cr_expect(!h_bool(im, "shown"));
	cr_expect(h_contains(h_text(r), "--max-image-pixels"), "%s", h_text(r));
	json_object_put(r);
	/* The four over the cap, counted. */
	cr_expect_eq(adv_stat(s, "limits.pictures_over_pixels"), 4);
	h_stop(s, cid);
	free(cid);
	h_finish(s);
}

/* Bytes of disk held under a tree (what du counts). */
static long long du_bytes;

static int
du_add(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)flag;
	(void)ftw;
	du_bytes += (long long)st->st_blocks * 512;
	return 0;
}

static long long
du(const char *path)
{
	du_bytes = 0;
	nftw(path, du_add, 16, FTW_PHYS);
	return du_bytes;
}

/*
 * Eight background processes write 4097-byte chunks without end into
 * rings of a 16 MiB spool: the disk the spools hold stays within the
 * quota (a ring drops whole blocks; one that punched unaligned holes
 * kept their edge blocks: 467 MiB held after 20 s), while the rings keep
 * their newest bytes readable.
 */
Test(output, background_rings_hold_the_spool_quota_on_disk, .timeout = 240)
{
	struct h_server *s;
	json_object *r;
	long long base, most = 0, now, produced = 0, t0, ids[8] = {0};
	char args[512], *cid;
	int i, n;

	s = adv_start("--spool-mb", "16", NULL);
	cid = h_create(s, NULL);
	base = du(adv_tmpdir());
	for (i = 0; i < 8; i++)
		adv_background(s, cid,
		    "dd if=/dev/zero bs=4097 count=100000000 status=none", 120);
	t0 = h_now_ms();
	while (h_now_ms() - t0 < 20000) {
		if ((now = du(adv_tmpdir())) > most)
			most = now;
		usleep(250 * 1000);
	}
	snprintf(args, sizeof args, "{\"container_id\":\"%s\"}", cid);
	r = h_call_tool(s, "process_list", args);
	n = (int)json_object_array_length(
	    h_get(r, "structuredContent.processes"));
	cr_expect_eq(n, 8, "%s", h_text(r));
	for (i = 0; i < n; i++) {
		snprintf(
		    args, sizeof args, "structuredContent.processes.%d", i);
		produced += h_int(h_get(r, args), "stdout_bytes");
		if (i < 8)
			ids[i] = h_int(h_get(r, args), "process_id");
	}
	json_object_put(r);
	/* The rings went round: what was written is past the quota. */
	cr_expect_gt(
	    produced, 2 * 16LL << 20, "only %lld bytes written", produced);
	cr_log_info("%lld KiB held at most, %lld KiB written",
	    (most - base) / 1024, produced / 1024);
	/* The quota, a block of each spool's last, and the directories. */
	cr_expect_leq(most - base, (16LL << 20) + 8 * 4096 + 64 * 1024,
	    "%lld KiB held for a 16 MiB spool (%lld KiB written)",
	    (most - base) / 1024, produced / 1024);
	/* Each ring keeps its newest bytes, however late it started: the
	 * largest ring gives room first, not the one that needs it. */
	for (i = 0; i < n && i < 8; i++) {
		snprintf(args, sizeof args,
		    "{\"container_id\":\"%s\",\"process_id\":%lld,"
		    "\"max_bytes\":4097}",
		    cid, ids[i]);
		r = h_call_tool(s, "process_output", args);
		cr_expect_gt(h_int(r, "structuredContent.stdout_skipped"), 0,
		    "%s", h_text(r));
		cr_expect_eq(json_object_get_string_len(
		                 h_get(r, "structuredContent.stdout")),
		    4097, "%s", h_text(r));
		json_object_put(r);
	}
	/* What the rings dropped is counted (sandbox://stats, /metrics). */
	cr_expect_gt(adv_stat(s, "limits.spool_dropped_bytes"), 16LL << 20);
	h_stop(s, cid);
	free(cid);
	adv_finish(s);
}
