/*
 * mcp-sandboxd top: one server's figures, asked once a second and drawn
 * in place in the terminal (the alternate screen, raw input); q or
 * Ctrl-C quits and gives the terminal back as it was, and so does a
 * signal.  With --json, or when stdout is not a terminal, one snapshot.
 */
#include <sys/ioctl.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"
#include "termtext.h"

#define TOP_INTERVAL_MS 1000

static struct termios saved;
static int raw_on;
static volatile sig_atomic_t top_quit;
static int drawing_tty; /* lines end in escapes for the terminal */

static void
top_signal(int sig)
{
	(void)sig;
	top_quit = 1;
}

static void
term_restore(void)
{
	if (!raw_on)
		return;
	/* The cursor back, the normal screen back, the modes back. */
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
	raw_on = 0;
}

static int
term_raw(void)
{
	struct termios t;

	if (tcgetattr(STDIN_FILENO, &saved) == -1)
		return -1;
	t = saved;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG | IEXTEN);
	t.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) == -1)
		return -1;
	raw_on = 1;
	fputs("\033[?1049h\033[?25l", stdout);
	return 0;
}

static long long
num(json_object *o, const char *path)
{
	json_object *v = o;
	char key[64];
	const char *p = path, *dot;

	while (v != NULL && *p != '\0') {
		dot = strchr(p, '.');
		snprintf(key, sizeof key, "%.*s",
		    (int)(dot != NULL ? dot - p : (long)strlen(p)), p);
		v = json_object_object_get(v, key);
		p = dot != NULL ? dot + 1 : p + strlen(p);
	}
	return v != NULL ? json_object_get_int64(v) : 0;
}

static void
fmt_ms(json_object *lat, const char *key, char *buf, size_t len)
{
	json_object *v = json_object_object_get(lat, key);

	if (v == NULL)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.0fms", json_object_get_double(v));
}

