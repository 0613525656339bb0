/*
 * Snapshots: a sandbox's writable mounts (its workdir, /tmp and the tmpfs
 * of each VOLUME of its image) kept on the host, with what it was created
 * with (image, workdir, env, limits), so that it can be rolled back in
 * place (sandbox_restore) or forked (sandbox_initialize with snapshot).
 *
 * The store is the state directory (--state-dir, 0700): snapshots/ID/
 * holds meta.json and data.tar, made in snapshots/.new-ID and renamed
 * into place only once whole, so a snapshot is there entirely or not at
 * all, and it outlives the server.  A snapshot belongs to the principal of
 * the session that took it (a stdio session: the user running the server;
 * an HTTP session: that session alone, and its snapshots go with it); all
 * of them together hold at most --snapshot-mb, one at most
 * --snapshot-max-mb, each kept --snapshot-ttl.
 *
 * Taking: snapshot.sh stops the sandbox's other processes and sends a tar
 * of the mounts, which snaptar.c's copier checks and writes into the
 * archive as it comes, under the cap; meanwhile the sandbox's worker holds
 * every new call (wproc_gate).  Restoring: snaptar.c reads the archive
 * back, checked again, into restore.sh, which kills the sandbox's
 * processes, empties the mounts and unpacks it.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "clock.h"
#include "config.h"
#include "core.h"
#include "log.h"
#include "mcp.h"
#include "privdir.h"
#include "random.h"
#include "run.h"
#include "sandbox.h"
#include "snaptar.h"
#include "spool.h"
#include "xmalloc.h"

/* The tar of the mounts: engine/scripts/snapshot.sh, embedded. */
extern const char snapshot_sh[];

#define SNAP_META_MAX (256 * 1024) /* bytes of a meta.json read */
#define SNAP_SWEEP_SECONDS 600

static char *snap_dir; /* STATE/snapshots, once made */
static uint64_t snap_reserved; /* bytes held for snapshots being taken */
static struct event *snap_sweeper;

/* An id as the server makes them: "snap-" and 12 hex digits. */
int
snapshot_id_valid(const char *id)
{
	size_t i;

	if (strncmp(id, "snap-", 5) != 0 || strlen(id) != 5 + 12)
		return 0;
	for (i = 5; id[i] != '\0'; i++)
		if (!((id[i] >= '0' && id[i] <= '9') ||
		        (id[i] >= 'a' && id[i] <= 'f')))
			return 0;
	return 1;
}

/* The state directory: --state-dir, else the XDG one; NULL if none. */
static char *
state_dir(void)
{
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char *p;

	if (sup.conf->state_dir != NULL)
		return xstrdup(sup.conf->state_dir);
	if (xdg != NULL && *xdg == '/') {
		xasprintf(&p, "%s/mcp-sandboxd", xdg);
		return p;
	}
	if (home != NULL && *home == '/') {
		/* The XDG directories above it, as the specification has. */
		xasprintf(&p, "%s/.local", home);
		mkdir(p, 0700);
		free(p);
		xasprintf(&p, "%s/.local/state", home);
		mkdir(p, 0700);
		free(p);
		xasprintf(&p, "%s/.local/state/mcp-sandboxd", home);
		return p;
	}
	return NULL;
}

/* Makes the store if need be: 0, or -1 with why. */
static int
snap_store(char *err, size_t len)
{
	char *base, *dir, why[512];

	if (snap_dir != NULL)
		return 0;
	if ((base = state_dir()) == NULL) {
		snprintf(err, len,
		    "snapshots need a state directory: start the server with "
		    "--state-dir DIR (or set HOME)");
		return -1;
	}
	xasprintf(&dir, "%s/snapshots", base);
	if (privdir_check(base, 1, why, sizeof why) == -1 ||
	    privdir_check(dir, 1, why, sizeof why) == -1) {
		log_warnx("state directory: %s", why);
		snprintf(err, len,
		    "the state directory cannot hold snapshots: %s", why);
		free(base);
		free(dir);
		return -1;
	}
	free(base);
	snap_dir = dir;
	return 0;
}

/* Removes a snapshot's directory (its two files, or what a take left). */
static void
snap_remove(const char *name)
{
	char *p;

	xasprintf(&p, "%s/%s/data.tar", snap_dir, name);
	unlink(p);
	free(p);
	xasprintf(&p, "%s/%s/meta.json", snap_dir, name);
	unlink(p);
	free(p);
	xasprintf(&p, "%s/%s", snap_dir, name);
	if (rmdir(p) == -1 && errno != ENOENT)
		log_warnx(
		    "snapshot %s: cannot remove it: %s", name, strerror(errno));
	free(p);
}

