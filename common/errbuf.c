/* Error messages for functions that fill a caller's buffer. */
#include <stdarg.h>
#include <stdio.h>

#include "errbuf.h"

/* Formats a message into err when the caller gave room for one. */
void
errbuf_set(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
