/* The monotonic clock, in the units callers count in. */
#ifndef CLOCK_H
#define CLOCK_H

long long clock_ms(void);
long long clock_ns(void);

#endif
