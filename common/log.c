/* Logging: every line names the process, goes to stderr, never stdout. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

static char log_name[64] = "mcp-sandboxd";
static int log_level = LOG_INFO;

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

static void
vlog(int level, const char *err, const char *fmt, va_list ap)
{
	static const char *names[] = {"error", "warn", "info", "debug"};
	char msg[1024], ts[32];
	struct timespec now;
	struct tm tm;

	if (level > log_level)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
	vsnprintf(msg, sizeof msg, fmt, ap);
	if (err != NULL)
		fprintf(stderr, "%s.%03ldZ %s %s: %s: %s\n", ts,
		    now.tv_nsec / 1000000, log_name, names[level], msg, err);
	else
		fprintf(stderr, "%s.%03ldZ %s %s: %s\n", ts,
		    now.tv_nsec / 1000000, log_name, names[level], msg);
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
