/*
 * The two calls that run something in a sandbox ("exec" and "code") and
 * their one kind of result, as C structs: encoded and decoded here only,
 * so that the keys of these messages (proto.h) are spelt in one place.
 *
 * Decoding checks every member's type; a member of the wrong type is
 * treated as absent (a result's) or refuses the call (a call's).  Strings
 * of a decoded struct are borrowed from the JSON object it came from.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "xmalloc.h"

/* Members, once each. */
#define K_OP "op"
#define K_COMMAND "command"
#define K_CODE "code"
#define K_LANGUAGE "language"
#define K_SESSION "session"
#define K_ARGS "args"
#define K_WORKDIR "workdir"
#define K_ENV "env"
#define K_STDIN "stdin"
#define K_STDIN_STREAM "stdin_stream"
#define K_TIMEOUT_MS "timeout_ms"
#define K_OUTPUT_CAP "output_cap"
#define K_TOKEN "token"
#define K_LOG_AS "log_as"
#define K_LOG_STDOUT "log_stdout"
#define K_PROBE "probe"

static void
add_str(json_object *o, const char *key, const char *s)
{
	if (s != NULL)
		json_object_object_add(o, key, json_object_new_string(s));
}

static void
add_bool(json_object *o, const char *key, int b)
{
	json_object_object_add(o, key, json_object_new_boolean(b));
}

static void
add_int(json_object *o, const char *key, long long n)
{
	json_object_object_add(o, key, json_object_new_int64(n));
}

/* A member of type t, or NULL (absent, or of another type). */
static json_object *
get(json_object *o, const char *key, json_type t)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, t))
		return NULL;
	return v;
}

static const char *
get_str(json_object *o, const char *key)
{
	json_object *v = get(o, key, json_type_string);

	return v != NULL ? json_object_get_string(v) : NULL;
}

static long long
get_int(json_object *o, const char *key, long long def)
{
	json_object *v = get(o, key, json_type_int);

	return v != NULL ? json_object_get_int64(v) : def;
}

static int
get_bool(json_object *o, const char *key, int def)
{
	json_object *v = get(o, key, json_type_boolean);

	return v != NULL ? json_object_get_boolean(v) : def;
}

/* A call as a PROTO_CALL payload (a new object). */
json_object *
proto_run_encode(const struct proto_run *r)
{
	json_object *o, *a;
	size_t i;

	o = json_object_new_object();
	if (r->kind == PROTO_RUN_CODE) {
		add_str(o, K_OP, PROTO_OP_CODE);
		add_str(o, K_LANGUAGE, r->language);
		add_str(o, K_CODE, r->command);
		add_bool(o, K_SESSION, r->session);
	} else {
		add_str(o, K_OP, PROTO_OP_EXEC);
		add_str(o, K_COMMAND, r->command);
	}
	if (r->args != NULL) {
		a = json_object_new_array();
		for (i = 0; r->args[i] != NULL; i++)
			json_object_array_add(
			    a, json_object_new_string(r->args[i]));
		json_object_object_add(o, K_ARGS, a);
	}
	if (r->stdin_stream)
		add_bool(o, K_STDIN_STREAM, 1);
	add_str(o, K_LOG_AS, r->log_as);
	if (!r->log_stdout)
		add_bool(o, K_LOG_STDOUT, 0);
	if (r->probe)
		add_bool(o, K_PROBE, 1);
	add_str(o, K_WORKDIR, r->workdir);
	if (r->env != NULL)
		json_object_object_add(o, K_ENV, json_object_get(r->env));
	add_str(o, K_STDIN, r->stdin_text);
	add_int(o, K_TIMEOUT_MS, r->timeout_ms);
	add_int(o, K_OUTPUT_CAP, r->output_cap);
	add_str(o, K_TOKEN, r->token);
	return o;
}

/* The operation of a PROTO_CALL payload, or NULL. */
const char *
proto_run_op(json_object *o)
{
	return get_str(o, K_OP);
}

/* Mark an encoded exec with the token that its processes carry. */
void
proto_run_set_token(json_object *o, const char *token)
{
	json_object_object_add(o, K_TOKEN, json_object_new_string(token));
}

