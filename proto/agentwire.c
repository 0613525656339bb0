/*
 * The codec of the worker-agent protocol (agentwire.h).  Compiled into
 * the server's proto library and, with musl, into the agent: only the C
 * library.  Every length is checked before it is used, and an encoder
 * refuses what the decoder of the other end would refuse.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agentwire.h"
#include "bigendian.h"

/* EXIT: exit_code, signal, user_us, sys_us, maxrss_kb. */
#define EXIT_FIXED 32
/* A field's tag and length. */
#define FIELD_HDR 6

/* A two's complement int32 without an implementation-defined cast. */
static int32_t
get_i32(const unsigned char *p)
{
	uint32_t v = get32(p);

	if (v <= INT32_MAX)
		return (int32_t)v;
	return -(int32_t)(~v) - 1;
}

static int
type_known(unsigned int type)
{
	switch (type) {
	case AGENT_RUN:
	case AGENT_INPUT:
	case AGENT_CREDIT:
	case AGENT_KILL:
	case AGENT_SWEEP:
	case AGENT_HELLO:
	case AGENT_CHANNEL:
	case AGENT_STARTED:
	case AGENT_OUT:
	case AGENT_SENT:
	case AGENT_EXIT:
	case AGENT_SWEPT:
	case AGENT_LISTEN:
	case AGENT_DIAL:
	case AGENT_PASS:
	case AGENT_DATA:
	case AGENT_ACK:
	case AGENT_CLOSE:
	case AGENT_LISTENING:
	case AGENT_ACCEPT:
	case AGENT_OPENED:
	case AGENT_PASSED:
		return 1;
	}
	return 0;
}

static int
flags_valid(unsigned int type, unsigned int flags)
{
	switch (type) {
	case AGENT_INPUT:
	case AGENT_DATA:
		return (flags & ~(unsigned int)AGENT_F_EOF) == 0;
	case AGENT_OUT:
		return flags == AGENT_F_STDOUT || flags == AGENT_F_STDERR;
	case AGENT_HELLO:
		return (flags & ~(unsigned int)AGENT_F_CHANNEL) == 0;
	case AGENT_PASSED:
		return (flags & ~(unsigned int)AGENT_F_KEPT) == 0;
	}
	return flags == 0;
}

int
agent_type_conn(unsigned int type)
{
	switch (type) {
	case AGENT_LISTEN:
	case AGENT_DIAL:
	case AGENT_PASS:
	case AGENT_DATA:
	case AGENT_ACK:
	case AGENT_CLOSE:
	case AGENT_LISTENING:
	case AGENT_ACCEPT:
	case AGENT_OPENED:
	case AGENT_PASSED:
		return 1;
	}
	return 0;
}

size_t
agent_type_max(unsigned int type)
{
	switch (type) {
	case AGENT_RUN:
	case AGENT_SWEEP:
		return AGENT_MAX_PAYLOAD;
	case AGENT_INPUT:
	case AGENT_OUT:
	case AGENT_DATA:
		return AGENT_DATA_CHUNK;
	case AGENT_CLOSE:
		return AGENT_MAX_ERROR;
	case AGENT_LISTENING:
		return 4 + AGENT_MAX_ERROR;
	case AGENT_OPENED:
	case AGENT_PASS:
	case AGENT_PASSED:
		return 0;
	case AGENT_LISTEN:
	case AGENT_DIAL:
	case AGENT_ACK:
	case AGENT_ACCEPT:
	case AGENT_CREDIT:
	case AGENT_STARTED:
	case AGENT_SENT:
	case AGENT_SWEPT:
	case AGENT_KILL: /* empty, or a signal's number */
		return 4;
	case AGENT_HELLO:
		return 16;
	case AGENT_CHANNEL:
		return AGENT_TOKEN_MAX;
	case AGENT_EXIT:
		return EXIT_FIXED + AGENT_MAX_ERROR;
	}
	return 0; /* any unknown type */
}

void
agent_hdr_encode(const struct agent_hdr *h, unsigned char b[AGENT_HDR_LEN])
{
	put16(b, h->type);
	put16(b + 2, h->flags);
	put32(b + 4, h->len);
	put32(b + 8, h->id);
}

