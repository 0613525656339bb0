/* Random names, tokens and markers, from the kernel's generator. */
#include <sys/random.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "random.h"

/*
 * n random bytes as 2n lowercase hex digits and a NUL.  getrandom()
 * blocks only until the kernel's pool is first ready; any other failure
 * is fatal (a predictable token must never be made).
 */
void
random_hex(char *out, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char r[256];
	size_t i, k, got;
	ssize_t rv;

	while (n > 0) {
		k = n < sizeof r ? n : sizeof r;
		for (got = 0; got < k; got += (size_t)rv)
			if ((rv = getrandom(r + got, k - got, 0)) == -1) {
				if (errno != EINTR)
					fatal("getrandom");
				rv = 0;
			}
		for (i = 0; i < k; i++) {
			*out++ = digits[r[i] >> 4];
			*out++ = digits[r[i] & 0xf];
		}
		n -= k;
	}
	*out = '\0';
	explicit_bzero(r, sizeof r);
}
