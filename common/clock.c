/* The monotonic clock: durations and deadlines, never the time of day. */
#include <time.h>

#include "clock.h"

/* Milliseconds since an arbitrary point, for durations and deadlines. */
long long
clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Nanoseconds since the same point, where milliseconds are too coarse. */
long long
clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
