/* Host side of tar transfers: archive host trees, extract into them. */
#ifndef HOSTTAR_H
#define HOSTTAR_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <archive.h>
#include <event2/buffer.h>
#include <json-c/json.h>

#include "hostpath.h"

/*
 * What one transfer may hold, counting every entry of the archive (a
 * directory is an entry like a file) and every content byte, whether it
 * ends up written or skipped. 0 means no limit.
 */
struct tar_limits {
	uint64_t max_bytes;
	uint64_t max_files;
};

#define TAR_MAX_DEPTH 128 /* directories deep: archived, extracted */
#define TAR_MAX_LISTED 1000 /* paths listed in a report; the rest counted */
#define TAR_OWNER_ID 65534 /* uid/gid of archived entries, by default */

/*
 * An archive name in normal form ("a/b": no empty, "." or ".." component,
 * no leading or trailing '/'), possibly "", or NULL and why it is refused.
 */
char *tar_name_clean(const char *, const char **);

/*
 * libarchive's write callback into the evbuffer that *arg (a struct
 * evbuffer **) names, or nowhere while it is NULL: the producers set it
 * for a pump only.
 */
la_ssize_t tar_write_evbuffer(struct archive *, void *, const void *, size_t);

/*
 * Producer (host -> sandbox): a pax (ustar when it can) stream of one host
 * file or directory, made on the caller's thread, a slice per pump, in
 * bounded memory. Only regular files and directories go in; symlinks,
 * FIFOs, sockets, devices, excluded and unreadable entries are skipped
 * and listed.
 */
struct tar_out;

struct tar_out *tar_out_new(const struct hostpolicy *, const char *,
    const char *, const struct tar_limits *, const char *const *, char *,
    size_t);
/* Appends about want bytes to the buffer: 1 more to come, 0 done, -1. */
int tar_out_pump(struct tar_out *, struct evbuffer *, size_t);
const char *tar_out_error(struct tar_out *);
/* [{"path", "reason"}], owned by the tar_out (json_object_get to keep). */
json_object *tar_out_skipped(struct tar_out *);
uint64_t tar_out_nskipped(struct tar_out *); /* listed or not */
uint64_t tar_out_files(struct tar_out *); /* entries, directories too */
uint64_t tar_out_bytes(struct tar_out *); /* file content */
/* The uid/gid of the entries still to come (the sandbox's user). */
void tar_out_set_owner(struct tar_out *, uint32_t);
void tar_out_free(struct tar_out *);

/*
 * What a consumer's thread and its caller share (tar_in here, snap_in in
 * snaptar.c): the caller writes the archive into a non-blocking pipe,
 * in[1]; the thread, started with every signal blocked, reads in[0] and
 * ends with tar_pipe_ended(), which makes done[0] readable.
 */
struct tar_pipe {
	int in[2], done[2];
	pthread_t thread;
	int running;
};

void tar_pipe_init(struct tar_pipe *);
int tar_pipe_start(
    struct tar_pipe *, void *(*)(void *), void *, char *, size_t);
void tar_pipe_close_input(struct tar_pipe *);
void tar_pipe_ended(struct tar_pipe *);
void tar_pipe_join(struct tar_pipe *);
void tar_pipe_free(struct tar_pipe *);

/*
 * Consumer (sandbox -> host): the caller writes the stream into a
 * non-blocking pipe; a thread extracts it, regular files and directories
 * only, never through a symlink, never above the destination, into a
 * private directory inside the destination. Only once the whole archive
 * was read without an error is that tree merged into the destination
 * (files renamed into place); after an error nothing was written and the
 * private directory is removed. Without overwrite an existing file is
 * kept and listed as skipped ("exists"); existing directories are merged.
 * Files lose execute bits unless keep_exec; set-id and sticky bits always.
 * Names that could fool a host tool (a leading '-', control characters,
 * bidi controls, invalid UTF-8) and version control metadata (.git, .hg,
 * .svn and the deny list) are skipped and listed, with what is below them.
 * The thread ends (done_fd readable) at an error or once the input is
 * closed: after the trailer it reads on to EOF, so close the input when
 * the stream ends.
 */
struct tar_in;

struct tar_in_opts {
	int overwrite; /* replace existing files */
	int keep_exec; /* keep execute bits of files */
	const char *const *deny; /* more base names never written, or NULL */
	const char *limit_name; /* how errors name lim->max_bytes */
	/* One regular file (the archive's only entry, whatever its name)
	 * written as this name in the destination; NULL: a tree. */
	const char *single;
};

struct tar_in *tar_in_start(const char *, const struct tar_limits *,
    const struct tar_in_opts *, char *, size_t);
/* tar_in_start() with only overwrite set. */
struct tar_in *tar_in_new(
    const char *, const struct tar_limits *, int, char *, size_t);
int tar_in_fd(struct tar_in *); /* write the archive here */
void tar_in_close_input(struct tar_in *); /* end of the archive */
/* The caller gives up (its sender failed): nothing is merged, even from
 * an archive that came whole. */
void tar_in_abort(struct tar_in *);
int tar_in_done_fd(struct tar_in *); /* readable once extraction ended */
/*
 * Waits for the end, then 0 or -1 (tar_in_error), and a new summary:
 * {"files", "bytes", "written": [...], "skipped": [{"path", "reason"}]}.
 */
int tar_in_result(struct tar_in *, json_object **);
const char *tar_in_error(struct tar_in *);
/* Stops a transfer still running (a partial file is removed), joins. */
void tar_in_free(struct tar_in *);

#endif
