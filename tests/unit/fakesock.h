/* A fake engine's socket for the unit tests (fakesock.c). */
#ifndef FAKESOCK_H
#define FAKESOCK_H

#include <stddef.h>

#include <event2/listener.h>

/*
 * Listen on a fresh unix socket, /tmp/<prefix>-<pid>.sock (its path into
 * path), and say its DOCKER_HOST ("unix://...") into host.  Asserts.
 */
struct evconnlistener *fakesock_listen(struct event_base *, const char *,
    evconnlistener_cb, char *, size_t, char *, size_t);

#endif
