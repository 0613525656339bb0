/*
 * A listener that rests when accept() fails: out of descriptors, the
 * pending connection stays queued and the socket readable, so without a
 * rest the loop would call the listener again at once, and spin.  It
 * stops accepting for LISTENREST_MS, then accepts again.
 */
#ifndef LISTENREST_H
#define LISTENREST_H

struct evconnlistener;
struct listenrest;

#define LISTENREST_MS 250

struct listenrest *listenrest_new(struct evconnlistener *, const char *);
void listenrest_free(struct listenrest *);
long long listenrest_count(const struct listenrest *);

#endif
