/* The worker-agent codec (proto/agentwire.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "agentwire.h"

static const unsigned int all_types[] = {AGENT_RUN, AGENT_INPUT, AGENT_CREDIT,
    AGENT_KILL, AGENT_SWEEP, AGENT_LISTEN, AGENT_DIAL, AGENT_DATA, AGENT_ACK,
    AGENT_CLOSE, AGENT_HELLO, AGENT_STARTED, AGENT_OUT, AGENT_SENT, AGENT_EXIT,
    AGENT_SWEPT, AGENT_LISTENING, AGENT_ACCEPT, AGENT_OPENED, AGENT_CHANNEL,
    AGENT_PASS, AGENT_PASSED};
#define NTYPES (sizeof all_types / sizeof all_types[0])

/* A flag each type takes (OUT needs one of its two). */
static uint16_t
good_flags(unsigned int type)
{
	return type == AGENT_OUT ? AGENT_F_STDOUT : 0;
}

static void
raw_hdr(unsigned char b[AGENT_HDR_LEN], unsigned int type, unsigned int flags,
    uint32_t len, uint32_t id)
{
	struct agent_hdr h = {.type = (uint16_t)type,
	    .flags = (uint16_t)flags,
	    .len = len,
	    .id = id};

	agent_hdr_encode(&h, b);
}

/* A field, written by hand (tag, length, bytes) at p; its size. */
static size_t
raw_field(unsigned char *p, unsigned int tag, const void *s, size_t len)
{
	p[0] = tag >> 8;
	p[1] = tag & 0xff;
	p[2] = (len >> 24) & 0xff;
	p[3] = (len >> 16) & 0xff;
	p[4] = (len >> 8) & 0xff;
	p[5] = len & 0xff;
	memcpy(p + 6, s, len);
	return 6 + len;
}

Test(agentwire, type_maxima)
{
	cr_expect_eq(agent_type_max(AGENT_RUN), AGENT_MAX_PAYLOAD);
	cr_expect_eq(agent_type_max(AGENT_SWEEP), AGENT_MAX_PAYLOAD);
	cr_expect_eq(agent_type_max(AGENT_INPUT), AGENT_DATA_CHUNK);
	cr_expect_eq(agent_type_max(AGENT_OUT), AGENT_DATA_CHUNK);
	cr_expect_eq(agent_type_max(AGENT_CREDIT), 4);
	cr_expect_eq(agent_type_max(AGENT_STARTED), 4);
	cr_expect_eq(agent_type_max(AGENT_SENT), 4);
	cr_expect_eq(agent_type_max(AGENT_SWEPT), 4);
	cr_expect_eq(agent_type_max(AGENT_HELLO), 16);
	cr_expect_eq(agent_type_max(AGENT_KILL), 4);
	cr_expect_eq(agent_type_max(AGENT_EXIT), 32 + AGENT_MAX_ERROR);
	cr_expect_eq(agent_type_max(AGENT_LISTEN), 4);
	cr_expect_eq(agent_type_max(AGENT_DIAL), 4);
	cr_expect_eq(agent_type_max(AGENT_DATA), AGENT_DATA_CHUNK);
	cr_expect_eq(agent_type_max(AGENT_ACK), 4);
	cr_expect_eq(agent_type_max(AGENT_CLOSE), AGENT_MAX_ERROR);
	cr_expect_eq(agent_type_max(AGENT_LISTENING), 4 + AGENT_MAX_ERROR);
	cr_expect_eq(agent_type_max(AGENT_ACCEPT), 4);
	cr_expect_eq(agent_type_max(AGENT_OPENED), 0);
	cr_expect_eq(agent_type_max(AGENT_PASS), 0);
	cr_expect_eq(agent_type_max(AGENT_PASSED), 0);
	cr_expect_eq(agent_type_max(0), 0);
	cr_expect_eq(agent_type_max(9), 0);
	cr_expect_eq(agent_type_max(AGENT_CHANNEL), AGENT_TOKEN_MAX);
	cr_expect_eq(agent_type_max(75), 0);
	cr_expect_eq(agent_type_max(0xffff), 0);
}

Test(agentwire, header_is_big_endian_and_round_trips)
{
	struct agent_hdr h = {.type = AGENT_OUT,
	    .flags = AGENT_F_STDERR,
	    .len = 0x0304,
	    .id = 0x05060708};
	unsigned char want[AGENT_HDR_LEN] = {
	    0, 66, 0, 2, 0, 0, 3, 4, 5, 6, 7, 8};
	unsigned char b[AGENT_HDR_LEN];
	struct agent_hdr back;

	agent_hdr_encode(&h, b);
	cr_assert_arr_eq(b, want, sizeof want);
	cr_assert_eq(agent_hdr_decode(b, &back), 0);
	cr_expect_eq(back.type, h.type);
	cr_expect_eq(back.flags, h.flags);
	cr_expect_eq(back.len, h.len);
	cr_expect_eq(back.id, h.id);
}

Test(agentwire, header_of_every_type_at_its_maximum)
{
	unsigned char b[AGENT_HDR_LEN];
	struct agent_hdr h;
	size_t i;

	for (i = 0; i < NTYPES; i++) {
		raw_hdr(b, all_types[i], good_flags(all_types[i]),
		    (uint32_t)agent_type_max(all_types[i]), 1);
		cr_expect_eq(
		    agent_hdr_decode(b, &h), 0, "type %u", all_types[i]);
		raw_hdr(b, all_types[i], good_flags(all_types[i]),
		    (uint32_t)agent_type_max(all_types[i]) + 1, 1);
		cr_expect_eq(
		    agent_hdr_decode(b, &h), -1, "type %u over", all_types[i]);
		raw_hdr(
		    b, all_types[i], good_flags(all_types[i]), 0xffffffff, 1);
		cr_expect_eq(agent_hdr_decode(b, &h), -1);
	}
}

/* The connections' messages, which take the agent's channel. */
Test(agentwire, connection_types_are_the_channels)
{
	static const unsigned int conn[] = {AGENT_LISTEN, AGENT_DIAL,
	    AGENT_DATA, AGENT_ACK, AGENT_CLOSE, AGENT_LISTENING, AGENT_ACCEPT,
	    AGENT_OPENED, AGENT_PASS, AGENT_PASSED};
	size_t i, j;
	int want;

	for (i = 0; i < NTYPES; i++) {
		for (want = 0, j = 0; j < sizeof conn / sizeof conn[0]; j++)
			want |= all_types[i] == conn[j];
		cr_expect_eq(agent_type_conn(all_types[i]), want, "type %u",
		    all_types[i]);
	}
	cr_expect_not(agent_type_conn(0));
	cr_expect_not(agent_type_conn(0xffff));
}