/* A snapshot's meta.json, parsed; NULL if it is not a whole one. */
static json_object *
snap_meta_read(const char *id)
{
	json_object *m = NULL, *v;
	struct stat st;
	char *p, *buf;
	ssize_t n;
	int fd;

	xasprintf(&p, "%s/%s/meta.json", snap_dir, id);
	fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	free(p);
	if (fd == -1)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size < SNAP_META_MAX) {
		buf = xmalloc((size_t)st.st_size + 1);
		if ((n = read(fd, buf, (size_t)st.st_size)) == st.st_size) {
			buf[n] = '\0';
			m = json_tokener_parse(buf);
		}
		free(buf);
	}
	close(fd);
	if (m != NULL && (!json_object_is_type(m, json_type_object) ||
	                     !json_object_object_get_ex(m, "owner", &v) ||
	                     !json_object_is_type(v, json_type_string) ||
	                     !json_object_object_get_ex(m, "roots", &v) ||
	                     !json_object_is_type(v, json_type_array))) {
		json_object_put(m);
		m = NULL;
	}
	return m;
}

static long long
meta_int(json_object *m, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(m, key, &v) ? json_object_get_int64(v)
	                                             : 0;
}

const char *
snapshot_meta_str(json_object *m, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(m, key, &v) &&
	               json_object_is_type(v, json_type_string)
	           ? json_object_get_string(v)
	           : NULL;
}

/* Whether the server that took it still runs (reaper_owner_alive()). */
static int
meta_owner_alive(json_object *m)
{
	const char *boot = snapshot_meta_str(m, "server_boot"),
	           *pid = snapshot_meta_str(m, "server_pid"),
	           *start = snapshot_meta_str(m, "server_start");

	if (boot == NULL || pid == NULL || start == NULL)
		return 0;
	return reaper_owner_alive(boot, pid, start);
}

/* Whether a take's private directory is older than a take may last. */
static int
snap_stale(const char *name)
{
	struct stat st;
	char *p;
	int stale;

	xasprintf(&p, "%s/%s", snap_dir, name);
	stale = lstat(p, &st) == 0 &&
	        time(NULL) - st.st_mtime > sup.conf->max_exec_timeout + 600;
	free(p);
	return stale;
}

/* Whether this very server took it. */
static int
meta_is_ours(json_object *m)
{
	const char *pid = snapshot_meta_str(m, "server_pid"),
	           *start = snapshot_meta_str(m, "server_start");

	return pid != NULL && start != NULL && atol(pid) == (long)getpid() &&
	       strtoull(start, NULL, 10) == sup.start_ticks;
}

/* The bytes its archive takes on the disk. */
static uint64_t
snap_bytes(const char *id)
{
	struct stat st;
	char *p;
	uint64_t n = 0;

	xasprintf(&p, "%s/%s/data.tar", snap_dir, id);
	if (stat(p, &st) == 0)
		n = (uint64_t)st.st_blocks * 512 > (uint64_t)st.st_size
		        ? (uint64_t)st.st_blocks * 512
		        : (uint64_t)st.st_size;
	free(p);
	return n;
}

