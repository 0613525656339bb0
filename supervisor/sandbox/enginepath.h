/*
 * Where the server's own files are on the engine's host, for the binds of
 * sandboxes: the same path, or through its mounts when the server is
 * itself a container (enginepath.c).
 */
#ifndef ENGINEPATH_H
#define ENGINEPATH_H

#include <json-c/json.h>

void enginepath_init(void);
char *enginepath_of(const char *);
void enginepath_free(void);
char *enginepath_translate(json_object *, const char *);

#endif