Test(agentwire, header_refuses_unknown_types)
{
	static const unsigned int bad[] = {
	    0, 9, 31, 35, 63, 75, 100, 0x8001, 0xffff};
	unsigned char b[AGENT_HDR_LEN];
	struct agent_hdr h;
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		raw_hdr(b, bad[i], 0, 0, 1);
		cr_expect_eq(agent_hdr_decode(b, &h), -1, "type %u", bad[i]);
	}
}

Test(agentwire, header_refuses_flags_a_type_does_not_take)
{
	unsigned char b[AGENT_HDR_LEN];
	struct agent_hdr h;
	unsigned int f;
	size_t i;

	for (i = 0; i < NTYPES; i++) {
		for (f = 0; f < 0x20; f++) {
			int ok;

			if (all_types[i] == AGENT_OUT)
				ok = f == AGENT_F_STDOUT || f == AGENT_F_STDERR;
			else if (all_types[i] == AGENT_INPUT ||
			         all_types[i] == AGENT_DATA)
				ok = f == 0 || f == AGENT_F_EOF;
			else if (all_types[i] == AGENT_PASSED)
				ok = f == 0 || f == AGENT_F_KEPT;
			else if (all_types[i] == AGENT_HELLO)
				ok = f == 0 || f == AGENT_F_CHANNEL;
			else
				ok = f == 0;
			raw_hdr(b, all_types[i], f, 0, 1);
			cr_expect_eq(agent_hdr_decode(b, &h), ok ? 0 : -1,
			    "type %u flags %#x", all_types[i], f);
		}
		raw_hdr(
		    b, all_types[i], 0x8000 | good_flags(all_types[i]), 0, 1);
		cr_expect_eq(agent_hdr_decode(b, &h), -1);
	}
}

Test(agentwire, msg_new_and_u32)
{
	unsigned char *m, big[AGENT_DATA_CHUNK + 1];
	struct agent_hdr h;
	size_t len;
	uint32_t v;

	memset(big, 'x', sizeof big);
	m = agent_msg_new(AGENT_INPUT, AGENT_F_EOF, 9, "abc", 3, &len);
	cr_assert_not_null(m);
	cr_assert_eq(len, AGENT_HDR_LEN + 3);
	cr_assert_eq(agent_hdr_decode(m, &h), 0);
	cr_expect_eq(h.type, AGENT_INPUT);
	cr_expect_eq(h.flags, AGENT_F_EOF);
	cr_expect_eq(h.id, 9);
	cr_expect_eq(h.len, 3);
	cr_expect_arr_eq(m + AGENT_HDR_LEN, "abc", 3);
	free(m);
	m = agent_msg_new(AGENT_KILL, 0, 4, NULL, 0, &len);
	cr_assert_not_null(m);
	cr_expect_eq(len, AGENT_HDR_LEN);
	free(m);
	m = agent_msg_new(AGENT_INPUT, 0, 1, big, AGENT_DATA_CHUNK, &len);
	cr_expect_not_null(m);
	free(m);
	cr_expect_null(
	    agent_msg_new(AGENT_INPUT, 0, 1, big, AGENT_DATA_CHUNK + 1, &len));
	cr_expect_null(agent_msg_new(AGENT_KILL, 0, 1, "x", 1, &len));
	cr_expect_null(agent_msg_new(AGENT_KILL, 0, 1, "xyz", 3, &len));
	/* A KILL with a signal's number: four bytes, nothing else. */
	m = agent_msg_new(AGENT_KILL, 0, 1, "\0\0\0\x0f", 4, &len);
	cr_assert_not_null(m);
	cr_expect_eq(len, AGENT_HDR_LEN + 4);
	cr_expect_eq(agent_hdr_decode(m, &h), 0);
	cr_expect_eq(h.len, 4);
	free(m);

	m = agent_msg_u32(AGENT_CREDIT, 3, 0xdeadbeef, &len);
	cr_assert_not_null(m);
	cr_assert_eq(len, AGENT_HDR_LEN + 4);
	cr_assert_eq(agent_hdr_decode(m, &h), 0);
	cr_expect_eq(h.type, AGENT_CREDIT);
	cr_expect_eq(h.id, 3);
	cr_assert_eq(agent_u32_decode(m + AGENT_HDR_LEN, h.len, &v), 0);
	cr_expect_eq(v, 0xdeadbeef);
	free(m);
	cr_expect_eq(agent_u32_decode((const unsigned char *)"abc", 3, &v), -1);
	cr_expect_eq(
	    agent_u32_decode((const unsigned char *)"abcde", 5, &v), -1);
	cr_expect_eq(agent_u32_decode((const unsigned char *)"", 0, &v), -1);
}

/* The payload of a message made by an encoder, checked against its header. */
static const unsigned char *
payload_of(const unsigned char *m, size_t len, unsigned int type, uint32_t id)
{
	struct agent_hdr h;

	cr_assert_geq(len, AGENT_HDR_LEN);
	cr_assert_eq(agent_hdr_decode(m, &h), 0);
	cr_assert_eq(h.type, type);
	cr_assert_eq(h.id, id);
	cr_assert_eq(h.len, len - AGENT_HDR_LEN);
	return m + AGENT_HDR_LEN;
}

static void
same_strv(char **a, char *const *b)
{
	size_t i;

	for (i = 0; b[i] != NULL; i++) {
		cr_assert_not_null(a[i]);
		cr_expect_str_eq(a[i], b[i]);
	}
	cr_expect_null(a[i]);
}

Test(agentwire, run_round_trip_with_every_field)
{
	char *argv[] = {"/bin/sh", "-c", "echo \"$A\"", "", NULL};
	char *env[] = {"A=one two", "EMPTY=", "X==y", NULL};
	struct agent_run in = {.argv = argv,
	    .env = env,
	    .workdir = "/app/dir",
	    .token = "0123456789abcdef0123456789abcdef0123456",
	    .has_stdin = 1};
	struct agent_run out;
	const unsigned char *p;
	unsigned char *m;
	size_t len;

	cr_assert_eq(strlen(in.token), AGENT_TOKEN_MAX);
	m = agent_run_encode(77, &in, &len);
	cr_assert_not_null(m);
	p = payload_of(m, len, AGENT_RUN, 77);
	cr_assert_eq(agent_run_decode(p, len - AGENT_HDR_LEN, &out), 0);
	same_strv(out.argv, argv);
	same_strv(out.env, env);
	cr_expect_str_eq(out.workdir, "/app/dir");
	cr_expect_str_eq(out.token, in.token);
	cr_expect_eq(out.has_stdin, 1);
	agent_run_free(&out);
	cr_expect_null(out.argv);
	free(m);
}