int
agent_hdr_decode(const unsigned char b[AGENT_HDR_LEN], struct agent_hdr *h)
{
	h->type = get16(b);
	h->flags = get16(b + 2);
	h->len = get32(b + 4);
	h->id = get32(b + 8);
	if (!type_known(h->type) || !flags_valid(h->type, h->flags)) {
		errno = EPROTO;
		return -1;
	}
	if (h->len > agent_type_max(h->type) ||
	    (h->type == AGENT_KILL && h->len != 0 && h->len != 4)) {
		errno = EMSGSIZE;
		return -1;
	}
	return 0;
}

/* A message with room for len payload bytes, its header written. */
static unsigned char *
msg_alloc(uint16_t type, uint16_t flags, uint32_t id, size_t len, size_t *lenp)
{
	struct agent_hdr h = {.type = type, .flags = flags, .id = id};
	unsigned char *m;

	if (len > agent_type_max(type) ||
	    (type == AGENT_KILL && len != 0 && len != 4)) {
		errno = EMSGSIZE;
		return NULL;
	}
	h.len = (uint32_t)len;
	if ((m = malloc(AGENT_HDR_LEN + len)) == NULL)
		return NULL;
	agent_hdr_encode(&h, m);
	*lenp = AGENT_HDR_LEN + len;
	return m;
}

unsigned char *
agent_msg_new(uint16_t type, uint16_t flags, uint32_t id, const void *payload,
    size_t len, size_t *lenp)
{
	unsigned char *m;

	if ((m = msg_alloc(type, flags, id, len, lenp)) == NULL)
		return NULL;
	if (len > 0)
		memcpy(m + AGENT_HDR_LEN, payload, len);
	return m;
}

unsigned char *
agent_msg_u32(uint16_t type, uint32_t id, uint32_t v, size_t *lenp)
{
	unsigned char b[4];

	put32(b, v);
	return agent_msg_new(type, 0, id, b, sizeof b, lenp);
}

int
agent_u32_decode(const unsigned char *p, size_t len, uint32_t *v)
{
	if (len != 4) {
		errno = EPROTO;
		return -1;
	}
	*v = get32(p);
	return 0;
}

void
agent_reader_init(struct agent_reader *r)
{
	memset(r, 0, sizeof *r);
}

void
agent_reader_clear(struct agent_reader *r)
{
	free(r->buf);
	agent_reader_init(r);
}

size_t
agent_reader_take(struct agent_reader *r, const void *p, size_t len, int *done)
{
	const unsigned char *b = p;
	size_t n, took = 0;

	*done = 0;
	if (r->bad) {
		errno = EPROTO;
		return (size_t)-1;
	}
	/* The message the last call completed is given up now. */
	if (r->buf != NULL && r->have == AGENT_HDR_LEN + (size_t)r->hdr.len) {
		free(r->buf);
		r->buf = NULL;
		r->have = 0;
	}
	/* No payload buffer yet: the header is still being read. */
	if (r->buf == NULL) {
		n = AGENT_HDR_LEN - r->have;
		if (n > len)
			n = len;
		if (n > 0)
			memcpy(r->hdrbuf + r->have, b, n);
		r->have += n;
		took = n;
		if (r->have < AGENT_HDR_LEN)
			return took;
		/* Checked (at most the type's maximum) before allocating. */
		if (agent_hdr_decode(r->hdrbuf, &r->hdr) == -1 ||
		    (r->buf = malloc((size_t)r->hdr.len + 1)) == NULL) {
			r->bad = 1;
			return (size_t)-1;
		}
	}
	n = AGENT_HDR_LEN + (size_t)r->hdr.len - r->have;
	if (n > len - took)
		n = len - took;
	if (n > 0)
		memcpy(r->buf + (r->have - AGENT_HDR_LEN), b + took, n);
	r->have += n;
	took += n;
	if (r->have == AGENT_HDR_LEN + (size_t)r->hdr.len) {
		r->buf[r->hdr.len] = '\0';
		*done = 1;
	}
	return took;
}

/* Appends one field at *pos of m (which has room for it). */
static void
field_put(
    unsigned char *m, size_t *pos, uint16_t tag, const char *s, size_t len)
{
	put16(m + *pos, tag);
	put32(m + *pos + 2, (uint32_t)len);
	if (len > 0)
		memcpy(m + *pos + FIELD_HDR, s, len);
	*pos += FIELD_HDR + len;
}

