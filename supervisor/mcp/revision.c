/*
 * What each MCP revision the server speaks may carry.  Results are built
 * once, for the newest revision; before one leaves for a session that
 * negotiated an older revision, rev_fit() takes out the fields that
 * revision does not define and turns the content blocks it lacks into ones
 * it has.  Older SDKs validate results against their own schema and reject
 * the whole result for one unknown content type (a resource_link before
 * 2025-06-18), so this is the one place that decides.
 *
 *   2025-06-18 added: resource_link blocks, structuredContent, a tool's
 *     outputSchema, title on tools, resources, prompts and serverInfo,
 *     _meta on content blocks and resource contents, annotations'
 *     lastModified.
 *   2025-11-25 added: icons (tools, resources, templates, prompts,
 *     serverInfo), serverInfo's description and websiteUrl, a tool's
 *     execution, the tasks capability (and tasks themselves: tasks.c
 *     serves them only to sessions of this revision).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "mcp.h"
#include "xmalloc.h"

static const char *const rev_names[REV_N] = {
    [REV_2025_03_26] = "2025-03-26",
    [REV_2025_06_18] = "2025-06-18",
    [REV_2025_11_25] = "2025-11-25",
};

/* The revision a protocolVersion names; -1 when the server lacks it. */
int
rev_of(const char *version)
{
	int i;

	for (i = 0; i < REV_N; i++)
		if (strcmp(version, rev_names[i]) == 0)
			return i;
	return -1;
}

const char *
rev_name(int rev)
{
	return rev >= 0 && rev < REV_N ? rev_names[rev] : rev_names[REV_LATEST];
}

/* Drops the members of o that came with a later revision than rev. */
static void
fit_fields(json_object *o, int rev)
{
	/* Each member is defined from its revision on. */
	static const struct {
		const char *key;
		int since;
	} later[] = {
	    {"title", REV_2025_06_18},
	    {"_meta", REV_2025_06_18},
	    {"outputSchema", REV_2025_06_18},
	    {"structuredContent", REV_2025_06_18},
	    {"icons", REV_2025_11_25},
	    {"execution", REV_2025_11_25},
	    {"websiteUrl", REV_2025_11_25},
	};
	json_object *a;
	size_t i;

	if (o == NULL || !json_object_is_type(o, json_type_object))
		return;
	for (i = 0; i < sizeof later / sizeof later[0]; i++)
		if (rev < later[i].since)
			json_object_object_del(o, later[i].key);
	if (rev < REV_2025_06_18 &&
	    json_object_object_get_ex(o, "annotations", &a) &&
	    json_object_is_type(a, json_type_object))
		json_object_object_del(a, "lastModified");
}

/* A resource_link as text, for revisions without the type. */
static json_object *
link_as_text(json_object *l)
{
	json_object *t, *v;
	const char *uri = "", *name = NULL, *mime = NULL;
	char *s;

	if (json_object_object_get_ex(l, "uri", &v))
		uri = json_object_get_string(v);
	if (json_object_object_get_ex(l, "name", &v))
		name = json_object_get_string(v);
	if (json_object_object_get_ex(l, "mimeType", &v))
		mime = json_object_get_string(v);
	xasprintf(&s, "%s%s%s%s%s%s (read it with resources/read)",
	    name != NULL ? name : "", name != NULL ? ": " : "", uri,
	    mime != NULL ? " [" : "", mime != NULL ? mime : "",
	    mime != NULL ? "]" : "");
	t = json_object_new_object();
	json_object_object_add(t, "type", json_object_new_string("text"));
	json_object_object_add(t, "text", json_object_new_string(s));
	free(s);
	return t;
}

