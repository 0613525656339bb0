/*
 * Fuzz the decoders of the exec and code calls and of their results
 * (proto/run.c): a result comes from a worker, whose output sandbox code
 * shapes, and a call reaches the worker from the supervisor.
 *
 * Input: a JSON text.  When it parses to an object, both decoders run on
 * it: a call is accepted or refused with a reason, never half-made; what
 * a decoded call or result encodes to decodes to the same again.
 */
#include <stdint.h>
#include <string.h>

#include <json-c/json.h>

#include "fuzz.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int
same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) ||
	       (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void
check_run(json_object *o)
{
	struct proto_run r, again;
	json_object *enc;
	const char *why;
	size_t i;

	if (proto_run_decode(o, &r, 7, &why) == -1) {
		fuzz_check(why != NULL, "a call refused without a reason");
		fuzz_check(r.args == NULL, "a refused call kept its arguments");
		return;
	}
	fuzz_check(r.command != NULL, "a call without its command");
	fuzz_check(r.kind != PROTO_RUN_CODE || r.language != NULL,
	    "a code call without its language");
	enc = proto_run_encode(&r);
	fuzz_check(proto_run_decode(enc, &again, 7, &why) == 0,
	    "an encoded call refused");
	fuzz_check(again.kind == r.kind && same_str(again.command, r.command) &&
	               same_str(again.language, r.language) &&
	               same_str(again.workdir, r.workdir) &&
	               same_str(again.log_as, r.log_as) &&
	               again.timeout_ms == r.timeout_ms &&
	               again.output_cap == r.output_cap &&
	               again.log_stdout == r.log_stdout &&
	               again.probe == r.probe &&
	               again.stdin_stream == r.stdin_stream,
	    "a call changed on its way through encode and decode");
	for (i = 0; r.args != NULL && r.args[i] != NULL; i++)
		fuzz_check(
		    again.args != NULL && same_str(again.args[i], r.args[i]),
		    "an argument changed");
	proto_run_clear(&again);
	json_object_put(enc);
	proto_run_clear(&r);
}

static void
check_result(json_object *o)
{
	struct proto_result r, again;
	json_object *enc;

	proto_result_decode(o, &r);
	fuzz_check((r.has & PROTO_R_EXIT_CODE) || r.exit_code == -1,
	    "an exit code that was not there");
	enc = proto_result_encode(&r);
	proto_result_decode(enc, &again);
	fuzz_check(again.has == r.has, "a result's members changed");
	fuzz_check(again.exit_code == r.exit_code &&
	               again.stdout_bytes == r.stdout_bytes &&
	               again.timed_out == r.timed_out &&
	               same_str(again.error, r.error),
	    "a result changed on its way through encode and decode");
	json_object_put(enc);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_tokener *tok;
	json_object *o;

	if ((tok = json_tokener_new_ex(32)) == NULL)
		return 0;
	o = json_tokener_parse_ex(tok, (const char *)data, (int)size);
	json_tokener_free(tok);
	if (o != NULL && json_object_is_type(o, json_type_object)) {
		check_run(o);
		check_result(o);
	}
	json_object_put(o);
	return 0;
}
