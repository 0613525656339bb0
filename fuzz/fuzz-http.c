/*
 * Fuzz what an HTTP client reaches before the token: the gate at the
 * socket (supervisor/transport/http-conn.c), evhttp's parser behind it, and the
 * checks of http.c up to the token.  The server listens on loopback with
 * a random token the fuzzer cannot guess; each input is one client's
 * connection: the first byte chooses how the rest is cut into writes
 * (1 to 256 bytes each, the loop run between them), then the client shuts
 * its sending side and reads until the server closes.
 *
 * Contract: the server never crashes, answers or closes every connection,
 * and once it has closed holds no connection (http_conn_count() is 0).
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "config.h"
#include "core.h"
#include "fuzz.h"
#include "http-int.h"
#include "log.h"
#include "transport.h"

#define FUZZ_ROUNDS                                                            \
	2000 /* loop turns a connection may take to end,                       \
	        after its last byte is sent */

int LLVMFuzzerInitialize(int *, char ***);
int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct config conf;
static struct sockaddr_in addr;

static int
fuzz_port(void)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof sin;
	int fd, port;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	fuzz_check(fd >= 0, "socket");
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fuzz_check(bind(fd, (struct sockaddr *)&sin, sizeof sin) == 0, "bind");
	fuzz_check(
	    getsockname(fd, (struct sockaddr *)&sin, &len) == 0, "getsockname");
	port = ntohs(sin.sin_port);
	close(fd);
	return port;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char arg0[] = "fuzz-http", a1[] = "--transport", a2[] = "http",
	            a3[] = "--listen", a4[32];
	static char *args[] = {arg0, a1, a2, a3, a4, NULL};
	static char token[] =
	    "MCP_SANDBOXD_AUTH_TOKEN="
	    "f0e1d2c3b4a5968778695a4b3c2d1e0f0123456789abcdef";
	int port = fuzz_port();

	(void)argc;
	(void)argv;
	log_init("fuzz-http", LOG_ERROR);
	snprintf(a4, sizeof a4, "127.0.0.1:%d", port);
	fuzz_check(putenv(token) == 0, "putenv");
	fuzz_supervisor(&conf, 5, args);
	if (http_start() == -1)
		fatalx("http_start");
	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return 0;
}

/* Read and drop what the server sent; 1 once it has closed. */
static int
fuzz_drain(int fd)
{
	char buf[4096];
	ssize_t n;

	while ((n = read(fd, buf, sizeof buf)) > 0)
		;
	return n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t piece, off = 0, n, rounds, i;
	ssize_t w;
	int fd, closed = 0;

	if (size == 0)
		return 0;
	piece = (size_t)data[0] + 1;
	data++;
	size--;
	rounds = size / piece + 1 + FUZZ_ROUNDS;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	fuzz_check(fd >= 0, "socket");
	if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == -1)
		fuzz_check(errno == EINPROGRESS, "connect");
	for (i = 0; i < rounds && !closed; i++) {
		if (off < size) {
			n = size - off < piece ? size - off : piece;
			w = send(fd, data + off, n, MSG_NOSIGNAL);
			if (w > 0)
				off += (size_t)w;
			else if (w == -1 && errno != EAGAIN)
				off = size; /* the server has closed */
		}
		if (off == size) {
			shutdown(fd, SHUT_WR);
			off++; /* once */
		}
		event_base_loop(sup.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		closed = fuzz_drain(fd);
	}
	fuzz_check(closed, "the server neither answered nor closed");
	close(fd);
	/* What lingers after the close ends at the client's EOF. */
	for (i = 0; i < FUZZ_ROUNDS && http_conn_count() > 0; i++)
		event_base_loop(sup.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	fuzz_check(http_conn_count() == 0, "a connection is still counted");
	return 0;
}
