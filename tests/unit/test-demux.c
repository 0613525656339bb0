/* Unit tests of the Docker stream demultiplexer (engine/demux.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "demux.h"

#define BIG 70000

/* What the callback saw, per stream. */
struct sink {
	char *out[3];
	size_t len[3], cap[3];
	int calls;
	int stop_after; /* return -1 on this call (1-based), 0: never */
};

static void
sink_init(struct sink *s, size_t cap)
{
	int i;

	memset(s, 0, sizeof *s);
	for (i = 0; i < 3; i++) {
		s->cap[i] = cap;
		s->out[i] = malloc(cap);
		cr_assert_not_null(s->out[i]);
	}
}

static void
sink_reset(struct sink *s)
{
	int i;

	for (i = 0; i < 3; i++)
		s->len[i] = 0;
	s->calls = 0;
}

static void
sink_free(struct sink *s)
{
	int i;

	for (i = 0; i < 3; i++)
		free(s->out[i]);
}

static int
collect(int stream, const char *p, size_t n, void *arg)
{
	struct sink *s = arg;

	cr_assert(stream >= 0 && stream <= 2, "stream %d", stream);
	s->calls++;
	if (s->stop_after != 0 && s->calls == s->stop_after)
		return -1;
	if (s->len[stream] + n > s->cap[stream]) {
		s->cap[stream] = (s->len[stream] + n) * 2;
		s->out[stream] = realloc(s->out[stream], s->cap[stream]);
		cr_assert_not_null(s->out[stream]);
	}
	memcpy(s->out[stream] + s->len[stream], p, n);
	s->len[stream] += n;
	return 0;
}

/* A growable byte string. */
struct bytes {
	char *p;
	size_t len, cap;
};

static void
bytes_add(struct bytes *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		cr_assert_not_null(b->p);
	}
	if (n > 0)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void
add_frame(struct bytes *wire, int stream, const void *p, uint32_t n)
{
	unsigned char h[8] = {(unsigned char)stream, 0, 0, 0,
	    (unsigned char)(n >> 24), (unsigned char)(n >> 16),
	    (unsigned char)(n >> 8), (unsigned char)n};

	bytes_add(wire, h, sizeof h);
	bytes_add(wire, p, n);
}

/* The reference stream and what must come out of it. */
struct reference {
	struct bytes wire, out, err;
};

static void
reference_build(struct reference *r)
{
	char *big;
	size_t i;

	memset(r, 0, sizeof *r);
	big = malloc(BIG);
	cr_assert_not_null(big);
	for (i = 0; i < BIG; i++)
		big[i] = (char)(i % 251); /* includes NUL and high bytes */

#define FRAME(s, p, n)                                                         \
	do {                                                                   \
		add_frame(&r->wire, s, p, (uint32_t)(n));                      \
		bytes_add(s == 1 ? &r->out : &r->err, p, n);                   \
	} while (0)
	FRAME(1, "hello, ", 7);
	FRAME(2, "warning: x\n", 11);
	FRAME(1, "", 0);
	FRAME(1, "world\n", 6);
	FRAME(1, big, BIG);
	FRAME(2, "", 0);
	FRAME(2, "E", 1);
	FRAME(1, "\0\xff\x80", 3);
	FRAME(2, big + 1000, 300);
	FRAME(2, "tail\n", 5);
	FRAME(1, "end", 3);
#undef FRAME
	free(big);
}

static void
reference_free(struct reference *r)
{
	free(r->wire.p);
	free(r->out.p);
	free(r->err.p);
}

static void
assert_output(const struct reference *r, const struct sink *s, const char *how)
{
	cr_assert_eq(s->len[1], r->out.len, "%s: stdout %zu bytes, want %zu",
	    how, s->len[1], r->out.len);
	cr_assert(memcmp(s->out[1], r->out.p, r->out.len) == 0,
	    "%s: stdout differs", how);
	cr_assert_eq(s->len[2], r->err.len, "%s: stderr %zu bytes, want %zu",
	    how, s->len[2], r->err.len);
	cr_assert(memcmp(s->out[2], r->err.p, r->err.len) == 0,
	    "%s: stderr differs", how);
	cr_assert_eq(s->len[0], 0, "%s: nothing on stdin", how);
}

