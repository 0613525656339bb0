/*
 * The tools: one file each (tool-*.c), exporting its table entry; what
 * several of them share is declared here too.  The top layer but for
 * the transports.
 */
#ifndef TOOLS_H
#define TOOLS_H

#include <stddef.h>

#include <json-c/json.h>

struct call;
struct evbuffer;

/* table.c: register the server's tools, in tools/list's order. */
void tools_init(void);

/* What tool-execute-code.c and tool-create-run-close.c share. */
extern const char tool_execute_code_schema[];
json_object *tool_execute_code_result(json_object *, int);
int tool_execute_code_args(
    struct call *, const char **, const char **, json_object **, long long *);
void tool_create_run_close_start(struct call *, const char *, const char *,
    json_object *, long long, const char *);

/*
 * Their dependencies: one type, an array (the old "auto" and "none", a
 * single string, come as an array of one: tool_execute_code_args()).
 */
#define TOOL_DEPENDENCIES_SCHEMA                                               \
	"{\"type\":\"array\",\"items\":{\"type\":\"string\"},"                 \
	"\"description\":\"packages to install before the code runs (names, "  \
	"or paths of local wheels or npm tarballs copied in). Absent: what "   \
	"the code imports is found and what is missing installed; []: "        \
	"nothing is installed\"}"

/* What sandbox_snapshot, sandbox_restore and snapshot_list say of one. */
#define TOOL_SNAPSHOT_PROPS                                                    \
	"\"snapshot_id\":{\"type\":\"string\"},"                               \
	"\"name\":{\"type\":\"string\"},"                                      \
	"\"image\":{\"type\":\"string\"},"                                     \
	"\"workdir\":{\"type\":\"string\"},"                                   \
	"\"source\":{\"type\":\"string\",\"description\":\"the container "     \
	"it was taken of\"},"                                                  \
	"\"bytes\":{\"type\":\"integer\",\"description\":\"its archive on "    \
	"the host\"},"                                                         \
	"\"files\":{\"type\":\"integer\",\"description\":\"files, "            \
	"directories and links in it\"},"                                      \
	"\"created_at\":{\"type\":\"string\",\"format\":\"date-time\"},"       \
	"\"expires_at\":{\"type\":\"string\",\"format\":\"date-time\"}"

/* tool-initialize.c */
int tool_initialize_env_valid(json_object *, const char **);

/* tool-process-list.c: what every process_* tool shares. */
struct bgproc;
struct sandbox;
struct bgproc *tool_process_find(struct call *, struct sandbox **);
/* A background process's state (run/bgproc.c's bgproc_json()); its
 * users include run.h too (XRUN_EGRESS_SCHEMA). */
#define TOOL_PROCESS_SCHEMA                                                    \
	"{\"type\":\"object\",\"properties\":{"                                \
	"\"process_id\":{\"type\":\"integer\"},"                               \
	"\"command\":{\"type\":\"string\"},"                                   \
	"\"state\":{\"type\":\"string\",\"enum\":[\"running\",\"exited\"]},"   \
	"\"started_at\":{\"type\":\"string\"},"                                \
	"\"duration_ms\":{\"type\":\"integer\"},"                              \
	"\"exit_code\":{\"type\":\"integer\"},"                                \
	"\"signal\":{\"type\":\"integer\"},"                                   \
	"\"timed_out\":{\"type\":\"boolean\"},"                                \
	"\"truncated\":{\"type\":\"boolean\"},"                                \
	"\"command_cpu_ms\":{\"type\":\"number\"},"                            \
	"\"stdout_bytes\":{\"type\":\"integer\"},"                             \
	"\"stderr_bytes\":{\"type\":\"integer\"},"                             \
	"\"stdout_dropped\":{\"type\":\"integer\",\"description\":\"oldest "   \
	"bytes dropped for the spool's cap\"},"                                \
	"\"stderr_dropped\":{\"type\":\"integer\"}," XRUN_EGRESS_SCHEMA        \
	"\"stdout_uri\":{\"type\":\"string\"},"                                \
	"\"stderr_uri\":{\"type\":\"string\"}},"                               \
	"\"required\":[\"process_id\",\"command\",\"state\"]}"

/* The tools. */
extern const struct tool tool_sandbox_initialize;
extern const struct tool tool_sandbox_exec;
extern const struct tool tool_sandbox_stop;
extern const struct tool tool_get_sandbox_status;
extern const struct tool tool_write_file;
extern const struct tool tool_read_file;
extern const struct tool tool_list_files;
extern const struct tool tool_copy_file;
extern const struct tool tool_copy_project;
extern const struct tool tool_copy_file_from_sandbox;
extern const struct tool tool_execute_code;
extern const struct tool tool_create_run_close;
extern const struct tool tool_install_package;
extern const struct tool tool_run_project;
extern const struct tool tool_process_list;
extern const struct tool tool_process_output;
extern const struct tool tool_process_signal;
extern const struct tool tool_process_wait;
extern const struct tool tool_sandbox_expose_port;
extern const struct tool tool_sandbox_unexpose_port;
extern const struct tool tool_sandbox_set_egress;
extern const struct tool tool_sandbox_snapshot;
extern const struct tool tool_sandbox_restore;
extern const struct tool tool_snapshot_list;
extern const struct tool tool_snapshot_delete;

#endif
