/*
 * The wire protocol between a worker and the agent in its sandbox
 * (agent/agent.c), carried on the standard input (worker to agent) and
 * standard output (agent to worker) of one long-lived exec.  The agent
 * runs as the sandbox user, beside the code it runs: everything it says
 * is untrusted, and every decoder here bounds what it reads.
 *
 * This file and agentwire.c are the only definition; both ends compile
 * the same codec (the agent with musl, static, so it uses nothing but
 * the C library: no json-c, no libevent).  Bump AGENT_VERSION if any of
 * this changes.
 *
 * Every message is a 12-byte header and `len` payload bytes, big-endian:
 *
 *	uint16 type	below
 *	uint16 flags	per type
 *	uint32 len	payload length, never above agent_type_max(type)
 *	uint32 id	the command (chosen by the worker, never 0), or 0
 *
 * Worker to agent:
 *	RUN	(id) fields: ARG (one per argv element, at least one), ENV
 *		("NAME=value", each replaces the agent's own), WORKDIR,
 *		TOKEN (marks the command's processes: its environment has
 *		MCP_SANDBOXD_EXEC=TOKEN), STDIN (empty: standard input is a
 *		socket fed by INPUT; else /dev/null).  A RUN of an id in
 *		use is refused with EXIT (error).  The command runs in a
 *		session of its own, its standard streams sockets; when its
 *		first process ends, what is left in that session is
 *		stopped, then killed (daemons that made sessions of their
 *		own go by token).
 *	INPUT	(id) standard input bytes; flag AGENT_F_EOF closes it.
 *	CREDIT	(id) uint32: that many more output bytes may be sent.
 *	KILL	(id) empty: kill the command's process group and every
 *		process carrying its token, at once.  Or uint32 signal
 *		(1-64): send that signal, once, to the group and to every
 *		process carrying the token, nothing stopped (SIGKILL
 *		there is the empty KILL).  Any other length is refused.
 *	SWEEP	(id) fields: TOKEN, one or more: kill every process that
 *		carries one of them.  Answered with SWEPT.
 *	LISTEN	(0) uint32 port: listen on 127.0.0.1:port (0: any free port;
 *		a port taken already: any free one) for the egress proxy,
 *		closing the one listened on before, if any.  Answered with
 *		LISTENING.  Each connection accepted there is an ACCEPT.
 *	DIAL	(conn) uint32 port: connect to 127.0.0.1:port in the sandbox
 *		(an exposed port).  Answered with OPENED, or CLOSE with why.
 *
 * Both ways, about a connection (conn: an id of the connections' own
 * space; DIAL's are chosen by the worker, below AGENT_CONN_AGENT, and
 * ACCEPT's by the agent, with AGENT_CONN_AGENT set):
 *	DATA	(conn) bytes read from the sender's socket, at most
 *		AGENT_DATA_CHUNK; flag AGENT_F_EOF (the payload may be
 *		empty): the sender's socket reached its end, nothing more
 *		comes (the receiver shuts its socket's writing down once
 *		what it holds is written).  Never more, in all, than the
 *		window the receiver gave: AGENT_CONN_WINDOW at the start,
 *		plus every ACK.
 *	ACK	(conn) uint32: that many DATA bytes were written to the
 *		receiver's socket; the sender may send that many more.
 *	CLOSE	(conn) the connection is gone (an error, a reset, a
 *		refusal), then its why, at most AGENT_MAX_ERROR bytes,
 *		maybe empty.  No answer; the receiver closes its socket.
 *		A connection whose both directions have sent EOF, and whose
 *		bytes are all written, is gone on both ends without one.
 * A message about a connection that is gone is late, not wrong: dropped.
 *
 * Agent to worker:
 *	HELLO	(0) uint32 version, pid, uid, gid; the first message.  Flag
 *		AGENT_F_CHANNEL: the connections' channel is up (below).
 *	STARTED	(id) uint32 pid: the command runs.
 *	OUT	(id) output bytes, flag AGENT_F_STDOUT or AGENT_F_STDERR;
 *		never more, in all, than the credit given.
 *	SENT	(id) uint32: that many input bytes reached the command.
 *	EXIT	(id) int32 exit_code (128+N when killed by signal N; -1 when
 *		it never ran), int32 signal, uint64 user_us, uint64 sys_us,
 *		uint64 maxrss_kb (the command and its waited-for children,
 *		from wait4), then the error text, if it never ran (at most
 *		AGENT_MAX_ERROR bytes).  The command's last message.
 *	SWEPT	(id) uint32: how many processes were killed.
 *	LISTENING (0) uint32 port listened on, then (when 0: it could not)
 *		why, at most AGENT_MAX_ERROR bytes.
 *	ACCEPT	(conn) uint32 the peer's port: a new connection to the
 *		proxy's port.  The agent refuses (closes) one past
 *		AGENT_MAX_CONNS at once.
 *	OPENED	(conn) empty: a DIAL connected.
        PASSED	(conn) empty: the connection's socket itself rides with
                this message (SCM_RIGHTS, in the one sendmsg that carries
                its bytes), and the agent has forgotten the connection:
                nothing more about it either way; the worker relays that
                socket itself.  Flag AGENT_F_KEPT: the agent keeps it (an
                end reached, or no channel), the connection goes on as
                DATA.  The worker sends PASS only while neither end has
                sent EOF, and nothing for the connection after it but
                ACK and CLOSE, until PASSED comes.
 *
 * The connections' channel: when the agent's environment names
 * AGENT_CHANNEL_ENV (its value a token of AGENT_TOKEN_MAX bytes at
 * most), the worker listens on the unix socket AGENT_CHANNEL_SOCK, in a
 * directory of the host bound read-only into the sandbox, and the agent
 * connects to it before its HELLO and sends CHANNEL (0) with the token
 * as its payload, its first message there.  Its HELLO then carries
 * AGENT_F_CHANNEL, and every message about connections (LISTEN, DIAL,
 * DATA, ACK, CLOSE, PASS; LISTENING, ACCEPT, OPENED, PASSED) goes that way both
 ways,
 * off the exec's stream and past the engine: the bulk of a connection
 * costs a unix socket, not the engine's attach stream.  Nothing else
 * goes there.  Without it (no socket, a runtime that cannot pass one)
 * everything stays on the exec's stream.
 *
 * Fields (RUN, SWEEP): uint16 tag, uint32 len, len bytes, one after the
 * other, filling the payload exactly; no field holds a NUL byte.
 *
 * Credit: each command starts with AGENT_INITIAL_CREDIT bytes of output
 * credit (stdout and stderr together); the agent stops reading the
 * command's pipes while it has none.  The agent holds up to
 * AGENT_INPUT_CAP bytes of a command's input that the command has not
 * taken yet; the worker never has more than that sent and not yet
 * answered by SENT.
 */
