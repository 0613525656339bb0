/*
 * A tool's arguments checked against its own input schema, the one
 * tools/list shows: the schema is the one declaration of a tool's
 * arguments, so what clients are told and what the server accepts cannot
 * disagree.  A tool's code then sees only arguments of the declared
 * names, types and ranges; what depends on the operator (--max-exec-timeout)
 * or on more than one argument it still checks itself.
 *
 * The JSON Schema keywords the tools use are understood: type (a name or
 * a list), enum, minimum, maximum, exclusiveMinimum, minLength,
 * maxLength, pattern (POSIX extended), items, minItems, maxItems,
 * properties, required, additionalProperties (false or a schema) and
 * anyOf.  Any other keyword (description, default) asks nothing.  A JSON
 * null counts as absent, as it always has for optional arguments.
 *
 * Every argument has one plain type (a union at a property's level is
 * dropped or shown as raw JSON by some clients: LangChain's adapter, the
 * Inspector's form), and one leniency keeps the old unions' callers
 * working: a single value where an array is declared, valid as one of
 * its items, is taken as the array of that one item.
 */
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "log.h"
#include "mcp.h"
#include "xmalloc.h"

#define TOOLARGS_MAX_TOOLS 64 /* the table and the registered ones */
#define TOOLARGS_DEPTH 8 /* nesting a schema may have */
#define TOOLARGS_MAX_LIFTS 8 /* arguments of a call taken as arrays of one */

/* Schemas parsed once, by tool. */
static struct {
	const struct tool *t;
	json_object *schema;
} parsed[TOOLARGS_MAX_TOOLS];

static json_object *
toolargs_schema(const struct tool *t)
{
	size_t i;

	for (i = 0; i < TOOLARGS_MAX_TOOLS && parsed[i].t != NULL; i++)
		if (parsed[i].t == t)
			return parsed[i].schema;
	if (i == TOOLARGS_MAX_TOOLS)
		fatalx("%s: more than %d tools", __func__, TOOLARGS_MAX_TOOLS);
	parsed[i].t = t;
	if ((parsed[i].schema = json_tokener_parse(t->input_schema)) == NULL)
		fatalx("%s: the input schema of %s is not JSON", __func__,
		    t->name);
	return parsed[i].schema;
}

static json_object *
get(json_object *schema, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(schema, key, &v) ? v : NULL;
}

/* --- a schema in words, for the error messages --- */

static void describe(json_object *, char *, size_t, int);

