/*
 * Fuzz the worker-agent codec (proto/agentwire.c): the agent reads what
 * a worker sends, and the worker what the agent, beside sandbox code,
 * sends; both through agent_reader and the decoders.
 *
 * Input: one byte choosing the piece size, then the stream.  The stream
 * is read in pieces and whole, and both readings must give the same
 * messages and fail at the same byte.  Every message's header re-encodes
 * to its bytes; every decoder runs on every payload (and on the stream
 * itself), and what decodes re-encodes to what decodes the same: RUN,
 * SWEEP, HELLO, EXIT, the uint32 payloads, LISTENING and CLOSE (the
 * connections' types reach the reader and agent_msg_new as any other).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agentwire.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define MAX_SEEN 4096

struct seen {
	struct agent_hdr hdr;
	uint64_t hash;
};

struct reading {
	struct seen msgs[MAX_SEEN];
	size_t n; /* messages, even past MAX_SEEN */
	size_t bad_at; /* the bad header's first byte, or SIZE_MAX */
};

static uint64_t
fnv(const unsigned char *p, size_t len)
{
	uint64_t h = 14695981039346656037ULL;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

static int
same_strv(char **a, char **b)
{
	size_t i;

	for (i = 0; a[i] != NULL && b[i] != NULL; i++)
		if (strcmp(a[i], b[i]) != 0)
			return 0;
	return a[i] == NULL && b[i] == NULL;
}

static int
same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) ||
	       (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void
check_run(const unsigned char *p, size_t len)
{
	struct agent_run r, again;
	unsigned char *m;
	size_t i, n = 0, mlen;

	if (agent_run_decode(p, len, &r) == -1) {
		fuzz_check(r.argv == NULL, "a refused RUN kept memory");
		return;
	}
	fuzz_check(r.argv != NULL && r.argv[0] != NULL, "a RUN without ARG");
	fuzz_check(r.env != NULL, "a RUN without its env array");
	for (i = 0; r.argv[i] != NULL; i++)
		n++;
	for (i = 0; r.env[i] != NULL; i++) {
		n++;
		fuzz_check(strchr(r.env[i], '=') != NULL && r.env[i][0] != '=',
		    "an ENV that is not NAME=value");
	}
	fuzz_check(n <= AGENT_MAX_FIELDS, "too many fields");
	fuzz_check(r.token == NULL || (strlen(r.token) >= 1 &&
	                                  strlen(r.token) <= AGENT_TOKEN_MAX),
	    "a token of a bad length");
	fuzz_check(
	    r.workdir == NULL || r.workdir[0] != '\0', "an empty WORKDIR");
	m = agent_run_encode(9, &r, &mlen);
	fuzz_check(m != NULL, "a decoded RUN does not encode");
	/* The same fields, maybe in another order: the same length. */
	fuzz_check(
	    mlen == AGENT_HDR_LEN + len, "a RUN re-encoded to another size");
	fuzz_check(agent_run_decode(
	               m + AGENT_HDR_LEN, mlen - AGENT_HDR_LEN, &again) == 0,
	    "a re-encoded RUN refused");
	fuzz_check(same_strv(r.argv, again.argv) &&
	               same_strv(r.env, again.env) &&
	               same_str(r.workdir, again.workdir) &&
	               same_str(r.token, again.token) &&
	               r.has_stdin == again.has_stdin,
	    "a RUN changed through encode and decode");
	agent_run_free(&again);
	agent_run_free(&r);
	free(m);
}

static void
check_sweep(const unsigned char *p, size_t len)
{
	char *tokens[AGENT_MAX_TOKENS], *buf = malloc(len + AGENT_MAX_TOKENS);
	unsigned char *m;
	size_t mlen;
	int n, i;

	fuzz_check(buf != NULL, "malloc");
	if ((n = agent_sweep_decode(p, len, tokens, AGENT_MAX_TOKENS, buf)) ==
	    -1) {
		free(buf);
		return;
	}
	fuzz_check(n >= 1 && n <= AGENT_MAX_TOKENS, "a count out of range");
	for (i = 0; i < n; i++)
		fuzz_check(strlen(tokens[i]) >= 1 &&
		               strlen(tokens[i]) <= AGENT_TOKEN_MAX,
		    "a token of a bad length");
	m = agent_sweep_encode(
	    3, (const char *const *)tokens, (size_t)n, &mlen);
	fuzz_check(m != NULL, "a decoded SWEEP does not encode");
	fuzz_check(mlen == AGENT_HDR_LEN + len &&
	               memcmp(m + AGENT_HDR_LEN, p, len) == 0,
	    "a SWEEP re-encoded to other bytes");
	free(m);
	free(buf);
}

static void
check_fixed(const unsigned char *p, size_t len)
{
	struct agent_hello h;
	struct agent_exit e;
	unsigned char *m;
	size_t mlen;
	uint32_t v;

	if (agent_u32_decode(p, len, &v) == 0) {
		m = agent_msg_u32(AGENT_SENT, 1, v, &mlen);
		fuzz_check(m != NULL && mlen == AGENT_HDR_LEN + 4 &&
		               memcmp(m + AGENT_HDR_LEN, p, 4) == 0,
		    "a uint32 re-encoded to other bytes");
		free(m);
	}
	if (agent_hello_decode(p, len, &h) == 0) {
		m = agent_hello_encode(&h, &mlen);
		fuzz_check(m != NULL && mlen == AGENT_HDR_LEN + 16 &&
		               memcmp(m + AGENT_HDR_LEN, p, 16) == 0,
		    "a HELLO re-encoded to other bytes");
		free(m);
	}
	if (agent_exit_decode(p, len, &e) == 0) {
		fuzz_check(strlen(e.error) == len - 32, "an EXIT's error cut");
		m = agent_exit_encode(1, &e, &mlen);
		fuzz_check(m != NULL && mlen == AGENT_HDR_LEN + len &&
		               memcmp(m + AGENT_HDR_LEN, p, len) == 0,
		    "an EXIT re-encoded to other bytes");
		free(m);
	}
}

/* LISTENING and CLOSE: a port and a why, or a why alone. */
static void
check_whys(const unsigned char *p, size_t len)
{
	char why[AGENT_MAX_ERROR + 1];
	unsigned char *m;
	uint32_t port;
	size_t mlen;

	if (agent_listening_decode(p, len, &port, why) == 0) {
		fuzz_check(port <= 65535, "a LISTENING port above 65535");
		fuzz_check(port == 0 || (len == 4 && why[0] == '\0'),
		    "a LISTENING with a port and a why");
		fuzz_check(strlen(why) == len - 4, "a LISTENING's why cut");
		m = agent_listening_encode(port, why, &mlen);
		fuzz_check(m != NULL && mlen == AGENT_HDR_LEN + len &&
		               memcmp(m + AGENT_HDR_LEN, p, len) == 0,
		    "a LISTENING re-encoded to other bytes");
		free(m);
	}
	if (agent_close_decode(p, len, why) == 0) {
		fuzz_check(strlen(why) == len, "a CLOSE's why cut");
		m = agent_close_encode(AGENT_CONN_AGENT | 1, why, &mlen);
		fuzz_check(m != NULL && mlen == AGENT_HDR_LEN + len &&
		               memcmp(m + AGENT_HDR_LEN, p, len) == 0,
		    "a CLOSE re-encoded to other bytes");
		free(m);
	}
}

/* Every decoder on one payload. */
static void
check_payload(const unsigned char *p, size_t len)
{
	check_run(p, len);
	check_sweep(p, len);
	check_fixed(p, len);
	check_whys(p, len);
}

static void
check_msg(const struct agent_reader *r, struct reading *rd)
{
	unsigned char b[AGENT_HDR_LEN], *m;
	size_t mlen;

	fuzz_check(r->hdr.len <= agent_type_max(r->hdr.type),
	    "a message above its type's maximum");
	fuzz_check(r->buf != NULL && r->buf[r->hdr.len] == '\0',
	    "a payload not NUL-terminated");
	agent_hdr_encode(&r->hdr, b);
	fuzz_check(memcmp(b, r->hdrbuf, sizeof b) == 0,
	    "a header re-encoded to other bytes");
	m = agent_msg_new(
	    r->hdr.type, r->hdr.flags, r->hdr.id, r->buf, r->hdr.len, &mlen);
	fuzz_check(m != NULL && mlen == AGENT_HDR_LEN + r->hdr.len &&
	               memcmp(m, b, sizeof b) == 0,
	    "agent_msg_new refused a message read");
	free(m);
	if (rd->n < MAX_SEEN) {
		rd->msgs[rd->n].hdr = r->hdr;
		rd->msgs[rd->n].hash = fnv(r->buf, r->hdr.len);
	}
	rd->n++;
}

/* Reads data in pieces of piece bytes (check: every decoder too). */
static void
read_stream(const uint8_t *data, size_t size, size_t piece, struct reading *rd,
    int check)
{
	struct agent_reader r;
	size_t off = 0, msgend = 0, end, t;
	int done;

	agent_reader_init(&r);
	rd->n = 0;
	rd->bad_at = SIZE_MAX;
	while (off < size && rd->bad_at == SIZE_MAX) {
		end = size - off < piece ? size : off + piece;
		while (off < end) {
			t = agent_reader_take(&r, data + off, end - off, &done);
			if (t == (size_t)-1) {
				rd->bad_at = msgend;
				fuzz_check(r.bad, "a lost stream not marked");
				break;
			}
			fuzz_check(t <= end - off, "took more than given");
			fuzz_check(t > 0 || end == off, "took nothing");
			off += t;
			/* Never more than one message held. */
			fuzz_check(
			    r.have <= AGENT_HDR_LEN + (size_t)r.hdr.len ||
			        r.have <= AGENT_HDR_LEN,
			    "more than a message held");
			if (!done)
				fuzz_check(
				    off == end, "stopped before a message");
			else {
				msgend = off;
				check_msg(&r, rd);
				if (check)
					check_payload(r.buf, r.hdr.len);
			}
		}
	}
	agent_reader_clear(&r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct reading pieces, whole;
	size_t piece, i;

	if (size < 1)
		return 0;
	piece = (size_t)data[0] + 1;
	data++;
	size--;
	check_payload(data, size);
	read_stream(data, size, piece, &pieces, 1);
	read_stream(data, size, SIZE_MAX, &whole, 0);
	fuzz_check(pieces.n == whole.n, "pieces and whole differ in count");
	fuzz_check(pieces.bad_at == whole.bad_at,
	    "pieces and whole lost the stream at different headers");
	for (i = 0; i < pieces.n && i < MAX_SEEN; i++)
		fuzz_check(memcmp(&pieces.msgs[i].hdr, &whole.msgs[i].hdr,
		               sizeof pieces.msgs[i].hdr) == 0 &&
		               pieces.msgs[i].hash == whole.msgs[i].hash,
		    "pieces and whole differ in a message");
	return 0;
}
