/*
 * The fixtures of the official MCP conformance suite
 * (@modelcontextprotocol/conformance, tests/conformance/), registered on
 * top of the real protocol layer: the test_* tools, the test:// resources
 * and template, and the test_* prompts with completion, each exactly as
 * the suite's scenarios describe them.
 *
 * Test-only.  This file is compiled only with -Dfixtures=true, and only
 * into mcp-sandboxd-fixtures, which is never installed; main() calls
 * fixtures_init() only in that binary.  The real mcp-sandboxd registers
 * nothing of this.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "core.h"
#include "log.h"
#include "mcp.h"
#include "resources.h"
#include "supervisor.h"
#include "xmalloc.h"

#define FX_STEP_MS 50 /* the suite's "~50ms" between steps */
#define FX_DROP_MS 100 /* test_reconnection: the stream is cut then */
#define FX_RESUME_MS 600 /* ... and the answer comes then */

#define MCP_LEVEL_INFO 6 /* "info" in mcp.c's syslog order */

/* A 1x1 PNG and a short 8 kHz mono WAV. */
static const char png_b64[] =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMB"
    "AQDJ/pLvAAAAAElFTkSuQmCC";
static const char wav_b64[] =
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAg"
    "A==";

static const char no_args[] = "{\"type\":\"object\",\"properties\":{}}";

/* --- content and results --- */

static json_object *
fx_text(const char *text)
{
	json_object *o;

	o = json_object_new_object();
	json_object_object_add(o, "type", json_object_new_string("text"));
	json_object_object_add(o, "text", json_object_new_string(text));
	return o;
}

/* An image or audio content item. */
static json_object *
fx_media(const char *type, const char *data, const char *mime)
{
	json_object *o;

	o = json_object_new_object();
	json_object_object_add(o, "type", json_object_new_string(type));
	json_object_object_add(o, "data", json_object_new_string(data));
	json_object_object_add(o, "mimeType", json_object_new_string(mime));
	return o;
}

static json_object *
fx_resource(const char *uri, const char *mime, const char *text)
{
	json_object *o, *r;

	r = json_object_new_object();
	json_object_object_add(r, "uri", json_object_new_string(uri));
	json_object_object_add(r, "mimeType", json_object_new_string(mime));
	json_object_object_add(r, "text", json_object_new_string(text));
	o = json_object_new_object();
	json_object_object_add(o, "type", json_object_new_string("resource"));
	json_object_object_add(o, "resource", r);
	return o;
}

/* A CallToolResult of content items (taken), NULL-terminated. */
static json_object *
fx_result(int is_error, json_object *first, ...)
{
	json_object *r, *a, *item;
	va_list ap;

	a = json_object_new_array();
	va_start(ap, first);
	for (item = first; item != NULL; item = va_arg(ap, json_object *))
		json_object_array_add(a, item);
	va_end(ap);
	r = json_object_new_object();
	json_object_object_add(r, "content", a);
	if (is_error)
		json_object_object_add(
		    r, "isError", json_object_new_boolean(1));
	return r;
}

/* --- calls that take time: a timer per call, stepped --- */

struct fx_job {
	struct call *call;
	struct event *timer;
	int step;
	int stopping; /* cancelled, or the server is going away */
	int (*next)(struct fx_job *); /* one step; ms to the next, or -1 */
};

static void
fx_job_free(struct fx_job *j)
{
	event_free(j->timer);
	free(j);
}

/* Answer the call (result taken) and end its job. */
static void
fx_job_reply(struct fx_job *j, json_object *result)
{
	struct call *c = j->call;

	c->state = NULL;
	c->cancel = NULL;
	fx_job_free(j);
	mcp_call_reply(c, result);
}

static void
fx_job_arm(struct fx_job *j, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	evtimer_add(j->timer, &tv);
}

static void
fx_job_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fx_job *j = arg;
	int ms;

	(void)fd;
	(void)what;
	if (j->stopping || j->call->cancelled) {
		fx_job_reply(j, fx_result(1, fx_text("cancelled"), NULL));
		return;
	}
	if ((ms = j->next(j)) >= 0)
		fx_job_arm(j, ms);
}

/*
 * Cancelled (by the client, or its session or the server ending): the
 * call is answered from the loop, never inside this hook.
 */
static void
fx_job_cancel(struct call *c)
{
	struct fx_job *j = c->state;

	j->stopping = 1;
	fx_job_arm(j, 0);
}

