/* Unit tests of the supervisor-worker frame codec (proto/frame.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <event2/buffer.h>

#include "proto.h"

static const uint16_t all_types[] = {PROTO_HELLO, PROTO_SHUTDOWN, PROTO_NOTIFY,
    PROTO_CALL, PROTO_RESULT, PROTO_CANCEL, PROTO_DATA, PROTO_CREDIT};
#define NTYPES (sizeof all_types / sizeof all_types[0])

static struct evbuffer *
xevbuffer(void)
{
	struct evbuffer *b = evbuffer_new();

	cr_assert_not_null(b);
	return b;
}

/* Append a raw header, bypassing proto_write's checks. */
static void
add_raw_header(struct evbuffer *b, uint16_t type, uint32_t len)
{
	struct proto_hdr h = {
	    .type = type, .len = len, .stream = 1, .reqid = 2};
	unsigned char raw[PROTO_HDR_LEN];

	proto_hdr_encode(&h, raw);
	cr_assert_eq(evbuffer_add(b, raw, sizeof raw), 0);
}

/* The whole content of b as a malloc'd array (b is left unchanged). */
static unsigned char *
linearize(struct evbuffer *b, size_t *len)
{
	unsigned char *p;

	*len = evbuffer_get_length(b);
	p = malloc(*len + 1);
	cr_assert_not_null(p);
	cr_assert_eq(evbuffer_copyout(b, p, *len), (ev_ssize_t)*len);
	return p;
}

