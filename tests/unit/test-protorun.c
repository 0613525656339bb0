/* The exec and code calls and their results, through proto/run.c. */
#include <string.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "proto.h"

static json_object *
parse(const char *text)
{
	json_object *o = json_tokener_parse(text);

	cr_assert_not_null(o, "not JSON: %s", text);
	return o;
}

Test(protorun, exec_round_trip)
{
	static const char *const args[] = {"/app/x", "two words", NULL};
	struct proto_run in, out;
	json_object *o, *env;
	const char *why;

	env = parse("{\"A\":\"1\",\"B\":\"two\"}");
	memset(&in, 0, sizeof in);
	in.kind = PROTO_RUN_EXEC;
	in.command = "echo \"$1\"";
	in.args = args;
	in.workdir = "/app";
	in.env = env;
	in.stdin_text = "input";
	in.timeout_ms = 1500;
	in.output_cap = 4096;
	in.log_as = "read_file /app/x";
	in.log_stdout = 0;
	in.probe = 1;
	o = proto_run_encode(&in);
	proto_run_set_token(o, "0123456789abcdef");
	cr_assert_str_eq(proto_run_op(o), PROTO_OP_EXEC);

	cr_assert_eq(proto_run_decode(o, &out, 77, &why), 0, "%s", why);
	cr_expect_eq(out.kind, PROTO_RUN_EXEC);
	cr_expect_str_eq(out.command, in.command);
	cr_assert_not_null(out.args);
	cr_expect_str_eq(out.args[0], "/app/x");
	cr_expect_str_eq(out.args[1], "two words");
	cr_expect_null(out.args[2]);
	cr_expect_str_eq(out.workdir, "/app");
	cr_expect_str_eq(
	    json_object_get_string(json_object_object_get(out.env, "B")),
	    "two");
	cr_expect_str_eq(out.stdin_text, "input");
	cr_expect_eq(out.stdin_stream, 0);
	cr_expect_eq(out.timeout_ms, 1500);
	cr_expect_eq(out.output_cap, 4096);
	cr_expect_str_eq(out.token, "0123456789abcdef");
	cr_expect_str_eq(out.log_as, "read_file /app/x");
	cr_expect_eq(out.log_stdout, 0);
	cr_expect_eq(out.probe, 1);
	proto_run_clear(&out);
	cr_expect_null(out.args);
	json_object_put(o);
	json_object_put(env);
}

Test(protorun, code_round_trip_and_defaults)
{
	struct proto_run in, out;
	json_object *o;
	const char *why;

	memset(&in, 0, sizeof in);
	in.kind = PROTO_RUN_CODE;
	in.command = "print(1)";
	in.language = "python";
	in.session = 0;
	in.log_stdout = 1;
	o = proto_run_encode(&in);
	cr_assert_str_eq(proto_run_op(o), PROTO_OP_CODE);
	json_object_object_del(o, "output_cap"); /* absent: the default */
	cr_assert_eq(proto_run_decode(o, &out, 77, &why), 0, "%s", why);
	cr_expect_eq(out.kind, PROTO_RUN_CODE);
	cr_expect_str_eq(out.command, "print(1)");
	cr_expect_str_eq(out.language, "python");
	cr_expect_eq(out.session, 0);
	cr_expect_eq(out.output_cap, 77);
	cr_expect_null(out.args);
	cr_expect_null(out.workdir);
	cr_expect_eq(out.log_stdout, 1);
	json_object_put(o);

	/* A code call that does not say: the long-lived session. */
	o = parse("{\"op\":\"code\",\"code\":\"1\",\"language\":\"python\"}");
	cr_assert_eq(proto_run_decode(o, &out, 0, &why), 0);
	cr_expect_eq(out.session, 1);
	json_object_put(o);
}

/* Whatever the other side sends, a decode never crashes: a call of the
 * wrong shape is refused with a reason, and nothing is left allocated. */
