/*
 * The wire protocol between the supervisor and its workers.
 *
 * Both sides speak it over the same channel (chan.c: frames read on the
 * event loop and handed over one by one, the end reported once).
 *
 * Every message is one frame: a fixed 16-byte header followed by `len`
 * payload bytes.  All header fields are big-endian.  Nothing outside this
 * header defines a wire format; bump PROTO_VERSION if any of this changes.
 *
 *	uint16 type	message type, below (ranges by family)
 *	uint16 flags	per-type flags
 *	uint32 len	payload length, never above PROTO_MAX_PAYLOAD
 *	uint32 stream	stream id (0 when the message is not about a stream)
 *	uint32 reqid	request id chosen by the supervisor (0: none)
 *
 * Calls carry JSON objects (json-c); stream data carries raw bytes.
 *
 * Backpressure: each direction of a stream starts with PROTO_INITIAL_CREDIT
 * bytes of credit.  A sender may send that many bytes of PROTO_DATA and
 * must then wait until the receiver returns credit with PROTO_CREDIT (the
 * worker pauses its curl transfer meanwhile).  Output flows worker to
 * supervisor; a command's standard input, when streamed, the other way.
 */
#ifndef PROTO_H
#define PROTO_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

struct evbuffer;

#define PROTO_VERSION 3
#define PROTO_HDR_LEN 16
#define PROTO_MAX_PAYLOAD (1024 * 1024)
#define PROTO_INITIAL_CREDIT (256 * 1024)
/* Largest DATA frame a worker sends; keeps frames interleavable. */
#define PROTO_DATA_CHUNK (32 * 1024)

enum proto_type {
	/* Control, 1-99. */
	PROTO_HELLO = 1, /* worker -> sup: JSON {pid, container_id, version}:
	                    version is PROTO_VERSION; the supervisor drops a
	                    worker that speaks another */
	PROTO_SHUTDOWN = 2, /* sup -> worker: empty, finish and exit */
	PROTO_NOTIFY = 3, /* worker -> sup: JSON {event}: "logs" (news),
	                     "agent" (ready: whether the sandbox's agent
	                     takes commands now),
	                     "gone" (the container died: why, and
	                     oom_killed: true when out of memory),
	                     "egress" (a connection of the proxy ended:
	                     below, "egress") */

	/* Calls, 100-199; reqid names the call. */
	PROTO_CALL = 100, /* sup -> worker: JSON {op, ...} */
	PROTO_RESULT = 101, /* worker -> sup: JSON result of a call */
	PROTO_CANCEL = 102, /* sup -> worker: empty, kill the call */
	PROTO_SIGNAL = 103, /* sup -> worker: JSON {signal}: send it to the
	                       call's process group and everything with its
	                       token (SIGHUP, SIGINT, SIGTERM or SIGKILL); the
	                       call is not marked cancelled */

	/* Streams, 200-299; stream names the stream, reqid its call. */
	PROTO_DATA = 200, /* either way: raw bytes, flags say which */
	PROTO_CREDIT = 201, /* either way: JSON {bytes} more may flow */
};

/* PROTO_DATA flags. */
#define PROTO_F_STDOUT 0x1
#define PROTO_F_STDERR 0x2
#define PROTO_F_STDIN 0x4
#define PROTO_F_EOF 0x8 /* the last frame of standard input */
#define PROTO_F_IMAGE 0x10 /* a code call's pictures, the result's images */

