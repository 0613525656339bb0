/*
 * The MCP layer: JSON-RPC, sessions and their calls, the method table,
 * the tool registry, prompts, progress and protocol revisions.  It knows
 * no sandbox and no transport: a transport gives it lines and a send
 * function; the layers above register methods and tools and set hooks.
 */
#ifndef MCP_H
#define MCP_H

#include <sys/queue.h>

#include <json-c/json.h>

struct progress;
struct task;
struct xrun;

/*
 * One MCP client connection: the stdio client, or one HTTP session.  It
 * owns its calls and its sandboxes; no client sees another's.
 */
struct session {
	unsigned int id;
	/* Who it is to what outlives it (snapshots): "session-<random>",
	 * unless the transport names its user (stdio: "user:<uid>"). */
	char principal[48];
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
	TAILQ_HEAD(, task) tasks; /* its MCP tasks, oldest first (tasks.c) */
	long ntasks;
	long long task_bytes; /* of its tasks' results kept */
	unsigned long long last_task_seq; /* the last seq given to one */
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
	int answered; /* mcp_call_reply() ran; freed from the event loop */
	void *state; /* the tool's, freed by its hooks */
	void (*cancel)(struct call *);
	struct progress *progress; /* when the client asked for it */
	struct task *task; /* a task-augmented call's task, else NULL */
	/* Its commands in sandboxes (the run layer's, run/xrun.c):
	 * killed when the call is cancelled, whatever the tool. */
	LIST_HEAD(, xrun) runs;
	/* Bytes (JSON-escaped) of output its result may still show: every
	 * command's share of MCP_RESULT_OUTPUT (the rest is in spools). */
	long long out_room;
	TAILQ_ENTRY(call) entry;
};

/*
 * A tool result is at most MCP_RESULT_MAX bytes (tool_result_fit() cuts
 * what is over); the output of its commands, escaped, takes at most
 * MCP_RESULT_OUTPUT of it, twice (structuredContent and the text).  An
 * operator who raises --inline-output past half of that raises both
 * (mcp_result_output(), mcp_result_max()).
 */
#define MCP_RESULT_MAX (1024 * 1024)
#define MCP_RESULT_OUTPUT (64 * 1024)
long long mcp_result_output(void);
size_t mcp_result_max(void);

/* A tool: one file each (tools/tool-*.c). */
struct tool {
	const char *name;
	const char *title;
	const char *description;
	const char *input_schema; /* JSON text */
	const char *output_schema; /* JSON text; NULL: none (fixtures only) */
	int read_only, destructive, idempotent, open_world;
	int task_support; /* may run as an MCP task ("optional") */
	void (*exec)(struct call *);
};

/*
 * What the layers above do when a session or a call ends; set once at
 * start (main.c).  A hook left NULL does nothing (session_close: done at
 * once).
 */
struct mcp_hooks {
	/* The session closes: end what it owns, then done(arg). */
	void (*session_close)(struct session *, void (*)(void *), void *);
	void (*call_cancel)(struct call *); /* kill what it runs */
	void (*call_free)(struct call *); /* forget it: it is freed */
};
void mcp_hooks_set(const struct mcp_hooks *);

/* A method of the protocol: a result, or NULL with *code and *why set
 * (or *code 0: answered later, as tools/call is). */
typedef json_object *(*mcp_method)(
    struct session *, json_object *, json_object *, int *, const char **);
struct mcp_method_entry {
	const char *name;
	mcp_method fn;
};
/* Add methods (the table is not copied; NULL-name terminated). */
int mcp_methods_register(const struct mcp_method_entry *);
int mcp_has_method(const char *);

/* mcp.c */
struct session *mcp_session_new(
    void (*)(struct session *, json_object *), void *);
void mcp_session_close(struct session *);
void mcp_handle_line(struct session *, const char *, size_t);
void mcp_send(struct session *, json_object *);
void mcp_log(struct session *, int, const char *, ...)
    __attribute__((format(printf, 3, 4)));