/* The bytes of every snapshot in the store (stats_snapshot_bytes). */
long long
snapshot_store_bytes(void)
{
	struct dirent *de;
	uint64_t used = 0;
	DIR *d;

	if (snap_dir == NULL || (d = opendir(snap_dir)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		if (snapshot_id_valid(de->d_name))
			used += snap_bytes(de->d_name);
	closedir(d);
	return (long long)used;
}

/*
 * Every snapshot of the store: expired ones and what an interrupted take
 * left are removed; each (meta, owned) of principal (NULL: all) goes to
 * list, if given, and their bytes to *mine, if given; the bytes of all of
 * them are the result.
 */
static uint64_t
snap_scan_mine(const char *principal, json_object *list, uint64_t *mine)
{
	struct dirent *de;
	json_object *m;
	const char *owner;
	uint64_t used = 0, n;
	time_t now = time(NULL);
	DIR *d;

	if ((d = opendir(snap_dir)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, ".new-", 5) == 0) {
			/* A take of this process is in its private name and
			 * in snap_reserved; one older than any take may last
			 * (another server's, sharing the directory, may be
			 * running) is what a dead one left. */
			if ((strlen(de->d_name) > 5 &&
			        snapshot_take_running(de->d_name + 5)) ||
			    !snap_stale(de->d_name))
				continue;
			snap_remove(de->d_name);
			continue;
		}
		if (!snapshot_id_valid(de->d_name))
			continue;
		if ((m = snap_meta_read(de->d_name)) == NULL) {
			snap_remove(de->d_name);
			continue;
		}
		if (meta_int(m, "expires") <= now) {
			log_info("snapshot %s expired: removed", de->d_name);
			snap_remove(de->d_name);
			json_object_put(m);
			continue;
		}
		owner = snapshot_meta_str(m, "owner");
		/* An HTTP session's, of a server that is gone: nobody can
		 * reach it again.  One whose server cannot be judged (in
		 * another pid namespace, sharing the state directory) stays
		 * to its expiry. */
		if (strncmp(owner, "session-", 8) == 0 &&
		    meta_owner_alive(m) == 0) {
			log_info("snapshot %s: its session's server is gone: "
			         "removed",
			    de->d_name);
			snap_remove(de->d_name);
			json_object_put(m);
			continue;
		}
		n = snap_bytes(de->d_name);
		used += n;
		if (mine != NULL && principal != NULL &&
		    strcmp(owner, principal) == 0)
			*mine += n;
		if (list != NULL &&
		    (principal == NULL || strcmp(owner, principal) == 0))
			json_object_array_add(list, m);
		else
			json_object_put(m);
	}
	closedir(d);
	return used;
}

static uint64_t
snap_scan(const char *principal, json_object *list)
{
	return snap_scan_mine(principal, list, NULL);
}

static void
snap_sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	struct timeval tv = {SNAP_SWEEP_SECONDS, 0};

	(void)fd;
	(void)what;
	(void)arg;
	if (snap_dir != NULL)
		snap_scan(NULL, NULL);
	evtimer_add(snap_sweeper, &tv);
}

/*
 * At start: expired snapshots go, now and every few minutes (only when
 * the state directory exists: a server that never took one makes none).
 */
void
snapshot_init(void)
{
	struct timeval tv = {SNAP_SWEEP_SECONDS, 0};
	struct stat st;
	char *base, err[512];

	if ((base = state_dir()) != NULL && stat(base, &st) == 0 &&
	    snap_store(err, sizeof err) == 0)
		snap_scan(NULL, NULL);
	free(base);
	snap_sweeper = evtimer_new(sup.base, snap_sweep_cb, NULL);
	evtimer_add(snap_sweeper, &tv);
}

/* The session's snapshots (metas, owned). */
json_object *
snapshot_list(struct session *sess, char *err, size_t len)
{
	json_object *list;

	if (snap_store(err, len) == -1)
		return NULL;
	list = json_object_new_array();
	snap_scan(sess->principal, list);
	return list;
}

/*
 * The session's snapshot id (its meta, owned), or NULL with why: another
 * principal's is as missing as one that never was.
 */
json_object *
snapshot_get(struct session *sess, const char *id, char *err, size_t len)
{
	json_object *m;
	const char *owner;

	if (snap_store(err, len) == -1)
		return NULL;
	if (snapshot_id_valid(id) && (m = snap_meta_read(id)) != NULL) {
		if ((owner = snapshot_meta_str(m, "owner")) != NULL &&
		    strcmp(owner, sess->principal) == 0 &&
		    meta_int(m, "expires") > time(NULL))
			return m;
		json_object_put(m);
	}
	snprintf(err, len,
	    "no snapshot \"%.40s\" of this session (snapshot_list shows "
	    "them; they expire after --snapshot-ttl)",
	    id);
	return NULL;
}

int
snapshot_delete(struct session *sess, const char *id, char *err, size_t len)
{
	json_object *m;

	if ((m = snapshot_get(sess, id, err, len)) == NULL)
		return -1;
	json_object_put(m);
	snap_remove(id);
	log_info("snapshot %s deleted", id);
	return 0;
}

/* Removes the snapshots of principal (NULL: every HTTP session's). */
static void
snap_remove_of(const char *principal)
{
	json_object *list, *m;
	const char *id, *owner;
	size_t i;

	list = json_object_new_array();
	snap_scan(principal, list);
	for (i = 0; i < json_object_array_length(list); i++) {
		m = json_object_array_get_idx(list, i);
		id = snapshot_meta_str(m, "snapshot_id");
		owner = snapshot_meta_str(m, "owner");
		if (id != NULL && snapshot_id_valid(id) &&
		    strncmp(owner, "session-", 8) == 0 &&
		    (principal != NULL || meta_is_ours(m))) {
			snap_remove(id);
			log_info("snapshot %s removed with its session", id);
		}
	}
	json_object_put(list);
}

/* A session ended: an HTTP session's snapshots go with it. */
void
snapshot_session_closed(struct session *sess)
{
	if (snap_dir != NULL && strncmp(sess->principal, "session-", 8) == 0)
		snap_remove_of(sess->principal);
}