/* Fits an array of content blocks in place. */
static void
fit_content(json_object *blocks, int rev)
{
	json_object *b, *type, *res;
	size_t i;

	if (blocks == NULL || !json_object_is_type(blocks, json_type_array))
		return;
	for (i = 0; i < json_object_array_length(blocks); i++) {
		b = json_object_array_get_idx(blocks, i);
		if (!json_object_is_type(b, json_type_object))
			continue;
		if (rev < REV_2025_06_18 &&
		    json_object_object_get_ex(b, "type", &type) &&
		    strcmp(json_object_get_string(type), "resource_link") ==
		        0) {
			json_object_array_put_idx(blocks, i, link_as_text(b));
			continue;
		}
		fit_fields(b, rev);
		if (json_object_object_get_ex(b, "resource", &res))
			fit_fields(res, rev);
	}
}

/* Fits each member of an array (tools, resources, ...) in place. */
static void
fit_each(json_object *result, const char *key, int rev)
{
	json_object *a, *o, *args;
	size_t i, j;

	if (!json_object_object_get_ex(result, key, &a) ||
	    !json_object_is_type(a, json_type_array))
		return;
	for (i = 0; i < json_object_array_length(a); i++) {
		o = json_object_array_get_idx(a, i);
		fit_fields(o, rev);
		/* A prompt's arguments have titles too. */
		if (json_object_object_get_ex(o, "arguments", &args) &&
		    json_object_is_type(args, json_type_array))
			for (j = 0; j < json_object_array_length(args); j++)
				fit_fields(
				    json_object_array_get_idx(args, j), rev);
	}
}

/*
 * Fit the result of a request (method) to the session's revision, in
 * place.  Nothing to do for the newest revision.
 */
void
rev_fit(const struct session *sess, const char *method, json_object *result)
{
	json_object *v, *m;
	int rev = sess->rev;
	size_t i;

	if (rev >= REV_LATEST || result == NULL ||
	    !json_object_is_type(result, json_type_object))
		return;
	if (strcmp(method, "tools/call") == 0) {
		if (rev < REV_2025_06_18)
			json_object_object_del(result, "structuredContent");
		if (json_object_object_get_ex(result, "content", &v))
			fit_content(v, rev);
	} else if (strcmp(method, "initialize") == 0) {
		if (rev < REV_2025_11_25 &&
		    json_object_object_get_ex(result, "capabilities", &v))
			json_object_object_del(v, "tasks");
		if (json_object_object_get_ex(result, "serverInfo", &v)) {
			fit_fields(v, rev);
			if (rev < REV_2025_11_25)
				json_object_object_del(v, "description");
		}
	} else if (strcmp(method, "tools/list") == 0)
		fit_each(result, "tools", rev);
	else if (strcmp(method, "resources/list") == 0)
		fit_each(result, "resources", rev);
	else if (strcmp(method, "resources/templates/list") == 0)
		fit_each(result, "resourceTemplates", rev);
	else if (strcmp(method, "resources/read") == 0) {
		/* A page's offsets move to the result's _meta, which every
		 * revision has. */
		if (rev < REV_2025_06_18 &&
		    json_object_object_get_ex(result, "contents", &v) &&
		    json_object_is_type(v, json_type_array) &&
		    json_object_array_length(v) == 1 &&
		    json_object_object_get_ex(
		        json_object_array_get_idx(v, 0), "_meta", &m) &&
		    !json_object_object_get_ex(result, "_meta", NULL))
			json_object_object_add(
			    result, "_meta", json_object_get(m));
		fit_each(result, "contents", rev);
	} else if (strcmp(method, "prompts/list") == 0)
		fit_each(result, "prompts", rev);
	else if (strcmp(method, "prompts/get") == 0 &&
	         json_object_object_get_ex(result, "messages", &v) &&
	         json_object_is_type(v, json_type_array)) {
		for (i = 0; i < json_object_array_length(v); i++) {
			m = json_object_array_get_idx(v, i);
			if (json_object_object_get_ex(m, "content", &m)) {
				/* One block here, not an array. */
				json_object *one = json_object_new_array();

				json_object_array_add(one, json_object_get(m));
				fit_content(one, rev);
				json_object_object_add(
				    json_object_array_get_idx(v, i), "content",
				    json_object_get(
				        json_object_array_get_idx(one, 0)));
				json_object_put(one);
			}
		}
	}
}
