/*
 * Configuration from the environment, then the command line.  One table
 * names each option, its variable, its default and its help line, so the
 * three can never disagree.
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "egress.h"
#include "enginespec.h"
#include "xmalloc.h"

enum opt_type {
	OPT_STR,
	OPT_LONG,
	OPT_DOUBLE,
	OPT_BOOL,
	OPT_LABEL,
	OPT_DIR,
	OPT_LIST /* a comma list; each use adds to it */
};

struct opt {
	const char *name;
	const char *env;
	enum opt_type type;
	size_t off;
	const char *def;
	long min, max; /* OPT_LIST: max, when not 0, is the longest value */
	const char *help;
};

#define UID_MAX_SANDBOX 2147483646L
#define O(f) offsetof(struct config, f)
static const struct opt opts[] = {
    {"image", "MCP_SANDBOXD_IMAGE", OPT_STR, O(default_image),
        "python:3.12-slim-bookworm", 0, 0,
        "default image of new sandboxes; when given, also of fresh code "
        "sandboxes of languages without an image of their own"},
    {"python-image", "MCP_SANDBOXD_PYTHON_IMAGE", OPT_STR, O(python_image),
        "python:3.12-slim-bookworm", 0, 0,
        "image of fresh sandboxes for Python code (when not given: --image "
        "if that is given, else this default)"},
    {"node-image", "MCP_SANDBOXD_NODE_IMAGE", OPT_STR, O(node_image),
        "node:22-bookworm-slim", 0, 0,
        "image of fresh sandboxes for JavaScript and TypeScript code (when "
        "not given: --image if that is given, else this default)"},
    {"go-image", "MCP_SANDBOXD_GO_IMAGE", OPT_STR, O(go_image),
        "golang:1.23-bookworm", 0, 0,
        "image of fresh sandboxes for Go code (when not given: --image if "
        "that is given, else this default)"},
    {"docker-host", "DOCKER_HOST", OPT_STR, O(docker_host),
        "unix:///var/run/docker.sock", 0, 0,
        "Docker engine (unix:// or tcp://)"},
    {"engine", "MCP_SANDBOXD_ENGINES", OPT_LIST, O(engines), NULL, 0,
        ENGINESPEC_TEXT_MAX,
        "a Docker engine sandboxes may be placed on, "
        "URL[?ATTR=VALUE[&...]]: unix:///PATH or tcp://HOST:PORT, "
        "attributes tls=DIR (tcp://: ca.pem, cert.pem, key.pem as "
        "DOCKER_CERT_PATH), max-sandboxes=N, max-memory-mb=N (repeatable "
        "or a comma list; default none: --docker-host alone)"},
    {"drain", "MCP_SANDBOXD_DRAIN", OPT_LIST, O(drain), NULL, 0,
        ENGINESPEC_URL_MAX,
        "URL of an --engine that takes no new sandbox (those on it keep "
        "working; repeatable or a comma list)"},
    {"engine-ping-interval", "MCP_SANDBOXD_ENGINE_PING_INTERVAL", OPT_LONG,
        O(engine_ping_interval), "3", 1, 3600,
        "seconds between health checks (/_ping) of each engine; one that "
        "fails marks the engine down and its sandboxes lost"},
    {"allow-engine-choice", "MCP_SANDBOXD_ALLOW_ENGINE_CHOICE", OPT_BOOL,
        O(allow_engine_choice), "0", 0, 0,
        "let a client name the engine of its sandbox (sandbox_initialize's "
        "engine: an --engine URL); otherwise such a call is refused"},
    {"log-level", "MCP_SANDBOXD_LOG_LEVEL", OPT_STR, O(log_level), "info", 0, 0,
        "stderr log level: error, warn, info, debug"},
    {"log-format", "MCP_SANDBOXD_LOG_FORMAT", OPT_STR, O(log_format), "text", 0,
        0,
        "stderr log lines: text, or json (one object a line: time, level, "
        "process, message, and the MCP request being handled)"},
    {"control", "MCP_SANDBOXD_CONTROL", OPT_STR, O(control_mode), "on", 0, 0,
        "on: listen on a private control socket for mcp-sandboxd ls, top, "
        "logs and stop; off: none"},
    {"control-dir", "MCP_SANDBOXD_CONTROL_DIR", OPT_STR, O(control_dir), NULL,
        0, 0,
        "private directory (0700) of the control sockets, one per server "
        "named PID.sock (default "
        "${XDG_RUNTIME_DIR:-/tmp}/mcp-sandboxd-control-UID)"},
    {"memory-mb", "MCP_SANDBOXD_MEMORY_MB", OPT_LONG, O(memory_mb), "512", 16,
        1 << 20, "default memory limit per sandbox (MiB, swap off)"},
    {"max-memory-mb", "MCP_SANDBOXD_MAX_MEMORY_MB", OPT_LONG, O(max_memory_mb),
        "4096", 16, 1 << 20, "ceiling for memory_mb a client may ask for"},
    {"cpus", "MCP_SANDBOXD_CPUS", OPT_DOUBLE, O(cpus), "1", 0, 0,
        "default CPU quota per sandbox"},
    {"max-cpus", "MCP_SANDBOXD_MAX_CPUS", OPT_DOUBLE, O(max_cpus), "2", 0, 0,
        "ceiling for cpus"},
    {"pids", "MCP_SANDBOXD_PIDS", OPT_LONG, O(pids), "128", 8, 1 << 22,
        "default process limit per sandbox"},
    {"max-pids", "MCP_SANDBOXD_MAX_PIDS", OPT_LONG, O(max_pids), "1024", 8,
        1 << 22, "ceiling for pids"},
    {"ttl", "MCP_SANDBOXD_TTL", OPT_LONG, O(ttl), "3600", 1, 1L << 31,
        "default lifetime of a sandbox (seconds)"},
    {"max-ttl", "MCP_SANDBOXD_MAX_TTL", OPT_LONG, O(max_ttl), "86400", 1,
        1L << 31, "ceiling for ttl_seconds"},
    {"idle-ttl", "MCP_SANDBOXD_IDLE_TTL", OPT_LONG, O(idle_ttl), "1800", 0,
        1L << 31, "remove a sandbox unused for this long (seconds; 0: never)"},
    {"max-concurrent-starts", "MCP_SANDBOXD_MAX_CONCURRENT_STARTS", OPT_LONG,
        O(max_starts), "4", 1, 1000,
        "sandbox creations talking to the engine at once (more wait)"},
    {"warm-pool", "MCP_SANDBOXD_WARM_POOL", OPT_LIST, O(warm_pool), NULL, 0, 0,
        "containers kept created and started ahead for sandbox_initialize: "
        "N for the default image, IMAGE=N for another (repeatable; comma "
        "list; default none)"},
    {"pause-after", "MCP_SANDBOXD_PAUSE_AFTER", OPT_LONG, O(pause_after), "0",
        0, 1L << 31,
        "pause a sandbox's container after this many seconds without "
        "calls; the next call resumes it (0: never)"},
    {"workdir-mb", "MCP_SANDBOXD_WORKDIR_MB", OPT_LONG, O(workdir_mb), "256", 1,
        1 << 20, "size of the writable workdir (MiB)"},
    {"tmp-mb", "MCP_SANDBOXD_TMP_MB", OPT_LONG, O(tmp_mb), "64", 1, 1 << 20,
        "size of the writable /tmp (MiB)"},
    {"nofile", "MCP_SANDBOXD_NOFILE", OPT_LONG, O(nofile), "1024", 16, 1 << 20,
        "open-file limit inside sandboxes"},
    {"fsize-mb", "MCP_SANDBOXD_FSIZE_MB", OPT_LONG, O(fsize_mb), "128", 1,
        1 << 20, "largest file a sandbox may write (MiB)"},
    {"allow-network", "MCP_SANDBOXD_ALLOW_NETWORK", OPT_LIST, O(allow_networks),
        NULL, 0, 0,
        "Docker network clients may ask for besides none (repeatable or a "
        "comma list; default: none only; host and container:* never)"},
    {"allow-image", "MCP_SANDBOXD_ALLOW_IMAGES", OPT_LIST, O(allow_images),
        NULL, 0, 0,
        "image reference pattern (glob, e.g. 'python:*') sandboxes may use "
        "(repeatable or a comma list; default: any image)"},
    {"runtime", "MCP_SANDBOXD_RUNTIME", OPT_STR, O(runtime), NULL, 0, 0,
        "OCI runtime of new sandboxes, as registered with the engine (e.g. "
        "runsc for gVisor; default: none named, the engine's default)"},
    {"allow-runtime", "MCP_SANDBOXD_ALLOW_RUNTIMES", OPT_LIST,
        O(allow_runtimes), NULL, 0, CONFIG_RUNTIME_MAX,
        "OCI runtime a client may ask for in sandbox_initialize besides "
        "--runtime's (repeatable or a comma list; default: none)"},
    {"pull-timeout", "MCP_SANDBOXD_PULL_TIMEOUT", OPT_LONG, O(pull_timeout),
        "300", 1, 86400,
        "seconds a missing image may take to pull before the call fails"},
    {"volume-mb", "MCP_SANDBOXD_VOLUME_MB", OPT_LONG, O(volume_mb), "64", 1,
        1 << 20,
        "size of the tmpfs mounted at each VOLUME an image declares (MiB; "
        "no anonymous volume is ever made)"},
    {"uid-range", "MCP_SANDBOXD_UID_RANGE", OPT_STR, O(uid_range),
        "100000-165535", 0, 0,
        "FIRST-LAST: each sandbox runs as its own uid from this range "
        "(never 0, 65532, 65533 or 65534)"},
    {"exec-timeout", "MCP_SANDBOXD_EXEC_TIMEOUT", OPT_LONG, O(exec_timeout),
        "60", 1, 1L << 31, "default timeout of a sandbox_exec call (seconds)"},
    {"max-exec-timeout", "MCP_SANDBOXD_MAX_EXEC_TIMEOUT", OPT_LONG,
        O(max_exec_timeout), "3600", 1, 1L << 31,
        "ceiling for timeout_seconds"},
    {"max-background", "MCP_SANDBOXD_MAX_BACKGROUND", OPT_LONG,
        O(max_background), "8", 1, 64,
        "background processes (sandbox_exec background: true) running at "
        "once in one sandbox"},
    {"max-background-seconds", "MCP_SANDBOXD_MAX_BACKGROUND_SECONDS", OPT_LONG,
        O(max_background_seconds), "0", 0, 1L << 31,
        "the longest a background process may run (seconds); a client's "
        "timeout_seconds: 0 then means up to this; 0: background processes "
        "have --max-exec-timeout as their ceiling and timeout_seconds: 0 "
        "is refused"},
    {"output-cap", "MCP_SANDBOXD_OUTPUT_CAP", OPT_LONG, O(output_cap),
        "134217728", 1024, 1LL << 40,
        "bytes of output per call before the command is killed"},
    {"inline-output", "MCP_SANDBOXD_INLINE_OUTPUT", OPT_LONG, O(inline_output),
        "8192", 256, 1 << 24,
        "bytes of each output stream kept in a tool result (head and tail; "
        "the whole is a resource): a chatty command costs a model a few "
        "thousand tokens"},
    {"max-image-kb", "MCP_SANDBOXD_MAX_IMAGE_KB", OPT_LONG, O(max_image_kb),
        "1024", 1, 8192,
        "largest picture given as an image in a result: a figure or value "
        "of execute_code, a read_file of a picture (KiB; a larger one is "
        "described in a note)"},
    {"max-image-pixels", "MCP_SANDBOXD_MAX_IMAGE_PIXELS", OPT_LONG,
        O(max_image_pixels), "16777216", 1, 4294836225L,
        "most pixels (width x height) of a picture given as an image in a "
        "result (a 69-byte PNG may declare 65535x65535); a larger one is "
        "linked, as one over --max-image-kb is"},
    {"log-buffer-kb", "MCP_SANDBOXD_LOG_BUFFER_KB", OPT_LONG, O(log_buffer_kb),
        "1024", 4, 1 << 20,
        "size of each sandbox's activity log, containers://{id}/logs (KiB)"},
    {"max-project-mb", "MCP_SANDBOXD_MAX_PROJECT_MB", OPT_LONG, O(project_mb),
        "2048", 1, 1 << 22,
        "most content a copy_project or directory copy may move (MiB)"},
    {"max-project-files", "MCP_SANDBOXD_MAX_PROJECT_FILES", OPT_LONG,
        O(project_files), "100000", 1, 1L << 30,
        "most entries a copy_project or directory copy may move"},
    {"max-copy-out-mb", "MCP_SANDBOXD_MAX_COPY_OUT_MB", OPT_LONG,
        O(copy_out_mb), "1024", 1, 1 << 22,
        "most bytes one copy_file_from_sandbox may write on the host, a "
        "file or a whole tree (MiB; max_bytes may ask for less)"},
    {"allow-exec-bits", "MCP_SANDBOXD_ALLOW_EXEC_BITS", OPT_BOOL,
        O(allow_exec_bits), "0", 0, 0,
        "let copy_file_from_sandbox keep execute bits when a call asks "
        "(preserve_mode); otherwise files come out without them"},
    {"deny-copy-names", "MCP_SANDBOXD_DENY_COPY_NAMES", OPT_LIST,
        O(deny_copy_names), NULL, 0, 0,
        "names never written to the host by copy_file_from_sandbox, "
        "besides .git, .hg and .svn (repeatable; comma list)"},
    {"transfer-idle-timeout", "MCP_SANDBOXD_TRANSFER_IDLE_TIMEOUT", OPT_LONG,
        O(transfer_idle), "30", 1, 3600,
        "seconds a copy out of a sandbox may go without progress before "
        "it fails"},
    {"state-dir", "MCP_SANDBOXD_STATE_DIR", OPT_STR, O(state_dir), NULL, 0, 0,
        "private directory (0700) for snapshots, kept across restarts "
        "(default $XDG_STATE_HOME/mcp-sandboxd, else "
        "$HOME/.local/state/mcp-sandboxd)"},
    {"snapshot-mb", "MCP_SANDBOXD_SNAPSHOT_MB", OPT_LONG, O(snapshot_mb),
        "2048", 1, 1L << 30,
        "MiB all snapshots may take in the state directory together"},
    {"snapshot-max-mb", "MCP_SANDBOXD_SNAPSHOT_MAX_MB", OPT_LONG,
        O(snapshot_max_mb), "1024", 1, 1L << 30,
        "MiB one snapshot may take (its archive)"},
    {"snapshot-mb-per-owner", "MCP_SANDBOXD_SNAPSHOT_MB_PER_OWNER", OPT_LONG,
        O(snapshot_mb_per_owner), "1024", 1, 1L << 30,
        "MiB the snapshots of one owner (an HTTP session, or the user of a "
        "stdio server) may take together, within --snapshot-mb: so that "
        "one cannot take the space of all"},
    {"snapshot-ttl", "MCP_SANDBOXD_SNAPSHOT_TTL", OPT_LONG, O(snapshot_ttl),
        "604800", 60, 1L << 31,
        "seconds a snapshot is kept after it was taken (default 7 days)"},
    {"runtime-dir", "MCP_SANDBOXD_RUNTIME_DIR", OPT_STR, O(runtime_dir), NULL,
        0, 0,
        "private directory (0700) for spools and temporary trees (default "
        "$XDG_RUNTIME_DIR/mcp-sandboxd, else /run/mcp-sandboxd, else a "
        "new private directory)"},
    {"agent", "MCP_SANDBOXD_AGENT", OPT_STR, O(agent_mode), "on", 0, 0,
        "on: commands run through a small agent inside each sandbox (a "
        "static binary bind-mounted read-only at /.mcp-sandboxd-agent), "
        "with a Docker exec as the fallback; off: every command is a "
        "Docker exec"},
    {"agent-file", "MCP_SANDBOXD_AGENT_FILE", OPT_STR, O(agent_file), NULL, 0,
        0,
        "the agent program to mount instead of the built-in one (for "
        "testing a replacement)"},
    {"spool-mb", "MCP_SANDBOXD_SPOOL_MB", OPT_LONG, O(spool_mb), "512", 1,
        1 << 20, "disk for the full outputs of a sandbox's execs (MiB)"},
    {"max-sandboxes", "MCP_SANDBOXD_MAX_SANDBOXES", OPT_LONG, O(max_sandboxes),
        "32", 1, 100000, "most sandboxes alive at once"},
    {"tools-page-size", "MCP_SANDBOXD_TOOLS_PAGE_SIZE", OPT_LONG, O(tools_page),
        "100", 1, 1000,
        "tools per tools/list page (the rest follow with nextCursor)"},
    {"max-line", "MCP_SANDBOXD_MAX_LINE", OPT_LONG, O(max_line), "16777216",
        1024, 1L << 30, "largest JSON-RPC message accepted (bytes)"},
    {"max-json-depth", "MCP_SANDBOXD_MAX_JSON_DEPTH", OPT_LONG,
        O(max_json_depth), "64", 4, 1000, "deepest JSON nesting accepted"},
    {"transport", "MCP_SANDBOXD_TRANSPORT", OPT_STR, O(transport), "stdio", 0,
        0, "stdio, http (Streamable HTTP) or both"},
    {"listen", "MCP_SANDBOXD_LISTEN", OPT_STR, O(listen), "127.0.0.1:8080", 0,
        0, "ADDR:PORT of the HTTP transport (beyond loopback: token needed)"},
    {"auth-token-file", "MCP_SANDBOXD_AUTH_TOKEN_FILE", OPT_STR,
        O(auth_token_file), NULL, 0, 0,
        "file holding the bearer token HTTP clients must send (or the token "
        "itself in MCP_SANDBOXD_AUTH_TOKEN; with neither, a random token is "
        "made and printed on stderr)"},
    {"no-auth", "MCP_SANDBOXD_NO_AUTH", OPT_BOOL, O(no_auth), "0", 0, 0,
        "serve HTTP on loopback without any token (anyone on this host can "
        "use the server)"},
    {"expose-bind", "MCP_SANDBOXD_EXPOSE_BIND", OPT_STR, O(expose_bind),
        "127.0.0.1", 0, 0,
        "host address (an IPv4 or IPv6 literal) where sandbox_expose_port "
        "listens; beyond loopback only with --expose-auth on"},
    {"expose-auth", "MCP_SANDBOXD_EXPOSE_AUTH", OPT_STR, O(expose_auth_mode),
        "off", 0, 0,
        "on: each connection to an exposed port must send the HTTP "
        "transport's bearer token (Authorization: Bearer) in its first "
        "request (needs --transport http or both, and a token); off: "
        "none asked"},
    {"max-exposed-ports", "MCP_SANDBOXD_MAX_EXPOSED_PORTS", OPT_LONG,
        O(max_exposed_ports), "8", 1, 64,
        "ports one sandbox may have exposed on the host at once"},
    {"egress-allow", "MCP_SANDBOXD_EGRESS_ALLOW", OPT_LIST, O(egress_allow),
        NULL, 0, EGRESS_PATTERN_TEXT_MAX,
        "host pattern sandboxes may reach through their egress proxy "
        "(example.org, *.example.org, an address, [::1]; :PORT or any "
        "port; * any host): the ceiling of the egress list a client "
        "gives (sandbox_initialize's egress, sandbox_set_egress); the "
        "sandbox itself keeps network none (repeatable or a comma list; "
        "default none: egress off)"},
    {"egress-allow-address", "MCP_SANDBOXD_EGRESS_ALLOW_ADDRESS", OPT_LIST,
        O(egress_allow_addresses), NULL, 0, 0,
        "exact IP address (127.0.0.1, ::1) the egress proxy may connect "
        "to although it is loopback, private or otherwise not on the "
        "Internet, which the proxy refuses (for tests, a local package "
        "index; repeatable or a comma list; default none)"},
    {"allowed-origins", "MCP_SANDBOXD_ALLOWED_ORIGINS", OPT_STR,
        O(allowed_origins), NULL, 0, 0,
        "Origins (scheme://host[:port]) HTTP requests may carry and that "
        "get CORS headers, comma list (default: only the server's own, "
        "http://localhost:PORT, http://127.0.0.1:PORT, http://[::1]:PORT of "
        "--listen; other ports of localhost are refused; * any)"},
    {"allowed-hosts", "MCP_SANDBOXD_ALLOWED_HOSTS", OPT_STR, O(allowed_hosts),
        NULL, 0, 0,
        "Host headers accepted, comma list (default localhost, 127.0.0.1, "
        "[::1] and the --listen address, any port; * any)"},
    {"max-sessions", "MCP_SANDBOXD_MAX_SESSIONS", OPT_LONG, O(max_sessions),
        "100", 1, 100000,
        "most HTTP sessions open at once; when full, the longest-idle "
        "session without a running request is ended to make room"},
    {"session-idle", "MCP_SANDBOXD_SESSION_IDLE", OPT_LONG, O(session_idle),
        "300", 1, 1L << 31,
        "seconds an HTTP session with no request running and no open "
        "stream lives on; then it ends with its sandboxes (not the "
        "detached ones)"},
    {"http-max-connections", "MCP_SANDBOXD_HTTP_MAX_CONNECTIONS", OPT_LONG,
        O(http_max_connections), "512", 1, 65536,
        "HTTP connections served at once, counted from accept(); a new "
        "one past it gets 503 and is closed"},
    {"http-timeout", "MCP_SANDBOXD_HTTP_TIMEOUT", OPT_LONG, O(http_timeout),
        "30", 1, 3600,
        "seconds an HTTP connection may stay silent (reading a request, or "
        "waiting to write)"},
    {"http-header-timeout", "MCP_SANDBOXD_HTTP_HEADER_TIMEOUT", OPT_LONG,
        O(http_header_timeout), "10", 1, 3600,
        "seconds from a request's first byte to the end of its headers; "
        "then its body must keep up --http-min-rate"},
    {"http-min-rate", "MCP_SANDBOXD_HTTP_MIN_RATE", OPT_LONG, O(http_min_rate),
        "4096", 1, 1L << 30,
        "bytes/s a request body must average (after --http-header-timeout "
        "seconds of grace), or the connection is cut"},
    {"max-sandboxes-per-session", "MCP_SANDBOXD_MAX_SANDBOXES_PER_SESSION",
        OPT_LONG, O(max_sandboxes_per_session), "16", 1, 100000,
        "most sandboxes one client session may have alive at once"},
    {"max-calls-per-session", "MCP_SANDBOXD_MAX_CALLS_PER_SESSION", OPT_LONG,
        O(max_calls_per_session), "32", 1, 100000,
        "most tools/call requests one client session may have in flight"},
    {"max-calls", "MCP_SANDBOXD_MAX_CALLS", OPT_LONG, O(max_calls), "256", 1,
        1000000, "most tools/call requests in flight, all sessions together"},
    {"max-tasks-per-session", "MCP_SANDBOXD_MAX_TASKS_PER_SESSION", OPT_LONG,
        O(max_tasks_per_session), "64", 1, 100000,
        "most MCP tasks one client session may hold, running or kept for "
        "their ttl (past it, the oldest finished task whose result was "
        "fetched makes room, else the task is refused)"},
    {"max-task-results-mb", "MCP_SANDBOXD_MAX_TASK_RESULTS_MB", OPT_LONG,
        O(max_task_results_mb), "256", 1, 1024L * 1024,
        "MiB of ended MCP tasks' results kept for tasks/result, all "
        "sessions together; one session keeps a quarter of it at most "
        "(past either, the oldest result goes, fetched ones first)"},
    {"task-ttl-max", "MCP_SANDBOXD_TASK_TTL_MAX", OPT_LONG, O(task_ttl_max),
        "3600", 1, 7L * 24 * 3600,
        "seconds an MCP task and its result are kept at most, from its "
        "creation (a client's longer ttl is cut to it; no ttl: this); a "
        "task still running then is cancelled"},
    {"allow-dir", "MCP_SANDBOXD_ALLOW_DIRS", OPT_DIR, 0, NULL, 0, 0,
        "host directory the file tools may read and write (repeatable; the "
        "variable takes a ':'-separated list; default: the directory the "
        "server started in, unless that is / or a home directory)"},
    {"label", "MCP_SANDBOXD_LABELS", OPT_LABEL, 0, NULL, 0, 0,
        "KEY=VALUE label added to every container (repeatable; "
        "the variable takes a comma-separated list)"},
};
#undef O
_Static_assert(sizeof opts / sizeof opts[0] <= CONFIG_MAX_OPTS,
    "struct config's given[] is too small for the option table");