/*
 * A PROTO_CALL payload of op "exec" or "code" into r (0), or -1 with
 * *why set.  output_cap is def_cap when absent; r->args, when not NULL,
 * is allocated: proto_run_clear() frees it.
 */
int
proto_run_decode(
    json_object *o, struct proto_run *r, long long def_cap, const char **why)
{
	json_object *v, *e;
	const char *op, **args;
	size_t i, n;

	memset(r, 0, sizeof *r);
	*why = NULL;
	if ((op = get_str(o, K_OP)) != NULL && strcmp(op, PROTO_OP_CODE) == 0) {
		r->kind = PROTO_RUN_CODE;
		if ((v = get(o, K_CODE, json_type_string)) != NULL) {
			r->command = json_object_get_string(v);
			r->command_len = (size_t)json_object_get_string_len(v);
		}
		r->language = get_str(o, K_LANGUAGE);
		r->session = get_bool(o, K_SESSION, 1);
		if (r->command == NULL || r->language == NULL) {
			*why = "code and a session language are needed";
			return -1;
		}
	} else if (op != NULL && strcmp(op, PROTO_OP_EXEC) == 0) {
		r->kind = PROTO_RUN_EXEC;
		if ((v = get(o, K_COMMAND, json_type_string)) == NULL) {
			*why = "no command";
			return -1;
		}
		r->command = json_object_get_string(v);
		r->command_len = (size_t)json_object_get_string_len(v);
	} else {
		*why = "not a run";
		return -1;
	}
	if ((v = get(o, K_ARGS, json_type_array)) != NULL) {
		n = json_object_array_length(v);
		r->args = args = xcalloc(n + 1, sizeof *args);
		for (i = 0; i < n; i++) {
			e = json_object_array_get_idx(v, i);
			if (!json_object_is_type(e, json_type_string)) {
				proto_run_clear(r);
				*why = "an argument that is not a string";
				return -1;
			}
			args[i] = json_object_get_string(e);
		}
	}
	if ((r->env = get(o, K_ENV, json_type_object)) != NULL) {
		json_object_object_foreach(r->env, key, val)
		{
			(void)key;
			if (!json_object_is_type(val, json_type_string)) {
				proto_run_clear(r);
				*why = "an environment value that is not a "
				       "string";
				return -1;
			}
		}
	}
	r->workdir = get_str(o, K_WORKDIR);
	if ((v = get(o, K_STDIN, json_type_string)) != NULL) {
		r->stdin_text = json_object_get_string(v);
		r->stdin_len = (size_t)json_object_get_string_len(v);
	}
	r->stdin_stream = get_bool(o, K_STDIN_STREAM, 0);
	r->timeout_ms = get_int(o, K_TIMEOUT_MS, 0);
	r->output_cap = get_int(o, K_OUTPUT_CAP, def_cap);
	r->token = get_str(o, K_TOKEN);
	r->log_as = get_str(o, K_LOG_AS);
	r->log_stdout = get_bool(o, K_LOG_STDOUT, 1);
	r->probe = get_bool(o, K_PROBE, 0);
	return 0;
}

void
proto_run_clear(struct proto_run *r)
{
	free((void *)r->args);
	r->args = NULL;
}

/* The members of a result, in the order results give them, each with
 * its bit of r->has. */
