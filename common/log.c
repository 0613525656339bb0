/* Logging: every line names the process, goes to stderr, never stdout. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "log.h"
#include "termtext.h"
#include "utf8.h"

static char log_name[64] = "mcp-sandboxd";
static int log_level = LOG_INFO;
static int log_json; /* --log-format json: one object a line */
/* The MCP request being handled, or NULL (log_request_set). */
static json_object *log_req_id;
static unsigned int log_req_session;

void
log_init(const char *name, int level)
{
	log_setname(name);
	log_level = level;
}

void
log_setname(const char *name)
{
	snprintf(log_name, sizeof log_name, "%s", name);
}

void
log_setlevel(int level)
{
	log_level = level;
}

/* --log-format: "text" (the default) or "json"; -1 for anything else. */
int
log_setformat(const char *format)
{
	if (strcmp(format, "text") == 0)
		log_json = 0;
	else if (strcmp(format, "json") == 0)
		log_json = 1;
	else
		return -1;
	return 0;
}

/*
 * Set around the handling of one MCP request (supervisor/mcp/mcp.c):
 * what is logged meanwhile names it.  id is taken (a reference).
 */
void
log_request_set(json_object *id, unsigned int session)
{
	json_object_put(log_req_id);
	log_req_id = id;
	log_req_session = session;
}

void
log_request_clear(void)
{
	json_object_put(log_req_id);
	log_req_id = NULL;
}

/*
 * One line as a JSON object.  The message may hold any bytes (names and
 * errors from clients and engines): repaired to UTF-8 first, so that the
 * line is always valid JSON.
 */
static void
vlog_json(const char *ts, const char *level, const char *msg)
{
	json_object *o, *r;
	size_t n;
	char *clean;

	o = json_object_new_object();
	json_object_object_add(o, "time", json_object_new_string(ts));
	json_object_object_add(o, "level", json_object_new_string(level));
	clean = utf8_sanitize(log_name, strlen(log_name), &n);
	json_object_object_add(
	    o, "process", json_object_new_string_len(clean, (int)n));
	free(clean);
	clean = utf8_sanitize(msg, strlen(msg), &n);
	json_object_object_add(
	    o, "message", json_object_new_string_len(clean, (int)n));
	free(clean);
	if (log_req_id != NULL) {
		r = json_object_new_object();
		/* A client's string id may hold any bytes too. */
		if (json_object_is_type(log_req_id, json_type_string)) {
			clean = utf8_sanitize(
			    json_object_get_string(log_req_id),
			    (size_t)json_object_get_string_len(log_req_id), &n);
			json_object_object_add(
			    r, "id", json_object_new_string_len(clean, (int)n));
			free(clean);
		} else
			json_object_object_add(
			    r, "id", json_object_get(log_req_id));
		json_object_object_add(
		    r, "session", json_object_new_int64(log_req_session));
		json_object_object_add(o, "request", r);
	}
	fprintf(stderr, "%s\n",
	    json_object_to_json_string_ext(
	        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

static void
vlog(int level, const char *err, const char *fmt, va_list ap)
{
	static const char *names[] = {"error", "warn", "info", "debug"};
	char msg[1024], safe[4 * 1024 + 1], ts[32];
	struct timespec now;
	struct tm tm;

	if (level > log_level)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
	vsnprintf(msg, sizeof msg, fmt, ap);
	if (log_json) {
		char full[1024 + 256], stamp[48];

		snprintf(stamp, sizeof stamp, "%s.%03ldZ", ts,
		    now.tv_nsec / 1000000);
		if (err != NULL)
			snprintf(full, sizeof full, "%s: %s", msg, err);
		else
			snprintf(full, sizeof full, "%s", msg);
		vlog_json(stamp, names[level], full);
		return;
	}
	/*
	 * What the line names (commands, files, what a sandbox said, a
	 * client's names) may hold control sequences: made inert for the
	 * terminal that shows the log (termtext.h), one record a line.
	 */
	termtext(msg, strlen(msg), 0, safe, sizeof safe);
	if (err != NULL)
		fprintf(stderr, "%s.%03ldZ %s %s: %s: %s\n", ts,
		    now.tv_nsec / 1000000, log_name, names[level], safe, err);
	else
		fprintf(stderr, "%s.%03ldZ %s %s: %s\n", ts,
		    now.tv_nsec / 1000000, log_name, names[level], safe);
}

void
log_warn(const char *fmt, ...)
{
	const char *err = strerror(errno);
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_WARN, err, fmt, ap);
	va_end(ap);
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_WARN, NULL, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_INFO, NULL, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_DEBUG, NULL, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	const char *err = strerror(errno);
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_ERROR, err, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_ERROR, NULL, fmt, ap);
	va_end(ap);
	exit(1);
}
