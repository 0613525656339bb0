/*
 * An engine as --engine names it: URL[?ATTR=VALUE[&ATTR=VALUE]...], with
 * URL unix:///PATH or tcp://HOST:PORT and the attributes tls=DIR (tcp://
 * only: a directory holding ca.pem, cert.pem and key.pem, as the Docker
 * CLI's DOCKER_CERT_PATH), max-sandboxes=N and max-memory-mb=N (the
 * engine's ceilings for placement).  Parsed strictly: the supervisor at
 * start (config.c) and each worker read the same text.
 */
#ifndef ENGINESPEC_H
#define ENGINESPEC_H

#include <stddef.h>

#define ENGINESPEC_TEXT_MAX 1024 /* the longest --engine value */
#define ENGINESPEC_URL_MAX 256

struct enginespec {
	char url[ENGINESPEC_URL_MAX];
	char tls[ENGINESPEC_TEXT_MAX]; /* "": none */
	long max_sandboxes; /* 0: no ceiling of its own */
	long max_memory_mb; /* 0: no ceiling of its own */
};

int enginespec_parse(const char *, struct enginespec *, char *, size_t);
int enginespec_url_ok(const char *, char *, size_t);
int enginespec_tls_ok(const char *, char *, size_t);

#endif