static int
opt_set(struct config *c, const struct opt *o, const char *val, FILE *err)
{
	struct config_list *list;
	char *end, *dup, *p, *tok, **sp;
	long l;
	double d;

	switch (o->type) {
	case OPT_STR:
		sp = (char **)((char *)c + o->off);
		free(*sp);
		*sp = xstrdup(val);
		return 0;
	case OPT_LONG:
		errno = 0;
		l = strtol(val, &end, 10);
		if (errno != 0 || end == val || *end != '\0' || l < o->min ||
		    l > o->max) {
			fprintf(err,
			    "--%s: expected an integer from %ld to %ld, "
			    "got \"%s\"\n",
			    o->name, o->min, o->max, val);
			return -1;
		}
		*(long *)((char *)c + o->off) = l;
		return 0;
	case OPT_DOUBLE:
		errno = 0;
		d = strtod(val, &end);
		if (errno != 0 || end == val || *end != '\0' || !(d > 0) ||
		    d > 1024) {
			fprintf(err,
			    "--%s: expected a number above 0, got "
			    "\"%s\"\n",
			    o->name, val);
			return -1;
		}
		*(double *)((char *)c + o->off) = d;
		return 0;
	case OPT_BOOL:
		if (strcmp(val, "1") == 0 || strcmp(val, "true") == 0 ||
		    strcmp(val, "yes") == 0)
			l = 1;
		else if (strcmp(val, "0") == 0 || strcmp(val, "false") == 0 ||
		         strcmp(val, "no") == 0)
			l = 0;
		else {
			fprintf(err,
			    "--%s: expected true or false, got "
			    "\"%s\"\n",
			    o->name, val);
			return -1;
		}
		*(int *)((char *)c + o->off) = (int)l;
		return 0;
	case OPT_LABEL:
		dup = xstrdup(val);
		for (p = dup; (tok = strsep(&p, ",")) != NULL;) {
			if (*tok == '\0')
				continue;
			if (strchr(tok, '=') == NULL || *tok == '=' ||
			    strncmp(tok, "io.mcp-sandboxd.", 16) == 0) {
				fprintf(err,
				    "--label: expected KEY=VALUE (not "
				    "in io.mcp-sandboxd.*), got \"%s\"\n",
				    tok);
				free(dup);
				return -1;
			}
			if (c->nlabels == CONFIG_MAX_LABELS) {
				fprintf(err, "--label: at most %d labels\n",
				    CONFIG_MAX_LABELS);
				free(dup);
				return -1;
			}
			c->labels[c->nlabels++] = xstrdup(tok);
		}
		free(dup);
		return 0;
	case OPT_LIST:
		list = (struct config_list *)((char *)c + o->off);
		dup = xstrdup(val);
		for (p = dup; (tok = strsep(&p, ",")) != NULL;) {
			if (*tok == '\0')
				continue;
			if (strlen(tok) > (o->max > 0 ? (size_t)o->max : 255) ||
			    strpbrk(tok, " \t\n\r") != NULL) {
				fprintf(err, "--%s: bad value \"%.80s\"\n",
				    o->name, tok);
				free(dup);
				return -1;
			}
			if (list->n == CONFIG_MAX_LIST) {
				fprintf(err, "--%s: at most %d values\n",
				    o->name, CONFIG_MAX_LIST);
				free(dup);
				return -1;
			}
			list->v[list->n++] = xstrdup(tok);
		}
		free(dup);
		return 0;
	case OPT_DIR:
		dup = xstrdup(val);
		for (p = dup; (tok = strsep(&p, ":")) != NULL;) {
			if (*tok == '\0')
				continue;
			if (c->nallow_dirs == CONFIG_MAX_DIRS) {
				fprintf(err,
				    "--allow-dir: at most %d "
				    "directories\n",
				    CONFIG_MAX_DIRS);
				free(dup);
				return -1;
			}
			c->allow_dirs[c->nallow_dirs++] = xstrdup(tok);
		}
		free(dup);
		return 0;
	}
	return -1;
}

