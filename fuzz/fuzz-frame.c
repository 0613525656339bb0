/*
 * Fuzz the frame decoder (proto/frame.c): bytes from a worker arrive in
 * an evbuffer in pieces of any size; proto_read() takes frames off it and
 * proto_frame_json() parses the JSON ones.
 *
 * Input: one byte choosing the piece size, then the stream.  Every frame
 * taken must re-encode to the very bytes it came from.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "fuzz.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* The frame taken from stream bytes p: the same header and payload. */
static void
check_frame(const struct proto_frame *f, const uint8_t *p)
{
	struct evbuffer *out;
	json_object *obj;
	unsigned char *enc;
	size_t len = f->hdr.len;

	fuzz_check(f->data != NULL, "frame without data");
	fuzz_check(f->data[len] == '\0', "payload not NUL-terminated");
	fuzz_check(len <= PROTO_MAX_PAYLOAD, "oversize frame accepted");
	fuzz_check(proto_type_valid(f->hdr.type), "unknown type accepted");
	fuzz_check(
	    memcmp(f->data, p + PROTO_HDR_LEN, len) == 0, "payload differs");

	out = evbuffer_new();
	fuzz_check(out != NULL, "evbuffer_new");
	fuzz_check(proto_write(out, &f->hdr, f->data, len) == 0, "proto_write");
	fuzz_check(evbuffer_get_length(out) == PROTO_HDR_LEN + len,
	    "re-encoded length differs");
	enc = evbuffer_pullup(out, -1);
	fuzz_check(memcmp(enc, p, PROTO_HDR_LEN + len) == 0,
	    "re-encoded frame differs");
	evbuffer_free(out);

	if ((obj = proto_frame_json(f)) != NULL) {
		fuzz_check(json_object_is_type(obj, json_type_object),
		    "proto_frame_json gave a non-object");
		json_object_put(obj);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_frame f;
	struct evbuffer *in;
	size_t piece, off = 0, taken = 0, n;
	int rv = 0;

	if (size < 1)
		return 0;
	piece = (size_t)data[0] + 1;
	data++;
	size--;

	in = evbuffer_new();
	fuzz_check(in != NULL, "evbuffer_new");
	while (rv != -1 && (off < size || rv == 1)) {
		if (rv != 1) {
			/* Each add is its own chain: headers straddle them. */
			n = size - off < piece ? size - off : piece;
			fuzz_check(evbuffer_add(in, data + off, n) == 0,
			    "evbuffer_add");
			off += n;
		}
		memset(&f, 0, sizeof f);
		rv = proto_read(in, &f);
		if (rv == 1) {
			check_frame(&f, data + taken);
			taken += PROTO_HDR_LEN + f.hdr.len;
			proto_frame_free(&f);
			fuzz_check(
			    f.data == NULL, "proto_frame_free left data");
		} else if (rv == -1) {
			fuzz_check(errno == EMSGSIZE || errno == EPROTO,
			    "unexpected errno");
			fuzz_check(f.data == NULL, "data left on error");
		} else
			fuzz_check(rv == 0, "proto_read returned junk");
		fuzz_check(taken + evbuffer_get_length(in) == off,
		    "bytes lost or invented");
	}
	evbuffer_free(in);
	return 0;
}
