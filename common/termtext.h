/* Text for a terminal: what a sandbox or a client said, made inert. */
#ifndef TERMTEXT_H
#define TERMTEXT_H

#include <stddef.h>
#include <stdio.h>

#define TERMTEXT_LINES 0x1 /* newlines go as they are */

size_t termtext(const char *, size_t, int, char *, size_t);
void termtext_fputs(const char *, size_t, int, FILE *);

#endif
