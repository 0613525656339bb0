/*
 * Fuzz the demultiplexer of Docker's stdout/stderr framing
 * (engine/demux.c).  The stream is fed to demux_feed() in random pieces
 * and what comes out is compared with a one-shot decoding of the whole
 * stream: the split must never change the output, and a bad header must
 * be an error exactly when the whole of it has arrived.
 *
 * Input: two bytes of split seed, then the stream.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demux.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

struct sink {
	unsigned char *out[3];
	size_t len[3];
};

static int
collect(int stream, const char *p, size_t n, void *arg)
{
	struct sink *s = arg;

	fuzz_check(stream >= 0 && stream <= 2, "callback got a bad stream");
	fuzz_check(n > 0, "callback got no bytes");
	memcpy(s->out[stream] + s->len[stream], p, n);
	s->len[stream] += n;
	return 0;
}

/* The whole stream at once, independently of demux.c; -1: bad header. */
static int
reference(const uint8_t *p, size_t len, struct sink *s)
{
	size_t off = 0, n;
	uint32_t flen;
	int st;

	while (len - off >= 8) {
		st = p[off];
		if (st > 2 || p[off + 1] != 0 || p[off + 2] != 0 ||
		    p[off + 3] != 0)
			return -1;
		flen = (uint32_t)p[off + 4] << 24 | (uint32_t)p[off + 5] << 16 |
		       (uint32_t)p[off + 6] << 8 | p[off + 7];
		off += 8;
		n = len - off < flen ? len - off : flen;
		memcpy(s->out[st] + s->len[st], p + off, n);
		s->len[st] += n;
		off += n;
	}
	return 0;
}

/* A small xorshift: the split sizes, from the input's seed. */
static uint32_t
next_rand(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sink got, want;
	struct demux m;
	uint32_t seed;
	size_t off = 0, n;
	int i, rv = 0, wantrv;

	if (size < 2)
		return 0;
	seed = ((uint32_t)data[0] << 8 | data[1]) + 1;
	data += 2;
	size -= 2;

	for (i = 0; i < 3; i++) {
		got.out[i] = malloc(size + 1);
		want.out[i] = malloc(size + 1);
		fuzz_check(got.out[i] != NULL && want.out[i] != NULL, "malloc");
		got.len[i] = want.len[i] = 0;
	}
	wantrv = reference(data, size, &want);

	demux_init(&m);
	while (off < size) {
		/* Mostly tiny pieces, where the header splits hide. */
		n = next_rand(&seed) % 4 == 0 ? next_rand(&seed) % 4096
		                              : next_rand(&seed) % 10;
		if (n > size - off)
			n = size - off;
		errno = 0;
		rv = demux_feed(&m, (const char *)data + off, n, collect, &got);
		off += n;
		if (rv == -1) {
			fuzz_check(errno == EPROTO, "error without EPROTO");
			break;
		}
		fuzz_check(rv == 0, "demux_feed returned junk");
	}

	fuzz_check(rv == wantrv, "error and reference disagree");
	for (i = 0; i < 3; i++) {
		fuzz_check(got.len[i] == want.len[i], "output length differs");
		fuzz_check(memcmp(got.out[i], want.out[i], got.len[i]) == 0,
		    "output differs");
		free(got.out[i]);
		free(want.out[i]);
	}
	return 0;
}
