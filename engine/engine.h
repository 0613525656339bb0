/*
 * The seam between the server and a container runtime: the only interface
 * through which supervisor/ and worker/ reach one.  A struct engine is a
 * handle on one runtime (a backend's ops table, its state, and what it
 * supports); each sandbox holds the engine it lives on, and calls name
 * containers by id, never a runtime's endpoints.  Every operation is
 * asynchronous on the handle's libevent loop and answers once, through its
 * callback, unless it was cancelled.
 *
 * Backends: engine-docker.c (the Docker Engine API, on docker.c; Podman's
 * compatible API too, with what it needs in podman.c).
 */
#ifndef ENGINE_H
#define ENGINE_H

#include <stddef.h>

#include <json-c/json.h>

struct event_base;
struct engine;
struct engine_req;
struct engine_exec;

/* What a runtime can do (engine_supports()). */
#define ENGINE_CGROUPS 0x1 /* its containers' cgroups are on this host */
#define ENGINE_EXEC_STDIN 0x2 /* an exec's standard input can be streamed */
#define ENGINE_UPDATE 0x4 /* a running container's limits can change */
#define ENGINE_LIBPOD 0x8 /* Podman's compatible API (its /_ping says) */

/* A container, as inspected or listed. */
struct engine_container {
	const char *id;
	const char *status; /* the runtime's word: "running", "exited"... */
	int running;
	long long pid; /* its first process on the runtime's host, or 0 */
	long exit_code; /* once it stopped, else -1 */
	int oom_killed;
	long long pids_limit; /* 0: none */
	long long memory_limit; /* bytes; 0: none */
	long long nano_cpus; /* 0: none */
	int paused;
	long long created; /* listings only: seconds since the epoch */
	json_object *labels; /* an object of strings (borrowed), or NULL */
	/* inspect only: its mounts, an array of objects with Type, Source
	 * (a path on the engine's host) and Destination (borrowed), or NULL */
	json_object *mounts;
};

/* Usage of a running container. */
struct engine_stats {
	int have_memory, have_pids, have_cpu;
	long long memory_bytes;
	long long pids;
	long long cpu_ns; /* CPU time used so far (cumulative) */
};

/* An image, as inspected. */
struct engine_image {
	json_object *volumes; /* array: the paths it declares as VOLUME */
};

struct engine_resp {
	const char *error; /* NULL on success; else what went wrong */
	int notfound; /* no such container, image or exec */
	int unchanged; /* nothing to do (a container already stopped) */
	const char *id; /* of what a create made */
	long exit_code; /* an exec's, once it ended, else -1 */
	const struct engine_container *container; /* inspect */
	const struct engine_container *list; /* list */
	size_t nlist;
	const struct engine_stats *stats;
	const struct engine_image *image;
};

/* An answer with nothing in it (exit_code -1), for a caller's own use. */
void engine_resp_init(struct engine_resp *);

/* Called once per operation, unless it was cancelled. */
typedef void (*engine_done_cb)(const struct engine_resp *, void *);
/* Output of a stream: stream is ENGINE_STDOUT or ENGINE_STDERR. */
typedef void (*engine_output_cb)(int, const char *, size_t, void *);
#define ENGINE_STDOUT 1
#define ENGINE_STDERR 2

/* The container a sandbox is: what it runs and how it is confined. */
#define ENGINE_MAX_TMPFS 40
struct engine_tmpfs {
	const char *path; /* (borrowed) */
	long size_mb;
	int exec; /* else noexec */
	long uid; /* owner (and group) of its root, or -1 */
	int mode;
};

#define ENGINE_MAX_BINDS 2
struct engine_spec {
	const char *image;
	const char *name; /* the container's name, or NULL */
	const char *const *cmd; /* the keep-alive, argv (NULL-terminated) */
	const char *user; /* ... runs as "uid:gid" */
	const char *workdir;
	json_object *env; /* array of "NAME=value" (borrowed) */
	json_object *labels; /* object of strings (borrowed) */
	const char *network; /* "none", "bridge", ... */
	const char *runtime; /* the OCI runtime, or NULL: the engine's own */
	long long memory_bytes; /* and as much memory+swap */
	double cpus;
	long long pids;
	long long nofile, fsize_bytes; /* ulimits */
	struct engine_tmpfs tmpfs[ENGINE_MAX_TMPFS];
	int ntmpfs;
	/* Host paths bound read-only into it (the agent, its channel). */
	struct engine_bind {
		const char *source, *target;
	} binds[ENGINE_MAX_BINDS];
	int nbinds;
};

/* A command to run in a container. */
struct engine_exec_spec {
	const char *const *argv; /* NULL-terminated */
	const char *user; /* "uid:gid" */
	const char *workdir; /* or NULL: the container's */
	const char *const *env; /* "NAME=value", NULL-terminated, or NULL */
	int stdin; /* its standard input is written (engine_exec_write) */
};