Test(agentwire, run_round_trip_argv_only)
{
	char *argv[] = {"true", NULL};
	struct agent_run in = {.argv = argv};
	struct agent_run out;
	unsigned char *m;
	size_t len;

	m = agent_run_encode(1, &in, &len);
	cr_assert_not_null(m);
	cr_assert_eq(len, AGENT_HDR_LEN + 6 + 4);
	cr_assert_eq(agent_run_decode(payload_of(m, len, AGENT_RUN, 1),
	                 len - AGENT_HDR_LEN, &out),
	    0);
	same_strv(out.argv, argv);
	cr_assert_not_null(out.env);
	cr_expect_null(out.env[0]);
	cr_expect_null(out.workdir);
	cr_expect_null(out.token);
	cr_expect_eq(out.has_stdin, 0);
	agent_run_free(&out);
	free(m);
}

Test(agentwire, run_encode_refuses_what_decode_would)
{
	char *argv[] = {"x", NULL}, *none[] = {NULL};
	char *noeq[] = {"NOEQUALS", NULL}, *noname[] = {"=v", NULL};
	struct agent_run r;
	size_t len;

	memset(&r, 0, sizeof r);
	cr_expect_null(agent_run_encode(1, &r, &len));
	r.argv = none;
	cr_expect_null(agent_run_encode(1, &r, &len));
	r.argv = argv;
	r.env = noeq;
	cr_expect_null(agent_run_encode(1, &r, &len));
	r.env = noname;
	cr_expect_null(agent_run_encode(1, &r, &len));
	r.env = NULL;
	r.workdir = "";
	cr_expect_null(agent_run_encode(1, &r, &len));
	r.workdir = NULL;
	r.token = "";
	cr_expect_null(agent_run_encode(1, &r, &len));
	r.token = "0123456789012345678901234567890123456789"; /* 40 */
	cr_expect_null(agent_run_encode(1, &r, &len));
}

Test(agentwire, run_encode_refuses_too_many_fields_and_too_much)
{
	char **argv = calloc(AGENT_MAX_FIELDS + 2, sizeof *argv);
	char *big = malloc(AGENT_MAX_PAYLOAD);
	struct agent_run r = {.argv = argv};
	struct agent_run out;
	unsigned char *m;
	size_t i, len;

	cr_assert_not_null(argv);
	cr_assert_not_null(big);
	for (i = 0; i < AGENT_MAX_FIELDS; i++)
		argv[i] = "";
	m = agent_run_encode(1, &r, &len);
	cr_assert_not_null(m, "AGENT_MAX_FIELDS arguments fit");
	cr_expect_eq(
	    agent_run_decode(m + AGENT_HDR_LEN, len - AGENT_HDR_LEN, &out), 0);
	agent_run_free(&out);
	free(m);
	argv[AGENT_MAX_FIELDS] = "";
	cr_expect_null(agent_run_encode(1, &r, &len));

	memset(big, 'a', AGENT_MAX_PAYLOAD - 6);
	big[AGENT_MAX_PAYLOAD - 6] = '\0';
	argv[0] = big;
	argv[1] = NULL;
	m = agent_run_encode(1, &r, &len);
	cr_assert_not_null(m, "a payload of exactly the maximum");
	cr_expect_eq(len, AGENT_HDR_LEN + AGENT_MAX_PAYLOAD);
	free(m);
	big[AGENT_MAX_PAYLOAD - 6] = 'a';
	big[AGENT_MAX_PAYLOAD - 5] = '\0';
	cr_expect_null(agent_run_encode(1, &r, &len));
	free(big);
	free(argv);
}

/*
 * The payload of a RUN (tag, bytes) list, by hand, and where each field
 * ends.
 */
struct rawrun {
	unsigned char p[4096];
	size_t len;
	size_t ends[32];
	size_t nends;
};

static void
rr_add(struct rawrun *rr, unsigned int tag, const char *s, size_t len)
{
	rr->len += raw_field(rr->p + rr->len, tag, s, len);
	rr->ends[rr->nends++] = rr->len;
}

static int
run_ok(const unsigned char *p, size_t len)
{
	struct agent_run r;

	if (agent_run_decode(p, len, &r) == -1) {
		cr_expect_null(r.argv, "a refused RUN left memory");
		return 0;
	}
	agent_run_free(&r);
	return 1;
}

Test(agentwire, run_decode_refuses_every_truncation)
{
	struct rawrun rr = {.len = 0};
	size_t cut, i;
	int boundary;

	rr_add(&rr, AGENT_FIELD_ARG, "sh", 2);
	rr_add(&rr, AGENT_FIELD_ARG, "-c", 2);
	rr_add(&rr, AGENT_FIELD_ENV, "A=1", 3);
	rr_add(&rr, AGENT_FIELD_WORKDIR, "/tmp", 4);
	rr_add(&rr, AGENT_FIELD_TOKEN, "tok", 3);
	rr_add(&rr, AGENT_FIELD_STDIN, "", 0);
	cr_assert(run_ok(rr.p, rr.len));
	for (cut = 0; cut < rr.len; cut++) {
		/* A cut at a field's end is a shorter RUN (with an ARG). */
		for (boundary = 0, i = 0; i < rr.nends; i++)
			boundary |= rr.ends[i] == cut;
		cr_expect_eq(run_ok(rr.p, cut), boundary, "cut at %zu", cut);
	}
}

Test(agentwire, run_decode_refuses_a_nul_in_any_field)
{
	static const unsigned int tags[] = {AGENT_FIELD_ARG, AGENT_FIELD_ENV,
	    AGENT_FIELD_WORKDIR, AGENT_FIELD_TOKEN};
	size_t i;

	for (i = 0; i < sizeof tags / sizeof tags[0]; i++) {
		struct rawrun rr = {.len = 0};

		rr_add(&rr, AGENT_FIELD_ARG, "sh", 2);
		rr_add(&rr, tags[i], "A=\0b", 4);
		cr_expect_eq(run_ok(rr.p, rr.len), 0, "tag %u", tags[i]);
	}
}