/* Start a job whose first step runs after ms. */
static struct fx_job *
fx_job_start(struct call *c, int (*next)(struct fx_job *), int ms)
{
	struct fx_job *j;

	j = xcalloc(1, sizeof *j);
	j->call = c;
	j->next = next;
	j->timer = evtimer_new(sup.base, fx_job_cb, j);
	c->state = j;
	c->cancel = fx_job_cancel;
	if (ms >= 0)
		fx_job_arm(j, ms);
	return j;
}

/* --- the tools --- */

static void
fx_simple_text(struct call *c)
{
	mcp_call_reply(c,
	    fx_result(0, fx_text("This is a simple text response for testing."),
	        NULL));
}

static void
fx_image(struct call *c)
{
	mcp_call_reply(
	    c, fx_result(0, fx_media("image", png_b64, "image/png"), NULL));
}

static void
fx_audio(struct call *c)
{
	mcp_call_reply(
	    c, fx_result(0, fx_media("audio", wav_b64, "audio/wav"), NULL));
}

static void
fx_embedded(struct call *c)
{
	mcp_call_reply(
	    c, fx_result(0,
	           fx_resource("test://embedded-resource", "text/plain",
	               "This is an embedded resource content."),
	           NULL));
}

static void
fx_mixed(struct call *c)
{
	mcp_call_reply(
	    c, fx_result(0, fx_text("Multiple content types test:"),
	           fx_media("image", png_b64, "image/png"),
	           fx_resource("test://mixed-content-resource",
	               "application/json", "{\"test\":\"data\",\"value\":123}"),
	           NULL));
}

static void
fx_error(struct call *c)
{
	mcp_call_reply(c,
	    fx_result(1,
	        fx_text("This tool intentionally returns an error for testing"),
	        NULL));
}

/* Three log lines, FX_STEP_MS apart, then the answer. */
static int
fx_logging_step(struct fx_job *j)
{
	static const char *const lines[] = {"Tool execution started",
	    "Tool processing data", "Tool execution completed"};

	if (j->step < 3) {
		mcp_call_log(j->call, MCP_LEVEL_INFO, "%s", lines[j->step++]);
		return j->step < 3 ? FX_STEP_MS : 0;
	}
	fx_job_reply(
	    j, fx_result(0, fx_text("Tool with logging executed successfully"),
	           NULL));
	return -1;
}

static void
fx_logging(struct call *c)
{
	fx_job_start(c, fx_logging_step, 0);
}

/* Progress 0, 50 and 100 of 100, FX_STEP_MS apart, then the answer. */
static int
fx_progress_step(struct fx_job *j)
{
	if (j->step < 3) {
		progress_report(j->call, 50.0 * j->step, 100, NULL);
		j->step++;
		return j->step < 3 ? FX_STEP_MS : 0;
	}
	fx_job_reply(
	    j, fx_result(0, fx_text("Tool with progress executed successfully"),
	           NULL));
	return -1;
}

static void
fx_progress(struct call *c)
{
	fx_job_start(c, fx_progress_step, 0);
}

/*
 * The stream of the call is cut after FX_DROP_MS, the answer comes
 * later: the client gets it by resuming with Last-Event-ID (SEP-1699).
 */
static int
fx_reconnection_step(struct fx_job *j)
{
	if (j->step++ == 0) {
		mcp_call_drop_stream(j->call);
		return FX_RESUME_MS - FX_DROP_MS;
	}
	fx_job_reply(
	    j, fx_result(0, fx_text("Reconnection test completed successfully"),
	           NULL));
	return -1;
}

static void
fx_reconnection(struct call *c)
{
	fx_job_start(c, fx_reconnection_step, FX_DROP_MS);
}

/* The arguments back, as text (the suite only lists this tool). */
static void
fx_schema_2020_12(struct call *c)
{
	mcp_call_reply(c, fx_result(0,
	                      fx_text(json_object_to_json_string_ext(
	                          c->args, JSON_C_TO_STRING_PLAIN)),
	                      NULL));
}

/* --- sampling and elicitation: requests to the client --- */

/* A string argument the tool requires; else the call is answered. */
static const char *
fx_arg(struct call *c, const char *key)
{
	const char *v;

	if ((v = tool_arg_string(c, key)) == NULL)
		mcp_call_reply(
		    c, fx_result(1,
		           fx_text("a required string argument is missing"),
		           NULL));
	return v;
}

/* The client's answer, or its error, as the call's result. */
static void
fx_answered(
    struct call *c, json_object *result, json_object *error, const char *prefix)
{
	struct fx_job *j = c->state;
	json_object *what = error != NULL ? error : result;
	const char *s;
	char *text;

