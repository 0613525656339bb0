/*
 * --engine's syntax (enginespec.h): one URL and its attributes, checked
 * strictly so that a typo is a clear error at start, never an engine
 * reached in a way the operator did not mean.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "enginespec.h"
#include "xmalloc.h"

/* Whether url is unix:///PATH or tcp://HOST:PORT (why says what is not). */
int
enginespec_url_ok(const char *url, char *why, size_t len)
{
	const char *hp, *colon;
	char *end;
	long port;

	if (strlen(url) >= ENGINESPEC_URL_MAX) {
		snprintf(why, len, "URL longer than %d bytes",
		    ENGINESPEC_URL_MAX - 1);
		return -1;
	}
	if (strncmp(url, "unix://", 7) == 0) {
		if (url[7] != '/' || url[8] == '\0') {
			snprintf(why, len,
			    "\"%.80s\": unix:// needs an absolute socket path "
			    "(unix:///run/docker.sock)",
			    url);
			return -1;
		}
		return 0;
	}
	if (strncmp(url, "tcp://", 6) != 0) {
		snprintf(why, len,
		    "\"%.80s\": expected unix:///PATH or tcp://HOST:PORT", url);
		return -1;
	}
	hp = url + 6;
	if (*hp == '[') {
		if ((colon = strchr(hp, ']')) == NULL || colon == hp + 1 ||
		    colon[1] != ':') {
			snprintf(why, len,
			    "\"%.80s\": expected tcp://[IPV6]:PORT", url);
			return -1;
		}
		colon++;
	} else if ((colon = strrchr(hp, ':')) == NULL || colon == hp ||
	           memchr(hp, ':', (size_t)(colon - hp)) != NULL ||
	           strpbrk(hp, "/@") != NULL) {
		snprintf(why, len, "\"%.80s\": expected tcp://HOST:PORT", url);
		return -1;
	}
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno != 0 || end == colon + 1 || *end != '\0' || port < 1 ||
	    port > 65535 || colon[1] == '+' || colon[1] == '-') {
		snprintf(
		    why, len, "\"%.80s\": the port must be 1 to 65535", url);
		return -1;
	}
	return 0;
}

/* Whether dir is an absolute directory with the three PEM files. */
int
enginespec_tls_ok(const char *dir, char *why, size_t len)
{
	static const char *const files[] = {"ca.pem", "cert.pem", "key.pem"};
	char *p;
	size_t i;
	int ok;

	if (*dir != '/') {
		snprintf(why, len, "tls=%.200s: expected an absolute directory",
		    dir);
		return -1;
	}
	for (i = 0; i < sizeof files / sizeof files[0]; i++) {
		xasprintf(&p, "%s/%s", dir, files[i]);
		ok = access(p, R_OK) == 0;
		free(p);
		if (!ok) {
			snprintf(why, len,
			    "tls=%.200s: cannot read %s there (the directory "
			    "must hold ca.pem, cert.pem and key.pem, as "
			    "DOCKER_CERT_PATH does)",
			    dir, files[i]);
			return -1;
		}
	}
	return 0;
}

static int
attr_long(const char *name, const char *v, long min, long max, long *out,
    char *why, size_t len)
{
	char *end;
	long l;

	errno = 0;
	l = strtol(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || *v == '+' || *v == '-' ||
	    l < min || l > max) {
		snprintf(why, len,
		    "%s=%.40s: expected an integer from %ld to %ld", name, v,
		    min, max);
		return -1;
	}
	*out = l;
	return 0;
}

/*
 * Parse one --engine value into es; -1 with why on any fault: a bad URL,
 * an unknown, repeated or empty attribute, a number out of range, tls on
 * a unix:// engine.  The tls directory's files are checked by the caller
 * (enginespec_tls_ok()), where the files must be.
 */
int
enginespec_parse(const char *text, struct enginespec *es, char *why, size_t len)
{
	char *dup, *p, *attr, *eq;
	const char *q;
	int seen_tls = 0, seen_ms = 0, seen_mm = 0, rc = -1;
	size_t ulen;

	memset(es, 0, sizeof *es);
	if (strlen(text) > ENGINESPEC_TEXT_MAX) {
		snprintf(why, len, "longer than %d bytes", ENGINESPEC_TEXT_MAX);
		return -1;
	}
	q = strchr(text, '?');
	ulen = q != NULL ? (size_t)(q - text) : strlen(text);
	if (ulen >= sizeof es->url) {
		snprintf(
		    why, len, "URL longer than %zu bytes", sizeof es->url - 1);
		return -1;
	}
	memcpy(es->url, text, ulen);
	es->url[ulen] = '\0';
	if (enginespec_url_ok(es->url, why, len) == -1)
		return -1;
	if (q == NULL)
		return 0;
	dup = xstrdup(q + 1);
	for (p = dup; (attr = strsep(&p, "&")) != NULL;) {
		if ((eq = strchr(attr, '=')) == NULL || eq == attr ||
		    eq[1] == '\0') {
			snprintf(why, len,
			    "\"%.80s\": expected ATTRIBUTE=VALUE (tls, "
			    "max-sandboxes, max-memory-mb) after ? and each &",
			    attr);
			goto out;
		}
		*eq++ = '\0';
		if (strcmp(attr, "tls") == 0) {
			if (seen_tls++) {
				snprintf(why, len, "tls given twice");
				goto out;
			}
			if (strncmp(es->url, "tcp://", 6) != 0) {
				snprintf(why, len,
				    "tls= is for tcp:// engines only");
				goto out;
			}
			if (*eq != '/') {
				snprintf(why, len,
				    "tls=%.200s: expected an absolute "
				    "directory",
				    eq);
				goto out;
			}
			snprintf(es->tls, sizeof es->tls, "%s", eq);
		} else if (strcmp(attr, "max-sandboxes") == 0) {
			if (seen_ms++) {
				snprintf(why, len, "max-sandboxes given twice");
				goto out;
			}
			if (attr_long(attr, eq, 1, 100000, &es->max_sandboxes,
			        why, len) == -1)
				goto out;
		} else if (strcmp(attr, "max-memory-mb") == 0) {
			if (seen_mm++) {
				snprintf(why, len, "max-memory-mb given twice");
				goto out;
			}
			if (attr_long(attr, eq, 16, 1L << 30,
			        &es->max_memory_mb, why, len) == -1)
				goto out;
		} else {
			snprintf(why, len,
			    "unknown attribute \"%.40s\" (known: tls, "
			    "max-sandboxes, max-memory-mb)",
			    attr);
			goto out;
		}
	}
	rc = 0;
out:
	free(dup);
	return rc;
}
