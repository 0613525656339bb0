/* JSON-RPC 2.0: parsing, validation and the error codes of the spec. */
#include <string.h>

#include "supervisor.h"

/*
 * Parse one message.  NULL with *err set to RPC_PARSE_ERROR on bad JSON,
 * trailing bytes, or nesting deeper than maxdepth.
 */
json_object *
rpc_parse(const char *buf, size_t len, int maxdepth, int *err)
{
	json_tokener *tok;
	json_object *obj;
	size_t end;

	*err = 0;
	if ((tok = json_tokener_new_ex(maxdepth)) == NULL) {
		*err = RPC_INTERNAL_ERROR;
		return NULL;
	}
	json_tokener_set_flags(
	    tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	obj = json_tokener_parse_ex(tok, buf, (int)len);
	if (obj == NULL ||
	    json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(obj);
		obj = NULL;
	} else {
		end = json_tokener_get_parse_end(tok);
		while (end < len && strchr(" \t\r\n", buf[end]) != NULL)
			end++;
		if (end != len) {
			json_object_put(obj);
			obj = NULL;
		}
	}
	json_tokener_free(tok);
	if (obj == NULL)
		*err = RPC_PARSE_ERROR;
	return obj;
}

static int
rpc_id_valid(json_object *id)
{
	return json_object_is_type(id, json_type_string) ||
	       json_object_is_type(id, json_type_int);
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
		*why = "id must be a string or an integer";
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