	if (json_object_is_type(what, json_type_string))
		s = json_object_get_string(what);
	else
		s = json_object_to_json_string_ext(what,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	xasprintf(
	    &text, "%s%s", error != NULL ? "the client failed: " : prefix, s);
	fx_job_reply(j, fx_result(error != NULL, fx_text(text), NULL));
	free(text);
}

static void
fx_sampled(struct call *c, json_object *result, json_object *error)
{
	json_object *content, *t;

	if (error == NULL &&
	    json_object_object_get_ex(result, "content", &content) &&
	    json_object_object_get_ex(content, "text", &t) &&
	    json_object_is_type(t, json_type_string)) {
		fx_answered(c, t, NULL, "LLM response: ");
		return;
	}
	fx_answered(c, result, error, "LLM response: ");
}

static void
fx_elicited(struct call *c, json_object *result, json_object *error)
{
	fx_answered(c, result, error, "User response: ");
}

static void
fx_elicited_completed(struct call *c, json_object *result, json_object *error)
{
	fx_answered(c, result, error, "Elicitation completed: ");
}

/* Start a request to the client for a call, if the client can take it. */
static void
fx_ask(struct call *c, const char *cap, const char *method, json_object *params,
    sreq_done done)
{
	if (!mcp_client_has(c->sess, cap)) {
		json_object_put(params);
		mcp_call_reply(c,
		    fx_result(1,
		        fx_text("the client did not declare this capability"),
		        NULL));
		return;
	}
	fx_job_start(c, NULL, -1);
	mcp_call_request(c, method, params, done);
}

static void
fx_sampling(struct call *c)
{
	json_object *params, *msgs, *m;
	const char *prompt;

	if ((prompt = fx_arg(c, "prompt")) == NULL)
		return;
	m = json_object_new_object();
	json_object_object_add(m, "role", json_object_new_string("user"));
	json_object_object_add(m, "content", fx_text(prompt));
	msgs = json_object_new_array();
	json_object_array_add(msgs, m);
	params = json_object_new_object();
	json_object_object_add(params, "messages", msgs);
	json_object_object_add(params, "maxTokens", json_object_new_int(100));
	fx_ask(c, "sampling", "sampling/createMessage", params, fx_sampled);
}

static void
fx_elicit(
    struct call *c, const char *message, const char *schema, sreq_done done)
{
	json_object *params;