static void
append(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

static void
describe_type(
    json_object *schema, const char *type, char *buf, size_t size, int depth)
{
	json_object *min = get(schema, "minimum"),
	            *max = get(schema, "maximum"),
	            *xmin = get(schema, "exclusiveMinimum"), *v;
	int minlen =
	    (v = get(schema, "minLength")) != NULL ? json_object_get_int(v) : 0;

	if (strcmp(type, "string") == 0)
		append(
		    buf, size, minlen > 0 ? "a non-empty string" : "a string");
	else if (strcmp(type, "integer") == 0 || strcmp(type, "number") == 0) {
		append(buf, size, "%s",
		    type[0] == 'i' ? "an integer" : "a number");
		if (min != NULL && max != NULL)
			append(buf, size, " from %s to %s",
			    json_object_get_string(min),
			    json_object_get_string(max));
		else if (min != NULL)
			append(buf, size, " of at least %s",
			    json_object_get_string(min));
		else if (max != NULL)
			append(buf, size, " of at most %s",
			    json_object_get_string(max));
		if (xmin != NULL)
			append(buf, size, " above %s",
			    json_object_get_string(xmin));
	} else if (strcmp(type, "boolean") == 0)
		append(buf, size, "true or false");
	else if (strcmp(type, "array") == 0) {
		json_object *lo = get(schema, "minItems"),
		            *hi = get(schema, "maxItems"),
		            *items = get(schema, "items");

		/* "an array of 1 to 100 items, each a non-empty string" */
		append(buf, size, "an array");
		if (lo != NULL || hi != NULL || items != NULL)
			append(buf, size, " of");
		if (lo != NULL && hi != NULL)
			append(buf, size, " %d to %d", json_object_get_int(lo),
			    json_object_get_int(hi));
		else if (lo != NULL)
			append(
			    buf, size, " at least %d", json_object_get_int(lo));
		else if (hi != NULL)
			append(
			    buf, size, " at most %d", json_object_get_int(hi));
		if (lo != NULL || hi != NULL || items != NULL)
			append(buf, size, " items");
		if (items != NULL) {
			append(buf, size, ", each ");
			describe(items, buf, size, depth + 1);
		}
	} else if (strcmp(type, "object") == 0) {
		append(buf, size, "an object");
		if ((v = get(schema, "additionalProperties")) != NULL &&
		    json_object_is_type(v, json_type_object)) {
			append(buf, size, " whose values are each ");
			describe(v, buf, size, depth + 1);
		}
	} else
		append(buf, size, "%s", type);
}

/* What a value must be, in words ("a non-empty string, or ..."). */
static void
describe(json_object *schema, char *buf, size_t size, int depth)
{
	json_object *t, *e, *any;
	size_t i, n;

	if (depth > TOOLARGS_DEPTH)
		return;
	if ((e = get(schema, "enum")) != NULL &&
	    json_object_is_type(e, json_type_array)) {
		n = json_object_array_length(e);
		append(buf, size, n == 1 ? "" : "one of ");
		for (i = 0; i < n; i++)
			append(buf, size, "%s%s", i > 0 ? ", " : "",
			    json_object_to_json_string_ext(
			        json_object_array_get_idx(e, i),
			        JSON_C_TO_STRING_PLAIN |
			            JSON_C_TO_STRING_NOSLASHESCAPE));
		return;
	}
	if ((any = get(schema, "anyOf")) != NULL &&
	    json_object_is_type(any, json_type_array)) {
		n = json_object_array_length(any);
		for (i = 0; i < n; i++) {
			if (i > 0)
				append(buf, size, ", or ");
			describe(json_object_array_get_idx(any, i), buf, size,
			    depth + 1);
		}
		return;
	}
	if ((t = get(schema, "type")) == NULL)
		append(buf, size, "any value");
	else if (json_object_is_type(t, json_type_string))
		describe_type(
		    schema, json_object_get_string(t), buf, size, depth);
	else if (json_object_is_type(t, json_type_array))
		for (i = 0; i < json_object_array_length(t); i++) {
			if (i > 0)
				append(buf, size, ", or ");
			describe_type(schema,
			    json_object_get_string(
			        json_object_array_get_idx(t, i)),
			    buf, size, depth);
		}
}

/* --- the check --- */

static int valid(json_object *, json_object *, int);

static int
type_is(json_object *v, const char *type)
{
	if (strcmp(type, "string") == 0)
		return json_object_is_type(v, json_type_string);
	if (strcmp(type, "integer") == 0)
		return json_object_is_type(v, json_type_int);
	if (strcmp(type, "number") == 0)
		return json_object_is_type(v, json_type_int) ||
		       json_object_is_type(v, json_type_double);
	if (strcmp(type, "boolean") == 0)
		return json_object_is_type(v, json_type_boolean);
	if (strcmp(type, "array") == 0)
		return json_object_is_type(v, json_type_array);
	if (strcmp(type, "object") == 0)
		return json_object_is_type(v, json_type_object);
	if (strcmp(type, "null") == 0)
		return v == NULL;
	return 1; /* a type this checker does not know asks nothing */
}

static int
type_ok(json_object *schema, json_object *v)
{
	json_object *t = get(schema, "type");
	size_t i;

	if (t == NULL)
		return 1;
	if (json_object_is_type(t, json_type_string))
		return type_is(v, json_object_get_string(t));
	if (!json_object_is_type(t, json_type_array))
		return 1;
	for (i = 0; i < json_object_array_length(t); i++)
		if (type_is(v, json_object_get_string(
		                   json_object_array_get_idx(t, i))))
			return 1;
	return 0;
}

static int
number_ok(json_object *schema, json_object *v)
{
	json_object *b;
	double d;

	if (!json_object_is_type(v, json_type_int) &&
	    !json_object_is_type(v, json_type_double))
		return 1;
	if (json_object_is_type(v, json_type_int)) {
		/* Integers compared as integers: no rounding at 2^53. */
		int64_t i = json_object_get_int64(v);

		if ((b = get(schema, "minimum")) != NULL &&
		    json_object_is_type(b, json_type_int) &&
		    i < json_object_get_int64(b))
			return 0;
		if ((b = get(schema, "maximum")) != NULL &&
		    json_object_is_type(b, json_type_int) &&
		    i > json_object_get_int64(b))
			return 0;
		if ((b = get(schema, "exclusiveMinimum")) != NULL &&
		    json_object_is_type(b, json_type_int) &&
		    i <= json_object_get_int64(b))
			return 0;
	}
	d = json_object_get_double(v);
	if ((b = get(schema, "minimum")) != NULL &&
	    d < json_object_get_double(b))
		return 0;
	if ((b = get(schema, "maximum")) != NULL &&
	    d > json_object_get_double(b))
		return 0;
	if ((b = get(schema, "exclusiveMinimum")) != NULL &&
	    d <= json_object_get_double(b))
		return 0;
	return 1;
}

/* Characters, as JSON Schema counts a length: code points. */
static size_t
chars_of(const char *s, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			n++;
	return n;
}

static int
string_ok(json_object *schema, json_object *v)
{
	json_object *b;
	const char *s;
	size_t len, chars;
	regex_t re;
	int rc;

	if (!json_object_is_type(v, json_type_string))
		return 1;
	s = json_object_get_string(v);
	len = (size_t)json_object_get_string_len(v);
	chars = chars_of(s, len);
	if ((b = get(schema, "minLength")) != NULL &&
	    chars < (size_t)json_object_get_int64(b))
		return 0;
	if ((b = get(schema, "maxLength")) != NULL &&
	    chars > (size_t)json_object_get_int64(b))
		return 0;
	if ((b = get(schema, "pattern")) != NULL) {
		/* A NUL inside never matches: regexec would stop at it. */
		if (strlen(s) != len)
			return 0;
		if (regcomp(&re, json_object_get_string(b),
		        REG_EXTENDED | REG_NOSUB) != 0)
			fatalx("%s: bad pattern %s", __func__,
			    json_object_get_string(b));
		rc = regexec(&re, s, 0, NULL, 0);
		regfree(&re);
		if (rc != 0)
			return 0;
	}
	return 1;
}

static int
array_ok(json_object *schema, json_object *v, int depth)
{
	json_object *b, *items;
	size_t i, n;

	if (!json_object_is_type(v, json_type_array))
		return 1;
	n = json_object_array_length(v);
	if ((b = get(schema, "minItems")) != NULL &&
	    n < (size_t)json_object_get_int64(b))
		return 0;
	if ((b = get(schema, "maxItems")) != NULL &&
	    n > (size_t)json_object_get_int64(b))
		return 0;
	if ((items = get(schema, "items")) != NULL)
		for (i = 0; i < n; i++)
			if (!valid(items, json_object_array_get_idx(v, i),
			        depth + 1))
				return 0;
	return 1;
}

/* A nested object's members (the arguments themselves: toolargs_check). */
static int
object_ok(json_object *schema, json_object *v, int depth)
{
	json_object *props = get(schema, "properties"),
	            *extra = get(schema, "additionalProperties"), *p;

	if (!json_object_is_type(v, json_type_object))
		return 1;
	json_object_object_foreach(v, key, val)
	{
		if (props != NULL &&
		    json_object_object_get_ex(props, key, &p)) {
			if (!valid(p, val, depth + 1))
				return 0;
		} else if (extra != NULL &&
		           json_object_is_type(extra, json_type_boolean)) {
			if (!json_object_get_boolean(extra))
				return 0;
		} else if (extra != NULL && !valid(extra, val, depth + 1))
			return 0;
	}
	return 1;
}

/* Whether v (NULL: JSON null) is one the schema allows. */
static int
valid(json_object *schema, json_object *v, int depth)
{
	json_object *e, *any;
	size_t i, n;

	if (depth > TOOLARGS_DEPTH ||
	    !json_object_is_type(schema, json_type_object))
		return 1;
	if ((any = get(schema, "anyOf")) != NULL &&
	    json_object_is_type(any, json_type_array)) {
		n = json_object_array_length(any);
		for (i = 0; i < n; i++)
			if (valid(json_object_array_get_idx(any, i), v,
			        depth + 1))
				break;
		if (i == n)
			return 0;
	}
	if ((e = get(schema, "enum")) != NULL &&
	    json_object_is_type(e, json_type_array)) {
		n = json_object_array_length(e);
		for (i = 0; i < n; i++)
			if (json_object_equal(
			        json_object_array_get_idx(e, i), v))
				break;
		if (i == n)
			return 0;
	}
	return type_ok(schema, v) && number_ok(schema, v) &&
	       string_ok(schema, v) && array_ok(schema, v, depth) &&
	       object_ok(schema, v, depth);
}

/* A single value where the schema wants an array of such: an array of one. */
static void
toolargs_lift(json_object *props, json_object *args)
{
	const char *lift[TOOLARGS_MAX_LIFTS];
	json_object *p, *items, *a;
	size_t i, n = 0;

	if (props == NULL || args == NULL)
		return;
	json_object_object_foreach(args, key, val)
	{
		if (val == NULL || json_object_is_type(val, json_type_array) ||
		    !json_object_object_get_ex(props, key, &p) ||
		    (p = get(p, "type")) == NULL ||
		    !json_object_is_type(p, json_type_string) ||
		    strcmp(json_object_get_string(p), "array") != 0)
			continue;
		json_object_object_get_ex(props, key, &p);
		if ((items = get(p, "items")) != NULL && valid(items, val, 1) &&
		    n < TOOLARGS_MAX_LIFTS)
			lift[n++] = key;
	}
	/* Not while iterating: each replaces its value, the key stays. */
	for (i = 0; i < n; i++) {
		json_object_object_get_ex(args, lift[i], &p);
		a = json_object_new_array();
		json_object_array_add(a, json_object_get(p));
		json_object_object_add(args, lift[i], a);
	}
}

/*
 * The arguments of a call to t (an object, or NULL for none): 0 if the
 * schema allows them, else -1 and *why, a message for the client (to
 * free).  Arguments are named in it cut to 40 bytes.
 */
int
toolargs_check(const struct tool *t, json_object *args, char **why)
{
	json_object *schema = toolargs_schema(t), *props, *extra, *req, *p, *v;
	char what[512];
	size_t i;

	*why = NULL;
	props = get(schema, "properties");
	extra = get(schema, "additionalProperties");
	toolargs_lift(props, args);
	if (args != NULL) {
		json_object_object_foreach(args, key, val)
		{
			if (props == NULL ||
			    !json_object_object_get_ex(props, key, &p))
				p = extra;
			if (p != NULL &&
			    json_object_is_type(p, json_type_boolean)) {
				if (json_object_get_boolean(p))
					continue;
				xasprintf(why,
				    "unknown argument \"%.40s\" (see the "
				    "tool's input schema)",
				    key);
				return -1;
			}
			if (p == NULL || val == NULL || valid(p, val, 0))
				continue;
			what[0] = '\0';
			describe(p, what, sizeof what, 0);
			xasprintf(why, "%.40s must be %s", key, what);
			return -1;
		}
	}
	if ((req = get(schema, "required")) == NULL ||
	    !json_object_is_type(req, json_type_array))
		return 0;
	for (i = 0; i < json_object_array_length(req); i++) {
		const char *name =
		    json_object_get_string(json_object_array_get_idx(req, i));

		if (args == NULL ||
		    !json_object_object_get_ex(args, name, &v) || v == NULL) {
			p = props != NULL ? get(props, name) : NULL;
			what[0] = '\0';
			if (p != NULL)
				describe(p, what, sizeof what, 0);
			xasprintf(why, "%s is required%s%s", name,
			    what[0] != '\0' ? ": " : "", what);
			return -1;
		}
	}
	return 0;
}
