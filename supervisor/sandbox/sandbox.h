/*
 * The sandbox layer: the registry of sandboxes and their containers'
 * lifecycle (create, respawn, expiry, removal), the worker processes,
 * the reaper of what a dead instance left, the output spool and the
 * counters.  Above the MCP layer (a creation answers its call), below
 * what runs in sandboxes.
 */
#ifndef SANDBOX_H
#define SANDBOX_H

#include <sys/queue.h>
#include <sys/types.h>

#include <stdint.h>
#include <time.h>

#include <json-c/json.h>

struct call;
struct config;
struct engine;
struct evbuffer;
struct event;
struct session;

#define INSTANCE_LABEL "io.mcp-sandboxd.instance"
#define PID_LABEL "io.mcp-sandboxd.pid"
#define BOOT_LABEL "io.mcp-sandboxd.boot"
#define START_LABEL "io.mcp-sandboxd.start"
#define EXPIRES_LABEL "io.mcp-sandboxd.expires"
#define NAME_LABEL "io.mcp-sandboxd.name"
/*
 * "1" on every container made for the warm pool (pool.c).  Labels cannot
 * change after create, so it says how the container was made, not that
 * it is still waiting: one handed to a client keeps it (get_sandbox_status
 * says from_pool; the registry, not the label, says who owns it).
 */
#define POOL_LABEL "io.mcp-sandboxd.pool"

struct limits {
	long memory_mb;
	double cpus;
	long pids;
};

struct wproc;
struct spool_dir;
struct screate;
struct bgprocs;
struct sdestroy;

enum sandbox_state { SB_STARTING, SB_READY, SB_STOPPING };

struct sandbox {
	char *id; /* full container id */
	char *name;
	char *image;
	char *workdir;
	char *chandir; /* the agent's channel's directory on the host */
	char *runtime; /* its OCI runtime; NULL: the engine's default */
	struct engine *engine; /* where its container is (not owned) */
	struct limits lim;
	long uid; /* its own user and group (--uid-range) */
	time_t created, expires, last_used;
	/* Its engine stopped answering (engines.c): every call is refused,
	 * its worker is gone for good; since lost_at. */
	time_t lost_at;
	int lost;
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
	/* The warm pool (pool.c). */
	int pool; /* waiting in the pool: no owner, not in the registry */
	int from_pool; /* was a pool container, handed to its owner */
	int agent_ready; /* its worker says its agent takes commands */
	json_object *env; /* the owner's env {}, given to every command */
	json_object *volumes; /* its image's VOLUMEs, each a tmpfs */
	char *idem_key; /* sandbox_initialize's idempotency_key, or NULL */
	json_object *idem_args; /* and its other arguments, to match retries */
	/* Pausing when idle (--pause-after). */
	int paused; /* its container is paused (or being paused) */
	struct engine_req *pausing; /* a pause or unpause in flight */
	struct event *pause_timer;
	time_t paused_at;
	struct bgprocs *bg; /* its background processes (run/bgproc.c) */
	struct exposes *exposes; /* its exposed ports (run/expose.c) */
	int exposed; /* how many: it is not paused while it has some */
	/* Egress by allowlist (egresslist.c): its patterns in canonical
	 * form, an array of strings (owned), NULL: none, egress off; and
	 * whether its worker refused them after a restart (sent again when
	 * its agent is up). */
	json_object *egress;
	int egress_stale;
	TAILQ_ENTRY(sandbox) entry;
};
TAILQ_HEAD(sandboxes, sandbox);
extern struct sandboxes sandboxes;

/* agentfile.c */
const char *agentfile_path(void);
void agentfile_forget(void);

/* sandbox.c */
struct sandbox *sandbox_find(struct session *, const char *);
/* ... or a detached one of another session, named by its full id: taken
 * over (see sandbox_adopt()). */
struct sandbox *sandbox_claim(struct session *, const char *);
struct sandbox *sandbox_lookup(struct call *, const char *);
int sandbox_count(void);
struct sandbox *sandbox_create(struct call *, const char *, const char *,
    json_object *, const char *, const char *, const struct limits *, long);
struct sandbox *sandbox_create_cb(struct call *, const char *, const char *,
    json_object *, const char *, const char *, const struct limits *, long,
    void (*)(struct call *, struct sandbox *, const char *, void *), void *);
