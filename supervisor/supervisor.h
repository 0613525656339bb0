/* The supervisor: MCP front end, sandbox registry and worker keeper. */
#ifndef SUPERVISOR_H
#define SUPERVISOR_H

#include <sys/queue.h>
#include <sys/types.h>

#include <stdint.h>
#include <time.h>

#include <json-c/json.h>

#include "hostpath.h"

struct bufferevent;
struct config;
struct engine;
struct event;
struct event_base;
struct evbuffer;

#define INSTANCE_LABEL "io.mcp-sandboxd.instance"
#define PID_LABEL "io.mcp-sandboxd.pid"
#define BOOT_LABEL "io.mcp-sandboxd.boot"
#define START_LABEL "io.mcp-sandboxd.start"
#define EXPIRES_LABEL "io.mcp-sandboxd.expires"
#define NAME_LABEL "io.mcp-sandboxd.name"

/* Global state of the one supervisor process. */
struct supervisor {
	struct event_base *base;
	struct engine *engine; /* the default engine: new sandboxes' */
	const struct config *conf;
	char instance[33]; /* random hex id of this instance */
	char boot_id[64];
	unsigned long long start_ticks;
	char *self_exe; /* this binary's path, for client configurations */
	int self_fd; /* this binary, opened at start: workers run it */
	struct hostpolicy hosts; /* host dirs the file tools may use */
	int shutting_down;
	int exit_code;
};
extern struct supervisor sup;

/*
 * Lifetimes of sandboxes, calls and sessions: an object that a callback
 * may still name is never freed under that callback.  Its end marks it
 * (a sandbox: dead, out of the registry; a call: answered, off its
 * session's list; a session: closing, then gone once its sandboxes are)
 * and drops the owner's reference; every party that can be called back
 * later holds one (a sandbox: its creation, a worker not ready yet; a
 * session: each of its calls).  The last reference hands the memory to
 * defer_free(), which frees it from the event loop, after the callbacks
 * running now have returned.  Code that holds a pointer across a return
 * to the loop checks the mark (sb->dead, c->cancelled, sess->closing),
 * never the memory.
 */
void defer_free(void (*)(void *), void *);
void defer_flush(void);

/*
 * One MCP client connection: the stdio client, or one HTTP session.  It
 * owns its calls and its sandboxes; no client sees another's.
 */
struct session {
	unsigned int id;
	void (*send)(struct session *, json_object *); /* takes the message */
	void *transport; /* the transport's own state */
	int initialized;
	char version[16]; /* negotiated protocol version */
	int rev; /* ... as an enum mcp_rev (revision.c) */
	int log_level; /* notifications/message at or above */
	int closing, gone, freeing;
	json_object *subs; /* resource URIs subscribed to (a set) */
	json_object *client_caps; /* the client's capabilities, owned */
	TAILQ_HEAD(, call) calls;
	long ncalls; /* calls in flight (--max-calls-per-session) */
	TAILQ_HEAD(, sreq) sreqs; /* the server's requests awaiting answers */
	long long last_sreq; /* the last id given to one */
	/*
	 * Optional, for transports with a stream per request (HTTP; NULL
	 * elsewhere): send_for() carries a message that belongs to request
	 * rid (a log line, or a request of the server, during that call) on
	 * that request's stream; drop_stream() ends the connection of
	 * request rid's stream without ending the request, which the client
	 * resumes with Last-Event-ID.
	 */
	void (*send_for)(struct session *, json_object *rid, json_object *msg);
	void (*drop_stream)(struct session *, json_object *rid);
	TAILQ_ENTRY(session) entry;
};

/* A tools/call in flight. */
struct call {
	struct session *sess;
	json_object *id; /* JSON-RPC id, owned */
	char *tool;
	json_object *args; /* arguments object, owned */
	int cancelled;
	int answered; /* call_reply() ran; freed from the event loop */
	void *state; /* the tool's, freed by its hooks */
	void (*cancel)(struct call *);
	struct progress *progress; /* when the client asked for it */
	/* Its commands in sandboxes: killed when the call is cancelled,
	 * whatever the tool (execrun.c). */
	LIST_HEAD(, xrun) runs;
	TAILQ_ENTRY(call) entry;
};

/* A tool: one file each (tool-*.c). */
struct tool {
	const char *name;
	const char *title;
	const char *description;
	const char *input_schema; /* JSON text */
	const char *output_schema; /* JSON text; NULL: none (fixtures only) */
	int read_only, destructive, idempotent, open_world;
	void (*exec)(struct call *);
};

struct limits {
	long memory_mb;
	double cpus;
	long pids;
};