Test(agentwire, run_decode_refuses_bad_fields)
{
	struct rawrun rr;
	char tok40[41];

	memset(tok40, 't', 40);
	tok40[40] = '\0';
#define CASE(what, ...)                                                        \
	do {                                                                   \
		memset(&rr, 0, sizeof rr);                                     \
		__VA_ARGS__;                                                   \
		cr_expect_eq(run_ok(rr.p, rr.len), 0, "%s", what);             \
	} while (0)
	CASE("no ARG", rr_add(&rr, AGENT_FIELD_ENV, "A=1", 3));
	CASE("nothing at all", (void)0);
	CASE("unknown tag 0", rr_add(&rr, AGENT_FIELD_ARG, "x", 1);
	     rr_add(&rr, 0, "x", 1));
	CASE("unknown tag 6", rr_add(&rr, AGENT_FIELD_ARG, "x", 1);
	     rr_add(&rr, 6, "x", 1));
	CASE("unknown tag 0xffff", rr_add(&rr, AGENT_FIELD_ARG, "x", 1);
	     rr_add(&rr, 0xffff, "", 0));
	CASE("ENV without =", rr_add(&rr, AGENT_FIELD_ARG, "x", 1);
	     rr_add(&rr, AGENT_FIELD_ENV, "A", 1));
	CASE("ENV without a name", rr_add(&rr, AGENT_FIELD_ARG, "x", 1);
	     rr_add(&rr, AGENT_FIELD_ENV, "=1", 2));
	CASE("empty ENV", rr_add(&rr, AGENT_FIELD_ARG, "x", 1);
	     rr_add(&rr, AGENT_FIELD_ENV, "", 0));
	CASE("two WORKDIRs", rr_add(&rr, AGENT_FIELD_ARG, "x", 1);
	     rr_add(&rr, AGENT_FIELD_WORKDIR, "/a", 2);
	     rr_add(&rr, AGENT_FIELD_WORKDIR, "/b", 2));
	CASE("empty WORKDIR", rr_add(&rr, AGENT_FIELD_ARG, "x", 1);
	     rr_add(&rr, AGENT_FIELD_WORKDIR, "", 0));
	CASE("two TOKENs", rr_add(&rr, AGENT_FIELD_ARG, "x", 1);
	     rr_add(&rr, AGENT_FIELD_TOKEN, "a", 1);
	     rr_add(&rr, AGENT_FIELD_TOKEN, "b", 1));
	CASE("empty TOKEN", rr_add(&rr, AGENT_FIELD_ARG, "x", 1);
	     rr_add(&rr, AGENT_FIELD_TOKEN, "", 0));
	CASE("TOKEN too long", rr_add(&rr, AGENT_FIELD_ARG, "x", 1);
	     rr_add(&rr, AGENT_FIELD_TOKEN, tok40, 40));
	CASE("two STDINs", rr_add(&rr, AGENT_FIELD_ARG, "x", 1);
	     rr_add(&rr, AGENT_FIELD_STDIN, "", 0);
	     rr_add(&rr, AGENT_FIELD_STDIN, "", 0));
	CASE("STDIN with bytes", rr_add(&rr, AGENT_FIELD_ARG, "x", 1);
	     rr_add(&rr, AGENT_FIELD_STDIN, "y", 1));
#undef CASE
}

Test(agentwire, run_decode_refuses_lengths_past_the_payload)
{
	static const uint32_t lens[] = {3, 4, 100, 0x7fffffff, 0xffffffff};
	unsigned char p[64];
	struct agent_run r;
	size_t i, n;

	for (i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		n = raw_field(p, AGENT_FIELD_ARG, "ab", 2);
		p[2] = lens[i] >> 24;
		p[3] = (lens[i] >> 16) & 0xff;
		p[4] = (lens[i] >> 8) & 0xff;
		p[5] = lens[i] & 0xff;
		cr_expect_eq(agent_run_decode(p, n, &r), -1, "len %u", lens[i]);
	}
	/* A payload above the maximum, even well formed. */
	cr_expect_eq(agent_run_decode(p, AGENT_MAX_PAYLOAD + 1, &r), -1);
}

Test(agentwire, run_decode_refuses_too_many_fields)
{
	size_t n = AGENT_MAX_FIELDS + 1, i, len = 0;
	unsigned char *p = malloc(n * 8 + 8);
	struct agent_run r;

	cr_assert_not_null(p);
	for (i = 0; i < n; i++)
		len += raw_field(p + len,
		    i % 2 ? AGENT_FIELD_ENV : AGENT_FIELD_ARG,
		    i % 2 ? "A=" : "", i % 2 ? 2 : 0);
	cr_expect_eq(agent_run_decode(p, len, &r), -1);
	/* One fewer: AGENT_MAX_FIELDS of ARG and ENV together. */
	len -= 6;
	cr_assert_eq(agent_run_decode(p, len, &r), 0);
	agent_run_free(&r);
	free(p);
}

Test(agentwire, sweep_round_trip)
{
	const char *one[] = {"a"};
	const char *many[AGENT_MAX_TOKENS];
	char names[AGENT_MAX_TOKENS][AGENT_TOKEN_MAX + 1];
	char *tokens[AGENT_MAX_TOKENS];
	const unsigned char *p;
	unsigned char *m;
	char *buf;
	size_t len, i;

	m = agent_sweep_encode(5, one, 1, &len);
	cr_assert_not_null(m);
	p = payload_of(m, len, AGENT_SWEEP, 5);
	buf = malloc(len + AGENT_MAX_TOKENS);
	cr_assert_eq(
	    agent_sweep_decode(p, len - AGENT_HDR_LEN, tokens, 4, buf), 1);
	cr_expect_str_eq(tokens[0], "a");
	free(buf);
	free(m);

	for (i = 0; i < AGENT_MAX_TOKENS; i++) {
		memset(names[i], 'a' + i % 26, AGENT_TOKEN_MAX);
		snprintf(names[i], sizeof names[i], "%zu-", i);
		names[i][strlen(names[i])] = 'x';
		names[i][AGENT_TOKEN_MAX] = '\0';
		many[i] = names[i];
	}
	m = agent_sweep_encode(6, many, AGENT_MAX_TOKENS, &len);
	cr_assert_not_null(m);
	p = payload_of(m, len, AGENT_SWEEP, 6);
	buf = malloc(len + AGENT_MAX_TOKENS);
	cr_assert_eq(agent_sweep_decode(
	                 p, len - AGENT_HDR_LEN, tokens, AGENT_MAX_TOKENS, buf),
	    AGENT_MAX_TOKENS);
	for (i = 0; i < AGENT_MAX_TOKENS; i++)
		cr_expect_str_eq(tokens[i], many[i]);
	/* More tokens than the caller has room for. */
	cr_expect_eq(
	    agent_sweep_decode(p, len - AGENT_HDR_LEN, tokens, 3, buf), -1);
	free(buf);
	free(m);
}