/* Where an exec failed (struct engine_exec_result). */
enum engine_exec_phase {
	ENGINE_EXEC_CREATE, /* it never ran */
	ENGINE_EXEC_STREAM, /* its output stream broke */
	ENGINE_EXEC_INSPECT /* it ran, its exit code is unknown */
};

struct engine_exec_result {
	long exit_code; /* -1 if unknown */
	const char *error; /* NULL, or why (see phase) */
	enum engine_exec_phase phase;
	/* The command's own usage, where the runner measures it (the
	 * sandbox's agent does; an engine's exec does not). */
	int usage;
	double cpu_ms; /* user and system, the command and its children */
	long long max_rss_bytes;
};

/*
 * An exec's callbacks (arg: engine_exec_new's).  Any but done may be
 * NULL.  From any of them the exec may be written to, paused or
 * cancelled.
 */
struct engine_exec_cbs {
	/* It exists and its stream starts now. */
	void (*started)(void *);
	/* Its output, demultiplexed; NULL: discarded (then the run is
	 * bounded in time as a plain call is). */
	engine_output_cb output;
	/* This much of its input left for the runtime. */
	void (*sent)(size_t, void *);
	/*
	 * Its stream ended, with an error or NULL: return 1 to read its
	 * exit code, 0 to be done now (with that error, if any).  NULL:
	 * the exit code is read unless the stream broke.
	 */
	int (*ended)(const char *, void *);
	/* The end: the exec is freed after this returns. */
	void (*done)(const struct engine_exec_result *, void *);
};

struct engine *engine_new(struct event_base *, const char *);
struct engine *engine_new_tls(struct event_base *, const char *, const char *);
void engine_free(struct engine *);
int engine_supports(const struct engine *, int);
void engine_set_dir(struct engine *, const char *);
const char *engine_name(const struct engine *);
const char *engine_api_version(const struct engine *);
int engine_global_init(const char *);
void engine_global_cleanup(void);

/* Abandon an operation: its callback is not called.  Not from it. */
void engine_req_cancel(struct engine_req *);

struct engine_req *engine_ping(struct engine *, engine_done_cb, void *);
struct engine_req *engine_container_create(
    struct engine *, const struct engine_spec *, engine_done_cb, void *);
struct engine_req *engine_container_start(
    struct engine *, const char *, engine_done_cb, void *);
struct engine_req *engine_container_stop(
    struct engine *, const char *, int, engine_done_cb, void *);
struct engine_req *engine_container_remove(
    struct engine *, const char *, engine_done_cb, void *);
struct engine_req *engine_container_inspect(
    struct engine *, const char *, engine_done_cb, void *);
struct engine_req *engine_container_stats(
    struct engine *, const char *, engine_done_cb, void *);
struct engine_req *engine_container_list(
    struct engine *, const char *, engine_done_cb, void *);
struct engine_req *engine_container_update_pids(
    struct engine *, const char *, long long, engine_done_cb, void *);
/* Limits of a running container; 0 leaves one as it is. */
struct engine_limits {
	long long memory_bytes; /* and as much memory+swap */
	double cpus;
	long long pids;
};
struct engine_req *engine_container_update(struct engine *, const char *,
    const struct engine_limits *, engine_done_cb, void *);
struct engine_req *engine_container_rename(
    struct engine *, const char *, const char *, engine_done_cb, void *);
struct engine_req *engine_container_pause(
    struct engine *, const char *, engine_done_cb, void *);
struct engine_req *engine_container_unpause(
    struct engine *, const char *, engine_done_cb, void *);
struct engine_req *engine_container_logs(
    struct engine *, const char *, engine_output_cb, engine_done_cb, void *);
struct engine_req *engine_container_events(struct engine *, const char *,
    const char *const *, void (*)(const char *, void *), engine_done_cb,
    void *);
struct engine_req *engine_image_inspect(
    struct engine *, const char *, engine_done_cb, void *);
struct engine_req *engine_image_pull(
    struct engine *, const char *, engine_done_cb, void *);

/* runtime.c: how an OCI runtime counts a container's limits */
int engine_runtime_gvisor(const char *);
long long engine_runtime_pids(const char *, long long);

/* engine-exec.c: a command's run, create to exit code, with its streams. */
struct engine_exec *engine_exec_new(struct engine *, const char *,
    const struct engine_exec_spec *, const struct engine_exec_cbs *, void *);
void engine_exec_write(struct engine_exec *, const void *, size_t);
void engine_exec_close_write(struct engine_exec *);
void engine_exec_pause(struct engine_exec *, int);
void engine_exec_close(struct engine_exec *);
void engine_exec_cancel(struct engine_exec *);

#endif
