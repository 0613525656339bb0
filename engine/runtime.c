/*
 * What an OCI runtime changes in how a container's limits are counted.
 * gVisor (runsc) runs a whole kernel of its own in the container's cgroup:
 * on its default platform (ptrace) every process inside has a stub process
 * of host threads, and its own kernel and file proxy have dozens more, all
 * counted against the container's pids limit.  Measured with Debian's
 * runsc 20221219: about 50 host tasks idle, then 10 to 15 for each process
 * inside; a limit of 128 host tasks left room for half a dozen processes,
 * and gVisor ends the whole sandbox when it cannot make a thread.  So under
 * gVisor the limit given to the engine is scaled from the processes the
 * sandbox may have inside.
 */
#include <string.h>

#include "engine.h"

#define GVISOR_TASKS_PER_PROCESS 16
#define GVISOR_TASKS_BASE 128

/* Whether a runtime's name is gVisor's: runsc, or runsc-SOMETHING (the
 * names its documentation registers it under). */
int
engine_runtime_gvisor(const char *runtime)
{
	return runtime != NULL && (strcmp(runtime, "runsc") == 0 ||
	                              strncmp(runtime, "runsc-", 6) == 0);
}

/* The pids limit to give the engine for a container under runtime (NULL:
 * the engine's default) whose processes inside are to be capped at pids. */
long long
engine_runtime_pids(const char *runtime, long long pids)
{
	if (pids <= 0 || !engine_runtime_gvisor(runtime))
		return pids;
	return pids * GVISOR_TASKS_PER_PROCESS + GVISOR_TASKS_BASE;
}