/* The server stops: its HTTP sessions' snapshots go with them. */
void
snapshot_shutdown(void)
{
	if (snap_dir != NULL)
		snap_remove_of(NULL);
}

/* The path of a snapshot's archive (caller frees). */
char *
snapshot_archive(const char *id)
{
	char *p;

	xasprintf(&p, "%s/%s/data.tar", snap_dir, id);
	return p;
}

/* The sandbox's writable mounts, absolute, NULL-terminated (caller frees
 * the array, not the strings, which the sandbox holds). */
const char **
snapshot_roots(const struct sandbox *sb)
{
	const char **v;
	size_t n = 0, i, nv;

	nv = sb->volumes != NULL ? json_object_array_length(sb->volumes) : 0;
	v = xcalloc(nv + 3, sizeof *v);
	v[n++] = sb->workdir;
	if (strcmp(sb->workdir, "/tmp") != 0)
		v[n++] = "/tmp";
	for (i = 0; i < nv; i++)
		v[n++] = json_object_get_string(
		    json_object_array_get_idx(sb->volumes, i));
	return v;
}

/* A meta's roots, absolute (the array owns them) and relative. */
static void
roots_of(json_object *m, const char ***abs, const char ***rel)
{
	json_object *r;
	const char *s;
	size_t i, n;

	json_object_object_get_ex(m, "roots", &r);
	n = json_object_array_length(r);
	*abs = xcalloc(n + 1, sizeof **abs);
	*rel = xcalloc(n + 1, sizeof **rel);
	for (i = 0; i < n; i++) {
		s = json_object_get_string(json_object_array_get_idx(r, i));
		(*abs)[i] = s;
		(*rel)[i] = s[0] == '/' ? s + 1 : s;
	}
}

/* --- taking one --- */

struct snaptake {
	struct call *call;
	struct sandbox *sb;
	struct xrun *run;
	struct snap_in *sin;
	struct evbuffer *held;
	struct event *ev_pipe, *ev_done, *ev_idle;
	int run_done, sin_done;
	char id[24];
	char *tmp; /* STATE/snapshots/.new-ID */
	int fd; /* its data.tar */
	json_object *meta;
	uint64_t reserved;
	long long t0;
	char *error;
	snapshot_cb done;
	void *arg;
	LIST_ENTRY(snaptake) entry;
};
static LIST_HEAD(, snaptake) takes = LIST_HEAD_INITIALIZER(takes);

static int restoring(const struct sandbox *);

/* Why a snapshot or a restore of sb cannot start now, or NULL. */
static const char *
snap_busy(const struct sandbox *sb)
{
	struct snaptake *t;

	LIST_FOREACH(t, &takes, entry)
	if (t->sb == sb)
		return "a snapshot of this sandbox is being taken; try again "
		       "once it is done";
	if (restoring(sb))
		return "this sandbox is being restored; try again once it is "
		       "done";
	return NULL;
}

/* Whether a take of this process is writing snapshot id. */
int
snapshot_take_running(const char *id)
{
	struct snaptake *t;

	LIST_FOREACH(t, &takes, entry)
	if (strcmp(t->id, id) == 0)
		return 1;
	return 0;
}

static void take_finish(struct snaptake *);

static void
take_fail(struct snaptake *t, const char *fmt, const char *detail)
{
	if (t->error == NULL)
		xasprintf(&t->error, fmt, detail);
	if (t->run != NULL && !t->run_done)
		xrun_cancel(t->run);
}

static void
take_progress(struct snaptake *t)
{
	struct timeval tv = {sup.conf->transfer_idle, 0};

	evtimer_add(t->ev_idle, &tv);
}

static void
take_idle_cb(evutil_socket_t fd, short what, void *arg)
{
	struct snaptake *t = arg;
	char msg[160];

	(void)fd;
	(void)what;
	snprintf(msg, sizeof msg,
	    "no progress for %ld s (--transfer-idle-timeout): the sandbox "
	    "stopped sending",
	    sup.conf->transfer_idle);
	take_fail(t, "%s", msg);
	snap_in_close_input(t->sin);
}

/* What came goes into the copier's pipe; credit back as it goes. */
static void
take_feed(struct snaptake *t)
{
	size_t len;
	ssize_t n;

	while ((len = evbuffer_get_length(t->held)) > 0) {
		if (t->error != NULL || t->sin_done)
			n = -1;
		else
			n = write(snap_in_fd(t->sin),
			    evbuffer_pullup(t->held, (ssize_t)len), len);
		if (n == -1 && errno == EAGAIN && t->error == NULL &&
		    !t->sin_done) {
			event_add(t->ev_pipe, NULL);
			return;
		}
		if (n <= 0)
			n = (ssize_t)len; /* the copier stopped */
		else
			take_progress(t);
		evbuffer_drain(t->held, (size_t)n);
		if (!t->run_done)
			xrun_took(t->run, (size_t)n);
	}
	if (t->run_done || t->error != NULL) {
		snap_in_close_input(t->sin);
		evtimer_del(t->ev_idle);
	}
}

