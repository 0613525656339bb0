/* Random names, tokens and markers, from the kernel's generator. */
#ifndef RANDOM_H
#define RANDOM_H

#include <stddef.h>

/* n random bytes as 2n lowercase hex digits and a NUL (out holds 2n+1). */
void random_hex(char *out, size_t n);

#endif
