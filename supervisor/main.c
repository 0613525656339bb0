/*
 * mcp-sandboxd: the supervisor's main, and the entry of worker mode.
 */
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cli.h"
#include "config.h"
#include "core.h"
#include "engine.h"
#include "enginepath.h"
#include "log.h"
#include "mcp.h"
#include "procinfo.h"
#include "random.h"
#include "run.h"
#include "sandbox.h"
#include "spool.h"
#include "supervisor.h"
#include "transport.h"
#include "version.h"
#include "worker.h"
#include "xmalloc.h"

#define SHUTDOWN_DEADLINE 30
#define REAPER_INTERVAL 300

static struct event *ev_term, *ev_int, *ev_chld, *ev_deadline, *ev_reaper;
static int sandboxes_gone;

static int
log_level_of(const char *s)
{
	if (strcmp(s, "error") == 0)
		return LOG_ERROR;
	if (strcmp(s, "warn") == 0)
		return LOG_WARN;
	if (strcmp(s, "debug") == 0)
		return LOG_DEBUG;
	return LOG_INFO;
}

static void
maybe_exit(void)
{
	if (sandboxes_gone && wproc_count() == 0)
		event_base_loopexit(sup.base, NULL);
}

static void
all_swept(void)
{
	sandboxes_gone = 1;
	maybe_exit();
}

static void
all_removed(void)
{
	reaper_sweep_own(all_swept);
}

/*
 * Shutdown is slow (a busy engine, workers that do not finish): workers
 * are killed, but containers still being removed are waited for a second
 * bound; leaving them would leave them running (only a later instance's
 * reaper would find them).
 */
static void
deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct timeval tv = {SHUTDOWN_DEADLINE, 0};
	static int extended;

	(void)fd;
	(void)what;
	(void)arg;
	log_warnx(
	    "shutdown took over %d s; killing workers", SHUTDOWN_DEADLINE);
	wproc_kill_all();
	if (!sandboxes_gone && !extended) {
		extended = 1;
		log_warnx("sandboxes are still being removed; waiting up to "
		          "%d s more",
		    SHUTDOWN_DEADLINE);
		evtimer_add(ev_deadline, &tv);
		return;
	}
	if (!sandboxes_gone)
		log_warnx("giving up on removing sandboxes; a later instance "
		          "removes what is left");
	event_base_loopexit(sup.base, NULL);
}

/* Stdin EOF or SIGTERM: remove every sandbox, reap every worker, exit. */
void
supervisor_quit(void)
{
	struct timeval tv = {SHUTDOWN_DEADLINE, 0};

	if (sup.shutting_down)
		return;
	sup.shutting_down = 1;
	log_info("shutting down: removing %d sandbox(es)", sandbox_count());
	ev_deadline = evtimer_new(sup.base, deadline_cb, NULL);
	evtimer_add(ev_deadline, &tv);
	mcp_shutdown_calls();
	snapshot_shutdown(); /* the HTTP sessions' */
	sandbox_destroy_all(all_removed);
}

static void
signal_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	(void)arg;
	if (sig == SIGCHLD) {
		wproc_reap();
		if (sup.shutting_down)
			maybe_exit();
		return;
	}
	log_info("signal %d", (int)sig);
	supervisor_quit();
}

static void
reaper_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	reaper_run();
}

/* The host that decides the engines' process-wide set-up (TLS libraries
 * only when one engine is reached over tcp://). */
static const char *
global_engine_host(const struct config *c)
{
	int i;

	for (i = 0; i < c->engines.n; i++)
		if (strncmp(c->engines.v[i], "tcp://", 6) == 0)
			return c->engines.v[i];
	return c->engines.n > 0 ? c->engines.v[0] : c->docker_host;
}

static void
make_instance_id(void)
{
	random_hex(sup.instance, 16);
}

