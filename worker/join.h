/*
 * Two sockets joined in the kernel (join.c): what one end sends goes out
 * of the other through a pipe, by splice(2), without a copy in this
 * process.
 */
#ifndef JOIN_H
#define JOIN_H

struct event_base;
struct evbuffer;
struct join;

/* Both ways ended (why NULL), or one failed (why says how). */
typedef void join_cb(void *, const char *why);

struct join *join_new(void);
void join_start(struct join *, struct event_base *, const int fd[2],
    struct evbuffer *held[2], const int eof[2], join_cb *, void *);
long long join_bytes(const struct join *, int);
void join_free(struct join *);

#endif
