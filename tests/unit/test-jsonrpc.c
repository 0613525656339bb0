/* Unit tests of JSON-RPC 2.0 parsing and validation (supervisor/mcp/rpc.c). */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "mcp.h"

#define DEPTH 64

/* Parse s (strlen(s) bytes) with the default depth; asserts success. */
static json_object *
parse_ok(const char *s)
{
	json_object *obj;
	int err = 12345;

	obj = rpc_parse(s, strlen(s), DEPTH, &err);
	cr_assert_not_null(obj, "rejected: %s", s);
	cr_assert_eq(err, 0);
	return obj;
}

/* True when len bytes at s are a parse error, with *err set accordingly. */
static int
parse_fails(const char *s, size_t len, int depth)
{
	json_object *obj;
	int err = 0;

	obj = rpc_parse(s, len, depth, &err);
	if (obj != NULL) {
		json_object_put(obj);
		return 0;
	}
	cr_assert_eq(err, RPC_PARSE_ERROR, "err %d", err);
	return 1;
}

/* Validate s; returns the code, *msg and *why filled. */
static int
validate(
    const char *s, json_object **objp, struct rpc_msg *msg, const char **why)
{
	*objp = parse_ok(s);
	*why = NULL;
	return rpc_validate(*objp, msg, why);
}

static void
expect_invalid(const char *s)
{
	struct rpc_msg msg;
	json_object *obj;
	const char *why;

	cr_assert_eq(validate(s, &obj, &msg, &why), RPC_INVALID_REQUEST,
	    "accepted: %s", s);
	cr_assert_not_null(why, "no reason for: %s", s);
	cr_assert_neq(why[0], '\0');
	json_object_put(obj);
}

/* Brackets nested n deep: [[[...]]]. */
static char *
nested_arrays(int n)
{
	char *s;

	s = malloc((size_t)n * 2 + 1);
	cr_assert_not_null(s);
	memset(s, '[', (size_t)n);
	memset(s + n, ']', (size_t)n);
	s[2 * n] = '\0';
	return s;
}

Test(jsonrpc, error_codes_are_those_of_the_spec)
{
	cr_assert_eq(RPC_PARSE_ERROR, -32700);
	cr_assert_eq(RPC_INVALID_REQUEST, -32600);
	cr_assert_eq(RPC_METHOD_NOT_FOUND, -32601);
	cr_assert_eq(RPC_INVALID_PARAMS, -32602);
	cr_assert_eq(RPC_INTERNAL_ERROR, -32603);
}

Test(jsonrpc, classifies_request)
{
	struct rpc_msg msg;
	json_object *obj;
	const char *why;

	cr_assert_eq(validate("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	                      "\"tools/list\",\"params\":{\"cursor\":\"x\"}}",
	                 &obj, &msg, &why),
	    0);
	cr_assert_eq(msg.kind, RPC_REQUEST);
	cr_assert_str_eq(msg.method, "tools/list");
	cr_assert_not_null(msg.id);
	cr_assert(json_object_is_type(msg.id, json_type_int));
	cr_assert_eq(json_object_get_int64(msg.id), 1);
	cr_assert_not_null(msg.params);
	cr_assert(json_object_is_type(msg.params, json_type_object));
	json_object_put(obj);
}

Test(jsonrpc, classifies_request_without_params)
{
	struct rpc_msg msg;
	json_object *obj;
	const char *why;

	cr_assert_eq(validate("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":"
	                      "\"ping\"}",
	                 &obj, &msg, &why),
	    0);
	cr_assert_eq(msg.kind, RPC_REQUEST);
	cr_assert_str_eq(msg.method, "ping");
	cr_assert_null(msg.params);
	json_object_put(obj);
}

Test(jsonrpc, accepts_array_params)
{
	struct rpc_msg msg;
	json_object *obj;
	const char *why;

	cr_assert_eq(validate("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":"
	                      "\"m\",\"params\":[1,2]}",
	                 &obj, &msg, &why),
	    0);
	cr_assert_not_null(msg.params);
	cr_assert(json_object_is_type(msg.params, json_type_array));
	json_object_put(obj);
}