/*
 * --uid-range FIRST-LAST: sandbox uids, never root, never the probes'
 * 65532 nor the keep-alive's 65533 (sandbox code could signal them), nor
 * the host's nobody (65534), whose per-user limits they would share.
 */
static int
uid_range_parse(struct config *c, FILE *err)
{
	char *end, *p;

	errno = 0;
	c->uid_first = strtol(c->uid_range, &end, 10);
	if (errno == 0 && end != c->uid_range && *end == '-') {
		p = end + 1;
		c->uid_last = strtol(p, &end, 10);
		if (errno == 0 && end != p && *end == '\0' &&
		    c->uid_first >= 1 && c->uid_first <= c->uid_last &&
		    c->uid_last <= UID_MAX_SANDBOX &&
		    !(c->uid_first <= 65534 && c->uid_last >= 65532))
			return 0;
	}
	fprintf(err,
	    "--uid-range: expected FIRST-LAST, 1 <= FIRST <= LAST <= %ld, "
	    "without 65532, 65533 and 65534, got \"%s\"\n",
	    (long)UID_MAX_SANDBOX, c->uid_range);
	return -1;
}

/*
 * --allow-network names networks: never the host's or another container's
 * namespace, and not the on/off it once was (that would name a network
 * "true" and allow nothing the operator meant).
 */