Test(agentwire, sweep_encode_refuses)
{
	const char *toks[AGENT_MAX_TOKENS + 1];
	const char *bad[] = {"ok", ""};
	const char *long1[] = {"0123456789012345678901234567890123456789"};
	const char *null1[] = {NULL};
	size_t len, i;

	for (i = 0; i <= AGENT_MAX_TOKENS; i++)
		toks[i] = "t";
	cr_expect_null(agent_sweep_encode(1, toks, 0, &len));
	cr_expect_null(agent_sweep_encode(1, toks, AGENT_MAX_TOKENS + 1, &len));
	cr_expect_null(agent_sweep_encode(1, bad, 2, &len));
	cr_expect_null(agent_sweep_encode(1, long1, 1, &len));
	cr_expect_null(agent_sweep_encode(1, null1, 1, &len));
}

static int
sweep_ok(const unsigned char *p, size_t len)
{
	char *tokens[AGENT_MAX_TOKENS];
	char *buf = malloc(len + AGENT_MAX_TOKENS + 1);
	int n;

	cr_assert_not_null(buf);
	n = agent_sweep_decode(p, len, tokens, AGENT_MAX_TOKENS, buf);
	free(buf);
	return n;
}

Test(agentwire, sweep_decode_refuses)
{
	unsigned char p[8192];
	char tok40[40];
	size_t len, cut, i;

	memset(p, 0, sizeof p);
	memset(tok40, 'k', sizeof tok40);
	cr_expect_eq(sweep_ok(p, 0), -1, "no token");
	len = raw_field(p, AGENT_FIELD_TOKEN, "abc", 3);
	len += raw_field(p + len, AGENT_FIELD_TOKEN, "de", 2);
	cr_assert_eq(sweep_ok(p, len), 2);
	for (cut = 1; cut < len; cut++)
		cr_expect_eq(
		    sweep_ok(p, cut), cut == 9 ? 1 : -1, "cut %zu", cut);
	len = raw_field(p, AGENT_FIELD_ARG, "abc", 3);
	cr_expect_eq(sweep_ok(p, len), -1, "not a TOKEN");
	len = raw_field(p, AGENT_FIELD_TOKEN, "a\0c", 3);
	cr_expect_eq(sweep_ok(p, len), -1, "a NUL");
	len = raw_field(p, AGENT_FIELD_TOKEN, "", 0);
	cr_expect_eq(sweep_ok(p, len), -1, "an empty token");
	len = raw_field(p, AGENT_FIELD_TOKEN, tok40, 40);
	cr_expect_eq(sweep_ok(p, len), -1, "a token too long");
	len = raw_field(p, AGENT_FIELD_TOKEN, tok40, 39);
	cr_expect_eq(sweep_ok(p, len), 1);
	p[5] = 40; /* the length past the payload */
	cr_expect_eq(sweep_ok(p, len), -1);
	for (len = 0, i = 0; i < AGENT_MAX_TOKENS + 1; i++)
		len += raw_field(p + len, AGENT_FIELD_TOKEN, "t", 1);
	cr_expect_eq(sweep_ok(p, len), -1, "more than AGENT_MAX_TOKENS");
	cr_expect_eq(sweep_ok(p, len - 7), AGENT_MAX_TOKENS);
}

Test(agentwire, hello_round_trip)
{
	struct agent_hello in = {.version = AGENT_VERSION,
	    .pid = 4242,
	    .uid = 0xfffffffe,
	    .gid = 1000};
	struct agent_hello out;
	unsigned char *m;
	size_t len;

	m = agent_hello_encode(&in, &len);
	cr_assert_not_null(m);
	cr_assert_eq(len, AGENT_HDR_LEN + 16);
	cr_assert_eq(
	    agent_hello_decode(payload_of(m, len, AGENT_HELLO, 0), 16, &out),
	    0);
	cr_expect_eq(out.version, in.version);
	cr_expect_eq(out.pid, in.pid);
	cr_expect_eq(out.uid, in.uid);
	cr_expect_eq(out.gid, in.gid);
	cr_expect_eq(agent_hello_decode(m + AGENT_HDR_LEN, 15, &out), -1);
	cr_expect_eq(agent_hello_decode(m + AGENT_HDR_LEN, 17, &out), -1);
	cr_expect_eq(agent_hello_decode(m + AGENT_HDR_LEN, 0, &out), -1);
	free(m);
}

Test(agentwire, exit_round_trip)
{
	struct agent_exit in, out;
	unsigned char *m;
	size_t len;

	memset(&in, 0, sizeof in);
	in.exit_code = -1;
	in.signal = 0;
	in.user_us = 0x0102030405060708ULL;
	in.sys_us = UINT64_MAX;
	in.maxrss_kb = 65536;
	memset(in.error, 'e', AGENT_MAX_ERROR);
	in.error[AGENT_MAX_ERROR] = '\0';
	m = agent_exit_encode(12, &in, &len);
	cr_assert_not_null(m);
	cr_assert_eq(len, AGENT_HDR_LEN + 32 + AGENT_MAX_ERROR);
	cr_assert_eq(agent_exit_decode(payload_of(m, len, AGENT_EXIT, 12),
	                 len - AGENT_HDR_LEN, &out),
	    0);
	cr_expect_eq(out.exit_code, -1);
	cr_expect_eq(out.signal, 0);
	cr_expect_eq(out.user_us, in.user_us);
	cr_expect_eq(out.sys_us, in.sys_us);
	cr_expect_eq(out.maxrss_kb, in.maxrss_kb);
	cr_expect_str_eq(out.error, in.error);
	free(m);

	memset(&in, 0, sizeof in);
	in.exit_code = 137;
	in.signal = 9;
	in.user_us = 1;
	m = agent_exit_encode(13, &in, &len);
	cr_assert_not_null(m);
	cr_assert_eq(len, AGENT_HDR_LEN + 32);
	memset(&out, 0xaa, sizeof out);
	cr_assert_eq(agent_exit_decode(m + AGENT_HDR_LEN, 32, &out), 0);
	cr_expect_eq(out.exit_code, 137);
	cr_expect_eq(out.signal, 9);
	cr_expect_eq(out.user_us, 1);
	cr_expect_str_eq(out.error, "");
	free(m);
}

