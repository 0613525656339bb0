/*
 * A private directory of this user: a real directory (no symlink) of our
 * uid that nobody else may enter.  The runtime directory, the snapshots'
 * state directory and the control directory are all checked this way.
 */
#ifndef PRIVDIR_H
#define PRIVDIR_H

#include <stddef.h>

int privdir_check(const char *, int, char *, size_t);
int privdir_check_readable(const char *, char *, size_t);

#endif