/*
 * A warm pool's size, "N" or "IMAGE=N" (0 to 1000): 0, or -1 if it is
 * not one.  *image is NULL for the default image, else points into s
 * (image_len long).
 */
int
config_warm_pool(const char *s, const char **image, size_t *image_len, long *n)
{
	const char *eq = strrchr(s, '='), *num = eq != NULL ? eq + 1 : s;
	char *end;

	*image = eq != NULL ? s : NULL;
	*image_len = eq != NULL ? (size_t)(eq - s) : 0;
	if (eq == s || *num < '0' || *num > '9')
		return -1;
	*n = strtol(num, &end, 10);
	return *end == '\0' && *n <= 1000 ? 0 : -1;
}

static int
warm_pool_check(struct config *c, FILE *err)
{
	const char *image;
	size_t len;
	long n;
	int i;

	for (i = 0; i < c->warm_pool.n; i++)
		if (config_warm_pool(c->warm_pool.v[i], &image, &len, &n) ==
		    -1) {
			fprintf(err,
			    "--warm-pool: expected N or IMAGE=N (N from 0 to "
			    "1000), got \"%s\"\n",
			    c->warm_pool.v[i]);
			return -1;
		}
	return 0;
}

/* An OCI runtime's name as an engine registers it: short, plain. */
int
config_runtime_valid(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > CONFIG_RUNTIME_MAX || s[0] == '.' || s[0] == '-')
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) &&
		    strchr("._-", s[i]) == NULL)
			return 0;
	return 1;
}