struct call *mcp_call_new(struct session *, json_object *, const char *);
void mcp_call_reply(struct call *, json_object *);
void mcp_call_fail(struct call *, int, const char *);
void mcp_call_cancel(struct call *);
void mcp_shutdown_calls(void);

void mcp_notify(const struct session *, const char *);
/* Used by nothing in the server proper; the conformance fixtures use them. */
void mcp_call_log(struct call *, int, const char *, ...)
    __attribute__((format(printf, 3, 4)));
int mcp_client_has(struct session *, const char *);
typedef void (*sreq_done)(struct call *, json_object *, json_object *);
void mcp_call_request(struct call *, const char *, json_object *, sreq_done);
void mcp_call_drop_stream(struct call *);

/* tasks.c: MCP tasks (2025-11-25), task-augmented tools/call */
#define TASK_ID_MAX 64 /* a longer taskId is nobody's */
struct task *tasks_new(struct session *, json_object *, int *, const char **);
void tasks_attach(struct task *, struct call *);
json_object *tasks_created(struct task *);
void tasks_announced(struct task *);
void tasks_finish(struct task *, json_object *);
void tasks_call_done(struct call *, json_object *);
void tasks_session_close(struct session *);
int tasks_cancel_waiter(struct session *, json_object *);
json_object *tasks_capability(void);
json_object *tasks_get(
    struct session *, json_object *, json_object *, int *, const char **);
json_object *tasks_result(
    struct session *, json_object *, json_object *, int *, const char **);
json_object *tasks_list(
    struct session *, json_object *, json_object *, int *, const char **);
json_object *tasks_cancel(
    struct session *, json_object *, json_object *, int *, const char **);

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

/* progress.c */
void progress_start(struct call *, json_object *);
void progress_output(struct call *, const char *, size_t);
void progress_end(struct call *);
int progress_report(struct call *, double, double, const char *);

/* rpc.c: JSON-RPC 2.0 */
enum rpc_kind { RPC_REQUEST, RPC_NOTIFICATION, RPC_RESPONSE };
struct rpc_msg {
	enum rpc_kind kind;
	json_object *id; /* borrowed from the message */
	const char *method;
	json_object *params; /* borrowed, may be NULL */
};
#define RPC_PARSE_ERROR (-32700)
/* What a message that rpc_parse() refuses is, for its answer. */
#define RPC_PARSE_WHY                                                          \
	"parse error: not valid JSON (or nested too deeply, or of more than "  \
	"65536 values or 8192 objects and arrays)"
/* The most values (objects, arrays, keys and values) of one message, and
 * objects and arrays among them. */
#define RPC_MAX_VALUES 65536
#define RPC_MAX_CONTAINERS 8192
#define RPC_INVALID_REQUEST (-32600)
#define RPC_METHOD_NOT_FOUND (-32601)
#define RPC_INVALID_PARAMS (-32602)
#define RPC_INTERNAL_ERROR (-32603)
json_object *rpc_parse(const char *, size_t, int, int *);
int rpc_validate(json_object *, struct rpc_msg *, const char **);
json_object *rpc_error(json_object *, int, const char *);
json_object *rpc_result(json_object *, json_object *);

/* tools.c */
json_object *tools_list(const char *, int, int *);
int tools_register(const struct tool *);
const struct tool *tool_find(const char *);
const struct tool *tool_nth(size_t);
json_object *tool_result(json_object *, const char *, int);
size_t tool_result_fit(json_object *);

/* What the MCP layer cut or dropped for its limits (/metrics). */
struct mcp_limits {
	long long results_cut; /* tool results cut to MCP_RESULT_MAX */
	long long task_results_dropped; /* for --max-task-results-mb */
};
extern struct mcp_limits mcp_limits;
void tool_result_add_content(json_object *, json_object *);
json_object *tool_resource_link(
    const char *, const char *, const char *, long long);
json_object *tool_error(const char *, ...)
    __attribute__((format(printf, 1, 2)));
const char *tool_arg_string(struct call *, const char *);
int tool_arg_type_ok(struct call *, const char *, json_type, json_object **);

/* toolargs.c */
int toolargs_check(const struct tool *, json_object *, char **);

#endif
