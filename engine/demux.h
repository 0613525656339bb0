/*
 * Docker's multiplexed stream: frames of an 8-byte header (stream type,
 * three zero bytes, big-endian length) and that many bytes of output.
 */
#ifndef DEMUX_H
#define DEMUX_H

#include <stddef.h>
#include <stdint.h>

#define DEMUX_STDIN 0
#define DEMUX_STDOUT 1
#define DEMUX_STDERR 2

struct demux {
	unsigned char hdr[8];
	size_t hdrlen;
	uint32_t left; /* bytes of the current frame still to come */
	int stream;
};

/* Called for each piece of output; return 0, or -1 to stop. */
typedef int (*demux_cb)(int, const char *, size_t, void *);

void demux_init(struct demux *);
int demux_feed(struct demux *, const char *, size_t, demux_cb, void *);

#endif
