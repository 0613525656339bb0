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

/* tool-initialize.c */
int tool_initialize_env_valid(json_object *, const char **);

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

#endif
