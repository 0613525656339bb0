/*
 * Inside engine/: what Podman's Docker-compatible API needs that Docker
 * does not (podman.c), for the Docker backend.
 */
#ifndef PODMAN_H
#define PODMAN_H

#include <stddef.h>

long long podman_nproc(long long, long long);
long long podman_nproc_here(void);
char *podman_seccomp_file(const char *);
int podman_owner_tar(long, int, void **, size_t *);

/* Tmpfs owners to set after a container's start, kept by its id. */
struct engine_spec;
struct podman_owners;
struct podman_owners *podman_owners_new(const struct engine_spec *);
void podman_owners_free(struct podman_owners *);
void podman_owners_keep(struct podman_owners *, const void *, const char *);
const struct podman_owners *podman_owners_find(const char *);
int podman_owners_count(const struct podman_owners *);
int podman_owners_tar(
    const struct podman_owners *, int, const char **, void **, size_t *);
void podman_owners_drop(const char *);
void podman_owners_drop_key(const void *);

#endif
