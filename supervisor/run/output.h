/*
 * Bounded output of a stream for a tool result: the head and the tail are
 * kept (limit bytes in all), the middle is counted and elided.  A result
 * may show less of what is kept (its room in the result, output_fit):
 * keep bytes, the head's first and the tail's last.
 */
#ifndef OUTPUT_H
#define OUTPUT_H

#include <stddef.h>

#include <json-c/json.h>

struct output {
	char *head, *tail; /* limit/2 bytes each; tail is a ring */
	size_t half, head_len, tail_len, tail_pos;
	long long total;
};

void output_init(struct output *, size_t);
void output_add(struct output *, const char *, size_t);
int output_cut(const struct output *, size_t);
size_t output_escaped(const struct output *, size_t);
size_t output_fit(const struct output *, size_t);
json_object *output_json(const struct output *, size_t, const char *);
void output_reset(struct output *);
void output_free(struct output *);

#endif