/* Whether an ENV field is "NAME=value" with a name. */
static int
env_valid(const char *s, size_t len)
{
	const char *eq = memchr(s, '=', len);

	return eq != NULL && eq != s;
}

static int
token_valid(size_t len)
{
	return len >= 1 && len <= AGENT_TOKEN_MAX;
}

unsigned char *
agent_run_encode(uint32_t id, const struct agent_run *r, size_t *lenp)
{
	unsigned char *m;
	size_t i, n = 0, need = 0, pos = AGENT_HDR_LEN, len;

	if (r->argv == NULL || r->argv[0] == NULL)
		goto bad;
	for (i = 0; r->argv[i] != NULL; i++) {
		if (++n > AGENT_MAX_FIELDS)
			goto bad;
		need += FIELD_HDR + strlen(r->argv[i]);
		if (need > AGENT_MAX_PAYLOAD)
			goto bad;
	}
	for (i = 0; r->env != NULL && r->env[i] != NULL; i++) {
		len = strlen(r->env[i]);
		if (++n > AGENT_MAX_FIELDS || !env_valid(r->env[i], len))
			goto bad;
		need += FIELD_HDR + len;
		if (need > AGENT_MAX_PAYLOAD)
			goto bad;
	}
	if (r->workdir != NULL) {
		if (*r->workdir == '\0')
			goto bad;
		need += FIELD_HDR + strlen(r->workdir);
	}
	if (r->token != NULL) {
		if (!token_valid(strnlen(r->token, AGENT_TOKEN_MAX + 1)))
			goto bad;
		need += FIELD_HDR + strlen(r->token);
	}
	if (r->has_stdin)
		need += FIELD_HDR;
	if ((m = msg_alloc(AGENT_RUN, 0, id, need, lenp)) == NULL)
		return NULL;
	for (i = 0; r->argv[i] != NULL; i++)
		field_put(
		    m, &pos, AGENT_FIELD_ARG, r->argv[i], strlen(r->argv[i]));
	for (i = 0; r->env != NULL && r->env[i] != NULL; i++)
		field_put(
		    m, &pos, AGENT_FIELD_ENV, r->env[i], strlen(r->env[i]));
	if (r->workdir != NULL)
		field_put(m, &pos, AGENT_FIELD_WORKDIR, r->workdir,
		    strlen(r->workdir));
	if (r->token != NULL)
		field_put(
		    m, &pos, AGENT_FIELD_TOKEN, r->token, strlen(r->token));
	if (r->has_stdin)
		field_put(m, &pos, AGENT_FIELD_STDIN, "", 0);
	return m;
bad:
	errno = EINVAL;
	return NULL;
}

/*
 * One field at *pos of p: its tag, its bytes and their length; -1 if it
 * does not fit in what is left or holds a NUL byte.
 */
static int
field_get(const unsigned char *p, size_t len, size_t *pos, unsigned int *tag,
    const char **s, size_t *slen)
{
	size_t n;

	if (len - *pos < FIELD_HDR)
		return -1;
	*tag = get16(p + *pos);
	n = get32(p + *pos + 2);
	if (n > len - *pos - FIELD_HDR)
		return -1;
	*s = (const char *)p + *pos + FIELD_HDR;
	*slen = n;
	if (memchr(*s, '\0', n) != NULL)
		return -1;
	*pos += FIELD_HDR + n;
	return 0;
}

/* Copies s (len bytes) to *area, NUL-terminated, and returns the copy. */
static char *
area_put(char **area, const char *s, size_t len)
{
	char *out = *area;

	if (len > 0)
		memcpy(out, s, len);
	out[len] = '\0';
	*area += len + 1;
	return out;
}

/*
 * The decoded RUN is one allocation (the two arrays, then the strings)
 * headed by argv, which agent_run_free frees.
 */