Test(jsonrpc, classifies_notification)
{
	struct rpc_msg msg;
	json_object *obj;
	const char *why;

	cr_assert_eq(validate("{\"jsonrpc\":\"2.0\",\"method\":"
	                      "\"notifications/initialized\"}",
	                 &obj, &msg, &why),
	    0);
	cr_assert_eq(msg.kind, RPC_NOTIFICATION);
	cr_assert_str_eq(msg.method, "notifications/initialized");
	cr_assert_null(msg.id);
	cr_assert_null(msg.params);
	json_object_put(obj);
}

Test(jsonrpc, classifies_result_response)
{
	struct rpc_msg msg;
	json_object *obj;
	const char *why;

	cr_assert_eq(validate("{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"result\":"
	                      "{}}",
	                 &obj, &msg, &why),
	    0);
	cr_assert_eq(msg.kind, RPC_RESPONSE);
	cr_assert_not_null(msg.id);
	cr_assert_str_eq(json_object_get_string(msg.id), "s1");
	cr_assert_null(msg.method);
	json_object_put(obj);
}

Test(jsonrpc, classifies_error_response)
{
	struct rpc_msg msg;
	json_object *obj;
	const char *why;

	cr_assert_eq(validate("{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":"
	                      "{\"code\":-32601,\"message\":\"no\"}}",
	                 &obj, &msg, &why),
	    0);
	cr_assert_eq(msg.kind, RPC_RESPONSE);
	cr_assert_eq(json_object_get_int64(msg.id), 3);
	json_object_put(obj);
}

Test(jsonrpc, accepts_id_zero_as_request_id)
{
	struct rpc_msg msg;
	json_object *obj;
	const char *why;

	cr_assert_eq(validate("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"m\"}",
	                 &obj, &msg, &why),
	    0);
	cr_assert_eq(
	    msg.kind, RPC_REQUEST, "id 0 is an id, not a notification");
	cr_assert_not_null(msg.id);
	cr_assert(json_object_is_type(msg.id, json_type_int));
	cr_assert_eq(json_object_get_int64(msg.id), 0);
	json_object_put(obj);
}

Test(jsonrpc, accepts_negative_and_large_integer_ids)
{
	static const char *const inputs[] = {
	    "{\"jsonrpc\":\"2.0\",\"id\":-7,\"method\":\"m\"}",
	    "{\"jsonrpc\":\"2.0\",\"id\":9007199254740993,\"method\":\"m\"}",
	};
	struct rpc_msg msg;
	json_object *obj;
	const char *why;
	size_t i;

	for (i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
		cr_assert_eq(
		    validate(inputs[i], &obj, &msg, &why), 0, "%s", inputs[i]);
		cr_assert_eq(msg.kind, RPC_REQUEST);
		cr_assert_not_null(msg.id);
		json_object_put(obj);
	}
}

Test(jsonrpc, rejects_ids_beyond_64_bits)
{
	/* json-c would clamp them: the answer would carry another id. */
	static const char *const inputs[] = {
	    "{\"jsonrpc\":\"2.0\",\"id\":99999999999999999999,\"method\":\"m\"}",
	    "{\"jsonrpc\":\"2.0\",\"id\":-99999999999999999999,\"method\":\"m\"}",
	};
	struct rpc_msg msg;
	json_object *obj;
	const char *why;
	size_t i;

	for (i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
		cr_expect_eq(validate(inputs[i], &obj, &msg, &why),
		    RPC_INVALID_REQUEST, "%s", inputs[i]);
		json_object_put(obj);
	}
}

Test(jsonrpc, accepts_string_ids)
{
	static const char *const inputs[] = {
	    "{\"jsonrpc\":\"2.0\",\"id\":\"abc-1\",\"method\":\"m\"}",
	    "{\"jsonrpc\":\"2.0\",\"id\":\"\",\"method\":\"m\"}",
	    "{\"jsonrpc\":\"2.0\",\"id\":\"0\",\"method\":\"m\"}",
	};
	static const char *const ids[] = {"abc-1", "", "0"};
	struct rpc_msg msg;
	json_object *obj;
	const char *why;
	size_t i;

	for (i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
		cr_assert_eq(
		    validate(inputs[i], &obj, &msg, &why), 0, "%s", inputs[i]);
		cr_assert_eq(msg.kind, RPC_REQUEST);
		cr_assert_not_null(msg.id);
		cr_assert(json_object_is_type(msg.id, json_type_string));
		cr_assert_str_eq(json_object_get_string(msg.id), ids[i]);
		json_object_put(obj);
	}
}