Test(frame, header_is_big_endian)
{
	struct proto_hdr h = {.type = 0x0102,
	    .flags = 0x0304,
	    .len = 0x05060708,
	    .stream = 0x090a0b0c,
	    .reqid = 0x0d0e0f10};
	struct proto_hdr back;
	unsigned char raw[PROTO_HDR_LEN];
	unsigned char want[PROTO_HDR_LEN] = {
	    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

	proto_hdr_encode(&h, raw);
	cr_assert_arr_eq(raw, want, sizeof want);
	memset(&back, 0xaa, sizeof back);
	proto_hdr_decode(raw, &back);
	cr_assert_eq(back.type, 0x0102);
	cr_assert_eq(back.flags, 0x0304);
	cr_assert_eq(back.len, 0x05060708);
	cr_assert_eq(back.stream, 0x090a0b0c);
	cr_assert_eq(back.reqid, 0x0d0e0f10);
}

Test(frame, write_puts_big_endian_header_then_payload_on_the_wire)
{
	struct evbuffer *b = xevbuffer();
	struct proto_hdr h = {.type = PROTO_DATA,
	    .flags = PROTO_F_STDERR,
	    .stream = 0x01020304,
	    .reqid = 0xa0b0c0d0};
	unsigned char want[] = {0x00, 0xc8, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03,
	    0x01, 0x02, 0x03, 0x04, 0xa0, 0xb0, 0xc0, 0xd0, 'a', 'b', 'c'};
	unsigned char *wire;
	size_t n;

	cr_assert_eq(proto_write(b, &h, "abc", 3), 0);
	wire = linearize(b, &n);
	cr_assert_eq(n, sizeof want);
	cr_assert_arr_eq(wire, want, sizeof want);
	free(wire);
	evbuffer_free(b);
}

Test(frame, round_trips_every_type_with_payload)
{
	static const unsigned char payload[] = {
	    'p', 0, 'q', 0xff, 0x80, '\n', 0, 'z'};
	struct proto_frame f;
	size_t i;

	for (i = 0; i < NTYPES; i++) {
		struct evbuffer *b = xevbuffer();
		struct proto_hdr h = {.type = all_types[i],
		    .flags = (uint16_t)(0xf00d + i),
		    .stream = 0xdeadbeef - (uint32_t)i,
		    .reqid = 0x80000000u + (uint32_t)i};

		cr_assert_eq(proto_write(b, &h, payload, sizeof payload), 0);
		cr_assert_eq(
		    evbuffer_get_length(b), PROTO_HDR_LEN + sizeof payload);
		memset(&f, 0, sizeof f);
		cr_assert_eq(proto_read(b, &f), 1, "type %u", all_types[i]);
		cr_assert_eq(f.hdr.type, all_types[i]);
		cr_assert_eq(f.hdr.flags, (uint16_t)(0xf00d + i));
		cr_assert_eq(f.hdr.len, sizeof payload);
		cr_assert_eq(f.hdr.stream, 0xdeadbeef - (uint32_t)i);
		cr_assert_eq(f.hdr.reqid, 0x80000000u + (uint32_t)i);
		cr_assert_not_null(f.data);
		cr_assert_arr_eq(f.data, payload, sizeof payload);
		cr_assert_eq(f.data[sizeof payload], '\0',
		    "payload must be NUL-terminated");
		cr_assert_eq(
		    evbuffer_get_length(b), 0, "the frame must be consumed");
		proto_frame_free(&f);
		cr_assert_null(f.data);
		evbuffer_free(b);
	}
}

Test(frame, round_trips_every_type_without_payload)
{
	struct proto_frame f;
	size_t i;

	for (i = 0; i < NTYPES; i++) {
		struct evbuffer *b = xevbuffer();
		struct proto_hdr h = {.type = all_types[i],
		    .flags = 7,
		    .stream = 0,
		    .reqid = (uint32_t)i + 1};

		cr_assert_eq(proto_write(b, &h, NULL, 0), 0);
		cr_assert_eq(evbuffer_get_length(b), PROTO_HDR_LEN);
		memset(&f, 0, sizeof f);
		cr_assert_eq(proto_read(b, &f), 1, "type %u", all_types[i]);
		cr_assert_eq(f.hdr.type, all_types[i]);
		cr_assert_eq(f.hdr.flags, 7);
		cr_assert_eq(f.hdr.len, 0);
		cr_assert_eq(f.hdr.stream, 0);
		cr_assert_eq(f.hdr.reqid, (uint32_t)i + 1);
		cr_assert_not_null(f.data, "even an empty payload is a string");
		cr_assert_eq(f.data[0], '\0');
		cr_assert_eq(evbuffer_get_length(b), 0);
		proto_frame_free(&f);
		evbuffer_free(b);
	}
}

Test(frame, write_uses_the_given_length_not_the_header_len_field)
{
	struct evbuffer *b = xevbuffer();
	struct proto_hdr h = {.type = PROTO_DATA, .len = 999};
	struct proto_frame f = {0};

	cr_assert_eq(proto_write(b, &h, "four", 4), 0);
	cr_assert_eq(evbuffer_get_length(b), PROTO_HDR_LEN + 4);
	cr_assert_eq(proto_read(b, &f), 1);
	cr_assert_eq(f.hdr.len, 4);
	cr_assert_str_eq((char *)f.data, "four");
	proto_frame_free(&f);
	evbuffer_free(b);
}

Test(frame, round_trips_json_for_every_type)
{
	struct proto_frame f;
	json_object *obj, *back;
	size_t i;

	for (i = 0; i < NTYPES; i++) {
		struct evbuffer *b = xevbuffer();

		obj = json_object_new_object();
		json_object_object_add(
		    obj, "op", json_object_new_string("exec"));
		json_object_object_add(obj, "n", json_object_new_int((int)i));
		json_object_object_add(obj, "s",
		    json_object_new_string("caf\xc3\xa9 \"quoted\"\n"));
		cr_assert_eq(proto_write_json(b, all_types[i], 11, 22, obj), 0);
		memset(&f, 0, sizeof f);
		cr_assert_eq(proto_read(b, &f), 1);
		cr_assert_eq(f.hdr.type, all_types[i]);
		cr_assert_eq(f.hdr.flags, 0);
		cr_assert_eq(f.hdr.stream, 11);
		cr_assert_eq(f.hdr.reqid, 22);
		back = proto_frame_json(&f);
		cr_assert_not_null(back, "payload: %s", (char *)f.data);
		cr_assert(json_object_equal(obj, back));
		json_object_put(back);
		json_object_put(obj);
		proto_frame_free(&f);
		evbuffer_free(b);
	}
}

Test(frame, write_json_payload_is_plain_json_text)
{
	struct evbuffer *b = xevbuffer();
	struct proto_frame f = {0};
	json_object *obj = json_object_new_object();

	json_object_object_add(obj, "bytes", json_object_new_int(65536));
	cr_assert_eq(proto_write_json(b, PROTO_CREDIT, 5, 6, obj), 0);
	cr_assert_eq(proto_read(b, &f), 1);
	cr_assert_eq(f.hdr.len, strlen("{\"bytes\":65536}"));
	cr_assert_str_eq((char *)f.data, "{\"bytes\":65536}");
	proto_frame_free(&f);
	json_object_put(obj);
	evbuffer_free(b);
}

Test(frame, frame_delivered_one_byte_at_a_time)
{
	struct evbuffer *src = xevbuffer(), *in = xevbuffer();
	struct proto_hdr h = {.type = PROTO_RESULT, .stream = 3, .reqid = 4};
	struct proto_frame f = {0};
	const char *payload = "{\"exit_code\":0}";
	unsigned char *wire;
	size_t n, i;

	cr_assert_eq(proto_write(src, &h, payload, strlen(payload)), 0);
	wire = linearize(src, &n);
	for (i = 0; i < n; i++) {
		cr_assert_eq(evbuffer_add(in, wire + i, 1), 0);
		if (i + 1 < n) {
			cr_assert_eq(proto_read(in, &f), 0,
			    "complete after %zu of %zu bytes?", i + 1, n);
			cr_assert_eq(evbuffer_get_length(in), i + 1,
			    "nothing may be consumed before the frame is whole");
			cr_assert_null(f.data);
		}
	}
	cr_assert_eq(proto_read(in, &f), 1);
	cr_assert_eq(f.hdr.type, PROTO_RESULT);
	cr_assert_eq(f.hdr.stream, 3);
	cr_assert_eq(f.hdr.reqid, 4);
	cr_assert_eq(f.hdr.len, strlen(payload));
	cr_assert_str_eq((char *)f.data, payload);
	cr_assert_eq(evbuffer_get_length(in), 0);
	proto_frame_free(&f);
	free(wire);
	evbuffer_free(src);
	evbuffer_free(in);
}

Test(frame, two_frames_back_to_back_in_one_buffer)
{
	struct evbuffer *b = xevbuffer();
	struct proto_hdr h1 = {.type = PROTO_DATA,
	    .flags = PROTO_F_STDOUT,
	    .stream = 9,
	    .reqid = 9};
	struct proto_hdr h2 = {.type = PROTO_CANCEL, .reqid = 10};
	struct proto_frame f = {0};

	cr_assert_eq(proto_write(b, &h1, "first", 5), 0);
	cr_assert_eq(proto_write(b, &h2, NULL, 0), 0);

	cr_assert_eq(proto_read(b, &f), 1);
	cr_assert_eq(f.hdr.type, PROTO_DATA);
	cr_assert_eq(f.hdr.flags, PROTO_F_STDOUT);
	cr_assert_eq(f.hdr.len, 5);
	cr_assert_str_eq((char *)f.data, "first");
	cr_assert_eq(evbuffer_get_length(b), PROTO_HDR_LEN,
	    "only the first frame may be consumed");
	proto_frame_free(&f);

	cr_assert_eq(proto_read(b, &f), 1);
	cr_assert_eq(f.hdr.type, PROTO_CANCEL);
	cr_assert_eq(f.hdr.len, 0);
	cr_assert_eq(f.hdr.reqid, 10);
	proto_frame_free(&f);

	cr_assert_eq(proto_read(b, &f), 0);
	cr_assert_null(f.data);
	evbuffer_free(b);
}

Test(frame, rejects_oversize_length_before_allocation)
{
	struct evbuffer *b = xevbuffer();
	struct proto_frame f;
	unsigned char sentinel;

	add_raw_header(b, PROTO_DATA, PROTO_MAX_PAYLOAD + 1);
	/* Only the header is there: the payload has not arrived. */
	f.data = &sentinel;
	errno = 0;
	cr_assert_eq(proto_read(b, &f), -1);
	cr_assert_eq(errno, EMSGSIZE, "errno %d (%s)", errno, strerror(errno));
	cr_assert_eq(f.data, &sentinel, "nothing may be allocated");
	cr_assert_eq(evbuffer_get_length(b), PROTO_HDR_LEN,
	    "the header must not be consumed");
	evbuffer_free(b);
}

Test(frame, rejects_largest_length_field)
{
	struct evbuffer *b = xevbuffer();
	struct proto_frame f;
	unsigned char sentinel;

	add_raw_header(b, PROTO_RESULT, 0xffffffffu);
	f.data = &sentinel;
	errno = 0;
	cr_assert_eq(proto_read(b, &f), -1);
	cr_assert_eq(errno, EMSGSIZE);
	cr_assert_eq(f.data, &sentinel);
	cr_assert_eq(evbuffer_get_length(b), PROTO_HDR_LEN);
	evbuffer_free(b);
}

Test(frame, accepts_maximum_size_payload)
{
	struct evbuffer *b = xevbuffer();
	struct proto_hdr h = {.type = PROTO_DATA, .stream = 1, .reqid = 1};
	struct proto_frame f = {0};
	unsigned char *payload;
	size_t i;

	payload = malloc(PROTO_MAX_PAYLOAD);
	cr_assert_not_null(payload);
	for (i = 0; i < PROTO_MAX_PAYLOAD; i++)
		payload[i] = (unsigned char)(i * 7 + i / 251);
	cr_assert_eq(proto_write(b, &h, payload, PROTO_MAX_PAYLOAD), 0);
	cr_assert_eq(evbuffer_get_length(b), PROTO_HDR_LEN + PROTO_MAX_PAYLOAD);
	cr_assert_eq(proto_read(b, &f), 1);
	cr_assert_eq(f.hdr.len, PROTO_MAX_PAYLOAD);
	cr_assert(memcmp(f.data, payload, PROTO_MAX_PAYLOAD) == 0);
	cr_assert_eq(f.data[PROTO_MAX_PAYLOAD], '\0');
	cr_assert_eq(evbuffer_get_length(b), 0);
	proto_frame_free(&f);
	free(payload);
	evbuffer_free(b);
}

Test(frame, write_refuses_oversize_payload)
{
	struct evbuffer *b = xevbuffer();
	struct proto_hdr h = {.type = PROTO_DATA};
	char *payload;

	payload = calloc(1, PROTO_MAX_PAYLOAD + 1);
	cr_assert_not_null(payload);
	errno = 0;
	cr_assert_eq(proto_write(b, &h, payload, PROTO_MAX_PAYLOAD + 1), -1);
	cr_assert_eq(errno, EMSGSIZE);
	cr_assert_eq(evbuffer_get_length(b), 0, "nothing may be queued");
	free(payload);
	evbuffer_free(b);
}

Test(frame, write_json_refuses_oversize_object)
{
	struct evbuffer *b = xevbuffer();
	json_object *obj = json_object_new_object();
	char *big;

	big = malloc(PROTO_MAX_PAYLOAD + 1);
	cr_assert_not_null(big);
	memset(big, 'x', PROTO_MAX_PAYLOAD);
	big[PROTO_MAX_PAYLOAD] = '\0';
	json_object_object_add(obj, "s", json_object_new_string(big));
	errno = 0;
	cr_assert_eq(proto_write_json(b, PROTO_RESULT, 0, 1, obj), -1);
	cr_assert_eq(errno, EMSGSIZE);
	cr_assert_eq(evbuffer_get_length(b), 0);
	json_object_put(obj);
	free(big);
	evbuffer_free(b);
}

Test(frame, rejects_unknown_type)
{
	static const uint16_t bad[] = {0, 4, 99, 104, 199, 202, 299, 0xffff};
	struct proto_frame f;
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct evbuffer *b = xevbuffer();

		cr_assert_not(proto_type_valid(bad[i]), "type %u", bad[i]);
		add_raw_header(b, bad[i], 0);
		f.data = NULL;
		errno = 0;
		cr_assert_eq(proto_read(b, &f), -1, "type %u", bad[i]);
		cr_assert_eq(errno, EPROTO, "type %u", bad[i]);
		cr_assert_null(f.data);
		evbuffer_free(b);
	}
}