enum { T_INT, T_BOOL, T_DOUBLE };
static const struct {
	const char *key;
	unsigned int bit;
	int type;
	size_t off;
} members[] = {
#define M(k, b, t, f)                                                          \
	{                                                                      \
		k, b, t, offsetof(struct proto_result, f)                      \
	}
    M("exit_code", PROTO_R_EXIT_CODE, T_INT, exit_code),
    M("duration_ms", PROTO_R_DURATION, T_INT, duration_ms),
    M("timed_out", PROTO_R_TIMED_OUT, T_BOOL, timed_out),
    M("cancelled", PROTO_R_CANCELLED, T_BOOL, cancelled),
    M("oom_killed", PROTO_R_OOM, T_BOOL, oom_killed),
    M("truncated", PROTO_R_TRUNCATED, T_BOOL, truncated),
    M("signal", PROTO_R_SIGNAL, T_INT, signal),
    M("stdout_bytes", PROTO_R_BYTES, T_INT, stdout_bytes),
    M("stderr_bytes", PROTO_R_BYTES, T_INT, stderr_bytes),
    M("session_lost", PROTO_R_SESSION_LOST, T_BOOL, session_lost),
    M("cpu_time_ms", PROTO_R_CPU, T_DOUBLE, cpu_time_ms),
    M("memory_peak_bytes", PROTO_R_MEMORY, T_INT, memory_peak_bytes),
    M("dropped_stdout_bytes", PROTO_R_DROPPED, T_INT, dropped_stdout_bytes),
    M("dropped_stderr_bytes", PROTO_R_DROPPED, T_INT, dropped_stderr_bytes),
    M("result_cut", PROTO_R_CUT, T_BOOL, result_cut),
    M("command_cpu_ms", PROTO_R_USAGE, T_DOUBLE, command_cpu_ms),
    M("command_max_rss_bytes", PROTO_R_USAGE, T_INT, command_max_rss_bytes),
    M("agent", PROTO_R_AGENT, T_BOOL, agent),
    M("egress_cut", PROTO_R_EGRESS_CUT, T_BOOL, egress_cut),
#undef M
};
#define NMEMBERS (sizeof members / sizeof members[0])
#define K_ERROR "error"
#define K_AGENT_NOTE "agent_note"
#define K_IMAGES "images"
#define K_EGRESS "egress"

static void *
member(const struct proto_result *r, size_t i)
{
	return (char *)r + members[i].off;
}

/*
 * Add the members of r->has to o, in results' order (exit_code among
 * them, when its bit is set); then the error, if any.
 */
void
proto_result_add(const struct proto_result *r, json_object *o)
{
	char buf[32];
	size_t i;

	for (i = 0; i < NMEMBERS; i++) {
		if (!(r->has & members[i].bit))
			continue;
		switch (members[i].type) {
		case T_BOOL:
			add_bool(o, members[i].key, *(int *)member(r, i));
			break;
		case T_DOUBLE:
			/* Milliseconds to the microsecond, as measured. */
			snprintf(
			    buf, sizeof buf, "%.3f", *(double *)member(r, i));
			json_object_object_add(o, members[i].key,
			    json_object_new_double_s(
			        *(double *)member(r, i), buf));
			break;
		default:
			add_int(o, members[i].key, *(long long *)member(r, i));
		}
	}
	add_str(o, K_AGENT_NOTE, r->agent_note);
	if (r->images != NULL)
		json_object_object_add(o, K_IMAGES, json_object_get(r->images));
	if (r->egress != NULL)
		json_object_object_add(o, K_EGRESS, json_object_get(r->egress));
	add_str(o, K_ERROR, r->error);
}

/* A result as a PROTO_RESULT payload (a new object). */
json_object *
proto_result_encode(const struct proto_result *r)
{
	json_object *o = json_object_new_object();

	proto_result_add(r, o);
	return o;
}

/*
 * A PROTO_RESULT payload into r: each member that is there with its type
 * (its bit set in r->has; cpu_time_ms may be an integer); the others 0,
 * exit_code -1.  r->error is borrowed from o.
 */
void
proto_result_decode(json_object *o, struct proto_result *r)
{
	json_object *v;
	size_t i;

	memset(r, 0, sizeof *r);
	r->exit_code = -1;
	for (i = 0; i < NMEMBERS; i++) {
		if (!json_object_object_get_ex(o, members[i].key, &v))
			continue;
		switch (members[i].type) {
		case T_BOOL:
			if (!json_object_is_type(v, json_type_boolean))
				continue;
			*(int *)member(r, i) = json_object_get_boolean(v);
			break;
		case T_DOUBLE:
			if (!json_object_is_type(v, json_type_double) &&
			    !json_object_is_type(v, json_type_int))
				continue;
			*(double *)member(r, i) = json_object_get_double(v);
			break;
		default:
			if (!json_object_is_type(v, json_type_int))
				continue;
			*(long long *)member(r, i) = json_object_get_int64(v);
		}
		r->has |= members[i].bit;
	}
	r->agent_note = get_str(o, K_AGENT_NOTE);
	r->images = get(o, K_IMAGES, json_type_array);
	r->egress = get(o, K_EGRESS, json_type_array);
	r->error = get_str(o, K_ERROR);
}
