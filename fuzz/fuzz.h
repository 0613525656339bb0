/* What the libFuzzer harnesses share (fuzz-common.c). */
#ifndef FUZZ_H
#define FUZZ_H

/* Whether FUZZ_STRICT asks for the stricter contracts. */
int fuzz_env_strict(void);
/* A broken contract: say which (with the harness's name) and abort. */
void fuzz_check(int, const char *);

#endif