#ifndef AGENTWIRE_H
#define AGENTWIRE_H

#include <stddef.h>
#include <stdint.h>

#define AGENT_VERSION 4
#define AGENT_HDR_LEN 12
/* The largest payload of any type (a RUN: the command and its env). */
#define AGENT_MAX_PAYLOAD (1024 * 1024 + 64 * 1024)
#define AGENT_DATA_CHUNK (32 * 1024) /* OUT and INPUT payloads */
#define AGENT_INITIAL_CREDIT (256 * 1024)
#define AGENT_INPUT_CAP (1024 * 1024) /* input held for a command */
#define AGENT_MAX_ERROR 512
#define AGENT_MAX_FIELDS 8192 /* ARG and ENV of a RUN together */
#define AGENT_MAX_TOKENS 64 /* of a SWEEP */
#define AGENT_TOKEN_MAX 39
#define AGENT_CONN_WINDOW (256 * 1024) /* DATA in flight, each way */
#define AGENT_MAX_CONNS 128 /* open at once, both kinds together */
#define AGENT_CONN_AGENT 0x80000000u /* set in the ids of ACCEPTs */
/* Where the agent is in every sandbox (a read-only bind mount). */
#define AGENT_PATH "/.mcp-sandboxd-agent"
/* Its pid in the sandbox, in every command's environment ("0": none up),
 * for the scripts that stop or kill all but it (snapshot.sh, restore.sh). */
#define AGENT_PID_ENV "MCP_SANDBOXD_AGENT_PID"
/* The connections' channel: its directory in the sandbox (a read-only
 * bind mount), its socket there, and the agent's variable. */
#define AGENT_CHANNEL_DIR "/.mcp-sandboxd-channel"
#define AGENT_CHANNEL_SOCK "sock"
#define AGENT_CHANNEL_ENV "MCP_SANDBOXD_CHANNEL"

enum agent_type {
	AGENT_RUN = 1,
	AGENT_INPUT = 2,
	AGENT_CREDIT = 3,
	AGENT_KILL = 4,
	AGENT_SWEEP = 5,
	AGENT_LISTEN = 6,
	AGENT_DIAL = 7,
	AGENT_PASS = 8,

	AGENT_DATA = 32,
	AGENT_ACK = 33,
	AGENT_CLOSE = 34,

	AGENT_HELLO = 64,
	AGENT_CHANNEL = 73, /* (on the channel only, below) */
	AGENT_STARTED = 65,
	AGENT_OUT = 66,
	AGENT_SENT = 67,
	AGENT_EXIT = 68,
	AGENT_SWEPT = 69,
	AGENT_LISTENING = 70,
	AGENT_ACCEPT = 71,
	AGENT_OPENED = 72,
	AGENT_PASSED = 74,
};