	params = json_object_new_object();
	json_object_object_add(
	    params, "message", json_object_new_string(message));
	json_object_object_add(
	    params, "requestedSchema", json_tokener_parse(schema));
	fx_ask(c, "elicitation", "elicitation/create", params, done);
}

static void
fx_elicitation(struct call *c)
{
	const char *message;

	if ((message = fx_arg(c, "message")) == NULL)
		return;
	fx_elicit(c, message,
	    "{\"type\":\"object\",\"properties\":{"
	    "\"username\":{\"type\":\"string\","
	    "\"description\":\"User's response\"},"
	    "\"email\":{\"type\":\"string\","
	    "\"description\":\"User's email address\"}},"
	    "\"required\":[\"username\",\"email\"]}",
	    fx_elicited);
}

static void
fx_elicitation_defaults(struct call *c)
{
	fx_elicit(c, "Please review and update the form fields with defaults",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"name\":{\"type\":\"string\",\"description\":\"User name\","
	    "\"default\":\"John Doe\"},"
	    "\"age\":{\"type\":\"integer\",\"description\":\"User age\","
	    "\"default\":30},"
	    "\"score\":{\"type\":\"number\",\"description\":\"User score\","
	    "\"default\":95.5},"
	    "\"status\":{\"type\":\"string\",\"description\":\"User status\","
	    "\"enum\":[\"active\",\"inactive\",\"pending\"],"
	    "\"default\":\"active\"},"
	    "\"verified\":{\"type\":\"boolean\","
	    "\"description\":\"Verification status\",\"default\":true}},"
	    "\"required\":[]}",
	    fx_elicited_completed);
}

static void
fx_elicitation_enums(struct call *c)
{
	fx_elicit(c, "Please select options from the enum fields",
	    "{\"type\":\"object\",\"properties\":{"
	    "\"untitledSingle\":{\"type\":\"string\","
	    "\"enum\":[\"option1\",\"option2\",\"option3\"]},"
	    "\"titledSingle\":{\"type\":\"string\",\"oneOf\":["
	    "{\"const\":\"value1\",\"title\":\"First Option\"},"
	    "{\"const\":\"value2\",\"title\":\"Second Option\"},"
	    "{\"const\":\"value3\",\"title\":\"Third Option\"}]},"
	    "\"legacyEnum\":{\"type\":\"string\","
	    "\"enum\":[\"opt1\",\"opt2\",\"opt3\"],"
	    "\"enumNames\":[\"Option One\",\"Option Two\",\"Option Three\"]},"
	    "\"untitledMulti\":{\"type\":\"array\",\"items\":{"
	    "\"type\":\"string\",\"enum\":[\"option1\",\"option2\","
	    "\"option3\"]}},"
	    "\"titledMulti\":{\"type\":\"array\",\"items\":{\"anyOf\":["
	    "{\"const\":\"value1\",\"title\":\"First Choice\"},"
	    "{\"const\":\"value2\",\"title\":\"Second Choice\"},"
	    "{\"const\":\"value3\",\"title\":\"Third Choice\"}]}}},"
	    "\"required\":[]}",
	    fx_elicited_completed);
}

#define FX_TOOL(var, nm, desc, schema, fn)                                     \
	static const struct tool var = {                                       \
	    .name = (nm),                                                      \
	    .title = (nm),                                                     \
	    .description = (desc),                                             \
	    .input_schema = (schema),                                          \
	    .output_schema = NULL,                                             \
	    .read_only = 1,                                                    \
	    .idempotent = 1,                                                   \
	    .exec = (fn),                                                      \
	}

FX_TOOL(fx_t_simple, "test_simple_text", "Returns simple text content", no_args,
    fx_simple_text);
FX_TOOL(fx_t_image, "test_image_content", "Returns image content", no_args,
    fx_image);
FX_TOOL(fx_t_audio, "test_audio_content", "Returns audio content", no_args,
    fx_audio);
FX_TOOL(fx_t_embedded, "test_embedded_resource", "Returns an embedded resource",
    no_args, fx_embedded);
FX_TOOL(fx_t_mixed, "test_multiple_content_types",
    "Returns text, image and resource content", no_args, fx_mixed);
FX_TOOL(fx_t_logging, "test_tool_with_logging",
    "Sends three log messages while it runs", no_args, fx_logging);
FX_TOOL(fx_t_error, "test_error_handling", "Always returns an error", no_args,
    fx_error);
FX_TOOL(fx_t_progress, "test_tool_with_progress",
    "Reports progress 0, 50 and 100 of 100", no_args, fx_progress);
FX_TOOL(fx_t_reconnection, "test_reconnection",
    "Cuts its SSE stream mid-call; the answer comes on resumption", no_args,
    fx_reconnection);
FX_TOOL(fx_t_sampling, "test_sampling",
    "Asks the client for an LLM completion (sampling)",
    "{\"type\":\"object\",\"properties\":{\"prompt\":{\"type\":\"string\","
    "\"description\":\"The prompt to send to the LLM\"}},"
    "\"required\":[\"prompt\"]}",
    fx_sampling);
FX_TOOL(fx_t_elicitation, "test_elicitation",
    "Asks the user for input (elicitation)",
    "{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\","
    "\"description\":\"The message to show the user\"}},"
    "\"required\":[\"message\"]}",
    fx_elicitation);
FX_TOOL(fx_t_elicitation_defaults, "test_elicitation_sep1034_defaults",
    "Elicitation with defaults for every primitive type (SEP-1034)", no_args,
    fx_elicitation_defaults);
FX_TOOL(fx_t_elicitation_enums, "test_elicitation_sep1330_enums",
    "Elicitation with the five enum schema variants (SEP-1330)", no_args,
    fx_elicitation_enums);
FX_TOOL(fx_t_schema, "json_schema_2020_12_tool",
    "Tool with JSON Schema 2020-12 features",
    "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","
    "\"type\":\"object\","
    "\"$defs\":{\"address\":{\"type\":\"object\",\"properties\":{"
    "\"street\":{\"type\":\"string\"},\"city\":{\"type\":\"string\"}}}},"
    "\"properties\":{\"name\":{\"type\":\"string\"},"
    "\"address\":{\"$ref\":\"#/$defs/address\"}},"
    "\"additionalProperties\":false}",
    fx_schema_2020_12);

static const struct tool *const fx_tools[] = {&fx_t_simple, &fx_t_image,
    &fx_t_audio, &fx_t_embedded, &fx_t_mixed, &fx_t_logging, &fx_t_error,
    &fx_t_progress, &fx_t_reconnection, &fx_t_sampling, &fx_t_elicitation,
    &fx_t_elicitation_defaults, &fx_t_elicitation_enums, &fx_t_schema};

/* --- resources: test://... --- */

static const struct {
	const char *uri, *name, *description, *mime;
	const char *text; /* NULL: the PNG, as a blob */
} fx_static[] = {
    {"test://static-text", "static-text", "A static text resource",
        "text/plain", "This is the content of the static text resource."},
    {"test://static-binary", "static-binary",
        "A static binary resource (a PNG image)", "image/png", NULL},
    {"test://watched-resource", "watched-resource",
        "A resource that can be subscribed to", "text/plain",
        "Watched resource content"},
};
#define FX_NSTATIC (sizeof fx_static / sizeof fx_static[0])

static json_object *
fx_entry(const char *key, const char *uri, const char *name, const char *desc,
    const char *mime)
{
	json_object *o;

	o = json_object_new_object();
	json_object_object_add(o, key, json_object_new_string(uri));
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "description", json_object_new_string(desc));
	json_object_object_add(o, "mimeType", json_object_new_string(mime));
	return o;
}