/* Whether a client may ask for runtime name: --runtime's, or one of
 * --allow-runtime. */
int
config_runtime_allowed(const struct config *c, const char *name)
{
	return (c->runtime != NULL && strcmp(c->runtime, name) == 0) ||
	       config_list_has(&c->allow_runtimes, name);
}

static int
runtime_check(struct config *c, FILE *err)
{
	int i;

	if (c->runtime != NULL && !config_runtime_valid(c->runtime)) {
		fprintf(err,
		    "--runtime: expected a runtime name (1-%d letters, digits, "
		    "'.', '_' or '-'), got \"%.80s\"\n",
		    CONFIG_RUNTIME_MAX, c->runtime);
		return -1;
	}
	for (i = 0; i < c->allow_runtimes.n; i++)
		if (!config_runtime_valid(c->allow_runtimes.v[i])) {
			fprintf(err,
			    "--allow-runtime: expected runtime names (1-%d "
			    "letters, digits, '.', '_' or '-'), got "
			    "\"%.80s\"\n",
			    CONFIG_RUNTIME_MAX, c->allow_runtimes.v[i]);
			return -1;
		}
	return 0;
}

static int
allow_network_check(struct config *c, FILE *err)
{
	static const char *const bools[] = {
	    "1", "0", "true", "false", "yes", "no", NULL};
	const char *n;
	int i, j;

	for (i = 0; i < c->allow_networks.n; i++) {
		n = c->allow_networks.v[i];
		if (strcmp(n, "host") == 0 ||
		    strncmp(n, "container:", 10) == 0) {
			fprintf(err,
			    "--allow-network: \"%s\" is never allowed: it "
			    "shares a namespace with the host or a container\n",
			    n);
			return -1;
		}
		for (j = 0; bools[j] != NULL; j++)
			if (strcmp(n, bools[j]) == 0) {
				fprintf(err,
				    "--allow-network: expected Docker network "
				    "names (e.g. --allow-network bridge), got "
				    "\"%s\"\n",
				    n);
				return -1;
			}
	}
	return 0;
}

/*
 * --expose-bind is an address literal (no name: what it resolves to could
 * change under the check); beyond loopback, only when the HTTP token
 * guards the ports (--expose-auth on), which needs the HTTP transport and
 * a token (a configured one, or the one it makes at start; not
 * --no-auth).
 */
static int
expose_check(struct config *c, FILE *err)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (strcmp(c->expose_auth_mode, "on") == 0)
		c->expose_auth = 1;
	else if (strcmp(c->expose_auth_mode, "off") == 0)
		c->expose_auth = 0;
	else {
		fprintf(err, "--expose-auth: expected on or off, got \"%s\"\n",
		    c->expose_auth_mode);
		return -1;
	}
	if (inet_pton(AF_INET, c->expose_bind, &a4) == 1)
		c->expose_bind_loopback = (ntohl(a4.s_addr) >> 24) == 127;
	else if (inet_pton(AF_INET6, c->expose_bind, &a6) == 1)
		c->expose_bind_loopback =
		    IN6_IS_ADDR_LOOPBACK(&a6) ||
		    (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
	else {
		fprintf(err,
		    "--expose-bind: expected an IPv4 or IPv6 address (e.g. "
		    "127.0.0.1 or ::1, no brackets, no name), got \"%s\"\n",
		    c->expose_bind);
		return -1;
	}
	if (c->expose_auth && strcmp(c->transport, "stdio") == 0) {
		fprintf(err,
		    "--expose-auth on: exposed ports are guarded by the HTTP "
		    "transport's bearer token, and --transport is stdio; give "
		    "--transport http (or both), or --expose-auth off\n");
		return -1;
	}
	if (c->expose_auth && c->no_auth) {
		fprintf(err,
		    "--expose-auth on: exposed ports are guarded by the HTTP "
		    "transport's bearer token, and --no-auth turns it off; "
		    "give a token (--auth-token-file or "
		    "MCP_SANDBOXD_AUTH_TOKEN) instead of --no-auth, or "
		    "--expose-auth off\n");
		return -1;
	}
	if (!c->expose_bind_loopback && !c->expose_auth) {
		fprintf(err,
		    "--expose-bind %s is beyond loopback: anyone who reaches "
		    "that address could use a sandbox's exposed ports; give "
		    "--expose-auth on too (with --transport http and its token), "
		    "or a loopback address (127.0.0.1, ::1)\n",
		    c->expose_bind);
		return -1;
	}
	return 0;
}

/*
 * --engine, --drain: each engine's text parses, its tls directory holds
 * the three files, no URL twice, each drained URL is an engine's.
 */
