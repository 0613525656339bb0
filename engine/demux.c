/* Demultiplexer of Docker's stdout/stderr stream framing. */
#include <errno.h>
#include <string.h>

#include "demux.h"

void
demux_init(struct demux *m)
{
	memset(m, 0, sizeof *m);
}

/*
 * Feed bytes as they arrive, split anywhere.  Returns 0, or -1 with errno
 * EPROTO on a header naming an unknown stream (or what cb returned).
 */
int
demux_feed(struct demux *m, const char *p, size_t len, demux_cb cb, void *arg)
{
	size_t n;

	while (len > 0) {
		if (m->left == 0) {
			n = sizeof m->hdr - m->hdrlen;
			if (n > len)
				n = len;
			memcpy(m->hdr + m->hdrlen, p, n);
			m->hdrlen += n;
			p += n;
			len -= n;
			if (m->hdrlen < sizeof m->hdr)
				return 0;
			m->hdrlen = 0;
			if (m->hdr[0] > DEMUX_STDERR || m->hdr[1] != 0 ||
			    m->hdr[2] != 0 || m->hdr[3] != 0) {
				errno = EPROTO;
				return -1;
			}
			m->stream = m->hdr[0];
			m->left = (uint32_t)m->hdr[4] << 24 |
			          (uint32_t)m->hdr[5] << 16 |
			          (uint32_t)m->hdr[6] << 8 | m->hdr[7];
			continue;
		}
		n = m->left < len ? m->left : len;
		if (cb(m->stream, p, n, arg) == -1)
			return -1;
		m->left -= (uint32_t)n;
		p += n;
		len -= n;
	}
	return 0;
}
