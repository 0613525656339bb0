/* JSON-RPC 2.0: parsing, validation and the error codes of the spec. */
#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "core.h"
#include "mcp.h"
#include "utf8.h"

/*
 * What json-c's strict mode still lets through: single quotes, NaN and
 * Infinity, "01", "1.", comments, trailing commas, raw control characters
 * inside strings.  A lexical pass over the text rejects those; json-c
 * then does the parsing.
 */
static int
json_number_ok(const char *p, size_t len, size_t *used)
{
	size_t i = 0;

	if (i < len && p[i] == '-')
		i++;
	if (i < len && p[i] == '0')
		i++;
	else if (i < len && p[i] >= '1' && p[i] <= '9')
		while (i < len && p[i] >= '0' && p[i] <= '9')
			i++;
	else
		return 0;
	if (i < len && p[i] == '.') {
		if (++i >= len || p[i] < '0' || p[i] > '9')
			return 0;
		while (i < len && p[i] >= '0' && p[i] <= '9')
			i++;
	}
	if (i < len && (p[i] == 'e' || p[i] == 'E')) {
		if (++i < len && (p[i] == '+' || p[i] == '-'))
			i++;
		if (i >= len || p[i] < '0' || p[i] > '9')
			return 0;
		while (i < len && p[i] >= '0' && p[i] <= '9')
			i++;
	}
	if (i < len && ((p[i] >= '0' && p[i] <= '9') || p[i] == '.'))
		return 0;
	*used = i;
	return 1;
}

static int
json_lex_ok(const char *p, size_t len)
{
	static const char *const words[] = {"true", "false", "null"};
	size_t i = 0, j, n, w, values = 0, containers = 0;
	char last = 0; /* the last structural character or value */

	while (i < len) {
		/* What json-c makes of a message is hundreds of bytes a value
		 * (an object's table more): their number is bounded, so that
		 * one message of --max-line is not gigabytes. */
		if (values > RPC_MAX_VALUES || containers > RPC_MAX_CONTAINERS)
			return 0;
		switch (p[i]) {
		case ' ':
		case '\t':
		case '\r':
		case '\n':
			i++;
			continue;
		case '}':
		case ']':
			if (last == ',')
				return 0;
			/* FALLTHROUGH */
		case '{':
		case '[':
			containers++;
			values++;
			last = p[i++];
			continue;
		case ':':
		case ',':
			last = p[i++];
			continue;
		case '"':
			for (i++; i < len && p[i] != '"'; i++) {
				if ((unsigned char)p[i] < 0x20)
					return 0;
				if (p[i] != '\\')
					continue;
				if (++i >= len ||
				    strchr("\"\\/bfnrtu", p[i]) == NULL)
					return 0;
				if (p[i] == 'u') {
					for (j = 1; j <= 4; j++)
						if (i + j >= len ||
						    !isxdigit((
						        unsigned char)p[i + j]))
							return 0;
					i += 4;
				}
			}
			if (i >= len)
				return 0;
			i++;
			last = 'v';
			values++;
			continue;
		}
		if (p[i] == '-' || (p[i] >= '0' && p[i] <= '9')) {
			if (!json_number_ok(p + i, len - i, &n))
				return 0;
			i += n;
			last = 'v';
			values++;
			continue;
		}
		for (w = 0; w < 3; w++) {
			n = strlen(words[w]);
			if (len - i >= n && memcmp(p + i, words[w], n) == 0)
				break;
		}
		if (w == 3)
			return 0;
		i += n;
		last = 'v';
		values++;
	}
	return values <= RPC_MAX_VALUES && containers <= RPC_MAX_CONTAINERS;
}

/*
 * Parse one message.  NULL with *err set to RPC_PARSE_ERROR on text that
 * is not JSON (or not UTF-8, or nested deeper than maxdepth, or of more
 * than RPC_MAX_VALUES values or RPC_MAX_CONTAINERS objects and arrays);
 * NULL with *err 0 for the JSON value null.
 */