Test(agentwire, exit_refuses)
{
	unsigned char p[32 + AGENT_MAX_ERROR + 1];
	struct agent_exit e;
	size_t len;

	memset(p, 'x', sizeof p);
	cr_expect_eq(agent_exit_decode(p, 31, &e), -1);
	cr_expect_eq(agent_exit_decode(p, 0, &e), -1);
	cr_expect_eq(agent_exit_decode(p, 32 + AGENT_MAX_ERROR + 1, &e), -1);
	cr_expect_eq(agent_exit_decode(p, 32 + AGENT_MAX_ERROR, &e), 0);
	p[40] = '\0';
	cr_expect_eq(agent_exit_decode(p, 41, &e), -1, "a NUL in the error");
	/* Bytes of the fixed part may be anything, NUL included. */
	memset(p, 0, 32);
	cr_expect_eq(agent_exit_decode(p, 32, &e), 0);

	memset(&e, 0, sizeof e);
	memset(e.error, 'e', sizeof e.error); /* no NUL within it */
	cr_expect_null(agent_exit_encode(1, &e, &len));
}

Test(agentwire, listening_round_trip)
{
	char why[AGENT_MAX_ERROR + 1], longwhy[AGENT_MAX_ERROR + 100];
	const unsigned char *p;
	unsigned char *m;
	uint32_t port;
	size_t len;

	m = agent_listening_encode(3128, NULL, &len);
	cr_assert_not_null(m);
	cr_assert_eq(len, AGENT_HDR_LEN + 4);
	p = payload_of(m, len, AGENT_LISTENING, 0);
	cr_expect_arr_eq(p, "\0\0\x0c\x38", 4);
	strcpy(why, "stale");
	cr_assert_eq(agent_listening_decode(p, 4, &port, why), 0);
	cr_expect_eq(port, 3128);
	cr_expect_str_eq(why, "");
	free(m);
	/* A port listened on carries no why, even if one is given. */
	m = agent_listening_encode(65535, "ignored", &len);
	cr_assert_not_null(m);
	cr_expect_eq(len, AGENT_HDR_LEN + 4);
	cr_assert_eq(
	    agent_listening_decode(m + AGENT_HDR_LEN, 4, &port, why), 0);
	cr_expect_eq(port, 65535);
	free(m);
	/* Port 0 and its why. */
	m = agent_listening_encode(0, "bind 127.0.0.1:0: Address in use", &len);
	cr_assert_not_null(m);
	p = payload_of(m, len, AGENT_LISTENING, 0);
	cr_assert_eq(
	    agent_listening_decode(p, len - AGENT_HDR_LEN, &port, why), 0);
	cr_expect_eq(port, 0);
	cr_expect_str_eq(why, "bind 127.0.0.1:0: Address in use");
	free(m);
	m = agent_listening_encode(0, NULL, &len);
	cr_assert_not_null(m);
	cr_expect_eq(len, AGENT_HDR_LEN + 4);
	cr_assert_eq(
	    agent_listening_decode(m + AGENT_HDR_LEN, 4, &port, why), 0);
	cr_expect_str_eq(why, "");
	free(m);
	/* A why too long is cut to the most. */
	memset(longwhy, 'w', sizeof longwhy - 1);
	longwhy[sizeof longwhy - 1] = '\0';
	m = agent_listening_encode(0, longwhy, &len);
	cr_assert_not_null(m);
	cr_assert_eq(len, AGENT_HDR_LEN + 4 + AGENT_MAX_ERROR);
	cr_assert_eq(agent_listening_decode(
	                 m + AGENT_HDR_LEN, len - AGENT_HDR_LEN, &port, why),
	    0);
	cr_expect_eq(strlen(why), AGENT_MAX_ERROR);
	free(m);
	cr_expect_null(agent_listening_encode(65536, NULL, &len));
	cr_expect_null(agent_listening_encode(0xffffffff, "x", &len));
}

Test(agentwire, listening_refuses)
{
	unsigned char p[4 + AGENT_MAX_ERROR + 1];
	char why[AGENT_MAX_ERROR + 1];
	uint32_t port;

	memset(p, 'x', sizeof p);
	memcpy(p, "\0\0\0\0", 4);
	cr_expect_eq(agent_listening_decode(p, 0, &port, why), -1);
	cr_expect_eq(agent_listening_decode(p, 3, &port, why), -1);
	cr_expect_eq(
	    agent_listening_decode(p, 4 + AGENT_MAX_ERROR, &port, why), 0);
	cr_expect_eq(
	    agent_listening_decode(p, 4 + AGENT_MAX_ERROR + 1, &port, why), -1,
	    "a why too long");
	p[6] = '\0';
	cr_expect_eq(
	    agent_listening_decode(p, 8, &port, why), -1, "a NUL in the why");
	p[6] = 'x';
	/* A port above 65535. */
	memcpy(p, "\0\x01\0\0", 4);
	cr_expect_eq(agent_listening_decode(p, 4, &port, why), -1);
	memcpy(p, "\xff\xff\xff\xff", 4);
	cr_expect_eq(agent_listening_decode(p, 4, &port, why), -1);
	/* A why with a port listened on. */
	memcpy(p, "\0\0\x1f\x90", 4);
	cr_expect_eq(agent_listening_decode(p, 4, &port, why), 0);
	cr_expect_eq(port, 8080);
	cr_expect_eq(agent_listening_decode(p, 5, &port, why), -1);
}

Test(agentwire, close_round_trip)
{
	char why[AGENT_MAX_ERROR + 1], longwhy[AGENT_MAX_ERROR + 2];
	const unsigned char *p;
	unsigned char *m;
	size_t len;

	m = agent_close_encode(
	    7, "connect 127.0.0.1:8000: Connection refused", &len);
	cr_assert_not_null(m);
	p = payload_of(m, len, AGENT_CLOSE, 7);
	cr_assert_eq(agent_close_decode(p, len - AGENT_HDR_LEN, why), 0);
	cr_expect_str_eq(why, "connect 127.0.0.1:8000: Connection refused");
	free(m);
	m = agent_close_encode(AGENT_CONN_AGENT | 5, NULL, &len);
	cr_assert_not_null(m);
	cr_expect_eq(len, AGENT_HDR_LEN);
	strcpy(why, "stale");
	cr_assert_eq(
	    agent_close_decode(
	        payload_of(m, len, AGENT_CLOSE, AGENT_CONN_AGENT | 5), 0, why),
	    0);
	cr_expect_str_eq(why, "");
	free(m);
	m = agent_close_encode(1, "", &len);
	cr_assert_not_null(m);
	cr_expect_eq(len, AGENT_HDR_LEN);
	free(m);
	memset(longwhy, 'r', sizeof longwhy - 1);
	longwhy[sizeof longwhy - 1] = '\0';
	m = agent_close_encode(1, longwhy, &len);
	cr_assert_not_null(m);
	cr_expect_eq(len, AGENT_HDR_LEN + AGENT_MAX_ERROR, "not cut");
	free(m);
}