static int
engines_check(const struct config *c, FILE *err)
{
	struct enginespec es, other;
	char why[512];
	int i, j, found;

	for (i = 0; i < c->engines.n; i++) {
		if (enginespec_parse(c->engines.v[i], &es, why, sizeof why) ==
		        -1 ||
		    (es.tls[0] != '\0' &&
		        enginespec_tls_ok(es.tls, why, sizeof why) == -1)) {
			fprintf(err,
			    "--engine %.200s: %s (expected "
			    "unix:///PATH or tcp://HOST:PORT, optionally "
			    "?tls=DIR&max-sandboxes=N&max-memory-mb=N)\n",
			    c->engines.v[i], why);
			return -1;
		}
		for (j = 0; j < i; j++)
			if (enginespec_parse(c->engines.v[j], &other, why,
			        sizeof why) == 0 &&
			    strcmp(other.url, es.url) == 0) {
				fprintf(err, "--engine %.200s: given twice\n",
				    es.url);
				return -1;
			}
	}
	for (i = 0; i < c->drain.n; i++) {
		found = c->engines.n == 0 &&
		        strcmp(c->drain.v[i], c->docker_host) == 0;
		for (j = 0; j < c->engines.n && !found; j++)
			found = enginespec_parse(c->engines.v[j], &es, why,
			            sizeof why) == 0 &&
			        strcmp(es.url, c->drain.v[i]) == 0;
		if (!found) {
			fprintf(err,
			    "--drain %.200s: not the URL of an --engine\n",
			    c->drain.v[i]);
			return -1;
		}
	}
	return 0;
}

/*
 * --egress-allow and --egress-allow-address as the supervisor and the
 * worker will read them: each pattern and each address must parse.
 */
static int
egress_check(const struct config *c, FILE *err)
{
	struct egress_pattern p;
	struct egress_addr a;
	char why[256];
	int i;

	for (i = 0; i < c->egress_allow.n; i++)
		if (egress_pattern_parse(c->egress_allow.v[i],
		        strlen(c->egress_allow.v[i]), &p, why,
		        sizeof why) == -1) {
			fprintf(err,
			    "--egress-allow: %s (expected a host pattern such "
			    "as example.org, *.example.org, example.org:443, "
			    "192.0.2.1, [2001:db8::1]:8080 or *)\n",
			    why);
			return -1;
		}
	for (i = 0; i < c->egress_allow_addresses.n; i++)
		if (egress_addr_parse(c->egress_allow_addresses.v[i], &a, why,
		        sizeof why) == -1) {
			fprintf(err,
			    "--egress-allow-address: %s (expected an exact "
			    "IPv4 or IPv6 address such as 127.0.0.1 or ::1, "
			    "no port, no name)\n",
			    why);
			return -1;
		}
	return 0;
}

/*
 * Fill *c from defaults, the environment and argv, in that order.  Returns
 * 0, or -1 after writing what was wrong to err.
 */
int
config_parse(struct config *c, int argc, char **argv, FILE *err)
{
	enum { N = sizeof opts / sizeof opts[0] };
	struct option lopts[N + 10];
	const char *v;
	char *end;
	size_t i;
	int ch, idx;

	memset(c, 0, sizeof *c);
	for (i = 0; i < N; i++) {
		lopts[i] = (struct option){opts[i].name,
		    opts[i].type == OPT_BOOL ? optional_argument
		                             : required_argument,
		    NULL, 0};
		if (opts[i].def != NULL &&
		    opt_set(c, &opts[i], opts[i].def, err) == -1)
			return -1;
		if ((v = getenv(opts[i].env)) != NULL && *v != '\0') {
			if (opt_set(c, &opts[i], v, err) == -1) {
				fprintf(err, "(from the environment: %s)\n",
				    opts[i].env);
				return -1;
			}
			c->given[i] = 1;
		}
	}
	lopts[N] = (struct option){"help", no_argument, NULL, 'h'};
	lopts[N + 1] = (struct option){"version", no_argument, NULL, 'V'};
	lopts[N + 2] =
	    (struct option){"print-config", required_argument, NULL, 'P'};
	lopts[N + 3] = (struct option){"worker", required_argument, NULL, 'W'};
	lopts[N + 4] =
	    (struct option){"worker-uid", required_argument, NULL, 'U'};
	lopts[N + 5] = (struct option){"help-man", no_argument, NULL, 'M'};
	lopts[N + 6] =
	    (struct option){"worker-channel", required_argument, NULL, 'C'};
	lopts[N + 7] =
	    (struct option){"worker-tls", required_argument, NULL, 'T'};
	lopts[N + 8] =
	    (struct option){"worker-listeners", required_argument, NULL, 'L'};
	lopts[N + 9] = (struct option){NULL, 0, NULL, 0};

	optind = 0; /* 0, not 1: a full reset of getopt's state */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "+hV", lopts, &idx)) != -1) {
		switch (ch) {
		case 0:
			v = optarg;
			if (opts[idx].type == OPT_BOOL && v == NULL)
				v = "true";
			if (opt_set(c, &opts[idx], v, err) == -1)
				return -1;
			c->given[idx] = 1;
			break;
		case 'h':
			c->help = 1;
			break;
		case 'V':
			c->version = 1;
			break;
		case 'M':
			c->help_man = 1;
			break;
		case 'P':
			free(c->print_config);
			c->print_config = xstrdup(optarg);
			break;
		case 'W':
			free(c->worker_container);
			c->worker_container = xstrdup(optarg);
			break;
		case 'T':
			free(c->worker_tls);
			c->worker_tls = xstrdup(optarg);
			break;
		case 'C':
			free(c->worker_channel);
			c->worker_channel = xstrdup(optarg);
			break;
		case 'L':
			free(c->worker_listeners);
			c->worker_listeners = xstrdup(optarg);
			break;
		case 'U':
			errno = 0;
			c->worker_uid = strtol(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' ||
			    c->worker_uid < 1 ||
			    c->worker_uid > UID_MAX_SANDBOX) {
				fprintf(err, "--worker-uid: bad uid \"%s\"\n",
				    optarg);
				return -1;
			}
			break;
		default:
			/* Inside "-xh", argv[optind - 1] is not the bad one. */
			if (optopt > ' ' && optopt < 127 &&
			    strncmp(argv[optind - 1], "--", 2) != 0)
				fprintf(err,
				    "unknown or incomplete option: -%c "
				    "(see --help)\n",
				    optopt);
			else
				fprintf(err,
				    "unknown or incomplete option: %s "
				    "(see --help)\n",
				    argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(err, "unexpected argument: %s (see --help)\n",
		    argv[optind]);
		return -1;
	}
	if (strcmp(c->transport, "stdio") != 0 &&
	    strcmp(c->transport, "http") != 0 &&
	    strcmp(c->transport, "both") != 0) {
		fprintf(err,
		    "--transport: expected stdio, http or both, got "
		    "\"%s\"\n",
		    c->transport);
		return -1;
	}
	if (strcmp(c->control_mode, "on") == 0)
		c->control = 1;
	else if (strcmp(c->control_mode, "off") == 0)
		c->control = 0;
	else {
		fprintf(err, "--control: expected on or off, got \"%s\"\n",
		    c->control_mode);
		return -1;
	}
	if (strcmp(c->log_format, "text") != 0 &&
	    strcmp(c->log_format, "json") != 0) {
		fprintf(err,
		    "--log-format: expected text or json, got \"%s\"\n",
		    c->log_format);
		return -1;
	}
	if (strcmp(c->agent_mode, "on") == 0)
		c->agent = 1;
	else if (strcmp(c->agent_mode, "off") == 0)
		c->agent = 0;
	else {
		fprintf(err, "--agent: expected on or off, got \"%s\"\n",
		    c->agent_mode);
		return -1;
	}
	/*
	 * The token itself only from the environment (argv shows in ps),
	 * and taken out of it so that no child inherits it.  unsetenv()
	 * only drops the pointer: the bytes stay in the block the kernel
	 * set up at exec, which /proc/PID/environ shows, so they are
	 * overwritten where they lie first.
	 */
	if ((v = getenv("MCP_SANDBOXD_AUTH_TOKEN")) != NULL && *v != '\0') {
		c->auth_token = xstrdup(v);
		explicit_bzero((char *)v, strlen(v));
		unsetenv("MCP_SANDBOXD_AUTH_TOKEN");
	}
	if (uid_range_parse(c, err) == -1 ||
	    allow_network_check(c, err) == -1 ||
	    warm_pool_check(c, err) == -1 || expose_check(c, err) == -1 ||
	    egress_check(c, err) == -1 || runtime_check(c, err) == -1 ||
	    engines_check(c, err) == -1)
		return -1;
	if (c->memory_mb > c->max_memory_mb || c->cpus > c->max_cpus ||
	    c->pids > c->max_pids || c->ttl > c->max_ttl ||
	    c->exec_timeout > c->max_exec_timeout) {
		fprintf(err, "a default is above its ceiling (e.g. --memory-mb "
		             "above --max-memory-mb)\n");
		return -1;
	}
	return 0;
}

/* Whether a flag or its variable set the option (else: its default). */
int
config_given(const struct config *c, const char *name)
{
	size_t i;

	for (i = 0; i < sizeof opts / sizeof opts[0]; i++)
		if (strcmp(opts[i].name, name) == 0)
			return c->given[i];
	return 0;
}

void
config_free(struct config *c)
{
	int i;

	free(c->default_image);
	free(c->python_image);
	free(c->node_image);
	free(c->go_image);
	free(c->docker_host);
	free(c->log_level);
	free(c->log_format);
	free(c->control_mode);
	free(c->control_dir);
	free(c->print_config);
	free(c->worker_container);
	free(c->worker_channel);
	free(c->worker_listeners);
	free(c->transport);
	free(c->agent_mode);
	free(c->agent_file);
	free(c->listen);
	free(c->auth_token_file);
	free(c->auth_token);
	free(c->allowed_origins);
	free(c->allowed_hosts);
	free(c->expose_bind);
	free(c->expose_auth_mode);
	free(c->runtime_dir);
	free(c->state_dir);
	free(c->uid_range);
	free(c->runtime);
	config_list_free(&c->allow_runtimes);
	config_list_free(&c->deny_copy_names);
	config_list_free(&c->allow_networks);
	config_list_free(&c->allow_images);
	config_list_free(&c->warm_pool);
	config_list_free(&c->egress_allow);
	config_list_free(&c->egress_allow_addresses);
	config_list_free(&c->engines);
	config_list_free(&c->drain);
	free(c->worker_tls);
	for (i = 0; i < c->nlabels; i++)
		free(c->labels[i]);
	for (i = 0; i < c->nallow_dirs; i++)
		free(c->allow_dirs[i]);
	memset(c, 0, sizeof *c);
}

void
config_usage(FILE *f)
{
	size_t i;

	fprintf(f,
	    "usage: mcp-sandboxd [options]\n"
	    "       mcp-sandboxd ls | top | logs ID [-f] | stop ID "
	    "[--json] [--server PID]\n"
	    "                          the running servers and their sandboxes "
	    "(COMMAND --help)\n\n"
	    "An MCP server (stdio or Streamable HTTP) that runs code in Docker "
	    "sandboxes.\n\n"
	    "  -h, --help              this text\n"
	    "  -V, --version           print the version\n"
	    "  --print-config claude   print an mcpServers entry that starts "
	    "the server\n"
	    "                          with the options given here\n"
	    "  --print-config claude-http\n"
	    "                          print an mcp-remote entry for this "
	    "HTTP server\n"
	    "                          (its token from --auth-token-file)\n"
	    "  --print-config claude-docker\n"
	    "                          print an mcpServers entry that starts "
	    "the server's\n"
	    "                          image with docker run\n"
	    "  --print-config claude-code\n"
	    "                          print the entry claude mcp add-json "
	    "takes\n"
	    "                          (stdio, or HTTP with --transport "
	    "http)\n"
	    "  --help-man              print the manual page (roff)\n");
	fprintf(f, "  (MCP_SANDBOXD_AUTH_TOKEN: the HTTP bearer token itself, "
	           "an alternative to --auth-token-file)\n");
	for (i = 0; i < sizeof opts / sizeof opts[0]; i++)
		fprintf(f, "  --%-20s %s\n  %22s [%s%s%s]\n", opts[i].name,
		    opts[i].help, "", opts[i].env,
		    opts[i].def ? ", default " : "",
		    opts[i].def ? opts[i].def : "");
}

/* Frees the values of a list option. */
void
config_list_free(struct config_list *l)
{
	int i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	l->n = 0;
}

/* Whether the list holds this exact value. */
int
config_list_has(const struct config_list *l, const char *s)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return 1;
	return 0;
}

