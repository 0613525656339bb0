/*
 * The run layer: commands and code in a sandbox (xrun.c, coderun.c),
 * background processes (bgproc.c), its ports exposed on the host
 * (expose.c), files up into it (upload.c) and read from it (fileread.c), what
 * its helper scripts print (sbout.c) and dependency detection (deps.c).  Above
 * the sandbox layer.
 */
#ifndef RUN_H
#define RUN_H

#include <sys/queue.h>

#include <stddef.h>

#include <json-c/json.h>

struct call;
struct evbuffer;
struct session;
struct sandbox;
struct spool;

/* xrun.c */
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
	/* Bytes (escaped) of output its result shows at most, of the
	 * call's room (0: all of the call's room left). */
	long long out_room;
	/* Standard input streamed with xrun_write() as credit allows. */
	int stdin_stream;
	void (*on_credit)(struct xrun *, void *);
	/* Standard output to this sink instead of the result (return 1 to
	 * give its credit back later with xrun_took()). */
	int (*stdout_sink)(struct xrun *, const char *, size_t, void *);
	/* A read-only probe: runs as a user sandbox code cannot signal or
	 * write into the output of (worker.h, PROBE_USER). */
	int probe;
	/* The spool of its output, the caller's (else one of its own). */
	struct spool *spool;
	/* Output came (stream 1: stderr), after it went to the spool. */
	void (*on_output)(struct xrun *, int, size_t, void *);
};
struct xrun *xrun_start(struct call *, struct sandbox *,
    const struct xrun_opts *, void (*)(struct xrun *, json_object *, void *),
    void *);
void xrun_cancel(struct xrun *);
void xrun_signal(struct xrun *, int);
void xrun_cancel_call(struct call *);
void xrun_forget_call(struct call *);
long xrun_credit(struct xrun *);
void xrun_write(struct xrun *, const void *, size_t, int);
void xrun_took(struct xrun *, size_t);
void xrun_links(json_object *, json_object *);
/* The output schema's members for what a run used (xrun.c's keys). */
#define XRUN_USAGE_SCHEMA                                                      \
	"\"cpu_time_ms\":{\"type\":\"number\",\"description\":\"CPU "          \
	"time of the whole sandbox while it ran; absent where the server "     \
	"cannot read the sandbox's cgroup\"},"                                 \
	"\"memory_peak_bytes\":{\"type\":\"integer\",\"description\":"         \
	"\"the sandbox's peak memory while it ran (page cache included); "     \
	"absent where not known\"},"                                           \
	"\"command_cpu_ms\":{\"type\":\"number\",\"description\":\"CPU "       \
	"time of the command itself and its children (from the sandbox's "     \
	"agent; absent when the engine's exec ran it)\"},"                     \
	"\"command_max_rss_bytes\":{\"type\":\"integer\",\"description\":"     \
	"\"the largest resident size of the command or one of its children "   \
	"(from the agent)\"},"                                                 \
	"\"agent\":{\"type\":\"boolean\",\"description\":\"it ran through "    \
	"the sandbox's agent (absent with --agent off)\"},"                    \
	"\"agent_note\":{\"type\":\"string\",\"description\":\"why the "       \
	"engine's exec ran it instead of the agent\"},"
/* ... and for the egress proxy's connections while it ran (xrun.c). */
#define XRUN_EGRESS_SCHEMA                                                     \
	"\"egress\":{\"type\":\"array\",\"description\":\"connections "        \
	"the sandbox's egress proxy took while it ran (present while the "     \
	"sandbox has an egress list), one entry per host, port and verdict, "  \
	"at most 64\",\"items\":{\"type\":\"object\",\"properties\":{"         \
	"\"host\":{\"type\":\"string\"},\"port\":{\"type\":\"integer\"},"      \
	"\"allowed\":{\"type\":\"boolean\"},"                                  \
	"\"reason\":{\"type\":\"string\",\"description\":\"why it was "        \
	"refused (the client got a 403)\"},"                                   \
	"\"connections\":{\"type\":\"integer\"},"                              \
	"\"bytes_out\":{\"type\":\"integer\",\"description\":\"sent from "     \
	"the sandbox\"},"                                                      \
	"\"bytes_in\":{\"type\":\"integer\"}},"                                \
	"\"required\":[\"host\",\"port\",\"allowed\"]}},"                      \
	"\"egress_cut\":{\"type\":\"boolean\",\"description\":\"there were "   \
	"more than 64 entries: the rest are left out\"},"