int
agent_run_decode(const unsigned char *p, size_t len, struct agent_run *r)
{
	const char *s;
	char **block, *area;
	size_t pos = 0, slen, nargs = 0, nenv = 0, iarg = 0, ienv = 0;
	unsigned int tag;
	int seen_wd = 0, seen_tok = 0, seen_in = 0;

	memset(r, 0, sizeof *r);
	if (len > AGENT_MAX_PAYLOAD)
		goto bad;
	while (pos < len) {
		if (field_get(p, len, &pos, &tag, &s, &slen) == -1)
			goto bad;
		switch (tag) {
		case AGENT_FIELD_ARG:
			nargs++;
			break;
		case AGENT_FIELD_ENV:
			if (!env_valid(s, slen))
				goto bad;
			nenv++;
			break;
		case AGENT_FIELD_WORKDIR:
			if (seen_wd++ || slen == 0)
				goto bad;
			break;
		case AGENT_FIELD_TOKEN:
			if (seen_tok++ || !token_valid(slen))
				goto bad;
			break;
		case AGENT_FIELD_STDIN:
			if (seen_in++ || slen != 0)
				goto bad;
			break;
		default:
			goto bad;
		}
		if (nargs + nenv > AGENT_MAX_FIELDS)
			goto bad;
	}
	if (nargs == 0)
		goto bad;
	/* Every string and its NUL fit in len: each field has 6 more. */
	block = malloc((nargs + nenv + 2) * sizeof *block + len);
	if (block == NULL)
		return -1;
	r->argv = block;
	r->env = block + nargs + 1;
	area = (char *)(block + nargs + nenv + 2);
	for (pos = 0; pos < len;) {
		(void)field_get(p, len, &pos, &tag, &s, &slen);
		switch (tag) {
		case AGENT_FIELD_ARG:
			r->argv[iarg++] = area_put(&area, s, slen);
			break;
		case AGENT_FIELD_ENV:
			r->env[ienv++] = area_put(&area, s, slen);
			break;
		case AGENT_FIELD_WORKDIR:
			r->workdir = area_put(&area, s, slen);
			break;
		case AGENT_FIELD_TOKEN:
			r->token = area_put(&area, s, slen);
			break;
		case AGENT_FIELD_STDIN:
			r->has_stdin = 1;
			break;
		}
	}
	r->argv[iarg] = NULL;
	r->env[ienv] = NULL;
	return 0;
bad:
	errno = EPROTO;
	return -1;
}

void
agent_run_free(struct agent_run *r)
{
	free(r->argv);
	memset(r, 0, sizeof *r);
}