static void
fx_res_list(struct session *sess, json_object *a)
{
	size_t i;

	(void)sess;
	for (i = 0; i < FX_NSTATIC; i++)
		json_object_array_add(
		    a, fx_entry("uri", fx_static[i].uri, fx_static[i].name,
		           fx_static[i].description, fx_static[i].mime));
}

static void
fx_res_templates(struct session *sess, json_object *a)
{
	(void)sess;
	json_object_array_add(
	    a, fx_entry("uriTemplate", "test://template/{id}/data",
	           "template-data", "Data for the id in the URI",
	           "application/json"));
}

/* A ReadResourceResult of one item: text, or blob when b64 is set. */
static json_object *
fx_contents(
    const char *uri, const char *mime, const char *text, const char *b64)
{
	json_object *r, *a, *c;

	c = json_object_new_object();
	json_object_object_add(c, "uri", json_object_new_string(uri));
	json_object_object_add(c, "mimeType", json_object_new_string(mime));
	if (b64 != NULL)
		json_object_object_add(c, "blob", json_object_new_string(b64));
	else
		json_object_object_add(c, "text", json_object_new_string(text));
	a = json_object_new_array();
	json_object_array_add(a, c);
	r = json_object_new_object();
	json_object_object_add(r, "contents", a);
	return r;
}

static json_object *
fx_res_read(struct session *sess, const char *uri, int *code, const char **why)
{
	json_object *o, *r;
	char id[128], *data;
	int end = 0;
	size_t i;

	(void)sess;
	for (i = 0; i < FX_NSTATIC; i++)
		if (strcmp(uri, fx_static[i].uri) == 0)
			return fx_contents(uri, fx_static[i].mime,
			    fx_static[i].text,
			    fx_static[i].text == NULL ? png_b64 : NULL);
	if (sscanf(uri, "test://template/%127[^/]/data%n", id, &end) == 1 &&
	    uri[end] == '\0') {
		xasprintf(&data, "Data for ID: %s", id);
		o = json_object_new_object();
		json_object_object_add(o, "id", json_object_new_string(id));
		json_object_object_add(
		    o, "templateTest", json_object_new_boolean(1));
		json_object_object_add(o, "data", json_object_new_string(data));
		free(data);
		r = fx_contents(uri, "application/json",
		    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
		    NULL);
		json_object_put(o);
		return r;
	}
	*code = -32002; /* resource not found, as resources.c */
	*why = "resource not found";
	return NULL;
}

static int
fx_res_subscribe(struct session *sess, const char *uri)
{
	size_t i;

	(void)sess;
	for (i = 0; i < FX_NSTATIC; i++)
		if (strcmp(uri, fx_static[i].uri) == 0)
			return 0;
	return -1;
}

static const struct resource_provider fx_resources = {
    .prefix = "test://",
    .list = fx_res_list,
    .templates = fx_res_templates,
    .read = fx_res_read,
    .subscribe = fx_res_subscribe,
};

/* --- prompts --- */

static json_object *
fx_message(json_object *content)
{
	json_object *m;

	m = json_object_new_object();
	json_object_object_add(m, "role", json_object_new_string("user"));
	json_object_object_add(m, "content", content);
	return m;
}

