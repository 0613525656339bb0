/* Allocation wrappers: out of memory is a broken invariant here. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xmalloc.h"

void *
xmalloc(size_t n)
{
	void *p;

	if ((p = malloc(n == 0 ? 1 : n)) == NULL)
		fatal("%s: %zu bytes", __func__, n);
	return p;
}

void *
xcalloc(size_t nmemb, size_t size)
{
	void *p;

	if ((p = calloc(nmemb == 0 ? 1 : nmemb, size == 0 ? 1 : size)) == NULL)
		fatal("%s: %zu x %zu bytes", __func__, nmemb, size);
	return p;
}

void *
xrealloc(void *old, size_t n)
{
	void *p;

	if ((p = realloc(old, n == 0 ? 1 : n)) == NULL)
		fatal("%s: %zu bytes", __func__, n);
	return p;
}

char *
xstrdup(const char *s)
{
	char *p;

	if ((p = strdup(s)) == NULL)
		fatal("%s", __func__);
	return p;
}

char *
xstrndup(const char *s, size_t n)
{
	char *p;

	if ((p = strndup(s, n)) == NULL)
		fatal("%s", __func__);
	return p;
}

int
xasprintf(char **ret, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(ret, fmt, ap);
	va_end(ap);
	if (n == -1)
		fatal("%s", __func__);
	return n;
}
