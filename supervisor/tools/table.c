/* The server's tools, in the order tools/list gives them. */
#include "log.h"
#include "mcp.h"
#include "tools.h"

static const struct tool *const table[] = {
    &tool_sandbox_initialize,
    &tool_sandbox_exec,
    &tool_sandbox_stop,
    &tool_get_sandbox_status,
    &tool_write_file,
    &tool_read_file,
    &tool_list_files,
    &tool_copy_file,
    &tool_copy_project,
    &tool_copy_file_from_sandbox,
    &tool_execute_code,
    &tool_create_run_close,
    &tool_install_package,
    &tool_run_project,
    &tool_process_list,
    &tool_process_output,
    &tool_process_signal,
    &tool_process_wait,
    &tool_sandbox_expose_port,
    &tool_sandbox_unexpose_port,
    &tool_sandbox_set_egress,
    &tool_sandbox_snapshot,
    &tool_sandbox_restore,
    &tool_snapshot_list,
    &tool_snapshot_delete,
};

/* Register them with the MCP layer, before any other module's. */
void
tools_init(void)
{
	size_t i;

	for (i = 0; i < sizeof table / sizeof table[0]; i++)
		if (tools_register(table[i]) == -1)
			fatalx(
			    "%s: cannot register %s", __func__, table[i]->name);
}