/* A GetPromptResult of messages (taken), NULL-terminated. */
static json_object *
fx_prompt_result(json_object *first, ...)
{
	json_object *r, *a, *m;
	va_list ap;

	a = json_object_new_array();
	va_start(ap, first);
	for (m = first; m != NULL; m = va_arg(ap, json_object *))
		json_object_array_add(a, m);
	va_end(ap);
	r = json_object_new_object();
	json_object_object_add(r, "messages", a);
	return r;
}

static const char *
fx_prompt_arg(json_object *args, const char *key)
{
	json_object *v;

	if (args != NULL && json_object_object_get_ex(args, key, &v))
		return json_object_get_string(v);
	return "";
}

static json_object *
fx_p_simple_get(struct session *sess, json_object *args, const char **why)
{
	(void)sess;
	(void)args;
	(void)why;
	return fx_prompt_result(
	    fx_message(fx_text("This is a simple prompt for testing.")), NULL);
}

static json_object *
fx_p_args_get(struct session *sess, json_object *args, const char **why)
{
	json_object *r;
	char *text;

	(void)sess;
	(void)why;
	xasprintf(&text, "Prompt with arguments: arg1='%s', arg2='%s'",
	    fx_prompt_arg(args, "arg1"), fx_prompt_arg(args, "arg2"));
	r = fx_prompt_result(fx_message(fx_text(text)), NULL);
	free(text);
	return r;
}

/* arg1 and arg2 complete from a few words, by prefix. */
static json_object *
fx_p_args_complete(const char *arg, const char *value)
{
	static const char *const words[] = {"paris", "park", "party", "test",
	    "testing", "testValue1", "testValue2"};
	json_object *a;
	size_t i;

	if (strcmp(arg, "arg1") != 0 && strcmp(arg, "arg2") != 0)
		return NULL;
	a = json_object_new_array();
	for (i = 0; i < sizeof words / sizeof words[0]; i++)
		if (strncmp(words[i], value, strlen(value)) == 0)
			json_object_array_add(
			    a, json_object_new_string(words[i]));
	return a;
}

static json_object *
fx_p_embedded_get(struct session *sess, json_object *args, const char **why)
{
	(void)sess;
	(void)why;
	return fx_prompt_result(
	    fx_message(fx_resource(fx_prompt_arg(args, "resourceUri"),
	        "text/plain", "Embedded resource content for testing.")),
	    fx_message(fx_text("Please process the embedded resource above.")),
	    NULL);
}

static json_object *
fx_p_image_get(struct session *sess, json_object *args, const char **why)
{
	(void)sess;
	(void)args;
	(void)why;
	return fx_prompt_result(
	    fx_message(fx_media("image", png_b64, "image/png")),
	    fx_message(fx_text("Please analyze the image above.")), NULL);
}

static const struct prompt fx_prompts[] = {
    {.name = "test_simple_prompt",
        .title = "Simple prompt",
        .description = "A prompt without arguments",
        .get = fx_p_simple_get},
    {.name = "test_prompt_with_arguments",
        .title = "Prompt with arguments",
        .description = "A prompt with two required arguments",
        .arguments = "[{\"name\":\"arg1\",\"description\":\"First test "
                     "argument\",\"required\":true},{\"name\":\"arg2\","
                     "\"description\":\"Second test argument\","
                     "\"required\":true}]",
        .get = fx_p_args_get,
        .complete = fx_p_args_complete},
    {.name = "test_prompt_with_embedded_resource",
        .title = "Prompt with an embedded resource",
        .description = "A prompt that embeds the resource it is given",
        .arguments = "[{\"name\":\"resourceUri\",\"description\":\"URI of "
                     "the resource to embed\",\"required\":true}]",
        .get = fx_p_embedded_get},
    {.name = "test_prompt_with_image",
        .title = "Prompt with an image",
        .description = "A prompt with image content",
        .get = fx_p_image_get},
};

/* Register every fixture; called once by main() of the fixtures binary. */
void
fixtures_init(void)
{
	size_t i;

	for (i = 0; i < sizeof fx_tools / sizeof fx_tools[0]; i++)
		if (tools_register(fx_tools[i]) == -1)
			fatal("%s: tool %s", __func__, fx_tools[i]->name);
	if (resources_register(&fx_resources) == -1)
		fatal("%s: resources", __func__);
	for (i = 0; i < sizeof fx_prompts / sizeof fx_prompts[0]; i++)
		if (prompts_register(&fx_prompts[i]) == -1)
			fatal("%s: prompt %s", __func__, fx_prompts[i].name);
	log_warnx("conformance fixtures registered: a test build, not for use");
}