/* Where a new sandbox runs (sandbox_create_at()); NULL fields: anywhere. */
struct sandbox_where {
	const char *engine; /* an --engine URL; NULL: placement picks */
	const char *runtime; /* an OCI runtime; NULL: --runtime's */
};
struct sandbox *sandbox_create_at(struct call *, const char *, const char *,
    json_object *, const char *, const char *, const struct sandbox_where *,
    const struct limits *, long,
    void (*)(struct call *, struct sandbox *, const char *, void *), void *);
const char *sandbox_runtime_name(const struct sandbox *);
struct sandbox *sandbox_ref(struct sandbox *);
void sandbox_unref(struct sandbox *);
void sandbox_destroy(struct sandbox *, void (*)(void *, const char *), void *);
void sandbox_destroy_all(void (*)(void));
void sandbox_gone(struct sandbox *, const char *);
void sandbox_lost_free(void);
void sandbox_engine_lost(struct engine *);
void sandbox_lost_text(const struct sandbox *, char *, size_t);
void sandbox_touch(struct sandbox *);
time_t sandbox_deadline(const struct sandbox *, int *);
void sandbox_destroy_owned(struct session *, void (*)(void *), void *);
json_object *sandbox_limits_json(const struct sandbox *);
json_object *sandbox_result(const struct sandbox *);
int sandbox_join(struct sandbox *, struct call *);
struct sandbox *sandbox_find_key(struct session *, const char *);
struct sandbox *sandbox_create_pool(const char *,
    void (*)(struct call *, struct sandbox *, const char *, void *), void *);

/* egresslist.c: each sandbox's egress allowlist */
#define EGRESSLIST_MAX 32 /* patterns of one sandbox's list */
/* The worker took the list (why NULL), or not (why says it). */
typedef void (*egresslist_cb)(
    struct sandbox *, json_object *, const char *, void *);
json_object *egresslist_check(const struct config *, json_object *, char **);
void egresslist_text(json_object *, char *, size_t);
void egresslist_printable(const char *, char *, size_t);
void egresslist_send(struct sandbox *, json_object *, egresslist_cb, void *);
void egresslist_respawned(struct sandbox *);
void egresslist_agent_ready(struct sandbox *);
void egresslist_notify(struct sandbox *, json_object *);

/* engines.c: the engines sandboxes are placed on, their health */
int engines_open(void);
void engines_close(void);
void engines_start(void);
void engines_add(struct engine *, const char *, long, long);
int engines_multi(void);
int engines_n(void);
struct engine *engines_nth(int);
const char *engines_url(const struct engine *);
const char *engines_tls(const struct engine *);
int engines_is_down(const struct engine *);
time_t engines_down_since(const struct engine *);
int engines_checking(const struct engine *);
int engines_usable(const struct engine *);
struct engine *engines_place(const char *, long, char *, size_t);
void engines_count_lost(const struct engine *);
void engines_count_reaped(const struct engine *);
void engines_suspect(const struct engine *);
int engines_drain(const char *, int);
json_object *engines_json(void);
void engines_prometheus(struct evbuffer *);

/* pool.c: the warm pool */
#define POOL_WORKDIR "/app" /* a pool container's: the default */
#define POOL_MAX_AGE 1800 /* seconds a container waits before a new one */
struct sandboxes *pool_list(void);
void pool_start(void);
void pool_stop(void);
void pool_free(void);
int pool_count(void);
struct sandbox *pool_take(
    const char *, const char *, const char *, const char *, long);
void pool_removed(struct sandbox *);
void pool_lost(struct sandbox *, const char *);
void pool_make_room(void);
struct sandbox *pool_find(const char *);
json_object *pool_stats_json(void);

/* pause.c: idle sandboxes paused (--pause-after), resumed on use */
void sandbox_pause_arm(struct sandbox *);
void sandbox_pause_stop(struct sandbox *);
void sandbox_resume(struct sandbox *);

/* wproc.c: the worker processes */
/* Output of a call: return 0 if taken, 1 to return credit later. */
typedef int (*wcall_data_cb)(uint16_t, const char *, size_t, void *);
typedef void (*wcall_credit_cb)(long, void *);
typedef void (*wcall_done_cb)(json_object *, void *);
int wproc_spawn(struct sandbox *, void (*)(struct sandbox *, const char *));
uint32_t wproc_call(
    struct wproc *, json_object *, wcall_data_cb, wcall_done_cb, void *);
