/*
 * The operator's commands, modes of the same binary (mcp-sandboxd ls,
 * top, logs, stop): clients of the servers' control sockets
 * (supervisor/transport/control.c), on common/ only.
 */
#ifndef CLI_H
#define CLI_H

#include <sys/types.h>

#include <stddef.h>

#include <json-c/json.h>

/* One connection to a server's control socket. */
struct cli_conn {
	int fd;
	pid_t pid; /* the server's */
	char path[256];
	char *buf; /* bytes read, not yet a whole line */
	size_t len, cap;
};

int cli_is_command(const char *);
int cli_main(int, char **);

/* cli.c, for cli-top.c */
json_object *cli_request(struct cli_conn *, const char *, const char *, int);
json_object *cli_read(struct cli_conn *, int);
void cli_duration(long long, char *, size_t);
void cli_session(json_object *, char *, size_t);

/* cli-top.c */
int cli_top(struct cli_conn *, int);

#endif
