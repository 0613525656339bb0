/* A fake engine's socket for the unit tests. */
#include <sys/socket.h>
#include <sys/un.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "fakesock.h"

struct evconnlistener *
fakesock_listen(struct event_base *base, const char *prefix,
    evconnlistener_cb accept_cb, char *path, size_t pathlen, char *host,
    size_t hostlen)
{
	struct evconnlistener *lis;
	struct sockaddr_un sun;

	snprintf(path, pathlen, "/tmp/%s-%d.sock", prefix, (int)getpid());
	unlink(path);
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s", path);
	lis = evconnlistener_new_bind(base, accept_cb, NULL,
	    LEV_OPT_CLOSE_ON_FREE, -1, (struct sockaddr *)&sun, sizeof sun);
	cr_assert_not_null(lis, "listen on %s", path);
	snprintf(host, hostlen, "unix://%s", path);
	return lis;
}
