/* Configuration: every flag has an environment variable. */
#ifndef CONFIG_H
#define CONFIG_H

#include <stdio.h>

#define CONFIG_MAX_LABELS 16
#define CONFIG_MAX_DIRS 32

struct config {
	char *default_image;
	char *python_image, *node_image, *go_image;
	char *docker_host;
	char *log_level;

	/* Defaults for a new sandbox, and the operator's ceilings. */
	long memory_mb, max_memory_mb;
	double cpus, max_cpus;
	long pids, max_pids;
	long ttl, max_ttl, idle_ttl;
	long max_starts;
	long workdir_mb, tmp_mb;
	long nofile, fsize_mb;
	int allow_network;

	/* Per call. */
	long exec_timeout, max_exec_timeout;
	long output_cap;
	long inline_output;
	long log_buffer_kb;
	long spool_mb;
	long project_mb, project_files;

	/* Server. */
	long max_sandboxes;
	long tools_page;
	long max_line;
	long max_json_depth;
	char *labels[CONFIG_MAX_LABELS]; /* "key=value" added to containers */
	int nlabels;
	char *allow_dirs[CONFIG_MAX_DIRS]; /* host dirs for the file tools */
	int nallow_dirs;

	/* Transports (the Streamable HTTP one: supervisor/http.c). */
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
	int no_auth; /* HTTP without a token, asked for explicitly */

	/* Per client session (HTTP session, or the stdio client). */
	long max_sandboxes_per_session;
	long max_calls_per_session;
	long max_calls; /* tools/call in flight, all sessions */

	/* Modes. */
	int help, version;
	char *print_config;
	char *worker_container; /* internal: run as a worker for this */
};

int config_parse(struct config *, int, char **, FILE *);
void config_free(struct config *);
void config_usage(FILE *);

#endif