Test(protorun, bad_calls_are_refused)
{
	static const char *const bad[] = {
	    "{}",
	    "{\"op\":7}",
	    "{\"op\":\"kill\"}",
	    "{\"op\":\"exec\"}",
	    "{\"op\":\"exec\",\"command\":[\"ls\"]}",
	    "{\"op\":\"exec\",\"command\":\"ls\",\"args\":[\"a\",1]}",
	    "{\"op\":\"exec\",\"command\":\"ls\",\"env\":{\"A\":{}}}",
	    "{\"op\":\"code\",\"code\":\"1\"}",
	    "{\"op\":\"code\",\"language\":\"python\"}",
	};
	struct proto_run r;
	const char *why;
	json_object *o;
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		o = parse(bad[i]);
		cr_expect_eq(
		    proto_run_decode(o, &r, 0, &why), -1, "%s", bad[i]);
		cr_expect_not_null(why, "%s", bad[i]);
		cr_expect_null(r.args, "%s", bad[i]);
		json_object_put(o);
	}
}

/* Members of the wrong type are not there; the rest are taken. */
Test(protorun, result_members_typed)
{
	struct proto_result r;
	json_object *o;

	o = parse("{\"exit_code\":\"3\",\"timed_out\":1,\"cancelled\":true,"
	          "\"stdout_bytes\":10,\"stderr_bytes\":2,\"cpu_time_ms\":12,"
	          "\"memory_peak_bytes\":1.5,\"error\":{\"x\":1}}");
	proto_result_decode(o, &r);
	cr_expect_eq(r.exit_code, -1);
	cr_expect_eq(r.has & PROTO_R_EXIT_CODE, 0);
	cr_expect_eq(r.has & PROTO_R_TIMED_OUT, 0);
	cr_expect_eq(r.timed_out, 0);
	cr_expect(r.has & PROTO_R_CANCELLED);
	cr_expect_eq(r.cancelled, 1);
	cr_expect(r.has & PROTO_R_BYTES);
	cr_expect_eq(r.stdout_bytes, 10);
	cr_expect(r.has & PROTO_R_CPU);
	cr_expect_float_eq(r.cpu_time_ms, 12.0, 1e-9);
	cr_expect_eq(r.has & PROTO_R_MEMORY, 0);
	cr_expect_null(r.error);
	json_object_put(o);
}

/* A result says exactly what its bits say, in results' order, and
 * reads back the same. */
Test(protorun, result_round_trip)
{
	struct proto_result in, out;
	json_object *o;

	memset(&in, 0, sizeof in);
	in.has = PROTO_R_EXEC | PROTO_R_CPU;
	in.exit_code = 137;
	in.signal = 9;
	in.oom_killed = 1;
	in.duration_ms = 42;
	in.stdout_bytes = 5;
	in.stderr_bytes = 6;
	in.cpu_time_ms = 1.25;
	in.session_lost = 1; /* not among the bits: not sent */
	o = proto_result_encode(&in);
	cr_expect_str_eq(
	    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
	    "{\"exit_code\":137,\"duration_ms\":42,\"timed_out\":false,"
	    "\"cancelled\":false,\"oom_killed\":true,\"truncated\":false,"
	    "\"signal\":9,\"stdout_bytes\":5,\"stderr_bytes\":6,"
	    "\"cpu_time_ms\":1.250}");
	proto_result_decode(o, &out);
	cr_expect_eq(out.has, in.has);
	cr_expect_eq(out.exit_code, 137);
	cr_expect_eq(out.signal, 9);
	cr_expect_eq(out.oom_killed, 1);
	cr_expect_eq(out.session_lost, 0);
	json_object_put(o);

	/* A call that could not run: its error only. */
	memset(&in, 0, sizeof in);
	in.error = "bad call: no command";
	o = proto_result_encode(&in);
	cr_expect_str_eq(
	    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
	    "{\"error\":\"bad call: no command\"}");
	proto_result_decode(o, &out);
	cr_expect_eq(out.has, 0);
	cr_expect_eq(out.exit_code, -1);
	cr_expect_str_eq(out.error, "bad call: no command");
	json_object_put(o);
}