#define AGENT_F_STDOUT 0x1
#define AGENT_F_STDERR 0x2
#define AGENT_F_EOF 0x4
#define AGENT_F_CHANNEL 0x8 /* HELLO: the connections' channel is up */
#define AGENT_F_KEPT 0x10 /* PASSED: no socket, the agent keeps it */

/* Whether a type is one of those about connections (the channel's). */
int agent_type_conn(unsigned int);

enum agent_field {
	AGENT_FIELD_ARG = 1,
	AGENT_FIELD_ENV = 2,
	AGENT_FIELD_WORKDIR = 3,
	AGENT_FIELD_TOKEN = 4,
	AGENT_FIELD_STDIN = 5,
};

struct agent_hdr {
	uint16_t type;
	uint16_t flags;
	uint32_t len;
	uint32_t id;
};

/* The most payload a type may carry; 0 for an unknown type. */
size_t agent_type_max(unsigned int);
void agent_hdr_encode(const struct agent_hdr *, unsigned char[AGENT_HDR_LEN]);
/* -1: unknown type, a length above its maximum, or bad flags. */
int agent_hdr_decode(const unsigned char[AGENT_HDR_LEN], struct agent_hdr *);

/*
 * A message in a new buffer (malloc), header and payload; *lenp its
 * size.  NULL if payload is above the type's maximum.
 */
unsigned char *agent_msg_new(
    uint16_t, uint16_t, uint32_t, const void *, size_t, size_t *);
/* A message whose payload is one uint32. */
unsigned char *agent_msg_u32(uint16_t, uint32_t, uint32_t, size_t *);
/* 0 and *v if the payload is exactly one uint32, else -1. */
int agent_u32_decode(const unsigned char *, size_t, uint32_t *);

/*
 * Splits a byte stream into messages, holding at most one message
 * (AGENT_HDR_LEN + its type's maximum) at a time.
 */
struct agent_reader {
	unsigned char hdrbuf[AGENT_HDR_LEN];
	struct agent_hdr hdr;
	unsigned char *buf; /* the payload, hdr.len bytes plus a NUL */
	size_t have; /* bytes of the current message read so far */
	int bad; /* a bad header was read: the stream is lost */
};
void agent_reader_init(struct agent_reader *);
void agent_reader_clear(struct agent_reader *);
/*
 * Takes bytes of p (at most len) toward the current message and returns
 * how many; when a message is whole, *done is set to 1 and hdr and buf
 * hold it until the next call.  (size_t)-1: a bad header.
 */
size_t agent_reader_take(
    struct agent_reader *, const void *, size_t, int *done);

/* RUN. */
struct agent_run {
	char **argv; /* NULL-terminated, at least one */
	char **env; /* NULL-terminated "NAME=value" */
	char *workdir; /* or NULL */
	char *token; /* or NULL */
	int has_stdin;
};
/* A whole RUN message (malloc), or NULL if it does not fit or a string
 * holds a NUL byte. */
unsigned char *agent_run_encode(uint32_t, const struct agent_run *, size_t *);
/* 0, or -1 (nothing to free) on any malformed field. */
int agent_run_decode(const unsigned char *, size_t, struct agent_run *);
void agent_run_free(struct agent_run *);

/* SWEEP. */
unsigned char *agent_sweep_encode(
    uint32_t, const char *const *, size_t, size_t *);
/* The number of tokens (1 to max) set in tokens[], NUL-terminated in
 * buf (at least len + max bytes), or -1. */
int agent_sweep_decode(
    const unsigned char *, size_t, char **, size_t, char *buf);

/* HELLO. */
struct agent_hello {
	uint32_t version, pid, uid, gid;
};
unsigned char *agent_hello_encode(const struct agent_hello *, size_t *);
int agent_hello_decode(const unsigned char *, size_t, struct agent_hello *);

/* LISTENING: *port, and why (NUL-terminated, AGENT_MAX_ERROR + 1) when
 * it is 0.  -1 unless a port (0-65535) and a why without a NUL byte. */
unsigned char *agent_listening_encode(uint32_t, const char *, size_t *);
int agent_listening_decode(
    const unsigned char *, size_t, uint32_t *, char *why);
/* CLOSE: the why is NUL-terminated (AGENT_MAX_ERROR + 1); -1 if it holds
 * a NUL byte. */
unsigned char *agent_close_encode(uint32_t, const char *, size_t *);
int agent_close_decode(const unsigned char *, size_t, char *why);

/* EXIT. */
struct agent_exit {
	int32_t exit_code;
	int32_t signal;
	uint64_t user_us, sys_us, maxrss_kb;
	char error[AGENT_MAX_ERROR + 1]; /* "" unless it never ran */
};
unsigned char *agent_exit_encode(uint32_t, const struct agent_exit *, size_t *);
/* -1 unless 32 bytes and an error of at most AGENT_MAX_ERROR without a
 * NUL byte; the error is NUL-terminated. */
int agent_exit_decode(const unsigned char *, size_t, struct agent_exit *);

#endif