static void line(int cols, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* One line of the screen, cut at its width, the rest of it cleared. */
static void
line(int cols, const char *fmt, ...)
{
	char buf[512], safe[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	/* The names in it are the server's and its engines' (termtext.h). */
	termtext(buf, strlen(buf), 0, safe, sizeof safe);
	if (cols > 0 && cols < (int)sizeof safe)
		safe[cols] = '\0';
	printf(drawing_tty ? "%s\033[K\r\n" : "%s\n", safe);
}

/* One latency line: the percentiles of the histogram named. */
static void
draw_latency(json_object *t, int cols, const char *name)
{
	char p50[32], p90[32], p99[32];
	json_object *lat;

	lat =
	    json_object_object_get(json_object_object_get(t, "latency"), name);
	fmt_ms(lat, "p50_ms", p50, sizeof p50);
	fmt_ms(lat, "p90_ms", p90, sizeof p90);
	fmt_ms(lat, "p99_ms", p99, sizeof p99);
	line(cols, "%-10s p50 %s  p90 %s  p99 %s  (%lld)", name, p50, p90, p99,
	    num(lat, "count"));
}

static void
draw(json_object *t, double rate, int tty)
{
	json_object *engines, *e, *pool;
	struct json_object_iterator it, end;
	char pl[256];
	struct winsize ws;
	int cols = 0, n;
	size_t i;

	drawing_tty = tty;
	if (tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
		cols = ws.ws_col;
	if (tty)
		fputs("\033[H", stdout);
	line(cols, "mcp-sandboxd top: server %lld (%s), up %llds   q quits",
	    num(t, "server.pid"),
	    json_object_get_string(json_object_object_get(
	        json_object_object_get(t, "server"), "transport")),
	    num(t, "server.uptime_seconds"));
	line(cols, "%s", "");
	line(cols, "sandboxes  %lld live (%lld created, %lld removed)",
	    num(t, "sandboxes.live"), num(t, "sandboxes.created"),
	    num(t, "sandboxes.removed"));
	line(cols, "workers    %lld alive (%lld restarted)",
	    num(t, "workers.alive"), num(t, "workers.restarted"));
	if (rate >= 0)
		line(cols,
		    "execs      %lld run, %.1f/s (%lld failed, %lld timed out)",
		    num(t, "execs.run"), rate, num(t, "execs.failed"),
		    num(t, "execs.timed_out"));
	else
		line(cols,
		    "execs      %lld run, -/s (%lld failed, %lld timed out)",
		    num(t, "execs.run"), num(t, "execs.failed"),
		    num(t, "execs.timed_out"));
	draw_latency(t, cols, "create");
	draw_latency(t, cols, "exec");
	line(cols, "memory     supervisor %.1f MiB, workers %.1f MiB",
	    (double)num(t, "memory.supervisor_rss_bytes") / (1 << 20),
	    (double)num(t, "memory.workers_rss_bytes") / (1 << 20));
	engines = json_object_object_get(t, "engines");
	for (i = 0; i < json_object_array_length(engines); i++) {
		e = json_object_array_get_idx(engines, i);
		line(cols,
		    "%s %s %s, %lld sandboxes, %lld MiB placed, %lld lost",
		    i == 0 ? "engines   " : "          ",
		    json_object_get_string(json_object_object_get(e, "url")),
		    json_object_get_string(json_object_object_get(e, "state")),
		    num(e, "sandboxes"), num(e, "memory_mb_placed"),
		    num(e, "lost"));
	}
	pool = json_object_object_get(t, "pool");
	pl[0] = '\0';
	n = 0;
	if (pool != NULL && json_object_is_type(pool, json_type_object)) {
		it = json_object_iter_begin(pool);
		end = json_object_iter_end(pool);
		while (!json_object_iter_equal(&it, &end) &&
		       n < (int)sizeof pl - 1) {
			n += snprintf(pl + n, sizeof pl - (size_t)n, "%s%s %s",
			    n > 0 ? ", " : "", json_object_iter_peek_name(&it),
			    json_object_get_string(
			        json_object_iter_peek_value(&it)));
			json_object_iter_next(&it);
		}
	}
	line(cols, "pool       %s", pl[0] != '\0' ? pl : "-");
	line(cols, "engine errors %lld", num(t, "engine_errors"));
	if (tty)
		fputs("\033[J", stdout);
	fflush(stdout);
}

/* top on one server: 0, or 1 when it could not be asked. */
int
cli_top(struct cli_conn *c, int json)
{
	long long prev_run = -1, prev_ms = 0, now, next;
	struct sigaction sa;
	struct pollfd pfd;
	json_object *t;
	double rate;
	int tty, rv = 0, wait;
	ssize_t n;
	char ch;

	tty = !json && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	if (!tty) {
		if ((t = cli_request(c, "top", NULL, 0)) == NULL ||
		    !json_object_get_boolean(json_object_object_get(t, "ok"))) {
			fprintf(stderr,
			    "mcp-sandboxd: server %d did not answer\n",
			    (int)c->pid);
			json_object_put(t);
			return 1;
		}
		if (json)
			printf("%s\n", json_object_to_json_string_ext(t,
			                   JSON_C_TO_STRING_PLAIN |
			                       JSON_C_TO_STRING_NOSLASHESCAPE));
		else
			draw(t, -1, 0);
		json_object_put(t);
		return 0;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = top_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (term_raw() == -1) {
		fprintf(stderr, "mcp-sandboxd: the terminal: %s\n",
		    strerror(errno));
		return 1;
	}
	while (!top_quit) {
		if ((t = cli_request(c, "top", NULL, 0)) == NULL ||
		    !json_object_get_boolean(json_object_object_get(t, "ok"))) {
			json_object_put(t);
			term_restore();
			fprintf(stderr, "mcp-sandboxd: server %d went away\n",
			    (int)c->pid);
			return 1;
		}
		now = clock_ms();
		rate = -1;
		if (prev_run >= 0 && now > prev_ms)
			rate = (double)(num(t, "execs.run") - prev_run) * 1000 /
			       (double)(now - prev_ms);
		prev_run = num(t, "execs.run");
		prev_ms = now;
		draw(t, rate, 1);
		json_object_put(t);
		next = now + TOP_INTERVAL_MS;
		while (!top_quit && (wait = (int)(next - clock_ms())) > 0) {
			pfd.fd = STDIN_FILENO;
			pfd.events = POLLIN;
			if (poll(&pfd, 1, wait) <= 0)
				continue;
			n = read(STDIN_FILENO, &ch, 1);
			/* q, Ctrl-C, or the terminal hung up. */
			if (n == 0 ||
			    (n == 1 && (ch == 'q' || ch == 'Q' || ch == 3)))
				top_quit = 1;
		}
	}
	term_restore();
	return rv;
}