struct wproc;
struct spool_dir;
struct screate;
struct sdestroy;

enum sandbox_state { SB_STARTING, SB_READY, SB_STOPPING };

struct sandbox {
	char *id; /* full container id */
	char *name;
	char *image;
	char *workdir;
	struct engine *engine; /* where its container is (not owned) */
	struct limits lim;
	long uid; /* its own user and group (--uid-range) */
	time_t created, expires, last_used;
	enum sandbox_state state;
	long exec_count;
	int restarts;
	struct event *respawn; /* a new worker after a crash, soon */
	json_object *respawn_tokens; /* the dead worker's calls to kill */
	struct wproc *worker;
	struct screate *create; /* while starting */
	struct spool_dir *spool; /* full outputs of its execs */
	struct session *owner; /* NULL: detached, its session ended */
	int detach; /* outlives its session (up to its lifetime) */
	int refs; /* see "Lifetimes" above */
	int dead; /* sandbox_destroy() ran: out of the registry */
	struct sdestroy *removal; /* dead before its container was known */
	struct event *expiry;
	TAILQ_ENTRY(sandbox) entry;
};
TAILQ_HEAD(sandboxes, sandbox);
extern struct sandboxes sandboxes;

/* mcp.c */
struct session *session_new(void (*)(struct session *, json_object *), void *);
void session_close(struct session *);
void mcp_handle_line(struct session *, const char *, size_t);
void mcp_send(struct session *, json_object *);
void mcp_log(struct session *, int, const char *, ...)
    __attribute__((format(printf, 3, 4)));
struct call *call_new(struct session *, json_object *, const char *);
void call_reply(struct call *, json_object *);
void mcp_shutdown_calls(void);

/* printconfig.c: --print-config */
int print_config(const struct config *, const char *, const char *);
void mcp_notify(const struct session *, const char *);
/* Used by nothing in the server proper; the conformance fixtures use them. */
void mcp_call_log(struct call *, int, const char *, ...)
    __attribute__((format(printf, 3, 4)));
int mcp_client_has(struct session *, const char *);
typedef void (*sreq_done)(struct call *, json_object *, json_object *);
void mcp_call_request(struct call *, const char *, json_object *, sreq_done);
void mcp_call_drop_stream(struct call *);

/* revision.c: what each protocol revision may carry */
enum mcp_rev { REV_2025_03_26, REV_2025_06_18, REV_2025_11_25, REV_N };
#define REV_LATEST REV_2025_11_25
int rev_of(const char *);
const char *rev_name(int);
void rev_fit(const struct session *, const char *, json_object *);

/* prompts.c: prompts/list, prompts/get, completion/complete */
struct prompt {
	const char *name;
	const char *title;
	const char *description;
	const char *arguments; /* JSON text: [{name, description, required}] */
	/* The GetPromptResult for these arguments (an object of strings,
	 * the required ones present), or NULL with *why set. */
	json_object *(*get)(struct session *, json_object *, const char **);
	/* Values completing an argument (an array of strings), or NULL. */
	json_object *(*complete)(const char *, const char *);
};
int prompts_register(const struct prompt *);
int prompts_count(void);
int prompts_completable(void);
json_object *prompts_list(
    struct session *, json_object *, json_object *, int *, const char **);
json_object *prompts_get(
    struct session *, json_object *, json_object *, int *, const char **);
json_object *prompts_complete(
    struct session *, json_object *, json_object *, int *, const char **);

/* execrun.c */
struct xrun;
struct xrun_opts {
	const char *command; /* or the code, with language */
	/* The activity log's line for a command of our own (a tool's helper
	 * script): what the client asked for.  log_quiet: its standard
	 * output is data (a listing, a file), logged by size only. */
	const char *log_as;
	int log_quiet;
	const char *language; /* run in the language's session */
	int session; /* ... that persists (else one call) */
	const char *const *args; /* $1... of the command, NULL-terminated */
	const char *workdir; /* NULL: the sandbox's */
	json_object *env;
	const char *stdin_text;
	long long timeout_ms;
	long long output_cap; /* 0: none */
	/* Standard input streamed with xrun_write() as credit allows. */
	int stdin_stream;
	void (*on_credit)(struct xrun *, void *);
	/* Standard output to this sink instead of the result (return 1 to
	 * give its credit back later with xrun_took()). */
	int (*stdout_sink)(struct xrun *, const char *, size_t, void *);
	/* A read-only probe: runs as a user sandbox code cannot signal or
	 * write into the output of (worker.h, PROBE_USER). */
	int probe;
};
struct xrun *xrun_start(struct call *, struct sandbox *,
    const struct xrun_opts *, void (*)(struct xrun *, json_object *, void *),
    void *);
