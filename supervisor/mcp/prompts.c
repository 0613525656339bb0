/*
 * MCP prompts (prompts/list, prompts/get) and argument completion
 * (completion/complete), over a registry that modules fill at startup
 * with prompts_register().  The server proper registers none: then the
 * methods are unknown (-32601) and the prompts and completions
 * capabilities are not advertised.  The conformance fixtures
 * (-Dfixtures=true) register theirs here.
 */
#include <errno.h>
#include <string.h>

#include "core.h"
#include "mcp.h"

#define PROMPTS_MAX 16
#define COMPLETIONS_MAX 100 /* values in one answer, as the spec caps */

static const struct prompt *prompts[PROMPTS_MAX];
static int nprompts;

/* Add a prompt (not copied; it must outlive the server); -1 if full. */
int
prompts_register(const struct prompt *p)
{
	if (nprompts == PROMPTS_MAX) {
		errno = ENOSPC;
		return -1;
	}
	prompts[nprompts++] = p;
	return 0;
}

int
prompts_count(void)
{
	return nprompts;
}

/* Does any prompt complete its arguments? */
int
prompts_completable(void)
{
	int i;

	for (i = 0; i < nprompts; i++)
		if (prompts[i]->complete != NULL)
			return 1;
	return 0;
}

static const struct prompt *
prompt_find(const char *name)
{
	int i;

	for (i = 0; i < nprompts; i++)
		if (strcmp(prompts[i]->name, name) == 0)
			return prompts[i];
	return NULL;
}

/* With nothing registered the methods do not exist. */
static int
prompts_none(int *code, const char **why)
{
	if (nprompts > 0)
		return 0;
	*code = RPC_METHOD_NOT_FOUND;
	*why = "method not found";
	return 1;
}

/* params.name as a string, or NULL. */
static const char *
param_name(json_object *params, const char *key)
{
	json_object *v;

	if (params != NULL && json_object_is_type(params, json_type_object) &&
	    json_object_object_get_ex(params, key, &v) &&
	    json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return NULL;
}

/* Every prompt, in one page (there are few). */
json_object *
prompts_list(struct session *sess, json_object *id, json_object *params,
    int *code, const char **why)
{
	json_object *r, *a, *o;
	int i;

	(void)sess;
	(void)id;
	(void)params;
	if (prompts_none(code, why))
		return NULL;
	a = json_object_new_array();
	for (i = 0; i < nprompts; i++) {
		o = json_object_new_object();
		json_object_object_add(
		    o, "name", json_object_new_string(prompts[i]->name));
		if (prompts[i]->title != NULL)
			json_object_object_add(o, "title",
			    json_object_new_string(prompts[i]->title));
		json_object_object_add(o, "description",
		    json_object_new_string(prompts[i]->description));
		if (prompts[i]->arguments != NULL)
			json_object_object_add(o, "arguments",
			    json_tokener_parse(prompts[i]->arguments));
		json_object_array_add(a, o);
	}
	r = json_object_new_object();
	json_object_object_add(r, "prompts", a);
	return r;
}

/*
 * The arguments of a prompts/get: an object of strings with every
 * required argument there; 0, or -1 with *why set.
 */
static int
prompt_args_ok(const struct prompt *p, json_object *args, const char **why)
{
	json_object *decl, *a, *v;
	size_t i;
	int ok = 0;

	if (args != NULL) {
		if (!json_object_is_type(args, json_type_object)) {
			*why = "arguments must be an object of strings";
			return -1;
		}
		json_object_object_foreach(args, key, val)
		{
			(void)key;
			if (!json_object_is_type(val, json_type_string)) {
				*why = "arguments must be an object of strings";
				return -1;
			}
		}
	}
	if (p->arguments == NULL)
		return 0;
	decl = json_tokener_parse(p->arguments);
	for (i = 0; i < json_object_array_length(decl); i++) {
		a = json_object_array_get_idx(decl, i);
		if (!json_object_object_get_ex(a, "required", &v) ||
		    !json_object_get_boolean(v) ||
		    !json_object_object_get_ex(a, "name", &v))
			continue;
		if (args == NULL || !json_object_object_get_ex(args,
		                        json_object_get_string(v), NULL)) {
			*why = "a required argument is missing (see "
			       "prompts/list)";
			ok = -1;
			break;
		}
	}
	json_object_put(decl);
	return ok;
}

json_object *
prompts_get(struct session *sess, json_object *id, json_object *params,
    int *code, const char **why)
{
	const struct prompt *p;
	const char *name;
	json_object *args = NULL, *r;

	(void)id;
	if (prompts_none(code, why))
		return NULL;
	if ((name = param_name(params, "name")) == NULL) {
		*code = RPC_INVALID_PARAMS;
		*why = "prompts/get needs params.name (a string)";
		return NULL;
	}
	if ((p = prompt_find(name)) == NULL) {
		*code = RPC_INVALID_PARAMS;
		*why = "unknown prompt (see prompts/list)";
		return NULL;
	}
	json_object_object_get_ex(params, "arguments", &args);
	if (prompt_args_ok(p, args, why) == -1) {
		*code = RPC_INVALID_PARAMS;
		return NULL;
	}
	if ((r = p->get(sess, args, why)) == NULL)
		*code = RPC_INVALID_PARAMS;
	return r;
}

/*
 * completion/complete for a prompt's argument (ref/prompt); resource
 * templates complete nothing here.
 */
json_object *
prompts_complete(struct session *sess, json_object *id, json_object *params,
    int *code, const char **why)
{
	const struct prompt *p;
	json_object *ref, *arg, *values, *r, *c, *some;
	const char *type, *name, *aname, *avalue;
	size_t n, i;

	(void)sess;
	(void)id;
	if (!prompts_completable()) {
		*code = RPC_METHOD_NOT_FOUND;
		*why = "method not found";
		return NULL;
	}
	*code = RPC_INVALID_PARAMS;
	if (params == NULL || !json_object_is_type(params, json_type_object) ||
	    !json_object_object_get_ex(params, "ref", &ref) ||
	    !json_object_object_get_ex(params, "argument", &arg) ||
	    (type = param_name(ref, "type")) == NULL ||
	    (aname = param_name(arg, "name")) == NULL ||
	    (avalue = param_name(arg, "value")) == NULL) {
		*why = "completion/complete needs params.ref.type and "
		       "params.argument.name and .value (strings)";
		return NULL;
	}
	if (strcmp(type, "ref/prompt") != 0) {
		*why = "only prompt arguments (ref/prompt) complete here";
		return NULL;
	}
	if ((name = param_name(ref, "name")) == NULL ||
	    (p = prompt_find(name)) == NULL) {
		*why = "unknown prompt (see prompts/list)";
		return NULL;
	}
	*code = 0;
	values = p->complete != NULL ? p->complete(aname, avalue) : NULL;
	if (values == NULL)
		values = json_object_new_array();
	n = json_object_array_length(values);
	some = json_object_new_array();
	for (i = 0; i < n && i < COMPLETIONS_MAX; i++)
		json_object_array_add(some,
		    json_object_get(json_object_array_get_idx(values, i)));
	json_object_put(values);
	c = json_object_new_object();
	json_object_object_add(c, "values", some);
	json_object_object_add(c, "total", json_object_new_int64((int64_t)n));
	json_object_object_add(
	    c, "hasMore", json_object_new_boolean(n > COMPLETIONS_MAX));
	r = json_object_new_object();
	json_object_object_add(r, "completion", c);
	return r;
}
