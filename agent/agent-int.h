/* What the agent's files share (agent.c, spawn.c, sweep.c, relay.c). */
#ifndef AGENT_INT_H
#define AGENT_INT_H

#include <sys/types.h>

#include <poll.h>
#include <stddef.h>

#include "agentwire.h"

/* The variable that marks a command's processes with its token. */
#define AGENT_TOKEN_VAR "MCP_SANDBOXD_EXEC"

/*
 * A started command: its pid (also its process group and session) and
 * the agent's ends of its pipes, nonblocking and close-on-exec (in is -1
 * when its standard input is /dev/null).
 */
struct spawn_child {
	pid_t pid;
	int in, out, err;
};
/*
 * Starts the command of a RUN.  0, or -1 with why in err (errlen bytes,
 * e.g. "chdir /nope: No such file or directory"): it never ran.
 */
int spawn_start(
    const struct agent_run *, struct spawn_child *, char *err, size_t errlen);

/*
 * Stops, then kills with SIGKILL, every process of the given process
 * groups (each also a session) and every one whose environment holds
 * AGENT_TOKEN_VAR=token for one of the tokens, never the agent itself.
 * Returns how many processes were killed.
 */
int sweep_kill(const pid_t *, size_t, const char *const *, size_t);
/*
 * Sends sig once to the process group (also a session) and to every
 * process with one of the tokens, stopping nothing; how many it reached.
 */
int sweep_signal(pid_t, const char *const *, size_t, int);

/* A line on standard error, which the worker may log. */
void agent_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
/*
 * A blocking write of all of p to the worker (standard output); the
 * agent ends if it is gone.
 */
void agent_send(const void *, size_t);
/* Sends a message made by the codec (NULL: the agent ends) and frees it. */
void agent_send_msg(unsigned char *, size_t);
/* Writes what agent_send() holds for the channel. */
void agent_flush(void);
/* A message (freed) on the channel with a descriptor riding along; -1
 * (and nothing sent) without a channel. */
int agent_send_fd(unsigned char *, size_t, int);

/* The most descriptors relay_poll() adds: the listener and each connection. */
#define RELAY_MAX_FDS (AGENT_MAX_CONNS + 1)
/*
 * A LISTEN, DIAL, PASS, DATA, ACK or CLOSE of the worker's; -1 if the protocol
 * does not allow it (the agent ends).
 */
int relay_dispatch(const struct agent_hdr *, const unsigned char *);
/* Fills pfd (room for RELAY_MAX_FDS) for poll(); how many it filled. */
int relay_poll(struct pollfd *);
/* Acts on what poll() said of the n descriptors of relay_poll(). */
void relay_ready(const struct pollfd *, int);
/* Closes the listener and every connection. */
void relay_close_all(void);

#endif