Test(frame, rejects_unknown_type_before_its_payload_arrived)
{
	struct evbuffer *b = xevbuffer();
	struct proto_frame f = {0};

	add_raw_header(b, 150, 1000);
	errno = 0;
	cr_assert_eq(proto_read(b, &f), -1);
	cr_assert_eq(errno, EPROTO);
	cr_assert_null(f.data);
	evbuffer_free(b);
}

Test(frame, knows_every_defined_type)
{
	size_t i;

	for (i = 0; i < NTYPES; i++)
		cr_assert(
		    proto_type_valid(all_types[i]), "type %u", all_types[i]);
}

Test(frame, partial_frame_at_eof_stays_unconsumed)
{
	struct evbuffer *src = xevbuffer(), *in = xevbuffer();
	struct proto_hdr h = {.type = PROTO_CALL, .reqid = 77};
	struct proto_frame f = {0};
	const char *payload = "{\"op\":\"exec\",\"command\":\"true\"}";
	unsigned char *wire;
	size_t n;

	cr_assert_eq(proto_write(src, &h, payload, strlen(payload)), 0);
	wire = linearize(src, &n);

	/* A partial header. */
	cr_assert_eq(evbuffer_add(in, wire, PROTO_HDR_LEN - 1), 0);
	cr_assert_eq(proto_read(in, &f), 0);
	cr_assert_eq(evbuffer_get_length(in), PROTO_HDR_LEN - 1);
	cr_assert_null(f.data);

	/* The whole header and part of the payload, then the peer is gone. */
	cr_assert_eq(evbuffer_add(in, wire + PROTO_HDR_LEN - 1, 10), 0);
	cr_assert_eq(proto_read(in, &f), 0);
	cr_assert_eq(proto_read(in, &f), 0, "and again: still incomplete");
	cr_assert_eq(evbuffer_get_length(in), PROTO_HDR_LEN + 9);
	cr_assert_null(f.data);

	/* Nothing was lost: the rest completes the frame. */
	cr_assert_eq(
	    evbuffer_add(in, wire + PROTO_HDR_LEN + 9, n - PROTO_HDR_LEN - 9),
	    0);
	cr_assert_eq(proto_read(in, &f), 1);
	cr_assert_eq(f.hdr.reqid, 77);
	cr_assert_str_eq((char *)f.data, payload);
	proto_frame_free(&f);
	free(wire);
	evbuffer_free(src);
	evbuffer_free(in);
}