unsigned char *
agent_sweep_encode(
    uint32_t id, const char *const *tokens, size_t n, size_t *lenp)
{
	unsigned char *m;
	size_t i, need = 0, pos = AGENT_HDR_LEN;

	if (n < 1 || n > AGENT_MAX_TOKENS)
		goto bad;
	for (i = 0; i < n; i++) {
		if (tokens[i] == NULL ||
		    !token_valid(strnlen(tokens[i], AGENT_TOKEN_MAX + 1)))
			goto bad;
		need += FIELD_HDR + strlen(tokens[i]);
	}
	if ((m = msg_alloc(AGENT_SWEEP, 0, id, need, lenp)) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		field_put(
		    m, &pos, AGENT_FIELD_TOKEN, tokens[i], strlen(tokens[i]));
	return m;
bad:
	errno = EINVAL;
	return NULL;
}

int
agent_sweep_decode(
    const unsigned char *p, size_t len, char **tokens, size_t max, char *buf)
{
	const char *s;
	size_t pos = 0, slen, n = 0;
	unsigned int tag;

	if (max > AGENT_MAX_TOKENS)
		max = AGENT_MAX_TOKENS;
	if (len > AGENT_MAX_PAYLOAD)
		goto bad;
	while (pos < len) {
		if (field_get(p, len, &pos, &tag, &s, &slen) == -1 ||
		    tag != AGENT_FIELD_TOKEN || !token_valid(slen) || n >= max)
			goto bad;
		tokens[n++] = area_put(&buf, s, slen);
	}
	if (n == 0)
		goto bad;
	return (int)n;
bad:
	errno = EPROTO;
	return -1;
}

unsigned char *
agent_hello_encode(const struct agent_hello *h, size_t *lenp)
{
	unsigned char *m;

	if ((m = msg_alloc(AGENT_HELLO, 0, 0, 16, lenp)) == NULL)
		return NULL;
	put32(m + AGENT_HDR_LEN, h->version);
	put32(m + AGENT_HDR_LEN + 4, h->pid);
	put32(m + AGENT_HDR_LEN + 8, h->uid);
	put32(m + AGENT_HDR_LEN + 12, h->gid);
	return m;
}

int
agent_hello_decode(const unsigned char *p, size_t len, struct agent_hello *h)
{
	if (len != 16) {
		errno = EPROTO;
		return -1;
	}
	h->version = get32(p);
	h->pid = get32(p + 4);
	h->uid = get32(p + 8);
	h->gid = get32(p + 12);
	return 0;
}

/* A why of at most AGENT_MAX_ERROR bytes after skip bytes. */
static unsigned char *
why_encode(uint16_t type, uint32_t id, const unsigned char *pre, size_t skip,
    const char *why, size_t *lenp)
{
	size_t wlen = why != NULL ? strnlen(why, AGENT_MAX_ERROR + 1) : 0;
	unsigned char *m;

	if (wlen > AGENT_MAX_ERROR)
		wlen = AGENT_MAX_ERROR; /* cut, as a why may be */
	if ((m = msg_alloc(type, 0, id, skip + wlen, lenp)) == NULL)
		return NULL;
	if (skip > 0)
		memcpy(m + AGENT_HDR_LEN, pre, skip);
	if (wlen > 0)
		memcpy(m + AGENT_HDR_LEN + skip, why, wlen);
	return m;
}

static int
why_decode(const unsigned char *p, size_t len, char *why)
{
	if (len > AGENT_MAX_ERROR || memchr(p, '\0', len) != NULL) {
		errno = EPROTO;
		return -1;
	}
	if (len > 0)
		memcpy(why, p, len);
	why[len] = '\0';
	return 0;
}

unsigned char *
agent_listening_encode(uint32_t port, const char *why, size_t *lenp)
{
	unsigned char pre[4];

	if (port > 65535) {
		errno = EINVAL;
		return NULL;
	}
	put32(pre, port);
	return why_encode(
	    AGENT_LISTENING, 0, pre, sizeof pre, port == 0 ? why : NULL, lenp);
}

int
agent_listening_decode(
    const unsigned char *p, size_t len, uint32_t *port, char *why)
{
	if (len < 4 || (*port = get32(p)) > 65535 || (*port != 0 && len != 4)) {
		errno = EPROTO;
		return -1;
	}
	return why_decode(p + 4, len - 4, why);
}

unsigned char *
agent_close_encode(uint32_t conn, const char *why, size_t *lenp)
{
	return why_encode(AGENT_CLOSE, conn, NULL, 0, why, lenp);
}

int
agent_close_decode(const unsigned char *p, size_t len, char *why)
{
	return why_decode(p, len, why);
}

unsigned char *
agent_exit_encode(uint32_t id, const struct agent_exit *e, size_t *lenp)
{
	unsigned char *m, *b;
	size_t elen = strnlen(e->error, sizeof e->error);

	if (elen > AGENT_MAX_ERROR) {
		errno = EINVAL;
		return NULL;
	}
	if ((m = msg_alloc(AGENT_EXIT, 0, id, EXIT_FIXED + elen, lenp)) == NULL)
		return NULL;
	b = m + AGENT_HDR_LEN;
	put32(b, (uint32_t)e->exit_code);
	put32(b + 4, (uint32_t)e->signal);
	put64(b + 8, e->user_us);
	put64(b + 16, e->sys_us);
	put64(b + 24, e->maxrss_kb);
	if (elen > 0)
		memcpy(b + EXIT_FIXED, e->error, elen);
	return m;
}

int
agent_exit_decode(const unsigned char *p, size_t len, struct agent_exit *e)
{
	size_t elen;

	if (len < EXIT_FIXED || len > EXIT_FIXED + AGENT_MAX_ERROR)
		goto bad;
	elen = len - EXIT_FIXED;
	if (memchr(p + EXIT_FIXED, '\0', elen) != NULL)
		goto bad;
	e->exit_code = get_i32(p);
	e->signal = get_i32(p + 4);
	e->user_us = get64(p + 8);
	e->sys_us = get64(p + 16);
	e->maxrss_kb = get64(p + 24);
	if (elen > 0)
		memcpy(e->error, p + EXIT_FIXED, elen);
	e->error[elen] = '\0';
	return 0;
bad:
	errno = EPROTO;
	return -1;
}
