/* A temporary directory tree for a unit test, removed after it. */
#ifndef TMPTREE_H
#define TMPTREE_H

#include <limits.h>

extern char tt_root[PATH_MAX]; /* canonical */

/* Makes /tmp/NAME-XXXXXX (the test fails if it cannot). */
void tt_make(const char *);
/* Removes it, whatever is in it. */
void tt_remove(void);
/* root/rel, in one of a few rotating buffers. */
const char *tt_at(const char *);

#endif