int
main(int argc, char **argv)
{
	static struct config conf;
	struct timeval tv = {REAPER_INTERVAL, 0};
	static char exe[PATH_MAX];
	char cwd[PATH_MAX], err[512];
	ssize_t n;
	int rv;

	/*
	 * Names are UTF-8 whatever the environment says: libarchive converts
	 * archive names with the character type of the locale.
	 */
	if (setlocale(LC_CTYPE, "C.UTF-8") == NULL)
		setlocale(LC_CTYPE, "");
	/*
	 * A buffer of 128 KiB or more (a result, a frame, a transfer) is
	 * mapped and given back when freed, and a heap's free top past
	 * 512 KiB too: glibc's defaults move both up after the first large
	 * free, and the heap then keeps what a burst took for the life of
	 * the process (16 large results made the supervisor hold 14 MB
	 * more than it used).
	 */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	mallopt(M_TRIM_THRESHOLD, 512 * 1024);
	/* mcp-sandboxd ls | top | logs | stop: the operator's commands. */
	if (argc > 1 && cli_is_command(argv[1]))
		return cli_main(argc - 1, argv + 1);
	if (config_parse(&conf, argc, argv, stderr) == -1)
		return 2;
	/* JSON lines name the process for what it is (a worker renames
	 * itself), text lines keep the program's name. */
	log_setformat(conf.log_format);
	log_init(strcmp(conf.log_format, "json") == 0 ? "supervisor"
	                                              : "mcp-sandboxd",
	    log_level_of(conf.log_level));
	if (conf.worker_container != NULL) {
		rv = worker_main(&conf);
		config_free(&conf);
		return rv;
	}
	if (conf.help) {
		config_usage(stdout);
		return 0;
	}
	if (conf.version) {
		printf("mcp-sandboxd %s\n", MCP_SANDBOXD_VERSION);
		return 0;
	}
	if (conf.help_man) {
		config_man(stdout, MCP_SANDBOXD_VERSION);
		config_free(&conf);
		return 0;
	}
	if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) == -1)
		fatal("readlink /proc/self/exe");
	exe[n] = '\0';
	sup.self_exe = exe;
	/* Workers are started from this very file, not from its path: an
	 * upgrade installed meanwhile cannot start a worker of another
	 * version under this supervisor. */
	if ((sup.self_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC)) == -1)
		fatal("open /proc/self/exe");
	layers_init();
	if (conf.print_config != NULL) {
		rv = print_config(&conf, conf.print_config, exe);
		config_free(&conf);
		return rv;
	}

	sup.conf = &conf;
	make_instance_id();
	stats_init();
	if (proc_pid_home(sup.boot_id, sizeof sup.boot_id) == -1)
		snprintf(sup.boot_id, sizeof sup.boot_id, "unknown");
	if (proc_start_ticks(getpid(), &sup.start_ticks) == -1)
		fatal("cannot read /proc/self/stat");
	signal(SIGPIPE, SIG_IGN);
	if (engine_global_init(global_engine_host(&conf)) == -1)
		fatalx("engine_global_init");
	if ((sup.base = event_base_new()) == NULL)
		fatalx("event_base_new");
	if (engines_open() == -1)
		fatalx("DOCKER_HOST must be unix:///path or tcp://host:port, "
		       "not %s",
		    conf.docker_host);
	ev_term = evsignal_new(sup.base, SIGTERM, signal_cb, NULL);
	ev_int = evsignal_new(sup.base, SIGINT, signal_cb, NULL);
	ev_chld = evsignal_new(sup.base, SIGCHLD, signal_cb, NULL);
	evsignal_add(ev_term, NULL);
	evsignal_add(ev_int, NULL);
	evsignal_add(ev_chld, NULL);
	ev_reaper = event_new(sup.base, -1, EV_PERSIST, reaper_cb, NULL);
	evtimer_add(ev_reaper, &tv);
	if (getcwd(cwd, sizeof cwd) == NULL)
		fatal("getcwd");
	if (hostpolicy_init(&sup.hosts, conf.allow_dirs, conf.nallow_dirs, cwd,
	        err, sizeof err) == -1)
		fatalx("--allow-dir: %s", err);
	if (hostpolicy_empty(&sup.hosts))
		log_info("no host directory is allowed for the file tools "
		         "(--allow-dir)");
	if (conf.egress_allow.n > 0 && !conf.agent)
		log_warnx("--egress-allow is of no use with --agent off: the "
		          "egress proxy runs through the agent, and sandboxes "
		          "asking for egress are refused");
	if (spool_init(sup.instance, sup.boot_id, sup.start_ticks) == -1)
		fatal("cannot make a private directory for output spools");
	/* A server in a container: where its files are for the engine. */
	enginepath_init();
#ifdef MCP_SANDBOXD_FIXTURES
	fixtures_init(); /* the test-only mcp-sandboxd-fixtures binary */
#endif
	if (strcmp(conf.transport, "stdio") != 0 && http_start() == -1)
		fatalx("cannot start the HTTP transport");
	if (conf.expose_auth && sup.http_token == NULL)
		fatalx("--expose-auth on: the HTTP transport has no token to "
		       "guard exposed ports with");
	if (strcmp(conf.transport, "http") != 0 &&
	    stdio_start(supervisor_quit) == -1)
		fatal("stdin and stdout must be pipes or sockets");
	control_start(); /* without one the server runs on (said why) */
	log_info("mcp-sandboxd %s ready (instance %.8s, pid %d)",
	    MCP_SANDBOXD_VERSION, sup.instance, (int)getpid());
	reaper_run();
	engines_start();
	pool_start();
	snapshot_init(); /* expired snapshots removed */

	event_base_dispatch(sup.base);

	wproc_kill_all();
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	stdio_stop();
	http_stop();
	control_stop();
	defer_flush();
	spool_cleanup();
	agentfile_forget();
	enginepath_free();
	pool_free();
	sandbox_lost_free();
	engines_close();
	reaper_free();
	event_free(ev_term);
	event_free(ev_int);
	event_free(ev_chld);
	event_free(ev_reaper);
	if (ev_deadline != NULL)
		event_free(ev_deadline);
	event_base_free(sup.base);
	engine_global_cleanup();
	hostpolicy_free(&sup.hosts);
	config_free(&conf);
	return sup.exit_code;
}