void wproc_cancel(struct wproc *, uint32_t);
void wproc_signal(struct wproc *, uint32_t, int);
void wproc_credit(struct wproc *, uint32_t, size_t);
void wproc_send(struct wproc *, uint32_t, const void *, size_t, int);
void wproc_on_credit(struct wproc *, uint32_t, wcall_credit_cb);
void wproc_shutdown(struct wproc *);
void wproc_set_loss(struct wproc *, const char *);
void wproc_hold(struct wproc *, int);
void wproc_gate(struct wproc *, int);
int wproc_busy(struct wproc *);
pid_t wproc_pid(struct wproc *);
void wproc_reap(void);
int wproc_count(void);
void wproc_kill_all(void);
void wproc_lose(struct wproc *, const char *);

/* reaper.c */
void reaper_run(void);
void reaper_run_engine(struct engine *);
void reaper_free(void);
void reaper_sweep_own(void (*)(void));
int reaper_owner_alive(const char *, const char *, const char *);
void reaper_labels(json_object *, time_t);

/* stats.c */
#define STATS_BUCKETS 12
struct histogram {
	long long count[STATS_BUCKETS]; /* cumulative, as Prometheus has it */
	long long total;
	double sum;
};
struct stats {
	long long sandboxes_created, sandboxes_removed, sandboxes_failed;
	/* Ready sandboxes lost: their container died, or their engine. */
	long long sandboxes_lost;
	long long workers_restarted;
	long long execs_run, execs_failed, execs_timed_out, execs_cancelled;
	long long bytes_in, bytes_out;
	long long engine_errors;
	/* The warm pool: containers made for it, taken by a create, failed
	 * (a refill that could not be made, one that died waiting or while
	 * it was handed out), and sandboxes paused and resumed. */
	long long pool_created, pool_taken, pool_failed;
	long long paused, resumed;
	/* Ports of sandboxes exposed on the host (run/expose.c): listening
	 * now, and exposed (sandbox_expose_port) since the start. */
	long long ports_exposed_now, ports_exposed;
	/* The egress proxies' connections (egresslist.c), by verdict, and
	 * their bytes: out of the sandboxes, and into them. */
	long long egress_allowed, egress_refused;
	long long egress_bytes_out, egress_bytes_in;
	/* Output bytes the spools dropped (a background process's ring,
	 * past --spool-mb) or could not take (an exec's, past it). */
	long long spool_dropped, spool_refused;
	/* Pictures shown as links for --max-image-pixels; control clients
	 * dropped (idle, too slow to read, or making room); snapshots
	 * refused for the owner's share or the total (--snapshot-mb*). */
	long long pictures_over_pixels, control_dropped, snapshots_refused;
	/* Connections an exposed port refused or dropped (a bad head, no
	 * token, the head's deadline, room for another, too many). */
	long long ports_refused;
	struct histogram create_ms, exec_ms;
	long long started_ms;
};
extern struct stats stats;
void stats_init(void);
void stats_observe(struct histogram *, double);
json_object *stats_json(void);
void stats_prometheus(struct evbuffer *);
/* Set by the run layer: the bytes the snapshot store holds on the disk
 * now.  NULL: none are counted. */
extern long long (*stats_snapshot_bytes)(void);

/*
 * Set by the resources layer: a sandbox's activity log changed (the
 * worker told), or the list of sandboxes did.  NULL: nobody listens.
 */
extern void (*sandbox_logs_updated)(struct sandbox *);
/* Set by the resources layer: the output of one of a sandbox's execs
 * grew (a background process's). */
extern void (*sandbox_output_updated)(struct sandbox *, unsigned int);
/*
 * What the run layer hears of a sandbox (sandbox_listen, at start):
 * destroyed (its background processes and exposed ports end with it);
 * given a new worker after a crash (sb->worker is the new one, which knows
 * nothing of what the old one held); its worker's agent takes commands
 * (again), as its worker told.
 */
enum sandbox_event {
	SANDBOX_DESTROYED,
	SANDBOX_RESPAWNED,
	SANDBOX_AGENT_READY
};
typedef void (*sandbox_listener)(struct sandbox *, enum sandbox_event);
void sandbox_listen(sandbox_listener);
void sandbox_event(struct sandbox *, enum sandbox_event);

/* Docker's error text with host paths cut (sandbox.c). */
char *sandbox_error_text(const char *);

#endif