void xrun_cancel(struct xrun *);
void xrun_cancel_call(struct call *);
void xrun_forget_call(struct call *);
long xrun_credit(struct xrun *);
void xrun_write(struct xrun *, const void *, size_t, int);
void xrun_took(struct xrun *, size_t);
void xrun_links(json_object *, json_object *);
/* The output schema's members for what a run used (execrun.c's keys). */
#define XRUN_USAGE_SCHEMA                                                      \
	"\"cpu_time_ms\":{\"type\":\"number\",\"description\":\"CPU "          \
	"time of the whole sandbox while it ran; absent where the server "     \
	"cannot read the sandbox's cgroup\"},"                                 \
	"\"memory_peak_bytes\":{\"type\":\"integer\",\"description\":"         \
	"\"the sandbox's peak memory while it ran (page cache included); "     \
	"absent where not known\"},"
const char *xrun_failure(json_object *, const char *);

/* stats.c */
#define STATS_BUCKETS 12
struct histogram {
	long long count[STATS_BUCKETS]; /* cumulative, as Prometheus has it */
	long long total;
	double sum;
};
struct stats {
	long long sandboxes_created, sandboxes_removed, sandboxes_failed;
	long long workers_restarted;
	long long execs_run, execs_failed, execs_timed_out, execs_cancelled;
	long long bytes_in, bytes_out;
	long long engine_errors;
	struct histogram create_ms, exec_ms;
	long long started_ms;
};
extern struct stats stats;
void stats_init(void);
void stats_observe(struct histogram *, double);
json_object *stats_json(void);
void stats_prometheus(struct evbuffer *);

/* resources.c */
typedef json_object *(*mcp_method)(
    struct session *, json_object *, json_object *, int *, const char **);
json_object *resources_list(
    struct session *, json_object *, json_object *, int *, const char **);
json_object *resources_templates(
    struct session *, json_object *, json_object *, int *, const char **);
json_object *resources_read(
    struct session *, json_object *, json_object *, int *, const char **);
json_object *resources_subscribe(
    struct session *, json_object *, json_object *, int *, const char **);
json_object *resources_unsubscribe(
    struct session *, json_object *, json_object *, int *, const char **);
void resources_logs_updated(struct sandbox *);
/*
 * Resources of a URI prefix added at startup by a module outside the
 * server proper (the conformance fixtures; the real server adds none).
 */
struct resource_provider {
	const char *prefix; /* "test://": the URIs it owns */
	void (*list)(struct session *, json_object *); /* append resources */
	void (*templates)(struct session *, json_object *); /* append them */
	/* A ReadResourceResult, or NULL with *code and *why set. */
	json_object *(*read)(
	    struct session *, const char *, int *, const char **);
	int (*subscribe)(struct session *, const char *); /* -1: unknown */
};
int resources_register(const struct resource_provider *);

/* progress.c */
void progress_start(struct call *, json_object *);
void progress_output(struct call *, const char *, size_t);
void progress_end(struct call *);
int progress_report(struct call *, double, double, const char *);

/* jsonrpc.c */
enum rpc_kind { RPC_REQUEST, RPC_NOTIFICATION, RPC_RESPONSE };
struct rpc_msg {
	enum rpc_kind kind;
	json_object *id; /* borrowed from the message */
	const char *method;
	json_object *params; /* borrowed, may be NULL */
};
#define RPC_PARSE_ERROR (-32700)
#define RPC_INVALID_REQUEST (-32600)
#define RPC_METHOD_NOT_FOUND (-32601)
#define RPC_INVALID_PARAMS (-32602)
#define RPC_INTERNAL_ERROR (-32603)
json_object *rpc_parse(const char *, size_t, int, int *);
int rpc_validate(json_object *, struct rpc_msg *, const char **);
json_object *rpc_error(json_object *, int, const char *);
json_object *rpc_result(json_object *, json_object *);

/* tools.c */
extern const struct tool *const tools[];
json_object *tools_list(const char *, int, int *);
int tools_register(const struct tool *);
const struct tool *tool_find(const char *);
json_object *tool_result(json_object *, const char *, int);
void tool_result_add_content(json_object *, json_object *);
json_object *tool_error(const char *, ...)
    __attribute__((format(printf, 1, 2)));
const char *arg_string(struct call *, const char *);
int arg_type_ok(struct call *, const char *, json_type, json_object **);
char *sanitize_docker_error(const char *);

/* toolargs.c */
int toolargs_check(const struct tool *, json_object *, char **);