/*
 * PROTO_CALL operations (the "op" member) and their members:
 *
 *	"exec"	command (string), workdir, env (object), stdin (string),
 *		stdin_stream (bool: standard input follows as PROTO_DATA
 *		with PROTO_F_STDIN, the last frame flagged PROTO_F_EOF),
 *		timeout_ms (int, 0: none), output_cap (int, bytes of stdout
 *		and stderr together before the command is killed; 0: none),
 *		token (string: marks the command's processes for a kill),
 *		log_stdout (bool, default true; false: standard output is
 *		data, such as a tar stream, and only its size goes to the
 *		activity log), log_as (string: what the activity log shows
 *		instead of the command, which is the server's own helper
 *		script; "read_file /app/x"), probe (bool, default false;
 *		true: run as the worker's probe user, whom sandbox code
 *		cannot signal nor write into the output of, with a fixed
 *		PATH; for the server's read-only probes).
 *		Output flows as PROTO_DATA on stream == reqid.
 *		Result: exit_code (int, -1 when unknown), signal (int),
 *		timed_out, truncated, oom_killed, cancelled (bool),
 *		duration_ms, stdout_bytes, stderr_bytes (int),
 *		cpu_time_ms (number), memory_peak_bytes (int) of the sandbox
 *		during the run, when known, command_cpu_ms (number) and
 *		command_max_rss_bytes (int) of the command itself and its
 *		children, when the agent ran it; agent (bool: it ran
 *		through the sandbox's agent), agent_note (string: why it
 *		did not, the agent being on),
 *		error (string, only when the exec could not run at all).
 *	"kill"	tokens (array of strings): kill what carries them (the
 *		calls of a worker that died).  Result: {}.
 *	"logs"	the activity log: PROTO_DATA (stream == reqid), then the
 *		result {bytes, dropped}.
 *	"code"	language ("python", "javascript", "typescript"), code,
 *		workdir, timeout_ms, output_cap: run code in the sandbox's
 *		long-lived session of that language.  Output as for "exec";
 *		result: exit_code, error (a traceback), session_lost,
 *		timed_out, cancelled, truncated, duration_ms, stdout_bytes,
 *		stderr_bytes, cpu_time_ms, memory_peak_bytes, and
 *		dropped_stdout_bytes, dropped_stderr_bytes when the session
 *		wrote outside any call since the last result (dropped), and
 *		images: an array, one object a picture the session gave, in
 *		order: {where, mime_type, bytes, width, height} when checked
 *		and within image_cap, its bytes sent before the result as
 *		PROTO_DATA flagged PROTO_F_IMAGE (one after the other, each
 *		whole); {where, bytes, over_cap: true} (and mime_type, width,
 *		height when its head says) for one over the cap, whose bytes
 *		are not sent; {where, error} for one that did not check.
 *		The worker's --max-image-kb is image_cap.
 *	"expose" port (int, 1-65535: in the sandbox), bind (string, an IP
 *		address of the host; default 127.0.0.1), auth (string: a
 *		bearer token each connection's first request must carry in
 *		Authorization, taken out before it goes on; none: no check),
 *		host_port (int: listen on that port, as before a worker
 *		restart; default: a free one):
 *		listen on a free port of bind and relay each connection
 *		through the agent to 127.0.0.1:port in the sandbox.  Result:
 *		{port, host_port, address} or {error}.
 *	"unexpose" port (int): stop listening for it; its open connections
 *		are closed.  Result: {} or {error}.
 *	"egress" allow (array of strings: egress_pattern_parse()'s
 *		patterns, each already checked by the supervisor against the
 *		operator's --egress-allow): the sandbox's egress allowlist,
 *		in place of the one before; empty: egress off (connections
 *		open stay).  The worker's proxy listens in the sandbox (on
 *		the agent's 127.0.0.1:PROTO_EGRESS_PORT, else a free port)
 *		while the list is not empty, and the commands it runs then
 *		get HTTP_PROXY, HTTPS_PROXY, http_proxy, https_proxy,
 *		NO_PROXY, no_proxy, npm_config_proxy and
 *		npm_config_https_proxy.  Addresses are refused as
 *		egress_addr_refused() says, but for the worker's
 *		--egress-allow-address.  Result: {allow (array, as stored),
 *		proxy_port (int, 0 while the agent is not yet listening)} or
 *		{error} (the agent is off or unusable: egress needs it).
 * Results of "exec" and "code" carry egress (array) while the sandbox
 * has an allowlist or its proxy took a connection during the run: one
 * object per host, port and verdict of the proxy's connections that
 * opened while the call ran, {host, port, allowed (bool), reason
 * (string, when refused), connections, bytes_out, bytes_in (int: so
 * far)}, at most PROTO_MAX_EGRESS of them (then egress_cut: true).
 * Each connection of the proxy, once it ends, is also told as
 * PROTO_NOTIFY {event: "egress", host, port, allowed, reason,
 * bytes_out, bytes_in}: the supervisor's /metrics count them.
 *
 * Sizes: a call the supervisor cannot fit in a frame is never sent; it is
 * answered on its side with an error naming the limit (large standard
 * input goes as stdin_stream instead).  A result the worker cannot fit is
 * cut to fit and carries result_cut: true.  So every call gets exactly one
 * result.
 */
#define PROTO_OP_EXEC "exec"
#define PROTO_OP_KILL "kill"
#define PROTO_OP_LOGS "logs"
#define PROTO_OP_CODE "code"
#define PROTO_OP_EXPOSE "expose"
#define PROTO_OP_UNEXPOSE "unexpose"
#define PROTO_OP_EGRESS "egress"
/* The egress proxy's port in the sandbox, when free (squid's). */
#define PROTO_EGRESS_PORT 3128
/* Egress entries a result carries at most. */
#define PROTO_MAX_EGRESS 64

/* run.c: the "exec" and "code" calls, and their results, as structs. */
enum proto_run_kind { PROTO_RUN_EXEC, PROTO_RUN_CODE };
struct proto_run {
	enum proto_run_kind kind;
	const char *command; /* exec: the shell command; code: the code */
	size_t command_len; /* decoded: its length (NUL bytes included) */
	const char *language; /* code */
	int session; /* code: the language's long-lived session (else one) */
	const char *const *args; /* exec: $1..., NULL-terminated; NULL: none */
	const char *workdir; /* NULL: the container's */
	json_object *env; /* an object of strings; NULL: none */
	const char *stdin_text; /* NULL: none */
	size_t stdin_len; /* decoded: its length (NUL bytes included) */
	int stdin_stream;
	long long timeout_ms; /* 0: none */
	long long output_cap; /* 0: none */
	const char *token; /* exec: NULL, the worker makes one */
	const char *log_as;
	int log_stdout;
	int probe;
};
json_object *proto_run_encode(const struct proto_run *);
int proto_run_decode(
    json_object *, struct proto_run *, long long, const char **);
