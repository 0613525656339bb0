/*
 * Snapshot archives on the host: the tar stream a sandbox sends of its
 * writable mounts, checked entry by entry and written into one archive
 * file (snap_in, a thread), and such a file read back, checked again, as
 * the tar stream that restores it (snap_out, a slice per pump).
 */
#ifndef SNAPTAR_H
#define SNAPTAR_H

#include <stdint.h>

#include <event2/buffer.h>

/*
 * What an archive may hold: max_bytes of archive (headers and padding
 * counted, as it lies on the disk) and max_files entries.  0: no limit.
 * roots: the mounts it is of, relative paths ("app", "tmp"),
 * NULL-terminated; every entry is one of them or below one.
 */
struct snap_limits {
	uint64_t max_bytes;
	uint64_t max_files;
	const char *limit_name; /* how an error names max_bytes */
};

/*
 * Copier (sandbox -> file): the caller writes the stream into a
 * non-blocking pipe (snap_in_fd); a thread reads it with libarchive (tar
 * formats only, no filter) and writes each entry it keeps into out_fd: a
 * regular file, a directory, a symlink (its target kept as text, never
 * followed: it is only ever made again inside a sandbox) or a hardlink to
 * an entry before it, with its name, its permission bits (no set-id or
 * sticky bit), its size and its time, nothing else; then out_fd is synced.
 * Names must be clean relative paths below a root; anything else (a device, a
 * FIFO, a socket, a name with "..") is left out and counted.  The thread ends
 * (done_fd readable) at an error or at the end of the input.
 */
struct snap_in;

struct snap_in *snap_in_start(
    int, const struct snap_limits *, const char *const *, char *, size_t);
int snap_in_fd(struct snap_in *);
void snap_in_close_input(struct snap_in *);
int snap_in_done_fd(struct snap_in *);
/* Joins; 0 or -1 (snap_in_error); the counts of what was written. */
int snap_in_result(struct snap_in *, uint64_t *, uint64_t *, uint64_t *);
const char *snap_in_error(struct snap_in *);
int snap_in_over(struct snap_in *);
void snap_in_free(struct snap_in *);

/*
 * Producer (file -> sandbox): the archive at path, read with libarchive,
 * every entry checked as the copier does (a file that changed on the
 * disk fails), written again as a pax stream owned by uid.
 */
struct snap_out;

struct snap_out *snap_out_new(const char *, const struct snap_limits *,
    const char *const *, uint32_t, char *, size_t);
/* About want bytes more: 1 more to come, 0 done, -1 (snap_out_error). */
int snap_out_pump(struct snap_out *, struct evbuffer *, size_t);
const char *snap_out_error(struct snap_out *);
uint64_t snap_out_files(struct snap_out *);
uint64_t snap_out_bytes(struct snap_out *);
void snap_out_free(struct snap_out *);

#endif