/* transfer.c */
struct upload;
struct tar_out;
/* engine/scripts/upload-file.sh, embedded: one file in. */
extern const char upload_file_sh[];
#define UPLOAD_TMP_NAME 32
void upload_tmp_name(char[UPLOAD_TMP_NAME]);
void upload_file_cleanup(const char *, const char *, const char *);
struct upload *upload_start(struct call *, struct sandbox *, struct tar_out *,
    const char *, const char *, int,
    void (*)(struct upload *, const char *, void *), void *);
struct upload *upload_host(struct call *, struct sandbox *, const char *,
    const char *, const char *const *, int,
    void (*)(struct upload *, const char *, void *), void *, char **, char *,
    size_t);
struct tar_out *upload_tar(struct upload *);
void upload_cancel(struct upload *);
void upload_free(struct upload *);

/* tool-copy-file.c */
char *sandbox_path_split(const struct sandbox *, const char *, char **);

/* tool-write-file.c */
struct evbuffer *tar_one_file(const char *, const void *, size_t, int, long);
int valid_relative(const char *);

/* coderun.c */
struct coderun;
void coderun_start(struct call *, struct sandbox *, const char *, const char *,
    int, json_object *, long long, void (*)(json_object *, void *), void *,
    struct coderun **);
void coderun_cancel(struct coderun *);
const char *code_manager(const char *);
const char *code_installer(const char *);
const char *code_image(const char *);
const char *code_image_flag(const char *, const char **);
int code_language_valid(const char *);
int code_package_valid(const char *, const char *);

/* tool-execute-code.c, tool-create-run-close.c */
extern const char code_output_schema[];
json_object *code_result(json_object *, int);
int code_args(
    struct call *, const char **, const char **, json_object **, long long *);
void create_run_close_start(struct call *, const char *, const char *,
    json_object *, long long, const char *);

/* tool-initialize.c */
int valid_workdir(const char *);
int valid_env(json_object *, const char **);

/* sandbox.c */
struct sandbox *sandbox_find(struct session *, const char *);
struct sandbox *sandbox_lookup(struct call *, const char *);
int sandbox_count(void);
struct sandbox *sandbox_create(struct call *, const char *, const char *,
    json_object *, const char *, const char *, const struct limits *, long);
struct sandbox *sandbox_create_cb(struct call *, const char *, const char *,
    json_object *, const char *, const char *, const struct limits *, long,
    void (*)(struct call *, struct sandbox *, const char *, void *), void *);
struct sandbox *sandbox_ref(struct sandbox *);
void sandbox_unref(struct sandbox *);
void sandbox_destroy(struct sandbox *, void (*)(void *, const char *), void *);
void sandbox_destroy_all(void (*)(void));
void sandbox_gone(struct sandbox *, const char *);
void sandbox_touch(struct sandbox *);
time_t sandbox_deadline(const struct sandbox *, int *);
void sandbox_destroy_owned(struct session *, void (*)(void *), void *);
json_object *sandbox_limits_json(const struct sandbox *);

/* workers.c */
/* Output of a call: return 0 if taken, 1 to return credit later. */
typedef int (*wcall_data_cb)(uint16_t, const char *, size_t, void *);
typedef void (*wcall_credit_cb)(long, void *);
typedef void (*wcall_done_cb)(json_object *, void *);
int wproc_spawn(struct sandbox *, void (*)(struct sandbox *, const char *));
uint32_t wproc_call(
    struct wproc *, json_object *, wcall_data_cb, wcall_done_cb, void *);
void wproc_cancel(struct wproc *, uint32_t);
void wproc_credit(struct wproc *, uint32_t, size_t);
void wproc_send(struct wproc *, uint32_t, const void *, size_t, int);
void wproc_on_credit(struct wproc *, uint32_t, wcall_credit_cb);
void wproc_shutdown(struct wproc *);
pid_t wproc_pid(struct wproc *);
void wproc_reap(void);
int wproc_count(void);
void wproc_kill_all(void);

/* reaper.c */
void reaper_run(void);
void reaper_free(void);
void reaper_sweep_own(void (*)(void));
int owner_alive(const char *, const char *, const char *);
void reaper_labels(json_object *, time_t);

/* stdio.c */
int stdio_start(void);
void stdio_stop(void);
int stdio_open(void);

/* http.c (Streamable HTTP) */
int http_start(void);
void http_stop(void);

/* main.c */
void supervisor_quit(void);

/* tests/conformance/fixtures.c (-Dfixtures=true only: the
 * mcp-sandboxd-fixtures binary) */
void fixtures_init(void);

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