Test(demux, whole_stream_in_one_feed)
{
	struct reference r;
	struct demux m;
	struct sink s;

	reference_build(&r);
	sink_init(&s, r.wire.len);
	demux_init(&m);
	cr_assert_eq(demux_feed(&m, r.wire.p, r.wire.len, collect, &s), 0);
	assert_output(&r, &s, "one feed");
	sink_free(&s);
	reference_free(&r);
}

Test(demux, stream_split_at_every_byte_boundary, .timeout = 60)
{
	struct reference r;
	struct demux m;
	struct sink s;
	size_t k, n;
	char how[64];

	reference_build(&r);
	n = r.wire.len;
	sink_init(&s, n);
	for (k = 0; k <= n; k++) {
		sink_reset(&s);
		demux_init(&m);
		cr_assert_eq(demux_feed(&m, r.wire.p, k, collect, &s), 0,
		    "first part, split at %zu", k);
		cr_assert_eq(demux_feed(&m, r.wire.p + k, n - k, collect, &s),
		    0, "second part, split at %zu", k);
		if (s.len[1] != r.out.len || s.len[2] != r.err.len ||
		    memcmp(s.out[1], r.out.p, r.out.len) != 0 ||
		    memcmp(s.out[2], r.err.p, r.err.len) != 0) {
			snprintf(how, sizeof how, "split at %zu of %zu", k, n);
			assert_output(&r, &s, how);
		}
	}
	sink_free(&s);
	reference_free(&r);
}

Test(demux, stream_fed_one_byte_at_a_time)
{
	struct reference r;
	struct demux m;
	struct sink s;
	size_t i;

	reference_build(&r);
	sink_init(&s, r.wire.len);
	demux_init(&m);
	for (i = 0; i < r.wire.len; i++)
		cr_assert_eq(demux_feed(&m, r.wire.p + i, 1, collect, &s), 0,
		    "byte %zu", i);
	assert_output(&r, &s, "one byte at a time");
	sink_free(&s);
	reference_free(&r);
}

Test(demux, empty_feed_is_a_no_op)
{
	struct demux m;
	struct sink s;

	sink_init(&s, 16);
	demux_init(&m);
	cr_assert_eq(demux_feed(&m, "", 0, collect, &s), 0);
	cr_assert_eq(s.calls, 0);
	sink_free(&s);
}

Test(demux, zero_length_frames_produce_no_output)
{
	struct bytes wire = {0};
	struct demux m;
	struct sink s;

	add_frame(&wire, 1, "", 0);
	add_frame(&wire, 2, "", 0);
	add_frame(&wire, 1, "", 0);
	sink_init(&s, 16);
	demux_init(&m);
	cr_assert_eq(demux_feed(&m, wire.p, wire.len, collect, &s), 0);
	cr_assert_eq(s.len[1], 0);
	cr_assert_eq(s.len[2], 0);
	sink_free(&s);
	free(wire.p);
}

Test(demux, length_is_big_endian)
{
	struct bytes wire = {0};
	struct demux m;
	struct sink s;
	char *payload;
	uint32_t n = 0x00010203; /* 66051: a wrong byte order is not */

	payload = calloc(1, n);
	cr_assert_not_null(payload);
	add_frame(&wire, 2, payload, n);
	add_frame(&wire, 1, "x", 1);
	sink_init(&s, n);
	demux_init(&m);
	cr_assert_eq(demux_feed(&m, wire.p, wire.len, collect, &s), 0);
	cr_assert_eq(s.len[2], n);
	cr_assert_eq(s.len[1], 1);
	cr_assert_eq(s.out[1][0], 'x');
	sink_free(&s);
	free(payload);
	free(wire.p);
}