Test(jsonrpc, rejects_unusable_ids_without_echoing_them)
{
	static const char *const inputs[] = {
	    "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"m\"}",
	    "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"m\"}",
	    "{\"jsonrpc\":\"2.0\",\"id\":1.0,\"method\":\"m\"}",
	    "{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"m\"}",
	    "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"m\"}",
	    "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"m\"}",
	    "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}",
	};
	struct rpc_msg msg;
	json_object *obj;
	const char *why;
	size_t i;

	for (i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
		memset(&msg, 0xa5, sizeof msg);
		cr_assert_eq(validate(inputs[i], &obj, &msg, &why),
		    RPC_INVALID_REQUEST, "accepted: %s", inputs[i]);
		cr_assert_null(msg.id, "id kept for: %s", inputs[i]);
		cr_assert_not_null(why);
		json_object_put(obj);
	}
}

Test(jsonrpc, invalid_request_keeps_a_usable_id_for_the_error)
{
	struct rpc_msg msg;
	json_object *obj;
	const char *why;

	cr_assert_eq(validate("{\"jsonrpc\":\"1.0\",\"id\":42,\"method\":"
	                      "\"m\"}",
	                 &obj, &msg, &why),
	    RPC_INVALID_REQUEST);
	cr_assert_not_null(msg.id);
	cr_assert_eq(json_object_get_int64(msg.id), 42);
	json_object_put(obj);

	cr_assert_eq(validate("{\"jsonrpc\":\"2.0\",\"id\":\"k\",\"method\":"
	                      "7}",
	                 &obj, &msg, &why),
	    RPC_INVALID_REQUEST);
	cr_assert_not_null(msg.id);
	cr_assert_str_eq(json_object_get_string(msg.id), "k");
	json_object_put(obj);
}

Test(jsonrpc, rejects_missing_or_wrong_jsonrpc_version)
{
	expect_invalid("{\"id\":1,\"method\":\"m\"}");
	expect_invalid("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"m\"}");
	expect_invalid("{\"jsonrpc\":\"2\",\"id\":1,\"method\":\"m\"}");
	expect_invalid("{\"jsonrpc\":\"2.0 \",\"id\":1,\"method\":\"m\"}");
	expect_invalid("{\"jsonrpc\":2.0,\"id\":1,\"method\":\"m\"}");
	expect_invalid("{\"jsonrpc\":null,\"id\":1,\"method\":\"m\"}");
}

Test(jsonrpc, rejects_method_that_is_not_a_string)
{
	expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":1}");
	expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":null}");
	expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":[\"m\"]}");
	expect_invalid("{\"jsonrpc\":\"2.0\",\"method\":{}}");
}

Test(jsonrpc, rejects_missing_method)
{
	expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":1}");
	expect_invalid("{\"jsonrpc\":\"2.0\"}");
	/* A response needs an id. */
	expect_invalid("{\"jsonrpc\":\"2.0\",\"result\":{}}");
}

Test(jsonrpc, rejects_params_that_are_not_structured)
{
	expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\","
	               "\"params\":\"x\"}");
	expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\","
	               "\"params\":3}");
	expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\","
	               "\"params\":true}");
	expect_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\","
	               "\"params\":null}");
	expect_invalid("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":1}");
}

Test(jsonrpc, rejects_batches)
{
	struct rpc_msg msg;
	json_object *obj;
	const char *why;

	cr_assert_eq(validate("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	                      "\"m\"},{\"jsonrpc\":\"2.0\",\"method\":\"n\"}]",
	                 &obj, &msg, &why),
	    RPC_INVALID_REQUEST);
	cr_assert_not_null(why);
	cr_assert_not_null(strstr(why, "batch"), "why: %s", why);
	cr_assert_null(msg.id);
	json_object_put(obj);

	expect_invalid("[]");
}

Test(jsonrpc, rejects_non_object_messages)
{
	expect_invalid("\"a string\"");
	expect_invalid("42 ");
	expect_invalid("true ");
	expect_invalid("1.5 ");
}

