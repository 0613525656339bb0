/* Head-and-tail bounded output (see output.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "utf8.h"
#include "xmalloc.h"

/* Keep the first and the last limit/2 bytes of a stream, counting the rest. */
void
output_init(struct output *o, size_t limit)
{
	memset(o, 0, sizeof *o);
	o->half = limit / 2 > 0 ? limit / 2 : 1;
	o->head = xmalloc(o->half);
	o->tail = xmalloc(o->half);
}

/*
 * More of the stream: into the head while it has room, then the tail (a
 * ring).
 */
void
output_add(struct output *o, const char *p, size_t len)
{
	size_t n;

	o->total += (long long)len;
	if (o->head_len < o->half) {
		n = o->half - o->head_len < len ? o->half - o->head_len : len;
		memcpy(o->head + o->head_len, p, n);
		o->head_len += n;
		p += n;
		len -= n;
	}
	if (len >= o->half) {
		/* Only the last half matters. */
		memcpy(o->tail, p + len - o->half, o->half);
		o->tail_pos = 0;
		o->tail_len = o->half;
		return;
	}
	while (len > 0) {
		n = o->half - o->tail_pos < len ? o->half - o->tail_pos : len;
		memcpy(o->tail + o->tail_pos, p, n);
		o->tail_pos = (o->tail_pos + n) % o->half;
		if (o->tail_len < o->half)
			o->tail_len = o->tail_len + n > o->half
			                  ? o->half
			                  : o->tail_len + n;
		p += n;
		len -= n;
	}
}

/* Was anything elided? */
int
output_cut(const struct output *o)
{
	return o->total > (long long)o->head_len + (long long)o->tail_len;
}

/*
 * The kept text as a JSON string, valid UTF-8; when the middle was cut,
 * a marker says how much and where (the uri) the whole is.
 */
json_object *
output_json(const struct output *o, const char *uri)
{
	char *all, *clean, marker[512];
	size_t len = 0, start, outlen;
	json_object *s;
	int m = 0;

	if (output_cut(o))
		m = snprintf(marker, sizeof marker,
		    "\n[... %lld bytes elided; the whole output is the "
		    "resource %s ...]\n",
		    o->total - (long long)o->head_len - (long long)o->tail_len,
		    uri != NULL ? uri : "(not kept)");
	all = xmalloc(o->head_len + (size_t)m + o->tail_len + 1);
	memcpy(all, o->head, o->head_len);
	len = o->head_len;
	memcpy(all + len, marker, (size_t)m);
	len += (size_t)m;
	/* The ring's oldest byte is at tail_pos once it is full. */
	start = o->tail_len == o->half ? o->tail_pos : 0;
	memcpy(all + len, o->tail + start, o->tail_len - start);
	memcpy(all + len + (o->tail_len - start), o->tail, start);
	len += o->tail_len;
	clean = utf8_sanitize(all, len, &outlen);
	s = json_object_new_string_len(clean, (int)outlen);
	free(clean);
	free(all);
	return s;
}

void
output_reset(struct output *o)
{
	o->head_len = o->tail_len = o->tail_pos = 0;
	o->total = 0;
}

void
output_free(struct output *o)
{
	free(o->head);
	free(o->tail);
	memset(o, 0, sizeof *o);
}