static void
take_pipe_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	take_feed(arg);
}

static void
take_copier_cb(evutil_socket_t fd, short what, void *arg)
{
	struct snaptake *t = arg;
	uint64_t a, b, c;

	(void)fd;
	(void)what;
	t->sin_done = 1;
	if (snap_in_result(t->sin, &a, &b, &c) == -1) {
		if (snap_in_over(t->sin))
			stats.snapshots_refused++;
		take_fail(t, "%s", snap_in_error(t->sin));
	}
	take_feed(t);
	take_finish(t);
}

static int
take_sink(struct xrun *run, const char *p, size_t len, void *arg)
{
	struct snaptake *t = arg;

	(void)run;
	if (t->error != NULL)
		return 0;
	evbuffer_add(t->held, p, len);
	take_feed(t);
	return 1;
}

static void
thawed(struct xrun *run, json_object *r, void *arg)
{
	(void)run;
	(void)r;
	(void)arg;
}

static void
take_run_done(struct xrun *run, json_object *r, void *arg)
{
	struct snaptake *t = arg;
	struct xrun_opts o;
	json_object *v;
	int ok;

	(void)run;
	t->run_done = 1;
	ok = json_object_object_get_ex(r, "exit_code", &v) &&
	     json_object_get_int(v) == 0;
	/*
	 * Its processes go on: the script's end continued them, but a
	 * script killed (a cancellation, a timeout, the cap) could not, so
	 * then every process of the sandbox's user is continued.  The calls
	 * that waited go out after.
	 */
	if (!ok && !t->sb->dead && t->sb->worker != NULL) {
		memset(&o, 0, sizeof o);
		o.command = "kill -CONT -1 2>/dev/null; exit 0";
		o.log_as = "sandbox_snapshot: its processes continued";
		o.timeout_ms = 30000;
		xrun_start(NULL, t->sb, &o, thawed, NULL);
	}
	if (t->sb->worker != NULL)
		wproc_gate(t->sb->worker, 0);
	if (t->error == NULL && !ok)
		take_fail(t, "%s",
		    xrun_failure(r, "the sandbox could not archive its files"));
	take_feed(t);
	take_finish(t);
}

