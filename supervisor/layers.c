/* The supervisor's layers joined: what each lower one calls back. */
#include "mcp.h"
#include "resources.h"
#include "run.h"
#include "sandbox.h"
#include "supervisor.h"
#include "tools.h"

/* A session ended: what it owns goes (its sandboxes; over HTTP, its
 * snapshots). */
static void
session_close(struct session *sess, void (*done)(void *), void *arg)
{
	snapshot_session_closed(sess);
	sandbox_destroy_owned(sess, done, arg);
}

/*
 * Join the layers: what the MCP layer does when a session or a call ends
 * (their sandboxes removed, their commands killed), then the methods and
 * tools of the layers above it.
 */
void
layers_init(void)
{
	static const struct mcp_hooks hooks = {
	    .session_close = session_close,
	    .call_cancel = xrun_cancel_call,
	    .call_free = xrun_forget_call,
	};

	mcp_hooks_set(&hooks);
	stats_snapshot_bytes = snapshot_store_bytes;
	bgproc_init();
	expose_init();
	tools_init();
	resources_init();
}