Test(frame, empty_buffer_needs_more)
{
	struct evbuffer *b = xevbuffer();
	struct proto_frame f = {0};

	cr_assert_eq(proto_read(b, &f), 0);
	cr_assert_null(f.data);
	evbuffer_free(b);
}

/* A frame holding the given payload, for proto_frame_json. */
static struct proto_frame
text_frame(const char *s, size_t len)
{
	struct proto_frame f = {0};

	f.hdr.type = PROTO_RESULT;
	f.hdr.len = (uint32_t)len;
	f.data = malloc(len + 1);
	cr_assert_not_null(f.data);
	memcpy(f.data, s, len);
	f.data[len] = '\0';
	return f;
}

static json_object *
frame_json_of(const char *s)
{
	struct proto_frame f = text_frame(s, strlen(s));
	json_object *obj;

	obj = proto_frame_json(&f);
	proto_frame_free(&f);
	return obj;
}

/* '{"a":' n times, 1, '}' n times: an object nested n deep. */
static char *
nested_objects(int n)
{
	char *s, *p;
	int i;

	s = p = malloc((size_t)n * 6 + 2);
	cr_assert_not_null(s);
	for (i = 0; i < n; i++) {
		memcpy(p, "{\"a\":", 5);
		p += 5;
	}
	*p++ = '1';
	for (i = 0; i < n; i++)
		*p++ = '}';
	*p = '\0';
	return s;
}