Test(jsonrpc, parse_error_on_truncated_json)
{
	static const char *const inputs[] = {
	    "{\"jsonrpc\":\"2.0\",\"id\":1",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,",
	    "{\"jsonrpc\":\"2.",
	    "{",
	    "[",
	    "",
	    "   ",
	};
	size_t i;

	for (i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
		cr_expect(parse_fails(inputs[i], strlen(inputs[i]), DEPTH),
		    "accepted: \"%s\"", inputs[i]);
}

Test(jsonrpc, parse_error_on_trailing_garbage)
{
	static const char *const inputs[] = {
	    "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}x",
	    "{\"jsonrpc\":\"2.0\",\"method\":\"m\"} x",
	    "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}{}",
	    "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\n{\"jsonrpc\":\"2.0\"}",
	    "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}}",
	    "{\"jsonrpc\":\"2.0\",\"method\":\"m\"},",
	};
	size_t i;

	for (i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
		cr_expect(parse_fails(inputs[i], strlen(inputs[i]), DEPTH),
		    "accepted: \"%s\"", inputs[i]);
}

Test(jsonrpc, parse_error_on_trailing_nul_bytes)
{
	/* NUL is not JSON whitespace; a line ending in NULs is malformed. */
	static const char one[] = "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\0";
	static const char two[] =
	    "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\n\0\0";

	cr_expect(parse_fails(one, sizeof one - 1, DEPTH),
	    "accepted a message followed by a NUL byte");
	cr_expect(parse_fails(two, sizeof two - 1, DEPTH),
	    "accepted a message followed by NUL bytes");
}

Test(jsonrpc, parse_error_on_nul_then_garbage)
{
	static const char s[] = "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\0{}";

	cr_assert(parse_fails(s, sizeof s - 1, DEPTH));
}

Test(jsonrpc, accepts_trailing_whitespace)
{
	json_object *obj;

	obj = parse_ok("{\"jsonrpc\":\"2.0\",\"method\":\"m\"} \t\r\n");
	json_object_put(obj);
	obj = parse_ok(" \n{\"jsonrpc\":\"2.0\",\"method\":\"m\"}");
	json_object_put(obj);
}

Test(jsonrpc, uses_only_the_given_length)
{
	const char *s = "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}GARBAGE";
	json_object *obj;
	int err;

	obj = rpc_parse(s, strlen(s) - strlen("GARBAGE"), DEPTH, &err);
	cr_assert_not_null(obj);
	cr_assert_eq(err, 0);
	json_object_put(obj);
}

Test(jsonrpc, parse_error_on_invalid_utf8_bytes)
{
	static const char *const inputs[] = {
	    "{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}",
	    "{\"jsonrpc\":\"2.0\",\"method\":\"\xfe\"}",
	    "{\"jsonrpc\":\"2.0\",\"method\":\"\x80\"}",
	    "{\"jsonrpc\":\"2.0\",\"method\":\"a\xbf\"}",
	    "{\"jsonrpc\":\"2.0\",\"method\":\"\xc3\x28\"}",
	    "{\"jsonrpc\":\"2.0\",\"method\":\"\xc3\"}",
	    "{\"jsonrpc\":\"2.0\",\"method\":\"\xe2\x82\"}",
	    "{\"jsonrpc\":\"2.0\",\"method\":\"\xf0\x9f\x98\"}",
	    "{\"jsonrpc\":\"2.0\",\"params\":{\"\xff\":1},\"method\":\"m\"}",
	};
	size_t i;

	for (i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
		cr_expect(parse_fails(inputs[i], strlen(inputs[i]), DEPTH),
		    "accepted input #%zu", i);
}

Test(jsonrpc, parse_error_on_overlong_surrogate_and_out_of_range_utf8)
{
	static const struct {
		const char *what, *json;
	} inputs[] = {
	    {"overlong NUL C0 80",
	        "{\"jsonrpc\":\"2.0\",\"method\":\"\xc0\x80\"}"},
	    {"overlong '/' C1 AF",
	        "{\"jsonrpc\":\"2.0\",\"method\":\"\xc1\xaf\"}"},
	    {"overlong E0 80 80",
	        "{\"jsonrpc\":\"2.0\",\"method\":\"\xe0\x80\x80\"}"},
	    {"surrogate ED A0 80",
	        "{\"jsonrpc\":\"2.0\",\"method\":\"\xed\xa0\x80\"}"},
	    {"above U+10FFFF F4 90 80 80",
	        "{\"jsonrpc\":\"2.0\",\"method\":\"\xf4\x90\x80\x80\"}"},
	    {"F5 lead byte",
	        "{\"jsonrpc\":\"2.0\",\"method\":\"\xf5\x80\x80\x80\"}"},
	};
	size_t i;

	for (i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
		cr_expect(
		    parse_fails(inputs[i].json, strlen(inputs[i].json), DEPTH),
		    "accepted invalid UTF-8: %s", inputs[i].what);
}

Test(jsonrpc, accepts_valid_utf8)
{
	json_object *obj;

	obj = parse_ok("{\"jsonrpc\":\"2.0\",\"method\":\"caf\xc3\xa9 "
	               "\xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\"}");
	json_object_put(obj);
}

Test(jsonrpc, parse_error_on_non_json_syntax)
{
	static const char *const inputs[] = {
	    "{'jsonrpc':\"2.0\",\"method\":\"m\"}",
	    "{\"jsonrpc\":\"2.0\",\"method\":'m'}",
	    "{\"jsonrpc\":\"2.0\",\"method\":\"m\",}",
	    "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}/* c */",
	    "{\"jsonrpc\":\"2.0\",\"params\":[1,],\"method\":\"m\"}",
	    "{\"jsonrpc\":\"2.0\",\"params\":[01],\"method\":\"m\"}",
	    "{\"jsonrpc\":\"2.0\",\"params\":[NaN],\"method\":\"m\"}",
	    "{\"jsonrpc\":\"2.0\",\"params\":[Infinity],\"method\":\"m\"}",
	    "{\"jsonrpc\":\"2.0\",\"params\":[-Infinity],\"method\":\"m\"}",
	    "{\"jsonrpc\":\"2.0\",\"params\":[1.],\"method\":\"m\"}",
	    "{\"jsonrpc\":\"2.0\",\"method\":\"a\nb\"}",
	    "{\"jsonrpc\":\"2.0\",\"method\":\"a\tb\"}",
	};
	size_t i;

	for (i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
		cr_expect(parse_fails(inputs[i], strlen(inputs[i]), DEPTH),
		    "accepted: %s", inputs[i]);
}

Test(jsonrpc, bare_scalars_are_json_not_parse_errors)
{
	/*
	 * JSON text may be any value: "42" parses, and is then an invalid
	 * request (-32600), not a parse error (-32700).
	 */
	static const char *const inputs[] = {
	    "42", "true", "null", "1.5", "null "};
	json_object *obj;
	size_t i;
	int err;

	for (i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
		err = 0;
		obj = rpc_parse(inputs[i], strlen(inputs[i]), DEPTH, &err);
		cr_expect_eq(err, 0, "\"%s\" gave error %d", inputs[i], err);
		json_object_put(obj);
	}
}

Test(jsonrpc, nesting_up_to_max_depth_is_accepted)
{
	static const int depths[] = {1, 4, 8, 64};
	size_t i;

	for (i = 0; i < sizeof depths / sizeof depths[0]; i++) {
		char *s = nested_arrays(depths[i]);
		json_object *obj;
		int err;

		obj = rpc_parse(s, strlen(s), depths[i], &err);
		cr_expect_not_null(
		    obj, "%d deep with max %d", depths[i], depths[i]);
		json_object_put(obj);
		free(s);
	}
}

Test(jsonrpc, parse_error_on_nesting_deeper_than_max_depth)
{
	static const int depths[] = {1, 4, 8, 64};
	size_t i;

	for (i = 0; i < sizeof depths / sizeof depths[0]; i++) {
		char *s = nested_arrays(depths[i] + 1);

		cr_expect(parse_fails(s, strlen(s), depths[i]),
		    "%d deep accepted with max %d", depths[i] + 1, depths[i]);
		free(s);
	}
}

Test(jsonrpc, parse_error_on_very_deep_nesting)
{
	char *s = nested_arrays(200000);

	cr_assert(parse_fails(s, strlen(s), DEPTH));
	free(s);
}

Test(jsonrpc, depth_counts_every_value_level_including_leaves)
{
	const char *s = "{\"jsonrpc\":\"2.0\",\"method\":\"m\","
	                "\"params\":{\"a\":{\"b\":{\"c\":1}}}}";
	json_object *obj;
	int err;

	/* 5 levels: the message, params, a, b, and the 1 inside b. */
	obj = rpc_parse(s, strlen(s), 5, &err);
	cr_assert_not_null(obj);
	json_object_put(obj);
	cr_assert(parse_fails(s, strlen(s), 4));

	/* [[1]] is 3 deep, [[]] only 2. */
	obj = rpc_parse("[[1]]", 5, 3, &err);
	cr_assert_not_null(obj);
	json_object_put(obj);
	cr_assert(parse_fails("[[1]]", 5, 2));
	obj = rpc_parse("[[]]", 4, 2, &err);
	cr_assert_not_null(obj);
	json_object_put(obj);
}

Test(jsonrpc, error_with_null_id)
{
	json_object *r, *v, *e;

	r = rpc_error(NULL, RPC_PARSE_ERROR, "Parse error");
	cr_assert_not_null(r);
	cr_assert_str_eq(
	    json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN),
	    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
	    "\"message\":\"Parse error\"}}");
	cr_assert_eq(json_object_object_length(r), 3);
	cr_assert(json_object_object_get_ex(r, "id", &v), "id must be present");
	cr_assert_null(v, "id must be null");
	cr_assert(json_object_object_get_ex(r, "error", &e));
	cr_assert_eq(json_object_object_length(e), 2);
	json_object_put(r);
}

Test(jsonrpc, error_echoes_the_id)
{
	struct rpc_msg msg;
	json_object *obj, *r, *v, *e;
	const char *why;

	cr_assert_eq(validate("{\"jsonrpc\":\"2.0\",\"id\":\"req-9\","
	                      "\"method\":\"nope\"}",
	                 &obj, &msg, &why),
	    0);
	r = rpc_error(msg.id, RPC_METHOD_NOT_FOUND, "Method not found");
	/* The response must hold its own reference to the id. */
	json_object_put(obj);
	cr_assert_str_eq(
	    json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN),
	    "{\"jsonrpc\":\"2.0\",\"id\":\"req-9\",\"error\":{\"code\":-32601,"
	    "\"message\":\"Method not found\"}}");
	cr_assert(json_object_object_get_ex(r, "jsonrpc", &v));
	cr_assert_str_eq(json_object_get_string(v), "2.0");
	cr_assert(json_object_object_get_ex(r, "error", &e));
	cr_assert(json_object_object_get_ex(e, "code", &v));
	cr_assert(json_object_is_type(v, json_type_int));
	cr_assert_eq(json_object_get_int(v), -32601);
	cr_assert(json_object_object_get_ex(e, "message", &v));
	cr_assert(json_object_is_type(v, json_type_string));
	cr_assert_not(json_object_object_get_ex(r, "result", NULL));
	json_object_put(r);
}

Test(jsonrpc, error_with_integer_id_zero)
{
	json_object *id = json_object_new_int(0), *r;

	r = rpc_error(id, RPC_INVALID_PARAMS, "bad");
	json_object_put(id);
	cr_assert_str_eq(
	    json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN),
	    "{\"jsonrpc\":\"2.0\",\"id\":0,\"error\":{\"code\":-32602,"
	    "\"message\":\"bad\"}}");
	json_object_put(r);
}

Test(jsonrpc, error_message_is_escaped)
{
	json_object *r, *back;
	int err;

	r = rpc_error(NULL, RPC_INTERNAL_ERROR, "a \"quoted\"\nline\\");
	back = rpc_parse(json_object_to_json_string(r),
	    strlen(json_object_to_json_string(r)), DEPTH, &err);
	cr_assert_not_null(back, "the error must be valid JSON");
	cr_assert(json_object_equal(r, back));
	json_object_put(back);
	json_object_put(r);
}

Test(jsonrpc, result_shape_and_ownership)
{
	json_object *id = json_object_new_int(17), *res, *r, *v;

	res = json_object_new_object();
	json_object_object_add(res, "tools", json_object_new_array());
	r = rpc_result(id, res); /* takes res */
	json_object_put(id);
	cr_assert_str_eq(
	    json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN),
	    "{\"jsonrpc\":\"2.0\",\"id\":17,\"result\":{\"tools\":[]}}");
	cr_assert_eq(json_object_object_length(r), 3);
	cr_assert(json_object_object_get_ex(r, "result", &v));
	cr_assert_eq(v, res);
	cr_assert_not(json_object_object_get_ex(r, "error", NULL));
	json_object_put(r);
}

Test(jsonrpc, result_with_string_id)
{
	json_object *id = json_object_new_string("x"), *r;

	r = rpc_result(id, json_object_new_object());
	json_object_put(id);
	cr_assert_str_eq(
	    json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN),
	    "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}");
	json_object_put(r);
}
