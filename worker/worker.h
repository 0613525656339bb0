/* A worker: one process per sandbox, owning its exec sessions. */
#ifndef WORKER_H
#define WORKER_H

#include <sys/queue.h>

#include <stdint.h>

#include <json-c/json.h>

struct engine_resp;
struct config;
struct event_base;
struct proto_chan;
struct engine;
struct wexec;
struct agent;
struct agent_cmd;
struct agent_hdr;
struct engine_exec;

struct worker {
	struct event_base *base;
	struct proto_chan *chan; /* socketpair to the supervisor */
	struct engine *engine; /* the engine its container is on */
	char *container; /* full container id */
	char exec_user[48]; /* "uid:gid" of the sandbox's own user */
	const struct config *conf;
	LIST_HEAD(, wexec) execs;
	LIST_HEAD(, killer) killers;
	struct agent *agent; /* the sandbox's agent (agent.c) */
	unsigned long oom_count; /* OOM kills heard of (oom.c) */
	int quitting;
};

int worker_main(const struct config *);
int worker_send(struct worker *, uint16_t, uint16_t, uint32_t, uint32_t,
    const void *, size_t);
int worker_send_json(struct worker *, uint16_t, uint32_t, json_object *);

/* exec.c */
void exec_start(struct worker *, uint32_t, json_object *);
void exec_cancel(struct worker *, uint32_t);
void exec_signal(struct worker *, uint32_t, int);
void exec_credit(struct worker *, uint32_t, long);
void exec_stdin(struct worker *, uint32_t, uint16_t, const void *, size_t);
void exec_kill_tokens(struct worker *, uint32_t, json_object *);
void exec_abort_all(struct worker *);

/* oom.c */
struct cgroup;
void oom_seen(struct worker *, unsigned long, const char *);
int oom_ended(long);
void oom_watch(struct worker *, const struct cgroup *);
void oom_unwatch(void);

/* killer.c */
/*
 * The server's read-only probes (which interpreters an image has, a
 * project's files) run as a user of their own: not the sandbox user, so
 * that sandbox code can neither signal them nor write into their output
 * through /proc/PID/fd, and not the keep-alive's, so that a probe could
 * not touch it either.
 */
#define PROBE_USER "65532:65532"
#define EXEC_TOKEN_ENV "MCP_SANDBOXD_EXEC"
struct killer;
struct killer *killer_run(struct worker *, const char *const *, size_t,
    void (*)(void *, const char *), void *);
struct killer *killer_run_as(struct worker *, const char *, const char *const *,
    size_t, void (*)(void *, const char *), void *);
struct killer *killer_signal(struct worker *, const char *, const char *, int);
void killer_cancel(struct killer *);
void killer_abort_all(struct worker *);
int killer_token_valid(const char *);

/* run.c: a command's run, through the agent or the engine's exec. */
struct wrun {
	struct engine_exec *ex; /* the engine's, until it is done */
	struct agent_cmd *ac; /* or the agent's */
	int agent; /* the agent took it */
	char note[160]; /* else why not */
};
struct engine_exec_spec;
struct engine_exec_cbs;
void wrun_start(struct worker *, struct wrun *, const struct engine_exec_spec *,
    const char *const *, const char *, const struct engine_exec_cbs *, void *);
int wrun_active(const struct wrun *);
void wrun_ended(struct wrun *);
void wrun_write(struct wrun *, const void *, size_t);
void wrun_close_write(struct wrun *);
void wrun_pause(struct wrun *, int);
void wrun_credit(struct wrun *, long);
int wrun_kill(struct wrun *);
int wrun_signal(struct wrun *, int);
void wrun_close(struct wrun *);
void wrun_cancel(struct wrun *);

/* agent.c */
void agent_start(struct worker *);
void agent_stop(struct worker *);
void agent_input(struct worker *, const char *, size_t);
const char *agent_unusable(struct worker *, const char *);
int agent_ready(struct worker *);
unsigned int agent_pid(struct worker *);
void agent_channel_up(struct worker *);
void agent_channel_lost(struct worker *, const char *);
int agent_channel_message(
    struct worker *, const struct agent_hdr *, const unsigned char *);
struct channel *agent_channel(struct worker *);

/* channel.c: the agent's connections' channel (agentwire.h). */
struct channel;
struct channel *channel_new(struct worker *, const char *);
void channel_free(struct channel *);
const char *channel_listen(struct channel *);
void channel_close(struct channel *);
int channel_up(const struct channel *);
int channel_send(struct channel *, unsigned char *, size_t);
int channel_take_fd(struct channel *);
struct agent_cmd *agent_cmd_new(struct worker *,
    const struct engine_exec_spec *, const char *,
    const struct engine_exec_cbs *, void *);
void agent_cmd_write(struct agent_cmd *, const void *, size_t);
void agent_cmd_close_write(struct agent_cmd *);
void agent_cmd_credit(struct agent_cmd *, long);
void agent_cmd_pause(struct agent_cmd *, int);
void agent_cmd_kill(struct agent_cmd *);
void agent_cmd_signal(struct agent_cmd *, int);
void agent_cmd_stuck(struct agent_cmd *);
void agent_cmd_cancel(struct agent_cmd *);
int agent_sweep(struct worker *, const char *const *, size_t,
    void (*)(void *, const char *), void *);

int agent_send_msg(struct worker *, unsigned char *, size_t);

/* relay.c: connections through the agent (exposed ports). */
struct agent_hdr;
void relay_start(struct worker *);
void relay_stop(struct worker *);
void relay_expose(struct worker *, uint32_t, json_object *);
void relay_unexpose(struct worker *, uint32_t, json_object *);
int relay_message(struct worker *, const struct agent_hdr *,
    const unsigned char *, char *, size_t);
void relay_agent_lost(struct worker *);

/* proxy.c: the egress proxy (relay-int.h has its side of the relay). */
#define PROXY_ENV_MAX 8 /* the variables proxy_env() adds */
void proxy_start(struct worker *);
void proxy_stop(struct worker *);
void proxy_call(struct worker *, uint32_t, json_object *);
void proxy_agent_ready(struct worker *);
void proxy_agent_lost(struct worker *);
void proxy_env(char **, size_t *, json_object *);
uint64_t proxy_seq(void);
json_object *proxy_result(uint64_t, int *);

/* interp.c */
void interp_call(struct worker *, uint32_t, json_object *);
int interp_cancel(struct worker *, uint32_t);
int interp_credit(struct worker *, uint32_t, long);
void interp_abort_all(void);

/* logs.c */
void logs_start(struct worker *, size_t);
void logs_stop(void);
void logs_add(const char *, const char *, size_t);
void logs_addf(const char *, const char *, ...)
    __attribute__((format(printf, 2, 3)));
void logs_read(struct worker *, uint32_t);

/* accounting.c */
struct acct;
void acct_start(struct worker *);
void acct_stop(void);
void acct_prepare(void);
int acct_settled(void);
struct acct *acct_begin(void);
void acct_started(struct acct *);
struct proto_result;
void acct_end(struct acct *, struct proto_result *);

/* events.c */
void events_start(struct worker *);
void events_stop(struct worker *);
void events_seen(const struct engine_resp *);

#endif
