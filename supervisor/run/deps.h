/* Dependency detection: the third-party packages a snippet of code needs. */
#ifndef DEPS_H
#define DEPS_H

#include <stddef.h>

#include <json-c/json.h>

/*
 * The packages that len bytes of code (need not be NUL-terminated) in
 * language ("python", "javascript", "typescript", "go" or "bash") import,
 * as a new json-c array of strings, deduplicated, in order of first
 * appearance; the caller owns it. Python gives PyPI names (standard
 * library skipped, module names mapped), JavaScript and TypeScript npm
 * names (node built-ins and relative paths skipped), Go module paths
 * (standard library skipped); bash gives an empty array. NULL with errno
 * EINVAL for an unknown language, ENOMEM when json-c cannot allocate.
 * Nothing is executed: the code is only scanned.
 */
struct json_object *deps_detect(const char *, const char *, size_t);

/*
 * Is name a well-formed package argument for manager ("pip", "npm", "go"
 * or "apt"), with an optional version (pip "==1.2", ">=1,<2", extras
 * "[a,b]"; npm "@1.2.3", "@^1", "@latest"; go "@v1.2.3"; apt "=1.2-1")?
 * Names starting with '-', holding whitespace, shell metacharacters,
 * URLs or paths are refused. Returns 1 or 0 (0 for an unknown manager).
 */
int deps_valid_name(const char *, const char *);

/* For the unit tests: 0 when every lookup table is sorted, else -1. */
int deps_check_tables(void);

#endif
