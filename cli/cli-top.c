/*
 * mcp-sandboxd top: one server's figures, asked once a second and drawn
 * in place in the terminal (the alternate screen, raw input); q or
 * Ctrl-C quits and gives the terminal back as it was, and so does a
 * signal.  Below them a table of its sandboxes (its "ls"), sorted by a
 * key as htop sorts (c CPU, m memory, p pids, e execs/s, a age, i idle,
 * n name), its rates (CPU %, execs/s) averaged over the last
 * TOP_WINDOW_MS of looks.  With --json, or when stdout is not a
 * terminal, one snapshot of two looks TOP_INTERVAL_MS apart.
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
#define TOP_WINDOW_MS 5000 /* rates are averaged over this much */
#define TOP_SAMPLES 8 /* looks kept per sandbox (> the window's) */

/* What the looks said of one sandbox: its cumulative figures. */
struct sample {
	long long ms, cpu_ns, execs;
	int have_cpu;
};
struct tracked {
	char id[65];
	struct sample s[TOP_SAMPLES];
	int n; /* samples kept, the newest last */
	int seen; /* in the last look */
};
static struct tracked *tracked;
static size_t ntracked;
static char sort_key = 'c';

static struct termios saved;
static int raw_on;
static volatile sig_atomic_t top_quit;
static int drawing_tty; /* lines end in escapes for the terminal */
static int lines_drawn; /* on this screen so far */

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
	lines_drawn++;
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

static struct tracked *
track(const char *id)
{
	size_t i;

	for (i = 0; i < ntracked; i++)
		if (strcmp(tracked[i].id, id) == 0)
			return &tracked[i];
	tracked = realloc(tracked, (ntracked + 1) * sizeof *tracked);
	if (tracked == NULL)
		abort();
	memset(&tracked[ntracked], 0, sizeof *tracked);
	snprintf(tracked[ntracked].id, sizeof tracked[0].id, "%s", id);
	return &tracked[ntracked++];
}

/*
 * One look at the server's sandboxes (its "ls" answer's list): each
 * one's figures kept; those gone forgotten.  Each entry of list gains
 * cpu_percent and execs_per_second when two looks far enough apart say.
 */
static void
look(json_object *list, long long now)
{
	struct tracked *tr;
	struct sample *a, *b;
	json_object *sb, *v;
	size_t i, k;
	double dt;

	for (i = 0; i < ntracked; i++)
		tracked[i].seen = 0;
	for (k = 0; k < json_object_array_length(list); k++) {
		sb = json_object_array_get_idx(list, k);
		if ((v = json_object_object_get(sb, "id")) == NULL ||
		    !json_object_is_type(v, json_type_string))
			continue;
		tr = track(json_object_get_string(v));
		tr->seen = 1;
		if (tr->n == TOP_SAMPLES) {
			memmove(&tr->s[0], &tr->s[1],
			    (TOP_SAMPLES - 1) * sizeof tr->s[0]);
			tr->n--;
		}
		b = &tr->s[tr->n++];
		b->ms = now;
		b->execs = num(sb, "execs");
		b->have_cpu =
		    (v = json_object_object_get(sb, "cpu_ns")) != NULL;
		b->cpu_ns = b->have_cpu ? json_object_get_int64(v) : 0;
		/* The oldest look within the window. */
		for (i = 0;
		     i + 1 < (size_t)tr->n && now - tr->s[i].ms > TOP_WINDOW_MS;
		     i++)
			;
		a = &tr->s[i];
		if (a == b || (dt = (double)(b->ms - a->ms) / 1000) < 0.2)
			continue;
		if (a->have_cpu && b->have_cpu && b->cpu_ns >= a->cpu_ns)
			json_object_object_add(sb, "cpu_percent",
			    json_object_new_double(
			        (double)(b->cpu_ns - a->cpu_ns) / 1e9 / dt *
			        100));
		if (b->execs >= a->execs)
			json_object_object_add(sb, "execs_per_second",
			    json_object_new_double(
			        (double)(b->execs - a->execs) / dt));
	}
	for (i = 0; i < ntracked;) {
		if (!tracked[i].seen)
			tracked[i] = tracked[--ntracked];
		else
			i++;
	}
}

