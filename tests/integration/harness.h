/*
 * Integration test harness: runs mcp-sandboxd (MCP_SANDBOXD_BIN) as a
 * child with pipes on its stdin and stdout, speaks JSON-RPC to it one
 * line at a time, and looks at Docker to check what it leaves behind.
 *
 * Every server gets a unique --label mcp-sandboxd-test=<pid>-<n>, so
 * tests may run in parallel.  Functions that take a struct h_server
 * fail the current criterion test on protocol trouble.
 */
#ifndef HARNESS_H
#define HARNESS_H

#include <sys/types.h>

#include <json-c/json.h>

#define H_IMAGE "mcp-sandboxd-test/python:bookworm"
#define H_LABEL_KEY "mcp-sandboxd-test"
#define H_TIMEOUT_MS 30000 /* default wait for one answer */
#define H_MAX_IDS 32

struct h_server {
	pid_t pid;
	int to_fd; /* the server's stdin */
	int from_fd; /* the server's stdout */
	char label[96]; /* mcp-sandboxd-test=<pid>-<n> */
	char *buf; /* bytes read, not yet a whole line */
	size_t len, cap;
	long next_id;
	json_object *queue; /* responses read while waiting for another */
	json_object *notes; /* notifications received */
	char *ids[H_MAX_IDS]; /* containers made through h_create() */
	int nids;
	int reaped; /* waitpid done */
	int status; /* its wait status */
};

/* Start a server with the test image, --log-level warn, a unique label,
 * then the extra arguments (NULL-terminated); they win over defaults. */
struct h_server *h_start(const char *, ...);
struct h_server *h_startv(const char *const *);
/* The same, run by the program wrap names (NULL-terminated words before
 * the server's command line: unshare(1), say); s->pid is wrap's. */
struct h_server *h_startw(const char *const *, const char *const *);

/* Send one raw line (a newline is added). */
void h_send_line(struct h_server *, const char *);
/* Send a request with a fresh integer id; params is JSON text or NULL. */
long h_send_request(struct h_server *, const char *, const char *);
/* Send a request with arguments as an object (taken). */
long h_send_request_obj(struct h_server *, const char *, json_object *);
/* Send a notification. */
void h_send_notification(struct h_server *, const char *, const char *);

/* The next message of any kind, or NULL on timeout or EOF. */
json_object *h_read_message(struct h_server *, int);
/* The next response (not a notification), queued ones first; NULL on
 * timeout or EOF. */
json_object *h_next_response(struct h_server *, int);
/* The response with this id (others are queued), or NULL. */
json_object *h_wait_id(struct h_server *, long, int);
json_object *h_wait_id_json(struct h_server *, json_object *, int);
/* Send a request and wait for its response (the whole message). */
json_object *h_request(struct h_server *, const char *, const char *, int);
json_object *h_read_uri(struct h_server *, const char *);
char *h_read_whole(struct h_server *, const char *);
int h_log_has(struct h_server *, const char *, const char *, int);

/* initialize (2025-11-25) + notifications/initialized; the result. */
json_object *h_initialize(struct h_server *);

/* tools/call; returns the result object (the test fails on a JSON-RPC
 * error or no answer). */
json_object *h_call_tool(struct h_server *, const char *, const char *);
json_object *h_call_tool_t(struct h_server *, const char *, const char *, int);
json_object *h_call_tool_obj(
    struct h_server *, const char *, json_object *, int);
long h_send_tool(struct h_server *, const char *, json_object *);
/* sandbox_exec of one command, not waited for; the request id. */
long h_send_exec(struct h_server *, const char *, const char *);
/* The result of a response to a tools/call (asserts it is one); the
 * response is released. */
json_object *h_tool_result(json_object *);

/* Close stdin, wait (timeout ms, then SIGKILL); the exit code, or
 * 128 + signal, or -1 if it had to be killed. */
int h_close(struct h_server *, int);
/* Wait for an exit caused otherwise (signal sent by the test). */
int h_wait_exit(struct h_server *, int);
/* h_close, then assert exit code 0 and that no container of this server
 * (label, and every id made through h_create) remains; frees. */
void h_finish(struct h_server *);
void h_free(struct h_server *);

/* Sandboxes. */
char *h_create(struct h_server *, const char *); /* container_id */
void h_stop(struct h_server *, const char *);
json_object *h_exec(struct h_server *, const char *, const char *, int);
json_object *h_exec_obj(struct h_server *, const char *, json_object *, int);
char *h_exec_ok(struct h_server *, const char *, const char *);
json_object *h_first(json_object *); /* results[0] of an exec result */

/* JSON. */
json_object *h_get(json_object *, const char *); /* "a.b.0.c" */
const char *h_str(json_object *, const char *);
long long h_int(json_object *, const char *);
double h_num(json_object *, const char *);
int h_bool(json_object *, const char *);
int h_is_error(json_object *);
const char *h_text(json_object *); /* content[0].text */
json_object *h_parse(const char *);

/* Docker and processes. */
int h_docker_count(const char *); /* containers with this label */
int h_container_exists(const char *);
/* Where a pid means that process, as the server's boot label says. */
void h_pid_home(pid_t, char *, size_t);
int h_wait_container_gone(const char *, int);
json_object *h_docker_inspect(const char *);
char *h_run(const char *, int *); /* popen: output, exit status */
/* `mcp-sandboxd ARGS` with control directory DIR: output and status. */
char *h_cli(const char *, const char *, int *);
int h_pid_alive(pid_t); /* exists and not a zombie */
long long h_cpu_ms(pid_t); /* user + system CPU time */
/* A "Name: N kB" line of /proc/PID/status (VmRSS, VmHWM); -1: none. */
long h_status_kb(pid_t, const char *);
/* Removes a tree, if there is one (never follows a symlink). */
void h_rm_rf(const char *);
int h_children(pid_t, pid_t *, int, int *);
long long h_now_ms(void);
/* A loopback port nobody listens on now. */
int h_free_port(void);
/* A connection to a loopback port, or -1. */
int h_dial(int);
int h_contains(const char *, const char *);

#endif
