/*
 * Spools: the full output of every exec, on disk in a private directory of
 * the server, so that a tool result can stay small and nothing is lost.
 * Bounded by a per-sandbox quota; gone when the sandbox goes.
 */
#ifndef SPOOL_H
#define SPOOL_H

#include <stddef.h>
#include <sys/types.h>

struct spool_dir;
struct spool;

int spool_init(const char *, const char *, unsigned long long);
/* dir as a private directory of ours (0700, no symlink): 0, or -1. */
void spool_reap(void);
void spool_cleanup(void);
const char *spool_root_path(void);
const char *spool_listeners_path(void);

struct spool_dir *spool_dir_new(const char *, long long);
void spool_dir_free(struct spool_dir *);
void spool_totals(long long *, long long *, double *);

struct spool *spool_open(struct spool_dir *);
unsigned int spool_id(const struct spool *);
void spool_write(struct spool *, int, const void *, size_t);
int spool_complete(const struct spool *);
void spool_set_ring(struct spool *);
long long spool_size(const struct spool *, int);
long long spool_dropped(const struct spool *, int);
void spool_close(struct spool *);

ssize_t spool_read(struct spool_dir *, unsigned int, int, long long, void *,
    size_t, long long *);

#endif
