/* Configuration: every flag has an environment variable. */
#ifndef CONFIG_H
#define CONFIG_H

#include <stdio.h>

#define CONFIG_MAX_LABELS 16
#define CONFIG_MAX_DIRS 32
#define CONFIG_MAX_LIST 32
#define CONFIG_RUNTIME_MAX 63 /* the longest OCI runtime name taken */

/* A repeatable option's values (the variable takes a comma list). */
struct config_list {
	char *v[CONFIG_MAX_LIST];
	int n;
};
#define CONFIG_MAX_OPTS 128

struct config {
	char *default_image;
	char *python_image, *node_image, *go_image;
	char *docker_host;
	char *log_level;
	char *log_format; /* text or json (common/log.c) */
	/* The control socket (supervisor/transport/control.c). */
	char *control_mode; /* --control: "on" or "off" */
	char *control_dir; /* NULL: common/ctldir.c's default */
	int control; /* --control as a flag */
	/* Several engines (supervisor/sandbox/engines.c): whether a client
	 * may name its sandbox's engine; each --engine (enginespec.h), none:
	 * --docker-host alone; the URLs no new sandbox goes to; seconds
	 * between health checks. */
	int allow_engine_choice;
	struct config_list engines, drain;
	long engine_ping_interval;
	char *worker_tls; /* internal: the worker's engine's TLS (or "") */

	/* Defaults for a new sandbox, and the operator's ceilings. */
	long memory_mb, max_memory_mb;
	double cpus, max_cpus;
	long pids, max_pids;
	long ttl, max_ttl, idle_ttl;
	long max_starts;
	struct config_list warm_pool; /* "N" or "IMAGE=N" (config_warm_pool) */
	long pause_after; /* seconds without calls; 0: never paused */
	long workdir_mb, tmp_mb;
	long nofile, fsize_mb;
	long volume_mb; /* tmpfs for each VOLUME an image declares */
	struct config_list allow_networks; /* besides "none" */
	struct config_list allow_images; /* globs; none: any image */
	long pull_timeout; /* seconds */
	/* The OCI runtime of new sandboxes (NULL: none named, the engine's
	 * default), and those a client may name besides it. */
	char *runtime;
	struct config_list allow_runtimes;
	char *uid_range; /* FIRST-LAST, parsed into uid_first, uid_last */
	long uid_first, uid_last; /* each sandbox's own uid from here */

	/* Per call. */
	long exec_timeout, max_exec_timeout;
	long max_background; /* background processes at once, per sandbox */
	long max_background_seconds; /* 0: --max-exec-timeout bounds them */
	long output_cap;
	long inline_output;
	long max_image_kb; /* the most bytes of one image in a result */
	long max_image_pixels; /* ... and the most pixels (width x height) */
	long log_buffer_kb;
	long spool_mb;
	long project_mb, project_files;
	long copy_out_mb; /* copy_file_from_sandbox: bytes on the host */
	int allow_exec_bits; /* preserve_mode may keep execute bits */
	struct config_list deny_copy_names; /* besides .git, .hg, .svn */
	long transfer_idle; /* seconds without progress */
	/* Snapshots (run/snapshot.c). */
	char *state_dir; /* NULL: the default private directory */
	long snapshot_mb; /* all snapshots together */
	long snapshot_max_mb; /* one snapshot */
	long snapshot_mb_per_owner; /* all of one principal's together */
	long snapshot_ttl; /* seconds */

	/* Server. */
	long max_sandboxes;
	long tools_page;
	long max_line;
	long max_json_depth;
	char *runtime_dir; /* NULL: the default private directory */
	char *agent_mode; /* --agent: "on" or "off" */
	int agent; /* ... as a flag */
	char *agent_file; /* NULL: the built-in agent */
	char *labels[CONFIG_MAX_LABELS]; /* "key=value" added to containers */
	int nlabels;
	char *allow_dirs[CONFIG_MAX_DIRS]; /* host dirs for the file tools */
	int nallow_dirs;

	/* Transports (the Streamable HTTP one: supervisor/transport/http.c). */
	char *transport; /* stdio, http or both */
	char *listen; /* ADDR:PORT */
	char *auth_token_file;
	char *auth_token; /* MCP_SANDBOXD_AUTH_TOKEN (never a flag) */
	char *allowed_origins; /* comma list; NULL: loopback ones */
	char *allowed_hosts; /* comma list; NULL: loopback ones */
	long max_sessions;
	long session_idle; /* seconds */
	long http_timeout; /* seconds */
	long http_max_connections;
	long http_header_timeout; /* seconds */
	long http_min_rate; /* bytes/s */
	int no_auth; /* HTTP without a token, asked for explicitly */

	/* Ports of sandboxes exposed on the host (run/expose.c). */
	int expose_bind_loopback; /* --expose-bind is of loopback */
	int expose_auth; /* --expose-auth on: the HTTP token guards them */
	char *expose_bind; /* an IPv4 or IPv6 literal */
	char *expose_auth_mode; /* --expose-auth: "on" or "off" */
	long max_exposed_ports; /* per sandbox */

	/* Egress by allowlist, through the worker's proxy in each sandbox
	 * (supervisor/sandbox/egresslist.c, worker/): the operator's ceiling
	 * of every sandbox's list (egress_pattern_parse() patterns; none:
	 * egress off), and exact addresses the proxy may reach although
	 * egress_addr_refused() refuses them (egress_addr_parse()). */
	struct config_list egress_allow;
	struct config_list egress_allow_addresses;

	/* Per client session (HTTP session, or the stdio client). */
	long max_sandboxes_per_session;
	long max_calls_per_session;
	long max_calls; /* tools/call in flight, all sessions */
	long max_tasks_per_session; /* MCP tasks held, running or kept */
	long max_task_results_mb; /* their results kept, all sessions */
	long task_ttl_max; /* seconds */

	/* Which options the flags or the environment set (not defaults),
	 * by their place in config.c's table: see config_given(). */
	unsigned char given[CONFIG_MAX_OPTS];

	/* Modes. */
	int help, version, help_man;
	char *print_config;
	char *worker_container; /* internal: run as a worker for this */
	char *worker_channel; /* internal: the agent channel's directory */
	char *worker_listeners; /* internal: listenreg.h's directory */
	long worker_uid; /* internal: the sandbox's uid, for the worker */
};

int config_parse(struct config *, int, char **, FILE *);
int config_given(const struct config *, const char *);
void config_free(struct config *);
void config_usage(FILE *);
void config_list_free(struct config_list *);
int config_list_has(const struct config_list *, const char *);
int config_list_match(const struct config_list *, const char *);
int config_runtime_valid(const char *);
int config_runtime_allowed(const struct config *, const char *);
int config_warm_pool(const char *, const char **, size_t *, long *);
char **config_argv(const struct config *, int *);
void config_argv_free(char **);
void config_man(FILE *, const char *);

#endif
