/* An error message into a caller's buffer (err, errlen), when it gave one. */
#ifndef ERRBUF_H
#define ERRBUF_H

#include <stddef.h>

void errbuf_set(char *, size_t, const char *, ...)
    __attribute__((format(printf, 3, 4)));

#endif