void proto_run_clear(struct proto_run *);
const char *proto_run_op(json_object *);
void proto_run_set_token(json_object *, const char *);

/* Which members a result has (struct proto_result's has). */
#define PROTO_R_EXIT_CODE 0x001
#define PROTO_R_DURATION 0x002
#define PROTO_R_TIMED_OUT 0x004
#define PROTO_R_CANCELLED 0x008
#define PROTO_R_OOM 0x010
#define PROTO_R_TRUNCATED 0x020
#define PROTO_R_SIGNAL 0x040
#define PROTO_R_BYTES 0x080 /* stdout_bytes and stderr_bytes */
#define PROTO_R_SESSION_LOST 0x100
#define PROTO_R_CPU 0x200
#define PROTO_R_MEMORY 0x400
#define PROTO_R_DROPPED 0x800 /* dropped_stdout_bytes, dropped_stderr_bytes */
#define PROTO_R_CUT 0x1000
#define PROTO_R_USAGE 0x2000 /* command_cpu_ms, command_max_rss_bytes */
#define PROTO_R_AGENT 0x4000
#define PROTO_R_EGRESS_CUT 0x8000
/* What every exec's and every code call's result has. */
#define PROTO_R_RUN                                                            \
	(PROTO_R_EXIT_CODE | PROTO_R_DURATION | PROTO_R_TIMED_OUT |            \
	    PROTO_R_CANCELLED | PROTO_R_TRUNCATED | PROTO_R_BYTES)
#define PROTO_R_EXEC (PROTO_R_RUN | PROTO_R_OOM | PROTO_R_SIGNAL)
#define PROTO_R_CODE (PROTO_R_RUN | PROTO_R_SESSION_LOST)
struct proto_result {
	unsigned int has;
	long long exit_code; /* -1: not known */
	long long duration_ms;
	int timed_out, cancelled, oom_killed, truncated;
	long long signal;
	long long stdout_bytes, stderr_bytes;
	int session_lost;
	double cpu_time_ms; /* of the whole sandbox while it ran */
	long long memory_peak_bytes;
	long long dropped_stdout_bytes, dropped_stderr_bytes;
	int result_cut;
	double command_cpu_ms; /* of the command and its children */
	long long command_max_rss_bytes;
	int agent; /* it ran through the sandbox's agent */
	const char *agent_note; /* why it did not, when the agent is on */
	const char *error; /* only when it could not run at all, or a
	                      code call's traceback */
	json_object *images; /* a code call's pictures (an array; borrowed) */
	json_object *egress; /* the proxy's connections (an array; borrowed) */
	int egress_cut; /* more than PROTO_MAX_EGRESS of them */
};
json_object *proto_result_encode(const struct proto_result *);
void proto_result_add(const struct proto_result *, json_object *);
void proto_result_decode(json_object *, struct proto_result *);

struct proto_hdr {
	uint16_t type;
	uint16_t flags;
	uint32_t len;
	uint32_t stream;
	uint32_t reqid;
};

struct proto_frame {
	struct proto_hdr hdr;
	unsigned char *data; /* len bytes plus a NUL, owned by the frame */
};

int proto_type_valid(unsigned int);
void proto_hdr_encode(const struct proto_hdr *, unsigned char[PROTO_HDR_LEN]);
void proto_hdr_decode(const unsigned char[PROTO_HDR_LEN], struct proto_hdr *);
int proto_read(struct evbuffer *, struct proto_frame *);
void proto_frame_free(struct proto_frame *);
int proto_write(
    struct evbuffer *, const struct proto_hdr *, const void *, size_t);
int proto_write_json(
    struct evbuffer *, uint16_t, uint32_t, uint32_t, json_object *);
json_object *proto_frame_json(const struct proto_frame *);
int proto_hello_version(const struct proto_frame *, long long *);

/* chan.c: the channel, the same on both sides. */
struct event_base;
struct proto_chan;
enum proto_chan_end {
	PROTO_CHAN_BAD, /* a frame did not parse, or its owner refused it */
	PROTO_CHAN_CLOSED, /* the peer closed it, or an error */
};
/* A frame, freed after it returns; -1 refuses it (the channel ends). */
typedef int (*proto_frame_cb)(struct proto_frame *, void *);
typedef void (*proto_lost_cb)(enum proto_chan_end, void *);
struct proto_chan *proto_chan_new(
    struct event_base *, int, proto_frame_cb, proto_lost_cb, void *);
void proto_chan_free(struct proto_chan *);
void proto_chan_hold(struct proto_chan *, int);
int proto_chan_send(struct proto_chan *, uint16_t, uint16_t, uint32_t, uint32_t,
    const void *, size_t);
int proto_chan_send_json(
    struct proto_chan *, uint16_t, uint32_t, uint32_t, json_object *);

#endif
