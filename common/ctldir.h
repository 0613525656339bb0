/*
 * The control directory: where each running server's control socket is
 * (one per server, named by its pid), for the server that listens on it
 * and the commands (ls, top, logs, stop) that look for it.  It must be
 * private (privdir_check()).
 */
#ifndef CTLDIR_H
#define CTLDIR_H

#include <stddef.h>

#define CTLDIR_ENV "MCP_SANDBOXD_CONTROL_DIR"
/* The system service's (its unit sets CTLDIR_ENV to it): the commands
 * look there too, when run by root or by the service's user. */
#define CTLDIR_SERVICE "/run/mcp-sandboxd/control"

int ctldir_path(const char *, char *, size_t);
int ctldir_socket(const char *, long, char *, size_t);

#endif
