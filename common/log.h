/* Logging to stderr only: stdout belongs to the stdio transport. */
#ifndef LOG_H
#define LOG_H

#include <stdarg.h>

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

void log_init(const char *, int);
void log_setname(const char *);
void log_setlevel(int);
int log_setformat(const char *);
/* The request being handled (its JSON-RPC id, taken, and its session),
 * carried by every line logged until log_request_clear(). */
struct json_object;
void log_request_set(struct json_object *, unsigned int);
void log_request_clear(void);
void log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