Test(frame, frame_json_parses_an_object)
{
	json_object *obj, *v;

	obj = frame_json_of("{\"exit_code\":3,\"timed_out\":false,"
	                    "\"error\":\"x\"}");
	cr_assert_not_null(obj);
	cr_assert(json_object_is_type(obj, json_type_object));
	cr_assert(json_object_object_get_ex(obj, "exit_code", &v));
	cr_assert_eq(json_object_get_int(v), 3);
	json_object_put(obj);
}

Test(frame, frame_json_accepts_surrounding_whitespace)
{
	json_object *obj;

	obj = frame_json_of(" {\"a\":1}\n");
	cr_assert_not_null(obj);
	json_object_put(obj);
}

Test(frame, frame_json_rejects_non_objects)
{
	static const char *const inputs[] = {
	    "[1,2,3]", "[]", "\"str\"", "42 ", "true ", "null ", ""};
	size_t i;

	for (i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
		json_object *obj = frame_json_of(inputs[i]);

		cr_expect_null(obj, "accepted \"%s\"", inputs[i]);
		json_object_put(obj);
	}
}

Test(frame, frame_json_rejects_trailing_garbage)
{
	static const char *const inputs[] = {
	    "{\"a\":1}x", "{\"a\":1}{}", "{\"a\":1} ]", "{}}"};
	size_t i;

	for (i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
		json_object *obj = frame_json_of(inputs[i]);

		cr_expect_null(obj, "accepted \"%s\"", inputs[i]);
		json_object_put(obj);
	}
}

Test(frame, frame_json_rejects_bytes_after_an_embedded_nul)
{
	static const char payload[] = "{\"a\":1}\0{\"b\":2}";
	struct proto_frame f = text_frame(payload, sizeof payload - 1);
	json_object *obj;

	obj = proto_frame_json(&f);
	cr_expect_null(obj);
	json_object_put(obj);
	proto_frame_free(&f);
}

Test(frame, frame_json_rejects_truncated_object)
{
	json_object *obj = frame_json_of("{\"a\":[1,2");

	cr_assert_null(obj);
}

Test(frame, frame_json_accepts_moderate_nesting)
{
	char *s = nested_objects(16);
	json_object *obj = frame_json_of(s);

	cr_assert_not_null(obj);
	json_object_put(obj);
	free(s);
}

Test(frame, frame_json_rejects_deep_nesting)
{
	static const int depths[] = {64, 1000, 100000};
	size_t i;

	for (i = 0; i < sizeof depths / sizeof depths[0]; i++) {
		char *s = nested_objects(depths[i]);
		json_object *obj = frame_json_of(s);

		cr_expect_null(obj, "accepted nesting %d deep", depths[i]);
		json_object_put(obj);
		free(s);
	}
}
