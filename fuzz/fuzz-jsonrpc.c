/*
 * Fuzz the JSON-RPC layer (supervisor/mcp/rpc.c): rpc_parse() on any
 * bytes, rpc_validate() on what parses, and the error or result envelope
 * the server would answer with.  A message nested within a small depth
 * must also parse within a larger one.
 *
 * With FUZZ_STRICT set, also require that what rpc_parse() accepts
 * survives a round trip: serialized by json-c as the server does and
 * parsed again, it must still be accepted and equal (what the server
 * writes must be what it would itself read).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "mcp.h"

#define DEPTH 64 /* the --max-json-depth default */
#define SHALLOW 3

int LLVMFuzzerInitialize(int *, char ***);
int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int strict;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{

	(void)argc;
	(void)argv;
	strict = fuzz_env_strict();
	return 0;
}

/* Serialize an answer as the transports do; it must not be empty. */
static void
serialize(json_object *msg)
{
	const char *s;
	size_t len;

	s = json_object_to_json_string_length(
	    msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	fuzz_check(s != NULL && len > 0, "answer does not serialize");
	json_object_put(msg);
}

static void
round_trip(json_object *obj)
{
	json_object *again;
	const char *s;
	size_t len;
	int err;

	s = json_object_to_json_string_length(
	    obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	again = rpc_parse(s, len, DEPTH, &err);
	if (err != 0)
		fprintf(stderr, "fuzz-jsonrpc: re-parse of %.200s failed\n", s);
	fuzz_check(err == 0, "serialized message no longer parses");
	fuzz_check(
	    json_object_equal(obj, again), "round trip changed the value");
	json_object_put(again);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data, *why = NULL;
	json_object *obj, *shallow;
	struct rpc_msg m;
	int err, err2, code;

	obj = rpc_parse(buf, size, DEPTH, &err);
	fuzz_check(obj == NULL || err == 0, "object with an error");
	fuzz_check(err == 0 || err == RPC_PARSE_ERROR, "unexpected error code");

	shallow = rpc_parse(buf, size, SHALLOW, &err2);
	if (err2 == 0)
		fuzz_check(err == 0, "accepted shallow, rejected deep");
	json_object_put(shallow);

	if (err != 0) {
		serialize(rpc_error(NULL, err, "parse error"));
		return 0;
	}
	if (strict && obj != NULL)
		round_trip(obj);

	/* obj NULL is the JSON value null: not a message either. */
	code = rpc_validate(obj, &m, &why);
	if (code != 0) {
		fuzz_check(
		    code == RPC_INVALID_REQUEST, "unexpected validate code");
		fuzz_check(why != NULL, "error without a reason");
		serialize(rpc_error(m.id, code, why));
	} else {
		fuzz_check(obj != NULL, "null validated");
		if (m.kind == RPC_REQUEST || m.kind == RPC_NOTIFICATION)
			fuzz_check(
			    m.method != NULL, "request without a method");
		if (m.kind != RPC_NOTIFICATION)
			fuzz_check(
			    m.id != NULL, "request or response without id");
		if (m.params != NULL)
			fuzz_check(
			    json_object_is_type(m.params, json_type_object) ||
			        json_object_is_type(m.params, json_type_array),
			    "params neither object nor array");
		serialize(rpc_result(m.id, json_object_new_object()));
	}
	json_object_put(obj);
	return 0;
}