/* Whether a glob of the list matches s ('*' crosses '/' and ':'). */
int
config_list_match(const struct config_list *l, const char *s)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (fnmatch(l->v[i], s, 0) == 0)
			return 1;
	return 0;
}

/* Does the option's value differ from its default? */
static int
opt_changed(const struct config *c, const struct opt *o)
{
	const char *v;

	switch (o->type) {
	case OPT_STR:
		v = *(char *const *)((const char *)c + o->off);
		if (v == NULL)
			return 0;
		return o->def == NULL || strcmp(v, o->def) != 0;
	case OPT_LONG:
		return *(const long *)((const char *)c + o->off) !=
		       strtol(o->def, NULL, 10);
	case OPT_DOUBLE:
		return *(const double *)((const char *)c + o->off) !=
		       strtod(o->def, NULL);
	case OPT_BOOL:
		return *(const int *)((const char *)c + o->off) !=
		       (strcmp(o->def, "1") == 0);
	case OPT_LABEL:
		return c->nlabels > 0;
	case OPT_DIR:
		return c->nallow_dirs > 0;
	case OPT_LIST:
		return ((const struct config_list *)((const char *)c + o->off))
		           ->n > 0;
	}
	return 0;
}

static void
argv_add(char ***v, int *n, const char *s)
{
	*v = xrealloc(*v, ((size_t)*n + 2) * sizeof **v);
	(*v)[(*n)++] = xstrdup(s);
	(*v)[*n] = NULL;
}

/*
 * The command line that reproduces c: every option whose value is not
 * its default (whether it came from argv or the environment), in the
 * table's order, directories made absolute (a client may start the
 * server anywhere, "/" included).  The token itself is never among
 * them.  Returns a NULL-terminated vector, *argc its length;
 * config_argv_free frees it.
 */