static double
dbl(json_object *o, const char *key)
{
	json_object *v = json_object_object_get(o, key);

	return v != NULL ? json_object_get_double(v) : -1;
}

/* The order of the table: the key's figure, biggest first (names A-Z). */
static int
by_key(const void *pa, const void *pb)
{
	json_object *a = *(json_object *const *)pa;
	json_object *b = *(json_object *const *)pb;
	const char *k;
	double x, y;
	int c;

	switch (sort_key) {
	case 'n':
		c = strcmp(
		    json_object_get_string(json_object_object_get(a, "name")),
		    json_object_get_string(json_object_object_get(b, "name")));
		return c;
	case 'm':
		k = "memory_bytes";
		break;
	case 'p':
		k = "pids";
		break;
	case 'e':
		k = "execs_per_second";
		break;
	case 'a':
		k = "age_seconds";
		break;
	case 'i':
		k = "idle_seconds";
		break;
	default:
		k = "cpu_percent";
	}
	x = dbl(a, k);
	y = dbl(b, k);
	return x < y ? 1 : x > y ? -1 : 0;
}

static const char *
sort_name(void)
{
	switch (sort_key) {
	case 'n':
		return "name";
	case 'm':
		return "memory";
	case 'p':
		return "pids";
	case 'e':
		return "execs/s";
	case 'a':
		return "age";
	case 'i':
		return "idle";
	default:
		return "CPU%";
	}
}

/* The table of sandboxes, sorted; rows of them (-1: all). */
static void
draw_sandboxes(json_object *list, int cols, int rows)
{
	json_object **v, *sb;
	char cpu[16], mem[48], pids[32], ex[16], age[32], idle[32], sess[32];
	size_t i, n = list != NULL ? json_object_array_length(list) : 0;
	double d;

	line(cols, "%s", "");
	line(cols,
	    "sandboxes by %s (sort: c CPU, m memory, p pids, e execs/s, "
	    "a age, i idle, n name)",
	    sort_name());
	line(cols, "  %-12s %-16s %6s %-16s %-9s %7s %-6s %-6s %s", "ID",
	    "NAME", "CPU%", "MEMORY", "PIDS", "EXEC/s", "AGE", "IDLE",
	    "SESSION");
	if (n == 0)
		return;
	v = calloc(n, sizeof(json_object *));
	if (v == NULL)
		abort();
	for (i = 0; i < n; i++)
		v[i] = json_object_array_get_idx(list, i);
	qsort(v, n, sizeof(json_object *), by_key);
	for (i = 0; i < n && (rows < 0 || (int)i < rows); i++) {
		sb = v[i];
		if ((d = dbl(sb, "cpu_percent")) >= 0)
			snprintf(cpu, sizeof cpu, "%.1f", d);
		else
			snprintf(cpu, sizeof cpu, "-");
		if (json_object_object_get(sb, "memory_bytes") != NULL)
			snprintf(mem, sizeof mem, "%.1f/%lldMiB",
			    (double)num(sb, "memory_bytes") / (1 << 20),
			    num(sb, "memory_limit_mb"));
		else
			snprintf(mem, sizeof mem, "-/%lldMiB",
			    num(sb, "memory_limit_mb"));
		if (json_object_object_get(sb, "pids") != NULL)
			snprintf(pids, sizeof pids, "%lld/%lld",
			    num(sb, "pids"), num(sb, "pids_limit"));
		else
			snprintf(pids, sizeof pids, "-");
		if ((d = dbl(sb, "execs_per_second")) >= 0)
			snprintf(ex, sizeof ex, "%.1f", d);
		else
			snprintf(ex, sizeof ex, "-");
		cli_duration(num(sb, "age_seconds"), age, sizeof age);
		cli_duration(num(sb, "idle_seconds"), idle, sizeof idle);
		cli_session(sb, sess, sizeof sess);
		line(cols,
		    "  %-12.12s %-16.16s %6s %-16s %-9s %7s %-6s %-6s %s",
		    json_object_get_string(json_object_object_get(sb, "id")),
		    json_object_get_string(json_object_object_get(sb, "name")),
		    cpu, mem, pids, ex, age, idle, sess);
	}
	free(v);
}