Test(agentwire, close_refuses)
{
	unsigned char p[AGENT_MAX_ERROR + 1];
	char why[AGENT_MAX_ERROR + 1];

	memset(p, 'c', sizeof p);
	cr_expect_eq(agent_close_decode(p, AGENT_MAX_ERROR, why), 0);
	cr_expect_eq(strlen(why), AGENT_MAX_ERROR);
	cr_expect_eq(agent_close_decode(p, AGENT_MAX_ERROR + 1, why), -1);
	p[3] = '\0';
	cr_expect_eq(agent_close_decode(p, 10, why), -1, "a NUL in the why");
	cr_expect_eq(agent_close_decode(p, 3, why), 0);
	cr_expect_str_eq(why, "ccc");
}

Test(agentwire, connection_messages_and_their_lengths)
{
	unsigned char *m, big[AGENT_DATA_CHUNK + 1], b[AGENT_HDR_LEN];
	struct agent_hdr h;
	size_t len;
	uint32_t v;

	memset(big, 'd', sizeof big);
	m = agent_msg_new(AGENT_DATA, 0, 3, big, AGENT_DATA_CHUNK, &len);
	cr_assert_not_null(m);
	cr_expect_eq(len, AGENT_HDR_LEN + AGENT_DATA_CHUNK);
	free(m);
	cr_expect_null(
	    agent_msg_new(AGENT_DATA, 0, 3, big, AGENT_DATA_CHUNK + 1, &len));
	m = agent_msg_new(AGENT_DATA, AGENT_F_EOF, 3, NULL, 0, &len);
	cr_assert_not_null(m);
	cr_assert_eq(agent_hdr_decode(m, &h), 0);
	cr_expect_eq(h.flags, AGENT_F_EOF);
	cr_expect_eq(h.len, 0);
	free(m);
	m = agent_msg_new(AGENT_OPENED, 0, 3, NULL, 0, &len);
	cr_assert_not_null(m);
	cr_expect_eq(len, AGENT_HDR_LEN);
	free(m);
	cr_expect_null(agent_msg_new(AGENT_OPENED, 0, 3, "x", 1, &len));
	cr_expect_null(
	    agent_msg_new(AGENT_CLOSE, 0, 3, big, AGENT_MAX_ERROR + 1, &len));
	m = agent_msg_u32(AGENT_DIAL, 3, 8000, &len);
	cr_assert_not_null(m);
	cr_assert_eq(agent_hdr_decode(m, &h), 0);
	cr_expect_eq(h.type, AGENT_DIAL);
	cr_assert_eq(agent_u32_decode(m + AGENT_HDR_LEN, h.len, &v), 0);
	cr_expect_eq(v, 8000);
	free(m);
	/* Headers past a type's maximum, or with flags it does not take. */
	raw_hdr(b, AGENT_ACK, 0, 5, 3);
	cr_expect_eq(agent_hdr_decode(b, &h), -1);
	raw_hdr(b, AGENT_LISTEN, 0, 5, 0);
	cr_expect_eq(agent_hdr_decode(b, &h), -1);
	raw_hdr(b, AGENT_OPENED, 0, 1, 3);
	cr_expect_eq(agent_hdr_decode(b, &h), -1);
	raw_hdr(b, AGENT_LISTENING, 0, 4 + AGENT_MAX_ERROR + 1, 0);
	cr_expect_eq(agent_hdr_decode(b, &h), -1);
	raw_hdr(b, AGENT_DATA, AGENT_F_STDOUT, 1, 3);
	cr_expect_eq(agent_hdr_decode(b, &h), -1);
	raw_hdr(b, AGENT_CLOSE, AGENT_F_EOF, 0, 3);
	cr_expect_eq(agent_hdr_decode(b, &h), -1);
}

/* A stream of messages of every kind, and each message's size. */
struct stream {
	unsigned char *p;
	size_t len;
	size_t sizes[32];
	size_t n;
};

/* (len by address: it is read after m's encoder has set it.) */
static void
stream_add(struct stream *s, unsigned char *m, const size_t *lenp)
{
	size_t len = *lenp;

	cr_assert_not_null(m);
	s->p = realloc(s->p, s->len + len);
	cr_assert_not_null(s->p);
	memcpy(s->p + s->len, m, len);
	s->len += len;
	s->sizes[s->n++] = len;
	free(m);
}

static void
stream_make(struct stream *s)
{
	char *argv[] = {"cat", NULL};
	struct agent_run run = {.argv = argv, .has_stdin = 1, .token = "t"};
	struct agent_hello hello = {AGENT_VERSION, 1, 2, 3};
	struct agent_exit ex = {.exit_code = 3};
	const char *toks[] = {"t", "u"};
	unsigned char big[AGENT_DATA_CHUNK];
	size_t len;

	memset(s, 0, sizeof *s);
	memset(big, 0xa5, sizeof big);
	stream_add(s, agent_hello_encode(&hello, &len), &len);
	stream_add(s, agent_run_encode(1, &run, &len), &len);
	stream_add(s, agent_msg_u32(AGENT_STARTED, 1, 99, &len), &len);
	stream_add(
	    s, agent_msg_new(AGENT_INPUT, 0, 1, big, sizeof big, &len), &len);
	stream_add(
	    s, agent_msg_new(AGENT_INPUT, AGENT_F_EOF, 1, NULL, 0, &len), &len);
	stream_add(s, agent_msg_u32(AGENT_SENT, 1, sizeof big, &len), &len);
	stream_add(s,
	    agent_msg_new(AGENT_OUT, AGENT_F_STDOUT, 1, "hi", 2, &len), &len);
	stream_add(s, agent_msg_u32(AGENT_CREDIT, 1, 2, &len), &len);
	stream_add(s, agent_msg_new(AGENT_KILL, 0, 1, NULL, 0, &len), &len);
	stream_add(s, agent_exit_encode(1, &ex, &len), &len);
	stream_add(s, agent_sweep_encode(2, toks, 2, &len), &len);
	stream_add(s, agent_msg_u32(AGENT_SWEPT, 2, 0, &len), &len);
	stream_add(s, agent_msg_u32(AGENT_LISTEN, 0, 3128, &len), &len);
	stream_add(s, agent_listening_encode(3128, NULL, &len), &len);
	stream_add(s, agent_listening_encode(0, "bind: no", &len), &len);
	stream_add(s,
	    agent_msg_u32(AGENT_ACCEPT, AGENT_CONN_AGENT | 1, 40000, &len),
	    &len);
	stream_add(s, agent_msg_u32(AGENT_DIAL, 3, 8000, &len), &len);
	stream_add(s, agent_msg_new(AGENT_OPENED, 0, 3, NULL, 0, &len), &len);
	stream_add(
	    s, agent_msg_new(AGENT_DATA, 0, 3, big, sizeof big, &len), &len);
	stream_add(
	    s, agent_msg_new(AGENT_DATA, AGENT_F_EOF, 3, NULL, 0, &len), &len);
	stream_add(s, agent_msg_u32(AGENT_ACK, 3, sizeof big, &len), &len);
	stream_add(s, agent_close_encode(3, "reset", &len), &len);
	stream_add(
	    s, agent_close_encode(AGENT_CONN_AGENT | 1, NULL, &len), &len);
}