const char *xrun_failure(json_object *, const char *);
/*
 * Whether a run's result is the command's (it ran: whatever its exit
 * code, a timeout, an OOM kill or output over the cap) rather than the
 * server's failure to run it (an engine error, a sandbox lost): the line
 * between a result with isError false and one with isError true.
 */
int xrun_ran(json_object *);
int xrun_succeeded(json_object *);
void xrun_egress_refused(json_object *, char *, size_t);

/* bgproc.c: background processes (sandbox_exec background: true) */
struct bgproc;
struct bg_ask {
	int output; /* process_output: output past off[] is news */
	long long off[2]; /* of stdout, stderr */
	long long max; /* bytes of each stream in one answer */
};
/* Answer a waiting call; bgproc NULL: its sandbox went meanwhile. */
typedef void (*bg_answer_cb)(
    struct call *, struct bgproc *, const struct bg_ask *);
void bgproc_init(void);
int bgproc_running(struct sandbox *);
struct bgproc *bgproc_start(
    struct sandbox *, const struct xrun_opts *, char *, size_t);
struct bgproc *bgproc_find(struct sandbox *, long long);
unsigned int bgproc_id(const struct bgproc *);
int bgproc_is_running(const struct bgproc *);
void bgproc_signal(struct bgproc *, int);
json_object *bgproc_json(const struct bgproc *);
json_object *bgproc_list(struct sandbox *);
json_object *bgproc_output(const struct bgproc *, const struct bg_ask *);
void bgproc_wait(struct bgproc *, struct call *, const struct bg_ask *,
    long long, bg_answer_cb);

/* expose.c: ports of a sandbox exposed on the host (sandbox_expose_port) */
struct exposed {
	int port; /* in the sandbox */
	int host_port; /* 0: not listening yet */
	char address[46]; /* where it listens (INET6_ADDRSTRLEN) */
	char url[72]; /* http://ADDRESS:HOST_PORT/ */
	int auth; /* connections must send the HTTP bearer token */
	int existing; /* it was exposed before this call */
};
typedef void (*expose_cb)(struct call *, const struct exposed *, const char *);
typedef void (*unexpose_cb)(struct call *, const char *);
void expose_init(void);
void expose_port(struct call *, struct sandbox *, int, expose_cb);
int unexpose_port(
    struct call *, struct sandbox *, int, unexpose_cb, const char **);
json_object *expose_list(struct sandbox *);

/* fileread.c: a file of a sandbox read, for read_file and resources */
#define FILEREAD_MAX (4 * 1024 * 1024) /* bytes of one read */
struct fileread {
	const char *path; /* absolute */
	long long offset, size;
	const char *data; /* len bytes from offset, when error is NULL */
	size_t len;
	const char *error; /* why nothing was read */
};
typedef void (*fileread_cb)(const struct fileread *, void *);
void fileread_start(struct call *, struct sandbox *, const char *, long long,
    long long, fileread_cb, void *);
char *fileread_uri(const char *, const char *);
int fileread_uri_parse(const char *, char *, size_t, char **, const char **);

/* upload.c */
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
struct snap_out;
struct upload *upload_snapshot(struct call *, struct sandbox *,
    struct snap_out *, const char *const *, const char *,
    void (*)(struct upload *, const char *, void *), void *);
json_object *upload_result(struct upload *);
void upload_cancel(struct upload *);
void upload_free(struct upload *);

/* A relative path of names, none of them "." or ".." or empty. */
int upload_name_valid(const char *);
/* A sandbox path (absolute, or relative to its workdir): its directory,
 * and its last name in *name; NULL if it has no valid last name. */
char *upload_path_split(const struct sandbox *, const char *, char **);

/* snapshot.c: snapshots of sandboxes, kept in the state directory */
typedef void (*snapshot_cb)(struct call *, json_object *, const char *, void *);
void snapshot_init(void);
long long snapshot_store_bytes(void);
int snapshot_id_valid(const char *);
int snapshot_take(struct call *, struct sandbox *, const char *, snapshot_cb,
    void *, char *, size_t);
int snapshot_restore(struct call *, struct sandbox *, json_object *,
    snapshot_cb, void *, char *, size_t);
int snapshot_take_running(const char *);
json_object *snapshot_list(struct session *, char *, size_t);
json_object *snapshot_get(struct session *, const char *, char *, size_t);
int snapshot_delete(struct session *, const char *, char *, size_t);
void snapshot_session_closed(struct session *);
void snapshot_shutdown(void);
const char *snapshot_meta_str(json_object *, const char *);
json_object *snapshot_json(json_object *);
char *snapshot_archive(const char *);
const char **snapshot_roots(const struct sandbox *);

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

#endif