static void
iso_time(time_t when, char *buf, size_t len)
{
	struct tm tm;

	gmtime_r(&when, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The entry of snapshot_list and the answers, from its meta. */
json_object *
snapshot_json(json_object *m)
{
	json_object *o, *v;
	char when[32];
	static const char *const keep[] = {"snapshot_id", "name", "image",
	    "workdir", "runtime", "source", NULL};
	size_t i;

	o = json_object_new_object();
	for (i = 0; keep[i] != NULL; i++)
		if (json_object_object_get_ex(m, keep[i], &v) && v != NULL)
			json_object_object_add(o, keep[i], json_object_get(v));
	json_object_object_add(
	    o, "bytes", json_object_new_int64(meta_int(m, "bytes")));
	json_object_object_add(
	    o, "files", json_object_new_int64(meta_int(m, "files")));
	iso_time((time_t)meta_int(m, "created"), when, sizeof when);
	json_object_object_add(o, "created_at", json_object_new_string(when));
	iso_time((time_t)meta_int(m, "expires"), when, sizeof when);
	json_object_object_add(o, "expires_at", json_object_new_string(when));
	return o;
}

/* The meta.json written and the directory moved into place. */
static int
take_store(struct snaptake *t, uint64_t files, uint64_t bytes)
{
	const char *s;
	char *p, *to;
	size_t len;
	int fd, rc = -1;

	json_object_object_add(
	    t->meta, "files", json_object_new_int64((int64_t)files));
	json_object_object_add(
	    t->meta, "bytes", json_object_new_int64((int64_t)bytes));
	/* (The copier synced the archive.) */
	xasprintf(&p, "%s/meta.json", t->tmp);
	s = json_object_to_json_string_length(
	    t->meta, JSON_C_TO_STRING_PLAIN, &len);
	if ((fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) !=
	        -1 &&
	    write(fd, s, len) == (ssize_t)len && fsync(fd) == 0)
		rc = 0;
	if (fd != -1)
		close(fd);
	free(p);
	if (rc == 0) {
		xasprintf(&to, "%s/%s", snap_dir, t->id);
		if (rename(t->tmp, to) == -1)
			rc = -1;
		free(to);
	}
	if (rc == -1)
		take_fail(t, "cannot write the snapshot: %s", strerror(errno));
	return rc;
}

static void
take_finish(struct snaptake *t)
{
	uint64_t files = 0, bytes = 0, skipped = 0;
	char *name;

	if (!t->run_done || !t->sin_done)
		return;
	LIST_REMOVE(t, entry);
	snap_reserved -= t->reserved;
	if (t->error == NULL &&
	    snap_in_result(t->sin, &files, &bytes, &skipped) == -1) {
		if (snap_in_over(t->sin))
			stats.snapshots_refused++;
		take_fail(t, "%s", snap_in_error(t->sin));
	}
	if (t->error == NULL)
		take_store(t, files, bytes);
	if (t->error != NULL) {
		xasprintf(&name, ".new-%s", t->id);
		snap_remove(name);
		free(name);
		log_info("snapshot of %.12s failed: %s", t->sb->id, t->error);
		t->done(t->call, NULL, t->error, t->arg);
	} else {
		json_object_object_add(t->meta, "skipped",
		    json_object_new_int64((int64_t)skipped));
		json_object_object_add(t->meta, "duration_ms",
		    json_object_new_int64(clock_ms() - t->t0));
		log_info("snapshot %s of %.12s: %llu entries, %llu bytes",
		    t->id, t->sb->id, (unsigned long long)files,
		    (unsigned long long)bytes);
		t->done(t->call, t->meta, NULL, t->arg);
	}
	json_object_put(t->meta);
	event_free(t->ev_pipe);
	event_free(t->ev_done);
	event_free(t->ev_idle);
	snap_in_free(t->sin);
	evbuffer_free(t->held);
	if (t->fd != -1)
		close(t->fd);
	sandbox_unref(t->sb);
	free(t->tmp);
	free(t->error);
	free(t);
}

static json_object *
limits_json(const struct limits *l)
{
	json_object *o = json_object_new_object();

	json_object_object_add(
	    o, "memory_mb", json_object_new_int64(l->memory_mb));
	json_object_object_add(o, "cpus", json_object_new_double(l->cpus));
	json_object_object_add(o, "pids", json_object_new_int64(l->pids));
	return o;
}

/*
 * Takes a snapshot of sb, named name (or NULL); done(call, meta, NULL,
 * arg) with its meta, or done(call, NULL, why, arg).  -1 with err when it
 * cannot start (nothing was done).
 */
int
snapshot_take(struct call *c, struct sandbox *sb, const char *name,
    snapshot_cb done, void *arg, char *err, size_t len)
{
	const struct config *conf = sup.conf;
	struct snap_limits lim;
	struct xrun_opts o;
	struct snaptake *t;
	const char **roots, **rel;
	json_object *a;
	uint64_t total, used, each, room, share, mine = 0, mine_room;
	const char *owner = c != NULL ? c->sess->principal : "";
	char *data, line[128];
	size_t i;

	if (snap_busy(sb) != NULL) {
		snprintf(err, len, "%s", snap_busy(sb));
		return -1;
	}
	if (snap_store(err, len) == -1)
		return -1;
	total = (uint64_t)conf->snapshot_mb * 1024 * 1024;
	each = (uint64_t)conf->snapshot_max_mb * 1024 * 1024;
	share = (uint64_t)conf->snapshot_mb_per_owner * 1024 * 1024;
	used = snap_scan_mine(owner, NULL, &mine) + snap_reserved;
	LIST_FOREACH(t, &takes, entry)
	{
		const char *o = snapshot_meta_str(t->meta, "owner");

		if (o != NULL && strcmp(o, owner) == 0)
			mine += t->reserved;
	}
	room = used < total ? total - used : 0;
	mine_room = mine < share ? share - mine : 0;
	if (mine_room < 64 * 1024) {
		snprintf(err, len,
		    "the snapshots of %s take %llu MiB of the %ld MiB each "
		    "owner's may (--snapshot-mb-per-owner): delete some with "
		    "snapshot_delete",
		    c != NULL && strncmp(owner, "session-", 8) == 0
		        ? "this session"
		        : "this server's user",
		    (unsigned long long)(mine >> 20),
		    conf->snapshot_mb_per_owner);
		stats.snapshots_refused++;
		return -1;
	}
	if (room < 64 * 1024) {
		snprintf(err, len,
		    "the snapshots of this server take %llu MiB of the "
		    "%ld MiB they may (--snapshot-mb): delete some with "
		    "snapshot_delete",
		    (unsigned long long)(used >> 20), conf->snapshot_mb);
		stats.snapshots_refused++;
		return -1;
	}
	t = xcalloc(1, sizeof *t);
	t->fd = -1;
	memcpy(t->id, "snap-", 5);
	random_hex(t->id + 5, 6);
	xasprintf(&t->tmp, "%s/.new-%s", snap_dir, t->id);
	if (mkdir(t->tmp, 0700) == -1) {
		snprintf(
		    err, len, "cannot make the snapshot: %s", strerror(errno));
		free(t->tmp);
		free(t);
		return -1;
	}
	xasprintf(&data, "%s/data.tar", t->tmp);
	t->fd = open(data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	free(data);
	roots = snapshot_roots(sb);
	for (i = 0; roots[i] != NULL; i++)
		;
	rel = xcalloc(i + 1, sizeof *rel);
	for (i = 0; roots[i] != NULL; i++)
		rel[i] = roots[i] + 1;
	memset(&lim, 0, sizeof lim);
	lim.max_bytes = each;
	lim.limit_name = "--snapshot-max-mb";
	if (mine_room < lim.max_bytes) {
		lim.max_bytes = mine_room;
		lim.limit_name = "--snapshot-mb-per-owner, with the owner's "
		                 "snapshots there are";
	}
	if (room < lim.max_bytes) {
		lim.max_bytes = room;
		lim.limit_name = "--snapshot-mb, with the snapshots there are";
	}
	lim.max_files = (uint64_t)conf->project_files;
	if (t->fd == -1 ||
	    (t->sin = snap_in_start(t->fd, &lim, rel, err, len)) == NULL) {
		if (t->fd == -1)
			snprintf(err, len, "cannot make the snapshot: %s",
			    strerror(errno));
		free(roots);
		free(rel);
		if (t->fd != -1)
			close(t->fd);
		xasprintf(&data, ".new-%s", t->id);
		snap_remove(data);
		free(data);
		free(t->tmp);
		free(t);
		return -1;
	}
	t->reserved = lim.max_bytes;
	snap_reserved += t->reserved;
	t->call = c;
	t->sb = sandbox_ref(sb);
	t->done = done;
	t->arg = arg;
	t->t0 = clock_ms();
	t->held = evbuffer_new();
	t->ev_pipe =
	    event_new(sup.base, snap_in_fd(t->sin), EV_WRITE, take_pipe_cb, t);
	t->ev_done = event_new(
	    sup.base, snap_in_done_fd(t->sin), EV_READ, take_copier_cb, t);
	t->ev_idle = evtimer_new(sup.base, take_idle_cb, t);
	event_add(t->ev_done, NULL);
	take_progress(t);
	LIST_INSERT_HEAD(&takes, t, entry);

	t->meta = json_object_new_object();
	json_object_object_add(
	    t->meta, "snapshot_id", json_object_new_string(t->id));
	if (name != NULL)
		json_object_object_add(
		    t->meta, "name", json_object_new_string(name));
	json_object_object_add(t->meta, "owner",
	    json_object_new_string(c != NULL ? c->sess->principal : ""));
	json_object_object_add(
	    t->meta, "created", json_object_new_int64(time(NULL)));
	json_object_object_add(t->meta, "expires",
	    json_object_new_int64(time(NULL) + conf->snapshot_ttl));
	json_object_object_add(
	    t->meta, "image", json_object_new_string(sb->image));
	json_object_object_add(
	    t->meta, "workdir", json_object_new_string(sb->workdir));
	/* A fork runs under it too (none: the engine's default then). */
	if (sb->runtime != NULL)
		json_object_object_add(
		    t->meta, "runtime", json_object_new_string(sb->runtime));
	json_object_object_add(t->meta, "env",
	    sb->env != NULL ? json_object_get(sb->env)
	                    : json_object_new_object());
	json_object_object_add(t->meta, "limits", limits_json(&sb->lim));
	a = json_object_new_array();
	for (i = 0; roots[i] != NULL; i++)
		json_object_array_add(a, json_object_new_string(roots[i]));
	json_object_object_add(t->meta, "roots", a);
	json_object_object_add(
	    t->meta, "source", json_object_new_string(sb->id));
	/* Who took it, for a session's snapshots left by a server gone. */
	json_object_object_add(
	    t->meta, "server_boot", json_object_new_string(sup.boot_id));
	snprintf(line, sizeof line, "%d", (int)getpid());
	json_object_object_add(
	    t->meta, "server_pid", json_object_new_string(line));
	snprintf(line, sizeof line, "%llu", sup.start_ticks);
	json_object_object_add(
	    t->meta, "server_start", json_object_new_string(line));

	memset(&o, 0, sizeof o);
	o.command = snapshot_sh;
	o.args = roots;
	snprintf(line, sizeof line, "sandbox_snapshot %s", t->id);
	o.log_as = line;
	o.timeout_ms = conf->max_exec_timeout * 1000;
	o.stdout_sink = take_sink;
	t->run = xrun_start(c, sb, &o, take_run_done, t);
	/* Every call made from now on waits for the archive. */
	if (sb->worker != NULL && !t->run_done)
		wproc_gate(sb->worker, 1);
	free(roots);
	free(rel);
	return 0;
}

/* --- restoring one --- */

struct snaprestore {
	struct call *call;
	struct sandbox *sb;
	struct upload *up;
	LIST_ENTRY(snaprestore) entry;
	json_object *meta;
	const char **abs, **rel;
	long long t0;
	snapshot_cb done;
	void *arg;
};

static LIST_HEAD(, snaprestore) restores = LIST_HEAD_INITIALIZER(restores);

static int
restoring(const struct sandbox *sb)
{
	struct snaprestore *r;

	LIST_FOREACH(r, &restores, entry)
	if (r->sb == sb)
		return 1;
	return 0;
}

static void
restore_done(struct upload *u, const char *error, void *arg)
{
	struct snaprestore *r = arg;
	json_object *res = upload_result(u), *v, *o;
	const char *err;
	long long killed = 0;

	if (res != NULL && json_object_object_get_ex(res, "stderr", &v) &&
	    (err = json_object_get_string(v)) != NULL &&
	    (err = strstr(err, "killed ")) != NULL)
		killed = strtoll(err + 7, NULL, 10);
	LIST_REMOVE(r, entry);
	/* The calls that waited go out. */
	if (r->sb->worker != NULL)
		wproc_gate(r->sb->worker, 0);
	if (error != NULL) {
		log_info("restore of %s into %.12s failed: %s",
		    snapshot_meta_str(r->meta, "snapshot_id"), r->sb->id,
		    error);
		r->done(r->call, NULL, error, r->arg);
	} else {
		o = snapshot_json(r->meta);
		json_object_object_add(
		    o, "processes_killed", json_object_new_int64(killed));
		json_object_object_add(o, "duration_ms",
		    json_object_new_int64(clock_ms() - r->t0));
		log_info("snapshot %s restored into %.12s",
		    snapshot_meta_str(r->meta, "snapshot_id"), r->sb->id);
		r->done(r->call, o, NULL, r->arg);
		json_object_put(o);
	}
	upload_free(u);
	json_object_put(r->meta);
	sandbox_unref(r->sb);
	free(r->abs);
	free(r->rel);
	free(r);
}

/*
 * Rolls sb back to the snapshot of meta (taken): its processes killed,
 * its mounts emptied and filled from the archive.  done(call, result,
 * NULL, arg) or done(call, NULL, why, arg); -1 with err when it cannot
 * start.
 */
int
snapshot_restore(struct call *c, struct sandbox *sb, json_object *meta,
    snapshot_cb done, void *arg, char *err, size_t len)
{
	struct snaprestore *r;
	struct snap_limits lim;
	struct snap_out *so;
	const char *id = snapshot_meta_str(meta, "snapshot_id");
	char *path, line[128];

	if (snap_busy(sb) != NULL) {
		snprintf(err, len, "%s", snap_busy(sb));
		json_object_put(meta);
		return -1;
	}
	r = xcalloc(1, sizeof *r);
	roots_of(meta, &r->abs, &r->rel);
	memset(&lim, 0, sizeof lim);
	lim.max_bytes = (uint64_t)meta_int(meta, "bytes");
	lim.max_files = (uint64_t)meta_int(meta, "files");
	path = snapshot_archive(id);
	so = snap_out_new(path, &lim, r->rel, (uint32_t)sb->uid, err, len);
	free(path);
	if (so == NULL) {
		free(r->abs);
		free(r->rel);
		free(r);
		json_object_put(meta);
		return -1;
	}
	r->call = c;
	r->sb = sandbox_ref(sb);
	r->meta = meta;
	r->done = done;
	r->arg = arg;
	r->t0 = clock_ms();
	snprintf(line, sizeof line, "sandbox_restore %s", id);
	LIST_INSERT_HEAD(&restores, r, entry);
	r->up = upload_snapshot(c, sb, so, r->abs, line, restore_done, r);
	/* Every call made from now on waits for the restore. */
	if (sb->worker != NULL && restoring(sb))
		wproc_gate(sb->worker, 1);
	return 0;
}