char **
config_argv(const struct config *c, int *argc)
{
	char **v = NULL, buf[64], abs[PATH_MAX];
	const struct config_list *list;
	const struct opt *o;
	size_t i;
	int j;

	*argc = 0;
	v = xcalloc(1, sizeof *v);
	for (i = 0; i < sizeof opts / sizeof opts[0]; i++) {
		o = &opts[i];
		if (!opt_changed(c, o))
			continue;
		snprintf(buf, sizeof buf, "--%s", o->name);
		switch (o->type) {
		case OPT_STR:
			argv_add(&v, argc, buf);
			argv_add(&v, argc,
			    *(char *const *)((const char *)c + o->off));
			break;
		case OPT_LONG:
			argv_add(&v, argc, buf);
			snprintf(buf, sizeof buf, "%ld",
			    *(const long *)((const char *)c + o->off));
			argv_add(&v, argc, buf);
			break;
		case OPT_DOUBLE:
			argv_add(&v, argc, buf);
			snprintf(buf, sizeof buf, "%.15g",
			    *(const double *)((const char *)c + o->off));
			argv_add(&v, argc, buf);
			break;
		case OPT_BOOL:
			if (*(const int *)((const char *)c + o->off))
				argv_add(&v, argc, buf);
			else {
				snprintf(
				    buf, sizeof buf, "--%s=false", o->name);
				argv_add(&v, argc, buf);
			}
			break;
		case OPT_LABEL:
			for (j = 0; j < c->nlabels; j++) {
				argv_add(&v, argc, buf);
				argv_add(&v, argc, c->labels[j]);
			}
			break;
		case OPT_DIR:
			for (j = 0; j < c->nallow_dirs; j++) {
				argv_add(&v, argc, buf);
				argv_add(&v, argc,
				    realpath(c->allow_dirs[j], abs) != NULL
				        ? abs
				        : c->allow_dirs[j]);
			}
			break;
		case OPT_LIST:
			list = (const struct config_list *)((const char *)c +
			                                    o->off);
			for (j = 0; j < list->n; j++) {
				argv_add(&v, argc, buf);
				argv_add(&v, argc, list->v[j]);
			}
			break;
		}
	}
	return v;
}

void
config_argv_free(char **v)
{
	char **p;

	if (v == NULL)
		return;
	for (p = v; *p != NULL; p++)
		free(*p);
	free(v);
}

/* s for roff: a leading dot or quote escaped, backslashes and dashes.
 */
static void
roff_text(FILE *f, const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", f);
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			fputs("\\e", f);
		else if (*s == '-')
			fputs("\\-", f);
		else
			fputc(*s, f);
	}
}

/*
 * The manual page (mdoc-free man(7) roff), from the same table as
 * --help, so the two cannot disagree; the build runs it (--help-man)
 * and installs the result as mcp-sandboxd.1.
 */
void
config_man(FILE *f, const char *version)
{
	size_t i;

	fprintf(f, ".\\\" Generated by mcp-sandboxd --help-man from the "
	           "option table in common/config.c; do not edit.\n");
	fprintf(f,
	    ".TH MCP\\-SANDBOXD 1 \"\" \"mcp-sandboxd %s\" "
	    "\"User Commands\"\n",
	    version);
	fputs(
	    ".SH NAME\n"
	    "mcp\\-sandboxd \\- an MCP server that runs code in Docker "
	    "sandboxes\n"
	    ".SH SYNOPSIS\n"
	    ".B mcp\\-sandboxd\n"
	    "[\\fIoptions\\fR]\n"
	    ".br\n"
	    ".B mcp\\-sandboxd ls\n"
	    "[\\-\\-json] [\\-\\-server \\fIpid\\fR]\n"
	    ".br\n"
	    ".B mcp\\-sandboxd top\n"
	    "[\\-\\-json] [\\-\\-server \\fIpid\\fR]\n"
	    ".br\n"
	    ".B mcp\\-sandboxd logs\n"
	    "\\fIid\\fR [\\-f] [\\-\\-json] [\\-\\-server \\fIpid\\fR]\n"
	    ".br\n"
	    ".B mcp\\-sandboxd stop\n"
	    "\\fIid\\fR [\\-\\-json] [\\-\\-server \\fIpid\\fR]\n"
	    ".SH DESCRIPTION\n"
	    ".B mcp\\-sandboxd\n"
	    "is a Model Context Protocol server, over standard input and "
	    "output (stdio) or Streamable HTTP, whose tools create Docker "
	    "containers, run commands and code in them, and copy files in "
	    "and out.\n"
	    "Each sandbox is hardened: an unprivileged user, no network, a "
	    "read\\-only root, and limits on memory, CPU, processes and "
	    "output.\n"
	    ".PP\n"
	    "Every option can also be set by the environment variable shown "
	    "with it; the command line wins.\n"
	    ".SH OPTIONS\n"
	    ".TP\n"
	    ".BR \\-h \", \" \\-\\-help\n"
	    "Print the options and exit.\n"
	    ".TP\n"
	    ".BR \\-V \", \" \\-\\-version\n"
	    "Print the version and exit.\n"
	    ".TP\n"
	    ".BI \\-\\-print\\-config \" client\"\n"
	    "Print a client configuration entry that starts the server "
	    "with the options given, and exit:\n"
	    ".B claude\n"
	    "(an mcpServers entry for stdio),\n"
	    ".B claude\\-http\n"
	    "(an mcp\\-remote entry for a running HTTP server, with the token "
	    "of \\-\\-auth\\-token\\-file) or\n"
	    ".B claude\\-code\n"
	    "(the entry claude mcp add\\-json takes: stdio, or with "
	    "\\-\\-transport http the URL and the token's header).\n"
	    ".TP\n"
	    ".B \\-\\-help\\-man\n"
	    "Print this manual page (roff) and exit.\n",
	    f);
	for (i = 0; i < sizeof opts / sizeof opts[0]; i++) {
		fputs(".TP\n\\fB\\-\\-", f);
		roff_text(f, opts[i].name);
		fputs(opts[i].type == OPT_BOOL ? "\\fR[=\\fIbool\\fR]\n"
		      : opts[i].type == OPT_LABEL
		          ? "\\fR \\fIkey\\fR=\\fIvalue\\fR\n"
		      : opts[i].type == OPT_DIR ? "\\fR \\fIdir\\fR\n"
		                                : "\\fR \\fIvalue\\fR\n",
		    f);
		roff_text(f, opts[i].help);
		fputs(".\n.br\nEnvironment: \\fB", f);
		roff_text(f, opts[i].env);
		fputs("\\fR", f);
		if (opts[i].def != NULL) {
			fputs("; default: \\fB", f);
			roff_text(f, opts[i].def);
			fputs("\\fR", f);
		}
		fputs(".\n", f);
	}
	fputs(".SH ENVIRONMENT\n"
	      ".TP\n"
	      ".B MCP_SANDBOXD_AUTH_TOKEN\n"
	      "The bearer token HTTP clients must send, an alternative to "
	      "\\-\\-auth\\-token\\-file (never a flag: the command line shows "
	      "in ps).\n"
	      ".SH FILES\n"
	      ".TP\n"
	      ".I /var/run/docker.sock\n"
	      "The Docker engine's socket (see \\-\\-docker\\-host); its user "
	      "must be allowed to use it (the docker group).\n"
	      ".SH EXAMPLES\n"
	      "A client configuration entry for Claude Desktop:\n"
	      ".PP\n"
	      ".RS\n"
	      ".EX\n"
	      "mcp\\-sandboxd \\-\\-allow\\-dir ~/project \\-\\-print\\-config "
	      "claude\n"
	      ".EE\n"
	      ".RE\n"
	      ".PP\n"
	      "A Streamable HTTP server on loopback with a token:\n"
	      ".PP\n"
	      ".RS\n"
	      ".EX\n"
	      "mcp\\-sandboxd \\-\\-transport http \\-\\-auth\\-token\\-file "
	      "~/.config/mcp\\-sandboxd/token\n"
	      ".EE\n"
	      ".RE\n"
	      ".PP\n"
	      "An example systemd unit for the HTTP transport is installed "
	      "with the documentation (examples/mcp\\-sandboxd.service).\n"
	      ".SH SEE ALSO\n"
	      ".BR docker (1),\n"
	      ".BR systemd.exec (5)\n",
	    f);
}