json_object *
rpc_parse(const char *buf, size_t len, int maxdepth, int *err)
{
	enum json_tokener_error jerr;
	json_tokener *tok;
	json_object *obj;
	size_t end;

	*err = RPC_PARSE_ERROR;
	if (!utf8_valid(buf, len) || !json_lex_ok(buf, len))
		return NULL;
	if ((tok = json_tokener_new_ex(maxdepth)) == NULL) {
		*err = RPC_INTERNAL_ERROR;
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	obj = json_tokener_parse_ex(tok, buf, (int)len);
	end = json_tokener_get_parse_end(tok);
	if ((jerr = json_tokener_get_error(tok)) == json_tokener_continue) {
		/* A bare number or word at the very end: finish it. */
		obj = json_tokener_parse_ex(tok, " ", 1);
		jerr = json_tokener_get_error(tok);
		end = len;
	}
	if (jerr == json_tokener_success) {
		while (end < len && buf[end] != '\0' &&
		       strchr(" \t\r\n", buf[end]) != NULL)
			end++;
		if (end == len)
			*err = 0;
	}
	json_tokener_free(tok);
	if (*err != 0) {
		json_object_put(obj);
		obj = NULL;
	}
	return obj;
}

/*
 * A string, or an integer that survived parsing: json-c clamps what does
 * not fit in 64 bits, and an answer must carry the id that was sent.
 */
static int
rpc_id_valid(json_object *id)
{
	int64_t v;

	if (json_object_is_type(id, json_type_string))
		return 1;
	if (!json_object_is_type(id, json_type_int))
		return 0;
	v = json_object_get_int64(id);
	return v != INT64_MAX && v != INT64_MIN;
}

/*
 * Classify a parsed message.  Returns 0, or an error code with *why set;
 * msg->id is set whenever the message had a usable id.
 */
int
rpc_validate(json_object *obj, struct rpc_msg *msg, const char **why)
{
	json_object *v, *id = NULL, *method;
	int has_id;

	memset(msg, 0, sizeof *msg);
	if (!json_object_is_type(obj, json_type_object)) {
		*why = json_object_is_type(obj, json_type_array)
		           ? "batches are not supported"
		           : "a message must be a JSON object";
		return RPC_INVALID_REQUEST;
	}
	has_id = json_object_object_get_ex(obj, "id", &id);
	if (has_id && rpc_id_valid(id))
		msg->id = id;
	if (!json_object_object_get_ex(obj, "jsonrpc", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), "2.0") != 0) {
		*why = "jsonrpc must be \"2.0\"";
		return RPC_INVALID_REQUEST;
	}
	if (has_id && !rpc_id_valid(id)) {
		*why = "id must be a string or an integer (of 64 bits)";
		return RPC_INVALID_REQUEST;
	}
	if (!json_object_object_get_ex(obj, "method", &method)) {
		if (has_id &&
		    (json_object_object_get_ex(obj, "result", &v) ||
		        json_object_object_get_ex(obj, "error", &v))) {
			msg->kind = RPC_RESPONSE;
			return 0;
		}
		*why = "method is missing";
		return RPC_INVALID_REQUEST;
	}
	if (!json_object_is_type(method, json_type_string)) {
		*why = "method must be a string";
		return RPC_INVALID_REQUEST;
	}
	msg->method = json_object_get_string(method);
	msg->kind = has_id ? RPC_REQUEST : RPC_NOTIFICATION;
	if (json_object_object_get_ex(obj, "params", &v)) {
		if (!json_object_is_type(v, json_type_object) &&
		    !json_object_is_type(v, json_type_array)) {
			*why = "params must be an object or an array";
			return RPC_INVALID_REQUEST;
		}
		msg->params = v;
	}
	return 0;
}

static json_object *
rpc_envelope(json_object *id)
{
	json_object *r;

	r = json_object_new_object();
	json_object_object_add(r, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(
	    r, "id", id != NULL ? json_object_get(id) : NULL);
	return r;
}

/* An error response; id NULL gives "id": null. */
json_object *
rpc_error(json_object *id, int code, const char *message)
{
	json_object *r, *e;

	r = rpc_envelope(id);
	e = json_object_new_object();
	json_object_object_add(e, "code", json_object_new_int(code));
	json_object_object_add(e, "message", json_object_new_string(message));
	json_object_object_add(r, "error", e);
	return r;
}

/* A result response; takes ownership of result. */
json_object *
rpc_result(json_object *id, json_object *result)
{
	json_object *r;

	r = rpc_envelope(id);
	json_object_object_add(r, "result", result);
	return r;
}
