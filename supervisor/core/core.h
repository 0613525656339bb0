/*
 * The core of the supervisor: its one global state and the rule of
 * lifetimes that every layer above keeps.  It knows no MCP, no sandbox
 * and no transport.
 */
#ifndef CORE_H
#define CORE_H

#include "hostpath.h"

struct config;
struct engine;
struct event_base;

/* Global state of the one supervisor process. */
struct supervisor {
	struct event_base *base;
	struct engine *engine; /* the default engine: new sandboxes' */
	const struct config *conf;
	char instance[33]; /* random hex id of this instance */
	char boot_id[64]; /* where its pid means it: proc_pid_home() */
	unsigned long long start_ticks;
	char *self_exe; /* this binary's path, for client configurations */
	int self_fd; /* this binary, opened at start: workers run it */
	struct hostpolicy hosts; /* host dirs the file tools may use */
	/* The HTTP transport's bearer token (transport/http.c, which owns
	 * it), for exposed ports under --expose-auth on; NULL: none. */
	const char *http_token;
	int shutting_down;
	int exit_code;
};
extern struct supervisor sup;

/*
 * Lifetimes of sandboxes, calls and sessions: an object that a callback
 * may still name is never freed under that callback.  Its end marks it
 * (a sandbox: dead, out of the registry; a call: answered, off its
 * session's list; a session: closing, then gone once its sandboxes are)
 * and drops the owner's reference; every party that can be called back
 * later holds one (a sandbox: its creation, a worker not ready yet; a
 * session: each of its calls).  The last reference hands the memory to
 * defer_free(), which frees it from the event loop, after the callbacks
 * running now have returned.  Code that holds a pointer across a return
 * to the loop checks the mark (sb->dead, c->cancelled, sess->closing),
 * never the memory.
 */
void defer_free(void (*)(void *), void *);
void defer_flush(void);
void defer_trim(void);

#endif