static void
expect_bad_header(const unsigned char h[8], const char *what)
{
	struct demux m;
	struct sink s;

	sink_init(&s, 16);
	demux_init(&m);
	errno = 0;
	cr_assert_eq(demux_feed(&m, (const char *)h, 8, collect, &s), -1,
	    "%s accepted", what);
	cr_assert_eq(errno, EPROTO, "%s: errno %d", what, errno);
	cr_assert_eq(s.calls, 0, "%s: output delivered", what);
	sink_free(&s);
}

Test(demux, rejects_unknown_stream)
{
	unsigned char h3[8] = {3, 0, 0, 0, 0, 0, 0, 1};
	unsigned char hff[8] = {0xff, 0, 0, 0, 0, 0, 0, 0};
	unsigned char hascii[8] = {'{', '"', 'a', '"', ':', '1', '}', '\n'};

	expect_bad_header(h3, "stream 3");
	expect_bad_header(hff, "stream 255");
	expect_bad_header(hascii, "a JSON line (not a multiplexed stream)");
}

Test(demux, rejects_nonzero_padding)
{
	int i;

	for (i = 1; i <= 3; i++) {
		unsigned char h[8] = {1, 0, 0, 0, 0, 0, 0, 1};
		char what[32];

		h[i] = 0x01;
		snprintf(what, sizeof what, "padding byte %d set", i);
		expect_bad_header(h, what);
	}
}

Test(demux, rejects_bad_header_split_across_feeds)
{
	unsigned char h[8] = {1, 0, 7, 0, 0, 0, 0, 5};
	struct demux m;
	struct sink s;
	int i;

	sink_init(&s, 16);
	demux_init(&m);
	for (i = 0; i < 7; i++)
		cr_assert_eq(
		    demux_feed(&m, (const char *)h + i, 1, collect, &s), 0,
		    "header byte %d", i);
	errno = 0;
	cr_assert_eq(demux_feed(&m, (const char *)h + 7, 1, collect, &s), -1);
	cr_assert_eq(errno, EPROTO);
	sink_free(&s);
}

Test(demux, rejects_bad_header_after_good_frames)
{
	struct bytes wire = {0};
	unsigned char bad[8] = {7, 0, 0, 0, 0, 0, 0, 0};
	struct demux m;
	struct sink s;

	add_frame(&wire, 1, "ok", 2);
	bytes_add(&wire, bad, sizeof bad);
	add_frame(&wire, 1, "never", 5);
	sink_init(&s, 16);
	demux_init(&m);
	errno = 0;
	cr_assert_eq(demux_feed(&m, wire.p, wire.len, collect, &s), -1);
	cr_assert_eq(errno, EPROTO);
	cr_assert_eq(s.len[1], 2);
	cr_assert(memcmp(s.out[1], "ok", 2) == 0);
	sink_free(&s);
	free(wire.p);
}

Test(demux, callback_failure_stops_the_feed)
{
	struct bytes wire = {0};
	struct demux m;
	struct sink s;

	add_frame(&wire, 1, "first", 5);
	add_frame(&wire, 2, "second", 6);
	add_frame(&wire, 1, "third", 5);
	sink_init(&s, 64);
	s.stop_after = 2;
	demux_init(&m);
	cr_assert_eq(demux_feed(&m, wire.p, wire.len, collect, &s), -1);
	cr_assert_eq(s.calls, 2, "no call after the one that failed");
	cr_assert_eq(s.len[1], 5);
	cr_assert_eq(s.len[2], 0);
	sink_free(&s);
	free(wire.p);
}

Test(demux, callback_failure_on_first_piece)
{
	struct bytes wire = {0};
	struct demux m;
	struct sink s;

	add_frame(&wire, 2, "x", 1);
	sink_init(&s, 64);
	s.stop_after = 1;
	demux_init(&m);
	cr_assert_eq(demux_feed(&m, wire.p, wire.len, collect, &s), -1);
	cr_assert_eq(s.calls, 1);
	sink_free(&s);
	free(wire.p);
}