static void
draw(json_object *t, json_object *list, double rate, int tty)
{
	json_object *engines, *e, *pool;
	struct json_object_iterator it, end;
	char pl[256];
	struct winsize ws;
	int cols = 0, rows = 0, n;
	size_t i;

	drawing_tty = tty;
	lines_drawn = 0;
	if (tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) {
		cols = ws.ws_col;
		rows = ws.ws_row;
	}
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
	/* The table takes what the screen has left (all of it elsewhere). */
	draw_sandboxes(list, cols, rows > 0 ? rows - lines_drawn - 4 : -1);
	if (tty)
		fputs("\033[J", stdout);
	fflush(stdout);
}

/*
 * One look: the server's figures (its "top") and its sandboxes (its
 * "ls", their rates from the looks so far).  NULL when it did not answer.
 */
static json_object *
top_look(struct cli_conn *c, json_object **list)
{
	json_object *t, *l;

	*list = NULL;
	if ((t = cli_request(c, "top", NULL, 0)) == NULL ||
	    !json_object_get_boolean(json_object_object_get(t, "ok")) ||
	    (l = cli_request(c, "ls", NULL, 0)) == NULL ||
	    !json_object_get_boolean(json_object_object_get(l, "ok"))) {
		json_object_put(t);
		return NULL;
	}
	*list = json_object_get(json_object_object_get(l, "sandboxes"));
	json_object_put(l);
	if (*list == NULL || !json_object_is_type(*list, json_type_array)) {
		json_object_put(*list);
		*list = json_object_new_array();
	}
	look(*list, clock_ms());
	return t;
}

/* The server's exec rate over the window of looks (-1 until two). */
static double
exec_rate(long long run, long long now)
{
	static struct sample s[TOP_SAMPLES];
	static int n;
	int i;

	if (n == TOP_SAMPLES) {
		memmove(&s[0], &s[1], (TOP_SAMPLES - 1) * sizeof s[0]);
		n--;
	}
	s[n].ms = now;
	s[n++].execs = run;
	for (i = 0; i + 1 < n && now - s[i].ms > TOP_WINDOW_MS; i++)
		;
	if (i == n - 1 || now - s[i].ms < 200 || run < s[i].execs)
		return -1;
	return (double)(run - s[i].execs) * 1000 / (double)(now - s[i].ms);
}

/* top on one server: 0, or 1 when it could not be asked. */
int
cli_top(struct cli_conn *c, int json)
{
	long long now, next;
	struct sigaction sa;
	struct pollfd pfd;
	json_object *t, *list;
	double rate;
	int tty, wait;
	ssize_t n;
	char ch;

	tty = !json && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	if (!tty) {
		/* Two looks, for the rates. */
		if ((t = top_look(c, &list)) != NULL) {
			exec_rate(num(t, "execs.run"), clock_ms());
			json_object_put(t);
			json_object_put(list);
			usleep(TOP_INTERVAL_MS * 1000);
			t = top_look(c, &list);
		}
		if (t == NULL) {
			fprintf(stderr,
			    "mcp-sandboxd: server %d did not answer\n",
			    (int)c->pid);
			return 1;
		}
		rate = exec_rate(num(t, "execs.run"), clock_ms());
		if (json) {
			json_object_object_add(t, "sandbox_list", list);
			printf("%s\n", json_object_to_json_string_ext(t,
			                   JSON_C_TO_STRING_PLAIN |
			                       JSON_C_TO_STRING_NOSLASHESCAPE));
		} else {
			draw(t, list, rate, 0);
			json_object_put(list);
		}
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
		if ((t = top_look(c, &list)) == NULL) {
			term_restore();
			fprintf(stderr, "mcp-sandboxd: server %d went away\n",
			    (int)c->pid);
			return 1;
		}
		now = clock_ms();
		rate = exec_rate(num(t, "execs.run"), now);
		draw(t, list, rate, 1);
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
			else if (n == 1 && strchr("cmpeain", ch) != NULL) {
				/* Another order, shown at once. */
				sort_key = ch;
				draw(t, list, rate, 1);
			}
		}
		json_object_put(t);
		json_object_put(list);
	}
	term_restore();
	return 0;
}
