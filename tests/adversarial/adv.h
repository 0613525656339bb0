/*
 * Adversarial suite helpers, on top of tests/integration/harness.h.
 *
 * Every server started here carries the extra label ADV_LABEL (so the
 * final check can find anything the suite left behind) and a private
 * TMPDIR and runtime directory (MCP_SANDBOXD_RUNTIME_DIR), so that its
 * spool directory can be checked after it exits.
 */
#ifndef ADV_H
#define ADV_H

#include "harness.h"

#define ADV_LABEL_KEY "mcp-sandboxd-adversarial"
#define ADV_LABEL ADV_LABEL_KEY "=1"

/* A server (NULL-terminated extra arguments), initialized.  ADV_LOG in
 * the environment (info, debug) sets its log level. */
struct h_server *adv_start(const char *, ...);
/* h_finish(), then: no spool directory left in the server's TMPDIR, no
 * worker process of it left. */
void adv_finish(struct h_server *);
/* Drop a server that was killed (no exit checks); frees it. */
void adv_forget(struct h_server *);
/* The private TMPDIR of the servers of the current test. */
const char *adv_tmpdir(void);

/* The server still answers: a ping, and "echo" in the sandbox cid (or,
 * cid NULL, in a fresh sandbox that is then stopped). */
void adv_alive(struct h_server *, const char *);
/* execute_code of src in lang, dependencies none, for timeout_s; the
 * tool result, and the time it took in *ms (or NULL). */
json_object *adv_code(struct h_server *, const char *, const char *,
    const char *, int, long long *);
/* A background process (sandbox_exec background: true) of cmd, which
 * must not contain a double quote or a backslash, for timeout_s at most;
 * its process_id. */
long long adv_background(struct h_server *, const char *, const char *, int);
/* A counter of sandbox://stats ("limits.results_cut"); asserts it is
 * there. */
long long adv_stat(struct h_server *, const char *);
/* A ping answered within timeout ms; the time it took. */
long long adv_ping(struct h_server *, int);

/* ps in the sandbox: lines of `ps -eo pid,stat,args` that contain what
 * (and not the ps itself); 0 if none, -1 if ps could not run. */
int adv_procs(struct h_server *, const char *, const char *);

/* An exec of one command with extra arguments (JSON text or NULL);
 * timeout_s 0: the server's default.  The elapsed time in *ms. */
json_object *adv_exec(struct h_server *, const char *, const char *,
    const char *, int, long long *);

/* stdout/stderr of results[0]; "" when absent. */
const char *adv_out(json_object *);
/* The call did not succeed: a command failed (ran and exited non-zero,
 * was killed at a limit) or the tool refused it (isError). */
int adv_failed(json_object *);
const char *adv_err(json_object *);

/* Worker pids (children of the server). */
int adv_workers(struct h_server *, pid_t *, int);
/* Wait until none of the pids lives; how many still do. */
int adv_wait_pids_gone(const pid_t *, int, int);

/* Process RSS / peak RSS in KiB from /proc/<pid>/status, -1 if gone. */

#endif
