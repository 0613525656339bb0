/* Frame codec for the supervisor-worker protocol (see proto.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "bigendian.h"
#include "proto.h"

int
proto_type_valid(unsigned int type)
{
	switch (type) {
	case PROTO_HELLO:
	case PROTO_SHUTDOWN:
	case PROTO_NOTIFY:
	case PROTO_CALL:
	case PROTO_RESULT:
	case PROTO_CANCEL:
	case PROTO_SIGNAL:
	case PROTO_DATA:
	case PROTO_CREDIT:
		return 1;
	}
	return 0;
}

void
proto_hdr_encode(const struct proto_hdr *h, unsigned char b[PROTO_HDR_LEN])
{
	put16(b, h->type);
	put16(b + 2, h->flags);
	put32(b + 4, h->len);
	put32(b + 8, h->stream);
	put32(b + 12, h->reqid);
}

void
proto_hdr_decode(const unsigned char b[PROTO_HDR_LEN], struct proto_hdr *h)
{
	h->type = get16(b);
	h->flags = get16(b + 2);
	h->len = get32(b + 4);
	h->stream = get32(b + 8);
	h->reqid = get32(b + 12);
}

/*
 * Take one frame off the buffer.  Returns 1 with *f filled, 0 when more
 * bytes are needed, -1 on a frame the peer must be dropped for (errno
 * EMSGSIZE for an oversize length, checked before anything is allocated;
 * EPROTO for an unknown type).
 */
int
proto_read(struct evbuffer *in, struct proto_frame *f)
{
	unsigned char b[PROTO_HDR_LEN];
	struct proto_hdr h;

	if (evbuffer_get_length(in) < PROTO_HDR_LEN)
		return 0;
	if (evbuffer_copyout(in, b, sizeof b) != (ev_ssize_t)sizeof b)
		return 0;
	proto_hdr_decode(b, &h);
	if (h.len > PROTO_MAX_PAYLOAD) {
		errno = EMSGSIZE;
		return -1;
	}
	if (!proto_type_valid(h.type)) {
		errno = EPROTO;
		return -1;
	}
	if (evbuffer_get_length(in) < PROTO_HDR_LEN + (size_t)h.len)
		return 0;
	if ((f->data = malloc((size_t)h.len + 1)) == NULL)
		return -1;
	evbuffer_drain(in, PROTO_HDR_LEN);
	if (evbuffer_remove(in, f->data, h.len) != (int)h.len) {
		free(f->data);
		f->data = NULL;
		errno = EIO;
		return -1;
	}
	f->data[h.len] = '\0';
	f->hdr = h;
	return 1;
}

void
proto_frame_free(struct proto_frame *f)
{
	free(f->data);
	f->data = NULL;
}

/* Queue one frame; -1 with EMSGSIZE if the payload is too large. */
int
proto_write(struct evbuffer *out, const struct proto_hdr *h, const void *data,
    size_t len)
{
	struct proto_hdr copy = *h;
	unsigned char b[PROTO_HDR_LEN];

	if (len > PROTO_MAX_PAYLOAD) {
		errno = EMSGSIZE;
		return -1;
	}
	copy.len = (uint32_t)len;
	proto_hdr_encode(&copy, b);
	if (evbuffer_add(out, b, sizeof b) == -1)
		return -1;
	if (len > 0 && evbuffer_add(out, data, len) == -1)
		return -1;
	return 0;
}

int
proto_write_json(struct evbuffer *out, uint16_t type, uint32_t stream,
    uint32_t reqid, json_object *obj)
{
	struct proto_hdr h = {.type = type, .stream = stream, .reqid = reqid};
	size_t len;
	const char *s;

	s = json_object_to_json_string_length(
	    obj, JSON_C_TO_STRING_PLAIN, &len);
	return proto_write(out, &h, s, len);
}

/* Parse a frame's payload as a JSON object; NULL if it is not one. */
json_object *
proto_frame_json(const struct proto_frame *f)
{
	json_tokener *tok;
	json_object *obj;

	if ((tok = json_tokener_new_ex(32)) == NULL)
		return NULL;
	obj =
	    json_tokener_parse_ex(tok, (const char *)f->data, (int)f->hdr.len);
	if (obj != NULL &&
	    (json_tokener_get_error(tok) != json_tokener_success ||
	        json_tokener_get_parse_end(tok) != (size_t)f->hdr.len ||
	        !json_object_is_type(obj, json_type_object))) {
		json_object_put(obj);
		obj = NULL;
	}
	json_tokener_free(tok);
	return obj;
}

/*
 * The protocol version a PROTO_HELLO speaks (*version, -1 when it names
 * none); 0 if it is PROTO_VERSION, -1 if not.
 */
int
proto_hello_version(const struct proto_frame *f, long long *version)
{
	json_object *obj, *v;

	*version = -1;
	if (f->hdr.type == PROTO_HELLO && (obj = proto_frame_json(f)) != NULL) {
		if (json_object_object_get_ex(obj, "version", &v) &&
		    json_object_is_type(v, json_type_int))
			*version = json_object_get_int64(v);
		json_object_put(obj);
	}
	return *version == PROTO_VERSION ? 0 : -1;
}
