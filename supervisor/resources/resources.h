/*
 * The resources: each sandbox's activity log and its runs' full output,
 * the server's counters; subscriptions.  Above the sandbox layer: it
 * registers its methods with the MCP layer at start.
 */
#ifndef RESOURCES_H
#define RESOURCES_H

#include <json-c/json.h>

struct session;

/* Register the resources methods with the MCP layer; listen to sandboxes. */
void resources_init(void);
/*
 * Resources of a URI prefix added at startup by a module outside the
 * server proper (the conformance fixtures; the real server adds none).
 */
struct resource_provider {
	const char *prefix; /* "test://": the URIs it owns */
	void (*list)(struct session *, json_object *); /* append resources */
	void (*templates)(struct session *, json_object *); /* append them */
	/* A ReadResourceResult, or NULL with *code and *why set. */
	json_object *(*read)(
	    struct session *, const char *, int *, const char **);
	int (*subscribe)(struct session *, const char *); /* -1: unknown */
};
int resources_register(const struct resource_provider *);

#endif
