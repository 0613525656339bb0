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

/*
 * What keep bytes of the kept text are: the first *hk of the head and
 * the last *tk of the tail (the tail's half first, the rest to the head).
 */
static void
output_split(const struct output *o, size_t keep, size_t *hk, size_t *tk)
{
	*tk = o->tail_len < keep / 2 ? o->tail_len : keep / 2;
	*hk = o->head_len < keep - *tk ? o->head_len : keep - *tk;
	*tk = o->tail_len < keep - *hk ? o->tail_len : keep - *hk;
}

/* Was anything elided, keeping keep bytes? */
int
output_cut(const struct output *o, size_t keep)
{
	size_t hk, tk;

	output_split(o, keep, &hk, &tk);
	return o->total > (long long)hk + (long long)tk;
}

/*
 * What a byte takes in a JSON string: escaped (\n, \" or \u0001), or
 * three for the first of a sequence that may be invalid UTF-8 (repaired
 * as U+FFFD).  A stray continuation byte is counted one, so a result of
 * such bytes may be over: tool_result_fit() is the bound.
 */
static size_t
escaped_cost(unsigned char c)
{
	if (c == '"' || c == '\\' || c == '/' || c == '\n' || c == '\r' ||
	    c == '\t' || c == '\b' || c == '\f')
		return 2;
	if (c < 0x20)
		return 6;
	return c >= 0xc0 ? 3 : 1;
}

/* At most how many bytes keep bytes take in a JSON string. */
size_t
output_escaped(const struct output *o, size_t keep)
{
	size_t hk, tk, i, n = 0, start;

	output_split(o, keep, &hk, &tk);
	for (i = 0; i < hk; i++)
		n += escaped_cost((unsigned char)o->head[i]);
	/* The tail's last tk bytes, in the ring. */
	start = (o->tail_len == o->half ? o->tail_pos : 0) + o->tail_len - tk;
	for (i = 0; i < tk; i++)
		n +=
		    escaped_cost((unsigned char)o->tail[(start + i) % o->half]);
	return n;
}

/* The bytes of the kept text to keep so that, escaped, they take at most
 * most bytes (a tool result's room for the stream). */
size_t
output_fit(const struct output *o, size_t most)
{
	size_t keep = o->head_len + o->tail_len, e, n;
	int i;

	if (keep > most)
		keep = most;
	for (i = 0; keep > 0 && (e = output_escaped(o, keep)) > most; i++) {
		/* As many as the bytes' mean cost allows; halves past a few
		 * tries (bytes of unequal cost), one less at least. */
		n = i < 8 ? (size_t)((double)keep * (double)most / (double)e)
		          : keep / 2;
		keep = n < keep ? n : keep - 1;
	}
	return keep;
}

/*
 * keep bytes of the kept text (output_fit's) as a JSON string, valid
 * UTF-8; when the middle was cut, a marker says how much and where (the
 * uri) the whole is.
 */
json_object *
output_json(const struct output *o, size_t keep, const char *uri)
{
	char *all, *clean, marker[512];
	size_t len = 0, start, outlen, hk, tk, i;
	json_object *s;
	int m = 0;

	output_split(o, keep, &hk, &tk);
	if (output_cut(o, keep))
		m = snprintf(marker, sizeof marker,
		    "\n[... %lld bytes elided; the whole output is the "
		    "resource %s ...]\n",
		    o->total - (long long)hk - (long long)tk,
		    uri != NULL ? uri : "(not kept)");
	all = xmalloc(hk + (size_t)m + tk + 1);
	memcpy(all, o->head, hk);
	len = hk;
	memcpy(all + len, marker, (size_t)m);
	len += (size_t)m;
	/* The ring's oldest byte is at tail_pos once it is full. */
	start = (o->tail_len == o->half ? o->tail_pos : 0) + o->tail_len - tk;
	for (i = 0; i < tk; i++)
		all[len + i] = o->tail[(start + i) % o->half];
	len += tk;
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
