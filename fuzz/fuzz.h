/* What the libFuzzer harnesses share (fuzz-common.c). */
#ifndef FUZZ_H
#define FUZZ_H

/* Whether FUZZ_STRICT asks for the stricter contracts. */
int fuzz_env_strict(void);
/* A broken contract: say which (with the harness's name) and abort. */
void fuzz_check(int, const char *);

struct config;
/*
 * The supervisor's globals for a harness without Docker: options parsed
 * from argv, no sandbox may be made, a loop, an instance, statistics.
 */
void fuzz_supervisor(struct config *, int, char **);

#endif