/* Feeds s in pieces of the sizes piece() gives; checks every message. */
static void
stream_feed(const struct stream *s, size_t (*piece)(size_t))
{
	struct agent_reader r;
	size_t off = 0, msg = 0, msgoff = 0, want, n, t;
	int done;

	agent_reader_init(&r);
	while (off < s->len) {
		n = piece(s->len - off);
		if (n > s->len - off)
			n = s->len - off;
		want = off + n;
		while (off < want) {
			t = agent_reader_take(
			    &r, s->p + off, want - off, &done);
			cr_assert_neq(t, (size_t)-1);
			cr_assert_leq(t, want - off);
			/* Never past the end of the message it reads. */
			cr_assert_leq(off + t, msgoff + s->sizes[msg]);
			off += t;
			if (!done) {
				cr_assert_eq(off, want, "took less, not done");
				continue;
			}
			cr_assert_eq(off, msgoff + s->sizes[msg]);
			cr_assert_eq(r.hdr.len, s->sizes[msg] - AGENT_HDR_LEN);
			cr_assert_arr_eq(
			    r.buf, s->p + msgoff + AGENT_HDR_LEN, r.hdr.len);
			cr_assert_eq(r.buf[r.hdr.len], '\0');
			msgoff += s->sizes[msg];
			msg++;
		}
	}
	cr_assert_eq(msg, s->n, "%zu of %zu messages", msg, s->n);
	agent_reader_clear(&r);
}

static size_t
piece_one(size_t left)
{
	(void)left;
	return 1;
}

static size_t
piece_all(size_t left)
{
	return left;
}

static size_t
piece_random(size_t left)
{
	size_t n = (size_t)rand() % (rand() % 4 == 0 ? 40 : 70000) + 1;

	return n < left ? n : left;
}

Test(agentwire, reader_takes_one_byte_at_a_time)
{
	struct stream s;

	stream_make(&s);
	stream_feed(&s, piece_one);
	free(s.p);
}

Test(agentwire, reader_takes_the_whole_stream_one_message_per_call)
{
	struct stream s;

	stream_make(&s);
	stream_feed(&s, piece_all);
	free(s.p);
}

Test(agentwire, reader_takes_random_splits)
{
	struct stream s;
	int i;

	stream_make(&s);
	srand(12345);
	for (i = 0; i < 200; i++)
		stream_feed(&s, piece_random);
	free(s.p);
}

Test(agentwire, reader_splits_at_every_boundary)
{
	struct stream s;
	struct agent_reader r;
	size_t cut, off, t;
	int done, msgs;

	stream_make(&s);
	for (cut = 0; cut <= s.len; cut++) {
		agent_reader_init(&r);
		msgs = 0;
		for (off = 0; off < cut; off += t) {
			t = agent_reader_take(&r, s.p + off, cut - off, &done);
			cr_assert_neq(t, (size_t)-1);
			msgs += done;
		}
		for (off = cut; off < s.len; off += t) {
			t = agent_reader_take(
			    &r, s.p + off, s.len - off, &done);
			cr_assert_neq(t, (size_t)-1);
			msgs += done;
		}
		cr_assert_eq((size_t)msgs, s.n, "cut at %zu", cut);
		agent_reader_clear(&r);
	}
	free(s.p);
}

Test(agentwire, reader_refuses_a_bad_header_before_allocating)
{
	struct agent_reader r;
	unsigned char b[AGENT_HDR_LEN];
	size_t i, t;
	int done;

	raw_hdr(b, AGENT_RUN, 0, 0xffffffff, 1);
	agent_reader_init(&r);
	for (i = 0; i < AGENT_HDR_LEN - 1; i++)
		cr_assert_eq(agent_reader_take(&r, b + i, 1, &done), 1);
	t = agent_reader_take(&r, b + i, 1, &done);
	cr_expect_eq(t, (size_t)-1);
	cr_expect_eq(done, 0);
	cr_expect_null(r.buf);
	cr_expect(r.bad);
	/* The stream is lost for good. */
	raw_hdr(b, AGENT_KILL, 0, 0, 1);
	cr_expect_eq(agent_reader_take(&r, b, sizeof b, &done), (size_t)-1);
	agent_reader_clear(&r);

	raw_hdr(b, 99, 0, 0, 1);
	agent_reader_init(&r);
	cr_expect_eq(agent_reader_take(&r, b, sizeof b, &done), (size_t)-1);
	agent_reader_clear(&r);
	raw_hdr(b, AGENT_OUT, 0, 1, 1);
	agent_reader_init(&r);
	cr_expect_eq(agent_reader_take(&r, b, sizeof b, &done), (size_t)-1);
	agent_reader_clear(&r);
}

Test(agentwire, reader_holds_one_message_until_the_next_call)
{
	struct agent_reader r;
	unsigned char *m1, *m2, both[64];
	size_t l1, l2, t;
	int done;

	m1 = agent_msg_u32(AGENT_CREDIT, 1, 7, &l1);
	m2 = agent_msg_new(AGENT_KILL, 0, 2, NULL, 0, &l2);
	memcpy(both, m1, l1);
	memcpy(both + l1, m2, l2);
	agent_reader_init(&r);
	t = agent_reader_take(&r, both, l1 + l2, &done);
	cr_assert_eq(t, l1);
	cr_assert(done);
	cr_expect_eq(r.hdr.type, AGENT_CREDIT);
	cr_expect_eq(r.have, l1);
	t = agent_reader_take(&r, both + l1, l2, &done);
	cr_assert_eq(t, l2);
	cr_assert(done);
	cr_expect_eq(r.hdr.type, AGENT_KILL);
	cr_expect_eq(r.hdr.id, 2);
	/* Nothing more: the last message is let go, none is done. */
	cr_expect_eq(agent_reader_take(&r, both, 0, &done), 0);
	cr_expect_eq(done, 0);
	cr_expect_null(r.buf);
	cr_expect_eq(r.have, 0);
	agent_reader_clear(&r);
	free(m1);
	free(m2);
}
